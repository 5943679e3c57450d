//! Reduce. Operands are always combined in an order fixed by the schedule,
//! so results are bit-identical from run to run; non-commutative operations
//! are combined in rank order.

use super::util::{combine, items, Fold};
use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Reducer, Round, Schedule, Step};
use std::sync::Arc;

/// Binomial tree: each rank receives its children's partial results (all
/// at once, into scratch), combines them in order and passes the result to
/// its parent. ceil(log2 p) steps, the whole vector on every edge: chosen
/// for short vectors. The tree is rooted at the root for commutative
/// operations; for others it is rooted at rank 0, so subtrees are rank
/// ranges, and 0 forwards the result (one more step).
///
/// `input` is our operand (the root passes its receive buffer for
/// MPI_IN_PLACE); `recv` (root only) receives the result.
pub fn binomial(view: CommView, tag: i32, input: UserBuf, recv: Option<UserBuf>, op: Arc<dyn Reducer>, root: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let (count, dt) = (input.count(), input.datatype().clone());
    if input.is_empty() {
        return s;
    }
    let top = if op.is_commutative() { root } else { 0 };
    let vr = (rank - top).rem_euclid(size);
    let abs = |v: i32| (v + top) % size;
    let low = if vr == 0 { super::util::ceil_pow2(size) } else { vr & -vr };
    let mut children = Vec::new();
    let mut mask = 1;
    while mask < low && vr + mask < size {
        children.push((abs(vr + mask), s.temp_typed(count, &dt)));
        mask <<= 1;
    }
    if !children.is_empty() {
        s.round().comm = children.iter().map(|(c, b)| Step::Recv { from: *c, buf: b.clone() }).collect();
    }
    let next = s.round();
    let mut acc = input.clone();
    for (_, b) in &children {
        next.local.push(Step::Reduce { op: op.clone(), left: acc, inout: b.clone() });
        acc = b.clone();
    }
    if vr != 0 {
        next.comm.push(Step::Send { to: abs(vr - low), buf: acc });
    } else if top == root {
        let recv = recv.clone().expect("the root's receive buffer");
        if acc.base() != recv.base() {
            next.local.push(Step::Copy { from: acc, to: recv });
        }
    } else {
        next.comm.push(Step::Send { to: root, buf: acc });
    }
    if rank == root && top != root {
        s.round().comm.push(Step::Recv { from: top, buf: recv.expect("the root's receive buffer") });
    }
    s.prune();
    s
}

/// The segment of items [lo, hi) out of `n` that new rank `nr` of `p2`
/// owns after recursive halving (see `halving`).
pub fn halving_segment(nr: i32, p2: i32, n: u64) -> (u64, u64) {
    let (mut lo, mut hi) = (0, n);
    let mut mask = 1;
    while mask < p2 {
        let mid = lo + (hi - lo) / 2;
        if nr & mask == 0 {
            hi = mid;
        } else {
            lo = mid;
        }
        mask <<= 1;
    }
    (lo, hi)
}

/// Reduce-scatter by recursive halving in rank order, on the ranks of a
/// power-of-two fold: at distance 1, 2, 4... partners swap halves of their
/// current segment and each combines the half it keeps (the lower new rank
/// keeps the lower half), so a partial result always covers a contiguous
/// range of ranks, lower ones first. `work` holds our operand (the whole
/// vector) and ends holding the fully reduced segment we own; `scratch` is
/// a vector of the same shape. The combination of the last step is left in
/// `pending`, to run before the next communication. Returns the segments
/// we held, outermost first (the last one is ours).
#[allow(clippy::too_many_arguments)]
pub(crate) fn halving(
    s: &mut Schedule,
    fold: Fold,
    nr: i32,
    work: &UserBuf,
    scratch: &UserBuf,
    op: &Arc<dyn Reducer>,
    pending: &mut Vec<Step>,
) -> Vec<(u64, u64)> {
    let (mut lo, mut hi) = (0, work.count());
    let mut segs = vec![(lo, hi)];
    let ordered = !op.is_commutative();
    let mut mask = 1;
    while mask < fold.p2 {
        let partner = fold.old_rank(nr ^ mask);
        let mid = lo + (hi - lo) / 2;
        let lower = nr & mask == 0;
        let (keep, give) = if lower { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
        let round = next_round(s, pending);
        if give.1 > give.0 {
            round.comm.push(Step::Send { to: partner, buf: items(work, give.0, give.1 - give.0) });
        }
        if keep.1 > keep.0 {
            let (mine, theirs) = (items(work, keep.0, keep.1 - keep.0), items(scratch, keep.0, keep.1 - keep.0));
            round.comm.push(Step::Recv { from: partner, buf: theirs.clone() });
            let mut r = Round::default();
            combine(&mut r, op, &mine, &theirs, lower && ordered);
            pending.extend(r.local);
        }
        (lo, hi) = keep;
        segs.push((lo, hi));
        mask <<= 1;
    }
    segs
}

/// A new round whose local steps start with `pending`.
pub(crate) fn next_round<'a>(s: &'a mut Schedule, pending: &mut Vec<Step>) -> &'a mut Round {
    let round = s.round();
    round.local.append(pending);
    round
}

/// Rabenseifner: reduce-scatter by recursive halving, then every rank sends
/// its fully reduced segment to the root. About 2 log2 p steps but only
/// ~2n bytes sent per rank and the combining work shared: chosen for long
/// vectors. Rank order is kept, so any operation may use it.
pub fn rabenseifner(view: CommView, tag: i32, input: UserBuf, recv: Option<UserBuf>, op: Arc<dyn Reducer>, root: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let (n, dt) = (input.count(), input.datatype().clone());
    if input.is_empty() {
        return s;
    }
    let fold = Fold::new(size);
    let work = s.temp_typed(n, &dt);
    let scratch = s.temp_typed(n, &dt);
    let mut pending = Vec::new();
    let mine = match fold.new_rank(rank) {
        None => {
            s.round().comm.push(Step::Send { to: rank + 1, buf: input.clone() });
            None
        }
        Some(nr) => {
            let first = s.round();
            first.local.push(Step::Copy { from: input.clone(), to: work.clone() });
            if rank < 2 * fold.rem {
                first.comm.push(Step::Recv { from: rank - 1, buf: scratch.clone() });
                pending.push(Step::Reduce { op: op.clone(), left: scratch.clone(), inout: work.clone() });
            }
            let segs = halving(&mut s, fold, nr, &work, &scratch, &op, &mut pending);
            Some(*segs.last().unwrap())
        }
    };
    // Every segment to the root.
    let last = next_round(&mut s, &mut pending);
    if rank == root {
        let recv = recv.expect("the root's receive buffer");
        for nr in 0..fold.p2 {
            let (lo, hi) = halving_segment(nr, fold.p2, n);
            if hi == lo {
                continue;
            }
            let owner = fold.old_rank(nr);
            if owner == rank {
                last.local.push(Step::Copy { from: items(&work, lo, hi - lo), to: items(&recv, lo, hi - lo) });
            } else {
                last.comm.push(Step::Recv { from: owner, buf: items(&recv, lo, hi - lo) });
            }
        }
    } else if let Some((lo, hi)) = mine.filter(|(lo, hi)| hi > lo) {
        last.comm.push(Step::Send { to: root, buf: items(&work, lo, hi - lo) });
    }
    s.prune();
    s
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
pub(crate) mod tests {
    use super::super::sim::{self, Rng, TBuf};

    /// The reduction of every rank's input, in rank order.
    pub fn reference(n: usize, elements: usize, seed: u64, f: fn(u64, u64) -> u64) -> Vec<u64> {
        (0..elements).map(|i| (1..n).fold(sim::value(0, i, seed), |acc, r| f(acc, sim::value(r, i, seed)))).collect()
    }

    #[test]
    fn every_algorithm_reduces_in_rank_order() {
        let mut rng = Rng(17);
        for &n in sim::PROCS.iter().chain(&[6, 12]) {
            for &count in sim::COUNTS {
                for tk in 0..2 {
                    for opk in 0..2 {
                        for algo in 0..2 {
                            let seed = rng.next() % 1000;
                            let root = rng.below(n as u64) as usize;
                            let in_place = rng.below(2) == 0;
                            let dt = sim::test_type(tk);
                            let (op, f) = sim::test_op(opk);
                            let mut inputs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
                            for (r, b) in inputs.iter_mut().enumerate() {
                                let v: Vec<u64> = (0..b.elements()).map(|i| sim::value(r, i, seed)).collect();
                                b.set(&v);
                            }
                            let originals: Vec<Vec<u64>> = inputs.iter().map(|b| b.mem.clone()).collect();
                            let mut recv = TBuf::new(count, &dt);
                            if in_place {
                                recv.mem = inputs[root].mem.clone();
                            }
                            let want = reference(n, recv.elements(), seed, f);
                            let expect = recv.expect(&want);
                            let errs = sim::run(n, seed, |r| {
                                let v = sim::view(r, n);
                                let (input, rb) = if r == root {
                                    let rb = recv.ub();
                                    (if in_place { rb.clone() } else { inputs[r].ub() }, Some(rb))
                                } else {
                                    (inputs[r].ub(), None)
                                };
                                match algo {
                                    0 => super::binomial(v, 3, input, rb, op.clone(), root as i32),
                                    _ => super::rabenseifner(v, 3, input, rb, op.clone(), root as i32),
                                }
                            });
                            assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                            assert!(recv.mem == expect, "algo {algo} n {n} count {count} type {tk} op {opk} root {root} in_place {in_place} seed {seed}");
                            for r in 0..n {
                                if !(in_place && r == root) {
                                    assert!(inputs[r].mem == originals[r], "input of rank {r} modified");
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

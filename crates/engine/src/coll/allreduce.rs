//! Allreduce. `input` is our operand, or None for MPI_IN_PLACE (then it is
//! in `recv`); every rank ends with the same bits in `recv`.

use super::reduce::{halving, next_round};
use super::util::{combine, even_block, items, Fold};
use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Reducer, Schedule, Step};
use std::sync::Arc;

fn start(s: &mut Schedule, input: &Option<UserBuf>, recv: &UserBuf) {
    if let Some(i) = input {
        s.round().local.push(Step::Copy { from: i.clone(), to: recv.clone() });
    }
}

/// Recursive doubling: partners 2^k apart swap their whole partial results
/// and both combine them, lower rank's operand first. ceil(log2 p) steps
/// (+2 when p is not a power of two), the whole vector each step: chosen
/// for short vectors. Both partners compute the same combination, so every
/// rank gets the same bits, and rank order holds for any operation.
pub fn recursive_doubling(view: CommView, tag: i32, input: Option<UserBuf>, recv: UserBuf, op: Arc<dyn Reducer>) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    start(&mut s, &input, &recv);
    if recv.is_empty() || size == 1 {
        s.prune();
        return s;
    }
    let fold = Fold::new(size);
    let tmp = s.temp_typed(recv.count(), recv.datatype());
    let mut pending = Vec::new();
    match fold.new_rank(rank) {
        None => {
            s.round().comm.push(Step::Send { to: rank + 1, buf: recv.clone() });
            s.round().comm.push(Step::Recv { from: rank + 1, buf: recv.clone() });
        }
        Some(nr) => {
            if rank < 2 * fold.rem {
                s.round().comm.push(Step::Recv { from: rank - 1, buf: tmp.clone() });
                pending.push(Step::Reduce { op: op.clone(), left: tmp.clone(), inout: recv.clone() });
            }
            let mut mask = 1;
            while mask < fold.p2 {
                let pnr = nr ^ mask;
                let partner = fold.old_rank(pnr);
                let round = next_round(&mut s, &mut pending);
                round.comm.push(Step::Send { to: partner, buf: recv.clone() });
                round.comm.push(Step::Recv { from: partner, buf: tmp.clone() });
                let mut r = crate::sched::Round::default();
                combine(&mut r, &op, &recv, &tmp, nr < pnr);
                pending = r.local;
                mask <<= 1;
            }
            let last = next_round(&mut s, &mut pending);
            if rank < 2 * fold.rem {
                last.comm.push(Step::Send { to: rank - 1, buf: recv.clone() });
            }
        }
    }
    s.prune();
    s
}

/// Rabenseifner: reduce-scatter by recursive halving, then allgather by
/// recursive doubling, retracing the halving. About 2 log2 p steps, ~2n
/// bytes sent per rank and the combining work shared: chosen for long
/// vectors. Rank order holds for any operation.
pub fn rabenseifner(view: CommView, tag: i32, input: Option<UserBuf>, recv: UserBuf, op: Arc<dyn Reducer>) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    start(&mut s, &input, &recv);
    if recv.is_empty() || size == 1 {
        s.prune();
        return s;
    }
    let fold = Fold::new(size);
    let scratch = s.temp_typed(recv.count(), recv.datatype());
    let mut pending = Vec::new();
    match fold.new_rank(rank) {
        None => {
            s.round().comm.push(Step::Send { to: rank + 1, buf: recv.clone() });
            s.round().comm.push(Step::Recv { from: rank + 1, buf: recv.clone() });
        }
        Some(nr) => {
            if rank < 2 * fold.rem {
                s.round().comm.push(Step::Recv { from: rank - 1, buf: scratch.clone() });
                pending.push(Step::Reduce { op: op.clone(), left: scratch.clone(), inout: recv.clone() });
            }
            let mut segs = halving(&mut s, fold, nr, &recv, &scratch, &op, &mut pending);
            // Retrace: at each level swap our segment for the partner's half.
            let (mut lo, mut hi) = segs.pop().unwrap();
            let mut mask = fold.p2 / 2;
            while mask > 0 {
                let partner = fold.old_rank(nr ^ mask);
                let (plo, phi) = segs.pop().unwrap();
                let other = if lo == plo { (hi, phi) } else { (plo, lo) };
                let round = next_round(&mut s, &mut pending);
                if hi > lo {
                    round.comm.push(Step::Send { to: partner, buf: items(&recv, lo, hi - lo) });
                }
                if other.1 > other.0 {
                    round.comm.push(Step::Recv { from: partner, buf: items(&recv, other.0, other.1 - other.0) });
                }
                (lo, hi) = (plo, phi);
                mask >>= 1;
            }
            let last = next_round(&mut s, &mut pending);
            if rank < 2 * fold.rem {
                last.comm.push(Step::Send { to: rank - 1, buf: recv.clone() });
            }
        }
    }
    s.prune();
    s
}

/// Ring: reduce-scatter around the ring (p-1 steps, each rank combining one
/// block per step), then allgather around the ring (p-1 steps). 2(p-1)
/// steps, 2n(p-1)/p bytes sent per rank: bandwidth-optimal for any p,
/// chosen for very long vectors when p is not a power of two. The order of
/// combination follows the ring, so only for commutative operations.
pub fn ring(view: CommView, tag: i32, input: Option<UserBuf>, recv: UserBuf, op: Arc<dyn Reducer>) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    start(&mut s, &input, &recv);
    let n = recv.count();
    if n == 0 || size == 1 {
        s.prune();
        return s;
    }
    let p = size as u64;
    let block = |i: i32| {
        let (off, len) = even_block(n, p, i.rem_euclid(size) as u64);
        items(&recv, off, len)
    };
    let tmp = s.temp_typed(n.div_ceil(p), recv.datatype());
    let right = (rank + 1) % size;
    let left = (rank - 1).rem_euclid(size);
    let mut pending = Vec::new();
    for k in 0..size - 1 {
        let (sb, rb) = (block(rank - k), block(rank - k - 1));
        let round = next_round(&mut s, &mut pending);
        if !sb.is_empty() {
            round.comm.push(Step::Send { to: right, buf: sb });
        }
        if !rb.is_empty() {
            let t = items(&tmp, 0, rb.count());
            round.comm.push(Step::Recv { from: left, buf: t.clone() });
            pending.push(Step::Reduce { op: op.clone(), left: t, inout: rb });
        }
    }
    for k in 0..size - 1 {
        let (sb, rb) = (block(rank + 1 - k), block(rank - k));
        let round = next_round(&mut s, &mut pending);
        if !sb.is_empty() {
            round.comm.push(Step::Send { to: right, buf: sb });
        }
        if !rb.is_empty() {
            round.comm.push(Step::Recv { from: left, buf: rb });
        }
    }
    s.prune();
    s
}

/// Reduce to rank 0 (binomial, rank order) then broadcast (binomial).
/// 2 ceil(log2 p) steps: the simplest correct algorithm, for any operation;
/// chosen only when forced.
pub fn reduce_bcast(view: CommView, tag: i32, input: Option<UserBuf>, recv: UserBuf, op: Arc<dyn Reducer>) -> Schedule {
    let rank = view.rank;
    let mut s = Schedule::new(view.clone(), tag);
    let operand = input.unwrap_or_else(|| recv.clone());
    s.append(super::reduce::binomial(view.clone(), tag, operand, (rank == 0).then(|| recv.clone()), op, 0));
    s.append(super::bcast::binomial(view, tag, recv, 0));
    s.prune();
    s
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::super::reduce::tests::reference;
    use super::super::sim::{self, Rng, TBuf};

    #[test]
    fn every_algorithm_allreduces_in_rank_order() {
        let mut rng = Rng(19);
        for &n in sim::PROCS.iter().chain(&[6, 12]) {
            for &count in sim::COUNTS {
                for tk in 0..2 {
                    for opk in 0..2 {
                        for algo in 0..4 {
                            if algo == 2 && opk == 0 {
                                continue; // ring: commutative only
                            }
                            let seed = rng.next() % 1000;
                            let in_place = rng.below(2) == 0;
                            let dt = sim::test_type(tk);
                            let (op, f) = sim::test_op(opk);
                            let mut inputs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
                            let mut recvs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
                            for r in 0..n {
                                let v: Vec<u64> = (0..inputs[r].elements()).map(|i| sim::value(r, i, seed)).collect();
                                inputs[r].set(&v);
                                if in_place {
                                    recvs[r].set(&v);
                                }
                            }
                            let want = reference(n, recvs[0].elements(), seed, f);
                            let expect = recvs[0].expect(&want);
                            let errs = sim::run(n, seed, |r| {
                                let v = sim::view(r, n);
                                let input = if in_place { None } else { Some(inputs[r].ub()) };
                                let rb = recvs[r].ub();
                                match algo {
                                    0 => super::recursive_doubling(v, 3, input, rb, op.clone()),
                                    1 => super::rabenseifner(v, 3, input, rb, op.clone()),
                                    2 => super::ring(v, 3, input, rb, op.clone()),
                                    _ => super::reduce_bcast(v, 3, input, rb, op.clone()),
                                }
                            });
                            assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                            for r in 0..n {
                                assert!(
                                    recvs[r].mem == expect,
                                    "algo {algo} n {n} count {count} type {tk} op {opk} in_place {in_place} rank {r} seed {seed}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

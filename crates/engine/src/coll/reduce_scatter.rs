//! Reduce_scatter and reduce_scatter_block: the elementwise reduction of
//! every rank's `input` (sum(counts) items), of which rank r gets items
//! `[displ(r), displ(r) + counts[r])` in `recv`. For MPI_IN_PLACE, `input`
//! is the receive buffer seen as the whole vector: every algorithm reads
//! the input before it writes `recv`.

use super::reduce::next_round;
use super::util::{items, offsets, Fold};
use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Reducer, Schedule, Step};
use std::sync::Arc;

/// Ring: in step k rank r passes its partial sum of block r-k-1 to the
/// right and adds its own operand to the partial of block r-k-2 it
/// receives; after p-1 steps it holds block r complete. p-1 steps,
/// n(p-1)/p bytes sent per rank: chosen for long vectors. Commutative
/// operations only (the order follows the ring).
pub fn ring(view: CommView, tag: i32, input: UserBuf, recv: UserBuf, counts: &[u64], op: Arc<dyn Reducer>) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let offs = offsets(counts);
    let dt = input.datatype().clone();
    let work = s.temp_typed(offs[size as usize], &dt);
    let block = |i: i32| {
        let i = i.rem_euclid(size) as usize;
        items(&work, offs[i], counts[i])
    };
    s.round().local.push(Step::Copy { from: input, to: work.clone() });
    let tmp = s.temp_typed(counts.iter().copied().max().unwrap_or(0), &dt);
    let (right, left) = ((rank + 1) % size, (rank - 1).rem_euclid(size));
    let mut pending = Vec::new();
    for k in 0..size - 1 {
        let (sb, rb) = (block(rank - k - 1), block(rank - k - 2));
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
    let last = next_round(&mut s, &mut pending);
    last.local.push(Step::Copy { from: block(rank), to: recv });
    s.prune();
    s
}

/// Recursive halving: partners p/2, p/4, ... apart swap halves of their
/// block range and combine the half they keep; a power-of-two fold handles
/// any p. log2 p steps (+2), n(p-1)/p bytes sent per rank: chosen for short
/// and medium vectors. Commutative operations only.
pub fn recursive_halving(view: CommView, tag: i32, input: UserBuf, recv: UserBuf, counts: &[u64], op: Arc<dyn Reducer>) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let offs = offsets(counts);
    let dt = input.datatype().clone();
    let n = offs[size as usize];
    let fold = Fold::new(size);
    let work = s.temp_typed(n, &dt);
    let scratch = s.temp_typed(n, &dt);
    // Items of the blocks of new ranks [a, b).
    let span = |a: i32, b: i32| {
        let (lo, hi) = (offs[fold.first_old(a) as usize], offs[fold.first_old(b) as usize]);
        (lo, hi - lo)
    };
    let block = |i: i32| items(&work, offs[i as usize], counts[i as usize]);
    let mut pending = Vec::new();
    let Some(nr) = fold.new_rank(rank) else {
        if n > 0 {
            s.round().comm.push(Step::Send { to: rank + 1, buf: input });
        }
        if !recv.is_empty() {
            s.round().comm.push(Step::Recv { from: rank + 1, buf: recv });
        }
        return s;
    };
    let first = s.round();
    first.local.push(Step::Copy { from: input, to: work.clone() });
    if rank < 2 * fold.rem && n > 0 {
        first.comm.push(Step::Recv { from: rank - 1, buf: scratch.clone() });
        pending.push(Step::Reduce { op: op.clone(), left: scratch.clone(), inout: work.clone() });
    }
    let (mut g_lo, mut g_hi) = (0, fold.p2);
    let mut mask = fold.p2 / 2;
    while mask > 0 {
        let mid = g_lo + mask;
        let partner = fold.old_rank(nr ^ mask);
        let (keep, give) = if nr < mid { ((g_lo, mid), (mid, g_hi)) } else { ((mid, g_hi), (g_lo, mid)) };
        let round = next_round(&mut s, &mut pending);
        let (glo, glen) = span(give.0, give.1);
        if glen > 0 {
            round.comm.push(Step::Send { to: partner, buf: items(&work, glo, glen) });
        }
        let (klo, klen) = span(keep.0, keep.1);
        if klen > 0 {
            let theirs = items(&scratch, klo, klen);
            round.comm.push(Step::Recv { from: partner, buf: theirs.clone() });
            pending.push(Step::Reduce { op: op.clone(), left: theirs, inout: items(&work, klo, klen) });
        }
        (g_lo, g_hi) = keep;
        mask >>= 1;
    }
    let last = next_round(&mut s, &mut pending);
    if rank < 2 * fold.rem {
        let b = block(rank - 1);
        if !b.is_empty() {
            last.comm.push(Step::Send { to: rank - 1, buf: b });
        }
    }
    last.local.push(Step::Copy { from: block(rank), to: recv });
    s.prune();
    s
}

/// Reduce to rank 0 (binomial, rank order), then scatter the blocks
/// (linear). 2 steps of latency beyond the reduce, but the whole vector
/// meets at rank 0: the algorithm for non-commutative operations.
pub fn reduce_scatterv(view: CommView, tag: i32, input: UserBuf, recv: UserBuf, counts: &[u64], op: Arc<dyn Reducer>) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view.clone(), tag);
    let offs = offsets(counts);
    let n = offs[size as usize];
    let work = if rank == 0 { s.temp_typed(n, input.datatype()) } else { input.clone() };
    s.append(super::reduce::binomial(view.clone(), tag, input, (rank == 0).then(|| work.clone()), op, 0));
    let blocks: Vec<UserBuf> =
        if rank == 0 { (0..size as usize).map(|i| items(&work, offs[i], counts[i])).collect() } else { Vec::new() };
    s.append(super::scatter::linear(view, tag, &blocks, Some(recv), 0));
    s.prune();
    s
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::super::reduce::tests::reference;
    use super::super::sim::{self, Rng, TBuf};

    #[test]
    fn every_algorithm_reduces_and_scatters() {
        let mut rng = Rng(23);
        for &n in sim::PROCS.iter().chain(&[6, 12]) {
            for &count in &sim::COUNTS[..7] {
                for tk in 0..2 {
                    for opk in 0..2 {
                        for v in 0..2 {
                            for algo in 0..3 {
                                if algo < 2 && opk == 0 {
                                    continue; // commutative only
                                }
                                let seed = rng.next() % 1000;
                                let in_place = rng.below(2) == 0;
                                let dt = sim::test_type(tk);
                                let (op, f) = sim::test_op(opk);
                                let counts: Vec<u64> =
                                    (0..n).map(|r| if v == 1 { (count + 5 * r as u64) % 9 } else { count }).collect();
                                let total: u64 = counts.iter().sum();
                                let offs = super::offsets(&counts);
                                let mut inputs: Vec<TBuf> = (0..n).map(|_| TBuf::new(total, &dt)).collect();
                                for (r, b) in inputs.iter_mut().enumerate() {
                                    let v: Vec<u64> = (0..b.elements()).map(|i| sim::value(r, i, seed)).collect();
                                    b.set(&v);
                                }
                                let full = reference(n, inputs[0].elements(), seed, f);
                                let esize = (dt.size() / 8) as usize;
                                let mut recvs: Vec<TBuf> = (0..n)
                                    .map(|r| if in_place { TBuf { mem: inputs[r].mem.clone(), dt: dt.clone(), count: counts[r] } } else { TBuf::new(counts[r], &dt) })
                                    .collect();
                                let expects: Vec<Vec<u64>> = (0..n)
                                    .map(|r| {
                                        let want = &full[offs[r] as usize * esize..(offs[r] + counts[r]) as usize * esize];
                                        let mut e = recvs[r].expect(want);
                                        if in_place {
                                            // The rest of the input vector stays as it was.
                                            let mut whole = TBuf { mem: inputs[r].mem.clone(), dt: dt.clone(), count: total };
                                            let mut w = whole.get();
                                            w[..want.len()].copy_from_slice(want);
                                            whole.set(&w);
                                            e = whole.mem;
                                        }
                                        e
                                    })
                                    .collect();
                                let errs = sim::run(n, seed, |r| {
                                    let view = sim::view(r, n);
                                    let rb = recvs[r].ub();
                                    let input = if in_place { recvs[r].items(0, total) } else { inputs[r].ub() };
                                    match algo {
                                        0 => super::ring(view, 3, input, rb, &counts, op.clone()),
                                        1 => super::recursive_halving(view, 3, input, rb, &counts, op.clone()),
                                        _ => super::reduce_scatterv(view, 3, input, rb, &counts, op.clone()),
                                    }
                                });
                                assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                                for r in 0..n {
                                    assert!(
                                        recvs[r].mem == expects[r],
                                        "algo {algo} v {v} n {n} count {count} type {tk} op {opk} in_place {in_place} rank {r} seed {seed}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

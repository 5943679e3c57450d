//! Scan and exscan: rank r gets the reduction of the operands of ranks
//! 0..=r (scan) or 0..r (exscan; rank 0's receive buffer is left alone).
//! `input` is our operand, or None for MPI_IN_PLACE (then it is in `recv`).
//! Operands are combined in rank order, so any operation may be used.

use super::reduce::next_round;
use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Reducer, Schedule, Step};
use std::sync::Arc;

/// Recursive doubling: partners 2^k apart swap the reduction of their
/// 2^k-rank groups; the higher one folds it into its result. ceil(log2 p)
/// steps, the whole vector each step: chosen by default.
pub fn recursive_doubling(view: CommView, tag: i32, input: Option<UserBuf>, recv: UserBuf, op: Arc<dyn Reducer>, exclusive: bool) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let operand = input.clone().unwrap_or_else(|| recv.clone());
    let (n, dt) = (operand.count(), operand.datatype().clone());
    if n == 0 {
        return s;
    }
    // `partial`: the reduction over our group so far; `spare` receives.
    let mut partial = s.temp_typed(n, &dt);
    let mut spare = s.temp_typed(n, &dt);
    let first = s.round();
    first.local.push(Step::Copy { from: operand, to: partial.clone() });
    if let (false, Some(i)) = (exclusive, &input) {
        first.local.push(Step::Copy { from: i.clone(), to: recv.clone() });
    }
    let mut have_result = !exclusive;
    let mut pending = Vec::new();
    let mut mask = 1;
    while mask < size {
        let partner = rank ^ mask;
        if partner < size {
            let round = next_round(&mut s, &mut pending);
            round.comm.push(Step::Send { to: partner, buf: partial.clone() });
            round.comm.push(Step::Recv { from: partner, buf: spare.clone() });
            if partner < rank {
                if have_result {
                    pending.push(Step::Reduce { op: op.clone(), left: spare.clone(), inout: recv.clone() });
                } else {
                    pending.push(Step::Copy { from: spare.clone(), to: recv.clone() });
                    have_result = true;
                }
                pending.push(Step::Reduce { op: op.clone(), left: spare.clone(), inout: partial.clone() });
            } else {
                // partial op theirs lands in `spare`, which becomes the partial.
                pending.push(Step::Reduce { op: op.clone(), left: partial.clone(), inout: spare.clone() });
                std::mem::swap(&mut partial, &mut spare);
            }
        }
        mask <<= 1;
    }
    next_round(&mut s, &mut pending);
    s.prune();
    s
}

/// Linear chain: rank r waits for the prefix of ranks 0..r from r-1, adds
/// its operand and passes it on. p-1 steps in sequence, but one message per
/// rank: chosen when forced (or for very long vectors on few ranks).
pub fn linear(view: CommView, tag: i32, input: Option<UserBuf>, recv: UserBuf, op: Arc<dyn Reducer>, exclusive: bool) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let operand = input.clone().unwrap_or_else(|| recv.clone());
    let (n, dt) = (operand.count(), operand.datatype().clone());
    if n == 0 {
        return s;
    }
    let has_next = rank + 1 < size;
    if exclusive {
        // `out` = prefix of ranks 0..=r, built from a copy of our operand.
        let out = s.temp_typed(n, &dt);
        let first = s.round();
        first.local.push(Step::Copy { from: operand, to: out.clone() });
        if rank > 0 {
            first.comm.push(Step::Recv { from: rank - 1, buf: recv.clone() });
        }
        let next = s.round();
        if rank > 0 {
            next.local.push(Step::Reduce { op: op.clone(), left: recv, inout: out.clone() });
        }
        if has_next {
            next.comm.push(Step::Send { to: rank + 1, buf: out });
        }
    } else {
        let first = s.round();
        if let Some(i) = input {
            first.local.push(Step::Copy { from: i, to: recv.clone() });
        }
        let next = if rank > 0 {
            let prefix = s.temp_typed(n, &dt);
            s.round().comm.push(Step::Recv { from: rank - 1, buf: prefix.clone() });
            let next = s.round();
            next.local.push(Step::Reduce { op: op.clone(), left: prefix, inout: recv.clone() });
            next
        } else {
            s.round()
        };
        if has_next {
            next.comm.push(Step::Send { to: rank + 1, buf: recv });
        }
    }
    s.prune();
    s
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::super::sim::{self, Rng, TBuf};

    #[test]
    fn every_algorithm_scans_in_rank_order() {
        let mut rng = Rng(29);
        for &n in sim::PROCS.iter().chain(&[6, 12]) {
            for &count in sim::COUNTS {
                for tk in 0..2 {
                    for opk in 0..2 {
                        for exclusive in [false, true] {
                            for algo in 0..2 {
                                let seed = rng.next() % 1000;
                                let in_place = rng.below(2) == 0;
                                let dt = sim::test_type(tk);
                                let (op, f) = sim::test_op(opk);
                                let mut inputs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
                                let mut recvs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
                                let mut expects = Vec::new();
                                for r in 0..n {
                                    let v: Vec<u64> = (0..inputs[r].elements()).map(|i| sim::value(r, i, seed)).collect();
                                    inputs[r].set(&v);
                                    if in_place {
                                        recvs[r].set(&v);
                                    }
                                    let upto = if exclusive { r } else { r + 1 };
                                    if upto == 0 {
                                        expects.push(recvs[r].mem.clone());
                                    } else {
                                        let want: Vec<u64> = (0..v.len())
                                            .map(|i| (1..upto).fold(sim::value(0, i, seed), |a, q| f(a, sim::value(q, i, seed))))
                                            .collect();
                                        expects.push(recvs[r].expect(&want));
                                    }
                                }
                                let errs = sim::run(n, seed, |r| {
                                    let v = sim::view(r, n);
                                    let input = if in_place { None } else { Some(inputs[r].ub()) };
                                    let rb = recvs[r].ub();
                                    match algo {
                                        0 => super::recursive_doubling(v, 3, input, rb, op.clone(), exclusive),
                                        _ => super::linear(v, 3, input, rb, op.clone(), exclusive),
                                    }
                                });
                                assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                                for r in 0..n {
                                    assert!(
                                        recvs[r].mem == expects[r],
                                        "algo {algo} exclusive {exclusive} n {n} count {count} type {tk} op {opk} in_place {in_place} rank {r} seed {seed}"
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

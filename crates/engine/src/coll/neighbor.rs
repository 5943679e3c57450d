//! Neighborhood collectives (allgather(v), alltoall(v,w) over a process
//! topology): every exchange with every neighbour at once.

use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Schedule, Step};

/// One step: `sends[i] = (destination, block)` and `recvs[i] = (source,
/// block)`, negative ranks (MPI_PROC_NULL) and empty blocks left out.
/// Receives are posted in the order given and the messages from one process
/// match them in the order it sent them, so the caller orders the lists to
/// pair duplicate edges as the standard says (graph topologies: k-th edge
/// to k-th edge; Cartesian: the two directions of a dimension swapped).
pub fn exchange(view: CommView, tag: i32, sends: &[(i32, UserBuf)], recvs: &[(i32, UserBuf)]) -> Schedule {
    let mut s = Schedule::new(view, tag);
    let round = s.round();
    for (from, b) in recvs {
        if *from >= 0 && !b.is_empty() {
            round.comm.push(Step::Recv { from: *from, buf: b.clone() });
        }
    }
    for (to, b) in sends {
        if *to >= 0 && !b.is_empty() {
            round.comm.push(Step::Send { to: *to, buf: b.clone() });
        }
    }
    s.prune();
    s
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::super::sim::{self, Rng, TBuf};

    /// A random multigraph (self loops and repeated edges included): the
    /// k-th block sent on an edge lands in the k-th receive slot of it.
    #[test]
    fn exchanges_follow_edge_order() {
        let mut rng = Rng(31);
        for &n in sim::PROCS {
            for seed in 0..20u64 {
                let edges: Vec<(usize, usize)> =
                    (0..rng.below(3 * n as u64 + 1)).map(|_| (rng.below(n as u64) as usize, rng.below(n as u64) as usize)).collect();
                let count = rng.pick(&[0u64, 1, 5]);
                let dt = sim::u64_type();
                // outs[r]: edges out of r in order; ins[r]: edges into r in order.
                let outs: Vec<Vec<usize>> = (0..n).map(|r| (0..edges.len()).filter(|&e| edges[e].0 == r).collect()).collect();
                let ins: Vec<Vec<usize>> = (0..n).map(|r| (0..edges.len()).filter(|&e| edges[e].1 == r).collect()).collect();
                let mut sends: Vec<Vec<TBuf>> = (0..n).map(|r| outs[r].iter().map(|_| TBuf::new(count, &dt)).collect()).collect();
                let mut recvs: Vec<Vec<TBuf>> = (0..n).map(|r| ins[r].iter().map(|_| TBuf::new(count, &dt)).collect()).collect();
                for r in 0..n {
                    for (k, &e) in outs[r].iter().enumerate() {
                        let v: Vec<u64> = (0..count as usize).map(|i| sim::value(e, i, seed)).collect();
                        sends[r][k].set(&v);
                    }
                }
                let expects: Vec<Vec<Vec<u64>>> = (0..n)
                    .map(|r| {
                        ins[r]
                            .iter()
                            .enumerate()
                            .map(|(k, &e)| recvs[r][k].expect(&(0..count as usize).map(|i| sim::value(e, i, seed)).collect::<Vec<_>>()))
                            .collect()
                    })
                    .collect();
                let sb: Vec<Vec<(i32, _)>> =
                    (0..n).map(|r| outs[r].iter().zip(sends[r].iter_mut()).map(|(&e, b)| (edges[e].1 as i32, b.ub())).collect()).collect();
                let rb: Vec<Vec<(i32, _)>> =
                    (0..n).map(|r| ins[r].iter().zip(recvs[r].iter_mut()).map(|(&e, b)| (edges[e].0 as i32, b.ub())).collect()).collect();
                let errs = sim::run(n, seed, |r| super::exchange(sim::view(r, n), 3, &sb[r], &rb[r]));
                assert!(errs.iter().all(|e| e.is_none()));
                for r in 0..n {
                    for k in 0..ins[r].len() {
                        assert!(recvs[r][k].mem == expects[r][k], "n {n} seed {seed} rank {r} slot {k}");
                    }
                }
            }
        }
    }
}

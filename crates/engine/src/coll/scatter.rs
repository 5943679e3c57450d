//! Scatter and scatterv.

use super::util::{bytes, ceil_pow2};
use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Schedule, Step};

/// Linear: the root sends every rank its block at once. One step, p-1
/// messages out of the root. Works for scatterv; chosen for scatterv and
/// for scatter with large blocks. `blocks[r]` (at the root only) is rank
/// r's data; `recv` is None for the root's MPI_IN_PLACE.
pub fn linear(view: CommView, tag: i32, blocks: &[UserBuf], recv: Option<UserBuf>, root: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let round = s.round();
    if rank == root {
        for (r, b) in blocks.iter().enumerate().take(size as usize) {
            if r as i32 == root {
                if let Some(mine) = &recv {
                    round.local.push(Step::Copy { from: b.clone(), to: mine.clone() });
                }
            } else if !b.is_empty() {
                round.comm.push(Step::Send { to: r as i32, buf: b.clone() });
            }
        }
    } else if let Some(mine) = recv.filter(|m| !m.is_empty()) {
        round.comm.push(Step::Recv { from: root, buf: mine });
    }
    s.prune();
    s
}

/// Binomial tree: the root packs the blocks in root-relative rank order and
/// sends each child its whole subtree's share in one message; each rank
/// keeps its block and passes the rest on. ceil(log2 p) steps, blocks
/// travel up to log p times: chosen for small blocks. Every block is
/// `block` bytes (scatter, not scatterv).
pub fn binomial(view: CommView, tag: i32, blocks: &[UserBuf], recv: Option<UserBuf>, block: u64, root: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let vr = (rank - root).rem_euclid(size);
    let abs = |v: i32| (v + root) % size;
    let low = if vr == 0 { ceil_pow2(size) } else { vr & -vr };
    let span = low.min(size - vr) as u64;
    let area = s.temp_bytes(span * block);
    if vr == 0 {
        let first = s.round();
        for v in 1..size {
            first.local.push(Step::Copy { from: blocks[abs(v) as usize].clone(), to: bytes(&area, v as u64 * block, block) });
        }
        if let Some(mine) = &recv {
            first.local.push(Step::Copy { from: blocks[root as usize].clone(), to: mine.clone() });
        }
    } else if !area.is_empty() {
        s.round().comm.push(Step::Recv { from: abs(vr - low), buf: area.clone() });
    }
    let next = s.round();
    if vr != 0 {
        if let Some(mine) = &recv {
            next.local.push(Step::Copy { from: bytes(&area, 0, block), to: mine.clone() });
        }
    }
    let mut mask = low >> 1;
    while mask > 0 {
        if vr + mask < size {
            let n = mask.min(size - vr - mask) as u64;
            let b = bytes(&area, mask as u64 * block, n * block);
            if !b.is_empty() {
                next.comm.push(Step::Send { to: abs(vr + mask), buf: b });
            }
        }
        mask >>= 1;
    }
    s.prune();
    s
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::super::sim::{self, Rng, TBuf};

    #[test]
    fn every_algorithm_scatters() {
        let mut rng = Rng(7);
        for &n in sim::PROCS {
            for &count in sim::COUNTS {
                for tk in 0..2 {
                    for algo in 0..3 {
                        let seed = rng.next() % 1000;
                        let root = rng.below(n as u64) as usize;
                        let in_place = rng.below(2) == 0;
                        let rdt = sim::test_type(tk);
                        // scatterv (algo 2): rank r receives count + r items.
                        let cnt = |r: usize| if algo == 2 { count + r as u64 } else { count };
                        let fits = (0..n).all(|r| (cnt(r) * rdt.size()) & 15 == 0);
                        let sdt = sim::test_type(if fits { rng.below(2) } else { 0 });
                        let sitems = |r: usize| cnt(r) * rdt.size() / sdt.size();
                        // Blocks in reverse rank order in the send buffer, to
                        // check displacements are honoured.
                        let total: u64 = (0..n).map(sitems).sum();
                        let mut send = TBuf::new(total, &sdt);
                        let mut places = vec![0; n];
                        let mut at = 0;
                        for r in (0..n).rev() {
                            places[r] = at;
                            at += sitems(r);
                        }
                        let all: Vec<u64> = (0..send.elements()).map(|i| sim::value(root, i, seed)).collect();
                        send.set(&all);
                        let esize = (sdt.size() / 8) as usize;
                        let mut recvs: Vec<TBuf> = (0..n).map(|r| TBuf::new(cnt(r), &rdt)).collect();
                        let want: Vec<Vec<u64>> = (0..n)
                            .map(|r| {
                                let p = places[r] as usize * esize;
                                all[p..p + recvs[r].elements()].to_vec()
                            })
                            .collect();
                        let expects: Vec<Vec<u64>> = (0..n)
                            .map(|r| if in_place && r == root { recvs[r].mem.clone() } else { recvs[r].expect(&want[r]) })
                            .collect();
                        let blocks: Vec<_> = (0..n).map(|r| send.items(places[r], sitems(r))).collect();
                        let errs = sim::run(n, seed, |r| {
                            let v = sim::view(r, n);
                            let recv = if in_place && r == root { None } else { Some(recvs[r].ub()) };
                            let bl = if r == root { blocks.clone() } else { Vec::new() };
                            match algo {
                                0 | 2 => super::linear(v, 3, &bl, recv, root as i32),
                                _ => super::binomial(v, 3, &bl, recv, count * rdt.size(), root as i32),
                            }
                        });
                        assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                        for r in 0..n {
                            assert!(recvs[r].mem == expects[r], "algo {algo} n {n} count {count} root {root} rank {r} seed {seed}");
                        }
                    }
                }
            }
        }
    }
}

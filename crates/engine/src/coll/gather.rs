//! Gather and gatherv.

use super::util::{bytes, ceil_pow2};
use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Schedule, Step};

/// Linear: every rank sends its block straight to the root, which receives
/// them all at once. One step, p-1 messages into the root. Works for
/// gatherv (blocks of any sizes and types); chosen for gatherv, and for
/// gather with large blocks. `send` is None for the root's MPI_IN_PLACE;
/// `blocks[r]` (at the root only) is where rank r's data goes.
pub fn linear(view: CommView, tag: i32, send: Option<UserBuf>, blocks: &[UserBuf], root: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let round = s.round();
    if rank == root {
        for (r, b) in blocks.iter().enumerate().take(size as usize) {
            if r as i32 == root {
                if let Some(mine) = &send {
                    round.local.push(Step::Copy { from: mine.clone(), to: b.clone() });
                }
            } else if !b.is_empty() {
                round.comm.push(Step::Recv { from: r as i32, buf: b.clone() });
            }
        }
    } else if let Some(mine) = send.filter(|m| !m.is_empty()) {
        round.comm.push(Step::Send { to: root, buf: mine });
    }
    s.prune();
    s
}

/// Binomial tree: each rank collects its subtree's blocks (contiguous in
/// root-relative rank order) in scratch memory and passes them up in one
/// message. ceil(log2 p) steps, but blocks travel log p times: chosen for
/// small blocks. Every block is `block` bytes (gather, not gatherv).
pub fn binomial(view: CommView, tag: i32, send: Option<UserBuf>, blocks: &[UserBuf], block: u64, root: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let vr = (rank - root).rem_euclid(size);
    let abs = |v: i32| (v + root) % size;
    let low = if vr == 0 { ceil_pow2(size) } else { vr & -vr };
    let span = low.min(size - vr) as u64;
    // Our subtree's blocks, in relative order, start with ours.
    let area = s.temp_bytes(span * block);
    let first = s.round();
    if vr != 0 {
        if let Some(mine) = &send {
            first.local.push(Step::Copy { from: mine.clone(), to: bytes(&area, 0, block) });
        }
    }
    let mut mask = 1;
    while mask < low && vr + mask < size {
        let n = mask.min(size - vr - mask) as u64;
        let b = bytes(&area, mask as u64 * block, n * block);
        if !b.is_empty() {
            first.comm.push(Step::Recv { from: abs(vr + mask), buf: b });
        }
        mask <<= 1;
    }
    if vr != 0 {
        if !area.is_empty() {
            s.round().comm.push(Step::Send { to: abs(vr - low), buf: area });
        }
    } else {
        let last = s.round();
        if let Some(mine) = &send {
            last.local.push(Step::Copy { from: mine.clone(), to: blocks[root as usize].clone() });
        }
        for v in 1..size {
            last.local.push(Step::Copy { from: bytes(&area, v as u64 * block, block), to: blocks[abs(v) as usize].clone() });
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
    fn every_algorithm_gathers() {
        let mut rng = Rng(5);
        for &n in sim::PROCS {
            for &count in sim::COUNTS {
                for tk in 0..2 {
                    for algo in 0..3 {
                        let seed = rng.next() % 1000;
                        let root = rng.below(n as u64) as usize;
                        let in_place = rng.below(2) == 0;
                        let dt = sim::test_type(tk);
                        // gatherv (algo 2): rank r sends count + r items.
                        let cnt = |r: usize| if algo == 2 { count + r as u64 } else { count };
                        // The root may receive as another type of the same bytes.
                        let fits = (0..n).all(|r| (cnt(r) * dt.size()) & 15 == 0);
                        let rdt = sim::test_type(if fits { rng.below(2) } else { 0 });
                        let mut sends: Vec<TBuf> = (0..n).map(|r| TBuf::new(cnt(r), &dt)).collect();
                        let vals: Vec<Vec<u64>> =
                            (0..n).map(|r| (0..sends[r].elements()).map(|i| sim::value(r, i, seed)).collect()).collect();
                        for r in 0..n {
                            sends[r].set(&vals[r]);
                        }
                        // Receive items per rank, in rdt units (same bytes).
                        let ritems = |r: usize| cnt(r) * dt.size() / rdt.size();
                        let total: u64 = (0..n).map(ritems).sum();
                        let mut recv = TBuf::new(total + 3, &rdt);
                        let mut at = 0;
                        let mut places = Vec::new();
                        for r in 0..n {
                            places.push(at);
                            at += ritems(r);
                        }
                        let mut all: Vec<u64> = (0..recv.elements()).map(|i| i as u64).collect();
                        // In place: the root's block is already there.
                        let esize = (rdt.size() / 8) as usize;
                        if in_place {
                            let p = places[root] as usize * esize;
                            all[p..p + vals[root].len()].copy_from_slice(&vals[root]);
                        }
                        recv.set(&all);
                        for r in 0..n {
                            let p = places[r] as usize * esize;
                            all[p..p + vals[r].len()].copy_from_slice(&vals[r]);
                        }
                        let expect = recv.expect(&all);
                        let blocks: Vec<_> = (0..n).map(|r| recv.items(places[r], ritems(r))).collect();
                        let errs = sim::run(n, seed, |r| {
                            let v = sim::view(r, n);
                            let send = if in_place && r == root { None } else { Some(sends[r].ub()) };
                            let bl = if r == root { blocks.clone() } else { Vec::new() };
                            match algo {
                                0 | 2 => super::linear(v, 3, send, &bl, root as i32),
                                _ => super::binomial(v, 3, send, &bl, count * dt.size(), root as i32),
                            }
                        });
                        assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                        assert!(recv.mem == expect, "algo {algo} n {n} count {count} root {root} in_place {in_place} seed {seed}");
                    }
                }
            }
        }
    }
}

//! Allgather and allgatherv. Every algorithm takes `blocks[r]`, where rank
//! r's data goes (any sizes, so allgatherv is the same code), and `mine`,
//! our data, or None for MPI_IN_PLACE (then it is already in our block).

use super::util::{bytes, offsets, Fold};
use gridmpi_datatype::UserBuf;
use crate::sched::{byte_type, CommView, Schedule, Step};

/// The blocks as one dense byte area when they are: each one run, each
/// starting where the previous ends (a contiguous receive type and
/// displacements in order, as in every plain allgather).
fn dense_run(blocks: &[UserBuf]) -> Option<UserBuf> {
    let mut start: Option<*mut u8> = None;
    let mut at: *mut u8 = std::ptr::null_mut();
    let mut total = 0u64;
    for b in blocks.iter().filter(|b| !b.is_empty()) {
        let p = b.contiguous()?;
        match start {
            None => start = Some(p),
            Some(_) if p != at => return None,
            Some(_) => {}
        }
        at = p.wrapping_add(b.len() as usize);
        total += b.len();
    }
    // SAFETY: the blocks are adjacent runs, together `total` bytes.
    start.map(|p| unsafe { UserBuf::new(p, total, byte_type()) })
}

/// Ring: in step k every rank passes the block it received in step k-1 to
/// its right neighbour. p-1 steps, each block crosses each link once
/// (n(p-1)/p bytes per rank for n in all): chosen for large totals.
pub fn ring(view: CommView, tag: i32, mine: Option<UserBuf>, blocks: &[UserBuf]) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    if let Some(m) = mine {
        s.round().local.push(Step::Copy { from: m, to: blocks[rank as usize].clone() });
    }
    let right = (rank + 1) % size;
    let left = (rank - 1).rem_euclid(size);
    for k in 0..size - 1 {
        let sb = &blocks[(rank - k).rem_euclid(size) as usize];
        let rb = &blocks[(rank - k - 1).rem_euclid(size) as usize];
        let round = s.round();
        if !sb.is_empty() {
            round.comm.push(Step::Send { to: right, buf: sb.clone() });
        }
        if !rb.is_empty() {
            round.comm.push(Step::Recv { from: left, buf: rb.clone() });
        }
    }
    s.prune();
    s
}

/// Recursive doubling: in step k, partners 2^k apart swap everything they
/// have, so the data held doubles each step. ceil(log2 p) steps (+2 when p
/// is not a power of two: the extra ranks hand in their block first and
/// get the result last). Works in rank order in one byte area (the receive
/// buffer itself when it is dense): chosen for small totals.
pub fn recursive_doubling(view: CommView, tag: i32, mine: Option<UserBuf>, blocks: &[UserBuf]) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let lens: Vec<u64> = blocks.iter().map(|b| b.len()).collect();
    let offs = offsets(&lens);
    let (area, direct) = match dense_run(blocks) {
        Some(a) => (a, true),
        None => (s.temp_bytes(offs[size as usize]), false),
    };
    let range = |a: i32, b: i32| bytes(&area, offs[a as usize], offs[b as usize] - offs[a as usize]);
    let me = rank as usize;
    match &mine {
        Some(m) => s.round().local.push(Step::Copy { from: m.clone(), to: range(rank, rank + 1) }),
        None if !direct => s.round().local.push(Step::Copy { from: blocks[me].clone(), to: range(rank, rank + 1) }),
        None => {}
    }
    let fold = Fold::new(size);
    let push = |s: &mut Schedule, step: Step| {
        let is_empty = match &step {
            Step::Send { buf, .. } | Step::Recv { buf, .. } => buf.is_empty(),
            _ => false,
        };
        if !is_empty {
            s.round().comm.push(step);
        }
    };
    match fold.new_rank(rank) {
        None => {
            push(&mut s, Step::Send { to: rank + 1, buf: range(rank, rank + 1) });
            push(&mut s, Step::Recv { from: rank + 1, buf: range(0, size) });
        }
        Some(nr) => {
            if rank < 2 * fold.rem {
                push(&mut s, Step::Recv { from: rank - 1, buf: range(rank - 1, rank) });
            }
            let mut mask = 1;
            while mask < fold.p2 {
                let pnr = nr ^ mask;
                let partner = fold.old_rank(pnr);
                let (g, pg) = (nr & !(mask - 1), pnr & !(mask - 1));
                let send = range(fold.first_old(g), fold.first_old(g + mask));
                let recv = range(fold.first_old(pg), fold.first_old(pg + mask));
                let round = s.round();
                if !send.is_empty() {
                    round.comm.push(Step::Send { to: partner, buf: send });
                }
                if !recv.is_empty() {
                    round.comm.push(Step::Recv { from: partner, buf: recv });
                }
                mask <<= 1;
            }
            if rank < 2 * fold.rem {
                push(&mut s, Step::Send { to: rank - 1, buf: range(0, size) });
            }
        }
    }
    if !direct {
        let last = s.round();
        for r in 0..size {
            if r != rank || mine.is_some() {
                last.local.push(Step::Copy { from: range(r, r + 1), to: blocks[r as usize].clone() });
            }
        }
    }
    s.prune();
    s
}

/// Bruck: blocks are kept rotated (our own first); in step k every rank
/// sends the first min(2^k, p-2^k) blocks it has to rank - 2^k. ceil(log2 p)
/// steps for any p, plus one local rotation at the end: chosen for small
/// totals when p is not a power of two.
pub fn bruck(view: CommView, tag: i32, mine: Option<UserBuf>, blocks: &[UserBuf]) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let block_at = |i: i32| ((rank + i) % size) as usize;
    let lens: Vec<u64> = (0..size).map(|i| blocks[block_at(i)].len()).collect();
    let offs = offsets(&lens);
    let area = s.temp_bytes(offs[size as usize]);
    let range = |a: i32, b: i32| bytes(&area, offs[a as usize], offs[b as usize] - offs[a as usize]);
    let own = mine.clone().unwrap_or_else(|| blocks[rank as usize].clone());
    s.round().local.push(Step::Copy { from: own, to: range(0, 1) });
    let mut dist = 1;
    while dist < size {
        let n = dist.min(size - dist);
        let (sb, rb) = (range(0, n), range(dist, dist + n));
        let round = s.round();
        if !sb.is_empty() {
            round.comm.push(Step::Send { to: (rank - dist).rem_euclid(size), buf: sb });
        }
        if !rb.is_empty() {
            round.comm.push(Step::Recv { from: (rank + dist) % size, buf: rb });
        }
        dist *= 2;
    }
    let last = s.round();
    for i in 1..size {
        last.local.push(Step::Copy { from: range(i, i + 1), to: blocks[block_at(i)].clone() });
    }
    if let Some(m) = mine {
        last.local.push(Step::Copy { from: m, to: blocks[rank as usize].clone() });
    }
    s.prune();
    s
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::super::sim::{self, Rng, TBuf};

    #[test]
    fn every_algorithm_allgathers() {
        let mut rng = Rng(9);
        for &n in sim::PROCS.iter().chain(&[6, 12]) {
            for &count in sim::COUNTS {
                for tk in 0..2 {
                    for v in 0..2 {
                        for algo in 0..3 {
                            let seed = rng.next() % 1000;
                            let in_place = rng.below(2) == 0;
                            let dt = sim::test_type(tk);
                            // allgatherv: rank r contributes (count + 3r) % 11 items,
                            // blocks placed with gaps, in reverse order.
                            let cnt = |r: usize| if v == 1 { (count + 3 * r as u64) % 11 } else { count };
                            let mut places = vec![0; n];
                            let mut at = 0;
                            let order: Vec<usize> = if v == 1 { (0..n).rev().collect() } else { (0..n).collect() };
                            for &r in &order {
                                places[r] = at;
                                at += cnt(r) + v as u64;
                            }
                            let vals: Vec<Vec<u64>> = (0..n)
                                .map(|r| (0..(cnt(r) * dt.size() / 8) as usize).map(|i| sim::value(r, i, seed)).collect())
                                .collect();
                            let mut sends: Vec<TBuf> = (0..n).map(|r| TBuf::new(cnt(r), &dt)).collect();
                            let mut recvs: Vec<TBuf> = (0..n).map(|_| TBuf::new(at, &dt)).collect();
                            let esize = (dt.size() / 8) as usize;
                            let mut full: Vec<u64> = (0..recvs[0].elements()).map(|i| i as u64 * 3).collect();
                            for r in 0..n {
                                sends[r].set(&vals[r]);
                                let mut init = full.clone();
                                if in_place {
                                    let p = places[r] as usize * esize;
                                    init[p..p + vals[r].len()].copy_from_slice(&vals[r]);
                                }
                                recvs[r].set(&init);
                            }
                            for r in 0..n {
                                let p = places[r] as usize * esize;
                                full[p..p + vals[r].len()].copy_from_slice(&vals[r]);
                            }
                            let expect = recvs[0].expect(&full);
                            let blocks: Vec<Vec<_>> =
                                (0..n).map(|q| (0..n).map(|r| recvs[q].items(places[r], cnt(r))).collect()).collect();
                            let errs = sim::run(n, seed, |r| {
                                let view = sim::view(r, n);
                                let mine = if in_place { None } else { Some(sends[r].ub()) };
                                match algo {
                                    0 => super::ring(view, 3, mine, &blocks[r]),
                                    1 => super::recursive_doubling(view, 3, mine, &blocks[r]),
                                    _ => super::bruck(view, 3, mine, &blocks[r]),
                                }
                            });
                            assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                            for r in 0..n {
                                assert!(
                                    recvs[r].mem == expect,
                                    "algo {algo} v {v} n {n} count {count} type {tk} in_place {in_place} rank {r} seed {seed}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

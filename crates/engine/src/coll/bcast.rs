//! Broadcast. Ranks are taken relative to the root (`vr = rank - root mod
//! p`), so every algorithm is written for root 0.

use super::util::{byte_area, bytes, ceil_pow2};
use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Schedule, Step};

pub use super::basic::bcast_binomial as binomial;

fn abs_rank(vr: i32, root: i32, size: i32) -> i32 {
    (vr + root) % size
}

/// The data as a byte area: the buffer itself when dense, else scratch that
/// the root packs first and every other rank unpacks last.
fn staged(s: &mut Schedule, buf: &UserBuf, is_root: bool) -> (UserBuf, Option<Step>) {
    let (area, direct) = byte_area(s, buf);
    if direct {
        return (area, None);
    }
    if is_root {
        s.round().local.push(Step::Copy { from: buf.clone(), to: area.clone() });
        (area, None)
    } else {
        let unpack = Step::Copy { from: area.clone(), to: buf.clone() };
        (area, Some(unpack))
    }
}

/// Scatter then ring allgather (van de Geijn): the data is cut in p chunks,
/// scattered down a binomial tree, then every rank collects the chunks it
/// lacks around a ring. ceil(log2 p) + p - 1 steps, about 2n bytes sent
/// per rank instead of n log p: chosen for medium and large messages.
pub fn scatter_allgather(view: CommView, tag: i32, buf: UserBuf, root: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    if size == 1 {
        return s;
    }
    let vr = (rank - root).rem_euclid(size);
    let (area, unpack) = staged(&mut s, &buf, vr == 0);
    let n = area.len();
    let chunk = n.div_ceil(size as u64);
    // Bytes of chunks [a, b).
    let range = |a: i32, b: i32| {
        let lo = (a as u64 * chunk).min(n);
        let hi = (b as u64 * chunk).min(n);
        bytes(&area, lo, hi - lo)
    };
    // Scatter: our subtree is [vr, vr + low) with low our lowest set bit.
    let low = if vr == 0 { ceil_pow2(size) } else { vr & -vr };
    if vr != 0 {
        let b = range(vr, (vr + low).min(size));
        if !b.is_empty() {
            s.round().comm.push(Step::Recv { from: abs_rank(vr - low, root, size), buf: b });
        }
    }
    let mut sends = Vec::new();
    let mut mask = low >> 1;
    while mask > 0 {
        if vr + mask < size {
            let b = range(vr + mask, (vr + 2 * mask).min(size));
            if !b.is_empty() {
                sends.push(Step::Send { to: abs_rank(vr + mask, root, size), buf: b });
            }
        }
        mask >>= 1;
    }
    if !sends.is_empty() {
        s.round().comm = sends;
    }
    // Ring allgather of the chunks; the root has them all, so it only
    // forwards.
    let right = abs_rank((vr + 1) % size, root, size);
    let left = abs_rank((vr - 1).rem_euclid(size), root, size);
    for k in 0..size - 1 {
        let sc = (vr - k).rem_euclid(size);
        let rc = (vr - k - 1).rem_euclid(size);
        let (sb, rb) = (range(sc, sc + 1), range(rc, rc + 1));
        let round = s.round();
        if !sb.is_empty() && vr + 1 < size {
            round.comm.push(Step::Send { to: right, buf: sb });
        }
        if !rb.is_empty() && vr != 0 {
            round.comm.push(Step::Recv { from: left, buf: rb });
        }
    }
    if let Some(u) = unpack {
        s.round().local.push(u);
    }
    s.prune();
    s
}

/// Pipelined chain: the data flows root -> root+1 -> ... in `segment`-byte
/// pieces, each rank forwarding piece k while receiving piece k+1.
/// p - 2 + ceil(n / segment) steps, n bytes sent per rank: chosen for very
/// large messages, where it approaches link bandwidth whatever p is.
pub fn pipeline(view: CommView, tag: i32, buf: UserBuf, root: i32, segment: u64) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    if size == 1 {
        return s;
    }
    let vr = (rank - root).rem_euclid(size);
    let (area, unpack) = staged(&mut s, &buf, vr == 0);
    let n = area.len();
    let segment = segment.max(1);
    let nseg = n.div_ceil(segment).max(1) as i32;
    let seg = |k: i32| {
        let lo = k as u64 * segment;
        bytes(&area, lo.min(n), (n - lo.min(n)).min(segment))
    };
    let prev = abs_rank((vr - 1).rem_euclid(size), root, size);
    let next = abs_rank(vr + 1, root, size);
    // In step t, rank vr receives piece t - vr + 1 and sends piece t - vr.
    for t in 0..nseg + size - 2 {
        let round = s.round();
        let send = t - vr;
        if vr + 1 < size && (0..nseg).contains(&send) {
            round.comm.push(Step::Send { to: next, buf: seg(send) });
        }
        let recv = t - vr + 1;
        if vr > 0 && (0..nseg).contains(&recv) {
            round.comm.push(Step::Recv { from: prev, buf: seg(recv) });
        }
    }
    if let Some(u) = unpack {
        s.round().local.push(u);
    }
    s.prune();
    s
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::super::sim::{self, Rng, TBuf};

    #[test]
    fn every_algorithm_broadcasts() {
        let mut rng = Rng(11);
        for &n in sim::PROCS {
            for &count in sim::COUNTS {
                for tk in 0..2 {
                    for algo in 0..3 {
                        let seed = rng.next() % 1000;
                        let root = rng.below(n as u64) as usize;
                        let dt = sim::test_type(tk);
                        let mut bufs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
                        let data: Vec<u64> = (0..bufs[0].elements()).map(|i| sim::value(root, i, seed)).collect();
                        bufs[root].set(&data);
                        let expect = bufs[0].expect(&data);
                        let segment = rng.pick(&[1u64, 8, 24, 1000]);
                        let errs = sim::run(n, seed, |r| {
                            let v = sim::view(r, n);
                            let b = bufs[r].ub();
                            match algo {
                                0 => super::binomial(v, 3, b, root as i32),
                                1 => super::scatter_allgather(v, 3, b, root as i32),
                                _ => super::pipeline(v, 3, b, root as i32, segment),
                            }
                        });
                        assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                        for (r, b) in bufs.iter().enumerate() {
                            assert!(b.mem == expect, "algo {algo} n {n} count {count} type {tk} root {root} rank {r} seed {seed}");
                        }
                    }
                }
            }
        }
    }
}

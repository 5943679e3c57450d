//! Alltoall, alltoallv and alltoallw. `send[r]` is the block for rank r,
//! `recv[r]` where rank r's block goes; blocks may have any sizes and
//! types (v and w forms), except for Bruck, which needs equal sizes.

use super::util::bytes;
use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Schedule, Step};

/// For MPI_IN_PLACE: copy every block of the receive buffer to scratch
/// memory first, and send from there. Returns the send blocks.
pub fn in_place_sources(s: &mut Schedule, recv: &[UserBuf]) -> Vec<UserBuf> {
    let copies: Vec<UserBuf> = recv.iter().map(|b| s.temp_bytes(b.len())).collect();
    let round = s.round();
    for (b, c) in recv.iter().zip(&copies) {
        if !b.is_empty() {
            round.local.push(Step::Copy { from: b.clone(), to: c.clone() });
        }
    }
    copies
}

fn own_copy(s: &mut Schedule, send: &[UserBuf], recv: &[UserBuf], rank: i32) {
    let r = rank as usize;
    if !recv[r].is_empty() {
        s.round().local.push(Step::Copy { from: send[r].clone(), to: recv[r].clone() });
    }
}

/// Pairwise exchange: in step k rank r sends to r+k and receives from r-k
/// (r XOR k when p is a power of two, so pairs swap). p-1 steps, one
/// message each way per step, nothing else in flight: chosen for large
/// blocks, where one exchange saturates the links.
pub fn pairwise(view: CommView, tag: i32, send: &[UserBuf], recv: &[UserBuf]) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    own_copy(&mut s, send, recv, rank);
    let pow2 = size & (size - 1) == 0;
    for k in 1..size {
        let (to, from) = if pow2 { (rank ^ k, rank ^ k) } else { ((rank + k) % size, (rank - k).rem_euclid(size)) };
        let round = s.round();
        if !send[to as usize].is_empty() {
            round.comm.push(Step::Send { to, buf: send[to as usize].clone() });
        }
        if !recv[from as usize].is_empty() {
            round.comm.push(Step::Recv { from, buf: recv[from as usize].clone() });
        }
    }
    s.prune();
    s
}

/// Scattered: all exchanges posted at once, in batches of at most
/// `inflight` peers (r+1.., received from r-1..) so no receiver is flooded.
/// ceil((p-1)/inflight) steps: chosen for small and medium blocks and for
/// the v and w forms.
pub fn scattered(view: CommView, tag: i32, send: &[UserBuf], recv: &[UserBuf], inflight: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    own_copy(&mut s, send, recv, rank);
    let batch = inflight.max(1);
    let mut k = 1;
    while k < size {
        let round = s.round();
        for j in k..(k + batch).min(size) {
            let from = (rank - j).rem_euclid(size);
            if !recv[from as usize].is_empty() {
                round.comm.push(Step::Recv { from, buf: recv[from as usize].clone() });
            }
        }
        for j in k..(k + batch).min(size) {
            let to = (rank + j) % size;
            if !send[to as usize].is_empty() {
                round.comm.push(Step::Send { to, buf: send[to as usize].clone() });
            }
        }
        k += batch;
    }
    s.prune();
    s
}

/// Bruck: blocks are rotated so position i holds the block for rank r+i;
/// in step k every block whose position has bit k set moves 2^k ranks
/// forward, packed in one message. ceil(log2 p) steps, each block moving
/// up to log p times: chosen for small blocks on many processes. All
/// blocks are `block` bytes (alltoall only).
pub fn bruck(view: CommView, tag: i32, send: &[UserBuf], recv: &[UserBuf], block: u64) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    // Blocks are moved as `block` bytes each: other lengths would be cut
    // or padded without a word.
    if let Some(b) = send.iter().chain(recv).find(|b| b.len() != block) {
        s.mismatched(format!("this rank's alltoall blocks are {} and {block} bytes: a message of the collective would be truncated (mismatched counts or types?)", b.len()));
    }
    let p = size as usize;
    let area = s.temp_bytes(p as u64 * block);
    let at = |i: usize| bytes(&area, i as u64 * block, block);
    let first = s.round();
    for i in 0..p {
        first.local.push(Step::Copy { from: send[(rank as usize + i) % p].clone(), to: at(i) });
    }
    let mut dist = 1;
    let mut unpack: Vec<Step> = Vec::new();
    while dist < p {
        let moving: Vec<usize> = (0..p).filter(|i| i & dist != 0).collect();
        let out = s.temp_bytes(moving.len() as u64 * block);
        let inn = s.temp_bytes(moving.len() as u64 * block);
        let round = s.round();
        round.local.append(&mut unpack);
        for (j, &i) in moving.iter().enumerate() {
            round.local.push(Step::Copy { from: at(i), to: bytes(&out, j as u64 * block, block) });
            unpack.push(Step::Copy { from: bytes(&inn, j as u64 * block, block), to: at(i) });
        }
        if block > 0 {
            round.comm.push(Step::Send { to: (rank + dist as i32) % size, buf: out });
            round.comm.push(Step::Recv { from: (rank - dist as i32).rem_euclid(size), buf: inn });
        }
        dist *= 2;
    }
    let last = s.round();
    last.local.append(&mut unpack);
    for i in 0..p {
        last.local.push(Step::Copy { from: at(i), to: recv[(rank as usize + p - i) % p].clone() });
    }
    s.prune();
    s
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::super::sim::{self, Rng, TBuf};
    use crate::sched::Schedule;

    #[test]
    fn every_algorithm_exchanges() {
        let mut rng = Rng(13);
        for &n in sim::PROCS.iter().chain(&[6, 16]) {
            for &count in &sim::COUNTS[..7] {
                for tk in 0..2 {
                    for v in 0..2 {
                        for algo in 0..4 {
                            if algo == 2 && v == 1 {
                                continue; // Bruck needs equal blocks.
                            }
                            let seed = rng.next() % 1000;
                            let in_place = rng.below(3) == 0;
                            let dt = sim::test_type(tk);
                            // v: rank s sends (count + s + 2d) % 7 items to d; blocks
                            // in reverse order with gaps.
                            // (symmetric in place, where sendcounts are recvcounts)
                            let skew = if in_place { 0 } else { 1 };
                            let cnt = |src: usize, dst: usize| {
                                if v == 1 {
                                    (count + (src + dst + skew * dst) as u64) % 7
                                } else {
                                    count
                                }
                            };
                            let layout = |me: usize, sending: bool| {
                                let mut places = vec![0; n];
                                let mut at = 0;
                                for k in 0..n {
                                    let r = if v == 1 { n - 1 - k } else { k };
                                    places[r] = at;
                                    at += if sending { cnt(me, r) } else { cnt(r, me) } + v as u64;
                                }
                                (places, at)
                            };
                            let esize = (dt.size() / 8) as usize;
                            let val = |src: usize, dst: usize, i: usize| sim::value(src, dst * 1000 + i, seed);
                            let mut sends = Vec::new();
                            let mut recvs = Vec::new();
                            let mut expects = Vec::new();
                            for me in 0..n {
                                let (sp, st) = layout(me, true);
                                let (rp, rt) = layout(me, false);
                                // In place: the send data sits in the receive buffer.
                                let (sp, st) = if in_place { (rp.clone(), rt) } else { (sp, st) };
                                let mut sb = TBuf::new(st, &dt);
                                let mut rb = TBuf::new(rt, &dt);
                                let mut sv: Vec<u64> = (0..sb.elements()).map(|i| i as u64 + 77).collect();
                                for d in 0..n {
                                    let c = if in_place { cnt(d, me) } else { cnt(me, d) } as usize * esize;
                                    for i in 0..c {
                                        sv[sp[d] as usize * esize + i] = val(me, d, i);
                                    }
                                }
                                let mut rv: Vec<u64> = (0..rb.elements()).map(|i| i as u64 + 5).collect();
                                if in_place {
                                    rv = sv.clone();
                                }
                                rb.set(&rv);
                                sb.set(&sv);
                                for src in 0..n {
                                    for i in 0..cnt(src, me) as usize * esize {
                                        rv[rp[src] as usize * esize + i] = val(src, me, i);
                                    }
                                }
                                expects.push(rb.expect(&rv));
                                sends.push((sb, sp));
                                recvs.push((rb, rp));
                            }
                            let blocks: Vec<(Vec<_>, Vec<_>)> = (0..n)
                                .map(|me| {
                                    let (sp, rp) = (sends[me].1.clone(), recvs[me].1.clone());
                                    let s = (0..n).map(|d| sends[me].0.items(sp[d], cnt(me, d))).collect();
                                    let r = (0..n).map(|src| recvs[me].0.items(rp[src], cnt(src, me))).collect();
                                    (s, r)
                                })
                                .collect();
                            let inflight = rng.pick(&[1, 2, 3, 100]);
                            let errs = sim::run(n, seed, |r| {
                                let view = sim::view(r, n);
                                let (sb, rb) = &blocks[r];
                                let mut pre = Schedule::new(view.clone(), 3);
                                let sb = if in_place { super::in_place_sources(&mut pre, rb) } else { sb.clone() };
                                let s = match algo {
                                    0 => super::pairwise(view, 3, &sb, rb),
                                    1 => super::scattered(view, 3, &sb, rb, inflight),
                                    2 => super::bruck(view, 3, &sb, rb, count * dt.size()),
                                    _ => super::scattered(view, 3, &sb, rb, 1),
                                };
                                pre.append(s);
                                pre
                            });
                            assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                            for r in 0..n {
                                assert!(
                                    recvs[r].0.mem == expects[r],
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

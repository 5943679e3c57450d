//! Cluster-aware algorithms: for communicators that span clusters joined by
//! a WAN, cross the WAN the fewest times, fill it with several flows when
//! the message is large, and pace those flows so that together they never
//! overflow the bottleneck's queue (DESIGN.md, "The WAN problems").
//!
//! Shape: phases inside each cluster run existing algorithms on a sub-view
//! of the cluster's members (renumbered to real ranks by
//! [`Schedule::append_mapped`]); the WAN phase is written here. A cluster's
//! leader is its lowest rank, or the root when the root is in it.
//!
//! Pacing: a WAN round lists the ranks it sends to with a rate of
//! `share x bandwidth / flows`, flows being the connections that leave the
//! cluster at once ([`Sites::pace_rate`]); the runtime caps those sockets
//! (`SO_MAX_PACING_RATE`) for the round only. Intra-cluster traffic is never
//! paced.

use super::util::{bytes, byte_area, combine, even_block, items};
use super::{allgather, basic, barrier, reduce, reduce_scatter};
use crate::buf::UserBuf;
use crate::sched::{CommView, Reducer, Round, Schedule, Sites, Step};
use std::sync::Arc;

/// The members of `ranks` as a view of their own (None if we are not one).
fn sub_view(view: &CommView, members: &[i32]) -> Option<CommView> {
    let me = members.iter().position(|&r| r == view.rank)? as i32;
    Some(CommView {
        ctx: view.ctx,
        rank: me,
        size: members.len() as i32,
        pids: members.iter().map(|&r| view.pid(r)).collect::<Vec<_>>().into(),
        local_pids: None,
    })
}

/// Leader of cluster `c`: the root if it is there, else the lowest rank.
fn leader(sites: &Sites, c: u32, root: Option<i32>) -> i32 {
    match root {
        Some(r) if sites.cluster(r) == c => r,
        _ => sites.members(c)[0],
    }
}

/// Ranks outside cluster `c`.
fn outside(sites: &Sites, c: u32) -> usize {
    sites.of_rank.iter().filter(|&&x| x != c).count()
}

/// Alltoall(v,w) across clusters: every exchange is posted at once; those
/// that cross the WAN are paced so that all the flows leaving a cluster
/// add up to the configured share of the WAN, which keeps its queue short
/// (no tail drops, so no retransmission timeouts) while keeping it full.
/// Intra-cluster exchanges run unpaced alongside. One round.
pub fn alltoall(view: CommView, sites: &Sites, tag: i32, send: &[UserBuf], recv: &[UserBuf]) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mine = sites.cluster(rank);
    let flows = sites.members(mine).len() * outside(sites, mine);
    let rate = sites.pace_rate(flows);
    let mut s = Schedule::new(view, tag);
    if !recv[rank as usize].is_empty() {
        s.round().local.push(Step::Copy { from: send[rank as usize].clone(), to: recv[rank as usize].clone() });
    }
    let round = s.round();
    // Receives first, then sends starting with the next rank, so that
    // receivers are not all hit by the same sender at once.
    for k in 1..size {
        let from = (rank - k).rem_euclid(size);
        if !recv[from as usize].is_empty() {
            round.comm.push(Step::Recv { from, buf: recv[from as usize].clone() });
        }
    }
    for k in 1..size {
        let to = (rank + k) % size;
        if send[to as usize].is_empty() {
            continue;
        }
        round.comm.push(Step::Send { to, buf: send[to as usize].clone() });
        if let (Some(r), true) = (rate, sites.cluster(to) != mine) {
            round.pace.push((to, r));
        }
    }
    s.prune();
    s
}

/// Messages smaller than this per sending rank of the root's cluster go
/// whole over the WAN from the root; larger ones are split over the
/// cluster's members.
pub const BCAST_SPLIT_MIN: u64 = 32 * 1024;

/// Bcast across clusters. Small messages: the root sends to one leader per
/// cluster (one WAN crossing), leaders broadcast in their clusters
/// (binomial). Large ones: the root scatters k pieces among the k members
/// of its cluster, member i sends piece i to member i mod k' of every other
/// cluster (k paced WAN flows instead of one), and every cluster shares its
/// pieces inside. The WAN carries the message once per remote cluster.
pub fn bcast(view: CommView, sites: &Sites, tag: i32, buf: UserBuf, root: i32) -> Schedule {
    let rank = view.rank;
    let rc = sites.cluster(root);
    let home = sites.members(rc);
    let k = home.len();
    let mut s = Schedule::new(view.clone(), tag);
    if buf.is_empty() {
        return s;
    }
    if k == 1 || buf.len() < BCAST_SPLIT_MIN * k as u64 {
        // WAN: root -> the other clusters' leaders.
        let round = s.round();
        for c in 0..sites.count {
            let l = leader(sites, c, Some(root));
            if c != rc && l != root {
                if rank == root {
                    round.comm.push(Step::Send { to: l, buf: buf.clone() });
                } else if rank == l {
                    round.comm.push(Step::Recv { from: root, buf: buf.clone() });
                }
            }
        }
        // Inside each cluster, from its leader.
        let c = sites.cluster(rank);
        let members = sites.members(c);
        let l = leader(sites, c, Some(root));
        if let Some(sub) = sub_view(&view, &members) {
            let lidx = members.iter().position(|&r| r == l).unwrap() as i32;
            s.append_mapped(basic::bcast_binomial(sub, tag, buf, lidx), &members);
        }
        s.prune();
        return s;
    }
    let (area, dense) = byte_area(&mut s, &buf);
    let n = area.len();
    let piece = |i: usize| {
        let (off, len) = even_block(n, k as u64, i as u64);
        bytes(&area, off, len)
    };
    if rank == root && !dense {
        s.round().local.push(Step::Copy { from: buf.clone(), to: area.clone() });
    }
    // 1. The root scatters the pieces in its cluster.
    let round = s.round();
    for (i, &m) in home.iter().enumerate() {
        if m == root {
            continue;
        }
        if rank == root {
            round.comm.push(Step::Send { to: m, buf: piece(i) });
        } else if rank == m {
            round.comm.push(Step::Recv { from: root, buf: piece(i) });
        }
    }
    // 2. The WAN: home member i -> member i mod k' of every other cluster.
    let flows = k * (sites.count as usize - 1);
    let rate = sites.pace_rate(flows);
    let round = s.round();
    for c in 0..sites.count {
        if c == rc {
            continue;
        }
        let there = sites.members(c);
        for (i, &m) in home.iter().enumerate() {
            let dst = there[i % there.len()];
            if rank == m {
                round.comm.push(Step::Send { to: dst, buf: piece(i) });
                if let Some(r) = rate {
                    round.pace.push((dst, r));
                }
            } else if rank == dst {
                round.comm.push(Step::Recv { from: m, buf: piece(i) });
            }
        }
    }
    // 3. Inside every cluster, each member gives the pieces it holds to the others.
    let c = sites.cluster(rank);
    let members = sites.members(c);
    let holder = |i: usize| if c == rc { home[i] } else { members[i % members.len()] };
    let round = s.round();
    for i in 0..k {
        let h = holder(i);
        if h == rank {
            for &m in &members {
                if m != rank {
                    round.comm.push(Step::Send { to: m, buf: piece(i) });
                }
            }
        } else if members.contains(&rank) {
            round.comm.push(Step::Recv { from: h, buf: piece(i) });
        }
    }
    if !dense {
        s.round().local.push(Step::Copy { from: area, to: buf });
    }
    s.prune();
    s
}

/// Allreduce across clusters, commutative operations; the result is the
/// same bits on every rank (partial results are combined in cluster order).
/// Small vectors: reduce to each cluster's leader, leaders swap partials
/// over the WAN and combine them, then broadcast in their clusters. Long
/// vectors with equal clusters: reduce-scatter inside each cluster, member
/// i swaps its segment with member i of every other cluster (k paced WAN
/// flows each way), combine, allgather inside the cluster.
pub fn allreduce(view: CommView, sites: &Sites, tag: i32, input: Option<UserBuf>, recv: UserBuf, op: Arc<dyn Reducer>) -> Schedule {
    let rank = view.rank;
    let c = sites.cluster(rank);
    let members = sites.members(c);
    let k = members.len();
    let count = recv.count();
    let dt = recv.datatype().clone();
    let equal = (0..sites.count).all(|x| sites.members(x).len() == k);
    let mut s = Schedule::new(view.clone(), tag);
    if count == 0 {
        return s;
    }
    let input = input.unwrap_or_else(|| recv.clone());
    let sub = sub_view(&view, &members).expect("a rank is in its own cluster");
    if !equal || k == 1 || count < k as u64 || recv.len() < 64 * 1024 {
        // Leaders: partial of the cluster in recv.
        let l = leader(sites, c, None);
        let lidx = members.iter().position(|&r| r == l).unwrap() as i32;
        let result = if rank == l { Some(recv.clone()) } else { None };
        s.append_mapped(reduce::binomial(sub.clone(), tag, input, result, op.clone(), lidx), &members);
        if rank == l {
            exchange_and_combine(&mut s, sites, &recv, &op, |x| leader(sites, x, None), 1);
        }
        s.append_mapped(basic::bcast_binomial(sub, tag, recv, lidx), &members);
        s.prune();
        return s;
    }
    // Reduce-scatter inside the cluster: member i gets segment i.
    let counts: Vec<u64> = (0..k).map(|i| even_block(count, k as u64, i as u64).1).collect();
    let me = sub.rank as usize;
    let (off, n) = even_block(count, k as u64, me as u64);
    let seg = items(&recv, off, n);
    let tmp_all = s.temp_typed(count, &dt);
    s.round().local.push(Step::Copy { from: input, to: tmp_all.clone() });
    s.append_mapped(reduce_scatter::ring(sub.clone(), tag, tmp_all, seg.clone(), &counts, op.clone()), &members);
    // Swap segments with the same-index members of the other clusters.
    exchange_and_combine(&mut s, sites, &seg, &op, |x| sites.members(x)[me], k);
    // Allgather the segments inside the cluster.
    let blocks: Vec<UserBuf> = (0..k).map(|i| {
        let (o, n) = even_block(count, k as u64, i as u64);
        items(&recv, o, n)
    }).collect();
    s.append_mapped(allgather::ring(sub, tag, None, &blocks), &members);
    s.prune();
    s
}

/// Send `mine` to `partner(x)` of every other cluster x, receive theirs,
/// and set `mine` to the combination of all clusters' values in cluster
/// order. `flows_per_cluster`: WAN connections each cluster opens at once.
fn exchange_and_combine(
    s: &mut Schedule,
    sites: &Sites,
    mine: &UserBuf,
    op: &Arc<dyn Reducer>,
    partner: impl Fn(u32) -> i32,
    flows_per_cluster: usize,
) {
    let c = sites.cluster(s.view.rank);
    let others: Vec<u32> = (0..sites.count).filter(|&x| x != c).collect();
    if others.is_empty() {
        return;
    }
    let rate = sites.pace_rate(flows_per_cluster * others.len());
    // Keep our value aside: `mine` becomes the running result.
    let own = s.temp_typed(mine.count(), mine.datatype());
    let theirs: Vec<UserBuf> = others.iter().map(|_| s.temp_typed(mine.count(), mine.datatype())).collect();
    let round = s.round();
    round.local.push(Step::Copy { from: mine.clone(), to: own.clone() });
    for (x, t) in others.iter().zip(&theirs) {
        let p = partner(*x);
        round.comm.push(Step::Recv { from: p, buf: t.clone() });
        round.comm.push(Step::Send { to: p, buf: own.clone() });
        if let Some(r) = rate {
            round.pace.push((p, r));
        }
    }
    // result = v(0) op v(1) op ... in cluster order, into `mine`.
    let mut vals: Vec<(u32, UserBuf)> = others.iter().copied().zip(theirs).collect();
    vals.push((c, own));
    vals.sort_by_key(|v| v.0);
    let round = s.round();
    let mut acc = vals[0].1.clone();
    for (_, v) in vals.into_iter().skip(1) {
        // v = acc op v (acc holds the lower clusters' combination).
        let mut r = Round::default();
        combine(&mut r, op, &v, &acc, false);
        round.local.extend(r.local);
        acc = v;
    }
    round.local.push(Step::Copy { from: acc, to: mine.clone() });
}

/// Barrier across clusters: each cluster gathers at its leader, leaders run
/// a dissemination barrier over the WAN, leaders release their clusters.
pub fn barrier(view: CommView, sites: &Sites, tag: i32) -> Schedule {
    let rank = view.rank;
    let c = sites.cluster(rank);
    let members = sites.members(c);
    let sub = sub_view(&view, &members).expect("a rank is in its own cluster");
    let leaders: Vec<i32> = (0..sites.count).map(|x| leader(sites, x, None)).collect();
    let mut s = Schedule::new(view.clone(), tag);
    s.append_mapped(barrier::fan_in(sub.clone(), tag), &members);
    if let Some(lv) = sub_view(&view, &leaders) {
        s.append_mapped(basic::barrier_dissemination(lv, tag), &leaders);
    }
    s.append_mapped(barrier::fan_out(sub, tag), &members);
    s.prune();
    s
}

/// Reduce across clusters, commutative operations: reduce to each
/// cluster's leader (the root leads its own cluster), leaders send their
/// partials over the WAN to the root, which combines them in cluster order.
pub fn reduce(view: CommView, sites: &Sites, tag: i32, input: UserBuf, recv: Option<UserBuf>, op: Arc<dyn Reducer>, root: i32) -> Schedule {
    let rank = view.rank;
    let c = sites.cluster(rank);
    let rc = sites.cluster(root);
    let members = sites.members(c);
    let sub = sub_view(&view, &members).expect("a rank is in its own cluster");
    let l = leader(sites, c, Some(root));
    let lidx = members.iter().position(|&r| r == l).unwrap() as i32;
    let mut s = Schedule::new(view.clone(), tag);
    if input.is_empty() {
        return s;
    }
    let (count, dt) = (input.count(), input.datatype().clone());
    // Each leader's cluster partial: in the root's receive buffer at the root.
    let partial = if rank == root { recv.clone() } else if rank == l { Some(s.temp_typed(count, &dt)) } else { None };
    s.append_mapped(reduce::binomial(sub, tag, input, partial.clone(), op.clone(), lidx), &members);
    if rank == l && rank != root {
        s.round().comm.push(Step::Send { to: root, buf: partial.unwrap() });
    } else if rank == root {
        let mine = partial.expect("the root's receive buffer");
        let temps: Vec<(u32, UserBuf)> = (0..sites.count).filter(|&x| x != rc).map(|x| (x, s.temp_typed(count, &dt))).collect();
        let round = s.round();
        for (x, t) in &temps {
            round.comm.push(Step::Recv { from: leader(sites, *x, Some(root)), buf: t.clone() });
        }
        let own = s.temp_typed(count, &dt);
        let round = s.round();
        round.local.push(Step::Copy { from: mine.clone(), to: own.clone() });
        let mut vals = temps;
        vals.push((rc, own));
        vals.sort_by_key(|v| v.0);
        let mut acc = vals[0].1.clone();
        for (_, v) in vals.into_iter().skip(1) {
            let mut r = Round::default();
            combine(&mut r, &op, &v, &acc, false);
            round.local.extend(r.local);
            acc = v;
        }
        round.local.push(Step::Copy { from: acc, to: mine });
    }
    s.prune();
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::sim::{self, Rng, TBuf, PACES};
    use crate::coll::util::bytes as byte_range;

    /// Random cluster layouts: (cluster of each rank, count).
    fn layout(rng: &mut Rng, n: usize) -> Sites {
        let count = (2 + rng.below(2) as u32).min(n as u32).max(1);
        let mut of: Vec<u32> = (0..n).map(|r| (r as u32) % count).collect();
        // Shuffle so clusters are not rank ranges.
        for i in (1..n).rev() {
            of.swap(i, rng.below(i as u64 + 1) as usize);
        }
        // Renumber in order of first appearance, as the shell does.
        let mut ids = vec![];
        let of: Vec<u32> = of
            .iter()
            .map(|c| match ids.iter().position(|x| x == c) {
                Some(i) => i as u32,
                None => {
                    ids.push(*c);
                    (ids.len() - 1) as u32
                }
            })
            .collect();
        Sites { of_rank: of.into(), count: ids.len() as u32, wan_bps: Some(100_000_000), pace_share: 0.9 }
    }

    fn check_paces(sites: &Sites, pids_are_ranks: bool) {
        let log = PACES.with(|p| std::mem::take(&mut *p.borrow_mut()));
        let mut caps = std::collections::HashMap::new();
        for (r, peer, rate) in log {
            assert!(pids_are_ranks);
            assert_ne!(sites.cluster(r as i32), sites.cluster(peer as i32), "an intra-cluster connection was paced");
            let e = caps.entry((r, peer)).or_insert(0i32);
            match rate {
                Some(x) => {
                    assert!(x > 0 && x < 100_000_000 / 8);
                    *e += 1
                }
                None => *e -= 1,
            }
        }
        assert!(caps.values().all(|&v| v == 0), "a pacing cap was never released");
    }

    #[test]
    fn alltoall_moves_every_block_and_paces_only_the_wan() {
        let mut rng = Rng(7);
        for &n in &[2usize, 3, 4, 5, 8, 9] {
            for &len in &[0u64, 1, 100, 5000] {
                let seed = rng.next() % 1000;
                let sites = layout(&mut rng, n);
                let mut sends: Vec<Vec<u8>> = (0..n).map(|r| (0..len as usize * n).map(|i| (i * 7 + r * 31 + seed as usize) as u8).collect()).collect();
                let mut recvs: Vec<Vec<u8>> = (0..n).map(|_| vec![0u8; len as usize * n]).collect();
                let sb: Vec<UserBuf> = sends.iter_mut().map(|v| unsafe { UserBuf::new(v.as_mut_ptr(), v.len() as u64, crate::sched::byte_type()) }).collect();
                let rb: Vec<UserBuf> = recvs.iter_mut().map(|v| unsafe { UserBuf::new(v.as_mut_ptr(), v.len() as u64, crate::sched::byte_type()) }).collect();
                let errs = sim::run(n, seed, |r| {
                    let s: Vec<UserBuf> = (0..n).map(|p| byte_range(&sb[r], p as u64 * len, len)).collect();
                    let d: Vec<UserBuf> = (0..n).map(|p| byte_range(&rb[r], p as u64 * len, len)).collect();
                    alltoall(sim::view(r, n), &sites, 5, &s, &d)
                });
                assert!(errs.iter().all(|e| e.is_none()));
                for r in 0..n {
                    for p in 0..n {
                        let got = &recvs[r][p * len as usize..(p + 1) * len as usize];
                        let want = &sends[p][r * len as usize..(r + 1) * len as usize];
                        assert_eq!(got, want, "n {n} len {len} seed {seed}: block {p}->{r}");
                    }
                }
                check_paces(&sites, true);
            }
        }
    }

    #[test]
    fn bcast_small_and_split_reach_everyone() {
        let mut rng = Rng(11);
        for &n in &[2usize, 3, 4, 6, 8] {
            for &count in &[0u64, 1, 37, 20_000] {
                for tk in 0..2 {
                    let seed = rng.next() % 1000;
                    let sites = layout(&mut rng, n);
                    let root = rng.below(n as u64) as i32;
                    let dt = sim::test_type(tk);
                    let mut bufs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
                    let v: Vec<u64> = (0..bufs[0].elements()).map(|i| sim::value(root as usize, i, seed)).collect();
                    bufs[root as usize].set(&v);
                    let expect = bufs[0].expect(&v);
                    let errs = sim::run(n, seed, |r| bcast(sim::view(r, n), &sites, 3, bufs[r].ub(), root));
                    assert!(errs.iter().all(|e| e.is_none()));
                    for r in 0..n {
                        assert_eq!(bufs[r].mem, expect, "n {n} count {count} root {root} rank {r} seed {seed}");
                    }
                    check_paces(&sites, true);
                }
            }
        }
    }

    #[test]
    fn allreduce_gives_every_rank_the_same_sum() {
        let mut rng = Rng(13);
        for &n in &[2usize, 3, 4, 6, 8] {
            for &count in &[0u64, 1, 7, 200, 12_000] {
                for in_place in [false, true] {
                    let seed = rng.next() % 1000;
                    let sites = layout(&mut rng, n);
                    let dt = sim::test_type(1);
                    let (op, f) = sim::test_op(1);
                    let mut inputs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
                    let mut recvs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
                    let m = inputs[0].elements();
                    let mut want = vec![0u64; m];
                    for r in 0..n {
                        let v: Vec<u64> = (0..m).map(|i| sim::value(r, i, seed)).collect();
                        for i in 0..m {
                            want[i] = f(want[i], v[i]);
                        }
                        inputs[r].set(&v);
                        if in_place {
                            recvs[r].set(&v);
                        }
                    }
                    let expect = recvs[0].expect(&want);
                    let errs = sim::run(n, seed, |r| {
                        let input = if in_place { None } else { Some(inputs[r].ub()) };
                        allreduce(sim::view(r, n), &sites, 4, input, recvs[r].ub(), op.clone())
                    });
                    assert!(errs.iter().all(|e| e.is_none()));
                    for r in 0..n {
                        assert_eq!(recvs[r].mem, expect, "n {n} count {count} rank {r} seed {seed}");
                    }
                    check_paces(&sites, true);
                }
            }
        }
    }

    #[test]
    fn large_allreduce_with_equal_clusters_uses_the_split_path() {
        // 2 clusters of 3: the segmented path (and its paced WAN swap).
        let n = 6;
        let sites = Sites { of_rank: vec![0, 1, 0, 1, 0, 1].into(), count: 2, wan_bps: Some(100_000_000), pace_share: 0.9 };
        let count = 20_000;
        let dt = sim::test_type(1);
        let (op, f) = sim::test_op(1);
        let mut inputs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
        let mut recvs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
        let m = inputs[0].elements();
        let mut want = vec![0u64; m];
        for r in 0..n {
            let v: Vec<u64> = (0..m).map(|i| sim::value(r, i, 3)).collect();
            for i in 0..m {
                want[i] = f(want[i], v[i]);
            }
            inputs[r].set(&v);
        }
        let expect = recvs[0].expect(&want);
        sim::run(n, 3, |r| allreduce(sim::view(r, n), &sites, 4, Some(inputs[r].ub()), recvs[r].ub(), op.clone()));
        for r in 0..n {
            assert_eq!(recvs[r].mem, expect);
        }
        let log = PACES.with(|p| p.borrow().clone());
        assert!(log.iter().any(|e| e.2.is_some()), "the WAN swap was not paced");
        check_paces(&sites, true);
    }

    #[test]
    fn reduce_reaches_the_root_and_barrier_synchronizes() {
        let mut rng = Rng(17);
        for &n in &[2usize, 3, 5, 8] {
            let sites = layout(&mut rng, n);
            let seed = rng.next() % 1000;
            sim::run_opts(n, seed, |r| barrier(sim::view(r, n), &sites, 2), true);
            let root = rng.below(n as u64) as i32;
            let count = 50;
            let dt = sim::test_type(0);
            let (op, f) = sim::test_op(1);
            let mut inputs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
            let mut out = TBuf::new(count, &dt);
            let m = inputs[0].elements();
            let mut want = vec![0u64; m];
            for r in 0..n {
                let v: Vec<u64> = (0..m).map(|i| sim::value(r, i, seed)).collect();
                for i in 0..m {
                    want[i] = f(want[i], v[i]);
                }
                inputs[r].set(&v);
            }
            let expect = out.expect(&want);
            let ob = out.ub();
            sim::run(n, seed, |r| {
                let recv = if r as i32 == root { Some(ob.clone()) } else { None };
                reduce(sim::view(r, n), &sites, 6, inputs[r].ub(), recv, op.clone(), root)
            });
            assert_eq!(out.mem, expect, "n {n} root {root}");
            check_paces(&sites, true);
        }
    }
}

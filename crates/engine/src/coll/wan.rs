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
//! Pacing: a WAN round lists the ranks it sends to with a rate each: the
//! part of the configured share of the WAN bandwidth that the flow's bytes
//! are of all the bytes leaving the cluster in that phase, less what the
//! bottleneck's queue absorbs ([`Sites::pace_rate`]); the runtime caps
//! those sockets (`SO_MAX_PACING_RATE`) for the round only. Intra-cluster
//! traffic is never paced.

use super::util::{bytes, byte_area, combine, even_block, items, offsets};
use super::{basic, barrier, gather, reduce, reduce_scatter, scatter};
use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, PaceByBurst, Reducer, Round, Schedule, Sites, Step};
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
/// Intra-cluster exchanges run unpaced alongside. Each WAN flow gets its
/// part of the burst leaving the cluster: with `equal` (MPI_Alltoall)
/// every member sends as much as we do; otherwise (alltoallv/w) the
/// members first tell each other how much they send across, so a rank with
/// more to send gets more of the bandwidth and all finish together.
///
/// Above [`DIRECT_WAN_FLOWS_MAX`] flows between two clusters the exchange
/// is not posted at once: MPI_Alltoall goes through forwarders
/// (`alltoall_forwarded`), alltoallv/w sends one flow per link at a time
/// (`one_flow_per_link_at_a_time`).
pub fn alltoall(view: CommView, sites: &Sites, tag: i32, send: &[UserBuf], recv: &[UserBuf], equal: bool) -> Schedule {
    if equal && crosses_by_forwarders(sites) {
        return alltoall_forwarded(view, sites, tag, send, recv);
    }
    let (rank, size) = (view.rank, view.size);
    let mine = sites.cluster(rank);
    let members = sites.members(mine);
    // Our WAN bytes per burst (one, or one per link: `link_columns`).
    let columns = link_columns(sites);
    let mut ours = vec![0u64; columns];
    for r in (0..size).filter(|&r| sites.cluster(r) != mine) {
        ours[link_column(sites, r)] += send[r as usize].len();
    }
    let mut s = Schedule::new(view, tag);
    if !recv[rank as usize].is_empty() {
        s.round().local.push(Step::Copy { from: send[rank as usize].clone(), to: recv[rank as usize].clone() });
    }
    let mut burst = None;
    if sites.pacing() && !equal && members.len() > 1 {
        // Every member's WAN bytes, ours written now, the others' received.
        let me = members.iter().position(|&m| m == rank).unwrap();
        let row = 8 * columns as u64;
        let totals = s.temp_bytes(row * members.len() as u64);
        for (c, &b) in ours.iter().enumerate() {
            // SAFETY: the temp holds `columns` u64s per member.
            unsafe { (totals.base() as *mut u64).add(me * columns + c).write_unaligned(b) };
        }
        let slot = |i: usize| bytes(&totals, row * i as u64, row);
        let round = s.round();
        for (i, &m) in members.iter().enumerate().filter(|&(_, &m)| m != rank) {
            round.comm.push(Step::Send { to: m, buf: slot(me) });
            round.comm.push(Step::Recv { from: m, buf: slot(i) });
        }
        burst = Some(totals);
    }
    if !equal && sites.pacing() && crosses_by_forwarders(sites) {
        one_flow_per_link_at_a_time(&mut s, sites, send, recv, &ours, burst);
        s.prune();
        return s;
    }
    let round = s.round();
    round.drain = true;
    // Receives first, then sends starting with the next rank, so that
    // receivers are not all hit by the same sender at once.
    for k in 1..size {
        let from = (rank - k).rem_euclid(size);
        if !recv[from as usize].is_empty() {
            round.comm.push(Step::Recv { from, buf: recv[from as usize].clone() });
        }
    }
    let mut flows = Vec::new();
    for k in 1..size {
        let to = (rank + k) % size;
        if send[to as usize].is_empty() {
            continue;
        }
        round.comm.push(Step::Send { to, buf: send[to as usize].clone() });
        if sites.cluster(to) != mine {
            flows.push((to, send[to as usize].len(), link_column(sites, to)));
        }
    }
    match burst {
        Some(burst) => round.pace_by_burst = Some(PaceByBurst { sites: sites.clone(), burst, columns, flows, from: mine }),
        None => {
            let n = members.len() as u64;
            round.pace = flows.into_iter().filter_map(|(to, b, c)| sites.pace_rate_on(mine, sites.cluster(to), n * ours[c], b).map(|r| (to, r))).collect();
        }
    }
    s.prune();
    s
}

/// How many bursts an alltoall's WAN phase paces: one for all the bytes
/// leaving the cluster, or one per destination cluster when the links
/// differ (`Sites::link_bps`).
///
/// Links of equal bandwidth are taken as one way out of the site (its
/// uplink), which every WAN flow leaving it shares. Links measured or
/// given with different bandwidths are taken as paths of their own, each
/// paced at its bandwidth: pacing everything at the slowest link's rate
/// would keep every faster link mostly idle.
fn link_columns(sites: &Sites) -> usize {
    if sites.link_bps.is_some() { sites.count as usize } else { 1 }
}

/// The burst column of rank `to`'s link (see [`link_columns`]).
fn link_column(sites: &Sites, to: i32) -> usize {
    if sites.link_bps.is_some() { sites.cluster(to) as usize } else { 0 }
}

/// At most this many flows cross the WAN from one cluster to another in a
/// direct alltoall (every member to every member: 16 for two clusters of
/// four); above it the exchange goes through forwarders.
///
/// Each paced flow still sends its first packet at once, and no flow is
/// paced below [`crate::sched::MIN_PACE_RATE`] (3 Mbit/s). With two
/// clusters of 16, 256 flows per direction put 256 packets into the
/// bottleneck's queue at the start of every call and add up to 770
/// Mbit/s: on the testbed's 100 Mbit/s, 40-packet WAN that was 200-780
/// retransmission timeouts per 10 calls of the IS and FT kernels.
pub const DIRECT_WAN_FLOWS_MAX: usize = 16;

/// Whether some pair of clusters would exchange more than
/// [`DIRECT_WAN_FLOWS_MAX`] flows in a direct alltoall.
fn crosses_by_forwarders(sites: &Sites) -> bool {
    let sizes: Vec<usize> = (0..sites.count).map(|c| sites.of_rank.iter().filter(|&&x| x == c).count()).collect();
    sizes.iter().enumerate().any(|(a, &na)| sizes.iter().enumerate().any(|(b, &nb)| a != b && na * nb > DIRECT_WAN_FLOWS_MAX))
}

/// Alltoallv/w of large clusters: the forwarders of MPI_Alltoall would
/// need every block's length before the schedule is built, which only its
/// sender and its receiver know. So each rank sends to one rank of each
/// other cluster at a time instead, each send paced at the part of its
/// link's burst that this rank sends that way, the next ones started once
/// the round's data has left the host: at most one flow per member of
/// ours crosses a link at a time, and a link's flows still add up to its
/// share and end together. Every receive is posted in the first round and
/// awaited after the last (Round::hold_carried), so no sender waits for a
/// receiver.
///
/// A send above the eager limit waits a round trip for its clear-to-send
/// before its data goes, and here they go one after another.
fn one_flow_per_link_at_a_time(s: &mut Schedule, sites: &Sites, send: &[UserBuf], recv: &[UserBuf], ours: &[u64], totals: Option<UserBuf>) {
    let (rank, size) = (s.view.rank, s.view.size);
    let mine = sites.cluster(rank);
    let round = s.round();
    for k in 1..size {
        let from = (rank - k).rem_euclid(size);
        if !recv[from as usize].is_empty() {
            round.carry.push(Step::Recv { from, buf: recv[from as usize].clone() });
        }
    }
    for k in 1..size {
        let to = (rank + k) % size;
        if sites.cluster(to) == mine && !send[to as usize].is_empty() {
            round.comm.push(Step::Send { to, buf: send[to as usize].clone() });
        }
    }
    // Round r: to member (me + r) of every other cluster, so every link
    // carries one flow per member of ours at a time.
    let me = sites.members(mine).iter().position(|&m| m == rank).expect("a rank is in its cluster");
    let others: Vec<Vec<i32>> = (0..sites.count).filter(|&c| c != mine).map(|c| sites.members(c)).collect();
    let mut to_cluster = vec![0u64; sites.count as usize];
    for r in 0..size {
        to_cluster[sites.cluster(r) as usize] += send[r as usize].len();
    }
    let widest = others.iter().map(Vec::len).max().unwrap_or(0);
    let rounds: Vec<Vec<i32>> = (0..widest)
        .map(|r| others.iter().filter(|t| r < t.len()).map(|t| t[(me + r) % t.len()]).filter(|&to| !send[to as usize].is_empty()).collect::<Vec<_>>())
        .filter(|dests| !dests.is_empty())
        .collect();
    for (i, dests) in rounds.iter().enumerate() {
        let round = if i == 0 { s.last_round() } else { s.round() };
        round.drain = true;
        round.hold_carried = i + 1 < rounds.len();
        // Each flow at the part of its link's burst that we send that way.
        let mut flows = Vec::new();
        for &to in dests {
            round.comm.push(Step::Send { to, buf: send[to as usize].clone() });
            flows.push((to, to_cluster[sites.cluster(to) as usize], link_column(sites, to)));
        }
        match &totals {
            Some(burst) => round.pace_by_burst = Some(PaceByBurst { sites: sites.clone(), burst: burst.clone(), columns: ours.len(), flows, from: mine }),
            None => round.pace.extend(flows.into_iter().filter_map(|(to, b, c)| sites.pace_rate_on(mine, sites.cluster(to), ours[c], b).map(|r| (to, r)))),
        }
    }
}

/// MPI_Alltoall across clusters through forwarders: each block crosses
/// the WAN once, but packed with the blocks of the sender's cluster mates
/// for the same destination, so only one flow per destination rank leaves
/// a cluster (`n_B` flows from cluster A to cluster B instead of
/// `n_A * n_B`).
///
/// Member j of cluster B is served in cluster A by the forwarder
/// `members_A[j % n_A]`. Round 1 (inside the cluster): every member sends
/// its block for j to that forwarder, which lays the blocks out in member
/// order; the receives of the packed blocks from the other clusters are
/// posted here too (carried to the end of round 2). Round 2: each
/// forwarder sends its packed buffers across the WAN, paced at their part
/// of all the bytes leaving the cluster, and the members exchange their
/// own blocks inside the cluster meanwhile. Round 3: the packed buffers
/// received are copied out to their blocks.
///
/// Messages between two members keep one order on both sides (the blocks
/// for forwarding, by destination rank, then the direct block), as MPI
/// matches messages of one tag in the order they were sent.
fn alltoall_forwarded(view: CommView, sites: &Sites, tag: i32, send: &[UserBuf], recv: &[UserBuf]) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mine = sites.cluster(rank);
    let members = sites.members(mine);
    let (na, me) = (members.len(), members.iter().position(|&m| m == rank).expect("a rank is in its cluster"));
    // MPI_Alltoall: every block has the same length.
    let block = send[rank as usize].len();
    let mut s = Schedule::new(view, tag);
    if block == 0 {
        return s;
    }
    let others: Vec<Vec<i32>> = (0..sites.count).filter(|&c| c != mine).map(|c| sites.members(c)).collect();
    // Scratch first: (destination, its pack) for the destinations we
    // forward for, and (cluster's members, packed buffer from there).
    let mut packs = Vec::new();
    let mut unpack = Vec::new();
    for there in &others {
        for (j, &dest) in there.iter().enumerate() {
            if members[j % na] == rank {
                packs.push((dest, s.temp_bytes(na as u64 * block)));
            }
        }
        unpack.push((there.clone(), s.temp_bytes(there.len() as u64 * block)));
    }
    // Round 1: blocks to their forwarders; packed blocks from elsewhere.
    let round = s.round();
    round.local.push(Step::Copy { from: send[rank as usize].clone(), to: recv[rank as usize].clone() });
    let mut our_packs = packs.iter();
    for there in &others {
        for (j, &dest) in there.iter().enumerate() {
            let forwarder = members[j % na];
            if forwarder != rank {
                round.comm.push(Step::Send { to: forwarder, buf: send[dest as usize].clone() });
                continue;
            }
            let (d, pack) = our_packs.next().expect("a pack per destination forwarded");
            debug_assert_eq!(*d, dest);
            for (k, &m) in members.iter().enumerate() {
                let slot = bytes(pack, k as u64 * block, block);
                if m == rank {
                    round.local.push(Step::Copy { from: send[dest as usize].clone(), to: slot });
                } else {
                    round.comm.push(Step::Recv { from: m, buf: slot });
                }
            }
        }
    }
    for (there, packed) in &unpack {
        round.carry.push(Step::Recv { from: there[me % there.len()], buf: packed.clone() });
    }
    // Round 2: the packed blocks across the WAN; our cluster's own blocks.
    // The burst on a flow's link: every WAN block of the cluster, or those
    // for the flow's cluster when each link is paced on its own.
    let burst = |dest: i32| match sites.link_bps {
        Some(_) => (na * sites.members(sites.cluster(dest)).len()) as u64 * block,
        None => (na * (size as usize - na)) as u64 * block,
    };
    let round = s.round();
    round.drain = true;
    for &m in members.iter().filter(|&&m| m != rank) {
        round.comm.push(Step::Recv { from: m, buf: recv[m as usize].clone() });
        round.comm.push(Step::Send { to: m, buf: send[m as usize].clone() });
    }
    for (dest, pack) in packs {
        if let Some(rate) = sites.pace_rate_on(mine, sites.cluster(dest), burst(dest), pack.len()) {
            round.pace.push((dest, rate));
        }
        round.comm.push(Step::Send { to: dest, buf: pack });
    }
    // Round 3: out of the packed buffers.
    let round = s.round();
    for (there, packed) in unpack {
        for (k, &src) in there.iter().enumerate() {
            round.local.push(Step::Copy { from: bytes(&packed, k as u64 * block, block), to: recv[src as usize].clone() });
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
/// (binomial). Large ones, in chunks (pipelined): the root scatters k
/// pieces of a chunk among the k members of its cluster, member i sends
/// piece i to member i mod k' of every other cluster (k paced WAN flows
/// instead of one), and every cluster shares its pieces inside. The WAN
/// carries the message once per remote cluster.
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
    if rank == root && !dense {
        s.round().local.push(Step::Copy { from: buf.clone(), to: area.clone() });
    }
    let base = s.rounds.len();
    // The message in chunks whose pieces are at most PIPELINE_CHUNK; chunk
    // j moves inside the root's cluster in round j, over the WAN in round
    // j+1 (received as a carried receive) and inside the other clusters in
    // round j+3, so the WAN flows run back to back.
    let n = area.len();
    let chunks = n.div_ceil(k as u64 * PIPELINE_CHUNK).max(1);
    let flows = (k * (sites.count as usize - 1)) as u64;
    let c = sites.cluster(rank);
    let members = sites.members(c);
    for j in 0..chunks {
        let (co, cn) = even_block(n, chunks, j);
        let piece = |i: usize| {
            let (off, len) = even_block(cn, k as u64, i as u64);
            bytes(&area, co + off, len)
        };
        let t = base + j as usize;
        // 1. The root gives piece i to member i of its cluster.
        let round = round_at(&mut s, t);
        for (i, &m) in home.iter().enumerate().filter(|&(_, &m)| m != root) {
            if rank == root {
                round.comm.push(Step::Send { to: m, buf: piece(i) });
            } else if rank == m {
                round.comm.push(Step::Recv { from: root, buf: piece(i) });
            }
        }
        // 2. Member i: piece i to the rest of its cluster, and over the WAN
        // to member i mod k' of every other cluster.
        let rate = sites.pace_rate(flows * piece(0).len(), piece(0).len());
        let round = round_at(&mut s, t + 1);
        for (i, &h) in home.iter().enumerate() {
            if rank == h {
                for &m in home.iter().filter(|&&m| m != h && m != root) {
                    round.comm.push(Step::Send { to: m, buf: piece(i) });
                }
            } else if c == rc && rank != root {
                round.comm.push(Step::Recv { from: h, buf: piece(i) });
            }
            for x in (0..sites.count).filter(|&x| x != rc) {
                let there = sites.members(x);
                let dst = there[i % there.len()];
                if rank == h {
                    round.comm.push(Step::Send { to: dst, buf: piece(i) });
                    if let Some(r) = rate {
                        round.pace.push((dst, r));
                    }
                } else if rank == dst {
                    round.carry.push(Step::Recv { from: h, buf: piece(i) });
                }
            }
        }
        // 3. Every other cluster shares the pieces its members received.
        if c != rc {
            let round = round_at(&mut s, t + 3);
            for i in 0..k {
                let h = members[i % members.len()];
                if h == rank {
                    for &m in members.iter().filter(|&&m| m != rank) {
                        round.comm.push(Step::Send { to: m, buf: piece(i) });
                    }
                } else {
                    round.comm.push(Step::Recv { from: h, buf: piece(i) });
                }
            }
        }
    }
    if !dense {
        s.round().local.push(Step::Copy { from: area, to: buf });
    }
    s.prune();
    s
}

/// A pipelined WAN phase sends messages of at most this many bytes: they
/// go eagerly (the TCP default of GRIDMPI_EAGER_LIMIT), so a chunk's send
/// never waits a round trip for the receiver's go-ahead, and chunks are
/// small beside the whole transfer, so the clusters' phases before and
/// after the WAN overlap it.
pub const PIPELINE_CHUNK: u64 = 64 * 1024;

/// Round `i` of `s`, adding empty rounds up to it.
fn round_at(s: &mut Schedule, i: usize) -> &mut Round {
    while s.rounds.len() <= i {
        s.rounds.push(Round::default());
    }
    &mut s.rounds[i]
}

/// Allreduce across clusters, commutative operations; the result is the
/// same bits on every rank (partial results are combined in cluster order).
/// Small vectors: reduce to each cluster's leader, leaders swap partials
/// over the WAN and combine them, then broadcast in their clusters. Long
/// vectors with equal clusters, pipelined in chunks: reduce-scatter inside
/// each cluster, member i swaps its partial of sub-block i with member i
/// of every other cluster (k paced WAN flows each way), combine, allgather
/// inside the cluster.
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
    // A pipeline over chunks of the vector; member i owns sub-block i of
    // every chunk, of at most PIPELINE_CHUNK bytes. Round t reduces chunk t
    // inside the clusters, sends chunk t-1 over the WAN and shares chunk
    // t-3 inside the clusters, so the WAN flows run back to back.
    let me = sub.rank as usize;
    let others: Vec<u32> = (0..sites.count).filter(|&x| x != c).collect();
    let flows = (k * others.len()) as u64;
    let chunks = recv.len().div_ceil(k as u64 * PIPELINE_CHUNK).clamp(1, count / k as u64);
    let base = s.rounds.len();
    for j in 0..chunks {
        let (co, cn) = even_block(count, chunks, j);
        let sub_block = |i: usize| {
            let (o, n) = even_block(cn, k as u64, i as u64);
            (co + o, n)
        };
        let (mo, mn) = sub_block(me);
        let t = base + j as usize;
        // 1. Round t: every member sends the others the sub-blocks they own.
        let got: Vec<Option<UserBuf>> = (0..k).map(|i| (i != me).then(|| s.temp_typed(mn, &dt))).collect();
        let round = round_at(&mut s, t);
        for (i, &m) in members.iter().enumerate().filter(|&(i, _)| i != me) {
            let (o, n) = sub_block(i);
            round.comm.push(Step::Send { to: m, buf: items(&input, o, n) });
            round.comm.push(Step::Recv { from: m, buf: got[i].clone().unwrap() });
        }
        // 2. Round t+1: our cluster's partial of our sub-block (members'
        // inputs combined in member order) to the same-index member of
        // every other cluster, paced; theirs arrive as carried receives.
        let part = s.temp_typed(mn, &dt);
        let theirs: Vec<(u32, UserBuf)> = others.iter().map(|&x| (x, s.temp_typed(mn, &dt))).collect();
        let x = |i: usize| got[i].clone().unwrap_or_else(|| items(&input, mo, mn));
        let rate = sites.pace_rate(flows * part.len(), part.len());
        let round = round_at(&mut s, t + 1);
        round.local.push(Step::Copy { from: x(k - 1), to: part.clone() });
        for i in (0..k - 1).rev() {
            round.local.push(Step::Reduce { op: op.clone(), left: x(i), inout: part.clone() });
        }
        for (x, buf) in &theirs {
            let p = sites.members(*x)[me];
            round.comm.push(Step::Send { to: p, buf: part.clone() });
            round.carry.push(Step::Recv { from: p, buf: buf.clone() });
            if let Some(r) = rate {
                round.pace.push((p, r));
            }
        }
        // 3. Round t+3 (the carried receives are complete): combine the
        // clusters' partials in cluster order, share the result inside.
        let out = items(&recv, mo, mn);
        let round = round_at(&mut s, t + 3);
        let mut vals = theirs;
        vals.push((c, part));
        combine_in_cluster_order(round, &op, vals, &out);
        for (i, &m) in members.iter().enumerate().filter(|&(i, _)| i != me) {
            let (o, n) = sub_block(i);
            round.comm.push(Step::Send { to: m, buf: out.clone() });
            round.comm.push(Step::Recv { from: m, buf: items(&recv, o, n) });
        }
    }
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
    let rate = sites.pace_rate((flows_per_cluster * others.len()) as u64 * mine.len(), mine.len());
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
    combine_in_cluster_order(s.round(), op, vals, mine);
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
        combine_in_cluster_order(round, &op, vals, &mine);
    }
    s.prune();
    s
}

/// Each rank's index among its cluster's members.
fn indices(sites: &Sites) -> Vec<usize> {
    let mut seen = vec![0usize; sites.count as usize];
    sites
        .of_rank
        .iter()
        .map(|&c| {
            seen[c as usize] += 1;
            seen[c as usize] - 1
        })
        .collect()
}

/// Who stands for rank `p` in the cluster whose members are `there`: p
/// itself in its own cluster, else the member of p's index modulo the
/// cluster's size, so that the flows between two clusters are spread over
/// both clusters' members.
fn stand_in(sites: &Sites, there: &[i32], idx: &[usize], p: i32) -> i32 {
    if sites.cluster(p) == sites.cluster(there[0]) {
        p
    } else {
        there[idx[p as usize] % there.len()]
    }
}

/// Pace every send of `s` that leaves our cluster at `rate` (the
/// schedule's own ranks: not for sub-view schedules).
fn pace_wan_sends(s: &mut Schedule, sites: &Sites, rate: Option<u64>) {
    let Some(rate) = rate else { return };
    let mine = sites.cluster(s.view.rank);
    for round in s.rounds.iter_mut() {
        for step in &round.comm {
            if let Step::Send { to, .. } = step {
                if sites.cluster(*to) != mine && !round.pace.iter().any(|p| p.0 == *to) {
                    round.pace.push((*to, rate));
                }
            }
        }
    }
}

/// Add to `round` the steps setting `out` to v(0) op v(1) op ... over the
/// clusters' values `vals` taken in cluster order, so that the result does
/// not depend on which value arrived first. The values may be clobbered.
fn combine_in_cluster_order(round: &mut Round, op: &Arc<dyn Reducer>, mut vals: Vec<(u32, UserBuf)>, out: &UserBuf) {
    vals.sort_by_key(|v| v.0);
    let mut acc = vals[0].1.clone();
    for (_, v) in vals.into_iter().skip(1) {
        // v = acc op v (acc holds the lower clusters' combination).
        let mut r = Round::default();
        combine(&mut r, op, &v, &acc, false);
        round.local.extend(r.local);
        acc = v;
    }
    round.local.push(Step::Copy { from: acc, to: out.clone() });
}

/// Allgather(v) across clusters; `blocks[r]` is where rank r's data goes
/// (every rank knows every block's size), `mine` None for MPI_IN_PLACE.
/// Round 1: every rank sends its block to every other member of its
/// cluster and to one member of every other cluster (its stand-in there:
/// the member of its index modulo that cluster's size), so all of a
/// cluster's members send over the WAN at once, paced. Round 2: every rank
/// passes the remote blocks it received to the other members of its
/// cluster. Each block crosses the WAN once per remote cluster (a ring or
/// recursive doubling would cross it at every cluster boundary of the
/// rank order, which clusters interleaved in rank order make up to p-1
/// times). Empty blocks (allgatherv) are never sent.
pub fn allgather(view: CommView, sites: &Sites, tag: i32, mine: Option<UserBuf>, blocks: &[UserBuf]) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let c = sites.cluster(rank);
    let all: Vec<Vec<i32>> = (0..sites.count).map(|x| sites.members(x)).collect();
    let members = &all[c as usize];
    let idx = indices(sites);
    let widest = blocks.iter().map(|b| b.len()).max().unwrap_or(0);
    let rate = sites.pace_rate((members.len() * (sites.count as usize - 1)) as u64 * widest, widest);
    let mut s = Schedule::new(view, tag);
    if let Some(m) = mine {
        s.round().local.push(Step::Copy { from: m, to: blocks[rank as usize].clone() });
    }
    // 1. Our block to our cluster and to our stand-ins; blocks of our
    // cluster's members, and of the remote ranks we stand in for.
    let round = s.round();
    let own = &blocks[rank as usize];
    if !own.is_empty() {
        for (x, there) in all.iter().enumerate() {
            if x as u32 == c {
                for &m in there.iter().filter(|&&m| m != rank) {
                    round.comm.push(Step::Send { to: m, buf: own.clone() });
                }
            } else {
                let to = stand_in(sites, there, &idx, rank);
                round.comm.push(Step::Send { to, buf: own.clone() });
                if let Some(r) = rate {
                    round.pace.push((to, r));
                }
            }
        }
    }
    for p in (0..size).filter(|&p| p != rank && !blocks[p as usize].is_empty()) {
        if stand_in(sites, members, &idx, p) == rank || sites.cluster(p) == c {
            round.comm.push(Step::Recv { from: p, buf: blocks[p as usize].clone() });
        }
    }
    // 2. Remote blocks from their stand-in to the rest of our cluster.
    let round = s.round();
    for p in (0..size).filter(|&p| sites.cluster(p) != c && !blocks[p as usize].is_empty()) {
        let holder = stand_in(sites, members, &idx, p);
        if holder == rank {
            for &m in members.iter().filter(|&&m| m != rank) {
                round.comm.push(Step::Send { to: m, buf: blocks[p as usize].clone() });
            }
        } else {
            round.comm.push(Step::Recv { from: holder, buf: blocks[p as usize].clone() });
        }
    }
    s.prune();
    s
}

/// Blocks smaller than this go through their cluster's leader in gather
/// and scatter (one WAN message per cluster); larger ones go straight
/// between their rank and the root, paced.
pub const ROOTED_DIRECT_MIN: u64 = 32 * 1024;

/// Gather(v) across clusters. `block`: the bytes of every block when all
/// ranks know it (gather), None when only the root knows the sizes
/// (gatherv). Small blocks: the members of each remote cluster send theirs
/// to the cluster's leader, which passes them on to the root as one
/// message (one WAN crossing and one connection per cluster instead of one
/// per rank). Large blocks, and gatherv: every rank sends straight to the
/// root, the WAN flows paced to share the way into the root's cluster.
/// The root's cluster sends straight to it, unpaced.
pub fn gather(view: CommView, sites: &Sites, tag: i32, send: Option<UserBuf>, blocks: &[UserBuf], block: Option<u64>, root: i32) -> Schedule {
    match block {
        Some(b) if b > 0 && b < ROOTED_DIRECT_MIN && sites.count > 1 => gather_via_leaders(view, sites, tag, send, blocks, b, root),
        _ => {
            let mine = send.as_ref().map_or(0, |b| b.len());
            let rate = sites.pace_rate(outside(sites, sites.cluster(root)) as u64 * mine, mine);
            let mut s = gather::linear(view, tag, send, blocks, root);
            pace_wan_sends(&mut s, sites, rate);
            s
        }
    }
}

/// For every cluster but `home`: its members and a scratch area holding
/// one `block`-byte block per member, in their order.
fn cluster_areas(s: &mut Schedule, sites: &Sites, home: u32, block: u64) -> Vec<(Vec<i32>, UserBuf)> {
    (0..sites.count)
        .filter(|&x| x != home)
        .map(|x| {
            let there = sites.members(x);
            let area = s.temp_bytes(there.len() as u64 * block);
            (there, area)
        })
        .collect()
}

/// Gather of `block`-byte blocks through each remote cluster's leader (see [`gather`]).
fn gather_via_leaders(view: CommView, sites: &Sites, tag: i32, send: Option<UserBuf>, blocks: &[UserBuf], block: u64, root: i32) -> Schedule {
    let rank = view.rank;
    let (c, rc) = (sites.cluster(rank), sites.cluster(root));
    let members = sites.members(c);
    let l = leader(sites, c, Some(root));
    let mut s = Schedule::new(view, tag);
    if rank == root {
        // Our cluster's blocks in place; each remote cluster's in one area,
        // in its members' order, unpacked once it is in.
        let areas = cluster_areas(&mut s, sites, rc, block);
        let round = s.round();
        if let Some(m) = send {
            round.local.push(Step::Copy { from: m, to: blocks[root as usize].clone() });
        }
        for &m in members.iter().filter(|&&m| m != root) {
            round.comm.push(Step::Recv { from: m, buf: blocks[m as usize].clone() });
        }
        for (there, area) in &areas {
            round.comm.push(Step::Recv { from: there[0], buf: area.clone() });
        }
        let round = s.round();
        for (there, area) in areas {
            for (i, &m) in there.iter().enumerate() {
                round.local.push(Step::Copy { from: bytes(&area, i as u64 * block, block), to: blocks[m as usize].clone() });
            }
        }
    } else {
        let send = send.expect("a non-root rank's send buffer");
        if c == rc || rank != l {
            s.round().comm.push(Step::Send { to: if c == rc { root } else { l }, buf: send });
        } else {
            // The leader (lowest rank, index 0): its block, then the others'.
            let area = s.temp_bytes(members.len() as u64 * block);
            let round = s.round();
            round.local.push(Step::Copy { from: send, to: bytes(&area, 0, block) });
            for (i, &m) in members.iter().enumerate().skip(1) {
                round.comm.push(Step::Recv { from: m, buf: bytes(&area, i as u64 * block, block) });
            }
            let len = area.len();
            let round = s.round();
            round.comm.push(Step::Send { to: root, buf: area });
            if let Some(r) = sites.pace_rate((sites.count as u64 - 1) * len, len) {
                round.pace.push((root, r));
            }
        }
    }
    s.prune();
    s
}

/// Scatter(v) across clusters, the mirror of [`gather`]: small blocks go
/// to each remote cluster's leader as one message, which hands them out;
/// large blocks, and scatterv, go straight from the root to their ranks,
/// the WAN flows paced to share the way out of the root's cluster.
pub fn scatter(view: CommView, sites: &Sites, tag: i32, blocks: &[UserBuf], recv: Option<UserBuf>, block: Option<u64>, root: i32) -> Schedule {
    match block {
        Some(b) if b > 0 && b < ROOTED_DIRECT_MIN && sites.count > 1 => scatter_via_leaders(view, sites, tag, blocks, recv, b, root),
        _ => {
            let rc = sites.cluster(root);
            let widest = (0..blocks.len()).filter(|&r| sites.cluster(r as i32) != rc).map(|r| blocks[r].len()).max().unwrap_or(0);
            let rate = sites.pace_rate(outside(sites, rc) as u64 * widest, widest);
            let mut s = scatter::linear(view, tag, blocks, recv, root);
            pace_wan_sends(&mut s, sites, rate);
            s
        }
    }
}

/// Scatter of `block`-byte blocks through each remote cluster's leader (see [`scatter`]).
fn scatter_via_leaders(view: CommView, sites: &Sites, tag: i32, blocks: &[UserBuf], recv: Option<UserBuf>, block: u64, root: i32) -> Schedule {
    let rank = view.rank;
    let (c, rc) = (sites.cluster(rank), sites.cluster(root));
    let members = sites.members(c);
    let l = leader(sites, c, Some(root));
    let mut s = Schedule::new(view, tag);
    if rank == root {
        // Each remote cluster's blocks packed in its members' order.
        let areas = cluster_areas(&mut s, sites, rc, block);
        let widest = areas.iter().map(|a| a.1.len()).max().unwrap_or(0);
        let rate = sites.pace_rate((sites.count as u64 - 1) * widest, widest);
        let round = s.round();
        if let Some(m) = recv {
            round.local.push(Step::Copy { from: blocks[root as usize].clone(), to: m });
        }
        for &m in members.iter().filter(|&&m| m != root) {
            round.comm.push(Step::Send { to: m, buf: blocks[m as usize].clone() });
        }
        for (there, area) in areas {
            for (i, &m) in there.iter().enumerate() {
                round.local.push(Step::Copy { from: blocks[m as usize].clone(), to: bytes(&area, i as u64 * block, block) });
            }
            round.comm.push(Step::Send { to: there[0], buf: area });
            if let Some(r) = rate {
                round.pace.push((there[0], r));
            }
        }
    } else {
        let recv = recv.expect("a non-root rank's receive buffer");
        if c == rc || rank != l {
            s.round().comm.push(Step::Recv { from: if c == rc { root } else { l }, buf: recv });
        } else {
            // The leader (index 0): the cluster's blocks, then hand them out.
            let area = s.temp_bytes(members.len() as u64 * block);
            s.round().comm.push(Step::Recv { from: root, buf: area.clone() });
            let round = s.round();
            round.local.push(Step::Copy { from: bytes(&area, 0, block), to: recv });
            for (i, &m) in members.iter().enumerate().skip(1) {
                round.comm.push(Step::Send { to: m, buf: bytes(&area, i as u64 * block, block) });
            }
        }
    }
    s.prune();
    s
}

/// Reduce_scatter across clusters, commutative operations; rank r gets
/// items `[offs(r), offs(r) + counts[r])` of the reduction. Every cluster
/// gives each rank's segment an owner among its members: the rank itself
/// in its own cluster, its stand-in (index modulo size) in the others.
/// 1. Inside each cluster, reduce-scatter the input, reordered so that
///    each member's segments are one block: every member gets its
///    cluster's partial of the segments it owns.
/// 2. WAN: every owner sends each remote segment's partial to its rank
///    (one paced flow per remote rank, spread over the cluster's members).
/// 3. Every rank combines its segment's cluster partials in cluster order.
///
/// Each item crosses the WAN once per pair of clusters, and the result
/// does not depend on arrival order.
pub fn reduce_scatter(view: CommView, sites: &Sites, tag: i32, input: UserBuf, recv: UserBuf, counts: &[u64], op: Arc<dyn Reducer>) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let c = sites.cluster(rank);
    let all: Vec<Vec<i32>> = (0..sites.count).map(|x| sites.members(x)).collect();
    let members = &all[c as usize];
    let idx = indices(sites);
    let offs = offsets(counts);
    let dt = input.datatype().clone();
    let mut s = Schedule::new(view.clone(), tag);
    if offs[size as usize] == 0 {
        return s;
    }
    // The segments each member of our cluster owns, in rank order.
    let owned: Vec<Vec<i32>> = members.iter().map(|&m| (0..size).filter(|&r| stand_in(sites, members, &idx, r) == m).collect()).collect();
    // 1. The input in owner order (as is when that is rank order).
    let order: Vec<i32> = owned.concat();
    let work = if order.iter().copied().eq(0..size) { input } else { permuted(&mut s, &input, &order, counts) };
    let group: Vec<u64> = owned.iter().map(|o| o.iter().map(|&r| counts[r as usize]).sum()).collect();
    let sub = sub_view(&view, members).expect("a rank is in its own cluster");
    let me = sub.rank as usize;
    let part = s.temp_typed(group[me], &dt);
    let algo = if offs[size as usize] * dt.size() >= 512 * 1024 { reduce_scatter::ring } else { reduce_scatter::recursive_halving };
    s.append_mapped(algo(sub, tag, work, part.clone(), &group, op.clone()), members);
    // 2. Our owned remote segments out, our segment's partials in.
    let flows = (0..size).filter(|&r| sites.cluster(r) != c && counts[r as usize] > 0).count();
    let widest = (0..size).filter(|&r| sites.cluster(r) != c).map(|r| counts[r as usize]).max().unwrap_or(0) * dt.size();
    let rate = sites.pace_rate(flows as u64 * widest, widest);
    let mine = counts[rank as usize];
    let theirs: Vec<(u32, UserBuf)> =
        (0..sites.count).filter(|&x| x != c && mine > 0).map(|x| (x, s.temp_typed(mine, &dt))).collect();
    let round = s.round();
    let mut at = 0;
    let mut own = None;
    for &r in &owned[me] {
        let p = items(&part, at, counts[r as usize]);
        at += counts[r as usize];
        if r == rank {
            own = Some(p);
        } else if !p.is_empty() {
            round.comm.push(Step::Send { to: r, buf: p });
            if let Some(x) = rate {
                round.pace.push((r, x));
            }
        }
    }
    for (x, t) in &theirs {
        round.comm.push(Step::Recv { from: stand_in(sites, &all[*x as usize], &idx, rank), buf: t.clone() });
    }
    // 3. Combine in cluster order.
    if mine > 0 {
        let mut vals = theirs;
        vals.push((c, own.expect("we own our own segment")));
        combine_in_cluster_order(s.round(), &op, vals, &recv);
    }
    s.prune();
    s
}

/// A copy of `input`'s segments (rank r's: `counts[r]` items) in `order`.
fn permuted(s: &mut Schedule, input: &UserBuf, order: &[i32], counts: &[u64]) -> UserBuf {
    let offs = offsets(counts);
    let total = offs[counts.len()];
    let work = s.temp_typed(total, input.datatype());
    let round = s.round();
    let mut at = 0;
    for &r in order {
        let n = counts[r as usize];
        if n > 0 {
            round.local.push(Step::Copy { from: items(input, offs[r as usize], n), to: items(&work, at, n) });
        }
        at += n;
    }
    work
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;
    use crate::coll::sim::{self, Rng, TBuf, DRAINS, PACES};
    use gridmpi_wire::Pid;
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
        Sites { of_rank: of.into(), count: ids.len() as u32, wan_bps: Some(100_000_000), pace_share: 0.9, wan_queue: 0, link_bps: None }
    }

    fn check_paces(sites: &Sites, pids_are_ranks: bool) {
        let log = PACES.with(|p| std::mem::take(&mut *p.borrow_mut()));
        // The rate in force on each connection after every change.
        let mut last = std::collections::HashMap::new();
        for (r, peer, rate) in log {
            assert!(pids_are_ranks);
            assert_ne!(sites.cluster(r as i32), sites.cluster(peer as i32), "an intra-cluster connection was paced");
            if let Some(x) = rate {
                assert!(x > 0 && x < 100_000_000 / 8);
            }
            last.insert((r, peer), rate);
        }
        assert!(last.values().all(|v| v.is_none()), "a pacing cap was never lifted");
        // Drain waits only ever concern paced (so WAN) connections.
        for (r, peer) in DRAINS.with(|d| std::mem::take(&mut *d.borrow_mut())) {
            assert!(last.contains_key(&(r, peer)), "rank {r} waited for an unpaced connection to {peer} to drain");
        }
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
                    alltoall(sim::view(r, n), &sites, 5, &s, &d, len % 2 == 0)
                });
                assert!(errs.iter().all(|e| e.is_none()));
                for r in 0..n {
                    for p in 0..n {
                        let got = &recvs[r][p * len as usize..(p + 1) * len as usize];
                        let want = &sends[p][r * len as usize..(r + 1) * len as usize];
                        assert_eq!(got, want, "n {n} len {len} seed {seed}: block {p}->{r}");
                    }
                }
                // Ranks that paced wait for their WAN data to leave before the call ends.
                if paced_any() {
                    assert!(DRAINS.with(|d| !d.borrow().is_empty()), "n {n} len {len}: paced alltoall without drain waits");
                }
                check_paces(&sites, true);
            }
        }
    }

    /// Large clusters: MPI_Alltoall crosses through forwarders, one flow per
    /// destination rank leaves a cluster, every flow is paced at its part of
    /// the cluster's burst, and every block still lands where it belongs
    /// (equal and unequal clusters, three clusters, a cluster of one).
    #[test]
    fn alltoall_of_large_clusters_crosses_through_forwarders() {
        let len = 24u64;
        for of in [vec![0u32; 6].into_iter().chain(vec![1; 6]).collect::<Vec<_>>(), [vec![0; 5], vec![1; 4], vec![2; 3]].concat(),
                   [vec![1; 9], vec![0; 2]].concat(), [vec![0], vec![1; 17]].concat(), (0..12).map(|r| r % 2).collect()] {
            let n = of.len();
            let count = of.iter().max().unwrap() + 1;
            let sites = Sites { of_rank: of.clone().into(), count, wan_bps: Some(100_000_000), pace_share: 0.9, wan_queue: 0, link_bps: None };
            assert!(crosses_by_forwarders(&sites), "{of:?}");
            let mut sends: Vec<Vec<u8>> = (0..n).map(|r| (0..len as usize * n).map(|i| (i * 7 + r * 31) as u8).collect()).collect();
            let mut recvs: Vec<Vec<u8>> = (0..n).map(|_| vec![0u8; len as usize * n]).collect();
            let sb: Vec<UserBuf> = sends.iter_mut().map(|v| unsafe { UserBuf::new(v.as_mut_ptr(), v.len() as u64, crate::sched::byte_type()) }).collect();
            let rb: Vec<UserBuf> = recvs.iter_mut().map(|v| unsafe { UserBuf::new(v.as_mut_ptr(), v.len() as u64, crate::sched::byte_type()) }).collect();
            let build = |r: usize| {
                let s: Vec<UserBuf> = (0..n).map(|p| byte_range(&sb[r], p as u64 * len, len)).collect();
                let d: Vec<UserBuf> = (0..n).map(|p| byte_range(&rb[r], p as u64 * len, len)).collect();
                alltoall(sim::view(r, n), &sites, 5, &s, &d, true)
            };
            // WAN flows: one per destination rank, each its cluster's blocks.
            let mut wan = Vec::new();
            for r in 0..n {
                for st in build(r).rounds.iter().flat_map(|x| x.comm.iter()) {
                    if let Step::Send { to, buf } = st {
                        if sites.cluster(*to) != sites.cluster(r as i32) {
                            wan.push((r, *to, buf.len()));
                        }
                    }
                }
            }
            for dest in 0..n as i32 {
                let into: Vec<_> = wan.iter().filter(|w| w.1 == dest).collect();
                assert_eq!(into.len() as u32, count - 1, "{of:?}: flows into {dest}: {into:?}");
                for w in into {
                    assert_eq!(w.2, len * sites.members(sites.cluster(w.0 as i32)).len() as u64, "{of:?}: {w:?}");
                }
            }
            PACES.with(|p| p.borrow_mut().clear());
            let errs = sim::run(n, 3, build);
            assert!(errs.iter().all(|e| e.is_none()), "{of:?}: {errs:?}");
            for r in 0..n {
                for p in 0..n {
                    let got = &recvs[r][p * len as usize..(p + 1) * len as usize];
                    let want = &sends[p][r * len as usize..(r + 1) * len as usize];
                    assert_eq!(got, want, "{of:?}: block {p}->{r}");
                }
            }
            // Every flow at its part of the bytes leaving its cluster.
            let c = 100_000_000.0 / 8.0 * 0.9;
            for &(r, to, bytes) in &wan {
                let na = sites.members(sites.cluster(r as i32)).len() as u64;
                let burst = na * (n as u64 - na) * len;
                let want = ((c * bytes as f64 / burst as f64).max(crate::sched::MIN_PACE_RATE as f64).min(c)) as u64;
                assert!(PACES.with(|p| p.borrow().contains(&(r, to as Pid, Some(want)))), "{of:?}: flow {r}->{to} not paced at {want}");
            }
            check_paces(&sites, true);
        }
    }

    /// An alltoallv's memory: `lens[a][b]` bytes from rank a to rank b,
    /// the send data numbered by `salt`, and every rank's blocks over it.
    struct VExchange {
        lens: Vec<Vec<u64>>,
        send: Vec<Vec<u8>>,
        recv: Vec<Vec<u8>>,
        sb: Vec<Vec<UserBuf>>,
        rb: Vec<Vec<UserBuf>>,
    }

    impl VExchange {
        fn new(lens: Vec<Vec<u64>>, salt: u64) -> VExchange {
            let n = lens.len();
            let mut send: Vec<Vec<u8>> = (0..n).map(|a| (0..lens[a].iter().sum::<u64>()).map(|i| (i * salt + a as u64) as u8).collect()).collect();
            let mut recv: Vec<Vec<u8>> = (0..n).map(|b| vec![0u8; (0..n).map(|a| lens[a][b]).sum::<u64>() as usize]).collect();
            let blocks = |mem: &mut Vec<u8>, sizes: Vec<u64>| -> Vec<UserBuf> {
                let mut off = 0;
                sizes.iter().map(|&k| {
                    // SAFETY: consecutive ranges of the vector's heap memory, which moving the vector keeps.
                    let b = unsafe { UserBuf::new(mem.as_mut_ptr().add(off), k, crate::sched::byte_type()) };
                    off += k as usize;
                    b
                }).collect()
            };
            let sb = (0..n).map(|a| blocks(&mut send[a], lens[a].clone())).collect();
            let rb = (0..n).map(|b| blocks(&mut recv[b], (0..n).map(|a| lens[a][b]).collect())).collect();
            VExchange { lens, send, recv, sb, rb }
        }

        /// Every block landed where it belongs.
        fn check(&self, what: &str) {
            let n = self.lens.len();
            for b in 0..n {
                let mut off = 0;
                for a in 0..n {
                    let k = self.lens[a][b] as usize;
                    let from_a: u64 = self.lens[a][..b].iter().sum();
                    assert_eq!(&self.recv[b][off..off + k], &self.send[a][from_a as usize..from_a as usize + k], "{what}: block {a}->{b}");
                    off += k;
                }
            }
        }
    }

    /// Large clusters, alltoallv: each rank has one WAN send per other
    /// cluster per round, paced at the part of the cluster's burst it sends
    /// that way, and every block lands (zeros, uneven lengths, unequal and
    /// lone clusters).
    #[test]
    fn alltoallv_of_large_clusters_sends_one_flow_per_link_at_a_time() {
        let mut rng = Rng(23);
        for of in [[vec![0u32; 6], vec![1; 6]].concat(), [vec![0; 5], vec![1; 4], vec![2; 3]].concat(), [vec![0], vec![1; 17]].concat()] {
            let n = of.len();
            let count = of.iter().max().unwrap() + 1;
            let sites = Sites { of_rank: of.clone().into(), count, wan_bps: Some(100_000_000), pace_share: 0.9, wan_queue: 0, link_bps: None };
            // lens[a][b]: bytes a sends to b (some zero).
            let lens: Vec<Vec<u64>> = (0..n).map(|_| (0..n).map(|_| if rng.next() % 5 == 0 { 0 } else { rng.next() % 300 }).collect()).collect();
            let x = VExchange::new(lens, 3);
            let (lens, sb, rb) = (&x.lens, &x.sb, &x.rb);
            for r in 0..n {
                let s = alltoall(sim::view(r, n), &sites, 7, &sb[r], &rb[r], false);
                for round in &s.rounds {
                    let wan = round.comm.iter().filter(|st| matches!(st, Step::Send { to, .. } if sites.cluster(*to) != sites.cluster(r as i32))).count();
                    assert!(wan <= count as usize - 1, "{of:?}: rank {r} sends {wan} WAN flows in one round");
                    let mut links: Vec<u32> = round.comm.iter().filter_map(|st| match st {
                        Step::Send { to, .. } if sites.cluster(*to) != sites.cluster(r as i32) => Some(sites.cluster(*to)),
                        _ => None,
                    }).collect();
                    links.dedup();
                    assert_eq!(links.len(), wan, "{of:?}: rank {r} sends twice to one cluster in a round");
                }
            }
            PACES.with(|p| p.borrow_mut().clear());
            let errs = sim::run(n, rng.next() % 100, |r| alltoall(sim::view(r, n), &sites, 7, &sb[r], &rb[r], false));
            assert!(errs.iter().all(|e| e.is_none()), "{of:?}: {errs:?}");
            x.check(&format!("{of:?}"));
            let c = 100_000_000.0 / 8.0 * 0.9;
            for a in 0..n {
                let wan_of = |x: usize| (0..n).filter(|&b| of[b] != of[x]).map(|b| lens[x][b]).sum::<u64>();
                let burst: u64 = (0..n).filter(|&x| of[x] == of[a]).map(wan_of).sum();
                for b in (0..n).filter(|&b| of[b] != of[a] && lens[a][b] > 0) {
                    let toward: u64 = (0..n).filter(|&y| of[y] == of[b]).map(|y| lens[a][y]).sum();
                    let want = ((c * toward as f64 / burst as f64).max(crate::sched::MIN_PACE_RATE as f64).min(c)) as u64;
                    assert!(PACES.with(|p| p.borrow().contains(&(a, b as Pid, Some(want)))), "{of:?}: flow {a}->{b} not paced at {want}");
                }
            }
            check_paces(&sites, true);
        }
    }

    /// Links of different bandwidths: an alltoall(v) paces each flow at its
    /// part of the bytes its cluster sends by that flow's link, at that
    /// link's bandwidth (direct with small clusters, through forwarders and
    /// one flow at a time with large ones).
    #[test]
    fn alltoall_paces_each_link_at_its_own_bandwidth() {
        let mut rng = Rng(5);
        // 0<->1 100 Mbit/s, 0<->2 50, 1<->2 20 (one way 1->2: 10).
        let bw = |a: u32, b: u32| -> u64 {
            match (a.min(b), a.max(b), a < b) {
                (0, 1, _) => 100_000_000,
                (0, 2, _) => 50_000_000,
                (1, 2, true) => 10_000_000,
                _ => 20_000_000,
            }
        };
        for per in [2usize, 6] {
            let of: Vec<u32> = (0..3).flat_map(|c| std::iter::repeat(c).take(per)).collect();
            let n = of.len();
            let links: Vec<u64> = (0..3).flat_map(|a| (0..3).map(move |b| if a == b { 0 } else { bw(a, b) })).collect();
            let sites = Sites { of_rank: of.clone().into(), count: 3, wan_bps: Some(10_000_000), pace_share: 0.9, wan_queue: 0, link_bps: Some(links.into()) };
            for equal in [true, false] {
                let lens: Vec<Vec<u64>> = (0..n).map(|_| (0..n).map(|_| if equal { 200 } else { 1 + rng.next() % 400 }).collect()).collect();
                let x = VExchange::new(lens, 5);
                let (lens, sb, rb) = (&x.lens, &x.sb, &x.rb);
                PACES.with(|p| p.borrow_mut().clear());
                let errs = sim::run(n, rng.next() % 100, |r| alltoall(sim::view(r, n), &sites, 7, &sb[r], &rb[r], equal));
                assert!(errs.iter().all(|e| e.is_none()), "per {per} equal {equal}: {errs:?}");
                x.check(&format!("per {per} equal {equal}"));
                let log = PACES.with(|p| p.borrow().clone());
                let rate = |a: usize, to: usize, bytes: u64, burst: u64| {
                    let c = bw(of[a], of[to]) as f64 / 8.0 * 0.9;
                    ((c * bytes as f64 / burst as f64).max(crate::sched::MIN_PACE_RATE as f64).min(c)) as u64
                };
                let to_cluster = |x: usize, c: u32| (0..n).filter(|&y| of[y] == c).map(|y| lens[x][y]).sum::<u64>();
                for a in 0..n {
                    for to in (0..n).filter(|&to| of[to] != of[a]) {
                        let mates: Vec<usize> = (0..n).filter(|&x| of[x] == of[a]).collect();
                        let burst: u64 = mates.iter().map(|&x| to_cluster(x, of[to])).sum();
                        let want = if per * per <= DIRECT_WAN_FLOWS_MAX {
                            rate(a, to, lens[a][to], burst)
                        } else if equal {
                            // Forwarders: the flows into `to` come from one member each.
                            match log.iter().find(|e| e.0 == a && e.1 == to as Pid) {
                                Some(_) => rate(a, to, per as u64 * lens[a][to], burst),
                                None => continue,
                            }
                        } else {
                            rate(a, to, to_cluster(a, of[to]), burst)
                        };
                        assert!(log.contains(&(a, to as Pid, Some(want))), "per {per} equal {equal}: flow {a}->{to} not paced at {want}: {:?}",
                            log.iter().filter(|e| e.0 == a && e.1 == to as Pid).collect::<Vec<_>>());
                    }
                }
                check_paces(&sites, true);
            }
        }
    }

    /// Run the cluster-aware bcast of `count` items of test type `tk` from
    /// `root` on `sites` and check every rank got the root's data.
    fn check_bcast(sites: &Sites, count: u64, tk: u64, root: i32, seed: u64) {
        let n = sites.of_rank.len();
        let dt = sim::test_type(tk);
        let mut bufs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
        let v: Vec<u64> = (0..bufs[0].elements()).map(|i| sim::value(root as usize, i, seed)).collect();
        bufs[root as usize].set(&v);
        let expect = bufs[0].expect(&v);
        let errs = sim::run(n, seed, |r| bcast(sim::view(r, n), sites, 3, bufs[r].ub(), root));
        assert!(errs.iter().all(|e| e.is_none()));
        for r in 0..n {
            assert!(bufs[r].mem == expect, "n {n} count {count} root {root} seed {seed}: rank {r} has wrong data");
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
                    check_bcast(&sites, count, tk, root, seed);
                    check_paces(&sites, true);
                }
            }
        }
    }

    /// Every rank's input (`count` items of `dt`, values from `seed`) and
    /// their reduction by `f` in rank order.
    fn inputs_and_result(n: usize, count: u64, dt: &Arc<gridmpi_datatype::Datatype>, f: sim::ElementOp, seed: u64) -> (Vec<TBuf>, Vec<u64>) {
        let mut inputs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, dt)).collect();
        let m = inputs[0].elements();
        let mut want = vec![0u64; m];
        for (r, input) in inputs.iter_mut().enumerate() {
            let v: Vec<u64> = (0..m).map(|i| sim::value(r, i, seed)).collect();
            for i in 0..m {
                want[i] = f(want[i], v[i]);
            }
            input.set(&v);
        }
        (inputs, want)
    }

    /// Run the cluster-aware allreduce (sum-like test op on a holey type)
    /// on `sites` and check every rank got the reference result.
    fn check_allreduce(sites: &Sites, count: u64, seed: u64, in_place: bool) {
        let n = sites.of_rank.len();
        let dt = sim::test_type(1);
        let (op, f) = sim::test_op(1);
        let (mut inputs, want) = inputs_and_result(n, count, &dt, f, seed);
        let mut recvs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
        if in_place {
            for r in 0..n {
                recvs[r].mem.copy_from_slice(&inputs[r].mem);
            }
        }
        let expect = recvs[0].expect(&want);
        let errs = sim::run(n, seed, |r| {
            let input = if in_place { None } else { Some(inputs[r].ub()) };
            allreduce(sim::view(r, n), sites, 4, input, recvs[r].ub(), op.clone())
        });
        assert!(errs.iter().all(|e| e.is_none()));
        for r in 0..n {
            assert!(recvs[r].mem == expect, "n {n} count {count} seed {seed} in place {in_place}: rank {r} has a wrong result");
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
                    check_allreduce(&sites, count, seed, in_place);
                    check_paces(&sites, true);
                }
            }
        }
    }

    #[test]
    fn large_allreduce_with_equal_clusters_uses_the_split_path() {
        // Equal clusters: the pipelined path (one chunk to many), its paced
        // WAN swaps and carried receives, under random arrival orders.
        let layouts: [(&[u32], u64); 3] = [(&[0, 1, 0, 1, 0, 1], 20_000), (&[0, 0, 1, 1, 2, 2], 150_000), (&[0, 0, 0, 0, 1, 1, 1, 1], 300_000)];
        for (of, count) in layouts {
            for seed in 0..3 {
                let nc = of.iter().max().unwrap() + 1;
                let sites = Sites { of_rank: of.to_vec().into(), count: nc, wan_bps: Some(100_000_000), pace_share: 0.9, wan_queue: 0, link_bps: None };
                check_allreduce(&sites, count, seed, seed == 2);
                let log = PACES.with(|p| p.borrow().clone());
                assert!(log.iter().any(|e| e.2.is_some()), "the WAN swap was not paced");
                check_paces(&sites, true);
            }
        }
    }

    #[test]
    fn large_bcast_pipelines_over_many_chunks() {
        let layouts: [&[u32]; 3] = [&[0, 1, 0, 1, 0, 1], &[0, 0, 1, 1, 2, 2, 2], &[0, 0, 0, 0, 1, 1, 1, 1]];
        for of in layouts {
            for seed in 0..3u64 {
                let nc = of.iter().max().unwrap() + 1;
                let sites = Sites { of_rank: of.to_vec().into(), count: nc, wan_bps: Some(100_000_000), pace_share: 0.9, wan_queue: 0, link_bps: None };
                let root = (seed as usize * 3 % of.len()) as i32;
                check_bcast(&sites, 120_000, seed % 2, root, seed);
                assert!(paced_any(), "the WAN phase was not paced");
                check_paces(&sites, true);
            }
        }
    }

    /// Alltoallv: the members of a cluster tell each other how much they
    /// send across, and each WAN flow is paced at its part of that burst,
    /// so flows of different sizes finish together and a cluster's flows
    /// add up to the share; MPI_Alltoall (equal) needs no such exchange.
    #[test]
    fn alltoallv_paces_each_flow_by_its_part_of_the_burst() {
        let sites = Sites { of_rank: vec![0, 0, 1, 1].into(), count: 2, wan_bps: Some(100_000_000), pace_share: 0.9, wan_queue: 0, link_bps: None };
        // lens[a][b]: bytes rank a sends to rank b.
        let lens = [[0u64, 10, 1000, 3000], [10, 0, 500, 500], [7000, 100, 0, 5], [1, 2, 3, 0]];
        let x = VExchange::new(lens.iter().map(|l| l.to_vec()).collect(), 1);
        PACES.with(|p| p.borrow_mut().clear());
        let errs = sim::run(4, 5, |r| alltoall(sim::view(r, 4), &sites, 7, &x.sb[r], &x.rb[r], false));
        assert!(errs.iter().all(|e| e.is_none()));
        x.check("2+2");
        let c = 100_000_000.0 / 8.0 * 0.9;
        let total = |x: &[usize], y: &[usize]| x.iter().flat_map(|&a| y.iter().map(move |&b| lens[a][b])).sum::<u64>() as f64;
        let (out0, out1) = (total(&[0, 1], &[2, 3]), total(&[2, 3], &[0, 1]));
        let log = PACES.with(|p| p.borrow().clone());
        for a in 0..4usize {
            for b in 0..4usize {
                if sites.cluster(a as i32) == sites.cluster(b as i32) || lens[a][b] == 0 {
                    continue;
                }
                let burst = if a < 2 { out0 } else { out1 };
                let want = ((c * lens[a][b] as f64 / burst).max(crate::sched::MIN_PACE_RATE as f64).min(c)) as u64;
                assert!(log.contains(&(a, b as Pid, Some(want))), "flow {a}->{b}: want {want} in {log:?}");
            }
        }
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
            let (mut inputs, want) = inputs_and_result(n, count, &dt, f, seed);
            let mut out = TBuf::new(count, &dt);
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

    /// Whether some WAN connection was paced since the last check_paces.
    fn paced_any() -> bool {
        PACES.with(|p| p.borrow().iter().any(|e| e.2.is_some()))
    }

    /// Bytes the schedules of every rank send to another cluster.
    fn wan_bytes(sites: &Sites, n: usize, mut build: impl FnMut(usize) -> Schedule) -> u64 {
        (0..n)
            .map(|r| {
                let s = build(r);
                let sent: u64 = s
                    .rounds
                    .iter()
                    .flat_map(|x| x.comm.iter())
                    .map(|st| match st {
                        Step::Send { to, buf } if sites.cluster(*to) != sites.cluster(r as i32) => buf.len(),
                        _ => 0,
                    })
                    .sum();
                sent
            })
            .sum()
    }

    /// Per-rank item counts: all `count`, or (v forms) uneven with zeros.
    fn v_counts(n: usize, count: u64, v: bool, seed: u64) -> Vec<u64> {
        (0..n).map(|r| if v { count * ((r as u64 + seed) % 3) + (r as u64 % 2) * (count > 0) as u64 } else { count }).collect()
    }

    #[test]
    fn allgather_v_crosses_the_wan_once_per_cluster_and_paces_it() {
        let mut rng = Rng(19);
        for &n in &[2usize, 3, 4, 5, 8, 9] {
            for &count in &[0u64, 1, 9, 700] {
                for v in [false, true] {
                    let seed = rng.next() % 1000;
                    let sites = layout(&mut rng, n);
                    let in_place = rng.below(2) == 0;
                    let dt = sim::test_type(rng.below(2));
                    let esize = (dt.size() / 8) as usize;
                    let cnt = v_counts(n, count, v, seed);
                    let places = offsets(&cnt);
                    let mut sends: Vec<TBuf> = (0..n).map(|r| TBuf::new(cnt[r], &dt)).collect();
                    let vals: Vec<Vec<u64>> = (0..n).map(|r| (0..sends[r].elements()).map(|i| sim::value(r, i, seed)).collect()).collect();
                    for r in 0..n {
                        sends[r].set(&vals[r]);
                    }
                    let mut recvs: Vec<TBuf> = (0..n).map(|_| TBuf::new(places[n], &dt)).collect();
                    if in_place {
                        for r in 0..n {
                            let mut pre = vec![7u64; recvs[r].elements()];
                            let p = places[r] as usize * esize;
                            pre[p..p + vals[r].len()].copy_from_slice(&vals[r]);
                            recvs[r].set(&pre);
                        }
                    }
                    let expect = recvs[0].expect(&vals.concat());
                    let blocks: Vec<Vec<UserBuf>> = (0..n).map(|r| (0..n).map(|p| recvs[r].items(places[p], cnt[p])).collect()).collect();
                    let mut build = |r: usize| {
                        let mine = if in_place { None } else { Some(sends[r].ub()) };
                        allgather(sim::view(r, n), &sites, 7, mine, &blocks[r])
                    };
                    let wan: u64 = (0..n).map(|p| cnt[p] * dt.size() * (sites.count as u64 - 1)).sum();
                    assert_eq!(wan_bytes(&sites, n, &mut build), wan, "every block crosses to every other cluster once");
                    let errs = sim::run(n, seed, &mut build);
                    assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                    for r in 0..n {
                        assert_eq!(recvs[r].mem, expect, "n {n} count {count} v {v} in_place {in_place} rank {r} seed {seed}");
                    }
                    assert_eq!(paced_any(), wan > 0 && sites.count > 1);
                    check_paces(&sites, true);
                }
            }
        }
    }

    /// (gather or scatter, v form, count): every root, in place or not.
    fn rooted_case(rng: &mut Rng, n: usize, count: u64, v: bool, is_gather: bool) {
        let seed = rng.next() % 1000;
        let sites = layout(rng, n);
        let root = rng.below(n as u64) as usize;
        let in_place = rng.below(2) == 0;
        let dt = sim::test_type(rng.below(2));
        let esize = (dt.size() / 8) as usize;
        let cnt = v_counts(n, count, v, seed);
        let places = offsets(&cnt);
        let vals: Vec<Vec<u64>> = (0..n).map(|r| (0..cnt[r] as usize * esize).map(|i| sim::value(r, i, seed)).collect()).collect();
        // The root's side: every block; the others': one each.
        let mut whole = TBuf::new(places[n], &dt);
        let mut singles: Vec<TBuf> = (0..n).map(|r| TBuf::new(cnt[r], &dt)).collect();
        let block = (!v).then_some(count * dt.size());
        let (expect_whole, expect_singles): (Vec<u64>, Vec<Vec<u64>>) = if is_gather {
            let mut pre = vec![3u64; whole.elements()];
            if in_place {
                let p = places[root] as usize * esize;
                pre[p..p + vals[root].len()].copy_from_slice(&vals[root]);
            }
            whole.set(&pre);
            for r in 0..n {
                singles[r].set(&vals[r]);
            }
            (whole.expect(&vals.concat()), singles.iter().map(|t| t.mem.clone()).collect())
        } else {
            whole.set(&vals.concat());
            let exp = (0..n).map(|r| if in_place && r == root { singles[r].mem.clone() } else { singles[r].expect(&vals[r]) }).collect();
            (whole.mem.clone(), exp)
        };
        let blocks: Vec<UserBuf> = (0..n).map(|p| whole.items(places[p], cnt[p])).collect();
        let mut build = |r: usize| {
            let bl = if r == root { blocks.clone() } else { Vec::new() };
            let mine = if in_place && r == root { None } else { Some(singles[r].ub()) };
            if is_gather {
                gather(sim::view(r, n), &sites, 8, mine, &bl, block, root as i32)
            } else {
                scatter(sim::view(r, n), &sites, 8, &bl, mine, block, root as i32)
            }
        };
        let rc = sites.cluster(root as i32);
        let wan: u64 = (0..n).filter(|&p| sites.cluster(p as i32) != rc).map(|p| cnt[p] * dt.size()).sum();
        assert_eq!(wan_bytes(&sites, n, &mut build), wan, "every remote block crosses the WAN once");
        let errs = sim::run(n, seed, &mut build);
        assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
        let what = format!("gather {is_gather} n {n} count {count} v {v} root {root} in_place {in_place} seed {seed}");
        assert_eq!(whole.mem, expect_whole, "{what}");
        for r in 0..n {
            assert_eq!(singles[r].mem, expect_singles[r], "{what}: rank {r}");
        }
        assert_eq!(paced_any(), wan > 0, "{what}");
        check_paces(&sites, true);
    }

    #[test]
    fn gather_v_and_scatter_v_via_leaders_and_direct() {
        let mut rng = Rng(23);
        for &n in &[2usize, 3, 4, 5, 8, 9] {
            // 5000 u64 (40 KB) blocks take the direct path, smaller ones the leaders'.
            for &count in &[0u64, 1, 33, 5000] {
                for v in [false, true] {
                    for is_gather in [true, false] {
                        rooted_case(&mut rng, n, count, v, is_gather);
                    }
                }
            }
        }
    }

    #[test]
    fn reduce_scatter_combines_each_segment_once_per_cluster() {
        let mut rng = Rng(29);
        for &n in &[2usize, 3, 4, 5, 8, 9] {
            for &count in &[0u64, 1, 7, 300, 9000] {
                for v in [false, true] {
                    let seed = rng.next() % 1000;
                    let sites = layout(&mut rng, n);
                    let in_place = rng.below(2) == 0;
                    let dt = sim::test_type(rng.below(2));
                    let esize = (dt.size() / 8) as usize;
                    let (op, f) = sim::test_op(1);
                    let cnt = v_counts(n, count, v, seed);
                    let offs = offsets(&cnt);
                    let total = offs[n];
                    let m = total as usize * esize;
                    let mut inputs: Vec<TBuf> = (0..n).map(|_| TBuf::new(total, &dt)).collect();
                    let mut recvs: Vec<TBuf> = (0..n).map(|r| TBuf::new(if in_place { total } else { cnt[r] }, &dt)).collect();
                    let mut want = vec![0u64; m];
                    let mut expects = Vec::new();
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
                    for r in 0..n {
                        let (lo, hi) = (offs[r] as usize * esize, offs[r + 1] as usize * esize);
                        let mut e = want[lo..hi].to_vec();
                        if in_place {
                            // The rest of the buffer keeps the input.
                            e.extend((e.len()..m).map(|i| sim::value(r, i, seed)));
                        }
                        expects.push(recvs[r].expect(&e));
                    }
                    let mut build = |r: usize| {
                        let (input, recv) =
                            if in_place { (recvs[r].ub(), recvs[r].items(0, cnt[r])) } else { (inputs[r].ub(), recvs[r].ub()) };
                        reduce_scatter(sim::view(r, n), &sites, 9, input, recv, &cnt, op.clone())
                    };
                    let wan: u64 = (0..n).map(|r| cnt[r] * dt.size() * (sites.count as u64 - 1)).sum();
                    assert_eq!(wan_bytes(&sites, n, &mut build), wan, "each segment's partial crosses once per pair of clusters");
                    let errs = sim::run(n, seed, &mut build);
                    assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                    for r in 0..n {
                        assert_eq!(recvs[r].mem, expects[r], "n {n} count {count} v {v} in_place {in_place} rank {r} seed {seed}");
                    }
                    assert_eq!(paced_any(), wan > 0);
                    check_paces(&sites, true);
                }
            }
        }
    }
}

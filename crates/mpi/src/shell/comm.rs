//! Communicators: creation (dup, split, create, intercommunicators),
//! queries, names, info, freeing.
//!
//! Every new communicator gets a context id agreed by its members: each
//! process proposes the next id it has never used, and the maximum over the
//! parent wins (for an intercommunicator, the two groups' maxima are
//! exchanged by their leaders). Ids are never reused, so a late message for a
//! freed communicator can never match a new one.

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};
use gridmpi_engine::coll::{self, agree};
use gridmpi_engine::sched::{byte_type, CommView, Schedule, Step};
use crate::port::Offer;
use crate::runtime::Remote;
use gridmpi_transport::tcp::handshake::Keys;

/// Bit 30 of a collective tag: internal exchanges that are not sequenced
/// collectives (MPI_Comm_create_group, intercommunicator leaders).
pub const SIDE_TAG: i32 = 1 << 30;

/// A view over the members of a communicator for internal collectives:
/// its local group on its collective context.
fn local_view(c: &Comm) -> CommView {
    match c.local_ctx {
        Some(lctx) => CommView { ctx: lctx + 1, rank: c.rank, size: c.size(), pids: c.group.pids.clone().into(), local_pids: None },
        None => super::env::coll_view(c),
    }
}

fn u32_buf(v: &mut [u32]) -> UserBuf {
    // SAFETY: the slice outlives the blocking collective using it.
    unsafe { UserBuf::new(v.as_mut_ptr() as *mut u8, (v.len() * 4) as u64, byte_type()) }
}

fn i32_buf(v: &mut [i32]) -> UserBuf {
    // SAFETY: as above.
    unsafe { UserBuf::new(v.as_mut_ptr() as *mut u8, (v.len() * 4) as u64, byte_type()) }
}

pub(crate) fn run(s: Schedule) -> R<()> {
    let r = state::with(|st| {
        let r = st.rt.engine.start_schedule(s);
        st.progress()?;
        Ok(r)
    })?;
    super::env::wait_engine(r)?;
    Ok(())
}

/// Allreduce-max of `v` over the view.
pub(crate) fn allreduce_max(view: CommView, tag: i32, v: &mut [u32]) -> R<()> {
    if view.size == 1 {
        return Ok(());
    }
    let mut tmp = vec![0u32; v.len()];
    let s = coll::allreduce_reduce_bcast(view, tag, u32_buf(v), u32_buf(&mut tmp), Arc::new(agree::MaxU32));
    run(s)
}

/// Allgather of equal-length i32 vectors over the view.
pub(crate) fn allgather(view: CommView, tag: i32, mine: &[i32]) -> R<Vec<i32>> {
    let n = mine.len();
    let size = view.size as usize;
    let mut all = vec![0i32; n * size];
    all[view.rank as usize * n..][..n].copy_from_slice(mine);
    if size > 1 {
        let blocks: Vec<UserBuf> = all.chunks_mut(n.max(1)).take(size).map(|c| i32_buf(&mut c[..n])).collect();
        run(coll::allgather_ring(view, tag, blocks))?;
    }
    Ok(all)
}

pub(crate) fn bcast(view: CommView, tag: i32, v: &mut [i32], root: i32) -> R<()> {
    if view.size == 1 {
        return Ok(());
    }
    run(coll::bcast_binomial(view, tag, i32_buf(v), root))
}

/// One round of a context agreement between two groups that have no
/// intercommunicator yet: the maximum of `v` over the local group (`view`),
/// swapped by the leaders (`swap`, given at the local leader only), the
/// larger of the two spread over the local group.
fn two_group_max(view: &CommView, tag: i32, leader: i32, swap: Option<&dyn Fn(&[i32]) -> R<Vec<i32>>>, v: &mut [u32]) -> R<()> {
    allreduce_max(view.clone(), tag, v)?;
    let mut both: Vec<i32> = v.iter().map(|&x| x as i32).collect();
    if let Some(swap) = swap {
        let theirs = swap(&both)?;
        if theirs.len() != both.len() {
            return Err(err(MPI_ERR_INTERN, "the remote group's leader sent a malformed context proposal"));
        }
        for (a, b) in both.iter_mut().zip(theirs) {
            *a = (*a as u32).max(b as u32) as i32;
        }
    }
    bcast(view.clone(), tag, &mut both, leader)?;
    for (a, b) in v.iter_mut().zip(both) {
        *a = b as u32;
    }
    Ok(())
}

/// Bytes as i32 words for the leaders' exchanges: the length, then the
/// bytes four to a word.
fn bytes_to_i32s(b: &[u8]) -> Vec<i32> {
    let mut out = vec![b.len() as i32];
    out.extend(b.chunks(4).map(|c| {
        let mut w = [0u8; 4];
        w[..c.len()].copy_from_slice(c);
        i32::from_le_bytes(w)
    }));
    out
}

/// The bytes of [`bytes_to_i32s`]; None if the words do not hold them.
fn i32s_to_bytes(w: &[i32]) -> Option<Vec<u8>> {
    let (&len, words) = w.split_first()?;
    let len = usize::try_from(len).ok()?;
    if len.div_ceil(4) != words.len() {
        return None;
    }
    let mut b: Vec<u8> = words.iter().flat_map(|x| x.to_le_bytes()).collect();
    b.truncate(len);
    Some(b)
}

/// Point-to-point exchange of i32 vectors between two leaders (any length).
fn leader_exchange(ctx: u32, my_rank: i32, peer_rank: i32, peer_pid: u32, tag: i32, mine: &[i32]) -> R<Vec<i32>> {
    let view = CommView { ctx, rank: my_rank, size: 0, pids: Vec::new().into(), local_pids: None };
    let _ = view;
    // First the length, then the data.
    let mut len_out = [mine.len() as i32];
    let mut len_in = [0i32];
    exchange(ctx, my_rank, peer_rank, peer_pid, tag, &mut len_out, &mut len_in)?;
    let mut out = mine.to_vec();
    let mut inn = vec![0i32; len_in[0].max(0) as usize];
    exchange(ctx, my_rank, peer_rank, peer_pid, tag, &mut out, &mut inn)?;
    Ok(inn)
}

fn exchange(ctx: u32, my_rank: i32, peer_rank: i32, peer_pid: u32, tag: i32, out: &mut [i32], inn: &mut [i32]) -> R<()> {
    let (rs, ss) = state::with(|st| {
        let rs = st.rt.engine.irecv(gridmpi_engine::RecvArgs { ctx, src: Some(peer_rank), tag: Some(tag), buf: i32_buf(inn) });
        let ss = st.rt.engine.isend(gridmpi_engine::SendArgs {
            ctx,
            src: my_rank,
            dest: peer_pid,
            tag,
            buf: i32_buf(out),
            mode: gridmpi_engine::SendMode::Standard,
        });
        st.progress()?;
        Ok((rs, ss))
    })?;
    super::env::wait_engine(ss)?;
    let s = super::env::wait_engine(rs)?;
    if s.error.is_some() {
        return Err(err(MPI_ERR_INTERN, "mismatched exchange between group leaders"));
    }
    Ok(())
}

impl State {
    /// Register a new communicator built from `parent`'s settings.
    pub(crate) fn add_comm(&mut self, parent: MPI_Comm, mut c: Comm, copy_topo: bool) -> R<MPI_Comm> {
        check_ctx(c.ctx)?;
        let p = self.comm(parent)?;
        c.errh = p.errh;
        if copy_topo {
            c.topo = p.topo.clone();
        }
        c.session = p.session;
        super::errh::retain_errhandler(c.errh);
        Ok(self.comms.insert(c))
    }
}

pub(crate) fn comm_rank(st: &mut State, comm: MPI_Comm) -> R<c_int> {
    Ok(st.comm(comm)?.rank)
}

pub(crate) fn comm_size(st: &mut State, comm: MPI_Comm) -> R<c_int> {
    Ok(st.comm(comm)?.size())
}

pub(crate) fn comm_remote_size(st: &mut State, comm: MPI_Comm) -> R<c_int> {
    st.comm(comm)?.remote.as_ref().map(|r| r.size()).ok_or_else(|| err(MPI_ERR_COMM, "not an intercommunicator"))
}

pub(crate) fn comm_test_inter(st: &mut State, comm: MPI_Comm) -> R<c_int> {
    Ok(st.comm(comm)?.is_inter() as c_int)
}

/// Duplicate `comm` with a fresh context (collective); attributes copied.
pub(crate) fn dup(comm: MPI_Comm, info: Option<Vec<(String, String)>>) -> R<MPI_Comm> {
    let inter = state::with(|st| Ok(st.comm(comm)?.is_inter()))?;
    let ctx = super::ctx_id::agree_ctx(comm, if inter { 2 } else { 1 })?;
    let (h, copies) = state::with(|st| {
        let p = st.comm(comm)?;
        let mut c = Comm::new(ctx, p.group.clone(), p.rank, p.errh);
        c.remote = p.remote.clone();
        if inter {
            c.local_ctx = Some(ctx + 2);
        }
        c.info = info.unwrap_or_else(|| p.info.clone());
        let h = st.add_comm(comm, c, true)?;
        Ok((h, super::attr::comm_attrs_of(st, comm)))
    })?;
    if let Err(e) = super::attr::copy_comm_attrs(comm, h, copies) {
        // A copy callback failed: no duplicate (it holds no attribute yet).
        comm_free(h)?;
        return Err(e);
    }
    Ok(h)
}

/// MPI_Comm_dup and MPI_Comm_dup_with_info: on an error the program gets
/// MPI_COMM_NULL (as from MPICH), not what its variable held before.
pub(crate) fn comm_dup(name: &'static str, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    dup_into(name, comm, None, newcomm)
}

pub(crate) fn comm_dup_with_info(name: &'static str, comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) -> c_int {
    dup_into(name, comm, Some(info), newcomm)
}

fn dup_into(name: &'static str, comm: MPI_Comm, info: Option<MPI_Info>, newcomm: *mut MPI_Comm) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(newcomm, "newcomm")?;
        let made = info.map(super::info::info_entries_or_empty).transpose().and_then(|kv| dup(comm, kv));
        // SAFETY: checked non-null.
        unsafe { *newcomm = *made.as_ref().unwrap_or(&MPI_COMM_NULL) };
        made.map(|_| ())
    })
}

/// MPI_Comm_idup: the new handle is valid at once; its context is agreed by
/// a nonblocking schedule and filled in when the request completes.
fn idup(comm: MPI_Comm, info: Option<Vec<(String, String)>>, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> R<()> {
    check_ptr(newcomm, "newcomm")?;
    check_ptr(request, "request")?;
    let (h, rq, copies) = state::with(|st| {
        let p = st.comm(comm)?;
        // An intercommunicator also needs a context pair for its local group.
        let pairs = if p.is_inter() { 2 } else { 1 };
        let mut c = Comm::new(u32::MAX, p.group.clone(), p.rank, p.errh);
        c.remote = p.remote.clone();
        c.info = info.clone().unwrap_or_else(|| p.info.clone());
        let h = st.add_comm(comm, c, true)?;
        let user = st.rt.engine.external_request();
        super::ctx_id::start_idup(st, comm, h, pairs, user)?;
        st.progress()?;
        let rq = st.reqs.insert(ReqEntry::Active { r: user, kind: ReqKind::Coll, comm });
        Ok((h, rq, super::attr::comm_attrs_of(st, comm)))
    })?;
    super::attr::copy_comm_attrs(comm, h, copies)?;
    // SAFETY: checked non-null.
    unsafe {
        *newcomm = h;
        *request = rq;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> c_int {
    api("MPI_Comm_idup", Target::Comm(comm), || idup(comm, None, newcomm, request))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_idup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> c_int {
    api("MPI_Comm_idup_with_info", Target::Comm(comm), || {
        let kv = super::info::info_entries_or_empty(info)?;
        idup(comm, Some(kv), newcomm, request)
    })
}

/// The members of my color after an allgather of (color, key) pairs:
/// pids ordered by (key, old rank).
fn members(all: &[i32], pids: &[u32], color: i32) -> Vec<u32> {
    let mut v: Vec<(i32, usize)> =
        all.chunks(2).enumerate().filter(|(_, ck)| ck[0] == color).map(|(r, ck)| (ck[1], r)).collect();
    v.sort();
    v.into_iter().map(|(_, r)| pids[r]).collect()
}

pub(crate) fn split(comm: MPI_Comm, color: c_int, key: c_int) -> R<MPI_Comm> {
    if color < 0 && color != MPI_UNDEFINED {
        return Err(err(MPI_ERR_ARG, format!("invalid color {color} (must be >= 0 or MPI_UNDEFINED)")));
    }
    let (view, tag, inter, me) = state::with(|st| {
        let me = st.rt.me;
        let c = st.comm_mut(comm)?;
        let tag = c.next_coll_tag();
        let inter = c.remote.as_ref().map(|r| (c.ctx + 1, r.pids.clone()));
        Ok((local_view(c), tag, inter, me))
    })?;
    let local_pids: Vec<u32> = view.pids.to_vec();
    let all = allgather(view.clone(), tag, &[color, key])?;
    // Intercommunicators: learn the remote group's colors too.
    let remote_all = match &inter {
        Some((ictx, rpids)) => {
            let mut theirs = if view.rank == 0 {
                leader_exchange(*ictx, 0, 0, rpids[0], tag | SIDE_TAG, &all)?
            } else {
                vec![0; 2 * rpids.len()]
            };
            bcast(view.clone(), tag, &mut theirs, 0)?;
            Some(theirs)
        }
        None => None,
    };
    let ctx = super::ctx_id::agree_ctx(comm, if inter.is_some() { 2 } else { 1 })?;
    if color == MPI_UNDEFINED {
        return Ok(MPI_COMM_NULL);
    }
    let group = members(&all, &local_pids, color);
    let rank = group.iter().position(|&p| p == me).unwrap() as i32;
    state::with(|st| {
        let mut c = Comm::new(ctx, Arc::new(Group::new(group)), rank, MPI_ERRORS_ARE_FATAL);
        if let (Some(ra), Some((_, rpids))) = (&remote_all, &inter) {
            let remote = members(ra, rpids, color);
            if remote.is_empty() {
                return Ok(MPI_COMM_NULL);
            }
            c.remote = Some(Arc::new(Group::new(remote)));
            c.local_ctx = Some(ctx + 2);
        }
        st.add_comm(comm, c, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_split_type(comm: MPI_Comm, split_type: c_int, key: c_int, info: MPI_Info, newcomm: *mut MPI_Comm) -> c_int {
    api("MPI_Comm_split_type", Target::Comm(comm), || {
        check_ptr(newcomm, "newcomm")?;
        let color = state::with(|st| {
            // On an intercommunicator (MPI 4.0) each local group splits by
            // the same rule and split() pairs equal colors across the groups.
            let c = st.comm(comm)?;
            let hw = if info != MPI_INFO_NULL {
                super::info::info_value(info, "mpi_hw_resource_type")?
            } else {
                None
            };
            let host_color = || st.rt.local_pids()[0] as c_int;
            // HW_UNGUIDED must give a strict subset of the parent: the host
            // if the parent spans several hosts, else nothing.
            let spans_hosts = {
                let local = st.rt.local_pids();
                c.group.pids.iter().any(|p| !local.contains(p))
            };
            Ok(match split_type {
                MPI_UNDEFINED => MPI_UNDEFINED,
                MPI_COMM_TYPE_HW_UNGUIDED if !spans_hosts => MPI_UNDEFINED,
                MPI_COMM_TYPE_SHARED | MPI_COMM_TYPE_HW_UNGUIDED => host_color(),
                MPI_COMM_TYPE_HW_GUIDED | MPI_COMM_TYPE_RESOURCE_GUIDED => match hw.as_deref() {
                    Some("mpi_shared_memory") => host_color(),
                    _ => MPI_UNDEFINED,
                },
                // The map the split's exchange (the next blocking
                // collective) runs on: after a restart, alike everywhere.
                GRIDMPI_COMM_TYPE_CLUSTER => st.coll_map(c.ctx, Some(c.peek_coll_tag())).cluster_of(st.rt.me) as c_int,
                t => return Err(err(MPI_ERR_ARG, format!("unknown split type {t}"))),
            })
        })?;
        *newcomm = split(comm, color, key)?;
        // Say what the new communicator groups by (MPI 4.0: the info argument
        // of the hardware split types carries mpi_hw_resource_type back).
        if *newcomm != MPI_COMM_NULL && info != MPI_INFO_NULL && matches!(split_type, MPI_COMM_TYPE_HW_UNGUIDED | MPI_COMM_TYPE_HW_GUIDED) {
            super::info::info_set(info, "mpi_hw_resource_type", "mpi_shared_memory")?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) -> c_int {
    api("MPI_Comm_create", Target::Comm(comm), || {
        check_ptr(newcomm, "newcomm")?;
        let (g, me, inter) = state::with(|st| {
            let c = st.comm(comm)?;
            let g = st.group(group)?;
            for &p in &g.pids {
                if c.group.rank_of(p).is_none() {
                    return Err(err(MPI_ERR_GROUP, format!("process {p} of the group is not in the communicator")));
                }
            }
            Ok((g, st.rt.me, c.is_inter()))
        })?;
        if inter {
            // Each side names a subgroup of its own group; exchange them.
            let (view, tag, ictx, rpids) = state::with(|st| {
                let c = st.comm_mut(comm)?;
                let tag = c.next_coll_tag();
                let r = c.remote.clone().unwrap();
                Ok((local_view(c), tag, c.ctx + 1, r.pids.clone()))
            })?;
            let mine: Vec<i32> = g.pids.iter().map(|&p| p as i32).collect();
            let mut theirs = if view.rank == 0 { leader_exchange(ictx, 0, 0, rpids[0], tag | SIDE_TAG, &mine)? } else { Vec::new() };
            let mut n = [theirs.len() as i32];
            bcast(view.clone(), tag, &mut n, 0)?;
            theirs.resize(n[0] as usize, 0);
            bcast(view, tag, &mut theirs, 0)?;
            let ctx = super::ctx_id::agree_ctx(comm, 2)?;
            *newcomm = match g.rank_of(me) {
                Some(rank) if !theirs.is_empty() => state::with(|st| {
                    let mut c = Comm::new(ctx, g.clone(), rank, MPI_ERRORS_ARE_FATAL);
                    c.remote = Some(Arc::new(Group::new(theirs.iter().map(|&p| p as u32).collect())));
                    c.local_ctx = Some(ctx + 2);
                    st.add_comm(comm, c, false)
                })?,
                _ => MPI_COMM_NULL,
            };
            return Ok(());
        }
        let ctx = super::ctx_id::agree_ctx(comm, 1)?;
        *newcomm = match g.rank_of(me) {
            Some(rank) => state::with(|st| st.add_comm(comm, Comm::new(ctx, g.clone(), rank, MPI_ERRORS_ARE_FATAL), false))?,
            None => MPI_COMM_NULL,
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm) -> c_int {
    api("MPI_Comm_create_group", Target::Comm(comm), || {
        check_ptr(newcomm, "newcomm")?;
        check_tag(tag)?;
        let (g, me, cctx) = state::with(|st| {
            let c = st.comm(comm)?;
            if c.is_inter() {
                return Err(err(MPI_ERR_COMM, "MPI_Comm_create_group needs an intracommunicator"));
            }
            let g = st.group(group)?;
            for &p in &g.pids {
                if c.group.rank_of(p).is_none() {
                    return Err(err(MPI_ERR_GROUP, format!("process {p} of the group is not in the communicator")));
                }
            }
            Ok((g, st.rt.me, c.ctx + 1))
        })?;
        let Some(rank) = g.rank_of(me) else {
            return Err(err(MPI_ERR_GROUP, "the calling process is not in the group"));
        };
        // Agree among the group's members only, on a tag no sequenced
        // collective uses.
        let view = CommView { ctx: cctx, rank, size: g.size(), pids: g.pids.clone().into(), local_pids: None };
        let ctx = super::ctx_id::agree_blocking(1, |v| allreduce_max(view.clone(), SIDE_TAG | tag, v))?;
        *newcomm = state::with(|st| {
            st.add_comm(comm, Comm::new(ctx, g.clone(), rank, MPI_ERRORS_ARE_FATAL), false)
        })?;
        Ok(())
    })
}

/// MPI_Comm_create_from_group (MPI 4.0): collective over the group's members
/// only, with no parent communicator; concurrent calls are told apart by
/// their string tags.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_from_group(group: MPI_Group, stringtag: *const c_char, info: MPI_Info, errhandler: MPI_Errhandler, newcomm: *mut MPI_Comm) -> c_int {
    api("MPI_Comm_create_from_group", from_group_target(group, errhandler), || {
        check_ptr(newcomm, "newcomm")?;
        let tagstr = read_cstr(stringtag)?;
        let (g, me, kv) = state::with(|st| {
            let g = st.group(group)?;
            super::errh::check_errhandler(errhandler, super::errh::ErrhKind::Comm)?;
            Ok((g, st.rt.me, super::info::info_entries_or_empty(info)?))
        })?;
        let Some(rank) = g.rank_of(me) else {
            return Err(err(MPI_ERR_GROUP, "the calling process is not in the group"));
        };
        let view = CommView { ctx: WORLD_COLL_CTX, rank, size: g.size(), pids: g.pids.clone().into(), local_pids: None };
        let ctx = super::ctx_id::agree_blocking(1, |v| allreduce_max(view.clone(), string_tag(&tagstr, 0), v))?;
        *newcomm = state::with(|st| {
            let mut c = Comm::new(ctx, g.clone(), rank, errhandler);
            c.session = g.session;
            insert_parentless(st, c, kv)
        })?;
        Ok(())
    })
}

/// Errors of the constructors from groups go to the handler of the session
/// the group derives from; a group of the world model has none, so they go
/// where errors of no object go (MPI_COMM_SELF).
/// Where the errors of a constructor from groups go: the error handler it
/// was given, which "will also be invoked if the function encounters an
/// error" (MPI 4.1, 7.4.2), unless that handler is itself what is wrong.
fn from_group_target(group: MPI_Group, errhandler: MPI_Errhandler) -> Target {
    match super::errh::check_errhandler(errhandler, super::errh::ErrhKind::Comm) {
        Ok(()) => Target::Handler(errhandler),
        Err(_) => group_target(group),
    }
}

fn group_target(group: MPI_Group) -> Target {
    match state::with(|st| Ok(st.group(group)?.session)) {
        Ok(Some(s)) => Target::Session(s),
        _ => Target::NoComm,
    }
}

/// The collective context of MPI_COMM_WORLD, which the parentless
/// constructors (MPI_Comm_create_from_group and friends) talk on.
const WORLD_COLL_CTX: u32 = 1;

/// A tag for a parentless constructor's exchanges: derived from the user's
/// string tag (so concurrent calls with different tags never match each
/// other) and a step number, and outside the range of sequenced collectives.
fn string_tag(s: &str, step: u8) -> i32 {
    let h = crate::auth::sha256(s.as_bytes());
    let v = u32::from_le_bytes([h[0], h[1], h[2], h[3] ^ step]) & 0x3fff_ffff;
    SIDE_TAG | v as i32
}


/// Registers a communicator made without a parent: it takes the info
/// hints given and holds a reference on its error handler.
fn insert_parentless(st: &mut State, mut c: Comm, info: Vec<(String, String)>) -> R<MPI_Comm> {
    check_ctx(c.ctx)?;
    c.info = info;
    super::errh::retain_errhandler(c.errh);
    Ok(st.comms.insert(c))
}

/// Context ids stay below the space of partitioned traffic
/// (gridmpi_engine::PART_CTX_BIT). Ids are never reused, so a process
/// that made about a billion communicators runs out.
fn check_ctx(ctx: u32) -> R<()> {
    // u32::MAX: MPI_Comm_idup's placeholder until its id is agreed.
    if ctx >= gridmpi_engine::PART_CTX_BIT && ctx != u32::MAX {
        return Err(err(MPI_ERR_INTERN, "out of context ids for new communicators"));
    }
    Ok(())
}

/// MPI_Intercomm_create_from_groups (MPI 4.0): the members of each group
/// agree among themselves, then the two leaders swap their proposals (and
/// check that both sides name the same groups) over the world's collective
/// context, with tags derived from the string tag.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Intercomm_create_from_groups(
    local_group: MPI_Group,
    local_leader: c_int,
    remote_group: MPI_Group,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    api("MPI_Intercomm_create_from_groups", from_group_target(local_group, errhandler), || {
        check_ptr(newintercomm, "newintercomm")?;
        let tagstr = read_cstr(stringtag)?;
        let (lg, rg, me, kv) = state::with(|st| {
            let lg = st.group(local_group)?;
            let rg = st.group(remote_group)?;
            super::errh::check_errhandler(errhandler, super::errh::ErrhKind::Comm)?;
            Ok((lg, rg, st.rt.me, super::info::info_entries_or_empty(info)?))
        })?;
        let Some(rank) = lg.rank_of(me) else {
            return Err(err(MPI_ERR_GROUP, "the calling process is not in the local group"));
        };
        if local_leader < 0 || local_leader >= lg.size() {
            return Err(err(MPI_ERR_RANK, format!("invalid local leader {local_leader} (local group size {})", lg.size())));
        }
        if remote_leader < 0 || remote_leader >= rg.size() {
            return Err(err(MPI_ERR_RANK, format!("invalid remote leader {remote_leader} (remote group size {})", rg.size())));
        }
        if let Some(p) = lg.pids.iter().find(|p| rg.rank_of(**p).is_some()) {
            return Err(err(MPI_ERR_GROUP, format!("process {p} is in both the local and the remote group")));
        }
        let view = CommView { ctx: WORLD_COLL_CTX, rank, size: lg.size(), pids: lg.pids.clone().into(), local_pids: None };
        // The leaders talk with world ranks on a tag of their own: first
        // whether both name the same groups, then each round of the
        // context agreement.
        let peer = rg.pids[remote_leader as usize];
        let mut same = [1];
        if rank == local_leader {
            let mine: Vec<i32> = lg.pids.iter().map(|&p| p as i32).collect();
            let theirs = leader_exchange(WORLD_COLL_CTX, me as i32, peer as i32, peer, string_tag(&tagstr, 1), &mine)?;
            same[0] = (theirs.len() == rg.pids.len() && theirs.iter().zip(&rg.pids).all(|(&a, &b)| a as u32 == b)) as i32;
            // Both sides stop if either finds a mismatch.
            let verdict = leader_exchange(WORLD_COLL_CTX, me as i32, peer as i32, peer, string_tag(&tagstr, 1), &same)?;
            same[0] &= verdict.first().copied().unwrap_or(0);
        }
        bcast(view.clone(), string_tag(&tagstr, 0), &mut same, local_leader)?;
        if same[0] == 0 {
            return Err(err(MPI_ERR_GROUP, format!("the remote leader's group does not match remote_group (string tag \"{tagstr}\")")));
        }
        let swap = |both: &[i32]| leader_exchange(WORLD_COLL_CTX, me as i32, peer as i32, peer, string_tag(&tagstr, 1), both);
        let leader: Option<&dyn Fn(&[i32]) -> R<Vec<i32>>> = (rank == local_leader).then_some(&swap);
        let ctx = super::ctx_id::agree_blocking(2, |v| two_group_max(&view, string_tag(&tagstr, 0), local_leader, leader, v))?;
        *newintercomm = state::with(|st| {
            let mut c = Comm::new(ctx, lg.clone(), rank, errhandler);
            c.session = lg.session;
            c.remote = Some(rg.clone());
            c.local_ctx = Some(ctx + 2);
            insert_parentless(st, c, kv)
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Intercomm_create(local_comm: MPI_Comm, local_leader: c_int, peer_comm: MPI_Comm, remote_leader: c_int, tag: c_int, newintercomm: *mut MPI_Comm) -> c_int {
    api("MPI_Intercomm_create", Target::Comm(local_comm), || {
        check_ptr(newintercomm, "newintercomm")?;
        check_tag(tag)?;
        let (view, ltag, my_pids, peer) = state::with(|st| {
            let l = st.comm(local_comm)?;
            if l.is_inter() {
                return Err(err(MPI_ERR_COMM, "the local communicator must be an intracommunicator"));
            }
            if local_leader < 0 || local_leader >= l.size() {
                return Err(err(MPI_ERR_RANK, format!("invalid local leader {local_leader}")));
            }
            let am_leader = l.rank == local_leader;
            let peer = if am_leader {
                let p = st.comm(peer_comm)?;
                let pid = p.check_dest(remote_leader)?.ok_or_else(|| err(MPI_ERR_RANK, "the remote leader is MPI_PROC_NULL"))?;
                Some((p.ctx, p.rank, pid))
            } else {
                None
            };
            let l = st.comm_mut(local_comm)?;
            let ltag = l.next_coll_tag();
            Ok((super::env::coll_view(l), ltag, l.group.pids.clone(), peer))
        })?;
        // Each round of the context agreement: the local maximum, swapped
        // by the leaders over the peer communicator with the user's tag,
        // the larger spread over the local group.
        let swap = |both: &[i32]| {
            let (pctx, prank, ppid) = peer.expect("only the leader swaps");
            leader_exchange(pctx, prank, remote_leader, ppid, tag, both)
        };
        let leader: Option<&dyn Fn(&[i32]) -> R<Vec<i32>>> = peer.is_some().then_some(&swap);
        let ctx = super::ctx_id::agree_blocking(2, |v| two_group_max(&view, ltag, local_leader, leader, v))?;
        // Leaders swap their groups: each process as (world, rank) and how
        // to reach it, as a join describes them (the groups may come from
        // different jobs, where pids differ and some of the other group's
        // processes may be strangers here), and the keys of the link with
        // the other leader's world.
        let mut info: Vec<u8> = Vec::new();
        if let Some((pctx, prank, ppid)) = peer {
            let mine = state::with(|st| st.rt.describe(&my_pids).map_err(|e| err(MPI_ERR_INTERN, e)))?;
            let theirs = leader_exchange(pctx, prank, remote_leader, ppid, tag, &bytes_to_i32s(&Offer { ctx: 0, procs: mine }.encode()))?;
            // The keys go only to a group all of our own job: a member of
            // another job must not learn our links' keys (it then cannot
            // reach strangers, and says so).
            let keys = state::with(|st| {
                let own = st.rt.who(st.rt.me).world;
                let ours = my_pids.iter().all(|&p| st.rt.who(p).world == own);
                Ok(if ours { st.rt.link_keys(ppid) } else { Keys { job: 0, secret: [0; 32] } })
            })?;
            info.extend_from_slice(&keys.job.to_le_bytes());
            info.extend_from_slice(&keys.secret);
            info.extend_from_slice(&i32s_to_bytes(&theirs).ok_or_else(|| err(MPI_ERR_INTERN, "the remote leader sent a malformed group"))?);
        }
        let mut words = bytes_to_i32s(&info);
        let mut n = [words.len() as i32];
        bcast(view.clone(), ltag, &mut n, local_leader)?;
        words.resize(n[0].max(0) as usize, 0);
        bcast(view.clone(), ltag, &mut words, local_leader)?;
        let decoded = i32s_to_bytes(&words).filter(|b| b.len() >= 40).and_then(|b| {
            let keys = Keys { job: u64::from_le_bytes(b[..8].try_into().ok()?), secret: b[8..40].try_into().ok()? };
            Some((keys, Offer::decode(&b[40..])?))
        });
        let Some((keys, theirs)) = decoded.filter(|(_, o)| !o.procs.is_empty()) else {
            return Err(err(MPI_ERR_INTERN, "the remote group's leader sent a malformed group"));
        };
        // Strangers of the other leader's world become peers here; any
        // other stranger cannot be reached.
        let strangers: Vec<Remote> = state::with(|st| Ok(theirs.procs.iter().filter(|r| st.rt.pid_of(r.who).is_none()).cloned().collect()))?;
        let remote_world = theirs.procs[0].who.world;
        let no_keys = keys.secret == [0; 32];
        if let Some(r) = strangers.iter().find(|r| r.who.world != remote_world || no_keys) {
            return Err(err(MPI_ERR_COMM, format!("rank {} of job {:016x} in the remote group is not connected to this process, nor of the remote leader's job (join the jobs with MPI_Comm_accept/connect first)", r.who.rank, r.who.world)));
        }
        let met = state::with(|st| st.rt.join_world(&strangers, &keys).map_err(|e| err(MPI_ERR_COMM, e)))?;
        // Before anyone talks to a new peer, every process of both groups
        // has made its new peers: the groups agree over their leaders.
        let mut any = [!met.is_empty() as u32];
        two_group_max(&view, ltag, local_leader, leader, &mut any)?;
        *newintercomm = state::with(|st| {
            let remote = theirs.procs.iter().map(|r| st.rt.pid_of(r.who).ok_or_else(|| err(MPI_ERR_INTERN, "a process of the remote group vanished"))).collect::<R<Vec<u32>>>()?;
            let l = st.comm(local_comm)?;
            let mut c = Comm::new(ctx, l.group.clone(), l.rank, MPI_ERRORS_ARE_FATAL);
            c.remote = Some(Arc::new(Group::new(remote)));
            c.local_ctx = Some(ctx + 2);
            st.add_comm(local_comm, c, false)
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Intercomm_merge(intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm) -> c_int {
    api("MPI_Intercomm_merge", Target::Comm(intercomm), || {
        check_ptr(newintracomm, "newintracomm")?;
        let (view, tag, ictx, local, remote, me, local_first_by_id) = state::with(|st| {
            let me = st.rt.me;
            let c = st.comm_mut(intercomm)?;
            let remote = c.remote.clone().ok_or_else(|| err(MPI_ERR_COMM, "not an intercommunicator"))?;
            let tag = c.next_coll_tag();
            let ictx = c.ctx + 1;
            let (view, local, remote) = (local_view(c), c.group.pids.clone(), remote.pids.clone());
            // Both groups must order themselves alike when both say the
            // same: by who their first processes are, which both sides
            // know alike (pids of another job's processes differ).
            let first = st.rt.who(local[0]) < st.rt.who(remote[0]);
            Ok((view, tag, ictx, local, remote, me, first))
        })?;
        let mut h = [(high != 0) as i32];
        bcast(view.clone(), tag, &mut h, 0)?;
        let mut theirs = [0i32];
        if view.rank == 0 {
            let t = leader_exchange(ictx, 0, 0, remote[0], tag | SIDE_TAG, &h)?;
            theirs[0] = *t.first().unwrap_or(&0);
        }
        bcast(view, tag, &mut theirs, 0)?;
        let local_first = match (h[0], theirs[0]) {
            (0, 1) => true,
            (1, 0) => false,
            _ => local_first_by_id,
        };
        let ctx = super::ctx_id::agree_ctx(intercomm, 1)?;
        let pids: Vec<u32> = if local_first { local.iter().chain(remote.iter()).copied().collect() } else { remote.iter().chain(local.iter()).copied().collect() };
        let rank = pids.iter().position(|&p| p == me).unwrap() as i32;
        *newintracomm = state::with(|st| st.add_comm(intercomm, Comm::new(ctx, Arc::new(Group::new(pids)), rank, MPI_ERRORS_ARE_FATAL), false))?;
        Ok(())
    })
}

#[allow(dead_code)]
fn _unused(_: Step) {}

// MPI_Comm_compare, _group, _free, _dup, _split, the names and infos are
// generated from abi/functions.txt; these are their implementations.

pub(crate) fn comm_compare(st: &mut State, comm1: MPI_Comm, comm2: MPI_Comm) -> R<c_int> {
    let (a, b) = (st.comm(comm1)?, st.comm(comm2)?);
    if comm1 == comm2 {
        return Ok(MPI_IDENT);
    }
    if a.is_inter() != b.is_inter() {
        return Ok(MPI_UNEQUAL);
    }
    let g = super::group::compare_groups(&a.group, &b.group);
    let rg = match (&a.remote, &b.remote) {
        (Some(x), Some(y)) => super::group::compare_groups(x, y),
        _ => MPI_IDENT,
    };
    Ok(match g.max(rg) {
        MPI_IDENT => MPI_CONGRUENT,
        MPI_SIMILAR => MPI_SIMILAR,
        _ => MPI_UNEQUAL,
    })
}

/// The group derives from the communicator's session.
pub(crate) fn comm_group(st: &mut State, comm: MPI_Comm) -> R<MPI_Group> {
    let c = st.comm(comm)?;
    let g = if c.group.session == c.session { c.group.clone() } else { Arc::new(Group { pids: c.group.pids.clone(), session: c.session }) };
    Ok(st.groups.insert(g))
}

pub(crate) fn comm_remote_group(st: &mut State, comm: MPI_Comm) -> R<MPI_Group> {
    let g = st.comm(comm)?.remote.clone().ok_or_else(|| err(MPI_ERR_COMM, "not an intercommunicator"))?;
    Ok(st.groups.insert(g))
}

pub(crate) fn comm_get_info(st: &mut State, comm: MPI_Comm) -> R<MPI_Info> {
    Ok(super::info::new_info(Info { entries: st.comm(comm)?.info.clone() }))
}

/// The info's entries are read first, without the lock: MPI_INFO_ENV's
/// look at the state.
pub(crate) fn comm_set_info(comm: MPI_Comm, info: MPI_Info) -> R<()> {
    let kv = super::info::info_entries(info)?;
    state::with(|st| Ok(super::info::merge_entries(&mut st.comm_mut(comm)?.info, kv)))
}

pub(crate) fn comm_set_name(st: &mut State, comm: MPI_Comm, name: &str) -> R<()> {
    st.comm_mut(comm)?.name = object_name(name);
    Ok(())
}

pub(crate) fn comm_get_name(st: &mut State, comm: MPI_Comm) -> R<String> {
    if comm == MPI_COMM_NULL {
        return Ok("MPI_COMM_NULL".into());
    }
    Ok(st.comm(comm)?.name.clone())
}

pub(crate) fn comm_free(h: MPI_Comm) -> R<MPI_Comm> {
    if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
        return Err(err(MPI_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed"));
    }
    state::with(|st| st.comm(h).map(|_| ()))?;
    super::attr::delete_all_comm_attrs(h)?;
    state::with(|st| {
        if let Some(c) = st.comms.remove(h) {
            super::errh::release_errhandler(c.errh);
        }
        Ok(())
    })?;
    Ok(MPI_COMM_NULL)
}


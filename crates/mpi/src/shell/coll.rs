//! Collective operations, on intra- and intercommunicators.
//!
//! Each collective is one "plan" function: it checks the arguments (under
//! the lock) and returns a [`Build`], which makes the collective's schedule
//! from the engine's algorithms (the one chosen by the table in
//! `coll_select`) each time it is started. The three forms share it:
//! MPI_X starts the schedule and waits, MPI_IX starts it and returns its
//! request, MPI_X_init keeps the Build and starts it at each MPI_Start.
//!
//! Schedule messages travel on the communicator's collective context with
//! the collective's sequence number as tag, so they never match the user's
//! point-to-point messages nor another collective's. A persistent
//! collective takes its sequence number at initialisation (when every rank
//! calls it in the same order) and reuses it at every start, so starts need
//! not be ordered across ranks.

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};
use gridmpi_engine::coll::inter::Role;
use gridmpi_engine::coll::select::{self as sel, Input, Selector};
use gridmpi_engine::coll::{barrier, bcast, host, inter};
use gridmpi_engine::sched::{CommView, Schedule};
use gridmpi_engine::ReqId;

pub(crate) mod fast;
mod gathers;
mod host_inline;
mod reductions;

pub use gathers::*;
pub(crate) use reductions::*;

/// What a collective's schedule is built from when it starts.
pub struct Env<'a> {
    /// The communicator (for an intercommunicator: the remote group).
    pub view: CommView,
    /// For an intercommunicator: the local group, on its local context.
    pub local: Option<CommView>,
    pub tag: i32,
    pub sel: &'a Selector,
    /// The clusters of the communicator's ranks, when it spans several.
    pub sites: Option<Arc<gridmpi_engine::sched::Sites>>,
    /// The communicator's shared-memory area and the number this
    /// operation would take on it (see [`Env::host`]).
    pub host: Option<host::Host>,
    /// How many of the area's operation numbers the schedule took.
    host_used: std::cell::Cell<u64>,
}

impl Env<'_> {
    pub fn v(&self) -> CommView {
        self.view.clone()
    }

    pub fn local(&self) -> CommView {
        self.local.clone().expect("an intercommunicator's local view")
    }

    /// An empty schedule (nothing to do here).
    pub fn nothing(&self) -> Schedule {
        Schedule::new(self.v(), self.tag)
    }

    /// The table's input as this start sees it: without the area when the
    /// collective cannot use it now (a persistent one; every rank starts
    /// it alike, so every rank chooses alike).
    pub fn fit(&self, i: &Input) -> Input {
        match self.host {
            Some(_) => *i,
            None => Input { host_slot: 0, ..*i },
        }
    }

    /// The shared-memory area, for an algorithm the table chose because
    /// `Input::host_slot` said it fits: the operation takes its number.
    pub fn host(&self) -> host::Host {
        self.host_ops(1)
    }

    /// [`Env::host`] for an algorithm that runs `n` operations on the area
    /// one after the other, numbered from the one returned.
    pub fn host_ops(&self, n: u64) -> host::Host {
        self.host_used.set(n);
        self.host.clone().expect("the table chose the host area only where there is one")
    }
}

/// Makes a collective's schedule; its arguments were checked when it was made.
pub type Build = Box<dyn Fn(&Env) -> Schedule + Send + Sync>;

/// The views a collective on `c` runs on.
pub fn coll_views(c: &Comm) -> (CommView, Option<CommView>) {
    match &c.remote {
        None => (super::env::coll_view(c), None),
        Some(remote) => {
            let mine = c.coll_pids.clone();
            let local_ctx = c.local_ctx.unwrap_or(c.ctx);
            (
                CommView { ctx: c.ctx + 1, rank: c.rank, size: remote.size(), pids: remote.pids.clone().into(), local_pids: Some(mine.clone()) },
                Some(CommView { ctx: local_ctx + 1, rank: c.rank, size: c.size(), pids: mine, local_pids: None }),
            )
        }
    }
}

/// Which tag a collective runs on.
#[derive(Clone, Copy)]
enum Tag {
    /// The next of the blocking sequence.
    Blocking,
    /// The next of the nonblocking sequence.
    Nonblocking,
    /// One reserved at initialisation (persistent collectives).
    Reserved(i32),
}

/// A collective's plan, made knowing the tag its start will take (the
/// cluster map the plan sees depends on it after a restart: State::coll_map).
fn planned(st: &mut State, comm: MPI_Comm, tag: Tag, plan: impl FnOnce(&State) -> R<Build>) -> R<Build> {
    let c = st.comm(comm)?;
    st.planning_tag = Some(match tag {
        Tag::Reserved(t) => t,
        Tag::Blocking => c.peek_coll_tag(),
        Tag::Nonblocking => c.peek_icoll_tag(),
    });
    let b = plan(st);
    st.planning_tag = None;
    b
}

/// Build and start a collective's schedule on `comm`.
fn start(st: &mut State, name: &'static str, comm: MPI_Comm, build: &Build, tag: Tag) -> R<ReqId> {
    let (s, ctx) = schedule(st, comm, build, tag)?;
    start_schedule(st, name, ctx, s)
}

/// Build a collective's schedule on `comm` (taking its tag and, if it uses
/// the shared-memory area, its operation number there).
fn schedule(st: &mut State, comm: MPI_Comm, build: &Build, tag: Tag) -> R<(Schedule, u32)> {
    // A copy: a tool may change the choice (MPI_T) between collectives.
    let selector = st.coll_selector.clone();
    if st.rt.engine.ft_active() {
        st.ft_check_comm(st.comm(comm)?)?;
    }
    let c = st.comm_mut(comm)?;
    let tag_kind = tag;
    let tag = match tag {
        Tag::Reserved(t) => t,
        Tag::Blocking => c.next_coll_tag(),
        Tag::Nonblocking => c.next_icoll_tag(),
    };
    let (view, local) = coll_views(c);
    let ctx = view.ctx;
    // Operations on the area are numbered in the order members start them,
    // so only the blocking sequence uses it. Persistent collectives need
    // not be started in the same order everywhere; and blocking and
    // nonblocking ones keep separate sequences (as their tags do) so that a
    // program that starts them in different orders on different ranks
    // still matches them (mpi4py's Comm_iagree fallback does: an
    // MPI_Iallreduce on one rank before an MPI_Barrier, after it on others).
    let host = match (&c.host, tag_kind) {
        (HostColl::Area { area, next_op, slot }, Tag::Blocking) => {
            Some(host::Host { op: host::HostOp { area: area.clone(), op: *next_op }, slot: *slot })
        }
        _ => None,
    };
    let sites = if local.is_none() { comm_sites(st, comm, tag) } else { None };
    let env = Env { view, local, tag, sel: &selector, sites, host, host_used: Default::default() };
    let s = build(&env);
    let used = env.host_used.get();
    if used > 0 {
        if let HostColl::Area { next_op, .. } = &mut st.comm_mut(comm)?.host {
            *next_op += used;
        }
    }
    Ok((s, ctx))
}

fn start_schedule(st: &mut State, name: &'static str, ctx: u32, s: Schedule) -> R<ReqId> {
    let bytes = if st.rt.tracer.is_some() { s.bytes_sent() } else { 0 };
    let r = st.rt.engine.start_schedule(s);
    if let Some(t) = st.rt.tracer.as_mut() {
        t.coll_started(r, name, ctx, bytes);
    }
    st.progress()?;
    Ok(r)
}

/// At a communicator's first collective: when all its members are on this
/// host (and talk through shared memory), map its area for collectives.
/// Every member decides alike: the same members, the same setting.
fn set_up_host_area(st: &mut State, comm: MPI_Comm) -> R<()> {
    let c = st.comm(comm)?;
    if !matches!(c.host, HostColl::Unknown) {
        return Ok(());
    }
    let slot = st.rt.config.get_size("GRIDMPI_HOST_COLL");
    let usable = slot > 0 && !c.is_inter() && c.size() > 1 && c.group.pids.iter().all(|&p| st.rt.is_local(p));
    let host = match (&st.rt.shm_prefix, usable) {
        (Some(prefix), true) => {
            // The same name at every member, and no other communicator's:
            // context ids are never reused in a job, but the disjoint
            // communicators of one MPI_Comm_split share theirs, so the
            // lowest member names it too.
            let first = c.group.pids.iter().min().copied().unwrap_or(0);
            let name = format!("/{prefix}-host-{}-{first}", c.ctx);
            let area = crate::host_area::SharedArea::open(&name, c.size() as usize, slot as usize)
                .map_err(|e| err(MPI_ERR_NO_MEM, format!("cannot map the shared-memory area {name} for collectives: {e} (GRIDMPI_HOST_COLL=0 turns these areas off)")))?;
            HostColl::Area { area: Arc::new(area), next_op: 0, slot }
        }
        _ => HostColl::None,
    };
    st.comm_mut(comm)?.host = host;
    Ok(())
}

/// Links whose bandwidths differ by more than this factor are paced each
/// at its own (`Sites::link_bps`).
const LINKS_DIFFER: f64 = 1.5;

/// The clusters of an intracommunicator's ranks (None within one cluster),
/// with the WAN bandwidth between them (the smallest known) and the share
/// of it paced WAN phases aim at.
fn comm_sites(st: &State, comm: MPI_Comm, tag: i32) -> Option<Arc<gridmpi_engine::sched::Sites>> {
    let c = st.comm(comm).ok()?;
    let map = st.coll_map(c.ctx, Some(tag));
    if map.one_cluster(&c.group.pids) {
        return None;
    }
    let (of_rank, ids) = crate::clustermap::first_appearance(c.group.pids.iter().map(|&p| map.cluster_of(p)));
    if ids.len() < 2 {
        return None;
    }
    let mut bw: Option<u64> = None;
    let mut unknown = false;
    // Per ordered pair of the communicator's clusters (0 on the diagonal).
    let mut links = Vec::with_capacity(ids.len() * ids.len());
    for &a in &ids {
        for &b in &ids {
            let x = if a == b { None } else { map.links[a as usize][b as usize].bandwidth_bps };
            match x {
                Some(x) => bw = Some(bw.map_or(x, |y| y.min(x))),
                None if a != b => unknown = true,
                None => {}
            }
            links.push(x.unwrap_or(0));
        }
    }
    // Links that differ are paced each at its own bandwidth (coll/wan.rs);
    // "differ" as the start-up measurement tells a wrong topology file from
    // its own noise (15% between runs on the testbed).
    let widest = links.iter().copied().max().unwrap_or(0);
    let differ = !unknown && bw.is_some_and(|b| widest as f64 > LINKS_DIFFER * b as f64);
    let pace_share = st.rt.config.float("GRIDMPI_PACE_SHARE").unwrap_or(0.95).clamp(0.0, 1.0);
    Some(Arc::new(gridmpi_engine::sched::Sites {
        of_rank: of_rank.into(),
        count: ids.len() as u32,
        wan_bps: if unknown { None } else { bw },
        pace_share,
        wan_queue: st.rt.config.size("GRIDMPI_WAN_QUEUE").unwrap_or(0),
        link_bps: differ.then(|| links.into()),
    }))
}

/// Start a collective of the library's own on `comm` (the next blocking tag).
pub(crate) fn start_internal(st: &mut State, comm: MPI_Comm, build: &Build) -> R<ReqId> {
    start(st, "internal", comm, build, Tag::Blocking)
}

/// The error a finished schedule reported, as an MPI error.
pub fn schedule_error(msg: String) -> crate::errors::MpiError {
    let class = if msg.contains("truncated") || msg.contains("came up short") { MPI_ERR_TRUNCATE } else { MPI_ERR_OP };
    err(class, msg)
}

/// The blocking form: start and wait.
pub fn blocking(name: &'static str, comm: MPI_Comm, plan: impl FnOnce(&State) -> R<Build>) -> c_int {
    api(name, Target::Comm(comm), || {
        let started = state::with(|st| {
            set_up_host_area(st, comm)?;
            let b = planned(st, comm, Tag::Blocking, plan)?;
            let (s, ctx) = schedule(st, comm, &b, Tag::Blocking)?;
            match host_inline::try_start(st, s)? {
                Ok(inline) => Ok(Err(inline)),
                Err(s) => start_schedule(st, name, ctx, s).map(Ok),
            }
        })?;
        let r = match started {
            Ok(r) => r,
            Err(inline) => return host_inline::finish(inline),
        };
        let status = super::env::wait_engine(r)?;
        match state::with(|st| Ok(st.rt.engine.take_schedule_error(r)))? {
            Some(msg) if status.error.is_some() => Err(super::ft::error_with(status.error.unwrap(), msg)),
            Some(msg) => Err(schedule_error(msg)),
            None => Ok(()),
        }
    })
}

/// The nonblocking form: start and return the request.
pub fn nonblocking(name: &'static str, comm: MPI_Comm, request: *mut MPI_Request, plan: impl FnOnce(&State) -> R<Build>) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(request, "request")?;
        let h = state::with(|st| {
            set_up_host_area(st, comm)?;
            let b = planned(st, comm, Tag::Nonblocking, plan)?;
            let r = start(st, name, comm, &b, Tag::Nonblocking)?;
            Ok(st.reqs.insert(ReqEntry::Active { r, kind: ReqKind::Coll, comm }))
        })?;
        // SAFETY: checked non-null; the caller's request variable.
        unsafe { *request = h };
        Ok(())
    })
}

/// The persistent form: a request that starts the collective at each
/// MPI_Start.
pub fn persistent(name: &'static str, comm: MPI_Comm, info: MPI_Info, request: *mut MPI_Request, plan: impl FnOnce(&State) -> R<Build>) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(request, "request")?;
        let h = state::with(|st| {
            if info != MPI_INFO_NULL {
                super::info::check_info(info)?;
            }
            let build = Arc::new(planned(st, comm, Tag::Nonblocking, plan)?);
            let tag = st.comm_mut(comm)?.next_icoll_tag();
            let start = move || state::with(|st| start(st, name, comm, &build, Tag::Reserved(tag)));
            Ok(st.reqs.insert(ReqEntry::Persistent { spec: PersistentSpec::Coll { start: Arc::new(start), comm }, active: None }))
        })?;
        // SAFETY: checked non-null; the caller's request variable.
        unsafe { *request = h };
        Ok(())
    })
}

// ---- argument helpers ---------------------------------------------------------------

/// What a collective needs to know about its communicator.
#[derive(Clone, Copy, Debug)]
pub struct CommShape {
    pub rank: i32,
    /// Local group size.
    pub size: i32,
    /// Remote group size, for an intercommunicator.
    pub remote: Option<i32>,
    /// Clusters (sites) the communicator's processes are in.
    pub clusters: u32,
    /// Bytes per member of its shared-memory area (0: none).
    pub host_slot: u64,
}

impl CommShape {
    pub fn of(st: &State, comm: MPI_Comm) -> R<CommShape> {
        let c = st.comm(comm)?;
        // The map changes only at a restart from a checkpoint, which sets
        // map_switch for good: until then a count made once holds.
        let cached = st.map_switch.is_none();
        let clusters = match c.clusters.get() {
            Some(n) if cached => n,
            _ => {
                let map = st.coll_map(c.ctx, st.planning_tag);
                let pids = || c.group.pids.iter().chain(c.remote.iter().flat_map(|r| r.pids.iter()));
                let n = if map.one_cluster(pids()) {
                    pids().next().is_some() as u32
                } else {
                    crate::clustermap::first_appearance(pids().map(|&p| map.cluster_of(p))).1.len() as u32
                };
                if cached {
                    c.clusters.set(Some(n));
                }
                n
            }
        };
        let host_slot = match &c.host {
            HostColl::Area { slot, .. } => *slot,
            _ => 0,
        };
        Ok(CommShape { rank: c.rank, size: c.size(), remote: c.remote.as_ref().map(|r| r.size()), clusters, host_slot })
    }

    /// The algorithm table's input for `bytes` per rank (see
    /// `gridmpi_engine::coll::select::Input` for what `bytes` means).
    pub fn input(&self, bytes: u64) -> Input {
        Input { clusters: self.clusters, host_slot: self.host_slot, ..Input::new(self.size, bytes) }
    }

    /// The group the buffers' blocks refer to: the remote group of an
    /// intercommunicator, else the communicator's.
    pub fn peers(&self) -> i32 {
        self.remote.unwrap_or(self.size)
    }

    pub fn intra_only(&self, what: &str) -> R<()> {
        if self.remote.is_some() {
            return Err(err(MPI_ERR_COMM, format!("{what} is not defined on intercommunicators")));
        }
        Ok(())
    }
}

/// The root argument of a rooted collective.
#[derive(Clone, Copy, Debug)]
pub enum RootOf {
    Intra(i32),
    Inter(Role),
}

pub fn root_of(c: &CommShape, root: c_int) -> R<RootOf> {
    match c.remote {
        None if (0..c.size).contains(&root) => Ok(RootOf::Intra(root)),
        None => Err(err(MPI_ERR_ROOT, format!("invalid root {root} (communicator has {} ranks)", c.size))),
        Some(_) if root == MPI_ROOT => Ok(RootOf::Inter(Role::Root)),
        Some(_) if root == MPI_PROC_NULL => Ok(RootOf::Inter(Role::Idle)),
        Some(q) if (0..q).contains(&root) => Ok(RootOf::Inter(Role::Remote(root))),
        Some(q) => Err(err(
            MPI_ERR_ROOT,
            format!("invalid root {root} on an intercommunicator (MPI_ROOT, MPI_PROC_NULL or a remote rank below {q})"),
        )),
    }
}

pub fn in_place<T>(p: *const T) -> bool {
    std::ptr::eq(p as *const c_void, IN_PLACE)
}

/// MPI_IN_PLACE is not allowed on intercommunicators.
pub fn no_in_place_inter<T>(c: &CommShape, p: *const T) -> R<()> {
    if c.remote.is_some() && in_place(p) {
        return Err(err(MPI_ERR_ARG, "MPI_IN_PLACE cannot be used on an intercommunicator"));
    }
    Ok(())
}

/// The send and receive buffers of a collective may not be the same memory
/// (MPI 4.1, 2.6.3): a program that means it passes MPI_IN_PLACE. Only
/// when data moves (`carries_data`): empty buffers may share an address
/// (Python's empty arrays do). Callers check intracommunicators only
/// (as MPICH does).
pub fn not_aliased<T, U>(sendbuf: *const T, recvbuf: *const U, carries_data: bool) -> R<()> {
    let (s, r) = (sendbuf as *const c_void, recvbuf as *const c_void);
    if carries_data && !s.is_null() && !in_place(s) && std::ptr::eq(s, r) {
        return Err(err(MPI_ERR_BUFFER, "sendbuf and recvbuf are the same buffer (pass MPI_IN_PLACE as sendbuf to reuse it)"));
    }
    Ok(())
}

/// The send data may not overlap the receive blocks either (a program
/// passing `&recvbuf[rank]` as sendbuf means MPI_IN_PLACE too). Checked
/// where both are dense, the common case; a rank that let it pass would
/// wait in the collective for ranks that failed it. (For a scatter the
/// roles turn: the root's receive buffer against its send blocks.)
pub fn not_overlapping(send: Option<&UserBuf>, recv: &[UserBuf]) -> R<()> {
    let span = |b: &UserBuf| b.contiguous().filter(|_| b.len() > 0).map(|p| (p as usize, p as usize + b.len() as usize));
    let Some((s0, s1)) = send.and_then(span) else { return Ok(()) };
    let hit = |(r0, r1): (usize, usize)| r0 < s1 && s0 < r1;
    // All the blocks' bounds first: almost always another array.
    let bounds = recv.iter().filter_map(span).fold(None, |acc: Option<(usize, usize)>, (a, b)| Some(acc.map_or((a, b), |(x, y)| (x.min(a), y.max(b)))));
    if bounds.is_some_and(hit) && recv.iter().filter_map(span).any(hit) {
        return Err(err(MPI_ERR_BUFFER, "sendbuf overlaps recvbuf (pass MPI_IN_PLACE as sendbuf to send from the receive buffer)"));
    }
    Ok(())
}

/// MPI_IN_PLACE is only allowed at the root of a rooted collective.
pub fn in_place_only_at_root<T>(is_root: bool, p: *const T) -> R<()> {
    if !is_root && in_place(p) {
        return Err(err(MPI_ERR_BUFFER, "MPI_IN_PLACE is only allowed at the root"));
    }
    Ok(())
}

/// `count` items of `dt` at `base` plus `displ` extents of `dt`.
pub fn block_at(base: *const c_void, displ: i64, count: u64, dt: &Arc<Datatype>) -> R<UserBuf> {
    let off = displ.checked_mul(dt.extent()).ok_or_else(|| err(MPI_ERR_ARG, format!("displacement {displ} overflows")))?;
    user_buf((base as *const u8).wrapping_offset(off as isize) as *const c_void, count, dt.clone())
}

/// `count` items of `dt` at `base` plus `bytes`.
pub fn block_at_bytes(base: *const c_void, bytes: i64, count: u64, dt: &Arc<Datatype>) -> R<UserBuf> {
    user_buf((base as *const u8).wrapping_offset(bytes as isize) as *const c_void, count, dt.clone())
}

/// `n` equal blocks of `count` items of `dt`, one after the other.
pub fn blocks(base: *const c_void, n: i32, count: u64, dt: &Arc<Datatype>) -> R<Vec<UserBuf>> {
    // Sized at once (a collect of Results grows by doubling), as every
    // alltoall on one host builds two of these per call.
    let mut out = Vec::with_capacity(n.max(0) as usize);
    for r in 0..n as i64 {
        out.push(block_at(base, r * count as i64, count, dt)?);
    }
    Ok(out)
}

/// A C array argument of `n` elements.
pub fn array<'a, T>(p: *const T, n: i32, what: &str) -> R<&'a [T]> {
    if n <= 0 {
        return Ok(&[]);
    }
    check_ptr(p, what)?;
    // SAFETY: the standard makes the caller pass `n` elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

/// A counts array argument: `n` non-negative counts.
pub fn counts(p: Ints, n: i32, what: &str) -> R<Vec<u64>> {
    p.read(n.into(), what)?
        .into_iter()
        .enumerate()
        .map(|(i, c)| u64::try_from(c).map_err(|_| err(MPI_ERR_COUNT, format!("{what}[{i}] = {c} is negative"))))
        .collect()
}

/// Per-rank blocks from counts and displacements (in extents of `dt`).
pub fn blocks_v(base: *const c_void, counts: &[u64], displs: &[i64], dt: &Arc<Datatype>) -> R<Vec<UserBuf>> {
    let mut out = Vec::with_capacity(counts.len());
    for (&c, &d) in counts.iter().zip(displs) {
        out.push(block_at(base, d, c, dt)?);
    }
    Ok(out)
}

/// A datatype array argument, resolved.
pub fn types(st: &State, p: *const MPI_Datatype, n: i32, what: &str) -> R<Vec<Arc<Datatype>>> {
    array(p, n, what)?.iter().map(|&t| st.dtype(t)).collect()
}

// ---- barrier and broadcast ---------------------------------------------------------------

pub(crate) fn plan_barrier(st: &State, comm: MPI_Comm) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    if c.remote.is_some() {
        return Ok(Box::new(|e| inter::barrier(e.v(), e.local(), e.tag)));
    }
    let input = c.input(0);
    Ok(Box::new(move |e| match e.sel.barrier(&e.fit(&input)) {
        sel::Barrier::Dissemination => barrier::dissemination(e.v(), e.tag),
        sel::Barrier::Tree => barrier::tree(e.v(), e.tag),
        sel::Barrier::Host => host::barrier(e.v(), e.tag, &e.host()),
        sel::Barrier::Wan => match &e.sites {
            Some(sites) => gridmpi_engine::coll::wan::barrier(e.v(), sites, e.tag),
            None => barrier::dissemination(e.v(), e.tag),
        },
    }))
}

pub(crate) fn plan_bcast(st: &State, buffer: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    let root = root_of(&c, root)?;
    if let RootOf::Inter(Role::Idle) = root {
        return Ok(Box::new(|e| e.nothing()));
    }
    let buf = user_buf(buffer, check_count(count)?, st.dtype(datatype)?)?;
    match root {
        RootOf::Inter(role) => Ok(Box::new(move |e| inter::bcast(e.v(), e.local(), e.tag, buf.clone(), role))),
        RootOf::Intra(root) => {
            let input = c.input(buf.len());
            Ok(Box::new(move |e| match e.sel.bcast(&e.fit(&input)) {
                sel::Bcast::Binomial => bcast::binomial(e.v(), e.tag, buf.clone(), root),
                sel::Bcast::ScatterAllgather => bcast::scatter_allgather(e.v(), e.tag, buf.clone(), root),
                sel::Bcast::Pipeline => bcast::pipeline(e.v(), e.tag, buf.clone(), root, sel::BCAST_SEGMENT),
                sel::Bcast::Host => {
                    let pieces = e.host.as_ref().map_or(1, |h| host::bcast_pieces(buf.len(), h.slot));
                    host::bcast(e.v(), e.tag, &e.host_ops(pieces), buf.clone(), root)
                }
                sel::Bcast::Wan => match &e.sites {
                    Some(sites) => gridmpi_engine::coll::wan::bcast(e.v(), sites, e.tag, buf.clone(), root),
                    None => bcast::binomial(e.v(), e.tag, buf.clone(), root),
                },
            }))
        }
    }
}

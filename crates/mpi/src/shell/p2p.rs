//! Point-to-point communication.

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};
use crate::driver::Lone;
use gridmpi_engine::{Pid, RecvArgs, ReqId, SendArgs};

/// A datatype argument: a handle (checked now), or a datatype a request
/// already holds (a persistent request keeps its datatype alive, MPI 4.1
/// 5.1: the handle may be freed while the request still uses it).
pub trait TypeArg {
    /// The datatype of `count` items ([`State::p2p_dtype`]).
    fn resolve(self, st: &State, count: u64) -> R<Arc<gridmpi_datatype::Datatype>>;

    /// The bytes `count` items fill when they are one dense run from the
    /// buffer's start and the type is predefined (so valid, and nothing
    /// else to check), else None.
    fn dense_bytes(&self, st: &State, count: u64) -> Option<u64>;
}

impl TypeArg for MPI_Datatype {
    fn resolve(self, st: &State, count: u64) -> R<Arc<gridmpi_datatype::Datatype>> {
        st.p2p_dtype(self, count)
    }

    #[inline(always)]
    fn dense_bytes(&self, st: &State, count: u64) -> Option<u64> {
        let (dt, _) = st.predef.get(*self)?;
        if !dt.is_contiguous() || dt.true_lb() != 0 {
            return None;
        }
        count.checked_mul(dt.size())
    }
}

impl TypeArg for Arc<gridmpi_datatype::Datatype> {
    fn resolve(self, _: &State, _: u64) -> R<Arc<gridmpi_datatype::Datatype>> {
        Ok(self)
    }

    fn dense_bytes(&self, _: &State, _: u64) -> Option<u64> {
        None
    }
}

/// How long MPI_Recv watches its sender's ring on the quick road before
/// it posts the receive and waits the usual way.
const LONE_SPIN: std::time::Duration = std::time::Duration::from_micros(20);

/// What MPI_Recv's first look found.
enum FirstLook {
    /// The receive started, and its status if it completed at once.
    Done(Started, Option<gridmpi_engine::Status>),
    /// Its sender's ring was empty: look there again (the quick road),
    /// polling the probe of that ring meanwhile.
    Lone(RecvArgs, Pid, gridmpi_transport::shm::ring::SlotProbe),
}

/// A started operation: an engine request, or nothing (MPI_PROC_NULL, or a
/// buffered send whose data is already copied).
pub enum Started {
    Engine(ReqId, ReqKind),
    Done(ReqKind),
}

impl State {
    /// Start a send of any mode. Buffered sends copy into the attached buffer.
    pub fn start_send(
        &mut self,
        buf: *const c_void,
        count: MPI_Count,
        datatype: impl TypeArg,
        dest: c_int,
        tag: c_int,
        comm: MPI_Comm,
        mode: SendMode,
    ) -> R<Started> {
        let count = check_count(count)?;
        check_tag(tag)?;
        if mode == SendMode::Standard {
            if let Some(n) = datatype.dense_bytes(self, count) {
                if let Some(done) = self.send_dense(buf, n, dest, tag, comm)? {
                    return Ok(done);
                }
            }
        }
        let dt = datatype.resolve(self, count)?;
        let c = self.comm(comm)?;
        let Some(pid) = c.check_dest(dest)? else { return Ok(Started::Done(ReqKind::Send)) };
        let (ctx, src) = (c.ctx, c.rank);
        if self.rt.engine.ft_active() {
            self.ft_check_peer(ctx, Some(pid))?;
        }
        let ub = user_buf(buf, count, dt)?;
        if mode == SendMode::Buffered {
            return self.start_bsend(ub, ctx, src, pid, tag, comm);
        }
        let engine_mode = if mode == SendMode::Sync { gridmpi_engine::SendMode::Sync } else { gridmpi_engine::SendMode::Standard };
        let args = SendArgs { ctx, src, dest: pid, tag, buf: ub, mode: engine_mode };
        // A small message to a process on this host leaves now, needing no
        // request.
        let args = match self.rt.send_eager(args) {
            Ok(()) => return Ok(Started::Done(ReqKind::Send)),
            Err(args) => args,
        };
        let r = self.rt.engine.isend(args);
        Ok(Started::Engine(r, ReqKind::Send))
    }

    /// A standard-mode send of `n` bytes at `buf` (a predefined type's
    /// dense run) that may leave at once as one eager frame on this host:
    /// written straight from those bytes, with no buffer description or
    /// request. None leaves it to the usual road (which also reports a bad
    /// buffer).
    #[inline(always)]
    fn send_dense(&mut self, buf: *const c_void, n: u64, dest: c_int, tag: c_int, comm: MPI_Comm) -> R<Option<Started>> {
        if buf.is_null() && n > 0 {
            return Ok(None);
        }
        let c = self.comm(comm)?;
        let Some(pid) = c.check_dest(dest)? else { return Ok(Some(Started::Done(ReqKind::Send))) };
        let env = gridmpi_wire::Envelope { ctx: c.ctx, src: c.rank, tag };
        if self.rt.engine.ft_active() {
            return Ok(None);
        }
        // SAFETY: MPI makes the caller pass `n` readable bytes at `buf`.
        let bytes = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(buf as *const u8, n as usize) } };
        Ok(self.rt.send_eager_bytes(pid, env, bytes).then_some(Started::Done(ReqKind::Send)))
    }

    fn start_bsend(&mut self, ub: UserBuf, ctx: u32, src: i32, pid: u32, tag: i32, comm: MPI_Comm) -> R<Started> {
        let len = ub.len() as usize;
        // Blocks of buffered sends that have completed are free again.
        self.bsend_pending_done(None);
        // The communicator's own buffer, else its session's, else the
        // process's (MPI 4.1, 3.6).
        let c = self.comm(comm)?;
        let owner = match c.session {
            _ if c.bsend.is_some() => BufOwner::Comm(comm),
            Some(s) if self.sessions.get(s).is_some_and(|e| e.bsend.is_some()) => BufOwner::Session(s),
            _ => BufOwner::Process,
        };
        let Some(b) = self.bsend_buffer(owner) else {
            return Err(err(
                MPI_ERR_BUFFER,
                "no buffer is attached (call MPI_Buffer_attach, MPI_Comm_attach_buffer or MPI_Session_attach_buffer before MPI_Bsend)",
            ));
        };
        let (p, off, heap) = if b.automatic {
            let mut v = vec![0u8; len].into_boxed_slice();
            (v.as_mut_ptr(), 0, Some(v))
        } else {
            let Some(off) = b.alloc(len) else {
                return Err(err(
                    MPI_ERR_BUFFER,
                    format!("the attached buffer ({} bytes) has no room for a {len}-byte message", b.size),
                ));
            };
            // SAFETY: the block lies inside the attached buffer, which the
            // user keeps valid until it is detached (which waits for us).
            (unsafe { b.base.add(off) }, off, None)
        };
        // SAFETY: `p` has `len` bytes (the block or the heap copy).
        let copy = unsafe {
            ub.read_packed(0, std::slice::from_raw_parts_mut(p, len));
            UserBuf::new(p, len as u64, gridmpi_engine::sched::byte_type())
        };
        let r = self.rt.engine.isend(SendArgs { ctx, src, dest: pid, tag, buf: copy, mode: gridmpi_engine::SendMode::Standard });
        self.bsend_inflight.push(BsendInflight { r, owner, off, heap });
        Ok(Started::Done(ReqKind::Bsend { block: off }))
    }

    /// The buffer attached to `owner`, if any.
    pub fn bsend_buffer(&mut self, owner: BufOwner) -> Option<&mut BsendBuffer> {
        match owner {
            BufOwner::Process => self.bsend.as_mut(),
            BufOwner::Comm(c) => self.comm_mut(c).ok().and_then(|c| c.bsend.as_mut()),
            BufOwner::Session(s) => self.sessions.get_mut(s).and_then(|e| e.bsend.as_mut()),
        }
    }

    /// Release the blocks of finished buffered sends; true when none of
    /// `owner`'s (or nobody's, for None) is left.
    pub fn bsend_pending_done(&mut self, owner: Option<BufOwner>) -> bool {
        let engine = &mut self.rt.engine;
        let mut freed = Vec::new();
        self.bsend_inflight.retain(|b| {
            if engine.take(b.r).is_some() {
                freed.push((b.owner, b.off, b.heap.is_some()));
                false
            } else {
                true
            }
        });
        for (o, off, heap) in freed {
            if heap {
                continue;
            }
            if let Some(b) = self.bsend_buffer(o) {
                b.free(off);
            }
        }
        self.bsend_inflight.iter().all(|b| owner.is_some_and(|o| b.owner != o))
    }

    /// Reclaim buffered-send blocks and complete flush requests.
    pub fn progress_bsends(&mut self) {
        self.bsend_pending_done(None);
        let flushes = std::mem::take(&mut self.flushes);
        for (r, owner) in flushes {
            if self.bsend_inflight.iter().any(|b| b.owner == owner) {
                self.flushes.push((r, owner));
            } else {
                self.rt.engine.complete_external(r, Default::default());
            }
        }
    }

    pub fn start_recv(
        &mut self,
        buf: *mut c_void,
        count: MPI_Count,
        datatype: impl TypeArg,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
    ) -> R<Started> {
        match self.recv_args(buf, count, datatype, source, tag, comm, false)? {
            None => Ok(Started::Done(ReqKind::Recv)),
            Some((a, _)) => Ok(Started::Engine(self.rt.engine.irecv(a), ReqKind::Recv)),
        }
    }

    /// A receive's arguments, checked, and with `want_pid` the process of
    /// its source (None for MPI_ANY_SOURCE); None for MPI_PROC_NULL.
    /// (Inlined: a nonblocking receive, which needs no process, took 40
    /// more instructions a call through a call that returned it.)
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn recv_args(
        &mut self,
        buf: *mut c_void,
        count: MPI_Count,
        datatype: impl TypeArg,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        want_pid: bool,
    ) -> R<Option<(RecvArgs, Option<Pid>)>> {
        let count = check_count(count)?;
        let tag = check_recv_tag(tag)?;
        let dt = datatype.resolve(self, count)?;
        let c = self.comm(comm)?;
        if source == MPI_PROC_NULL {
            return Ok(None);
        }
        let src = c.check_source(source)?;
        let ctx = c.ctx;
        let pid_of = |s: i32| c.remote.as_ref().unwrap_or(&c.group).pids[s as usize];
        let pid = if want_pid { src.map(pid_of) } else { None };
        if self.rt.engine.ft_active() {
            self.ft_check_peer(ctx, src.map(pid_of))?;
        }
        let ub = user_buf(buf, count, dt)?;
        Ok(Some((RecvArgs { ctx, src, tag, buf: ub }, pid)))
    }

    /// MPI_Recv's quick road on one host: one look at the sender's ring for
    /// the message, taken from there with no request where the engine
    /// would match it to this receive at once
    /// ([`gridmpi_engine::Engine::take_lone_eager`]). `Wait` when the ring
    /// is empty; `Stop` sends the receive the usual road.
    fn lone_look(&mut self, a: &RecvArgs, pid: Pid) -> R<state::Look<gridmpi_engine::Status>> {
        let (Some(src), Some(dst)) = (a.src, a.buf.contiguous()) else { return Ok(state::Look::Stop) };
        if !self.rt.lone_road(pid) {
            return Ok(state::Look::Stop);
        }
        Ok(match self.rt.take_lone_eager(pid, (a.ctx, src, a.tag), dst, a.buf.len()) {
            Lone::Took(st) => {
                // A credit frame the engine now owes goes out at once.
                if self.rt.engine.has_actions() {
                    self.progress()?;
                }
                state::Look::Found(st)
            }
            Lone::Nothing => state::Look::Wait,
            Lone::Other => state::Look::Stop,
        })
    }

    /// A request handle for an operation started on `comm`.
    pub fn request_handle(&mut self, s: Started, comm: MPI_Comm) -> MPI_Request {
        match s {
            Started::Engine(r, kind) => self.reqs.insert(ReqEntry::Active { r, kind, comm }),
            Started::Done(kind) => self.reqs.insert(ReqEntry::Null { kind, comm }),
        }
    }
}

/// Complete a started operation synchronously; the receive's status.
fn finish_blocking(s: Started, status: *mut MPI_Status) -> R<()> {
    match s {
        Started::Done(ReqKind::Recv) => {
            // SAFETY: status is the caller's (or ignored).
            unsafe { put_status(status, &proc_null_status()) };
            Ok(())
        }
        Started::Done(_) => Ok(()),
        Started::Engine(r, kind) => {
            let st = super::ft::wait_interruptible(r)?;
            if kind == ReqKind::Recv {
                return finish_recv(&st, status);
            }
            if let Some(e) = st.error.filter(|e| *e != gridmpi_engine::ErrorKind::Truncate) {
                return Err(super::ft::error(e));
            }
            Ok(())
        }
    }
}

/// Report a completed receive's status (and its error, if any).
fn finish_recv(st: &gridmpi_engine::Status, status: *mut MPI_Status) -> R<()> {
    let s = recv_status(st);
    // SAFETY: status is the caller's (or ignored).
    unsafe { put_status(status, &s) };
    if s.MPI_ERROR == MPI_ERR_TRUNCATE {
        return Err(truncated(st));
    }
    if st.error == Some(gridmpi_engine::ErrorKind::Signature) {
        return Err(signature_mismatch(st));
    }
    if let Some(e) = st.error.filter(|e| *e != gridmpi_engine::ErrorKind::Truncate) {
        return Err(super::ft::error(e));
    }
    Ok(())
}

pub fn signature_mismatch(st: &gridmpi_engine::Status) -> crate::errors::MpiError {
    err(
        MPI_ERR_TYPE,
        format!(
            "message from rank {} with tag {}: its {} bytes end inside an element of the receive datatype (the send and receive type signatures do not match)",
            st.source, st.tag, st.count
        ),
    )
}

pub fn truncated(st: &gridmpi_engine::Status) -> crate::errors::MpiError {
    err(
        MPI_ERR_TRUNCATE,
        format!("message from rank {} with tag {} was truncated to the receive buffer's {} bytes", st.source, st.tag, st.count),
    )
}

/// Start, progress once, and if not done wait.
#[allow(clippy::too_many_arguments)]
pub(crate) fn blocking_send(name: &'static str, buf: *const c_void, count: MPI_Count, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, mode: SendMode) -> c_int {
    api(name, Target::Comm(comm), || {
        let s = state::with(|st| {
            let s = st.start_send(buf, count, dt, dest, tag, comm, mode)?;
            if let Started::Engine(r, _) = s {
                st.progress()?;
                if st.rt.engine.take(r).is_some() {
                    return Ok(Started::Done(ReqKind::Send));
                }
            }
            Ok(s)
        })?;
        finish_blocking(s, std::ptr::null_mut())
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn nonblocking_send(name: &'static str, buf: *const c_void, count: MPI_Count, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request, mode: SendMode) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(request, "request")?;
        let h = state::with(|st| {
            let s = st.start_send(buf, count, dt, dest, tag, comm, mode)?;
            if let Started::Engine(..) = s {
                st.progress()?;
            }
            Ok(st.request_handle(s, comm))
        })?;
        // SAFETY: checked non-null; the caller's request variable.
        unsafe { *request = h };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn blocking_recv(name: &'static str, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    api(name, Target::Comm(comm), || {
        // A message already here completes the receive at once: straight
        // from its sender's ring (the quick road), or matched by the engine;
        // otherwise the wait's first pass looks at what has arrived.
        let first = state::with(|st| {
            let Some((a, pid)) = st.recv_args(buf, count, datatype, source, tag, comm, true)? else {
                return Ok(FirstLook::Done(Started::Done(ReqKind::Recv), None));
            };
            if let Some(pid) = pid {
                match st.lone_look(&a, pid)? {
                    state::Look::Found(s) => return Ok(FirstLook::Done(Started::Done(ReqKind::Recv), Some(s))),
                    state::Look::Wait => {
                        if let Some(probe) = st.rt.lone_probe(pid) {
                            return Ok(FirstLook::Lone(a, pid, probe));
                        }
                    }
                    state::Look::Stop => {}
                }
            }
            let r = st.rt.engine.irecv(a);
            Ok(FirstLook::Done(Started::Engine(r, ReqKind::Recv), st.rt.engine.take(r)))
        })?;
        let (s, now) = match first {
            FirstLook::Done(s, now) => (s, now),
            // Its sender's ring was empty: a lone waiter watches for it a
            // while, then the receive is posted and waits the usual way.
            FirstLook::Lone(a, pid, probe) => match state::wait_looking(LONE_SPIN, || probe.ready(), |st| st.lone_look(&a, pid))? {
                Some(found) => (Started::Done(ReqKind::Recv), Some(found)),
                None => state::with(|st| {
                    let r = st.rt.engine.irecv(a);
                    Ok((Started::Engine(r, ReqKind::Recv), st.rt.engine.take(r)))
                })?,
            },
        };
        match now {
            Some(st) => finish_recv(&st, status),
            None => finish_blocking(s, status),
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn nonblocking_recv(name: &'static str, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(request, "request")?;
        let h = state::with(|st| {
            let s = st.start_recv(buf, count, datatype, source, tag, comm)?;
            Ok(st.request_handle(s, comm))
        })?;
        // SAFETY: checked non-null; the caller's request variable.
        unsafe { *request = h };
        Ok(())
    })
}

// ---- persistent requests ------------------------------------------------------

#[allow(clippy::too_many_arguments)]
pub(crate) fn send_init(
    name: &'static str, buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm,
    request: *mut MPI_Request, mode: SendMode,
) -> c_int {
    persistent(name, comm, request, |st| {
        // Check the arguments now, as the standard asks; the request keeps
        // the datatype (the program may free its handle before MPI_Start).
        let n = check_count(count)?;
        check_tag(tag)?;
        st.comm(comm)?.check_dest(dest)?;
        Ok(PersistentSpec::Send { buf, count, dt: st.p2p_dtype(datatype, n)?, dest, tag, comm, mode })
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn recv_init(
    name: &'static str, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    persistent(name, comm, request, |st| {
        let n = check_count(count)?;
        check_recv_tag(tag)?;
        let c = st.comm(comm)?;
        if source != MPI_PROC_NULL {
            c.check_source(source)?;
        }
        Ok(PersistentSpec::Recv { buf, count, dt: st.p2p_dtype(datatype, n)?, source, tag, comm })
    })
}

fn persistent(name: &'static str, comm: MPI_Comm, request: *mut MPI_Request, make: impl FnOnce(&State) -> R<PersistentSpec>) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(request, "request")?;
        let h = state::with(|st| {
            let spec = make(st)?;
            Ok(st.reqs.insert(ReqEntry::Persistent { spec, active: None }))
        })?;
        // SAFETY: checked non-null; the caller's request variable.
        unsafe { *request = h };
        Ok(())
    })
}

// ---- send-receive -------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
pub(crate) fn sendrecv(
    name: &'static str,
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int,
    recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, source: c_int, recvtag: c_int,
    comm: MPI_Comm, status: *mut MPI_Status,
) -> c_int {
    api(name, Target::Comm(comm), || {
        let (rs, ss) = state::with(|st| {
            let rs = st.start_recv(recvbuf, recvcount, recvtype, source, recvtag, comm)?;
            let ss = st.start_send(sendbuf, sendcount, sendtype, dest, sendtag, comm, SendMode::Standard)?;
            st.progress()?;
            Ok((rs, ss))
        })?;
        finish_blocking(ss, std::ptr::null_mut())?;
        finish_blocking(rs, status)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn sendrecv_replace(
    name: &'static str,
    buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, sendtag: c_int,
    source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status,
) -> c_int {
    api(name, Target::Comm(comm), || {
        // Send from a packed copy, receive into the buffer.
        let (rs, ss, _copy) = state::with(|st| {
            let n = check_count(count)?;
            let dt = st.dtype(datatype)?;
            let ub = user_buf(buf, n, dt)?;
            let mut copy = vec![0u8; ub.len() as usize];
            // SAFETY: the caller's buffer holds `count` items of the datatype.
            unsafe { ub.read_packed(0, &mut copy) };
            let ss = st.start_send(copy.as_ptr() as *const c_void, copy.len() as MPI_Count, MPI_BYTE, dest, sendtag, comm, SendMode::Standard)?;
            let rs = st.start_recv(buf, count, datatype, source, recvtag, comm)?;
            st.progress()?;
            Ok((rs, ss, copy))
        })?;
        finish_blocking(ss, std::ptr::null_mut())?;
        finish_blocking(rs, status)
    })
}

// ---- probe --------------------------------------------------------------------

fn probe_args(st: &State, source: c_int, tag: c_int, comm: MPI_Comm) -> R<Option<(u32, Option<i32>, Option<i32>)>> {
    let tag = check_recv_tag(tag)?;
    let c = st.comm(comm)?;
    if source == MPI_PROC_NULL {
        return Ok(None);
    }
    let src = c.check_source(source)?;
    Ok(Some((c.ctx, src, tag)))
}

fn probe_status(s: &gridmpi_engine::Status) -> MPI_Status {
    let mut m = empty_status();
    m.MPI_SOURCE = s.source;
    m.MPI_TAG = s.tag;
    set_count(&mut m, s.count as i64);
    m
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iprobe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    api("MPI_Iprobe", Target::Comm(comm), || {
        check_ptr(flag, "flag")?;
        let found = state::with(|st| {
            let Some((ctx, src, tag)) = probe_args(st, source, tag, comm)? else { return Ok(Some(proc_null_status())) };
            st.progress()?;
            Ok(st.rt.engine.iprobe(ctx, src, tag).map(|s| probe_status(&s)))
        })?;
        *flag = found.is_some() as c_int;
        if let Some(s) = found {
            put_status(status, &s);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    api("MPI_Probe", Target::Comm(comm), || {
        let args = state::with(|st| probe_args(st, source, tag, comm))?;
        let Some((ctx, src, tag)) = args else {
            put_status(status, &proc_null_status());
            return Ok(());
        };
        let mut found = None;
        state::wait_until(|st| {
            found = st.rt.engine.iprobe(ctx, src, tag);
            Ok(found.is_some())
        })?;
        put_status(status, &probe_status(&found.unwrap()));
        Ok(())
    })
}

fn message_handle(st: &mut State, m: gridmpi_engine::MsgId, comm: MPI_Comm) -> MPI_Message {
    st.msgs.insert(MsgEntry { msg: m, comm }) | (1 << 25)
}

/// Errors of MPI_Mrecv and MPI_Imrecv go to the handler of the
/// communicator the message was probed on.
fn message_target(message: *const MPI_Message) -> Target {
    if message.is_null() {
        return Target::NoComm;
    }
    // SAFETY: not NULL; the caller's message variable.
    let h = unsafe { *message };
    match state::with(|st| Ok(st.msgs.get(h & !(1 << 25)).map(|e| e.comm))) {
        Ok(Some(c)) => Target::Comm(c),
        _ => Target::NoComm,
    }
}

fn message_of(st: &mut State, h: MPI_Message) -> R<Option<(gridmpi_engine::MsgId, MPI_Comm)>> {
    if h == MPI_MESSAGE_NO_PROC {
        return Ok(None);
    }
    if h == MPI_MESSAGE_NULL {
        return Err(err(MPI_ERR_REQUEST, "the message is MPI_MESSAGE_NULL"));
    }
    let e = st
        .msgs
        .remove(h & !(1 << 25))
        .ok_or_else(|| err(MPI_ERR_REQUEST, format!("invalid message handle {h:#x}")))?;
    Ok(Some((e.msg, e.comm)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Improbe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    api("MPI_Improbe", Target::Comm(comm), || {
        check_ptr(flag, "flag")?;
        check_ptr(message, "message")?;
        let found = state::with(|st| {
            let Some((ctx, src, tag)) = probe_args(st, source, tag, comm)? else {
                return Ok(Some((MPI_MESSAGE_NO_PROC, proc_null_status())));
            };
            st.progress()?;
            Ok(st.rt.engine.improbe(ctx, src, tag).map(|(m, s)| (message_handle(st, m, comm), probe_status(&s))))
        })?;
        *flag = found.is_some() as c_int;
        if let Some((m, s)) = found {
            *message = m;
            put_status(status, &s);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Mprobe(source: c_int, tag: c_int, comm: MPI_Comm, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    api("MPI_Mprobe", Target::Comm(comm), || {
        check_ptr(message, "message")?;
        let args = state::with(|st| probe_args(st, source, tag, comm))?;
        let Some((ctx, src, tag)) = args else {
            *message = MPI_MESSAGE_NO_PROC;
            put_status(status, &proc_null_status());
            return Ok(());
        };
        let mut found = None;
        state::wait_until(|st| {
            if let Some((m, s)) = st.rt.engine.improbe(ctx, src, tag) {
                found = Some((message_handle(st, m, comm), probe_status(&s)));
            }
            Ok(found.is_some())
        })?;
        let (m, s) = found.unwrap();
        *message = m;
        put_status(status, &s);
        Ok(())
    })
}

/// Start receiving a probed message; also returns its communicator.
fn start_mrecv(st: &mut State, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, message: *mut MPI_Message) -> R<(Started, MPI_Comm)> {
    check_ptr(message, "message")?;
    let count = check_count(count)?;
    let dt = st.dtype(datatype)?;
    // SAFETY: checked non-null.
    let h = unsafe { *message };
    let m = message_of(st, h)?;
    unsafe { *message = MPI_MESSAGE_NULL };
    let Some((m, comm)) = m else { return Ok((Started::Done(ReqKind::Recv), MPI_COMM_SELF)) };
    let ub = user_buf(buf, count, dt)?;
    let r = st.rt.engine.imrecv(m, ub).ok_or_else(|| err(MPI_ERR_REQUEST, "the message was already received"))?;
    Ok((Started::Engine(r, ReqKind::Recv), comm))
}

pub(crate) fn mrecv(name: &'static str, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    api(name, message_target(message), || {
        let (s, _) = state::with(|st| start_mrecv(st, buf, count, datatype, message))?;
        finish_blocking(s, status)
    })
}

pub(crate) fn imrecv(name: &'static str, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, message: *mut MPI_Message, request: *mut MPI_Request) -> c_int {
    api(name, message_target(message), || {
        check_ptr(request, "request")?;
        let h = state::with(|st| {
            let (s, comm) = start_mrecv(st, buf, count, datatype, message)?;
            Ok(st.request_handle(s, comm))
        })?;
        // SAFETY: checked non-null; the caller's request variable.
        unsafe { *request = h };
        Ok(())
    })
}

// ---- nonblocking send-receive (MPI 4) -------------------------------------------

#[allow(clippy::too_many_arguments)]
pub(crate) fn isendrecv(
    name: &'static str,
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int,
    recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, source: c_int, recvtag: c_int,
    comm: MPI_Comm, request: *mut MPI_Request,
) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(request, "request")?;
        let h = state::with(|st| {
            let rs = st.start_recv(recvbuf, recvcount, recvtype, source, recvtag, comm)?;
            let ss = st.start_send(sendbuf, sendcount, sendtype, dest, sendtag, comm, SendMode::Standard)?;
            st.progress()?;
            Ok(st.pair_request(ss, rs, None, comm))
        })?;
        // SAFETY: checked non-null; the caller's request variable.
        unsafe { *request = h };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn isendrecv_replace(
    name: &'static str,
    buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, sendtag: c_int,
    source: c_int, recvtag: c_int, comm: MPI_Comm, request: *mut MPI_Request,
) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(request, "request")?;
        let h = state::with(|st| {
            let n = check_count(count)?;
            let dt = st.dtype(datatype)?;
            let ub = user_buf(buf, n, dt)?;
            let mut copy = vec![0u8; ub.len() as usize].into_boxed_slice();
            // SAFETY: the caller's buffer holds `count` items of the datatype.
            unsafe { ub.read_packed(0, &mut copy) };
            let ss = st.start_send(copy.as_ptr() as *const c_void, copy.len() as MPI_Count, MPI_BYTE, dest, sendtag, comm, SendMode::Standard)?;
            let rs = st.start_recv(buf, count, datatype, source, recvtag, comm)?;
            st.progress()?;
            Ok(st.pair_request(ss, rs, Some(copy), comm))
        })?;
        // SAFETY: checked non-null; the caller's request variable.
        unsafe { *request = h };
        Ok(())
    })
}

impl State {
    /// One request completing when both a send and a receive have: a
    /// schedule-like external request driven by a tiny watcher.
    fn pair_request(&mut self, send: Started, recv: Started, keep: Option<Box<[u8]>>, comm: MPI_Comm) -> MPI_Request {
        let r = self.rt.engine.external_request();
        let send_r = match send {
            Started::Engine(r, _) => Some(r),
            Started::Done(_) => None,
        };
        let recv_r = match recv {
            Started::Engine(r, _) => Some(r),
            Started::Done(_) => None,
        };
        self.pairs.push(PairOp { req: r, send: send_r, recv: recv_r, recv_status: None, _keep: keep });
        self.progress_pairs();
        self.reqs.insert(ReqEntry::Active { r, kind: ReqKind::Recv, comm })
    }

    /// Complete pair requests whose halves are done.
    pub fn progress_pairs(&mut self) {
        let engine = &mut self.rt.engine;
        self.pairs.retain_mut(|p| {
            if let Some(s) = p.send {
                if engine.take(s).is_some() {
                    p.send = None;
                }
            }
            if let Some(r) = p.recv {
                if let Some(st) = engine.take(r) {
                    p.recv = None;
                    p.recv_status = Some(st);
                }
            }
            if p.send.is_none() && p.recv.is_none() {
                let st = p.recv_status.unwrap_or(gridmpi_engine::Status {
                    source: MPI_PROC_NULL,
                    tag: MPI_ANY_TAG,
                    count: 0,
                    cancelled: false,
                    error: None,
                });
                engine.complete_external(p.req, st);
                false
            } else {
                true
            }
        });
    }
}

/// A send and a receive completing as one request (MPI_Isendrecv).
pub struct PairOp {
    pub req: ReqId,
    pub send: Option<ReqId>,
    pub recv: Option<ReqId>,
    pub recv_status: Option<gridmpi_engine::Status>,
    pub _keep: Option<Box<[u8]>>,
}

// ---- attached buffers --------------------------------------------------------

pub(crate) fn new_buffer(buffer: *mut c_void, size: MPI_Count) -> R<BsendBuffer> {
    if buffer == BUFFER_AUTOMATIC {
        return Ok(BsendBuffer { base: std::ptr::null_mut(), size: 0, used: Vec::new(), automatic: true });
    }
    let size = usize::try_from(size).map_err(|_| err(MPI_ERR_ARG, format!("invalid buffer size {size}")))?;
    Ok(BsendBuffer { base: buffer as *mut u8, size, used: Vec::new(), automatic: false })
}

/// Hand a detached buffer back to the user (MPI_BUFFER_AUTOMATIC if it was).
pub(crate) unsafe fn give_back(b: Option<BsendBuffer>, buffer_addr: *mut c_void, size: CountPtr) {
    let (p, n) = match b {
        Some(b) if b.automatic => (BUFFER_AUTOMATIC, 0),
        Some(b) => (b.base as *mut c_void, b.size as i64),
        None => (std::ptr::null_mut(), 0),
    };
    *(buffer_addr as *mut *mut c_void) = p;
    size.put(n);
}

pub(crate) fn buffer_attach(name: &'static str, buffer: *mut c_void, size: MPI_Count) -> c_int {
    api(name, Target::NoComm, || {
        let b = new_buffer(buffer, size)?;
        state::with(|st| {
            if st.bsend.is_some() {
                return Err(err(MPI_ERR_BUFFER, "a buffer is already attached (detach it first)"));
            }
            st.bsend = Some(b);
            Ok(())
        })
    })
}

pub(crate) fn buffer_detach(name: &'static str, buffer_addr: *mut c_void, size: CountPtr) -> c_int {
    api(name, Target::NoComm, || {
        check_ptr(buffer_addr, "buffer_addr")?;
        size.check("size")?;
        state::wait_until(|st| Ok(st.bsend_pending_done(Some(BufOwner::Process))))?;
        let b = state::with(|st| Ok(st.bsend.take()))?;
        // SAFETY: both checked non-null; the caller's variables.
        unsafe { give_back(b, buffer_addr, size) };
        Ok(())
    })
}

/// MPI_Buffer_flush: wait until the process's buffered sends are done.
pub(crate) fn buffer_flush() -> R<()> {
    state::wait_until(|st| Ok(st.bsend_pending_done(Some(BufOwner::Process))))
}

pub(crate) fn iflush(owner: BufOwner, comm: MPI_Comm, request: *mut MPI_Request) -> R<()> {
    check_ptr(request, "request")?;
    let h = state::with(|st| {
        if let BufOwner::Comm(c) = owner {
            st.comm(c)?;
        }
        let r = st.rt.engine.external_request();
        st.flushes.push((r, owner));
        st.progress_bsends();
        Ok(st.reqs.insert(ReqEntry::Active { r, kind: ReqKind::Send, comm }))
    })?;
    // SAFETY: checked non-null.
    unsafe { *request = h };
    Ok(())
}

pub(crate) fn comm_attach_buffer(name: &'static str, comm: MPI_Comm, buffer: *mut c_void, size: MPI_Count) -> c_int {
    api(name, Target::Comm(comm), || {
        let b = new_buffer(buffer, size)?;
        state::with(|st| {
            let c = st.comm_mut(comm)?;
            if c.bsend.is_some() {
                return Err(err(MPI_ERR_BUFFER, "a buffer is already attached to this communicator (detach it first)"));
            }
            c.bsend = Some(b);
            Ok(())
        })
    })
}

pub(crate) fn comm_detach_buffer(name: &'static str, comm: MPI_Comm, buffer_addr: *mut c_void, size: CountPtr) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(buffer_addr, "buffer_addr")?;
        size.check("size")?;
        state::with(|st| st.comm(comm).map(|_| ()))?;
        state::wait_until(|st| Ok(st.bsend_pending_done(Some(BufOwner::Comm(comm)))))?;
        let b = state::with(|st| Ok(st.comm_mut(comm)?.bsend.take()))?;
        // SAFETY: both checked non-null; the caller's variables.
        unsafe { give_back(b, buffer_addr, size) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_flush_buffer(comm: MPI_Comm) -> c_int {
    api("MPI_Comm_flush_buffer", Target::Comm(comm), || {
        state::with(|st| st.comm(comm).map(|_| ()))?;
        state::wait_until(|st| Ok(st.bsend_pending_done(Some(BufOwner::Comm(comm)))))
    })
}

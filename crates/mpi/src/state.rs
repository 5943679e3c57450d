//! The library's global state, its lock, and the entry/exit discipline of
//! every MPI function (argument errors, error handlers, panics).
//!
//! All MPI state lives in one [`State`] behind one mutex: MPI_THREAD_MULTIPLE
//! is provided by serialising calls. A blocking call releases the lock while
//! it waits, so other threads progress meanwhile. Below MPI_THREAD_MULTIPLE
//! the thread that called MPI_Init reaches the state without the lock until
//! another thread comes ([`go_solo`], solo.rs); [`Guard`] is either.
//!
//! Waiting threads ([`wait_until`]) take turns: at most one of them, the
//! *poller*, sleeps in the kernel on the transports' fds; the others wait on
//! a condition variable. Whoever makes progress that completes requests
//! (the poller after it wakes, or any thread inside an MPI call) wakes the
//! waiting threads, and the poller too (through its eventfd) when it is
//! not the one who progressed. So no thread sleeps while the message it
//! waits for has already been received by another, and when the poller
//! leaves, the next waiter takes its place.

use crate::errors::{err, MpiError, R};
use crate::ffi::*;
use crate::handles::{self, Kind, Table};
use crate::objects::*;
use crate::runtime::Runtime;
use gridmpi_engine::ReqId;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

pub const PHASE_NONE: u8 = 0;
pub const PHASE_RUNNING: u8 = 1;
pub const PHASE_FINALIZED: u8 = 2;

/// Where MPI is in its life: before MPI_Init, between Init and Finalize, after.
pub static PHASE: AtomicU8 = AtomicU8::new(PHASE_NONE);

static STATE: Mutex<Option<Box<State>>> = Mutex::new(None);

/// Where waiting threads that are not the poller wait (with [`STATE`]'s lock).
static WAITERS: Condvar = Condvar::new();

/// A waiter that is not the poller looks again after this long even if
/// nobody wakes it: a safety net, not the way it normally wakes.
const FOLLOWER_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(20);

/// Threads waiting in [`wait_until`].
#[derive(Default)]
pub struct Waiting {
    /// A thread sleeps in the kernel on the transports' fds.
    poller: bool,
    /// Threads waiting on [`WAITERS`].
    followers: usize,
    /// Threads spinning (without the lock) for signs of work.
    spinners: usize,
    /// Threads copying a piece of a single-copy read (without the lock).
    copiers: usize,
    /// The thread progressing now is in [`wait`].
    blocked: bool,
    /// The engine's completion count when waiters were last woken.
    seen: u64,
    /// The count of queued copies when waiters were last woken.
    seen_copies: u64,
    /// The progress thread (progress_thread.rs) is asked to stop.
    pub stop_progress_thread: bool,
}

impl Waiting {
    /// No other thread waits in MPI.
    pub fn nobody(&self) -> bool {
        !self.poller && self.followers == 0 && self.spinners == 0 && self.copiers == 0
    }
}

pub struct State {
    pub rt: Runtime,
    pub world: Comm,
    pub selfc: Comm,
    pub comms: Table<Comm>,
    pub groups: Table<std::sync::Arc<Group>>,
    pub types: Table<TypeEntry>,
    pub predef: Predefined,
    pub ops: Table<OpEntry>,
    pub keyvals: Table<Keyval>,
    pub reqs: Table<ReqEntry>,
    pub msgs: Table<MsgEntry>,
    pub wins: Table<WinEntry>,
    pub files: Table<crate::shell::file::FileEntry>,
    /// The error handler of MPI_FILE_NULL (MPI_ERRORS_RETURN at first):
    /// MPI_File_open's and MPI_File_delete's errors go there.
    pub file_null_errh: MPI_Errhandler,
    pub sessions: Table<SessionEntry>,
    pub errors: crate::errors::ErrorRegistry,
    /// Next context id this process proposes for a new communicator.
    pub next_ctx: u32,
    /// Context-id agreements in flight (threads).
    pub ctx_agreements: crate::shell::ctx_id::CtxAgreements,
    pub bsend: Option<BsendBuffer>,
    /// The thread level of the world model (MPI_Init_thread).
    pub thread_level: c_int,
    pub main_thread: std::thread::ThreadId,
    /// Threads waiting for progress (see [`Waiting`]).
    pub waiting: Waiting,
    /// Buffered sends in flight.
    pub bsend_inflight: Vec<BsendInflight>,
    /// MPI_Buffer_iflush / MPI_Comm_iflush_buffer requests: complete when
    /// the owner's buffered sends are.
    pub flushes: Vec<(ReqId, BufOwner)>,
    /// MPI_Isendrecv requests.
    pub pairs: Vec<crate::shell::p2p::PairOp>,
    /// One-sided operations done in their calls (shared memory) since the
    /// last progress (see shell/rma.rs: `issue`).
    pub rma_quiet_calls: u32,
    /// MPI_Comm_idup calls waiting for their context id.
    pub pending_idups: Vec<crate::shell::ctx_id::PendingIdup>,
    /// Storage the predefined attributes point to (MPI_TAG_UB, ...).
    pub attr_storage: Box<[c_int; 8]>,
    /// The handles MPI_Type_create_f90_{integer,real,complex} gave, by
    /// (call, p, r): a second call gives the first one's (they cannot be
    /// freed, so a new one each time would grow without end).
    pub f90_types: Vec<(&'static str, c_int, c_int, MPI_Datatype)>,
    /// The collective algorithms in force (shell/coll_select.rs).
    pub coll_selector: gridmpi_engine::coll::select::Selector,
    pub universe_size: Option<u32>,
    pub appnum: i32,
    /// Ports this process opened (MPI_Open_port).
    pub ports: crate::shell::dynamic::Ports,
    /// The parent of a spawned process (MPI_Comm_get_parent).
    pub parent: crate::shell::dynamic::Parent,
    /// After a restart: the collectives that still run on the image's
    /// cluster map (see [`crate::checkpoint::MapSwitch`]).
    pub map_switch: Option<crate::checkpoint::MapSwitch>,
    /// The tag of the collective being planned (shell/coll.rs), so that its
    /// plan sees the map its schedule will run on.
    pub planning_tag: Option<i32>,
    /// Fault tolerance (shell/ft.rs): by point-to-point context, how many
    /// of the engine's failed pids the communicator acknowledged
    /// (MPIX_Comm_failure_ack), and how many agreements it ran.
    pub ft_acked: std::collections::HashMap<u32, usize>,
    pub ft_agreements: std::collections::HashMap<u32, u32>,
}

// SAFETY: the state is only reached through the global mutex; raw pointers
// inside are user addresses that MPI allows to be used from any thread.
unsafe impl Send for State {}

type Slot = Option<Box<State>>;

/// The state, held: under its lock, or by the thread that alone calls MPI
/// (solo.rs).
pub struct Guard(Held);

enum Held {
    Locked(MutexGuard<'static, Slot>),
    Solo(crate::solo::Entered),
}

impl std::ops::Deref for Guard {
    type Target = Slot;
    fn deref(&self) -> &Slot {
        match &self.0 {
            Held::Locked(g) => g,
            // SAFETY: the slot lives in a static; the owner alone reaches
            // it while `Entered` lives (solo.rs).
            Held::Solo(e) => unsafe { &*e.slot::<Slot>() },
        }
    }
}

impl std::ops::DerefMut for Guard {
    fn deref_mut(&mut self) -> &mut Slot {
        match &mut self.0 {
            Held::Locked(g) => g,
            // SAFETY: as in deref.
            Held::Solo(e) => unsafe { &mut *e.slot::<Slot>() },
        }
    }
}

impl Guard {
    /// The lock itself (to wait on [`WAITERS`]).
    fn into_locked(self) -> MutexGuard<'static, Slot> {
        match self.0 {
            Held::Locked(g) => g,
            Held::Solo(e) => {
                drop(e);
                lock_mutex()
            }
        }
    }
}

/// The lock, once no thread reaches the state without it.
fn lock_mutex() -> MutexGuard<'static, Slot> {
    loop {
        if crate::solo::foreign() {
            crate::solo::revoke();
        }
        let g = STATE.lock().unwrap_or_else(|p| p.into_inner());
        // The owner's privilege began while we waited for the lock.
        if !crate::solo::foreign() {
            return g;
        }
    }
}

pub fn lock() -> Guard {
    match crate::solo::enter() {
        Some(e) => Guard(Held::Solo(e)),
        None => Guard(Held::Locked(lock_mutex())),
    }
}

pub fn install(st: Box<State>) {
    *lock() = Some(st);
}

pub fn uninstall() -> Option<Box<State>> {
    let mut g = lock();
    crate::solo::end();
    g.take()
}

/// From now on the calling thread alone calls MPI (MPI_Init asked for less
/// than MPI_THREAD_MULTIPLE): it reaches the state without the lock until
/// another thread comes (solo.rs).
pub fn go_solo() {
    let mut g = lock_mutex();
    if g.is_some() {
        crate::solo::begin(&mut *g as *mut Slot);
    }
}

fn not_running() -> MpiError {
    if crate::lifecycle::ended() {
        err(MPI_ERR_OTHER, "MPI has been finalized")
    } else {
        err(MPI_ERR_OTHER, "MPI is not initialized (call MPI_Init or MPI_Session_init first)")
    }
}

/// The world model is on: between MPI_Init and MPI_Finalize.
pub fn world_active() -> bool {
    PHASE.load(Ordering::Acquire) == PHASE_RUNNING
}

/// Run `f` on the state, under the lock. Reductions with user functions
/// that became ready meanwhile run afterwards, without the lock.
pub fn with<T>(f: impl FnOnce(&mut State) -> R<T>) -> R<T> {
    let mut g = lock();
    let st = g.as_mut().ok_or_else(not_running)?;
    let out = f(st);
    let user_work = st.rt.engine.has_user_steps();
    drop(g);
    if user_work {
        run_user_steps()?;
    }
    out
}

/// Run the user-function reductions of collective schedules with the lock
/// released (the functions may call MPI), then let the schedules go on.
pub fn run_user_steps() -> R<()> {
    loop {
        let steps = {
            let mut g = lock();
            let st = g.as_mut().ok_or_else(not_running)?;
            st.rt.engine.take_user_steps()
        };
        if steps.is_empty() {
            return Ok(());
        }
        for s in steps {
            // SAFETY: the step's schedule stays alive until it is reported done.
            let r = unsafe { s.run() };
            let mut g = lock();
            let st = g.as_mut().ok_or_else(not_running)?;
            st.rt.engine.user_step_done(s.id, r);
            st.progress()?;
        }
    }
}

/// Make progress until `done` says so, releasing the lock while waiting.
pub fn wait_until(done: impl FnMut(&mut State) -> R<bool>) -> R<()> {
    wait(true, done)
}

/// [`wait_until`], but `done` is asked first, before any progress: for
/// waits on what may have completed already (a request whose send left at
/// once, a receive that found its message).
pub fn wait_checked(done: impl FnMut(&mut State) -> R<bool>) -> R<()> {
    wait_from(true, true, done)
}

/// [`wait_until`]; with `spin` false the caller goes to sleep at once when
/// nothing moves (the progress thread: it must not take a core from the
/// application).
pub fn wait(spin: bool, done: impl FnMut(&mut State) -> R<bool>) -> R<()> {
    wait_from(spin, false, done)
}

fn wait_from(spin: bool, check_first: bool, mut done: impl FnMut(&mut State) -> R<bool>) -> R<()> {
    let mut g = lock();
    if let Some(st) = g.as_mut() {
        st.rt.check_outage_if_down();
        if check_first && done(st)? {
            return Ok(());
        }
    }
    loop {
        let st = g.as_mut().ok_or_else(not_running)?;
        st.waiting.blocked = true;
        let progressed = st.progress();
        st.waiting.blocked = false;
        progressed?;
        if st.rt.engine.has_user_steps() {
            drop(g);
            run_user_steps()?;
            g = lock();
            continue;
        }
        if done(st)? {
            return Ok(());
        }
        if let Some(piece) = st.rt.claim_copy() {
            // Copy a piece of a single-copy read without the lock, so the
            // other threads go on meanwhile (and may copy other pieces).
            st.waiting.copiers += 1;
            drop(g);
            let ok = piece.run();
            g = lock();
            let st = g.as_mut().ok_or_else(not_running)?;
            st.waiting.copiers -= 1;
            st.rt.finish_copy(piece, ok);
            continue;
        }
        if spin && SpinPolicy::allowed(st) {
            // Wait for a sign of work without the lock, briefly.
            let policy = SpinPolicy::of(st);
            let arrivals = st.rt.arrivals.clone();
            let releases = st.rt.engine.host_waits();
            let room = st.rt.room_probe();
            st.waiting.spinners += 1;
            drop(g);
            let found = spin_for_arrivals(&arrivals, &releases, room.as_ref(), policy);
            g = lock();
            let st = g.as_mut().ok_or_else(not_running)?;
            st.waiting.spinners -= 1;
            if found {
                continue;
            }
            // Nothing came: one more pass before sleeping.
            st.progress()?;
            if st.rt.engine.has_user_steps() {
                continue;
            }
            if done(st)? {
                return Ok(());
            }
        }
        let st = g.as_mut().ok_or_else(not_running)?;
        if st.waiting.poller {
            // Another thread sleeps on the fds: wait until someone progresses.
            st.waiting.followers += 1;
            g = Guard(Held::Locked(WAITERS.wait_timeout(g.into_locked(), FOLLOWER_TIMEOUT).unwrap_or_else(|p| p.into_inner()).0));
            if let Some(st) = g.as_mut() {
                st.waiting.followers -= 1;
            }
            continue;
        }
        if !st.rt.prepare_sleep() {
            st.rt.after_sleep();
            continue;
        }
        st.rt.check_outage();
        let fd = st.rt.sleep_fd();
        let timeout = st.rt.sleep_timeout();
        st.waiting.poller = true;
        drop(g);
        gridmpi_transport::progress::Poller::sleep(fd, timeout);
        g = lock();
        if let Some(st) = g.as_mut() {
            st.waiting.poller = false;
            st.rt.after_sleep();
            // The others look again (one of them may take over the fds).
            if st.waiting.followers > 0 {
                WAITERS.notify_all();
            }
        }
    }
}

/// What a [`wait_looking`] look found.
pub enum Look<T> {
    Found(T),
    /// Nothing yet: wait for a sign of work and look again.
    Wait,
    /// Give up: the caller goes the usual road.
    Stop,
}

/// Look with `look` until it finds what it waits for, stops, or `budget`
/// is spent, polling `ready` between looks without the lock: for a caller
/// that waits for one frame from one peer and reads it itself (a blocking
/// receive's quick road), with no progress passes. None when it stopped or
/// ran out of time. Only a lone waiter on a core of its own polls; anyone
/// else looks once.
pub fn wait_looking<T>(budget: std::time::Duration, ready: impl Fn() -> bool, mut look: impl FnMut(&mut State) -> R<Look<T>>) -> R<Option<T>> {
    let start = Instant::now();
    let mut g = lock();
    loop {
        let st = g.as_mut().ok_or_else(not_running)?;
        match look(st)? {
            Look::Found(t) => return Ok(Some(t)),
            Look::Stop => return Ok(None),
            Look::Wait => {}
        }
        if !st.waiting.nobody() || st.rt.oversubscribed || st.rt.spin_alone.is_zero() {
            return Ok(None);
        }
        st.waiting.spinners += 1;
        drop(g);
        // The clock is read every 64 polls.
        let mut polls = 0u32;
        let found = loop {
            if ready() {
                break true;
            }
            polls = polls.wrapping_add(1);
            if polls % 64 == 0 && start.elapsed() >= budget {
                break false;
            }
            std::hint::spin_loop();
        };
        g = lock();
        let st = g.as_mut().ok_or_else(not_running)?;
        st.waiting.spinners -= 1;
        if !found {
            return Ok(None);
        }
    }
}

/// A communicator's shared area and the operation on it this process waits for.
pub(crate) type HostWait = (std::sync::Arc<dyn gridmpi_engine::coll::host::HostArea>, u64);

/// How a blocked call waits for a sign of work before sleeping.
#[derive(Clone, Copy)]
pub(crate) struct SpinPolicy {
    /// How long to poll while the core is ours.
    spin: std::time::Duration,
    /// How long to yield between polls once the core is shared.
    yield_for: std::time::Duration,
    /// Start yielding at once (ranks outnumber cores).
    yielding: bool,
}

impl SpinPolicy {
    /// Whether a blocked call may wait without the lock before sleeping.
    pub(crate) fn allowed(st: &State) -> bool {
        !st.rt.spin.is_zero() || st.rt.oversubscribed
    }

    pub(crate) fn of(st: &State) -> SpinPolicy {
        // Yield from the start when ranks outnumber cores, or when another
        // thread of ours is copying: it may share our core.
        let yielding = st.rt.oversubscribed || st.waiting.copiers > 0;
        let w = &st.waiting;
        let alone = w.spinners == 0 && w.followers == 0 && !w.poller && w.copiers == 0;
        SpinPolicy { spin: if alone { st.rt.spin_alone } else { st.rt.spin }, yield_for: st.rt.yield_for, yielding }
    }
}

/// A sched_yield that took longer than this let another task run on our
/// core: we share it, so polling would take time from whoever runs there
/// (perhaps the peer we wait for).
const SHARED_CORE_YIELD: std::time::Duration = std::time::Duration::from_micros(5);

/// Poll `arrivals`, and the release words of `releases`, without the lock
/// until a sign of work comes (true) or the policy's time is up (false). While the core is ours the call polls
/// (busy, the lowest latency); now and then it yields once to see whether
/// it shares the core, and from then on, or from the start when ranks
/// outnumber cores, it yields between polls so a peer on the same core can
/// run and send what we wait for. The clock is read and the sockets asked
/// every few polls (both cost more than the shared-memory check).
pub(crate) fn spin_for_arrivals(arrivals: &gridmpi_transport::progress::Arrivals, releases: &[HostWait], room: Option<&gridmpi_transport::shm::ring::RoomProbe>, policy: SpinPolicy) -> bool {
    let epoch = arrivals.epoch();
    // A host-area operation we wait on is released, or a ring our frames
    // wait for room in was read from: no frame says so.
    let released = || releases.iter().any(|(area, op)| area.released(*op)) || room.is_some_and(|r| r.freed());
    let glance = || {
        for _ in 0..16 {
            if arrivals.any(epoch, false) || released() {
                return true;
            }
            std::hint::spin_loop();
        }
        false
    };
    // A first look before reading the clock: what arrives meanwhile is
    // found a clock read sooner.
    if !policy.yielding && glance() {
        return true;
    }
    let start = Instant::now();
    let mut yielding = policy.yielding;
    let mut rounds = 0u32;
    loop {
        rounds = rounds.wrapping_add(1);
        if yielding {
            // SAFETY: plain syscall.
            unsafe { libc::sched_yield() };
            if arrivals.any(epoch, rounds % 2 == 0) || released() {
                return true;
            }
        } else {
            if glance() || arrivals.any(epoch, rounds % 4 == 0) {
                return true;
            }
            if rounds % 64 == 0 {
                let t = Instant::now();
                // SAFETY: plain syscall.
                unsafe { libc::sched_yield() };
                yielding = t.elapsed() > SHARED_CORE_YIELD;
            }
        }
        let budget = if yielding { policy.yield_for } else { policy.spin };
        if start.elapsed() >= budget {
            return false;
        }
    }
}

/// Wake every waiting thread, whatever completed.
pub fn wake_all(st: &mut State) {
    st.rt.arrivals.bump();
    WAITERS.notify_all();
    st.rt.wake_sleepers();
}

/// Which error handler applies to an error.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    Comm(MPI_Comm),
    /// A window: its error handler (MPI_ERRORS_ARE_FATAL by default); an
    /// invalid window's errors go where NoComm's do.
    Win(MPI_Win),
    /// A file (its handle's value): its error handler (MPI_ERRORS_RETURN by
    /// default); MPI_FILE_NULL's handler for an invalid file or none.
    File(c_int),
    /// No communicator is involved (or the one given is invalid): since
    /// MPI 4.0 such errors are raised on MPI_COMM_SELF.
    NoComm,
    /// A session's handler (an invalid session: as NoComm).
    Session(MPI_Session),
    /// MPI_Session_init: the handler the call was given (there is no
    /// session yet, and perhaps no runtime).
    Handler(MPI_Errhandler),
}

/// Run an MPI function body: errors and panics become error codes handled
/// by the target's error handler.
pub fn api(name: &'static str, target: Target, f: impl FnOnce() -> R<()>) -> c_int {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => report(name, target, e),
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            report(name, target, err(MPI_ERR_INTERN, format!("internal error in GridMPI: {what}")))
        }
    }
}

/// Like [`api`] for functions returning a value rather than an error code.
pub fn api_value<T>(name: &'static str, default: T, f: impl FnOnce() -> R<T>) -> T {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            report(name, Target::NoComm, e);
            default
        }
        Err(_) => {
            report(name, Target::NoComm, err(MPI_ERR_INTERN, "internal error in GridMPI"));
            default
        }
    }
}

enum Handling {
    Return,
    Fatal,
    Comm(MPI_Comm_errhandler_function, MPI_Comm),
    Win(MPI_Win_errhandler_function, MPI_Win),
    File(MPI_File_errhandler_function, MPI_File),
    Session(MPI_Session_errhandler_function, MPI_Session),
}

/// How a handler handles an error raised on `obj` (a communicator, a
/// window or a session handle, as the handler's kind says).
fn handling(eh: MPI_Errhandler, obj: c_int) -> Handling {
    match eh {
        MPI_ERRORS_RETURN => Handling::Return,
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT => Handling::Fatal,
        h => match crate::shell::errh::errhandler_func(h) {
            Some(ErrhFunc::Comm(f)) => Handling::Comm(f, obj),
            Some(ErrhFunc::Win(f)) => Handling::Win(f, obj),
            Some(ErrhFunc::File(f)) => Handling::File(f, crate::shell::file::file_ptr(obj)),
            Some(ErrhFunc::Session(f)) => Handling::Session(f, obj),
            _ => Handling::Fatal,
        },
    }
}

/// The null handle of the kind of object error handler `h` is for.
fn null_object_of(h: MPI_Errhandler) -> c_int {
    match crate::shell::errh::errhandler_func(h) {
        Some(ErrhFunc::Comm(_)) => MPI_COMM_NULL,
        Some(ErrhFunc::Win(_)) => MPI_WIN_NULL,
        _ => MPI_SESSION_NULL,
    }
}

/// Turn an error into a code and apply the error handler.
pub fn report(name: &'static str, target: Target, e: MpiError) -> c_int {
    let mut g = lock();
    let Some(st) = g.as_mut() else {
        drop(g);
        return report_without_runtime(name, target, e);
    };
    let rank = st.rt.me;
    let message = format!("{name}(rank {rank}): {}", e.msg);
    let code = match e.code {
        Some(c) => c,
        None => st.errors.code_for(e.class, message.clone()),
    };
    let handling = match target {
        Target::Win(w) if st.wins.get(w).is_some() => handling(st.wins.get(w).map_or(MPI_ERRORS_ARE_FATAL, |e| e.errh), w),
        Target::Session(s) if st.sessions.get(s).is_some() => handling(st.sessions.get(s).map_or(MPI_ERRORS_ARE_FATAL, |e| e.errh), s),
        // No object yet: the handler is given its kind's null handle.
        Target::Handler(h) => handling(h, null_object_of(h)),
        Target::File(f) => match st.files.get(f) {
            Some(e) => handling(e.errh, f),
            None => handling(st.file_null_errh, 0),
        },
        Target::Comm(c) if st.comm(c).is_ok() => handling(st.comm(c).map_or(MPI_ERRORS_ARE_FATAL, |c| c.errh), c),
        // MPI_COMM_SELF's handler (the initial one, MPI_ERRORS_ARE_FATAL,
        // unless the world model changed it).
        _ => handling(st.selfc.errh, MPI_COMM_SELF),
    };
    match handling {
        Handling::Return => code,
        Handling::Fatal => {
            let msg = st.errors.string_of(code).unwrap_or(message);
            eprintln!("GridMPI: {msg}");
            st.rt.pmi.abort(1, &msg)
        }
        // The handler is given "the error code to be returned by the MPI
        // routine" (MPI 4.1, 9.3) by reference: what it leaves there is
        // returned, as MPICH does (Open MPI returns the original code).
        Handling::Comm(f, comm) => {
            drop(g);
            let mut c = comm;
            let mut code_v = code;
            // SAFETY: calling the user's handler as MPI specifies.
            unsafe { f(&mut c, &mut code_v) };
            code_v
        }
        Handling::Win(f, win) => {
            drop(g);
            let mut w = win;
            let mut code_v = code;
            // SAFETY: calling the user's handler as MPI specifies.
            unsafe { f(&mut w, &mut code_v) };
            code_v
        }
        Handling::File(f, file) => {
            drop(g);
            let mut fh = file;
            let mut code_v = code;
            // SAFETY: calling the user's handler as MPI specifies.
            unsafe { f(&mut fh, &mut code_v) };
            code_v
        }
        Handling::Session(f, session) => {
            drop(g);
            let mut s = session;
            let mut code_v = code;
            // SAFETY: calling the user's handler as MPI specifies.
            unsafe { f(&mut s, &mut code_v) };
            code_v
        }
    }
}

/// An error while no runtime runs (before MPI starts, or after it ended):
/// MPI_Session_init's own handler applies to its errors; anything else
/// ends the process with the message.
fn report_without_runtime(name: &'static str, target: Target, e: MpiError) -> c_int {
    let code = e.code.unwrap_or(e.class);
    if let Target::Handler(h) = target {
        match handling(h, MPI_SESSION_NULL) {
            Handling::Return => return code,
            Handling::Session(f, s) => {
                let (mut s, mut code_v) = (s, code);
                // SAFETY: calling the user's handler as MPI specifies.
                unsafe { f(&mut s, &mut code_v) };
                return code;
            }
            _ => {}
        }
    }
    let when = if crate::lifecycle::ended() {
        "after MPI was finalized"
    } else if PHASE.load(Ordering::Acquire) == PHASE_NONE {
        "before MPI_Init"
    } else {
        "after MPI_Finalize"
    };
    eprintln!("GridMPI: {name}: {} (called {when})", e.msg);
    std::process::exit(1);
}

impl State {
    /// The cluster map the collective `tag` of the communicator with
    /// context `ctx` runs on (the current one, or after a restart the
    /// image's for collectives some rank had begun before).
    pub fn coll_map(&self, ctx: u32, tag: Option<i32>) -> &crate::clustermap::ClusterMap {
        match (&self.map_switch, tag) {
            (Some(switch), Some(tag)) if switch.before(ctx, tag) => &switch.old,
            _ => &self.rt.map,
        }
    }

    /// Progress the runtime and the collective schedules.
    pub fn progress(&mut self) -> R<bool> {
        // Copies are left to blocked threads, which do them without the lock;
        // a call that is not blocked copies only when nobody else waits.
        let w = &self.waiting;
        self.rt.copy_inline = !w.blocked && !w.poller && w.followers == 0 && w.spinners == 0 && w.copiers == 0;
        let mut any = false;
        loop {
            let a = match self.rt.progress() {
                Ok(a) => a,
                Err(f) => self.fatal(&f.0),
            };
            if self.rt.fault_tolerant || self.rt.engine.ft_active() {
                crate::ft::after_progress(self);
            }
            let b = self.rt.engine.progress_schedules() | self.rt.engine.progress_partitioned();
            let b = self.rt.engine.progress_rma() | b;
            if !self.pairs.is_empty() {
                self.progress_pairs();
            }
            self.progress_idups();
            if let Some(done) = self.rt.engine.finished_schedules.as_mut() {
                if !done.is_empty() {
                    let done = std::mem::take(done);
                    if let Some(t) = self.rt.tracer.as_mut() {
                        for r in done {
                            t.coll_finished(r);
                        }
                    }
                }
            }
            if !self.bsend_inflight.is_empty() || !self.flushes.is_empty() {
                self.progress_bsends();
            }
            any |= a || b;
            // The driver ran until nothing moved; another pass is needed
            // only for what the schedules (or the composite requests above)
            // started since.
            if !b && !self.rt.engine.has_actions() {
                break;
            }
        }
        self.wake_waiters();
        Ok(any)
    }

    /// Wake the threads waiting in [`wait_until`] if requests completed
    /// since they were last woken: their request may be among them.
    /// New copying to take on wakes them too: a waiting thread copies it
    /// without the lock while this one goes on.
    pub fn wake_waiters(&mut self) {
        let (done, copies) = (self.rt.engine.completions(), self.rt.copies_queued());
        if done == self.waiting.seen && copies == self.waiting.seen_copies {
            return;
        }
        self.waiting.seen = done;
        self.waiting.seen_copies = copies;
        self.rt.arrivals.bump();
        if self.waiting.followers > 0 {
            WAITERS.notify_all();
        }
        if self.waiting.poller {
            self.rt.wake_sleepers();
        }
    }

    /// A failure of the runtime (lost peer, protocol error): end the job.
    pub fn fatal(&mut self, msg: &str) -> ! {
        let m = format!("rank {}: {}", self.rt.me, msg);
        eprintln!("GridMPI: fatal error on {m}");
        self.rt.pmi.abort(1, &m)
    }

    pub fn comm(&self, h: MPI_Comm) -> R<&Comm> {
        match h {
            MPI_COMM_WORLD | MPI_COMM_SELF if !world_active() => Err(world_unavailable(h)),
            MPI_COMM_WORLD => Ok(&self.world),
            MPI_COMM_SELF => Ok(&self.selfc),
            MPI_COMM_NULL => Err(err(MPI_ERR_COMM, "the communicator is MPI_COMM_NULL")),
            _ => self.comms.get(h).ok_or_else(|| err(MPI_ERR_COMM, format!("invalid communicator handle {h:#x}"))),
        }
    }

    pub fn comm_mut(&mut self, h: MPI_Comm) -> R<&mut Comm> {
        match h {
            MPI_COMM_WORLD | MPI_COMM_SELF if !world_active() => Err(world_unavailable(h)),
            MPI_COMM_WORLD => Ok(&mut self.world),
            MPI_COMM_SELF => Ok(&mut self.selfc),
            MPI_COMM_NULL => Err(err(MPI_ERR_COMM, "the communicator is MPI_COMM_NULL")),
            _ => self.comms.get_mut(h).ok_or_else(|| err(MPI_ERR_COMM, format!("invalid communicator handle {h:#x}"))),
        }
    }

    /// A fresh context id pair agreed by the members of `parent` (collective).
    /// Callers use the returned state lock-free: this blocks.
    pub fn my_next_ctx(&mut self) -> u32 {
        self.next_ctx
    }

    /// Record that context ids up to `ctx` (inclusive, pair) are in use.
    pub fn ctx_used(&mut self, ctx: u32) {
        self.next_ctx = self.next_ctx.max(ctx + 2);
    }

    /// Take the status of a finished engine request.
    pub fn take_engine(&mut self, r: ReqId) -> Option<gridmpi_engine::Status> {
        self.rt.engine.take(r)
    }

    pub fn new_group(&mut self, g: Group) -> MPI_Group {
        self.groups.insert(std::sync::Arc::new(g))
    }
}

/// MPI_COMM_WORLD and MPI_COMM_SELF belong to the world model.
fn world_unavailable(h: MPI_Comm) -> MpiError {
    let name = if h == MPI_COMM_WORLD { "MPI_COMM_WORLD" } else { "MPI_COMM_SELF" };
    let why = if PHASE.load(Ordering::Acquire) == PHASE_NONE { "MPI_Init has not been called (this process uses sessions)" } else { "MPI_Finalize has been called" };
    err(MPI_ERR_COMM, format!("{name} is not available: {why}"))
}

/// Keep this module's handle helpers in one place.
pub fn request_handle_kind(h: c_int) -> bool {
    handles::kind_of(h) == Kind::Request as u32
}

//! MPI's life in a process: who uses the runtime, when it starts and when
//! it is torn down.
//!
//! The runtime (the job's membership from PMI, the transports, the engine:
//! [`State`]) has two kinds of users, which may coexist (MPI 4.1, 11.3):
//! the world model (MPI_Init .. MPI_Finalize) and each session
//! (MPI_Session_init .. MPI_Session_finalize). The first of them to come
//! starts the runtime; the last to leave tears it down, but for a process
//! that has only used sessions: sessions may be made again after the last
//! one ended (MPI 4.1, 11.3), so its runtime stays, idle, and is torn down
//! when the process exits.
//!
//! Starting meets every other process of the job (the address cards are
//! exchanged through a PMI fence), so every process of a job starts MPI,
//! by either model, as MPICH requires too. Tearing down is a barrier over
//! every process of the job (no process closes its connections while a
//! peer may still send to it), then the transports close and the process
//! tells the launcher it is done (PMI finalize). After that MPI cannot be
//! started again in the process: the launcher took the PMI finalize as the
//! end of this rank, and its PMI connection is gone.

use crate::errors::{err, R};
use crate::ffi::*;
use crate::handles::{Kind, Table};
use crate::objects::*;
use crate::runtime::Runtime;
use crate::state::{self, State};
use std::sync::{Arc, Mutex, MutexGuard};

/// A user of the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    World,
    Session,
}

#[derive(Default)]
struct Users {
    world: bool,
    sessions: u32,
    /// The runtime was torn down (it cannot start again).
    ended: bool,
    /// The runtime runs with no user: every session ended, the world
    /// model never started. Torn down at exit ([`teardown_at_exit`]).
    idle: bool,
}

impl Users {
    fn any(&self) -> bool {
        self.world || self.sessions > 0
    }
}

/// Held for the whole of a start or a teardown, so two threads starting
/// sessions at once start one runtime. Lock order: this, then the state's.
static USERS: Mutex<Users> = Mutex::new(Users { world: false, sessions: 0, ended: false, idle: false });

fn users() -> MutexGuard<'static, Users> {
    USERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The runtime was torn down (MPI_Finalize and the end of every session,
/// or the exit of a process that used only sessions): MPI cannot be used
/// again in this process.
pub fn ended() -> bool {
    users().ended
}

/// Where the runtime is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    NotStarted,
    Running,
    Ended,
}

pub fn phase() -> Phase {
    let u = users();
    match (u.any() || u.idle, u.ended) {
        (_, true) => Phase::Ended,
        (true, false) => Phase::Running,
        (false, false) => Phase::NotStarted,
    }
}

/// Context ids of the runtime's own traffic (the teardown barrier); the
/// world is 0/1, MPI_COMM_SELF 2/3, communicators start above.
pub const RUNTIME_CTX: u32 = 4;
/// The first context id a communicator may get.
pub const FIRST_COMM_CTX: u32 = 6;

/// Become a user of the runtime, starting it if nobody uses it yet.
pub fn join(user: User) -> R<()> {
    let mut u = users();
    if u.ended {
        return Err(err(
            MPI_ERR_OTHER,
            "MPI was finalized in this process (by MPI_Finalize, and the last MPI_Session_finalize if sessions were used) and cannot be started again",
        ));
    }
    if !u.any() && !u.idle {
        start()?;
    }
    u.idle = false;
    match user {
        User::World => u.world = true,
        User::Session => u.sessions += 1,
    }
    Ok(())
}

/// Stop being a user; the last one tears the runtime down.
pub fn leave(user: User) -> R<()> {
    let mut u = users();
    match user {
        User::World => u.world = false,
        User::Session => u.sessions = u.sessions.saturating_sub(1),
    }
    if u.any() || u.ended {
        return Ok(());
    }
    if user == User::Session && crate::state::PHASE.load(std::sync::atomic::Ordering::Acquire) == crate::state::PHASE_NONE {
        u.idle = true;
        static AT_EXIT: std::sync::Once = std::sync::Once::new();
        // SAFETY: registering a plain function with the C library.
        AT_EXIT.call_once(|| unsafe {
            libc::atexit(teardown_at_exit);
        });
        return Ok(());
    }
    u.ended = true;
    teardown()
}

/// The exit of a process whose sessions all ended: the runtime they left
/// idle is torn down (meeting the other processes, which do the same).
extern "C" fn teardown_at_exit() {
    let mut u = users();
    if !u.idle || u.ended {
        return;
    }
    u.idle = false;
    u.ended = true;
    if let Err(e) = teardown() {
        eprintln!("GridMPI: at exit: {}", e.msg);
    }
}

/// Bootstrap and install the state. The world and self communicators are
/// made here (they exist, unusable, in a process that only has sessions;
/// see State::comm).
fn start() -> R<()> {
    // The settings, with what a tool wrote through MPI_T before MPI started.
    let config = crate::mpit::cvars::config_for_start().map_err(|e| err(MPI_ERR_OTHER, format!("configuration: {e}")))?;
    let rt = Runtime::init(config.clone()).map_err(|e| err(MPI_ERR_OTHER, e))?;
    let me = rt.me;
    let size = rt.size;
    let universe_size = rt.pmi.universe_size();
    // gridmpirun says which program of an MPMD line a rank runs in
    // GRIDMPI_APPNUM; other launchers (hydra, Slurm) say it through PMI.
    let appnum = match config.int("GRIDMPI_APPNUM") {
        Some(n) => i32::try_from(n).map_err(|_| err(MPI_ERR_OTHER, format!("GRIDMPI_APPNUM {n} is out of range")))?,
        None => rt.pmi.appnum(),
    };
    let world_group = Arc::new(Group::new((0..size).collect()));
    let mut world = Comm::new(0, world_group, me as i32, MPI_ERRORS_ARE_FATAL);
    world.name = "MPI_COMM_WORLD".into();
    describe_clusters(&mut world, &rt);
    let mut selfc = Comm::new(2, Arc::new(Group::new(vec![me])), 0, MPI_ERRORS_ARE_FATAL);
    selfc.name = "MPI_COMM_SELF".into();
    let st = State {
        rt,
        world,
        selfc,
        comms: Table::new(Kind::Comm),
        groups: Table::new(Kind::Group),
        types: Table::new(Kind::Datatype),
        predef: Predefined::new(),
        ops: Table::new(Kind::Op),
        keyvals: Table::new(Kind::Keyval),
        reqs: Table::new(Kind::Request),
        msgs: Table::new(Kind::Request),
        wins: Table::new(Kind::Win),
        files: Table::new(Kind::File),
        file_null_errh: MPI_ERRORS_RETURN,
        sessions: Table::new(Kind::Session),
        errors: Default::default(),
        next_ctx: FIRST_COMM_CTX,
        ctx_agreements: Default::default(),
        bsend: None,
        thread_level: MPI_THREAD_SINGLE,
        main_thread: std::thread::current().id(),
        waiting: Default::default(),
        bsend_inflight: Vec::new(),
        flushes: Vec::new(),
        pairs: Vec::new(),
        rma_quiet_calls: 0,
        pending_idups: Vec::new(),
        attr_storage: Box::new([0; 8]),
        f90_types: Vec::new(),
        coll_selector: crate::shell::coll_select::build_selector(&config),
        universe_size,
        appnum,
        ports: Default::default(),
        parent: Default::default(),
        map_switch: None,
        planning_tag: None,
        ft_acked: Default::default(),
        ft_agreements: Default::default(),
    };
    let progress_thread = st.rt.config.bool("GRIDMPI_PROGRESS_THREAD").unwrap_or(false);
    state::install(Box::new(st));
    if progress_thread {
        crate::progress_thread::start().map_err(|e| err(MPI_ERR_OTHER, e))?;
    }
    if let Some(dir) = crate::checkpoint::dir() {
        crate::checkpoint::start(dir).map_err(|e| err(MPI_ERR_OTHER, e))?;
    }
    if crate::ft::enabled() {
        crate::ft::start().map_err(|e| err(MPI_ERR_OTHER, e))?;
    }
    Ok(())
}

/// The cluster map, readable with MPI_Comm_get_info(MPI_COMM_WORLD).
pub fn describe_clusters(world: &mut Comm, rt: &Runtime) {
    let my_cluster = rt.map.cluster_of(rt.me);
    world.info.retain(|(k, _)| !k.starts_with("gridmpi_cluster"));
    world.info.extend([
        ("gridmpi_cluster".into(), rt.map.names[my_cluster as usize].clone()),
        ("gridmpi_cluster_index".into(), my_cluster.to_string()),
        ("gridmpi_clusters".into(), rt.map.clusters().to_string()),
        ("gridmpi_cluster_map".into(), rt.map.describe()),
    ]);
}

/// Drain, meet every process of the job, close the transports, say
/// goodbye to the launcher.
fn teardown() -> R<()> {
    // No checkpoint may freeze the job from here on (a rank past its
    // final barrier could not take part).
    state::with(|st| {
        crate::checkpoint::retire(st);
        Ok(())
    })?;
    // Buffered sends must drain, whoever's buffer they are in.
    state::wait_until(|st| Ok(st.bsend_pending_done(None)))?;
    // Every rank gets here before anyone tears down its transports.
    let r = state::with(|st| {
        st.rt.shutdown();
        // A fault-tolerant job meets in an agreement, which does not wait
        // for ranks that failed (or fail meanwhile).
        if st.rt.fault_tolerant {
            let view = gridmpi_engine::AgreeView { ctx: RUNTIME_CTX, pids: (0..st.rt.size).collect::<Vec<_>>().into(), rank: st.rt.me as i32 };
            return Ok(st.rt.engine.start_agreement(view, crate::shell::ft::FINALIZE_SEQ, 1, 0));
        }
        let view = gridmpi_engine::sched::CommView {
            ctx: RUNTIME_CTX + 1,
            rank: st.rt.me as i32,
            size: st.rt.size as i32,
            pids: (0..st.rt.size).collect::<Vec<_>>().into(),
            local_pids: None,
        };
        let s = gridmpi_engine::coll::barrier_dissemination(view, 0);
        Ok(st.rt.engine.start_schedule(s))
    })?;
    crate::shell::env::wait_engine(r)?;
    state::wait_until(|st| Ok(!st.rt.outbound_pending()))?;
    crate::progress_thread::stop();
    crate::shell::rma_fast::withdraw_all();
    let mut st = state::uninstall().ok_or_else(|| err(MPI_ERR_OTHER, "MPI is not initialized"))?;
    crate::shell::file::clean_up_unclosed(&st);
    st.rt.close();
    let st = *st;
    if let Err(e) = st.rt.pmi.finalize() {
        eprintln!("GridMPI: finalize: {e}");
    }
    Ok(())
}

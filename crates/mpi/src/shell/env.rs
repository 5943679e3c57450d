//! Environment: initialization, finalization, abort, versions, clocks,
//! memory.

use super::*;
use crate::handles::{self, Kind};
use crate::lifecycle::{self, User};
use crate::objects::*;
use crate::state::{self, api, Target, PHASE, PHASE_FINALIZED, PHASE_NONE, PHASE_RUNNING};
use gridmpi_engine::sched::CommView;
use std::sync::atomic::Ordering;

/// MPI_Init and MPI_Init_thread: the world model joins the runtime
/// (starting it unless a session already did).
fn init(required: c_int) -> R<c_int> {
    match PHASE.load(Ordering::Acquire) {
        PHASE_NONE => {}
        PHASE_RUNNING => return Err(err(MPI_ERR_OTHER, "MPI is already initialized")),
        _ => return Err(err(MPI_ERR_OTHER, "MPI cannot be initialized again after MPI_Finalize")),
    }
    lifecycle::join(User::World)?;
    // We serialise every call under one lock, so every level is provided.
    let level = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE);
    state::with(|st| {
        st.thread_level = level;
        st.main_thread = std::thread::current().id();
        Ok(())
    })?;
    PHASE.store(PHASE_RUNNING, Ordering::Release);
    // One thread calls MPI: it need not take the lock (solo.rs). A progress
    // thread would take it at once.
    if level < MPI_THREAD_MULTIPLE && !crate::progress_thread::running() {
        state::go_solo();
    }
    // A spawned process meets its parent before the program runs.
    super::dynamic::connect_to_parent()?;
    Ok(level)
}

fn init_or_die(name: &'static str, required: c_int) -> c_int {
    match std::panic::catch_unwind(|| init(required)) {
        Ok(Ok(level)) => level,
        Ok(Err(e)) => {
            eprintln!("GridMPI: {name}: {}", e.msg);
            std::process::exit(1);
        }
        Err(_) => {
            eprintln!("GridMPI: {name}: internal error during initialization");
            std::process::exit(1);
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    init_or_die("MPI_Init", MPI_THREAD_SINGLE);
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let level = init_or_die("MPI_Init_thread", required);
    if !provided.is_null() {
        *provided = level;
    }
    MPI_SUCCESS
}

// MPI_Initialized, MPI_Get_version and the like are generated from
// abi/functions.txt; these are their implementations.

pub(crate) fn initialized() -> R<c_int> {
    Ok((PHASE.load(Ordering::Acquire) != PHASE_NONE) as c_int)
}

pub(crate) fn finalized() -> R<c_int> {
    Ok((PHASE.load(Ordering::Acquire) == PHASE_FINALIZED) as c_int)
}

pub(crate) fn query_thread(st: &mut State) -> R<c_int> {
    Ok(st.thread_level)
}

pub(crate) fn is_thread_main(st: &mut State) -> R<c_int> {
    Ok((std::thread::current().id() == st.main_thread) as c_int)
}

pub(crate) fn get_version() -> R<(c_int, c_int)> {
    Ok((MPI_VERSION, MPI_SUBVERSION))
}

pub(crate) fn processor_name() -> R<String> {
    Ok(crate::sys::hostname())
}

/// Hardware resources are not described yet: an empty info.
pub(crate) fn hw_resource_info() -> R<MPI_Info> {
    Ok(super::info::new_info(Info::default()))
}

/// The view of a communicator for internal collectives.
pub fn coll_view(c: &Comm) -> CommView {
    CommView { ctx: c.ctx + 1, rank: c.rank, size: c.size(), pids: c.coll_pids.clone(), local_pids: None }
}

/// Block until the engine request `r` completes; return its status.
pub fn wait_engine(r: gridmpi_engine::ReqId) -> R<gridmpi_engine::Status> {
    wait_engine_looking(r, |_| {})
}

/// [`wait_engine`], calling `look` under the lock before each look at `r`
/// (which may complete it: a receive a failure interrupts, shell/ft.rs).
pub fn wait_engine_looking(r: gridmpi_engine::ReqId, mut look: impl FnMut(&mut State)) -> R<gridmpi_engine::Status> {
    let mut out = None;
    state::wait_until(|st| {
        look(st);
        if let Some(s) = st.rt.engine.take(r) {
            out = Some(s);
            return Ok(true);
        }
        Ok(false)
    })?;
    Ok(out.unwrap())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Finalize() -> c_int {
    api("MPI_Finalize", Target::NoComm, || {
        if PHASE.load(Ordering::Acquire) != PHASE_RUNNING {
            return Err(err(MPI_ERR_OTHER, "MPI_Finalize without MPI_Init (or called twice)"));
        }
        // Attributes on MPI_COMM_SELF are deleted first (MPI 4.1, 11.2.1).
        crate::shell::attr::delete_all_comm_attrs(MPI_COMM_SELF)?;
        // Buffered sends must drain.
        state::wait_until(|st| Ok(st.bsend_pending_done(None)))?;
        PHASE.store(PHASE_FINALIZED, Ordering::Release);
        // The runtime ends here unless sessions still use it.
        lifecycle::leave(User::World)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    let mut g = state::lock();
    match g.as_mut() {
        Some(st) => {
            let name = st.comm(comm).map(|c| c.name.clone()).unwrap_or_default();
            let on = if name.is_empty() { format!("communicator {comm:#x}") } else { name };
            let msg = format!("MPI_Abort(rank {}): called with error code {errorcode} on {on}", st.rt.me);
            eprintln!("GridMPI: {msg}");
            st.rt.pmi.abort(errorcode, &msg)
        }
        None => {
            eprintln!("GridMPI: MPI_Abort called with error code {errorcode} outside MPI_Init..MPI_Finalize");
            std::process::exit(if errorcode == 0 { 1 } else { errorcode & 0xff });
        }
    }
}

pub fn library_version() -> R<String> {
    Ok(format!(
        "GridMPI {} (MPI {}.{}, MPICH ABI): an MPI for programs spanning several clusters",
        env!("CARGO_PKG_VERSION"),
        MPI_VERSION,
        MPI_SUBVERSION
    ))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Wtime() -> f64 {
    crate::sys::now()
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Wtick() -> f64 {
    crate::sys::tick()
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alloc_mem(size: MPI_Aint, _info: MPI_Info, baseptr: *mut c_void) -> c_int {
    api("MPI_Alloc_mem", Target::NoComm, || {
        if size < 0 {
            return Err(err(MPI_ERR_SIZE, format!("invalid size {size}")));
        }
        check_ptr(baseptr, "baseptr")?;
        let p = libc::malloc((size as usize).max(1));
        if p.is_null() {
            return Err(err(MPI_ERR_NO_MEM, format!("cannot allocate {size} bytes")));
        }
        *(baseptr as *mut *mut c_void) = p;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Free_mem(base: *mut c_void) -> c_int {
    libc::free(base);
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pcontrol(_level: c_int) -> c_int {
    MPI_SUCCESS
}

#[allow(dead_code)]
fn _handles_used() -> c_int {
    handles::builtin(Kind::Comm, 0)
}

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

#[no_mangle]
pub unsafe extern "C" fn PMPI_Initialized(flag: *mut c_int) -> c_int {
    if !flag.is_null() {
        *flag = (PHASE.load(Ordering::Acquire) != PHASE_NONE) as c_int;
    }
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Finalized(flag: *mut c_int) -> c_int {
    if !flag.is_null() {
        *flag = (PHASE.load(Ordering::Acquire) == PHASE_FINALIZED) as c_int;
    }
    MPI_SUCCESS
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

#[no_mangle]
pub unsafe extern "C" fn PMPI_Query_thread(provided: *mut c_int) -> c_int {
    api("MPI_Query_thread", Target::NoComm, || {
        let level = state::with(|st| Ok(st.thread_level))?;
        check_ptr(provided, "provided")?;
        *provided = level;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Is_thread_main(flag: *mut c_int) -> c_int {
    api("MPI_Is_thread_main", Target::NoComm, || {
        let main = state::with(|st| Ok(st.main_thread))?;
        check_ptr(flag, "flag")?;
        *flag = (std::thread::current().id() == main) as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    if !version.is_null() {
        *version = MPI_VERSION;
    }
    if !subversion.is_null() {
        *subversion = MPI_SUBVERSION;
    }
    MPI_SUCCESS
}

pub fn library_version() -> String {
    format!(
        "GridMPI {} (MPI {}.{}, MPICH ABI): an MPI for programs spanning several clusters",
        env!("CARGO_PKG_VERSION"),
        MPI_VERSION,
        MPI_SUBVERSION
    )
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int {
    write_cstr(version, MPI_MAX_LIBRARY_VERSION_STRING as usize, &library_version(), resultlen);
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    write_cstr(name, MPI_MAX_PROCESSOR_NAME as usize, &crate::sys::hostname(), resultlen);
    MPI_SUCCESS
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

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_hw_resource_info(hw_info: *mut MPI_Info) -> c_int {
    api("MPI_Get_hw_resource_info", Target::NoComm, || {
        check_ptr(hw_info, "hw_info")?;
        let h = super::info::new_info(Info::default());
        *hw_info = h;
        Ok(())
    })
}

#[allow(dead_code)]
fn _handles_used() -> c_int {
    handles::builtin(Kind::Comm, 0)
}

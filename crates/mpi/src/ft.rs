//! A rank's side of a fault-tolerant job (ULFM, issue 14;
//! docs/architecture.md "Fault-tolerant jobs").
//!
//! `gridmpirun --with-ft ulfm` sets `GRIDMPI_FT=ulfm` and starts its ranks
//! with the failure signal ([`gridmpi_pmi::failure_signal`]) blocked. When a
//! rank of the job dies (or its host is lost), gridmpirun keeps the job
//! running and sends every survivor that signal. A thread of the library
//! waits for it, asks gridmpirun which ranks failed
//! ([`gridmpi_pmi::Pmi::failed_ranks`]) and, under the library's lock, tells
//! the engine and the transports ([`note_failure`]); the threads waiting in
//! MPI calls are woken and see their operations fail.
//!
//! Only gridmpirun declares a failure. A connection that breaks only makes
//! its peer a suspect (driver.rs) and, in these jobs, every TCP link keeps
//! what it sent so that a reset is survived; a suspect makes this rank ask
//! gridmpirun at once rather than wait for the signal.

use crate::state::{self, State};
use gridmpi_engine::Pid;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process is a rank of a fault-tolerant job.
pub fn enabled() -> bool {
    std::env::var(gridmpi_pmi::FT_VAR).is_ok_and(|v| v == "ulfm")
}

static STARTED: AtomicBool = AtomicBool::new(false);

/// Start listening for gridmpirun's failure notices (at the end of
/// MPI_Init, when [`enabled`]).
pub fn start() -> Result<(), String> {
    let sig = gridmpi_pmi::failure_signal();
    if !crate::launcher_signal::blocked(sig) {
        eprintln!(
            "gridmpi: warning: {} is set but signal {sig} is not blocked (the process was not started by gridmpirun --with-ft ulfm): failures of other ranks are not reported to this one",
            gridmpi_pmi::FT_VAR
        );
        return Ok(());
    }
    if STARTED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("gridmpi-ft".into())
        .spawn(move || {
            while crate::launcher_signal::wait(sig) {
                refresh();
            }
        })
        .map(drop)
        .map_err(|e| format!("cannot start the failure-notice thread: {e}"))
}

/// Ask gridmpirun which ranks failed and take note of the new ones.
fn refresh() {
    let mut g = state::lock();
    let Some(st) = g.as_mut() else { return };
    ask(st);
}

/// Ask gridmpirun which ranks failed, under the lock; take note of the
/// new ones and wake the waiting threads.
pub fn ask(st: &mut State) {
    let ranks = match st.rt.pmi.failed_ranks() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gridmpi: rank {}: cannot ask gridmpirun which ranks failed: {e}", st.rt.me);
            return;
        }
    };
    let mut any = false;
    for r in ranks {
        if r < st.rt.size && r != st.rt.me && !st.rt.engine.is_failed(r) {
            note_failure(st, r);
            any = true;
        }
    }
    if any {
        st.wake_waiters();
        st.rt.wake_sleepers();
    }
}

/// Process `pid` failed: the engine fails what needs it, the transports
/// drop its link, and every receive posted for it in any communicator
/// fails (the engine knows pids; which rank that is in each communicator
/// only the communicators say).
pub fn note_failure(st: &mut State, pid: Pid) {
    if crate::runtime::debug_channel(&st.rt.config, "conn") {
        eprintln!("gridmpi[{}]: gridmpirun says rank {pid} failed", st.rt.me);
    }
    st.rt.proc_failed(pid);
    let mut posted = Vec::new();
    for c in st.all_comms() {
        let peers = c.remote.as_ref().unwrap_or(&c.group);
        if let Some(r) = peers.pids.iter().position(|&p| p == pid) {
            posted.push((c.ctx, r as i32));
            posted.push((c.ctx + 1, r as i32));
        }
        if let (Some(local), Some(_)) = (c.local_ctx, c.remote.as_ref()) {
            if let Some(r) = c.group.pids.iter().position(|&p| p == pid) {
                posted.push((local, r as i32));
                posted.push((local + 1, r as i32));
            }
        }
    }
    for (ctx, r) in posted {
        st.rt.engine.fail_posted_from(ctx, r);
    }
}

/// After a progress pass: suspects (a connection failed) make us ask
/// gridmpirun now; communicators a peer revoked are revoked whole here.
pub fn after_progress(st: &mut State) {
    if !st.rt.take_suspects().is_empty() {
        ask(st);
    }
    for ctx in st.rt.engine.take_revoked_news() {
        let other = st.comm_by_ctx(ctx).and_then(|c| c.local_ctx.zip(c.remote.as_ref()).map(|(l, _)| l));
        if let Some(local) = other {
            st.rt.engine.revoke_here(&[local, local + 1]);
        }
    }
}

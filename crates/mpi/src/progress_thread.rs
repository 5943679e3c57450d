//! The optional progress thread (`GRIDMPI_PROGRESS_THREAD=on`).
//!
//! Without it, communication moves only while some thread is inside an MPI
//! call. With it, a thread of the library waits in the kernel for the
//! transports and progresses whatever arrives, so a rendezvous transfer, a
//! nonblocking collective or a passive-target one-sided operation aimed at us
//! goes on while every application thread computes. It waits as any
//! blocked call does (state.rs), without spinning: it is usually the thread
//! sleeping on the fds, and application threads that block are woken by it
//! when their requests complete.

use crate::state;
use std::sync::Mutex;
use std::thread::JoinHandle;

static THREAD: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

/// Start the progress thread (after MPI is initialized).
pub fn start() -> Result<(), String> {
    let handle = std::thread::Builder::new()
        .name("gridmpi-progress".into())
        .spawn(|| {
            // A failure of the job is reported (and the job ended) by the
            // progress itself; a finalized library ends the wait too.
            let _ = state::wait(false, |st| Ok(st.waiting.stop_progress_thread));
        })
        .map_err(|e| format!("cannot start the progress thread: {e}"))?;
    *THREAD.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
    Ok(())
}

/// Whether the progress thread runs.
pub fn running() -> bool {
    THREAD.lock().unwrap_or_else(|p| p.into_inner()).is_some()
}

/// Stop the progress thread, if one runs, and wait for it (at finalize,
/// before the transports close).
pub fn stop() {
    let Some(handle) = THREAD.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
    {
        let mut g = state::lock();
        if let Some(st) = g.as_mut() {
            st.waiting.stop_progress_thread = true;
            state::wake_all(st);
        }
    }
    let _ = handle.join();
}

//! Signals gridmpirun sends its ranks to ask something of the library (a
//! checkpoint, checkpoint.rs; a failure notice, ft.rs): the rank starts
//! with the signal blocked, and a thread of the library takes it with
//! `sigwaitinfo`, so one that comes early stays pending instead of
//! killing the process.

/// Whether the calling thread blocks `sig`.
pub fn blocked(sig: i32) -> bool {
    // SAFETY: reading our own signal mask into a set we own.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut old);
        libc::sigismember(&old, sig) == 1
    }
}

/// Wait for `sig` (blocked); false if waiting fails.
pub fn wait(sig: i32) -> bool {
    // SAFETY: a signal set we own; sigwaitinfo takes the pending signal.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        loop {
            let r = libc::sigwaitinfo(&set, std::ptr::null_mut());
            if r == sig {
                return true;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return false;
            }
        }
    }
}

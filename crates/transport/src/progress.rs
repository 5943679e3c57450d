//! What a blocked process sleeps in: one epoll set holding each
//! transport's wait fd (the TCP transport's own epoll set, the shared-memory
//! doorbell) and an eventfd through which another thread wakes it.
//!
//! Sleeping is split from the state it protects: a thread takes the raw fd
//! ([`Poller::sleep_fd`]), releases the library's lock and calls
//! [`Poller::sleep`]; whatever woke it is handled by the next progress pass,
//! under the lock again. Readiness is level-triggered, so nothing that
//! arrived while the thread was deciding to sleep is missed.

use crate::sys::{self, Epoll};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// The token of the wake eventfd in the set.
const WAKE: u64 = u64::MAX;

pub struct Poller {
    ep: Epoll,
    wake: OwnedFd,
}

impl Poller {
    pub fn new() -> io::Result<Poller> {
        let ep = Epoll::new()?;
        // SAFETY: plain syscall; the fd is owned from here on.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd we own.
        let wake = unsafe { OwnedFd::from_raw_fd(fd) };
        ep.add(wake.as_raw_fd(), sys::EPOLLIN, WAKE)?;
        Ok(Poller { ep, wake })
    }

    /// Sleep on `fd` too (a transport's [`crate::Transport::wait_fd`]).
    pub fn watch(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.ep.add(fd, sys::EPOLLIN, token)
    }

    /// The fd to pass to [`Poller::sleep`].
    pub fn sleep_fd(&self) -> RawFd {
        self.ep.raw_fd()
    }

    /// Block until something in the set is ready, another thread calls
    /// [`Poller::wake`], or `timeout` passes (epoll's millisecond resolution).
    /// Takes the raw fd so no lock is needed while sleeping; a stale fd only
    /// makes the call return at once.
    pub fn sleep(fd: RawFd, timeout: Option<Duration>) {
        Epoll::wait_raw(fd, timeout)
    }

    /// Wake the threads sleeping in this set.
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8) };
    }

    /// Clear a wakeup once it has been seen.
    pub fn clear_wake(&self) {
        let mut v = 0u64;
        // SAFETY: reading 8 bytes from our eventfd.
        unsafe { libc::read(self.wake.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
    }
}

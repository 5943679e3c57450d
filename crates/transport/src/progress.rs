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

    /// After a restart from a checkpoint: a fresh set and wake eventfd at
    /// the same descriptor numbers (see [`sys::replace_fd`]); the
    /// transports' fds must be watched again.
    pub fn renew(&self) -> io::Result<()> {
        self.ep.renew()?;
        // SAFETY: plain syscall; the fd is owned from here on.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd we own.
        sys::replace_fd(unsafe { OwnedFd::from_raw_fd(fd) }, self.wake.as_raw_fd())?;
        self.ep.add(self.wake.as_raw_fd(), sys::EPOLLIN, WAKE)
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

/// What a blocked call spins on between progress passes: cheap signs,
/// read without any lock, that a progress pass would find something (a
/// shared-memory ring holds data, the TCP transport's epoll set is ready,
/// another thread completed requests). A sign may be stale; a missed one
/// is caught by the next progress pass, so it only costs latency.
#[derive(Clone, Default)]
pub struct Arrivals {
    /// Shared: every blocked call takes a copy.
    shm: Option<std::sync::Arc<crate::shm::ring::ArrivalProbe>>,
    /// The TCP transport's epoll fd (readable when a socket is).
    tcp: Option<RawFd>,
    /// Bumped whenever some thread completes requests.
    epoch: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Arrivals {
    pub fn new(shm: Option<crate::shm::ring::ArrivalProbe>, tcp: Option<RawFd>) -> Arrivals {
        Arrivals { shm: shm.map(std::sync::Arc::new), tcp, epoch: Default::default() }
    }

    /// Another thread completed requests.
    pub fn bump(&self) {
        self.epoch.fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    pub fn epoch(&self) -> u64 {
        self.epoch.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Is there something for a progress pass, or did the epoch move past
    /// `since`? With `sockets`, also ask the kernel about the TCP set (a
    /// system call: callers do it every few spins, not every one).
    #[inline]
    pub fn any(&self, since: u64, sockets: bool) -> bool {
        if self.epoch() != since || self.shm.as_ref().is_some_and(|p| p.any()) {
            return true;
        }
        match self.tcp {
            Some(fd) if sockets => {
                let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
                // SAFETY: one valid pollfd; a stale fd only reports an error.
                unsafe { libc::poll(&mut p, 1, 0) > 0 }
            }
            _ => false,
        }
    }
}

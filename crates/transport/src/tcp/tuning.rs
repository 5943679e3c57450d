//! Socket options: what every connection gets (non-blocking, no Nagle,
//! buffer sizes), what a peer's connection is tuned with (congestion
//! control, retransmission timer bounds, unsent-data bound: WAN connections
//! get them from the cluster map), and pacing.

use super::sendq::paced_lowat;
use super::Tcp;
use crate::ConnEvent;
use gridmpi_wire::Pid;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// Socket options for the connection to one peer (WAN connections get them
/// from the cluster map; see runtime.rs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tuning {
    /// Congestion control algorithms to try in order.
    pub cc: Vec<String>,
    pub rto_min_us: Option<u32>,
    pub rto_max_ms: Option<u32>,
    /// TCP_USER_TIMEOUT: how long sent data may stay unacknowledged before
    /// the kernel gives the connection up. It replaces the retry count,
    /// which with a short RTO_MAX gives up after about 15 s of outage.
    pub user_timeout_ms: Option<u32>,
    pub notsent_lowat: Option<u32>,
    pub sndbuf: Option<usize>,
    pub rcvbuf: Option<usize>,
}

// Linux socket options newer than the libc crate's constants.
const TCP_RTO_MAX_MS: libc::c_int = 44;
const TCP_RTO_MIN_US: libc::c_int = 45;

pub(super) fn setsockopt_int(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: an int option on a socket we own.
    let r = unsafe { libc::setsockopt(fd, level, opt, &v as *const _ as *const libc::c_void, 4) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn getsockopt_int(fd: RawFd, level: libc::c_int, opt: libc::c_int) -> libc::c_int {
    let mut v: libc::c_int = 0;
    let mut l = 4 as libc::socklen_t;
    // SAFETY: reading an int option of a socket we own into a local.
    unsafe { libc::getsockopt(fd, level, opt, &mut v as *mut _ as *mut libc::c_void, &mut l) };
    v
}

/// The pending error of a socket (SO_ERROR): how a non-blocking connect ended.
pub(super) fn socket_error(fd: RawFd) -> libc::c_int {
    getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_ERROR)
}

/// Apply `t` to `fd`; returns what was done, for the trace and debugging.
fn apply_tuning(fd: RawFd, t: &Tuning) -> Vec<(&'static str, String)> {
    let mut done = Vec::new();
    let mut int = |name: &'static str, level, opt, v: Option<i64>| {
        if let Some(v) = v {
            let r = setsockopt_int(fd, level, opt, v.min(i32::MAX as i64) as libc::c_int);
            done.push((name, match r {
                Ok(()) => v.to_string(),
                Err(e) => format!("{v} failed: {e}"),
            }));
        }
    };
    int("SO_SNDBUF", libc::SOL_SOCKET, libc::SO_SNDBUF, t.sndbuf.map(|v| v as i64));
    int("SO_RCVBUF", libc::SOL_SOCKET, libc::SO_RCVBUF, t.rcvbuf.map(|v| v as i64));
    int("TCP_RTO_MIN_US", libc::IPPROTO_TCP, TCP_RTO_MIN_US, t.rto_min_us.map(|v| v as i64));
    int("TCP_RTO_MAX_MS", libc::IPPROTO_TCP, TCP_RTO_MAX_MS, t.rto_max_ms.map(|v| v as i64));
    int("TCP_USER_TIMEOUT", libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, t.user_timeout_ms.map(|v| v as i64));
    int("TCP_NOTSENT_LOWAT", libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, t.notsent_lowat.map(|v| v as i64));
    if !t.cc.is_empty() {
        let mut tried = Vec::new();
        for cc in &t.cc {
            // SAFETY: a byte string option on a socket we own.
            let r = unsafe {
                libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_ptr() as *const libc::c_void, cc.len() as u32)
            };
            if r == 0 {
                tried.push(cc.clone());
                break;
            }
            tried.push(format!("{cc} failed: {}", io::Error::last_os_error()));
        }
        done.push(("TCP_CONGESTION", tried.join("; ")));
    }
    done
}

/// What every connection gets: non-blocking, no Nagle delay.
pub(super) fn set_nonblocking_nodelay(fd: RawFd) {
    // SAFETY: integer socket options and file flags of a socket we own.
    unsafe {
        let one: libc::c_int = 1;
        libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &one as *const _ as *const libc::c_void, 4);
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
}

/// A buffer size for every connection (GRIDMPI_TCP_SNDBUF, _RCVBUF).
pub(super) fn set_buf(fd: RawFd, opt: libc::c_int, size: Option<usize>) {
    if let Some(s) = size {
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, opt, s.min(i32::MAX as usize) as libc::c_int);
    }
}

/// Bytes written to a TCP socket and not yet sent.
pub(super) fn socket_unsent(fd: RawFd) -> Option<u32> {
    let mut v: libc::c_int = 0;
    // SAFETY: SIOCOUTQNSD writes an int.
    let r = unsafe { libc::ioctl(fd, 0x894B /* SIOCOUTQNSD */, &mut v) };
    (r == 0).then_some(v.max(0) as u32)
}

impl Tcp {
    /// Kernel defaults for the connection with `peer` again (after a
    /// restart, a peer that is no longer across the WAN).
    pub fn clear_tuning(&mut self, peer: Pid) {
        self.tuning[peer as usize] = None;
    }

    /// Socket options for the connection with `peer`. Buffer sizes also go on
    /// the listening socket (accepted sockets inherit them at the handshake,
    /// which is when the window scale is fixed).
    pub fn set_tuning(&mut self, peer: Pid, t: Tuning) {
        let lfd = self.listener.as_raw_fd();
        if let Some(b) = t.rcvbuf {
            if (getsockopt_int(lfd, libc::SOL_SOCKET, libc::SO_RCVBUF) as usize) < b {
                let _ = setsockopt_int(lfd, libc::SOL_SOCKET, libc::SO_RCVBUF, b.min(i32::MAX as usize) as libc::c_int);
            }
        }
        self.tuning[peer as usize] = Some(t);
    }

    /// Apply the options asked for `peer` to its connection's socket `fd`.
    pub(super) fn tune(&mut self, peer: Pid, fd: RawFd) {
        if let Some(t) = &self.tuning[peer as usize] {
            for (option, value) in apply_tuning(fd, t) {
                self.events.push(ConnEvent::Tuned { peer, option, value });
            }
        }
    }

    /// Apply the pacing rate asked for `peer` to its connection (None:
    /// uncapped). Returns false if there is no established connection yet
    /// (the rate is applied when there is).
    ///
    /// While capped, the socket also holds little unsent data (about
    /// `PACED_UNSENT` of sending time): whatever sits unsent in the kernel
    /// leaves at the paced rate, and a protocol reply queued behind it
    /// (however urgent, see [`super::sendq::enqueue`]) waits that long.
    /// TCP_NOTSENT_LOWAT alone does not bound it (one write may add a whole
    /// 64 KiB segment train past the mark), so flush_peer also writes no
    /// more than the room below it. (Rendezvous payloads to a paced peer
    /// come cut into pieces of that size, so a reply waits for one piece at
    /// most.)
    pub(super) fn apply_pacing(&mut self, peer: Pid) -> bool {
        let bytes_per_sec = self.peers[peer as usize].pace;
        let Some(idx) = self.peers[peer as usize].conn.filter(|_| self.peers[peer as usize].established) else {
            return false;
        };
        let Some(c) = self.conns[idx].as_ref() else { return false };
        let fd = c.fd.as_raw_fd();
        let v: u64 = bytes_per_sec.unwrap_or(u64::MAX);
        // SAFETY: a u64 option (the kernel accepts 32 or 64 bits) on our socket.
        let r = unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &v as *const u64 as *const libc::c_void, 8) };
        let tuned = self.tuning[peer as usize].as_ref().and_then(|t| t.notsent_lowat);
        // 0 restores the system default (net.ipv4.tcp_notsent_lowat).
        let lowat = match bytes_per_sec {
            Some(b) => paced_lowat(b, tuned),
            None => tuned.unwrap_or(0),
        };
        self.peers[peer as usize].paced_unsent = bytes_per_sec.map(|_| lowat);
        let lr = setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, lowat.min(i32::MAX as u32) as libc::c_int);
        let value = match (bytes_per_sec, r) {
            (Some(b), 0) => format!("{:.1} Mbit/s, unsent <= {lowat} B", b as f64 * 8.0 / 1e6),
            (None, 0) => "unlimited".to_string(),
            (_, _) => format!("failed: {}", io::Error::last_os_error()),
        };
        self.events.push(ConnEvent::Tuned { peer, option: "SO_MAX_PACING_RATE", value });
        if let Err(e) = lr {
            self.events.push(ConnEvent::Tuned { peer, option: "TCP_NOTSENT_LOWAT", value: format!("{lowat} failed: {e}") });
        }
        r == 0
    }

    /// Bytes written to the socket of `peer` but not yet sent (TCP_INFO's
    /// notsent bytes, and TLS ciphertext the socket has not taken), or None
    /// without a connection.
    pub(super) fn unsent_bytes(&self, peer: Pid) -> Option<u32> {
        let idx = self.peers[peer as usize].conn.filter(|_| self.peers[peer as usize].established)?;
        self.conns[idx].as_ref()?.unsent()
    }
}

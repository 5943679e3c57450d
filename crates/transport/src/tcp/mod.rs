//! TCP between hosts.
//!
//! Every process listens on one socket; a connection to a peer is made the
//! first time something is sent to it. Before any frame is accepted, both
//! ends prove they belong to the job (HMAC-SHA256 over fresh nonces with the
//! job's secret):
//!
//! ```text
//! connector -> acceptor   HELLO   magic, version, from, to, job, nonce_c
//! acceptor  -> connector  WELCOME magic, status, nonce_a, mac("acceptor", ...)
//! connector -> acceptor   PROOF   magic, mac("connector", ...)
//! ```
//!
//! When two processes connect to each other at once, the connection made by
//! the lower pid wins; the other is refused with status DUPLICATE. Frames for
//! a peer queue up until its connection is established, so order is kept.
//!
//! Frames are written with writev straight from user buffers.

use crate::sys::{self, Epoll};
use crate::{auth, terr, ConnEvent, Sink, Transport, TransportError};
use gridmpi_wire::{paced_unsent_bytes, Frame, Header, Payload, Pid, SentToken, Transmit, Urgency, HEADER_LEN, WIRE_VERSION};
use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const VERSION: u32 = WIRE_VERSION;
const HELLO_MAGIC: &[u8; 8] = b"GMPIhelo";
const WELCOME_MAGIC: &[u8; 8] = b"GMPIwlcm";
const PROOF_MAGIC: &[u8; 8] = b"GMPIprof";
const HELLO_LEN: usize = 48;
const WELCOME_LEN: usize = 64;
const PROOF_LEN: usize = 40;
const STATUS_OK: u32 = 0;
const STATUS_DUPLICATE: u32 = 1;
const STATUS_WRONG_JOB: u32 = 2;

/// Tokens in the transport's epoll set: the listening socket, then one per
/// connection slot.
const LISTEN_TOKEN: u64 = 0;
const CONN_TOKEN_BASE: u64 = 1;

/// Socket options for the connection to one peer (WAN connections get them
/// from the cluster map; see runtime.rs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tuning {
    /// Congestion control algorithms to try in order.
    pub cc: Vec<String>,
    pub rto_min_us: Option<u32>,
    pub rto_max_ms: Option<u32>,
    pub notsent_lowat: Option<u32>,
    pub sndbuf: Option<usize>,
    pub rcvbuf: Option<usize>,
}

// Linux socket options newer than the libc crate's constants.
const TCP_RTO_MAX_MS: libc::c_int = 44;
const TCP_RTO_MIN_US: libc::c_int = 45;

fn setsockopt_int(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: an int option on a socket we own.
    let r = unsafe { libc::setsockopt(fd, level, opt, &v as *const _ as *const libc::c_void, 4) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
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

#[derive(Debug, PartialEq, Eq)]
enum State {
    /// Non-blocking connect in progress (connector).
    Connecting,
    /// Connector: HELLO queued, waiting for WELCOME.
    AwaitWelcome,
    /// Acceptor: waiting for HELLO.
    AwaitHello,
    /// Acceptor: WELCOME sent, waiting for PROOF.
    AwaitProof,
    Established,
    /// Refused or failed; to be dropped.
    Dead,
}

struct Conn {
    fd: OwnedFd,
    peer: Option<Pid>,
    state: State,
    connector: bool,
    nonce_c: [u8; 16],
    nonce_a: [u8; 16],
    /// Handshake bytes still to write.
    hs_out: Vec<u8>,
    /// Bytes read and not yet consumed.
    rbuf: Vec<u8>,
    rlen: usize,
    writable_armed: bool,
    /// Addresses left to try (connector).
    addrs: Vec<SocketAddrV4>,
    /// A Data frame whose payload is being read straight into user memory.
    direct: Option<Direct>,
    /// When the connection was opened (connect or accept).
    opened: std::time::Instant,
}

/// Large Data payloads skip the connection buffer: they are read with
/// recvmsg into the receive buffer's memory runs.
struct Direct {
    header: Header,
    buf: gridmpi_datatype::UserBuf,
    /// Payload bytes already in place.
    done: u64,
}

/// The unsent-data bound of a socket paced at `rate` bytes/s (see
/// [`gridmpi_wire::PACED_UNSENT`]), at most the connection's own bound.
fn paced_lowat(rate: u64, tuned: Option<u32>) -> u32 {
    let v = paced_unsent_bytes(rate).min(u32::MAX as u64) as u32;
    tuned.map_or(v, |t| v.min(t))
}

/// A paced socket's write budget is stretched to the end of the frame it
/// would cut when less than this would be left: a full-sized segment on a
/// 1500-byte path.
const PACED_TAIL_MIN: u64 = 1448;

/// The write budget `room` of a paced socket, stretched to the end of the
/// frame it ends in when that frame has less than [`PACED_TAIL_MIN`] bytes
/// past it. A cut-off tail goes out as a packet of its own, one pacing
/// interval after the rest: a 4 KiB eager message is 4136 bytes with its
/// header, and under a 4096-byte budget its last 40 bytes reached the peer
/// a whole packet-time (1.6 ms at a 16th of 100 Mbit/s) after the rest,
/// which the receiver waited for on every call.
fn stretch_to_frame_end(out: &VecDeque<OutFrame>, room: u64) -> u64 {
    if room == 0 {
        return 0;
    }
    let mut end = 0u64;
    for f in out {
        end += f.total() - f.done;
        if end >= room {
            return if end - room < PACED_TAIL_MIN { end } else { room };
        }
    }
    room
}

/// Data payloads at least this large are read directly into user memory.
const DIRECT_MIN: usize = 16 * 1024;

struct OutFrame {
    header: [u8; HEADER_LEN],
    payload: Payload,
    /// Bytes of header + payload written so far.
    done: u64,
    notify: Option<SentToken>,
    prio: Urgency,
}

/// Queue a frame ahead of the unstarted frames of lower urgency, so that a
/// clear-to-send never waits behind a megabyte of someone else's payload:
/// on a paced WAN connection it would wait for the whole payload to leave
/// at the paced rate, stalling the other direction's transfer as long.
fn enqueue(out: &mut VecDeque<OutFrame>, f: OutFrame) {
    let mut at = out.len();
    while at > 0 && out[at - 1].done == 0 && out[at - 1].prio < f.prio {
        at -= 1;
    }
    out.insert(at, f);
}

impl OutFrame {
    fn total(&self) -> u64 {
        HEADER_LEN as u64 + self.payload.len()
    }
}

#[derive(Default)]
struct PeerLink {
    addrs: Vec<SocketAddrV4>,
    /// Index into `conns` of the connection in use or being made.
    conn: Option<usize>,
    established: bool,
    out: VecDeque<OutFrame>,
    /// The peer closed an established connection (it finalized or died).
    closed: bool,
    /// The pacing rate asked for (bytes/s); applied when the connection is
    /// established if it is not yet.
    pace: Option<u64>,
    /// While the connection is paced: how many bytes the socket may hold
    /// unsent (see `Tcp::apply_pacing`).
    paced_unsent: Option<u32>,
}

pub struct Tcp {
    me: Pid,
    /// The transport's own epoll set: the listener and every connection.
    ep: Epoll,
    job: u64,
    secret: [u8; 32],
    listener: OwnedFd,
    port: u16,
    conns: Vec<Option<Conn>>,
    peers: Vec<PeerLink>,
    /// Scratch for building iovecs.
    runs: Vec<(*mut u8, usize)>,
    /// Scratch for epoll events.
    ready: Vec<(u64, u32)>,
    pub sndbuf: Option<usize>,
    pub rcvbuf: Option<usize>,
    /// Set when the job is finishing: peers closing connections is normal.
    pub finalizing: bool,
    /// Give up on a connection not established after this long.
    pub connect_timeout: std::time::Duration,
    /// Connection events not yet handed to the sink.
    events: Vec<ConnEvent>,
    /// Socket options per peer (None: kernel defaults).
    tuning: Vec<Option<Tuning>>,
}

fn set_nonblocking_nodelay(fd: RawFd) {
    // SAFETY: integer socket options on a socket we own.
    unsafe {
        let one: libc::c_int = 1;
        libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &one as *const _ as *const libc::c_void, 4);
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
}

fn set_buf(fd: RawFd, opt: libc::c_int, size: Option<usize>) {
    if let Some(s) = size {
        let v = s.min(i32::MAX as usize) as libc::c_int;
        // SAFETY: integer socket option.
        unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, opt, &v as *const _ as *const libc::c_void, 4) };
    }
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
        sin_zero: [0; 8],
    }
}

fn last_err() -> io::Error {
    io::Error::last_os_error()
}

impl Tcp {
    pub fn new(me: Pid, npeers: usize, job: u64, secret: [u8; 32], bind: Ipv4Addr) -> io::Result<Tcp> {
        // SAFETY: plain syscalls on a socket we own; results checked.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(last_err());
        }
        let listener = unsafe { OwnedFd::from_raw_fd(fd) };
        let sa = sockaddr(SocketAddrV4::new(bind, 0));
        unsafe {
            let one: libc::c_int = 1;
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &one as *const _ as *const libc::c_void, 4);
            if libc::bind(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of_val(&sa) as u32) < 0 {
                return Err(last_err());
            }
            if libc::listen(fd, 1024) < 0 {
                return Err(last_err());
            }
        }
        let mut got: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of_val(&got) as libc::socklen_t;
        if unsafe { libc::getsockname(fd, &mut got as *mut _ as *mut libc::sockaddr, &mut len) } < 0 {
            return Err(last_err());
        }
        let port = u16::from_be(got.sin_port);
        let ep = Epoll::new()?;
        ep.add(fd, sys::EPOLLIN, LISTEN_TOKEN)?;
        Ok(Tcp {
            me,
            ep,
            job,
            secret,
            listener,
            port,
            conns: Vec::new(),
            peers: (0..npeers).map(|_| PeerLink::default()).collect(),
            runs: Vec::new(),
            ready: Vec::with_capacity(64),
            sndbuf: None,
            rcvbuf: None,
            finalizing: false,
            connect_timeout: std::time::Duration::from_secs(30),
            events: Vec::new(),
            tuning: vec![None; npeers],
        })
    }

    /// Socket options for the connection with `peer`. Buffer sizes also go on
    /// the listening socket (accepted sockets inherit them at the handshake,
    /// which is when the window scale is fixed).
    pub fn set_tuning(&mut self, peer: Pid, t: Tuning) {
        let lfd = self.listener.as_raw_fd();
        let cur = |opt| {
            let mut v: libc::c_int = 0;
            let mut l = 4 as libc::socklen_t;
            // SAFETY: reading an int option of our listening socket.
            unsafe { libc::getsockopt(lfd, libc::SOL_SOCKET, opt, &mut v as *mut _ as *mut libc::c_void, &mut l) };
            v as usize
        };
        if let Some(b) = t.rcvbuf {
            if cur(libc::SO_RCVBUF) < b {
                let _ = setsockopt_int(lfd, libc::SOL_SOCKET, libc::SO_RCVBUF, b.min(i32::MAX as usize) as libc::c_int);
            }
        }
        self.tuning[peer as usize] = Some(t);
    }

    fn tune(&mut self, peer: Pid, fd: RawFd) {
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
    /// (however urgent, see [`enqueue`]) waits that long. TCP_NOTSENT_LOWAT
    /// alone does not bound it (one write may add a whole 64 KiB segment
    /// train past the mark), so flush_peer also writes no more than the
    /// room below it. (The engine cuts rendezvous payloads to a paced peer
    /// into pieces of that size, so a reply waits for one piece at most.)
    fn apply_pacing(&mut self, peer: Pid) -> bool {
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
    /// notsent bytes), or None without a connection.
    fn unsent_bytes(&self, peer: Pid) -> Option<u32> {
        let idx = self.peers[peer as usize].conn.filter(|_| self.peers[peer as usize].established)?;
        let c = self.conns[idx].as_ref()?;
        socket_unsent(c.fd.as_raw_fd())
    }

    /// Set the job identity and secret (known only after the PMI exchange).
    pub fn set_auth(&mut self, job: u64, secret: [u8; 32]) {
        self.job = job;
        self.secret = secret;
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn set_peer_addrs(&mut self, peer: Pid, addrs: Vec<SocketAddrV4>) {
        self.peers[peer as usize].addrs = addrs;
    }

    /// Frames queued but not yet fully written, over all peers.
    pub fn backlog(&self) -> usize {
        self.peers.iter().map(|p| p.out.len()).sum()
    }

    /// Queue a frame for its peer and write what the socket takes now.
    fn queue(&mut self, t: Transmit, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let peer = t.peer;
        let link = &mut self.peers[peer as usize];
        if link.closed {
            return Err(terr(Some(peer), "the peer closed its connection (did it exit?)"));
        }
        let prio = t.header.frame.urgency();
        enqueue(&mut link.out, OutFrame { header: t.header.encode(), payload: t.payload, done: 0, notify: t.notify, prio });
        if link.conn.is_none() {
            self.connect(peer)?;
        }
        if self.peers[peer as usize].established {
            self.flush_peer(peer, sink)?;
        }
        Ok(())
    }

    fn connect(&mut self, peer: Pid) -> Result<(), TransportError> {
        let addrs = self.peers[peer as usize].addrs.clone();
        if addrs.is_empty() {
            return Err(terr(Some(peer), "no TCP address is known for this rank"));
        }
        // SAFETY: creating a socket we own.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(terr(Some(peer), format!("socket: {}", last_err())));
        }
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        set_nonblocking_nodelay(fd.as_raw_fd());
        set_buf(fd.as_raw_fd(), libc::SO_SNDBUF, self.sndbuf);
        set_buf(fd.as_raw_fd(), libc::SO_RCVBUF, self.rcvbuf);
        self.tune(peer, fd.as_raw_fd());
        let mut nonce_c = [0u8; 16];
        sys::random_bytes(&mut nonce_c).map_err(|e| terr(Some(peer), format!("getrandom: {e}")))?;
        let conn = Conn {
            fd,
            peer: Some(peer),
            state: State::Connecting,
            connector: true,
            nonce_c,
            nonce_a: [0; 16],
            hs_out: Vec::new(),
            rbuf: vec![0; 64 * 1024],
            rlen: 0,
            writable_armed: false,
            addrs,
            direct: None,
            opened: std::time::Instant::now(),
        };
        let idx = self.insert_conn(conn);
        self.peers[peer as usize].conn = Some(idx);
        self.start_connect(idx)
    }

    fn insert_conn(&mut self, c: Conn) -> usize {
        match self.conns.iter().position(|c| c.is_none()) {
            Some(i) => {
                self.conns[i] = Some(c);
                i
            }
            None => {
                self.conns.push(Some(c));
                self.conns.len() - 1
            }
        }
    }

    /// Try the next address of a connecting connection.
    fn start_connect(&mut self, idx: usize) -> Result<(), TransportError> {
        let c = self.conns[idx].as_mut().unwrap();
        let peer = c.peer;
        let Some(addr) = c.addrs.first().copied() else {
            return Err(terr(peer, "could not connect to any of its addresses"));
        };
        let sa = sockaddr(addr);
        // SAFETY: sa is a valid sockaddr_in.
        let r = unsafe { libc::connect(c.fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, std::mem::size_of_val(&sa) as u32) };
        if r < 0 {
            let e = last_err();
            if e.raw_os_error() != Some(libc::EINPROGRESS) {
                c.addrs.remove(0);
                if c.addrs.is_empty() {
                    return Err(terr(peer, format!("connect to {addr}: {e}")));
                }
                return self.start_connect(idx);
            }
        }
        let token = CONN_TOKEN_BASE + idx as u64;
        let _ = self.ep.add(c.fd.as_raw_fd(), sys::EPOLLIN | sys::EPOLLOUT, token);
        c.writable_armed = true;
        Ok(())
    }

    /// Accept pending connections.
    fn accept(&mut self) {
        loop {
            // SAFETY: accept on our listening socket.
            let fd = unsafe {
                libc::accept4(self.listener.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC)
            };
            if fd < 0 {
                return;
            }
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            set_nonblocking_nodelay(fd.as_raw_fd());
            set_buf(fd.as_raw_fd(), libc::SO_SNDBUF, self.sndbuf);
            set_buf(fd.as_raw_fd(), libc::SO_RCVBUF, self.rcvbuf);
            let mut nonce_a = [0u8; 16];
            if sys::random_bytes(&mut nonce_a).is_err() {
                continue;
            }
            let conn = Conn {
                fd,
                peer: None,
                state: State::AwaitHello,
                connector: false,
                nonce_c: [0; 16],
                nonce_a,
                hs_out: Vec::new(),
                rbuf: vec![0; 64 * 1024],
                rlen: 0,
                writable_armed: false,
                addrs: Vec::new(),
                direct: None,
                opened: std::time::Instant::now(),
            };
            let raw = conn.fd.as_raw_fd();
            let idx = self.insert_conn(conn);
            let _ = self.ep.add(raw, sys::EPOLLIN, CONN_TOKEN_BASE + idx as u64);
        }
    }

    fn mac(&self, label: &[u8], from: Pid, to: Pid, nonce_c: &[u8; 16], nonce_a: &[u8; 16]) -> [u8; 32] {
        auth::hmac_sha256(&self.secret, &[label, &from.to_le_bytes(), &to.to_le_bytes(), &self.job.to_le_bytes(), nonce_c, nonce_a])
    }

    /// Handle readiness of connection `token`.
    fn handle_event(&mut self, token: u64, events: u32, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let idx = (token - CONN_TOKEN_BASE) as usize;
        if self.conns.get(idx).is_none_or(|c| c.is_none()) {
            return Ok(());
        }
        if events & sys::EPOLLOUT != 0 {
            self.on_writable(idx, sink)?;
        }
        if events & (sys::EPOLLIN | sys::EPOLLHUP | sys::EPOLLERR) != 0 && self.conns[idx].is_some() {
            self.on_readable(idx, sink)?;
        }
        self.reap(idx);
        Ok(())
    }

    fn reap(&mut self, idx: usize) {
        if self.conns[idx].as_ref().is_some_and(|c| c.state == State::Dead) {
            let c = self.conns[idx].take().unwrap();
            let _ = self.ep.delete(c.fd.as_raw_fd());
            if let Some(p) = c.peer {
                let link = &mut self.peers[p as usize];
                if link.established && link.conn == Some(idx) {
                    self.events.push(ConnEvent::Closed { peer: p, fd: c.fd.as_raw_fd() });
                }
                if link.conn == Some(idx) {
                    link.conn = None;
                    link.established = false;
                }
            }
        }
    }

    fn on_writable(&mut self, idx: usize, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let me = self.me;
        let job = self.job;
        let c = self.conns[idx].as_mut().unwrap();
        if c.state == State::Connecting {
            let mut err: libc::c_int = 0;
            let mut len = 4 as libc::socklen_t;
            // SAFETY: reading an int socket option.
            unsafe { libc::getsockopt(c.fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR, &mut err as *mut _ as *mut libc::c_void, &mut len) };
            if err != 0 {
                let addr = c.addrs.remove(0);
                let peer = c.peer;
                if c.addrs.is_empty() {
                    return Err(terr(peer, format!("connect to {addr}: {}", io::Error::from_raw_os_error(err))));
                }
                // A fresh socket for the next address.
                let _ = self.ep.delete(c.fd.as_raw_fd());
                // SAFETY: creating a socket we own.
                let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
                if fd < 0 {
                    return Err(terr(peer, format!("socket: {}", last_err())));
                }
                c.fd = unsafe { OwnedFd::from_raw_fd(fd) };
                set_nonblocking_nodelay(fd);
                if let Some(p) = peer {
                    self.tune(p, fd);
                }
                return self.start_connect(idx);
            }
            let peer = c.peer.unwrap();
            let mut hello = Vec::with_capacity(HELLO_LEN);
            hello.extend_from_slice(HELLO_MAGIC);
            hello.extend_from_slice(&VERSION.to_le_bytes());
            hello.extend_from_slice(&me.to_le_bytes());
            hello.extend_from_slice(&peer.to_le_bytes());
            hello.extend_from_slice(&0u32.to_le_bytes());
            hello.extend_from_slice(&job.to_le_bytes());
            hello.extend_from_slice(&c.nonce_c);
            c.hs_out = hello;
            c.state = State::AwaitWelcome;
        }
        if !c.hs_out.is_empty() {
            write_some(c)?;
        }
        let c = self.conns[idx].as_mut().unwrap();
        if c.state == State::Established && c.hs_out.is_empty() {
            if let Some(p) = c.peer {
                self.flush_peer(p, sink)?;
            }
        }
        self.update_interest(idx);
        Ok(())
    }

    fn update_interest(&mut self, idx: usize) {
        let Some(c) = self.conns[idx].as_mut() else { return };
        let want = !c.hs_out.is_empty()
            || c.state == State::Connecting
            || (c.state == State::Established && c.peer.is_some_and(|p| !self.peers[p as usize].out.is_empty()));
        if want != c.writable_armed {
            let ev = if want { sys::EPOLLIN | sys::EPOLLOUT } else { sys::EPOLLIN };
            let _ = self.ep.modify(c.fd.as_raw_fd(), ev, CONN_TOKEN_BASE + idx as u64);
            c.writable_armed = want;
        }
    }

    fn on_readable(&mut self, idx: usize, sink: &mut dyn Sink) -> Result<(), TransportError> {
        loop {
            if self.conns[idx].as_ref().unwrap().direct.is_some() {
                match self.read_direct(idx, sink)? {
                    Some(true) => continue,
                    Some(false) => return Ok(()),
                    None => return self.on_eof(idx),
                }
            }
            let c = self.conns[idx].as_mut().unwrap();
            if c.rlen == c.rbuf.len() {
                let n = c.rbuf.len() * 2;
                c.rbuf.resize(n, 0);
            }
            // SAFETY: reading into the unused tail of our buffer.
            let n = unsafe {
                libc::recv(c.fd.as_raw_fd(), c.rbuf.as_mut_ptr().add(c.rlen) as *mut libc::c_void, c.rbuf.len() - c.rlen, libc::MSG_DONTWAIT)
            };
            if n == 0 {
                return self.on_eof(idx);
            }
            if n < 0 {
                let e = last_err();
                match e.kind() {
                    io::ErrorKind::WouldBlock => return Ok(()),
                    io::ErrorKind::Interrupted => continue,
                    _ => {
                        if e.raw_os_error() == Some(libc::ECONNRESET) {
                            return self.on_eof(idx);
                        }
                        let peer = c.peer;
                        return Err(terr(peer, format!("receive failed: {e}")));
                    }
                }
            }
            c.rlen += n as usize;
            self.consume(idx, sink)?;
            if self.conns[idx].as_ref().is_none_or(|c| c.state == State::Dead) {
                return Ok(());
            }
        }
    }

    /// Read the payload of the pending direct Data frame into user memory.
    /// Some(true): progress (or done), Some(false): would block, None: EOF.
    fn read_direct(&mut self, idx: usize, sink: &mut dyn Sink) -> Result<Option<bool>, TransportError> {
        let c = self.conns[idx].as_mut().unwrap();
        let peer = c.peer;
        let d = c.direct.as_mut().unwrap();
        let len = d.header.payload_len as u64;
        self.runs.clear();
        let Frame::Data { offset, .. } = d.header.frame else { unreachable!("only Data frames land directly") };
        d.buf.runs(offset + d.done, len - d.done, 256, &mut self.runs);
        let mut iov: Vec<libc::iovec> =
            self.runs.iter().map(|&(p, l)| libc::iovec { iov_base: p as *mut libc::c_void, iov_len: l }).collect();
        // SAFETY: a zeroed msghdr is valid; the iovecs point into the receive
        // buffer of a pending request, within the range the engine accepted.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len();
        let n = unsafe { libc::recvmsg(c.fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        if n == 0 {
            return Ok(None);
        }
        if n < 0 {
            let e = last_err();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(Some(false)),
                io::ErrorKind::Interrupted => Ok(Some(true)),
                _ if e.raw_os_error() == Some(libc::ECONNRESET) => Ok(None),
                _ => Err(terr(peer, format!("receive failed: {e}"))),
            };
        }
        d.done += n as u64;
        if d.done == len {
            let h = d.header;
            c.direct = None;
            sink.data_landed(peer.unwrap(), &h).map_err(|e| terr(peer, e))?;
        }
        Ok(Some(true))
    }

    fn on_eof(&mut self, idx: usize) -> Result<(), TransportError> {
        let c = self.conns[idx].as_mut().unwrap();
        let was_established = c.state == State::Established;
        c.state = State::Dead;
        let peer = c.peer;
        if let Some(p) = peer {
            if was_established {
                self.peers[p as usize].closed = true;
                if !self.finalizing {
                    return Err(terr(peer, "the peer closed the connection unexpectedly (did it exit or crash?)"));
                }
            }
        }
        Ok(())
    }

    /// Parse what has been read: handshake messages, then frames.
    fn consume(&mut self, idx: usize, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let mut start = 0usize;
        let result = loop {
            let c = self.conns[idx].as_mut().unwrap();
            let avail = c.rlen - start;
            match c.state {
                State::AwaitHello => {
                    if avail < HELLO_LEN {
                        break Ok(());
                    }
                    let m = c.rbuf[start..start + HELLO_LEN].to_vec();
                    start += HELLO_LEN;
                    if let Err(e) = self.on_hello(idx, &m) {
                        break Err(e);
                    }
                }
                State::AwaitWelcome => {
                    if avail < WELCOME_LEN {
                        break Ok(());
                    }
                    let m = c.rbuf[start..start + WELCOME_LEN].to_vec();
                    start += WELCOME_LEN;
                    if let Err(e) = self.on_welcome(idx, &m, sink) {
                        break Err(e);
                    }
                }
                State::AwaitProof => {
                    if avail < PROOF_LEN {
                        break Ok(());
                    }
                    let m = c.rbuf[start..start + PROOF_LEN].to_vec();
                    start += PROOF_LEN;
                    if let Err(e) = self.on_proof(idx, &m, sink) {
                        break Err(e);
                    }
                }
                State::Established => {
                    if avail < HEADER_LEN {
                        break Ok(());
                    }
                    let peer = c.peer.unwrap();
                    let hb: [u8; HEADER_LEN] = c.rbuf[start..start + HEADER_LEN].try_into().unwrap();
                    let h = match Header::decode(&hb) {
                        Ok(h) => h,
                        Err(e) => break Err(terr(Some(peer), format!("malformed frame: {e}"))),
                    };
                    let total = HEADER_LEN + h.payload_len as usize;
                    if avail < total && matches!(h.frame, Frame::Data { .. }) && h.payload_len as usize >= DIRECT_MIN {
                        // Land what we have, then read the rest in place.
                        let buf = match sink.data_target(peer, &h) {
                            Ok(b) => b,
                            Err(e) => break Err(terr(Some(peer), e)),
                        };
                        let have = avail - HEADER_LEN;
                        let Frame::Data { offset, .. } = h.frame else { unreachable!("checked above") };
                        // SAFETY: the sink checked the range against what it accepts.
                        unsafe { buf.write_packed(offset, &c.rbuf[start + HEADER_LEN..start + HEADER_LEN + have]) };
                        c.direct = Some(Direct { header: h, buf, done: have as u64 });
                        start += avail;
                        break Ok(());
                    }
                    if avail < total {
                        if total > c.rbuf.len() {
                            // Make room for this frame: move it to the front and grow.
                            c.rbuf.copy_within(start..c.rlen, 0);
                            c.rlen -= start;
                            start = 0;
                            c.rbuf.resize(total.next_power_of_two(), 0);
                        }
                        break Ok(());
                    }
                    let payload = &c.rbuf[start + HEADER_LEN..start + total];
                    if let Err(e) = sink.frame(peer, &h, payload) {
                        break Err(terr(Some(peer), e));
                    }
                    start += total;
                }
                State::Connecting | State::Dead => break Ok(()),
            }
        };
        if let Some(c) = self.conns[idx].as_mut() {
            c.rbuf.copy_within(start..c.rlen, 0);
            c.rlen -= start;
            // Shrink a buffer grown for one big frame once it is empty.
            if c.rlen == 0 && c.rbuf.len() > (1 << 20) {
                c.rbuf.truncate(64 * 1024);
                c.rbuf.shrink_to_fit();
            }
        }
        result
    }

    fn on_hello(&mut self, idx: usize, m: &[u8]) -> Result<(), TransportError> {
        let u32_at = |i: usize| u32::from_le_bytes(m[i..i + 4].try_into().unwrap());
        let c = self.conns[idx].as_mut().unwrap();
        if &m[..8] != HELLO_MAGIC || u32_at(8) != VERSION {
            c.state = State::Dead;
            return Ok(()); // not one of ours: drop silently
        }
        let from = u32_at(12);
        let to = u32_at(16);
        let job = u64::from_le_bytes(m[24..32].try_into().unwrap());
        c.nonce_c.copy_from_slice(&m[32..48]);
        let mut status = STATUS_OK;
        if to != self.me || job != self.job || from as usize >= self.peers.len() || from == self.me {
            status = STATUS_WRONG_JOB;
        } else {
            let link = &self.peers[from as usize];
            if link.established || (link.conn.is_some() && self.me < from) {
                status = STATUS_DUPLICATE;
            }
        }
        let c = self.conns[idx].as_mut().unwrap();
        let (nc, na) = (c.nonce_c, c.nonce_a);
        let mac = self.mac(b"acceptor", from, self.me, &nc, &na);
        let c = self.conns[idx].as_mut().unwrap();
        let mut w = Vec::with_capacity(WELCOME_LEN);
        w.extend_from_slice(WELCOME_MAGIC);
        w.extend_from_slice(&status.to_le_bytes());
        w.extend_from_slice(&0u32.to_le_bytes());
        w.extend_from_slice(&na);
        w.extend_from_slice(&mac);
        c.hs_out.extend_from_slice(&w);
        if status == STATUS_OK {
            c.peer = Some(from);
            c.state = State::AwaitProof;
            let fd = c.fd.as_raw_fd();
            self.tune(from, fd);
            // Our own attempt (if any, we are the higher pid) will be refused.
            let link = &mut self.peers[from as usize];
            if let Some(old) = link.conn.replace(idx) {
                if old != idx {
                    if let Some(oc) = self.conns[old].as_mut() {
                        oc.peer = None; // its refusal must not disturb the link
                        oc.state = State::Dead;
                    }
                    self.reap(old);
                }
            }
        }
        let c = self.conns[idx].as_mut().unwrap();
        write_some(c)?;
        if status != STATUS_OK {
            c.state = State::Dead;
        }
        self.update_interest(idx);
        Ok(())
    }

    fn on_welcome(&mut self, idx: usize, m: &[u8], sink: &mut dyn Sink) -> Result<(), TransportError> {
        let c = self.conns[idx].as_mut().unwrap();
        let peer = c.peer.unwrap();
        if &m[..8] != WELCOME_MAGIC {
            return Err(terr(Some(peer), "the peer does not speak GridMPI's protocol"));
        }
        let status = u32::from_le_bytes(m[8..12].try_into().unwrap());
        match status {
            STATUS_OK => {}
            STATUS_DUPLICATE => {
                // The peer's own connection to us wins; ours goes away.
                c.state = State::Dead;
                c.peer = None;
                let link = &mut self.peers[peer as usize];
                if link.conn == Some(idx) {
                    link.conn = None;
                }
                return Ok(());
            }
            _ => return Err(terr(Some(peer), "the peer says we are not part of its job (wrong rank or job id)")),
        }
        c.nonce_a.copy_from_slice(&m[16..32]);
        let (nc, na) = (c.nonce_c, c.nonce_a);
        let expect = self.mac(b"acceptor", self.me, peer, &nc, &na);
        if !auth::equal_ct(&expect, &m[32..64]) {
            return Err(terr(Some(peer), "the peer failed to prove it belongs to this job (bad MAC)"));
        }
        let proof = self.mac(b"connector", self.me, peer, &nc, &na);
        let c = self.conns[idx].as_mut().unwrap();
        c.hs_out.extend_from_slice(PROOF_MAGIC);
        c.hs_out.extend_from_slice(&proof);
        c.state = State::Established;
        write_some(c)?;
        let fd = c.fd.as_raw_fd();
        self.events.push(ConnEvent::Opened { peer, fd });
        self.peers[peer as usize].established = true;
        if self.peers[peer as usize].pace.is_some() {
            self.apply_pacing(peer);
        }
        self.flush_peer(peer, sink)?;
        self.update_interest(idx);
        Ok(())
    }

    fn on_proof(&mut self, idx: usize, m: &[u8], sink: &mut dyn Sink) -> Result<(), TransportError> {
        let c = self.conns[idx].as_mut().unwrap();
        let peer = c.peer.unwrap();
        let (nc, na) = (c.nonce_c, c.nonce_a);
        let expect = self.mac(b"connector", peer, self.me, &nc, &na);
        if &m[..8] != PROOF_MAGIC || !auth::equal_ct(&expect, &m[8..40]) {
            // Someone who is not in the job: drop the connection, keep running.
            let c = self.conns[idx].as_mut().unwrap();
            c.state = State::Dead;
            self.peers[peer as usize].conn = None;
            return Ok(());
        }
        let c = self.conns[idx].as_mut().unwrap();
        c.state = State::Established;
        let fd = c.fd.as_raw_fd();
        self.events.push(ConnEvent::Opened { peer, fd });
        self.peers[peer as usize].established = true;
        if self.peers[peer as usize].pace.is_some() {
            self.apply_pacing(peer);
        }
        self.flush_peer(peer, sink)?;
        self.update_interest(idx);
        Ok(())
    }

    /// Write queued frames of `peer` until the socket is full.
    fn flush_peer(&mut self, peer: Pid, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let Some(idx) = self.peers[peer as usize].conn else { return Ok(()) };
        let Some(c) = self.conns[idx].as_ref() else { return Ok(()) };
        if c.state != State::Established || !c.hs_out.is_empty() {
            return Ok(());
        }
        let fd = c.fd.as_raw_fd();
        let budget = match self.peers[peer as usize].paced_unsent {
            Some(max) => {
                let room = (max as u64).saturating_sub(socket_unsent(fd).unwrap_or(0) as u64);
                stretch_to_frame_end(&self.peers[peer as usize].out, room)
            }
            None => u64::MAX,
        };
        if budget == 0 {
            self.update_interest(idx);
            return Ok(());
        }
        let mut out = std::mem::take(&mut self.peers[peer as usize].out);
        let result = write_frames(fd, &mut out, &mut self.runs, sink, budget);
        self.peers[peer as usize].out = out;
        result.map_err(|e| terr(Some(peer), format!("send failed: {e}")))?;
        self.update_interest(idx);
        Ok(())
    }

    /// Try to push out everything queued (called from the progress loop).
    fn flush_all(&mut self, sink: &mut dyn Sink) -> Result<(), TransportError> {
        for p in 0..self.peers.len() {
            if !self.peers[p].out.is_empty() && self.peers[p].established {
                self.flush_peer(p as Pid, sink)?;
            }
        }
        Ok(())
    }

    /// Fail connections we opened that are still not established after the
    /// timeout; drop incoming ones that never completed the handshake.
    fn check_timeouts(&mut self) -> Result<(), TransportError> {
        for idx in 0..self.conns.len() {
            let Some(c) = self.conns[idx].as_mut() else { continue };
            if c.state == State::Established || c.state == State::Dead || c.opened.elapsed() < self.connect_timeout {
                continue;
            }
            if c.connector {
                let addrs: Vec<String> = c.addrs.iter().map(|a| a.to_string()).collect();
                return Err(terr(
                    c.peer,
                    format!("no connection after {:?} (trying {}; is the host reachable and the rank alive?)", self.connect_timeout, addrs.join(", ")),
                ));
            }
            c.state = State::Dead;
            self.reap(idx);
        }
        Ok(())
    }

    fn close_all(&mut self) {
        for c in self.conns.iter_mut().flatten() {
            if let (State::Established, Some(p)) = (&c.state, c.peer) {
                self.events.push(ConnEvent::Closed { peer: p, fd: c.fd.as_raw_fd() });
            }
            let _ = self.ep.delete(c.fd.as_raw_fd());
        }
        self.conns.clear();
    }
}

impl Tcp {
    /// Hand the connection events gathered meanwhile to the sink.
    fn report(&mut self, sink: &mut dyn Sink) {
        for ev in self.events.drain(..) {
            sink.event(ev);
        }
    }

    /// Close every connection (at finalize).
    pub fn close(&mut self, sink: &mut dyn Sink) {
        self.close_all();
        self.report(sink);
    }
}

impl Transport for Tcp {
    fn send(&mut self, t: Transmit, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let r = self.queue(t, sink);
        self.report(sink);
        r
    }

    fn poll(&mut self, sink: &mut dyn Sink) -> Result<bool, TransportError> {
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        let waited = self.ep.wait(&mut ready, Some(std::time::Duration::ZERO));
        let mut result = waited.map(|_| !ready.is_empty()).map_err(|e| terr(None, format!("epoll_wait: {e}")));
        for &(token, ev) in &ready {
            if result.is_err() {
                break;
            }
            if token == LISTEN_TOKEN {
                self.accept();
            } else if let Err(e) = self.handle_event(token, ev, sink) {
                result = Err(e);
            }
        }
        self.ready = ready;
        if result.is_ok() && self.backlog() > 0 {
            // Frames wait for a connection or for room: try again, and make
            // sure a connection cannot be waited for forever.
            if let Err(e) = self.flush_all(sink).and_then(|_| self.check_timeouts()) {
                result = Err(e);
            }
        }
        self.report(sink);
        result
    }

    fn set_pace(&mut self, peer: Pid, bytes_per_sec: Option<u64>, sink: &mut dyn Sink) {
        self.peers[peer as usize].pace = bytes_per_sec;
        self.apply_pacing(peer);
        self.report(sink);
    }

    fn unsent(&self, peer: Pid) -> u64 {
        self.unsent_bytes(peer).unwrap_or(0) as u64
    }

    fn backlog(&self) -> usize {
        Tcp::backlog(self)
    }

    fn next_deadline(&self) -> Option<std::time::Duration> {
        // A connection being made is checked against its timeout.
        (self.backlog() > 0).then_some(std::time::Duration::from_millis(100))
    }

    fn wait_fd(&self) -> RawFd {
        self.ep.raw_fd()
    }
}

/// Bytes written to a TCP socket and not yet sent.
fn socket_unsent(fd: RawFd) -> Option<u32> {
    let mut v: libc::c_int = 0;
    // SAFETY: SIOCOUTQNSD writes an int.
    let r = unsafe { libc::ioctl(fd, 0x894B /* SIOCOUTQNSD */, &mut v) };
    (r == 0).then_some(v.max(0) as u32)
}

fn write_some(c: &mut Conn) -> Result<(), TransportError> {
    while !c.hs_out.is_empty() {
        // SAFETY: writing from our own buffer.
        let n = unsafe { libc::send(c.fd.as_raw_fd(), c.hs_out.as_ptr() as *const libc::c_void, c.hs_out.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = last_err();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(()),
                io::ErrorKind::Interrupted => continue,
                _ => Err(terr(c.peer, format!("send failed during handshake: {e}"))),
            };
        }
        c.hs_out.drain(..n as usize);
    }
    Ok(())
}

/// Write frames from the front of `out` until the socket would block or
/// `budget` bytes are written. Completed frames are popped and their
/// requests notified.
fn write_frames(
    fd: RawFd,
    out: &mut VecDeque<OutFrame>,
    runs: &mut Vec<(*mut u8, usize)>,
    sink: &mut dyn Sink,
    mut budget: u64,
) -> io::Result<()> {
    const MAX_IOV: usize = 256;
    let mut iov: Vec<libc::iovec> = Vec::with_capacity(MAX_IOV);
    while !out.is_empty() && budget > 0 {
        iov.clear();
        'frames: for f in out.iter() {
            let mut skip = f.done;
            if skip < HEADER_LEN as u64 {
                iov.push(libc::iovec {
                    iov_base: f.header[skip as usize..].as_ptr() as *mut libc::c_void,
                    iov_len: HEADER_LEN - skip as usize,
                });
                skip = 0;
            } else {
                skip -= HEADER_LEN as u64;
            }
            match &f.payload {
                Payload::None => {}
                Payload::Owned(v) => iov.push(libc::iovec {
                    iov_base: v[skip as usize..].as_ptr() as *mut libc::c_void,
                    iov_len: v.len() - skip as usize,
                }),
                Payload::Word(w) => iov.push(libc::iovec {
                    iov_base: (w as *const u64 as *const u8).wrapping_add(skip as usize) as *mut libc::c_void,
                    iov_len: 8 - skip as usize,
                }),
                Payload::User { buf, offset, len } => {
                    runs.clear();
                    let room = MAX_IOV.saturating_sub(iov.len()).max(1);
                    let covered = buf.runs(offset + skip, len - skip, room, runs);
                    for &(p, l) in runs.iter() {
                        iov.push(libc::iovec { iov_base: p as *mut libc::c_void, iov_len: l });
                    }
                    if covered < len - skip {
                        break 'frames; // the rest of this payload next time
                    }
                }
            }
            if iov.len() >= MAX_IOV - 2 {
                break;
            }
        }
        // Within the budget: drop or shorten the iovecs past it.
        let mut total = 0u64;
        let mut keep = 0;
        for v in iov.iter_mut() {
            if total >= budget {
                break;
            }
            let room = budget - total;
            if v.iov_len as u64 > room {
                v.iov_len = room as usize;
            }
            total += v.iov_len as u64;
            keep += 1;
        }
        iov.truncate(keep);
        // SAFETY: a zeroed msghdr is valid; the iovecs point into memory owned
        // by queued frames or into user buffers of pending requests.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len();
        let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(()),
                io::ErrorKind::Interrupted => continue,
                _ => Err(e),
            };
        }
        let mut n = n as u64;
        budget -= n.min(budget);
        while n > 0 {
            let f = out.front_mut().expect("wrote more than was queued");
            let left = f.total() - f.done;
            if n >= left {
                n -= left;
                let f = out.pop_front().unwrap();
                if let Some(r) = f.notify {
                    sink.sent(r);
                }
            } else {
                f.done += n;
                n = 0;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridmpi_wire::{Envelope, Kind};

    fn frame(kind: Kind, done: u64) -> OutFrame {
        let env = Envelope { ctx: 0, src: 0, tag: 0 };
        let f = match kind {
            Kind::Eager => Frame::Eager { env, sync: None },
            Kind::Rts => Frame::Rts { env, len: 1, sreq: 0, single_copy: false },
            Kind::Cts => Frame::Cts { sreq: 0, rreq: 0, accepted: 0 },
            Kind::Data => Frame::Data { rreq: 0, offset: 0 },
            Kind::Fin => Frame::Fin { sreq: 0 },
            Kind::SyncAck => Frame::SyncAck { sreq: 0 },
            Kind::Credit => Frame::Credit,
        };
        OutFrame { header: Header::new(f, 0).encode(), payload: Payload::None, done, notify: None, prio: kind.urgency() }
    }

    fn kinds(out: &VecDeque<OutFrame>) -> Vec<u8> {
        out.iter().map(|f| f.header[0]).collect()
    }

    #[test]
    fn replies_pass_payloads_but_messages_keep_their_order() {
        let (e, r, c, d) = (Kind::Eager as u8, Kind::Rts as u8, Kind::Cts as u8, Kind::Data as u8);
        let mut out = VecDeque::new();
        // A payload half written stays first; unstarted ones are passed.
        enqueue(&mut out, frame(Kind::Data, 100));
        enqueue(&mut out, frame(Kind::Data, 0));
        enqueue(&mut out, frame(Kind::Rts, 0));
        enqueue(&mut out, frame(Kind::Cts, 0));
        enqueue(&mut out, frame(Kind::Eager, 0));
        enqueue(&mut out, frame(Kind::Credit, 0));
        assert_eq!(kinds(&out), vec![d, c, Kind::Credit as u8, r, e, d]);
        // Replies stay in their own order; a message never passes a message.
        let mut out = VecDeque::new();
        enqueue(&mut out, frame(Kind::Eager, 0));
        enqueue(&mut out, frame(Kind::Cts, 0));
        enqueue(&mut out, frame(Kind::Rts, 0));
        enqueue(&mut out, frame(Kind::Fin, 0));
        assert_eq!(kinds(&out), vec![c, Kind::Fin as u8, e, r]);
    }

    #[test]
    fn paced_sockets_hold_a_few_milliseconds_unsent() {
        assert_eq!(paced_lowat(703_125, None), 4096); // 5.6 Mbit/s: the floor
        assert_eq!(paced_lowat(12_500_000, None), 50_000); // 100 Mbit/s: 4 ms
        assert_eq!(paced_lowat(12_500_000, Some(32_768)), 32_768); // never above the tuned bound
    }

    #[test]
    fn a_paced_budget_does_not_cut_off_a_small_frame_tail() {
        let sized = |len: usize, done: u64| OutFrame { payload: Payload::Owned(vec![0; len]), ..frame(Kind::Eager, done) };
        let h = HEADER_LEN as u64;
        // A 4 KiB eager message under a 4096-byte budget goes out whole.
        let out: VecDeque<_> = [sized(4096, 0)].into();
        assert_eq!(stretch_to_frame_end(&out, 4096), 4096 + h);
        // A long remainder is left for later, so is the next frame.
        let out: VecDeque<_> = [sized(8192, 0)].into();
        assert_eq!(stretch_to_frame_end(&out, 4096), 4096);
        let out: VecDeque<_> = [sized(1000, 0), sized(4096, 0)].into();
        assert_eq!(stretch_to_frame_end(&out, 1000 + h), 1000 + h);
        // The frame the budget ends in counts from what is left of it.
        let out: VecDeque<_> = [sized(1000, 500), sized(4096, 0)].into();
        assert_eq!(stretch_to_frame_end(&out, 4000), 540 + 4096 + h);
        // No room stays no room; room past everything queued stays as is.
        assert_eq!(stretch_to_frame_end(&out, 0), 0);
        assert_eq!(stretch_to_frame_end(&out, 1 << 20), 1 << 20);
    }
}

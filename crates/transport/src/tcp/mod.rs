//! TCP between hosts.
//!
//! Every process listens on one socket; a connection to a peer is made the
//! first time something is sent to it. Before any frame is accepted, both
//! ends prove they belong to the job ([`handshake`]: HMAC-SHA256 over fresh
//! nonces with the job's secret). When two processes connect to each other
//! at once, the connection made by the lower pid wins. Frames for a peer
//! queue up until its connection is established, so order is kept.
//!
//! A link may have to be encrypted (GRIDMPI_WAN_TLS): its connections are
//! then TLS from their first byte, the handshake running inside; an
//! acceptor tells TLS from plain by that byte and refuses a plain caller
//! on such a link once it has proven who it is.
//!
//! A connection that is reset or aborted does not end the job: both sides
//! make a new one (with the same proof) and the link's streams go on where
//! the receiver stands ([`stream`]), for as long as the outage budget
//! allows ([`Tcp::resume_budget`]).
//!
//! - [`handshake`]: the handshake as a step machine (no I/O);
//! - `conn`: a connection's phases, its reads, frames out of bytes;
//! - `sendq`: the send queue, the paced write budget, writev straight from
//!   user buffers;
//! - [`stream`]: a link's byte streams across connections (what to keep,
//!   acknowledge and write again);
//! - [`tuning`]: socket options and pacing;
//! - `tls`: TLS 1.3 on a connection whose link must be encrypted
//!   ([`Tcp::set_tls`]): the job's key from its secret, and the byte layer
//!   every read and write of such a connection goes through (`conn::Wire`);
//! - here: the [`Transport`] itself, connections made and accepted, the
//!   epoll set, timeouts.

mod conn;
pub mod handshake;
mod sendq;
mod tls;
pub mod stream;
pub mod tuning;

use crate::sys::{self, Epoll};
use crate::{terr, ConnEvent, Sink, Transport, TransportError};
use conn::{Conn, Phase};
use gridmpi_wire::{Pid, Transmit, WIRE_VERSION};
use handshake::{Acceptor, Connector, Directory, Identity, Keys, Party, Who};
use sendq::OutFrame;
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use stream::{Carry, Incoming, Outgoing};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use tuning::{set_buf, set_nonblocking_nodelay, socket_error};

pub use tuning::Tuning;

/// Why a link was re-made after [`Tcp::after_restore`] (its
/// `ConnEvent::Resumed` says so: an expected break, not the network's).
pub const RESTARTED: &str = "restarted from a checkpoint";

/// Tokens in the transport's epoll set: the listening socket, then one per
/// connection slot.
const LISTEN_TOKEN: u64 = 0;
const CONN_TOKEN_BASE: u64 = 1;

/// At most this many accepted connections may be unproven (their caller
/// has not yet proven it holds the job secret); beyond it the oldest is
/// closed. Anyone who can reach the port can open connections: they must
/// not use up our file descriptors or memory.
const MAX_UNPROVEN: usize = 64;
/// An accepted caller must have proven itself within this long (a real
/// peer needs two round trips).
const UNPROVEN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);
/// How often unproven connections are looked at.
const REAP_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// How to reach a peer through relays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayWay {
    /// The relay to connect to.
    pub first: SocketAddrV4,
    /// The relays after it.
    pub via: Vec<SocketAddrV4>,
    /// gridmpi_relay::relay_key of the job secret.
    pub key: [u8; 32],
}

#[derive(Default)]
struct PeerLink {
    /// A process of another world (joined by MPI_Comm_accept/connect,
    /// spawn or join): who it is and the keys of our link with its world.
    /// None for a rank of our own job.
    foreign: Option<(Who, Keys)>,
    addrs: Vec<SocketAddrV4>,
    /// When the peer is reached through relays: the way there.
    relay: Option<RelayWay>,
    /// Index into `conns` of the connection in use, or of our own attempt
    /// being made. A connection we accepted is put here only once its
    /// caller has proven to be this peer and been admitted.
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
    /// What the pacing rate has not yet paid for of what was written.
    ledger: sendq::PaceLedger,
    /// The link's streams, which outlive its connections.
    tx: Outgoing,
    rx: Incoming,
    /// The generation of the last established connection (0: none yet).
    generation: u32,
    /// The incomplete frame a broken connection left for the next one.
    carry: Option<Carry>,
    /// Set while the link is being re-made after a connection broke.
    broken: Option<Broken>,
    /// Connections that took over after a break, and the bytes they wrote
    /// again (MPI_T's gridmpi_tcp_reconnections, gridmpi_tcp_resent_bytes).
    resumed: u64,
    resent: u64,
    /// Whether the link must be encrypted (TLS): connections we make are,
    /// and a plain caller proving to be this peer is refused.
    tls: bool,
}

/// A link whose connection broke, being re-made.
struct Broken {
    since: Instant,
    why: String,
    /// Whether anything depends on a new connection (see
    /// `Tcp::connection_broke`); if not, one is made when a frame is sent.
    needed: bool,
    attempts: u32,
    next_attempt: Instant,
}

impl Broken {
    /// The attempt just made failed: the next one after a pause growing
    /// from 100 ms to 2 s.
    fn retry_later(&mut self) {
        self.attempts += 1;
        let pause = Duration::from_millis(100 << self.attempts.min(5)).min(Duration::from_secs(2));
        self.next_attempt = Instant::now() + pause;
    }
}

pub struct Tcp {
    me: Pid,
    /// The transport's own epoll set: the listener and every connection.
    ep: Epoll,
    keys: Keys,
    /// Who may call us (our ranks, and the processes of joined worlds).
    directory: std::sync::Arc<Directory>,
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
    /// An fd held in reserve: when accept fails for want of descriptors it
    /// is closed so the waiting connection can be accepted and closed
    /// (otherwise the listener stays readable and we would spin on it).
    spare_fd: Option<OwnedFd>,
    /// When unproven connections were last looked at.
    reaped_at: std::time::Instant,
    /// How long a broken connection may take to be re-made before the job
    /// gives up (the WAN outage budget).
    pub resume_budget: Duration,
    /// The job's TLS configurations, made from its secret when first needed
    /// (by a link that must be encrypted, or a caller speaking TLS).
    job_tls: Option<std::sync::Arc<tls::JobTls>>,
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

/// A descriptor to hold in reserve (see `Tcp::spare_fd`).
fn spare_fd() -> Option<OwnedFd> {
    std::fs::File::open("/dev/null").ok().map(OwnedFd::from)
}

/// A TCP socket for a connection we make.
fn new_socket() -> io::Result<OwnedFd> {
    // SAFETY: creating a socket we own.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(last_err());
    }
    // SAFETY: a fresh fd nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A listening socket on `bind`, on the first free port of `ports` (tried
/// from a point that depends on our process id, so that the ranks of a
/// host do not all race for the same ports), or on any port.
fn listen_on(bind: Ipv4Addr, ports: Option<(u16, u16)>) -> io::Result<OwnedFd> {
    let candidates: Vec<u16> = match ports {
        None => vec![0],
        Some((lo, hi)) => {
            let span = (hi - lo) as u32 + 1;
            let first = std::process::id() % span;
            (0..span).map(|i| lo + ((first + i) % span) as u16).collect()
        }
    };
    for port in candidates {
        // SAFETY: plain syscalls on a socket we own; results checked.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(last_err());
        }
        let listener = unsafe { OwnedFd::from_raw_fd(fd) };
        let sa = sockaddr(SocketAddrV4::new(bind, port));
        unsafe {
            let one: libc::c_int = 1;
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &one as *const _ as *const libc::c_void, 4);
            if libc::bind(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of_val(&sa) as u32) < 0 {
                let e = last_err();
                if e.raw_os_error() == Some(libc::EADDRINUSE) && ports.is_some() {
                    continue;
                }
                return Err(e);
            }
            if libc::listen(fd, 1024) < 0 {
                let e = last_err();
                if e.raw_os_error() == Some(libc::EADDRINUSE) && ports.is_some() {
                    continue; // another socket listens there (SO_REUSEADDR let bind pass)
                }
                return Err(e);
            }
        }
        return Ok(listener);
    }
    let (lo, hi) = ports.expect("only a range runs out");
    Err(io::Error::new(io::ErrorKind::AddrInUse, format!("every port of {lo}-{hi} (GRIDMPI_TCP_PORTS) is in use")))
}

impl Tcp {
    pub fn new(me: Pid, npeers: usize, job: u64, secret: [u8; 32], bind: Ipv4Addr) -> io::Result<Tcp> {
        Tcp::with_ports(me, npeers, job, secret, bind, None)
    }

    /// Listening on a port of `ports` (inclusive), where a firewall opens
    /// only a range.
    pub fn with_ports(me: Pid, npeers: usize, job: u64, secret: [u8; 32], bind: Ipv4Addr, ports: Option<(u16, u16)>) -> io::Result<Tcp> {
        let listener = listen_on(bind, ports)?;
        let fd = listener.as_raw_fd();
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
            keys: Keys { job, secret },
            directory: std::sync::Arc::new(Directory::own(npeers)),
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
            spare_fd: spare_fd(),
            reaped_at: std::time::Instant::now(),
            resume_budget: Duration::from_secs(900),
            job_tls: None,
        })
    }

    /// The socket of the established connection with `peer`, if any (for
    /// reading its TCP_INFO: MPI_T's performance variables).
    pub fn peer_fd(&self, peer: Pid) -> Option<RawFd> {
        let l = self.peers.get(peer as usize)?;
        if !l.established || l.closed {
            return None;
        }
        let c = self.conns.get(l.conn?)?.as_ref()?;
        Some(c.fd.as_raw_fd())
    }

    /// Whether the link with `peer` survives a broken connection (the
    /// default): its sender keeps a copy of what the peer has not
    /// acknowledged. Without it, a reset connection ends the job.
    pub fn set_resumable(&mut self, peer: Pid, on: bool) {
        self.peers[peer as usize].tx.keep = on;
    }

    /// `peer` failed (a fault-tolerant job's launcher said so): drop its
    /// connection and everything queued for it or kept for resending;
    /// nothing is written to it or read from it again, and sending to it
    /// is an error.
    pub fn forget_peer(&mut self, peer: Pid) {
        let Some(link) = self.peers.get_mut(peer as usize) else { return };
        link.out.clear();
        link.closed = true;
        link.broken = None;
        link.carry = None;
        link.established = false;
        if let Some(i) = link.conn.take() {
            if let Some(c) = self.conns[i].take() {
                let _ = self.ep.delete(c.fd.as_raw_fd());
                self.events.push(ConnEvent::Closed { peer, fd: c.fd.as_raw_fd() });
            }
        }
    }

    /// Reset the connection with `peer` as the network would (`ss -K`):
    /// the peer gets a reset, and both sides make a new connection. For
    /// tests; false if there is no established connection.
    #[doc(hidden)]
    pub fn abort_connection(&mut self, peer: Pid) -> bool {
        let Some(fd) = self.peer_fd(peer) else { return false };
        let linger = libc::linger { l_onoff: 1, l_linger: 0 };
        // SAFETY: setting an option on our own socket; closing it (below,
        // when the connection is dropped) then sends a reset.
        unsafe {
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_LINGER, &linger as *const _ as *const libc::c_void, std::mem::size_of_val(&linger) as u32)
        };
        let idx = self.peers[peer as usize].conn.expect("established");
        self.connection_broke(idx, "aborted".into(), false).is_ok()
    }

    /// This process was restored from a checkpoint (docs/checkpoint.md):
    /// its listener, epoll set and connections are placeholders, while
    /// every link's streams are as they were when the job froze. Listen
    /// again (on `bind`, within `ports`; the new port is [`Tcp::port`], for
    /// the new address card), and treat every link that had or was making
    /// a connection as broken: it is made again with the same proof (the
    /// secret is the image's, as is every peer's) as soon as anything
    /// depends on it, and each side writes again what the other lacks.
    /// The peers' new addresses come with [`Tcp::set_peer_addrs`].
    pub fn after_restore(&mut self, bind: Ipv4Addr, ports: Option<(u16, u16)>) -> io::Result<()> {
        self.ep.renew()?;
        let listener = listen_on(bind, ports)?;
        let mut got: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of_val(&got) as libc::socklen_t;
        // SAFETY: getsockname into a sockaddr_in we own.
        if unsafe { libc::getsockname(listener.as_raw_fd(), &mut got as *mut _ as *mut libc::sockaddr, &mut len) } < 0 {
            return Err(last_err());
        }
        self.ep.add(listener.as_raw_fd(), sys::EPOLLIN, LISTEN_TOKEN)?;
        self.listener = listener;
        self.port = u16::from_be(got.sin_port);
        self.spare_fd = spare_fd();
        // The connections' descriptors are placeholders: dropping them
        // closes /dev/null. What an established one had read of a frame
        // goes on as the link's carry.
        for idx in 0..self.conns.len() {
            let Some(mut c) = self.conns[idx].take() else { continue };
            let Some(peer) = c.peer else { continue };
            let link = &mut self.peers[peer as usize];
            if c.is_established() && link.conn == Some(idx) {
                self.events.push(ConnEvent::Closed { peer, fd: c.fd.as_raw_fd() });
                link.carry = Some(Tcp::take_carry(&mut c));
            }
        }
        let now = Instant::now();
        for link in &mut self.peers {
            let had = link.conn.take().is_some() || link.broken.is_some();
            link.established = false;
            link.out.retain(|f| !f.is_ack());
            let pending = !link.out.is_empty() || link.tx.unacked() > 0;
            if link.closed || (!had && !pending) {
                continue; // done with, or never connected: made when needed
            }
            let partial = link.carry.as_ref().is_some_and(|c| c.len() > 0 || c.direct.is_some());
            let why = RESTARTED.to_string();
            link.broken = Some(Broken { since: now, why, needed: pending || partial, attempts: 0, next_attempt: now });
        }
        Ok(())
    }

    /// How many connections with `peer` took over from a broken one, and
    /// how many bytes they wrote again.
    pub fn resumptions(&self, peer: Pid) -> (u64, u64) {
        self.peers.get(peer as usize).map_or((0, 0), |l| (l.resumed, l.resent))
    }

    /// The pacing rate asked for on the connection with `peer` (bytes/s;
    /// None: unpaced).
    pub fn pace(&self, peer: Pid) -> Option<u64> {
        self.peers.get(peer as usize)?.pace
    }

    /// Set the job identity and secret (known only after the PMI exchange).
    pub fn set_auth(&mut self, job: u64, secret: [u8; 32]) {
        self.keys = Keys { job, secret };
        self.job_tls = None;
    }

    /// Whether the link with `peer` must be encrypted with TLS 1.3, keyed
    /// by the job secret (`tls.rs`). Connections made from now on are; a
    /// caller that proves to be `peer` over a plain connection is refused
    /// (no downgrade). Only for ranks of our own job: the TLS key is the
    /// job's, and a caller is not known before TLS is set up.
    pub fn set_tls(&mut self, peer: Pid, on: bool) {
        self.peers[peer as usize].tls = on;
    }

    /// Whether the link with `peer` must be encrypted.
    pub fn tls(&self, peer: Pid) -> bool {
        self.peers.get(peer as usize).is_some_and(|l| l.tls)
    }

    /// Whether the established connection with `peer` is encrypted (None:
    /// no established connection).
    pub fn encrypted(&self, peer: Pid) -> Option<bool> {
        let l = self.peers.get(peer as usize)?;
        let c = self.conns.get(l.conn.filter(|_| l.established)?)?.as_ref()?;
        Some(c.tls.is_some())
    }

    /// The job's TLS configurations (made once per secret: a key
    /// derivation, a certificate and a signature).
    fn job_tls(&mut self) -> Result<std::sync::Arc<tls::JobTls>, String> {
        if let Some(t) = &self.job_tls {
            return Ok(t.clone());
        }
        let t = std::sync::Arc::new(tls::JobTls::new(&self.keys.secret)?);
        self.job_tls = Some(t.clone());
        Ok(t)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn set_peer_addrs(&mut self, peer: Pid, addrs: Vec<SocketAddrV4>) {
        self.peers[peer as usize].addrs = addrs;
    }

    /// Reach `peer` through relays (gridmpi_relay): connect to `way.first`,
    /// which is told the rest of the way and the peer's addresses.
    pub fn set_peer_relay(&mut self, peer: Pid, way: RelayWay) {
        self.peers[peer as usize].relay = Some(way);
    }

    /// Frames queued but not yet fully written, over all peers.
    pub fn backlog(&self) -> usize {
        self.peers.iter().map(|p| p.out.len()).sum()
    }

    fn identity(&self) -> Identity {
        Identity { me: self.me, version: WIRE_VERSION, keys: self.keys.clone() }
    }

    /// The public id of our job on the wire.
    pub fn world(&self) -> u64 {
        self.keys.world()
    }

    /// Who `peer` is on the wire.
    fn who_of(&self, peer: Pid) -> Who {
        match &self.peers[peer as usize].foreign {
            Some((who, _)) => *who,
            None => Who { world: self.world(), rank: peer },
        }
    }

    /// The keys of our link with `peer`'s world (our job's for our own).
    pub fn keys_of(&self, peer: Pid) -> Keys {
        self.peers.get(peer as usize).and_then(|p| p.foreign.as_ref()).map_or(&self.keys, |(_, k)| k).clone()
    }

    /// `peer` as its connections need it.
    fn party(&self, peer: Pid) -> Party {
        let keys = self.peers[peer as usize].foreign.as_ref().map_or(&self.keys, |(_, k)| k).clone();
        Party { pid: peer, who: self.who_of(peer), keys }
    }

    /// Add a process of another world as peer `pid` (the next pid: the
    /// peers so far are `0..pid`), reached at `addrs` and proving `keys`
    /// (those of the pair of worlds). It may call us from now on.
    pub fn add_peer(&mut self, pid: Pid, who: Who, keys: Keys, addrs: Vec<SocketAddrV4>) {
        assert_eq!(pid as usize, self.peers.len(), "peers are added in pid order");
        std::sync::Arc::make_mut(&mut self.directory).foreign.insert(who, (pid, keys.clone()));
        self.peers.push(PeerLink { foreign: Some((who, keys)), addrs, ..PeerLink::default() });
        self.tuning.push(None);
    }

    /// The pid of the process `who` of another world, if it is a peer.
    pub fn foreign_pid(&self, who: Who) -> Option<Pid> {
        self.directory.foreign.get(&who).map(|(pid, _)| *pid)
    }

    /// Queue a frame for its peer and write what the socket takes now.
    fn queue(&mut self, t: Transmit, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let peer = t.peer;
        let link = &mut self.peers[peer as usize];
        if link.closed {
            return Err(terr(Some(peer), "the peer closed its connection (did it exit?)"));
        }
        sendq::enqueue(&mut link.out, OutFrame::new(t));
        match link.broken.as_mut() {
            // A link re-made lazily: now something needs it.
            Some(b) if !b.needed => {
                b.needed = true;
                b.next_attempt = Instant::now();
            }
            Some(_) => {}
            None if link.conn.is_none() => self.connect(peer)?,
            None => {}
        }
        if self.peers[peer as usize].established {
            self.flush_peer(peer, sink)?;
        }
        Ok(())
    }

    fn connect(&mut self, peer: Pid) -> Result<(), TransportError> {
        let link = &self.peers[peer as usize];
        if link.addrs.is_empty() {
            return Err(terr(Some(peer), "no TCP address is known for this rank"));
        }
        // Through relays: one address to call, and a preface for it that
        // names the rest of the way (fresh for every attempt: a relay
        // admits each preface once).
        let (addrs, mut preface) = match &link.relay {
            None => (link.addrs.clone(), None),
            Some(way) => {
                let p = gridmpi_relay::Preface::new(way.via.clone(), link.addrs.clone())
                    .map_err(|e| terr(Some(peer), format!("getrandom: {e}")))?;
                (vec![way.first], Some(p.line(&way.key)))
            }
        };
        let fd = new_socket().map_err(|e| terr(Some(peer), format!("socket: {e}")))?;
        set_nonblocking_nodelay(fd.as_raw_fd());
        set_buf(fd.as_raw_fd(), libc::SO_SNDBUF, self.sndbuf);
        set_buf(fd.as_raw_fd(), libc::SO_RCVBUF, self.rcvbuf);
        self.tune(peer, fd.as_raw_fd());
        let mut nonce_c = [0u8; 16];
        sys::random_bytes(&mut nonce_c).map_err(|e| terr(Some(peer), format!("getrandom: {e}")))?;
        let link = &self.peers[peer as usize];
        let received = link.rx.position(link.carry.as_ref().map_or(0, |c| c.len()));
        let resume = handshake::Resume { generation: link.generation + 1, received };
        let mut machine = Connector::calling(self.identity(), self.party(peer), nonce_c, resume);
        let session = match self.peers[peer as usize].tls {
            true => {
                let mut s = self.job_tls().and_then(|t| t.connect()).map_err(|e| terr(Some(peer), e))?;
                // The relays read their line in clear, before TLS.
                if let Some(p) = preface.take() {
                    s.preface(&p);
                }
                Some(Box::new(s))
            }
            false => None,
        };
        if let Some(p) = preface {
            machine = machine.through_relay(p);
        }
        let mut conn = Conn::new(fd, Some(peer), Phase::Connecting(machine), addrs);
        conn.asked_generation = resume.generation;
        conn.tls = session;
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

    /// Accept pending connections. Whoever calls is nobody until its
    /// handshake proves otherwise.
    fn accept(&mut self) {
        loop {
            // SAFETY: accept on our listening socket.
            let fd = unsafe {
                libc::accept4(self.listener.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC)
            };
            if fd < 0 {
                let e = last_err().raw_os_error();
                if e == Some(libc::EMFILE) || e == Some(libc::ENFILE) {
                    // Out of descriptors: make room by closing unproven
                    // callers, and shed the waiting connection with the
                    // spare so the listener does not stay readable.
                    if !self.close_oldest_unproven() {
                        self.spare_fd = None;
                        // SAFETY: as above; the connection is closed at once.
                        let fd = unsafe { libc::accept4(self.listener.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
                        if fd >= 0 {
                            unsafe { libc::close(fd) };
                        }
                        self.spare_fd = spare_fd();
                        return;
                    }
                    continue;
                }
                return;
            }
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            while self.unproven() >= MAX_UNPROVEN && self.close_oldest_unproven() {}
            set_nonblocking_nodelay(fd.as_raw_fd());
            set_buf(fd.as_raw_fd(), libc::SO_SNDBUF, self.sndbuf);
            set_buf(fd.as_raw_fd(), libc::SO_RCVBUF, self.rcvbuf);
            let mut nonce_a = [0u8; 16];
            if sys::random_bytes(&mut nonce_a).is_err() {
                continue;
            }
            let machine = Acceptor::with_directory(self.identity(), self.directory.clone(), nonce_a);
            let raw = fd.as_raw_fd();
            let idx = self.insert_conn(Conn::new(fd, None, Phase::Acceptor(machine), Vec::new()));
            let _ = self.ep.add(raw, sys::EPOLLIN, CONN_TOKEN_BASE + idx as u64);
        }
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
            self.acknowledge(idx, sink)?;
            // TLS may have answered what it read (its handshake, a key
            // update) with more than the socket took.
            self.update_interest(idx);
        }
        if self.conns[idx].is_some() {
            // What happened is said before a dropped connection closes (a
            // refused caller's job may end as soon as it sees the close).
            self.report(sink);
            self.reap(idx);
        }
        Ok(())
    }

    /// After reading from connection `idx`: send an Ack if its link has
    /// received enough since the last one, and write what waits (a
    /// connection established by the bytes just read writes its queued
    /// frames and what the peer lacks only now, outside the parser).
    fn acknowledge(&mut self, idx: usize, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let Some(c) = self.conns[idx].as_ref() else { return Ok(()) };
        let (Some(peer), true) = (c.peer, c.is_established()) else { return Ok(()) };
        let link = &mut self.peers[peer as usize];
        if let Some(received) = link.rx.ack_due() {
            sendq::enqueue(&mut link.out, OutFrame::ack(received));
        }
        if !link.out.is_empty() || link.tx.replaying() {
            self.flush_peer(peer, sink)?;
        }
        Ok(())
    }

    /// The established connection `idx` broke (`closed`: the peer closed
    /// it, rather than a reset). The link keeps its streams and makes a new
    /// connection: at once if anything depends on it (frames queued, bytes
    /// the peer has not acknowledged, half a frame from it), else when a
    /// frame is next sent. A peer that closed having acknowledged all we
    /// sent is done with us (it finalized: it acknowledges everything on
    /// its way out), so the link is closed; so is one that breaks while we
    /// finalize with nothing left to send it (past the final barrier, peers
    /// close their connections as they finish). Frames still queued for it
    /// mean it has not finished: the link is re-made even then.
    fn connection_broke(&mut self, idx: usize, why: String, closed: bool) -> Result<(), TransportError> {
        let mut c = self.conns[idx].take().expect("a live connection");
        let _ = self.ep.delete(c.fd.as_raw_fd());
        let peer = c.peer.expect("an established connection has a peer");
        self.events.push(ConnEvent::Closed { peer, fd: c.fd.as_raw_fd() });
        let carry = Tcp::take_carry(&mut c);
        let finalizing = self.finalizing;
        let link = &mut self.peers[peer as usize];
        link.conn = None;
        link.established = false;
        // Stale acknowledgments: the next handshake says where we stand.
        link.out.retain(|f| !f.is_ack());
        let pending = !link.out.is_empty() || link.tx.unacked() > 0;
        let partial = carry.len() > 0 || carry.direct.is_some();
        if (finalizing && link.out.is_empty()) || (closed && !pending && !partial) {
            link.closed = true;
            return Ok(());
        }
        if !link.tx.keep {
            link.closed = true;
            let hint = "; with GRIDMPI_TCP_RESUME=all every connection survives this";
            let what = if closed { "the peer closed the connection unexpectedly (did it exit or crash?)".to_string() } else { format!("the connection broke ({why}){hint}") };
            return Err(terr(Some(peer), what));
        }
        link.carry = Some(carry);
        let now = Instant::now();
        link.broken = Some(Broken { since: now, why, needed: pending || partial, attempts: 0, next_attempt: now });
        Ok(())
    }

    /// A connection attempt failed with `e`. For a link being re-made that
    /// only means trying again later (within the budget); for a first
    /// connection it is the error.
    fn attempt_failed(&mut self, e: TransportError) -> Result<(), TransportError> {
        let Some(peer) = e.peer else { return Err(e) };
        if self.peers[peer as usize].broken.is_none() {
            return Err(e);
        }
        if let Some(i) = self.peers[peer as usize].conn {
            if let Some(c) = self.conns[i].as_mut() {
                c.phase = Phase::Dead;
            }
            self.reap(i);
        }
        let link = &mut self.peers[peer as usize];
        link.conn = None;
        let b = link.broken.as_mut().expect("checked above");
        b.retry_later();
        if b.since.elapsed() > self.resume_budget {
            return Err(self.gave_up(peer, &e.message));
        }
        Ok(())
    }

    fn gave_up(&self, peer: Pid, last: &str) -> TransportError {
        let b = self.peers[peer as usize].broken.as_ref().expect("a broken link");
        terr(
            Some(peer),
            format!(
                "the connection broke ({}) and could not be made again within {} s (GRIDMPI_WAN_OUTAGE_BUDGET; last attempt: {last})",
                b.why,
                self.resume_budget.as_secs()
            ),
        )
    }

    /// Start a new connection for every broken link that needs one and
    /// whose pause is over.
    fn remake_links(&mut self) -> Result<(), TransportError> {
        let now = Instant::now();
        for p in 0..self.peers.len() {
            let link = &self.peers[p];
            let Some(b) = &link.broken else { continue };
            if !b.needed || link.conn.is_some() || b.next_attempt > now {
                continue;
            }
            if b.since.elapsed() > self.resume_budget {
                return Err(self.gave_up(p as Pid, "none left"));
            }
            if let Err(e) = self.connect(p as Pid) {
                self.attempt_failed(e)?;
            }
        }
        Ok(())
    }

    /// Whether some link is being re-made.
    fn remaking(&self) -> bool {
        self.peers.iter().any(|l| l.broken.as_ref().is_some_and(|b| b.needed))
    }

    /// Drop connection `idx` if it is dead.
    fn reap(&mut self, idx: usize) {
        if self.conns[idx].as_ref().is_some_and(|c| c.is_dead()) {
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
        let c = self.conns[idx].as_mut().unwrap();
        if matches!(c.phase, Phase::Connecting(_)) {
            let err = socket_error(c.fd.as_raw_fd());
            if err != 0 {
                let addr = c.addrs.remove(0);
                let peer = c.peer;
                if c.addrs.is_empty() {
                    return Err(terr(peer, format!("connect to {addr}: {}", io::Error::from_raw_os_error(err))));
                }
                // A fresh socket for the next address.
                let _ = self.ep.delete(c.fd.as_raw_fd());
                c.fd = new_socket().map_err(|e| terr(peer, format!("socket: {e}")))?;
                let fd = c.fd.as_raw_fd();
                set_nonblocking_nodelay(fd);
                if let Some(p) = peer {
                    self.tune(p, fd);
                }
                return self.start_connect(idx);
            }
            // Connected: the handshake starts.
            let Phase::Connecting(mut machine) = std::mem::replace(&mut c.phase, Phase::Dead) else { unreachable!() };
            c.hs_out.extend(machine.poll_transmit().unwrap_or_default());
            c.phase = Phase::Connector(machine);
        }
        if !c.hs_out.is_empty() || c.tls_pending() {
            if let Err(e) = c.write_handshake() {
                if let (true, Some(p)) = (c.is_established(), c.peer) {
                    // (TLS's own bytes of an established connection: a
                    // reset is resumed as for any write.)
                    return self.send_failed(idx, p, e);
                }
                if c.connector {
                    return Err(terr(c.peer, format!("send failed during handshake: {e}")));
                }
                c.phase = Phase::Dead; // a caller we never admitted
                return Ok(());
            }
        }
        if c.is_established() && c.hs_out.is_empty() {
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
            || c.tls_pending()
            || matches!(c.phase, Phase::Connecting(_))
            || (c.is_established()
                && c.peer.is_some_and(|p| !self.peers[p as usize].out.is_empty() || self.peers[p as usize].tx.replaying()));
        if want != c.writable_armed {
            let ev = if want { sys::EPOLLIN | sys::EPOLLOUT } else { sys::EPOLLIN };
            let _ = self.ep.modify(c.fd.as_raw_fd(), ev, CONN_TOKEN_BASE + idx as u64);
            c.writable_armed = want;
        }
    }

    /// Write queued frames of `peer` until the socket is full.
    fn flush_peer(&mut self, peer: Pid, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let Some(idx) = self.peers[peer as usize].conn else { return Ok(()) };
        let Some(c) = self.conns[idx].as_ref() else { return Ok(()) };
        if !c.is_established() || !c.hs_out.is_empty() {
            return Ok(());
        }
        let c = self.conns[idx].as_mut().expect("checked above");
        let unsent = c.unsent();
        let mut wire = c.wire();
        let link = &mut self.peers[peer as usize];
        // After a reconnection, what the peer lacks goes first.
        if link.tx.replaying() {
            match sendq::write_replay(&mut wire, &mut link.tx) {
                Ok(()) => {}
                Err(e) => return self.send_failed(idx, peer, e),
            }
            if link.tx.replaying() {
                self.update_interest(idx);
                return Ok(());
            }
        }
        let mut budget = match link.paced_unsent {
            Some(max) => {
                let room = (max as u64).saturating_sub(unsent.unwrap_or(0) as u64);
                sendq::stretch_to_frame_end(&link.out, room)
            }
            None => u64::MAX,
        };
        if !link.tx.has_room() {
            budget = budget.min(sendq::closing_run(&link.out));
        }
        if budget == 0 {
            self.update_interest(idx);
            return Ok(());
        }
        let mut out = std::mem::take(&mut link.out);
        let result = sendq::write_frames(&mut wire, &mut out, &mut self.runs, &mut link.tx, sink, budget);
        let link = &mut self.peers[peer as usize];
        link.out = out;
        match result {
            Ok(written) => {
                if let Some(rate) = link.pace {
                    link.ledger.wrote(written, rate, std::time::Instant::now());
                }
            }
            Err(e) => return self.send_failed(idx, peer, e),
        }
        self.update_interest(idx);
        Ok(())
    }

    /// Writing to the connection `idx` with `peer` failed.
    fn send_failed(&mut self, idx: usize, peer: Pid, e: io::Error) -> Result<(), TransportError> {
        if conn::resumable(&e) {
            return self.connection_broke(idx, e.to_string(), false);
        }
        Err(terr(Some(peer), format!("send failed: {e}")))
    }

    /// Try to push out everything queued (called from the progress loop).
    fn flush_all(&mut self, sink: &mut dyn Sink) -> Result<(), TransportError> {
        for p in 0..self.peers.len() {
            let l = &self.peers[p];
            if (!l.out.is_empty() || l.tx.replaying()) && l.established {
                self.flush_peer(p as Pid, sink)?;
            }
        }
        Ok(())
    }

    /// Accepted connections whose caller has not proven itself yet.
    fn unproven(&self) -> usize {
        self.conns.iter().flatten().filter(|c| matches!(c.phase, Phase::Acceptor(_))).count()
    }

    /// Close the unproven accepted connection opened first; false if none.
    fn close_oldest_unproven(&mut self) -> bool {
        let oldest = (0..self.conns.len())
            .filter(|&i| self.conns[i].as_ref().is_some_and(|c| matches!(c.phase, Phase::Acceptor(_))))
            .min_by_key(|&i| self.conns[i].as_ref().map(|c| c.opened));
        match oldest {
            Some(i) => {
                if let Some(c) = self.conns[i].as_mut() {
                    c.phase = Phase::Dead;
                }
                self.reap(i);
                true
            }
            None => false,
        }
    }

    /// Close unproven accepted connections past their deadline (now and
    /// then: this runs on every poll).
    fn reap_unproven(&mut self) {
        if self.reaped_at.elapsed() < REAP_EVERY {
            return;
        }
        self.reaped_at = std::time::Instant::now();
        let deadline = UNPROVEN_DEADLINE.min(self.connect_timeout);
        for i in 0..self.conns.len() {
            let stale = self.conns[i].as_ref().is_some_and(|c| matches!(c.phase, Phase::Acceptor(_)) && c.opened.elapsed() >= deadline);
            if stale {
                if let Some(c) = self.conns[i].as_mut() {
                    c.phase = Phase::Dead;
                }
                self.reap(i);
            }
        }
    }

    /// Fail connections we opened that are still not established after the
    /// timeout; drop incoming ones that never completed the handshake.
    fn check_timeouts(&mut self) -> Result<(), TransportError> {
        for idx in 0..self.conns.len() {
            let Some(c) = self.conns[idx].as_mut() else { continue };
            if c.is_established() || c.is_dead() || c.opened.elapsed() < self.connect_timeout {
                continue;
            }
            if c.connector {
                let addrs: Vec<String> = c.addrs.iter().map(|a| a.to_string()).collect();
                let e = terr(
                    c.peer,
                    format!("no connection after {:?} (trying {}; is the host reachable and the rank alive?)", self.connect_timeout, addrs.join(", ")),
                );
                self.attempt_failed(e)?;
                continue;
            }
            c.phase = Phase::Dead;
            self.reap(idx);
        }
        Ok(())
    }

    fn close_all(&mut self) {
        for c in self.conns.iter_mut().flatten() {
            if let Some(s) = c.tls.as_mut() {
                s.close(c.fd.as_raw_fd());
            }
            if let (true, Some(p)) = (c.is_established(), c.peer) {
                self.events.push(ConnEvent::Closed { peer: p, fd: c.fd.as_raw_fd() });
            }
            let _ = self.ep.delete(c.fd.as_raw_fd());
        }
        self.conns.clear();
    }

    /// Hand the connection events gathered meanwhile to the sink.
    fn report(&mut self, sink: &mut dyn Sink) {
        for ev in self.events.drain(..) {
            sink.event(ev);
        }
    }

    /// Close every connection (at finalize), first acknowledging all we
    /// received, so that a peer seeing us close knows we are done rather
    /// than cut off (see `connection_broke`).
    pub fn close(&mut self, sink: &mut dyn Sink) {
        for p in 0..self.peers.len() {
            if self.peer_fd(p as Pid).is_none() {
                continue;
            }
            let Some(c) = self.peers[p].conn.and_then(|i| self.conns[i].as_mut()) else { continue };
            let link = &mut self.peers[p];
            if link.out.front().is_some_and(|f| f.started()) || link.tx.replaying() {
                continue; // an Ack now would land inside a frame
            }
            let mut last = VecDeque::from([OutFrame::ack(link.rx.position(0))]);
            let _ = sendq::write_frames(&mut c.wire(), &mut last, &mut self.runs, &mut link.tx, sink, u64::MAX);
        }
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
            } else if let Err(e) = self.handle_event(token, ev, sink).or_else(|e| self.attempt_failed(e)) {
                result = Err(e);
            }
        }
        self.ready = ready;
        self.reap_unproven();
        if result.is_ok() && (self.backlog() > 0 || self.remaking()) {
            // Frames wait for a connection or for room: try again, and make
            // sure a connection cannot be waited for forever.
            if let Err(e) = self.flush_all(sink).and_then(|_| self.check_timeouts()).and_then(|_| self.remake_links()) {
                result = Err(e);
            }
        }
        self.report(sink);
        result
    }

    fn set_pace(&mut self, peer: Pid, bytes_per_sec: Option<u64>, sink: &mut dyn Sink) {
        let link = &mut self.peers[peer as usize];
        let old = if bytes_per_sec.is_some() { link.pace } else { None };
        link.ledger.rate_changes(old, std::time::Instant::now());
        link.pace = bytes_per_sec;
        self.apply_pacing(peer);
        self.report(sink);
    }

    fn unsent(&self, peer: Pid) -> u64 {
        // The socket's unsent bytes and the frames not yet written to it;
        // while paced, at least what the rate has not paid for.
        let link = &self.peers[peer as usize];
        // (Frames queued for a closed connection never leave: not counted.)
        let queued = if link.established && !link.closed { sendq::queued_bytes(&link.out) } else { 0 };
        let held = self.unsent_bytes(peer).unwrap_or(0) as u64 + queued;
        match link.pace {
            Some(rate) => held.max(link.ledger.owed(rate, std::time::Instant::now())),
            None => held,
        }
    }

    fn backlog(&self) -> usize {
        Tcp::backlog(self)
    }

    fn next_deadline(&self) -> Option<std::time::Duration> {
        // A connection being made is checked against its timeout; unproven
        // callers against theirs.
        if self.backlog() > 0 || self.remaking() {
            Some(std::time::Duration::from_millis(100))
        } else if self.unproven() > 0 {
            Some(UNPROVEN_DEADLINE / 4)
        } else {
            None
        }
    }

    fn wait_fd(&self) -> RawFd {
        self.ep.raw_fd()
    }
}

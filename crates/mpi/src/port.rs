//! Ports (MPI_Open_port) and the exchange that joins two jobs.
//!
//! Two groups of processes that share no job (MPI_Comm_accept and
//! MPI_Comm_connect, a parent and the children it spawned, the two ends of
//! MPI_Comm_join) are joined by their roots over one TCP connection:
//!
//! ```text
//! both        HELLO    "GMPIjoin" version nonce                     28 bytes
//! connector   OFFER    length offer_c mac_c
//! acceptor    OFFER    length offer_a mac_a
//!             (each side makes the other's processes its peers)
//! connector   READY    mac
//! acceptor    READY    mac
//!
//! mac_c = HMAC(key, "gridmpi join connector" nonce_c nonce_a offer_c)
//! mac_a = HMAC(key, "gridmpi join acceptor" nonce_c nonce_a offer_c offer_a)
//! ```
//!
//! The key is the port's: 32 random bytes in the port name, which is the
//! capability to connect (MPI_Comm_join's socket has none: its key is
//! zero, and the program's socket is what it trusts). The acceptor reveals
//! nothing before the connector's OFFER proves the key; a caller that does
//! not is dropped and the port goes on waiting. An offer is the group's
//! context-id proposal and, for each process, its world, rank and address
//! card. The keys of the pair of jobs (what their processes prove to each
//! other in the TCP handshake) are derived from the key and both nonces.
//! READY says every member of the sender's group has made the other
//! group's processes its peers, so no process is called by one it does not
//! know yet.
//!
//! The I/O blocks the calling thread but never the process: while it
//! waits, `idle` is called (it runs the progress engine) every few
//! milliseconds.

use crate::bootstrap::Card;
use crate::runtime::Remote;
use gridmpi_transport::auth;
use gridmpi_transport::tcp::handshake::{Keys, Who};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::time::{Duration, Instant};

const MAGIC: &[u8; 8] = b"GMPIjoin";
const VERSION: u32 = 1;
const HELLO_LEN: usize = 28;
/// The largest offer taken (about 100k processes).
const MAX_OFFER: usize = 16 << 20;
/// How long a caller of a port has to prove the key and make its offer.
const CALLER_DEADLINE: Duration = Duration::from_secs(10);
/// How often a waiting exchange lets the process progress.
const IDLE_EVERY: Duration = Duration::from_millis(5);
/// What port names begin with.
pub const PREFIX: &str = "gridmpi-port-1";

/// A port's name, as MPI_Open_port gives it: where to call, and the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortName {
    pub addrs: Vec<SocketAddrV4>,
    pub key: [u8; 32],
}

impl PortName {
    /// `gridmpi-port-1:ADDR,ADDR:PORT:KEY` with at most as many addresses
    /// as fit in MPI_MAX_PORT_NAME.
    pub fn format(&self) -> String {
        let port = self.addrs.first().map_or(0, |a| a.port());
        let mut ips = String::new();
        for a in &self.addrs {
            let more = if ips.is_empty() { a.ip().to_string() } else { format!(",{}", a.ip()) };
            if PREFIX.len() + ips.len() + more.len() + 6 + 64 + 3 > 255 {
                break;
            }
            ips.push_str(&more);
        }
        format!("{PREFIX}:{ips}:{port}:{}", auth::hex(&self.key))
    }

    pub fn parse(s: &str) -> Result<PortName, String> {
        let bad = |why: &str| format!("{s:?} is not a port name of GridMPI ({why})");
        let mut it = s.trim_end_matches('\0').trim().split(':');
        if it.next() != Some(PREFIX) {
            return Err(bad(&format!("it does not begin with {PREFIX}")));
        }
        let ips = it.next().ok_or_else(|| bad("no address"))?;
        let port: u16 = it.next().and_then(|p| p.parse().ok()).filter(|&p| p != 0).ok_or_else(|| bad("no port"))?;
        let key = it.next().and_then(auth::unhex::<32>).ok_or_else(|| bad("no key"))?;
        if it.next().is_some() {
            return Err(bad("trailing fields"));
        }
        let addrs = ips
            .split(',')
            .map(|ip| ip.parse::<Ipv4Addr>().map(|ip| SocketAddrV4::new(ip, port)).map_err(|_| bad(&format!("{ip:?} is not an address"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PortName { addrs, key })
    }
}

/// An open port: a listening socket and its name.
pub struct Port {
    listener: TcpListener,
    pub name: PortName,
}

impl Port {
    /// Listen where our card says we can be reached: on the loopback
    /// address only when that is all it has.
    pub fn open(card_addrs: &[Ipv4Addr]) -> Result<Port, String> {
        let loopback_only = card_addrs.iter().all(|a| a.is_loopback());
        let bind = if loopback_only { Ipv4Addr::LOCALHOST } else { Ipv4Addr::UNSPECIFIED };
        let listener = TcpListener::bind((bind, 0)).map_err(|e| format!("cannot listen on {bind}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| format!("cannot listen: {e}"))?;
        let port = listener.local_addr().map_err(|e| format!("cannot listen: {e}"))?.port();
        let mut addrs: Vec<SocketAddrV4> = card_addrs.iter().filter(|a| loopback_only || !a.is_loopback()).map(|&ip| SocketAddrV4::new(ip, port)).collect();
        if addrs.is_empty() {
            addrs.push(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        }
        let mut key = [0u8; 32];
        gridmpi_transport::sys::random_bytes(&mut key).map_err(|e| format!("getrandom: {e}"))?;
        Ok(Port { listener, name: PortName { addrs, key } })
    }

    /// The same port, for waiting on it without holding the table.
    pub fn try_clone(&self) -> Result<Port, String> {
        Ok(Port { listener: self.listener.try_clone().map_err(|e| format!("the port's socket: {e}"))?, name: self.name.clone() })
    }

    /// Wait for a caller that proves the key and make the exchange with
    /// it. Callers that do not are dropped (said with GRIDMPI_DEBUG=conn).
    pub fn accept(&self, mine: &Offer, idle: &mut dyn FnMut() -> Result<(), String>, debug: bool) -> Result<Joined, String> {
        loop {
            let stream = loop {
                match self.listener.accept() {
                    Ok((s, _)) => break s,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {
                        idle()?;
                        wait_readable(&self.listener, IDLE_EVERY);
                    }
                    Err(e) => return Err(format!("accept: {e}")),
                }
            };
            let peer = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
            match exchange(stream, &self.name.key, Role::Acceptor, mine, idle, Some(Instant::now() + CALLER_DEADLINE)) {
                Ok(j) => return Ok(j),
                Err(Failed::Caller(why)) => {
                    if debug {
                        eprintln!("gridmpi: a caller of the port from {peer} was dropped: {why}");
                    }
                }
                Err(Failed::Us(why)) => return Err(why),
            }
        }
    }
}

/// Wait up to `limit` for the socket to be readable (or anything else).
fn wait_readable(fd: &impl std::os::fd::AsRawFd, limit: Duration) {
    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, limit.as_millis() as i32) };
}

/// Call the port named `name` and make the exchange. With `patience`, an
/// owner that does not answer (no MPI_Comm_accept takes the call) within
/// it is given up on: "the attempt will eventually time out" (MPI 4.1,
/// 11.2.2).
pub fn connect(name: &PortName, mine: &Offer, idle: &mut dyn FnMut() -> Result<(), String>, patience: Option<Duration>) -> Result<Joined, String> {
    let mut last = String::from("no address");
    for a in &name.addrs {
        match TcpStream::connect_timeout(&(*a).into(), Duration::from_secs(10)) {
            Ok(s) => {
                let deadline = patience.map(|p| Instant::now() + p);
                return exchange(s, &name.key, Role::Connector, mine, idle, deadline).map_err(|f| match f {
                    Failed::Caller(_) if deadline.is_some_and(|d| Instant::now() > d) => {
                        format!("no MPI_Comm_accept at {a} took the call within {:?}", patience.unwrap_or_default())
                    }
                    Failed::Caller(why) | Failed::Us(why) => format!("the port's owner at {a}: {why}"),
                })
            }
            Err(e) => last = format!("{a}: {e}"),
        }
    }
    Err(format!("cannot reach the port ({last}); was it closed?"))
}

/// MPI_Comm_join: the exchange over the program's own connected socket,
/// with no key; the side whose nonce is lower plays the connector.
pub fn join(fd: std::os::fd::RawFd, mine: &Offer, idle: &mut dyn FnMut() -> Result<(), String>) -> Result<Joined, String> {
    use std::os::fd::FromRawFd;
    // SAFETY: the program lends us its socket for the call; dup'ed so it
    // stays the program's (and open) when our stream is dropped.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(format!("the socket {fd} cannot be used: {}", io::Error::last_os_error()));
    }
    let stream = unsafe { TcpStream::from_raw_fd(dup) };
    exchange(stream, &[0; 32], Role::Either, mine, idle, None).map_err(|f| match f {
        Failed::Caller(why) | Failed::Us(why) => format!("the other side of the socket: {why}"),
    })
}

/// What a group tells the other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The smallest context id free at every member of the group.
    pub ctx: u32,
    pub procs: Vec<Remote>,
}

impl PartialEq for Remote {
    fn eq(&self, o: &Remote) -> bool {
        self.who == o.who && self.card.encode() == o.card.encode()
    }
}
impl Eq for Remote {}

impl Offer {
    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!("ctx {}\n", self.ctx);
        for p in &self.procs {
            s.push_str(&format!("{:016x} {} {}\n", p.who.world, p.who.rank, p.card.encode()));
        }
        s.into_bytes()
    }

    pub fn decode(b: &[u8]) -> Option<Offer> {
        let s = std::str::from_utf8(b).ok()?;
        let mut lines = s.lines();
        let ctx = lines.next()?.strip_prefix("ctx ")?.parse().ok()?;
        let mut procs = Vec::new();
        for l in lines {
            let mut f = l.splitn(3, ' ');
            let world = u64::from_str_radix(f.next()?, 16).ok()?;
            let rank = f.next()?.parse().ok()?;
            let card = Card::decode(f.next()?)?;
            procs.push(Remote { who: Who { world, rank }, card });
        }
        (!procs.is_empty()).then_some(Offer { ctx, procs })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Connector,
    Acceptor,
    /// MPI_Comm_join: decided by the nonces.
    Either,
}

enum Failed {
    /// The other side broke the protocol or failed to prove the key.
    Caller(String),
    /// We cannot go on (our own I/O, or `idle` failed).
    Us(String),
}

/// The exchange done: the other group, the keys of the pair, and the
/// connection for the READY step.
pub struct Joined {
    pub theirs: Offer,
    pub keys: Keys,
    chan: Chan,
    ready_mine: [u8; 32],
    ready_theirs: [u8; 32],
}

impl Joined {
    /// Our group is ready: say so, and wait until the other one is.
    pub fn ready(mut self, idle: &mut dyn FnMut() -> Result<(), String>) -> Result<(), String> {
        self.chan.write(&self.ready_mine).map_err(|e| format!("the other group's root: {e}"))?;
        let mut theirs = [0u8; 32];
        self.chan.read(&mut theirs, idle).map_err(|f| match f {
            Failed::Caller(why) | Failed::Us(why) => format!("the other group's root: {why}"),
        })?;
        if !auth::equal_ct(&theirs, &self.ready_theirs) {
            return Err("the other group's root sent a READY that does not check out".into());
        }
        Ok(())
    }
}

fn mac(key: &[u8; 32], label: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut all: Vec<&[u8]> = vec![label];
    all.extend_from_slice(parts);
    auth::hmac_sha256(key, &all)
}

fn exchange(
    stream: TcpStream,
    key: &[u8; 32],
    role: Role,
    mine: &Offer,
    idle: &mut dyn FnMut() -> Result<(), String>,
    deadline: Option<Instant>,
) -> Result<Joined, Failed> {
    let mut chan = Chan::new(stream, deadline).map_err(|e| Failed::Us(format!("socket: {e}")))?;
    let mut nonce = [0u8; 16];
    gridmpi_transport::sys::random_bytes(&mut nonce).map_err(|e| Failed::Us(format!("getrandom: {e}")))?;
    let mut hello = Vec::with_capacity(HELLO_LEN);
    hello.extend_from_slice(MAGIC);
    hello.extend_from_slice(&VERSION.to_le_bytes());
    hello.extend_from_slice(&nonce);
    chan.write(&hello).map_err(|e| Failed::Caller(e.to_string()))?;
    let mut theirs = [0u8; HELLO_LEN];
    chan.read(&mut theirs, idle)?;
    if &theirs[..8] != MAGIC {
        return Err(Failed::Caller("it does not speak GridMPI's join protocol".into()));
    }
    let version = u32::from_le_bytes(theirs[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(Failed::Caller(format!("it speaks version {version} of the join protocol, we speak {VERSION}")));
    }
    let their_nonce: [u8; 16] = theirs[12..28].try_into().expect("16 bytes");
    let connector = match role {
        Role::Connector => true,
        Role::Acceptor => false,
        Role::Either if nonce == their_nonce => return Err(Failed::Caller("both sides drew the same nonce".into())),
        Role::Either => nonce < their_nonce,
    };
    let (nonce_c, nonce_a) = if connector { (nonce, their_nonce) } else { (their_nonce, nonce) };
    let offer = mine.encode();
    let (offer_c, offer_a);
    if connector {
        let m = mac(key, b"gridmpi join connector", &[&nonce_c, &nonce_a, &offer]);
        chan.write_offer(&offer, &m).map_err(|e| Failed::Caller(e.to_string()))?;
        let (theirs, m) = chan.read_offer(idle)?;
        if !auth::equal_ct(&m, &mac(key, b"gridmpi join acceptor", &[&nonce_c, &nonce_a, &offer, &theirs])) {
            return Err(Failed::Caller("its offer does not prove the port's key".into()));
        }
        (offer_c, offer_a) = (offer, theirs);
    } else {
        let (theirs, m) = chan.read_offer(idle)?;
        if !auth::equal_ct(&m, &mac(key, b"gridmpi join connector", &[&nonce_c, &nonce_a, &theirs])) {
            return Err(Failed::Caller("its offer does not prove the port's key".into()));
        }
        let m = mac(key, b"gridmpi join acceptor", &[&nonce_c, &nonce_a, &theirs, &offer]);
        chan.write_offer(&offer, &m).map_err(|e| Failed::Caller(e.to_string()))?;
        (offer_c, offer_a) = (theirs, offer);
    }
    let their_offer = if connector { &offer_a } else { &offer_c };
    let theirs = Offer::decode(their_offer).ok_or_else(|| Failed::Caller("its offer is malformed".into()))?;
    let h = mac(key, b"gridmpi join pair job", &[&nonce_c, &nonce_a]);
    let keys = Keys { job: u64::from_le_bytes(h[..8].try_into().expect("8 bytes")), secret: mac(key, b"gridmpi join pair secret", &[&nonce_c, &nonce_a]) };
    let ready = |side: &[u8]| mac(key, b"gridmpi join ready", &[side, &nonce_c, &nonce_a, &offer_c, &offer_a]);
    let (ready_mine, ready_theirs) = if connector { (ready(b"c"), ready(b"a")) } else { (ready(b"a"), ready(b"c")) };
    // The caller proved itself: from now on only our own patience counts.
    chan.deadline = None;
    Ok(Joined { theirs, keys, chan, ready_mine, ready_theirs })
}

/// A connection read in slices, letting the process progress between them.
struct Chan {
    stream: TcpStream,
    deadline: Option<Instant>,
}

impl Chan {
    fn new(stream: TcpStream, deadline: Option<Instant>) -> io::Result<Chan> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IDLE_EVERY))?;
        stream.set_write_timeout(Some(Duration::from_secs(30)))?;
        Ok(Chan { stream, deadline })
    }

    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        self.stream.write_all(b)
    }

    fn write_offer(&mut self, offer: &[u8], mac: &[u8; 32]) -> io::Result<()> {
        let mut b = Vec::with_capacity(offer.len() + 36);
        b.extend_from_slice(&(offer.len() as u32).to_le_bytes());
        b.extend_from_slice(offer);
        b.extend_from_slice(mac);
        self.write(&b)
    }

    fn read_offer(&mut self, idle: &mut dyn FnMut() -> Result<(), String>) -> Result<(Vec<u8>, [u8; 32]), Failed> {
        let mut len = [0u8; 4];
        self.read(&mut len, idle)?;
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_OFFER {
            return Err(Failed::Caller(format!("it offers {len} bytes (at most {MAX_OFFER} are taken)")));
        }
        let mut offer = vec![0u8; len];
        self.read(&mut offer, idle)?;
        let mut m = [0u8; 32];
        self.read(&mut m, idle)?;
        Ok((offer, m))
    }

    fn read(&mut self, buf: &mut [u8], idle: &mut dyn FnMut() -> Result<(), String>) -> Result<(), Failed> {
        let mut got = 0;
        while got < buf.len() {
            match self.stream.read(&mut buf[got..]) {
                Ok(0) => return Err(Failed::Caller("it closed the connection".into())),
                Ok(n) => got += n,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => {
                    if self.deadline.is_some_and(|d| Instant::now() > d) {
                        return Err(Failed::Caller("it did not make its offer in time".into()));
                    }
                    idle().map_err(Failed::Us)?;
                }
                Err(e) => return Err(Failed::Caller(e.to_string())),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(host: &str, port: u16) -> Card {
        Card {
            host: host.into(),
            host_key: format!("{host}-key"),
            os_pid: 42,
            port,
            addrs: vec![Ipv4Addr::LOCALHOST],
            cluster: String::new(),
            cpus: Vec::new(),
            shm_prefix: String::new(),
            relay: None,
            subnet: String::new(),
        }
    }

    fn offer(world: u64, n: u32, ctx: u32) -> Offer {
        Offer { ctx, procs: (0..n).map(|rank| Remote { who: Who { world, rank }, card: card("h", 1000 + rank as u16) }).collect() }
    }

    #[test]
    fn port_names_round_trip_and_bad_ones_are_refused() {
        let n = PortName { addrs: vec![SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 4242), SocketAddrV4::new(Ipv4Addr::LOCALHOST, 4242)], key: [7; 32] };
        let s = n.format();
        assert!(s.len() < 256);
        assert_eq!(PortName::parse(&s), Ok(n));
        for bad in ["", "tag#0$description#x", "gridmpi-port-1:10.0.0.1:0:00", "gridmpi-port-1:10.0.0.x:1:", "gridmpi-port-1:1.2.3.4:5:abcd"] {
            assert!(PortName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn offers_round_trip() {
        let o = offer(0xabc, 3, 77);
        assert_eq!(Offer::decode(&o.encode()), Some(o));
        assert_eq!(Offer::decode(b"ctx 1\n"), None);
        assert_eq!(Offer::decode(b"ctx 1\nzz 1 v1;h"), None);
    }

    fn idle() -> impl FnMut() -> Result<(), String> {
        || Ok(())
    }

    #[test]
    fn a_caller_gives_up_when_nobody_accepts_in_time() {
        let port = Port::open(&[Ipv4Addr::LOCALHOST]).unwrap();
        let t = Instant::now();
        let Err(e) = connect(&port.name, &offer(2, 1, 5), &mut idle(), Some(Duration::from_millis(200))) else { panic!("joined a port nobody accepts on") };
        assert!(e.contains("no MPI_Comm_accept"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_port_joins_a_caller_with_the_key_and_drops_one_without() {
        let port = Port::open(&[Ipv4Addr::LOCALHOST]).unwrap();
        let name = port.name.clone();
        // First a caller that does not know the key, then a genuine one.
        let caller = std::thread::spawn(move || {
            let wrong = PortName { key: [0; 32], ..name.clone() };
            assert!(connect(&wrong, &offer(2, 1, 5), &mut idle(), None).is_err());
            let j = connect(&name, &offer(2, 2, 9), &mut idle(), None).unwrap();
            let (theirs, keys) = (j.theirs.clone(), j.keys.clone());
            j.ready(&mut idle()).unwrap();
            (theirs, keys)
        });
        let j = port.accept(&offer(1, 3, 4), &mut idle(), false).unwrap();
        assert_eq!(j.theirs, offer(2, 2, 9));
        let keys = j.keys.clone();
        j.ready(&mut idle()).unwrap();
        let (theirs, their_keys) = caller.join().unwrap();
        assert_eq!(theirs, offer(1, 3, 4));
        assert_eq!(keys, their_keys);
    }

    #[test]
    fn comm_join_pairs_two_ends_of_a_socket() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let other = std::thread::spawn(move || {
            use std::os::fd::AsRawFd;
            let s = TcpStream::connect(a).unwrap();
            let j = join(s.as_raw_fd(), &offer(5, 1, 3), &mut idle()).unwrap();
            let theirs = j.theirs.clone();
            j.ready(&mut idle()).unwrap();
            theirs
        });
        use std::os::fd::AsRawFd;
        let (s, _) = l.accept().unwrap();
        let j = join(s.as_raw_fd(), &offer(6, 2, 8), &mut idle()).unwrap();
        assert_eq!(j.theirs, offer(5, 1, 3));
        j.ready(&mut idle()).unwrap();
        assert_eq!(other.join().unwrap(), offer(6, 2, 8));
    }

    #[test]
    fn garbage_callers_are_dropped() {
        let port = Port::open(&[Ipv4Addr::LOCALHOST]).unwrap();
        let name = port.name.clone();
        let caller = std::thread::spawn(move || {
            let mut s = TcpStream::connect(name.addrs[0]).unwrap();
            s.write_all(b"GET / HTTP/1.0\r\n\r\n and more bytes than a hello").unwrap();
            drop(s);
            let mut s = TcpStream::connect(name.addrs[0]).unwrap();
            let mut h = MAGIC.to_vec();
            h.extend_from_slice(&VERSION.to_le_bytes());
            h.extend_from_slice(&[1; 16]);
            h.extend_from_slice(&u32::MAX.to_le_bytes()); // an absurd offer
            s.write_all(&h).unwrap();
            drop(s);
            let j = connect(&name, &offer(2, 1, 1), &mut idle(), None).unwrap();
            j.ready(&mut idle()).unwrap();
        });
        let j = port.accept(&offer(1, 1, 1), &mut idle(), false).unwrap();
        j.ready(&mut idle()).unwrap();
        caller.join().unwrap();
    }
}

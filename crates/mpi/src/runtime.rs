//! The runtime: bootstrap, transports and progress around the sans-IO engine.
//!
//! `Runtime::progress` moves everything forward without blocking: it hands
//! the engine's actions to the transports (shared memory, TCP, single-copy
//! reads), reads what arrived and feeds it to the engine. Waiting is done by
//! the caller (state.rs): poll briefly, then sleep in epoll until a socket,
//! a shared-memory doorbell or another thread wakes us.

use crate::clustermap::{self, ClusterMap, MapSource, TopologyFile};
use crate::shm::{Inbox, PeerInbox};
use crate::sys::{self, Doorbell, Epoll};
use crate::tcp::{self, Tcp};
use gridmpi_config::Config;
use gridmpi_engine::wire::{Header, HEADER_LEN};
use gridmpi_engine::{Action, Engine, EngineConfig, Payload, PeerParams, Pid, ReqId, Transmit};
use gridmpi_pmi::Pmi;
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

const DOORBELL_TOKEN: u64 = 1;
const WAKE_TOKEN: u64 = 3;

/// What every rank publishes about itself through PMI.
#[derive(Clone, Debug)]
pub struct Card {
    pub host: String,
    pub host_key: String,
    pub os_pid: u32,
    pub port: u16,
    pub addrs: Vec<Ipv4Addr>,
    /// The cluster name the launcher gave this rank (empty if none).
    pub cluster: String,
    /// The CPUs the rank may run on (sys::affinity_mask; empty if unknown).
    pub cpus: Vec<u64>,
}

impl Card {
    fn encode(&self) -> String {
        let addrs: Vec<String> = self.addrs.iter().map(|a| a.to_string()).collect();
        let cpus: Vec<String> = self.cpus.iter().map(|w| format!("{w:x}")).collect();
        format!("v1;{};{};{};{};{};{};{}", self.host, self.host_key, self.os_pid, self.port, addrs.join(","), self.cluster, cpus.join("."))
    }

    fn decode(s: &str) -> Option<Card> {
        let mut it = s.split(';');
        if it.next()? != "v1" {
            return None;
        }
        let host = it.next()?.to_string();
        let host_key = it.next()?.to_string();
        let os_pid = it.next()?.parse().ok()?;
        let port = it.next()?.parse().ok()?;
        let addrs = it.next()?.split(',').filter(|a| !a.is_empty()).map(|a| a.parse().ok()).collect::<Option<Vec<_>>>()?;
        let cluster = it.next().unwrap_or("").to_string();
        let cpus = it.next().unwrap_or("").split('.').filter(|w| !w.is_empty()).map(|w| u64::from_str_radix(w, 16).ok()).collect::<Option<Vec<_>>>()?;
        Some(Card { host, host_key, os_pid, port, addrs, cluster, cpus })
    }
}

/// How many CPUs the ranks of this host may use between them: the union of
/// their affinity masks (ranks bound one per core each see one CPU, yet are
/// not oversubscribed); this process's own count if a mask is unknown.
fn host_cpus<'a>(masks: impl Iterator<Item = &'a Vec<u64>>) -> usize {
    let mut union: Vec<u64> = Vec::new();
    for m in masks {
        if m.is_empty() {
            return sys::available_cpus();
        }
        if union.len() < m.len() {
            union.resize(m.len(), 0);
        }
        for (u, w) in union.iter_mut().zip(m) {
            *u |= w;
        }
    }
    (union.iter().map(|w| w.count_ones() as usize).sum::<usize>()).max(1)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Me,
    Shm,
    Tcp,
}

struct ShmState {
    inbox: Inbox,
    /// Local pids in local-index order.
    local: Vec<Pid>,
    /// Mapped inboxes of local peers, by pid.
    peers: Vec<Option<PeerInbox>>,
    /// Frames waiting for room in a peer's ring, by pid.
    backlog: Vec<VecDeque<Transmit>>,
    backlog_len: usize,
    doorbell: Doorbell,
    ringer: Doorbell,
    bell_names: Vec<String>,
}

/// Fatal runtime error: a peer or the network failed. The job ends.
#[derive(Debug)]
pub struct Fatal(pub String);

pub struct Runtime {
    pub engine: Engine,
    pub me: Pid,
    pub size: u32,
    pub config: Config,
    pub pmi: Pmi,
    pub cards: Vec<Card>,
    pub ep: Epoll,
    routes: Vec<Route>,
    tcp: Option<Tcp>,
    shm: Option<ShmState>,
    events: Vec<(u64, u32)>,
    /// eventfd that wakes threads sleeping in epoll.
    wake: OwnedFd,
    /// How long a blocked call polls before sleeping.
    pub spin: Duration,
    /// True when more ranks run on this host than it has CPUs.
    pub oversubscribed: bool,
    scratch_runs: Vec<(*mut u8, usize)>,
    debug_conn: bool,
    /// Some peer is reached over TCP: poll the sockets while progressing.
    tcp_routes: bool,
    /// Records the TCP history of connections when tracing is on.
    pub tracer: Option<crate::trace::Tracer>,
    /// Which cluster every rank is in, and the WAN between clusters.
    pub map: ClusterMap,
    /// Pacing caps in force per peer (nested; the smallest applies).
    pace_caps: std::collections::HashMap<Pid, Vec<u64>>,
    /// Peers whose cap was released, waiting for their unsent data to
    /// drain before the socket's rate is restored.
    pace_restores: Vec<Pid>,
    /// Engine requests completed once the socket to the peer has no unsent
    /// data (Action::Drain).
    drains: Vec<(Pid, ReqId)>,
}

// SAFETY: the runtime is only used under the global lock; the raw pointers
// it holds (shared memory, user buffers) are valid across threads.
unsafe impl Send for Runtime {}

fn local_ipv4_addrs() -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we free below; we only read it.
    unsafe {
        if libc::getifaddrs(&mut ifap) == 0 {
            let mut p = ifap;
            while !p.is_null() {
                let ifa = &*p;
                if !ifa.ifa_addr.is_null()
                    && (*ifa.ifa_addr).sa_family as i32 == libc::AF_INET
                    && ifa.ifa_flags & libc::IFF_UP as u32 != 0
                {
                    let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    let a = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                    if !a.is_loopback() && !out.contains(&a) {
                        out.push(a);
                    }
                }
                p = ifa.ifa_next;
            }
            libc::freeifaddrs(ifap);
        }
    }
    out
}


impl Runtime {
    /// Bootstrap: PMI, addresses, locality, transports.
    pub fn init(config: Config) -> Result<Runtime, String> {
        let mut pmi = Pmi::init().map_err(|e| format!("cannot reach the process manager (PMI): {e}"))?;
        let me = pmi.rank();
        let size = pmi.size();
        let debug_conn = {
            let d = config.text("GRIDMPI_DEBUG");
            d.split(',').any(|x| x == "conn" || x == "all")
        };
        let ep = Epoll::new().map_err(|e| format!("epoll_create: {e}"))?;
        // SAFETY: plain syscall; the fd is owned from here on.
        let wfd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if wfd < 0 {
            return Err(format!("eventfd: {}", std::io::Error::last_os_error()));
        }
        let wake = unsafe { OwnedFd::from_raw_fd(wfd) };
        ep.add(wake.as_raw_fd(), sys::EPOLLIN, WAKE_TOKEN).map_err(|e| format!("epoll_ctl: {e}"))?;

        // The job secret, from rank 0, authenticates every TCP connection.
        let mut secret = [0u8; 32];
        if me == 0 {
            sys::random_bytes(&mut secret).map_err(|e| format!("getrandom: {e}"))?;
            pmi.put("secret", &hex(&secret)).map_err(|e| format!("PMI put: {e}"))?;
        }
        let force_tcp = config.text("GRIDMPI_TRANSPORT") == "tcp";
        let bind: Ipv4Addr = Ipv4Addr::UNSPECIFIED;
        let mut tcp = if size > 1 {
            Some(Tcp::new(me, size as usize, 0, [0; 32], bind).map_err(|e| format!("cannot listen for TCP connections: {e}"))?)
        } else {
            None
        };
        let addrs = match config.text("GRIDMPI_TCP_ADDR") {
            "auto" | "" => {
                let mut a = local_ipv4_addrs();
                a.push(Ipv4Addr::LOCALHOST);
                a
            }
            list => list
                .split(',')
                .map(|s| s.trim().parse::<Ipv4Addr>().map_err(|_| format!("GRIDMPI_TCP_ADDR: {s:?} is not an IPv4 address")))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let card = Card {
            host: sys::hostname(),
            host_key: sys::host_key(),
            os_pid: sys::getpid(),
            port: tcp.as_ref().map_or(0, |t| t.port()),
            addrs,
            cluster: config.text("GRIDMPI_CLUSTER").replace(';', "_"),
            cpus: sys::affinity_mask(),
        };
        let mut cards = vec![card.clone(); size as usize];
        if size > 1 {
            pmi.put("card", &card.encode()).map_err(|e| format!("PMI put: {e}"))?;
            pmi.fence().map_err(|e| format!("PMI fence: {e}"))?;
            for r in 0..size {
                if r == me {
                    continue;
                }
                let v = get_when_there(&mut pmi, r, "card")?;
                cards[r as usize] = Card::decode(&v).ok_or_else(|| format!("rank {r} published a malformed address card {v:?}"))?;
            }
            let s = get_when_there(&mut pmi, 0, "secret")?;
            secret = unhex(&s).ok_or("the job secret from rank 0 is malformed")?;
        }
        let job_tag = {
            let h = crate::auth::sha256(format!("{}|{}", pmi.kvs_name(), hex(&secret)).as_bytes());
            u64::from_le_bytes(h[..8].try_into().unwrap())
        };
        if let Some(t) = tcp.take() {
            // Re-key the transport now that the secret is known.
            let mut t = t;
            t.set_auth(job_tag, secret);
            t.sndbuf = config.size("GRIDMPI_TCP_SNDBUF").map(|v| v as usize);
            t.connect_timeout = Duration::from_micros(config.micros("GRIDMPI_TCP_CONNECT_TIMEOUT").unwrap_or(30_000_000));
            t.rcvbuf = config.size("GRIDMPI_TCP_RCVBUF").map(|v| v as usize);
            tcp = Some(t);
        }

        let map = build_map(&config, &mut pmi, me, &cards, tcp.as_ref().map(|t| t.port()))?;

        // Locality.
        let local: Vec<Pid> = (0..size).filter(|&r| cards[r as usize].host_key == card.host_key).collect();
        let mut local_index = vec![None; size as usize];
        for (i, &p) in local.iter().enumerate() {
            local_index[p as usize] = Some(i);
        }
        let cpus = host_cpus(local.iter().map(|&p| &cards[p as usize].cpus));
        let oversubscribed = local.len() > cpus;
        let use_shm = !force_tcp && local.len() > 1;

        let spin = match config.micros("GRIDMPI_SPIN_US") {
            Some(us) => Duration::from_micros(us),
            None if oversubscribed => Duration::ZERO,
            None => Duration::from_micros(50),
        };

        let mut routes = vec![Route::Tcp; size as usize];
        routes[me as usize] = Route::Me;
        let mut engine = Engine::new(
            me,
            size as usize,
            EngineConfig { eager_credit: config.size("GRIDMPI_EAGER_CREDIT").unwrap_or(1 << 20).min(u32::MAX as u64) as u32 },
        );
        let eager_override = config.size("GRIDMPI_EAGER_LIMIT");

        let mut shm = None;
        if use_shm {
            let ring = match config.size("GRIDMPI_SHM_RING") {
                Some(v) => (v as usize).next_power_of_two().max(8192),
                None => {
                    // 256 KiB per ring, less when many ranks share the host.
                    let budget = 32usize << 20;
                    (budget / local.len()).next_power_of_two().clamp(32 * 1024, 256 * 1024)
                }
            };
            let name = format!("/gridmpi-{:016x}-{}", job_tag, me);
            let inbox = Inbox::create(&name, local.len(), ring).map_err(|e| format!("cannot create shared memory {name}: {e}"))?;
            let bell_name = |p: Pid| format!("gridmpi-{:016x}-{}", job_tag, p);
            let doorbell = Doorbell::bind(&bell_name(me)).map_err(|e| format!("cannot bind the shared-memory doorbell: {e}"))?;
            let ringer = Doorbell::sender().map_err(|e| format!("socket: {e}"))?;
            ep.add(doorbell.fd(), sys::EPOLLIN, DOORBELL_TOKEN).map_err(|e| format!("epoll_ctl: {e}"))?;
            barrier(&mut pmi, "shm-created", &local)?;
            let mut peers: Vec<Option<PeerInbox>> = (0..size).map(|_| None).collect();
            let my_local = local_index[me as usize].unwrap();
            for &p in &local {
                if p == me {
                    continue;
                }
                let pname = format!("/gridmpi-{:016x}-{}", job_tag, p);
                peers[p as usize] =
                    Some(PeerInbox::open(&pname, my_local).map_err(|e| format!("cannot map rank {p}'s shared memory {pname}: {e}"))?);
                routes[p as usize] = Route::Shm;
            }
            // Everyone has mapped everyone: the names can go.
            barrier(&mut pmi, "shm-mapped", &local)?;
            let mut inbox = inbox;
            inbox.unlink();
            let max_frame = (ring / 2 - HEADER_LEN - 8) as u64;
            let single_copy = config.bool("GRIDMPI_SINGLE_COPY").unwrap_or(true);
            if single_copy {
                sys::allow_single_copy_readers();
            }
            let eager = eager_override.unwrap_or(16 * 1024).min(max_frame);
            for &p in &local {
                engine.set_peer_params(
                    p,
                    PeerParams {
                        eager_limit: eager,
                        max_data_frame: (max_frame / 2).max(4096) as u32,
                        single_copy,
                        single_copy_min: eager + 1,
                    },
                );
            }
            shm = Some(ShmState {
                inbox,
                local: local.clone(),
                peers,
                backlog: (0..size).map(|_| VecDeque::new()).collect(),
                backlog_len: 0,
                doorbell,
                ringer,
                bell_names: (0..size).map(bell_name).collect(),
            });
        }
        // Messages to ourselves are copied directly by the engine.
        engine.set_peer_params(me, PeerParams { eager_limit: 64 * 1024, ..PeerParams::default() });
        if let Some(t) = tcp.as_mut() {
            ep.add(t.listen_fd(), sys::EPOLLIN, tcp::LISTEN_TOKEN).map_err(|e| format!("epoll_ctl: {e}"))?;
            for r in 0..size {
                if routes[r as usize] == Route::Tcp {
                    let c = &cards[r as usize];
                    let mut addrs: Vec<SocketAddrV4> = c.addrs.iter().map(|a| SocketAddrV4::new(*a, c.port)).collect();
                    if c.host_key == card.host_key {
                        // Same host, forced onto TCP: loopback first.
                        addrs.sort_by_key(|a| !a.ip().is_loopback());
                    } else {
                        addrs.retain(|a| !a.ip().is_loopback());
                    }
                    t.set_peer_addrs(r, addrs);
                    if let Some(tuning) = wan_tuning(&config, &map, me, r) {
                        t.set_tuning(r, tuning);
                    }
                    engine.set_peer_params(
                        r,
                        PeerParams {
                            eager_limit: eager_override.unwrap_or(64 * 1024),
                            max_data_frame: 4 << 20,
                            single_copy: false,
                            single_copy_min: u64::MAX,
                        },
                    );
                }
            }
        }
        if debug_conn {
            eprintln!(
                "gridmpi[{me}]: host {} key {} local ranks {:?} shm {} spin {:?}; {}",
                card.host,
                card.host_key,
                local,
                use_shm,
                spin,
                map.describe()
            );
        }
        let tcp_routes = routes.iter().any(|&r| r == Route::Tcp);
        let tracer = crate::trace::Tracer::from_config(&config, me, &card.host)?;
        if tracer.is_some() {
            engine.finished_schedules = Some(Vec::new());
        }
        Ok(Runtime {
            engine,
            me,
            size,
            config,
            pmi,
            cards,
            ep,
            routes,
            tcp,
            shm,
            events: Vec::with_capacity(64),
            wake,
            spin,
            oversubscribed,
            scratch_runs: Vec::new(),
            debug_conn,
            tcp_routes,
            tracer,
            map,
            pace_caps: Default::default(),
            pace_restores: Vec::new(),
            drains: Vec::new(),
        })
    }

    /// Ranks on this host, in order (for MPI_COMM_TYPE_SHARED).
    pub fn local_pids(&self) -> Vec<Pid> {
        let key = &self.cards[self.me as usize].host_key;
        (0..self.size).filter(|&r| &self.cards[r as usize].host_key == key).collect()
    }

    /// The epoll fd, to sleep on without holding the lock.
    pub fn epoll_fd(&self) -> RawFd {
        self.ep.raw_fd()
    }

    /// Wake threads sleeping in epoll (another thread completed something).
    pub fn wake_sleepers(&self) {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8) };
    }

    /// Move everything forward without blocking. Returns whether anything
    /// happened (a frame moved or a request completed).
    pub fn progress(&mut self) -> Result<bool, Fatal> {
        let mut any = false;
        for _round in 0..64 {
            let mut did = false;
            while let Some(a) = self.engine.poll_action() {
                did = true;
                self.dispatch(a)?;
            }
            if self.shm.is_some() {
                did |= self.poll_shm()?;
            }
            if self.tcp_routes {
                did |= self.poll_tcp(Some(Duration::ZERO))?;
            }
            if !did {
                break;
            }
            any = true;
        }
        self.observe(any);
        Ok(any)
    }

    /// Handle connection events (pacing of new connections, the tracer),
    /// lift drained pacing caps, and let the tracer sample.
    fn observe(&mut self, busy: bool) {
        if !self.pace_restores.is_empty() {
            self.restore_pacing();
        }
        if !self.drains.is_empty() {
            self.check_drains();
        }
        let events = match self.tcp.as_mut() {
            Some(t) if !t.events.is_empty() => std::mem::take(&mut t.events),
            _ => Vec::new(),
        };
        for ev in &events {
            if let tcp::ConnEvent::Opened { peer, .. } = ev {
                if let Some(cap) = self.pace_caps.get(peer).and_then(|c| c.iter().min().copied()) {
                    if let Some(t) = self.tcp.as_mut() {
                        t.set_pacing(*peer, Some(cap));
                    }
                }
            }
        }
        let Some(tr) = self.tracer.as_mut() else { return };
        for ev in events {
            match ev {
                tcp::ConnEvent::Opened { peer, fd } => tr.conn_opened(peer, fd, &self.cards[peer as usize].host),
                tcp::ConnEvent::Closed { peer, fd } => tr.conn_closed(peer, fd),
                tcp::ConnEvent::Tuned { peer, option, value } => tr.tuning(peer, option, &value),
            }
        }
        tr.tick(busy);
    }

    /// Before sleeping: tell shm peers to ring our doorbell, and check once
    /// more that nothing arrived. Returns false if the caller must not sleep.
    pub fn prepare_sleep(&mut self) -> bool {
        if self.engine.has_actions() {
            return false;
        }
        if let Some(s) = self.shm.as_mut() {
            if s.backlog_len > 0 {
                return false;
            }
            s.inbox.set_sleeping(true);
            for i in 0..s.local.len() {
                if s.inbox.reader(i).has_data() {
                    s.inbox.set_sleeping(false);
                    return false;
                }
            }
        }
        true
    }

    /// After waking.
    pub fn after_sleep(&mut self) {
        if let Some(s) = self.shm.as_ref() {
            s.inbox.set_sleeping(false);
            s.doorbell.drain();
        }
        let mut v = 0u64;
        // SAFETY: reading 8 bytes from our eventfd.
        unsafe { libc::read(self.wake.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
    }

    /// Whether a sleeper needs a timeout (shared-memory writes waiting for
    /// room: a full ring does not wake us when it drains).
    pub fn sleep_timeout(&self) -> Option<Duration> {
        match &self.shm {
            Some(s) if s.backlog_len > 0 => Some(Duration::from_micros(200)),
            // Nothing wakes us when a socket's queue drains: look again soon
            // (1 ms, epoll's resolution; see Epoll::wait_raw).
            _ if !self.drains.is_empty() => Some(Duration::from_millis(1)),
            _ => Some(Duration::from_millis(500)),
        }
    }

    fn dispatch(&mut self, a: Action) -> Result<(), Fatal> {
        match a {
            Action::Transmit(t) => match self.routes[t.peer as usize] {
                Route::Shm => self.shm_send(t),
                Route::Tcp => {
                    let peer = t.peer;
                    let tcp = self.tcp.as_mut().expect("TCP route without TCP");
                    tcp.send(t, &mut self.engine, &self.ep).map_err(|e| self.fatal_peer(peer, &e.message))
                }
                Route::Me => Err(Fatal("internal error: a frame addressed to ourselves".into())),
            },
            Action::Pace { peer, bytes_per_sec } => {
                self.pace(peer, bytes_per_sec);
                Ok(())
            }
            Action::Drain { peer, req } => {
                self.drains.push((peer, req));
                self.check_drains();
                Ok(())
            }
            Action::RemoteRead { peer, remote_addr, len, dst, req } => {
                self.scratch_runs.clear();
                dst.runs(0, len, usize::MAX, &mut self.scratch_runs);
                let ok = match sys::read_process_memory(self.cards[peer as usize].os_pid, remote_addr, &self.scratch_runs) {
                    Ok(n) => n as u64 == len,
                    Err(e) => {
                        if self.debug_conn {
                            eprintln!("gridmpi[{}]: single-copy read from rank {peer} failed ({e}); copying through the ring", self.me);
                        }
                        false
                    }
                };
                self.engine.remote_read_done(req, ok);
                Ok(())
            }
        }
    }

    /// Apply (Some) or release (None) a pacing cap on the TCP connection to
    /// `peer`. Shared-memory peers are never paced.
    fn pace(&mut self, peer: Pid, rate: Option<u64>) {
        if self.routes[peer as usize] != Route::Tcp {
            return;
        }
        let caps = self.pace_caps.entry(peer).or_default();
        match rate {
            Some(r) => {
                caps.push(r);
                self.pace_restores.retain(|&p| p != peer);
            }
            None => {
                caps.pop();
                if caps.is_empty() {
                    self.pace_caps.remove(&peer);
                    self.pace_restores.push(peer);
                    return;
                }
            }
        }
        let cap = self.pace_caps.get(&peer).and_then(|c| c.iter().min().copied());
        if let Some(t) = self.tcp.as_mut() {
            // Not yet connected: applied when the connection opens (observe).
            t.set_pacing(peer, cap);
        }
    }

    /// Complete the drain waits whose socket has sent everything written to
    /// it (shared-memory peers and closed connections at once).
    fn check_drains(&mut self) {
        let (tcp, engine, routes) = (self.tcp.as_ref(), &mut self.engine, &self.routes);
        self.drains.retain(|&(peer, req)| {
            let unsent = match (routes[peer as usize], tcp) {
                (Route::Tcp, Some(t)) => t.unsent_bytes(peer).unwrap_or(0),
                _ => 0,
            };
            if unsent > 0 {
                return true;
            }
            engine.complete_external(req, Default::default());
            false
        });
    }

    /// Lift released caps once the socket has sent what was written under them.
    fn restore_pacing(&mut self) {
        let Some(t) = self.tcp.as_mut() else { return };
        self.pace_restores.retain(|&peer| match t.unsent_bytes(peer) {
            Some(n) if n > 0 => true,
            _ => {
                t.set_pacing(peer, None);
                false
            }
        });
    }

    fn fatal_peer(&self, peer: Pid, msg: &str) -> Fatal {
        let c = &self.cards[peer as usize];
        Fatal(format!("rank {} (pid {} on {}): {}", peer, c.os_pid, c.host, msg))
    }

    fn shm_send(&mut self, t: Transmit) -> Result<(), Fatal> {
        let s = self.shm.as_mut().unwrap();
        let p = t.peer as usize;
        if !s.backlog[p].is_empty() {
            s.backlog[p].push_back(t);
            s.backlog_len += 1;
            return Ok(());
        }
        match write_to_ring(s, t, &mut self.engine) {
            None => Ok(()),
            Some(t) => {
                s.backlog[p].push_back(t);
                s.backlog_len += 1;
                Ok(())
            }
        }
    }

    fn poll_shm(&mut self) -> Result<bool, Fatal> {
        let me = self.me;
        let mut did = false;
        // Retry writes that found a ring full.
        let s = self.shm.as_mut().unwrap();
        if s.backlog_len > 0 {
            for p in 0..s.backlog.len() {
                while let Some(t) = s.backlog[p].pop_front() {
                    s.backlog_len -= 1;
                    match write_to_ring(s, t, &mut self.engine) {
                        None => did = true,
                        Some(t) => {
                            s.backlog[p].push_front(t);
                            s.backlog_len += 1;
                            break;
                        }
                    }
                }
            }
        }
        // Read every ring until all are empty (bounded, for fairness with TCP).
        for _ in 0..256 {
            let mut progressed = false;
            let nlocal = self.shm.as_ref().unwrap().local.len();
            for i in 0..nlocal {
                let s = self.shm.as_mut().unwrap();
                let pid = s.local[i];
                if pid == me {
                    continue;
                }
                let frame = match s.inbox.reader(i).peek() {
                    Ok(Some(f)) => f,
                    Ok(None) => continue,
                    Err(e) => return Err(self.fatal_peer(pid, &format!("corrupt shared-memory ring: {e}"))),
                };
                let hb: &[u8; HEADER_LEN] = frame[..HEADER_LEN].try_into().unwrap();
                let h = Header::decode(hb).map_err(|e| Fatal(format!("rank {pid}: malformed frame in shared memory: {e}")))?;
                let len = HEADER_LEN + h.payload_len as usize;
                // The payload is read in place from shared memory.
                self.engine.handle_frame(pid, &h, &frame[HEADER_LEN..len]).map_err(|e| Fatal(e.to_string()))?;
                self.shm.as_mut().unwrap().inbox.reader(i).consume(len);
                progressed = true;
            }
            if !progressed {
                break;
            }
            did = true;
            // Hand out replies (credits, CTS) promptly.
            while let Some(a) = self.engine.poll_action() {
                self.dispatch(a)?;
            }
        }
        Ok(did)
    }

    fn poll_tcp(&mut self, timeout: Option<Duration>) -> Result<bool, Fatal> {
        self.events.clear();
        self.ep.wait(&mut self.events, timeout).map_err(|e| Fatal(format!("epoll_wait: {e}")))?;
        let mut did = false;
        let events = std::mem::take(&mut self.events);
        for &(token, ev) in &events {
            match token {
                DOORBELL_TOKEN | WAKE_TOKEN => {}
                tcp::LISTEN_TOKEN => {
                    self.tcp.as_mut().unwrap().accept(&self.ep);
                    did = true;
                }
                t if t >= tcp::CONN_TOKEN_BASE => {
                    let tcp = self.tcp.as_mut().unwrap();
                    if let Err(e) = tcp.handle_event(t, ev, &mut self.engine, &self.ep) {
                        let msg = e.to_string();
                        self.events = events;
                        return Err(match e.peer {
                            Some(p) => self.fatal_peer(p, &e.message),
                            None => Fatal(msg),
                        });
                    }
                    did = true;
                }
                _ => {}
            }
        }
        self.events = events;
        if let Some(t) = self.tcp.as_mut() {
            if t.backlog() > 0 {
                t.flush_all(&mut self.engine, &self.ep).map_err(|e| Fatal(e.to_string()))?;
                // Frames wait for a connection: make sure it cannot wait forever.
                if let Err(e) = t.check_timeouts(&self.ep) {
                    return Err(match e.peer {
                        Some(p) => self.fatal_peer(p, &e.message),
                        None => Fatal(e.to_string()),
                    });
                }
            }
        }
        Ok(did)
    }

    /// Orderly shutdown of the transports (after the final barrier).
    pub fn shutdown(&mut self) {
        if let Some(t) = self.tcp.as_mut() {
            t.finalizing = true;
        }
    }

    pub fn close(&mut self) {
        if let Some(t) = self.tcp.as_mut() {
            t.close_all(&self.ep);
        }
        self.observe(false);
        if let Some(tr) = self.tracer.as_mut() {
            tr.finish();
        }
    }

    /// Pending outbound work (frames not yet handed to the kernel/ring).
    pub fn outbound_pending(&self) -> bool {
        self.engine.has_actions()
            || self.shm.as_ref().is_some_and(|s| s.backlog_len > 0)
            || self.tcp.as_ref().is_some_and(|t| t.backlog() > 0)
    }
}

/// Write one frame into its peer's ring; give it back when the ring is full.
fn write_to_ring(s: &mut ShmState, t: Transmit, engine: &mut Engine) -> Option<Transmit> {
    let p = t.peer as usize;
    let peer = s.peers[p].as_mut().expect("shm route without a mapped inbox");
    let plen = t.payload.len() as usize;
    let total = HEADER_LEN + plen;
    let header = t.header.encode();
    let ok = peer.writer().try_write(total, |slot| {
        slot[..HEADER_LEN].copy_from_slice(&header);
        let body = &mut slot[HEADER_LEN..];
        match &t.payload {
            Payload::None => {}
            Payload::Owned(v) => body.copy_from_slice(v),
            Payload::Word(w) => body.copy_from_slice(&w.to_le_bytes()),
            // SAFETY: the engine keeps the user buffer valid until notified.
            Payload::User { buf, offset, len } => unsafe {
                buf.read_packed(*offset, &mut body[..*len as usize]);
            },
        }
    });
    if !ok {
        return Some(t);
    }
    if peer.needs_wakeup() {
        s.ringer.ring(&s.bell_names[p]);
    }
    if let Some(r) = t.notify {
        engine.transmitted(r);
    }
    None
}

/// The cluster map from the topology file, the launcher's cluster names, or
/// discovery (see clustermap.rs).
fn build_map(config: &Config, pmi: &mut Pmi, me: Pid, cards: &[Card], port: Option<u16>) -> Result<ClusterMap, String> {
    let n = cards.len();
    let hosts: Vec<String> = cards.iter().map(|c| c.host.clone()).collect();
    let mut map = match config.text("GRIDMPI_TOPOLOGY") {
        "" => {
            if cards.iter().any(|c| !c.cluster.is_empty()) {
                let names: Vec<String> =
                    cards.iter().map(|c| if c.cluster.is_empty() { "default".to_string() } else { c.cluster.clone() }).collect();
                ClusterMap::from_names(&names, MapSource::Launcher)
            } else {
                let mut keys: Vec<&str> = cards.iter().map(|c| c.host_key.as_str()).collect();
                keys.sort();
                keys.dedup();
                let discover = match config.text("GRIDMPI_CLUSTER_DISCOVERY") {
                    "on" => true,
                    "off" => false,
                    _ => keys.len() > 1,
                };
                if discover && keys.len() > 1 && port.is_some() {
                    discover_map(config, pmi, me, cards)?
                } else {
                    ClusterMap::single(n)
                }
            }
        }
        path => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("GRIDMPI_TOPOLOGY: cannot read {path}: {e}"))?;
            let t = TopologyFile::parse(&text).map_err(|e| format!("GRIDMPI_TOPOLOGY {path}: {e}"))?;
            t.map(&hosts, path)?
        }
    };
    let bw = match config.text("GRIDMPI_WAN_BANDWIDTH") {
        "" => None,
        v => Some(clustermap::parse_rate(v).map_err(|e| format!("GRIDMPI_WAN_BANDWIDTH: {e}"))?),
    };
    let rtt = match config.text("GRIDMPI_WAN_DELAY") {
        "" => None,
        v => Some(clustermap::parse_duration(v).map_err(|e| format!("GRIDMPI_WAN_DELAY: {e}"))? * 2),
    };
    map.set_uniform_wan(bw, rtt);
    Ok(map)
}

/// One rank per host (the lowest) times TCP handshakes with one rank of every
/// other host; all share the results through PMI and group hosts alike.
fn discover_map(config: &Config, pmi: &mut Pmi, me: Pid, cards: &[Card]) -> Result<ClusterMap, String> {
    let mut keys: Vec<&str> = Vec::new();
    for c in cards {
        if !keys.contains(&c.host_key.as_str()) {
            keys.push(&c.host_key);
        }
    }
    let leader_of = |k: &str| cards.iter().position(|c| c.host_key == k).unwrap() as Pid;
    let leaders: Vec<Pid> = keys.iter().map(|k| leader_of(k)).collect();
    if leaders.contains(&me) {
        let mut row = Vec::new();
        for &l in &leaders {
            if l == me {
                continue;
            }
            let c = &cards[l as usize];
            let best = c
                .addrs
                .iter()
                .filter(|a| !a.is_loopback())
                .filter_map(|a| handshake_time(SocketAddrV4::new(*a, c.port)))
                .min();
            if let Some(t) = best {
                row.push(format!("{l}:{}", t.as_micros()));
            }
        }
        pmi.put("rtt", &row.join(",")).map_err(|e| format!("PMI put: {e}"))?;
    }
    pmi.put("rtt-done", "1").map_err(|e| format!("PMI put: {e}"))?;
    pmi.fence().map_err(|e| format!("PMI fence: {e}"))?;
    let mut rtt = vec![vec![None; leaders.len()]; leaders.len()];
    for (i, &l) in leaders.iter().enumerate() {
        let v = get_when_there(pmi, l, "rtt")?;
        for part in v.split(',').filter(|p| !p.is_empty()) {
            let (peer, us) = part.split_once(':').ok_or("malformed RTT report")?;
            let (peer, us): (Pid, u64) = (peer.parse().map_err(|_| "bad rtt")?, us.parse().map_err(|_| "bad rtt")?);
            if let Some(j) = leaders.iter().position(|&x| x == peer) {
                rtt[i][j] = Some(Duration::from_micros(us));
            }
        }
    }
    let threshold = Duration::from_micros(config.micros("GRIDMPI_CLUSTER_RTT").unwrap_or(1000));
    let host_cluster = clustermap::cluster_hosts(&rtt, threshold);
    let names: Vec<String> = cards
        .iter()
        .map(|c| format!("cluster{}", host_cluster[keys.iter().position(|k| *k == c.host_key).unwrap()]))
        .collect();
    let mut map = ClusterMap::from_names(&names, MapSource::Discovered);
    // The WAN RTT between two clusters: the smallest measured between their hosts.
    for i in 0..leaders.len() {
        for j in 0..leaders.len() {
            let (a, b) = (host_cluster[i] as usize, host_cluster[j] as usize);
            if a != b {
                if let Some(t) = rtt[i][j] {
                    let l = &mut map.links[a][b];
                    l.rtt = Some(l.rtt.map_or(t, |x| x.min(t)));
                }
            }
        }
    }
    Ok(map)
}

/// The smallest of three TCP handshake times to `addr` (connect() until
/// writable: one round trip), or None if it does not answer.
fn handshake_time(addr: SocketAddrV4) -> Option<Duration> {
    (0..3).filter_map(|_| {
        let start = std::time::Instant::now();
        let s = std::net::TcpStream::connect_timeout(&addr.into(), Duration::from_millis(500)).ok()?;
        let t = start.elapsed();
        drop(s);
        Some(t)
    })
    .min()
}

/// Socket options for the connection to `peer`, when it crosses a WAN.
fn wan_tuning(config: &Config, map: &ClusterMap, me: Pid, peer: Pid) -> Option<tcp::Tuning> {
    let link = map.wan_between(me, peer)?;
    let bdp = match (link.bandwidth_bps, link.rtt) {
        (Some(bw), Some(rtt)) => Some((bw as f64 / 8.0 * rtt.as_secs_f64()) as u64),
        _ => None,
    };
    let cc = match config.text("GRIDMPI_TCP_CC") {
        "auto" | "" => vec!["cubic".to_string(), "reno".to_string()],
        v => vec![v.to_string()],
    };
    let rto_min_us = Some(config.micros("GRIDMPI_TCP_RTO_MIN").unwrap_or(5_000).min(u32::MAX as u64) as u32);
    let rto_max_ms = Some(match config.micros("GRIDMPI_TCP_RTO_MAX") {
        Some(us) => (us / 1000).max(1) as u32,
        None => link.rtt.map_or(1000, |r| (r.as_millis() as u32 * 20).max(1000)),
    });
    let notsent_lowat = match config.size("GRIDMPI_TCP_NOTSENT_LOWAT") {
        Some(v) => Some(v.min(u32::MAX as u64) as u32),
        None => Some(bdp.map_or(128 * 1024, |b| (b / 2).max(64 * 1024)).min(u32::MAX as u64) as u32),
    };
    let buf = match config.size("GRIDMPI_TCP_WAN_BUFFER") {
        Some(v) => Some(v as usize),
        None => bdp.map(|b| (4 * b).max(256 * 1024) as usize),
    };
    Some(tcp::Tuning { cc, rto_min_us, rto_max_ms, notsent_lowat, sndbuf: buf, rcvbuf: buf })
}

/// Wait until every rank in `ranks` has reached this point, through PMI.
/// A fence alone is not enough: some process managers (MPICH's hydra with
/// PMI-2) answer a fence at once. So each rank puts a key, fences, and then
/// reads the others' keys, retrying while a key is not there yet.
fn barrier(pmi: &mut Pmi, what: &str, ranks: &[Pid]) -> Result<(), String> {
    pmi.put(what, "1").map_err(|e| format!("PMI put: {e}"))?;
    pmi.fence().map_err(|e| format!("PMI fence ({what}): {e}"))?;
    for &r in ranks {
        get_when_there(pmi, r, what)?;
    }
    Ok(())
}

/// `pmi.get`, retrying while the key has not been put yet (see [`barrier`]).
fn get_when_there(pmi: &mut Pmi, rank: Pid, key: &str) -> Result<String, String> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_micros(100);
    loop {
        match pmi.get(rank, key) {
            Ok(v) => return Ok(v),
            Err(gridmpi_pmi::PmiError::NotFound { .. }) if start.elapsed() < Duration::from_secs(120) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => return Err(format!("PMI get of rank {rank}'s {key:?}: {e}")),
        }
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

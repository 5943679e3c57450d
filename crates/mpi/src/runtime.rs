//! The runtime: the engine, the driver that runs its I/O, and what
//! bootstrap learned, put together at MPI_Init.
//!
//! `Runtime::progress` moves everything forward without blocking. Waiting
//! is done by the caller (state.rs): poll briefly, then sleep on
//! [`Runtime::sleep_fd`] until a socket, a shared-memory doorbell or another
//! thread wakes it.

use crate::bootstrap::{self, Boot, Card};
use crate::clustermap::ClusterMap;
use crate::driver::{Driver, PeerName, Route};
use gridmpi_config::Config;
use gridmpi_engine::{Engine, EngineConfig, PeerParams, Pid};
use gridmpi_pmi::Pmi;
use gridmpi_transport::shm::Shm;
use gridmpi_transport::sys;
use gridmpi_transport::tcp::handshake::{Keys, Who};
use std::os::fd::RawFd;
use std::time::Duration;

pub use crate::driver::Fatal;

pub struct Runtime {
    pub engine: Engine,
    driver: Driver,
    pub me: Pid,
    pub size: u32,
    pub config: Config,
    pub pmi: Pmi,
    pub cards: Vec<Card>,
    /// How long a blocked call polls before sleeping.
    pub spin: Duration,
    /// How long it polls when no other thread of the process waits.
    pub spin_alone: Duration,
    /// How long a blocked call that shares its core yields between polls
    /// before sleeping.
    pub yield_for: Duration,
    /// True when more ranks run on this host than it has CPUs.
    pub oversubscribed: bool,
    /// Records the TCP history of connections when tracing is on.
    pub tracer: Option<crate::trace::Tracer>,
    /// Which cluster every rank is in, and the WAN between clusters.
    pub map: ClusterMap,
    /// Ranks on this host, in order.
    local: Vec<Pid>,
    /// The next progress pass may copy single-copy reads itself (set by
    /// state.rs: not when the caller, or another thread, is blocked waiting
    /// and will copy them without the lock).
    pub copy_inline: bool,
    /// Signs of work a blocked call spins on (see state::wait).
    /// Shared with every blocked call that spins (one count to take).
    pub arrivals: std::sync::Arc<gridmpi_transport::progress::Arrivals>,
    /// The prefix of this job's shared-memory names, when ranks of this
    /// host talk through shared memory (host collective areas use it).
    pub shm_prefix: Option<String>,
    /// The start of every /dev/shm name of the job (windows use it
    /// whether or not the rings are in shared memory).
    pub shm_names: String,
    /// The job's tag.
    pub job_tag: u64,
    /// Says when a WAN link looks down (see outage.rs).
    outage: crate::outage::OutageWatch,
    /// The job's secret (keys a TCP transport made after start-up).
    secret: [u8; 32],
    /// Who the processes of joined worlds are: pid `size + i` is
    /// `foreign[i]` (its world and its rank there).
    foreign: Vec<Who>,
    /// gridmpirun may checkpoint this job (checkpoint.rs).
    pub checkpointing: bool,
    /// The job survives failed ranks (ft.rs: gridmpirun --with-ft ulfm).
    pub fault_tolerant: bool,
}

/// A process of another world, as the root of a join describes it.
#[derive(Clone, Debug)]
pub struct Remote {
    pub who: Who,
    pub card: Card,
}

/// The prefix of a job's shared-memory names: the one gridmpirun gives
/// (it removes what is left of them when the job ends), else one derived
/// from the job.
fn shm_prefix(given: &str, job_tag: u64) -> String {
    let usable = given.starts_with("gridmpi-") && given.len() <= 64 && given.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if usable {
        given.to_string()
    } else {
        format!("gridmpi-{job_tag:016x}")
    }
}

/// What the engine needs to know of a peer reached over TCP.
fn tcp_params(config: &Config) -> PeerParams {
    let eager = config.size("GRIDMPI_EAGER_LIMIT").unwrap_or(64 * 1024);
    PeerParams { eager_limit: eager, max_data_frame: 4 << 20, single_copy: false, single_copy_min: u64::MAX }
}

/// How long a blocked call polls before sleeping (GRIDMPI_SPIN_US): (when
/// other threads of the process wait too, when none does). Auto: none when
/// ranks outnumber cores; else 1 ms for a lone waiter and 50 us when others
/// wait too. Waking from sleep costs tens of microseconds here (a 1 MiB
/// ping-pong took 100 us with a 50 us spin, 65 us with 1 ms, as Open
/// MPI's), and a lone waiter takes no CPU anyone of its process needs;
/// threads that wait together would take it from the one that works (4
/// threads' 4 KiB round trip: 3.4 us with 50 us spins, 69 us with 1 ms).
pub fn spin_time(config: &Config, oversubscribed: bool) -> (Duration, Duration) {
    match config.duration("GRIDMPI_SPIN_US") {
        Some(spin) => (spin, spin),
        None if oversubscribed => (Duration::ZERO, Duration::ZERO),
        None => (Duration::from_micros(50), Duration::from_millis(1)),
    }
}

/// Whether GRIDMPI_DEBUG names `channel` (or `all`).
pub fn debug_channel(config: &Config, channel: &str) -> bool {
    config.text("GRIDMPI_DEBUG").split(',').any(|x| x == channel || x == "all")
}

/// The clusters of every pid, when paced WAN rates are to follow the WAN
/// (GRIDMPI_WAN_FOLLOW, and there is a WAN).
fn following_wan<'a>(config: &Config, map: &'a ClusterMap) -> Option<&'a [u32]> {
    (config.get_bool("GRIDMPI_WAN_FOLLOW") && map.clusters() > 1).then_some(map.of_pid.as_slice())
}

impl Runtime {
    /// Bootstrap, then set up the transports each peer is reached by.
    pub fn init(config: Config) -> Result<Runtime, String> {
        let Boot { mut pmi, me, size, job_tag, cards, map, local, oversubscribed, mut tcp, relay_key, secret } = bootstrap::bootstrap(&config)?;
        let debug_conn = debug_channel(&config, "conn");
        // A job that checkpoints keeps all its state in process memory and
        // TCP links that resume (see checkpoint.rs): no shared memory.
        let checkpointing = crate::checkpoint::dir().is_some();
        // A fault-tolerant job's links all survive resets: only gridmpirun
        // says a peer failed (ft.rs), never a broken connection alone.
        let fault_tolerant = crate::ft::enabled();
        let use_shm = config.text("GRIDMPI_TRANSPORT") != "tcp" && local.len() > 1 && !checkpointing;
        // Every rank of the host names shared memory alike: as the first
        // local rank's launcher said (it removes the leftovers).
        let shm_names = shm_prefix(&cards[local[0] as usize].shm_prefix, job_tag);
        let (spin, spin_alone) = spin_time(&config, oversubscribed);
        let yield_for = config.get_duration("GRIDMPI_YIELD_US");
        let mut engine = Engine::new(
            me,
            size as usize,
            EngineConfig { eager_credit: config.get_size("GRIDMPI_EAGER_CREDIT").min(u32::MAX as u64) as u32 },
        );
        let eager_override = config.size("GRIDMPI_EAGER_LIMIT");
        let mut routes = vec![Route::Tcp; size as usize];
        routes[me as usize] = Route::Me;

        let shm = if use_shm {
            let ring = match config.size("GRIDMPI_SHM_RING") {
                Some(v) => (v as usize).next_power_of_two().max(8192),
                // 256 KiB per ring, less when many ranks share the host.
                None => ((32usize << 20) / local.len()).next_power_of_two().clamp(32 * 1024, 256 * 1024),
            };
            let os_pids = cards.iter().map(|c| c.os_pid).collect();
            let mut shm = Shm::create(&shm_names, me, local.clone(), os_pids, ring)?;
            bootstrap::barrier(&mut pmi, "shm-created", &local)?;
            shm.map_peers()?;
            // Everyone has mapped everyone: the names can go.
            bootstrap::barrier(&mut pmi, "shm-mapped", &local)?;
            shm.unlink();
            let max_frame = shm.max_frame() as u64;
            let single_copy = config.get_bool("GRIDMPI_SINGLE_COPY");
            if single_copy {
                let readers: Vec<u32> = local.iter().filter(|&&p| p != me).map(|&p| cards[p as usize].os_pid).collect();
                sys::allow_single_copy_readers(&readers);
            }
            let eager = eager_override.unwrap_or(16 * 1024).min(max_frame);
            // Messages up to half a ring go through it even above the eager
            // limit (Data frames after a clear-to-send): on this machine a
            // process_vm_readv costs more than the second copy below that
            // (32 KiB ping-pong 1.3 us through the ring, 3.7 single-copy;
            // 128 KiB 3.2 against 10.0; streaming 128 KiB 28 against 12
            // GB/s); from a ring's size on, the sender would wait for room.
            let single_copy_min = (eager + 1).max(ring as u64 / 2 + 1);
            for &p in local.iter().filter(|&&p| p != me) {
                routes[p as usize] = Route::Shm;
                engine.set_peer_params(
                    p,
                    PeerParams { eager_limit: eager, max_data_frame: (max_frame / 2).max(4096) as u32, single_copy, single_copy_min },
                );
            }
            Some(shm)
        } else {
            None
        };
        // Messages to ourselves are copied directly by the engine.
        engine.set_peer_params(me, PeerParams { eager_limit: 64 * 1024, ..PeerParams::default() });
        if let Some(t) = tcp.as_mut() {
            let resume = config.text("GRIDMPI_TCP_RESUME");
            let tls = config.text("GRIDMPI_WAN_TLS");
            for r in (0..size).filter(|&r| routes[r as usize] == Route::Tcp) {
                t.set_peer_addrs(r, bootstrap::peer_addrs(&cards, me, r));
                // Links that survive a reset keep a copy of what they send.
                let across = map.cluster_of(me) != map.cluster_of(r);
                if let (true, Some(way)) = (across, bootstrap::relay_way(&cards, me, r, relay_key)) {
                    t.set_peer_relay(r, way);
                }
                t.set_resumable(r, checkpointing || fault_tolerant || resume == "all" || (resume == "wan" && across));
                t.set_tls(r, tls == "all" || (tls == "on" && across));
                if let Some(tuning) = bootstrap::wan_tuning(&config, &map, me, r) {
                    t.set_tuning(r, tuning);
                }
                engine.set_peer_params(r, tcp_params(&config));
            }
        }
        let my_card = &cards[me as usize];
        if debug_conn {
            eprintln!(
                "gridmpi[{me}]: host {} key {} local ranks {:?} shm {} spin {:?}; {}",
                my_card.host,
                my_card.host_key,
                local,
                use_shm,
                spin,
                map.describe()
            );
        }
        let tracer = crate::trace::Tracer::from_config(&config, me, &my_card.host)?;
        if tracer.is_some() {
            engine.finished_schedules = Some(Vec::new());
        }
        let cluster_name = |p: usize| if map.clusters() > 1 { map.names[map.cluster_of(p as u32) as usize].clone() } else { String::new() };
        let names = cards.iter().enumerate().map(|(p, c)| PeerName { who: format!("rank {p}"), host: c.host.clone(), os_pid: c.os_pid, cluster: cluster_name(p) }).collect();
        let mut driver = Driver::new(me, routes, tcp, shm, names, debug_conn)?;
        driver.follow_wan(following_wan(&config, &map), debug_channel(&config, "pace"));
        driver.set_fault_tolerant(fault_tolerant);
        let arrivals = std::sync::Arc::new(driver.arrivals());
        let shm_prefix = use_shm.then(|| shm_names.clone());
        let budget = config.duration("GRIDMPI_WAN_OUTAGE_BUDGET").filter(|d| !d.is_zero());
        let outage = crate::outage::OutageWatch::new(me, &map, budget);
        bootstrap::spread(&config, &local, me, &cards);
        Ok(Runtime { engine, driver, me, size, config, pmi, cards, spin, spin_alone, yield_for, oversubscribed, tracer, map, local, arrivals, copy_inline: true, shm_prefix, shm_names, job_tag, outage, secret, foreign: Vec::new(), checkpointing, fault_tolerant })
    }

    /// Whether ranks of a host may share memory (windows): not when the
    /// user keeps everything on TCP, nor in a job that checkpoints.
    pub fn shared_memory_allowed(&self) -> bool {
        self.config.text("GRIDMPI_TRANSPORT") != "tcp" && !self.checkpointing
    }

    /// Why this process cannot be checkpointed now, if it cannot.
    pub fn checkpoint_obstacle(&self) -> Option<String> {
        if !self.foreign.is_empty() {
            return Some("it is connected to processes of another job (MPI_Comm_connect/accept, spawn or join)".into());
        }
        None
    }

    /// This process was restored from a checkpoint by a new gridmpirun
    /// (`handover`: gridmpi-restore's environment, see
    /// gridmpi_checkpoint::handover): talk to that launcher, listen again,
    /// tell the other ranks where we are now and learn where they are, and
    /// build the cluster map again as the new job's settings say (its
    /// hostfile's clusters, topology file, or discovery): the ranks may
    /// have moved to other clusters. The links then resume as after a
    /// reset (Tcp::after_restore). The secret, the other settings and
    /// everything MPI holds are the image's. Returns the image's map.
    pub fn after_restore(&mut self, handover: &[(String, String)]) -> Result<ClusterMap, String> {
        let get = |k: &str| handover.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        let number = |k: &str| -> Result<i64, String> {
            let v = get(k).ok_or_else(|| format!("the restarting launcher did not set {k} (was this restored by gridmpirun --restart?)"))?;
            v.trim().parse().map_err(|_| format!("{k}={v} is not a number"))
        };
        let (fd, rank, size) = (number("PMI_FD")?, number("PMI_RANK")?, number("PMI_SIZE")?);
        if rank != self.me as i64 || size != self.size as i64 {
            return Err(format!("this is the image of rank {} of {}, restarted as rank {rank} of {size}", self.me, self.size));
        }
        // SAFETY: gridmpi-restore kept the new launcher's PMI socket open at
        // this number for us, and nothing else owns it.
        let stream = unsafe { <std::os::unix::net::UnixStream as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) };
        let pmi = Pmi::from_stream(stream, gridmpi_pmi::Version::Pmi1, self.me, self.size).map_err(|e| format!("PMI: {e}"))?;
        // The old connection's descriptor is a placeholder: dropping it
        // closes /dev/null.
        self.pmi = pmi;
        // The new job's settings, for what depends on where the ranks are now.
        let fresh = Config::load_from(None, handover).map_err(|e| format!("the restarting job's settings: {e}"))?;
        let addrs = bootstrap::published_addrs(fresh.text("GRIDMPI_TCP_ADDR"))?;
        let ports = bootstrap::port_range(fresh.text("GRIDMPI_TCP_PORTS"))?;
        self.driver.after_restore(bootstrap::bind_address(&addrs), ports)?;
        let port = self.driver.tcp_mut().map(|t| t.port());
        let subnet = bootstrap::subnet_of(&addrs);
        let card = Card {
            host: sys::hostname(),
            host_key: sys::host_key(),
            os_pid: sys::getpid(),
            port: port.unwrap_or(0),
            addrs,
            // The new launcher's cluster names; without them the image's
            // (a rendezvous group's) unless the old launcher named them.
            cluster: match (fresh.text("GRIDMPI_CLUSTER"), self.config.text("GRIDMPI_CLUSTER")) {
                ("", "") => self.cards[self.me as usize].cluster.clone(),
                (name, _) => name.replace(';', "_"),
            },
            cpus: sys::affinity_mask(),
            shm_prefix: String::new(),
            relay: None,
            subnet,
        };
        let cards = if self.size > 1 { bootstrap::exchange_cards(&mut self.pmi, self.me, self.size, &card)? } else { vec![card] };
        for (r, c) in cards.into_iter().enumerate() {
            self.cards[r] = c;
        }
        // Ranks may be on other hosts and clusters now: the map is made
        // again, as at MPI_Init (the image's topology file, the new
        // launcher's cluster names, or discovery).
        let map = bootstrap::build_map(&self.config, &mut self.pmi, self.me, &self.cards, port)?;
        let old = std::mem::replace(&mut self.map, map);
        let map = &self.map;
        for r in 0..self.size {
            let cluster = if map.clusters() > 1 { map.names[map.cluster_of(r) as usize].clone() } else { String::new() };
            let c = &self.cards[r as usize];
            self.driver.rename_peer(r, c.host.clone(), c.os_pid, cluster);
        }
        if let Some(t) = self.driver.tcp_mut() {
            for r in (0..self.size).filter(|&r| r != self.me) {
                t.set_peer_addrs(r, bootstrap::peer_addrs(&self.cards, self.me, r));
                // Tuning for the links as they are now (applied to the
                // new connections).
                match bootstrap::wan_tuning(&self.config, map, self.me, r) {
                    Some(tuning) => t.set_tuning(r, tuning),
                    None => t.clear_tuning(r),
                }
                // Encryption too: a link that crosses the WAN now must be.
                let tls = self.config.text("GRIDMPI_WAN_TLS");
                t.set_tls(r, tls == "all" || (tls == "on" && map.cluster_of(self.me) != map.cluster_of(r)));
            }
        }
        self.driver.follow_wan(following_wan(&self.config, map), debug_channel(&self.config, "pace"));
        let budget = self.config.duration("GRIDMPI_WAN_OUTAGE_BUDGET").filter(|d| !d.is_zero());
        self.outage = crate::outage::OutageWatch::new(self.me, map, budget);
        Ok(old)
    }

    /// Our job's keys, and its public id on the wire.
    fn keys(&self) -> Keys {
        Keys { job: self.job_tag, secret: self.secret }
    }

    /// Who `pid` is: its world and its rank there.
    pub fn who(&self, pid: Pid) -> Who {
        match pid.checked_sub(self.size) {
            Some(i) => self.foreign[i as usize],
            None => Who { world: self.keys().world(), rank: pid },
        }
    }

    /// The keys of our link with `pid`'s world (our job's for our own).
    pub fn link_keys(&self, pid: Pid) -> Keys {
        match (pid >= self.size, self.driver.tcp()) {
            (true, Some(t)) => t.keys_of(pid),
            _ => self.keys(),
        }
    }

    /// Our pid for the process `who`, if it is ours or a peer.
    pub fn pid_of(&self, who: Who) -> Option<Pid> {
        if who.world == self.keys().world() {
            return (who.rank < self.size).then_some(who.rank);
        }
        self.foreign.iter().position(|&w| w == who).map(|i| self.size + i as u32)
    }

    /// The processes `pids`, as a join describes them to another world.
    pub fn describe(&mut self, pids: &[Pid]) -> Result<Vec<Remote>, String> {
        self.ensure_tcp()?;
        Ok(pids.iter().map(|&p| Remote { who: self.who(p), card: self.cards[p as usize].clone() }).collect())
    }

    /// A world of one has no TCP transport until it joins another: make it.
    fn ensure_tcp(&mut self) -> Result<(), String> {
        if self.driver.tcp_mut().is_some() {
            return Ok(());
        }
        let mine = &mut self.cards[self.me as usize];
        let mut t = bootstrap::listen(&self.config, self.me, self.size, &mine.addrs)?;
        bootstrap::configure(&mut t, &self.config, self.job_tag, self.secret);
        mine.port = t.port();
        self.driver.install_tcp(t)
    }

    /// Make the processes of `remote` our peers (those that are not yet),
    /// reached over TCP and proving `keys` (the keys of our pair of
    /// worlds); returns their pids, in order. Every member of a join
    /// (MPI_Comm_accept/connect, spawn, join) calls it before any of them
    /// talks to the other side.
    pub fn join_world(&mut self, remote: &[Remote], keys: &Keys) -> Result<Vec<Pid>, String> {
        self.ensure_tcp()?;
        let mut pids = Vec::with_capacity(remote.len());
        for r in remote {
            if let Some(pid) = self.pid_of(r.who) {
                pids.push(pid);
                continue;
            }
            let pid = self.engine.add_peer(tcp_params(&self.config));
            debug_assert_eq!(pid, self.size + self.foreign.len() as u32);
            self.foreign.push(r.who);
            self.cards.push(r.card.clone());
            let mate = (0..pid).find(|&p| self.cards[p as usize].host_key == r.card.host_key);
            self.map.add_pid(&r.card.cluster, mate);
            let addrs = bootstrap::peer_addrs(&self.cards, self.me, pid);
            let tcp = self.driver.tcp_mut().expect("made above");
            tcp.add_peer(pid, r.who, keys.clone(), addrs);
            tcp.set_resumable(pid, true);
            let cluster = if self.map.clusters() > 1 { self.map.names[self.map.cluster_of(pid) as usize].clone() } else { String::new() };
            let who = format!("rank {} of job {:016x}", r.who.rank, r.who.world);
            self.driver.add_peer(PeerName { who, host: r.card.host.clone(), os_pid: r.card.os_pid, cluster });
            pids.push(pid);
        }
        Ok(pids)
    }

    /// Whether `pid` runs on this host.
    pub fn is_local(&self, pid: Pid) -> bool {
        self.local.binary_search(&pid).is_ok()
    }

    /// Ranks on this host, in order (for MPI_COMM_TYPE_SHARED).
    pub fn local_pids(&self) -> Vec<Pid> {
        self.local.clone()
    }

    /// Move everything forward without blocking. Returns whether anything
    /// happened (a frame moved or a request completed).
    pub fn progress(&mut self) -> Result<bool, Fatal> {
        self.driver.progress(&mut self.engine, &mut self.tracer, self.copy_inline)
    }

    /// Send a small message to a process on this host at once, without a
    /// request (see [`Engine::eager_now`]); the args come back when it
    /// must take the ordinary way.
    pub fn send_eager(&mut self, a: gridmpi_engine::SendArgs) -> Result<(), gridmpi_engine::SendArgs> {
        if !self.driver.on_shm(a.dest) {
            return Err(a);
        }
        let t = self.engine.eager_now(a)?;
        self.driver.send_now(t, &mut self.engine);
        Ok(())
    }

    /// [`Runtime::send_eager`] for a message of contiguous bytes: with no
    /// datatype to describe it, the frame is written straight from them.
    pub fn send_eager_bytes(&mut self, dest: Pid, env: gridmpi_wire::Envelope, body: &[u8]) -> bool {
        if !self.driver.on_shm(dest) {
            return false;
        }
        let Some(h) = self.engine.eager_header(dest, env, body.len() as u64) else { return false };
        self.driver.send_bytes_now(dest, h, body, &mut self.engine);
        true
    }

    /// Whether a blocking receive from `peer` may look for its message in
    /// `peer`'s ring itself (see [`Driver::lone_road`]).
    pub fn lone_road(&self, peer: Pid) -> bool {
        self.driver.lone_road(peer, &self.engine)
    }

    /// A probe of whether a frame from `peer` waits in its ring (see
    /// [`Driver::lone_probe`]).
    pub fn lone_probe(&self, peer: Pid) -> Option<gridmpi_transport::shm::ring::SlotProbe> {
        self.driver.lone_probe(peer)
    }

    /// A blocking receive's look at `peer`'s ring (see
    /// [`Driver::take_lone_eager`]): `want` is its (context, source rank,
    /// tag), `dst` its contiguous buffer of `room` bytes.
    pub fn take_lone_eager(&mut self, peer: Pid, want: (u32, i32, Option<i32>), dst: *mut u8, room: u64) -> crate::driver::Lone {
        self.driver.take_lone_eager(&mut self.engine, peer, want, dst, room)
    }

    /// The fd to sleep on without holding the lock.
    pub fn sleep_fd(&self) -> RawFd {
        self.driver.sleep_fd()
    }

    /// Wake threads sleeping on [`Runtime::sleep_fd`].
    pub fn wake_sleepers(&self) {
        self.driver.wake();
    }

    /// There is copying to take on (see [`Driver::claim_copy`]).
    pub fn busy(&self) -> bool {
        self.driver.busy()
    }

    /// Changes when there is new copying to take on.
    pub fn copies_queued(&self) -> u64 {
        self.driver.reads_queued()
    }

    /// A piece of copying for a blocked thread to do without the lock.
    /// See [`crate::driver::Driver::room_probe`].
    pub fn room_probe(&self) -> Option<gridmpi_transport::shm::ring::RoomProbe> {
        self.driver.room_probe()
    }

    pub fn claim_copy(&mut self) -> Option<crate::driver::CopyPiece> {
        self.driver.claim_copy()
    }

    /// Report a piece from [`Runtime::claim_copy`].
    pub fn finish_copy(&mut self, piece: crate::driver::CopyPiece, ok: bool) {
        self.driver.finish_copy(piece, ok, &mut self.engine);
    }

    /// Before sleeping: false if the caller must not sleep.
    pub fn prepare_sleep(&mut self) -> bool {
        self.driver.prepare_sleep(&self.engine)
    }

    pub fn after_sleep(&mut self) {
        self.driver.after_sleep(&self.engine);
    }

    /// Before a blocked call sleeps: say so if a WAN link looks down. To
    /// gridmpirun, which says it once for the job; else on stderr.
    pub fn check_outage(&mut self) {
        for n in self.outage.check(&self.driver) {
            let from = self.outage.my_cluster().to_string();
            if self.pmi.report_outage(&from, &n.cluster, n.state.word(), n.secs, n.budget).is_err() {
                eprintln!("{}", n.line(self.me, &self.cards[self.me as usize].host));
            }
        }
    }

    /// At every blocked call while a link is reported down, so its return
    /// is told even when traffic never lets the rank sleep (costs nothing
    /// otherwise).
    pub fn check_outage_if_down(&mut self) {
        if self.outage.any_down() {
            self.check_outage();
        }
    }

    /// How long a sleeper may sleep without being woken.
    pub fn sleep_timeout(&self) -> Option<Duration> {
        Some(self.driver.sleep_timeout(&self.engine).unwrap_or(Duration::from_millis(500)))
    }

    /// Orderly shutdown of the transports (before the final barrier).
    pub fn shutdown(&mut self) {
        self.driver.shutdown();
    }

    pub fn close(&mut self) {
        self.driver.close(&mut self.engine, &mut self.tracer);
        if let Some(tr) = self.tracer.as_mut() {
            tr.tick(false);
            tr.finish();
        }
    }

    /// The driver (for MPI_T's performance variables).
    pub fn driver(&self) -> &Driver {
        &self.driver
    }

    /// Pending outbound work (frames not yet handed to the kernel or a ring).
    /// Process `pid` failed (ft.rs): the engine fails what needs it, the
    /// transports drop its link.
    pub fn proc_failed(&mut self, pid: Pid) {
        self.driver.forget_peer(pid);
        self.engine.handle_proc_failed(pid);
    }

    /// Peers whose connection failed in a fault-tolerant job, since the
    /// last call.
    pub fn take_suspects(&mut self) -> Vec<Pid> {
        std::mem::take(&mut self.driver.suspects)
    }

    pub fn outbound_pending(&self) -> bool {
        self.driver.outbound_pending(&self.engine)
    }
}

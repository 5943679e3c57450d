//! Bootstrap: what a process learns before it can communicate.
//!
//! Through the process manager (PMI) every process publishes a [`Card`]
//! (host, addresses, listening port, CPUs, the cluster the launcher named)
//! and reads everyone else's; rank 0 draws the job secret that
//! authenticates every TCP connection; the cluster map is built from a
//! topology file, the launcher's cluster names, or measured round-trip
//! times; and the socket options of WAN connections follow from it.

use crate::clustermap::{self, ClusterMap, MapSource, TopologyFile};
use gridmpi_config::Config;
use gridmpi_engine::Pid;
use gridmpi_pmi::Pmi;
use gridmpi_transport::{auth, sys, tcp};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

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
    /// The shared-memory name prefix its launcher gave (GRIDMPI_SHM_PREFIX;
    /// empty if none). Ranks of one host may come from different launchers
    /// (groups of a rendezvous): they all use the first local rank's.
    pub shm_prefix: String,
    /// The relay through which other clusters reach this rank
    /// (GRIDMPI_RELAY, resolved; None: directly).
    pub relay: Option<SocketAddrV4>,
    /// The IP network of the host's first published address, as
    /// "ADDRESS/PREFIX" (empty if unknown): a hint of which hosts share a
    /// site when their round-trip times do not tell (discovery).
    pub subnet: String,
}

impl Card {
    pub fn encode(&self) -> String {
        let addrs: Vec<String> = self.addrs.iter().map(|a| a.to_string()).collect();
        let cpus: Vec<String> = self.cpus.iter().map(|w| format!("{w:x}")).collect();
        format!(
            "v1;{};{};{};{};{};{};{};{};{};{}",
            self.host,
            self.host_key,
            self.os_pid,
            self.port,
            addrs.join(","),
            self.cluster,
            cpus.join("."),
            self.shm_prefix,
            self.relay.map_or(String::new(), |r| r.to_string()),
            self.subnet
        )
    }

    pub fn decode(s: &str) -> Option<Card> {
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
        let shm_prefix = it.next().unwrap_or("").to_string();
        let relay = match it.next().unwrap_or("") {
            "" => None,
            r => Some(r.parse().ok()?),
        };
        let subnet = it.next().unwrap_or("").to_string();
        Some(Card { host, host_key, os_pid, port, addrs, cluster, cpus, shm_prefix, relay, subnet })
    }
}

/// Everything bootstrap learned.
pub struct Boot {
    pub pmi: Pmi,
    pub me: Pid,
    pub size: u32,
    pub secret: [u8; 32],
    /// Names this job's shared objects (a hash of the PMI job name and secret).
    pub job_tag: u64,
    pub cards: Vec<Card>,
    pub map: ClusterMap,
    /// Ranks on this host, in rank order.
    pub local: Vec<Pid>,
    /// More ranks run on this host than they have CPUs between them.
    pub oversubscribed: bool,
    /// The TCP transport, listening (None for a single process).
    pub tcp: Option<tcp::Tcp>,
    /// Proves our requests to relays, when some rank has one.
    pub relay_key: Option<[u8; 32]>,
}

/// Meet the other processes of the job.
pub fn bootstrap(config: &Config) -> Result<Boot, String> {
    let mut pmi = Pmi::init().map_err(|e| format!("cannot reach the process manager (PMI): {e}"))?;
    let relay = match config.text("GRIDMPI_RELAY") {
        "" => None,
        r => Some(*gridmpi_pmi::resolve_v4(r).map_err(|e| format!("GRIDMPI_RELAY: {e}"))?.first().expect("resolve_v4 gives one or more")),
    };
    if !config.text("GRIDMPI_RENDEZVOUS").is_empty() {
        pmi = join(config, pmi, relay)?;
    }
    let me = pmi.rank();
    let size = pmi.size();

    // The job secret authenticates every TCP connection: from rank 0, or
    // derived from the rendezvous secret (which never crosses the network).
    let mut secret = [0u8; 32];
    let joined = pmi.joined().cloned();
    if let Some(j) = &joined {
        secret = j.tcp_secret;
    } else if me == 0 {
        sys::random_bytes(&mut secret).map_err(|e| format!("getrandom: {e}"))?;
        pmi.put("secret", &auth::hex(&secret)).map_err(|e| format!("PMI put: {e}"))?;
    }
    let addrs = published_addrs(config.text("GRIDMPI_TCP_ADDR"))?;
    // Listen before publishing the card, which carries the port.
    let mut tcp = if size > 1 { Some(listen(config, me, size, &addrs)?) } else { None };
    let subnet = subnet_of(&addrs);
    let card = Card {
        host: sys::hostname(),
        host_key: sys::host_key(),
        os_pid: sys::getpid(),
        port: tcp.as_ref().map_or(0, |t| t.port()),
        addrs,
        // A rendezvous group is a site unless the launcher named clusters.
        cluster: match (config.text("GRIDMPI_CLUSTER"), &joined) {
            ("", Some(j)) => j.group.name.clone(),
            (name, _) => name.replace(';', "_"),
        },
        cpus: sys::affinity_mask(),
        shm_prefix: config.text("GRIDMPI_SHM_PREFIX").replace(';', "_"),
        relay,
        subnet,
    };
    let mut cards = vec![card.clone(); size as usize];
    if size > 1 {
        cards = exchange_cards(&mut pmi, me, size, &card)?;
        if joined.is_none() {
            let s = get_when_there(&mut pmi, 0, "secret")?;
            secret = auth::unhex(&s).ok_or("the job secret from rank 0 is malformed")?;
        }
    }
    let job_tag = {
        let h = auth::sha256(format!("{}|{}", pmi.kvs_name(), auth::hex(&secret)).as_bytes());
        u64::from_le_bytes(h[..8].try_into().expect("8 bytes"))
    };
    if let Some(t) = tcp.as_mut() {
        configure(t, config, job_tag, secret);
    }
    let map = build_map(config, &mut pmi, me, &cards, tcp.as_ref().map(|t| t.port()))?;
    let local: Vec<Pid> = (0..size).filter(|&r| cards[r as usize].host_key == card.host_key).collect();
    let cpus = host_cpus(local.iter().map(|&p| &cards[p as usize].cpus));
    let oversubscribed = local.len() > cpus;
    let relay_key = if cards.iter().any(|c| c.relay.is_some()) {
        match &joined {
            Some(j) => Some(j.relay_key),
            None => Some(relay_key_from_file(config)?),
        }
    } else {
        None
    };
    Ok(Boot { pmi, me, size, secret, job_tag, cards, map, local, oversubscribed, tcp, relay_key })
}

/// Publish our card, and read every rank's (ours included, as given).
pub fn exchange_cards(pmi: &mut Pmi, me: Pid, size: u32, card: &Card) -> Result<Vec<Card>, String> {
    let mut cards = vec![card.clone(); size as usize];
    pmi.put("card", &card.encode()).map_err(|e| format!("PMI put: {e}"))?;
    pmi.fence().map_err(|e| format!("PMI fence: {e}"))?;
    for r in (0..size).filter(|&r| r != me) {
        let v = get_when_there(pmi, r, "card")?;
        cards[r as usize] = Card::decode(&v).ok_or_else(|| format!("rank {r} published a malformed address card {v:?}"))?;
    }
    Ok(cards)
}

/// The addresses a rank publishes (GRIDMPI_TCP_ADDR: a list, or every
/// address of the host and loopback).
pub fn published_addrs(setting: &str) -> Result<Vec<Ipv4Addr>, String> {
    match setting {
        "auto" | "" => {
            let mut a = local_ipv4_addrs();
            a.push(Ipv4Addr::LOCALHOST);
            Ok(a)
        }
        list => list
            .split(',')
            .map(|s| s.trim().parse::<Ipv4Addr>().map_err(|_| format!("GRIDMPI_TCP_ADDR: {s:?} is not an IPv4 address")))
            .collect(),
    }
}

/// Where to listen: on the loopback address only when that is all we
/// publish (a single-host job under gridmpirun: nothing outside the host
/// can call). A published address may not be ours (a NAT's), so otherwise
/// on every address.
pub fn bind_address(addrs: &[Ipv4Addr]) -> Ipv4Addr {
    match addrs {
        [one] if one.is_loopback() => *one,
        _ => Ipv4Addr::UNSPECIFIED,
    }
}

/// The TCP transport of rank `me` of `size`, listening (see [`bind_address`]).
pub fn listen(config: &Config, me: Pid, size: u32, addrs: &[Ipv4Addr]) -> Result<tcp::Tcp, String> {
    let bind = bind_address(addrs);
    let ports = port_range(config.text("GRIDMPI_TCP_PORTS"))?;
    tcp::Tcp::with_ports(me, size as usize, 0, [0; 32], bind, ports).map_err(|e| format!("cannot listen for TCP connections on {bind}: {e}"))
}

/// Key the transport once the secret is known, and apply the settings.
pub fn configure(t: &mut tcp::Tcp, config: &Config, job_tag: u64, secret: [u8; 32]) {
    t.set_auth(job_tag, secret);
    t.sndbuf = config.size("GRIDMPI_TCP_SNDBUF").map(|v| v as usize);
    t.connect_timeout = config.get_duration("GRIDMPI_TCP_CONNECT_TIMEOUT");
    // A broken connection may take as long as a WAN outage to re-make.
    if let Some(budget) = config.duration("GRIDMPI_WAN_OUTAGE_BUDGET").filter(|d| !d.is_zero()) {
        t.resume_budget = budget;
    }
    t.rcvbuf = config.size("GRIDMPI_TCP_RCVBUF").map(|v| v as usize);
}

/// Join the whole job at the rendezvous server (GRIDMPI_RENDEZVOUS): the
/// launcher's ranks are one group of it. See gridmpi_pmi::rendezvous.
fn join(config: &Config, site: Pmi, relay: Option<SocketAddrV4>) -> Result<Pmi, String> {
    let secret = job_secret_file(config, "GRIDMPI_RENDEZVOUS")?;
    let name = config.text("GRIDMPI_CLUSTER");
    let patience = config.get_duration("GRIDMPI_RENDEZVOUS_TIMEOUT");
    Pmi::join(site, config.text("GRIDMPI_RENDEZVOUS"), &secret, name, patience, relay).map_err(|e| e.to_string())
}

/// The secret in GRIDMPI_JOB_SECRET_FILE (default ~/.gridmpi/job-secret),
/// needed by `what`.
fn job_secret_file(config: &Config, what: &str) -> Result<[u8; 32], String> {
    use gridmpi_pmi::rendezvous;
    let path = match config.text("GRIDMPI_JOB_SECRET_FILE") {
        "" => rendezvous::default_secret_file(),
        p => p.into(),
    };
    rendezvous::read_secret_file(&path).map_err(|e| format!("{what}: {e} (GRIDMPI_JOB_SECRET_FILE)"))
}

/// Relays of a job formed without a rendezvous check the key derived from
/// the secret file too (it is what the relay was started with).
fn relay_key_from_file(config: &Config) -> Result<[u8; 32], String> {
    Ok(gridmpi_transport::relay_key(&job_secret_file(config, "GRIDMPI_RELAY")?))
}

/// `GRIDMPI_TCP_PORTS`: `LOW-HIGH` or one port; empty: any port.
pub fn port_range(text: &str) -> Result<Option<(u16, u16)>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let bad = || format!("GRIDMPI_TCP_PORTS: {text:?}: expected a port or a range LOW-HIGH of ports from 1 to 65535");
    let (lo, hi) = text.split_once('-').unwrap_or((text, text));
    let lo: u16 = lo.trim().parse().map_err(|_| bad())?;
    let hi: u16 = hi.trim().parse().map_err(|_| bad())?;
    if lo == 0 || hi < lo {
        return Err(bad());
    }
    Ok(Some((lo, hi)))
}

/// The addresses to try for `peer`'s listener from this host: loopback
/// first when on the same host (forced onto TCP), never otherwise.
pub fn peer_addrs(cards: &[Card], me: Pid, peer: Pid) -> Vec<SocketAddrV4> {
    let c = &cards[peer as usize];
    let mut addrs: Vec<SocketAddrV4> = c.addrs.iter().map(|a| SocketAddrV4::new(*a, c.port)).collect();
    if c.host_key == cards[me as usize].host_key {
        addrs.sort_by_key(|a| !a.ip().is_loopback());
    } else {
        addrs.retain(|a| !a.ip().is_loopback());
    }
    addrs
}

/// The way to `peer` of another cluster through relays: out through ours,
/// in through theirs (either may be missing; one relay serving both is
/// passed once). None: connect directly.
pub fn relay_way(cards: &[Card], me: Pid, peer: Pid, key: Option<[u8; 32]>) -> Option<tcp::RelayWay> {
    let hops: Vec<SocketAddrV4> = match (cards[me as usize].relay, cards[peer as usize].relay) {
        (None, None) => return None,
        (Some(a), Some(b)) if a != b => vec![a, b],
        (Some(a), _) | (None, Some(a)) => vec![a],
    };
    Some(tcp::RelayWay { first: hops[0], via: hops[1..].to_vec(), key: key? })
}

/// Ranks forked by one launcher start on its CPU, and the kernel spreads
/// busy ones only after tens of milliseconds: until then two ranks that
/// poll for each other's messages share a CPU (80 us per message instead
/// of 0.4 on this machine, the first 15 ms of a job). So where every local
/// rank may use the same CPUs, at least one each, each moves to its own
/// (by its index among the local ranks) and stays unbound
/// ([`sys::move_to_cpu`]): threads the program starts may use them all.
/// Called last in the start-up: a rank woken from a read of the
/// launcher's socket is moved next to the launcher again.
pub fn spread(config: &Config, local: &[Pid], me: Pid, cards: &[Card]) {
    let mask = &cards[me as usize].cpus;
    let cpus: usize = mask.iter().map(|w| w.count_ones() as usize).sum();
    let same = local.iter().all(|&p| &cards[p as usize].cpus == mask);
    if !config.get_bool("GRIDMPI_SPREAD") || local.len() < 2 || !same || cpus < local.len() {
        return;
    }
    if let Some(index) = local.iter().position(|&p| p == me) {
        sys::move_to_cpu(mask, index);
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

/// "NETWORK/PREFIX" of the first of `addrs` that is one of this host's
/// (not loopback), from its interface's netmask; empty if none is.
pub fn subnet_of(addrs: &[Ipv4Addr]) -> String {
    let mut found = String::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we free below; we only read it.
    unsafe {
        if libc::getifaddrs(&mut ifap) != 0 {
            return found;
        }
        'wanted: for want in addrs.iter().filter(|a| !a.is_loopback()) {
            let mut p = ifap;
            while !p.is_null() {
                let ifa = &*p;
                p = ifa.ifa_next;
                if ifa.ifa_addr.is_null() || ifa.ifa_netmask.is_null() || (*ifa.ifa_addr).sa_family as i32 != libc::AF_INET {
                    continue;
                }
                let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                let mask = &*(ifa.ifa_netmask as *const libc::sockaddr_in);
                let (a, m) = (u32::from_be(sin.sin_addr.s_addr), u32::from_be(mask.sin_addr.s_addr));
                if Ipv4Addr::from(a) == *want {
                    found = format!("{}/{}", Ipv4Addr::from(a & m), m.count_ones());
                    break 'wanted;
                }
            }
        }
        libc::freeifaddrs(ifap);
    }
    found
}

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

/// The cluster map from the topology file, the launcher's cluster names, or
/// discovery (see clustermap.rs).
pub fn build_map(config: &Config, pmi: &mut Pmi, me: Pid, cards: &[Card], port: Option<u16>) -> Result<ClusterMap, String> {
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
    let bw = match config.rate("GRIDMPI_WAN_BANDWIDTH") {
        Some(0) => return Err("GRIDMPI_WAN_BANDWIDTH: \"0\": a WAN's bandwidth must be above 0 (leave it empty when unknown)".into()),
        bw => bw,
    };
    let rtt = config.duration("GRIDMPI_WAN_DELAY").map(|one_way| one_way * 2);
    map.set_uniform_wan(bw, rtt);
    crate::wan_probe::measure(config, pmi, me, cards, &mut map)?;
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
    let leader_of = |k: &str| cards.iter().position(|c| c.host_key == k).expect("a host of the job") as Pid;
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
    let threshold = config.get_duration("GRIDMPI_CLUSTER_RTT");
    let mut host_cluster = clustermap::cluster_hosts(&rtt, threshold);
    // At near-zero delay the RTTs do not separate sites; a bottleneck does.
    if host_cluster.iter().all(|&c| c == 0) {
        if let Some(split) = crate::wan_probe::split_by_bottleneck(config, pmi, me, cards, &leaders)? {
            host_cluster = split;
        }
    }
    let names: Vec<String> = cards
        .iter()
        .map(|c| format!("cluster{}", host_cluster[keys.iter().position(|k| *k == c.host_key).expect("a known host")]))
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
    (0..3)
        .filter_map(|_| {
            let start = std::time::Instant::now();
            let s = std::net::TcpStream::connect_timeout(&addr.into(), Duration::from_millis(500)).ok()?;
            let t = start.elapsed();
            drop(s);
            Some(t)
        })
        .min()
}

/// Socket options for the connection to `peer`, when it crosses a WAN.
pub fn wan_tuning(config: &Config, map: &ClusterMap, me: Pid, peer: Pid) -> Option<tcp::Tuning> {
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
    // The outage budget is the kernel's deadline for unacknowledged data:
    // with the short RTO_MAX above, the default retry count would end the
    // connection (and the job) 15 retries, about 15 s, into an outage.
    let user_timeout_ms = match config.micros("GRIDMPI_WAN_OUTAGE_BUDGET") {
        Some(0) => None,
        Some(us) => Some((us / 1000).clamp(1, u32::MAX as u64) as u32),
        None => Some(900_000),
    };
    let notsent_lowat = match config.size("GRIDMPI_TCP_NOTSENT_LOWAT") {
        Some(v) => Some(v.min(u32::MAX as u64) as u32),
        None => Some(bdp.map_or(128 * 1024, |b| (b / 2).max(64 * 1024)).min(u32::MAX as u64) as u32),
    };
    let buf = match config.size("GRIDMPI_TCP_WAN_BUFFER") {
        Some(v) => Some(v as usize),
        None => bdp.map(|b| (4 * b).max(256 * 1024) as usize),
    };
    Some(tcp::Tuning { cc, rto_min_us, rto_max_ms, user_timeout_ms, notsent_lowat, sndbuf: buf, rcvbuf: buf })
}

/// Wait until every rank in `ranks` has reached this point, through PMI.
/// A fence alone is not enough: some process managers (MPICH's hydra with
/// PMI-2) answer a fence at once. So each rank puts a key, fences, and then
/// reads the others' keys, retrying while a key is not there yet.
pub fn barrier(pmi: &mut Pmi, what: &str, ranks: &[Pid]) -> Result<(), String> {
    pmi.put(what, "1").map_err(|e| format!("PMI put: {e}"))?;
    pmi.fence().map_err(|e| format!("PMI fence ({what}): {e}"))?;
    for &r in ranks {
        get_when_there(pmi, r, what)?;
    }
    Ok(())
}

/// `pmi.get`, retrying while the key has not been put yet (see [`barrier`]).
pub(crate) fn get_when_there(pmi: &mut Pmi, rank: Pid, key: &str) -> Result<String, String> {
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

#[cfg(test)]
mod tests {
    use super::port_range;

    #[test]
    fn port_ranges() {
        assert_eq!(port_range(""), Ok(None));
        assert_eq!(port_range("40000-40100"), Ok(Some((40000, 40100))));
        assert_eq!(port_range(" 5000 "), Ok(Some((5000, 5000))));
        for bad in ["0-10", "20-10", "x", "1-70000", "-5"] {
            assert!(port_range(bad).unwrap_err().contains("GRIDMPI_TCP_PORTS"), "{bad}");
        }
    }
}

//! Measuring the WAN's bandwidth at start-up, so that collectives are
//! paced with no topology file and no settings (issue 17).
//!
//! Pacing a collective's WAN phase needs the bottleneck bandwidth between
//! clusters, and a wrong one is worse than none (paced 10x too fast, the
//! bursts overflow the bottleneck's queue as if unpaced; 10x too slow, the
//! WAN idles). So one rank per cluster (its lowest, the leader) measures
//! it during MPI_Init, whether or not a topology file or
//! `GRIDMPI_WAN_BANDWIDTH` gave it: for each ordered pair of clusters in turn, the sending
//! cluster's leader writes to the receiving one's for `GRIDMPI_WAN_PROBE`
//! (a duration; 0 turns this off) over four TCP connections of its own
//! (one alone does not fill a long path with a shallow queue), and
//! reads the kernel's delivery-rate samples as it goes (TCP_INFO
//! `tcpi_delivery_rate`: bytes acknowledged over the time they took, the
//! estimate BBR builds on). The first half of the probe is dropped (slow
//! start: the windows have not reached the path's capacity yet); the four
//! connections' samples taken at one moment are added up, and a high
//! percentile of those sums is the link's bandwidth (near BBR's windowed
//! maximum: samples taken while a window recovers from a loss, or while
//! the host is busy, fall below the capacity; few rise above it, by
//! noise), counted in packets as a link's rate is (payload rate x PMTU /
//! MSS). [`probe`] has the measurements behind these choices. Pairs take
//! turns (a PMI fence between two), so no probe shares a bottleneck with
//! another.
//!
//! Every rank reads the leaders' results through PMI and puts them in its
//! cluster map, so all ranks build the same collective schedules from
//! them. A link nobody gave takes the measurement; a given one that the
//! measurement contradicts by more than 1.5x either way is replaced, and
//! rank 0 says so. A probe that cannot connect or measures nothing leaves the link
//! unknown (unpaced, as before); `GRIDMPI_DEBUG=conn` tells what happened.
//!
//! The probe connections carry no MPI data and are not authenticated: the
//! receiving leader reads and drops whatever comes, from at most a few
//! connections, for at most the probe's time plus a margin, so a stranger
//! who connects can spoil a measurement (the link then stays unknown) but
//! cannot stall or join the job.

use crate::bootstrap::{get_when_there, Card};
use crate::clustermap::ClusterMap;
use gridmpi_config::Config;
use gridmpi_pmi::Pmi;
use gridmpi_wire::Pid;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The probe writes in pieces of this size (a blocking write: the kernel
/// takes what its buffer holds and the next write waits for ACKs), and
/// reads a delivery-rate sample after each.
const PIECE: usize = 16 * 1024;
/// A probe stops early after this many bytes (a fast link has been
/// measured long before).
const MAX_BYTES: u64 = 256 << 20;
/// Connections a probe of a WAN link writes over at once (see [`probe`]);
/// the probes that look for a bottleneck between networks use one.
const WAN_STREAMS: usize = 4;
/// How long the receiver keeps reading after the last probe was due.
const DRAIN_MARGIN: Duration = Duration::from_secs(2);

/// Measure the bandwidth of the map's inter-cluster links (see the
/// module's doc): fill in those no file or setting gave, and replace a
/// given one the measurement contradicts (by more than [`CONTRADICTS`]).
/// Every rank of the job calls this at the same point of MPI_Init.
pub fn measure(config: &Config, pmi: &mut Pmi, me: Pid, cards: &[Card], map: &mut ClusterMap) -> Result<(), String> {
    let time = config.duration("GRIDMPI_WAN_PROBE").unwrap_or_default();
    let k = map.clusters();
    // Through relays or from behind NAT the leaders may not reach each
    // other directly; those jobs keep what they were told.
    let direct = cards.iter().all(|c| c.relay.is_none());
    if time.is_zero() || k < 2 || !direct || cards.len() < 2 {
        return Ok(());
    }
    let debug = crate::runtime::debug_channel(config, "conn");
    let leaders: Vec<Pid> = (0..k).map(|c| map.of_pid.iter().position(|&x| x as usize == c).expect("a cluster has a rank") as Pid).collect();
    // Clusters named on one host (tests, demos) have no WAN between them
    // to measure.
    let apart = |a: usize, b: usize| cards[leaders[a] as usize].host_key != cards[leaders[b] as usize].host_key;
    if !(0..k).any(|a| (0..k).any(|b| apart(a, b))) {
        return Ok(());
    }
    let pairs: Vec<(Pid, Pid)> =
        (0..k).flat_map(|a| (0..k).filter(move |&b| b != a).map(move |b| (a, b))).filter(|&(a, b)| apart(a, b)).map(|(a, b)| (leaders[a], leaders[b])).collect();
    let results = probe_pairs(config, pmi, me, cards, &pairs, time, WAN_STREAMS, "wan-probe")?;
    let cluster_of = |p: Pid| map.of_pid[p as usize] as usize;
    for (&(from, to), bps) in pairs.iter().zip(results) {
        let Some(bps) = bps else { continue };
        let (a, b) = (cluster_of(from), cluster_of(to));
        let told = map.links[a][b].bandwidth_bps;
        let mbit = |x: u64| x as f64 / 1e6;
        match told {
            Some(t) if !contradicts(t, bps) => {}
            Some(t) => {
                if me == 0 {
                    eprintln!(
                        "gridmpi: the WAN from {} to {} was given as {:.1} Mbit/s (topology file or GRIDMPI_WAN_BANDWIDTH), measured {:.1} Mbit/s: \
                         pacing by the measurement (GRIDMPI_WAN_PROBE=0 keeps what was given)",
                        map.names[a], map.names[b], mbit(t), mbit(bps)
                    );
                }
                map.links[a][b].bandwidth_bps = Some(bps);
            }
            None => map.links[a][b].bandwidth_bps = Some(bps),
        }
        if debug && me == 0 {
            eprintln!("gridmpi: WAN probe: {} -> {}: {:.1} Mbit/s", map.names[a], map.names[b], mbit(bps));
        }
    }
    Ok(())
}

/// Sites the round-trip times cannot tell apart (a WAN of near-zero
/// delay): when discovery found one cluster but the hosts are on several
/// IP networks, measure the bandwidth inside each network (between two of
/// its hosts) and between networks (between their first hosts), and keep
/// networks apart whose link carries less than a third of what the slower
/// inside does: a bottleneck between them, as a WAN is. `hosts` are the
/// first rank of every host, in the same order everywhere; returns each
/// host's cluster number, or None when nothing is split. Every rank calls
/// this alike.
pub fn split_by_bottleneck(config: &Config, pmi: &mut Pmi, me: Pid, cards: &[Card], hosts: &[Pid]) -> Result<Option<Vec<u32>>, String> {
    let time = config.duration("GRIDMPI_WAN_PROBE").unwrap_or_default() / 3;
    let nets: Vec<&str> = hosts.iter().map(|&h| cards[h as usize].subnet.as_str()).collect();
    let (net_of, distinct) = crate::clustermap::first_appearance(nets.iter().copied());
    if time.is_zero() || distinct.len() < 2 || distinct.contains(&"") || cards.iter().any(|c| c.relay.is_some()) {
        return Ok(None);
    }
    let time = time.max(Duration::from_millis(50));
    let members = |g: u32| hosts.iter().zip(&net_of).filter(|(_, &n)| n == g).map(|(&h, _)| h).collect::<Vec<Pid>>();
    let groups: Vec<Vec<Pid>> = (0..distinct.len() as u32).map(members).collect();
    let mut pairs = Vec::new();
    for g in &groups {
        if g.len() > 1 {
            pairs.push((g[0], g[1]));
        }
    }
    let intra_pairs = pairs.len();
    for a in 0..groups.len() {
        for b in a + 1..groups.len() {
            pairs.push((groups[a][0], groups[b][0]));
        }
    }
    let got = probe_pairs(config, pmi, me, cards, &pairs, time, 1, "site-probe")?;
    let inside: Vec<Option<u64>> = groups
        .iter()
        .map(|g| pairs[..intra_pairs].iter().position(|p| p.0 == g[0]).and_then(|i| got[i]))
        .collect();
    let mut label: Vec<usize> = (0..groups.len()).collect();
    let mut k = intra_pairs;
    for a in 0..groups.len() {
        for b in a + 1..groups.len() {
            let between = got[k];
            k += 1;
            let slower_inside = match (inside[a], inside[b]) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            };
            // No evidence of a bottleneck (a probe failed, or no network
            // has two hosts to compare with): the same site.
            let apart = matches!((between, slower_inside), (Some(w), Some(l)) if w.saturating_mul(3) < l);
            if !apart {
                let (x, y) = (label[a], label[b]);
                for l in label.iter_mut().filter(|l| **l == y) {
                    *l = x;
                }
            }
        }
    }
    if crate::runtime::debug_channel(config, "conn") && me == 0 {
        eprintln!("gridmpi: discovery: networks {distinct:?}, bandwidth inside {inside:?}, probes {got:?}, sites {label:?}");
    }
    let (sites, ids) = crate::clustermap::first_appearance(net_of.iter().map(|&g| label[g as usize]));
    Ok((ids.len() > 1).then_some(sites))
}

/// Measure the bandwidth from each `pairs[i].0` to `pairs[i].1` (ranks on
/// different hosts), one pair at a time, writing for `time` each. Every
/// rank of the job calls this alike (it fences through PMI); all get every
/// result (None: not measured). `what` names the PMI keys (one set per
/// use in a job).
pub fn probe_pairs(config: &Config, pmi: &mut Pmi, me: Pid, cards: &[Card], pairs: &[(Pid, Pid)], time: Duration, streams: usize, what: &str) -> Result<Vec<Option<u64>>, String> {
    let debug = crate::runtime::debug_channel(config, "conn");
    let receiving = pairs.iter().filter(|p| p.1 == me).count();
    // The receiving side: a listener and a thread that drains probes.
    let stop = Arc::new(AtomicBool::new(false));
    let mut drain = None;
    if receiving > 0 {
        match listen(config, cards[me as usize].addrs.as_slice()) {
            Ok(l) => {
                let port = l.local_addr().map(|a| a.port()).unwrap_or(0);
                pmi.put(&format!("{what}-port"), &port.to_string()).map_err(|e| format!("PMI put: {e}"))?;
                let stop = stop.clone();
                let deadline = pairs.len() as u32 * (time + DRAIN_MARGIN) + DRAIN_MARGIN;
                drain = Some(
                    std::thread::Builder::new()
                        .name("gridmpi-wan-probe".into())
                        .spawn(move || drain_probes(l, stop, receiving * streams, deadline))
                        .map_err(|e| format!("cannot start the WAN probe's thread: {e}"))?,
                );
            }
            Err(e) => {
                if debug {
                    eprintln!("gridmpi: rank {me}: no WAN probe: {e}");
                }
                pmi.put(&format!("{what}-port"), "0").map_err(|e| format!("PMI put: {e}"))?;
            }
        }
    }
    pmi.fence().map_err(|e| format!("PMI fence: {e}"))?;
    let mut measured: Vec<String> = Vec::new();
    for (i, &(from, to)) in pairs.iter().enumerate() {
        if from == me {
            let port: u16 = get_when_there(pmi, to, &format!("{what}-port"))?.parse().unwrap_or(0);
            // Another host's listener: never at a loopback address.
            let at: Vec<SocketAddrV4> = cards[to as usize].addrs.iter().filter(|a| !a.is_loopback()).map(|&a| SocketAddrV4::new(a, port)).collect();
            let result = if port == 0 { Err("it could not listen".to_string()) } else { probe(&at, time, streams) };
            match result {
                Ok((bps, how)) => {
                    if debug {
                        eprintln!("gridmpi: rank {me}: {what} to rank {to} ({}): {how}", cards[to as usize].host);
                    }
                    measured.push(format!("{i}:{bps}"))
                }
                Err(e) if debug => eprintln!("gridmpi: rank {me}: {what} to rank {to} ({}): {e}", cards[to as usize].host),
                Err(_) => {}
            }
        }
        // One probe at a time.
        pmi.fence().map_err(|e| format!("PMI fence: {e}"))?;
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = drain {
        let _ = t.join();
    }
    let mut senders: Vec<Pid> = pairs.iter().map(|p| p.0).collect();
    senders.sort_unstable();
    senders.dedup();
    if senders.contains(&me) {
        pmi.put(&format!("{what}-result"), &measured.join(",")).map_err(|e| format!("PMI put: {e}"))?;
    }
    pmi.fence().map_err(|e| format!("PMI fence: {e}"))?;
    let mut results = vec![None; pairs.len()];
    for s in senders {
        let v = get_when_there(pmi, s, &format!("{what}-result"))?;
        for part in v.split(',').filter(|p| !p.is_empty()) {
            let (i, bps) = parse_result(part)
                .filter(|&(i, _)| i < pairs.len() && pairs[i].0 == s)
                .ok_or_else(|| format!("rank {s} reported a malformed bandwidth probe result {part:?}"))?;
            results[i] = Some(bps);
        }
    }
    Ok(results)
}

/// A given bandwidth the measurement contradicts: off by more than this
/// factor either way (a measurement is within a few percent on a quiet
/// link; cross traffic during the probe lowers it, so only a clear
/// disagreement overrules what the user said).
const CONTRADICTS: f64 = 1.5;

fn contradicts(told: u64, measured: u64) -> bool {
    let r = told as f64 / measured as f64;
    !(1.0 / CONTRADICTS..=CONTRADICTS).contains(&r)
}

/// "pair:bits-per-second".
fn parse_result(part: &str) -> Option<(usize, u64)> {
    let (b, bps) = part.split_once(':')?;
    let bps: u64 = bps.parse().ok()?;
    (bps > 0).then_some((b.parse().ok()?, bps))
}

/// A listener for probes, on the addresses the rank publishes (and within
/// GRIDMPI_TCP_PORTS when that is set: firewalls may only let those in).
fn listen(config: &Config, addrs: &[Ipv4Addr]) -> Result<TcpListener, String> {
    let bind = crate::bootstrap::bind_address(addrs);
    let ports: Vec<u16> = match crate::bootstrap::port_range(config.text("GRIDMPI_TCP_PORTS"))? {
        Some((lo, hi)) => (lo..=hi).collect(),
        None => vec![0],
    };
    let mut last = None;
    for p in ports {
        match TcpListener::bind(SocketAddrV4::new(bind, p)) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(format!("cannot listen: {}", last.map_or("no port".into(), |e| e.to_string())))
}

/// Read and drop what up to `expected` probes send (and a few strangers'),
/// until told to stop or the deadline.
fn drain_probes(l: TcpListener, stop: Arc<AtomicBool>, expected: usize, deadline: Duration) {
    let start = Instant::now();
    if l.set_nonblocking(true).is_err() {
        return;
    }
    let mut readers = Vec::new();
    // Room for strangers too: a connection that is not a probe must not
    // keep a real one out.
    let most = expected + 4;
    while !stop.load(Ordering::Relaxed) && start.elapsed() < deadline {
        match l.accept() {
            Ok((mut s, _)) if readers.len() < most => {
                let stop = stop.clone();
                let until = start + deadline;
                readers.push(std::thread::spawn(move || {
                    // Short timeouts: a connection that sends nothing (a
                    // stranger's) is left as soon as the probes are over.
                    let _ = s.set_nonblocking(false);
                    let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
                    let mut buf = vec![0u8; PIECE];
                    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                        match s.read(&mut buf) {
                            Ok(0) => break,
                            Ok(_) => {}
                            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                            Err(_) => break,
                        }
                    }
                }));
            }
            Ok(_) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    for r in readers {
        let _ = r.join();
    }
}

/// Write over `streams` connections to the first of `at` that answers,
/// for `time`; the link's bandwidth in bits/s (IP packets) from the
/// delivery-rate samples, and how it went.
///
/// Several connections, because one alone may not fill a long path with a
/// shallow bottleneck queue within a probe's time: on the testbed at 10 ms
/// one-way with a 40-packet queue a single cubic connection once measured
/// 65 Mbit/s of 100 (its window halved at the first loss, below the path's
/// capacity, and grows back slowly; other runs read 100); four measured
/// 100-117 in ten runs. The samples of
/// all connections taken at one moment are added up (what the link
/// delivered to all of them), and the 90th percentile of those sums is the
/// bandwidth: their largest ran up to 12% over the link's rate at 0 ms.
/// Samples the kernel marks application-limited count only with one
/// connection (a single writer does not keep several sockets of a
/// multi-gigabit LAN full, and would then have none).
fn probe(at: &[SocketAddrV4], time: Duration, streams: usize) -> Result<(u64, String), String> {
    let first = at
        .iter()
        .find_map(|a| TcpStream::connect_timeout(&(*a).into(), Duration::from_secs(2)).ok().map(|s| (s, *a)))
        .ok_or_else(|| format!("cannot connect to {at:?}"))?;
    let mut conns = vec![first.0];
    for _ in 1..streams {
        conns.push(TcpStream::connect_timeout(&first.1.into(), Duration::from_secs(2)).map_err(|e| format!("cannot connect to {}: {e}", first.1))?);
    }
    for s in &conns {
        s.set_nonblocking(true).map_err(|e| format!("cannot make the probe non-blocking: {e}"))?;
    }
    let fds: Vec<i32> = conns.iter().map(std::os::fd::AsRawFd::as_raw_fd).collect();
    let field = crate::trace::field_index;
    let (rate_at, limited_at, mss_at, pmtu_at) = (field("delivery_rate"), field("app_limited"), field("snd_mss"), field("pmtu"));
    let piece = vec![0u8; PIECE];
    let start = Instant::now();
    let mut sent = 0u64;
    let mut samples: Vec<u64> = Vec::new();
    // Packets on the wire over payload in them (headers, options).
    let mut wire_per_payload = 1.0;
    while start.elapsed() < time && sent < MAX_BYTES {
        let mut polls: Vec<libc::pollfd> = fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLOUT, revents: 0 }).collect();
        // SAFETY: polls is a valid array of pollfd for its length.
        unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, 5) };
        for (s, p) in conns.iter_mut().zip(&polls) {
            if p.revents & libc::POLLOUT != 0 {
                match s.write(&piece) {
                    Ok(n) => sent += n as u64,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(format!("write: {e}")),
                }
            }
        }
        // The second half of the probe: of its time, or of its bytes on a
        // link fast enough to end it early.
        if start.elapsed() < time / 2 && sent < MAX_BYTES / 2 {
            continue;
        }
        // One sample of the link: every connection's, now.
        let mut sum = 0u64;
        for &fd in &fds {
            let Some((v, avail)) = crate::trace::tcp_info(fd) else { continue };
            if avail >> rate_at & 1 == 1 && (v[limited_at] == 0 || streams > 1) {
                sum += v[rate_at];
            }
            if avail >> mss_at & 1 == 1 && avail >> pmtu_at & 1 == 1 && v[mss_at] > 0 && v[pmtu_at] > v[mss_at] {
                wire_per_payload = v[pmtu_at] as f64 / v[mss_at] as f64;
            }
        }
        if sum > 0 {
            samples.push(sum);
        }
    }
    // Wait until the receiver has read everything (it closes at our end
    // of stream), so the next pair's probe does not share the link with
    // this one's tail (a send buffer can hold a third of a second of it).
    for s in &conns {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    for mut s in conns {
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(DRAIN_MARGIN));
        let _ = s.read(&mut [0u8; 1]);
    }
    samples.sort_unstable();
    let q = |f: f64| samples.get(((samples.len() as f64 - 1.0) * f) as usize).map_or(0.0, |&x| x as f64 * 8e-6 * wire_per_payload);
    let how = format!(
        "{sent} bytes over {streams} connection(s) in {:.0} ms, {} samples (Mbit/s: median {:.1}, 90th percentile {:.1}, largest {:.1})",
        start.elapsed().as_secs_f64() * 1e3,
        samples.len(),
        q(0.5),
        q(0.9),
        q(1.0)
    );
    // The delivery rate counts payload; a link's bandwidth (as a topology
    // file or the testbed says it, and as pacing spends it) counts packets.
    let pick = if streams > 1 { 0.9 } else { 1.0 };
    match samples.get(((samples.len() as f64 - 1.0) * pick) as usize) {
        Some(&bytes_per_s) => Ok(((bytes_per_s as f64 * 8.0 * wire_per_payload) as u64, how)),
        None => Err(format!("no delivery-rate sample: {how}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_clear_disagreement_overrules_a_given_bandwidth() {
        assert!(!contradicts(100_000_000, 96_000_000));
        assert!(!contradicts(100_000_000, 140_000_000));
        assert!(contradicts(1_000_000_000, 100_000_000), "a file wrong by 10x");
        assert!(contradicts(10_000_000, 100_000_000));
    }

    #[test]
    fn results_parse_strictly() {
        assert_eq!(parse_result("1:95000000"), Some((1, 95_000_000)));
        for bad in ["", "1", "1:", ":5", "x:5", "1:0", "1:-5", "1:5:6"] {
            assert_eq!(parse_result(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_probe_over_loopback_measures_something() {
        let l = TcpListener::bind("127.0.0.2:0").or_else(|_| TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = match l.local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            _ => unreachable!(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let t = std::thread::spawn(move || drain_probes(l, s2, 1 + WAN_STREAMS, Duration::from_secs(5)));
        // One connection (as between networks), then as over a WAN.
        let one = probe(&[addr], Duration::from_millis(100), 1);
        let several = probe(&[addr], Duration::from_millis(100), WAN_STREAMS);
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap();
        for got in [one, several] {
            let (bps, how) = got.expect("a measurement over loopback");
            assert!(bps > 1_000_000, "{bps} bit/s over loopback: {how}");
        }
    }
}

//! The cluster map: which cluster (site) every rank is in, and what links
//! the clusters (bandwidth, round-trip time).
//!
//! Sources, first that applies:
//! 1. a topology file (`GRIDMPI_TOPOLOGY=FILE`, `gridmpirun --topology FILE`):
//!    ```text
//!    # cluster NAME HOST...    (host names may use * as a wildcard)
//!    cluster siteA h0 h1 h2 h3
//!    cluster siteB h4 h5 h6 h7
//!    # wan A B key=value...    (per direction: the same for both unless
//!    #                          given twice, once per direction)
//!    wan siteA siteB bandwidth=100mbit delay=5ms
//!    ```
//!    (rates and durations as gridmpi_config::units reads them everywhere;
//!    a bare number is refused, except a delay of 0);
//! 2. cluster names given per rank by the launcher (`GRIDMPI_CLUSTER`), with
//!    the WAN described by `GRIDMPI_WAN_BANDWIDTH` / `GRIDMPI_WAN_DELAY`;
//! 3. discovery: one rank per host measures the TCP handshake time to one
//!    rank on every other host; hosts closer than `GRIDMPI_CLUSTER_RTT`
//!    form a cluster (transitively);
//! 4. otherwise a single cluster.

use gridmpi_config::units::{self, Bare};
use gridmpi_engine::Pid;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct WanLink {
    /// Bottleneck bandwidth in bits per second, if known.
    pub bandwidth_bps: Option<u64>,
    /// Round-trip time, if known (from the file: twice the one-way delay).
    pub rtt: Option<Duration>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapSource {
    File(String),
    Launcher,
    Discovered,
    Single,
}

#[derive(Clone, Debug)]
pub struct ClusterMap {
    pub names: Vec<String>,
    /// Cluster index of every pid.
    pub of_pid: Vec<u32>,
    /// `links[a][b]`: from cluster a to cluster b (a != b).
    pub links: Vec<Vec<WanLink>>,
    pub source: MapSource,
}

impl ClusterMap {
    pub fn single(npids: usize) -> ClusterMap {
        ClusterMap {
            names: vec!["cluster0".into()],
            of_pid: vec![0; npids],
            links: vec![vec![WanLink { bandwidth_bps: None, rtt: None }]],
            source: MapSource::Single,
        }
    }

    pub fn clusters(&self) -> usize {
        self.names.len()
    }

    pub fn cluster_of(&self, pid: u32) -> u32 {
        self.of_pid[pid as usize]
    }

    pub fn same_cluster(&self, a: u32, b: u32) -> bool {
        self.of_pid[a as usize] == self.of_pid[b as usize]
    }

    /// Whether all of `pids` are in one cluster (true for none), without
    /// allocating: most communicators are, and collectives ask at every call.
    pub fn one_cluster<'a>(&self, pids: impl IntoIterator<Item = &'a u32>) -> bool {
        let mut pids = pids.into_iter();
        match pids.next() {
            Some(&first) => pids.all(|&p| self.same_cluster(first, p)),
            None => true,
        }
    }

    /// The link from `a`'s cluster to `b`'s, or None inside a cluster.
    pub fn wan_between(&self, a: u32, b: u32) -> Option<&WanLink> {
        let (ca, cb) = (self.cluster_of(a) as usize, self.cluster_of(b) as usize);
        (ca != cb).then(|| &self.links[ca][cb])
    }

    /// Build from each pid's cluster name (launcher-given or from the file).
    pub fn from_names(pid_names: &[String], source: MapSource) -> ClusterMap {
        let mut names: Vec<String> = Vec::new();
        let of_pid = pid_names
            .iter()
            .map(|n| match names.iter().position(|x| x == n) {
                Some(i) => i as u32,
                None => {
                    names.push(n.clone());
                    (names.len() - 1) as u32
                }
            })
            .collect();
        let k = names.len();
        ClusterMap { names, of_pid, links: vec![vec![WanLink { bandwidth_bps: None, rtt: None }; k]; k], source }
    }

    /// Place a process of a joined world (the next pid): in the cluster
    /// its launcher named, or else in the cluster of a process on its host
    /// (`host_mate`), or else in cluster 0. A name we do not know yet is a
    /// new cluster, whose WAN links are unknown.
    pub fn add_pid(&mut self, cluster: &str, host_mate: Option<u32>) -> u32 {
        let c = match (cluster, host_mate) {
            ("", Some(mate)) => self.cluster_of(mate),
            ("", None) => 0,
            (name, _) => match self.names.iter().position(|x| x == name) {
                Some(i) => i as u32,
                None => {
                    self.names.push(name.to_string());
                    let k = self.names.len();
                    for row in &mut self.links {
                        row.push(WanLink { bandwidth_bps: None, rtt: None });
                    }
                    self.links.push(vec![WanLink { bandwidth_bps: None, rtt: None }; k]);
                    (k - 1) as u32
                }
            },
        };
        self.of_pid.push(c);
        c
    }

    /// Set every inter-cluster link to the same properties (where unknown).
    pub fn set_uniform_wan(&mut self, bandwidth_bps: Option<u64>, rtt: Option<Duration>) {
        for a in 0..self.names.len() {
            for b in 0..self.names.len() {
                if a != b {
                    let l = &mut self.links[a][b];
                    l.bandwidth_bps = l.bandwidth_bps.or(bandwidth_bps);
                    l.rtt = l.rtt.or(rtt);
                }
            }
        }
    }

    /// A one-line description for --info-like output and the trace.
    /// Who is in which cluster: `A: 0-3; B: 4-7`.
    pub fn members(&self) -> String {
        let parts: Vec<String> = (0..self.names.len() as u32)
            .map(|c| {
                let pids: Vec<Pid> = (0..self.of_pid.len() as Pid).filter(|&p| self.of_pid[p as usize] == c).collect();
                format!("{}: {}", self.names[c as usize], ranges(&pids))
            })
            .collect();
        parts.join("; ")
    }

    pub fn describe(&self) -> String {
        let mut counts = vec![0usize; self.names.len()];
        for &c in &self.of_pid {
            counts[c as usize] += 1;
        }
        let parts: Vec<String> = self.names.iter().zip(&counts).map(|(n, c)| format!("{n}:{c}")).collect();
        let mut s = format!("{} cluster(s) [{}] from {:?}", self.names.len(), parts.join(" "), self.source);
        if self.names.len() > 1 {
            let l = &self.links[0][1];
            s.push_str(&format!(
                "; WAN {} / RTT {}",
                l.bandwidth_bps.map_or("unknown bandwidth".into(), |b| format!("{:.1} Mbit/s", b as f64 / 1e6)),
                l.rtt.map_or("unknown".into(), |r| format!("{:.2} ms", r.as_secs_f64() * 1e3))
            ));
        }
        s
    }
}

/// A parsed topology file.
#[derive(Debug, Default)]
pub struct TopologyFile {
    /// (cluster name, host patterns)
    pub clusters: Vec<(String, Vec<String>)>,
    /// (from, to, bandwidth, one-way delay); `both` if given once for both directions.
    pub wans: Vec<(String, String, Option<u64>, Option<Duration>)>,
}

/// A WAN's bandwidth as the topology file writes it (bits per second, the
/// rule of every rate: gridmpi_config::units); 0 says nothing of a WAN.
fn parse_bandwidth(v: &str) -> Result<u64, String> {
    match units::parse_rate(v)? {
        0 => Err(format!("bandwidth {v:?} must be above 0")),
        bps => Ok(bps),
    }
}

impl TopologyFile {
    pub fn parse(text: &str) -> Result<TopologyFile, String> {
        let mut t = TopologyFile::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let err = |m: String| format!("line {}: {m}", i + 1);
            let mut words = line.split_whitespace();
            match words.next() {
                Some("cluster") => {
                    let name = words.next().ok_or_else(|| err("cluster needs a name".into()))?.to_string();
                    let hosts: Vec<String> = words.map(|w| w.to_string()).collect();
                    if hosts.is_empty() {
                        return Err(err(format!("cluster {name} lists no hosts")));
                    }
                    if t.clusters.iter().any(|(n, _)| *n == name) {
                        return Err(err(format!("cluster {name} is defined twice")));
                    }
                    t.clusters.push((name, hosts));
                }
                Some("wan") => {
                    let a = words.next().ok_or_else(|| err("wan needs two cluster names".into()))?.to_string();
                    let b = words.next().ok_or_else(|| err("wan needs two cluster names".into()))?.to_string();
                    let (mut bw, mut delay) = (None, None);
                    for kv in words {
                        let (k, v) = kv.split_once('=').ok_or_else(|| err(format!("expected key=value, got {kv:?}")))?;
                        match k {
                            "bandwidth" | "rate" => bw = Some(parse_bandwidth(v).map_err(err)?),
                            "delay" => delay = Some(units::parse_duration(v, Bare::Refused).map_err(err)?),
                            _ => {} // queue, loss...: the testbed's business
                        }
                    }
                    t.wans.push((a, b, bw, delay));
                }
                Some(w) => return Err(err(format!("unknown keyword {w:?} (expected cluster or wan)"))),
                None => {}
            }
        }
        for (a, b, _, _) in &t.wans {
            for c in [a, b] {
                if !t.clusters.iter().any(|(n, _)| n == c) {
                    return Err(format!("wan line names unknown cluster {c:?}"));
                }
            }
        }
        Ok(t)
    }

    /// The cluster a host belongs to.
    pub fn cluster_of_host(&self, host: &str) -> Option<&str> {
        self.clusters.iter().find(|(_, hs)| hs.iter().any(|p| glob(p, host))).map(|(n, _)| n.as_str())
    }

    /// The map for pids on `hosts`.
    pub fn map(&self, hosts: &[String], path: &str) -> Result<ClusterMap, String> {
        let names: Vec<String> = hosts
            .iter()
            .map(|h| {
                self.cluster_of_host(h)
                    .map(|s| s.to_string())
                    .ok_or_else(|| format!("host {h:?} is in no cluster of topology file {path}"))
            })
            .collect::<Result<_, _>>()?;
        let mut m = ClusterMap::from_names(&names, MapSource::File(path.to_string()));
        // Clusters listed in the file but without ranks are simply absent.
        let index = |n: &str| m.names.iter().position(|x| x == n);
        let mut seen = vec![];
        for (a, b, bw, delay) in &self.wans {
            let (Some(ia), Some(ib)) = (index(a), index(b)) else { continue };
            let both = !self.wans.iter().any(|(x, y, _, _)| x == b && y == a);
            let dirs: Vec<(usize, usize)> = if both { vec![(ia, ib), (ib, ia)] } else { vec![(ia, ib)] };
            for (x, y) in dirs {
                seen.push((x, y));
                // RTT: this direction's delay plus the reverse one's.
                let back = self.wans.iter().find(|(p, q, _, _)| p == b && q == a).and_then(|w| w.3).or(*delay);
                let rtt = match (delay, back) {
                    (Some(d), Some(r)) => Some(*d + r),
                    _ => None,
                };
                let l = &mut m.links[x][y];
                if (x, y) == (ia, ib) {
                    l.bandwidth_bps = *bw;
                    l.rtt = rtt;
                } else if l.bandwidth_bps.is_none() {
                    l.bandwidth_bps = *bw;
                    l.rtt = rtt;
                }
            }
        }
        Ok(m)
    }
}

/// `*` matches any run of characters.
pub fn glob(pattern: &str, s: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == s,
        Some((head, rest)) => {
            if !s.starts_with(head) {
                return false;
            }
            let s = &s[head.len()..];
            (0..=s.len()).any(|i| s.is_char_boundary(i) && glob(rest, &s[i..]))
        }
    }
}

/// Group hosts into clusters from measured RTTs between host leaders:
/// hosts closer than `threshold` are in one cluster (transitively).
/// `rtt[i][j]` is None when not measured. Returns each host's cluster index.
pub fn cluster_hosts(rtt: &[Vec<Option<Duration>>], threshold: Duration) -> Vec<u32> {
    let n = rtt.len();
    let mut label: Vec<usize> = (0..n).collect();
    fn find(l: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while l[r] != r {
            r = l[r];
        }
        l[x] = r;
        r
    }
    for i in 0..n {
        for j in 0..n {
            let close = [rtt[i][j], rtt[j][i]].iter().flatten().any(|&d| d < threshold);
            if i != j && close {
                let (a, b) = (find(&mut label, i), find(&mut label, j));
                label[a.max(b)] = a.min(b);
            }
        }
    }
    let roots: Vec<usize> = (0..n).map(|i| find(&mut label, i)).collect();
    first_appearance(roots).0
}

/// Labels renumbered 0, 1, ... in order of first appearance (so every
/// process that sees the same list gets the same numbers), and the
/// distinct labels in that order.
pub fn first_appearance<T: PartialEq + Copy>(labels: impl IntoIterator<Item = T>) -> (Vec<u32>, Vec<T>) {
    let mut ids: Vec<T> = Vec::new();
    let dense = labels
        .into_iter()
        .map(|l| match ids.iter().position(|&x| x == l) {
            Some(i) => i as u32,
            None => {
                ids.push(l);
                (ids.len() - 1) as u32
            }
        })
        .collect();
    (dense, ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_topology_file() {
        let t = TopologyFile::parse(
            "# grid\ncluster A h0 h1 a*\ncluster B h4 h5\nwan A B bandwidth=100mbit delay=5ms queue=40\n",
        )
        .unwrap();
        assert_eq!(t.cluster_of_host("h1"), Some("A"));
        assert_eq!(t.cluster_of_host("alpha"), Some("A"));
        assert_eq!(t.cluster_of_host("h5"), Some("B"));
        assert_eq!(t.cluster_of_host("zz"), None);
        let hosts: Vec<String> = ["h0", "h4", "h1", "h5"].iter().map(|s| s.to_string()).collect();
        let m = t.map(&hosts, "grid.txt").unwrap();
        assert_eq!(m.of_pid, vec![0, 1, 0, 1]);
        assert!(m.same_cluster(0, 2));
        let l = m.wan_between(0, 1).unwrap();
        assert_eq!(l.bandwidth_bps, Some(100_000_000));
        assert_eq!(l.rtt, Some(Duration::from_millis(10)));
        assert_eq!(m.wan_between(1, 0).unwrap().rtt, Some(Duration::from_millis(10)));
        assert!(m.wan_between(0, 2).is_none());
        assert!(t.map(&["nowhere".to_string()], "f").is_err());
    }

    #[test]
    fn rejects_bad_files_clearly() {
        assert!(TopologyFile::parse("cluster A\n").unwrap_err().contains("line 1"));
        assert!(TopologyFile::parse("cluster A h\nwan A B\n").unwrap_err().contains("unknown cluster"));
        assert!(TopologyFile::parse("cluster A h\ncluster B g\nwan A B bandwidth=100\n").unwrap_err().contains("unit"));
        assert!(TopologyFile::parse("frobnicate\n").is_err());
    }

    #[test]
    fn asymmetric_delays_add_up() {
        let t = TopologyFile::parse("cluster A a\ncluster B b\nwan A B bandwidth=10mbit delay=2ms\nwan B A bandwidth=20mbit delay=8ms\n").unwrap();
        let m = t.map(&["a".into(), "b".into()], "f").unwrap();
        assert_eq!(m.links[0][1].bandwidth_bps, Some(10_000_000));
        assert_eq!(m.links[1][0].bandwidth_bps, Some(20_000_000));
        assert_eq!(m.links[0][1].rtt, Some(Duration::from_millis(10)));
    }

    #[test]
    fn discovery_groups_close_hosts() {
        let ms = |x: u64| Some(Duration::from_micros(x));
        // hosts 0,1 close; 2,3 close; far between.
        let rtt = vec![
            vec![None, ms(100), ms(10_000), ms(10_100)],
            vec![ms(90), None, ms(10_000), ms(10_000)],
            vec![ms(10_000), ms(10_000), None, ms(80)],
            vec![ms(10_000), ms(10_000), ms(70), None],
        ];
        assert_eq!(cluster_hosts(&rtt, Duration::from_millis(1)), vec![0, 0, 1, 1]);
        assert_eq!(cluster_hosts(&rtt, Duration::from_millis(20)), vec![0, 0, 0, 0]);
    }

    #[test]
    fn bandwidths_delays_and_globs() {
        let wan = |kv: &str| TopologyFile::parse(&format!("cluster A a\ncluster B b\nwan A B {kv}\n")).map(|t| (t.wans[0].2, t.wans[0].3));
        assert_eq!(wan("bandwidth=1.5Gbit"), Ok((Some(1_500_000_000), None)));
        // The testbed's forms are accepted here too.
        assert_eq!(wan("rate=100M delay=250us"), Ok((Some(100_000_000), Some(Duration::from_micros(250)))));
        assert_eq!(wan("bandwidth=100Mbit/s delay=0"), Ok((Some(100_000_000), Some(Duration::ZERO))));
        assert!(wan("bandwidth=fast").unwrap_err().contains("\"fast\""));
        assert!(wan("bandwidth=100mbps").unwrap_err().contains("ambiguous"));
        assert!(wan("bandwidth=0").unwrap_err().contains("above 0"));
        // A bare delay was microseconds here and refused by the testbed: refused.
        assert!(wan("delay=5").unwrap_err().contains("unit"));
        assert!(glob("h*", "h12") && glob("*-a", "x-a") && !glob("h*", "g1") && glob("a*b*c", "aXbYc"));
    }
}

/// `0-3,5,7-8`: sorted pids as runs.
fn ranges(pids: &[Pid]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < pids.len() {
        let mut j = i;
        while j + 1 < pids.len() && pids[j + 1] == pids[j] + 1 {
            j += 1;
        }
        out.push(if i == j { pids[i].to_string() } else { format!("{}-{}", pids[i], pids[j]) });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod members_tests {
    use super::*;

    #[test]
    fn members_are_runs_of_ranks_per_cluster() {
        let map = ClusterMap::from_names(&["A", "B", "A", "B", "A", "A"].map(String::from), MapSource::Launcher);
        assert_eq!(map.members(), "A: 0,2,4-5; B: 1,3");
    }

    #[test]
    fn one_cluster_is_every_pid_in_the_first_ones_cluster() {
        let map = ClusterMap::from_names(&["A", "B", "A", "B"].map(String::from), MapSource::Launcher);
        assert!(map.one_cluster(&[0, 2]));
        assert!(map.one_cluster(&[3]));
        assert!(map.one_cluster(&[] as &[u32]));
        assert!(!map.one_cluster(&[0, 2, 1]));
        assert!(!map.one_cluster(&[1, 0]));
    }
}

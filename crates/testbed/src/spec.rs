//! The grid description: clusters of hosts and the WAN links between them.
//!
//! Two ways to write it:
//! - inline: `2x4` (2 clusters of 4 hosts, every pair of clusters linked),
//!   `4+4+2` (clusters of those sizes), optionally followed by link settings
//!   for every link: `2x4:rate=100mbit,delay=5ms,queue=100p,loss=0`;
//! - a TOML file (see docs/testbed.md):
//!
//! ```toml
//! cc = "cubic"                 # default TCP congestion control on every host
//! [defaults]                   # settings for every link unless it says otherwise
//! rate = "100mbit"
//! [[cluster]]
//! name = "a"
//! hosts = ["a0", "a1"]         # or: size = 2 (names h0, h1, ... numbered across the grid)
//! [[cluster]]
//! name = "b"
//! size = 2
//! private = true               # only b's first host is reachable across the WAN
//! [[link]]
//! clusters = ["a", "b"]
//! delay = "5ms"
//! [link.forward]               # only the a -> b direction
//! loss = "0.1%"
//! ```
//!
//! Addresses: cluster i is 10.77.i.0/24, its hosts .1, .2, ..., its switch
//! (router) .254.

use crate::units::{self, QueueLimit};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// How one direction of a WAN link behaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DirParams {
    /// Bits per second of IP packets (0: unlimited).
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay_ns: u64,
    /// Drop-tail limit of the bottleneck queue.
    pub queue: QueueLimit,
    /// Probability that a packet is lost on the line.
    pub loss: f64,
    /// Link is cut: every packet is dropped.
    pub cut: bool,
}

impl Default for DirParams {
    fn default() -> Self {
        DirParams {
            rate_bps: 100_000_000,
            delay_ns: 0,
            queue: QueueLimit::Packets(100),
            loss: 0.0,
            cut: false,
        }
    }
}

impl DirParams {
    /// Apply one `key=value` setting.
    pub fn apply(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "rate" | "bandwidth" | "bw" => self.rate_bps = units::parse_rate(value)?,
            "delay" => self.delay_ns = units::parse_delay(value)?,
            "queue" | "limit" => self.queue = units::parse_queue(value)?,
            "loss" => self.loss = units::parse_loss(value)?,
            _ => return Err(format!("unknown link setting '{key}' (use rate, delay, queue, loss)")),
        }
        Ok(())
    }

    pub fn describe(&self) -> String {
        format!(
            "rate={} delay={} queue={} loss={}{}",
            units::Rate(self.rate_bps),
            units::Delay(self.delay_ns),
            self.queue,
            units::Loss(self.loss),
            if self.cut { " CUT" } else { "" }
        )
    }
}

/// Split "k=v" into its parts.
pub fn split_setting(text: &str) -> Result<(&str, &str), String> {
    text.split_once('=')
        .map(|(k, v)| (k.trim(), v.trim()))
        .ok_or_else(|| format!("'{text}': expected key=value"))
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Host {
    pub name: String,
    pub ip: Ipv4Addr,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cluster {
    pub name: String,
    /// Third octet of the cluster's /24.
    pub index: u8,
    pub hosts: Vec<Host>,
    /// Only the first host (the site's gateway) may be reached across the
    /// WAN, as for a site whose nodes have private addresses: the
    /// emulator drops every other packet to or from the cluster's hosts.
    #[serde(default)]
    pub private: bool,
}

impl Cluster {
    /// The host reachable from other clusters when the cluster is private.
    pub fn gateway_host(&self) -> &Host {
        &self.hosts[0]
    }
    pub fn subnet(&self) -> String {
        format!("10.77.{}.0/24", self.index)
    }
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, self.index, 254)
    }
}

/// A WAN link between clusters `a` and `b` (indices into `Grid::clusters`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Link {
    pub a: usize,
    pub b: usize,
    /// The a -> b direction.
    pub forward: DirParams,
    /// The b -> a direction.
    pub reverse: DirParams,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Grid {
    pub clusters: Vec<Cluster>,
    pub links: Vec<Link>,
    /// Default congestion control set in every host namespace.
    pub cc: Option<String>,
}

impl Grid {
    pub fn hosts(&self) -> impl Iterator<Item = (&Cluster, &Host)> {
        self.clusters.iter().flat_map(|c| c.hosts.iter().map(move |h| (c, h)))
    }

    pub fn host(&self, name: &str) -> Option<(&Cluster, &Host)> {
        self.hosts().find(|(_, h)| h.name == name)
    }

    pub fn cluster_index(&self, name: &str) -> Option<usize> {
        self.clusters.iter().position(|c| c.name == name)
    }

    pub fn link_name(&self, link: &Link) -> String {
        format!("{}-{}", self.clusters[link.a].name, self.clusters[link.b].name)
    }

    /// Name of a direction: "a>b".
    pub fn dir_name(&self, link: &Link, forward: bool) -> String {
        let (from, to) = if forward { (link.a, link.b) } else { (link.b, link.a) };
        format!("{}>{}", self.clusters[from].name, self.clusters[to].name)
    }

    /// Find a link by "a-b" (either order). Returns its index.
    pub fn find_link(&self, name: &str) -> Result<usize, String> {
        let (x, y) = name
            .split_once('-')
            .ok_or_else(|| format!("link '{name}': write it as CLUSTER-CLUSTER, e.g. {}", self.example_link()))?;
        let (x, y) = (self.cluster_index(x), self.cluster_index(y));
        self.links
            .iter()
            .position(|l| (Some(l.a), Some(l.b)) == (x, y) || (Some(l.b), Some(l.a)) == (x, y))
            .ok_or_else(|| format!("no link '{name}'; links: {}", self.link_names().join(", ")))
    }

    pub fn link_names(&self) -> Vec<String> {
        self.links.iter().map(|l| self.link_name(l)).collect()
    }

    fn example_link(&self) -> String {
        self.link_names().first().cloned().unwrap_or_else(|| "c0-c1".into())
    }

    /// For cluster `from`: which neighbour cluster carries traffic to each
    /// other cluster (shortest path over the links), or None if unreachable.
    pub fn next_hops(&self, from: usize) -> Vec<Option<usize>> {
        let n = self.clusters.len();
        let mut first_hop: Vec<Option<usize>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut queue = VecDeque::new();
        seen[from] = true;
        queue.push_back(from);
        while let Some(c) = queue.pop_front() {
            for l in &self.links {
                let peer = if l.a == c { l.b } else if l.b == c { l.a } else { continue };
                if !seen[peer] {
                    seen[peer] = true;
                    first_hop[peer] = if c == from { Some(peer) } else { first_hop[c] };
                    queue.push_back(peer);
                }
            }
        }
        first_hop
    }
}

// ---- parsing ----

#[derive(Deserialize)]
#[serde(untagged)]
enum Text {
    Str(String),
    Float(f64),
    Int(i64),
}

impl Text {
    fn as_string(&self) -> String {
        match self {
            Text::Str(s) => s.clone(),
            Text::Float(f) => f.to_string(),
            Text::Int(i) => i.to_string(),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawParams {
    rate: Option<Text>,
    delay: Option<Text>,
    queue: Option<Text>,
    loss: Option<Text>,
}

impl RawParams {
    fn apply_to(&self, p: &mut DirParams) -> Result<(), String> {
        for (key, value) in [("rate", &self.rate), ("delay", &self.delay), ("queue", &self.queue), ("loss", &self.loss)] {
            if let Some(v) = value {
                p.apply(key, &v.as_string())?;
            }
        }
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    name: String,
    size: Option<usize>,
    hosts: Option<Vec<String>>,
    private: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    clusters: [String; 2],
    rate: Option<Text>,
    delay: Option<Text>,
    queue: Option<Text>,
    loss: Option<Text>,
    forward: Option<RawParams>,
    reverse: Option<RawParams>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    cc: Option<String>,
    defaults: Option<RawParams>,
    #[serde(default)]
    cluster: Vec<RawCluster>,
    #[serde(default)]
    link: Vec<RawLink>,
}

fn check_name(kind: &str, name: &str, max: usize, extra: &[char]) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= max
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || extra.contains(&c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{kind} name '{name}': use 1..={max} lowercase letters/digits{}, starting with a letter",
            if extra.is_empty() { String::new() } else { format!(" or {:?}", extra) }
        ))
    }
}

/// Parse a spec: a file path, or the inline form.
pub fn load(spec: &str) -> Result<Grid, String> {
    if looks_inline(spec) {
        parse_inline(spec)
    } else {
        let text = std::fs::read_to_string(spec).map_err(|e| format!("cannot read spec file '{spec}': {e}"))?;
        parse_toml(&text).map_err(|e| format!("{spec}: {e}"))
    }
}

fn looks_inline(spec: &str) -> bool {
    let head = spec.split(':').next().unwrap_or("");
    !head.is_empty() && head.chars().all(|c| c.is_ascii_digit() || c == 'x' || c == '+') && !std::path::Path::new(spec).exists()
}

/// `2x4`, `4+4+2`, with an optional `:key=value,...` applied to every link.
pub fn parse_inline(spec: &str) -> Result<Grid, String> {
    let (shape, settings) = match spec.split_once(':') {
        Some((s, rest)) => (s, Some(rest)),
        None => (spec, None),
    };
    let sizes: Vec<usize> = if let Some((n, m)) = shape.split_once('x') {
        let n: usize = n.parse().map_err(|_| format!("'{spec}': bad cluster count"))?;
        let m: usize = m.parse().map_err(|_| format!("'{spec}': bad host count"))?;
        vec![m; n]
    } else {
        shape
            .split('+')
            .map(|s| s.parse().map_err(|_| format!("'{spec}': bad cluster size '{s}'")))
            .collect::<Result<_, _>>()?
    };
    let mut params = DirParams::default();
    if let Some(settings) = settings {
        for kv in settings.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = split_setting(kv)?;
            params.apply(k, v)?;
        }
    }
    let clusters: Vec<(String, Option<Vec<String>>, usize)> =
        sizes.iter().enumerate().map(|(i, &n)| (format!("c{i}"), None, n)).collect();
    let mut links = Vec::new();
    for a in 0..sizes.len() {
        for b in a + 1..sizes.len() {
            links.push(Link { a, b, forward: params.clone(), reverse: params.clone() });
        }
    }
    build(clusters, links, None)
}

pub fn parse_toml(text: &str) -> Result<Grid, String> {
    let raw: RawSpec = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut defaults = DirParams::default();
    if let Some(d) = &raw.defaults {
        d.apply_to(&mut defaults)?;
    }
    let clusters: Vec<(String, Option<Vec<String>>, usize)> = raw
        .cluster
        .iter()
        .map(|c| match (&c.hosts, c.size) {
            (Some(h), None) => Ok((c.name.clone(), Some(h.clone()), h.len())),
            (Some(h), Some(n)) if n == h.len() => Ok((c.name.clone(), Some(h.clone()), n)),
            (None, Some(n)) => Ok((c.name.clone(), None, n)),
            _ => Err(format!("cluster '{}': give hosts = [...] or size = N", c.name)),
        })
        .collect::<Result<_, _>>()?;
    let index_of = |name: &str| {
        clusters
            .iter()
            .position(|c| c.0 == name)
            .ok_or_else(|| format!("link names unknown cluster '{name}'"))
    };
    let mut links = Vec::new();
    for l in &raw.link {
        let (a, b) = (index_of(&l.clusters[0])?, index_of(&l.clusters[1])?);
        let mut both = defaults.clone();
        for (key, value) in [("rate", &l.rate), ("delay", &l.delay), ("queue", &l.queue), ("loss", &l.loss)] {
            if let Some(v) = value {
                both.apply(key, &v.as_string())?;
            }
        }
        let mut forward = both.clone();
        let mut reverse = both;
        if let Some(f) = &l.forward {
            f.apply_to(&mut forward)?;
        }
        if let Some(r) = &l.reverse {
            r.apply_to(&mut reverse)?;
        }
        links.push(Link { a, b, forward, reverse });
    }
    let mut grid = build(clusters, links, raw.cc)?;
    for (c, r) in grid.clusters.iter_mut().zip(&raw.cluster) {
        c.private = r.private.unwrap_or(false);
    }
    Ok(grid)
}

/// Name hosts, give addresses, check everything.
fn build(clusters: Vec<(String, Option<Vec<String>>, usize)>, links: Vec<Link>, cc: Option<String>) -> Result<Grid, String> {
    if clusters.is_empty() {
        return Err("the grid has no cluster".into());
    }
    if clusters.len() > 250 {
        return Err("at most 250 clusters".into());
    }
    let mut next_global = 0;
    let mut out = Vec::new();
    for (index, (name, names, size)) in clusters.into_iter().enumerate() {
        check_name("cluster", &name, 11, &['_'])?;
        if size == 0 || size > 253 {
            return Err(format!("cluster '{name}': 1..=253 hosts"));
        }
        let names = names.unwrap_or_else(|| {
            let v: Vec<String> = (next_global..next_global + size).map(|i| format!("h{i}")).collect();
            v
        });
        next_global += size;
        let hosts = names
            .into_iter()
            .enumerate()
            .map(|(i, n)| Host { ip: Ipv4Addr::new(10, 77, index as u8, i as u8 + 1), name: n })
            .collect();
        out.push(Cluster { name, index: index as u8, hosts, private: false });
    }
    let grid = Grid { clusters: out, links, cc };
    let mut seen = std::collections::HashSet::new();
    for (_, h) in grid.hosts() {
        check_name("host", &h.name, 12, &['-'])?;
        if h.name.starts_with("sw-") {
            return Err(format!("host name '{}': 'sw-' is reserved for switches", h.name));
        }
        if !seen.insert(h.name.clone()) {
            return Err(format!("host name '{}' used twice", h.name));
        }
    }
    let mut seen_clusters = std::collections::HashSet::new();
    for c in &grid.clusters {
        if !seen_clusters.insert(c.name.clone()) {
            return Err(format!("cluster name '{}' used twice", c.name));
        }
    }
    let mut pairs = std::collections::HashSet::new();
    for l in &grid.links {
        if l.a == l.b {
            return Err(format!("link from cluster '{}' to itself", grid.clusters[l.a].name));
        }
        if !pairs.insert((l.a.min(l.b), l.a.max(l.b))) {
            return Err(format!("link {} given twice", grid.link_name(l)));
        }
    }
    if let Some(cc) = &grid.cc {
        check_name("congestion control", cc, 15, &['_'])?;
    }
    Ok(grid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_2x4() {
        let g = parse_inline("2x4").unwrap();
        assert_eq!(g.clusters.len(), 2);
        assert_eq!(g.clusters[1].hosts[0].name, "h4");
        assert_eq!(g.clusters[1].hosts[0].ip, Ipv4Addr::new(10, 77, 1, 1));
        assert_eq!(g.links.len(), 1);
        assert_eq!(g.link_name(&g.links[0]), "c0-c1");
        assert_eq!(g.find_link("c1-c0").unwrap(), 0);
    }

    #[test]
    fn inline_settings_and_mesh() {
        let g = parse_inline("3x2:rate=10mbit,delay=5ms,queue=20p,loss=1%").unwrap();
        assert_eq!(g.links.len(), 3);
        let p = &g.links[2].reverse;
        assert_eq!((p.rate_bps, p.delay_ns, p.queue, p.loss), (10_000_000, 5_000_000, QueueLimit::Packets(20), 0.01));
        let g = parse_inline("4+2").unwrap();
        assert_eq!(g.clusters[0].hosts.len(), 4);
        assert_eq!(g.clusters[1].hosts[1].name, "h5");
    }

    #[test]
    fn toml_spec() {
        let g = parse_toml(
            r#"
            cc = "cubic"
            [defaults]
            rate = "100mbit"
            [[cluster]]
            name = "a"
            hosts = ["a0", "a1"]
            [[cluster]]
            name = "b"
            size = 2
            [[cluster]]
            name = "c"
            size = 1
            [[link]]
            clusters = ["a", "b"]
            delay = "5ms"
            queue = "64kb"
            [link.reverse]
            rate = "10mbit"
            loss = 0.01
            [[link]]
            clusters = ["b", "c"]
            "#,
        )
        .unwrap();
        assert_eq!(g.cc.as_deref(), Some("cubic"));
        assert_eq!(g.clusters[1].hosts[0].name, "h2");
        let l = &g.links[0];
        assert_eq!(l.forward.rate_bps, 100_000_000);
        assert_eq!(l.reverse.rate_bps, 10_000_000);
        assert_eq!(l.reverse.delay_ns, 5_000_000);
        assert_eq!(l.forward.queue, QueueLimit::Bytes(64_000));
        assert_eq!(l.reverse.loss, 0.01);
        // a reaches c through b
        assert_eq!(g.next_hops(0), vec![None, Some(1), Some(1)]);
        assert_eq!(g.next_hops(2), vec![Some(1), Some(1), None]);
    }

    #[test]
    fn rejects_bad_specs() {
        assert!(parse_toml("[[cluster]]\nname = \"A\"\nsize = 2").is_err());
        assert!(parse_toml("[[cluster]]\nname = \"a\"\nsize = 2\n[[link]]\nclusters = [\"a\", \"z\"]").is_err());
        assert!(parse_toml("[[cluster]]\nname = \"a\"\nhosts = [\"x\", \"x\"]").is_err());
        assert!(parse_toml("bogus = 1").is_err());
        assert!(parse_inline("2x4:speed=1").is_err());
    }
}

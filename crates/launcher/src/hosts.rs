//! Host lists, hostfiles, and which rank runs where.

use std::net::{IpAddr, ToSocketAddrs, UdpSocket};

/// One host as the user named it, with its slot count and cluster if given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostEntry {
    pub name: String,
    pub slots: Option<u32>,
    /// The cluster (site) the host is in (`cluster=NAME` in a hostfile):
    /// its ranks get `GRIDMPI_CLUSTER=NAME`.
    pub cluster: Option<String>,
    /// At most this many ranks on the host (`max_slots=N`); without it a
    /// host takes more ranks than slots when there are more ranks than slots.
    pub max_slots: Option<u32>,
}

impl HostEntry {
    pub fn new(name: &str, slots: Option<u32>) -> HostEntry {
        HostEntry { name: name.to_string(), slots, cluster: None, max_slots: None }
    }
}

/// `h1,h2:4,h3` (the `-hosts` syntax).
pub fn parse_host_list(list: &str) -> Result<Vec<HostEntry>, String> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(parse_host_colon).collect()
}

fn parse_host_colon(item: &str) -> Result<HostEntry, String> {
    // host:slots, but leave IPv6 literals ("::1", "[fe80::1]") alone.
    if let Some((h, n)) = item.rsplit_once(':') {
        if !h.is_empty() && !h.contains(':') && n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() {
            check_host_name(h)?;
            let slots = positive(n).ok_or_else(|| format!("host {h:?} needs a positive slot count, got {n:?}"))?;
            return Ok(HostEntry::new(h, Some(slots)));
        }
    }
    let name = item.trim_matches(['[', ']']);
    check_host_name(name)?;
    Ok(HostEntry::new(name, None))
}

fn positive(n: &str) -> Option<u32> {
    n.parse::<u32>().ok().filter(|&n| n > 0)
}

/// A host name (`user@host` too, for ssh), an IPv4 address or an IPv6
/// literal: nothing a shell or the launch agent would read as something else.
fn check_host_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-._:%@".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!("{name:?} is not a host name"))
    }
}

/// A hostfile: one host per line, in the forms MPICH (`host`, `host:N`)
/// and Open MPI (`host slots=N max_slots=M`) use, optionally with
/// `cluster=NAME`; `#` starts a comment. Anything else on a line is an
/// error naming the line: a typo must not become a host.
pub fn parse_hostfile(text: &str) -> Result<Vec<HostEntry>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |e: String| format!("line {}: {e} (in {:?})", i + 1, line);
        out.push(parse_hostfile_line(line).map_err(at)?);
    }
    if out.is_empty() {
        return Err("no hosts in it".into());
    }
    Ok(out)
}

fn parse_hostfile_line(line: &str) -> Result<HostEntry, String> {
    let mut words = line.split_whitespace();
    let first = words.next().expect("non-empty line has a word");
    if first.contains('=') {
        return Err(format!("a line starts with the host name, not {first:?}"));
    }
    let mut entry = parse_host_colon(first)?;
    let colon_slots = entry.slots.is_some();
    let mut seen: Vec<&str> = Vec::new();
    for w in words {
        let Some((key, value)) = w.split_once('=') else {
            return Err(format!("{w:?} is not a hostfile word (after the host name: slots=N, max_slots=N, cluster=NAME)"));
        };
        let key = if key == "max-slots" { "max_slots" } else { key };
        if seen.contains(&key) {
            return Err(format!("{key} is given twice"));
        }
        seen.push(key);
        match key {
            "slots" | "cpu" => {
                if colon_slots {
                    return Err(format!("slots given twice (host:N and {w})"));
                }
                entry.slots = Some(positive(value).ok_or_else(|| format!("{w:?}: the slot count must be a positive number"))?);
            }
            "max_slots" => {
                entry.max_slots = Some(positive(value).ok_or_else(|| format!("{w:?}: max_slots must be a positive number"))?);
            }
            "cluster" => {
                if value.is_empty() || value.contains(',') {
                    return Err(format!("bad cluster name {w:?}"));
                }
                entry.cluster = Some(value.to_string());
            }
            _ => return Err(format!("unknown hostfile word {w:?} (known: slots=N, max_slots=N, cluster=NAME)")),
        }
    }
    if let (Some(s), Some(m)) = (entry.slots, entry.max_slots) {
        if m < s {
            return Err(format!("max_slots={m} is less than slots={s}"));
        }
    }
    Ok(entry)
}

/// A distinct machine of the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The name to reach it by (as given; "localhost" for this machine
    /// when no host was named).
    pub name: String,
    pub local: bool,
    /// Slots from the host list (1 per mention when not given).
    pub slots: u32,
    /// The most ranks it takes (`max_slots`), `None` for no limit.
    pub max_slots: Option<u32>,
    pub cluster: Option<String>,
}

/// Merge host entries naming the same machine (every name of this machine
/// is one node), keeping first-mention order. Slots add up; so do
/// `max_slots`, unless a mention has none (then there is no limit).
/// A host named twice with different clusters is an error.
pub fn nodes_from_entries(entries: &[HostEntry], is_local: &dyn Fn(&str) -> bool) -> Result<Vec<Node>, String> {
    let mut nodes: Vec<Node> = Vec::new();
    for e in entries {
        let local = is_local(&e.name);
        let slots = e.slots.unwrap_or(1);
        match nodes.iter_mut().find(|n| if local { n.local } else { n.name == e.name }) {
            Some(n) => {
                n.slots += slots;
                n.max_slots = n.max_slots.zip(e.max_slots).map(|(a, b)| a + b);
                match (&n.cluster, &e.cluster) {
                    (Some(a), Some(b)) if a != b => {
                        return Err(format!("host {} is given in two clusters, {a} and {b}", e.name));
                    }
                    (None, Some(b)) => n.cluster = Some(b.clone()),
                    _ => {}
                }
            }
            None => nodes.push(Node { name: e.name.clone(), local, slots, max_slots: e.max_slots, cluster: e.cluster.clone() }),
        }
    }
    Ok(nodes)
}

/// How ranks are spread over the hosts (`--map-by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MapBy {
    /// Fill each host's slots in order, then the next host.
    #[default]
    Slot,
    /// One rank per host in turn.
    Node,
}

/// Parse a `--map-by` value: `slot` or `node`, the units Open MPI and
/// MPICH know (`core`, `socket`, `numa`, `hwthread`, ...: they fill a host
/// before the next, as `slot` does; within a host `--bind-to` says which
/// CPUs a rank gets), or `ppr:N:node` (N ranks per host, as `-ppn N`).
/// Open MPI's modifiers `oversubscribe`, `nooversubscribe` and `span` are
/// accepted. Returns the policy and the ranks per host `ppr` asked for.
pub fn parse_map_by(value: &str) -> Result<(MapBy, Option<u32>), String> {
    let lower = value.to_ascii_lowercase();
    let mut parts = lower.split(':');
    let unit = parts.next().unwrap_or("");
    let mut ppn = None;
    let map = match unit {
        "slot" | "slots" | "core" | "cores" | "socket" | "sockets" | "package" | "numa" | "hwthread" | "hwthreads" | "l3cache"
        | "board" => MapBy::Slot,
        "node" | "nodes" => MapBy::Node,
        "ppr" => {
            let n = parts.next().and_then(positive);
            let per = parts.next();
            match (n, per) {
                (Some(n), Some("node")) => ppn = Some(n),
                _ => return Err(format!("--map-by {value}: ppr is written ppr:N:node (N ranks per host)")),
            }
            MapBy::Slot
        }
        _ => return Err(format!("--map-by {value}: expected slot, node, core, socket, numa, hwthread or ppr:N:node")),
    };
    for m in parts {
        if m.starts_with("pe=") {
            return Err(format!("--map-by {value}: pe= (several CPUs per rank) is not supported; use --bind-to socket or numa"));
        }
        if !matches!(m, "oversubscribe" | "nooversubscribe" | "span") {
            return Err(format!("--map-by {value}: unknown modifier {m:?} (known: oversubscribe, span)"));
        }
    }
    Ok((map, ppn))
}

/// Place `n` ranks on nodes. `Slot`: fill each node's slots (or `ppn`
/// per node) in order, and go round again when every slot is taken;
/// `Node`: one rank per node in turn. A node never gets more than its
/// `max_slots`. Returns the node index of each rank.
pub fn place(nodes: &[Node], n: u32, ppn: Option<u32>, map: MapBy) -> Result<Vec<u32>, String> {
    let mut out = Vec::with_capacity(n as usize);
    if nodes.is_empty() {
        return Ok(out);
    }
    let mut placed = vec![0u32; nodes.len()];
    while out.len() < n as usize {
        let before = out.len();
        for (i, node) in nodes.iter().enumerate() {
            let block = match map {
                MapBy::Slot => ppn.unwrap_or(node.slots).max(1),
                MapBy::Node => 1,
            };
            for _ in 0..block {
                if out.len() == n as usize || node.max_slots.is_some_and(|m| placed[i] >= m) {
                    break;
                }
                out.push(i as u32);
                placed[i] += 1;
            }
        }
        if out.len() == before {
            let cap: u32 = nodes.iter().filter_map(|n| n.max_slots).sum();
            return Err(format!("{n} ranks do not fit on the hosts: they take at most {cap} (max_slots in the hostfile)"));
        }
    }
    Ok(out)
}

/// Whether `name` is this machine: localhost, our host name, or a name
/// resolving to an address of one of our interfaces.
pub fn is_local_host(name: &str) -> bool {
    let name = name.trim();
    if name.is_empty() || name == "localhost" || name == "localhost.localdomain" {
        return true;
    }
    let me = crate::sys::hostname();
    let short = |s: &str| s.split('.').next().unwrap_or(s).to_string();
    if name == me || (short(name) == short(&me) && (name.contains('.') != me.contains('.'))) {
        return true;
    }
    if let Ok(ip) = name.parse::<IpAddr>() {
        return address_is_local(ip);
    }
    match (name, 0u16).to_socket_addrs() {
        Ok(addrs) => addrs.map(|a| a.ip()).any(address_is_local),
        Err(_) => false,
    }
}

fn address_is_local(ip: IpAddr) -> bool {
    if ip.is_loopback() {
        return true;
    }
    // Binding succeeds only for an address of this machine.
    UdpSocket::bind((ip, 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists() {
        let h = parse_host_list("a,b:4, c ,::1").unwrap();
        assert_eq!(h[0], HostEntry::new("a", None));
        assert_eq!(h[1], HostEntry::new("b", Some(4)));
        assert_eq!(h[2].name, "c");
        assert_eq!(h[3], HostEntry::new("::1", None));
        assert!(parse_host_list("a:0").is_err());
        assert!(parse_host_list("a;rm").unwrap_err().contains("not a host name"));
        assert!(parse_host_list("-oProxyCommand=x").unwrap_err().contains("not a host name"));
        assert_eq!(parse_host_list("me@b:2").unwrap()[0], HostEntry::new("me@b", Some(2)));
    }

    #[test]
    fn hostfiles() {
        let text = "# cluster A\nnode1\nnode2:2\nnode3 slots=4 max_slots=8\n\n  node4  # trailing\n";
        let h = parse_hostfile(text).unwrap();
        let got: Vec<_> = h.iter().map(|e| (e.name.as_str(), e.slots, e.max_slots)).collect();
        assert_eq!(
            got,
            vec![("node1", None, None), ("node2", Some(2), None), ("node3", Some(4), Some(8)), ("node4", None, None)]
        );
        assert!(parse_hostfile("# nothing\n").is_err());
        assert!(parse_hostfile("n slots=x\n").is_err());
        let h = parse_hostfile("a slots=2 cluster=siteA\nb cluster=siteB\n").unwrap();
        assert_eq!((h[0].cluster.as_deref(), h[1].cluster.as_deref()), (Some("siteA"), Some("siteB")));
        assert!(parse_hostfile("a cluster=\n").is_err());
        // Older spellings.
        let h = parse_hostfile("x cpu=3\ny max-slots=2\n10.0.0.1:2\n").unwrap();
        assert_eq!((h[0].slots, h[1].max_slots, h[2].slots), (Some(3), Some(2), Some(2)));
    }

    #[test]
    fn a_bad_hostfile_line_is_an_error_naming_the_line() {
        let e = parse_hostfile("good\nthis is bad\n").unwrap_err();
        assert!(e.starts_with("line 2: ") && e.contains("\"is\"") && e.contains("this is bad"), "{e}");
        let e = parse_hostfile("a\n\n# c\nb slot=2\n").unwrap_err();
        assert!(e.starts_with("line 4: unknown hostfile word \"slot=2\""), "{e}");
        for (text, want) in [
            ("slots=2\n", "starts with the host name"),
            ("a:2 slots=3\n", "slots given twice"),
            ("a slots=2 slots=3\n", "given twice"),
            ("a slots=4 max_slots=2\n", "less than"),
            ("a max_slots=0\n", "positive"),
            ("a|b\n", "not a host name"),
        ] {
            let e = parse_hostfile(text).unwrap_err();
            assert!(e.starts_with("line 1: ") && e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn clusters_of_nodes() {
        let local = |_: &str| false;
        let nodes = nodes_from_entries(&parse_hostfile("a cluster=X\na\nb cluster=Y\n").unwrap(), &local).unwrap();
        assert_eq!(nodes[0].cluster.as_deref(), Some("X"));
        assert_eq!(nodes[0].slots, 2);
        assert_eq!(nodes[1].cluster.as_deref(), Some("Y"));
        let e = nodes_from_entries(&parse_hostfile("a cluster=X\na cluster=Y\n").unwrap(), &local).unwrap_err();
        assert!(e.contains("two clusters"), "{e}");
    }

    #[test]
    fn placement_fills_slots_then_wraps() {
        let local = |n: &str| n == "me";
        let nodes = nodes_from_entries(&parse_host_list("a:2,b:2").unwrap(), &local).unwrap();
        assert_eq!(place(&nodes, 6, None, MapBy::Slot).unwrap(), vec![0, 0, 1, 1, 0, 0]);
        assert_eq!(place(&nodes, 3, Some(1), MapBy::Slot).unwrap(), vec![0, 1, 0]);
        // Every name of this machine is one node.
        let nodes = nodes_from_entries(&parse_host_list("me:2,b,me").unwrap(), &local).unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!((nodes[0].local, nodes[0].slots), (true, 3));
        // Duplicate lines add slots.
        let nodes = nodes_from_entries(&parse_hostfile("x\nx\ny\n").unwrap(), &local).unwrap();
        assert_eq!(place(&nodes, 3, None, MapBy::Slot).unwrap(), vec![0, 0, 1]);
    }

    #[test]
    fn placement_by_node_and_limits() {
        let local = |_: &str| false;
        let nodes = nodes_from_entries(&parse_host_list("a:2,b:2,c:2").unwrap(), &local).unwrap();
        assert_eq!(place(&nodes, 5, None, MapBy::Node).unwrap(), vec![0, 1, 2, 0, 1]);
        let nodes = nodes_from_entries(&parse_hostfile("a slots=1 max_slots=2\nb slots=1\n").unwrap(), &local).unwrap();
        assert_eq!(place(&nodes, 5, None, MapBy::Slot).unwrap(), vec![0, 1, 0, 1, 1], "a stops at its max_slots");
        let nodes = nodes_from_entries(&parse_hostfile("a max_slots=1\nb slots=2 max_slots=2\n").unwrap(), &local).unwrap();
        let e = place(&nodes, 4, None, MapBy::Node).unwrap_err();
        assert!(e.contains("4 ranks do not fit") && e.contains("at most 3"), "{e}");
    }

    #[test]
    fn map_by_values() {
        assert_eq!(parse_map_by("slot").unwrap(), (MapBy::Slot, None));
        assert_eq!(parse_map_by("node").unwrap(), (MapBy::Node, None));
        assert_eq!(parse_map_by("core").unwrap(), (MapBy::Slot, None));
        assert_eq!(parse_map_by("socket:span").unwrap(), (MapBy::Slot, None));
        assert_eq!(parse_map_by("node:OVERSUBSCRIBE").unwrap(), (MapBy::Node, None));
        assert_eq!(parse_map_by("ppr:2:node").unwrap(), (MapBy::Slot, Some(2)));
        for bad in ["diagonal", "ppr:2:socket", "core:pe=2", "slot:sideways"] {
            let e = parse_map_by(bad).unwrap_err();
            assert!(e.starts_with(&format!("--map-by {bad}:")), "{e}");
        }
    }

    #[test]
    fn local_names() {
        assert!(is_local_host("localhost"));
        assert!(is_local_host("127.0.0.1"));
        assert!(is_local_host(&crate::sys::hostname()));
        assert!(!is_local_host("no-such-host.invalid"));
        assert!(!is_local_host("192.0.2.1")); // TEST-NET-1, never ours
    }
}

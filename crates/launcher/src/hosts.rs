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
}

/// `h1,h2:4,h3` (the `-hosts` syntax).
pub fn parse_host_list(list: &str) -> Result<Vec<HostEntry>, String> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(parse_host_colon).collect()
}

fn parse_host_colon(item: &str) -> Result<HostEntry, String> {
    // host:slots, but leave IPv6 literals ("::1", "[fe80::1]") alone.
    if let Some((h, n)) = item.rsplit_once(':') {
        if !h.is_empty() && !h.contains(':') && n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() {
            let slots: u32 = n.parse().map_err(|_| format!("bad slot count in {item:?}"))?;
            if slots == 0 {
                return Err(format!("host {h:?} has 0 slots"));
            }
            return Ok(HostEntry { name: h.to_string(), slots: Some(slots), cluster: None });
        }
    }
    Ok(HostEntry { name: item.trim_matches(['[', ']']).to_string(), slots: None, cluster: None })
}

/// A hostfile: one host per line, `host`, `host:N`, or `host slots=N`,
/// optionally with `cluster=NAME` (`max_slots=` and other words are
/// ignored); `#` starts a comment.
pub fn parse_hostfile(text: &str) -> Result<Vec<HostEntry>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().expect("non-empty line has a word");
        let mut entry = parse_host_colon(first).map_err(|e| format!("line {}: {e}", i + 1))?;
        for w in words {
            if let Some(n) = w.strip_prefix("slots=").or_else(|| w.strip_prefix("cpu=")) {
                let slots: u32 = n.parse().map_err(|_| format!("line {}: bad slot count {w:?}", i + 1))?;
                if slots == 0 {
                    return Err(format!("line {}: host {:?} has 0 slots", i + 1, entry.name));
                }
                entry.slots = Some(slots);
            } else if let Some(c) = w.strip_prefix("cluster=") {
                if c.is_empty() || c.contains(',') {
                    return Err(format!("line {}: bad cluster name {w:?}", i + 1));
                }
                entry.cluster = Some(c.to_string());
            }
        }
        out.push(entry);
    }
    if out.is_empty() {
        return Err("no hosts in it".into());
    }
    Ok(out)
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
    pub cluster: Option<String>,
}

/// Merge host entries naming the same machine (every name of this machine
/// is one node), keeping first-mention order.
/// A host named twice with different clusters is an error.
pub fn nodes_from_entries(entries: &[HostEntry], is_local: &dyn Fn(&str) -> bool) -> Result<Vec<Node>, String> {
    let mut nodes: Vec<Node> = Vec::new();
    for e in entries {
        let local = is_local(&e.name);
        let slots = e.slots.unwrap_or(1);
        match nodes.iter_mut().find(|n| if local { n.local } else { n.name == e.name }) {
            Some(n) => {
                n.slots += slots;
                match (&n.cluster, &e.cluster) {
                    (Some(a), Some(b)) if a != b => {
                        return Err(format!("host {} is given in two clusters, {a} and {b}", e.name));
                    }
                    (None, Some(b)) => n.cluster = Some(b.clone()),
                    _ => {}
                }
            }
            None => nodes.push(Node { name: e.name.clone(), local, slots, cluster: e.cluster.clone() }),
        }
    }
    Ok(nodes)
}

/// Place `n` ranks on nodes: fill each node's slots (or `ppn` per node)
/// in order, and go round again when every slot is taken.
/// Returns the node index of each rank.
pub fn place(nodes: &[Node], n: u32, ppn: Option<u32>) -> Vec<u32> {
    let mut out = Vec::with_capacity(n as usize);
    if nodes.is_empty() {
        return out;
    }
    while out.len() < n as usize {
        for (i, node) in nodes.iter().enumerate() {
            let block = ppn.unwrap_or(node.slots).max(1);
            for _ in 0..block {
                if out.len() == n as usize {
                    return out;
                }
                out.push(i as u32);
            }
        }
    }
    out
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
        assert_eq!(h[0], HostEntry { name: "a".into(), slots: None, cluster: None });
        assert_eq!(h[1], HostEntry { name: "b".into(), slots: Some(4), cluster: None });
        assert_eq!(h[2].name, "c");
        assert_eq!(h[3], HostEntry { name: "::1".into(), slots: None, cluster: None });
        assert!(parse_host_list("a:0").is_err());
    }

    #[test]
    fn hostfiles() {
        let text = "# cluster A\nnode1\nnode2:2\nnode3 slots=4 max_slots=8\n\n  node4  # trailing\n";
        let h = parse_hostfile(text).unwrap();
        let got: Vec<_> = h.iter().map(|e| (e.name.as_str(), e.slots)).collect();
        assert_eq!(got, vec![("node1", None), ("node2", Some(2)), ("node3", Some(4)), ("node4", None)]);
        assert!(parse_hostfile("# nothing\n").is_err());
        assert!(parse_hostfile("n slots=x\n").is_err());
        let h = parse_hostfile("a slots=2 cluster=siteA\nb cluster=siteB\n").unwrap();
        assert_eq!((h[0].cluster.as_deref(), h[1].cluster.as_deref()), (Some("siteA"), Some("siteB")));
        assert!(parse_hostfile("a cluster=\n").is_err());
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
        assert_eq!(place(&nodes, 6, None), vec![0, 0, 1, 1, 0, 0]);
        assert_eq!(place(&nodes, 3, Some(1)), vec![0, 1, 0]);
        // Every name of this machine is one node.
        let nodes = nodes_from_entries(&parse_host_list("me:2,b,me").unwrap(), &local).unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!((nodes[0].local, nodes[0].slots), (true, 3));
        // Duplicate lines add slots.
        let nodes = nodes_from_entries(&parse_hostfile("x\nx\ny\n").unwrap(), &local).unwrap();
        assert_eq!(place(&nodes, 3, None), vec![0, 0, 1]);
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

//! Private clusters: only a cluster's gateway host may be reached across
//! the WAN (a site whose nodes have private addresses). The emulator drops
//! every other packet to or from the cluster's hosts, as a site's border
//! would; the gateway is the cluster's first host.

use crate::spec::Grid;

/// The private clusters' address blocks (the first three octets of their
/// /24) and gateways.
#[derive(Clone, Debug, Default)]
pub struct Private {
    nets: Vec<([u8; 3], [u8; 4])>,
}

impl Private {
    pub fn of(grid: &Grid) -> Private {
        let nets = grid
            .clusters
            .iter()
            .filter(|c| c.private)
            .map(|c| {
                let g = c.gateway_host().ip.octets();
                ([g[0], g[1], g[2]], g)
            })
            .collect();
        Private { nets }
    }

    /// Whether the IPv4 packet `pkt` must not cross: it comes from or goes
    /// to a host of a private cluster other than its gateway.
    pub fn blocks(&self, pkt: &[u8]) -> bool {
        if self.nets.is_empty() || pkt.len() < 20 || pkt[0] >> 4 != 4 {
            return false;
        }
        let hidden = |a: &[u8]| self.nets.iter().any(|(net, gw)| a[..3] == net[..] && a != gw);
        hidden(&pkt[12..16]) || hidden(&pkt[16..20])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p
    }

    #[test]
    fn only_the_gateway_of_a_private_cluster_is_reachable() {
        let mut grid = crate::spec::parse_inline("2x4").unwrap();
        grid.clusters[1].private = true;
        let p = Private::of(&grid);
        let (a0, b_gw, b1) = ([10, 77, 0, 1], [10, 77, 1, 1], [10, 77, 1, 2]);
        assert!(!p.blocks(&packet(a0, b_gw)));
        assert!(!p.blocks(&packet(b_gw, a0)));
        assert!(p.blocks(&packet(a0, b1)));
        assert!(p.blocks(&packet(b1, a0)));
        assert!(!p.blocks(&[0x60; 40]), "not IPv4: not ours to judge");
        assert!(!Private::of(&crate::spec::parse_inline("2x4").unwrap()).blocks(&packet(a0, b1)));
    }
}

//! Two-phase collective I/O, the plan: which aggregator does which part
//! of the file, and which pieces of each rank's access go to which one.
//!
//! A collective access whose pieces are small and interleaved across
//! ranks (the usual strided views) becomes, at each of a few aggregators,
//! one large contiguous access over its *file domain*: the span
//! `lo .. hi` the members' accesses cover, cut into equal contiguous
//! domains. Ranks send their pieces (or their requests) to the domain's
//! aggregator, which writes (or reads) the domain in large chunks. The
//! exchange itself is in `shell/file.rs`; this module is pure.

/// The file domains: `n` contiguous parts of `lo .. hi`, cut at multiples
/// of `align` where the span allows, in order; some may be empty.
pub fn domains(lo: u64, hi: u64, n: usize, align: u64) -> Vec<(u64, u64)> {
    let n = n.max(1) as u64;
    let span = hi.saturating_sub(lo);
    let mut per = span.div_ceil(n).max(1);
    if align > 1 && per > align {
        per = per.div_ceil(align) * align;
    }
    (0..n)
        .map(|k| {
            let s = (lo + k * per).min(hi);
            let e = (lo + (k + 1) * per).min(hi);
            (s, e)
        })
        .collect()
}

/// One piece of a rank's access after cutting at domain boundaries: the
/// domain (aggregator index) it belongs to, its file offset and length,
/// and where its bytes are in the rank's data (the access's stream order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub domain: usize,
    pub off: u64,
    pub len: u64,
    pub at: u64,
}

/// Cut `ranges` (file offset, length; increasing) at the domains' edges.
pub fn pieces(ranges: &[(u64, u64)], domains: &[(u64, u64)]) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut at = 0u64;
    let mut d = 0usize;
    for &(off, len) in ranges {
        let (mut o, end) = (off, off + len);
        while o < end {
            while d + 1 < domains.len() && o >= domains[d].1 {
                d += 1;
            }
            let stop = if d + 1 < domains.len() { end.min(domains[d].1) } else { end };
            out.push(Piece { domain: d, off: o, len: stop - o, at: at + (o - off) });
            o = stop;
        }
        at += len;
    }
    out
}

/// The pieces of each round: round `r` covers, in every domain, the `cb`
/// bytes from the domain's start plus `r * cb` (an aggregator holds at
/// most `cb` bytes of data at a time). Every member computes the same
/// number of rounds, from the domains alone.
pub fn rounds(pieces: &[Piece], domains: &[(u64, u64)], cb: u64) -> Vec<Vec<Piece>> {
    let cb = cb.max(1);
    let n = domains.iter().map(|d| (d.1 - d.0).div_ceil(cb)).max().unwrap_or(0).max(1) as usize;
    let mut out = vec![Vec::new(); n];
    for p in pieces {
        let d0 = domains[p.domain].0;
        let (mut off, end) = (p.off, p.off + p.len);
        while off < end {
            let r = ((off - d0) / cb) as usize;
            let stop = end.min(d0 + (r as u64 + 1) * cb);
            out[r].push(Piece { domain: p.domain, off, len: stop - off, at: p.at + (off - p.off) });
            off = stop;
        }
    }
    out
}

/// Which rank aggregates domain `k` of `n`, in a group of `size`: spread
/// out, so on hosts filled rank by rank they land on different hosts.
pub fn aggregator(k: usize, n: usize, size: usize) -> usize {
    k * size / n.max(1)
}

/// Which rank aggregates each domain when the members span clusters.
/// `bytes[r][k]`: the bytes of member r's access in domain k; `cluster[r]`
/// and `host[r]`: where member r runs. Aggregators are the first member
/// of each host (in each cluster). A domain goes to the cluster that holds most of its
/// bytes (to `only`, when it names a cluster of the members, whatever the
/// bytes: the cluster that holds the file, so each byte crosses the WAN
/// once), and within it to the aggregator with the fewest domains so far.
pub fn cluster_aggregators(bytes: &[Vec<u64>], cluster: &[u32], host: &[i64], only: Option<u32>) -> Vec<usize> {
    let ndom = bytes.first().map_or(0, |b| b.len());
    let nclusters = cluster.iter().copied().max().map_or(0, |c| c as usize + 1);
    let mut leaders: Vec<Vec<usize>> = vec![Vec::new(); nclusters];
    // A host in two clusters (only ever made up, as in tests) leads in both.
    let mut seen = Vec::new();
    for (r, h) in host.iter().enumerate() {
        if !seen.contains(&(*h, cluster[r])) {
            seen.push((*h, cluster[r]));
            leaders[cluster[r] as usize].push(r);
        }
    }
    let only = only.filter(|&c| (c as usize) < nclusters && !leaders[c as usize].is_empty());
    let mut load = vec![0usize; bytes.len()];
    (0..ndom)
        .map(|k| {
            let c = only.map(|c| c as usize).unwrap_or_else(|| {
                let mut per = vec![0u64; nclusters];
                for (r, b) in bytes.iter().enumerate() {
                    per[cluster[r] as usize] += b[k];
                }
                // The most bytes; ties to the lowest cluster.
                (0..nclusters).filter(|&c| !leaders[c].is_empty()).max_by_key(|&c| (per[c], std::cmp::Reverse(c))).unwrap_or(0)
            });
            let &a = leaders[c].iter().min_by_key(|&&r| (load[r], r)).expect("a cluster with members has a leader");
            load[a] += 1;
            a
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_cover_the_span_in_order() {
        assert_eq!(domains(0, 10, 3, 1), vec![(0, 4), (4, 8), (8, 10)]);
        assert_eq!(domains(100, 100 + 3 * 4096 + 1, 2, 4096), vec![(100, 100 + 8192), (100 + 8192, 100 + 3 * 4096 + 1)]);
        assert_eq!(domains(5, 6, 4, 1), vec![(5, 6), (6, 6), (6, 6), (6, 6)]);
    }

    #[test]
    fn pieces_are_cut_at_domain_edges_and_keep_their_data_position() {
        let doms = domains(0, 12, 3, 1); // (0,4) (4,8) (8,12)
        let p = pieces(&[(2, 4), (9, 2)], &doms);
        assert_eq!(
            p,
            vec![
                Piece { domain: 0, off: 2, len: 2, at: 0 },
                Piece { domain: 1, off: 4, len: 2, at: 2 },
                Piece { domain: 2, off: 9, len: 2, at: 4 },
            ]
        );
        assert!(pieces(&[], &doms).is_empty());
    }

    #[test]
    fn rounds_cut_each_domain_into_buffers() {
        let doms = domains(0, 20, 2, 1); // (0,10) (10,20)
        let ps = pieces(&[(3, 9), (15, 5)], &doms);
        let r = rounds(&ps, &doms, 4);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0], vec![Piece { domain: 0, off: 3, len: 1, at: 0 }, Piece { domain: 1, off: 10, len: 2, at: 7 }]);
        assert_eq!(r[1], vec![Piece { domain: 0, off: 4, len: 4, at: 1 }, Piece { domain: 1, off: 15, len: 3, at: 9 }]);
        assert_eq!(r[2], vec![Piece { domain: 0, off: 8, len: 2, at: 5 }, Piece { domain: 1, off: 18, len: 2, at: 12 }]);
        assert_eq!(rounds(&[], &doms, 100).len(), 1);
    }

    #[test]
    fn cluster_aggregators_keep_each_domain_in_the_cluster_of_its_bytes() {
        // Ranks 0-3 on hosts 10,10,11,11 of cluster 0; 4-7 on hosts 12..15 of cluster 1.
        let cluster = [0, 0, 0, 0, 1, 1, 1, 1];
        let host = [10, 10, 11, 11, 12, 13, 14, 15];
        // Four domains: the first two written by cluster 0, the others by cluster 1
        // (rank 5 also has a little of domain 0).
        let mut bytes = vec![vec![0u64; 4]; 8];
        for r in 0..4 {
            bytes[r][r / 2] = 100;
        }
        for r in 4..8 {
            bytes[r][2 + (r - 4) / 2] = 100;
        }
        bytes[5][0] = 10;
        let a = cluster_aggregators(&bytes, &cluster, &host, None);
        assert_eq!(a, vec![0, 2, 4, 5]);
        // The file is at cluster 1: every domain there, spread over its hosts.
        let a = cluster_aggregators(&bytes, &cluster, &host, Some(1));
        assert_eq!(a, vec![4, 5, 6, 7]);
        // A cluster no member is in is ignored.
        assert_eq!(cluster_aggregators(&bytes, &cluster, &host, Some(7)), vec![0, 2, 4, 5]);
        // One host made two clusters: each has its leader.
        assert_eq!(cluster_aggregators(&[vec![5, 0], vec![0, 5]], &[0, 1], &[3, 3], None), vec![0, 1]);
        // More domains than hosts: the load is shared.
        let bytes = vec![vec![1u64; 3]; 8];
        assert_eq!(cluster_aggregators(&bytes, &cluster, &host, Some(0)), vec![0, 2, 0]);
    }

    #[test]
    fn aggregators_spread_over_the_ranks() {
        assert_eq!((0..2).map(|k| aggregator(k, 2, 8)).collect::<Vec<_>>(), vec![0, 4]);
        assert_eq!(aggregator(0, 1, 5), 0);
    }
}

//! The one table that chooses a collective's algorithm.
//!
//! [`Input`] holds what every rank knows identically (the choice must be
//! the same on every rank, so per-rank values such as alltoallv counts are
//! never inputs). [`Selector`] holds the user's per-collective overrides
//! (the `GRIDMPI_COLL_<NAME>` settings); an override that cannot run on
//! the given input (a ring allreduce on a non-commutative operation, Bruck
//! on unequal blocks) falls back to the table's choice.
//!
//! To add an input (say, the number of clusters a communicator spans, for
//! cluster-aware algorithms), add a field to [`Input`] and use it in the
//! rules below; nothing else changes.

/// What the choice depends on.
#[derive(Clone, Copy, Debug)]
pub struct Input {
    /// Processes in the communicator.
    pub procs: i32,
    /// Bytes each rank contributes (bcast: the message; gather, scatter,
    /// allgather, alltoall: one block; reductions: the vector; allgatherv:
    /// the average block; alltoallv/w: 0, as their counts differ by rank).
    pub bytes: u64,
    /// Items in the vector (reductions): splitting algorithms need
    /// count >= procs to pay off.
    pub count: u64,
    /// The reduction operation is commutative (true when there is none).
    pub commutative: bool,
    /// All blocks have the same size (false for the v and w forms).
    pub equal_blocks: bool,
    /// Clusters the communicator spans: above 1, the cluster-aware (WAN)
    /// algorithms of coll/wan.rs apply.
    pub clusters: u32,
    /// Bytes a member may put into the communicator's shared-memory area
    /// (coll/host.rs) in one operation: 0 when there is none (members on
    /// several hosts, a nonblocking or persistent collective, or the operation cannot be
    /// combined there). Every rank has the same area, so all agree.
    pub host_slot: u64,
}

impl Input {
    pub fn new(procs: i32, bytes: u64) -> Input {
        Input { procs, bytes, count: bytes, commutative: true, equal_blocks: true, clusters: 1, host_slot: 0 }
    }

    fn pow2(&self) -> bool {
        self.procs & (self.procs - 1) == 0
    }

    /// Each member's part, `bytes`, fits the shared area's slot.
    fn host_fits(&self, bytes: u64) -> bool {
        self.host_slot > 0 && self.procs > 1 && bytes <= self.host_slot
    }

    /// A bcast of `bytes` goes through the area in pieces of a slot
    /// (coll/host.rs `bcast`), up to [`HOST_BCAST_PIECES`] of them.
    fn host_bcast_fits(&self, bytes: u64) -> bool {
        self.host_fits(0) && bytes <= self.host_slot.saturating_mul(HOST_BCAST_PIECES)
    }
}

/// Declares an algorithm enum with its setting names ("auto" is not one).
macro_rules! algorithms {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($variant),+ }

        impl $name {
            /// Every algorithm's setting name.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn from_name(s: &str) -> Option<$name> {
                match s { $($text => Some($name::$variant),)+ _ => None }
            }
        }
    };
}

algorithms!(
    /// Barrier.
    Barrier { Dissemination = "dissemination", Tree = "tree", Wan = "wan", Host = "host" }
);
algorithms!(
    /// Bcast.
    Bcast { Binomial = "binomial", ScatterAllgather = "scatter_allgather", Pipeline = "pipeline", Wan = "wan", Host = "host" }
);
algorithms!(
    /// Gather and scatter (the v forms: linear, or wan across clusters).
    Rooted { Linear = "linear", Binomial = "binomial", Wan = "wan", Host = "host" }
);
algorithms!(
    /// Allgather and allgatherv.
    Allgather { Ring = "ring", RecursiveDoubling = "recursive_doubling", Bruck = "bruck", Wan = "wan", Host = "host" }
);
algorithms!(
    /// Alltoall, alltoallv, alltoallw.
    Alltoall { Pairwise = "pairwise", Scattered = "scattered", Bruck = "bruck", Wan = "wan", Host = "host" }
);
algorithms!(
    /// Reduce.
    Reduce { Binomial = "binomial", Rabenseifner = "rabenseifner", Wan = "wan", Host = "host" }
);
algorithms!(
    /// Allreduce.
    Allreduce { RecursiveDoubling = "recursive_doubling", Rabenseifner = "rabenseifner", Ring = "ring", ReduceBcast = "reduce_bcast", Wan = "wan", Host = "host" }
);
algorithms!(
    /// Reduce_scatter and reduce_scatter_block.
    ReduceScatter { RecursiveHalving = "recursive_halving", Ring = "ring", ReduceScatterv = "reduce_scatterv", Wan = "wan", Host = "host" }
);
algorithms!(
    /// Scan and exscan.
    Scan { RecursiveDoubling = "recursive_doubling", Linear = "linear" }
);

/// Bytes of each piece of a pipelined broadcast.
pub const BCAST_SEGMENT: u64 = 64 * 1024;

/// Default bound on the peers an alltoall exchanges with at once.
pub const ALLTOALL_INFLIGHT: i32 = 8;

// ---- the table ------------------------------------------------------------------

const KIB: u64 = 1024;

// Within one host, the shared-memory area (coll/host.rs) comes first when
// the data fits its slots: no message carries data and every member runs
// once per operation, which matters most when ranks outnumber cores.

// Across clusters, the cluster-aware algorithms (coll/wan.rs) come first:
// they cross the WAN the fewest times and pace its flows. Reductions use
// them for commutative operations only (their combination order follows
// clusters, not ranks).

fn barrier_table(i: &Input) -> Barrier {
    if i.clusters > 1 {
        return Barrier::Wan;
    }
    if i.host_fits(0) {
        return Barrier::Host;
    }
    Barrier::Dissemination
}

/// The most slot-sized pieces a bcast takes through the area; above, the
/// messages' pipelining wins (8 ranks on 2 cores, 16 KiB slots: see
/// bench/FINDINGS.md item 12).
pub const HOST_BCAST_PIECES: u64 = 4;

fn bcast_table(i: &Input) -> Bcast {
    if i.clusters > 1 {
        return Bcast::Wan;
    }
    if i.host_bcast_fits(i.bytes) {
        return Bcast::Host;
    }
    if i.bytes < 12 * KIB || i.procs <= 4 {
        Bcast::Binomial
    } else if i.bytes < 2048 * KIB {
        Bcast::ScatterAllgather
    } else {
        Bcast::Pipeline
    }
}

fn rooted_table(i: &Input) -> Rooted {
    if i.clusters > 1 {
        return Rooted::Wan;
    }
    if !i.equal_blocks {
        return Rooted::Linear;
    }
    if i.bytes <= 2 * KIB && i.procs > 2 {
        Rooted::Binomial
    } else {
        Rooted::Linear
    }
}

fn allgather_table(i: &Input) -> Allgather {
    if i.clusters > 1 {
        return Allgather::Wan;
    }
    if i.equal_blocks && i.host_fits(i.bytes) {
        return Allgather::Host;
    }
    let total = i.bytes.saturating_mul(i.procs as u64);
    if !i.equal_blocks {
        if total < 80 * KIB {
            Allgather::RecursiveDoubling
        } else {
            Allgather::Ring
        }
    } else if total < 80 * KIB && i.pow2() {
        Allgather::RecursiveDoubling
    } else if total < 80 * KIB {
        Allgather::Bruck
    } else {
        Allgather::Ring
    }
}

fn alltoall_table(i: &Input) -> Alltoall {
    if i.clusters > 1 {
        return Alltoall::Wan;
    }
    if i.equal_blocks && i.host_fits(i.bytes.saturating_mul(i.procs as u64)) {
        return Alltoall::Host;
    }
    if i.equal_blocks && i.bytes <= 256 && i.procs >= 8 {
        Alltoall::Bruck
    } else if i.equal_blocks && i.bytes >= 32 * KIB {
        Alltoall::Pairwise
    } else {
        Alltoall::Scattered
    }
}

fn reduce_table(i: &Input) -> Reduce {
    if i.clusters > 1 && i.commutative {
        return Reduce::Wan;
    }
    if i.host_fits(i.bytes) {
        return Reduce::Host;
    }
    if i.bytes <= 2 * KIB || i.count < i.procs as u64 || i.procs <= 2 {
        Reduce::Binomial
    } else {
        Reduce::Rabenseifner
    }
}

fn allreduce_table(i: &Input) -> Allreduce {
    if i.clusters > 1 && i.commutative {
        return Allreduce::Wan;
    }
    if i.host_fits(i.bytes) {
        return Allreduce::Host;
    }
    if i.bytes <= 2 * KIB || i.count < i.procs as u64 || i.procs <= 2 {
        Allreduce::RecursiveDoubling
    } else if i.commutative && !i.pow2() && i.bytes >= 1024 * KIB {
        Allreduce::Ring
    } else {
        Allreduce::Rabenseifner
    }
}

fn reduce_scatter_table(i: &Input) -> ReduceScatter {
    if i.clusters > 1 && i.commutative {
        return ReduceScatter::Wan;
    }
    if i.host_fits(i.bytes) {
        return ReduceScatter::Host;
    }
    if !i.commutative {
        ReduceScatter::ReduceScatterv
    } else if i.bytes < 512 * KIB {
        ReduceScatter::RecursiveHalving
    } else {
        ReduceScatter::Ring
    }
}

/// Up to this many ranks a scan passes its prefix along the ranks: each
/// rank waits only for the one before it, so calls in a row overlap (8
/// ranks on 2 CPUs: 4.4 us a call against 23 with recursive doubling,
/// which makes every rank wait for partners in every round; 2 ranks: 0.82
/// against 1.1). Above, the rounds' log p beats the chain's p hops.
pub const SCAN_LINEAR_MAX_PROCS: i32 = 16;

fn scan_table(i: &Input) -> Scan {
    if i.procs <= SCAN_LINEAR_MAX_PROCS {
        Scan::Linear
    } else {
        Scan::RecursiveDoubling
    }
}

/// Gather or scatter: the forced choice if it can run, else the table's.
fn rooted(forced: Option<Rooted>, i: &Input) -> Rooted {
    match forced {
        Some(Rooted::Binomial) if !i.equal_blocks => rooted_table(i),
        Some(Rooted::Wan) if i.clusters < 2 => rooted_table(i),
        Some(a) => a,
        None => rooted_table(i),
    }
}

// ---- overrides ------------------------------------------------------------------------

/// The user's forced choices (None: the table decides) and tunables.
#[derive(Clone, Debug)]
pub struct Selector {
    pub barrier: Option<Barrier>,
    pub bcast: Option<Bcast>,
    pub gather: Option<Rooted>,
    pub scatter: Option<Rooted>,
    pub allgather: Option<Allgather>,
    pub alltoall: Option<Alltoall>,
    pub reduce: Option<Reduce>,
    pub allreduce: Option<Allreduce>,
    pub reduce_scatter: Option<ReduceScatter>,
    pub scan: Option<Scan>,
    /// Peers in flight in the scattered alltoall.
    pub alltoall_inflight: i32,
}

impl Default for Selector {
    fn default() -> Selector {
        Selector {
            barrier: None,
            bcast: None,
            gather: None,
            scatter: None,
            allgather: None,
            alltoall: None,
            reduce: None,
            allreduce: None,
            reduce_scatter: None,
            scan: None,
            alltoall_inflight: ALLTOALL_INFLIGHT,
        }
    }
}

/// The setting that overrides each collective, and its algorithm names.
pub const SETTINGS: &[(&str, &[&str])] = &[
    ("GRIDMPI_COLL_BARRIER", Barrier::NAMES),
    ("GRIDMPI_COLL_BCAST", Bcast::NAMES),
    ("GRIDMPI_COLL_GATHER", Rooted::NAMES),
    ("GRIDMPI_COLL_SCATTER", Rooted::NAMES),
    ("GRIDMPI_COLL_ALLGATHER", Allgather::NAMES),
    ("GRIDMPI_COLL_ALLTOALL", Alltoall::NAMES),
    ("GRIDMPI_COLL_REDUCE", Reduce::NAMES),
    ("GRIDMPI_COLL_ALLREDUCE", Allreduce::NAMES),
    ("GRIDMPI_COLL_REDUCE_SCATTER", ReduceScatter::NAMES),
    ("GRIDMPI_COLL_SCAN", Scan::NAMES),
];

fn parse<T>(value: &str, from_name: fn(&str) -> Option<T>, setting: &str) -> Result<Option<T>, String> {
    if value.is_empty() || value == "auto" {
        return Ok(None);
    }
    from_name(value).map(Some).ok_or_else(|| format!("{setting}: unknown algorithm {value:?}"))
}

impl Selector {
    /// Read the overrides through `get(setting name)` (the text of a
    /// `GRIDMPI_COLL_*` setting of [`SETTINGS`]; "auto" or "" for none).
    /// Tunables keep their defaults; the caller sets them.
    pub fn from_settings(get: impl Fn(&str) -> String) -> Result<Selector, String> {
        let g = |n: &str| get(n);
        Ok(Selector {
            barrier: parse(&g("GRIDMPI_COLL_BARRIER"), Barrier::from_name, "GRIDMPI_COLL_BARRIER")?,
            bcast: parse(&g("GRIDMPI_COLL_BCAST"), Bcast::from_name, "GRIDMPI_COLL_BCAST")?,
            gather: parse(&g("GRIDMPI_COLL_GATHER"), Rooted::from_name, "GRIDMPI_COLL_GATHER")?,
            scatter: parse(&g("GRIDMPI_COLL_SCATTER"), Rooted::from_name, "GRIDMPI_COLL_SCATTER")?,
            allgather: parse(&g("GRIDMPI_COLL_ALLGATHER"), Allgather::from_name, "GRIDMPI_COLL_ALLGATHER")?,
            alltoall: parse(&g("GRIDMPI_COLL_ALLTOALL"), Alltoall::from_name, "GRIDMPI_COLL_ALLTOALL")?,
            reduce: parse(&g("GRIDMPI_COLL_REDUCE"), Reduce::from_name, "GRIDMPI_COLL_REDUCE")?,
            allreduce: parse(&g("GRIDMPI_COLL_ALLREDUCE"), Allreduce::from_name, "GRIDMPI_COLL_ALLREDUCE")?,
            reduce_scatter: parse(&g("GRIDMPI_COLL_REDUCE_SCATTER"), ReduceScatter::from_name, "GRIDMPI_COLL_REDUCE_SCATTER")?,
            scan: parse(&g("GRIDMPI_COLL_SCAN"), Scan::from_name, "GRIDMPI_COLL_SCAN")?,
            alltoall_inflight: ALLTOALL_INFLIGHT,
        })
    }

    pub fn barrier(&self, i: &Input) -> Barrier {
        match self.barrier {
            Some(Barrier::Wan) if i.clusters < 2 => barrier_table(i),
            Some(Barrier::Host) if !i.host_fits(0) => barrier_table(i),
            Some(a) => a,
            None => barrier_table(i),
        }
    }

    pub fn bcast(&self, i: &Input) -> Bcast {
        match self.bcast {
            Some(Bcast::Wan) if i.clusters < 2 => bcast_table(i),
            Some(Bcast::Host) if !i.host_bcast_fits(i.bytes) => bcast_table(i),
            Some(a) => a,
            None => bcast_table(i),
        }
    }

    /// Gather; `i.equal_blocks` false (gatherv): linear, or wan across
    /// clusters (binomial needs equal blocks).
    /// Gather: through the host area when every block fits a slot (each
    /// member writes its block, the root reads them all: 8 ranks on 2 CPUs
    /// wait for one release instead of a binomial tree's scheduling).
    pub fn gather(&self, i: &Input) -> Rooted {
        let host = i.clusters < 2 && i.equal_blocks && i.host_fits(i.bytes);
        match self.gather {
            None if host => Rooted::Host,
            Some(Rooted::Host) if !host => rooted_table(i),
            f => rooted(f, i),
        }
    }

    /// Scatter (there is no host-area scatter: forcing one takes the table).
    pub fn scatter(&self, i: &Input) -> Rooted {
        match self.scatter {
            Some(Rooted::Host) => rooted_table(i),
            f => rooted(f, i),
        }
    }

    pub fn allgather(&self, i: &Input) -> Allgather {
        match self.allgather {
            Some(Allgather::Wan) if i.clusters < 2 => allgather_table(i),
            Some(Allgather::Host) if !(i.equal_blocks && i.host_fits(i.bytes)) => allgather_table(i),
            Some(a) => a,
            None => allgather_table(i),
        }
    }

    pub fn alltoall(&self, i: &Input) -> Alltoall {
        match self.alltoall {
            Some(Alltoall::Bruck) if !i.equal_blocks => alltoall_table(i),
            Some(Alltoall::Wan) if i.clusters < 2 => alltoall_table(i),
            Some(Alltoall::Host) if !(i.equal_blocks && i.host_fits(i.bytes.saturating_mul(i.procs as u64))) => alltoall_table(i),
            Some(a) => a,
            None => alltoall_table(i),
        }
    }

    pub fn reduce(&self, i: &Input) -> Reduce {
        match self.reduce {
            Some(Reduce::Wan) if i.clusters < 2 || !i.commutative => reduce_table(i),
            Some(Reduce::Host) if !i.host_fits(i.bytes) => reduce_table(i),
            Some(a) => a,
            None => reduce_table(i),
        }
    }

    pub fn allreduce(&self, i: &Input) -> Allreduce {
        match self.allreduce {
            Some(Allreduce::Ring) if !i.commutative => allreduce_table(i),
            Some(Allreduce::Wan) if i.clusters < 2 || !i.commutative => allreduce_table(i),
            Some(Allreduce::Host) if !i.host_fits(i.bytes) => allreduce_table(i),
            Some(a) => a,
            None => allreduce_table(i),
        }
    }

    pub fn reduce_scatter(&self, i: &Input) -> ReduceScatter {
        match self.reduce_scatter {
            Some(ReduceScatter::Ring | ReduceScatter::RecursiveHalving) if !i.commutative => reduce_scatter_table(i),
            Some(ReduceScatter::Wan) if i.clusters < 2 || !i.commutative => reduce_scatter_table(i),
            Some(ReduceScatter::Host) if !i.host_fits(i.bytes) => reduce_scatter_table(i),
            Some(a) => a,
            None => reduce_scatter_table(i),
        }
    }

    pub fn scan(&self, i: &Input) -> Scan {
        self.scan.unwrap_or_else(|| scan_table(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_and_fall_back_when_invalid() {
        let s = Selector::from_settings(|n| match n {
            "GRIDMPI_COLL_ALLREDUCE" => "ring".into(),
            "GRIDMPI_COLL_ALLTOALL" => "bruck".into(),
            _ => "auto".into(),
        })
        .unwrap();
        let mut i = Input::new(8, 1 << 20);
        assert_eq!(s.allreduce(&i), Allreduce::Ring);
        i.commutative = false;
        assert_ne!(s.allreduce(&i), Allreduce::Ring);
        assert_eq!(s.alltoall(&i), Alltoall::Bruck);
        i.equal_blocks = false;
        assert_ne!(s.alltoall(&i), Alltoall::Bruck);
        assert!(Selector::from_settings(|n| if n == "GRIDMPI_COLL_BCAST" { "nope".into() } else { String::new() }).is_err());
    }

    #[test]
    fn the_table_picks_by_size() {
        let s = Selector::default();
        assert_eq!(s.bcast(&Input::new(16, 100)), Bcast::Binomial);
        assert_eq!(s.bcast(&Input::new(16, 100_000)), Bcast::ScatterAllgather);
        assert_eq!(s.allreduce(&Input::new(16, 8)), Allreduce::RecursiveDoubling);
        assert_eq!(s.allreduce(&Input::new(16, 1 << 20)), Allreduce::Rabenseifner);
        assert_eq!(s.alltoall(&Input::new(16, 8)), Alltoall::Bruck);
        let mut nc = Input::new(16, 1 << 20);
        nc.commutative = false;
        assert_eq!(s.reduce_scatter(&nc), ReduceScatter::ReduceScatterv);
    }

    #[test]
    fn gather_goes_through_the_area_when_a_block_fits_and_scatter_never() {
        let s = Selector::default();
        let i = Input { host_slot: 16 * KIB, ..Input::new(8, 1024) };
        assert_eq!(s.gather(&i), Rooted::Host);
        assert_ne!(s.gather(&Input { equal_blocks: false, ..i }), Rooted::Host);
        assert_ne!(s.gather(&Input { bytes: 16 * KIB + 1, ..i }), Rooted::Host);
        assert_ne!(s.scatter(&i), Rooted::Host);
        let forced = Selector { scatter: Some(Rooted::Host), gather: Some(Rooted::Host), ..Selector::default() };
        assert_ne!(forced.scatter(&i), Rooted::Host);
        assert_ne!(forced.gather(&Input::new(8, 1024)), Rooted::Host, "no area");
    }

    #[test]
    fn reduce_scatter_goes_through_the_area_when_the_vector_fits() {
        let s = Selector::default();
        let i = Input { host_slot: 16 * KIB, ..Input::new(8, 8 * KIB) };
        assert_eq!(s.reduce_scatter(&i), ReduceScatter::Host);
        assert_eq!(s.reduce_scatter(&Input { commutative: false, ..i }), ReduceScatter::Host, "rank order there");
        assert_ne!(s.reduce_scatter(&Input { bytes: 16 * KIB + 1, ..i }), ReduceScatter::Host);
        assert_ne!(s.reduce_scatter(&Input { clusters: 2, ..i }), ReduceScatter::Host);
    }

    #[test]
    fn bcast_goes_through_the_area_in_up_to_four_pieces() {
        let s = Selector::default();
        for bytes in [0, 8, 16 * KIB, 16 * KIB + 1, 64 * KIB] {
            assert_eq!(s.bcast(&Input { host_slot: 16 * KIB, ..Input::new(8, bytes) }), Bcast::Host, "{bytes} B");
        }
        assert_ne!(s.bcast(&Input { host_slot: 16 * KIB, ..Input::new(8, 64 * KIB + 1) }), Bcast::Host);
        assert_ne!(s.bcast(&Input::new(8, 8)), Bcast::Host, "no area");
        assert_ne!(s.bcast(&Input { host_slot: 16 * KIB, clusters: 2, ..Input::new(8, 8) }), Bcast::Host);
    }

    #[test]
    fn within_a_host_the_shared_area_wins_when_the_data_fits() {
        let s = Selector::default();
        let i = Input { host_slot: 16 * KIB, ..Input::new(8, 1024) };
        assert_eq!(s.barrier(&i), Barrier::Host);
        assert_eq!(s.allreduce(&i), Allreduce::Host);
        assert_eq!(s.bcast(&i), Bcast::Host);
        assert_eq!(s.allgather(&i), Allgather::Host);
        assert_eq!(s.alltoall(&i), Alltoall::Host);
        // 8 blocks of 4 KiB do not fit one 16 KiB slot; v forms never use it.
        assert_ne!(s.alltoall(&Input { bytes: 4 * KIB, ..i }), Alltoall::Host);
        assert_ne!(s.allgather(&Input { equal_blocks: false, ..i }), Allgather::Host);
        assert_ne!(s.allreduce(&Input { bytes: 64 * KIB, ..i }), Allreduce::Host);
        // No area, or one process: never; forcing it falls back.
        assert_ne!(s.barrier(&Input::new(8, 0)), Barrier::Host);
        assert_ne!(s.barrier(&Input { procs: 1, ..i }), Barrier::Host);
        let f = Selector::from_settings(|n| if n == "GRIDMPI_COLL_BARRIER" { "host".into() } else { "auto".into() }).unwrap();
        assert_eq!(f.barrier(&Input::new(8, 0)), Barrier::Dissemination);
        // Forcing another algorithm wins over the area.
        let g = Selector::from_settings(|n| if n == "GRIDMPI_COLL_BARRIER" { "tree".into() } else { "auto".into() }).unwrap();
        assert_eq!(g.barrier(&i), Barrier::Tree);
    }

    #[test]
    fn across_clusters_the_wan_algorithms_win() {
        let s = Selector::default();
        let mut i = Input { clusters: 2, ..Input::new(8, 100) };
        assert_eq!(s.gather(&i), Rooted::Wan);
        assert_eq!(s.scatter(&i), Rooted::Wan);
        assert_eq!(s.allgather(&i), Allgather::Wan);
        assert_eq!(s.reduce_scatter(&i), ReduceScatter::Wan);
        i.equal_blocks = false;
        assert_eq!(s.gather(&i), Rooted::Wan);
        assert_eq!(s.allgather(&i), Allgather::Wan);
        i.commutative = false;
        assert_eq!(s.reduce_scatter(&i), ReduceScatter::ReduceScatterv);
        // Forced wan within one cluster, and binomial for gatherv, fall back.
        let f = Selector::from_settings(|n| match n {
            "GRIDMPI_COLL_GATHER" => "binomial".into(),
            "GRIDMPI_COLL_SCATTER" | "GRIDMPI_COLL_ALLGATHER" | "GRIDMPI_COLL_REDUCE_SCATTER" => "wan".into(),
            _ => "auto".into(),
        })
        .unwrap();
        let one = Input { equal_blocks: false, ..Input::new(8, 100) };
        assert_eq!(f.gather(&one), Rooted::Linear);
        assert_eq!(f.scatter(&one), Rooted::Linear);
        assert_ne!(f.allgather(&one), Allgather::Wan);
        assert_ne!(f.reduce_scatter(&one), ReduceScatter::Wan);
    }
}

//! Process topologies (MPI 4.1 chapter 8) as data and arithmetic: which
//! rank sits at which Cartesian coordinates, who a process's neighbours
//! are, how to split a number of processes into a balanced grid. The shell
//! attaches a [`Topo`] to a communicator; the neighbourhood collectives
//! take their neighbour lists from here.

/// Cartesian, graph or distributed-graph topology attached to a communicator.
#[derive(Clone, Debug)]
pub enum Topo {
    Cart { dims: Vec<i32>, periods: Vec<bool> },
    Graph { index: Vec<i32>, edges: Vec<i32> },
    DistGraph { sources: Vec<i32>, sourceweights: Option<Vec<i32>>, dests: Vec<i32>, destweights: Option<Vec<i32>> },
}

impl Topo {
    /// Coordinates of `rank` in a Cartesian grid (row-major: the last
    /// dimension varies fastest).
    pub fn coords_of(dims: &[i32], rank: i32) -> Vec<i32> {
        let mut c = vec![0; dims.len()];
        let mut r = rank;
        for i in (0..dims.len()).rev() {
            c[i] = r % dims[i];
            r /= dims[i];
        }
        c
    }

    /// The rank at `coords`, wrapping periodic dimensions; None when a
    /// coordinate is off a non-periodic dimension.
    pub fn rank_at(dims: &[i32], periods: &[bool], coords: &[i32]) -> Option<i32> {
        let mut r = 0i32;
        for i in 0..dims.len() {
            let mut c = coords[i];
            if periods[i] {
                c = c.rem_euclid(dims[i]);
            } else if !(0..dims[i]).contains(&c) {
                return None;
            }
            r = r * dims[i] + c;
        }
        Some(r)
    }

    /// (source, destination) of a shift by `disp` along `dim` from `rank`;
    /// None off a non-periodic edge (MPI_PROC_NULL to the caller).
    pub fn shift(dims: &[i32], periods: &[bool], rank: i32, dim: usize, disp: i32) -> (Option<i32>, Option<i32>) {
        let c = Topo::coords_of(dims, rank);
        let at = |d: i32| {
            let mut cc = c.clone();
            cc[dim] += d;
            Topo::rank_at(dims, periods, &cc)
        };
        (at(-disp), at(disp))
    }
}

/// `MPI_Cart_sub`: the subgrid of `rank` keeping the dimensions marked in
/// `keep`, and its colour (processes that agree on the dropped coordinates
/// share a subgrid, so the colour numbers those coordinates).
pub fn cart_sub(dims: &[i32], periods: &[bool], rank: i32, keep: &[bool]) -> (i32, Topo) {
    let c = Topo::coords_of(dims, rank);
    let mut color = 0;
    for i in 0..dims.len() {
        if !keep[i] {
            color = color * dims[i] + c[i];
        }
    }
    let kept = |i: &usize| keep[*i];
    let sub = Topo::Cart {
        dims: (0..dims.len()).filter(kept).map(|i| dims[i]).collect(),
        periods: (0..dims.len()).filter(kept).map(|i| periods[i]).collect(),
    };
    (color, sub)
}

/// `MPI_Dist_graph_create`'s edges (`sources[i]` has `degrees[i]` edges,
/// to the next entries of `dests`, weighted by `weights`) as what each
/// rank of `size` must learn: records (is_out, peer, weight), the source
/// of an edge learning an out-edge and its destination an in-edge.
pub fn dist_graph_records(size: i32, sources: &[i32], degrees: &[i32], dests: &[i32], weights: &[i32]) -> Vec<Vec<i32>> {
    let mut out: Vec<Vec<i32>> = vec![Vec::new(); size as usize];
    let mut k = 0;
    for (&s, &deg) in sources.iter().zip(degrees) {
        for _ in 0..deg {
            let (d, w) = (dests[k], weights[k]);
            out[s as usize].extend([1, d, w]);
            out[d as usize].extend([0, s, w]);
            k += 1;
        }
    }
    out
}

/// The distributed graph a rank holds once it has the records every rank
/// sent it ([`dist_graph_records`]), in the order they came.
pub fn dist_graph_from_records(records: &[i32], weighted: bool) -> Topo {
    let (mut ins, mut inw, mut outs, mut outw) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for rec in records.chunks(3) {
        if rec[0] == 1 {
            outs.push(rec[1]);
            outw.push(rec[2]);
        } else {
            ins.push(rec[1]);
            inw.push(rec[2]);
        }
    }
    Topo::DistGraph { sources: ins, sourceweights: weighted.then_some(inw), dests: outs, destweights: weighted.then_some(outw) }
}

/// The neighbours of `rank` in a graph topology (MPI_Graph_create's
/// `index` and `edges`).
pub fn graph_neighbors<'a>(index: &[i32], edges: &'a [i32], rank: i32) -> &'a [i32] {
    let r = rank as usize;
    let lo = if r == 0 { 0 } else { index[r - 1] as usize };
    &edges[lo..index[r] as usize]
}

/// `n` as a product of `free` factors as close to each other as possible,
/// in non-increasing order: of all such factorizations, the one whose
/// largest and smallest factors differ least (Träff and Lübbe's measure,
/// "Specification Guideline Violations by MPI_Dims_create", EuroMPI'15,
/// which MPICH's table of expected decompositions follows), then whose
/// smallest factor is largest, then whose second smallest is, and so on
/// (72 in 2 is 9 x 8, not 12 x 6; 5040 in 3 is 21 x 16 x 15, not
/// 20 x 18 x 14: both differ by 6, the first's smallest is larger).
pub fn balanced_dims(n: i32, free: usize) -> Vec<i32> {
    if free == 0 {
        return Vec::new();
    }
    let n = (n as i64).max(1);
    let mut divisors: Vec<i64> = (1..).take_while(|d| d * d <= n).filter(|d| n % d == 0).flat_map(|d| [d, n / d]).collect();
    divisors.sort_unstable();
    divisors.dedup();
    let mut search = DimsSearch { divisors: &divisors, best: None, cur: Vec::with_capacity(free) };
    search.first(n, free);
    search.best.expect("n itself and ones always factor n").into_iter().map(|f| f as i32).collect()
}

/// The depth-first search of [`balanced_dims`] over non-increasing
/// factorizations, pruned by the best difference found so far.
struct DimsSearch<'a> {
    /// The divisors of n, ascending.
    divisors: &'a [i64],
    best: Option<Vec<i64>>,
    cur: Vec<i64>,
}

impl DimsSearch<'_> {
    fn spread(f: &[i64]) -> i64 {
        f[0] - f[f.len() - 1]
    }

    /// Whether `a` beats `b`: a smaller difference, then larger factors
    /// from the smallest up.
    fn beats(a: &[i64], b: &[i64]) -> bool {
        match Self::spread(a).cmp(&Self::spread(b)) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => a.iter().rev().cmp(b.iter().rev()) == std::cmp::Ordering::Greater,
        }
    }

    fn best_spread(&self) -> Option<i64> {
        self.best.as_deref().map(Self::spread)
    }

    /// The largest factor, tried from the smallest possible up: the
    /// smallest factor is at most the k-th root of n, so a largest factor
    /// f differs from it by at least f - root.
    fn first(&mut self, n: i64, k: usize) {
        // The integer k-th root: the float's, corrected by one either way.
        let mut root = ((n as f64).powf(1.0 / k as f64) as i64).max(1);
        while root > 1 && root.saturating_pow(k as u32) > n {
            root -= 1;
        }
        while (root + 1).saturating_pow(k as u32) <= n {
            root += 1;
        }
        for i in 0..self.divisors.len() {
            let f = self.divisors[i];
            if f.saturating_pow(k as u32) < n {
                continue;
            }
            if self.best_spread().is_some_and(|b| f - root > b) {
                break;
            }
            self.cur.push(f);
            self.rest(n / f, k - 1, f);
            self.cur.pop();
        }
    }

    /// The factors after the first `cur.len()`, each at most `cap`, the
    /// largest first; those after f are at most f, so the difference is
    /// at least max - f.
    fn rest(&mut self, n: i64, k: usize, cap: i64) {
        if k == 0 {
            if n == 1 && self.best.as_deref().is_none_or(|b| Self::beats(&self.cur, b)) {
                self.best = Some(self.cur.clone());
            }
            return;
        }
        let max = self.cur[0];
        for i in (0..self.divisors.len()).rev() {
            let f = self.divisors[i];
            if f > cap || n % f != 0 {
                continue;
            }
            if f.saturating_pow(k as u32) < n || self.best_spread().is_some_and(|b| max - f > b) {
                break;
            }
            self.cur.push(f);
            self.rest(n / f, k - 1, f);
            self.cur.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_balanced() {
        assert_eq!(balanced_dims(12, 2), vec![4, 3]);
        assert_eq!(balanced_dims(16, 3), vec![4, 2, 2]);
        assert_eq!(balanced_dims(7, 2), vec![7, 1]);
        assert_eq!(balanced_dims(36, 2), vec![6, 6]);
        assert_eq!(balanced_dims(1, 3), vec![1, 1, 1]);
        assert_eq!(balanced_dims(72, 2), vec![9, 8]);
        assert_eq!(balanced_dims(72, 3), vec![6, 4, 3]);
        assert_eq!(balanced_dims(2 * 1_000_003, 2), vec![1_000_003, 2]);
        assert_eq!(balanced_dims(64, 6), vec![2, 2, 2, 2, 2, 2]);
        // Entries of MPICH's table of expected decompositions.
        assert_eq!(balanced_dims(5040, 3), vec![21, 16, 15]);
        assert_eq!(balanced_dims(19152, 3), vec![38, 24, 21]);
        assert_eq!(balanced_dims(7488, 3), vec![26, 18, 16]);
        assert_eq!(balanced_dims(84600, 4), vec![47, 15, 12, 10]);
        assert_eq!(balanced_dims(85680, 4), vec![21, 17, 16, 15]);
    }

    /// The search against every factorization, for small n.
    #[test]
    fn dims_search_finds_the_best_factorization() {
        fn all(n: i64, k: usize, cap: i64, cur: &mut Vec<i64>, out: &mut Vec<Vec<i64>>) {
            if k == 0 {
                if n == 1 {
                    out.push(cur.clone());
                }
                return;
            }
            for f in (1..=cap.min(n)).rev().filter(|f| n % f == 0) {
                cur.push(f);
                all(n / f, k - 1, f, cur, out);
                cur.pop();
            }
        }
        for n in 1..=1500i64 {
            for k in 1..=5 {
                let mut out = Vec::new();
                all(n, k, n, &mut Vec::new(), &mut out);
                let best = out.iter().fold(None::<&Vec<i64>>, |b, f| match b {
                    Some(b) if !DimsSearch::beats(f, b) => Some(b),
                    _ => Some(f),
                });
                let want: Vec<i32> = best.unwrap().iter().map(|&f| f as i32).collect();
                assert_eq!(balanced_dims(n as i32, k), want, "{n} in {k}");
            }
        }
    }

    #[test]
    fn cartesian_coordinates_round_trip() {
        let dims = [3, 4, 2];
        let periods = [true, false, true];
        for r in 0..24 {
            let c = Topo::coords_of(&dims, r);
            assert_eq!(Topo::rank_at(&dims, &periods, &c), Some(r));
        }
        assert_eq!(Topo::shift(&dims, &periods, 0, 1, 1), (None, Some(2)));
        assert_eq!(Topo::shift(&dims, &periods, 0, 0, 1), (Some(16), Some(8)));
    }

    #[test]
    fn a_cartesian_subgrid_is_numbered_by_the_dropped_coordinates() {
        // 2 x 3 x 2, keeping the middle dimension: rank 7 is (1, 0, 1).
        let (color, sub) = cart_sub(&[2, 3, 2], &[false, true, false], 7, &[false, true, false]);
        assert_eq!(color, 1 * 2 + 1);
        match sub {
            Topo::Cart { dims, periods } => assert_eq!((dims, periods), (vec![3], vec![true])),
            t => panic!("{t:?}"),
        }
        // Keeping nothing: every process is alone (its own colour).
        assert_eq!(cart_sub(&[2, 3], &[false, false], 4, &[false, false]).0, 4);
    }

    #[test]
    fn distributed_graph_edges_reach_both_ends() {
        // 0 -> 1 (weight 5), 0 -> 2 (6), 2 -> 1 (7), described by ranks 0 and 2.
        let recs = dist_graph_records(3, &[0, 2], &[2, 1], &[1, 2, 1], &[5, 6, 7]);
        assert_eq!(recs[0], vec![1, 1, 5, 1, 2, 6]);
        assert_eq!(recs[1], vec![0, 0, 5, 0, 2, 7]);
        assert_eq!(recs[2], vec![0, 0, 6, 1, 1, 7]);
        match dist_graph_from_records(&recs[1], true) {
            Topo::DistGraph { sources, sourceweights, dests, destweights } => {
                assert_eq!((sources, sourceweights), (vec![0, 2], Some(vec![5, 7])));
                assert_eq!((dests, destweights), (vec![], Some(vec![])));
            }
            t => panic!("{t:?}"),
        }
        match dist_graph_from_records(&recs[2], false) {
            Topo::DistGraph { sources, sourceweights, dests, .. } => assert_eq!((sources, sourceweights, dests), (vec![0], None, vec![1])),
            t => panic!("{t:?}"),
        }
    }

    #[test]
    fn graph_neighbors_come_from_index_and_edges() {
        // 0: {1, 2}, 1: {0}, 2: {0}
        let (index, edges) = ([2, 3, 4], [1, 2, 0, 0]);
        assert_eq!(graph_neighbors(&index, &edges, 0), &[1, 2]);
        assert_eq!(graph_neighbors(&index, &edges, 2), &[0]);
    }
}

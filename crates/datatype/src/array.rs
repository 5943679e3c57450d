//! `MPI_Type_create_subarray` and `MPI_Type_create_darray` (MPI 4.1 §5.1.3,
//! §5.1.4).
//!
//! Both select, per dimension, a set of indices of a global array of
//! `oldtype` elements, and the type map is the selected elements in array
//! memory order (row major for [`Order::C`], column major for
//! [`Order::Fortran`]), element `(i0, i1, ...)` at its offset in the global
//! array. As the standard defines both through `MPI_Type_create_resized`,
//! the result has sticky bounds `lb = 0`, `ub = (product of sizes) *
//! extent(oldtype)`.
//!
//! The indices a process owns in one dimension are always "`full` blocks of
//! `block` indices, `step` apart, then one shorter tail block" ([`DimSet`]),
//! so each dimension is one or two parts of the dataloop, however large the
//! array: nothing is flattened.

use std::sync::Arc;

use crate::datatype::{Bounds, Ctor, Datatype, Distrib, Order, Parts, Uniform, DISTRIBUTE_DFLT_DARG};
use crate::error::{fit, int_arg, non_negative, overflow, positive, ArgName, TypeError};
use crate::layout::{self, Node, SeqBuilder};

/// The indices one process selects in one dimension: `full` blocks of
/// `block` indices starting at `first`, `first + step`, ..., then `tail`
/// indices starting at `tail_start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DimSet {
    pub first: u64,
    pub full: u64,
    pub block: u64,
    pub step: u64,
    pub tail_start: u64,
    pub tail: u64,
}

impl DimSet {
    /// One block of `len` indices at `start`.
    fn range(start: u64, len: u64) -> DimSet {
        DimSet { first: start, full: u64::from(len > 0), block: len, step: 0, tail_start: 0, tail: 0 }
    }

    pub fn count(&self) -> u64 {
        self.full * self.block + self.tail
    }

    /// Lowest and highest selected index, if any.
    fn span(&self) -> Option<(u64, u64)> {
        if self.count() == 0 {
            return None;
        }
        let lo = if self.full > 0 && self.block > 0 { self.first } else { self.tail_start };
        let hi = if self.tail > 0 {
            self.tail_start + self.tail - 1
        } else {
            self.first + (self.full - 1) * self.step + self.block - 1
        };
        Some((lo, hi))
    }

    /// The indices a process at grid coordinate `coord` of `procs` owns of
    /// a dimension of `gsize` indices (darray), with distribution argument
    /// `darg` already resolved to a positive block size.
    fn distributed(distrib: Distrib, gsize: u64, procs: u64, coord: u64, darg: u64) -> DimSet {
        match distrib {
            Distrib::None => DimSet::range(0, gsize),
            Distrib::Block => {
                let start = coord.saturating_mul(darg).min(gsize);
                DimSet::range(start, darg.min(gsize - start))
            }
            Distrib::Cyclic => {
                // Blocks j = coord, coord + procs, ... with j * darg < gsize.
                let blocks = gsize.div_ceil(darg);
                if coord >= blocks {
                    return DimSet::range(0, 0);
                }
                let mine = (blocks - coord - 1) / procs + 1;
                let last = coord + (mine - 1) * procs;
                let last_len = darg.min(gsize - last * darg);
                let step = darg * procs;
                if last_len == darg {
                    DimSet { first: coord * darg, full: mine, block: darg, step, tail_start: 0, tail: 0 }
                } else {
                    DimSet {
                        first: coord * darg,
                        full: mine - 1,
                        block: darg,
                        step,
                        tail_start: last * darg,
                        tail: last_len,
                    }
                }
            }
        }
    }
}

const LAYOUT: &str = "a displacement of the new datatype";

/// Builds the type for the selected indices `sets[d]` of each dimension `d`
/// of an array of `sizes` elements of `old` in `order`.
fn build(ctor: Ctor, large: bool, sizes: &[u64], sets: &[DimSet], order: Order, old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
    let ndims = sizes.len();
    // Byte stride of each dimension.
    let mut strides = vec![0i128; ndims];
    let mut acc = old.extent as i128;
    let dims_fast_to_slow: Vec<usize> = match order {
        Order::C => (0..ndims).rev().collect(),
        Order::Fortran => (0..ndims).collect(),
    };
    for &d in &dims_fast_to_slow {
        strides[d] = acc;
        acc = acc.checked_mul(sizes[d] as i128).ok_or(overflow("extent of the new datatype"))?;
    }
    let total_extent = fit(acc, "extent of the new datatype")?;
    let copies = sets.iter().try_fold(1u64, |a, s| a.checked_mul(s.count()));
    let copies = copies.ok_or(overflow("size of the new datatype"))?;
    let size = copies as u128 * old.size as u128;
    if size > i64::MAX as u128 {
        return Err(overflow("size of the new datatype"));
    }
    // Every stride and offset below is at most the total extent in size.
    let mut node = old.node.clone();
    let mut lo_off: i128 = 0;
    let mut hi_off: i128 = 0;
    for &d in &dims_fast_to_slow {
        let set = sets[d];
        let s = strides[d];
        let at = |i: u64| fit(i as i128 * s, LAYOUT);
        let block = layout::repeat(0, set.block, node.as_ref(), at(1)?).map_err(|_| overflow(LAYOUT))?;
        let mut b = SeqBuilder::new();
        // The step only matters between blocks (and is then below the size).
        let step = if set.full > 1 { set.step } else { 0 };
        b.push(at(set.first)?, set.full, block.as_ref(), at(step)?).map_err(|_| overflow(LAYOUT))?;
        b.push(at(set.tail_start)?, set.tail, node.as_ref(), at(1)?).map_err(|_| overflow(LAYOUT))?;
        node = b.finish().map_err(|_| overflow(LAYOUT))?;
        if let Some((lo, hi)) = set.span() {
            let (a, b) = (lo as i128 * s, hi as i128 * s);
            lo_off += a.min(b);
            hi_off += a.max(b);
        }
    }
    let has_data = copies > 0 && old.elements > 0;
    let mut bounds = Bounds { lb_mark: Some(0), ub_mark: Some(total_extent), soft: None, data: None };
    if copies > 0 {
        let inner = old.bounds.shifted(lo_off, hi_off)?;
        bounds.soft = inner.soft;
        bounds.data = inner.data;
    }
    debug_assert_eq!(node.as_ref().map_or(0, |n: &Arc<Node>| n.size()), size as u64);
    Datatype::assemble(Parts {
        ctor,
        large,
        size: size as u64,
        bounds,
        align: if has_data { old.align } else { 1 },
        elements: if has_data { copies * old.elements } else { 0 },
        uniform: if has_data { old.uniform } else { Uniform::Empty },
        uniform_pair: if has_data { old.uniform_pair } else { Uniform::Empty },
        sig: old.sig.repeat(copies),
        node,
    })
}

fn check_ndims(ndims: usize) -> Result<(), TypeError> {
    if ndims == 0 {
        return Err(TypeError::OutOfRange { arg: ArgName::new("ndims"), value: 0, reason: "it must be at least 1" });
    }
    Ok(())
}

fn check_len(arg: &'static str, expected: usize, got: usize) -> Result<(), TypeError> {
    if expected != got {
        return Err(TypeError::LengthMismatch { arg, expected, got });
    }
    Ok(())
}

impl Datatype {
    /// `MPI_Type_create_subarray`: the `subsizes` block starting at
    /// `starts` of an array of `sizes` elements of `old`. `ndims` is the
    /// length of the slices (at least 1). A zero subsize gives a type with
    /// no data (MPICH accepts it too).
    pub fn subarray(sizes: &[i64], subsizes: &[i64], starts: &[i64], order: Order, old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
        let ndims = sizes.len();
        check_ndims(ndims)?;
        check_len("subsizes", ndims, subsizes.len())?;
        check_len("starts", ndims, starts.len())?;
        let mut usizes = Vec::with_capacity(ndims);
        let mut sets = Vec::with_capacity(ndims);
        for d in 0..ndims {
            let size = positive(ArgName::at("sizes", d), sizes[d])?;
            let sub = non_negative(ArgName::at("subsizes", d), subsizes[d])?;
            let start = non_negative(ArgName::at("starts", d), starts[d])?;
            if sub > size {
                return Err(TypeError::OutOfRange {
                    arg: ArgName::at("subsizes", d),
                    value: subsizes[d],
                    reason: "it must not exceed sizes[d]",
                });
            }
            if start > size - sub {
                return Err(TypeError::OutOfRange {
                    arg: ArgName::at("starts", d),
                    value: starts[d],
                    reason: "starts[d] + subsizes[d] must not exceed sizes[d]",
                });
            }
            usizes.push(size);
            sets.push(DimSet::range(start, sub));
        }
        let large = [sizes, subsizes, starts].iter().any(|a| a.iter().any(|&v| i32::try_from(v).is_err()));
        let ctor = Ctor::Subarray {
            sizes: sizes.into(),
            subsizes: subsizes.into(),
            starts: starts.into(),
            order,
            old: old.clone(),
        };
        build(ctor, large, &usizes, &sets, order, old)
    }

    /// `MPI_Type_create_darray`: the part of a `gsizes` array of `old`
    /// that process `rank` of `size` owns, distributed over a process grid
    /// of `psizes` (processes numbered in row-major order, whatever
    /// `order`). `dargs[d]` is a block size or [`DISTRIBUTE_DFLT_DARG`]
    /// (block: `ceil(gsize / psize)`, cyclic: 1; ignored for
    /// [`Distrib::None`], whose `psizes[d]` must be 1).
    #[allow(clippy::too_many_arguments)]
    pub fn darray(
        size: i64,
        rank: i64,
        gsizes: &[i64],
        distribs: &[Distrib],
        dargs: &[i64],
        psizes: &[i64],
        order: Order,
        old: &Arc<Datatype>,
    ) -> Result<Datatype, TypeError> {
        let ndims = gsizes.len();
        check_ndims(ndims)?;
        check_len("distribs", ndims, distribs.len())?;
        check_len("dargs", ndims, dargs.len())?;
        check_len("psizes", ndims, psizes.len())?;
        let nprocs = positive(ArgName::new("size"), size)?;
        int_arg(ArgName::new("size"), size)?;
        if rank < 0 || rank >= size {
            return Err(TypeError::OutOfRange { arg: ArgName::new("rank"), value: rank, reason: "it must be in 0..size" });
        }
        let mut grid: u128 = 1;
        for (d, &p) in psizes.iter().enumerate() {
            positive(ArgName::at("psizes", d), p)?;
            int_arg(ArgName::at("psizes", d), p)?;
            grid *= p as u128;
            if grid > nprocs as u128 {
                break;
            }
        }
        if grid != nprocs as u128 {
            return Err(TypeError::OutOfRange {
                arg: ArgName::new("size"),
                value: size,
                reason: "it must equal the product of psizes",
            });
        }
        // Coordinates of `rank` in the row-major process grid.
        let mut coords = vec![0u64; ndims];
        let mut r = rank as u64;
        for d in (0..ndims).rev() {
            let p = psizes[d] as u64;
            coords[d] = r % p;
            r /= p;
        }
        let mut usizes = Vec::with_capacity(ndims);
        let mut sets = Vec::with_capacity(ndims);
        for d in 0..ndims {
            let g = positive(ArgName::at("gsizes", d), gsizes[d])?;
            let p = psizes[d] as u64;
            let darg = dargs[d];
            int_arg(ArgName::at("dargs", d), darg)?;
            let block = match distribs[d] {
                Distrib::None => {
                    if p != 1 {
                        return Err(TypeError::OutOfRange {
                            arg: ArgName::at("psizes", d),
                            value: psizes[d],
                            reason: "it must be 1 for MPI_DISTRIBUTE_NONE",
                        });
                    }
                    g
                }
                Distrib::Block => {
                    if darg == DISTRIBUTE_DFLT_DARG {
                        g.div_ceil(p)
                    } else {
                        let b = positive(ArgName::at("dargs", d), darg)?;
                        if (b as u128) * (p as u128) < g as u128 {
                            return Err(TypeError::OutOfRange {
                                arg: ArgName::at("dargs", d),
                                value: darg,
                                reason: "dargs[d] * psizes[d] must be at least gsizes[d] for MPI_DISTRIBUTE_BLOCK",
                            });
                        }
                        b
                    }
                }
                Distrib::Cyclic => {
                    if darg == DISTRIBUTE_DFLT_DARG {
                        1
                    } else {
                        positive(ArgName::at("dargs", d), darg)?
                    }
                }
            };
            usizes.push(g);
            sets.push(DimSet::distributed(distribs[d], g, p, coords[d], block));
        }
        let large = gsizes.iter().any(|&v| i32::try_from(v).is_err());
        let ctor = Ctor::Darray {
            size,
            rank,
            gsizes: gsizes.into(),
            distribs: distribs.into(),
            dargs: dargs.into(),
            psizes: psizes.into(),
            order,
            old: old.clone(),
        };
        build(ctor, large, &usizes, &sets, order, old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indices(s: &DimSet) -> Vec<u64> {
        let mut v = Vec::new();
        for k in 0..s.full {
            for i in 0..s.block {
                v.push(s.first + k * s.step + i);
            }
        }
        for i in 0..s.tail {
            v.push(s.tail_start + i);
        }
        v
    }

    #[test]
    fn cyclic_sets_match_a_naive_deal() {
        for g in 1..30u64 {
            for p in 1..6u64 {
                for d in 1..7u64 {
                    for c in 0..p {
                        let s = DimSet::distributed(Distrib::Cyclic, g, p, c, d);
                        let naive: Vec<u64> = (0..g).filter(|i| (i / d) % p == c).collect();
                        assert_eq!(indices(&s), naive, "g={g} p={p} d={d} c={c}");
                        assert_eq!(s.count(), naive.len() as u64);
                        assert_eq!(s.span(), naive.first().map(|&lo| (lo, *naive.last().unwrap())));
                    }
                }
            }
        }
    }

    #[test]
    fn block_sets_match_a_naive_split() {
        for g in 1..30u64 {
            for p in 1..6u64 {
                let d = g.div_ceil(p);
                for c in 0..p {
                    let s = DimSet::distributed(Distrib::Block, g, p, c, d);
                    let naive: Vec<u64> = (0..g).filter(|i| i / d == c).collect();
                    assert_eq!(indices(&s), naive, "g={g} p={p} c={c}");
                }
            }
        }
    }
}

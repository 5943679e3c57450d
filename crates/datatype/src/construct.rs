//! The derived datatype constructors of MPI 4.1 §5.1.2-§5.1.8 (contiguous,
//! vector, hvector, indexed, hindexed, indexed_block, hindexed_block,
//! struct, resized, dup) and their deprecated MPI-1 forms. Subarray and
//! darray are in `array.rs`.
//!
//! Every constructor validates its arguments (non-negative counts and block
//! lengths, matching array lengths) and checks with 128-bit arithmetic that
//! the new type's size, bounds and displacements fit in 64 bits, returning a
//! [`TypeError`] otherwise. Displacements are in bytes for the `h` forms and
//! in multiples of the old type's extent for the others.

use std::sync::{Arc, OnceLock};

use crate::datatype::{Bounds, Ctor, Datatype, Parts, Uniform};
use crate::error::{fit, non_negative, overflow, ArgName, TypeError};
use crate::layout::{self, SeqBuilder};
use crate::signature::Sig;

const LAYOUT: &str = "a displacement of the new datatype";

/// Does `v` need a large-count (`MPI_Count`) argument?
fn beyond_int(v: i64) -> bool {
    i32::try_from(v).is_err()
}

fn check_len(arg: &'static str, expected: usize, got: usize) -> Result<(), TypeError> {
    if expected != got {
        return Err(TypeError::LengthMismatch { arg, expected, got });
    }
    Ok(())
}

/// Collects blocks of copies of old types into the fields of a new type.
///
/// Blocks of one old type (every constructor but struct) only track the
/// range of copy positions; the bounds, element counts and signature follow
/// from it and the number of copies at the end. Struct blocks join their
/// old types' fields one by one.
struct Blocks {
    size: u64,
    copies: u64,
    /// Lowest and highest byte position of a copy (one old type).
    positions: Option<(i128, i128)>,
    bounds: Bounds,
    align: u64,
    elements: u64,
    uniform: Uniform<crate::basic::BasicType>,
    uniform_pair: Uniform<crate::datatype::PairLayout>,
    sig: Sig,
    layout: SeqBuilder,
}

impl Blocks {
    fn new() -> Blocks {
        Blocks {
            size: 0,
            copies: 0,
            positions: None,
            bounds: Bounds::default(),
            align: 1,
            elements: 0,
            uniform: Uniform::Empty,
            uniform_pair: Uniform::Empty,
            sig: Sig::EMPTY,
            layout: SeqBuilder::new(),
        }
    }

    /// Adds `n` copies of `t`, the first at byte `disp`, then every
    /// `t.extent()` bytes: size and layout only.
    fn add_copies(&mut self, disp: i64, n: u64, t: &Datatype) -> Result<(), TypeError> {
        if n == 0 {
            return Ok(());
        }
        let bytes = (n as u128) * (t.size as u128);
        self.size = u64::try_from(self.size as u128 + bytes)
            .ok()
            .filter(|&s| s <= i64::MAX as u64)
            .ok_or(overflow("size of the new datatype"))?;
        self.copies = self.copies.saturating_add(n);
        self.layout.push(disp, n, t.node.as_ref(), t.extent).map_err(|_| overflow(LAYOUT))?;
        Ok(())
    }

    /// Adds `n` copies of the single old type of a non-struct constructor.
    #[inline]
    fn add(&mut self, disp: i64, n: u64, old: &Datatype) -> Result<(), TypeError> {
        if n == 0 {
            return Ok(());
        }
        let span = (n as i128 - 1) * old.extent as i128;
        let (lo, hi) = (disp as i128 + span.min(0), disp as i128 + span.max(0));
        self.positions = Some(match self.positions {
            Some((a, b)) => (a.min(lo), b.max(hi)),
            None => (lo, hi),
        });
        self.add_copies(disp, n, old)
    }

    /// Adds a struct block: `n` copies of `t` joined field by field.
    fn add_member(&mut self, disp: i64, n: u64, t: &Datatype) -> Result<(), TypeError> {
        if n == 0 {
            return Ok(());
        }
        if !t.bounds.is_empty() {
            let b = t.bounds.copies(disp, n, t.extent)?;
            self.bounds.union(&b);
        }
        if t.elements > 0 {
            self.align = self.align.max(t.align);
            self.elements += n * t.elements; // <= size, checked in add_copies
            self.uniform = self.uniform.join(t.uniform);
            self.uniform_pair = self.uniform_pair.join(t.uniform_pair);
            self.sig = self.sig.concat(t.sig.repeat(n));
        }
        self.add_copies(disp, n, t)
    }

    /// Finishes a type whose every block is copies of `old`.
    fn finish_homogeneous(mut self, ctor: Ctor, large: bool, old: &Datatype) -> Result<Datatype, TypeError> {
        if let Some((lo, hi)) = self.positions {
            if !old.bounds.is_empty() {
                self.bounds = old.bounds.shifted(lo, hi)?;
            }
            if old.elements > 0 {
                self.align = old.align;
                self.elements = self.copies * old.elements; // <= size
                self.uniform = old.uniform;
                self.uniform_pair = old.uniform_pair;
            }
        }
        let sig = old.sig.repeat(self.copies);
        self.finish(ctor, large, sig)
    }

    fn finish(self, ctor: Ctor, large: bool, sig: Sig) -> Result<Datatype, TypeError> {
        let node = self.layout.finish().map_err(|_| overflow(LAYOUT))?;
        Datatype::assemble(Parts {
            ctor,
            large,
            size: self.size,
            bounds: self.bounds,
            align: self.align,
            elements: self.elements,
            uniform: self.uniform,
            uniform_pair: self.uniform_pair,
            sig,
            node,
        })
    }
}

/// Byte displacement of `index` elements of `old`.
fn element_disp(index: i64, old: &Datatype) -> Result<i64, TypeError> {
    fit(index as i128 * old.extent as i128, "a displacement of the new datatype")
}

impl Datatype {
    /// `MPI_Type_contiguous`: `count` copies of `old`, `old.extent()` apart.
    pub fn contiguous(count: i64, old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
        let n = non_negative(ArgName::new("count"), count)?;
        let mut b = Blocks::new();
        b.add(0, n, old)?;
        b.finish_homogeneous(Ctor::Contiguous { count, old: old.clone() }, beyond_int(count), old)
    }

    /// `MPI_Type_vector`: `count` blocks of `blocklength` copies of `old`,
    /// block starts `stride` extents of `old` apart.
    pub fn vector(count: i64, blocklength: i64, stride: i64, old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
        let stride_bytes = element_disp(stride, old)?;
        let ctor = Ctor::Vector { count, blocklength, stride, old: old.clone() };
        let large = beyond_int(count) || beyond_int(blocklength) || beyond_int(stride);
        strided(ctor, large, count, blocklength, stride_bytes, old)
    }

    /// `MPI_Type_create_hvector`: like [`Datatype::vector`] with the stride
    /// in bytes.
    pub fn hvector(count: i64, blocklength: i64, stride_bytes: i64, old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
        Self::hvector_impl(count, blocklength, stride_bytes, old, false)
    }

    /// The deprecated MPI-1 `MPI_TYPE_HVECTOR` as called from Fortran
    /// (`MPI_COMBINER_HVECTOR_INTEGER`); same type map as
    /// [`Datatype::hvector`].
    pub fn hvector_integer(count: i64, blocklength: i64, stride_bytes: i64, old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
        Self::hvector_impl(count, blocklength, stride_bytes, old, true)
    }

    fn hvector_impl(count: i64, blocklength: i64, stride: i64, old: &Arc<Datatype>, legacy: bool) -> Result<Datatype, TypeError> {
        let ctor = Ctor::Hvector { count, blocklength, stride, old: old.clone(), legacy };
        let large = beyond_int(count) || beyond_int(blocklength);
        strided(ctor, large, count, blocklength, stride, old)
    }

    /// `MPI_Type_indexed`: block `i` is `blocklengths[i]` copies of `old`
    /// at `displs[i]` extents of `old`.
    pub fn indexed(blocklengths: &[i64], displs: &[i64], old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
        check_len("displacements", blocklengths.len(), displs.len())?;
        let mut b = Blocks::new();
        for (i, (&bl, &d)) in blocklengths.iter().zip(displs).enumerate() {
            let n = non_negative(ArgName::at("blocklengths", i), bl)?;
            if n > 0 {
                b.add(element_disp(d, old)?, n, old)?;
            }
        }
        let large = beyond_int(blocklengths.len() as i64)
            || blocklengths.iter().chain(displs).any(|&v| beyond_int(v));
        let ctor = Ctor::Indexed { blocklengths: blocklengths.into(), displs: displs.into(), old: old.clone() };
        b.finish_homogeneous(ctor, large, old)
    }

    /// `MPI_Type_create_hindexed`: like [`Datatype::indexed`] with byte
    /// displacements.
    pub fn hindexed(blocklengths: &[i64], displs_bytes: &[i64], old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
        Self::hindexed_impl(blocklengths, displs_bytes, old, false)
    }

    /// The deprecated MPI-1 `MPI_TYPE_HINDEXED` as called from Fortran
    /// (`MPI_COMBINER_HINDEXED_INTEGER`).
    pub fn hindexed_integer(blocklengths: &[i64], displs_bytes: &[i64], old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
        Self::hindexed_impl(blocklengths, displs_bytes, old, true)
    }

    fn hindexed_impl(blocklengths: &[i64], displs: &[i64], old: &Arc<Datatype>, legacy: bool) -> Result<Datatype, TypeError> {
        check_len("displacements", blocklengths.len(), displs.len())?;
        let mut b = Blocks::new();
        for (i, (&bl, &d)) in blocklengths.iter().zip(displs).enumerate() {
            let n = non_negative(ArgName::at("blocklengths", i), bl)?;
            b.add(d, n, old)?;
        }
        let large = beyond_int(blocklengths.len() as i64) || blocklengths.iter().any(|&v| beyond_int(v));
        let ctor = Ctor::Hindexed { blocklengths: blocklengths.into(), displs: displs.into(), old: old.clone(), legacy };
        b.finish_homogeneous(ctor, large, old)
    }

    /// `MPI_Type_create_indexed_block`: blocks of `blocklength` copies of
    /// `old` at `displs[i]` extents of `old`.
    pub fn indexed_block(blocklength: i64, displs: &[i64], old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
        let n = non_negative(ArgName::new("blocklength"), blocklength)?;
        let mut b = Blocks::new();
        if n > 0 {
            for &d in displs {
                b.add(element_disp(d, old)?, n, old)?;
            }
        }
        let large = beyond_int(displs.len() as i64) || beyond_int(blocklength) || displs.iter().any(|&v| beyond_int(v));
        let ctor = Ctor::IndexedBlock { blocklength, displs: displs.into(), old: old.clone() };
        b.finish_homogeneous(ctor, large, old)
    }

    /// `MPI_Type_create_hindexed_block`: like [`Datatype::indexed_block`]
    /// with byte displacements.
    pub fn hindexed_block(blocklength: i64, displs_bytes: &[i64], old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
        let n = non_negative(ArgName::new("blocklength"), blocklength)?;
        let mut b = Blocks::new();
        if n > 0 {
            for &d in displs_bytes {
                b.add(d, n, old)?;
            }
        }
        let large = beyond_int(displs_bytes.len() as i64) || beyond_int(blocklength);
        let ctor = Ctor::HindexedBlock { blocklength, displs: displs_bytes.into(), old: old.clone() };
        b.finish_homogeneous(ctor, large, old)
    }

    /// `MPI_Type_create_struct`: block `i` is `blocklengths[i]` copies of
    /// `types[i]` at byte `displs[i]`. `MPI_LB`/`MPI_UB` members
    /// (`Datatype::basic(BasicType::Lb)`) set sticky bounds. Without an
    /// upper-bound marker the extent is rounded up to the largest alignment
    /// of the elements (the epsilon of MPI 4.1 §5.1.6).
    pub fn create_struct(blocklengths: &[i64], displs: &[i64], types: &[Arc<Datatype>]) -> Result<Datatype, TypeError> {
        Self::struct_impl(blocklengths, displs, types, false)
    }

    /// The deprecated MPI-1 `MPI_TYPE_STRUCT` as called from Fortran
    /// (`MPI_COMBINER_STRUCT_INTEGER`); same type map as
    /// [`Datatype::create_struct`].
    pub fn struct_integer(blocklengths: &[i64], displs: &[i64], types: &[Arc<Datatype>]) -> Result<Datatype, TypeError> {
        Self::struct_impl(blocklengths, displs, types, true)
    }

    fn struct_impl(blocklengths: &[i64], displs: &[i64], types: &[Arc<Datatype>], legacy: bool) -> Result<Datatype, TypeError> {
        check_len("displacements", blocklengths.len(), displs.len())?;
        check_len("types", blocklengths.len(), types.len())?;
        let mut b = Blocks::new();
        for (i, ((&bl, &d), t)) in blocklengths.iter().zip(displs).zip(types).enumerate() {
            let n = non_negative(ArgName::at("blocklengths", i), bl)?;
            b.add_member(d, n, t)?;
        }
        // The epsilon: round the extent up to the largest alignment, unless
        // an upper-bound marker fixes the upper bound.
        if b.bounds.ub_mark.is_none() {
            if let Some((lo, hi)) = b.bounds.soft {
                let lb = b.bounds.lb_mark.unwrap_or(lo);
                let extent = hi as i128 - lb as i128;
                let align = b.align as i128;
                let pad = (align - extent.rem_euclid(align)) % align;
                let hi = fit(hi as i128 + pad, "upper bound of the new datatype")?;
                b.bounds.soft = Some((lo, hi));
            }
        }
        let large = beyond_int(blocklengths.len() as i64) || blocklengths.iter().any(|&v| beyond_int(v));
        let ctor = Ctor::Struct {
            blocklengths: blocklengths.into(),
            displs: displs.into(),
            types: types.into(),
            legacy,
        };
        let sig = b.sig;
        b.finish(ctor, large, sig)
    }

    /// `MPI_Type_create_resized`: `old` with lower bound `lb` and extent
    /// `extent` (which may be zero or negative). Both bounds become sticky
    /// markers: they replace any markers `old` had and are kept when the
    /// new type is used inside another.
    pub fn resized(old: &Arc<Datatype>, lb: i64, extent: i64) -> Result<Datatype, TypeError> {
        let ub = fit(lb as i128 + extent as i128, "upper bound (lb + extent)")?;
        let bounds = Bounds { lb_mark: Some(lb), ub_mark: Some(ub), ..old.bounds };
        Datatype::assemble(Parts {
            ctor: Ctor::Resized { lb, extent, old: old.clone() },
            large: false,
            size: old.size,
            bounds,
            align: old.align,
            elements: old.elements,
            uniform: old.uniform,
            uniform_pair: old.uniform_pair,
            sig: old.sig,
            node: old.node.clone(),
        })
    }

    /// `MPI_Type_dup`: the same type map, combiner `MPI_COMBINER_DUP`.
    pub fn dup(old: &Arc<Datatype>) -> Datatype {
        Datatype {
            ctor: Ctor::Dup(old.clone()),
            large: false,
            size: old.size,
            bounds: old.bounds,
            lb: old.lb,
            ub: old.ub,
            extent: old.extent,
            true_lb: old.true_lb,
            true_ub: old.true_ub,
            align: old.align,
            elements: old.elements,
            uniform: old.uniform,
            uniform_pair: old.uniform_pair,
            sig: old.sig,
            node: old.node.clone(),
            contiguous: old.contiguous,
            ext32: OnceLock::new(),
        }
    }
}

/// vector / hvector: `count` blocks of `blocklength` copies of `old`, block
/// starts `stride` bytes apart.
fn strided(ctor: Ctor, large: bool, count: i64, blocklength: i64, stride: i64, old: &Arc<Datatype>) -> Result<Datatype, TypeError> {
    let count = non_negative(ArgName::new("count"), count)?;
    let bl = non_negative(ArgName::new("blocklength"), blocklength)?;
    let copies = count as u128 * bl as u128;
    let size = copies.checked_mul(old.size as u128).filter(|&s| s <= i64::MAX as u128);
    let size = size.ok_or(overflow("size of the new datatype"))?;
    // Beyond u64 only when the old type is empty, where it no longer matters.
    let copies = u64::try_from(copies).unwrap_or(u64::MAX);
    let empty = copies == 0;
    let bounds = if empty || old.bounds.is_empty() {
        Bounds::default()
    } else {
        old.bounds.copies(0, bl, old.extent)?.copies(0, count, stride)?
    };
    let block = layout::repeat(0, bl, old.node.as_ref(), old.extent).map_err(|_| overflow(LAYOUT))?;
    let node = layout::repeat(0, count, block.as_ref(), stride).map_err(|_| overflow(LAYOUT))?;
    let has_data = !empty && old.elements > 0;
    Datatype::assemble(Parts {
        ctor,
        large,
        size: size as u64,
        bounds,
        align: if has_data { old.align } else { 1 },
        elements: if empty { 0 } else { copies * old.elements },
        uniform: if has_data { old.uniform } else { Uniform::Empty },
        uniform_pair: if has_data { old.uniform_pair } else { Uniform::Empty },
        sig: old.sig.repeat(copies),
        node,
    })
}

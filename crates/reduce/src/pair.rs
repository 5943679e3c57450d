//! MINLOC and MAXLOC on (value, index) pairs.

use crate::half::{bf16_to_f32, f16_to_f32};
use crate::{buffer_bytes, pair_allowed, quad, scalar_of, Op, ReduceError, Scalar};
use core::cmp::Ordering;
use core::ptr;
use gridmpi_datatype::BasicType;

/// Reads one scalar of kind `s` at `p` (unaligned) and compares it with the
/// one at `q`, with IEEE semantics for floats (`None` if unordered).
///
/// # Safety
/// `p` and `q` must be readable for the scalar's size.
unsafe fn compare(s: Scalar, p: *const u8, q: *const u8) -> Option<Ordering> {
    macro_rules! cmp_as {
        ($t:ty) => {
            ptr::read_unaligned(p as *const $t).partial_cmp(&ptr::read_unaligned(q as *const $t))
        };
    }
    match s {
        Scalar::Int {
            signed: true,
            size: 1,
        } => cmp_as!(i8),
        Scalar::Int {
            signed: true,
            size: 2,
        } => cmp_as!(i16),
        Scalar::Int {
            signed: true,
            size: 4,
        } => cmp_as!(i32),
        Scalar::Int {
            signed: true,
            size: 8,
        } => cmp_as!(i64),
        Scalar::Int {
            signed: true,
            size: 16,
        } => cmp_as!(i128),
        Scalar::Int {
            signed: false,
            size: 1,
        } => cmp_as!(u8),
        Scalar::Int {
            signed: false,
            size: 2,
        } => cmp_as!(u16),
        Scalar::Int {
            signed: false,
            size: 4,
        } => cmp_as!(u32),
        Scalar::Int {
            signed: false,
            size: 8,
        } => cmp_as!(u64),
        Scalar::Int {
            signed: false,
            size: 16,
        } => cmp_as!(u128),
        Scalar::Int { .. } => None, // rejected by `comparable` before use
        Scalar::F16 => f16_to_f32(ptr::read_unaligned(p as *const u16))
            .partial_cmp(&f16_to_f32(ptr::read_unaligned(q as *const u16))),
        Scalar::BF16 => bf16_to_f32(ptr::read_unaligned(p as *const u16))
            .partial_cmp(&bf16_to_f32(ptr::read_unaligned(q as *const u16))),
        Scalar::F32 => cmp_as!(f32),
        Scalar::F64 => cmp_as!(f64),
        Scalar::Quad => quad::partial_cmp(
            ptr::read_unaligned(p as *const u128),
            ptr::read_unaligned(q as *const u128),
        ),
        #[cfg(target_arch = "x86_64")]
        Scalar::X87 => crate::x87::partial_cmp(p, q),
        #[cfg(not(target_arch = "x86_64"))]
        Scalar::X87 => None, // rejected by `comparable` before use
    }
}

/// Can `compare` order scalars of this kind on this target?
fn comparable(s: Scalar) -> bool {
    match s {
        Scalar::Int { size, .. } => matches!(size, 1 | 2 | 4 | 8 | 16),
        Scalar::X87 => cfg!(target_arch = "x86_64"),
        _ => true,
    }
}

/// MINLOC / MAXLOC over `count` (value, index) pairs: the value (of type
/// `value`) at offset 0 of each pair, the index (of type `index`) at
/// `index_offset`, consecutive pairs `stride` bytes apart (the pair type's
/// extent, e.g. 16 for `MPI_DOUBLE_INT`, 8 for `MPI_SHORT_INT`, 32 for
/// `MPI_LONG_DOUBLE_INT`).
///
/// Semantics (MPI-4.1 section 6.9.4), for each pair, with `(u, i)` from
/// `inout` and `(v, j)` from `input`:
/// - MAXLOC: if `v > u` the result is `(v, j)`; if `v == u` it is
///   `(u, min(i, j))`; otherwise `(u, i)` unchanged;
/// - MINLOC: the same with `v < u`.
///
/// Both are commutative and associative. As in MPICH, an `input` value that
/// is unordered with `inout`'s (a NaN on either side) leaves the pair
/// unchanged. REPLACE copies the value and index fields; NO_OP does nothing.
/// Padding bytes between and after the fields are never written.
///
/// # Errors
/// [`ReduceError::PairNotAllowed`] unless [`pair_allowed`];
/// [`ReduceError::Unsupported`] for a `long double` value or index off
/// x86-64; [`ReduceError::BadPairLayout`] if the index does not lie after
/// the value and within the stride; buffer errors as for [`crate::reduce`].
///
/// # Safety
/// Unless `count` is 0 (or `op` is NO_OP), `input` must be readable and
/// `inout` readable and writable for `count * stride` bytes (unaligned and
/// overlapping buffers are fine).
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce_pair(
    op: Op,
    value: BasicType,
    index: BasicType,
    index_offset: usize,
    stride: usize,
    input: *const u8,
    inout: *mut u8,
    count: usize,
) -> Result<(), ReduceError> {
    if !pair_allowed(op, value, index) {
        return Err(ReduceError::PairNotAllowed {
            op,
            value: value.name(),
            index: index.name(),
        });
    }
    let (Some(value_kind), Some(index_kind)) = (scalar_of(value), scalar_of(index)) else {
        return Err(ReduceError::PairNotAllowed {
            op,
            value: value.name(),
            index: index.name(),
        });
    };
    for (kind, ty) in [(value_kind, value), (index_kind, index)] {
        if !comparable(kind) {
            let reason = if kind == Scalar::X87 {
                "x87 80-bit long double arithmetic is only implemented on x86_64"
            } else {
                "no comparison for integers of this size"
            };
            return Err(ReduceError::Unsupported {
                op,
                ty: ty.name(),
                reason,
            });
        }
    }
    let (value_size, index_size) = (value.size(), index.size());
    let layout_ok = value_size <= index_offset
        && index_offset
            .checked_add(index_size)
            .is_some_and(|end| end <= stride);
    if !layout_ok {
        return Err(ReduceError::BadPairLayout {
            value_size,
            index_offset,
            index_size,
            stride,
        });
    }
    let bytes = buffer_bytes(count, stride)?;
    if bytes == 0 || op == Op::NoOp {
        return Ok(());
    }
    if input.is_null() || inout.is_null() {
        return Err(ReduceError::NullBuffer);
    }
    // The value the input must beat to replace the inout pair.
    let wins = match op {
        Op::Maxloc => Ordering::Less,    // inout < input
        Op::Minloc => Ordering::Greater, // inout > input
        _ => Ordering::Equal,            // REPLACE: unused
    };
    for k in 0..count {
        // SAFETY: pair k occupies [k*stride, (k+1)*stride) of both buffers,
        // within the `bytes` the caller vouches for; the value and index
        // fields lie inside it (layout checked above).
        let (x, io) = (input.add(k * stride), inout.add(k * stride));
        let (x_index, io_index) = (x.add(index_offset), io.add(index_offset));
        if op == Op::Replace {
            ptr::copy(x, io, value_size);
            ptr::copy(x_index, io_index, index_size);
            continue;
        }
        let order = compare(value_kind, io, x);
        if order == Some(wins) {
            ptr::copy(x, io, value_size);
            ptr::copy(x_index, io_index, index_size);
        } else if order == Some(Ordering::Equal)
            && compare(index_kind, io_index, x_index) == Some(Ordering::Greater)
        {
            ptr::copy(x_index, io_index, index_size);
        }
    }
    Ok(())
}

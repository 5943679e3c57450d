//! Reduction kernels: every predefined MPI operation on every element type.
//!
//! [`reduce`] computes `inout[i] = input[i] op inout[i]` over `count`
//! elements of one [`BasicType`]; [`reduce_pair`] does MINLOC/MAXLOC on
//! (value, index) pairs. Which (operation, type) combinations exist is
//! [`allowed`] (the MPI standard) plus [`mpich_extension`] (what MPICH
//! accepts beyond it); see the [`table`] module for the full table.
//!
//! # Conventions
//!
//! - **Operand order.** MPI defines the result as `input op inout`, where
//!   `input` holds the operand of the lower-ranked process(es). This matters
//!   only for non-commutative user operations; every predefined operation
//!   here is commutative (except REPLACE and NO_OP, which are not used in
//!   collectives), so the kernels compute `inout op input` as MPICH does,
//!   giving MPICH's results bit for bit, down to which NaN is kept.
//! - **Integers** wrap around on overflow (SUM, PROD), two's complement.
//! - **Floating point** results are deterministic: each element is one
//!   operation (or for complex PROD, a fixed formula) rounded in the element
//!   type, with no reassociation and no fused multiply-add.
//! - **MAX and MIN on floating point** follow MPICH (`inout > input ? inout :
//!   input`, MIN with `<`): when either operand is a NaN, or the two compare
//!   equal (+0 and -0), the result is the `input` operand. So a NaN in
//!   `input` propagates and a NaN in `inout` is replaced; this is neither C
//!   `fmax` (which ignores NaNs) nor NaN-propagating `maximum`. It is what
//!   x86 `maxsd`/`minsd` compute, so the loops vectorise.
//! - **Complex PROD** is the textbook `(c+di)(a+bi) = (ca-db) + (da+cb)i` as
//!   MPICH computes it, each operation rounded in the part type; unlike C's
//!   `*` operator there is no C99 Annex G recovery of infinities from NaN
//!   results.
//! - **Logical** results are canonical: 1 for true, 0 for false (C `bool`,
//!   and Fortran LOGICAL as gfortran represents `.TRUE.`); any non-zero
//!   input reads as true.
//! - **Buffers** are user memory: they may be unaligned (a fast path runs
//!   when both are aligned and disjoint), may overlap or be the same buffer.
//!   No input makes these functions panic.
//!
//! # Formats without a Rust type
//! - binary16 and bfloat16: computed in `f32`, rounded once to nearest even
//!   (see [`half`]; on x86-64 CPUs with F16C, binary16 uses the hardware
//!   conversions, with identical results);
//! - x87 80-bit `long double` (x86-64 only): x87 instructions via `asm!` on
//!   memory operands, so results are exactly gcc's; on other targets
//!   [`ReduceError::Unsupported`];
//! - binary128 (`MPI_REAL16`, `MPI_COMPLEX32`): a software implementation
//!   (round to nearest even, subnormals, NaN and infinity rules as gcc's
//!   `__float128`, against which it is tested).

#[cfg(target_arch = "x86_64")]
mod f16c;
pub mod half;
mod kernel;
mod pair;
mod quad;
pub mod table;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;
#[cfg(target_arch = "x86_64")]
mod x87;

use core::fmt;
use gridmpi_datatype::{BasicType, FloatFormat, TypeClass};

pub use pair::reduce_pair;
pub use table::{allowed, group, mpich_extension, pair_allowed, pair_type_name, TypeGroup};

/// The predefined reduction operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Band,
    Lor,
    Bor,
    Lxor,
    Bxor,
    Minloc,
    Maxloc,
    Replace,
    NoOp,
}

impl Op {
    /// Every predefined operation.
    pub const ALL: [Op; 14] = [
        Op::Max,
        Op::Min,
        Op::Sum,
        Op::Prod,
        Op::Land,
        Op::Band,
        Op::Lor,
        Op::Bor,
        Op::Lxor,
        Op::Bxor,
        Op::Minloc,
        Op::Maxloc,
        Op::Replace,
        Op::NoOp,
    ];

    /// The MPI name, e.g. `"MPI_SUM"`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Max => "MPI_MAX",
            Op::Min => "MPI_MIN",
            Op::Sum => "MPI_SUM",
            Op::Prod => "MPI_PROD",
            Op::Land => "MPI_LAND",
            Op::Band => "MPI_BAND",
            Op::Lor => "MPI_LOR",
            Op::Bor => "MPI_BOR",
            Op::Lxor => "MPI_LXOR",
            Op::Bxor => "MPI_BXOR",
            Op::Minloc => "MPI_MINLOC",
            Op::Maxloc => "MPI_MAXLOC",
            Op::Replace => "MPI_REPLACE",
            Op::NoOp => "MPI_NO_OP",
        }
    }

    /// Whether `a op b == b op a`. True for every reduction (floating point
    /// SUM and PROD count as commutative, as MPI treats them; MINLOC and
    /// MAXLOC are, thanks to the smaller-index rule). False for REPLACE
    /// (`a op b = a`) and NO_OP (`a op b = b`), which are RMA accumulate
    /// operations. (MPICH's `MPI_Op_commutative` reports true for every
    /// predefined operation; the ABI layer may choose to mirror that.)
    pub fn is_commutative(self) -> bool {
        !matches!(self, Op::Replace | Op::NoOp)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a reduction was refused. Nothing is written to `inout` when an
/// error is returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceError {
    /// The operation is not defined on the type (by the standard, nor as an
    /// MPICH extension).
    NotAllowed { op: Op, ty: &'static str },
    /// The operation is not defined on (value, index) pairs of these types.
    PairNotAllowed {
        op: Op,
        value: &'static str,
        index: &'static str,
    },
    /// Defined, but this build cannot compute it.
    Unsupported {
        op: Op,
        ty: &'static str,
        reason: &'static str,
    },
    /// `count` elements of `extent` bytes do not fit in the address space.
    BufferTooLarge { count: usize, extent: usize },
    /// A null buffer with a non-zero count.
    NullBuffer,
    /// `reduce_pair` layout: the index must follow the value and end within
    /// the stride.
    BadPairLayout {
        value_size: usize,
        index_offset: usize,
        index_size: usize,
        stride: usize,
    },
}

impl fmt::Display for ReduceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ReduceError::NotAllowed { op, ty } => {
                write!(f, "{op} is not defined for {ty}")?;
                if matches!(op, Op::Minloc | Op::Maxloc) {
                    write!(f, " (it needs a (value, index) pair type such as MPI_DOUBLE_INT)")?;
                }
                Ok(())
            }
            ReduceError::PairNotAllowed { op, value, index } => {
                write!(f, "{op} is not defined on ({value}, {index}) pairs")
            }
            ReduceError::Unsupported { op, ty, reason } => {
                write!(f, "{op} on {ty} is not supported: {reason}")
            }
            ReduceError::BufferTooLarge { count, extent } => {
                write!(f, "{count} elements of {extent} bytes exceed the address space")
            }
            ReduceError::NullBuffer => f.write_str("null buffer with a non-zero count"),
            ReduceError::BadPairLayout { value_size, index_offset, index_size, stride } => write!(
                f,
                "invalid pair layout: value of {value_size} bytes at offset 0, index of {index_size} bytes at \
                 offset {index_offset}, stride {stride} (the index must follow the value and end within the stride)"
            ),
        }
    }
}

impl std::error::Error for ReduceError {}

/// How one element type is computed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    Int { signed: bool, size: usize },
    F16,
    BF16,
    F32,
    F64,
    X87,
    Quad,
}

/// The scalar a (non-complex) type is made of; for complex types, the
/// scalar of each part.
pub(crate) fn scalar_of(ty: BasicType) -> Option<Scalar> {
    let size = ty.size();
    Some(match ty.class() {
        TypeClass::SignedInt => Scalar::Int { signed: true, size },
        // Bool and Logical hold 0/1; MPI_BYTE is unsigned.
        TypeClass::UnsignedInt | TypeClass::Bool | TypeClass::Logical | TypeClass::Byte => {
            Scalar::Int {
                signed: false,
                size,
            }
        }
        // MPI_CHAR / MPI_CHARACTER are C `char`, whose signedness is the
        // target's (signed on x86-64, unsigned on aarch64 Linux).
        TypeClass::Char => Scalar::Int {
            signed: core::ffi::c_char::MIN != 0,
            size,
        },
        TypeClass::Float | TypeClass::Complex => match ty.float_format()? {
            FloatFormat::Half => Scalar::F16,
            FloatFormat::BFloat16 => Scalar::BF16,
            FloatFormat::Single => Scalar::F32,
            FloatFormat::Double => Scalar::F64,
            FloatFormat::X87Extended => Scalar::X87,
            FloatFormat::Quad => Scalar::Quad,
        },
        TypeClass::Marker => return None,
    })
}

/// A monomorphised loop: returns false if it does not implement `op`.
type KernelFn = unsafe fn(Op, *const u8, *mut u8, usize) -> bool;

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
const X87_ONLY: &str = "x87 80-bit long double arithmetic is only implemented on x86_64";

/// Picks the loop for an element-wise arithmetic `op` on `ty`.
fn select_kernel(op: Op, ty: BasicType) -> Result<KernelFn, ReduceError> {
    use kernel::*;
    let unsupported = |reason| ReduceError::Unsupported {
        op,
        ty: ty.name(),
        reason,
    };
    let scalar = scalar_of(ty).ok_or(ReduceError::NotAllowed { op, ty: ty.name() })?;
    let complex = ty.class() == TypeClass::Complex;
    let kernel: KernelFn = match (complex, scalar) {
        (false, Scalar::Int { signed, size }) => match (signed, size) {
            (true, 1) => reduce_i8,
            (false, 1) => reduce_u8,
            (true, 2) => reduce_i16,
            (false, 2) => reduce_u16,
            (true, 4) => reduce_i32,
            (false, 4) => reduce_u32,
            (true, 8) => reduce_i64,
            (false, 8) => reduce_u64,
            (true, 16) => reduce_i128,
            (false, 16) => reduce_u128,
            _ => return Err(unsupported("no kernel for integers of this size")),
        },
        (false, Scalar::F16) => reduce_f16,
        (false, Scalar::BF16) => reduce_bf16,
        (false, Scalar::F32) => reduce_f32,
        (false, Scalar::F64) => reduce_f64,
        (false, Scalar::Quad) => reduce_quad,
        (true, Scalar::F16) => reduce_complex_f16,
        (true, Scalar::F32) => reduce_complex_f32,
        (true, Scalar::F64) => reduce_complex_f64,
        (true, Scalar::Quad) => reduce_complex_quad,
        #[cfg(target_arch = "x86_64")]
        (false, Scalar::X87) => reduce_x87,
        #[cfg(target_arch = "x86_64")]
        (true, Scalar::X87) => reduce_complex_x87,
        #[cfg(not(target_arch = "x86_64"))]
        (_, Scalar::X87) => return Err(unsupported(X87_ONLY)),
        (true, Scalar::BF16 | Scalar::Int { .. }) => {
            return Err(unsupported("no complex kernel for this part type"))
        }
    };
    Ok(kernel)
}

/// Checks that `count` elements of `extent` bytes make a valid buffer size;
/// returns the byte count.
fn buffer_bytes(count: usize, extent: usize) -> Result<usize, ReduceError> {
    count
        .checked_mul(extent)
        .filter(|&bytes| bytes <= isize::MAX as usize)
        .ok_or(ReduceError::BufferTooLarge { count, extent })
}

/// Can [`reduce`] compute `op` on `ty` in this build? (The standard's
/// combinations plus MPICH's extensions, minus what this target cannot do.)
pub fn supported(op: Op, ty: BasicType) -> bool {
    if !(allowed(op, ty) || mpich_extension(op, ty)) {
        return false;
    }
    matches!(op, Op::Replace | Op::NoOp) || select_kernel(op, ty).is_ok()
}

/// `inout[i] = input[i] op inout[i]` for `i in 0..count` elements of `ty`.
///
/// `input` holds the lower-ranked operand (MPI order; see the crate docs for
/// why it does not matter for the predefined operations). REPLACE copies
/// `input` over `inout`; NO_OP leaves `inout` unchanged and never reads
/// `input` (which may then be null).
///
/// # Errors
/// [`ReduceError::NotAllowed`] unless [`allowed`] or [`mpich_extension`];
/// [`ReduceError::Unsupported`] for `long double` off x86-64; buffer errors
/// for a null pointer or an impossible size. On error nothing is written.
///
/// # Safety
/// Unless `count` is 0 (or `op` is NO_OP), `input` must be valid for reads
/// and `inout` for reads and writes of `count * ty.size()` bytes. They may be
/// unaligned and may overlap: elements are then processed in increasing
/// order, each read before it is written (REPLACE is a `memmove`: `inout`
/// receives `input` as it was before the call).
pub unsafe fn reduce(
    op: Op,
    ty: BasicType,
    input: *const u8,
    inout: *mut u8,
    count: usize,
) -> Result<(), ReduceError> {
    if !(allowed(op, ty) || mpich_extension(op, ty)) {
        return Err(ReduceError::NotAllowed { op, ty: ty.name() });
    }
    let kernel = match op {
        Op::Replace | Op::NoOp => None,
        _ => Some(select_kernel(op, ty)?),
    };
    let bytes = buffer_bytes(count, ty.size())?;
    if bytes == 0 || op == Op::NoOp {
        return Ok(());
    }
    if input.is_null() || inout.is_null() {
        return Err(ReduceError::NullBuffer);
    }
    match kernel {
        // SAFETY: the caller guarantees `bytes` valid bytes in each buffer;
        // `copy` allows overlap.
        None => core::ptr::copy(input, inout, bytes),
        // SAFETY: as above; the kernel reads/writes exactly `count` elements.
        Some(kernel) => {
            if !kernel(op, input, inout, count) {
                return Err(ReduceError::NotAllowed { op, ty: ty.name() });
            }
        }
    }
    Ok(())
}

//! Which predefined operation is defined on which element type.
//!
//! The MPI standard (MPI-4.1, section 6.9.2 "Predefined Reduction
//! Operations") sorts the basic types into groups and allows each operation
//! on some groups:
//!
//! | operation                      | groups                                                      |
//! |--------------------------------|-------------------------------------------------------------|
//! | MPI_MAX, MPI_MIN               | C integer, Fortran integer, Floating point, Multi-language  |
//! | MPI_SUM, MPI_PROD              | C integer, Fortran integer, Floating point, Complex, Multi-language |
//! | MPI_LAND, MPI_LOR, MPI_LXOR    | C integer, Logical                                          |
//! | MPI_BAND, MPI_BOR, MPI_BXOR    | C integer, Fortran integer, Byte, Multi-language            |
//! | MPI_MINLOC, MPI_MAXLOC         | only the (value, index) pair types: see [`crate::reduce_pair`] |
//! | MPI_REPLACE, MPI_NO_OP         | every predefined type (they are RMA accumulate operations)  |
//!
//! Groups: *C integer* is every C integer type including `MPI_SIGNED_CHAR`
//! and `MPI_UNSIGNED_CHAR` but not `MPI_CHAR` (a printable character, not an
//! integer); *Fortran integer* is `MPI_INTEGER` and `MPI_INTEGER1..16`;
//! *Multi-language* is `MPI_AINT`, `MPI_OFFSET`, `MPI_COUNT`; *Floating
//! point* is `MPI_FLOAT`, `MPI_DOUBLE`, `MPI_LONG_DOUBLE`, `MPI_REAL`,
//! `MPI_DOUBLE_PRECISION`, `MPI_REAL2..16`; *Logical* is `MPI_C_BOOL`,
//! `MPI_CXX_BOOL`, `MPI_LOGICAL`; *Complex* is every C, C++ and Fortran
//! complex type; *Byte* is `MPI_BYTE` only (not `MPI_PACKED`).
//!
//! Two readings of ours where the standard is silent: the MPICH extension
//! types `MPIX_C_FLOAT16` and `MPIX_BFLOAT16` are Floating point, and the
//! optional `MPI_LOGICAL1..16` are Logical (as `MPI_INTEGER1..16` are
//! Fortran integer).
//!
//! Beyond the standard, MPICH also accepts a few combinations, and programs
//! built against MPICH may rely on them: [`mpich_extension`] lists them, and
//! [`crate::reduce`] accepts them too, so such programs keep working.

use crate::Op;
use gridmpi_datatype::{BasicType, TypeClass};

/// The type groups of MPI-4.1 section 6.9.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeGroup {
    CInteger,
    FortranInteger,
    MultiLanguage,
    FloatingPoint,
    Logical,
    Complex,
    Byte,
}

/// The group of a basic type, or `None` for the types no arithmetic
/// operation accepts (characters, `MPI_PACKED`, the bound markers).
pub fn group(ty: BasicType) -> Option<TypeGroup> {
    use BasicType as B;
    Some(match ty.class() {
        TypeClass::SignedInt | TypeClass::UnsignedInt => match ty {
            B::Aint | B::Offset | B::Count => TypeGroup::MultiLanguage,
            _ if ty.is_fortran() => TypeGroup::FortranInteger,
            _ => TypeGroup::CInteger,
        },
        TypeClass::Float => TypeGroup::FloatingPoint,
        TypeClass::Complex => TypeGroup::Complex,
        TypeClass::Bool | TypeClass::Logical => TypeGroup::Logical,
        TypeClass::Byte if ty == B::Byte => TypeGroup::Byte,
        TypeClass::Byte | TypeClass::Char | TypeClass::Marker => return None,
    })
}

/// Is `op` defined on `ty` by the MPI standard (see the module table)?
///
/// `MPI_MINLOC`/`MPI_MAXLOC` are never defined on a basic type: they need a
/// pair type (see [`pair_allowed`]). `MPI_REPLACE` and `MPI_NO_OP` are
/// defined on every predefined type except the zero-size bound markers.
pub fn allowed(op: Op, ty: BasicType) -> bool {
    use TypeGroup as G;
    if matches!(op, Op::Replace | Op::NoOp) {
        return ty.class() != TypeClass::Marker;
    }
    let Some(g) = group(ty) else { return false };
    match op {
        Op::Max | Op::Min => matches!(
            g,
            G::CInteger | G::FortranInteger | G::MultiLanguage | G::FloatingPoint
        ),
        Op::Sum | Op::Prod => {
            matches!(
                g,
                G::CInteger | G::FortranInteger | G::MultiLanguage | G::FloatingPoint | G::Complex
            )
        }
        Op::Land | Op::Lor | Op::Lxor => matches!(g, G::CInteger | G::Logical),
        Op::Band | Op::Bor | Op::Bxor => matches!(
            g,
            G::CInteger | G::FortranInteger | G::MultiLanguage | G::Byte
        ),
        Op::Minloc | Op::Maxloc | Op::Replace | Op::NoOp => false,
    }
}

/// Combinations the standard does not define but MPICH accepts (its
/// "extra" type groups), which [`crate::reduce`] therefore accepts too:
/// - `MPI_CHAR` and `MPI_CHARACTER` as integers (of the C `char`'s
///   signedness) for every integer operation: MAX, MIN, SUM, PROD, the
///   logical and the bitwise operations;
/// - the logical operations (LAND, LOR, LXOR) on Fortran integers and on
///   `MPI_AINT`, `MPI_OFFSET`, `MPI_COUNT`.
pub fn mpich_extension(op: Op, ty: BasicType) -> bool {
    use BasicType as B;
    let integer_op = matches!(
        op,
        Op::Max
            | Op::Min
            | Op::Sum
            | Op::Prod
            | Op::Land
            | Op::Lor
            | Op::Lxor
            | Op::Band
            | Op::Bor
            | Op::Bxor
    );
    let logical_op = matches!(op, Op::Land | Op::Lor | Op::Lxor);
    match ty {
        B::Char | B::Character => integer_op,
        _ => {
            logical_op
                && matches!(
                    group(ty),
                    Some(TypeGroup::FortranInteger | TypeGroup::MultiLanguage)
                )
        }
    }
}

/// The name of a predefined MPI pair type for (value, index), if there is
/// one (`MPI_DOUBLE_INT`, `MPI_2INTEGER`, ...).
pub fn pair_type_name(value: BasicType, index: BasicType) -> Option<&'static str> {
    use BasicType as B;
    Some(match (value, index) {
        (B::Float, B::Int) => "MPI_FLOAT_INT",
        (B::Double, B::Int) => "MPI_DOUBLE_INT",
        (B::Long, B::Int) => "MPI_LONG_INT",
        (B::Int, B::Int) => "MPI_2INT",
        (B::Short, B::Int) => "MPI_SHORT_INT",
        (B::LongDouble, B::Int) => "MPI_LONG_DOUBLE_INT",
        (B::Real, B::Real) => "MPI_2REAL",
        (B::DoublePrecision, B::DoublePrecision) => "MPI_2DOUBLE_PRECISION",
        (B::Integer, B::Integer) => "MPI_2INTEGER",
        _ => return None,
    })
}

/// Can [`crate::reduce_pair`] apply `op` to (value, index) pairs?
///
/// The standard defines MINLOC/MAXLOC on the nine predefined pair types
/// ([`pair_type_name`] returns `Some`); the kernel is more general and takes
/// any integer or floating point value with any integer or floating point
/// index (the datatype layer decides which pair types exist). REPLACE and
/// NO_OP move pairs as they are.
pub fn pair_allowed(op: Op, value: BasicType, index: BasicType) -> bool {
    let orderable = |t: BasicType| {
        matches!(
            t.class(),
            TypeClass::SignedInt | TypeClass::UnsignedInt | TypeClass::Float
        )
    };
    matches!(op, Op::Minloc | Op::Maxloc | Op::Replace | Op::NoOp)
        && orderable(value)
        && orderable(index)
}

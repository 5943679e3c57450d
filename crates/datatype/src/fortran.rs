//! Fortran type selection: `MPI_Type_match_size` and
//! `MPI_Type_create_f90_{integer,real,complex}` (MPI 4.1 §19.1.9).
//!
//! The kinds are those of gfortran on x86-64 (the compiler MPICH's Fortran
//! bindings are built with here): integers of 1, 2, 4, 8 and 16 bytes with
//! decimal ranges 2, 4, 9, 18 and 38; reals of 4, 8 and 16 bytes with
//! precision 6, 15, 33 and range 37, 307, 4931, and between the last two
//! gfortran's REAL(10) (precision 18, range 4931), the x87 extended format
//! of C's `long double`: requests it satisfies get `MPI_LONG_DOUBLE`'s
//! element (MPICH refuses them; the 16-byte type they got before gave
//! wrong sums).

use crate::basic::BasicType;
use crate::datatype::{Combiner, Datatype, UNDEFINED};
use crate::error::TypeError;

/// The `typeclass` argument of `MPI_Type_match_size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchClass {
    /// `MPI_TYPECLASS_REAL`
    Real,
    /// `MPI_TYPECLASS_INTEGER`
    Integer,
    /// `MPI_TYPECLASS_COMPLEX`
    Complex,
}

impl MatchClass {
    pub const fn from_mpi(value: i32) -> Option<MatchClass> {
        match value {
            1 => Some(MatchClass::Real),
            2 => Some(MatchClass::Integer),
            3 => Some(MatchClass::Complex),
            _ => None,
        }
    }
}

/// `MPI_Type_match_size`: the predefined Fortran type of `class` whose
/// elements are `size` bytes (`MPI_REAL2` ... `MPI_COMPLEX32`), as MPICH
/// answers.
pub fn match_size(class: MatchClass, size: usize) -> Result<BasicType, TypeError> {
    use BasicType::*;
    let t = match (class, size) {
        (MatchClass::Real, 2) => Real2,
        (MatchClass::Real, 4) => Real4,
        (MatchClass::Real, 8) => Real8,
        (MatchClass::Real, 16) => Real16,
        (MatchClass::Integer, 1) => Integer1,
        (MatchClass::Integer, 2) => Integer2,
        (MatchClass::Integer, 4) => Integer4,
        (MatchClass::Integer, 8) => Integer8,
        (MatchClass::Integer, 16) => Integer16,
        (MatchClass::Complex, 4) => Complex4,
        (MatchClass::Complex, 8) => Complex8,
        (MatchClass::Complex, 16) => Complex16,
        (MatchClass::Complex, 32) => Complex32,
        _ => {
            return Err(TypeError::NoMatchingType {
                what: "type",
                detail: format!("{class:?} of {size} bytes"),
            })
        }
    };
    Ok(t)
}

/// The integer type `SELECTED_INT_KIND(r)` selects: the smallest with a
/// decimal range of at least `r`.
pub fn f90_integer_type(r: i32) -> Result<BasicType, TypeError> {
    use BasicType::*;
    let t = match r {
        i32::MIN..=2 => Integer1,
        3..=4 => Integer2,
        5..=9 => Integer4,
        10..=18 => Integer8,
        19..=38 => Integer16,
        _ => {
            return Err(TypeError::NoMatchingType {
                what: "Fortran INTEGER kind",
                detail: format!("a decimal range of {r}"),
            })
        }
    };
    Ok(t)
}

/// The real kinds of gfortran (the Fortran compiler of the bindings), as
/// (precision, range, type), smallest first. On x86-64 it has REAL(10),
/// the x87 extended format in 16 bytes: C's `long double`, so
/// `MPI_LONG_DOUBLE`'s element (`SELECTED_REAL_KIND(16)` is 10 there, and
/// taking REAL*16 for it summed 1 + 2 to 1.5); elsewhere the next kind is
/// REAL(16), IEEE binary128.
#[cfg(target_arch = "x86_64")]
const REAL_KINDS: &[(i32, i32, BasicType)] =
    &[(6, 37, BasicType::Real4), (15, 307, BasicType::Real8), (18, 4931, BasicType::LongDouble), (33, 4931, BasicType::Real16)];
#[cfg(not(target_arch = "x86_64"))]
const REAL_KINDS: &[(i32, i32, BasicType)] = &[(6, 37, BasicType::Real4), (15, 307, BasicType::Real8), (33, 4931, BasicType::Real16)];

/// The real type `SELECTED_REAL_KIND(p, r)` selects: the smallest with a
/// precision of at least `p` and a range of at least `r` decimal digits.
/// [`UNDEFINED`] for either means no requirement.
pub fn f90_real_type(p: i32, r: i32) -> Result<BasicType, TypeError> {
    let no_match = || TypeError::NoMatchingType {
        what: "Fortran REAL kind",
        detail: format!("precision {} and range {}", show(p), show(r)),
    };
    let p = if p == UNDEFINED { 0 } else { p };
    let r = if r == UNDEFINED { 0 } else { r };
    if p < 0 || r < 0 {
        return Err(no_match());
    }
    REAL_KINDS.iter().find(|&&(kp, kr, _)| p <= kp && r <= kr).map(|&(_, _, t)| t).ok_or_else(no_match)
}

/// The complex type with parts of `SELECTED_REAL_KIND(p, r)`.
pub fn f90_complex_type(p: i32, r: i32) -> Result<BasicType, TypeError> {
    Ok(match f90_real_type(p, r)? {
        BasicType::Real4 => BasicType::Complex8,
        BasicType::Real8 => BasicType::Complex16,
        BasicType::LongDouble => BasicType::CLongDoubleComplex,
        _ => BasicType::Complex32,
    })
}

fn show(v: i32) -> String {
    if v == UNDEFINED {
        "MPI_UNDEFINED".to_string()
    } else {
        v.to_string()
    }
}

impl Datatype {
    /// `MPI_Type_create_f90_integer(r)`: the matching predefined type,
    /// reporting `MPI_COMBINER_F90_INTEGER` with contents `[r]`.
    pub fn f90_integer(r: i32) -> Result<Datatype, TypeError> {
        let t = f90_integer_type(r)?;
        Ok(Datatype::f90(Combiner::F90Integer, UNDEFINED, r, t))
    }

    /// `MPI_Type_create_f90_real(p, r)` (contents `[p, r]`).
    pub fn f90_real(p: i32, r: i32) -> Result<Datatype, TypeError> {
        let t = f90_real_type(p, r)?;
        Ok(Datatype::f90(Combiner::F90Real, p, r, t))
    }

    /// `MPI_Type_create_f90_complex(p, r)` (contents `[p, r]`).
    pub fn f90_complex(p: i32, r: i32) -> Result<Datatype, TypeError> {
        let t = f90_complex_type(p, r)?;
        Ok(Datatype::f90(Combiner::F90Complex, p, r, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BasicType::*;

    /// MPICH 5.0.2 answers (probe/contents.c).
    #[test]
    fn match_size_like_mpich() {
        assert_eq!(match_size(MatchClass::Real, 2).unwrap(), Real2);
        assert_eq!(match_size(MatchClass::Real, 16).unwrap(), Real16);
        assert!(match_size(MatchClass::Real, 1).is_err());
        assert!(match_size(MatchClass::Real, 32).is_err());
        assert_eq!(match_size(MatchClass::Integer, 1).unwrap(), Integer1);
        assert_eq!(match_size(MatchClass::Integer, 16).unwrap(), Integer16);
        assert!(match_size(MatchClass::Integer, 32).is_err());
        assert!(match_size(MatchClass::Complex, 2).is_err());
        assert_eq!(match_size(MatchClass::Complex, 4).unwrap(), Complex4);
        assert_eq!(match_size(MatchClass::Complex, 32).unwrap(), Complex32);
        assert_eq!(MatchClass::from_mpi(3), Some(MatchClass::Complex));
        for class in [MatchClass::Real, MatchClass::Integer, MatchClass::Complex] {
            for size in [1, 2, 4, 8, 16, 32] {
                if let Ok(t) = match_size(class, size) {
                    assert_eq!(t.size(), size);
                }
            }
        }
    }

    #[test]
    fn f90_kinds_are_gfortran_s() {
        assert_eq!(f90_integer_type(1).unwrap(), Integer1);
        assert_eq!(f90_integer_type(2).unwrap(), Integer1);
        assert_eq!(f90_integer_type(3).unwrap(), Integer2);
        assert_eq!(f90_integer_type(9).unwrap(), Integer4);
        assert_eq!(f90_integer_type(10).unwrap(), Integer8);
        assert_eq!(f90_integer_type(18).unwrap(), Integer8);
        assert_eq!(f90_integer_type(38).unwrap(), Integer16);
        assert!(f90_integer_type(39).is_err());
        assert_eq!(f90_real_type(6, 37).unwrap(), Real4);
        assert_eq!(f90_real_type(7, UNDEFINED).unwrap(), Real8);
        assert_eq!(f90_real_type(5, 300).unwrap(), Real8);
        // gfortran's REAL(10) on x86-64, else REAL(16).
        let ten = if cfg!(target_arch = "x86_64") { LongDouble } else { Real16 };
        assert_eq!(f90_real_type(16, UNDEFINED).unwrap(), ten);
        assert_eq!(f90_real_type(18, UNDEFINED).unwrap(), ten);
        assert_eq!(f90_real_type(19, UNDEFINED).unwrap(), Real16);
        assert_eq!(f90_real_type(33, UNDEFINED).unwrap(), Real16);
        assert!(f90_real_type(34, UNDEFINED).is_err());
        assert_eq!(f90_real_type(UNDEFINED, 308).unwrap(), ten);
        assert_eq!(f90_real_type(UNDEFINED, 4931).unwrap(), ten);
        assert_eq!(f90_real_type(19, 4931).unwrap(), Real16);
        assert!(f90_real_type(UNDEFINED, 4932).is_err());
        assert_eq!(f90_real_type(UNDEFINED, UNDEFINED).unwrap(), Real4);
        assert_eq!(f90_complex_type(3, UNDEFINED).unwrap(), Complex8);
        assert_eq!(f90_complex_type(10, UNDEFINED).unwrap(), Complex16);
        assert_eq!(f90_complex_type(20, UNDEFINED).unwrap(), Complex32);
        if cfg!(target_arch = "x86_64") {
            assert_eq!(f90_complex_type(17, UNDEFINED).unwrap(), CLongDoubleComplex);
        }
    }

    #[test]
    fn f90_types_report_their_combiner() {
        let t = Datatype::f90_real(10, UNDEFINED).unwrap();
        assert_eq!(t.combiner(), Combiner::F90Real);
        assert_eq!(t.basic_type(), Some(Real8));
        assert_eq!(t.contents().integers, vec![10, UNDEFINED]);
        let t = Datatype::f90_integer(5).unwrap();
        assert_eq!(t.combiner(), Combiner::F90Integer);
        assert_eq!(t.contents().integers, vec![5]);
        assert_eq!(t.size(), 4);
        let e = Datatype::f90_real(40, 1).unwrap_err();
        assert_eq!(e.to_string(), "no predefined Fortran REAL kind matches precision 40 and range 1");
    }
}

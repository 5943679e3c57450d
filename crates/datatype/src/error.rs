//! Why a datatype could not be built or used.

use core::fmt;

/// Names one argument of a constructor, possibly an element of an array
/// argument: displays as `count` or `blocklengths[2]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgName {
    pub name: &'static str,
    pub index: Option<usize>,
}

impl ArgName {
    pub(crate) const fn new(name: &'static str) -> ArgName {
        ArgName { name, index: None }
    }
    pub(crate) const fn at(name: &'static str, index: usize) -> ArgName {
        ArgName { name, index: Some(index) }
    }
}

impl fmt::Display for ArgName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}[{}]", self.name, i),
            None => f.write_str(self.name),
        }
    }
}

/// The MPI error class a [`TypeError`] maps to (the C shell turns it into
/// the MPICH error code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// `MPI_ERR_COUNT`
    Count,
    /// `MPI_ERR_ARG`
    Arg,
    /// `MPI_ERR_TYPE`
    Type,
    /// `MPI_ERR_DIMS`
    Dims,
    /// `MPI_ERR_TRUNCATE`
    Truncate,
    /// `MPI_ERR_VALUE_TOO_LARGE` (MPI 4.0): a result does not fit.
    ValueTooLarge,
}

/// Why a datatype constructor or a data movement refused its arguments.
///
/// Nothing in this crate panics on bad input: every constructor validates
/// and returns one of these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeError {
    /// A count, block length or size that must be `>= 0` is negative.
    Negative { arg: ArgName, value: i64 },
    /// An argument that must be `>= 1` is zero or negative.
    NotPositive { arg: ArgName, value: i64 },
    /// Two array arguments that must have the same length do not.
    LengthMismatch { arg: &'static str, expected: usize, got: usize },
    /// An argument is out of its allowed range; `reason` says what is allowed.
    OutOfRange { arg: ArgName, value: i64, reason: &'static str },
    /// The new type's size, bounds or a displacement do not fit in a
    /// 64-bit `MPI_Aint`/`MPI_Count`.
    Overflow { what: &'static str },
    /// The output buffer is too small.
    Truncated { needed: u64, available: u64 },
    /// No predefined type matches (MPI_Type_match_size, MPI_Type_create_f90_*).
    NoMatchingType { what: &'static str, detail: String },
    /// The datatype cannot be used this way (e.g. a value that external32
    /// cannot represent).
    Unsupported { what: String },
}

impl TypeError {
    /// The MPI error class this error should be reported with.
    pub fn class(&self) -> ErrorClass {
        match self {
            TypeError::Negative { arg, .. } | TypeError::NotPositive { arg, .. } => {
                if arg.name == "count" {
                    ErrorClass::Count
                } else {
                    ErrorClass::Arg
                }
            }
            TypeError::LengthMismatch { .. } => ErrorClass::Arg,
            TypeError::OutOfRange { arg, .. } => match arg.name {
                "ndims" => ErrorClass::Dims,
                _ => ErrorClass::Arg,
            },
            TypeError::Overflow { .. } => ErrorClass::ValueTooLarge,
            TypeError::Truncated { .. } => ErrorClass::Truncate,
            TypeError::NoMatchingType { .. } => ErrorClass::Arg,
            TypeError::Unsupported { .. } => ErrorClass::Type,
        }
    }
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeError::Negative { arg, value } => write!(f, "{arg} {value} is negative"),
            TypeError::NotPositive { arg, value } => {
                write!(f, "{arg} {value} must be positive")
            }
            TypeError::LengthMismatch { arg, expected, got } => {
                write!(f, "{arg} has {got} entries, expected {expected}")
            }
            TypeError::OutOfRange { arg, value, reason } => {
                write!(f, "{arg} {value} is out of range: {reason}")
            }
            TypeError::Overflow { what } => {
                write!(f, "{what} overflows a 64-bit MPI_Aint")
            }
            TypeError::Truncated { needed, available } => {
                write!(f, "buffer of {available} bytes is too small: {needed} bytes needed")
            }
            TypeError::NoMatchingType { what, detail } => {
                write!(f, "no predefined {what} matches {detail}")
            }
            TypeError::Unsupported { what } => f.write_str(what),
        }
    }
}

impl std::error::Error for TypeError {}

/// Shorthand for the overflow error.
pub(crate) const fn overflow(what: &'static str) -> TypeError {
    TypeError::Overflow { what }
}

/// Converts an `i128` intermediate result to `i64`, or reports `what` as
/// overflowing.
pub(crate) fn fit(value: i128, what: &'static str) -> Result<i64, TypeError> {
    i64::try_from(value).map_err(|_| overflow(what))
}

/// Checks that a count-like argument is `>= 0` and returns it as `u64`.
pub(crate) fn non_negative(arg: ArgName, value: i64) -> Result<u64, TypeError> {
    if value < 0 {
        Err(TypeError::Negative { arg, value })
    } else {
        Ok(value as u64)
    }
}

/// Checks that an argument is `>= 1` and returns it as `u64`.
pub(crate) fn positive(arg: ArgName, value: i64) -> Result<u64, TypeError> {
    if value < 1 {
        Err(TypeError::NotPositive { arg, value })
    } else {
        Ok(value as u64)
    }
}

/// Checks that an argument that is a C `int` in every binding fits in one.
pub(crate) fn int_arg(arg: ArgName, value: i64) -> Result<i32, TypeError> {
    i32::try_from(value).map_err(|_| TypeError::OutOfRange {
        arg,
        value,
        reason: "it must fit in a C int",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_argument() {
        let e = non_negative(ArgName::at("blocklengths", 2), -3).unwrap_err();
        assert_eq!(e.to_string(), "blocklengths[2] -3 is negative");
        assert_eq!(e.class(), ErrorClass::Arg);
        let e = non_negative(ArgName::new("count"), -1).unwrap_err();
        assert_eq!(e.to_string(), "count -1 is negative");
        assert_eq!(e.class(), ErrorClass::Count);
        assert_eq!(
            fit(i128::from(i64::MAX) + 1, "extent of the new datatype").unwrap_err().to_string(),
            "extent of the new datatype overflows a 64-bit MPI_Aint"
        );
    }
}

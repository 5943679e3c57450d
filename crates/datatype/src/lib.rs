//! MPI datatypes: the predefined element types, the derived type
//! constructors of MPI 4.1 chapter 5, and moving typed data to and from
//! packed bytes.
//!
//! - [`BasicType`] (in `basic.rs`): every predefined element type.
//! - [`Datatype`]: an immutable datatype (children held as
//!   `Arc<Datatype>`), built by [`Datatype::basic`],
//!   [`Datatype::value_index`] (the MINLOC/MAXLOC pairs) and the derived
//!   constructors ([`Datatype::contiguous`], [`Datatype::vector`],
//!   [`Datatype::hvector`], [`Datatype::indexed`], [`Datatype::hindexed`],
//!   [`Datatype::indexed_block`], [`Datatype::hindexed_block`],
//!   [`Datatype::create_struct`], [`Datatype::subarray`],
//!   [`Datatype::darray`], [`Datatype::resized`], [`Datatype::dup`], the
//!   MPI-1 `_integer` forms and the Fortran `f90_*` types). Each validates
//!   its arguments and returns a [`TypeError`] rather than panicking.
//!   Size, bounds, envelope and contents, element counts and a signature
//!   hash are queries on it.
//! - Data movement: a [`Cursor`] walks the packed byte stream of `count`
//!   items as memory runs, resumable at any offset; [`pack()`], [`unpack()`]
//!   and [`copy()`] are built on it, and [`pack_external32`] /
//!   [`unpack_external32`] convert to the portable representation.
//!
//! # Representation
//! Each datatype keeps the arguments it was built from (for
//! `MPI_Type_get_contents` and element counting), its bounds (with the
//! standard's sticky lower/upper-bound markers; see `datatype.rs`), and a
//! *dataloop*: a small tree of "`count` copies of this child, `stride` bytes
//! apart" parts whose leaves are dense byte runs (`layout.rs`). Adjacent
//! runs are merged when the tree is built, so a vector of a million
//! doubles is one part of one 8-byte run, never a million segments.
//!
//! This crate does no I/O and has no dependencies beyond `std`. `unsafe`
//! is confined to the functions that touch user memory (`pack.rs`, `userbuf.rs`,
//! `external32.rs`), each block with its reason.

mod array;
pub mod basic;
mod construct;
mod contents;
mod cursor;
mod datatype;
mod error;
mod external32;
mod fortran;
mod layout;
mod pack;
mod signature;
mod typewire;
mod userbuf;
#[cfg(test)]
mod tests;

pub use basic::{BasicType, FloatFormat, TypeClass};
pub use contents::{Contents, Envelope};
pub use cursor::Cursor;
pub use datatype::{Combiner, Datatype, Distrib, Order, PairLayout, DISTRIBUTE_DFLT_DARG, UNDEFINED};
pub use error::{ArgName, ErrorClass, TypeError};
pub use external32::{external32_size, pack_external32, unpack_external32};
pub use fortran::{f90_complex_type, f90_integer_type, f90_real_type, match_size, MatchClass};
pub use pack::{copy, pack, unpack};
pub use typewire::{decode_typemap, TypemapError, MAX_TYPE_DEPTH};
pub use userbuf::UserBuf;

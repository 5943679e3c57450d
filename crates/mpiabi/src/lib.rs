//! libmpi_abi.so.1: the MPI-5 standard ABI on GridMPI.
//!
//! A program built against mpi_abi.h calls these entry points with the
//! standard's handles, constants and status layout. Each translates its
//! arguments to libmpi.so.12's (the MPICH ABI, GridMPI's one implementation
//! of MPI), calls libmpi's `PMPI_X`, and translates the results back:
//!
//! - `entry` (generated, crates/abi/src/abi5.rs): the entry points whose
//!   arguments translate by their type and name;
//! - `callbacks`: the functions taking user callbacks (trampolines);
//! - `special`: those whose results need more than a table (constant
//!   attribute values, a datatype's contents, MPI_Get_version);
//! - `abi_info`: the functions only the standard ABI has;
//! - `conv` and `tables` (generated from abi/abi5.txt and abi/mpi.h.in):
//!   how each kind of value crosses;
//! - `real`: libmpi's functions, found in libmpi.so.12 itself.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

mod abi_info;
mod callbacks;
mod conv;
mod real;
mod special;
mod types;

/// The translation tables (generated).
#[allow(dead_code, clippy::unnecessary_cast, clippy::match_single_binding)]
mod tables {
    use std::ffi::c_int;
    include!(concat!(env!("OUT_DIR"), "/tables.rs"));
}

/// The generated entry points.
// Every body has the same shape (translate, call, translate back), even when
// there is nothing to translate back.
#[allow(unused_mut, clippy::unnecessary_cast, clippy::useless_conversion, clippy::let_and_return)]
mod entry {
    use crate::conv::{self, err_in, err_out, pvar_handle_in};
    use crate::real;
    use crate::tables::*;
    use crate::types::abi::*;
    include!(concat!(env!("OUT_DIR"), "/entry.rs"));
}

//! GridMPI's MPI library, `libmpi.so.12`: the MPICH ABI over GridMPI's
//! engine. See DESIGN.md for the layers.

#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod auth;
pub mod clustermap;
pub mod errors;
pub mod exported;
pub mod ffi;
pub mod handles;
pub mod objects;
pub mod runtime;
pub mod shell;
pub mod shm;
pub mod state;
pub mod sys;
pub mod tcp;
pub mod trace;

/// The exported MPI_X entry points (each calls PMPI_X) and the functions of
/// unavailable features, generated from abi/functions.txt by build.rs.
mod entry {
    #![allow(non_snake_case, unused_variables, clippy::missing_safety_doc, clippy::too_many_arguments)]
    use crate::ffi::*;
    use crate::shell::*;
    include!(concat!(env!("OUT_DIR"), "/entry_points.rs"));
}

//! GridMPI's MPI library, `libmpi.so.12`: the MPICH ABI over GridMPI's
//! engine. See DESIGN.md for the layers.

#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod bootstrap;
pub mod checkpoint;
pub mod clustermap;
pub mod driver;
pub mod errors;
pub mod exported;
pub mod ft;
pub mod ffi;
pub mod handles;
pub mod io;
pub mod host_area;
pub mod launcher_signal;
pub mod lifecycle;
pub mod mpit;
pub mod objects;
pub mod outage;
pub mod port;
pub mod progress_thread;
pub mod psets;
pub mod runtime;
pub mod shell;
mod solo;
pub mod state;
pub mod trace;
pub mod wan_probe;
pub mod wan_rate;

pub use gridmpi_transport::{auth, sys};

/// The exported MPI_X entry points (each calls PMPI_X) and the functions of
/// unavailable features, generated from abi/functions.txt by build.rs.
mod entry {
    #![allow(non_snake_case, unused_variables, clippy::missing_safety_doc, clippy::too_many_arguments)]
    use crate::ffi::*;
    use crate::shell::*;
    include!(concat!(env!("OUT_DIR"), "/entry_points.rs"));
}

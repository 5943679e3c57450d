//! libmpifort.so.12: GridMPI's Fortran bindings, binary-compatible with
//! MPICH's libmpifort/libmpichfort.so.12.
//!
//! The wrappers are generated (build.rs) from abi/functions.txt and
//! abi/fortran.txt by crates/abi/src/fortran.rs: for every C function, the
//! Fortran symbols `mpi_x_`, `mpi_x__`, `mpi_x`, `MPI_X` (calling `MPI_X` in
//! libmpi.so.12) and their `pmpi` forms (calling `PMPI_X`), converting
//! sentinels, strings, LOGICALs and callbacks on the way. This crate adds
//! the runtime those conversions use (`rt`), the few procedures that
//! exist only in Fortran, and what the `mpi_f08` module calls besides the
//! wrappers (`f08`). The module's own procedures are compiled from the
//! generated mpi_f08.f90 into libgridmpi_f08.so.12 (Makefile).

#![allow(clippy::missing_safety_doc, clippy::too_many_arguments, clippy::not_unsafe_ptr_arg_deref)]

mod f08;
mod ffi;
mod rt;

#[allow(non_snake_case, non_upper_case_globals, non_camel_case_types, unused_mut, unused_variables, clippy::all)]
mod wrappers {
    use crate::ffi::*;
    use crate::rt;
    include!(concat!(env!("OUT_DIR"), "/wrappers.rs"));
}

/// MPI_F_SYNC_REG(buf): makes the compiler assume `buf` is read and written
/// (it is passed to an external procedure); nothing to do at run time.
macro_rules! f_sync_reg {
    ($($sym:ident),*) => {
        $(
            #[no_mangle]
            pub unsafe extern "C" fn $sym(_buf: *mut ffi::c_void) {}
        )*
    };
}

f_sync_reg!(mpi_f_sync_reg_, mpi_f_sync_reg__, mpi_f_sync_reg, MPI_F_SYNC_REG, pmpi_f_sync_reg_, pmpi_f_sync_reg__, pmpi_f_sync_reg, PMPI_F_SYNC_REG);

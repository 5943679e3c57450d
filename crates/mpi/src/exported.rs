//! Data symbols of the MPICH ABI: sentinel addresses that programs compare
//! against (mpi.h declares them `extern`).

use crate::ffi::*;

/// A pointer that may live in a `static` (the addresses are only compared).
#[repr(transparent)]
pub struct Sentinel(pub *const c_int);
// SAFETY: the pointee is never written through these pointers.
unsafe impl Sync for Sentinel {}

static UNWEIGHTED_STORAGE: c_int = 0;
static WEIGHTS_EMPTY_STORAGE: c_int = 0;
static F_STATUS_IGNORE_STORAGE: [c_int; 5] = [0; 5];
static F_STATUSES_IGNORE_STORAGE: [c_int; 5] = [0; 5];
static F08_STATUS_IGNORE_STORAGE: [c_int; 5] = [0; 5];
static F08_STATUSES_IGNORE_STORAGE: [c_int; 5] = [0; 5];
static PVAR_ALL_HANDLES_STORAGE: c_int = 0;

/// `MPI_UNWEIGHTED`: "no weights" for the graph topology constructors.
#[no_mangle]
pub static MPI_UNWEIGHTED: Sentinel = Sentinel(&UNWEIGHTED_STORAGE);
/// `MPI_WEIGHTS_EMPTY`: weights given, but there are no edges.
#[no_mangle]
pub static MPI_WEIGHTS_EMPTY: Sentinel = Sentinel(&WEIGHTS_EMPTY_STORAGE);
/// Fortran status sentinels used by MPI_Status_f2c and friends.
#[no_mangle]
pub static MPI_F_STATUS_IGNORE: Sentinel = Sentinel(F_STATUS_IGNORE_STORAGE.as_ptr());
#[no_mangle]
pub static MPI_F_STATUSES_IGNORE: Sentinel = Sentinel(F_STATUSES_IGNORE_STORAGE.as_ptr());
#[no_mangle]
pub static MPI_F08_STATUS_IGNORE: Sentinel = Sentinel(F08_STATUS_IGNORE_STORAGE.as_ptr());
#[no_mangle]
pub static MPI_F08_STATUSES_IGNORE: Sentinel = Sentinel(F08_STATUSES_IGNORE_STORAGE.as_ptr());

pub fn is_unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, MPI_UNWEIGHTED.0)
}

pub fn is_weights_empty(p: *const c_int) -> bool {
    std::ptr::eq(p, MPI_WEIGHTS_EMPTY.0)
}

/// `MPI_T_PVAR_ALL_HANDLES`: every handle of a performance variable
/// session (MPI_T_pvar_start, _stop, _reset). A pointer in the MPICH ABI.
#[no_mangle]
pub static MPI_T_PVAR_ALL_HANDLES: Sentinel = Sentinel(&PVAR_ALL_HANDLES_STORAGE);

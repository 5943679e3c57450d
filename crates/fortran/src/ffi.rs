//! The C types of mpi.h that the wrappers pass to libmpi, and mpi.h's
//! integer constants (generated from abi/mpi.h.in).

#![allow(non_camel_case_types, non_upper_case_globals, dead_code)]

pub use std::ffi::{c_char, c_int, c_long, c_void};

pub type MPI_Aint = c_long;
pub type MPI_Count = i64;
pub type MPI_Offset = i64;
pub type MPI_Fint = c_int;
pub type MPI_Comm = c_int;
pub type MPI_Group = c_int;
pub type MPI_Datatype = c_int;
pub type MPI_Op = c_int;
pub type MPI_Errhandler = c_int;
pub type MPI_Request = c_int;
pub type MPI_Message = c_int;
pub type MPI_Info = c_int;
pub type MPI_Win = c_int;
pub type MPI_Session = c_int;
/// A pointer in the MPICH ABI (Fortran file handles are only passed to stubs).
pub type MPI_File = *mut c_void;

/// The C status; a Fortran INTEGER status(MPI_STATUS_SIZE) has the same layout.
#[repr(C)]
pub struct MPI_Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
}

#[repr(C)]
pub struct MPI_F08_status {
    pub count_lo: MPI_Fint,
    pub count_hi_and_cancelled: MPI_Fint,
    pub source: MPI_Fint,
    pub tag: MPI_Fint,
    pub error: MPI_Fint,
}

/// Every attribute copy function has this shape in C (handles are ints).
pub type CopyAttrFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
pub type DeleteAttrFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;
pub type MPI_Comm_copy_attr_function = CopyAttrFn;
pub type MPI_Comm_delete_attr_function = DeleteAttrFn;
pub type MPI_Type_copy_attr_function = CopyAttrFn;
pub type MPI_Type_delete_attr_function = DeleteAttrFn;
pub type MPI_Win_copy_attr_function = CopyAttrFn;
pub type MPI_Win_delete_attr_function = DeleteAttrFn;
pub type MPI_Copy_function = CopyAttrFn;
pub type MPI_Delete_function = DeleteAttrFn;
pub type MPI_User_function = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);
pub type MPI_User_function_c = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut MPI_Datatype);
pub type MPI_Comm_errhandler_function = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int, ...);
pub type MPI_Handler_function = MPI_Comm_errhandler_function;
pub type MPI_File_errhandler_function = unsafe extern "C" fn(*mut MPI_File, *mut c_int, ...);
pub type MPI_Win_errhandler_function = unsafe extern "C" fn(*mut MPI_Win, *mut c_int, ...);
pub type MPI_Session_errhandler_function = unsafe extern "C" fn(*mut MPI_Session, *mut c_int, ...);
pub type MPI_Grequest_query_function = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
pub type MPI_Grequest_free_function = unsafe extern "C" fn(*mut c_void) -> c_int;
pub type MPI_Grequest_cancel_function = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
pub type MPI_Datarep_conversion_function =
    unsafe extern "C" fn(*mut c_void, MPI_Datatype, c_int, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
pub type MPI_Datarep_conversion_function_c =
    unsafe extern "C" fn(*mut c_void, MPI_Datatype, MPI_Count, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
pub type MPI_Datarep_extent_function = unsafe extern "C" fn(MPI_Datatype, *mut MPI_Aint, *mut c_void) -> c_int;

include!(concat!(env!("OUT_DIR"), "/consts.rs"));

/// C's `MPI_BOTTOM`, `MPI_IN_PLACE`, `MPI_BUFFER_AUTOMATIC` and
/// `MPI_STATUS(ES)_IGNORE` (mpi.h.in).
pub const C_BOTTOM: *const c_void = std::ptr::null();
pub const C_IN_PLACE: *const c_void = usize::MAX as *const c_void;
pub const C_BUFFER_AUTOMATIC: *const c_void = (usize::MAX - 1) as *const c_void;
#[allow(clippy::manual_dangling_ptr)] // the value 1 is the ABI, not an alignment
pub const C_STATUS_IGNORE: *mut MPI_Status = 1 as *mut MPI_Status;

/// gfortran's LOGICAL values (also MPICH's configuration on Linux).
pub const FORTRAN_TRUE: MPI_Fint = 1;
pub const FORTRAN_FALSE: MPI_Fint = 0;

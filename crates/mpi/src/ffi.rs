//! The C types of mpi.h, and its integer constants (generated from
//! abi/mpi.h.in so that the header is the single source of every value).

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
pub type MPI_File = *mut c_void;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MPI_Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MPI_F08_status {
    pub count_lo: MPI_Fint,
    pub count_hi_and_cancelled: MPI_Fint,
    pub MPI_SOURCE: MPI_Fint,
    pub MPI_TAG: MPI_Fint,
    pub MPI_ERROR: MPI_Fint,
}

pub type MPI_User_function = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);
pub type MPI_User_function_c = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut MPI_Datatype);
pub type MPI_Comm_copy_attr_function =
    unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
pub type MPI_Comm_delete_attr_function = unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void, *mut c_void) -> c_int;
pub type MPI_Type_copy_attr_function =
    unsafe extern "C" fn(MPI_Datatype, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
pub type MPI_Type_delete_attr_function = unsafe extern "C" fn(MPI_Datatype, c_int, *mut c_void, *mut c_void) -> c_int;
pub type MPI_Win_copy_attr_function =
    unsafe extern "C" fn(MPI_Win, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
pub type MPI_Win_delete_attr_function = unsafe extern "C" fn(MPI_Win, c_int, *mut c_void, *mut c_void) -> c_int;
pub type MPI_Copy_function = MPI_Comm_copy_attr_function;
pub type MPI_Delete_function = MPI_Comm_delete_attr_function;
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

// MPI_T handles are pointers in the MPICH ABI. GridMPI's are tokens that
// name a table slot (see mpit/), never dereferenced.
pub type MPI_T_enum = *mut c_void;
pub type MPI_T_cvar_handle = *mut c_void;
pub type MPI_T_pvar_handle = *mut c_void;
pub type MPI_T_pvar_session = *mut c_void;
pub type MPI_T_event_registration = *mut c_void;
pub type MPI_T_event_instance = *mut c_void;
pub type MPI_T_cb_safety = c_int;
pub type MPI_T_source_order = c_int;
pub type MPI_T_event_cb_function = unsafe extern "C" fn(MPI_T_event_instance, MPI_T_event_registration, MPI_T_cb_safety, *mut c_void);
pub type MPI_T_event_free_cb_function = unsafe extern "C" fn(MPI_T_event_registration, MPI_T_cb_safety, *mut c_void);
pub type MPI_T_event_dropped_cb_function = unsafe extern "C" fn(MPI_Count, MPI_T_event_registration, c_int, MPI_T_cb_safety, *mut c_void);

include!(concat!(env!("OUT_DIR"), "/consts.rs"));

/// `MPI_STATUS_IGNORE` / `MPI_STATUSES_IGNORE`.
pub const STATUS_IGNORE: *mut MPI_Status = 1 as *mut MPI_Status;
/// `MPI_IN_PLACE`.
pub const IN_PLACE: *mut c_void = usize::MAX as *mut c_void;
/// `MPI_BUFFER_AUTOMATIC`.
pub const BUFFER_AUTOMATIC: *mut c_void = (usize::MAX - 1) as *mut c_void;
/// Largest tag a user may use (MPI_TAG_UB's value).
pub const TAG_UB: c_int = (1 << 30) - 1;

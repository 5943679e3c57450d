//! The C types on both sides: `abi` those of mpi_abi.h (what programs pass
//! us), `int` those of libmpi.so.12 (the MPICH ABI, what we pass on). The
//! generated code names types as C does (`MPI_Comm`), so each side is a
//! module of the same names.

#![allow(non_camel_case_types, non_snake_case, dead_code)]

/// The standard ABI: handles are pointers (here as `usize`, the same in
/// the calling convention, so their values can be computed with).
pub mod abi {
    pub use std::ffi::{c_char, c_int, c_void};
    pub type MPI_Aint = isize;
    pub type MPI_Count = i64;
    pub type MPI_Offset = i64;
    pub type MPI_Fint = c_int;
    pub type MPI_Comm = usize;
    pub type MPI_Datatype = usize;
    pub type MPI_Errhandler = usize;
    pub type MPI_File = usize;
    pub type MPI_Group = usize;
    pub type MPI_Info = usize;
    pub type MPI_Message = usize;
    pub type MPI_Op = usize;
    pub type MPI_Request = usize;
    pub type MPI_Session = usize;
    pub type MPI_Win = usize;

    /// The standard's status: three public fields and five words of ours
    /// (the element count's two halves, cancelled flag in the second).
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct MPI_Status {
        pub MPI_SOURCE: c_int,
        pub MPI_TAG: c_int,
        pub MPI_ERROR: c_int,
        pub internal: [c_int; 5],
    }

    pub type MPI_User_function = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);
    pub type MPI_User_function_c = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut MPI_Datatype);
    /// The copy callbacks of communicator, datatype and window keyvals
    /// (the object handle is pointer-sized for all three).
    pub type Copy_attr_function = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
    pub type Delete_attr_function = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void) -> c_int;
    /// The four error handler kinds: a pointer to the object's handle and
    /// to the error code (variadic in C; called with exactly these two).
    pub type Errhandler_function = unsafe extern "C" fn(*mut usize, *mut c_int);
    pub type MPI_Grequest_query_function = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
    pub type MPI_Grequest_free_function = unsafe extern "C" fn(*mut c_void) -> c_int;
    pub type MPI_Grequest_cancel_function = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
    pub type MPI_Datarep_conversion_function =
        unsafe extern "C" fn(*mut c_void, MPI_Datatype, c_int, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
    pub type MPI_Datarep_conversion_function_c =
        unsafe extern "C" fn(*mut c_void, MPI_Datatype, MPI_Count, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
    pub type MPI_Datarep_extent_function = unsafe extern "C" fn(MPI_Datatype, *mut MPI_Aint, *mut c_void) -> c_int;

    pub use super::tool::*;
}

/// libmpi.so.12 (MPICH ABI): handles are 32-bit integers, MPI_File a pointer.
pub mod int {
    pub use std::ffi::{c_char, c_int, c_void};
    pub type MPI_Aint = isize;
    pub type MPI_Count = i64;
    pub type MPI_Offset = i64;
    pub type MPI_Fint = c_int;
    pub type MPI_Comm = c_int;
    pub type MPI_Datatype = c_int;
    pub type MPI_Errhandler = c_int;
    pub type MPI_File = usize;
    pub type MPI_Group = c_int;
    pub type MPI_Info = c_int;
    pub type MPI_Message = c_int;
    pub type MPI_Op = c_int;
    pub type MPI_Request = c_int;
    pub type MPI_Session = c_int;
    pub type MPI_Win = c_int;

    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct MPI_Status {
        pub count_lo: c_int,
        pub count_hi_and_cancelled: c_int,
        pub MPI_SOURCE: c_int,
        pub MPI_TAG: c_int,
        pub MPI_ERROR: c_int,
    }
    pub type MPI_F08_status = MPI_Status;

    pub type MPI_User_function = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);
    pub type MPI_User_function_c = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut MPI_Datatype);
    pub type MPI_Comm_copy_attr_function = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
    pub type MPI_Comm_delete_attr_function = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;
    pub type MPI_Type_copy_attr_function = MPI_Comm_copy_attr_function;
    pub type MPI_Type_delete_attr_function = MPI_Comm_delete_attr_function;
    pub type MPI_Win_copy_attr_function = MPI_Comm_copy_attr_function;
    pub type MPI_Win_delete_attr_function = MPI_Comm_delete_attr_function;
    pub type MPI_Copy_function = MPI_Comm_copy_attr_function;
    pub type MPI_Delete_function = MPI_Comm_delete_attr_function;
    // Variadic in C; libmpi passes exactly the two pointers.
    pub type MPI_Comm_errhandler_function = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int);
    pub type MPI_File_errhandler_function = unsafe extern "C" fn(*mut MPI_File, *mut c_int);
    pub type MPI_Win_errhandler_function = unsafe extern "C" fn(*mut MPI_Win, *mut c_int);
    pub type MPI_Session_errhandler_function = unsafe extern "C" fn(*mut MPI_Session, *mut c_int);
    pub type MPI_Handler_function = MPI_Comm_errhandler_function;
    pub type MPI_Grequest_query_function = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
    pub type MPI_Grequest_free_function = unsafe extern "C" fn(*mut c_void) -> c_int;
    pub type MPI_Grequest_cancel_function = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
    pub type MPI_Datarep_conversion_function =
        unsafe extern "C" fn(*mut c_void, MPI_Datatype, c_int, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
    pub type MPI_Datarep_conversion_function_c =
        unsafe extern "C" fn(*mut c_void, MPI_Datatype, MPI_Count, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
    pub type MPI_Datarep_extent_function = unsafe extern "C" fn(MPI_Datatype, *mut MPI_Aint, *mut c_void) -> c_int;

    pub use super::tool::*;
}

/// MPI_T's handles are pointers in both ABIs and pass unchanged.
pub mod tool {
    use std::ffi::{c_int, c_void};
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
    pub type MPI_T_event_dropped_cb_function =
        unsafe extern "C" fn(i64, MPI_T_event_registration, c_int, MPI_T_cb_safety, *mut c_void);
}

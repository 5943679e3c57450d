//! The functions only the standard ABI has: what ABI this is
//! (MPI_Abi_get_version, MPI_Abi_get_info), the Fortran properties a
//! Fortran binding registers (MPI_Abi_{get,set}_fortran_{info,booleans}),
//! and handles as integers (MPI_X_toint, MPI_X_fromint; the standard ABI's
//! replacement of the MPI_Fint conversions).

#![allow(non_snake_case, clippy::missing_safety_doc)]

use crate::conv::err_out;
use crate::real;
use crate::tables::*;
use crate::types::abi;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

/// libmpi's MPI_ERR_ARG and MPI_ERR_ABI as codes of the standard ABI.
fn err_arg() -> c_int {
    err_out(errclass_in(13))
}
fn err_abi() -> c_int {
    err_out(errclass_in(62))
}

/// Defines `MPI_X` calling `PMPI_X` for the functions of this module.
macro_rules! mpi_alias {
    ($name:ident => $pname:ident ( $($a:ident : $t:ty),* ) -> $r:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $r { $pname($($a),*) }
    };
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Abi_get_version(abi_major: *mut c_int, abi_minor: *mut c_int) -> c_int {
    if abi_major.is_null() || abi_minor.is_null() {
        return err_arg();
    }
    // MPI-5.0's ABI is version 1.0.
    *abi_major = 1;
    *abi_minor = 0;
    0
}
mpi_alias!(MPI_Abi_get_version => PMPI_Abi_get_version(abi_major: *mut c_int, abi_minor: *mut c_int) -> c_int);

/// A new info object holding `pairs` (libmpi's handle).
unsafe fn new_info(pairs: &[(&std::ffi::CStr, String)]) -> Result<c_int, c_int> {
    let mut info = 0;
    let rc = real::PMPI_Info_create(&mut info);
    if rc != 0 {
        return Err(err_out(rc));
    }
    for (k, v) in pairs {
        let v = std::ffi::CString::new(v.as_str()).unwrap();
        let rc = real::PMPI_Info_set(info, k.as_ptr(), v.as_ptr());
        if rc != 0 {
            return Err(err_out(rc));
        }
    }
    Ok(info)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Abi_get_info(info: *mut abi::MPI_Info) -> c_int {
    if info.is_null() {
        return err_arg();
    }
    let sizes = [
        (c"mpi_aint_size", std::mem::size_of::<abi::MPI_Aint>().to_string()),
        (c"mpi_count_size", std::mem::size_of::<abi::MPI_Count>().to_string()),
        (c"mpi_offset_size", std::mem::size_of::<abi::MPI_Offset>().to_string()),
    ];
    match new_info(&sizes) {
        Ok(i) => {
            *info = info_out(i);
            0
        }
        Err(e) => e,
    }
}
mpi_alias!(MPI_Abi_get_info => PMPI_Abi_get_info(info: *mut abi::MPI_Info) -> c_int);

/// What MPI_Abi_set_fortran_info registered: a copy of its info (libmpi's
/// handle), 0 until then. Only the first call counts.
static FORTRAN_INFO: AtomicI32 = AtomicI32::new(0);

#[no_mangle]
pub unsafe extern "C" fn PMPI_Abi_set_fortran_info(info: abi::MPI_Info) -> c_int {
    let mut copy = 0;
    let rc = real::PMPI_Info_dup(info_in(info), &mut copy);
    if rc != 0 {
        return err_out(rc);
    }
    if FORTRAN_INFO.compare_exchange(0, copy, Ordering::AcqRel, Ordering::Acquire).is_err() {
        real::PMPI_Info_free(&mut copy);
        return err_abi();
    }
    0
}
mpi_alias!(MPI_Abi_set_fortran_info => PMPI_Abi_set_fortran_info(info: abi::MPI_Info) -> c_int);

/// A new info with the registered Fortran properties, or MPI_INFO_NULL: the
/// C library does not know the Fortran compiler until a binding says.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Abi_get_fortran_info(info: *mut abi::MPI_Info) -> c_int {
    if info.is_null() {
        return err_arg();
    }
    let reg = FORTRAN_INFO.load(Ordering::Acquire);
    if reg == 0 {
        *info = ABI_INFO_NULL;
        return 0;
    }
    let mut copy = 0;
    let rc = real::PMPI_Info_dup(reg, &mut copy);
    if rc == 0 {
        *info = info_out(copy);
    }
    err_out(rc)
}
mpi_alias!(MPI_Abi_get_fortran_info => PMPI_Abi_get_fortran_info(info: *mut abi::MPI_Info) -> c_int);

/// A LOGICAL's size and its .TRUE. and .FALSE. bit patterns.
type Booleans = (c_int, Vec<u8>, Vec<u8>);
/// What MPI_Abi_set_fortran_booleans registered.
static BOOLEANS: Mutex<Option<Booleans>> = Mutex::new(None);

#[no_mangle]
pub unsafe extern "C" fn PMPI_Abi_set_fortran_booleans(logical_size: c_int, logical_true: *mut c_void, logical_false: *mut c_void) -> c_int {
    if !(1..=16).contains(&logical_size) || logical_true.is_null() || logical_false.is_null() {
        return err_arg();
    }
    let n = logical_size as usize;
    let bytes = |p: *mut c_void| std::slice::from_raw_parts(p as *const u8, n).to_vec();
    let mut b = BOOLEANS.lock().unwrap_or_else(|e| e.into_inner());
    if b.is_some() {
        return err_abi();
    }
    *b = Some((logical_size, bytes(logical_true), bytes(logical_false)));
    0
}
mpi_alias!(MPI_Abi_set_fortran_booleans => PMPI_Abi_set_fortran_booleans(logical_size: c_int, logical_true: *mut c_void, logical_false: *mut c_void) -> c_int);

#[no_mangle]
pub unsafe extern "C" fn PMPI_Abi_get_fortran_booleans(logical_size: c_int, logical_true: *mut c_void, logical_false: *mut c_void, is_set: *mut c_int) -> c_int {
    if is_set.is_null() {
        return err_arg();
    }
    let b = BOOLEANS.lock().unwrap_or_else(|e| e.into_inner());
    match &*b {
        Some((size, t, f)) if *size == logical_size && !logical_true.is_null() && !logical_false.is_null() => {
            std::ptr::copy_nonoverlapping(t.as_ptr(), logical_true as *mut u8, t.len());
            std::ptr::copy_nonoverlapping(f.as_ptr(), logical_false as *mut u8, f.len());
            *is_set = 1;
        }
        _ => *is_set = 0,
    }
    0
}
mpi_alias!(MPI_Abi_get_fortran_booleans => PMPI_Abi_get_fortran_booleans(logical_size: c_int, logical_true: *mut c_void, logical_false: *mut c_void, is_set: *mut c_int) -> c_int);

/// MPI_X_toint gives libmpi's handle (the integer its Fortran binding
/// uses), MPI_X_fromint takes it back: both O(1), and they round-trip.
macro_rules! toint_fromint {
    ($($to:ident $pto:ident $from:ident $pfrom:ident $hin:ident $hout:ident;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $pto(h: usize) -> c_int { $hin(h) }
        #[no_mangle]
        pub extern "C" fn $to(h: usize) -> c_int { $pto(h) }
        #[no_mangle]
        pub extern "C" fn $pfrom(i: c_int) -> usize { $hout(i) }
        #[no_mangle]
        pub extern "C" fn $from(i: c_int) -> usize { $pfrom(i) }
    )*};
}
toint_fromint! {
    MPI_Comm_toint PMPI_Comm_toint MPI_Comm_fromint PMPI_Comm_fromint comm_in comm_out;
    MPI_Errhandler_toint PMPI_Errhandler_toint MPI_Errhandler_fromint PMPI_Errhandler_fromint errhandler_in errhandler_out;
    MPI_Group_toint PMPI_Group_toint MPI_Group_fromint PMPI_Group_fromint group_in group_out;
    MPI_Info_toint PMPI_Info_toint MPI_Info_fromint PMPI_Info_fromint info_in info_out;
    MPI_Message_toint PMPI_Message_toint MPI_Message_fromint PMPI_Message_fromint message_in message_out;
    MPI_Op_toint PMPI_Op_toint MPI_Op_fromint PMPI_Op_fromint op_in op_out;
    MPI_Request_toint PMPI_Request_toint MPI_Request_fromint PMPI_Request_fromint request_in request_out;
    MPI_Session_toint PMPI_Session_toint MPI_Session_fromint PMPI_Session_fromint session_in session_out;
    MPI_Type_toint PMPI_Type_toint MPI_Type_fromint PMPI_Type_fromint datatype_in datatype_out;
    MPI_Win_toint PMPI_Win_toint MPI_Win_fromint PMPI_Win_fromint win_in win_out;
}

/// Files are pointers in libmpi too: their integer is libmpi's MPI_File_c2f.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_toint(file: abi::MPI_File) -> c_int {
    real::PMPI_File_c2f(file_in(file))
}
#[no_mangle]
pub unsafe extern "C" fn MPI_File_toint(file: abi::MPI_File) -> c_int {
    PMPI_File_toint(file)
}
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_fromint(file: c_int) -> abi::MPI_File {
    file_out(real::PMPI_File_f2c(file))
}
#[no_mangle]
pub unsafe extern "C" fn MPI_File_fromint(file: c_int) -> abi::MPI_File {
    PMPI_File_fromint(file)
}

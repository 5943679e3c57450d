//! The functions that take user callbacks. libmpi calls back with its own
//! handles, statuses and error codes; the user's function expects the
//! standard ABI's, so libmpi gets a trampoline that translates and calls
//! the user's function.
//!
//! With an extra_state argument (attribute copy/delete, generalized
//! requests, data representations) the trampoline finds the user's
//! functions in a box passed as that argument. Reduction operations and
//! error handlers have none: each distinct user function gets a slot, and
//! the trampoline of slot K (a function of its own, `op_trampoline::<K>`)
//! calls the function stored there. Slots are never reused (an operation
//! or handler may still be in use after it is freed); the same function
//! registered again takes its old slot, so only the number of distinct
//! functions is bounded (`SLOTS`, build.rs).

#![allow(non_snake_case, clippy::missing_safety_doc)]

use crate::conv::{err_in, err_out, status_abi, status_int};
use crate::real;
use crate::tables::*;
use crate::types::{abi, int};
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

// ---- slots ----------------------------------------------------------------

static OP_FNS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static OP_C_FNS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static COMM_ERRH_FNS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static FILE_ERRH_FNS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static WIN_ERRH_FNS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static SESSION_ERRH_FNS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

/// The slot holding `f`, taking a free one the first time.
fn slot(fns: &[AtomicUsize; SLOTS], f: usize) -> Option<usize> {
    for (k, s) in fns.iter().enumerate() {
        match s.compare_exchange(0, f, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Some(k),
            Err(cur) if cur == f => return Some(k),
            Err(_) => {}
        }
    }
    None
}

/// The error for a full slot table (through no handler: there is no object yet).
fn no_slot() -> c_int {
    err_out(errclass_in(39)) // MPI_ERR_NO_MEM
}

include!(concat!(env!("OUT_DIR"), "/slots.rs"));

// ---- reduction operations -------------------------------------------------

unsafe extern "C" fn op_trampoline<const K: usize>(inv: *mut c_void, inout: *mut c_void, len: *mut c_int, dt: *mut int::MPI_Datatype) {
    let f: abi::MPI_User_function = std::mem::transmute(OP_FNS[K].load(Ordering::Acquire));
    let mut t = datatype_out(*dt);
    f(inv, inout, len, &mut t)
}

unsafe extern "C" fn op_c_trampoline<const K: usize>(inv: *mut c_void, inout: *mut c_void, len: *mut i64, dt: *mut int::MPI_Datatype) {
    let f: abi::MPI_User_function_c = std::mem::transmute(OP_C_FNS[K].load(Ordering::Acquire));
    let mut t = datatype_out(*dt);
    f(inv, inout, len, &mut t)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_create(user_fn: Option<abi::MPI_User_function>, commute: c_int, op: *mut abi::MPI_Op) -> c_int {
    let tramp = match user_fn {
        Some(f) => match slot(&OP_FNS, f as usize) {
            Some(k) => Some(OP_TRAMPOLINES[k]),
            None => return no_slot(),
        },
        None => None, // libmpi reports it
    };
    let mut t = 0;
    let rc = real::PMPI_Op_create(tramp, commute, crate::conv::ptr_arg(op, &mut t));
    crate::conv::ptr_out(op, t, op_out);
    err_out(rc)
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create(user_fn: Option<abi::MPI_User_function>, commute: c_int, op: *mut abi::MPI_Op) -> c_int {
    PMPI_Op_create(user_fn, commute, op)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_create_c(user_fn: Option<abi::MPI_User_function_c>, commute: c_int, op: *mut abi::MPI_Op) -> c_int {
    let tramp = match user_fn {
        Some(f) => match slot(&OP_C_FNS, f as usize) {
            Some(k) => Some(OP_C_TRAMPOLINES[k]),
            None => return no_slot(),
        },
        None => None,
    };
    let mut t = 0;
    let rc = real::PMPI_Op_create_c(tramp, commute, crate::conv::ptr_arg(op, &mut t));
    crate::conv::ptr_out(op, t, op_out);
    err_out(rc)
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create_c(user_fn: Option<abi::MPI_User_function_c>, commute: c_int, op: *mut abi::MPI_Op) -> c_int {
    PMPI_Op_create_c(user_fn, commute, op)
}

// ---- error handlers ---------------------------------------------------------

/// An error handler trampoline: the object's handle and the code as the
/// standard's, then the object back (a handler may not change it, but
/// passes a pointer).
macro_rules! errh_trampoline {
    ($name:ident, $fns:ident, $ity:ty, $out:ident, $in:ident) => {
        unsafe extern "C" fn $name<const K: usize>(obj: *mut $ity, code: *mut c_int) {
            let f: abi::Errhandler_function = std::mem::transmute($fns[K].load(Ordering::Acquire));
            let mut h = $out(*obj);
            let mut c = err_out(*code);
            f(&mut h, &mut c);
            *obj = $in(h);
        }
    };
}
errh_trampoline!(comm_errh_trampoline, COMM_ERRH_FNS, int::MPI_Comm, comm_out, comm_in);
errh_trampoline!(file_errh_trampoline, FILE_ERRH_FNS, int::MPI_File, file_out, file_in);
errh_trampoline!(win_errh_trampoline, WIN_ERRH_FNS, int::MPI_Win, win_out, win_in);
errh_trampoline!(session_errh_trampoline, SESSION_ERRH_FNS, int::MPI_Session, session_out, session_in);

/// `MPI_X_create_errhandler`.
macro_rules! create_errhandler {
    ($pname:ident, $name:ident, $real:ident, $fns:ident, $tramps:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $pname(f: Option<abi::Errhandler_function>, errhandler: *mut abi::MPI_Errhandler) -> c_int {
            let tramp = match f {
                Some(f) => match slot(&$fns, f as usize) {
                    Some(k) => Some($tramps[k]),
                    None => return no_slot(),
                },
                None => None,
            };
            let mut t = 0;
            let rc = real::$real(tramp, crate::conv::ptr_arg(errhandler, &mut t));
            crate::conv::ptr_out(errhandler, t, errhandler_out);
            err_out(rc)
        }
        #[no_mangle]
        pub unsafe extern "C" fn $name(f: Option<abi::Errhandler_function>, errhandler: *mut abi::MPI_Errhandler) -> c_int {
            $pname(f, errhandler)
        }
    };
}
create_errhandler!(PMPI_Comm_create_errhandler, MPI_Comm_create_errhandler, PMPI_Comm_create_errhandler, COMM_ERRH_FNS, COMM_ERRH_TRAMPOLINES);
create_errhandler!(PMPI_File_create_errhandler, MPI_File_create_errhandler, PMPI_File_create_errhandler, FILE_ERRH_FNS, FILE_ERRH_TRAMPOLINES);
create_errhandler!(PMPI_Win_create_errhandler, MPI_Win_create_errhandler, PMPI_Win_create_errhandler, WIN_ERRH_FNS, WIN_ERRH_TRAMPOLINES);
create_errhandler!(
    PMPI_Session_create_errhandler,
    MPI_Session_create_errhandler,
    PMPI_Session_create_errhandler,
    SESSION_ERRH_FNS,
    SESSION_ERRH_TRAMPOLINES
);

// ---- attribute keyvals --------------------------------------------------------

/// The user's callbacks of one keyval, libmpi's extra_state for it. Kept
/// for the life of the process: attributes may outlive the keyval.
struct Keyval {
    copy: usize,
    delete: usize,
    extra: *mut c_void,
    /// Handles of this kind as the standard's.
    obj_out: fn(c_int) -> usize,
}

unsafe extern "C" fn copy_trampoline(obj: c_int, keyval: c_int, kv: *mut c_void, vin: *mut c_void, vout: *mut c_void, flag: *mut c_int) -> c_int {
    let kv = &*(kv as *const Keyval);
    let f: abi::Copy_attr_function = std::mem::transmute(kv.copy);
    err_in(f((kv.obj_out)(obj), keyval_out(keyval), kv.extra, vin, vout, flag))
}

unsafe extern "C" fn delete_trampoline(obj: c_int, keyval: c_int, val: *mut c_void, kv: *mut c_void) -> c_int {
    let kv = &*(kv as *const Keyval);
    let f: abi::Delete_attr_function = std::mem::transmute(kv.delete);
    err_in(f((kv.obj_out)(obj), keyval_out(keyval), val, kv.extra))
}

/// libmpi's copy function for the standard's: MPI_X_NULL_COPY_FN is 0,
/// MPI_X_DUP_FN is 1 (libmpi's is MPIR_Dup_fn), else the trampoline.
fn copy_fn(copy: usize) -> Option<int::MPI_Comm_copy_attr_function> {
    static DUP_FN: AtomicUsize = AtomicUsize::new(0);
    match copy {
        0 => None,
        // SAFETY: MPIR_Dup_fn has the copy function's signature.
        1 => Some(unsafe { std::mem::transmute::<usize, int::MPI_Comm_copy_attr_function>(real::resolve(&DUP_FN, c"MPIR_Dup_fn")) }),
        _ => Some(copy_trampoline),
    }
}

macro_rules! create_keyval {
    ($pname:ident, $name:ident, $real:ident, $obj_out:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $pname(
            copy: Option<abi::Copy_attr_function>,
            delete: Option<abi::Delete_attr_function>,
            keyval: *mut c_int,
            extra_state: *mut c_void,
        ) -> c_int {
            let copy = copy.map_or(0, |f| f as usize);
            let delete = delete.map_or(0, |f| f as usize);
            let kv = Box::into_raw(Box::new(Keyval { copy, delete, extra: extra_state, obj_out: $obj_out }));
            let del: Option<int::MPI_Comm_delete_attr_function> = if delete == 0 { None } else { Some(delete_trampoline) };
            let mut t = 0;
            let rc = real::$real(copy_fn(copy), del, crate::conv::ptr_arg(keyval, &mut t), kv.cast());
            crate::conv::ptr_out(keyval, t, keyval_out);
            err_out(rc)
        }
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            copy: Option<abi::Copy_attr_function>,
            delete: Option<abi::Delete_attr_function>,
            keyval: *mut c_int,
            extra_state: *mut c_void,
        ) -> c_int {
            $pname(copy, delete, keyval, extra_state)
        }
    };
}
create_keyval!(PMPI_Comm_create_keyval, MPI_Comm_create_keyval, PMPI_Comm_create_keyval, comm_out);
create_keyval!(PMPI_Keyval_create, MPI_Keyval_create, PMPI_Keyval_create, comm_out);
create_keyval!(PMPI_Type_create_keyval, MPI_Type_create_keyval, PMPI_Type_create_keyval, datatype_out);
create_keyval!(PMPI_Win_create_keyval, MPI_Win_create_keyval, PMPI_Win_create_keyval, win_out);

// ---- generalized requests ------------------------------------------------------

struct Grequest {
    query: abi::MPI_Grequest_query_function,
    free: abi::MPI_Grequest_free_function,
    cancel: abi::MPI_Grequest_cancel_function,
    extra: *mut c_void,
}

unsafe extern "C" fn greq_query(g: *mut c_void, status: *mut int::MPI_Status) -> c_int {
    let g = &*(g as *const Grequest);
    let mut s = status_abi(&*status);
    let rc = (g.query)(g.extra, &mut s);
    *status = status_int(&s);
    err_in(rc)
}

unsafe extern "C" fn greq_free(g: *mut c_void) -> c_int {
    // libmpi calls free once, last: the box goes with it.
    let g = Box::from_raw(g as *mut Grequest);
    err_in((g.free)(g.extra))
}

unsafe extern "C" fn greq_cancel(g: *mut c_void, complete: c_int) -> c_int {
    let g = &*(g as *const Grequest);
    err_in((g.cancel)(g.extra, complete))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Grequest_start(
    query: Option<abi::MPI_Grequest_query_function>,
    free: Option<abi::MPI_Grequest_free_function>,
    cancel: Option<abi::MPI_Grequest_cancel_function>,
    extra_state: *mut c_void,
    request: *mut abi::MPI_Request,
) -> c_int {
    let mut t = 0;
    let rc = match (query, free, cancel) {
        (Some(query), Some(free), Some(cancel)) => {
            let g = Box::into_raw(Box::new(Grequest { query, free, cancel, extra: extra_state }));
            let rc = real::PMPI_Grequest_start(Some(greq_query), Some(greq_free), Some(greq_cancel), g.cast(), crate::conv::ptr_arg(request, &mut t));
            if rc != 0 {
                drop(Box::from_raw(g));
            }
            rc
        }
        // A missing function: libmpi reports it.
        _ => real::PMPI_Grequest_start(None, None, None, extra_state, crate::conv::ptr_arg(request, &mut t)),
    };
    crate::conv::ptr_out(request, t, request_out);
    err_out(rc)
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_start(
    query: Option<abi::MPI_Grequest_query_function>,
    free: Option<abi::MPI_Grequest_free_function>,
    cancel: Option<abi::MPI_Grequest_cancel_function>,
    extra_state: *mut c_void,
    request: *mut abi::MPI_Request,
) -> c_int {
    PMPI_Grequest_start(query, free, cancel, extra_state, request)
}

// ---- user-defined data representations -------------------------------------------

struct Datarep {
    read: usize,
    write: usize,
    extent: abi::MPI_Datarep_extent_function,
    extra: *mut c_void,
}

unsafe extern "C" fn datarep_read(buf: *mut c_void, dt: c_int, count: c_int, file: *mut c_void, pos: i64, d: *mut c_void) -> c_int {
    let d = &*(d as *const Datarep);
    let f: abi::MPI_Datarep_conversion_function = std::mem::transmute(d.read);
    err_in(f(buf, datatype_out(dt), count, file, pos, d.extra))
}
unsafe extern "C" fn datarep_write(buf: *mut c_void, dt: c_int, count: c_int, file: *mut c_void, pos: i64, d: *mut c_void) -> c_int {
    let d = &*(d as *const Datarep);
    let f: abi::MPI_Datarep_conversion_function = std::mem::transmute(d.write);
    err_in(f(buf, datatype_out(dt), count, file, pos, d.extra))
}
unsafe extern "C" fn datarep_read_c(buf: *mut c_void, dt: c_int, count: i64, file: *mut c_void, pos: i64, d: *mut c_void) -> c_int {
    let d = &*(d as *const Datarep);
    let f: abi::MPI_Datarep_conversion_function_c = std::mem::transmute(d.read);
    err_in(f(buf, datatype_out(dt), count, file, pos, d.extra))
}
unsafe extern "C" fn datarep_write_c(buf: *mut c_void, dt: c_int, count: i64, file: *mut c_void, pos: i64, d: *mut c_void) -> c_int {
    let d = &*(d as *const Datarep);
    let f: abi::MPI_Datarep_conversion_function_c = std::mem::transmute(d.write);
    err_in(f(buf, datatype_out(dt), count, file, pos, d.extra))
}
unsafe extern "C" fn datarep_extent(dt: c_int, extent: *mut isize, d: *mut c_void) -> c_int {
    let d = &*(d as *const Datarep);
    err_in((d.extent)(datatype_out(dt), extent, d.extra))
}

/// The box for a representation (kept: libmpi keeps it registered for good).
unsafe fn datarep(read: usize, write: usize, extent: Option<abi::MPI_Datarep_extent_function>, extra: *mut c_void) -> Option<*mut c_void> {
    Some(Box::into_raw(Box::new(Datarep { read, write, extent: extent?, extra })).cast())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Register_datarep(
    name: *const c_char,
    read: Option<abi::MPI_Datarep_conversion_function>,
    write: Option<abi::MPI_Datarep_conversion_function>,
    extent: Option<abi::MPI_Datarep_extent_function>,
    extra_state: *mut c_void,
) -> c_int {
    let (r, w) = (read.map_or(0, |f| f as usize), write.map_or(0, |f| f as usize));
    let rc = match datarep(r, w, extent, extra_state) {
        Some(d) => real::PMPI_Register_datarep(
            name,
            (r != 0).then_some(datarep_read as int::MPI_Datarep_conversion_function),
            (w != 0).then_some(datarep_write as int::MPI_Datarep_conversion_function),
            Some(datarep_extent),
            d,
        ),
        None => real::PMPI_Register_datarep(name, None, None, None, extra_state),
    };
    err_out(rc)
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Register_datarep(
    name: *const c_char,
    read: Option<abi::MPI_Datarep_conversion_function>,
    write: Option<abi::MPI_Datarep_conversion_function>,
    extent: Option<abi::MPI_Datarep_extent_function>,
    extra_state: *mut c_void,
) -> c_int {
    PMPI_Register_datarep(name, read, write, extent, extra_state)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Register_datarep_c(
    name: *const c_char,
    read: Option<abi::MPI_Datarep_conversion_function_c>,
    write: Option<abi::MPI_Datarep_conversion_function_c>,
    extent: Option<abi::MPI_Datarep_extent_function>,
    extra_state: *mut c_void,
) -> c_int {
    let (r, w) = (read.map_or(0, |f| f as usize), write.map_or(0, |f| f as usize));
    let rc = match datarep(r, w, extent, extra_state) {
        Some(d) => real::PMPI_Register_datarep_c(
            name,
            (r != 0).then_some(datarep_read_c as int::MPI_Datarep_conversion_function_c),
            (w != 0).then_some(datarep_write_c as int::MPI_Datarep_conversion_function_c),
            Some(datarep_extent),
            d,
        ),
        None => real::PMPI_Register_datarep_c(name, None, None, None, extra_state),
    };
    err_out(rc)
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Register_datarep_c(
    name: *const c_char,
    read: Option<abi::MPI_Datarep_conversion_function_c>,
    write: Option<abi::MPI_Datarep_conversion_function_c>,
    extent: Option<abi::MPI_Datarep_extent_function>,
    extra_state: *mut c_void,
) -> c_int {
    PMPI_Register_datarep_c(name, read, write, extent, extra_state)
}

//! Error handlers, error classes/codes/strings.
//!
//! Error handlers live outside the MPI state, in a table of their own: a
//! program creates the handler it passes to MPI_Session_init before any
//! session (or MPI_Init) exists, and may free handlers at any time.

use super::*;
use crate::handles::{Kind, Table};
use crate::objects::*;
use crate::state::{self, api, Target};
use std::sync::Mutex;

/// Every user error handler of the process. Lock order: the state's lock
/// (if taken) before this one; nothing here calls back into the state.
static ERRHS: Mutex<Option<Table<ErrhEntry>>> = Mutex::new(None);

fn with_errhs<T>(f: impl FnOnce(&mut Table<ErrhEntry>) -> T) -> T {
    let mut g = ERRHS.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(|| Table::new(Kind::Errhandler)))
}

/// Which kind of object an error handler was made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrhKind {
    Comm,
    Win,
    File,
    Session,
}

impl ErrhFunc {
    fn kind(&self) -> ErrhKind {
        match self {
            ErrhFunc::Comm(_) => ErrhKind::Comm,
            ErrhFunc::Win(_) => ErrhKind::Win,
            ErrhFunc::File(_) => ErrhKind::File,
            ErrhFunc::Session(_) => ErrhKind::Session,
        }
    }
}

/// A new user error handler (one reference, the caller's handle).
pub fn new_errhandler(func: ErrhFunc) -> MPI_Errhandler {
    with_errhs(|t| t.insert(ErrhEntry { func, refs: 1 }))
}

/// The function of a user error handler (None for predefined or unknown ones).
pub fn errhandler_func(h: MPI_Errhandler) -> Option<ErrhFunc> {
    with_errhs(|t| t.get(h).map(|e| e.func))
}

/// An object starts using `h`.
pub fn retain_errhandler(h: MPI_Errhandler) {
    with_errhs(|t| {
        if let Some(e) = t.get_mut(h) {
            e.refs += 1;
        }
    })
}

/// Drop one reference to a user error handler (an object stopped using
/// it, or the user freed the handle).
pub fn release_errhandler(h: MPI_Errhandler) {
    with_errhs(|t| {
        if let Some(e) = t.get_mut(h) {
            e.refs = e.refs.saturating_sub(1);
            if e.refs == 0 {
                t.remove(h);
            }
        }
    })
}

/// Check that `h` is a predefined handler or a user handler made for
/// objects of `kind`.
pub fn check_errhandler(h: MPI_Errhandler, kind: ErrhKind) -> R<()> {
    match h {
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT => Ok(()),
        MPI_ERRHANDLER_NULL => Err(err(MPI_ERR_ARG, "the error handler is MPI_ERRHANDLER_NULL")),
        _ => match errhandler_func(h) {
            Some(f) if f.kind() == kind => Ok(()),
            Some(f) => Err(err(MPI_ERR_ARG, format!("the error handler was made for {:?} objects, not {kind:?} ones", f.kind()))),
            None => Err(err(MPI_ERR_ARG, format!("invalid error handler {h:#x}"))),
        },
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_errhandler(comm_errhandler_fn: Option<MPI_Comm_errhandler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    api("MPI_Comm_create_errhandler", Target::NoComm, || {
        check_ptr(errhandler, "errhandler")?;
        let f = comm_errhandler_fn.ok_or_else(|| err(MPI_ERR_ARG, "the handler function is NULL"))?;
        *errhandler = new_errhandler(ErrhFunc::Comm(f));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_create(function: Option<MPI_Handler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    PMPI_Comm_create_errhandler(function, errhandler)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    api("MPI_Comm_set_errhandler", Target::Comm(comm), || {
        check_errhandler(errhandler, ErrhKind::Comm)?;
        state::with(|st| {
            let old = st.comm(comm)?.errh;
            retain_errhandler(errhandler);
            st.comm_mut(comm)?.errh = errhandler;
            release_errhandler(old);
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_errhandler(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    api("MPI_Comm_get_errhandler", Target::Comm(comm), || {
        check_ptr(errhandler, "errhandler")?;
        *errhandler = state::with(|st| {
            let h = st.comm(comm)?.errh;
            // The returned handle is a new reference the user frees.
            retain_errhandler(h);
            Ok(h)
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_free(errhandler: *mut MPI_Errhandler) -> c_int {
    api("MPI_Errhandler_free", Target::NoComm, || {
        check_ptr(errhandler, "errhandler")?;
        let h = *errhandler;
        match h {
            MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT => {}
            _ => {
                errhandler_func(h).ok_or_else(|| err(MPI_ERR_ARG, format!("invalid error handler {h:#x}")))?;
                release_errhandler(h);
            }
        }
        *errhandler = MPI_ERRHANDLER_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) -> c_int {
    // Invoke the handler as if an MPI call on `comm` had failed with `errorcode`.
    let known = state::with(|st| {
        st.comm(comm)?;
        Ok(st.errors.class_of(errorcode).is_some())
    });
    match known {
        Err(e) => state::report("MPI_Comm_call_errhandler", Target::NoComm, e),
        Ok(_) => {
            let class = state::with(|st| Ok(st.errors.class_of(errorcode).unwrap_or(MPI_ERR_OTHER))).unwrap_or(MPI_ERR_OTHER);
            let msg = state::with(|st| Ok(st.errors.string_of(errorcode).unwrap_or_default())).unwrap_or_default();
            state::report("MPI_Comm_call_errhandler", Target::Comm(comm), crate::errors::MpiError { class, msg, code: Some(errorcode) });
            MPI_SUCCESS
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
    api("MPI_Error_class", Target::NoComm, || {
        check_ptr(errorclass, "errorclass")?;
        let c = state::with(|st| st.errors.class_of(errorcode).ok_or_else(|| err(MPI_ERR_ARG, format!("{errorcode} is not a valid error code"))));
        // Before MPI_Init the predefined classes are still known.
        let c = match c {
            Ok(c) => c,
            Err(_) if crate::state::PHASE.load(std::sync::atomic::Ordering::Acquire) != crate::state::PHASE_RUNNING => {
                crate::errors::ErrorRegistry::default().class_of(errorcode).ok_or_else(|| err(MPI_ERR_ARG, format!("{errorcode} is not a valid error code")))?
            }
            Err(e) => return Err(e),
        };
        *errorclass = c;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int {
    api("MPI_Error_string", Target::NoComm, || {
        let s = state::with(|st| Ok(st.errors.string_of(errorcode)))
            .unwrap_or_else(|_| crate::errors::ErrorRegistry::default().string_of(errorcode))
            .ok_or_else(|| err(MPI_ERR_ARG, format!("{errorcode} is not a valid error code")))?;
        write_cstr(string, MPI_MAX_ERROR_STRING as usize, &s, resultlen);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_class(errorclass: *mut c_int) -> c_int {
    api("MPI_Add_error_class", Target::NoComm, || {
        check_ptr(errorclass, "errorclass")?;
        *errorclass = state::with(|st| st.errors.add_class())?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
    api("MPI_Add_error_code", Target::NoComm, || {
        check_ptr(errorcode, "errorcode")?;
        *errorcode = state::with(|st| st.errors.add_code(errorclass))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_string(errorcode: c_int, string: *const c_char) -> c_int {
    api("MPI_Add_error_string", Target::NoComm, || {
        let s = read_cstr(string)?;
        if s.len() >= MPI_MAX_ERROR_STRING as usize {
            return Err(err(MPI_ERR_ARG, format!("the error string is longer than {} characters", MPI_MAX_ERROR_STRING - 1)));
        }
        state::with(|st| st.errors.set_string(errorcode, s))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Remove_error_class(errorclass: c_int) -> c_int {
    api("MPI_Remove_error_class", Target::NoComm, || state::with(|st| st.errors.remove_class(errorclass)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Remove_error_code(errorcode: c_int) -> c_int {
    api("MPI_Remove_error_code", Target::NoComm, || state::with(|st| st.errors.remove_code(errorcode)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Remove_error_string(errorcode: c_int) -> c_int {
    api("MPI_Remove_error_string", Target::NoComm, || state::with(|st| st.errors.remove_string(errorcode)))
}

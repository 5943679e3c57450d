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

// Most MPI_X of this file are generated from abi/functions.txt; these are
// their implementations.

pub(crate) fn comm_create_errhandler(f: Option<MPI_Comm_errhandler_function>) -> R<MPI_Errhandler> {
    Ok(new_errhandler(ErrhFunc::Comm(f.ok_or_else(|| err(MPI_ERR_ARG, "the handler function is NULL"))?)))
}

pub(crate) fn comm_set_errhandler(st: &mut State, comm: MPI_Comm, errhandler: MPI_Errhandler) -> R<()> {
    check_errhandler(errhandler, ErrhKind::Comm)?;
    replace_errhandler(&mut st.comm_mut(comm)?.errh, errhandler);
    Ok(())
}

/// Put `new` (checked by the caller) in an object's handler slot: the
/// object holds a reference to its handler.
pub(crate) fn replace_errhandler(slot: &mut MPI_Errhandler, new: MPI_Errhandler) {
    retain_errhandler(new);
    release_errhandler(std::mem::replace(slot, new));
}

/// The returned handle is a new reference the user frees.
pub(crate) fn comm_get_errhandler(st: &mut State, comm: MPI_Comm) -> R<MPI_Errhandler> {
    let h = st.comm(comm)?.errh;
    retain_errhandler(h);
    Ok(h)
}

pub(crate) fn errhandler_free(h: MPI_Errhandler) -> R<MPI_Errhandler> {
    if ![MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN, MPI_ERRORS_ABORT].contains(&h) {
        errhandler_func(h).ok_or_else(|| err(MPI_ERR_ARG, format!("invalid error handler {h:#x}")))?;
        release_errhandler(h);
    }
    Ok(MPI_ERRHANDLER_NULL)
}

/// Before MPI_Init (and after MPI_Finalize) the predefined classes and
/// strings are still known.
fn with_errors<T>(f: impl Fn(&crate::errors::ErrorRegistry) -> Option<T>, code: c_int) -> R<T> {
    let running = state::with(|st| Ok(f(&st.errors)));
    let found = match running {
        Ok(v) if crate::state::PHASE.load(std::sync::atomic::Ordering::Acquire) == crate::state::PHASE_RUNNING => v,
        Ok(v) => v.or_else(|| f(&Default::default())),
        Err(_) => f(&Default::default()),
    };
    found.ok_or_else(|| err(MPI_ERR_ARG, format!("{code} is not a valid error code")))
}

pub(crate) fn error_class_of(code: c_int) -> R<c_int> {
    with_errors(|e| e.class_of(code), code)
}

pub(crate) fn error_string_of(code: c_int) -> R<String> {
    with_errors(|e| e.string_of(code), code)
}

pub(crate) fn add_error_class(st: &mut State) -> R<c_int> {
    st.errors.add_class()
}

pub(crate) fn add_error_code(st: &mut State, class: c_int) -> R<c_int> {
    st.errors.add_code(class)
}

pub(crate) fn add_error_string(code: c_int, s: &str) -> R<()> {
    if s.len() >= MPI_MAX_ERROR_STRING as usize {
        return Err(err(MPI_ERR_ARG, format!("the error string is longer than {} characters", MPI_MAX_ERROR_STRING - 1)));
    }
    state::with(|st| st.errors.set_string(code, s.to_string()))
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

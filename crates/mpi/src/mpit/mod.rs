//! The MPI tool information interface (MPI_T, MPI 4.1 ch. 15): what a tool
//! (or the program) can see and set inside GridMPI. docs/mpit.md lists the
//! variables.
//!
//! - [`cvars`]: control variables, one per setting of the registry
//!   (gridmpi_config::SETTINGS), readable always, writable before MPI
//!   starts (they take effect when it does) and, for a few, while it runs;
//! - [`pvars`]: performance variables, what GridMPI knows and other MPIs
//!   do not: the TCP state of every connection (TCP_INFO), the bytes sent
//!   to each peer and each cluster, the unexpected queue;
//! - [`categories`]: the variables grouped, and the enumerations;
//! - events: none (MPI_T_event_get_num is 0); one source, the clock.
//!
//! MPI_T lives beside MPI, not inside it: MPI_T_init_thread may be called
//! before MPI_Init or MPI_Session_init and after MPI_Finalize, so its state
//! (init count, handles) is its own. Handles given to the program are
//! tokens naming a slot of a table, checked on every use and never
//! dereferenced. MPI_T functions return MPI_T error codes; they never call
//! error handlers.

pub mod categories;
pub mod cvars;
pub mod pvars;

use crate::ffi::*;
use gridmpi_engine::slab::Slab;
use std::sync::{Mutex, MutexGuard};

/// An MPI_T error: the code MPI_T functions return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TError(pub c_int);

pub type TR<T> = Result<T, TError>;

pub const NOT_INITIALIZED: TError = TError(MPI_T_ERR_NOT_INITIALIZED);
pub const INVALID_INDEX: TError = TError(MPI_T_ERR_INVALID_INDEX);
pub const INVALID_NAME: TError = TError(MPI_T_ERR_INVALID_NAME);
pub const INVALID_HANDLE: TError = TError(MPI_T_ERR_INVALID_HANDLE);
pub const INVALID_SESSION: TError = TError(MPI_T_ERR_INVALID_SESSION);
pub const INVALID: TError = TError(MPI_T_ERR_INVALID);

/// A token handle: `slot + 1` in the high bits, the kind of handle in the
/// low byte, so a handle of one kind is never taken for another.
pub fn token(kind: u8, slot: u32) -> *mut c_void {
    ((((slot as usize) + 1) << 8) | kind as usize) as *mut c_void
}

/// The slot of a token of `kind`, if it is one.
pub fn slot_of(kind: u8, h: *mut c_void) -> Option<u32> {
    let v = h as usize;
    if v & 0xff != kind as usize || v >> 8 == 0 {
        return None;
    }
    u32::try_from((v >> 8) - 1).ok()
}

pub const KIND_ENUM: u8 = 0x11;
pub const KIND_CVAR: u8 = 0x12;
pub const KIND_PVAR_SESSION: u8 = 0x13;
pub const KIND_PVAR_HANDLE: u8 = 0x14;

/// MPI_T's own state.
#[derive(Default)]
pub struct Tool {
    /// MPI_T_init_thread calls not yet matched by MPI_T_finalize.
    inits: u32,
    pub cvar_handles: Slab<cvars::CvarHandle>,
    /// Performance variable sessions (nothing but their existence: their
    /// handles name them).
    pub pvar_sessions: Slab<()>,
    /// Performance variable handles, with the slot of their session.
    pub pvar_handles: Slab<(u32, pvars::PvarHandle)>,
}

static TOOL: Mutex<Option<Tool>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<Tool>> {
    TOOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// MPI_T_init_thread: every level is provided (calls are serialised).
pub fn init() -> c_int {
    lock().get_or_insert_with(Tool::default).inits += 1;
    MPI_THREAD_MULTIPLE
}

/// MPI_T_finalize: the last one frees every handle and session.
pub fn finalize() -> TR<()> {
    let mut g = lock();
    let t = g.as_mut().filter(|t| t.inits > 0).ok_or(NOT_INITIALIZED)?;
    t.inits -= 1;
    if t.inits == 0 {
        *g = None;
    }
    Ok(())
}

/// Run `f` on MPI_T's state if MPI_T is initialized. Lock order: MPI_T's
/// state before MPI's (pvars read the runtime inside).
pub fn with<T>(f: impl FnOnce(&mut Tool) -> TR<T>) -> TR<T> {
    let mut g = lock();
    let t = g.as_mut().filter(|t| t.inits > 0).ok_or(NOT_INITIALIZED)?;
    f(t)
}

/// Write `s` as MPI_T returns strings (MPI 4.1, 15.3.3): with a NULL buffer
/// or a zero length only the length is returned; otherwise as much as fits
/// with its NUL. The length returned counts the NUL.
///
/// # Safety
/// `buf`, when not NULL, has `*len` writable bytes; `len` is NULL or valid.
pub unsafe fn put_string(s: &str, buf: *mut c_char, len: *mut c_int) {
    if len.is_null() {
        return;
    }
    let n = s.len();
    if buf.is_null() || *len <= 0 {
        *len = n as c_int + 1;
        return;
    }
    let take = n.min(*len as usize - 1);
    std::ptr::copy_nonoverlapping(s.as_ptr() as *const c_char, buf, take);
    *buf.add(take) = 0;
    *len = take as c_int + 1;
}

/// Store `v` through an output pointer the standard lets the caller pass
/// as NULL (not interested).
///
/// # Safety
/// `p` is NULL or valid for a write.
pub unsafe fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        *p = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_kind_and_slot() {
        let h = token(KIND_CVAR, 7);
        assert_eq!(slot_of(KIND_CVAR, h), Some(7));
        assert_eq!(slot_of(KIND_PVAR_HANDLE, h), None);
        assert_eq!(slot_of(KIND_CVAR, std::ptr::null_mut()), None);
        assert!(!token(KIND_ENUM, 0).is_null());
    }

    #[test]
    fn strings_follow_the_mpi_t_convention() {
        let mut len: c_int = 0;
        // SAFETY: a NULL buffer is only measured.
        unsafe { put_string("abc", std::ptr::null_mut(), &mut len) };
        assert_eq!(len, 4);
        let mut buf = [1 as c_char; 8];
        len = 3;
        // SAFETY: `buf` has 8 bytes, more than `len`.
        unsafe { put_string("abcdef", buf.as_mut_ptr(), &mut len) };
        assert_eq!((len, buf[0], buf[1], buf[2]), (3, b'a' as c_char, b'b' as c_char, 0));
        len = 8;
        // SAFETY: as above.
        unsafe { put_string("abc", buf.as_mut_ptr(), &mut len) };
        assert_eq!(len, 4);
    }
}

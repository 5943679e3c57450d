//! The C ABI shell: one module per area of the standard. A shell function
//! converts handles, checks arguments, calls the engine/runtime, and maps
//! errors through the error handler (state::api). Every function here is
//! the `PMPI_` name; `MPI_` entry points are generated (see lib.rs).

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::not_unsafe_ptr_arg_deref)]

pub mod attr;
pub mod coll;
pub mod coll_select;
pub mod comm;
pub mod conv;
pub mod ctx_id;
pub mod dtype;
pub mod dynamic;
pub mod env;
pub mod errh;
pub mod file;
pub mod ft;
pub mod group;
pub mod info;
pub mod mpit;
pub mod neighbor;
pub mod op;
pub mod p2p;
pub mod pack;
pub mod part;
pub mod req;
pub mod rma;
pub mod rma_fast;
pub mod session;
pub mod topo;
pub mod win;

/// The `PMPI_X` functions that only pass arguments on, generated from the
/// bindings in abi/functions.txt (see crates/abi/src/shell.rs).
mod generated {
    #![allow(clippy::useless_conversion, clippy::too_many_arguments, clippy::unit_arg)]
    use super::*;
    use crate::objects::{BufOwner, KeyvalKind, SendMode};
    use gridmpi_engine::rma::Flavor;
    use crate::state::{self, api, Target};
    include!(concat!(env!("OUT_DIR"), "/shell.rs"));
}

pub use attr::*;
pub use coll::*;
pub use comm::*;
pub use conv::*;
pub use dtype::*;
pub use dynamic::*;
pub use env::*;
pub use errh::*;
pub use file::*;
pub use group::*;
pub use info::*;
pub use mpit::*;
pub(crate) use neighbor::*;
pub use op::*;
pub use p2p::*;
pub(crate) use pack::*;
pub use part::*;
pub use req::*;
pub use rma::*;
pub use session::*;
pub use topo::*;
pub use win::*;
pub use generated::*;

use crate::errors::{err, R};
pub use crate::objects::{check_count, check_recv_tag, check_tag};
use crate::ffi::*;
use crate::state::State;
use gridmpi_datatype::Datatype;
use gridmpi_engine::{Status, UserBuf};
use std::sync::Arc;

/// Body of every function of an unavailable feature (see abi/functions.txt).
pub fn unsupported(name: &'static str, what: &str) -> c_int {
    let what = what.to_string();
    crate::state::api(name, crate::state::Target::NoComm, move || {
        Err(err(MPI_ERR_UNSUPPORTED_OPERATION, format!("{what} is not available in this version of GridMPI")))
    })
}

impl State {
    /// The datatype behind a handle, checked to be usable for communication.
    pub fn dtype(&self, h: MPI_Datatype) -> R<Arc<Datatype>> {
        self.dtype_any(h, true)
    }

    /// The datatype of a point-to-point call of `count` items: as
    /// [`State::dtype`], but no items of MPI_DATATYPE_NULL are an empty
    /// message, as in MPICH (which took refusing them for a bug; programs
    /// pass it with a zero count where they have nothing to send).
    pub fn p2p_dtype(&self, h: MPI_Datatype, count: u64) -> R<Arc<Datatype>> {
        if count == 0 && h == MPI_DATATYPE_NULL {
            return Ok(gridmpi_datatype::Datatype::basic_shared(gridmpi_datatype::BasicType::Byte));
        }
        self.dtype(h)
    }

    /// The datatype behind a handle; `committed` requires it committed.
    pub fn dtype_any(&self, h: MPI_Datatype, committed: bool) -> R<Arc<Datatype>> {
        if let Some((dt, _)) = self.predef.get(h) {
            return Ok(dt.clone());
        }
        if h == MPI_DATATYPE_NULL {
            return Err(err(MPI_ERR_TYPE, "the datatype is MPI_DATATYPE_NULL"));
        }
        match self.types.get(h) {
            Some(t) if committed && !t.committed => {
                Err(err(MPI_ERR_TYPE, format!("datatype {h:#x} is not committed (call MPI_Type_commit)")))
            }
            Some(t) => Ok(t.dt.clone()),
            None => Err(err(MPI_ERR_TYPE, format!("invalid datatype handle {h:#x}"))),
        }
    }
}

/// Addresses below this are never user data (Linux does not map page zero).
const NULL_PAGE: i64 = 4096;

/// Describe a user buffer, checking count * size fits and that it is not
/// NULL with data in it.
pub fn user_buf(ptr: *const c_void, count: u64, dt: Arc<Datatype>) -> R<UserBuf> {
    if count.checked_mul(dt.size()).is_none_or(|b| b > i64::MAX as u64) {
        return Err(err(MPI_ERR_COUNT, format!("count {count} of a {}-byte datatype overflows", dt.size())));
    }
    // A NULL buffer holding data. NULL is also MPI_BOTTOM, which is fine
    // when the datatype's displacements are absolute addresses: only data
    // that would lie in the first page (which is never mapped) is refused.
    if ptr.is_null() && count > 0 && dt.size() > 0 && dt.true_lb() < NULL_PAGE {
        return Err(err(MPI_ERR_BUFFER, format!("the buffer is NULL but holds {count} item(s) of {} bytes", dt.size())));
    }
    // SAFETY: MPI makes the caller responsible for the buffer's validity.
    Ok(unsafe { UserBuf::new(ptr as *mut u8, count, dt) })
}

// ---- the two C bindings ---------------------------------------------------------
//
// Every function with counts has a classic form taking C `int`s and a
// large-count form (`MPI_X_c`, MPI 4.0) taking `MPI_Count` counts and
// `MPI_Aint` displacements. Both are thin shells over one implementation
// that takes the counts as `i64` (`MPI_Count`) and arrays as [`Ints`].

/// An array of counts or displacements as a C binding passes it: `int`s
/// in the classic functions, `MPI_Count` or `MPI_Aint` (both 64-bit here)
/// in the large-count ones.
#[derive(Clone, Copy, Debug)]
pub enum Ints {
    Int(*const c_int),
    Wide(*const i64),
}

impl From<*const c_int> for Ints {
    fn from(p: *const c_int) -> Ints {
        Ints::Int(p)
    }
}

impl From<*mut c_int> for Ints {
    fn from(p: *mut c_int) -> Ints {
        Ints::Int(p)
    }
}

impl From<*const i64> for Ints {
    fn from(p: *const i64) -> Ints {
        Ints::Wide(p)
    }
}

impl From<*mut i64> for Ints {
    fn from(p: *mut i64) -> Ints {
        Ints::Wide(p)
    }
}

impl Ints {
    /// The first `n` values, widened; nothing for `n <= 0`. A NULL array
    /// with `n > 0` is an error naming `what`.
    pub fn read(self, n: i64, what: &str) -> R<Vec<i64>> {
        if n <= 0 {
            return Ok(Vec::new());
        }
        let n = usize::try_from(n).map_err(|_| err(MPI_ERR_COUNT, format!("{what}: invalid length {n}")))?;
        // SAFETY (both arms): the standard makes the caller pass `n` elements.
        match self {
            Ints::Int(p) => {
                check_ptr(p, what)?;
                Ok(unsafe { std::slice::from_raw_parts(p, n) }.iter().map(|&v| v as i64).collect())
            }
            Ints::Wide(p) => {
                check_ptr(p, what)?;
                Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
            }
        }
    }
}

/// A count for an `int` output of the classic binding: MPI_UNDEFINED when
/// it does not fit (as MPI_Get_count, MPI_Type_size and MPICH's
/// MPI_Pack_size and MPI_Buffer_detach report it).
pub fn int_or_undefined(v: i64) -> c_int {
    c_int::try_from(v).unwrap_or(MPI_UNDEFINED)
}

/// A pointer to a count (an output, or MPI_Pack's in/out position):
/// `int *` in the classic binding, `MPI_Count *` in the large-count one.
#[derive(Clone, Copy, Debug)]
pub enum CountPtr {
    Int(*mut c_int),
    Wide(*mut MPI_Count),
}

impl From<*mut c_int> for CountPtr {
    fn from(p: *mut c_int) -> CountPtr {
        CountPtr::Int(p)
    }
}

impl From<*mut i64> for CountPtr {
    fn from(p: *mut i64) -> CountPtr {
        CountPtr::Wide(p)
    }
}

impl CountPtr {
    pub fn check(self, what: &str) -> R<()> {
        match self {
            CountPtr::Int(p) => check_ptr(p, what),
            CountPtr::Wide(p) => check_ptr(p, what),
        }
    }

    /// Store `v` (checked non-null first); an `int` that cannot hold it
    /// gets MPI_UNDEFINED.
    pub unsafe fn put(self, v: i64) {
        match self {
            CountPtr::Int(p) => *p = int_or_undefined(v),
            CountPtr::Wide(p) => *p = v,
        }
    }

    /// The value (checked non-null first).
    pub unsafe fn get(self) -> i64 {
        match self {
            CountPtr::Int(p) => (*p).into(),
            CountPtr::Wide(p) => *p,
        }
    }
}

// ---- statuses ---------------------------------------------------------------

pub fn empty_status() -> MPI_Status {
    MPI_Status { count_lo: 0, count_hi_and_cancelled: 0, MPI_SOURCE: MPI_ANY_SOURCE, MPI_TAG: MPI_ANY_TAG, MPI_ERROR: MPI_SUCCESS }
}

pub fn proc_null_status() -> MPI_Status {
    MPI_Status { MPI_SOURCE: MPI_PROC_NULL, MPI_TAG: MPI_ANY_TAG, ..empty_status() }
}

/// A status holds a byte count of up to 63 bits: the low 32 in `count_lo`,
/// the next 31 above the cancelled bit of `count_hi_and_cancelled` (both
/// read as unsigned, so the top bit of a large count is not a sign).
pub fn set_count(s: &mut MPI_Status, bytes: i64) {
    let bytes = bytes as u64;
    s.count_lo = bytes as u32 as c_int;
    s.count_hi_and_cancelled = ((s.count_hi_and_cancelled as u32 & 1) | (((bytes >> 32) as u32) << 1)) as c_int;
}

pub fn get_count_bytes(s: &MPI_Status) -> i64 {
    (((s.count_hi_and_cancelled as u32 >> 1) as u64) << 32 | s.count_lo as u32 as u64) as i64
}

pub fn set_cancelled(s: &mut MPI_Status, c: bool) {
    s.count_hi_and_cancelled = (s.count_hi_and_cancelled & !1) | c as c_int;
}

pub fn is_cancelled(s: &MPI_Status) -> bool {
    s.count_hi_and_cancelled & 1 != 0
}

#[cfg(test)]
mod status_tests {
    use super::*;

    #[test]
    fn counts_keep_all_63_bits_and_the_cancelled_flag() {
        for bytes in [0i64, 5, u32::MAX as i64, 1 << 32, (1 << 62) + 5, i64::MAX] {
            for cancelled in [false, true] {
                let mut s = empty_status();
                set_cancelled(&mut s, cancelled);
                set_count(&mut s, bytes);
                assert_eq!((get_count_bytes(&s), is_cancelled(&s)), (bytes, cancelled));
            }
        }
    }
}

/// An MPI status from an engine status of a receive.
/// The status of a completed request that received nothing (a send, a
/// collective): empty but for its cancellation and error.
pub fn sent_status(st: &Status) -> MPI_Status {
    let mut s = empty_status();
    set_cancelled(&mut s, st.cancelled);
    if let Some(e) = st.error {
        s.MPI_ERROR = error_class(e);
    }
    s
}

pub fn recv_status(st: &Status) -> MPI_Status {
    let mut s = empty_status();
    if st.cancelled {
        set_cancelled(&mut s, true);
        return s;
    }
    s.MPI_SOURCE = st.source;
    s.MPI_TAG = st.tag;
    set_count(&mut s, st.count as i64);
    if let Some(e) = st.error {
        s.MPI_ERROR = error_class(e);
    }
    s
}

/// The MPI error class of an engine request's error.
pub fn error_class(e: gridmpi_engine::ErrorKind) -> c_int {
    match e {
        gridmpi_engine::ErrorKind::Truncate => MPI_ERR_TRUNCATE,
        gridmpi_engine::ErrorKind::Signature => MPI_ERR_TYPE,
        gridmpi_engine::ErrorKind::ProcFailed => MPIX_ERR_PROC_FAILED,
        gridmpi_engine::ErrorKind::Revoked => MPIX_ERR_REVOKED,
    }
}

pub fn is_ignore(p: *const MPI_Status) -> bool {
    p.is_null() || p == STATUS_IGNORE as *const MPI_Status
}

/// Store a status for a single-completion call (MPI_ERROR is left alone).
pub unsafe fn put_status(p: *mut MPI_Status, s: &MPI_Status) {
    if !is_ignore(p) {
        let e = (*p).MPI_ERROR;
        *p = *s;
        (*p).MPI_ERROR = e;
    }
}

/// Store a status for a multiple-completion call (MPI_ERROR too).
pub unsafe fn put_status_full(p: *mut MPI_Status, s: &MPI_Status) {
    if !is_ignore(p) {
        *p = *s;
    }
}

/// Write a C string with its length into a caller buffer of `cap` bytes.
pub unsafe fn write_cstr(dst: *mut c_char, cap: usize, s: &str, len_out: *mut c_int) {
    let b = s.as_bytes();
    let n = b.len().min(cap.saturating_sub(1));
    if !dst.is_null() {
        std::ptr::copy_nonoverlapping(b.as_ptr() as *const c_char, dst, n);
        *dst.add(n) = 0;
    }
    if !len_out.is_null() {
        *len_out = n as c_int;
    }
}

/// Read a NUL-terminated C string (lossy UTF-8).
pub unsafe fn read_cstr(p: *const c_char) -> R<String> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, "a string argument is NULL"));
    }
    Ok(std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
}

/// An object's name as MPI_X_set_name keeps it: at most
/// MPI_MAX_OBJECT_NAME - 1 bytes, cut at a character's boundary.
pub fn object_name(s: &str) -> String {
    let mut cut = s.len().min(MPI_MAX_OBJECT_NAME as usize - 1);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s[..cut].to_string()
}

#[cfg(test)]
#[test]
fn names_are_cut_whole_characters_short_of_the_limit() {
    let max = MPI_MAX_OBJECT_NAME as usize - 1;
    assert_eq!(object_name("world"), "world");
    assert_eq!(object_name(&"x".repeat(300)).len(), max);
    // Two-byte characters: an odd limit leaves the last one out whole.
    let n = object_name(&"é".repeat(300));
    assert!(n.len() <= max && n.len() >= max - 1 && n.chars().all(|c| c == 'é'), "{}", n.len());
}

/// A C string argument named `what` (`where x: str` in functions.txt).
pub unsafe fn in_str(p: *const c_char, what: &str) -> R<String> {
    check_ptr(p, what)?;
    Ok(std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
}

/// An array argument `what` of `n` elements, `n` being the argument
/// `len_name` (`where x[n]` in functions.txt).
pub unsafe fn in_array<'a, T>(p: *const T, n: impl Into<i64>, what: &str, len_name: &str) -> R<&'a [T]> {
    let n: i64 = n.into();
    if n < 0 {
        return Err(err(MPI_ERR_ARG, format!("invalid {len_name} {n}")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    check_ptr(p, what)?;
    // SAFETY: the standard makes the caller pass `n` elements.
    Ok(std::slice::from_raw_parts(p, n as usize))
}

/// Copy the first `max` elements of `v` (or all, when fewer) into the
/// output array `what` (`-> x[max]` in functions.txt).
pub unsafe fn put_array<T: Copy>(p: *mut T, max: impl Into<i64>, v: &[T], what: &str) -> R<()> {
    let n = (max.into().max(0) as usize).min(v.len());
    if n > 0 {
        check_ptr(p, what)?;
        std::ptr::copy_nonoverlapping(v.as_ptr(), p, n);
    }
    Ok(())
}

pub fn check_ptr<T>(p: *const T, what: &str) -> R<()> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    Ok(())
}

//! What the generated wrappers call to convert between Fortran and C:
//! sentinels, strings, LOGICALs, 1-based indices, attribute values, and the
//! trampolines through which the C library calls Fortran callbacks.
//!
//! Every function here is called with pointers a Fortran caller passed (by
//! reference, so never dangling while the call runs); the unsafe blocks rely
//! on that and say what else they assume.

use crate::ffi::*;
use crate::wrappers as w;

pub use crate::ffi::{FORTRAN_FALSE, FORTRAN_TRUE};

/// Fortran attribute values and extra states: INTEGER or
/// INTEGER(KIND=MPI_ADDRESS_KIND).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    Int,
    Aint,
}

/// What a predefined attribute points to in C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrValue {
    Int,
    Aint,
    Address,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredefinedCopy {
    Null,
    Dup,
}

// ---------------------------------------------------------------------------
// Errors, sentinels

#[inline]
pub unsafe fn set_ierror(ierror: *mut MPI_Fint, rc: c_int) {
    if !ierror.is_null() {
        *ierror = rc;
    }
}

/// A choice buffer: Fortran's MPI_BOTTOM, MPI_IN_PLACE and
/// MPI_BUFFER_AUTOMATIC are variables in COMMON blocks; C's are the
/// addresses 0, -1 and -2.
#[inline]
pub fn choice(p: *const c_void) -> *const c_void {
    let a = p as usize;
    if a == w::addr_MPI_BOTTOM() {
        C_BOTTOM
    } else if a == w::addr_MPI_IN_PLACE() {
        C_IN_PLACE
    } else if a == w::addr_MPI_BUFFER_AUTOMATIC() {
        C_BUFFER_AUTOMATIC
    } else {
        p
    }
}

#[inline]
pub fn status(p: *mut MPI_Status) -> *mut MPI_Status {
    let a = p as usize;
    if a == w::addr_MPI_STATUS_IGNORE() || a == w::addr_MPI_STATUSES_IGNORE() {
        C_STATUS_IGNORE
    } else {
        p
    }
}

extern "C" {
    static MPI_UNWEIGHTED: *const c_int;
    static MPI_WEIGHTS_EMPTY: *const c_int;
    fn MPIR_Dup_fn(old: c_int, keyval: c_int, extra: *mut c_void, vin: *mut c_void, vout: *mut c_void, flag: *mut c_int) -> c_int;
}

pub fn weights(p: *const c_int) -> *const c_int {
    let a = p as usize;
    // SAFETY: plain reads of the C library's exported sentinel pointers.
    unsafe {
        if a == w::addr_MPI_UNWEIGHTED() {
            MPI_UNWEIGHTED
        } else if a == w::addr_MPI_WEIGHTS_EMPTY() {
            MPI_WEIGHTS_EMPTY
        } else {
            p
        }
    }
}

pub fn errcodes(p: *const c_int) -> *const c_int {
    if p as usize == w::addr_MPI_ERRCODES_IGNORE() {
        std::ptr::null()
    } else {
        p
    }
}

// ---------------------------------------------------------------------------
// Strings

/// A CHARACTER argument on its way to C: input strings are copied with the
/// trailing blanks trimmed and a NUL added; output strings get a buffer
/// large enough for any C result, copied back blank-padded.
pub struct FString {
    buf: Vec<u8>,
}

impl FString {
    pub unsafe fn input(p: *const c_char, len: usize) -> FString {
        let bytes: &[u8] = if p.is_null() || len == 0 { &[] } else { std::slice::from_raw_parts(p as *const u8, len) };
        FString { buf: trim_fortran(bytes) }
    }

    /// Info keys and values: leading blanks are stripped too (MPI 4.1,
    /// MPI_INFO_SET: in Fortran, leading and trailing spaces of key and
    /// value are stripped), so that what a Fortran program sets it finds.
    pub unsafe fn input_stripped(p: *const c_char, len: usize) -> FString {
        let mut s = FString::input(p, len);
        let lead = s.buf.iter().position(|&b| b != b' ').unwrap_or(0);
        s.buf.drain(..lead);
        s
    }

    pub fn output(len: usize) -> FString {
        let cap = len.max(MPI_MAX_LIBRARY_VERSION_STRING as usize).max(MPI_MAX_INFO_VAL as usize) + 1;
        FString { buf: vec![0; cap] }
    }

    pub fn as_ptr(&self) -> *const c_char {
        self.buf.as_ptr() as *const c_char
    }

    pub fn as_mut_ptr(&mut self) -> *mut c_char {
        self.buf.as_mut_ptr() as *mut c_char
    }

    /// Copy the NUL-terminated C result into a Fortran CHARACTER*(len).
    pub unsafe fn copy_out(&self, p: *mut c_char, len: usize) {
        if p.is_null() || len == 0 {
            return;
        }
        let dst = std::slice::from_raw_parts_mut(p as *mut u8, len);
        copy_blank_padded(&self.buf, dst);
    }
}

/// The bytes of a Fortran string without trailing blanks (and cut at a NUL,
/// which C could not see past anyway), NUL-terminated.
pub fn trim_fortran(bytes: &[u8]) -> Vec<u8> {
    let bytes = match bytes.iter().position(|&b| b == 0) {
        Some(i) => &bytes[..i],
        None => bytes,
    };
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    let mut v = bytes[..end].to_vec();
    v.push(0);
    v
}

/// The most elements an argv is read for its blank terminator.
const MAX_ARGV: usize = 4096;

/// A Fortran CHARACTER array on its way to C as an array of C strings
/// (MPI_Comm_spawn's argv and commands): every element trimmed and
/// NUL-terminated, the pointer array ended by NULL.
pub struct FStrings {
    _strings: Vec<Vec<u8>>,
    ptrs: Vec<*mut c_char>,
    null: bool,
}

impl FStrings {
    /// The element `i` of a CHARACTER array of elements `len` long, trimmed.
    unsafe fn element(p: *const c_char, len: usize, i: usize) -> Vec<u8> {
        if len == 0 {
            return vec![0];
        }
        trim_fortran(std::slice::from_raw_parts((p as *const u8).add(i * len), len))
    }

    fn new(strings: Vec<Vec<u8>>, null: bool) -> FStrings {
        let mut ptrs: Vec<*mut c_char> = strings.iter().map(|s| s.as_ptr() as *mut c_char).collect();
        ptrs.push(std::ptr::null_mut());
        FStrings { _strings: strings, ptrs, null }
    }

    /// Elements `first`, `first + stride`, ... up to the first blank one.
    unsafe fn until_blank(p: *const c_char, len: usize, first: usize, stride: usize) -> FStrings {
        let mut strings = Vec::new();
        while strings.len() < MAX_ARGV {
            let e = FStrings::element(p, len, first + strings.len() * stride);
            if e.len() == 1 {
                break;
            }
            strings.push(e);
        }
        FStrings::new(strings, false)
    }

    /// An argv: the elements before the first blank one; MPI_ARGV_NULL is C's NULL.
    pub unsafe fn argv(p: *const c_char, len: usize) -> FStrings {
        if p.is_null() || p as usize == w::addr_MPI_ARGV_NULL() {
            return FStrings::new(Vec::new(), true);
        }
        FStrings::until_blank(p, len, 0, 1)
    }

    /// `count` elements.
    pub unsafe fn array(p: *const c_char, len: usize, count: c_int) -> FStrings {
        let n = if p.is_null() { 0 } else { count.max(0) as usize };
        FStrings::new((0..n).map(|i| FStrings::element(p, len, i)).collect(), p.is_null())
    }

    pub fn as_ptr(&self) -> *const *mut c_char {
        if self.null {
            std::ptr::null()
        } else {
            self.ptrs.as_ptr()
        }
    }
}

/// MPI_Comm_spawn_multiple's ARRAY_OF_ARGV(COUNT, *): row i (elements i,
/// i + COUNT, ... in column-major order) up to its first blank element is
/// the argv of program i; MPI_ARGVS_NULL is C's NULL.
pub struct FArgvs {
    _rows: Vec<FStrings>,
    ptrs: Vec<*const *mut c_char>,
    null: bool,
}

impl FArgvs {
    pub unsafe fn new(p: *const c_char, len: usize, count: c_int) -> FArgvs {
        if p.is_null() || p as usize == w::addr_MPI_ARGVS_NULL() {
            return FArgvs { _rows: Vec::new(), ptrs: Vec::new(), null: true };
        }
        let n = count.max(0) as usize;
        let rows: Vec<FStrings> = (0..n).map(|i| FStrings::until_blank(p, len, i, n)).collect();
        let ptrs = rows.iter().map(|r| r.as_ptr()).collect();
        FArgvs { _rows: rows, ptrs, null: false }
    }

    pub fn as_ptr(&self) -> *const *const *mut c_char {
        if self.null {
            std::ptr::null()
        } else {
            self.ptrs.as_ptr()
        }
    }
}

/// Copy a NUL-terminated C string into `dst`, truncating or padding with blanks.
pub fn copy_blank_padded(src: &[u8], dst: &mut [u8]) {
    let n = src.iter().position(|&b| b == 0).unwrap_or(src.len()).min(dst.len());
    dst[..n].copy_from_slice(&src[..n]);
    dst[n..].fill(b' ');
}

/// A value length given with a Fortran string: C may write that many
/// characters and a NUL, so it is bounded by LEN().
pub fn strlen_in(v: c_int, len: usize) -> c_int {
    v.clamp(0, len.min(c_int::MAX as usize - 1) as c_int)
}

/// MPI_Info_get_string's buflen: Fortran counts characters, C the NUL too;
/// zero asks for the length.
pub fn buflen_f2c(v: c_int, len: usize) -> c_int {
    if v <= 0 {
        0
    } else {
        strlen_in(v, len) + 1
    }
}

pub fn buflen_c2f(c: c_int) -> c_int {
    (c - 1).max(0)
}

// ---------------------------------------------------------------------------
// LOGICAL, indices, lengths

/// Any non-zero LOGICAL is true (gfortran writes 1, some compilers -1).
#[inline]
pub fn logical_f2c(v: MPI_Fint) -> c_int {
    (v != 0) as c_int
}

#[inline]
pub fn logical_c2f(c: c_int) -> MPI_Fint {
    if c != 0 {
        FORTRAN_TRUE
    } else {
        FORTRAN_FALSE
    }
}

/// A count from Fortran as a length (negative counts are C's to reject).
pub fn len(n: c_int) -> usize {
    n.max(0) as usize
}

pub unsafe fn logicals_f2c(p: *const MPI_Fint, n: c_int) -> Vec<c_int> {
    if p.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts(p, len(n)).iter().map(|&v| logical_f2c(v)).collect()
}

pub unsafe fn logicals_c2f(c: &[c_int], p: *mut MPI_Fint) {
    if p.is_null() {
        return;
    }
    for (i, &v) in c.iter().enumerate() {
        *p.add(i) = logical_c2f(v);
    }
}

/// C's 0-based index as Fortran's 1-based one (MPI_UNDEFINED stays).
pub unsafe fn index_c2f(p: *mut c_int) {
    if !p.is_null() && *p != MPI_UNDEFINED && *p >= 0 {
        *p += 1;
    }
}

pub unsafe fn indices_c2f(p: *mut c_int, count: c_int) {
    if p.is_null() || count == MPI_UNDEFINED {
        return;
    }
    for i in 0..len(count) {
        *p.add(i) += 1;
    }
}

pub unsafe fn ints_to_aints(p: *const MPI_Fint, n: c_int) -> Vec<MPI_Aint> {
    if p.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts(p, len(n)).iter().map(|&v| v as MPI_Aint).collect()
}

/// The number of dimensions of a Cartesian communicator (for MPI_Cart_sub's
/// LOGICAL array), 0 if it has none.
pub unsafe fn cartdim(comm: MPI_Comm) -> c_int {
    let mut n: c_int = 0;
    if w::PMPI_Cartdim_get(comm, &mut n) != MPI_SUCCESS {
        return 0;
    }
    n
}

// ---------------------------------------------------------------------------
// Attributes

/// Fortran's predefined attribute keys are C's + 1 (MPICH's convention).
pub fn keyval_f2c(k: c_int) -> c_int {
    match w::PREDEFINED_KEYVALS.iter().find(|(f, _, _)| *f == k) {
        Some(&(_, c, _)) => c,
        None => k,
    }
}

/// The Fortran value of an attribute libmpi returned as `p`: predefined
/// attributes point to their value; user attributes come in Fortran's
/// view already (libmpi's `gridmpi_fortran_*_get_attr`).
pub unsafe fn attr_value(c_keyval: c_int, p: *mut c_void) -> isize {
    match w::PREDEFINED_KEYVALS.iter().find(|(_, c, _)| *c == c_keyval) {
        Some((_, _, AttrValue::Int)) if !p.is_null() => *(p as *const c_int) as isize,
        Some((_, _, AttrValue::Aint)) if !p.is_null() => *(p as *const MPI_Aint) as isize,
        _ => p as isize,
    }
}

/// What the C library keeps as extra_state for a keyval created from
/// Fortran: the Fortran callbacks and the user's extra state. Never freed:
/// callbacks may run for attributes that outlive their keyval.
struct KeyvalState {
    copy: usize,
    delete: usize,
    extra: MPI_Aint,
    width: Width,
}

type FCopyAint = unsafe extern "C" fn(*const MPI_Fint, *const MPI_Fint, *const MPI_Aint, *const MPI_Aint, *mut MPI_Aint, *mut MPI_Fint, *mut MPI_Fint);
type FCopyInt = unsafe extern "C" fn(*const MPI_Fint, *const MPI_Fint, *const MPI_Fint, *const MPI_Fint, *mut MPI_Fint, *mut MPI_Fint, *mut MPI_Fint);
type FDeleteAint = unsafe extern "C" fn(*const MPI_Fint, *const MPI_Fint, *const MPI_Aint, *const MPI_Aint, *mut MPI_Fint);
type FDeleteInt = unsafe extern "C" fn(*const MPI_Fint, *const MPI_Fint, *const MPI_Fint, *const MPI_Fint, *mut MPI_Fint);

pub fn copy_fn_c(f: *const c_void, _w: Width) -> Option<CopyAttrFn> {
    match w::predefined_copy_kind(f as usize) {
        _ if f.is_null() => None,
        Some(PredefinedCopy::Null) => None,
        Some(PredefinedCopy::Dup) => Some(MPIR_Dup_fn),
        None => Some(copy_trampoline),
    }
}

pub fn delete_fn_c(f: *const c_void, _w: Width) -> Option<DeleteAttrFn> {
    if f.is_null() || w::is_predefined_delete(f as usize) {
        None
    } else {
        Some(delete_trampoline)
    }
}

pub fn keyval_extra(copy: *const c_void, delete: *const c_void, extra: MPI_Aint, width: Width) -> *mut c_void {
    let st = KeyvalState { copy: copy as usize, delete: delete as usize, extra, width };
    Box::into_raw(Box::new(st)) as *mut c_void
}

unsafe extern "C" fn copy_trampoline(old: c_int, keyval: c_int, extra: *mut c_void, vin: *mut c_void, vout: *mut c_void, flag: *mut c_int) -> c_int {
    // SAFETY: the C library passes back the extra_state keyval_extra made,
    // and the copy function the Fortran program gave (a procedure of the
    // form MPI specifies for this width).
    let st = &*(extra as *const KeyvalState);
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    let mut fflag: MPI_Fint = FORTRAN_FALSE;
    let out: isize = match st.width {
        Width::Aint => {
            let f: FCopyAint = std::mem::transmute(st.copy);
            let v = vin as MPI_Aint;
            let mut o: MPI_Aint = 0;
            f(&old, &keyval, &st.extra, &v, &mut o, &mut fflag, &mut ierr);
            o as isize
        }
        Width::Int => {
            let f: FCopyInt = std::mem::transmute(st.copy);
            let e = st.extra as MPI_Fint;
            let v = vin as isize as MPI_Fint;
            let mut o: MPI_Fint = 0;
            f(&old, &keyval, &e, &v, &mut o, &mut fflag, &mut ierr);
            o as isize
        }
    };
    *flag = logical_f2c(fflag);
    if *flag != 0 {
        *(vout as *mut *mut c_void) = out as *mut c_void;
    }
    ierr
}

unsafe extern "C" fn delete_trampoline(obj: c_int, keyval: c_int, val: *mut c_void, extra: *mut c_void) -> c_int {
    // SAFETY: as for copy_trampoline.
    let st = &*(extra as *const KeyvalState);
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    match st.width {
        Width::Aint => {
            let f: FDeleteAint = std::mem::transmute(st.delete);
            let v = val as MPI_Aint;
            f(&obj, &keyval, &v, &st.extra, &mut ierr);
        }
        Width::Int => {
            let f: FDeleteInt = std::mem::transmute(st.delete);
            let v = val as isize as MPI_Fint;
            let e = st.extra as MPI_Fint;
            f(&obj, &keyval, &v, &e, &mut ierr);
        }
    }
    ierr
}

/// MPI_NULL_COPY_FN, MPI_COMM_DUP_FN... in their Fortran form (a program
/// may call them itself, or pass them where they are not recognised).
pub unsafe fn predefined_copy<T: Copy>(
    dup: bool,
    _old: *const MPI_Fint,
    _keyval: *const MPI_Fint,
    _extra: *const T,
    vin: *const T,
    vout: *mut T,
    flag: *mut MPI_Fint,
    ierror: *mut MPI_Fint,
) {
    if dup {
        *vout = *vin;
        *flag = FORTRAN_TRUE;
    } else {
        *flag = FORTRAN_FALSE;
    }
    set_ierror(ierror, MPI_SUCCESS);
}

pub unsafe fn predefined_delete<T>(_obj: *const MPI_Fint, _keyval: *const MPI_Fint, _v: *const T, _extra: *const T, ierror: *mut MPI_Fint) {
    set_ierror(ierror, MPI_SUCCESS);
}

pub unsafe fn predefined_conversion(
    _userbuf: *mut c_void,
    _datatype: *const MPI_Fint,
    _count: *const MPI_Fint,
    _filebuf: *mut c_void,
    _position: *const MPI_Offset,
    _extra: *const MPI_Aint,
    ierror: *mut MPI_Fint,
) {
    set_ierror(ierror, MPI_SUCCESS);
}

// ---------------------------------------------------------------------------
// Generalized requests

/// The Fortran callbacks of a generalized request; freed after its free_fn.
struct GreqState {
    query: usize,
    free: usize,
    cancel: usize,
    /// The program's EXTRA_STATE variable itself, as MPICH and Open MPI
    /// pass it: the callbacks may keep their state in it, and the program
    /// sees what they leave there (so it must outlive the request, as the
    /// state a C program points to must).
    extra: *const MPI_Aint,
}

type FGreqQuery = unsafe extern "C" fn(*const MPI_Aint, *mut MPI_Fint, *mut MPI_Fint);
type FGreqFree = unsafe extern "C" fn(*const MPI_Aint, *mut MPI_Fint);
type FGreqCancel = unsafe extern "C" fn(*const MPI_Aint, *const MPI_Fint, *mut MPI_Fint);

pub fn greq_extra(query: *const c_void, free: *const c_void, cancel: *const c_void, extra: *const MPI_Aint) -> *mut c_void {
    Box::into_raw(Box::new(GreqState { query: query as usize, free: free as usize, cancel: cancel as usize, extra })) as *mut c_void
}

pub unsafe extern "C" fn greq_query_trampoline(extra: *mut c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: extra is the GreqState greq_extra made; the C library frees it
    // only through greq_free_trampoline, after the last query.
    let st = &*(extra as *const GreqState);
    let f: FGreqQuery = std::mem::transmute(st.query);
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    f(st.extra, status as *mut MPI_Fint, &mut ierr);
    ierr
}

pub unsafe extern "C" fn greq_free_trampoline(extra: *mut c_void) -> c_int {
    // SAFETY: as above; the state is dropped here, once.
    let st = Box::from_raw(extra as *mut GreqState);
    let f: FGreqFree = std::mem::transmute(st.free);
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    f(st.extra, &mut ierr);
    ierr
}

pub unsafe extern "C" fn greq_cancel_trampoline(extra: *mut c_void, complete: c_int) -> c_int {
    // SAFETY: as above.
    let st = &*(extra as *const GreqState);
    let f: FGreqCancel = std::mem::transmute(st.cancel);
    let c = logical_c2f(complete);
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    f(st.extra, &c, &mut ierr);
    ierr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_strings() {
        assert_eq!(trim_fortran(b"name   "), b"name\0");
        assert_eq!(trim_fortran(b"  a b  "), b"  a b\0");
        assert_eq!(trim_fortran(b"    "), b"\0");
        assert_eq!(trim_fortran(b"ab\0cd"), b"ab\0");
        let s = unsafe { FString::input_stripped(b"  a b  ".as_ptr() as *const c_char, 7) };
        assert_eq!(s.buf, b"a b\0");
        let s = unsafe { FString::input_stripped(b"   ".as_ptr() as *const c_char, 3) };
        assert_eq!(s.buf, b"\0");
        let mut dst = [0u8; 6];
        copy_blank_padded(b"abc\0zzz", &mut dst);
        assert_eq!(&dst, b"abc   ");
        let mut short = [0u8; 2];
        copy_blank_padded(b"abc\0", &mut short);
        assert_eq!(&short, b"ab");
    }

    #[test]
    fn lengths_and_logicals() {
        assert_eq!(strlen_in(100, 10), 10);
        assert_eq!(strlen_in(-3, 10), 0);
        assert_eq!(buflen_f2c(0, 10), 0);
        assert_eq!(buflen_f2c(5, 10), 6);
        assert_eq!(buflen_c2f(6), 5);
        assert_eq!(logical_f2c(-1), 1);
        assert_eq!(logical_c2f(7), FORTRAN_TRUE);
        let mut idx = [0, 2, 5];
        unsafe { indices_c2f(idx.as_mut_ptr(), 2) };
        assert_eq!(idx, [1, 3, 5]);
        let mut u = MPI_UNDEFINED;
        unsafe { index_c2f(&mut u) };
        assert_eq!(u, MPI_UNDEFINED);
    }

    #[test]
    fn keyvals() {
        assert_eq!(keyval_f2c(MPI_TAG_UB + 1), MPI_TAG_UB);
        assert_eq!(keyval_f2c(12345), 12345);
        let v: c_int = 77;
        assert_eq!(unsafe { attr_value(MPI_TAG_UB, &v as *const c_int as *mut c_void) }, 77);
        assert_eq!(unsafe { attr_value(999, 5 as *mut c_void) }, 5);
    }
}

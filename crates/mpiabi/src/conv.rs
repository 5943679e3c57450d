//! Crossing between the standard ABI and libmpi: the helpers the generated
//! entry points use (pointers and arrays copied in and back, statuses,
//! error codes, address constants), over the generated per-class tables.

use crate::real;
use crate::tables::*;
use crate::types::{abi, int};
use std::ffi::c_int;
use std::sync::atomic::AtomicUsize;

// ---- error codes -------------------------------------------------------

/// libmpi's codes with a message (`class | slot << 8`, below 2^20) cross
/// shifted by this, clear of the standard's classes (0..=62, 1001..=1018)
/// and of user classes and codes (from 2^30 in libmpi), which cross as they are.
const DETAIL_BASE: c_int = 1 << 20;

/// An error code or class of the standard ABI as libmpi's.
pub fn err_in(a: c_int) -> c_int {
    if (DETAIL_BASE..2 * DETAIL_BASE).contains(&a) {
        a - DETAIL_BASE
    } else if (0..DETAIL_BASE).contains(&a) {
        errclass_in(a)
    } else {
        a
    }
}

/// libmpi's error code or class as the standard ABI's.
pub fn err_out(i: c_int) -> c_int {
    if (0..256).contains(&i) {
        errclass_out(i)
    } else if (256..DETAIL_BASE).contains(&i) {
        i + DETAIL_BASE
    } else {
        i
    }
}

// ---- pointers to one value and arrays, copied in and back ------------------

/// The value `p` points to, translated (a default when `p` is NULL).
pub unsafe fn ptr_in<A: Copy, I: Default>(p: *const A, f: fn(A) -> I) -> I {
    if p.is_null() {
        I::default()
    } else {
        f(*p)
    }
}

/// What to pass for `p`: the translated copy, or NULL for NULL.
pub fn ptr_arg<A, I>(p: *const A, t: &mut I) -> *mut I {
    if p.is_null() {
        std::ptr::null_mut()
    } else {
        t
    }
}

pub unsafe fn ptr_out<A, I: Copy>(p: *mut A, t: I, f: fn(I) -> A) {
    if !p.is_null() {
        *p = f(t);
    }
}

pub unsafe fn array_in<A: Copy, I>(p: *const A, n: isize, f: fn(A) -> I) -> Vec<I> {
    if p.is_null() || n <= 0 {
        return Vec::new();
    }
    std::slice::from_raw_parts(p, n as usize).iter().map(|&a| f(a)).collect()
}

pub fn array_arg<A, I>(p: *const A, v: &mut [I]) -> *mut I {
    if p.is_null() {
        std::ptr::null_mut()
    } else {
        v.as_mut_ptr()
    }
}

pub unsafe fn array_out<A, I: Copy>(p: *mut A, v: &[I], f: fn(I) -> A) {
    if !p.is_null() {
        for (k, &x) in v.iter().enumerate() {
            *p.add(k) = f(x);
        }
    }
}

// ---- statuses -------------------------------------------------------------

/// libmpi's MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE (the standard's is NULL).
const INT_STATUS_IGNORE: *mut int::MPI_Status = 1 as *mut int::MPI_Status;

fn status_to_int(a: &abi::MPI_Status) -> int::MPI_Status {
    int::MPI_Status {
        count_lo: a.internal[0],
        count_hi_and_cancelled: a.internal[1],
        MPI_SOURCE: rank_in(a.MPI_SOURCE),
        MPI_TAG: tag_in(a.MPI_TAG),
        MPI_ERROR: err_in(a.MPI_ERROR),
    }
}

fn status_to_abi(i: &int::MPI_Status) -> abi::MPI_Status {
    abi::MPI_Status {
        MPI_SOURCE: rank_out(i.MPI_SOURCE),
        MPI_TAG: tag_out(i.MPI_TAG),
        MPI_ERROR: err_out(i.MPI_ERROR),
        internal: [i.count_lo, i.count_hi_and_cancelled, 0, 0, 0],
    }
}

pub unsafe fn status_in(p: *const abi::MPI_Status) -> int::MPI_Status {
    if p.is_null() {
        int::MPI_Status::default()
    } else {
        status_to_int(&*p)
    }
}

pub fn status_arg(p: *const abi::MPI_Status, t: &mut int::MPI_Status) -> *mut int::MPI_Status {
    if p.is_null() {
        INT_STATUS_IGNORE
    } else {
        t
    }
}

pub unsafe fn status_out(p: *mut abi::MPI_Status, t: &int::MPI_Status) {
    if !p.is_null() {
        *p = status_to_abi(t);
    }
}

pub unsafe fn statuses_in(p: *const abi::MPI_Status, n: isize) -> Vec<int::MPI_Status> {
    array_in(p, n, |a| status_to_int(&a))
}

pub fn statuses_arg(p: *const abi::MPI_Status, v: &mut [int::MPI_Status]) -> *mut int::MPI_Status {
    if p.is_null() {
        INT_STATUS_IGNORE
    } else {
        v.as_mut_ptr()
    }
}

pub unsafe fn statuses_out(p: *mut abi::MPI_Status, v: &[int::MPI_Status]) {
    array_out(p, v, |i| status_to_abi(&i));
}

/// For callbacks that receive libmpi's status (generalized requests).
pub fn status_abi(i: &int::MPI_Status) -> abi::MPI_Status {
    status_to_abi(i)
}
pub fn status_int(a: &abi::MPI_Status) -> int::MPI_Status {
    status_to_int(a)
}

// ---- address constants ---------------------------------------------------

/// A pointer argument whose value may be an address constant.
pub trait Addr: Copy {
    fn addr(self) -> usize;
    fn at(a: usize) -> Self;
}
impl<T> Addr for *const T {
    fn addr(self) -> usize {
        self as usize
    }
    fn at(a: usize) -> Self {
        a as Self
    }
}
impl<T> Addr for *mut T {
    fn addr(self) -> usize {
        self as usize
    }
    fn at(a: usize) -> Self {
        a as Self
    }
}

/// MPI_IN_PLACE and MPI_BUFFER_AUTOMATIC (MPI_BOTTOM is NULL in both).
pub fn buffer_in<P: Addr>(p: P) -> P {
    match p.addr() {
        ABI_IN_PLACE => P::at(INT_IN_PLACE),
        ABI_BUFFER_AUTOMATIC => P::at(INT_BUFFER_AUTOMATIC),
        _ => p,
    }
}

/// MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY: fixed addresses in the standard,
/// the values of two of libmpi's variables there.
pub fn weights_in<P: Addr>(p: P) -> P {
    static UNWEIGHTED: AtomicUsize = AtomicUsize::new(0);
    static EMPTY: AtomicUsize = AtomicUsize::new(0);
    let var = |slot: &AtomicUsize, name: &std::ffi::CStr| {
        // SAFETY: libmpi's `int * const MPI_UNWEIGHTED` (and _EMPTY): read the pointer.
        unsafe { *(real::resolve(slot, name) as *const usize) }
    };
    match p.addr() {
        ABI_UNWEIGHTED => P::at(var(&UNWEIGHTED, c"MPI_UNWEIGHTED")),
        ABI_WEIGHTS_EMPTY => P::at(var(&EMPTY, c"MPI_WEIGHTS_EMPTY")),
        _ => p,
    }
}

// ---- array lengths that depend on the communicator -----------------------

/// How many datatypes an MPI_Alltoallw-like call reads from `sendtypes`
/// (`send`) or `recvtypes`: the group's size (the remote group's on an
/// intercommunicator), or for neighbourhood collectives the topology's
/// out- or in-degree. -1 (nothing to translate) when the communicator is
/// not valid: libmpi reports that.
pub fn peers(comm: abi::MPI_Comm, neighbor: bool, send: bool) -> isize {
    let c = comm_in(comm);
    let mut n: c_int = -1;
    // SAFETY: queries of libmpi with pointers to locals.
    unsafe {
        if !neighbor {
            let mut inter = 0;
            if real::PMPI_Comm_test_inter(c, &mut inter) != 0 {
                return -1;
            }
            let _ = if inter != 0 { real::PMPI_Comm_remote_size(c, &mut n) } else { real::PMPI_Comm_size(c, &mut n) };
            return n as isize;
        }
        let mut kind = 0;
        if real::PMPI_Topo_test(c, &mut kind) != 0 {
            return -1;
        }
        match topo_out(kind) {
            211 => {
                // MPI_CART: two neighbours per dimension
                let mut ndims = 0;
                real::PMPI_Cartdim_get(c, &mut ndims);
                n = 2 * ndims;
            }
            212 => {
                // MPI_GRAPH
                let mut rank = 0;
                real::PMPI_Comm_rank(c, &mut rank);
                real::PMPI_Graph_neighbors_count(c, rank, &mut n);
            }
            213 => {
                // MPI_DIST_GRAPH
                let (mut indeg, mut outdeg, mut weighted) = (0, 0, 0);
                real::PMPI_Dist_graph_neighbors_count(c, &mut indeg, &mut outdeg, &mut weighted);
                n = if send { outdeg } else { indeg };
            }
            _ => {}
        }
    }
    n as isize
}

/// An array length passed by pointer (an INOUT count).
pub unsafe fn len_at(p: *const c_int) -> isize {
    if p.is_null() {
        0
    } else {
        *p as isize
    }
}

/// After a detach: the address stored may be libmpi's MPI_BUFFER_AUTOMATIC.
pub unsafe fn buffer_addr_out(p: *mut std::ffi::c_void) {
    let slot = p as *mut usize;
    if !slot.is_null() && *slot == INT_BUFFER_AUTOMATIC {
        *slot = ABI_BUFFER_AUTOMATIC;
    }
}

/// MPI_T_PVAR_ALL_HANDLES: 1 in the standard, a variable's value in libmpi.
pub fn pvar_handle_in(h: *mut std::ffi::c_void) -> *mut std::ffi::c_void {
    static ALL: AtomicUsize = AtomicUsize::new(0);
    if h as usize == 1 {
        // SAFETY: libmpi's `MPI_T_pvar_handle const MPI_T_PVAR_ALL_HANDLES`: read the pointer.
        unsafe { *(real::resolve(&ALL, c"MPI_T_PVAR_ALL_HANDLES") as *const *mut std::ffi::c_void) }
    } else {
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_round_trip() {
        // Classes by table, codes with a message shifted, user ones as they are.
        assert_eq!(err_out(0), 0);
        for internal in [0, 1, 5, 14, 44, 81, 0x0305, 0x0fff2c, 0x4000_0001, 0x5000_0007] {
            assert_eq!(err_in(err_out(internal)), internal, "{internal:#x}");
        }
        for abi in [0, 6, 13, 62, 1001, 1018, DETAIL_BASE + 0x105] {
            assert_eq!(err_out(err_in(abi)), abi, "{abi}");
        }
        // A code with a message keeps its class in its low byte on libmpi's side.
        let code = err_out(0x0307); // class 7, message slot 3
        assert!(code >= DETAIL_BASE && err_in(code) & 0xff == 0x07);
    }

    #[test]
    fn handles_round_trip_and_user_handles_stay_clear_of_predefined_ones() {
        for abi in [ABI_COMM_WORLD, ABI_COMM_SELF, ABI_COMM_NULL] {
            assert_eq!(comm_out(comm_in(abi)), abi);
        }
        for abi in [ABI_INT, ABI_DOUBLE, ABI_2INT, ABI_DOUBLE_INT, ABI_DATATYPE_NULL, ABI_LONG_LONG] {
            assert_eq!(datatype_out(datatype_in(abi)), abi);
        }
        assert_eq!(request_out(request_in(ABI_REQUEST_NULL)), ABI_REQUEST_NULL);
        assert_eq!(message_out(message_in(ABI_MESSAGE_NULL)), ABI_MESSAGE_NULL);
        assert_eq!(file_in(ABI_FILE_NULL), 0);
        // libmpi's user handles (indirect: top bits 11) become pointers >= 0x400.
        let user = 0xc400_0003u32 as c_int;
        assert!(comm_out(user) >= 0x400);
        assert_eq!(comm_in(comm_out(user)), user);
    }

    #[test]
    fn status_keeps_count_and_translates_fields() {
        let i = int::MPI_Status { count_lo: 12, count_hi_and_cancelled: 1, MPI_SOURCE: -1, MPI_TAG: -1, MPI_ERROR: 0 };
        let a = status_abi(&i);
        // libmpi's MPI_PROC_NULL (-1) and MPI_ANY_TAG (-1) are the standard's -3 and -2.
        assert_eq!((a.MPI_SOURCE, a.MPI_TAG, a.MPI_ERROR), (-3, -2, 0));
        let back = status_int(&a);
        assert_eq!((back.count_lo, back.count_hi_and_cancelled, back.MPI_SOURCE, back.MPI_TAG), (12, 1, -1, -1));
    }

    #[test]
    fn bit_sets_translate_flag_by_flag() {
        // The standard's MPI_MODE_CREATE (2) | MPI_MODE_WRONLY (256) is libmpi's 1 | 4.
        assert_eq!(amode_in(2 | 256), 1 | 4);
        assert_eq!(amode_out(amode_in(2 | 256 | 8)), 2 | 256 | 8);
        assert_eq!(assert_out(assert_in(1024 | 16384)), 1024 | 16384);
    }
}

//! Entry points whose results need more than the generated translation:
//! attribute values that are constants (they point to libmpi's values),
//! the constants among a datatype's contents, and the MPI version the
//! standard ABI's header announces.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use crate::conv::{self, err_out};
use crate::real;
use crate::tables::*;
use crate::types::abi;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

// ---- attributes ------------------------------------------------------------

/// The standard's values of MPI_WIN_CREATE_FLAVOR and MPI_WIN_MODEL, where
/// the attribute can point to.
static FLAVORS: [c_int; 4] = [311, 312, 313, 314];
static MODELS: [c_int; 2] = [321, 322];
/// MPI_HOST and MPI_IO hold a rank or MPI_PROC_NULL / MPI_ANY_SOURCE:
/// the translated value, constant for the process.
static HOST: AtomicI32 = AtomicI32::new(0);
static IO: AtomicI32 = AtomicI32::new(0);

/// After a successful get of `keyval` (the standard's value) whose value is
/// an `int *`: point it at the standard's constant instead of libmpi's.
unsafe fn translate_attr(keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) {
    // Only these keyvals' values are pointers to ints; the others are the
    // user's and never touched.
    if !matches!(keyval, 502 | 503 | 604 | 605) || flag.is_null() || *flag == 0 || attribute_val.is_null() {
        return;
    }
    let slot = attribute_val as *mut *const c_int;
    if (*slot).is_null() {
        return;
    }
    let v = **slot;
    match keyval {
        604 => *slot = FLAVORS.iter().find(|&&x| x == flavor_out(v)).map_or(*slot, |p| p), // MPI_WIN_CREATE_FLAVOR
        605 => *slot = MODELS.iter().find(|&&x| x == model_out(v)).map_or(*slot, |p| p),   // MPI_WIN_MODEL
        503 => {
            // MPI_HOST
            HOST.store(rank_out(v), Ordering::Relaxed);
            *slot = HOST.as_ptr();
        }
        502 => {
            // MPI_IO
            IO.store(rank_out(v), Ordering::Relaxed);
            *slot = IO.as_ptr();
        }
        _ => {}
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_get_attr(win: abi::MPI_Win, win_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    let rc = real::PMPI_Win_get_attr(win_in(win), keyval_in(win_keyval), attribute_val, flag);
    if rc == 0 {
        translate_attr(win_keyval, attribute_val, flag);
    }
    err_out(rc)
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_attr(win: abi::MPI_Win, win_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    PMPI_Win_get_attr(win, win_keyval, attribute_val, flag)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_attr(comm: abi::MPI_Comm, comm_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    let rc = real::PMPI_Comm_get_attr(comm_in(comm), keyval_in(comm_keyval), attribute_val, flag);
    if rc == 0 {
        translate_attr(comm_keyval, attribute_val, flag);
    }
    err_out(rc)
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_attr(comm: abi::MPI_Comm, comm_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    PMPI_Comm_get_attr(comm, comm_keyval, attribute_val, flag)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Attr_get(comm: abi::MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    let rc = real::PMPI_Attr_get(comm_in(comm), keyval_in(keyval), attribute_val, flag);
    if rc == 0 {
        translate_attr(keyval, attribute_val, flag);
    }
    err_out(rc)
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_get(comm: abi::MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    PMPI_Attr_get(comm, keyval, attribute_val, flag)
}

// ---- datatype contents --------------------------------------------------------

/// The constants among the integers MPI_Type_get_contents(_c) returns for
/// a subarray (its order) or a darray (distributions, MPI_DISTRIBUTE_DFLT_DARG,
/// order), as the standard's. `large`: the `_c` layout, where the sizes
/// are large counts and not among the integers.
unsafe fn translate_contents(dt: c_int, ints: *mut c_int, max: isize, large: bool) {
    let (mut ni, mut na, mut nl, mut nd, mut comb) = (0i64, 0i64, 0i64, 0i64, 0);
    if ints.is_null() || real::PMPI_Type_get_envelope_c(dt, &mut ni, &mut na, &mut nl, &mut nd, &mut comb) != 0 {
        return;
    }
    let large = large && nl > 0;
    let n = ni.min(max as i64).max(0) as usize;
    let v = std::slice::from_raw_parts_mut(ints, n);
    let at = |v: &mut [c_int], k: usize, f: fn(c_int) -> c_int| {
        if let Some(x) = v.get_mut(k) {
            *x = f(*x);
        }
    };
    match combiner_out(comb) {
        111 => {
            // MPI_COMBINER_SUBARRAY: ndims, [sizes, subsizes, starts,] order
            let nd = v.first().copied().unwrap_or(0).max(0) as usize;
            at(v, if large { 1 } else { 1 + 3 * nd }, order_out);
        }
        112 => {
            // MPI_COMBINER_DARRAY: size, rank, ndims, [gsizes,] distribs, dargs, psizes, order
            let nd = v.get(2).copied().unwrap_or(0).max(0) as usize;
            let first = if large { 3 } else { 3 + nd };
            for k in 0..nd {
                at(v, first + k, distribute_out);
                at(v, first + nd + k, darg_out);
            }
            at(v, first + 3 * nd, order_out);
        }
        _ => {}
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_contents(
    datatype: abi::MPI_Datatype,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut abi::MPI_Aint,
    array_of_datatypes: *mut abi::MPI_Datatype,
) -> c_int {
    let mut t = conv::array_in(array_of_datatypes, max_datatypes as isize, datatype_in);
    let dt = datatype_in(datatype);
    let rc = real::PMPI_Type_get_contents(
        dt,
        max_integers,
        max_addresses,
        max_datatypes,
        array_of_integers,
        array_of_addresses,
        conv::array_arg(array_of_datatypes, &mut t),
    );
    conv::array_out(array_of_datatypes, &t, datatype_out);
    if rc == 0 {
        translate_contents(dt, array_of_integers, max_integers as isize, false);
    }
    err_out(rc)
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents(
    datatype: abi::MPI_Datatype,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut abi::MPI_Aint,
    array_of_datatypes: *mut abi::MPI_Datatype,
) -> c_int {
    PMPI_Type_get_contents(datatype, max_integers, max_addresses, max_datatypes, array_of_integers, array_of_addresses, array_of_datatypes)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_contents_c(
    datatype: abi::MPI_Datatype,
    max_integers: abi::MPI_Count,
    max_addresses: abi::MPI_Count,
    max_large_counts: abi::MPI_Count,
    max_datatypes: abi::MPI_Count,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut abi::MPI_Aint,
    array_of_large_counts: *mut abi::MPI_Count,
    array_of_datatypes: *mut abi::MPI_Datatype,
) -> c_int {
    let mut t = conv::array_in(array_of_datatypes, max_datatypes as isize, datatype_in);
    let dt = datatype_in(datatype);
    let rc = real::PMPI_Type_get_contents_c(
        dt,
        max_integers,
        max_addresses,
        max_large_counts,
        max_datatypes,
        array_of_integers,
        array_of_addresses,
        array_of_large_counts,
        conv::array_arg(array_of_datatypes, &mut t),
    );
    conv::array_out(array_of_datatypes, &t, datatype_out);
    if rc == 0 {
        translate_contents(dt, array_of_integers, max_integers as isize, true);
    }
    err_out(rc)
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents_c(
    datatype: abi::MPI_Datatype,
    max_integers: abi::MPI_Count,
    max_addresses: abi::MPI_Count,
    max_large_counts: abi::MPI_Count,
    max_datatypes: abi::MPI_Count,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut abi::MPI_Aint,
    array_of_large_counts: *mut abi::MPI_Count,
    array_of_datatypes: *mut abi::MPI_Datatype,
) -> c_int {
    PMPI_Type_get_contents_c(
        datatype,
        max_integers,
        max_addresses,
        max_large_counts,
        max_datatypes,
        array_of_integers,
        array_of_addresses,
        array_of_large_counts,
        array_of_datatypes,
    )
}

// ---- the MPI version ------------------------------------------------------------

/// The version mpi_abi.h announces (MPI_VERSION.MPI_SUBVERSION): the
/// standard ABI is MPI-5.0's.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    if version.is_null() || subversion.is_null() {
        return real::PMPI_Get_version(version, subversion); // libmpi reports it
    }
    *version = 5;
    *subversion = 0;
    0
}
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    PMPI_Get_version(version, subversion)
}

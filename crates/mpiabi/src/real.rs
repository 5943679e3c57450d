//! libmpi.so.12, the one implementation of MPI: its `PMPI_X` functions and
//! data, found by dlsym in that library.
//!
//! Not through the dynamic linker: libmpi_abi exports `PMPI_X` under the
//! same names, and a plain reference would resolve to our own. libmpi is
//! loaded from this library's directory first (they are installed side by
//! side), else by the usual search; it stays local, so its MPICH-ABI
//! `MPI_X` never interposes on a program's.

// Not every libmpi function has a caller here (the MPI_Fint conversions).
#![allow(non_snake_case, dead_code, clippy::missing_safety_doc)]

use crate::types::int::*;
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

static LIBMPI: AtomicUsize = AtomicUsize::new(0);

fn libmpi() -> *mut c_void {
    let h = LIBMPI.load(Ordering::Acquire);
    if h != 0 {
        return h as *mut c_void;
    }
    // SAFETY: dladdr on one of our own functions, dlopen of a path string
    // we made NUL-terminated; failures are reported and end the process.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let mut handle = std::ptr::null_mut();
        if libc::dladdr(libmpi as *const c_void, &mut info) != 0 && !info.dli_fname.is_null() {
            let me = CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
            if let Some(dir) = std::path::Path::new(&me).parent() {
                let path = format!("{}/libmpi.so.12\0", dir.display());
                handle = libc::dlopen(path.as_ptr().cast(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            }
        }
        if handle.is_null() {
            handle = libc::dlopen(c"libmpi.so.12".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        }
        if handle.is_null() {
            let why = CStr::from_ptr(libc::dlerror()).to_string_lossy().into_owned();
            die(&format!("cannot load libmpi.so.12: {why}"));
        }
        LIBMPI.store(handle as usize, Ordering::Release);
        handle
    }
}

fn die(msg: &str) -> ! {
    eprintln!("libmpi_abi: {msg}");
    std::process::abort()
}

/// The address of `name` in libmpi, cached in `slot`.
pub fn resolve(slot: &AtomicUsize, name: &CStr) -> usize {
    let p = slot.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: dlsym with a valid handle and a NUL-terminated name.
    let p = unsafe { libc::dlsym(libmpi(), name.as_ptr()) } as usize;
    if p == 0 {
        die(&format!("libmpi.so.12 has no {}", name.to_string_lossy()));
    }
    slot.store(p, Ordering::Relaxed);
    p
}

include!(concat!(env!("OUT_DIR"), "/real.rs"));

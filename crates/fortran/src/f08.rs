//! What the `mpi_f08` module (crates/abi/src/fortran08.rs) needs besides
//! the wrappers: the address of a choice buffer passed as a C descriptor,
//! the error for a non-contiguous buffer, and MPI_SIZEOF (also used by the
//! `mpi` module).

use crate::ffi::*;
use crate::rt;

// The Fortran wrappers, declared here in the Fortran convention (handles
// are INTEGERs by reference) whatever Rust types the generator gives them.
extern "C" {
    fn mpi_comm_call_errhandler_(comm: *const MPI_Fint, code: *const MPI_Fint, ierr: *mut MPI_Fint);
    fn mpi_win_call_errhandler_(win: *const MPI_Fint, code: *const MPI_Fint, ierr: *mut MPI_Fint);
    fn mpi_file_call_errhandler_(file: *const MPI_Fint, code: *const MPI_Fint, ierr: *mut MPI_Fint);
}

/// `CFI_cdesc_t` of ISO_Fortran_binding.h starts with `void *base_addr`:
/// the address of the first element, for any rank, contiguous or not.
#[no_mangle]
pub unsafe extern "C" fn gridmpi_f08_base_address(desc: *const *mut c_void) -> *mut c_void {
    if desc.is_null() {
        return std::ptr::null_mut();
    }
    *desc
}

/// A non-contiguous choice buffer given to ROUTINE: say so and raise
/// MPI_ERR_BUFFER on the object the call is about (`what`: 1 communicator,
/// 2 window, 3 file, else MPI_COMM_SELF), through the Fortran wrappers so
/// that handles are converted as for any Fortran call.
#[no_mangle]
pub unsafe extern "C" fn gridmpi_f08_noncontiguous(routine: *const c_char, what: *const MPI_Fint, handle: *const MPI_Fint, ierr: *mut MPI_Fint, routine_len: usize) {
    let name = if routine.is_null() { &[][..] } else { std::slice::from_raw_parts(routine as *const u8, routine_len) };
    let name = String::from_utf8_lossy(name);
    eprintln!("GridMPI: {name}: the buffer is not contiguous; the mpi_f08 module has MPI_SUBARRAYS_SUPPORTED = .FALSE. (pass a contiguous array or copy the section)");
    let code: MPI_Fint = MPI_ERR_BUFFER;
    let mut r: MPI_Fint = 0;
    match *what {
        1 => mpi_comm_call_errhandler_(handle, &code, &mut r),
        2 => mpi_win_call_errhandler_(handle, &code, &mut r),
        3 => mpi_file_call_errhandler_(handle, &code, &mut r),
        _ => mpi_comm_call_errhandler_(&MPI_COMM_SELF, &code, &mut r),
    }
    *ierr = code;
}

/// MPI_SIZEOF(X, SIZE, IERROR): the module picks the specific by the type
/// and kind of X; each specific is one of these, by the size of one element.
macro_rules! sizeof {
    ($($sym:ident = $n:expr),*) => {
        $(
            #[no_mangle]
            pub unsafe extern "C" fn $sym(_x: *const c_void, size: *mut MPI_Fint, ierror: *mut MPI_Fint) {
                *size = $n;
                rt::set_ierror(ierror, MPI_SUCCESS);
            }
        )*
    };
}

sizeof!(gridmpi_sizeof_1 = 1, gridmpi_sizeof_2 = 2, gridmpi_sizeof_4 = 4, gridmpi_sizeof_8 = 8, gridmpi_sizeof_16 = 16, gridmpi_sizeof_32 = 32);

//! What the `mpi_f08` module (crates/abi/src/fortran08.rs) needs besides
//! the wrappers: the address of a choice buffer passed as a C descriptor, a
//! contiguous copy of a non-contiguous one for blocking calls, the error for
//! one given to a call that keeps using it, and MPI_SIZEOF (also used by the
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

/// `CFI_cdesc_t` (ISO_Fortran_binding.h), up to its dimensions.
#[repr(C)]
pub struct CfiDesc {
    base_addr: *mut c_void,
    elem_len: usize,
    version: c_int,
    rank: i8,
    attribute: i8,
    type_: i16,
    dim: [CfiDim; 15],
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CfiDim {
    lower_bound: isize,
    extent: isize,
    sm: isize,
}

impl CfiDesc {
    fn dims(&self) -> &[CfiDim] {
        &self.dim[..(self.rank.clamp(0, 15) as usize)]
    }

    fn count(&self) -> usize {
        self.dims().iter().map(|d| d.extent.max(0) as usize).product()
    }

    /// Element after element in array element order, each at its byte
    /// offset from base_addr: what Fortran stores contiguously.
    fn is_contiguous(&self) -> bool {
        let mut stride = self.elem_len as isize;
        for d in self.dims() {
            if d.extent > 1 && d.sm != stride {
                return false;
            }
            stride *= d.extent.max(1);
        }
        true
    }

    /// The byte offset of each element, in array element order.
    fn offsets(&self) -> Vec<isize> {
        let dims = self.dims();
        let mut out = Vec::with_capacity(self.count());
        if self.count() == 0 {
            return out;
        }
        let mut idx = vec![0isize; dims.len()];
        loop {
            out.push(idx.iter().zip(dims).map(|(i, d)| i * d.sm).sum());
            let mut k = 0;
            loop {
                if k == dims.len() {
                    return out;
                }
                idx[k] += 1;
                if idx[k] < dims[k].extent {
                    break;
                }
                idx[k] = 0;
                k += 1;
            }
        }
    }
}

/// The buffer a blocking call gets for a choice argument: the array itself
/// when contiguous, else a contiguous copy of its elements (the call
/// completes before the module's procedure returns, so the copy is
/// enough; [`gridmpi_f08_buffer_out`] writes it back and frees it).
#[no_mangle]
pub unsafe extern "C" fn gridmpi_f08_buffer_in(desc: *const CfiDesc) -> *mut c_void {
    let d = &*desc;
    if d.is_contiguous() {
        return d.base_addr;
    }
    let n = d.elem_len;
    let offsets = d.offsets();
    let copy = libc_malloc((offsets.len() * n).max(1)) as *mut u8;
    for (i, off) in offsets.iter().enumerate() {
        std::ptr::copy_nonoverlapping((d.base_addr as *const u8).offset(*off), copy.add(i * n), n);
    }
    copy as *mut c_void
}

/// After the call: a copy made by [`gridmpi_f08_buffer_in`] is written
/// back into the array (unless `write_back` is 0: input buffers) and freed.
#[no_mangle]
pub unsafe extern "C" fn gridmpi_f08_buffer_out(desc: *const CfiDesc, copy: *mut c_void, write_back: *const c_int) {
    let d = &*desc;
    if copy == d.base_addr || copy.is_null() {
        return;
    }
    if *write_back != 0 {
        let n = d.elem_len;
        for (i, off) in d.offsets().iter().enumerate() {
            std::ptr::copy_nonoverlapping((copy as *const u8).add(i * n), (d.base_addr as *mut u8).offset(*off), n);
        }
    }
    libc_free(copy);
}

extern "C" {
    #[link_name = "malloc"]
    fn libc_malloc(size: usize) -> *mut c_void;
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(base: *mut c_void, elem_len: usize, dims: &[(isize, isize)]) -> CfiDesc {
        let mut dim = [CfiDim { lower_bound: 0, extent: 0, sm: 0 }; 15];
        for (i, &(extent, sm)) in dims.iter().enumerate() {
            dim[i] = CfiDim { lower_bound: 0, extent, sm };
        }
        CfiDesc { base_addr: base, elem_len, version: 1, rank: dims.len() as i8, attribute: 0, type_: 0, dim }
    }

    #[test]
    fn sections_are_copied_in_and_out() {
        // a(1:6:2, 1:2) of an INTEGER a(6, 2).
        let mut a: Vec<i32> = (1..=12).collect();
        let d = desc(a.as_mut_ptr() as *mut c_void, 4, &[(3, 8), (2, 24)]);
        assert!(!d.is_contiguous());
        assert_eq!(d.offsets(), vec![0, 8, 16, 24, 32, 40]);
        unsafe {
            let p = gridmpi_f08_buffer_in(&d) as *mut i32;
            assert_eq!(std::slice::from_raw_parts(p, 6), &[1, 3, 5, 7, 9, 11]);
            for i in 0..6 {
                *p.add(i) = -(i as i32);
            }
            gridmpi_f08_buffer_out(&d, p as *mut c_void, &1);
        }
        assert_eq!(a, vec![0, 2, -1, 4, -2, 6, -3, 8, -4, 10, -5, 12]);
        let whole = desc(a.as_mut_ptr() as *mut c_void, 4, &[(6, 4), (2, 24)]);
        assert!(whole.is_contiguous());
        assert_eq!(unsafe { gridmpi_f08_buffer_in(&whole) }, a.as_mut_ptr() as *mut c_void);
        let scalar = desc(a.as_mut_ptr() as *mut c_void, 4, &[]);
        assert!(scalar.is_contiguous() && scalar.count() == 1);
    }
}

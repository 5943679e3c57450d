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
    refuse(
        routine,
        routine_len,
        "the buffer is not contiguous, and this routine takes sections only where a buffer comes with its own count and datatype (pass a contiguous array or copy the section)",
        what,
        handle,
        ierr,
    );
}

/// Says why ROUTINE refuses its buffer and raises MPI_ERR_BUFFER (see
/// [`gridmpi_f08_noncontiguous`]).
unsafe fn refuse(routine: *const c_char, routine_len: usize, why: &str, what: *const MPI_Fint, handle: *const MPI_Fint, ierr: *mut MPI_Fint) {
    let name = if routine.is_null() { &[][..] } else { std::slice::from_raw_parts(routine as *const u8, routine_len) };
    let name = String::from_utf8_lossy(name);
    eprintln!("GridMPI: {name}: {why}");
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

/// A datatype that reaches `count` items of `datatype` in an array
/// section as if the section were contiguous: for routines that use the
/// buffer after they return (nonblocking, persistent, one-sided), which
/// then get the section's first element, a count of 1 and this type (a
/// blocking routine gets a contiguous copy instead). On success the type
/// is committed and the caller frees it after the call; else ROUTINE's
/// MPI_ERR_BUFFER is raised (see [`gridmpi_f08_noncontiguous`]).
///
/// The section's elements (`elem_len` bytes each, at the strides of its
/// descriptor) each hold `elem_len / size(B)` items of the basic type B
/// of `datatype`, which must be dense (a predefined type, or contiguous
/// ones of it); the type is a nest of hvectors over the section's
/// dimensions, so it stays small for any section size.
#[no_mangle]
pub unsafe extern "C" fn gridmpi_f08_section_type(
    desc: *const CfiDesc, count: *const MPI_Count, datatype: *const MPI_Fint, newtype: *mut MPI_Fint, routine: *const c_char,
    what: *const MPI_Fint, handle: *const MPI_Fint, ierr: *mut MPI_Fint, routine_len: usize,
) {
    match section_type(&*desc, *count, *datatype) {
        Ok(t) => {
            *newtype = t;
            *ierr = MPI_SUCCESS;
        }
        Err(why) => refuse(routine, routine_len, &why, what, handle, ierr),
    }
}

/// Frees a type [`gridmpi_f08_section_type`] made, after the call.
#[no_mangle]
pub unsafe extern "C" fn gridmpi_f08_type_release(datatype: *mut MPI_Fint) {
    crate::wrappers::PMPI_Type_free(datatype);
}

/// The basic type of a dense `datatype` (MPI_INTEGER, or contiguous types
/// of it) and its size; None for any other.
unsafe fn dense_basic(datatype: MPI_Datatype) -> Option<(MPI_Datatype, MPI_Count)> {
    use crate::wrappers::*;
    let mut t = datatype;
    loop {
        let (mut ni, mut na, mut nd, mut combiner) = (0, 0, 0, 0);
        if PMPI_Type_get_envelope(t, &mut ni, &mut na, &mut nd, &mut combiner) != MPI_SUCCESS {
            return None;
        }
        match combiner {
            MPI_COMBINER_NAMED => break,
            MPI_COMBINER_CONTIGUOUS if ni == 1 && nd == 1 => {
                let (mut ints, mut types) = ([0 as c_int; 1], [0 as MPI_Datatype; 1]);
                if PMPI_Type_get_contents(t, 1, 0, 1, ints.as_mut_ptr(), std::ptr::null_mut(), types.as_mut_ptr()) != MPI_SUCCESS {
                    return None;
                }
                t = types[0];
            }
            _ => return None,
        }
    }
    let (mut size, mut lb, mut extent) = (0, 0, 0);
    let ok = PMPI_Type_size_c(t, &mut size) == MPI_SUCCESS && PMPI_Type_get_extent_c(t, &mut lb, &mut extent) == MPI_SUCCESS;
    (ok && size > 0 && lb == 0 && extent == size).then_some((t, size))
}

/// Types made while building, freed at the end (the result holds what it
/// needs of them).
struct Parts(Vec<MPI_Datatype>);

impl Parts {
    unsafe fn made(&mut self, rc: c_int, t: MPI_Datatype) -> Result<MPI_Datatype, String> {
        if rc != MPI_SUCCESS {
            return Err(format!("could not build a datatype for the section (error {rc})"));
        }
        self.0.push(t);
        Ok(t)
    }
}

impl Drop for Parts {
    fn drop(&mut self) {
        for t in self.0.iter_mut() {
            // SAFETY: types this builder made.
            unsafe { crate::wrappers::PMPI_Type_free(t) };
        }
    }
}

unsafe fn section_type(d: &CfiDesc, count: MPI_Count, datatype: MPI_Datatype) -> Result<MPI_Datatype, String> {
    use crate::wrappers::*;
    let (basic, bsize) = dense_basic(datatype).ok_or("a section is taken only with a predefined datatype or contiguous ones of it")?;
    let (mut size, mut lb, mut extent) = (0, 0, 0);
    PMPI_Type_size_c(datatype, &mut size);
    PMPI_Type_get_extent_c(datatype, &mut lb, &mut extent);
    let elem = d.elem_len as MPI_Count;
    if elem % bsize != 0 || size != extent || lb != 0 {
        return Err(format!("the section's elements ({elem} bytes) do not hold whole items of the datatype ({bsize} bytes)"));
    }
    let per = elem / bsize;
    // Items of the basic type the call reaches: whole elements and a rest.
    let items = count.checked_mul(size / bsize).ok_or("count too large")?;
    let (whole, rest) = (items / per, items % per);
    let avail = d.count() as MPI_Count;
    if whole + (rest > 0) as MPI_Count > avail {
        return Err(format!("count {count} reaches past the section's {avail} elements"));
    }
    let mut parts = Parts(Vec::new());
    let mut unit = basic;
    if per > 1 {
        let mut t = 0;
        unit = parts.made(PMPI_Type_contiguous_c(per, basic, &mut t), t)?;
    }
    // The first `n` elements of dims[..k] (array element order: dims[0]
    // varies fastest), as (type, elements) pieces placed at byte offsets.
    let dims = d.dims();
    let slab: Vec<MPI_Count> = std::iter::once(1).chain(dims.iter().scan(1, |p, dm| {
        *p *= dm.extent.max(0) as MPI_Count;
        Some(*p)
    })).collect();
    fn prefix(parts: &mut Parts, dims: &[CfiDim], slab: &[MPI_Count], unit: MPI_Datatype, k: usize, n: MPI_Count, at: MPI_Aint, out: &mut Vec<(MPI_Datatype, MPI_Aint)>) -> Result<(), String> {
        if n == 0 {
            return Ok(());
        }
        if k == 0 {
            out.push((unit, at));
            return Ok(());
        }
        let (per_slab, stride) = (slab[k - 1], dims[k - 1].sm as MPI_Count);
        let (q, r) = (n / per_slab, n % per_slab);
        if q > 0 {
            let mut inner = Vec::new();
            prefix(parts, dims, slab, unit, k - 1, per_slab, 0, &mut inner)?;
            let one = single(parts, inner)?;
            let mut t = 0;
            // SAFETY: plain MPI call on types of ours.
            let t = unsafe { parts.made(crate::wrappers::PMPI_Type_create_hvector_c(q, 1, stride, one, &mut t), t)? };
            out.push((t, at));
        }
        prefix(parts, dims, slab, unit, k - 1, r, at + (q * stride) as MPI_Aint, out)
    }
    fn single(parts: &mut Parts, pieces: Vec<(MPI_Datatype, MPI_Aint)>) -> Result<MPI_Datatype, String> {
        if let [(t, 0)] = pieces[..] {
            return Ok(t);
        }
        let lens = vec![1 as c_int; pieces.len()];
        let (types, disps): (Vec<MPI_Datatype>, Vec<MPI_Aint>) = pieces.into_iter().unzip();
        let mut t = 0;
        // SAFETY: the arrays hold `lens.len()` entries each.
        unsafe { parts.made(crate::wrappers::PMPI_Type_create_struct(lens.len() as c_int, lens.as_ptr(), disps.as_ptr(), types.as_ptr(), &mut t), t) }
    }
    let mut pieces = Vec::new();
    prefix(&mut parts, dims, &slab, unit, dims.len(), whole, 0, &mut pieces)?;
    if rest > 0 {
        // Part of the next element: its first `rest` items.
        let at = d.offsets().get(whole as usize).copied().unwrap_or(0) as MPI_Aint;
        let mut t = 0;
        let t = parts.made(PMPI_Type_contiguous_c(rest, basic, &mut t), t)?;
        pieces.push((t, at));
    }
    let result = if pieces.is_empty() {
        let mut t = 0;
        parts.made(PMPI_Type_contiguous_c(0, basic, &mut t), t)?
    } else {
        single(&mut parts, pieces)?
    };
    // Keep the result out of the builder's frees; commit it.
    parts.0.retain(|&t| t != result);
    let mut result = result;
    if result == basic {
        // One element of a predefined type: still a type of its own, as
        // the caller frees it.
        let mut t = 0;
        PMPI_Type_contiguous_c(1, basic, &mut t);
        result = t;
    }
    if PMPI_Type_commit(&mut result) != MPI_SUCCESS {
        PMPI_Type_free(&mut result);
        return Err("could not commit the section's datatype".into());
    }
    Ok(result)
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

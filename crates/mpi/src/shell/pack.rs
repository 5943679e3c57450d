//! MPI_Pack / MPI_Unpack and their external32 forms, each in the classic
//! and the large-count (`_c`) binding.

use super::dtype::type_err;
use super::*;
use crate::state::{self, api, Target};

/// The position argument: checked non-null and non-negative.
fn pos(position: CountPtr) -> R<u64> {
    position.check("position")?;
    // SAFETY: checked non-null.
    let p = unsafe { position.get() };
    u64::try_from(p).map_err(|_| err(MPI_ERR_ARG, format!("invalid position {p}")))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn pack(name: &'static str, inbuf: *const c_void, incount: MPI_Count, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: MPI_Count, position: CountPtr, comm: MPI_Comm) -> c_int {
    api(name, Target::Comm(comm), || {
        let n = check_count(incount)?;
        let at = pos(position)?;
        let dt = state::with(|st| {
            st.comm(comm)?;
            st.dtype(datatype)
        })?;
        let ub = user_buf(inbuf, n, dt)?;
        let need = ub.len();
        if outsize < 0 || at + need > outsize as u64 {
            return Err(err(MPI_ERR_TRUNCATE, format!("the output buffer ({outsize} bytes) has no room for {need} bytes at position {at}")));
        }
        if need > 0 {
            check_ptr(outbuf, "outbuf")?;
            // SAFETY: the caller's output buffer has `outsize` bytes, and
            // at + need <= outsize; its input buffer holds `incount` items.
            unsafe {
                let out = std::slice::from_raw_parts_mut((outbuf as *mut u8).add(at as usize), need as usize);
                ub.read_packed(0, out);
            }
        }
        // SAFETY: checked non-null; the new position is at most outsize, so it fits.
        unsafe { position.put((at + need) as i64) };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn unpack(name: &'static str, inbuf: *const c_void, insize: MPI_Count, position: CountPtr, outbuf: *mut c_void, outcount: MPI_Count, datatype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    api(name, Target::Comm(comm), || {
        let n = check_count(outcount)?;
        let at = pos(position)?;
        let dt = state::with(|st| {
            st.comm(comm)?;
            st.dtype(datatype)
        })?;
        let ub = user_buf(outbuf, n, dt)?;
        let need = ub.len();
        if insize < 0 || at + need > insize as u64 {
            return Err(err(MPI_ERR_TRUNCATE, format!("the input holds {} bytes after position {at}; {need} are needed", (insize - at as i64).max(0))));
        }
        if need > 0 {
            check_ptr(inbuf, "inbuf")?;
            // SAFETY: the caller's input buffer has `insize` bytes, and
            // at + need <= insize; its output buffer holds `outcount` items.
            unsafe {
                let inp = std::slice::from_raw_parts((inbuf as *const u8).add(at as usize), need as usize);
                ub.write_packed(0, inp);
            }
        }
        // SAFETY: checked non-null; the new position is at most insize, so it fits.
        unsafe { position.put((at + need) as i64) };
        Ok(())
    })
}

/// MPI_Pack_size(_c): an upper bound of the packed size (here the exact
/// size); MPI_UNDEFINED in an `int` that cannot hold it (as MPICH).
pub(crate) fn pack_size(name: &'static str, incount: MPI_Count, datatype: MPI_Datatype, comm: MPI_Comm, size: CountPtr) -> c_int {
    api(name, Target::Comm(comm), || {
        size.check("size")?;
        let n = check_count(incount)?;
        let dt = state::with(|st| {
            st.comm(comm)?;
            st.dtype_any(datatype, false)
        })?;
        let b = n.checked_mul(dt.size()).filter(|&b| b <= i64::MAX as u64).ok_or_else(|| err(MPI_ERR_COUNT, "the packed size overflows"))?;
        // SAFETY: checked non-null.
        unsafe { size.put(b as i64) };
        Ok(())
    })
}

unsafe fn check_datarep(datarep: *const c_char) -> R<()> {
    let d = read_cstr(datarep)?;
    if d != "external32" {
        return Err(err(MPI_ERR_UNSUPPORTED_DATAREP, format!("data representation {d:?} is not supported (only \"external32\")")));
    }
    Ok(())
}

// The external32 functions take MPI_Aint sizes and positions in the classic
// binding and MPI_Count ones in the large-count binding: both are i64 here.

#[allow(clippy::too_many_arguments)]
pub(crate) fn pack_external(name: &'static str, datarep: *const c_char, inbuf: *const c_void, incount: MPI_Count, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: MPI_Count, position: *mut MPI_Count) -> c_int {
    api(name, Target::NoComm, || {
        // SAFETY: read_cstr checks for NULL; the caller's C string.
        unsafe { check_datarep(datarep)? };
        check_ptr(position, "position")?;
        let n = check_count(incount)?;
        let dt = state::with(|st| st.dtype(datatype))?;
        // SAFETY: checked non-null.
        let at = unsafe { *position };
        if at < 0 || at > outsize {
            return Err(err(MPI_ERR_ARG, format!("invalid position {at}")));
        }
        let room = (outsize - at) as usize;
        // SAFETY: the caller's buffer has `outsize` bytes.
        let out = if room == 0 { &mut [][..] } else { unsafe { std::slice::from_raw_parts_mut((outbuf as *mut u8).add(at as usize), room) } };
        // SAFETY: the caller's buffer holds `incount` items of the datatype.
        let used = unsafe { gridmpi_datatype::pack_external32(inbuf as *const u8, n, &dt, out) }.map_err(type_err)?;
        // SAFETY: checked non-null.
        unsafe { *position = at + used as MPI_Count };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn unpack_external(name: &'static str, datarep: *const c_char, inbuf: *const c_void, insize: MPI_Count, position: *mut MPI_Count, outbuf: *mut c_void, outcount: MPI_Count, datatype: MPI_Datatype) -> c_int {
    api(name, Target::NoComm, || {
        // SAFETY: read_cstr checks for NULL; the caller's C string.
        unsafe { check_datarep(datarep)? };
        check_ptr(position, "position")?;
        let n = check_count(outcount)?;
        let dt = state::with(|st| st.dtype(datatype))?;
        // SAFETY: checked non-null.
        let at = unsafe { *position };
        if at < 0 || at > insize {
            return Err(err(MPI_ERR_ARG, format!("invalid position {at}")));
        }
        let avail = (insize - at) as usize;
        // SAFETY: the caller's buffer has `insize` bytes.
        let inp = if avail == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts((inbuf as *const u8).add(at as usize), avail) } };
        // SAFETY: the caller's buffer has room for `outcount` items of the datatype.
        let used = unsafe { gridmpi_datatype::unpack_external32(outbuf as *mut u8, n, &dt, inp) }.map_err(type_err)?;
        // SAFETY: checked non-null.
        unsafe { *position = at + used as MPI_Count };
        Ok(())
    })
}

pub(crate) fn pack_external_size(name: &'static str, datarep: *const c_char, incount: MPI_Count, datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    api(name, Target::NoComm, || {
        // SAFETY: read_cstr checks for NULL; the caller's C string.
        unsafe { check_datarep(datarep)? };
        check_ptr(size, "size")?;
        let n = check_count(incount)?;
        let dt = state::with(|st| st.dtype_any(datatype, false))?;
        let b = gridmpi_datatype::external32_size(&dt, n).map_err(type_err)?;
        // SAFETY: checked non-null.
        unsafe { *size = b as MPI_Count };
        Ok(())
    })
}

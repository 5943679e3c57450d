//! MPI_Pack / MPI_Unpack and their external32 forms.

use super::dtype::type_err;
use super::*;
use crate::state::{self, api, Target};

fn pos(position: *mut c_int) -> R<u64> {
    check_ptr(position, "position")?;
    // SAFETY: checked non-null.
    let p = unsafe { *position };
    if p < 0 {
        return Err(err(MPI_ERR_ARG, format!("invalid position {p}")));
    }
    Ok(p as u64)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack(inbuf: *const c_void, incount: c_int, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: c_int, position: *mut c_int, comm: MPI_Comm) -> c_int {
    api("MPI_Pack", Target::Comm(comm), || {
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
            let out = std::slice::from_raw_parts_mut((outbuf as *mut u8).add(at as usize), need as usize);
            ub.read_packed(0, out);
        }
        *position = (at + need) as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpack(inbuf: *const c_void, insize: c_int, position: *mut c_int, outbuf: *mut c_void, outcount: c_int, datatype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    api("MPI_Unpack", Target::Comm(comm), || {
        let n = check_count(outcount)?;
        let at = pos(position)?;
        let dt = state::with(|st| {
            st.comm(comm)?;
            st.dtype(datatype)
        })?;
        let ub = user_buf(outbuf, n, dt)?;
        let need = ub.len();
        if insize < 0 || at + need > insize as u64 {
            return Err(err(MPI_ERR_TRUNCATE, format!("the input holds {} bytes after position {at}; {need} are needed", (insize as i64 - at as i64).max(0))));
        }
        if need > 0 {
            check_ptr(inbuf, "inbuf")?;
            let inp = std::slice::from_raw_parts((inbuf as *const u8).add(at as usize), need as usize);
            ub.write_packed(0, inp);
        }
        *position = (at + need) as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_size(incount: c_int, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut c_int) -> c_int {
    api("MPI_Pack_size", Target::Comm(comm), || {
        check_ptr(size, "size")?;
        let n = check_count(incount)?;
        let dt = state::with(|st| {
            st.comm(comm)?;
            st.dtype_any(datatype, false)
        })?;
        let b = n.checked_mul(dt.size()).filter(|&b| b <= c_int::MAX as u64).ok_or_else(|| err(MPI_ERR_COUNT, "the packed size does not fit in an int"))?;
        *size = b as c_int;
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

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_external(datarep: *const c_char, inbuf: *const c_void, incount: c_int, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: MPI_Aint, position: *mut MPI_Aint) -> c_int {
    api("MPI_Pack_external", Target::NoComm, || {
        check_datarep(datarep)?;
        check_ptr(position, "position")?;
        let n = check_count(incount)?;
        let dt = state::with(|st| st.dtype(datatype))?;
        let at = *position;
        if at < 0 || at > outsize {
            return Err(err(MPI_ERR_ARG, format!("invalid position {at}")));
        }
        let room = (outsize - at) as usize;
        let out = if room == 0 { &mut [][..] } else { std::slice::from_raw_parts_mut((outbuf as *mut u8).add(at as usize), room) };
        let used = gridmpi_datatype::pack_external32(inbuf as *const u8, n, &dt, out).map_err(type_err)?;
        *position = at + used as MPI_Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpack_external(datarep: *const c_char, inbuf: *const c_void, insize: MPI_Aint, position: *mut MPI_Aint, outbuf: *mut c_void, outcount: c_int, datatype: MPI_Datatype) -> c_int {
    api("MPI_Unpack_external", Target::NoComm, || {
        check_datarep(datarep)?;
        check_ptr(position, "position")?;
        let n = check_count(outcount)?;
        let dt = state::with(|st| st.dtype(datatype))?;
        let at = *position;
        if at < 0 || at > insize {
            return Err(err(MPI_ERR_ARG, format!("invalid position {at}")));
        }
        let avail = (insize - at) as usize;
        let inp = if avail == 0 { &[][..] } else { std::slice::from_raw_parts((inbuf as *const u8).add(at as usize), avail) };
        let used = gridmpi_datatype::unpack_external32(outbuf as *mut u8, n, &dt, inp).map_err(type_err)?;
        *position = at + used as MPI_Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_external_size(datarep: *const c_char, incount: c_int, datatype: MPI_Datatype, size: *mut MPI_Aint) -> c_int {
    api("MPI_Pack_external_size", Target::NoComm, || {
        check_datarep(datarep)?;
        check_ptr(size, "size")?;
        let n = check_count(incount)?;
        let dt = state::with(|st| st.dtype_any(datatype, false))?;
        *size = gridmpi_datatype::external32_size(&dt, n).map_err(type_err)? as MPI_Aint;
        Ok(())
    })
}

//! Data representations (MPI 4.1, 14.5): how typed data in memory becomes
//! bytes in a file and back.
//!
//! - `native`: the bytes of memory, packed (holes of the memory type
//!   dropped); `internal` is the same here (the standard leaves it to the
//!   implementation, and every GridMPI process of a job has one ABI).
//! - `external32`: the standard's portable big-endian form, by the
//!   datatype crate's conversion.
//! - user-defined (`MPI_Register_datarep`): the program's conversion
//!   functions, called with the standard's arguments (count of predefined
//!   elements, the user's datatype, an element position into it tiled).
//!
//! Conversions produce or consume the whole access at once, so the file
//! layer only ever moves representation bytes.

use crate::errors::{err, R};
use crate::ffi::*;
use gridmpi_datatype::{external32_size, pack_external32, unpack_external32, Datatype};
use std::sync::{Arc, Mutex};

/// The conversion functions of a user-defined representation; the
/// classic and large-count forms differ only in the count's type.
#[derive(Clone, Copy)]
pub enum Conversion {
    Int(MPI_Datarep_conversion_function),
    Large(MPI_Datarep_conversion_function_c),
}

pub struct UserRep {
    pub name: String,
    pub read: Option<Conversion>,
    pub write: Option<Conversion>,
    pub extent: MPI_Datarep_extent_function,
    pub extra: *mut c_void,
}

// SAFETY: `extra` is the program's state for its own callbacks, which MPI
// may call from any thread.
unsafe impl Send for UserRep {}
unsafe impl Sync for UserRep {}

#[derive(Clone)]
pub enum Datarep {
    Native,
    Internal,
    External32,
    User(Arc<UserRep>),
}

/// Every user-defined representation of the process (names are never
/// freed: MPI has no call to unregister one).
static REGISTRY: Mutex<Vec<Arc<UserRep>>> = Mutex::new(Vec::new());

/// MPI_Register_datarep: a name may be registered once.
pub fn register(rep: UserRep) -> R<()> {
    if rep.name.is_empty() || rep.name.len() >= MPI_MAX_DATAREP_STRING as usize {
        return Err(err(MPI_ERR_ARG, format!("invalid data representation name {:?}", rep.name)));
    }
    let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    if matches!(rep.name.as_str(), "native" | "internal" | "external32") || reg.iter().any(|r| r.name == rep.name) {
        return Err(err(MPI_ERR_DUP_DATAREP, format!("data representation {:?} is already defined", rep.name)));
    }
    reg.push(Arc::new(rep));
    Ok(())
}

impl Datarep {
    pub fn lookup(name: &str) -> R<Datarep> {
        match name {
            "native" => Ok(Datarep::Native),
            "internal" => Ok(Datarep::Internal),
            "external32" => Ok(Datarep::External32),
            _ => {
                let reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
                reg.iter()
                    .find(|r| r.name == name)
                    .map(|r| Datarep::User(r.clone()))
                    .ok_or_else(|| err(MPI_ERR_UNSUPPORTED_DATAREP, format!("unknown data representation {name:?} (native, internal, external32 or one registered with MPI_Register_datarep)")))
            }
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Datarep::Native => "native",
            Datarep::Internal => "internal",
            Datarep::External32 => "external32",
            Datarep::User(u) => &u.name,
        }
    }

    /// Whether file bytes are memory bytes (no conversion).
    pub fn is_native(&self) -> bool {
        matches!(self, Datarep::Native | Datarep::Internal)
    }

    /// Bytes of `count` items of `dt` in the file. `elem` is the handle of
    /// the predefined type every element of `dt` has, if one does (a user
    /// representation's extent function is asked about it).
    pub fn file_size(&self, dt: &Datatype, count: u64, elem: Option<MPI_Datatype>) -> R<u64> {
        match self {
            Datarep::Native | Datarep::Internal => Ok(count * dt.size()),
            Datarep::External32 => external32_size(dt, count).map_err(|e| err(MPI_ERR_TYPE, e.to_string())),
            Datarep::User(u) => {
                let e = user_elem_extent(u, dt, elem)?;
                Ok(count * (dt.size() / elem_size(dt)?) * e)
            }
        }
    }

    /// The file bytes of `count` items of `dt` at `buf` (for a write).
    ///
    /// # Safety
    /// `buf` holds `count` items of `dt` (the caller's MPI contract).
    pub unsafe fn encode(&self, buf: *const u8, count: u64, dt: &Datatype, dt_handle: MPI_Datatype, elem: Option<MPI_Datatype>) -> R<Vec<u8>> {
        let n = self.file_size(dt, count, elem)? as usize;
        let mut out = vec![0u8; n];
        match self {
            Datarep::Native | Datarep::Internal => {
                gridmpi_datatype::pack(buf, count, dt, 0, &mut out);
            }
            Datarep::External32 => {
                pack_external32(buf, count, dt, &mut out).map_err(|e| err(MPI_ERR_CONVERSION, e.to_string()))?;
            }
            Datarep::User(u) => match u.write {
                // No conversion: memory bytes, as many as the file form holds.
                None => {
                    gridmpi_datatype::pack(buf, count, dt, 0, &mut out);
                }
                Some(f) => {
                    let elems = count * (dt.size() / elem_size(dt)?);
                    call_conversion(f, buf as *mut c_void, dt_handle, elems, out.as_mut_ptr() as *mut c_void, u.extra)?;
                }
            },
        }
        Ok(out)
    }

    /// Store file bytes `data` into the items of `dt` at `buf` (a read);
    /// `data` may stop short (the end of the file): whole elements are
    /// converted. Returns the memory bytes stored.
    ///
    /// # Safety
    /// As for [`Datarep::encode`], writable.
    pub unsafe fn decode(&self, data: &[u8], buf: *mut u8, count: u64, dt: &Datatype, dt_handle: MPI_Datatype, elem: Option<MPI_Datatype>) -> R<u64> {
        match self {
            Datarep::Native | Datarep::Internal => Ok(gridmpi_datatype::unpack(buf, count, dt, 0, data) as u64),
            Datarep::External32 => {
                // Whole items only: external32 items may differ in size from memory ones.
                let item = external32_size(dt, 1).map_err(|e| err(MPI_ERR_TYPE, e.to_string()))?.max(1);
                let items = (data.len() as u64 / item).min(count);
                unpack_external32(buf, items, dt, &data[..(items * item) as usize]).map_err(|e| err(MPI_ERR_CONVERSION, e.to_string()))?;
                Ok(items * dt.size())
            }
            Datarep::User(u) => match u.read {
                None => Ok(gridmpi_datatype::unpack(buf, count, dt, 0, data) as u64),
                Some(f) => {
                    let e = user_elem_extent(u, dt, elem)?;
                    let elems = (data.len() as u64 / e.max(1)).min(count * (dt.size() / elem_size(dt)?));
                    call_conversion(f, buf as *mut c_void, dt_handle, elems, data.as_ptr() as *mut c_void, u.extra)?;
                    Ok(elems * elem_size(dt)?)
                }
            },
        }
    }
}

/// Memory bytes of one element of a type whose elements are all alike.
fn elem_size(dt: &Datatype) -> R<u64> {
    dt.uniform_element()
        .map(|b| b.size() as u64)
        .ok_or_else(|| err(MPI_ERR_UNSUPPORTED_DATAREP, "user-defined data representations are supported for datatypes of one predefined element type only"))
}

/// What the user's extent function says of the element type of `dt`.
fn user_elem_extent(u: &UserRep, dt: &Datatype, elem: Option<MPI_Datatype>) -> R<u64> {
    elem_size(dt)?;
    let h = elem.ok_or_else(|| err(MPI_ERR_UNSUPPORTED_DATAREP, "the datatype's element type has no predefined handle"))?;
    let mut extent: MPI_Aint = 0;
    // SAFETY: the program's extent function, called as MPI specifies.
    let rc = unsafe { (u.extent)(h, &mut extent, u.extra) };
    if rc != MPI_SUCCESS {
        return Err(MpiErrorCode::from(rc, "the data representation's extent function failed"));
    }
    if extent <= 0 {
        return Err(err(MPI_ERR_CONVERSION, format!("the data representation's extent function gave {extent} bytes")));
    }
    Ok(extent as u64)
}

unsafe fn call_conversion(f: Conversion, userbuf: *mut c_void, dt: MPI_Datatype, count: u64, filebuf: *mut c_void, extra: *mut c_void) -> R<()> {
    let rc = match f {
        Conversion::Int(f) => {
            let n = c_int::try_from(count).map_err(|_| err(MPI_ERR_COUNT, format!("{count} elements do not fit the conversion function's int count")))?;
            f(userbuf, dt, n, filebuf, 0, extra)
        }
        Conversion::Large(f) => f(userbuf, dt, count as MPI_Count, filebuf, 0, extra),
    };
    if rc != MPI_SUCCESS {
        return Err(MpiErrorCode::from(rc, "the data representation's conversion function failed"));
    }
    Ok(())
}

/// An error code a user callback returned, kept as the call's error.
struct MpiErrorCode;

impl MpiErrorCode {
    fn from(code: c_int, msg: &str) -> crate::errors::MpiError {
        crate::errors::MpiError { class: MPI_ERR_CONVERSION, msg: format!("{msg} (code {code})"), code: Some(code) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridmpi_datatype::BasicType;

    #[test]
    fn external32_is_big_endian_and_round_trips() {
        let dt = Datatype::basic(BasicType::Int);
        let v: [i32; 2] = [1, -2];
        let bytes = unsafe { Datarep::External32.encode(v.as_ptr() as *const u8, 2, &dt, 0, None) }.unwrap();
        assert_eq!(bytes, vec![0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe]);
        let mut back = [0i32; 2];
        let n = unsafe { Datarep::External32.decode(&bytes, back.as_mut_ptr() as *mut u8, 2, &dt, 0, None) }.unwrap();
        assert_eq!((n, back), (8, v));
        // A short read converts whole items only.
        let mut part = [0i32; 2];
        let n = unsafe { Datarep::External32.decode(&bytes[..6], part.as_mut_ptr() as *mut u8, 2, &dt, 0, None) }.unwrap();
        assert_eq!((n, part), (4, [1, 0]));
    }

    #[test]
    fn native_packs_away_the_holes() {
        let int = std::sync::Arc::new(Datatype::basic(BasicType::Int));
        let dt = Datatype::vector(2, 1, 2, &int).unwrap();
        let v: [i32; 3] = [7, 0, 9];
        let bytes = unsafe { Datarep::Native.encode(v.as_ptr() as *const u8, 1, &dt, 0, None) }.unwrap();
        assert_eq!(bytes.len(), 8);
        let mut back = [0i32; 3];
        unsafe { Datarep::Native.decode(&bytes, back.as_mut_ptr() as *mut u8, 1, &dt, 0, None) }.unwrap();
        assert_eq!(back, [7, 0, 9]);
    }

    unsafe extern "C" fn extent4(_: MPI_Datatype, e: *mut MPI_Aint, _: *mut c_void) -> c_int {
        *e = 4;
        MPI_SUCCESS
    }

    #[test]
    fn names_register_once() {
        let rep = || UserRep { name: "datarep-unit-test".into(), read: None, write: None, extent: extent4, extra: std::ptr::null_mut() };
        register(rep()).unwrap();
        assert_eq!(register(rep()).unwrap_err().class, MPI_ERR_DUP_DATAREP);
        assert!(matches!(Datarep::lookup("datarep-unit-test"), Ok(Datarep::User(_))));
        assert_eq!(Datarep::lookup("nope").err().unwrap().class, MPI_ERR_UNSUPPORTED_DATAREP);
        assert_eq!(register(UserRep { name: "native".into(), ..rep() }).unwrap_err().class, MPI_ERR_DUP_DATAREP);
    }
}

//! Info objects: ordered (key, value) string pairs.

use super::*;
use crate::handles::{Kind, Table};
use crate::objects::*;
use crate::state::{self, api, Target};
use std::sync::Mutex;

/// Every info object of the process. They live outside the MPI state:
/// since MPI 4.0 a program may create and use them before MPI_Init and
/// after MPI_Finalize.
static INFOS: Mutex<Option<Table<Info>>> = Mutex::new(None);

fn with_infos<T>(f: impl FnOnce(&mut Table<Info>) -> R<T>) -> R<T> {
    let mut g = INFOS.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(|| Table::new(Kind::Info)))
}

fn bad_handle(h: MPI_Info) -> crate::errors::MpiError {
    if h == MPI_INFO_NULL {
        err(MPI_ERR_INFO, "the info object is MPI_INFO_NULL")
    } else {
        err(MPI_ERR_INFO, format!("invalid info handle {h:#x}"))
    }
}

/// A new info object.
pub fn new_info(i: Info) -> MPI_Info {
    with_infos(|t| Ok(t.insert(i))).expect("inserting cannot fail")
}

/// Check that `h` is an info object (MPI_INFO_NULL is not).
pub fn check_info(h: MPI_Info) -> R<()> {
    info_entries(h).map(|_| ())
}

/// The entries of an info object, including MPI_INFO_ENV.
pub fn info_entries(h: MPI_Info) -> R<Vec<(String, String)>> {
    if h == MPI_INFO_ENV {
        return Ok(env_info().entries);
    }
    with_infos(|t| t.get(h).map(|i| i.entries.clone()).ok_or_else(|| bad_handle(h)))
}

/// The entries of an info object; MPI_INFO_NULL means none.
pub fn info_entries_or_empty(h: MPI_Info) -> R<Vec<(String, String)>> {
    if h == MPI_INFO_NULL {
        return Ok(Vec::new());
    }
    info_entries(h)
}

/// The value of `key`, if set.
pub fn info_value(h: MPI_Info, key: &str) -> R<Option<String>> {
    Ok(info_entries(h)?.into_iter().find(|(k, _)| k == key).map(|(_, v)| v))
}

/// Change an info object the program may change (not MPI_INFO_ENV).
fn with_info_mut<T>(h: MPI_Info, f: impl FnOnce(&mut Info) -> R<T>) -> R<T> {
    if h == MPI_INFO_ENV {
        return Err(err(MPI_ERR_INFO, "MPI_INFO_ENV cannot be changed"));
    }
    with_infos(|t| f(t.get_mut(h).ok_or_else(|| bad_handle(h))?))
}

/// Set a key (also the library's own writes, e.g. results passed back in an info).
pub fn info_set(h: MPI_Info, k: &str, v: &str) -> R<()> {
    with_info_mut(h, |i| {
        match i.entries.iter_mut().find(|(ek, _)| ek == k) {
            Some(e) => e.1 = v.to_string(),
            None => i.entries.push((k.to_string(), v.to_string())),
        }
        Ok(())
    })
}

/// MPI_INFO_ENV: how this process was started (MPI 4.1, 11.2.3). Before
/// MPI_Init only what the process itself knows.
fn env_info() -> Info {
    let mut e = Vec::new();
    let args: Vec<String> = std::env::args().collect();
    if let Some(cmd) = args.first() {
        e.push(("command".to_string(), cmd.clone()));
    }
    if args.len() > 1 {
        e.push(("argv".to_string(), args[1..].join(" ")));
    }
    let running = state::with(|st| Ok((st.rt.size, st.thread_level))).ok();
    if let Some((size, _)) = running {
        e.push(("maxprocs".to_string(), size.to_string()));
    }
    e.push(("host".to_string(), crate::sys::hostname()));
    if let Ok(wd) = std::env::current_dir() {
        e.push(("wdir".to_string(), wd.display().to_string()));
    }
    if let Some((_, level)) = running {
        let names = ["MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"];
        e.push(("thread_level".to_string(), names[level as usize].to_string()));
    }
    Info { entries: e }
}

unsafe fn key_arg(key: *const c_char) -> R<String> {
    let k = read_cstr(key)?;
    if k.is_empty() || k.len() > MPI_MAX_INFO_KEY as usize {
        return Err(err(MPI_ERR_INFO_KEY, format!("info key of length {} (must be 1..={})", k.len(), MPI_MAX_INFO_KEY)));
    }
    Ok(k)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_create(info: *mut MPI_Info) -> c_int {
    api("MPI_Info_create", Target::NoComm, || {
        check_ptr(info, "info")?;
        *info = new_info(Info::default());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut MPI_Info) -> c_int {
    api("MPI_Info_create_env", Target::NoComm, || {
        check_ptr(info, "info")?;
        *info = new_info(env_info());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) -> c_int {
    api("MPI_Info_set", Target::NoComm, || {
        let k = key_arg(key)?;
        let v = read_cstr(value)?;
        if v.len() > MPI_MAX_INFO_VAL as usize {
            return Err(err(MPI_ERR_INFO_VALUE, format!("info value of length {} (max {})", v.len(), MPI_MAX_INFO_VAL)));
        }
        info_set(info, &k, &v)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_delete(info: MPI_Info, key: *const c_char) -> c_int {
    api("MPI_Info_delete", Target::NoComm, || {
        let k = key_arg(key)?;
        with_info_mut(info, |i| {
            let pos = i.entries.iter().position(|(ek, _)| *ek == k).ok_or_else(|| err(MPI_ERR_INFO_NOKEY, format!("no key {k:?}")))?;
            i.entries.remove(pos);
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get(info: MPI_Info, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
    api("MPI_Info_get", Target::NoComm, || {
        check_ptr(flag, "flag")?;
        let k = key_arg(key)?;
        if valuelen < 0 {
            return Err(err(MPI_ERR_ARG, format!("invalid valuelen {valuelen}")));
        }
        let v = info_value(info, &k)?;
        match v {
            Some(v) => {
                *flag = 1;
                // valuelen excludes the terminating NUL.
                write_cstr(value, valuelen as usize + 1, &v, std::ptr::null_mut());
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_string(info: MPI_Info, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
    api("MPI_Info_get_string", Target::NoComm, || {
        check_ptr(flag, "flag")?;
        check_ptr(buflen, "buflen")?;
        let k = key_arg(key)?;
        let v = info_value(info, &k)?;
        match v {
            Some(v) => {
                *flag = 1;
                let cap = *buflen;
                if cap > 0 {
                    write_cstr(value, cap as usize, &v, std::ptr::null_mut());
                }
                *buflen = v.len() as c_int + 1;
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_valuelen(info: MPI_Info, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int) -> c_int {
    api("MPI_Info_get_valuelen", Target::NoComm, || {
        check_ptr(flag, "flag")?;
        check_ptr(valuelen, "valuelen")?;
        let k = key_arg(key)?;
        let v = info_value(info, &k)?.map(|v| v.len());
        match v {
            Some(n) => {
                *flag = 1;
                *valuelen = n as c_int;
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) -> c_int {
    api("MPI_Info_get_nkeys", Target::NoComm, || {
        check_ptr(nkeys, "nkeys")?;
        *nkeys = info_entries(info)?.len() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> c_int {
    api("MPI_Info_get_nthkey", Target::NoComm, || {
        check_ptr(key, "key")?;
        let e = info_entries(info)?;
        if n < 0 || n as usize >= e.len() {
            return Err(err(MPI_ERR_ARG, format!("key index {n} out of range (the info has {} keys)", e.len())));
        }
        let k = &e[n as usize].0;
        write_cstr(key, MPI_MAX_INFO_KEY as usize + 1, k, std::ptr::null_mut());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> c_int {
    api("MPI_Info_dup", Target::NoComm, || {
        check_ptr(newinfo, "newinfo")?;
        *newinfo = new_info(Info { entries: info_entries(info)? });
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_free(info: *mut MPI_Info) -> c_int {
    api("MPI_Info_free", Target::NoComm, || {
        check_ptr(info, "info")?;
        let h = *info;
        if h == MPI_INFO_ENV {
            return Err(err(MPI_ERR_INFO, "MPI_INFO_ENV cannot be freed"));
        }
        with_infos(|t| t.remove(h).map(|_| ()).ok_or_else(|| bad_handle(h)))?;
        *info = MPI_INFO_NULL;
        Ok(())
    })
}

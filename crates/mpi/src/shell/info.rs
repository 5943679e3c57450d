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
        return Ok(env_info(true).entries);
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

/// Set each of `given`'s keys in `entries` (an object's hints, kept in
/// the order they were first set).
pub fn merge_entries(entries: &mut Vec<(String, String)>, given: Vec<(String, String)>) {
    for (k, v) in given {
        match entries.iter_mut().find(|(ek, _)| *ek == k) {
            Some(e) => e.1 = v,
            None => entries.push((k, v)),
        }
    }
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
/// MPI_Init only what the process itself knows; `from_runtime` adds what
/// the running MPI knows (maxprocs, thread_level).
fn env_info(from_runtime: bool) -> Info {
    let mut e = Vec::new();
    let args: Vec<String> = std::env::args().collect();
    if let Some(cmd) = args.first() {
        e.push(("command".to_string(), cmd.clone()));
    }
    if args.len() > 1 {
        e.push(("argv".to_string(), args[1..].join(" ")));
    }
    let running = if from_runtime { state::with(|st| Ok((st.rt.size, st.thread_level))).ok() } else { None };
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

// Most MPI_Info_X are generated from abi/functions.txt; these are their
// implementations.

fn key_arg(k: &str) -> R<&str> {
    if k.is_empty() || k.len() > MPI_MAX_INFO_KEY as usize {
        return Err(err(MPI_ERR_INFO_KEY, format!("info key of length {} (must be 1..={})", k.len(), MPI_MAX_INFO_KEY)));
    }
    Ok(k)
}

pub(crate) fn info_create() -> R<MPI_Info> {
    Ok(new_info(Info::default()))
}

pub(crate) fn info_create_env(_argc: c_int, _argv: *mut *mut c_char) -> R<MPI_Info> {
    // The same keys and values before MPI_Init, while it runs and after
    // MPI_Finalize (as MPICH gives): what the process itself knows.
    Ok(new_info(env_info(false)))
}

/// MPI_Info_set: the program's own write, checked.
pub(crate) fn info_put(info: MPI_Info, key: &str, value: &str) -> R<()> {
    let k = key_arg(key)?;
    if value.len() > MPI_MAX_INFO_VAL as usize {
        return Err(err(MPI_ERR_INFO_VALUE, format!("info value of length {} (max {})", value.len(), MPI_MAX_INFO_VAL)));
    }
    info_set(info, k, value)
}

pub(crate) fn info_delete(info: MPI_Info, key: &str) -> R<()> {
    let k = key_arg(key)?;
    with_info_mut(info, |i| {
        let pos = i.entries.iter().position(|(ek, _)| ek == k).ok_or_else(|| err(MPI_ERR_INFO_NOKEY, format!("no key {k:?}")))?;
        i.entries.remove(pos);
        Ok(())
    })
}

/// MPI_Info_get: `valuelen` counts the bytes before the terminating NUL.
pub(crate) fn info_get(info: MPI_Info, key: &str, valuelen: c_int) -> R<Option<String>> {
    let k = key_arg(key)?;
    if valuelen < 0 {
        return Err(err(MPI_ERR_ARG, format!("invalid valuelen {valuelen}")));
    }
    info_value(info, k)
}

pub(crate) fn info_valuelen(info: MPI_Info, key: &str) -> R<Option<c_int>> {
    Ok(info_value(info, key_arg(key)?)?.map(|v| v.len() as c_int))
}

pub(crate) fn info_nkeys(info: MPI_Info) -> R<c_int> {
    Ok(info_entries(info)?.len() as c_int)
}

pub(crate) fn info_nthkey(info: MPI_Info, n: c_int) -> R<String> {
    let mut e = info_entries(info)?;
    if n < 0 || n as usize >= e.len() {
        return Err(err(MPI_ERR_ARG, format!("key index {n} out of range (the info has {} keys)", e.len())));
    }
    Ok(e.swap_remove(n as usize).0)
}

pub(crate) fn info_dup(info: MPI_Info) -> R<MPI_Info> {
    Ok(new_info(Info { entries: info_entries(info)? }))
}

pub(crate) fn info_free(h: MPI_Info) -> R<MPI_Info> {
    if h == MPI_INFO_ENV {
        return Err(err(MPI_ERR_INFO, "MPI_INFO_ENV cannot be freed"));
    }
    with_infos(|t| t.remove(h).map(|_| ()).ok_or_else(|| bad_handle(h)))?;
    Ok(MPI_INFO_NULL)
}

/// Written out: `buflen` is both the room given and the length needed.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_string(info: MPI_Info, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
    api("MPI_Info_get_string", Target::NoComm, || {
        check_ptr(flag, "flag")?;
        check_ptr(buflen, "buflen")?;
        let k = in_str(key, "key")?;
        let v = info_value(info, key_arg(&k)?)?;
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

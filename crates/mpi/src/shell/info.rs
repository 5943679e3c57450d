//! Info objects: ordered (key, value) string pairs.

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};

impl State {
    pub fn info(&self, h: MPI_Info) -> R<&Info> {
        if h == MPI_INFO_NULL {
            return Err(err(MPI_ERR_INFO, "the info object is MPI_INFO_NULL"));
        }
        self.infos.get(h).ok_or_else(|| err(MPI_ERR_INFO, format!("invalid info handle {h:#x}")))
    }

    /// The entries of an info object; MPI_INFO_NULL means none.
    pub fn info_entries_or_empty(&self, h: MPI_Info) -> R<Vec<(String, String)>> {
        if h == MPI_INFO_NULL {
            return Ok(Vec::new());
        }
        Ok(self.info_view(h)?.entries)
    }

    /// Set a key (the library's own writes, e.g. results passed back in an info).
    pub fn info_set(&mut self, h: MPI_Info, k: &str, v: &str) -> R<()> {
        let i = self.info_mut(h)?;
        match i.entries.iter_mut().find(|(ek, _)| ek == k) {
            Some(e) => e.1 = v.to_string(),
            None => i.entries.push((k.to_string(), v.to_string())),
        }
        Ok(())
    }

    fn info_mut(&mut self, h: MPI_Info) -> R<&mut Info> {
        if h == MPI_INFO_ENV {
            return Err(err(MPI_ERR_INFO, "MPI_INFO_ENV cannot be changed"));
        }
        if h == MPI_INFO_NULL {
            return Err(err(MPI_ERR_INFO, "the info object is MPI_INFO_NULL"));
        }
        self.infos.get_mut(h).ok_or_else(|| err(MPI_ERR_INFO, format!("invalid info handle {h:#x}")))
    }

    /// The info object behind a handle, including MPI_INFO_ENV.
    fn info_view(&self, h: MPI_Info) -> R<Info> {
        if h == MPI_INFO_ENV {
            return Ok(env_info(self));
        }
        self.info(h).cloned()
    }
}

/// MPI_INFO_ENV: how this process was started (MPI 4.1, 11.2.3).
fn env_info(st: &State) -> Info {
    let mut e = Vec::new();
    let args: Vec<String> = std::env::args().collect();
    if let Some(cmd) = args.first() {
        e.push(("command".to_string(), cmd.clone()));
    }
    if args.len() > 1 {
        e.push(("argv".to_string(), args[1..].join(" ")));
    }
    e.push(("maxprocs".to_string(), st.rt.size.to_string()));
    e.push(("host".to_string(), crate::sys::hostname()));
    if let Ok(wd) = std::env::current_dir() {
        e.push(("wdir".to_string(), wd.display().to_string()));
    }
    e.push(("thread_level".to_string(), ["MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"][st.thread_level as usize].to_string()));
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
        *info = state::with(|st| Ok(st.infos.insert(Info::default())))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut MPI_Info) -> c_int {
    api("MPI_Info_create_env", Target::NoComm, || {
        check_ptr(info, "info")?;
        *info = state::with(|st| {
            let e = env_info(st);
            Ok(st.infos.insert(e))
        })?;
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
        state::with(|st| {
            let i = st.info_mut(info)?;
            match i.entries.iter_mut().find(|(ek, _)| *ek == k) {
                Some(e) => e.1 = v,
                None => i.entries.push((k, v)),
            }
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_delete(info: MPI_Info, key: *const c_char) -> c_int {
    api("MPI_Info_delete", Target::NoComm, || {
        let k = key_arg(key)?;
        state::with(|st| {
            let i = st.info_mut(info)?;
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
        let v = state::with(|st| Ok(st.info_view(info)?.entries.iter().find(|(ek, _)| *ek == k).map(|(_, v)| v.clone())))?;
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
        let v = state::with(|st| Ok(st.info_view(info)?.entries.iter().find(|(ek, _)| *ek == k).map(|(_, v)| v.clone())))?;
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
        let v = state::with(|st| Ok(st.info_view(info)?.entries.iter().find(|(ek, _)| *ek == k).map(|(_, v)| v.len())))?;
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
        *nkeys = state::with(|st| Ok(st.info_view(info)?.entries.len() as c_int))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> c_int {
    api("MPI_Info_get_nthkey", Target::NoComm, || {
        check_ptr(key, "key")?;
        let k = state::with(|st| {
            let i = st.info_view(info)?;
            if n < 0 || n as usize >= i.entries.len() {
                return Err(err(MPI_ERR_ARG, format!("key index {n} out of range (the info has {} keys)", i.entries.len())));
            }
            Ok(i.entries[n as usize].0.clone())
        })?;
        write_cstr(key, MPI_MAX_INFO_KEY as usize + 1, &k, std::ptr::null_mut());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> c_int {
    api("MPI_Info_dup", Target::NoComm, || {
        check_ptr(newinfo, "newinfo")?;
        *newinfo = state::with(|st| {
            let i = st.info_view(info)?;
            Ok(st.infos.insert(i))
        })?;
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
        state::with(|st| st.infos.remove(h).map(|_| ()).ok_or_else(|| err(MPI_ERR_INFO, format!("invalid info handle {h:#x}"))))?;
        *info = MPI_INFO_NULL;
        Ok(())
    })
}

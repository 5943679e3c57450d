//! The C functions of the tool information interface (MPI_T): argument
//! checks and handle lookups over crate::mpit. They return MPI_T error
//! codes and never call error handlers (MPI 4.1, 15.3.10).

use crate::ffi::*;
use crate::mpit::categories::{self, CATEGORIES};
use crate::mpit::pvars::{self, PvarHandle, PVARS};
use crate::mpit::*;
use gridmpi_config::SETTINGS;

/// Run an MPI_T function body: its error, or an internal failure, as the
/// MPI_T code it returns.
fn t_api(f: impl FnOnce() -> TR<()>) -> c_int {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(TError(code))) => code,
        Err(_) => MPI_T_ERR_INVALID,
    }
}

/// An output the standard requires.
fn need<T>(p: *mut T) -> TR<()> {
    if p.is_null() {
        Err(INVALID)
    } else {
        Ok(())
    }
}

fn index(i: c_int, len: usize) -> TR<usize> {
    usize::try_from(i).ok().filter(|&i| i < len).ok_or(INVALID_INDEX)
}

unsafe fn name_arg(name: *const c_char) -> TR<String> {
    if name.is_null() {
        return Err(INVALID);
    }
    Ok(std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned())
}

// ---- set-up ----------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_init_thread(_required: c_int, provided: *mut c_int) -> c_int {
    t_api(|| {
        need(provided)?;
        *provided = init();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_finalize() -> c_int {
    t_api(finalize)
}

// ---- enumerations ----------------------------------------------------------------

fn enum_of(h: MPI_T_enum) -> TR<categories::Enum> {
    let i = slot_of(KIND_ENUM, h).ok_or(INVALID_HANDLE)? as usize;
    categories::enums().into_iter().nth(i).ok_or(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_enum_get_info(enumtype: MPI_T_enum, num: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            let e = enum_of(enumtype)?;
            put(num, e.items.len() as c_int);
            put_string(&e.name, name, name_len);
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_enum_get_item(enumtype: MPI_T_enum, indx: c_int, value: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            let e = enum_of(enumtype)?;
            let (n, v) = &e.items[index(indx, e.items.len())?];
            put(value, *v);
            put_string(n, name, name_len);
            Ok(())
        })
    })
}

// ---- control variables -------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_get_num(num_cvar: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            need(num_cvar)?;
            *num_cvar = SETTINGS.len() as c_int;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_get_info(
    cvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut MPI_T_enum,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> c_int {
    t_api(|| {
        with(|_| {
            let i = index(cvar_index, SETTINGS.len())?;
            let s = &SETTINGS[i];
            put_string(s.name, name, name_len);
            put(verbosity, cvars::verbosity(s));
            put(datatype, cvars::cvar_type(s).datatype());
            put(enumtype, categories::enum_of_cvar(i).map_or(std::ptr::null_mut(), |e| token(KIND_ENUM, e as u32)));
            put_string(&cvars::description(s), desc, desc_len);
            put(bind, MPI_T_BIND_NO_OBJECT);
            put(scope, cvars::scope(s));
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            need(cvar_index)?;
            *cvar_index = cvars::index_of(&name_arg(name)?).ok_or(INVALID_NAME)? as c_int;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_handle_alloc(cvar_index: c_int, _obj_handle: *mut c_void, handle: *mut MPI_T_cvar_handle, count: *mut c_int) -> c_int {
    t_api(|| {
        with(|t| {
            need(handle)?;
            need(count)?;
            let i = index(cvar_index, SETTINGS.len())?;
            *count = cvars::cvar_type(&SETTINGS[i]).count();
            *handle = token(KIND_CVAR, t.cvar_handles.insert(cvars::CvarHandle { index: i }));
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_handle_free(handle: *mut MPI_T_cvar_handle) -> c_int {
    t_api(|| {
        with(|t| {
            need(handle)?;
            let slot = slot_of(KIND_CVAR, *handle).ok_or(INVALID_HANDLE)?;
            t.cvar_handles.remove(slot).ok_or(INVALID_HANDLE)?;
            *handle = std::ptr::null_mut();
            Ok(())
        })
    })
}

fn cvar_of(t: &Tool, h: MPI_T_cvar_handle) -> TR<&'static gridmpi_config::Setting> {
    let slot = slot_of(KIND_CVAR, h).ok_or(INVALID_HANDLE)?;
    Ok(&SETTINGS[t.cvar_handles.get(slot).ok_or(INVALID_HANDLE)?.index])
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_read(handle: MPI_T_cvar_handle, buf: *mut c_void) -> c_int {
    t_api(|| {
        let s = with(|t| cvar_of(t, handle))?;
        need(buf)?;
        cvars::read(s, buf)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_cvar_write(handle: MPI_T_cvar_handle, buf: *const c_void) -> c_int {
    t_api(|| {
        let s = with(|t| cvar_of(t, handle))?;
        need(buf as *mut c_void)?;
        cvars::write(s, buf)
    })
}

// ---- performance variables ----------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_get_num(num_pvar: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            need(num_pvar)?;
            *num_pvar = PVARS.len() as c_int;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_get_info(
    pvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    var_class: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut MPI_T_enum,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    readonly: *mut c_int,
    continuous: *mut c_int,
    atomic: *mut c_int,
) -> c_int {
    t_api(|| {
        with(|_| {
            let p = &PVARS[index(pvar_index, PVARS.len())?];
            put_string(p.name, name, name_len);
            put(verbosity, p.verbosity);
            put(var_class, p.class);
            put(datatype, p.datatype());
            put(enumtype, p.enum_index().map_or(std::ptr::null_mut(), |e| token(KIND_ENUM, e as u32)));
            put_string(p.desc, desc, desc_len);
            put(bind, MPI_T_BIND_NO_OBJECT);
            put(readonly, p.readonly as c_int);
            put(continuous, p.continuous as c_int);
            put(atomic, p.atomic() as c_int);
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_get_index(name: *const c_char, var_class: c_int, pvar_index: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            need(pvar_index)?;
            *pvar_index = pvars::index_of(&name_arg(name)?, var_class).ok_or(INVALID_NAME)? as c_int;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_session_create(session: *mut MPI_T_pvar_session) -> c_int {
    t_api(|| {
        with(|t| {
            need(session)?;
            *session = token(KIND_PVAR_SESSION, t.pvar_sessions.insert(()));
            Ok(())
        })
    })
}

fn session_of(t: &Tool, s: MPI_T_pvar_session) -> TR<u32> {
    let slot = slot_of(KIND_PVAR_SESSION, s).ok_or(INVALID_SESSION)?;
    t.pvar_sessions.get(slot).ok_or(INVALID_SESSION)?;
    Ok(slot)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_session_free(session: *mut MPI_T_pvar_session) -> c_int {
    t_api(|| {
        with(|t| {
            need(session)?;
            let s = session_of(t, *session)?;
            let mine: Vec<u32> = t.pvar_handles.iter().filter(|(_, (owner, _))| *owner == s).map(|(h, _)| h).collect();
            for h in mine {
                t.pvar_handles.remove(h);
            }
            t.pvar_sessions.remove(s);
            *session = std::ptr::null_mut();
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_handle_alloc(session: MPI_T_pvar_session, pvar_index: c_int, _obj_handle: *mut c_void, handle: *mut MPI_T_pvar_handle, count: *mut c_int) -> c_int {
    t_api(|| {
        with(|t| {
            let s = session_of(t, session)?;
            need(handle)?;
            need(count)?;
            let h = PvarHandle::alloc(index(pvar_index, PVARS.len())?)?;
            *count = h.count as c_int;
            *handle = token(KIND_PVAR_HANDLE, t.pvar_handles.insert((s, h)));
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_handle_free(session: MPI_T_pvar_session, handle: *mut MPI_T_pvar_handle) -> c_int {
    t_api(|| {
        with(|t| {
            let s = session_of(t, session)?;
            need(handle)?;
            let slot = handle_slot(t, s, *handle)?;
            t.pvar_handles.remove(slot);
            *handle = std::ptr::null_mut();
            Ok(())
        })
    })
}

fn is_all_handles(h: MPI_T_pvar_handle) -> bool {
    std::ptr::eq(h as *const c_int, crate::exported::MPI_T_PVAR_ALL_HANDLES.0)
}

/// The slot of handle `h` of session `s`.
fn handle_slot(t: &Tool, s: u32, h: MPI_T_pvar_handle) -> TR<u32> {
    let slot = slot_of(KIND_PVAR_HANDLE, h).ok_or(INVALID_HANDLE)?;
    match t.pvar_handles.get(slot) {
        Some((owner, _)) if *owner == s => Ok(slot),
        _ => Err(INVALID_HANDLE),
    }
}

/// Apply `f` to handle `h` of `session`, or, for MPI_T_PVAR_ALL_HANDLES,
/// to every handle of the session `applies` accepts.
fn on_handles(session: MPI_T_pvar_session, h: MPI_T_pvar_handle, applies: fn(&PvarHandle) -> bool, f: fn(&mut PvarHandle) -> TR<()>) -> c_int {
    t_api(|| {
        with(|t| {
            let s = session_of(t, session)?;
            if is_all_handles(h) {
                let mine: Vec<u32> = t.pvar_handles.iter().filter(|(_, (owner, x))| *owner == s && applies(x)).map(|(k, _)| k).collect();
                for k in mine {
                    f(&mut t.pvar_handles.get_mut(k).expect("listed above").1)?;
                }
                return Ok(());
            }
            let slot = handle_slot(t, s, h)?;
            f(&mut t.pvar_handles.get_mut(slot).expect("checked").1)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_start(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> c_int {
    on_handles(session, handle, |h| !h.is_continuous(), PvarHandle::start)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_stop(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> c_int {
    on_handles(session, handle, |h| !h.is_continuous(), PvarHandle::stop)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_reset(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> c_int {
    on_handles(session, handle, |h| !h.is_readonly(), PvarHandle::reset)
}

/// One handle (not MPI_T_PVAR_ALL_HANDLES) of `session`.
fn one_handle<T>(session: MPI_T_pvar_session, h: MPI_T_pvar_handle, f: impl FnOnce(&mut PvarHandle) -> TR<T>) -> TR<T> {
    with(|t| {
        let s = session_of(t, session)?;
        let slot = handle_slot(t, s, h)?;
        f(&mut t.pvar_handles.get_mut(slot).expect("checked").1)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_read(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, buf: *mut c_void) -> c_int {
    t_api(|| {
        need(buf)?;
        one_handle(session, handle, |h| {
            let v = h.values()?;
            pvars::store(&PVARS[h.index], &v, buf);
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_readreset(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, buf: *mut c_void) -> c_int {
    t_api(|| {
        need(buf)?;
        one_handle(session, handle, |h| {
            let p = &PVARS[h.index];
            if p.readonly {
                return Err(TError(MPI_T_ERR_PVAR_NO_WRITE));
            }
            if !p.atomic() {
                return Err(TError(MPI_T_ERR_PVAR_NO_ATOMIC));
            }
            // Both under MPI_T's lock: no other call sees the handle between.
            let v = h.values()?;
            h.reset()?;
            pvars::store(p, &v, buf);
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_pvar_write(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, buf: *const c_void) -> c_int {
    t_api(|| {
        need(buf as *mut c_void)?;
        one_handle(session, handle, |h| {
            let v = pvars::load(&PVARS[h.index], h.count, buf);
            h.write(&v)
        })
    })
}

// ---- categories ----------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_num(num_cat: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            need(num_cat)?;
            *num_cat = CATEGORIES.len() as c_int;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_info(
    cat_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    num_cvars: *mut c_int,
    num_pvars: *mut c_int,
    num_categories: *mut c_int,
) -> c_int {
    t_api(|| {
        with(|_| {
            let i = index(cat_index, CATEGORIES.len())?;
            put_string(CATEGORIES[i].name, name, name_len);
            put_string(CATEGORIES[i].desc, desc, desc_len);
            put(num_cvars, categories::cvars_of(i).len() as c_int);
            put(num_pvars, categories::pvars_of(i).len() as c_int);
            put(num_categories, categories::subcategories_of(i).len() as c_int);
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            index(cat_index, CATEGORIES.len())?;
            need(num_events)?;
            *num_events = 0;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            need(cat_index)?;
            *cat_index = categories::index_of(&name_arg(name)?).ok_or(INVALID_NAME)? as c_int;
            Ok(())
        })
    })
}

/// Write the first `len` of `members` of category `cat_index` to `indices`.
unsafe fn category_members(cat_index: c_int, len: c_int, indices: *mut c_int, members: fn(usize) -> Vec<i32>) -> c_int {
    t_api(|| {
        with(|_| {
            let v = members(index(cat_index, CATEGORIES.len())?);
            let n = (len.max(0) as usize).min(v.len());
            if n > 0 {
                need(indices)?;
                std::ptr::copy_nonoverlapping(v.as_ptr(), indices, n);
            }
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    category_members(cat_index, len, indices, categories::cvars_of)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    category_members(cat_index, len, indices, categories::pvars_of)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    category_members(cat_index, len, indices, categories::subcategories_of)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    category_members(cat_index, len, indices, |_| Vec::new())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_category_changed(update_number: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            need(update_number)?;
            // The categories never change while the process lives.
            *update_number = 0;
            Ok(())
        })
    })
}

// ---- event sources: one, the process's monotonic clock ---------------------------------

const SOURCE_NAME: &str = "gridmpi_clock";
const SOURCE_DESC: &str = "the process's monotonic clock, in nanoseconds since MPI_T was first initialized";

fn clock_ns() -> MPI_Count {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    start.elapsed().as_nanos().min(i64::MAX as u128) as MPI_Count
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_source_get_num(num_sources: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            need(num_sources)?;
            clock_ns();
            *num_sources = 1;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_source_get_info(
    source_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    ordering: *mut MPI_T_source_order,
    ticks_per_second: *mut MPI_Count,
    max_ticks: *mut MPI_Count,
    info: *mut MPI_Info,
) -> c_int {
    t_api(|| {
        with(|_| {
            index(source_index, 1)?;
            put_string(SOURCE_NAME, name, name_len);
            put_string(SOURCE_DESC, desc, desc_len);
            put(ordering, MPI_T_SOURCE_ORDERED);
            put(ticks_per_second, 1_000_000_000);
            put(max_ticks, i64::MAX);
            put(info, super::info::new_info(crate::objects::Info::default()));
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_source_get_timestamp(source_index: c_int, timestamp: *mut MPI_Count) -> c_int {
    t_api(|| {
        with(|_| {
            index(source_index, 1)?;
            need(timestamp)?;
            *timestamp = clock_ns();
            Ok(())
        })
    })
}

// ---- events: GridMPI has no event types ------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_get_num(num_events: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            need(num_events)?;
            *num_events = 0;
            Ok(())
        })
    })
}

/// Every call naming an event type, a registration or an instance: with no
/// event types, there are none to name.
fn no_such(e: TError) -> c_int {
    t_api(|| with(|_| Err(e)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_get_info(
    _event_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _verbosity: *mut c_int,
    _array_of_datatypes: *mut MPI_Datatype,
    _array_of_displacements: *mut MPI_Aint,
    _num_elements: *mut c_int,
    _enumtype: *mut MPI_T_enum,
    _info: *mut MPI_Info,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _bind: *mut c_int,
) -> c_int {
    no_such(INVALID_INDEX)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_get_index(name: *const c_char, event_index: *mut c_int) -> c_int {
    t_api(|| {
        with(|_| {
            need(event_index)?;
            name_arg(name)?;
            Err(INVALID_NAME)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_handle_alloc(_event_index: c_int, _obj_handle: *mut c_void, _info: MPI_Info, _event_registration: *mut MPI_T_event_registration) -> c_int {
    no_such(INVALID_INDEX)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_handle_set_info(_event_registration: MPI_T_event_registration, _info: MPI_Info) -> c_int {
    no_such(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_handle_get_info(_event_registration: MPI_T_event_registration, _info_used: *mut MPI_Info) -> c_int {
    no_such(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_register_callback(
    _event_registration: MPI_T_event_registration,
    _cb_safety: MPI_T_cb_safety,
    _info: MPI_Info,
    _user_data: *mut c_void,
    _event_cb_function: Option<MPI_T_event_cb_function>,
) -> c_int {
    no_such(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_callback_set_info(_event_registration: MPI_T_event_registration, _cb_safety: MPI_T_cb_safety, _info: MPI_Info) -> c_int {
    no_such(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_callback_get_info(_event_registration: MPI_T_event_registration, _cb_safety: MPI_T_cb_safety, _info_used: *mut MPI_Info) -> c_int {
    no_such(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_handle_free(_event_registration: MPI_T_event_registration, _user_data: *mut c_void, _free_cb_function: Option<MPI_T_event_free_cb_function>) -> c_int {
    no_such(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_set_dropped_handler(_event_registration: MPI_T_event_registration, _dropped_cb_function: Option<MPI_T_event_dropped_cb_function>) -> c_int {
    no_such(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_read(_event_instance: MPI_T_event_instance, _element_index: c_int, _buffer: *mut c_void) -> c_int {
    no_such(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_copy(_event_instance: MPI_T_event_instance, _buffer: *mut c_void) -> c_int {
    no_such(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_get_timestamp(_event_instance: MPI_T_event_instance, _event_timestamp: *mut MPI_Count) -> c_int {
    no_such(INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_T_event_get_source(_event_instance: MPI_T_event_instance, _source_index: *mut c_int) -> c_int {
    no_such(INVALID_HANDLE)
}

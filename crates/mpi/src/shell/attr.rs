//! Attributes and keyvals on communicators and datatypes, with the user's
//! copy and delete callbacks (always called without the library lock, so
//! they may call MPI themselves).

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};

/// An attribute to copy when its object is duplicated.
pub struct AttrCopy {
    k: c_int,
    copy: MPI_Comm_copy_attr_function,
    extra: *mut c_void,
    /// The value, for a copy by MPI_*_DUP_FN (which keeps its language).
    value: AttrValue,
    /// The value in the view of the keyval's language (the callback's
    /// input: a C view of a Fortran value points into the original).
    input: *mut c_void,
    lang: Lang,
}

pub type AttrCopies = Vec<AttrCopy>;

const PREDEFINED_COMM_KEYS: [c_int; 7] = [MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_LASTUSEDCODE, MPI_APPNUM];
const PREDEFINED_WIN_KEYS: [c_int; 5] = [MPI_WIN_BASE, MPI_WIN_SIZE, MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR, MPI_WIN_MODEL];

/// Whether `k` is a predefined attribute key (of any object).
fn predefined_key(k: c_int) -> bool {
    PREDEFINED_COMM_KEYS.contains(&k) || PREDEFINED_WIN_KEYS.contains(&k)
}

impl State {
    fn keyval(&self, k: c_int, kind: KeyvalKind) -> R<&Keyval> {
        match self.keyvals.get(k) {
            Some(kv) if kv.kind == kind && !kv.freed => Ok(kv),
            Some(kv) if kv.kind != kind => Err(err(MPI_ERR_KEYVAL, format!("keyval {k:#x} belongs to another kind of object"))),
            _ => Err(err(MPI_ERR_KEYVAL, format!("invalid keyval {k:#x}"))),
        }
    }

    /// A keyval that attributes may still use: also one the program freed
    /// while they do (its handle's copies keep reaching them, as the
    /// standard's "the actual free does not transpire until" all uses end
    /// implies, and MPICH allows).
    fn keyval_of_attrs(&self, k: c_int, kind: KeyvalKind) -> R<&Keyval> {
        match self.keyvals.get(k) {
            Some(kv) if kv.kind == kind => Ok(kv),
            _ => self.keyval(k, kind),
        }
    }

    fn type_attrs_mut(&mut self, h: MPI_Datatype) -> R<&mut Attrs> {
        if self.predef.get(h).is_some() {
            return Ok(self.predef.attrs.entry(h).or_default());
        }
        self.types.get_mut(h).map(|t| &mut t.attrs).ok_or_else(|| err(MPI_ERR_TYPE, format!("invalid datatype handle {h:#x}")))
    }

    /// The attributes of object `obj` of `kind`.
    fn attrs_mut(&mut self, kind: KeyvalKind, obj: c_int) -> R<&mut Attrs> {
        match kind {
            KeyvalKind::Comm => Ok(&mut self.comm_mut(obj)?.attrs),
            KeyvalKind::Type => self.type_attrs_mut(obj),
            KeyvalKind::Win => Ok(&mut self.win_mut(obj)?.attrs),
        }
    }

    /// What deleting an attribute of keyval `k` calls: (callback, extra
    /// state, its language); None if the keyval is gone.
    fn delete_of(&self, k: c_int) -> Option<(Option<MPI_Comm_delete_attr_function>, *mut c_void, Lang)> {
        self.keyvals.get(k).map(|kv| (kv.delete, kv.extra, kv.lang))
    }

    fn keyval_use(&mut self, k: c_int, delta: i32) {
        if let Some(kv) = self.keyvals.get_mut(k) {
            kv.uses = (kv.uses as i32 + delta).max(0) as u32;
            if kv.freed && kv.uses == 0 {
                self.keyvals.remove(k);
            }
        }
    }
}

/// Attributes of `comm` that have copy functions.
pub fn comm_attrs_of(st: &State, comm: MPI_Comm) -> AttrCopies {
    let Ok(c) = st.comm(comm) else { return Vec::new() };
    copies_of(st, &c.attrs)
}

fn copies_of(st: &State, attrs: &Attrs) -> AttrCopies {
    attrs
        .iter()
        .filter_map(|(&k, v)| {
            let kv = st.keyvals.get(k)?;
            Some(AttrCopy { k, copy: kv.copy?, extra: kv.extra, value: v.clone(), input: v.view(kv.lang), lang: kv.lang })
        })
        .collect()
}

pub fn type_attrs_of(st: &State, h: MPI_Datatype) -> AttrCopies {
    let attrs = if st.predef.get(h).is_some() { st.predef.attrs.get(&h) } else { st.types.get(h).map(|t| &t.attrs) };
    let Some(attrs) = attrs else { return Vec::new() };
    copies_of(st, attrs)
}

fn run_copies(old: c_int, copies: AttrCopies) -> R<Vec<(c_int, AttrValue)>> {
    let mut out = Vec::new();
    for a in copies {
        // MPI_*_DUP_FN copies the value as it is, in its own language.
        if a.copy as usize == MPIR_Dup_fn as *const () as usize {
            out.push((a.k, a.value));
            continue;
        }
        let mut newv: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: the user's copy callback, called as MPI specifies.
        let rc = unsafe { (a.copy)(old, a.k, a.extra, a.input, &mut newv as *mut *mut c_void as *mut c_void, &mut flag) };
        if rc != MPI_SUCCESS {
            return Err(crate::errors::MpiError { class: MPI_ERR_OTHER, msg: format!("attribute copy callback for keyval {:#x} failed", a.k), code: Some(rc) });
        }
        if flag != 0 {
            out.push((a.k, AttrValue::new(newv, a.lang)));
        }
    }
    Ok(out)
}

pub fn copy_comm_attrs(old: MPI_Comm, new: MPI_Comm, copies: AttrCopies) -> R<()> {
    let set = run_copies(old, copies)?;
    state::with(|st| {
        for (k, v) in set {
            st.comm_mut(new)?.attrs.insert(k, v);
            st.keyval_use(k, 1);
        }
        Ok(())
    })
}

pub fn copy_type_attrs(old: MPI_Datatype, new: MPI_Datatype, copies: AttrCopies) -> R<()> {
    let set = run_copies(old, copies)?;
    state::with(|st| {
        for (k, v) in set {
            st.type_attrs_mut(new)?.insert(k, v);
            st.keyval_use(k, 1);
        }
        Ok(())
    })
}

/// Runs the delete callback (given the value in its language's view), then
/// drops the value.
fn call_delete(obj: c_int, k: c_int, v: AttrValue, kv: Option<(Option<MPI_Comm_delete_attr_function>, *mut c_void, Lang)>) -> R<()> {
    if let Some((Some(f), extra, lang)) = kv {
        // SAFETY: the user's delete callback.
        let rc = unsafe { f(obj, k, v.view(lang), extra) };
        if rc != MPI_SUCCESS {
            return Err(crate::errors::MpiError { class: MPI_ERR_OTHER, msg: format!("attribute delete callback for keyval {k:#x} failed"), code: Some(rc) });
        }
    }
    Ok(())
}

/// Delete every attribute of `comm`, last set first.
pub fn delete_all_comm_attrs(comm: MPI_Comm) -> R<()> {
    loop {
        let next = state::with(|st| {
            let Some((k, v)) = st.comm_mut(comm)?.attrs.pop() else { return Ok(None) };
            Ok(Some((k, v, st.delete_of(k))))
        })?;
        let Some((k, v, kv)) = next else { return Ok(()) };
        call_delete(comm, k, v, kv)?;
        state::with(|st| {
            st.keyval_use(k, -1);
            Ok(())
        })?;
    }
}

pub fn delete_all_type_attrs(h: MPI_Datatype) -> R<()> {
    loop {
        let next = state::with(|st| {
            let Some((k, v)) = st.type_attrs_mut(h)?.pop() else { return Ok(None) };
            Ok(Some((k, v, st.delete_of(k))))
        })?;
        let Some((k, v, kv)) = next else { return Ok(()) };
        call_delete(h, k, v, kv)?;
        state::with(|st| {
            st.keyval_use(k, -1);
            Ok(())
        })?;
    }
}

pub(crate) fn create_keyval(kind: KeyvalKind, copy: Option<MPI_Comm_copy_attr_function>, delete: Option<MPI_Comm_delete_attr_function>, keyval: *mut c_int, extra: *mut c_void) -> R<()> {
    create_keyval_in(Lang::C, kind, copy, delete, keyval, extra)
}

fn create_keyval_in(lang: Lang, kind: KeyvalKind, copy: Option<MPI_Comm_copy_attr_function>, delete: Option<MPI_Comm_delete_attr_function>, keyval: *mut c_int, extra: *mut c_void) -> R<()> {
    check_ptr(keyval, "keyval")?;
    let h = state::with(|st| Ok(st.keyvals.insert(Keyval { kind, copy, delete, extra, freed: false, uses: 0, lang })))?;
    // SAFETY: checked non-null.
    unsafe { *keyval = h };
    Ok(())
}

/// Run the delete callback of keyval `k` for the value `v` just removed
/// from object `obj`, and drop the attribute's use of the keyval.
pub(crate) fn run_delete(obj: c_int, k: c_int, v: AttrValue) -> R<()> {
    let kv = state::with(|st| Ok(st.delete_of(k)))?;
    call_delete(obj, k, v, kv)?;
    state::with(|st| {
        st.keyval_use(k, -1);
        Ok(())
    })
}

pub(crate) fn free_keyval(kind: KeyvalKind, keyval: *mut c_int) -> R<()> {
    check_ptr(keyval, "keyval")?;
    // SAFETY: checked non-null.
    let k = unsafe { *keyval };
    if predefined_key(k) {
        return Err(err(MPI_ERR_KEYVAL, "predefined keyvals cannot be freed"));
    }
    state::with(|st| {
        st.keyval(k, kind)?;
        let kv = st.keyvals.get_mut(k).unwrap();
        kv.freed = true;
        if kv.uses == 0 {
            st.keyvals.remove(k);
        }
        Ok(())
    })?;
    unsafe { *keyval = MPI_KEYVAL_INVALID };
    Ok(())
}

/// Set an attribute, deleting the previous value first.
pub(crate) fn set_attr(kind: KeyvalKind, obj: c_int, k: c_int, v: *mut c_void) -> R<()> {
    set_attr_in(Lang::C, kind, obj, k, v)
}

fn set_attr_in(lang: Lang, kind: KeyvalKind, obj: c_int, k: c_int, v: *mut c_void) -> R<()> {
    if predefined_key(k) {
        return Err(err(MPI_ERR_KEYVAL, "predefined attributes cannot be set"));
    }
    // The old value's delete callback runs first (it may fail: then the
    // old value stays).
    let old = state::with(|st| {
        st.keyval(k, kind)?;
        let old = st.attrs_mut(kind, obj)?.get(&k).cloned();
        Ok(old.map(|v| (v, st.delete_of(k))))
    })?;
    if let Some((ov, kv)) = old {
        call_delete(obj, k, ov, kv)?;
    }
    state::with(|st| {
        let attrs = st.attrs_mut(kind, obj)?;
        let fresh = attrs.insert(k, AttrValue::new(v, lang)).is_none();
        if fresh {
            st.keyval_use(k, 1);
        }
        Ok(())
    })
}

pub(crate) fn get_attr(kind: KeyvalKind, obj: c_int, k: c_int, out: *mut c_void, flag: *mut c_int) -> R<()> {
    get_attr_in(Lang::C, kind, obj, k, out, flag)
}

fn get_attr_in(lang: Lang, kind: KeyvalKind, obj: c_int, k: c_int, out: *mut c_void, flag: *mut c_int) -> R<()> {
    check_ptr(flag, "flag")?;
    check_ptr(out, "attribute_val")?;
    let v = state::with(|st| {
        if kind == KeyvalKind::Comm {
            st.comm(obj)?;
            if let Some(i) = PREDEFINED_COMM_KEYS.iter().position(|&p| p == k) {
                // A launcher with no notion of an application number (Slurm
                // gives -1) leaves MPI_APPNUM unset, as the standard says.
                if k == MPI_APPNUM && st.appnum < 0 {
                    return Ok(None);
                }
                let val = match k {
                    MPI_TAG_UB => TAG_UB,
                    MPI_HOST => MPI_PROC_NULL,
                    MPI_IO => MPI_ANY_SOURCE,
                    MPI_WTIME_IS_GLOBAL => 0,
                    MPI_UNIVERSE_SIZE => st.universe_size.unwrap_or(st.rt.size) as c_int,
                    MPI_LASTUSEDCODE => st.errors.last_used_code(),
                    MPI_APPNUM => st.appnum,
                    _ => 0,
                };
                st.attr_storage[i] = val;
                return Ok(Some(&mut st.attr_storage[i] as *mut c_int as *mut c_void));
            }
        }
        if kind == KeyvalKind::Win {
            let w = st.win_mut(obj)?;
            // The base is the value itself; the others point to it.
            let v = match k {
                MPI_WIN_BASE => Some(w.base),
                MPI_WIN_SIZE => Some(&mut *w.size as *mut MPI_Aint as *mut c_void),
                MPI_WIN_DISP_UNIT => Some(&mut *w.disp_unit as *mut c_int as *mut c_void),
                MPI_WIN_CREATE_FLAVOR => Some(&mut *w.flavor_attr as *mut c_int as *mut c_void),
                MPI_WIN_MODEL => Some(&mut *w.model as *mut c_int as *mut c_void),
                _ => None,
            };
            if v.is_some() {
                return Ok(v);
            }
        }
        st.keyval_of_attrs(k, kind)?;
        let attrs = st.attrs_mut(kind, obj)?;
        Ok(attrs.get(&k).map(|v| v.view(lang)))
    })?;
    // SAFETY: checked non-null; attribute_val is a void** in C.
    unsafe {
        match v {
            Some(v) => {
                *(out as *mut *mut c_void) = v;
                *flag = 1;
            }
            None => *flag = 0,
        }
    }
    Ok(())
}

pub(crate) fn delete_attr(kind: KeyvalKind, obj: c_int, k: c_int) -> R<()> {
    // The delete callback runs first: if it fails, the attribute stays
    // (MPI 4.1, 7.7.2: the call fails, nothing is deleted).
    let (v, kv) = state::with(|st| {
        st.keyval_of_attrs(k, kind)?;
        let attrs = st.attrs_mut(kind, obj)?;
        let v = attrs.get(&k).cloned().ok_or_else(|| err(MPI_ERR_KEYVAL, format!("no attribute is set for keyval {k:#x}")))?;
        Ok((v, st.delete_of(k)))
    })?;
    call_delete(obj, k, v, kv)?;
    state::with(|st| {
        if st.attrs_mut(kind, obj)?.remove(&k).is_some() {
            st.keyval_use(k, -1);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_keyval(type_copy_attr_fn: Option<MPI_Type_copy_attr_function>, type_delete_attr_fn: Option<MPI_Type_delete_attr_function>, type_keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
    // Same C signature shape as the communicator callbacks (handles are ints).
    api("MPI_Type_create_keyval", Target::NoComm, || create_keyval(KeyvalKind::Type, type_copy_attr_fn, type_delete_attr_fn, type_keyval, extra_state))
}

/// MPI_DUP_FN / MPI_COMM_DUP_FN / MPI_TYPE_DUP_FN: copy the attribute value.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(_oldcomm: MPI_Comm, _keyval: c_int, _extra_state: *mut c_void, attribute_val_in: *mut c_void, attribute_val_out: *mut c_void, flag: *mut c_int) -> c_int {
    *(attribute_val_out as *mut *mut c_void) = attribute_val_in;
    *flag = 1;
    MPI_SUCCESS
}

// ---- the Fortran bindings' entries ------------------------------------------
//
// libmpifort calls these (not MPI_Comm_set_attr etc.) for Fortran's
// attribute calls: the C signatures, with attribute values in Fortran's view
// (the INTEGER(KIND=MPI_ADDRESS_KIND) value in a pointer-sized word), and
// keyvals whose callbacks are Fortran's and get values in that view.

macro_rules! fortran_set_attr {
    ($($sym:ident($name:literal, $obj:ident: $ty:ty, $kind:expr, $target:expr);)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $sym($obj: $ty, keyval: c_int, attribute_val: *mut c_void) -> c_int {
            api($name, $target, || set_attr_in(Lang::Fortran, $kind, $obj, keyval, attribute_val))
        }
    )*};
}

macro_rules! fortran_get_attr {
    ($($sym:ident($name:literal, $obj:ident: $ty:ty, $kind:expr, $target:expr);)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $sym($obj: $ty, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
            api($name, $target, || get_attr_in(Lang::Fortran, $kind, $obj, keyval, attribute_val, flag))
        }
    )*};
}

macro_rules! fortran_create_keyval {
    ($($sym:ident($name:literal, $copy:ty, $delete:ty, $kind:expr);)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $sym(copy_fn: Option<$copy>, delete_fn: Option<$delete>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
            api($name, Target::NoComm, || create_keyval_in(Lang::Fortran, $kind, copy_fn, delete_fn, keyval, extra_state))
        }
    )*};
}

fortran_set_attr! {
    gridmpi_fortran_Comm_set_attr("MPI_Comm_set_attr", comm: MPI_Comm, KeyvalKind::Comm, Target::Comm(comm));
    gridmpi_fortran_Attr_put("MPI_Attr_put", comm: MPI_Comm, KeyvalKind::Comm, Target::Comm(comm));
    gridmpi_fortran_Type_set_attr("MPI_Type_set_attr", datatype: MPI_Datatype, KeyvalKind::Type, Target::NoComm);
    gridmpi_fortran_Win_set_attr("MPI_Win_set_attr", win: MPI_Win, KeyvalKind::Win, Target::Win(win));
}

fortran_get_attr! {
    gridmpi_fortran_Comm_get_attr("MPI_Comm_get_attr", comm: MPI_Comm, KeyvalKind::Comm, Target::Comm(comm));
    gridmpi_fortran_Attr_get("MPI_Attr_get", comm: MPI_Comm, KeyvalKind::Comm, Target::Comm(comm));
    gridmpi_fortran_Type_get_attr("MPI_Type_get_attr", datatype: MPI_Datatype, KeyvalKind::Type, Target::NoComm);
    gridmpi_fortran_Win_get_attr("MPI_Win_get_attr", win: MPI_Win, KeyvalKind::Win, Target::Win(win));
}

fortran_create_keyval! {
    gridmpi_fortran_Comm_create_keyval("MPI_Comm_create_keyval", MPI_Comm_copy_attr_function, MPI_Comm_delete_attr_function, KeyvalKind::Comm);
    gridmpi_fortran_Keyval_create("MPI_Keyval_create", MPI_Copy_function, MPI_Delete_function, KeyvalKind::Comm);
    gridmpi_fortran_Type_create_keyval("MPI_Type_create_keyval", MPI_Type_copy_attr_function, MPI_Type_delete_attr_function, KeyvalKind::Type);
    gridmpi_fortran_Win_create_keyval("MPI_Win_create_keyval", MPI_Win_copy_attr_function, MPI_Win_delete_attr_function, KeyvalKind::Win);
}

//! Windows: creation (create, allocate, allocate_shared, create_dynamic),
//! attach/detach, free, and what the C API shows of them (attributes,
//! group, name, info, error handlers, shared_query). Communication and
//! synchronization are in rma.rs; the semantics are the engine's (rma/).
//!
//! Creation is collective over the communicator: the members agree on a
//! context id (the window's id in frames; the next one carries its
//! barriers), register the window in their engines, and then exchange
//! what each exposes (base, size, displacement unit). Registering first
//! means no member can address a window before its owner knows it.
//!
//! `MPI_Win_allocate_shared` maps one file for all members: a header page,
//! then the members' segments back to back in rank order (so the memory is
//! contiguous across ranks, as the standard's default asks). The file is
//! created by whoever maps first and unlinked by the last to map it.
//! `MPI_Win_allocate` does the same when all members are on this host (and
//! shared memory is not turned off), so the engine's puts and gets to them
//! are loads and stores; MPI_Win_shared_query still reports no shared
//! memory for it, as its flavor promises none.

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};
use gridmpi_engine::rma::{Flavor, MemberInfo, Region, RmaError, RmaErrorKind, WinConfig, WinId};
use gridmpi_transport::sys::SharedMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// A shared window's file starts with a header: a magic word and the count
/// of members that mapped it, then one cache line per member holding its
/// control words (the engine's `SharedCtl`: the lock word, the accumulate
/// mutex), rounded up to whole pages; the segments follow.
const SHARED_MAGIC: u64 = 0x4752_4944_5749_4e53; // "GRIDWINS"
const CTL_LINE: usize = 64;

fn shared_header(members: usize) -> usize {
    (CTL_LINE * (1 + members)).next_multiple_of(4096)
}

/// A shared window's control words, in its mapping (which this keeps).
pub struct WinCtl {
    map: Arc<SharedMap>,
}

impl gridmpi_engine::rma::SharedCtl for WinCtl {
    fn lock_word(&self, rank: usize) -> &AtomicU64 {
        // SAFETY: the header holds a cache line per member (the engine asks
        // for members of the window only), 8-byte aligned in a page-aligned
        // mapping that lives as long as self; only touched atomically.
        unsafe { &*(self.map.as_ptr().add(CTL_LINE * (1 + rank)) as *const AtomicU64) }
    }
    fn acc_mutex(&self, rank: usize) -> &AtomicU64 {
        // SAFETY: as above, the next word of the member's line.
        unsafe { &*(self.map.as_ptr().add(CTL_LINE * (1 + rank) + 8) as *const AtomicU64) }
    }
}

/// Alignment of MPI_Win_allocate memory (a cache line: enough for any
/// element type and for atomics).
const ALLOC_ALIGN: usize = 64;

/// An engine error as an MPI error.
pub fn rma_err(e: RmaError) -> crate::errors::MpiError {
    let class = match e.kind {
        RmaErrorKind::Sync => MPI_ERR_RMA_SYNC,
        RmaErrorKind::Range => MPI_ERR_RMA_RANGE,
        RmaErrorKind::Rank => MPI_ERR_RANK,
        RmaErrorKind::Type => MPI_ERR_TYPE,
        RmaErrorKind::Op => MPI_ERR_OP,
        RmaErrorKind::Attach => MPI_ERR_RMA_ATTACH,
        RmaErrorKind::Flavor => MPI_ERR_RMA_FLAVOR,
        RmaErrorKind::Win => MPI_ERR_WIN,
    };
    err(class, e.msg)
}

impl State {
    pub fn win(&self, h: MPI_Win) -> R<&WinEntry> {
        if h == MPI_WIN_NULL {
            return Err(err(MPI_ERR_WIN, "the window is MPI_WIN_NULL"));
        }
        self.wins.get(h).ok_or_else(|| err(MPI_ERR_WIN, format!("invalid window handle {h:#x}")))
    }

    pub fn win_mut(&mut self, h: MPI_Win) -> R<&mut WinEntry> {
        if h == MPI_WIN_NULL {
            return Err(err(MPI_ERR_WIN, "the window is MPI_WIN_NULL"));
        }
        self.wins.get_mut(h).ok_or_else(|| err(MPI_ERR_WIN, format!("invalid window handle {h:#x}")))
    }
}

/// Allgather of u64 values (one vector per member) over `comm`.
fn allgather_u64(comm: MPI_Comm, mine: &[u64]) -> R<Vec<Vec<u64>>> {
    let (view, tag) = state::with(|st| {
        let c = st.comm_mut(comm)?;
        let tag = c.next_coll_tag();
        Ok((super::env::coll_view(c), tag))
    })?;
    let ints: Vec<i32> = mine.iter().flat_map(|&v| [v as u32 as i32, (v >> 32) as u32 as i32]).collect();
    let all = super::comm::allgather(view, tag, &ints)?;
    Ok(all
        .chunks(ints.len().max(1))
        .map(|c| c.chunks(2).map(|p| p[0] as u32 as u64 | (p[1] as u32 as u64) << 32).collect())
        .collect())
}

/// The memory of a new window, made before it is registered.
struct Made {
    base: *mut c_void,
    memory: WinMemory,
    /// For shared memory: where each member's segment is mapped here.
    direct: Option<Vec<u64>>,
    /// For shared memory: the control words.
    ctl: Option<Arc<WinCtl>>,
}

fn check_size_disp(size: i64, disp_unit: i64) -> R<()> {
    if size < 0 {
        return Err(err(MPI_ERR_SIZE, format!("invalid size {size} (must not be negative)")));
    }
    if disp_unit <= 0 || disp_unit > c_int::MAX as i64 {
        return Err(err(MPI_ERR_DISP, format!("invalid displacement unit {disp_unit} (must be positive)")));
    }
    Ok(())
}

/// Map the shared file of window `ctx` and place every member's segment,
/// each starting at a multiple of `align` (1: back to back, as
/// MPI_Win_allocate_shared promises by default).
fn map_shared(comm: MPI_Comm, ctx: u32, size: u64, align: u64) -> R<Made> {
    let (me, local, pids, job) = state::with(|st| {
        let c = st.comm(comm)?;
        Ok((c.rank as usize, st.rt.local_pids(), c.group.pids.clone(), st.rt.shm_names.clone()))
    })?;
    // Every member learns the others' sizes (and whether all can share).
    let on_host = pids.iter().all(|p| local.contains(p));
    let all = allgather_u64(comm, &[size, on_host as u64])?;
    if all.iter().any(|v| v[1] == 0) {
        return Err(err(MPI_ERR_RMA_SHARED, "the communicator's processes are not all on one host, so they cannot share memory"));
    }
    let sizes: Vec<u64> = all.iter().map(|v| v[0].next_multiple_of(align)).collect();
    let total: u64 = sizes.iter().sum();
    let header = shared_header(pids.len());
    let len = header + total as usize;
    let name = format!("/{job}-win-{ctx}");
    let map = SharedMap::create_or_open(&name, len).map_err(|e| err(MPI_ERR_NO_MEM, format!("cannot map shared memory {name} ({len} bytes): {e}")))?;
    // SAFETY: the header's first words are in the mapping, 8-byte aligned
    // (the mapping is page-aligned), and only touched atomically.
    let word = |i: usize| unsafe { &*(map.as_ptr().add(i * 8) as *const AtomicU64) };
    match word(0).compare_exchange(0, SHARED_MAGIC, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) | Err(SHARED_MAGIC) => {}
        Err(_) => return Err(err(MPI_ERR_RMA_SHARED, format!("{name} is not a GridMPI window"))),
    }
    if word(1).fetch_add(1, Ordering::AcqRel) + 1 == pids.len() as u64 {
        map.unlink();
    }
    let first = map.as_ptr() as u64 + header as u64;
    let direct: Vec<u64> = sizes.iter().scan(first, |at, &s| {
        let here = *at;
        *at += s;
        Some(here)
    }).collect();
    let map = Arc::new(map);
    let ctl = Arc::new(WinCtl { map: map.clone() });
    Ok(Made { base: direct[me] as *mut c_void, memory: WinMemory::Shared(map), direct: Some(direct), ctl: Some(ctl) })
}

/// Whether MPI_Win_allocate may take shared memory on `comm`: more than
/// one member, all on this host, and shared memory not turned off
/// (GRIDMPI_TRANSPORT=tcp keeps every byte between processes on TCP).
fn allocate_shared_ok(comm: MPI_Comm) -> R<bool> {
    state::with(|st| {
        let c = st.comm(comm)?;
        let local = st.rt.local_pids();
        Ok(c.size() > 1 && c.group.pids.iter().all(|p| local.contains(p)) && st.rt.shared_memory_allowed())
    })
}

fn info_pairs(info: MPI_Info) -> R<Vec<(String, String)>> {
    super::info::info_entries_or_empty(info)
}

/// Create a window of `flavor` over `comm`; returns the handle and the base.
fn create(comm: MPI_Comm, flavor: Flavor, user_base: *mut c_void, size: i64, disp_unit: i64, info: MPI_Info) -> R<(MPI_Win, *mut c_void)> {
    check_size_disp(size, disp_unit)?;
    let hints = info_pairs(info)?;
    let (rank, group) = state::with(|st| {
        let c = st.comm(comm)?;
        if c.is_inter() {
            return Err(err(MPI_ERR_COMM, "windows are made on intracommunicators only"));
        }
        Ok((c.rank, c.group.clone()))
    })?;
    let ctx = super::ctx_id::agree_ctx(comm, 1)?;
    let made = match flavor {
        Flavor::Create => Made { base: user_base, memory: WinMemory::User, direct: None, ctl: None },
        Flavor::Dynamic => Made { base: std::ptr::null_mut(), memory: WinMemory::User, direct: None, ctl: None },
        // Members all on this host (each member sees the same answer): the
        // memory is shared, so every operation is done by its origin. Each
        // segment aligned as the heap's would be (atomics need it).
        Flavor::Allocate if allocate_shared_ok(comm)? => map_shared(comm, ctx, size as u64, ALLOC_ALIGN as u64)?,
        Flavor::Allocate => {
            let layout = std::alloc::Layout::from_size_align((size as usize).max(1), ALLOC_ALIGN)
                .map_err(|_| err(MPI_ERR_NO_MEM, format!("cannot allocate {size} bytes")))?;
            // SAFETY: a non-zero size.
            let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
            if ptr.is_null() {
                return Err(err(MPI_ERR_NO_MEM, format!("cannot allocate {size} bytes")));
            }
            Made { base: ptr as *mut c_void, memory: WinMemory::Heap { ptr, layout }, direct: None, ctl: None }
        }
        Flavor::Shared => map_shared(comm, ctx, size as u64, 1)?,
    };
    let memory = (flavor != Flavor::Dynamic).then_some(Region { base: made.base as u64, len: size as u64 });
    let id = state::with(|st| {
        let shared = made.ctl.clone().map(|c| c as Arc<dyn gridmpi_engine::rma::SharedCtl>);
        let cfg = WinConfig { ctx, rank, pids: group.pids.clone().into(), flavor, memory, shared };
        Ok(st.rt.engine.win_create(cfg))
    })?;
    let (size, disp) = if flavor == Flavor::Dynamic { (0, 1) } else { (size as u64, disp_unit as u64) };
    let all = allgather_u64(comm, &[made.base as u64, size, disp])?;
    let members = all
        .iter()
        .enumerate()
        .map(|(r, v)| MemberInfo { base: v[0], size: v[1], disp_unit: v[2], direct: made.direct.as_ref().map(|d| d[r]) })
        .collect();
    let base = made.base;
    let flavor_attr = match flavor {
        Flavor::Create => MPI_WIN_FLAVOR_CREATE,
        Flavor::Allocate => MPI_WIN_FLAVOR_ALLOCATE,
        Flavor::Dynamic => MPI_WIN_FLAVOR_DYNAMIC,
        Flavor::Shared => MPI_WIN_FLAVOR_SHARED,
    };
    let h = state::with(|st| {
        st.rt.engine.win_set_members(id, members);
        let h = st.wins.insert(WinEntry {
            id,
            group,
            flavor,
            name: String::new(),
            errh: MPI_ERRORS_ARE_FATAL,
            attrs: Attrs::default(),
            info: hints,
            base,
            size: Box::new(size as MPI_Aint),
            disp_unit: Box::new(disp as c_int),
            flavor_attr: Box::new(flavor_attr),
            model: Box::new(MPI_WIN_UNIFIED),
            memory: made.memory,
        });
        if let Some(f) = st.rt.engine.win_fast(id) {
            super::rma_fast::publish(st, h, f);
        }
        Ok(h)
    })?;
    Ok((h, base))
}

/// MPI_Win_create(_c).
pub fn win_create(name: &'static str, base: *mut c_void, size: MPI_Aint, disp_unit: i64, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(win, "win")?;
        if base.is_null() && size > 0 {
            return Err(err(MPI_ERR_BASE, format!("base is NULL for a window of {size} bytes")));
        }
        let (h, _) = create(comm, Flavor::Create, base, size, disp_unit, info)?;
        // SAFETY: checked non-null.
        unsafe { *win = h };
        Ok(())
    })
}

/// MPI_Win_allocate(_c) and MPI_Win_allocate_shared(_c).
pub fn win_allocate(name: &'static str, size: MPI_Aint, disp_unit: i64, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win, flavor: Flavor) -> c_int {
    api(name, Target::Comm(comm), || {
        check_ptr(win, "win")?;
        check_ptr(baseptr, "baseptr")?;
        let (h, base) = create(comm, flavor, std::ptr::null_mut(), size, disp_unit, info)?;
        // SAFETY: checked non-null; baseptr is a void** in C.
        unsafe {
            *(baseptr as *mut *mut c_void) = base;
            *win = h;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_create_dynamic(info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    api("MPI_Win_create_dynamic", Target::Comm(comm), || {
        check_ptr(win, "win")?;
        let (h, _) = create(comm, Flavor::Dynamic, std::ptr::null_mut(), 0, 1, info)?;
        *win = h;
        Ok(())
    })
}

fn with_win<T>(win: MPI_Win, f: impl FnOnce(&mut State, WinId) -> R<T>) -> R<T> {
    state::with(|st| {
        let id = st.win(win)?.id;
        f(st, id)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_detach(win: MPI_Win, base: *const c_void) -> c_int {
    api("MPI_Win_detach", Target::Win(win), || with_win(win, |st, id| st.rt.engine.win_detach(id, base as u64).map_err(rma_err)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_free(win: *mut MPI_Win) -> c_int {
    let h = if win.is_null() { MPI_WIN_NULL } else { *win };
    api("MPI_Win_free", Target::Win(h), || {
        check_ptr(win, "win")?;
        with_win(h, |_, _| Ok(()))?;
        super::rma_fast::withdraw(h);
        with_win(h, |st, id| {
            st.rt.engine.absorb_fast(id);
            Ok(())
        })?;
        // Attributes go first, with their delete callbacks (MPI 4.1 §7.7.4).
        delete_all_win_attrs(h)?;
        let r = with_win(h, |st, id| {
            let r = st.rt.engine.win_free(id).map_err(rma_err)?;
            st.progress()?;
            Ok(r)
        })?;
        super::env::wait_engine(r)?;
        let entry = state::with(|st| {
            let e = st.wins.remove(h).ok_or_else(|| err(MPI_ERR_WIN, "the window vanished while being freed"))?;
            st.rt.engine.win_drop(e.id);
            super::errh::release_errhandler(e.errh);
            Ok(e)
        })?;
        // The memory (heap or shared mapping) goes with the entry.
        drop(entry);
        *win = MPI_WIN_NULL;
        Ok(())
    })
}

/// Delete every attribute of a window, last set first.
fn delete_all_win_attrs(win: MPI_Win) -> R<()> {
    loop {
        let next = state::with(|st| {
            Ok(st.win_mut(win)?.attrs.pop())
        })?;
        let Some((k, v)) = next else { return Ok(()) };
        super::attr::run_delete(win, k, v)?;
    }
}

/// The hints a window reports: the defaults of what it does, with the
/// program's own settings in their place.
fn win_hints(w: &WinEntry) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![
        ("no_locks".into(), "false".into()),
        ("accumulate_ordering".into(), "rar,raw,war,waw".into()),
        ("accumulate_ops".into(), "same_op_no_op".into()),
        ("same_size".into(), "false".into()),
        ("same_disp_unit".into(), "false".into()),
        ("mpi_accumulate_granularity".into(), "0".into()),
    ];
    if w.flavor == Flavor::Shared {
        out.push(("alloc_shared_noncontig".into(), "false".into()));
    }
    for (k, v) in &w.info {
        match out.iter_mut().find(|(ok, _)| ok == k) {
            Some(e) => e.1 = v.clone(),
            None => out.push((k.clone(), v.clone())),
        }
    }
    out
}

/// MPI_Win_shared_query(_c): where a member's segment of a shared window
/// is mapped here. `MPI_PROC_NULL` asks for the first member with memory.
/// Other windows have no memory shared with other processes: size 0 and
/// a NULL base.
pub fn win_shared_query(name: &'static str, win: MPI_Win, rank: c_int, size: *mut MPI_Aint, disp_unit: CountPtr, baseptr: *mut c_void) -> c_int {
    api(name, Target::Win(win), || {
        check_ptr(size, "size")?;
        disp_unit.check("disp_unit")?;
        check_ptr(baseptr, "baseptr")?;
        let (sz, du, base) = with_win(win, |st, id| {
            let n = st.win(win)?.group.size();
            let flavor = st.win(win)?.flavor;
            let member = |r: i32| st.rt.engine.win_member(id, r).map_err(rma_err);
            let m = if rank == MPI_PROC_NULL {
                match (0..n).map(member).collect::<R<Vec<_>>>()?.into_iter().find(|m| m.size > 0) {
                    Some(m) => m,
                    None => member(0)?,
                }
            } else {
                if rank < 0 || rank >= n {
                    return Err(err(MPI_ERR_RANK, format!("invalid rank {rank} (the window has {n} members)")));
                }
                member(rank)?
            };
            if flavor != Flavor::Shared {
                return Ok((0, m.disp_unit as i64, std::ptr::null_mut()));
            }
            Ok((m.size as MPI_Aint, m.disp_unit as i64, m.direct.unwrap_or(0) as *mut c_void))
        })?;
        // SAFETY: checked non-null; baseptr is a void** in C.
        unsafe {
            *size = sz;
            disp_unit.put(du);
            *(baseptr as *mut *mut c_void) = base;
        }
        Ok(())
    })
}

// ---- error handlers -----------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) -> c_int {
    let known = state::with(|st| {
        st.win(win)?;
        Ok(())
    });
    if let Err(e) = known {
        return state::report("MPI_Win_call_errhandler", Target::NoComm, e);
    }
    let class = state::with(|st| Ok(st.errors.class_of(errorcode).unwrap_or(MPI_ERR_OTHER))).unwrap_or(MPI_ERR_OTHER);
    let msg = state::with(|st| Ok(st.errors.string_of(errorcode).unwrap_or_default())).unwrap_or_default();
    state::report("MPI_Win_call_errhandler", Target::Win(win), crate::errors::MpiError { class, msg, code: Some(errorcode) });
    MPI_SUCCESS
}

// MPI_Win_attach, the names, groups, infos and error handlers of windows
// are generated from abi/functions.txt; these are their implementations.

pub(crate) fn win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) -> R<()> {
    if size < 0 {
        return Err(err(MPI_ERR_SIZE, format!("invalid size {size}")));
    }
    if base.is_null() && size > 0 {
        return Err(err(MPI_ERR_BASE, "base is NULL"));
    }
    with_win(win, |st, id| st.rt.engine.win_attach(id, Region { base: base as u64, len: size as u64 }).map_err(rma_err))
}

pub(crate) fn win_get_group(st: &mut State, win: MPI_Win) -> R<MPI_Group> {
    let g = st.win(win)?.group.clone();
    Ok(st.groups.insert(g))
}

pub(crate) fn win_set_name(st: &mut State, win: MPI_Win, name: &str) -> R<()> {
    st.win_mut(win)?.name = object_name(name);
    Ok(())
}

/// MPI_WIN_NULL has a name too (as MPICH answers).
pub(crate) fn win_get_name(st: &mut State, win: MPI_Win) -> R<String> {
    if win == MPI_WIN_NULL {
        return Ok("MPI_WIN_NULL".into());
    }
    Ok(st.win(win)?.name.clone())
}

/// The info's entries are read first, without the lock: MPI_INFO_ENV's
/// look at the state.
pub(crate) fn win_set_info(win: MPI_Win, info: MPI_Info) -> R<()> {
    let kv = super::info::info_entries(info)?;
    state::with(|st| Ok(super::info::merge_entries(&mut st.win_mut(win)?.info, kv)))
}

pub(crate) fn win_get_info(st: &mut State, win: MPI_Win) -> R<MPI_Info> {
    Ok(super::info::new_info(Info { entries: win_hints(st.win(win)?) }))
}

pub(crate) fn win_create_errhandler(f: Option<MPI_Win_errhandler_function>) -> R<MPI_Errhandler> {
    Ok(super::errh::new_errhandler(ErrhFunc::Win(f.ok_or_else(|| err(MPI_ERR_ARG, "the handler function is NULL"))?)))
}

pub(crate) fn win_set_errhandler(st: &mut State, win: MPI_Win, errhandler: MPI_Errhandler) -> R<()> {
    super::errh::check_errhandler(errhandler, super::errh::ErrhKind::Win)?;
    super::errh::replace_errhandler(&mut st.win_mut(win)?.errh, errhandler);
    Ok(())
}

/// The returned handle is a new reference the user frees.
pub(crate) fn win_get_errhandler(st: &mut State, win: MPI_Win) -> R<MPI_Errhandler> {
    let h = st.win(win)?.errh;
    super::errh::retain_errhandler(h);
    Ok(h)
}


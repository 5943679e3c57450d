//! One-sided communication and synchronization calls: argument checks and
//! handle conversion around the engine's rma/ (which owns the semantics).
//! Errors go to the window's error handler.

use super::win::rma_err;
use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};
use gridmpi_engine::rma::{LockKind, Op, TargetSpec, WinId};
use gridmpi_engine::ReqId;

const KNOWN_ASSERTS: c_int = MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED;

/// Operations between two progress passes (see `issue`).
const RMA_QUIET_CALLS: u32 = 16;
/// Frames of operations holding this many bytes are sent in the call.
const RMA_SEND_NOW: u64 = 16 * 1024;

fn check_assert(assert: c_int) -> R<()> {
    if assert & !KNOWN_ASSERTS != 0 {
        return Err(err(MPI_ERR_ASSERT, format!("invalid assert {assert:#x} (only MPI_MODE_* values may be or-ed)")));
    }
    Ok(())
}

/// Where an operation acts, checked.
fn target(st: &State, win: MPI_Win, rank: c_int, disp: MPI_Aint, count: i64, dt: MPI_Datatype) -> R<TargetSpec> {
    let n = st.win(win)?.group.size();
    if rank < 0 || rank >= n {
        return Err(err(MPI_ERR_RANK, format!("invalid target rank {rank} (the window has {n} members)")));
    }
    if disp < 0 {
        return Err(err(MPI_ERR_DISP, format!("invalid target displacement {disp} (must not be negative)")));
    }
    let count = check_count(count)?;
    Ok(TargetSpec { rank, disp: disp as u64, count, dt: st.dtype(dt)? })
}

/// The predefined operation of an accumulate, checked on its datatypes.
fn acc_op(op: MPI_Op, types: &[&Datatype], no_op: bool) -> R<Op> {
    let Some(o) = super::op::predefined_op(op) else {
        return Err(err(MPI_ERR_OP, "one-sided accumulates take predefined operations only (not user-defined ones or MPI_OP_NULL)"));
    };
    if o == Op::NoOp && !no_op {
        return Err(err(MPI_ERR_OP, "MPI_NO_OP is for MPI_Get_accumulate and MPI_Fetch_and_op only"));
    }
    for dt in types {
        super::op::check_predefined(o, dt)?;
    }
    Ok(o)
}

/// Run an operation call: `f` issues it in the engine. With a request
/// pointer (the R- forms), the request is stored there.
fn issue(
    name: &'static str,
    win: MPI_Win,
    rank: c_int,
    request: Option<*mut MPI_Request>,
    f: impl FnOnce(&mut State, WinId) -> R<Option<ReqId>>,
) -> c_int {
    api(name, Target::Win(win), || {
        if let Some(p) = request {
            check_ptr(p, "request")?;
        }
        let h = state::with(|st| {
            let id = st.win(win)?.id;
            st.rt.engine.absorb_fast(id);
            if rank == MPI_PROC_NULL {
                return Ok(request.map(|_| st.reqs.insert(ReqEntry::Null { kind: ReqKind::Send, comm: MPI_COMM_SELF })));
            }
            let r = f(st, id);
            st.rt.engine.refresh_fast(id);
            let r = r?;
            // What came in is applied: a program that spins on RMA calls
            // (loads and stores included) must let the operations others
            // aim at it progress, so one call in RMA_QUIET_CALLS
            // progresses: often enough for such a program, and the common
            // case costs no transport poll. Frames of small operations
            // wait for that or for the synchronization call, which then
            // sends them together with its own (a put and its flush in one
            // write, one wakeup of the target); large ones leave now, so
            // the transfer overlaps what the program does next.
            st.rma_quiet_calls += 1;
            if st.rt.engine.queued_bytes() >= RMA_SEND_NOW || st.rma_quiet_calls >= RMA_QUIET_CALLS {
                st.rma_quiet_calls = 0;
                st.progress()?;
            }
            Ok(r.map(|r| st.reqs.insert(ReqEntry::Active { r, kind: ReqKind::Send, comm: MPI_COMM_SELF })))
        })?;
        if let (Some(p), Some(h)) = (request, h) {
            // SAFETY: checked non-null.
            unsafe { *p = h };
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
pub fn put(
    name: &'static str,
    origin_addr: *const c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: Option<*mut MPI_Request>,
) -> c_int {
    if request.is_none() {
        if let Some((f, len)) = super::rma_fast::lookup(win, origin_addr, origin_count, origin_datatype, target_count, target_datatype) {
            // SAFETY: `lookup` checked the buffer is not null for `len` > 0;
            // the caller's buffer holds its data (MPI's rules).
            if unsafe { f.put(target_rank, target_disp as i64, origin_addr as *const u8, len) } {
                return MPI_SUCCESS;
            }
        }
    }
    issue(name, win, target_rank, request, |st, id| {
        let t = target(st, win, target_rank, target_disp, target_count, target_datatype)?;
        let ob = user_buf(origin_addr, check_count(origin_count)?, st.dtype(origin_datatype)?)?;
        st.rt.engine.rma_put(id, &ob, &t, request.is_some()).map_err(rma_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub fn rput(
    name: &'static str,
    origin_addr: *const c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    put(name, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win, Some(request))
}

#[allow(clippy::too_many_arguments)]
pub fn get(
    name: &'static str,
    origin_addr: *mut c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: Option<*mut MPI_Request>,
) -> c_int {
    if request.is_none() {
        if let Some((f, len)) = super::rma_fast::lookup(win, origin_addr, origin_count, origin_datatype, target_count, target_datatype) {
            // SAFETY: as in `put`; the buffer is the caller's to fill.
            if unsafe { f.get(target_rank, target_disp as i64, origin_addr as *mut u8, len) } {
                return MPI_SUCCESS;
            }
        }
    }
    issue(name, win, target_rank, request, |st, id| {
        let t = target(st, win, target_rank, target_disp, target_count, target_datatype)?;
        let ob = user_buf(origin_addr, check_count(origin_count)?, st.dtype(origin_datatype)?)?;
        st.rt.engine.rma_get(id, &ob, &t, request.is_some()).map_err(rma_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub fn rget(
    name: &'static str,
    origin_addr: *mut c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    get(name, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win, Some(request))
}

#[allow(clippy::too_many_arguments)]
#[inline]
pub fn accumulate(
    name: &'static str,
    origin_addr: *const c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: Option<*mut MPI_Request>,
) -> c_int {
    if request.is_none() && origin_count == 1 && target_count == 1 && origin_datatype == target_datatype && super::rma_fast::accumulate_one(win, origin_addr, origin_datatype, target_rank, target_disp, op) {
        return MPI_SUCCESS;
    }
    accumulate_any(name, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win, request)
}

#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn accumulate_any(
    name: &'static str,
    origin_addr: *const c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: Option<*mut MPI_Request>,
) -> c_int {
    if request.is_none() && origin_datatype == target_datatype && origin_count == target_count {
        if let Some(rc) = super::rma_fast::accumulate(name, win, origin_addr, origin_count, origin_datatype, target_rank, target_disp, op, None) {
            return rc;
        }
    }
    issue(name, win, target_rank, request, |st, id| {
        let t = target(st, win, target_rank, target_disp, target_count, target_datatype)?;
        let odt = st.dtype(origin_datatype)?;
        let o = if t.count == 0 { Op::Replace } else { acc_op(op, &[&odt, &t.dt], false)? };
        let ob = user_buf(origin_addr, check_count(origin_count)?, odt)?;
        st.rt.engine.rma_accumulate(id, &ob, &t, o, request.is_some()).map_err(rma_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub fn raccumulate(
    name: &'static str,
    origin_addr: *const c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    accumulate(name, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win, Some(request))
}

#[allow(clippy::too_many_arguments)]
pub fn get_accumulate(
    name: &'static str,
    origin_addr: *const c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: i64,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: Option<*mut MPI_Request>,
) -> c_int {
    issue(name, win, target_rank, request, |st, id| {
        let t = target(st, win, target_rank, target_disp, target_count, target_datatype)?;
        let rdt = st.dtype(result_datatype)?;
        let no_op = super::op::predefined_op(op) == Some(Op::NoOp);
        // With MPI_NO_OP the origin arguments are ignored.
        // An empty operation does nothing, whatever its operation.
        let empty = t.count == 0;
        let ob = if no_op {
            UserBuf::empty()
        } else {
            let odt = st.dtype(origin_datatype)?;
            if !empty {
                acc_op(op, &[&odt], true)?;
            }
            user_buf(origin_addr, check_count(origin_count)?, odt)?
        };
        let o = if empty { Op::NoOp } else { acc_op(op, &[&t.dt, &rdt], true)? };
        let rb = user_buf(result_addr, check_count(result_count)?, rdt)?;
        st.rt.engine.rma_get_accumulate(id, &ob, &rb, &t, o, request.is_some(), false).map_err(rma_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub fn rget_accumulate(
    name: &'static str,
    origin_addr: *const c_void,
    origin_count: i64,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: i64,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: i64,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    get_accumulate(
        name,
        origin_addr,
        origin_count,
        origin_datatype,
        result_addr,
        result_count,
        result_datatype,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        op,
        win,
        Some(request),
    )
}

/// A single predefined element (fetch-and-op, compare-and-swap).
fn single_element(st: &State, dt: MPI_Datatype, what: &str) -> R<Arc<Datatype>> {
    let d = st.dtype(dt)?;
    if d.basic_type().is_none() && d.pair().is_none() {
        return Err(err(MPI_ERR_TYPE, format!("{what} takes a predefined datatype")));
    }
    Ok(d)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Fetch_and_op(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    if let Some(rc) = super::rma_fast::accumulate("MPI_Fetch_and_op", win, origin_addr, 1, datatype, target_rank, target_disp, op, Some(result_addr)) {
        return rc;
    }
    issue("MPI_Fetch_and_op", win, target_rank, None, |st, id| {
        let dt = single_element(st, datatype, "MPI_Fetch_and_op")?;
        let t = target(st, win, target_rank, target_disp, 1, datatype)?;
        let o = acc_op(op, &[&dt], true)?;
        let ob = if o == Op::NoOp { UserBuf::empty() } else { user_buf(origin_addr, 1, dt.clone())? };
        let rb = user_buf(result_addr, 1, dt)?;
        st.rt.engine.rma_get_accumulate(id, &ob, &rb, &t, o, false, true).map_err(rma_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Compare_and_swap(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> c_int {
    issue("MPI_Compare_and_swap", win, target_rank, None, |st, id| {
        use gridmpi_datatype::TypeClass::*;
        let dt = st.dtype(datatype)?;
        let ok = dt.basic_type().is_some_and(|b| matches!(b.class(), SignedInt | UnsignedInt | Logical | Byte | Bool));
        if !ok {
            return Err(err(MPI_ERR_TYPE, "MPI_Compare_and_swap takes a predefined integer, logical or byte datatype"));
        }
        let t = target(st, win, target_rank, target_disp, 1, datatype)?;
        let ob = user_buf(origin_addr, 1, dt.clone())?;
        let cb = user_buf(compare_addr, 1, dt.clone())?;
        let rb = user_buf(result_addr, 1, dt)?;
        st.rt.engine.rma_compare_and_swap(id, &ob, &cb, &rb, &t).map_err(rma_err)?;
        Ok(None)
    })
}

// ---- synchronization ------------------------------------------------------------

/// Run a synchronization call: `f` starts it in the engine and may return
/// a request to wait for; the call's errors (also those the targets
/// reported) are returned.
fn sync(name: &'static str, win: MPI_Win, f: impl FnOnce(&mut State, WinId) -> R<Option<ReqId>>) -> c_int {
    api(name, Target::Win(win), || {
        let mut failed = None;
        let r = state::with(|st| {
            let id = st.win(win)?.id;
            st.rt.engine.absorb_fast(id);
            let r = f(st, id);
            st.rt.engine.refresh_fast(id);
            let r = r?;
            // As in `issue`: a call over at once with nothing to send (a
            // flush of loads and stores, a lock word taken) need not poll.
            st.rma_quiet_calls += 1;
            if r.is_some() || st.rt.engine.has_actions() || st.rma_quiet_calls >= RMA_QUIET_CALLS {
                st.rma_quiet_calls = 0;
                st.progress()?;
            }
            // A call with nothing to wait for (a flush of loads and
            // stores) is over at once.
            if let Some(q) = r.filter(|&q| st.rt.engine.is_complete(q)) {
                failed = st.rt.engine.rma_take_error(q);
                st.rt.engine.take(q);
                return Ok(None);
            }
            Ok(r)
        })?;
        let Some(r) = r else { return failed.map_or(Ok(()), |e| Err(rma_err(e))) };
        state::wait_until(|st| {
            if !st.rt.engine.is_complete(r) {
                return Ok(false);
            }
            failed = st.rt.engine.rma_take_error(r);
            st.rt.engine.take(r);
            if let Ok(w) = st.win(win) {
                st.rt.engine.refresh_fast(w.id);
            }
            Ok(true)
        })?;
        failed.map_or(Ok(()), |e| Err(rma_err(e)))
    })
}

/// The window ranks of the members of `group`.
fn group_ranks(st: &State, win: MPI_Win, group: MPI_Group) -> R<Vec<i32>> {
    let g = st.group(group)?;
    let w = st.win(win)?;
    g.pids
        .iter()
        .map(|&p| w.group.rank_of(p).ok_or_else(|| err(MPI_ERR_GROUP, format!("process {p} of the group is not a member of the window"))))
        .collect()
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_fence(assert: c_int, win: MPI_Win) -> c_int {
    sync("MPI_Win_fence", win, |st, id| {
        check_assert(assert)?;
        st.rt.engine.win_fence(id, assert & MPI_MODE_NOSUCCEED != 0).map(Some).map_err(rma_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    sync("MPI_Win_start", win, |st, id| {
        check_assert(assert)?;
        let ranks = group_ranks(st, win, group)?;
        st.rt.engine.win_start(id, &ranks, assert & MPI_MODE_NOCHECK != 0).map_err(rma_err)?;
        Ok(None)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_complete(win: MPI_Win) -> c_int {
    sync("MPI_Win_complete", win, |st, id| st.rt.engine.win_complete(id).map(Some).map_err(rma_err))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    sync("MPI_Win_post", win, |st, id| {
        check_assert(assert)?;
        let ranks = group_ranks(st, win, group)?;
        st.rt.engine.win_post(id, &ranks, assert & MPI_MODE_NOCHECK != 0).map_err(rma_err)?;
        Ok(None)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_wait(win: MPI_Win) -> c_int {
    sync("MPI_Win_wait", win, |st, id| st.rt.engine.win_wait(id).map(Some).map_err(rma_err))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_test(win: MPI_Win, flag: *mut c_int) -> c_int {
    api("MPI_Win_test", Target::Win(win), || {
        check_ptr(flag, "flag")?;
        let done = state::with(|st| {
            let id = st.win(win)?.id;
            st.progress()?;
            st.rt.engine.win_test(id).map_err(rma_err)
        })?;
        *flag = done as c_int;
        Ok(())
    })
}

fn lock_kind(lock_type: c_int) -> R<LockKind> {
    match lock_type {
        MPI_LOCK_SHARED => Ok(LockKind::Shared),
        MPI_LOCK_EXCLUSIVE => Ok(LockKind::Exclusive),
        t => Err(err(MPI_ERR_LOCKTYPE, format!("invalid lock type {t} (MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE)"))),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> c_int {
    if assert == 0 && (lock_type == MPI_LOCK_EXCLUSIVE || lock_type == MPI_LOCK_SHARED) {
        if let Some(f) = super::rma_fast::window(win) {
            if f.lock(rank, lock_type == MPI_LOCK_EXCLUSIVE) {
                return MPI_SUCCESS;
            }
        }
    }
    sync("MPI_Win_lock", win, |st, id| {
        let kind = lock_kind(lock_type)?;
        check_assert(assert)?;
        if rank == MPI_PROC_NULL {
            return Ok(None);
        }
        st.rt.engine.win_lock(id, kind, rank, assert & MPI_MODE_NOCHECK != 0).map_err(rma_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_unlock(rank: c_int, win: MPI_Win) -> c_int {
    if let Some(f) = super::rma_fast::window(win) {
        if f.unlock(rank) {
            return MPI_SUCCESS;
        }
    }
    sync("MPI_Win_unlock", win, |st, id| {
        if rank == MPI_PROC_NULL {
            return Ok(None);
        }
        st.rt.engine.win_unlock(id, rank).map_err(rma_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_lock_all(assert: c_int, win: MPI_Win) -> c_int {
    sync("MPI_Win_lock_all", win, |st, id| {
        check_assert(assert)?;
        st.rt.engine.win_lock_all(id, assert & MPI_MODE_NOCHECK != 0).map_err(rma_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_unlock_all(win: MPI_Win) -> c_int {
    sync("MPI_Win_unlock_all", win, |st, id| st.rt.engine.win_unlock_all(id).map_err(rma_err))
}

fn flush(name: &'static str, win: MPI_Win, rank: Option<c_int>, local: bool) -> c_int {
    if let Some(f) = super::rma_fast::window(win) {
        if f.flush(rank) {
            return MPI_SUCCESS;
        }
    }
    sync(name, win, |st, id| {
        if rank == Some(MPI_PROC_NULL) {
            return Ok(None);
        }
        st.rt.engine.win_flush(id, rank, local).map_err(rma_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_flush(rank: c_int, win: MPI_Win) -> c_int {
    flush("MPI_Win_flush", win, Some(rank), false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_flush_local(rank: c_int, win: MPI_Win) -> c_int {
    flush("MPI_Win_flush_local", win, Some(rank), true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_flush_all(win: MPI_Win) -> c_int {
    flush("MPI_Win_flush_all", win, None, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_flush_local_all(win: MPI_Win) -> c_int {
    flush("MPI_Win_flush_local_all", win, None, true)
}

/// MPI_Win_sync: in the unified model the window's memory is the program's
/// memory, so this is a full memory barrier (for shared-memory windows,
/// between the program's loads and stores and other processes'); it also
/// lets pending operations aimed at us progress.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_sync(win: MPI_Win) -> c_int {
    api("MPI_Win_sync", Target::Win(win), || {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        state::with(|st| {
            st.win(win)?;
            st.progress()?;
            Ok(())
        })?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    })
}

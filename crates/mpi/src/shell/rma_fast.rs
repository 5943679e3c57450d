//! The lock-free side of one-sided calls (the engine's rma/fast.rs): a
//! table from window handles to the engine's [`FastWin`] of each window in
//! shared memory, and which predefined datatypes such a call may take.
//! MPI_Put, MPI_Get and the flushes look here first and, when the window,
//! the datatypes and the epoch allow it, are done without the library's
//! lock; anything else (and every error) takes the ordinary path.

use super::*;
use crate::handles::{self, Kind};
use crate::state::{api, Target};
use gridmpi_engine::rma::fast::OneRmw;
use gridmpi_engine::rma::{FastWin, Op};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU8, Ordering};
use std::sync::OnceLock;

/// Windows whose handle index is below this have a slot.
const SLOTS: usize = 1024;

static WINDOWS: [AtomicPtr<FastWin>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// By the low byte of a predefined datatype's handle (0x4c00SSXX): its
/// size when its data is dense (no gaps, starts at 0), else 0.
static DENSE: [AtomicU32; 256] = [const { AtomicU32::new(0) }; 256];

/// The dense predefined datatypes themselves, by the same index.
static TYPES: [OnceLock<Arc<Datatype>>; 256] = [const { OnceLock::new() }; 256];

/// Whether a predefined operation (its index in `Op::ALL`) is defined on
/// a dense predefined type (by the same index as `TYPES`): 0 not known
/// yet, 1 yes, 2 no (the ordinary path then says why).
static DEFINED: [[AtomicU8; 256]; Op::ALL.len()] = [const { [const { AtomicU8::new(0) }; 256] }; Op::ALL.len()];

/// `op` is defined on the dense predefined type of index `i`.
fn defined(op: Op, i: usize, t: &Datatype) -> bool {
    // Op::ALL lists the operations in their declaration order.
    let k = op as usize;
    debug_assert_eq!(Op::ALL[k], op);
    let cell = &DEFINED[k][i];
    match cell.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let ok = super::op::check_predefined(op, t).is_ok();
            cell.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
            ok
        }
    }
}

/// Window `h` of the state has a lock-free side: publish it.
pub fn publish(st: &State, h: MPI_Win, f: Arc<FastWin>) {
    if DENSE[0x0d].load(Ordering::Relaxed) == 0 {
        for (i, entry) in st.predef.basic.iter().enumerate().take(256) {
            if let Some((dt, _)) = entry {
                let dense = dt.size() > 0 && dt.size() as i64 == dt.extent() && dt.true_lb() == 0 && dt.is_contiguous();
                if dense {
                    let _ = TYPES[i].set(dt.clone());
                }
                DENSE[i].store(if dense { dt.size() as u32 } else { 0 }, Ordering::Relaxed);
            }
        }
    }
    let Some(i) = handles::index_of(h, Kind::Win).map(|i| i as usize).filter(|&i| i < SLOTS) else { return };
    // The one this replaces is left allocated: a thread may still be
    // looking at it (it says its window is closed, so that thread then
    // takes the ordinary path).
    WINDOWS[i].store(Arc::into_raw(f) as *mut FastWin, Ordering::Release);
}

/// Window `h` is being freed.
pub fn withdraw(h: MPI_Win) {
    if let Some(i) = handles::index_of(h, Kind::Win).map(|i| i as usize).filter(|&i| i < SLOTS) {
        WINDOWS[i].store(std::ptr::null_mut(), Ordering::Release);
    }
}

/// MPI is ending: no window is reachable any more.
pub fn withdraw_all() {
    for w in WINDOWS.iter() {
        w.store(std::ptr::null_mut(), Ordering::Release);
    }
}

/// The lock-free side of window `h`, if it has one.
pub fn window(h: MPI_Win) -> Option<&'static FastWin> {
    let i = handles::index_of(h, Kind::Win)? as usize;
    let p = WINDOWS.get(i)?.load(Ordering::Acquire);
    // SAFETY: published pointers come from Arc::into_raw and are never
    // released (see `publish`).
    (!p.is_null()).then(|| unsafe { &*p })
}

fn dense_size(dt: MPI_Datatype) -> Option<u64> {
    // 0x4c00SSXX: a predefined type (SS its size, XX its index).
    if (dt as u32) & 0xffff_0000 != 0x4c00_0000 {
        return None;
    }
    let s = DENSE[(dt & 0xff) as usize].load(Ordering::Relaxed);
    (s > 0).then_some(s as u64)
}

/// A put or get the lock-free side may take: the window's side and the
/// bytes it moves (both sides dense predefined types of as many bytes).
pub fn lookup(win: MPI_Win, addr: *const c_void, ocount: i64, odt: MPI_Datatype, tcount: i64, tdt: MPI_Datatype) -> Option<(&'static FastWin, u64)> {
    let f = window(win)?;
    let len = u64::try_from(ocount).ok()?.checked_mul(dense_size(odt)?)?;
    if len != u64::try_from(tcount).ok()?.checked_mul(dense_size(tdt)?)? || (len > 0 && addr.is_null()) {
        return None;
    }
    Some((f, len))
}

/// By operation (its index in `Op::ALL`) and dense predefined type (as
/// `TYPES`): the atomic of a one-element accumulate ([`OneRmw`] as u8), 0
/// not known yet, [`NO_ONE`] none (the general road below).
static ONE: [[AtomicU8; 256]; Op::ALL.len()] = [const { [const { AtomicU8::new(0) }; 256] }; Op::ALL.len()];
const NO_ONE: u8 = 0xff;

/// MPI_Accumulate of one element of the predefined `dt` with `op`, as one
/// CPU atomic: true once done, false for the other roads (which find and
/// say every error). The commonest accumulate, a counter or a sum, pays
/// for two table lookups and its atomic here.
#[inline]
pub fn accumulate_one(win: MPI_Win, addr: *const c_void, dt: MPI_Datatype, rank: c_int, disp: MPI_Aint, op: MPI_Op) -> bool {
    let Some(f) = window(win) else { return false };
    let Some(o) = super::op::predefined_op(op) else { return false };
    if (dt as u32) & 0xffff_0000 != 0x4c00_0000 || addr.is_null() {
        return false;
    }
    let i = (dt & 0xff) as usize;
    let cell = &ONE[o as usize][i];
    let code = match cell.load(Ordering::Relaxed) {
        0 => {
            let rmw = TYPES[i].get().filter(|t| defined(o, i, t)).and_then(|t| OneRmw::of(o, t.basic_type()?));
            let code = rmw.map_or(NO_ONE, |r| r as u8);
            cell.store(code, Ordering::Relaxed);
            code
        }
        c => c,
    };
    let Some(&rmw) = OneRmw::ALL.iter().find(|r| **r as u8 == code) else { return false };
    // SAFETY: the caller's origin buffer holds one element of `dt`, which
    // is `rmw`'s size (OneRmw::of).
    unsafe { f.accumulate_one(rank, disp as i64, addr as *const u8, rmw) }
}

/// MPI_Accumulate (`result` None) or MPI_Get_accumulate/MPI_Fetch_and_op
/// of `count` items of the dense predefined `dt` on both sides: the call's
/// return code once done here, None for the ordinary path.
#[allow(clippy::too_many_arguments)]
pub fn accumulate(name: &'static str, win: MPI_Win, addr: *const c_void, count: i64, dt: MPI_Datatype, rank: c_int, disp: MPI_Aint, op: MPI_Op, result: Option<*mut c_void>) -> Option<c_int> {
    let f = window(win)?;
    let o = super::op::predefined_op(op)?;
    if o == Op::NoOp && result.is_none() {
        return None;
    }
    dense_size(dt)?;
    let i = (dt & 0xff) as usize;
    let t = TYPES[i].get()?;
    if !defined(o, i, t) {
        return None;
    }
    let count = u64::try_from(count).ok()?;
    let len = usize::try_from(count.checked_mul(t.size())?).ok()?;
    let data: &[u8] = if o == Op::NoOp {
        &[]
    } else if addr.is_null() {
        return None;
    } else {
        // SAFETY: the caller's origin buffer holds `count` items of `dt`.
        unsafe { std::slice::from_raw_parts(addr as *const u8, len) }
    };
    let old = match result {
        Some(p) if p.is_null() => return None,
        // SAFETY: the caller's result buffer holds as many; MPI forbids it
        // to overlap the origin buffer.
        Some(p) => Some(unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) }),
        None => None,
    };
    match f.accumulate(rank, disp as i64, data, count, t, o, old)? {
        Ok(()) => Some(MPI_SUCCESS),
        Err(e) => Some(api(name, Target::Win(win), || Err(err(MPI_ERR_OP, e)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A predefined handle is 0x4c00SSXX: the size byte must not keep it
    /// off the table (the first version masked it as 0x4c0000XX, so no
    /// call took this side and every test still passed).
    #[test]
    fn predefined_handles_are_found_by_their_index() {
        DENSE[(MPI_DOUBLE & 0xff) as usize].store(8, Ordering::Relaxed);
        DENSE[(MPI_INT & 0xff) as usize].store(4, Ordering::Relaxed);
        assert_eq!(dense_size(MPI_DOUBLE), Some(8));
        assert_eq!(dense_size(MPI_INT), Some(4));
        // Not predefined, or not dense: the ordinary path.
        assert_eq!(dense_size(MPI_DATATYPE_NULL), None);
        assert_eq!(dense_size(MPI_FLOAT_INT), None);
        assert_eq!(dense_size(handles::indirect(Kind::Datatype, 3)), None);
    }
}

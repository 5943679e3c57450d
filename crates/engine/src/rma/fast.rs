//! The one-sided calls an origin makes without the library's lock: puts,
//! gets and flushes on a window every member maps (shared.rs), in a
//! passive-target epoch.
//!
//! A put there is a copy into the target's mapping and a flush a memory
//! fence (shared.rs), so what costs is the call around them: the library's
//! lock, the handle lookups, the epoch bookkeeping. The engine keeps, per
//! such window, a [`FastWin`]: each member's mapping and whether an
//! operation to it may be done right now, that is, a lock or lock_all
//! epoch is open to it, its lock is held (the gate is open) and nothing
//! went to it as frames that a flush would have to wait for. The engine
//! updates that flag whenever an epoch call or an operation changes it
//! (under the lock); the shell reads it without the lock and does the
//! copy or the fence itself, or takes the ordinary path when the flag is
//! down (every error is found and said there).

use super::shared::{apply_into, Items, SharedCtl};
use super::Op;
use gridmpi_datatype::{BasicType, Datatype, TypeClass};
use gridmpi_wire::rma::{OpDesc, OpKind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

pub struct FastMember {
    /// Where the member's window is mapped here, its size and unit.
    direct: u64,
    size: u64,
    disp_unit: u64,
    /// An operation to it may be done now (see the module's doc).
    open: AtomicBool,
    /// No epoch of any kind is open to it (the engine's view): a lock
    /// may be taken here.
    lockable: AtomicBool,
    /// A lock this side took and the engine does not know of yet
    /// ([`HELD_SHARED`], [`HELD_EXCLUSIVE`]; 0: none): the engine takes it
    /// over at its next call on the window ([`FastWin::take_held`]).
    held: AtomicU8,
}

pub const HELD_SHARED: u8 = 1;
pub const HELD_EXCLUSIVE: u8 = 2;

pub struct FastWin {
    members: Box<[FastMember]>,
    /// The members' accumulate mutexes (shared.rs).
    ctl: Arc<dyn SharedCtl>,
    /// Plain stores (puts, elements no CPU atomic covers) since the last
    /// flush: a flush then fences; operations that were all CPU atomics
    /// are complete and ordered already.
    stored: AtomicBool,
}

impl FastWin {
    pub(crate) fn new(members: impl Iterator<Item = (u64, u64, u64)>, ctl: Arc<dyn SharedCtl>) -> FastWin {
        let members = members
            .map(|(direct, size, disp_unit)| FastMember {
                direct,
                size,
                disp_unit,
                open: AtomicBool::new(false),
                lockable: AtomicBool::new(false),
                held: AtomicU8::new(0),
            })
            .collect();
        FastWin { members, ctl, stored: AtomicBool::new(false) }
    }

    pub(crate) fn set_open(&self, rank: usize, open: bool, lockable: bool) {
        let m = &self.members[rank];
        m.open.store(open, Ordering::Release);
        m.lockable.store(lockable, Ordering::Release);
    }

    /// The ordinary path may have stored into the window: the next flush
    /// here fences.
    pub(crate) fn mark_stored(&self) {
        self.stored.store(true, Ordering::Relaxed);
    }

    pub(crate) fn close_all(&self) {
        for m in self.members.iter() {
            m.open.store(false, Ordering::Release);
            m.lockable.store(false, Ordering::Release);
        }
    }

    /// A lock this side took at `rank` (handed over to the engine, which
    /// keeps it from now on).
    pub(crate) fn take_held(&self, rank: usize) -> u8 {
        self.members[rank].held.swap(0, Ordering::AcqRel)
    }

    /// MPI_Win_lock without MPI_MODE_NOCHECK: true once the lock is held
    /// (it was free), false when the ordinary path must take the call
    /// (another epoch, or the lock is not free now: it waits there).
    pub fn lock(&self, rank: i32, exclusive: bool) -> bool {
        let Some(m) = usize::try_from(rank).ok().and_then(|r| self.members.get(r)) else { return false };
        if !m.lockable.load(Ordering::Acquire) || m.held.load(Ordering::Acquire) != 0 {
            return false;
        }
        let word = self.ctl.lock_word(rank as usize);
        let got = if exclusive { super::shared::try_lock_exclusive_now(word) } else { super::shared::try_lock_shared(word) };
        if !got {
            return false;
        }
        m.held.store(if exclusive { HELD_EXCLUSIVE } else { HELD_SHARED }, Ordering::Release);
        m.lockable.store(false, Ordering::Release);
        m.open.store(true, Ordering::Release);
        true
    }

    /// MPI_Win_unlock of a lock this side took (and the engine has not
    /// taken over): our stores are published and the lock released. False:
    /// the ordinary path takes the call.
    pub fn unlock(&self, rank: i32) -> bool {
        let Some(m) = usize::try_from(rank).ok().and_then(|r| self.members.get(r)) else { return false };
        let held = m.held.load(Ordering::Acquire);
        if held == 0 {
            return false;
        }
        m.open.store(false, Ordering::Release);
        m.held.store(0, Ordering::Release);
        self.stored.store(false, Ordering::Relaxed);
        super::shared::publish();
        let word = self.ctl.lock_word(rank as usize);
        if held == HELD_EXCLUSIVE {
            super::shared::unlock_exclusive(word);
        } else {
            super::shared::unlock_shared(word);
        }
        m.lockable.store(true, Ordering::Release);
        true
    }

    /// Where `len` bytes at displacement `disp` of `rank`'s window are
    /// mapped here, if an operation to `rank` may be done now and they lie
    /// within its window.
    fn place(&self, rank: i32, disp: i64, len: u64) -> Option<*mut u8> {
        let m = self.members.get(usize::try_from(rank).ok()?)?;
        if !m.open.load(Ordering::Acquire) || disp < 0 {
            return None;
        }
        let off = (disp as u64).checked_mul(m.disp_unit)?;
        if off.checked_add(len)? > m.size {
            return None;
        }
        Some((m.direct + off) as *mut u8)
    }

    /// MPI_Put of `len` contiguous bytes at `src`: true once done; false
    /// when the ordinary path must take it.
    ///
    /// # Safety
    /// `src` must hold `len` readable bytes.
    pub unsafe fn put(&self, rank: i32, disp: i64, src: *const u8, len: u64) -> bool {
        let Some(to) = self.place(rank, disp, len) else { return false };
        self.stored.store(true, Ordering::Relaxed);
        // SAFETY: `to` lies within the target's mapped window (checked);
        // the caller's buffer is valid; they do not overlap in a correct
        // program (that would be a conflicting access).
        std::ptr::copy_nonoverlapping(src, to, len as usize);
        true
    }

    /// MPI_Get of `len` contiguous bytes into `dst` (as [`FastWin::put`]).
    ///
    /// # Safety
    /// `dst` must hold `len` writable bytes.
    pub unsafe fn get(&self, rank: i32, disp: i64, dst: *mut u8, len: u64) -> bool {
        let Some(from) = self.place(rank, disp, len) else { return false };
        std::ptr::copy_nonoverlapping(from, dst, len as usize);
        true
    }

    /// MPI_Accumulate of `count` items of the predefined `dt` (dense, so
    /// `data` is them; empty for MPI_NO_OP) with `op`, or with `old`,
    /// MPI_Get_accumulate / MPI_Fetch_and_op (the old items written there):
    /// element-wise atomic as shared.rs does them. `Some(Ok(()))` once
    /// done, `None` when the ordinary path must take it, `Some(Err)` when
    /// the operation failed (the caller checked `op` suits `dt`, so it
    /// does not).
    pub fn accumulate(&self, rank: i32, disp: i64, data: &[u8], count: u64, dt: &Arc<Datatype>, op: Op, old: Option<&mut [u8]>) -> Option<Result<(), String>> {
        let len = count.checked_mul(dt.size())?;
        let data_ok = if op == Op::NoOp { data.is_empty() && old.is_some() } else { data.len() as u64 == len };
        if count == 0 || !data_ok || old.as_ref().is_some_and(|o| o.len() as u64 != len) {
            return None;
        }
        let at = self.place(rank, disp, len)?;
        let kind = match (&old, count) {
            (None, _) => OpKind::Accumulate,
            (Some(_), 1) => OpKind::FetchAndOp,
            (Some(_), _) => OpKind::GetAccumulate,
        };
        // One element, the commonest (a counter, a sum): straight to its atomic.
        if let (1, Some(b)) = (count, dt.basic_type()) {
            let mut scratch = [0u8; 8];
            let done = match old {
                Some(o) => super::shared::rmw_one(at, b, kind, op, data, o),
                None if (len as usize) <= scratch.len() => super::shared::rmw_one(at, b, kind, op, data, &mut scratch[..len as usize]),
                None => Ok(false),
            };
            return match done {
                Ok(true) => Some(Ok(())),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            };
        }
        self.stored.store(true, Ordering::Relaxed);
        let d = OpDesc { kind, op: Some(super::origin::op_index(op)), count, packed_at: 0, packed_len: len, piece_type: false };
        let mem = Items { addr: at as u64, count, dt };
        Some(apply_into(&d, Some(op), mem, data, self.ctl.acc_mutex(rank as usize), old))
    }

    /// MPI_Accumulate of the one element at `src` with `rmw`: true once
    /// done, false when the ordinary path must take it (no operation to
    /// `rank` may be done now, or the element is outside the window or
    /// not aligned for its atomic).
    ///
    /// # Safety
    /// `src` must hold one readable element of `rmw`'s size.
    pub unsafe fn accumulate_one(&self, rank: i32, disp: i64, src: *const u8, rmw: OneRmw) -> bool {
        let size = rmw.size();
        let Some(at) = self.place(rank, disp, size) else { return false };
        if (at as usize) & (size as usize - 1) != 0 {
            return false;
        }
        // SAFETY (all arms): `at` is aligned and lies within the target's
        // window, mapped for the window's life and changed only atomically
        // by accumulates; `src` holds one element (the caller's promise).
        match rmw {
            OneRmw::AddF64 => {
                let a = AtomicU64::from_ptr(at as *mut u64);
                let y = std::ptr::read_unaligned(src as *const f64);
                let mut cur = a.load(Ordering::Relaxed);
                while let Err(x) = a.compare_exchange_weak(cur, (f64::from_bits(cur) + y).to_bits(), Ordering::AcqRel, Ordering::Relaxed) {
                    cur = x;
                }
            }
            OneRmw::AddF32 => {
                let a = AtomicU32::from_ptr(at as *mut u32);
                let y = std::ptr::read_unaligned(src as *const f32);
                let mut cur = a.load(Ordering::Relaxed);
                while let Err(x) = a.compare_exchange_weak(cur, (f32::from_bits(cur) + y).to_bits(), Ordering::AcqRel, Ordering::Relaxed) {
                    cur = x;
                }
            }
            OneRmw::AddInt64 => {
                AtomicU64::from_ptr(at as *mut u64).fetch_add(std::ptr::read_unaligned(src as *const u64), Ordering::AcqRel);
            }
            OneRmw::AddInt32 => {
                AtomicU32::from_ptr(at as *mut u32).fetch_add(std::ptr::read_unaligned(src as *const u32), Ordering::AcqRel);
            }
            OneRmw::Swap64 => {
                AtomicU64::from_ptr(at as *mut u64).swap(std::ptr::read_unaligned(src as *const u64), Ordering::AcqRel);
            }
            OneRmw::Swap32 => {
                AtomicU32::from_ptr(at as *mut u32).swap(std::ptr::read_unaligned(src as *const u32), Ordering::AcqRel);
            }
        }
        true
    }

    /// MPI_Win_flush(_local) of `rank`, or of every member (`None`): true
    /// once done (the stores are published).
    pub fn flush(&self, rank: Option<i32>) -> bool {
        let open = match rank {
            Some(r) => usize::try_from(r).ok().and_then(|r| self.members.get(r)).is_some_and(|m| m.open.load(Ordering::Acquire)),
            None => self.members.iter().all(|m| m.open.load(Ordering::Acquire)),
        };
        if open && self.stored.load(Ordering::Relaxed) {
            self.stored.store(false, Ordering::Relaxed);
            super::shared::publish();
        }
        open
    }
}

/// A one-element accumulate that is a single CPU atomic (or one
/// compare-exchange loop), known before the call from the operation and
/// the type alone: the commonest accumulates (a counter, a sum of doubles,
/// a replace), done by [`FastWin::accumulate_one`] without the general
/// road's lookups. Each is the very atomic shared.rs's `atomic_rmw!` does
/// on such an element, so origins on either road agree.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum OneRmw {
    AddF64 = 1,
    AddF32,
    AddInt64,
    AddInt32,
    Swap64,
    Swap32,
}

impl OneRmw {
    pub const ALL: [OneRmw; 6] = [OneRmw::AddF64, OneRmw::AddF32, OneRmw::AddInt64, OneRmw::AddInt32, OneRmw::Swap64, OneRmw::Swap32];

    /// The atomic that does `op` on one element of `b`, if one does.
    pub fn of(op: Op, b: BasicType) -> Option<OneRmw> {
        let wide = match b.size() {
            8 => true,
            4 => false,
            _ => return None,
        };
        Some(match (op, b.class()) {
            (Op::Sum, TypeClass::Float) if wide => OneRmw::AddF64,
            (Op::Sum, TypeClass::Float) => OneRmw::AddF32,
            (Op::Sum, TypeClass::SignedInt | TypeClass::UnsignedInt) if wide => OneRmw::AddInt64,
            (Op::Sum, TypeClass::SignedInt | TypeClass::UnsignedInt) => OneRmw::AddInt32,
            (Op::Replace, _) if wide => OneRmw::Swap64,
            (Op::Replace, _) => OneRmw::Swap32,
            _ => return None,
        })
    }

    fn size(self) -> u64 {
        match self {
            OneRmw::AddF64 | OneRmw::AddInt64 | OneRmw::Swap64 => 8,
            OneRmw::AddF32 | OneRmw::AddInt32 | OneRmw::Swap32 => 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rma::LocalCtl;

    /// Each one-element atomic leaves the element as the general road's
    /// atomic does (rmw_one), and refuses what it must leave to the
    /// ordinary path: a closed member, a misaligned or outside element.
    #[test]
    fn one_element_atomics_match_the_general_road() {
        let cases: [(BasicType, Op, u64, u64); 8] = [
            (BasicType::Double, Op::Sum, 1.5f64.to_bits(), 2.25f64.to_bits()),
            (BasicType::Float, Op::Sum, 1.5f32.to_bits() as u64, 0.75f32.to_bits() as u64),
            (BasicType::Long, Op::Sum, u64::MAX - 3, 10),
            (BasicType::Int, Op::Sum, 0xffff_fffe, 5),
            (BasicType::UnsignedLong, Op::Replace, 7, 9),
            (BasicType::Int, Op::Replace, 7, 9),
            (BasicType::Double, Op::Max, 0, 0),
            (BasicType::Char, Op::Sum, 0, 0),
        ];
        for (b, op, start, add) in cases {
            let Some(rmw) = OneRmw::of(op, b) else {
                assert!(matches!(op, Op::Max) || b.size() == 1, "{b:?} {op:?} has an atomic");
                continue;
            };
            assert_eq!(rmw.size(), b.size() as u64);
            let s = b.size();
            let mut mem = [0u64; 4];
            let base = mem.as_mut_ptr() as *mut u8;
            let win = FastWin::new(std::iter::once((base as u64, 32, 1)), Arc::new(LocalCtl::new(1)));
            let input = &add.to_ne_bytes()[..s];
            // SAFETY: `mem` outlives the window; the elements are in it.
            unsafe {
                assert!(!win.accumulate_one(0, 8, input.as_ptr(), rmw), "closed member");
                win.set_open(0, true, false);
                std::ptr::copy_nonoverlapping(start.to_ne_bytes().as_ptr(), base.add(8), s);
                std::ptr::copy_nonoverlapping(start.to_ne_bytes().as_ptr(), base.add(16), s);
                assert!(win.accumulate_one(0, 8, input.as_ptr(), rmw));
                let mut old = vec![0u8; s];
                assert_eq!(super::super::shared::rmw_one(base.add(16), b, OpKind::Accumulate, op, input, &mut old), Ok(true));
                assert_eq!(std::slice::from_raw_parts(base.add(8), s), std::slice::from_raw_parts(base.add(16), s), "{b:?} {op:?}");
                assert!(!win.accumulate_one(0, 1, input.as_ptr(), rmw), "misaligned");
                assert!(!win.accumulate_one(0, 32 - s as i64 + 4, input.as_ptr(), rmw), "past the window");
                assert!(!win.accumulate_one(0, -8, input.as_ptr(), rmw), "before the window");
            }
        }
    }
}

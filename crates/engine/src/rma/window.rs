//! The window registry: what each window exposes here, what this process
//! knows of the other members' windows, and the bounds checks that every
//! access passes before memory is touched.

use super::lock::{LockKind, LockManager};
use super::shared::SharedCtl;
use super::{RmaError, RmaErrorKind, WinId};
use crate::engine::ProtocolError;
use crate::request::ReqId;
use crate::Engine;
use gridmpi_datatype::Datatype;
use gridmpi_wire::{Header, Payload, Pid};
use std::collections::HashMap;
use std::sync::Arc;

/// How a window's memory came to be (MPI_WIN_CREATE_FLAVOR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Create,
    Allocate,
    /// Shared memory among the members (all on one host).
    Shared,
    /// No memory until attached; displacements are addresses.
    Dynamic,
}

/// Memory at `base` (an address in the owning process), `len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub base: u64,
    pub len: u64,
}

impl Region {
    /// Whether bytes `[lo, hi)` (addresses) lie inside.
    fn holds(&self, lo: i128, hi: i128) -> bool {
        lo >= self.base as i128 && hi <= self.base as i128 + self.len as i128
    }

    fn end(&self) -> i128 {
        self.base as i128 + self.len as i128
    }
}

/// Whether the attached `regions` together hold bytes `[lo, hi)`: one
/// operation may span attachments that touch (MPI asks only that the
/// memory be attached).
fn attached(regions: &[Region], lo: i128, hi: i128) -> bool {
    if lo == hi {
        return regions.iter().any(|r| r.holds(lo, hi));
    }
    let mut at = lo;
    while at < hi {
        // The region holding `at` that reaches furthest.
        match regions.iter().filter(|r| r.base as i128 <= at && at < r.end()).map(Region::end).max() {
            Some(end) => at = end,
            None => return false,
        }
    }
    true
}

/// What this process knows of a member's window.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemberInfo {
    pub size: u64,
    pub disp_unit: u64,
    /// The window's base in the member's address space.
    pub base: u64,
    /// For shared memory: where the member's window is mapped here.
    pub direct: Option<u64>,
}

/// A new window's settings.
#[derive(Clone)]
pub struct WinConfig {
    /// The context id the members agreed (the window's id); `ctx + 1` is
    /// used for its barriers.
    pub ctx: u32,
    /// Our rank among the members.
    pub rank: i32,
    /// The members' pids, by rank.
    pub pids: Arc<[Pid]>,
    pub flavor: Flavor,
    /// The memory we expose (none for a dynamic window).
    pub memory: Option<Region>,
    /// For a window every member maps (all on one host): its control
    /// words, and then operations and locks bypass the targets' engines
    /// (see [`super::shared`]). Every member must pass one, or none.
    pub shared: Option<Arc<dyn SharedCtl>>,
}

/// The gate of operations from here to one target: they leave when it is
/// open, and wait (as ready frames) while the epoch's permission is on its
/// way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    Open,
    /// A lock was asked for and not yet granted.
    AwaitGrant,
    /// PSCW: the target has not posted yet.
    AwaitPost,
}

/// Origin side: our epoch state towards one target.
pub(crate) struct TargetState {
    pub(crate) gate: Gate,
    /// A lock we hold (or asked for) at the target; `Some((_, false))` for
    /// a lock taken with MPI_MODE_NOCHECK (nothing to release there).
    pub(crate) lock: Option<(LockKind, bool)>,
    /// Operations ready to leave when the gate opens.
    pub(crate) queued: Vec<(Header, Payload)>,
    /// Operations sent since the last flush was asked for.
    pub(crate) dirty: bool,
    /// Sequence numbers of flushes (and unlocks) asked for and answered.
    pub(crate) flush_asked: u64,
    pub(crate) flush_done: u64,
    /// Receives of data coming back from the target.
    pub(crate) gets: Vec<ReqId>,
    /// A shared-memory window: we count among the target's waiting
    /// exclusive lockers (see [`super::shared::try_lock_exclusive`]).
    pub(crate) shm_waiting: bool,
    /// Operations the target reported failed, not yet reported to the user.
    pub(crate) failures: u64,
}

impl TargetState {
    fn new() -> TargetState {
        TargetState {
            gate: Gate::Open,
            lock: None,
            queued: Vec::new(),
            dirty: false,
            flush_asked: 0,
            flush_done: 0,
            gets: Vec::new(),
            shm_waiting: false,
            failures: 0,
        }
    }
}

/// Target side: what we know of one origin.
#[derive(Default)]
pub(crate) struct OriginState {
    /// Its operations that failed here since the last flush answered.
    pub(crate) failures: u64,
    /// MPI_Win_complete calls received and not yet consumed by a wait.
    pub(crate) completes: u32,
    /// MPI_Win_post calls of this member (as target) not yet consumed by
    /// our start.
    pub(crate) posts: u32,
}

pub(crate) struct Window {
    pub(crate) ctx: u32,
    pub(crate) rank: i32,
    pub(crate) pids: Arc<[Pid]>,
    pub(crate) rank_of: HashMap<Pid, i32>,
    pub(crate) flavor: Flavor,
    /// Memory exposed here: one region, or the attached ones.
    pub(crate) regions: Vec<Region>,
    pub(crate) members: Vec<MemberInfo>,
    pub(crate) targets: Vec<TargetState>,
    pub(crate) origins: Vec<OriginState>,
    pub(crate) locks: LockManager,
    /// A fence opened an epoch (and none closed it with MPI_MODE_NOSUCCEED).
    pub(crate) fence_open: bool,
    /// PSCW access epoch: the targets of MPI_Win_start.
    pub(crate) access: Option<Vec<i32>>,
    /// PSCW exposure epoch: the origins of MPI_Win_post.
    pub(crate) exposure: Option<Vec<i32>>,
    /// MPI_Win_lock_all is in force.
    pub(crate) lock_all: bool,
    /// Tag of the next barrier on `ctx + 1`.
    pub(crate) barrier_seq: i32,
    /// Every member's memory is mapped here: the control words (see
    /// [`super::shared`]); None until the members are known.
    pub(crate) shared: Option<Arc<dyn SharedCtl>>,
    /// The control words as configured, used once every member's mapping
    /// is known.
    shared_cfg: Option<Arc<dyn SharedCtl>>,
    /// With `shared`: what the shell may do without the lock (fast.rs).
    pub(crate) fast: Option<Arc<super::FastWin>>,
}

impl Window {
    pub(crate) fn size(&self) -> i32 {
        self.pids.len() as i32
    }

    pub(crate) fn check_rank(&self, rank: i32) -> Result<(), RmaError> {
        if rank < 0 || rank >= self.size() {
            return Err(RmaError::new(RmaErrorKind::Rank, format!("invalid target rank {rank} (the window has {} members)", self.size())));
        }
        Ok(())
    }

    /// The bytes `count` items of `dt` span, relative to their start:
    /// `[lo, hi)`, exactly (in 128 bits).
    pub(crate) fn span(count: u64, dt: &Datatype) -> (i128, i128) {
        if count == 0 || dt.size() == 0 {
            return (0, 0);
        }
        let last = (count as i128 - 1) * dt.extent() as i128;
        let lo = dt.true_lb() as i128 + last.min(0);
        let hi = dt.true_ub() as i128 + last.max(0);
        (lo, hi)
    }

    /// Origin-side check that `count` items of `dt` at `disp` fit in the
    /// window of `rank`; returns the byte offset. Dynamic windows are
    /// checked by the target (only it knows what is attached).
    pub(crate) fn target_offset(&self, rank: i32, disp: u64, count: u64, dt: &Datatype) -> Result<u64, RmaError> {
        let m = &self.members[rank as usize];
        if self.flavor == Flavor::Dynamic {
            return Ok(disp);
        }
        let off = disp as i128 * m.disp_unit as i128;
        let (lo, hi) = Self::span(count, dt);
        if lo == hi {
            return Ok(off.clamp(0, u64::MAX as i128) as u64);
        }
        if off + lo < 0 || off + hi > m.size as i128 || off > u64::MAX as i128 {
            return Err(RmaError::new(
                RmaErrorKind::Range,
                format!(
                    "target displacement {disp} (x disp_unit {}) with {count} item(s) of a {}-byte datatype reaches bytes {}..{} of rank {rank}'s window of {} bytes",
                    m.disp_unit,
                    dt.size(),
                    off + lo,
                    off + hi,
                    m.size
                ),
            ));
        }
        Ok(off as u64)
    }

    /// Target-side: the address of `count` items of `dt` at byte `offset`
    /// of our window, if every byte they span is exposed here.
    pub(crate) fn local_address(&self, offset: u64, count: u64, dt: &Datatype) -> Option<u64> {
        let (lo, hi) = Self::span(count, dt);
        match self.flavor {
            Flavor::Dynamic => {
                let (a, b) = (offset as i128 + lo, offset as i128 + hi);
                attached(&self.regions, a, b).then_some(offset)
            }
            _ => {
                let r = self.regions.first().copied().unwrap_or(Region { base: 0, len: 0 });
                let (a, b) = (offset as i128 + lo, offset as i128 + hi);
                (a >= 0 && b <= r.len as i128 && lo != hi).then(|| r.base.wrapping_add(offset))
            }
        }
    }
}

impl Engine {
    /// Register a window. From now on frames naming it are accepted; the
    /// members' details follow with [`Engine::win_set_members`] once they
    /// are exchanged. (Register before sending our details to the others:
    /// then no member can address us before we know the window.)
    pub fn win_create(&mut self, cfg: WinConfig) -> WinId {
        let n = cfg.pids.len();
        let rank_of = cfg.pids.iter().enumerate().map(|(r, &p)| (p, r as i32)).collect();
        let w = Window {
            ctx: cfg.ctx,
            rank: cfg.rank,
            pids: cfg.pids,
            rank_of,
            flavor: cfg.flavor,
            regions: cfg.memory.into_iter().collect(),
            members: vec![MemberInfo::default(); n],
            targets: (0..n).map(|_| TargetState::new()).collect(),
            origins: (0..n).map(|_| OriginState::default()).collect(),
            locks: LockManager::default(),
            fence_open: false,
            access: None,
            exposure: None,
            lock_all: false,
            barrier_seq: 0,
            shared: None,
            shared_cfg: cfg.shared,
            fast: None,
        };
        let prev = self.rma.windows.insert(cfg.ctx, w);
        assert!(prev.is_none(), "window context {} registered twice", cfg.ctx);
        WinId(cfg.ctx)
    }

    /// What every member exposes (by rank), as exchanged by the members.
    pub fn win_set_members(&mut self, win: WinId, members: Vec<MemberInfo>) {
        let w = self.rma.windows.get_mut(&win.0).expect("a registered window");
        assert_eq!(members.len(), w.pids.len());
        // The shortcut needs every member's memory mapped here.
        w.shared = w.shared_cfg.take().filter(|_| members.iter().all(|m| m.direct.is_some()));
        if let (Some(ctl), false) = (w.shared.clone(), w.flavor == Flavor::Dynamic) {
            w.fast = Some(Arc::new(super::FastWin::new(members.iter().map(|m| (m.direct.unwrap_or(0), m.size, m.disp_unit)), ctl)));
        }
        w.members = members;
    }

    /// The window's lock-free side (fast.rs), for a window in shared memory.
    pub fn win_fast(&self, win: WinId) -> Option<Arc<super::FastWin>> {
        self.rma.windows.get(&win.0).and_then(|w| w.fast.clone())
    }

    /// Say again, for the lock-free side, to which members an operation
    /// may be done now (after anything that changes an epoch or sends
    /// frames).
    pub fn refresh_fast(&self, win: WinId) {
        let Some(w) = self.rma.windows.get(&win.0) else { return };
        let Some(f) = w.fast.as_deref() else { return };
        f.mark_stored();
        for r in 0..w.size() {
            let t = &w.targets[r as usize];
            let open = w.passive_to(r) && t.gate == Gate::Open && w.quiet(r);
            // After a fence a lock goes the ordinary road, which ends
            // the fence's (unused) epoch (epoch.rs, win_lock).
            let lockable = !w.lock_all && t.lock.is_none() && w.access.is_none() && !w.fence_open;
            f.set_open(r as usize, open, lockable);
        }
    }

    /// Before any call on the window under the lock: locks the lock-free
    /// side took (fast.rs) become the engine's own, held as if
    /// MPI_Win_lock had taken them here.
    pub fn absorb_fast(&mut self, win: WinId) {
        let Some(w) = self.rma.windows.get_mut(&win.0) else { return };
        let Some(f) = w.fast.clone() else { return };
        for r in 0..w.size() as usize {
            let kind = match f.take_held(r) {
                super::fast::HELD_SHARED => LockKind::Shared,
                super::fast::HELD_EXCLUSIVE => LockKind::Exclusive,
                _ => continue,
            };
            let t = &mut w.targets[r];
            t.lock = Some((kind, true));
            t.gate = Gate::Open;
        }
    }

    pub(crate) fn window(&self, win: WinId) -> Result<&Window, RmaError> {
        self.rma.windows.get(&win.0).ok_or_else(|| RmaError::new(RmaErrorKind::Win, format!("no window {}", win.0)))
    }

    pub(crate) fn window_mut(&mut self, win: WinId) -> Result<&mut Window, RmaError> {
        self.rma.windows.get_mut(&win.0).ok_or_else(|| RmaError::new(RmaErrorKind::Win, format!("no window {}", win.0)))
    }

    /// The window a frame from `from` names, and `from`'s rank in it.
    pub(crate) fn frame_window(&mut self, from: Pid, win: u32) -> Result<(&mut Window, i32), ProtocolError> {
        let err = |reason: String| ProtocolError { peer: from, reason };
        let w = self.rma.windows.get_mut(&win).ok_or_else(|| err(format!("one-sided frame for unknown window {win}")))?;
        let r = *w.rank_of.get(&from).ok_or_else(|| err(format!("one-sided frame for window {win}, of which it is not a member")))?;
        Ok((w, r))
    }

    /// MPI_Win_attach: expose `region` of our memory in a dynamic window.
    pub fn win_attach(&mut self, win: WinId, region: Region) -> Result<(), RmaError> {
        let w = self.window_mut(win)?;
        if w.flavor != Flavor::Dynamic {
            return Err(RmaError::new(RmaErrorKind::Flavor, "only windows made by MPI_Win_create_dynamic take attached memory"));
        }
        let (a, b) = (region.base as u128, region.base as u128 + region.len as u128);
        if let Some(o) = w.regions.iter().find(|r| (r.base as u128) < b && a < r.base as u128 + r.len as u128) {
            return Err(RmaError::new(
                RmaErrorKind::Attach,
                format!("memory at {:#x} (+{}) overlaps memory already attached at {:#x} (+{})", region.base, region.len, o.base, o.len),
            ));
        }
        w.regions.push(region);
        Ok(())
    }

    /// MPI_Win_detach: stop exposing the region attached at `base`.
    pub fn win_detach(&mut self, win: WinId, base: u64) -> Result<(), RmaError> {
        let w = self.window_mut(win)?;
        if w.flavor != Flavor::Dynamic {
            return Err(RmaError::new(RmaErrorKind::Flavor, "only windows made by MPI_Win_create_dynamic have attached memory"));
        }
        let i = w
            .regions
            .iter()
            .position(|r| r.base == base)
            .ok_or_else(|| RmaError::new(RmaErrorKind::Attach, format!("no memory is attached at {base:#x}")))?;
        w.regions.remove(i);
        Ok(())
    }

    /// The size and displacement unit of a member's window, and where it is
    /// mapped here for a window of shared memory (MPI_Win_shared_query).
    pub fn win_member(&self, win: WinId, rank: i32) -> Result<MemberInfo, RmaError> {
        let w = self.window(win)?;
        w.check_rank(rank)?;
        Ok(w.members[rank as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_may_span_attachments_that_touch() {
        let r = |base, len| Region { base, len };
        let regions = [r(100, 50), r(150, 50), r(300, 10)];
        assert!(attached(&regions, 120, 180), "across two touching regions");
        assert!(attached(&regions, 100, 200));
        assert!(!attached(&regions, 190, 210), "past the second");
        assert!(!attached(&regions, 195, 305), "over the gap");
        assert!(attached(&regions, 300, 310));
        assert!(!attached(&regions, 90, 110), "before the first");
        // Overlapping attachments count too.
        assert!(attached(&[r(0, 100), r(50, 100)], 10, 140));
    }
}

//! Epochs: fence, post-start-complete-wait, lock/unlock, lock_all, flushes
//! and freeing, with the misuse checks of each (MPI_ERR_RMA_SYNC).
//!
//! A call that must wait returns a request; its state is a [`SyncCall`]
//! that [`Engine::progress_rma`] advances as answers come: a flush asks
//! each target it covers once that target's gate is open (the operations
//! before the ask have left then) and is done when every ask is answered
//! and every get has landed; unlock is a flush that also releases the
//! lock; complete is a flush followed by `Complete`; fence flushes every
//! target then runs a barrier among the members.

use super::lock::LockKind;
use super::shared::SharedCtl;
use super::window::{Gate, Window};
use super::{RmaError, RmaErrorKind, WinId};
use crate::request::{ReqId, Status};
use crate::Engine;
use gridmpi_wire::RmaSync;

/// A flush of one target: not asked yet (its gate is closed), or asked
/// with this sequence number.
type Flushing = Vec<(i32, Option<u64>)>;

pub(crate) enum SyncWhat {
    /// MPI_Win_flush(_all), and the first half of fence; `local`: only
    /// local completion (MPI_Win_flush_local).
    Flush { targets: Flushing, local: bool },
    /// MPI_Win_unlock(_all): flush and release.
    Unlock { targets: Flushing, all: bool },
    /// MPI_Win_complete: flush, then tell the target.
    Complete { targets: Flushing },
    /// MPI_Win_fence: flush all, then a barrier.
    Fence { flush: Flushing, barrier: Option<ReqId> },
    /// MPI_Win_wait: every origin completed.
    Wait { origins: Vec<i32> },
    /// MPI_Win_lock(_all) that must hold the lock before returning.
    Grants { targets: Vec<i32> },
    /// MPI_Win_free: the barrier.
    Free { barrier: ReqId },
}

pub(crate) struct SyncCall {
    pub(crate) req: ReqId,
    pub(crate) win: u32,
    pub(crate) what: SyncWhat,
}

/// Try to take `kind` of lock at `rank`'s lock word in shared memory.
fn try_lock_shm(ctl: &dyn SharedCtl, rank: i32, kind: LockKind, waiting: &mut bool) -> bool {
    let word = ctl.lock_word(rank as usize);
    match kind {
        LockKind::Shared => super::shared::try_lock_shared(word),
        LockKind::Exclusive => super::shared::try_lock_exclusive(word, waiting),
    }
}

fn sync_err(msg: impl Into<String>) -> RmaError {
    RmaError::new(RmaErrorKind::Sync, msg)
}

impl Window {
    pub(crate) fn passive_to(&self, rank: i32) -> bool {
        self.lock_all || self.targets[rank as usize].lock.is_some()
    }

    fn any_lock(&self) -> bool {
        self.lock_all || self.targets.iter().any(|t| t.lock.is_some())
    }

    /// Whether a flush of `rank` would be over at once: ourselves, or
    /// nothing sent as frames is unanswered.
    pub(crate) fn quiet(&self, rank: i32) -> bool {
        let t = &self.targets[rank as usize];
        rank == self.rank || (t.gate == Gate::Open && !t.dirty && t.gets.is_empty() && t.flush_done == t.flush_asked && t.failures == 0)
    }

    /// Targets other than us that a flush must ask.
    fn others(&self, ranks: impl IntoIterator<Item = i32>) -> Flushing {
        ranks.into_iter().filter(|&r| r != self.rank).map(|r| (r, None)).collect()
    }
}

impl Engine {
    fn new_sync(&mut self, win: WinId, what: SyncWhat) -> ReqId {
        let req = self.external_request();
        self.rma.syncs.push(SyncCall { req, win: win.0, what });
        self.progress_rma();
        req
    }

    /// MPI_Win_fence. `nosucceed`: MPI_MODE_NOSUCCEED (no epoch follows).
    pub fn win_fence(&mut self, win: WinId, nosucceed: bool) -> Result<ReqId, RmaError> {
        let w = self.window_mut(win)?;
        if w.access.is_some() || w.exposure.is_some() || w.any_lock() {
            return Err(sync_err("a post-start-complete-wait or lock epoch is open on this window"));
        }
        w.fence_open = !nosucceed;
        let flush = w.others(0..w.size());
        Ok(self.new_sync(win, SyncWhat::Fence { flush, barrier: None }))
    }

    /// MPI_Win_start: an access epoch to `group` (ranks of the window).
    pub fn win_start(&mut self, win: WinId, group: &[i32], nocheck: bool) -> Result<(), RmaError> {
        let w = self.window_mut(win)?;
        for &r in group {
            w.check_rank(r)?;
        }
        if w.access.is_some() {
            return Err(sync_err("an access epoch (MPI_Win_start) is already open on this window"));
        }
        if w.any_lock() {
            return Err(sync_err("a lock epoch is open on this window"));
        }
        w.access = Some(group.to_vec());
        // A fence before it started no epoch (no call of one followed it):
        // one may only end with a fence again.
        w.fence_open = false;
        for &r in group {
            let o = &mut w.origins[r as usize];
            w.targets[r as usize].gate = if nocheck || r == w.rank {
                Gate::Open
            } else if o.posts > 0 {
                o.posts -= 1;
                Gate::Open
            } else {
                Gate::AwaitPost
            };
        }
        Ok(())
    }

    /// MPI_Win_complete.
    pub fn win_complete(&mut self, win: WinId) -> Result<ReqId, RmaError> {
        let w = self.window_mut(win)?;
        let group = w.access.take().ok_or_else(|| sync_err("no access epoch is open (MPI_Win_start was not called)"))?;
        let me = w.rank;
        if group.contains(&me) {
            w.origins[me as usize].completes += 1;
        }
        let targets = w.others(group);
        Ok(self.new_sync(win, SyncWhat::Complete { targets }))
    }

    /// MPI_Win_post: an exposure epoch to `group`.
    pub fn win_post(&mut self, win: WinId, group: &[i32], nocheck: bool) -> Result<(), RmaError> {
        let w = self.window_mut(win)?;
        for &r in group {
            w.check_rank(r)?;
        }
        if w.exposure.is_some() {
            return Err(sync_err("an exposure epoch (MPI_Win_post) is already open on this window"));
        }
        w.exposure = Some(group.to_vec());
        let (me, ctx, pids) = (w.rank, w.ctx, w.pids.clone());
        for &r in group {
            if r == me {
                continue;
            }
            if !nocheck {
                self.rma_sync_send(pids[r as usize], ctx, RmaSync::Post, 0, 0);
            }
        }
        Ok(())
    }

    /// MPI_Win_wait.
    pub fn win_wait(&mut self, win: WinId) -> Result<ReqId, RmaError> {
        let w = self.window_mut(win)?;
        let origins = w.exposure.clone().ok_or_else(|| sync_err("no exposure epoch is open (MPI_Win_post was not called)"))?;
        Ok(self.new_sync(win, SyncWhat::Wait { origins }))
    }

    /// MPI_Win_test: whether the exposure epoch is over (then it is closed).
    pub fn win_test(&mut self, win: WinId) -> Result<bool, RmaError> {
        let w = self.window_mut(win)?;
        let origins = w.exposure.clone().ok_or_else(|| sync_err("no exposure epoch is open (MPI_Win_post was not called)"))?;
        Ok(Self::try_end_exposure(w, &origins))
    }

    fn try_end_exposure(w: &mut Window, origins: &[i32]) -> bool {
        if !origins.iter().all(|&r| w.origins[r as usize].completes > 0) {
            return false;
        }
        for &r in origins {
            w.origins[r as usize].completes -= 1;
        }
        w.exposure = None;
        true
    }

    /// Ask for `kind` of lock at `rank`; whether the caller must wait for
    /// the grant before touching memory (its own window, shared memory).
    fn lock_one(&mut self, win: WinId, kind: LockKind, rank: i32, nocheck: bool) -> bool {
        let w = self.rma.windows.get_mut(&win.0).expect("checked by the caller");
        let (me, ctx, pid, direct) = (w.rank, w.ctx, w.pids[rank as usize], w.members[rank as usize].direct.is_some());
        let t = &mut w.targets[rank as usize];
        t.lock = Some((kind, !nocheck));
        if nocheck {
            t.gate = Gate::Open;
            return false;
        }
        if let Some(ctl) = w.shared.as_deref() {
            // Every locker is on this host: the target's lock word decides
            // (its own process included), and we wait until we hold it.
            let got = try_lock_shm(ctl, rank, kind, &mut t.shm_waiting);
            t.gate = if got { Gate::Open } else { Gate::AwaitGrant };
            return !got;
        }
        if rank == me {
            let granted = w.locks.request(me, kind);
            w.targets[me as usize].gate = if granted { Gate::Open } else { Gate::AwaitGrant };
            return !granted;
        }
        t.gate = Gate::AwaitGrant;
        let sync = if kind == LockKind::Shared { RmaSync::LockShared } else { RmaSync::LockExclusive };
        self.rma_sync_send(pid, ctx, sync, 0, 0);
        direct
    }

    /// MPI_Win_lock. Returns a request to wait for when the lock must be
    /// held before the call returns (our own window, shared memory); other
    /// operations simply wait for the grant before leaving.
    pub fn win_lock(&mut self, win: WinId, kind: LockKind, rank: i32, nocheck: bool) -> Result<Option<ReqId>, RmaError> {
        let w = self.window(win)?;
        w.check_rank(rank)?;
        if w.lock_all {
            return Err(sync_err("MPI_Win_lock_all is in force on this window"));
        }
        if w.targets[rank as usize].lock.is_some() {
            return Err(sync_err(format!("rank {rank}'s window is already locked by this process")));
        }
        if w.access.is_some() {
            return Err(sync_err("a post-start-complete-wait access epoch is open on this window"));
        }
        // As for MPI_Win_start: operations after the lock's epoch need a
        // fence (MPICH's errors/rma/win_sync_lock_fence).
        self.window_mut(win)?.fence_open = false;
        let wait = self.lock_one(win, kind, rank, nocheck);
        Ok(wait.then(|| self.new_sync(win, SyncWhat::Grants { targets: vec![rank] })))
    }

    /// MPI_Win_lock_all: a shared lock at every member.
    pub fn win_lock_all(&mut self, win: WinId, nocheck: bool) -> Result<Option<ReqId>, RmaError> {
        let w = self.window_mut(win)?;
        if w.any_lock() {
            return Err(sync_err("a lock epoch is already open on this window"));
        }
        if w.access.is_some() {
            return Err(sync_err("a post-start-complete-wait access epoch is open on this window"));
        }
        w.lock_all = true;
        w.fence_open = false;
        let n = w.size();
        let wait: Vec<i32> = (0..n).filter(|&r| self.lock_one(win, LockKind::Shared, r, nocheck)).collect();
        Ok((!wait.is_empty()).then(|| self.new_sync(win, SyncWhat::Grants { targets: wait })))
    }

    /// MPI_Win_unlock: a request to wait for, or None when it is over
    /// already (a window in shared memory with nothing in flight).
    pub fn win_unlock(&mut self, win: WinId, rank: i32) -> Result<Option<ReqId>, RmaError> {
        let w = self.window(win)?;
        w.check_rank(rank)?;
        if w.lock_all {
            return Err(sync_err("the window is locked with MPI_Win_lock_all (use MPI_Win_unlock_all)"));
        }
        if w.targets[rank as usize].lock.is_none() {
            return Err(sync_err(format!("rank {rank}'s window is not locked by this process")));
        }
        let quiet = w.shared.is_some() && w.quiet(rank);
        let mut s = SyncCall { req: ReqId(0), win: win.0, what: SyncWhat::Unlock { targets: vec![(rank, None)], all: false } };
        if quiet {
            // Nothing to wait for: publish and release now.
            let done = self.advance_sync(&mut s);
            debug_assert!(matches!(done, Some(Ok(()))), "a quiet unlock is over at once");
            return Ok(None);
        }
        Ok(Some(self.new_sync(win, s.what)))
    }

    /// MPI_Win_unlock_all (as [`Engine::win_unlock`]).
    pub fn win_unlock_all(&mut self, win: WinId) -> Result<Option<ReqId>, RmaError> {
        let w = self.window(win)?;
        if !w.lock_all {
            return Err(sync_err("MPI_Win_lock_all was not called on this window"));
        }
        let quiet = w.shared.is_some() && (0..w.size()).all(|r| w.quiet(r));
        let targets = (0..w.size()).map(|r| (r, None)).collect();
        let mut s = SyncCall { req: ReqId(0), win: win.0, what: SyncWhat::Unlock { targets, all: true } };
        if quiet {
            let done = self.advance_sync(&mut s);
            debug_assert!(matches!(done, Some(Ok(()))), "a quiet unlock is over at once");
            return Ok(None);
        }
        Ok(Some(self.new_sync(win, s.what)))
    }

    /// MPI_Win_flush(_local) of `rank`, or of every member (`None`): a
    /// request to wait for, or None when it is over already (nothing went
    /// as frames since the last flush: loads and stores, or nothing).
    pub fn win_flush(&mut self, win: WinId, rank: Option<i32>, local: bool) -> Result<Option<ReqId>, RmaError> {
        let w = self.window(win)?;
        let ranks: Vec<i32> = match rank {
            Some(r) => {
                w.check_rank(r)?;
                if !w.passive_to(r) {
                    return Err(sync_err(format!("no passive-target epoch is open for rank {r} (call MPI_Win_lock first)")));
                }
                vec![r]
            }
            None => {
                if !w.any_lock() {
                    return Err(sync_err("no passive-target epoch is open on this window (call MPI_Win_lock or MPI_Win_lock_all first)"));
                }
                (0..w.size()).filter(|&r| w.passive_to(r)).collect()
            }
        };
        if ranks.iter().all(|&r| w.quiet(r)) {
            if w.shared.is_some() {
                super::shared::publish();
            }
            return Ok(None);
        }
        let targets = w.others(ranks);
        Ok(Some(self.new_sync(win, SyncWhat::Flush { targets, local })))
    }

    /// MPI_Win_free, first half: the epochs must be closed; the members
    /// meet in a barrier (so nobody addresses a freed window). When the
    /// request completes, call [`Engine::win_drop`].
    pub fn win_free(&mut self, win: WinId) -> Result<ReqId, RmaError> {
        let w = self.window_mut(win)?;
        if w.any_lock() {
            return Err(sync_err("a lock epoch is still open on this window (call MPI_Win_unlock first)"));
        }
        if w.access.is_some() || w.exposure.is_some() {
            return Err(sync_err("a post-start-complete-wait epoch is still open on this window"));
        }
        let barrier = self.win_barrier(win);
        Ok(self.new_sync(win, SyncWhat::Free { barrier }))
    }

    /// MPI_Win_free, second half: forget the window.
    pub fn win_drop(&mut self, win: WinId) {
        if let Some(w) = self.rma.windows.remove(&win.0) {
            if let Some(f) = &w.fast {
                f.close_all();
            }
            self.rma.gets_out -= w.targets.iter().map(|t| t.gets.len()).sum::<usize>();
        }
    }

    /// Whether a call waits for a lock word in shared memory, which no
    /// transport reports on: the driver must not sleep long meanwhile.
    pub(crate) fn rma_polls_shared(&self) -> bool {
        self.rma.syncs.iter().any(|s| {
            matches!(s.what, SyncWhat::Grants { .. }) && self.rma.windows.get(&s.win).is_some_and(|w| w.shared.is_some())
        })
    }

    fn win_barrier(&mut self, win: WinId) -> ReqId {
        let w = self.rma.windows.get_mut(&win.0).expect("a live window");
        let tag = w.barrier_seq;
        w.barrier_seq = (w.barrier_seq + 1) & ((1 << 29) - 1);
        let view = crate::sched::CommView { ctx: w.ctx + 1, rank: w.rank, size: w.size(), pids: w.pids.clone(), local_pids: None };
        let s = crate::coll::barrier_dissemination(view, tag);
        self.start_schedule(s)
    }

    /// Advance a flush: ask targets whose gate opened; whether every ask
    /// is answered and every get has landed.
    fn advance_flush(&mut self, win: u32, targets: &mut Flushing, local: bool, then: Option<RmaSync>) -> bool {
        let mut done = true;
        let shm = self.rma.windows.get(&win).is_some_and(|w| w.shared.is_some());
        if shm {
            // Our stores into the others' memory come before anything the
            // flush sends (Complete, a fence's barrier) or its return.
            super::shared::publish();
        }
        for (r, asked) in targets.iter_mut() {
            let w = self.rma.windows.get_mut(&win).expect("a live window");
            if *r == w.rank {
                // Our own window: operations on it were done in their calls.
                continue;
            }
            let (ctx, pid) = (w.ctx, w.pids[*r as usize]);
            let t = &mut w.targets[*r as usize];
            if t.gate != Gate::Open {
                done = false;
                continue;
            }
            if asked.is_none() && !local {
                // Unlock and complete always speak to the target; a flush
                // only when something was sent since the last one. On a
                // window in shared memory the lock is not the target's
                // engine's, and our loads and stores need no answer: only
                // operations that went as frames do.
                let needed = (then.is_some() && !shm) || t.dirty;
                t.dirty = false;
                if needed {
                    t.flush_asked += 1;
                    let seq = t.flush_asked;
                    let unlock = then == Some(RmaSync::Unlock) && t.lock.is_some_and(|l| l.1) && !shm;
                    *asked = Some(seq);
                    self.rma_sync_send(pid, ctx, if unlock { RmaSync::Unlock } else { RmaSync::Flush }, seq, 0);
                } else {
                    *asked = Some(t.flush_asked);
                }
                if then == Some(RmaSync::Complete) {
                    self.rma_sync_send(pid, ctx, RmaSync::Complete, 0, 0);
                }
            }
            let w = &self.rma.windows[&win];
            let t = &w.targets[*r as usize];
            if !t.gets.iter().all(|&g| self.is_complete(g)) || asked.is_some_and(|s| t.flush_done < s) || (!local && asked.is_none()) {
                done = false;
            }
        }
        done
    }

    /// Failures the targets of a finished call reported: an error for it.
    fn collect_failures(&mut self, win: u32, ranks: impl Iterator<Item = i32>) -> Option<RmaError> {
        let w = self.rma.windows.get_mut(&win)?;
        let mut msgs = Vec::new();
        for r in ranks {
            let n = std::mem::take(&mut w.targets[r as usize].failures);
            if n > 0 {
                msgs.push(format!("{n} operation(s) on rank {r}'s window addressed memory outside its attached regions"));
            }
        }
        (!msgs.is_empty()).then(|| RmaError::new(RmaErrorKind::Range, msgs.join("; ")))
    }

    /// Advance the pending synchronization calls and request-based
    /// operations. Returns whether anything completed.
    #[inline]
    pub fn progress_rma(&mut self) -> bool {
        if self.rma.syncs.is_empty() && self.rma.linked.is_empty() && self.rma.gets_out == 0 {
            return false;
        }
        self.advance_rma()
    }

    fn advance_rma(&mut self) -> bool {
        let mut any = false;
        let linked = std::mem::take(&mut self.rma.linked);
        for (inner, user) in linked {
            if self.is_complete(inner) {
                self.complete_external(user, Status::default());
                any = true;
            } else {
                self.rma.linked.push((inner, user));
            }
        }
        let mut syncs = std::mem::take(&mut self.rma.syncs);
        let mut i = 0;
        while i < syncs.len() {
            let s = &mut syncs[i];
            if !self.rma.windows.contains_key(&s.win) {
                i += 1;
                continue;
            }
            let done = self.advance_sync(s);
            if let Some(result) = done {
                let s = syncs.swap_remove(i);
                if let Err(e) = result {
                    self.rma.errors.insert(s.req, e);
                }
                self.complete_external(s.req, Status::default());
                any = true;
            } else {
                i += 1;
            }
        }
        syncs.append(&mut self.rma.syncs);
        self.rma.syncs = syncs;
        // Gets whose data has landed are done with.
        let mut landed = Vec::new();
        for w in self.rma.windows.values_mut() {
            for t in w.targets.iter_mut() {
                t.gets.retain(|&g| {
                    let complete = self.reqs.get(g.0).is_some_and(|q| q.done);
                    if complete && !self.rma.linked.iter().any(|&(inner, _)| inner == g) {
                        landed.push(g);
                        self.rma.gets_out -= 1;
                        return false;
                    }
                    true
                });
            }
        }
        for g in landed {
            self.take(g);
        }
        any
    }

    /// One step of a call: `Some(result)` once it is over.
    fn advance_sync(&mut self, s: &mut SyncCall) -> Option<Result<(), RmaError>> {
        let win = s.win;
        match &mut s.what {
            SyncWhat::Flush { targets, local } => {
                let local = *local;
                if !self.advance_flush(win, targets, local, None) {
                    return None;
                }
                let ranks: Vec<i32> = targets.iter().map(|t| t.0).collect();
                Some(self.collect_failures(win, ranks.into_iter()).map_or(Ok(()), Err))
            }
            SyncWhat::Unlock { targets, all } => {
                if !self.advance_flush(win, targets, false, Some(RmaSync::Unlock)) {
                    return None;
                }
                let all = *all;
                let w = self.rma.windows.get_mut(&win).expect("a live window");
                let me = w.rank;
                let mut release_self = false;
                let mut ranks: Vec<i32> = targets.iter().map(|t| t.0).collect();
                if all {
                    ranks = (0..w.size()).collect();
                    w.lock_all = false;
                }
                let shared = w.shared.clone();
                if shared.is_some() {
                    super::shared::publish();
                }
                for &r in &ranks {
                    let t = &mut w.targets[r as usize];
                    match (&shared, t.lock) {
                        // Our stores are published: let the next locker in.
                        (Some(ctl), Some((LockKind::Shared, true))) => super::shared::unlock_shared(ctl.lock_word(r as usize)),
                        (Some(ctl), Some((LockKind::Exclusive, true))) => super::shared::unlock_exclusive(ctl.lock_word(r as usize)),
                        (None, Some((_, true))) if r == me => release_self = true,
                        _ => {}
                    }
                    t.lock = None;
                    t.gate = Gate::Open;
                }
                if release_self {
                    let granted = w.locks.release(me).expect("we hold our own lock");
                    self.rma_grant_all(win, granted);
                }
                Some(self.collect_failures(win, ranks.into_iter()).map_or(Ok(()), Err))
            }
            SyncWhat::Complete { targets } => {
                if !self.advance_flush(win, targets, false, Some(RmaSync::Complete)) {
                    return None;
                }
                let ranks: Vec<i32> = targets.iter().map(|t| t.0).collect();
                Some(self.collect_failures(win, ranks.into_iter()).map_or(Ok(()), Err))
            }
            SyncWhat::Fence { flush, barrier } => {
                if barrier.is_none() {
                    if !self.advance_flush(win, flush, false, None) {
                        return None;
                    }
                    *barrier = Some(self.win_barrier(WinId(win)));
                }
                let b = barrier.expect("started above");
                if !self.is_complete(b) {
                    return None;
                }
                let failed = self.take_schedule_error(b);
                self.take(b);
                if let Some(e) = failed {
                    return Some(Err(RmaError::new(RmaErrorKind::Sync, e)));
                }
                let ranks: Vec<i32> = flush.iter().map(|t| t.0).collect();
                Some(self.collect_failures(win, ranks.into_iter()).map_or(Ok(()), Err))
            }
            SyncWhat::Wait { origins } => {
                let w = self.rma.windows.get_mut(&win).expect("a live window");
                Self::try_end_exposure(w, origins).then_some(Ok(()))
            }
            SyncWhat::Grants { targets } => {
                let w = self.rma.windows.get_mut(&win).expect("a live window");
                if let Some(ctl) = w.shared.as_deref() {
                    // Lock words in shared memory: try again.
                    for &r in targets.iter() {
                        let t = &mut w.targets[r as usize];
                        if t.gate == Gate::AwaitGrant {
                            let kind = t.lock.expect("a lock was asked for").0;
                            if try_lock_shm(ctl, r, kind, &mut t.shm_waiting) {
                                t.gate = Gate::Open;
                            }
                        }
                    }
                }
                targets.iter().all(|&r| w.targets[r as usize].gate == Gate::Open).then_some(Ok(()))
            }
            SyncWhat::Free { barrier } => {
                if !self.is_complete(*barrier) {
                    return None;
                }
                self.take(*barrier);
                Some(Ok(()))
            }
        }
    }
}

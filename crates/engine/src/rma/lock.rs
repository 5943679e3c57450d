//! The lock manager of a window at its target: shared and exclusive locks
//! (MPI_Win_lock, MPI_Win_lock_all), granted in the order asked for.
//!
//! A request is granted at once when nobody waits before it and it is
//! compatible with the holders (shared with shared); otherwise it queues.
//! A release grants from the head of the queue: one exclusive request, or
//! every shared request up to the next exclusive one. First come first
//! served, so a stream of shared lockers cannot starve an exclusive one.

use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    Shared,
    Exclusive,
}

#[derive(Default, Debug)]
pub(crate) struct LockManager {
    /// Ranks holding the lock (one, if exclusive).
    holders: Vec<i32>,
    exclusive: bool,
    queue: VecDeque<(i32, LockKind)>,
}

impl LockManager {
    fn compatible(&self, kind: LockKind) -> bool {
        self.holders.is_empty() || (kind == LockKind::Shared && !self.exclusive)
    }

    fn grant(&mut self, rank: i32, kind: LockKind) {
        self.holders.push(rank);
        self.exclusive = kind == LockKind::Exclusive;
    }

    /// `rank` asks for the lock: true if granted now (else it waits).
    pub(crate) fn request(&mut self, rank: i32, kind: LockKind) -> bool {
        if self.queue.is_empty() && self.compatible(kind) {
            self.grant(rank, kind);
            true
        } else {
            self.queue.push_back((rank, kind));
            false
        }
    }

    /// Whether `rank` holds the lock or waits for it.
    pub(crate) fn involves(&self, rank: i32) -> bool {
        self.holders.contains(&rank) || self.queue.iter().any(|&(r, _)| r == rank)
    }

    /// `rank` releases its lock; returns the requests granted in turn, or
    /// None if `rank` held no lock.
    pub(crate) fn release(&mut self, rank: i32) -> Option<Vec<(i32, LockKind)>> {
        let i = self.holders.iter().position(|&r| r == rank)?;
        self.holders.swap_remove(i);
        if self.holders.is_empty() {
            self.exclusive = false;
        }
        let mut granted = Vec::new();
        while let Some(&(r, kind)) = self.queue.front() {
            if !self.compatible(kind) {
                break;
            }
            self.queue.pop_front();
            self.grant(r, kind);
            granted.push((r, kind));
        }
        Some(granted)
    }

    #[cfg(test)]
    pub(crate) fn is_idle(&self) -> bool {
        self.holders.is_empty() && self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LockKind::*;

    #[test]
    fn shared_locks_share_exclusive_ones_wait_in_order() {
        let mut m = LockManager::default();
        assert!(m.request(0, Shared));
        assert!(m.request(1, Shared));
        assert!(!m.request(2, Exclusive));
        // A shared request behind a waiting exclusive one waits too.
        assert!(!m.request(3, Shared));
        assert_eq!(m.release(0), Some(vec![]));
        assert_eq!(m.release(1), Some(vec![(2, Exclusive)]));
        assert_eq!(m.release(7), None);
        assert!(!m.request(4, Shared));
        assert_eq!(m.release(2), Some(vec![(3, Shared), (4, Shared)]));
        assert!(m.involves(3) && !m.involves(2));
        m.release(3);
        m.release(4);
        assert!(m.is_idle());
    }
}

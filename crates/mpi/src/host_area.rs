//! A communicator's shared-memory area for collectives, as the engine sees
//! it (`gridmpi_engine::coll::host::HostArea`) over the transport's mapping
//! (`gridmpi_transport::shm::host::Area`). The two crates do not know each
//! other; this is where they meet.

use gridmpi_engine::coll::host::{HostArea, StatedSizes};
use gridmpi_transport::shm::host::Area;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct SharedArea {
    area: Area,
    /// The next operation this process may start (only this process uses it).
    turn: AtomicU64,
}

// SAFETY: the mapping is shared memory whose words are atomics or slots
// written and read in the order the area's protocol fixes (a slot is
// written before its writer arrives, read after the release); the turn is
// an atomic.
unsafe impl Sync for SharedArea {}

impl SharedArea {
    /// Map the area `name` for `members` members with slots of `slot` bytes
    /// (every member passes the same; whoever comes first creates it).
    pub fn open(name: &str, members: usize, slot: usize) -> std::io::Result<SharedArea> {
        Ok(SharedArea { area: Area::create_or_open(name, members, slot)?, turn: AtomicU64::new(0) })
    }
}

impl HostArea for SharedArea {
    fn slot_len(&self) -> usize {
        self.area.slot_len()
    }
    fn contribution(&self, member: usize, op: u64) -> *mut u8 {
        self.area.contribution(member, op)
    }
    fn result(&self, op: u64) -> *mut u8 {
        self.area.result(op)
    }
    fn arrive(&self, op: u64) -> bool {
        self.area.arrive(op)
    }
    fn release(&self, op: u64) {
        self.area.release_op(op)
    }
    fn released(&self, op: u64) -> bool {
        self.area.released(op)
    }
    fn set_sleeping(&self, member: usize, on: bool) {
        self.area.set_sleeping(member, on)
    }
    fn sleeping(&self, member: usize) -> bool {
        self.area.sleeping(member)
    }
    fn state_size(&self, op: u64, size: u64) {
        self.area.state_size(op, size)
    }
    fn settle_sizes(&self, op: u64) -> StatedSizes {
        let s = self.area.settle_sizes(op);
        StatedSizes { first: s.first, differing: s.differing }
    }
    fn release_differing(&self, op: u64, sizes: StatedSizes) {
        let s = gridmpi_transport::shm::host::StatedSizes { first: sizes.first, differing: sizes.differing };
        self.area.release_op_differing(op, s)
    }
    fn differing_sizes(&self, op: u64) -> Option<StatedSizes> {
        self.area.differing_sizes(op).map(|s| StatedSizes { first: s.first, differing: s.differing })
    }
    fn turn(&self) -> u64 {
        self.turn.load(Ordering::Relaxed)
    }
    fn set_turn(&self, op: u64) {
        self.turn.store(op, Ordering::Relaxed)
    }
}

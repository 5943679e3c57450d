//! A communicator's shared-memory area, for collectives among processes of
//! one host that need no message at all.
//!
//! Every member maps the same file (`create_or_open`: whoever comes first
//! creates it, with the same size, so no member waits for another to set it
//! up). The area holds an arrival counter, the generation released, and per
//! member two contribution slots (one per parity of the operation number);
//! plus two result slots. Operation `k` (every member numbers the
//! communicator's host operations alike, from 0):
//!
//! 1. a member writes its contribution into its slot of parity `k % 2`,
//! 2. arrives (one atomic add); the member whose arrival completes the
//!    count `(k + 1) * n` is the *last*: it computes the result (a
//!    reduction in rank order, so results do not depend on who is last)
//!    into the result slot of parity `k % 2` and releases generation `k + 1`,
//! 3. every member, once it sees the release, reads what it needs.
//!
//! A member arrives at `k + 1` only after it has read `k`, and `k + 1` is
//! released only when all have arrived; so when anyone writes parity
//! `k % 2` again (at `k + 2`), everyone has finished reading `k`. In a loop
//! of operations each member therefore runs once per operation: it leaves
//! one and arrives at the next in the same turn, which is what makes these
//! collectives fast when ranks outnumber cores.
//!
//! Each member also states, before it arrives, the size of the operation's
//! data as it sees it ([`Area::state_size`]); the last member takes the
//! statements ([`Area::settle_sizes`]) and, when they differ, marks the
//! release ([`Area::release_op_differing`]), so a program whose ranks pass
//! different counts learns so at every member instead of reading or
//! combining past what was written.
//!
//! Waking is the caller's: a waiter spins on [`Area::released`]; one that
//! is about to sleep says so first ([`Area::set_sleeping`]) and looks once
//! more, and the last member tells only the sleepers (a frame through the
//! rings). Both sides put a full fence between their store and their load
//! (`release_op` then `sleeping`; `set_sleeping` then `released`), so
//! either the sleeper sees the release or the last member sees the sleeper.

use crate::sys::SharedMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

const MAGIC: u64 = 0x4752_4944_484f_5354; // "GRIDHOST"
const HEADER: usize = 4096;
const LINE: usize = 128;
/// The release word's mark of an operation whose members stated different
/// sizes.
const DIFFERING: u64 = 1 << 63;

/// The mapped area of one communicator.
pub struct Area {
    map: SharedMap,
    members: usize,
    slot: usize,
}

// SAFETY: the mapping is shared memory coordinated by the atomics in it.
unsafe impl Send for Area {}

impl Area {
    /// The size of the file for `members` members and `slot` bytes per slot:
    /// the header, the slots, then one sleeping flag per member.
    fn file_len(members: usize, slot: usize) -> usize {
        Self::flags_at(members, slot) + (8 * members).next_multiple_of(LINE)
    }

    fn flags_at(members: usize, slot: usize) -> usize {
        HEADER + (2 * members + 2) * slot
    }

    /// Map the area `name` (e.g. `/gridmpi-<job>-host-<ctx>`), creating it
    /// if no member has yet. Every member must pass the same sizes.
    pub fn create_or_open(name: &str, members: usize, slot: usize) -> io::Result<Area> {
        let slot = slot.next_multiple_of(LINE);
        let map = SharedMap::create_or_open(name, Self::file_len(members, slot))?;
        let a = Area { map, members, slot };
        // Whoever maps first stamps the header; the others check it.
        let magic = a.word(0);
        match magic.compare_exchange(0, MAGIC, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                a.word(8).store(members as u64, Ordering::Release);
                a.word(16).store(slot as u64, Ordering::Release);
            }
            Err(MAGIC) => {}
            Err(_) => return Err(io::Error::other(format!("{name} is not a GridMPI host area"))),
        }
        // The stamp of sizes may lag the magic by a moment; it must agree when there.
        for (off, want) in [(8, members as u64), (16, slot as u64)] {
            let got = a.word(off).load(Ordering::Acquire);
            if got != 0 && got != want {
                return Err(io::Error::other(format!("{name}: members disagree on the area's size")));
            }
        }
        // The last member to map it removes the name: nothing is left in
        // /dev/shm once the area is set up, even if the job is killed.
        if a.word(24).fetch_add(1, Ordering::AcqRel) + 1 == members as u64 {
            a.unlink();
        }
        Ok(a)
    }

    /// Remove the name (the mapping stays valid).
    pub fn unlink(&self) {
        self.map.unlink();
    }

    fn word(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off + 8 <= HEADER && off % 8 == 0);
        // SAFETY: inside the header of the live mapping, 8-byte aligned.
        unsafe { &*(self.map.as_ptr().add(off) as *const AtomicU64) }
    }

    fn arrivals(&self) -> &AtomicU64 {
        self.word(LINE)
    }

    fn release(&self) -> &AtomicU64 {
        self.word(2 * LINE)
    }

    /// Bytes per slot.
    pub fn slot_len(&self) -> usize {
        self.slot
    }

    pub fn members(&self) -> usize {
        self.members
    }

    /// The contribution slot of `member` for operation `op`.
    pub fn contribution(&self, member: usize, op: u64) -> *mut u8 {
        assert!(member < self.members);
        let i = 2 * member + (op % 2) as usize;
        // SAFETY: inside the mapping (file_len).
        unsafe { self.map.as_ptr().add(HEADER + i * self.slot) }
    }

    /// The result slot of operation `op`.
    pub fn result(&self, op: u64) -> *mut u8 {
        let i = 2 * self.members + (op % 2) as usize;
        // SAFETY: inside the mapping (file_len).
        unsafe { self.map.as_ptr().add(HEADER + i * self.slot) }
    }

    /// Arrive at operation `op` (after writing the contribution). True for
    /// the last member: it must compute the result and [`Area::release`].
    pub fn arrive(&self, op: u64) -> bool {
        let n = self.members as u64;
        self.arrivals().fetch_add(1, Ordering::AcqRel) + 1 == (op + 1) * n
    }

    /// Release operation `op` (the last member, after computing the result).
    /// Then it must look at [`Area::sleeping`] for whom to wake.
    pub fn release_op(&self, op: u64) {
        self.release().store(op + 1, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    /// Release `op` whose members stated different sizes (as
    /// [`Area::release_op`]): the statements go where readers find them
    /// ([`Area::differing_sizes`]) and the release word says so. Kept off
    /// the release word's line in the common case: members spin on that
    /// line, and every store to it costs a transfer of the line.
    pub fn release_op_differing(&self, op: u64, sizes: StatedSizes) {
        let p = 16 * (op % 2) as usize;
        self.word(3 * LINE + p).store(sizes.first, Ordering::Relaxed);
        self.word(3 * LINE + 8 + p).store(sizes.differing.unwrap_or(sizes.first), Ordering::Relaxed);
        self.release().store((op + 1) | DIFFERING, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    fn flag(&self, member: usize) -> &AtomicU64 {
        assert!(member < self.members);
        // SAFETY: inside the mapping (file_len), 8-byte aligned (HEADER and
        // slots are multiples of LINE).
        unsafe { &*(self.map.as_ptr().add(Self::flags_at(self.members, self.slot) + 8 * member) as *const AtomicU64) }
    }

    /// `member` is about to sleep (true; it must then look at
    /// [`Area::released`] once more before it does) or is awake (false).
    pub fn set_sleeping(&self, member: usize, on: bool) {
        self.flag(member).store(on as u64, Ordering::SeqCst);
        if on {
            std::sync::atomic::fence(Ordering::SeqCst);
        }
    }

    /// Whether `member` may be asleep, so needs a frame to see a release.
    pub fn sleeping(&self, member: usize) -> bool {
        self.flag(member).load(Ordering::SeqCst) != 0
    }

    /// Whether operation `op` is released (its result and every member's
    /// contribution can be read).
    pub fn released(&self, op: u64) -> bool {
        self.release().load(Ordering::Acquire) & !DIFFERING > op
    }

    /// The size statements of `op`'s parity sit on the arrival counter's
    /// line, which a member takes for its arrival anyway: the first size
    /// stated (plus one; 0: none yet), and one that differed from it.
    fn stated_words(&self, op: u64) -> (&AtomicU64, &AtomicU64) {
        let p = 16 * (op % 2) as usize;
        (self.word(LINE + 8 + p), self.word(LINE + 16 + p))
    }

    /// A member states the size of operation `op` as it sees it, before it
    /// arrives (its arrival publishes the statement): one atomic operation
    /// on the line its arrival takes next.
    pub fn state_size(&self, op: u64, size: u64) {
        let said = size.saturating_add(1);
        let (first, differing) = self.stated_words(op);
        match first.compare_exchange(0, said, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {}
            Err(f) if f == said => {}
            Err(_) => differing.store(said, Ordering::Relaxed),
        }
    }

    /// The last member, every member having arrived at `op`: what they
    /// stated, cleared for the operation two later (plain loads and
    /// stores: no one touches these words again before then).
    pub fn settle_sizes(&self, op: u64) -> StatedSizes {
        let (first, differing) = self.stated_words(op);
        let (f, d) = (first.load(Ordering::Relaxed), differing.load(Ordering::Relaxed));
        first.store(0, Ordering::Relaxed);
        if d != 0 {
            differing.store(0, Ordering::Relaxed);
        }
        StatedSizes::decode(f, d)
    }

    /// For a released `op`: what its members stated, if the last member
    /// released it as differing ([`Area::release_op_differing`]).
    pub fn differing_sizes(&self, op: u64) -> Option<StatedSizes> {
        if self.release().load(Ordering::Acquire) & DIFFERING == 0 {
            return None;
        }
        let p = 16 * (op % 2) as usize;
        let (f, d) = (self.word(3 * LINE + p).load(Ordering::Relaxed), self.word(3 * LINE + 8 + p).load(Ordering::Relaxed));
        Some(StatedSizes { first: f, differing: (d != f).then_some(d) })
    }
}

/// What the members stated of an operation's size: the first statement,
/// and one that differed from it (they agree when there is none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatedSizes {
    pub first: u64,
    pub differing: Option<u64>,
}

impl StatedSizes {
    fn decode(first: u64, differing: u64) -> StatedSizes {
        // Stored plus one (0: nothing stated); u64::MAX stays itself.
        let size = |w: u64| if w == u64::MAX { w } else { w.saturating_sub(1) };
        StatedSizes { first: size(first), differing: (differing != 0).then(|| size(differing)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Members in threads: an allreduce-like loop where the last member sums
    /// the contributions; every member checks every result.
    #[test]
    fn members_agree_on_every_operation() {
        let name = format!("/gridmpi-test-host-{}", std::process::id());
        let n = 5;
        let ops = 2000u64;
        let areas: Vec<Area> = (0..n).map(|_| Area::create_or_open(&name, n, 64).unwrap()).collect();
        assert!(!std::path::Path::new(&format!("/dev/shm{name}")).exists(), "the last member left the name");
        let areas = Arc::new(areas);
        let threads: Vec<_> = (0..n)
            .map(|me| {
                let areas = areas.clone();
                std::thread::spawn(move || {
                    let a = &areas[me];
                    for op in 0..ops {
                        let v = op * 10 + me as u64;
                        // SAFETY: our own slot of this parity, 64 bytes.
                        unsafe { std::ptr::write(a.contribution(me, op) as *mut u64, v) };
                        if a.arrive(op) {
                            let sum: u64 = (0..n).map(|m| unsafe { std::ptr::read(a.contribution(m, op) as *const u64) }).sum();
                            unsafe { std::ptr::write(a.result(op) as *mut u64, sum) };
                            a.release_op(op);
                        }
                        while !a.released(op) {
                            std::thread::yield_now();
                        }
                        let got = unsafe { std::ptr::read(a.result(op) as *const u64) };
                        assert_eq!(got, (0..n as u64).map(|m| op * 10 + m).sum::<u64>(), "op {op} member {me}");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    /// The waking protocol: a member that marks itself sleeping and then
    /// finds its operation not released is always seen as sleeping by the
    /// last member, who releases it after. Two threads race on it many
    /// times; a lost wake-up would leave the sleeper waiting for ever (here:
    /// the test counts it and fails).
    #[test]
    fn a_sleeper_is_never_missed_by_the_last_member() {
        let name = format!("/gridmpi-test-host-sleep-{}", std::process::id());
        let n = 2;
        let ops = 20000u64;
        let areas = Arc::new((0..n).map(|_| Area::create_or_open(&name, n, 64).unwrap()).collect::<Vec<_>>());
        let woken = Arc::new(AtomicU64::new(0));
        let sleeper = {
            let (areas, woken) = (areas.clone(), woken.clone());
            std::thread::spawn(move || {
                let a = &areas[1];
                let mut missed = 0;
                for op in 0..ops {
                    if a.arrive(op) {
                        a.release_op(op);
                    }
                    a.set_sleeping(1, true);
                    if !a.released(op) {
                        // "Asleep": only the last member's wake ends it.
                        let mut spins = 0u64;
                        while woken.load(Ordering::Acquire) <= op {
                            spins += 1;
                            if spins > 2_000_000_000 {
                                missed += 1;
                                break;
                            }
                            std::hint::spin_loop();
                        }
                    }
                    a.set_sleeping(1, false);
                }
                missed
            })
        };
        let a = &areas[0];
        for op in 0..ops {
            if a.arrive(op) {
                a.release_op(op);
                if a.sleeping(1) {
                    woken.store(op + 1, Ordering::Release);
                }
            }
            while !a.released(op) {
                std::hint::spin_loop();
            }
        }
        assert_eq!(sleeper.join().unwrap(), 0, "a sleeper was never woken");
    }

    /// Size statements: agreeing ones settle to one size, a differing one
    /// is kept, and a parity's statements are cleared for its next use.
    #[test]
    fn stated_sizes_settle_and_clear() {
        let name = format!("/gridmpi-test-host-stated-{}", std::process::id());
        let a = Area::create_or_open(&name, 1, 64).unwrap();
        for (op, sizes, want) in [
            (0u64, vec![40u64, 40, 40], StatedSizes { first: 40, differing: None }),
            (1, vec![0, 0], StatedSizes { first: 0, differing: None }),
            (2, vec![4, 40, 4], StatedSizes { first: 4, differing: Some(40) }),
            (3, vec![u64::MAX], StatedSizes { first: u64::MAX, differing: None }),
            (4, vec![8, 8], StatedSizes { first: 8, differing: None }),
        ] {
            for s in sizes {
                a.state_size(op, s);
            }
            let sizes = a.settle_sizes(op);
            assert_eq!(sizes, want, "op {op}");
            if sizes.differing.is_some() || sizes.first == u64::MAX {
                a.release_op_differing(op, sizes);
                assert_eq!(a.differing_sizes(op), Some(want), "op {op}, as a reader sees it");
            } else {
                a.release_op(op);
                assert_eq!(a.differing_sizes(op), None, "op {op}, as a reader sees it");
            }
            assert!(a.released(op) && !a.released(op + 1), "op {op}");
        }
        a.unlink();
    }

    #[test]
    fn members_must_agree_on_the_size() {
        let name = format!("/gridmpi-test-host-size-{}", std::process::id());
        let a = Area::create_or_open(&name, 4, 256).unwrap();
        a.unlink();
        drop(a);
        let name2 = format!("/gridmpi-test-host-size2-{}", std::process::id());
        let b = Area::create_or_open(&name2, 4, 256).unwrap();
        assert!(Area::create_or_open(&name2, 3, 256).is_err());
        b.unlink();
    }
}

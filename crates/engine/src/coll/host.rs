//! Collectives through a shared-memory area, among the processes of one
//! host: no message carries data, and each member runs once per operation.
//!
//! The area (the driver maps it; see `crates/transport/src/shm/host.rs`)
//! has per member two contribution slots, two result slots, an arrival
//! counter and a released generation. Operation `k` of a communicator
//! (every member numbers them alike):
//!
//! 1. each member packs what it contributes into its slot of parity `k % 2`
//!    and arrives;
//! 2. the member whose arrival completes the count is the last: it
//!    combines the contributions (a reduction in rank order, so the result
//!    does not depend on who was last) into the result slot, releases `k`,
//!    and wakes the members that sleep (a frame that only returns credit:
//!    any frame wakes a waiting process). A member that spins watches the
//!    release itself ([`Engine::host_waits`](crate::Engine::host_waits)),
//!    so the common case costs no frame; one that is about to sleep marks
//!    itself first ([`Engine::host_prepare_sleep`](crate::Engine::host_prepare_sleep));
//! 3. each member, once it sees the release, unpacks what it needs.
//!
//! With its contribution a member states the operation's size as it sees
//! it ([`HostStep::size`]: every member of a correct program sees the
//! same). The last member settles the statements; when they differ it
//! combines nothing and marks the release ([`HostArea::release_differing`]),
//! and every member fails the call without reading (an erroneous program,
//! e.g. a bcast whose root sends 40 bytes to ranks that expect 4, learns so
//! instead of a silent truncation or a reduction of stale bytes).
//!
//! A member starts `k + 1` only after it finished `k` locally, so when a
//! parity's slots are written again (at `k + 2`) every member has read `k`.
//!
//! When ranks outnumber cores this is what makes collectives fast: a
//! barrier costs each member one atomic add and one look, instead of
//! log2(n) rounds of messages, each needing the receiver to be scheduled.

use crate::sched::{CommView, Reducer, Schedule};
use gridmpi_datatype::{BasicType, Datatype, UserBuf};
use std::sync::Arc;

/// A communicator's shared area, as the engine uses it. Implemented by the
/// driver over the shared mapping; addresses stay valid while it lives.
pub trait HostArea: Send + Sync {
    /// Bytes of each contribution and result slot.
    fn slot_len(&self) -> usize;
    /// The contribution slot of `member` for operation `op`.
    fn contribution(&self, member: usize, op: u64) -> *mut u8;
    /// The result slot of operation `op`.
    fn result(&self, op: u64) -> *mut u8;
    /// Arrive at `op`; true for the last member, which must then
    /// [`HostArea::release`] it.
    fn arrive(&self, op: u64) -> bool;
    /// Release `op`, then a full fence (before the last member looks at
    /// [`HostArea::sleeping`]).
    fn release(&self, op: u64);
    fn released(&self, op: u64) -> bool;
    /// Mark `member` as about to sleep (true: then a full fence, before it
    /// looks at [`HostArea::released`] once more) or awake.
    fn set_sleeping(&self, member: usize, on: bool);
    /// Whether `member` may sleep, so must be woken by a frame.
    fn sleeping(&self, member: usize) -> bool;
    /// State operation `op`'s size as this member sees it, before arriving.
    fn state_size(&self, op: u64, size: u64);
    /// The last member, all arrived: what was stated of `op`'s size.
    fn settle_sizes(&self, op: u64) -> StatedSizes;
    /// Release `op` as [`HostArea::release`] does, whose members stated
    /// `sizes` that do not agree: readers learn so from
    /// [`HostArea::differing_sizes`].
    fn release_differing(&self, op: u64, sizes: StatedSizes);
    /// For a released `op`: what was stated of its size, if it was
    /// released as differing.
    fn differing_sizes(&self, op: u64) -> Option<StatedSizes>;
    /// The next operation this process may start (process-local: ops
    /// start in order, each once the one before finished here).
    fn turn(&self) -> u64;
    fn set_turn(&self, op: u64);
}

/// A communicator's area and the number of the operation to run on it.
#[derive(Clone)]
pub struct HostOp {
    pub area: Arc<dyn HostArea>,
    pub op: u64,
}

/// Where a member reads from once an operation is released.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    Member(usize),
    Result,
}

/// The reduction the last member computes into the result slot:
/// `count` items of `dt` (a basic type) per contribution.
pub struct Combine {
    pub op: Arc<dyn Reducer>,
    pub count: u64,
    pub dt: Arc<Datatype>,
}

/// A step's buffers: most steps write one and read one (a reduction, a
/// bcast), kept without a heap allocation; with many ranks on few cores a
/// collective here is a few thousand instructions, and every allocation
/// and free costs a few hundred of them.
pub enum Few<T> {
    None,
    One(T),
    Many(Vec<T>),
}

impl<T> Default for Few<T> {
    fn default() -> Self {
        Few::None
    }
}

impl<T> Few<T> {
    pub fn push(&mut self, x: T) {
        match self {
            Few::Many(v) => v.push(x),
            Few::None => *self = Few::One(x),
            Few::One(_) => {
                let Few::One(a) = std::mem::take(self) else { unreachable!() };
                *self = Few::Many(vec![a, x]);
            }
        }
    }

    /// Room for `n` entries in all (one needs none).
    pub fn reserve_exact(&mut self, n: usize) {
        if n > 1 {
            match self {
                Few::None => *self = Few::Many(Vec::with_capacity(n)),
                Few::One(_) => {
                    let Few::One(a) = std::mem::take(self) else { unreachable!() };
                    let mut v = Vec::with_capacity(n);
                    v.push(a);
                    *self = Few::Many(v);
                }
                Few::Many(v) => v.reserve_exact(n.saturating_sub(v.len())),
            }
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        match self {
            Few::None => [].iter(),
            Few::One(a) => std::slice::from_ref(a).iter(),
            Few::Many(v) => v.iter(),
        }
    }
}

impl<T> Extend<T> for Few<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for x in items {
            self.push(x);
        }
    }
}

impl<'a, T> IntoIterator for &'a Few<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Every member's block into one buffer whose blocks lie one after the
/// other: member `m`'s `block` bytes at byte `at` of its slot go to packed
/// offset `m * block` of `buf`. One buffer instead of one per member.
pub struct Gather {
    pub buf: UserBuf,
    pub at: u64,
    pub block: u64,
}

/// One operation on the area, from one member's side.
pub struct HostStep {
    pub host: HostOp,
    /// This process's member index (its rank in the communicator).
    pub member: usize,
    pub members: usize,
    /// What to pack into our contribution slot, at which byte offset.
    pub write: Few<(UserBuf, u64)>,
    pub combine: Option<Combine>,
    /// What to unpack after the release: (from, byte offset there, into).
    pub read: Few<(Source, u64, UserBuf)>,
    /// And a block of every member into one buffer.
    pub gather: Option<Gather>,
    /// Where in the packed bytes of the written and read buffers this
    /// step's part begins (0 but for the pieces of [`bcast`] above a
    /// slot): each moves its bytes from there, at most what its slot holds.
    pub part: u64,
    /// Every member's pid (by rank), to wake the others after releasing
    /// if they sleep.
    pub pids: Arc<[gridmpi_wire::Pid]>,
    /// The operation's size as this member sees it, in bytes: what every
    /// member of a correct program says alike (a bcast's whole buffer, a
    /// reduction's vector, one block of a gather or alltoall), or
    /// [`SIZE_SELF_MISMATCH`].
    pub size: u64,
}

/// The size a member states when its own arguments disagree (e.g. a gather
/// root whose send block is not its receive block): no one else can match.
pub const SIZE_SELF_MISMATCH: u64 = u64::MAX;

/// The size to state for a member's block of `block` bytes that it also
/// sends as `sent` bytes (when it sends).
fn block_size(block: u64, sent: Option<u64>) -> u64 {
    match sent {
        Some(s) if s != block => SIZE_SELF_MISMATCH,
        _ => block,
    }
}

/// What the members stated of an operation's size: the first statement,
/// and one that differed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatedSizes {
    pub first: u64,
    pub differing: Option<u64>,
}

impl StatedSizes {
    /// Every member saw the same size, and none disagreed with itself.
    pub fn agree(&self) -> bool {
        self.differing.is_none() && self.first != SIZE_SELF_MISMATCH
    }

    /// The error of an operation whose members did not [`agree`](Self::agree).
    pub fn mismatch(&self) -> String {
        let said = |n: u64| match n {
            SIZE_SELF_MISMATCH => "a rank that sends blocks of another size than it receives".to_string(),
            n => format!("{n} bytes"),
        };
        let what = match self.differing {
            Some(d) => format!("{} against {}", said(self.first), said(d)),
            None => said(self.first),
        };
        format!("the ranks disagree on the size of the data, so a message of the collective would be truncated or come up short: {what} (mismatched counts or types across ranks)")
    }
}

/// The last member releases `op`, whose members stated `sizes`.
pub fn release(area: &dyn HostArea, op: u64, sizes: StatedSizes) {
    if sizes.agree() {
        area.release(op)
    } else {
        area.release_differing(op, sizes)
    }
}

impl HostStep {
    /// Pack our contribution and arrive. True when we were last (and
    /// combined and released the operation).
    ///
    /// # Safety
    /// The buffers are valid for the collective's duration (MPI's rules);
    /// the area's slots are as [`HostArea`] says.
    pub(crate) unsafe fn arrive(&self) -> Result<bool, String> {
        let (area, op) = (&self.host.area, self.host.op);
        let slot = area.slot_len();
        let mine = area.contribution(self.member, op);
        for (buf, at) in &self.write {
            let out = std::slice::from_raw_parts_mut(mine.add(*at as usize), slot - *at as usize);
            let n = self.part_len(buf, out.len());
            buf.read_packed(self.part, &mut out[..n]);
        }
        area.state_size(op, self.size);
        if !area.arrive(op) {
            return Ok(false);
        }
        let sizes = area.settle_sizes(op);
        let mut result = Ok(());
        if let Some(c) = self.combine.as_ref().filter(|_| sizes.agree()) {
            let bytes = (c.count * c.dt.size()) as usize;
            result = combine_in_rank_order(area.as_ref(), op, self.members, bytes, |left, inout| c.op.reduce(left, inout, c.count, &c.dt));
        }
        // Release even after a failed reduction: the others must not wait
        // forever (each reports its own error from the same reduction).
        release(area.as_ref(), op, sizes);
        result.map(|()| true)
    }

    /// The bytes of `buf` this step moves, where `room` bytes of slot are
    /// left: all of them from `part` on (the plan made them fit), or a
    /// slot's worth for a piece.
    fn part_len(&self, buf: &UserBuf, room: usize) -> usize {
        (buf.len().saturating_sub(self.part) as usize).min(room)
    }

    /// Unpack what we read, once released; an error (and nothing read)
    /// when the members disagreed on the size.
    ///
    /// # Safety
    /// As [`HostStep::arrive`].
    pub(crate) unsafe fn read(&self) -> Result<(), String> {
        let (area, op) = (&self.host.area, self.host.op);
        if let Some(sizes) = area.differing_sizes(op) {
            return Err(sizes.mismatch());
        }
        let slot = area.slot_len();
        for (from, at, buf) in &self.read {
            let base = match from {
                Source::Member(m) => area.contribution(*m, op),
                Source::Result => area.result(op),
            };
            let data = std::slice::from_raw_parts(base.add(*at as usize), slot - *at as usize);
            buf.write_packed(self.part, &data[..self.part_len(buf, data.len())]);
        }
        if let Some(g) = self.gather.as_ref().filter(|g| (g.at as usize) < slot) {
            // Within the slot whatever the plan said.
            let len = (g.block as usize).min(slot - g.at as usize);
            for m in 0..self.members {
                let data = std::slice::from_raw_parts(area.contribution(m, op).add(g.at as usize), len);
                g.buf.write_packed(m as u64 * g.block, data);
            }
        }
        Ok(())
    }
}

/// The last member's combination of operation `op`'s contributions of
/// `bytes` each into its result slot, in rank order: result = c0 op (c1 op
/// (... op c_{n-1})), so it does not depend on who was last. `reduce`
/// does `inout = left op inout`; its first error ends the combination.
///
/// # Safety
/// Every member has arrived at `op`; its slots hold `bytes` each.
pub unsafe fn combine_in_rank_order(
    area: &dyn HostArea, op: u64, members: usize, bytes: usize, mut reduce: impl FnMut(*const u8, *mut u8) -> Result<(), String>,
) -> Result<(), String> {
    let res = area.result(op);
    std::ptr::copy_nonoverlapping(area.contribution(members - 1, op), res, bytes);
    for m in (0..members - 1).rev() {
        reduce(area.contribution(m, op), res)?;
    }
    Ok(())
}

/// What an algorithm needs to use a communicator's area.
#[derive(Clone)]
pub struct Host {
    pub op: HostOp,
    pub slot: u64,
}

/// The contributions of a reduction fit the area's slots and can be
/// combined there: every rank's data is a run of one basic type (the type
/// signature decides, so every rank decides alike; not a (value, index)
/// pair, whose packed layout is not its layout in memory) and the
/// operation is not a user function (which must run outside the library's
/// lock).
/// `user_code`: the operation is a user function. Gives the basic type to
/// combine as.
pub fn reduction_fits(slot: u64, count: u64, dt: &Datatype, user_code: bool) -> Option<BasicType> {
    if dt.pair().is_some() || dt.uniform_pair().is_some() {
        return None;
    }
    let basic = dt.uniform_element()?;
    let bytes = count.checked_mul(dt.size())?;
    (bytes <= slot && !user_code).then_some(basic)
}

fn one_step(view: CommView, tag: i32, step: HostStep) -> Schedule {
    let mut s = Schedule::new(view, tag);
    s.host = Some(Box::new(step));
    s
}

/// A step of `h`'s operation whose size (as this member sees it) is `size`.
fn base(view: &CommView, h: &Host, size: u64) -> HostStep {
    let me = view.rank as usize;
    HostStep {
        host: h.op.clone(),
        member: me,
        members: view.size as usize,
        write: Few::None,
        combine: None,
        read: Few::None,
        gather: None,
        part: 0,
        pids: view.pids.clone(),
        size,
    }
}

/// Barrier: arrive and wait for the release.
pub fn barrier(view: CommView, tag: i32, h: &Host) -> Schedule {
    let step = base(&view, h, 0);
    one_step(view, tag, step)
}

/// Allreduce (`input` None: in place, the data is in `recv`); `basic`
/// from [`reduction_fits`].
pub fn allreduce(view: CommView, tag: i32, h: &Host, input: Option<UserBuf>, recv: UserBuf, op: Arc<dyn Reducer>, basic: Arc<Datatype>) -> Schedule {
    let input = input.unwrap_or_else(|| recv.clone());
    let mut step = base(&view, h, input.len());
    let count = recv.len() / basic.size().max(1);
    step.write.push((input, 0));
    step.combine = Some(Combine { op, count, dt: basic });
    step.read.push((Source::Result, 0, recv));
    one_step(view, tag, step)
}

/// Reduce to `root` (`recv` is the root's; `input` is our data).
pub fn reduce(view: CommView, tag: i32, h: &Host, input: UserBuf, recv: Option<UserBuf>, op: Arc<dyn Reducer>, basic: Arc<Datatype>, root: i32) -> Schedule {
    let mut step = base(&view, h, input.len());
    let count = input.len() / basic.size().max(1);
    step.write.push((input, 0));
    step.combine = Some(Combine { op, count, dt: basic });
    if view.rank == root {
        step.read.extend(recv.map(|r| (Source::Result, 0, r)));
    }
    one_step(view, tag, step)
}

/// The operations a bcast of `bytes` takes on an area of `slot`-byte
/// slots: one per slot's worth (at least one).
pub fn bcast_pieces(bytes: u64, slot: u64) -> u64 {
    bytes.div_ceil(slot.max(1)).max(1)
}

/// Reduce_scatter: every member's whole `input` vector combined, and our
/// part of the result, from byte `at` of it, into `recv`; `basic` from
/// [`reduction_fits`]. `input` may overlap `recv` (in place): it is in our
/// slot before anything is read.
#[allow(clippy::too_many_arguments)]
pub fn reduce_scatter(view: CommView, tag: i32, h: &Host, input: UserBuf, recv: UserBuf, at: u64, op: Arc<dyn Reducer>, basic: Arc<Datatype>) -> Schedule {
    let mut step = base(&view, h, input.len());
    let count = input.len() / basic.size().max(1);
    step.write.push((input, 0));
    step.combine = Some(Combine { op, count, dt: basic });
    step.read.push((Source::Result, at, recv));
    one_step(view, tag, step)
}

/// Bcast from `root`: `h.op` and the [`bcast_pieces`] - 1 operations after
/// it (the caller took them all), each a slot's worth of the data. With
/// more ranks than cores every piece costs about a barrier, still far less
/// than messages that each wait for their receiver to be scheduled.
pub fn bcast(view: CommView, tag: i32, h: &Host, buf: UserBuf, root: i32) -> Schedule {
    let pieces = bcast_pieces(buf.len(), h.slot);
    let piece = |k: u64| {
        let at = Host { op: HostOp { area: h.op.area.clone(), op: h.op.op + k }, slot: h.slot };
        let mut step = base(&view, &at, buf.len());
        step.part = k * h.slot;
        if view.rank == root {
            step.write.push((buf.clone(), 0));
        } else {
            step.read.push((Source::Member(root as usize), 0, buf.clone()));
        }
        step
    };
    if pieces == 1 {
        return one_step(view.clone(), tag, piece(0));
    }
    let mut s = Schedule::new(view.clone(), tag);
    for k in 0..pieces {
        s.push_host(piece(k));
    }
    s
}

/// Gather to `root`: our block (`mine` None: the root's, in place), and at
/// the root every member's block into `blocks` (the root's own through its
/// slot too, unless in place).
pub fn gather(view: CommView, tag: i32, h: &Host, mine: Option<UserBuf>, blocks: &[UserBuf], root: i32) -> Schedule {
    let me = view.rank as usize;
    let in_place = mine.is_none();
    let sent = mine.as_ref().map(|b| b.len());
    let size = match blocks.get(me) {
        Some(block) => block_size(block.len(), sent),
        None => sent.unwrap_or(0),
    };
    let mut step = base(&view, h, size);
    step.write.extend(mine.map(|b| (b, 0)));
    if view.rank == root {
        step.read.reserve_exact(blocks.len());
        for (m, b) in blocks.iter().enumerate().filter(|&(m, _)| !(in_place && m == me)) {
            step.read.push((Source::Member(m), 0, b.clone()));
        }
    }
    one_step(view, tag, step)
}

/// Allgather: our block (`mine` None: in place, it is `blocks[rank]`), and
/// every member's block into `blocks`.
pub fn allgather(view: CommView, tag: i32, h: &Host, mine: Option<UserBuf>, blocks: &[UserBuf]) -> Schedule {
    let me = view.rank as usize;
    let mut step = base(&view, h, block_size(blocks[me].len(), mine.as_ref().map(|b| b.len())));
    // In place, our block is already where it belongs.
    let in_place = mine.is_none();
    step.read.reserve_exact(blocks.len());
    step.write.push((mine.unwrap_or_else(|| blocks[me].clone()), 0));
    for (m, b) in blocks.iter().enumerate().filter(|&(m, _)| !(in_place && m == me)) {
        step.read.push((Source::Member(m), 0, b.clone()));
    }
    one_step(view, tag, step)
}

/// Alltoall of equal blocks of `block` bytes from buffers that hold them
/// one after the other (packed): our whole send buffer is our slot's
/// contents, and every member's block for us goes to its place in `recv`.
pub fn alltoall_whole(view: CommView, tag: i32, h: &Host, send: UserBuf, recv: UserBuf, block: u64) -> Schedule {
    // The size stated is one block, as `alltoall` states it: members may
    // take either road.
    let members = view.size as u64;
    let whole = |b: &UserBuf| (b.len() == members * block).then_some(block);
    let size = whole(&send).zip(whole(&recv)).map_or(SIZE_SELF_MISMATCH, |_| block);
    let mut step = base(&view, h, size);
    let at = view.rank as u64 * block;
    step.write.push((send, 0));
    step.gather = Some(Gather { buf: recv, at, block });
    one_step(view, tag, step)
}

/// Alltoall of equal blocks of `block` bytes: we write every block we
/// send, one after the other, and read ours from every member's slot.
pub fn alltoall(view: CommView, tag: i32, h: &Host, send: &[UserBuf], recv: &[UserBuf], block: u64) -> Schedule {
    let even = send.iter().chain(recv).all(|b| b.len() == block);
    let mut step = base(&view, h, if even { block } else { SIZE_SELF_MISMATCH });
    let me = view.rank as u64;
    step.write.reserve_exact(send.len());
    step.read.reserve_exact(recv.len());
    for (j, b) in send.iter().enumerate() {
        step.write.push((b.clone(), j as u64 * block));
    }
    for (m, b) in recv.iter().enumerate() {
        step.read.push((Source::Member(m), me * block, b.clone()));
    }
    one_step(view, tag, step)
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::coll::sim::{self, TBuf};
    use std::cell::UnsafeCell;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn few_keeps_every_entry_in_order() {
        for n in 0..5usize {
            for reserve in [None, Some(0), Some(1), Some(3), Some(7)] {
                let mut f = Few::default();
                for i in 0..n {
                    if i == 1 {
                        if let Some(r) = reserve {
                            f.reserve_exact(r);
                        }
                    }
                    f.push(i);
                }
                assert_eq!(f.iter().copied().collect::<Vec<_>>(), (0..n).collect::<Vec<_>>(), "{n} entries, reserve {reserve:?}");
                assert_eq!(matches!(f, Few::Many(_)), n > 1, "{n} entries: one stays inline");
            }
        }
    }

    /// An area in ordinary memory, shared by the simulated ranks of a test.
    pub struct MemArea {
        members: usize,
        slot: usize,
        mem: UnsafeCell<Vec<u8>>,
        arrivals: AtomicU64,
        released: AtomicU64,
        turns: Vec<AtomicU64>,
        sleeping: Vec<AtomicU64>,
        /// Per parity: the sizes stated, then those settled.
        stated: std::sync::Mutex<[Vec<u64>; 2]>,
        settled: std::sync::Mutex<[Option<StatedSizes>; 2]>,
    }

    // SAFETY: the simulated ranks run on one thread.
    unsafe impl Send for MemArea {}
    unsafe impl Sync for MemArea {}

    /// Per rank, a view of one shared MemArea (its own turn counter).
    pub struct RankArea(pub Arc<MemArea>, pub usize);

    impl MemArea {
        pub fn new(members: usize, slot: usize) -> Arc<MemArea> {
            Arc::new(MemArea {
                members,
                slot,
                mem: UnsafeCell::new(vec![0; (2 * members + 2) * slot]),
                arrivals: AtomicU64::new(0),
                released: AtomicU64::new(0),
                turns: (0..members).map(|_| AtomicU64::new(0)).collect(),
                sleeping: (0..members).map(|_| AtomicU64::new(0)).collect(),
                stated: Default::default(),
                settled: Default::default(),
            })
        }
        fn at(&self, i: usize) -> *mut u8 {
            // SAFETY: inside the vector, which never reallocates.
            unsafe { (*self.mem.get()).as_mut_ptr().add(i * self.slot) }
        }
    }

    impl HostArea for RankArea {
        fn slot_len(&self) -> usize {
            self.0.slot
        }
        fn contribution(&self, member: usize, op: u64) -> *mut u8 {
            self.0.at(2 * member + (op % 2) as usize)
        }
        fn result(&self, op: u64) -> *mut u8 {
            self.0.at(2 * self.0.members + (op % 2) as usize)
        }
        fn arrive(&self, op: u64) -> bool {
            self.0.arrivals.fetch_add(1, Ordering::AcqRel) + 1 == (op + 1) * self.0.members as u64
        }
        fn release(&self, op: u64) {
            self.0.settled.lock().unwrap()[(op % 2) as usize] = None;
            self.0.released.store(op + 1, Ordering::Release);
        }
        fn released(&self, op: u64) -> bool {
            self.0.released.load(Ordering::Acquire) > op
        }
        fn set_sleeping(&self, member: usize, on: bool) {
            self.0.sleeping[member].store(on as u64, Ordering::SeqCst)
        }
        fn sleeping(&self, member: usize) -> bool {
            self.0.sleeping[member].load(Ordering::SeqCst) != 0
        }
        fn state_size(&self, op: u64, size: u64) {
            self.0.stated.lock().unwrap()[(op % 2) as usize].push(size)
        }
        fn settle_sizes(&self, op: u64) -> StatedSizes {
            let stated = std::mem::take(&mut self.0.stated.lock().unwrap()[(op % 2) as usize]);
            let first = stated[0];
            StatedSizes { first, differing: stated.iter().copied().find(|&s| s != first) }
        }
        fn release_differing(&self, op: u64, sizes: StatedSizes) {
            self.0.settled.lock().unwrap()[(op % 2) as usize] = Some(sizes);
            self.0.released.store(op + 1, Ordering::Release);
        }
        fn differing_sizes(&self, op: u64) -> Option<StatedSizes> {
            self.0.settled.lock().unwrap()[(op % 2) as usize]
        }
        fn turn(&self) -> u64 {
            self.0.turns[self.1].load(Ordering::Relaxed)
        }
        fn set_turn(&self, op: u64) {
            self.0.turns[self.1].store(op, Ordering::Relaxed)
        }
    }

    pub fn hosts(n: usize, slot: usize) -> Vec<Arc<dyn HostArea>> {
        let mem = MemArea::new(n, slot);
        (0..n).map(|r| Arc::new(RankArea(mem.clone(), r)) as Arc<dyn HostArea>).collect()
    }

    #[test]
    fn consecutive_allreduces_and_barriers_agree_with_rank_order() {
        for n in [1usize, 2, 3, 5, 8] {
            let areas = hosts(n, 256);
            let dt = sim::u64_type();
            let (op, f) = sim::test_op(1); // not commutative: rank order shows
            for k in 0..5u64 {
                let mut bufs: Vec<TBuf> = (0..n).map(|_| TBuf::new(4, &dt)).collect();
                let vals: Vec<Vec<u64>> = (0..n).map(|r| (0..4).map(|i| sim::value(r, i, k)).collect()).collect();
                for (b, v) in bufs.iter_mut().zip(&vals) {
                    b.set(v);
                }
                let want: Vec<u64> = (0..4).map(|i| (1..n).fold(vals[0][i], |acc, r| f(acc, vals[r][i]))).collect();
                let ubs: Vec<UserBuf> = bufs.iter_mut().map(|b| b.ub()).collect();
                let errs = sim::run(n, k, |r| {
                    let h = Host { op: HostOp { area: areas[r].clone(), op: 2 * k }, slot: 256 };
                    allreduce(sim::view(r, n), 1, &h, None, ubs[r].clone(), op.clone(), dt.clone())
                });
                assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                for b in bufs.iter_mut() {
                    assert_eq!(b.get(), want, "n {n} op {k}");
                }
                let errs = sim::run_opts(n, k, |r| {
                    let h = Host { op: HostOp { area: areas[r].clone(), op: 2 * k + 1 }, slot: 256 };
                    barrier(sim::view(r, n), 2, &h)
                }, true);
                assert!(errs.iter().all(|e| e.is_none()));
            }
        }
    }

    /// A host schedule appended to another (as an in-place alltoall's
    /// copies come first) must still run its step: it is kept outside the
    /// rounds until then (`Schedule::host`), and a first version of that
    /// lost it on `append`, so nothing moved and no test failed.
    #[test]
    fn a_joined_host_schedule_still_moves_the_data() {
        let n = 3;
        let dt = sim::u64_type();
        for (k, prefix) in [false, true].into_iter().enumerate() {
            let areas = hosts(n, 256);
            let mut send: Vec<TBuf> = (0..n).map(|_| TBuf::new(n as u64, &dt)).collect();
            let mut recv: Vec<TBuf> = (0..n).map(|_| TBuf::new(n as u64, &dt)).collect();
            for (r, t) in send.iter_mut().enumerate() {
                t.set(&(0..n).map(|j| (10 * r + j) as u64).collect::<Vec<_>>());
            }
            let blocks = |t: &mut TBuf| -> Vec<UserBuf> { (0..n as u64).map(|j| t.items(j, 1)).collect() };
            let sb: Vec<Vec<UserBuf>> = send.iter_mut().map(blocks).collect();
            let rb: Vec<Vec<UserBuf>> = recv.iter_mut().map(blocks).collect();
            let errs = sim::run(n, 7 + k as u64, |r| {
                let h = Host { op: HostOp { area: areas[r].clone(), op: 0 }, slot: 256 };
                let mut s = Schedule::new(sim::view(r, n), 1);
                if prefix {
                    s.round();
                }
                s.append(alltoall(sim::view(r, n), 1, &h, &sb[r], &rb[r], 8));
                s
            });
            assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
            for (r, t) in recv.iter_mut().enumerate() {
                assert_eq!(t.get(), (0..n).map(|m| (10 * m + r) as u64).collect::<Vec<_>>(), "prefix {prefix}, rank {r}");
            }
        }
    }

    /// The whole-buffer alltoall (one buffer per side) moves what the
    /// per-block one does, for several sizes and block lengths, and runs
    /// again on the other parity's slots.
    #[test]
    fn whole_buffer_alltoall_matches_per_block() {
        let dt = sim::u64_type();
        for n in [1usize, 2, 3, 5] {
            for items in [1u64, 3] {
                let slot = 8 * items as usize * n;
                let areas = hosts(n, slot);
                for k in 0..3u64 {
                    let mut send: Vec<TBuf> = (0..n).map(|_| TBuf::new(items * n as u64, &dt)).collect();
                    let mut recv: Vec<TBuf> = (0..n).map(|_| TBuf::new(items * n as u64, &dt)).collect();
                    for (r, t) in send.iter_mut().enumerate() {
                        t.set(&(0..items * n as u64).map(|i| 1000 * k + 100 * r as u64 + i).collect::<Vec<_>>());
                    }
                    let sb: Vec<UserBuf> = send.iter_mut().map(|t| t.ub()).collect();
                    let rb: Vec<UserBuf> = recv.iter_mut().map(|t| t.ub()).collect();
                    let errs = sim::run(n, 11 + k, |r| {
                        let h = Host { op: HostOp { area: areas[r].clone(), op: k }, slot: slot as u64 };
                        alltoall_whole(sim::view(r, n), 1, &h, sb[r].clone(), rb[r].clone(), 8 * items)
                    });
                    assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                    for (r, t) in recv.iter_mut().enumerate() {
                        let want: Vec<u64> = (0..n as u64).flat_map(|m| (0..items).map(move |i| 1000 * k + 100 * m + items * r as u64 + i)).collect();
                        assert_eq!(t.get(), want, "n {n}, {items} items, op {k}, rank {r}");
                    }
                }
            }
        }
    }

    /// A bcast above a slot runs one operation per slot's worth (each
    /// piece from its own offset of the buffer), and the operation after
    /// it takes the number after its last piece.
    #[test]
    fn bcast_in_pieces_moves_every_byte() {
        let dt = sim::u64_type();
        let slot = 64u64;
        for n in [2usize, 3, 5] {
            for items in [8u64, 9, 24, 33] {
                let areas = hosts(n, slot as usize);
                let pieces = bcast_pieces(items * 8, slot);
                assert_eq!(pieces, (items * 8).div_ceil(slot));
                let root = n - 1;
                let mut bufs: Vec<TBuf> = (0..n).map(|_| TBuf::new(items, &dt)).collect();
                let want: Vec<u64> = (0..items).map(|i| 7000 + i).collect();
                bufs[root].set(&want);
                let ubs: Vec<UserBuf> = bufs.iter_mut().map(|b| b.ub()).collect();
                let errs = sim::run(n, items, |r| {
                    let h = Host { op: HostOp { area: areas[r].clone(), op: 0 }, slot };
                    let mut s = bcast(sim::view(r, n), 1, &h, ubs[r].clone(), root as i32);
                    let next = Host { op: HostOp { area: areas[r].clone(), op: pieces }, slot };
                    s.append(barrier(sim::view(r, n), 1, &next));
                    s
                });
                assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                for (r, b) in bufs.iter_mut().enumerate() {
                    assert_eq!(b.get(), want, "n {n}, {items} items, rank {r}");
                }
            }
        }
    }

    /// Gather through the area: every member's block reaches the root,
    /// in place at the root or not, from any root.
    #[test]
    fn gather_brings_every_block_to_the_root() {
        let dt = sim::u64_type();
        for n in [1usize, 2, 3, 5] {
            let areas = hosts(n, 64);
            for (k, root) in (0..n).enumerate() {
                for in_place in [false, true] {
                    let op = 2 * k as u64 + in_place as u64;
                    let mut mine: Vec<TBuf> = (0..n).map(|_| TBuf::new(2, &dt)).collect();
                    let mut all = TBuf::new(2 * n as u64, &dt);
                    for (r, t) in mine.iter_mut().enumerate() {
                        t.set(&[100 * r as u64 + op, 100 * r as u64 + 1]);
                    }
                    if in_place {
                        let mut pre = vec![0u64; 2 * n];
                        pre[2 * root] = 100 * root as u64 + op;
                        pre[2 * root + 1] = 100 * root as u64 + 1;
                        all.set(&pre);
                    }
                    let ub: Vec<UserBuf> = mine.iter_mut().map(|t| t.ub()).collect();
                    let blocks: Vec<UserBuf> = (0..n as u64).map(|m| all.items(2 * m, 2)).collect();
                    let errs = sim::run(n, 5 + op, |r| {
                        let h = Host { op: HostOp { area: areas[r].clone(), op }, slot: 64 };
                        let send = (!(in_place && r == root)).then(|| ub[r].clone());
                        gather(sim::view(r, n), 1, &h, send, if r == root { &blocks } else { &[] }, root as i32)
                    });
                    assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                    let want: Vec<u64> = (0..n).flat_map(|m| [100 * m as u64 + op, 100 * m as u64 + 1]).collect();
                    assert_eq!(all.get(), want, "n {n}, root {root}, in place {in_place}");
                }
            }
        }
    }

    #[test]
    fn blocks_move_between_members() {
        let n = 4;
        let areas = hosts(n, 512);
        let dt = sim::u64_type();
        // alltoall: 2 items per block; then allgather; then bcast from 2.
        let mut send: Vec<TBuf> = (0..n).map(|_| TBuf::new(2 * n as u64, &dt)).collect();
        let mut recv: Vec<TBuf> = (0..n).map(|_| TBuf::new(2 * n as u64, &dt)).collect();
        for (r, s) in send.iter_mut().enumerate() {
            s.set(&(0..2 * n).map(|i| (r * 100 + i) as u64).collect::<Vec<_>>());
        }
        let blocks = |t: &mut TBuf| -> Vec<UserBuf> { (0..n as u64).map(|j| t.items(2 * j, 2)).collect() };
        let sb: Vec<Vec<UserBuf>> = send.iter_mut().map(blocks).collect();
        let rb: Vec<Vec<UserBuf>> = recv.iter_mut().map(blocks).collect();
        let errs = sim::run(n, 3, |r| {
            let h = Host { op: HostOp { area: areas[r].clone(), op: 0 }, slot: 512 };
            alltoall(sim::view(r, n), 1, &h, &sb[r], &rb[r], 16)
        });
        assert!(errs.iter().all(|e| e.is_none()));
        for (r, t) in recv.iter_mut().enumerate() {
            let want: Vec<u64> = (0..n).flat_map(|m| [(m * 100 + 2 * r) as u64, (m * 100 + 2 * r + 1) as u64]).collect();
            assert_eq!(t.get(), want, "alltoall at {r}");
        }
        let mut mine: Vec<TBuf> = (0..n).map(|_| TBuf::new(1, &dt)).collect();
        for (r, m) in mine.iter_mut().enumerate() {
            m.set(&[r as u64 + 7]);
        }
        let mb: Vec<UserBuf> = mine.iter_mut().map(|m| m.ub()).collect();
        let mut all: Vec<TBuf> = (0..n).map(|_| TBuf::new(n as u64, &dt)).collect();
        let ab: Vec<Vec<UserBuf>> = all.iter_mut().map(|t| (0..n as u64).map(|j| t.items(j, 1)).collect()).collect();
        let errs = sim::run(n, 4, |r| {
            let h = Host { op: HostOp { area: areas[r].clone(), op: 1 }, slot: 512 };
            allgather(sim::view(r, n), 1, &h, Some(mb[r].clone()), &ab[r])
        });
        assert!(errs.iter().all(|e| e.is_none()));
        for t in all.iter_mut() {
            assert_eq!(t.get(), (0..n).map(|r| r as u64 + 7).collect::<Vec<_>>());
        }
        let mut b: Vec<TBuf> = (0..n).map(|_| TBuf::new(3, &dt)).collect();
        b[2].set(&[9, 8, 7]);
        let bb: Vec<UserBuf> = b.iter_mut().map(|t| t.ub()).collect();
        let errs = sim::run(n, 5, |r| {
            let h = Host { op: HostOp { area: areas[r].clone(), op: 2 }, slot: 512 };
            bcast(sim::view(r, n), 1, &h, bb[r].clone(), 2)
        });
        assert!(errs.iter().all(|e| e.is_none()));
        for t in b.iter_mut() {
            assert_eq!(t.get(), vec![9, 8, 7]);
        }
    }
}

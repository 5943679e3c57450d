//! Test harness: runs one collective's schedules on n engines over the
//! simulated network (sim.rs). A seeded PRNG picks when each rank starts its
//! schedule, the network's parameters and its timing, so every seed is a
//! different legal interleaving, and a failure replays from its seed.
//!
//! Also: typed test buffers (`TBuf`) that check the bytes between a derived
//! datatype's items are never touched, and reducers with a known answer
//! (a non-commutative one that catches any operand out of rank order).

use crate::engine::PeerParams;
use crate::request::ReqId;
use crate::sched::{CommView, Reducer, Schedule};
use crate::sim::Sim;
use gridmpi_datatype::{BasicType, Datatype, UserBuf};
use gridmpi_wire::Pid;
use std::sync::Arc;

pub use crate::sim::Rng;

thread_local! {
    /// Pacing rates applied in [`run`]: (rank, peer pid, rate or none).
    pub static PACES: std::cell::RefCell<Vec<(usize, Pid, Option<u64>)>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Connections whose unsent bytes an engine waited on in [`run`] (drain
    /// waits and lifted caps): (rank, peer pid).
    pub static DRAINS: std::cell::RefCell<Vec<(usize, Pid)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A network with random protocol parameters.
fn network(n: usize, rng: &mut Rng) -> Sim {
    let eager_limit = rng.pick(&[0u64, 16, 64, 4096, 1 << 20]);
    let params = PeerParams {
        eager_limit,
        max_data_frame: rng.pick(&[100u32, 1000, 1 << 16]),
        single_copy: rng.below(2) == 0,
        single_copy_min: eager_limit + 1,
    };
    let credit = rng.pick(&[200u32, 10_000, 1 << 20]);
    Sim::new(n, rng.next(), params, credit)
}

/// Run one schedule per rank (built by `build(rank)`, each started at a
/// random moment) to completion. Returns each rank's schedule error.
/// Panics if the collective deadlocks.
pub fn run(n: usize, seed: u64, build: impl FnMut(usize) -> Schedule) -> Vec<Option<String>> {
    run_opts(n, seed, build, false)
}

/// [`run`], and with `synchronizing`, check that no rank finished before
/// every rank had started (the barrier property).
pub fn run_opts(n: usize, seed: u64, mut build: impl FnMut(usize) -> Schedule, synchronizing: bool) -> Vec<Option<String>> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut net = network(n, &mut rng);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut reqs: Vec<Option<ReqId>> = vec![None; n];
    let mut next = 0;
    loop {
        // Start a rank now and then (and whenever nothing else can happen).
        if next < n && (!net.busy() || rng.below(4) == 0) {
            let r = order[next];
            next += 1;
            reqs[r] = Some(net.engines[r].start_schedule(build(r)));
        }
        net.settle_all();
        if synchronizing && next < n {
            for (i, r) in reqs.iter().enumerate() {
                if let Some(r) = r {
                    assert!(!net.engines[i].is_complete(*r), "seed {seed}: rank {i} left before every rank entered");
                }
            }
        }
        if !net.step() && next == n {
            break;
        }
    }
    PACES.with(|p| p.borrow_mut().extend(net.paces.drain(..)));
    DRAINS.with(|d| d.borrow_mut().extend(net.unsent_waits.drain(..)));
    let mut errors = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let r = r.unwrap();
        let e = &mut net.engines[i];
        assert!(e.take(r).is_some(), "seed {seed}: rank {i} of {n} did not finish its schedule (deadlock)");
        errors.push(e.take_schedule_error(r));
        assert_eq!(e.live_requests(), 0, "seed {seed}: rank {i} leaked requests");
        assert!(!e.watching_unsent(), "seed {seed}: rank {i} still waits for a connection to drain");
    }
    errors
}

/// The view of rank `r` of an `n`-rank intracommunicator.
pub fn view(r: usize, n: usize) -> CommView {
    CommView { ctx: 1, rank: r as i32, size: n as i32, pids: (0..n as u32).collect::<Vec<_>>().into(), local_pids: None }
}

/// Views of rank `r` of group `a` (pids 0..na) or group `b` (pids na..na+nb)
/// of an intercommunicator: (remote view, local view, local rank).
pub fn inter_views(pid: usize, na: usize, nb: usize) -> (CommView, CommView) {
    let a: Arc<[Pid]> = (0..na as u32).collect::<Vec<_>>().into();
    let b: Arc<[Pid]> = (na as u32..(na + nb) as u32).collect::<Vec<_>>().into();
    let (mine, theirs, rank) = if pid < na { (a, b, pid) } else { (b, a, pid - na) };
    let remote = CommView { ctx: 1, rank: rank as i32, size: theirs.len() as i32, pids: theirs, local_pids: Some(mine.clone()) };
    let local = CommView { ctx: 3, rank: rank as i32, size: mine.len() as i32, pids: mine, local_pids: None };
    (remote, local)
}

// ---- typed buffers ------------------------------------------------------------

pub fn u64_type() -> Arc<Datatype> {
    Arc::new(Datatype::basic(BasicType::Uint64))
}

/// A derived type with holes: items of two u64 elements, 8 bytes apart
/// with an 8-byte hole, extent 24 bytes.
pub fn holey_type() -> Arc<Datatype> {
    Arc::new(Datatype::vector(2, 1, 2, &u64_type()).unwrap())
}

/// A test datatype by number: 0 u64, 1 holey vector.
pub fn test_type(k: u64) -> Arc<Datatype> {
    if k == 0 {
        u64_type()
    } else {
        holey_type()
    }
}

const SENTINEL: u64 = 0xdead_beef_5a5a_0001;

/// `count` items of `dt` in owned memory, the holes set to a sentinel.
pub struct TBuf {
    pub mem: Vec<u64>,
    pub dt: Arc<Datatype>,
    pub count: u64,
}

impl TBuf {
    pub fn new(count: u64, dt: &Arc<Datatype>) -> TBuf {
        let words = (count as i64 * dt.extent()).max(0) as usize / 8 + 4;
        TBuf { mem: vec![SENTINEL; words], dt: dt.clone(), count }
    }

    /// Elements (u64) in packed order.
    pub fn elements(&self) -> usize {
        (self.count * self.dt.size() / 8) as usize
    }

    pub fn ub(&mut self) -> UserBuf {
        unsafe { UserBuf::new(self.mem.as_mut_ptr() as *mut u8, self.count, self.dt.clone()) }
    }

    /// Items [lo, lo+n) as a buffer.
    pub fn items(&mut self, lo: u64, n: u64) -> UserBuf {
        super::util::items(&self.ub(), lo, n)
    }

    pub fn set(&mut self, vals: &[u64]) {
        assert_eq!(vals.len(), self.elements());
        let b: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        unsafe { self.ub().write_packed(0, &b) };
    }

    pub fn get(&mut self) -> Vec<u64> {
        let mut b = vec![0u8; self.elements() * 8];
        unsafe { self.ub().read_packed(0, &mut b) };
        b.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
    }

    /// The memory this buffer should hold if its elements were `vals` and
    /// nothing else was touched.
    pub fn expect(&self, vals: &[u64]) -> Vec<u64> {
        let mut t = TBuf { mem: vec![SENTINEL; self.mem.len()], dt: self.dt.clone(), count: self.count };
        t.set(vals);
        t.mem
    }
}

// ---- reducers -------------------------------------------------------------------

/// Apply a per-element function to (left, inout) of `count` items of `dt`,
/// through packed copies (so any layout works).
unsafe fn elementwise(left: *const u8, inout: *mut u8, count: u64, dt: &Arc<Datatype>, f: impl Fn(u64, u64) -> u64) {
    let l = UserBuf::new(left as *mut u8, count, dt.clone());
    let io = UserBuf::new(inout, count, dt.clone());
    let mut a = vec![0u8; l.len() as usize];
    let mut b = vec![0u8; io.len() as usize];
    l.read_packed(0, &mut a);
    io.read_packed(0, &mut b);
    for (x, y) in a.chunks(8).zip(b.chunks_mut(8)) {
        let r = f(u64::from_le_bytes(x.try_into().unwrap()), u64::from_le_bytes((&*y).try_into().unwrap()));
        y.copy_from_slice(&r.to_le_bytes());
    }
    io.write_packed(0, &b);
}

/// Composition of affine maps x -> a*x + b (mod 2^32), an element being
/// (a, b) in the low and high halves: associative, not commutative, so a
/// result is right only if every operand was combined in rank order.
pub struct Affine;

pub fn affine(l: u64, r: u64) -> u64 {
    let (a1, b1) = (l as u32, (l >> 32) as u32);
    let (a2, b2) = (r as u32, (r >> 32) as u32);
    let a = a1.wrapping_mul(a2);
    let b = a2.wrapping_mul(b1).wrapping_add(b2);
    a as u64 | (b as u64) << 32
}

impl Reducer for Affine {
    unsafe fn reduce(&self, left: *const u8, inout: *mut u8, count: u64, dt: &Arc<Datatype>) -> Result<(), String> {
        elementwise(left, inout, count, dt, affine);
        Ok(())
    }
    fn is_commutative(&self) -> bool {
        false
    }
}

/// Wrapping u64 addition: commutative.
pub struct Add;

impl Reducer for Add {
    unsafe fn reduce(&self, left: *const u8, inout: *mut u8, count: u64, dt: &Arc<Datatype>) -> Result<(), String> {
        elementwise(left, inout, count, dt, |a, b| a.wrapping_add(b));
        Ok(())
    }
    fn is_commutative(&self) -> bool {
        true
    }
}

/// A reduction's per-element function.
pub type ElementOp = fn(u64, u64) -> u64;

/// A test reducer (0: Affine, 1: Add) and its element function.
pub fn test_op(k: u64) -> (Arc<dyn Reducer>, ElementOp) {
    if k == 0 {
        (Arc::new(Affine), affine)
    } else {
        (Arc::new(Add), |a, b| a.wrapping_add(b))
    }
}

/// Input element `i` of rank `r` (distinct everywhere, odd multipliers so
/// affine products stay informative).
pub fn value(r: usize, i: usize, salt: u64) -> u64 {
    let a = (r as u64 * 2654435761 + i as u64 * 40503 + salt * 97) | 1;
    let b = r as u64 * 7919 + i as u64 * 31 + salt;
    (a & 0xffff_ffff) | (b & 0xffff_ffff) << 32
}

/// Test sizes and process counts.
pub const PROCS: &[usize] = &[1, 2, 3, 4, 5, 7, 8, 9];
pub const COUNTS: &[u64] = &[0, 1, 2, 3, 7, 16, 33, 200];

//! Test harness: runs one collective's schedules on n in-memory engines
//! joined by FIFO links. A seeded PRNG picks when each rank starts its
//! schedule and which link delivers next, so every seed is a different legal
//! interleaving, and a failure replays from its seed.
//!
//! Also: typed test buffers (`TBuf`) that check the bytes between a derived
//! datatype's items are never touched, and reducers with a known answer
//! (a non-commutative one that catches any operand out of rank order).

use crate::buf::UserBuf;
use crate::p2p::*;
use crate::sched::{CommView, Reducer, Schedule};
use crate::wire::Header;
use gridmpi_datatype::{BasicType, Datatype};
use std::collections::VecDeque;
use std::sync::Arc;

pub struct Rng(pub u64);

#[allow(clippy::should_implement_trait)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

thread_local! {
    /// Pacing actions seen by [`run`]: (rank, peer pid, rate or release).
    pub static PACES: std::cell::RefCell<Vec<(usize, Pid, Option<u64>)>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Drain waits seen by [`run`]: (rank, peer pid).
    pub static DRAINS: std::cell::RefCell<Vec<(usize, Pid)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Frames in flight from one engine to another.
type Link = VecDeque<(Header, Vec<u8>)>;

struct Net {
    engines: Vec<Engine>,
    /// links[from][to]
    links: Vec<Vec<Link>>,
    rng: Rng,
    /// Drain waits not yet reported done: (rank, request). They complete
    /// at random moments, or when nothing else can happen.
    drains: Vec<(usize, ReqId)>,
}

impl Net {
    fn new(n: usize, rng: &mut Rng) -> Net {
        let eager_limit = rng.pick(&[0u64, 16, 64, 4096, 1 << 20]);
        let params = PeerParams {
            eager_limit,
            max_data_frame: rng.pick(&[100u32, 1000, 1 << 16]),
            single_copy: rng.below(2) == 0,
            single_copy_min: eager_limit + 1,
        };
        let credit = rng.pick(&[200u32, 10_000, 1 << 20]);
        let mut engines: Vec<Engine> =
            (0..n).map(|i| Engine::new(i as Pid, n, EngineConfig { eager_credit: credit })).collect();
        for e in engines.iter_mut() {
            for p in 0..n {
                e.set_peer_params(p as Pid, params);
            }
        }
        Net {
            engines,
            links: (0..n).map(|_| (0..n).map(|_| VecDeque::new()).collect()).collect(),
            rng: Rng(rng.next() | 1),
            drains: Vec::new(),
        }
    }

    fn drain(&mut self, i: usize) {
        while let Some(a) = self.engines[i].poll_action() {
            match a {
                Action::Transmit(t) => {
                    let mut payload = vec![0u8; t.payload.len() as usize];
                    match &t.payload {
                        Payload::None => {}
                        Payload::Owned(v) => payload.copy_from_slice(v),
                        Payload::Word(w) => payload.copy_from_slice(&w.to_le_bytes()),
                        Payload::User { buf, offset, len } => unsafe {
                            buf.read_packed(*offset, &mut payload[..*len as usize]);
                        },
                    }
                    self.links[i][t.peer as usize].push_back((t.header, payload));
                    if let Some(r) = t.notify {
                        self.engines[i].transmitted(r);
                    }
                }
                Action::Pace { peer, bytes_per_sec } => PACES.with(|p| p.borrow_mut().push((i, peer, bytes_per_sec))),
                Action::Drain { peer, req } => {
                    DRAINS.with(|d| d.borrow_mut().push((i, peer)));
                    self.drains.push((i, req));
                }
                Action::RemoteRead { remote_addr, len, dst, req, .. } => {
                    let src = unsafe { std::slice::from_raw_parts(remote_addr as *const u8, len as usize) };
                    let ok = self.rng.below(4) != 0;
                    if ok {
                        unsafe { dst.write_packed(0, src) };
                    }
                    self.engines[i].remote_read_done(req, ok);
                }
            }
        }
    }
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
    let mut net = Net::new(n, &mut rng);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut reqs: Vec<Option<ReqId>> = vec![None; n];
    let mut next = 0;
    loop {
        // Start a rank now and then (and whenever nothing else can happen).
        let busy = net.links.iter().flatten().any(|l| !l.is_empty());
        if next < n && (!busy || rng.below(4) == 0) {
            let r = order[next];
            next += 1;
            reqs[r] = Some(net.engines[r].start_schedule(build(r)));
        }
        for i in 0..n {
            net.engines[i].progress_schedules();
            net.drain(i);
        }
        if synchronizing && next < n {
            for (i, r) in reqs.iter().enumerate() {
                if let Some(r) = r {
                    assert!(!net.engines[i].is_complete(*r), "seed {seed}: rank {i} left before every rank entered");
                }
            }
        }
        let links: Vec<(usize, usize)> = (0..n)
            .flat_map(|a| (0..n).map(move |b| (a, b)))
            .filter(|&(a, b)| !net.links[a][b].is_empty())
            .collect();
        if !net.drains.is_empty() && (links.is_empty() || rng.below(4) == 0) {
            let (i, req) = net.drains.swap_remove(rng.below(net.drains.len() as u64) as usize);
            net.engines[i].complete_external(req, Default::default());
            continue;
        }
        if links.is_empty() {
            if next < n {
                continue;
            }
            break;
        }
        let (a, b) = links[rng.below(links.len() as u64) as usize];
        let (h, p) = net.links[a][b].pop_front().unwrap();
        net.engines[b].handle_frame(a as Pid, &h, &p).expect("protocol error between correct engines");
        net.engines[b].progress_schedules();
    }
    let mut errors = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let r = r.unwrap();
        let e = &mut net.engines[i];
        assert!(e.take(r).is_some(), "seed {seed}: rank {i} of {n} did not finish its schedule (deadlock)");
        errors.push(e.take_schedule_error(r));
        assert_eq!(e.live_requests(), 0, "seed {seed}: rank {i} leaked requests");
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

//! One-sided communication on the simulated network: every operation and
//! synchronization mode among several ranks, interleavings from seeds
//! (SIM_SEED=n replays one), and hostile frames.
//!
//! Each rank runs a script: steps that call the engine, some returning a
//! request the rank then waits for, as a program blocked in MPI would;
//! the ranks and the network advance together.

use super::*;
use crate::engine::PeerParams;
use crate::sim::{Rng, Sim};
use crate::{Engine, EngineConfig};
use gridmpi_datatype::{BasicType, Datatype, UserBuf};
use gridmpi_wire::rma::OpDesc;
use gridmpi_wire::RmaSync;
use std::collections::VecDeque;
use std::sync::Arc;

type Step = Box<dyn FnOnce(&mut Engine) -> Option<ReqId>>;

#[derive(Default)]
struct Script {
    steps: VecDeque<Step>,
    waiting: Option<ReqId>,
}

impl Script {
    fn then(&mut self, f: impl FnOnce(&mut Engine) -> Option<ReqId> + 'static) {
        self.steps.push_back(Box::new(f));
    }
    /// A step that issues a call returning a request to wait for.
    fn wait(&mut self, f: impl FnOnce(&mut Engine) -> Result<ReqId, RmaError> + 'static) {
        self.then(move |e| Some(f(e).expect("a valid synchronization call")));
    }
    /// A step whose call may be over at once (no request) or return one.
    fn maybe_wait(&mut self, f: impl FnOnce(&mut Engine) -> Result<Option<ReqId>, RmaError> + 'static) {
        self.then(move |e| f(e).expect("a valid synchronization call"));
    }
    fn call(&mut self, f: impl FnOnce(&mut Engine) + 'static) {
        self.then(move |e| {
            f(e);
            None
        });
    }
}

/// Run every rank's script to its end, with the network.
fn run(net: &mut Sim, scripts: &mut [Script], seed: u64) {
    let mut idle_rounds = 0;
    loop {
        let mut all_done = true;
        let mut moved = false;
        for (i, s) in scripts.iter_mut().enumerate() {
            loop {
                if let Some(r) = s.waiting {
                    if !net.engines[i].is_complete(r) {
                        break;
                    }
                    if let Some(e) = net.engines[i].rma_take_error(r) {
                        panic!("seed {seed}: rank {i}: {e}");
                    }
                    net.engines[i].take(r);
                    s.waiting = None;
                }
                match s.steps.pop_front() {
                    Some(f) => {
                        s.waiting = f(&mut net.engines[i]);
                        moved = true;
                        // Let the network move between the steps of a rank.
                        if net.rng.below(3) == 0 {
                            break;
                        }
                    }
                    None => break,
                }
            }
            if !s.steps.is_empty() || s.waiting.is_some() {
                all_done = false;
            }
        }
        if all_done {
            net.run();
            return;
        }
        if net.step() || moved {
            idle_rounds = 0;
        } else {
            idle_rounds += 1;
            assert!(idle_rounds < 3, "seed {seed}: the ranks wait for each other and nothing moves");
        }
    }
}

fn long_type() -> Arc<Datatype> {
    Arc::new(Datatype::basic(BasicType::Long))
}

/// `words` i64 of window memory per rank.
struct Mem(Vec<Box<[i64]>>);

impl Mem {
    fn new(n: usize, words: usize, init: impl Fn(usize, usize) -> i64) -> Mem {
        Mem((0..n).map(|r| (0..words).map(|i| init(r, i)).collect()).collect())
    }
    fn addr(&self, r: usize) -> u64 {
        self.0[r].as_ptr() as u64
    }
}

/// A window over `mem` on every rank; `shared`: every member's memory is
/// reachable directly (as MPI_Win_allocate_shared maps it).
fn windows(net: &mut Sim, mem: &Mem, flavor: Flavor, shared: bool) -> WinId {
    let n = net.engines.len();
    let pids: Arc<[u32]> = (0..n as u32).collect();
    let members: Vec<MemberInfo> = (0..n)
        .map(|r| MemberInfo { size: (mem.0[r].len() * 8) as u64, disp_unit: 8, base: mem.addr(r), direct: shared.then(|| mem.addr(r)) })
        .collect();
    let mut id = None;
    // The control words every member's engine sees (a mapping's header in
    // a real job).
    let ctl: Arc<dyn SharedCtl> = Arc::new(LocalCtl::new(n));
    for (r, e) in net.engines.iter_mut().enumerate() {
        let memory = (flavor != Flavor::Dynamic).then(|| Region { base: mem.addr(r), len: (mem.0[r].len() * 8) as u64 });
        let shared = shared.then(|| ctl.clone());
        let w = e.win_create(WinConfig { ctx: 100, rank: r as i32, pids: pids.clone(), flavor, memory, shared });
        e.win_set_members(w, members.clone());
        id = Some(w);
    }
    id.unwrap()
}

fn longs(p: *const i64, n: u64) -> UserBuf {
    unsafe { UserBuf::new(p as *mut u8, n, long_type()) }
}

fn at(rank: i32, disp: u64, count: u64) -> TargetSpec {
    TargetSpec { rank, disp, count, dt: long_type() }
}

fn params(seed: u64) -> PeerParams {
    // Small frames, so operations are cut in pieces.
    PeerParams { eager_limit: 512, max_data_frame: [96u32, 700, 1 << 20][(seed % 3) as usize], single_copy: false, single_copy_min: u64::MAX }
}

/// Fence epochs: every rank puts into slots it owns at random targets,
/// accumulates (SUM, and sometimes with a strided target type) into
/// shared slots, get-accumulates; then gets everything back and checks it
/// against a model.
#[test]
fn fence_epochs_of_random_operations_match_the_model() {
    let only: Option<u64> = std::env::var("SIM_SEED").ok().and_then(|v| v.parse().ok());
    for seed in 1..=150u64 {
        if only.is_some_and(|o| o != seed) {
            continue;
        }
        let mut rng = Rng(seed * 7919 + 3);
        let n = 1 + rng.below(4) as usize;
        let words = 64usize;
        let mut net = Sim::new(n, seed, params(seed), 1 << 16);
        let mem = Mem::new(n, words, |r, i| (r * 1000 + i) as i64);
        let shared = seed % 4 == 0;
        let win = windows(&mut net, &mem, Flavor::Create, shared);
        let mut model: Vec<Vec<i64>> = mem.0.iter().map(|m| m.to_vec()).collect();
        // Slots 0..32: origin r owns slots 8r..8r+8 of every target (puts);
        // slots 32..64: accumulated by everyone.
        let mut scripts: Vec<Script> = (0..n).map(|_| Script::default()).collect();
        let mut keep: Vec<Box<[i64]>> = Vec::new();
        for s in scripts.iter_mut() {
            s.wait(move |e| e.win_fence(win, false));
        }
        for r in 0..n {
            for _ in 0..rng.below(12) {
                let t = rng.below(n as u64) as i32;
                match rng.below(3) {
                    0 => {
                        let len = 1 + rng.below(8);
                        let slot = 8 * r as u64 + rng.below(9 - len);
                        let data: Box<[i64]> = (0..len).map(|_| rng.below(1 << 40) as i64).collect();
                        model[t as usize][slot as usize..(slot + len) as usize].copy_from_slice(&data);
                        let p = data.as_ptr();
                        keep.push(data);
                        scripts[r].call(move |e| {
                            e.rma_put(win, &longs(p, len), &at(t, slot, len), false).unwrap();
                        });
                    }
                    1 => {
                        // Every other slot from 32 on, through a vector type.
                        let len = 1 + rng.below(16);
                        let data: Box<[i64]> = (0..len).map(|_| rng.below(1000) as i64 - 500).collect();
                        for (k, v) in data.iter().enumerate() {
                            model[t as usize][32 + 2 * k] += v;
                        }
                        let p = data.as_ptr();
                        keep.push(data);
                        let vt = Arc::new(Datatype::vector(len as i64, 1, 2, &long_type()).unwrap());
                        scripts[r].call(move |e| {
                            let ts = TargetSpec { rank: t, disp: 32, count: 1, dt: vt };
                            e.rma_accumulate(win, &longs(p, len), &ts, Op::Sum, false).unwrap();
                        });
                    }
                    _ => {
                        let slot = 33 + 2 * rng.below(15);
                        let v = rng.below(100) as i64;
                        model[t as usize][slot as usize] += v;
                        let data: Box<[i64]> = vec![v, 0].into();
                        let p = data.as_ptr();
                        keep.push(data);
                        scripts[r].call(move |e| {
                            let res = longs(unsafe { p.add(1) }, 1);
                            e.rma_get_accumulate(win, &longs(p, 1), &res, &at(t, slot, 1), Op::Sum, false, true).unwrap();
                        });
                    }
                }
            }
        }
        for s in scripts.iter_mut() {
            s.wait(move |e| e.win_fence(win, false));
        }
        // Read every window back with gets, through a second epoch.
        let mut got: Vec<Box<[i64]>> = (0..n * n).map(|_| vec![0i64; words].into()).collect();
        for (r, s) in scripts.iter_mut().enumerate() {
            for t in 0..n {
                let p = got[r * n + t].as_mut_ptr();
                s.call(move |e| {
                    e.rma_get(win, &longs(p, words as u64), &at(t as i32, 0, words as u64), false).unwrap();
                });
            }
            s.wait(move |e| e.win_fence(win, true));
        }
        run(&mut net, &mut scripts, seed);
        for t in 0..n {
            assert_eq!(&mem.0[t][..], &model[t][..], "seed {seed}: rank {t}'s window");
            for r in 0..n {
                assert_eq!(&got[r * n + t][..], &model[t][..], "seed {seed}: rank {r}'s get of rank {t}'s window");
            }
        }
        for e in &net.engines {
            assert_eq!(e.live_requests(), 0, "seed {seed}: requests leaked");
        }
        drop(keep);
    }
}

/// Exclusive locks: each rank increments a counter at every target with a
/// get, a flush and a put (not atomic without the lock); shared lock_all
/// with fetch-and-op; compare-and-swap. All increments must be there.
#[test]
fn locks_exclude_and_atomics_count() {
    let only: Option<u64> = std::env::var("SIM_SEED").ok().and_then(|v| v.parse().ok());
    for seed in 1..=150u64 {
        if only.is_some_and(|o| o != seed) {
            continue;
        }
        let mut rng = Rng(seed * 31 + 1);
        let n = 1 + rng.below(4) as usize;
        let rounds = 1 + rng.below(4) as usize;
        let mut net = Sim::new(n, seed, params(seed), 1 << 16);
        let mem = Mem::new(n, 4, |_, _| 0);
        let win = windows(&mut net, &mem, if seed % 2 == 0 { Flavor::Allocate } else { Flavor::Create }, seed % 3 == 0);
        let scratch: Vec<Box<[i64]>> = (0..n).map(|_| vec![0i64; 8].into()).collect();
        let mut scripts: Vec<Script> = (0..n).map(|_| Script::default()).collect();
        for (r, s) in scripts.iter_mut().enumerate() {
            let sp = scratch[r].as_ptr() as *mut i64;
            for _ in 0..rounds {
                for t in 0..n as i32 {
                    s.then(move |e| e.win_lock(win, LockKind::Exclusive, t, false).unwrap());
                    s.call(move |e| {
                        e.rma_get(win, &longs(sp, 1), &at(t, 0, 1), false).unwrap();
                    });
                    s.maybe_wait(move |e| e.win_flush(win, Some(t), false));
                    s.call(move |e| unsafe {
                        *sp.add(1) = *sp + 1;
                        e.rma_put(win, &longs(sp.add(1), 1), &at(t, 0, 1), false).unwrap();
                    });
                    s.maybe_wait(move |e| e.win_unlock(win, t));
                }
                s.then(move |e| e.win_lock_all(win, false).unwrap());
                for t in 0..n as i32 {
                    s.call(move |e| unsafe {
                        *sp.add(2) = 1;
                        let r = e.rma_get_accumulate(win, &longs(sp.add(2), 1), &longs(sp.add(3), 1), &at(t, 1, 1), Op::Sum, true, true).unwrap();
                        assert!(r.is_some());
                        // Requests are waited for by the flush below; free it.
                        e.detach(r.unwrap());
                    });
                    // Compare-and-swap: add 1 to slot 2 in a retry loop is
                    // not expressible in a fixed script, so swap our rank in
                    // when the slot is -1 (never): it must stay 0.
                    s.call(move |e| unsafe {
                        *sp.add(4) = 99;
                        *sp.add(5) = -1;
                        e.rma_compare_and_swap(win, &longs(sp.add(4), 1), &longs(sp.add(5), 1), &longs(sp.add(6), 1), &at(t, 2, 1)).unwrap();
                    });
                }
                s.maybe_wait(move |e| e.win_flush(win, None, false));
                s.maybe_wait(move |e| e.win_unlock_all(win));
            }
        }
        run(&mut net, &mut scripts, seed);
        for t in 0..n {
            let want = (n * rounds) as i64;
            assert_eq!(mem.0[t][0], want, "seed {seed}: rank {t}'s lock-protected counter");
            assert_eq!(mem.0[t][1], want, "seed {seed}: rank {t}'s fetch-and-op counter");
            assert_eq!(mem.0[t][2], 0, "seed {seed}: a compare-and-swap that should not have");
        }
        for e in &net.engines {
            assert_eq!(e.live_requests(), 0, "seed {seed}: requests leaked");
        }
    }
}

/// Post-start-complete-wait: rank 0 exposes to all others, which put their
/// rank into their slot; in the next round roles stay, with a compare-and-
/// swap that succeeds.
#[test]
fn post_start_complete_wait() {
    for seed in 1..=100u64 {
        let mut rng = Rng(seed);
        let n = 2 + rng.below(3) as usize;
        let mut net = Sim::new(n, seed, params(seed), 1 << 16);
        let mem = Mem::new(n, 8, |_, _| -1);
        let win = windows(&mut net, &mem, Flavor::Create, seed % 2 == 0);
        let others: Vec<i32> = (1..n as i32).collect();
        let vals: Vec<Box<[i64]>> = (0..n).map(|r| vec![r as i64 * 10, -1, 0].into()).collect();
        let mut scripts: Vec<Script> = (0..n).map(|_| Script::default()).collect();
        for round in 0..2 {
            {
                let g = others.clone();
                scripts[0].call(move |e| e.win_post(win, &g, false).unwrap());
                scripts[0].wait(move |e| e.win_wait(win));
            }
            for r in 1..n {
                let p = vals[r].as_ptr();
                scripts[r].call(move |e| e.win_start(win, &[0], false).unwrap());
                scripts[r].call(move |e| {
                    if round == 0 {
                        e.rma_put(win, &longs(p, 1), &at(0, r as u64, 1), false).unwrap();
                    } else {
                        let res = longs(unsafe { p.add(2) }, 1);
                        e.rma_compare_and_swap(win, &longs(p, 1), &longs(unsafe { p.add(1) }, 1), &res, &at(0, 0, 1)).unwrap();
                    }
                });
                scripts[r].wait(move |e| e.win_complete(win));
            }
        }
        run(&mut net, &mut scripts, seed);
        for r in 1..n {
            assert_eq!(mem.0[0][r], r as i64 * 10, "seed {seed}");
        }
        // Exactly one compare-and-swap found -1.
        let winners = (1..n).filter(|&r| vals[r][2] == -1).count();
        assert_eq!(winners, 1, "seed {seed}");
        assert!(mem.0[0][0] > 0);
    }
}

/// Misuse is refused with the right kind of error, and nothing is sent.
#[test]
fn misuse_is_an_error() {
    let mut net = Sim::new(2, 1, params(1), 1 << 16);
    let mem = Mem::new(2, 4, |_, _| 0);
    let win = windows(&mut net, &mem, Flavor::Create, false);
    let v = [1i64; 8];
    let e = &mut net.engines[0];
    let put = |e: &mut Engine, t: TargetSpec| e.rma_put(win, &longs(v.as_ptr(), t.count), &t, false);
    assert_eq!(put(e, at(1, 0, 1)).unwrap_err().kind, RmaErrorKind::Sync);
    assert_eq!(e.win_unlock(win, 1).unwrap_err().kind, RmaErrorKind::Sync);
    assert_eq!(e.win_complete(win).unwrap_err().kind, RmaErrorKind::Sync);
    assert_eq!(e.win_wait(win).unwrap_err().kind, RmaErrorKind::Sync);
    assert_eq!(e.win_flush(win, Some(1), false).unwrap_err().kind, RmaErrorKind::Sync);
    e.win_lock(win, LockKind::Shared, 1, false).unwrap();
    assert_eq!(put(e, at(2, 0, 1)).unwrap_err().kind, RmaErrorKind::Rank);
    assert_eq!(put(e, at(1, 3, 2)).unwrap_err().kind, RmaErrorKind::Range);
    assert_eq!(e.rma_put(win, &longs(v.as_ptr(), 2), &at(1, 0, 1), false).unwrap_err().kind, RmaErrorKind::Type);
    assert_eq!(e.win_lock(win, LockKind::Shared, 1, false).unwrap_err().kind, RmaErrorKind::Sync);
    assert_eq!(e.win_fence(win, false).unwrap_err().kind, RmaErrorKind::Sync);
    assert_eq!(e.win_free(win).unwrap_err().kind, RmaErrorKind::Sync);
    assert_eq!(e.rma_get(win, &longs(v.as_ptr(), 1), &at(0, 0, 1), true).unwrap_err().kind, RmaErrorKind::Sync, "no epoch to rank 0");
    assert!(put(e, at(1, 3, 1)).is_ok());
    let msg = put(e, at(1, 3, 2)).unwrap_err().msg;
    assert!(msg.contains("rank 1's window of 32 bytes"), "{msg}");
}

/// A dynamic window: operations at attached addresses work; one outside
/// them is dropped by the target and reported by the origin's flush.
#[test]
fn dynamic_windows_check_attached_regions_at_the_target() {
    for seed in 1..=20u64 {
        let mut net = Sim::new(2, seed, params(seed), 1 << 16);
        let mem = Mem::new(2, 8, |_, _| 0);
        let win = windows(&mut net, &mem, Flavor::Dynamic, false);
        let region = Region { base: mem.addr(1) + 16, len: 32 };
        net.engines[1].win_attach(win, region).unwrap();
        assert_eq!(net.engines[1].win_attach(win, Region { base: mem.addr(1) + 40, len: 8 }).unwrap_err().kind, RmaErrorKind::Attach);
        let v: Box<[i64]> = vec![7, 8, 9, 0].into();
        let p = v.as_ptr() as *mut i64;
        let base = mem.addr(1);
        let mut scripts: Vec<Script> = (0..2).map(|_| Script::default()).collect();
        scripts[0].then(move |e| e.win_lock(win, LockKind::Exclusive, 1, false).unwrap());
        scripts[0].call(move |e| {
            e.rma_put(win, &longs(p, 2), &at(1, base + 16, 2), false).unwrap();
            e.rma_get(win, &longs(unsafe { p.add(3) }, 1), &at(1, base + 16, 1), false).unwrap();
        });
        scripts[0].maybe_wait(move |e| e.win_unlock(win, 1));
        run(&mut net, &mut scripts, seed);
        assert_eq!(&mem.0[1][..], &[0, 0, 7, 8, 0, 0, 0, 0]);
        assert_eq!(v[3], 7);
        // Outside: at base (not attached), a get past the region's end.
        let e0 = &mut net.engines[0];
        e0.win_lock(win, LockKind::Exclusive, 1, false).unwrap();
        e0.rma_put(win, &longs(p, 1), &at(1, base, 1), false).unwrap();
        e0.rma_get(win, &longs(p, 2), &at(1, base + 40, 2), false).unwrap();
        let r = e0.win_unlock(win, 1).unwrap().expect("operations went as frames: the unlock waits for them");
        net.run();
        assert!(net.engines[0].is_complete(r), "seed {seed}");
        let e = net.engines[0].rma_take_error(r).expect("the failures are reported");
        assert_eq!(e.kind, RmaErrorKind::Range);
        assert!(e.msg.contains("2 operation(s) on rank 1's window"), "{}", e.msg);
        net.engines[0].take(r);
        assert_eq!(&mem.0[1][..], &[0, 0, 7, 8, 0, 0, 0, 0]);
        net.engines[1].win_detach(win, region.base).unwrap();
        assert!(net.engines[1].win_detach(win, region.base).is_err());
    }
}

/// Frames a correct peer never sends get a protocol error naming what is
/// wrong; memory is not touched.
#[test]
fn hostile_rma_frames_get_protocol_errors() {
    let mem = Mem::new(3, 4, |_, _| 5);
    let mut net = Sim::new(3, 1, params(2), 1 << 16);
    let win = windows(&mut net, &mem, Flavor::Create, false);
    let e = &mut net.engines[1];
    let reason = |r: Result<(), crate::ProtocolError>| r.expect_err("a hostile frame was accepted").reason;
    let tb = long_type().typemap_bytes();
    let op = |offset: u64, d: OpDesc, data: &[u8], reply: Option<u32>| {
        let p = d.encode(&tb, data);
        (Header::new(Frame::RmaOp { win: win.0, offset, reply }, p.len() as u32), p)
    };
    let put = OpDesc { kind: gridmpi_wire::rma::OpKind::Put, op: None, count: 1, packed_at: 0, packed_len: 8, piece_type: false };
    let (h, p) = op(0, put, &[1; 8], None);
    let bad_win = Header::new(Frame::RmaOp { win: 77, offset: 0, reply: None }, p.len() as u32);
    assert!(reason(e.handle_frame(0, &bad_win, &p)).contains("unknown window 77"));
    let (h2, p2) = op(32, put, &[1; 8], None);
    assert!(reason(e.handle_frame(0, &h2, &p2)).contains("outside window"));
    let (h3, p3) = op(0, OpDesc { count: 1, packed_at: 4, ..put }, &[1; 8], None);
    assert!(reason(e.handle_frame(0, &h3, &p3)).contains("piece 4..12"));
    let (h4, p4) = op(0, put, &[1; 8], Some(3));
    assert!(reason(e.handle_frame(0, &h4, &p4)).contains("with a reply"));
    let mut p5 = p.clone();
    p5[0] = 9;
    assert!(reason(e.handle_frame(0, &h, &p5)).contains("malformed"));
    let mut p6 = p.clone();
    p6[OP_DESC] = 200; // the datatype's tag
    assert!(reason(e.handle_frame(0, &h, &p6)).contains("datatype"));
    let sync = |s, arg, req| Header::new(Frame::RmaSync { win: win.0, sync: s, arg, req }, 0);
    assert!(reason(e.handle_frame(0, &sync(RmaSync::Unlock, 1, 0), &[])).contains("does not hold"));
    assert!(reason(e.handle_frame(0, &sync(RmaSync::FlushDone, 1, 0), &[])).contains("answers flush 1"));
    assert!(reason(e.handle_frame(0, &sync(RmaSync::LockGranted, 0, 0), &[])).contains("not asked for"));
    assert!(reason(e.handle_frame(0, &sync(RmaSync::GetFailed, 0, 4), &[])).contains("not pending"));
    e.handle_frame(0, &sync(RmaSync::LockShared, 0, 0), &[]).unwrap();
    assert!(reason(e.handle_frame(0, &sync(RmaSync::LockExclusive, 0, 0), &[])).contains("asks again"));
    assert_eq!(&mem.0[1][..], &[5, 5, 5, 5], "memory touched by a refused frame");
    // The valid put still works.
    e.handle_frame(0, &h, &p).unwrap();
    assert_eq!(mem.0[1][0], 0x0101_0101_0101_0101);
    // Random operation frames: errors or effects within the window, never a panic.
    let mut rng = Rng(5);
    for _ in 0..20000 {
        let kind = 1 + rng.below(6) as u8;
        let d = OpDesc {
            kind: match kind {
                1 => gridmpi_wire::rma::OpKind::Put,
                2 => gridmpi_wire::rma::OpKind::Get,
                3 => gridmpi_wire::rma::OpKind::Accumulate,
                4 => gridmpi_wire::rma::OpKind::GetAccumulate,
                5 => gridmpi_wire::rma::OpKind::FetchAndOp,
                _ => gridmpi_wire::rma::OpKind::CompareAndSwap,
            },
            op: (kind >= 3 && kind <= 5).then(|| rng.below(14) as u8),
            count: rng.below(6),
            packed_at: rng.below(40),
            packed_len: 1 + rng.below(40),
            piece_type: rng.below(2) == 1,
        };
        let data = vec![3u8; d.data_len().unwrap_or(0).min(100) as usize];
        let (h, p) = op(rng.below(40), d, &data, d.kind.replies().then(|| rng.below(5) as u32));
        let _ = e.handle_frame(rng.below(3) as u32, &h, &p);
        while e.poll_action().is_some() {}
    }
}

const OP_DESC: usize = gridmpi_wire::rma::OP_DESC_LEN;

#[test]
fn a_window_of_one_rank_works_alone() {
    let mut e = Engine::new(0, 1, EngineConfig::default());
    let mem = Mem::new(1, 4, |_, i| i as i64);
    let pids: Arc<[u32]> = vec![0].into();
    let win = e.win_create(WinConfig { ctx: 8, rank: 0, pids, flavor: Flavor::Allocate, memory: Some(Region { base: mem.addr(0), len: 32 }), shared: None });
    e.win_set_members(win, vec![MemberInfo { size: 32, disp_unit: 8, base: mem.addr(0), direct: None }]);
    let r = e.win_fence(win, false).unwrap();
    e.progress_rma();
    e.progress_schedules();
    e.progress_rma();
    assert!(e.take(r).is_some());
    let v = [10i64, 20];
    e.rma_accumulate(win, &longs(v.as_ptr(), 2), &at(0, 2, 2), Op::Max, false).unwrap();
    let mut out = [0i64; 4];
    e.rma_get(win, &longs(out.as_mut_ptr(), 4), &at(0, 0, 4), false).unwrap();
    assert_eq!(out, [0, 1, 10, 20]);
    let r = e.win_free(win).unwrap();
    e.progress_schedules();
    e.progress_rma();
    assert!(e.take(r).is_some());
    e.win_drop(win);
    assert_eq!(e.live_requests(), 0);
}

/// The lock-free side (fast.rs) of a window in shared memory: operations
/// only inside a passive epoch the engine knows of, a lock it takes is
/// exclusive against the engine's own lockers and is taken over by the
/// engine at its next call, and a freed window refuses everything.
#[test]
fn the_lock_free_side_follows_the_epochs() {
    use crate::rma::LockKind;
    let mut net = Sim::new(2, 5, params(0), 1 << 20);
    let mem = Mem::new(2, 8, |_, _| 0);
    let win = windows(&mut net, &mem, Flavor::Allocate, true);
    let f0 = net.engines[0].win_fast(win).expect("a window in shared memory has a lock-free side");
    let f1 = net.engines[1].win_fast(win).unwrap();
    let v: i64 = 42;
    let src = &v as *const i64 as *const u8;
    net.engines[0].refresh_fast(win);
    net.engines[1].refresh_fast(win);
    // No epoch: nothing here.
    assert!(!unsafe { f0.put(1, 0, src, 8) } && !f0.flush(Some(1)));
    // Rank 0 takes rank 1's lock here; rank 1's engine cannot take it too.
    assert!(f0.lock(1, true));
    assert!(!f0.lock(1, false), "a second lock on the same target");
    assert!(unsafe { f0.put(1, 2, src, 8) } && f0.flush(Some(1)));
    assert_eq!(mem.0[1][2], 42);
    assert!(!unsafe { f0.put(1, 8, src, 8) }, "past the window");
    assert!(!unsafe { f0.put(0, 0, src, 8) }, "no epoch to rank 0");
    let r = net.engines[1].win_lock(win, LockKind::Exclusive, 1, false).unwrap().expect("waits: rank 0 holds it");
    net.run();
    assert!(!net.engines[1].is_complete(r));
    // Rank 0's engine takes the lock over; its unlock releases rank 1's lock word.
    net.engines[0].absorb_fast(win);
    net.engines[0].refresh_fast(win);
    assert!(!f0.unlock(1), "the engine holds it now");
    assert!(unsafe { f0.put(1, 3, src, 8) }, "still in the epoch");
    assert!(net.engines[0].win_unlock(win, 1).unwrap().is_none());
    net.engines[0].refresh_fast(win);
    assert!(!unsafe { f0.put(1, 3, src, 8) }, "the epoch is over");
    net.run();
    assert!(net.engines[1].is_complete(r), "rank 1 got the lock once rank 0 let go");
    net.engines[1].refresh_fast(win);
    assert!(!f0.lock(1, false), "rank 1 holds it");
    assert!(unsafe { f1.put(1, 4, src, 8) });
    assert!(net.engines[1].win_unlock(win, 1).unwrap().is_none());
    // A lock taken and released here alone.
    net.engines[0].refresh_fast(win);
    assert!(f0.lock(1, false) && f0.unlock(1));
    net.engines[0].win_drop(win);
    assert!(!f0.lock(1, false) && !unsafe { f0.put(1, 0, src, 8) });
}

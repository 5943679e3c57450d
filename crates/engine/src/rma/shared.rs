//! Windows in memory every member maps (all members on one host): the
//! origin itself does the operations in the target's memory, and the
//! target's engine takes no part.
//!
//! - Puts and gets are copies between the caller's buffer and the mapping.
//! - Accumulates, get-accumulates, fetch-and-op and compare-and-swap are
//!   element-wise atomic: an element of 1, 2, 4 or 8 bytes at an address
//!   aligned to its size is changed by one CPU atomic (an add, a swap, or a
//!   compare-exchange loop around the reduction kernel); any other element
//!   (`long double`, a MINLOC pair, a misaligned one) only while holding the
//!   target's accumulate mutex. Whether an element takes the atomic depends
//!   only on its type and its address, so every origin touching it takes
//!   the same road and concurrent accumulates never tear (MPI 4.1 §12.7.1,
//!   same datatype and same op or MPI_NO_OP). An operation arriving as a
//!   frame (queued while a PSCW gate was closed) is applied the same way.
//! - MPI_Win_lock/lock_all/unlock take and release a reader-writer word of
//!   the target in the shared memory, its own process included: the
//!   target's lock manager ([`super::lock`]) is not used for such a window,
//!   so every locker (all on the host) agrees on one word. A waiting
//!   exclusive locker holds new shared lockers off, so it is not starved.
//! - Flushes are memory fences once nothing went as frames.
//!
//! The words live in the mapping the driver made; [`SharedCtl`] is how the
//! engine finds them (the engine makes no system call).

use super::Op;
use gridmpi_datatype::{BasicType, Datatype, TypeClass, UserBuf};
use gridmpi_wire::rma::{OpDesc, OpKind};
use std::sync::atomic::{fence, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

/// The control words of a window whose members all map its memory.
pub trait SharedCtl: Send + Sync {
    /// Member `rank`'s lock word (MPI_Win_lock), shared by every member.
    fn lock_word(&self, rank: usize) -> &AtomicU64;
    /// Member `rank`'s accumulate mutex (0 free, 1 held), for the elements
    /// no CPU atomic covers.
    fn acc_mutex(&self, rank: usize) -> &AtomicU64;
}

/// Control words in this process's memory, for engines sharing one
/// address space (the simulated network's tests).
pub struct LocalCtl(Vec<AtomicU64>);

impl LocalCtl {
    pub fn new(members: usize) -> LocalCtl {
        LocalCtl((0..2 * members).map(|_| AtomicU64::new(0)).collect())
    }
}

impl SharedCtl for LocalCtl {
    fn lock_word(&self, rank: usize) -> &AtomicU64 {
        &self.0[2 * rank]
    }
    fn acc_mutex(&self, rank: usize) -> &AtomicU64 {
        &self.0[2 * rank + 1]
    }
}

// The lock word: shared holders in the low 32 bits, the writer bit, and
// the count of exclusive lockers waiting above it.
const READERS: u64 = (1 << 32) - 1;
const WRITER: u64 = 1 << 32;
const WAITING_ONE: u64 = 1 << 33;

/// Try to take the shared lock.
pub(crate) fn try_lock_shared(w: &AtomicU64) -> bool {
    let mut v = w.load(Ordering::Relaxed);
    loop {
        // Not while a writer holds it or waits for it (no writer starvation).
        if v & !READERS != 0 {
            return false;
        }
        match w.compare_exchange_weak(v, v + 1, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(x) => v = x,
        }
    }
}

/// Try to take the exclusive lock. `registered`: whether this locker is
/// already counted among the waiting writers (it is after a first failed
/// try, and stays counted until it gets the lock).
pub(crate) fn try_lock_exclusive(w: &AtomicU64, registered: &mut bool) -> bool {
    let mut v = w.load(Ordering::Relaxed);
    loop {
        if v & (READERS | WRITER) == 0 {
            let new = (v | WRITER) - if *registered { WAITING_ONE } else { 0 };
            match w.compare_exchange_weak(v, new, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => {
                    *registered = false;
                    return true;
                }
                Err(x) => v = x,
            }
        } else if !*registered {
            w.fetch_add(WAITING_ONE, Ordering::Relaxed);
            *registered = true;
            return false;
        } else {
            return false;
        }
    }
}

/// Take the exclusive lock if it is free now, without joining the waiting
/// writers (the lock-free path, fast.rs, which otherwise leaves it to the
/// ordinary one).
pub(crate) fn try_lock_exclusive_now(w: &AtomicU64) -> bool {
    let mut v = w.load(Ordering::Relaxed);
    while v & (READERS | WRITER) == 0 {
        match w.compare_exchange_weak(v, v | WRITER, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(x) => v = x,
        }
    }
    false
}

pub(crate) fn unlock_shared(w: &AtomicU64) {
    let before = w.fetch_sub(1, Ordering::Release);
    debug_assert!(before & READERS != 0, "released a shared lock nobody held");
}

pub(crate) fn unlock_exclusive(w: &AtomicU64) {
    let before = w.fetch_and(!WRITER, Ordering::Release);
    debug_assert!(before & WRITER != 0, "released an exclusive lock nobody held");
}

/// The accumulate mutex of one target, held for the length of one
/// operation's non-atomic elements (no MPI call happens while it is held).
struct Mutex<'a>(&'a AtomicU64);

impl<'a> Mutex<'a> {
    fn lock(m: &'a AtomicU64) -> Mutex<'a> {
        while m.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            while m.load(Ordering::Relaxed) != 0 {
                std::hint::spin_loop();
            }
        }
        Mutex(m)
    }
}

impl Drop for Mutex<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// Whether an element of `b` at `p` is changed by a CPU atomic.
fn atomic_element(b: BasicType, p: *mut u8) -> bool {
    let s = b.size();
    matches!(s, 1 | 2 | 4 | 8) && (p as usize) % s == 0
}

/// `inout = input op inout` for one element, in a local copy.
fn reduce_one(op: Op, b: BasicType, input: &[u8], inout: &mut [u8]) -> Result<(), String> {
    // SAFETY: both hold one element of `b`.
    unsafe { gridmpi_reduce::reduce(op, b, input.as_ptr(), inout.as_mut_ptr(), 1) }.map_err(|e| e.to_string())
}

/// One element at `p` (aligned, 1/2/4/8 bytes) changed atomically: `op`
/// with `input` (for CAS: swap in `input` if it holds `compare`); its old
/// bytes go to `old`.
macro_rules! atomic_rmw {
    ($at:ty, $int:ty, $p:expr, $b:expr, $kind:expr, $op:expr, $input:expr, $compare:expr, $old:expr) => {{
        // SAFETY: the caller checked size and alignment; the window's memory
        // is mapped for the window's life and only accessed atomically here.
        let a = unsafe { <$at>::from_ptr($p as *mut $int) };
        let val = |s: &[u8]| <$int>::from_ne_bytes(s.try_into().expect("one element"));
        let class = $b.class();
        let before: $int = match ($kind, $op) {
            (OpKind::CompareAndSwap, _) => match a.compare_exchange(val($compare), val($input), Ordering::AcqRel, Ordering::Acquire) {
                Ok(v) | Err(v) => v,
            },
            (_, Op::NoOp) => a.load(Ordering::Acquire),
            (_, Op::Replace) => a.swap(val($input), Ordering::AcqRel),
            (_, Op::Sum) if matches!(class, TypeClass::SignedInt | TypeClass::UnsignedInt) => a.fetch_add(val($input), Ordering::AcqRel),
            // Sums of doubles and floats, the commonest accumulate: the
            // addition inline rather than through the kernel table.
            (_, Op::Sum) if class == TypeClass::Float && (size_of::<$int>() == 8 || size_of::<$int>() == 4) => {
                let add = |cur: $int| -> $int {
                    let (x, y) = (cur.to_ne_bytes(), $input);
                    if size_of::<$int>() == 8 {
                        let s = f64::from_ne_bytes(x[..].try_into().unwrap()) + f64::from_ne_bytes(y.try_into().unwrap());
                        <$int>::from_ne_bytes(s.to_ne_bytes()[..].try_into().unwrap())
                    } else {
                        let s = f32::from_ne_bytes(x[..].try_into().unwrap()) + f32::from_ne_bytes(y.try_into().unwrap());
                        <$int>::from_ne_bytes(s.to_ne_bytes()[..].try_into().unwrap())
                    }
                };
                let mut cur = a.load(Ordering::Relaxed);
                loop {
                    match a.compare_exchange_weak(cur, add(cur), Ordering::AcqRel, Ordering::Relaxed) {
                        Ok(_) => break cur,
                        Err(x) => cur = x,
                    }
                }
            }
            (_, op) => {
                let mut cur = a.load(Ordering::Relaxed);
                loop {
                    let mut new = cur.to_ne_bytes();
                    reduce_one(op, $b, $input, &mut new)?;
                    match a.compare_exchange_weak(cur, <$int>::from_ne_bytes(new), Ordering::AcqRel, Ordering::Relaxed) {
                        Ok(_) => break cur,
                        Err(x) => cur = x,
                    }
                }
            }
        };
        $old.copy_from_slice(&before.to_ne_bytes());
    }};
}

/// One element of basic type `b` at `p` changed atomically, as
/// [`apply_into`] changes each (the lock-free side's single-element
/// accumulates, fast.rs): false, untouched, when it is no CPU atomic's
/// (size or alignment), for the general road. `input` is empty for
/// MPI_NO_OP; the old bytes go to `old`.
pub(crate) fn rmw_one(p: *mut u8, b: BasicType, kind: OpKind, op: Op, input: &[u8], old: &mut [u8]) -> Result<bool, String> {
    let s = b.size();
    if !atomic_element(b, p) || old.len() != s || !(input.is_empty() || input.len() == s) {
        return Ok(false);
    }
    let zero = [0u8; 8];
    let inp = if input.is_empty() { &zero[..s] } else { input };
    match s {
        1 => atomic_rmw!(AtomicU8, u8, p, b, kind, op, inp, &[][..], old),
        2 => atomic_rmw!(AtomicU16, u16, p, b, kind, op, inp, &[][..], old),
        4 => atomic_rmw!(AtomicU32, u32, p, b, kind, op, inp, &[][..], old),
        _ => atomic_rmw!(AtomicU64, u64, p, b, kind, op, inp, &[][..], old),
    }
    Ok(true)
}

/// One element at `p` changed with plain loads and stores (the caller
/// holds the target's accumulate mutex).
fn locked_rmw(p: *mut u8, b: BasicType, kind: OpKind, op: Op, input: &[u8], compare: &[u8], old: &mut [u8]) -> Result<(), String> {
    let s = old.len();
    // SAFETY: `p` holds one element of the window, which the mutex guards.
    let mem = unsafe { std::slice::from_raw_parts_mut(p, s) };
    old.copy_from_slice(mem);
    match (kind, op) {
        (OpKind::CompareAndSwap, _) => {
            if mem == compare {
                mem.copy_from_slice(input);
            }
        }
        (_, Op::NoOp) => {}
        (_, Op::Replace) => mem.copy_from_slice(input),
        (_, op) => reduce_one(op, b, input, mem)?,
    }
    Ok(())
}

/// Apply one piece of an operation other than a put or get to `mem`, the
/// items of a window in shared memory, element-wise atomically (see the
/// module doc); `mutex` is the target's accumulate mutex. Returns the old
/// bytes (packed) for the kinds that fetch.
pub(crate) fn apply(d: &OpDesc, op: Option<Op>, mem: Items, data: &[u8], mutex: &AtomicU64) -> Result<Option<Vec<u8>>, String> {
    let fetches = matches!(d.kind, OpKind::GetAccumulate | OpKind::FetchAndOp | OpKind::CompareAndSwap);
    let mut old = vec![0u8; if fetches { d.packed_len as usize } else { 0 }];
    apply_into(d, op, mem, data, mutex, fetches.then_some(&mut old[..]))?;
    Ok(fetches.then_some(old))
}

/// `count` items of `dt` at `addr` (window memory, checked to hold them).
#[derive(Clone, Copy)]
pub(crate) struct Items<'a> {
    pub(crate) addr: u64,
    pub(crate) count: u64,
    pub(crate) dt: &'a Arc<Datatype>,
}

impl Items<'_> {
    /// The items as a buffer (for what needs one: copies of non-contiguous
    /// data, pairs).
    pub(crate) fn buf(&self) -> UserBuf {
        super::buf_at(self.addr, self.count, self.dt)
    }

    /// Where the data starts, when it is one dense run of any count of a
    /// contiguous type.
    pub(crate) fn dense(&self) -> Option<*mut u8> {
        self.dt.is_contiguous().then(|| (self.addr as usize as *mut u8).wrapping_offset(self.dt.true_lb() as isize))
    }
}

/// [`apply`], the old bytes (packed) written to `old` for the kinds that
/// fetch (`old` holds the piece's length then).
pub(crate) fn apply_into(d: &OpDesc, op: Option<Op>, mem: Items, data: &[u8], mutex: &AtomicU64, old: Option<&mut [u8]>) -> Result<(), String> {
    let (at, len) = (d.packed_at, d.packed_len as usize);
    let keep = |o: Option<Vec<u8>>, old: Option<&mut [u8]>| {
        if let (Some(o), Some(out)) = (o, old) {
            out.copy_from_slice(&o);
        }
    };
    if d.kind == OpKind::Put {
        // Not an accumulate: no atomicity is promised (a put that races
        // with another access to the same bytes is erroneous).
        return super::target::apply(d, op, &mem.buf(), data).map(|o| keep(o, old));
    }
    let dt: &Datatype = mem.dt;
    let op = op.unwrap_or(Op::Replace);
    let Some(b) = dt.uniform_element().filter(|_| dt.pair().or(dt.uniform_pair()).is_none()) else {
        // Pairs (MINLOC/MAXLOC) and types mixing elements: never a CPU
        // atomic, so always under the mutex.
        let _m = Mutex::lock(mutex);
        return super::target::apply(d, Some(op), &mem.buf(), data).map(|o| keep(o, old));
    };
    let s = b.size();
    if s == 0 || len % s != 0 {
        return Err(format!("a piece of {len} bytes of {s}-byte elements"));
    }
    let (input, compare) = match d.kind {
        OpKind::CompareAndSwap => data.split_at(len),
        _ if op == Op::NoOp => (&[][..], &[][..]),
        _ => (data, &[][..]),
    };
    // The memory's runs; one (no allocation) when it is contiguous.
    let mut one = [(std::ptr::null_mut(), 0usize)];
    let mut many = Vec::new();
    let runs: &[(*mut u8, usize)] = match mem.dense() {
        Some(p) => {
            one[0] = (p.wrapping_add(at as usize), len);
            &one
        }
        None => {
            mem.buf().runs(at, len as u64, usize::MAX, &mut many);
            &many
        }
    };
    let needs_mutex = runs.iter().any(|&(p, l)| (0..l / s).any(|i| !atomic_element(b, p.wrapping_add(i * s))));
    let _m = needs_mutex.then(|| Mutex::lock(mutex));
    // Where old values go: the caller's, or a scratch element.
    let mut scratch = [0u8; 64];
    let mut scratch_big = Vec::new();
    let (old, fetches) = match old {
        Some(o) => (o, true),
        None if s <= 64 => (&mut scratch[..s], false),
        None => {
            scratch_big.resize(s, 0);
            (&mut scratch_big[..], false)
        }
    };
    let zero = vec![0u8; if input.is_empty() { s } else { 0 }];
    let mut k = 0;
    for &(p, l) in runs {
        for i in 0..l / s {
            let e = p.wrapping_add(i * s);
            let inp = if input.is_empty() { &zero[..] } else { &input[k..k + s] };
            let cmp = if compare.is_empty() { &[][..] } else { &compare[k..k + s] };
            let o = if fetches { &mut old[k..k + s] } else { &mut old[..] };
            if atomic_element(b, e) {
                match s {
                    1 => atomic_rmw!(AtomicU8, u8, e, b, d.kind, op, inp, cmp, o),
                    2 => atomic_rmw!(AtomicU16, u16, e, b, d.kind, op, inp, cmp, o),
                    4 => atomic_rmw!(AtomicU32, u32, e, b, d.kind, op, inp, cmp, o),
                    _ => atomic_rmw!(AtomicU64, u64, e, b, d.kind, op, inp, cmp, o),
                }
            } else {
                locked_rmw(e, b, d.kind, op, inp, cmp, o)?;
            }
            k += s;
        }
    }
    if k != len {
        return Err(format!("the window's memory covers {k} of the piece's {len} bytes"));
    }
    Ok(())
}

/// What a flush or unlock of a window in shared memory makes of our
/// loads and stores: visible to whoever synchronizes with us next.
pub(crate) fn publish() {
    fence(Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridmpi_datatype::Datatype;
    use std::sync::Arc;

    fn desc(kind: OpKind, op: Op, count: u64, len: u64) -> OpDesc {
        let op = Op::ALL.iter().position(|&o| o == op).map(|i| i as u8);
        OpDesc { kind, op, count, packed_at: 0, packed_len: len, piece_type: false }
    }

    /// Threads as origins: every kind of element (atomic, CAS-looped,
    /// under the mutex, misaligned) must end with every update counted.
    #[test]
    fn concurrent_accumulates_do_not_tear() {
        const THREADS: usize = 4;
        const ITERS: usize = 20_000;
        // A window: an i64 counter, an f64 sum, two i32 at an odd address
        // (misaligned: under the mutex), a u8.
        let mem: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        let base = mem.as_ptr() as usize;
        let mutex = Arc::new(AtomicU64::new(0));
        let fetched: Vec<Vec<i64>> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..THREADS)
                .map(|_| {
                    let mutex = mutex.clone();
                    sc.spawn(move || {
                        let long = Arc::new(Datatype::basic(BasicType::Long));
                        let dbl = Arc::new(Datatype::basic(BasicType::Double));
                        let int = Arc::new(Datatype::basic(BasicType::Int));
                        let byte = Arc::new(Datatype::basic(BasicType::UnsignedChar));
                        let mut olds = Vec::with_capacity(ITERS);
                        for _ in 0..ITERS {
                            // SAFETY (every buffer): within `mem`, alive for the scope.
                            let m = Items { addr: (base) as u64, count: 1, dt: &long };
                            let old = apply(&desc(OpKind::FetchAndOp, Op::Sum, 1, 8), Some(Op::Sum), m, &1i64.to_ne_bytes(), &mutex).unwrap().unwrap();
                            olds.push(i64::from_ne_bytes(old.try_into().unwrap()));
                            let m = Items { addr: (base + 8) as u64, count: 1, dt: &dbl };
                            apply(&desc(OpKind::Accumulate, Op::Sum, 1, 8), Some(Op::Sum), m, &0.5f64.to_ne_bytes(), &mutex).unwrap();
                            let m = Items { addr: (base + 17) as u64, count: 2, dt: &int };
                            let two: Vec<u8> = [3i32, -1].iter().flat_map(|v| v.to_ne_bytes()).collect();
                            apply(&desc(OpKind::Accumulate, Op::Sum, 2, 8), Some(Op::Sum), m, &two, &mutex).unwrap();
                            let m = Items { addr: (base + 32) as u64, count: 1, dt: &byte };
                            apply(&desc(OpKind::Accumulate, Op::Max, 1, 1), Some(Op::Max), m, &[(olds.len() % 200) as u8], &mutex).unwrap();
                        }
                        olds
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let n = (THREADS * ITERS) as i64;
        let bytes = unsafe { std::slice::from_raw_parts(base as *const u8, 64) };
        assert_eq!(i64::from_ne_bytes(bytes[0..8].try_into().unwrap()), n, "fetch-and-op counter");
        assert_eq!(f64::from_ne_bytes(bytes[8..16].try_into().unwrap()), n as f64 * 0.5, "double sum");
        assert_eq!(i32::from_ne_bytes(bytes[17..21].try_into().unwrap()), 3 * n as i32, "misaligned int");
        assert_eq!(i32::from_ne_bytes(bytes[21..25].try_into().unwrap()), -n as i32, "misaligned int");
        assert_eq!(bytes[32], 199, "byte max");
        // Every old value a fetch-and-op returned is distinct: 0..n.
        let mut all: Vec<i64> = fetched.concat();
        all.sort_unstable();
        assert!(all.iter().enumerate().all(|(i, &v)| v == i as i64), "fetch-and-op results are not a permutation of 0..{n}");
        assert_eq!(mutex.load(Ordering::Relaxed), 0);
        drop(mem);
    }

    #[test]
    fn compare_and_swap_swaps_only_on_a_match() {
        let cell = AtomicU64::new(5);
        let mutex = AtomicU64::new(0);
        let long = Arc::new(Datatype::basic(BasicType::Long));
        let m = Items { addr: cell.as_ptr() as u64, count: 1, dt: &long };
        let d = desc(OpKind::CompareAndSwap, Op::Replace, 1, 8);
        let d = OpDesc { op: None, ..d };
        let data: Vec<u8> = [9i64, 4].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(apply(&d, None, m, &data, &mutex).unwrap().unwrap(), 5i64.to_ne_bytes());
        assert_eq!(cell.load(Ordering::Relaxed), 5);
        let data: Vec<u8> = [9i64, 5].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(apply(&d, None, m, &data, &mutex).unwrap().unwrap(), 5i64.to_ne_bytes());
        assert_eq!(cell.load(Ordering::Relaxed), 9);
    }

    #[test]
    fn exclusive_waits_for_readers_and_holds_new_readers_off() {
        let w = AtomicU64::new(0);
        assert!(try_lock_shared(&w));
        let mut reg = false;
        assert!(!try_lock_exclusive(&w, &mut reg));
        assert!(reg);
        // A new reader does not overtake the waiting writer.
        assert!(!try_lock_shared(&w));
        unlock_shared(&w);
        assert!(try_lock_exclusive(&w, &mut reg));
        assert!(!reg);
        let mut reg2 = false;
        assert!(!try_lock_exclusive(&w, &mut reg2));
        assert!(!try_lock_shared(&w));
        unlock_exclusive(&w);
        assert!(try_lock_exclusive(&w, &mut reg2));
        unlock_exclusive(&w);
        assert_eq!(w.load(Ordering::Relaxed), 0);
        assert!(try_lock_shared(&w) && try_lock_shared(&w));
        unlock_shared(&w);
        unlock_shared(&w);
        assert_eq!(w.load(Ordering::Relaxed), 0);
    }
}

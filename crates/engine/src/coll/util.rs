//! Small helpers shared by the algorithms: sub-buffers, byte staging areas,
//! the power-of-two fold used by recursive algorithms, and the reduction
//! step that keeps operands in rank order.

use gridmpi_datatype::UserBuf;
use crate::sched::{byte_type, Reducer, Round, Schedule, Step};
use std::sync::Arc;

/// Items `[lo, lo + n)` of a typed buffer (same datatype, shifted base).
pub fn items(buf: &UserBuf, lo: u64, n: u64) -> UserBuf {
    let ext = buf.datatype().extent();
    let off = (lo as i64).wrapping_mul(ext) as isize;
    // SAFETY: a sub-range of a buffer the caller described as valid.
    unsafe { UserBuf::new(buf.base().wrapping_offset(off), n, buf.datatype().clone()) }
}

/// Bytes `[off, off + len)` of a byte buffer.
pub fn bytes(buf: &UserBuf, off: u64, len: u64) -> UserBuf {
    debug_assert!(off + len <= buf.len() || len == 0, "byte range {off}+{len} beyond a {}-byte area", buf.len());
    // SAFETY: a sub-range of a dense byte area.
    unsafe { UserBuf::new(buf.base().wrapping_add(off as usize), len, byte_type()) }
}

/// A zero-byte buffer (for synchronisation messages).
pub fn nothing() -> UserBuf {
    // SAFETY: zero bytes are never touched.
    unsafe { UserBuf::new(std::ptr::null_mut(), 0, byte_type()) }
}

/// The buffer's data as a dense byte area: the buffer itself when it is one
/// run in packed order (`true`), else fresh scratch memory (`false`), which
/// the caller fills (pack) or empties (unpack) with `Copy` steps.
pub fn byte_area(s: &mut Schedule, buf: &UserBuf) -> (UserBuf, bool) {
    match buf.contiguous() {
        // SAFETY: the buffer's data is this one run of buf.len() bytes.
        Some(p) => (unsafe { UserBuf::new(p, buf.len(), byte_type()) }, true),
        None => (s.temp_bytes(buf.len()), false),
    }
}

/// Prefix sums: `offsets[i]` = sum of `lens[..i]`; one more entry than `lens`.
pub fn offsets(lens: &[u64]) -> Vec<u64> {
    let mut v = Vec::with_capacity(lens.len() + 1);
    let mut at = 0;
    v.push(0);
    for &l in lens {
        at += l;
        v.push(at);
    }
    v
}

/// The power-of-two fold used by recursive doubling and halving on any
/// number of processes: with p2 the largest power of two <= p and
/// rem = p - p2, ranks below 2*rem pair up (2i, 2i+1); the even one hands
/// its data to the odd one and sits out, the odd one takes part as "new
/// rank" i; ranks from 2*rem on take part as new rank r - rem. Each new
/// rank stands for a contiguous range of old ranks, so combining new ranks
/// in order combines old ranks in order.
#[derive(Clone, Copy, Debug)]
pub struct Fold {
    pub p2: i32,
    pub rem: i32,
}

impl Fold {
    pub fn new(p: i32) -> Fold {
        let mut p2 = 1;
        while p2 * 2 <= p {
            p2 *= 2;
        }
        Fold { p2, rem: p - p2 }
    }

    /// Our new rank, or None for a rank that sits out.
    pub fn new_rank(&self, rank: i32) -> Option<i32> {
        if rank < 2 * self.rem {
            if rank % 2 == 0 {
                None
            } else {
                Some(rank / 2)
            }
        } else {
            Some(rank - self.rem)
        }
    }

    /// The old rank that plays new rank `nr`.
    pub fn old_rank(&self, nr: i32) -> i32 {
        if nr < self.rem {
            2 * nr + 1
        } else {
            nr + self.rem
        }
    }

    /// First old rank a new rank stands for (`nr == p2` gives p).
    pub fn first_old(&self, nr: i32) -> i32 {
        if nr < self.rem {
            2 * nr
        } else {
            nr + self.rem
        }
    }
}

/// Smallest power of two >= n (n >= 1).
pub fn ceil_pow2(n: i32) -> i32 {
    let mut m = 1;
    while m < n {
        m *= 2;
    }
    m
}

/// Add to `round` the local steps computing `mine = lower op higher`, where
/// `theirs` (scratch, may be clobbered) holds the partner's operand and
/// `mine_is_lower` says whose operand comes first in rank order. When ours
/// is the lower operand the result is computed in `theirs` and copied back,
/// since a reduction writes its right operand.
pub fn combine(round: &mut Round, op: &Arc<dyn Reducer>, mine: &UserBuf, theirs: &UserBuf, mine_is_lower: bool) {
    if mine_is_lower {
        round.local.push(Step::Reduce { op: op.clone(), left: mine.clone(), inout: theirs.clone() });
        round.local.push(Step::Copy { from: theirs.clone(), to: mine.clone() });
    } else {
        round.local.push(Step::Reduce { op: op.clone(), left: theirs.clone(), inout: mine.clone() });
    }
}

/// Split `n` items into `p` nearly equal blocks: (offset, count) of block i.
pub fn even_block(n: u64, p: u64, i: u64) -> (u64, u64) {
    let base = n / p;
    let extra = n % p;
    let off = i * base + i.min(extra);
    (off, base + (i < extra) as u64)
}

//! Basic algorithms used everywhere, including inside the library (context
//! id agreement, communicator splitting, finalize).

use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Reducer, Schedule, Step};
use std::sync::Arc;

/// Dissemination barrier: ceil(log2 p) rounds; in round k rank r signals
/// r + 2^k and waits for r - 2^k.
pub fn barrier_dissemination(view: CommView, tag: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let mut dist = 1;
    while dist < size {
        let to = (rank + dist) % size;
        let from = (rank - dist).rem_euclid(size);
        let sb = s.temp_bytes(0);
        let rb = s.temp_bytes(0);
        let round = s.round();
        round.comm.push(Step::Send { to, buf: sb });
        round.comm.push(Step::Recv { from, buf: rb });
        dist *= 2;
    }
    s
}

/// Binomial-tree broadcast from `root`.
pub fn bcast_binomial(view: CommView, tag: i32, buf: UserBuf, root: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    if size == 1 {
        return s;
    }
    let vrank = (rank - root).rem_euclid(size);
    // Receive from the parent.
    let mut mask = 1;
    while mask < size {
        if vrank & mask != 0 {
            let parent = (vrank - mask + root).rem_euclid(size);
            s.round().comm.push(Step::Recv { from: parent, buf: buf.clone() });
            break;
        }
        mask <<= 1;
    }
    // Send to children, largest subtree first.
    mask >>= 1;
    let mut sends = Vec::new();
    while mask > 0 {
        if vrank + mask < size {
            let child = (vrank + mask + root).rem_euclid(size);
            sends.push(Step::Send { to: child, buf: buf.clone() });
        }
        mask >>= 1;
    }
    if !sends.is_empty() {
        s.round().comm.extend(sends);
    }
    s
}

/// Ring allgather of equal blocks: `blocks[r]` is rank r's block (ours
/// already filled); p-1 rounds.
pub fn allgather_ring(view: CommView, tag: i32, blocks: Vec<UserBuf>) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let right = (rank + 1) % size;
    let left = (rank - 1).rem_euclid(size);
    for k in 0..size - 1 {
        let send_block = (rank - k).rem_euclid(size) as usize;
        let recv_block = (rank - k - 1).rem_euclid(size) as usize;
        let round = s.round();
        round.comm.push(Step::Send { to: right, buf: blocks[send_block].clone() });
        round.comm.push(Step::Recv { from: left, buf: blocks[recv_block].clone() });
    }
    s
}

/// Binomial-tree reduce to `root` of `data` (in place on every rank: on
/// return the root's `data` holds the result; other ranks' `data` is
/// clobbered). `tmp` must have the shape of `data`. Operands are combined in
/// rank order, so non-commutative operations are correct when root is 0;
/// for another root the result is computed at 0's subtree order and is then
/// correct as well because the tree is built on ranks relative to 0.
pub fn reduce_binomial(view: CommView, tag: i32, data: UserBuf, tmp: UserBuf, op: Arc<dyn Reducer>, root: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    // Tree rooted at rank 0 in rank order; then 0 sends to root if needed.
    let mut mask = 1;
    while mask < size {
        if rank & mask != 0 {
            let parent = rank - mask;
            s.round().comm.push(Step::Send { to: parent, buf: data.clone() });
            break;
        }
        let child = rank + mask;
        if child < size {
            // data = data op child's data  (we are the lower rank).
            s.round().comm.push(Step::Recv { from: child, buf: tmp.clone() });
            // Combine in the next round's local steps: inout must be `data`
            // with our (lower) operand on the left. Compute tmp = data op tmp,
            // then copy tmp into data.
            let r = s.round();
            r.local.push(Step::Reduce { op: op.clone(), left: data.clone(), inout: tmp.clone() });
            r.local.push(Step::Copy { from: tmp.clone(), to: data.clone() });
        }
        mask <<= 1;
    }
    if root != 0 {
        if rank == 0 {
            s.round().comm.push(Step::Send { to: root, buf: data.clone() });
        } else if rank == root {
            s.round().comm.push(Step::Recv { from: 0, buf: data.clone() });
        }
    }
    s.rounds.retain(|r| !(r.local.is_empty() && r.comm.is_empty()));
    s
}

/// Allreduce as reduce to 0 then broadcast (any operation, any size).
pub fn allreduce_reduce_bcast(view: CommView, tag: i32, data: UserBuf, tmp: UserBuf, op: Arc<dyn Reducer>) -> Schedule {
    let mut s = reduce_binomial(view.clone(), tag, data.clone(), tmp, op, 0);
    let b = bcast_binomial(view, tag, data, 0);
    s.rounds.extend(b.rounds);
    s
}

/// Linear gather of equal blocks to `root`: `blocks[r]` at the root.
pub fn gather_linear(view: CommView, tag: i32, mine: UserBuf, blocks: Vec<UserBuf>, root: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let round = s.round();
    if rank == root {
        for (r, b) in blocks.into_iter().enumerate() {
            if r as i32 == root {
                round.local.push(Step::Copy { from: mine.clone(), to: b });
            } else {
                round.comm.push(Step::Recv { from: r as i32, buf: b });
            }
        }
        let _ = size;
    } else {
        round.comm.push(Step::Send { to: root, buf: mine });
    }
    s
}

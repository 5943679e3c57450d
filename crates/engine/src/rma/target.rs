//! Target side: applying operation frames to window memory, one at a time
//! in arrival order, and answering synchronization frames.
//!
//! Every frame is checked before memory is touched: the payload's
//! descriptor and lengths (by the wire), the datatype (rebuilt through the
//! validating constructors), the piece within the operation's packed data,
//! and the bytes the operation spans within the window (or, for a dynamic
//! window, within one attached region). A frame that fails a check a
//! correct origin would have made is a protocol error; an address outside
//! a dynamic window's regions (which only the target can check) is the
//! user's error: the operation is dropped and counted, and the origin's
//! next flush or unlock reports it.

use super::lock::LockKind;
use super::window::{Flavor, Gate};
use super::{buf_at, Op};
use crate::engine::ProtocolError;
use crate::request::{ReqId, Status};
use crate::Engine;
use gridmpi_datatype::{Datatype, UserBuf};
use gridmpi_wire::rma::{OpDesc, OpKind};
use gridmpi_wire::{Frame, Header, Payload, Pid, RmaSync};

/// `inout = input op inout` over packed elements of `dt`.
fn reduce_packed(op: Op, dt: &Datatype, input: &[u8], inout: *mut u8, len: usize) -> Result<(), String> {
    if let Some((v, i, _)) = dt.pair().or(dt.uniform_pair()) {
        let stride = v.size() + i.size();
        // SAFETY: both hold `len / stride` packed (value, index) pairs.
        return unsafe { gridmpi_reduce::reduce_pair(op, v, i, v.size(), stride, input.as_ptr(), inout, len / stride) }.map_err(|e| e.to_string());
    }
    if let Some(b) = dt.uniform_element() {
        // SAFETY: both hold `len / size` packed elements of `b`.
        return unsafe { gridmpi_reduce::reduce(op, b, input.as_ptr(), inout, len / b.size().max(1)) }.map_err(|e| e.to_string());
    }
    Err(format!("{} on a datatype mixing element types", op.name()))
}

/// Combine `data` into the packed bytes `[at, at + data.len())` of `mem`.
fn combine(op: Op, mem: &UserBuf, at: u64, data: &[u8]) -> Result<(), String> {
    match op {
        Op::NoOp => Ok(()),
        Op::Replace => {
            // SAFETY: the range was checked against the window.
            unsafe { mem.write_packed(at, data) };
            Ok(())
        }
        _ => {
            let dt = mem.datatype().clone();
            if let Some(p) = mem.contiguous() {
                // In place: the packed bytes are the memory.
                return reduce_packed(op, &dt, data, p.wrapping_add(at as usize), data.len());
            }
            let mut cur = vec![0u8; data.len()];
            // SAFETY: the range was checked against the window.
            unsafe { mem.read_packed(at, &mut cur) };
            reduce_packed(op, &dt, data, cur.as_mut_ptr(), cur.len())?;
            unsafe { mem.write_packed(at, &cur) };
            Ok(())
        }
    }
}

/// Apply one piece of an operation other than a get to `mem` (the
/// target's items); returns the old bytes for the kinds that fetch.
pub(crate) fn apply(d: &OpDesc, op: Option<Op>, mem: &UserBuf, data: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let (at, len) = (d.packed_at, d.packed_len as usize);
    let old = || {
        let mut v = vec![0u8; len];
        // SAFETY: the range was checked against the window.
        unsafe { mem.read_packed(at, &mut v) };
        v
    };
    match d.kind {
        OpKind::Put => {
            // SAFETY: as above.
            unsafe { mem.write_packed(at, data) };
            Ok(None)
        }
        OpKind::Accumulate => combine(op.expect("checked by the wire"), mem, at, data).map(|_| None),
        OpKind::GetAccumulate | OpKind::FetchAndOp => {
            let before = old();
            combine(op.expect("checked by the wire"), mem, at, data)?;
            Ok(Some(before))
        }
        OpKind::CompareAndSwap => {
            let before = old();
            let (value, compare) = data.split_at(len);
            if before == compare {
                // SAFETY: as above.
                unsafe { mem.write_packed(at, value) };
            }
            Ok(Some(before))
        }
        OpKind::Get => unreachable!("gets are answered from memory, not applied"),
    }
}

impl Engine {
    pub(crate) fn rma_op_arrived(&mut self, from: Pid, win: u32, offset: u64, reply: Option<u32>, payload: &[u8]) -> Result<(), ProtocolError> {
        let err = |reason: String| ProtocolError { peer: from, reason };
        let (d, type_bytes, data) = OpDesc::decode(payload).map_err(|e| err(e.to_string()))?;
        // Where the piece's reply goes in the origin's buffer. A piece
        // with a type of its own is that type's first bytes (and its type
        // is not kept: no other frame names it).
        let reply_at = d.packed_at;
        let d = if d.piece_type { OpDesc { packed_at: 0, ..d } } else { d };
        let dt = if d.piece_type { self.rma_type_once(from, type_bytes)? } else { self.rma_type(from, type_bytes)? };
        if d.kind.replies() != reply.is_some() {
            return Err(err(format!("{:?} operation {} a reply request", d.kind, if reply.is_some() { "with" } else { "without" })));
        }
        let total = d.count.checked_mul(dt.size()).ok_or_else(|| err("operation size overflows".into()))?;
        if d.packed_at + d.packed_len > total {
            return Err(err(format!("piece {}..{} of a {total}-byte operation", d.packed_at, d.packed_at + d.packed_len)));
        }
        let op = d.op.map(|i| Op::ALL[i as usize]);
        let (w, _) = self.frame_window(from, win)?;
        let dynamic = w.flavor == Flavor::Dynamic;
        // A window in shared memory: other origins change it directly, so
        // this one is applied their way (element-wise atomic).
        let shared = w.shared.clone().map(|c| (c, w.rank as usize));
        let addr = w.local_address(offset, d.count, &dt);
        let Some(addr) = addr else {
            if !dynamic {
                return Err(err(format!("operation at byte {offset} with {} item(s) reaches outside window {win}", d.count)));
            }
            let (w, r) = self.frame_window(from, win)?;
            w.origins[r as usize].failures += 1;
            if let Some(req) = reply {
                self.rma_sync_send(from, win, RmaSync::GetFailed, 0, req);
            }
            return Ok(());
        };
        let mem = buf_at(addr, d.count, &dt);
        match d.kind {
            OpKind::Get => {
                let r = reply.expect("checked above");
                // Read now, not when the transport writes the frame: that
                // may be after the epoch ended here (MPI_Win_wait returns
                // once the origin's complete arrived, behind this get) and
                // the program changed the memory.
                self.reply_data(from, r, reply_at, d.packed_len, |off, len| {
                    let mut v = vec![0u8; len as usize];
                    // SAFETY: the range was checked against the window.
                    unsafe { mem.read_packed(off - reply_at + d.packed_at, &mut v) };
                    Payload::Owned(v)
                });
            }
            _ => {
                let old = match &shared {
                    Some((ctl, me)) => super::shared::apply(&d, op, super::shared::Items { addr, count: d.count, dt: &dt }, data, ctl.acc_mutex(*me)),
                    None => apply(&d, op, &mem, data),
                }
                .map_err(err)?;
                if let (Some(old), Some(r)) = (old, reply) {
                    let old = std::sync::Arc::new(old);
                    self.reply_data(from, r, reply_at, d.packed_len, |off, len| {
                        let s = (off - reply_at) as usize;
                        Payload::Owned(old[s..s + len as usize].to_vec())
                    });
                }
            }
        }
        Ok(())
    }

    /// Send `len` bytes back to the origin's receive `rreq`, starting at
    /// its packed offset `at`, in Data frames no larger than it takes.
    fn reply_data(&mut self, to: Pid, rreq: u32, at: u64, len: u64, payload: impl Fn(u64, u64) -> Payload) {
        let piece = (self.peers[to as usize].params.max_data_frame as u64).max(1);
        let mut off = at;
        while off < at + len {
            let n = (at + len - off).min(piece);
            let h = Header::new(Frame::Data { rreq, offset: off }, n as u32);
            self.transmit(to, h, payload(off, n), None);
            off += n;
        }
    }

    pub(crate) fn rma_sync_send(&mut self, to: Pid, win: u32, sync: RmaSync, arg: u64, req: u32) {
        self.transmit(to, Header::new(Frame::RmaSync { win, sync, arg, req }, 0), Payload::None, None);
    }

    /// Our lock at the target of rank `to` was granted (by a frame, or by
    /// our own lock manager when we are the target).
    pub(crate) fn rma_granted(&mut self, win: u32, to: i32) {
        let w = self.rma.windows.get_mut(&win).expect("a live window");
        let t = &mut w.targets[to as usize];
        t.gate = Gate::Open;
        let pid = w.pids[to as usize];
        for (h, p) in std::mem::take(&mut t.queued) {
            self.transmit(pid, h, p, None);
        }
    }

    /// The lock manager of window `win` granted these requests.
    pub(crate) fn rma_grant_all(&mut self, win: u32, granted: Vec<(i32, LockKind)>) {
        let w = self.rma.windows.get(&win).expect("a live window");
        let (me, pids) = (w.rank, w.pids.clone());
        for (r, _) in granted {
            if r == me {
                self.rma_granted(win, me);
            } else {
                self.rma_sync_send(pids[r as usize], win, RmaSync::LockGranted, 0, 0);
            }
        }
    }

    pub(crate) fn rma_sync_arrived(&mut self, from: Pid, win: u32, sync: RmaSync, arg: u64, req: u32) -> Result<(), ProtocolError> {
        let err = |reason: String| ProtocolError { peer: from, reason };
        let (w, r) = self.frame_window(from, win)?;
        let ru = r as usize;
        match sync {
            RmaSync::LockShared | RmaSync::LockExclusive => {
                if w.locks.involves(r) {
                    return Err(err(format!("asks again for the lock of window {win} it holds or waits for")));
                }
                let kind = if sync == RmaSync::LockShared { LockKind::Shared } else { LockKind::Exclusive };
                if w.locks.request(r, kind) {
                    self.rma_sync_send(from, win, RmaSync::LockGranted, 0, 0);
                }
            }
            RmaSync::Unlock => {
                let granted = w.locks.release(r).ok_or_else(|| err(format!("releases a lock of window {win} it does not hold")))?;
                let failures = std::mem::take(&mut w.origins[ru].failures);
                self.rma_sync_send(from, win, RmaSync::UnlockDone, arg, failures.min(u32::MAX as u64) as u32);
                self.rma_grant_all(win, granted);
            }
            RmaSync::Flush => {
                let failures = std::mem::take(&mut w.origins[ru].failures);
                self.rma_sync_send(from, win, RmaSync::FlushDone, arg, failures.min(u32::MAX as u64) as u32);
            }
            RmaSync::Complete => {
                w.origins[ru].completes += 1;
            }
            RmaSync::Post => {
                let t = &mut w.targets[ru];
                if t.gate == Gate::AwaitPost {
                    self.rma_granted(win, r);
                } else {
                    w.origins[ru].posts += 1;
                }
            }
            RmaSync::LockGranted => {
                if w.targets[ru].gate != Gate::AwaitGrant {
                    return Err(err(format!("grants a lock of window {win} that was not asked for")));
                }
                self.rma_granted(win, r);
            }
            RmaSync::UnlockDone | RmaSync::FlushDone => {
                let t = &mut w.targets[ru];
                if arg <= t.flush_done || arg > t.flush_asked {
                    return Err(err(format!("answers flush {arg} of window {win}; {} asked, {} answered", t.flush_asked, t.flush_done)));
                }
                t.flush_done = arg;
                t.failures += req as u64;
            }
            RmaSync::GetFailed => {
                let t = &mut w.targets[ru];
                if !t.gets.contains(&ReqId(req)) || !matches!(self.reqs.get(req), Some(q) if !q.done) {
                    return Err(err(format!("fails get request {req} of window {win}, which is not pending")));
                }
                self.finish_with(ReqId(req), Status::default());
            }
        }
        Ok(())
    }
}

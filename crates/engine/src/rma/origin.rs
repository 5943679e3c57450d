//! Origin side: checking an operation against the window's epochs and
//! bounds, then doing it here (our own window, or shared memory) or
//! cutting it into frames for the target.

use super::shared::Items;
use super::target::apply;
use super::window::{Gate, Window};
use super::{buf_at, Op, RmaError, RmaErrorKind, TargetSpec, WinId};
use crate::p2p::{RecvOp, RecvStage};
use crate::request::{ReqId, ReqOp, Status};
use crate::Engine;
use gridmpi_datatype::{BasicType, Datatype, UserBuf};
use std::sync::Arc;
use gridmpi_wire::rma::{OpDesc, OpKind, OP_DESC_LEN};
use gridmpi_wire::{Frame, Header, Payload};

/// One operation as the caller gave it.
struct Call<'a> {
    kind: OpKind,
    op: Option<Op>,
    /// The data sent (put, accumulates; none for gets and MPI_NO_OP).
    origin: Option<&'a UserBuf>,
    /// CAS: the compare value.
    compare: Option<&'a UserBuf>,
    /// Where fetched data goes (gets and the fetching accumulates).
    result: Option<&'a UserBuf>,
    t: &'a TargetSpec,
    request: bool,
}

/// The smallest unit an operation is cut at: one element (one pair for
/// MINLOC/MAXLOC types), so no element is split across frames; for a type
/// mixing elements, a whole item.
fn atom(dt: &Datatype) -> u64 {
    if let Some((v, i, _)) = dt.pair().or(dt.uniform_pair()) {
        return (v.size() + i.size()) as u64;
    }
    if let Some(b) = dt.uniform_element() {
        return b.size().max(1) as u64;
    }
    dt.size().max(1)
}

/// The element a piece's own type is made of (see [`piece_type`]), if the
/// operation can be cut so: any type for puts and gets (as bytes), a type
/// of one predefined element for the reductions; not pairs (MINLOC and
/// MAXLOC need them whole) nor compare-and-swap (one element).
fn piece_element(kind: OpKind, dt: &Datatype) -> Option<BasicType> {
    match kind {
        OpKind::Put | OpKind::Get => Some(dt.uniform_element().filter(|_| dt.pair().or(dt.uniform_pair()).is_none()).unwrap_or(BasicType::Byte)),
        OpKind::CompareAndSwap => None,
        _ => dt.uniform_element().filter(|_| dt.pair().or(dt.uniform_pair()).is_none()),
    }
}

/// The target layout of packed bytes `[at, at + n)` of `count` items of
/// `dt` as a type of its own: the runs, as an hindexed type of `elem` from
/// the same base. `n` is as much as fits `room` with the type and
/// `data_factor` data bytes per byte of the piece (at least one `unit`,
/// and whole units). Returns the type's bytes and `n`.
#[allow(clippy::too_many_arguments)]
fn piece_type(dt: &Datatype, count: u64, at: u64, total: u64, elem: BasicType, unit: u64, room: u64, data_factor: u64) -> (Vec<u8>, u64) {
    // The encoding: a tag, two list lengths, the element; 16 bytes a run.
    const FIXED: u64 = 19;
    const PER_RUN: u64 = 16;
    let mut cur = dt.cursor(count);
    cur.seek(at);
    let (mut blocks, mut displs) = (Vec::new(), Vec::new());
    let mut n = 0u64;
    while at + n < total {
        let meta = FIXED + PER_RUN * (blocks.len() as u64 + 1);
        let data_room = if data_factor == 0 { u64::MAX } else { room.saturating_sub(meta) / data_factor };
        let mut want = data_room.saturating_sub(n).min(total - at - n) / unit * unit;
        if meta > room || want == 0 {
            if n > 0 {
                break;
            }
            // Always one unit, whatever the room.
            want = unit.min(total - at);
        }
        let Some((off, len)) = cur.next_run(want as usize) else { break };
        blocks.push((len / elem.size()) as i64);
        displs.push(off);
        n += len as u64;
    }
    let t = Datatype::hindexed(&blocks, &displs, &Arc::new(Datatype::basic(elem))).expect("runs of whole elements make a type");
    (t.typemap_bytes(), n)
}

pub(crate) fn op_index(op: Op) -> u8 {
    Op::ALL.iter().position(|&o| o == op).expect("every op is in ALL") as u8
}

fn packed(buf: &UserBuf, at: u64, len: u64) -> Vec<u8> {
    let mut v = vec![0u8; len as usize];
    // SAFETY: the caller's buffer holds its items until the call returns
    // (we copy now).
    unsafe { buf.read_packed(at, &mut v) };
    v
}

impl Window {
    /// Whether an operation to `rank` may be issued now.
    pub(crate) fn check_access(&self, rank: i32, request: bool) -> Result<(), RmaError> {
        self.check_rank(rank)?;
        let passive = self.lock_all || self.targets[rank as usize].lock.is_some();
        if request && !passive {
            return Err(RmaError::new(
                RmaErrorKind::Sync,
                format!("request-based operations need a passive-target epoch, and none is open for rank {rank} (call MPI_Win_lock or MPI_Win_lock_all first)"),
            ));
        }
        let pscw = self.access.as_ref().is_some_and(|a| a.contains(&rank));
        if !(passive || pscw || self.fence_open) {
            return Err(RmaError::new(
                RmaErrorKind::Sync,
                format!("no access epoch is open for rank {rank} (call MPI_Win_fence, MPI_Win_start or MPI_Win_lock first)"),
            ));
        }
        Ok(())
    }
}

impl Engine {
    /// MPI_Put (MPI_Rput with `request`): returns the request of the
    /// request-based form.
    pub fn rma_put(&mut self, win: WinId, origin: &UserBuf, t: &TargetSpec, request: bool) -> Result<Option<ReqId>, RmaError> {
        self.rma_issue(win, Call { kind: OpKind::Put, op: None, origin: Some(origin), compare: None, result: None, t, request })
    }

    /// MPI_Get (MPI_Rget).
    pub fn rma_get(&mut self, win: WinId, origin: &UserBuf, t: &TargetSpec, request: bool) -> Result<Option<ReqId>, RmaError> {
        self.rma_issue(win, Call { kind: OpKind::Get, op: None, origin: None, compare: None, result: Some(origin), t, request })
    }

    /// MPI_Accumulate (MPI_Raccumulate).
    pub fn rma_accumulate(&mut self, win: WinId, origin: &UserBuf, t: &TargetSpec, op: Op, request: bool) -> Result<Option<ReqId>, RmaError> {
        self.rma_issue(win, Call { kind: OpKind::Accumulate, op: Some(op), origin: Some(origin), compare: None, result: None, t, request })
    }

    /// MPI_Get_accumulate (MPI_Rget_accumulate) and MPI_Fetch_and_op
    /// (`fetch_one`); `origin` is ignored for MPI_NO_OP.
    pub fn rma_get_accumulate(
        &mut self,
        win: WinId,
        origin: &UserBuf,
        result: &UserBuf,
        t: &TargetSpec,
        op: Op,
        request: bool,
        fetch_one: bool,
    ) -> Result<Option<ReqId>, RmaError> {
        let kind = if fetch_one { OpKind::FetchAndOp } else { OpKind::GetAccumulate };
        let origin = (op != Op::NoOp).then_some(origin);
        self.rma_issue(win, Call { kind, op: Some(op), origin, compare: None, result: Some(result), t, request })
    }

    /// MPI_Compare_and_swap.
    pub fn rma_compare_and_swap(&mut self, win: WinId, origin: &UserBuf, compare: &UserBuf, result: &UserBuf, t: &TargetSpec) -> Result<(), RmaError> {
        let c = Call { kind: OpKind::CompareAndSwap, op: None, origin: Some(origin), compare: Some(compare), result: Some(result), t, request: false };
        self.rma_issue(win, c).map(|_| ())
    }

    fn rma_issue(&mut self, win: WinId, c: Call) -> Result<Option<ReqId>, RmaError> {
        let w = self.window(win)?;
        let t = c.t;
        w.check_access(t.rank, c.request)?;
        let offset = w.target_offset(t.rank, t.disp, t.count, &t.dt)?;
        let len = t.count.checked_mul(t.dt.size()).ok_or_else(|| RmaError::new(RmaErrorKind::Type, "the target data's size overflows"))?;
        for (what, b) in [("origin", c.origin), ("compare", c.compare), ("result", c.result)] {
            if let Some(b) = b {
                if b.len() != len {
                    return Err(RmaError::new(
                        RmaErrorKind::Type,
                        format!("the {what} buffer holds {} bytes of data, the target {len} (their type signatures must match)", b.len()),
                    ));
                }
            }
        }
        let done = |e: &mut Engine| c.request.then(|| e.completed_request(Status::default()));
        if len == 0 {
            return Ok(done(self));
        }
        let (me, direct, gate) = (w.rank, w.members[t.rank as usize].direct, w.targets[t.rank as usize].gate);
        let desc = OpDesc { kind: c.kind, op: c.op.map(op_index), count: t.count, packed_at: 0, packed_len: len, piece_type: false };
        if let (Some(ctl), Some(base)) = (w.shared.as_deref(), direct) {
            // Every member's memory is mapped here: the operation is done
            // now, in the target's memory (see shared.rs), once the epoch
            // lets it (our own window: always, as below).
            if t.rank == me || gate == Gate::Open {
                let mem = Items { addr: base + offset, count: t.count, dt: &t.dt };
                shared_op(&c, &desc, mem, ctl.acc_mutex(t.rank as usize))?;
                return Ok(done(self));
            }
            return Ok(self.rma_send(win, &c, desc));
        }
        if t.rank == me {
            let addr = w.local_address(offset, t.count, &t.dt).ok_or_else(|| {
                RmaError::new(RmaErrorKind::Range, format!("address {offset:#x} with {} item(s) is outside the memory attached to this window", t.count))
            })?;
            self.rma_here(&c, &desc, &buf_at(addr, t.count, &t.dt))?;
            return Ok(done(self));
        }
        if let (Some(base), Gate::Open, OpKind::Put | OpKind::Get) = (direct, gate, c.kind) {
            // Shared memory: a store or a load, like the program's own.
            let mem = buf_at(base + offset, t.count, &t.dt);
            // SAFETY: the window memory was checked to hold the items; the
            // caller's buffer is valid in the call. They cannot overlap in a
            // correct program (that would be a conflicting access).
            match c.kind {
                OpKind::Put => unsafe { mem.copy_from(c.origin.unwrap()) },
                _ => unsafe { c.result.unwrap().copy_from(&mem) },
            };
            return Ok(done(self));
        }
        Ok(self.rma_send(win, &c, desc))
    }
}

/// An operation on a window in shared memory (`mem`: the target's items,
/// mapped here), done now by this process.
fn shared_op(c: &Call, d: &OpDesc, mem: Items, mutex: &std::sync::atomic::AtomicU64) -> Result<(), RmaError> {
    // SAFETY (the copies): the window memory was checked to hold the items;
    // the caller's buffers are valid in the call. They cannot overlap in a
    // correct program (that would be a conflicting access).
    let len = d.packed_len as usize;
    match c.kind {
        OpKind::Put => {
            let origin = c.origin.expect("a put has data");
            match (mem.dense(), origin.contiguous()) {
                (Some(to), Some(from)) => unsafe { std::ptr::copy_nonoverlapping(from, to, len) },
                _ => {
                    unsafe { mem.buf().copy_from(origin) };
                }
            }
        }
        OpKind::Get => {
            let result = c.result.expect("a get has a result buffer");
            match (mem.dense(), result.contiguous()) {
                (Some(from), Some(to)) => unsafe { std::ptr::copy_nonoverlapping(from, to, len) },
                _ => {
                    unsafe { result.copy_from(&mem.buf()) };
                }
            }
        }
        _ => {
            let len = d.packed_len;
            let contiguous = c.origin.and_then(|o| o.contiguous());
            let data: std::borrow::Cow<[u8]> = match (contiguous, c.compare) {
                // SAFETY: the caller's buffer holds `len` dense bytes for the call.
                (Some(p), None) => unsafe { std::slice::from_raw_parts(p, len as usize) }.into(),
                _ => {
                    let mut v = c.origin.map(|o| packed(o, 0, len)).unwrap_or_default();
                    if let Some(cmp) = c.compare {
                        v.extend_from_slice(&packed(cmp, 0, len));
                    }
                    v.into()
                }
            };
            let failed = |e| RmaError::new(RmaErrorKind::Op, e);
            match c.result {
                None => super::shared::apply_into(d, c.op, mem, &data, mutex, None).map_err(failed)?,
                // The old values straight into a dense result buffer.
                Some(res) if res.contiguous().is_some() => {
                    // SAFETY: the caller's result buffer holds `len` dense bytes for the call.
                    let out = unsafe { std::slice::from_raw_parts_mut(res.contiguous().unwrap(), len as usize) };
                    super::shared::apply_into(d, c.op, mem, &data, mutex, Some(out)).map_err(failed)?
                }
                Some(res) => {
                    let mut old = vec![0u8; len as usize];
                    super::shared::apply_into(d, c.op, mem, &data, mutex, Some(&mut old)).map_err(failed)?;
                    unsafe { res.write_packed(0, &old) };
                }
            }
        }
    }
    Ok(())
}

impl Engine {
    /// An operation on our own window (`mem`), done now.
    fn rma_here(&mut self, c: &Call, d: &OpDesc, mem: &UserBuf) -> Result<(), RmaError> {
        let len = d.packed_len;
        if c.kind == OpKind::Get {
            let data = packed(mem, 0, len);
            // SAFETY: the result buffer is the caller's, valid in the call.
            unsafe { c.result.unwrap().write_packed(0, &data) };
            return Ok(());
        }
        let mut data = c.origin.map(|o| packed(o, 0, len)).unwrap_or_default();
        if let Some(cmp) = c.compare {
            data.extend_from_slice(&packed(cmp, 0, len));
        }
        let old = apply(d, c.op, mem, &data).map_err(|e| RmaError::new(RmaErrorKind::Op, e))?;
        if let (Some(old), Some(res)) = (old, c.result) {
            // SAFETY: as above.
            unsafe { res.write_packed(0, &old) };
        }
        Ok(())
    }

    /// An operation to another process: frames, sent now or when the
    /// target's gate opens; returns the request-based form's request.
    fn rma_send(&mut self, win: WinId, c: &Call, whole: OpDesc) -> Option<ReqId> {
        let w = &self.rma.windows[&win.0];
        let t = c.t;
        let pid = w.pids[t.rank as usize];
        let offset = w.target_offset(t.rank, t.disp, t.count, &t.dt).expect("checked by the caller");
        let type_bytes = t.dt.typemap_bytes();
        // A receive for what comes back, straight into the result buffer.
        let reply = c.result.map(|res| {
            let op = RecvOp { ctx: 0, src: None, tag: None, buf: res.clone(), stage: RecvStage::Receiving { peer: pid, expect: whole.packed_len, got: 0 } };
            self.new_req(ReqOp::Recv(op))
        });
        let mut frames = Vec::new();
        let frame = |payload: Vec<u8>| {
            let h = Header::new(Frame::RmaOp { win: win.0, offset, reply: reply.map(|r| r.0) }, payload.len() as u32);
            (h, Payload::Owned(payload))
        };
        // The data (and compare value) go in the frames, copied once.
        let parts = [c.origin, c.compare];
        let data_factor = parts.iter().flatten().count() as u64;
        let room = (self.peers[pid as usize].params.max_data_frame as u64).saturating_sub(OP_DESC_LEN as u64);
        let a = atom(&t.dt);
        // A type that would fill much of every frame (an indexed type of
        // many blocks) travels cut to each piece instead: repeated whole,
        // a large one left a few bytes of data per frame, or no frame it
        // fits in.
        let cut_type = (type_bytes.len() as u64 > room / 4).then(|| piece_element(c.kind, &t.dt)).flatten();
        let mut at = 0;
        while at < whole.packed_len {
            let (d, piece_bytes) = match cut_type {
                Some(elem) => {
                    let (bytes, n) = piece_type(&t.dt, t.count, at, whole.packed_len, elem, a, room, data_factor);
                    (OpDesc { count: 1, packed_at: at, packed_len: n, piece_type: true, ..whole }, Some(bytes))
                }
                None => {
                    // Pieces of at most a frame each, cut at element
                    // boundaries; a get asks for all at once.
                    let left = room.saturating_sub(type_bytes.len() as u64);
                    let piece = match c.kind {
                        OpKind::Get | OpKind::CompareAndSwap => whole.packed_len,
                        _ => (left / a * a).max(a),
                    };
                    (OpDesc { packed_at: at, packed_len: (whole.packed_len - at).min(piece), ..whole }, None)
                }
            };
            let n = d.packed_len;
            let payload = d.encode_with(piece_bytes.as_deref().unwrap_or(&type_bytes), (data_factor * n) as usize, |out| {
                for (i, b) in parts.iter().flatten().enumerate() {
                    let i = i * n as usize;
                    // SAFETY: the caller's buffers hold their items until
                    // the call returns (we copy now).
                    unsafe { b.read_packed(at, &mut out[i..i + n as usize]) };
                }
            });
            frames.push(frame(payload));
            at += n;
        }
        let w = self.rma.windows.get_mut(&win.0).expect("checked by the caller");
        let ts = &mut w.targets[t.rank as usize];
        ts.dirty = true;
        if let Some(r) = reply {
            ts.gets.push(r);
            self.rma.gets_out += 1;
        }
        if ts.gate == Gate::Open {
            for (h, p) in frames {
                self.transmit(pid, h, p, None);
            }
        } else {
            ts.queued.extend(frames);
        }
        if !c.request {
            return None;
        }
        Some(match reply {
            Some(r) => {
                let user = self.external_request();
                self.rma.linked.push((r, user));
                user
            }
            None => self.completed_request(Status::default()),
        })
    }
}

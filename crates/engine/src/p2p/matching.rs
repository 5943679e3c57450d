//! Matching: posted receives and unexpected messages, per context id, in
//! the order MPI's non-overtaking rule requires; probes and matched probes.

use crate::p2p::{MsgId, RecvOp, RecvStage};
use crate::request::{ReqId, ReqOp, Status};
use crate::Engine;
use gridmpi_datatype::UserBuf;
use gridmpi_wire::{Pid, HEADER_LEN};
use std::collections::VecDeque;

pub(crate) enum UnexBody {
    Eager { data: Vec<u8>, sync_sreq: Option<u32> },
    Rts { sreq: u32, single_copy_addr: Option<u64> },
    /// A synchronous message to ourselves: the data is still in the
    /// sender's buffer (`sreq`).
    SelfSend { sreq: u32 },
}

pub(crate) struct Unexpected {
    pub(crate) pid: Pid,
    pub(crate) src: i32,
    pub(crate) tag: i32,
    pub(crate) len: u64,
    pub(crate) body: UnexBody,
}

impl Unexpected {
    fn status(&self) -> Status {
        Status { source: self.src, tag: self.tag, count: self.len, cancelled: false, error: None }
    }
}

#[derive(Default)]
pub(crate) struct MatchQueues {
    /// Posted receives in posting order.
    pub(crate) posted: VecDeque<ReqId>,
    /// Arrived, unmatched messages in arrival order.
    pub(crate) unexpected: VecDeque<Unexpected>,
}

/// Hashes context ids (small integers, never chosen by a peer's data alone:
/// a frame's context only selects a queue) with one multiplication; the
/// default SipHash cost more than the rest of matching a message.
#[derive(Default, Clone, Copy)]
pub(crate) struct CtxHasher(u64);

impl std::hash::Hasher for CtxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.0 = (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Match queues by context id.
pub(crate) type QueuesByCtx = std::collections::HashMap<u32, MatchQueues, std::hash::BuildHasherDefault<CtxHasher>>;

/// Entry `i` of a queue, taken off it. The first is the common case (a
/// receive posted in the order its messages arrive); `VecDeque::remove`
/// costs several times `pop_front` there.
fn take_at<T>(q: &mut std::collections::VecDeque<T>, i: usize) -> Option<T> {
    if i == 0 {
        q.pop_front()
    } else {
        q.remove(i)
    }
}

pub(crate) fn matches(want_src: Option<i32>, want_tag: Option<i32>, src: i32, tag: i32) -> bool {
    want_src.is_none_or(|s| s == src) && want_tag.is_none_or(|t| t == tag)
}

impl Engine {
    pub(crate) fn queue_unexpected(&mut self, ctx: u32, u: Unexpected) {
        self.queues.entry(ctx).or_default().unexpected.push_back(u);
        self.unexpected_len += 1;
        self.unexpected_peak = self.unexpected_peak.max(self.unexpected_len);
    }

    /// The first posted receive of `ctx` that matches (src, tag), taken off
    /// the queue.
    pub(crate) fn take_posted_match(&mut self, ctx: u32, src: i32, tag: i32) -> Option<ReqId> {
        let q = self.queues.get_mut(&ctx)?;
        let reqs = &self.reqs;
        let i = q.posted.iter().position(|r| match reqs.get(r.0).map(|q| &q.op) {
            Some(ReqOp::Recv(op)) => matches(op.src, op.tag, src, tag),
            _ => false,
        })?;
        take_at(&mut q.posted, i)
    }

    /// Post a receive: it takes the first matching unexpected message, or
    /// waits in the posted queue.
    pub(crate) fn post_recv(&mut self, r: ReqId, ctx: u32, src: Option<i32>, tag: Option<i32>) {
        let q = self.queues.entry(ctx).or_default();
        match q.unexpected.iter().position(|u| matches(src, tag, u.src, u.tag)) {
            Some(i) => {
                let u = take_at(&mut q.unexpected, i).expect("a found entry");
                self.unexpected_len -= 1;
                self.deliver(r, u);
            }
            None => q.posted.push_back(r),
        }
    }

    /// MPI_Iprobe.
    pub fn iprobe(&self, ctx: u32, src: Option<i32>, tag: Option<i32>) -> Option<Status> {
        let q = self.queues.get(&ctx)?;
        q.unexpected.iter().find(|u| matches(src, tag, u.src, u.tag)).map(Unexpected::status)
    }

    /// MPI_Improbe: take the message off the queue.
    pub fn improbe(&mut self, ctx: u32, src: Option<i32>, tag: Option<i32>) -> Option<(MsgId, Status)> {
        let q = self.queues.get_mut(&ctx)?;
        let i = q.unexpected.iter().position(|u| matches(src, tag, u.src, u.tag))?;
        let u = q.unexpected.remove(i).unwrap();
        self.unexpected_len -= 1;
        let st = u.status();
        Some((MsgId(self.messages.insert(u)), st))
    }

    pub fn message_exists(&self, m: MsgId) -> bool {
        self.messages.get(m.0).is_some()
    }

    /// MPI_Imrecv: receive a message taken by [`Engine::improbe`].
    pub fn imrecv(&mut self, m: MsgId, buf: UserBuf) -> Option<ReqId> {
        let u = self.messages.remove(m.0)?;
        let r = self.new_req(ReqOp::Recv(RecvOp { ctx: 0, src: Some(u.src), tag: Some(u.tag), buf, stage: RecvStage::Posted }));
        self.deliver(r, u);
        Some(r)
    }

    /// MPI_Cancel: a receive still waiting for a match is cancelled here; a
    /// send the receiver has not matched is asked back (p2p/cancel.rs);
    /// anything else completes normally (the standard allows this).
    pub fn cancel(&mut self, r: ReqId) {
        if self.unpost(r) {
            self.finish_with(r, Status { source: -1, tag: -1, count: 0, cancelled: true, error: None });
        } else {
            self.cancel_send(r);
        }
    }

    /// Take receive `r` off its posted queue if it still waits for a match
    /// (the caller then finishes or forgets it); false if it is no such
    /// receive.
    pub(crate) fn unpost(&mut self, r: ReqId) -> bool {
        let Some(req) = self.reqs.get(r.0) else { return false };
        let ReqOp::Recv(RecvOp { ctx, stage: RecvStage::Posted, .. }) = &req.op else { return false };
        if req.done {
            return false;
        }
        let ctx = *ctx;
        if let Some(q) = self.queues.get_mut(&ctx) {
            if let Some(pos) = q.posted.iter().position(|&x| x == r) {
                q.posted.remove(pos);
            }
        }
        true
    }

    /// Take back a receive still waiting for a match, forgetting it
    /// entirely (an abandoned collective's); false if `r` is no such receive.
    pub(crate) fn withdraw_recv(&mut self, r: ReqId) -> bool {
        self.unpost(r) && self.reqs.remove(r.0).is_some()
    }

    /// Messages waiting unmatched (MPI_T: the unexpected-queue length).
    pub fn unexpected_messages(&self) -> u64 {
        self.unexpected_len
    }

    /// The most messages that ever waited unmatched at once.
    pub fn unexpected_peak(&self) -> u64 {
        self.unexpected_peak
    }

    /// Receives posted and not yet matched.
    pub fn posted_receives(&self) -> u64 {
        self.queues.values().map(|q| q.posted.len() as u64).sum()
    }

    /// Bytes of eager payload waiting unmatched, over all senders.
    pub fn unexpected_eager_bytes(&self) -> u64 {
        self.queues
            .values()
            .flat_map(|q| q.unexpected.iter())
            .filter(|u| matches!(u.body, UnexBody::Eager { .. }) && u.pid != self.me)
            .map(|u| u.len + HEADER_LEN as u64)
            .sum()
    }
}

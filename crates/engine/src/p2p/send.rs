//! Starting sends: eager or rendezvous by size and credit; messages to
//! ourselves; completion once the payload has left user memory.

use crate::p2p::matching::{UnexBody, Unexpected};
use crate::p2p::{SendArgs, SendMode, SendOp, SendStage};
use crate::request::{ReqId, ReqOp, Status};
use crate::{Action, Engine};
use gridmpi_datatype::UserBuf;
use gridmpi_wire::{Envelope, Frame, Header, Payload, Pid, SentToken, Transmit, HEADER_LEN, MAX_PAYLOAD};

impl Engine {
    /// A standard-mode send that may leave at once as one eager frame, with
    /// no request: the caller writes the frame now (its payload still points
    /// at the user buffer) or, if the transport cannot take it whole, hands
    /// it back with [`Engine::transmit_later`] holding a copy.
    ///
    /// Refused (the args come back for [`Engine::isend`]) for synchronous
    /// sends, messages to ourselves or a failed process, messages above
    /// the eager limit or the credit left, and whenever frames are queued:
    /// a frame that left ahead of them would overtake a message sent
    /// before it, which MPI forbids (MPI 4.1, 3.5). Also refused for
    /// messages that go in pieces on a paced link.
    pub fn eager_now(&mut self, a: SendArgs) -> Result<Transmit, SendArgs> {
        let len = a.buf.len();
        if a.mode != SendMode::Standard {
            return Err(a);
        }
        let Some(header) = self.eager_header(a.dest, Envelope { ctx: a.ctx, src: a.src, tag: a.tag }, len) else { return Err(a) };
        let payload = if len == 0 { Payload::None } else { Payload::User { buf: a.buf, offset: 0, len } };
        Ok(Transmit { peer: a.dest, header, payload, notify: None })
    }

    /// The header of a standard-mode message of `len` contiguous bytes that
    /// may leave at once as one eager frame (the rules of
    /// [`Engine::eager_now`]), its credit spent; the caller writes header
    /// and bytes now, or hands them back with [`Engine::transmit_later`].
    pub fn eager_header(&mut self, dest: Pid, env: Envelope, len: u64) -> Option<Header> {
        if dest == self.me || !self.actions.is_empty() || self.ft.is_failed(dest) {
            return None;
        }
        if self.paced_piece(dest).is_some_and(|p| len > p) {
            return None;
        }
        let peer = &mut self.peers[dest as usize];
        if len > peer.params.eager_limit || len > MAX_PAYLOAD as u64 || !peer.credit.try_spend(len + HEADER_LEN as u64) {
            return None;
        }
        let mut header = Header::new(Frame::Eager { env, sync: None }, len as u32);
        header.credit = peer.credit.take_owed();
        Some(header)
    }

    /// Queue a frame from [`Engine::eager_now`] that the transport could
    /// not take at once; its payload must no longer point at user memory.
    /// It goes first: nothing was queued when it was made, and anything
    /// queued since was made after it.
    pub fn transmit_later(&mut self, t: Transmit) {
        debug_assert!(!matches!(t.payload, Payload::User { .. }), "a frame sent later must own its payload");
        self.actions.push_front(Action::Transmit(t));
    }

    pub fn isend(&mut self, a: SendArgs) -> ReqId {
        let len = a.buf.len();
        let sync = a.mode == SendMode::Sync;
        if a.dest == self.me {
            return self.self_send(a);
        }
        if let Some(r) = self.send_to_failed(a.dest) {
            return r;
        }
        let env = Envelope { ctx: a.ctx, src: a.src, tag: a.tag };
        let peer = &mut self.peers[a.dest as usize];
        let eager = len <= peer.params.eager_limit
            && len <= MAX_PAYLOAD as u64
            && peer.credit.try_spend(len + HEADER_LEN as u64);
        if eager {
            let r = self.new_req(ReqOp::Send(SendOp {
                peer: a.dest,
                buf: a.buf.clone(),
                sync,
                stage: SendStage::Eager { transmitted: false, acked: !sync },
                cancel: Default::default(),
            }));
            self.transmit_eager(a.dest, env, sync.then_some(r.0), a.buf, r);
            r
        } else {
            let single = peer.params.single_copy && len >= peer.params.single_copy_min;
            let addr = if single { a.buf.contiguous().map(|p| p as u64) } else { None };
            let r = self.new_req(ReqOp::Send(SendOp { peer: a.dest, buf: a.buf, sync, stage: SendStage::AwaitCts, cancel: Default::default() }));
            let (payload, payload_len) = match addr {
                Some(addr) => (Payload::Word(addr), 8),
                None => (Payload::None, 0),
            };
            let h = Header::new(Frame::Rts { env, len, sreq: r.0, single_copy: addr.is_some() }, payload_len);
            self.transmit(a.dest, h, payload, None);
            r
        }
    }

    /// The frames of eager message `buf` to `peer` (send request `r`): one
    /// Eager frame, or on a paced link, when the message is larger than
    /// what the link may hold unsent, an EagerHead and EagerRest frames of
    /// that size. A reply to the peer queued meanwhile then waits for one
    /// piece: a whole 64 KiB message leaving at a 16th of 100 Mbit/s held
    /// a clear-to-send back 84 ms. Only the last frame reports the send
    /// done: the transport writes them in order.
    fn transmit_eager(&mut self, peer: Pid, env: Envelope, sync: Option<u32>, buf: UserBuf, r: ReqId) {
        let len = buf.len();
        let piece = match self.paced_piece(peer) {
            Some(p) if len > p => p,
            _ => {
                let payload = if len == 0 { Payload::None } else { Payload::User { buf, offset: 0, len } };
                return self.transmit(peer, Header::new(Frame::Eager { env, sync }, len as u32), payload, Some(r));
            }
        };
        let h = Header::new(Frame::EagerHead { env, sync, len }, piece as u32);
        self.transmit(peer, h, Payload::User { buf: buf.clone(), offset: 0, len: piece }, None);
        let mut off = piece;
        while off < len {
            let n = (len - off).min(piece);
            let last = off + n == len;
            let h = Header::new(Frame::EagerRest { offset: off }, n as u32);
            self.transmit(peer, h, Payload::User { buf: buf.clone(), offset: off, len: n }, last.then_some(r));
            off += n;
        }
    }

    fn self_send(&mut self, a: SendArgs) -> ReqId {
        let len = a.buf.len();
        let sync = a.mode == SendMode::Sync;
        // A posted receive takes it at once.
        if let Some(rr) = self.take_posted_match(a.ctx, a.src, a.tag) {
            // SAFETY: both buffers are valid while their requests are pending.
            let copied = unsafe { self.recv_buf(rr).copy_from(&a.buf) };
            self.complete_recv(rr, a.src, a.tag, len, copied);
            return self.completed_request(Status { source: -1, tag: -1, ..Default::default() });
        }
        // Standard-mode sends to ourselves are buffered whatever their size
        // (as MPICH does): a program that sends to itself before receiving
        // must not deadlock.
        if !sync {
            let mut data = vec![0u8; len as usize];
            // SAFETY: the send buffer is valid during the call.
            unsafe { a.buf.read_packed(0, &mut data) };
            let r = self.completed_request(Status::default());
            self.queue_unexpected(a.ctx, Unexpected {
                pid: self.me,
                src: a.src,
                tag: a.tag,
                len,
                body: UnexBody::Eager { data, sync_sreq: None },
            });
            return r;
        }
        let r = self.new_req(ReqOp::Send(SendOp { peer: self.me, buf: a.buf, sync, stage: SendStage::SelfPending, cancel: Default::default() }));
        self.queue_unexpected(a.ctx, Unexpected { pid: self.me, src: a.src, tag: a.tag, len, body: UnexBody::SelfSend { sreq: r.0 } });
        r
    }

    /// The transport has taken the payload of a frame that named `token`:
    /// the user buffer may be reused.
    pub fn handle_sent(&mut self, token: SentToken) {
        let r = ReqId(token.0);
        let Some(req) = self.reqs.get_mut(r.0) else { return };
        let ReqOp::Send(op) = &mut req.op else { return };
        let done = match &mut op.stage {
            SendStage::Eager { transmitted, acked } => {
                *transmitted = true;
                *acked
            }
            SendStage::Sending { pending } => {
                *pending = pending.saturating_sub(1);
                *pending == 0
            }
            _ => false,
        };
        if done {
            let status = op.final_status();
            self.finish_with(r, status);
        }
    }
}

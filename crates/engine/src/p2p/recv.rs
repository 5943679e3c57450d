//! Receiving: posting receives, delivering matched messages, and what
//! happens when an eager message or a request-to-send arrives.

use crate::p2p::matching::{matches, UnexBody, Unexpected};
use crate::engine::ProtocolError;
use crate::p2p::{EagerInPieces, RecvArgs, RecvOp, RecvStage};
use crate::request::{ReqId, ReqOp, Status};
use crate::Engine;
use gridmpi_datatype::UserBuf;
use gridmpi_wire::{Envelope, Frame, Header, Payload, Pid, HEADER_LEN};
use std::borrow::Cow;

impl Engine {
    pub fn irecv(&mut self, a: RecvArgs) -> ReqId {
        let r = self.new_req(ReqOp::Recv(RecvOp { ctx: a.ctx, src: a.src, tag: a.tag, buf: a.buf, stage: RecvStage::Posted }));
        self.post_recv(r, a.ctx, a.src, a.tag);
        r
    }

    /// A blocking receive's quick road: a receive of (`ctx`, `src`, `tag`)
    /// from process `from`, not posted, looks at `from`'s next frame `h`
    /// itself (the driver peeks it in the transport). If `h` is an eager
    /// message it takes, the engine books it as received (credit returned
    /// and owed, as [`Engine::handle_frame`] would) and returns its status;
    /// the caller then copies the payload and consumes the frame, and must
    /// not hand it to [`Engine::handle_frame`]. Otherwise None, and the
    /// frame is read as usual.
    ///
    /// It takes only what a posted receive would: an eager message of a
    /// standard-mode send (a synchronous one needs its acknowledgment) that
    /// fits `room` bytes (a truncation is reported by the usual road), when
    /// no receive is posted and no message waits unmatched on `ctx` (they
    /// come first in MPI's order), no eager message of `from` is half in,
    /// and no process has failed.
    pub fn take_lone_eager(&mut self, from: Pid, h: &Header, ctx: u32, src: i32, tag: Option<i32>, room: u64) -> Option<Status> {
        let Frame::Eager { env, sync: None } = h.frame else { return None };
        let len = h.payload_len as u64;
        if env.ctx != ctx || !matches(Some(src), tag, env.src, env.tag) || len > room || from == self.me || self.ft_active() {
            return None;
        }
        let peer = self.peers.get(from as usize)?;
        if peer.eager_in_pieces.is_some() || self.queues.get(&ctx).is_some_and(|q| !q.posted.is_empty() || !q.unexpected.is_empty()) {
            return None;
        }
        self.peers[from as usize].credit.returned(h.credit);
        self.owe_credit(from, len + HEADER_LEN as u64);
        Some(Status { source: env.src, tag: env.tag, count: len, cancelled: false, error: None })
    }

    /// The buffer of the pending receive `r`.
    pub(crate) fn recv_buf(&self, r: ReqId) -> &UserBuf {
        match &self.reqs.get(r.0).expect("a live receive").op {
            ReqOp::Recv(op) => &op.buf,
            _ => unreachable!("not a receive"),
        }
    }

    /// Match an unexpected message to the posted receive `r`.
    pub(crate) fn deliver(&mut self, r: ReqId, u: Unexpected) {
        match u.body {
            UnexBody::Eager { data, sync_sreq } => {
                // SAFETY: the receive buffer is valid while the request is pending.
                let n = unsafe { self.recv_buf(r).write_packed(0, &data) };
                if u.pid != self.me {
                    self.owe_credit(u.pid, u.len + HEADER_LEN as u64);
                }
                if let Some(sreq) = sync_sreq {
                    self.transmit(u.pid, Header::new(Frame::SyncAck { sreq }, 0), Payload::None, None);
                }
                self.complete_recv(r, u.src, u.tag, u.len, n as u64);
            }
            UnexBody::Rts { sreq, single_copy_addr } => self.start_rendezvous(r, u.pid, u.src, u.tag, u.len, sreq, single_copy_addr),
            UnexBody::SelfSend { sreq } => {
                let send_buf = match self.reqs.get(sreq).map(|q| &q.op) {
                    Some(ReqOp::Send(op)) => op.buf.clone(),
                    _ => unreachable!("self-send request vanished"),
                };
                // SAFETY: both requests are pending, so both buffers are valid.
                let n = unsafe { self.recv_buf(r).copy_from(&send_buf) };
                self.complete_recv(r, u.src, u.tag, u.len, n);
                self.finish_with(ReqId(sreq), Status::default());
            }
        }
    }

    /// Complete receive `r` of a `len`-byte message of which `stored` bytes fit.
    pub(crate) fn complete_recv(&mut self, r: ReqId, src: i32, tag: i32, len: u64, stored: u64) {
        let error = crate::request::recv_error(self.recv_buf(r), len, stored);
        let status = Status { source: src, tag, count: stored, cancelled: false, error };
        self.finish_with(r, status);
    }

    pub(crate) fn eager_arrived(&mut self, from: Pid, env: Envelope, sync: Option<u32>, payload: Cow<'_, [u8]>) {
        let len = payload.len() as u64;
        if self.ft.is_revoked(env.ctx) {
            return self.release_revoked(from, len, UnexBody::Eager { data: Vec::new(), sync_sreq: sync });
        }
        match self.take_posted_match(env.ctx, env.src, env.tag) {
            Some(r) => {
                // SAFETY: the receive buffer is valid while the request is pending.
                let n = unsafe { self.recv_buf(r).write_packed(0, &payload) };
                self.owe_credit(from, len + HEADER_LEN as u64);
                if let Some(sreq) = sync {
                    self.transmit(from, Header::new(Frame::SyncAck { sreq }, 0), Payload::None, None);
                }
                self.complete_recv(r, env.src, env.tag, len, n as u64);
            }
            None => self.queue_unexpected(env.ctx, Unexpected {
                pid: from,
                src: env.src,
                tag: env.tag,
                len,
                body: UnexBody::Eager { data: payload.into_owned(), sync_sreq: sync },
            }),
        }
    }

    /// The first piece of an eager message sent in pieces
    /// ([`Frame::EagerHead`]). The message is matched once its last piece
    /// is in: no other message of the sender comes between its pieces, so
    /// it is still matched in the order the sender sent it.
    pub(crate) fn eager_head_arrived(
        &mut self,
        from: Pid,
        env: Envelope,
        sync: Option<u32>,
        len: u64,
        payload: &[u8],
    ) -> Result<(), ProtocolError> {
        let err = |reason: String| ProtocolError { peer: from, reason };
        // A sender spends credit for the whole message at once, so no
        // honest one sends more than the grant; the bound keeps a hostile
        // header from making us reserve its length.
        if len.saturating_add(HEADER_LEN as u64) > self.config.eager_credit as u64 {
            return Err(err(format!("an eager message of {len} bytes exceeds the {}-byte credit granted", self.config.eager_credit)));
        }
        let mut data = Vec::with_capacity(len as usize);
        data.extend_from_slice(payload);
        self.peers[from as usize].eager_in_pieces = Some(EagerInPieces { env, sync, len, data });
        Ok(())
    }

    /// A further piece ([`Frame::EagerRest`]) of the eager message in pieces
    /// from `from`; the last one delivers it.
    pub(crate) fn eager_rest_arrived(&mut self, from: Pid, offset: u64, payload: &[u8]) -> Result<(), ProtocolError> {
        let err = |reason: String| ProtocolError { peer: from, reason };
        let Some(m) = self.peers[from as usize].eager_in_pieces.as_mut() else {
            return Err(err(format!("a piece at offset {offset} of no eager message")));
        };
        let got = m.data.len() as u64;
        if offset != got || got + payload.len() as u64 > m.len {
            return Err(err(format!("an eager piece at offset {offset} (+{}) does not continue a {}-byte message at {got}", payload.len(), m.len)));
        }
        m.data.extend_from_slice(payload);
        if m.data.len() as u64 == m.len {
            let m = self.peers[from as usize].eager_in_pieces.take().expect("checked above");
            self.eager_arrived(from, m.env, m.sync, Cow::Owned(m.data));
        }
        Ok(())
    }

    pub(crate) fn rts_arrived(&mut self, from: Pid, env: Envelope, len: u64, sreq: u32, addr: Option<u64>) {
        if self.ft.is_revoked(env.ctx) {
            return self.release_revoked(from, len, UnexBody::Rts { sreq, single_copy_addr: addr });
        }
        match self.take_posted_match(env.ctx, env.src, env.tag) {
            Some(r) => self.start_rendezvous(r, from, env.src, env.tag, len, sreq, addr),
            None => self.queue_unexpected(env.ctx, Unexpected {
                pid: from,
                src: env.src,
                tag: env.tag,
                len,
                body: UnexBody::Rts { sreq, single_copy_addr: addr },
            }),
        }
    }
}

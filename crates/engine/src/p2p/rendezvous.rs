//! The rendezvous protocol: Rts -> Cts -> Data (or a single-copy read and
//! Fin), and the acknowledgements that complete synchronous sends.

use crate::engine::{Action, ProtocolError};
use crate::p2p::{RecvOp, RecvStage, SendOp, SendStage};
use crate::request::{ReqId, ReqOp, Request, Status};
use crate::Engine;
use gridmpi_datatype::UserBuf;
use gridmpi_wire::{paced_unsent_bytes, Frame, Header, Payload, Pid};

impl Engine {
    /// Receive `r` matched an Rts: read the sender's memory ourselves when it
    /// offered its address, else clear it to send.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_rendezvous(&mut self, r: ReqId, peer: Pid, src: i32, tag: i32, len: u64, sreq: u32, addr: Option<u64>) {
        let req = self.reqs.get_mut(r.0).unwrap();
        let ReqOp::Recv(op) = &mut req.op else { unreachable!() };
        let accepted = len.min(op.buf.len());
        let error = crate::request::recv_error(&op.buf, len, accepted);
        req.status = Status { source: src, tag, count: accepted, cancelled: false, error };
        match addr {
            Some(addr) if accepted > 0 => {
                op.stage = RecvStage::RemoteRead { peer, sreq, accepted };
                let dst = op.buf.clone();
                self.actions.push_back(Action::RemoteRead { peer, remote_addr: addr, len: accepted, dst, req: r });
            }
            _ => {
                op.stage = RecvStage::Receiving { peer, expect: accepted, got: 0 };
                self.transmit(peer, Header::new(Frame::Cts { sreq, rreq: r.0, accepted }, 0), Payload::None, None);
                if accepted == 0 {
                    self.finish(r);
                }
            }
        }
    }

    /// The driver finished (or failed) an [`Action::RemoteRead`].
    pub fn handle_remote_read(&mut self, r: ReqId, ok: bool) {
        let Some(req) = self.reqs.get_mut(r.0) else { return };
        let ReqOp::Recv(op) = &mut req.op else { return };
        let RecvStage::RemoteRead { peer, sreq, accepted } = op.stage else { return };
        if ok {
            self.transmit(peer, Header::new(Frame::Fin { sreq }, 0), Payload::None, None);
            self.finish(r);
        } else {
            // Fall back to the copy-through-the-transport path.
            op.stage = RecvStage::Receiving { peer, expect: accepted, got: 0 };
            self.transmit(peer, Header::new(Frame::Cts { sreq, rreq: r.0, accepted }, 0), Payload::None, None);
        }
    }

    /// The largest Data frame to `peer` now: the peer's limit, and while the
    /// connection is paced, what it may hold unsent, so that a reply queued
    /// meanwhile waits for one piece, not for a whole large frame to leave
    /// at the paced rate.
    fn data_piece(&self, peer: Pid) -> u64 {
        let max = self.peers[peer as usize].params.max_data_frame.max(1) as u64;
        self.paced_piece(peer).map_or(max, |p| max.min(p))
    }

    /// While the link to `peer` is paced, what it may hold unsent: payloads
    /// to it (rendezvous Data, eager messages) travel in pieces of at most
    /// this size.
    pub(crate) fn paced_piece(&self, peer: Pid) -> Option<u64> {
        self.pacing.rate(peer).map(paced_unsent_bytes)
    }

    pub(crate) fn cts_arrived(&mut self, from: Pid, sreq: u32, rreq: u32, total: u64) -> Result<(), ProtocolError> {
        let err = |reason: String| ProtocolError { peer: from, reason };
        let r = ReqId(sreq);
        let piece = self.data_piece(from);
        let Some(Request { op: ReqOp::Send(op), done: false, .. }) = self.reqs.get_mut(r.0) else {
            return Err(err(format!("clear-to-send for unknown send request {sreq}")));
        };
        if op.peer != from || !matches!(op.stage, SendStage::AwaitCts) {
            return Err(err(format!("unexpected clear-to-send for request {sreq}")));
        }
        if total > op.buf.len() {
            return Err(err(format!("receiver accepts {total} bytes of a {}-byte message", op.buf.len())));
        }
        if total == 0 {
            self.finish_with(r, Status::default());
            return Ok(());
        }
        let nframes = total.div_ceil(piece);
        op.stage = SendStage::Sending { pending: nframes as u32 };
        let buf = op.buf.clone();
        let mut off = 0;
        while off < total {
            let n = (total - off).min(piece);
            let h = Header::new(Frame::Data { rreq, offset: off }, n as u32);
            self.transmit(from, h, Payload::User { buf: buf.clone(), offset: off, len: n }, Some(r));
            off += n;
        }
        Ok(())
    }

    /// The receive a Data frame continues, checked: the frame must come from
    /// the matched sender, at the next offset, within the accepted length.
    fn data_receive(&mut self, from: Pid, rreq: u32, offset: u64, len: u64) -> Result<(&mut RecvOp, u64), ProtocolError> {
        let err = |reason: String| ProtocolError { peer: from, reason };
        let Some(Request { op: ReqOp::Recv(op), done: false, .. }) = self.reqs.get_mut(rreq) else {
            return Err(err(format!("data for unknown receive request {rreq}")));
        };
        let RecvStage::Receiving { peer, expect, got } = op.stage else {
            return Err(err(format!("data for receive request {rreq} that expects none")));
        };
        if peer != from || offset != got || got + len > expect {
            return Err(err(format!("data at offset {offset} (+{len}) does not continue receive request {rreq} at {got} of {expect}")));
        }
        Ok((op, expect))
    }

    /// `len` more bytes of receive `rreq` are in place.
    fn data_in_place(&mut self, rreq: u32, len: u64) {
        let Some(Request { op: ReqOp::Recv(op), .. }) = self.reqs.get_mut(rreq) else { unreachable!("checked by data_receive") };
        let RecvStage::Receiving { expect, got, .. } = &mut op.stage else { unreachable!("checked by data_receive") };
        *got += len;
        if *got == *expect {
            self.finish(ReqId(rreq));
        }
    }

    pub(crate) fn data_arrived(&mut self, from: Pid, rreq: u32, offset: u64, payload: &[u8]) -> Result<(), ProtocolError> {
        let (op, _) = self.data_receive(from, rreq, offset, payload.len() as u64)?;
        // SAFETY: the receive buffer is valid while the request is pending,
        // and the range was checked against the accepted length.
        unsafe { op.buf.write_packed(offset, payload) };
        self.data_in_place(rreq, payload.len() as u64);
        Ok(())
    }

    /// A transport that reads a Data frame's payload straight into user
    /// memory asks here first: the frame is checked as [`Engine::handle_frame`]
    /// would, and the receive buffer is returned; the payload belongs at
    /// packed offset `offset` of it. Report with [`Engine::handle_data_landed`].
    pub fn data_target(&mut self, from: Pid, h: &Header) -> Result<UserBuf, ProtocolError> {
        let Frame::Data { rreq, offset } = h.frame else {
            return Err(ProtocolError { peer: from, reason: "data_target called for a non-data frame".into() });
        };
        let (op, _) = self.data_receive(from, rreq, offset, h.payload_len as u64)?;
        Ok(op.buf.clone())
    }

    /// The payload of a Data frame announced with [`Engine::data_target`] is
    /// in place.
    pub fn handle_data_landed(&mut self, from: Pid, h: &Header) -> Result<(), ProtocolError> {
        let Frame::Data { rreq, offset } = h.frame else {
            return Err(ProtocolError { peer: from, reason: "data landed for a non-data frame".into() });
        };
        self.data_receive(from, rreq, offset, h.payload_len as u64)?;
        self.data_in_place(rreq, h.payload_len as u64);
        Ok(())
    }

    /// The send request `sreq` to `from`, which must be pending.
    fn pending_send(&mut self, from: Pid, sreq: u32, what: &str) -> Result<&mut SendOp, ProtocolError> {
        let err = |reason: String| ProtocolError { peer: from, reason };
        let Some(Request { op: ReqOp::Send(op), done: false, .. }) = self.reqs.get_mut(sreq) else {
            return Err(err(format!("{what} for unknown send request {sreq}")));
        };
        if op.peer != from {
            return Err(err(format!("{what} for a send to another process")));
        }
        Ok(op)
    }

    pub(crate) fn fin_arrived(&mut self, from: Pid, sreq: u32) -> Result<(), ProtocolError> {
        let op = self.pending_send(from, sreq, "Fin")?;
        if !matches!(op.stage, SendStage::AwaitCts) {
            return Err(ProtocolError { peer: from, reason: format!("unexpected Fin for send request {sreq}") });
        }
        self.finish_with(ReqId(sreq), Status::default());
        Ok(())
    }

    pub(crate) fn sync_ack_arrived(&mut self, from: Pid, sreq: u32) -> Result<(), ProtocolError> {
        let op = self.pending_send(from, sreq, "SyncAck")?;
        let sync = op.sync;
        let SendStage::Eager { transmitted, acked } = &mut op.stage else {
            return Err(ProtocolError { peer: from, reason: format!("unexpected SyncAck for send request {sreq}") });
        };
        if !sync || *acked {
            return Err(ProtocolError { peer: from, reason: format!("unexpected SyncAck for send request {sreq}") });
        }
        *acked = true;
        if *transmitted {
            let status = op.final_status();
            self.finish_with(ReqId(sreq), status);
        }
        Ok(())
    }
}

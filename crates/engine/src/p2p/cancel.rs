//! MPI_Cancel of a send. MPI 4.1 (3.8.4) requires that a wait for a
//! cancelled operation return whatever the other processes do, and that
//! either the cancellation or the communication succeed, never both.
//!
//! A send that completes by itself (an eager message the transport has
//! taken, a rendezvous already sending) is left to complete: the
//! cancellation fails. One that waits for the receiver (the Rts of a
//! rendezvous waiting for its Cts, a synchronous eager message waiting for
//! its SyncAck, a send to ourselves not yet received) can wait for ever:
//! we ask the receiver to take it back ([`Frame::CancelSend`], in order
//! behind the message). If the message is still unmatched there, it is
//! dropped and the answer says so: the send completes as cancelled. If it
//! was matched, the answer says no, and the send completes as usual (its
//! Cts or SyncAck is on the way or came already).

use super::matching::UnexBody;
use super::{SendOp, SendStage};
use crate::engine::ProtocolError;
use crate::request::{ReqId, ReqOp, Request, Status};
use crate::Engine;
use gridmpi_wire::{Frame, Header, Payload, Pid, HEADER_LEN};

/// Where a send's cancellation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum SendCancel {
    #[default]
    No,
    /// CancelSend is out (and the answer, if it came, was no).
    Asked,
    /// The receiver took the message back: the send completes as cancelled
    /// (a synchronous eager one once the transport has let go of its data).
    Done,
}

impl SendOp {
    /// The status the send completes with.
    pub(crate) fn final_status(&self) -> Status {
        Status { cancelled: self.cancel == SendCancel::Done, ..Status::default() }
    }
}

impl Engine {
    /// MPI_Cancel of send `r` (a live send request).
    pub(crate) fn cancel_send(&mut self, r: ReqId) {
        let me = self.me;
        let Some(Request { op: ReqOp::Send(op), done: false, .. }) = self.reqs.get_mut(r.0) else { return };
        if op.cancel != SendCancel::No {
            return;
        }
        let waits_for_receiver = match op.stage {
            SendStage::AwaitCts => true,
            SendStage::Eager { acked, .. } => !acked,
            SendStage::SelfPending => {
                // Our own unexpected queue: take it back here.
                if self.take_back(me, r.0) {
                    self.finish_with(r, Status { cancelled: true, ..Status::default() });
                }
                return;
            }
            SendStage::Sending { .. } => false,
        };
        if waits_for_receiver {
            op.cancel = SendCancel::Asked;
            let peer = op.peer;
            self.transmit(peer, Header::new(Frame::CancelSend { sreq: r.0 }, 0), Payload::None, None);
        }
    }

    /// `from` asks us to take back its message `sreq` if unmatched.
    pub(crate) fn cancel_send_arrived(&mut self, from: Pid, sreq: u32) {
        let cancelled = self.take_back(from, sreq);
        self.transmit(from, Header::new(Frame::CancelReply { sreq, cancelled }, 0), Payload::None, None);
    }

    /// Remove `pid`'s unmatched message `sreq` (a rendezvous, a
    /// synchronous eager message, or a send to ourselves) from our
    /// unexpected queues; false if it is not there (matched already).
    fn take_back(&mut self, pid: Pid, sreq: u32) -> bool {
        let names = |body: &UnexBody| match body {
            UnexBody::Rts { sreq: s, .. } | UnexBody::SelfSend { sreq: s } => *s == sreq,
            UnexBody::Eager { sync_sreq, .. } => *sync_sreq == Some(sreq),
        };
        let found = self.queues.values_mut().find_map(|q| {
            let i = q.unexpected.iter().position(|u| u.pid == pid && names(&u.body))?;
            q.unexpected.remove(i)
        });
        let Some(u) = found else { return false };
        self.unexpected_len -= 1;
        if matches!(u.body, UnexBody::Eager { .. }) && pid != self.me {
            // As if received: the sender spent credit on it.
            self.owe_credit(pid, u.len + HEADER_LEN as u64);
        }
        true
    }

    /// The answer to our CancelSend for send `sreq` to `from`.
    pub(crate) fn cancel_reply_arrived(&mut self, from: Pid, sreq: u32, cancelled: bool) -> Result<(), ProtocolError> {
        if !cancelled {
            // Matched: the send completes as usual (it may have already,
            // and its request id may even be another send's by now). It
            // stays Asked: asking again would get the same answer.
            return Ok(());
        }
        let err = |reason: String| ProtocolError { peer: from, reason };
        let op = match self.reqs.get_mut(sreq) {
            Some(Request { op: ReqOp::Send(op), done: false, .. }) if op.peer == from && op.cancel == SendCancel::Asked => op,
            // A yes is only ever for a send that waits for its receiver.
            _ => return Err(err(format!("an unasked-for cancellation of send request {sreq}"))),
        };
        let finish = match &mut op.stage {
            SendStage::AwaitCts => true,
            SendStage::Eager { transmitted, acked } if !*acked => {
                // No SyncAck will come; the data may still be with the
                // transport (handle_sent finishes it then).
                *acked = true;
                *transmitted
            }
            _ => return Err(err(format!("send request {sreq} was taken back after the receiver matched it"))),
        };
        op.cancel = SendCancel::Done;
        if finish {
            self.finish_with(ReqId(sreq), Status { cancelled: true, ..Status::default() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::p2p::{RecvArgs, SendArgs, SendMode};
    use crate::sim::Sim;
    use crate::{Engine, EngineConfig, PeerParams};
    use gridmpi_datatype::{BasicType, Datatype, UserBuf};
    use gridmpi_wire::{Frame, Header};
    use std::sync::Arc;

    fn bytes(v: &[u8]) -> UserBuf {
        // SAFETY: the tests keep `v` alive and unmoved while the engines use it.
        unsafe { UserBuf::new(v.as_ptr() as *mut u8, v.len() as u64, Arc::new(Datatype::basic(BasicType::Byte))) }
    }

    fn send(net: &mut Sim, from: usize, to: u32, tag: i32, data: &[u8], mode: SendMode) -> crate::ReqId {
        net.engines[from].isend(SendArgs { ctx: 0, src: from as i32, dest: to, tag, buf: bytes(data), mode })
    }

    fn recv(net: &mut Sim, at: usize, from: i32, tag: i32, into: &mut [u8]) -> crate::ReqId {
        net.engines[at].irecv(RecvArgs { ctx: 0, src: Some(from), tag: Some(tag), buf: bytes(into) })
    }

    const PARAMS: PeerParams = PeerParams { eager_limit: 1024, max_data_frame: 4096, single_copy: false, single_copy_min: u64::MAX };

    /// A rendezvous send and a synchronous eager send that nobody receives
    /// complete as cancelled once cancelled; the receiver forgets them, and
    /// a later receive gets the next message, intact.
    #[test]
    fn an_unmatched_send_is_taken_back() {
        for seed in 1..=50u64 {
            for (len, mode) in [(10_000usize, SendMode::Standard), (100, SendMode::Sync), (10_000, SendMode::Sync)] {
                let mut net = Sim::new(2, seed, PARAMS, 1 << 20);
                let data = vec![7u8; len];
                let s = send(&mut net, 0, 1, 3, &data, mode);
                net.run();
                assert!(!net.engines[0].is_complete(s), "seed {seed}: a send of {len} waits for its receiver");
                net.engines[0].cancel(s);
                net.run();
                let st = net.engines[0].take(s).expect("a cancelled send completes");
                assert!(st.cancelled, "seed {seed}, {len} bytes {mode:?}: not cancelled");
                assert_eq!(net.engines[1].unexpected_messages(), 0);
                let next = vec![9u8; len];
                let s2 = send(&mut net, 0, 1, 3, &next, mode);
                let mut got = vec![0u8; len];
                let r = recv(&mut net, 1, 0, 3, &mut got);
                net.run();
                assert_eq!(net.engines[1].take(r).map(|s| s.count), Some(len as u64));
                assert_eq!(got, next, "seed {seed}: the receive got the cancelled message");
                assert!(!net.engines[0].take(s2).expect("the next send completes").cancelled);
            }
        }
    }

    /// Cancelling a send whose receive is posted (matched before, or while,
    /// the cancellation travels): the communication succeeds instead, and
    /// the data arrives whole.
    #[test]
    fn a_matched_send_completes_instead() {
        for seed in 1..=50u64 {
            for len in [100usize, 10_000] {
                let mut net = Sim::new(2, seed, PARAMS, 1 << 20);
                let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
                let mut got = vec![0u8; len];
                let r = recv(&mut net, 1, 0, 4, &mut got);
                let s = send(&mut net, 0, 1, 4, &data, SendMode::Sync);
                for _ in 0..(seed % 5) {
                    net.step();
                }
                net.engines[0].cancel(s);
                net.run();
                let st = net.engines[0].take(s).expect("the send completes");
                let rs = net.engines[1].take(r).expect("the receive completes");
                assert!(!st.cancelled, "seed {seed}: cancelled although received");
                assert_eq!((rs.count, &got), (len as u64, &data), "seed {seed}");
            }
        }
    }

    /// A synchronous send to ourselves that we never receive.
    #[test]
    fn a_send_to_ourselves_is_taken_back() {
        let mut net = Sim::new(1, 1, PARAMS, 1 << 20);
        let data = vec![1u8; 50];
        let s = send(&mut net, 0, 0, 1, &data, SendMode::Sync);
        net.engines[0].cancel(s);
        assert!(net.engines[0].take(s).expect("completes at once").cancelled);
        let mut got = vec![0u8; 50];
        let r = recv(&mut net, 0, 0, 1, &mut got);
        assert!(!net.engines[0].is_complete(r), "the cancelled message was received");
    }

    /// Answers nobody asked for: a yes is a protocol error, a no (which
    /// can trail a send that completed meanwhile) is ignored.
    #[test]
    fn unasked_answers() {
        let mut e = Engine::new(1, 2, EngineConfig::default());
        let reply = |sreq, cancelled| Header::new(Frame::CancelReply { sreq, cancelled }, 0);
        let err = e.handle_frame(0, &reply(3, true), &[]).expect_err("a yes for no send");
        assert!(err.reason.contains("unasked-for cancellation"), "{}", err.reason);
        e.handle_frame(0, &reply(3, false), &[]).expect("a no is harmless");
        // A CancelSend for nothing we hold is answered no.
        e.handle_frame(0, &Header::new(Frame::CancelSend { sreq: 8 }, 0), &[]).unwrap();
        let answer = std::iter::from_fn(|| e.poll_action()).find_map(|a| match a {
            crate::Action::Transmit(t) => Some(t.header.frame),
            _ => None,
        });
        assert_eq!(answer, Some(Frame::CancelReply { sreq: 8, cancelled: false }));
    }
}

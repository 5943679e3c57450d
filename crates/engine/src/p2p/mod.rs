//! Point-to-point messaging: matching, the eager and rendezvous protocols,
//! eager credits, synchronous sends, single-copy and self messages.
//!
//! Protocols, per message of `len` packed bytes from S to R:
//! - eager (len <= eager limit and S holds enough credit from R): one
//!   `Eager` frame; S's request completes once the transport has taken the
//!   payload (or, for MPI_Ssend, when R's `SyncAck` comes back). While the
//!   link to R is paced, a message larger than what the link may hold
//!   unsent goes as an `EagerHead` and `EagerRest` pieces of that size, so
//!   that replies to R wait for one piece, not for the whole message; R
//!   matches it once the last piece is in.
//! - rendezvous: S sends `Rts`; when R matches it, R answers `Cts` with the
//!   number of bytes it accepts and S streams `Data` frames; or, with
//!   single-copy (same host), R reads S's buffer itself and answers `Fin`.
//! - credits: see [`credit`].
//!
//! One module per concern: [`matching`] (posted and unexpected queues,
//! probes), [`send`], [`recv`], [`rendezvous`], [`credit`].

pub(crate) mod cancel;
pub(crate) mod credit;
pub(crate) mod matching;
pub(crate) mod recv;
pub(crate) mod rendezvous;
pub(crate) mod send;

use crate::engine::{PeerParams, ProtocolError};
use crate::Engine;
use gridmpi_datatype::UserBuf;
use gridmpi_wire::{Envelope, Frame, Header, Pid, Urgency};
use std::borrow::Cow;

pub(crate) use matching::Unexpected;

/// A message taken off the unexpected queue by MPI_Mprobe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MsgId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    /// MPI_Send, MPI_Rsend (and MPI_Bsend from the attached buffer).
    Standard,
    /// MPI_Ssend: completes only once the receive has matched.
    Sync,
}

pub struct SendArgs {
    pub ctx: u32,
    /// The sender's rank in the communicator (what the receiver sees as source).
    pub src: i32,
    pub dest: Pid,
    pub tag: i32,
    pub buf: UserBuf,
    pub mode: SendMode,
}

pub struct RecvArgs {
    pub ctx: u32,
    /// `None` for MPI_ANY_SOURCE.
    pub src: Option<i32>,
    /// `None` for MPI_ANY_TAG.
    pub tag: Option<i32>,
    pub buf: UserBuf,
}

/// What this process knows about one peer.
pub(crate) struct Peer {
    pub(crate) credit: credit::Credit,
    pub(crate) params: PeerParams,
    /// The eager message the peer is sending in pieces, until its last
    /// piece is in.
    pub(crate) eager_in_pieces: Option<EagerInPieces>,
}

impl Peer {
    pub(crate) fn new(grant: u32) -> Peer {
        Peer { credit: credit::Credit::new(grant), params: PeerParams::default(), eager_in_pieces: None }
    }
}

/// An eager message arriving in pieces (`EagerHead`, then `EagerRest`).
pub(crate) struct EagerInPieces {
    env: Envelope,
    sync: Option<u32>,
    len: u64,
    /// The pieces so far (capacity `len`).
    data: Vec<u8>,
}

pub(crate) enum SendStage {
    /// The eager frame is queued or sent.
    Eager { transmitted: bool, acked: bool },
    /// Rts sent; waiting for Cts (or Fin for single-copy).
    AwaitCts,
    /// Data frames queued; `pending` sent-notifications outstanding.
    Sending { pending: u32 },
    /// A message to ourselves waiting in our own unexpected queue.
    SelfPending,
}

pub(crate) struct SendOp {
    pub(crate) peer: Pid,
    pub(crate) buf: UserBuf,
    pub(crate) sync: bool,
    pub(crate) stage: SendStage,
    pub(crate) cancel: cancel::SendCancel,
}

pub(crate) enum RecvStage {
    Posted,
    /// Matched a rendezvous; `expect` bytes will arrive in Data frames.
    Receiving { peer: Pid, expect: u64, got: u64 },
    /// Reading the sender's memory ourselves.
    RemoteRead { peer: Pid, sreq: u32, accepted: u64 },
}

pub(crate) struct RecvOp {
    pub(crate) ctx: u32,
    pub(crate) src: Option<i32>,
    pub(crate) tag: Option<i32>,
    pub(crate) buf: UserBuf,
    pub(crate) stage: RecvStage,
}

impl Engine {
    /// Handle one frame from `from`. `payload` holds the frame's payload
    /// (`header.payload_len` bytes). Errors mean the peer broke the protocol.
    pub fn handle_frame(&mut self, from: Pid, h: &Header, payload: &[u8]) -> Result<(), ProtocolError> {
        if from as usize >= self.peers.len() || from == self.me {
            return Err(ProtocolError { peer: from, reason: format!("frame from unknown process {from}") });
        }
        if payload.len() != h.payload_len as usize {
            return Err(ProtocolError { peer: from, reason: "payload length does not match the header".into() });
        }
        // A failed process's last frames (still in a shared-memory ring)
        // are not looked at: what needed them has failed already.
        if self.ft.is_failed(from) {
            return Ok(());
        }
        self.peers[from as usize].credit.returned(h.credit);
        // The pieces of an eager message are sent back to back among the
        // sender's messages; anything else in between would be matched
        // ahead of a message sent before it.
        if self.peers[from as usize].eager_in_pieces.is_some()
            && h.frame.urgency() == Urgency::Message
            && !matches!(h.frame, Frame::EagerRest { .. })
        {
            return Err(ProtocolError { peer: from, reason: format!("a {:?} frame inside the pieces of an eager message", h.kind()) });
        }
        match h.frame {
            Frame::Credit => Ok(()),
            Frame::Eager { env, sync } => {
                self.eager_arrived(from, env, sync, Cow::Borrowed(payload));
                Ok(())
            }
            Frame::EagerHead { env, sync, len } => self.eager_head_arrived(from, env, sync, len, payload),
            Frame::EagerRest { offset } => self.eager_rest_arrived(from, offset, payload),
            Frame::Rts { env, len, sreq, single_copy } => {
                // Reading another process's memory is only for peers the
                // driver said share this host (and an address from anyone
                // else would make us read from whichever local process has
                // that rank's pid).
                if single_copy && !self.peers[from as usize].params.single_copy {
                    return Err(ProtocolError { peer: from, reason: "a single-copy message from a process that is not on this host".into() });
                }
                let addr = single_copy.then(|| u64::from_le_bytes(payload.try_into().expect("checked: 8 bytes")));
                self.rts_arrived(from, env, len, sreq, addr);
                Ok(())
            }
            Frame::Cts { sreq, rreq, accepted } => self.cts_arrived(from, sreq, rreq, accepted),
            Frame::Data { rreq, offset } => self.data_arrived(from, rreq, offset, payload),
            Frame::Fin { sreq } => self.fin_arrived(from, sreq),
            Frame::SyncAck { sreq } => self.sync_ack_arrived(from, sreq),
            Frame::CancelSend { sreq } => {
                self.cancel_send_arrived(from, sreq);
                Ok(())
            }
            Frame::CancelReply { sreq, cancelled } => self.cancel_reply_arrived(from, sreq, cancelled),
            Frame::RmaOp { .. } | Frame::RmaSync { .. } => self.rma_frame(from, h, payload),
            Frame::Ack { .. } => Err(ProtocolError { peer: from, reason: "a transport's acknowledgment reached the engine".into() }),
            Frame::Revoke { ctx } => {
                self.revoke_arrived(ctx);
                Ok(())
            }
            Frame::Agree { ctx, seq, step, flag, max } => {
                self.agree_arrived(from, ctx, seq, step, flag, max, payload);
                Ok(())
            }
        }
    }
}

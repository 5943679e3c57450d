//! The frame header: 40 bytes, little-endian, followed by `payload_len`
//! bytes of payload. Transports carry frames as a byte stream (a TCP
//! connection, a shared-memory ring) and need only the payload length and
//! the frame's [`Urgency`]; the engine matches on the typed [`Frame`].
//!
//! ```text
//!  0 u8  kind         4 u32 payload_len   8 u32 credit (eager bytes returned)
//!  1 u8  flags       12 u32 ctx          16 i32 src       20 i32 tag
//!  2 u16 reserved=0  24 u64 len          32 u32 sreq      36 u32 rreq
//! ```
//!
//! Which fields a frame uses depends on its kind; the others must be zero,
//! so every header has exactly one encoding and `decode(encode(h)) == h`
//! for every header `decode` accepts.

use std::fmt;

pub const HEADER_LEN: usize = 40;

/// Largest payload one frame may carry. Larger messages are sent as several
/// Data frames.
pub const MAX_PAYLOAD: u32 = 1 << 30;

/// Who sent a message and how it is matched: context id, source rank in
/// the communicator, tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Envelope {
    pub ctx: u32,
    pub src: i32,
    pub tag: i32,
}

/// A decoded frame. Request ids (`sreq`, `rreq`) are the engine's, echoed
/// back by the peer; they name requests of the process that created them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A whole message; the payload is its data. With `sync`, the sender's
    /// request waits for a [`Frame::SyncAck`] (MPI_Ssend).
    Eager { env: Envelope, sync: Option<u32> },
    /// The first piece of an eager message of `len` bytes (more than the
    /// payload); the rest follows in [`Frame::EagerRest`] frames, before
    /// any other message frame of the sender. Sent on paced links, so that
    /// a control frame waits for one piece, not for the whole message to
    /// leave at the paced rate.
    EagerHead { env: Envelope, sync: Option<u32>, len: u64 },
    /// The piece at byte `offset` of the eager message the sender's last
    /// [`Frame::EagerHead`] began.
    EagerRest { offset: u64 },
    /// Request to send `len` bytes (rendezvous). With `single_copy`, the
    /// payload is the 8-byte address of the sender's contiguous buffer, for
    /// a receiver on the same host to read itself.
    Rts { env: Envelope, len: u64, sreq: u32, single_copy: bool },
    /// Clear to send: the receiver matched `sreq` to its `rreq` and accepts
    /// `accepted` bytes (less than the message when the receive truncates).
    Cts { sreq: u32, rreq: u32, accepted: u64 },
    /// Part of a rendezvous message for `rreq`, at byte `offset` of it.
    Data { rreq: u32, offset: u64 },
    /// The receiver has read a single-copy message: `sreq` is complete.
    Fin { sreq: u32 },
    /// A synchronous eager message was matched: `sreq` is complete.
    SyncAck { sreq: u32 },
    /// Only returns eager credit.
    Credit,
    /// A one-sided operation on window `win` of the receiver, at byte
    /// `offset` of it (an address, for a dynamic window). The payload is an
    /// [`crate::rma::OpDesc`] followed by the target datatype and the data.
    /// With `reply`, the data asked for goes back in Data frames to the
    /// sender's receive request `reply`.
    RmaOp { win: u32, offset: u64, reply: Option<u32> },
    /// One-sided synchronization on window `win` (locks, flushes, PSCW);
    /// `arg` and `req` are the [`RmaSync`]'s to interpret.
    RmaSync { win: u32, sync: RmaSync, arg: u64, req: u32 },
    /// The transport's own: the sender has received `received` bytes of
    /// frames from us on this link (not counting Ack frames), so what it
    /// acknowledged need not be kept for resending after a reconnection.
    /// Never reaches the engine.
    Ack { received: u64 },
    /// Fault tolerance (ULFM): the sender revoked the communicator whose
    /// point-to-point context is `ctx` (MPIX_Comm_revoke); every pending
    /// and future operation on it fails, here too.
    Revoke { ctx: u32 },
    /// Fault tolerance (ULFM): one message of the agreement `seq` on the
    /// communicator whose point-to-point context is `ctx` (MPIX_Comm_agree,
    /// MPIX_Comm_shrink; the engine's ft/agree.rs). `flag` is AND-ed and
    /// `max` is max-ed over the contributions; the payload is a bitmap of
    /// the communicator's ranks known to have failed (OR-ed).
    Agree { ctx: u32, seq: u32, step: AgreeStep, flag: u32, max: u64 },
    /// MPI_Cancel of a send the receiver has not matched yet (our `sreq`:
    /// a rendezvous whose Rts is out, or a synchronous eager message):
    /// take it off your unexpected queue if it is still there. In order
    /// with the messages, so it never passes the one it names.
    CancelSend { sreq: u32 },
    /// The answer to a [`Frame::CancelSend`]: whether the message was taken
    /// back (then it is never received) or had been matched already (then
    /// the send completes as usual).
    CancelReply { sreq: u32, cancelled: bool },
}

/// Which message of an agreement a [`Frame::Agree`] is (in the tag field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AgreeStep {
    /// Member to coordinator: my contribution.
    Contribute = 1,
    /// Member to a new coordinator: I already have the decision (from a
    /// coordinator that failed since), here it is.
    Decided = 2,
    /// Coordinator to members: the decision.
    Decide = 3,
}

impl AgreeStep {
    fn from_code(v: i32) -> Option<AgreeStep> {
        [AgreeStep::Contribute, AgreeStep::Decided, AgreeStep::Decide].into_iter().find(|s| *s as i32 == v)
    }
}

/// What an [`Frame::RmaSync`] says (in the header's tag field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RmaSync {
    /// Origin to target: take a shared lock for me.
    LockShared = 1,
    /// Origin to target: take an exclusive lock for me.
    LockExclusive = 2,
    /// Target to origin: the lock asked for is yours.
    LockGranted = 3,
    /// Origin to target: release my lock once my operations before this
    /// frame are done; answer `UnlockDone` with the same `arg`.
    Unlock = 4,
    /// Target to origin: unlocked; `req` operations since the last answer
    /// failed (addressed memory outside the attached regions).
    UnlockDone = 5,
    /// Origin to target: answer `FlushDone` (with the same `arg`) once my
    /// operations before this frame are done.
    Flush = 6,
    /// Target to origin: flushed; `req` failures as for `UnlockDone`.
    FlushDone = 7,
    /// Target to origin: my exposure epoch for you is open (MPI_Win_post).
    Post = 8,
    /// Origin to target: my access epoch to you is over (MPI_Win_complete).
    Complete = 9,
    /// Target to origin: the data of the get whose reply request is `req`
    /// cannot come (the address is outside the attached regions).
    GetFailed = 10,
}

impl RmaSync {
    pub const ALL: [RmaSync; 10] = [
        RmaSync::LockShared,
        RmaSync::LockExclusive,
        RmaSync::LockGranted,
        RmaSync::Unlock,
        RmaSync::UnlockDone,
        RmaSync::Flush,
        RmaSync::FlushDone,
        RmaSync::Post,
        RmaSync::Complete,
        RmaSync::GetFailed,
    ];

    fn from_code(v: i32) -> Option<RmaSync> {
        RmaSync::ALL.iter().copied().find(|s| *s as i32 == v)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    Eager = 1,
    Rts = 2,
    Cts = 3,
    Data = 4,
    Fin = 5,
    SyncAck = 6,
    Credit = 7,
    RmaOp = 8,
    RmaSync = 9,
    Ack = 10,
    Revoke = 11,
    Agree = 12,
    EagerHead = 13,
    EagerRest = 14,
    CancelSend = 15,
    CancelReply = 16,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Eager,
            2 => Kind::Rts,
            3 => Kind::Cts,
            4 => Kind::Data,
            5 => Kind::Fin,
            6 => Kind::SyncAck,
            7 => Kind::Credit,
            8 => Kind::RmaOp,
            9 => Kind::RmaSync,
            10 => Kind::Ack,
            11 => Kind::Revoke,
            12 => Kind::Agree,
            13 => Kind::EagerHead,
            14 => Kind::EagerRest,
            15 => Kind::CancelSend,
            16 => Kind::CancelReply,
            _ => return None,
        })
    }

    pub fn urgency(self) -> Urgency {
        match self {
            Kind::Data => Urgency::Bulk,
            // One-sided operations and their synchronization keep their
            // order among themselves and with messages: a flush, unlock or
            // complete must not pass the operations it closes.
            // The pieces of an eager message are in order with the other
            // messages: it is matched once its last piece is in.
            // A send's cancellation must not pass the message it names.
            Kind::Eager | Kind::EagerHead | Kind::EagerRest | Kind::Rts | Kind::RmaOp | Kind::RmaSync | Kind::CancelSend => Urgency::Message,
            // Fault-tolerance frames are about the whole communicator: any order is right.
            Kind::Cts | Kind::Fin | Kind::SyncAck | Kind::Credit | Kind::Ack | Kind::Revoke | Kind::Agree | Kind::CancelReply => Urgency::Control,
        }
    }
}

/// How far a frame may overtake frames queued before it on the same
/// connection (a transport may reorder unstarted frames by this, highest
/// first; see the TCP transport's send queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Urgency {
    /// Rendezvous payload (Data): belongs to an already matched message,
    /// so it has no order relative to other messages.
    Bulk,
    /// Message envelopes (Eager, Rts) and one-sided frames: in order among
    /// themselves, which is MPI's non-overtaking rule; they may pass bulk
    /// payload.
    Message,
    /// Protocol replies (Cts, Fin, SyncAck, Credit): about something
    /// already received, so any order is correct; they may pass anything.
    Control,
}

pub mod flags {
    /// Eager: the sender waits for a SyncAck (MPI_Ssend).
    pub const SYNC: u8 = 1;
    /// Rts: payload carries the sender buffer's address for single-copy.
    pub const SINGLE_COPY: u8 = 2;
    /// RmaOp: data goes back to the sender (the rreq field names where).
    pub const REPLY: u8 = 4;
    /// CancelReply: the message was taken back.
    pub const CANCELLED: u8 = 8;
}

impl Frame {
    pub fn kind(&self) -> Kind {
        match self {
            Frame::Eager { .. } => Kind::Eager,
            Frame::EagerHead { .. } => Kind::EagerHead,
            Frame::EagerRest { .. } => Kind::EagerRest,
            Frame::Rts { .. } => Kind::Rts,
            Frame::Cts { .. } => Kind::Cts,
            Frame::Data { .. } => Kind::Data,
            Frame::Fin { .. } => Kind::Fin,
            Frame::SyncAck { .. } => Kind::SyncAck,
            Frame::Credit => Kind::Credit,
            Frame::RmaOp { .. } => Kind::RmaOp,
            Frame::RmaSync { .. } => Kind::RmaSync,
            Frame::Ack { .. } => Kind::Ack,
            Frame::Revoke { .. } => Kind::Revoke,
            Frame::Agree { .. } => Kind::Agree,
            Frame::CancelSend { .. } => Kind::CancelSend,
            Frame::CancelReply { .. } => Kind::CancelReply,
        }
    }

    pub fn urgency(&self) -> Urgency {
        self.kind().urgency()
    }
}

/// A frame with its payload length and the eager credit it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub frame: Frame,
    pub payload_len: u32,
    /// Eager bytes the sender returns to the receiver (piggybacked on any frame).
    pub credit: u32,
}

/// The raw fields, before they are given a meaning by the kind.
#[derive(Default)]
struct Fields {
    flags: u8,
    ctx: u32,
    src: i32,
    tag: i32,
    len: u64,
    sreq: u32,
    rreq: u32,
}

impl Header {
    /// A header without credit (the engine adds what it owes when queueing).
    pub fn new(frame: Frame, payload_len: u32) -> Header {
        Header { frame, payload_len, credit: 0 }
    }

    pub fn kind(&self) -> Kind {
        self.frame.kind()
    }

    /// Header and payload together.
    pub fn frame_len(&self) -> usize {
        HEADER_LEN + self.payload_len as usize
    }

    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut f = Fields::default();
        let env = |f: &mut Fields, e: &Envelope| {
            f.ctx = e.ctx;
            f.src = e.src;
            f.tag = e.tag;
        };
        match &self.frame {
            Frame::Eager { env: e, sync } => {
                env(&mut f, e);
                f.len = self.payload_len as u64;
                if let Some(s) = sync {
                    f.flags = flags::SYNC;
                    f.sreq = *s;
                }
            }
            Frame::EagerHead { env: e, sync, len } => {
                env(&mut f, e);
                f.len = *len;
                if let Some(s) = sync {
                    f.flags = flags::SYNC;
                    f.sreq = *s;
                }
            }
            Frame::EagerRest { offset } => f.len = *offset,
            Frame::Rts { env: e, len, sreq, single_copy } => {
                env(&mut f, e);
                f.len = *len;
                f.sreq = *sreq;
                if *single_copy {
                    f.flags = flags::SINGLE_COPY;
                }
            }
            Frame::Cts { sreq, rreq, accepted } => {
                f.sreq = *sreq;
                f.rreq = *rreq;
                f.len = *accepted;
            }
            Frame::Data { rreq, offset } => {
                f.rreq = *rreq;
                f.len = *offset;
            }
            Frame::Fin { sreq } | Frame::SyncAck { sreq } | Frame::CancelSend { sreq } => f.sreq = *sreq,
            Frame::CancelReply { sreq, cancelled } => {
                f.sreq = *sreq;
                if *cancelled {
                    f.flags = flags::CANCELLED;
                }
            }
            Frame::Credit => {}
            Frame::RmaOp { win, offset, reply } => {
                f.ctx = *win;
                f.len = *offset;
                if let Some(r) = reply {
                    f.flags = flags::REPLY;
                    f.rreq = *r;
                }
            }
            Frame::RmaSync { win, sync, arg, req } => {
                f.ctx = *win;
                f.tag = *sync as i32;
                f.len = *arg;
                f.rreq = *req;
            }
            Frame::Ack { received } => f.len = *received,
            Frame::Revoke { ctx } => f.ctx = *ctx,
            Frame::Agree { ctx, seq, step, flag, max } => {
                f.ctx = *ctx;
                f.tag = *step as i32;
                f.sreq = *seq;
                f.rreq = *flag;
                f.len = *max;
            }
        }
        let mut b = [0u8; HEADER_LEN];
        b[0] = self.kind() as u8;
        b[1] = f.flags;
        b[4..8].copy_from_slice(&self.payload_len.to_le_bytes());
        b[8..12].copy_from_slice(&self.credit.to_le_bytes());
        b[12..16].copy_from_slice(&f.ctx.to_le_bytes());
        b[16..20].copy_from_slice(&f.src.to_le_bytes());
        b[20..24].copy_from_slice(&f.tag.to_le_bytes());
        b[24..32].copy_from_slice(&f.len.to_le_bytes());
        b[32..36].copy_from_slice(&f.sreq.to_le_bytes());
        b[36..40].copy_from_slice(&f.rreq.to_le_bytes());
        b
    }

    /// Decode and check a header. Checks here are those that need no engine
    /// state; the engine checks that request ids and contexts make sense.
    pub fn decode(b: &[u8; HEADER_LEN]) -> Result<Header, FrameError> {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let kind = Kind::from_u8(b[0]).ok_or(FrameError::UnknownKind(b[0]))?;
        if b[2] != 0 || b[3] != 0 {
            return Err(FrameError::Reserved);
        }
        let payload_len = u32_at(4);
        let credit = u32_at(8);
        let f = Fields {
            flags: b[1],
            ctx: u32_at(12),
            src: u32_at(16) as i32,
            tag: u32_at(20) as i32,
            len: u64::from_le_bytes([b[24], b[25], b[26], b[27], b[28], b[29], b[30], b[31]]),
            sreq: u32_at(32),
            rreq: u32_at(36),
        };
        if payload_len > MAX_PAYLOAD {
            return Err(FrameError::TooLong(payload_len));
        }
        let allowed_flags = match kind {
            Kind::Eager | Kind::EagerHead => flags::SYNC,
            Kind::Rts => flags::SINGLE_COPY,
            Kind::RmaOp => flags::REPLY,
            Kind::CancelReply => flags::CANCELLED,
            _ => 0,
        };
        if f.flags & !allowed_flags != 0 {
            return Err(FrameError::BadFlags { kind, flags: f.flags });
        }
        // Fields the kind does not use must be zero.
        let unused = |name: &'static str, v: u64| if v != 0 { Err(FrameError::Unused { kind, field: name }) } else { Ok(()) };
        let no_envelope = |f: &Fields| -> Result<(), FrameError> {
            unused("ctx", f.ctx as u64)?;
            unused("src", f.src as u32 as u64)?;
            unused("tag", f.tag as u32 as u64)
        };
        let bad_len = || FrameError::BadLength { kind, payload_len, len: f.len };
        let env = Envelope { ctx: f.ctx, src: f.src, tag: f.tag };
        // An eager message's sender request, there only for MPI_Ssend.
        let eager_sync = |f: &Fields| -> Result<Option<u32>, FrameError> {
            unused("rreq", f.rreq as u64)?;
            if f.flags & flags::SYNC != 0 {
                return Ok(Some(f.sreq));
            }
            unused("sreq", f.sreq as u64)?;
            Ok(None)
        };
        let frame = match kind {
            Kind::Eager => {
                if f.len != payload_len as u64 {
                    return Err(bad_len());
                }
                Frame::Eager { env, sync: eager_sync(&f)? }
            }
            Kind::EagerHead => {
                // A head is a piece: something must be left for the rest.
                if payload_len == 0 || f.len <= payload_len as u64 {
                    return Err(bad_len());
                }
                Frame::EagerHead { env, sync: eager_sync(&f)?, len: f.len }
            }
            Kind::EagerRest => {
                no_envelope(&f)?;
                unused("sreq", f.sreq as u64)?;
                unused("rreq", f.rreq as u64)?;
                if payload_len == 0 || f.len.checked_add(payload_len as u64).is_none() {
                    return Err(bad_len());
                }
                Frame::EagerRest { offset: f.len }
            }
            Kind::Rts => {
                let single_copy = f.flags & flags::SINGLE_COPY != 0;
                if payload_len != if single_copy { 8 } else { 0 } {
                    return Err(bad_len());
                }
                unused("rreq", f.rreq as u64)?;
                Frame::Rts { env, len: f.len, sreq: f.sreq, single_copy }
            }
            Kind::Cts => {
                no_envelope(&f)?;
                if payload_len != 0 {
                    return Err(bad_len());
                }
                Frame::Cts { sreq: f.sreq, rreq: f.rreq, accepted: f.len }
            }
            Kind::Data => {
                no_envelope(&f)?;
                unused("sreq", f.sreq as u64)?;
                if payload_len == 0 || f.len.checked_add(payload_len as u64).is_none() {
                    return Err(bad_len());
                }
                Frame::Data { rreq: f.rreq, offset: f.len }
            }
            Kind::Fin | Kind::SyncAck | Kind::Credit | Kind::CancelSend | Kind::CancelReply => {
                no_envelope(&f)?;
                unused("rreq", f.rreq as u64)?;
                if payload_len != 0 || f.len != 0 {
                    return Err(bad_len());
                }
                match kind {
                    Kind::Fin => Frame::Fin { sreq: f.sreq },
                    Kind::SyncAck => Frame::SyncAck { sreq: f.sreq },
                    Kind::CancelSend => Frame::CancelSend { sreq: f.sreq },
                    Kind::CancelReply => Frame::CancelReply { sreq: f.sreq, cancelled: f.flags & flags::CANCELLED != 0 },
                    _ => {
                        unused("sreq", f.sreq as u64)?;
                        Frame::Credit
                    }
                }
            }
            Kind::RmaOp => {
                unused("src", f.src as u32 as u64)?;
                unused("tag", f.tag as u32 as u64)?;
                unused("sreq", f.sreq as u64)?;
                if (payload_len as usize) < crate::rma::OP_DESC_LEN {
                    return Err(bad_len());
                }
                let reply = if f.flags & flags::REPLY != 0 {
                    Some(f.rreq)
                } else {
                    unused("rreq", f.rreq as u64)?;
                    None
                };
                Frame::RmaOp { win: f.ctx, offset: f.len, reply }
            }
            Kind::RmaSync => {
                unused("src", f.src as u32 as u64)?;
                unused("sreq", f.sreq as u64)?;
                if payload_len != 0 {
                    return Err(bad_len());
                }
                let sync = RmaSync::from_code(f.tag).ok_or(FrameError::BadSync(f.tag))?;
                Frame::RmaSync { win: f.ctx, sync, arg: f.len, req: f.rreq }
            }
            Kind::Ack => {
                no_envelope(&f)?;
                unused("sreq", f.sreq as u64)?;
                unused("rreq", f.rreq as u64)?;
                // Eager credit is the engine's, which never sees an Ack.
                unused("credit", credit as u64)?;
                if payload_len != 0 {
                    return Err(bad_len());
                }
                Frame::Ack { received: f.len }
            }
            Kind::Revoke => {
                unused("src", f.src as u32 as u64)?;
                unused("tag", f.tag as u32 as u64)?;
                unused("sreq", f.sreq as u64)?;
                unused("rreq", f.rreq as u64)?;
                if payload_len != 0 || f.len != 0 {
                    return Err(bad_len());
                }
                Frame::Revoke { ctx: f.ctx }
            }
            Kind::Agree => {
                unused("src", f.src as u32 as u64)?;
                // A bitmap of ranks: no communicator has 2^31 of them.
                if payload_len > 1 << 28 {
                    return Err(bad_len());
                }
                let step = AgreeStep::from_code(f.tag).ok_or(FrameError::BadSync(f.tag))?;
                Frame::Agree { ctx: f.ctx, seq: f.sreq, step, flag: f.rreq, max: f.len }
            }
        };
        if let Frame::Eager { env, .. } | Frame::EagerHead { env, .. } | Frame::Rts { env, .. } = &frame {
            if env.tag < 0 {
                return Err(FrameError::BadTag(env.tag));
            }
        }
        Ok(Header { frame, payload_len, credit })
    }
}

/// Why a frame was rejected. Any of these ends the connection: the peer is
/// not speaking our protocol (or memory was corrupted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    UnknownKind(u8),
    Reserved,
    BadFlags { kind: Kind, flags: u8 },
    TooLong(u32),
    BadLength { kind: Kind, payload_len: u32, len: u64 },
    BadTag(i32),
    /// A field the frame's kind does not use is not zero.
    Unused { kind: Kind, field: &'static str },
    /// An RmaSync frame with an unknown synchronization code.
    BadSync(i32),
    /// An RmaOp payload that is not a valid operation.
    BadRmaOp(&'static str),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::UnknownKind(k) => write!(f, "unknown frame kind {k}"),
            FrameError::Reserved => write!(f, "reserved header bytes are not zero"),
            FrameError::BadFlags { kind, flags } => write!(f, "flags {flags:#x} are not valid on a {kind:?} frame"),
            FrameError::TooLong(n) => write!(f, "payload of {n} bytes exceeds the {MAX_PAYLOAD}-byte limit"),
            FrameError::BadLength { kind, payload_len, len } => {
                write!(f, "{kind:?} frame with payload_len {payload_len} and len {len} is inconsistent")
            }
            FrameError::BadTag(t) => write!(f, "negative tag {t} in a message frame"),
            FrameError::Unused { kind, field } => write!(f, "{kind:?} frame with a non-zero {field} field"),
            FrameError::BadSync(c) => write!(f, "unknown one-sided synchronization code {c}"),
            FrameError::BadRmaOp(why) => write!(f, "malformed one-sided operation: {why}"),
        }
    }
}

impl std::error::Error for FrameError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Envelope {
        Envelope { ctx: 9, src: 3, tag: 12345 }
    }

    fn samples() -> Vec<Header> {
        vec![
            Header { frame: Frame::Eager { env: env(), sync: Some(0xdead_beef) }, payload_len: 5, credit: 77 },
            Header::new(Frame::Eager { env: env(), sync: None }, 0),
            Header { frame: Frame::EagerHead { env: env(), sync: Some(3), len: 1 << 16 }, payload_len: 4096, credit: 5 },
            Header::new(Frame::EagerHead { env: env(), sync: None, len: 2 }, 1),
            Header::new(Frame::EagerRest { offset: 4096 }, 4096),
            Header::new(Frame::Rts { env: env(), len: 1 << 40, sreq: 4, single_copy: true }, 8),
            Header::new(Frame::Rts { env: env(), len: 3, sreq: 4, single_copy: false }, 0),
            Header::new(Frame::Cts { sreq: 1, rreq: 2, accepted: 1 << 33 }, 0),
            Header::new(Frame::Data { rreq: 2, offset: 1 << 20 }, 4096),
            Header::new(Frame::Fin { sreq: 7 }, 0),
            Header::new(Frame::SyncAck { sreq: 8 }, 0),
            Header::new(Frame::CancelSend { sreq: 9 }, 0),
            Header { frame: Frame::CancelReply { sreq: 10, cancelled: true }, payload_len: 0, credit: 33 },
            Header::new(Frame::CancelReply { sreq: 11, cancelled: false }, 0),
            Header { frame: Frame::Credit, payload_len: 0, credit: 1 << 20 },
            Header::new(Frame::RmaOp { win: 5, offset: 1 << 35, reply: Some(9) }, 40),
            Header::new(Frame::RmaOp { win: 0, offset: 0, reply: None }, 32),
            Header::new(Frame::RmaSync { win: 3, sync: RmaSync::FlushDone, arg: 17, req: 2 }, 0),
            Header::new(Frame::RmaSync { win: 3, sync: RmaSync::GetFailed, arg: 0, req: 0 }, 0),
            Header::new(Frame::Revoke { ctx: 12 }, 0),
            Header::new(Frame::Agree { ctx: 4, seq: 2, step: AgreeStep::Contribute, flag: 0xffff_fffe, max: 77 }, 1),
            Header::new(Frame::Agree { ctx: 4, seq: 0, step: AgreeStep::Decided, flag: 1, max: 0 }, 0),
            Header::new(Frame::Agree { ctx: 0, seq: 9, step: AgreeStep::Decide, flag: 0, max: u64::MAX }, 512),
        ]
    }

    #[test]
    fn every_kind_round_trips() {
        for h in samples() {
            assert_eq!(Header::decode(&h.encode()), Ok(h), "{h:?}");
        }
    }

    #[test]
    fn accepted_headers_have_one_encoding() {
        // Any single-byte change of a valid header either is rejected or
        // decodes to a header that encodes back to exactly those bytes.
        for h in samples() {
            let good = h.encode();
            for i in 0..HEADER_LEN {
                for v in [0u8, 1, 2, 3, 0x7f, 0x80, 0xff] {
                    let mut b = good;
                    b[i] = v;
                    if let Ok(d) = Header::decode(&b) {
                        assert_eq!(d.encode(), b, "byte {i} = {v} of {h:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn random_headers_decode_or_fail_cleanly() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut accepted = 0;
        for _ in 0..200_000 {
            let mut b = [0u8; HEADER_LEN];
            for byte in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *byte = x as u8;
            }
            // Mostly valid kinds and zero reserved bytes, so deeper checks run.
            b[0] %= 15;
            b[2] = 0;
            b[3] = 0;
            if let Ok(h) = Header::decode(&b) {
                accepted += 1;
                assert_eq!(h.encode(), b);
            }
        }
        // Random fields almost never leave every unused field zero.
        assert!(accepted < 1000, "{accepted}");
    }

    #[test]
    fn fault_tolerance_frames_reject_what_they_do_not_use() {
        let mut b = Header::new(Frame::Revoke { ctx: 3 }, 0).encode();
        b[20] = 1;
        assert!(matches!(Header::decode(&b), Err(FrameError::Unused { .. })));
        let b = Header::new(Frame::Revoke { ctx: 3 }, 4).encode();
        assert!(matches!(Header::decode(&b), Err(FrameError::BadLength { .. })));
        let mut b = Header::new(Frame::Agree { ctx: 3, seq: 1, step: AgreeStep::Decide, flag: 1, max: 0 }, 1).encode();
        b[20] = 4;
        assert_eq!(Header::decode(&b), Err(FrameError::BadSync(4)));
    }

    #[test]
    fn specific_rejections() {
        let mut b = Header::new(Frame::Cts { sreq: 0, rreq: 0, accepted: 0 }, 0).encode();
        b[0] = 99;
        assert_eq!(Header::decode(&b), Err(FrameError::UnknownKind(99)));
        let mut b = Header::new(Frame::Eager { env: env(), sync: None }, 4).encode();
        b[24] = 8; // len 8 with a 4-byte payload
        assert!(matches!(Header::decode(&b), Err(FrameError::BadLength { .. })));
        let mut b = Header::new(Frame::EagerHead { env: env(), sync: None, len: 8 }, 4).encode();
        b[24] = 4; // a head that is the whole message
        assert!(matches!(Header::decode(&b), Err(FrameError::BadLength { .. })));
        let b = Header::new(Frame::EagerRest { offset: 8 }, 0).encode();
        assert!(matches!(Header::decode(&b), Err(FrameError::BadLength { .. })), "an empty piece");
        let mut b = Header::new(Frame::EagerRest { offset: 8 }, 4).encode();
        b[12] = 1;
        assert_eq!(Header::decode(&b), Err(FrameError::Unused { kind: Kind::EagerRest, field: "ctx" }));
        let mut b = Header::new(Frame::Cts { sreq: 0, rreq: 0, accepted: 0 }, 0).encode();
        b[1] = flags::SYNC;
        assert!(matches!(Header::decode(&b), Err(FrameError::BadFlags { .. })));
        let h = Header::new(Frame::Eager { env: Envelope { ctx: 0, src: 0, tag: -4 }, sync: None }, 0);
        assert_eq!(Header::decode(&h.encode()), Err(FrameError::BadTag(-4)));
        let mut b = Header::new(Frame::Fin { sreq: 1 }, 0).encode();
        b[36] = 1;
        assert_eq!(Header::decode(&b), Err(FrameError::Unused { kind: Kind::Fin, field: "rreq" }));
        let mut b = Header::new(Frame::Data { rreq: 1, offset: u64::MAX - 10 }, 0).encode();
        b[4] = 100; // offset + payload overflows
        assert!(matches!(Header::decode(&b), Err(FrameError::BadLength { .. })));
        let mut b = Header::new(Frame::Data { rreq: 1, offset: 0 }, 1).encode();
        b[4..8].copy_from_slice(&(MAX_PAYLOAD + 1).to_le_bytes());
        assert_eq!(Header::decode(&b), Err(FrameError::TooLong(MAX_PAYLOAD + 1)));
        let mut b = Header::new(Frame::Credit, 0).encode();
        b[2] = 1;
        assert_eq!(Header::decode(&b), Err(FrameError::Reserved));
        let mut b = Header::new(Frame::RmaSync { win: 1, sync: RmaSync::Post, arg: 0, req: 0 }, 0).encode();
        b[20] = 77;
        assert_eq!(Header::decode(&b), Err(FrameError::BadSync(77)));
        let b = Header::new(Frame::RmaOp { win: 1, offset: 0, reply: None }, 8).encode();
        assert!(matches!(Header::decode(&b), Err(FrameError::BadLength { .. })), "shorter than a descriptor");
    }
}

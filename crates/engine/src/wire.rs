//! The frame format shared by every transport.
//!
//! A frame is a fixed 40-byte header, little-endian, followed by
//! `payload_len` bytes. Transports carry frames as a byte stream (a TCP
//! connection, a shared-memory ring) and know nothing of their meaning.
//! Decoding checks every field: a malformed header is a [`FrameError`], never
//! undefined behaviour or a panic.
//!
//! ```text
//!  0 u8  kind         4 u32 payload_len   8 u32 credit (eager bytes returned)
//!  1 u8  flags       12 u32 ctx          16 i32 src       20 i32 tag
//!  2 u16 reserved=0  24 u64 len          32 u32 sreq      36 u32 rreq
//! ```

use std::fmt;

pub const HEADER_LEN: usize = 40;

/// Largest payload one frame may carry. Larger messages are sent as several
/// DATA frames.
pub const MAX_PAYLOAD: u32 = 1 << 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// A whole message: ctx, src, tag, len (= payload_len), payload. With
    /// `SYNC`, `sreq` names the sender's request to acknowledge on match.
    Eager = 1,
    /// Request to send `len` bytes (rendezvous): ctx, src, tag, len, sreq.
    /// With `SINGLE_COPY` the payload is the 8-byte address of the sender's
    /// contiguous buffer, for the receiver to read with process_vm_readv.
    Rts = 2,
    /// Clear to send: the receiver matched `sreq` to its `rreq` and accepts
    /// `len` bytes (less than the message when the receive truncates).
    Cts = 3,
    /// Part of a rendezvous message for `rreq`, at byte offset `len`.
    Data = 4,
    /// The receiver has read a single-copy message: `sreq` is complete.
    Fin = 5,
    /// A synchronous eager message was matched: `sreq` is complete.
    SyncAck = 6,
    /// Only returns eager credit.
    Credit = 7,
}

/// How far a frame may overtake frames queued before it on the same
/// connection (a transport may reorder unstarted frames by this, highest
/// first; see the TCP transport's send queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Urgency {
    /// Rendezvous payload (Data): belongs to an already matched message,
    /// so it has no order relative to other messages.
    Bulk,
    /// Message envelopes (Eager, Rts): in order among themselves, which is
    /// MPI's non-overtaking rule; they may pass bulk payload.
    Message,
    /// Protocol replies (Cts, Fin, SyncAck, Credit): about something
    /// already received, so any order is correct; they may pass anything.
    Control,
}

impl Kind {
    pub fn urgency(self) -> Urgency {
        match self {
            Kind::Data => Urgency::Bulk,
            Kind::Eager | Kind::Rts => Urgency::Message,
            Kind::Cts | Kind::Fin | Kind::SyncAck | Kind::Credit => Urgency::Control,
        }
    }

    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Eager,
            2 => Kind::Rts,
            3 => Kind::Cts,
            4 => Kind::Data,
            5 => Kind::Fin,
            6 => Kind::SyncAck,
            7 => Kind::Credit,
            _ => return None,
        })
    }
}

pub mod flags {
    /// Eager: the sender waits for a SyncAck (MPI_Ssend).
    pub const SYNC: u8 = 1;
    /// Rts: payload carries the sender buffer's address for single-copy.
    pub const SINGLE_COPY: u8 = 2;
    pub const ALL: u8 = SYNC | SINGLE_COPY;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub flags: u8,
    pub payload_len: u32,
    pub credit: u32,
    pub ctx: u32,
    pub src: i32,
    pub tag: i32,
    pub len: u64,
    pub sreq: u32,
    pub rreq: u32,
}

impl Header {
    pub fn new(kind: Kind) -> Header {
        Header { kind, flags: 0, payload_len: 0, credit: 0, ctx: 0, src: 0, tag: 0, len: 0, sreq: 0, rreq: 0 }
    }

    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0] = self.kind as u8;
        b[1] = self.flags;
        b[4..8].copy_from_slice(&self.payload_len.to_le_bytes());
        b[8..12].copy_from_slice(&self.credit.to_le_bytes());
        b[12..16].copy_from_slice(&self.ctx.to_le_bytes());
        b[16..20].copy_from_slice(&self.src.to_le_bytes());
        b[20..24].copy_from_slice(&self.tag.to_le_bytes());
        b[24..32].copy_from_slice(&self.len.to_le_bytes());
        b[32..36].copy_from_slice(&self.sreq.to_le_bytes());
        b[36..40].copy_from_slice(&self.rreq.to_le_bytes());
        b
    }

    /// Decode and check a header. Checks here are those that need no engine
    /// state; the engine checks that request ids and contexts make sense.
    pub fn decode(b: &[u8; HEADER_LEN]) -> Result<Header, FrameError> {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let kind = Kind::from_u8(b[0]).ok_or(FrameError::UnknownKind(b[0]))?;
        let flags = b[1];
        if b[2] != 0 || b[3] != 0 {
            return Err(FrameError::Reserved);
        }
        let h = Header {
            kind,
            flags,
            payload_len: u32_at(4),
            credit: u32_at(8),
            ctx: u32_at(12),
            src: u32_at(16) as i32,
            tag: u32_at(20) as i32,
            len: u64::from_le_bytes(b[24..32].try_into().unwrap()),
            sreq: u32_at(32),
            rreq: u32_at(36),
        };
        let allowed_flags = match kind {
            Kind::Eager => flags::SYNC,
            Kind::Rts => flags::SINGLE_COPY,
            _ => 0,
        };
        if flags & !allowed_flags != 0 {
            return Err(FrameError::BadFlags { kind, flags });
        }
        if h.payload_len > MAX_PAYLOAD {
            return Err(FrameError::TooLong(h.payload_len));
        }
        let payload_ok = match kind {
            Kind::Eager => h.len == h.payload_len as u64,
            Kind::Rts => h.payload_len == if flags & flags::SINGLE_COPY != 0 { 8 } else { 0 },
            Kind::Data => h.payload_len > 0,
            Kind::Cts | Kind::Fin | Kind::SyncAck | Kind::Credit => h.payload_len == 0,
        };
        if !payload_ok {
            return Err(FrameError::BadLength { kind, payload_len: h.payload_len, len: h.len });
        }
        if matches!(kind, Kind::Eager | Kind::Rts) && h.tag < 0 {
            return Err(FrameError::BadTag(h.tag));
        }
        Ok(h)
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
        }
    }
}

impl std::error::Error for FrameError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut h = Header::new(Kind::Eager);
        h.flags = flags::SYNC;
        h.payload_len = 5;
        h.len = 5;
        h.credit = 77;
        h.ctx = 9;
        h.src = 3;
        h.tag = 12345;
        h.sreq = 0xdead_beef;
        assert_eq!(Header::decode(&h.encode()).unwrap(), h);
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        // Every single-byte corruption of a valid header either decodes to
        // something or errors; never panics. And random headers never panic.
        let mut h = Header::new(Kind::Rts);
        h.len = 1 << 20;
        let good = h.encode();
        for i in 0..HEADER_LEN {
            for v in [0u8, 1, 0x7f, 0x80, 0xff] {
                let mut b = good;
                b[i] = v;
                let _ = Header::decode(&b);
            }
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            let mut b = [0u8; HEADER_LEN];
            for byte in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *byte = x as u8;
            }
            b[0] = (b[0] % 9) as u8;
            let _ = Header::decode(&b);
        }
    }

    #[test]
    fn specific_rejections() {
        let mut b = Header::new(Kind::Cts).encode();
        b[0] = 99;
        assert_eq!(Header::decode(&b), Err(FrameError::UnknownKind(99)));
        let mut h = Header::new(Kind::Eager);
        h.payload_len = 4;
        h.len = 8;
        assert!(matches!(Header::decode(&h.encode()), Err(FrameError::BadLength { .. })));
        let mut h = Header::new(Kind::Cts);
        h.flags = flags::SYNC;
        assert!(matches!(Header::decode(&h.encode()), Err(FrameError::BadFlags { .. })));
        let mut h = Header::new(Kind::Eager);
        h.tag = -4;
        assert_eq!(Header::decode(&h.encode()), Err(FrameError::BadTag(-4)));
    }
}

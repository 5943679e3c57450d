//! A frame on its way out: what the engine hands a transport.

use crate::frame::Header;
use crate::Pid;
use gridmpi_datatype::UserBuf;

/// Payload of a frame to send.
pub enum Payload {
    None,
    /// `len` packed bytes of a user buffer starting at packed offset
    /// `offset`: the transport copies them out of user memory itself
    /// (writev, a ring slot), so they are copied once.
    User { buf: UserBuf, offset: u64, len: u64 },
    /// Bytes owned by the frame.
    Owned(Vec<u8>),
    /// An 8-byte little-endian value (the single-copy address).
    Word(u64),
}

impl Payload {
    pub fn len(&self) -> u64 {
        match self {
            Payload::None => 0,
            Payload::User { len, .. } => *len,
            Payload::Owned(v) => v.len() as u64,
            Payload::Word(_) => 8,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Names a frame whose sending the engine wants to hear about: the
/// transport reports it once the payload has left user memory (copied into
/// a socket or a ring), after which the user may reuse the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SentToken(pub u32);

/// A frame for a transport to send to `peer`, after the frames handed to it
/// before for that peer (a transport may let a more urgent frame pass a
/// less urgent one that has not started; see [`crate::Urgency`]).
pub struct Transmit {
    pub peer: Pid,
    pub header: Header,
    pub payload: Payload,
    pub notify: Option<SentToken>,
}

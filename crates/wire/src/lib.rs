//! GridMPI's wire: the frames every transport carries, and the few promises
//! between the engine (which decides what to send) and the transports (which
//! move bytes).
//!
//! - [`frame`]: the 40-byte frame header as a typed [`Frame`], decoded once
//!   and checked field by field; a malformed header is a [`FrameError`],
//!   never a panic.
//! - [`rma`]: the descriptor at the start of a one-sided operation's
//!   payload, checked against the payload's length.
//! - [`transmit`]: a frame to send with its payload ([`Transmit`]), which a
//!   transport gathers from user memory without copying it first.
//! - [`PACED_UNSENT`]: how long a paced connection may hold unsent data, the
//!   one number the engine's pacing and the TCP transport must agree on.
//!
//! The protocol version is agreed once per connection (the TCP handshake,
//! the shared-memory segment header), not carried in every frame.

#![forbid(unsafe_code)]

pub mod frame;
#[doc(hidden)]
pub mod fuzzing;
pub mod rma;
pub mod transmit;

pub use frame::{flags, AgreeStep, Envelope, Frame, FrameError, Header, Kind, RmaSync, Urgency, HEADER_LEN, MAX_PAYLOAD};
pub use transmit::{Payload, SentToken, Transmit};

/// The protocol's version (frames and the TCP handshake): a peer speaking
/// another one is refused when the connection is made. 3: the TCP
/// handshake ends with the acceptor's authenticated verdict. 4: a
/// connection can resume a broken one (the handshake exchanges how much
/// each side received; Ack frames). 5: processes are named by world and
/// rank in the handshake (processes of joined jobs connect). 6: eager
/// messages to paced peers travel in pieces (EagerHead, EagerRest). 7: a
/// send can be cancelled (CancelSend, CancelReply).
pub const WIRE_VERSION: u32 = 7;

/// A process of the job (its rank in MPI_COMM_WORLD).
pub type Pid = u32;

/// How much sending time a paced connection may hold unsent in the kernel.
/// Whatever is queued there leaves at the paced rate, so a protocol reply
/// written after it waits that long: the TCP transport bounds a paced
/// socket's unsent bytes by `rate x PACED_UNSENT`, and the engine cuts
/// rendezvous payloads and eager messages to paced peers into pieces of
/// that size.
pub const PACED_UNSENT: std::time::Duration = std::time::Duration::from_millis(4);

/// The smallest piece a paced connection holds unsent (and the engine cuts
/// paced payloads into): below a few segments, per-write costs dominate.
pub const PACED_UNSENT_MIN: u64 = 4096;

/// The unsent bound (bytes) of a connection paced at `rate` bytes/s.
pub fn paced_unsent_bytes(rate: u64) -> u64 {
    ((rate as f64 * PACED_UNSENT.as_secs_f64()) as u64).max(PACED_UNSENT_MIN)
}

//! GridMPI's transports. They move frames ([`gridmpi_wire`]) between
//! processes and know nothing of MPI: no communicator, request or message
//! is visible here, only peers (by process id), frames and their payloads.
//!
//! Every transport implements [`Transport`]: frames go in with
//! [`Transport::send`]; what happens comes out as calls on a [`Sink`] the
//! caller passes to [`Transport::send`] and [`Transport::poll`] (a frame
//! arrived, a payload left user memory, a connection opened). The sink is
//! how the driver connects a transport to the engine without the transport
//! knowing it: payloads are lent to the sink for the duration of the call,
//! so an eager message is copied once, from the socket buffer or ring slot
//! to its destination, and large Data payloads are read straight into the
//! buffer the sink names ([`Sink::data_target`]).
//!
//! - [`tcp`]: one authenticated, tuned connection per peer across hosts
//!   (encrypted with TLS 1.3 where the caller asks for it);
//! - [`shm`]: rings in shared memory between the processes of one host;
//! - [`progress`]: the epoll set a blocked process sleeps in, and the
//!   eventfd that wakes it;
//! - [`sys`]: the system calls the transports and the library share.

/// SHA-256 and HMAC (its own crate: the PMI rendezvous uses it too).
pub use gridmpi_auth as auth;
pub use gridmpi_relay::relay_key;
pub mod progress;
pub mod shm;
pub mod sys;
pub mod tcp;

use gridmpi_datatype::UserBuf;
use gridmpi_wire::{Header, Pid, SentToken, Transmit};
use std::os::fd::RawFd;
use std::time::Duration;

/// Where a transport reports what happened.
pub trait Sink {
    /// A whole frame from `peer`. `payload` is the frame's payload, lent
    /// for this call. An error means the peer broke the protocol.
    fn frame(&mut self, peer: Pid, h: &Header, payload: &[u8]) -> Result<(), String>;
    /// The buffer the payload of Data frame `h` from `peer` belongs in (at
    /// the frame's offset): the transport reads it there itself and then
    /// calls [`Sink::data_landed`].
    fn data_target(&mut self, peer: Pid, h: &Header) -> Result<UserBuf, String>;
    fn data_landed(&mut self, peer: Pid, h: &Header) -> Result<(), String>;
    /// The payload of a frame sent with `token` has left user memory.
    fn sent(&mut self, token: SentToken);
    /// Something observers may want to know (the tracer).
    fn event(&mut self, _ev: ConnEvent) {}
}

/// One kind of connection between processes.
pub trait Transport {
    /// Queue a frame for its peer and write what can be written now.
    /// Frames to one peer leave in order, except that a frame may pass
    /// unstarted frames of lower [`gridmpi_wire::Urgency`].
    fn send(&mut self, t: Transmit, sink: &mut dyn Sink) -> Result<(), TransportError>;
    /// Read and write what can be without blocking; report to `sink`.
    /// Returns whether anything happened.
    fn poll(&mut self, sink: &mut dyn Sink) -> Result<bool, TransportError>;
    /// Send to `peer` at no more than `bytes_per_sec` (None: unlimited).
    /// Applies from the next byte written, also to a connection not yet made.
    fn set_pace(&mut self, peer: Pid, bytes_per_sec: Option<u64>, sink: &mut dyn Sink);
    /// Bytes written for `peer` that have not left this host yet (0 for a
    /// transport without a queue of its own or without a connection).
    fn unsent(&self, peer: Pid) -> u64;
    /// Frames accepted by `send` and not yet written.
    fn backlog(&self) -> usize;
    /// How soon `poll` must run again even if the transport's fd stays
    /// quiet (a full ring drains silently; a connection attempt times out).
    fn next_deadline(&self) -> Option<Duration>;
    /// The fd that becomes readable when the transport has work.
    fn wait_fd(&self) -> RawFd;
    /// About to sleep on [`Transport::wait_fd`]: arm wakeups and look once
    /// more. False: something is already there, do not sleep.
    fn prepare_sleep(&mut self) -> bool {
        true
    }
    /// Woken (or not slept after `prepare_sleep`).
    fn after_sleep(&mut self) {}
}

/// Something about a connection, for observers (the tracer).
#[derive(Debug, Clone)]
pub enum ConnEvent {
    /// An authenticated connection to `peer` is ready on `fd`.
    Opened { peer: Pid, fd: RawFd },
    /// The established connection to `peer` on `fd` is going away.
    Closed { peer: Pid, fd: RawFd },
    /// A socket option was applied to the connection with `peer`.
    Tuned { peer: Pid, option: &'static str, value: String },
    /// The link with `peer` has a connection again, `after` its last one
    /// broke (`why`); `resent` bytes the peer had not received were
    /// written again.
    Resumed { peer: Pid, after: Duration, resent: u64, why: String },
    /// A connection from `peer` (it proved the job secret) was refused
    /// (`why`): the link stays as it was.
    Refused { peer: Pid, why: String },
}

/// A failure of a transport: a peer or the network failed, or a peer broke
/// the protocol. `peer` names the process when one is to blame.
#[derive(Debug)]
pub struct TransportError {
    pub peer: Option<Pid>,
    pub message: String,
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.peer {
            Some(p) => write!(f, "connection with rank {p}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TransportError {}

pub(crate) fn terr(peer: Option<Pid>, message: impl Into<String>) -> TransportError {
    TransportError { peer, message: message.into() }
}

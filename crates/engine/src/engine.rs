//! The engine and its contract with the layer that does I/O (the driver).
//!
//! The engine is sans-IO: it makes no system call and reads no clock. MPI
//! calls come in as method calls (`isend`, `irecv`, `start_schedule`, ...)
//! and return request ids; everything the outside world tells it comes in
//! through `handle_*`, and everything it wants done comes out of `poll_*`:
//!
//! | in                                   | when                                           |
//! |--------------------------------------|------------------------------------------------|
//! | [`Engine::handle_frame`]             | a whole frame arrived from a peer              |
//! | [`Engine::data_target`] / [`Engine::handle_data_landed`] | a Data frame's payload is read straight into user memory: ask where, then say it is there |
//! | [`Engine::handle_sent`]              | a frame's payload left user memory             |
//! | [`Engine::handle_remote_read`]       | a single-copy read finished (or failed)         |
//! | [`Engine::handle_unsent`]            | bytes a peer's connection still holds unsent, for every peer [`Engine::unsent_watch`] lists |
//!
//! | out                                  | what the driver does                           |
//! |--------------------------------------|------------------------------------------------|
//! | [`Engine::poll_action`]              | [`Action::Transmit`] a frame, [`Action::SetPace`] a connection's rate, [`Action::RemoteRead`] a peer's memory |
//! | [`Engine::poll_timeout`]             | the longest the driver may sleep without calling `handle_unsent` again |
//! | [`Engine::is_complete`] / [`Engine::take`] | completion of a request                  |
//! | [`Engine::eager_now`]                | a small send that needs no request: the driver writes the frame at once, or queues it owning a copy with [`Engine::transmit_later`] |
//! | [`Engine::eager_header`]             | the same for contiguous bytes the caller holds: only the frame's header |
//!
//! A driver loops: drain `poll_action`, feed what the transports report,
//! report unsent bytes of watched peers, until nothing moves; then it may
//! sleep until a transport has something or `poll_timeout` expires. The
//! engine never blocks and never waits for the driver: every call returns
//! at once, and nothing it asked for needs an answer within a deadline.

use crate::p2p::matching::QueuesByCtx;
use crate::p2p::{Peer, Unexpected};
use crate::pacing::Pacing;
use crate::request::{ReqId, Request};
use crate::slab::Slab;
use gridmpi_wire::{Header, Payload, Pid, SentToken, Transmit};
use std::collections::VecDeque;
use std::fmt;

/// How a peer is reached, set by the driver when it picks a transport.
#[derive(Clone, Copy, Debug)]
pub struct PeerParams {
    /// Largest message sent eagerly.
    pub eager_limit: u64,
    /// Largest payload of one DATA frame.
    pub max_data_frame: u32,
    /// The peer can read our memory with process_vm_readv (same host).
    pub single_copy: bool,
    /// Smallest message worth a single-copy rendezvous.
    pub single_copy_min: u64,
}

impl Default for PeerParams {
    fn default() -> Self {
        PeerParams { eager_limit: 64 * 1024, max_data_frame: 1 << 20, single_copy: false, single_copy_min: 64 * 1024 }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct EngineConfig {
    /// Bytes of unmatched eager data this process accepts from each sender.
    pub eager_credit: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { eager_credit: 1 << 20 }
    }
}

pub enum Action {
    Transmit(Transmit),
    /// Read `len` bytes at `remote_addr` of process `peer` into `dst` (from
    /// packed offset 0), then call [`Engine::handle_remote_read`] with `req`.
    RemoteRead { peer: Pid, remote_addr: u64, len: u64, dst: gridmpi_datatype::UserBuf, req: ReqId },
    /// Send to `peer` at no more than `bytes_per_sec` (None: unlimited), from
    /// the next frame on. The rate to apply now, not a change: the engine
    /// keeps the nesting of caps (see pacing.rs).
    SetPace { peer: Pid, bytes_per_sec: Option<u64> },
}

/// A peer broke the protocol. The driver reports it and ends the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    pub peer: Pid,
    pub reason: String,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "protocol error from rank {}: {}", self.peer, self.reason)
    }
}

impl std::error::Error for ProtocolError {}

pub struct Engine {
    pub(crate) me: Pid,
    pub(crate) config: EngineConfig,
    pub(crate) peers: Vec<Peer>,
    pub(crate) reqs: Slab<Request>,
    pub(crate) queues: QueuesByCtx,
    /// Messages taken off the unexpected queues by MPI_Mprobe.
    pub(crate) messages: Slab<Unexpected>,
    pub(crate) actions: VecDeque<Action>,
    /// Bumped on every completion: lets a waiter tell whether anything happened.
    pub(crate) completions: u64,
    pub(crate) pacing: Pacing,
    pub(crate) executor: crate::sched::Executor,
    pub(crate) schedule_errors: Vec<(ReqId, String)>,
    pub(crate) partitioned: crate::partitioned::Partitioned,
    /// Messages in the unexpected queues now, and the most there ever were.
    pub(crate) unexpected_len: u64,
    pub(crate) unexpected_peak: u64,
    /// When set, the requests of schedules that finished are recorded here
    /// (for the trace's collective markers).
    pub finished_schedules: Option<Vec<ReqId>>,
    /// One-sided communication: windows and pending synchronization.
    pub(crate) rma: crate::rma::Rma,
    /// Failed processes, revoked communicators, agreements (ft/).
    pub(crate) ft: crate::ft::Ft,
}

impl Engine {
    pub fn new(me: Pid, npeers: usize, config: EngineConfig) -> Engine {
        Engine {
            me,
            config,
            peers: (0..npeers).map(|_| Peer::new(config.eager_credit)).collect(),
            reqs: Slab::default(),
            queues: QueuesByCtx::default(),
            messages: Slab::default(),
            actions: VecDeque::new(),
            completions: 0,
            pacing: Pacing::default(),
            executor: Default::default(),
            schedule_errors: Vec::new(),
            partitioned: Default::default(),
            unexpected_len: 0,
            unexpected_peak: 0,
            finished_schedules: None,
            rma: Default::default(),
            ft: Default::default(),
        }
    }

    pub fn me(&self) -> Pid {
        self.me
    }

    pub fn npeers(&self) -> usize {
        self.peers.len()
    }

    /// A new peer (a process of a world joined to ours: MPI_Comm_accept,
    /// connect, spawn, join); returns its pid, the next one.
    pub fn add_peer(&mut self, params: PeerParams) -> Pid {
        let mut p = Peer::new(self.config.eager_credit);
        p.params = params;
        self.peers.push(p);
        (self.peers.len() - 1) as Pid
    }

    pub fn set_peer_params(&mut self, peer: Pid, params: PeerParams) {
        self.peers[peer as usize].params = params;
    }

    pub fn peer_params(&self, peer: Pid) -> PeerParams {
        self.peers[peer as usize].params
    }

    /// A counter that changes whenever a request completes.
    pub fn completions(&self) -> u64 {
        self.completions
    }

    /// The next thing for the driver to do.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    pub fn has_actions(&self) -> bool {
        !self.actions.is_empty()
    }

    /// Payload bytes of the frames waiting in the action queue.
    pub fn queued_bytes(&self) -> u64 {
        self.actions.iter().map(|a| if let Action::Transmit(t) = a { t.payload.len() } else { 0 }).sum()
    }

    /// Queue a frame, piggybacking the eager credit we owe the peer.
    pub(crate) fn transmit(&mut self, peer: Pid, mut h: Header, payload: Payload, notify: Option<ReqId>) {
        h.credit = self.peers[peer as usize].credit.take_owed();
        self.actions.push_back(Action::Transmit(Transmit { peer, header: h, payload, notify: notify.map(|r| SentToken(r.0)) }));
    }
}

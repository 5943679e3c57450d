//! Point-to-point messaging: matching, the eager and rendezvous protocols,
//! eager credits, synchronous sends, single-copy and self messages.
//!
//! The engine is sans-IO: MPI calls and received frames go in; frames to
//! send and memory reads to perform come out as [`Action`]s; completion is
//! observed by polling requests. No system call is made here.
//!
//! Protocols, per message of `len` packed bytes from S to R:
//! - eager (len <= eager limit and S holds enough credit from R): one
//!   `Eager` frame; S's request completes once the transport has taken the
//!   payload (or, for MPI_Ssend, when R's `SyncAck` comes back).
//! - rendezvous: S sends `Rts`; when R matches it, R answers `Cts` with the
//!   number of bytes it accepts and S streams `Data` frames; or, with
//!   single-copy (same host), R reads S's buffer itself and answers `Fin`.
//! - credits: R grants each sender `eager_credit` bytes of unmatched eager
//!   data. S spends credit per eager frame (header + payload) and R returns it
//!   (piggybacked on any frame, or in a `Credit` frame) once the data left
//!   its unexpected queue. Without credit S uses rendezvous, whose `Rts` is
//!   small, so a flood of unmatched sends cannot exhaust R's memory.

use crate::buf::UserBuf;
use crate::slab::Slab;
use crate::wire::{flags, Header, Kind, HEADER_LEN, MAX_PAYLOAD};
use std::collections::{HashMap, VecDeque};
use std::fmt;

/// A process of the job (its rank in MPI_COMM_WORLD).
pub type Pid = u32;

/// A request in the engine's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReqId(pub u32);

/// A message taken off the unexpected queue by MPI_Mprobe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MsgId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The message was longer than the receive buffer.
    Truncate,
}

/// What MPI_Status reports. `count` is in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub source: i32,
    pub tag: i32,
    pub count: u64,
    pub cancelled: bool,
    pub error: Option<ErrorKind>,
}

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

/// How a peer is reached, set by the runtime when it picks a transport.
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

/// Payload of a frame to send.
pub enum Payload {
    None,
    /// `len` packed bytes of a user buffer starting at packed offset `offset`.
    User { buf: UserBuf, offset: u64, len: u64 },
    /// Bytes owned by the frame.
    Owned(Vec<u8>),
    /// An 8-byte value (the single-copy address).
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

/// A frame for a transport to send, in order after earlier frames to `peer`.
pub struct Transmit {
    pub peer: Pid,
    pub header: Header,
    pub payload: Payload,
    /// Report [`Engine::transmitted`] with this id once the payload has been
    /// copied out of user memory (into a socket or ring).
    pub notify: Option<ReqId>,
}

pub enum Action {
    Transmit(Transmit),
    /// Read `len` bytes at `remote_addr` of process `peer` into `dst` (from
    /// packed offset 0), then call [`Engine::remote_read_done`] with `req`.
    RemoteRead { peer: Pid, remote_addr: u64, len: u64, dst: UserBuf, req: ReqId },
    /// Cap the sending rate to `peer` at `bytes_per_sec` (Some), or release
    /// one cap (None): a collective's WAN phase starts or ends. Caps nest;
    /// frames queued after this action are sent under it.
    Pace { peer: Pid, bytes_per_sec: Option<u64> },
    /// Complete `req` (with [`Engine::complete_external`]) once everything
    /// already handed to the transport for `peer` has left this host, not
    /// just the process (at once for peers without a socket queue).
    Drain { peer: Pid, req: ReqId },
}

/// A peer broke the protocol. The runtime reports it and ends the job.
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

// ---------------------------------------------------------------------------

enum SendStage {
    /// The eager frame is queued or sent.
    Eager { transmitted: bool, acked: bool },
    /// Rts sent; waiting for Cts (or Fin for single-copy).
    AwaitCts,
    /// Data frames queued; `pending` transmit notifications outstanding.
    Sending { pending: u32 },
    /// A message to ourselves waiting in our own unexpected queue.
    SelfPending,
}

struct SendOp {
    peer: Pid,
    buf: UserBuf,
    sync: bool,
    stage: SendStage,
}

enum RecvStage {
    Posted,
    /// Matched a rendezvous; `expect` bytes will arrive in Data frames.
    Receiving { peer: Pid, expect: u64, got: u64 },
    /// Reading the sender's memory ourselves.
    RemoteRead { peer: Pid, sreq: u32, accepted: u64 },
}

struct RecvOp {
    ctx: u32,
    src: Option<i32>,
    tag: Option<i32>,
    buf: UserBuf,
    stage: RecvStage,
}

enum ReqOp {
    Send(SendOp),
    Recv(RecvOp),
    /// Completed on creation or by its owner (MPI_PROC_NULL operations,
    /// schedules and generalized requests use these).
    External,
}

struct Request {
    op: ReqOp,
    done: bool,
    /// MPI_Request_free was called: drop it as soon as it completes.
    detached: bool,
    status: Status,
}

enum UnexBody {
    Eager { data: Vec<u8>, sync_sreq: Option<u32> },
    Rts { sreq: u32, single_copy_addr: Option<u64> },
    /// A message to ourselves: the data is still in the sender's buffer
    /// (`sreq`), or was copied (`data`) when small.
    SelfSend { sreq: u32 },
}

struct Unexpected {
    pid: Pid,
    src: i32,
    tag: i32,
    len: u64,
    body: UnexBody,
}

#[derive(Default)]
struct MatchQueues {
    /// Posted receives in posting order.
    posted: VecDeque<ReqId>,
    /// Arrived, unmatched messages in arrival order.
    unexpected: VecDeque<Unexpected>,
}

struct Peer {
    /// Eager bytes we may still send to this peer.
    credit_avail: u64,
    /// Eager bytes consumed here that we have not yet returned to the peer.
    credit_owed: u64,
    params: PeerParams,
}

pub struct Engine {
    me: Pid,
    config: EngineConfig,
    peers: Vec<Peer>,
    reqs: Slab<Request>,
    queues: HashMap<u32, MatchQueues>,
    messages: Slab<Unexpected>,
    actions: VecDeque<Action>,
    /// Bumped on every completion: lets a waiter tell whether anything happened.
    completions: u64,
    pub(crate) executor: crate::sched::Executor,
    pub(crate) schedule_errors: Vec<(ReqId, String)>,
    /// When set, the requests of schedules that finished are recorded here
    /// (for the trace's collective markers).
    pub finished_schedules: Option<Vec<ReqId>>,
}

fn matches(want_src: Option<i32>, want_tag: Option<i32>, src: i32, tag: i32) -> bool {
    want_src.is_none_or(|s| s == src) && want_tag.is_none_or(|t| t == tag)
}

impl Engine {
    pub fn new(me: Pid, npeers: usize, config: EngineConfig) -> Engine {
        let peers = (0..npeers)
            .map(|_| Peer { credit_avail: config.eager_credit as u64, credit_owed: 0, params: PeerParams::default() })
            .collect();
        Engine {
            me,
            config,
            peers,
            reqs: Slab::default(),
            queues: HashMap::new(),
            messages: Slab::default(),
            actions: VecDeque::new(),
            completions: 0,
            executor: Default::default(),
            schedule_errors: Vec::new(),
            finished_schedules: None,
        }
    }

    pub fn me(&self) -> Pid {
        self.me
    }

    pub fn npeers(&self) -> usize {
        self.peers.len()
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

    /// Requests in the table (for leak checks at finalize).
    pub fn live_requests(&self) -> usize {
        self.reqs.len()
    }

    // ---- requests ---------------------------------------------------------

    fn new_req(&mut self, op: ReqOp) -> ReqId {
        ReqId(self.reqs.insert(Request { op, done: false, detached: false, status: Status::default() }))
    }

    /// A request that is already complete with `status` (e.g. MPI_PROC_NULL).
    pub fn completed_request(&mut self, status: Status) -> ReqId {
        let r = self.new_req(ReqOp::External);
        let req = self.reqs.get_mut(r.0).unwrap();
        req.done = true;
        req.status = status;
        r
    }

    /// A request completed later by its owner with [`Engine::complete_external`].
    pub fn external_request(&mut self) -> ReqId {
        self.new_req(ReqOp::External)
    }

    pub fn complete_external(&mut self, r: ReqId, status: Status) {
        if let Some(req) = self.reqs.get_mut(r.0) {
            if matches!(req.op, ReqOp::External) && !req.done {
                req.status = status;
                self.finish(r);
            }
        }
    }

    pub fn exists(&self, r: ReqId) -> bool {
        self.reqs.get(r.0).is_some()
    }

    pub fn is_complete(&self, r: ReqId) -> bool {
        self.reqs.get(r.0).is_some_and(|q| q.done)
    }

    /// The status of a completed request, without freeing it.
    pub fn peek_status(&self, r: ReqId) -> Option<Status> {
        self.reqs.get(r.0).filter(|q| q.done).map(|q| q.status)
    }

    /// If `r` is complete, free it and return its status.
    pub fn take(&mut self, r: ReqId) -> Option<Status> {
        if self.is_complete(r) {
            self.reqs.remove(r.0).map(|q| q.status)
        } else {
            None
        }
    }

    /// MPI_Request_free: forget `r`; it completes in the background.
    pub fn detach(&mut self, r: ReqId) {
        if let Some(q) = self.reqs.get_mut(r.0) {
            if q.done {
                self.reqs.remove(r.0);
            } else {
                q.detached = true;
            }
        }
    }

    fn finish(&mut self, r: ReqId) {
        self.completions = self.completions.wrapping_add(1);
        let req = self.reqs.get_mut(r.0).expect("finishing a live request");
        req.done = true;
        if req.detached {
            self.reqs.remove(r.0);
        }
    }

    /// MPI_Cancel. Only receives still waiting for a match can be cancelled;
    /// anything else completes normally (the standard allows this).
    pub fn cancel(&mut self, r: ReqId) {
        let Some(req) = self.reqs.get(r.0) else { return };
        if req.done {
            return;
        }
        if let ReqOp::Recv(RecvOp { ctx, stage: RecvStage::Posted, .. }) = &req.op {
            let ctx = *ctx;
            if let Some(q) = self.queues.get_mut(&ctx) {
                if let Some(pos) = q.posted.iter().position(|&x| x == r) {
                    q.posted.remove(pos);
                }
            }
            let req = self.reqs.get_mut(r.0).unwrap();
            req.status = Status { source: -1, tag: -1, count: 0, cancelled: true, error: None };
            self.finish(r);
        }
    }

    // ---- sending ------------------------------------------------------------

    pub fn isend(&mut self, a: SendArgs) -> ReqId {
        let len = a.buf.len();
        let sync = a.mode == SendMode::Sync;
        if a.dest == self.me {
            return self.self_send(a);
        }
        let peer = &mut self.peers[a.dest as usize];
        let cost = len + HEADER_LEN as u64;
        let eager = len <= peer.params.eager_limit && cost <= peer.credit_avail && len <= MAX_PAYLOAD as u64;
        if eager {
            peer.credit_avail -= cost;
            let r = self.new_req(ReqOp::Send(SendOp {
                peer: a.dest,
                buf: a.buf.clone(),
                sync,
                stage: SendStage::Eager { transmitted: false, acked: !sync },
            }));
            let mut h = Header::new(Kind::Eager);
            h.flags = if sync { flags::SYNC } else { 0 };
            h.payload_len = len as u32;
            h.len = len;
            h.ctx = a.ctx;
            h.src = a.src;
            h.tag = a.tag;
            h.sreq = r.0;
            let payload = if len == 0 { Payload::None } else { Payload::User { buf: a.buf, offset: 0, len } };
            self.transmit(a.dest, h, payload, Some(r));
            r
        } else {
            let single = peer.params.single_copy && len >= peer.params.single_copy_min;
            let addr = if single { a.buf.contiguous().map(|p| p as u64) } else { None };
            let r = self.new_req(ReqOp::Send(SendOp { peer: a.dest, buf: a.buf, sync, stage: SendStage::AwaitCts }));
            let mut h = Header::new(Kind::Rts);
            h.ctx = a.ctx;
            h.src = a.src;
            h.tag = a.tag;
            h.len = len;
            h.sreq = r.0;
            let payload = match addr {
                Some(addr) => {
                    h.flags = flags::SINGLE_COPY;
                    h.payload_len = 8;
                    Payload::Word(addr)
                }
                None => Payload::None,
            };
            self.transmit(a.dest, h, payload, None);
            r
        }
    }

    /// Queue a frame, piggybacking the credit we owe the peer.
    fn transmit(&mut self, peer: Pid, mut h: Header, payload: Payload, notify: Option<ReqId>) {
        let p = &mut self.peers[peer as usize];
        let give = p.credit_owed.min(u32::MAX as u64);
        h.credit = give as u32;
        p.credit_owed -= give;
        self.actions.push_back(Action::Transmit(Transmit { peer, header: h, payload, notify }));
    }

    /// Note that `bytes` of eager credit from `peer` were consumed here, and
    /// return them explicitly once enough has accumulated.
    fn owe_credit(&mut self, peer: Pid, bytes: u64) {
        let p = &mut self.peers[peer as usize];
        p.credit_owed += bytes;
        if p.credit_owed >= (self.config.eager_credit as u64 / 4).max(1) {
            self.transmit(peer, Header::new(Kind::Credit), Payload::None, None);
        }
    }

    fn self_send(&mut self, a: SendArgs) -> ReqId {
        let len = a.buf.len();
        let sync = a.mode == SendMode::Sync;
        // A posted receive takes it at once.
        if let Some(rr) = self.take_posted_match(a.ctx, a.src, a.tag) {
            let recv_buf = match &self.reqs.get(rr.0).unwrap().op {
                ReqOp::Recv(op) => op.buf.clone(),
                _ => unreachable!(),
            };
            // SAFETY: both buffers are valid while their requests are pending.
            let copied = unsafe { recv_buf.copy_from(&a.buf) };
            self.complete_recv(rr, a.src, a.tag, len, copied);
            return self.completed_request(Status { source: -1, tag: -1, ..Default::default() });
        }
        // Standard-mode sends to ourselves are buffered whatever their size
        // (as MPICH does): a program that sends to itself before receiving
        // must not deadlock.
        if !sync {
            let mut data = vec![0u8; len as usize];
            // SAFETY: the send buffer is valid during the call.
            unsafe { a.buf.read_packed(0, &mut data) };
            let r = self.completed_request(Status::default());
            self.queue_unexpected(a.ctx, Unexpected {
                pid: self.me,
                src: a.src,
                tag: a.tag,
                len,
                body: UnexBody::Eager { data, sync_sreq: None },
            });
            return r;
        }
        let r = self.new_req(ReqOp::Send(SendOp { peer: self.me, buf: a.buf, sync, stage: SendStage::SelfPending }));
        self.queue_unexpected(a.ctx, Unexpected { pid: self.me, src: a.src, tag: a.tag, len, body: UnexBody::SelfSend { sreq: r.0 } });
        r
    }

    fn queue_unexpected(&mut self, ctx: u32, u: Unexpected) {
        self.queues.entry(ctx).or_default().unexpected.push_back(u);
    }

    /// The transport has taken the payload of a frame that named `r`.
    pub fn transmitted(&mut self, r: ReqId) {
        let Some(req) = self.reqs.get_mut(r.0) else { return };
        let ReqOp::Send(op) = &mut req.op else { return };
        let done = match &mut op.stage {
            SendStage::Eager { transmitted, acked } => {
                *transmitted = true;
                *acked
            }
            SendStage::Sending { pending } => {
                *pending = pending.saturating_sub(1);
                *pending == 0
            }
            _ => false,
        };
        if done {
            req.status = Status::default();
            self.finish(r);
        }
    }

    // ---- receiving ---------------------------------------------------------

    pub fn irecv(&mut self, a: RecvArgs) -> ReqId {
        let ctx = a.ctx;
        let r = self.new_req(ReqOp::Recv(RecvOp { ctx, src: a.src, tag: a.tag, buf: a.buf, stage: RecvStage::Posted }));
        let q = self.queues.entry(ctx).or_default();
        match q.unexpected.iter().position(|u| matches(a.src, a.tag, u.src, u.tag)) {
            Some(i) => {
                let u = q.unexpected.remove(i).unwrap();
                self.deliver(r, u);
            }
            None => q.posted.push_back(r),
        }
        r
    }

    /// MPI_Iprobe.
    pub fn iprobe(&self, ctx: u32, src: Option<i32>, tag: Option<i32>) -> Option<Status> {
        let q = self.queues.get(&ctx)?;
        q.unexpected
            .iter()
            .find(|u| matches(src, tag, u.src, u.tag))
            .map(|u| Status { source: u.src, tag: u.tag, count: u.len, cancelled: false, error: None })
    }

    /// MPI_Improbe: take the message off the queue.
    pub fn improbe(&mut self, ctx: u32, src: Option<i32>, tag: Option<i32>) -> Option<(MsgId, Status)> {
        let q = self.queues.get_mut(&ctx)?;
        let i = q.unexpected.iter().position(|u| matches(src, tag, u.src, u.tag))?;
        let u = q.unexpected.remove(i).unwrap();
        let st = Status { source: u.src, tag: u.tag, count: u.len, cancelled: false, error: None };
        Some((MsgId(self.messages.insert(u)), st))
    }

    pub fn message_exists(&self, m: MsgId) -> bool {
        self.messages.get(m.0).is_some()
    }

    /// MPI_Imrecv: receive a message taken by [`Engine::improbe`].
    pub fn imrecv(&mut self, m: MsgId, buf: UserBuf) -> Option<ReqId> {
        let u = self.messages.remove(m.0)?;
        let r = self.new_req(ReqOp::Recv(RecvOp { ctx: 0, src: Some(u.src), tag: Some(u.tag), buf, stage: RecvStage::Posted }));
        self.deliver(r, u);
        Some(r)
    }

    /// Match an unexpected message to the posted receive `r`.
    fn deliver(&mut self, r: ReqId, u: Unexpected) {
        let buf = match &self.reqs.get(r.0).unwrap().op {
            ReqOp::Recv(op) => op.buf.clone(),
            _ => unreachable!("deliver to a non-receive"),
        };
        match u.body {
            UnexBody::Eager { data, sync_sreq } => {
                // SAFETY: the receive buffer is valid while the request is pending.
                let n = unsafe { buf.write_packed(0, &data) };
                if u.pid != self.me {
                    self.owe_credit(u.pid, u.len + HEADER_LEN as u64);
                }
                if let Some(sreq) = sync_sreq {
                    let mut h = Header::new(Kind::SyncAck);
                    h.sreq = sreq;
                    self.transmit(u.pid, h, Payload::None, None);
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
                let n = unsafe { buf.copy_from(&send_buf) };
                self.complete_recv(r, u.src, u.tag, u.len, n);
                let sq = self.reqs.get_mut(sreq).unwrap();
                sq.status = Status::default();
                self.finish(ReqId(sreq));
            }
        }
    }

    fn start_rendezvous(&mut self, r: ReqId, peer: Pid, src: i32, tag: i32, len: u64, sreq: u32, addr: Option<u64>) {
        let req = self.reqs.get_mut(r.0).unwrap();
        let ReqOp::Recv(op) = &mut req.op else { unreachable!() };
        let accepted = len.min(op.buf.len());
        req.status = Status {
            source: src,
            tag,
            count: accepted,
            cancelled: false,
            error: (accepted < len).then_some(ErrorKind::Truncate),
        };
        match addr {
            Some(addr) if accepted > 0 => {
                op.stage = RecvStage::RemoteRead { peer, sreq, accepted };
                let dst = op.buf.clone();
                self.actions.push_back(Action::RemoteRead { peer, remote_addr: addr, len: accepted, dst, req: r });
            }
            _ => {
                op.stage = RecvStage::Receiving { peer, expect: accepted, got: 0 };
                let mut h = Header::new(Kind::Cts);
                h.sreq = sreq;
                h.rreq = r.0;
                h.len = accepted;
                self.transmit(peer, h, Payload::None, None);
                if accepted == 0 {
                    self.finish(r);
                }
            }
        }
    }

    /// The runtime finished (or failed) a [`Action::RemoteRead`].
    pub fn remote_read_done(&mut self, r: ReqId, ok: bool) {
        let Some(req) = self.reqs.get_mut(r.0) else { return };
        let ReqOp::Recv(op) = &mut req.op else { return };
        let RecvStage::RemoteRead { peer, sreq, accepted } = op.stage else { return };
        if ok {
            let mut h = Header::new(Kind::Fin);
            h.sreq = sreq;
            self.transmit(peer, h, Payload::None, None);
            self.finish(r);
        } else {
            // Fall back to the copy-through-the-transport path.
            op.stage = RecvStage::Receiving { peer, expect: accepted, got: 0 };
            let mut h = Header::new(Kind::Cts);
            h.sreq = sreq;
            h.rreq = r.0;
            h.len = accepted;
            self.transmit(peer, h, Payload::None, None);
        }
    }

    fn take_posted_match(&mut self, ctx: u32, src: i32, tag: i32) -> Option<ReqId> {
        let q = self.queues.get_mut(&ctx)?;
        let reqs = &self.reqs;
        let i = q.posted.iter().position(|r| match reqs.get(r.0).map(|q| &q.op) {
            Some(ReqOp::Recv(op)) => matches(op.src, op.tag, src, tag),
            _ => false,
        })?;
        q.posted.remove(i)
    }

    fn complete_recv(&mut self, r: ReqId, src: i32, tag: i32, len: u64, stored: u64) {
        let req = self.reqs.get_mut(r.0).unwrap();
        req.status = Status {
            source: src,
            tag,
            count: stored,
            cancelled: false,
            error: (stored < len).then_some(ErrorKind::Truncate),
        };
        self.finish(r);
    }

    // ---- frames from the network ---------------------------------------------

    /// Handle one frame from `from`. `payload` holds the frame's payload
    /// (`header.payload_len` bytes). Errors mean the peer broke the protocol.
    pub fn handle_frame(&mut self, from: Pid, h: &Header, payload: &[u8]) -> Result<(), ProtocolError> {
        let err = |reason: String| ProtocolError { peer: from, reason };
        if from as usize >= self.peers.len() || from == self.me {
            return Err(err(format!("frame from unknown process {from}")));
        }
        if payload.len() != h.payload_len as usize {
            return Err(err("payload length does not match the header".into()));
        }
        let peer = &mut self.peers[from as usize];
        peer.credit_avail = peer.credit_avail.saturating_add(h.credit as u64);
        match h.kind {
            Kind::Credit => Ok(()),
            Kind::Eager => {
                let sync = (h.flags & flags::SYNC != 0).then_some(h.sreq);
                match self.take_posted_match(h.ctx, h.src, h.tag) {
                    Some(r) => {
                        let buf = match &self.reqs.get(r.0).unwrap().op {
                            ReqOp::Recv(op) => op.buf.clone(),
                            _ => unreachable!(),
                        };
                        // SAFETY: the receive buffer is valid while the request is pending.
                        let n = unsafe { buf.write_packed(0, payload) };
                        self.owe_credit(from, h.len + HEADER_LEN as u64);
                        if let Some(sreq) = sync {
                            let mut a = Header::new(Kind::SyncAck);
                            a.sreq = sreq;
                            self.transmit(from, a, Payload::None, None);
                        }
                        self.complete_recv(r, h.src, h.tag, h.len, n as u64);
                    }
                    None => self.queue_unexpected(h.ctx, Unexpected {
                        pid: from,
                        src: h.src,
                        tag: h.tag,
                        len: h.len,
                        body: UnexBody::Eager { data: payload.to_vec(), sync_sreq: sync },
                    }),
                }
                Ok(())
            }
            Kind::Rts => {
                let addr = (h.flags & flags::SINGLE_COPY != 0).then(|| u64::from_le_bytes(payload.try_into().unwrap()));
                match self.take_posted_match(h.ctx, h.src, h.tag) {
                    Some(r) => self.start_rendezvous(r, from, h.src, h.tag, h.len, h.sreq, addr),
                    None => self.queue_unexpected(h.ctx, Unexpected {
                        pid: from,
                        src: h.src,
                        tag: h.tag,
                        len: h.len,
                        body: UnexBody::Rts { sreq: h.sreq, single_copy_addr: addr },
                    }),
                }
                Ok(())
            }
            Kind::Cts => {
                let r = ReqId(h.sreq);
                let max_frame = self.peers[from as usize].params.max_data_frame.max(1) as u64;
                let Some(Request { op: ReqOp::Send(op), done: false, .. }) = self.reqs.get_mut(r.0) else {
                    return Err(err(format!("clear-to-send for unknown send request {}", h.sreq)));
                };
                if op.peer != from || !matches!(op.stage, SendStage::AwaitCts) {
                    return Err(err(format!("unexpected clear-to-send for request {}", h.sreq)));
                }
                let total = h.len;
                if total > op.buf.len() {
                    return Err(err(format!("receiver accepts {total} bytes of a {}-byte message", op.buf.len())));
                }
                if total == 0 {
                    self.reqs.get_mut(r.0).unwrap().status = Status::default();
                    self.finish(r);
                    return Ok(());
                }
                let nframes = total.div_ceil(max_frame);
                op.stage = SendStage::Sending { pending: nframes as u32 };
                let buf = op.buf.clone();
                let mut off = 0;
                while off < total {
                    let n = (total - off).min(max_frame);
                    let mut d = Header::new(Kind::Data);
                    d.rreq = h.rreq;
                    d.len = off;
                    d.payload_len = n as u32;
                    self.transmit(from, d, Payload::User { buf: buf.clone(), offset: off, len: n }, Some(r));
                    off += n;
                }
                Ok(())
            }
            Kind::Data => {
                let r = ReqId(h.rreq);
                let Some(Request { op: ReqOp::Recv(op), done: false, .. }) = self.reqs.get_mut(r.0) else {
                    return Err(err(format!("data for unknown receive request {}", h.rreq)));
                };
                let RecvStage::Receiving { peer, expect, got } = &mut op.stage else {
                    return Err(err(format!("data for receive request {} that expects none", h.rreq)));
                };
                if *peer != from || h.len != *got || *got + payload.len() as u64 > *expect {
                    return Err(err(format!(
                        "data at offset {} (+{}) does not continue receive request {} at {} of {}",
                        h.len,
                        payload.len(),
                        h.rreq,
                        got,
                        expect
                    )));
                }
                // SAFETY: the receive buffer is valid while the request is pending,
                // and the range was checked against the accepted length.
                unsafe { op.buf.write_packed(*got, payload) };
                *got += payload.len() as u64;
                if *got == *expect {
                    self.finish(r);
                }
                Ok(())
            }
            Kind::Fin | Kind::SyncAck => {
                let r = ReqId(h.sreq);
                let Some(Request { op: ReqOp::Send(op), done: false, .. }) = self.reqs.get_mut(r.0) else {
                    return Err(err(format!("{:?} for unknown send request {}", h.kind, h.sreq)));
                };
                if op.peer != from {
                    return Err(err(format!("{:?} for a send to another process", h.kind)));
                }
                let done = match (&mut op.stage, h.kind) {
                    (SendStage::AwaitCts, Kind::Fin) => true,
                    (SendStage::Eager { transmitted, acked }, Kind::SyncAck) if op.sync && !*acked => {
                        *acked = true;
                        *transmitted
                    }
                    _ => return Err(err(format!("unexpected {:?} for send request {}", h.kind, h.sreq))),
                };
                if done {
                    self.reqs.get_mut(r.0).unwrap().status = Status::default();
                    self.finish(r);
                }
                Ok(())
            }
        }
    }

    /// Bytes of eager payload waiting unmatched, over all senders.
    pub fn unexpected_eager_bytes(&self) -> u64 {
        self.queues
            .values()
            .flat_map(|q| q.unexpected.iter())
            .filter(|u| matches!(u.body, UnexBody::Eager { .. }) && u.pid != self.me)
            .map(|u| u.len + HEADER_LEN as u64)
            .sum()
    }

    /// A transport that reads a Data frame's payload straight into user
    /// memory asks here first: the frame is checked as [`Engine::handle_frame`]
    /// would, and the receive buffer is returned; the payload belongs at
    /// packed offset `h.len` of it. Report with [`Engine::data_landed`].
    pub fn data_target(&mut self, from: Pid, h: &Header) -> Result<UserBuf, ProtocolError> {
        let err = |reason: String| ProtocolError { peer: from, reason };
        if h.kind != Kind::Data {
            return Err(err("data_target called for a non-data frame".into()));
        }
        let Some(Request { op: ReqOp::Recv(op), done: false, .. }) = self.reqs.get(h.rreq) else {
            return Err(err(format!("data for unknown receive request {}", h.rreq)));
        };
        let RecvStage::Receiving { peer, expect, got } = op.stage else {
            return Err(err(format!("data for receive request {} that expects none", h.rreq)));
        };
        if peer != from || h.len != got || got + h.payload_len as u64 > expect {
            return Err(err(format!(
                "data at offset {} (+{}) does not continue receive request {} at {} of {}",
                h.len, h.payload_len, h.rreq, got, expect
            )));
        }
        Ok(op.buf.clone())
    }

    /// The payload of a Data frame announced with [`Engine::data_target`] is
    /// in place.
    pub fn data_landed(&mut self, from: Pid, h: &Header) -> Result<(), ProtocolError> {
        self.data_target(from, h)?;
        let r = ReqId(h.rreq);
        let Some(Request { op: ReqOp::Recv(op), .. }) = self.reqs.get_mut(r.0) else { unreachable!() };
        let RecvStage::Receiving { expect, got, .. } = &mut op.stage else { unreachable!() };
        *got += h.payload_len as u64;
        if *got == *expect {
            self.finish(r);
        }
        Ok(())
    }

    /// Ask the runtime to pace (or release the pacing of) a connection.
    pub fn pace(&mut self, peer: Pid, bytes_per_sec: Option<u64>) {
        if peer != self.me {
            self.actions.push_back(Action::Pace { peer, bytes_per_sec });
        }
    }

    /// A request that completes once what was handed to the transport for
    /// `peer` has left this host (see [`Action::Drain`]).
    pub fn drain(&mut self, peer: Pid) -> ReqId {
        let req = self.external_request();
        self.actions.push_back(Action::Drain { peer, req });
        req
    }

    /// The next thing for the runtime to do.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    pub fn has_actions(&self) -> bool {
        !self.actions.is_empty()
    }
}

//! Requests: the engine's table of pending and completed operations.
//!
//! Every operation (a send, a receive, a schedule, a generalized request)
//! is a request until its owner takes its status. A request completes once;
//! a detached one (MPI_Request_free) is dropped as soon as it does.

use crate::p2p::{RecvOp, SendOp};
use crate::Engine;

/// A request in the engine's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReqId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The message was longer than the receive buffer.
    Truncate,
    /// The message ends inside a basic element of the receive datatype:
    /// the send and receive type signatures do not match.
    Signature,
    /// A process the operation needs failed (MPIX_ERR_PROC_FAILED).
    ProcFailed,
    /// The communicator was revoked (MPIX_ERR_REVOKED).
    Revoked,
}

/// The error of a receive of a `len`-byte message into `buf`, of which
/// `stored` bytes fit. A message that fits but ends inside a basic element
/// of the receive datatype (3 chars into ints) cannot have the receive's
/// type signature (MPI 4.1, 3.3.1): an error rather than a silently
/// partial element.
pub(crate) fn recv_error(buf: &gridmpi_datatype::UserBuf, len: u64, stored: u64) -> Option<ErrorKind> {
    if stored < len {
        Some(ErrorKind::Truncate)
    } else if buf.datatype().elements_in(stored).is_none() {
        Some(ErrorKind::Signature)
    } else {
        None
    }
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

pub(crate) enum ReqOp {
    Send(SendOp),
    Recv(RecvOp),
    /// Completed on creation or by its owner (MPI_PROC_NULL operations,
    /// schedules, drain waits and generalized requests use these).
    External,
}

pub(crate) struct Request {
    pub(crate) op: ReqOp,
    pub(crate) done: bool,
    /// MPI_Request_free was called: drop it as soon as it completes.
    pub(crate) detached: bool,
    pub(crate) status: Status,
}

impl Engine {
    pub(crate) fn new_req(&mut self, op: ReqOp) -> ReqId {
        ReqId(self.reqs.insert(Request { op, done: false, detached: false, status: Status::default() }))
    }

    /// Requests in the table (for leak checks at finalize).
    pub fn live_requests(&self) -> usize {
        self.reqs.len()
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

    /// The bytes a receive was posted for (None: not a receive).
    pub(crate) fn posted_len(&self, r: ReqId) -> Option<u64> {
        match self.reqs.get(r.0).map(|q| &q.op) {
            Some(ReqOp::Recv(op)) => Some(op.buf.len()),
            _ => None,
        }
    }

    pub(crate) fn is_recv(&self, r: ReqId) -> bool {
        self.reqs.get(r.0).is_some_and(|q| matches!(q.op, ReqOp::Recv(_)))
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

    pub(crate) fn finish(&mut self, r: ReqId) {
        self.completions = self.completions.wrapping_add(1);
        let req = self.reqs.get_mut(r.0).expect("finishing a live request");
        req.done = true;
        if req.detached {
            self.reqs.remove(r.0);
        }
    }

    /// Complete `r` with `status` (a request of any kind this module's
    /// callers finished).
    pub(crate) fn finish_with(&mut self, r: ReqId, status: Status) {
        self.reqs.get_mut(r.0).expect("finishing a live request").status = status;
        self.finish(r);
    }
}

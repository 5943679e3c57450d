//! Process failures and revoked communicators: the engine's side of ULFM
//! (MPIX_Comm_revoke, _shrink, _agree, _failure_ack, _get_failed; issue 14,
//! docs/architecture.md "Fault-tolerant jobs").
//!
//! The engine learns that a process failed only from the driver
//! ([`Engine::handle_proc_failed`]), which has it from gridmpirun: the
//! launcher sees its ranks die and tells every survivor, so all of them
//! learn of the same failures and none is declared failed on a guess.
//! From then on:
//! - sends to the failed process, and receives already matched to one of
//!   its messages, complete with [`ErrorKind::ProcFailed`]; its unmatched
//!   requests-to-send are dropped (their data can never come);
//! - a collective whose communicator holds it fails with the same error
//!   at every survivor, whether or not this process waits on it directly:
//!   a survivor waiting on another survivor that already gave up would
//!   otherwise wait for ever;
//! - posted receives naming it are failed by the shell, which knows which
//!   rank it is in each communicator ([`Engine::fail_posted_from`]).
//!
//! A revoked communicator ([`Engine::revoke`], or a peer's
//! [`Frame::Revoke`]) fails its posted receives and collectives with
//! [`ErrorKind::Revoked`]; messages that arrive on it later are dropped,
//! and a request-to-send is answered with a clear-to-send of 0 bytes, so
//! the sender's request completes instead of waiting for ever.
//!
//! Agreement (MPIX_Comm_agree, and MPIX_Comm_shrink's choice of who is
//! left) is in [`agree`].

pub mod agree;

use crate::p2p::matching::UnexBody;
use crate::p2p::{RecvOp, RecvStage, SendOp};
use crate::request::{ErrorKind, ReqId, ReqOp, Request, Status};
use crate::Engine;
use gridmpi_wire::{Frame, Header, Payload, Pid};
use std::collections::HashSet;

#[derive(Default)]
pub(crate) struct Ft {
    /// By pid: the process failed (grows as needed).
    failed: Vec<bool>,
    /// The failed pids in the order we learned of them.
    order: Vec<Pid>,
    /// Contexts of revoked communicators (point-to-point and collective).
    revoked: HashSet<u32>,
    /// Point-to-point contexts revoked by a peer's frame, for the shell.
    revoked_news: Vec<u32>,
    pub(crate) agreements: agree::Agreements,
}

impl Ft {
    pub(crate) fn is_failed(&self, pid: Pid) -> bool {
        self.failed.get(pid as usize).copied().unwrap_or(false)
    }

    pub(crate) fn is_revoked(&self, ctx: u32) -> bool {
        !self.revoked.is_empty() && self.revoked.contains(&ctx)
    }
}

fn failed_status(kind: ErrorKind) -> Status {
    Status { source: -1, tag: -1, count: 0, cancelled: false, error: Some(kind) }
}

impl Engine {
    /// Whether a failure or a revocation ever happened here (the shell's
    /// fault-tolerance checks cost nothing until then).
    pub fn ft_active(&self) -> bool {
        !self.ft.order.is_empty() || !self.ft.revoked.is_empty()
    }

    pub fn is_failed(&self, pid: Pid) -> bool {
        self.ft.is_failed(pid)
    }

    /// The failed pids, in the order this process learned of them.
    pub fn failed_pids(&self) -> &[Pid] {
        &self.ft.order
    }

    /// Process `pid` failed (gridmpirun said so). Idempotent. The shell
    /// then fails the posted receives that name it (`fail_posted_from`),
    /// and the driver stops talking to it.
    pub fn handle_proc_failed(&mut self, pid: Pid) {
        if pid == self.me || self.ft.is_failed(pid) {
            return;
        }
        // Collectives that are done but not yet seen so (a host-area
        // operation the dead process released) finish normally first.
        self.progress_schedules();
        let i = pid as usize;
        if self.ft.failed.len() <= i {
            self.ft.failed.resize(i + 1, false);
        }
        self.ft.failed[i] = true;
        self.ft.order.push(pid);
        // Sends to it, and receives matched to its messages.
        let doomed: Vec<ReqId> = self
            .reqs
            .iter()
            .filter(|(_, q)| !q.done)
            .filter(|(_, q)| match &q.op {
                ReqOp::Send(SendOp { peer, .. }) => *peer == pid,
                ReqOp::Recv(RecvOp { stage: RecvStage::Receiving { peer, .. } | RecvStage::RemoteRead { peer, .. }, .. }) => *peer == pid,
                _ => false,
            })
            .map(|(i, _)| ReqId(i))
            .collect();
        for r in doomed {
            self.finish_with(r, failed_status(ErrorKind::ProcFailed));
        }
        // Its requests-to-send nobody matched yet: the data cannot come.
        let mut dropped = 0;
        for q in self.queues.values_mut() {
            let before = q.unexpected.len();
            q.unexpected.retain(|u| !(u.pid == pid && matches!(u.body, UnexBody::Rts { .. })));
            dropped += before - q.unexpected.len();
        }
        self.unexpected_len -= dropped as u64;
        self.abort_schedules(|v| v.contains(&pid), ErrorKind::ProcFailed, &format!("process {pid} of the communicator failed"));
        self.agreements_after_failure();
    }

    /// Fail the receives posted on `ctx` for source `src` (a failed
    /// process's rank there).
    pub fn fail_posted_from(&mut self, ctx: u32, src: i32) {
        self.fail_posted(ctx, |op| op.src == Some(src), ErrorKind::ProcFailed);
    }

    fn fail_posted(&mut self, ctx: u32, pick: impl Fn(&RecvOp) -> bool, kind: ErrorKind) {
        let Some(q) = self.queues.get_mut(&ctx) else { return };
        let reqs = &self.reqs;
        let mut doomed = Vec::new();
        q.posted.retain(|r| {
            let hit = matches!(reqs.get(r.0), Some(Request { op: ReqOp::Recv(op), .. }) if pick(op));
            if hit {
                doomed.push(*r);
            }
            !hit
        });
        for r in doomed {
            self.finish_with(r, failed_status(kind));
        }
    }

    /// If `r` is a receive from MPI_ANY_SOURCE still waiting for a match:
    /// its context (a failure in its communicator interrupts it, MPI 4.1
    /// ULFM's MPIX_ERR_PROC_FAILED_PENDING; the shell decides).
    pub fn posted_any_source(&self, r: ReqId) -> Option<u32> {
        match self.reqs.get(r.0) {
            Some(Request { op: ReqOp::Recv(RecvOp { ctx, src: None, stage: RecvStage::Posted, .. }), done: false, .. }) => Some(*ctx),
            _ => None,
        }
    }

    /// Give up a receive still waiting for a match (a blocking receive from
    /// MPI_ANY_SOURCE interrupted by a failure): it completes with
    /// [`ErrorKind::ProcFailed`]. False if it already matched.
    pub fn interrupt_recv(&mut self, r: ReqId) -> bool {
        if self.posted_any_source(r).is_none() || !self.unpost(r) {
            return false;
        }
        self.finish_with(r, failed_status(ErrorKind::ProcFailed));
        true
    }

    pub fn is_revoked(&self, ctx: u32) -> bool {
        self.ft.is_revoked(ctx)
    }

    /// MPIX_Comm_revoke: revoke the communicator whose contexts are `ctxs`
    /// (its point-to-point context first) here, and tell `members` (every
    /// other process of it; failed ones are skipped).
    pub fn revoke(&mut self, ctxs: &[u32], members: &[Pid]) {
        let Some(&p2p) = ctxs.first() else { return };
        for &pid in members {
            if pid != self.me && !self.ft.is_failed(pid) {
                self.transmit(pid, Header::new(Frame::Revoke { ctx: p2p }, 0), Payload::None, None);
            }
        }
        self.revoke_here(ctxs);
    }

    /// Revoke `ctxs` in this process (no frames), e.g. a communicator's
    /// other contexts once a peer's frame revoked its point-to-point one.
    pub fn revoke_here(&mut self, ctxs: &[u32]) {
        for &ctx in ctxs {
            if !self.ft.revoked.insert(ctx) {
                continue;
            }
            self.fail_posted(ctx, |_| true, ErrorKind::Revoked);
            // What already arrived unmatched: release its sender.
            if let Some(q) = self.queues.get_mut(&ctx) {
                let gone: Vec<_> = q.unexpected.drain(..).collect();
                self.unexpected_len -= gone.len() as u64;
                for u in gone {
                    self.release_revoked(u.pid, u.len, u.body);
                }
            }
        }
        let set: HashSet<u32> = ctxs.iter().copied().collect();
        self.abort_schedules_by_ctx(&set);
    }

    /// A message of a revoked communicator is dropped: return its eager
    /// credit, answer a synchronous one, and clear a request-to-send for 0
    /// bytes (its sender completes).
    pub(crate) fn release_revoked(&mut self, pid: Pid, len: u64, body: UnexBody) {
        if pid == self.me || self.ft.is_failed(pid) {
            return;
        }
        match body {
            UnexBody::Eager { sync_sreq, .. } => {
                self.owe_credit(pid, len + gridmpi_wire::HEADER_LEN as u64);
                if let Some(sreq) = sync_sreq {
                    self.transmit(pid, Header::new(Frame::SyncAck { sreq }, 0), Payload::None, None);
                }
            }
            UnexBody::Rts { sreq, .. } => {
                self.transmit(pid, Header::new(Frame::Cts { sreq, rreq: 0, accepted: 0 }, 0), Payload::None, None);
            }
            UnexBody::SelfSend { .. } => {}
        }
    }

    /// A peer revoked the communicator of `ctx` (its point-to-point
    /// context): revoke both its contexts here, and tell the shell.
    pub(crate) fn revoke_arrived(&mut self, ctx: u32) {
        if self.ft.is_revoked(ctx) {
            return;
        }
        self.revoke_here(&[ctx, ctx.wrapping_add(1)]);
        self.ft.revoked_news.push(ctx);
    }

    /// Point-to-point contexts a peer revoked since the last call (the
    /// shell revokes the communicator's other contexts, e.g. an
    /// intercommunicator's local one).
    pub fn take_revoked_news(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.ft.revoked_news)
    }

    /// A send to a failed process fails at once.
    pub(crate) fn send_to_failed(&mut self, dest: Pid) -> Option<ReqId> {
        self.ft.is_failed(dest).then(|| self.completed_request(failed_status(ErrorKind::ProcFailed)))
    }
}

//! One-sided communication (MPI 4.1 chapter 12): windows, the operations
//! on them, and their synchronization.
//!
//! A window is registered under the context id its members agreed on (the
//! shell agrees it as for a communicator): frames name the window by it,
//! and the next context (`ctx + 1`) carries the barriers of fence and free.
//!
//! # Operations
//! An operation travels as [`Frame::RmaOp`] frames, each one piece of the
//! target's packed data (at most a frame's worth, cut at element
//! boundaries), with the target datatype encoded in it. The target applies
//! a frame the moment it arrives, one at a time ([`target`]): that is the
//! standard's atomicity (an accumulate is never torn by another) and its
//! default ordering of accumulates between a pair of processes (frames of a
//! connection keep their order). Data for the origin (get, get-accumulate,
//! fetch-and-op, compare-and-swap) goes back in Data frames to a receive
//! request the origin posted for it, so it lands straight in the result
//! buffer. Puts and accumulates copy the origin's data into their frames:
//! they are complete at the origin when issued.
//!
//! Operations to the calling process itself are applied in the call; on a
//! window every member maps (`MPI_Win_allocate_shared`, and
//! `MPI_Win_allocate` with every member on the host) the origin does every
//! operation, locks included, in the mapping itself ([`shared`]).
//!
//! # Completion and synchronization
//! A target answers nothing per operation. Remote completion is a round
//! trip: [`RmaSync::Flush`] (or `Unlock`) follows the operations on the
//! connection and is answered once they are applied, which they are on
//! arrival; the answer also counts operations that failed (addresses
//! outside a dynamic window's regions, which only the target can check).
//! Gets are complete when their data has landed. On top of this
//! ([`epoch`]): fence is flush-all then a barrier; post sends `Post` to the
//! origins, start lets operations to a target leave once its `Post` came,
//! complete flushes and sends `Complete`, wait waits for every `Complete`;
//! lock asks the target's lock manager ([`lock`]) and operations leave once
//! it grants, unlock flushes and releases. Calls that must wait return a
//! request that completes when they are done ([`Engine::progress_rma`]
//! advances them).
//!
//! # Progress
//! A target applies operations and grants locks whenever its engine runs:
//! in any MPI call, in a blocked wait, or in the library's progress thread.
//! A target that computes outside MPI without the progress thread delays
//! passive-target epochs aimed at it until it next calls MPI.
//!
//! [`Frame::RmaOp`]: gridmpi_wire::Frame::RmaOp
//! [`RmaSync::Flush`]: gridmpi_wire::RmaSync::Flush

pub(crate) mod epoch;
pub mod fast;
pub(crate) mod lock;
pub(crate) mod origin;
pub mod shared;
pub(crate) mod target;
pub(crate) mod window;

#[cfg(test)]
mod tests;

use crate::engine::ProtocolError;
use crate::request::ReqId;
use crate::Engine;
use gridmpi_datatype::{Datatype, UserBuf};
use gridmpi_wire::{Frame, Header, Pid};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::fmt;
use std::sync::Arc;

pub use gridmpi_reduce::Op;
pub use fast::FastWin;
pub use lock::LockKind;
pub use shared::{LocalCtl, SharedCtl};
pub use window::{Flavor, MemberInfo, Region, WinConfig};

/// A window, named by its context id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WinId(pub u32);

/// What kind of misuse an RMA call was refused for (the shell maps these
/// to MPI error classes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmaErrorKind {
    /// MPI_ERR_RMA_SYNC: the call does not fit the window's epochs.
    Sync,
    /// MPI_ERR_RMA_RANGE: the data lies outside the target's window.
    Range,
    /// MPI_ERR_RANK
    Rank,
    /// MPI_ERR_TYPE: origin and target data differ.
    Type,
    /// MPI_ERR_OP
    Op,
    /// MPI_ERR_RMA_ATTACH: attach/detach misuse.
    Attach,
    /// MPI_ERR_RMA_FLAVOR: not possible with this window's flavor.
    Flavor,
    /// MPI_ERR_WIN: the window does not exist.
    Win,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RmaError {
    pub kind: RmaErrorKind,
    pub msg: String,
}

impl RmaError {
    pub(crate) fn new(kind: RmaErrorKind, msg: impl Into<String>) -> RmaError {
        RmaError { kind, msg: msg.into() }
    }
}

impl fmt::Display for RmaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

/// Where an operation acts at the target: `count` items of `dt` at
/// displacement `disp` (in the target's displacement units; an address for
/// a dynamic window) of the window of rank `rank`.
#[derive(Clone, Debug)]
pub struct TargetSpec {
    pub rank: i32,
    pub disp: u64,
    pub count: u64,
    pub dt: Arc<Datatype>,
}

/// The engine's one-sided state: windows, and the requests of calls that
/// wait (see [`epoch`]).
#[derive(Default)]
pub(crate) struct Rma {
    pub(crate) windows: HashMap<u32, window::Window, BuildHasherDefault<CtxHasher>>,
    /// Pending synchronization calls.
    pub(crate) syncs: Vec<epoch::SyncCall>,
    /// Request-based operations: the user's request completes when the
    /// internal receive of the operation's data does.
    pub(crate) linked: Vec<(ReqId, ReqId)>,
    /// Errors of completed synchronization requests, until taken.
    pub(crate) errors: HashMap<ReqId, RmaError>,
    /// Target datatypes already decoded, by their encoding.
    pub(crate) types: HashMap<Vec<u8>, Arc<Datatype>>,
    /// Receives of data coming back, over every window's targets (lets
    /// progress skip the scan when there are none).
    pub(crate) gets_out: usize,
}

/// Windows are looked up by context id on every RMA call: the same cheap
/// hasher as the match queues (ids the members agreed, not peer input).
pub(crate) use crate::p2p::matching::CtxHasher;

/// Decoded target datatypes kept for reuse (the cache is emptied when full).
const TYPE_CACHE: usize = 1024;

impl Engine {
    /// Handle an RMA frame from `from` (see [`Engine::handle_frame`]).
    pub(crate) fn rma_frame(&mut self, from: Pid, h: &Header, payload: &[u8]) -> Result<(), ProtocolError> {
        match h.frame {
            Frame::RmaOp { win, offset, reply } => self.rma_op_arrived(from, win, offset, reply, payload),
            Frame::RmaSync { win, sync, arg, req } => self.rma_sync_arrived(from, win, sync, arg, req),
            _ => unreachable!("not an RMA frame"),
        }
    }

    /// The decoded target datatype of an operation frame.
    pub(crate) fn rma_type(&mut self, from: Pid, bytes: &[u8]) -> Result<Arc<Datatype>, ProtocolError> {
        if let Some(t) = self.rma.types.get(bytes) {
            return Ok(t.clone());
        }
        let t = self.rma_type_once(from, bytes)?;
        if self.rma.types.len() >= TYPE_CACHE {
            self.rma.types.clear();
        }
        self.rma.types.insert(bytes.to_vec(), t.clone());
        Ok(t)
    }

    /// A datatype from the bytes of an operation, not kept.
    pub(crate) fn rma_type_once(&self, from: Pid, bytes: &[u8]) -> Result<Arc<Datatype>, ProtocolError> {
        gridmpi_datatype::decode_typemap(bytes).map_err(|e| ProtocolError { peer: from, reason: e.to_string() })
    }

    /// The error of a completed RMA request, if it failed (taken).
    pub fn rma_take_error(&mut self, r: ReqId) -> Option<RmaError> {
        self.rma.errors.remove(&r)
    }

    /// Whether any window exists (for drivers that skip RMA work otherwise).
    pub fn rma_windows(&self) -> usize {
        self.rma.windows.len()
    }
}

/// A buffer of `count` items of `dt` at `addr`.
pub(crate) fn buf_at(addr: u64, count: u64, dt: &Arc<Datatype>) -> UserBuf {
    // SAFETY: callers checked that the window memory described lies within
    // the window (or attached region), which the window's owner keeps valid
    // until the window is freed.
    unsafe { UserBuf::new(addr as usize as *mut u8, count, dt.clone()) }
}

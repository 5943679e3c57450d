//! Fault tolerance, ULFM as MPICH provides it: MPIX_Comm_revoke,
//! MPIX_Comm_shrink, MPIX_Comm_agree, MPIX_Comm_failure_ack,
//! MPIX_Comm_failure_get_acked, MPIX_Comm_get_failed; and the checks that
//! make operations on a communicator with a failed process, or a revoked
//! one, fail with MPIX_ERR_PROC_FAILED or MPIX_ERR_REVOKED.
//!
//! Failures are learned from gridmpirun (crates/mpi/src/ft.rs); the
//! engine fails the operations that need a failed process
//! (crates/engine/src/ft). These functions are written here, not
//! generated from abi/functions.txt: MPI extensions are outside the
//! standard's table, from which the Fortran and MPI-5 ABI bindings are
//! made too. Intercommunicators may be revoked; agreement and shrinking
//! are for intracommunicators.

use super::*;
use crate::errors::MpiError;
use crate::objects::*;
use crate::state::{self, api, Target};
use gridmpi_engine::{AgreeView, ErrorKind, Pid, ReqId};

pub fn error(kind: ErrorKind) -> MpiError {
    error_with(kind, String::new())
}

pub fn error_with(kind: ErrorKind, msg: String) -> MpiError {
    let (class, what) = match kind {
        ErrorKind::ProcFailed => (MPIX_ERR_PROC_FAILED, "a process the operation needs failed"),
        ErrorKind::Revoked => (MPIX_ERR_REVOKED, "the communicator was revoked"),
        ErrorKind::Truncate => (MPI_ERR_TRUNCATE, "the message was truncated"),
        ErrorKind::Signature => (MPI_ERR_TYPE, "the message ends inside an element of the receive datatype (the type signatures do not match)"),
    };
    err(class, if msg.is_empty() { what.to_string() } else { msg })
}

/// The agreements' sequence numbers live beside the context: MPI_Finalize's
/// agreement (lifecycle.rs) uses the last one, which no communicator reaches.
pub const FINALIZE_SEQ: u32 = u32::MAX;

impl State {
    /// Every communicator, the predefined ones first.
    pub(crate) fn all_comms(&self) -> impl Iterator<Item = &Comm> {
        [&self.world, &self.selfc].into_iter().chain(self.comms.values())
    }

    /// The communicator whose point-to-point context is `ctx`.
    pub(crate) fn comm_by_ctx(&self, ctx: u32) -> Option<&Comm> {
        self.all_comms().find(|c| c.ctx == ctx)
    }

    /// The pids a communicator's operations address (the remote group of
    /// an intercommunicator), and its own group.
    fn comm_pids(c: &Comm) -> impl Iterator<Item = Pid> + '_ {
        c.group.pids.iter().chain(c.remote.iter().flat_map(|r| r.pids.iter())).copied()
    }

    /// Operations on `ctx`'s communicator may start: it is not revoked, and
    /// `peer` (if any) has not failed.
    pub fn ft_check_peer(&self, ctx: u32, peer: Option<Pid>) -> R<()> {
        if self.rt.engine.is_revoked(ctx) {
            return Err(err(MPIX_ERR_REVOKED, format!("rank {}: the communicator was revoked", self.rt.me)));
        }
        if let Some(p) = peer.filter(|&p| self.rt.engine.is_failed(p)) {
            return Err(err(MPIX_ERR_PROC_FAILED, format!("rank {}: the peer (process {p}) failed", self.rt.me)));
        }
        Ok(())
    }

    /// A collective on `c` may start: not revoked, and no member failed
    /// (shrink it first).
    pub fn ft_check_comm(&self, c: &Comm) -> R<()> {
        self.ft_check_peer(c.ctx, None)?;
        if let Some(p) = State::comm_pids(c).find(|&p| self.rt.engine.is_failed(p)) {
            return Err(err(
                MPIX_ERR_PROC_FAILED,
                format!("rank {}: process {p} of the communicator failed (MPIX_Comm_shrink makes one without it)", self.rt.me),
            ));
        }
        Ok(())
    }

    /// A failure in the communicator of `ctx` that it has not acknowledged.
    fn unacked_failure(&self, ctx: u32) -> bool {
        let failed = self.rt.engine.failed_pids();
        let acked = self.ft_acked.get(&ctx).copied().unwrap_or(0);
        if acked >= failed.len() {
            return false;
        }
        let Some(c) = self.comm_by_ctx(ctx) else { return false };
        failed[acked..].iter().any(|&p| State::comm_pids(c).any(|q| q == p))
    }

    /// `r` is a receive from MPI_ANY_SOURCE that a failure in its
    /// communicator interrupts (until the failure is acknowledged).
    pub fn any_source_interrupted(&self, r: ReqId) -> bool {
        self.rt.engine.posted_any_source(r).is_some_and(|ctx| self.unacked_failure(ctx))
    }
}

/// Wait for a blocking receive or send: a receive from MPI_ANY_SOURCE that
/// a failure interrupts is given up (MPIX_ERR_PROC_FAILED).
pub fn wait_interruptible(r: ReqId) -> R<gridmpi_engine::Status> {
    super::env::wait_engine_looking(r, |st| {
        if st.rt.engine.ft_active() && st.any_source_interrupted(r) {
            st.rt.engine.interrupt_recv(r);
        }
    })
}

fn intra(st: &State, comm: MPI_Comm, what: &str) -> R<(u32, AgreeView)> {
    let c = st.comm(comm)?;
    if c.is_inter() {
        return Err(err(MPI_ERR_COMM, format!("{what} on an intercommunicator is not supported by GridMPI")));
    }
    Ok((c.ctx, AgreeView { ctx: c.ctx, pids: c.group.pids.clone().into(), rank: c.rank }))
}

/// Run the next agreement on `comm` (every member runs them in the same order).
fn agree(comm: MPI_Comm, what: &str, flag: u32, max: u64) -> R<gridmpi_engine::AgreeValue> {
    let r = state::with(|st| {
        let (ctx, view) = intra(st, comm, what)?;
        let seq = st.ft_agreements.entry(ctx).or_insert(0);
        let s = *seq;
        *seq += 1;
        Ok(st.rt.engine.start_agreement(view, s, flag, max))
    })?;
    super::env::wait_engine(r)?;
    state::with(|st| st.rt.engine.take_agreement(r).ok_or_else(|| err(MPI_ERR_INTERN, "an agreement finished without a decision")))
}

/// The group of `comm`'s members (of its remote group for an
/// intercommunicator) among the first `upto` failed pids.
fn failed_group(st: &mut State, comm: MPI_Comm, upto: Option<usize>) -> R<MPI_Group> {
    let c = st.comm(comm)?;
    let failed = st.rt.engine.failed_pids();
    let failed = &failed[..upto.unwrap_or(failed.len()).min(failed.len())];
    let peers = c.remote.as_ref().unwrap_or(&c.group);
    let pids: Vec<Pid> = failed.iter().copied().filter(|p| peers.pids.contains(p)).collect();
    let g = peers.derived(pids);
    Ok(st.new_group(g))
}

#[no_mangle]
pub unsafe extern "C" fn MPIX_Comm_revoke(comm: MPI_Comm) -> c_int {
    PMPIX_Comm_revoke(comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_revoke(comm: MPI_Comm) -> c_int {
    api("MPIX_Comm_revoke", Target::Comm(comm), || {
        state::with(|st| {
            let c = st.comm(comm)?;
            let mut ctxs = vec![c.ctx, c.ctx + 1];
            if let (Some(l), Some(_)) = (c.local_ctx, c.remote.as_ref()) {
                ctxs.extend([l, l + 1]);
            }
            let members: Vec<Pid> = State::comm_pids(c).collect();
            st.rt.engine.revoke(&ctxs, &members);
            st.progress()?;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPIX_Comm_agree(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    PMPIX_Comm_agree(comm, flag)
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_agree(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    api("MPIX_Comm_agree", Target::Comm(comm), || {
        check_ptr(flag, "flag")?;
        let v = agree(comm, "MPIX_Comm_agree", *flag as u32, 0)?;
        *flag = v.flag as c_int;
        // A failure the caller has not acknowledged is reported (the flag
        // is the agreed one all the same).
        state::with(|st| {
            let c = st.comm(comm)?;
            let acked = st.ft_acked.get(&c.ctx).copied().unwrap_or(0);
            let known = &st.rt.engine.failed_pids()[..acked.min(st.rt.engine.failed_pids().len())];
            let unacked = v.failed_ranks().into_iter().any(|r| !known.contains(&c.group.pids[r as usize]));
            if unacked {
                return Err(err(MPIX_ERR_PROC_FAILED, format!("rank {}: a process of the communicator failed and was not acknowledged (MPIX_Comm_failure_ack)", st.rt.me)));
            }
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPIX_Comm_shrink(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    PMPIX_Comm_shrink(comm, newcomm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_shrink(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    api("MPIX_Comm_shrink", Target::Comm(comm), || {
        check_ptr(newcomm, "newcomm")?;
        let proposal = state::with(|st| Ok(st.next_ctx))?;
        // Who failed and the new context, agreed by every survivor.
        let v = agree(comm, "MPIX_Comm_shrink", u32::MAX, proposal as u64)?;
        let ctx = u32::try_from(v.max).map_err(|_| err(MPI_ERR_INTERN, "the agreed context id does not fit"))?;
        let dead = v.failed_ranks();
        *newcomm = state::with(|st| {
            st.ctx_used(ctx);
            let c = st.comm(comm)?;
            let pids: Vec<Pid> = c.group.pids.iter().enumerate().filter(|(r, _)| !dead.contains(&(*r as i32))).map(|(_, &p)| p).collect();
            let Some(rank) = pids.iter().position(|&p| p == st.rt.me) else {
                return Err(err(MPI_ERR_INTERN, "the survivors' agreement left this process out"));
            };
            let g = Arc::new(c.group.derived(pids));
            let mut n = Comm::new(ctx, g, rank as i32, MPI_ERRORS_ARE_FATAL);
            n.name = String::new();
            st.add_comm(comm, n, false)
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPIX_Comm_failure_ack(comm: MPI_Comm) -> c_int {
    PMPIX_Comm_failure_ack(comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_failure_ack(comm: MPI_Comm) -> c_int {
    api("MPIX_Comm_failure_ack", Target::Comm(comm), || {
        state::with(|st| {
            let ctx = st.comm(comm)?.ctx;
            let n = st.rt.engine.failed_pids().len();
            st.ft_acked.insert(ctx, n);
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPIX_Comm_failure_get_acked(comm: MPI_Comm, failedgrp: *mut MPI_Group) -> c_int {
    PMPIX_Comm_failure_get_acked(comm, failedgrp)
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_failure_get_acked(comm: MPI_Comm, failedgrp: *mut MPI_Group) -> c_int {
    api("MPIX_Comm_failure_get_acked", Target::Comm(comm), || {
        check_ptr(failedgrp, "failedgrp")?;
        *failedgrp = state::with(|st| {
            let ctx = st.comm(comm)?.ctx;
            let acked = st.ft_acked.get(&ctx).copied().unwrap_or(0);
            failed_group(st, comm, Some(acked))
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPIX_Comm_get_failed(comm: MPI_Comm, failedgrp: *mut MPI_Group) -> c_int {
    PMPIX_Comm_get_failed(comm, failedgrp)
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_get_failed(comm: MPI_Comm, failedgrp: *mut MPI_Group) -> c_int {
    api("MPIX_Comm_get_failed", Target::Comm(comm), || {
        check_ptr(failedgrp, "failedgrp")?;
        *failedgrp = state::with(|st| failed_group(st, comm, None))?;
        Ok(())
    })
}

// Two more of the ULFM interface as Open MPI and MPI 4.2's draft have it.

#[no_mangle]
pub unsafe extern "C" fn MPIX_Comm_is_revoked(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    PMPIX_Comm_is_revoked(comm, flag)
}

#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_is_revoked(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    api("MPIX_Comm_is_revoked", Target::Comm(comm), || {
        check_ptr(flag, "flag")?;
        *flag = state::with(|st| {
            let ctx = st.comm(comm)?.ctx;
            Ok(st.rt.engine.is_revoked(ctx) as c_int)
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPIX_Comm_ack_failed(comm: MPI_Comm, num_to_ack: c_int, num_acked: *mut c_int) -> c_int {
    PMPIX_Comm_ack_failed(comm, num_to_ack, num_acked)
}

/// Acknowledge the first `num_to_ack` failures of the communicator's
/// processes (in the order they were learned); `num_acked` is how many of
/// them are acknowledged now.
#[no_mangle]
pub unsafe extern "C" fn PMPIX_Comm_ack_failed(comm: MPI_Comm, num_to_ack: c_int, num_acked: *mut c_int) -> c_int {
    api("MPIX_Comm_ack_failed", Target::Comm(comm), || {
        check_ptr(num_acked, "num_acked")?;
        if num_to_ack < 0 {
            return Err(err(MPI_ERR_ARG, format!("num_to_ack is negative ({num_to_ack})")));
        }
        *num_acked = state::with(|st| {
            let c = st.comm(comm)?;
            let ctx = c.ctx;
            let mine: Vec<usize> =
                st.rt.engine.failed_pids().iter().enumerate().filter(|(_, &p)| State::comm_pids(c).any(|q| q == p)).map(|(i, _)| i).collect();
            let acked = st.ft_acked.get(&ctx).copied().unwrap_or(0);
            let already = mine.iter().filter(|&&i| i < acked).count();
            let want = (num_to_ack as usize).min(mine.len());
            if want > already {
                // Acknowledged up to (and with) the want-th failure of ours.
                st.ft_acked.insert(ctx, mine[want - 1] + 1);
            }
            let acked = st.ft_acked.get(&ctx).copied().unwrap_or(0);
            Ok(mine.iter().filter(|&&i| i < acked).count() as c_int)
        })?;
        Ok(())
    })
}

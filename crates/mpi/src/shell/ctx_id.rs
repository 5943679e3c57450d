//! Agreeing on a new communicator's context id, blocking (MPI_Comm_dup,
//! split, create, MPI_Comm_create_group, windows, files) and nonblocking
//! (MPI_Comm_idup).
//!
//! Round one: every member proposes the next id it has never used and
//! reserves it, so its own later proposals are past it; the largest
//! proposal wins. That alone is enough while a process runs one agreement
//! at a time: an id is free at a member if the member proposed it or
//! anything below it.
//!
//! It is not enough when two agreements overlap at a process: two
//! MPI_Comm_idup on different communicators started in one order at one
//! member and in the other at another (MPI 4.1 allows it), or two threads
//! under MPI_THREAD_MULTIPLE. A member's proposal for the first is below
//! its proposal for the second, and the largest proposals of the two can
//! be the same id, each coming from a different member. So these
//! agreements take a second round: every member checks that the winner is
//! in use by none of its communicators and claimed by no other agreement
//! in flight here, claims it if so, and all learn whether any member
//! objected; if one did, all propose again. Of two agreements that would
//! take the same id, the one checked second at a common member sees the
//! first's claim (or its communicator) and objects, so both never take it.
//! Nobody waits for another agreement to finish, so an agreement never
//! depends on a collective the program has not started yet.

use super::*;
use crate::objects::*;
use crate::state::{self, State};
use gridmpi_engine::coll::agree;
use gridmpi_engine::sched::CommView;
use gridmpi_engine::ReqId;

/// Which agreement a claim belongs to; `TAKEN` for ids taken by one that
/// ended while others were in flight.
type AgreementId = u64;
const TAKEN: AgreementId = 0;

/// The context-id agreements in flight in this process, and the ids they
/// claimed.
#[derive(Default)]
pub struct CtxAgreements {
    last_id: AgreementId,
    inflight: Vec<AgreementId>,
    /// (agreement, first id, count).
    claims: Vec<(AgreementId, u32, u32)>,
}

impl CtxAgreements {
    fn begin(&mut self) -> AgreementId {
        self.last_id += 1;
        self.inflight.push(self.last_id);
        self.last_id
    }

    /// Whether agreement `me` may take `width` ids from `ctx` here: no
    /// other agreement claimed or took any of them (the caller checks the
    /// communicators). Claims them if so.
    fn claim(&mut self, me: AgreementId, ctx: u32, width: u32) -> bool {
        let free = self.claims.iter().all(|&(by, s, n)| by == me || s + n <= ctx || ctx + width <= s);
        if free {
            self.claims.push((me, ctx, width));
        }
        free
    }

    /// Agreement `me` proposes again: its claim is void.
    fn retry(&mut self, me: AgreementId) {
        self.claims.retain(|c| c.0 != me);
    }

    /// Agreement `me` ended, having taken `taken` (first id, count) or not.
    fn end(&mut self, me: AgreementId, taken: Option<(u32, u32)>) {
        self.inflight.retain(|&a| a != me);
        self.claims.retain(|c| c.0 != me);
        if self.inflight.is_empty() {
            // Every later proposal is past what was taken (next_ctx), and
            // its communicator is registered by then.
            self.claims.clear();
        } else if let Some((s, n)) = taken {
            // A blocking agreement registers its communicator only after
            // it returns; until then the ids are kept here.
            self.claims.push((TAKEN, s, n));
        }
    }
}

impl State {
    /// Round one's proposal: the next id never used here, reserved.
    fn propose_ctx(&mut self, width: u32) -> u32 {
        let p = self.next_ctx;
        self.next_ctx += width;
        p
    }

    /// Round two's check at this member: whether `width` ids from `ctx`
    /// are free here for agreement `me` (claimed if so).
    fn ctx_free_here(&mut self, me: AgreementId, ctx: u32, width: u32) -> bool {
        let in_use = self.comms.values().any(|c| ctx_in_use(c, ctx, width));
        !in_use && self.ctx_agreements.claim(me, ctx, width)
    }

    fn end_ctx_agreement(&mut self, me: AgreementId, taken: Option<u32>, width: u32) {
        self.ctx_agreements.end(me, taken.map(|c| (c, width)));
        if let Some(c) = taken {
            self.next_ctx = self.next_ctx.max(c + width);
        }
    }
}

/// Whether communicator `c` uses any of the `width` context ids from `ctx`.
fn ctx_in_use(c: &Comm, ctx: u32, width: u32) -> bool {
    let hit = |x: u32| x != u32::MAX && x.saturating_add(1) >= ctx && x < ctx + width;
    hit(c.ctx) || c.local_ctx.is_some_and(hit)
}

/// Whether this process may run agreements at the same time from several
/// threads: the world model's level, or a session's.
fn threaded(st: &State) -> bool {
    st.thread_level == MPI_THREAD_MULTIPLE || st.sessions.values().any(|s| s.thread_level == MPI_THREAD_MULTIPLE)
}

/// A blocking agreement on `pairs` consecutive context pairs over some set
/// of members; `max_round` runs one allreduce-max of u32s over them (each
/// call a round every member makes in the same sequence).
pub fn agree_blocking(pairs: u32, mut max_round: impl FnMut(&mut [u32]) -> R<()>) -> R<u32> {
    let width = 2 * pairs;
    let me = state::with(|st| Ok(st.ctx_agreements.begin()))?;
    let outcome = (|| loop {
        // [proposal, whether this process runs threads]
        let mut v = state::with(|st| Ok([st.propose_ctx(width), threaded(st) as u32]))?;
        max_round(&mut v)?;
        let ctx = v[0];
        if v[1] == 0 {
            // No member runs threads, so none runs another agreement
            // while in this one: see the module's comment.
            return Ok(ctx);
        }
        let mut objection = state::with(|st| Ok([!st.ctx_free_here(me, ctx, width) as u32]))?;
        max_round(&mut objection)?;
        if objection[0] == 0 {
            return Ok(ctx);
        }
        state::with(|st| Ok(st.ctx_agreements.retry(me)))?;
    })();
    state::with(|st| Ok(st.end_ctx_agreement(me, outcome.as_ref().ok().copied(), width)))?;
    outcome
}

/// Agree on a new context id (and reserve `pairs` consecutive pairs) over
/// the members of `comm` (both groups of an intercommunicator), on its
/// sequenced collective tags.
pub fn agree_ctx(comm: MPI_Comm, pairs: u32) -> R<u32> {
    agree_blocking(pairs, |v| {
        let s = state::with(|st| {
            let c = st.comm_mut(comm)?;
            let tag = c.next_coll_tag();
            let (view, local) = super::coll::coll_views(c);
            Ok(agree::max_u32(view, local, tag, u32_buf(v)))
        })?;
        super::comm::run(s)
    })
}

fn u32_buf(v: &mut [u32]) -> UserBuf {
    // SAFETY: the slice outlives the collective using it (blocking), or
    // is boxed in its PendingIdup (nonblocking).
    unsafe { UserBuf::new(v.as_mut_ptr() as *mut u8, (v.len() * 4) as u64, gridmpi_engine::sched::byte_type()) }
}

/// An MPI_Comm_idup agreeing on its communicator's context id.
pub struct PendingIdup {
    agreement: AgreementId,
    /// The running round.
    sched: ReqId,
    step: IdupStep,
    /// What the user waits on.
    user: ReqId,
    /// The new communicator (its context is u32::MAX until agreed).
    comm: MPI_Comm,
    /// The parent's views, kept: the parent may be freed meanwhile.
    views: (CommView, Option<CommView>),
    /// Every round uses the tag of the call: rounds run one after the
    /// other at each member, and messages between two members keep order.
    tag: i32,
    width: u32,
    /// The round's value (proposal or objection), written by the round.
    buf: Box<[u32; 1]>,
}

enum IdupStep {
    Propose,
    Check { ctx: u32 },
}

/// Start agreeing on the context of `newcomm`, made by MPI_Comm_idup of
/// `parent` (`pairs`: 2 for an intercommunicator); completes `user`.
pub fn start_idup(st: &mut State, parent: MPI_Comm, newcomm: MPI_Comm, pairs: u32, user: ReqId) -> R<()> {
    let p = st.comm_mut(parent)?;
    let tag = p.next_icoll_tag();
    let views = super::coll::coll_views(p);
    let width = 2 * pairs;
    let agreement = st.ctx_agreements.begin();
    let mut buf = Box::new([st.propose_ctx(width)]);
    let sched = st.rt.engine.start_schedule(idup_round(&views, tag, &mut buf));
    st.pending_idups.push(PendingIdup { agreement, sched, step: IdupStep::Propose, user, comm: newcomm, views, tag, width, buf });
    Ok(())
}

fn idup_round(views: &(CommView, Option<CommView>), tag: i32, buf: &mut [u32; 1]) -> gridmpi_engine::sched::Schedule {
    agree::max_u32(views.0.clone(), views.1.clone(), tag, u32_buf(&mut buf[..]))
}

impl State {
    /// Move MPI_Comm_idup agreements whose round completed on.
    #[inline]
    pub fn progress_idups(&mut self) {
        if !self.pending_idups.is_empty() {
            self.advance_idups();
        }
    }

    fn advance_idups(&mut self) {
        let mut i = 0;
        while i < self.pending_idups.len() {
            let Some(status) = self.rt.engine.take(self.pending_idups[i].sched) else {
                i += 1;
                continue;
            };
            let mut p = self.pending_idups.swap_remove(i);
            if status.error.is_some() {
                self.end_ctx_agreement(p.agreement, None, p.width);
                self.rt.engine.complete_external(p.user, status);
                continue;
            }
            match p.step {
                IdupStep::Propose => {
                    let ctx = p.buf[0];
                    p.buf[0] = !self.ctx_free_here(p.agreement, ctx, p.width) as u32;
                    p.step = IdupStep::Check { ctx };
                }
                IdupStep::Check { ctx } if p.buf[0] == 0 => {
                    self.end_ctx_agreement(p.agreement, Some(ctx), p.width);
                    if let Some(c) = self.comms.get_mut(p.comm) {
                        c.ctx = ctx;
                        if c.is_inter() {
                            c.local_ctx = Some(ctx + 2);
                        }
                    }
                    self.rt.engine.complete_external(p.user, Default::default());
                    continue;
                }
                IdupStep::Check { .. } => {
                    self.ctx_agreements.retry(p.agreement);
                    p.buf[0] = self.propose_ctx(p.width);
                    p.step = IdupStep::Propose;
                }
            }
            p.sched = self.rt.engine.start_schedule(idup_round(&p.views, p.tag, &mut p.buf));
            // Looked at again later in this pass (a round over one member
            // is over at once).
            self.pending_idups.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_claimed_by_one_agreement_is_refused_to_another() {
        let mut a = CtxAgreements::default();
        let (x, y) = (a.begin(), a.begin());
        assert!(a.claim(x, 12, 2));
        assert!(!a.claim(y, 13, 2), "overlapping ids");
        assert!(a.claim(y, 14, 2), "adjacent ids");
        assert!(a.claim(x, 12, 2), "an agreement's own claim");
        // X proposes again: its ids are free for Y.
        a.retry(x);
        assert!(a.claim(y, 12, 2));
    }

    #[test]
    fn ids_taken_stay_claimed_while_other_agreements_are_in_flight() {
        let mut a = CtxAgreements::default();
        let (x, y) = (a.begin(), a.begin());
        a.end(x, Some((20, 4)));
        assert!(!a.claim(y, 22, 2));
        a.end(y, None);
        assert!(a.claims.is_empty() && a.inflight.is_empty());
        let z = a.begin();
        assert!(a.claim(z, 22, 2), "nothing in flight: the communicator says");
    }

    /// Two agreements over the same two members, started in opposite
    /// orders, whose first rounds give both the same id: whatever order
    /// the checks run in at each member, at most one takes it.
    #[test]
    fn two_agreements_on_one_id_never_both_take_it() {
        for order in 0..4u32 {
            let mut members = [CtxAgreements::default(), CtxAgreements::default()];
            let ids: Vec<(AgreementId, AgreementId)> = members.iter_mut().map(|m| (m.begin(), m.begin())).collect();
            let mut objected = [false, false];
            for (m, agreements) in members.iter_mut().enumerate() {
                let (x, y) = ids[m];
                // Bit m of `order`: whether Y is checked first at member m.
                let checks = if order >> m & 1 == 1 { [(1, y), (0, x)] } else { [(0, x), (1, y)] };
                for (which, id) in checks {
                    objected[which] |= !agreements.claim(id, 12, 2);
                }
            }
            assert!(objected[0] || objected[1], "order {order}: both took id 12");
        }
    }
}

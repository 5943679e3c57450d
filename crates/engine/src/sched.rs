//! Collective operations as schedules.
//!
//! A collective algorithm is a function from (communicator view, arguments)
//! to a [`Schedule`]: a list of rounds. A round first runs its local steps
//! (reductions and copies) in order, then starts all its sends and receives
//! at once; it is complete when they all are, and then the next round
//! begins. One executor runs every schedule, so a blocking collective is its
//! nonblocking form started and waited for, and algorithms can be swapped
//! without touching anything else.
//!
//! Two refinements serve pipelines and the WAN: a round may *carry*
//! receives into the next round (posted with this round's communication,
//! awaited at the end of the next, so a pipeline's chunk j+1 is sent while
//! chunk j still crosses the WAN), and a round may end only once its paced
//! data has left the host (*drain*, see [`Round::drain`]).
//!
//! Schedule traffic uses the communicator's collective context, so it never
//! matches the user's point-to-point messages, with the collective's
//! sequence number as tag, so concurrent nonblocking collectives on one
//! communicator never match each other's messages.
//!
//! Reductions are applied in an order fixed by the schedule, never by
//! message arrival, so results are bit-identical from run to run.
//!
//! An intercommunicator schedule has a second view, [`Schedule::local`]:
//! `Send`/`Recv` steps address the remote group, `SendLocal`/`RecvLocal`
//! steps our own group on the communicator's local context. Schedules
//! compose: [`Schedule::append`] runs one after another (an algorithm made
//! of phases), [`Schedule::append_local`] runs an intracommunicator
//! algorithm inside our group of an intercommunicator.

use gridmpi_datatype::UserBuf;
use crate::p2p::{RecvArgs, SendArgs, SendMode};
use crate::request::{ReqId, Status};
use crate::Engine;
use gridmpi_wire::{Pid, PACED_UNSENT};
use crate::slab::Slab;
use gridmpi_datatype::Datatype;
use std::sync::Arc;

/// A reduction: `inout = left op inout`, elementwise over `count` items of
/// `dt`, where `left` holds the operand of the lower-ranked process.
pub trait Reducer: Send + Sync {
    /// # Safety
    /// `left` and `inout` must each hold `count` items laid out as `dt`.
    unsafe fn reduce(&self, left: *const u8, inout: *mut u8, count: u64, dt: &Arc<Datatype>) -> Result<(), String>;
    fn is_commutative(&self) -> bool;
    /// The reduction runs a user's function, which may call MPI: the
    /// executor then hands it to the caller to run outside its lock.
    fn calls_user_code(&self) -> bool {
        false
    }
}

/// What a collective needs to know about its communicator.
#[derive(Clone, Debug)]
pub struct CommView {
    /// The collective context id.
    pub ctx: u32,
    pub rank: i32,
    pub size: i32,
    /// Pid of each rank (the remote group's for an intercommunicator).
    pub pids: Arc<[Pid]>,
    /// For intercommunicators: our rank's pid list in the local group.
    pub local_pids: Option<Arc<[Pid]>>,
}

impl CommView {
    pub fn pid(&self, rank: i32) -> Pid {
        self.pids[rank as usize]
    }
}

pub enum Step {
    Send { to: i32, buf: UserBuf },
    Recv { from: i32, buf: UserBuf },
    /// Intercommunicator schedules only: a send to a rank of our own group,
    /// on the schedule's [`Schedule::local`] view.
    SendLocal { to: i32, buf: UserBuf },
    /// Intercommunicator schedules only: a receive from a rank of our own
    /// group, on the schedule's [`Schedule::local`] view.
    RecvLocal { from: i32, buf: UserBuf },
    /// `inout = left op inout`.
    Reduce { op: Arc<dyn Reducer>, left: UserBuf, inout: UserBuf },
    /// Typed local copy.
    Copy { from: UserBuf, to: UserBuf },
    /// An operation on a shared-memory area of the host (coll/host.rs):
    /// a communication step, complete once the operation is released and
    /// read.
    Host(Box<crate::coll::host::HostStep>),
}

#[derive(Default)]
pub struct Round {
    pub local: Vec<Step>,
    pub comm: Vec<Step>,
    /// Pace the connections to these ranks at these rates (bytes/s) while
    /// the round's communication runs (WAN phases; see coll/wan.rs). The
    /// runtime caps the sockets' pacing rate and restores it once the data
    /// has drained.
    pub pace: Vec<(i32, u64)>,
    /// The round ends only once the data it sent to its paced peers has
    /// left this host (not when the last byte entered the socket). A
    /// symmetric WAN exchange run back to back needs it: a cluster whose
    /// sends complete while its paced data is still queued gets ahead of
    /// the other by up to that queue's duration, and the next call's
    /// exchange then runs one direction at a time (coll/wan.rs).
    pub drain: bool,
    /// Receives started with this round's communication but awaited only
    /// at the end of the next round, so their data may be used from the
    /// round after that on. A pipeline's WAN receive of chunk j, posted with
    /// the send of chunk j, then overlaps the sends of chunk j+1 instead of
    /// holding them back until chunk j has crossed the WAN.
    pub carry: Vec<Step>,
    /// The receives carried into this round are carried on into the next
    /// instead of being awaited here, so receives posted early can wait
    /// through a sequence of rounds (a WAN phase whose sends go one after
    /// another, coll/wan.rs).
    pub hold_carried: bool,
    /// Pacing whose rates are known only when the round starts (added to
    /// `pace` then), see [`PaceByBurst`].
    pub pace_by_burst: Option<PaceByBurst>,
}

/// Pace each flow at its part of a burst whose size an earlier round of
/// the schedule wrote: sums of the native-endian u64s in `burst` (e.g.
/// what every member of our cluster sends over the WAN in an alltoallv,
/// which no rank knows alone). `burst` is a table of `columns` u64s per
/// member, one column per WAN link the flows leave by (1: one burst for
/// all); a flow is paced at its part of its column's sum, on its link.
pub struct PaceByBurst {
    pub sites: Sites,
    /// Dense bytes holding u64s.
    pub burst: UserBuf,
    pub columns: usize,
    /// (rank, bytes it is sent, column of its burst).
    pub flows: Vec<(i32, u64, usize)>,
    /// Our cluster (the links' end on this side).
    pub from: u32,
}

impl PaceByBurst {
    fn rates(&self) -> Vec<(i32, u64)> {
        let n = (self.burst.len() / 8) as usize;
        // SAFETY: a dense scratch area of n u64s owned by the schedule.
        let words = unsafe { std::slice::from_raw_parts(self.burst.base() as *const u8, n * 8) };
        let word = |i: usize| u64::from_ne_bytes(words[8 * i..8 * i + 8].try_into().unwrap());
        let total = |col: usize| (col..n).step_by(self.columns.max(1)).map(word).fold(0, u64::saturating_add);
        self.flows
            .iter()
            .filter_map(|&(to, bytes, col)| self.sites.pace_rate_on(self.from, self.sites.cluster(to), total(col), bytes).map(|r| (to, r)))
            .collect()
    }
}

/// The lowest pacing rate (bytes/s): one full-sized packet per
/// [`PACED_UNSENT`], so no packet waits longer than that behind the one
/// before it.
pub const MIN_PACE_RATE: u64 = 1500 * 1_000_000 / PACED_UNSENT.as_micros() as u64;

/// Which cluster (site) every rank of a communicator is in, and the WAN
/// between them, for cluster-aware algorithms.
#[derive(Clone, Debug)]
pub struct Sites {
    /// Cluster index of each rank (0..count).
    pub of_rank: Arc<[u32]>,
    pub count: u32,
    /// Bottleneck bandwidth between clusters (bits/s), if known.
    pub wan_bps: Option<u64>,
    /// Fraction of the WAN bandwidth a paced phase aims at (e.g. 0.95); 0
    /// disables pacing.
    pub pace_share: f64,
    /// Bytes the bottleneck's queue is assumed to absorb (see `pace_rate`).
    pub wan_queue: u64,
    /// Bandwidth (bits/s) of the WAN from cluster a to cluster b at
    /// `a * count + b`, when the links differ and all are known; `wan_bps`
    /// is the smallest of them.
    pub link_bps: Option<Arc<[u64]>>,
}

impl Sites {
    pub fn cluster(&self, rank: i32) -> u32 {
        self.of_rank[rank as usize]
    }

    /// Ranks of cluster `c`, in rank order.
    pub fn members(&self, c: u32) -> Vec<i32> {
        (0..self.of_rank.len() as i32).filter(|&r| self.of_rank[r as usize] == c).collect()
    }

    /// Whether WAN phases are paced at all (bandwidth known, share > 0).
    pub fn pacing(&self) -> bool {
        self.wan_bps.is_some() && self.pace_share > 0.0
    }

    /// The pacing rate in bytes/s of a connection carrying `bytes` in a WAN
    /// phase during which `burst` bytes leave the cluster in all; None when
    /// the bandwidth is unknown, pacing is off, or the burst fits in the
    /// bottleneck's queue.
    ///
    /// Flows starting together, flow i at rate r_i = k·S_i, all last S_i/r_i
    /// = 1/k and fill the queue at Σr_i - C (C: the share of the bandwidth
    /// aimed at), so it peaks at burst - C/k. Keeping that within the queue
    /// Q gives k = C / (burst - Q): every flow gets the part of the
    /// bandwidth its size is of the burst (the fair share C/f for f equal
    /// flows when Q is small beside the burst), all finish together, bursts
    /// little larger than Q go faster (a flow that starts late then catches
    /// up instead of finishing late), and a burst that fits is not paced.
    ///
    /// No rate is below [`MIN_PACE_RATE`]: the kernel spaces the packets of
    /// a paced socket by the last one's length over the rate, so a small
    /// flow of a skewed alltoallv paced at its tiny share would hold a
    /// protocol reply written after its last packet for most of the phase
    /// (a clear-to-send delayed by ~100 ms turned a 90 ms alltoallv into
    /// 180 ms). Such flows are small, so sending them faster costs nothing.
    pub fn pace_rate(&self, burst: u64, bytes: u64) -> Option<u64> {
        self.rate_at(self.wan_bps?, burst, bytes)
    }

    /// [`Sites::pace_rate`] for a burst that leaves cluster `from` for
    /// cluster `to` by their own link.
    pub fn pace_rate_on(&self, from: u32, to: u32, burst: u64, bytes: u64) -> Option<u64> {
        let bw = match &self.link_bps {
            Some(l) => l[(from * self.count + to) as usize],
            None => self.wan_bps?,
        };
        self.rate_at(bw, burst, bytes)
    }

    fn rate_at(&self, bw: u64, burst: u64, bytes: u64) -> Option<u64> {
        if !self.pacing() || burst <= self.wan_queue || bytes == 0 {
            return None;
        }
        let c = bw as f64 / 8.0 * self.pace_share;
        let r = c * bytes as f64 / (burst - self.wan_queue) as f64;
        Some(r.max(MIN_PACE_RATE as f64).min(c).max(1.0) as u64)
    }
}

/// Scratch memory owned by a schedule, 16-byte aligned.
pub struct Temp {
    mem: Vec<u128>,
}

impl Temp {
    pub fn ptr(&self) -> *mut u8 {
        self.mem.as_ptr() as *mut u8
    }
}

pub struct Schedule {
    /// Who `Send`/`Recv` steps address: the communicator (for an
    /// intercommunicator, the remote group).
    pub view: CommView,
    /// For an intercommunicator: our own group, on the communicator's local
    /// context, addressed by `SendLocal`/`RecvLocal` steps.
    pub local: Option<CommView>,
    pub tag: i32,
    pub rounds: Vec<Round>,
    temps: Vec<Temp>,
    /// A schedule that is one host-area operation (coll/host.rs) keeps it
    /// here rather than in a round: a blocking caller takes it without the
    /// executor ([`Engine::host_step_alone`]), and building and dropping the
    /// schedule allocates nothing else. It runs before every round (rounds
    /// are only ever added after it), as the first round's only step once
    /// the schedule is started or joined with another (`settle_host`).
    pub(crate) host: Option<Box<crate::coll::host::HostStep>>,
    /// This rank's own arguments disagree (say an alltoall whose send
    /// blocks are not its receive blocks): the schedule runs as one whose
    /// messages came wrong (`Running::mismatch`) and fails at its end.
    mismatch: Option<String>,
}

impl Schedule {
    /// Bytes this process sends in the schedule (for the trace).
    pub fn bytes_sent(&self) -> u64 {
        self.rounds
            .iter()
            .flat_map(|r| r.comm.iter())
            .map(|s| match s {
                Step::Send { buf, .. } => buf.len(),
                _ => 0,
            })
            .sum()
    }

    pub fn new(view: CommView, tag: i32) -> Schedule {
        Schedule { view, local: None, tag, rounds: Vec::new(), temps: Vec::new(), host: None, mismatch: None }
    }

    /// Mark this rank's arguments as disagreeing with themselves (`why`).
    pub fn mismatched(&mut self, why: String) {
        self.mismatch.get_or_insert(why);
    }

    /// A schedule of an intercommunicator: `remote` addresses the remote
    /// group, `local` our own group (on the local context).
    pub fn new_inter(remote: CommView, local: CommView, tag: i32) -> Schedule {
        Schedule { view: remote, local: Some(local), tag, rounds: Vec::new(), temps: Vec::new(), host: None, mismatch: None }
    }

    /// Put a lone host-area step (see `host`) where the executor runs it:
    /// the first round. Before this schedule is joined with another.
    fn settle_host(&mut self) {
        if let Some(step) = self.host.take() {
            self.rounds.insert(0, Round { comm: vec![Step::Host(step)], ..Default::default() });
        }
    }

    /// A host-area step as a round of its own after the others.
    pub(crate) fn push_host(&mut self, step: crate::coll::host::HostStep) {
        self.settle_host();
        self.rounds.push(Round { comm: vec![Step::Host(Box::new(step))], ..Default::default() });
    }

    /// Run `other` (built on the same view) after this schedule's rounds;
    /// its scratch memory moves along.
    pub fn append(&mut self, mut other: Schedule) {
        self.mismatch = self.mismatch.take().or(other.mismatch.take());
        if self.rounds.is_empty() && self.host.is_none() {
            // Appended to nothing: `other` as it is (a lone host step stays
            // one, for a blocking caller to run without the executor).
            self.rounds = other.rounds;
            self.host = other.host;
            self.temps.extend(other.temps);
            return;
        }
        self.settle_host();
        other.settle_host();
        self.rounds.extend(other.rounds);
        self.temps.extend(other.temps);
    }

    /// Run `other`, built on a sub-view of this schedule's view whose rank
    /// `i` is our rank `members[i]` (see coll/wan.rs), after this schedule's
    /// rounds: its ranks are renumbered to ours, so every message carries
    /// the sender's real rank and phases on different sub-views never
    /// match each other's messages.
    pub fn append_mapped(&mut self, mut other: Schedule, members: &[i32]) {
        self.mismatch = self.mismatch.take().or(other.mismatch.take());
        self.settle_host();
        other.settle_host();
        let m = |r: i32| members[r as usize];
        for round in other.rounds {
            let comm = round
                .comm
                .into_iter()
                .map(|step| match step {
                    Step::Send { to, buf } => Step::Send { to: m(to), buf },
                    Step::Recv { from, buf } => Step::Recv { from: m(from), buf },
                    s => s,
                })
                .collect();
            let pace = round.pace.into_iter().map(|(r, rate)| (m(r), rate)).collect();
            let carry = round.carry.into_iter().map(|step| match step {
                Step::Recv { from, buf } => Step::Recv { from: m(from), buf },
                s => s,
            });
            let pace_by_burst = round.pace_by_burst.map(|mut p| {
                p.flows.iter_mut().for_each(|f| f.0 = m(f.0));
                p
            });
            self.rounds.push(Round { local: round.local, comm, pace, drain: round.drain, carry: carry.collect(), hold_carried: round.hold_carried, pace_by_burst });
        }
        self.temps.extend(other.temps);
    }

    /// Run `other`, built on this intercommunicator schedule's local view,
    /// after this schedule's rounds: its sends and receives become
    /// local-group ones.
    pub fn append_local(&mut self, mut other: Schedule) {
        assert!(self.local.is_some(), "append_local on a schedule without a local view");
        self.mismatch = self.mismatch.take().or(other.mismatch.take());
        self.settle_host();
        other.settle_host();
        for round in other.rounds {
            let comm = round
                .comm
                .into_iter()
                .map(|step| match step {
                    Step::Send { to, buf } => Step::SendLocal { to, buf },
                    Step::Recv { from, buf } => Step::RecvLocal { from, buf },
                    s => s,
                })
                .collect();
            // Pacing hints name ranks of the other view: local-group rounds go unpaced.
            assert!(round.carry.is_empty() && round.pace_by_burst.is_none(), "append_local: carried receives and paced rounds are not supported");
            self.rounds.push(Round { local: round.local, comm, pace: Vec::new(), ..Default::default() });
        }
        self.temps.extend(other.temps);
    }

    /// Drop rounds with nothing to do, except those that follow a round
    /// with carried receives (they mark when those must be complete).
    pub fn prune(&mut self) {
        let mut carried = false;
        self.rounds.retain(|r| {
            let keep = carried || !(r.local.is_empty() && r.comm.is_empty() && r.carry.is_empty());
            carried = !r.carry.is_empty();
            keep
        });
    }

    /// Allocate `bytes` of scratch memory; returns its address (stable for
    /// the schedule's life).
    pub fn temp(&mut self, bytes: u64) -> *mut u8 {
        let words = (bytes as usize).div_ceil(16).max(1);
        self.temps.push(Temp { mem: vec![0u128; words] });
        self.temps.last().unwrap().ptr()
    }

    /// Scratch memory for `count` items of `dt` (room for its extent and
    /// true bounds), returned as a buffer in that layout.
    pub fn temp_typed(&mut self, count: u64, dt: &Arc<Datatype>) -> UserBuf {
        let (lb, span) = typed_span(count, dt);
        let base = self.temp(span.max(1) as u64);
        // SAFETY: the temp holds `span` bytes starting at the lowest byte the
        // type touches, which is `lb` below the buffer origin.
        unsafe { UserBuf::new(base.wrapping_offset(-(lb as isize)), count, dt.clone()) }
    }

    /// Scratch bytes viewed as `len` MPI_BYTEs.
    pub fn temp_bytes(&mut self, len: u64) -> UserBuf {
        let base = self.temp(len);
        // SAFETY: the temp holds `len` bytes.
        unsafe { UserBuf::new(base, len, byte_type()) }
    }

    pub fn round(&mut self) -> &mut Round {
        self.rounds.push(Round::default());
        self.rounds.last_mut().unwrap()
    }

    pub fn last_round(&mut self) -> &mut Round {
        if self.rounds.is_empty() {
            self.rounds.push(Round::default());
        }
        self.rounds.last_mut().unwrap()
    }
}

/// (lowest byte offset touched, bytes spanned) by `count` items of `dt`.
pub fn typed_span(count: u64, dt: &Datatype) -> (i64, i64) {
    if count == 0 {
        return (0, 0);
    }
    let ext = dt.extent();
    let first_lb = dt.true_lb();
    let last = (count as i64 - 1).saturating_mul(ext);
    let lo = first_lb.min(first_lb.saturating_add(last));
    let hi = (first_lb + dt.true_extent()).max(first_lb.saturating_add(last).saturating_add(dt.true_extent()));
    (lo, hi - lo)
}

/// MPI_BYTE, made once for the process. (Not thread-local: MPI_Finalize
/// may run from an atexit handler, after the thread's locals are gone.)
pub fn byte_type() -> Arc<Datatype> {
    Datatype::basic_shared(gridmpi_datatype::BasicType::Byte)
}

pub(crate) struct Running {
    sched: Schedule,
    next_round: usize,
    pending: Vec<ReqId>,
    /// The request the user waits on.
    pub(crate) req: ReqId,
    failed: Option<String>,
    /// A message came longer or shorter than posted: the ranks disagree on
    /// the collective's sizes. The schedule still runs to its end (a rank
    /// that stopped sending would leave the others waiting for ever), then
    /// fails with this.
    mismatch: Option<String>,
    /// Why the schedule was abandoned, when a process of its communicator
    /// failed or the communicator was revoked (ft/): its request's error.
    aborted: Option<crate::request::ErrorKind>,
    /// The current round's steps not yet done (local steps run in order,
    /// then the communication starts).
    local: std::collections::VecDeque<Step>,
    comm: Vec<Step>,
    /// A user-function reduction handed out with [`Engine::take_user_steps`]
    /// and not yet reported done.
    waiting_user: bool,
    /// Caps in force for the current round: the peer and our sends to it.
    /// A cap is released as soon as those sends are complete, so a flow
    /// that is done (say a small one of an alltoallv, paced slowly) does not
    /// hold back the protocol replies we owe that peer: the kernel spaces
    /// every packet of a paced socket by the last one's length over the rate.
    paced: Vec<(Pid, Vec<ReqId>)>,
    /// Every peer paced in the current round (for `drain`).
    paced_peers: Vec<Pid>,
    /// The current round's pacing, applied when its communication starts.
    pace: Vec<(i32, u64)>,
    pace_by_burst: Option<PaceByBurst>,
    /// The current round waits for its paced data to leave (Round::drain).
    drain: bool,
    /// The current round's carried receives, to start with its communication.
    carry: Vec<Step>,
    /// Receives the current round carries into the next.
    carried: Vec<ReqId>,
    /// Receives the previous round carried into the current one, awaited
    /// with its communication (or carried on: Round::hold_carried).
    carried_in: Vec<ReqId>,
    hold_carried: bool,
    /// Sends an abandoned schedule left to go on alone (detached): they
    /// may still read its scratch memory, so the schedule outlives its
    /// request until they are gone (Executor::lingering).
    detached_sends: Vec<ReqId>,
}

/// A reduction with a user's function, to be run by the caller outside any
/// lock (the function may call MPI itself), then reported with
/// [`Engine::user_step_done`].
pub struct UserStep {
    pub id: u64,
    pub op: Arc<dyn Reducer>,
    pub left: UserBuf,
    pub inout: UserBuf,
}

impl UserStep {
    /// Run the reduction.
    ///
    /// # Safety
    /// The schedule's buffers must still be valid: they are while the step is
    /// outstanding (its schedule cannot finish before `user_step_done`).
    pub unsafe fn run(&self) -> Result<(), String> {
        self.op.reduce(self.left.base() as *const u8, self.inout.base(), self.inout.count(), self.inout.datatype())
    }
}

/// Schedules in progress.
#[derive(Default)]
pub struct Executor {
    running: Slab<Running>,
    /// User-function reductions waiting to be run by the caller: (running
    /// id, step, handed out). A step stays here until it is reported done
    /// (to find its schedule then), and is handed out once: with several
    /// threads waiting, each must run a different step, never the same
    /// reduction twice.
    user_steps: Vec<(u32, UserStep, bool)>,
    next_user_id: u64,
    /// Host-area operations started by rounds: the request their round
    /// waits on, the step, and whether we arrived yet.
    host_ops: Vec<(ReqId, Box<crate::coll::host::HostStep>, bool)>,
    /// Errors of finished host-area operations (a failed reduction), by
    /// request, for their round to take.
    host_errors: Vec<(ReqId, String)>,
    /// Abandoned schedules whose detached sends still run: their memory
    /// (scratch buffers the sends read) is freed once those are gone.
    lingering: Vec<(Vec<ReqId>, Schedule)>,
}

impl Engine {
    /// Start a schedule; the returned request completes when it has run.
    pub fn start_schedule(&mut self, mut sched: Schedule) -> ReqId {
        sched.settle_host();
        let req = self.external_request();
        let mut ex = std::mem::take(&mut self.executor);
        let mismatch = sched.mismatch.take();
        let id = ex.running.insert(Running {
            sched,
            next_round: 0,
            pending: Vec::new(),
            req,
            failed: None,
            mismatch,
            aborted: None,
            local: Default::default(),
            comm: Vec::new(),
            waiting_user: false,
            paced: Vec::new(),
            paced_peers: Vec::new(),
            pace: Vec::new(),
            pace_by_burst: None,
            drain: false,
            carry: Vec::new(),
            carried: Vec::new(),
            carried_in: Vec::new(),
            hold_carried: false,
            detached_sends: Vec::new(),
        });
        self.advance(&mut ex, id);
        self.executor = ex;
        req
    }

    /// Advance every running schedule whose current round is complete.
    /// Returns whether any round advanced.
    #[inline]
    pub fn progress_schedules(&mut self) -> bool {
        // Adopted host-area operations (host_adopt) have no schedule.
        if self.executor.running.is_empty() && self.executor.host_ops.is_empty() {
            return false;
        }
        self.advance_schedules()
    }

    fn advance_schedules(&mut self) -> bool {
        let mut ex = std::mem::take(&mut self.executor);
        if !ex.lingering.is_empty() {
            ex.lingering.retain(|(sends, _)| sends.iter().any(|&r| self.exists(r)));
        }
        let mut any = self.progress_host_ops(&mut ex);
        let ids: Vec<u32> = ex.running.iter().map(|(i, _)| i).collect();
        for id in ids {
            any |= self.advance(&mut ex, id);
        }
        self.executor = ex;
        any
    }

    pub fn schedules_running(&self) -> usize {
        self.executor.running.len()
    }

    fn advance(&mut self, ex: &mut Executor, id: u32) -> bool {
        let mut moved = false;
        loop {
            let run = ex.running.get_mut(id).unwrap();
            if !run.paced.is_empty() {
                let mut done = Vec::new();
                run.paced.retain(|(pid, sends)| {
                    let complete = sends.iter().all(|&r| self.is_complete(r));
                    if complete {
                        done.push(*pid);
                    }
                    !complete
                });
                for pid in done {
                    self.pace(pid, None);
                }
            }
            if run.waiting_user || !run.pending.iter().all(|&r| self.is_complete(r)) {
                return moved;
            }
            for r in run.pending.drain(..) {
                if let Some(i) = ex.host_errors.iter().position(|(q, _)| *q == r) {
                    run.failed.get_or_insert(ex.host_errors.swap_remove(i).1);
                }
                // A collective's messages are exactly as long as posted in
                // a correct program: longer or shorter, the ranks disagree.
                let posted = self.posted_len(r);
                if let Some(st) = self.take(r) {
                    use crate::request::ErrorKind::{Signature, Truncate};
                    let why = match st.error {
                        Some(Truncate | Signature) => {
                            Some(format!("a message of the collective from rank {} was truncated (mismatched counts or types across ranks?)", st.source))
                        }
                        Some(kind) => {
                            run.aborted.get_or_insert(kind);
                            None
                        }
                        None => posted.filter(|&n| st.count < n).map(|n| {
                            format!(
                                "a message of the collective came up short, {} of the {n} bytes expected from rank {} (mismatched counts or types across ranks?)",
                                st.count, st.source
                            )
                        }),
                    };
                    if st.error.is_some() && why.is_none() {
                        run.failed.get_or_insert_with(|| format!("a message of the collective from rank {} failed", st.source));
                    }
                    if run.mismatch.is_none() {
                        run.mismatch = why;
                    }
                }
            }
            for (peer, _) in run.paced.drain(..) {
                self.pace(peer, None);
            }
            // `paced_peers` is set when the round's communication starts.
            let drain = std::mem::take(&mut run.paced_peers);
            if run.drain && !drain.is_empty() && run.failed.is_none() {
                run.drain = false;
                run.pending = drain.iter().map(|&p| self.drain(p)).collect();
                moved = true;
                continue;
            }
            // Local steps of the current round, in order.
            if run.failed.is_none() {
                if let Some(step) = run.local.pop_front() {
                    moved = true;
                    match step {
                        Step::Reduce { op, left, inout } if op.calls_user_code() => {
                            let uid = ex.next_user_id;
                            ex.next_user_id += 1;
                            run.waiting_user = true;
                            ex.user_steps.push((id, UserStep { id: uid, op, left, inout }, false));
                            return true;
                        }
                        Step::Reduce { op, left, inout } => {
                            let count = inout.count();
                            // SAFETY: schedule buffers are valid for the collective's
                            // duration (user buffers by MPI's rules, temps owned here).
                            let r = unsafe { op.reduce(left.base() as *const u8, inout.base(), count, inout.datatype()) };
                            if let Err(e) = r {
                                run.failed.get_or_insert(e);
                            }
                        }
                        Step::Copy { from, to } => {
                            // SAFETY: as above; schedules never copy between overlapping buffers.
                            unsafe { to.copy_from(&from) };
                        }
                        _ => unreachable!("communication in a local step list"),
                    }
                    continue;
                }
            }
            // Then the round's communication.
            if (!run.comm.is_empty() || !run.carry.is_empty() || !run.carried_in.is_empty()) && run.failed.is_none() {
                moved = true;
                let carry_steps = std::mem::take(&mut run.carry);
                let carry_from = run.comm.len();
                let mut comm = std::mem::take(&mut run.comm);
                comm.extend(carry_steps);
                // Pace first, so the rate is in place before the first byte.
                let mut paces = std::mem::take(&mut run.pace);
                if let Some(p) = run.pace_by_burst.take() {
                    paces.extend(p.rates());
                }
                let pids: Vec<(Pid, u64)> = paces.iter().map(|&(r, rate)| (run.sched.view.pid(r), rate)).collect();
                run.paced = pids.iter().map(|p| (p.0, Vec::new())).collect();
                run.paced_peers = pids.iter().map(|p| p.0).collect();
                for (pid, rate) in pids {
                    self.pace(pid, Some(rate));
                }
                let tag = run.sched.tag;
                let mut started = Vec::with_capacity(comm.len());
                for step in comm {
                    let run = ex.running.get(id).unwrap();
                    let (view, local) = (&run.sched.view, run.sched.local.as_ref());
                    let local = || local.expect("a local-group step in a schedule without a local view");
                    // After a mismatch our data is wrong: we send nothing,
                    // so those we send to come up short and fail too (a
                    // rank that forwards, say in a tree, passes it on).
                    let mismatched = run.mismatch.is_some();
                    let send = |v: &CommView, to: i32, buf| SendArgs {
                        ctx: v.ctx,
                        src: v.rank,
                        dest: v.pid(to),
                        tag,
                        buf: if mismatched { UserBuf::empty() } else { buf },
                        mode: SendMode::Standard,
                    };
                    let r = match step {
                        Step::Send { to, buf } => {
                            let a = send(view, to, buf);
                            let dest = a.dest;
                            let r = self.isend(a);
                            if let Some(p) = ex.running.get_mut(id).unwrap().paced.iter_mut().find(|p| p.0 == dest) {
                                p.1.push(r);
                            }
                            r
                        }
                        Step::SendLocal { to, buf } => {
                            let a = send(local(), to, buf);
                            self.isend(a)
                        }
                        Step::Recv { from, buf } => {
                            let ctx = view.ctx;
                            self.irecv(RecvArgs { ctx, src: Some(from), tag: Some(tag), buf })
                        }
                        Step::RecvLocal { from, buf } => {
                            let ctx = local().ctx;
                            self.irecv(RecvArgs { ctx, src: Some(from), tag: Some(tag), buf })
                        }
                        Step::Host(step) => {
                            let r = self.external_request();
                            ex.host_ops.push((r, step, false));
                            self.progress_host_ops(ex);
                            r
                        }
                        _ => unreachable!("local step in a communication list"),
                    };
                    started.push(r);
                }
                let run = ex.running.get_mut(id).unwrap();
                // This round waits for its own communication and for what
                // the previous round carried; its carried receives wait for
                // the next round.
                run.carried = started.split_off(carry_from);
                if run.hold_carried {
                    run.carried.append(&mut run.carried_in);
                } else {
                    started.append(&mut run.carried_in);
                }
                run.pending = started;
                continue;
            }
            // The round is done: finish, or load the next one.
            if !(run.carried.is_empty() && run.carried_in.is_empty())
                && (run.next_round == run.sched.rounds.len() || run.failed.is_some())
            {
                // Receives carried past the last round (or a failure) are
                // still posted: wait for them before finishing.
                run.pending = std::mem::take(&mut run.carried);
                run.pending.append(&mut run.carried_in);
                continue;
            }
            if run.next_round == run.sched.rounds.len() || run.failed.is_some() {
                let run = ex.running.remove(id).unwrap();
                if !run.detached_sends.is_empty() {
                    ex.lingering.push((run.detached_sends, run.sched));
                }
                let status = Status { source: -1, tag: -1, count: 0, cancelled: false, error: run.aborted };
                if let Some(msg) = run.failed.or(run.mismatch) {
                    self.schedule_errors.push((run.req, msg));
                }
                if let Some(f) = self.finished_schedules.as_mut() {
                    f.push(run.req);
                }
                self.complete_external(run.req, status);
                return true;
            }
            moved = true;
            let round = std::mem::take(&mut run.sched.rounds[run.next_round]);
            run.next_round += 1;
            run.local = round.local.into();
            run.comm = round.comm;
            run.pace = round.pace;
            run.pace_by_burst = round.pace_by_burst;
            run.drain = round.drain;
            run.carry = round.carry;
            run.hold_carried = round.hold_carried;
            run.carried_in = std::mem::take(&mut run.carried);
        }
    }

    /// Move host-area operations on: arrive at those whose turn it is (the
    /// last to arrive combines, releases and wakes the others), finish
    /// those released. Returns whether any finished.
    fn progress_host_ops(&mut self, ex: &mut Executor) -> bool {
        let mut finished = false;
        let mut i = 0;
        while i < ex.host_ops.len() {
            let (r, step, arrived) = &mut ex.host_ops[i];
            let area = step.host.area.clone();
            let op = step.host.op;
            if !*arrived {
                if area.turn() != op {
                    i += 1;
                    continue;
                }
                // SAFETY: the step's buffers live as long as its schedule,
                // which waits for this request.
                if let Err(e) = unsafe { self.host_arrive(step) } {
                    ex.host_errors.push((*r, e));
                }
                *arrived = true;
            }
            if !area.released(op) {
                i += 1;
                continue;
            }
            // SAFETY: as above.
            if let Err(e) = unsafe { step.read() } {
                if !ex.host_errors.iter().any(|(q, _)| q == r) {
                    ex.host_errors.push((*r, e));
                }
            }
            area.set_turn(op + 1);
            let (r, _, _) = ex.host_ops.swap_remove(i);
            self.complete_external(r, Status { source: -1, tag: -1, count: 0, cancelled: false, error: None });
            finished = true;
            // A later operation on the same area may now start: look again.
            i = 0;
        }
        finished
    }

    /// Arrive at a host-area operation. The last member combines, releases
    /// (even after a failed reduction, whose error it returns) and wakes the
    /// members that said they sleep: spinners see the release themselves.
    ///
    /// # Safety
    /// The step's buffers are valid until it is read ([`HostStep::arrive`]).
    pub unsafe fn host_arrive(&mut self, step: &crate::coll::host::HostStep) -> Result<(), String> {
        let (last, result) = match step.arrive() {
            Ok(last) => (last, Ok(())),
            Err(e) => (true, Err(e)),
        };
        if last {
            self.wake_host_sleepers(step.host.area.as_ref(), step.member, &step.pids);
        }
        result
    }

    /// The last member released an operation on `area`: wake the members
    /// (their pids by member index) that said they sleep, with a frame that
    /// only returns credit (any frame wakes a waiting process). Spinners
    /// see the release themselves.
    pub fn wake_host_sleepers(&mut self, area: &dyn crate::coll::host::HostArea, member: usize, pids: &[Pid]) {
        for (_, &pid) in pids.iter().enumerate().filter(|&(m, _)| m != member && area.sleeping(m)) {
            self.transmit(pid, gridmpi_wire::Header::new(gridmpi_wire::Frame::Credit, 0), gridmpi_wire::Payload::None, None);
        }
    }

    /// A blocking collective whose schedule is host-area operations only
    /// (one, or a bcast's pieces one after the other), the first of which
    /// may start now (every earlier one on its area finished here), needs
    /// no executor: its caller arrives at each ([`Engine::host_arrive`]),
    /// waits for its release without the lock and reads
    /// ([`Engine::host_finish`]), or hands the waiting over
    /// ([`Engine::host_adopt`]). That saves a blocked barrier or small
    /// allreduce most of its cost on one host. Returns the first step and
    /// the others in order (none, allocating nothing, for a lone step), or
    /// the schedule to start as usual.
    pub fn host_step_alone(&self, mut sched: Schedule) -> Result<(Box<crate::coll::host::HostStep>, Vec<Box<crate::coll::host::HostStep>>), Schedule> {
        let turn_now = |s: &crate::coll::host::HostStep| s.host.area.turn() == s.host.op;
        if let Some(step) = sched.host.take() {
            if sched.rounds.is_empty() && turn_now(&step) {
                return Ok((step, Vec::new()));
            }
            sched.host = Some(step);
            return Err(sched);
        }
        let host_only = |r: &Round| {
            r.local.is_empty() && r.carry.is_empty() && r.pace.is_empty() && r.pace_by_burst.is_none() && matches!(r.comm[..], [Step::Host(_)])
        };
        let first_now = matches!(sched.rounds.first().map(|r| &r.comm[..]), Some([Step::Host(s)]) if turn_now(s));
        if !first_now || !sched.rounds.iter().all(host_only) {
            return Err(sched);
        }
        let mut steps = sched.rounds.drain(..).map(|mut r| match r.comm.pop() {
            Some(Step::Host(step)) => step,
            _ => unreachable!("checked: one host step per round"),
        });
        let first = steps.next().expect("checked: a first round");
        Ok((first, steps.collect()))
    }

    /// Read what a released operation gives us (an error when the members
    /// disagreed on its size); the area's next operation may start.
    ///
    /// # Safety
    /// As [`Engine::host_arrive`]; the operation is released.
    pub unsafe fn host_finish(step: &crate::coll::host::HostStep) -> Result<(), String> {
        let read = step.read();
        step.host.area.set_turn(step.host.op + 1);
        read
    }

    /// Wait for an arrived step's release as the executor's other host
    /// operations do: the returned request completes once it is read
    /// (then [`Engine::take_host_error`] says whether reading failed).
    pub fn host_adopt(&mut self, step: Box<crate::coll::host::HostStep>) -> ReqId {
        let r = self.external_request();
        self.executor.host_ops.push((r, step, true));
        r
    }

    /// The error of an adopted step ([`Engine::host_adopt`]) that completed.
    pub fn take_host_error(&mut self, req: ReqId) -> Option<String> {
        let errors = &mut self.executor.host_errors;
        let i = errors.iter().position(|(r, _)| *r == req)?;
        Some(errors.swap_remove(i).1)
    }

    /// The host-area operations this process arrived at and waits to see
    /// released: a waiter spins on them without the lock (no frame comes
    /// for a member that does not sleep).
    pub fn host_waits(&self) -> Vec<(Arc<dyn crate::coll::host::HostArea>, u64)> {
        self.executor.host_ops.iter().filter(|(_, s, arrived)| *arrived && !s.host.area.released(s.host.op)).map(|(_, s, _)| (s.host.area.clone(), s.host.op)).collect()
    }

    /// Before this process sleeps: mark it sleeping on every area it waits
    /// on, so the last member wakes it. False when a release came
    /// meanwhile (do not sleep; [`Engine::host_after_sleep`] still follows).
    pub fn host_prepare_sleep(&self) -> bool {
        let mut sleep = true;
        for (_, s, _) in self.executor.host_ops.iter().filter(|(_, _, arrived)| *arrived) {
            s.host.area.set_sleeping(s.member, true);
            sleep &= !s.host.area.released(s.host.op);
        }
        sleep
    }

    /// Awake again: the last members need not send frames.
    pub fn host_after_sleep(&self) {
        for (_, s, _) in self.executor.host_ops.iter().filter(|(_, _, arrived)| *arrived) {
            s.host.area.set_sleeping(s.member, false);
        }
    }

    /// User-function reductions to run outside the lock (see [`UserStep`]).
    pub fn take_user_steps(&mut self) -> Vec<UserStep> {
        let mut out = Vec::new();
        for (_, s, handed_out) in self.executor.user_steps.iter_mut().filter(|u| !u.2) {
            *handed_out = true;
            out.push(UserStep { id: s.id, op: s.op.clone(), left: s.left.clone(), inout: s.inout.clone() });
        }
        out
    }

    pub fn has_user_steps(&self) -> bool {
        self.executor.user_steps.iter().any(|u| !u.2)
    }

    /// A step from [`Engine::take_user_steps`] has run.
    pub fn user_step_done(&mut self, id: u64, result: Result<(), String>) {
        let mut ex = std::mem::take(&mut self.executor);
        if let Some(i) = ex.user_steps.iter().position(|(_, s, _)| s.id == id) {
            let (rid, _, _) = ex.user_steps.swap_remove(i);
            if let Some(run) = ex.running.get_mut(rid) {
                run.waiting_user = false;
                if let Err(e) = result {
                    run.failed.get_or_insert(e);
                }
            }
            self.advance(&mut ex, rid);
        }
        self.executor = ex;
    }

    /// Abandon the running schedules whose views' pids `pick` chooses (a
    /// process of their communicator failed): see [`Engine::abort_schedule`].
    pub(crate) fn abort_schedules(&mut self, pick: impl Fn(&[Pid]) -> bool, kind: crate::request::ErrorKind, why: &str) {
        let ids: Vec<u32> = self
            .executor
            .running
            .iter()
            .filter(|(_, run)| pick(&run.sched.view.pids) || run.sched.local.as_ref().is_some_and(|l| pick(&l.pids)))
            .map(|(id, _)| id)
            .collect();
        for id in ids {
            self.abort_schedule(id, kind, why);
        }
    }

    /// Abandon the running schedules on any of `ctxs` (revoked).
    pub(crate) fn abort_schedules_by_ctx(&mut self, ctxs: &std::collections::HashSet<u32>) {
        let ids: Vec<u32> = self
            .executor
            .running
            .iter()
            .filter(|(_, run)| ctxs.contains(&run.sched.view.ctx) || run.sched.local.as_ref().is_some_and(|l| ctxs.contains(&l.ctx)))
            .map(|(id, _)| id)
            .collect();
        for id in ids {
            self.abort_schedule(id, crate::request::ErrorKind::Revoked, "the communicator was revoked");
        }
    }

    /// Abandon running schedule `id`: its posted receives are withdrawn
    /// (nothing may land in the caller's buffers once the call returned),
    /// its sends go on alone (detached, its memory kept until they are
    /// gone), its host-area operation is dropped, its pacing lifted; it
    /// finishes with `kind` once the receives already matched to a message
    /// have landed (a transport may be writing one into its buffers right
    /// now; the sender is alive, or they fail with it) and any user
    /// reduction handed out to a thread reported back.
    fn abort_schedule(&mut self, id: u32, kind: crate::request::ErrorKind, why: &str) {
        let mut ex = std::mem::take(&mut self.executor);
        let run = ex.running.get_mut(id).expect("a running schedule");
        if run.aborted.is_some() {
            self.executor = ex;
            return;
        }
        run.aborted = Some(kind);
        run.failed.get_or_insert_with(|| why.to_string());
        run.local.clear();
        run.comm.clear();
        run.carry.clear();
        run.drain = false;
        run.pace.clear();
        run.pace_by_burst = None;
        let mut outstanding = std::mem::take(&mut run.pending);
        outstanding.append(&mut run.carried);
        outstanding.append(&mut run.carried_in);
        let paced: Vec<Pid> = run.paced.drain(..).map(|(p, _)| p).collect();
        run.paced_peers.clear();
        run.next_round = run.sched.rounds.len();
        // A reduction not yet handed out will not be.
        ex.user_steps.retain(|(rid, _, handed_out)| *rid != id || *handed_out);
        if !ex.user_steps.iter().any(|(rid, _, _)| *rid == id) {
            ex.running.get_mut(id).unwrap().waiting_user = false;
        }
        // Its host-area operation is dropped (the area's sequence is
        // broken with the communicator); its request is done with.
        let mut dropped = Vec::new();
        ex.host_ops.retain(|(r, _, _)| {
            let ours = outstanding.contains(r);
            if ours {
                dropped.push(*r);
            }
            !ours
        });
        for r in dropped {
            self.reqs.remove(r.0);
        }
        let mut landing = Vec::new();
        let mut detached = Vec::new();
        for r in outstanding {
            if !self.exists(r) || self.withdraw_recv(r) {
                continue;
            }
            if self.is_complete(r) {
                self.take(r);
            } else if self.is_recv(r) {
                landing.push(r);
            } else {
                self.detach(r);
                detached.push(r);
            }
        }
        let run = ex.running.get_mut(id).unwrap();
        run.pending = landing;
        run.detached_sends = detached;
        for p in paced {
            self.pace(p, None);
        }
        self.advance(&mut ex, id);
        self.executor = ex;
    }

    /// Errors of finished schedules, by request (taken once).
    pub fn take_schedule_error(&mut self, req: ReqId) -> Option<String> {
        let i = self.schedule_errors.iter().position(|(r, _)| *r == req)?;
        Some(self.schedule_errors.swap_remove(i).1)
    }
}

#[cfg(test)]
mod tests {
    use super::Sites;

    fn sites(queue: u64) -> Sites {
        Sites { of_rank: vec![0, 1].into(), count: 2, wan_bps: Some(100_000_000), pace_share: 1.0, wan_queue: queue, link_bps: None }
    }

    #[test]
    fn pace_rate_leaves_what_the_queue_absorbs_unpaced() {
        let c = 12_500_000; // 100 Mbit/s in bytes/s
        // No queue assumed: the fair share, or a flow's part of the burst.
        assert_eq!(sites(0).pace_rate(16 * 4096, 4096), Some(c / 16));
        assert_eq!(sites(0).pace_rate(100_000, 25_000), Some(c / 4));
        // 16 flows of 4 KiB into a 32 KiB queue: half the burst is absorbed,
        // so each flow may go twice as fast.
        assert_eq!(sites(32 * 1024).pace_rate(16 * 4096, 4096), Some(c / 8));
        // Large bursts: close to the fair share.
        let r = sites(32 * 1024).pace_rate(16 << 20, 1 << 20).unwrap();
        assert!(r > c / 16 && r < c / 16 * 101 / 100, "{r}");
        // A burst that fits: no pacing; one just above: at most the link.
        assert_eq!(sites(32 * 1024).pace_rate(8 * 4096, 4096), None);
        assert_eq!(sites(32 * 1024).pace_rate(8 * 4096 + 8, 4097), Some(c));
        // A tiny part of a large burst: no slower than the floor.
        assert_eq!(sites(0).pace_rate(1 << 20, 100), Some(super::MIN_PACE_RATE));
        // Unknown bandwidth, pacing off, nothing to send: none.
        assert_eq!(Sites { wan_bps: None, ..sites(0) }.pace_rate(4000, 1000), None);
        assert_eq!(Sites { pace_share: 0.0, ..sites(0) }.pace_rate(4000, 1000), None);
        assert_eq!(sites(0).pace_rate(1000, 0), None);
    }

    /// A user-function reduction is handed out once, even when several
    /// threads ask for work before it is done (a second run would apply
    /// the reduction twice).
    #[test]
    fn a_user_step_is_handed_out_once() {
        use super::{byte_type, Reducer, Schedule, Step};
        use crate::{Engine, EngineConfig};
        use gridmpi_datatype::{Datatype, UserBuf};
        use std::sync::Arc;
        struct UserAdd;
        impl Reducer for UserAdd {
            unsafe fn reduce(&self, left: *const u8, inout: *mut u8, count: u64, _: &Arc<Datatype>) -> Result<(), String> {
                for i in 0..count as usize {
                    *inout.add(i) += *left.add(i);
                }
                Ok(())
            }
            fn is_commutative(&self) -> bool {
                true
            }
            fn calls_user_code(&self) -> bool {
                true
            }
        }
        let mut e = Engine::new(0, 1, EngineConfig::default());
        let (mut a, mut b) = ([1u8, 2], [10u8, 20]);
        // SAFETY: both arrays outlive the schedule.
        let (la, lb) = unsafe { (UserBuf::new(a.as_mut_ptr(), 2, byte_type()), UserBuf::new(b.as_mut_ptr(), 2, byte_type())) };
        let mut s = Schedule::new(crate::coll::sim::view(0, 1), 1);
        s.round().local.push(Step::Reduce { op: Arc::new(UserAdd), left: la, inout: lb });
        let req = e.start_schedule(s);
        e.progress_schedules();
        assert!(e.has_user_steps());
        let first = e.take_user_steps();
        assert_eq!(first.len(), 1);
        assert!(!e.has_user_steps());
        assert!(e.take_user_steps().is_empty(), "a step was handed out twice");
        // SAFETY: the schedule's buffers are alive.
        let r = unsafe { first[0].run() };
        e.user_step_done(first[0].id, r);
        e.progress_schedules();
        assert!(e.take(req).is_some());
        assert_eq!(b, [11, 22]);
    }

    /// A flow's cap is released once its sends are complete, while the
    /// round still waits for other traffic (so protocol replies to that
    /// peer are not held back by the pacing for the rest of the round).
    #[test]
    fn a_paced_flow_is_released_when_its_sends_complete() {
        use super::{byte_type, Schedule, Step};
        use gridmpi_datatype::UserBuf;
        use crate::{Action, Engine, EngineConfig, PeerParams};
        let mut e = Engine::new(0, 3, EngineConfig { eager_credit: 1 << 20 });
        for p in 1..3 {
            e.set_peer_params(p, PeerParams { eager_limit: 1 << 16, max_data_frame: 1 << 16, single_copy: false, single_copy_min: u64::MAX });
        }
        let (mut out, mut inb) = (vec![7u8; 100], vec![0u8; 100]);
        // SAFETY: both vectors outlive the schedule.
        let (ob, ib) = unsafe { (UserBuf::new(out.as_mut_ptr(), 100, byte_type()), UserBuf::new(inb.as_mut_ptr(), 100, byte_type())) };
        let mut s = Schedule::new(crate::coll::sim::view(0, 3), 9);
        let round = s.round();
        round.comm.push(Step::Send { to: 1, buf: ob });
        round.comm.push(Step::Recv { from: 2, buf: ib });
        round.pace.push((1, 1_000_000));
        let req = e.start_schedule(s);
        let mut paces = Vec::new();
        while let Some(a) = e.poll_action() {
            match a {
                Action::SetPace { peer, bytes_per_sec } => paces.push((peer, bytes_per_sec)),
                Action::Transmit(t) => {
                    if let Some(r) = t.notify {
                        e.handle_sent(r);
                    }
                }
                _ => {}
            }
        }
        assert_eq!(paces, vec![(1, Some(1_000_000))]);
        e.progress_schedules();
        // Released: lifted as soon as the connection has sent what it holds.
        assert_eq!(e.unsent_watch().collect::<Vec<_>>(), vec![1], "the cap outlived the flow's sends");
        e.handle_unsent(1, 0);
        let released: Vec<_> = std::iter::from_fn(|| e.poll_action())
            .filter_map(|a| match a {
                Action::SetPace { peer, bytes_per_sec } => Some((peer, bytes_per_sec)),
                _ => None,
            })
            .collect();
        assert_eq!(released, vec![(1, None)]);
        assert!(!e.is_complete(req), "the round finished without its receive");
        drop((out, inb));
    }
}

//! Partitioned communication (MPI 4.1, ch. 4): MPI_Psend_init,
//! MPI_Precv_init, MPI_Pready (and its range and list forms) and
//! MPI_Parrived, over the engine's point-to-point messages.
//!
//! The protocol, for a send of NS partitions of SB bytes each from S to R
//! on a communicator whose point-to-point context is `ctx`:
//!
//! - Partitioned traffic travels on context `ctx | PART_CTX_BIT`, a context
//!   no communicator is ever given, so no receive of the program (wildcards
//!   included) and no collective can match it.
//! - At MPI_Psend_init, S takes NS consecutive tags of its own for this
//!   send (a counter per (context, destination), from 1) and sends R a
//!   *match message* on tag 0 saying (user tag, first data tag, NS, SB).
//! - Each MPI_Precv_init at R posts one receive for a match message from S
//!   (tag 0). Match messages from S arrive in the order of S's
//!   MPI_Psend_init calls, and each goes to the oldest receive of R not yet
//!   matched with that (context, source, user tag), whichever receive
//!   posted the message's receive; one that no receive waits for yet is
//!   kept until one comes. So sends and receives match in the order they
//!   were initialized, as MPI's matching rules say, and no handshake is
//!   needed: S never waits for R.
//! - In every round (MPI_Start .. completion), MPI_Pready(p) at S sends
//!   partition p as one message with tag `first + p`. R, once started and
//!   matched, posts one receive per send partition, straight into the
//!   receive buffer where the partition's bytes fall on whole items of the
//!   receive datatype (the usual case: both sides partition alike), else
//!   into a bounce buffer unpacked at its offset on arrival. Messages of
//!   one tag keep their order, so a partition of round k+1 can never match
//!   a receive of round k.
//! - MPI_Parrived(q) at R is true once every send partition overlapping
//!   receive partition q has landed.
//!
//! Sends complete when all their partitions' sends have; receives when all
//! partitions have landed (count: the message's bytes that fit; a message
//! larger than the receive buffer is truncated and reported as such).

use crate::request::{ErrorKind, ReqId, Status};
use crate::slab::Slab;
use crate::{Engine, RecvArgs, SendArgs, SendMode};
use gridmpi_datatype::UserBuf;
use gridmpi_wire::Pid;
use std::collections::{HashMap, VecDeque};
use std::fmt;

/// Set in the context id of partitioned traffic. Communicators get context
/// ids counted up from small numbers (the shell refuses to go this high).
pub const PART_CTX_BIT: u32 = 1 << 31;

/// The tag of match messages; data tags start above it.
const MATCH_TAG: i32 = 0;
const MATCH_LEN: usize = 32;

/// Why a partitioned call was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartError {
    /// No such partitioned request.
    Invalid,
    /// A send-side call on a receive, or the other way round.
    WrongSide { needs: &'static str },
    NotActive,
    AlreadyActive,
    NoSuchPartition { partition: u64, partitions: u64 },
    AlreadyReady(u64),
    /// The message's items do not split into equal partitions.
    Uneven { items: u64, partitions: u64 },
    /// The tags of partitioned sends to one peer on one communicator ran out.
    TagsExhausted,
}

impl fmt::Display for PartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartError::Invalid => write!(f, "invalid partitioned request"),
            PartError::WrongSide { needs } => write!(f, "this call needs a partitioned {needs} request"),
            PartError::NotActive => write!(f, "the partitioned request is not active (call MPI_Start first)"),
            PartError::AlreadyActive => write!(f, "the partitioned request is already active (complete it before starting it again)"),
            PartError::NoSuchPartition { partition, partitions } => {
                write!(f, "partition {partition} does not exist (the request has {partitions}: 0..{})", *partitions as i64 - 1)
            }
            PartError::AlreadyReady(p) => write!(f, "partition {p} was already marked ready in this round"),
            PartError::Uneven { items, partitions } => write!(f, "{items} items do not split into {partitions} equal partitions"),
            PartError::TagsExhausted => write!(
                f,
                "this process has sent too many partitions to this peer on this communicator (2^31 over the communicator's life)"
            ),
        }
    }
}

/// A partitioned request of the engine (both sides).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartId(pub u32);

/// MPI_Psend_init.
pub struct PsendArgs {
    /// The communicator's point-to-point context.
    pub ctx: u32,
    /// Our rank in the communicator (what the receiver names as source).
    pub src: i32,
    /// None for MPI_PROC_NULL.
    pub dest: Option<Pid>,
    pub tag: i32,
    /// The whole message: `partitions` partitions of equal item counts.
    pub buf: UserBuf,
    pub partitions: u64,
}

/// MPI_Precv_init.
pub struct PrecvArgs {
    pub ctx: u32,
    /// The source's rank in the communicator; None for MPI_PROC_NULL.
    pub src: Option<i32>,
    pub tag: i32,
    pub buf: UserBuf,
    pub partitions: u64,
}

/// What a match message says about a send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Match {
    tag: i32,
    first_tag: i32,
    parts: u64,
    part_bytes: u64,
}

impl Match {
    fn encode(&self) -> [u8; MATCH_LEN] {
        let mut b = [0u8; MATCH_LEN];
        b[0..8].copy_from_slice(&(self.tag as i64).to_le_bytes());
        b[8..16].copy_from_slice(&(self.first_tag as i64).to_le_bytes());
        b[16..24].copy_from_slice(&self.parts.to_le_bytes());
        b[24..32].copy_from_slice(&self.part_bytes.to_le_bytes());
        b
    }

    fn decode(b: &[u8; MATCH_LEN]) -> Match {
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Match { tag: word(0) as i64 as i32, first_tag: word(8) as i64 as i32, parts: word(16), part_bytes: word(24) }
    }

    fn total(&self) -> u64 {
        self.parts.saturating_mul(self.part_bytes)
    }
}

struct SendChan {
    ctx: u32,
    src: i32,
    dest: Pid,
    buf: UserBuf,
    partitions: u64,
    first_tag: i32,
    /// The match message and its bytes (kept until it has left).
    match_send: Option<(ReqId, Box<[u8; MATCH_LEN]>)>,
    round: Option<SendRound>,
}

struct SendRound {
    user: ReqId,
    /// Per partition: not ready yet (None), sending, or sent.
    parts: Vec<PartState>,
    left: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PartState {
    Waiting,
    Moving(ReqId),
    Done,
}

struct RecvChan {
    ctx: u32,
    src: i32,
    tag: i32,
    buf: UserBuf,
    partitions: u64,
    /// This receive's receive for a match message (whoever it matches).
    match_recv: Option<(ReqId, Box<[u8; MATCH_LEN]>)>,
    matched: Option<Match>,
    round: Option<RecvRound>,
}

struct RecvRound {
    user: ReqId,
    /// Per send partition, once matched and started.
    parts: Vec<Landing>,
    left: u64,
    posted: bool,
}

enum Landing {
    /// Straight into the receive buffer.
    Direct(ReqId),
    /// Into a bounce buffer, then unpacked at its packed offset.
    Bounce(ReqId, Box<[u8]>, u64),
    Landed,
}

enum Chan {
    Send(SendChan),
    Recv(RecvChan),
    /// MPI_PROC_NULL on either side: every round completes at once.
    Null { recv: bool, partitions: u64, user: Option<ReqId> },
}

struct Entry {
    chan: Chan,
    /// MPI_Request_free while a round was active: dropped when it ends.
    freed: bool,
}

/// The engine's partitioned requests.
#[derive(Default)]
pub struct Partitioned {
    chans: Slab<Entry>,
    /// The next data tag per (context, destination).
    next_tag: HashMap<(u32, Pid), i32>,
    /// Receives not yet matched, in initialization order, per (context, source).
    unmatched: HashMap<(u32, i32), VecDeque<u32>>,
    /// Match messages that came before their receive, per (context, source).
    early: HashMap<(u32, i32), VecDeque<Match>>,
}

impl Engine {
    /// MPI_Psend_init: send the match message; nothing else moves until
    /// the request is started and partitions are ready.
    pub fn psend_init(&mut self, a: PsendArgs) -> Result<PartId, PartError> {
        let Some(dest) = a.dest else {
            return Ok(self.part_insert(Chan::Null { recv: false, partitions: a.partitions, user: None }));
        };
        let part_items = items_per_partition(&a.buf, a.partitions)?;
        let parts_i32 = i32::try_from(a.partitions).map_err(|_| PartError::TagsExhausted)?;
        let next = self.partitioned.next_tag.entry((a.ctx, dest)).or_insert(MATCH_TAG + 1);
        let first_tag = *next;
        *next = next.checked_add(parts_i32).ok_or(PartError::TagsExhausted)?;
        let m = Match { tag: a.tag, first_tag, parts: a.partitions, part_bytes: part_items * a.buf.datatype().size() };
        let bytes = Box::new(m.encode());
        // SAFETY: the box lives in the channel until the send completes.
        let ub = unsafe { UserBuf::new(bytes.as_ptr() as *mut u8, MATCH_LEN as u64, crate::sched::byte_type()) };
        let r = self.isend(SendArgs { ctx: a.ctx | PART_CTX_BIT, src: a.src, dest, tag: MATCH_TAG, buf: ub, mode: SendMode::Standard });
        Ok(self.part_insert(Chan::Send(SendChan {
            ctx: a.ctx,
            src: a.src,
            dest,
            buf: a.buf,
            partitions: a.partitions,
            first_tag,
            match_send: Some((r, bytes)),
            round: None,
        })))
    }

    /// MPI_Precv_init: post a receive for a match message from the source.
    pub fn precv_init(&mut self, a: PrecvArgs) -> Result<PartId, PartError> {
        let Some(src) = a.src else {
            return Ok(self.part_insert(Chan::Null { recv: true, partitions: a.partitions, user: None }));
        };
        items_per_partition(&a.buf, a.partitions)?;
        let bytes = Box::new([0u8; MATCH_LEN]);
        // SAFETY: the box lives in the channel until the receive completes
        // (or is cancelled).
        let ub = unsafe { UserBuf::new(bytes.as_ptr() as *mut u8, MATCH_LEN as u64, crate::sched::byte_type()) };
        let r = self.irecv(RecvArgs { ctx: a.ctx | PART_CTX_BIT, src: Some(src), tag: Some(MATCH_TAG), buf: ub });
        let id = self.part_insert(Chan::Recv(RecvChan {
            ctx: a.ctx,
            src,
            tag: a.tag,
            buf: a.buf,
            partitions: a.partitions,
            match_recv: Some((r, bytes)),
            matched: None,
            round: None,
        }));
        let key = (a.ctx, src);
        self.partitioned.unmatched.entry(key).or_default().push_back(id.0);
        // A match message another receive took for us may be waiting.
        let early = self.partitioned.early.get_mut(&key).and_then(|q| q.iter().position(|m| m.tag == a.tag).and_then(|i| q.remove(i)));
        if let Some(m) = early {
            self.part_matched(id.0, m);
        }
        Ok(id)
    }

    fn part_insert(&mut self, chan: Chan) -> PartId {
        PartId(self.partitioned.chans.insert(Entry { chan, freed: false }))
    }

    /// MPI_Start of a partitioned request: a new round; returns the request
    /// that completes with it.
    pub fn part_start(&mut self, id: PartId) -> Result<ReqId, PartError> {
        let user = self.external_request();
        let e = self.partitioned.chans.get_mut(id.0).ok_or(PartError::Invalid)?;
        match &mut e.chan {
            Chan::Null { recv, user: u, .. } => {
                let recv = *recv;
                *u = Some(user);
                // MPI_PROC_NULL: source MPI_PROC_NULL, tag MPI_ANY_TAG (both -1), nothing received.
                let status = if recv { Status { source: -1, tag: -1, ..Default::default() } } else { Status::default() };
                self.complete_external(user, status);
            }
            Chan::Send(s) => {
                if s.round.is_some() {
                    return Err(PartError::AlreadyActive);
                }
                let n = s.partitions as usize;
                s.round = Some(SendRound { user, parts: vec![PartState::Waiting; n], left: s.partitions });
                if n == 0 {
                    self.part_progress_one(id.0);
                }
            }
            Chan::Recv(r) => {
                if r.round.is_some() {
                    return Err(PartError::AlreadyActive);
                }
                r.round = Some(RecvRound { user, parts: Vec::new(), left: 0, posted: false });
                self.part_post_receives(id.0);
                self.part_progress_one(id.0);
            }
        }
        Ok(user)
    }

    /// MPI_Pready: partition `p` of the active round may go.
    pub fn pready(&mut self, id: PartId, p: u64) -> Result<(), PartError> {
        self.pready_many(id, &[p])
    }

    /// MPI_Pready_range and MPI_Pready_list: the partitions `parts` may go.
    /// All are checked before any is marked: a refused call changes nothing.
    pub fn pready_many(&mut self, id: PartId, parts: &[u64]) -> Result<(), PartError> {
        let e = self.partitioned.chans.get_mut(id.0).ok_or(PartError::Invalid)?;
        let s = match &mut e.chan {
            Chan::Null { recv: false, partitions, user } => {
                for &p in parts {
                    check_partition(p, *partitions)?;
                }
                // Active from its start until the program completes it.
                let active = user.is_some_and(|u| self.reqs.get(u.0).is_some());
                return if active { Ok(()) } else { Err(PartError::NotActive) };
            }
            Chan::Send(s) => s,
            _ => return Err(PartError::WrongSide { needs: "send" }),
        };
        for &p in parts {
            check_partition(p, s.partitions)?;
        }
        let round = s.round.as_ref().ok_or(PartError::NotActive)?;
        let mut seen = std::collections::HashSet::new();
        for &p in parts {
            if round.parts[p as usize] != PartState::Waiting || !seen.insert(p) {
                return Err(PartError::AlreadyReady(p));
            }
        }
        let items = s.buf.count() / s.partitions.max(1);
        let sends: Vec<(u64, SendArgs)> = parts
            .iter()
            .map(|&p| {
                let buf = s.buf.items(p * items, items).expect("partitions lie inside the buffer");
                (p, SendArgs { ctx: s.ctx | PART_CTX_BIT, src: s.src, dest: s.dest, tag: s.first_tag + p as i32, buf, mode: SendMode::Standard })
            })
            .collect();
        for (p, args) in sends {
            let r = self.isend(args);
            if let Some(Chan::Send(SendChan { round: Some(round), .. })) = self.partitioned.chans.get_mut(id.0).map(|e| &mut e.chan) {
                round.parts[p as usize] = PartState::Moving(r);
            }
        }
        self.part_progress_one(id.0);
        Ok(())
    }

    /// MPI_Parrived: whether receive partition `q` has landed. An inactive
    /// request (not started, or its round complete) has nothing outstanding.
    pub fn parrived(&mut self, id: PartId, q: u64) -> Result<bool, PartError> {
        self.part_progress_one(id.0);
        let e = self.partitioned.chans.get(id.0).ok_or(PartError::Invalid)?;
        let r = match &e.chan {
            Chan::Null { recv: true, partitions, .. } => {
                check_partition(q, *partitions)?;
                return Ok(true);
            }
            Chan::Recv(r) => r,
            _ => return Err(PartError::WrongSide { needs: "receive" }),
        };
        check_partition(q, r.partitions)?;
        let Some(round) = &r.round else { return Ok(true) };
        let Some(m) = r.matched.filter(|_| round.posted) else { return Ok(false) };
        let landed = |p: u64| matches!(round.parts.get(p as usize), Some(Landing::Landed) | None);
        let all = || (0..m.parts).all(landed);
        let rpart = r.buf.len() / r.partitions.max(1);
        let (lo, hi) = (q * rpart, (q + 1) * rpart);
        if rpart == 0 || m.part_bytes == 0 || lo >= m.total() {
            // No bytes of the message fall in this partition.
            return Ok(all());
        }
        let first = lo / m.part_bytes;
        let last = hi.div_ceil(m.part_bytes).min(m.parts);
        Ok((first..last).all(landed))
    }

    /// MPI_Request_free: forget the request (at the end of its round if one
    /// is active).
    pub fn part_free(&mut self, id: PartId) {
        let Some(e) = self.partitioned.chans.get_mut(id.0) else { return };
        e.freed = true;
        let mut match_recv = None;
        if let Chan::Recv(r) = &e.chan {
            // Not matched: withdraw from matching.
            if r.matched.is_none() {
                if let Some(q) = self.partitioned.unmatched.get_mut(&(r.ctx, r.src)) {
                    q.retain(|&x| x != id.0);
                }
            }
            // Take back its receive for a match message (one that already
            // came is routed by the progress below).
            match_recv = r.match_recv.as_ref().map(|(q, _)| *q);
        }
        if let Some(q) = match_recv {
            self.cancel(q);
        }
        self.part_progress_one(id.0);
        if self.part_idle(id.0) {
            self.part_drop(id.0);
        }
    }

    /// Move every partitioned request on; true if any round completed.
    #[inline]
    pub fn progress_partitioned(&mut self) -> bool {
        if self.partitioned.chans.is_empty() {
            return false;
        }
        self.advance_partitioned()
    }

    fn advance_partitioned(&mut self) -> bool {
        let ids: Vec<u32> = self.partitioned.chans.iter().map(|(i, _)| i).collect();
        let mut any = false;
        for id in ids {
            any |= self.part_progress_one(id);
        }
        any
    }

    /// Partitioned requests the engine holds (for leak checks).
    pub fn partitioned_requests(&self) -> usize {
        self.partitioned.chans.len()
    }

    /// Take what completed for request `id`; true if its round completed.
    fn part_progress_one(&mut self, id: u32) -> bool {
        let Some(e) = self.partitioned.chans.get_mut(id) else { return false };
        let freed = e.freed;
        let mut finished = None;
        let mut matched_msg = None;
        match &mut e.chan {
            Chan::Null { .. } => {}
            Chan::Send(s) => {
                if let Some((r, _)) = &s.match_send {
                    if take_done(&mut self.reqs, *r).is_some() {
                        s.match_send = None;
                    }
                }
                if let Some(round) = &mut s.round {
                    for p in round.parts.iter_mut() {
                        if let PartState::Moving(r) = *p {
                            if take_done(&mut self.reqs, r).is_some() {
                                *p = PartState::Done;
                                round.left -= 1;
                            }
                        }
                    }
                    if round.left == 0 {
                        finished = Some((round.user, Status::default()));
                        s.round = None;
                    }
                }
            }
            Chan::Recv(r) => {
                if let Some((q, bytes)) = &r.match_recv {
                    if let Some(st) = take_done(&mut self.reqs, *q) {
                        if !st.cancelled {
                            matched_msg = Some(Match::decode(bytes));
                        }
                        r.match_recv = None;
                    }
                }
                if let (Some(round), Some(m)) = (&mut r.round, r.matched) {
                    for l in round.parts.iter_mut() {
                        let req = match l {
                            Landing::Direct(q) | Landing::Bounce(q, _, _) => *q,
                            Landing::Landed => continue,
                        };
                        let Some(st) = take_done(&mut self.reqs, req) else { continue };
                        if let Landing::Bounce(_, data, offset) = l {
                            let n = (st.count as usize).min(data.len());
                            // SAFETY: the receive buffer is valid while the round is active.
                            unsafe { r.buf.write_packed(*offset, &data[..n]) };
                        }
                        *l = Landing::Landed;
                        round.left -= 1;
                    }
                    if round.posted && round.left == 0 {
                        let status = Status {
                            source: r.src,
                            tag: r.tag,
                            count: m.total().min(r.buf.len()),
                            cancelled: false,
                            error: (m.total() > r.buf.len()).then_some(ErrorKind::Truncate),
                        };
                        finished = Some((round.user, status));
                        r.round = None;
                    }
                }
            }
        }
        if let Some(m) = matched_msg {
            if let Some(Entry { chan: Chan::Recv(r), .. }) = self.partitioned.chans.get(id) {
                let key = (r.ctx, r.src);
                self.part_route_match(key, m);
            }
        }
        let completed = finished.is_some();
        if let Some((user, status)) = finished {
            self.complete_external(user, status);
            if freed {
                self.part_drop(id);
            }
        } else if freed && self.part_idle(id) {
            self.part_drop(id);
        }
        completed
    }

    /// A match message from `key`'s source: to its oldest unmatched receive
    /// with that tag, or kept until one is initialized.
    fn part_route_match(&mut self, key: (u32, i32), m: Match) {
        let chans = &self.partitioned.chans;
        let found = self.partitioned.unmatched.get(&key).and_then(|q| {
            q.iter().position(|&id| matches!(chans.get(id).map(|e| &e.chan), Some(Chan::Recv(r)) if r.tag == m.tag))
        });
        match found {
            Some(i) => {
                let id = self.partitioned.unmatched.get_mut(&key).and_then(|q| q.remove(i)).expect("found above");
                self.part_matched(id, m);
            }
            None => self.partitioned.early.entry(key).or_default().push_back(m),
        }
    }

    /// Receive `id` is matched with the send `m` describes.
    fn part_matched(&mut self, id: u32, m: Match) {
        if let Some(q) = self.partitioned.chans.get_mut(id).and_then(|e| match &mut e.chan {
            Chan::Recv(r) => Some(r),
            _ => None,
        }) {
            q.matched = Some(m);
            let key = (q.ctx, q.src);
            if let Some(u) = self.partitioned.unmatched.get_mut(&key) {
                u.retain(|&x| x != id);
            }
        }
        self.part_post_receives(id);
        self.part_progress_one(id);
    }

    /// Post the receives of a started, matched round.
    fn part_post_receives(&mut self, id: u32) {
        let Some(Entry { chan: Chan::Recv(r), .. }) = self.partitioned.chans.get_mut(id) else { return };
        let (Some(m), Some(round)) = (r.matched, r.round.as_mut()) else { return };
        if round.posted {
            return;
        }
        round.posted = true;
        let mut plan = Vec::with_capacity(m.parts as usize);
        let item = r.buf.datatype().size();
        let total = r.buf.len();
        for p in 0..m.parts {
            let (lo, len) = (p * m.part_bytes, m.part_bytes);
            let whole_items = item > 0 && lo % item == 0 && len % item == 0 && lo + len <= total;
            let target = if lo >= total {
                // Past the receive buffer: received and dropped (truncation).
                Target::Drop
            } else if whole_items {
                Target::Direct(r.buf.items(lo / item, len / item).expect("inside the buffer"))
            } else {
                Target::Bounce(lo)
            };
            plan.push((m.first_tag + p as i32, target));
        }
        let (ctx, src) = (r.ctx | PART_CTX_BIT, r.src);
        let mut parts = Vec::with_capacity(plan.len());
        for (tag, target) in plan {
            let landing = match target {
                Target::Direct(buf) => Landing::Direct(self.irecv(RecvArgs { ctx, src: Some(src), tag: Some(tag), buf })),
                Target::Drop => Landing::Direct(self.irecv(RecvArgs { ctx, src: Some(src), tag: Some(tag), buf: UserBuf::empty() })),
                Target::Bounce(offset) => {
                    let data = vec![0u8; m.part_bytes as usize].into_boxed_slice();
                    // SAFETY: the box lives in the round until the receive completes.
                    let buf = unsafe { UserBuf::new(data.as_ptr() as *mut u8, m.part_bytes, crate::sched::byte_type()) };
                    Landing::Bounce(self.irecv(RecvArgs { ctx, src: Some(src), tag: Some(tag), buf }), data, offset)
                }
            };
            parts.push(landing);
        }
        if let Some(Entry { chan: Chan::Recv(RecvChan { round: Some(round), .. }), .. }) = self.partitioned.chans.get_mut(id) {
            round.left = parts.len() as u64;
            round.parts = parts;
        }
    }

    fn part_idle(&self, id: u32) -> bool {
        match self.partitioned.chans.get(id).map(|e| &e.chan) {
            Some(Chan::Send(s)) => s.round.is_none() && s.match_send.is_none(),
            Some(Chan::Recv(r)) => r.round.is_none() && r.match_recv.is_none(),
            Some(Chan::Null { .. }) | None => true,
        }
    }

    fn part_drop(&mut self, id: u32) {
        self.partitioned.chans.remove(id);
    }
}

enum Target {
    Direct(UserBuf),
    Bounce(u64),
    Drop,
}

/// Take request `r` of the engine's table if it is done.
fn take_done(reqs: &mut Slab<crate::request::Request>, r: ReqId) -> Option<Status> {
    if reqs.get(r.0).is_some_and(|q| q.done) {
        reqs.remove(r.0).map(|q| q.status)
    } else {
        None
    }
}

fn items_per_partition(buf: &UserBuf, partitions: u64) -> Result<u64, PartError> {
    let uneven = || PartError::Uneven { items: buf.count(), partitions };
    if partitions == 0 {
        return if buf.count() == 0 { Ok(0) } else { Err(uneven()) };
    }
    if !buf.count().is_multiple_of(partitions) {
        return Err(uneven());
    }
    Ok(buf.count() / partitions)
}

fn check_partition(p: u64, partitions: u64) -> Result<(), PartError> {
    if p >= partitions {
        return Err(PartError::NoSuchPartition { partition: p, partitions });
    }
    Ok(())
}

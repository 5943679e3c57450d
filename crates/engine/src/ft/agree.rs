//! Agreement among the live processes of a communicator despite failures
//! (MPIX_Comm_agree; MPIX_Comm_shrink agrees on who failed and on the new
//! context id the same way).
//!
//! Each agreement is numbered per communicator (every member calls them in
//! the same order). The value agreed is a [`Value`]: `flag` AND-ed, `max`
//! max-ed and the failed-rank bitmap OR-ed over the contributions.
//!
//! The protocol relies on what gridmpirun guarantees: a process is declared
//! failed only when it is gone, and every survivor eventually learns of
//! every failure. The coordinator is the lowest rank not known to have
//! failed. Members send it their contribution; once it has a message from
//! every rank it does not know to have failed, it decides and sends the
//! decision to them. When the coordinator fails, each member turns to the
//! next one: with its contribution if it has no decision yet, or with the
//! decision it already took (`Decided`), which the new coordinator then
//! adopts, so no two survivors ever return different values. A member
//! ignores a decision from a coordinator it knows to have failed: it has
//! already turned to the next one, which will decide (that coordinator
//! adopts the old decision if any survivor took it).

use crate::request::{ReqId, Status};
use crate::Engine;
use gridmpi_wire::{AgreeStep, Frame, Header, Payload, Pid};
use std::collections::HashMap;
use std::sync::Arc;

/// What an agreement decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    pub flag: u32,
    pub max: u64,
    /// Bit `r` set: rank `r` of the communicator failed.
    pub failed: Vec<u8>,
}

impl Value {
    fn merge(&mut self, other: &Value) {
        self.flag &= other.flag;
        self.max = self.max.max(other.max);
        if self.failed.len() < other.failed.len() {
            self.failed.resize(other.failed.len(), 0);
        }
        for (a, b) in self.failed.iter_mut().zip(&other.failed) {
            *a |= *b;
        }
    }

    /// The failed ranks, ascending.
    pub fn failed_ranks(&self) -> Vec<i32> {
        (0..self.failed.len() * 8).filter(|&r| self.failed[r / 8] & (1 << (r % 8)) != 0).map(|r| r as i32).collect()
    }
}

/// One agreement's communicator: its point-to-point context (agreements
/// travel in their own frames, so any id that names the communicator at
/// every member will do), the pid of each rank, and ours.
#[derive(Clone)]
pub struct AgreeView {
    pub ctx: u32,
    pub pids: Arc<[Pid]>,
    pub rank: i32,
}

struct Instance {
    view: AgreeView,
    req: ReqId,
    mine: Value,
    /// The rank our message last went to.
    told: i32,
    /// Messages received as a possible coordinator: (value, already a decision).
    got: HashMap<i32, (Value, bool)>,
    decided: Option<Value>,
}

#[derive(Default)]
pub(crate) struct Agreements {
    active: HashMap<(u32, u32), Instance>,
    /// Messages for agreements this process has not started yet.
    early: Vec<(u32, u32, Pid, AgreeStep, Value)>,
    /// Finished agreements, kept to answer a coordinator that takes over
    /// later: (view, decision, rank last told of it).
    done: HashMap<(u32, u32), (AgreeView, Value, i32)>,
    /// Decisions of finished agreements, by request, for their caller.
    results: HashMap<ReqId, Value>,
}

impl Engine {
    fn coordinator(&self, view: &AgreeView) -> i32 {
        view.pids.iter().position(|&p| !self.ft.is_failed(p)).map_or(view.rank, |r| r as i32)
    }

    /// The ranks of `view` this process knows to have failed, as a bitmap.
    fn failed_bitmap(&self, view: &AgreeView) -> Vec<u8> {
        let mut b = vec![0u8; view.pids.len().div_ceil(8)];
        for (r, &p) in view.pids.iter().enumerate() {
            if self.ft.is_failed(p) {
                b[r / 8] |= 1 << (r % 8);
            }
        }
        b
    }

    fn send_agree(&mut self, view: &AgreeView, seq: u32, to: i32, step: AgreeStep, v: &Value) {
        let pid = view.pids[to as usize];
        if pid == self.me || self.ft.is_failed(pid) {
            return;
        }
        let h = Header::new(Frame::Agree { ctx: view.ctx, seq, step, flag: v.flag, max: v.max }, v.failed.len() as u32);
        self.transmit(pid, h, Payload::Owned(v.failed.clone()), None);
    }

    /// Start agreement `seq` on `view` with our `flag` and `max`; the
    /// request completes with the decision ([`Engine::take_agreement`]).
    pub fn start_agreement(&mut self, view: AgreeView, seq: u32, flag: u32, max: u64) -> ReqId {
        let req = self.external_request();
        let mine = Value { flag, max, failed: self.failed_bitmap(&view) };
        let key = (view.ctx, seq);
        let inst = Instance { view, req, mine, told: -1, got: HashMap::new(), decided: None };
        self.ft.agreements.active.insert(key, inst);
        let early: Vec<_> = {
            let a = &mut self.ft.agreements;
            let (mine, rest): (Vec<_>, Vec<_>) = a.early.drain(..).partition(|e| (e.0, e.1) == key);
            a.early = rest;
            mine
        };
        for (_, _, from, step, v) in early {
            self.agree_message(key, from, step, v);
        }
        self.agreement_turn(key);
        req
    }

    /// The decision of a finished agreement (taken once).
    pub fn take_agreement(&mut self, req: ReqId) -> Option<Value> {
        self.ft.agreements.results.remove(&req)
    }

    /// An Agree frame from `from`.
    pub(crate) fn agree_arrived(&mut self, from: Pid, ctx: u32, seq: u32, step: AgreeStep, flag: u32, max: u64, bitmap: &[u8]) {
        let v = Value { flag, max, failed: bitmap.to_vec() };
        let key = (ctx, seq);
        if self.ft.agreements.active.contains_key(&key) {
            self.agree_message(key, from, step, v);
            self.agreement_turn(key);
        } else if let Some((view, decision, _)) = self.ft.agreements.done.get(&key) {
            // A coordinator that took over after we finished: it gets the
            // decision we returned.
            if step != AgreeStep::Decide {
                if let Some(rank) = view.pids.iter().position(|&p| p == from) {
                    let (view, decision) = (view.clone(), decision.clone());
                    self.send_agree(&view, seq, rank as i32, AgreeStep::Decide, &decision);
                }
            }
        } else {
            self.ft.agreements.early.push((ctx, seq, from, step, v));
        }
    }

    fn agree_message(&mut self, key: (u32, u32), from: Pid, step: AgreeStep, mut v: Value) {
        let failed = self.ft.is_failed(from);
        let inst = self.ft.agreements.active.get_mut(&key).expect("an active agreement");
        let Some(rank) = inst.view.pids.iter().position(|&p| p == from) else { return };
        // Only the communicator's ranks can be in the bitmap (a longer one
        // from a broken peer must not name ranks that do not exist).
        let n = inst.view.pids.len();
        v.failed.resize(n.div_ceil(8), 0);
        if n % 8 != 0 {
            if let Some(last) = v.failed.last_mut() {
                *last &= (1u8 << (n % 8)) - 1;
            }
        }
        match step {
            AgreeStep::Contribute => {
                inst.got.insert(rank as i32, (v, false));
            }
            AgreeStep::Decided => {
                inst.got.insert(rank as i32, (v.clone(), true));
                inst.decided.get_or_insert(v);
            }
            // A coordinator we know to have failed: we turned to the next.
            AgreeStep::Decide if failed => {}
            AgreeStep::Decide => {
                inst.decided.get_or_insert(v);
            }
        }
    }

    /// Move agreement `key` on: tell the current coordinator what we have,
    /// decide if we are it and have heard from every live rank, finish
    /// once decided.
    fn agreement_turn(&mut self, key: (u32, u32)) {
        let Some(inst) = self.ft.agreements.active.get(&key) else { return };
        let view = inst.view.clone();
        let coord = self.coordinator(&view);
        if coord == view.rank {
            let mut inst = self.ft.agreements.active.remove(&key).unwrap();
            if inst.decided.is_none() {
                let live: Vec<i32> = (0..view.pids.len() as i32).filter(|&r| r != view.rank && !self.ft.is_failed(view.pids[r as usize])).collect();
                if live.iter().all(|r| inst.got.contains_key(r)) {
                    let mut d = inst.mine.clone();
                    for r in &live {
                        d.merge(&inst.got[r].0);
                    }
                    d.merge(&Value { flag: u32::MAX, max: 0, failed: self.failed_bitmap(&view) });
                    inst.decided = Some(d);
                }
            }
            if let Some(d) = inst.decided.clone() {
                for r in 0..view.pids.len() as i32 {
                    if r != view.rank {
                        self.send_agree(&view, key.1, r, AgreeStep::Decide, &d);
                    }
                }
                self.finish_agreement(key, inst, d, view.rank);
            } else {
                self.ft.agreements.active.insert(key, inst);
            }
            return;
        }
        let inst = self.ft.agreements.active.get_mut(&key).unwrap();
        if let Some(d) = inst.decided.clone() {
            let inst = self.ft.agreements.active.remove(&key).unwrap();
            self.finish_agreement(key, inst, d, coord);
            return;
        }
        if inst.told != coord {
            inst.told = coord;
            let mine = inst.mine.clone();
            self.send_agree(&view, key.1, coord, AgreeStep::Contribute, &mine);
        }
    }

    fn finish_agreement(&mut self, key: (u32, u32), inst: Instance, d: Value, told: i32) {
        let a = &mut self.ft.agreements;
        a.results.insert(inst.req, d.clone());
        // Keep the last few decisions per communicator for late coordinators.
        if a.done.keys().filter(|k| k.0 == key.0).count() >= 4 {
            if let Some(&old) = a.done.keys().filter(|k| k.0 == key.0).min_by_key(|k| k.1) {
                a.done.remove(&old);
            }
        }
        a.done.insert(key, (inst.view, d, told));
        self.complete_external(inst.req, Status { source: -1, tag: -1, count: 0, cancelled: false, error: None });
    }

    /// A process failed: agreements whose coordinator it was turn to the
    /// next; finished ones tell a new coordinator their decision.
    pub(crate) fn agreements_after_failure(&mut self) {
        let keys: Vec<(u32, u32)> = self.ft.agreements.active.keys().copied().collect();
        for k in keys {
            self.agreement_turn(k);
        }
        let done: Vec<((u32, u32), AgreeView, Value, i32)> =
            self.ft.agreements.done.iter().map(|(k, (v, d, t))| (*k, v.clone(), d.clone(), *t)).collect();
        for (k, view, d, told) in done {
            let coord = self.coordinator(&view);
            if coord != told && coord != view.rank {
                self.send_agree(&view, k.1, coord, AgreeStep::Decided, &d);
            }
            if let Some(e) = self.ft.agreements.done.get_mut(&k) {
                e.2 = coord;
            }
        }
    }
}

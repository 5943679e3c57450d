//! The simulated network every engine test runs on.
//!
//! Engines exchange frames over links with virtual time, driven the way the
//! real driver drives them (see engine.rs), with the transports' freedoms
//! exercised at random from a seed, so every failure replays:
//! - a link is a sender-side queue (the transport's queue and the socket's
//!   unsent bytes) feeding a wire of fixed bandwidth and random latency;
//!   frames keep their order on the wire, as on a TCP connection;
//! - a queued frame that has not started may be passed by a more urgent one,
//!   as the TCP transport orders its send queue ([`gridmpi_wire::Urgency`]);
//! - a frame's payload is read from user memory only when it leaves the
//!   queue, and only then is the engine told it was sent, so an engine that
//!   completed a send too early would be caught by corrupted data;
//! - pacing applies: a paced link sends at its rate, so its queue drains
//!   slowly, and the engine hears the link's unsent bytes as it would from
//!   a socket;
//! - Data payloads are delivered whole or landed piecewise into the target
//!   buffer the engine names (the transport's zero-copy path);
//! - single-copy reads sometimes fail (the engine must fall back).

use crate::engine::{Action, PeerParams};
use crate::{Engine, EngineConfig};
use gridmpi_wire::{Frame, Header, Payload, Pid, SentToken};
use std::collections::VecDeque;

pub struct Rng(pub u64);

#[allow(clippy::should_implement_trait)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

/// A frame written by the sender, not yet on the wire.
struct Queued {
    header: Header,
    payload: Payload,
    notify: Option<SentToken>,
}

#[derive(Default)]
struct Link {
    queue: VecDeque<Queued>,
    /// On the wire, in order: (arrival time, header, payload).
    wire: VecDeque<(u64, Header, Vec<u8>)>,
    /// Paced rate, bytes/s.
    pace: Option<u64>,
    /// When the wire is free for the next frame.
    free_at: u64,
    last_arrival: u64,
}

impl Link {
    fn unsent(&self) -> u64 {
        self.queue.iter().map(|q| q.header.frame_len() as u64).sum()
    }
}

pub struct Sim {
    pub engines: Vec<Engine>,
    /// links[from][to]
    links: Vec<Vec<Link>>,
    /// Virtual time, nanoseconds.
    pub now: u64,
    pub rng: Rng,
    /// Unpaced bandwidth of every link, bytes/s.
    bandwidth: u64,
    /// Latency range of one frame, nanoseconds.
    latency: (u64, u64),
    /// Every pacing rate applied: (rank, peer, rate).
    pub paces: Vec<(usize, Pid, Option<u64>)>,
    /// Every (rank, peer) whose unsent bytes an engine waited on.
    pub unsent_waits: Vec<(usize, Pid)>,
    /// Print the traffic from 0 to 1 (SIM_TRACE=1).
    trace: bool,
    /// Engines killed with [`Sim::kill`]: they take no part any more.
    pub dead: Vec<bool>,
}

impl Sim {
    pub fn new(n: usize, seed: u64, params: PeerParams, credit: u32) -> Sim {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut engines: Vec<Engine> = (0..n).map(|i| Engine::new(i as Pid, n, EngineConfig { eager_credit: credit })).collect();
        for e in engines.iter_mut() {
            for p in 0..n {
                e.set_peer_params(p as Pid, params);
            }
        }
        let bandwidth = rng.pick(&[100_000_000u64, 1_000_000_000, 10_000_000_000]);
        let lat = rng.pick(&[1_000u64, 50_000, 5_000_000]);
        Sim {
            engines,
            links: (0..n).map(|_| (0..n).map(|_| Link::default()).collect()).collect(),
            now: 0,
            rng,
            bandwidth,
            latency: (lat / 2, lat * 2),
            paces: Vec::new(),
            unsent_waits: Vec::new(),
            trace: std::env::var("SIM_TRACE").is_ok(),
            dead: vec![false; n],
        }
    }

    /// Let engine `i` hand out its actions and hear its links' unsent bytes,
    /// until it has nothing more to say; whether a schedule of it moved.
    fn settle_moved(&mut self, i: usize) -> bool {
        let mut moved = false;
        if self.dead[i] {
            return moved;
        }
        loop {
            moved |= self.engines[i].progress_schedules();
            self.engines[i].progress_rma();
            self.engines[i].progress_partitioned();
            let mut any = false;
            while let Some(a) = self.engines[i].poll_action() {
                any = true;
                self.act(i, a);
            }
            let watched: Vec<Pid> = self.engines[i].unsent_watch().collect();
            for p in watched {
                self.unsent_waits.push((i, p));
                let unsent = self.links[i][p as usize].unsent();
                self.engines[i].handle_unsent(p, unsent);
            }
            if !any && !self.engines[i].has_actions() {
                return moved;
            }
        }
    }

    /// Settle every engine, again while any schedule moved: an operation
    /// on a host area one engine released lets the others go on with no
    /// frame (they look at the area, as a spinning process does).
    pub fn settle_all(&mut self) {
        loop {
            let mut moved = false;
            for i in 0..self.engines.len() {
                moved |= self.settle_moved(i);
            }
            if !moved {
                return;
            }
        }
    }

    /// Put a frame from [`Engine::eager_now`] on its link at once, as the
    /// driver does when the transport takes it.
    pub fn send_now(&mut self, i: usize, t: gridmpi_wire::Transmit) {
        self.act(i, Action::Transmit(t));
    }

    fn act(&mut self, i: usize, a: Action) {
        match a {
            Action::Transmit(t) => {
                if self.trace && i == 0 && t.peer == 1 {
                    eprintln!("{} ns: queue 0->1 {:?} plen {}", self.now, t.header.frame, t.header.payload_len);
                }
                let q = &mut self.links[i][t.peer as usize].queue;
                // A frame may pass unstarted frames of lower urgency.
                let urgency = t.header.frame.urgency();
                let mut at = q.len();
                while at > 0 && q[at - 1].header.frame.urgency() < urgency {
                    at -= 1;
                }
                q.insert(at, Queued { header: t.header, payload: t.payload, notify: t.notify });
            }
            Action::SetPace { peer, bytes_per_sec } => {
                self.paces.push((i, peer, bytes_per_sec));
                self.links[i][peer as usize].pace = bytes_per_sec;
            }
            Action::RemoteRead { remote_addr, len, dst, req, .. } => {
                // Same address space: the "remote" buffer is readable here.
                // SAFETY: the sender's buffer stays valid until its Fin.
                let src = unsafe { std::slice::from_raw_parts(remote_addr as *const u8, len as usize) };
                let ok = self.rng.below(4) != 0;
                if ok {
                    // SAFETY: the receive buffer is valid while the request is pending.
                    unsafe { dst.write_packed(0, src) };
                }
                self.engines[i].handle_remote_read(req, ok);
            }
        }
    }

    /// Process `i` dies: what it queued and what is on its way to or from
    /// it is lost. Nobody is told (the test tells the survivors with
    /// `handle_proc_failed`, when it likes).
    pub fn kill(&mut self, i: usize) {
        self.dead[i] = true;
        for j in 0..self.engines.len() {
            for (a, b) in [(i, j), (j, i)] {
                self.links[a][b].queue.clear();
                self.links[a][b].wire.clear();
            }
        }
    }

    /// Whether anything is queued or in flight.
    pub fn busy(&self) -> bool {
        self.links.iter().flatten().any(|l| !l.queue.is_empty() || !l.wire.is_empty())
    }

    /// Move to the next event (a frame leaving a queue or arriving) and
    /// handle it; false when there is none. Events due at the same time are
    /// taken in random order.
    pub fn step(&mut self) -> bool {
        self.settle_all();
        let n = self.engines.len();
        let mut next: Option<u64> = None;
        let mut due: Vec<(usize, usize, bool)> = Vec::new();
        for a in 0..n {
            for b in 0..n {
                let l = &self.links[a][b];
                let mut consider = |t: u64, depart: bool| {
                    if next.is_none_or(|x| t < x) {
                        next = Some(t);
                        due.clear();
                    }
                    if next == Some(t) {
                        due.push((a, b, depart));
                    }
                };
                if !l.queue.is_empty() {
                    consider(l.free_at.max(self.now), true);
                }
                if let Some(&(t, _, _)) = l.wire.front() {
                    consider(t, false);
                }
            }
        }
        let Some(t) = next else { return false };
        self.now = t;
        let (a, b, depart) = due[self.rng.below(due.len() as u64) as usize];
        if depart {
            self.depart(a, b);
        } else {
            self.arrive(a, b);
        }
        true
    }

    /// The frame at the head of link a->b's queue goes on the wire.
    fn depart(&mut self, a: usize, b: usize) {
        let (lo, hi) = self.latency;
        let latency = lo + self.rng.below(hi - lo + 1);
        let link = &mut self.links[a][b];
        let q = link.queue.pop_front().expect("a queued frame");
        let mut payload = vec![0u8; q.payload.len() as usize];
        match &q.payload {
            Payload::None => {}
            Payload::Owned(v) => payload.copy_from_slice(v),
            Payload::Word(w) => payload.copy_from_slice(&w.to_le_bytes()),
            // SAFETY: the engine keeps the user buffer valid until told it was sent.
            Payload::User { buf, offset, len } => unsafe {
                buf.read_packed(*offset, &mut payload[..*len as usize]);
            },
        }
        let rate = link.pace.unwrap_or(self.bandwidth).max(1);
        let bytes = q.header.frame_len() as u64;
        link.free_at = self.now + bytes * 1_000_000_000 / rate;
        let arrival = (link.free_at + latency).max(link.last_arrival);
        link.last_arrival = arrival;
        // What went on the wire is what the peer decodes.
        let h = Header::decode(&q.header.encode()).expect("the engine emitted an invalid header");
        assert_eq!(h, q.header, "a header does not survive encoding");
        link.wire.push_back((arrival, h, payload));
        if let Some(token) = q.notify {
            self.engines[a].handle_sent(token);
        }
    }

    fn arrive(&mut self, a: usize, b: usize) {
        let (_, h, p) = self.links[a][b].wire.pop_front().expect("a frame on the wire");
        if self.dead[b] {
            return;
        }
        if self.trace && a == 0 && b == 1 {
            eprintln!("{} ns: deliver 0->1 {:?} plen {}", self.now, h.frame, h.payload_len);
        }
        let e = &mut self.engines[b];
        let from = a as Pid;
        if matches!(h.frame, Frame::Data { .. }) && self.rng.below(2) == 0 {
            // The zero-copy path: the transport asks where the payload goes
            // and lands it in pieces, as reads return them.
            let buf = e.data_target(from, &h).expect("protocol error between correct engines");
            let Frame::Data { offset, .. } = h.frame else { unreachable!() };
            let mut done = 0;
            while done < p.len() {
                let n = (1 + self.rng.below(p.len() as u64) as usize).min(p.len() - done);
                // SAFETY: the engine checked the range against the accepted length.
                unsafe { buf.write_packed(offset + done as u64, &p[done..done + n]) };
                done += n;
            }
            e.handle_data_landed(from, &h).expect("protocol error between correct engines");
        } else {
            e.handle_frame(from, &h, &p).expect("protocol error between correct engines");
        }
    }

    /// Run until nothing is queued, in flight or pending in an engine.
    pub fn run(&mut self) {
        while self.step() {}
        self.settle_all();
    }
}

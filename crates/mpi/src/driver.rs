//! The driver: runs the engine's I/O on the transports.
//!
//! It is the only part that knows both sides: it hands the engine's
//! actions to the transport of each peer (shared memory on this host, TCP
//! elsewhere), passes what the transports report back to the engine
//! through [`EngineSink`], performs single-copy reads, and tells the engine
//! how much each watched connection still holds unsent. It never blocks;
//! waiting is the caller's (state.rs), which sleeps on [`Driver::sleep_fd`].

use crate::trace::Tracer;
use gridmpi_engine::{Action, Engine, Payload, Pid, Transmit, UserBuf};
use gridmpi_transport::progress::{Arrivals, Poller};
use gridmpi_transport::shm::Shm;
use gridmpi_transport::tcp::Tcp;
use gridmpi_transport::{ConnEvent, Sink, Transport, TransportError};
use gridmpi_wire::{Header, SentToken};
use crate::wan_rate::{Counters, WanRate};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// How a peer is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Me,
    Shm,
    Tcp,
}

/// What a blocking receive found at the head of its peer's ring
/// ([`Driver::take_lone_eager`]).
pub enum Lone {
    /// Its message, copied into its buffer.
    Took(gridmpi_engine::Status),
    /// Nothing yet.
    Nothing,
    /// A frame it does not take: the usual road reads it.
    Other,
}

/// Fatal runtime error: a peer or the network failed. The job ends.
#[derive(Debug)]
pub struct Fatal(pub String);

/// A single-copy read under way: `len` bytes at `remote_addr` of `peer`
/// into `dst`. It is copied in pieces, possibly by several threads at once
/// (see [`Driver::claim_copy`]): `claimed` bytes are handed out, `returned`
/// of them reported back, `done` of those copied.
struct RemoteRead {
    id: u64,
    peer: Pid,
    remote_addr: u64,
    len: u64,
    dst: UserBuf,
    req: gridmpi_engine::ReqId,
    claimed: u64,
    returned: u64,
    done: u64,
    failed: bool,
}

/// A piece of a single-copy read handed out to be copied.
pub struct CopyPiece {
    read: u64,
    copy: gridmpi_transport::shm::Copy,
}

impl CopyPiece {
    /// Copy (no lock needed); whether all of it was read.
    pub fn run(&self) -> bool {
        self.copy.run().unwrap_or(false)
    }
}

/// The most a progress pass copies of single-copy reads itself. A read of a
/// large message takes hundreds of microseconds; done in one piece inside,
/// say, an MPI_Isend, it would hold back the sends the program issues next,
/// and with them the peer's reads of our messages (both directions of an
/// exchange would then take turns instead of running at once: 10 GB/s both
/// ways instead of 19 for 2 MiB messages).
const READ_PIECE: u64 = 256 * 1024;

/// The piece a blocked thread copies without the lock (see
/// [`Driver::claim_copy`]): large, since each piece costs a system call and
/// a round through the lock (256 KiB pieces made a 4 MiB message 7%
/// slower), yet small enough that the threads of a process share a large
/// message.
const COPY_PIECE: u64 = 1 << 20;

/// Who a peer is, for error messages and the trace.
#[derive(Clone, Debug)]
pub struct PeerName {
    /// How messages name it: "rank 3", or for a process of a joined job
    /// "rank 1 of job 5f3a..." (see runtime.rs: join_world).
    pub who: String,
    pub host: String,
    pub os_pid: u32,
    /// Its cluster's name when the job spans several, else empty.
    pub cluster: String,
}

/// What a rank says on stderr about connections re-made after a break:
/// each one, up to [`ResumeLog::LINES`] a minute (a flapping NAT could
/// otherwise print thousands), then how many more once the minute is over
/// (or at the end). `GRIDMPI_DEBUG=conn` says every one.
pub struct ResumeLog {
    every: bool,
    window: std::time::Instant,
    said: u32,
    held: u64,
    held_bytes: u64,
}

impl ResumeLog {
    const LINES: u32 = 5;
    const WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

    pub fn new(every: bool) -> ResumeLog {
        ResumeLog { every, window: std::time::Instant::now(), said: 0, held: 0, held_bytes: 0 }
    }

    fn resumed(&mut self, me: Pid, line: String, resent: u64) {
        if self.window.elapsed() >= Self::WINDOW {
            self.flush(me);
            self.window = std::time::Instant::now();
            self.said = 0;
        }
        if self.every || self.said < Self::LINES {
            self.said += 1;
            eprintln!("{line}");
        } else {
            self.held += 1;
            self.held_bytes += resent;
        }
    }

    /// Say how many were not said one by one.
    pub fn flush(&mut self, me: Pid) {
        if self.held > 0 {
            eprintln!(
                "gridmpi: rank {me}: {} more connections broke and were re-made within {} s ({} bytes written again; GRIDMPI_DEBUG=conn says each)",
                self.held,
                self.window.elapsed().as_secs().max(1),
                self.held_bytes
            );
            self.held = 0;
            self.held_bytes = 0;
        }
    }
}

/// Where transports report: the engine, and the tracer for connection events.
struct EngineSink<'a> {
    me: Pid,
    resume_log: &'a mut ResumeLog,
    engine: &'a mut Engine,
    tracer: Option<&'a mut Tracer>,
    names: &'a [PeerName],
}

impl Sink for EngineSink<'_> {
    fn frame(&mut self, peer: Pid, h: &Header, payload: &[u8]) -> Result<(), String> {
        self.engine.handle_frame(peer, h, payload).map_err(|e| e.reason)
    }

    fn data_target(&mut self, peer: Pid, h: &Header) -> Result<UserBuf, String> {
        self.engine.data_target(peer, h).map_err(|e| e.reason)
    }

    fn data_landed(&mut self, peer: Pid, h: &Header) -> Result<(), String> {
        self.engine.handle_data_landed(peer, h).map_err(|e| e.reason)
    }

    fn sent(&mut self, token: SentToken) {
        self.engine.handle_sent(token);
    }

    fn event(&mut self, ev: ConnEvent) {
        if let ConnEvent::Refused { peer, why } = &ev {
            // Said whatever the settings: a rank of the job could not
            // connect the way this one requires.
            let n = &self.names[*peer as usize];
            // One write: the line stays whole even if the job is killed
            // right after it.
            let line = format!("gridmpi[{}]: refused a connection from {}: {why}\n", self.me, n.who);
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        }
        if let ConnEvent::Resumed { peer, after, resent, why } = &ev {
            // Said whatever the settings: the job goes on, but a user
            // should know the network cut a connection. Links re-made
            // after a restart from a checkpoint broke as expected: said
            // only with GRIDMPI_DEBUG=conn.
            let n = &self.names[*peer as usize];
            let place = if n.cluster.is_empty() { n.host.clone() } else { format!("{} in cluster {}", n.host, n.cluster) };
            let line = format!(
                "gridmpi: rank {}: the connection with {} ({place}) broke ({why}); a new one took over after {:.2} s, {resent} bytes written again",
                self.me,
                n.who,
                after.as_secs_f64()
            );
            if why != gridmpi_transport::tcp::RESTARTED {
                self.resume_log.resumed(self.me, line, *resent);
            } else if self.resume_log.every {
                eprintln!("{line}");
            }
        }
        let Some(tr) = self.tracer.as_deref_mut() else { return };
        match ev {
            ConnEvent::Opened { peer, fd } => tr.conn_opened(peer, fd, &self.names[peer as usize].host),
            ConnEvent::Closed { peer, fd } => tr.conn_closed(peer, fd),
            ConnEvent::Tuned { peer, option, value } => tr.tuning(peer, option, &value),
            ConnEvent::Resumed { .. } | ConnEvent::Refused { .. } => {}
        }
    }
}

pub struct Driver {
    me: Pid,
    routes: Vec<Route>,
    tcp: Option<Tcp>,
    shm: Option<Shm>,
    /// Some peer is reached over TCP: poll the sockets while progressing.
    tcp_routes: bool,
    poller: Poller,
    names: Vec<PeerName>,
    debug_conn: bool,
    resume_log: ResumeLog,
    /// Single-copy reads under way, oldest first.
    reads: std::collections::VecDeque<RemoteRead>,
    next_read: u64,
    /// Bytes of frames (headers and payloads) handed to a transport, per
    /// peer (MPI_T's bytes-sent variables).
    sent_bytes: Vec<u64>,
    /// Scales the pacing rates of WAN connections to what the WAN carries
    /// now (see wan_rate.rs); None when not following.
    wan_rate: Option<WanRate>,
    debug_pace: bool,
    /// A fault-tolerant job (GRIDMPI_FT=ulfm): a transport error with a
    /// peer is not the job's end; the peer is suspected until gridmpirun
    /// says whether it failed (ft.rs).
    fault_tolerant: bool,
    /// Peers whose connection failed, suspected (fault-tolerant jobs).
    pub suspects: Vec<Pid>,
}

// SAFETY: the driver is used under the library's lock; the raw pointers its
// transports hold (shared memory, user buffers) are valid across threads.
unsafe impl Send for Driver {}

const TCP_TOKEN: u64 = 1;
const SHM_TOKEN: u64 = 2;

impl Driver {
    pub fn new(me: Pid, routes: Vec<Route>, tcp: Option<Tcp>, shm: Option<Shm>, names: Vec<PeerName>, debug_conn: bool) -> Result<Driver, String> {
        let poller = Poller::new().map_err(|e| format!("epoll: {e}"))?;
        if let Some(t) = &tcp {
            poller.watch(t.wait_fd(), TCP_TOKEN).map_err(|e| format!("epoll_ctl: {e}"))?;
        }
        if let Some(s) = &shm {
            poller.watch(s.wait_fd(), SHM_TOKEN).map_err(|e| format!("epoll_ctl: {e}"))?;
        }
        let tcp_routes = routes.contains(&Route::Tcp);
        let sent_bytes = vec![0; routes.len()];
        let resume_log = ResumeLog::new(debug_conn);
        Ok(Driver { me, routes, tcp, shm, tcp_routes, poller, names, debug_conn, resume_log, reads: Default::default(), next_read: 0, sent_bytes, wan_rate: None, debug_pace: false, fault_tolerant: false, suspects: Vec::new() })
    }

    /// Let the pacing rates of connections to other clusters follow what
    /// the WAN carries (`cluster_of` every pid's cluster, `me`'s included),
    /// from now on; None stops following. `debug` prints every change.
    pub fn follow_wan(&mut self, cluster_of: Option<&[u32]>, debug: bool) {
        self.wan_rate = cluster_of.map(|c| WanRate::new(c, c[self.me as usize], Instant::now()));
        self.debug_pace = debug;
    }

    /// Survive transport errors with a peer (a fault-tolerant job).
    pub fn set_fault_tolerant(&mut self, on: bool) {
        self.fault_tolerant = on;
    }

    /// `peer` failed: drop its connection and what is queued for it.
    pub fn forget_peer(&mut self, peer: Pid) {
        if let Some(t) = self.tcp.as_mut() {
            t.forget_peer(peer);
        }
        if let Some(s) = self.shm.as_mut() {
            s.forget_peer(peer);
        }
    }

    /// A transport's result: in a fault-tolerant job an error with a peer
    /// makes the peer a suspect (its process probably died; gridmpirun
    /// tells) instead of ending the job.
    #[inline]
    fn tolerate(&mut self, r: Result<bool, TransportError>) -> Result<bool, Fatal> {
        match r {
            Ok(b) => Ok(b),
            Err(e) => self.tolerate_error(e),
        }
    }

    #[cold]
    fn tolerate_error(&mut self, e: TransportError) -> Result<bool, Fatal> {
        match e {
            TransportError { peer: Some(p), message } if self.fault_tolerant => {
                if !self.suspects.contains(&p) {
                    if self.debug_conn {
                        eprintln!("gridmpi[{}]: suspecting {} ({message}); waiting for gridmpirun to say whether it failed", self.me, self.names[p as usize].who);
                    }
                    self.suspects.push(p);
                }
                Ok(true)
            }
            e => Err(self.fatal(e)),
        }
    }

    /// A process of a joined world, reached over TCP (its pid is the next
    /// one). A process that had no TCP transport (a world of one) is given
    /// `tcp` first.
    pub fn add_peer(&mut self, name: PeerName) {
        self.routes.push(Route::Tcp);
        self.names.push(name);
        self.sent_bytes.push(0);
        self.tcp_routes = true;
    }

    /// This process was restored from a checkpoint: make its sleeping set,
    /// wake eventfd and TCP listener real again (see `Tcp::after_restore`),
    /// at the descriptor numbers every other part still holds.
    pub fn after_restore(&mut self, bind: std::net::Ipv4Addr, ports: Option<(u16, u16)>) -> Result<(), String> {
        if self.shm.is_some() {
            return Err("shared-memory transports cannot be restored (checkpointing jobs use TCP only)".into());
        }
        self.poller.renew().map_err(|e| format!("epoll: {e}"))?;
        if let Some(t) = self.tcp.as_mut() {
            t.after_restore(bind, ports).map_err(|e| format!("cannot listen for TCP connections on {bind}: {e}"))?;
            self.poller.watch(t.wait_fd(), TCP_TOKEN).map_err(|e| format!("epoll_ctl: {e}"))?;
        }
        Ok(())
    }

    /// Where a peer is now (after a restart: a new host, pid and cluster).
    pub fn rename_peer(&mut self, peer: Pid, host: String, os_pid: u32, cluster: String) {
        let n = &mut self.names[peer as usize];
        n.host = host;
        n.os_pid = os_pid;
        n.cluster = cluster;
    }

    /// The TCP transport, if this process has one.
    pub fn tcp(&self) -> Option<&Tcp> {
        self.tcp.as_ref()
    }

    /// The TCP transport, if this process has one.
    pub fn tcp_mut(&mut self) -> Option<&mut Tcp> {
        self.tcp.as_mut()
    }

    /// Give a process that had none (a world of one) its TCP transport.
    pub fn install_tcp(&mut self, tcp: Tcp) -> Result<(), String> {
        self.poller.watch(tcp.wait_fd(), TCP_TOKEN).map_err(|e| format!("epoll_ctl: {e}"))?;
        self.tcp = Some(tcp);
        Ok(())
    }

    fn fatal(&self, e: TransportError) -> Fatal {
        match e.peer {
            Some(p) => {
                let n = &self.names[p as usize];
                let place = if n.cluster.is_empty() { n.host.clone() } else { format!("{} in cluster {}", n.host, n.cluster) };
                // ETIMEDOUT: the kernel gave up on unacknowledged data (on WAN
                // connections after GRIDMPI_WAN_OUTAGE_BUDGET).
                let why = if e.message.contains("os error 110") && !n.cluster.is_empty() && n.cluster != self.names[self.me as usize].cluster {
                    " (the WAN link between the clusters was down longer than GRIDMPI_WAN_OUTAGE_BUDGET)"
                } else {
                    ""
                };
                Fatal(format!("{} (pid {} on {place}): {}{why}", n.who, n.os_pid, e.message))
            }
            None => Fatal(e.message),
        }
    }

    /// Move everything forward without blocking. Returns whether anything
    /// happened (a frame moved or a request completed).
    ///
    /// `copy`: the pass may copy up to [`READ_PIECE`] of single-copy reads
    /// itself; otherwise a blocked thread copies them without the lock
    /// ([`Driver::claim_copy`]).
    pub fn progress(&mut self, engine: &mut Engine, tracer: &mut Option<Tracer>, copy: bool) -> Result<bool, Fatal> {
        self.follow_wan_now(engine, tracer);
        let mut any = false;
        let mut read_budget = if copy { READ_PIECE } else { 0 };
        for _round in 0..64 {
            let mut dispatched = false;
            while let Some(a) = engine.poll_action() {
                dispatched = true;
                self.dispatch(a, engine, tracer)?;
            }
            let completions = engine.completions();
            // Only what comes in (or a copy) may need another round: what
            // was just handed out cannot have been answered yet.
            let mut did = false;
            let mut sink = EngineSink { me: self.me, resume_log: &mut self.resume_log, engine: &mut *engine, tracer: tracer.as_mut(), names: &self.names };
            let shm = match self.shm.as_mut() {
                Some(s) => s.poll(&mut sink),
                None => Ok(false),
            };
            let tcp = match self.tcp.as_mut() {
                Some(t) if self.tcp_routes && shm.is_ok() => t.poll(&mut sink),
                _ => Ok(false),
            };
            did |= self.tolerate(shm)?;
            did |= self.tolerate(tcp)?;
            self.report_unsent(engine);
            if read_budget > 0 && !self.reads.is_empty() {
                read_budget = self.read_some(engine, read_budget);
                did = true;
            }
            if !did && engine.completions() == completions && !engine.has_actions() {
                any |= dispatched;
                break;
            }
            any = true;
            // What came in asked for nothing to be sent and no copying is
            // left for this pass: another round would only look for frames
            // that arrived meanwhile, which the caller's next pass finds
            // (and a blocked caller wants to see its completion now).
            if !engine.has_actions() && (read_budget == 0 || self.reads.is_empty()) {
                break;
            }
        }
        if let Some(tr) = tracer.as_mut() {
            tr.tick(any);
        }
        Ok(any)
    }

    /// Frames to `peer` go through shared memory.
    pub fn on_shm(&self, peer: Pid) -> bool {
        self.routes.get(peer as usize) == Some(&Route::Shm)
    }

    /// Send a frame from [`Engine::eager_now`]: into its shared-memory ring
    /// at once, or else (a socket route, a full ring, frames waiting ahead
    /// of it) queued in the engine with a copy of its payload, since the
    /// caller's buffer is the user's again when this returns.
    pub fn send_now(&mut self, t: Transmit, engine: &mut Engine) {
        let (peer, len) = (t.peer as usize, t.header.frame_len() as u64);
        let t = match (self.routes[peer], self.shm.as_mut()) {
            (Route::Shm, Some(s)) => match s.try_send_now(t) {
                Ok(()) => {
                    self.sent_bytes[peer] += len;
                    return;
                }
                Err(t) => t,
            },
            _ => t,
        };
        let payload = match t.payload {
            Payload::User { buf, offset, len } => {
                let mut v = vec![0u8; len as usize];
                // SAFETY: the caller's buffer is valid until we return.
                unsafe { buf.read_packed(offset, &mut v) };
                Payload::Owned(v)
            }
            p => p,
        };
        engine.transmit_later(Transmit { payload, ..t });
    }

    /// Send an eager frame of `header` and the caller's contiguous `body`
    /// (from [`Engine::eager_header`]) as [`Driver::send_now`] does.
    pub fn send_bytes_now(&mut self, peer: Pid, header: Header, body: &[u8], engine: &mut Engine) {
        let p = peer as usize;
        if let (Route::Shm, Some(s)) = (self.routes[p], self.shm.as_mut()) {
            if s.try_send_bytes(peer, &header, body) {
                self.sent_bytes[p] += header.frame_len() as u64;
                return;
            }
        }
        let payload = if body.is_empty() { Payload::None } else { Payload::Owned(body.to_vec()) };
        engine.transmit_later(Transmit { peer, header, payload, notify: None });
    }

    /// Whether a blocking receive from `peer` may take its message straight
    /// from the ring ([`Driver::take_lone_eager`]): `peer` writes to us
    /// through shared memory, and nothing of ours waits to go out (what we
    /// owe may be what the peer waits for before it sends).
    pub fn lone_road(&self, peer: Pid, engine: &Engine) -> bool {
        self.routes.get(peer as usize) == Some(&Route::Shm) && !engine.has_actions() && self.shm.as_ref().is_some_and(|s| s.backlog() == 0)
    }

    /// A probe of whether a frame from `peer` waits in its ring, to poll
    /// without the lock (see [`Driver::take_lone_eager`]).
    pub fn lone_probe(&self, peer: Pid) -> Option<gridmpi_transport::shm::ring::SlotProbe> {
        self.shm.as_ref()?.slot_probe(peer)
    }

    /// A blocking receive's quick road: if `peer`'s next frame is an eager
    /// message the receive takes ([`Engine::take_lone_eager`]), copy its
    /// payload to `dst` (which holds `room` bytes), consume the frame and
    /// return its status. Any other frame stays in the ring for the next
    /// progress (which also reports a corrupt ring).
    pub fn take_lone_eager(&mut self, engine: &mut Engine, peer: Pid, want: (u32, i32, Option<i32>), dst: *mut u8, room: u64) -> Lone {
        let Some(shm) = self.shm.as_mut() else { return Lone::Other };
        let (h, payload) = match shm.peek_next(peer) {
            Ok(Some(f)) => f,
            Ok(None) => return Lone::Nothing,
            Err(_) => return Lone::Other,
        };
        let (ctx, src, tag) = want;
        let Some(st) = engine.take_lone_eager(peer, &h, ctx, src, tag, room) else { return Lone::Other };
        if !payload.is_empty() {
            // SAFETY: the caller's buffer holds `room` bytes, and the
            // engine took the message only if its payload fits them.
            unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), dst, payload.len()) };
        }
        shm.consume_next(peer, &h);
        Lone::Took(st)
    }

    /// Judge the paced WAN connections' slices that are due (wan_rate.rs)
    /// and apply the rates that change.
    fn follow_wan_now(&mut self, engine: &mut Engine, tracer: &mut Option<Tracer>) {
        let (Some(w), Some(tcp)) = (self.wan_rate.as_mut(), self.tcp.as_mut()) else { return };
        let now = Instant::now();
        if !w.due(now) {
            return;
        }
        let mut sink = EngineSink { me: self.me, resume_log: &mut self.resume_log, engine, tracer: tracer.as_mut(), names: &self.names };
        let peers: Vec<Pid> = w.paced_peers().collect();
        for p in peers {
            let counters = tcp.peer_fd(p).and_then(wan_counters);
            if let Some(rate) = w.tick(p, now, counters) {
                tcp.set_pace(p, Some(rate), &mut sink);
            }
        }
        self.report_pace_changes();
    }

    /// Say the factor changes of wan_rate.rs on the debug channel.
    fn report_pace_changes(&mut self) {
        let Some(w) = self.wan_rate.as_mut() else { return };
        while let Some(ch) = w.poll_change() {
            if self.debug_pace {
                let toward = w.a_peer_in(ch.cluster).and_then(|p| self.names.get(p as usize)).map_or("", |n| n.cluster.as_str());
                eprintln!("gridmpi[{}]: {:.3} s: pacing toward {toward}: x{:.3} -> x{:.3} of the planned rates: {}", self.me, w.age().as_secs_f64(), ch.from, ch.to, ch.why);
            }
        }
    }

    /// Tell the engine how much the connections it waits on still hold.
    fn report_unsent(&mut self, engine: &mut Engine) {
        if !engine.watching_unsent() {
            return;
        }
        let watched: Vec<Pid> = engine.unsent_watch().collect();
        for p in watched {
            let unsent = match (self.routes[p as usize], self.tcp.as_ref()) {
                (Route::Tcp, Some(t)) => t.unsent(p),
                _ => 0,
            };
            engine.handle_unsent(p, unsent);
        }
    }

    fn dispatch(&mut self, a: Action, engine: &mut Engine, tracer: &mut Option<Tracer>) -> Result<(), Fatal> {
        let mut sink = EngineSink { me: self.me, resume_log: &mut self.resume_log, engine: &mut *engine, tracer: tracer.as_mut(), names: &self.names };
        match a {
            // A failed process gets nothing (its requests were failed;
            // the frame's notification, if any, names a request gone).
            Action::Transmit(t) if sink.engine.is_failed(t.peer) => Ok(()),
            Action::Transmit(t) => {
                self.sent_bytes[t.peer as usize] += t.header.frame_len() as u64;
                let r = match (self.routes[t.peer as usize], self.shm.as_mut(), self.tcp.as_mut()) {
                    (Route::Shm, Some(s), _) => s.send(t, &mut sink),
                    (Route::Tcp, _, Some(c)) => c.send(t, &mut sink),
                    (route, _, _) => return Err(Fatal(format!("internal error: a frame for rank {} on route {route:?}", t.peer))),
                };
                drop(sink);
                self.tolerate(r.map(|()| true)).map(drop)
            }
            Action::SetPace { peer, bytes_per_sec } => {
                // Only sockets are paced: memory is no shared bottleneck.
                if let (Route::Tcp, Some(c)) = (self.routes[peer as usize], self.tcp.as_mut()) {
                    let rate = match self.wan_rate.as_mut().filter(|w| w.watches(peer)) {
                        Some(w) => w.pace(peer, bytes_per_sec, Instant::now(), c.peer_fd(peer).and_then(wan_counters)),
                        None => bytes_per_sec,
                    };
                    c.set_pace(peer, rate, &mut sink);
                }
                drop(sink);
                self.report_pace_changes();
                Ok(())
            }
            Action::RemoteRead { peer, remote_addr, len, dst, req } => {
                // Copied piecewise (see READ_PIECE and claim_copy).
                let id = self.next_read;
                self.next_read += 1;
                self.reads.push_back(RemoteRead { id, peer, remote_addr, len, dst, req, claimed: 0, returned: 0, done: 0, failed: false });
                Ok(())
            }
        }
    }

    /// Copy up to `budget` bytes of single-copy reads; the budget left.
    fn read_some(&mut self, engine: &mut Engine, mut budget: u64) -> u64 {
        while budget > 0 {
            let Some(piece) = self.claim_copy_of(budget) else { break };
            budget -= piece.copy.len();
            let ok = piece.run();
            self.finish_copy(piece, ok, engine);
        }
        budget
    }

    /// Hand out the next piece of a single-copy read to copy, if any. The
    /// caller runs it (with [`CopyPiece::run`]) without holding the lock,
    /// so a thread copies while the others keep communicating (and several
    /// threads share a large message), then reports it with
    /// [`Driver::finish_copy`].
    pub fn claim_copy(&mut self) -> Option<CopyPiece> {
        self.claim_copy_of(COPY_PIECE)
    }

    fn claim_copy_of(&mut self, max: u64) -> Option<CopyPiece> {
        let shm = self.shm.as_ref()?;
        let r = self.reads.iter_mut().find(|r| !r.failed && r.claimed < r.len)?;
        let n = (r.len - r.claimed).min(max);
        let copy = shm.copy(r.peer, r.remote_addr + r.claimed, r.claimed, n, &r.dst);
        r.claimed += n;
        Some(CopyPiece { read: r.id, copy })
    }

    /// A piece handed out by [`Driver::claim_copy`] was copied (`ok`) or
    /// not. A read whose pieces are all in (or one failed) is reported to
    /// the engine, which falls back to the rings for a failed one.
    pub fn finish_copy(&mut self, piece: CopyPiece, ok: bool, engine: &mut Engine) {
        let Some(i) = self.reads.iter().position(|r| r.id == piece.read) else { return };
        let r = &mut self.reads[i];
        r.returned += piece.copy.len();
        if ok {
            r.done += piece.copy.len();
        } else {
            if self.debug_conn && !r.failed {
                eprintln!("gridmpi[{}]: single-copy read from rank {} failed; copying through the ring", self.me, r.peer);
            }
            // Nothing more of it is handed out; it ends when the pieces out are back.
            r.failed = true;
        }
        if r.done == r.len || (r.failed && r.returned == r.claimed) {
            let r = self.reads.remove(i).expect("the read just looked at");
            engine.handle_remote_read(r.req, !r.failed);
        }
    }

    /// How many single-copy reads were ever queued (changes when there is
    /// new copying for waiting threads to take on).
    pub fn reads_queued(&self) -> u64 {
        self.next_read
    }

    /// Whether a thread could take a piece of copying ([`Driver::claim_copy`]).
    pub fn busy(&self) -> bool {
        self.reads.iter().any(|r| !r.failed && r.claimed < r.len)
    }

    /// Before sleeping: arm the transports' wakeups and look once more.
    /// Returns false if the caller must not sleep.
    pub fn prepare_sleep(&mut self, engine: &Engine) -> bool {
        if engine.has_actions() || self.busy() {
            return false;
        }
        // Both run even when the first says no: `after_sleep` undoes both.
        let areas = engine.host_prepare_sleep();
        self.shm.as_mut().is_none_or(|s| s.prepare_sleep()) && areas
    }

    /// After waking (or deciding not to sleep after `prepare_sleep`).
    pub fn after_sleep(&mut self, engine: &Engine) {
        engine.host_after_sleep();
        if let Some(s) = self.shm.as_mut() {
            s.after_sleep();
        }
        self.poller.clear_wake();
    }

    /// While frames wait for room in shared-memory rings: what says room
    /// was made (a blocked call spins on it too; no frame comes for it).
    pub fn room_probe(&self) -> Option<gridmpi_transport::shm::ring::RoomProbe> {
        self.shm.as_ref()?.room_probe()
    }

    /// What a blocked call may spin on without the lock.
    pub fn arrivals(&self) -> Arrivals {
        let tcp = self.tcp.as_ref().filter(|_| self.tcp_routes).map(|t| t.wait_fd());
        Arrivals::new(self.shm.as_ref().map(|s| s.arrival_probe()), tcp)
    }

    /// The fd to sleep on without holding the lock (see progress.rs).
    pub fn sleep_fd(&self) -> RawFd {
        self.poller.sleep_fd()
    }

    /// How long a sleeper may sleep before progress must run again even if
    /// nothing wakes it.
    pub fn sleep_timeout(&self, engine: &Engine) -> Option<Duration> {
        [engine.poll_timeout(), self.shm.as_ref().and_then(|s| s.next_deadline()), self.tcp.as_ref().and_then(|t| t.next_deadline())]
            .into_iter()
            .flatten()
            .min()
    }

    /// Wake threads sleeping on [`Driver::sleep_fd`].
    pub fn wake(&self) {
        self.poller.wake();
    }

    /// Frames not yet handed to the kernel or a ring.
    pub fn outbound_pending(&self, engine: &Engine) -> bool {
        engine.has_actions() || self.shm.as_ref().is_some_and(|s| s.backlog() > 0) || self.tcp.as_ref().is_some_and(|t| t.backlog() > 0)
    }

    /// Bytes of frames handed to a transport for each peer so far.
    pub fn sent_bytes(&self) -> &[u64] {
        &self.sent_bytes
    }

    /// The socket of the TCP connection with `peer`, if one is established.
    pub fn tcp_fd(&self, peer: Pid) -> Option<std::os::fd::RawFd> {
        self.tcp.as_ref()?.peer_fd(peer)
    }

    /// Connections with `peer` re-made after a break, and bytes resent.
    pub fn tcp_resumptions(&self, peer: Pid) -> (u64, u64) {
        self.tcp.as_ref().map_or((0, 0), |t| t.resumptions(peer))
    }

    /// The pacing rate the engine asked for on the connection with `peer`.
    pub fn tcp_pace(&self, peer: Pid) -> Option<u64> {
        self.tcp.as_ref()?.pace(peer)
    }

    /// The job is finishing: peers closing their connections is normal now.
    pub fn shutdown(&mut self) {
        if let Some(t) = self.tcp.as_mut() {
            t.finalizing = true;
        }
    }

    /// Close every connection (after the final barrier).
    pub fn close(&mut self, engine: &mut Engine, tracer: &mut Option<Tracer>) {
        let mut sink = EngineSink { me: self.me, resume_log: &mut self.resume_log, engine: &mut *engine, tracer: tracer.as_mut(), names: &self.names };
        if let Some(t) = self.tcp.as_mut() {
            t.close(&mut sink);
        }
        self.resume_log.flush(self.me);
    }
}

/// The counters wan_rate.rs judges a paced episode by, from the
/// connection's TCP_INFO; None if the kernel does not report them.
fn wan_counters(fd: RawFd) -> Option<Counters> {
    use crate::trace::field_index;
    let (v, avail) = crate::trace::tcp_info(fd)?;
    let field = |name: &str| {
        let i = field_index(name);
        (avail >> i & 1 == 1).then_some(v[i])
    };
    let queue_us = match (field("rtt"), field("min_rtt")) {
        (Some(rtt), Some(least)) if least > 0 => Some(rtt.saturating_sub(least)),
        _ => None,
    };
    Some(Counters { bytes_sent: field("bytes_sent")?, bytes_retrans: field("bytes_retrans")?, busy_us: field("busy_time").unwrap_or(0), queue_us })
}

//! The shared-memory transport between the processes of one host.
//!
//! Every process owns an inbox segment with one ring per local process
//! ([`ring`]); it writes frames into its ring in each peer's inbox and
//! reads its own inbox. A frame whose ring is full waits in a per-peer
//! backlog. A process about to sleep sets a flag in its inbox; a writer that
//! sees it rings the sleeper's doorbell (a datagram socket the sleeper's
//! epoll set watches).
//!
//! Large messages do not go through the rings: the engine asks for a
//! single-copy read of the sender's buffer ([`Shm::read_remote`], with
//! process_vm_readv) and falls back to the rings when the read fails.
//!
//! Setting up takes three steps with a barrier between each, which the
//! caller provides (through the process manager): [`Shm::create`] (every
//! process creates its inbox), [`Shm::map_peers`] (every process maps its
//! peers' inboxes), [`Shm::unlink`] (the names can go).

pub mod host;
pub mod ring;

use crate::sys::{self, Doorbell};
use crate::{terr, Sink, Transport, TransportError};
use gridmpi_datatype::UserBuf;
use gridmpi_wire::{Header, Payload, Pid, Transmit, HEADER_LEN};
use ring::{Inbox, PeerInbox};
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::time::Duration;

pub struct Shm {
    me: Pid,
    inbox: Inbox,
    /// Local pids in local-index order (the ring index of each in our inbox).
    local: Vec<Pid>,
    /// OS process ids by pid (for single-copy reads).
    os_pids: Vec<u32>,
    /// Mapped inboxes of local peers, by pid.
    peers: Vec<Option<PeerInbox>>,
    /// Frames waiting for room in a peer's ring, by pid.
    backlog: Vec<VecDeque<Transmit>>,
    backlog_len: usize,
    doorbell: Doorbell,
    ringer: Doorbell,
    /// Names: inbox segments and doorbells, by pid.
    names: Vec<String>,
}

// SAFETY: the transport is used by one thread at a time (under the
// library's lock); its raw pointers (shared memory, user buffers) are valid
// from any thread.
unsafe impl Send for Shm {}

impl Shm {
    /// Create our inbox with one ring of `ring_size` bytes per local process,
    /// and our doorbell. `prefix` makes the names unique to the job;
    /// `os_pids` are the OS process ids of every process of the job.
    pub fn create(prefix: &str, me: Pid, local: Vec<Pid>, os_pids: Vec<u32>, ring_size: usize) -> Result<Shm, String> {
        let n = os_pids.len();
        let names: Vec<String> = (0..n).map(|p| format!("{prefix}-{p}")).collect();
        let seg = format!("/{}", names[me as usize]);
        let inbox = Inbox::create(&seg, local.len(), ring_size).map_err(|e| format!("cannot create shared memory {seg}: {e}"))?;
        let doorbell = Doorbell::bind(&names[me as usize]).map_err(|e| format!("cannot bind the shared-memory doorbell: {e}"))?;
        let ringer = Doorbell::sender().map_err(|e| format!("socket: {e}"))?;
        Ok(Shm {
            me,
            inbox,
            local,
            os_pids,
            peers: (0..n).map(|_| None).collect(),
            backlog: (0..n).map(|_| VecDeque::new()).collect(),
            backlog_len: 0,
            doorbell,
            ringer,
            names,
        })
    }

    /// Map every local peer's inbox (once every local process has created its own).
    pub fn map_peers(&mut self) -> Result<(), String> {
        let my_ring = self.local.iter().position(|&p| p == self.me).expect("we are local");
        for &p in &self.local {
            if p == self.me {
                continue;
            }
            let seg = format!("/{}", self.names[p as usize]);
            let inbox = PeerInbox::open(&seg, my_ring).map_err(|e| format!("cannot map rank {p}'s shared memory {seg}: {e}"))?;
            self.peers[p as usize] = Some(inbox);
        }
        Ok(())
    }

    /// `peer` failed (a fault-tolerant job): frames still waiting for room
    /// in its ring are dropped (it will never drain it).
    pub fn forget_peer(&mut self, peer: Pid) {
        if let Some(q) = self.backlog.get_mut(peer as usize) {
            self.backlog_len -= q.len();
            q.clear();
        }
    }

    /// Remove our inbox's name (once every local process has mapped it).
    pub fn unlink(&mut self) {
        self.inbox.unlink();
    }

    /// A lock-free view of whether our rings hold data (see progress::Arrivals).
    pub fn arrival_probe(&self) -> ring::ArrivalProbe {
        self.inbox.arrival_probe()
    }

    /// While frames wait for room: a lock-free view of whether the rings
    /// they wait for were read from since they were found full.
    pub fn room_probe(&self) -> Option<ring::RoomProbe> {
        if self.backlog_len == 0 {
            return None;
        }
        let mut probes = self.backlog.iter().zip(&self.peers).filter(|(q, _)| !q.is_empty()).filter_map(|(_, p)| p.as_ref().map(|p| p.room_watch()));
        let mut all = probes.next()?;
        for p in probes {
            all.join(p);
        }
        Some(all)
    }

    /// The largest frame a ring carries whole.
    pub fn max_frame(&self) -> usize {
        self.inbox.ring_size() / 2 - HEADER_LEN - 8
    }

    /// A copy of `len` bytes at `remote_addr` of local process `peer` into
    /// `dst` at packed offset `at` (a single-copy read), to run with
    /// [`Copy::run`], which needs no access to the transport: the caller may
    /// run it without holding whatever protects the transport.
    pub fn copy(&self, peer: Pid, remote_addr: u64, at: u64, len: u64, dst: &UserBuf) -> Copy {
        let mut runs = Vec::new();
        dst.runs(at, len, usize::MAX, &mut runs);
        Copy { os_pid: self.os_pids[peer as usize], remote_addr, runs, len }
    }

    /// Write a frame now, or give it back: when its peer is not on this
    /// host, frames to it wait in the backlog (it must not overtake them),
    /// or its ring has no room. The frame names no request to notify.
    pub fn try_send_now(&mut self, t: Transmit) -> Result<(), Transmit> {
        debug_assert!(t.notify.is_none());
        let p = t.peer as usize;
        if self.peers.get(p).is_none_or(|x| x.is_none()) || !self.backlog[p].is_empty() {
            return Err(t);
        }
        if self.write_frame(&t) {
            Ok(())
        } else {
            Err(t)
        }
    }

    /// Write one frame into its peer's ring; give it back when the ring is full.
    fn write_to_ring(&mut self, t: Transmit, sink: &mut dyn Sink) -> Option<Transmit> {
        if !self.write_frame(&t) {
            return Some(t);
        }
        if let Some(token) = t.notify {
            sink.sent(token);
        }
        None
    }

    /// Copy a frame into its peer's ring (and ring its doorbell if it
    /// sleeps); false when the ring has no room.
    fn write_frame(&mut self, t: &Transmit) -> bool {
        self.write_with(t.peer, &t.header, t.payload.len() as usize, |body| match &t.payload {
            Payload::None => {}
            Payload::Owned(v) => body.copy_from_slice(v),
            Payload::Word(w) => body.copy_from_slice(&w.to_le_bytes()),
            // SAFETY: the engine keeps the user buffer valid until told it was sent.
            Payload::User { buf, offset, len } => unsafe {
                buf.read_packed(*offset, &mut body[..*len as usize]);
            },
        })
    }

    /// Write a frame of `header` and `body` (the caller's contiguous bytes)
    /// now, as [`Shm::try_send_now`] does; false when it cannot.
    pub fn try_send_bytes(&mut self, peer: Pid, header: &Header, body: &[u8]) -> bool {
        let p = peer as usize;
        if self.peers.get(p).is_none_or(|x| x.is_none()) || !self.backlog[p].is_empty() {
            return false;
        }
        self.write_with(peer, header, body.len(), |slot| slot.copy_from_slice(body))
    }

    /// Copy a frame of `header` and `len` payload bytes (written by `fill`)
    /// into `peer`'s ring, ringing its doorbell if it sleeps; false when the
    /// ring has no room.
    #[inline(always)]
    fn write_with(&mut self, peer: Pid, header: &Header, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        let p = peer as usize;
        let peer = self.peers[p].as_mut().expect("a frame for a process that is not on this host");
        let header = header.encode();
        let ok = peer.writer().try_write(HEADER_LEN + len, |slot| {
            slot[..HEADER_LEN].copy_from_slice(&header);
            fill(&mut slot[HEADER_LEN..]);
        });
        if !ok {
            return false;
        }
        if peer.needs_wakeup() {
            self.ringer.ring(&self.names[p]);
        }
        true
    }

    fn flush_backlog(&mut self, sink: &mut dyn Sink) -> bool {
        let mut did = false;
        for p in 0..self.backlog.len() {
            while let Some(t) = self.backlog[p].pop_front() {
                self.backlog_len -= 1;
                match self.write_to_ring(t, sink) {
                    None => did = true,
                    Some(t) => {
                        self.backlog[p].push_front(t);
                        self.backlog_len += 1;
                        break;
                    }
                }
            }
        }
        did
    }

    /// The frame at the head of ring `i` of our inbox, decoded and checked,
    /// with its payload (read in place) and its length in the ring (the
    /// quick road's look; `poll` has its own copy of these lines).
    #[inline(always)]
    fn head(&mut self, i: usize) -> Result<Option<(Header, &[u8], usize)>, TransportError> {
        let pid = self.local[i];
        let frame = match self.inbox.reader(i).peek() {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(None),
            Err(e) => return Err(terr(Some(pid), format!("corrupt shared-memory ring: {e}"))),
        };
        let hb: &[u8; HEADER_LEN] = frame[..HEADER_LEN].try_into().expect("a ring frame holds a header");
        let h = Header::decode(hb).map_err(|e| terr(Some(pid), format!("malformed frame in shared memory: {e}")))?;
        let len = h.frame_len();
        if frame.len() < len {
            return Err(terr(Some(pid), "a shared-memory frame is shorter than its header says"));
        }
        Ok(Some((h, &frame[HEADER_LEN..len], len)))
    }

    /// The next frame from `peer`, without handing it to a sink: for a
    /// caller that waits for one frame from one peer and takes it straight
    /// from the ring (a blocking receive's quick road). None when nothing
    /// waits or `peer` is not on this host; a frame left there is read by
    /// the next [`Transport::poll`] as usual. Take it with
    /// [`Shm::consume_next`].
    pub fn peek_next(&mut self, peer: Pid) -> Result<Option<(Header, &[u8])>, TransportError> {
        let Some(i) = self.local.iter().position(|&p| p == peer) else { return Ok(None) };
        if peer == self.me {
            return Ok(None);
        }
        Ok(self.head(i)?.map(|(h, payload, _)| (h, payload)))
    }

    /// A probe of whether a frame from `peer` waits, for polling without
    /// the transport (see [`ring::SlotProbe`]); None if `peer` is not on
    /// this host.
    pub fn slot_probe(&self, peer: Pid) -> Option<ring::SlotProbe> {
        let i = self.local.iter().position(|&p| p == peer)?;
        (peer != self.me).then(|| self.inbox.slot_probe(i))
    }

    /// Consume the frame [`Shm::peek_next`] returned for `peer`.
    pub fn consume_next(&mut self, peer: Pid, h: &Header) {
        if let Some(i) = self.local.iter().position(|&p| p == peer) {
            self.inbox.reader(i).consume(h.frame_len());
        }
    }
}

/// A single-copy read ready to run (see [`Shm::copy`]).
pub struct Copy {
    os_pid: u32,
    remote_addr: u64,
    runs: Vec<(*mut u8, usize)>,
    len: u64,
}

// SAFETY: the runs point into a receive buffer that its request keeps valid
// (and untouched by anyone else) until the copy is reported; any thread may
// fill it.
unsafe impl Send for Copy {}

impl Copy {
    /// Copy; whether all of it was read.
    pub fn run(&self) -> std::io::Result<bool> {
        Ok(sys::read_process_memory(self.os_pid, self.remote_addr, &self.runs)? as u64 == self.len)
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Transport for Shm {
    fn send(&mut self, t: Transmit, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let p = t.peer as usize;
        if self.peers.get(p).is_none_or(|x| x.is_none()) {
            return Err(terr(Some(t.peer), "not reachable through shared memory"));
        }
        if !self.backlog[p].is_empty() {
            self.backlog[p].push_back(t);
            self.backlog_len += 1;
            return Ok(());
        }
        if let Some(t) = self.write_to_ring(t, sink) {
            self.backlog[p].push_back(t);
            self.backlog_len += 1;
        }
        Ok(())
    }

    /// Read every frame now in the rings (each ring once over).
    fn poll(&mut self, sink: &mut dyn Sink) -> Result<bool, TransportError> {
        let mut did = self.backlog_len > 0 && self.flush_backlog(sink);
        for i in 0..self.local.len() {
            let pid = self.local[i];
            if pid == self.me {
                continue;
            }
            // At most a ring's worth per pass, so one busy peer cannot keep
            // the others (and TCP) waiting.
            let mut budget = self.inbox.ring_size();
            loop {
                // (Written out here rather than through `head`: through it,
                // 8-byte messages streamed 9% slower, as the compiler laid
                // out the loop.)
                let frame = match self.inbox.reader(i).peek() {
                    Ok(Some(f)) => f,
                    Ok(None) => break,
                    Err(e) => return Err(terr(Some(pid), format!("corrupt shared-memory ring: {e}"))),
                };
                let hb: &[u8; HEADER_LEN] = frame[..HEADER_LEN].try_into().expect("a ring frame holds a header");
                let h = Header::decode(hb).map_err(|e| terr(Some(pid), format!("malformed frame in shared memory: {e}")))?;
                let len = h.frame_len();
                if frame.len() < len {
                    return Err(terr(Some(pid), "a shared-memory frame is shorter than its header says"));
                }
                // The payload is read in place from shared memory.
                sink.frame(pid, &h, &frame[HEADER_LEN..len]).map_err(|e| terr(Some(pid), e))?;
                self.inbox.reader(i).consume(len);
                did = true;
                budget = budget.saturating_sub(len);
                if budget == 0 {
                    break;
                }
            }
        }
        Ok(did)
    }

    fn set_pace(&mut self, _peer: Pid, _bytes_per_sec: Option<u64>, _sink: &mut dyn Sink) {
        // Memory is not a shared bottleneck: nothing to pace.
    }

    fn unsent(&self, _peer: Pid) -> u64 {
        0
    }

    fn backlog(&self) -> usize {
        self.backlog_len
    }

    fn next_deadline(&self) -> Option<Duration> {
        // A full ring does not wake us when it drains.
        (self.backlog_len > 0).then_some(Duration::from_micros(200))
    }

    fn wait_fd(&self) -> RawFd {
        self.doorbell.fd()
    }

    fn prepare_sleep(&mut self) -> bool {
        if self.backlog_len > 0 {
            return false;
        }
        self.inbox.set_sleeping(true);
        for i in 0..self.local.len() {
            if self.inbox.reader(i).has_data() {
                self.inbox.set_sleeping(false);
                return false;
            }
        }
        true
    }

    fn after_sleep(&mut self) {
        self.inbox.set_sleeping(false);
        self.doorbell.drain();
    }
}

//! One connection: its phase (connecting, handshaking, established), what
//! it has read, and how read bytes become handshake steps and then frames.
//! Large Data payloads are read straight into the receive buffer. A
//! connection that breaks leaves its incomplete frame to the next one of
//! its link (`stream.rs`).

use super::handshake::{self, Acceptor, Connector, Decision, Link, Outcome, Refusal};
use super::stream::Carry;
use super::tls::{self, Session};
use super::Tcp;
use crate::{terr, ConnEvent, Sink, TransportError};
use gridmpi_datatype::UserBuf;
use gridmpi_wire::{Frame, Header, Pid, HEADER_LEN};
use std::io;
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, OwnedFd};

/// Data payloads at least this large are read directly into user memory.
const DIRECT_MIN: usize = 16 * 1024;

/// The read buffer of a connection, and what it shrinks back to after a
/// large frame.
pub(super) const RBUF_LEN: usize = 64 * 1024;

/// Reads that end with an empty buffer and no large frame, after which a
/// buffer grown for large frames shrinks back. Not at once: a stream of
/// large frames (one-sided puts of a MiB, which land here rather than
/// straight in user memory) would otherwise grow, zero and fault in a
/// fresh buffer for every frame, which cost more than the transfer.
const BIG_QUIET_READS: u32 = 256;

pub(super) enum Phase {
    /// Non-blocking connect in progress; the machine speaks once it is made.
    Connecting(Connector),
    /// We called: HELLO, PROOF, waiting for the verdict.
    Connector(Connector),
    /// We were called: nothing is known about the caller until it has
    /// proven itself, and then the verdict is ours.
    Acceptor(Acceptor),
    Established,
    /// Refused, failed or given up; to be dropped.
    Dead,
}

pub(super) struct Conn {
    pub(super) fd: OwnedFd,
    /// The peer: known from the start for a connection we make, only once
    /// admitted for one we accepted.
    pub(super) peer: Option<Pid>,
    pub(super) phase: Phase,
    /// Whether we made the connection (a timeout is then an error).
    pub(super) connector: bool,
    /// Handshake bytes still to write.
    pub(super) hs_out: Vec<u8>,
    /// Bytes read and not yet consumed.
    pub(super) rbuf: Vec<u8>,
    pub(super) rlen: usize,
    /// Reads since the buffer last held a frame larger than RBUF_LEN.
    pub(super) big_quiet: u32,
    pub(super) writable_armed: bool,
    /// Addresses left to try (connector).
    pub(super) addrs: Vec<SocketAddrV4>,
    /// A Data frame whose payload is being read straight into user memory.
    pub(super) direct: Option<Direct>,
    /// When the connection was opened (connect or accept).
    pub(super) opened: std::time::Instant,
    /// The link generation a connection we make asks for.
    pub(super) asked_generation: u32,
    /// TLS, when the connection is encrypted: every read and write of the
    /// connection goes through it.
    pub(super) tls: Option<Box<Session>>,
    /// A connection we accepted: whether its first byte was looked at (to
    /// tell TLS from plain).
    pub(super) sniffed: bool,
}

impl Conn {
    pub(super) fn new(fd: OwnedFd, peer: Option<Pid>, phase: Phase, addrs: Vec<SocketAddrV4>) -> Conn {
        Conn {
            fd,
            peer,
            connector: matches!(phase, Phase::Connecting(_)),
            phase,
            hs_out: Vec::new(),
            rbuf: vec![0; RBUF_LEN],
            rlen: 0,
            big_quiet: 0,
            writable_armed: false,
            addrs,
            direct: None,
            opened: std::time::Instant::now(),
            asked_generation: 1,
            tls: None,
            sniffed: false,
        }
    }

    /// The connection's byte layer: the socket, or TLS over it.
    pub(super) fn wire(&mut self) -> Wire<'_> {
        Wire { fd: self.fd.as_raw_fd(), tls: self.tls.as_deref_mut() }
    }

    /// Bytes written and not yet sent: what the socket holds unsent, and
    /// the ciphertext TLS holds that the socket did not take yet.
    pub(super) fn unsent(&self) -> Option<u32> {
        let pending = self.tls.as_ref().map_or(0, |s| s.pending());
        super::tuning::socket_unsent(self.fd.as_raw_fd()).map(|n| n.saturating_add(pending.min(u32::MAX as usize) as u32))
    }

    /// Whether TLS holds ciphertext the socket has not taken (to be written
    /// when it is writable).
    pub(super) fn tls_pending(&self) -> bool {
        self.tls.as_ref().is_some_and(|s| s.pending() > 0)
    }

    pub(super) fn is_established(&self) -> bool {
        matches!(self.phase, Phase::Established)
    }

    pub(super) fn is_dead(&self) -> bool {
        matches!(self.phase, Phase::Dead)
    }

    /// Write what is left of the handshake bytes (and of TLS's own).
    pub(super) fn write_handshake(&mut self) -> io::Result<()> {
        let fd = self.fd.as_raw_fd();
        if let Some(s) = self.tls.as_mut() {
            s.flush(fd)?;
        }
        while !self.hs_out.is_empty() {
            let iov = [libc::iovec { iov_base: self.hs_out.as_ptr() as *mut libc::c_void, iov_len: self.hs_out.len() }];
            // SAFETY: the iovec covers our own buffer.
            match unsafe { self.wire().send(&iov)? } {
                Some(n) => drop(self.hs_out.drain(..n)),
                None => return Ok(()),
            }
        }
        Ok(())
    }

    /// Read into `buf`: Some(n) bytes (0: end of stream), None: would block.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        let fd = self.fd.as_raw_fd();
        if let Some(s) = self.tls.as_mut() {
            return s.read(fd, &mut [io::IoSliceMut::new(buf)]);
        }
        // SAFETY: reading into the caller's buffer.
        crate::sys::nonblocking(|| unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) })
    }

    /// Read into the memory runs `runs`, as `recv`.
    ///
    /// # Safety
    /// Every run must be writable memory nobody else uses meanwhile.
    unsafe fn recv_runs(&mut self, runs: &[(*mut u8, usize)]) -> io::Result<Option<usize>> {
        let fd = self.fd.as_raw_fd();
        if let Some(s) = self.tls.as_mut() {
            // SAFETY: as the caller vouches.
            let mut bufs: Vec<io::IoSliceMut<'_>> =
                runs.iter().map(|&(p, l)| io::IoSliceMut::new(unsafe { std::slice::from_raw_parts_mut(p, l) })).collect();
            return s.read(fd, &mut bufs);
        }
        let mut iov: Vec<libc::iovec> = runs.iter().map(|&(p, l)| libc::iovec { iov_base: p as *mut libc::c_void, iov_len: l }).collect();
        // SAFETY: a zeroed msghdr is valid; the iovecs are the caller's runs.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len();
        // SAFETY: the message's iovecs are the caller's writable runs.
        crate::sys::nonblocking(|| unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) })
    }
}

/// Where a connection's bytes go: straight to the socket, or through TLS.
pub(super) struct Wire<'a> {
    fd: std::os::fd::RawFd,
    tls: Option<&'a mut Session>,
}

impl Wire<'_> {
    /// Write from `iov` without blocking: the bytes taken (by the socket,
    /// or encrypted by TLS: either way the caller's memory is free again),
    /// or None when nothing can be taken now.
    ///
    /// # Safety
    /// Every iovec must point at `iov_len` readable bytes.
    pub(super) unsafe fn send(&mut self, iov: &[libc::iovec]) -> io::Result<Option<usize>> {
        // SAFETY (both): as the caller vouches.
        match self.tls.as_mut() {
            Some(s) => unsafe { s.write(self.fd, iov) },
            None => unsafe { super::sendq::send_iov(self.fd, iov) },
        }
    }
}

/// Large Data payloads skip the connection buffer: they are read with
/// recvmsg into the receive buffer's memory runs.
pub(super) struct Direct {
    header: Header,
    buf: UserBuf,
    /// Payload bytes already in place.
    done: u64,
}

/// How a handshake ended, with the role it was played in and, once
/// established, the generation and what the peer received from us.
enum Concluded {
    Connector(Outcome, u32, Option<u64>),
    Acceptor(Outcome, Option<handshake::Resume>),
}

/// Receive errors after which a new connection may continue the link: the
/// connection was reset or aborted (a NAT or firewall lost its state, a
/// router restarted, `ss -K`). A timeout is not among them: the kernel
/// gave up after the outage budget (TCP_USER_TIMEOUT).
pub(super) fn resumable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNRESET | libc::ECONNABORTED | libc::EPIPE | libc::EHOSTUNREACH | libc::ENETUNREACH | libc::ENETDOWN | libc::ENOTCONN)
    )
}

impl Tcp {
    pub(super) fn on_readable(&mut self, idx: usize, sink: &mut dyn Sink) -> Result<(), TransportError> {
        if !self.sniff(idx) {
            return Ok(());
        }
        loop {
            if self.conns[idx].as_ref().unwrap().direct.is_some() {
                match self.read_direct(idx, sink)? {
                    Some(true) => continue,
                    Some(false) => return Ok(()),
                    None => return self.on_eof(idx, None),
                    // (a reset while reading in place comes back as an error)
                }
            }
            let c = self.conns[idx].as_mut().unwrap();
            if c.rlen == c.rbuf.len() {
                let n = c.rbuf.len() * 2;
                c.rbuf.resize(n, 0);
            }
            let (rlen, mut rbuf) = (c.rlen, std::mem::take(&mut c.rbuf));
            let got = c.recv(&mut rbuf[rlen..]);
            c.rbuf = rbuf;
            match got {
                Ok(None) => return Ok(()),
                Ok(Some(0)) => return self.on_eof(idx, None),
                Ok(Some(n)) => c.rlen += n,
                Err(e) => return self.read_failed(idx, e),
            }
            self.consume(idx, sink)?;
            if self.conns[idx].as_ref().is_none_or(|c| c.is_dead()) {
                return Ok(());
            }
        }
    }

    /// A connection we accepted: before its first read, tell TLS from
    /// plain by its first byte (see `tls.rs`). False if the connection is
    /// not to be read now (nothing came yet, or it was dropped).
    fn sniff(&mut self, idx: usize) -> bool {
        let c = self.conns[idx].as_mut().unwrap();
        if c.connector || c.sniffed {
            return true;
        }
        let mut first = 0u8;
        // SAFETY: peeking one byte into a local.
        let n = unsafe { libc::recv(c.fd.as_raw_fd(), &mut first as *mut u8 as *mut libc::c_void, 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock {
            return false;
        }
        c.sniffed = true;
        if n == 1 && first == tls::TLS_FIRST_BYTE {
            match self.job_tls().and_then(|t| t.accept()) {
                Ok(s) => self.conns[idx].as_mut().unwrap().tls = Some(Box::new(s)),
                Err(_) => {
                    self.conns[idx].as_mut().unwrap().phase = Phase::Dead;
                    return false;
                }
            }
        }
        true // (end of stream and errors: the read says so)
    }

    /// Reading from connection `idx` failed with `e`.
    fn read_failed(&mut self, idx: usize, e: io::Error) -> Result<(), TransportError> {
        if resumable(&e) {
            return self.on_eof(idx, Some(e));
        }
        let c = self.conns[idx].as_mut().unwrap();
        if !c.connector && !c.is_established() {
            // A caller we never admitted (a stranger speaking bad TLS, or
            // of another job): it goes, nothing else is touched.
            c.phase = Phase::Dead;
            return Ok(());
        }
        let peer = c.peer;
        if c.tls.as_ref().is_some_and(|s| s.handshaking()) {
            return Err(terr(peer, format!("the TLS handshake failed: {e} (does the peer hold this job's secret?)")));
        }
        Err(terr(peer, format!("receive failed: {e}")))
    }

    /// Read the payload of the pending direct Data frame into user memory.
    /// Some(true): progress (or done), Some(false): would block, None: EOF.
    fn read_direct(&mut self, idx: usize, sink: &mut dyn Sink) -> Result<Option<bool>, TransportError> {
        let c = self.conns[idx].as_mut().unwrap();
        let peer = c.peer;
        let d = c.direct.as_mut().unwrap();
        let len = d.header.payload_len as u64;
        self.runs.clear();
        let Frame::Data { offset, .. } = d.header.frame else { unreachable!("only Data frames land directly") };
        d.buf.runs(offset + d.done, len - d.done, 256, &mut self.runs);
        let runs = std::mem::take(&mut self.runs);
        // SAFETY: the runs lie in the receive buffer of a pending receive,
        // within the range the sink accepted.
        let got = unsafe { c.recv_runs(&runs) };
        self.runs = runs;
        let n = match got {
            Ok(Some(0)) => return Ok(None),
            Ok(Some(n)) => n,
            Ok(None) => return Ok(Some(false)),
            Err(e) => {
                self.read_failed(idx, e)?;
                return Ok(Some(false));
            }
        };
        let c = self.conns[idx].as_mut().unwrap();
        let d = c.direct.as_mut().unwrap();
        d.done += n as u64;
        if let Some(p) = peer {
            self.peers[p as usize].rx.took(n as u64);
        }
        if d.done == len {
            let h = d.header;
            c.direct = None;
            sink.data_landed(peer.unwrap(), &h).map_err(|e| terr(peer, e))?;
        }
        Ok(Some(true))
    }

    /// The connection ended: closed by the peer (`error` None) or reset.
    fn on_eof(&mut self, idx: usize, error: Option<io::Error>) -> Result<(), TransportError> {
        let c = self.conns[idx].as_mut().unwrap();
        if c.is_established() && c.peer.is_some() {
            let why = match &error {
                None => "closed by the peer".to_string(),
                Some(e) => e.to_string(),
            };
            return self.connection_broke(idx, why, error.is_none());
        }
        let phase = std::mem::replace(&mut c.phase, Phase::Dead);
        let peer = c.peer;
        match (phase, peer) {
            // Our own call, closed before the peer's verdict: it dropped us
            // (a refusal comes with its reason first).
            (Phase::Connecting(_) | Phase::Connector(_), Some(p)) if !self.finalizing => {
                // Through relays, a relay closes what it will not forward.
                if let Some(way) = &self.peers[p as usize].relay {
                    return Err(terr(
                        peer,
                        format!(
                            "the connection through the relay {} was closed during the handshake: the relay could not reach the peer, \
                             or refused us (a relay forwards only for ranks with the job secret file it was started with: \
                             GRIDMPI_JOB_SECRET_FILE; its log says which)",
                            way.first
                        ),
                    ));
                }
                let hint = if self.conns[idx].as_ref().is_some_and(|c| c.tls.is_none()) {
                    " (a different GridMPI version, or it requires TLS on this link: GRIDMPI_WAN_TLS differs between the ranks?)"
                } else {
                    " (a different GridMPI version?)"
                };
                return Err(terr(peer, format!("the peer closed the connection during the handshake{hint}")));
            }
            _ => {}
        }
        Ok(())
    }

    /// Parse what has been read: handshake messages, then frames.
    pub(super) fn consume(&mut self, idx: usize, sink: &mut dyn Sink) -> Result<(), TransportError> {
        let mut start = 0usize;
        let result = loop {
            let c = self.conns[idx].as_mut().unwrap();
            let avail = c.rlen - start;
            match c.phase {
                Phase::Connector(_) | Phase::Acceptor(_) => match self.handshake_step(idx, start) {
                    Ok(used) => {
                        start += used;
                        let Some(c) = self.conns[idx].as_ref() else { break Ok(()) };
                        if !c.is_established() {
                            break Ok(());
                        }
                        start = self.continue_carry(idx, start);
                        let c = self.conns[idx].as_ref().expect("established above");
                        if start == c.rlen && c.direct.is_none() {
                            break Ok(());
                        }
                    }
                    Err(e) => break Err(e),
                },
                Phase::Established if c.direct.is_some() => {
                    // A Data payload carried over from a broken connection
                    // continues with the first bytes of this one.
                    let peer = c.peer.unwrap();
                    let d = c.direct.as_mut().unwrap();
                    let Frame::Data { offset, .. } = d.header.frame else { unreachable!("only Data frames land directly") };
                    let n = (avail as u64).min(d.header.payload_len as u64 - d.done) as usize;
                    // SAFETY: within the range the sink accepted for this frame.
                    unsafe { d.buf.write_packed(offset + d.done, &c.rbuf[start..start + n]) };
                    d.done += n as u64;
                    start += n;
                    self.peers[peer as usize].rx.took(n as u64);
                    if d.done == d.header.payload_len as u64 {
                        let h = d.header;
                        c.direct = None;
                        if let Err(e) = sink.data_landed(peer, &h) {
                            break Err(terr(Some(peer), e));
                        }
                    } else {
                        break Ok(());
                    }
                }
                Phase::Established => {
                    if avail < HEADER_LEN {
                        break Ok(());
                    }
                    let peer = c.peer.unwrap();
                    let hb: [u8; HEADER_LEN] = c.rbuf[start..start + HEADER_LEN].try_into().unwrap();
                    let h = match Header::decode(&hb) {
                        Ok(h) => h,
                        Err(e) => break Err(terr(Some(peer), format!("malformed frame: {e}"))),
                    };
                    let total = HEADER_LEN + h.payload_len as usize;
                    if avail < total && matches!(h.frame, Frame::Data { .. }) && h.payload_len as usize >= DIRECT_MIN {
                        // Land what we have, then read the rest in place.
                        let buf = match sink.data_target(peer, &h) {
                            Ok(b) => b,
                            Err(e) => break Err(terr(Some(peer), e)),
                        };
                        let have = avail - HEADER_LEN;
                        let Frame::Data { offset, .. } = h.frame else { unreachable!("checked above") };
                        // SAFETY: the sink checked the range against what it accepts.
                        unsafe { buf.write_packed(offset, &c.rbuf[start + HEADER_LEN..start + HEADER_LEN + have]) };
                        c.direct = Some(Direct { header: h, buf, done: have as u64 });
                        start += avail;
                        self.peers[peer as usize].rx.took(avail as u64);
                        break Ok(());
                    }
                    if avail < total {
                        if total > c.rbuf.len() {
                            // Make room for this frame: move it to the front and grow.
                            c.rbuf.copy_within(start..c.rlen, 0);
                            c.rlen -= start;
                            start = 0;
                            c.rbuf.resize(total.next_power_of_two(), 0);
                        }
                        break Ok(());
                    }
                    if let Frame::Ack { received } = h.frame {
                        // The transport's own, outside the stream.
                        if let Err(e) = self.peers[peer as usize].tx.acknowledged(received) {
                            break Err(terr(Some(peer), e));
                        }
                        start += total;
                        continue;
                    }
                    if total > RBUF_LEN {
                        c.big_quiet = 0;
                    }
                    let payload = &c.rbuf[start + HEADER_LEN..start + total];
                    if let Err(e) = sink.frame(peer, &h, payload) {
                        break Err(terr(Some(peer), e));
                    }
                    start += total;
                    self.peers[peer as usize].rx.took(total as u64);
                }
                Phase::Connecting(_) | Phase::Dead => break Ok(()),
            }
        };
        if let Some(c) = self.conns[idx].as_mut() {
            c.rbuf.copy_within(start..c.rlen, 0);
            c.rlen -= start;
            // Shrink a buffer grown for big frames once it is empty and
            // big frames stopped coming (see BIG_QUIET_READS).
            if c.rlen == 0 && c.rbuf.len() > (1 << 20) {
                c.big_quiet += 1;
                if c.big_quiet >= BIG_QUIET_READS {
                    c.rbuf.truncate(RBUF_LEN);
                    c.rbuf.shrink_to_fit();
                    c.big_quiet = 0;
                }
            }
        }
        result
    }

    /// Feed the handshake of connection `idx` what was read from `start`,
    /// decide for a caller that proved itself, write the replies and act on
    /// the conclusion. Returns how many bytes were the handshake's.
    fn handshake_step(&mut self, idx: usize, start: usize) -> Result<usize, TransportError> {
        let me = self.me;
        let c = self.conns[idx].as_mut().unwrap();
        let input = &c.rbuf[start..c.rlen];
        let mut proven = None;
        let used = match &mut c.phase {
            Phase::Connector(m) => m.handle_bytes(input),
            Phase::Acceptor(m) => {
                let used = m.handle_bytes(input);
                proven = m.proven().map(|p| (p.peer(), p.asked()));
                used
            }
            _ => unreachable!("a handshake step outside the handshake"),
        };
        if let Some((peer, _)) = proven.filter(|&(p, _)| self.peers[p as usize].tls && c.tls.is_none()) {
            // No downgrade: the link must be encrypted and this caller
            // speaks in clear. It goes without a verdict; the link is not
            // touched.
            c.phase = Phase::Dead;
            self.events.push(ConnEvent::Refused {
                peer,
                why: "it called without TLS, and this link must be encrypted (GRIDMPI_WAN_TLS differs between the ranks?)".into(),
            });
            return Ok(used);
        }
        if let Some((peer, asked)) = proven {
            // Only now is the caller known to be this rank. If it replaces
            // a connection it lost, ours is given up first, so that what we
            // tell it we received is final.
            let link = &self.peers[peer as usize];
            let mut l = Link { established: link.established, connecting: link.conn.is_some() && !link.established, generation: link.generation, received: 0 };
            if l.established && handshake::verdict(self.who_of(me), self.who_of(peer), l, asked.generation) == Decision::Admit {
                let old = link.conn.expect("an established link has a connection");
                self.connection_broke(old, "replaced by a new connection from the peer".into(), false)?;
                let link = &self.peers[peer as usize];
                l = Link { established: false, connecting: false, generation: link.generation, received: 0 };
            }
            let link = &self.peers[peer as usize];
            l.received = link.rx.position(link.carry.as_ref().map_or(0, |c| c.len()));
            let c = self.conns[idx].as_mut().unwrap();
            let Phase::Acceptor(m) = &mut c.phase else { unreachable!("proven above") };
            m.proven().expect("proven above").decide(l);
        }
        let c = self.conns[idx].as_mut().unwrap();
        let concluded = match &mut c.phase {
            Phase::Connector(m) => {
                c.hs_out.extend(m.poll_transmit().unwrap_or_default());
                m.outcome().cloned().map(|o| Concluded::Connector(o, c.asked_generation, m.peer_received()))
            }
            Phase::Acceptor(m) => {
                c.hs_out.extend(m.poll_transmit().unwrap_or_default());
                m.outcome().cloned().map(|o| Concluded::Acceptor(o, m.caller_resume()))
            }
            _ => unreachable!("a handshake step outside the handshake"),
        };
        let written = c.write_handshake();
        match concluded {
            None => {}
            Some(Concluded::Connector(outcome, generation, received)) => self.connector_concluded(idx, outcome, generation, received)?,
            Some(Concluded::Acceptor(outcome, resume)) => self.acceptor_concluded(idx, outcome, resume)?,
        }
        if let (Err(e), Some(c)) = (written, self.conns[idx].as_mut()) {
            if c.connector || c.is_established() {
                return Err(terr(c.peer, format!("send failed during handshake: {e}")));
            }
            c.phase = Phase::Dead; // a caller we never admitted
        }
        self.update_interest(idx);
        Ok(used)
    }

    /// Our call to a peer ended.
    fn connector_concluded(
        &mut self,
        idx: usize,
        outcome: Outcome,
        generation: u32,
        peer_received: Option<u64>,
    ) -> Result<(), TransportError> {
        let c = self.conns[idx].as_mut().unwrap();
        let peer = c.peer.expect("a connector knows its peer");
        match outcome {
            Outcome::Established { .. } => {
                c.phase = Phase::Established;
                let fd = c.fd.as_raw_fd();
                self.established(peer, idx, fd, generation, peer_received.expect("told when established"))
            }
            Outcome::Refused(Refusal::Duplicate) => {
                // The peer's own connection to us wins; ours goes away and
                // the frames wait for that one. (A link being re-made tries
                // again later, in case the peer's view was stale.)
                c.phase = Phase::Dead;
                c.peer = None;
                let link = &mut self.peers[peer as usize];
                if link.conn == Some(idx) {
                    link.conn = None;
                    if let Some(b) = link.broken.as_mut() {
                        b.retry_later();
                    }
                }
                Ok(())
            }
            Outcome::Refused(r) => {
                c.phase = Phase::Dead;
                let why = match r {
                    Refusal::WrongPeer => "the peer says we are not part of its job (wrong rank)".to_string(),
                    Refusal::WrongVersion { theirs } => {
                        format!("the peer speaks protocol version {theirs}, we speak {} (mixed GridMPI builds?)", gridmpi_wire::WIRE_VERSION)
                    }
                    Refusal::BadProof => "the peer refused our proof of membership (a different job or secret?)".to_string(),
                    Refusal::Duplicate => unreachable!("handled above"),
                };
                Err(terr(Some(peer), why))
            }
            Outcome::Failed(f) => {
                c.phase = Phase::Dead;
                Err(terr(Some(peer), f.to_string()))
            }
        }
    }

    /// A call we accepted ended: admitted as its rank's connection, or
    /// dropped (whoever it was, without a trace on any rank's state).
    fn acceptor_concluded(
        &mut self,
        idx: usize,
        outcome: Outcome,
        resume: Option<handshake::Resume>,
    ) -> Result<(), TransportError> {
        let Outcome::Established { peer } = outcome else {
            self.conns[idx].as_mut().unwrap().phase = Phase::Dead;
            return Ok(());
        };
        let resume = resume.expect("told when admitted");
        // Our own attempt (if any: we are the higher pid) gives way; the
        // peer refuses it anyway.
        if let Some(old) = self.peers[peer as usize].conn.replace(idx) {
            if old != idx {
                if let Some(oc) = self.conns[old].as_mut() {
                    oc.peer = None; // its end must not disturb the link
                    oc.phase = Phase::Dead;
                }
                self.reap(old);
            }
        }
        let c = self.conns[idx].as_mut().unwrap();
        c.peer = Some(peer);
        c.phase = Phase::Established;
        let fd = c.fd.as_raw_fd();
        self.tune(peer, fd);
        self.established(peer, idx, fd, resume.generation, resume.received)
    }

    /// Connection `idx` on `fd` is now generation `generation` of the link
    /// with `peer`, which has received `peer_received` bytes of our stream:
    /// what it lacks is written first.
    fn established(&mut self, peer: Pid, idx: usize, fd: i32, generation: u32, peer_received: u64) -> Result<(), TransportError> {
        debug_assert_eq!(self.peers[peer as usize].conn, Some(idx));
        self.events.push(ConnEvent::Opened { peer, fd });
        let link = &mut self.peers[peer as usize];
        link.established = true;
        link.generation = generation;
        let carried = link.carry.as_ref().map_or(0, |c| c.len());
        let position = link.rx.position(carried);
        link.rx.told(position);
        let resent = link.tx.resume(peer_received).map_err(|e| terr(Some(peer), e))?;
        if let Some(b) = link.broken.take() {
            link.resumed += 1;
            link.resent += resent;
            self.events.push(ConnEvent::Resumed { peer, after: b.since.elapsed(), resent, why: b.why });
        }
        if self.peers[peer as usize].pace.is_some() {
            self.apply_pacing(peer);
        }
        // Queued frames and what the peer lacks are written once the socket
        // says it is writable, not from here: this runs while the
        // handshake's last bytes are parsed, and a write failing now would
        // break the connection under the parser's feet.
        self.update_interest(idx);
        Ok(())
    }

    /// A connection just established continues its link's incomplete frame:
    /// the bytes after the handshake (from `start`) follow the carried ones.
    /// Returns where parsing goes on.
    fn continue_carry(&mut self, idx: usize, start: usize) -> usize {
        let c = self.conns[idx].as_mut().unwrap();
        let Some(peer) = c.peer else { return start };
        let Some(carry) = self.peers[peer as usize].carry.take() else { return start };
        let mut bytes = carry.bytes;
        bytes.extend_from_slice(&c.rbuf[start..c.rlen]);
        c.rlen = bytes.len();
        if bytes.len() < RBUF_LEN {
            bytes.resize(RBUF_LEN, 0);
        }
        c.rbuf = bytes;
        c.direct = carry.direct;
        0
    }

    /// What a broken connection leaves to the next one: its incomplete
    /// frame, unless that is an Ack (outside the stream: not resent).
    pub(super) fn take_carry(c: &mut Conn) -> Carry {
        let partial = &c.rbuf[..c.rlen];
        let bytes = if partial.first() == Some(&(gridmpi_wire::Kind::Ack as u8)) { Vec::new() } else { partial.to_vec() };
        Carry { bytes, direct: c.direct.take() }
    }
}

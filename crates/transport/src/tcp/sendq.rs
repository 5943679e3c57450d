//! The send queue of a peer: frames waiting to be written, in the order
//! they may leave (urgent replies pass unstarted payloads), the write budget
//! of a paced socket, and the writev that sends them straight from user
//! buffers (keeping a copy of what it wrote until the peer acknowledges
//! it: `stream.rs`).

use super::conn::Wire;
use super::stream::Outgoing;
use crate::Sink;
use gridmpi_wire::{paced_unsent_bytes, Frame, Header, Kind, Payload, SentToken, Transmit, Urgency, HEADER_LEN};
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

/// A frame queued for a peer, its header encoded.
pub(super) struct OutFrame {
    header: [u8; HEADER_LEN],
    payload: Payload,
    /// Bytes of header + payload written so far.
    done: u64,
    notify: Option<SentToken>,
    prio: Urgency,
}

impl OutFrame {
    pub(super) fn new(t: Transmit) -> OutFrame {
        let prio = t.header.frame.urgency();
        OutFrame { header: t.header.encode(), payload: t.payload, done: 0, notify: t.notify, prio }
    }

    /// The transport's acknowledgment that `received` stream bytes arrived.
    pub(super) fn ack(received: u64) -> OutFrame {
        OutFrame::new(Transmit { peer: 0, header: Header::new(Frame::Ack { received }, 0), payload: Payload::None, notify: None })
    }

    /// An Ack: the transport's own, outside the link's stream (never kept,
    /// never written again).
    pub(super) fn is_ack(&self) -> bool {
        self.header[0] == Kind::Ack as u8
    }

    pub(super) fn started(&self) -> bool {
        self.done > 0
    }

    fn total(&self) -> u64 {
        HEADER_LEN as u64 + self.payload.len()
    }

    /// Keep a copy of bytes `from..from + len` of the frame in `kept`.
    fn keep(&self, from: u64, len: u64, kept: &mut Outgoing, runs: &mut Vec<(*mut u8, usize)>) {
        let end = from + len;
        let h = HEADER_LEN as u64;
        if from < h {
            kept.wrote(&self.header[from as usize..end.min(h) as usize]);
        }
        if end <= h {
            return;
        }
        let (a, b) = (from.max(h) - h, end - h);
        match &self.payload {
            Payload::None => {}
            Payload::Owned(v) => kept.wrote(&v[a as usize..b as usize]),
            Payload::Word(w) => kept.wrote(&w.to_ne_bytes()[a as usize..b as usize]),
            Payload::User { buf, offset, .. } => {
                runs.clear();
                buf.runs(offset + a, b - a, usize::MAX, runs);
                for &(p, l) in runs.iter() {
                    // SAFETY: the runs lie in the user buffer of a send not
                    // yet reported sent, so its memory is valid and unchanged.
                    kept.wrote(unsafe { std::slice::from_raw_parts(p, l) });
                }
            }
        }
    }
}

/// Queue a frame ahead of the unstarted frames of lower urgency, so that a
/// clear-to-send never waits behind a megabyte of someone else's payload:
/// on a paced WAN connection it would wait for the whole payload to leave
/// at the paced rate, stalling the other direction's transfer as long.
pub(super) fn enqueue(out: &mut VecDeque<OutFrame>, f: OutFrame) {
    let mut at = out.len();
    while at > 0 && out[at - 1].done == 0 && out[at - 1].prio < f.prio {
        at -= 1;
    }
    out.insert(at, f);
}

/// `sendmsg` of `iov` without blocking and without SIGPIPE: the bytes
/// written, or None when the socket is full (an interrupted call is
/// retried).
///
/// # Safety
/// Every iovec must point at `iov_len` readable bytes.
pub(super) unsafe fn send_iov(fd: RawFd, iov: &[libc::iovec]) -> io::Result<Option<usize>> {
    // SAFETY: a zeroed msghdr is valid; the caller vouches for the iovecs.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = iov.len();
    // SAFETY: the caller vouches for the iovecs.
    crate::sys::nonblocking(|| unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) })
}

/// Write again what the peer lacks after a reconnection (`kept`'s replay)
/// until the socket would block or all of it is written.
pub(super) fn write_replay(wire: &mut Wire<'_>, kept: &mut Outgoing) -> io::Result<()> {
    while let Some((a, b)) = kept.to_replay() {
        let iov = [
            libc::iovec { iov_base: a.as_ptr() as *mut libc::c_void, iov_len: a.len() },
            libc::iovec { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() },
        ];
        let used = if b.is_empty() { 1 } else { 2 };
        // SAFETY: the iovecs point into `kept`, unchanged during the call.
        match unsafe { wire.send(&iov[..used])? } {
            Some(n) => kept.replayed(n as u64),
            None => return Ok(()),
        }
    }
    Ok(())
}

/// While the replay limit is reached: what may still be written, the rest
/// of a frame already begun and the Acks queued right behind it.
pub(super) fn closing_run(out: &VecDeque<OutFrame>) -> u64 {
    let mut n = 0;
    for (i, f) in out.iter().enumerate() {
        if !(f.is_ack() || (i == 0 && f.started())) {
            break;
        }
        n += f.total() - f.done;
    }
    n
}

/// The unsent-data bound of a socket paced at `rate` bytes/s (see
/// [`gridmpi_wire::PACED_UNSENT`]), at most the connection's own bound.
pub(super) fn paced_lowat(rate: u64, tuned: Option<u32>) -> u32 {
    let v = paced_unsent_bytes(rate).min(u32::MAX as u64) as u32;
    tuned.map_or(v, |t| v.min(t))
}

/// Bytes queued and not yet written to the socket.
pub(super) fn queued_bytes(out: &VecDeque<OutFrame>) -> u64 {
    out.iter().map(|f| f.total() - f.done).sum()
}

/// The time a paced link's data is owed: the bytes written to its socket
/// under a pacing cap, less what the rate has allowed since.
///
/// The kernel paces the packets of a socket after the first; after a
/// pause that first one leaves at once. A WAN phase that sends short flows
/// one after another on different connections, each once the last has
/// drained (coll/wan.rs, alltoallv of large clusters), then ran at 1.5x
/// its rate with three-packet flows (the first packet of each free), and
/// its cluster's flows together overflowed the bottleneck. Counting a
/// link drained only once the ledger is paid keeps the sequence at the
/// rate; for one long flow the ledger and the kernel agree.
#[derive(Default)]
pub(super) struct PaceLedger {
    owed: f64,
    since: Option<std::time::Instant>,
}

impl PaceLedger {
    /// Bytes still owed at `now` at `rate` bytes/s.
    pub(super) fn owed(&self, rate: u64, now: std::time::Instant) -> u64 {
        match self.since {
            None => 0,
            Some(t) => (self.owed - rate as f64 * now.saturating_duration_since(t).as_secs_f64()).max(0.0).ceil() as u64,
        }
    }

    /// `bytes` were written under `rate` at `now`.
    pub(super) fn wrote(&mut self, bytes: u64, rate: u64, now: std::time::Instant) {
        self.owed = self.owed(rate, now) as f64 + bytes as f64;
        self.since = Some(now);
    }

    /// The rate changes at `now` from `old` (None: unpaced, nothing owed).
    pub(super) fn rate_changes(&mut self, old: Option<u64>, now: std::time::Instant) {
        match old {
            Some(rate) => {
                self.owed = self.owed(rate, now) as f64;
                self.since = Some(now);
            }
            None => *self = PaceLedger::default(),
        }
    }
}

/// A paced socket's write budget is stretched to the end of the frame it
/// would cut when less than this would be left: a full-sized segment on a
/// 1500-byte path.
const PACED_TAIL_MIN: u64 = 1448;

/// The write budget `room` of a paced socket, stretched to the end of the
/// frame it ends in when that frame has less than [`PACED_TAIL_MIN`] bytes
/// past it. A cut-off tail goes out as a packet of its own, one pacing
/// interval after the rest: a 4 KiB eager message is 4136 bytes with its
/// header, and under a 4096-byte budget its last 40 bytes reached the peer
/// a whole packet-time (1.6 ms at a 16th of 100 Mbit/s) after the rest,
/// which the receiver waited for on every call.
pub(super) fn stretch_to_frame_end(out: &VecDeque<OutFrame>, room: u64) -> u64 {
    if room == 0 {
        return 0;
    }
    let mut end = 0u64;
    for f in out {
        end += f.total() - f.done;
        if end >= room {
            return if end - room < PACED_TAIL_MIN { end } else { room };
        }
    }
    room
}

/// Write frames from the front of `out` until the socket would block or
/// `budget` bytes are written, keeping a copy of what was written in
/// `kept`. Completed frames are popped and their senders notified.
/// Returns the bytes written.
pub(super) fn write_frames(
    wire: &mut Wire<'_>,
    out: &mut VecDeque<OutFrame>,
    runs: &mut Vec<(*mut u8, usize)>,
    kept: &mut Outgoing,
    sink: &mut dyn Sink,
    mut budget: u64,
) -> io::Result<u64> {
    const MAX_IOV: usize = 256;
    let mut iov: Vec<libc::iovec> = Vec::with_capacity(MAX_IOV);
    let mut written = 0u64;
    while !out.is_empty() && budget > 0 {
        iov.clear();
        'frames: for f in out.iter() {
            let mut skip = f.done;
            if skip < HEADER_LEN as u64 {
                iov.push(libc::iovec {
                    iov_base: f.header[skip as usize..].as_ptr() as *mut libc::c_void,
                    iov_len: HEADER_LEN - skip as usize,
                });
                skip = 0;
            } else {
                skip -= HEADER_LEN as u64;
            }
            match &f.payload {
                Payload::None => {}
                Payload::Owned(v) => iov.push(libc::iovec {
                    iov_base: v[skip as usize..].as_ptr() as *mut libc::c_void,
                    iov_len: v.len() - skip as usize,
                }),
                Payload::Word(w) => iov.push(libc::iovec {
                    iov_base: (w as *const u64 as *const u8).wrapping_add(skip as usize) as *mut libc::c_void,
                    iov_len: 8 - skip as usize,
                }),
                Payload::User { buf, offset, len } => {
                    runs.clear();
                    let room = MAX_IOV.saturating_sub(iov.len()).max(1);
                    let covered = buf.runs(offset + skip, len - skip, room, runs);
                    for &(p, l) in runs.iter() {
                        iov.push(libc::iovec { iov_base: p as *mut libc::c_void, iov_len: l });
                    }
                    if covered < len - skip {
                        break 'frames; // the rest of this payload next time
                    }
                }
            }
            if iov.len() >= MAX_IOV - 2 {
                break;
            }
        }
        // Within the budget: drop or shorten the iovecs past it.
        let mut total = 0u64;
        let mut keep = 0;
        for v in iov.iter_mut() {
            if total >= budget {
                break;
            }
            let room = budget - total;
            if v.iov_len as u64 > room {
                v.iov_len = room as usize;
            }
            total += v.iov_len as u64;
            keep += 1;
        }
        iov.truncate(keep);
        // SAFETY: the iovecs point into memory owned by queued frames or
        // into user buffers of pending sends.
        let Some(n) = (unsafe { wire.send(&iov)? }) else { return Ok(written) };
        let mut n = n as u64;
        written += n;
        budget -= n.min(budget);
        while n > 0 {
            let f = out.front_mut().expect("wrote more than was queued");
            let left = f.total() - f.done;
            let wrote = n.min(left);
            if !f.is_ack() {
                f.keep(f.done, wrote, kept, runs);
            }
            if n >= left {
                n -= left;
                let f = out.pop_front().unwrap();
                if let Some(r) = f.notify {
                    sink.sent(r);
                }
            } else {
                f.done += n;
                n = 0;
            }
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridmpi_wire::Envelope;

    /// The ledger pays for what was written at the rate, carries a debt
    /// over a change of rate, and forgets it when the cap is lifted.
    #[test]
    fn the_pace_ledger_owes_what_the_rate_has_not_paid_for() {
        let t0 = std::time::Instant::now();
        let ms = |n: u64| t0 + std::time::Duration::from_millis(n);
        let mut l = PaceLedger::default();
        assert_eq!(l.owed(1_000_000, t0), 0);
        l.wrote(4000, 1_000_000, t0); // 4 ms at 1 MB/s
        assert_eq!(l.owed(1_000_000, ms(1)), 3000);
        assert_eq!(l.owed(1_000_000, ms(4)), 0);
        l.wrote(2000, 1_000_000, ms(2)); // 2000 left + 2000
        assert_eq!(l.owed(1_000_000, ms(3)), 3000);
        l.rate_changes(Some(1_000_000), ms(3)); // now 2 MB/s
        assert_eq!(l.owed(2_000_000, ms(4)), 1000);
        assert_eq!(l.owed(2_000_000, ms(5)), 0);
        l.wrote(1000, 2_000_000, ms(5));
        l.rate_changes(None, ms(5));
        assert_eq!(l.owed(2_000_000, ms(5)), 0);
    }

    fn frame(kind: Kind, done: u64) -> OutFrame {
        let env = Envelope { ctx: 0, src: 0, tag: 0 };
        let f = match kind {
            Kind::Eager => Frame::Eager { env, sync: None },
            Kind::EagerHead => Frame::EagerHead { env, sync: None, len: 2 },
            Kind::EagerRest => Frame::EagerRest { offset: 1 },
            Kind::Rts => Frame::Rts { env, len: 1, sreq: 0, single_copy: false },
            Kind::Cts => Frame::Cts { sreq: 0, rreq: 0, accepted: 0 },
            Kind::Data => Frame::Data { rreq: 0, offset: 0 },
            Kind::Fin => Frame::Fin { sreq: 0 },
            Kind::SyncAck => Frame::SyncAck { sreq: 0 },
            Kind::CancelSend => Frame::CancelSend { sreq: 0 },
            Kind::CancelReply => Frame::CancelReply { sreq: 0, cancelled: false },
            Kind::Credit => Frame::Credit,
            Kind::RmaOp => Frame::RmaOp { win: 0, offset: 0, reply: None },
            Kind::RmaSync => Frame::RmaSync { win: 0, sync: gridmpi_wire::RmaSync::Flush, arg: 0, req: 0 },
            Kind::Ack => Frame::Ack { received: 0 },
            Kind::Revoke => Frame::Revoke { ctx: 0 },
            Kind::Agree => Frame::Agree { ctx: 0, seq: 0, step: gridmpi_wire::AgreeStep::Contribute, flag: 0, max: 0 },
        };
        OutFrame { header: Header::new(f, 0).encode(), payload: Payload::None, done, notify: None, prio: kind.urgency() }
    }

    fn kinds(out: &VecDeque<OutFrame>) -> Vec<u8> {
        out.iter().map(|f| f.header[0]).collect()
    }

    #[test]
    fn replies_pass_payloads_but_messages_keep_their_order() {
        let (e, r, c, d) = (Kind::Eager as u8, Kind::Rts as u8, Kind::Cts as u8, Kind::Data as u8);
        let mut out = VecDeque::new();
        // A payload half written stays first; unstarted ones are passed.
        enqueue(&mut out, frame(Kind::Data, 100));
        enqueue(&mut out, frame(Kind::Data, 0));
        enqueue(&mut out, frame(Kind::Rts, 0));
        enqueue(&mut out, frame(Kind::Cts, 0));
        enqueue(&mut out, frame(Kind::Eager, 0));
        enqueue(&mut out, frame(Kind::Credit, 0));
        assert_eq!(kinds(&out), vec![d, c, Kind::Credit as u8, r, e, d]);
        // Replies stay in their own order; a message never passes a message.
        let mut out = VecDeque::new();
        enqueue(&mut out, frame(Kind::Eager, 0));
        enqueue(&mut out, frame(Kind::Cts, 0));
        enqueue(&mut out, frame(Kind::Rts, 0));
        enqueue(&mut out, frame(Kind::Fin, 0));
        assert_eq!(kinds(&out), vec![c, Kind::Fin as u8, e, r]);
        // An eager message in pieces: a reply waits for the piece being
        // written only; a message waits for all of them.
        let (h, rest) = (Kind::EagerHead as u8, Kind::EagerRest as u8);
        let mut out = VecDeque::new();
        enqueue(&mut out, frame(Kind::EagerHead, 10));
        enqueue(&mut out, frame(Kind::EagerRest, 0));
        enqueue(&mut out, frame(Kind::EagerRest, 0));
        enqueue(&mut out, frame(Kind::Rts, 0));
        enqueue(&mut out, frame(Kind::Cts, 0));
        assert_eq!(kinds(&out), vec![h, c, rest, rest, r]);
    }

    #[test]
    fn paced_sockets_hold_a_few_milliseconds_unsent() {
        assert_eq!(paced_lowat(703_125, None), 4096); // 5.6 Mbit/s: the floor
        assert_eq!(paced_lowat(12_500_000, None), 50_000); // 100 Mbit/s: 4 ms
        assert_eq!(paced_lowat(12_500_000, Some(32_768)), 32_768); // never above the tuned bound
    }

    #[test]
    fn a_paced_budget_does_not_cut_off_a_small_frame_tail() {
        let sized = |len: usize, done: u64| OutFrame { payload: Payload::Owned(vec![0; len]), ..frame(Kind::Eager, done) };
        let h = HEADER_LEN as u64;
        // A 4 KiB eager message under a 4096-byte budget goes out whole.
        let out: VecDeque<_> = [sized(4096, 0)].into();
        assert_eq!(stretch_to_frame_end(&out, 4096), 4096 + h);
        // A long remainder is left for later, so is the next frame.
        let out: VecDeque<_> = [sized(8192, 0)].into();
        assert_eq!(stretch_to_frame_end(&out, 4096), 4096);
        let out: VecDeque<_> = [sized(1000, 0), sized(4096, 0)].into();
        assert_eq!(stretch_to_frame_end(&out, 1000 + h), 1000 + h);
        // The frame the budget ends in counts from what is left of it.
        let out: VecDeque<_> = [sized(1000, 500), sized(4096, 0)].into();
        assert_eq!(stretch_to_frame_end(&out, 4000), 540 + 4096 + h);
        // No room stays no room; room past everything queued stays as is.
        assert_eq!(stretch_to_frame_end(&out, 0), 0);
        assert_eq!(stretch_to_frame_end(&out, 1 << 20), 1 << 20);
    }
}

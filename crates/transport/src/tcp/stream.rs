//! A link's byte streams, which outlive its connections.
//!
//! Between two processes the frames of each direction form one stream,
//! counted in bytes from the link's first connection (Ack frames, the
//! transport's own, are not part of it). When a connection breaks (reset
//! by a NAT or firewall that lost its state, a router restart, `ss -K`),
//! a new one is made and the stream goes on where the receiver stands:
//!
//! - the sender keeps a copy of every byte it wrote that the receiver has
//!   not acknowledged ([`Outgoing`]); Ack frames trim it, and the handshake
//!   of a new connection says where the receiver stands, so exactly the
//!   bytes it never got are written again;
//! - the receiver counts the bytes it took ([`Incoming`]), acknowledges
//!   every [`ACK_EVERY`], and carries an incomplete frame over to the next
//!   connection instead of dropping it ([`Carry`]).
//!
//! Nothing here does I/O; `conn.rs` and `mod.rs` feed it.

use std::collections::VecDeque;

/// The receiver acknowledges after this many bytes: the sender's copy of
/// unacknowledged bytes stays this plus what is in flight.
pub(super) const ACK_EVERY: u64 = 512 * 1024;

/// The sender starts no new frame while this much is unacknowledged (a
/// frame already begun is finished, so an Ack queued behind it can leave:
/// both sides waiting for the other's Ack cannot deadlock). Well above a
/// WAN's bandwidth-delay product (1 Gbit/s x 100 ms is 12.5 MB).
pub(super) const REPLAY_LIMIT: u64 = 64 << 20;

/// What was sent on a link and not yet acknowledged.
pub(super) struct Outgoing {
    /// Whether a copy is kept, so that the link can survive a broken
    /// connection (the copy costs a memory copy of every byte sent).
    pub(super) keep: bool,
    /// Stream bytes written, over all connections.
    written: u64,
    /// Stream bytes the receiver acknowledged.
    acked: u64,
    /// A copy of stream bytes `acked..written`.
    kept: VecDeque<u8>,
    /// After a reconnection: the next stream byte to write again (up to
    /// `written`, then new frames follow).
    replay: Option<u64>,
}

impl Default for Outgoing {
    fn default() -> Outgoing {
        Outgoing { keep: true, written: 0, acked: 0, kept: VecDeque::new(), replay: None }
    }
}

impl Outgoing {
    /// Stream bytes just written for the first time.
    pub(super) fn wrote(&mut self, bytes: &[u8]) {
        debug_assert!(self.replay.is_none(), "new bytes while replaying");
        if self.keep {
            self.kept.extend(bytes);
        }
        self.written += bytes.len() as u64;
    }

    pub(super) fn unacked(&self) -> u64 {
        self.written - self.acked
    }

    /// Whether a new frame may be started (see [`REPLAY_LIMIT`]).
    pub(super) fn has_room(&self) -> bool {
        !self.keep || self.unacked() < REPLAY_LIMIT
    }

    /// The receiver has `received` stream bytes: drop their copy.
    pub(super) fn acknowledged(&mut self, received: u64) -> Result<(), String> {
        if received < self.acked || received > self.written {
            return Err(format!(
                "acknowledgment of {received} bytes, but {} were acknowledged and {} sent",
                self.acked, self.written
            ));
        }
        if self.keep {
            self.kept.drain(..(received - self.acked) as usize);
        }
        self.acked = received;
        if self.kept.is_empty() && self.kept.capacity() > (4 << 20) {
            self.kept.shrink_to(0);
        }
        Ok(())
    }

    /// A new connection: the receiver has `received` bytes; what it lacks
    /// is written again before anything new.
    pub(super) fn resume(&mut self, received: u64) -> Result<u64, String> {
        if !self.keep && received != self.written {
            return Err(format!("the peer lacks {} bytes and no copy of them was kept", self.written.saturating_sub(received)));
        }
        self.acknowledged(received).map_err(|e| format!("cannot resume the stream: {e}"))?;
        self.replay = (received < self.written).then_some(received);
        Ok(self.written - received)
    }

    /// Bytes still to write again, as up to two slices.
    pub(super) fn to_replay(&self) -> Option<(&[u8], &[u8])> {
        let at = self.replay?;
        let skip = (at - self.acked) as usize;
        let (a, b) = self.kept.as_slices();
        Some(if skip < a.len() { (&a[skip..], b) } else { (&b[skip - a.len()..], &[][..]) })
    }

    /// `n` replayed bytes were written.
    pub(super) fn replayed(&mut self, n: u64) {
        let at = self.replay.expect("replaying") + n;
        debug_assert!(at <= self.written);
        self.replay = (at < self.written).then_some(at);
    }

    pub(super) fn replaying(&self) -> bool {
        self.replay.is_some()
    }
}

/// What was received on a link.
#[derive(Default)]
pub(super) struct Incoming {
    /// Stream bytes taken off connections and used (whole frames handed
    /// on, direct payload bytes landed).
    taken: u64,
    /// What our last Ack said.
    acked: u64,
}

impl Incoming {
    pub(super) fn took(&mut self, n: u64) {
        self.taken += n;
    }

    /// Where the stream stands for the sender: what was taken plus the
    /// incomplete frame carried over.
    pub(super) fn position(&self, carried: usize) -> u64 {
        self.taken + carried as u64
    }

    /// The count to acknowledge now, if an Ack is due.
    pub(super) fn ack_due(&mut self) -> Option<u64> {
        if self.taken.saturating_sub(self.acked) >= ACK_EVERY {
            self.acked = self.taken;
            Some(self.taken)
        } else {
            None
        }
    }

    /// A new connection told the sender our position.
    pub(super) fn told(&mut self, position: u64) {
        self.acked = self.acked.max(position);
    }
}

/// The incomplete frame a broken connection leaves: its bytes read so far
/// (the start of a header or of a frame), or a Data payload partly landed
/// in user memory. The next connection continues it.
pub(super) struct Carry {
    pub(super) bytes: Vec<u8>,
    pub(super) direct: Option<super::conn::Direct>,
}

impl Carry {
    /// Stream bytes this carries that are not counted as taken yet.
    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_stream_writes_again_exactly_what_the_receiver_lacks() {
        let mut out = Outgoing::default();
        let stream: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        out.wrote(&stream[..4000]);
        out.acknowledged(1000).unwrap();
        out.wrote(&stream[4000..]);
        assert_eq!(out.unacked(), 9000);
        // The receiver got 6500 bytes before the connection broke.
        assert_eq!(out.resume(6500).unwrap(), 3500);
        let mut again = Vec::new();
        while let Some((a, b)) = out.to_replay() {
            // Written in pieces, as a socket takes them.
            let piece: Vec<u8> = a.iter().chain(b).copied().take(700).collect();
            again.extend_from_slice(&piece);
            out.replayed(piece.len() as u64);
        }
        assert_eq!(again, &stream[6500..]);
        assert!(!out.replaying());
        // Nothing lacking: nothing to write again.
        assert_eq!(out.resume(10_000).unwrap(), 0);
        assert!(out.to_replay().is_none());
        assert_eq!(out.unacked(), 0);
    }

    #[test]
    fn a_receiver_cannot_claim_what_was_never_sent_or_unsay_an_ack() {
        let mut out = Outgoing::default();
        out.wrote(&[1; 100]);
        out.acknowledged(50).unwrap();
        assert!(out.acknowledged(101).is_err());
        assert!(out.acknowledged(49).is_err());
        assert!(out.resume(40).is_err());
        assert!(out.resume(200).is_err());
        assert_eq!(out.unacked(), 50);
    }

    #[test]
    fn acks_go_out_every_ack_every_bytes_and_a_handshake_counts_as_one() {
        let mut inc = Incoming::default();
        inc.took(ACK_EVERY - 1);
        assert_eq!(inc.ack_due(), None);
        inc.took(1);
        assert_eq!(inc.ack_due(), Some(ACK_EVERY));
        assert_eq!(inc.ack_due(), None);
        inc.took(ACK_EVERY - 10);
        assert_eq!(inc.position(10), 2 * ACK_EVERY);
        inc.told(2 * ACK_EVERY);
        inc.took(ACK_EVERY - 10);
        assert_eq!(inc.ack_due(), None);
        inc.took(20);
        assert_eq!(inc.ack_due(), Some(3 * ACK_EVERY));
    }

    #[test]
    fn without_a_copy_only_a_stream_received_whole_can_resume() {
        let mut out = Outgoing { keep: false, ..Outgoing::default() };
        out.wrote(&[1; 100]);
        out.acknowledged(60).unwrap();
        assert!(out.has_room());
        assert!(out.resume(80).is_err());
        assert_eq!(out.resume(100).unwrap(), 0);
    }

    #[test]
    fn the_sender_stops_starting_frames_at_the_replay_limit() {
        let mut out = Outgoing::default();
        out.wrote(&vec![0; REPLAY_LIMIT as usize - 1]);
        assert!(out.has_room());
        out.wrote(&[0]);
        assert!(!out.has_room());
        out.acknowledged(1).unwrap();
        assert!(out.has_room());
    }
}

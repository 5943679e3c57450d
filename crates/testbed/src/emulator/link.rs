//! One direction of a WAN link, as a pure model: no I/O, no clock; times
//! are passed in (nanoseconds on the emulator's monotonic clock).
//!
//! The line is a drop-tail queue feeding a serializer at `rate`, followed by
//! a propagation delay:
//!
//! ```text
//!  arrive(t) -> [queue <= limit] -> serialize len*8/rate -> delay -> release
//! ```
//!
//! A packet that arrives at `a` starts being sent at `s = max(a, busy_until)`,
//! has left the queue at `f = s + len*8/rate` and is released at the far end
//! at `f + delay`. The queue at time t (its backlog) is every packet with
//! `f > t`: the ones waiting and the one being sent. An arriving packet that
//! would take the backlog past the limit is dropped (drop-tail). Random loss
//! strikes on the line: the packet uses its queue slot and link time, then is
//! not delivered. Releases stay in FIFO order even if the delay is lowered at
//! run time (a line does not reorder).

use crate::spec::DirParams;
use crate::units::QueueLimit;
use std::collections::VecDeque;

/// A packet on the line.
pub struct InFlight {
    pub data: Vec<u8>,
    /// Time its last bit left the queue.
    pub finish_ns: u64,
    /// Time it is due at the far end.
    pub release_ns: u64,
    /// Bytes enqueued since start, this packet included (for byte backlog).
    cum_bytes: u64,
    /// Lost on the line: released into nothing.
    pub lost: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queued; `lost` tells whether random loss will strike it.
    Queued { lost: bool },
    /// Queue full: dropped at the tail.
    QueueFull,
    /// Link is cut.
    Cut,
}

/// Backlog: packets and bytes in the queue (waiting or being sent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    pub packets: u32,
    pub bytes: u64,
}

pub struct LinkDir {
    params: DirParams,
    line: VecDeque<InFlight>,
    /// When the serializer is free, in picoseconds (exact sums of per-packet
    /// transmission times, no drift).
    busy_until_ps: u128,
    enqueued_bytes: u64,
    /// `cum_bytes` of the last packet that left `line`.
    dequeued_cum_bytes: u64,
    last_release_ns: u64,
    rng: SplitMix64,
}

impl LinkDir {
    pub fn new(params: DirParams, seed: u64) -> LinkDir {
        LinkDir {
            params,
            line: VecDeque::new(),
            busy_until_ps: 0,
            enqueued_bytes: 0,
            dequeued_cum_bytes: 0,
            last_release_ns: 0,
            rng: SplitMix64(seed),
        }
    }

    #[cfg(test)]
    pub fn params(&self) -> &DirParams {
        &self.params
    }

    /// New settings apply to packets arriving from now on. Cutting the link
    /// loses everything on it; the dropped packets are returned.
    pub fn set_params(&mut self, params: DirParams, now_ns: u64) -> Vec<InFlight> {
        let was_cut = self.params.cut;
        self.params = params;
        let mut dropped = Vec::new();
        if self.params.cut && !was_cut {
            while let Some(p) = self.line.pop_front() {
                self.dequeued_cum_bytes = p.cum_bytes;
                dropped.push(p);
            }
            self.busy_until_ps = now_ns as u128 * 1000;
        }
        dropped
    }

    /// Index of the first packet still in the queue at `t` (its f > t).
    fn first_queued(&self, t_ns: u64) -> usize {
        self.line.partition_point(|p| p.finish_ns <= t_ns)
    }

    pub fn backlog(&self, t_ns: u64) -> Backlog {
        let i = self.first_queued(t_ns);
        let base = if i == 0 { self.dequeued_cum_bytes } else { self.line[i - 1].cum_bytes };
        Backlog { packets: (self.line.len() - i) as u32, bytes: self.enqueued_bytes - base }
    }

    /// Transmission time of `len` bytes, in picoseconds.
    fn serialization_ps(&self, len: usize) -> u128 {
        match self.params.rate_bps {
            0 => 0,
            rate => (len as u128 * 8 * 1_000_000_000_000) / rate as u128,
        }
    }

    /// A packet arrives at `now`. On `Queued` it is on the line; otherwise
    /// the caller keeps `data` (given back) to recycle.
    pub fn arrive(&mut self, now_ns: u64, data: Vec<u8>) -> (Verdict, Option<Vec<u8>>, Backlog) {
        if self.params.cut {
            return (Verdict::Cut, Some(data), Backlog::default());
        }
        let len = data.len();
        let backlog = self.backlog(now_ns);
        let full = match self.params.queue {
            QueueLimit::Packets(limit) => backlog.packets + 1 > limit,
            QueueLimit::Bytes(limit) => backlog.bytes + len as u64 > limit,
        };
        if full {
            return (Verdict::QueueFull, Some(data), backlog);
        }
        let start_ps = self.busy_until_ps.max(now_ns as u128 * 1000);
        self.busy_until_ps = start_ps + self.serialization_ps(len);
        let finish_ns = self.busy_until_ps.div_ceil(1000) as u64;
        let release_ns = (finish_ns + self.params.delay_ns).max(self.last_release_ns);
        self.last_release_ns = release_ns;
        let lost = self.params.loss > 0.0 && self.rng.next_f64() < self.params.loss;
        self.enqueued_bytes += len as u64;
        self.line.push_back(InFlight { data, finish_ns, release_ns, cum_bytes: self.enqueued_bytes, lost });
        let after = Backlog { packets: backlog.packets + 1, bytes: backlog.bytes + len as u64 };
        (Verdict::Queued { lost }, None, after)
    }

    /// When the next packet is due at the far end.
    pub fn next_release(&self) -> Option<u64> {
        self.line.front().map(|p| p.release_ns)
    }

    /// Take the next packet if it is due at `now`.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<InFlight> {
        if self.line.front()?.release_ns <= now_ns {
            let p = self.line.pop_front()?;
            self.dequeued_cum_bytes = p.cum_bytes;
            Some(p)
        } else {
            None
        }
    }

    pub fn is_empty(&self) -> bool {
        self.line.is_empty()
    }
}

/// A small, fast generator for loss decisions (SplitMix64; good enough for
/// Bernoulli trials, and reproducible from its seed).
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(rate_bps: u64, delay_ns: u64, queue: QueueLimit) -> DirParams {
        DirParams { rate_bps, delay_ns, queue, loss: 0.0, cut: false }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn serialization_and_delay() {
        // 1500 bytes at 12 Mbit/s take exactly 1 ms.
        let mut l = LinkDir::new(params(12_000_000, 5 * MS, QueueLimit::Packets(10)), 1);
        for _ in 0..3 {
            assert!(matches!(l.arrive(0, vec![0; 1500]).0, Verdict::Queued { lost: false }));
        }
        assert_eq!(l.backlog(0), Backlog { packets: 3, bytes: 4500 });
        assert_eq!(l.backlog(MS), Backlog { packets: 2, bytes: 3000 });
        assert_eq!(l.backlog(3 * MS), Backlog { packets: 0, bytes: 0 });
        let releases: Vec<u64> = std::iter::from_fn(|| l.pop_due(u64::MAX).map(|p| p.release_ns)).collect();
        assert_eq!(releases, vec![6 * MS, 7 * MS, 8 * MS]);
    }

    #[test]
    fn idle_link_starts_at_arrival() {
        let mut l = LinkDir::new(params(12_000_000, 0, QueueLimit::Packets(10)), 1);
        l.arrive(0, vec![0; 1500]);
        l.arrive(10 * MS, vec![0; 1500]);
        assert_eq!(l.pop_due(u64::MAX).unwrap().release_ns, MS);
        assert_eq!(l.pop_due(u64::MAX).unwrap().release_ns, 11 * MS);
    }

    #[test]
    fn no_drift_over_many_packets() {
        // 1000 packets of 1000 bytes at 3 Mbit/s: 8/3 ms each, 8/3 s in all.
        let mut l = LinkDir::new(params(3_000_000, 0, QueueLimit::Packets(10_000)), 1);
        for _ in 0..1000 {
            l.arrive(0, vec![0; 1000]);
        }
        let last = std::iter::from_fn(|| l.pop_due(u64::MAX)).last().unwrap();
        assert!(last.release_ns.abs_diff(2_666_666_667) <= 1, "{}", last.release_ns);
    }

    #[test]
    fn drop_tail_packets_only_when_full() {
        let mut l = LinkDir::new(params(12_000_000, 0, QueueLimit::Packets(3)), 1);
        let v: Vec<Verdict> = (0..5).map(|_| l.arrive(0, vec![0; 1500]).0).collect();
        assert_eq!(v[3], Verdict::QueueFull);
        assert_eq!(v[4], Verdict::QueueFull);
        // after one packet has left, there is room for exactly one more
        assert!(matches!(l.arrive(MS, vec![0; 1500]).0, Verdict::Queued { .. }));
        let (verdict, _, backlog) = l.arrive(MS, vec![0; 1500]);
        assert_eq!((verdict, backlog.packets), (Verdict::QueueFull, 3));
    }

    #[test]
    fn drop_tail_bytes() {
        let mut l = LinkDir::new(params(12_000_000, 0, QueueLimit::Bytes(4000)), 1);
        assert!(matches!(l.arrive(0, vec![0; 1500]).0, Verdict::Queued { .. }));
        assert!(matches!(l.arrive(0, vec![0; 1500]).0, Verdict::Queued { .. }));
        assert_eq!(l.arrive(0, vec![0; 1500]).0, Verdict::QueueFull);
        assert!(matches!(l.arrive(0, vec![0; 1000]).0, Verdict::Queued { .. }));
        assert_eq!(l.backlog(0).bytes, 4000);
        // packets that finished sending but are still "in the pipe" (delay)
        // no longer count
        assert_eq!(l.backlog(MS).bytes, 2500);
    }

    #[test]
    fn delay_lowered_keeps_order() {
        let mut l = LinkDir::new(params(0, 10 * MS, QueueLimit::Packets(10)), 1);
        l.arrive(0, vec![1]);
        let mut p = l.params().clone();
        p.delay_ns = MS;
        l.set_params(p, 0);
        l.arrive(MS, vec![2]);
        let a = l.pop_due(u64::MAX).unwrap();
        let b = l.pop_due(u64::MAX).unwrap();
        assert_eq!((a.data[0], b.data[0]), (1, 2));
        assert!(b.release_ns >= a.release_ns);
    }

    #[test]
    fn cut_loses_everything() {
        let mut l = LinkDir::new(params(12_000_000, 5 * MS, QueueLimit::Packets(10)), 1);
        l.arrive(0, vec![0; 100]);
        l.arrive(0, vec![0; 100]);
        let mut p = l.params().clone();
        p.cut = true;
        assert_eq!(l.set_params(p.clone(), 0).len(), 2);
        assert_eq!(l.arrive(1, vec![0; 100]).0, Verdict::Cut);
        p.cut = false;
        l.set_params(p, 2);
        assert!(matches!(l.arrive(3, vec![0; 100]).0, Verdict::Queued { .. }));
        assert_eq!(l.backlog(3).packets, 1);
    }

    #[test]
    fn loss_rate_is_bernoulli() {
        let mut p = params(0, 0, QueueLimit::Packets(1_000_000));
        p.loss = 0.01;
        let mut l = LinkDir::new(p, 42);
        let n = 200_000;
        let lost = (0..n).filter(|_| matches!(l.arrive(0, vec![0]).0, Verdict::Queued { lost: true })).count();
        // mean 2000, sd ~44.5: 5 sd
        assert!((lost as i64 - 2000).abs() < 223, "{lost}");
    }
}

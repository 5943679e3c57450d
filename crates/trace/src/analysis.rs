//! From raw samples to what a person asks: per connection, how much moved,
//! what was retransmitted, which retransmission timeouts fired and how much
//! time they cost, when the connection stalled and why; per collective, how
//! long it took and how much of that was stalled.

use crate::format::{ConnTrace, RankTrace, Sample};
use std::collections::BTreeMap;

/// TCP_CA_Recovery and TCP_CA_Loss (linux/tcp.h `tcp_ca_state`).
pub const CA_RECOVERY: u64 = 3;
pub const CA_LOSS: u64 = 4;

/// Field indices of one rank's trace (None: not recorded by that writer).
#[derive(Clone, Copy, Debug, Default)]
pub struct Idx {
    pub ca_state: Option<usize>,
    pub cwnd: Option<usize>,
    pub ssthresh: Option<usize>,
    pub rtt: Option<usize>,
    pub rttvar: Option<usize>,
    pub min_rtt: Option<usize>,
    pub rto: Option<usize>,
    pub mss: Option<usize>,
    pub unacked: Option<usize>,
    pub notsent: Option<usize>,
    pub bytes_acked: Option<usize>,
    pub bytes_received: Option<usize>,
    pub bytes_sent: Option<usize>,
    pub bytes_retrans: Option<usize>,
    pub total_retrans: Option<usize>,
    pub total_rto: Option<usize>,
    pub total_rto_recoveries: Option<usize>,
    pub total_rto_time: Option<usize>,
    pub busy_time: Option<usize>,
    pub rwnd_limited: Option<usize>,
    pub sndbuf_limited: Option<usize>,
    pub snd_wnd: Option<usize>,
    pub delivery_rate: Option<usize>,
    pub pacing_rate: Option<usize>,
    pub lost: Option<usize>,
}

impl Idx {
    pub fn of(r: &RankTrace) -> Idx {
        let f = |n: &str| r.field(n);
        Idx {
            ca_state: f("ca_state"),
            cwnd: f("snd_cwnd"),
            ssthresh: f("snd_ssthresh"),
            rtt: f("rtt"),
            rttvar: f("rttvar"),
            min_rtt: f("min_rtt"),
            rto: f("rto"),
            mss: f("snd_mss"),
            unacked: f("unacked"),
            notsent: f("notsent_bytes"),
            bytes_acked: f("bytes_acked"),
            bytes_received: f("bytes_received"),
            bytes_sent: f("bytes_sent"),
            bytes_retrans: f("bytes_retrans"),
            total_retrans: f("total_retrans"),
            total_rto: f("total_rto"),
            total_rto_recoveries: f("total_rto_recoveries"),
            total_rto_time: f("total_rto_time"),
            busy_time: f("busy_time"),
            rwnd_limited: f("rwnd_limited"),
            sndbuf_limited: f("sndbuf_limited"),
            snd_wnd: f("snd_wnd"),
            delivery_rate: f("delivery_rate"),
            pacing_rate: f("pacing_rate"),
            lost: f("lost"),
        }
    }
}

/// Value of field `i` in a sample (0 when the field is not recorded).
#[inline]
pub fn v(s: &Sample, i: Option<usize>) -> u64 {
    i.and_then(|i| s.vals.get(i).copied()).unwrap_or(0)
}

/// Why a connection stalled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// A retransmission timeout fired (or the connection was in Loss state).
    Rto,
    /// The receiver's window was closed.
    Receiver,
    /// Loss repaired without a timeout: fast retransmit, RACK, or a tail
    /// loss probe (which waits ~200 ms when one segment is outstanding).
    Recovery,
    /// Everything sent was acknowledged, yet data waits unsent in the
    /// socket (pacing, or the sender's stack holding it back).
    Unsent,
    /// Data outstanding, nothing acknowledged, no other explanation.
    Other,
}

impl Cause {
    pub fn name(self) -> &'static str {
        match self {
            Cause::Rto => "rto",
            Cause::Receiver => "receiver",
            Cause::Recovery => "recovery",
            Cause::Unsent => "unsent",
            Cause::Other => "other",
        }
    }
}

/// A time (seconds since the job's first trace started) and a count.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub t: f64,
    pub count: u64,
}

#[derive(Clone, Copy, Debug)]
pub struct Stall {
    pub start: f64,
    pub end: f64,
    pub cause: Cause,
}

impl Stall {
    pub fn len(&self) -> f64 {
        self.end - self.start
    }
}

/// One direction of a connection: what `rank` sent to `peer` (the sender's
/// congestion state is the rank's own).
#[derive(Clone, Debug)]
pub struct ConnStats {
    pub rank: u32,
    pub host: String,
    pub id: u32,
    pub peer: u32,
    pub peer_host: String,
    pub cc: String,
    pub local_addr: String,
    pub remote_addr: String,
    /// Seconds since the job's start.
    pub open: f64,
    pub close: f64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub bytes_retrans: u64,
    pub retrans_segs: u64,
    pub rtos: u64,
    pub rto_recoveries: u64,
    pub rto_time_ms: u64,
    pub max_cwnd: u64,
    pub max_cwnd_bytes: u64,
    pub mean_rtt_ms: f64,
    pub min_rtt_ms: f64,
    pub busy_ms: f64,
    pub rwnd_limited_ms: f64,
    pub sndbuf_limited_ms: f64,
    pub stalls: Vec<Stall>,
    pub rto_events: Vec<Event>,
    pub retrans_events: Vec<Event>,
    /// Intervals spent in Loss (RTO recovery) state.
    pub loss_periods: Vec<(f64, f64)>,
    pub samples: usize,
}

impl ConnStats {
    pub fn stalled(&self) -> f64 {
        self.stalls.iter().map(Stall::len).sum()
    }

    /// Time lost to retransmission timeouts: stalls that an RTO ended (the
    /// wait for the timer) or that passed in Loss state. The kernel's
    /// `total_rto_time` counts only the recovery after the timer fired.
    pub fn rto_stalled(&self) -> f64 {
        self.stalls.iter().filter(|s| s.cause == Cause::Rto).map(Stall::len).sum()
    }

    pub fn label(&self) -> String {
        format!("{} \u{2192} {}", self.rank, self.peer)
    }
}

/// One collective call on one rank, in job seconds.
#[derive(Clone, Debug)]
pub struct CollCall {
    pub rank: u32,
    pub name: String,
    pub ctx: u32,
    pub bytes: u64,
    pub begin: f64,
    pub end: f64,
    /// Seconds of the call during which one of the rank's connections stalled.
    pub stalled: f64,
    pub rtos: u64,
}

#[derive(Clone, Debug, Default)]
pub struct CollStats {
    pub name: String,
    pub ranks: usize,
    /// Calls per rank (the largest count over ranks).
    pub calls: usize,
    pub bytes_per_call: u64,
    /// Mean over ranks of the rank's total time in this collective.
    pub time: f64,
    /// Mean over ranks of the stalled time inside it.
    pub stalled: f64,
    pub rtos: u64,
    pub max_call: f64,
}

/// A whole job's trace, analysed.
pub struct Job {
    pub ranks: Vec<RankTrace>,
    /// Unix time (us) of the earliest trace start: time 0 of every plot.
    pub t0_unix_us: u64,
    pub duration: f64,
    pub conns: Vec<ConnStats>,
    pub calls: Vec<CollCall>,
    pub colls: Vec<CollStats>,
    pub warnings: Vec<String>,
}

impl Job {
    pub fn new(ranks: Vec<RankTrace>, warnings: Vec<String>) -> Job {
        let t0 = ranks.iter().map(|r| r.start_unix_us).min().unwrap_or(0);
        let mut duration: f64 = 0.0;
        let mut conns = Vec::new();
        let mut calls = Vec::new();
        for r in &ranks {
            let off = (r.start_unix_us - t0) as f64 / 1e6;
            duration = duration.max(off + r.end_us as f64 / 1e6);
            let idx = Idx::of(r);
            let mut rank_stalls: Vec<(f64, f64)> = Vec::new();
            let mut rank_rtos: Vec<f64> = Vec::new();
            for c in &r.conns {
                let cs = conn_stats(r, c, &idx, off);
                rank_stalls.extend(cs.stalls.iter().map(|s| (s.start, s.end)));
                for e in &cs.rto_events {
                    for _ in 0..e.count {
                        rank_rtos.push(e.t);
                    }
                }
                conns.push(cs);
            }
            let merged = merge(rank_stalls);
            for c in &r.colls {
                let begin = off + c.begin_us as f64 / 1e6;
                let end = off + c.end_us.unwrap_or(r.end_us) as f64 / 1e6;
                let stalled = overlap(&merged, begin, end);
                let rtos = rank_rtos.iter().filter(|&&t| t >= begin && t <= end).count() as u64;
                calls.push(CollCall { rank: r.rank, name: c.name.clone(), ctx: c.ctx, bytes: c.bytes, begin, end, stalled, rtos });
            }
        }
        let colls = coll_stats(&calls);
        Job { ranks, t0_unix_us: t0, duration, conns, calls, colls, warnings }
    }

    /// Seconds since the job's time 0 of a rank's trace time.
    pub fn offset(&self, r: &RankTrace) -> f64 {
        (r.start_unix_us - self.t0_unix_us) as f64 / 1e6
    }

    pub fn rank(&self, rank: u32) -> Option<&RankTrace> {
        self.ranks.iter().find(|r| r.rank == rank)
    }

    pub fn conn_trace(&self, cs: &ConnStats) -> Option<(&RankTrace, &ConnTrace)> {
        let r = self.rank(cs.rank)?;
        Some((r, r.conns.iter().find(|c| c.id == cs.id)?))
    }

    /// Share of the ranks' wall time their samplers spent reading TCP_INFO
    /// and, when recorded, the CPU time the sampling threads used in all
    /// (waking, sampling, writing), from the STATS records.
    pub fn sampler_load(&self) -> Option<f64> {
        self.stat_share("sample_us")
    }

    pub fn sampler_cpu(&self) -> Option<f64> {
        self.stat_share("cpu_us")
    }

    fn stat_share(&self, name: &str) -> Option<f64> {
        let mut busy = 0.0;
        let mut wall = 0.0;
        for r in &self.ranks {
            busy += r.stat(name)? as f64;
            wall += r.stat("duration_us")? as f64;
        }
        (wall > 0.0).then(|| busy / wall)
    }
}

fn merge(mut iv: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    iv.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (s, e) in iv {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn overlap(merged: &[(f64, f64)], a: f64, b: f64) -> f64 {
    merged.iter().map(|&(s, e)| (e.min(b) - s.max(a)).max(0.0)).sum()
}

/// Shortest run without progress that counts as a stall: a few sampling
/// intervals, and at least two smoothed RTTs (ACKs come once per RTT).
fn stall_threshold(r: &RankTrace, srtt_s: f64) -> f64 {
    let iv = (r.interval_us.max(100) as f64) / 1e6;
    (3.0 * iv).max(2.0 * srtt_s).max(0.005)
}

pub fn conn_stats(r: &RankTrace, c: &ConnTrace, idx: &Idx, off: f64) -> ConnStats {
    let ts = |t_us: u64| off + t_us as f64 / 1e6;
    let s = &c.samples;
    let last = s.last();
    let fin = |i: Option<usize>| last.map_or(0, |l| v(l, i));
    let mut max_cwnd = 0;
    let mut max_cwnd_bytes = 0;
    let mut rtt_sum = 0.0;
    let mut rtt_n = 0usize;
    let mut min_rtt = f64::INFINITY;
    let mut rto_events = Vec::new();
    let mut retrans_events = Vec::new();
    let mut loss_periods = Vec::new();
    let mut loss_start: Option<f64> = None;
    for (k, smp) in s.iter().enumerate() {
        let cw = v(smp, idx.cwnd);
        max_cwnd = max_cwnd.max(cw);
        max_cwnd_bytes = max_cwnd_bytes.max(cw * v(smp, idx.mss));
        let rtt = v(smp, idx.rtt);
        let busy = v(smp, idx.unacked) > 0 || k > 0 && v(smp, idx.bytes_acked) != v(&s[k - 1], idx.bytes_acked);
        if rtt > 0 && busy {
            rtt_sum += rtt as f64;
            rtt_n += 1;
        }
        let mr = v(smp, idx.min_rtt);
        if mr > 0 && mr < u32::MAX as u64 {
            min_rtt = min_rtt.min(mr as f64);
        }
        if k > 0 {
            let p = &s[k - 1];
            let d_rto = v(smp, idx.total_rto).saturating_sub(v(p, idx.total_rto));
            if d_rto > 0 {
                rto_events.push(Event { t: ts(smp.t_us), count: d_rto });
            }
            let d_rt = v(smp, idx.total_retrans).saturating_sub(v(p, idx.total_retrans));
            if d_rt > 0 {
                retrans_events.push(Event { t: ts(smp.t_us), count: d_rt });
            }
        } else {
            // Retransmissions before the first sample (SYN, handshake).
            if v(smp, idx.total_rto) > 0 {
                rto_events.push(Event { t: ts(smp.t_us), count: v(smp, idx.total_rto) });
            }
            if v(smp, idx.total_retrans) > 0 {
                retrans_events.push(Event { t: ts(smp.t_us), count: v(smp, idx.total_retrans) });
            }
        }
        let in_loss = v(smp, idx.ca_state) == CA_LOSS;
        match (in_loss, loss_start) {
            (true, None) => loss_start = Some(ts(smp.t_us)),
            (false, Some(st)) => {
                loss_periods.push((st, ts(smp.t_us)));
                loss_start = None;
            }
            _ => {}
        }
    }
    if let (Some(st), Some(l)) = (loss_start, last) {
        loss_periods.push((st, ts(l.t_us)));
    }
    let mean_rtt_ms = if rtt_n > 0 { rtt_sum / rtt_n as f64 / 1000.0 } else { 0.0 };
    let stalls = find_stalls(r, s, idx, off, mean_rtt_ms / 1000.0);
    ConnStats {
        rank: r.rank,
        host: r.host.clone(),
        id: c.id,
        peer: c.peer,
        peer_host: c.peer_host.clone(),
        cc: c.congestion_control.clone(),
        local_addr: c.local_addr.clone(),
        remote_addr: c.remote_addr.clone(),
        open: ts(c.open_us),
        close: ts(c.close_us.unwrap_or(r.end_us)),
        bytes_sent: fin(idx.bytes_acked),
        bytes_received: fin(idx.bytes_received),
        bytes_retrans: fin(idx.bytes_retrans),
        retrans_segs: fin(idx.total_retrans),
        rtos: fin(idx.total_rto),
        rto_recoveries: fin(idx.total_rto_recoveries),
        rto_time_ms: fin(idx.total_rto_time),
        max_cwnd,
        max_cwnd_bytes,
        mean_rtt_ms,
        min_rtt_ms: if min_rtt.is_finite() { min_rtt / 1000.0 } else { 0.0 },
        busy_ms: fin(idx.busy_time) as f64 / 1000.0,
        rwnd_limited_ms: fin(idx.rwnd_limited) as f64 / 1000.0,
        sndbuf_limited_ms: fin(idx.sndbuf_limited) as f64 / 1000.0,
        stalls,
        rto_events,
        retrans_events,
        loss_periods,
        samples: s.len(),
    }
}

/// Runs of samples during which data was outstanding and nothing new was
/// acknowledged, at least [`stall_threshold`] long; with their cause.
fn find_stalls(r: &RankTrace, s: &[Sample], idx: &Idx, off: f64, srtt_s: f64) -> Vec<Stall> {
    let thr = stall_threshold(r, srtt_s);
    let ts = |t_us: u64| off + t_us as f64 / 1e6;
    let mut out = Vec::new();
    let mut run: Option<(usize, Cause)> = None;
    let close = |out: &mut Vec<Stall>, start: usize, end: usize, cause: Cause| {
        let (a, b) = (ts(s[start].t_us), ts(s[end].t_us));
        if b - a >= thr {
            out.push(Stall { start: a, end: b, cause });
        }
    };
    for k in 1..s.len() {
        let (p, q) = (&s[k - 1], &s[k]);
        let pending = v(p, idx.unacked) > 0 || v(p, idx.notsent) > 0;
        let progress = v(q, idx.bytes_acked) != v(p, idx.bytes_acked);
        if pending && !progress {
            let cause = if v(q, idx.total_rto) > v(p, idx.total_rto) || v(q, idx.ca_state) == CA_LOSS || v(p, idx.ca_state) == CA_LOSS {
                Cause::Rto
            } else if v(p, idx.unacked) == 0 && v(p, idx.snd_wnd) == 0
                || v(q, idx.rwnd_limited) > v(p, idx.rwnd_limited) && v(p, idx.unacked) == 0
            {
                Cause::Receiver
            } else if v(q, idx.ca_state) == CA_RECOVERY || v(q, idx.total_retrans) > v(p, idx.total_retrans) {
                Cause::Recovery
            } else if v(p, idx.unacked) == 0 && v(q, idx.unacked) == 0 {
                Cause::Unsent
            } else {
                Cause::Other
            };
            run = Some(match run {
                None => (k - 1, cause),
                Some((st, c)) => (st, c.min(cause)),
            });
        } else if let Some((st, c)) = run.take() {
            // The stall ends when progress shows: at this sample. An RTO that
            // fired since the previous sample is what ended it.
            let c = if v(q, idx.total_rto) > v(p, idx.total_rto) {
                Cause::Rto
            } else if v(q, idx.total_retrans) > v(p, idx.total_retrans) {
                c.min(Cause::Recovery)
            } else {
                c
            };
            close(&mut out, st, k, c);
        }
    }
    if let Some((st, c)) = run {
        close(&mut out, st, s.len() - 1, c);
    }
    out
}

fn coll_stats(calls: &[CollCall]) -> Vec<CollStats> {
    let mut by_name: BTreeMap<&str, Vec<&CollCall>> = BTreeMap::new();
    for c in calls {
        by_name.entry(&c.name).or_default().push(c);
    }
    let mut out = Vec::new();
    for (name, cs) in by_name {
        let mut per_rank: BTreeMap<u32, (usize, f64, f64)> = BTreeMap::new();
        let mut rtos = 0;
        let mut max_call: f64 = 0.0;
        let mut bytes = 0;
        for c in &cs {
            let e = per_rank.entry(c.rank).or_default();
            e.0 += 1;
            e.1 += c.end - c.begin;
            e.2 += c.stalled;
            rtos += c.rtos;
            max_call = max_call.max(c.end - c.begin);
            bytes = bytes.max(c.bytes);
        }
        let n = per_rank.len().max(1) as f64;
        out.push(CollStats {
            name: name.to_string(),
            ranks: per_rank.len(),
            calls: per_rank.values().map(|e| e.0).max().unwrap_or(0),
            bytes_per_call: bytes,
            time: per_rank.values().map(|e| e.1).sum::<f64>() / n,
            stalled: per_rank.values().map(|e| e.2).sum::<f64>() / n,
            rtos,
            max_call,
        });
    }
    out
}

/// Bytes moved per time bin: the counter `field` of `samples`, spread
/// evenly over each interval between samples. Bins start at `t_start`
/// (job seconds) and are `bin` seconds wide.
pub fn rate_bins(samples: &[Sample], field: Option<usize>, off: f64, t_start: f64, bin: f64, out: &mut [f64]) {
    let Some(_) = field else { return };
    for w in samples.windows(2) {
        let (p, q) = (&w[0], &w[1]);
        let d = v(q, field).saturating_sub(v(p, field)) as f64;
        if d <= 0.0 {
            continue;
        }
        let a = off + p.t_us as f64 / 1e6;
        let b = off + q.t_us as f64 / 1e6;
        spread(d, a, b, t_start, bin, out);
    }
}

fn spread(amount: f64, a: f64, b: f64, t_start: f64, bin: f64, out: &mut [f64]) {
    if out.is_empty() {
        return;
    }
    let n = out.len();
    if b <= a {
        let i = (((a - t_start) / bin).floor().max(0.0) as usize).min(n - 1);
        out[i] += amount;
        return;
    }
    let first = ((a - t_start) / bin).floor().max(0.0) as usize;
    let last = (((b - t_start) / bin).floor().max(0.0) as usize).min(n - 1);
    let first = first.min(n - 1);
    for (i, slot) in out.iter_mut().enumerate().take(last + 1).skip(first) {
        let lo = t_start + i as f64 * bin;
        let hi = lo + bin;
        let part = (b.min(hi) - a.max(lo)).max(0.0) / (b - a);
        *slot += amount * part;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ConnTrace;

    fn rank_with(fields: &[&str], rows: &[(u64, &[u64])]) -> RankTrace {
        let samples = rows.iter().map(|(t, vals)| Sample { t_us: *t, vals: vals.to_vec().into_boxed_slice() }).collect();
        RankTrace {
            rank: 0,
            interval_us: 1000,
            fields: fields.iter().map(|s| s.to_string()).collect(),
            conns: vec![ConnTrace {
                id: 0,
                peer: 1,
                peer_host: "b".into(),
                local_addr: String::new(),
                remote_addr: String::new(),
                congestion_control: "cubic".into(),
                sndbuf: 0,
                rcvbuf: 0,
                avail: u64::MAX,
                open_us: 0,
                close_us: None,
                samples,
            }],
            end_us: rows.last().unwrap().0,
            ..Default::default()
        }
    }

    #[test]
    fn an_rto_stall_is_found_and_counted() {
        let f = ["ca_state", "unacked", "bytes_acked", "total_rto", "total_retrans", "snd_cwnd", "rtt"];
        // 1 ms samples; data outstanding and no progress from 3 ms to 215 ms,
        // where an RTO fires (cwnd falls to 1).
        let mut rows: Vec<(u64, Vec<u64>)> = Vec::new();
        rows.push((0, vec![0, 10, 0, 0, 0, 10, 100]));
        rows.push((1000, vec![0, 10, 1000, 0, 0, 20, 100]));
        rows.push((3000, vec![0, 5, 2000, 0, 0, 30, 100]));
        rows.push((100_000, vec![0, 5, 2000, 0, 0, 30, 100]));
        rows.push((215_000, vec![4, 5, 2000, 1, 1, 1, 100]));
        rows.push((216_000, vec![0, 0, 9000, 1, 1, 2, 100]));
        let rows2: Vec<(u64, &[u64])> = rows.iter().map(|(t, v)| (*t, v.as_slice())).collect();
        let r = rank_with(&f, &rows2);
        let job = Job::new(vec![r], vec![]);
        let c = &job.conns[0];
        assert_eq!(c.rtos, 1);
        assert_eq!(c.retrans_segs, 1);
        assert_eq!(c.max_cwnd, 30);
        assert_eq!(c.bytes_sent, 9000);
        assert_eq!(c.stalls.len(), 1, "{:?}", c.stalls);
        let st = c.stalls[0];
        assert_eq!(st.cause, Cause::Rto);
        assert!((st.start - 0.003).abs() < 1e-9 && (st.end - 0.216).abs() < 1e-9, "{st:?}");
        assert_eq!(c.rto_events.len(), 1);
        assert!((c.rto_events[0].t - 0.215).abs() < 1e-9);
        assert_eq!(c.loss_periods, vec![(0.215, 0.216)]);
    }

    #[test]
    fn short_gaps_are_not_stalls() {
        let f = ["unacked", "bytes_acked", "rtt"];
        let rows: Vec<(u64, &[u64])> = vec![(0, &[5, 0, 100]), (1000, &[5, 0, 100]), (2000, &[0, 10, 100])];
        let job = Job::new(vec![rank_with(&f, &rows)], vec![]);
        assert!(job.conns[0].stalls.is_empty());
    }

    #[test]
    fn rates_spread_over_bins() {
        let s = vec![
            Sample { t_us: 0, vals: vec![0].into() },
            Sample { t_us: 2_000_000, vals: vec![2000].into() },
        ];
        let mut bins = vec![0.0; 4];
        rate_bins(&s, Some(0), 0.0, 0.0, 1.0, &mut bins);
        assert_eq!(bins, vec![1000.0, 1000.0, 0.0, 0.0]);
        assert_eq!(merge(vec![(0.0, 1.0), (0.5, 2.0), (3.0, 4.0)]), vec![(0.0, 2.0), (3.0, 4.0)]);
        assert_eq!(overlap(&[(0.0, 2.0), (3.0, 4.0)], 1.0, 3.5), 1.5);
    }
}

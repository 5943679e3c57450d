//! `gridmpi-trace report`: one self-contained HTML page (inline SVG, CSS and
//! a few lines of JavaScript for choosing connections; nothing is fetched).
//!
//! What it shows, top to bottom:
//! 1. throughput of every rank over time (what it sent over TCP), with
//!    collectives shaded and RTOs marked on the time axis;
//! 2. a timeline with one row per connection: throughput as shades of blue,
//!    stalls as bars coloured by cause, RTOs as red triangles,
//!    retransmissions as orange ticks: which connection stalled, when, for
//!    how long, and why;
//! 3. the summary tables;
//! 4. per connection (selectable): congestion window and ssthresh,
//!    throughput, smoothed RTT, with RTOs, retransmissions, Loss-state
//!    periods and the rank's collectives marked.

use crate::analysis::{rate_bins, v, Cause, ConnStats, Idx, Job};
use crate::summary::{bytes, secs};
use std::fmt::Write;

const PALETTE: &[&str] = &["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"];
const W: f64 = 1100.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 20.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Round tick positions covering [lo, hi].
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let mut out = Vec::new();
    let mut t = (lo / step).ceil() * step;
    while t <= hi + step * 1e-9 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    out
}

fn num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v.abs() >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{}", (v * 10.0).round() / 10.0)
    } else {
        format!("{}", (v * 1000.0).round() / 1000.0)
    }
}

/// A plot area: pixel box and data ranges.
#[derive(Clone, Copy)]
struct Frame {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    t0: f64,
    t1: f64,
    v0: f64,
    v1: f64,
}

impl Frame {
    fn px(&self, t: f64) -> f64 {
        self.x + (t - self.t0) / (self.t1 - self.t0) * self.w
    }
    fn py(&self, v: f64) -> f64 {
        let v = v.clamp(self.v0, self.v1);
        self.y + self.h - (v - self.v0) / (self.v1 - self.v0) * self.h
    }

    fn axes(&self, s: &mut String, ylabel: &str, xlabel: bool) {
        let _ = write!(s, r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#fff" stroke="#bbb"/>"##, self.x, self.y, self.w, self.h);
        for t in ticks(self.v0, self.v1, 4) {
            let y = self.py(t);
            let _ = write!(
                s,
                r##"<line x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="tk">{}</text>"##,
                self.x,
                self.x + self.w,
                self.x - 5.0,
                y + 4.0,
                num(t)
            );
        }
        for t in ticks(self.t0, self.t1, 10) {
            let x = self.px(t);
            let _ = write!(s, r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#f2f2f2"/>"##, self.y, self.y + self.h);
            if xlabel {
                let _ = write!(s, r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" class="tk">{}</text>"##, self.y + self.h + 14.0, num(t));
            }
        }
        let _ = write!(
            s,
            r##"<text transform="translate({:.1},{:.1}) rotate(-90)" text-anchor="middle" class="ax">{}</text>"##,
            self.x - 52.0,
            self.y + self.h / 2.0,
            esc(ylabel)
        );
    }
}

type Pt = (f64, f64);

/// The points of one pixel column: first, lowest, highest, last.
struct Column {
    x: i64,
    first: Pt,
    lo: Pt,
    hi: Pt,
    last: Pt,
}

/// Points of a step series reduced to at most a few per pixel column
/// (first, min, max, last of each column), so drops stay visible.
fn reduce(points: &[Pt], f: &Frame) -> Vec<Pt> {
    let mut out: Vec<Pt> = Vec::new();
    let flush = |out: &mut Vec<Pt>, c: &Column| {
        let mut pts = vec![c.first, c.lo, c.hi, c.last];
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        out.extend(pts);
    };
    let mut col: Option<Column> = None;
    for &(t, val) in points {
        let x = f.px(t).floor() as i64;
        match &mut col {
            Some(cur) if cur.x == x => {
                if val < cur.lo.1 {
                    cur.lo = (t, val);
                }
                if val > cur.hi.1 {
                    cur.hi = (t, val);
                }
                cur.last = (t, val);
            }
            _ => {
                if let Some(cur) = col.take() {
                    flush(&mut out, &cur);
                }
                col = Some(Column { x, first: (t, val), lo: (t, val), hi: (t, val), last: (t, val) });
            }
        }
    }
    if let Some(cur) = col {
        flush(&mut out, &cur);
    }
    out
}

/// A step line through (t, value) points.
fn step_path(points: &[(f64, f64)], f: &Frame) -> String {
    let mut d = String::new();
    let mut prev_y: Option<f64> = None;
    for &(t, val) in points {
        let x = f.px(t);
        let y = f.py(val);
        match prev_y {
            None => {
                let _ = write!(d, "M{x:.1} {y:.1}");
            }
            Some(py) => {
                let _ = write!(d, "H{x:.1}");
                if (py - y).abs() > 0.05 {
                    let _ = write!(d, "V{y:.1}");
                }
            }
        }
        prev_y = Some(y);
    }
    d
}

/// A filled area of per-bin values.
fn bins_area(values: &[f64], t_start: f64, bin: f64, f: &Frame) -> String {
    let mut d = format!("M{:.1} {:.1}", f.px(t_start), f.py(0.0));
    for (i, val) in values.iter().enumerate() {
        let a = f.px(t_start + i as f64 * bin);
        let b = f.px(t_start + (i + 1) as f64 * bin);
        let y = f.py(*val);
        let _ = write!(d, "L{a:.1} {y:.1}L{b:.1} {y:.1}");
    }
    let _ = write!(d, "L{:.1} {:.1}Z", f.px(t_start + values.len() as f64 * bin), f.py(0.0));
    d
}

fn bins_line(values: &[f64], t_start: f64, bin: f64, f: &Frame) -> String {
    let mut d = String::new();
    for (i, val) in values.iter().enumerate() {
        let x = f.px(t_start + (i as f64 + 0.5) * bin);
        let _ = write!(d, "{}{x:.1} {:.1}", if i == 0 { "M" } else { "L" }, f.py(*val));
    }
    d
}

fn cause_color(c: Cause) -> &'static str {
    match c {
        Cause::Rto => "#d62728",
        Cause::Recovery => "#ff7f0e",
        Cause::Receiver => "#9467bd",
        Cause::Unsent => "#8c564b",
        Cause::Other => "#7f7f7f",
    }
}

/// Collective calls of a rank as shaded bands (merged when closer than a pixel).
fn coll_bands(s: &mut String, job: &Job, rank: u32, f: &Frame) {
    let mut last: Option<(f64, f64, String, usize)> = None;
    let emit = |s: &mut String, b: (f64, f64, String, usize)| {
        let (a, e, name, n) = b;
        let x0 = f.px(a);
        let x1 = f.px(e).max(x0 + 0.8);
        let title = if n == 1 { format!("{name}: {:.3}-{:.3} s", a, e) } else { format!("{n} calls of {name}: {:.3}-{:.3} s", a, e) };
        let _ = write!(
            s,
            r##"<rect class="coll" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect>"##,
            f.y,
            x1 - x0,
            f.h,
            esc(&title)
        );
    };
    for c in job.calls.iter().filter(|c| c.rank == rank) {
        match &mut last {
            Some(b) if b.2 == c.name && f.px(c.begin) - f.px(b.1) < 1.0 => {
                b.1 = c.end;
                b.3 += 1;
            }
            _ => {
                if let Some(b) = last.take() {
                    emit(s, b);
                }
                last = Some((c.begin, c.end, c.name.clone(), 1));
            }
        }
    }
    if let Some(b) = last {
        emit(s, b);
    }
}

fn bin_width(job: &Job) -> f64 {
    let iv = job.ranks.iter().map(|r| r.interval_us).min().unwrap_or(1000).max(100) as f64 / 1e6;
    (job.duration / 500.0).max(2.0 * iv)
}

/// Sent-throughput bins (Mbit/s) of one connection.
fn conn_rate(job: &Job, c: &ConnStats, field: &str, t_end: f64, bin: f64) -> Vec<f64> {
    let n = ((t_end / bin).ceil() as usize).max(1);
    let mut out = vec![0.0; n];
    if let Some((r, ct)) = job.conn_trace(c) {
        rate_bins(&ct.samples, r.field(field), job.offset(r), 0.0, bin, &mut out);
    }
    for x in out.iter_mut() {
        *x = *x * 8.0 / bin / 1e6;
    }
    out
}

fn overview(s: &mut String, job: &Job) {
    let t1 = job.duration.max(1e-3);
    let bin = bin_width(job);
    let mut per_rank: Vec<(u32, Vec<f64>)> = Vec::new();
    for r in &job.ranks {
        let mut sum: Vec<f64> = Vec::new();
        for c in job.conns.iter().filter(|c| c.rank == r.rank) {
            let b = conn_rate(job, c, "bytes_acked", t1, bin);
            if sum.len() < b.len() {
                sum.resize(b.len(), 0.0);
            }
            for (i, x) in b.iter().enumerate() {
                sum[i] += x;
            }
        }
        per_rank.push((r.rank, sum));
    }
    let vmax = per_rank.iter().flat_map(|(_, b)| b.iter().copied()).fold(0.0, f64::max).max(1e-3) * 1.08;
    let h = 220.0;
    let f = Frame { x: LEFT, y: 22.0, w: W - LEFT - RIGHT, h, t0: 0.0, t1, v0: 0.0, v1: vmax };
    let _ = write!(s, r##"<svg class="chart" width="{W}" height="{:.0}" viewBox="0 0 {W} {:.0}">"##, h + 60.0, h + 60.0);
    f.axes(s, "sent, Mbit/s", true);
    if let Some(r0) = job.calls.first().map(|c| c.rank) {
        coll_bands(s, job, r0, &f);
    }
    for (i, (rank, b)) in per_rank.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let _ = write!(s, r##"<path d="{}" fill="none" stroke="{color}" stroke-width="1.4"><title>rank {rank}</title></path>"##, bins_line(b, 0.0, bin, &f));
    }
    // RTOs of every connection on the top edge.
    for c in &job.conns {
        for e in &c.rto_events {
            let x = f.px(e.t);
            let _ = write!(
                s,
                r##"<path d="M{:.1} {:.1}l5 -9h-10z" fill="#d62728"><title>RTO: rank {} → {} at {:.3} s</title></path>"##,
                x,
                f.y,
                c.rank,
                c.peer,
                e.t
            );
        }
    }
    let _ = write!(s, r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="ax">time, s</text>"##, f.x + f.w / 2.0, f.y + f.h + 32.0);
    // Legend.
    let mut x = f.x;
    for (i, (rank, _)) in per_rank.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let host = job.rank(*rank).map_or("", |r| r.host.as_str());
        let label = format!("rank {rank} ({host})");
        let _ = write!(s, r##"<rect x="{x:.1}" y="6" width="14" height="4" fill="{color}"/><text x="{:.1}" y="12" class="lg">{}</text>"##, x + 18.0, esc(&label));
        x += 30.0 + label.len() as f64 * 6.5;
    }
    let _ = write!(s, r##"<path d="M{:.1} 12l5 -9h-10z" fill="#d62728"/><text x="{:.1}" y="12" class="lg">RTO</text>"##, x + 5.0, x + 14.0);
    x += 50.0;
    if let Some(c) = job.calls.first() {
        let _ = write!(s, r##"<rect x="{x:.1}" y="3" width="14" height="10" class="coll"/><text x="{:.1}" y="12" class="lg">collective (rank {})</text>"##, x + 18.0, c.rank);
    }
    s.push_str("</svg>");
}

fn timeline(s: &mut String, job: &Job) {
    let t1 = job.duration.max(1e-3);
    let bin = bin_width(job);
    let row = 22.0;
    let top = 24.0;
    let n = job.conns.len().max(1);
    let h = top + row * n as f64 + 40.0;
    let left = 170.0;
    let f = Frame { x: left, y: top, w: W - left - RIGHT, h: row * n as f64, t0: 0.0, t1, v0: 0.0, v1: 1.0 };
    let _ = write!(s, r##"<svg class="chart" width="{W}" height="{h:.0}" viewBox="0 0 {W} {h:.0}">"##);
    let _ = write!(s, r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#fff" stroke="#bbb"/>"##, f.x, f.y, f.w, f.h);
    for t in ticks(0.0, t1, 10) {
        let x = f.px(t);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" class="tk">{}</text>"##,
            f.y,
            f.y + f.h,
            f.y + f.h + 14.0,
            num(t)
        );
    }
    let rates: Vec<Vec<f64>> = job.conns.iter().map(|c| conn_rate(job, c, "bytes_acked", t1, bin)).collect();
    let rmax = rates.iter().flat_map(|b| b.iter().copied()).fold(0.0, f64::max).max(1e-9);
    for (i, c) in job.conns.iter().enumerate() {
        let y = top + row * i as f64;
        let rf = Frame { y, h: row, ..f };
        if i % 2 == 1 {
            let _ = write!(s, r##"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{row}" fill="#fafafa"/>"##, f.x, f.w);
        }
        let label = format!("{}  {}", c.label(), c.peer_host);
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" class="lg rowlabel" data-conn="{i}">{}</text>"##,
            left - 6.0,
            y + row / 2.0 + 4.0,
            esc(&label)
        );
        // Throughput shades, quantized to 8 levels and merged.
        let b = &rates[i];
        let mut k = 0;
        while k < b.len() {
            let level = ((b[k] / rmax) * 8.0).ceil() as i32;
            let mut e = k + 1;
            while e < b.len() && ((b[e] / rmax) * 8.0).ceil() as i32 == level {
                e += 1;
            }
            if level > 0 {
                let x0 = rf.px(k as f64 * bin);
                let x1 = rf.px((e as f64 * bin).min(t1));
                let _ = write!(
                    s,
                    r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#1f77b4" fill-opacity="{:.2}"/>"##,
                    y + 3.0,
                    (x1 - x0).max(0.5),
                    row - 6.0,
                    0.12 + 0.1 * level as f64
                );
            }
            k = e;
        }
        for st in &c.stalls {
            let x0 = rf.px(st.start);
            let x1 = rf.px(st.end).max(x0 + 1.5);
            let _ = write!(
                s,
                r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="6" fill="{}"><title>{} → {}: stalled {} from {:.3} s ({})</title></rect>"##,
                y + row - 8.0,
                x1 - x0,
                cause_color(st.cause),
                c.rank,
                c.peer,
                secs(st.len()),
                st.start,
                st.cause.name()
            );
        }
        for e in &c.retrans_events {
            let x = rf.px(e.t);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#333" stroke-width="1"><title>{} segment(s) retransmitted at {:.3} s</title></line>"##,
                y + 2.0,
                y + 9.0,
                e.count,
                e.t
            );
        }
        for e in &c.rto_events {
            let x = rf.px(e.t);
            let _ = write!(
                s,
                r##"<path d="M{x:.1} {:.1}l5 -9h-10z" fill="#d62728" stroke="#fff" stroke-width="0.5"><title>RTO ({}) at {:.3} s</title></path>"##,
                y + 11.0,
                e.count,
                e.t
            );
        }
    }
    let ly = top + row * n as f64 + 32.0;
    let mut x = left;
    let _ = write!(s, r##"<rect x="{x:.1}" y="{:.1}" width="14" height="10" fill="#1f77b4" fill-opacity="0.6"/><text x="{:.1}" y="{ly:.1}" class="lg">throughput</text>"##, ly - 9.0, x + 18.0);
    x += 100.0;
    for c in [Cause::Rto, Cause::Recovery, Cause::Receiver, Cause::Unsent, Cause::Other] {
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="{:.1}" width="14" height="6" fill="{}"/><text x="{:.1}" y="{ly:.1}" class="lg">stall: {}</text>"##,
            ly - 7.0,
            cause_color(c),
            x + 18.0,
            c.name()
        );
        x += 104.0;
    }
    let _ = write!(s, r##"<path d="M{:.1} {:.1}l5 -9h-10z" fill="#d62728"/><text x="{:.1}" y="{ly:.1}" class="lg">RTO</text>"##, x + 5.0, ly + 1.0, x + 14.0);
    x += 55.0;
    let _ = write!(s, r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#333" stroke-width="1.5"/><text x="{:.1}" y="{ly:.1}" class="lg">retransmission</text>"##, ly - 9.0, ly, x + 6.0);
    let _ = write!(s, r##"<text x="{:.1}" y="{ly:.1}" text-anchor="end" class="tk">time, s</text>"##, f.x + f.w);
    s.push_str("</svg>");
}

/// The three charts of one connection.
fn conn_panel(s: &mut String, job: &Job, i: usize, c: &ConnStats, shown: bool) {
    let Some((r, ct)) = job.conn_trace(c) else { return };
    let idx = Idx::of(r);
    let off = job.offset(r);
    let t1 = job.duration.max(1e-3);
    let pts = |field: Option<usize>, scale: f64| -> Vec<(f64, f64)> {
        ct.samples.iter().map(|sm| (off + sm.t_us as f64 / 1e6, v(sm, field) as f64 * scale)).collect()
    };
    let cwnd = pts(idx.cwnd, 1.0);
    let ssth: Vec<(f64, f64)> = pts(idx.ssthresh, 1.0).into_iter().filter(|p| p.1 < 1e9).collect();
    let rtt = pts(idx.rtt, 1e-3);
    let bin = bin_width(job);
    let sent = conn_rate(job, c, "bytes_acked", t1, bin);
    let recv = conn_rate(job, c, "bytes_received", t1, bin);

    let _ = write!(
        s,
        r##"<div class="conn" id="conn-{i}" style="display:{}"><h3>rank {} ({}) → rank {} ({}) <span class="sub">{} → {}, {}; sent {}, {} retransmitted segments, {} RTOs, {} lost to RTOs, stalled {}</span></h3>"##,
        if shown { "block" } else { "none" },
        c.rank,
        esc(&c.host),
        c.peer,
        esc(&c.peer_host),
        esc(&c.local_addr),
        esc(&c.remote_addr),
        esc(&c.cc),
        bytes(c.bytes_sent),
        c.retrans_segs,
        c.rtos,
        secs(c.rto_stalled()),
        secs(c.stalled())
    );
    let ch = 130.0;
    let gap = 26.0;
    let total = 14.0 + 3.0 * ch + 2.0 * gap + 40.0;
    let _ = write!(s, r##"<svg class="chart" width="{W}" height="{total:.0}" viewBox="0 0 {W} {total:.0}">"##);
    let cmax = cwnd.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
    let smax = sent.iter().chain(recv.iter()).copied().fold(0.0, f64::max).max(1e-3) * 1.1;
    let rmax = rtt.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-3) * 1.1;
    let frames = [
        Frame { x: LEFT, y: 14.0, w: W - LEFT - RIGHT, h: ch, t0: 0.0, t1, v0: 0.0, v1: cmax },
        Frame { x: LEFT, y: 14.0 + ch + gap, w: W - LEFT - RIGHT, h: ch, t0: 0.0, t1, v0: 0.0, v1: smax },
        Frame { x: LEFT, y: 14.0 + 2.0 * (ch + gap), w: W - LEFT - RIGHT, h: ch, t0: 0.0, t1, v0: 0.0, v1: rmax },
    ];
    let labels = ["cwnd, segments", "Mbit/s", "srtt, ms"];
    for (k, f) in frames.iter().enumerate() {
        f.axes(s, labels[k], k == 2);
        coll_bands(s, job, c.rank, f);
        for &(a, b) in &c.loss_periods {
            let x0 = f.px(a);
            let _ = write!(s, r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#d62728" fill-opacity="0.12"/>"##, f.y, (f.px(b) - x0).max(1.0), f.h);
        }
    }
    let f = &frames[0];
    let _ = write!(s, r##"<path d="{}" fill="none" stroke="#888" stroke-dasharray="4 3" stroke-width="1"/>"##, step_path(&reduce(&ssth, f), f));
    let _ = write!(s, r##"<path d="{}" fill="none" stroke="#1f77b4" stroke-width="1.4"/>"##, step_path(&reduce(&cwnd, f), f));
    for e in &c.retrans_events {
        let x = f.px(e.t);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#333" stroke-width="1"><title>{} segment(s) retransmitted at {:.3} s</title></line>"##,
            f.y + f.h - 10.0,
            f.y + f.h,
            e.count,
            e.t
        );
    }
    let f = &frames[1];
    let _ = write!(s, r##"<path d="{}" fill="#1f77b4" fill-opacity="0.25" stroke="#1f77b4" stroke-width="1"/>"##, bins_area(&sent, 0.0, bin, f));
    let _ = write!(s, r##"<path d="{}" fill="none" stroke="#2ca02c" stroke-width="1" stroke-dasharray="3 2"/>"##, bins_line(&recv, 0.0, bin, f));
    let f = &frames[2];
    let _ = write!(s, r##"<path d="{}" fill="none" stroke="#9467bd" stroke-width="1.2"/>"##, step_path(&reduce(&rtt, f), f));
    // RTOs across all three charts.
    for e in &c.rto_events {
        let x = frames[0].px(e.t);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#d62728" stroke-width="1.2"><title>RTO at {:.3} s</title></line><path d="M{x:.1} {:.1}l5 -9h-10z" fill="#d62728"><title>RTO at {:.3} s</title></path>"##,
            frames[0].y,
            frames[2].y + frames[2].h,
            e.t,
            frames[0].y,
            e.t
        );
    }
    // Legend.
    let ly = frames[2].y + frames[2].h + 32.0;
    let items: [(&str, &str); 7] = [
        ("M0 0h16", "stroke=\"#1f77b4\" stroke-width=\"2\""),
        ("M0 0h16", "stroke=\"#888\" stroke-dasharray=\"4 3\""),
        ("M0 0h16", "stroke=\"#1f77b4\" stroke-width=\"6\" stroke-opacity=\"0.3\""),
        ("M0 0h16", "stroke=\"#2ca02c\" stroke-dasharray=\"3 2\""),
        ("M0 0h16", "stroke=\"#9467bd\" stroke-width=\"2\""),
        ("M8 -6v10", "stroke=\"#d62728\" stroke-width=\"2\""),
        ("M8 -6v10", "stroke=\"#333\" stroke-width=\"1.5\""),
    ];
    let names = ["cwnd", "ssthresh", "sent (acked)", "received", "smoothed RTT", "RTO", "retransmission"];
    let mut x = LEFT;
    for (k, (d, style)) in items.iter().enumerate() {
        let _ = write!(s, r##"<path transform="translate({x:.1},{:.1})" d="{d}" {style} fill="none"/><text x="{:.1}" y="{ly:.1}" class="lg">{}</text>"##, ly - 4.0, x + 20.0, names[k]);
        x += 34.0 + names[k].len() as f64 * 6.5;
    }
    let _ = write!(s, r##"<rect x="{x:.1}" y="{:.1}" width="14" height="10" fill="#d62728" fill-opacity="0.15"/><text x="{:.1}" y="{ly:.1}" class="lg">Loss state (RTO recovery)</text>"##, ly - 9.0, x + 18.0);
    x += 190.0;
    if job.calls.iter().any(|k| k.rank == c.rank) {
        let _ = write!(s, r##"<rect x="{x:.1}" y="{:.1}" width="14" height="10" class="coll"/><text x="{:.1}" y="{ly:.1}" class="lg">collective</text>"##, ly - 9.0, x + 18.0);
    }
    let _ = write!(s, r##"<text x="{:.1}" y="{ly:.1}" text-anchor="end" class="tk">time, s</text>"##, W - RIGHT);
    s.push_str("</svg>");
    // Tuning applied to this connection.
    let tunings: Vec<String> = r
        .tunings
        .iter()
        .filter(|t| t.peer == c.peer && t.conn.is_none_or(|id| id == ct.id))
        .map(|t| format!("{:.3} s: {} = {}", off + t.t_us as f64 / 1e6, esc(&t.option), esc(&t.value)))
        .collect();
    if !tunings.is_empty() {
        let _ = write!(s, r##"<p class="sub">tuning: {}</p>"##, tunings.join("; "));
    }
    s.push_str("</div>");
}

fn table_html(t: &crate::summary::Table) -> String {
    // Re-render the text table as HTML: split the text rendering's columns
    // would lose alignment; build it from the rows directly instead.
    t.html()
}

const STYLE: &str = r#"
body { font: 14px/1.4 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 18px 24px; color: #222; background: #f7f7f7; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 22px 0 6px; } h3 { font-size: 14px; margin: 14px 0 2px; }
.meta, .sub { color: #555; font-weight: normal; font-size: 12.5px; }
.chart { background: #fff; border: 1px solid #ddd; display: block; }
.chart text { font-family: inherit; }
.tk { font-size: 10.5px; fill: #555; } .ax { font-size: 11.5px; fill: #333; } .lg { font-size: 11.5px; fill: #333; }
.coll { fill: #999; fill-opacity: 0.16; }
.rowlabel { cursor: pointer; } .rowlabel:hover { fill: #1f77b4; text-decoration: underline; }
table { border-collapse: collapse; background: #fff; font-size: 12.5px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; } th { background: #eee; } td.r { text-align: right; }
tr.bad td { background: #fdecea; }
#picker { background: #fff; border: 1px solid #ddd; padding: 6px 10px; max-height: 150px; overflow: auto; columns: 4; font-size: 12.5px; }
#picker label { display: block; white-space: nowrap; }
button { font-size: 12px; margin-right: 6px; }
.warn { color: #a33; }
"#;

const SCRIPT: &str = r#"
function show(i, on) { var p = document.getElementById('conn-' + i); if (p) p.style.display = on ? 'block' : 'none';
  var b = document.getElementById('pick-' + i); if (b) b.checked = on; }
function pick(which) { document.querySelectorAll('#picker input').forEach(function (b) {
  var i = b.dataset.conn, on = which === 'all' || (which === 'trouble' && b.dataset.trouble === '1'); show(i, on); }); }
document.querySelectorAll('#picker input').forEach(function (b) { b.addEventListener('change', function () { show(b.dataset.conn, b.checked); }); });
document.querySelectorAll('.rowlabel').forEach(function (t) { t.addEventListener('click', function () {
  var i = t.dataset.conn; show(i, true); document.getElementById('conn-' + i).scrollIntoView({behavior: 'smooth'}); }); });
"#;

pub fn render(job: &Job, title: &str) -> String {
    let mut s = String::with_capacity(1 << 20);
    let hosts: std::collections::BTreeSet<&str> = job.ranks.iter().map(|r| r.host.as_str()).collect();
    let rtos: u64 = job.conns.iter().map(|c| c.rtos).sum();
    let rto_time: u64 = job.conns.iter().map(|c| c.rto_time_ms).sum();
    let retrans: u64 = job.conns.iter().map(|c| c.retrans_segs).sum();
    let stalled: f64 = job.conns.iter().map(|c| c.stalled()).sum();
    let rto_lost: f64 = job.conns.iter().map(|c| c.rto_stalled()).sum();
    let _ = write!(
        s,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>GridMPI trace: {}</title><style>{STYLE}</style></head><body>",
        esc(title)
    );
    let _ = write!(s, "<h1>GridMPI trace: {}</h1>", esc(title));
    let iv = job.ranks.first().map_or(0, |r| r.interval_us);
    let load = job.sampler_load().map_or(String::new(), |l| format!(", sampling took {:.2}% of the ranks' time", l * 100.0));
    let load = match job.sampler_cpu() {
        Some(c) => format!("{load} ({:.2}% of a core per rank in all)", c * 100.0),
        None => load,
    };
    let _ = write!(
        s,
        r#"<p class="meta">{} ranks on {} hosts, {:.3} s, {} TCP connections; kernel {}; TCP_INFO every {} us while data moves{}.<br><b>{} retransmitted segments, {} RTOs; {} of connection time stalled, {} of it lost to RTOs</b> (kernel: {} in RTO recovery).</p>"#,
        job.ranks.len(),
        hosts.len(),
        job.duration,
        job.conns.len(),
        esc(job.ranks.first().map_or("?", |r| r.kernel.as_str())),
        iv,
        load,
        retrans,
        rtos,
        secs(stalled),
        secs(rto_lost),
        secs(rto_time as f64 / 1e3)
    );
    for w in &job.warnings {
        let _ = write!(s, r#"<p class="warn">warning: {}</p>"#, esc(w));
    }
    s.push_str("<h2>Throughput per rank</h2><p class=\"sub\">Bytes each rank sent over TCP and had acknowledged, summed over its connections.</p>");
    overview(&mut s, job);
    s.push_str("<h2>Connections over time</h2><p class=\"sub\">One row per connection (rank → peer: what the rank sent). Blue: throughput; bars: stalls (data waiting, nothing acknowledged) coloured by cause; ▼ RTO; | retransmission. Hover for details, click a row for its charts.</p>");
    timeline(&mut s, job);
    s.push_str("<h2>Connections</h2>");
    s.push_str(&table_html(&crate::summary::conn_table(job)));
    s.push_str("<h2>Collectives</h2>");
    if job.colls.is_empty() {
        s.push_str("<p class=\"sub\">No collective was recorded.</p>");
    } else {
        s.push_str(&table_html(&crate::summary::coll_table(job)));
    }
    // Which connections to show first: those in trouble.
    let mut order: Vec<usize> = (0..job.conns.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&job.conns[a], &job.conns[b]);
        (y.rtos, y.retrans_segs, y.bytes_sent).cmp(&(x.rtos, x.retrans_segs, x.bytes_sent))
    });
    let shown: Vec<usize> = order.iter().copied().take(4).collect();
    s.push_str("<h2>Per connection</h2><p class=\"sub\">Choose connections: <button onclick=\"pick('trouble')\">with retransmissions</button><button onclick=\"pick('all')\">all</button><button onclick=\"pick('none')\">none</button></p><div id=\"picker\">");
    for (i, c) in job.conns.iter().enumerate() {
        let trouble = c.rtos > 0 || c.retrans_segs > 0;
        let _ = write!(
            s,
            r#"<label><input type="checkbox" id="pick-{i}" data-conn="{i}" data-trouble="{}"{}> {} {} — {} RTO, {} retr</label>"#,
            trouble as u8,
            if shown.contains(&i) { " checked" } else { "" },
            c.label(),
            esc(&c.peer_host),
            c.rtos,
            c.retrans_segs
        );
    }
    s.push_str("</div>");
    for &i in &order {
        conn_panel(&mut s, job, i, &job.conns[i], shown.contains(&i));
    }
    let _ = write!(s, "<script>{SCRIPT}</script></body></html>");
    s
}

//! `gridmpi-trace summary`: terminal tables.

use crate::analysis::{Cause, Job};
use std::fmt::Write;

pub fn bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.2} GB", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.1} MB", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1} kB", n / 1e3)
    } else {
        format!("{n} B")
    }
}

pub fn secs(s: f64) -> String {
    if s == 0.0 {
        "0".into()
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// A left/right aligned text table.
pub struct Table {
    head: Vec<(&'static str, bool)>,
    rows: Vec<Vec<String>>,
    /// Rows to highlight (in HTML).
    marked: Vec<bool>,
}

impl Table {
    /// Columns: (title, right-aligned).
    pub fn new(head: &[(&'static str, bool)]) -> Table {
        Table { head: head.to_vec(), rows: Vec::new(), marked: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
        self.marked.push(false);
    }

    pub fn marked_row(&mut self, cells: Vec<String>, marked: bool) {
        self.rows.push(cells);
        self.marked.push(marked);
    }

    pub fn html(&self) -> String {
        let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        let mut out = String::from("<table><tr>");
        for (h, _) in &self.head {
            out.push_str(&format!("<th>{}</th>", esc(h)));
        }
        out.push_str("</tr>");
        for (r, m) in self.rows.iter().zip(&self.marked) {
            out.push_str(if *m { "<tr class=\"bad\">" } else { "<tr>" });
            for (i, c) in r.iter().enumerate() {
                let cls = if self.head[i].1 { " class=\"r\"" } else { "" };
                out.push_str(&format!("<td{cls}>{}</td>", esc(c)));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
        out
    }

    pub fn render(&self) -> String {
        let mut w: Vec<usize> = self.head.iter().map(|h| h.0.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = w[i] - c.chars().count();
                if i > 0 {
                    s.push_str("  ");
                }
                if self.head[i].1 {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        let head: Vec<String> = self.head.iter().map(|h| h.0.to_string()).collect();
        line(&head, &mut out);
        let rule: Vec<String> = w.iter().map(|&n| "-".repeat(n)).collect();
        line(&rule, &mut out);
        for r in &self.rows {
            line(r, &mut out);
        }
        out
    }
}

pub fn conn_table(job: &Job) -> Table {
    let mut t = Table::new(&[
        ("conn", false),
        ("peer host", false),
        ("sent", true),
        ("received", true),
        ("retrans segs", true),
        ("retrans bytes", true),
        ("RTOs", true),
        ("lost to RTOs", true),
        ("in RTO recovery", true),
        ("stalled", true),
        ("longest stall", true),
        ("max cwnd", true),
        ("mean RTT", true),
        ("rwnd-lim", true),
        ("sndbuf-lim", true),
        ("cc", false),
    ]);
    for c in &job.conns {
        let longest = c.stalls.iter().max_by(|a, b| a.len().total_cmp(&b.len()));
        t.marked_row(vec![
            c.label(),
            c.peer_host.clone(),
            bytes(c.bytes_sent),
            bytes(c.bytes_received),
            c.retrans_segs.to_string(),
            bytes(c.bytes_retrans),
            if c.rto_recoveries != c.rtos { format!("{} ({} rec)", c.rtos, c.rto_recoveries) } else { c.rtos.to_string() },
            secs(c.rto_stalled()),
            secs(c.rto_time_ms as f64 / 1e3),
            secs(c.stalled()),
            longest.map_or("-".into(), |s| format!("{} at {:.3}s ({})", secs(s.len()), s.start, s.cause.name())),
            format!("{} ({})", c.max_cwnd, bytes(c.max_cwnd_bytes)),
            format!("{:.3} ms", c.mean_rtt_ms),
            secs(c.rwnd_limited_ms / 1e3),
            secs(c.sndbuf_limited_ms / 1e3),
            c.cc.clone(),
        ], c.rtos > 0);
    }
    t
}

pub fn coll_table(job: &Job) -> Table {
    let mut t = Table::new(&[
        ("collective", false),
        ("ranks", true),
        ("calls", true),
        ("bytes/call", true),
        ("time", true),
        ("mean call", true),
        ("slowest call", true),
        ("stalled", true),
        ("stalled %", true),
        ("RTOs", true),
    ]);
    for c in &job.colls {
        t.row(vec![
            c.name.clone(),
            c.ranks.to_string(),
            c.calls.to_string(),
            bytes(c.bytes_per_call),
            secs(c.time),
            secs(if c.calls > 0 { c.time / c.calls as f64 } else { 0.0 }),
            secs(c.max_call),
            secs(c.stalled),
            if c.time > 0.0 { format!("{:.1}", 100.0 * c.stalled / c.time) } else { "-".into() },
            c.rtos.to_string(),
        ]);
    }
    t
}

pub fn render(job: &Job, dir: &str) -> String {
    let mut s = String::new();
    let hosts: std::collections::BTreeSet<&str> = job.ranks.iter().map(|r| r.host.as_str()).collect();
    let _ = writeln!(
        s,
        "trace {dir}: {} ranks on {} hosts, {:.3} s, {} TCP connections, kernel {}",
        job.ranks.len(),
        hosts.len(),
        job.duration,
        job.conns.len(),
        job.ranks.first().map_or("?", |r| r.kernel.as_str())
    );
    for w in &job.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    let rtos: u64 = job.conns.iter().map(|c| c.rtos).sum();
    let rto_time: u64 = job.conns.iter().map(|c| c.rto_time_ms).sum();
    let retrans: u64 = job.conns.iter().map(|c| c.retrans_segs).sum();
    let rto_lost: f64 = job.conns.iter().map(|c| c.rto_stalled()).sum();
    let _ = writeln!(
        s,
        "total: {retrans} retransmitted segments, {rtos} RTOs; {} of connection time lost to RTOs (waiting for the timer and recovering), {} in RTO recovery (kernel)",
        secs(rto_lost),
        secs(rto_time as f64 / 1e3)
    );
    let _ = writeln!(
        s,
        "\nconnections (rank \u{2192} peer: what the rank sent; stalled: data waiting (unacknowledged or unsent) and nothing acknowledged; lost to RTOs: stalls an RTO ended):"
    );
    s.push_str(&conn_table(job).render());
    if job.colls.is_empty() {
        s.push_str("\ncollectives: none recorded\n");
    } else {
        let _ = writeln!(s, "\ncollectives (time and stalled time: mean over ranks of each rank's total):");
        s.push_str(&coll_table(job).render());
    }
    let mut causes = std::collections::BTreeMap::new();
    for c in &job.conns {
        for st in &c.stalls {
            *causes.entry(st.cause).or_insert(0.0) += st.len();
        }
    }
    if !causes.is_empty() {
        let parts: Vec<String> = [Cause::Rto, Cause::Recovery, Cause::Receiver, Cause::Unsent, Cause::Other]
            .iter()
            .filter_map(|k| causes.get(k).map(|t| format!("{} {}", k.name(), secs(*t))))
            .collect();
        let _ = writeln!(s, "\nstalled time by cause (all connections): {}", parts.join(", "));
    }
    if let Some(load) = job.sampler_load() {
        let samples: u64 = job.ranks.iter().filter_map(|r| r.stat("samples")).sum();
        let dropped: u64 = job.ranks.iter().filter_map(|r| r.stat("dropped")).sum();
        let cpu = job.sampler_cpu().map_or(String::new(), |c| format!(", its thread used {:.2}% of a core per rank", c * 100.0));
        let _ = writeln!(
            s,
            "tracer: {samples} TCP_INFO reads, sampling took {:.2}% of the ranks' time{cpu}, {dropped} samples dropped",
            load * 100.0
        );
    }
    s
}

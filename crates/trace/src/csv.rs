//! `--csv DIR`: the trace as CSV files, for spreadsheets and pandas.
//!
//! - `samples.csv`: one row per TCP_INFO sample: rank, conn, peer, t_s (job
//!   seconds) and every field's value at that time;
//! - `events.csv`: connection open/close, tuning, collective begin/end,
//!   RTO and retransmission events, stalls;
//! - `connections.csv`, `collectives.csv`: the summary tables.

use crate::analysis::Job;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn write(job: &Job, dir: &Path) -> std::io::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let mut open = |name: &str| -> std::io::Result<std::io::BufWriter<std::fs::File>> {
        let p = dir.join(name);
        written.push(p.display().to_string());
        Ok(std::io::BufWriter::new(std::fs::File::create(p)?))
    };

    // Samples: the union of every rank's fields (normally identical).
    let mut fields: Vec<String> = Vec::new();
    for r in &job.ranks {
        for f in &r.fields {
            if !fields.contains(f) {
                fields.push(f.clone());
            }
        }
    }
    let mut w = open("samples.csv")?;
    writeln!(w, "rank,conn,peer,t_s,{}", fields.join(","))?;
    for r in &job.ranks {
        let off = job.offset(r);
        let map: Vec<Option<usize>> = fields.iter().map(|f| r.field(f)).collect();
        for c in &r.conns {
            for s in &c.samples {
                let mut line = format!("{},{},{},{:.6}", r.rank, c.id, c.peer, off + s.t_us as f64 / 1e6);
                for m in &map {
                    line.push(',');
                    if let Some(i) = m {
                        if c.avail & (1 << i) != 0 {
                            let _ = write!(line, "{}", s.vals[*i]);
                        }
                    }
                }
                writeln!(w, "{line}")?;
            }
        }
    }
    w.flush()?;

    let mut w = open("events.csv")?;
    writeln!(w, "rank,t_s,kind,conn,peer,detail")?;
    let mut rows: Vec<(u32, f64, String, String, String, String)> = Vec::new();
    for r in &job.ranks {
        let off = job.offset(r);
        let t = |us: u64| off + us as f64 / 1e6;
        for c in &r.conns {
            let detail = format!("{} {} -> {} cc={} sndbuf={} rcvbuf={}", c.peer_host, c.local_addr, c.remote_addr, c.congestion_control, c.sndbuf, c.rcvbuf);
            rows.push((r.rank, t(c.open_us), "open".into(), c.id.to_string(), c.peer.to_string(), detail));
            if let Some(cl) = c.close_us {
                rows.push((r.rank, t(cl), "close".into(), c.id.to_string(), c.peer.to_string(), String::new()));
            }
        }
        for tu in &r.tunings {
            let conn = tu.conn.map_or(String::new(), |c| c.to_string());
            rows.push((r.rank, t(tu.t_us), "tuning".into(), conn, tu.peer.to_string(), format!("{}={}", tu.option, tu.value)));
        }
        for c in &r.colls {
            let d = format!("{} ctx={} bytes={}", c.name, c.ctx, c.bytes);
            rows.push((r.rank, t(c.begin_us), "coll_begin".into(), String::new(), String::new(), d.clone()));
            if let Some(e) = c.end_us {
                rows.push((r.rank, t(e), "coll_end".into(), String::new(), String::new(), d));
            }
        }
    }
    for c in &job.conns {
        for e in &c.rto_events {
            rows.push((c.rank, e.t, "rto".into(), c.id.to_string(), c.peer.to_string(), format!("count={}", e.count)));
        }
        for e in &c.retrans_events {
            rows.push((c.rank, e.t, "retrans".into(), c.id.to_string(), c.peer.to_string(), format!("segments={}", e.count)));
        }
        for s in &c.stalls {
            rows.push((c.rank, s.start, "stall".into(), c.id.to_string(), c.peer.to_string(), format!("cause={} seconds={:.6}", s.cause.name(), s.len())));
        }
    }
    rows.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    for (rank, t, k, conn, peer, d) in rows {
        writeln!(w, "{rank},{t:.6},{k},{conn},{peer},{}", quote(&d))?;
    }
    w.flush()?;

    let mut w = open("connections.csv")?;
    writeln!(
        w,
        "rank,host,conn,peer,peer_host,cc,open_s,close_s,bytes_sent,bytes_received,bytes_retrans,retrans_segs,rtos,rto_recoveries,rto_time_ms,rto_stalled_s,stalled_s,stalls,max_cwnd,max_cwnd_bytes,mean_rtt_ms,min_rtt_ms,busy_ms,rwnd_limited_ms,sndbuf_limited_ms,samples"
    )?;
    for c in &job.conns {
        writeln!(
            w,
            "{},{},{},{},{},{},{:.6},{:.6},{},{},{},{},{},{},{},{:.6},{:.6},{},{},{},{:.4},{:.4},{:.3},{:.3},{:.3},{}",
            c.rank,
            quote(&c.host),
            c.id,
            c.peer,
            quote(&c.peer_host),
            c.cc,
            c.open,
            c.close,
            c.bytes_sent,
            c.bytes_received,
            c.bytes_retrans,
            c.retrans_segs,
            c.rtos,
            c.rto_recoveries,
            c.rto_time_ms,
            c.rto_stalled(),
            c.stalled(),
            c.stalls.len(),
            c.max_cwnd,
            c.max_cwnd_bytes,
            c.mean_rtt_ms,
            c.min_rtt_ms,
            c.busy_ms,
            c.rwnd_limited_ms,
            c.sndbuf_limited_ms,
            c.samples
        )?;
    }
    w.flush()?;

    let mut w = open("collectives.csv")?;
    writeln!(w, "rank,name,ctx,bytes,begin_s,end_s,seconds,stalled_s,rtos")?;
    for c in &job.calls {
        writeln!(w, "{},{},{},{},{:.6},{:.6},{:.6},{:.6},{}", c.rank, quote(&c.name), c.ctx, c.bytes, c.begin, c.end, c.end - c.begin, c.stalled, c.rtos)?;
    }
    w.flush()?;
    Ok(written)
}

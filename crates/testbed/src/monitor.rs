//! The 1 ms link monitor: per direction and per millisecond, what went in,
//! what came out, the queue, and what was dropped.
//!
//! The emulator's real-time threads fill `Bin`s and hand them, never
//! blocking, to a writer thread that writes a CSV file:
//!
//! ```text
//! # gridmpi-testbed monitor v1, 1 ms bins
//! # dir c0>c1 rate_bps=100000000 delay_ns=5000000 queue=100p loss=0
//! t_ms,dir,pkts_in,bytes_in,pkts_out,bytes_out,mbit_out,qlen_pkts,qlen_bytes,qmax_pkts,drops,losses,cut_drops,late_max_us
//! 0,c0>c1,9,13500,8,12000,96.000,4,6000,5,0,0,0,12
//! ```
//!
//! `t_ms` counts from the start of the recording; every millisecond of every
//! direction has a row. `qlen_*` is the queue at the end of the millisecond,
//! `qmax_pkts` the largest queue seen when a packet arrived in it (a
//! drop-tail drop happens only at `qmax_pkts == limit`), `drops` are queue
//! (drop-tail) drops, `losses` random losses, `late_max_us` the worst
//! release-time error in the bin.

use std::collections::HashMap;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::Receiver;

#[derive(Clone, Copy, Debug, Default)]
pub struct Bin {
    /// Millisecond index on the emulator's clock.
    pub ms: u64,
    pub pkts_in: u32,
    pub bytes_in: u64,
    pub pkts_out: u32,
    pub bytes_out: u64,
    pub qlen_pkts: u32,
    pub qlen_bytes: u64,
    pub qmax_pkts: u32,
    pub drops: u32,
    pub losses: u32,
    pub cut_drops: u32,
    pub late_max_ns: u64,
}

impl Bin {
    pub fn is_idle(&self) -> bool {
        self.pkts_in == 0
            && self.pkts_out == 0
            && self.qlen_pkts == 0
            && self.qmax_pkts == 0
            && self.drops == 0
            && self.losses == 0
            && self.cut_drops == 0
    }
}

pub enum MonitorMsg {
    Bin { dir: usize, bin: Bin },
}

/// Totals of one recording, per direction.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct DirTotals {
    pub dir: String,
    pub pkts_out: u64,
    pub bytes_out: u64,
    pub drops: u64,
    pub losses: u64,
    pub cut_drops: u64,
    pub qmax_pkts: u32,
    pub ms: u64,
}

pub const HEADER: &str =
    "t_ms,dir,pkts_in,bytes_in,pkts_out,bytes_out,mbit_out,qlen_pkts,qlen_bytes,qmax_pkts,drops,losses,cut_drops,late_max_us";

/// Writer thread body: drain bins until every sender is gone, writing a row
/// for every millisecond from `start_ms` to `stop_ms` (learned at the end).
pub fn write_csv(
    path: &Path,
    dirs: &[(String, String)],
    start_ms: u64,
    rx: Receiver<MonitorMsg>,
    stop_ms: impl FnOnce() -> u64,
) -> io::Result<Vec<DirTotals>> {
    let file = std::fs::File::create(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    writeln!(out, "# gridmpi-testbed monitor v1, 1 ms bins")?;
    for (name, params) in dirs {
        writeln!(out, "# dir {name} {params}")?;
    }
    writeln!(out, "{HEADER}")?;
    // next millisecond to write, per direction
    let mut next: Vec<u64> = vec![start_ms; dirs.len()];
    let mut totals: Vec<DirTotals> = dirs.iter().map(|(n, _)| DirTotals { dir: n.clone(), ..Default::default() }).collect();
    let write_bin = |out: &mut BufWriter<std::fs::File>, dir: usize, bin: &Bin| -> io::Result<()> {
        writeln!(
            out,
            "{},{},{},{},{},{},{:.3},{},{},{},{},{},{},{}",
            bin.ms - start_ms,
            dirs[dir].0,
            bin.pkts_in,
            bin.bytes_in,
            bin.pkts_out,
            bin.bytes_out,
            bin.bytes_out as f64 * 8.0 / 1000.0,
            bin.qlen_pkts,
            bin.qlen_bytes,
            bin.qmax_pkts,
            bin.drops,
            bin.losses,
            bin.cut_drops,
            bin.late_max_ns / 1000
        )
    };
    for msg in rx {
        let MonitorMsg::Bin { dir, bin } = msg;
        if bin.ms < next[dir] {
            continue; // before the recording started
        }
        for ms in next[dir]..bin.ms {
            write_bin(&mut out, dir, &Bin { ms, ..Default::default() })?;
        }
        write_bin(&mut out, dir, &bin)?;
        next[dir] = bin.ms + 1;
        let t = &mut totals[dir];
        t.pkts_out += bin.pkts_out as u64;
        t.bytes_out += bin.bytes_out;
        t.drops += bin.drops as u64;
        t.losses += bin.losses as u64;
        t.cut_drops += bin.cut_drops as u64;
        t.qmax_pkts = t.qmax_pkts.max(bin.qmax_pkts);
    }
    let stop = stop_ms();
    for (dir, n) in next.iter().enumerate() {
        for ms in *n..stop {
            write_bin(&mut out, dir, &Bin { ms, ..Default::default() })?;
        }
        totals[dir].ms = stop.saturating_sub(start_ms);
    }
    out.flush()?;
    Ok(totals)
}

/// A monitor file read back (for plots and checks).
pub struct Recording {
    /// Direction name -> its parameters line from the header.
    pub params: HashMap<String, String>,
    /// Direction names in the order of the header.
    pub dirs: Vec<String>,
    /// Per direction: rows in time order.
    pub rows: HashMap<String, Vec<Row>>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Row {
    pub t_ms: u64,
    pub bytes_out: u64,
    pub qlen_pkts: u32,
    pub qmax_pkts: u32,
    pub drops: u32,
    pub losses: u32,
    pub late_max_us: u64,
}

pub fn read_csv(path: &Path) -> io::Result<Recording> {
    let file = std::fs::File::open(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let mut rec = Recording { params: HashMap::new(), dirs: Vec::new(), rows: HashMap::new() };
    let mut columns: Vec<String> = Vec::new();
    for line in io::BufReader::new(file).lines() {
        let line = line?;
        if let Some(rest) = line.strip_prefix("# dir ") {
            let (name, params) = rest.split_once(' ').unwrap_or((rest, ""));
            rec.dirs.push(name.to_string());
            rec.params.insert(name.to_string(), params.to_string());
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if line.starts_with("t_ms,") {
            columns = line.split(',').map(String::from).collect();
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let get = |name: &str| -> u64 {
            columns.iter().position(|c| c == name).and_then(|i| fields.get(i)).and_then(|v| v.parse().ok()).unwrap_or(0)
        };
        let dir = columns.iter().position(|c| c == "dir").and_then(|i| fields.get(i)).unwrap_or(&"?").to_string();
        let row = Row {
            t_ms: get("t_ms"),
            bytes_out: get("bytes_out"),
            qlen_pkts: get("qlen_pkts") as u32,
            qmax_pkts: get("qmax_pkts") as u32,
            drops: get("drops") as u32,
            losses: get("losses") as u32,
            late_max_us: get("late_max_us"),
        };
        if !rec.rows.contains_key(&dir) && !rec.dirs.contains(&dir) {
            rec.dirs.push(dir.clone());
        }
        rec.rows.entry(dir).or_default().push(row);
    }
    for rows in rec.rows.values_mut() {
        rows.sort_by_key(|r| r.t_ms);
    }
    Ok(rec)
}

/// Value of `key=...` in a direction's parameter line.
pub fn param(params: &str, key: &str) -> Option<String> {
    params.split_whitespace().find_map(|kv| kv.strip_prefix(key).and_then(|r| r.strip_prefix('=')).map(String::from))
}

//! Reading `rank-N.trace` files (the format is documented in docs/trace.md
//! and written by the library's `trace` module).
//!
//! A file is the magic `GMPITRC\x01` and a sequence of records
//! `kind: u8, len: varint, payload[len]`. Unknown kinds are skipped, so the
//! writer may add record kinds; a record cut short (a rank that died) ends
//! the file and marks it truncated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const MAGIC: &[u8; 8] = b"GMPITRC\x01";

pub mod kind {
    pub const HEADER: u8 = 1;
    pub const OPEN: u8 = 2;
    pub const SAMPLE: u8 = 3;
    pub const CLOSE: u8 = 4;
    pub const TUNING: u8 = 5;
    pub const COLL_BEGIN: u8 = 6;
    pub const COLL_END: u8 = 7;
    pub const STATS: u8 = 8;
}

/// One TCP_INFO sample of a connection: the time (microseconds since the
/// rank's trace started) and every field's value (by the rank's field
/// order, see [`RankTrace::fields`]).
#[derive(Clone, Debug)]
pub struct Sample {
    pub t_us: u64,
    pub vals: Box<[u64]>,
}

/// One TCP connection as seen by one rank.
#[derive(Clone, Debug)]
pub struct ConnTrace {
    /// Per-rank connection number.
    pub id: u32,
    pub peer: u32,
    pub peer_host: String,
    pub local_addr: String,
    pub remote_addr: String,
    pub congestion_control: String,
    pub sndbuf: u64,
    pub rcvbuf: u64,
    /// Fields the kernel filled (bit i: field i).
    pub avail: u64,
    pub open_us: u64,
    pub close_us: Option<u64>,
    pub samples: Vec<Sample>,
}

#[derive(Clone, Debug)]
pub struct Tuning {
    pub t_us: u64,
    pub peer: u32,
    /// Connection id, if one was open to the peer.
    pub conn: Option<u32>,
    pub option: String,
    pub value: String,
}

/// One collective call on one rank.
#[derive(Clone, Debug)]
pub struct Coll {
    pub name: String,
    pub ctx: u32,
    pub bytes: u64,
    pub begin_us: u64,
    pub end_us: Option<u64>,
}

/// Everything one rank recorded.
#[derive(Clone, Debug, Default)]
pub struct RankTrace {
    pub path: PathBuf,
    pub rank: u32,
    pub host: String,
    pub pid: u32,
    pub start_unix_us: u64,
    pub interval_us: u64,
    pub idle_interval_us: u64,
    pub kernel: String,
    /// Field names in the order samples hold them.
    pub fields: Vec<String>,
    pub header: BTreeMap<String, String>,
    pub conns: Vec<ConnTrace>,
    pub tunings: Vec<Tuning>,
    pub colls: Vec<Coll>,
    /// The tracer's own counters (absent when the rank did not finish).
    pub stats: BTreeMap<String, String>,
    /// Time of the last record.
    pub end_us: u64,
    /// The file ended inside a record, or before the STATS record.
    pub truncated: bool,
}

impl RankTrace {
    /// Index of a field by name.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f == name)
    }

    pub fn stat(&self, name: &str) -> Option<u64> {
        self.stats.get(name).and_then(|v| v.parse().ok())
    }
}

#[derive(Debug)]
pub struct FormatError {
    pub path: PathBuf,
    pub offset: usize,
    pub reason: String,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (byte {}): {}", self.path.display(), self.offset, self.reason)
    }
}
impl std::error::Error for FormatError {}

/// A cursor over a record's payload.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let byte = *self.b.get(self.i)?;
            self.i += 1;
            if shift >= 64 {
                return None;
            }
            v |= ((byte & 0x7f) as u64) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
            shift += 7;
        }
    }

    fn zigzag(&mut self) -> Option<i64> {
        let v = self.varint()?;
        Some(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn string(&mut self) -> Option<String> {
        let n = self.varint()? as usize;
        let s = self.b.get(self.i..self.i.checked_add(n)?)?;
        self.i += n;
        Some(String::from_utf8_lossy(s).into_owned())
    }
}

fn parse_kv(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Parse one rank's trace from its bytes.
pub fn parse(path: &Path, data: &[u8]) -> Result<RankTrace, FormatError> {
    let err = |offset: usize, reason: &str| FormatError { path: path.to_path_buf(), offset, reason: reason.to_string() };
    if data.len() < 8 || data[..7] != MAGIC[..7] {
        return Err(err(0, "not a GridMPI trace file (bad magic)"));
    }
    if data[7] != MAGIC[7] {
        return Err(err(7, &format!("trace format version {} (this tool reads version {})", data[7], MAGIC[7])));
    }
    let mut tr = RankTrace { path: path.to_path_buf(), truncated: true, ..Default::default() };
    let mut t: u64 = 0;
    let mut conn_index: BTreeMap<u32, usize> = BTreeMap::new();
    let mut open_colls: BTreeMap<u64, usize> = BTreeMap::new();
    let mut i = 8;
    let mut saw_header = false;
    while i < data.len() {
        let start = i;
        let k = data[i];
        let mut c = Cur { b: data, i: i + 1 };
        let Some(len) = c.varint() else { break };
        let body_start = c.i;
        let Some(body_end) = body_start.checked_add(len as usize).filter(|&e| e <= data.len()) else { break };
        let body = &data[body_start..body_end];
        i = body_end;
        let mut p = Cur { b: body, i: 0 };
        let bad = |what: &str| err(start, &format!("malformed {what} record"));
        let timed = matches!(k, kind::OPEN | kind::SAMPLE | kind::CLOSE | kind::TUNING | kind::COLL_BEGIN | kind::COLL_END);
        if timed {
            let dt = p.varint().ok_or_else(|| bad("timed"))?;
            t = t.saturating_add(dt);
            tr.end_us = t;
        }
        if !saw_header && k != kind::HEADER {
            return Err(err(start, "the first record is not a header"));
        }
        match k {
            kind::HEADER => {
                saw_header = true;
                let h = parse_kv(&String::from_utf8_lossy(body));
                let num = |name: &str| h.get(name).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
                tr.rank = num("rank") as u32;
                tr.pid = num("pid") as u32;
                tr.start_unix_us = num("start_unix_us");
                tr.interval_us = num("interval_us");
                tr.idle_interval_us = num("idle_interval_us");
                tr.host = h.get("host").cloned().unwrap_or_default();
                tr.kernel = h.get("kernel").cloned().unwrap_or_default();
                tr.fields = h.get("fields").map(|f| f.split(',').map(String::from).collect()).unwrap_or_default();
                if tr.fields.len() > 64 {
                    return Err(err(start, "more than 64 sample fields"));
                }
                tr.header = h;
            }
            kind::OPEN => {
                let id = p.varint().ok_or_else(|| bad("OPEN"))? as u32;
                let peer = p.varint().ok_or_else(|| bad("OPEN"))? as u32;
                let avail = p.varint().ok_or_else(|| bad("OPEN"))?;
                let peer_host = p.string().ok_or_else(|| bad("OPEN"))?;
                let local_addr = p.string().ok_or_else(|| bad("OPEN"))?;
                let remote_addr = p.string().ok_or_else(|| bad("OPEN"))?;
                let congestion_control = p.string().ok_or_else(|| bad("OPEN"))?;
                let sndbuf = p.varint().unwrap_or(0);
                let rcvbuf = p.varint().unwrap_or(0);
                conn_index.insert(id, tr.conns.len());
                tr.conns.push(ConnTrace {
                    id,
                    peer,
                    peer_host,
                    local_addr,
                    remote_addr,
                    congestion_control,
                    sndbuf,
                    rcvbuf,
                    avail,
                    open_us: t,
                    close_us: None,
                    samples: Vec::new(),
                });
            }
            kind::SAMPLE => {
                let id = p.varint().ok_or_else(|| bad("SAMPLE"))? as u32;
                let mask = p.varint().ok_or_else(|| bad("SAMPLE"))?;
                let Some(&ci) = conn_index.get(&id) else { return Err(bad("SAMPLE (unknown connection)")) };
                let nf = tr.fields.len();
                if nf < 64 && mask >> nf != 0 {
                    return Err(bad("SAMPLE (field beyond the header's list)"));
                }
                let conn = &mut tr.conns[ci];
                let mut vals: Box<[u64]> = match conn.samples.last() {
                    Some(s) => s.vals.clone(),
                    None => vec![0u64; nf].into_boxed_slice(),
                };
                for (f, v) in vals.iter_mut().enumerate() {
                    if mask & (1 << f) != 0 {
                        let d = p.zigzag().ok_or_else(|| bad("SAMPLE"))?;
                        *v = v.wrapping_add(d as u64);
                    }
                }
                conn.samples.push(Sample { t_us: t, vals });
            }
            kind::CLOSE => {
                let id = p.varint().ok_or_else(|| bad("CLOSE"))? as u32;
                if let Some(&ci) = conn_index.get(&id) {
                    tr.conns[ci].close_us = Some(t);
                }
            }
            kind::TUNING => {
                let peer = p.varint().ok_or_else(|| bad("TUNING"))? as u32;
                let conn = p.varint().ok_or_else(|| bad("TUNING"))?;
                let option = p.string().ok_or_else(|| bad("TUNING"))?;
                let value = p.string().ok_or_else(|| bad("TUNING"))?;
                tr.tunings.push(Tuning { t_us: t, peer, conn: conn.checked_sub(1).map(|c| c as u32), option, value });
            }
            kind::COLL_BEGIN => {
                let token = p.varint().ok_or_else(|| bad("COLL_BEGIN"))?;
                let ctx = p.varint().ok_or_else(|| bad("COLL_BEGIN"))? as u32;
                let bytes = p.varint().ok_or_else(|| bad("COLL_BEGIN"))?;
                let name = p.string().ok_or_else(|| bad("COLL_BEGIN"))?;
                open_colls.insert(token, tr.colls.len());
                tr.colls.push(Coll { name, ctx, bytes, begin_us: t, end_us: None });
            }
            kind::COLL_END => {
                let token = p.varint().ok_or_else(|| bad("COLL_END"))?;
                if let Some(ci) = open_colls.remove(&token) {
                    tr.colls[ci].end_us = Some(t);
                }
            }
            kind::STATS => {
                tr.stats = parse_kv(&String::from_utf8_lossy(body));
                tr.truncated = false;
            }
            _ => {} // a newer writer's record: skip
        }
    }
    if !saw_header {
        return Err(err(8, "no header record"));
    }
    Ok(tr)
}

pub fn read_file(path: &Path) -> Result<RankTrace, FormatError> {
    let data = std::fs::read(path).map_err(|e| FormatError { path: path.to_path_buf(), offset: 0, reason: e.to_string() })?;
    parse(path, &data)
}

/// Every `rank-N.trace` of a directory, sorted by rank. Files from an older
/// job in the same directory (started more than a minute away from the
/// newest rank 0... of this set) are left out with a warning.
pub fn read_dir(dir: &Path) -> Result<(Vec<RankTrace>, Vec<String>), String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("cannot read trace directory {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rank-") && n.ends_with(".trace"))
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("no rank-N.trace files in {} (was the job run with gridmpirun --trace DIR?)", dir.display()));
    }
    let mut warnings = Vec::new();
    let mut ranks = Vec::new();
    for p in &paths {
        match read_file(p) {
            Ok(t) => ranks.push(t),
            Err(e) => warnings.push(format!("skipped {e}")),
        }
    }
    if ranks.is_empty() {
        return Err(format!("no readable trace in {}: {}", dir.display(), warnings.join("; ")));
    }
    // One job: keep the files whose start is within a minute of the newest start.
    let newest = ranks.iter().map(|r| r.start_unix_us).max().unwrap_or(0);
    ranks.retain(|r| {
        let keep = newest - r.start_unix_us <= 60_000_000;
        if !keep {
            warnings.push(format!("skipped {} (started {:.0} s before the others: an older job?)", r.path.display(), (newest - r.start_unix_us) as f64 / 1e6));
        }
        keep
    });
    for r in &ranks {
        if r.truncated {
            warnings.push(format!("{}: the trace ends early (rank {} did not reach MPI_Finalize?)", r.path.display(), r.rank));
        }
    }
    ranks.sort_by_key(|r| r.rank);
    Ok((ranks, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn rec(out: &mut Vec<u8>, k: u8, body: &[u8]) {
        out.push(k);
        varint(out, body.len() as u64);
        out.extend_from_slice(body);
    }

    fn sample_file() -> Vec<u8> {
        let mut f = MAGIC.to_vec();
        rec(&mut f, kind::HEADER, b"format=1\nrank=2\nhost=h2\nstart_unix_us=1000\nfields=a,b,c\n");
        let mut b = Vec::new();
        varint(&mut b, 5); // dt
        varint(&mut b, 0); // conn
        varint(&mut b, 1); // peer
        varint(&mut b, 7); // avail
        for s in ["h1", "1.2.3.4:5", "1.2.3.5:6", "cubic"] {
            varint(&mut b, s.len() as u64);
            b.extend_from_slice(s.as_bytes());
        }
        rec(&mut f, kind::OPEN, &b);
        // sample: a=10, c=3
        rec(&mut f, kind::SAMPLE, &[10, 0, 0b101, 20, 6]);
        // sample: c -= 1
        rec(&mut f, kind::SAMPLE, &[10, 0, 0b100, 1]);
        rec(&mut f, 99, &[1, 2, 3]); // unknown kind: skipped
        rec(&mut f, kind::COLL_BEGIN, &[1, 1, 4, 100, 3, b'b', b'a', b'r']);
        rec(&mut f, kind::COLL_END, &[9, 1]);
        rec(&mut f, kind::CLOSE, &[1, 0]);
        rec(&mut f, kind::STATS, b"samples=2\n");
        f
    }

    #[test]
    fn parses_every_record_kind() {
        let t = parse(Path::new("x"), &sample_file()).unwrap();
        assert_eq!(t.rank, 2);
        assert_eq!(t.fields, vec!["a", "b", "c"]);
        assert!(!t.truncated);
        let c = &t.conns[0];
        assert_eq!((c.peer, c.peer_host.as_str(), c.congestion_control.as_str()), (1, "h1", "cubic"));
        assert_eq!(c.open_us, 5);
        assert_eq!(c.samples.len(), 2);
        assert_eq!(&*c.samples[0].vals, &[10, 0, 3]);
        assert_eq!(&*c.samples[1].vals, &[10, 0, 2]);
        assert_eq!(c.samples[1].t_us, 25);
        assert_eq!(c.close_us, Some(36));
        assert_eq!(t.colls[0].name, "bar");
        assert_eq!((t.colls[0].begin_us, t.colls[0].end_us), (26, Some(35)));
        assert_eq!(t.stat("samples"), Some(2));
    }

    #[test]
    fn a_cut_file_is_truncated_not_an_error() {
        let f = sample_file();
        let header_end = 8 + 2 + f[9] as usize;
        assert!(parse(Path::new("x"), &f[..header_end - 1]).is_err(), "no complete header");
        for cut in header_end..f.len() - 1 {
            let t = parse(Path::new("x"), &f[..cut]).unwrap();
            assert!(t.truncated);
        }
        assert!(parse(Path::new("x"), b"GMPITRC\x02").is_err());
        assert!(parse(Path::new("x"), b"nonsense").is_err());
    }
}

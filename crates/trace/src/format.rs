//! Reading `rank-N.trace` files into per-rank histories. The format
//! (records, fields, encoding) is gridmpi-traceformat's, shared with the
//! library's recorder, and documented in docs/trace.md. Unknown record kinds
//! are skipped, so the writer may add kinds; a record cut short (a rank that
//! died) ends the file, which then lacks its STATS record and reads as
//! truncated.

use gridmpi_traceformat::{key_values, Decoder, Header, Record};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use gridmpi_traceformat::{kind, MAGIC};

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

fn key_value_map(text: &str) -> BTreeMap<String, String> {
    key_values(text).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Parse one rank's trace from its bytes.
pub fn parse(path: &Path, data: &[u8]) -> Result<RankTrace, FormatError> {
    let err = |offset: usize, reason: String| FormatError { path: path.to_path_buf(), offset, reason };
    let mut records = Decoder::new(data).map_err(|e| err(e.offset, e.reason))?;
    let mut tr = RankTrace { path: path.to_path_buf(), truncated: true, ..Default::default() };
    let mut conn_index: BTreeMap<u32, usize> = BTreeMap::new();
    let mut open_colls: BTreeMap<u64, usize> = BTreeMap::new();
    while let Some(record) = records.next() {
        let record = record.map_err(|e| err(e.offset, e.reason))?;
        if let Some(t) = record.t_us() {
            tr.end_us = t;
        }
        match record {
            Record::Header(text) => {
                let h = Header::from_text(&text);
                tr.rank = h.rank;
                tr.pid = h.pid;
                tr.start_unix_us = h.start_unix_us;
                tr.interval_us = h.interval_us;
                tr.idle_interval_us = h.idle_interval_us;
                tr.host = h.host;
                tr.kernel = h.kernel;
                tr.fields = h.fields;
                tr.header = key_value_map(&text);
            }
            Record::Open(o) => {
                conn_index.insert(o.conn, tr.conns.len());
                tr.conns.push(ConnTrace {
                    id: o.conn,
                    peer: o.peer,
                    peer_host: o.peer_host,
                    local_addr: o.local_addr,
                    remote_addr: o.remote_addr,
                    congestion_control: o.congestion_control,
                    sndbuf: o.sndbuf,
                    rcvbuf: o.rcvbuf,
                    avail: o.avail,
                    open_us: o.t_us,
                    close_us: None,
                    samples: Vec::new(),
                });
            }
            Record::Sample { t_us, conn, mask, deltas } => {
                let Some(&ci) = conn_index.get(&conn) else {
                    return Err(err(records.record_offset(), "malformed SAMPLE (unknown connection) record".into()));
                };
                let conn = &mut tr.conns[ci];
                let mut vals: Box<[u64]> = match conn.samples.last() {
                    Some(s) => s.vals.clone(),
                    None => vec![0u64; tr.fields.len()].into_boxed_slice(),
                };
                let changed = (0..vals.len()).filter(|f| mask & (1 << f) != 0);
                for (f, d) in changed.zip(deltas) {
                    vals[f] = vals[f].wrapping_add(d as u64);
                }
                conn.samples.push(Sample { t_us, vals });
            }
            Record::Close { t_us, conn } => {
                if let Some(&ci) = conn_index.get(&conn) {
                    tr.conns[ci].close_us = Some(t_us);
                }
            }
            Record::Tuning { t_us, peer, conn, option, value } => {
                tr.tunings.push(Tuning { t_us, peer, conn, option, value });
            }
            Record::CollBegin { t_us, token, ctx, bytes, name } => {
                open_colls.insert(token, tr.colls.len());
                tr.colls.push(Coll { name, ctx, bytes, begin_us: t_us, end_us: None });
            }
            Record::CollEnd { t_us, token } => {
                if let Some(ci) = open_colls.remove(&token) {
                    tr.colls[ci].end_us = Some(t_us);
                }
            }
            Record::Stats(text) => {
                tr.stats = key_value_map(&text);
                tr.truncated = false;
            }
            Record::Unknown { .. } => {} // a newer writer's record: skipped
        }
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

    use gridmpi_traceformat::put_varint as varint;

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

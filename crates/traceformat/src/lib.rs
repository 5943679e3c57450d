//! The format of `rank-N.trace`, the per-connection TCP history that every
//! rank of a traced job records (`gridmpirun --trace DIR`): written by the
//! library's recorder (`crates/mpi/src/trace.rs`) with [`Encoder`], read by
//! `gridmpi-trace` with [`Decoder`]. docs/trace.md describes it for readers
//! who write their own tools.
//!
//! ```text
//! file    = magic record*
//! magic   = "GMPITRC" VERSION
//! record  = kind:u8 len:varint payload[len]
//! varint  = unsigned LEB128 (7 bits per byte, low first)
//! zigzag  = varint of (v << 1) ^ (v >> 63)
//! string  = len:varint UTF-8[len]
//! ```
//!
//! Records that carry a time start with `dt`, the microseconds since the
//! previous timed record; the encoder takes and the decoder gives absolute
//! times. A SAMPLE carries the mask of the [`FIELDS`] that changed since the
//! connection's previous sample and, for each set bit, the zigzag
//! difference. Readers skip kinds they do not know, so a writer may add
//! kinds without a new version; a file cut short (a rank that died) ends at
//! its last complete record.

#![forbid(unsafe_code)]

mod decode;
mod encode;
mod fields;
mod header;
mod varint;

pub use decode::{DecodeError, Decoder};
pub use encode::Encoder;
pub use fields::{extract, Field, Width, FIELDS, NFIELDS};
pub use header::{key_values, Header};
pub use varint::{put_varint, unzigzag, zigzag};

/// Version of the format, the last byte of [`MAGIC`] (and `format=` in the
/// header). A reader refuses other versions.
pub const VERSION: u8 = 1;

/// First bytes of every trace file.
pub const MAGIC: [u8; 8] = *b"GMPITRC\x01";
const _: () = assert!(MAGIC[7] == VERSION);

/// Record kinds (the first byte of a record).
pub mod kind {
    /// Text `key=value` lines (see [`crate::Header`]); always the first record.
    pub const HEADER: u8 = 1;
    /// dt, conn, peer, available-fields mask, peer host, local address,
    /// remote address, congestion control, SO_SNDBUF, SO_RCVBUF.
    pub const OPEN: u8 = 2;
    /// dt, conn, changed-fields mask, zigzag deltas.
    pub const SAMPLE: u8 = 3;
    /// dt, conn.
    pub const CLOSE: u8 = 4;
    /// dt, peer, conn + 1 (0: no open connection), option, value.
    pub const TUNING: u8 = 5;
    /// dt, token, context id, bytes, name.
    pub const COLL_BEGIN: u8 = 6;
    /// dt, token.
    pub const COLL_END: u8 = 7;
    /// Text `key=value` lines: the recorder's own counters, at the end.
    pub const STATS: u8 = 8;
}

/// A connection opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Open {
    /// Microseconds since the trace started.
    pub t_us: u64,
    /// The rank's connection number (from 0, in opening order).
    pub conn: u32,
    pub peer: u32,
    /// The fields this kernel fills (bit i: `FIELDS[i]`).
    pub avail: u64,
    pub peer_host: String,
    pub local_addr: String,
    pub remote_addr: String,
    pub congestion_control: String,
    pub sndbuf: u64,
    pub rcvbuf: u64,
}

/// One record, as the decoder gives it (times absolute).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// The header's text (parse it with [`Header::from_text`]).
    Header(String),
    Open(Open),
    /// The fields of `mask` changed by `deltas` (one per set bit, lowest
    /// bit first) since the connection's previous sample.
    Sample { t_us: u64, conn: u32, mask: u64, deltas: Vec<i64> },
    Close { t_us: u64, conn: u32 },
    /// A socket option set on the way to `peer`; `conn` if one was open.
    Tuning { t_us: u64, peer: u32, conn: Option<u32>, option: String, value: String },
    /// A collective started: `token` pairs it with its end, `ctx` is the
    /// communicator's context id, `bytes` what this rank sends in it.
    CollBegin { t_us: u64, token: u64, ctx: u32, bytes: u64, name: String },
    CollEnd { t_us: u64, token: u64 },
    /// The recorder's counters, `key=value` lines; present when the rank
    /// finished.
    Stats(String),
    /// A kind this version does not know (a newer writer's).
    Unknown { kind: u8 },
}

impl Record {
    /// Microseconds since the trace started, for timed records.
    pub fn t_us(&self) -> Option<u64> {
        match self {
            Record::Open(o) => Some(o.t_us),
            Record::Sample { t_us, .. }
            | Record::Close { t_us, .. }
            | Record::Tuning { t_us, .. }
            | Record::CollBegin { t_us, .. }
            | Record::CollEnd { t_us, .. } => Some(*t_us),
            Record::Header(_) | Record::Stats(_) | Record::Unknown { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header { rank: 2, host: "h2".into(), start_unix_us: 1000, ..Header::with_all_fields() }
    }

    /// One record of every kind, times increasing.
    fn every_kind() -> Vec<Record> {
        vec![
            Record::Open(Open {
                t_us: 5,
                conn: 0,
                peer: 1,
                avail: (1 << NFIELDS) - 1,
                peer_host: "h1".into(),
                local_addr: "10.0.0.2:4000".into(),
                remote_addr: "10.0.0.1:4001".into(),
                congestion_control: "cubic".into(),
                sndbuf: 1 << 20,
                rcvbuf: 131072,
            }),
            Record::Sample { t_us: 5, conn: 0, mask: 0b101, deltas: vec![10, -3] },
            Record::Sample { t_us: 1_000_000_000_000, conn: 0, mask: 1 << (NFIELDS - 1), deltas: vec![i64::MIN] },
            Record::Sample { t_us: 1_000_000_000_001, conn: 0, mask: 0, deltas: vec![] },
            Record::Tuning { t_us: 1_000_000_000_001, peer: 1, conn: Some(0), option: "SO_MAX_PACING_RATE".into(), value: "12500000".into() },
            Record::Tuning { t_us: 1_000_000_000_002, peer: 7, conn: None, option: "TCP_CONGESTION".into(), value: "".into() },
            Record::CollBegin { t_us: 1_000_000_000_003, token: 1, ctx: 4, bytes: 1 << 40, name: "MPI_Alltoall".into() },
            Record::CollEnd { t_us: 1_000_000_000_010, token: 1 },
            Record::Unknown { kind: 99 },
            Record::Close { t_us: 1_000_000_000_011, conn: 0 },
            Record::Stats("samples=2\ndropped=0\n".into()),
        ]
    }

    fn encode(records: &[Record]) -> Vec<u8> {
        let mut e = Encoder::new(&header(), 0);
        for r in records {
            e.record(r);
        }
        e.out().to_vec()
    }

    #[test]
    fn every_record_kind_round_trips() {
        let records = every_kind();
        let file = encode(&records);
        let mut d = Decoder::new(&file).unwrap();
        let first = d.next().unwrap().unwrap();
        assert_eq!(first, Record::Header(header().to_text()));
        let Record::Header(text) = first else { unreachable!() };
        assert_eq!(Header::from_text(&text), header());
        let back: Vec<Record> = d.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(back, records);
        assert!(!d.cut());
    }

    #[test]
    fn bytes_are_as_documented() {
        // docs/trace.md: kind, length, then dt and the payload's varints.
        let mut e = Encoder::new(&header(), 0);
        e.clear_out();
        e.sample(300, 0, 0b101, [10, -3]);
        e.coll_end(300, 1);
        e.tuning(301, 1, None, "x", "");
        assert_eq!(
            e.out(),
            [
                kind::SAMPLE, 6, 0xac, 0x02, 0, 0b101, 20, 5,
                kind::COLL_END, 2, 0, 1,
                kind::TUNING, 6, 1, 1, 0, 1, b'x', 0,
            ]
        );
        assert_eq!(e.last_t_us(), 301);
    }

    #[test]
    fn times_never_go_backwards() {
        let mut e = Encoder::new(&header(), 0);
        e.close(50, 0);
        e.close(20, 1);
        let file = e.out().to_vec();
        let times: Vec<_> = Decoder::new(&file).unwrap().skip(1).map(|r| r.unwrap().t_us()).collect();
        assert_eq!(times, [Some(50), Some(50)]);
    }

    #[test]
    fn a_cut_file_ends_at_its_last_complete_record() {
        let records = every_kind();
        let file = encode(&records);
        let header_end = 8 + 1 + 2 + header().to_text().len();
        assert!(Decoder::new(&file[..header_end - 1]).unwrap().any(|r| r.is_err()), "no complete header");
        let record_ends: Vec<usize> = (0..=records.len()).map(|n| encode(&records[..n]).len()).collect();
        for cut in header_end..file.len() {
            let mut d = Decoder::new(&file[..cut]).unwrap();
            let back: Vec<Record> = d.by_ref().collect::<Result<_, _>>().unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            let whole = record_ends.iter().filter(|&&end| end <= cut).count();
            assert_eq!(back.len(), whole, "cut at {cut}: the header and every complete record");
            assert_eq!(back[1..], records[..whole - 1], "cut at {cut}");
            assert_eq!(d.cut(), !record_ends.contains(&cut), "cut at {cut}");
        }
    }

    #[test]
    fn malformed_files_are_errors() {
        assert!(Decoder::new(b"nonsense").is_err());
        assert!(Decoder::new(b"GMPITRC").is_err());
        let e = Decoder::new(b"GMPITRC\x02").err().unwrap();
        assert!(e.reason.contains("version 2"), "{e}");
        assert!(Decoder::new(&MAGIC).unwrap().next().unwrap().is_err(), "no header");
        let first_not_header = [&MAGIC[..], &[kind::CLOSE, 2, 0, 0]].concat();
        assert!(Decoder::new(&first_not_header).unwrap().next().unwrap().is_err());
        let with = |body: &[u8]| {
            let mut e = Encoder::new(&Header { fields: vec!["a".into(), "b".into()], ..Header::default() }, 0);
            e.record(&Record::Unknown { kind: 0 });
            let mut f = e.out().to_vec();
            f.truncate(f.len() - 2);
            f.extend_from_slice(body);
            Decoder::new(&f).unwrap().collect::<Result<Vec<_>, _>>()
        };
        assert_eq!(with(&[kind::SAMPLE, 4, 0, 0, 0b11, 2]).unwrap_err().reason, "malformed SAMPLE record", "a delta missing");
        assert!(with(&[kind::SAMPLE, 5, 0, 0, 0b100, 2, 2]).unwrap_err().reason.contains("beyond the header"));
        assert!(with(&[kind::OPEN, 2, 0, 0]).is_err());
        assert!(with(&[kind::CLOSE, 7, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]).is_err(), "a conn past u32");
        assert_eq!(with(&[kind::SAMPLE, 5, 0, 0, 0b11, 2, 3]).unwrap().len(), 2);
    }
}

//! Reading records back, with absolute times. Malformed records are errors;
//! a file that ends inside a record (its writer died) simply ends there.

use crate::varint::{unzigzag, Cursor};
use crate::{kind, Header, Open, Record, MAGIC, VERSION};

/// What is wrong with a trace, and where (byte offset in the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub offset: usize,
    pub reason: String,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.reason)
    }
}

impl std::error::Error for DecodeError {}

/// Decodes the records of one file's bytes, in order; an iterator of
/// records that ends at the end of the file, at a record cut short (see
/// [`Decoder::cut`]) or after the first error.
pub struct Decoder<'a> {
    data: &'a [u8],
    /// Where the next record starts.
    pos: usize,
    /// Where the record last returned started.
    record_start: usize,
    t_us: u64,
    /// Fields a sample may have: known once the header is read.
    fields: Option<usize>,
    cut: bool,
    failed: bool,
}

impl<'a> Decoder<'a> {
    /// A decoder for `data`, after checking the magic and the version.
    pub fn new(data: &'a [u8]) -> Result<Decoder<'a>, DecodeError> {
        if data.len() < MAGIC.len() || data[..7] != MAGIC[..7] {
            return Err(DecodeError { offset: 0, reason: "not a GridMPI trace file (bad magic)".into() });
        }
        if data[7] != VERSION {
            return Err(DecodeError {
                offset: 7,
                reason: format!("trace format version {} (this tool reads version {VERSION})", data[7]),
            });
        }
        Ok(Decoder { data, pos: MAGIC.len(), record_start: MAGIC.len(), t_us: 0, fields: None, cut: false, failed: false })
    }

    /// The file ended inside a record: its writer did not finish it.
    pub fn cut(&self) -> bool {
        self.cut
    }

    /// Byte offset of the record last returned (for the caller's errors).
    pub fn record_offset(&self) -> usize {
        self.record_start
    }

    fn error(&mut self, offset: usize, reason: impl Into<String>) -> Option<Result<Record, DecodeError>> {
        self.failed = true;
        Some(Err(DecodeError { offset, reason: reason.into() }))
    }

    /// The payload of a record of kind `k` as a record.
    fn record(&mut self, k: u8, body: &[u8]) -> Option<Record> {
        let mut p = Cursor::new(body, 0);
        let timed = matches!(k, kind::OPEN | kind::SAMPLE | kind::CLOSE | kind::TUNING | kind::COLL_BEGIN | kind::COLL_END);
        let t_us = if timed { self.t_us.saturating_add(p.varint()?) } else { 0 };
        let record = match k {
            kind::HEADER => Record::Header(String::from_utf8_lossy(body).into_owned()),
            kind::STATS => Record::Stats(String::from_utf8_lossy(body).into_owned()),
            kind::OPEN => Record::Open(Open {
                t_us,
                conn: p.u32()?,
                peer: p.u32()?,
                avail: p.varint()?,
                peer_host: p.string()?,
                local_addr: p.string()?,
                remote_addr: p.string()?,
                congestion_control: p.string()?,
                // Absent from the first files written.
                sndbuf: if p.at_end() { 0 } else { p.varint()? },
                rcvbuf: if p.at_end() { 0 } else { p.varint()? },
            }),
            kind::SAMPLE => {
                let (conn, mask) = (p.u32()?, p.varint()?);
                let deltas = (0..mask.count_ones()).map(|_| p.varint().map(unzigzag)).collect::<Option<Vec<i64>>>()?;
                Record::Sample { t_us, conn, mask, deltas }
            }
            kind::CLOSE => Record::Close { t_us, conn: p.u32()? },
            kind::TUNING => Record::Tuning {
                t_us,
                peer: p.u32()?,
                conn: match p.varint()? {
                    0 => None,
                    c => Some(u32::try_from(c - 1).ok()?),
                },
                option: p.string()?,
                value: p.string()?,
            },
            kind::COLL_BEGIN => {
                Record::CollBegin { t_us, token: p.varint()?, ctx: p.u32()?, bytes: p.varint()?, name: p.string()? }
            }
            kind::COLL_END => Record::CollEnd { t_us, token: p.varint()? },
            k => Record::Unknown { kind: k },
        };
        if timed {
            self.t_us = t_us;
        }
        Some(record)
    }
}

fn kind_name(k: u8) -> &'static str {
    match k {
        kind::HEADER => "HEADER",
        kind::OPEN => "OPEN",
        kind::SAMPLE => "SAMPLE",
        kind::CLOSE => "CLOSE",
        kind::TUNING => "TUNING",
        kind::COLL_BEGIN => "COLL_BEGIN",
        kind::COLL_END => "COLL_END",
        kind::STATS => "STATS",
        _ => "unknown",
    }
}

impl Iterator for Decoder<'_> {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.cut {
            return None;
        }
        if self.pos >= self.data.len() {
            if self.fields.is_none() {
                return self.error(self.pos, "no header record");
            }
            return None;
        }
        let start = self.pos;
        let k = self.data[start];
        let mut c = Cursor::new(self.data, start + 1);
        let body = c
            .varint()
            .and_then(|len| usize::try_from(len).ok())
            .and_then(|len| c.pos.checked_add(len))
            .filter(|&end| end <= self.data.len())
            .map(|end| (c.pos, end));
        let Some((body_start, body_end)) = body else {
            self.cut = true;
            if self.fields.is_none() {
                return self.error(start, "no complete header record");
            }
            return None;
        };
        self.pos = body_end;
        self.record_start = start;
        if self.fields.is_none() && k != kind::HEADER {
            return self.error(start, "the first record is not a header");
        }
        let data = self.data;
        let Some(record) = self.record(k, &data[body_start..body_end]) else {
            return self.error(start, format!("malformed {} record", kind_name(k)));
        };
        match &record {
            Record::Header(text) => {
                let n = Header::from_text(text).fields.len();
                if n > 64 {
                    return self.error(start, "more than 64 sample fields");
                }
                self.fields = Some(n);
            }
            Record::Sample { mask, .. } => {
                let n = self.fields.unwrap_or(0);
                if n < 64 && mask >> n != 0 {
                    return self.error(start, "malformed SAMPLE record (field beyond the header's list)");
                }
            }
            _ => {}
        }
        Some(Ok(record))
    }
}

//! Writing records. The library's recorder calls these from its sampling
//! thread and from its hooks on the progress path, so they only append to
//! buffers it reuses: no allocation once the buffers have grown.

use crate::varint::{put_str, put_varint, zigzag};
use crate::{kind, Header, Open, Record, MAGIC};

/// Encodes a trace into [`Encoder::out`], from the magic on; the owner
/// takes the bytes out when it writes them (see [`Encoder::swap_out`]).
pub struct Encoder {
    /// Encoded bytes not yet taken.
    out: Vec<u8>,
    /// One record's payload, before its length is known.
    payload: Vec<u8>,
    /// Time of the last timed record (microseconds since the start).
    last_t_us: u64,
}

impl Encoder {
    /// An encoder whose output starts with the magic and `header`.
    pub fn new(header: &Header, capacity: usize) -> Encoder {
        let mut e = Encoder { out: Vec::with_capacity(capacity), payload: Vec::with_capacity(512), last_t_us: 0 };
        e.out.extend_from_slice(&MAGIC);
        e.text(kind::HEADER, &header.to_text());
        e
    }

    /// Bytes encoded and not yet taken.
    pub fn out(&self) -> &[u8] {
        &self.out
    }

    /// How many bytes are waiting in [`Encoder::out`].
    pub fn pending(&self) -> usize {
        self.out.len()
    }

    /// Forget the bytes of [`Encoder::out`]: the caller has written them.
    pub fn clear_out(&mut self) {
        self.out.clear();
    }

    /// Exchange the encoded bytes with `spare` (an empty buffer, so the
    /// caller can write them out while the encoder fills the other).
    pub fn swap_out(&mut self, spare: &mut Vec<u8>) {
        debug_assert!(spare.is_empty());
        std::mem::swap(&mut self.out, spare);
    }

    /// The last time written, so callers never go back before it.
    pub fn last_t_us(&self) -> u64 {
        self.last_t_us
    }

    /// Start a timed record's payload with `dt`. Times never go backwards:
    /// one earlier than the last is written as the last.
    #[inline]
    fn timed(&mut self, t_us: u64) {
        let t = t_us.max(self.last_t_us);
        self.payload.clear();
        put_varint(&mut self.payload, t - self.last_t_us);
        self.last_t_us = t;
    }

    /// Append the record whose payload is in `self.payload`.
    #[inline]
    fn commit(&mut self, kind: u8) {
        self.out.push(kind);
        put_varint(&mut self.out, self.payload.len() as u64);
        self.out.extend_from_slice(&self.payload);
        self.payload.clear();
    }

    fn text(&mut self, kind: u8, text: &str) {
        self.payload.clear();
        self.payload.extend_from_slice(text.as_bytes());
        self.commit(kind);
    }

    pub fn open(&mut self, o: &Open) {
        self.timed(o.t_us);
        let p = &mut self.payload;
        put_varint(p, o.conn as u64);
        put_varint(p, o.peer as u64);
        put_varint(p, o.avail);
        put_str(p, &o.peer_host);
        put_str(p, &o.local_addr);
        put_str(p, &o.remote_addr);
        put_str(p, &o.congestion_control);
        put_varint(p, o.sndbuf);
        put_varint(p, o.rcvbuf);
        self.commit(kind::OPEN);
    }

    /// A sample of connection `conn`: `deltas` holds one value per set bit
    /// of `mask`, lowest first (new value minus the previous sample's, as
    /// the wrapping difference of the u64 values).
    #[inline]
    pub fn sample(&mut self, t_us: u64, conn: u32, mask: u64, deltas: impl IntoIterator<Item = i64>) {
        self.timed(t_us);
        put_varint(&mut self.payload, conn as u64);
        put_varint(&mut self.payload, mask);
        let mut n = 0u32;
        for d in deltas {
            put_varint(&mut self.payload, zigzag(d));
            n += 1;
        }
        debug_assert_eq!(n, mask.count_ones(), "one delta per changed field");
        self.commit(kind::SAMPLE);
    }

    pub fn close(&mut self, t_us: u64, conn: u32) {
        self.timed(t_us);
        put_varint(&mut self.payload, conn as u64);
        self.commit(kind::CLOSE);
    }

    pub fn tuning(&mut self, t_us: u64, peer: u32, conn: Option<u32>, option: &str, value: &str) {
        self.timed(t_us);
        put_varint(&mut self.payload, peer as u64);
        put_varint(&mut self.payload, conn.map_or(0, |c| c as u64 + 1));
        put_str(&mut self.payload, option);
        put_str(&mut self.payload, value);
        self.commit(kind::TUNING);
    }

    pub fn coll_begin(&mut self, t_us: u64, token: u64, ctx: u32, bytes: u64, name: &str) {
        self.timed(t_us);
        put_varint(&mut self.payload, token);
        put_varint(&mut self.payload, ctx as u64);
        put_varint(&mut self.payload, bytes);
        put_str(&mut self.payload, name);
        self.commit(kind::COLL_BEGIN);
    }

    pub fn coll_end(&mut self, t_us: u64, token: u64) {
        self.timed(t_us);
        put_varint(&mut self.payload, token);
        self.commit(kind::COLL_END);
    }

    /// The recorder's counters, `key=value` lines.
    pub fn stats(&mut self, text: &str) {
        self.text(kind::STATS, text);
    }

    /// Any record (for tools and tests; the recorder calls the methods
    /// above). A second header is written as given; an unknown kind as an
    /// empty record of that kind.
    pub fn record(&mut self, r: &Record) {
        match r {
            Record::Header(text) => self.text(kind::HEADER, text),
            Record::Open(o) => self.open(o),
            Record::Sample { t_us, conn, mask, deltas } => self.sample(*t_us, *conn, *mask, deltas.iter().copied()),
            Record::Close { t_us, conn } => self.close(*t_us, *conn),
            Record::Tuning { t_us, peer, conn, option, value } => self.tuning(*t_us, *peer, *conn, option, value),
            Record::CollBegin { t_us, token, ctx, bytes, name } => self.coll_begin(*t_us, *token, *ctx, *bytes, name),
            Record::CollEnd { t_us, token } => self.coll_end(*t_us, *token),
            Record::Stats(text) => self.stats(text),
            Record::Unknown { kind } => {
                self.payload.clear();
                self.commit(*kind);
            }
        }
    }
}

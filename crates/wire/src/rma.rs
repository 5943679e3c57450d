//! The payload of a one-sided operation frame ([`crate::Frame::RmaOp`]): a
//! fixed 32-byte descriptor, the target datatype's encoding, the data.
//!
//! ```text
//!  0 u8  kind        1 u8 op (a reduction's index in the engine's table; 0xff: none)
//!  2 u16 reserved=0  4 u32 type_len (bytes of the encoded target datatype)
//!  8 u64 count       (items of the target datatype at the frame's offset)
//! 16 u64 packed_at   (where in the packed bytes of those items this piece starts)
//! 24 u64 packed_len  (bytes of the piece: written, combined or read)
//! 32 ..  type bytes, then data
//! ```
//!
//! A large operation travels as several frames, each naming the piece of
//! the target's packed stream it covers, so no frame exceeds what a
//! transport carries at once. Which data a kind carries is fixed (see
//! [`OpDesc::data_len`]), so a descriptor whose lengths disagree with the
//! payload is refused here, before the engine looks at it.

use crate::frame::FrameError;

/// Bytes of the fixed descriptor.
pub const OP_DESC_LEN: usize = 32;

/// The `op` byte of kinds that take no reduction.
pub const NO_REDUCTION: u8 = 0xff;

/// How many reductions the engine's table has (`op` must be below this).
pub const REDUCTIONS: u8 = 14;

/// The index of MPI_NO_OP in the engine's table of reductions: an
/// accumulate that only reads carries no data.
pub const NO_OP_INDEX: u8 = 13;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpKind {
    Put = 1,
    Get = 2,
    Accumulate = 3,
    GetAccumulate = 4,
    /// MPI_Fetch_and_op: a get-accumulate of one element.
    FetchAndOp = 5,
    /// MPI_Compare_and_swap: the data is the origin value then the compare value.
    CompareAndSwap = 6,
}

impl OpKind {
    fn from_u8(v: u8) -> Option<OpKind> {
        Some(match v {
            1 => OpKind::Put,
            2 => OpKind::Get,
            3 => OpKind::Accumulate,
            4 => OpKind::GetAccumulate,
            5 => OpKind::FetchAndOp,
            6 => OpKind::CompareAndSwap,
            _ => return None,
        })
    }

    /// Whether the target sends data back.
    pub fn replies(self) -> bool {
        !matches!(self, OpKind::Put | OpKind::Accumulate)
    }

    /// Whether the kind applies a reduction (the `op` byte).
    pub fn reduces(self) -> bool {
        matches!(self, OpKind::Accumulate | OpKind::GetAccumulate | OpKind::FetchAndOp)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpDesc {
    pub kind: OpKind,
    /// Index of the reduction (for the kinds that reduce).
    pub op: Option<u8>,
    pub count: u64,
    pub packed_at: u64,
    pub packed_len: u64,
    /// The type describes this piece alone (an operation whose type is too
    /// large to repeat in every frame): the piece is packed bytes
    /// `[0, packed_len)` of `count` items of it, and `packed_at` only says
    /// where the piece sits in the whole operation (where its reply goes).
    pub piece_type: bool,
}

impl OpDesc {
    /// The data bytes that follow the type for this descriptor.
    pub fn data_len(&self) -> Option<u64> {
        match self.kind {
            OpKind::Put | OpKind::Accumulate => Some(self.packed_len),
            OpKind::Get => Some(0),
            OpKind::GetAccumulate | OpKind::FetchAndOp => Some(if self.op == Some(NO_OP_INDEX) { 0 } else { self.packed_len }),
            OpKind::CompareAndSwap => self.packed_len.checked_mul(2),
        }
    }

    /// The payload: descriptor, `typemap`, `data`.
    pub fn encode(&self, typemap: &[u8], data: &[u8]) -> Vec<u8> {
        self.encode_with(typemap, data.len(), |out| out.copy_from_slice(data))
    }

    /// The payload of `data_len` data bytes that `fill` writes in place:
    /// one buffer, so a large put's data is copied once out of user memory.
    pub fn encode_with(&self, typemap: &[u8], data_len: usize, fill: impl FnOnce(&mut [u8])) -> Vec<u8> {
        let mut v = Vec::with_capacity(OP_DESC_LEN + typemap.len() + data_len);
        self.encode_head(&mut v, typemap);
        let at = v.len();
        v.resize(at + data_len, 0);
        fill(&mut v[at..]);
        v
    }

    fn encode_head(&self, v: &mut Vec<u8>, typemap: &[u8]) {
        v.push(self.kind as u8);
        v.push(self.op.unwrap_or(NO_REDUCTION));
        v.extend_from_slice(&[self.piece_type as u8, 0]);
        v.extend_from_slice(&(typemap.len() as u32).to_le_bytes());
        for x in [self.count, self.packed_at, self.packed_len] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(typemap);
    }

    /// Split and check a payload: the descriptor, the type bytes, the data.
    pub fn decode(payload: &[u8]) -> Result<(OpDesc, &[u8], &[u8]), FrameError> {
        let bad = |why: &'static str| Err(FrameError::BadRmaOp(why));
        if payload.len() < OP_DESC_LEN {
            return bad("payload shorter than the operation descriptor");
        }
        let u64_at = |i: usize| u64::from_le_bytes(payload[i..i + 8].try_into().expect("8 bytes"));
        let Some(kind) = OpKind::from_u8(payload[0]) else { return bad("unknown operation kind") };
        let op = match (kind.reduces(), payload[1]) {
            (false, NO_REDUCTION) => None,
            (true, o) if o < REDUCTIONS => Some(o),
            (false, _) => return bad("a reduction on an operation that takes none"),
            (true, _) => return bad("unknown reduction"),
        };
        if payload[2] > 1 || payload[3] != 0 {
            return bad("reserved descriptor bits are not zero");
        }
        let type_len = u32::from_le_bytes(payload[4..8].try_into().expect("4 bytes")) as usize;
        let d = OpDesc { kind, op, count: u64_at(8), packed_at: u64_at(16), packed_len: u64_at(24), piece_type: payload[2] == 1 };
        if d.packed_len == 0 {
            return bad("an empty operation");
        }
        if d.packed_at.checked_add(d.packed_len).is_none() {
            return bad("the piece's end overflows");
        }
        let rest = &payload[OP_DESC_LEN..];
        if type_len == 0 || type_len > rest.len() {
            return bad("the datatype's length exceeds the payload");
        }
        let (typemap, data) = rest.split_at(type_len);
        if d.data_len() != Some(data.len() as u64) {
            return bad("the data's length does not fit the operation");
        }
        Ok((d, typemap, data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_round_trip_and_lengths_are_checked() {
        let d = OpDesc { kind: OpKind::Accumulate, op: Some(2), count: 3, packed_at: 8, packed_len: 4, piece_type: false };
        let p = d.encode(&[0, 7], &[1, 2, 3, 4]);
        assert_eq!(OpDesc::decode(&p), Ok((d, &[0u8, 7][..], &[1u8, 2, 3, 4][..])));
        let piece = OpDesc { piece_type: true, ..d };
        assert_eq!(OpDesc::decode(&piece.encode(&[0, 7], &[1, 2, 3, 4])).map(|r| r.0), Ok(piece));
        let mut p = piece.encode(&[0, 7], &[1, 2, 3, 4]);
        p[2] = 2;
        assert!(OpDesc::decode(&p).is_err(), "unknown descriptor bits");
        // One byte of data too many or too few.
        assert!(OpDesc::decode(&d.encode(&[0, 7], &[1, 2, 3])).is_err());
        assert!(OpDesc::decode(&d.encode(&[0, 7], &[1, 2, 3, 4, 5])).is_err());
        let g = OpDesc { kind: OpKind::Get, op: None, count: 1, packed_at: 0, packed_len: 100, piece_type: false };
        assert!(OpDesc::decode(&g.encode(&[0, 7], &[])).is_ok());
        assert!(OpDesc::decode(&g.encode(&[0, 7], &[1])).is_err());
        let cas = OpDesc { kind: OpKind::CompareAndSwap, op: None, count: 1, packed_at: 0, packed_len: 4, piece_type: false };
        assert!(OpDesc::decode(&cas.encode(&[0, 7], &[0; 8])).is_ok());
        let noop = OpDesc { kind: OpKind::FetchAndOp, op: Some(NO_OP_INDEX), count: 1, packed_at: 0, packed_len: 8, piece_type: false };
        assert!(OpDesc::decode(&noop.encode(&[0, 7], &[])).is_ok());
        let mut p = g.encode(&[0, 7], &[]);
        p[1] = 3;
        assert!(OpDesc::decode(&p).is_err(), "a get with a reduction");
        let mut p = d.encode(&[0, 7], &[1, 2, 3, 4]);
        p[4] = 200;
        assert!(OpDesc::decode(&p).is_err(), "type length past the end");
        let empty = OpDesc { packed_len: 0, ..g };
        assert!(OpDesc::decode(&empty.encode(&[0, 7], &[])).is_err());
        let wrap = OpDesc { packed_at: u64::MAX, ..g };
        assert!(OpDesc::decode(&wrap.encode(&[0, 7], &[])).is_err());
        // Random payloads: errors, never panics.
        let mut x: u64 = 7;
        for _ in 0..50_000 {
            let n = (x % 60) as usize;
            let mut b = vec![0u8; n];
            for byte in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *byte = if x % 4 == 0 { (x >> 9) as u8 % 8 } else { (x >> 20) as u8 };
            }
            let _ = OpDesc::decode(&b);
        }
    }
}

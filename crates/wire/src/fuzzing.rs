//! Fuzz targets (run by `fuzz/`, and briefly by `make fuzz-smoke`): plain
//! functions that panic only when a property of the frame codec breaks.

use crate::frame::{Envelope, Frame, Header, HEADER_LEN, MAX_PAYLOAD};

/// Bytes read as headers: every 40 bytes either decode to a header that
/// encodes back to exactly them, or are an error (never a panic). The same
/// bytes also describe a header field by field, which must survive an
/// encode and decode exactly when it is valid by the rules written out in
/// [`valid`] (independently of the decoder).
pub fn header(data: &[u8]) {
    for window in data.chunks_exact(HEADER_LEN) {
        let b: &[u8; HEADER_LEN] = window.try_into().expect("a 40-byte chunk");
        match Header::decode(b) {
            Ok(h) => {
                assert_eq!(&h.encode(), b, "{h:?} does not re-encode to the bytes it came from");
                assert_eq!(h.kind() as u8, b[0]);
                assert_eq!(h.frame_len(), HEADER_LEN + h.payload_len as usize);
                let _ = h.frame.urgency();
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    let h = described(data);
    match Header::decode(&h.encode()) {
        Ok(d) => {
            assert!(valid(&h), "{h:?} is invalid but decoded");
            assert_eq!(d, h, "a header changed on its way through the codec");
        }
        Err(e) => assert!(!valid(&h), "{h:?} is valid but was rejected: {e}"),
    }
}

/// A header built from fuzz bytes, field by field (missing bytes are 0).
fn described(data: &[u8]) -> Header {
    let mut bytes = [0u8; 48];
    let n = data.len().min(48);
    bytes[..n].copy_from_slice(&data[..n]);
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    let env = Envelope { ctx: u32_at(4), src: u32_at(8) as i32, tag: u32_at(12) as i32 };
    let (a, b, len) = (u32_at(16), u32_at(20), u64_at(24));
    // Payload lengths near the limits are the interesting ones.
    let payload_len = match bytes[1] % 4 {
        0 => u32_at(32) % 64,
        1 => MAX_PAYLOAD - (u32_at(32) % 3),
        2 => MAX_PAYLOAD + 1 + (u32_at(32) % 3),
        _ => u32_at(32),
    };
    let frame = match bytes[0] % 14 {
        0 => Frame::Eager { env, sync: (bytes[2] & 1 != 0).then_some(a) },
        1 => Frame::Rts { env, len, sreq: a, single_copy: bytes[2] & 1 != 0 },
        2 => Frame::Cts { sreq: a, rreq: b, accepted: len },
        3 => Frame::Data { rreq: b, offset: if bytes[2] & 1 != 0 { u64::MAX - (len % 4096) } else { len } },
        4 => Frame::Fin { sreq: a },
        5 => Frame::SyncAck { sreq: a },
        6 => Frame::Ack { received: len },
        7 => Frame::Revoke { ctx: env.ctx },
        8 => {
            let step = [crate::AgreeStep::Contribute, crate::AgreeStep::Decided, crate::AgreeStep::Decide][bytes[2] as usize % 3];
            Frame::Agree { ctx: env.ctx, seq: a, step, flag: b, max: len }
        }
        9 => Frame::EagerHead { env, sync: (bytes[2] & 1 != 0).then_some(a), len },
        10 => Frame::EagerRest { offset: if bytes[2] & 1 != 0 { u64::MAX - (len % 4096) } else { len } },
        11 => Frame::CancelSend { sreq: a },
        12 => Frame::CancelReply { sreq: a, cancelled: bytes[2] & 1 != 0 },
        _ => Frame::Credit,
    };
    Header { frame, payload_len, credit: u32_at(36) }
}

/// The frame rules, stated on the typed header.
fn valid(h: &Header) -> bool {
    if h.payload_len > MAX_PAYLOAD {
        return false;
    }
    match h.frame {
        Frame::Eager { env, .. } => env.tag >= 0,
        Frame::EagerHead { env, len, .. } => env.tag >= 0 && h.payload_len > 0 && len > h.payload_len as u64,
        Frame::EagerRest { offset } => h.payload_len > 0 && offset.checked_add(h.payload_len as u64).is_some(),
        Frame::Rts { env, single_copy, .. } => env.tag >= 0 && h.payload_len == if single_copy { 8 } else { 0 },
        Frame::Data { offset, .. } => h.payload_len > 0 && offset.checked_add(h.payload_len as u64).is_some(),
        Frame::Cts { .. } | Frame::Fin { .. } | Frame::SyncAck { .. } | Frame::Credit => h.payload_len == 0,
        Frame::CancelSend { .. } | Frame::CancelReply { .. } => h.payload_len == 0,
        Frame::RmaOp { .. } => h.payload_len as usize >= crate::rma::OP_DESC_LEN,
        Frame::RmaSync { .. } => h.payload_len == 0,
        Frame::Ack { .. } => h.payload_len == 0 && h.credit == 0,
        Frame::Revoke { .. } => h.payload_len == 0,
        Frame::Agree { .. } => h.payload_len <= 1 << 28,
    }
}

/// Inputs to start from: a valid header of every kind (with the field
/// description that leads to it), and a few errors.
pub fn seeds() -> Vec<Vec<u8>> {
    let env = Envelope { ctx: 9, src: 3, tag: 12345 };
    let headers = [
        Header { frame: Frame::Eager { env, sync: Some(7) }, payload_len: 5, credit: 77 },
        Header::new(Frame::Eager { env, sync: None }, 0),
        Header::new(Frame::EagerHead { env, sync: Some(2), len: 1 << 16 }, 4096),
        Header::new(Frame::EagerRest { offset: 4096 }, 4096),
        Header::new(Frame::Rts { env, len: 1 << 40, sreq: 4, single_copy: true }, 8),
        Header::new(Frame::Rts { env, len: 3, sreq: 4, single_copy: false }, 0),
        Header::new(Frame::Cts { sreq: 1, rreq: 2, accepted: 1 << 33 }, 0),
        Header::new(Frame::Data { rreq: 2, offset: 1 << 20 }, 4096),
        Header::new(Frame::Fin { sreq: 7 }, 0),
        Header::new(Frame::SyncAck { sreq: 8 }, 0),
        Header::new(Frame::CancelSend { sreq: 8 }, 0),
        Header::new(Frame::CancelReply { sreq: 8, cancelled: true }, 0),
        Header { frame: Frame::Credit, payload_len: 0, credit: 1 << 20 },
        Header::new(Frame::Ack { received: 1 << 35 }, 0),
        Header::new(Frame::Revoke { ctx: 6 }, 0),
        Header::new(Frame::Agree { ctx: 6, seq: 3, step: crate::AgreeStep::Decided, flag: 1, max: 40 }, 2),
    ];
    let mut seeds: Vec<Vec<u8>> = headers.iter().map(|h| h.encode().to_vec()).collect();
    seeds.push(headers.iter().flat_map(|h| h.encode()).collect());
    let mut bad = headers[7].encode();
    bad[2] = 1;
    seeds.push(bad.to_vec());
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::FrameError;

    #[test]
    fn the_target_holds_on_its_seeds() {
        for s in seeds() {
            header(&s);
        }
    }

    #[test]
    fn the_rules_written_here_agree_with_the_decoder_on_errors() {
        let env = Envelope { ctx: 0, src: 0, tag: -1 };
        let h = Header::new(Frame::Eager { env, sync: None }, 0);
        assert!(!valid(&h));
        assert_eq!(Header::decode(&h.encode()), Err(FrameError::BadTag(-1)));
    }
}

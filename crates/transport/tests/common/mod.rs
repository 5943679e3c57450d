//! What the transport's integration tests share: a receiving side that
//! records everything, the payloads both sides send (reproducible from
//! the sender and the index, so the receiver can check every byte), and a
//! reproducible source of random moments and sizes.

// Each test file uses the part it needs.
#![allow(dead_code)]

use gridmpi_datatype::{BasicType, Datatype, UserBuf};
use gridmpi_transport::{ConnEvent, Sink};
use gridmpi_wire::{Frame, Header, Pid, SentToken};
use std::sync::Arc;

/// The length of every Data payload.
pub const DATA_LEN: usize = 300_000;

/// What one side receives: eager payloads in order, Data frames into one
/// buffer per frame (rreq = index); and what the transport told it.
pub struct Got {
    pub eager: Vec<Vec<u8>>,
    pub data: Vec<Vec<u8>>,
    pub landed: Vec<u32>,
    /// Data frames read straight into their buffer.
    pub direct: usize,
    pub sent: usize,
    pub resumed: usize,
    /// Bytes written again after resumes.
    pub resent: u64,
    pub refused: Vec<String>,
}

impl Got {
    pub fn new(ndata: usize) -> Got {
        Got {
            eager: Vec::new(),
            data: vec![vec![0; DATA_LEN]; ndata],
            landed: Vec::new(),
            direct: 0,
            sent: 0,
            resumed: 0,
            resent: 0,
            refused: Vec::new(),
        }
    }
}

pub fn bytes() -> Arc<Datatype> {
    Arc::new(Datatype::basic(BasicType::Byte))
}

impl Sink for Got {
    fn frame(&mut self, _peer: Pid, h: &Header, payload: &[u8]) -> Result<(), String> {
        match h.frame {
            Frame::Eager { .. } => self.eager.push(payload.to_vec()),
            Frame::Data { rreq, offset } => {
                let d = self.data.get_mut(rreq as usize).ok_or("no such buffer")?;
                d[offset as usize..offset as usize + payload.len()].copy_from_slice(payload);
                self.landed.push(rreq);
            }
            _ => return Err(format!("unexpected {h:?}")),
        }
        Ok(())
    }
    fn data_target(&mut self, _peer: Pid, h: &Header) -> Result<UserBuf, String> {
        let Frame::Data { rreq, .. } = h.frame else { return Err("not Data".into()) };
        let d = self.data.get_mut(rreq as usize).ok_or("no such buffer")?;
        self.direct += 1;
        // SAFETY: the buffer outlives the transfer (the test owns both).
        Ok(unsafe { UserBuf::new(d.as_mut_ptr(), d.len() as u64, bytes()) })
    }
    fn data_landed(&mut self, _peer: Pid, h: &Header) -> Result<(), String> {
        let Frame::Data { rreq, .. } = h.frame else { return Err("not Data".into()) };
        self.landed.push(rreq);
        Ok(())
    }
    fn sent(&mut self, _token: SentToken) {
        self.sent += 1;
    }
    fn event(&mut self, ev: ConnEvent) {
        match ev {
            ConnEvent::Resumed { resent, .. } => {
                self.resumed += 1;
                self.resent += resent;
            }
            ConnEvent::Refused { why, .. } => self.refused.push(why),
            _ => {}
        }
    }
}

/// The i-th eager payload from `from`: 1 byte to `max` bytes, length and
/// content from both.
pub fn eager_payload(from: Pid, i: usize, max: usize) -> Vec<u8> {
    let len = (i * 7919 + from as usize * 104_729) % max + 1;
    (0..len).map(|k| (k as u64 * 31 + i as u64 * 17 + from as u64) as u8).collect()
}

/// The i-th Data payload from `from`.
pub fn data_payload(from: Pid, i: usize) -> Vec<u8> {
    (0..DATA_LEN).map(|k| (k as u64 * 13 + i as u64 * 101 + from as u64 * 7) as u8).collect()
}

/// xorshift: reproducible moments and sizes.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

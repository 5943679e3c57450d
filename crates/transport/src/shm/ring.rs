//! Shared memory between ranks of one host.
//!
//! Every rank owns one segment (its inbox): a header and one ring per local
//! rank. The ring for sender `s` is written only by `s` and read only by the
//! owner (single producer, single consumer), and carries the same frames as
//! TCP (wire.rs), each padded to 8 bytes. A frame is never split across the
//! end of the ring: when it does not fit before the end, the producer writes a
//! pad marker (a zero byte where a frame kind would be) and starts again at
//! offset 0, so the consumer always sees a frame as one slice of shared
//! memory and the engine copies its payload straight to the user's buffer.
//!
//! The owner sets `sleeping` before it blocks in epoll; a producer that sees
//! it set after publishing a frame rings the owner's doorbell (sys::Doorbell).

use crate::sys::SharedMap;
use gridmpi_wire::HEADER_LEN;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

const MAGIC: u64 = 0x4752_4944_4d50_4931; // "GRIDMPI1"
const SEG_HEADER: usize = 4096;
const RING_HEADER: usize = 256;
const HEAD_OFF: usize = 0;
const TAIL_OFF: usize = 128;
/// A zero byte where a frame's kind would be: skip to the ring's start.
const PAD: u8 = 0;

pub fn align8(n: usize) -> usize {
    (n + 7) & !7
}

#[repr(C)]
struct SegHeader {
    magic: u64,
    nrings: u32,
    owner_pid: u32,
    ring_size: u64,
    _pad: [u8; 40],
    /// Set by the owner while it sleeps (or is about to) in the kernel.
    sleeping: AtomicU32,
}

/// This rank's inbox segment.
pub struct Inbox {
    map: Arc<SharedMap>,
    nrings: usize,
    ring_size: usize,
    readers: Vec<RingReader>,
}

fn seg_len(nrings: usize, ring_size: usize) -> usize {
    SEG_HEADER + nrings * (RING_HEADER + ring_size)
}

impl Inbox {
    /// Create the inbox named `name` with `nrings` rings of `ring_size` bytes
    /// (a power of two, at least 4 KiB).
    pub fn create(name: &str, nrings: usize, ring_size: usize) -> io::Result<Inbox> {
        assert!(ring_size.is_power_of_two() && ring_size >= 4096);
        let map = SharedMap::create(name, seg_len(nrings, ring_size))?;
        // SAFETY: the fresh mapping is zeroed and large enough for the header;
        // nobody else maps it before this function returns.
        unsafe {
            let h = map.as_ptr() as *mut SegHeader;
            (*h).nrings = nrings as u32;
            (*h).owner_pid = std::process::id();
            (*h).ring_size = ring_size as u64;
            std::ptr::write_volatile(&mut (*h).magic, MAGIC);
        }
        let readers = (0..nrings).map(|i| RingReader::new(&map, i, ring_size)).collect();
        Ok(Inbox { map: Arc::new(map), nrings, ring_size, readers })
    }

    /// Remove the name once every peer has mapped it.
    pub fn unlink(&mut self) {
        self.map.unlink();
    }

    /// A probe that tells, without this inbox, whether a ring has data.
    pub fn arrival_probe(&self) -> ArrivalProbe {
        let rings = (0..self.nrings)
            .map(|i| {
                let (head, tail, _) = ring_ptrs(&self.map, i, self.ring_size);
                (head, tail)
            })
            .collect();
        ArrivalProbe { _map: self.map.clone(), rings }
    }

    pub fn nrings(&self) -> usize {
        self.nrings
    }

    pub fn ring_size(&self) -> usize {
        self.ring_size
    }

    pub fn reader(&mut self, i: usize) -> &mut RingReader {
        &mut self.readers[i]
    }

    fn sleeping(&self) -> &AtomicU32 {
        // SAFETY: the header lives as long as the mapping.
        unsafe { &(*(self.map.as_ptr() as *const SegHeader)).sleeping }
    }

    /// Announce that we are about to sleep. The caller must then look at
    /// every ring once more before blocking.
    pub fn set_sleeping(&self, on: bool) {
        self.sleeping().store(on as u32, Ordering::SeqCst);
    }
}

/// Says whether some ring of an inbox holds unread data, with two loads per
/// ring and no lock: what a blocked call spins on between progress passes.
/// It keeps the mapping alive, so it is safe to use from any thread at any
/// time; an answer may be stale by the time it is acted on (the caller
/// then makes one progress pass for nothing).
#[derive(Clone)]
pub struct ArrivalProbe {
    _map: Arc<SharedMap>,
    /// (head, tail) of each ring.
    rings: Vec<(*const AtomicU64, *const AtomicU64)>,
}

// SAFETY: the pointers are into the mapping the probe keeps alive, and only
// atomics are read through them.
unsafe impl Send for ArrivalProbe {}
unsafe impl Sync for ArrivalProbe {}

impl ArrivalProbe {
    #[inline]
    pub fn any(&self) -> bool {
        // SAFETY: see above.
        self.rings.iter().any(|&(h, t)| unsafe { (*t).load(Ordering::Acquire) != (*h).load(Ordering::Relaxed) })
    }
}

/// Says whether the readers of rings we found too full have read from
/// them since (so a frame waiting for room may fit now), with one load per
/// ring and no lock: a blocked call spins on it while frames wait, as no
/// frame comes to say so. Keeps the mappings alive.
pub struct RoomProbe {
    _maps: Vec<Arc<SharedMap>>,
    /// Each ring's head (read position) and its value when it was too full.
    heads: Vec<(*const AtomicU64, u64)>,
}

// SAFETY: the pointers are into mappings the probe keeps alive, and only
// atomics are read through them.
unsafe impl Send for RoomProbe {}
unsafe impl Sync for RoomProbe {}

impl RoomProbe {
    #[inline]
    pub fn freed(&self) -> bool {
        // SAFETY: see above.
        self.heads.iter().any(|&(h, seen)| unsafe { (*h).load(Ordering::Acquire) } != seen)
    }

    /// Watch `other`'s rings too.
    pub fn join(&mut self, other: RoomProbe) {
        self._maps.extend(other._maps);
        self.heads.extend(other.heads);
    }
}

/// A peer's inbox, mapped to write into our ring there.
pub struct PeerInbox {
    map: Arc<SharedMap>,
    writer: RingWriter,
}

impl PeerInbox {
    /// Map the inbox `name` and take ring `ring` (our local index) in it.
    pub fn open(name: &str, ring: usize) -> io::Result<PeerInbox> {
        let map = SharedMap::open(name)?;
        if map.len() < SEG_HEADER {
            return Err(io::Error::other(format!("shared memory segment {name} is too small")));
        }
        // SAFETY: the mapping is at least SEG_HEADER bytes.
        let (magic, nrings, ring_size) = unsafe {
            let h = map.as_ptr() as *const SegHeader;
            (std::ptr::read_volatile(&(*h).magic), (*h).nrings as usize, (*h).ring_size as usize)
        };
        if magic != MAGIC
            || !ring_size.is_power_of_two()
            || ring_size < 4096
            || ring >= nrings
            || map.len() < seg_len(nrings, ring_size)
        {
            return Err(io::Error::other(format!("shared memory segment {name} is not a GridMPI inbox")));
        }
        let writer = RingWriter::new(&map, ring, ring_size);
        Ok(PeerInbox { map: Arc::new(map), writer })
    }

    pub fn writer(&mut self) -> &mut RingWriter {
        &mut self.writer
    }

    /// A view of whether the owner has read from our ring since we last
    /// found it too full (see [`RoomProbe`]).
    pub fn room_watch(&self) -> RoomProbe {
        RoomProbe { _maps: vec![self.map.clone()], heads: vec![(self.writer.head, self.writer.head_cache)] }
    }

    /// After publishing frames: true if the owner sleeps and must be woken.
    /// Clears the flag so that one doorbell serves all writers.
    pub fn needs_wakeup(&self) -> bool {
        std::sync::atomic::fence(Ordering::SeqCst);
        // SAFETY: the header lives as long as the mapping.
        let s = unsafe { &(*(self.map.as_ptr() as *const SegHeader)).sleeping };
        s.load(Ordering::SeqCst) != 0 && s.swap(0, Ordering::SeqCst) != 0
    }
}

fn ring_ptrs(map: &SharedMap, i: usize, ring_size: usize) -> (*const AtomicU64, *const AtomicU64, *mut u8) {
    // SAFETY (for callers): offsets lie inside the mapping, checked at creation/open.
    let base = unsafe { map.as_ptr().add(SEG_HEADER + i * (RING_HEADER + ring_size)) };
    unsafe {
        (base.add(HEAD_OFF) as *const AtomicU64, base.add(TAIL_OFF) as *const AtomicU64, base.add(RING_HEADER))
    }
}

/// The consumer end of a ring.
pub struct RingReader {
    head: *const AtomicU64,
    tail: *const AtomicU64,
    data: *mut u8,
    size: usize,
    /// Our position (bytes consumed since creation).
    pos: u64,
}

unsafe impl Send for RingReader {}

impl RingReader {
    fn new(map: &SharedMap, i: usize, size: usize) -> RingReader {
        let (head, tail, data) = ring_ptrs(map, i, size);
        RingReader { head, tail, data, size, pos: 0 }
    }

    /// Is there a frame to read?
    #[inline]
    pub fn has_data(&self) -> bool {
        // SAFETY: tail points into the live mapping.
        unsafe { (*self.tail).load(Ordering::Acquire) != self.pos }
    }

    /// The next frame (header and payload) as one slice, or None. Call
    /// [`RingReader::consume`] after handling it. Errors mean the producer
    /// wrote something that is not a frame.
    pub fn peek(&mut self) -> Result<Option<&[u8]>, String> {
        loop {
            // SAFETY: tail points into the live mapping.
            let tail = unsafe { (*self.tail).load(Ordering::Acquire) };
            let avail = tail.wrapping_sub(self.pos);
            if avail == 0 {
                return Ok(None);
            }
            if avail > self.size as u64 || avail % 8 != 0 {
                return Err(format!("ring tail is corrupt ({avail} bytes available)"));
            }
            let off = (self.pos & (self.size as u64 - 1)) as usize; // the size is a power of two
            let to_end = self.size - off;
            // SAFETY: off < size; the bytes between pos and tail are published
            // by the producer and not written until we advance head.
            let first = unsafe { *self.data.add(off) };
            if first == PAD {
                if avail < to_end as u64 {
                    return Err("ring pad marker without the padding".into());
                }
                self.consume_raw(to_end as u64);
                continue;
            }
            if avail < HEADER_LEN as u64 || to_end < HEADER_LEN {
                return Err("truncated frame header in ring".into());
            }
            // Payload length at bytes 4..8 of the header.
            let mut pl = [0u8; 4];
            // SAFETY: within the published region (checked above).
            unsafe { std::ptr::copy_nonoverlapping(self.data.add(off + 4), pl.as_mut_ptr(), 4) };
            let total = align8(HEADER_LEN + u32::from_le_bytes(pl) as usize);
            if total as u64 > avail || total > to_end {
                return Err(format!("frame of {total} bytes overruns the ring"));
            }
            // SAFETY: [off, off+total) is inside the ring and published.
            return Ok(Some(unsafe { std::slice::from_raw_parts(self.data.add(off), total) }));
        }
    }

    /// Release the frame returned by `peek`.
    pub fn consume(&mut self, frame_len: usize) {
        self.consume_raw(align8(frame_len) as u64);
    }

    fn consume_raw(&mut self, n: u64) {
        self.pos = self.pos.wrapping_add(n);
        // SAFETY: head points into the live mapping.
        unsafe { (*self.head).store(self.pos, Ordering::Release) };
    }
}

/// The producer end of a ring.
pub struct RingWriter {
    head: *const AtomicU64,
    tail: *const AtomicU64,
    data: *mut u8,
    size: usize,
    pos: u64,
    /// Last head seen; re-read only when space seems short.
    head_cache: u64,
}

unsafe impl Send for RingWriter {}

impl RingWriter {
    fn new(map: &SharedMap, i: usize, size: usize) -> RingWriter {
        let (head, tail, data) = ring_ptrs(map, i, size);
        // SAFETY: pointers into the live mapping.
        let pos = unsafe { (*tail).load(Ordering::Acquire) };
        let head_cache = unsafe { (*head).load(Ordering::Acquire) };
        RingWriter { head, tail, data, size, pos, head_cache }
    }

    /// Largest frame (header + payload) that can ever fit.
    pub fn max_frame(&self) -> usize {
        self.size / 2
    }

    fn free(&mut self, need: u64) -> bool {
        let used = self.pos.wrapping_sub(self.head_cache);
        if self.size as u64 - used >= need {
            return true;
        }
        // SAFETY: head points into the live mapping.
        self.head_cache = unsafe { (*self.head).load(Ordering::Acquire) };
        let used = self.pos.wrapping_sub(self.head_cache);
        self.size as u64 - used >= need
    }

    /// Write a frame of `len` bytes (header + payload) with `fill`, which gets
    /// exactly `len` writable bytes. Returns false (nothing written) when the
    /// ring has no room now. `len` must not exceed [`RingWriter::max_frame`].
    pub fn try_write(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        debug_assert!(len <= self.max_frame());
        let total = align8(len);
        let off = (self.pos & (self.size as u64 - 1)) as usize; // the size is a power of two
        let to_end = self.size - off;
        let pad = if total > to_end { to_end } else { 0 };
        if !self.free((pad + total) as u64) {
            return false;
        }
        if pad > 0 {
            // SAFETY: off < size and the space is free.
            unsafe { *self.data.add(off) = PAD };
            self.pos = self.pos.wrapping_add(pad as u64);
        }
        let off = (self.pos & (self.size as u64 - 1)) as usize; // the size is a power of two
        // SAFETY: [off, off+total) is free space inside the ring, owned by
        // the producer until tail is published.
        let slot = unsafe { std::slice::from_raw_parts_mut(self.data.add(off), len) };
        fill(slot);
        self.pos = self.pos.wrapping_add(total as u64);
        // SAFETY: tail points into the live mapping.
        unsafe { (*self.tail).store(self.pos, Ordering::Release) };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridmpi_wire::{Envelope, Frame, Header};

    fn frame(tag: i32, payload: &[u8]) -> Vec<u8> {
        let h = Header::new(Frame::Eager { env: Envelope { ctx: 0, src: 0, tag }, sync: None }, payload.len() as u32);
        let mut v = h.encode().to_vec();
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn frames_round_trip_across_wraps() {
        let name = format!("/gridmpi-test-ring-{}", std::process::id());
        let mut inbox = Inbox::create(&name, 2, 4096).unwrap();
        let mut peer = PeerInbox::open(&name, 1).unwrap();
        let mut sent = 0;
        let mut got = 0;
        let mut x = 12345u32;
        while got < 2000 {
            // write some frames of random size until full
            loop {
                x = x.wrapping_mul(1103515245).wrapping_add(12345);
                let n = (x >> 16) as usize % 900;
                let payload: Vec<u8> = (0..n).map(|i| (i as u8).wrapping_add(sent as u8)).collect();
                let f = frame(sent, &payload);
                if sent >= 2000 || !peer.writer().try_write(f.len(), |s| s.copy_from_slice(&f)) {
                    break;
                }
                sent += 1;
            }
            let r = inbox.reader(1);
            while let Some(fr) = r.peek().unwrap() {
                let h = Header::decode(fr[..HEADER_LEN].try_into().unwrap()).unwrap();
                let Frame::Eager { env, .. } = h.frame else { panic!("not the frame written") };
                assert_eq!(env.tag, got);
                let p = &fr[HEADER_LEN..HEADER_LEN + h.payload_len as usize];
                assert!(p.iter().enumerate().all(|(i, &b)| b == (i as u8).wrapping_add(got as u8)));
                let l = HEADER_LEN + h.payload_len as usize;
                r.consume(l);
                got += 1;
            }
        }
        assert!(!inbox.reader(0).has_data());
    }

    /// A writer that found the ring full learns from the probe, not from a
    /// frame, that the reader made room.
    #[test]
    fn the_room_probe_sees_the_reader_make_room() {
        let name = format!("/gridmpi-test-ring-room-{}", std::process::id());
        let mut inbox = Inbox::create(&name, 1, 4096).unwrap();
        let mut peer = PeerInbox::open(&name, 0).unwrap();
        let b = Header::new(Frame::Eager { env: Envelope { ctx: 0, src: 0, tag: 0 }, sync: None }, 1000).encode();
        let fill = |s: &mut [u8]| s[..HEADER_LEN].copy_from_slice(&b);
        while peer.writer().try_write(HEADER_LEN + 1000, fill) {}
        let probe = peer.room_watch();
        assert!(!probe.freed(), "nothing read yet");
        assert!(!peer.writer().try_write(HEADER_LEN + 1000, fill));
        let r = inbox.reader(0);
        let len = r.peek().unwrap().expect("a frame").len();
        r.consume(len);
        assert!(probe.freed());
        assert!(peer.writer().try_write(HEADER_LEN + 1000, fill), "room again");
        inbox.unlink();
    }

    #[test]
    fn corrupt_rings_are_errors_not_crashes() {
        let name = format!("/gridmpi-test-ring-bad-{}", std::process::id());
        let mut inbox = Inbox::create(&name, 1, 4096).unwrap();
        let mut peer = PeerInbox::open(&name, 0).unwrap();
        // A header claiming a huge payload.
        let b = Header::new(Frame::Eager { env: Envelope { ctx: 0, src: 0, tag: 0 }, sync: None }, 100_000).encode();
        assert!(peer.writer().try_write(HEADER_LEN, |s| s.copy_from_slice(&b)));
        assert!(inbox.reader(0).peek().is_err());
    }
}

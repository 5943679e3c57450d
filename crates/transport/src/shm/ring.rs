//! Shared memory between ranks of one host.
//!
//! Every rank owns one segment (its inbox): a header and one ring per local
//! rank. The ring for sender `s` is written only by `s` and read only by the
//! owner (single producer, single consumer), and carries the same frames as
//! TCP (wire.rs). Each frame sits in a slot of whole cache lines: a stamp
//! word, then the frame. The producer writes the frame, then the stamp (the
//! slot's position in the ring's byte stream, with [`VALID`], scrambled by
//! the inbox's random key); the consumer polls the stamp where the next slot
//! starts. So a small frame and the sign that it is there share one cache
//! line, and it crosses between cores once (waiting on a separate tail
//! pointer took two transfers: the pointer, then the frame). The key is why
//! stale bytes there (a stamp of an earlier lap, or the middle of an older,
//! longer frame: the user's data) never read as the stamp expected: data
//! would have to hold the key. (Clearing the next slot's stamp word before
//! publishing does the same, but takes the line the consumer polls away
//! from it at every frame.)
//! A frame is never split across
//! the end of the ring: when it does not fit before the end, the producer
//! stamps a pad slot ([`PAD`]) to the end and starts again at offset 0, so
//! the consumer always sees a frame as one slice of shared memory and the
//! engine copies its payload straight to the user's buffer. The tail
//! pointer (the producer's position) is still published after each slot:
//! [`ArrivalProbe`] polls it, and a producer that opens the ring again
//! starts there.
//!
//! The owner sets `sleeping` before it blocks in epoll; a producer that sees
//! it set after publishing a frame rings the owner's doorbell (sys::Doorbell).

use crate::sys::SharedMap;
use gridmpi_wire::HEADER_LEN;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

const MAGIC: u64 = 0x4752_4944_4d50_4932; // "GRIDMPI2": keyed stamps
const SEG_HEADER: usize = 4096;
const RING_HEADER: usize = 256;
const HEAD_OFF: usize = 0;
const TAIL_OFF: usize = 128;
/// A slot's stamp: its position in the stream, with this bit (so that a
/// cleared word, or the zeroed ring at the start, is never valid).
const VALID: u64 = 1 << 62;
/// ... and with this one too for a pad slot: skip to the ring's start.
const PAD: u64 = 1 << 63;
/// Slots are whole cache lines.
const LINE: usize = 64;
/// The stamp word before each frame.
const STAMP: usize = 8;

/// The bytes a slot holding a frame of `frame_len` bytes takes.
pub fn slot_len(frame_len: usize) -> usize {
    (STAMP + frame_len).next_multiple_of(LINE)
}

/// The stamp word at `off` of a ring's data.
///
/// # Safety
/// `off` is a multiple of 8 within the ring, whose mapping is alive.
unsafe fn stamp_at(data: *mut u8, off: usize) -> &'static AtomicU64 {
    &*(data.add(off) as *const AtomicU64)
}

#[repr(C)]
struct SegHeader {
    magic: u64,
    nrings: u32,
    owner_pid: u32,
    ring_size: u64,
    /// Scrambles the stamps of every ring of the inbox.
    stamp_key: u64,
    _pad: [u8; 32],
    /// Set by the owner while it sleeps (or is about to) in the kernel.
    sleeping: AtomicU32,
}

/// This rank's inbox segment.
pub struct Inbox {
    map: Arc<SharedMap>,
    nrings: usize,
    ring_size: usize,
    key: u64,
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
        let mut key = [0u8; 8];
        crate::sys::random_bytes(&mut key)?;
        let key = u64::from_le_bytes(key);
        // SAFETY: the fresh mapping is zeroed and large enough for the header;
        // nobody else maps it before this function returns.
        unsafe {
            let h = map.as_ptr() as *mut SegHeader;
            (*h).nrings = nrings as u32;
            (*h).owner_pid = std::process::id();
            (*h).ring_size = ring_size as u64;
            (*h).stamp_key = key;
            std::ptr::write_volatile(&mut (*h).magic, MAGIC);
        }
        let readers = (0..nrings).map(|i| RingReader::new(&map, i, ring_size, key)).collect();
        Ok(Inbox { map: Arc::new(map), nrings, ring_size, key, readers })
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

    /// A probe that tells, without this inbox, whether ring `i` has a
    /// frame, by the stamp where it would start (see [`SlotProbe`]).
    pub fn slot_probe(&self, i: usize) -> SlotProbe {
        let (head, _, data) = ring_ptrs(&self.map, i, self.ring_size);
        SlotProbe { _map: self.map.clone(), head, data, size: self.ring_size, key: self.key }
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
        // SAFETY: see above. (The tails, not the next slots' stamps: a
        // tail's line moves only when a frame is published, where the next
        // slot's line is the one the producer writes the frame into.)
        self.rings.iter().any(|&(h, t)| unsafe { (*t).load(Ordering::Acquire) != (*h).load(Ordering::Relaxed) })
    }
}

/// Says whether one ring of an inbox holds a frame, by the stamp of the slot
/// where it would start, with no lock: what a caller waiting for a frame
/// from one peer polls (the frame's own cache line, so it arrives with the
/// sign that it is there). It keeps the mapping alive; an answer may be
/// stale by the time it is acted on.
pub struct SlotProbe {
    _map: Arc<SharedMap>,
    head: *const AtomicU64,
    data: *mut u8,
    size: usize,
    key: u64,
}

// SAFETY: the pointers are into the mapping the probe keeps alive, and only
// atomics are read through them.
unsafe impl Send for SlotProbe {}
unsafe impl Sync for SlotProbe {}

impl SlotProbe {
    #[inline]
    pub fn ready(&self) -> bool {
        // SAFETY: see above; the head is a slot start.
        unsafe { stamped(self.data, self.size, self.key, (*self.head).load(Ordering::Relaxed)) }
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
        let (magic, nrings, ring_size, key) = unsafe {
            let h = map.as_ptr() as *const SegHeader;
            (std::ptr::read_volatile(&(*h).magic), (*h).nrings as usize, (*h).ring_size as usize, (*h).stamp_key)
        };
        if magic != MAGIC
            || !ring_size.is_power_of_two()
            || ring_size < 4096
            || ring >= nrings
            || map.len() < seg_len(nrings, ring_size)
        {
            return Err(io::Error::other(format!("shared memory segment {name} is not a GridMPI inbox")));
        }
        let writer = RingWriter::new(&map, ring, ring_size, key);
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
    data: *mut u8,
    key: u64,
    size: usize,
    /// Our position (bytes consumed since creation).
    pos: u64,
}

unsafe impl Send for RingReader {}

impl RingReader {
    fn new(map: &SharedMap, i: usize, size: usize, key: u64) -> RingReader {
        let (head, _, data) = ring_ptrs(map, i, size);
        RingReader { head, data, key, size, pos: 0 }
    }

    /// Is there a frame to read?
    #[inline]
    pub fn has_data(&self) -> bool {
        // SAFETY: the mapping is alive and pos is a slot start.
        unsafe { stamped(self.data, self.size, self.key, self.pos) }
    }

    /// The next frame (header and payload) as one slice, or None. Call
    /// [`RingReader::consume`] after handling it. Errors mean the producer
    /// wrote something that is not a frame.
    pub fn peek(&mut self) -> Result<Option<&[u8]>, String> {
        loop {
            let off = (self.pos & (self.size as u64 - 1)) as usize; // the size is a power of two
            let to_end = self.size - off;
            // SAFETY: off is a slot start (a multiple of LINE) inside the ring.
            let stamp = unsafe { stamp_at(self.data, off) }.load(Ordering::Acquire) ^ self.key;
            if stamp == self.pos | VALID | PAD {
                self.consume_raw(to_end as u64);
                continue;
            }
            if stamp != self.pos | VALID {
                return Ok(None);
            }
            if to_end < STAMP + HEADER_LEN {
                return Err("truncated frame header in ring".into());
            }
            // Payload length at bytes 4..8 of the header.
            let mut pl = [0u8; 4];
            // SAFETY: within the published slot (the stamp was seen).
            unsafe { std::ptr::copy_nonoverlapping(self.data.add(off + STAMP + 4), pl.as_mut_ptr(), 4) };
            let frame = HEADER_LEN + u32::from_le_bytes(pl) as usize;
            if slot_len(frame) > to_end {
                return Err(format!("frame of {frame} bytes overruns the ring"));
            }
            // SAFETY: [off + STAMP, off + STAMP + frame) is inside the ring and published.
            return Ok(Some(unsafe { std::slice::from_raw_parts(self.data.add(off + STAMP), frame) }));
        }
    }

    /// Release the frame returned by `peek`.
    pub fn consume(&mut self, frame_len: usize) {
        self.consume_raw(slot_len(frame_len) as u64);
    }

    fn consume_raw(&mut self, n: u64) {
        self.pos = self.pos.wrapping_add(n);
        // SAFETY: head points into the live mapping.
        unsafe { (*self.head).store(self.pos, Ordering::Release) };
    }
}

/// Whether the slot at stream position `pos` of a ring is published (a
/// frame or a pad).
///
/// # Safety
/// `data`, `size` and `key` are a live ring's; `pos` is a slot start.
#[inline]
unsafe fn stamped(data: *mut u8, size: usize, key: u64, pos: u64) -> bool {
    let off = (pos & (size as u64 - 1)) as usize;
    (stamp_at(data, off).load(Ordering::Acquire) ^ key) & !PAD == pos | VALID
}

/// The producer end of a ring.
pub struct RingWriter {
    head: *const AtomicU64,
    tail: *const AtomicU64,
    data: *mut u8,
    key: u64,
    size: usize,
    pos: u64,
    /// Last head seen; re-read only when space seems short.
    head_cache: u64,
}

unsafe impl Send for RingWriter {}

impl RingWriter {
    fn new(map: &SharedMap, i: usize, size: usize, key: u64) -> RingWriter {
        let (head, tail, data) = ring_ptrs(map, i, size);
        // SAFETY: pointers into the live mapping.
        let pos = unsafe { (*tail).load(Ordering::Acquire) };
        let head_cache = unsafe { (*head).load(Ordering::Acquire) };
        RingWriter { head, tail, data, key, size, pos, head_cache }
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
        let total = slot_len(len);
        let mask = self.size as u64 - 1; // the size is a power of two
        let off = (self.pos & mask) as usize;
        let to_end = self.size - off;
        let pad = if total > to_end { to_end } else { 0 };
        if !self.free((pad + total) as u64) {
            return false;
        }
        let pad_at = (pad > 0).then_some((off, self.pos));
        self.pos = self.pos.wrapping_add(pad as u64);
        let off = (self.pos & mask) as usize;
        // SAFETY: [off, off + total) is free space inside the ring, the
        // producer's until stamped; slot starts are multiples of LINE.
        unsafe {
            fill(std::slice::from_raw_parts_mut(self.data.add(off + STAMP), len));
            stamp_at(self.data, off).store((self.pos | VALID) ^ self.key, Ordering::Release);
            if let Some((at, pos)) = pad_at {
                // The pad after the frame it skips to: the consumer reads
                // the frame at the start as soon as it sees the pad.
                stamp_at(self.data, at).store((pos | VALID | PAD) ^ self.key, Ordering::Release);
            }
            self.pos = self.pos.wrapping_add(total as u64);
            (*self.tail).store(self.pos, Ordering::Release);
        }
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
        // (One slot freed may not hold the next one and the pad before it.)
        while let Some(f) = r.peek().unwrap() {
            let len = f.len();
            r.consume(len);
        }
        assert!(peer.writer().try_write(HEADER_LEN + 1000, fill), "room again");
        inbox.unlink();
    }

    /// Bytes left in the ring by an older, longer frame that hold the
    /// position a slot starting there would have (unkeyed) are never taken
    /// for a frame.
    #[test]
    fn stale_bytes_are_never_a_stamp() {
        let name = format!("/gridmpi-test-ring-stale-{}", std::process::id());
        let mut inbox = Inbox::create(&name, 1, 4096).unwrap();
        let mut peer = PeerInbox::open(&name, 0).unwrap();
        // A frame over the first half whose payload holds, at every line
        // start of the ring, the stamp of a slot there on the next lap.
        let mut payload = vec![0u8; 2000 - HEADER_LEN];
        for o in (64..2000 - 8).step_by(64) {
            let at = o - STAMP - HEADER_LEN;
            payload[at..at + 8].copy_from_slice(&((4096 + o as u64) | VALID).to_le_bytes());
        }
        let long = frame(0, &payload);
        assert!(peer.writer().try_write(long.len(), |s| s.copy_from_slice(&long)));
        let rest = frame(0, &[0; 1900 - HEADER_LEN]);
        assert!(peer.writer().try_write(rest.len(), |s| s.copy_from_slice(&rest)));
        let r = inbox.reader(0);
        for _ in 0..2 {
            let len = r.peek().unwrap().expect("a long frame").len();
            r.consume(len);
        }
        // Small frames to the end and on over the next lap: each read
        // once, and nothing more.
        for tag in 1..40 {
            let f = frame(tag, &[tag as u8; 8]);
            assert!(peer.writer().try_write(f.len(), |s| s.copy_from_slice(&f)));
            let got = r.peek().unwrap().expect("the frame just written").to_vec();
            assert_eq!(got, f);
            r.consume(got.len());
            assert!(r.peek().unwrap().is_none(), "a frame that was never written, after tag {tag}");
            assert!(!r.has_data());
        }
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
        inbox.unlink();
    }
}

//! Exact arrival times for packets read from a TUN device.
//!
//! A packet reaches the link when the switch namespace hands it to the TUN
//! device; the emulator reads it some tens of microseconds later (the time
//! to wake a sleeping thread, more when the CPUs are busy). Taking the read
//! time as the arrival time would add that to every delay. So next to each
//! TUN device the emulator keeps an AF_PACKET socket with a TPACKET_V2
//! receive ring, filtered (classic BPF) to the packets going out on the TUN
//! device: the kernel stamps each one (CLOCK_REALTIME) as it is handed to
//! the device, before the TUN queue. Reading a stamp costs no system call.
//!
//! Ring entries are matched to TUN reads by the first bytes of the packet
//! (IP header with its id and checksum, ports, sequence number), which also
//! copes with two CPUs sending at once and with packets the TUN queue drops.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

const SOL_PACKET: libc::c_int = 263;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_VERSION: libc::c_int = 10;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const PACKET_OUTGOING: u32 = 4;

const FRAME_SIZE: usize = 128;
const BLOCK_SIZE: usize = 4096;
const BLOCK_NR: usize = 64;
const FRAME_NR: usize = BLOCK_SIZE / FRAME_SIZE * BLOCK_NR;
/// Bytes of a packet that identify it.
const KEY_LEN: usize = 28;
/// Stamps kept waiting for their TUN read.
const PENDING_MAX: usize = 4096;

#[repr(C)]
struct TpacketReq {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}

#[repr(C)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

pub struct ArrivalStamps {
    _sock: OwnedFd,
    ring: *mut u8,
    ring_len: usize,
    next: usize,
    /// (packet key, arrival time on CLOCK_MONOTONIC)
    pending: VecDeque<(u64, u64)>,
    pub matched: u64,
    pub unmatched: u64,
}

// SAFETY: the ring mapping is owned by this struct and only touched by the
// one thread that owns the struct.
unsafe impl Send for ArrivalStamps {}

fn key_of(packet: &[u8]) -> u64 {
    // FNV-1a over the identifying prefix.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in &packet[..packet.len().min(KEY_LEN)] {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn check(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(())
    }
}

impl ArrivalStamps {
    /// Open the ring on `ifname` of the calling thread's network namespace.
    pub fn open(ifname: &str) -> io::Result<ArrivalStamps> {
        let name = std::ffi::CString::new(ifname).map_err(io::Error::other)?;
        // SAFETY: plain system calls on descriptors and structures we own;
        // every pointer passed lives across its call, and the mmap'd ring
        // is unmapped in Drop.
        unsafe {
            let ifindex = libc::if_nametoindex(name.as_ptr());
            if ifindex == 0 {
                return Err(io::Error::other(format!("no interface {ifname}")));
            }
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, (libc::ETH_P_ALL as u16).to_be() as i32);
            check(fd, "AF_PACKET socket")?;
            let sock = OwnedFd::from_raw_fd(fd);
            // Only packets leaving through the device: ld pkttype; == OUTGOING?
            let filter = [
                SockFilter { code: 0x20, jt: 0, jf: 0, k: (-0x1000i32 + 4) as u32 },
                SockFilter { code: 0x15, jt: 0, jf: 1, k: PACKET_OUTGOING },
                SockFilter { code: 0x06, jt: 0, jf: 0, k: 0xffff },
                SockFilter { code: 0x06, jt: 0, jf: 0, k: 0 },
            ];
            let prog = SockFprog { len: filter.len() as u16, filter: filter.as_ptr() };
            check(
                libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &prog as *const _ as *const libc::c_void, size_of::<SockFprog>() as u32),
                "SO_ATTACH_FILTER",
            )?;
            let version = TPACKET_V2;
            check(
                libc::setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version as *const _ as *const libc::c_void, 4),
                "PACKET_VERSION",
            )?;
            let req = TpacketReq {
                block_size: BLOCK_SIZE as u32,
                block_nr: BLOCK_NR as u32,
                frame_size: FRAME_SIZE as u32,
                frame_nr: FRAME_NR as u32,
            };
            check(
                libc::setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req as *const _ as *const libc::c_void, size_of::<TpacketReq>() as u32),
                "PACKET_RX_RING",
            )?;
            let ring_len = BLOCK_SIZE * BLOCK_NR;
            let ring = libc::mmap(std::ptr::null_mut(), ring_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0);
            if ring == libc::MAP_FAILED {
                return Err(io::Error::other(format!("mmap of the packet ring: {}", io::Error::last_os_error())));
            }
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
            addr.sll_ifindex = ifindex as i32;
            let stamps = ArrivalStamps {
                _sock: sock,
                ring: ring as *mut u8,
                ring_len,
                next: 0,
                pending: VecDeque::new(),
                matched: 0,
                unmatched: 0,
            };
            check(
                libc::bind(stamps._sock.as_raw_fd(), &addr as *const _ as *const libc::sockaddr, size_of::<libc::sockaddr_ll>() as u32),
                "bind to the TUN device",
            )?;
            Ok(stamps)
        }
    }

    fn frame(&self, i: usize) -> *mut u8 {
        // SAFETY (of callers): i < FRAME_NR, so the frame lies in the ring.
        unsafe { self.ring.add(i * FRAME_SIZE) }
    }

    /// Move every stamp the kernel has written into `pending`.
    fn drain(&mut self, realtime_to_mono: i128) {
        loop {
            let frame = self.frame(self.next);
            // SAFETY: tp_status is the first u32 of the frame, shared with the
            // kernel; read it atomically with acquire so the frame's other
            // fields, written before it, are visible.
            let status = unsafe { &*(frame as *const AtomicU32) };
            if status.load(Ordering::Acquire) & TP_STATUS_USER == 0 {
                return;
            }
            // SAFETY: the kernel filled this frame (status USER); fields at
            // their tpacket2_hdr offsets; tp_net + snaplen stays within the frame.
            unsafe {
                let snaplen = *(frame.add(8) as *const u32) as usize;
                let net = *(frame.add(14) as *const u16) as usize;
                let sec = *(frame.add(16) as *const u32) as i128;
                let nsec = *(frame.add(20) as *const u32) as i128;
                if net + snaplen <= FRAME_SIZE {
                    let data = std::slice::from_raw_parts(frame.add(net), snaplen);
                    let mono = (sec * 1_000_000_000 + nsec - realtime_to_mono).max(0) as u64;
                    if self.pending.len() == PENDING_MAX {
                        self.pending.pop_front();
                    }
                    self.pending.push_back((key_of(data), mono));
                }
            }
            status.store(TP_STATUS_KERNEL, Ordering::Release);
            self.next = (self.next + 1) % FRAME_NR;
        }
    }

    /// The arrival time of a packet just read from the TUN device, if the
    /// kernel stamped it.
    pub fn arrival(&mut self, packet: &[u8]) -> Option<u64> {
        let offset = super::rt::realtime_ns() as i128 - super::rt::mono_ns() as i128;
        self.drain(offset);
        let key = key_of(packet);
        match self.pending.iter().position(|&(k, _)| k == key) {
            Some(i) => {
                // Anything older than the match was dropped by the TUN queue
                // or belongs to a packet read earlier out of order; keep only
                // a short window of those.
                let (_, t) = self.pending.remove(i).unwrap();
                if i > 64 {
                    self.pending.drain(..i - 64);
                }
                self.matched += 1;
                Some(t)
            }
            None => {
                self.unmatched += 1;
                None
            }
        }
    }
}

impl Drop for ArrivalStamps {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in open().
        unsafe { libc::munmap(self.ring as *mut libc::c_void, self.ring_len) };
    }
}

//! The real-time loop of one link direction: read packets from the input
//! TUN device, run them through the link model, write each one to the
//! output TUN device when it is due, and measure how late that was.
//!
//! One thread per direction, SCHED_FIFO. It sleeps in ppoll(2) until either
//! a packet arrives, the next packet is due, or the control thread rings its
//! doorbell (an eventfd). A real-time thread gets no timer slack, so the
//! wake-up is as precise as the machine's timers allow. Every release is
//! timed: release error = time write(2) starts - time the packet was due.

use super::link::{LinkDir, Verdict};
use super::stamps::ArrivalStamps;
use crate::capture::CaptureMsg;
use crate::monitor::{Bin, MonitorMsg};
use crate::spec::DirParams;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};

const MS: u64 = 1_000_000;
/// Read buffer: MTU 1500 plus room to notice anything larger.
const BUF_LEN: usize = 2048;
/// Packets read per round before releases are checked again.
const READ_BATCH: usize = 32;
/// A release closer than the expected wake-up latency is waited for by
/// spinning, not sleeping; within these bounds.
const SPIN_MIN_NS: u64 = 10_000;
const SPIN_MAX_NS: u64 = 100_000;

/// How late timer wake-ups come on this machine (an average of recent
/// oversleeps), so that the timer can be set that much early.
struct WakeLatency {
    lead_ns: u64,
}

impl WakeLatency {
    fn observe(&mut self, oversleep_ns: u64) {
        let sample = oversleep_ns.min(500_000) as i64;
        let lead = self.lead_ns as i64;
        self.lead_ns = (lead + (sample - lead) / 8).max(0) as u64;
    }
}

pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Counters a direction keeps (read by `status`).
#[derive(Default)]
pub struct Counters {
    pub pkts_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub pkts_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub drops: AtomicU64,
    pub drop_bytes: AtomicU64,
    pub losses: AtomicU64,
    pub cut_drops: AtomicU64,
    /// Packets to or from a private cluster's hidden hosts (not its gateway).
    pub private_drops: AtomicU64,
    pub write_errors: AtomicU64,
    pub oversize: AtomicU64,
    pub qlen_pkts: AtomicU64,
    pub qlen_bytes: AtomicU64,
    pub qmax_pkts: AtomicU64,
    pub monitor_overflow: AtomicU64,
    pub capture_overflow: AtomicU64,
}

impl Counters {
    pub fn reset(&self) {
        for c in [
            &self.pkts_in,
            &self.bytes_in,
            &self.pkts_out,
            &self.bytes_out,
            &self.drops,
            &self.drop_bytes,
            &self.losses,
            &self.cut_drops,
            &self.private_drops,
            &self.write_errors,
            &self.oversize,
            &self.qmax_pkts,
            &self.monitor_overflow,
            &self.capture_overflow,
        ] {
            c.store(0, Relaxed);
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        let g = |c: &AtomicU64| c.load(Relaxed);
        serde_json::json!({
            "pkts_in": g(&self.pkts_in), "bytes_in": g(&self.bytes_in),
            "pkts_out": g(&self.pkts_out), "bytes_out": g(&self.bytes_out),
            "drops": g(&self.drops), "drop_bytes": g(&self.drop_bytes),
            "losses": g(&self.losses), "cut_drops": g(&self.cut_drops), "private_drops": g(&self.private_drops),
            "write_errors": g(&self.write_errors), "oversize": g(&self.oversize),
            "qlen_pkts": g(&self.qlen_pkts), "qlen_bytes": g(&self.qlen_bytes),
            "qmax_pkts": g(&self.qmax_pkts),
            "monitor_overflow": g(&self.monitor_overflow), "capture_overflow": g(&self.capture_overflow),
        })
    }
}

/// Release-time errors, in 1 us buckets up to 10 ms.
pub struct LateHistogram {
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    sum_ns: AtomicU64,
    max_ns: AtomicU64,
}

const LATE_BUCKETS: usize = 10_000;

impl LateHistogram {
    pub fn new() -> LateHistogram {
        LateHistogram {
            buckets: (0..=LATE_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
        }
    }

    pub fn record(&self, late_ns: u64) {
        let bucket = ((late_ns / 1000) as usize).min(LATE_BUCKETS);
        self.buckets[bucket].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(late_ns, Relaxed);
        self.max_ns.fetch_max(late_ns, Relaxed);
    }

    pub fn reset(&self) {
        for b in &self.buckets {
            b.store(0, Relaxed);
        }
        self.count.store(0, Relaxed);
        self.sum_ns.store(0, Relaxed);
        self.max_ns.store(0, Relaxed);
    }

    /// Upper edge (us) of the bucket holding quantile q.
    fn quantile_us(&self, counts: &[u64], total: u64, q: f64) -> u64 {
        let target = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= target {
                return i as u64 + 1;
            }
        }
        LATE_BUCKETS as u64
    }

    pub fn to_json(&self) -> serde_json::Value {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        let n = self.count.load(Relaxed).max(1);
        if total == 0 {
            return serde_json::json!({"count": 0});
        }
        serde_json::json!({
            "count": total,
            "mean_us": self.sum_ns.load(Relaxed) as f64 / n as f64 / 1000.0,
            "p50_us": self.quantile_us(&counts, total, 0.5),
            "p90_us": self.quantile_us(&counts, total, 0.9),
            "p99_us": self.quantile_us(&counts, total, 0.99),
            "p999_us": self.quantile_us(&counts, total, 0.999),
            "max_us": self.max_ns.load(Relaxed) as f64 / 1000.0,
            "over_100us": counts[100..].iter().sum::<u64>(),
            "over_1ms": counts[1000..].iter().sum::<u64>(),
        })
    }
}

/// Where captured packets of this direction go.
#[derive(Clone)]
pub struct CaptureTap {
    pub tx: SyncSender<CaptureMsg>,
    pub snaplen: usize,
    pub iface_in: Option<u32>,
    pub iface_out: Option<u32>,
}

/// What the control thread may change while the loop runs.
#[derive(Clone)]
pub struct Controls {
    pub params: DirParams,
    /// Recordings in progress: (id, where their bins go).
    pub monitors: Vec<(u64, SyncSender<MonitorMsg>)>,
    pub capture: Option<CaptureTap>,
}

/// State one direction shares with the control thread.
pub struct DirShared {
    pub name: String,
    pub index: usize,
    pub controls: Mutex<Controls>,
    version: AtomicU64,
    bell: OwnedFd,
    pub counters: Counters,
    pub late: LateHistogram,
    /// Time from a packet's arrival at the TUN device to its read.
    pub read_latency: LateHistogram,
    /// "kernel timestamps" or why not.
    pub arrival_clock: Mutex<String>,
    pub stop: AtomicBool,
    /// How the thread is scheduled, e.g. "SCHED_FIFO 50".
    pub scheduling: Mutex<String>,
}

impl DirShared {
    pub fn new(name: String, index: usize, params: DirParams) -> std::io::Result<DirShared> {
        // SAFETY: eventfd(2) returns a new fd or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(DirShared {
            name,
            index,
            controls: Mutex::new(Controls { params, monitors: Vec::new(), capture: None }),
            version: AtomicU64::new(0),
            // SAFETY: fd is fresh and owned only here.
            bell: unsafe { OwnedFd::from_raw_fd(fd) },
            counters: Counters::default(),
            late: LateHistogram::new(),
            read_latency: LateHistogram::new(),
            arrival_clock: Mutex::new(String::new()),
            stop: AtomicBool::new(false),
            scheduling: Mutex::new("starting".into()),
        })
    }

    /// Change the controls and wake the loop so it takes them at once.
    pub fn update(&self, f: impl FnOnce(&mut Controls)) {
        f(&mut self.controls.lock().unwrap());
        self.version.fetch_add(1, SeqCst);
        self.ring();
    }

    pub fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a local to our eventfd.
        unsafe { libc::write(self.bell.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8) };
    }
}

/// How the loop should be scheduled.
#[derive(Clone, Copy)]
pub struct Scheduling {
    pub realtime: bool,
    pub priority: i32,
}

/// Put the calling thread under SCHED_FIFO; describe the outcome.
fn set_realtime(s: Scheduling) -> String {
    if !s.realtime {
        return "SCHED_OTHER (real-time disabled by --no-rt)".into();
    }
    let param = libc::sched_param { sched_priority: s.priority };
    // SAFETY: pthread_self is always valid; param lives across the call.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if rc == 0 {
        format!("SCHED_FIFO {}", s.priority)
    } else {
        format!("SCHED_OTHER: SCHED_FIFO refused ({}); timing suffers when CPUs are busy", std::io::Error::from_raw_os_error(rc))
    }
}

fn set_thread_name(name: &str) {
    let name: String = format!("gtb {name}").chars().take(15).collect();
    if let Ok(c) = std::ffi::CString::new(name) {
        // SAFETY: PR_SET_NAME copies at most 16 bytes from a valid C string.
        unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr()) };
    }
}

/// The per-millisecond bin being filled, and its hand-off to the monitor.
struct BinCursor {
    bin: Bin,
}

impl BinCursor {
    /// Close every bin that ended at or before `now`. Must run before the
    /// line changes at `now`, so the queue at each bin's end is exact.
    fn advance(&mut self, now: u64, link: &LinkDir, monitors: &[(u64, SyncSender<MonitorMsg>)], shared: &DirShared) {
        let now_ms = now / MS;
        while self.bin.ms < now_ms {
            let backlog = link.backlog((self.bin.ms + 1) * MS);
            self.bin.qlen_pkts = backlog.packets;
            self.bin.qlen_bytes = backlog.bytes;
            for (_, tx) in monitors {
                self.emit(tx, shared);
            }
            self.bin = Bin { ms: self.bin.ms + 1, ..Default::default() };
            if link.is_empty() {
                self.bin.ms = now_ms; // nothing on the line: the bins between are idle
            }
        }
    }

    fn emit(&self, tx: &SyncSender<MonitorMsg>, shared: &DirShared) {
        if !self.bin.is_idle() && tx.try_send(MonitorMsg::Bin { dir: shared.index, bin: self.bin }).is_err() {
            shared.counters.monitor_overflow.fetch_add(1, Relaxed);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn capture(tap: &Option<CaptureTap>, at_in: bool, data: &[u8], orig_len: usize, ts: u64, comment: Option<&'static str>, shared: &DirShared) {
    let Some(tap) = tap else { return };
    let Some(iface) = (if at_in { tap.iface_in } else { tap.iface_out }) else { return };
    let msg = CaptureMsg {
        iface,
        ts_mono_ns: ts,
        orig_len: orig_len as u32,
        data: data[..data.len().min(tap.snaplen)].to_vec(),
        comment,
    };
    if tap.tx.try_send(msg).is_err() {
        shared.counters.capture_overflow.fetch_add(1, Relaxed);
    }
}

/// Give a packet buffer back to the pool, full length again for the next read.
fn recycle(pool: &mut Vec<Vec<u8>>, mut buf: Vec<u8>) {
    buf.resize(BUF_LEN, 0);
    pool.push(buf);
}

/// Run one direction until `shared.stop` is set.
pub fn run(
    shared: Arc<DirShared>,
    input: Arc<OwnedFd>,
    mut stamps: Option<ArrivalStamps>,
    output: Arc<OwnedFd>,
    sched: Scheduling,
    seed: u64,
    private: super::private::Private,
) {
    set_thread_name(&shared.name);
    *shared.scheduling.lock().unwrap() = set_realtime(sched);
    let mut controls = shared.controls.lock().unwrap().clone();
    let mut seen_version = shared.version.load(SeqCst);
    let mut link = LinkDir::new(controls.params.clone(), seed);
    let mut pool: Vec<Vec<u8>> = (0..1024).map(|_| vec![0u8; BUF_LEN]).collect();
    let mut wake = WakeLatency { lead_ns: 20_000 };
    let mut cursor = BinCursor { bin: Bin { ms: mono_ns() / MS, ..Default::default() } };
    let c = &shared.counters;
    let mut fds = [
        libc::pollfd { fd: input.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: shared.bell.as_raw_fd(), events: libc::POLLIN, revents: 0 },
    ];

    while !shared.stop.load(Relaxed) {
        // 1. new settings from the control thread
        let version = shared.version.load(SeqCst);
        if version != seen_version {
            seen_version = version;
            let now = mono_ns();
            cursor.advance(now, &link, &controls.monitors, &shared);
            let fresh = shared.controls.lock().unwrap().clone();
            for (id, tx) in &controls.monitors {
                if !fresh.monitors.iter().any(|(f, _)| f == id) {
                    cursor.emit(tx, &shared); // its last, partial millisecond
                }
            }
            for p in link.set_params(fresh.params.clone(), now) {
                c.cut_drops.fetch_add(1, Relaxed);
                cursor.bin.cut_drops += 1;
                recycle(&mut pool, p.data);
            }
            controls = fresh;
        }

        // 2. release what is due
        loop {
            let now = mono_ns();
            cursor.advance(now, &link, &controls.monitors, &shared);
            let Some(p) = link.pop_due(now) else { break };
            let len = p.data.len();
            if p.lost {
                c.losses.fetch_add(1, Relaxed);
                cursor.bin.losses += 1;
            } else {
                let late = now.saturating_sub(p.release_ns);
                // SAFETY: writing len initialised bytes of p.data to a TUN fd.
                let rc = unsafe { libc::write(output.as_raw_fd(), p.data.as_ptr() as *const libc::c_void, len) };
                if rc < 0 {
                    c.write_errors.fetch_add(1, Relaxed);
                } else {
                    shared.late.record(late);
                    c.pkts_out.fetch_add(1, Relaxed);
                    c.bytes_out.fetch_add(len as u64, Relaxed);
                    cursor.bin.pkts_out += 1;
                    cursor.bin.bytes_out += len as u64;
                    cursor.bin.late_max_ns = cursor.bin.late_max_ns.max(late);
                    capture(&controls.capture, false, &p.data, len, now, None, &shared);
                }
            }
            recycle(&mut pool, p.data);
            let backlog = link.backlog(now);
            c.qlen_pkts.store(backlog.packets as u64, Relaxed);
            c.qlen_bytes.store(backlog.bytes, Relaxed);
        }

        // 3. take in what arrived
        let mut read = 0;
        while read < READ_BATCH {
            let mut buf = pool.pop().unwrap_or_else(|| vec![0u8; BUF_LEN]);
            // SAFETY: reading at most BUF_LEN bytes into a buffer of that length.
            let n = unsafe { libc::read(input.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, BUF_LEN) };
            if n <= 0 {
                pool.push(buf);
                let e = std::io::Error::last_os_error();
                if n < 0 && !matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) {
                    // The TUN device is gone (its namespace was deleted under
                    // us): stop rather than spin at real-time priority.
                    *shared.scheduling.lock().unwrap() = format!("STOPPED: reading the link's TUN device failed: {e}");
                    return;
                }
                break;
            }
            read += 1;
            let now = mono_ns();
            cursor.advance(now, &link, &controls.monitors, &shared);
            let n = n as usize;
            if n >= BUF_LEN {
                c.oversize.fetch_add(1, Relaxed);
            }
            buf.truncate(n);
            if private.blocks(&buf) {
                c.private_drops.fetch_add(1, Relaxed);
                pool.push(buf);
                continue;
            }
            c.pkts_in.fetch_add(1, Relaxed);
            c.bytes_in.fetch_add(n as u64, Relaxed);
            cursor.bin.pkts_in += 1;
            cursor.bin.bytes_in += n as u64;
            let copy = match &controls.capture {
                Some(tap) if tap.iface_in.is_some() => Some(buf[..n.min(tap.snaplen)].to_vec()),
                _ => None,
            };
            // The kernel's stamp of when the packet reached the TUN device;
            // the read time if there is none (or it is implausible).
            let arrival = match stamps.as_mut().and_then(|st| st.arrival(&buf)) {
                Some(t) if t <= now && now - t < 100 * MS => t,
                _ => now,
            };
            shared.read_latency.record(now - arrival);
            let (verdict, rejected, backlog) = link.arrive(arrival, buf);
            cursor.bin.qmax_pkts = cursor.bin.qmax_pkts.max(backlog.packets);
            c.qlen_pkts.store(backlog.packets as u64, Relaxed);
            c.qlen_bytes.store(backlog.bytes, Relaxed);
            c.qmax_pkts.fetch_max(backlog.packets as u64, Relaxed);
            let comment = match verdict {
                Verdict::Queued { lost: false } => None,
                Verdict::Queued { lost: true } => Some("lost: random loss"),
                Verdict::QueueFull => {
                    c.drops.fetch_add(1, Relaxed);
                    c.drop_bytes.fetch_add(n as u64, Relaxed);
                    cursor.bin.drops += 1;
                    Some("dropped: queue full")
                }
                Verdict::Cut => {
                    c.cut_drops.fetch_add(1, Relaxed);
                    cursor.bin.cut_drops += 1;
                    Some("dropped: link cut")
                }
            };
            if let Some(copy) = copy {
                capture(&controls.capture, true, &copy, n, now, comment, &shared);
            }
            if let Some(buf) = rejected {
                recycle(&mut pool, buf);
            }
        }
        if read == READ_BATCH {
            continue; // more may be waiting; look at releases first
        }

        // 4. sleep until the next release, an arrival or the doorbell. The
        //    timer is set early by the usual wake-up latency; the last few
        //    microseconds are spun.
        let now = mono_ns();
        let mut target = None;
        if let Some(t) = link.next_release() {
            if t <= now {
                continue;
            }
            // Sleeping would overshoot: spin (at most SPIN_MAX_NS).
            if t - now <= (wake.lead_ns + 5_000).clamp(SPIN_MIN_NS, SPIN_MAX_NS) {
                while mono_ns() < t {
                    std::hint::spin_loop();
                }
                continue;
            }
            target = Some(t.saturating_sub(wake.lead_ns).max(now + 1_000));
        }
        let timeout = target.map(|t| libc::timespec {
            tv_sec: ((t - now) / 1_000_000_000) as i64,
            tv_nsec: ((t - now) % 1_000_000_000) as i64,
        });
        let timeout_ptr = timeout.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: fds is a valid array of 2 pollfds; timeout_ptr is null or
        // points to a timespec that outlives the call.
        let ready = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, timeout_ptr, std::ptr::null()) };
        if let (0, Some(t)) = (ready, target) {
            wake.observe(mono_ns().saturating_sub(t));
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
            *shared.scheduling.lock().unwrap() = "STOPPED: the link's TUN device went away".into();
            return;
        }
        if fds[1].revents & libc::POLLIN != 0 {
            let mut v: u64 = 0;
            // SAFETY: reading 8 bytes into a local from our eventfd.
            unsafe { libc::read(shared.bell.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
        }
    }
}

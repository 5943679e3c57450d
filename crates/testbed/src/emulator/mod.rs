//! The link emulator daemon (`gridmpi-testbed emulate`, started by `up`).
//!
//! For every WAN link it attaches to the two TUN devices (`wan-<peer>` in
//! each cluster's switch namespace) and runs one real-time thread per
//! direction (see `rt`). The main thread serves the control socket: status,
//! settings, monitor and capture.

pub mod link;
pub mod private;
pub mod rt;
pub mod stamps;

use crate::capture;
use crate::control::{self, CapturePoint, Reply, Request};
use crate::monitor::{self, DirTotals};
use crate::netns;
use crate::spec::DirParams;
use crate::state::{self, State};
use rt::{CaptureTap, DirShared, Scheduling};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::thread::JoinHandle;

pub struct Options {
    pub realtime: bool,
    pub priority: i32,
    pub seed: u64,
}

struct ActiveMonitor {
    id: u64,
    file: String,
    stop_ms: Arc<AtomicU64>,
    writer: JoinHandle<std::io::Result<Vec<DirTotals>>>,
}

struct ActiveCapture {
    file: String,
    dirs: Vec<usize>,
    writer: JoinHandle<std::io::Result<u64>>,
}

struct Daemon {
    state: State,
    dirs: Vec<Arc<DirShared>>,
    threads: Vec<JoinHandle<()>>,
    monitors: Vec<ActiveMonitor>,
    next_monitor_id: u64,
    capture: Option<ActiveCapture>,
    memory_locked: bool,
}

const MS: u64 = 1_000_000;
/// Bins or packets that may wait for a writer thread before the real-time
/// threads start counting overflows instead of blocking.
const CHANNEL_DEPTH: usize = 1 << 17;

fn describe(p: &DirParams) -> String {
    let queue = match p.queue {
        crate::units::QueueLimit::Packets(n) => format!("{n}p"),
        crate::units::QueueLimit::Bytes(n) => format!("{n}b"),
    };
    format!("rate_bps={} delay_ns={} queue={} loss={}", p.rate_bps, p.delay_ns, queue, p.loss)
}

/// Attach to a TUN device inside a switch namespace, with its arrival
/// stamps (or the reason there are none).
fn open_tun(cluster: &str, peer: &str) -> Result<(Arc<OwnedFd>, Result<stamps::ArrivalStamps, String>), String> {
    let ifname = format!("wan-{peer}");
    netns::in_netns(&netns::switch_ns(cluster), move || {
        let fd = netns::open_tun(&ifname)?;
        Ok((fd, stamps::ArrivalStamps::open(&ifname).map_err(|e| e.to_string())))
    })
    .map(|(fd, st)| (Arc::new(fd), st))
    .map_err(|e| format!("attaching to wan-{peer} in {}: {e}", netns::switch_ns(cluster)))
}

pub fn run(opts: Options) -> Result<(), String> {
    let state = State::require()?;
    // Page faults would stall the real-time threads: keep everything resident.
    // SAFETY: mlockall has no memory-safety preconditions.
    let memory_locked = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } == 0;
    let sched = Scheduling { realtime: opts.realtime, priority: opts.priority };
    let mut dirs = Vec::new();
    let mut threads = Vec::new();
    for link in &state.grid.links {
        let (a, b) = (&state.grid.clusters[link.a], &state.grid.clusters[link.b]);
        let (tun_a, stamps_a) = open_tun(&a.name, &b.name)?;
        let (tun_b, stamps_b) = open_tun(&b.name, &a.name)?;
        for (forward, params, input, stamps, output) in
            [(true, &link.forward, &tun_a, stamps_a, &tun_b), (false, &link.reverse, &tun_b, stamps_b, &tun_a)]
        {
            let name = state.grid.dir_name(link, forward);
            let shared = Arc::new(DirShared::new(name.clone(), dirs.len(), params.clone()).map_err(|e| e.to_string())?);
            *shared.arrival_clock.lock().unwrap() = match &stamps {
                Ok(_) => "kernel timestamps".into(),
                Err(e) => format!("read time (no kernel timestamps: {e})"),
            };
            let (s, i, o, st) = (shared.clone(), input.clone(), output.clone(), stamps.ok());
            let seed = opts.seed ^ (dirs.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let private = private::Private::of(&state.grid);
            threads.push(
                std::thread::Builder::new()
                    .name(name)
                    .spawn(move || rt::run(s, i, st, o, sched, seed, private))
                    .map_err(|e| e.to_string())?,
            );
            dirs.push(shared);
        }
    }
    let sock_path = state::control_socket();
    let _ = std::fs::remove_file(&sock_path);
    let listener = UnixListener::bind(&sock_path).map_err(|e| format!("{}: {e}", sock_path.display()))?;
    let mut daemon = Daemon { state, dirs, threads, monitors: Vec::new(), next_monitor_id: 1, capture: None, memory_locked };
    if let Some(file) = daemon.state.monitor_file.clone() {
        let reply = daemon.monitor_start(file.to_string_lossy().into_owned());
        if reply["ok"] != true {
            eprintln!("gridmpi-testbed emulate: monitor: {}", reply["error"]);
        }
    }
    eprintln!("gridmpi-testbed emulate: running {} directions", daemon.dirs.len());
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if daemon.serve(stream) {
            break;
        }
    }
    let _ = std::fs::remove_file(&sock_path);
    Ok(())
}

impl Daemon {
    /// Answer one client; true when asked to shut down.
    fn serve(&mut self, stream: UnixStream) -> bool {
        let mut line = String::new();
        if BufReader::new(&stream).read_line(&mut line).is_err() {
            return false;
        }
        let (reply, shutdown) = match serde_json::from_str::<Request>(&line) {
            Err(e) => (control::err(format!("bad request: {e}")), false),
            Ok(Request::Shutdown) => (self.shutdown(), true),
            Ok(req) => (self.handle(req), false),
        };
        let mut out = serde_json::to_string(&reply).unwrap_or_else(|_| "{\"ok\":false}".into());
        out.push('\n');
        let _ = (&stream).write_all(out.as_bytes());
        shutdown
    }

    fn handle(&mut self, req: Request) -> Reply {
        match req {
            Request::Status => self.status(),
            Request::Set { dirs, settings } => self.set(&dirs, &settings),
            Request::ResetStats => {
                for d in &self.dirs {
                    d.counters.reset();
                    d.late.reset();
                    d.read_latency.reset();
                }
                control::ok(serde_json::json!({}))
            }
            Request::MonitorStart { file } => self.monitor_start(file),
            Request::MonitorStop { file } => self.monitor_stop(file.as_deref()),
            Request::CaptureStart { file, dirs, snaplen, at } => self.capture_start(file, &dirs, snaplen, at),
            Request::CaptureStop => self.capture_stop(),
            Request::Shutdown => unreachable!(),
        }
    }

    fn find_dirs(&self, names: &[String]) -> Result<Vec<usize>, String> {
        names
            .iter()
            .map(|n| {
                self.dirs.iter().position(|d| &d.name == n).ok_or_else(|| {
                    let all: Vec<&str> = self.dirs.iter().map(|d| d.name.as_str()).collect();
                    format!("no link direction '{n}' (have: {})", all.join(", "))
                })
            })
            .collect()
    }

    fn status(&self) -> Reply {
        let dirs: Vec<serde_json::Value> = self
            .dirs
            .iter()
            .map(|d| {
                let params = d.controls.lock().unwrap().params.clone();
                serde_json::json!({
                    "name": d.name,
                    "params": params,
                    "settings": params.describe(),
                    "counters": d.counters.to_json(),
                    "release_error": d.late.to_json(),
                    "read_latency": d.read_latency.to_json(),
                    "arrival_clock": *d.arrival_clock.lock().unwrap(),
                    "scheduling": *d.scheduling.lock().unwrap(),
                })
            })
            .collect();
        let mut tuns = Vec::new();
        for c in &self.state.grid.clusters {
            let ns = netns::switch_ns(&c.name);
            if let Ok(stats) = netns::in_netns(&ns, || netns::tun_drop_counts("wan-")) {
                for (ifname, rx_drop, tx_drop) in stats {
                    tuns.push(serde_json::json!({"switch": ns, "dev": ifname, "rx_dropped": rx_drop, "tx_dropped": tx_drop}));
                }
            }
        }
        control::ok(serde_json::json!({
            "pid": std::process::id(),
            "memory_locked": self.memory_locked,
            "dirs": dirs,
            "tun_devices": tuns,
            "monitors": self.monitors.iter().map(|m| m.file.clone()).collect::<Vec<_>>(),
            "capture": self.capture.as_ref().map(|c| c.file.clone()),
        }))
    }

    fn set(&mut self, names: &[String], settings: &[(String, String)]) -> Reply {
        let indices = match self.find_dirs(names) {
            Ok(i) => i,
            Err(e) => return control::err(e),
        };
        // Check everything before changing anything.
        let mut updated = Vec::new();
        for &i in &indices {
            let mut p = self.dirs[i].controls.lock().unwrap().params.clone();
            for (k, v) in settings {
                let r = if k == "cut" {
                    match v.as_str() {
                        "true" | "1" | "yes" => {
                            p.cut = true;
                            Ok(())
                        }
                        "false" | "0" | "no" => {
                            p.cut = false;
                            Ok(())
                        }
                        _ => Err(format!("cut={v}: use true or false")),
                    }
                } else {
                    p.apply(k, v)
                };
                if let Err(e) = r {
                    return control::err(e);
                }
            }
            updated.push((i, p));
        }
        let mut now = Vec::new();
        for (i, p) in updated {
            now.push(serde_json::json!({"dir": self.dirs[i].name, "settings": p.describe()}));
            self.dirs[i].update(|c| c.params = p);
        }
        control::ok(serde_json::json!({ "dirs": now }))
    }

    fn monitor_start(&mut self, file: String) -> Reply {
        if self.monitors.iter().any(|m| m.file == file) {
            return control::err(format!("a monitor is already recording to {file}"));
        }
        let id = self.next_monitor_id;
        self.next_monitor_id += 1;
        let (tx, rx) = sync_channel(CHANNEL_DEPTH);
        let start_ms = rt::mono_ns() / MS;
        let stop_ms = Arc::new(AtomicU64::new(0));
        let headers: Vec<(String, String)> =
            self.dirs.iter().map(|d| (d.name.clone(), describe(&d.controls.lock().unwrap().params))).collect();
        let path = std::path::PathBuf::from(&file);
        // Fail now, not in the writer, if the file cannot be made.
        if let Err(e) = std::fs::File::create(&path) {
            return control::err(format!("{file}: {e}"));
        }
        let stop = stop_ms.clone();
        let writer = std::thread::spawn(move || monitor::write_csv(&path, &headers, start_ms, rx, move || stop.load(Ordering::SeqCst)));
        for d in &self.dirs {
            let tx = tx.clone();
            d.update(|c| c.monitors.push((id, tx)));
        }
        self.monitors.push(ActiveMonitor { id, file: file.clone(), stop_ms, writer });
        control::ok(serde_json::json!({ "file": file }))
    }

    /// Stop the recording to `file`, or the only one (or the latest) if None.
    fn monitor_stop(&mut self, file: Option<&str>) -> Reply {
        let index = match file {
            Some(f) => self.monitors.iter().position(|m| m.file == f),
            None => self.monitors.len().checked_sub(1),
        };
        let Some(index) = index else {
            return control::err(match file {
                Some(f) => format!("no monitor is recording to {f}"),
                None => "no monitor is recording".to_string(),
            });
        };
        let m = self.monitors.remove(index);
        m.stop_ms.store(rt::mono_ns() / MS + 1, Ordering::SeqCst);
        for d in &self.dirs {
            d.update(|c| c.monitors.retain(|(id, _)| *id != m.id));
        }
        match m.writer.join() {
            Ok(Ok(totals)) => control::ok(serde_json::json!({ "file": m.file, "totals": totals })),
            Ok(Err(e)) => control::err(format!("monitor file {}: {e}", m.file)),
            Err(_) => control::err("monitor writer panicked"),
        }
    }

    fn capture_start(&mut self, file: String, names: &[String], snaplen: u32, at: CapturePoint) -> Reply {
        if let Some(c) = &self.capture {
            return control::err(format!("a capture is already writing {}", c.file));
        }
        let indices = match self.find_dirs(names) {
            Ok(i) => i,
            Err(e) => return control::err(e),
        };
        let snaplen = snaplen.clamp(20, 2048);
        let (tx, rx) = sync_channel(CHANNEL_DEPTH);
        let mut ifaces = Vec::new();
        let mut taps = Vec::new();
        for &i in &indices {
            let mut tap = CaptureTap { tx: tx.clone(), snaplen: snaplen as usize, iface_in: None, iface_out: None };
            if matches!(at, CapturePoint::In | CapturePoint::Both) {
                tap.iface_in = Some(ifaces.len() as u32);
                ifaces.push(format!("{}:in", self.dirs[i].name));
            }
            if matches!(at, CapturePoint::Out | CapturePoint::Both) {
                tap.iface_out = Some(ifaces.len() as u32);
                ifaces.push(format!("{}:out", self.dirs[i].name));
            }
            taps.push((i, tap));
        }
        drop(tx);
        let path = std::path::PathBuf::from(&file);
        if let Err(e) = std::fs::File::create(&path) {
            return control::err(format!("{file}: {e}"));
        }
        let offset = rt::realtime_ns() as i128 - rt::mono_ns() as i128;
        let writer = std::thread::spawn(move || capture::write_pcapng(&path, &ifaces, snaplen, offset, rx));
        for (i, tap) in taps {
            self.dirs[i].update(|c| c.capture = Some(tap));
        }
        self.capture = Some(ActiveCapture { file: file.clone(), dirs: indices, writer });
        control::ok(serde_json::json!({ "file": file }))
    }

    fn capture_stop(&mut self) -> Reply {
        let Some(c) = self.capture.take() else { return control::err("no capture is running") };
        for &i in &c.dirs {
            self.dirs[i].update(|ctl| ctl.capture = None);
        }
        let overflow: u64 = c.dirs.iter().map(|&i| self.dirs[i].counters.capture_overflow.load(Ordering::Relaxed)).sum();
        match c.writer.join() {
            Ok(Ok(packets)) => control::ok(serde_json::json!({ "file": c.file, "packets": packets, "overflow": overflow })),
            Ok(Err(e)) => control::err(format!("capture file {}: {e}", c.file)),
            Err(_) => control::err("capture writer panicked"),
        }
    }

    fn shutdown(&mut self) -> Reply {
        // The recording started by `up --monitor` is the one `down` reports.
        let up_file = self.state.monitor_file.as_ref().map(|p| p.to_string_lossy().into_owned());
        let mut monitor = None;
        while let Some(m) = self.monitors.last() {
            let file = m.file.clone();
            let reply = self.monitor_stop(Some(&file));
            if Some(&file) == up_file.as_ref() {
                monitor = Some(reply);
            }
        }
        if self.capture.is_some() {
            self.capture_stop();
        }
        for d in &self.dirs {
            d.stop.store(true, Ordering::SeqCst);
            d.ring();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        control::ok(serde_json::json!({ "monitor": monitor }))
    }
}

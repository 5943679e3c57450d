//! Per-connection TCP history (issue 5): what `gridmpirun --trace DIR`
//! (`GRIDMPI_TRACE=DIR`) records in every rank, for `gridmpi-trace`.
//!
//! The runtime calls the hooks of [`Tracer`]: connections opened and closed,
//! socket tuning, collective begin/end markers, and `tick` after every
//! progress pass. A background thread samples `TCP_INFO` of every open
//! connection — every `GRIDMPI_TRACE_INTERVAL` while data moves or is
//! outstanding on some connection, every `GRIDMPI_TRACE_IDLE_INTERVAL`
//! otherwise — encodes what changed into an in-memory buffer, and
//! writes the buffer to `DIR/rank-N.trace` in large chunks. The progress
//! thread never writes to the file and never waits for the disk: the hooks
//! only append a few bytes under a lock that the sampler holds for one
//! sampling round (microseconds).
//!
//! Each connection is sampled through its own duplicate of the socket's fd,
//! taken when the connection opens and closed after the final sample in
//! `conn_closed`. So the sampler can never read a reused fd number, and the
//! final counters are read even when the runtime has already closed its fd.
//!
//! The file format (record kinds, the recorded `tcp_info` fields, the
//! encoding) is gridmpi-traceformat's, shared with the `gridmpi-trace`
//! reader; docs/trace.md describes it.

use gridmpi_config::Config;
use gridmpi_engine::Pid;
use gridmpi_traceformat::{extract, Encoder, Header, Open, NFIELDS};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const NF: usize = NFIELDS;

/// The index of a recorded TCP_INFO field (in what [`tcp_info`] returns).
pub(crate) fn field_index(name: &str) -> usize {
    gridmpi_traceformat::FIELDS.iter().position(|f| f.name == name).expect("a recorded TCP_INFO field")
}

/// Room for any `struct tcp_info` the kernel may return.
pub(crate) const INFO_ROOM: usize = 512;

/// Write the buffer out when it holds this much...
const FLUSH_BYTES: usize = 256 * 1024;
/// ... or when it is this old.
const FLUSH_EVERY: Duration = Duration::from_millis(250);

// ---- reading sockets ---------------------------------------------------------

/// Read `struct tcp_info` of `fd` into `buf`; returns the length filled.
pub(crate) fn read_tcp_info(fd: RawFd, buf: &mut [u8; INFO_ROOM]) -> std::io::Result<usize> {
    let mut len = INFO_ROOM as libc::socklen_t;
    // SAFETY: buf is writable for `len` bytes; the kernel writes at most len
    // and returns the length it wrote.
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr() as *mut libc::c_void, &mut len) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(len as usize)
}

/// The recorded TCP_INFO fields (gridmpi_traceformat::FIELDS) of the
/// connection on `fd`, and the mask of those the kernel filled; None if
/// the socket cannot be read. (MPI_T's performance variables read these on
/// demand, tracing or not.)
pub fn tcp_info(fd: RawFd) -> Option<([u64; NF], u64)> {
    let mut buf = [0u8; INFO_ROOM];
    let n = read_tcp_info(fd, &mut buf).ok()?;
    let mut out = [0u64; NF];
    let avail = extract(&buf[..n], &mut out);
    Some((out, avail))
}

fn sockaddr_text(fd: RawFd, peer: bool) -> String {
    // SAFETY: a zeroed sockaddr_storage is valid; the kernel fills at most len bytes.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let p = &mut ss as *mut _ as *mut libc::sockaddr;
    let r = unsafe { if peer { libc::getpeername(fd, p, &mut len) } else { libc::getsockname(fd, p, &mut len) } };
    if r < 0 {
        return String::new();
    }
    match ss.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says this is a sockaddr_in.
            let sin = unsafe { &*(&ss as *const _ as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            format!("{}:{}", ip, u16::from_be(sin.sin_port))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a sockaddr_in6.
            let sin = unsafe { &*(&ss as *const _ as *const libc::sockaddr_in6) };
            let ip = std::net::Ipv6Addr::from(sin.sin6_addr.s6_addr);
            format!("[{}]:{}", ip, u16::from_be(sin.sin6_port))
        }
        _ => String::new(),
    }
}

fn congestion_control(fd: RawFd) -> String {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is writable for len bytes.
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr() as *mut libc::c_void, &mut len) };
    if r < 0 {
        return String::new();
    }
    let s = &buf[..(len as usize).min(buf.len())];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    String::from_utf8_lossy(&s[..end]).into_owned()
}

fn int_sockopt(fd: RawFd, level: libc::c_int, opt: libc::c_int) -> u64 {
    let mut v: libc::c_int = 0;
    let mut len = 4 as libc::socklen_t;
    // SAFETY: reading an int socket option into v.
    let r = unsafe { libc::getsockopt(fd, level, opt, &mut v as *mut _ as *mut libc::c_void, &mut len) };
    if r < 0 {
        0
    } else {
        v.max(0) as u64
    }
}

fn kernel_release() -> String {
    // SAFETY: a zeroed utsname is valid; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let bytes: Vec<u8> = u.release.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

// ---- the recorder -----------------------------------------------------------

struct Conn {
    id: u32,
    peer: Pid,
    /// The runtime's fd number (to match `conn_closed`).
    runtime_fd: RawFd,
    /// Our own duplicate of the socket.
    fd: OwnedFd,
    /// Field values as of the last SAMPLE written for this connection.
    prev: [u64; NF],
    avail: u64,
}

/// What the hooks and the sampler share, under one lock.
struct State {
    /// Records encoded and not yet written.
    enc: Encoder,
    conns: Vec<Conn>,
    next_conn: u32,
    stop: bool,
    info: [u8; INFO_ROOM],
    tcp_info_len: usize,
    // Counters for the STATS record and the closing note.
    samples: u64,
    sample_records: u64,
    dropped: u64,
    sample_ns: u64,
    rounds: u64,
    written: u64,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Data moved since the sampler last looked (set by `tick`).
    busy: AtomicBool,
    /// The sampler sleeps for the idle interval: `tick(true)` wakes it.
    idle: AtomicBool,
    start: Instant,
    interval: Duration,
    idle_interval: Duration,
    buffer_max: usize,
}

const UNACKED: usize = 12;
const NOTSENT: usize = 33;
const BYTES_ACKED: usize = 29;
const BYTES_RECEIVED: usize = 30;
const BYTES_SENT: usize = 43;

impl State {
    /// Microseconds since the trace started (the encoder keeps records in
    /// time order).
    fn now(shared: &Shared) -> u64 {
        shared.start.elapsed().as_micros() as u64
    }

    /// Sample connection `i`. Writes a SAMPLE when something changed or data
    /// is outstanding (so the reader sees that time passed while it waited),
    /// or always when `force`. Returns whether the connection is active.
    fn sample(&mut self, shared: &Shared, i: usize, force: bool) -> bool {
        let fd = self.conns[i].fd.as_raw_fd();
        let len = match read_tcp_info(fd, &mut self.info) {
            Ok(n) => n,
            Err(_) => return false,
        };
        self.samples += 1;
        self.tcp_info_len = len;
        let mut vals = [0u64; NF];
        extract(&self.info[..len.min(INFO_ROOM)], &mut vals);
        let c = &self.conns[i];
        let mut mask = 0u64;
        for (k, (now, before)) in vals.iter().zip(&c.prev).enumerate() {
            if c.avail & (1 << k) != 0 && now != before {
                mask |= 1 << k;
            }
        }
        let moved = mask & ((1 << BYTES_ACKED) | (1 << BYTES_RECEIVED) | (1 << BYTES_SENT)) != 0;
        let active = moved || vals[UNACKED] > 0 || vals[NOTSENT] > 0;
        if mask == 0 && !active && !force {
            return false;
        }
        if self.enc.pending() >= shared.buffer_max && !force {
            // The disk is behind: drop this sample. The next one is encoded
            // against the last sample written, so nothing is corrupted.
            self.dropped += 1;
            return active;
        }
        let c = &mut self.conns[i];
        let prev = &c.prev;
        let deltas = (0..NF).filter(|k| mask & (1 << k) != 0).map(|k| vals[k].wrapping_sub(prev[k]) as i64);
        self.enc.sample(State::now(shared), c.id, mask, deltas);
        c.prev = vals;
        self.sample_records += 1;
        active
    }

    fn sample_all(&mut self, shared: &Shared, force: bool) -> bool {
        let mut active = false;
        for i in 0..self.conns.len() {
            active |= self.sample(shared, i, force);
        }
        active
    }

    fn stats_text(&self, shared: &Shared, cpu_us: Option<u64>) -> String {
        let cpu = cpu_us.map_or(String::new(), |c| format!("cpu_us={c}\n"));
        format!(
            "samples={}\nsample_records={}\ndropped={}\nsample_us={}\n{cpu}rounds={}\nbytes={}\nduration_us={}\ntcp_info_len={}\n",
            self.samples,
            self.sample_records,
            self.dropped,
            self.sample_ns / 1000,
            self.rounds,
            self.written + self.enc.pending() as u64,
            shared.start.elapsed().as_micros(),
            self.tcp_info_len,
        )
    }
}

/// Records connection events, TCP_INFO samples and collective markers of one
/// rank into a trace directory (`GRIDMPI_TRACE=DIR`, `gridmpirun --trace DIR`).
pub struct Tracer {
    shared: Arc<Shared>,
    sampler: Option<std::thread::JoinHandle<()>>,
    next_token: u64,
    /// Collectives started through [`Tracer::coll_started`], by request.
    running: std::collections::HashMap<gridmpi_engine::ReqId, u64>,
    path: PathBuf,
    me: Pid,
}

/// Settings of a tracer (from the config registry, or set by tests).
#[derive(Clone, Debug)]
pub struct TraceSettings {
    pub dir: PathBuf,
    pub interval: Duration,
    pub idle_interval: Duration,
    pub buffer_max: usize,
}

impl Tracer {
    /// A tracer if tracing is enabled in `config`.
    pub fn from_config(config: &Config, me: Pid, host: &str) -> Result<Option<Tracer>, String> {
        let dir = config.text("GRIDMPI_TRACE").trim();
        if dir.is_empty() {
            return Ok(None);
        }
        let settings = TraceSettings {
            dir: PathBuf::from(dir),
            interval: config.get_duration("GRIDMPI_TRACE_INTERVAL").max(Duration::from_micros(50)),
            idle_interval: config.get_duration("GRIDMPI_TRACE_IDLE_INTERVAL").max(Duration::from_millis(1)),
            buffer_max: config.get_size("GRIDMPI_TRACE_BUFFER").max(1 << 20) as usize,
        };
        Tracer::start(&settings, me, host).map(Some)
    }

    /// Create `DIR/rank-<me>.trace`, write the header and start the sampler.
    pub fn start(settings: &TraceSettings, me: Pid, host: &str) -> Result<Tracer, String> {
        std::fs::create_dir_all(&settings.dir)
            .map_err(|e| format!("GRIDMPI_TRACE: cannot create the trace directory {}: {e}", settings.dir.display()))?;
        let path = settings.dir.join(format!("rank-{me}.trace"));
        let mut file =
            File::create(&path).map_err(|e| format!("GRIDMPI_TRACE: cannot create {}: {e}", path.display()))?;
        let start = Instant::now();
        let start_unix_us = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0);
        let header = Header {
            rank: me,
            host: host.to_string(),
            pid: std::process::id(),
            start_unix_us: start_unix_us as u64,
            interval_us: settings.interval.as_micros() as u64,
            idle_interval_us: settings.idle_interval.as_micros() as u64,
            kernel: kernel_release(),
            ..Header::with_all_fields()
        };
        let mut enc = Encoder::new(&header, FLUSH_BYTES * 2);
        file.write_all(enc.out()).map_err(|e| format!("GRIDMPI_TRACE: cannot write {}: {e}", path.display()))?;
        let head_len = enc.pending() as u64;
        enc.clear_out();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                enc,
                conns: Vec::new(),
                next_conn: 0,
                stop: false,
                info: [0; INFO_ROOM],
                tcp_info_len: 0,
                samples: 0,
                sample_records: 0,
                dropped: 0,
                sample_ns: 0,
                rounds: 0,
                written: head_len,
            }),
            wake: Condvar::new(),
            busy: AtomicBool::new(false),
            idle: AtomicBool::new(false),
            start,
            interval: settings.interval,
            idle_interval: settings.idle_interval,
            buffer_max: settings.buffer_max,
        });
        let s2 = shared.clone();
        let p2 = path.clone();
        let sampler = std::thread::Builder::new()
            .name("gridmpi-trace".into())
            .spawn(move || run_sampler(s2, file, p2, me))
            .map_err(|e| format!("GRIDMPI_TRACE: cannot start the sampling thread: {e}"))?;
        Ok(Tracer { shared, sampler: Some(sampler), next_token: 0, running: std::collections::HashMap::new(), path, me })
    }

    /// The file this tracer writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An authenticated TCP connection to `peer` is ready on `fd`.
    pub fn conn_opened(&mut self, peer: Pid, fd: RawFd, peer_host: &str) {
        // SAFETY: duplicating an fd the runtime owns and keeps open during
        // this call; the duplicate is ours (closed in conn_closed/finish).
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return;
        }
        let own = unsafe { OwnedFd::from_raw_fd(dup) };
        let local = sockaddr_text(dup, false);
        let remote = sockaddr_text(dup, true);
        let cc = congestion_control(dup);
        let sndbuf = int_sockopt(dup, libc::SOL_SOCKET, libc::SO_SNDBUF);
        let rcvbuf = int_sockopt(dup, libc::SOL_SOCKET, libc::SO_RCVBUF);
        let shared = self.shared.clone();
        let mut st = self.lock();
        let mut info = [0u8; INFO_ROOM];
        let mut vals = [0u64; NF];
        let avail = match read_tcp_info(dup, &mut info) {
            Ok(len) => extract(&info[..len.min(INFO_ROOM)], &mut vals),
            Err(_) => 0,
        };
        let id = st.next_conn;
        st.next_conn += 1;
        st.enc.open(&Open {
            t_us: State::now(&shared),
            conn: id,
            peer,
            avail,
            peer_host: peer_host.to_string(),
            local_addr: local,
            remote_addr: remote,
            congestion_control: cc,
            sndbuf,
            rcvbuf,
        });
        st.conns.push(Conn { id, peer, runtime_fd: fd, fd: own, prev: [0; NF], avail });
        let i = st.conns.len() - 1;
        st.sample(&shared, i, true);
        drop(st);
        // A new connection means data is about to move.
        self.shared.busy.store(true, Ordering::Relaxed);
        self.wake_sampler();
    }

    /// The connection to `peer` is gone (the runtime's fd may already be
    /// closed: the final sample is read through our own duplicate).
    pub fn conn_closed(&mut self, peer: Pid, fd: RawFd) {
        let shared = self.shared.clone();
        let mut st = self.lock();
        let Some(i) = st.conns.iter().rposition(|c| c.peer == peer && c.runtime_fd == fd) else { return };
        st.sample(&shared, i, true);
        let c = st.conns.remove(i);
        st.enc.close(State::now(&shared), c.id);
        drop(st);
        drop(c); // closes our duplicate
    }

    /// A socket option was set on the connection to `peer`.
    pub fn tuning(&mut self, peer: Pid, option: &str, value: &str) {
        let mut st = self.lock();
        let conn = st.conns.iter().rev().find(|c| c.peer == peer).map(|c| c.id);
        st.enc.tuning(State::now(&self.shared), peer, conn, option, value);
    }

    /// A collective starts; returns a token for [`Tracer::coll_end`].
    /// `ctx` identifies the communicator (its context id), `bytes` is the
    /// data this rank sends in it.
    pub fn coll_begin(&mut self, name: &str, ctx: u32, bytes: u64) -> u64 {
        self.next_token += 1;
        let token = self.next_token;
        let mut st = self.lock();
        st.enc.coll_begin(State::now(&self.shared), token, ctx, bytes, name);
        token
    }

    pub fn coll_end(&mut self, token: u64) {
        if token == 0 {
            return;
        }
        let mut st = self.lock();
        st.enc.coll_end(State::now(&self.shared), token);
    }

    /// A collective's schedule started as engine request `req` (the same
    /// marker as [`Tracer::coll_begin`], remembered by request so the end
    /// can be reported where the request completes).
    pub fn coll_started(&mut self, req: gridmpi_engine::ReqId, name: &str, ctx: u32, bytes: u64) {
        let token = self.coll_begin(name, ctx, bytes);
        self.running.insert(req, token);
    }

    /// The request of a collective started with [`Tracer::coll_started`]
    /// completed (other requests are ignored, so this may be called for
    /// every completed request).
    pub fn coll_finished(&mut self, req: gridmpi_engine::ReqId) {
        if let Some(token) = self.running.remove(&req) {
            self.coll_end(token);
        }
    }

    /// Called from every progress pass. `busy` says whether data moved since
    /// the last call: it switches the sampler to the fine interval.
    #[inline]
    pub fn tick(&mut self, busy: bool) {
        if busy {
            self.shared.busy.store(true, Ordering::Relaxed);
            if self.shared.idle.load(Ordering::Relaxed) {
                self.wake_sampler();
            }
        }
    }

    fn wake_sampler(&self) {
        if self.shared.idle.swap(false, Ordering::AcqRel) {
            // Under the lock, so the wakeup cannot slip in between the
            // sampler deciding to sleep and sleeping.
            let _st = self.lock();
            self.shared.wake.notify_one();
        }
    }

    /// At MPI_Finalize: final samples, the STATS record, and everything
    /// written out. Idempotent.
    pub fn finish(&mut self) {
        let Some(handle) = self.sampler.take() else { return };
        let shared = self.shared.clone();
        let cpu_us = thread_cpu_us(&handle);
        {
            let mut st = self.lock();
            st.sample_all(&shared, true);
            let stats = st.stats_text(&shared, cpu_us);
            st.enc.stats(&stats);
            st.conns.clear();
            st.stop = true;
            self.shared.wake.notify_one();
        }
        if handle.join().is_err() {
            eprintln!("gridmpi[{}]: trace: the sampling thread failed; {} may be incomplete", self.me, self.path.display());
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.finish();
    }
}

/// CPU time the sampling thread has used so far (user + system).
fn thread_cpu_us(handle: &std::thread::JoinHandle<()>) -> Option<u64> {
    use std::os::unix::thread::JoinHandleExt;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: the thread has not been joined, so its pthread_t is valid;
    // clock and ts are valid out-pointers.
    unsafe {
        if libc::pthread_getcpuclockid(handle.as_pthread_t(), &mut clock) != 0 {
            return None;
        }
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        if libc::clock_gettime(clock, &mut ts) != 0 {
            return None;
        }
        Some(ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000)
    }
}

/// The sampling thread: sample, sleep, write the buffer out in chunks.
fn run_sampler(shared: Arc<Shared>, mut file: File, path: PathBuf, me: Pid) {
    let mut write_failed = false;
    let mut write_out = |data: &[u8], failed: &mut bool| {
        if *failed || data.is_empty() {
            return;
        }
        if let Err(e) = file.write_all(data) {
            eprintln!("gridmpi[{me}]: trace: cannot write {}: {e}; tracing stops", path.display());
            *failed = true;
        }
    };
    let mut spare: Vec<u8> = Vec::with_capacity(FLUSH_BYTES * 2);
    let mut last_flush = Instant::now();
    let mut fine = true;
    let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if st.stop {
            break;
        }
        let wait = if fine { shared.interval } else { shared.idle_interval };
        shared.idle.store(!fine, Ordering::Release);
        st = match shared.wake.wait_timeout(st, wait) {
            Ok((g, _)) => g,
            Err(e) => e.into_inner().0,
        };
        shared.idle.store(false, Ordering::Relaxed);
        if st.stop {
            break;
        }
        st.rounds += 1;
        let t = Instant::now();
        let active = st.sample_all(&shared, false);
        st.sample_ns += t.elapsed().as_nanos() as u64;
        let busy = shared.busy.swap(false, Ordering::Relaxed);
        fine = !st.conns.is_empty() && (active || busy);
        let pending = st.enc.pending();
        if pending >= FLUSH_BYTES || (pending > 0 && last_flush.elapsed() >= FLUSH_EVERY) {
            st.enc.swap_out(&mut spare);
            st.written += spare.len() as u64;
            drop(st);
            write_out(&spare, &mut write_failed);
            spare.clear();
            last_flush = Instant::now();
            st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
        }
    }
    st.enc.swap_out(&mut spare);
    drop(st);
    write_out(&spare, &mut write_failed);
    let _ = file.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridmpi_traceformat::{Record, FIELDS};
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn field_table_matches_names() {
        assert_eq!(FIELDS[UNACKED].name, "unacked");
        assert_eq!(FIELDS[NOTSENT].name, "notsent_bytes");
        assert_eq!(FIELDS[BYTES_ACKED].name, "bytes_acked");
        assert_eq!(FIELDS[BYTES_RECEIVED].name, "bytes_received");
        assert_eq!(FIELDS[BYTES_SENT].name, "bytes_sent");
        assert_eq!(field_index("total_rto_time"), NF - 1);
    }

    #[test]
    fn tcp_info_of_a_loopback_connection() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        a.write_all(&[7u8; 100_000]).unwrap();
        let mut got = vec![0u8; 100_000];
        b.read_exact(&mut got).unwrap();
        let mut info = [0u8; INFO_ROOM];
        let len = read_tcp_info(a.as_raw_fd(), &mut info).unwrap();
        let mut vals = [0u64; NF];
        let avail = extract(&info[..len], &mut vals);
        assert!(avail & (1 << BYTES_ACKED) != 0, "kernel too old for tcpi_bytes_acked");
        assert_eq!(vals[field_index("state")], 1, "ESTABLISHED");
        assert!(vals[field_index("snd_cwnd")] > 0);
        assert!(vals[BYTES_SENT] >= 100_000 || avail & (1 << BYTES_SENT) == 0);
        assert!(vals[field_index("snd_mss")] > 0);
    }

    #[test]
    fn records_a_connection_and_markers() {
        let dir = std::env::temp_dir().join(format!("gridmpi-trace-unit-{}", std::process::id()));
        let settings = TraceSettings {
            dir: dir.clone(),
            interval: Duration::from_millis(1),
            idle_interval: Duration::from_millis(20),
            buffer_max: 1 << 20,
        };
        let mut t = Tracer::start(&settings, 3, "hostA").unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        t.conn_opened(1, a.as_raw_fd(), "hostB");
        t.tuning(1, "SO_MAX_PACING_RATE", "12500000");
        let tok = t.coll_begin("MPI_Alltoall", 7, 1 << 20);
        for _ in 0..20 {
            a.write_all(&[1u8; 64 * 1024]).unwrap();
            let mut got = vec![0u8; 64 * 1024];
            b.read_exact(&mut got).unwrap();
            t.tick(true);
            std::thread::sleep(Duration::from_millis(1));
        }
        t.coll_end(tok);
        t.coll_started(gridmpi_engine::ReqId(7), "MPI_Ibcast", 9, 100);
        t.coll_finished(gridmpi_engine::ReqId(8)); // not a collective: ignored
        t.coll_finished(gridmpi_engine::ReqId(7));
        assert!(t.running.is_empty());
        let fd = a.as_raw_fd();
        drop(a); // the runtime closes first; our duplicate still reads the counters
        t.conn_closed(1, fd);
        t.finish();
        let data = std::fs::read(t.path()).unwrap();
        let mut records = gridmpi_traceformat::Decoder::new(&data).unwrap();
        let all: Vec<Record> = records.by_ref().collect::<Result<_, _>>().unwrap();
        assert!(!records.cut(), "the file ends with a whole record");
        let Record::Header(head) = &all[0] else { panic!("{:?}", all[0]) };
        let head = Header::from_text(head);
        assert_eq!((head.rank, head.host.as_str(), head.interval_us), (3, "hostA", 1000));
        assert_eq!(head.fields.len(), NF);
        let Record::Open(open) = &all[1] else { panic!("{:?}", all[1]) };
        assert_eq!((open.conn, open.peer, open.peer_host.as_str()), (0, 1, "hostB"));
        assert!(open.remote_addr.starts_with("127.0.0.1:"), "{open:?}");
        let sent: i64 = all
            .iter()
            .filter_map(|r| match r {
                Record::Sample { conn: 0, mask, deltas, .. } => Some((mask, deltas)),
                _ => None,
            })
            .filter(|(mask, _)| *mask & (1 << BYTES_SENT) != 0)
            .map(|(mask, deltas)| deltas[(mask & ((1 << BYTES_SENT) - 1)).count_ones() as usize])
            .sum();
        assert!(sent >= 20 * 64 * 1024 || open.avail & (1 << BYTES_SENT) == 0, "bytes_sent adds up to {sent}");
        let has = |f: fn(&Record) -> bool| all.iter().filter(|r| f(r)).count();
        assert_eq!(has(|r| matches!(r, Record::Tuning { peer: 1, conn: Some(0), option, .. } if option == "SO_MAX_PACING_RATE")), 1);
        assert_eq!(has(|r| matches!(r, Record::CollBegin { ctx: 7, bytes: 1048576, name, .. } if name == "MPI_Alltoall")), 1);
        assert_eq!(has(|r| matches!(r, Record::CollBegin { name, .. } if name == "MPI_Ibcast")), 1);
        assert_eq!(has(|r| matches!(r, Record::CollEnd { .. })), 2);
        assert_eq!(has(|r| matches!(r, Record::Close { conn: 0, .. })), 1);
        assert!(matches!(all.last(), Some(Record::Stats(s)) if s.contains("samples=")));
        let times: Vec<u64> = all.iter().filter_map(Record::t_us).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        std::fs::remove_dir_all(dir).ok();
    }
}

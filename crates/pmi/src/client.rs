//! The PMI client used by every rank: blocking, one request at a time.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::rendezvous;
use crate::spawn::{self, SpawnApp};
use crate::wire::{Decoder, Message, Wire};

/// A PMI failure, saying what we were doing when it happened.
#[derive(Debug)]
pub enum PmiError {
    /// A PMI environment variable has a value we cannot use.
    Environment { var: &'static str, value: String, reason: String },
    /// Could not connect to `PMI_PORT`.
    Connect { target: String, source: io::Error },
    /// Reading or writing the PMI connection failed.
    Io { during: &'static str, source: io::Error },
    /// The PMI server closed the connection (the launcher died or gave up).
    Closed { during: &'static str },
    /// No reply within `GRIDMPI_PMI_TIMEOUT`.
    Timeout { during: &'static str, after: Duration },
    /// The server sent something we did not expect.
    Protocol { during: &'static str, detail: String },
    /// The server answered with an error code.
    Server { during: &'static str, rc: i64, message: String },
    /// `get` found no value for the key (not put, or put after the last fence).
    NotFound { rank: u32, key: String },
    /// The key cannot be stored (bad characters or too long).
    InvalidKey { key: String, reason: String },
    /// The PMIx library failed (a job started by a PMIx server).
    Pmix(String),
    /// Joining the whole job at the rendezvous server failed.
    Rendezvous { target: String, reason: String },
    /// Starting processes (MPI_Comm_spawn) is not possible here: the
    /// process manager is not gridmpirun, or cannot reach them.
    SpawnUnavailable { reason: String },
    /// A spawn request that cannot be sent as it is.
    SpawnRequest { reason: String },
}

impl fmt::Display for PmiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PmiError::Environment { var, value, reason } => write!(f, "PMI environment: {var}={value:?}: {reason}"),
            PmiError::Connect { target, source } => write!(f, "cannot connect to the PMI server at {target}: {source}"),
            PmiError::Io { during, source } => write!(f, "PMI connection failed during {during}: {source}"),
            PmiError::Closed { during } => write!(f, "PMI server closed the connection during {during}"),
            PmiError::Timeout { during, after } => {
                write!(f, "PMI server did not answer {during} within {after:?} (GRIDMPI_PMI_TIMEOUT)")
            }
            PmiError::Protocol { during, detail } => write!(f, "unexpected PMI reply during {during}: {detail}"),
            PmiError::Server { during, rc, message } => {
                write!(f, "PMI server refused {during} (rc={rc})")?;
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                Ok(())
            }
            PmiError::NotFound { rank, key } => write!(f, "PMI key {key:?} of rank {rank} not found (not put before the last fence?)"),
            PmiError::InvalidKey { key, reason } => write!(f, "PMI key {key:?} cannot be used: {reason}"),
            PmiError::Pmix(why) => write!(f, "PMIx: {why}"),
            PmiError::Rendezvous { target, reason } => write!(f, "rendezvous at {target} (GRIDMPI_RENDEZVOUS): {reason}"),
            PmiError::SpawnUnavailable { reason } => write!(f, "MPI_Comm_spawn needs gridmpirun: {reason}"),
            PmiError::SpawnRequest { reason } => write!(f, "spawn request: {reason}"),
        }
    }
}

impl std::error::Error for PmiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PmiError::Connect { source, .. } | PmiError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Which protocol the connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Pmi1,
    Pmi2,
}

pub(crate) trait Stream: Read + Write + Send {
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()>;
}
impl Stream for UnixStream {
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)
    }
}
impl Stream for TcpStream {
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)
    }
}

struct Connection {
    stream: Box<dyn Stream>,
    decoder: Decoder,
    version: Version,
    timeout: Option<Duration>,
}

impl Connection {
    fn send(&mut self, during: &'static str, msg: &Message) -> Result<(), PmiError> {
        let bytes = msg.encode().map_err(|e| io_error(during, io::Error::new(io::ErrorKind::InvalidInput, e)))?;
        self.stream.write_all(&bytes).map_err(|e| io_error(during, e))
    }

    fn recv(&mut self, during: &'static str) -> Result<Message, PmiError> {
        let mut buf = [0u8; 4096];
        loop {
            match self.decoder.next_message() {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => {}
                Err(e) => return Err(PmiError::Protocol { during, detail: e.to_string() }),
            }
            match self.stream.read(&mut buf) {
                Ok(0) => return Err(PmiError::Closed { during }),
                Ok(n) => self.decoder.push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    return Err(PmiError::Timeout { during, after: self.timeout.unwrap_or_default() })
                }
                Err(e) => return Err(io_error(during, e)),
            }
        }
    }

    /// Send `msg`, wait for the reply named `expect`, check its `rc`.
    fn request(&mut self, during: &'static str, msg: Message, expect: &str) -> Result<Message, PmiError> {
        let reply = self.request_any_rc(during, msg, expect)?;
        check_rc(during, &reply)?;
        Ok(reply)
    }

    fn request_any_rc(&mut self, during: &'static str, msg: Message, expect: &str) -> Result<Message, PmiError> {
        self.send(during, &msg)?;
        let reply = self.recv(during)?;
        if reply.cmd != expect {
            // A server reporting an error may answer with another name.
            check_rc(during, &reply)?;
            return Err(PmiError::Protocol { during, detail: format!("expected cmd={expect}, got {reply}") });
        }
        Ok(reply)
    }
}

fn io_error(during: &'static str, e: io::Error) -> PmiError {
    match e.kind() {
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => PmiError::Closed { during },
        _ => PmiError::Io { during, source: e },
    }
}

fn check_rc(during: &'static str, reply: &Message) -> Result<(), PmiError> {
    let rc = reply.rc();
    if rc != 0 {
        let message = reply.get("msg").or_else(|| reply.get("errmsg")).unwrap_or("").to_string();
        return Err(PmiError::Server { during, rc, message });
    }
    Ok(())
}

fn name_service_unavailable(during: &'static str) -> PmiError {
    PmiError::Server { during, rc: -1, message: "GridMPI's PMIx client has no name service (MPI_Publish_name needs gridmpirun or a PMI-1/PMI-2 launcher)".into() }
}

fn need_int(during: &'static str, m: &Message, key: &str) -> Result<i64, PmiError> {
    m.get_int(key)
        .ok_or_else(|| PmiError::Protocol { during, detail: format!("reply has no integer {key}: {m}") })
}

enum Mode {
    /// Names published (MPI_Publish_name) are known in this process only.
    Singleton { kvs: HashMap<String, String>, names: HashMap<String, String> },
    Connected(Connection),
    /// Started by a PMIx server: its library speaks for us.
    Pmix(crate::pmix::Client),
}

/// A rank's handle on the process manager.
pub struct Pmi {
    /// With a rendezvous: the rank's own launcher, kept to finalize and to
    /// abort through it (`self` then speaks to the rendezvous server).
    site: Option<Box<Pmi>>,
    /// With a rendezvous: where the server placed us, and the TCP secret.
    joined: Option<Joined>,
    rank: u32,
    size: u32,
    appnum: i32,
    universe_size: Option<u32>,
    kvsname: String,
    max_key: usize,
    max_value: usize,
    mode: Mode,
    /// The PMI server is gridmpirun's, which serves spawn requests
    /// (it sets [`SPAWN_SERVER_VAR`] for its ranks).
    spawn_server: bool,
}

/// Set by gridmpirun in its ranks' environment to the job's key-value
/// space name: their PMI server starts processes (MPI_Comm_spawn). A
/// process started by another launcher under a gridmpirun rank (which
/// inherits the variable) has another key-value space, so it is not fooled.
pub const SPAWN_SERVER_VAR: &str = "GRIDMPI_SPAWN_SERVER";

/// PMI-2's fixed limits (`PMI2_MAX_KEYLEN`, `PMI2_MAX_VALLEN`).
const PMI2_MAX_KEYLEN: usize = 64;
const PMI2_MAX_VALLEN: usize = 1024;

/// Characters stored as themselves in KVS values; everything else is `%XX`.
/// They survive every PMI parser we know (no space, `;`, `=`, `\`, `%`).
fn value_char_is_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.,:/+@()[]{}!*~^|?&<>$#".contains(&b)
}

/// Characters allowed in keys given to [`Pmi::put`] and [`Pmi::get`].
fn key_char_is_ok(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_./:+".contains(c)
}

/// Encode a value for the KVS: `%XX` escapes, `%_` for the empty string.
pub(crate) fn encode_value(v: &str) -> String {
    if v.is_empty() {
        return "%_".to_string();
    }
    let mut out = String::with_capacity(v.len());
    for &b in v.as_bytes() {
        if value_char_is_safe(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(crate) fn decode_value(v: &str) -> Option<String> {
    if v == "%_" {
        return Some(String::new());
    }
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = v.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Marker of a value split over several entries: `%*N`.
const CHUNKED: &str = "%*";

/// `GRIDMPI_PMI_TIMEOUT` as the registry reads it (a duration with its
/// unit); 0: no timeout.
fn parse_timeout(v: &str) -> Result<Option<Duration>, String> {
    match gridmpi_config::parse_setting("GRIDMPI_PMI_TIMEOUT", v)? {
        Some(gridmpi_config::Value::Duration(d)) if !d.is_zero() => Ok(Some(d)),
        _ => Ok(None),
    }
}

fn env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.is_empty())
}

fn env_int(var: &'static str) -> Result<Option<i64>, PmiError> {
    match env(var) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| PmiError::Environment {
            var,
            value: v,
            reason: "not an integer".into(),
        }),
    }
}

/// Which PMI version to speak: `GRIDMPI_PMI_VERSION` or `PMI_VERSION` if set,
/// else PMI-2 under Slurm's `srun --mpi=pmi2` (it sets `PMI_JOBID`), else PMI-1.
fn choose_version() -> Result<Version, PmiError> {
    for var in ["GRIDMPI_PMI_VERSION", "PMI_VERSION"] {
        if let Some(v) = env(var) {
            return match v.trim() {
                "1" => Ok(Version::Pmi1),
                "2" => Ok(Version::Pmi2),
                "auto" => continue,
                _ => Err(PmiError::Environment {
                    var: if var == "PMI_VERSION" { "PMI_VERSION" } else { "GRIDMPI_PMI_VERSION" },
                    value: v,
                    reason: "expected 1 or 2".into(),
                }),
            };
        }
    }
    if env("PMI_JOBID").is_some() {
        return Ok(Version::Pmi2);
    }
    Ok(Version::Pmi1)
}

/// Open the socket the launcher gave us.
fn inherited_socket(fd_text: &str) -> Result<UnixStream, PmiError> {
    let bad = |reason: String| PmiError::Environment { var: "PMI_FD", value: fd_text.to_string(), reason };
    let fd: i32 = fd_text.trim().parse().map_err(|_| bad("not a file descriptor number".into()))?;
    if fd < 0 {
        return Err(bad("negative".into()));
    }
    // SAFETY: fstat only writes into the zeroed stat buffer we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(bad(format!(
            "descriptor is not open ({}); was this process started by a launcher that did not pass its PMI socket down?",
            io::Error::last_os_error()
        )));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(bad("descriptor is not a socket".into()));
    }
    // Do not leak the PMI socket into programs this rank starts: a child
    // holding it open would hide our exit from the launcher.
    // SAFETY: fcntl on a descriptor we just checked is open.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: the descriptor is an open socket handed to this process for
    // PMI and owned by nobody else in it; the stream takes ownership.
    Ok(unsafe { <UnixStream as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

impl Pmi {
    /// Connect using the environment the launcher set (`PMI_FD`, or
    /// `PMI_PORT` + `PMI_ID`; `PMI_RANK`, `PMI_SIZE`), speaking PMI-1 or
    /// PMI-2 (see the crate docs). With no PMI environment: a singleton
    /// (rank 0 of 1, in-process key-value store).
    pub fn init() -> Result<Pmi, PmiError> {
        let version = choose_version()?;
        let timeout = match env("GRIDMPI_PMI_TIMEOUT") {
            Some(v) => parse_timeout(&v).map_err(|reason| PmiError::Environment { var: "GRIDMPI_PMI_TIMEOUT", value: v.clone(), reason })?,
            None => None,
        };
        let (stream, port_id): (Box<dyn Stream>, Option<i64>) = if let Some(fd) = env("PMI_FD") {
            (Box::new(inherited_socket(&fd)?), None)
        } else if let Some(port) = env("PMI_PORT") {
            let stream = TcpStream::connect(port.trim()).map_err(|e| PmiError::Connect { target: port.clone(), source: e })?;
            stream.set_nodelay(true).ok();
            let id = env_int("PMI_ID")?;
            (Box::new(stream), id)
        } else if env("PMIX_NAMESPACE").is_some() {
            return Pmi::init_pmix();
        } else {
            return Ok(Pmi::singleton());
        };
        stream.set_timeout(timeout).map_err(|e| io_error("init", e))?;
        let conn = Connection { stream, decoder: Decoder::new(), version, timeout };
        let mut pmi = match version {
            Version::Pmi1 => Pmi::init_v1(conn, port_id),
            Version::Pmi2 => Pmi::init_v2(conn, port_id),
        }?;
        pmi.spawn_server = env(SPAWN_SERVER_VAR).is_some_and(|v| v == pmi.kvsname);
        Ok(pmi)
    }

    /// Run PMI over an already connected socket (for tests and embedding):
    /// like `PMI_FD` with `PMI_RANK=rank`, `PMI_SIZE=size`. The server is
    /// taken to be gridmpirun's (it serves spawn requests).
    pub fn from_stream(stream: UnixStream, version: Version, rank: u32, size: u32) -> Result<Pmi, PmiError> {
        let conn = Connection { stream: Box::new(stream), decoder: Decoder::new(), version, timeout: None };
        let mut pmi = match version {
            Version::Pmi1 => Pmi::init_v1_with(conn, None, Some(rank as i64), Some(size as i64)),
            Version::Pmi2 => Pmi::init_v2_with(conn, Some(rank as i64)),
        }?;
        pmi.spawn_server = true;
        Ok(pmi)
    }

    /// Through the PMIx library, for a process a PMIx server started.
    fn init_pmix() -> Result<Pmi, PmiError> {
        let client = crate::pmix::Client::init().map_err(PmiError::Pmix)?;
        let number = |key: &str| client.job_number(key).map_err(PmiError::Pmix);
        let size = number("pmix.job.size")?.ok_or_else(|| PmiError::Pmix("the server does not say the job's size (pmix.job.size)".into()))?;
        let rank = client.rank();
        check_rank_size(rank as i64, size as i64)?;
        Ok(Pmi {
            site: None,
            joined: None,
            rank,
            size,
            appnum: number("pmix.appnum")?.unwrap_or(0) as i32,
            universe_size: number("pmix.univ.size")?,
            kvsname: client.namespace(),
            max_key: 511,
            max_value: 64 * 1024,
            mode: Mode::Pmix(client),
            spawn_server: false,
        })
    }

    /// A process not started by a PMI launcher: rank 0 of 1.
    pub fn singleton() -> Pmi {
        Pmi {
            site: None,
            joined: None,
            rank: 0,
            size: 1,
            appnum: 0,
            universe_size: Some(1),
            kvsname: format!("singleton_kvs_{}", std::process::id()),
            max_key: 256,
            max_value: PMI2_MAX_VALLEN,
            mode: Mode::Singleton { kvs: HashMap::new(), names: HashMap::new() },
            spawn_server: false,
        }
    }

    fn init_v1(conn: Connection, port_id: Option<i64>) -> Result<Pmi, PmiError> {
        let (rank, size) = (env_int("PMI_RANK")?, env_int("PMI_SIZE")?);
        Pmi::init_v1_with(conn, port_id, rank, size)
    }

    fn init_v1_with(mut conn: Connection, port_id: Option<i64>, mut rank: Option<i64>, mut size: Option<i64>) -> Result<Pmi, PmiError> {
        let during = "init";
        let r = |cmd: &str| Message::new(Wire::V1, cmd);
        if let Some(id) = port_id {
            // PMI_PORT handshake: initack, then three "set" lines.
            let ack = conn.request(during, r("initack").with("pmiid", id), "initack")?;
            rank = ack.get_int("rank").or(rank);
            size = ack.get_int("size").or(size);
            for _ in 0..3 {
                let set = conn.recv(during)?;
                if set.cmd != "set" {
                    return Err(PmiError::Protocol { during, detail: format!("expected cmd=set after initack, got {set}") });
                }
                rank = set.get_int("rank").or(rank);
                size = set.get_int("size").or(size);
            }
        }
        let init = r("init").with("pmi_version", 1).with("pmi_subversion", 1);
        let reply = conn.request(during, init, "response_to_init")?;
        if reply.get_int("pmi_version") != Some(1) {
            return Err(PmiError::Protocol { during, detail: format!("server does not speak PMI-1: {reply}") });
        }
        let maxes = conn.request(during, r("get_maxes"), "maxes")?;
        let max_key = need_int(during, &maxes, "keylen_max")?.max(16) as usize;
        let max_value = need_int(during, &maxes, "vallen_max")?.max(64) as usize;
        let appnum = conn.request(during, r("get_appnum"), "appnum")?;
        let appnum = need_int(during, &appnum, "appnum")? as i32;
        let kvs = conn.request(during, r("get_my_kvsname"), "my_kvsname")?;
        let kvsname = kvs
            .get("kvsname")
            .ok_or_else(|| PmiError::Protocol { during, detail: format!("no kvsname in {kvs}") })?
            .to_string();
        let usize_reply = conn.request(during, r("get_universe_size"), "universe_size")?;
        let universe_size = usize_reply.get_int("size").filter(|&s| s > 0).map(|s| s as u32);
        let size = size.unwrap_or(1);
        let rank = rank.unwrap_or(0);
        check_rank_size(rank, size)?;
        Ok(Pmi {
            site: None,
            joined: None,
            rank: rank as u32,
            size: size as u32,
            appnum,
            universe_size,
            kvsname,
            max_key,
            max_value,
            mode: Mode::Connected(conn),
            spawn_server: false,
        })
    }

    fn init_v2(conn: Connection, port_id: Option<i64>) -> Result<Pmi, PmiError> {
        let id = match port_id {
            Some(id) => Some(id),
            None => env_int("PMI_ID")?.or(env_int("PMI_RANK")?),
        };
        Pmi::init_v2_with(conn, id)
    }

    fn init_v2_with(mut conn: Connection, id: Option<i64>) -> Result<Pmi, PmiError> {
        let during = "init";
        let init = Message::new(Wire::V1, "init").with("pmi_version", 2).with("pmi_subversion", 0);
        let reply = conn.request_any_rc(during, init, "response_to_init")?;
        if reply.rc() != 0 || reply.get_int("pmi_version") != Some(2) {
            // The server does not do PMI-2: continue in PMI-1 on this connection.
            conn.version = Version::Pmi1;
            return Pmi::init_v1(conn, None);
        }
        let id = id.unwrap_or(-1);
        // Slurm's PMI-2 server refuses a fullinit without the job id it
        // gave us (PMI_JOBID), as MPICH sends it.
        let mut full = Message::new(Wire::V2, "fullinit");
        if let Some(job) = env("PMI_JOBID") {
            full = full.with("pmijobid", job);
        }
        let full = full.with("pmirank", id).with("threaded", "FALSE");
        let full = conn.request(during, full, "fullinit-response")?;
        let rank = need_int(during, &full, "rank")?;
        let size = need_int(during, &full, "size")?;
        let appnum = full.get_int("appnum").unwrap_or(0) as i32;
        check_rank_size(rank, size)?;
        let job = conn.request(during, Message::new(Wire::V2, "job-getid"), "job-getid-response")?;
        let kvsname = job
            .get("jobid")
            .ok_or_else(|| PmiError::Protocol { during, detail: format!("no jobid in {job}") })?
            .to_string();
        let attr = Message::new(Wire::V2, "info-getjobattr").with("key", "universeSize");
        let universe = conn.request_any_rc(during, attr, "info-getjobattr-response")?;
        let universe_size = if universe.rc() == 0 && universe.get("found") == Some("TRUE") {
            universe.get_int("value").filter(|&s| s > 0).map(|s| s as u32)
        } else {
            None
        };
        Ok(Pmi {
            site: None,
            joined: None,
            rank: rank as u32,
            size: size as u32,
            appnum,
            universe_size,
            kvsname,
            max_key: PMI2_MAX_KEYLEN,
            max_value: PMI2_MAX_VALLEN,
            mode: Mode::Connected(conn),
            spawn_server: false,
        })
    }

    pub fn rank(&self) -> u32 {
        self.rank
    }
    pub fn size(&self) -> u32 {
        self.size
    }
    pub fn appnum(&self) -> i32 {
        self.appnum
    }
    /// `MPI_UNIVERSE_SIZE`, when the launcher knows it.
    pub fn universe_size(&self) -> Option<u32> {
        self.universe_size
    }
    /// The job's key-value space name (PMI-2: the job id).
    pub fn kvs_name(&self) -> &str {
        &self.kvsname
    }
    pub fn is_singleton(&self) -> bool {
        matches!(self.mode, Mode::Singleton { .. })
    }
    /// The PMI protocol in use (`None` for a singleton and under PMIx).
    pub fn version(&self) -> Option<Version> {
        match &self.mode {
            Mode::Singleton { .. } | Mode::Pmix(_) => None,
            Mode::Connected(c) => Some(c.version),
        }
    }

    /// The longest value the server stores in one entry. [`Pmi::put`] takes
    /// longer values anyway: it splits them over several entries (and
    /// escapes characters PMI cannot carry), and [`Pmi::get`] joins them.
    pub fn max_value_len(&self) -> usize {
        self.max_value
    }

    fn wire_key(&self, rank: u32, key: &str) -> Result<String, PmiError> {
        if key.is_empty() || !key.chars().all(key_char_is_ok) {
            return Err(PmiError::InvalidKey {
                key: key.to_string(),
                reason: "use only letters, digits and - _ . / : +".into(),
            });
        }
        let wk = format!("{key}@{rank}");
        // Room for a chunk suffix ":NNNN".
        if wk.len() + 5 > self.max_key {
            return Err(PmiError::InvalidKey {
                key: key.to_string(),
                reason: format!("too long: the server takes keys of at most {} bytes", self.max_key.saturating_sub(5 + 1 + digits(self.size))),
            });
        }
        Ok(wk)
    }

    /// Publish `value` under `key` for this rank. Visible to other ranks
    /// after the next [`Pmi::fence`]. Any string may be stored.
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        let wk = self.wire_key(self.rank, key)?;
        let enc = encode_value(value);
        if enc.len() <= self.max_value {
            return self.raw_put(&wk, &enc);
        }
        let chunks: Vec<&str> = chunk_str(&enc, self.max_value);
        for (i, c) in chunks.iter().enumerate() {
            self.raw_put(&format!("{wk}:{i}"), c)?;
        }
        self.raw_put(&wk, &format!("{CHUNKED}{}", chunks.len()))
    }

    /// Make every rank's puts visible to all, and wait for all ranks.
    pub fn fence(&mut self) -> Result<(), PmiError> {
        let during = "fence";
        match &mut self.mode {
            Mode::Singleton { .. } => Ok(()),
            Mode::Pmix(p) => p.fence().map_err(PmiError::Pmix),
            Mode::Connected(c) => match c.version {
                Version::Pmi1 => c.request(during, Message::new(Wire::V1, "barrier_in"), "barrier_out").map(drop),
                Version::Pmi2 => c.request(during, Message::new(Wire::V2, "kvs-fence"), "kvs-fence-response").map(drop),
            },
        }
    }

    /// The value `from_rank` put under `key` (before the last fence).
    pub fn get(&mut self, from_rank: u32, key: &str) -> Result<String, PmiError> {
        let wk = self.wire_key(from_rank, key)?;
        let not_found = || PmiError::NotFound { rank: from_rank, key: key.to_string() };
        let head = self.raw_get(from_rank, &wk)?.ok_or_else(not_found)?;
        let enc = if let Some(n) = head.strip_prefix(CHUNKED) {
            let n: usize = n.parse().map_err(|_| PmiError::Protocol { during: "get", detail: format!("bad chunk header {head:?} for key {key:?}") })?;
            let mut joined = String::new();
            for i in 0..n {
                joined.push_str(&self.raw_get(from_rank, &format!("{wk}:{i}"))?.ok_or_else(not_found)?);
            }
            joined
        } else {
            head
        };
        decode_value(&enc).ok_or_else(|| PmiError::Protocol {
            during: "get",
            detail: format!("value of {key:?} from rank {from_rank} was not written by GridMPI's PMI client"),
        })
    }

    /// A job attribute the launcher publishes, such as `PMI_process_mapping`
    /// (MPICH's node layout). `None` when the launcher does not provide it.
    pub fn job_attr(&mut self, name: &str) -> Result<Option<String>, PmiError> {
        let during = "get";
        let kvsname = self.kvsname.clone();
        match &mut self.mode {
            Mode::Singleton { .. } | Mode::Pmix(_) => Ok(None),
            Mode::Connected(c) => match c.version {
                Version::Pmi1 => {
                    let m = Message::new(Wire::V1, "get").with("kvsname", kvsname).with("key", name);
                    let reply = c.request_any_rc(during, m, "get_result")?;
                    Ok((reply.rc() == 0).then(|| reply.get("value").unwrap_or("").to_string()))
                }
                Version::Pmi2 => {
                    let m = Message::new(Wire::V2, "info-getjobattr").with("key", name);
                    let reply = c.request_any_rc(during, m, "info-getjobattr-response")?;
                    let found = reply.rc() == 0 && reply.get("found").is_some_and(|f| f.eq_ignore_ascii_case("TRUE"));
                    Ok(found.then(|| reply.get("value").unwrap_or("").to_string()))
                }
            },
        }
    }

    fn raw_put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        let during = "put";
        let kvsname = self.kvsname.clone();
        match &mut self.mode {
            Mode::Singleton { kvs, .. } => {
                kvs.insert(key.to_string(), value.to_string());
                Ok(())
            }
            Mode::Pmix(p) => p.put(key, value).map_err(PmiError::Pmix),
            Mode::Connected(c) => match c.version {
                Version::Pmi1 => {
                    let m = Message::new(Wire::V1, "put").with("kvsname", kvsname).with("key", key).with("value", value);
                    c.request(during, m, "put_result").map(drop)
                }
                Version::Pmi2 => {
                    let m = Message::new(Wire::V2, "kvs-put").with("key", key).with("value", value);
                    c.request(during, m, "kvs-put-response").map(drop)
                }
            },
        }
    }

    fn raw_get(&mut self, from_rank: u32, key: &str) -> Result<Option<String>, PmiError> {
        let during = "get";
        let kvsname = self.kvsname.clone();
        match &mut self.mode {
            Mode::Singleton { kvs, .. } => Ok(kvs.get(key).cloned()),
            Mode::Pmix(p) => p.get(from_rank, key).map_err(PmiError::Pmix),
            Mode::Connected(c) => match c.version {
                Version::Pmi1 => {
                    let m = Message::new(Wire::V1, "get").with("kvsname", kvsname).with("key", key);
                    let reply = c.request_any_rc(during, m, "get_result")?;
                    if reply.rc() != 0 {
                        return Ok(None);
                    }
                    Ok(reply.get("value").map(str::to_string))
                }
                Version::Pmi2 => {
                    let m = Message::new(Wire::V2, "kvs-get")
                        .with("jobid", kvsname)
                        .with("srcid", from_rank)
                        .with("key", key);
                    let reply = c.request_any_rc(during, m, "kvs-get-response")?;
                    let found = reply.get("found").map(|f| f.eq_ignore_ascii_case("TRUE")).unwrap_or(reply.rc() == 0);
                    if reply.rc() != 0 || !found {
                        return Ok(None);
                    }
                    Ok(reply.get("value").map(str::to_string))
                }
            },
        }
    }

    /// Start `apps` as one new job (one MPI_COMM_WORLD for all of them;
    /// program i gets MPI_APPNUM i), each process with `env` added to its
    /// environment. Returns once every process has been started, or Err
    /// saying why they could not be (no such program, not enough hosts,
    /// not under gridmpirun...).
    pub fn spawn(&mut self, apps: &[SpawnApp], env: &[(String, String)]) -> Result<(), PmiError> {
        let during = "spawn";
        let unavailable = |reason: &str| Err(PmiError::SpawnUnavailable { reason: reason.to_string() });
        if self.joined.is_some() {
            return unavailable("this process joined its job at a rendezvous server (GRIDMPI_RENDEZVOUS), which starts no processes");
        }
        let version = match &self.mode {
            Mode::Singleton { .. } => return unavailable("this process was not started by gridmpirun (a singleton has no process manager to start processes)"),
            Mode::Pmix(_) => return unavailable("this process was started by a PMIx server (Open MPI's mpirun, srun --mpi=pmix), whose spawn GridMPI does not use"),
            Mode::Connected(c) => c.version,
        };
        if !self.spawn_server {
            return unavailable(&format!(
                "this process was started by another launcher's PMI (hydra's mpiexec, srun; {SPAWN_SERVER_VAR} does not name this job), whose children would not find the parent's port"
            ));
        }
        spawn::check_apps(apps).map_err(|reason| PmiError::SpawnRequest { reason })?;
        if let Some(a) = apps.iter().find(|a| a.maxprocs == 0) {
            return Err(PmiError::SpawnRequest { reason: format!("{} with maxprocs 0", a.command) });
        }
        // What a PMI line cannot carry is refused, not changed.
        let texts = apps.iter().flat_map(|a| {
            std::iter::once(&a.command).chain(&a.args).chain(a.info.iter().flat_map(|(k, v)| [k, v]))
        });
        if let Some(t) = texts.chain(env.iter().flat_map(|(k, v)| [k, v])).find(|t| t.contains(['\n', '\r'])) {
            return Err(PmiError::SpawnRequest { reason: format!("{t:?}: PMI cannot carry a line break") });
        }
        if let Some((k, _)) = env.iter().find(|(k, _)| k.is_empty() || k.contains(['=', ';', ' '])) {
            return Err(PmiError::SpawnRequest { reason: format!("{k:?} is not an environment variable name") });
        }
        let Mode::Connected(c) = &mut self.mode else { unreachable!("checked above") };
        match version {
            Version::Pmi1 => {
                // Every block, then one reply.
                for block in spawn::encode_v1(apps, env) {
                    c.send(during, &block)?;
                }
                let reply = c.recv(during)?;
                check_rc(during, &reply)?;
                if reply.cmd != "spawn_result" {
                    return Err(PmiError::Protocol { during, detail: format!("expected cmd=spawn_result, got {reply}") });
                }
                Ok(())
            }
            Version::Pmi2 => c.request(during, spawn::encode_v2(apps, env), "spawn-response").map(drop),
        }
    }

    /// The checkpoint protocol with gridmpirun (docs/checkpoint.md): this
    /// rank has frozen its MPI state (`Ok`) or cannot be checkpointed now
    /// (`Err(reason)`). Waits until every rank said so; returns the
    /// checkpoint's sequence number to write, or why the round was
    /// abandoned. Only over a connection to gridmpirun.
    pub fn checkpoint_frozen(&mut self, verdict: Result<(), &str>) -> Result<Result<u64, String>, PmiError> {
        let during = "checkpoint";
        let c = self.gridmpirun(during)?;
        let m = match verdict {
            Ok(()) => Message::new(Wire::V1, "gridmpi_ckpt_frozen").with("ok", 1),
            Err(why) => Message::new(Wire::V1, "gridmpi_ckpt_frozen").with("ok", 0).with("reason", why),
        };
        let reply = c.request_any_rc(during, m, "gridmpi_ckpt_go")?;
        if reply.rc() != 0 {
            return Ok(Err(reply.get("msg").unwrap_or("abandoned").to_string()));
        }
        need_int(during, &reply, "seq").map(|n| Ok(n as u64))
    }

    /// This rank's image of checkpoint round is written (`Ok`: its size,
    /// the milliseconds it took, the host and path) or could not be.
    /// Waits until every rank reported; returns whether the job stops now
    /// (`--checkpoint-and-stop`), or why the checkpoint failed.
    pub fn checkpoint_written(&mut self, report: Result<(u64, u64, &str, &str), &str>) -> Result<Result<bool, String>, PmiError> {
        let during = "checkpoint";
        let c = self.gridmpirun(during)?;
        let m = match report {
            Ok((bytes, ms, host, path)) => Message::new(Wire::V1, "gridmpi_ckpt_written")
                .with("ok", 1)
                .with("bytes", bytes)
                .with("ms", ms)
                .with("host", host)
                .with("path", path),
            Err(why) => Message::new(Wire::V1, "gridmpi_ckpt_written").with("ok", 0).with("reason", why),
        };
        let reply = c.request_any_rc(during, m, "gridmpi_ckpt_done")?;
        if reply.rc() != 0 {
            return Ok(Err(reply.get("msg").unwrap_or("failed").to_string()));
        }
        Ok(Ok(reply.get_int("stop").unwrap_or(0) != 0))
    }

    /// This rank takes part in no more checkpoints (it is finishing).
    pub fn checkpoint_retire(&mut self) -> Result<(), PmiError> {
        let during = "checkpoint";
        let c = self.gridmpirun(during)?;
        c.request(during, Message::new(Wire::V1, "gridmpi_ckpt_retire"), "gridmpi_ckpt_retired").map(drop)
    }

    /// The ranks of this job that failed so far, in the order gridmpirun
    /// learned of them (`cmd=gridmpi_failed` -> `cmd=gridmpi_failed rc=0
    /// ranks=R1,R2,...`, empty when none): fault-tolerant jobs only.
    pub fn failed_ranks(&mut self) -> Result<Vec<u32>, PmiError> {
        let during = "failed ranks";
        let c = self.gridmpirun(during)?;
        let reply = c.request(during, Message::new(Wire::V1, "gridmpi_failed"), "gridmpi_failed")?;
        let list = reply.get("ranks").unwrap_or("");
        list.split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse::<u32>().map_err(|_| PmiError::Protocol { during, detail: format!("bad rank {s:?} in {reply}") }))
            .collect()
    }

    /// Tell gridmpirun what this rank sees of the WAN link from cluster
    /// `from` (ours) to cluster `to`: `state` is `down`, `still` or `back`,
    /// `secs` how long it has been (or was) down, `budget` how long the job
    /// waits (seconds; None: as long as the kernel retries). gridmpirun answers nothing (a rank must not block on a
    /// launcher link that may cross the broken WAN); an error means this
    /// process has no gridmpirun to tell, and says it itself.
    pub fn report_outage(&mut self, from: &str, to: &str, state: &str, secs: u64, budget: Option<u64>) -> Result<(), PmiError> {
        let during = "outage report";
        let c = self.gridmpirun(during)?;
        let msg = Message::new(Wire::V1, "gridmpi_outage").with("from", from).with("to", to).with("state", state).with("secs", secs).with("budget", budget.map_or("kernel".to_string(), |b| b.to_string()));
        c.send(during, &msg)
    }

    /// The PMI-1 connection to gridmpirun (the checkpoint protocol is its own).
    fn gridmpirun(&mut self, during: &'static str) -> Result<&mut Connection, PmiError> {
        match &mut self.mode {
            Mode::Connected(c) if c.version == Version::Pmi1 && self.spawn_server => Ok(c),
            _ => Err(PmiError::Server { during, rc: -1, message: "checkpointing needs gridmpirun's PMI-1 (this process was started otherwise)".into() }),
        }
    }

    /// Publish `port` under `service` (MPI_Publish_name). A singleton
    /// publishes within its own process.
    pub fn publish_name(&mut self, service: &str, port: &str) -> Result<(), PmiError> {
        let during = "publish_name";
        match &mut self.mode {
            Mode::Singleton { names, .. } => match names.contains_key(service) {
                true => Err(PmiError::Server { during, rc: 1, message: format!("{service} is already published") }),
                false => {
                    names.insert(service.to_string(), port.to_string());
                    Ok(())
                }
            },
            Mode::Pmix(_) => Err(name_service_unavailable(during)),
            Mode::Connected(c) => match c.version {
                Version::Pmi1 => {
                    let m = Message::new(Wire::V1, "publish_name").with("service", service).with("port", port);
                    c.request(during, m, "publish_result").map(drop)
                }
                Version::Pmi2 => {
                    let m = Message::new(Wire::V2, "name-publish").with("name", service).with("port", port);
                    c.request(during, m, "name-publish-response").map(drop)
                }
            },
        }
    }

    /// Withdraw what was published under `service` (MPI_Unpublish_name).
    pub fn unpublish_name(&mut self, service: &str) -> Result<(), PmiError> {
        let during = "unpublish_name";
        match &mut self.mode {
            Mode::Singleton { names, .. } => match names.remove(service) {
                Some(_) => Ok(()),
                None => Err(PmiError::Server { during, rc: 1, message: format!("{service} is not published") }),
            },
            Mode::Pmix(_) => Err(name_service_unavailable(during)),
            Mode::Connected(c) => match c.version {
                Version::Pmi1 => {
                    let m = Message::new(Wire::V1, "unpublish_name").with("service", service);
                    c.request(during, m, "unpublish_result").map(drop)
                }
                Version::Pmi2 => {
                    let m = Message::new(Wire::V2, "name-unpublish").with("name", service);
                    c.request(during, m, "name-unpublish-response").map(drop)
                }
            },
        }
    }

    /// The port published under `service` (MPI_Lookup_name); None when
    /// nothing is published under it.
    pub fn lookup_name(&mut self, service: &str) -> Result<Option<String>, PmiError> {
        let during = "lookup_name";
        match &mut self.mode {
            Mode::Singleton { names, .. } => Ok(names.get(service).cloned()),
            Mode::Pmix(_) => Err(name_service_unavailable(during)),
            Mode::Connected(c) => {
                let (m, expect) = match c.version {
                    Version::Pmi1 => (Message::new(Wire::V1, "lookup_name").with("service", service), "lookup_result"),
                    Version::Pmi2 => (Message::new(Wire::V2, "name-lookup").with("name", service), "name-lookup-response"),
                };
                let reply = c.request_any_rc(during, m, expect)?;
                // Servers answer "not published" with a non-zero rc.
                if reply.rc() != 0 {
                    return Ok(None);
                }
                match reply.get("port") {
                    Some(p) => Ok(Some(p.to_string())),
                    None => Err(PmiError::Protocol { during, detail: format!("no port in {reply}") }),
                }
            }
        }
    }

    /// Ask the launcher to end the job (it prints `message` naming this rank
    /// and kills every rank), then exit with `exit_code`. After a
    /// rendezvous, the rendezvous server ends the other groups and this
    /// rank's own launcher its group.
    pub fn abort(&mut self, exit_code: i32, message: &str) -> ! {
        let message = message.replace(['\n', '\r'], " ");
        if self.joined.is_some() {
            rendezvous::LEAVING.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        match &mut self.mode {
            Mode::Singleton { .. } => {
                eprintln!("gridmpi: rank 0 aborted the job (exit code {exit_code}): {message}");
            }
            Mode::Pmix(p) => p.abort(exit_code, &message),
            Mode::Connected(c) => {
                let m = match c.version {
                    Version::Pmi1 => Message::new(Wire::V1, "abort").with("exitcode", exit_code).with("message", &message),
                    Version::Pmi2 => Message::new(Wire::V2, "abort")
                        .with("isworld", "TRUE")
                        .with("exitcode", exit_code)
                        .with("msg", &message)
                        .with("message", &message),
                };
                let _ = c.send("abort", &m);
                let _ = c.stream.flush();
            }
        }
        if let Some(site) = self.site.as_mut() {
            let rank = self.rank;
            site.abort(exit_code, &format!("rank {rank} of the whole job: {message}"));
        }
        std::process::exit(exit_code)
    }

    /// Tell the launcher this rank is done with PMI (MPI_Finalize).
    pub fn finalize(mut self) -> Result<(), PmiError> {
        let site = self.site.take();
        match self.mode {
            Mode::Singleton { .. } => Ok(()),
            Mode::Pmix(p) => p.finalize().map_err(PmiError::Pmix),
            Mode::Connected(mut c) => match c.version {
                Version::Pmi1 => c.request("finalize", Message::new(Wire::V1, "finalize"), "finalize_ack").map(drop),
                Version::Pmi2 => c.request("finalize", Message::new(Wire::V2, "finalize"), "finalize-response").map(drop),
            },
        }?;
        match site {
            Some(site) => site.finalize(),
            None => Ok(()),
        }
    }

    /// Join the whole job at the rendezvous server `target` (`host:port`):
    /// `site` is this rank's own launcher, which placed it in its group.
    /// Waits until every group has arrived; the returned handle speaks to
    /// the server, with the rank and size of the whole job. Connecting is
    /// retried for `patience` (the server may start after the ranks). With
    /// `relay`, the server is reached through that relay (a host with a
    /// private address: gridmpi_relay).
    pub fn join(
        mut site: Pmi,
        target: &str,
        secret: &[u8; 32],
        name: &str,
        patience: Duration,
        relay: Option<std::net::SocketAddrV4>,
    ) -> Result<Pmi, PmiError> {
        let fail = |reason: String| PmiError::Rendezvous { target: target.to_string(), reason };
        rendezvous::check_name(name).map_err(fail)?;
        // The group's id and name: rank 0 of the group draws and names it.
        if site.rank() == 0 {
            let mut id = [0u8; 8];
            rendezvous::random_bytes(&mut id).map_err(|e| fail(format!("getrandom: {e}")))?;
            site.put("rendezvous-group", &format!("{};{name}", rendezvous::hex(&id)))?;
        }
        site.fence()?;
        let group = site.get(0, "rendezvous-group")?;
        let (group, group_name) = group.split_once(';').ok_or_else(|| fail(format!("rank 0 of our group published {group:?}")))?;
        let mut nonce = [0u8; 32];
        rendezvous::random_bytes(&mut nonce).map_err(|e| fail(format!("getrandom: {e}")))?;
        let join = rendezvous::Join {
            group: group.to_string(),
            name: group_name.to_string(),
            size: site.size(),
            rank: site.rank(),
            nonce,
        };
        let stream = match relay {
            None => connect_patiently(target, patience).map_err(fail)?,
            Some(relay) => {
                let to = resolve_v4(target).map_err(fail)?;
                let s = connect_patiently(&relay.to_string(), patience)
                    .map_err(|e| fail(format!("through the relay {relay} (GRIDMPI_RELAY): {e}")))?;
                let p = gridmpi_relay::Preface::new(Vec::new(), to).map_err(|e| fail(format!("getrandom: {e}")))?;
                (&s).write_all(&p.line(&gridmpi_relay::relay_key(secret)))
                    .map_err(|e| fail(format!("through the relay {relay}: {e}")))?;
                s
            }
        };
        stream.set_nodelay(true).ok();
        let mut reader = io::BufReader::new(stream.try_clone().map_err(|e| fail(e.to_string()))?);
        let greeting = read_line(&mut reader).map_err(|e| fail(format!("reading its greeting: {e}")))?;
        let server_nonce = rendezvous::parse_greeting(&greeting).map_err(fail)?;
        (&stream).write_all(join.line(secret, &server_nonce).as_bytes()).map_err(|e| fail(format!("sending our proof: {e}")))?;
        // The answer comes once every group has arrived: no timeout.
        let answer = read_line(&mut reader).map_err(|e| fail(format!("waiting for the other groups: {e}")))?;
        let placed = rendezvous::Placed::parse(&answer, secret, &server_nonce, &nonce).map_err(fail)?;
        if !reader.buffer().is_empty() {
            return Err(fail("it sent more than its answer".into()));
        }
        let watched = rendezvous::Watched::start(stream, placed.rank).map_err(fail)?;
        let conn = Connection { stream: Box::new(watched), decoder: Decoder::new(), version: Version::Pmi1, timeout: None };
        let mut world = Pmi::init_v1_with(conn, None, Some(placed.rank as i64), Some(placed.size as i64))?;
        world.joined = Some(Joined {
            tcp_secret: rendezvous::tcp_secret(secret, &placed.job),
            relay_key: gridmpi_relay::relay_key(secret),
            group: placed,
        });
        world.site = Some(Box::new(site));
        Ok(world)
    }

    /// After [`Pmi::join`]: where the server placed this rank.
    pub fn joined(&self) -> Option<&Joined> {
        self.joined.as_ref()
    }
}

/// What a rank learned at the rendezvous.
#[derive(Clone, Debug)]
pub struct Joined {
    /// Our group's place and name in the job.
    pub group: rendezvous::Placed,
    /// Authenticates the job's TCP connections (derived; never sent).
    pub tcp_secret: [u8; 32],
    /// Authenticates what ranks ask of relays (gridmpi_relay::relay_key).
    pub relay_key: [u8; 32],
}

/// The IPv4 addresses of `host:port`.
pub fn resolve_v4(target: &str) -> Result<Vec<std::net::SocketAddrV4>, String> {
    use std::net::{SocketAddr, ToSocketAddrs};
    let addrs: Vec<std::net::SocketAddrV4> = target
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {target}: {e}"))?
        .filter_map(|a| match a {
            SocketAddr::V4(a) => Some(a),
            SocketAddr::V6(_) => None,
        })
        .collect();
    if addrs.is_empty() {
        return Err(format!("{target} has no IPv4 address"));
    }
    Ok(addrs)
}

/// Connect to `target`, retrying while it refuses (not started yet).
fn connect_patiently(target: &str, patience: Duration) -> Result<TcpStream, String> {
    let start = std::time::Instant::now();
    loop {
        match TcpStream::connect(target) {
            Ok(s) => return Ok(s),
            Err(e) if start.elapsed() < patience
                && matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::TimedOut) =>
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(format!("cannot connect: {e} (tried for {:?}; GRIDMPI_RENDEZVOUS_TIMEOUT)", start.elapsed())),
        }
    }
}

/// One `\n`-terminated line of at most MAX_LINE bytes.
fn read_line(r: &mut impl io::BufRead) -> Result<String, String> {
    let mut line = Vec::new();
    let n = r.take(rendezvous::MAX_LINE as u64).read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
    if n == 0 {
        return Err("it closed the connection".into());
    }
    if line.last() != Some(&b'\n') {
        return Err("it sent an overlong or unfinished line".into());
    }
    String::from_utf8(line).map_err(|_| "it sent a line that is not text".into())
}

fn digits(n: u32) -> usize {
    n.max(1).to_string().len()
}

fn check_rank_size(rank: i64, size: i64) -> Result<(), PmiError> {
    if size < 1 || size > u32::MAX as i64 {
        return Err(PmiError::Environment { var: "PMI_SIZE", value: size.to_string(), reason: "job size must be at least 1".into() });
    }
    if rank < 0 || rank >= size {
        return Err(PmiError::Environment {
            var: "PMI_RANK",
            value: rank.to_string(),
            reason: format!("rank must be in 0..{size}"),
        });
    }
    Ok(())
}

/// Split an ASCII string into pieces of at most `n` bytes.
fn chunk_str(s: &str, n: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let take = rest.len().min(n);
        out.push(&rest[..take]);
        rest = &rest[take..];
    }
    out
}

impl fmt::Debug for Pmi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pmi")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("kvsname", &self.kvsname)
            .field("version", &self.version())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_encoding_round_trips() {
        for v in ["", "plain", "a b;c=d\\e%f\n", "tcp:10.0.0.1:4000,shm:/dev/shm/x", "ünïcode"] {
            let e = encode_value(v);
            assert!(e.bytes().all(|b| value_char_is_safe(b) || b == b'%'), "{e}");
            assert_eq!(decode_value(&e).as_deref(), Some(v));
        }
        assert_eq!(encode_value("a b"), "a%20b");
    }

    #[test]
    fn timeouts_parse() {
        assert_eq!(parse_timeout("30s"), Ok(Some(Duration::from_secs(30))));
        assert_eq!(parse_timeout("500ms"), Ok(Some(Duration::from_millis(500))));
        assert_eq!(parse_timeout("0"), Ok(None));
        // A bare number was microseconds here (and garbage was ignored): a
        // 30 us timeout fails every fence, so it is refused now.
        assert!(parse_timeout("30").unwrap_err().contains("unit"));
        assert!(parse_timeout("soon").is_err());
    }

    #[test]
    fn singleton_store() {
        let mut p = Pmi::singleton();
        assert!(p.is_singleton());
        p.put("card", "x y").unwrap();
        p.fence().unwrap();
        assert_eq!(p.get(0, "card").unwrap(), "x y");
        let long = "z".repeat(5000);
        p.put("long", &long).unwrap();
        assert_eq!(p.get(0, "long").unwrap(), long);
        assert!(matches!(p.get(0, "nope"), Err(PmiError::NotFound { .. })));
        assert!(matches!(p.put("bad key", "v"), Err(PmiError::InvalidKey { .. })));
        p.finalize().unwrap();
    }
}

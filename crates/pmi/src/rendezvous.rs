//! Rendezvous: one job formed from groups of ranks that were started
//! separately, each by its own launcher (gridmpirun, `srun`, MPICH's
//! hydra), usually one group per site.
//!
//! Every rank first speaks PMI with its own launcher (the *site* PMI) to
//! learn its place in its group. Then it connects to the rendezvous server
//! (`gridmpirun --rendezvous-server`) named by `GRIDMPI_RENDEZVOUS`, proves
//! it holds the job secret, and is given its rank in the whole job. From
//! then on the same connection speaks PMI-1 with the rendezvous server,
//! which is the process manager of the whole job: its key-value store is
//! where every rank's address card goes.
//!
//! The exchange before PMI (one line each, `\n`-terminated, at most
//! [`MAX_LINE`] bytes; hex for binary values):
//!
//! ```text
//! server: GRIDMPI-RENDEZVOUS-1 <server nonce>
//! rank:   join group=<id> name=<name> size=<n> rank=<r> nonce=<rank nonce> mac=<HMAC>
//! server: placed rank=<R> size=<N> group=<k> groups=<G> name=<name> job=<job nonce> mac=<HMAC>
//!    or:  refused <reason>
//! ```
//!
//! Both MACs are HMAC-SHA256 under the job secret over both nonces and
//! every field, so neither side can be impersonated or have a field
//! changed by someone without the secret, and a recorded exchange cannot
//! be replayed (the other side's nonce is fresh). The secret itself never
//! crosses the network: the TCP transport's secret is derived from it and
//! the job nonce ([`tcp_secret`]).
//!
//! The secret is 32 random bytes kept in a file readable only by its
//! owner ([`read_secret_file`]); the server creates it when it is missing
//! ([`create_secret_file`]). Copy it to every site.
//!
//! Groups are ordered by name (unnamed ones last, by id); a group's ranks
//! keep their order within it. So naming the sites (`GRIDMPI_CLUSTER`)
//! decides which site holds rank 0.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use gridmpi_auth::{equal_ct, hmac_sha256, unhex};

use crate::client::Stream;
use crate::wire::Decoder;

/// The server's first line starts with this; the number is the version.
pub const GREETING: &str = "GRIDMPI-RENDEZVOUS-1";
/// No line of the exchange is longer.
pub const MAX_LINE: usize = 1024;
/// The server's message to every rank when the job ends early
/// (PMI-1 `cmd=` name; attributes `code`, `reason`).
pub const END_CMD: &str = "rendezvous-end";

/// A group as its ranks announce it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Join {
    /// Random, the same for every rank of the group (drawn by its rank 0).
    pub group: String,
    /// The group's name (its site, its cluster); may be empty.
    pub name: String,
    /// Ranks in the group.
    pub size: u32,
    /// This rank's place in the group.
    pub rank: u32,
    pub nonce: [u8; 32],
}

/// What the server tells a rank: its place in the whole job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub rank: u32,
    pub size: u32,
    /// Index of the rank's group in the job's order, and how many groups.
    pub group: u32,
    pub groups: u32,
    /// The group's name ("group<k>" when it gave none).
    pub name: String,
    /// Fresh per job: names the job and keys its TCP secret.
    pub job: [u8; 32],
}

/// A group or site name: what may appear in the lines and in a cluster map.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        return Err(format!("group name {name:?}: at most 64 letters, digits, '.', '_' or '-'"));
    }
    Ok(())
}

pub use gridmpi_auth::hex;

/// The server's first line.
pub fn greeting(server_nonce: &[u8; 32]) -> String {
    format!("{GREETING} {}\n", hex(server_nonce))
}

/// The server nonce from its first line.
pub fn parse_greeting(line: &str) -> Result<[u8; 32], String> {
    let line = line.trim_end();
    let rest = line.strip_prefix(GREETING).and_then(|r| r.strip_prefix(' ')).ok_or_else(|| {
        format!("it is not a GridMPI rendezvous server of this version (it said {:?}, expected {GREETING} ...)", cut(line))
    })?;
    unhex::<32>(rest).ok_or_else(|| format!("its greeting has a malformed nonce: {:?}", cut(line)))
}

fn join_mac(secret: &[u8; 32], server_nonce: &[u8; 32], j: &Join) -> [u8; 32] {
    let fields = format!("{}|{}|{}|{}", j.group, j.name, j.size, j.rank);
    hmac_sha256(secret, &[b"gridmpi rendezvous join", server_nonce, &j.nonce, fields.as_bytes()])
}

fn placed_mac(secret: &[u8; 32], server_nonce: &[u8; 32], rank_nonce: &[u8; 32], p: &Placed) -> [u8; 32] {
    let fields = format!("{}|{}|{}|{}|{}", p.rank, p.size, p.group, p.groups, p.name);
    hmac_sha256(secret, &[b"gridmpi rendezvous placed", server_nonce, rank_nonce, &p.job, fields.as_bytes()])
}

impl Join {
    pub fn line(&self, secret: &[u8; 32], server_nonce: &[u8; 32]) -> String {
        let mac = join_mac(secret, server_nonce, self);
        format!(
            "join group={} name={} size={} rank={} nonce={} mac={}\n",
            self.group,
            self.name,
            self.size,
            self.rank,
            hex(&self.nonce),
            hex(&mac)
        )
    }

    /// Read a join line and check its MAC; the error says what is wrong
    /// (for the server's log, never for the peer: it gets "refused").
    pub fn parse(line: &str, secret: &[u8; 32], server_nonce: &[u8; 32]) -> Result<Join, String> {
        let f = Fields::parse(line, "join")?;
        let group = f.get("group")?;
        if group.is_empty() || group.len() > 32 || !group.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("malformed group id {:?}", cut(group)));
        }
        let name = f.get("name")?;
        check_name(name)?;
        let j = Join {
            group: group.to_string(),
            name: name.to_string(),
            size: f.number("size")?,
            rank: f.number("rank")?,
            nonce: f.bytes("nonce")?,
        };
        if j.size == 0 || j.rank >= j.size {
            return Err(format!("rank {} of a group of {} ranks", j.rank, j.size));
        }
        let mac = f.bytes("mac")?;
        if !equal_ct(&mac, &join_mac(secret, server_nonce, &j)) {
            return Err("its proof does not match the job secret".into());
        }
        Ok(j)
    }
}

impl Placed {
    pub fn line(&self, secret: &[u8; 32], server_nonce: &[u8; 32], rank_nonce: &[u8; 32]) -> String {
        let mac = placed_mac(secret, server_nonce, rank_nonce, self);
        format!(
            "placed rank={} size={} group={} groups={} name={} job={} mac={}\n",
            self.rank,
            self.size,
            self.group,
            self.groups,
            self.name,
            hex(&self.job),
            hex(&mac)
        )
    }

    /// The server's answer; `Err` for a refusal (with the server's reason)
    /// or an answer that does not prove the server holds the secret.
    pub fn parse(line: &str, secret: &[u8; 32], server_nonce: &[u8; 32], rank_nonce: &[u8; 32]) -> Result<Placed, String> {
        if let Some(reason) = line.trim_end().strip_prefix("refused") {
            return Err(format!("it refused us:{}", cut(reason)));
        }
        let f = Fields::parse(line, "placed")?;
        let name = f.get("name")?;
        check_name(name)?;
        let p = Placed {
            rank: f.number("rank")?,
            size: f.number("size")?,
            group: f.number("group")?,
            groups: f.number("groups")?,
            name: name.to_string(),
            job: f.bytes("job")?,
        };
        if p.rank >= p.size || p.group >= p.groups {
            return Err(format!("it placed us at rank {} of {} in group {} of {}", p.rank, p.size, p.group, p.groups));
        }
        let mac = f.bytes("mac")?;
        if !equal_ct(&mac, &placed_mac(secret, server_nonce, rank_nonce, &p)) {
            return Err("its answer does not prove it holds the job secret (is GRIDMPI_JOB_SECRET_FILE the same file at every site?)".into());
        }
        Ok(p)
    }
}

/// The TCP transport's job secret: derived, so the file's secret is never
/// sent, and fresh for every job.
pub fn tcp_secret(secret: &[u8; 32], job: &[u8; 32]) -> [u8; 32] {
    hmac_sha256(secret, &[b"gridmpi tcp secret", job])
}

/// A line's `key=value` fields after its first word.
struct Fields<'a> {
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Fields<'a> {
    fn parse(line: &'a str, word: &str) -> Result<Fields<'a>, String> {
        let mut it = line.trim_end_matches(['\n', '\r']).split(' ');
        if it.next() != Some(word) {
            return Err(format!("expected a {word:?} line, got {:?}", cut(line)));
        }
        let pairs = it
            .map(|kv| kv.split_once('=').ok_or_else(|| format!("malformed field {:?}", cut(kv))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Fields { pairs })
    }

    fn get(&self, key: &str) -> Result<&'a str, String> {
        let mut found = self.pairs.iter().filter(|(k, _)| *k == key);
        match (found.next(), found.next()) {
            (Some((_, v)), None) => Ok(v),
            (None, _) => Err(format!("no {key} field")),
            (Some(_), Some(_)) => Err(format!("two {key} fields")),
        }
    }

    fn number(&self, key: &str) -> Result<u32, String> {
        let v = self.get(key)?;
        v.parse().map_err(|_| format!("{key}={:?} is not a number", cut(v)))
    }

    fn bytes(&self, key: &str) -> Result<[u8; 32], String> {
        let v = self.get(key)?;
        unhex::<32>(v).ok_or_else(|| format!("{key}={:?} is not 64 hex digits", cut(v)))
    }
}

/// At most 80 characters of what a peer sent, for an error message.
fn cut(s: &str) -> &str {
    match s.char_indices().nth(80) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Read the job secret: 64 hex digits (surrounding whitespace ignored) in a
/// file that only its owner can read or write — anyone who can read it can
/// join the job.
pub fn read_secret_file(path: &Path) -> Result<[u8; 32], String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|e| format!("job secret file {}: {e}", path.display()))?;
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "job secret file {}: other users may read or change it (mode {:o}): chmod 600 it",
            path.display(),
            meta.mode() & 0o777
        ));
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    if meta.uid() != uid {
        return Err(format!("job secret file {}: owned by uid {}, not by us (uid {uid})", path.display(), meta.uid()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("job secret file {}: {e}", path.display()))?;
    unhex::<32>(text.trim()).ok_or_else(|| format!("job secret file {}: expected 64 hex digits", path.display()))
}

/// Create a new secret file (mode 600, its directory created mode 700 if
/// missing); an existing file is read instead, never replaced.
pub fn create_secret_file(path: &Path) -> Result<[u8; 32], String> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if path.exists() {
        return read_secret_file(path);
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("job secret file: cannot create {}: {e}", dir.display()))?;
    }
    let mut secret = [0u8; 32];
    random_bytes(&mut secret).map_err(|e| format!("job secret: getrandom: {e}"))?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("job secret file {}: cannot create: {e}", path.display()))?;
    f.write_all(format!("{}\n", hex(&secret)).as_bytes()).map_err(|e| format!("job secret file {}: {e}", path.display()))?;
    Ok(secret)
}

/// Where the job secret is when `GRIDMPI_JOB_SECRET_FILE` does not say.
pub fn default_secret_file() -> std::path::PathBuf {
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
    Path::new(&home).join(".gridmpi").join("job-secret")
}

pub use gridmpi_relay::random_bytes;

/// The rank's end of the rendezvous connection once it speaks PMI.
///
/// A thread reads it all the time, so that the server can end the job
/// ([`END_CMD`]: a rank of another group failed) while this rank computes
/// and never calls PMI; everything else goes to the PMI client through a
/// channel. Past `finalize_ack` the thread stops: the server closing the
/// connection is then the normal end.
pub(crate) struct Watched {
    replies: mpsc::Receiver<Vec<u8>>,
    unread: Vec<u8>,
    stream: TcpStream,
    timeout: Cell<Option<Duration>>,
}

impl Watched {
    pub(crate) fn start(stream: TcpStream, rank: u32) -> Result<Watched, String> {
        let reader = stream.try_clone().map_err(|e| format!("cannot watch the connection: {e}"))?;
        let (tx, replies) = mpsc::channel();
        std::thread::Builder::new()
            .name("gridmpi-rendezvous".into())
            .spawn(move || watch(reader, tx, rank))
            .map_err(|e| format!("cannot start the thread that watches the connection: {e}"))?;
        Ok(Watched { replies, unread: Vec::new(), stream, timeout: Cell::new(None) })
    }
}

/// Set when this rank aborts: the server then ends the job and closes our
/// connection, which is no news to report (and the rank's own launcher
/// must still hear the abort, with its exit code).
pub(crate) static LEAVING: AtomicBool = AtomicBool::new(false);

fn watch(mut stream: TcpStream, replies: mpsc::Sender<Vec<u8>>, rank: u32) {
    let mut decoder = Decoder::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => end(rank, 1, "the rendezvous server closed its connection: the job is over"),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => end(rank, 1, &format!("the connection to the rendezvous server failed: {e}")),
        };
        decoder.push(&buf[..n]);
        loop {
            let m = match decoder.next_message() {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => end(rank, 1, &format!("the rendezvous server sent something that is not PMI: {e}")),
            };
            if m.cmd == END_CMD {
                let code = m.get_int("code").unwrap_or(1).clamp(1, 255) as i32;
                end(rank, code, m.get("reason").unwrap_or("the job ended"));
            }
            let last = m.cmd == "finalize_ack";
            let bytes = match m.encode() {
                Ok(b) => b,
                Err(e) => end(rank, 1, &format!("cannot pass on the rendezvous server's reply: {e}")),
            };
            if replies.send(bytes).is_err() || last {
                return;
            }
        }
    }
}

/// The job cannot go on: say why and leave at once. (No PMI is left to
/// abort through from this thread; our own launcher sees us exit.)
fn end(rank: u32, code: i32, why: &str) -> ! {
    if LEAVING.load(Ordering::SeqCst) {
        // The main thread is aborting: let it finish; this thread waits.
        loop {
            std::thread::park();
        }
    }
    eprintln!("gridmpi: rank {rank}: {why}");
    // SAFETY: _exit ends the process without running anything else; other
    // threads may be inside the library, so nothing may run at exit.
    unsafe { libc::_exit(code) }
}

impl Read for Watched {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.unread.is_empty() {
            let got = match self.timeout.get() {
                Some(t) => self.replies.recv_timeout(t).map_err(|e| match e {
                    mpsc::RecvTimeoutError::Timeout => Some(io::Error::from(io::ErrorKind::TimedOut)),
                    mpsc::RecvTimeoutError::Disconnected => None,
                }),
                None => self.replies.recv().map_err(|_| None),
            };
            match got {
                Ok(bytes) => self.unread = bytes,
                Err(Some(e)) => return Err(e),
                Err(None) => return Ok(0),
            }
        }
        let n = out.len().min(self.unread.len());
        out[..n].copy_from_slice(&self.unread[..n]);
        self.unread.drain(..n);
        Ok(n)
    }
}

impl Write for Watched {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        (&self.stream).write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        (&self.stream).flush()
    }
}

impl Stream for Watched {
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.timeout.set(t);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join() -> Join {
        Join { group: "0123abcd".into(), name: "siteA".into(), size: 4, rank: 2, nonce: [7; 32] }
    }

    #[test]
    fn join_round_trips_and_proves_the_secret() {
        let (secret, sn) = ([1u8; 32], [2u8; 32]);
        let line = join().line(&secret, &sn);
        assert_eq!(Join::parse(&line, &secret, &sn).unwrap(), join());
        // Another secret, another server nonce (a replay), a changed field.
        assert!(Join::parse(&line, &[9; 32], &sn).unwrap_err().contains("proof"));
        assert!(Join::parse(&line, &secret, &[3; 32]).unwrap_err().contains("proof"));
        let forged = line.replace("rank=2", "rank=1");
        assert!(Join::parse(&forged, &secret, &sn).unwrap_err().contains("proof"));
    }

    #[test]
    fn placed_round_trips_and_proves_the_server() {
        let (secret, sn, rn) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let p = Placed { rank: 5, size: 8, group: 1, groups: 2, name: "B".into(), job: [4; 32] };
        let line = p.line(&secret, &sn, &rn);
        assert_eq!(Placed::parse(&line, &secret, &sn, &rn).unwrap(), p);
        assert!(Placed::parse(&line, &[0; 32], &sn, &rn).unwrap_err().contains("secret"));
        assert!(Placed::parse(&line, &secret, &sn, &[0; 32]).unwrap_err().contains("secret"));
        assert!(Placed::parse(&line.replace("rank=5", "rank=4"), &secret, &sn, &rn).is_err());
        assert_eq!(Placed::parse("refused the job is full\n", &secret, &sn, &rn).unwrap_err(), "it refused us: the job is full");
    }

    #[test]
    fn hostile_lines_are_errors() {
        let (secret, sn) = ([1u8; 32], [2u8; 32]);
        for bad in [
            "",
            "join",
            "hello group=1",
            "join group=zz name=a size=1 rank=0 nonce=00 mac=00",
            "join group=01 name=a size=0 rank=0",
            "join group=01 name=a/b size=1 rank=0",
            "join group=01 group=02 name=a size=1 rank=0",
            "join group=01 name=a size=99999999999 rank=0",
            "join group=01 name=a size=2 rank=2 nonce=0 mac=0",
        ] {
            assert!(Join::parse(bad, &secret, &sn).is_err(), "{bad}");
        }
        let sn = [5u8; 32];
        assert_eq!(parse_greeting(&greeting(&sn)).unwrap(), sn);
        assert!(parse_greeting("SSH-2.0-OpenSSH_9.2\n").unwrap_err().contains("not a GridMPI rendezvous"));
        assert!(parse_greeting("GRIDMPI-RENDEZVOUS-1 xyz\n").is_err());
    }

    #[test]
    fn secret_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("gridmpi-secret-test-{}", std::process::id()));
        let path = dir.join("sub").join("job-secret");
        let made = create_secret_file(&path).unwrap();
        assert_eq!(read_secret_file(&path).unwrap(), made);
        assert_eq!(create_secret_file(&path).unwrap(), made, "an existing secret is kept");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read_secret_file(&path).unwrap_err().contains("chmod 600"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "short").unwrap();
        assert!(read_secret_file(&path).unwrap_err().contains("64 hex"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tcp_secret_depends_on_job_and_secret() {
        let s = tcp_secret(&[1; 32], &[2; 32]);
        assert_ne!(s, tcp_secret(&[1; 32], &[3; 32]));
        assert_ne!(s, tcp_secret(&[0; 32], &[2; 32]));
        assert_ne!(&s, &[1; 32]);
    }
}

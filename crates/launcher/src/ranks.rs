//! Ranks on this machine: start them, carry their PMI bytes, output and
//! exit, and signal them. Used by gridmpirun for its own host and by the
//! proxy on a remote one; both see what happens as [`Up`] events.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use crate::binding::{self, Bind};
use crate::link::{RankSpec, Stream, Up};
use crate::sys::{self, ExitStatus};

/// Where rank events go.
pub type Sink = Arc<dyn Fn(Up) + Send + Sync>;

struct LocalRank {
    pid: u32,
    pmi: UnixStream,
    exited: bool,
}

pub struct LocalRanks {
    sink: Sink,
    size: u32,
    ranks: HashMap<u32, LocalRank>,
    by_pid: HashMap<u32, u32>,
    stdin_tx: Option<mpsc::Sender<Vec<u8>>>,
    /// This host's CPU units for `--bind-to`, read when the first rank of
    /// a batch starts.
    units: Option<(Bind, Vec<Vec<usize>>)>,
}

/// Variables a launcher above us may have set that must not reach our ranks.
const FOREIGN_PMI_VARS: &[&str] = &["PMI_PORT", "PMI_ID", "PMI_JOBID", "PMI_SPAWNED", "PMI_HOSTNAME", "PMI_KVSNAME"];

impl LocalRanks {
    pub fn new(size: u32, sink: Sink) -> LocalRanks {
        LocalRanks { sink, size, ranks: HashMap::new(), by_pid: HashMap::new(), stdin_tx: None, units: None }
    }

    /// Start one rank. Emits `Started` (then its output, PMI bytes and exit)
    /// or `SpawnFailed`. `local_rank`/`local_size` feed `MPI_LOCALRANKID` and
    /// `MPI_LOCALNRANKS`.
    pub fn spawn(&mut self, spec: &RankSpec, local_rank: u32, local_size: u32) {
        match self.try_spawn(spec, local_rank, local_size) {
            Ok((pid, cpus)) => (self.sink)(Up::Started { rank: spec.rank, pid, cpus }),
            Err(error) => (self.sink)(Up::SpawnFailed { rank: spec.rank, error }),
        }
    }

    /// Start the rank; its pid and the CPU list it is bound to ("" if none).
    fn try_spawn(&mut self, spec: &RankSpec, local_rank: u32, local_size: u32) -> Result<(u32, String), String> {
        let program = spec.argv.first().ok_or("no program")?;
        let bind = if spec.bind.is_empty() { Bind::None } else { Bind::parse(&spec.bind)? };
        if local_rank == 0 || self.units.as_ref().is_none_or(|(b, _)| *b != bind) {
            let units = binding::host_units(bind);
            if bind != Bind::None && (local_size as usize) > units.len() {
                eprintln!(
                    "gridmpirun: warning: {local_size} ranks on host {} share its {} {}{} (--bind-to {})",
                    sys::hostname(),
                    units.len(),
                    bind.name(),
                    if units.len() == 1 { "" } else { "s" },
                    bind.name()
                );
            }
            self.units = Some((bind, units));
        }
        let cpus = self.units.as_ref().and_then(|(_, u)| binding::pick(u, local_rank));
        let mask = cpus.as_deref().map(binding::mask);
        if !spec.cwd.is_empty() && !Path::new(&spec.cwd).is_dir() {
            return Err(format!("working directory {} does not exist", spec.cwd));
        }
        let (ours, theirs) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
        let fd = theirs.as_raw_fd();
        // A checkpointed job's rank (docs/checkpoint.md) waits for the
        // checkpoint request itself, once its library runs; a fault-tolerant
        // job's rank for the notice that a rank failed.
        let checkpointed = spec.env.iter().any(|(k, _)| k == gridmpi_pmi::CHECKPOINT_DIR_VAR);
        let fault_tolerant = spec.env.iter().any(|(k, v)| k == gridmpi_pmi::FT_VAR && v == "ulfm");
        let blocked: Vec<i32> = [
            checkpointed.then(gridmpi_pmi::checkpoint_signal),
            fault_tolerant.then(gridmpi_pmi::failure_signal),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut cmd = Command::new(program);
        cmd.args(&spec.argv[1..]);
        if !spec.cwd.is_empty() {
            cmd.current_dir(&spec.cwd);
        }
        for v in FOREIGN_PMI_VARS {
            cmd.env_remove(v);
        }
        // Only the launcher of a checkpointed job gives it (in the spec):
        // one inherited from our own environment would make the rank wait
        // for requests that never come.
        if !checkpointed {
            cmd.env_remove(gridmpi_pmi::CHECKPOINT_DIR_VAR);
        }
        // Likewise: a rank that believed its job fault tolerant would go on
        // after a failure that ends the job.
        if !fault_tolerant {
            cmd.env_remove(gridmpi_pmi::FT_VAR);
        }
        cmd.envs(spec.env.iter().map(|(k, v)| (k, v)))
            .env("PMI_FD", fd.to_string())
            .env("PMI_RANK", spec.rank.to_string())
            .env("PMI_SIZE", self.size.to_string())
            .env("MPI_LOCALRANKID", local_rank.to_string())
            .env("MPI_LOCALNRANKS", local_size.to_string())
            .stdin(if spec.stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: child_setup only makes async-signal-safe syscalls.
        // sched_setaffinity likewise (the mask was built before the fork).
        unsafe {
            cmd.pre_exec(move || {
                sys::child_setup(Some(fd), &blocked)?;
                match &mask {
                    Some(m) => binding::apply(m),
                    None => Ok(()),
                }
            });
        }
        let mut child = cmd.spawn().map_err(|e| describe_spawn_error(program, &e))?;
        drop(theirs);
        let pid = child.id();
        let rank = spec.rank;

        if let Some(stdin) = child.stdin.take() {
            let (tx, rx) = mpsc::channel::<Vec<u8>>();
            self.stdin_tx = Some(tx);
            thread::spawn(move || {
                let mut stdin = stdin;
                for chunk in rx {
                    if stdin.write_all(&chunk).is_err() {
                        break; // rank closed its stdin: drop the rest
                    }
                }
            });
        }
        for (pipe, stream) in [
            (child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>), Stream::Stdout),
            (child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>), Stream::Stderr),
        ] {
            let Some(mut pipe) = pipe else { continue };
            let sink = self.sink.clone();
            thread::spawn(move || {
                let mut buf = vec![0u8; 16384];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => sink(Up::Output { rank, stream, data: buf[..n].to_vec() }),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                sink(Up::OutputClosed { rank, stream });
            });
        }
        let mut reader = ours.try_clone().map_err(|e| format!("socket: {e}"))?;
        let sink = self.sink.clone();
        thread::spawn(move || {
            let mut buf = vec![0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => sink(Up::Pmi { rank, data: buf[..n].to_vec() }),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            sink(Up::PmiClosed { rank });
        });
        // The Child handle is dropped without waiting: the reaper collects it.
        drop(child);
        adopt(pid);
        self.ranks.insert(rank, LocalRank { pid, pmi: ours, exited: false });
        self.by_pid.insert(pid, rank);
        Ok((pid, cpus.map(|c| binding::format_list(&c)).unwrap_or_default()))
    }

    /// Reply bytes for a rank's PMI connection.
    pub fn write_pmi(&mut self, rank: u32, data: &[u8]) {
        if let Some(r) = self.ranks.get_mut(&rank) {
            // A rank that died cannot read; its exit is reported separately.
            let _ = r.pmi.write_all(data);
        }
    }

    /// Bytes for rank 0's stdin (if it runs here).
    pub fn write_stdin(&mut self, data: Vec<u8>) {
        if let Some(tx) = &self.stdin_tx {
            let _ = tx.send(data);
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin_tx = None;
    }

    /// Signal every running rank's process group.
    pub fn kill_all(&self, sig: i32) {
        for r in self.ranks.values().filter(|r| !r.exited) {
            sys::kill_group(r.pid, sig);
        }
    }

    /// A child was reaped. Returns false if it is not one of our ranks.
    pub fn reaped(&mut self, pid: u32, status: ExitStatus) -> bool {
        let Some(&rank) = self.by_pid.get(&pid) else { return false };
        if let Some(r) = self.ranks.get_mut(&rank) {
            r.exited = true;
        }
        // The rank's whole group goes with it (helpers it started).
        sys::kill_group(pid, libc::SIGKILL);
        (self.sink)(Up::Exited { rank, status });
        true
    }

    pub fn running(&self) -> usize {
        self.ranks.values().filter(|r| !r.exited).count()
    }
}

fn describe_spawn_error(program: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("{program}: command not found"),
        std::io::ErrorKind::PermissionDenied => format!("{program}: permission denied"),
        _ => format!("{program}: {e}"),
    }
}

/// Exit code for a rank that could not be started (the shell's convention).
pub fn spawn_failure_code(error: &str) -> i32 {
    if error.ends_with("command not found") {
        127
    } else if error.ends_with("permission denied") {
        126
    } else {
        1
    }
}

/// Children the reaper may collect: only those whose spawn has returned.
static ADOPTED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Let the reaper collect `pid` (a child we started and keep no handle to).
pub fn adopt(pid: u32) {
    ADOPTED.lock().expect("adopted lock").push(pid);
}

/// Reap adopted children forever, handing each to `on_exit`. A child not
/// adopted yet (its spawn is still returning, or failed and std reaps it)
/// is left alone.
pub fn start_reaper(on_exit: impl Fn(u32, ExitStatus) + Send + 'static) {
    thread::spawn(move || loop {
        let Some(pid) = sys::peek_exited_child() else {
            thread::sleep(std::time::Duration::from_millis(20));
            continue;
        };
        let adopted = {
            let mut list = ADOPTED.lock().expect("adopted lock");
            match list.iter().position(|&p| p == pid) {
                Some(i) => {
                    list.swap_remove(i);
                    true
                }
                None => false,
            }
        };
        if !adopted {
            thread::sleep(std::time::Duration::from_millis(5));
            continue;
        }
        if let Some(status) = sys::reap(pid) {
            on_exit(pid, status);
        }
    });
}

//! What `up` made, recorded before it is made, so that `down` can remove
//! exactly that, even after `up` or the emulator crashed.
//!
//! Everything lives in one directory (default /run/gridmpi-testbed, a tmpfs
//! that a reboot clears along with the namespaces; override with
//! GRIDMPI_TESTBED_DIR):
//!
//! | file | what |
//! |---|---|
//! | state.json | this State |
//! | lock | flock taken by up/down |
//! | ctl.sock | the emulator's control socket |
//! | emulator.log | the emulator's messages |
//! | hosts/NAME | the /etc/hosts each host sees |
//! | bin/ssh, bin/gridmpi-testbed-ssh | ssh-compatible launch agent (symlinks to this program) |

use crate::spec::Grid;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

pub fn dir() -> PathBuf {
    std::env::var_os("GRIDMPI_TESTBED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/gridmpi-testbed"))
}

pub fn state_file() -> PathBuf {
    dir().join("state.json")
}
pub fn control_socket() -> PathBuf {
    dir().join("ctl.sock")
}
pub fn emulator_log() -> PathBuf {
    dir().join("emulator.log")
}
pub fn hosts_file(host: &str) -> PathBuf {
    dir().join("hosts").join(host)
}
pub fn bin_dir() -> PathBuf {
    dir().join("bin")
}

/// A sysctl of the initial namespace that `up` changed, and its old value.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SysctlChange {
    pub key: String,
    pub original: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    pub grid: Grid,
    /// Network namespaces created (or about to be), in creation order.
    pub namespaces: Vec<String>,
    pub sysctls: Vec<SysctlChange>,
    /// The emulator daemon: pid and start time (to tell it from a reused pid).
    pub emulator: Option<(i32, u64)>,
    /// Monitor file recording since `up --monitor`.
    pub monitor_file: Option<PathBuf>,
    /// Unix time of `up`.
    pub created: u64,
}

impl State {
    pub fn new(grid: Grid) -> State {
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        State { grid, namespaces: Vec::new(), sysctls: Vec::new(), emulator: None, monitor_file: None, created }
    }

    pub fn load() -> io::Result<Option<State>> {
        match std::fs::read(state_file()) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| io::Error::other(format!("{}: corrupt state: {e}", state_file().display()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Load, or explain that no grid is up.
    pub fn require() -> Result<State, String> {
        match State::load() {
            Ok(Some(s)) => Ok(s),
            Ok(None) => Err(format!("no grid is up (no {}); start one with `gridmpi-testbed up 2x4`", state_file().display())),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Write atomically (temp file + rename), so a crash never leaves half a
    /// state file.
    pub fn save(&self) -> io::Result<()> {
        std::fs::create_dir_all(dir())?;
        let tmp = dir().join("state.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self).map_err(io::Error::other)?)?;
        File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, state_file())
    }
}

/// An exclusive lock on the state directory, held by up and down.
pub struct Lock(#[allow(dead_code)] File);

pub fn lock() -> io::Result<Lock> {
    std::fs::create_dir_all(dir())?;
    let path = dir().join("lock");
    let file = File::options().create(true).truncate(false).write(true).open(&path)?;
    // SAFETY: flock on an fd we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(io::Error::other(format!("another gridmpi-testbed up/down holds {}", path.display())));
    }
    Ok(Lock(file))
}

/// Remove the files `up` wrote (keeps the directory and its lock).
pub fn remove_files() {
    for p in [state_file(), control_socket(), dir().join("hosts"), bin_dir()] {
        let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
    }
}

/// After `down`: remove the log, the lock and the directory itself, so that
/// nothing `up` made is left (call with the lock released).
pub fn remove_dir() {
    let _ = std::fs::remove_file(emulator_log());
    let _ = std::fs::remove_file(dir().join("lock"));
    let _ = std::fs::remove_dir(dir());
}

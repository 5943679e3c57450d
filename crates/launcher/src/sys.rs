//! The few POSIX calls std does not offer: signals, process groups, reaping.

use std::fs::File;
use std::io;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicI32, Ordering};

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

impl ExitStatus {
    fn from_wait(status: i32) -> ExitStatus {
        if libc::WIFSIGNALED(status) {
            ExitStatus::Signal(libc::WTERMSIG(status))
        } else {
            ExitStatus::Code(libc::WEXITSTATUS(status))
        }
    }

    /// The shell's view: the code, or 128 + signal.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitStatus::Code(c) => c,
            ExitStatus::Signal(s) => 128 + s,
        }
    }
}

/// Wait until some child has exited and return its pid, without reaping
/// it (so `std::process::Command` can still reap a child whose exec failed).
/// `None` when there is no child at all (ECHILD).
pub fn peek_exited_child() -> Option<u32> {
    loop {
        // SAFETY: waitid writes into the zeroed siginfo we own.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if rc == 0 {
            // SAFETY: waitid filled in a SIGCHLD siginfo.
            let pid = unsafe { info.si_pid() };
            if pid > 0 {
                return Some(pid as u32);
            }
            continue;
        }
        if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return None;
    }
}

/// Reap one child that has exited.
pub fn reap(pid: u32) -> Option<ExitStatus> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into our local.
        let rc = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        if rc == pid as libc::pid_t {
            return Some(ExitStatus::from_wait(status));
        }
        if rc < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return None;
    }
}

/// Send `sig` to the process group led by `pid` (every rank is a group leader).
pub fn kill_group(pid: u32, sig: i32) {
    // SAFETY: plain syscall; an error (group already gone) is ignored.
    unsafe { libc::kill(-(pid as libc::pid_t), sig) };
}

/// Send a signal to this process (used by the PMI self-check to die by one).
pub fn raise(sig: i32) {
    // SAFETY: plain syscalls. The default action first: Rust's runtime
    // catches SIGSEGV and SIGBUS for its stack-overflow report.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// A prefix for one job's shared-memory names, unique on this host and
/// never a prefix of another job's (it ends where the library adds `-`).
pub fn new_shm_prefix() -> String {
    let mut r = [0u8; 8];
    // Unpredictable, so no other job's names (or a guess) can match it.
    if File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut r)).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        r = t.to_le_bytes();
    }
    format!("gridmpi-j{:x}-{:016x}", std::process::id(), u64::from_le_bytes(r))
}

/// Remove this host's shared-memory files of the job named by `prefix`
/// (those the ranks could not unlink themselves). Called when every rank
/// here has ended.
pub fn remove_shm_files(prefix: &str) {
    if !prefix.starts_with("gridmpi-") || prefix.contains('/') {
        return;
    }
    let Ok(dir) = std::fs::read_dir("/dev/shm") else { return };
    let mine = format!("{prefix}-");
    for e in dir.flatten() {
        if e.file_name().to_str().is_some_and(|n| n.starts_with(&mine)) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The launcher's pid, as its children see their parent (set by
/// [`note_launcher_pid`] before any child is started).
static LAUNCHER_PID: AtomicI32 = AtomicI32::new(0);

/// Remember our pid for [`child_setup`], which runs in the child after
/// fork and compares it with its parent's.
pub fn note_launcher_pid() {
    LAUNCHER_PID.store(std::process::id() as i32, Ordering::Relaxed);
}

/// Called in a forked child before exec: own process group, so the whole
/// rank (and what it starts) can be signalled at once. Every signal is
/// unblocked except `blocked`: a checkpointed job's rank starts with the
/// checkpoint request blocked, a fault-tolerant job's with the failure
/// notice, so one that comes before its library waits for it stays
/// pending instead of killing it (a real-time signal's default action).
pub fn child_setup(keep_fd: Option<i32>, blocked: &[i32]) -> io::Result<()> {
    // SAFETY: async-signal-safe syscalls between fork and exec.
    unsafe {
        if libc::setpgid(0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        // Die with the launcher, even when it cannot tear the job down
        // (kill -9, a crash): no rank outlives its job. The signal comes
        // when the thread that forked us ends, so children are started
        // from the launcher's main thread. If the launcher died before this
        // call, our parent is already someone else: do not start.
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != LAUNCHER_PID.load(Ordering::Relaxed) {
            // (No allocation between fork and exec: a plain errno.)
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        if let Some(fd) = keep_fd {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        // Start with nothing blocked, whatever the launcher blocked.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &sig in blocked {
            libc::sigaddset(&mut set, sig);
        }
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
    Ok(())
}

static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; the byte lives on our stack.
        unsafe { libc::write(fd, &b as *const u8 as *const libc::c_void, 1) };
    }
}

/// Route SIGINT, SIGTERM, SIGHUP and `extra` into a pipe; read one byte
/// per signal from the returned file.
pub fn signal_pipe(extra: &[i32]) -> io::Result<File> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fcntl on the write end we just created.
    unsafe { libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK) };
    SIGNAL_PIPE.store(fds[1], Ordering::Relaxed);
    for &sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP].iter().chain(extra) {
        // SAFETY: installing a handler that only calls write(2).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    // SAFETY: we own the read end.
    Ok(unsafe { File::from_raw_fd(fds[0]) })
}

/// Whether reading our stdin is safe (not a terminal we do not own: a
/// background job reading the terminal would be stopped by SIGTTIN).
pub fn stdin_readable() -> bool {
    // SAFETY: plain queries on fd 0.
    unsafe {
        if libc::isatty(0) == 0 {
            return true;
        }
        libc::tcgetpgrp(0) == libc::getpgrp()
    }
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// `SIGSEGV` for 11, and so on.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("SIG{sig}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes() {
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(ExitStatus::Signal(9).shell_code(), 137);
        assert_eq!(ExitStatus::Code(3).shell_code(), 3);
        assert!(!hostname().is_empty());
    }
}

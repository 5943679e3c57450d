//! Saving: a process writes an image of itself.
//!
//! [`checkpoint`] is called from an ordinary thread context (any thread,
//! not from a signal handler). It sends the checkpoint signal to its own
//! thread; the image is written by that signal's handler. Why a handler:
//! the kernel then saves the thread's complete user state (general
//! registers, flags, the XSAVE area, the signal mask, the alternate stack)
//! in a signal frame on the thread's stack, and that frame is part of the
//! memory we save. The restorer loads the memory and does rt_sigreturn
//! with the stack pointer on that frame: the thread continues right after
//! the tgkill in [`checkpoint`], which finds the "restarted" word the
//! restorer set. Every other thread is stopped the same way (the handler
//! records where its frame is and waits on a futex), so all threads are
//! resumed by the same mechanism.
//!
//! Inside the handler nothing allocates or takes a lock: the heap, and
//! everything else, is saved as the program left it. The work space is a
//! shared anonymous mapping made before the signal (its own VMA: the kernel
//! never merges a shared anonymous mapping with another), left out of the
//! image.

use crate::hash::Hasher;
use crate::image::{self, Enc, KSigaction, Process, Region, Thread, HEADER_SIZE};
use crate::machine::Machine;
use core::fmt::Write as _;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering::*};

/// The signal that stops threads for a checkpoint: SIGRTMAX - 3 (61 with
/// glibc), a real-time signal programs rarely use, or
/// GRIDMPI_CHECKPOINT_SIGNAL (a number) for a program that uses it. A
/// program that blocks it in a thread makes the checkpoint fail after
/// [`STOP_TIMEOUT_MS`]. Not for the handler: it reads the environment.
pub fn checkpoint_signal() -> Result<i32, String> {
    match std::env::var("GRIDMPI_CHECKPOINT_SIGNAL") {
        Ok(v) => match v.parse::<i32>() {
            Ok(s) if (1..=64).contains(&s) && s != libc::SIGKILL && s != libc::SIGSTOP => Ok(s),
            _ => Err(format!("gridmpi_checkpoint: GRIDMPI_CHECKPOINT_SIGNAL={v} is not a signal number we can catch")),
        },
        Err(_) => Ok(libc::SIGRTMAX() - 3),
    }
}
/// The signal of the checkpoint under way, for the handler.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

pub const STOP_TIMEOUT_MS: u64 = 10_000;
const MAX_THREADS: usize = 1024;
const PAGE: usize = 4096;
/// Work space: maps text, meta section, copy buffer, directory listings.
const MAPS_BUF: usize = 4 << 20;
const META_BUF: usize = 4 << 20;
const COPY_BUF: usize = 1 << 20;
const DIR_BUF: usize = 64 << 10;
const TIDS_MAX: usize = MAX_THREADS;
/// Runs of saved pages, (address, length): 256 Ki of them.
const RUNS_MAX: usize = 256 << 10;
const SCRATCH_LEN: usize = MAPS_BUF + META_BUF + COPY_BUF + DIR_BUF + TIDS_MAX * 4 + RUNS_MAX * 16;

/// The restorer writes the address of its own work area into `area`
/// (nonzero) and its length into `len`: checkpoint() sees it returned in
/// a restarted process and unmaps that area. `handover` and
/// `handover_len` say where in that area the restorer left its own
/// environment (see [`handover`]).
#[repr(C)]
pub struct RestartWords {
    pub area: AtomicU64,
    pub len: AtomicU64,
    pub handover: AtomicU64,
    pub handover_len: AtomicU64,
}
#[no_mangle]
pub static GRIDMPI_CKPT_RESTART: RestartWords = RestartWords {
    area: AtomicU64::new(0),
    len: AtomicU64::new(0),
    handover: AtomicU64::new(0),
    handover_len: AtomicU64::new(0),
};

/// The environment of the gridmpi-restore that rebuilt this process, as
/// `KEY=VALUE` pairs (empty in a process that was never restored). The
/// process's own environment is the image's, its first job's; this is how
/// the new job reaches it (its launcher's `PMI_FD`, already moved to a
/// number the image did not use, and the rest of what it set).
pub fn handover() -> Vec<(String, String)> {
    let h = HANDOVER.lock().unwrap_or_else(|p| p.into_inner());
    h.split(|&b| b == 0)
        .filter_map(|kv| {
            let s = std::str::from_utf8(kv).ok()?;
            let (k, v) = s.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}
static HANDOVER: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

/// The restorer area of the restart this process came from (see checkpoint_locked).
static STALE_AREA: AtomicU64 = AtomicU64::new(0);
static STALE_LEN: AtomicU64 = AtomicU64::new(0);
static BUSY: AtomicBool = AtomicBool::new(false);
static WRITER_TID: AtomicI32 = AtomicI32::new(0);
/// futex words
static GENERATION: AtomicU32 = AtomicU32::new(0);
static RELEASED: AtomicU32 = AtomicU32::new(0);
static ARRIVED: AtomicU32 = AtomicU32::new(0);
static DEPARTED: AtomicU32 = AtomicU32::new(0);
static NEXT_SLOT: AtomicU32 = AtomicU32::new(0);

struct Slot {
    tid: AtomicU32,
    uc: AtomicU64,
    fs: AtomicU64,
    tid_addr: AtomicU64,
    rhead: AtomicU64,
    rlen: AtomicU64,
    name: [AtomicU64; 2],
}
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    tid: AtomicU32::new(0),
    uc: AtomicU64::new(0),
    fs: AtomicU64::new(0),
    tid_addr: AtomicU64::new(0),
    rhead: AtomicU64::new(0),
    rlen: AtomicU64::new(0),
    name: [AtomicU64::new(0), AtomicU64::new(0)],
};
static SLOTS: [Slot; MAX_THREADS] = [EMPTY; MAX_THREADS];

/// The writer's job, set before the signal is raised.
static JOB_FD: AtomicI32 = AtomicI32::new(-1);
static JOB_SCRATCH: AtomicU64 = AtomicU64::new(0);
static RSEQ_OFFSET: AtomicU64 = AtomicU64::new(0);
static RSEQ_LEN: AtomicU32 = AtomicU32::new(0);
/// 0 done, 1 failed (message in ERR), 2 the handler did not run
static RESULT: AtomicI32 = AtomicI32::new(2);
static ERR_LEN: AtomicU32 = AtomicU32::new(0);
static mut ERR: [u8; 512] = [0; 512];
/// what the last image held, for the caller to report
static STAT_BYTES: AtomicU64 = AtomicU64::new(0);
static STAT_REGIONS: AtomicU32 = AtomicU32::new(0);
static STAT_THREADS: AtomicU32 = AtomicU32::new(0);

/// How checkpoint() returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The image is written; this is the original process.
    Checkpointed {
        bytes: u64,
        regions: u32,
        threads: u32,
    },
    /// This is a process gridmpi-restore rebuilt from an image.
    Restarted,
}

/// Write an image of the calling process to `path` (through `path.tmp`,
/// renamed when complete, so an interrupted checkpoint leaves any previous
/// image at `path` intact). Call it from a thread, not from a signal
/// handler. Returns twice, in a sense: in this process with
/// `Checkpointed`, and in every process restored from the image with
/// `Restarted`.
pub fn checkpoint(path: &str) -> Result<Outcome, String> {
    if BUSY.swap(true, AcqRel) {
        return Err("gridmpi_checkpoint: a checkpoint is already being taken".into());
    }
    let r = checkpoint_locked(path);
    BUSY.store(false, Release);
    r
}

fn checkpoint_locked(path: &str) -> Result<Outcome, String> {
    let tmp = format!("{path}.tmp");
    let ctmp = CString::new(tmp.clone())
        .map_err(|_| format!("gridmpi_checkpoint: the path {path:?} holds a NUL byte"))?;
    // SAFETY: plain system calls on values we own.
    let fd = unsafe {
        libc::open(
            ctmp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(format!(
            "gridmpi_checkpoint: cannot create {tmp}: {}",
            std::io::Error::last_os_error()
        ));
    }
    let scratch = map_scratch().map_err(|e| {
        close(fd);
        format!("gridmpi_checkpoint: cannot map {SCRATCH_LEN} bytes of work space: {e}")
    })?;
    find_rseq();
    let sig = match checkpoint_signal() {
        Ok(s) => s,
        Err(e) => {
            close(fd);
            unmap(scratch, SCRATCH_LEN);
            return Err(e);
        }
    };
    SIGNAL.store(sig, SeqCst);
    let (old_action, old_mask) = match install_handler(sig) {
        Ok(v) => v,
        Err(e) => {
            close(fd);
            unmap(scratch, SCRATCH_LEN);
            return Err(format!(
                "gridmpi_checkpoint: cannot install the handler of signal {sig}: {e}"
            ));
        }
    };
    JOB_FD.store(fd, Relaxed);
    JOB_SCRATCH.store(scratch as u64, Relaxed);
    RESULT.store(2, Relaxed);
    ARRIVED.store(0, Relaxed);
    DEPARTED.store(0, Relaxed);
    NEXT_SLOT.store(0, Relaxed);
    GENERATION.fetch_add(1, Relaxed);
    WRITER_TID.store(gettid(), SeqCst);

    raise_self(sig);
    // Here twice: after the handler wrote the image, and in a restored
    // process, where the restorer jumped back to right after raise_self.

    let area = GRIDMPI_CKPT_RESTART.area.swap(0, SeqCst);
    if area != 0 {
        // The restorer's code, ops and stack. Not unmapped here: the
        // other restored threads may still be on their way out of the
        // blob (clone, then rt_sigreturn, from code in that area). The
        // next checkpoint unmaps it once every thread sits in our handler.
        STALE_AREA.store(area, SeqCst);
        STALE_LEN.store(GRIDMPI_CKPT_RESTART.len.swap(0, SeqCst), SeqCst);
        // The handover lies in that area: copy it out while it is mapped.
        let at = GRIDMPI_CKPT_RESTART.handover.swap(0, SeqCst);
        let n = GRIDMPI_CKPT_RESTART.handover_len.swap(0, SeqCst) as usize;
        let mut h = HANDOVER.lock().unwrap_or_else(|p| p.into_inner());
        h.clear();
        if at != 0 {
            // SAFETY: the restorer wrote `n` bytes at `at`, inside its
            // area, which stays mapped until the next checkpoint.
            h.extend_from_slice(unsafe { std::slice::from_raw_parts(at as *const u8, n) });
        }
        drop(h);
        // (the work space was not restored: it is not in the image; the
        // restorer's area may even sit where it was, so leave it alone)
        WRITER_TID.store(0, SeqCst);
        restore_handler(sig, &old_action, &old_mask);
        return Ok(Outcome::Restarted);
    }
    // The other threads leave their handlers before we reuse the slots.
    let arrived = ARRIVED.load(Acquire);
    while DEPARTED.load(Acquire) < arrived {
        futex_wait(&DEPARTED, DEPARTED.load(Acquire), Some(100));
    }
    WRITER_TID.store(0, SeqCst);
    restore_handler(sig, &old_action, &old_mask);
    unmap(scratch, SCRATCH_LEN);
    let result = RESULT.load(Acquire);
    let err = match result {
        0 => None,
        2 => Some(format!(
            "gridmpi_checkpoint: signal {sig} was not delivered to the calling thread"
        )),
        _ => {
            let n = ERR_LEN.load(Acquire) as usize;
            // SAFETY: the handler that wrote ERR has returned.
            let msg =
                unsafe { String::from_utf8_lossy(&(&*std::ptr::addr_of!(ERR))[..n]).into_owned() };
            Some(format!("gridmpi_checkpoint: {msg}"))
        }
    };
    if let Some(e) = err {
        close(fd);
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // SAFETY: our own descriptor.
    if unsafe { libc::fsync(fd) } != 0 {
        let e = std::io::Error::last_os_error();
        close(fd);
        return Err(format!("gridmpi_checkpoint: cannot flush {tmp}: {e}"));
    }
    close(fd);
    std::fs::rename(&tmp, path)
        .map_err(|e| format!("gridmpi_checkpoint: cannot rename {tmp} to {path}: {e}"))?;
    Ok(Outcome::Checkpointed {
        bytes: STAT_BYTES.load(Relaxed),
        regions: STAT_REGIONS.load(Relaxed),
        threads: STAT_THREADS.load(Relaxed),
    })
}

/// Checkpoint from a thread of our own after `delay`, with the program's
/// threads stopped wherever they are; then SIGKILL the process if
/// `then_kill` (a crash right after the checkpoint). In a process restored
/// from that image the thread just ends. A failed checkpoint exits the
/// process (status 3): whoever asked for it would otherwise never know.
pub fn checkpoint_after(
    delay: std::time::Duration,
    path: String,
    then_kill: bool,
) -> Result<(), String> {
    std::thread::Builder::new()
        .name("gridmpi-ckpt".into())
        .spawn(move || {
            std::thread::sleep(delay);
            match checkpoint(&path) {
                Ok(Outcome::Checkpointed { .. }) if then_kill => {
                    // SAFETY: kill of our own process.
                    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(3);
                }
            }
        })
        .map(|_| ())
        .map_err(|e| format!("gridmpi_checkpoint_after: cannot start its thread: {e}"))
}

/// glibc's rseq area (glibc 2.35+): the restorer registers it again for
/// each thread, so sched_getcpu() and friends see fresh values.
fn find_rseq() {
    // SAFETY: dlsym of data symbols glibc exports; read once.
    unsafe {
        let off = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()) as *const isize;
        let size = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()) as *const u32;
        if off.is_null() || size.is_null() || *size == 0 {
            RSEQ_LEN.store(0, Relaxed);
            return;
        }
        RSEQ_OFFSET.store(*off as u64, Relaxed);
        // glibc registers its whole area (32 bytes, the original struct rseq)
        RSEQ_LEN.store((*size).max(32), Relaxed);
    }
}

fn map_scratch() -> std::io::Result<*mut u8> {
    // SAFETY: a fresh mapping no one else knows.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            SCRATCH_LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p as *mut u8)
}

fn unmap(p: *mut u8, len: usize) {
    // SAFETY: a mapping we made (or the restorer made for us).
    unsafe { libc::munmap(p as *mut _, len) };
}

fn close(fd: i32) {
    // SAFETY: our own descriptor.
    unsafe { libc::close(fd) };
}

fn gettid() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Install the checkpoint handler (SA_SIGINFO for the ucontext, every
/// signal blocked while it runs so no program handler changes memory
/// during the write) and unblock the signal in this thread.
fn install_handler(sig: i32) -> std::io::Result<(libc::sigaction, libc::sigset_t)> {
    // SAFETY: sigaction and pthread_sigmask on structures we own.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigfillset(&mut sa.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, &sa, &mut old) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        let mut oldmask: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, &mut oldmask);
        Ok((old, oldmask))
    }
}

fn restore_handler(sig: i32, old: &libc::sigaction, oldmask: &libc::sigset_t) {
    // SAFETY: putting back what install_handler saved.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, oldmask, std::ptr::null_mut());
        libc::sigaction(sig, old, std::ptr::null_mut());
    }
}

/// tgkill to the calling thread: the handler runs before this returns.
fn raise_self(sig: i32) {
    // SAFETY: signals our own thread.
    unsafe {
        libc::syscall(libc::SYS_tgkill, libc::getpid(), gettid(), sig);
    }
}

fn futex_wait(word: &AtomicU32, val: u32, timeout_ms: Option<u64>) {
    let ts = timeout_ms.map(|ms| libc::timespec {
        tv_sec: (ms / 1000) as i64,
        tv_nsec: ((ms % 1000) * 1_000_000) as i64,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: FUTEX_WAIT on a word we own; returns at once if it changed.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            val,
            tsp,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a word we own.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

fn monotonic_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: fills ts.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// What the kernel knows of the calling thread that its signal frame does
/// not hold: the FS base (TLS), the clear_child_tid address, the robust
/// futex list.
fn this_thread(uc: *mut libc::c_void) -> Thread {
    let mut t = Thread {
        tid: gettid() as u32,
        ucontext: uc as u64,
        ..Default::default()
    };
    // SAFETY: each call fills one u64 or pair we own.
    unsafe {
        let mut fs: u64 = 0;
        libc::syscall(
            libc::SYS_arch_prctl,
            0x1003, /* ARCH_GET_FS */
            &mut fs as *mut u64,
        );
        t.fs_base = fs;
        let mut ta: u64 = 0;
        if libc::prctl(libc::PR_GET_TID_ADDRESS, &mut ta as *mut u64) == 0 {
            t.tid_address = ta;
        }
        let mut head: u64 = 0;
        let mut len: usize = 0;
        if libc::syscall(
            libc::SYS_get_robust_list,
            0,
            &mut head as *mut u64,
            &mut len as *mut usize,
        ) == 0
        {
            t.robust_head = head;
            t.robust_len = len as u64;
        }
    }
    // its name (PR_GET_NAME: no file to open, 16 bytes NUL padded)
    // SAFETY: PR_GET_NAME writes at most 16 bytes into the array.
    unsafe { libc::prctl(libc::PR_GET_NAME, t.name.as_mut_ptr()) };
    t.name[15] = 0;
    t
}

/// The checkpoint signal's handler, in every thread.
extern "C" fn on_signal(_sig: i32, _info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let saved_errno = errno();
    if gettid() == WRITER_TID.load(SeqCst) {
        let ok = write_image(uc);
        RESULT.store(if ok { 0 } else { 1 }, Release);
        RELEASED.store(GENERATION.load(Relaxed), Release);
        futex_wake(&RELEASED);
    } else if WRITER_TID.load(SeqCst) != 0 {
        // Stopped for the writer: say where our frame is, wait until the
        // image is written. A restored copy of this thread never runs this
        // wait's end: it starts at rt_sigreturn on the frame.
        let gen = GENERATION.load(Acquire);
        let t = this_thread(uc);
        let i = NEXT_SLOT.fetch_add(1, AcqRel) as usize;
        if i < MAX_THREADS {
            let s = &SLOTS[i];
            s.tid.store(t.tid, Relaxed);
            s.uc.store(t.ucontext, Relaxed);
            s.fs.store(t.fs_base, Relaxed);
            s.tid_addr.store(t.tid_address, Relaxed);
            s.rhead.store(t.robust_head, Relaxed);
            s.rlen.store(t.robust_len, Relaxed);
            s.name[0].store(u64::from_ne_bytes(t.name[..8].try_into().unwrap()), Relaxed);
            s.name[1].store(u64::from_ne_bytes(t.name[8..].try_into().unwrap()), Relaxed);
        }
        ARRIVED.fetch_add(1, Release);
        futex_wake(&ARRIVED);
        loop {
            let r = RELEASED.load(Acquire);
            if r.wrapping_sub(gen) as i32 >= 0 {
                break;
            }
            futex_wait(&RELEASED, r, None);
        }
        DEPARTED.fetch_add(1, Release);
        futex_wake(&DEPARTED);
    }
    set_errno(saved_errno);
}

fn errno() -> i32 {
    // SAFETY: glibc's thread-local errno.
    unsafe { *libc::__errno_location() }
}
fn set_errno(v: i32) {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = v }
}

/// An error message into the static buffer, without allocating.
struct ErrW {
    n: usize,
}
impl core::fmt::Write for ErrW {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        // SAFETY: only the writer thread's handler writes ERR.
        let buf = unsafe { &mut *std::ptr::addr_of_mut!(ERR) };
        let take = s.len().min(buf.len() - self.n);
        buf[self.n..self.n + take].copy_from_slice(&s.as_bytes()[..take]);
        self.n += take;
        Ok(())
    }
}
macro_rules! fail {
    ($($arg:tt)*) => {{
        let mut w = ErrW { n: 0 };
        let _ = write!(w, $($arg)*);
        ERR_LEN.store(w.n as u32, Release);
        return false;
    }};
}

/// The work space, cut in pieces.
struct Scratch {
    maps: &'static mut [u8],
    meta: &'static mut [u8],
    copy: &'static mut [u8],
    dir: &'static mut [u8],
    tids: &'static mut [u32],
    runs: &'static mut [[u64; 2]],
}

fn scratch() -> Scratch {
    let base = JOB_SCRATCH.load(Relaxed) as *mut u8;
    // SAFETY: the mapping is SCRATCH_LEN bytes, ours alone for the
    // duration of the handler; the pieces do not overlap.
    unsafe {
        let mut p = base;
        let maps = std::slice::from_raw_parts_mut(p, MAPS_BUF);
        p = p.add(MAPS_BUF);
        let meta = std::slice::from_raw_parts_mut(p, META_BUF);
        p = p.add(META_BUF);
        let copy = std::slice::from_raw_parts_mut(p, COPY_BUF);
        p = p.add(COPY_BUF);
        let dir = std::slice::from_raw_parts_mut(p, DIR_BUF);
        p = p.add(DIR_BUF);
        let tids = std::slice::from_raw_parts_mut(p as *mut u32, TIDS_MAX);
        p = p.add(TIDS_MAX * 4);
        // (8-byte aligned: everything before is a multiple of 8 bytes)
        let runs = std::slice::from_raw_parts_mut(p as *mut [u64; 2], RUNS_MAX);
        Scratch {
            maps,
            meta,
            copy,
            dir,
            tids,
            runs,
        }
    }
}

/// Read a whole small file (/proc) into buf; the length read, or -errno.
fn read_file(path: &core::ffi::CStr, buf: &mut [u8]) -> Result<usize, i32> {
    // SAFETY: open/read/close on a buffer we own.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let mut n = 0;
        while n < buf.len() {
            let r = libc::read(fd, buf[n..].as_mut_ptr() as *mut _, buf.len() - n);
            if r < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                let e = errno();
                libc::close(fd);
                return Err(e);
            }
            if r == 0 {
                break;
            }
            n += r as usize;
        }
        libc::close(fd);
        if n == buf.len() {
            return Err(libc::ENOBUFS);
        }
        Ok(n)
    }
}

fn readlink(path: &core::ffi::CStr, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: readlink into a buffer we own.
    let r = unsafe { libc::readlink(path.as_ptr(), buf.as_mut_ptr() as *mut _, buf.len()) };
    if r < 0 || r as usize >= buf.len() {
        None
    } else {
        Some(r as usize)
    }
}

/// "/proc/self/<dir>/<n>" (or "/proc/self/<dir>/<n>/<leaf>") into buf as a C string.
fn proc_path<'a>(buf: &'a mut [u8; 96], dir: &str, n: u64, leaf: &str) -> &'a core::ffi::CStr {
    let mut w = 0;
    let mut put = |b: &[u8], buf: &mut [u8; 96]| {
        buf[w..w + b.len()].copy_from_slice(b);
        w += b.len();
    };
    put(b"/proc/self/", buf);
    put(dir.as_bytes(), buf);
    put(b"/", buf);
    let mut digits = [0u8; 20];
    let mut k = 20;
    let mut v = n;
    loop {
        k -= 1;
        digits[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(&digits[k..], buf);
    if !leaf.is_empty() {
        put(b"/", buf);
        put(leaf.as_bytes(), buf);
    }
    buf[w] = 0;
    core::ffi::CStr::from_bytes_with_nul(&buf[..=w]).unwrap()
}

/// The numeric entries of a /proc directory, one callback each.
fn list_dir(path: &core::ffi::CStr, buf: &mut [u8], mut f: impl FnMut(u64)) -> Result<(), i32> {
    // SAFETY: getdents64 into a buffer we own; records parsed within it.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(errno());
        }
        loop {
            let n = libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len());
            if n < 0 {
                let e = errno();
                libc::close(fd);
                return Err(e);
            }
            if n == 0 {
                break;
            }
            let mut off = 0usize;
            while off < n as usize {
                // struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name
                let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                let name = &buf[off + 19..off + reclen];
                let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
                if let Some(v) = parse_dec(name) {
                    f(v);
                }
                off += reclen;
            }
        }
        libc::close(fd);
        Ok(())
    }
}

fn parse_dec(b: &[u8]) -> Option<u64> {
    if b.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}

fn parse_radix(b: &[u8], radix: u64) -> Option<u64> {
    if b.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        } as u64;
        if d >= radix {
            return None;
        }
        v = v.checked_mul(radix)?.checked_add(d)?;
    }
    Some(v)
}

/// The value after "<key>:" in a /proc "key:\tvalue" file.
fn proc_field<'a>(text: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    for line in text.split(|&c| c == b'\n') {
        if line.len() > key.len() && line.starts_with(key) && line[key.len()] == b':' {
            let v = &line[key.len() + 1..];
            let s = v
                .iter()
                .position(|&c| c != b' ' && c != b'\t')
                .unwrap_or(v.len());
            return Some(&v[s..]);
        }
    }
    None
}

/// Stop every other thread: signal each (again for threads born
/// meanwhile) and wait until all sit in their handlers.
fn stop_threads(me: i32, s: &mut Scratch, sig: i32) -> bool {
    let pid = unsafe { libc::getpid() };
    let mut nsig = 0usize;
    let mut delivered = 0u32;
    for _round in 0..8 {
        let mut new = 0;
        let tids = &mut *s.tids;
        let mut overflow = false;
        let r = list_dir(c"/proc/self/task", s.dir, |tid| {
            let tid = tid as u32;
            if tid as i32 == me || tids[..nsig].contains(&tid) {
                return;
            }
            if nsig == TIDS_MAX {
                overflow = true;
                return;
            }
            tids[nsig] = tid;
            nsig += 1;
            // SAFETY: signals one thread of our process.
            if unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) } == 0 {
                delivered += 1;
            }
            new += 1;
        });
        if let Err(e) = r {
            fail!("cannot list /proc/self/task: errno {e}");
        }
        if overflow {
            fail!("more than {TIDS_MAX} threads");
        }
        // Wait for the threads signalled so far.
        let t0 = monotonic_ms();
        loop {
            let a = ARRIVED.load(Acquire);
            if a >= delivered {
                break;
            }
            if monotonic_ms() - t0 > STOP_TIMEOUT_MS {
                fail!(
                    "{} of {} threads did not stop within {} ms (does a thread block signal {}?)",
                    delivered - a,
                    delivered,
                    STOP_TIMEOUT_MS,
                    sig
                );
            }
            futex_wait(&ARRIVED, a, Some(100));
        }
        if new == 0 {
            return true;
        }
    }
    fail!("threads kept being created while stopping them")
}

/// The handler's work in the writer thread. False: ERR says why.
fn write_image(uc: *mut libc::c_void) -> bool {
    let me = gettid();
    let sig = SIGNAL.load(SeqCst);
    let mut s = scratch();
    if !stop_threads(me, &mut s, sig) {
        return false;
    }
    // Every thread is in this handler: none is still in the restorer's
    // blob, whose area can go (it is not part of the program).
    let stale = STALE_AREA.swap(0, SeqCst);
    if stale != 0 {
        unmap(stale as *mut u8, STALE_LEN.swap(0, SeqCst) as usize);
    }
    let fd = JOB_FD.load(Relaxed);
    let nthreads = (NEXT_SLOT.load(Acquire) as usize).min(MAX_THREADS);
    STAT_THREADS.store(nthreads as u32 + 1, Relaxed);

    // --- the meta section ---
    let mut e = Enc::new(s.meta);
    let mut p = Process {
        pid: unsafe { libc::getpid() } as u32,
        restarted_flag: std::ptr::addr_of!(GRIDMPI_CKPT_RESTART) as u64,
        rseq_offset: RSEQ_OFFSET.load(Relaxed),
        rseq_len: RSEQ_LEN.load(Relaxed),
        writer: 0,
        ..Default::default()
    };
    // /proc/self/stat fields 26-28 and 45-51 (man 5 proc), brk from brk(0)
    let n = match read_file(c"/proc/self/stat", s.maps) {
        Ok(n) => n,
        Err(e) => fail!("cannot read /proc/self/stat: errno {e}"),
    };
    let stat = &s.maps[..n];
    let after = match stat.iter().rposition(|&c| c == b')') {
        Some(i) => &stat[i + 2..],
        None => fail!("cannot parse /proc/self/stat"),
    };
    let mut fields = [0u64; 53];
    for (i, f) in after.split(|&c| c == b' ').enumerate() {
        // field 3 is the first after the command
        if i + 3 < fields.len() {
            fields[i + 3] = parse_dec(f.strip_suffix(b"\n").unwrap_or(f)).unwrap_or(0);
        }
    }
    let brk = unsafe { libc::syscall(libc::SYS_brk, 0) } as u64;
    p.mm = [
        fields[26], fields[27], fields[45], fields[46], fields[47], brk, fields[28], fields[48],
        fields[49], fields[50], fields[51],
    ];
    // comm and cwd: written straight into the encoder (Process holds Vecs
    // for the decoder; here we must not allocate)
    e.u32(p.pid);
    e.u64(p.restarted_flag);
    e.u64(p.rseq_offset);
    e.u32(p.rseq_len);
    for v in p.mm {
        e.u64(v);
    }
    let comm_len = read_file(c"/proc/self/comm", s.dir).unwrap_or(0);
    let comm = &s.dir[..comm_len];
    e.name(comm.strip_suffix(b"\n").unwrap_or(comm));
    match readlink(c"/proc/self/cwd", s.dir) {
        Some(n) => e.name(&s.dir[..n]),
        None => fail!("cannot read /proc/self/cwd (a deleted working directory?)"),
    }
    e.u32(0); // the writer is thread 0

    // threads: the writer first
    e.u32(nthreads as u32 + 1);
    this_thread(uc).encode(&mut e);
    for sl in SLOTS.iter().take(nthreads) {
        Thread {
            tid: sl.tid.load(Relaxed),
            ucontext: sl.uc.load(Relaxed),
            fs_base: sl.fs.load(Relaxed),
            tid_address: sl.tid_addr.load(Relaxed),
            robust_head: sl.rhead.load(Relaxed),
            robust_len: sl.rlen.load(Relaxed),
            name: {
                let mut n = [0u8; 16];
                n[..8].copy_from_slice(&sl.name[0].load(Relaxed).to_ne_bytes());
                n[8..].copy_from_slice(&sl.name[1].load(Relaxed).to_ne_bytes());
                n
            },
        }
        .encode(&mut e);
    }

    // signal actions, as the kernel holds them (the restorer gives them
    // back with rt_sigaction, restorer trampolines included)
    e.u32(64);
    for signo in 1..=64 {
        let mut a = KSigaction::default();
        if signo != libc::SIGKILL && signo != libc::SIGSTOP {
            // SAFETY: reads the action into a struct of the kernel's layout.
            unsafe {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    signo,
                    std::ptr::null::<KSigaction>(),
                    &mut a as *mut KSigaction,
                    8,
                )
            };
        }
        image::encode_sigaction(&mut e, &a);
    }

    // open files
    let at = e.reserve_u32();
    let mut nfiles = 0u32;
    // (the descriptors' numbers go in the runs table, unused until the
    // regions below)
    let fds = &mut *s.runs;
    let mut nfds = 0;
    let mut too_many = false;
    if let Err(er) = list_dir(c"/proc/self/fd", s.dir, |fdn| {
        if nfds < fds.len() {
            fds[nfds][0] = fdn;
            nfds += 1;
        } else {
            too_many = true;
        }
    }) {
        fail!("cannot list /proc/self/fd: errno {er}");
    }
    if too_many {
        fail!("more than {} open file descriptors", fds.len());
    }
    for fdn in (0..nfds).map(|i| fds[i][0] as u32) {
        if fdn as i32 == fd {
            continue;
        }
        let mut pb = [0u8; 96];
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat into a struct we own; a closed fd (our listing's
        // own) fails and is skipped.
        if unsafe { libc::fstat(fdn as i32, &mut st) } != 0 {
            continue;
        }
        let mut linkbuf = [0u8; 4096];
        let ln = match readlink(proc_path(&mut pb, "fd", fdn as u64, ""), &mut linkbuf) {
            Some(n) => n,
            None => continue,
        };
        let link = &linkbuf[..ln];
        let mut infobuf = [0u8; 1024];
        let info_len =
            read_file(proc_path(&mut pb, "fdinfo", fdn as u64, ""), &mut infobuf).unwrap_or(0);
        let info = &infobuf[..info_len];
        let pos = proc_field(info, b"pos").and_then(parse_dec).unwrap_or(0);
        let flags = proc_field(info, b"flags")
            .and_then(|v| parse_radix(v, 8))
            .unwrap_or(0) as u32;
        // regular files and directories (opendir's) can be opened again
        let fmt = st.st_mode & libc::S_IFMT;
        let regular = (fmt == libc::S_IFREG || fmt == libc::S_IFDIR)
            && !link.ends_with(b" (deleted)")
            && link.starts_with(b"/");
        image::encode_file(
            &mut e,
            fdn,
            if regular {
                image::FD_REGULAR
            } else {
                image::FD_OTHER
            },
            flags,
            pos,
            st.st_size as u64,
            link,
        );
        nfiles += 1;
    }
    e.patch_u32(at, nfiles);

    // memory regions
    let maps_len = match read_file(c"/proc/self/maps", s.maps) {
        Ok(n) => n,
        Err(er) => fail!("cannot read /proc/self/maps: errno {er} (more than {MAPS_BUF} bytes?)"),
    };
    let scratch_start = JOB_SCRATCH.load(Relaxed);
    let at = e.reserve_u32();
    let mut nregions = 0u32;
    let mut content_total: u64 = 0;
    // Which pages to save, as runs (address, length) in s.runs: all of a
    // region, except in private anonymous memory (heap, stacks, malloc's
    // mmaps), where a page the program never touched is neither present
    // nor swapped (/proc/self/pagemap) and is zeros: not saved, restored
    // as zeros. Fixed here, before any content is read: the data pass
    // writes exactly these runs.
    let pagemap = unsafe {
        libc::open(
            c"/proc/self/pagemap".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    let mut nruns = 0usize;
    let mut runs_full = false;
    let maps = &s.maps[..maps_len];
    let mut bad = false;
    for_each_region(
        maps,
        |r| {
            if r.start == scratch_start {
                return;
            }
            let (mut kind, content) = classify(&r);
            let (mut fsize, mut fmtime) = (0, 0);
            if kind == image::REGION_PRIVATE_FILE {
                // the path must still name the mapped file (same inode),
                // and we need pagemap to tell written pages from the file's
                match (pagemap >= 0, stat_path(r.name)) {
                    (true, Some(st)) if st.st_ino == r.inode => {
                        fsize = st.st_size as u64;
                        fmtime = st.st_mtime as u64 * 1_000_000_000 + st.st_mtime_nsec as u64;
                    }
                    _ => kind = image::REGION_PRIVATE,
                }
            }
            let first = nruns;
            if content {
                if (kind == image::REGION_PRIVATE && r.inode == 0
                    || kind == image::REGION_PRIVATE_FILE)
                    && pagemap >= 0
                {
                    touched_runs(
                        pagemap,
                        r.start,
                        r.end,
                        s.dir,
                        s.runs,
                        &mut nruns,
                        &mut runs_full,
                        kind == image::REGION_PRIVATE_FILE,
                    );
                } else if nruns < RUNS_MAX {
                    s.runs[nruns] = [r.start, r.end - r.start];
                    nruns += 1;
                } else {
                    runs_full = true;
                }
            }
            let runs = &s.runs[first..nruns];
            let len: u64 = runs.iter().map(|r| r[1]).sum();
            Region::encode_fields(
                &mut e,
                r.start,
                r.end,
                r.prot,
                kind,
                r.flags,
                r.offset,
                fsize,
                fmtime,
                content_total,
                len,
                r.name,
                runs,
                r.start,
            );
            content_total += len;
            nregions += 1;
        },
        &mut bad,
    );
    if pagemap >= 0 {
        close(pagemap);
    }
    if bad {
        fail!("cannot parse /proc/self/maps");
    }
    if runs_full {
        fail!("memory too fragmented: more than {RUNS_MAX} runs of touched pages");
    }
    e.patch_u32(at, nregions);
    if e.overflow {
        fail!("the meta section does not fit in {META_BUF} bytes");
    }
    let meta_len = e.pos;
    let meta = e.written();
    let meta_hash = crate::hash::hash(meta);
    if !pwrite_all(fd, meta, HEADER_SIZE as u64) {
        fail!("cannot write the meta section: errno {}", errno());
    }
    let data_offset = ((HEADER_SIZE + meta_len).div_ceil(PAGE) * PAGE) as u64;

    // --- the data section: the runs' bytes, read through
    // process_vm_readv so a page that cannot be read (a file mapping past
    // the end of its file) is saved as zeros instead of faulting ---
    let mut h = Hasher::new();
    let mut off = data_offset;
    let pid = unsafe { libc::getpid() };
    let mut werr = 0;
    for run in s.runs[..nruns].iter() {
        let (mut a, end) = (run[0], run[0] + run[1]);
        while a < end {
            let want = ((end - a) as usize).min(COPY_BUF);
            let buf = &mut s.copy[..want];
            let mut done = 0usize;
            while done < want {
                let local = libc::iovec {
                    iov_base: buf[done..].as_mut_ptr() as *mut _,
                    iov_len: want - done,
                };
                let remote = libc::iovec {
                    iov_base: (a as usize + done) as *mut _,
                    iov_len: want - done,
                };
                // SAFETY: reads our own memory into our buffer; the kernel
                // checks the remote range and reports a fault as an error.
                let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
                if n > 0 {
                    done += n as usize;
                } else {
                    let end = ((done / PAGE) + 1) * PAGE;
                    buf[done..end.min(want)].fill(0);
                    done = end.min(want);
                }
            }
            h.update(buf);
            if !pwrite_all(fd, buf, off) {
                werr = errno();
                break;
            }
            off += want as u64;
            a += want as u64;
        }
        if werr != 0 {
            break;
        }
    }
    if werr != 0 {
        fail!("cannot write the memory contents: errno {werr}");
    }
    let header = image::Header {
        machine: Machine::current(),
        meta_len: meta_len as u64,
        meta_hash,
        data_offset,
        data_len: content_total,
        data_hash: h.finish(),
    };
    let mut hb = [0u8; HEADER_SIZE];
    image::encode_header(&header, &mut hb);
    if !pwrite_all(fd, &hb, 0) {
        fail!("cannot write the header: errno {}", errno());
    }
    STAT_BYTES.store(data_offset + content_total, Relaxed);
    STAT_REGIONS.store(nregions, Relaxed);
    true
}

/// Append to runs[*n..] the runs of pages of [start, end) that are
/// present or swapped (pagemap bits 63 and 62): the pages the program
/// touched; with `anon_only`, only those that are not the file's pages.
/// If pagemap cannot be read, the rest of the range is one run.
#[allow(clippy::too_many_arguments)]
fn touched_runs(
    pagemap: i32,
    start: u64,
    end: u64,
    buf: &mut [u8],
    runs: &mut [[u64; 2]],
    n: &mut usize,
    full: &mut bool,
    anon_only: bool,
) {
    let per = buf.len() / 8;
    let mut page = start / PAGE as u64;
    let last = end / PAGE as u64;
    let mut open: Option<u64> = None; // start address of the current run
    let mut push = |s: u64, e: u64, n: &mut usize| {
        if *n < runs.len() {
            runs[*n] = [s, e - s];
            *n += 1;
        } else {
            *full = true;
        }
    };
    while page < last {
        let cnt = ((last - page) as usize).min(per);
        // SAFETY: reads into a buffer we own.
        let r = unsafe {
            libc::pread(
                pagemap,
                buf.as_mut_ptr() as *mut _,
                cnt * 8,
                (page * 8) as i64,
            )
        };
        if r != (cnt * 8) as isize {
            // unknown: save the rest of the region
            let s = open.unwrap_or(page * PAGE as u64);
            push(s, end, n);
            return;
        }
        for i in 0..cnt {
            let e = u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap());
            let addr = (page + i as u64) * PAGE as u64;
            // bit 63 present, 62 swapped, 61 a file page (or shared
            // anonymous): in a private file mapping, the pages the program
            // wrote are its anonymous copies
            let touched = if anon_only {
                e & (1 << 62) != 0 || (e & (1 << 63) != 0 && e & (1 << 61) == 0)
            } else {
                e & (3 << 62) != 0
            };
            match (touched, open) {
                (true, None) => open = Some(addr),
                (false, Some(s)) => {
                    push(s, addr, n);
                    open = None;
                }
                _ => {}
            }
        }
        page += cnt as u64;
    }
    if let Some(s) = open {
        push(s, end, n);
    }
}

fn pwrite_all(fd: i32, mut b: &[u8], mut off: u64) -> bool {
    while !b.is_empty() {
        // SAFETY: writes from a buffer we own.
        let n = unsafe { libc::pwrite(fd, b.as_ptr() as *const _, b.len(), off as i64) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        b = &b[n as usize..];
        off += n as u64;
    }
    true
}

/// One line of /proc/self/maps.
pub struct MapLine<'a> {
    pub start: u64,
    pub end: u64,
    pub prot: u32,
    pub shared: bool,
    pub flags: u32,
    pub offset: u64,
    pub inode: u64,
    pub name: &'a [u8],
}

/// Parse /proc/<pid>/maps text ("start-end perms offset dev inode name").
pub fn for_each_region<'a>(maps: &'a [u8], mut f: impl FnMut(MapLine<'a>), bad: &mut bool) {
    for line in maps.split(|&c| c == b'\n') {
        if line.is_empty() {
            continue;
        }
        let mut it = line.splitn(6, |&c| c == b' ');
        let (range, perms, offset, _dev, inode) =
            match (it.next(), it.next(), it.next(), it.next(), it.next()) {
                (Some(a), Some(b), Some(c), Some(d), Some(e)) => (a, b, c, d, e),
                _ => {
                    *bad = true;
                    return;
                }
            };
        let rest = it.next().unwrap_or(b"");
        let name = &rest[rest.iter().position(|&c| c != b' ').unwrap_or(rest.len())..];
        let dash = match range.iter().position(|&c| c == b'-') {
            Some(d) => d,
            None => {
                *bad = true;
                return;
            }
        };
        let (start, end, offset, inode) = match (
            parse_radix(&range[..dash], 16),
            parse_radix(&range[dash + 1..], 16),
            parse_radix(offset, 16),
            parse_dec(inode),
        ) {
            (Some(a), Some(b), Some(c), Some(d)) => (a, b, c, d),
            _ => {
                *bad = true;
                return;
            }
        };
        if perms.len() < 4 {
            *bad = true;
            return;
        }
        let mut prot = 0;
        if perms[0] == b'r' {
            prot |= libc::PROT_READ as u32;
        }
        if perms[1] == b'w' {
            prot |= libc::PROT_WRITE as u32;
        }
        if perms[2] == b'x' {
            prot |= libc::PROT_EXEC as u32;
        }
        let flags = if name == b"[stack]" {
            image::RFLAG_GROWSDOWN
        } else {
            0
        };
        f(MapLine {
            start,
            end,
            prot,
            shared: perms[3] == b's',
            flags,
            offset,
            inode,
            name,
        });
    }
}

pub fn is_special(name: &[u8]) -> bool {
    matches!(
        name,
        b"[vdso]" | b"[vvar]" | b"[vvar_vclock]" | b"[vsyscall]"
    )
}

/// The region's kind, and whether its contents are saved.
fn classify(r: &MapLine) -> (u32, bool) {
    let readable = r.prot & libc::PROT_READ as u32 != 0;
    if is_special(r.name) {
        (image::REGION_SPECIAL, false)
    } else if r.shared {
        if r.inode != 0 && r.name.starts_with(b"/") && !r.name.ends_with(b" (deleted)") {
            (image::REGION_SHARED_FILE, false)
        } else {
            (image::REGION_SHARED_ANON, readable)
        }
    } else if readable
        && r.inode != 0
        && r.name.starts_with(b"/")
        && !r.name.ends_with(b" (deleted)")
    {
        (image::REGION_PRIVATE_FILE, true)
    } else {
        (image::REGION_PRIVATE, readable)
    }
}

/// stat() of a path given as bytes (no allocation: a stack buffer).
fn stat_path(name: &[u8]) -> Option<libc::stat> {
    let mut buf = [0u8; 4096];
    if name.len() >= buf.len() {
        return None;
    }
    buf[..name.len()].copy_from_slice(name);
    // SAFETY: a NUL-terminated path and a struct we own.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::stat(buf.as_ptr() as *const libc::c_char, &mut st) == 0 {
            Some(st)
        } else {
            None
        }
    }
}

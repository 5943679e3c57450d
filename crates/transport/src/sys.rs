//! The system calls the runtime uses, wrapped so that callers stay safe.
//! Every `unsafe` block here calls libc with arguments it owns and checks
//! the result.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_size(r: isize) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Seconds since an arbitrary origin, from CLOCK_MONOTONIC.
/// The result of a non-blocking socket call: the bytes it moved (0: the
/// end of the stream), or None when it would block. An interrupted call
/// is made again.
pub fn nonblocking(mut call: impl FnMut() -> isize) -> io::Result<Option<usize>> {
    loop {
        let n = call();
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => return Ok(None),
            io::ErrorKind::Interrupted => continue,
            _ => return Err(e),
        }
    }
}

pub fn now() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Resolution of [`now`] in seconds.
pub fn tick() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9).max(1e-9)
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if r != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Random bytes from the kernel.
pub use gridmpi_relay::random_bytes;

/// Number of CPUs this process may run on.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The CPUs this process may run on, as a bit mask in 64-bit words (empty
/// if unknown).
pub fn affinity_mask() -> Vec<u64> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        let n = libc::CPU_SETSIZE as usize;
        let mut words = vec![0u64; n / 64];
        for cpu in 0..n {
            if libc::CPU_ISSET(cpu, &set) {
                words[cpu / 64] |= 1 << (cpu % 64);
            }
        }
        while words.last() == Some(&0) {
            words.pop();
        }
        words
    }
}

/// Moves the calling thread to the `index`-th CPU of `mask` (as
/// [`affinity_mask`] gives it), then gives it all of `mask` back. The
/// kernel moves a thread off a CPU its new mask excludes at once, and
/// leaves a running thread where it is: this places the thread without
/// binding it. False if a call failed (the thread then keeps `mask`).
pub fn move_to_cpu(mask: &[u64], index: usize) -> bool {
    let cpus: Vec<usize> = (0..mask.len() * 64).filter(|&c| mask[c / 64] & (1 << (c % 64)) != 0).collect();
    let Some(&cpu) = cpus.get(index) else { return false };
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: cpu_set_t is plain data; the sets are filled by CPU_SET and
    // read by sched_setaffinity for the calling thread (pid 0).
    unsafe {
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        let mut all: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut all);
        }
        let moved = libc::sched_setaffinity(0, size, &one) == 0;
        libc::sched_setaffinity(0, size, &all) == 0 && moved
    }
}

pub fn getpid() -> u32 {
    std::process::id()
}

/// Identifies "this host" for shared memory: the hostname alone is not
/// enough, because network namespaces on one machine (an emulated grid) share
/// /dev/shm but must talk over the network as separate hosts.
pub fn host_key() -> String {
    let netns = std::fs::read_link("/proc/self/ns/net").map(|p| p.display().to_string()).unwrap_or_default();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let h = crate::auth::sha256(format!("{}|{}|{}", hostname(), netns, boot.trim()).as_bytes());
    h[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Put the kernel object `fresh` at descriptor number `at`, closing what
/// was there, so that every copy of the number held elsewhere (a sleeper's
/// raw fd, another epoll set's watch list) names the new object. A process
/// restored from a checkpoint gets its sockets, epoll sets and eventfds
/// back as placeholders (gridmpi-restore leaves /dev/null at their
/// numbers); this is how they are made real again.
pub fn replace_fd(fresh: OwnedFd, at: RawFd) -> io::Result<()> {
    // SAFETY: dup3 of a descriptor we own onto a number of ours.
    cvt(unsafe { libc::dup3(fresh.as_raw_fd(), at, libc::O_CLOEXEC) }).map(|_| ())
}

// ---- epoll -------------------------------------------------------------------

pub struct Epoll {
    fd: OwnedFd,
}

pub const EPOLLIN: u32 = libc::EPOLLIN as u32;
pub const EPOLLOUT: u32 = libc::EPOLLOUT as u32;
pub const EPOLLERR: u32 = libc::EPOLLERR as u32;
pub const EPOLLHUP: u32 = libc::EPOLLHUP as u32;

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall; the fd is owned from here on.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: ev is a valid epoll_event.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) }).map(|_| ())
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    /// A fresh, empty set at this set's descriptor number (see
    /// [`replace_fd`]).
    pub fn renew(&self) -> io::Result<()> {
        let fresh = Epoll::new()?;
        replace_fd(fresh.fd, self.raw_fd())
    }

    pub fn modify(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events, token)
    }

    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Wait on an epoll fd without holding an `Epoll` (used to sleep while
    /// other threads keep the runtime). Events are left for the next poll.
    /// The timeout has epoll_wait's resolution: at least a millisecond (a
    /// finer one, through epoll_pwait2, made no difference to the drain
    /// polls of paced alltoalls, 4-16 KiB).
    pub fn wait_raw(fd: RawFd, timeout: Option<Duration>) {
        let mut ev = [libc::epoll_event { events: 0, u64: 0 }; 1];
        let ms = timeout.map_or(-1, |d| d.as_millis().clamp(1, i32::MAX as u128) as libc::c_int);
        // SAFETY: ev is writable; a stale fd only makes the call fail.
        unsafe { libc::epoll_wait(fd, ev.as_mut_ptr(), 1, ms) };
    }

    /// Wait for events; `None` waits forever. Returns (token, events) pairs.
    pub fn wait(&self, out: &mut Vec<(u64, u32)>, timeout: Option<Duration>) -> io::Result<()> {
        let mut evs: [libc::epoll_event; 64] = [libc::epoll_event { events: 0, u64: 0 }; 64];
        let ms = match timeout {
            None => -1,
            Some(d) => d.as_millis().min(i32::MAX as u128) as libc::c_int,
        };
        // SAFETY: evs is writable for 64 entries.
        let n = unsafe { libc::epoll_wait(self.fd.as_raw_fd(), evs.as_mut_ptr(), 64, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err(e) };
        }
        out.extend(evs[..n as usize].iter().map(|e| (e.u64, e.events)));
        Ok(())
    }
}

// ---- the shared-memory doorbell ------------------------------------------------

/// A unix datagram socket in the abstract namespace, used to wake a rank
/// sleeping in epoll when a shared-memory ring gets data.
pub struct Doorbell {
    fd: OwnedFd,
}

fn abstract_addr(name: &str) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: sockaddr_un is plain data; all-zero is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = name.as_bytes();
    let n = bytes.len().min(addr.sun_path.len() - 1);
    for (i, b) in bytes[..n].iter().enumerate() {
        addr.sun_path[i + 1] = *b as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + 1 + n;
    (addr, len as libc::socklen_t)
}

impl Doorbell {
    fn socket() -> io::Result<OwnedFd> {
        // SAFETY: plain syscall.
        let fd = cvt(unsafe {
            libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
        })?;
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Bind the doorbell of this process under `name`.
    pub fn bind(name: &str) -> io::Result<Doorbell> {
        let fd = Self::socket()?;
        let (addr, len) = abstract_addr(name);
        // SAFETY: addr/len describe a valid sockaddr_un.
        cvt(unsafe { libc::bind(fd.as_raw_fd(), &addr as *const _ as *const libc::sockaddr, len) })?;
        Ok(Doorbell { fd })
    }

    /// An unbound socket for ringing others.
    pub fn sender() -> io::Result<Doorbell> {
        Ok(Doorbell { fd: Self::socket()? })
    }

    pub fn ring(&self, name: &str) {
        let (addr, len) = abstract_addr(name);
        // A full socket buffer means the peer has wake-ups pending already.
        // SAFETY: one-byte buffer and a valid address.
        unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                b"!".as_ptr() as *const libc::c_void,
                1,
                libc::MSG_DONTWAIT,
                &addr as *const _ as *const libc::sockaddr,
                len,
            )
        };
    }

    /// Consume pending wake-ups.
    pub fn drain(&self) {
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: buf is writable.
            let n = unsafe {
                libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT)
            };
            if n <= 0 {
                break;
            }
        }
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

// ---- shared memory files ---------------------------------------------------------

/// A mapped shared-memory file under /dev/shm.
pub struct SharedMap {
    ptr: *mut u8,
    len: usize,
    /// The name while it exists (the creator removes it once peers mapped it).
    path: std::sync::Mutex<Option<CString>>,
}

// SAFETY: the mapping is plain memory; concurrent access is coordinated by
// the atomics that the ring code places in it.
unsafe impl Send for SharedMap {}
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// Create (exclusively) and map a file of `len` bytes.
    pub fn create(name: &str, len: usize) -> io::Result<SharedMap> {
        let path = CString::new(name).map_err(|_| io::Error::other("bad shm name"))?;
        // SAFETY: path is NUL-terminated; the fd is closed below.
        let fd = cvt(unsafe { libc::shm_open(path.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600) })?;
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: fd is valid.
        if let Err(e) = cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) }) {
            unsafe { libc::shm_unlink(path.as_ptr()) };
            return Err(e);
        }
        let map = Self::map(&fd, len);
        match map {
            Ok(ptr) => Ok(SharedMap { ptr, len, path: std::sync::Mutex::new(Some(path)) }),
            Err(e) => {
                unsafe { libc::shm_unlink(path.as_ptr()) };
                Err(e)
            }
        }
    }

    /// Map the file `name` of `len` bytes, creating it if it does not exist
    /// yet (several processes may race to do so: each sizes an empty file,
    /// and all must ask for the same length).
    pub fn create_or_open(name: &str, len: usize) -> io::Result<SharedMap> {
        let path = CString::new(name).map_err(|_| io::Error::other("bad shm name"))?;
        // SAFETY: path is NUL-terminated; the fd is closed on return.
        let fd = cvt(unsafe { libc::shm_open(path.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o600) })?;
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let size = |fd: &OwnedFd| -> io::Result<usize> {
            // SAFETY: st is a valid out-pointer.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
            Ok(st.st_size as usize)
        };
        if size(&fd)? == 0 {
            // SAFETY: fd is valid.
            cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) })?;
        }
        let have = size(&fd)?;
        if have != len {
            return Err(io::Error::other(format!("{name} has {have} bytes, {len} expected")));
        }
        let ptr = Self::map(&fd, len)?;
        Ok(SharedMap { ptr, len, path: std::sync::Mutex::new(Some(path)) })
    }

    /// Map an existing file created by another process.
    pub fn open(name: &str) -> io::Result<SharedMap> {
        let path = CString::new(name).map_err(|_| io::Error::other("bad shm name"))?;
        // SAFETY: path is NUL-terminated.
        let fd = cvt(unsafe { libc::shm_open(path.as_ptr(), libc::O_RDWR, 0) })?;
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: st is a valid out-pointer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
        let len = st.st_size as usize;
        let ptr = Self::map(&fd, len)?;
        Ok(SharedMap { ptr, len, path: std::sync::Mutex::new(None) })
    }

    fn map(fd: &OwnedFd, len: usize) -> io::Result<*mut u8> {
        // SAFETY: mapping a file we hold open, of the given length.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0)
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(p as *mut u8)
    }

    /// Remove the name (the mapping stays valid).
    pub fn unlink(&self) {
        if let Some(p) = self.path.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // SAFETY: p is NUL-terminated.
            unsafe { libc::shm_unlink(p.as_ptr()) };
        }
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        self.unlink();
        // SAFETY: ptr/len came from mmap.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

// ---- single-copy ------------------------------------------------------------------

/// Read from another process's memory into local runs (process_vm_readv).
/// Returns the bytes read; fewer than asked means the read failed part way.
pub fn read_process_memory(pid: u32, remote: u64, local: &[(*mut u8, usize)]) -> io::Result<usize> {
    let mut total = 0usize;
    let mut remote_addr = remote;
    for chunk in local.chunks(512) {
        let iov: Vec<libc::iovec> =
            chunk.iter().map(|&(p, l)| libc::iovec { iov_base: p as *mut libc::c_void, iov_len: l }).collect();
        let want: usize = chunk.iter().map(|c| c.1).sum();
        let mut done = 0usize;
        while done < want {
            // Build the local iovecs for the unread tail of this chunk.
            let mut skip = done;
            let mut liov = Vec::with_capacity(iov.len());
            for v in &iov {
                if skip >= v.iov_len {
                    skip -= v.iov_len;
                    continue;
                }
                liov.push(libc::iovec {
                    iov_base: (v.iov_base as usize + skip) as *mut libc::c_void,
                    iov_len: v.iov_len - skip,
                });
                skip = 0;
            }
            let riov = libc::iovec { iov_base: remote_addr as usize as *mut libc::c_void, iov_len: want - done };
            // SAFETY: local iovecs point into user buffers the engine vouches
            // for; the kernel checks the remote range.
            let n = cvt_size(unsafe { libc::process_vm_readv(pid as libc::pid_t, liov.as_ptr(), liov.len() as libc::c_ulong, &riov, 1, 0) })?;
            if n == 0 {
                return Ok(total);
            }
            done += n;
            total += n;
            remote_addr += n as u64;
        }
    }
    Ok(total)
}

/// Let the job's other ranks on this host (`readers`, their pids) read our
/// memory with process_vm_readv where Yama restricts ptrace to descendants
/// (`kernel.yama.ptrace_scope` = 1), and no one else more than the system
/// already allows: with no Yama restriction nothing is changed; with one
/// reader only that process is named; several readers need "any process of
/// this user" (Yama names one tracer at most). With scope 2 or 3 reads are
/// refused whatever we do and messages go through the rings.
pub fn allow_single_copy_readers(readers: &[u32]) {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").ok().and_then(|s| s.trim().parse::<u32>().ok());
    if scope != Some(1) || readers.is_empty() {
        return;
    }
    let who = match readers {
        [one] => *one as libc::c_ulong,
        _ => libc::PR_SET_PTRACER_ANY,
    };
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, who, 0, 0, 0) };
}

//! Restoring: gridmpi-restore rebuilds a process from its image.
//!
//! The restorer is an ordinary (PIE, dynamically linked) program. It
//! checks the image, opens what must be opened, and chooses an area that
//! is free both in itself and in the image. Into that area it copies a
//! small position-independent routine (the "blob", assembly below), the
//! list of system calls the blob is to make, and a stack. Then it jumps
//! there, and from then on no code of the restorer's own runs: the blob
//! unmaps everything but itself and the vDSO/vvar, moves the vDSO/vvar to
//! where the image had them, maps each region back and reads its contents
//! from the image, sets brk and the other mm fields (PR_SET_MM_MAP, which
//! needs no privilege), puts back the file descriptors and signal actions,
//! the main thread's TLS, tid address and robust list, creates the other
//! threads (clone straight into rt_sigreturn on their saved frames) and
//! finally does rt_sigreturn on the writer thread's frame.
//!
//! The blob interprets a list of [`Op`]s: a system call with its six
//! arguments and how to check its result. A failed check writes the op's
//! message to stderr and exits with the errno as status: there is no way
//! back into the restorer at that point.

use crate::image::{self, Header, Meta, Region};
use crate::machine::Machine;
use crate::save::{for_each_region, is_special};
use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;

const PAGE: u64 = 4096;
/// The top of the user address space with 4-level paging (what mmap hands
/// out without a hint above it).
const TASK_END: u64 = 0x7fff_ffff_f000;
const STACK: u64 = 64 << 10;
/// Keep the area this far from any region of the image, so a stack below
/// which it sits can still grow (the kernel's stack guard gap is 1 MiB).
const MARGIN: u64 = 2 << 20;
const PREAD_CHUNK: u64 = 1 << 30;

const K_ANY: u64 = 0;
const K_EQ: u64 = 1;
/// (the blob also knows K_OK = 2: the result must not be an error)
const K_STORE32: u64 = 3;
const K_POKE: u64 = 4;
const K_SIGRETURN: u64 = 5;
const K_CLONE: u64 = 6;

const RSEQ_SIG: u64 = 0x5305_3053;

/// One step of the blob. The field offsets are the assembly's.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Op {
    nr: u64,      // 0
    a: [u64; 6],  // 8..56
    kind: u64,    // 56
    expect: u64,  // 64: K_EQ's value, K_STORE32's address, K_CLONE's rseq length
    x0: u64,      // 72: K_CLONE's robust list head
    x1: u64,      // 80: K_CLONE's rseq area
    msg: u64,     // 88
    msg_len: u64, // 96
    x2: u64,      // 104: K_CLONE's thread name (a C string), or 0
}
const OP_SIZE: usize = 112;
const _: () = assert!(std::mem::size_of::<Op>() == OP_SIZE);

// The blob: rdi = first op, rsi = number of ops, rsp = its own stack.
// Position independent (relative jumps only), touches nothing outside
// the ops and the memory the ops name.
core::arch::global_asm!(
    r#"
    .pushsection .text.gridmpi_restore_blob,"ax",@progbits
    .globl gridmpi_restore_blob_start
    .globl gridmpi_restore_blob_end
    .p2align 6
gridmpi_restore_blob_start:
    mov r15, rdi
    mov rbx, rsi
2:
    test rbx, rbx
    jz 80f
    mov rcx, qword ptr [r15 + 56]
    cmp rcx, 4
    je 40f
    cmp rcx, 5
    je 50f
    mov rax, qword ptr [r15]
    mov rdi, qword ptr [r15 + 8]
    mov rsi, qword ptr [r15 + 16]
    mov rdx, qword ptr [r15 + 24]
    mov r10, qword ptr [r15 + 32]
    mov r8, qword ptr [r15 + 40]
    mov r9, qword ptr [r15 + 48]
    cmp rcx, 6
    je 60f
    syscall
3:
    mov rcx, qword ptr [r15 + 56]
    cmp rcx, 1
    jne 4f
    cmp rax, qword ptr [r15 + 64]
    jne 90f
    jmp 8f
4:
    test rcx, rcx
    jz 8f
    cmp rax, -4095
    jae 90f
    cmp rcx, 3
    jne 8f
    mov r11, qword ptr [r15 + 64]
    mov dword ptr [r11], eax
8:
    add r15, 112
    dec rbx
    jmp 2b
40:
    mov rdi, qword ptr [r15 + 8]
    mov rsi, qword ptr [r15 + 16]
    mov qword ptr [rdi], rsi
    jmp 8b
50:
    mov rsp, qword ptr [r15 + 8]
    mov eax, 15
    syscall
    jmp 90f
60:
    mov r12, qword ptr [r15 + 72]
    mov r13, qword ptr [r15 + 80]
    mov r14, rsi
    mov rbp, qword ptr [r15 + 64]
    mov r9, qword ptr [r15 + 104]
    syscall
    test rax, rax
    jnz 3b
    mov rdi, r12
    mov esi, 24
    mov eax, 273
    syscall
    test r9, r9
    jz 62f
    mov edi, 15
    mov rsi, r9
    mov eax, 157
    syscall
62:
    test r13, r13
    jz 61f
    mov rdi, r13
    mov rsi, rbp
    xor edx, edx
    mov r10d, 0x53053053
    mov eax, 334
    syscall
61:
    mov rsp, r14
    mov eax, 15
    syscall
    ud2
80:
    mov edi, 70
    mov eax, 231
    syscall
    ud2
90:
    mov r12, rax
    mov edi, 2
    mov rsi, qword ptr [r15 + 88]
    mov rdx, qword ptr [r15 + 96]
    mov eax, 1
    syscall
    mov rdi, r12
    neg rdi
    mov eax, 231
    syscall
    ud2
gridmpi_restore_blob_end:
    .popsection
"#
);

extern "C" {
    static gridmpi_restore_blob_start: u8;
    static gridmpi_restore_blob_end: u8;
}

fn blob_code() -> &'static [u8] {
    // SAFETY: the two labels bound the blob's bytes in our text.
    unsafe {
        let s = std::ptr::addr_of!(gridmpi_restore_blob_start);
        let e = std::ptr::addr_of!(gridmpi_restore_blob_end);
        std::slice::from_raw_parts(s, e as usize - s as usize)
    }
}

/// The restorer's own mappings (the vDSO and vvar are what matters).
struct Own {
    start: u64,
    end: u64,
    name: Vec<u8>,
}

fn own_maps() -> Result<Vec<Own>, String> {
    let text = std::fs::read("/proc/self/maps")
        .map_err(|e| format!("gridmpi-restore: cannot read /proc/self/maps: {e}"))?;
    let mut v = Vec::new();
    let mut bad = false;
    for_each_region(
        &text,
        |r| {
            v.push(Own {
                start: r.start,
                end: r.end,
                name: r.name.to_vec(),
            })
        },
        &mut bad,
    );
    if bad {
        return Err("gridmpi-restore: cannot parse /proc/self/maps".into());
    }
    Ok(v)
}

/// The ops and the data they point to, laid out for an area at `base`.
struct Plan {
    base: u64,
    ops_at: u64,
    data_at: u64,
    data_cap: u64,
    ops: Vec<Op>,
    data: Vec<u8>,
}

impl Plan {
    fn data(&mut self, b: &[u8]) -> u64 {
        let at = self.data_at + self.data.len() as u64;
        self.data.extend_from_slice(b);
        while self.data.len() % 8 != 0 {
            self.data.push(0);
        }
        at
    }
    fn op(&mut self, nr: i64, a: &[u64], kind: u64, expect: u64, what: &str) {
        let msg = format!("gridmpi-restore: {what} failed (the exit status is the errno)\n");
        let m = self.data(msg.as_bytes());
        let mut op = Op {
            nr: nr as u64,
            kind,
            expect,
            msg: m,
            msg_len: msg.len() as u64,
            ..Default::default()
        };
        op.a[..a.len()].copy_from_slice(a);
        self.ops.push(op);
    }
}

/// Reject what this restorer cannot do, before touching anything.
fn check_image(path: &str, h: &Header, m: &Meta, here: &[Own]) -> Result<(), String> {
    let allow = std::env::var("GRIDMPI_RESTORE_OTHER_KERNEL").is_ok_and(|v| v == "1");
    h.machine
        .check_restorable_on(&Machine::current(), path, allow)
        .map_err(|e| format!("gridmpi-restore: {e}"))?;
    // The vDSO/vvar: ours are moved where the image had them, which needs
    // the same pieces with the same sizes (the vDSO reaches its data pages
    // at fixed offsets; the program holds pointers into the vDSO code).
    for r in m
        .regions
        .iter()
        .filter(|r| r.kind == image::REGION_SPECIAL && r.name != b"[vsyscall]")
    {
        let mine = here.iter().find(|o| o.name == r.name);
        match mine {
            Some(o) if o.end - o.start == r.end - r.start => {}
            Some(o) => {
                return Err(format!(
                    "gridmpi-restore: image {path} has a {} of {} bytes, this kernel's is {} bytes: the program's vDSO pointers would not work",
                    r.name_str(),
                    r.end - r.start,
                    o.end - o.start
                ))
            }
            None => return Err(format!("gridmpi-restore: image {path} has a {}, this kernel maps none", r.name_str())),
        }
    }
    for o in here
        .iter()
        .filter(|o| is_special(&o.name) && o.name != b"[vsyscall]")
    {
        if !m.regions.iter().any(|r| r.name == o.name) {
            return Err(format!(
                "gridmpi-restore: this kernel maps a {} the image {path} has no place for",
                String::from_utf8_lossy(&o.name)
            ));
        }
    }
    for r in &m.regions {
        if r.start % PAGE != 0 || r.end % PAGE != 0 || r.end <= r.start {
            return Err(format!(
                "gridmpi-restore: image {path} holds a bad region {:#x}-{:#x}",
                r.start, r.end
            ));
        }
        if r.kind != image::REGION_SPECIAL && r.end > TASK_END {
            return Err(format!(
                "gridmpi-restore: image {path} has a region above the user address space: {:#x}",
                r.start
            ));
        }
        if r.content_offset
            .checked_add(r.content_len)
            .map_or(true, |e| e > h.data_len)
        {
            return Err(format!(
                "gridmpi-restore: image {path}: region {:#x} has contents outside the data section",
                r.start
            ));
        }
    }
    Ok(())
}

/// Stream the data section through the hash.
fn check_data(path: &str, file: &File, h: &Header) -> Result<(), String> {
    let mut hs = crate::hash::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0u64;
    while off < h.data_len {
        let want = (h.data_len - off).min(buf.len() as u64) as usize;
        let n = image::read_full_at(file, &mut buf[..want], h.data_offset + off)
            .map_err(|e| format!("gridmpi-restore: cannot read {path}: {e}"))?;
        if n != want {
            return Err(format!("gridmpi-restore: {path} is truncated: the memory contents need {} bytes, {} are there", h.data_len, off + n as u64));
        }
        hs.update(&buf[..n]);
        off += n as u64;
    }
    if hs.finish() != h.data_hash {
        return Err(format!("gridmpi-restore: {path}: the memory contents' checksum does not match (the image is damaged)"));
    }
    Ok(())
}

/// An address for `len` bytes free in the image (with MARGIN around its
/// regions) and free here; the area is mapped read-write.
fn choose_area(m: &Meta, len: u64) -> Result<u64, String> {
    let mut busy: Vec<(u64, u64)> = m
        .regions
        .iter()
        .map(|r| (r.start.saturating_sub(MARGIN), r.end.saturating_add(MARGIN)))
        .collect();
    busy.push((0, 1 << 24)); // low memory: mmap_min_addr, non-PIE programs
    busy.sort();
    let mut cursor = 0u64;
    for (s, e) in busy
        .iter()
        .copied()
        .chain(std::iter::once((TASK_END, TASK_END)))
    {
        let mut try_at = cursor;
        while try_at + len <= s.min(TASK_END) {
            // SAFETY: MAP_FIXED_NOREPLACE never replaces a mapping.
            let p = unsafe {
                libc::mmap(
                    try_at as *mut _,
                    len as usize,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED && p as u64 == try_at {
                return Ok(try_at);
            }
            if p != libc::MAP_FAILED {
                unsafe { libc::munmap(p, len as usize) };
            }
            try_at += len.max(1 << 20);
            if try_at > cursor + (64 << 20) {
                break; // this gap is crowded here; try the next
            }
        }
        cursor = cursor.max(e);
    }
    Err("gridmpi-restore: no room for the restorer's code that the image leaves free".into())
}

/// Open a file at a descriptor number above `floor` (so it collides with
/// none the image wants), close-on-exec until dup3 gives it its number.
fn open_high(path: &[u8], flags: i32, floor: i32) -> Result<i32, String> {
    let c = CString::new(path.to_vec())
        .map_err(|_| "gridmpi-restore: a path with a NUL byte".to_string())?;
    // SAFETY: open and F_DUPFD_CLOEXEC of our own descriptors.
    unsafe {
        let fd = libc::open(c.as_ptr(), flags | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(format!(
                "gridmpi-restore: cannot open {}: {}",
                String::from_utf8_lossy(path),
                std::io::Error::last_os_error()
            ));
        }
        let hi = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, floor);
        libc::close(fd);
        if hi < 0 {
            return Err(format!(
                "gridmpi-restore: no descriptor free above {floor}: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(hi)
    }
}

/// What the restored program is handed from the process that restores it
/// (its environment, `KEY=VALUE` strings each ended by a NUL), since its
/// own environment is the image's: a library in it reconnects to the
/// launcher that started this restore (`save::handover`). `PMI_FD`, the
/// launcher's socket, is moved above `floor` (out of the image's way) and
/// kept open; its number in the handover says where.
fn handover(floor: i32) -> Result<(Vec<u8>, Option<i32>), String> {
    let mut kept = None;
    let mut out = Vec::new();
    for (k, v) in std::env::vars_os() {
        let mut v = v.into_encoded_bytes();
        if k == "PMI_FD" {
            let fd: i32 = std::str::from_utf8(&v).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(-1);
            // SAFETY: F_DUPFD_CLOEXEC of a descriptor we were given (an
            // error if it is not open), then closing the old number.
            let hi = if fd >= 0 { unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, floor) } } else { -1 };
            if hi < 0 {
                return Err(format!("gridmpi-restore: PMI_FD={} is not an open descriptor", String::from_utf8_lossy(&v)));
            }
            unsafe { libc::close(fd) };
            kept = Some(hi);
            v = hi.to_string().into_bytes();
        }
        out.extend_from_slice(k.as_encoded_bytes());
        out.push(b'=');
        out.extend_from_slice(&v);
        out.push(0);
    }
    Ok((out, kept))
}

/// `gridmpi-restore --info IMAGE`: check the image as a restore would
/// (checksums, machine, vDSO sizes) and describe it; changes nothing.
pub fn info(path: &str) -> Result<String, String> {
    let t0 = std::time::Instant::now();
    let file = File::open(path)
        .map_err(|e| format!("gridmpi-restore: cannot open the image {path}: {e}"))?;
    let (h, m) = image::read_image(&file, path).map_err(|e| format!("gridmpi-restore: {e}"))?;
    check_data(path, &file, &h)?;
    let verdict = match check_image(path, &h, &m, &own_maps()?) {
        Ok(()) => "restorable here".to_string(),
        Err(e) => format!("NOT restorable here: {e}"),
    };
    let kind = |k: u32| m.regions.iter().filter(move |r| r.kind == k);
    let saved = |k: u32| kind(k).map(|r| r.content_len).sum::<u64>();
    let mapped = |k: u32| kind(k).map(|r| r.end - r.start).sum::<u64>();
    let mut out = format!(
        "{path}: {} bytes, taken from pid {} ({}) on kernel {}, xsave size {}\n",
        h.data_offset + h.data_len,
        m.process.pid,
        String::from_utf8_lossy(&m.process.comm),
        h.machine.kernel_str(),
        h.machine.xsave_size
    );
    out += &format!(
        "  {} threads; {} regions: anonymous {} of {} bytes saved, private files {} of {} bytes saved (the rest from the files), shared anonymous {} bytes, shared files {} bytes (from their files), {} special\n",
        m.threads.len(),
        m.regions.len(),
        saved(image::REGION_PRIVATE),
        mapped(image::REGION_PRIVATE),
        saved(image::REGION_PRIVATE_FILE),
        mapped(image::REGION_PRIVATE_FILE),
        saved(image::REGION_SHARED_ANON),
        mapped(image::REGION_SHARED_FILE),
        kind(image::REGION_SPECIAL).count()
    );
    let restorable = m
        .files
        .iter()
        .filter(|f| f.kind == image::FD_REGULAR && f.fd > 2)
        .count();
    out += &format!(
        "  {} descriptors ({} reopened on restart); cwd {}\n  checksums good ({:.0} ms); {verdict}",
        m.files.len(),
        restorable,
        String::from_utf8_lossy(&m.process.cwd),
        t0.elapsed().as_secs_f64() * 1e3
    );
    Ok(out)
}

/// Restore the image at `path` into this process. Returns only on an
/// error found before the point of no return.
pub fn restore(path: &str) -> Result<std::convert::Infallible, String> {
    let verbose = std::env::var("GRIDMPI_RESTORE_VERBOSE").is_ok_and(|v| v == "1");
    let file = File::open(path)
        .map_err(|e| format!("gridmpi-restore: cannot open the image {path}: {e}"))?;
    let (h, m) = image::read_image(&file, path).map_err(|e| format!("gridmpi-restore: {e}"))?;
    let here = own_maps()?;
    check_image(path, &h, &m, &here)?;
    check_data(path, &file, &h)?;

    // Descriptors: everything we open goes above the image's numbers.
    let max_fd = m.files.iter().map(|f| f.fd as i32).max().unwrap_or(2);
    let floor = (max_fd + 1).max(10);
    let img_fd = {
        // SAFETY: duplicating our own descriptor.
        let hi = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, floor) };
        if hi < 0 {
            return Err(format!("gridmpi-restore: no descriptor free above {floor}"));
        }
        drop(file);
        hi
    };
    // What the new launcher gave us goes to the restored program (see
    // `handover`): its PMI socket above the image's numbers.
    let (handover, kept_fd) = handover(floor)?;
    let mut files = Vec::new(); // (temp fd, target fd, cloexec)
    for f in &m.files {
        if f.fd <= 2 {
            continue; // the standard streams are the restorer's (the new job's)
        }
        if f.kind != image::FD_REGULAR {
            if verbose {
                eprintln!(
                    "gridmpi-restore: fd {} ({}) is not a regular file: not restored (/dev/null holds its number)",
                    f.fd,
                    String::from_utf8_lossy(&f.path)
                );
            }
            // /dev/null holds the number, so the program (a library that
            // re-makes its sockets, say) finds it taken by nothing that
            // matters and a file it opens meanwhile cannot land there.
            let t = open_high(b"/dev/null", libc::O_RDWR, floor)?;
            files.push((t, f.fd as i32, true));
            continue;
        }
        let oflags = (f.flags as i32)
            & !(libc::O_CREAT | libc::O_TRUNC | libc::O_EXCL | libc::O_CLOEXEC | libc::O_NOCTTY);
        let t = open_high(&f.path, oflags, floor)?;
        // File contents are not in the image: a file that lost bytes since
        // the checkpoint is the program's problem, but say so.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat of our descriptor into a struct we own.
        if unsafe { libc::fstat(t, &mut st) } == 0
            && (st.st_mode & libc::S_IFMT) == libc::S_IFREG
            && (st.st_size as u64) < f.size
        {
            eprintln!(
                "gridmpi-restore: warning: {} (fd {}) is {} bytes, it was {} at the checkpoint",
                String::from_utf8_lossy(&f.path),
                f.fd,
                st.st_size,
                f.size
            );
        }
        // SAFETY: our descriptor.
        if unsafe { libc::lseek(t, f.offset as i64, libc::SEEK_SET) } < 0 {
            return Err(format!(
                "gridmpi-restore: cannot seek {} to {}: {}",
                String::from_utf8_lossy(&f.path),
                f.offset,
                std::io::Error::last_os_error()
            ));
        }
        files.push((t, f.fd as i32, f.flags as i32 & libc::O_CLOEXEC != 0));
    }
    let mut map_fds = Vec::new(); // (region index, temp fd)
    for (i, r) in m
        .regions
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind == image::REGION_SHARED_FILE)
    {
        let fl = if r.prot & libc::PROT_WRITE as u32 != 0 {
            libc::O_RDWR
        } else {
            libc::O_RDONLY
        };
        map_fds.push((i, open_high(&r.name, fl, floor)?));
    }
    // Private file mappings: the file must be the one the program mapped
    // (same size and modification time: what the program saw of it is not
    // in the image). One descriptor per file.
    let mut private_files: std::collections::HashMap<Vec<u8>, i32> = Default::default();
    for (i, r) in m
        .regions
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind == image::REGION_PRIVATE_FILE)
    {
        let fd = match private_files.get(&r.name) {
            Some(&fd) => fd,
            None => {
                let fd = open_high(&r.name, libc::O_RDONLY, floor)?;
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                // SAFETY: fstat of our descriptor into a struct we own.
                if unsafe { libc::fstat(fd, &mut st) } != 0 {
                    return Err(format!(
                        "gridmpi-restore: cannot stat {}: {}",
                        r.name_str(),
                        std::io::Error::last_os_error()
                    ));
                }
                let mtime = st.st_mtime as u64 * 1_000_000_000 + st.st_mtime_nsec as u64;
                if st.st_size as u64 != r.file_size || mtime != r.file_mtime {
                    return Err(format!(
                        "gridmpi-restore: {} changed since the checkpoint ({} bytes, modified at {} ns; it was {} bytes, modified at {} ns): the program mapped the old one",
                        r.name_str(),
                        st.st_size,
                        mtime,
                        r.file_size,
                        r.file_mtime
                    ));
                }
                private_files.insert(r.name.clone(), fd);
                fd
            }
        };
        map_fds.push((i, fd));
    }
    let cwd = CString::new(m.process.cwd.clone())
        .map_err(|_| "gridmpi-restore: the saved cwd holds a NUL".to_string())?;
    // SAFETY: chdir to a path string we own.
    if unsafe { libc::chdir(cwd.as_ptr()) } != 0 {
        return Err(format!(
            "gridmpi-restore: cannot go to the saved working directory {}: {}",
            String::from_utf8_lossy(&m.process.cwd),
            std::io::Error::last_os_error()
        ));
    }

    // The area: code, ops, data, stack, room to park the vDSO/vvar.
    let code = blob_code();
    let specials_here: Vec<&Own> = here
        .iter()
        .filter(|o| is_special(&o.name) && o.name != b"[vsyscall]")
        .collect();
    let park: u64 = specials_here.iter().map(|o| o.end - o.start).sum();
    let chunks: u64 = m
        .regions
        .iter()
        .flat_map(|r| r.runs.iter().map(|run| run[1].div_ceil(PREAD_CHUNK)))
        .sum();
    let nops = 32
        + 4 * m.regions.len() as u64
        + chunks
        + 3 * m.files.len() as u64
        + 2 * m.threads.len() as u64
        + 70;
    let code_len = (code.len() as u64).next_multiple_of(PAGE);
    let ops_len = (nops * OP_SIZE as u64).next_multiple_of(PAGE);
    let data_cap = (nops * 160 + 8192 + handover.len() as u64).next_multiple_of(PAGE);
    let len = code_len + ops_len + data_cap + STACK + park;
    let base = choose_area(&m, len)?;
    let mut p = Plan {
        base,
        ops_at: base + code_len,
        data_at: base + code_len + ops_len,
        data_cap,
        ops: Vec::new(),
        data: Vec::new(),
    };
    let stack_top = p.data_at + data_cap + STACK;
    let park_at = stack_top;
    build_ops(
        &mut p,
        &m,
        &h,
        &specials_here,
        park_at,
        img_fd,
        &files,
        &map_fds,
        &handover,
    )?;
    if p.ops.len() as u64 > nops || p.data.len() as u64 > p.data_cap {
        return Err(format!(
            "gridmpi-restore: internal error: {} ops, {} bytes of data overflow the area",
            p.ops.len(),
            p.data.len()
        ));
    }
    if verbose {
        eprintln!(
            "gridmpi-restore: {} regions, {} threads, {} files; restorer area {:#x}+{:#x}, {} steps",
            m.regions.len(),
            m.threads.len(),
            files.len(),
            base,
            len,
            p.ops.len()
        );
    }
    close_others(img_fd, &files, &map_fds, kept_fd);
    // SAFETY: from here on the blob owns the process.
    unsafe { launch(&p, code, code_len, stack_top) }
}

/// Close every descriptor the program will not get back (the restorer's
/// own), keeping 0-2, the image and the temporaries.
fn close_others(img_fd: i32, files: &[(i32, i32, bool)], map_fds: &[(usize, i32)], kept_fd: Option<i32>) {
    let keep = |fd: i32| {
        fd <= 2
            || fd == img_fd
            || Some(fd) == kept_fd
            || files.iter().any(|f| f.0 == fd)
            || map_fds.iter().any(|f| f.1 == fd)
    };
    let list: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for fd in list {
        if !keep(fd) {
            // SAFETY: closing a descriptor of ours nothing uses any more
            // (the directory listing's own is already closed).
            unsafe { libc::close(fd) };
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn build_ops(
    p: &mut Plan,
    m: &Meta,
    h: &Header,
    specials_here: &[&Own],
    park_at: u64,
    img_fd: i32,
    files: &[(i32, i32, bool)],
    map_fds: &[(usize, i32)],
    handover: &[u8],
) -> Result<(), String> {
    use libc::*;
    let area_end = park_at + specials_here.iter().map(|o| o.end - o.start).sum::<u64>();
    // 1. Unmap all but the area and the vDSO/vvar.
    let mut keep: Vec<(u64, u64)> = specials_here.iter().map(|o| (o.start, o.end)).collect();
    keep.push((p.base, area_end));
    keep.sort();
    let mut cur = 0u64;
    for (s, e) in keep
        .iter()
        .copied()
        .chain(std::iter::once((TASK_END, TASK_END)))
    {
        if s > cur {
            p.op(
                SYS_munmap,
                &[cur, s - cur],
                K_EQ,
                0,
                &format!("unmapping the restorer at {cur:#x}-{s:#x}"),
            );
        }
        cur = cur.max(e);
    }
    // 2. The vDSO/vvar: park each, then move it to the image's address
    // (two steps, so no move lands on a piece not yet moved).
    let mut at = park_at;
    let mut parked = Vec::new();
    for o in specials_here {
        let n = o.end - o.start;
        let what = format!("moving the {} aside", String::from_utf8_lossy(&o.name));
        p.op(
            SYS_mremap,
            &[o.start, n, n, (MREMAP_MAYMOVE | MREMAP_FIXED) as u64, at],
            K_EQ,
            at,
            &what,
        );
        parked.push((at, n, &o.name));
        at += n;
    }
    for (from, n, name) in parked {
        let r = m
            .regions
            .iter()
            .find(|r| &r.name == name)
            .expect("checked in check_image");
        let what = format!(
            "moving the {} to {:#x}",
            String::from_utf8_lossy(name),
            r.start
        );
        p.op(
            SYS_mremap,
            &[from, n, n, (MREMAP_MAYMOVE | MREMAP_FIXED) as u64, r.start],
            K_EQ,
            r.start,
            &what,
        );
    }
    // 3. The regions.
    for (i, r) in m.regions.iter().enumerate() {
        let len = r.end - r.start;
        let what = region_what(r);
        match r.kind {
            image::REGION_SPECIAL => {}
            image::REGION_SHARED_FILE => {
                let fd = map_fds
                    .iter()
                    .find(|(j, _)| *j == i)
                    .expect("opened above")
                    .1;
                p.op(
                    SYS_mmap,
                    &[
                        r.start,
                        len,
                        r.prot as u64,
                        (MAP_SHARED | MAP_FIXED) as u64,
                        fd as u64,
                        r.file_offset,
                    ],
                    K_EQ,
                    r.start,
                    &format!("mapping {what}"),
                );
            }
            _ => {
                // MAP_NORESERVE: a large sparse region (an arena, a
                // reservation the program made with MAP_NORESERVE) must
                // not fail the restore for commit accounting; its pages
                // are committed as they are written, as before.
                // A private file mapping comes from its file (its pages the
                // program wrote are laid over it below); anonymous memory
                // is fresh zeros.
                let (share, fd, off) = match r.kind {
                    image::REGION_SHARED_ANON => (MAP_SHARED | MAP_ANONYMOUS, u64::MAX, 0),
                    image::REGION_PRIVATE_FILE => {
                        let fd = map_fds
                            .iter()
                            .find(|(j, _)| *j == i)
                            .expect("opened above")
                            .1;
                        (MAP_PRIVATE | MAP_NORESERVE, fd as u64, r.file_offset)
                    }
                    _ => (MAP_PRIVATE | MAP_NORESERVE | MAP_ANONYMOUS, u64::MAX, 0),
                };
                let grows = if r.flags & image::RFLAG_GROWSDOWN != 0 {
                    MAP_GROWSDOWN
                } else {
                    0
                };
                let prot0 = if r.content_len > 0 {
                    (PROT_READ | PROT_WRITE) as u64
                } else {
                    r.prot as u64
                };
                p.op(
                    SYS_mmap,
                    &[
                        r.start,
                        len,
                        prot0,
                        (share | MAP_FIXED | grows) as u64,
                        fd,
                        off,
                    ],
                    K_EQ,
                    r.start,
                    &format!("mapping {what}"),
                );
                // the saved runs, one after the other in the image; the
                // rest of the region stays the fresh mapping's zeros (or
                // the file's pages)
                let mut from = h.data_offset + r.content_offset;
                for run in &r.runs {
                    let mut done = 0;
                    while done < run[1] {
                        let n = (run[1] - done).min(PREAD_CHUNK);
                        p.op(
                            SYS_pread64,
                            &[img_fd as u64, r.start + run[0] + done, n, from],
                            K_EQ,
                            n,
                            &format!("reading the contents of {what}"),
                        );
                        done += n;
                        from += n;
                    }
                }
                if prot0 != r.prot as u64 {
                    p.op(
                        SYS_mprotect,
                        &[r.start, len, r.prot as u64],
                        K_EQ,
                        0,
                        &format!("protecting {what}"),
                    );
                }
            }
        }
    }
    // 4. brk and the other mm fields: PR_SET_MM_MAP (no privilege needed;
    // the single-field PR_SET_MM_BRK needs CAP_SYS_RESOURCE).
    let mut mm = Vec::with_capacity(104);
    for v in m.process.mm {
        mm.extend_from_slice(&v.to_le_bytes());
    }
    mm.extend_from_slice(&0u64.to_le_bytes()); // auxv: keep ours
    mm.extend_from_slice(&0u32.to_le_bytes()); // auxv_size
    mm.extend_from_slice(&u32::MAX.to_le_bytes()); // exe_fd: keep ours
    let mm_at = p.data(&mm);
    p.op(
        SYS_prctl,
        &[PR_SET_MM as u64, PR_SET_MM_MAP as u64, mm_at, 104, 0],
        K_EQ,
        0,
        "setting brk and the mm fields (PR_SET_MM_MAP)",
    );
    // 5. Descriptors at their numbers and offsets.
    for &(t, fd, cloexec) in files {
        p.op(
            SYS_dup3,
            &[
                t as u64,
                fd as u64,
                if cloexec { O_CLOEXEC as u64 } else { 0 },
            ],
            K_EQ,
            fd as u64,
            &format!("giving back fd {fd}"),
        );
        p.op(
            SYS_close,
            &[t as u64],
            K_ANY,
            0,
            "closing a temporary descriptor",
        );
    }
    let mut distinct: Vec<i32> = map_fds.iter().map(|f| f.1).collect();
    distinct.sort();
    distinct.dedup();
    for t in distinct {
        p.op(
            SYS_close,
            &[t as u64],
            K_ANY,
            0,
            "closing a temporary descriptor",
        );
    }
    p.op(SYS_close, &[img_fd as u64], K_ANY, 0, "closing the image");
    // 6. Signal actions.
    for (i, a) in m.sigactions.iter().enumerate() {
        let sig = i as i32 + 1;
        if sig == SIGKILL || sig == SIGSTOP {
            continue;
        }
        let mut b = Vec::with_capacity(32);
        for v in [a.handler, a.flags, a.restorer, a.mask] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let at = p.data(&b);
        p.op(
            SYS_rt_sigaction,
            &[sig as u64, at, 0, 8],
            K_EQ,
            0,
            &format!("setting the action of signal {sig}"),
        );
    }
    // 7. The writer thread (which this one becomes): TLS, tid, robust
    // list, rseq, name.
    let w = m.threads[m.process.writer as usize];
    p.op(
        SYS_arch_prctl,
        &[0x1002 /* ARCH_SET_FS */, w.fs_base],
        K_EQ,
        0,
        "setting the FS base (TLS)",
    );
    if w.tid_address != 0 {
        p.op(
            SYS_set_tid_address,
            &[w.tid_address],
            K_STORE32,
            w.tid_address,
            "setting the tid address",
        );
    }
    if w.robust_head != 0 {
        p.op(
            SYS_set_robust_list,
            &[w.robust_head, 24],
            K_EQ,
            0,
            "setting the robust futex list",
        );
    }
    let rseq = |t: &image::Thread| {
        if m.process.rseq_len != 0 {
            t.fs_base.wrapping_add(m.process.rseq_offset)
        } else {
            0
        }
    };
    if rseq(&w) != 0 {
        // Not checked: a kernel without rseq leaves glibc's area unused.
        p.op(
            SYS_rseq,
            &[rseq(&w), m.process.rseq_len as u64, 0, RSEQ_SIG],
            K_ANY,
            0,
            "registering rseq",
        );
    }
    // the writer's own name (this thread becomes the leader, whose name
    // is the process's), else the process's
    let name = if w.name_bytes().is_empty() {
        &m.process.comm[..]
    } else {
        w.name_bytes()
    };
    if !name.is_empty() {
        let mut c = name.to_vec();
        c.truncate(15);
        c.push(0);
        let at = p.data(&c);
        p.op(
            SYS_prctl,
            &[PR_SET_NAME as u64, at],
            K_ANY,
            0,
            "setting the name",
        );
    }
    // 8. Tell gridmpi_checkpoint() it returns in a restarted process, and
    // which area to unmap.
    let area_len = area_end - p.base;
    let handover_at = p.data(handover);
    p.op(0, &[m.process.restarted_flag + 16, handover_at], K_POKE, 0, "");
    p.op(0, &[m.process.restarted_flag + 24, handover.len() as u64], K_POKE, 0, "");
    p.op(0, &[m.process.restarted_flag + 8, area_len], K_POKE, 0, "");
    p.op(0, &[m.process.restarted_flag, p.base], K_POKE, 0, "");
    // 9. The other threads: clone straight into rt_sigreturn on their frames.
    for (i, t) in m.threads.iter().enumerate() {
        if i == m.process.writer as usize {
            continue;
        }
        let mut flags = (CLONE_VM
            | CLONE_FS
            | CLONE_FILES
            | CLONE_SIGHAND
            | CLONE_THREAD
            | CLONE_SYSVSEM
            | CLONE_SETTLS) as u64;
        if t.tid_address != 0 {
            flags |= (CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID) as u64;
        }
        let before = p.ops.len();
        p.op(
            SYS_clone,
            &[flags, t.ucontext, t.tid_address, t.tid_address, t.fs_base],
            K_CLONE,
            m.process.rseq_len as u64,
            &format!("creating thread {} (was tid {})", i, t.tid),
        );
        p.ops[before].x0 = t.robust_head;
        p.ops[before].x1 = rseq(t);
        if !t.name_bytes().is_empty() {
            p.ops[before].x2 = p.data(&t.name); // (16 bytes, NUL terminated)
        }
    }
    // 10. Resume the writer where its checkpoint signal interrupted it.
    p.op(
        0,
        &[w.ucontext],
        K_SIGRETURN,
        0,
        "rt_sigreturn into the program",
    );
    Ok(())
}

fn region_what(r: &Region) -> String {
    if r.name.is_empty() {
        format!("region {:#x}-{:#x}", r.start, r.end)
    } else {
        format!("region {:#x}-{:#x} ({})", r.start, r.end, r.name_str())
    }
}

/// Copy the blob, its ops and data into the area, block every signal,
/// drop the restorer's rseq registration if there is one (the kernel
/// would write into memory the blob unmaps, and kill us; gridmpi-restore
/// normally runs with glibc's registration off) and jump.
unsafe fn launch(p: &Plan, code: &[u8], code_len: u64, stack_top: u64) -> ! {
    let base = p.base as *mut u8;
    std::ptr::copy_nonoverlapping(code.as_ptr(), base, code.len());
    std::ptr::copy_nonoverlapping(
        p.ops.as_ptr() as *const u8,
        p.ops_at as *mut u8,
        p.ops.len() * OP_SIZE,
    );
    std::ptr::copy_nonoverlapping(p.data.as_ptr(), p.data_at as *mut u8, p.data.len());
    if libc::mprotect(
        base as *mut _,
        code_len as usize,
        libc::PROT_READ | libc::PROT_EXEC,
    ) != 0
    {
        eprintln!(
            "gridmpi-restore: cannot make the restorer code executable: {}",
            std::io::Error::last_os_error()
        );
        std::process::exit(1);
    }
    unregister_rseq();
    let mut all: libc::sigset_t = std::mem::zeroed();
    libc::sigfillset(&mut all);
    libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
    let ops = p.ops_at;
    let n = p.ops.len() as u64;
    core::arch::asm!(
        "mov rsp, {st}",
        "jmp {entry}",
        st = in(reg) stack_top,
        entry = in(reg) base,
        in("rdi") ops,
        in("rsi") n,
        options(noreturn)
    );
}

unsafe fn unregister_rseq() {
    let off = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()) as *const isize;
    let size = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()) as *const u32;
    if off.is_null() || size.is_null() || *size == 0 {
        return;
    }
    let mut tp: u64;
    core::arch::asm!("mov {}, fs:0", out(reg) tp);
    let area = tp.wrapping_add(*off as u64);
    for len in [32u32, *size] {
        if libc::syscall(
            libc::SYS_rseq,
            area,
            len,
            1, /* RSEQ_FLAG_UNREGISTER */
            RSEQ_SIG,
        ) == 0
        {
            return;
        }
    }
    eprintln!(
        "gridmpi-restore: cannot unregister the restorer's rseq area: {}",
        std::io::Error::last_os_error()
    );
    std::process::exit(1);
}

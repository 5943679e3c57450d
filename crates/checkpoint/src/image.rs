//! The image file: its layout, the encoder the checkpointing process uses
//! (from a signal handler: no allocation, a fixed buffer) and the decoder
//! the restorer uses (ordinary Rust).
//!
//! ```text
//! 0            header (HEADER_SIZE bytes): magic, version, the machine it was
//!              taken on, where the two sections are and their hashes, and the
//!              hash of the header itself
//! HEADER_SIZE  meta section: process, threads, signal actions, files, regions
//! data_offset  data section (page aligned): the saved contents of the regions,
//!              each at data_offset + region.content_offset
//! ```
//!
//! Every integer is little endian. A name or path is a u16 length then bytes.

use crate::hash::hash;
use crate::machine::Machine;

pub const MAGIC: [u8; 8] = *b"GRIDCKPT";
/// 2: regions carry runs of saved pages (1 saved every region whole);
/// 3: files carry their size; 4: private file mappings come from their
/// files; 5: threads carry their names; 6: the restart words have room
/// for the handover (the restorer writes 4 words).
pub const VERSION: u32 = 6;
pub const HEADER_SIZE: usize = 4096;

/// Where the sections are. The meta section always starts at HEADER_SIZE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub machine: Machine,
    pub meta_len: u64,
    pub meta_hash: u64,
    pub data_offset: u64,
    pub data_len: u64,
    pub data_hash: u64,
}

/// A writer over a fixed buffer: usable in a signal handler. Running out of
/// room sets `overflow` instead of panicking; the caller checks it once.
pub struct Enc<'a> {
    pub buf: &'a mut [u8],
    pub pos: usize,
    pub overflow: bool,
}

impl<'a> Enc<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        Enc {
            buf,
            pos: 0,
            overflow: false,
        }
    }
    pub fn bytes(&mut self, b: &[u8]) {
        if self.pos + b.len() > self.buf.len() {
            self.overflow = true;
            return;
        }
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes())
    }
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes())
    }
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes())
    }
    pub fn name(&mut self, b: &[u8]) {
        let n = b.len().min(u16::MAX as usize);
        self.u16(n as u16);
        self.bytes(&b[..n]);
    }
    /// A u32 to fill in later (a count not known yet).
    pub fn reserve_u32(&mut self) -> usize {
        let at = self.pos;
        self.u32(0);
        at
    }
    pub fn patch_u32(&mut self, at: usize, v: u32) {
        if !self.overflow {
            self.buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
    }
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.pos]
    }
}

/// The reader: every read checks the bounds, so a damaged image (whose hash
/// happened to match, or a version mismatch) is an error, never a panic.
pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8], what: &'static str) -> Self {
        Dec { buf, pos: 0, what }
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.pos + n > self.buf.len() {
            return Err(format!(
                "the {} section ends early (at byte {}, {} more needed)",
                self.what, self.pos, n
            ));
        }
        let b = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }
    pub fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().unwrap()))
    }
    pub fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().unwrap()))
    }
    pub fn name(&mut self) -> Result<Vec<u8>, String> {
        let n = self.u16()? as usize;
        Ok(self.bytes(n)?.to_vec())
    }
    /// A count of records of at least `min_size` bytes each: bounded by
    /// what is left, so a bad count cannot make us allocate without limit.
    pub fn count(&mut self, min_size: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n * min_size > self.buf.len() - self.pos {
            return Err(format!(
                "the {} section claims {} records, more than it holds",
                self.what, n
            ));
        }
        Ok(n)
    }
}

pub fn encode_header(h: &Header, out: &mut [u8; HEADER_SIZE]) {
    out.fill(0);
    let mut e = Enc::new(&mut out[..]);
    e.bytes(&MAGIC);
    e.u32(VERSION);
    h.machine.encode(&mut e);
    e.u64(h.meta_len);
    e.u64(h.meta_hash);
    e.u64(h.data_offset);
    e.u64(h.data_len);
    e.u64(h.data_hash);
    let n = e.pos;
    let hh = hash(&out[..n]);
    out[n..n + 8].copy_from_slice(&hh.to_le_bytes());
}

/// `path` only names the image in errors.
pub fn decode_header(buf: &[u8], path: &str) -> Result<Header, String> {
    if buf.len() < HEADER_SIZE {
        return Err(format!(
            "{path} is not a GridMPI image: {} bytes, shorter than a header",
            buf.len()
        ));
    }
    if buf[..8] != MAGIC {
        return Err(format!("{path} is not a GridMPI image (no GRIDCKPT magic)"));
    }
    let mut d = Dec::new(&buf[..HEADER_SIZE], "header");
    d.bytes(8)?;
    let version = d.u32()?;
    if version != VERSION {
        return Err(format!(
            "{path} is an image of format version {version}, this restorer reads version {VERSION}"
        ));
    }
    let machine = Machine::decode(&mut d)?;
    let h = Header {
        machine,
        meta_len: d.u64()?,
        meta_hash: d.u64()?,
        data_offset: d.u64()?,
        data_len: d.u64()?,
        data_hash: d.u64()?,
    };
    let n = d.pos;
    let stored = d.u64()?;
    if hash(&buf[..n]) != stored {
        return Err(format!(
            "{path}: the header's checksum does not match (the image is damaged)"
        ));
    }
    Ok(h)
}

/// What the kernel's rt_sigaction gives and takes (struct kernel_sigaction
/// on x86_64: handler, flags, restorer, one 64-bit mask).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct KSigaction {
    pub handler: u64,
    pub flags: u64,
    pub restorer: u64,
    pub mask: u64,
}

/// One thread: where its signal frame is (the ucontext the kernel wrote when
/// our signal stopped it; rt_sigreturn with the stack pointer there resumes
/// it), its TLS base, and what the kernel knew of it that the ucontext
/// does not hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Thread {
    pub tid: u32,
    pub ucontext: u64,
    pub fs_base: u64,
    /// set_tid_address / CLONE_CHILD_CLEARTID: glibc's pd->tid (0: unknown)
    pub tid_address: u64,
    pub robust_head: u64,
    pub robust_len: u64,
    /// its name (/proc/thread-self/comm), NUL padded
    pub name: [u8; 16],
}

impl Thread {
    pub const SIZE: usize = 4 + 5 * 8 + 16;
    pub fn encode(&self, e: &mut Enc) {
        e.u32(self.tid);
        e.u64(self.ucontext);
        e.u64(self.fs_base);
        e.u64(self.tid_address);
        e.u64(self.robust_head);
        e.u64(self.robust_len);
        e.bytes(&self.name);
    }
    fn decode(d: &mut Dec) -> Result<Self, String> {
        let mut t = Thread {
            tid: d.u32()?,
            ucontext: d.u64()?,
            fs_base: d.u64()?,
            tid_address: d.u64()?,
            robust_head: d.u64()?,
            robust_len: d.u64()?,
            name: [0; 16],
        };
        t.name.copy_from_slice(d.bytes(16)?);
        t.name[15] = 0; // a C string for PR_SET_NAME, whatever the image says
        Ok(t)
    }
    /// The name without its padding.
    pub fn name_bytes(&self) -> &[u8] {
        &self.name[..self.name.iter().position(|&c| c == 0).unwrap_or(16)]
    }
}

/// The process-wide facts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    /// The restart words (two u64: the restorer's area and its length)
    /// the restorer sets: how gridmpi_checkpoint() learns it returned in a
    /// restarted process.
    pub restarted_flag: u64,
    /// glibc's __rseq_offset from the thread pointer, and the length it
    /// registered (0: no rseq area to register again)
    pub rseq_offset: u64,
    pub rseq_len: u32,
    /// start_code, end_code, start_data, end_data, start_brk, brk,
    /// start_stack, arg_start, arg_end, env_start, env_end (PR_SET_MM_MAP)
    pub mm: [u64; 11],
    pub comm: Vec<u8>,
    pub cwd: Vec<u8>,
    /// index in `threads` of the thread that wrote the image
    pub writer: u32,
}

/// A regular file or a directory: opened again at its path and offset.
pub const FD_REGULAR: u32 = 0;
/// A pipe, socket, terminal, deleted file...: recorded, not restored.
pub const FD_OTHER: u32 = 1;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileRec {
    pub fd: u32,
    pub kind: u32,
    /// open flags as /proc/self/fdinfo shows them (O_CLOEXEC included)
    pub flags: u32,
    pub offset: u64,
    /// its size at the checkpoint (a file found shorter is reported)
    pub size: u64,
    pub path: Vec<u8>,
}

/// A mapping saved with its contents and restored as a private anonymous
/// one (anonymous memory, heap, stacks, and private file mappings: what
/// the program sees is the contents, not the file).
pub const REGION_PRIVATE: u32 = 0;
/// MAP_SHARED of a file that still exists: mapped again from the file.
pub const REGION_SHARED_FILE: u32 = 1;
/// MAP_SHARED|MAP_ANONYMOUS (or of a deleted file): contents saved.
pub const REGION_SHARED_ANON: u32 = 2;
/// vDSO, vvar, vsyscall: the restoring kernel's are moved there.
pub const REGION_SPECIAL: u32 = 3;
/// MAP_PRIVATE of a file that still exists (libraries, the program):
/// mapped again from the file, which must have the same size and
/// modification time; the runs hold only the pages the program wrote
/// (anonymous copies), laid over the file's.
pub const REGION_PRIVATE_FILE: u32 = 4;

pub const RFLAG_GROWSDOWN: u32 = 1;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    /// PROT_READ | PROT_WRITE | PROT_EXEC
    pub prot: u32,
    pub kind: u32,
    pub flags: u32,
    pub file_offset: u64,
    /// REGION_PRIVATE_FILE: the file's size and mtime (ns) at the checkpoint
    pub file_size: u64,
    pub file_mtime: u64,
    /// from the start of the data section; content_len 0: none saved
    pub content_offset: u64,
    pub content_len: u64,
    pub name: Vec<u8>,
    /// Which bytes of the region are saved, as (offset in the region,
    /// length) runs, page aligned, in order; their contents follow each
    /// other from content_offset. The rest of the region is zeros (pages
    /// of anonymous memory the program never touched).
    pub runs: Vec<[u64; 2]>,
}

impl Region {
    pub const MIN_SIZE: usize = 8 * 7 + 4 * 3 + 2 + 4;
    #[allow(clippy::too_many_arguments)]
    pub fn encode_fields(
        e: &mut Enc,
        start: u64,
        end: u64,
        prot: u32,
        kind: u32,
        flags: u32,
        file_offset: u64,
        file_size: u64,
        file_mtime: u64,
        content_offset: u64,
        content_len: u64,
        name: &[u8],
        runs: &[[u64; 2]],
        runs_base: u64,
    ) {
        e.u64(start);
        e.u64(end);
        e.u32(prot);
        e.u32(kind);
        e.u32(flags);
        e.u64(file_offset);
        e.u64(file_size);
        e.u64(file_mtime);
        e.u64(content_offset);
        e.u64(content_len);
        e.name(name);
        e.u32(runs.len() as u32);
        for r in runs {
            e.u64(r[0] - runs_base);
            e.u64(r[1]);
        }
    }
    fn decode(d: &mut Dec) -> Result<Self, String> {
        Region {
            start: d.u64()?,
            end: d.u64()?,
            prot: d.u32()?,
            kind: d.u32()?,
            flags: d.u32()?,
            file_offset: d.u64()?,
            file_size: d.u64()?,
            file_mtime: d.u64()?,
            content_offset: d.u64()?,
            content_len: d.u64()?,
            name: d.name()?,
            runs: Vec::new(),
        }
        .with_runs(d)
    }
    /// Read the runs and check them against the region: in order, inside
    /// it, page aligned, adding up to content_len.
    fn with_runs(mut self, d: &mut Dec) -> Result<Self, String> {
        let n = d.count(16)?;
        let mut at = 0u64;
        let mut total = 0u64;
        for _ in 0..n {
            let (off, len) = (d.u64()?, d.u64()?);
            let size = self.end.wrapping_sub(self.start);
            if off < at
                || off % 4096 != 0
                || len % 4096 != 0
                || off.checked_add(len).map_or(true, |e| e > size)
            {
                return Err(format!(
                    "region {:#x}-{:#x} has a bad run of saved pages (+{off:#x}, {len:#x} bytes)",
                    self.start, self.end
                ));
            }
            at = off + len;
            total += len;
            self.runs.push([off, len]);
        }
        if total != self.content_len {
            return Err(format!(
                "region {:#x}-{:#x}: its runs hold {total} bytes, its contents {}",
                self.start, self.end, self.content_len
            ));
        }
        Ok(self)
    }
    pub fn name_str(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }
}

/// The decoded meta section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    pub process: Process,
    pub threads: Vec<Thread>,
    /// index i is signal i + 1
    pub sigactions: Vec<KSigaction>,
    pub files: Vec<FileRec>,
    pub regions: Vec<Region>,
}

pub fn encode_process(e: &mut Enc, p: &Process) {
    e.u32(p.pid);
    e.u64(p.restarted_flag);
    e.u64(p.rseq_offset);
    e.u32(p.rseq_len);
    for v in p.mm {
        e.u64(v);
    }
    e.name(&p.comm);
    e.name(&p.cwd);
    e.u32(p.writer);
}

pub fn encode_sigaction(e: &mut Enc, a: &KSigaction) {
    e.u64(a.handler);
    e.u64(a.flags);
    e.u64(a.restorer);
    e.u64(a.mask);
}

pub fn encode_file(
    e: &mut Enc,
    fd: u32,
    kind: u32,
    flags: u32,
    offset: u64,
    size: u64,
    path: &[u8],
) {
    e.u32(fd);
    e.u32(kind);
    e.u32(flags);
    e.u64(offset);
    e.u64(size);
    e.name(path);
}

/// The meta section in order: process, threads, sigactions, files, regions
/// (each list a u32 count then its records). Used by the tests and by
/// anyone who has a Meta in hand; the checkpointing process writes the same
/// bytes piece by piece.
pub fn encode_meta(m: &Meta, e: &mut Enc) {
    encode_process(e, &m.process);
    e.u32(m.threads.len() as u32);
    for t in &m.threads {
        t.encode(e);
    }
    e.u32(m.sigactions.len() as u32);
    for a in &m.sigactions {
        encode_sigaction(e, a);
    }
    e.u32(m.files.len() as u32);
    for f in &m.files {
        encode_file(e, f.fd, f.kind, f.flags, f.offset, f.size, &f.path);
    }
    e.u32(m.regions.len() as u32);
    for r in &m.regions {
        Region::encode_fields(
            e,
            r.start,
            r.end,
            r.prot,
            r.kind,
            r.flags,
            r.file_offset,
            r.file_size,
            r.file_mtime,
            r.content_offset,
            r.content_len,
            &r.name,
            &r.runs,
            0,
        );
    }
}

pub fn decode_meta(buf: &[u8]) -> Result<Meta, String> {
    let mut d = Dec::new(buf, "meta");
    let mut process = Process {
        pid: d.u32()?,
        restarted_flag: d.u64()?,
        rseq_offset: d.u64()?,
        rseq_len: d.u32()?,
        ..Default::default()
    };
    for v in process.mm.iter_mut() {
        *v = d.u64()?;
    }
    process.comm = d.name()?;
    process.cwd = d.name()?;
    process.writer = d.u32()?;
    let n = d.count(Thread::SIZE)?;
    let threads = (0..n)
        .map(|_| Thread::decode(&mut d))
        .collect::<Result<Vec<_>, _>>()?;
    if process.writer as usize >= threads.len() {
        return Err(format!(
            "the meta section names thread {} as the writer, of {}",
            process.writer,
            threads.len()
        ));
    }
    let n = d.count(32)?;
    let sigactions = (0..n)
        .map(|_| {
            Ok(KSigaction {
                handler: d.u64()?,
                flags: d.u64()?,
                restorer: d.u64()?,
                mask: d.u64()?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let n = d.count(30)?;
    let files = (0..n)
        .map(|_| {
            Ok(FileRec {
                fd: d.u32()?,
                kind: d.u32()?,
                flags: d.u32()?,
                offset: d.u64()?,
                size: d.u64()?,
                path: d.name()?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let n = d.count(Region::MIN_SIZE)?;
    let regions = (0..n)
        .map(|_| Region::decode(&mut d))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Meta {
        process,
        threads,
        sigactions,
        files,
        regions,
    })
}

/// Read and check a whole image's header and meta section from `file`
/// (the data section's hash is checked by the caller, which streams it).
pub fn read_image(file: &std::fs::File, path: &str) -> Result<(Header, Meta), String> {
    let mut hb = vec![0u8; HEADER_SIZE];
    let n = read_full_at(file, &mut hb, 0).map_err(|e| format!("cannot read {path}: {e}"))?;
    hb.truncate(n);
    let h = decode_header(&hb, path)?;
    if h.meta_len > (1 << 30) {
        return Err(format!(
            "{path}: the header claims a meta section of {} bytes",
            h.meta_len
        ));
    }
    let mut mb = vec![0u8; h.meta_len as usize];
    let n = read_full_at(file, &mut mb, HEADER_SIZE as u64)
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    if n != mb.len() {
        return Err(format!(
            "{path} is truncated: the meta section needs {} bytes, {} are there",
            mb.len(),
            n
        ));
    }
    if hash(&mb) != h.meta_hash {
        return Err(format!(
            "{path}: the meta section's checksum does not match (the image is damaged)"
        ));
    }
    let m = decode_meta(&mb).map_err(|e| format!("{path}: {e}"))?;
    Ok((h, m))
}

pub fn read_full_at(file: &std::fs::File, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Header, Meta) {
        let meta = Meta {
            process: Process {
                pid: 4242,
                restarted_flag: 0x5555_0000_1000,
                rseq_offset: (-160i64) as u64,
                rseq_len: 32,
                mm: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
                comm: b"prog".to_vec(),
                cwd: b"/tmp/x".to_vec(),
                writer: 1,
            },
            threads: vec![
                Thread {
                    tid: 10,
                    ucontext: 0x7fff_0000,
                    fs_base: 0x7f00_0000,
                    tid_address: 0x7f00_0010,
                    robust_head: 0x7f00_0020,
                    robust_len: 24,
                    name: *b"worker-1\0\0\0\0\0\0\0\0",
                },
                Thread {
                    tid: 11,
                    ucontext: 0x7ffe_0000,
                    fs_base: 0x7e00_0000,
                    ..Default::default()
                },
            ],
            sigactions: (0..64)
                .map(|i| KSigaction {
                    handler: i,
                    flags: 4,
                    restorer: 0x1234,
                    mask: 1 << i,
                })
                .collect(),
            files: vec![FileRec {
                fd: 3,
                kind: FD_REGULAR,
                flags: 0o2,
                offset: 77,
                size: 300,
                path: b"/tmp/x/data".to_vec(),
            }],
            regions: vec![
                Region {
                    start: 0x1000,
                    end: 0x3000,
                    prot: 3,
                    kind: REGION_PRIVATE,
                    flags: 0,
                    file_offset: 0,
                    file_size: 0,
                    file_mtime: 0,
                    content_offset: 0,
                    content_len: 0x2000,
                    name: b"[heap]".to_vec(),
                    runs: vec![[0, 0x1000], [0x1000, 0x1000]],
                },
                Region {
                    start: 0x7000,
                    end: 0x8000,
                    prot: 5,
                    kind: REGION_SPECIAL,
                    flags: 0,
                    file_offset: 0,
                    file_size: 0,
                    file_mtime: 0,
                    content_offset: 0,
                    content_len: 0,
                    name: b"[vdso]".to_vec(),
                    runs: vec![],
                },
            ],
        };
        let mut buf = vec![0u8; 1 << 16];
        let mut e = Enc::new(&mut buf);
        encode_meta(&meta, &mut e);
        assert!(!e.overflow);
        let n = e.pos;
        let header = Header {
            machine: Machine::current(),
            meta_len: n as u64,
            meta_hash: hash(&buf[..n]),
            data_offset: 8192,
            data_len: 0x2000,
            data_hash: 99,
        };
        (header, meta)
    }

    fn meta_bytes(m: &Meta) -> Vec<u8> {
        let mut buf = vec![0u8; 1 << 16];
        let mut e = Enc::new(&mut buf);
        encode_meta(m, &mut e);
        let n = e.pos;
        buf.truncate(n);
        buf
    }

    #[test]
    fn header_and_meta_round_trip() {
        let (h, m) = sample();
        let mut hb = [0u8; HEADER_SIZE];
        encode_header(&h, &mut hb);
        assert_eq!(decode_header(&hb, "x").unwrap(), h);
        assert_eq!(decode_meta(&meta_bytes(&m)).unwrap(), m);
    }

    #[test]
    fn a_damaged_header_is_refused() {
        let (h, _) = sample();
        let mut hb = [0u8; HEADER_SIZE];
        encode_header(&h, &mut hb);
        for at in [12, 100, 200] {
            let mut bad = hb;
            bad[at] ^= 0x10;
            let e = decode_header(&bad, "/img").unwrap_err();
            assert!(e.contains("header's checksum does not match"), "{e}");
        }
        let mut bad = hb;
        bad[0] = b'X';
        assert!(decode_header(&bad, "/img")
            .unwrap_err()
            .contains("not a GridMPI image"));
        let mut bad = hb;
        bad[8] = 9; // version 9
        assert!(decode_header(&bad, "/img")
            .unwrap_err()
            .contains("format version 9"));
    }

    #[test]
    fn a_damaged_meta_section_is_refused_by_its_checksum() {
        let dir = std::env::temp_dir().join(format!("gridmpi-ckpt-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("img");
        let (h, m) = sample();
        let mb = meta_bytes(&m);
        let mut hb = [0u8; HEADER_SIZE];
        encode_header(&h, &mut hb);
        let mut file = hb.to_vec();
        file.extend_from_slice(&mb);
        std::fs::write(&path, &file).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let (h2, m2) = read_image(&f, "img").unwrap();
        assert_eq!((h2, m2), (h, m));
        file[HEADER_SIZE + 20] ^= 1;
        std::fs::write(&path, &file).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let e = read_image(&f, "img").unwrap_err();
        assert!(e.contains("meta section's checksum does not match"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_truncated_meta_section_is_an_error_not_a_panic() {
        let (_, m) = sample();
        let mb = meta_bytes(&m);
        for n in [0, 5, 40, mb.len() / 2, mb.len() - 1] {
            assert!(decode_meta(&mb[..n]).is_err(), "{n} bytes");
        }
        // a count larger than what follows
        let mut bad = mb.clone();
        let threads_at = 4 + 8 + 8 + 4 + 88 + 2 + 4 + 2 + 6 + 4;
        bad[threads_at..threads_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_meta(&bad).unwrap_err().contains("claims"));
    }

    #[test]
    fn runs_outside_their_region_or_not_adding_up_are_refused() {
        let (_, m) = sample();
        for (runs, want) in [
            (vec![[0, 0x1000], [0x1000, 0x2000]], "bad run"), // past the end
            (vec![[0x1000, 0x1000], [0, 0x1000]], "bad run"), // out of order
            (vec![[0x800, 0x1000], [0x1800, 0x1000]], "bad run"), // not page aligned
            (vec![[0, 0x1000]], "its runs hold 4096 bytes"),  // 0x2000 claimed
        ] {
            let mut bad = m.clone();
            bad.regions[0].runs = runs;
            let e = decode_meta(&meta_bytes(&bad)).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn the_encoder_reports_overflow_instead_of_panicking() {
        let mut small = [0u8; 10];
        let mut e = Enc::new(&mut small);
        e.u64(1);
        e.u64(2);
        assert!(e.overflow);
    }
}

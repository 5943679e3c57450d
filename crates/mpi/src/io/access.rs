//! The system calls of file access: positioned reads and writes of a list
//! of byte ranges (reads of nearby pieces sieved: one read per window),
//! byte-range locks for atomic mode, and errno as an MPI error class.

use crate::ffi::*;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;

/// Write `data` to `ranges` (offset, length) in order; their lengths add
/// up to `data.len()`.
pub fn write_ranges(file: &File, ranges: &[(u64, u64)], data: &[u8]) -> io::Result<()> {
    let mut at = 0usize;
    for &(off, len) in ranges {
        file.write_all_at(&data[at..at + len as usize], off)?;
        at += len as usize;
    }
    Ok(())
}

/// Data sieving: pieces closer than this are read together, holes
/// included, in one call of at most [`SIEVE_SPAN`] bytes (a strided view's
/// small pieces cost one system call per window, not one each).
const SIEVE_GAP: u64 = 64 << 10;
const SIEVE_SPAN: u64 = 4 << 20;

/// Read into `buf` from `off` until it is full or the file ends; returns
/// the bytes read.
fn read_full_at(file: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], off + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Read `ranges` (increasing offsets) in order into `out`; returns the
/// bytes read, fewer than asked only when the file ends first.
pub fn read_ranges(file: &File, ranges: &[(u64, u64)], out: &mut [u8]) -> io::Result<usize> {
    let mut at = 0usize;
    let mut window = Vec::new();
    let mut i = 0;
    while i < ranges.len() {
        let start = ranges[i].0;
        let mut j = i + 1;
        while j < ranges.len() && ranges[j].0 >= ranges[j - 1].0 + ranges[j - 1].1 && ranges[j].0 - (ranges[j - 1].0 + ranges[j - 1].1) <= SIEVE_GAP && ranges[j].0 + ranges[j].1 - start <= SIEVE_SPAN {
            j += 1;
        }
        if j == i + 1 {
            let want = ranges[i].1 as usize;
            let got = read_full_at(file, &mut out[at..at + want], start)?;
            at += got;
            if got < want {
                return Ok(at);
            }
            i = j;
            continue;
        }
        let end = ranges[j - 1].0 + ranges[j - 1].1;
        window.resize((end - start) as usize, 0);
        let n = read_full_at(file, &mut window, start)?;
        for &(off, len) in &ranges[i..j] {
            let rel = (off - start) as usize;
            let avail = n.saturating_sub(rel).min(len as usize);
            out[at..at + avail].copy_from_slice(&window[rel..rel + avail]);
            at += avail;
            if avail < len as usize {
                return Ok(at);
            }
        }
        i = j;
    }
    Ok(at)
}

/// An fcntl byte-range lock, held until dropped. POSIX locks belong to
/// the process, so they order accesses of different processes (on any
/// host sharing the file system, where it supports them), not of threads.
pub struct RangeLock<'a> {
    file: &'a File,
    start: u64,
    len: u64,
}

fn fcntl_lock(file: &File, kind: c_int, start: u64, len: u64, wait: bool) -> io::Result<()> {
    // SAFETY: a zeroed flock is a valid value; fields set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start as libc::off_t;
    fl.l_len = len as libc::off_t;
    let cmd = if wait { libc::F_SETLKW } else { libc::F_SETLK };
    loop {
        // SAFETY: a valid fd and flock.
        if unsafe { libc::fcntl(file.as_raw_fd(), cmd, &fl) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

impl<'a> RangeLock<'a> {
    /// Lock `start .. start + len` (len 0: to the end of the file, as
    /// fcntl reads it), shared for reading or exclusive for writing.
    pub fn new(file: &'a File, start: u64, len: u64, write: bool) -> io::Result<RangeLock<'a>> {
        // A file opened read-only cannot take a write lock, nor a
        // write-only one a read lock: take what the descriptor allows.
        let kind = if write { libc::F_WRLCK } else { libc::F_RDLCK };
        match fcntl_lock(file, kind, start, len, true) {
            Err(e) if e.raw_os_error() == Some(libc::EBADF) => {
                let other = if write { libc::F_RDLCK } else { libc::F_WRLCK };
                fcntl_lock(file, other, start, len, true)?
            }
            r => r?,
        }
        Ok(RangeLock { file, start, len })
    }
}

impl Drop for RangeLock<'_> {
    fn drop(&mut self) {
        let _ = fcntl_lock(self.file, libc::F_UNLCK, self.start, self.len, false);
    }
}

/// The MPI error class of a failed system call on a file.
pub fn errno_class(e: &io::Error) -> c_int {
    match e.raw_os_error() {
        Some(libc::ENOENT) => MPI_ERR_NO_SUCH_FILE,
        Some(libc::EACCES) | Some(libc::EPERM) => MPI_ERR_ACCESS,
        Some(libc::EEXIST) => MPI_ERR_FILE_EXISTS,
        Some(libc::EROFS) => MPI_ERR_READ_ONLY,
        Some(libc::ENOSPC) => MPI_ERR_NO_SPACE,
        Some(libc::EDQUOT) => MPI_ERR_QUOTA,
        Some(libc::EISDIR) | Some(libc::ENOTDIR) | Some(libc::ENAMETOOLONG) | Some(libc::ELOOP) | Some(libc::EINVAL) => MPI_ERR_BAD_FILE,
        Some(libc::ETXTBSY) | Some(libc::EBUSY) => MPI_ERR_FILE_IN_USE,
        _ => MPI_ERR_IO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_round_trip_and_reads_stop_at_the_end() {
        let path = std::env::temp_dir().join(format!("gridmpi-access-test-{}", std::process::id()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        write_ranges(&f, &[(4, 2), (10, 3)], b"abcde").unwrap();
        let mut out = [0u8; 5];
        assert_eq!(read_ranges(&f, &[(4, 2), (10, 3)], &mut out).unwrap(), 5);
        assert_eq!(&out, b"abcde");
        let mut more = [0u8; 6];
        assert_eq!(read_ranges(&f, &[(4, 2), (11, 4)], &mut more).unwrap(), 4);
        assert_eq!(&more[..4], b"abde");
        {
            let _l = RangeLock::new(&f, 0, 8, true).unwrap();
        }
        // Sieved windows give what piece-by-piece reads give, up to the end.
        let bytes: Vec<u8> = (0..200u32).map(|i| (i * 7) as u8).collect();
        f.set_len(0).unwrap();
        write_ranges(&f, &[(0, 200)], &bytes).unwrap();
        for ranges in [vec![(1u64, 3u64), (10, 5), (100, 50)], vec![(150, 20), (180, 30)], vec![(0, 1), (199, 1), (205, 4)], vec![(198, 10)]] {
            let want: usize = ranges.iter().map(|r| r.1 as usize).sum();
            let mut sieved = vec![0u8; want];
            let n = read_ranges(&f, &ranges, &mut sieved).unwrap();
            let mut expect = Vec::new();
            'pieces: for &(off, len) in &ranges {
                for b in off..off + len {
                    if b >= 200 {
                        break 'pieces;
                    }
                    expect.push(bytes[b as usize]);
                }
            }
            assert_eq!(&sieved[..n], &expect[..], "{ranges:?}");
        }
        std::fs::remove_file(&path).unwrap();
        assert_eq!(errno_class(&io::Error::from_raw_os_error(libc::ENOENT)), MPI_ERR_NO_SUCH_FILE);
    }
}

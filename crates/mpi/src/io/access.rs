//! The system calls of file access: positioned reads and writes of a list
//! of byte ranges, byte-range locks for atomic mode, and errno as an MPI
//! error class.

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

/// Read `ranges` in order into `out`; returns the bytes read, fewer than
/// asked only when the file ends first.
pub fn read_ranges(file: &File, ranges: &[(u64, u64)], out: &mut [u8]) -> io::Result<usize> {
    let mut at = 0usize;
    for &(off, len) in ranges {
        let want = len as usize;
        let mut got = 0;
        while got < want {
            match file.read_at(&mut out[at + got..at + want], off + got as u64) {
                Ok(0) => return Ok(at + got),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        at += want;
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
        std::fs::remove_file(&path).unwrap();
        assert_eq!(errno_class(&io::Error::from_raw_os_error(libc::ENOENT)), MPI_ERR_NO_SUCH_FILE);
    }
}

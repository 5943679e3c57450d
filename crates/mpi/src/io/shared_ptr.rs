//! The shared file pointer: a hidden sidecar file next to the data file
//! holding the pointer (8 bytes, native order, in etypes of the current
//! view), changed read-modify-write under an fcntl write lock.
//!
//! A file rather than memory, because the processes of a file handle may
//! be on several hosts: all that is needed is the file system they already
//! share for the data (and its fcntl locks). No process has to be inside
//! MPI to serve the pointer, as one holding it in its memory would.
//!
//! The sidecar is `.<name>.gridmpi-shfp-<job>-<context>` in the data
//! file's directory: the job tag and the file handle's context id keep two
//! handles (or jobs) on one file apart. Rank 0 creates it in
//! MPI_File_open and removes it in MPI_File_close, or at the end of MPI
//! for a file the program never closed. A job that dies (killed, or
//! MPI_Abort) leaves it behind: no process is left to remove it, and
//! unlinking it at open would break the other processes' access; it is
//! harmless (a later open makes its own).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub struct SharedPtr {
    path: PathBuf,
    file: File,
}

/// Where the sidecar of `data` lives.
pub fn sidecar_path(data: &Path, job: u64, ctx: u32) -> PathBuf {
    let name = data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = data.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    dir.join(format!(".{name}.gridmpi-shfp-{job:016x}-{ctx}"))
}

impl SharedPtr {
    /// Make the sidecar, the pointer at `start` (rank 0, in open).
    pub fn create(path: PathBuf, start: u64) -> io::Result<SharedPtr> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path)?;
        file.write_all_at(&start.to_ne_bytes(), 0)?;
        Ok(SharedPtr { path, file })
    }

    /// Open the sidecar rank 0 made.
    pub fn open(path: PathBuf) -> io::Result<SharedPtr> {
        let file = OpenOptions::new().read(true).write(true).open(&path)?;
        Ok(SharedPtr { path, file })
    }

    fn read(&self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        self.file.read_exact_at(&mut b, 0)?;
        Ok(u64::from_ne_bytes(b))
    }

    /// Add `n` to the pointer; returns its value before.
    pub fn fetch_add(&self, n: u64) -> io::Result<u64> {
        let _lock = super::access::RangeLock::new(&self.file, 0, 8, true)?;
        let old = self.read()?;
        self.file.write_all_at(&(old + n).to_ne_bytes(), 0)?;
        Ok(old)
    }

    pub fn get(&self) -> io::Result<u64> {
        let _lock = super::access::RangeLock::new(&self.file, 0, 8, false)?;
        self.read()
    }

    pub fn set(&self, v: u64) -> io::Result<()> {
        let _lock = super::access::RangeLock::new(&self.file, 0, 8, true)?;
        self.file.write_all_at(&v.to_ne_bytes(), 0)
    }

    /// Remove the sidecar (rank 0, once every member is done with it).
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_adds_up_across_handles() {
        let data = std::env::temp_dir().join(format!("gridmpi-shfp-test-{}", std::process::id()));
        let path = sidecar_path(&data, 0xab, 7);
        assert!(path.file_name().unwrap().to_string_lossy().starts_with(".gridmpi-shfp-test-"));
        let a = SharedPtr::create(path.clone(), 5).unwrap();
        let b = SharedPtr::open(path.clone()).unwrap();
        assert_eq!(a.fetch_add(3).unwrap(), 5);
        assert_eq!(b.fetch_add(2).unwrap(), 8);
        assert_eq!(a.get().unwrap(), 10);
        b.set(1).unwrap();
        assert_eq!(a.get().unwrap(), 1);
        a.remove();
        assert!(!path.exists());
    }
}

//! GridMPI's process checkpointer, in user space (no root, no kernel
//! module, no CRIU/DMTCP): a process writes an image of itself
//! ([`checkpoint`], or `gridmpi_checkpoint()` from C), and
//! `gridmpi-restore IMAGE` rebuilds it in a new process, where the same
//! call returns again, saying "restarted". docs/checkpoint.md tells what
//! the image holds, how restoring works and what is not restored yet.
//!
//! - [`image`]: the file format (header, meta section, memory contents);
//! - [`machine`]: the machine facts an image depends on, and the check;
//! - [`save`]: writing the image, from the checkpoint signal's handler;
//! - [`restore`]: the restorer, and the blob that rebuilds the process;
//! - [`hash`]: the sections' checksum.
//!
//! x86_64 Linux only.

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
compile_error!("gridmpi-checkpoint saves and restores x86_64 Linux processes only");

pub mod hash;
pub mod image;
pub mod machine;
pub mod restore;
pub mod save;

pub use save::{checkpoint, checkpoint_after, handover, Outcome};

/// C: `int gridmpi_checkpoint(const char *path)`. Returns 0 in the
/// process that wrote the image, 1 in a process restored from it, -1 on
/// an error (the reason is printed on stderr, the process goes on).
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn gridmpi_checkpoint(path: *const libc::c_char) -> libc::c_int {
    if path.is_null() {
        eprintln!("gridmpi_checkpoint: the path is NULL");
        return -1;
    }
    let p = match std::ffi::CStr::from_ptr(path).to_str() {
        Ok(p) => p,
        Err(_) => {
            eprintln!("gridmpi_checkpoint: the path is not UTF-8");
            return -1;
        }
    };
    match checkpoint(p) {
        Ok(Outcome::Checkpointed { .. }) => 0,
        Ok(Outcome::Restarted) => 1,
        Err(e) => {
            eprintln!("{e}");
            -1
        }
    }
}

/// C: `int gridmpi_checkpoint_after(unsigned ms, const char *path, int then_kill)`.
/// Starts a thread that, `ms` milliseconds later, checkpoints the process
/// wherever its threads are (the moment is the caller's choice, not a
/// point the program reached), then kills it with SIGKILL if `then_kill`.
/// Returns 0, or -1 if the thread cannot be started. A failed checkpoint
/// prints its reason and exits the process with status 3.
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn gridmpi_checkpoint_after(
    ms: libc::c_uint,
    path: *const libc::c_char,
    then_kill: libc::c_int,
) -> libc::c_int {
    if path.is_null() {
        eprintln!("gridmpi_checkpoint_after: the path is NULL");
        return -1;
    }
    let p = std::ffi::CStr::from_ptr(path)
        .to_string_lossy()
        .into_owned();
    match checkpoint_after(
        std::time::Duration::from_millis(ms as u64),
        p,
        then_kill != 0,
    ) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{e}");
            -1
        }
    }
}

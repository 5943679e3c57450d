//! The state's lock, skipped while one thread alone calls MPI.
//!
//! Every MPI call takes the library's lock ([`crate::state::lock`]). Taken
//! and released with no other thread around, it still costs two atomic
//! read-modify-write instructions, about 10 ns on this project's machines;
//! a small message on one host pays it twice on its critical path (the
//! receiver's look once the frame is in, the sender's write), against a
//! one-way latency of 100-130 ns. When MPI_Init was asked for less than
//! MPI_THREAD_MULTIPLE, only the thread that called it normally calls MPI,
//! so that thread, the *owner*, reaches the state without the lock.
//!
//! Another thread may still come: one of the library's own (the failure
//! notices, checkpoints, the progress thread), a tool reading MPI_T
//! variables, or a user's thread under MPI_THREAD_SERIALIZED. It revokes
//! the owner's privilege for good before it takes the lock: it sets
//! [`REVOKED`], makes every thread of the process pass a full memory
//! barrier (`membarrier`), and waits until the owner is out of the state
//! ([`IN_USE`]). The owner marks itself in the state and then reads
//! [`REVOKED`] with only a compiler barrier between them: the revoker's
//! barrier runs on the owner's core either before the owner's mark (then
//! the owner's read comes after it and sees the revocation) or after it
//! (then the revoker sees the mark and waits). This is the asymmetric
//! Dekker pattern: the heavy side pays a system call once, the common side
//! pays nothing.

use std::sync::atomic::{compiler_fence, AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// The state's slot inside the lock (null: no owner).
static SLOT: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
/// The owner's `pthread_self`.
static OWNER: AtomicU64 = AtomicU64::new(0);
/// The owner is reaching the state without the lock now.
static IN_USE: AtomicBool = AtomicBool::new(false);
/// Another thread came: the lock is for everyone from now on.
static REVOKED: AtomicBool = AtomicBool::new(false);

// <linux/membarrier.h>
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int) -> bool {
    // SAFETY: the system call reads no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) == 0 }
}

fn me() -> u64 {
    // SAFETY: no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// Make the calling thread the owner of `slot` (the state inside its
/// lock, which the caller holds). False when the kernel offers no
/// expedited barrier: everyone keeps taking the lock.
pub(crate) fn begin<T>(slot: *mut T) -> bool {
    if REVOKED.load(Ordering::Acquire) || !membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) {
        return false;
    }
    OWNER.store(me(), Ordering::Relaxed);
    SLOT.store(slot as *mut (), Ordering::Release);
    true
}

/// No owner any more (the state is being taken out of its lock). Called
/// under the lock or by the owner.
pub(crate) fn end() {
    SLOT.store(std::ptr::null_mut(), Ordering::Release);
}

/// The owner is out of the state again when this drops.
pub(crate) struct Entered(*mut ());

impl Entered {
    pub(crate) fn slot<T>(&self) -> *mut T {
        self.0 as *mut T
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        IN_USE.store(false, Ordering::Release);
    }
}

/// The state's slot, for the owner while nobody revoked its privilege.
#[inline]
pub(crate) fn enter() -> Option<Entered> {
    let slot = SLOT.load(Ordering::Relaxed);
    if slot.is_null() || OWNER.load(Ordering::Relaxed) != me() {
        return None;
    }
    IN_USE.store(true, Ordering::Relaxed);
    // The revoker's membarrier is the hardware barrier between the mark
    // and the read (module doc).
    compiler_fence(Ordering::SeqCst);
    if REVOKED.load(Ordering::Relaxed) {
        IN_USE.store(false, Ordering::Release);
        return None;
    }
    Some(Entered(slot))
}

/// Whether a thread other than the owner must revoke before it takes the
/// lock.
pub(crate) fn foreign() -> bool {
    !SLOT.load(Ordering::Acquire).is_null() && !REVOKED.load(Ordering::Acquire) && OWNER.load(Ordering::Relaxed) != me()
}

/// End the owner's privilege for good and wait until it is out of the
/// state; the lock alone guards it afterwards.
pub(crate) fn revoke() {
    REVOKED.store(true, Ordering::SeqCst);
    // Registered in `begin` (the privilege exists only if it worked).
    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
    while IN_USE.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
}

/// Whether the owner's privilege still holds.
#[cfg(test)]
fn active() -> bool {
    !SLOT.load(Ordering::Acquire).is_null() && !REVOKED.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The owner counts through the slot without a lock while it can, and
    /// under the lock once a second thread revoked the privilege; the second
    /// thread counts under the lock. No count is lost: the two never reach
    /// the slot at once.
    #[test]
    fn a_second_thread_revokes_and_no_update_is_lost() {
        static LOCK: Mutex<()> = Mutex::new(());
        let mut counter: Box<u64> = Box::new(0);
        let slot: *mut u64 = &mut *counter;
        let addr = slot as usize;
        const EACH: u64 = 20_000_000;
        let owner = std::thread::spawn(move || {
            let slot = addr as *mut u64;
            assert!(begin(slot), "membarrier is available on Linux 4.14 and later");
            assert!(active());
            let mut fast = 0u64;
            for _ in 0..EACH {
                match enter() {
                    Some(e) => {
                        // SAFETY: the owner alone reaches the slot while entered.
                        unsafe { *e.slot::<u64>() += 1 };
                        fast += 1;
                    }
                    None => {
                        let _g = LOCK.lock().unwrap();
                        // SAFETY: under the lock once revoked.
                        unsafe { *slot += 1 };
                    }
                }
            }
            fast
        });
        // Let the owner run unlocked for a while, then come as a stranger.
        while !active() {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(foreign());
        revoke();
        assert!(!active() && !foreign());
        for _ in 0..EACH {
            let _g = LOCK.lock().unwrap();
            // SAFETY: the owner is out of the slot for good (revoked).
            unsafe { *(addr as *mut u64) += 1 };
        }
        let fast = owner.join().unwrap();
        end();
        assert!(fast > 0 && fast < EACH, "the owner went without the lock, then with it ({fast})");
        assert_eq!(*counter, 2 * EACH);
    }
}

//! A user buffer: base address, count and datatype, as given to an MPI call.
//!
//! The engine and the transports move bytes in and out of user memory only
//! through this type, so the unsafety of raw user pointers is confined here:
//! the MPI standard makes the user promise that the memory described by
//! (base, count, datatype) stays valid and untouched until the operation
//! completes, and nothing touches it after the operation is complete.

use crate::Datatype;
use std::sync::Arc;

#[derive(Clone)]
pub struct UserBuf {
    base: *mut u8,
    count: u64,
    dt: Arc<Datatype>,
    /// Packed size in bytes: count * dt.size().
    len: u64,
    /// Start of the data when it is one dense run.
    contig: Option<*mut u8>,
}

// SAFETY: a UserBuf is only a description of user memory; MPI's rules make
// the user responsible for not touching the memory concurrently with the
// operation, and the library touches it from one thread at a time.
unsafe impl Send for UserBuf {}
unsafe impl Sync for UserBuf {}

impl std::fmt::Debug for UserBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UserBuf({:p}, {} x {} bytes)", self.base, self.count, self.dt.size())
    }
}

impl UserBuf {
    /// Describe `count` items of `dt` at `base`.
    ///
    /// # Safety
    /// The memory described must be valid for the operations done on it
    /// (reads for sends, writes for receives) until the operation completes.
    /// The caller checks that `count * size` does not overflow.
    pub unsafe fn new(base: *mut u8, count: u64, dt: Arc<Datatype>) -> UserBuf {
        let len = count.saturating_mul(dt.size());
        // One dense run in packed order: any count of a contiguous type, or
        // one item whose data is a single run (a reversed vector is dense
        // but not in order, so it is not one).
        let contig = if dt.is_contiguous() {
            Some(base.wrapping_offset(dt.true_lb() as isize))
        } else if count <= 1 {
            dt.single_run().map(|(off, _)| base.wrapping_offset(off as isize))
        } else {
            None
        };
        UserBuf { base, count, dt, len, contig }
    }

    /// Items `first .. first + n` of this buffer as a buffer of their own
    /// (a partition of a partitioned message); None when they are not all
    /// inside it.
    pub fn items(&self, first: u64, n: u64) -> Option<UserBuf> {
        if first.checked_add(n)? > self.count {
            return None;
        }
        let offset = i64::try_from(first).ok()?.checked_mul(self.dt.extent())?;
        // SAFETY: the items lie inside the memory this buffer describes, for
        // which the caller of `new` made its promise.
        Some(unsafe { UserBuf::new(self.base.wrapping_offset(isize::try_from(offset).ok()?), n, self.dt.clone()) })
    }

    /// An owned byte vector viewed as a buffer of `MPI_BYTE`s.
    pub fn empty() -> UserBuf {
        let dt = Arc::new(Datatype::basic(crate::BasicType::Byte));
        UserBuf { base: std::ptr::null_mut(), count: 0, dt, len: 0, contig: Some(std::ptr::null_mut()) }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn base(&self) -> *mut u8 {
        self.base
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn datatype(&self) -> &Arc<Datatype> {
        &self.dt
    }

    /// The data as one dense run, when it is one.
    pub fn contiguous(&self) -> Option<*mut u8> {
        self.contig
    }

    /// Copy `out.len()` packed bytes starting at packed offset `from` out of
    /// the buffer. Returns the bytes copied.
    ///
    /// # Safety
    /// See [`UserBuf::new`]: the memory must be readable.
    pub unsafe fn read_packed(&self, from: u64, out: &mut [u8]) -> usize {
        let n = (self.len.saturating_sub(from)).min(out.len() as u64) as usize;
        if n == 0 {
            return 0;
        }
        match self.contig {
            Some(p) => {
                std::ptr::copy_nonoverlapping(p.add(from as usize), out.as_mut_ptr(), n);
                n
            }
            None => crate::pack(self.base, self.count, &self.dt, from, &mut out[..n]),
        }
    }

    /// Copy `data` into the buffer at packed offset `from`, clipped to the
    /// buffer's size. Returns the bytes stored.
    ///
    /// # Safety
    /// See [`UserBuf::new`]: the memory must be writable.
    pub unsafe fn write_packed(&self, from: u64, data: &[u8]) -> usize {
        let n = (self.len.saturating_sub(from)).min(data.len() as u64) as usize;
        if n == 0 {
            return 0;
        }
        match self.contig {
            Some(p) => {
                std::ptr::copy_nonoverlapping(data.as_ptr(), p.add(from as usize), n);
                n
            }
            None => crate::unpack(self.base, self.count, &self.dt, from, &data[..n]),
        }
    }

    /// The contiguous runs covering packed bytes `[from, from+len)`, as
    /// (address, length), appended to `out`; at most `max_runs` runs.
    /// Returns the bytes covered.
    pub fn runs(&self, from: u64, len: u64, max_runs: usize, out: &mut Vec<(*mut u8, usize)>) -> u64 {
        let end = (from.saturating_add(len)).min(self.len);
        if from >= end {
            return 0;
        }
        if let Some(p) = self.contig {
            out.push((p.wrapping_add(from as usize), (end - from) as usize));
            return end - from;
        }
        let mut cur = self.dt.cursor(self.count);
        cur.seek(from);
        let mut covered = 0u64;
        let mut n = 0;
        while n < max_runs && from + covered < end {
            let want = (end - from - covered).min(usize::MAX as u64) as usize;
            match cur.next_run(want) {
                Some((off, l)) => {
                    out.push((self.base.wrapping_offset(off as isize), l));
                    covered += l as u64;
                    n += 1;
                }
                None => break,
            }
        }
        covered
    }

    /// Typed copy from `src` into `self` (a local message): min of both sizes.
    ///
    /// # Safety
    /// Both buffers must be valid; they must not overlap.
    pub unsafe fn copy_from(&self, src: &UserBuf) -> u64 {
        let n = self.len.min(src.len);
        if n == 0 {
            return 0;
        }
        if let (Some(d), Some(s)) = (self.contig, src.contig) {
            std::ptr::copy_nonoverlapping(s, d, n as usize);
            return n;
        }
        if let Some(s) = src.contig {
            return self.write_packed(0, std::slice::from_raw_parts(s, n as usize)) as u64;
        }
        if let Some(d) = self.contig {
            return src.read_packed(0, std::slice::from_raw_parts_mut(d, n as usize)) as u64;
        }
        crate::copy(src.base, src.count, &src.dt, self.base, self.count, &self.dt).min(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BasicType;

    #[test]
    fn items_are_a_window_of_whole_items() {
        // Two ints of every three: items of extent 12 holding 8 bytes.
        let int = Arc::new(Datatype::basic(BasicType::Int));
        let two = Arc::new(Datatype::contiguous(2, &int).unwrap());
        let dt = Arc::new(Datatype::resized(&two, 0, 12).unwrap());
        let mut mem: Vec<i32> = (0..30).collect();
        // SAFETY: `mem` holds 10 items of 12 bytes.
        let all = unsafe { UserBuf::new(mem.as_mut_ptr() as *mut u8, 10, dt) };
        let part = all.items(4, 3).unwrap();
        assert_eq!((part.count(), part.len()), (3, 24));
        let mut out = [0u8; 24];
        // SAFETY: the window lies inside `mem`.
        unsafe { part.read_packed(0, &mut out) };
        let got: Vec<i32> = out.chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, [12, 13, 15, 16, 18, 19]);
        assert!(all.items(8, 2).is_some());
        assert!(all.items(8, 3).is_none());
        assert!(all.items(u64::MAX, 1).is_none());
    }
}

//! Moving data between typed user buffers and packed bytes: [`pack`],
//! [`unpack`], the typed [`copy`], and their resumable [`Cursor`] forms.
//!
//! Each run is one `memcpy` (or, for repeats of a short run of 1, 2, 4, 8
//! or 16 bytes, a tight loop of unaligned loads and stores), so a vector of
//! doubles moves at close to memory speed; a contiguous type is a single
//! `memcpy`. Nothing allocates.
//!
//! # Safety contract (all functions here)
//! `base` is the address of the user buffer (what the MPI call received);
//! for every run the datatype places within the bytes being moved, the
//! memory `base + offset .. base + offset + len` must be valid for reads
//! (pack) or writes (unpack), where `offset` ranges over the type map of
//! the `count` items exactly as MPI defines it. The packed buffer is a
//! Rust slice. The user buffer must not overlap the packed slice. Pointers
//! are formed with wrapping arithmetic and dereferenced only as the
//! contract allows.

use crate::cursor::{Cursor, Sink};
use crate::layout::{Kid, Part};
use crate::datatype::Datatype;

/// Copies `len` bytes; small fixed sizes compile to one load and store.
///
/// Runs of 4 to 32 bytes are copied as two possibly overlapping words
/// (the first and the last), so runs of mixed short lengths (an indexed
/// type whose adjacent blocks merged) take one predictable branch instead
/// of an indirect jump per length, which mispredicted on such mixes.
///
/// # Safety
/// `src` valid for reading and `dst` for writing `len` bytes, not
/// overlapping.
#[inline(always)]
unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    /// The first and the last `W` bytes of a run of `W..=2W` bytes.
    ///
    /// # Safety
    /// As [`copy_bytes`], with `W <= len <= 2 * W`.
    #[inline(always)]
    unsafe fn ends<W: Copy>(src: *const u8, dst: *mut u8, len: usize) {
        let w = core::mem::size_of::<W>();
        // SAFETY: both words lie within the run (W <= len); unaligned
        // accesses because user buffers carry no alignment guarantee.
        unsafe {
            let (head, tail) = (src.cast::<W>().read_unaligned(), src.add(len - w).cast::<W>().read_unaligned());
            dst.cast::<W>().write_unaligned(head);
            dst.add(len - w).cast::<W>().write_unaligned(tail);
        }
    }
    // SAFETY: forwarded from the caller.
    unsafe {
        if len >= 8 {
            if len <= 16 {
                ends::<u64>(src, dst, len)
            } else if len <= 32 {
                ends::<u128>(src, dst, len)
            } else {
                core::ptr::copy_nonoverlapping(src, dst, len)
            }
        } else if len >= 4 {
            ends::<u32>(src, dst, len)
        } else if len >= 2 {
            ends::<u16>(src, dst, len)
        } else if len == 1 {
            *dst = *src
        }
    }
}

/// `n` runs of `L` bytes: a gather (`src` strided, `dst` dense) or a
/// scatter (the reverse), monomorphised per small `L`.
///
/// # Safety
/// Every run must be valid as for [`copy_bytes`].
#[inline(always)]
unsafe fn strided_fixed<const L: usize>(src: *const u8, src_step: isize, dst: *mut u8, dst_step: isize, n: u64) {
    let (mut s, mut d) = (src, dst);
    for _ in 0..n {
        // SAFETY: forwarded from the caller (one run of L bytes each).
        unsafe { copy_bytes(s, d, L) };
        s = s.wrapping_offset(src_step);
        d = d.wrapping_offset(dst_step);
    }
}

/// # Safety
/// As [`strided_fixed`], with runs of `len` bytes.
#[inline(always)]
unsafe fn strided_copy(src: *const u8, src_step: isize, dst: *mut u8, dst_step: isize, len: usize, n: u64) {
    // SAFETY: forwarded from the caller.
    unsafe {
        match len {
            8 => strided_fixed::<8>(src, src_step, dst, dst_step, n),
            4 => strided_fixed::<4>(src, src_step, dst, dst_step, n),
            16 => strided_fixed::<16>(src, src_step, dst, dst_step, n),
            2 => strided_fixed::<2>(src, src_step, dst, dst_step, n),
            1 => strided_fixed::<1>(src, src_step, dst, dst_step, n),
            // Fixed lengths let the compiler inline the copy as wide moves.
            12 => strided_fixed::<12>(src, src_step, dst, dst_step, n),
            24 => strided_fixed::<24>(src, src_step, dst, dst_step, n),
            32 => strided_fixed::<32>(src, src_step, dst, dst_step, n),
            64 => strided_fixed::<64>(src, src_step, dst, dst_step, n),
            _ => {
                let (mut s, mut d) = (src, dst);
                for _ in 0..n {
                    core::ptr::copy_nonoverlapping(s, d, len);
                    s = s.wrapping_offset(src_step);
                    d = d.wrapping_offset(dst_step);
                }
            }
        }
    }
}

/// Moves whole `parts` (of one instance of a flat sequence at `origin`)
/// from the user buffer at `base` to the dense side (`PACK`) or back;
/// returns the dense pointer after them.
///
/// The dense pointer lives in a local: kept in the sink, it went to memory
/// and back between runs (a store of data may alias the sink), a chain
/// that cost about 5 cycles a run on indexed types of short blocks.
///
/// # Safety
/// Every part lies in the user buffer and the dense side has room for
/// them, as for [`copy_bytes`]; only the source side is read.
#[inline(always)]
unsafe fn move_parts<const PACK: bool>(base: *mut u8, origin: i64, parts: &[Part], kids: &[Kid], mut dense: *mut u8) -> *mut u8 {
    // One kid, a run whose copies touch (an indexed type of a predefined
    // element): each part is one run of `count` elements, no lookup.
    if let [Kid { dense: Some(len), .. }] = kids {
        for part in parts {
            let user = base.wrapping_offset(origin.wrapping_add(part.disp) as isize);
            let bytes = (len * part.count) as usize;
            // SAFETY: forwarded from the caller.
            unsafe {
                if PACK {
                    copy_bytes(user, dense, bytes)
                } else {
                    copy_bytes(dense, user, bytes)
                }
            }
            dense = dense.wrapping_add(bytes);
        }
        return dense;
    }
    for part in parts {
        let kid = &kids[part.kid as usize];
        let user = base.wrapping_offset(origin.wrapping_add(part.disp) as isize);
        let (len, n) = match kid.dense {
            Some(len) => ((len * part.count) as usize, 1),
            None => (kid.size as usize, part.count),
        };
        // SAFETY: forwarded from the caller.
        unsafe {
            match (n, PACK) {
                (1, true) => copy_bytes(user, dense, len),
                (1, false) => copy_bytes(dense, user, len),
                (_, true) => strided_copy(user, kid.stride as isize, dense, len as isize, len, n),
                (_, false) => strided_copy(dense, len as isize, user, kid.stride as isize, len, n),
            }
        }
        dense = dense.wrapping_add(len * n as usize);
    }
    dense
}

/// Gathers user-buffer runs into a dense output.
struct Gather {
    base: *const u8,
    out: *mut u8,
}

impl Sink for Gather {
    #[inline]
    fn run(&mut self, off: i64, len: usize) {
        // SAFETY: the run lies in the caller's buffer (module contract) and
        // `out` has room: `drive` produces at most the slice's length.
        unsafe { copy_bytes(self.base.wrapping_offset(off as isize), self.out, len) };
        self.out = self.out.wrapping_add(len);
    }
    #[inline]
    fn strided(&mut self, off: i64, stride: i64, len: usize, n: u64) {
        let src = self.base.wrapping_offset(off as isize);
        // SAFETY: as in `run`, for each of the n runs.
        unsafe { strided_copy(src, stride as isize, self.out, len as isize, len, n) };
        self.out = self.out.wrapping_add(len * n as usize);
    }
    fn parts(&mut self, origin: i64, parts: &[Part], kids: &[Kid]) {
        // SAFETY: the parts lie in the caller's buffer and `out` has room
        // for them, as in `run`; the user buffer is only read (PACK).
        self.out = unsafe { move_parts::<true>(self.base.cast_mut(), origin, parts, kids, self.out) };
    }
}

/// Scatters a dense input into user-buffer runs.
struct Scatter {
    base: *mut u8,
    input: *const u8,
}

impl Sink for Scatter {
    #[inline]
    fn run(&mut self, off: i64, len: usize) {
        // SAFETY: as for `Gather::run`, reversed.
        unsafe { copy_bytes(self.input, self.base.wrapping_offset(off as isize), len) };
        self.input = self.input.wrapping_add(len);
    }
    #[inline]
    fn strided(&mut self, off: i64, stride: i64, len: usize, n: u64) {
        let dst = self.base.wrapping_offset(off as isize);
        // SAFETY: as in `run`, for each of the n runs.
        unsafe { strided_copy(self.input, len as isize, dst, stride as isize, len, n) };
        self.input = self.input.wrapping_add(len * n as usize);
    }
    fn parts(&mut self, origin: i64, parts: &[Part], kids: &[Kid]) {
        // SAFETY: as for `Gather::parts`, reversed; the dense input is only
        // read.
        self.input = unsafe { move_parts::<false>(self.base, origin, parts, kids, self.input.cast_mut()) }.cast_const();
    }
}

impl Cursor<'_> {
    /// Packs from the current position into `out` (as much as fits);
    /// returns the bytes written and advances.
    ///
    /// # Safety
    /// See the module docs: `base` must be the user buffer of the `count`
    /// items this cursor walks.
    pub unsafe fn pack(&mut self, base: *const u8, out: &mut [u8]) -> usize {
        let mut sink = Gather { base, out: out.as_mut_ptr() };
        self.drive(out.len() as u64, &mut sink) as usize
    }

    /// Unpacks `input` into the user buffer from the current position;
    /// returns the bytes consumed (less than `input.len()` at the end of
    /// the items) and advances.
    ///
    /// # Safety
    /// See the module docs.
    pub unsafe fn unpack(&mut self, base: *mut u8, input: &[u8]) -> usize {
        let mut sink = Scatter { base, input: input.as_ptr() };
        self.drive(input.len() as u64, &mut sink) as usize
    }
}

/// Where the data of `count` contiguous items starts, and how many packed
/// bytes they hold, if `dt` is contiguous.
fn dense_span(dt: &Datatype, count: u64) -> Option<(i64, u64)> {
    dt.is_contiguous().then(|| (dt.true_lb(), count.saturating_mul(dt.size())))
}

/// Copies the packed bytes `from..` of `count` items of `dt` at `base`
/// into `out`, as many as fit; returns the number written (less than
/// `out.len()` only at the end of the data).
///
/// # Safety
/// See the module docs.
pub unsafe fn pack(base: *const u8, count: u64, dt: &Datatype, from: u64, out: &mut [u8]) -> usize {
    if let Some((start, total)) = dense_span(dt, count) {
        if from >= total {
            return 0;
        }
        let n = (total - from).min(out.len() as u64) as usize;
        let src = base.wrapping_offset(start as isize).wrapping_add(from as usize);
        // SAFETY: the bytes are the type map of the items (module contract);
        // `out` holds at least n bytes; they do not overlap (contract).
        unsafe { core::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), n) };
        return n;
    }
    let mut cursor = dt.cursor(count);
    cursor.seek(from);
    // SAFETY: forwarded (module contract).
    unsafe { cursor.pack(base, out) }
}

/// Copies `input` into the packed bytes `from..` of `count` items of `dt`
/// at `base`; returns the number of input bytes used (less than
/// `input.len()` only at the end of the items).
///
/// # Safety
/// See the module docs.
pub unsafe fn unpack(base: *mut u8, count: u64, dt: &Datatype, from: u64, input: &[u8]) -> usize {
    if let Some((start, total)) = dense_span(dt, count) {
        if from >= total {
            return 0;
        }
        let n = (total - from).min(input.len() as u64) as usize;
        let dst = base.wrapping_offset(start as isize).wrapping_add(from as usize);
        // SAFETY: as in `pack`.
        unsafe { core::ptr::copy_nonoverlapping(input.as_ptr(), dst, n) };
        return n;
    }
    let mut cursor = dt.cursor(count);
    cursor.seek(from);
    // SAFETY: forwarded (module contract).
    unsafe { cursor.unpack(base, input) }
}

/// Typed copy: the packed stream of `count_s` items of `dt_s` at `src`
/// into that of `count_d` items of `dt_d` at `dst` (the type signatures
/// are assumed to match, as for a send and a receive). Copies the smaller
/// of the two packed sizes and returns it.
///
/// # Safety
/// `src` and `dst` as in the module docs for pack and unpack respectively;
/// the bytes read must not overlap the bytes written.
pub unsafe fn copy(src: *const u8, count_s: u64, dt_s: &Datatype, dst: *mut u8, count_d: u64, dt_d: &Datatype) -> u64 {
    let total_s = count_s.saturating_mul(dt_s.size());
    let total_d = count_d.saturating_mul(dt_d.size());
    let total = total_s.min(total_d);
    if total == 0 {
        return 0;
    }
    // A slice may not exceed isize::MAX bytes; no real buffer does, but
    // walk both cursors rather than build one from a bogus count.
    let sliceable = total <= isize::MAX as u64;
    if let Some((start, _)) = dense_span(dt_s, count_s).filter(|_| sliceable) {
        let p = src.wrapping_offset(start as isize);
        // SAFETY: `total` bytes from `p` are the source's data (contract);
        // `total` fits the address space since they exist.
        let input = unsafe { core::slice::from_raw_parts(p, total as usize) };
        // SAFETY: forwarded.
        return unsafe { unpack(dst, count_d, dt_d, 0, input) } as u64;
    }
    if let Some((start, _)) = dense_span(dt_d, count_d).filter(|_| sliceable) {
        let p = dst.wrapping_offset(start as isize);
        // SAFETY: as above, for the destination.
        let out = unsafe { core::slice::from_raw_parts_mut(p, total as usize) };
        // SAFETY: forwarded.
        return unsafe { pack(src, count_s, dt_s, 0, out) } as u64;
    }
    // Both non-contiguous: walk both in step.
    let mut cs = dt_s.cursor(count_s);
    let mut cd = dt_d.cursor(count_d);
    let (mut s_off, mut s_len) = (0i64, 0usize);
    let (mut d_off, mut d_len) = (0i64, 0usize);
    let mut done = 0u64;
    while done < total {
        if s_len == 0 {
            match cs.next_run(usize::MAX) {
                Some(r) => (s_off, s_len) = r,
                None => break,
            }
        }
        if d_len == 0 {
            match cd.next_run(usize::MAX) {
                Some(r) => (d_off, d_len) = r,
                None => break,
            }
        }
        let n = s_len.min(d_len).min((total - done) as usize);
        // SAFETY: both runs are in their buffers' type maps (contract).
        unsafe {
            copy_bytes(src.wrapping_offset(s_off as isize), dst.wrapping_offset(d_off as isize), n);
        }
        s_off = s_off.wrapping_add(n as i64);
        d_off = d_off.wrapping_add(n as i64);
        s_len -= n;
        d_len -= n;
        done += n as u64;
    }
    done
}

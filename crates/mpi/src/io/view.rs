//! A file view (MPI 4.1, 14.3) as a map from the view's byte stream to
//! file bytes.
//!
//! A view is a displacement, an etype and a filetype tiled from the
//! displacement on. The bytes a process sees are the data bytes of the
//! tiles, in order: its *stream*. An access of `n` etypes at offset `o`
//! (in etypes) covers stream bytes `o * esize .. (o + n) * esize`;
//! [`View::ranges`] says where they lie in the file. Everything here is
//! pure arithmetic on the filetype's type map, so it is tested on its own.
//!
//! Sizes are in the file's data representation. For `native` they are the
//! type map's; a representation whose element sizes differ (external32's
//! 4-byte MPI_LONG, a user-defined one) can only be placed by this map when
//! the filetype has no holes (then the stream is the file from the
//! displacement on), which [`View::new`] checks.

use gridmpi_datatype::Datatype;

/// One run of a filetype tile: `len` data bytes at `off` bytes from the
/// tile's origin, `start` bytes into the tile's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    off: u64,
    len: u64,
    start: u64,
}

#[derive(Clone, Debug)]
pub struct View {
    /// Absolute byte displacement of the first tile's origin.
    pub disp: u64,
    /// Bytes of one etype in the file.
    pub esize: u64,
    /// The runs of one tile; empty when the view is linear.
    runs: Vec<Run>,
    /// Stream bytes of one tile.
    tile_size: u64,
    /// Bytes from one tile's origin to the next (the filetype's extent).
    tile_extent: u64,
}

impl View {
    /// The default view: displacement 0, bytes, no holes.
    pub fn bytes() -> View {
        View { disp: 0, esize: 1, runs: Vec::new(), tile_size: 1, tile_extent: 1 }
    }

    /// A view of `filetype` tiled from `disp`; `esize` is the etype's size
    /// in the file's representation and `scaled` says whether that
    /// representation's sizes differ from the type map's. Errors say what
    /// the standard's rules on etype and filetype the arguments break.
    pub fn new(disp: i64, etype: &Datatype, filetype: &Datatype, esize: u64, scaled: bool) -> Result<View, String> {
        if disp < 0 {
            return Err(format!("invalid displacement {disp} (must not be negative)"));
        }
        let disp = disp as u64;
        check_monotone(etype, "etype")?;
        if esize == 0 || etype.size() == 0 {
            return Err("the etype has no data (its size is 0)".into());
        }
        if filetype.size() == 0 {
            return Err("the filetype has no data (its size is 0)".into());
        }
        if !filetype.size().is_multiple_of(etype.size()) {
            return Err(format!("the filetype's size ({}) is not a multiple of the etype's ({})", filetype.size(), etype.size()));
        }
        let runs = check_monotone(filetype, "filetype")?;
        let extent = filetype.extent();
        if extent <= 0 {
            return Err(format!("the filetype's extent ({extent}) must be positive to tile the file"));
        }
        let extent = extent as u64;
        let first = runs.first().map_or(0, |r| r.off);
        let end = runs.last().map_or(0, |r| r.off + r.len);
        if end > extent + first {
            return Err(format!("the filetype's data ends {end} bytes from its origin, past the next tile's first data ({}): its extent is too small, so tiles overlap", extent + first));
        }
        let linear = runs.len() == 1 && runs[0].off == 0 && runs[0].len == extent;
        if linear {
            return Ok(View { disp, esize, runs: Vec::new(), tile_size: extent, tile_extent: extent });
        }
        if scaled {
            return Err("a filetype with holes needs the native type sizes; this data representation's sizes differ".into());
        }
        Ok(View { disp, esize, runs, tile_size: filetype.size(), tile_extent: extent })
    }

    fn linear(&self) -> bool {
        self.runs.is_empty()
    }

    /// The file offset of stream byte `s`.
    pub fn file_offset(&self, s: u64) -> u64 {
        if self.linear() {
            return self.disp + s;
        }
        let (tile, within) = (s / self.tile_size, s % self.tile_size);
        let i = self.runs.partition_point(|r| r.start + r.len <= within);
        let r = self.runs[i];
        self.disp + tile * self.tile_extent + r.off + (within - r.start)
    }

    /// The file byte ranges (offset, length) of stream bytes
    /// `start .. start + len`, in stream order, adjacent ones merged.
    pub fn ranges(&self, start: u64, len: u64) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        if len == 0 {
            return out;
        }
        if self.linear() {
            out.push((self.disp + start, len));
            return out;
        }
        let (mut tile, within) = (start / self.tile_size, start % self.tile_size);
        let mut i = self.runs.partition_point(|r| r.start + r.len <= within);
        let mut skip = within - self.runs[i].start;
        let mut left = len;
        while left > 0 {
            let r = self.runs[i];
            let n = (r.len - skip).min(left);
            let at = self.disp + tile * self.tile_extent + r.off + skip;
            match out.last_mut() {
                Some(last) if last.0 + last.1 == at => last.1 += n,
                _ => out.push((at, n)),
            }
            left -= n;
            skip = 0;
            i += 1;
            if i == self.runs.len() {
                i = 0;
                tile += 1;
            }
        }
        out
    }

    /// How many stream bytes lie before file offset `end` (the stream's
    /// length in a file of `end` bytes).
    pub fn stream_before(&self, end: u64) -> u64 {
        if end <= self.disp {
            return 0;
        }
        if self.linear() {
            return end - self.disp;
        }
        // file_offset is increasing: find the first stream byte at or past `end`.
        let (mut lo, mut hi) = (0u64, ((end - self.disp) / self.tile_extent + 2) * self.tile_size);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.file_offset(mid) >= end {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

/// The runs of one item of `dt`, checked: displacements not negative and
/// increasing (each run starts at or after the end of the one before), as
/// MPI 4.1 14.3 requires of etypes and filetypes.
fn check_monotone(dt: &Datatype, what: &str) -> Result<Vec<Run>, String> {
    let mut runs: Vec<Run> = Vec::new();
    let mut start = 0u64;
    for (off, len) in dt.cursor(1) {
        if off < 0 {
            return Err(format!("the {what}'s type map has a negative displacement ({off}); file views need non-negative ones"));
        }
        let off = off as u64;
        match runs.last_mut() {
            Some(last) if off < last.off + last.len => {
                return Err(format!("the {what}'s type map is not monotonically non-decreasing (data at {off} after data up to {})", last.off + last.len));
            }
            Some(last) if off == last.off + last.len => last.len += len as u64,
            _ => runs.push(Run { off, len: len as u64, start }),
        }
        start += len as u64;
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridmpi_datatype::BasicType;
    use std::sync::Arc;

    fn int() -> Arc<Datatype> {
        Arc::new(Datatype::basic(BasicType::Int))
    }

    #[test]
    fn default_view_is_the_file() {
        let v = View::bytes();
        assert_eq!(v.ranges(10, 5), vec![(10, 5)]);
        assert_eq!(v.stream_before(100), 100);
        assert_eq!(v.file_offset(7), 7);
    }

    #[test]
    fn vector_filetype_interleaves_ranks() {
        // Rank 1 of 3: blocks of 2 ints every 6 ints, the first at int 2.
        let vec = Arc::new(Datatype::vector(1, 2, 6, &int()).unwrap());
        let ft = Datatype::resized(&Arc::new(Datatype::hindexed(&[1], &[8], &vec).unwrap()), 0, 24).unwrap();
        let v = View::new(100, &int(), &ft, 4, false).unwrap();
        assert_eq!(v.ranges(0, 8), vec![(108, 8)]);
        assert_eq!(v.ranges(0, 20), vec![(108, 8), (132, 8), (156, 4)]);
        assert_eq!(v.ranges(4, 8), vec![(112, 4), (132, 4)]);
        assert_eq!(v.file_offset(8), 132);
        // A file of 134 bytes holds 8 + 2 stream bytes.
        assert_eq!(v.stream_before(134), 10);
        assert_eq!(v.stream_before(108), 0);
        assert_eq!(v.stream_before(140), 16);
        assert_eq!(v.stream_before(50), 0);
    }

    #[test]
    fn contiguous_views_are_linear_and_merge() {
        let ft = Datatype::contiguous(4, &int()).unwrap();
        let v = View::new(3, &int(), &ft, 4, false).unwrap();
        assert_eq!(v.ranges(0, 100), vec![(3, 100)]);
        assert_eq!(v.stream_before(10), 7);
    }

    #[test]
    fn scaled_representations_need_linear_views() {
        let ft = Datatype::contiguous(4, &int()).unwrap();
        assert!(View::new(0, &int(), &ft, 8, true).is_ok());
        let holes = Datatype::vector(2, 1, 2, &int()).unwrap();
        assert!(View::new(0, &int(), &holes, 8, true).unwrap_err().contains("holes"));
    }

    #[test]
    fn bad_filetypes_are_refused() {
        let neg = Datatype::hindexed(&[1], &[-4], &int()).unwrap();
        assert!(View::new(0, &int(), &neg, 4, false).unwrap_err().contains("negative"));
        let back = Datatype::hindexed(&[1, 1], &[8, 0], &int()).unwrap();
        assert!(View::new(0, &int(), &back, 4, false).unwrap_err().contains("monotonic"));
        let short = Datatype::resized(&Arc::new(Datatype::contiguous(2, &int()).unwrap()), 0, 4).unwrap();
        assert!(View::new(0, &int(), &short, 4, false).unwrap_err().contains("overlap"));
        let byte = Datatype::basic(BasicType::Byte);
        assert!(View::new(0, &int(), &byte, 4, false).unwrap_err().contains("multiple"));
        assert!(View::new(-1, &int(), &int(), 4, false).is_err());
    }
}

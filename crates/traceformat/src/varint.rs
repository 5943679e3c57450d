//! The integers of the format: LEB128 varints (7 bits per byte, low first)
//! and zigzag for signed values, so small magnitudes of either sign take one
//! byte.

/// Append `v` as a varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Signed to unsigned: 0, -1, 1, -2, ... become 0, 1, 2, 3, ...
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Append a string: its length as a varint, then its UTF-8 bytes.
#[inline]
pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Reads varints and strings from a byte slice; `None` when the bytes end
/// (or a varint runs past 64 bits).
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8], pos: usize) -> Cursor<'a> {
        Cursor { bytes, pos }
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let byte = *self.bytes.get(self.pos)?;
            self.pos += 1;
            if shift >= 64 || (shift == 63 && byte & 0x7e != 0) {
                return None;
            }
            v |= ((byte & 0x7f) as u64) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
            shift += 7;
        }
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.varint()?.try_into().ok()
    }

    /// A string; invalid UTF-8 is replaced, not refused (it is only shown).
    pub(crate) fn string(&mut self) -> Option<String> {
        let n = usize::try_from(self.varint()?).ok()?;
        let s = self.bytes.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(String::from_utf8_lossy(s).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_leb128() {
        let mut v = Vec::new();
        put_varint(&mut v, 0);
        put_varint(&mut v, 127);
        put_varint(&mut v, 128);
        put_varint(&mut v, 300);
        assert_eq!(v, [0, 127, 0x80, 1, 0xac, 2]);
        let mut c = Cursor::new(&v, 0);
        assert_eq!([c.varint(), c.varint(), c.varint(), c.varint(), c.varint()], [Some(0), Some(127), Some(128), Some(300), None]);
        for x in [0, 1, 0x7f, 0x80, 0x3fff, 0x4000, u32::MAX as u64, u64::MAX - 1, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, x);
            assert_eq!(Cursor::new(&b, 0).varint(), Some(x));
            assert_eq!(Cursor::new(&b[..b.len() - 1], 0).varint(), None, "cut");
        }
        let mut max = Vec::new();
        put_varint(&mut max, u64::MAX);
        assert_eq!(max.len(), 10);
        assert_eq!(max[9], 1);
        // An 11th byte, or a 10th with more than the top bit, overflows.
        assert_eq!(Cursor::new(&[0xff; 11], 0).varint(), None);
        assert_eq!(Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02], 0).varint(), None);
    }

    #[test]
    fn zigzag_interleaves_signs() {
        assert_eq!([zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)], [0, 1, 2, 3]);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
        for v in [0, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn strings_carry_their_length() {
        let mut b = Vec::new();
        put_str(&mut b, "cubic");
        put_str(&mut b, "");
        assert_eq!(b[0], 5);
        let mut c = Cursor::new(&b, 0);
        assert_eq!(c.string().as_deref(), Some("cubic"));
        assert_eq!(c.string().as_deref(), Some(""));
        assert!(c.at_end());
        assert_eq!(Cursor::new(&b[..3], 0).string(), None);
    }
}

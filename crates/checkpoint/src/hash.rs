//! The image's checksum: a 64-bit streaming hash, eight bytes per step.
//!
//! Its job is to catch a truncated, damaged or half-written image, not an
//! attacker: every input bit reaches every output bit through a multiply and
//! a fold each step, so a flipped bit or a swapped block changes the result
//! with probability 1 - 2^-64 in practice. No dependency, and usable inside a
//! signal handler (no allocation).

const K: u64 = 0x9E37_79B9_7F4A_7C15;

#[derive(Clone, Copy)]
pub struct Hasher {
    h: u64,
    len: u64,
    tail: [u8; 8],
    ntail: usize,
}

impl Default for Hasher {
    fn default() -> Self {
        Self::new()
    }
}

impl Hasher {
    pub const fn new() -> Self {
        Hasher {
            h: 0x6772_6964_6d70_6921,
            len: 0,
            tail: [0; 8],
            ntail: 0,
        }
    }

    #[inline]
    fn word(&mut self, w: u64) {
        let x = (self.h ^ w).wrapping_mul(K);
        self.h = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ (x >> 32);
    }

    pub fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        if self.ntail > 0 {
            let take = (8 - self.ntail).min(data.len());
            self.tail[self.ntail..self.ntail + take].copy_from_slice(&data[..take]);
            self.ntail += take;
            data = &data[take..];
            if self.ntail < 8 {
                return;
            }
            let w = u64::from_le_bytes(self.tail);
            self.word(w);
            self.ntail = 0;
        }
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        let rest = chunks.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.ntail = rest.len();
    }

    pub fn finish(&self) -> u64 {
        let mut s = *self;
        if s.ntail > 0 {
            let mut t = [0u8; 8];
            t[..s.ntail].copy_from_slice(&s.tail[..s.ntail]);
            s.word(u64::from_le_bytes(t) ^ (0x80 << (8 * (s.ntail % 8))));
        }
        s.word(s.len);
        s.h ^ (s.h >> 31)
    }
}

pub fn hash(data: &[u8]) -> u64 {
    let mut h = Hasher::new();
    h.update(data);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_equals_one_shot() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let whole = hash(&data);
        for split in [0, 1, 7, 8, 9, 500, 999, 1000] {
            let mut h = Hasher::new();
            h.update(&data[..split]);
            h.update(&data[split..]);
            assert_eq!(h.finish(), whole, "split at {split}");
        }
    }

    #[test]
    fn a_flipped_bit_or_a_length_changes_it() {
        let data = vec![0u8; 64];
        let base = hash(&data);
        for bit in 0..64 * 8 {
            let mut d = data.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(hash(&d), base, "bit {bit}");
        }
        assert_ne!(hash(&data[..63]), base);
        assert_ne!(hash(&[0u8; 65]), base);
    }
}

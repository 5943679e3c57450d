//! Inputs made from valid encodings: a seeded PRNG picks a seed and applies
//! a few of the changes that break parsers (bit flips, boundary bytes,
//! length fields set to extremes, truncation, repeated or spliced ranges).

/// xorshift64*: small, fast, and the same sequence on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Bytes that separate or end things in the formats fuzzed here.
const SPECIAL_BYTES: [u8; 12] = [0, 1, 0x7f, 0x80, 0xff, b'\n', b'\r', b';', b'=', b' ', b'\\', b'0'];

/// Lengths and counts at the edges of what the parsers accept.
const EXTREME_U32: [u32; 10] = [0, 1, 2, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 64 << 20, (64 << 20) + 1, 1 << 30, (1 << 30) + 1];

/// `base` with 1 to 8 changes; `others` are spliced from.
pub fn mutate(rng: &mut Rng, base: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    let mut v = base.to_vec();
    let changes = 1 + rng.below(8).min(rng.below(8)); // mostly few
    for _ in 0..changes {
        let len = v.len();
        let at = rng.below(len + 1);
        match rng.below(11) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = SPECIAL_BYTES[rng.below(SPECIAL_BYTES.len())];
            }
            2 if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            3 if len >= 4 => {
                let i = rng.below(len - 3);
                let x = EXTREME_U32[rng.below(EXTREME_U32.len())];
                let bytes = if rng.below(2) == 0 { x.to_le_bytes() } else { x.to_be_bytes() };
                v[i..i + 4].copy_from_slice(&bytes);
            }
            4 if len >= 8 => {
                let i = rng.below(len - 7);
                let x = [0u64, u64::MAX, u64::MAX - 1, 1 << 63, i64::MAX as u64][rng.below(5)];
                v[i..i + 8].copy_from_slice(&x.to_le_bytes());
            }
            5 => v.truncate(at),
            6 if len > 0 => {
                let end = (at + 1 + rng.below(16)).min(len);
                v.drain(at.min(len - 1)..end);
            }
            7 if len > 0 => {
                // Repeat a range (a message sent twice, a field doubled).
                let start = rng.below(len);
                let end = (start + 1 + rng.below(64)).min(len);
                let piece = v[start..end].to_vec();
                v.splice(at..at, piece);
            }
            8 if !others.is_empty() => {
                let other = &others[rng.below(others.len())];
                let start = rng.below(other.len() + 1);
                let end = (start + rng.below(other.len() + 1 - start) + 1).min(other.len());
                v.splice(at..at, other[start..end].iter().copied());
            }
            9 => {
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                v.splice(at..at, bytes);
            }
            _ if len > 1 => {
                // Copy one range over another.
                let src = rng.below(len);
                let dst = rng.below(len);
                let n = (1 + rng.below(8)).min(len - src).min(len - dst);
                v.copy_within(src..src + n, dst);
            }
            _ => {}
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_makes_the_same_inputs() {
        let seeds = vec![b"hello world".to_vec(), vec![0; 40]];
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..100).map(|i| mutate(&mut rng, &seeds[i % 2], &seeds)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn mutations_change_inputs_in_every_way() {
        let seeds = vec![(0..64).collect::<Vec<u8>>()];
        let mut rng = Rng::new(1);
        let (mut shorter, mut longer, mut same_len_changed) = (0, 0, 0);
        for _ in 0..10_000 {
            let m = mutate(&mut rng, &seeds[0], &seeds);
            match m.len().cmp(&64) {
                std::cmp::Ordering::Less => shorter += 1,
                std::cmp::Ordering::Greater => longer += 1,
                std::cmp::Ordering::Equal => same_len_changed += (m != seeds[0]) as u32,
            }
        }
        assert!(shorter > 1000 && longer > 1000 && same_len_changed > 1000, "{shorter} {longer} {same_len_changed}");
    }
}

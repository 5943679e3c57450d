//! Type signatures: the sequence of basic types of a datatype's elements in
//! packed order, and what can be computed from it without walking memory.
//!
//! - A [`Sig`] is a hash of that sequence. It is a polynomial hash modulo
//!   the prime 2^61 - 1, so the hash of a concatenation and of `n`
//!   repetitions is computed from the parts' hashes in O(log n): a type of a
//!   billion elements hashes as fast as one of two.
//! - [`Datatype::elements_in`] and [`Datatype::bytes_of_elements`]
//!   translate between packed bytes and element counts (`MPI_Get_elements`,
//!   `MPI_Status_set_elements`).
//! - [`walk`] lists the signature as (basic type, repeat count) runs, for
//!   conversions such as external32.

use crate::basic::BasicType;
use crate::datatype::{Ctor, Datatype, Uniform};

const MODULUS: u64 = (1 << 61) - 1;
/// Base of the polynomial (any element of the field that is not tiny).
const BASE: u64 = 0x1d6f_3a9c_52b8_e147 % MODULUS;

fn mulmod(a: u64, b: u64) -> u64 {
    let p = a as u128 * b as u128;
    let r = (p & MODULUS as u128) as u64 + (p >> 61) as u64;
    let r = (r & MODULUS) + (r >> 61);
    if r >= MODULUS {
        r - MODULUS
    } else {
        r
    }
}

fn addmod(a: u64, b: u64) -> u64 {
    let s = a + b;
    if s >= MODULUS {
        s - MODULUS
    } else {
        s
    }
}

fn powmod(mut base: u64, mut exp: u64) -> u64 {
    let mut acc = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = mulmod(acc, base);
        }
        base = mulmod(base, base);
        exp >>= 1;
    }
    acc
}

/// `1 + x + ... + x^(n-1)` modulo the prime.
fn geometric(x: u64, n: u64) -> u64 {
    if n == 0 {
        0
    } else if n % 2 == 1 {
        addmod(1, mulmod(x, geometric(x, n - 1)))
    } else {
        let half = geometric(x, n / 2);
        mulmod(half, addmod(1, powmod(x, n / 2)))
    }
}

/// Hash of a signature plus its length modulo `MODULUS - 1` (exponents of
/// `BASE` only matter modulo that, by Fermat's little theorem).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sig {
    hash: u64,
    len: u64,
}

impl Sig {
    pub const EMPTY: Sig = Sig { hash: 0, len: 0 };

    /// `self` followed by `other`.
    pub fn concat(self, other: Sig) -> Sig {
        Sig {
            hash: addmod(mulmod(self.hash, powmod(BASE, other.len)), other.hash),
            len: (self.len + other.len) % (MODULUS - 1),
        }
    }

    /// `self` repeated `n` times.
    pub fn repeat(self, n: u64) -> Sig {
        let x = powmod(BASE, self.len);
        Sig {
            hash: mulmod(self.hash, geometric(x, n)),
            len: ((self.len as u128 * n as u128) % (MODULUS as u128 - 1)) as u64,
        }
    }

    pub fn hash(self) -> u64 {
        self.hash
    }
}

/// The signature of one element.
pub(crate) fn element(t: BasicType) -> Sig {
    if !Datatype::is_element(t) {
        return Sig::EMPTY;
    }
    // A fixed, well-mixed code per type (splitmix64 of its index).
    let mut z = (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    Sig { hash: z % MODULUS, len: 1 }
}

/// How a type's signature is made from its children's.
pub(crate) enum Shape<'a> {
    /// A single basic element (or a marker: zero elements).
    Basic(BasicType),
    /// Value then index.
    Pair(BasicType, BasicType),
    /// `n` copies of one old type's signature.
    Repeat(u64, &'a Datatype),
    /// Blocks of (`n` copies of a type), in order.
    Struct(&'a [i64], &'a [std::sync::Arc<Datatype>]),
}

impl Datatype {
    /// How many copies of the old type one item holds, for constructors
    /// with a single old type; computed once at construction.
    pub(crate) fn shape(&self) -> Shape<'_> {
        match &self.ctor {
            Ctor::Named(t) => Shape::Basic(*t),
            Ctor::F90 { basic, .. } => Shape::Basic(*basic),
            Ctor::Pair { value, index } => Shape::Pair(*value, *index),
            Ctor::Struct { blocklengths, types, .. } => Shape::Struct(blocklengths, types),
            Ctor::Dup(old) | Ctor::Resized { old, .. } => Shape::Repeat(1, old),
            Ctor::Contiguous { old, .. }
            | Ctor::Vector { old, .. }
            | Ctor::Hvector { old, .. }
            | Ctor::Indexed { old, .. }
            | Ctor::Hindexed { old, .. }
            | Ctor::IndexedBlock { old, .. }
            | Ctor::HindexedBlock { old, .. }
            | Ctor::Subarray { old, .. }
            | Ctor::Darray { old, .. } => {
                let copies = self.elements.checked_div(old.elements).unwrap_or(0);
                Shape::Repeat(copies, old)
            }
        }
    }

    /// Hash of the type signature of `count` items (for an optional check
    /// that sender and receiver agree). Two types with the same sequence of
    /// basic types hash the same, however they are built; equal hashes of
    /// different signatures are possible but unlikely (about 2^-61).
    pub fn signature_hash(&self, count: u64) -> u64 {
        self.sig.repeat(count).hash()
    }

    /// Hash of the signature of the first `elements` basic elements of a
    /// stream of items of this type (for a receiver comparing against
    /// [`Datatype::signature_hash`] of a sender that sent fewer elements
    /// than the receive buffer holds). `None` if the type has no elements
    /// and `elements > 0`.
    pub fn signature_hash_of_elements(&self, elements: u64) -> Option<u64> {
        if elements == 0 {
            return Some(Sig::EMPTY.hash());
        }
        if self.elements == 0 {
            return None;
        }
        let full = elements / self.elements;
        let rest = elements % self.elements;
        Some(self.sig.repeat(full).concat(self.sig_prefix(rest)).hash())
    }

    /// Signature of the first `n < self.elements` elements of one item.
    fn sig_prefix(&self, n: u64) -> Sig {
        if n == 0 {
            return Sig::EMPTY;
        }
        if let Uniform::One(t) = self.uniform {
            return element(t).repeat(n);
        }
        match self.shape() {
            Shape::Basic(t) => element(t),
            Shape::Pair(v, _) => element(v),
            Shape::Repeat(_, old) => {
                let full = n / old.elements;
                old.sig.repeat(full).concat(old.sig_prefix(n % old.elements))
            }
            Shape::Struct(blocklengths, types) => {
                let mut acc = Sig::EMPTY;
                let mut left = n;
                for (&bl, t) in blocklengths.iter().zip(types.iter()) {
                    let block = bl as u64 * t.elements;
                    if left >= block {
                        acc = acc.concat(t.sig.repeat(bl as u64));
                        left -= block;
                    } else {
                        let full = left / t.elements;
                        return acc.concat(t.sig.repeat(full)).concat(t.sig_prefix(left % t.elements));
                    }
                }
                acc
            }
        }
    }

    /// `MPI_Get_elements`: the number of basic elements in the first
    /// `bytes` bytes of packed data of items of this type, or `None`
    /// (`MPI_UNDEFINED`) if `bytes` does not end on an element boundary.
    pub fn elements_in(&self, bytes: u64) -> Option<u64> {
        if bytes == 0 {
            return Some(0);
        }
        if self.size == 0 {
            return None;
        }
        let full = bytes / self.size;
        let rest = self.elements_in_prefix(bytes % self.size)?;
        full.checked_mul(self.elements)?.checked_add(rest)
    }

    /// Elements in the first `bytes < self.size` bytes of one item.
    fn elements_in_prefix(&self, bytes: u64) -> Option<u64> {
        if bytes == 0 {
            return Some(0);
        }
        if let Uniform::One(t) = self.uniform {
            let s = t.size() as u64;
            return bytes.is_multiple_of(s).then_some(bytes / s);
        }
        match self.shape() {
            Shape::Basic(_) => None,
            Shape::Pair(v, _) => (bytes == v.size() as u64).then_some(1),
            Shape::Repeat(_, old) => {
                let full = bytes / old.size;
                Some(full * old.elements + old.elements_in_prefix(bytes % old.size)?)
            }
            Shape::Struct(blocklengths, types) => {
                let mut acc = 0u64;
                let mut left = bytes;
                for (&bl, t) in blocklengths.iter().zip(types.iter()) {
                    let block = bl as u64 * t.size;
                    if left >= block {
                        acc += bl as u64 * t.elements;
                        left -= block;
                    } else {
                        let full = left / t.size;
                        return Some(acc + full * t.elements + t.elements_in_prefix(left % t.size)?);
                    }
                }
                (left == 0).then_some(acc)
            }
        }
    }

    /// Packed bytes of the first `n` basic elements of a stream of items
    /// of this type (for `MPI_Status_set_elements`). `None` if the type has
    /// no elements and `n > 0`, or on overflow.
    pub fn bytes_of_elements(&self, n: u64) -> Option<u64> {
        if n == 0 {
            return Some(0);
        }
        if self.elements == 0 {
            return None;
        }
        let full = n / self.elements;
        full.checked_mul(self.size)?.checked_add(self.bytes_of_prefix(n % self.elements))
    }

    /// Bytes of the first `n < self.elements` elements of one item.
    fn bytes_of_prefix(&self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        if let Uniform::One(t) = self.uniform {
            return n * t.size() as u64;
        }
        match self.shape() {
            Shape::Basic(t) => t.size() as u64,
            Shape::Pair(v, _) => v.size() as u64,
            Shape::Repeat(_, old) => (n / old.elements) * old.size + old.bytes_of_prefix(n % old.elements),
            Shape::Struct(blocklengths, types) => {
                let mut acc = 0;
                let mut left = n;
                for (&bl, t) in blocklengths.iter().zip(types.iter()) {
                    let block = bl as u64 * t.elements;
                    if left >= block {
                        acc += bl as u64 * t.size;
                        left -= block;
                    } else {
                        return acc + (left / t.elements) * t.size + t.bytes_of_prefix(left % t.elements);
                    }
                }
                acc
            }
        }
    }
}

/// Calls `f(t, n)` for each run of `n` consecutive elements of basic type
/// `t` in the signature of `reps` items of `dt`, in packed order. Runs of
/// the same type may be split; markers are skipped.
pub(crate) fn walk(dt: &Datatype, reps: u64, f: &mut dyn FnMut(BasicType, u64)) {
    if reps == 0 || dt.elements == 0 {
        return;
    }
    if let Uniform::One(t) = dt.uniform {
        f(t, reps.saturating_mul(dt.elements));
        return;
    }
    match dt.shape() {
        Shape::Basic(t) => f(t, reps),
        Shape::Pair(v, i) => {
            for _ in 0..reps {
                f(v, 1);
                f(i, 1);
            }
        }
        Shape::Repeat(copies, old) => walk(old, reps.saturating_mul(copies), f),
        Shape::Struct(blocklengths, types) => {
            for _ in 0..reps {
                for (&bl, t) in blocklengths.iter().zip(types.iter()) {
                    walk(t, bl as u64, f);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_and_concat_agree_with_direct_hashing() {
        let a = element(BasicType::Int);
        let b = element(BasicType::Double);
        let ab = a.concat(b);
        // (ab)^5 built by repeat vs by concatenation.
        let mut direct = Sig::EMPTY;
        for _ in 0..5 {
            direct = direct.concat(ab);
        }
        assert_eq!(ab.repeat(5), direct);
        assert_eq!(ab.repeat(0), Sig::EMPTY);
        assert_eq!(ab.repeat(1), ab);
        // Order matters.
        assert_ne!(a.concat(b), b.concat(a));
        // Huge repeats do not overflow.
        let _ = ab.repeat(u64::MAX);
        assert_eq!(a.repeat(6), a.repeat(2).repeat(3));
    }

    #[test]
    fn geometric_series() {
        for x in [0u64, 1, 2, 12345] {
            for n in 0..20u64 {
                let mut s = 0;
                for k in 0..n {
                    s = addmod(s, powmod(x, k));
                }
                assert_eq!(geometric(x, n), s, "x={x} n={n}");
            }
        }
    }
}

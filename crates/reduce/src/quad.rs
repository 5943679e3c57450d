//! IEEE binary128 (`MPI_REAL16`, the parts of `MPI_COMPLEX32`) in software.
//!
//! Stable Rust has no `f128`, so the few operations the reductions need are
//! implemented here on the bit pattern (`u128`, little-endian in memory as
//! gfortran and gcc's `__float128` store it): addition, subtraction,
//! multiplication and comparison.
//!
//! Semantics (checked against gcc's `__float128` in the tests):
//! - round to nearest, ties to even (the dynamic rounding mode is ignored,
//!   and no floating point exception flags are raised);
//! - subnormals are supported (no flush to zero);
//! - a NaN operand gives a quiet NaN: the first NaN operand, quieted;
//!   an invalid operation (inf - inf, 0 * inf) gives the x86 default NaN
//!   (sign set, quiet bit set, payload zero), as gcc's soft-fp does on x86;
//! - exact zero sums are +0 except (-0) + (-0) = -0.

const FRAC_BITS: u32 = 112;
const EXP_MASK: u32 = 0x7fff;
const BIAS: i32 = 16383;
const IMPLICIT: u128 = 1 << FRAC_BITS;
const FRAC_MASK: u128 = IMPLICIT - 1;
const SIGN: u128 = 1 << 127;
const QUIET: u128 = 1 << (FRAC_BITS - 1);
const INF: u128 = (EXP_MASK as u128) << FRAC_BITS;
/// The x86 default NaN: negative, quiet, zero payload.
pub const DEFAULT_NAN: u128 = SIGN | INF | QUIET;
/// Extra low bits kept during arithmetic: guard, round and sticky.
const GRS: u32 = 3;

fn exp_field(x: u128) -> u32 {
    ((x >> FRAC_BITS) as u32) & EXP_MASK
}

pub fn is_nan(x: u128) -> bool {
    exp_field(x) == EXP_MASK && x & FRAC_MASK != 0
}

fn is_inf(x: u128) -> bool {
    x & !SIGN == INF
}

fn is_zero(x: u128) -> bool {
    x & !SIGN == 0
}

/// (sign, exponent, significand) with value = significand * 2^(exponent -
/// BIAS - 112). Subnormals get exponent 1 and no implicit bit. Finite only.
fn unpack(x: u128) -> (bool, i32, u128) {
    let sign = x & SIGN != 0;
    let e = exp_field(x) as i32;
    let frac = x & FRAC_MASK;
    if e == 0 {
        (sign, 1, frac)
    } else {
        (sign, e, frac | IMPLICIT)
    }
}

/// Shifts right by `n`, OR-ing every bit shifted out into bit 0.
fn shift_right_sticky(m: u128, n: u32) -> u128 {
    if n == 0 {
        m
    } else if n >= 128 {
        (m != 0) as u128
    } else {
        (m >> n) | ((m & ((1u128 << n) - 1) != 0) as u128)
    }
}

/// Rounds and packs value = m * 2^(e - BIAS - 112 - GRS), with all bits
/// lost so far OR-ed into bit 0 of `m`.
fn round_pack(sign: bool, mut e: i32, mut m: u128) -> u128 {
    let sign_bit = if sign { SIGN } else { 0 };
    if m == 0 {
        return sign_bit;
    }
    // Normalise so that the leading bit sits at FRAC_BITS + GRS.
    let top = 127 - m.leading_zeros() as i32;
    let target = (FRAC_BITS + GRS) as i32;
    if top > target {
        m = shift_right_sticky(m, (top - target) as u32);
        e += top - target;
    } else if top < target {
        m <<= (target - top) as u32;
        e -= target - top;
    }
    // Below the normal range: denormalise (one rounding, at the end).
    if e < 1 {
        m = shift_right_sticky(m, (1 - e).min(200) as u32);
        e = 1;
    }
    let rest = m & ((1 << GRS) - 1);
    let half = 1 << (GRS - 1);
    m >>= GRS;
    if rest > half || (rest == half && m & 1 == 1) {
        m += 1;
        if m == IMPLICIT << 1 {
            m >>= 1;
            e += 1;
        }
    }
    if e >= EXP_MASK as i32 {
        return sign_bit | INF;
    }
    // A subnormal that rounded up to IMPLICIT becomes the smallest normal,
    // with e == 1: the same formula covers both.
    let field = if m & IMPLICIT != 0 { e as u128 } else { 0 };
    sign_bit | (field << FRAC_BITS) | (m & FRAC_MASK)
}

fn propagate_nan(a: u128, b: u128) -> u128 {
    if is_nan(a) {
        a | QUIET
    } else {
        b | QUIET
    }
}

/// a + b
pub fn add(a: u128, b: u128) -> u128 {
    if is_nan(a) || is_nan(b) {
        return propagate_nan(a, b);
    }
    if is_inf(a) || is_inf(b) {
        if is_inf(a) && is_inf(b) && (a ^ b) & SIGN != 0 {
            return DEFAULT_NAN;
        }
        return if is_inf(a) { a } else { b };
    }
    if is_zero(a) && is_zero(b) {
        return a & b; // -0 only if both are -0
    }
    if is_zero(a) {
        return b;
    }
    if is_zero(b) {
        return a;
    }
    let (sa, ea, ma) = unpack(a);
    let (sb, eb, mb) = unpack(b);
    // Order by magnitude so that the subtraction below cannot go negative.
    let ((sx, ex, mx), (sy, ey, my)) = if (ea, ma) >= (eb, mb) {
        ((sa, ea, ma), (sb, eb, mb))
    } else {
        ((sb, eb, mb), (sa, ea, ma))
    };
    let mx = mx << GRS;
    let my = shift_right_sticky(my << GRS, (ex - ey) as u32);
    if sx == sy {
        round_pack(sx, ex, mx + my)
    } else {
        let diff = mx - my;
        if diff == 0 {
            return 0; // exact cancellation: +0 in round-to-nearest
        }
        round_pack(sx, ex, diff)
    }
}

/// a - b
pub fn sub(a: u128, b: u128) -> u128 {
    // IEEE 754 defines a - b as a + (-b); NaN operands keep their own sign
    // (the negation must not flip a NaN that add() would return).
    if is_nan(b) {
        return propagate_nan(a, b);
    }
    add(a, b ^ SIGN)
}

/// 113 x 113 -> 226-bit product as (high, low) halves.
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    let (a1, a0) = (a >> 64, a & u64::MAX as u128);
    let (b1, b0) = (b >> 64, b & u64::MAX as u128);
    let low = a0 * b0;
    let mid1 = a1 * b0;
    let mid2 = a0 * b1;
    let high = a1 * b1; // < 2^98: a1, b1 < 2^49
    let (mid, mid_carry) = mid1.overflowing_add(mid2);
    let (low, low_carry) = low.overflowing_add(mid << 64);
    let high = high + (mid >> 64) + ((mid_carry as u128) << 64) + low_carry as u128;
    (high, low)
}

/// a * b
pub fn mul(a: u128, b: u128) -> u128 {
    if is_nan(a) || is_nan(b) {
        return propagate_nan(a, b);
    }
    let sign = (a ^ b) & SIGN;
    if is_inf(a) || is_inf(b) {
        if is_zero(a) || is_zero(b) {
            return DEFAULT_NAN;
        }
        return sign | INF;
    }
    if is_zero(a) || is_zero(b) {
        return sign;
    }
    let (_, ea, ma) = unpack(a);
    let (_, eb, mb) = unpack(b);
    let (high, low) = mul_wide(ma, mb);
    // Condense the product into one u128 with the leading bit at
    // FRAC_BITS + GRS, keeping lost bits as sticky.
    let bits = if high != 0 {
        256 - high.leading_zeros()
    } else {
        128 - low.leading_zeros()
    };
    let keep = FRAC_BITS + GRS + 1;
    let (m, shift) = if bits > keep {
        let shift = bits - keep;
        let m = if shift >= 128 {
            shift_right_sticky(high, shift - 128) | (low != 0) as u128
        } else {
            let lost = low & ((1u128 << shift) - 1) != 0;
            ((high << (128 - shift)) | (low >> shift)) | lost as u128
        };
        (m, shift as i32)
    } else {
        (low, 0) // high == 0 here
    };
    // value = ma*mb * 2^(ea + eb - 2*BIAS - 224) = m * 2^(shift + ea + eb -
    // 2*BIAS - 224), which round_pack reads as m * 2^(e - BIAS - 112 - GRS).
    let e = ea + eb - BIAS - FRAC_BITS as i32 + GRS as i32 + shift;
    round_pack(sign != 0, e, m)
}

/// IEEE comparison: `None` when either operand is a NaN; -0 == +0.
pub fn partial_cmp(a: u128, b: u128) -> Option<core::cmp::Ordering> {
    use core::cmp::Ordering;
    if is_nan(a) || is_nan(b) {
        return None;
    }
    if is_zero(a) && is_zero(b) {
        return Some(Ordering::Equal);
    }
    // Map sign-magnitude to an order-preserving signed key.
    let key = |x: u128| -> i128 {
        if x & SIGN != 0 {
            -((x & !SIGN) as i128)
        } else {
            x as i128
        }
    };
    Some(key(a).cmp(&key(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: u128 = 0x3fff_0000_0000_0000_0000_0000_0000_0000;
    const TWO: u128 = 0x4000_0000_0000_0000_0000_0000_0000_0000;
    const THREE: u128 = 0x4000_8000_0000_0000_0000_0000_0000_0000;
    const MIN_SUB: u128 = 1;
    const MAX_FINITE: u128 = 0x7ffe_ffff_ffff_ffff_ffff_ffff_ffff_ffff;

    #[test]
    fn small_exact_cases() {
        assert_eq!(add(ONE, ONE), TWO);
        assert_eq!(add(ONE, TWO), THREE);
        assert_eq!(sub(THREE, TWO), ONE);
        assert_eq!(mul(ONE, THREE), THREE);
        assert_eq!(mul(THREE, THREE), 0x4002_2000_0000_0000_0000_0000_0000_0000); // 9
                                                                                  // 1.5 * 2.25 = 3.375 (gcc: 4000b000...)
        let one_half = 0x3fff_8000_0000_0000_0000_0000_0000_0000;
        let two_quarter = 0x4000_2000_0000_0000_0000_0000_0000_0000;
        assert_eq!(
            mul(one_half, two_quarter),
            0x4000_b000_0000_0000_0000_0000_0000_0000
        );
        assert_eq!(add(ONE, ONE | SIGN), 0);
        assert_eq!(add(SIGN, SIGN), SIGN);
        assert_eq!(add(SIGN, 0), 0);
        assert_eq!(mul(SIGN, ONE), SIGN);
        assert_eq!(add(MIN_SUB, MIN_SUB), 2);
        assert_eq!(mul(MAX_FINITE, TWO), INF);
        assert_eq!(mul(MIN_SUB, 0x3ffe << 112), 0); // 2^-16494 / 2: tie to even -> 0
        assert_eq!(add(INF, INF | SIGN), DEFAULT_NAN);
        assert_eq!(mul(INF, 0), DEFAULT_NAN);
        assert!(is_nan(add(DEFAULT_NAN, ONE)));
        assert_eq!(partial_cmp(0, SIGN), Some(core::cmp::Ordering::Equal));
        assert_eq!(
            partial_cmp(ONE | SIGN, ONE),
            Some(core::cmp::Ordering::Less)
        );
        assert_eq!(partial_cmp(DEFAULT_NAN, ONE), None);
    }

    /// Cross-check against gcc's __float128 (libgcc soft-fp) on random and
    /// edge-case operands. Skipped (with a message) when no C compiler runs.
    #[test]
    fn matches_gcc_float128() {
        let program = r#"
#include <stdio.h>
#include <string.h>
#include <stdint.h>
typedef unsigned __int128 u128;
static u128 rd(void) { unsigned long long hi, lo; if (scanf("%llx %llx", &hi, &lo) != 2) return 0; return ((u128)hi << 64) | lo; }
static void wr(u128 x) { printf("%016llx%016llx ", (unsigned long long)(x >> 64), (unsigned long long)x); }
int main(void) {
    int n; if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) {
        u128 a = rd(), b = rd(); __float128 x, y, r; u128 o;
        memcpy(&x, &a, 16); memcpy(&y, &b, 16);
        r = x + y; memcpy(&o, &r, 16); wr(o);
        r = x - y; memcpy(&o, &r, 16); wr(o);
        r = x * y; memcpy(&o, &r, 16); wr(o);
        printf("%d %d\n", x < y, x == y);
    }
    return 0;
}
"#;
        let mut next = crate::testutil::rng(0x9ad);
        let mut operands = Vec::new();
        let specials = [
            0,
            SIGN,
            ONE,
            ONE | SIGN,
            TWO,
            THREE,
            MIN_SUB,
            MIN_SUB | SIGN,
            FRAC_MASK,
            IMPLICIT,
            MAX_FINITE,
            INF,
            INF | SIGN,
            DEFAULT_NAN,
            INF | 1,
        ];
        for &a in &specials {
            for &b in &specials {
                operands.push((a, b));
            }
        }
        for i in 0..20_000 {
            let r = (next() as u128) << 64 | next() as u128;
            let s = (next() as u128) << 64 | next() as u128;
            let (a, b) = match i % 4 {
                // fully random bits (mostly huge/tiny exponents, many NaNs)
                0 => (r, s),
                // close exponents: cancellation and carries
                1 => (
                    r,
                    (r & !(FRAC_MASK >> 20)) ^ (s & (FRAC_MASK >> 20)) ^ (s & SIGN),
                ),
                // moderate exponents around 1.0, products stay finite
                2 => (
                    (r & (SIGN | FRAC_MASK)) | ((0x3f00 + (next() % 0x200)) as u128) << 112,
                    (s & (SIGN | FRAC_MASK)) | ((0x3f00 + (next() % 0x200)) as u128) << 112,
                ),
                // subnormal and near-subnormal results
                _ => (
                    (r & (SIGN | FRAC_MASK)) | ((next() % 3) as u128) << 112,
                    (s & (SIGN | FRAC_MASK))
                        | ((next() % 0x4000 + 0x3f00 * (next() % 2)) as u128) << 112,
                ),
            };
            operands.push((a, b));
        }
        let mut input = format!("{}\n", operands.len());
        for (a, b) in &operands {
            input += &format!(
                "{:x} {:x} {:x} {:x}\n",
                a >> 64,
                a & u64::MAX as u128,
                b >> 64,
                b & u64::MAX as u128
            );
        }
        let Some(output) = crate::testutil::run_c_program("quad", program, &input) else {
            return;
        };
        let mut checked = 0;
        for (line, (a, b)) in output.lines().zip(&operands) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let want = |s: &str| u128::from_str_radix(s, 16).unwrap();
            let same = |got: u128, want: u128| got == want || (is_nan(got) && is_nan(want));
            assert!(
                same(add(*a, *b), want(f[0])),
                "{a:032x} + {b:032x}: got {:032x} want {}",
                add(*a, *b),
                f[0]
            );
            assert!(
                same(sub(*a, *b), want(f[1])),
                "{a:032x} - {b:032x}: got {:032x} want {}",
                sub(*a, *b),
                f[1]
            );
            assert!(
                same(mul(*a, *b), want(f[2])),
                "{a:032x} * {b:032x}: got {:032x} want {}",
                mul(*a, *b),
                f[2]
            );
            let ord = partial_cmp(*a, *b);
            assert_eq!(
                ord == Some(core::cmp::Ordering::Less),
                f[3] == "1",
                "{a:032x} < {b:032x}"
            );
            assert_eq!(
                ord == Some(core::cmp::Ordering::Equal),
                f[4] == "1",
                "{a:032x} == {b:032x}"
            );
            checked += 1;
        }
        assert_eq!(checked, operands.len());
    }
}

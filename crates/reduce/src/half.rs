//! IEEE binary16 (`MPIX_C_FLOAT16`, `MPI_REAL2`) and bfloat16 (`MPIX_BFLOAT16`)
//! as bit patterns, converted to and from `f32`.
//!
//! Arithmetic is done in `f32` and rounded once back to the narrow format
//! (round to nearest, ties to even). That is the correctly rounded result:
//! `f32` carries 24 significand bits, at least 2p+2 for both binary16 (p = 11)
//! and bfloat16 (p = 8), so rounding first to `f32` and then to the narrow
//! format never differs from rounding the exact result once. Products of two
//! narrow values are even exact in `f32`.
//!
//! NaNs stay NaNs (quieted, payload kept where it fits); infinities and
//! signed zeros are preserved.

/// binary16 bits to `f32` (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let magnitude = h & 0x7fff;
    let bits = if magnitude >= 0x7c00 {
        // Infinity or NaN: all-ones exponent, payload kept.
        (magnitude << 13) | 0x7f80_0000
    } else if magnitude >= 0x0400 {
        // Normal: move the fields into place and rebias the exponent.
        (magnitude << 13) + ((127 - 15) << 23)
    } else {
        // Zero or subnormal: magnitude * 2^-24, exact in f32.
        (magnitude as f32 * (1.0 / 16_777_216.0)).to_bits()
    };
    f32::from_bits(sign | bits)
}

/// Shifts `value` right by `shift` (1..=31), rounding to nearest with ties
/// to even: adding half an output unit less one, plus the output's lowest
/// bit, carries exactly when the discarded part is above half, or equal to
/// half with an odd result.
fn shift_round_even(value: u32, shift: u32) -> u32 {
    let half_minus_one = (1u32 << (shift - 1)) - 1;
    let odd = (value >> shift) & 1;
    value.wrapping_add(half_minus_one).wrapping_add(odd) >> shift
}

/// `f32` to binary16 bits, round to nearest even (whatever the current
/// floating point rounding mode: this is integer code).
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = (bits >> 16) & 0x8000;
    let abs = bits & 0x7fff_ffff;
    let result = if ((127 - 14) << 23..(127 + 16) << 23).contains(&abs) {
        // Normal result (2^-14 <= |x| < 2^16): rebias and drop 13 bits. A
        // carry propagates into the exponent, and from the largest finite
        // value up to infinity (0x7c00): both correct.
        shift_round_even(abs - ((127 - 15) << 23), 13)
    } else if abs > 0x7f80_0000 {
        // Quiet NaN keeping the top of the payload.
        0x7e00 | ((abs & 0x007f_ffff) >> 13)
    } else if abs >= (127 + 16) << 23 {
        0x7c00 // infinity, or finite but at least 2^16: overflow
    } else {
        // Subnormal result (|x| < 2^-14): |x| = m * 2^(exp - 150) and the
        // result's unit is 2^-24, so shift m right by 126 - exp. From a
        // shift of 25 on everything rounds to zero (m < 2^24 is below half a
        // unit), so the shift is capped there; f32 zeros and subnormals
        // land in that case.
        let m = (abs & 0x007f_ffff) | 0x0080_0000;
        shift_round_even(m, 126u32.saturating_sub(abs >> 23).clamp(14, 25))
    };
    (sign | result) as u16
}

/// bfloat16 bits to `f32` (exact: bfloat16 is the top half of an `f32`).
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// `f32` to bfloat16 bits, round to nearest even.
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        // Truncating could clear every payload bit left: force quiet.
        return ((bits >> 16) as u16) | 0x0040;
    }
    let lsb = (bits >> 16) & 1;
    // Cannot overflow u32: the largest finite f32 plus 0x8000 stays below
    // the bit pattern of NaN; a carry into the exponent is the right rounding
    // (up to infinity from the largest values).
    ((bits + 0x7fff + lsb) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference rounding of an `f64` to a binary format with `p` significand
    /// bits and minimum normal exponent `emin`, returning the value as f64.
    /// Independent of the code above: works on the exact f64 value with
    /// integer arithmetic. Only for finite, in-range inputs.
    fn round_to_format(x: f64, p: u32, emin: i32, max_finite: f64) -> f64 {
        if x == 0.0 || x.is_nan() || x.is_infinite() {
            return x;
        }
        let (m, e) = frexp(x.abs()); // x = m * 2^e, m in [0.5, 1)
                                     // The exponent of the leading bit is e-1; the unit in the last place
                                     // is 2^(max(e-1, emin) - (p-1)).
        let lead = (e - 1).max(emin);
        let ulp_exp = lead - (p as i32 - 1);
        let scaled = x.abs() / 2f64.powi(ulp_exp); // exact (power of two)
        let floor = scaled.floor();
        let rest = scaled - floor; // exact
        let mut r = floor;
        if rest > 0.5 || (rest == 0.5 && floor % 2.0 == 1.0) {
            r += 1.0;
        }
        let _ = m;
        let result = r * 2f64.powi(ulp_exp);
        // Overflow: anything that rounds above max_finite is infinity.
        let result = if result > max_finite {
            f64::INFINITY
        } else {
            result
        };
        result.copysign(x)
    }

    fn frexp(x: f64) -> (f64, i32) {
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i32;
        if exp == 0 {
            let (m, e) = frexp(x * 2f64.powi(64));
            return (m, e - 64);
        }
        let e = exp - 1022;
        (f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52)), e)
    }

    const F16_MAX: f64 = 65504.0;
    const BF16_MAX: f64 = 3.3895313892515355e38;

    #[test]
    fn f16_roundtrip_is_exact_for_every_value() {
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            let back = f32_to_f16(f);
            if f.is_nan() {
                assert!(f16_to_f32(back).is_nan(), "{h:#06x}");
                assert_eq!(back & 0x8000, h & 0x8000);
            } else {
                assert_eq!(back, h, "{h:#06x} -> {f}");
            }
        }
    }

    #[test]
    fn bf16_roundtrip_is_exact_for_every_value() {
        for b in 0..=u16::MAX {
            let f = bf16_to_f32(b);
            let back = f32_to_bf16(f);
            if f.is_nan() {
                assert!(bf16_to_f32(back).is_nan());
            } else {
                assert_eq!(back, b);
            }
        }
    }

    #[test]
    fn f32_to_f16_matches_reference_rounding_on_random_values() {
        let mut next = crate::testutil::rng(0xf32);
        for i in 0..1_000_000u32 {
            let r = next();
            // Half of the cases in and around the binary16 range.
            let bits = if i % 2 == 0 {
                r as u32
            } else {
                (r as u32 & 0x807f_ffff) | ((100 + (r >> 40) % 50) as u32) << 23
            };
            let x = f32::from_bits(bits);
            let got = f32_to_f16(x);
            if x.is_nan() {
                assert!(f16_to_f32(got).is_nan(), "{bits:#x}");
                assert_eq!(got & 0x7e00, 0x7e00, "quiet");
                assert_eq!(got & 0x8000, (bits >> 16) as u16 & 0x8000);
                continue;
            }
            let want = if x.is_infinite() {
                x as f64
            } else {
                round_to_format(x as f64, 11, -14, F16_MAX)
            };
            let got_value = f16_to_f32(got) as f64;
            assert_eq!(got_value, want, "{bits:#010x}");
            assert_eq!(
                got & 0x8000 != 0,
                x.is_sign_negative(),
                "sign of {bits:#010x}"
            );
        }
    }

    #[test]
    fn f16_known_values() {
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(-2.0), 0xc000);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        assert_eq!(f32_to_f16(65519.0), 0x7bff); // below the midpoint 65520
        assert_eq!(f32_to_f16(65520.0), 0x7c00); // tie rounds to even = inf
        assert_eq!(f32_to_f16(f32::INFINITY), 0x7c00);
        assert_eq!(f32_to_f16(-0.0), 0x8000);
        assert_eq!(f32_to_f16(2f32.powi(-24)), 0x0001);
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0x0000); // tie to even: 0
        assert_eq!(f32_to_f16(1.5 * 2f32.powi(-25)), 0x0001);
        assert_eq!(f32_to_f16(3.0 * 2f32.powi(-25)), 0x0002); // tie 1.5 units -> 2
        assert_eq!(f32_to_f16(2f32.powi(-14)), 0x0400);
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even is 1.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9: even wins.
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert!(f16_to_f32(f32_to_f16(f32::NAN)).is_nan());
        // A signalling NaN comes back quiet.
        assert_eq!(f32_to_f16(f32::from_bits(0x7f80_0001)) & 0x7e00, 0x7e00);
    }

    #[test]
    fn bf16_known_values() {
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1.
        assert_eq!(f32_to_bf16(1.0 + 2f32.powi(-8)), 0x3f80);
        assert_eq!(f32_to_bf16(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
        assert_eq!(f32_to_bf16(f32::MAX), 0x7f80); // rounds up to infinity
        assert_eq!(f32_to_bf16(f32::from_bits(0x7f80_0001)) & 0x7fc0, 0x7fc0);
        assert_eq!(f32_to_bf16(-0.0), 0x8000);
    }

    #[test]
    fn f16_sum_and_product_through_f32_are_correctly_rounded() {
        let mut next = crate::testutil::rng(0x05ee_df16);
        for _ in 0..400_000 {
            let r = next();
            let (a, b) = (r as u16, (r >> 16) as u16);
            let (fa, fb) = (f16_to_f32(a), f16_to_f32(b));
            if !fa.is_finite() || !fb.is_finite() {
                continue;
            }
            for (got, exact) in [
                (f32_to_f16(fa + fb), fa as f64 + fb as f64),
                (f32_to_f16(fa * fb), fa as f64 * fb as f64),
            ] {
                // Sums of two halves are exact in f64 (exponent span < 53
                // bits) and products too (22 bits).
                let want = round_to_format(exact, 11, -14, F16_MAX);
                let got = f16_to_f32(got) as f64;
                assert!(
                    got == want && got.is_sign_negative() == want.is_sign_negative()
                        || (got == 0.0 && want == 0.0 && exact == 0.0),
                    "a={a:#06x} b={b:#06x} got {got} want {want}"
                );
            }
        }
    }

    #[test]
    fn bf16_sum_and_product_through_f32_are_correctly_rounded() {
        let mut next = crate::testutil::rng(0xbf16);
        for _ in 0..400_000 {
            let r = next();
            let (a, b) = (r as u16, (r >> 16) as u16);
            // Keep exponents close enough for the f64 sum to be exact.
            let (fa, fb) = (bf16_to_f32(a), bf16_to_f32(b));
            if !fa.is_finite() || !fb.is_finite() {
                continue;
            }
            let exact_sum = fa as f64 + fb as f64;
            let exact_prod = fa as f64 * fb as f64;
            let span_ok = fa == 0.0 || fb == 0.0 || {
                let (_, ea) = frexp(fa.abs() as f64);
                let (_, eb) = frexp(fb.abs() as f64);
                (ea - eb).abs() < 40
            };
            if span_ok {
                let want = round_to_format(exact_sum, 8, -126, BF16_MAX);
                let got = bf16_to_f32(f32_to_bf16(fa + fb)) as f64;
                assert!(
                    got == want || (got == 0.0 && want == 0.0),
                    "sum {a:#06x} {b:#06x}"
                );
            }
            // Products may leave the f32 range (over/underflow): compare only
            // where the exact product is a normal-range f32 value.
            if exact_prod.abs() < 3.0e38 && (exact_prod == 0.0 || exact_prod.abs() > 1.0e-37) {
                let want = round_to_format(exact_prod, 8, -126, BF16_MAX);
                let got = bf16_to_f32(f32_to_bf16(fa * fb)) as f64;
                assert_eq!(got, want, "prod {a:#06x} {b:#06x}");
            }
        }
    }
}

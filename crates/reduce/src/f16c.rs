//! binary16 (`MPIX_C_FLOAT16`, `MPI_REAL2`) on x86-64 CPUs with F16C:
//! hardware conversions, eight elements at a time.
//!
//! Same results as the portable path in [`crate::half`], bit for bit
//! (checked in the tests): `vcvtph2ps` is exact, the f32 operation is the
//! same instruction the portable path uses, and `vcvtps2ph` is asked for
//! round-to-nearest-even explicitly (immediate 0, not the MXCSR mode), with
//! NaNs quieted and their payload truncated as [`crate::half::f32_to_f16`]
//! does. Products and sums of halves never produce f32 subnormals, so the
//! MXCSR flush-to-zero settings cannot make the two paths differ.

#![cfg(target_arch = "x86_64")]

use crate::Op;
use core::arch::x86_64::*;

/// Does this CPU have AVX and F16C? (Cached by the standard library.)
pub fn available() -> bool {
    std::is_x86_feature_detected!("avx") && std::is_x86_feature_detected!("f16c")
}

/// Applies SUM, PROD, MAX or MIN to the first `count / 8 * 8` elements and
/// returns how many it did (0 for other operations); the caller finishes the
/// rest. MAX/MIN keep `inout` where `inout > input` (resp. `<`) and take
/// `input` otherwise, as the portable kernel does.
///
/// # Safety
/// The CPU must support AVX and F16C ([`available`]). `input` must be
/// readable and `inout` readable and writable for `count * 2` bytes, and the
/// two must be identical or disjoint (blocks of eight are read before any is
/// written). No alignment is needed.
#[target_feature(enable = "avx,f16c")]
pub unsafe fn reduce_blocks(op: Op, input: *const u8, inout: *mut u8, count: usize) -> usize {
    if !matches!(op, Op::Sum | Op::Prod | Op::Max | Op::Min) {
        return 0;
    }
    let blocks = count / 8;
    for k in 0..blocks {
        // SAFETY: block k (16 bytes) lies inside both buffers; unaligned
        // loads and stores.
        let x_bits = _mm_loadu_si128(input.add(16 * k) as *const __m128i);
        let io_bits = _mm_loadu_si128(inout.add(16 * k) as *const __m128i);
        let x = _mm256_cvtph_ps(x_bits);
        let io = _mm256_cvtph_ps(io_bits);
        // A NaN operand's payload is chosen explicitly (inout's, else
        // input's), as the portable kernel does: the processor would return
        // its first operand's, but the compiler may commute the operation.
        let nan_first = |r: __m256| {
            let r = _mm256_blendv_ps(r, x, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
            _mm256_blendv_ps(r, io, _mm256_cmp_ps::<_CMP_UNORD_Q>(io, io))
        };
        let out = match op {
            Op::Sum => _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(nan_first(_mm256_add_ps(io, x))),
            Op::Prod => _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(nan_first(_mm256_mul_ps(io, x))),
            _ => {
                // Ordered, quiet comparisons: false when either is a NaN.
                let keep = if op == Op::Max {
                    _mm256_cmp_ps::<_CMP_GT_OQ>(io, x)
                } else {
                    _mm256_cmp_ps::<_CMP_LT_OQ>(io, x)
                };
                // Narrow the eight 32-bit masks (all ones or zero) to 16 bits
                // and pick the original bits of the chosen operand.
                let keep = _mm256_castps_si256(keep);
                let keep16 = _mm_packs_epi32(
                    _mm256_castsi256_si128(keep),
                    _mm256_extractf128_si256::<1>(keep),
                );
                _mm_blendv_epi8(x_bits, io_bits, keep16)
            }
        };
        _mm_storeu_si128(inout.add(16 * k) as *mut __m128i, out);
    }
    blocks * 8
}

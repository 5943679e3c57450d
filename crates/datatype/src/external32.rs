//! The external32 data representation (MPI 4.1 §14.5.2, used by
//! `MPI_Pack_external` and MPI-IO): elements in type-signature order, each
//! big-endian with a fixed size ([`BasicType::external32_size`]), no
//! padding. Conversions:
//! - integers, floats, characters, logicals: byte order only;
//! - complex types: each part separately;
//! - `MPI_LONG`/`MPI_UNSIGNED_LONG` (8 bytes here) to 4 bytes, and
//!   `MPI_WCHAR` (4 bytes) to 2: truncated on packing (as MPICH does),
//!   sign- or zero-extended on unpacking;
//! - `long double` (x87 80-bit extended on x86-64) to IEEE binary128: exact
//!   on packing, rounded to nearest even on unpacking (NaN payloads kept
//!   where they fit).
//!
//! The walk packs natively into a small stack buffer through a [`crate::Cursor`],
//! then converts that buffer, one signature run at a time; nothing
//! allocates.

use crate::basic::{BasicType, FloatFormat, TypeClass};
use crate::datatype::{Datatype, Uniform};
use crate::error::{overflow, TypeError};
use crate::signature::{self, Shape};

/// How one element is converted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conv {
    /// One byte: copied.
    Byte,
    /// Byte-reversed as a whole.
    Swap(usize),
    /// Two parts (complex), each byte-reversed.
    Parts(usize),
    /// An integer narrowed from `native` to `external` bytes.
    Narrow { native: usize, external: usize, signed: bool },
    /// x87 extended <-> binary128.
    X87,
    /// Complex of two x87 extended.
    X87Parts,
}

fn conv_of(t: BasicType) -> Conv {
    let native = t.size();
    let external = t.external32_size();
    let x87 = matches!(t.float_format(), Some(FloatFormat::X87Extended));
    if x87 {
        return if t.class() == TypeClass::Complex { Conv::X87Parts } else { Conv::X87 };
    }
    if native != external {
        let signed = t.class() == TypeClass::SignedInt;
        return Conv::Narrow { native, external, signed };
    }
    match (t.class(), native) {
        (_, 1) => Conv::Byte,
        (TypeClass::Complex, n) => Conv::Parts(n / 2),
        (_, n) => Conv::Swap(n),
    }
}

/// Native x87 extended (16-byte little-endian storage) to binary128 bits.
pub(crate) fn x87_to_quad(native: &[u8; 16]) -> u128 {
    let mantissa = u64::from_le_bytes(native[0..8].try_into().expect("8 bytes"));
    let sign_exp = u16::from_le_bytes([native[8], native[9]]);
    let sign = (sign_exp >> 15) as u128;
    let exp = (sign_exp & 0x7fff) as u128;
    let integer_bit = mantissa >> 63 == 1;
    let fraction = ((mantissa & !(1 << 63)) as u128) << 49;
    let (exp, fraction) = match exp {
        // Zero, denormal (value m * 2^-16445, the same scale as a binary128
        // denormal once shifted), or pseudo-denormal (as exponent 1).
        0 if integer_bit => (1, fraction),
        0 => (0, (mantissa as u128) << 49),
        0x7fff => (0x7fff, fraction),
        // An unnormal (integer bit clear): not a valid x87 number.
        _ if !integer_bit => (0x7fff, 1u128 << 111),
        e => (e, fraction),
    };
    sign << 127 | exp << 112 | fraction
}

/// binary128 bits to native x87 extended (16-byte storage, padding zero),
/// rounding to nearest even.
pub(crate) fn quad_to_x87(bits: u128) -> [u8; 16] {
    let sign = (bits >> 127) as u16;
    let exp = ((bits >> 112) & 0x7fff) as u16;
    let fraction = bits & ((1u128 << 112) - 1);
    // The top 63 fraction bits, rounded to nearest even.
    let round = |f: u128| -> u64 {
        let q = (f >> 49) as u64;
        let r = f & ((1u128 << 49) - 1);
        let half = 1u128 << 48;
        if r > half || (r == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    };
    let (exp, mantissa) = match exp {
        0x7fff => {
            let mut m = 1u64 << 63 | (fraction >> 49) as u64;
            if fraction != 0 && fraction >> 49 == 0 {
                m |= 1 << 62; // keep a NaN a NaN
            }
            (0x7fff, m)
        }
        0 => {
            let m = round(fraction);
            // Rounding up to 2^63 reaches the smallest normal.
            (if m >> 63 == 1 { 1 } else { 0 }, m)
        }
        e => {
            let q = round(fraction);
            if q >> 63 == 1 {
                // The fraction rounded up to 2.0: next binade.
                if e + 1 == 0x7fff {
                    (0x7fff, 1 << 63)
                } else {
                    (e + 1, 1 << 63)
                }
            } else {
                (e, 1 << 63 | q)
            }
        }
    };
    let mut out = [0u8; 16];
    out[0..8].copy_from_slice(&mantissa.to_le_bytes());
    out[8..10].copy_from_slice(&(sign << 15 | exp).to_le_bytes());
    out
}

fn reverse_into(src: &[u8], dst: &mut [u8]) {
    for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
        *d = *s;
    }
}

/// Native elements to external32.
fn encode(conv: Conv, native: &[u8], external: &mut [u8]) {
    match conv {
        Conv::Byte => external.copy_from_slice(native),
        Conv::Swap(n) => {
            for (s, d) in native.chunks_exact(n).zip(external.chunks_exact_mut(n)) {
                reverse_into(s, d);
            }
        }
        Conv::Parts(n) => {
            for (s, d) in native.chunks_exact(n).zip(external.chunks_exact_mut(n)) {
                reverse_into(s, d);
            }
        }
        Conv::Narrow { native: ns, external: es, .. } => {
            for (s, d) in native.chunks_exact(ns).zip(external.chunks_exact_mut(es)) {
                // The low `es` bytes (little-endian native), most significant first.
                reverse_into(&s[..es], d);
            }
        }
        Conv::X87 | Conv::X87Parts => {
            for (s, d) in native.chunks_exact(16).zip(external.chunks_exact_mut(16)) {
                let q = x87_to_quad(s.try_into().expect("16 bytes"));
                d.copy_from_slice(&q.to_be_bytes());
            }
        }
    }
}

/// External32 elements to native.
fn decode(conv: Conv, external: &[u8], native: &mut [u8]) {
    match conv {
        Conv::Byte => native.copy_from_slice(external),
        Conv::Swap(n) | Conv::Parts(n) => {
            for (s, d) in external.chunks_exact(n).zip(native.chunks_exact_mut(n)) {
                reverse_into(s, d);
            }
        }
        Conv::Narrow { native: ns, external: es, signed } => {
            for (s, d) in external.chunks_exact(es).zip(native.chunks_exact_mut(ns)) {
                reverse_into(s, &mut d[..es]);
                let negative = signed && s[0] & 0x80 != 0;
                d[es..].fill(if negative { 0xff } else { 0 });
            }
        }
        Conv::X87 | Conv::X87Parts => {
            for (s, d) in external.chunks_exact(16).zip(native.chunks_exact_mut(16)) {
                let q = u128::from_be_bytes(s.try_into().expect("16 bytes"));
                d.copy_from_slice(&quad_to_x87(q));
            }
        }
    }
}

impl Datatype {
    /// External32 bytes of one item (cached; linear in the size of the
    /// type's description).
    fn external32_item_size(&self) -> u64 {
        *self.ext32.get_or_init(|| {
            if let Uniform::One(t) = self.uniform {
                return self.elements * t.external32_size() as u64;
            }
            match self.shape() {
                Shape::Basic(t) => t.external32_size() as u64,
                Shape::Pair(v, i) => (v.external32_size() + i.external32_size()) as u64,
                Shape::Repeat(n, old) => n * old.external32_item_size(),
                Shape::Struct(blocklengths, types) => blocklengths
                    .iter()
                    .zip(types.iter())
                    .map(|(&bl, t)| bl as u64 * t.external32_item_size())
                    .sum(),
            }
        })
    }
}

/// `MPI_Pack_external_size("external32", count, dt)`.
pub fn external32_size(dt: &Datatype, count: u64) -> Result<u64, TypeError> {
    count.checked_mul(dt.external32_item_size()).ok_or(overflow("external32 size"))
}

const CHUNK: usize = 4096;

/// `MPI_Pack_external("external32", ...)`: packs all `count` items of `dt`
/// at `base` into the start of `out`; returns the bytes written.
///
/// # Errors
/// [`TypeError::Truncated`] if `out` is shorter than
/// [`external32_size`] (nothing is written then).
///
/// # Safety
/// As for [`crate::pack()`].
pub unsafe fn pack_external32(base: *const u8, count: u64, dt: &Datatype, out: &mut [u8]) -> Result<usize, TypeError> {
    let need = external32_size(dt, count)?;
    if (out.len() as u64) < need {
        return Err(TypeError::Truncated { needed: need, available: out.len() as u64 });
    }
    let mut cursor = dt.cursor(count);
    let mut buf = [0u8; CHUNK];
    let mut written = 0usize;
    signature::walk(dt, count, &mut |t, n| {
        let (ns, es) = (t.size(), t.external32_size());
        let conv = conv_of(t);
        let per_chunk = (CHUNK / ns) as u64;
        let mut left = n;
        while left > 0 {
            let k = left.min(per_chunk) as usize;
            // SAFETY: `base` is the user buffer of these items (caller's
            // contract); the signature walk and the cursor visit the same
            // elements in the same order.
            let got = unsafe { cursor.pack(base, &mut buf[..k * ns]) };
            debug_assert_eq!(got, k * ns);
            encode(conv, &buf[..k * ns], &mut out[written..written + k * es]);
            written += k * es;
            left -= k as u64;
        }
    });
    Ok(written)
}

/// `MPI_Unpack_external("external32", ...)`: unpacks `count` items of
/// `dt` from the start of `input` into `base`; returns the bytes read.
///
/// # Errors
/// [`TypeError::Truncated`] if `input` is shorter than
/// [`external32_size`] (nothing is written then).
///
/// # Safety
/// As for [`crate::unpack()`].
pub unsafe fn unpack_external32(base: *mut u8, count: u64, dt: &Datatype, input: &[u8]) -> Result<usize, TypeError> {
    let need = external32_size(dt, count)?;
    if (input.len() as u64) < need {
        return Err(TypeError::Truncated { needed: need, available: input.len() as u64 });
    }
    let mut cursor = dt.cursor(count);
    let mut buf = [0u8; CHUNK];
    let mut read = 0usize;
    signature::walk(dt, count, &mut |t, n| {
        let (ns, es) = (t.size(), t.external32_size());
        let conv = conv_of(t);
        let per_chunk = (CHUNK / ns) as u64;
        let mut left = n;
        while left > 0 {
            let k = left.min(per_chunk) as usize;
            decode(conv, &input[read..read + k * es], &mut buf[..k * ns]);
            // SAFETY: as in `pack_external32`.
            let put = unsafe { cursor.unpack(base, &buf[..k * ns]) };
            debug_assert_eq!(put, k * ns);
            read += k * es;
            left -= k as u64;
        }
    });
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// An f64 as x87 extended (exact), for normal numbers, zero and infinity.
    fn f64_to_x87(x: f64) -> [u8; 16] {
        let bits = x.to_bits();
        let sign = (bits >> 63) as u16;
        let exp = ((bits >> 52) & 0x7ff) as u16;
        let frac = bits & ((1 << 52) - 1);
        let (e, m) = match exp {
            0 if frac == 0 => (0, 0),
            0x7ff => (0x7fff, 1u64 << 63 | frac << 11),
            e => (e + 16383 - 1023, 1u64 << 63 | frac << 11),
        };
        let mut out = [0u8; 16];
        out[0..8].copy_from_slice(&m.to_le_bytes());
        out[8..10].copy_from_slice(&(sign << 15 | e).to_le_bytes());
        out
    }

    /// An f64 as binary128 bits (exact).
    fn f64_to_quad(x: f64) -> u128 {
        let bits = x.to_bits();
        let sign = (bits >> 63) as u128;
        let exp = ((bits >> 52) & 0x7ff) as u128;
        let frac = (bits & ((1 << 52) - 1)) as u128;
        match exp {
            0 if frac == 0 => sign << 127,
            0x7ff => sign << 127 | 0x7fffu128 << 112 | frac << 60,
            e => sign << 127 | (e + 16383 - 1023) << 112 | frac << 60,
        }
    }

    #[test]
    fn long_double_matches_mpich_bytes() {
        // MPICH: MPI_Pack_external of 1.5L gives 3fff8000 00000000 ...
        let q = x87_to_quad(&f64_to_x87(1.5));
        assert_eq!(q.to_be_bytes()[..4], [0x3f, 0xff, 0x80, 0x00]);
        assert!(q.to_be_bytes()[4..].iter().all(|&b| b == 0));
    }

    #[test]
    fn long_double_round_trips() {
        for x in [0.0, -0.0, 1.0, -2.5, 1e300, -1e-300, f64::MAX, f64::MIN_POSITIVE, f64::INFINITY, f64::NEG_INFINITY, std::f64::consts::PI] {
            let native = f64_to_x87(x);
            let q = x87_to_quad(&native);
            assert_eq!(q, f64_to_quad(x), "{x}");
            assert_eq!(quad_to_x87(q), native, "{x}");
        }
        // NaN stays NaN.
        let nan = quad_to_x87(x87_to_quad(&f64_to_x87(f64::NAN)));
        assert_eq!(u16::from_le_bytes([nan[8], nan[9]]) & 0x7fff, 0x7fff);
        assert_ne!(u64::from_le_bytes(nan[0..8].try_into().unwrap()) << 1, 0);
        // A quad NaN whose payload is all in the low bits stays a NaN.
        let low_nan = quad_to_x87(0x7fffu128 << 112 | 1);
        assert_ne!(u64::from_le_bytes(low_nan[0..8].try_into().unwrap()) << 1, 0);
    }

    #[test]
    fn quad_to_x87_rounds_to_nearest_even() {
        let one = f64_to_quad(1.0);
        // Just below half an x87 ulp: rounds down; exactly half on an even
        // mantissa: down; above half: up.
        let half = 1u128 << 48;
        let m = |x: [u8; 16]| u64::from_le_bytes(x[0..8].try_into().unwrap());
        assert_eq!(m(quad_to_x87(one | (half - 1))), 1 << 63);
        assert_eq!(m(quad_to_x87(one | half)), 1 << 63);
        assert_eq!(m(quad_to_x87(one | (half + 1))), 1 << 63 | 1);
        assert_eq!(m(quad_to_x87(one | (1 << 49) | half)), 1 << 63 | 2);
        // All ones rounds up into the next binade: 2.0.
        let almost_two = one | ((1u128 << 112) - 1);
        assert_eq!(quad_to_x87(almost_two), f64_to_x87(2.0));
        // The largest finite quad overflows x87 to infinity.
        let max = 0x7ffeu128 << 112 | ((1u128 << 112) - 1);
        assert_eq!(quad_to_x87(max), f64_to_x87(f64::INFINITY));
        // A tiny quad denormal underflows to zero.
        assert_eq!(quad_to_x87(1), f64_to_x87(0.0));
    }

    #[test]
    fn sizes_match_mpich() {
        use BasicType::*;
        let expect = [
            (Char, 1), (WChar, 2), (Short, 2), (Int, 4), (Long, 4), (UnsignedLong, 4), (LongLong, 8),
            (Float, 4), (Double, 8), (LongDouble, 16), (CBool, 1), (Aint, 8), (CLongDoubleComplex, 32),
            (Logical, 4), (Integer16, 16), (Real16, 16), (CxxBool, 1),
        ];
        for (t, n) in expect {
            assert_eq!(external32_size(&Datatype::basic(t), 1).unwrap(), n, "{t:?}");
        }
        // Pairs are their two elements, unpadded (MPICH 5.0.2 gets these wrong).
        assert_eq!(external32_size(&Datatype::value_index(Double, Int), 1).unwrap(), 12);
        assert_eq!(external32_size(&Datatype::value_index(Long, Int), 3).unwrap(), 24);
        assert_eq!(external32_size(&Datatype::value_index(LongDouble, Int), 1).unwrap(), 20);
        assert_eq!(external32_size(&Datatype::basic(Lb), 5).unwrap(), 0);
    }

    #[test]
    fn byte_order_and_narrowing() {
        let long = Arc::new(Datatype::basic(BasicType::Long));
        let v: [i64; 2] = [0x0102030405060708, -2];
        let mut out = [0u8; 8];
        let n = unsafe { pack_external32(v.as_ptr().cast(), 2, &long, &mut out) }.unwrap();
        assert_eq!(n, 8);
        // MPICH: 0x0102030405060708 packs to 05060708 (truncated).
        assert_eq!(out, [0x05, 0x06, 0x07, 0x08, 0xff, 0xff, 0xff, 0xfe]);
        let mut back = [0i64; 2];
        let n = unsafe { unpack_external32(back.as_mut_ptr().cast(), 2, &long, &out) }.unwrap();
        assert_eq!(n, 8);
        assert_eq!(back, [0x05060708, -2]);

        let ulong = Datatype::basic(BasicType::UnsignedLong);
        let v: [u64; 1] = [0xffff_fffe];
        let mut out = [0u8; 4];
        unsafe { pack_external32(v.as_ptr().cast(), 1, &ulong, &mut out) }.unwrap();
        let mut back = [0u64; 1];
        unsafe { unpack_external32(back.as_mut_ptr().cast(), 1, &ulong, &out) }.unwrap();
        assert_eq!(back[0], 0xffff_fffe);

        let cplx = Datatype::basic(BasicType::CFloatComplex);
        let v: [f32; 2] = [1.0, -2.0];
        let mut out = [0u8; 8];
        unsafe { pack_external32(v.as_ptr().cast(), 1, &cplx, &mut out) }.unwrap();
        assert_eq!(out[..4], 1.0f32.to_be_bytes());
        assert_eq!(out[4..], (-2.0f32).to_be_bytes());

        let mut small = [0u8; 3];
        let e = unsafe { pack_external32(v.as_ptr().cast(), 1, &cplx, &mut small) }.unwrap_err();
        assert_eq!(e, TypeError::Truncated { needed: 8, available: 3 });
    }

    #[test]
    fn struct_of_mixed_elements() {
        // struct { double d; int i; short s; } with a vector around it.
        #[repr(C)]
        #[derive(Clone, Copy, Default, Debug, PartialEq)]
        struct S {
            d: f64,
            i: i32,
            s: i16,
        }
        let t = Arc::new(
            Datatype::create_struct(
                &[1, 1, 1],
                &[0, 8, 12],
                &[
                    Arc::new(Datatype::basic(BasicType::Double)),
                    Arc::new(Datatype::basic(BasicType::Int)),
                    Arc::new(Datatype::basic(BasicType::Short)),
                ],
            )
            .unwrap(),
        );
        assert_eq!(t.extent(), 16);
        let v = Datatype::vector(3, 1, 2, &t).unwrap();
        let data: Vec<S> = (0..6).map(|k| S { d: k as f64 + 0.5, i: -k, s: k as i16 * 100 }).collect();
        let size = external32_size(&v, 2).unwrap();
        assert_eq!(size, 2 * 3 * 14);
        let mut out = vec![0u8; size as usize];
        // Two items of the vector: the second starts one extent (5 structs... extent = 2*2*16+16 = 80) later.
        assert_eq!(v.extent(), 80);
        let mut buf = [S::default(); 12];
        buf[..6].copy_from_slice(&data);
        buf[5..11].copy_from_slice(&data);
        let n = unsafe { pack_external32(buf.as_ptr().cast(), 2, &v, &mut out) }.unwrap();
        assert_eq!(n as u64, size);
        // First element: data[0].
        assert_eq!(out[0..8], 0.5f64.to_be_bytes());
        assert_eq!(out[8..12], 0i32.to_be_bytes());
        assert_eq!(out[12..14], 0i16.to_be_bytes());
        // Second: data[2].
        assert_eq!(out[14..22], 2.5f64.to_be_bytes());
        assert_eq!(out[22..26], (-2i32).to_be_bytes());
        assert_eq!(out[26..28], 200i16.to_be_bytes());
        let mut back = [S::default(); 12];
        let m = unsafe { unpack_external32(back.as_mut_ptr().cast(), 2, &v, &out) }.unwrap();
        assert_eq!(m as u64, size);
        for k in [0usize, 2, 4, 5, 7, 9] {
            assert_eq!(back[k], buf[k], "struct {k}");
        }
        assert_eq!(back[1], S::default());
    }
}

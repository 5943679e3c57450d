//! x86-64 `long double`: the x87 80-bit extended format stored in 16 bytes
//! (bytes 0..10 hold the value, 10..16 are padding and are never written).
//!
//! Rust has no 80-bit float type, so each operation is a short x87
//! instruction sequence on memory operands, i.e. exactly what a C compiler
//! emits for `long double`: the results, including rounding (per the x87
//! control word, which is extended precision and round-to-nearest unless the
//! program changed it, as for C code), NaN propagation and the handling of
//! unnormal encodings, are the hardware's.
//!
//! Every function takes raw pointers to 10-byte values that need not be
//! aligned (x87 memory operands have no alignment requirement).

#![cfg(target_arch = "x86_64")]

use core::arch::asm;
use core::cmp::Ordering;

// Soundness of every asm block below:
// - all eight x87 registers are declared clobbered, so the x87 stack is empty
//   on entry (guaranteed by the compiler) and each block pops everything it
//   pushes, leaving it empty on exit as the Rust asm rules require;
// - memory is read and written only through the pointer operands, which the
//   callers guarantee to be valid for 10 bytes (writes only to `dst`); the
//   blocks do not use the stack (`nostack`);
// - EFLAGS changes are allowed (no `preserves_flags`).

/// `*dst = *a + *b`
///
/// # Safety
/// `a` and `b` must be readable and `dst` writable for 10 bytes.
#[inline]
pub unsafe fn add(a: *const u8, b: *const u8, dst: *mut u8) {
    asm!(
        "fld tbyte ptr [{a}]",
        "fld tbyte ptr [{b}]",
        "faddp st(1), st",
        "fstp tbyte ptr [{dst}]",
        a = in(reg) a, b = in(reg) b, dst = in(reg) dst,
        out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
        out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
        options(nostack),
    );
}

/// `*dst = *a * *b`
///
/// # Safety
/// As [`add`].
#[inline]
pub unsafe fn mul(a: *const u8, b: *const u8, dst: *mut u8) {
    asm!(
        "fld tbyte ptr [{a}]",
        "fld tbyte ptr [{b}]",
        "fmulp st(1), st",
        "fstp tbyte ptr [{dst}]",
        a = in(reg) a, b = in(reg) b, dst = in(reg) dst,
        out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
        out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
        options(nostack),
    );
}

/// IEEE comparison of `*a` with `*b`: `None` if unordered (a NaN, or an
/// encoding the x87 rejects as invalid).
///
/// # Safety
/// `a` and `b` must be readable for 10 bytes.
#[inline]
pub unsafe fn partial_cmp(a: *const u8, b: *const u8) -> Option<Ordering> {
    let (above, below, equal, unordered): (u8, u8, u8, u8);
    asm!(
        "fld tbyte ptr [{b}]",
        "fld tbyte ptr [{a}]",
        // Compare st(0) = a with st(1) = b, pop once; pop b too.
        "fucomip st, st(1)",
        "fstp st(0)",
        "seta {above}",
        "setb {below}",
        "sete {equal}",
        "setp {unordered}",
        a = in(reg) a, b = in(reg) b,
        above = out(reg_byte) above, below = out(reg_byte) below,
        equal = out(reg_byte) equal, unordered = out(reg_byte) unordered,
        out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
        out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
        options(nostack, readonly),
    );
    // Unordered sets ZF, PF and CF together.
    if unordered != 0 {
        None
    } else if above != 0 {
        Some(Ordering::Greater)
    } else if below != 0 {
        Some(Ordering::Less)
    } else {
        debug_assert!(equal != 0);
        Some(Ordering::Equal)
    }
}

/// Complex product, in place: with `io = (c, d)` (inout: real part at
/// offset 0, imaginary at 16) and `x = (a, b)` (input), stores
/// `(c*a - d*b, d*a + c*b)` into `io`, each operation rounded as C does for
/// `long double` (MPICH's formula; no C99 Annex G recovery of infinities).
///
/// # Safety
/// `x` must be readable for 26 bytes and `io` readable and writable for 26
/// bytes (two values 16 bytes apart).
#[inline]
pub unsafe fn complex_mul(x: *const u8, io: *mut u8) {
    asm!(
        // Load everything first: io is overwritten below.
        "fld tbyte ptr [{x} + 16]",  // b
        "fld tbyte ptr [{x}]",       // a b
        "fld tbyte ptr [{io} + 16]", // d a b
        "fld tbyte ptr [{io}]",      // c d a b
        "fld st(0)",                 // c c d a b
        "fmul st, st(3)",            // ca c d a b
        "fld st(2)",                 // d ca c d a b
        "fmul st, st(5)",            // db ca c d a b
        // ca - db as ca + (-db): IEEE defines subtraction that way, so the
        // result is identical, and fadd has no operand-order ambiguity.
        "fchs",                      // -db ca c d a b
        "faddp st(1), st",           // re c d a b
        "fstp tbyte ptr [{io}]",     // c d a b
        "fmul st, st(3)",            // cb d a b
        "fxch st(1)",                // d cb a b
        "fmul st, st(2)",            // da cb a b
        "faddp st(1), st",           // im a b
        "fstp tbyte ptr [{io} + 16]",// a b
        "fstp st(0)",                // b
        "fstp st(0)",                // (empty)
        x = in(reg) x, io = in(reg) io,
        out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
        out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
        options(nostack),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long double in a 16-byte buffer from (sign+exponent, mantissa).
    fn ld(se: u16, mant: u64) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&mant.to_le_bytes());
        b[8..10].copy_from_slice(&se.to_le_bytes());
        b
    }
    fn parts(b: &[u8]) -> (u16, u64) {
        (
            u16::from_le_bytes([b[8], b[9]]),
            u64::from_le_bytes(b[..8].try_into().unwrap()),
        )
    }
    fn is_nan(b: &[u8]) -> bool {
        let (se, m) = parts(b);
        se & 0x7fff == 0x7fff && m << 1 != 0
    }

    const ONE: (u16, u64) = (0x3fff, 1 << 63);
    const THIRD: (u16, u64) = (0x3ffd, 0xaaaa_aaaa_aaaa_aaab); // gcc: 1.0L/3

    #[test]
    fn basic_values_and_padding_untouched() {
        let one = ld(ONE.0, ONE.1);
        let mut out = [0xeeu8; 16];
        unsafe { add(one.as_ptr(), one.as_ptr(), out.as_mut_ptr()) };
        assert_eq!(parts(&out), (0x4000, 1 << 63));
        assert_eq!(&out[10..], &[0xee; 6], "padding must not be written");
        let third = ld(THIRD.0, THIRD.1);
        let three = ld(0x4000, 0xc000_0000_0000_0000);
        unsafe { mul(third.as_ptr(), three.as_ptr(), out.as_mut_ptr()) };
        assert_eq!(parts(&out), (0x3fff, 1 << 63)); // rounds to exactly 1
        unsafe {
            assert_eq!(
                partial_cmp(third.as_ptr(), one.as_ptr()),
                Some(Ordering::Less)
            );
            assert_eq!(
                partial_cmp(one.as_ptr(), third.as_ptr()),
                Some(Ordering::Greater)
            );
            assert_eq!(
                partial_cmp(one.as_ptr(), one.as_ptr()),
                Some(Ordering::Equal)
            );
            let zero = ld(0, 0);
            let neg_zero = ld(0x8000, 0);
            assert_eq!(
                partial_cmp(zero.as_ptr(), neg_zero.as_ptr()),
                Some(Ordering::Equal)
            );
            let nan = ld(0x7fff, 0xc000_0000_0000_0000);
            assert_eq!(partial_cmp(nan.as_ptr(), one.as_ptr()), None);
            assert_eq!(partial_cmp(one.as_ptr(), nan.as_ptr()), None);
        }
    }

    #[test]
    fn unaligned_operands() {
        let mut buf = [0u8; 64];
        buf[1..17].copy_from_slice(&ld(ONE.0, ONE.1));
        buf[19..35].copy_from_slice(&ld(0x4000, 0xc000_0000_0000_0000)); // 3
        let p = buf.as_mut_ptr();
        unsafe { add(p.add(1), p.add(19), p.add(37)) };
        assert_eq!(parts(&buf[37..53]), (0x4001, 1 << 63)); // 4
    }

    /// Random operands (any bit pattern: normals, denormals, unnormals,
    /// NaNs, infinities) against gcc's own `long double` arithmetic.
    #[test]
    fn matches_gcc_long_double() {
        let program = r#"
#include <stdio.h>
#include <string.h>
typedef struct { unsigned long long m; unsigned short se; } raw;
static long double rd(void) { raw r = {0, 0}; long double x = 0; scanf("%hx %llx", &r.se, &r.m); memcpy(&x, &r, 10); return x; }
static void wr(long double x) { raw r; memcpy(&r, &x, 10); printf("%04hx %016llx ", r.se, r.m); }
int main(void) {
    int n; if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) {
        long double a = rd(), b = rd(), c = rd(), d = rd();
        wr(a + b); wr(a * b);
        printf("%d %d %d ", a < b, a == b, a > b);
        _Complex long double x = a + b * 1.0iL, y = c + d * 1.0iL;
        /* build from parts without arithmetic that could round */
        __real__ x = a; __imag__ x = b; __real__ y = c; __imag__ y = d;
        _Complex long double p = y * x;
        wr(__real__ p); wr(__imag__ p);
        /* MPICH's textbook formula, written out */
        wr(c * a - d * b); wr(d * a + c * b);
        printf("\n");
    }
    return 0;
}
"#;
        let mut next = crate::testutil::rng(0x80);
        let mut cases = Vec::new();
        let special = [
            ONE,
            THIRD,
            (0, 0),
            (0x8000, 0),
            (0x7fff, 1 << 63),
            (0xffff, 1 << 63),
            (0x7fff, 0xc000_0000_0000_0000),
            (0, 1),
            (0x7ffe, u64::MAX),
            (0x3fff, 0),
        ];
        for &a in &special {
            for &b in &special {
                cases.push([a, b, ONE, THIRD]);
            }
        }
        for i in 0..5000 {
            let mut v = || -> (u16, u64) {
                let r = next();
                let se = if i % 2 == 0 {
                    (r >> 48) as u16
                } else {
                    (0x3f00 + (r >> 56) as u16) | (r as u16 & 0x8000)
                };
                let mant = next() | if i % 3 == 0 { 0 } else { 1 << 63 };
                (se, mant)
            };
            cases.push([v(), v(), v(), v()]);
        }
        let mut input = format!("{}\n", cases.len());
        for c in &cases {
            for (se, m) in c {
                input += &format!("{se:x} {m:x} ");
            }
            input += "\n";
        }
        let Some(output) = crate::testutil::run_c_program("x87", program, &input) else {
            return;
        };
        let mut checked = 0;
        for (line, case) in output.lines().zip(&cases) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let want = |i: usize| {
                (
                    u16::from_str_radix(f[i], 16).unwrap(),
                    u64::from_str_radix(f[i + 1], 16).unwrap(),
                )
            };
            let [a, b, c, d] = case.map(|(se, m)| ld(se, m));
            let check = |got: [u8; 16], want: (u16, u64), what: &str| {
                let w = ld(want.0, want.1);
                assert!(
                    parts(&got) == want || (is_nan(&got) && is_nan(&w)),
                    "{what} {case:x?}: got {:x?} want {want:x?}",
                    parts(&got)
                );
            };
            let mut out = [0u8; 16];
            unsafe { add(a.as_ptr(), b.as_ptr(), out.as_mut_ptr()) };
            check(out, want(0), "add");
            unsafe { mul(a.as_ptr(), b.as_ptr(), out.as_mut_ptr()) };
            check(out, want(2), "mul");
            let ord = unsafe { partial_cmp(a.as_ptr(), b.as_ptr()) };
            assert_eq!(
                (ord == Some(Ordering::Less)) as u8,
                f[4].parse::<u8>().unwrap()
            );
            assert_eq!(
                (ord == Some(Ordering::Equal)) as u8,
                f[5].parse::<u8>().unwrap()
            );
            assert_eq!(
                (ord == Some(Ordering::Greater)) as u8,
                f[6].parse::<u8>().unwrap()
            );
            // Complex: io = (c, d), x = (a, b); C computes y * x with y = io.
            let mut io = [0u8; 32];
            io[..16].copy_from_slice(&c);
            io[16..].copy_from_slice(&d);
            let mut x = [0u8; 32];
            x[..16].copy_from_slice(&a);
            x[16..].copy_from_slice(&b);
            unsafe { complex_mul(x.as_ptr(), io.as_mut_ptr()) };
            let mut got_re = [0u8; 16];
            got_re.copy_from_slice(&io[..16]);
            let mut got_im = [0u8; 16];
            got_im.copy_from_slice(&io[16..]);
            // The textbook formula must match bit for bit everywhere.
            check(got_re, want(11), "complex re (formula)");
            check(got_im, want(13), "complex im (formula)");
            // C's `*` agrees except where C99 Annex G recovers infinities
            // from a NaN result, which the MPI kernels (like MPICH) do not.
            if !is_nan(&got_re) && !is_nan(&got_im) {
                check(got_re, want(7), "complex re (C operator)");
                check(got_im, want(9), "complex im (C operator)");
            }
            checked += 1;
        }
        assert_eq!(checked, cases.len());
    }
}

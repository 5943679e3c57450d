//! The element-wise loops: `inout[i] = input[i] op inout[i]`.
//!
//! Every loop is monomorphised per (operation, element type) so that the
//! compiler sees a branch-free body; when both buffers are aligned for the
//! element type and do not overlap, the loop runs over slices (the compiler
//! knows they do not alias and vectorises SUM, PROD, MAX, MIN and the
//! bitwise operations), otherwise over unaligned reads and writes.
//!
//! Operand order follows MPICH's kernels (`inout = inout op input`), which
//! for every predefined operation gives the same value as `input op inout`
//! (they are commutative), and even the same NaN payload as MPICH.

use crate::half::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use crate::{quad, Op};
use core::{mem, ptr, slice};

/// Applies `f(input_element, inout_element)` to `count` elements of `T`,
/// storing the result in `inout`.
///
/// # Safety
/// `input` must be readable and `inout` readable and writable for
/// `count * size_of::<T>()` bytes, a size that fits in `isize`. The two may
/// overlap in any way (elements are then processed in increasing order),
/// and need not be aligned. `T` must be valid for every bit pattern.
#[inline(always)]
unsafe fn zip_apply<T: Copy, F: Fn(T, T) -> T>(
    input: *const u8,
    inout: *mut u8,
    count: usize,
    f: F,
) {
    let size = mem::size_of::<T>();
    let align = mem::align_of::<T>();
    let bytes = count * size;
    let (src, dst) = (input as usize, inout as usize);
    let aligned = src % align == 0 && dst % align == 0;
    if aligned && src == dst {
        // In place on itself (e.g. MPI_IN_PLACE paths): one mutable slice.
        // SAFETY: valid, aligned, writable for `count` elements.
        let dst = slice::from_raw_parts_mut(inout as *mut T, count);
        for d in dst.iter_mut() {
            *d = f(*d, *d);
        }
    } else if aligned && (src.saturating_add(bytes) <= dst || dst.saturating_add(bytes) <= src) {
        // SAFETY: both ranges are valid and aligned for `count` elements and
        // do not overlap, so a shared and a mutable slice may coexist.
        let src = slice::from_raw_parts(input as *const T, count);
        let dst = slice::from_raw_parts_mut(inout as *mut T, count);
        for (d, s) in dst.iter_mut().zip(src) {
            *d = f(*s, *d);
        }
    } else {
        let (src, dst) = (input as *const T, inout as *mut T);
        for i in 0..count {
            // SAFETY: element i lies inside both buffers; unaligned access.
            let s = ptr::read_unaligned(src.add(i));
            let d = ptr::read_unaligned(dst.add(i));
            ptr::write_unaligned(dst.add(i), f(s, d));
        }
    }
}

/// The loop over one integer width. Also serves `MPI_BYTE` (u8), C/C++
/// `bool` (u8) and Fortran LOGICAL of each width (unsigned of that width):
/// the logical operations read any non-zero value as true and write 1 for
/// true, 0 for false.
///
/// SUM and PROD wrap around on overflow (two's complement, like C unsigned
/// arithmetic and like every MPI implementation in practice; signed overflow
/// is undefined in C, so MPI programs cannot depend on anything else).
macro_rules! int_kernel {
    ($name:ident, $t:ty) => {
        /// Returns false if `op` is not an element-wise integer operation.
        ///
        /// # Safety
        /// As [`zip_apply`].
        pub unsafe fn $name(op: Op, input: *const u8, inout: *mut u8, count: usize) -> bool {
            match op {
                Op::Max => {
                    zip_apply::<$t, _>(input, inout, count, |x, io| if io > x { io } else { x })
                }
                Op::Min => {
                    zip_apply::<$t, _>(input, inout, count, |x, io| if io < x { io } else { x })
                }
                Op::Sum => zip_apply::<$t, _>(input, inout, count, |x, io| io.wrapping_add(x)),
                Op::Prod => zip_apply::<$t, _>(input, inout, count, |x, io| io.wrapping_mul(x)),
                Op::Land => {
                    zip_apply::<$t, _>(input, inout, count, |x, io| ((io != 0) & (x != 0)) as $t)
                }
                Op::Lor => {
                    zip_apply::<$t, _>(input, inout, count, |x, io| ((io != 0) | (x != 0)) as $t)
                }
                Op::Lxor => {
                    zip_apply::<$t, _>(input, inout, count, |x, io| ((io != 0) ^ (x != 0)) as $t)
                }
                Op::Band => zip_apply::<$t, _>(input, inout, count, |x, io| io & x),
                Op::Bor => zip_apply::<$t, _>(input, inout, count, |x, io| io | x),
                Op::Bxor => zip_apply::<$t, _>(input, inout, count, |x, io| io ^ x),
                Op::Minloc | Op::Maxloc | Op::Replace | Op::NoOp => return false,
            }
            true
        }
    };
}

int_kernel!(reduce_i8, i8);
int_kernel!(reduce_u8, u8);
int_kernel!(reduce_i16, i16);
int_kernel!(reduce_u16, u16);
int_kernel!(reduce_i32, i32);
int_kernel!(reduce_u32, u32);
int_kernel!(reduce_i64, i64);
int_kernel!(reduce_u64, u64);
int_kernel!(reduce_i128, i128);
int_kernel!(reduce_u128, u128);

/// MAX and MIN on floating point follow MPICH (`MPL_MAX(inout, input)`):
/// MAX keeps `inout` if `inout > input` and takes `input` otherwise, so
/// - when either operand is a NaN the result is `input` (NaN or not: the
///   comparison is false), i.e. NaNs are not ignored as C `fmax` would, nor
///   always propagated;
/// - between +0 and -0 (equal) the result is `input`.
///
/// MIN likewise with `<`. This is what x86 `maxsd`/`minsd` compute, so the
/// loops vectorise.
macro_rules! float_kernel {
    ($name:ident, $t:ty) => {
        /// # Safety
        /// As [`zip_apply`].
        pub unsafe fn $name(op: Op, input: *const u8, inout: *mut u8, count: usize) -> bool {
            match op {
                Op::Max => {
                    zip_apply::<$t, _>(input, inout, count, |x, io| if io > x { io } else { x })
                }
                Op::Min => {
                    zip_apply::<$t, _>(input, inout, count, |x, io| if io < x { io } else { x })
                }
                Op::Sum => zip_apply::<$t, _>(input, inout, count, |x, io| io + x),
                Op::Prod => zip_apply::<$t, _>(input, inout, count, |x, io| io * x),
                _ => return false,
            }
            true
        }
    };
}

float_kernel!(reduce_f32, f32);
float_kernel!(reduce_f64, f64);

/// The NaN a SUM or PROD of `io` and `x` yields, made explicit: `io`'s NaN
/// if it is one, else `x`'s, else the operation's result `r`. The processor
/// returns its first operand's NaN, but the compiler may commute the
/// operands, so without this the payload could depend on code generation
/// (and the F16C path must give the same bits, see [`crate::f16c`]).
#[inline(always)]
fn nan_operand_first(io: f32, x: f32, r: f32) -> f32 {
    if io.is_nan() {
        io
    } else if x.is_nan() {
        x
    } else {
        r
    }
}

/// binary16 and bfloat16: decode to f32, operate, round back once (see
/// [`crate::half`]). MAX/MIN compare the decoded values and keep the chosen
/// operand's bits.
macro_rules! narrow_float_kernel {
    ($name:ident, $to_f32:path, $from_f32:path) => {
        /// # Safety
        /// As [`zip_apply`].
        pub unsafe fn $name(op: Op, input: *const u8, inout: *mut u8, count: usize) -> bool {
            match op {
                Op::Max => zip_apply::<u16, _>(input, inout, count, |x, io| {
                    if $to_f32(io) > $to_f32(x) {
                        io
                    } else {
                        x
                    }
                }),
                Op::Min => zip_apply::<u16, _>(input, inout, count, |x, io| {
                    if $to_f32(io) < $to_f32(x) {
                        io
                    } else {
                        x
                    }
                }),
                Op::Sum => zip_apply::<u16, _>(input, inout, count, |x, io| {
                    let (a, b) = ($to_f32(io), $to_f32(x));
                    $from_f32(nan_operand_first(a, b, a + b))
                }),
                Op::Prod => zip_apply::<u16, _>(input, inout, count, |x, io| {
                    let (a, b) = ($to_f32(io), $to_f32(x));
                    $from_f32(nan_operand_first(a, b, a * b))
                }),
                _ => return false,
            }
            true
        }
    };
}

narrow_float_kernel!(reduce_f16_portable, f16_to_f32, f32_to_f16);

/// binary16: the F16C path where the CPU has it and the buffers allow
/// (identical or disjoint), then the portable loop for the rest.
///
/// # Safety
/// As [`zip_apply`].
pub unsafe fn reduce_f16(op: Op, input: *const u8, inout: *mut u8, count: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let (src, dst, bytes) = (input as usize, inout as usize, count * 2);
        let separate = src == dst || src.saturating_add(bytes) <= dst || dst.saturating_add(bytes) <= src;
        if separate && count >= 8 && crate::f16c::available() {
            // SAFETY: the CPU has AVX and F16C; buffers as required.
            let done = crate::f16c::reduce_blocks(op, input, inout, count);
            return reduce_f16_portable(op, input.add(2 * done), inout.add(2 * done), count - done);
        }
    }
    reduce_f16_portable(op, input, inout, count)
}
narrow_float_kernel!(reduce_bf16, bf16_to_f32, f32_to_bf16);

/// binary128 in software (see [`crate::quad`]); MAX/MIN as for f64.
///
/// # Safety
/// As [`zip_apply`].
pub unsafe fn reduce_quad(op: Op, input: *const u8, inout: *mut u8, count: usize) -> bool {
    use core::cmp::Ordering::{Greater, Less};
    match op {
        Op::Max => zip_apply::<u128, _>(input, inout, count, |x, io| {
            if quad::partial_cmp(io, x) == Some(Greater) {
                io
            } else {
                x
            }
        }),
        Op::Min => zip_apply::<u128, _>(input, inout, count, |x, io| {
            if quad::partial_cmp(io, x) == Some(Less) {
                io
            } else {
                x
            }
        }),
        Op::Sum => zip_apply::<u128, _>(input, inout, count, |x, io| quad::add(io, x)),
        Op::Prod => zip_apply::<u128, _>(input, inout, count, |x, io| quad::mul(io, x)),
        _ => return false,
    }
    true
}

/// x87 80-bit `long double` in 16-byte slots: one short asm sequence per
/// element (see [`crate::x87`]). MAX/MIN copy the whole 16-byte slot of the
/// chosen operand; SUM/PROD write the 10 value bytes and leave the padding.
///
/// # Safety
/// As [`zip_apply`] with 16-byte elements.
#[cfg(target_arch = "x86_64")]
pub unsafe fn reduce_x87(op: Op, input: *const u8, inout: *mut u8, count: usize) -> bool {
    use crate::x87;
    use core::cmp::Ordering::{Greater, Less};
    let keep = match op {
        Op::Max => Some(Greater),
        Op::Min => Some(Less),
        Op::Sum | Op::Prod => None,
        _ => return false,
    };
    for i in 0..count {
        // SAFETY: element i lies inside both buffers.
        let (x, io) = (input.add(16 * i), inout.add(16 * i));
        match op {
            Op::Sum => x87::add(io, x, io),
            Op::Prod => x87::mul(io, x, io),
            _ => {
                if x87::partial_cmp(io, x) != keep {
                    ptr::copy(x, io, 16);
                }
            }
        }
    }
    true
}

/// A complex number as C, C++ and Fortran store it: real part, then
/// imaginary part, each of the element type's size.
#[derive(Clone, Copy)]
#[repr(C)]
struct Complex<T> {
    re: T,
    im: T,
}

/// Complex SUM and PROD. PROD uses MPICH's textbook formula
/// `(c + di)(a + bi) = (ca - db) + (da + cb)i`, each operation rounded in the
/// element type; there is no C99 Annex G recovery of infinities from NaN
/// results (so `inf * (1+0i)` style corner cases give NaN parts).
macro_rules! complex_kernel {
    ($name:ident, $t:ty) => {
        /// # Safety
        /// As [`zip_apply`].
        pub unsafe fn $name(op: Op, input: *const u8, inout: *mut u8, count: usize) -> bool {
            type C = Complex<$t>;
            match op {
                Op::Sum => zip_apply::<C, _>(input, inout, count, |x, io| C {
                    re: io.re + x.re,
                    im: io.im + x.im,
                }),
                Op::Prod => zip_apply::<C, _>(input, inout, count, |x, io| C {
                    re: io.re * x.re - io.im * x.im,
                    im: io.im * x.re + io.re * x.im,
                }),
                _ => return false,
            }
            true
        }
    };
}

complex_kernel!(reduce_complex_f32, f32);
complex_kernel!(reduce_complex_f64, f64);

/// Complex of binary16 (`MPI_COMPLEX4`): each part is computed in f32 and
/// rounded once (products of halves are exact in f32, so each part is the
/// correctly rounded value of the exact expression).
///
/// # Safety
/// As [`zip_apply`].
pub unsafe fn reduce_complex_f16(op: Op, input: *const u8, inout: *mut u8, count: usize) -> bool {
    type C = Complex<u16>;
    let h = f16_to_f32;
    match op {
        Op::Sum => zip_apply::<C, _>(input, inout, count, |x, io| C {
            re: f32_to_f16(h(io.re) + h(x.re)),
            im: f32_to_f16(h(io.im) + h(x.im)),
        }),
        Op::Prod => zip_apply::<C, _>(input, inout, count, |x, io| C {
            re: f32_to_f16(h(io.re) * h(x.re) - h(io.im) * h(x.im)),
            im: f32_to_f16(h(io.im) * h(x.re) + h(io.re) * h(x.im)),
        }),
        _ => return false,
    }
    true
}

/// Complex of binary128 (`MPI_COMPLEX32`), in software.
///
/// # Safety
/// As [`zip_apply`].
pub unsafe fn reduce_complex_quad(op: Op, input: *const u8, inout: *mut u8, count: usize) -> bool {
    type C = Complex<u128>;
    match op {
        Op::Sum => zip_apply::<C, _>(input, inout, count, |x, io| C {
            re: quad::add(io.re, x.re),
            im: quad::add(io.im, x.im),
        }),
        Op::Prod => zip_apply::<C, _>(input, inout, count, |x, io| C {
            re: quad::sub(quad::mul(io.re, x.re), quad::mul(io.im, x.im)),
            im: quad::add(quad::mul(io.im, x.re), quad::mul(io.re, x.im)),
        }),
        _ => return false,
    }
    true
}

/// Complex of x87 `long double` (32-byte elements).
///
/// # Safety
/// As [`zip_apply`] with 32-byte elements.
#[cfg(target_arch = "x86_64")]
pub unsafe fn reduce_complex_x87(op: Op, input: *const u8, inout: *mut u8, count: usize) -> bool {
    use crate::x87;
    if !matches!(op, Op::Sum | Op::Prod) {
        return false;
    }
    for i in 0..count {
        // SAFETY: element i (32 bytes) lies inside both buffers.
        let (x, io) = (input.add(32 * i), inout.add(32 * i));
        if op == Op::Sum {
            x87::add(io, x, io);
            x87::add(io.add(16), x.add(16), io.add(16));
        } else {
            x87::complex_mul(x, io);
        }
    }
    true
}

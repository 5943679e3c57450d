//! Tests of the public API: the (operation, type) table, values of every
//! kind of kernel, buffer handling, and MINLOC/MAXLOC.

use crate::*;
use core::mem::size_of;
use gridmpi_datatype::BasicType as B;

// ---------------------------------------------------------------------------
// Helpers

/// Runs `reduce` over typed slices.
fn run<T: Copy>(op: Op, ty: BasicType, input: &[T], inout: &mut [T]) -> Result<(), ReduceError> {
    assert_eq!(
        size_of::<T>(),
        ty.size(),
        "test element type for {}",
        ty.name()
    );
    assert_eq!(input.len(), inout.len());
    unsafe {
        reduce(
            op,
            ty,
            input.as_ptr() as *const u8,
            inout.as_mut_ptr() as *mut u8,
            input.len(),
        )
    }
}

/// `input op inout` for one element.
fn one<T: Copy>(op: Op, ty: BasicType, input: T, inout: T) -> T {
    let mut io = [inout];
    run(op, ty, &[input], &mut io).unwrap_or_else(|e| panic!("{e}"));
    io[0]
}

/// The same, checking the result is the same with the operands swapped
/// (every predefined reduction is commutative) unless a NaN is involved.
fn both<T: Copy + PartialEq + core::fmt::Debug>(op: Op, ty: BasicType, a: T, b: T) -> T {
    let r = one(op, ty, a, b);
    assert_eq!(
        r,
        one(op, ty, b, a),
        "{op} on {} not commutative for {a:?}, {b:?}",
        ty.name()
    );
    r
}

/// A long double (x87) in its 16-byte slot: (sign and exponent, mantissa).
fn ld(se: u16, mant: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&mant.to_le_bytes());
    b[8..10].copy_from_slice(&se.to_le_bytes());
    b
}

fn ld_parts(b: &[u8]) -> (u16, u64) {
    (
        u16::from_le_bytes([b[8], b[9]]),
        u64::from_le_bytes(b[..8].try_into().unwrap()),
    )
}

/// A buffer of `len` bytes starting at an address that is `offset` past a
/// 64-byte boundary.
struct Buf {
    storage: Vec<u128>,
    offset: usize,
    len: usize,
}

impl Buf {
    fn new(bytes: &[u8], offset: usize) -> Buf {
        let words = (bytes.len() + offset + 64).div_ceil(16) + 1;
        let mut buf = Buf {
            storage: vec![0u128; words],
            offset: 0,
            len: bytes.len(),
        };
        let base = buf.storage.as_ptr() as usize;
        buf.offset = (64 - base % 64) % 64 + offset;
        buf.bytes_mut().copy_from_slice(bytes);
        buf
    }
    fn ptr(&mut self) -> *mut u8 {
        unsafe { (self.storage.as_mut_ptr() as *mut u8).add(self.offset) }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        unsafe { core::slice::from_raw_parts_mut(self.ptr(), len) }
    }
    fn bytes(&mut self) -> Vec<u8> {
        self.bytes_mut().to_vec()
    }
}

fn random_bytes(next: &mut impl FnMut() -> u64, n: usize) -> Vec<u8> {
    (0..n).map(|_| next() as u8).collect()
}

// ---------------------------------------------------------------------------
// The (operation, type) table

/// The groups of MPI-4.1 section 6.9.2, written out by hand.
const C_INTEGER: &[B] = &[
    B::SignedChar,
    B::UnsignedChar,
    B::Short,
    B::UnsignedShort,
    B::Int,
    B::Unsigned,
    B::Long,
    B::UnsignedLong,
    B::LongLong,
    B::UnsignedLongLong,
    B::Int8,
    B::Int16,
    B::Int32,
    B::Int64,
    B::Uint8,
    B::Uint16,
    B::Uint32,
    B::Uint64,
];
const FORTRAN_INTEGER: &[B] = &[
    B::Integer,
    B::Integer1,
    B::Integer2,
    B::Integer4,
    B::Integer8,
    B::Integer16,
];
const MULTI_LANGUAGE: &[B] = &[B::Aint, B::Offset, B::Count];
const FLOATING_POINT: &[B] = &[
    B::Float,
    B::Double,
    B::LongDouble,
    B::Real,
    B::DoublePrecision,
    B::Real2,
    B::Real4,
    B::Real8,
    B::Real16,
    B::Float16,
    B::BFloat16,
];
const LOGICAL: &[B] = &[
    B::CBool,
    B::CxxBool,
    B::Logical,
    B::Logical1,
    B::Logical2,
    B::Logical4,
    B::Logical8,
    B::Logical16,
];
const COMPLEX: &[B] = &[
    B::CFloatComplex,
    B::CDoubleComplex,
    B::CLongDoubleComplex,
    B::CxxFloatComplex,
    B::CxxDoubleComplex,
    B::CxxLongDoubleComplex,
    B::Complex,
    B::DoubleComplex,
    B::Complex4,
    B::Complex8,
    B::Complex16,
    B::Complex32,
];
const BYTE: &[B] = &[B::Byte];
/// Types no arithmetic operation is defined on.
const NO_ARITHMETIC: &[B] = &[B::Char, B::WChar, B::Packed, B::Character, B::Lb, B::Ub];

fn expected_allowed(op: Op, ty: B) -> bool {
    let is = |group: &[B]| group.contains(&ty);
    match op {
        Op::Max | Op::Min => {
            is(C_INTEGER) || is(FORTRAN_INTEGER) || is(MULTI_LANGUAGE) || is(FLOATING_POINT)
        }
        Op::Sum | Op::Prod => {
            is(C_INTEGER)
                || is(FORTRAN_INTEGER)
                || is(MULTI_LANGUAGE)
                || is(FLOATING_POINT)
                || is(COMPLEX)
        }
        Op::Land | Op::Lor | Op::Lxor => is(C_INTEGER) || is(LOGICAL),
        Op::Band | Op::Bor | Op::Bxor => {
            is(C_INTEGER) || is(FORTRAN_INTEGER) || is(MULTI_LANGUAGE) || is(BYTE)
        }
        Op::Minloc | Op::Maxloc => false,
        Op::Replace | Op::NoOp => ty != B::Lb && ty != B::Ub,
    }
}

fn expected_extension(op: Op, ty: B) -> bool {
    let integer_op = !matches!(op, Op::Minloc | Op::Maxloc | Op::Replace | Op::NoOp);
    let logical_op = matches!(op, Op::Land | Op::Lor | Op::Lxor);
    (matches!(ty, B::Char | B::Character) && integer_op)
        || (logical_op && (FORTRAN_INTEGER.contains(&ty) || MULTI_LANGUAGE.contains(&ty)))
}

#[test]
fn every_basic_type_is_classified_by_the_test_table() {
    for &ty in B::ALL {
        let lists = [
            C_INTEGER,
            FORTRAN_INTEGER,
            MULTI_LANGUAGE,
            FLOATING_POINT,
            LOGICAL,
            COMPLEX,
            BYTE,
            NO_ARITHMETIC,
        ];
        let hits = lists.iter().filter(|l| l.contains(&ty)).count();
        assert_eq!(
            hits,
            1,
            "{} must be in exactly one group of this test (new type?)",
            ty.name()
        );
    }
}

#[test]
fn allowed_matches_the_standard_for_every_pair() {
    let mut allowed_count = 0;
    for &ty in B::ALL {
        for op in Op::ALL {
            assert_eq!(
                allowed(op, ty),
                expected_allowed(op, ty),
                "allowed({op}, {})",
                ty.name()
            );
            assert_eq!(
                mpich_extension(op, ty),
                expected_extension(op, ty),
                "mpich_extension({op}, {})",
                ty.name()
            );
            allowed_count += allowed(op, ty) as usize;
        }
    }
    assert!(allowed_count > 300, "{allowed_count}");
}

#[test]
fn group_matches_the_test_lists() {
    for &ty in C_INTEGER {
        assert_eq!(group(ty), Some(TypeGroup::CInteger), "{}", ty.name());
    }
    for &ty in FORTRAN_INTEGER {
        assert_eq!(group(ty), Some(TypeGroup::FortranInteger), "{}", ty.name());
    }
    for &ty in MULTI_LANGUAGE {
        assert_eq!(group(ty), Some(TypeGroup::MultiLanguage));
    }
    for &ty in FLOATING_POINT {
        assert_eq!(group(ty), Some(TypeGroup::FloatingPoint));
    }
    for &ty in LOGICAL {
        assert_eq!(group(ty), Some(TypeGroup::Logical));
    }
    for &ty in COMPLEX {
        assert_eq!(group(ty), Some(TypeGroup::Complex));
    }
    assert_eq!(group(B::Byte), Some(TypeGroup::Byte));
    for &ty in NO_ARITHMETIC {
        assert_eq!(group(ty), None, "{}", ty.name());
    }
}

/// `reduce` accepts exactly the standard's combinations plus MPICH's
/// extensions, and refuses the rest without touching the buffer.
#[test]
fn reduce_accepts_exactly_the_table() {
    for &ty in B::ALL {
        for op in Op::ALL {
            let want = expected_allowed(op, ty) || expected_extension(op, ty);
            let input = [0u8; 64];
            let mut inout = [0x5au8; 64];
            let result = unsafe { reduce(op, ty, input.as_ptr(), inout.as_mut_ptr(), 2) };
            let x87_elsewhere = !cfg!(target_arch = "x86_64")
                && ty.float_format() == Some(gridmpi_datatype::FloatFormat::X87Extended)
                && !matches!(op, Op::Replace | Op::NoOp);
            match result {
                Ok(()) => assert!(want && !x87_elsewhere, "{op} on {} should fail", ty.name()),
                Err(ReduceError::NotAllowed { op: o, ty: name }) => {
                    assert!(!want, "{op} on {} should work", ty.name());
                    assert_eq!((o, name), (op, ty.name()));
                    assert_eq!(inout, [0x5a; 64], "nothing written on error");
                }
                Err(ReduceError::Unsupported { .. }) => {
                    assert!(x87_elsewhere, "{op} on {}", ty.name())
                }
                Err(e) => panic!("{op} on {}: {e}", ty.name()),
            }
            assert_eq!(
                supported(op, ty),
                result.is_ok(),
                "supported({op}, {})",
                ty.name()
            );
        }
    }
}

#[test]
fn error_messages_name_the_operation_and_type() {
    let mut x = [0u8; 8];
    let err = unsafe { reduce(Op::Band, B::Double, x.as_ptr(), x.as_mut_ptr(), 1) }.unwrap_err();
    assert_eq!(err.to_string(), "MPI_BAND is not defined for MPI_DOUBLE");
    let err = unsafe { reduce(Op::Maxloc, B::Double, x.as_ptr(), x.as_mut_ptr(), 1) }.unwrap_err();
    assert_eq!(
        err.to_string(),
        "MPI_MAXLOC is not defined for MPI_DOUBLE (it needs a (value, index) pair type such as MPI_DOUBLE_INT)"
    );
    let err = unsafe { reduce(Op::Sum, B::CBool, x.as_ptr(), x.as_mut_ptr(), 1) }.unwrap_err();
    assert_eq!(err.to_string(), "MPI_SUM is not defined for MPI_C_BOOL");
    let err = unsafe { reduce(Op::Lor, B::Double, x.as_ptr(), x.as_mut_ptr(), 1) }.unwrap_err();
    assert_eq!(err.to_string(), "MPI_LOR is not defined for MPI_DOUBLE");
    let err = unsafe { reduce(Op::Sum, B::Int, core::ptr::null(), x.as_mut_ptr(), 1) }.unwrap_err();
    assert_eq!(err, ReduceError::NullBuffer);
    let err =
        unsafe { reduce(Op::Sum, B::Int, x.as_ptr(), x.as_mut_ptr(), usize::MAX / 2) }.unwrap_err();
    assert_eq!(
        err,
        ReduceError::BufferTooLarge {
            count: usize::MAX / 2,
            extent: 4
        }
    );
    assert!(err.to_string().contains("exceed the address space"));
    let unsupported = ReduceError::Unsupported {
        op: Op::Sum,
        ty: "MPI_LONG_DOUBLE",
        reason: "x87 only",
    };
    assert_eq!(
        unsupported.to_string(),
        "MPI_SUM on MPI_LONG_DOUBLE is not supported: x87 only"
    );
}

#[test]
fn op_names_and_commutativity() {
    let names: Vec<&str> = Op::ALL.iter().map(|op| op.name()).collect();
    assert_eq!(
        names,
        [
            "MPI_MAX",
            "MPI_MIN",
            "MPI_SUM",
            "MPI_PROD",
            "MPI_LAND",
            "MPI_BAND",
            "MPI_LOR",
            "MPI_BOR",
            "MPI_LXOR",
            "MPI_BXOR",
            "MPI_MINLOC",
            "MPI_MAXLOC",
            "MPI_REPLACE",
            "MPI_NO_OP"
        ]
    );
    for op in Op::ALL {
        assert_eq!(
            op.is_commutative(),
            !matches!(op, Op::Replace | Op::NoOp),
            "{op}"
        );
        assert_eq!(op.to_string(), op.name());
    }
}

// ---------------------------------------------------------------------------
// Buffers

#[test]
fn zero_count_and_null_pointers() {
    for &ty in B::ALL {
        for op in Op::ALL {
            if supported(op, ty) {
                let r = unsafe { reduce(op, ty, core::ptr::null(), core::ptr::null_mut(), 0) };
                assert_eq!(r, Ok(()), "{op} {}", ty.name());
            }
        }
    }
    // NO_OP never reads the input.
    let mut x = [7i32; 3];
    assert_eq!(
        unsafe {
            reduce(
                Op::NoOp,
                B::Int,
                core::ptr::null(),
                x.as_mut_ptr() as *mut u8,
                3,
            )
        },
        Ok(())
    );
    assert_eq!(x, [7; 3]);
}

#[test]
fn replace_and_no_op() {
    let input = [1.5f64, -2.0, f64::NAN];
    let mut inout = [0.0f64; 3];
    run(Op::NoOp, B::Double, &input, &mut inout).unwrap();
    assert_eq!(inout, [0.0; 3]);
    run(Op::Replace, B::Double, &input, &mut inout).unwrap();
    assert_eq!(inout.map(f64::to_bits), input.map(f64::to_bits));
    // REPLACE works on types with no arithmetic too.
    let mut chars = *b"xyz";
    run(Op::Replace, B::Char, b"abc", &mut chars).unwrap();
    assert_eq!(&chars, b"abc");
    let mut packed = [0u8; 4];
    run(Op::Replace, B::Packed, &[1u8, 2, 3, 4], &mut packed).unwrap();
    assert_eq!(packed, [1, 2, 3, 4]);
    // Overlapping REPLACE is a memmove: inout gets the input as it was.
    let mut buf = [1i32, 2, 3, 4, 5];
    let p = buf.as_mut_ptr();
    unsafe { reduce(Op::Replace, B::Int, p as *const u8, p.add(1) as *mut u8, 4) }.unwrap();
    assert_eq!(buf, [1, 1, 2, 3, 4]);
}

/// Every supported (op, type) gives the same bytes on aligned, misaligned
/// and in-place buffers, and partially overlapping buffers behave as
/// element-by-element processing in increasing order.
#[test]
fn unaligned_overlapping_and_aligned_paths_agree() {
    let mut next = crate::testutil::rng(42);
    for &ty in B::ALL {
        for op in Op::ALL {
            if !supported(op, ty) || ty.size() == 0 {
                continue;
            }
            let size = ty.size();
            for count in [1usize, 3, 17, 64] {
                let input = random_bytes(&mut next, count * size);
                let inout = random_bytes(&mut next, count * size);
                let reference = {
                    let mut src = Buf::new(&input, 0);
                    let mut dst = Buf::new(&inout, 0);
                    unsafe { reduce(op, ty, src.ptr(), dst.ptr(), count) }.unwrap();
                    dst.bytes()
                };
                for (in_off, io_off) in [(1, 0), (0, 3), (5, 7), (2, 2)] {
                    let mut src = Buf::new(&input, in_off);
                    let mut dst = Buf::new(&inout, io_off);
                    unsafe { reduce(op, ty, src.ptr(), dst.ptr(), count) }.unwrap();
                    assert_eq!(
                        dst.bytes(),
                        reference,
                        "{op} on {} offsets {in_off}/{io_off}",
                        ty.name()
                    );
                    assert_eq!(src.bytes(), input, "input must not change");
                }
                // Same buffer as input and inout: like two equal copies.
                let same_reference = {
                    let mut src = Buf::new(&inout, 0);
                    let mut dst = Buf::new(&inout, 0);
                    unsafe { reduce(op, ty, src.ptr(), dst.ptr(), count) }.unwrap();
                    dst.bytes()
                };
                for off in [0, 1] {
                    let mut both = Buf::new(&inout, off);
                    let p = both.ptr();
                    unsafe { reduce(op, ty, p, p, count) }.unwrap();
                    assert_eq!(
                        both.bytes(),
                        same_reference,
                        "{op} on {} in place",
                        ty.name()
                    );
                }
                // inout one element after input, in one buffer. (REPLACE
                // is a memmove instead: checked in replace_and_no_op.)
                if count > 1 && op != Op::Replace {
                    let mut joined = input.clone();
                    joined.extend_from_slice(&inout[..size]);
                    let mut whole = Buf::new(&joined, 0);
                    let p = whole.ptr();
                    unsafe { reduce(op, ty, p, p.add(size), count) }.unwrap();
                    let mut stepwise = Buf::new(&joined, 0);
                    let q = stepwise.ptr();
                    for i in 0..count {
                        unsafe { reduce(op, ty, q.add(i * size), q.add((i + 1) * size), 1) }
                            .unwrap();
                    }
                    assert_eq!(
                        whole.bytes(),
                        stepwise.bytes(),
                        "{op} on {} overlapping",
                        ty.name()
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Integers

#[test]
fn integer_sum_and_product_wrap_around() {
    assert_eq!(both(Op::Sum, B::SignedChar, 100i8, 100), -56);
    assert_eq!(both(Op::Sum, B::UnsignedChar, 200u8, 100), 44);
    assert_eq!(both(Op::Sum, B::Int, i32::MAX, 1), i32::MIN);
    assert_eq!(both(Op::Sum, B::Unsigned, u32::MAX, 2), 1);
    assert_eq!(both(Op::Sum, B::Long, -5i64, 3), -2);
    assert_eq!(
        both(Op::Sum, B::UnsignedLongLong, u64::MAX, u64::MAX),
        u64::MAX - 1
    );
    assert_eq!(both(Op::Sum, B::Integer16, i128::MAX, 1), i128::MIN);
    assert_eq!(
        both(Op::Sum, B::Integer16, -(1i128 << 100), 1i128 << 101),
        1i128 << 100
    );
    assert_eq!(both(Op::Prod, B::Short, 300i16, 300), (90000i32 as i16));
    assert_eq!(both(Op::Prod, B::Int64, -3i64, 7), -21);
    assert_eq!(both(Op::Prod, B::Uint64, 1u64 << 63, 2), 0);
    assert_eq!(
        both(Op::Prod, B::Integer16, 1i128 << 64, 1i128 << 63),
        i128::MIN
    );
    assert_eq!(both(Op::Sum, B::Aint, isize::MAX as i64, 1), i64::MIN);
    assert_eq!(both(Op::Sum, B::Count, 40i64, 2), 42);
}

#[test]
fn integer_max_min_respect_signedness() {
    // Same bits, different answers for signed and unsigned types.
    assert_eq!(both(Op::Max, B::Int8, -1i8, 1), 1);
    assert_eq!(both(Op::Max, B::Uint8, 0xffu8, 1), 0xff);
    assert_eq!(both(Op::Min, B::Int, -7i32, 3), -7);
    assert_eq!(both(Op::Min, B::Unsigned, (-7i32) as u32, 3), 3);
    assert_eq!(both(Op::Max, B::Long, i64::MIN, i64::MAX), i64::MAX);
    assert_eq!(both(Op::Min, B::UnsignedLong, u64::MAX, 0), 0);
    assert_eq!(both(Op::Max, B::Integer16, -1i128, i128::MIN), -1);
    assert_eq!(both(Op::Min, B::Integer2, -300i16, 200), -300);
    // MPICH extension: MPI_CHAR is C `char`, signed on x86-64.
    let c = |v: i8| v as core::ffi::c_char;
    let max = one(Op::Max, B::Char, c(-1), c(1));
    assert_eq!(
        max,
        if core::ffi::c_char::MIN != 0 {
            c(1)
        } else {
            c(-1)
        }
    );
}

#[test]
fn integer_logical_ops_give_canonical_booleans() {
    // Any non-zero value is true; results are 0 or 1.
    assert_eq!(both(Op::Land, B::Int, 5i32, -3), 1);
    assert_eq!(both(Op::Land, B::Int, 5i32, 0), 0);
    assert_eq!(both(Op::Lor, B::UnsignedChar, 0u8, 0x80), 1);
    assert_eq!(both(Op::Lor, B::Short, 0i16, 0), 0);
    assert_eq!(both(Op::Lxor, B::Long, 2i64, 4), 0);
    assert_eq!(both(Op::Lxor, B::Uint16, 0u16, 9), 1);
    assert_eq!(both(Op::Land, B::Int64, i64::MIN, i64::MIN), 1);
    // MPICH extension on Fortran integers.
    assert_eq!(both(Op::Lor, B::Integer, 0i32, 7), 1);
}

#[test]
fn bitwise_ops_on_integers_and_bytes() {
    assert_eq!(both(Op::Band, B::Unsigned, 0xf0f0u32, 0xff00), 0xf000);
    assert_eq!(both(Op::Bor, B::Int, -16i32, 7), -9);
    assert_eq!(
        both(Op::Bxor, B::UnsignedLong, u64::MAX, 0x0f),
        u64::MAX ^ 0x0f
    );
    assert_eq!(both(Op::Band, B::Byte, 0b1100u8, 0b1010), 0b1000);
    assert_eq!(both(Op::Bor, B::Byte, 0b1100u8, 0b1010), 0b1110);
    assert_eq!(both(Op::Bxor, B::Byte, 0b1100u8, 0b1010), 0b0110);
    assert_eq!(both(Op::Bxor, B::Integer16, -1i128, 1), -2);
    assert_eq!(both(Op::Band, B::Offset, -1i64, 0x1234), 0x1234);
}

#[test]
fn long_arrays_of_integers() {
    let input: Vec<i32> = (0..1000).map(|i| i * 3 - 500).collect();
    let mut inout: Vec<i32> = (0..1000).map(|i| 1000 - i * 7).collect();
    let expect: Vec<i32> = input
        .iter()
        .zip(&inout)
        .map(|(a, b)| a.wrapping_add(*b))
        .collect();
    run(Op::Sum, B::Int, &input, &mut inout).unwrap();
    assert_eq!(inout, expect);
    let mut maxes: Vec<i32> = (0..1000).map(|i| 1000 - i * 7).collect();
    run(Op::Max, B::Int32, &input, &mut maxes).unwrap();
    assert!(maxes
        .iter()
        .enumerate()
        .all(|(i, &m)| m == input[i].max(1000 - i as i32 * 7)));
}

// ---------------------------------------------------------------------------
// Logical and bool

#[test]
fn c_bool_and_fortran_logical() {
    for ty in [B::CBool, B::CxxBool, B::Logical1] {
        assert_eq!(both(Op::Land, ty, 1u8, 1), 1);
        assert_eq!(both(Op::Land, ty, 1u8, 0), 0);
        assert_eq!(both(Op::Lor, ty, 0u8, 0), 0);
        assert_eq!(both(Op::Lor, ty, 0u8, 1), 1);
        assert_eq!(both(Op::Lxor, ty, 1u8, 1), 0);
        assert_eq!(both(Op::Lxor, ty, 0u8, 1), 1);
        // Non-canonical true (e.g. 0xff) reads as true, result is 1.
        assert_eq!(both(Op::Land, ty, 0xffu8, 2), 1);
        assert_eq!(both(Op::Lxor, ty, 0xffu8, 2), 0);
    }
    // gfortran .TRUE. is 1; other compilers' -1 reads as true too.
    assert_eq!(both(Op::Land, B::Logical, 1u32, u32::MAX), 1);
    assert_eq!(both(Op::Lor, B::Logical, 0u32, 0), 0);
    assert_eq!(both(Op::Lxor, B::Logical8, 1u64, 0), 1);
    assert_eq!(both(Op::Lor, B::Logical2, 0u16, 0x100), 1);
    assert_eq!(both(Op::Land, B::Logical16, 1u128 << 127, 1), 1);
    let input = [1u8, 0, 1, 0];
    let mut inout = [1u8, 1, 0, 0];
    run(Op::Lxor, B::CBool, &input, &mut inout).unwrap();
    assert_eq!(inout, [0, 1, 1, 0]);
}

// ---------------------------------------------------------------------------
// Floating point

#[test]
fn float_arithmetic() {
    assert_eq!(both(Op::Sum, B::Double, 0.1f64, 0.2), 0.1 + 0.2);
    assert_eq!(both(Op::Prod, B::Double, 3.0f64, -0.5), -1.5);
    assert_eq!(both(Op::Sum, B::Float, 1.0f32, f32::EPSILON / 2.0), 1.0); // tie to even
    assert_eq!(both(Op::Sum, B::Real, 16777216.0f32, 1.0), 16777216.0);
    assert_eq!(
        both(Op::Prod, B::DoublePrecision, f64::MAX, 2.0),
        f64::INFINITY
    );
    assert_eq!(both(Op::Sum, B::Real8, 1e308f64, -1e308), 0.0);
    assert_eq!(both(Op::Max, B::Double, -1.0f64, -2.0), -1.0);
    assert_eq!(
        both(Op::Min, B::Real4, 1.0f32, f32::NEG_INFINITY),
        f32::NEG_INFINITY
    );
    // Signed zeros: -0 + -0 = -0, +0 + -0 = +0.
    assert!(one(Op::Sum, B::Double, -0.0f64, -0.0).is_sign_negative());
    assert!(one(Op::Sum, B::Double, -0.0f64, 0.0).is_sign_positive());
}

/// MAX/MIN follow MPICH: `inout > input ? inout : input` (MIN with `<`):
/// with a NaN on either side, or equal operands (+0 and -0), the result is
/// the input operand.
#[test]
fn float_max_min_nan_and_signed_zero() {
    let nan = f64::NAN;
    for op in [Op::Max, Op::Min] {
        // input NaN: result NaN.
        assert!(one(op, B::Double, nan, 1.0).is_nan(), "{op}");
        // inout NaN: result is the input.
        assert_eq!(one(op, B::Double, 1.0, nan), 1.0, "{op}");
        // equal zeros: result is the input.
        assert!(one(op, B::Double, -0.0f64, 0.0).is_sign_negative(), "{op}");
        assert!(one(op, B::Double, 0.0f64, -0.0).is_sign_positive(), "{op}");
        assert!(one(op, B::Float, f32::NAN, 1.0).is_nan());
        assert_eq!(one(op, B::Float, 2.0f32, f32::NAN), 2.0);
    }
    assert_eq!(one(Op::Max, B::Double, 1.0f64, 2.0), 2.0);
    assert_eq!(one(Op::Min, B::Double, 1.0f64, 2.0), 1.0);
    // A NaN propagates through SUM and PROD.
    assert!(one(Op::Sum, B::Double, nan, 1.0).is_nan());
    assert!(one(Op::Sum, B::Double, 1.0, nan).is_nan());
    assert!(one(Op::Prod, B::Float, f32::NAN, 0.0).is_nan());
    assert!(one(Op::Sum, B::Double, f64::INFINITY, f64::NEG_INFINITY).is_nan());
}

#[test]
fn long_double_against_gcc_reference_bytes() {
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    // Values and results printed by gcc 12 on x86-64 (`long double`).
    let third = ld(0x3ffd, 0xaaaa_aaaa_aaaa_aaab);
    let two_thirds = ld(0x3ffe, 0xaaaa_aaaa_aaaa_aaab);
    let tenth = ld(0x3ffb, 0xcccc_cccc_cccc_cccd);
    let fifth = ld(0x3ffc, 0xcccc_cccc_cccc_cccd);
    let max = ld(0x7ffe, u64::MAX);
    let sum = |a: [u8; 16], b: [u8; 16]| ld_parts(&both(Op::Sum, B::LongDouble, a, b));
    let prod = |a: [u8; 16], b: [u8; 16]| ld_parts(&both(Op::Prod, B::LongDouble, a, b));
    assert_eq!(sum(third, two_thirds), (0x3fff, 0x8000_0000_0000_0000));
    assert_eq!(prod(third, two_thirds), (0x3ffc, 0xe38e_38e3_8e38_e38f));
    assert_eq!(sum(tenth, fifth), (0x3ffd, 0x9999_9999_9999_999a));
    assert_eq!(sum(max, max), (0x7fff, 0x8000_0000_0000_0000));
    // Arrays, unaligned.
    let mut input = Vec::new();
    let mut inout = Vec::new();
    for _ in 0..5 {
        input.extend_from_slice(&tenth);
        inout.extend_from_slice(&fifth);
    }
    let mut src = Buf::new(&input, 3);
    let mut dst = Buf::new(&inout, 5);
    unsafe { reduce(Op::Sum, B::LongDouble, src.ptr(), dst.ptr(), 5) }.unwrap();
    for chunk in dst.bytes().chunks(16) {
        assert_eq!(ld_parts(chunk), (0x3ffd, 0x9999_9999_9999_999a));
    }
    // MAX/MIN, with the same NaN rule as double.
    assert_eq!(one(Op::Max, B::LongDouble, third, two_thirds), two_thirds);
    assert_eq!(one(Op::Min, B::LongDouble, third, two_thirds), third);
    let nan = ld(0x7fff, 0xc000_0000_0000_0000);
    assert_eq!(one(Op::Max, B::LongDouble, third, nan), third);
    assert_eq!(one(Op::Max, B::LongDouble, nan, third), nan);
    // Padding bytes of the inout are left alone by arithmetic.
    let mut padded = fifth;
    padded[10..].copy_from_slice(&[0xab; 6]);
    let r = one(Op::Sum, B::LongDouble, tenth, padded);
    assert_eq!(&r[10..], &[0xab; 6]);
}

#[test]
fn long_double_complex_against_gcc_reference_bytes() {
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    let c = |re: [u8; 16], im: [u8; 16]| {
        let mut b = [0u8; 32];
        b[..16].copy_from_slice(&re);
        b[16..].copy_from_slice(&im);
        b
    };
    let x = c(
        ld(0x3ffd, 0xaaaa_aaaa_aaaa_aaab),
        ld(0x3ffb, 0xcccc_cccc_cccc_cccd),
    ); // 1/3 + 0.1i
    let y = c(
        ld(0x3ffe, 0xaaaa_aaaa_aaaa_aaab),
        ld(0x3ffc, 0xcccc_cccc_cccc_cccd),
    ); // 2/3 + 0.2i
    for ty in [B::CLongDoubleComplex, B::CxxLongDoubleComplex] {
        let p = both(Op::Prod, ty, x, y);
        assert_eq!(ld_parts(&p[..16]), (0x3ffc, 0xcf13_579b_e024_68ae));
        assert_eq!(ld_parts(&p[16..]), (0x3ffc, 0x8888_8888_8888_8889));
        let s = both(Op::Sum, ty, x, y);
        assert_eq!(ld_parts(&s[..16]), (0x3fff, 0x8000_0000_0000_0000));
        assert_eq!(ld_parts(&s[16..]), (0x3ffd, 0x9999_9999_9999_999a));
    }
}

#[test]
fn quad_through_reduce() {
    // gcc __float128: 1/3, 0.1, their sum and product.
    let third: u128 = 0x3ffd5555555555555555555555555555;
    let tenth: u128 = 0x3ffb999999999999999999999999999a;
    let three: u128 = 0x4000_8000_0000_0000_0000_0000_0000_0000;
    assert_eq!(
        both(Op::Sum, B::Real16, third, tenth),
        0x3ffdbbbbbbbbbbbbbbbbbbbbbbbbbbbc
    );
    assert_eq!(
        both(Op::Prod, B::Real16, third, tenth),
        0x3ffa1111111111111111111111111111
    );
    assert_eq!(both(Op::Prod, B::Real16, third, three), 0x3fff << 112);
    assert_eq!(both(Op::Max, B::Real16, third, tenth), third);
    assert_eq!(
        both(Op::Min, B::Real16, third, tenth | 1 << 127),
        tenth | 1 << 127
    );
    // (1 + 2i)(3 + 4i) = -5 + 10i
    let q = |v: f64| -> u128 {
        // exact small integers: build binary128 from the f64 bits
        let bits = v.to_bits() as u128;
        if v == 0.0 {
            return (bits >> 63) << 127;
        }
        let sign = (bits >> 63) << 127;
        let exp = ((bits >> 52) & 0x7ff) as i32 - 1023 + 16383;
        sign | (exp as u128) << 112 | (bits & ((1 << 52) - 1)) << 60
    };
    let p = both(Op::Prod, B::Complex32, [q(1.0), q(2.0)], [q(3.0), q(4.0)]);
    assert_eq!(p, [q(-5.0), q(10.0)]);
    let s = both(Op::Sum, B::Complex32, [q(1.0), q(2.0)], [q(3.0), q(-4.0)]);
    assert_eq!(s, [q(4.0), q(-2.0)]);
}

#[test]
fn complex_products_and_sums() {
    // (1 + 2i)(3 + 4i) = -5 + 10i in every width.
    for ty in [
        B::CFloatComplex,
        B::CxxFloatComplex,
        B::Complex,
        B::Complex8,
    ] {
        assert_eq!(both(Op::Prod, ty, [1.0f32, 2.0], [3.0, 4.0]), [-5.0, 10.0]);
        assert_eq!(both(Op::Sum, ty, [1.0f32, 2.0], [3.0, 4.0]), [4.0, 6.0]);
    }
    for ty in [
        B::CDoubleComplex,
        B::CxxDoubleComplex,
        B::DoubleComplex,
        B::Complex16,
    ] {
        assert_eq!(both(Op::Prod, ty, [1.0f64, 2.0], [3.0, 4.0]), [-5.0, 10.0]);
        assert_eq!(both(Op::Prod, ty, [0.0f64, 1.0], [0.0, 1.0]), [-1.0, 0.0]); // i * i
        assert_eq!(both(Op::Sum, ty, [0.5f64, -1.5], [0.25, 1.5]), [0.75, 0.0]);
    }
    // Each part is rounded as written: re = c*a - d*b, im = d*a + c*b.
    let (a, b, c, d) = (0.1f64, 0.7, 1.0 / 3.0, 0.3);
    let p = both(Op::Prod, B::CDoubleComplex, [a, b], [c, d]);
    assert_eq!(p, [c * a - d * b, d * a + c * b]);
    // Half complex: (1.5 + 2i)(2 - 0.5i) = 4 + 3.25i, exact.
    let h = crate::half::f32_to_f16;
    let p = both(Op::Prod, B::Complex4, [h(1.5), h(2.0)], [h(2.0), h(-0.5)]);
    assert_eq!(p, [h(4.0), h(3.25)]);
    let s = both(Op::Sum, B::Complex4, [h(2048.0), h(1.0)], [h(1.0), h(1.0)]);
    assert_eq!(s, [h(2048.0), h(2.0)]); // 2049 ties to even 2048
                                        // Complex has no MAX.
    assert!(matches!(
        run(
            Op::Max,
            B::CDoubleComplex,
            &[[0.0f64; 2]],
            &mut [[0.0f64; 2]]
        ),
        Err(ReduceError::NotAllowed { .. })
    ));
}

#[test]
fn half_and_bfloat16_rounding() {
    use crate::half::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
    for ty in [B::Float16, B::Real2] {
        let sum = |a: f32, b: f32| f16_to_f32(both(Op::Sum, ty, f32_to_f16(a), f32_to_f16(b)));
        assert_eq!(sum(2048.0, 1.0), 2048.0); // tie -> even
        assert_eq!(sum(2050.0, 1.0), 2052.0); // tie -> even
        assert_eq!(sum(2048.0, 3.0), 2052.0); // 2051 tie -> 2052
        assert_eq!(sum(65504.0, 8.0), 65504.0); // below the midpoint
                                                // 65520 is the midpoint between the largest finite (odd) and 2^16: ties to even overflow to inf.
        assert_eq!(sum(65504.0, 16.0), f32::INFINITY);
        // half(0.1) + half(0.2) = 0.2999267578125 = 1228.5 ulps of 2^-12:
        // a tie, to even 1228 ulps.
        assert_eq!(sum(0.1, 0.2), 1228.0 * 2f32.powi(-12));
        let prod = |a: f32, b: f32| f16_to_f32(both(Op::Prod, ty, f32_to_f16(a), f32_to_f16(b)));
        assert_eq!(prod(3.0, 0.5), 1.5);
        assert_eq!(prod(2f32.powi(-14), 2f32.powi(-10)), 2f32.powi(-24)); // subnormal
        assert_eq!(prod(2f32.powi(-14), 2f32.powi(-11)), 0.0); // half the min subnormal: tie -> 0
        assert_eq!(prod(300.0, 300.0), f32::INFINITY);
        let max = |a: u16, b: u16| one(Op::Max, ty, a, b);
        assert_eq!(max(f32_to_f16(-1.0), f32_to_f16(0.5)), f32_to_f16(0.5));
        assert_eq!(max(0x7e00, f32_to_f16(1.0)), 0x7e00); // input NaN wins
        assert_eq!(max(f32_to_f16(1.0), 0x7e00), f32_to_f16(1.0));
        assert_eq!(one(Op::Min, ty, 0x8000u16, 0x0000), 0x8000); // -0 vs +0: input
    }
    let sum =
        |a: f32, b: f32| bf16_to_f32(both(Op::Sum, B::BFloat16, f32_to_bf16(a), f32_to_bf16(b)));
    assert_eq!(sum(256.0, 1.0), 256.0); // tie -> even
    assert_eq!(sum(258.0, 1.0), 260.0); // tie -> even
    assert_eq!(sum(1.0, 1.0), 2.0);
    assert_eq!(sum(3.0e38, 3.0e38), f32::INFINITY);
    let prod =
        |a: f32, b: f32| bf16_to_f32(both(Op::Prod, B::BFloat16, f32_to_bf16(a), f32_to_bf16(b)));
    assert_eq!(prod(1.5, 1.5), 2.25);
    assert_eq!(prod(1.0078125, 1.0078125), 1.015625); // 1.01568604 -> nearest bf16
    assert!(bf16_to_f32(one(Op::Sum, B::BFloat16, 0x7fc0u16, 0x3f80)).is_nan());
}

// ---------------------------------------------------------------------------
// MINLOC / MAXLOC

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct DoubleInt {
    value: f64,
    index: i32,
    pad: i32,
}

fn di(value: f64, index: i32) -> DoubleInt {
    DoubleInt {
        value,
        index,
        pad: -1,
    }
}

fn run_pair<T: Copy>(
    op: Op,
    value: B,
    index: B,
    offset: usize,
    input: &[T],
    inout: &mut [T],
) -> Result<(), ReduceError> {
    unsafe {
        reduce_pair(
            op,
            value,
            index,
            offset,
            size_of::<T>(),
            input.as_ptr() as *const u8,
            inout.as_mut_ptr() as *mut u8,
            input.len(),
        )
    }
}

#[test]
fn maxloc_and_minloc_on_double_int() {
    let input = [
        di(1.0, 5),
        di(2.0, 5),
        di(3.0, 9),
        di(3.0, 2),
        di(-0.0, 4),
        di(f64::NAN, 1),
        di(1.0, 1),
    ];
    let inout = [
        di(2.0, 7),
        di(1.0, 8),
        di(3.0, 4),
        di(3.0, 4),
        di(0.0, 6),
        di(1.0, 3),
        di(f64::NAN, 0),
    ];
    let mut max = inout;
    run_pair(Op::Maxloc, B::Double, B::Int, 8, &input, &mut max).unwrap();
    let expect_max = [
        di(2.0, 7), // larger inout wins
        di(2.0, 5), // larger input wins
        di(3.0, 4), // tie: smaller index (inout's)
        di(3.0, 2), // tie: smaller index (input's)
        di(0.0, 4), // +0 == -0: tie, value stays, smaller index
        di(1.0, 3), // NaN input never wins (MPICH)
    ];
    assert_eq!(&max[..6], &expect_max);
    assert!(
        max[6].value.is_nan() && max[6].index == 0,
        "NaN inout stays"
    );
    let mut min = inout;
    run_pair(Op::Minloc, B::Double, B::Int, 8, &input, &mut min).unwrap();
    let expect_min = [
        di(1.0, 5),
        di(1.0, 8),
        di(3.0, 4),
        di(3.0, 2),
        di(0.0, 4),
        di(1.0, 3),
    ];
    assert_eq!(&min[..6], &expect_min);
    // The padding is never written.
    assert!(max.iter().chain(&min).all(|p| p.pad == -1));
}

#[test]
fn maxloc_is_commutative_and_associative_on_ties() {
    let vals = [di(5.0, 3), di(5.0, 1), di(2.0, 0), di(5.0, 2)];
    // Reduce in every order of pairs: the result is always (5, 1).
    for perm in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]] {
        let mut acc = [vals[perm[0]]];
        for &k in &perm[1..] {
            run_pair(Op::Maxloc, B::Double, B::Int, 8, &[vals[k]], &mut acc).unwrap();
        }
        assert_eq!((acc[0].value, acc[0].index), (5.0, 1));
    }
}

#[test]
fn other_pair_types() {
    // MPI_2INT
    let mut io = [[3i32, 9], [1, 2]];
    run_pair(Op::Maxloc, B::Int, B::Int, 4, &[[3i32, 4], [7, 8]], &mut io).unwrap();
    assert_eq!(io, [[3, 4], [7, 8]]);
    // MPI_SHORT_INT: short at 0, int at 4, extent 8.
    #[repr(C)]
    #[derive(Clone, Copy, PartialEq, Debug)]
    struct ShortInt(i16, i16, i32);
    let mut io = [ShortInt(-5, 0x7777, 10)];
    run_pair(
        Op::Minloc,
        B::Short,
        B::Int,
        4,
        &[ShortInt(-5, 0, 3)],
        &mut io,
    )
    .unwrap();
    assert_eq!(io, [ShortInt(-5, 0x7777, 3)]);
    // MPI_2REAL: the index is a REAL too.
    let mut io = [[1.0f32, 4.0], [2.0, 1.0]];
    run_pair(
        Op::Minloc,
        B::Real,
        B::Real,
        4,
        &[[1.0f32, 3.0], [1.0, 9.0]],
        &mut io,
    )
    .unwrap();
    assert_eq!(io, [[1.0, 3.0], [1.0, 9.0]]);
    // MPI_2INTEGER, MPI_2DOUBLE_PRECISION, MPI_LONG_INT, MPI_FLOAT_INT
    let mut io = [[10i32, 1]];
    run_pair(
        Op::Maxloc,
        B::Integer,
        B::Integer,
        4,
        &[[10i32, 0]],
        &mut io,
    )
    .unwrap();
    assert_eq!(io, [[10, 0]]);
    let mut io = [[2.0f64, 5.0]];
    run_pair(
        Op::Maxloc,
        B::DoublePrecision,
        B::DoublePrecision,
        8,
        &[[2.5f64, 6.0]],
        &mut io,
    )
    .unwrap();
    assert_eq!(io, [[2.5, 6.0]]);
    let mut io = [[i64::MIN, 1]];
    run_pair(Op::Maxloc, B::Long, B::Int, 8, &[[-1i64, 2]], &mut io).unwrap();
    assert_eq!(io, [[-1, 2]]);
    // Unsigned values compare as unsigned.
    let mut io = [[0xffff_ffffu32, 1]];
    run_pair(Op::Maxloc, B::Unsigned, B::Int, 4, &[[1u32, 0]], &mut io).unwrap();
    assert_eq!(io, [[0xffff_ffff, 1]]);
    // Half-precision values compare by value, not bits.
    let h = crate::half::f32_to_f16;
    let mut io = [[h(-2.0), 1]];
    run_pair(
        Op::Maxloc,
        B::Float16,
        B::Short,
        2,
        &[[h(1.0), 7u16]],
        &mut io,
    )
    .unwrap();
    assert_eq!(io, [[h(1.0), 7]]);
    // binary128 values.
    let mut io = [[1u128 << 127 | 0x3fff << 112, 4]]; // -1.0
    run_pair(
        Op::Maxloc,
        B::Real16,
        B::Integer16,
        16,
        &[[0u128, 3]],
        &mut io,
    )
    .unwrap();
    assert_eq!(io, [[0, 3]]);
}

#[test]
fn long_double_int_pairs() {
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    let pair = |v: [u8; 16], i: i32| {
        let mut b = [0x11u8; 32];
        b[..16].copy_from_slice(&v);
        b[16..20].copy_from_slice(&i.to_le_bytes());
        b
    };
    let third = ld(0x3ffd, 0xaaaa_aaaa_aaaa_aaab);
    let tenth = ld(0x3ffb, 0xcccc_cccc_cccc_cccd);
    let input = [pair(third, 4), pair(third, 1)];
    let mut inout = [pair(tenth, 2), pair(third, 3)];
    run_pair(Op::Maxloc, B::LongDouble, B::Int, 16, &input, &mut inout).unwrap();
    assert_eq!(inout, [pair(third, 4), pair(third, 1)]);
    let mut inout = [pair(tenth, 2), pair(third, 3)];
    run_pair(Op::Minloc, B::LongDouble, B::Int, 16, &input, &mut inout).unwrap();
    assert_eq!(inout, [pair(tenth, 2), pair(third, 1)]);
}

#[test]
fn pair_errors_and_moves() {
    let mut io = [di(1.0, 1)];
    let input = [di(2.0, 2)];
    assert_eq!(
        run_pair(Op::Sum, B::Double, B::Int, 8, &input, &mut io),
        Err(ReduceError::PairNotAllowed {
            op: Op::Sum,
            value: "MPI_DOUBLE",
            index: "MPI_INT"
        })
    );
    let err = run_pair(
        Op::Maxloc,
        B::CDoubleComplex,
        B::Int,
        16,
        &[[0u8; 24]],
        &mut [[0u8; 24]],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MPI_MAXLOC is not defined on (MPI_C_DOUBLE_COMPLEX, MPI_INT) pairs"
    );
    // Index overlapping the value, or past the stride.
    let bad = unsafe {
        reduce_pair(
            Op::Maxloc,
            B::Double,
            B::Int,
            4,
            16,
            input.as_ptr() as *const u8,
            io.as_mut_ptr() as *mut u8,
            1,
        )
    };
    assert!(matches!(bad, Err(ReduceError::BadPairLayout { .. })));
    let bad = unsafe {
        reduce_pair(
            Op::Maxloc,
            B::Double,
            B::Int,
            8,
            10,
            input.as_ptr() as *const u8,
            io.as_mut_ptr() as *mut u8,
            1,
        )
    };
    assert!(matches!(bad, Err(ReduceError::BadPairLayout { .. })));
    assert!(bad
        .unwrap_err()
        .to_string()
        .starts_with("invalid pair layout"));
    let huge = unsafe {
        reduce_pair(
            Op::Maxloc,
            B::Double,
            B::Int,
            8,
            16,
            input.as_ptr() as *const u8,
            io.as_mut_ptr() as *mut u8,
            usize::MAX,
        )
    };
    assert!(matches!(huge, Err(ReduceError::BufferTooLarge { .. })));
    assert_eq!(io, [di(1.0, 1)], "nothing written on error");
    // REPLACE moves value and index (not padding); NO_OP nothing.
    let input = [DoubleInt {
        value: 9.0,
        index: 9,
        pad: 9,
    }];
    run_pair(Op::NoOp, B::Double, B::Int, 8, &input, &mut io).unwrap();
    assert_eq!(io, [di(1.0, 1)]);
    run_pair(Op::Replace, B::Double, B::Int, 8, &input, &mut io).unwrap();
    assert_eq!(io, [di(9.0, 9)]);
    // count 0 with null pointers.
    let r = unsafe {
        reduce_pair(
            Op::Minloc,
            B::Int,
            B::Int,
            4,
            8,
            core::ptr::null(),
            core::ptr::null_mut(),
            0,
        )
    };
    assert_eq!(r, Ok(()));
    assert_eq!(pair_type_name(B::Double, B::Int), Some("MPI_DOUBLE_INT"));
    assert_eq!(
        pair_type_name(B::LongDouble, B::Int),
        Some("MPI_LONG_DOUBLE_INT")
    );
    assert_eq!(pair_type_name(B::Real, B::Real), Some("MPI_2REAL"));
    assert_eq!(pair_type_name(B::Double, B::Long), None);
}

#[test]
fn pairs_unaligned_and_random_layouts_do_not_panic() {
    let mut next = crate::testutil::rng(7);
    let orderable: Vec<B> = B::ALL
        .iter()
        .copied()
        .filter(|&t| pair_allowed(Op::Minloc, t, B::Int))
        .collect();
    for &value in &orderable {
        for &index in &[B::Int, B::Short, B::Double, B::Integer16, B::Uint8] {
            for op in [Op::Minloc, Op::Maxloc, Op::Replace] {
                let offset = value.size() + (next() % 3) as usize;
                let stride = offset + index.size() + (next() % 5) as usize;
                let count = 1 + (next() % 9) as usize;
                let input = random_bytes(&mut next, stride * count);
                let inout = random_bytes(&mut next, stride * count);
                let mut aligned = Buf::new(&inout, 0);
                let mut src = Buf::new(&input, 0);
                let r = unsafe {
                    reduce_pair(
                        op,
                        value,
                        index,
                        offset,
                        stride,
                        src.ptr(),
                        aligned.ptr(),
                        count,
                    )
                };
                if !cfg!(target_arch = "x86_64")
                    && (value == B::LongDouble || index == B::LongDouble)
                {
                    assert!(matches!(r, Err(ReduceError::Unsupported { .. })));
                    continue;
                }
                r.unwrap();
                let mut unaligned = Buf::new(&inout, 3);
                let mut src = Buf::new(&input, 1);
                unsafe {
                    reduce_pair(
                        op,
                        value,
                        index,
                        offset,
                        stride,
                        src.ptr(),
                        unaligned.ptr(),
                        count,
                    )
                }
                .unwrap();
                assert_eq!(
                    aligned.bytes(),
                    unaligned.bytes(),
                    "{op} ({}, {})",
                    value.name(),
                    index.name()
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Throughput

/// `cargo test --release -p gridmpi-reduce -- --ignored --nocapture throughput`
#[test]
#[ignore = "benchmark: run with --release --ignored --nocapture"]
fn throughput() {
    fn measure(name: &str, ty: B, input: *const u8, inout: *mut u8, count: usize) {
        let bytes = count * ty.size();
        let op = if name.starts_with("MPI_PROD") {
            Op::Prod
        } else {
            Op::Sum
        };
        for _ in 0..50 {
            unsafe { reduce(op, ty, input, inout, count) }.unwrap();
        }
        let mut iterations = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed().as_secs_f64() < 1.0 {
            for _ in 0..100 {
                unsafe { reduce(op, ty, input, inout, count) }.unwrap();
            }
            iterations += 100;
        }
        let seconds = start.elapsed().as_secs_f64();
        let per_call = seconds / iterations as f64;
        println!(
            "{name:<32} {:>7.2} GB/s of inout ({:>6.2} GB/s memory traffic: 2 reads + 1 write), {:.1} us per 1 MiB call",
            bytes as f64 / per_call / 1e9,
            3.0 * bytes as f64 / per_call / 1e9,
            per_call * 1e6
        );
    }
    /// 1 MiB buffers of one repeated element, at the given misalignments.
    fn measure_pattern(name: &str, ty: B, element: &[u8], in_off: usize, io_off: usize) {
        let bytes: Vec<u8> = element.iter().copied().cycle().take(MIB).collect();
        let mut src = Buf::new(&bytes, in_off);
        let mut dst = Buf::new(&bytes, io_off);
        measure(name, ty, src.ptr(), dst.ptr(), MIB / ty.size());
    }
    const MIB: usize = 1 << 20;
    let input: Vec<f64> = (0..MIB / 8).map(|i| i as f64 * 0.5).collect();
    let mut inout: Vec<f64> = vec![1.0; MIB / 8];
    measure(
        "MPI_SUM MPI_DOUBLE aligned",
        B::Double,
        input.as_ptr() as *const u8,
        inout.as_mut_ptr() as *mut u8,
        MIB / 8,
    );
    let input_i: Vec<i32> = (0..MIB as i32 / 4).collect();
    let mut inout_i: Vec<i32> = vec![1; MIB / 4];
    measure(
        "MPI_SUM MPI_INT aligned",
        B::Int,
        input_i.as_ptr() as *const u8,
        inout_i.as_mut_ptr() as *mut u8,
        MIB / 4,
    );
    measure_pattern(
        "MPI_SUM MPI_DOUBLE unaligned",
        B::Double,
        &1.0f64.to_le_bytes(),
        1,
        3,
    );
    measure_pattern(
        "MPI_SUM MPIX_C_FLOAT16",
        B::Float16,
        &0x3c00u16.to_le_bytes(),
        0,
        0,
    );
    measure_pattern(
        "MPI_SUM MPIX_BFLOAT16",
        B::BFloat16,
        &0x3f80u16.to_le_bytes(),
        0,
        0,
    );
    measure_pattern(
        "MPI_SUM MPI_REAL16 (soft)",
        B::Real16,
        &(0x3fffu128 << 112).to_le_bytes(),
        0,
        0,
    );
    measure_pattern(
        "MPI_PROD MPI_C_DOUBLE_COMPLEX",
        B::CDoubleComplex,
        &[1.0f64.to_le_bytes(), 0.5f64.to_le_bytes()].concat(),
        0,
        0,
    );
    #[cfg(target_arch = "x86_64")]
    measure_pattern(
        "MPI_SUM MPI_LONG_DOUBLE (x87)",
        B::LongDouble,
        &ld(0x3fff, 1 << 63),
        0,
        0,
    );
}

/// The F16C path (used by `reduce` on CPUs that have it) and the portable
/// path give identical bits for every operation, on random values of every
/// class (normal, subnormal, zero, infinity, NaN).
#[test]
fn f16_hardware_and_portable_paths_agree() {
    let mut next = crate::testutil::rng(0x16c);
    let specials = [
        0x0000u16, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x7c01,
        0xfe55, 0x6800,
    ];
    let mut values: Vec<u16> = Vec::new();
    for &a in &specials {
        for &b in &specials {
            values.extend([a, b]);
        }
    }
    values.extend((0..400_000).map(|_| next() as u16));
    let (input, inout): (Vec<u16>, Vec<u16>) = values.chunks(2).map(|p| (p[0], p[1])).unzip();
    for op in [Op::Sum, Op::Prod, Op::Max, Op::Min] {
        let mut via_reduce = inout.clone();
        run(op, B::Float16, &input, &mut via_reduce).unwrap();
        let mut portable = inout.clone();
        let ok = unsafe {
            crate::kernel::reduce_f16_portable(
                op,
                input.as_ptr() as *const u8,
                portable.as_mut_ptr() as *mut u8,
                input.len(),
            )
        };
        assert!(ok);
        for i in 0..input.len() {
            assert_eq!(
                via_reduce[i], portable[i],
                "{op}: input {:#06x} inout {:#06x}",
                input[i], inout[i]
            );
        }
    }
    #[cfg(target_arch = "x86_64")]
    if !crate::f16c::available() {
        eprintln!("note: this CPU has no F16C; only the portable path was exercised");
    }
}

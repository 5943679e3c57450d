//! The predefined (named) MPI element types.
//!
//! A `BasicType` is what a reduction kernel operates on and what
//! `MPI_Get_elements` counts. The C ABI shell maps MPICH handle values to
//! these; nothing here knows about handles.

/// How the bytes of an element are to be interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeClass {
    /// Two's-complement signed integer (C and Fortran integers).
    SignedInt,
    /// Unsigned integer.
    UnsignedInt,
    /// IEEE-754 binary floating point (f16, bf16, f32, f64) or x87 80-bit
    /// extended (`long double`), or binary128 (`REAL*16`).
    Float,
    /// A pair of floats (real, imaginary).
    Complex,
    /// C `_Bool` / C++ `bool`: one byte, 0 or 1.
    Bool,
    /// Fortran LOGICAL of some width: zero is false, anything else true.
    Logical,
    /// Raw bytes: MPI_BYTE and MPI_PACKED. Only moved, never interpreted.
    Byte,
    /// Characters (MPI_CHAR, MPI_WCHAR, MPI_CHARACTER). MPI allows no
    /// arithmetic on them, only MPI_REPLACE-like movement.
    Char,
    /// The deprecated MPI_LB / MPI_UB markers: size 0.
    Marker,
}

/// Floating point formats, for the kernels that must know the exact layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatFormat {
    Half,
    BFloat16,
    Single,
    Double,
    /// x87 80-bit extended precision stored in 16 bytes (x86_64 `long double`).
    X87Extended,
    /// IEEE binary128 (gfortran REAL*16).
    Quad,
}

macro_rules! basic_types {
    ($( $variant:ident = ($name:expr, $size:expr, $align:expr, $class:ident) ),* $(,)?) => {
        /// Every predefined element type of MPI (C, C++ and Fortran).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum BasicType { $( $variant, )* }

        impl BasicType {
            /// All basic types, in declaration order.
            pub const ALL: &'static [BasicType] = &[ $( BasicType::$variant, )* ];

            /// The MPI name, e.g. `"MPI_INT"`.
            pub const fn name(self) -> &'static str {
                match self { $( BasicType::$variant => $name, )* }
            }
            /// Size in bytes of one element.
            pub const fn size(self) -> usize {
                match self { $( BasicType::$variant => $size, )* }
            }
            /// Natural alignment in bytes (used for the epsilon of MPI_Type_create_struct extents).
            pub const fn align(self) -> usize {
                match self { $( BasicType::$variant => $align, )* }
            }
            pub const fn class(self) -> TypeClass {
                match self { $( BasicType::$variant => TypeClass::$class, )* }
            }
        }
    };
}

basic_types! {
    // C
    Char = ("MPI_CHAR", 1, 1, Char),
    SignedChar = ("MPI_SIGNED_CHAR", 1, 1, SignedInt),
    UnsignedChar = ("MPI_UNSIGNED_CHAR", 1, 1, UnsignedInt),
    Byte = ("MPI_BYTE", 1, 1, Byte),
    WChar = ("MPI_WCHAR", 4, 4, Char),
    Short = ("MPI_SHORT", 2, 2, SignedInt),
    UnsignedShort = ("MPI_UNSIGNED_SHORT", 2, 2, UnsignedInt),
    Int = ("MPI_INT", 4, 4, SignedInt),
    Unsigned = ("MPI_UNSIGNED", 4, 4, UnsignedInt),
    Long = ("MPI_LONG", 8, 8, SignedInt),
    UnsignedLong = ("MPI_UNSIGNED_LONG", 8, 8, UnsignedInt),
    LongLong = ("MPI_LONG_LONG", 8, 8, SignedInt),
    UnsignedLongLong = ("MPI_UNSIGNED_LONG_LONG", 8, 8, UnsignedInt),
    Int8 = ("MPI_INT8_T", 1, 1, SignedInt),
    Int16 = ("MPI_INT16_T", 2, 2, SignedInt),
    Int32 = ("MPI_INT32_T", 4, 4, SignedInt),
    Int64 = ("MPI_INT64_T", 8, 8, SignedInt),
    Uint8 = ("MPI_UINT8_T", 1, 1, UnsignedInt),
    Uint16 = ("MPI_UINT16_T", 2, 2, UnsignedInt),
    Uint32 = ("MPI_UINT32_T", 4, 4, UnsignedInt),
    Uint64 = ("MPI_UINT64_T", 8, 8, UnsignedInt),
    Aint = ("MPI_AINT", 8, 8, SignedInt),
    Offset = ("MPI_OFFSET", 8, 8, SignedInt),
    Count = ("MPI_COUNT", 8, 8, SignedInt),
    CBool = ("MPI_C_BOOL", 1, 1, Bool),
    Float16 = ("MPIX_C_FLOAT16", 2, 2, Float),
    BFloat16 = ("MPIX_BFLOAT16", 2, 2, Float),
    Float = ("MPI_FLOAT", 4, 4, Float),
    Double = ("MPI_DOUBLE", 8, 8, Float),
    LongDouble = ("MPI_LONG_DOUBLE", 16, 16, Float),
    CFloatComplex = ("MPI_C_FLOAT_COMPLEX", 8, 4, Complex),
    CDoubleComplex = ("MPI_C_DOUBLE_COMPLEX", 16, 8, Complex),
    CLongDoubleComplex = ("MPI_C_LONG_DOUBLE_COMPLEX", 32, 16, Complex),
    Packed = ("MPI_PACKED", 1, 1, Byte),
    // C++
    CxxBool = ("MPI_CXX_BOOL", 1, 1, Bool),
    CxxFloatComplex = ("MPI_CXX_FLOAT_COMPLEX", 8, 4, Complex),
    CxxDoubleComplex = ("MPI_CXX_DOUBLE_COMPLEX", 16, 8, Complex),
    CxxLongDoubleComplex = ("MPI_CXX_LONG_DOUBLE_COMPLEX", 32, 16, Complex),
    // Fortran
    Character = ("MPI_CHARACTER", 1, 1, Char),
    Integer = ("MPI_INTEGER", 4, 4, SignedInt),
    Real = ("MPI_REAL", 4, 4, Float),
    Logical = ("MPI_LOGICAL", 4, 4, Logical),
    Complex = ("MPI_COMPLEX", 8, 4, Complex),
    DoublePrecision = ("MPI_DOUBLE_PRECISION", 8, 8, Float),
    DoubleComplex = ("MPI_DOUBLE_COMPLEX", 16, 8, Complex),
    Integer1 = ("MPI_INTEGER1", 1, 1, SignedInt),
    Integer2 = ("MPI_INTEGER2", 2, 2, SignedInt),
    Integer4 = ("MPI_INTEGER4", 4, 4, SignedInt),
    Integer8 = ("MPI_INTEGER8", 8, 8, SignedInt),
    Integer16 = ("MPI_INTEGER16", 16, 16, SignedInt),
    Real2 = ("MPI_REAL2", 2, 2, Float),
    Real4 = ("MPI_REAL4", 4, 4, Float),
    Real8 = ("MPI_REAL8", 8, 8, Float),
    Real16 = ("MPI_REAL16", 16, 16, Float),
    Complex4 = ("MPI_COMPLEX4", 4, 2, Complex),
    Complex8 = ("MPI_COMPLEX8", 8, 4, Complex),
    Complex16 = ("MPI_COMPLEX16", 16, 8, Complex),
    Complex32 = ("MPI_COMPLEX32", 32, 16, Complex),
    Logical1 = ("MPI_LOGICAL1", 1, 1, Logical),
    Logical2 = ("MPI_LOGICAL2", 2, 2, Logical),
    Logical4 = ("MPI_LOGICAL4", 4, 4, Logical),
    Logical8 = ("MPI_LOGICAL8", 8, 8, Logical),
    Logical16 = ("MPI_LOGICAL16", 16, 16, Logical),
    // Deprecated bound markers (MPI-1); zero size.
    Lb = ("MPI_LB", 0, 1, Marker),
    Ub = ("MPI_UB", 0, 1, Marker),
}

impl BasicType {
    /// The float format of a `Float` or `Complex` type (for complex: of each part).
    pub const fn float_format(self) -> Option<FloatFormat> {
        use BasicType::*;
        Some(match self {
            Float16 | Real2 | Complex4 => FloatFormat::Half,
            BFloat16 => FloatFormat::BFloat16,
            Float | Real | Real4 | CFloatComplex | CxxFloatComplex | Complex | Complex8 => {
                FloatFormat::Single
            }
            Double | DoublePrecision | Real8 | CDoubleComplex | CxxDoubleComplex
            | DoubleComplex | Complex16 => FloatFormat::Double,
            LongDouble | CLongDoubleComplex | CxxLongDoubleComplex => FloatFormat::X87Extended,
            Real16 | Complex32 => FloatFormat::Quad,
            _ => return None,
        })
    }

    /// Size of one element in the external32 representation (MPI 4.1
    /// §14.5.2, "External Data Representation"): big-endian, with
    /// `MPI_LONG`/`MPI_UNSIGNED_LONG` 4 bytes, `MPI_WCHAR` 2 bytes and
    /// `long double` a 16-byte IEEE binary128; markers are 0. The same
    /// sizes as MPICH's `MPI_Pack_external_size`.
    pub const fn external32_size(self) -> usize {
        use BasicType::*;
        match self {
            Long | UnsignedLong => 4,
            WChar => 2,
            _ => self.size(),
        }
    }

    /// MPI_Type_get_envelope of a predefined type says MPI_COMBINER_NAMED;
    /// this is the Fortran-ness used by MPI_Type_match_size and friends.
    pub const fn is_fortran(self) -> bool {
        use BasicType::*;
        matches!(
            self,
            Character | Integer | Real | Logical | Complex | DoublePrecision | DoubleComplex
                | Integer1 | Integer2 | Integer4 | Integer8 | Integer16 | Real2 | Real4 | Real8
                | Real16 | Complex4 | Complex8 | Complex16 | Complex32 | Logical1 | Logical2
                | Logical4 | Logical8 | Logical16
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_c_types_on_this_target() {
        assert_eq!(BasicType::Long.size(), std::mem::size_of::<std::ffi::c_long>());
        assert_eq!(BasicType::Int.size(), std::mem::size_of::<std::ffi::c_int>());
        assert_eq!(BasicType::Short.size(), std::mem::size_of::<std::ffi::c_short>());
        for t in BasicType::ALL {
            if t.class() == TypeClass::Complex {
                assert_eq!(t.size() % 2, 0, "{}", t.name());
            }
        }
    }
}

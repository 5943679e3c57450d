//! The [`Datatype`] object: what a constructor was called with, the type's
//! size and bounds, and its dataloop.
//!
//! # Bounds
//!
//! A type map is a list of (basic type, displacement) entries plus, in the
//! MPI standard's model, lower- and upper-bound *markers* (MPI 4.1 §5.1.7):
//! the deprecated `MPI_LB`/`MPI_UB` entries of `MPI_Type_struct`, and the
//! pair that `MPI_Type_create_resized` (and so subarray and darray, which
//! the standard defines through it) puts in place of any earlier markers.
//! Markers are *sticky*: if a type map holds any lower-bound marker, its
//! lower bound is the lowest such marker, whatever data lies below it; same
//! for the upper bound. Otherwise the bound comes from the data, and a
//! struct rounds its extent up to the largest alignment of its elements
//! (the "epsilon"). So each type keeps, besides its final `lb`/`ub`:
//! - `lb_mark`/`ub_mark`: the sticky markers, if any;
//! - `soft`: the bounds the data alone gives (including the padding of
//!   nested structs, as every implementation does);
//! - `data`: the true bounds (first and last byte of actual data).
//!
//! A derived type's bounds are the union of the bounds of its copies of the
//! old type(s). Blocks of zero elements, and old types with an empty type
//! map (no data, no marker), contribute nothing; an empty type map has
//! `lb = ub = 0`, true bounds `0, 0`.
//!
//! ## Where MPICH differs
//!
//! MPICH (4.x and 5.x) agrees with the above on every type without markers
//! and on markers at the top level of one struct, but: it does not carry
//! markers through nesting (a resized type inside a struct is not sticky);
//! it lets the *last* of several `MPI_LB` entries win instead of the lowest;
//! it counts `MPI_LB` entries with block length 0; it skips the epsilon for
//! a struct whose members all have the same type; it gives some types made
//! of zero-size or zero-length blocks non-zero bounds. We follow the
//! standard in those corners; the unit tests record both values.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::basic::{BasicType, TypeClass};
use crate::error::{fit, TypeError};
use crate::layout::{Node, SeqBuilder};
use crate::signature::{self, Sig};

/// Memory order of the array dimensions for subarray and darray.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Row major: the last dimension varies fastest (`MPI_ORDER_C`).
    C,
    /// Column major: the first dimension varies fastest (`MPI_ORDER_FORTRAN`).
    Fortran,
}

impl Order {
    /// The MPICH value of `MPI_ORDER_C` / `MPI_ORDER_FORTRAN`.
    pub const fn to_mpi(self) -> i32 {
        match self {
            Order::C => 56,
            Order::Fortran => 57,
        }
    }
    pub const fn from_mpi(value: i32) -> Option<Order> {
        match value {
            56 => Some(Order::C),
            57 => Some(Order::Fortran),
            _ => None,
        }
    }
}

/// How one dimension of a darray is distributed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Distrib {
    /// `MPI_DISTRIBUTE_BLOCK`
    Block,
    /// `MPI_DISTRIBUTE_CYCLIC`
    Cyclic,
    /// `MPI_DISTRIBUTE_NONE`
    None,
}

impl Distrib {
    /// The MPICH value of the `MPI_DISTRIBUTE_*` constant.
    pub const fn to_mpi(self) -> i32 {
        match self {
            Distrib::Block => 121,
            Distrib::Cyclic => 122,
            Distrib::None => 123,
        }
    }
    pub const fn from_mpi(value: i32) -> Option<Distrib> {
        match value {
            121 => Some(Distrib::Block),
            122 => Some(Distrib::Cyclic),
            123 => Some(Distrib::None),
            _ => None,
        }
    }
}

/// `MPI_DISTRIBUTE_DFLT_DARG`: use the default distribution argument.
pub const DISTRIBUTE_DFLT_DARG: i64 = -49767;

/// `MPI_UNDEFINED` (MPICH value), as passed for `p` or `r` to
/// `MPI_Type_create_f90_real`/`_complex`.
pub const UNDEFINED: i32 = -32766;

/// The combiners of `MPI_Type_get_envelope`, with MPICH's numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Combiner {
    Named = 1,
    Dup = 2,
    Contiguous = 3,
    Vector = 4,
    HvectorInteger = 5,
    Hvector = 6,
    Indexed = 7,
    HindexedInteger = 8,
    Hindexed = 9,
    IndexedBlock = 10,
    StructInteger = 11,
    Struct = 12,
    Subarray = 13,
    Darray = 14,
    F90Real = 15,
    F90Complex = 16,
    F90Integer = 17,
    Resized = 18,
    HindexedBlock = 19,
    ValueIndex = 20,
}

impl Combiner {
    /// The `MPI_COMBINER_*` value.
    pub const fn to_mpi(self) -> i32 {
        self as i32
    }
    /// The `MPI_COMBINER_*` name.
    pub const fn name(self) -> &'static str {
        match self {
            Combiner::Named => "MPI_COMBINER_NAMED",
            Combiner::Dup => "MPI_COMBINER_DUP",
            Combiner::Contiguous => "MPI_COMBINER_CONTIGUOUS",
            Combiner::Vector => "MPI_COMBINER_VECTOR",
            Combiner::HvectorInteger => "MPI_COMBINER_HVECTOR_INTEGER",
            Combiner::Hvector => "MPI_COMBINER_HVECTOR",
            Combiner::Indexed => "MPI_COMBINER_INDEXED",
            Combiner::HindexedInteger => "MPI_COMBINER_HINDEXED_INTEGER",
            Combiner::Hindexed => "MPI_COMBINER_HINDEXED",
            Combiner::IndexedBlock => "MPI_COMBINER_INDEXED_BLOCK",
            Combiner::StructInteger => "MPI_COMBINER_STRUCT_INTEGER",
            Combiner::Struct => "MPI_COMBINER_STRUCT",
            Combiner::Subarray => "MPI_COMBINER_SUBARRAY",
            Combiner::Darray => "MPI_COMBINER_DARRAY",
            Combiner::F90Real => "MPI_COMBINER_F90_REAL",
            Combiner::F90Complex => "MPI_COMBINER_F90_COMPLEX",
            Combiner::F90Integer => "MPI_COMBINER_F90_INTEGER",
            Combiner::Resized => "MPI_COMBINER_RESIZED",
            Combiner::HindexedBlock => "MPI_COMBINER_HINDEXED_BLOCK",
            Combiner::ValueIndex => "MPI_COMBINER_VALUE_INDEX",
        }
    }
}

/// What a datatype was built from: exactly the constructor's arguments
/// (for `MPI_Type_get_contents`) and the children it holds.
#[derive(Clone, Debug)]
pub(crate) enum Ctor {
    Named(BasicType),
    /// A (value, index) pair with C struct layout.
    Pair { value: BasicType, index: BasicType },
    /// `MPI_Type_create_f90_*`: `basic` is the matching predefined type.
    F90 { combiner: Combiner, p: i32, r: i32, basic: BasicType },
    Dup(Arc<Datatype>),
    Contiguous { count: i64, old: Arc<Datatype> },
    Vector { count: i64, blocklength: i64, stride: i64, old: Arc<Datatype> },
    Hvector { count: i64, blocklength: i64, stride: i64, old: Arc<Datatype>, legacy: bool },
    Indexed { blocklengths: Box<[i64]>, displs: Box<[i64]>, old: Arc<Datatype> },
    Hindexed { blocklengths: Box<[i64]>, displs: Box<[i64]>, old: Arc<Datatype>, legacy: bool },
    IndexedBlock { blocklength: i64, displs: Box<[i64]>, old: Arc<Datatype> },
    HindexedBlock { blocklength: i64, displs: Box<[i64]>, old: Arc<Datatype> },
    Struct {
        blocklengths: Box<[i64]>,
        displs: Box<[i64]>,
        types: Box<[Arc<Datatype>]>,
        legacy: bool,
    },
    Subarray {
        sizes: Box<[i64]>,
        subsizes: Box<[i64]>,
        starts: Box<[i64]>,
        order: Order,
        old: Arc<Datatype>,
    },
    Darray {
        size: i64,
        rank: i64,
        gsizes: Box<[i64]>,
        distribs: Box<[Distrib]>,
        dargs: Box<[i64]>,
        psizes: Box<[i64]>,
        order: Order,
        old: Arc<Datatype>,
    },
    Resized { lb: i64, extent: i64, old: Arc<Datatype> },
}

/// Bounds of a type map; see the module docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub lb_mark: Option<i64>,
    pub ub_mark: Option<i64>,
    /// (lower, upper) from the data alone, with nested struct padding.
    pub soft: Option<(i64, i64)>,
    /// True (lower, upper): first and one past the last byte of data.
    pub data: Option<(i64, i64)>,
}

impl Bounds {
    pub fn lb(&self) -> i64 {
        self.lb_mark.or(self.soft.map(|s| s.0)).unwrap_or(0)
    }
    pub fn ub(&self) -> i64 {
        self.ub_mark.or(self.soft.map(|s| s.1)).unwrap_or(0)
    }
    /// No entries at all: neither data nor markers.
    pub fn is_empty(&self) -> bool {
        self.lb_mark.is_none() && self.ub_mark.is_none() && self.soft.is_none() && self.data.is_none()
    }

    /// Bounds of `n >= 1` copies at `disp + k * stride`, `k` in `0..n`.
    pub fn copies(&self, disp: i64, n: u64, stride: i64) -> Result<Bounds, TypeError> {
        let span = (n as i128 - 1) * stride as i128;
        let lo = disp as i128 + span.min(0);
        let hi = disp as i128 + span.max(0);
        self.shifted(lo, hi)
    }

    /// Shifts lower bounds by `lo` and upper bounds by `hi`.
    pub fn shifted(&self, lo: i128, hi: i128) -> Result<Bounds, TypeError> {
        const WHAT: &str = "a bound of the new datatype";
        let pair = |p: Option<(i64, i64)>| -> Result<Option<(i64, i64)>, TypeError> {
            p.map(|(a, b)| Ok((fit(a as i128 + lo, WHAT)?, fit(b as i128 + hi, WHAT)?))).transpose()
        };
        Ok(Bounds {
            lb_mark: self.lb_mark.map(|m| fit(m as i128 + lo, WHAT)).transpose()?,
            ub_mark: self.ub_mark.map(|m| fit(m as i128 + hi, WHAT)).transpose()?,
            soft: pair(self.soft)?,
            data: pair(self.data)?,
        })
    }

    /// The union of two type maps' bounds.
    pub fn union(&mut self, other: &Bounds) {
        fn join(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> Option<(i64, i64)> {
            match (a, b) {
                (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
                (a, None) => a,
                (None, b) => b,
            }
        }
        self.lb_mark = match (self.lb_mark, other.lb_mark) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.ub_mark = match (self.ub_mark, other.ub_mark) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.soft = join(self.soft, other.soft);
        self.data = join(self.data, other.data);
    }
}

/// Whether every element of a type is the same thing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Uniform<T> {
    /// No elements at all.
    Empty,
    One(T),
    Mixed,
}

impl<T: PartialEq + Copy> Uniform<T> {
    pub fn join(self, other: Uniform<T>) -> Uniform<T> {
        match (self, other) {
            (Uniform::Empty, x) | (x, Uniform::Empty) => x,
            (Uniform::One(a), Uniform::One(b)) if a == b => Uniform::One(a),
            _ => Uniform::Mixed,
        }
    }
    pub fn get(self) -> Option<T> {
        match self {
            Uniform::One(t) => Some(t),
            _ => None,
        }
    }
}

/// Value type, index type, byte offset of the index.
pub type PairLayout = (BasicType, BasicType, usize);

/// An MPI datatype: immutable once built, shared as `Arc<Datatype>`.
///
/// Build one with [`Datatype::basic`], [`Datatype::value_index`] or a
/// derived-type constructor (`contiguous`, `vector`, ... in
/// `construct.rs`); move data with [`crate::pack()`], [`crate::unpack()`],
/// [`crate::copy()`] or a [`crate::Cursor`]. Cloning is cheap for derived
/// types (children and dataloop are shared) but copies argument arrays.
#[derive(Clone)]
pub struct Datatype {
    pub(crate) ctor: Ctor,
    /// Built by a large-count (`_c`) constructor, or with an argument that
    /// does not fit a C `int`: its contents use `large_counts`.
    pub(crate) large: bool,
    pub(crate) size: u64,
    pub(crate) bounds: Bounds,
    pub(crate) lb: i64,
    pub(crate) ub: i64,
    pub(crate) extent: i64,
    pub(crate) true_lb: i64,
    pub(crate) true_ub: i64,
    /// Largest alignment of any element (1 if none): the struct epsilon.
    pub(crate) align: u64,
    /// Basic elements in one item (markers do not count).
    pub(crate) elements: u64,
    pub(crate) uniform: Uniform<BasicType>,
    pub(crate) uniform_pair: Uniform<PairLayout>,
    pub(crate) sig: Sig,
    pub(crate) node: Option<Arc<Node>>,
    pub(crate) contiguous: bool,
    /// External32 bytes of one item, computed on first use.
    pub(crate) ext32: OnceLock<u64>,
}

/// Everything a constructor computes, before the derived fields are filled in.
pub(crate) struct Parts {
    pub ctor: Ctor,
    pub large: bool,
    pub size: u64,
    pub bounds: Bounds,
    pub align: u64,
    pub elements: u64,
    pub uniform: Uniform<BasicType>,
    pub uniform_pair: Uniform<PairLayout>,
    pub sig: Sig,
    pub node: Option<Arc<Node>>,
}

impl Datatype {
    /// Fills in the derived fields and checks that they fit.
    pub(crate) fn assemble(p: Parts) -> Result<Datatype, TypeError> {
        if p.size > i64::MAX as u64 {
            return Err(crate::error::overflow("size of the new datatype"));
        }
        let lb = p.bounds.lb();
        let ub = p.bounds.ub();
        let extent = fit(ub as i128 - lb as i128, "extent of the new datatype")?;
        let (true_lb, true_ub) = p.bounds.data.unwrap_or((0, 0));
        fit(true_ub as i128 - true_lb as i128, "true extent of the new datatype")?;
        debug_assert_eq!(p.node.as_ref().map_or(0, |n| n.size()), p.size);
        let contiguous = match &p.node {
            None => extent == 0,
            Some(node) => {
                p.size == extent as u64 && node.single_run().is_some_and(|(_, len)| len == p.size)
            }
        };
        Ok(Datatype {
            ctor: p.ctor,
            large: p.large,
            size: p.size,
            bounds: p.bounds,
            lb,
            ub,
            extent,
            true_lb,
            true_ub,
            align: p.align,
            elements: p.elements,
            uniform: p.uniform,
            uniform_pair: p.uniform_pair,
            sig: p.sig,
            node: p.node,
            contiguous,
            ext32: OnceLock::new(),
        })
    }

    /// The predefined type `t` (`MPI_INT`, ..., and the `MPI_LB`/`MPI_UB`
    /// markers, whose type map is a single marker at 0).
    pub fn basic(t: BasicType) -> Datatype {
        Self::basic_with(Ctor::Named(t), t)
    }

    /// [`Datatype::basic`], made once per type and shared: for what needs
    /// one per call (a reduction's element type), where building it costs
    /// more than the call's communication on one host.
    pub fn basic_shared(t: BasicType) -> std::sync::Arc<Datatype> {
        use std::sync::{Arc, OnceLock};
        static MADE: OnceLock<Vec<Arc<Datatype>>> = OnceLock::new();
        let made = MADE.get_or_init(|| BasicType::ALL.iter().map(|&b| Arc::new(Datatype::basic(b))).collect());
        made[t as usize].clone()
    }

    fn basic_with(ctor: Ctor, t: BasicType) -> Datatype {
        let size = t.size() as u64;
        let (bounds, elements, uniform, node, sig) = match t {
            BasicType::Lb => {
                let b = Bounds { lb_mark: Some(0), ..Bounds::default() };
                (b, 0, Uniform::Empty, None, Sig::EMPTY)
            }
            BasicType::Ub => {
                let b = Bounds { ub_mark: Some(0), ..Bounds::default() };
                (b, 0, Uniform::Empty, None, Sig::EMPTY)
            }
            _ => {
                let s = size as i64;
                let b = Bounds { soft: Some((0, s)), data: Some((0, s)), ..Bounds::default() };
                (b, 1, Uniform::One(t), Some(Arc::new(Node::Run(size))), signature::element(t))
            }
        };
        let uniform_pair = if elements == 0 { Uniform::Empty } else { Uniform::Mixed };
        Datatype::assemble(Parts {
            ctor,
            large: false,
            size,
            bounds,
            align: t.align() as u64,
            elements,
            uniform,
            uniform_pair,
            sig,
            node,
        })
        .expect("a predefined type always fits")
    }

    /// The (value, index) pair type for MINLOC/MAXLOC, laid out as the C
    /// struct `{ value; index; }` (`MPI_Type_get_value_index`).
    ///
    /// The nine predefined pairs (`MPI_FLOAT_INT`, `MPI_DOUBLE_INT`,
    /// `MPI_LONG_INT`, `MPI_SHORT_INT`, `MPI_2INT`, `MPI_LONG_DOUBLE_INT`,
    /// `MPI_2INTEGER`, `MPI_2REAL`, `MPI_2DOUBLE_PRECISION`; see
    /// [`Datatype::is_predefined_pair`]) report `MPI_COMBINER_NAMED`; any
    /// other combination reports `MPI_COMBINER_VALUE_INDEX` with the two
    /// types as its contents. (MPICH's `MPI_Type_get_value_index` returns
    /// `MPI_DATATYPE_NULL` for those; the shell may do the same.)
    ///
    /// Named `value_index` rather than `pair` because [`Datatype::pair`]
    /// is the accessor.
    pub fn value_index(value: BasicType, index: BasicType) -> Datatype {
        let (vs, is) = (value.size() as u64, index.size() as u64);
        let align = (value.align().max(index.align()).max(1)) as u64;
        let offset = round_up(vs, index.align().max(1) as u64);
        let extent = round_up(offset + is, align);
        let mut b = SeqBuilder::new();
        let runs = [(0, vs), (offset, is)];
        for (disp, len) in runs {
            if len > 0 {
                let run = Arc::new(Node::Run(len));
                b.push(disp as i64, 1, Some(&run), len as i64).expect("small offsets");
            }
        }
        let node = b.finish().expect("small offsets");
        let elements = [value, index].iter().filter(|t| t.size() > 0).count() as u64;
        let uniform = Uniform::One(value).join(Uniform::One(index));
        let data_end = (offset + is) as i64;
        let bounds = Bounds {
            soft: Some((0, extent as i64)),
            data: Some((0, data_end)),
            ..Bounds::default()
        };
        let sig = signature::element(value).concat(signature::element(index));
        Datatype::assemble(Parts {
            ctor: Ctor::Pair { value, index },
            large: false,
            size: vs + is,
            bounds,
            align,
            elements,
            uniform,
            uniform_pair: Uniform::One((value, index, offset as usize)),
            sig,
            node,
        })
        .expect("a pair type always fits")
    }

    /// Whether (value, index) is one of MPI's nine predefined pair types.
    pub fn is_predefined_pair(value: BasicType, index: BasicType) -> bool {
        use BasicType::*;
        matches!(
            (value, index),
            (Float, Int)
                | (Double, Int)
                | (Long, Int)
                | (Short, Int)
                | (Int, Int)
                | (LongDouble, Int)
                | (Integer, Integer)
                | (Real, Real)
                | (DoublePrecision, DoublePrecision)
        )
    }

    /// A type returned by `MPI_Type_create_f90_{real,complex,integer}`:
    /// the predefined `basic`, reporting the F90 combiner with `(p, r)`.
    pub(crate) fn f90(combiner: Combiner, p: i32, r: i32, basic: BasicType) -> Datatype {
        Self::basic_with(Ctor::F90 { combiner, p, r, basic }, basic)
    }

    /// Marks the type as built by a large-count (`MPI_Type_*_c`)
    /// constructor: its envelope then reports the count arguments as
    /// `large_counts` (types built with an argument that does not fit a C
    /// `int` are marked automatically).
    pub fn with_large_counts(mut self) -> Datatype {
        if !matches!(self.ctor, Ctor::Named(_) | Ctor::Pair { .. } | Ctor::F90 { .. } | Ctor::Dup(_)) {
            self.large = true;
        }
        self
    }

    /// Packed bytes of one item (`MPI_Type_size`).
    pub fn size(&self) -> u64 {
        self.size
    }
    /// Lower bound (`MPI_Type_get_extent`).
    pub fn lb(&self) -> i64 {
        self.lb
    }
    /// Upper bound: `lb + extent`.
    pub fn ub(&self) -> i64 {
        self.ub
    }
    /// Distance between consecutive items (may be zero or negative).
    pub fn extent(&self) -> i64 {
        self.extent
    }
    /// Offset of the first byte of data (`MPI_Type_get_true_extent`); 0 if
    /// the type has no data.
    pub fn true_lb(&self) -> i64 {
        self.true_lb
    }
    /// Span from the first to one past the last byte of data.
    pub fn true_extent(&self) -> i64 {
        self.true_ub - self.true_lb
    }
    /// One past the last byte of data.
    pub fn true_ub(&self) -> i64 {
        self.true_ub
    }

    /// `count` consecutive items are one dense run of bytes: the packed
    /// stream of `count` items is exactly the memory
    /// `base + true_lb() .. base + true_lb() + count * size()`.
    /// (`size() == extent()` and a single run with no gaps. A type with no
    /// data is contiguous when its extent is 0.)
    pub fn is_contiguous(&self) -> bool {
        self.contiguous
    }

    /// If one item's data is a single run of bytes: (offset, length).
    pub fn single_run(&self) -> Option<(i64, u64)> {
        self.node.as_ref().and_then(|n| n.single_run())
    }

    /// The combiner (`MPI_Type_get_envelope`).
    pub fn combiner(&self) -> Combiner {
        match &self.ctor {
            Ctor::Named(_) => Combiner::Named,
            Ctor::Pair { value, index } => {
                if Self::is_predefined_pair(*value, *index) {
                    Combiner::Named
                } else {
                    Combiner::ValueIndex
                }
            }
            Ctor::F90 { combiner, .. } => *combiner,
            Ctor::Dup(_) => Combiner::Dup,
            Ctor::Contiguous { .. } => Combiner::Contiguous,
            Ctor::Vector { .. } => Combiner::Vector,
            Ctor::Hvector { legacy: true, .. } => Combiner::HvectorInteger,
            Ctor::Hvector { .. } => Combiner::Hvector,
            Ctor::Indexed { .. } => Combiner::Indexed,
            Ctor::Hindexed { legacy: true, .. } => Combiner::HindexedInteger,
            Ctor::Hindexed { .. } => Combiner::Hindexed,
            Ctor::IndexedBlock { .. } => Combiner::IndexedBlock,
            Ctor::HindexedBlock { .. } => Combiner::HindexedBlock,
            Ctor::Struct { legacy: true, .. } => Combiner::StructInteger,
            Ctor::Struct { .. } => Combiner::Struct,
            Ctor::Subarray { .. } => Combiner::Subarray,
            Ctor::Darray { .. } => Combiner::Darray,
            Ctor::Resized { .. } => Combiner::Resized,
        }
    }

    /// Whether this is a named predefined type (`MPI_COMBINER_NAMED`).
    pub fn is_named(&self) -> bool {
        self.combiner() == Combiner::Named
    }

    /// The predefined element type this datatype *is*: `Some` for a named
    /// basic type and for the types `MPI_Type_create_f90_*` return (which
    /// MPI treats as predefined); `None` for pairs and derived types.
    pub fn basic_type(&self) -> Option<BasicType> {
        match self.ctor {
            Ctor::Named(t) => Some(t),
            Ctor::F90 { basic, .. } => Some(basic),
            _ => None,
        }
    }

    /// For a (value, index) pair type: value type, index type, and the
    /// byte offset of the index.
    pub fn pair(&self) -> Option<PairLayout> {
        match self.ctor {
            Ctor::Pair { .. } => self.uniform_pair.get(),
            _ => None,
        }
    }

    /// The one basic type every element has, if there is one (so that a
    /// predefined reduction can run on a derived type). `None` for a type
    /// with no elements or with mixed elements. A pair of two equal types
    /// (`MPI_2INT`) counts as that type.
    pub fn uniform_element(&self) -> Option<BasicType> {
        self.uniform.get()
    }

    /// The one pair type every element pair has (a derived type built from
    /// a single pair type, e.g. a contiguous run of `MPI_DOUBLE_INT`), for
    /// MINLOC/MAXLOC on derived types; the offset is within one pair.
    pub fn uniform_pair(&self) -> Option<PairLayout> {
        self.uniform_pair.get()
    }

    /// Basic elements in one item (markers do not count).
    pub fn elements_per_item(&self) -> u64 {
        self.elements
    }

    /// Largest alignment of the basic elements (1 if there are none).
    pub fn alignment(&self) -> u64 {
        self.align
    }

    /// Depth of the dataloop (for diagnostics).
    pub fn loop_depth(&self) -> u32 {
        self.node.as_ref().map_or(0, |n| n.depth())
    }

    /// The old types this type was built from, in argument order.
    pub fn children(&self) -> Vec<&Arc<Datatype>> {
        match &self.ctor {
            Ctor::Named(_) | Ctor::Pair { .. } | Ctor::F90 { .. } => Vec::new(),
            Ctor::Struct { types, .. } => types.iter().collect(),
            Ctor::Dup(old)
            | Ctor::Contiguous { old, .. }
            | Ctor::Vector { old, .. }
            | Ctor::Hvector { old, .. }
            | Ctor::Indexed { old, .. }
            | Ctor::Hindexed { old, .. }
            | Ctor::IndexedBlock { old, .. }
            | Ctor::HindexedBlock { old, .. }
            | Ctor::Subarray { old, .. }
            | Ctor::Darray { old, .. }
            | Ctor::Resized { old, .. } => vec![old],
        }
    }

    /// Whether an element type has an element class that MPI counts (not a
    /// bound marker).
    pub(crate) fn is_element(t: BasicType) -> bool {
        t.class() != TypeClass::Marker
    }
}

pub(crate) fn round_up(x: u64, to: u64) -> u64 {
    if to <= 1 {
        x
    } else {
        x.div_ceil(to) * to
    }
}

impl fmt::Debug for Datatype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Datatype");
        d.field("combiner", &self.combiner().name());
        if let Some(t) = self.basic_type() {
            d.field("basic", &t.name());
        }
        if let Some((v, i, _)) = self.pair() {
            d.field("pair", &(v.name(), i.name()));
        }
        d.field("size", &self.size)
            .field("lb", &self.lb)
            .field("extent", &self.extent)
            .field("true_lb", &self.true_lb)
            .field("true_extent", &self.true_extent())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_types_are_contiguous_runs() {
        let d = Datatype::basic(BasicType::Double);
        assert_eq!((d.size(), d.lb(), d.extent(), d.true_lb(), d.true_extent()), (8, 0, 8, 0, 8));
        assert!(d.is_contiguous());
        assert_eq!(d.basic_type(), Some(BasicType::Double));
        assert_eq!(d.uniform_element(), Some(BasicType::Double));
        assert_eq!(d.combiner(), Combiner::Named);
        let lb = Datatype::basic(BasicType::Lb);
        assert_eq!((lb.size(), lb.lb(), lb.extent(), lb.elements_per_item()), (0, 0, 0, 0));
        assert!(lb.is_contiguous());
    }

    /// Reference values printed by MPICH 5.0.2 (probe/extents.c).
    #[test]
    fn predefined_pairs_match_mpich() {
        use BasicType::*;
        let cases = [
            (Float, Int, 8, 8, 8, 4),
            (Double, Int, 12, 16, 12, 8),
            (Long, Int, 12, 16, 12, 8),
            (Short, Int, 6, 8, 8, 4),
            (Int, Int, 8, 8, 8, 4),
            (LongDouble, Int, 20, 32, 20, 16),
            (Integer, Integer, 8, 8, 8, 4),
            (Real, Real, 8, 8, 8, 4),
            (DoublePrecision, DoublePrecision, 16, 16, 16, 8),
        ];
        for (v, i, size, extent, true_extent, offset) in cases {
            let d = Datatype::value_index(v, i);
            assert_eq!(d.size(), size, "{v:?}");
            assert_eq!(d.extent(), extent, "{v:?}");
            assert_eq!(d.true_extent(), true_extent, "{v:?}");
            assert_eq!(d.lb(), 0);
            assert_eq!(d.pair(), Some((v, i, offset)));
            assert_eq!(d.combiner(), Combiner::Named);
            assert_eq!(d.elements_per_item(), 2);
            assert!(Datatype::is_predefined_pair(v, i));
        }
        assert_eq!(Datatype::value_index(Int, Int).uniform_element(), Some(Int));
        assert_eq!(Datatype::value_index(Double, Int).uniform_element(), None);
        assert!(Datatype::value_index(Float, Int).is_contiguous());
        assert!(!Datatype::value_index(Double, Int).is_contiguous());
        let odd = Datatype::value_index(Double, Long);
        assert_eq!(odd.combiner(), Combiner::ValueIndex);
        assert_eq!((odd.size(), odd.extent()), (16, 16));
    }

    #[test]
    fn order_and_distrib_constants() {
        assert_eq!(Order::from_mpi(Order::Fortran.to_mpi()), Some(Order::Fortran));
        assert_eq!(Distrib::from_mpi(122), Some(Distrib::Cyclic));
        assert_eq!(Distrib::from_mpi(7), None);
        assert_eq!(Combiner::HindexedBlock.to_mpi(), 19);
        assert_eq!(Combiner::ValueIndex.to_mpi(), 20);
    }
}

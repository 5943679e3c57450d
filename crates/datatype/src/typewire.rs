//! A datatype's type map as bytes, for another process to rebuild: a
//! one-sided operation names the target's layout with the origin's
//! datatype, so the target must learn it (MPI 4.1 §12.3).
//!
//! The encoding is the constructor tree: a tag per node, its arguments as
//! little-endian integers, its children after them. Only the type map is
//! kept: a duplicate is encoded as its original, an `f90` type as its
//! predefined type, and the deprecated `_integer` constructors as the
//! modern ones (same type maps; the combiner is not the target's business).
//!
//! [`decode`] rebuilds the type through the public constructors, so every
//! argument is validated as if a user had passed it; the bytes come from
//! another process and may be anything, so every length is checked against
//! what is left before anything is allocated, and nesting is bounded.

use std::sync::Arc;

use crate::basic::BasicType;
use crate::datatype::{Ctor, Datatype, Distrib, Order};

/// Deepest nesting [`decode`] accepts (real programs nest a few levels).
pub const MAX_TYPE_DEPTH: u32 = 64;

const NAMED: u8 = 0;
const PAIR: u8 = 1;
const CONTIGUOUS: u8 = 2;
const VECTOR: u8 = 3;
const HVECTOR: u8 = 4;
const INDEXED: u8 = 5;
const HINDEXED: u8 = 6;
const INDEXED_BLOCK: u8 = 7;
const HINDEXED_BLOCK: u8 = 8;
const STRUCT: u8 = 9;
const SUBARRAY: u8 = 10;
const DARRAY: u8 = 11;
const RESIZED: u8 = 12;

fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_list(out: &mut Vec<u8>, v: &[i64]) {
    put_i64(out, v.len() as i64);
    for &x in v {
        put_i64(out, x);
    }
}

fn basic_index(t: BasicType) -> u8 {
    BasicType::ALL.iter().position(|&b| b == t).expect("every basic type is in ALL") as u8
}

impl Datatype {
    /// Append the encoding of this type's type map to `out`.
    pub fn encode_typemap(&self, out: &mut Vec<u8>) {
        match &self.ctor {
            Ctor::Named(t) | Ctor::F90 { basic: t, .. } => out.extend_from_slice(&[NAMED, basic_index(*t)]),
            Ctor::Pair { value, index } => out.extend_from_slice(&[PAIR, basic_index(*value), basic_index(*index)]),
            Ctor::Dup(old) => old.encode_typemap(out),
            Ctor::Contiguous { count, old } => {
                out.push(CONTIGUOUS);
                put_i64(out, *count);
                old.encode_typemap(out);
            }
            Ctor::Vector { count, blocklength, stride, old } | Ctor::Hvector { count, blocklength, stride, old, .. } => {
                out.push(if matches!(self.ctor, Ctor::Vector { .. }) { VECTOR } else { HVECTOR });
                for v in [*count, *blocklength, *stride] {
                    put_i64(out, v);
                }
                old.encode_typemap(out);
            }
            Ctor::Indexed { blocklengths, displs, old } | Ctor::Hindexed { blocklengths, displs, old, .. } => {
                out.push(if matches!(self.ctor, Ctor::Indexed { .. }) { INDEXED } else { HINDEXED });
                put_list(out, blocklengths);
                put_list(out, displs);
                old.encode_typemap(out);
            }
            Ctor::IndexedBlock { blocklength, displs, old } | Ctor::HindexedBlock { blocklength, displs, old } => {
                out.push(if matches!(self.ctor, Ctor::IndexedBlock { .. }) { INDEXED_BLOCK } else { HINDEXED_BLOCK });
                put_i64(out, *blocklength);
                put_list(out, displs);
                old.encode_typemap(out);
            }
            Ctor::Struct { blocklengths, displs, types, .. } => {
                out.push(STRUCT);
                put_list(out, blocklengths);
                put_list(out, displs);
                for t in types.iter() {
                    t.encode_typemap(out);
                }
            }
            Ctor::Subarray { sizes, subsizes, starts, order, old } => {
                out.push(SUBARRAY);
                put_list(out, sizes);
                put_list(out, subsizes);
                put_list(out, starts);
                put_i64(out, order.to_mpi() as i64);
                old.encode_typemap(out);
            }
            Ctor::Darray { size, rank, gsizes, distribs, dargs, psizes, order, old } => {
                out.push(DARRAY);
                put_i64(out, *size);
                put_i64(out, *rank);
                put_list(out, gsizes);
                let d: Vec<i64> = distribs.iter().map(|d| d.to_mpi() as i64).collect();
                put_list(out, &d);
                put_list(out, dargs);
                put_list(out, psizes);
                put_i64(out, order.to_mpi() as i64);
                old.encode_typemap(out);
            }
            Ctor::Resized { lb, extent, old } => {
                out.push(RESIZED);
                put_i64(out, *lb);
                put_i64(out, *extent);
                old.encode_typemap(out);
            }
        }
    }

    /// The encoding of this type's type map.
    pub fn typemap_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode_typemap(&mut v);
        v
    }
}

/// Why bytes do not describe a datatype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypemapError(pub String);

impl std::fmt::Display for TypemapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid datatype encoding: {}", self.0)
    }
}

struct Reader<'a> {
    b: &'a [u8],
}

impl Reader<'_> {
    fn fail<T>(what: impl Into<String>) -> Result<T, TypemapError> {
        Err(TypemapError(what.into()))
    }
    fn u8(&mut self) -> Result<u8, TypemapError> {
        let (&v, rest) = self.b.split_first().ok_or_else(|| TypemapError("truncated".into()))?;
        self.b = rest;
        Ok(v)
    }
    fn i64(&mut self) -> Result<i64, TypemapError> {
        if self.b.len() < 8 {
            return Self::fail("truncated integer");
        }
        let (v, rest) = self.b.split_at(8);
        self.b = rest;
        Ok(i64::from_le_bytes(v.try_into().expect("8 bytes")))
    }
    fn list(&mut self) -> Result<Vec<i64>, TypemapError> {
        let n = self.i64()?;
        // Each entry takes 8 bytes: a length beyond what is left is a lie,
        // refused before anything is allocated for it.
        if n < 0 || n as u64 > (self.b.len() / 8) as u64 {
            return Self::fail(format!("list length {n} exceeds the bytes left"));
        }
        (0..n).map(|_| self.i64()).collect()
    }
    fn basic(&mut self) -> Result<BasicType, TypemapError> {
        let i = self.u8()?;
        BasicType::ALL.get(i as usize).copied().ok_or_else(|| TypemapError(format!("unknown basic type {i}")))
    }
    fn int(&mut self) -> Result<i32, TypemapError> {
        let v = self.i64()?;
        i32::try_from(v).map_err(|_| TypemapError(format!("{v} does not fit an int")))
    }
}

/// Rebuild a datatype from [`Datatype::encode_typemap`]'s bytes. All of
/// `bytes` must be used.
pub fn decode_typemap(bytes: &[u8]) -> Result<Arc<Datatype>, TypemapError> {
    let mut r = Reader { b: bytes };
    let t = node(&mut r, 0)?;
    if !r.b.is_empty() {
        return Reader::fail(format!("{} bytes after the datatype", r.b.len()));
    }
    Ok(t)
}

fn node(r: &mut Reader, depth: u32) -> Result<Arc<Datatype>, TypemapError> {
    if depth > MAX_TYPE_DEPTH {
        return Reader::fail(format!("nested deeper than {MAX_TYPE_DEPTH} levels"));
    }
    let bad = |e: crate::TypeError| TypemapError(e.to_string());
    let tag = r.u8()?;
    let t = match tag {
        NAMED => Datatype::basic(r.basic()?),
        PAIR => {
            let (v, i) = (r.basic()?, r.basic()?);
            Datatype::value_index(v, i)
        }
        CONTIGUOUS => {
            let count = r.i64()?;
            Datatype::contiguous(count, &node(r, depth + 1)?).map_err(bad)?
        }
        VECTOR | HVECTOR => {
            let (count, bl, stride) = (r.i64()?, r.i64()?, r.i64()?);
            let old = node(r, depth + 1)?;
            if tag == VECTOR { Datatype::vector(count, bl, stride, &old) } else { Datatype::hvector(count, bl, stride, &old) }.map_err(bad)?
        }
        INDEXED | HINDEXED => {
            let (bl, d) = (r.list()?, r.list()?);
            let old = node(r, depth + 1)?;
            if tag == INDEXED { Datatype::indexed(&bl, &d, &old) } else { Datatype::hindexed(&bl, &d, &old) }.map_err(bad)?
        }
        INDEXED_BLOCK | HINDEXED_BLOCK => {
            let (bl, d) = (r.i64()?, r.list()?);
            let old = node(r, depth + 1)?;
            if tag == INDEXED_BLOCK { Datatype::indexed_block(bl, &d, &old) } else { Datatype::hindexed_block(bl, &d, &old) }
                .map_err(bad)?
        }
        STRUCT => {
            let (bl, d) = (r.list()?, r.list()?);
            if bl.len() > r.b.len() {
                return Reader::fail("more struct members than bytes left");
            }
            let types = (0..bl.len()).map(|_| node(r, depth + 1)).collect::<Result<Vec<_>, _>>()?;
            Datatype::create_struct(&bl, &d, &types).map_err(bad)?
        }
        SUBARRAY => {
            let (sizes, subsizes, starts) = (r.list()?, r.list()?, r.list()?);
            let order = order(r.int()?)?;
            let old = node(r, depth + 1)?;
            Datatype::subarray(&sizes, &subsizes, &starts, order, &old).map_err(bad)?
        }
        DARRAY => {
            let (size, rank, gsizes) = (r.i64()?, r.i64()?, r.list()?);
            let distribs = r
                .list()?
                .into_iter()
                .map(|d| i32::try_from(d).ok().and_then(Distrib::from_mpi).ok_or_else(|| TypemapError(format!("bad distribution {d}"))))
                .collect::<Result<Vec<_>, _>>()?;
            let (dargs, psizes) = (r.list()?, r.list()?);
            let order = order(r.int()?)?;
            let old = node(r, depth + 1)?;
            Datatype::darray(size, rank, &gsizes, &distribs, &dargs, &psizes, order, &old).map_err(bad)?
        }
        RESIZED => {
            let (lb, extent) = (r.i64()?, r.i64()?);
            Datatype::resized(&node(r, depth + 1)?, lb, extent).map_err(bad)?
        }
        t => return Reader::fail(format!("unknown constructor tag {t}")),
    };
    Ok(Arc::new(t))
}

fn order(v: i32) -> Result<Order, TypemapError> {
    Order::from_mpi(v).ok_or_else(|| TypemapError(format!("bad array order {v}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(t: BasicType) -> Arc<Datatype> {
        Arc::new(Datatype::basic(t))
    }

    /// Same type map: size, bounds and the packed layout of a few items.
    fn same_map(a: &Datatype, c: &Datatype) {
        assert_eq!((a.size(), a.lb(), a.extent(), a.true_lb(), a.true_extent()), (c.size(), c.lb(), c.extent(), c.true_lb(), c.true_extent()));
        assert_eq!(a.signature_hash(3), c.signature_hash(3));
        let span = (a.true_lb().min(0).unsigned_abs() + (a.extent().unsigned_abs() * 3) + a.true_extent() as u64 + 64) as usize;
        let mut mem: Vec<u8> = (0..span * 2).map(|i| i as u8).collect();
        let base = unsafe { mem.as_mut_ptr().add(span) };
        let mut pa = vec![0u8; (a.size() * 3) as usize];
        let mut pc = pa.clone();
        // SAFETY: `base` has `span` bytes on either side, more than three
        // items of either type reach from it.
        unsafe {
            crate::pack(base, 3, a, 0, &mut pa);
            crate::pack(base, 3, c, 0, &mut pc);
        }
        assert_eq!(pa, pc);
    }

    #[test]
    fn every_constructor_round_trips() {
        use BasicType::*;
        let int = b(Int);
        let dbl = b(Double);
        let v = Arc::new(Datatype::vector(3, 2, 5, &int).unwrap());
        let types: Vec<Datatype> = vec![
            Datatype::basic(Float),
            Datatype::value_index(Double, Int),
            Datatype::contiguous(4, &dbl).unwrap(),
            Datatype::vector(3, 2, -4, &int).unwrap(),
            Datatype::hvector(2, 1, 24, &v).unwrap(),
            Datatype::indexed(&[1, 3, 0], &[4, 0, 9], &int).unwrap(),
            Datatype::hindexed(&[2, 1], &[16, 0], &dbl).unwrap(),
            Datatype::indexed_block(2, &[0, 5, 3], &v).unwrap(),
            Datatype::hindexed_block(1, &[8, 0], &int).unwrap(),
            Datatype::create_struct(&[1, 2, 1], &[0, 8, 32], &[int.clone(), dbl.clone(), b(Char)]).unwrap(),
            Datatype::subarray(&[4, 5], &[2, 3], &[1, 1], Order::C, &dbl).unwrap(),
            Datatype::darray(4, 1, &[8, 6], &[Distrib::Block, Distrib::Cyclic], &[crate::DISTRIBUTE_DFLT_DARG, 2], &[2, 2], Order::Fortran, &int)
                .unwrap(),
            Datatype::resized(&v, -8, 100).unwrap(),
            Datatype::dup(&v),
            Datatype::f90_real(6, 30).unwrap(),
        ];
        for t in &types {
            let bytes = t.typemap_bytes();
            let back = decode_typemap(&bytes).unwrap_or_else(|e| panic!("{t:?}: {e}"));
            same_map(t, &back);
        }
    }

    #[test]
    fn hostile_bytes_are_errors() {
        assert!(decode_typemap(&[]).is_err());
        assert!(decode_typemap(&[NAMED, 250]).is_err());
        assert!(decode_typemap(&[99]).is_err());
        assert!(decode_typemap(&[NAMED, 0, 0]).is_err(), "trailing bytes");
        // A list claiming 2^40 entries is refused without allocating them.
        let mut v = vec![INDEXED];
        put_i64(&mut v, 1 << 40);
        assert!(decode_typemap(&v).is_err());
        // Nesting beyond the limit.
        let mut deep = Vec::new();
        for _ in 0..(MAX_TYPE_DEPTH + 2) {
            deep.push(CONTIGUOUS);
            put_i64(&mut deep, 1);
        }
        deep.extend_from_slice(&[NAMED, 0]);
        assert!(decode_typemap(&deep).is_err());
        // Invalid arguments are the constructors' errors.
        let mut neg = vec![CONTIGUOUS];
        put_i64(&mut neg, -1);
        neg.extend_from_slice(&[NAMED, 0]);
        assert!(decode_typemap(&neg).is_err());
        // Random bytes: errors or types, never a panic.
        let mut x: u64 = 12345;
        for _ in 0..20000 {
            let n = (x % 40) as usize;
            let mut bytes = Vec::with_capacity(n);
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                bytes.push(if x % 3 == 0 { (x >> 8) as u8 % 13 } else { (x >> 16) as u8 });
            }
            let _ = decode_typemap(&bytes);
        }
    }
}

//! A naive reference: the full type map of a datatype, computed from the
//! constructor arguments alone by enumerating every copy (MPI 4.1's
//! definitions, literally), independent of the dataloop and of the bound
//! formulas. Also a small deterministic PRNG and a random type generator.

use std::sync::Arc;

use crate::datatype::{Ctor, Datatype, Distrib, Order};
use crate::BasicType;

/// One entry of a type map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    Elem(BasicType),
    LbMark,
    UbMark,
}

/// The type map of one item: entries in packed order (markers included,
/// in no particular order relative to elements).
pub fn typemap(dt: &Datatype) -> Vec<(Entry, i64)> {
    let mut out = Vec::new();
    emit(dt, 0, &mut out);
    out
}

/// The elements only, for `count` items.
pub fn elements(dt: &Datatype, count: u64) -> Vec<(BasicType, i64)> {
    let one: Vec<(BasicType, i64)> = typemap(dt)
        .into_iter()
        .filter_map(|(e, d)| match e {
            Entry::Elem(t) => Some((t, d)),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(one.len() * count as usize);
    for k in 0..count as i64 {
        out.extend(one.iter().map(|&(t, d)| (t, d + k * dt.extent())));
    }
    out
}

fn copies_of(dt: &Datatype, disp: i64, n: i64, out: &mut Vec<(Entry, i64)>) {
    for j in 0..n {
        emit(dt, disp + j * dt.extent(), out);
    }
}

fn emit(dt: &Datatype, at: i64, out: &mut Vec<(Entry, i64)>) {
    match &dt.ctor {
        Ctor::Named(t) | Ctor::F90 { basic: t, .. } => match t {
            BasicType::Lb => out.push((Entry::LbMark, at)),
            BasicType::Ub => out.push((Entry::UbMark, at)),
            t => out.push((Entry::Elem(*t), at)),
        },
        Ctor::Pair { value, index } => {
            let (_, _, off) = dt.pair().unwrap();
            out.push((Entry::Elem(*value), at));
            out.push((Entry::Elem(*index), at + off as i64));
        }
        Ctor::Dup(old) => emit(old, at, out),
        Ctor::Contiguous { count, old } => copies_of(old, at, *count, out),
        Ctor::Vector { count, blocklength, stride, old } => {
            for i in 0..*count {
                copies_of(old, at + i * stride * old.extent(), *blocklength, out);
            }
        }
        Ctor::Hvector { count, blocklength, stride, old, .. } => {
            for i in 0..*count {
                copies_of(old, at + i * stride, *blocklength, out);
            }
        }
        Ctor::Indexed { blocklengths, displs, old } => {
            for (&bl, &d) in blocklengths.iter().zip(displs.iter()) {
                copies_of(old, at + d * old.extent(), bl, out);
            }
        }
        Ctor::Hindexed { blocklengths, displs, old, .. } => {
            for (&bl, &d) in blocklengths.iter().zip(displs.iter()) {
                copies_of(old, at + d, bl, out);
            }
        }
        Ctor::IndexedBlock { blocklength, displs, old } => {
            for &d in displs.iter() {
                copies_of(old, at + d * old.extent(), *blocklength, out);
            }
        }
        Ctor::HindexedBlock { blocklength, displs, old } => {
            for &d in displs.iter() {
                copies_of(old, at + d, *blocklength, out);
            }
        }
        Ctor::Struct { blocklengths, displs, types, .. } => {
            for ((&bl, &d), t) in blocklengths.iter().zip(displs.iter()).zip(types.iter()) {
                copies_of(t, at + d, bl, out);
            }
        }
        Ctor::Resized { lb, extent, old } => {
            let mut inner = Vec::new();
            emit(old, at, &mut inner);
            out.extend(inner.into_iter().filter(|(e, _)| matches!(e, Entry::Elem(_))));
            out.push((Entry::LbMark, at + lb));
            out.push((Entry::UbMark, at + lb + extent));
        }
        Ctor::Subarray { sizes, subsizes, starts, order, old } => {
            let owned = |d: usize, c: i64| c >= starts[d] && c < starts[d] + subsizes[d];
            array_elements(sizes, *order, old, at, &owned, out);
        }
        Ctor::Darray { size: _, rank, gsizes, distribs, dargs, psizes, order, old } => {
            let nd = gsizes.len();
            let mut coords = vec![0i64; nd];
            let mut r = *rank;
            for d in (0..nd).rev() {
                coords[d] = r % psizes[d];
                r /= psizes[d];
            }
            let owned = |d: usize, c: i64| match distribs[d] {
                Distrib::None => true,
                Distrib::Block => {
                    let b = if dargs[d] == crate::DISTRIBUTE_DFLT_DARG {
                        (gsizes[d] + psizes[d] - 1) / psizes[d]
                    } else {
                        dargs[d]
                    };
                    c / b == coords[d]
                }
                Distrib::Cyclic => {
                    let b = if dargs[d] == crate::DISTRIBUTE_DFLT_DARG { 1 } else { dargs[d] };
                    (c / b) % psizes[d] == coords[d]
                }
            };
            array_elements(gsizes, *order, old, at, &owned, out);
        }
    }
}

/// Every element of a global array in memory order, kept if `owned` in
/// every dimension, then resized to the whole array.
fn array_elements(
    sizes: &[i64],
    order: Order,
    old: &Datatype,
    at: i64,
    owned: &dyn Fn(usize, i64) -> bool,
    out: &mut Vec<(Entry, i64)>,
) {
    let nd = sizes.len();
    let total: i64 = sizes.iter().product();
    let fast_to_slow: Vec<usize> = match order {
        Order::C => (0..nd).rev().collect(),
        Order::Fortran => (0..nd).collect(),
    };
    for linear in 0..total {
        let mut rest = linear;
        let mut keep = true;
        for &d in &fast_to_slow {
            let c = rest % sizes[d];
            rest /= sizes[d];
            keep &= owned(d, c);
        }
        if keep {
            let mut inner = Vec::new();
            emit(old, at + linear * old.extent(), &mut inner);
            out.extend(inner.into_iter().filter(|(e, _)| matches!(e, Entry::Elem(_))));
        }
    }
    out.push((Entry::LbMark, at));
    out.push((Entry::UbMark, at + total * old.extent()));
}

/// splitmix64: small, deterministic, good enough for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const LEAVES: &[BasicType] = &[
    BasicType::Char,
    BasicType::Short,
    BasicType::Int,
    BasicType::Double,
    BasicType::Float,
    BasicType::LongLong,
    BasicType::CDoubleComplex,
    BasicType::Byte,
    BasicType::Long,
];

/// A random datatype of bounded total size: every constructor, negative
/// displacements, strides and extents, markers, zero counts.
pub fn random_type(rng: &mut Rng, depth: u32) -> Arc<Datatype> {
    loop {
        if let Some(t) = try_random_type(rng, depth) {
            // Keep the type maps small enough to enumerate.
            if t.elements_per_item() <= 600 && t.size() <= 4000 && t.true_extent().abs() < 1 << 16 && t.extent().abs() < 1 << 16 {
                return t;
            }
        }
    }
}

fn small_displs(rng: &mut Rng, n: usize, spread: i64) -> Vec<i64> {
    (0..n).map(|_| rng.range(-spread, spread)).collect()
}

fn try_random_type(rng: &mut Rng, depth: u32) -> Option<Arc<Datatype>> {
    if depth == 0 || rng.chance(10) {
        let t = if rng.chance(10) {
            let pairs = [
                (BasicType::Double, BasicType::Int),
                (BasicType::Short, BasicType::Int),
                (BasicType::Int, BasicType::Int),
                (BasicType::Float, BasicType::Int),
            ];
            let (v, i) = rng.pick(&pairs);
            Datatype::value_index(v, i)
        } else {
            Datatype::basic(rng.pick(LEAVES))
        };
        return Some(Arc::new(t));
    }
    let old = random_type(rng, depth - 1);
    let ext = old.extent();
    let min_bl = if rng.chance(85) { 1 } else { 0 };
    let t = match rng.below(14) {
        0 => Datatype::contiguous(if rng.chance(80) { rng.range(1, 6) } else { 0 }, &old),
        1 => Datatype::vector(rng.range(0, 5), rng.range(min_bl, 3), rng.range(-4, 5), &old),
        2 => Datatype::hvector(rng.range(0, 5), rng.range(min_bl, 3), rng.range(-40, 40), &old),
        3 => {
            let n = rng.below(5);
            let bl: Vec<i64> = (0..n).map(|_| rng.range(0, 3)).collect();
            Datatype::indexed(&bl, &small_displs(rng, n, 6), &old)
        }
        4 => {
            let n = rng.below(5);
            let bl: Vec<i64> = (0..n).map(|_| rng.range(0, 3)).collect();
            Datatype::hindexed(&bl, &small_displs(rng, n, 50), &old)
        }
        5 => {
            let n = rng.below(5);
            Datatype::indexed_block(rng.range(0, 3), &small_displs(rng, n, 6), &old)
        }
        6 => {
            let n = rng.below(5);
            Datatype::hindexed_block(rng.range(0, 3), &small_displs(rng, n, 50), &old)
        }
        7 | 8 => {
            let n = rng.range(1, 4) as usize;
            let mut types = Vec::new();
            let mut bl = Vec::new();
            let mut displs = Vec::new();
            let mut at = rng.range(-16, 16);
            for _ in 0..n {
                let t = if rng.chance(10) {
                    Arc::new(Datatype::basic(if rng.chance(50) { BasicType::Lb } else { BasicType::Ub }))
                } else if rng.chance(50) {
                    old.clone()
                } else {
                    random_type(rng, depth - 1)
                };
                let b = rng.range(0, 3);
                displs.push(if rng.chance(70) { at } else { rng.range(-64, 64) });
                at += b * t.extent().max(0) + rng.range(0, 3) * 4;
                bl.push(b);
                types.push(t);
            }
            Datatype::create_struct(&bl, &displs, &types)
        }
        9 => {
            let nd = rng.range(1, 3) as usize;
            let sizes: Vec<i64> = (0..nd).map(|_| rng.range(1, 5)).collect();
            let sub: Vec<i64> = sizes.iter().map(|&s| rng.range(0, s)).collect();
            let starts: Vec<i64> = sizes.iter().zip(&sub).map(|(&s, &b)| rng.range(0, s - b)).collect();
            let order = if rng.chance(50) { Order::C } else { Order::Fortran };
            Datatype::subarray(&sizes, &sub, &starts, order, &old)
        }
        10 => {
            let nd = rng.range(1, 3) as usize;
            let gsizes: Vec<i64> = (0..nd).map(|_| rng.range(1, 7)).collect();
            let psizes: Vec<i64> = (0..nd).map(|_| rng.range(1, 3)).collect();
            let distribs: Vec<Distrib> =
                psizes.iter().map(|&p| if p == 1 && rng.chance(30) { Distrib::None } else { rng.pick(&[Distrib::Block, Distrib::Cyclic]) }).collect();
            let dargs: Vec<i64> = (0..nd)
                .map(|d| match distribs[d] {
                    Distrib::Block if rng.chance(50) => {
                        let min = (gsizes[d] + psizes[d] - 1) / psizes[d];
                        rng.range(min, min + 2)
                    }
                    Distrib::Cyclic if rng.chance(50) => rng.range(1, 3),
                    _ => crate::DISTRIBUTE_DFLT_DARG,
                })
                .collect();
            let size: i64 = psizes.iter().product();
            let rank = rng.range(0, size - 1);
            let order = if rng.chance(50) { Order::C } else { Order::Fortran };
            Datatype::darray(size, rank, &gsizes, &distribs, &dargs, &psizes, order, &old)
        }
        11 | 12 => {
            let lb = rng.range(-20, 20);
            let extent = if rng.chance(25) { rng.range(-ext.abs() - 8, 0) } else { rng.range(0, ext.abs() + 16) };
            Datatype::resized(&old, lb, extent)
        }
        _ => Ok(Datatype::dup(&old)),
    };
    t.ok().map(Arc::new)
}

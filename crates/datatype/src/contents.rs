//! `MPI_Type_get_envelope` and `MPI_Type_get_contents` (MPI 4.1 §5.1.13).
//!
//! For each combiner the arguments come back in the order of the
//! constructor's C binding. A type built by a large-count (`_c`)
//! constructor, or with a count that does not fit a C `int`, returns its
//! count arguments (and for `hvector`, `hindexed`, `hindexed_block`,
//! `struct` and `resized` also its byte displacements) in `large_counts`,
//! exactly as MPICH's `MPI_Type_get_contents_c` does; the non-`_c`
//! `MPI_Type_get_envelope` must then fail (`num_large_counts > 0`).

use std::sync::Arc;

use crate::datatype::{Combiner, Ctor, Datatype};

/// `MPI_Type_get_envelope(_c)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub num_integers: usize,
    pub num_addresses: usize,
    pub num_large_counts: usize,
    pub num_datatypes: usize,
    pub combiner: Combiner,
}

/// `MPI_Type_get_contents(_c)`. For a named type every list is empty.
#[derive(Clone, Debug, Default)]
pub struct Contents {
    pub integers: Vec<i32>,
    pub addresses: Vec<i64>,
    pub large_counts: Vec<i64>,
    pub datatypes: Vec<Arc<Datatype>>,
}

/// Appends values that are C `int`s in the non-large-count binding
/// (validated or counted as large at construction, so the cast is exact
/// whenever `large` is false).
fn ints(out: &mut Vec<i32>, values: &[i64]) {
    out.extend(values.iter().map(|&v| v as i32));
}

impl Datatype {
    /// The envelope: how many arguments of each kind [`Datatype::contents`]
    /// returns, and the combiner.
    pub fn envelope(&self) -> Envelope {
        let c = self.contents();
        Envelope {
            num_integers: c.integers.len(),
            num_addresses: c.addresses.len(),
            num_large_counts: c.large_counts.len(),
            num_datatypes: c.datatypes.len(),
            combiner: self.combiner(),
        }
    }

    /// The constructor arguments, per combiner (MPI 4.1 Table 5.1 and its
    /// large-count column).
    pub fn contents(&self) -> Contents {
        let mut c = Contents::default();
        let large = self.large;
        // Puts count-like values in `large_counts` or `integers`.
        let counts = |c: &mut Contents, values: &[i64]| {
            if large {
                c.large_counts.extend_from_slice(values);
            } else {
                ints(&mut c.integers, values);
            }
        };
        // Byte displacements: `large_counts` or `addresses`.
        let addrs = |c: &mut Contents, values: &[i64]| {
            if large {
                c.large_counts.extend_from_slice(values);
            } else {
                c.addresses.extend_from_slice(values);
            }
        };
        match &self.ctor {
            Ctor::Named(_) => {}
            Ctor::Pair { value, index } => {
                if self.combiner() == Combiner::ValueIndex {
                    c.datatypes.push(Arc::new(Datatype::basic(*value)));
                    c.datatypes.push(Arc::new(Datatype::basic(*index)));
                }
            }
            Ctor::F90 { combiner, p, r, .. } => match combiner {
                Combiner::F90Integer => c.integers.push(*r),
                _ => c.integers.extend_from_slice(&[*p, *r]),
            },
            Ctor::Dup(old) => c.datatypes.push(old.clone()),
            Ctor::Contiguous { count, old } => {
                counts(&mut c, &[*count]);
                c.datatypes.push(old.clone());
            }
            Ctor::Vector { count, blocklength, stride, old } => {
                counts(&mut c, &[*count, *blocklength, *stride]);
                c.datatypes.push(old.clone());
            }
            Ctor::Hvector { count, blocklength, stride, old, .. } => {
                counts(&mut c, &[*count, *blocklength]);
                addrs(&mut c, &[*stride]);
                c.datatypes.push(old.clone());
            }
            Ctor::Indexed { blocklengths, displs, old } => {
                counts(&mut c, &[blocklengths.len() as i64]);
                counts(&mut c, blocklengths);
                counts(&mut c, displs);
                c.datatypes.push(old.clone());
            }
            Ctor::Hindexed { blocklengths, displs, old, .. } => {
                counts(&mut c, &[blocklengths.len() as i64]);
                counts(&mut c, blocklengths);
                addrs(&mut c, displs);
                c.datatypes.push(old.clone());
            }
            Ctor::IndexedBlock { blocklength, displs, old } => {
                counts(&mut c, &[displs.len() as i64, *blocklength]);
                counts(&mut c, displs);
                c.datatypes.push(old.clone());
            }
            Ctor::HindexedBlock { blocklength, displs, old } => {
                counts(&mut c, &[displs.len() as i64, *blocklength]);
                addrs(&mut c, displs);
                c.datatypes.push(old.clone());
            }
            Ctor::Struct { blocklengths, displs, types, .. } => {
                counts(&mut c, &[blocklengths.len() as i64]);
                counts(&mut c, blocklengths);
                addrs(&mut c, displs);
                c.datatypes.extend(types.iter().cloned());
            }
            Ctor::Subarray { sizes, subsizes, starts, order, old } => {
                c.integers.push(sizes.len() as i32);
                counts(&mut c, sizes);
                counts(&mut c, subsizes);
                counts(&mut c, starts);
                c.integers.push(order.to_mpi());
                c.datatypes.push(old.clone());
            }
            Ctor::Darray { size, rank, gsizes, distribs, dargs, psizes, order, old } => {
                ints(&mut c.integers, &[*size, *rank, gsizes.len() as i64]);
                counts(&mut c, gsizes);
                c.integers.extend(distribs.iter().map(|d| d.to_mpi()));
                ints(&mut c.integers, dargs);
                ints(&mut c.integers, psizes);
                c.integers.push(order.to_mpi());
                c.datatypes.push(old.clone());
            }
            Ctor::Resized { lb, extent, old } => {
                addrs(&mut c, &[*lb, *extent]);
                c.datatypes.push(old.clone());
            }
        }
        c
    }
}

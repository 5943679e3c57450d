//! Envelopes and contents: MPICH's layouts per combiner (probe/contents.c),
//! and rebuilding random types from their contents.

use std::sync::Arc;

use super::reference::{random_type, Rng};
use crate::datatype::{Combiner, Datatype, Distrib, Order, DISTRIBUTE_DFLT_DARG};
use crate::{pack, BasicType, Contents};

fn int() -> Arc<Datatype> {
    Arc::new(Datatype::basic(BasicType::Int))
}

/// (combiner, integers, addresses, large counts, number of datatypes)
type Summary = (i32, Vec<i32>, Vec<i64>, Vec<i64>, usize);

fn summary(d: &Datatype) -> Summary {
    let c = d.contents();
    let e = d.envelope();
    assert_eq!(e.num_integers, c.integers.len());
    assert_eq!(e.num_addresses, c.addresses.len());
    assert_eq!(e.num_large_counts, c.large_counts.len());
    assert_eq!(e.num_datatypes, c.datatypes.len());
    (e.combiner.to_mpi(), c.integers, c.addresses, c.large_counts, c.datatypes.len())
}

#[test]
fn contents_layouts_match_mpich() {
    let i = int();
    let dbl = Arc::new(Datatype::basic(BasicType::Double));
    let t = |r: Result<Datatype, crate::TypeError>| r.unwrap();
    let cases: Vec<(&str, Datatype, Summary)> = vec![
        ("contig", t(Datatype::contiguous(3, &i)), (3, vec![3], vec![], vec![], 1)),
        ("contig_c", t(Datatype::contiguous(3, &i)).with_large_counts(), (3, vec![], vec![], vec![3], 1)),
        ("vector", t(Datatype::vector(3, 2, 5, &i)), (4, vec![3, 2, 5], vec![], vec![], 1)),
        ("vector_c", t(Datatype::vector(3, 2, 5, &i)).with_large_counts(), (4, vec![], vec![], vec![3, 2, 5], 1)),
        ("hvector", t(Datatype::hvector(3, 2, 50, &i)), (6, vec![3, 2], vec![50], vec![], 1)),
        ("hvector_c", t(Datatype::hvector(3, 2, 50, &i)).with_large_counts(), (6, vec![], vec![], vec![3, 2, 50], 1)),
        ("indexed", t(Datatype::indexed(&[1, 2], &[5, 9], &i)), (7, vec![2, 1, 2, 5, 9], vec![], vec![], 1)),
        (
            "indexed_c",
            t(Datatype::indexed(&[1, 2], &[5, 9], &i)).with_large_counts(),
            (7, vec![], vec![], vec![2, 1, 2, 5, 9], 1),
        ),
        ("hindexed", t(Datatype::hindexed(&[1, 2], &[5, 90], &i)), (9, vec![2, 1, 2], vec![5, 90], vec![], 1)),
        (
            "hindexed_c",
            t(Datatype::hindexed(&[1, 2], &[5, 90], &i)).with_large_counts(),
            (9, vec![], vec![], vec![2, 1, 2, 5, 90], 1),
        ),
        ("indexed_block", t(Datatype::indexed_block(3, &[5, 9], &i)), (10, vec![2, 3, 5, 9], vec![], vec![], 1)),
        (
            "indexed_block_c",
            t(Datatype::indexed_block(3, &[5, 9], &i)).with_large_counts(),
            (10, vec![], vec![], vec![2, 3, 5, 9], 1),
        ),
        ("hindexed_block", t(Datatype::hindexed_block(3, &[5, 90], &i)), (19, vec![2, 3], vec![5, 90], vec![], 1)),
        (
            "hindexed_block_c",
            t(Datatype::hindexed_block(3, &[5, 90], &i)).with_large_counts(),
            (19, vec![], vec![], vec![2, 3, 5, 90], 1),
        ),
        (
            "struct",
            t(Datatype::create_struct(&[1, 2], &[0, 8], &[i.clone(), dbl.clone()])),
            (12, vec![2, 1, 2], vec![0, 8], vec![], 2),
        ),
        (
            "struct_c",
            t(Datatype::create_struct(&[1, 2], &[0, 8], &[i.clone(), dbl.clone()])).with_large_counts(),
            (12, vec![], vec![], vec![2, 1, 2, 0, 8], 2),
        ),
        (
            "subarray",
            t(Datatype::subarray(&[4, 5], &[2, 3], &[1, 2], Order::Fortran, &i)),
            (13, vec![2, 4, 5, 2, 3, 1, 2, 57], vec![], vec![], 1),
        ),
        (
            "subarray_c",
            t(Datatype::subarray(&[4, 5], &[2, 3], &[1, 2], Order::Fortran, &i)).with_large_counts(),
            (13, vec![2, 57], vec![], vec![4, 5, 2, 3, 1, 2], 1),
        ),
        (
            "darray",
            t(Datatype::darray(4, 1, &[4, 6], &[Distrib::Block, Distrib::Cyclic], &[DISTRIBUTE_DFLT_DARG, 2], &[2, 2], Order::C, &i)),
            (14, vec![4, 1, 2, 4, 6, 121, 122, -49767, 2, 2, 2, 56], vec![], vec![], 1),
        ),
        (
            "darray_c",
            t(Datatype::darray(4, 1, &[4, 6], &[Distrib::Block, Distrib::Cyclic], &[DISTRIBUTE_DFLT_DARG, 2], &[2, 2], Order::C, &i))
                .with_large_counts(),
            (14, vec![4, 1, 2, 121, 122, -49767, 2, 2, 2, 56], vec![], vec![4, 6], 1),
        ),
        ("resized", t(Datatype::resized(&i, -4, 16)), (18, vec![], vec![-4, 16], vec![], 1)),
        ("resized_c", t(Datatype::resized(&i, -4, 16)).with_large_counts(), (18, vec![], vec![], vec![-4, 16], 1)),
        ("dup", Datatype::dup(&i), (2, vec![], vec![], vec![], 1)),
        ("dup_c", Datatype::dup(&i).with_large_counts(), (2, vec![], vec![], vec![], 1)),
        ("MPI_DOUBLE_INT", Datatype::value_index(BasicType::Double, BasicType::Int), (1, vec![], vec![], vec![], 0)),
        ("MPI_LB", Datatype::basic(BasicType::Lb), (1, vec![], vec![], vec![], 0)),
        ("value_index(double,long)", Datatype::value_index(BasicType::Double, BasicType::Long), (20, vec![], vec![], vec![], 2)),
        ("hvector_integer", t(Datatype::hvector_integer(3, 2, 50, &i)), (5, vec![3, 2], vec![50], vec![], 1)),
        ("hindexed_integer", t(Datatype::hindexed_integer(&[1], &[5], &i)), (8, vec![1, 1], vec![5], vec![], 1)),
        ("struct_integer", t(Datatype::struct_integer(&[1], &[5], std::slice::from_ref(&i))), (11, vec![1, 1], vec![5], vec![], 1)),
    ];
    for (name, d, expect) in cases {
        assert_eq!(summary(&d), expect, "{name}");
    }
    // A count that does not fit a C int makes the type large-count by itself.
    let big = Datatype::vector(1, 1, 1 << 40, &i).unwrap();
    assert_eq!(summary(&big).3, vec![1, 1, 1 << 40]);
}

/// Rebuilds a type from its envelope and contents, as a user of
/// MPI_Type_get_contents would.
fn rebuild(d: &Datatype) -> Datatype {
    let c: Contents = d.contents();
    let e = d.envelope();
    // One list of "count" arguments, whichever array they came in.
    let ints: Vec<i64> = c.integers.iter().map(|&v| v as i64).collect();
    let large = !c.large_counts.is_empty();
    let counts: Vec<i64> = if large { c.large_counts.clone() } else { ints.clone() };
    let addrs = if large { c.large_counts.clone() } else { c.addresses.clone() };
    let old = c.datatypes.first().cloned();
    let r = match e.combiner {
        Combiner::Named => {
            return match (d.basic_type(), d.pair()) {
                (Some(t), _) => Datatype::basic(t),
                (None, Some((v, i, _))) => Datatype::value_index(v, i),
                _ => unreachable!("named types are basic or pairs"),
            }
        }
        Combiner::Dup => Ok(Datatype::dup(&old.unwrap())),
        Combiner::Contiguous => Datatype::contiguous(counts[0], &old.unwrap()),
        Combiner::Vector => Datatype::vector(counts[0], counts[1], counts[2], &old.unwrap()),
        Combiner::Hvector | Combiner::HvectorInteger => {
            let stride = if large { counts[2] } else { addrs[0] };
            Datatype::hvector(counts[0], counts[1], stride, &old.unwrap())
        }
        Combiner::Indexed => {
            let n = counts[0] as usize;
            Datatype::indexed(&counts[1..1 + n], &counts[1 + n..1 + 2 * n], &old.unwrap())
        }
        Combiner::Hindexed | Combiner::HindexedInteger => {
            let n = counts[0] as usize;
            let displs = if large { &counts[1 + n..] } else { &addrs[..] };
            Datatype::hindexed(&counts[1..1 + n], displs, &old.unwrap())
        }
        Combiner::IndexedBlock => Datatype::indexed_block(counts[1], &counts[2..], &old.unwrap()),
        Combiner::HindexedBlock => {
            let displs = if large { &counts[2..] } else { &addrs[..] };
            Datatype::hindexed_block(counts[1], displs, &old.unwrap())
        }
        Combiner::Struct | Combiner::StructInteger => {
            let n = counts[0] as usize;
            let displs = if large { &counts[1 + n..] } else { &addrs[..] };
            Datatype::create_struct(&counts[1..1 + n], displs, &c.datatypes)
        }
        Combiner::Subarray => {
            let n = ints[0] as usize;
            let (arrays, order) = if large {
                (counts.clone(), ints[1])
            } else {
                (ints[1..1 + 3 * n].to_vec(), ints[1 + 3 * n])
            };
            let order = Order::from_mpi(order as i32).unwrap();
            Datatype::subarray(&arrays[..n], &arrays[n..2 * n], &arrays[2 * n..3 * n], order, &old.unwrap())
        }
        Combiner::Darray => {
            let (size, rank, n) = (ints[0], ints[1], ints[2] as usize);
            let (gsizes, rest) = if large { (counts.clone(), ints[3..].to_vec()) } else { (ints[3..3 + n].to_vec(), ints[3 + n..].to_vec()) };
            let distribs: Vec<Distrib> = rest[..n].iter().map(|&v| Distrib::from_mpi(v as i32).unwrap()).collect();
            let order = Order::from_mpi(rest[3 * n] as i32).unwrap();
            Datatype::darray(size, rank, &gsizes, &distribs, &rest[n..2 * n], &rest[2 * n..3 * n], order, &old.unwrap())
        }
        Combiner::Resized => Datatype::resized(&old.unwrap(), addrs[0], addrs[1]),
        Combiner::F90Real | Combiner::F90Complex | Combiner::F90Integer | Combiner::ValueIndex => {
            unreachable!("not generated")
        }
    };
    r.unwrap()
}

#[test]
fn random_types_rebuild_from_their_contents() {
    let mut rng = Rng::new(77);
    for case in 0..800 {
        let depth = rng.range(1, 4) as u32;
        let mut d = random_type(&mut rng, depth);
        if rng.chance(30) {
            d = Arc::new((*d).clone().with_large_counts());
        }
        let r = rebuild(&d);
        let what = format!("case {case}: {d:?}");
        if d.combiner() != Combiner::Named {
            assert_eq!(r.combiner(), match d.combiner() {
                Combiner::HvectorInteger => Combiner::Hvector,
                Combiner::HindexedInteger => Combiner::Hindexed,
                Combiner::StructInteger => Combiner::Struct,
                c => c,
            }, "{what}");
        }
        assert_eq!((r.size(), r.lb(), r.extent(), r.true_lb(), r.true_extent()), (d.size(), d.lb(), d.extent(), d.true_lb(), d.true_extent()), "{what}");
        assert_eq!(r.signature_hash(3), d.signature_hash(3), "{what}");
        if d.size() > 0 && d.true_lb() >= 0 && d.extent() >= 0 && d.basic_type().is_none() && d.pair().is_none() {
            let span = (d.true_ub().max(d.ub()) + 2 * d.extent()) as usize + 8;
            let src: Vec<u8> = (0..span).map(|k| k as u8).collect();
            let mut p1 = vec![0u8; 3 * d.size() as usize];
            let mut p2 = p1.clone();
            unsafe {
                pack(src.as_ptr(), 3, &d, 0, &mut p1);
                pack(src.as_ptr(), 3, &r, 0, &mut p2);
            }
            assert_eq!(p1, p2, "{what}");
        }
    }
}

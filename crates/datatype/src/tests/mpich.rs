//! Reference values printed by MPICH 5.0.2 (`probe/*.c` in this crate; run
//! with `/opt/peers/mpich/bin/mpiexec -n 1`). Where we follow the MPI
//! standard and MPICH does not (see `datatype.rs`, "Where MPICH differs"),
//! the test states both values.

use std::sync::Arc;

use crate::datatype::{Datatype, Distrib, Order, DISTRIBUTE_DFLT_DARG};
use crate::{pack, BasicType};

fn b(t: BasicType) -> Arc<Datatype> {
    Arc::new(Datatype::basic(t))
}
fn a(r: Result<Datatype, crate::TypeError>) -> Arc<Datatype> {
    Arc::new(r.unwrap())
}

/// (size, lb, extent, true_lb, true_extent)
type Shape = (u64, i64, i64, i64, i64);

fn shape(d: &Datatype) -> Shape {
    (d.size(), d.lb(), d.extent(), d.true_lb(), d.true_extent())
}

fn st(entries: &[(i64, i64, Arc<Datatype>)]) -> Arc<Datatype> {
    let bl: Vec<i64> = entries.iter().map(|e| e.0).collect();
    let d: Vec<i64> = entries.iter().map(|e| e.1).collect();
    let t: Vec<Arc<Datatype>> = entries.iter().map(|e| e.2.clone()).collect();
    a(Datatype::create_struct(&bl, &d, &t))
}

#[test]
fn extents_agree_with_mpich() {
    use BasicType::*;
    let (char_, short, int, double) = (b(Char), b(Short), b(Int), b(Double));
    let (lb, ub) = (b(Lb), b(Ub));
    let cases: Vec<(&str, Arc<Datatype>, Shape)> = vec![
        ("hvector(2,1,9,double)", a(Datatype::hvector(2, 1, 9, &double)), (16, 0, 17, 0, 17)),
        ("struct{char@0,double@8}", st(&[(1, 0, char_.clone()), (1, 8, double.clone())]), (9, 0, 16, 0, 16)),
        ("struct{double@0,char@8}", st(&[(1, 0, double.clone()), (1, 8, char_.clone())]), (9, 0, 16, 0, 9)),
        ("struct{cfloatcplx@0,char@8}", st(&[(1, 0, b(CFloatComplex)), (1, 8, char_.clone())]), (9, 0, 12, 0, 9)),
        ("struct{ldouble@0,char@16}", st(&[(1, 0, b(LongDouble)), (1, 16, char_.clone())]), (17, 0, 32, 0, 17)),
        ("struct{short@0,char@2}", st(&[(1, 0, short.clone()), (1, 2, char_.clone())]), (3, 0, 4, 0, 3)),
        ("struct{char@-3,double@8}", st(&[(1, -3, char_.clone()), (1, 8, double.clone())]), (9, -3, 24, -3, 19)),
        (
            "struct{int@0,contig3char@4}",
            st(&[(1, 0, int.clone()), (1, 4, a(Datatype::contiguous(3, &char_)))]),
            (7, 0, 8, 0, 7),
        ),
        (
            "struct{contig1double@0,char@8}",
            st(&[(1, 0, a(Datatype::contiguous(1, &double))), (1, 8, char_.clone())]),
            (9, 0, 16, 0, 9),
        ),
        ("struct{double@0,int@12}", st(&[(1, 0, double.clone()), (1, 12, int.clone())]), (12, 0, 16, 0, 16)),
        ("struct{2xdouble@3}", st(&[(2, 3, double.clone())]), (16, 3, 16, 3, 16)),
        (
            "struct{int@0,char@4,int@5}",
            st(&[(1, 0, int.clone()), (1, 4, char_.clone()), (1, 5, int.clone())]),
            (9, 0, 12, 0, 9),
        ),
        ("struct{short_int@0,char@16}", st(&[(1, 0, b_pair(Short, Int)), (1, 16, char_.clone())]), (7, 0, 20, 0, 17)),
        (
            "struct{ldouble_int@0,char@32}",
            st(&[(1, 0, b_pair(LongDouble, Int)), (1, 32, char_.clone())]),
            (21, 0, 48, 0, 33),
        ),
        // Zero counts and empty types.
        ("contig(0,int)", a(Datatype::contiguous(0, &int)), (0, 0, 0, 0, 0)),
        ("vector(0,2,3,int)", a(Datatype::vector(0, 2, 3, &int)), (0, 0, 0, 0, 0)),
        ("indexed{0@-5,2@3}", a(Datatype::indexed(&[0, 2], &[-5, 3], &int)), (8, 12, 8, 12, 8)),
        ("indexed{0@-5,0@3}", a(Datatype::indexed(&[0, 0], &[-5, 3], &int)), (0, 0, 0, 0, 0)),
        ("struct{0xdouble@16}", st(&[(0, 16, double.clone())]), (0, 0, 0, 0, 0)),
        ("struct{}", st(&[]), (0, 0, 0, 0, 0)),
        ("struct{0xdouble@-8,char@4}", st(&[(0, -8, double.clone()), (1, 4, char_.clone())]), (1, 4, 1, 4, 1)),
        ("struct{char@4,0xdouble@0}", st(&[(1, 4, char_.clone()), (0, 0, double.clone())]), (1, 4, 1, 4, 1)),
        ("struct{char@1,double@-7}", st(&[(1, 1, char_.clone()), (1, -7, double.clone())]), (9, -7, 16, -7, 9)),
        ("resized(contig0,3,10)", a(Datatype::resized(&a(Datatype::contiguous(0, &int)), 3, 10)), (0, 3, 10, 0, 0)),
        ("contig(5,contig0)", a(Datatype::contiguous(5, &a(Datatype::contiguous(0, &int)))), (0, 0, 0, 0, 0)),
        ("vector(3,2,4,contig0)", a(Datatype::vector(3, 2, 4, &a(Datatype::contiguous(0, &int)))), (0, 0, 0, 0, 0)),
        // Negative strides and extents.
        ("vector(3,1,-2,int)", a(Datatype::vector(3, 1, -2, &int)), (12, -16, 20, -16, 20)),
        ("vector(3,2,-1,int)", a(Datatype::vector(3, 2, -1, &int)), (24, -8, 16, -8, 16)),
        ("hvector(3,2,-3,short)", a(Datatype::hvector(3, 2, -3, &short)), (12, -6, 10, -6, 10)),
        ("hindexed_block(2,{8,-8,0},short)", a(Datatype::hindexed_block(2, &[8, -8, 0], &short)), (12, -8, 20, -8, 20)),
        ("indexed_block(2,{4,-1,0},short)", a(Datatype::indexed_block(2, &[4, -1, 0], &short)), (12, -2, 14, -2, 14)),
        // Markers at the top level of one struct.
        ("struct{LB@-4,int@0,UB@20}", markers(), (4, -4, 24, 0, 4)),
        ("contig(2,^)", a(Datatype::contiguous(2, &markers())), (8, -4, 48, 0, 28)),
        ("resized(^,0,100)", a(Datatype::resized(&markers(), 0, 100)), (4, 0, 100, 0, 4)),
        (
            "struct{double@0,char@8,UB@13}",
            st(&[(1, 0, double.clone()), (1, 8, char_.clone()), (1, 13, ub.clone())]),
            (9, 0, 13, 0, 9),
        ),
        ("struct{3xLB@4,int@0}", st(&[(3, 4, lb.clone()), (1, 0, int.clone())]), (4, 4, 0, 0, 4)),
        (
            "struct{UB@12,UB@20,double@0}",
            st(&[(1, 12, ub.clone()), (1, 20, ub.clone()), (1, 0, double.clone())]),
            (8, 0, 20, 0, 8),
        ),
        ("struct{UB@4,double@0}", st(&[(1, 4, ub.clone()), (1, 0, double.clone())]), (8, 0, 4, 0, 8)),
        ("struct{LB@-4,UB@20}", st(&[(1, -4, lb.clone()), (1, 20, ub.clone())]), (0, -4, 24, 0, 0)),
        (
            "struct{LB@-4,UB@20,0xint@100}",
            st(&[(1, -4, lb.clone()), (1, 20, ub.clone()), (0, 100, int.clone())]),
            (0, -4, 24, 0, 0),
        ),
        ("struct{UB@20}", st(&[(1, 20, ub.clone())]), (0, 0, 20, 0, 0)),
        ("struct{LB@4,char@0}", st(&[(1, 4, lb.clone()), (1, 0, char_.clone())]), (1, 4, -3, 0, 1)),
        (
            "struct{LB@-3,int@0,UB@6}",
            st(&[(1, -3, lb.clone()), (1, 0, int.clone()), (1, 6, ub.clone())]),
            (4, -3, 9, 0, 4),
        ),
        // Resized types.
        ("resized(int,4,-16)", rsz(&int, 4, -16), (4, 4, -16, 0, 4)),
        ("contig(3,resized(int,4,-16))", a(Datatype::contiguous(3, &rsz(&int, 4, -16))), (12, -28, 16, -32, 36)),
        ("vector(2,2,3,resized(int,-4,16))", a(Datatype::vector(2, 2, 3, &rsz(&int, -4, 16))), (16, -4, 80, 0, 68)),
        ("vector(2,2,3,resized(int,4,-16))", a(Datatype::vector(2, 2, 3, &rsz(&int, 4, -16))), (16, -60, 48, -64, 68)),
        (
            "indexed{2@5,1@-3}(rsz(int,-4,16))",
            a(Datatype::indexed(&[2, 1], &[5, -3], &rsz(&int, -4, 16))),
            (12, -52, 160, -48, 148),
        ),
        ("struct{r9@0}", st(&[(1, 0, rsz(&double, 0, 9))]), (8, 0, 9, 0, 8)),
        ("struct{r9@0,r9@9}", st(&[(1, 0, rsz(&double, 0, 9)), (1, 9, rsz(&double, 0, 9))]), (16, 0, 18, 0, 17)),
        ("struct{2xr9@0}", st(&[(2, 0, rsz(&double, 0, 9))]), (16, 0, 18, 0, 17)),
        ("contig(4,rsz(int,0,0))", a(Datatype::contiguous(4, &rsz(&int, 0, 0))), (16, 0, 0, 0, 4)),
        ("vector(2,3,5,rsz(int,0,0))", a(Datatype::vector(2, 3, 5, &rsz(&int, 0, 0))), (24, 0, 0, 0, 4)),
        // Subarrays.
        (
            "subarray C {4,5}{2,3}{1,1}",
            a(Datatype::subarray(&[4, 5], &[2, 3], &[1, 1], Order::C, &int)),
            (24, 0, 80, 24, 32),
        ),
        (
            "subarray F {4,5}{2,3}{1,1}",
            a(Datatype::subarray(&[4, 5], &[2, 3], &[1, 1], Order::Fortran, &int)),
            (24, 0, 80, 20, 40),
        ),
        (
            "subarray C subsize 0",
            a(Datatype::subarray(&[4, 5], &[0, 3], &[1, 1], Order::C, &int)),
            (0, 0, 80, 0, 0),
        ),
        (
            "subarray 1d rsz(int,-4,16)",
            a(Datatype::subarray(&[10], &[3], &[7], Order::C, &rsz(&int, -4, 16))),
            (12, 0, 160, 112, 36),
        ),
        ("dup(double_int)", Arc::new(Datatype::dup(&b_pair(Double, Int))), (12, 0, 16, 0, 12)),
        ("contig(2,short_int)", a(Datatype::contiguous(2, &b_pair(Short, Int))), (12, 0, 16, 0, 16)),
        ("MPI_LB", lb.clone(), (0, 0, 0, 0, 0)),
        ("MPI_UB", ub.clone(), (0, 0, 0, 0, 0)),
    ];
    for (name, d, expect) in cases {
        assert_eq!(shape(&d), expect, "{name}");
    }
}

fn b_pair(v: BasicType, i: BasicType) -> Arc<Datatype> {
    Arc::new(Datatype::value_index(v, i))
}
fn rsz(t: &Arc<Datatype>, lb: i64, extent: i64) -> Arc<Datatype> {
    a(Datatype::resized(t, lb, extent))
}
/// struct{LB@-4, int@0, UB@20}
fn markers() -> Arc<Datatype> {
    st(&[(1, -4, b(BasicType::Lb)), (1, 0, b(BasicType::Int)), (1, 20, b(BasicType::Ub))])
}

/// Corners where MPICH departs from the standard's type-map rules and we
/// follow the standard: (what MPICH prints, what we give).
#[test]
fn extents_where_we_follow_the_standard() {
    use BasicType::*;
    let (char_, int, double) = (b(Char), b(Int), b(Double));
    let (lb, ub) = (b(Lb), b(Ub));
    let cases: Vec<(&str, Arc<Datatype>, Shape, Shape)> = vec![
        // A resized type's bounds are sticky markers (MPI 4.1 §5.1.8):
        // inside a struct they fix the bounds; MPICH drops the stickiness.
        (
            "struct{resized(int,0,8)@0,double@16}",
            st(&[(1, 0, rsz(&int, 0, 8)), (1, 16, double.clone())]),
            (12, 0, 24, 0, 24),
            (12, 0, 8, 0, 24),
        ),
        (
            "struct{resized(double,0,9)@0,char@9}",
            st(&[(1, 0, rsz(&double, 0, 9)), (1, 9, char_.clone())]),
            (9, 0, 16, 0, 10),
            (9, 0, 9, 0, 10),
        ),
        (
            "struct{resized(char,-2,5)@0,double@8}",
            st(&[(1, 0, rsz(&char_, -2, 5)), (1, 8, double.clone())]),
            (9, -2, 24, 0, 16),
            (9, -2, 5, 0, 16),
        ),
        (
            "struct{r9@0,char@20}",
            st(&[(1, 0, rsz(&double, 0, 9)), (1, 20, char_.clone())]),
            (9, 0, 24, 0, 21),
            (9, 0, 9, 0, 21),
        ),
        (
            "struct{contig(r9)@0,char@9}",
            st(&[(1, 0, a(Datatype::contiguous(1, &rsz(&double, 0, 9)))), (1, 9, char_.clone())]),
            (9, 0, 16, 0, 10),
            (9, 0, 9, 0, 10),
        ),
        // Markers of a nested struct stay sticky.
        (
            "struct{markers@0,double@100}",
            st(&[(1, 0, markers()), (1, 100, double.clone())]),
            (12, -4, 112, 0, 108),
            (12, -4, 24, 0, 108),
        ),
        // With only a lower-bound marker the epsilon rounds ub - lb (the
        // sticky lb); MPICH rounds from the data's lower bound.
        (
            "struct{LB@-4,double@0,char@8}",
            st(&[(1, -4, lb.clone()), (1, 0, double.clone()), (1, 8, char_.clone())]),
            (9, -4, 20, 0, 9),
            (9, -4, 16, 0, 9),
        ),
        (
            "struct{LB@2,double@0,char@8}",
            st(&[(1, 2, lb.clone()), (1, 0, double.clone()), (1, 8, char_.clone())]),
            (9, 2, 14, 0, 9),
            (9, 2, 8, 0, 9),
        ),
        (
            "struct{LB@1,int@0,char@4}",
            st(&[(1, 1, lb.clone()), (1, 0, int.clone()), (1, 4, char_.clone())]),
            (5, 1, 7, 0, 5),
            (5, 1, 4, 0, 5),
        ),
        // Several markers: the lowest lb and highest ub count (MPICH: the last).
        (
            "struct{LB@5,double@0,LB@8}",
            st(&[(1, 5, lb.clone()), (1, 0, double.clone()), (1, 8, lb.clone())]),
            (8, 8, 0, 0, 8),
            (8, 5, 8, 0, 8),
        ),
        (
            "struct{LB@8,LB@5,double@0}",
            st(&[(1, 8, lb.clone()), (1, 5, lb.clone()), (1, 0, double.clone())]),
            (8, 5, 3, 0, 8),
            (8, 5, 8, 0, 8),
        ),
        (
            "struct{UB@20,UB@12,double@0}",
            st(&[(1, 20, ub.clone()), (1, 12, ub.clone()), (1, 0, double.clone())]),
            (8, 0, 12, 0, 8),
            (8, 0, 20, 0, 8),
        ),
        // A block of zero markers is no marker.
        (
            "struct{0xLB@-4,int@0}",
            st(&[(0, -4, lb.clone()), (1, 0, int.clone())]),
            (4, -4, 8, 0, 4),
            (4, 0, 4, 0, 4),
        ),
        // A struct of one repeated type still gets the epsilon (MPICH
        // builds it as an hindexed type and skips it).
        (
            "struct{double@0,double@12}",
            st(&[(1, 0, double.clone()), (1, 12, double.clone())]),
            (16, 0, 20, 0, 20),
            (16, 0, 24, 0, 20),
        ),
        // Empty type maps have bounds 0 (MPICH computes bounds for blocks
        // of zero elements, and ignores marker-only old types).
        ("vector(3,0,3,int)", a(Datatype::vector(3, 0, 3, &int)), (0, 0, 24, 0, 24), (0, 0, 0, 0, 0)),
        ("vector(2,0,-3,int)", a(Datatype::vector(2, 0, -3, &int)), (0, -12, 12, -12, 12), (0, 0, 0, 0, 0)),
        ("hvector(3,0,5,int)", a(Datatype::hvector(3, 0, 5, &int)), (0, 0, 10, 0, 10), (0, 0, 0, 0, 0)),
        ("indexed_block(0,{3,5},int)", a(Datatype::indexed_block(0, &[3, 5], &int)), (0, 12, 8, 12, 8), (0, 0, 0, 0, 0)),
        ("hindexed_block(0,{3,5},int)", a(Datatype::hindexed_block(0, &[3, 5], &int)), (0, 3, 2, 3, 2), (0, 0, 0, 0, 0)),
        (
            "struct{contig0@-8,char@4}",
            st(&[(1, -8, a(Datatype::contiguous(0, &int))), (1, 4, char_.clone())]),
            (1, -8, 13, -8, 13),
            (1, 4, 1, 4, 1),
        ),
        (
            "vector(3,2,4,rsz(contig0,-8,4))",
            a(Datatype::vector(3, 2, 4, &rsz(&a(Datatype::contiguous(0, &int)), -8, 4))),
            (0, 0, 0, 0, 0),
            (0, -8, 40, 0, 0),
        ),
    ];
    for (name, d, mpich, ours) in cases {
        assert_ne!(mpich, ours, "{name}: not a difference");
        assert_eq!(shape(&d), ours, "{name} (MPICH gives {mpich:?})");
    }
}

/// Packs `count` items of `dt` over an int array holding 0, 1, 2, ... and
/// returns the packed ints: the global indices of the type's elements.
fn packed_indices(dt: &Datatype, total: usize) -> Vec<i32> {
    let data: Vec<i32> = (0..total as i32).collect();
    let mut out = vec![0u8; dt.size() as usize];
    let n = unsafe { pack(data.as_ptr().cast(), 1, dt, 0, &mut out) };
    assert_eq!(n, out.len());
    out.chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect()
}

#[allow(clippy::too_many_arguments)]
fn check_darray(
    name: &str,
    size: i64,
    gsizes: &[i64],
    distribs: &[Distrib],
    dargs: &[i64],
    psizes: &[i64],
    order: Order,
    expect: &[(i64, i64, Vec<i32>)],
) {
    let int = b(BasicType::Int);
    let total: i64 = gsizes.iter().product();
    for (rank, (true_lb, true_extent, elems)) in expect.iter().enumerate() {
        let d = Datatype::darray(size, rank as i64, gsizes, distribs, dargs, psizes, order, &int).unwrap();
        assert_eq!((d.lb(), d.extent()), (0, 4 * total), "{name} rank {rank}");
        assert_eq!((d.true_lb(), d.true_extent()), (*true_lb, *true_extent), "{name} rank {rank}");
        assert_eq!(packed_indices(&d, total as usize), *elems, "{name} rank {rank}");
    }
}

#[test]
fn darray_agrees_with_mpich() {
    use Distrib::*;
    const D: i64 = DISTRIBUTE_DFLT_DARG;
    check_darray(
        "6x7 C block,cyclic(2) on 2x3",
        6,
        &[6, 7],
        &[Block, Cyclic],
        &[D, 2],
        &[2, 3],
        Order::C,
        &[
            (0, 84, vec![0, 1, 6, 7, 8, 13, 14, 15, 20]),
            (8, 64, vec![2, 3, 9, 10, 16, 17]),
            (16, 64, vec![4, 5, 11, 12, 18, 19]),
            (84, 84, vec![21, 22, 27, 28, 29, 34, 35, 36, 41]),
            (92, 64, vec![23, 24, 30, 31, 37, 38]),
            (100, 64, vec![25, 26, 32, 33, 39, 40]),
        ],
    );
    check_darray(
        "6x7 F block,cyclic(2) on 2x3",
        6,
        &[6, 7],
        &[Block, Cyclic],
        &[D, 2],
        &[2, 3],
        Order::Fortran,
        &[
            (0, 156, vec![0, 1, 2, 6, 7, 8, 36, 37, 38]),
            (48, 36, vec![12, 13, 14, 18, 19, 20]),
            (96, 36, vec![24, 25, 26, 30, 31, 32]),
            (12, 156, vec![3, 4, 5, 9, 10, 11, 39, 40, 41]),
            (60, 36, vec![15, 16, 17, 21, 22, 23]),
            (108, 36, vec![27, 28, 29, 33, 34, 35]),
        ],
    );
    check_darray(
        "10 cyclic on 3",
        3,
        &[10],
        &[Cyclic],
        &[D],
        &[3],
        Order::C,
        &[(0, 40, vec![0, 3, 6, 9]), (4, 28, vec![1, 4, 7]), (8, 28, vec![2, 5, 8])],
    );
    check_darray(
        "10 block on 3",
        3,
        &[10],
        &[Block],
        &[D],
        &[3],
        Order::C,
        &[(0, 16, vec![0, 1, 2, 3]), (16, 16, vec![4, 5, 6, 7]), (32, 8, vec![8, 9])],
    );
    check_darray(
        "7 block on 4",
        4,
        &[7],
        &[Block],
        &[D],
        &[4],
        Order::C,
        &[(0, 8, vec![0, 1]), (8, 8, vec![2, 3]), (16, 8, vec![4, 5]), (24, 4, vec![6])],
    );
    check_darray(
        "10 cyclic(3) on 3",
        3,
        &[10],
        &[Cyclic],
        &[3],
        &[3],
        Order::C,
        &[(0, 40, vec![0, 1, 2, 9]), (12, 12, vec![3, 4, 5]), (24, 12, vec![6, 7, 8])],
    );
    check_darray(
        "10 block(5) on 3",
        3,
        &[10],
        &[Block],
        &[5],
        &[3],
        Order::C,
        &[(0, 20, vec![0, 1, 2, 3, 4]), (20, 20, vec![5, 6, 7, 8, 9]), (0, 0, vec![])],
    );
    check_darray("10 none on 1", 1, &[10], &[None], &[D], &[1], Order::C, &[(0, 40, (0..10).collect())]);
    check_darray(
        "4x3x5 F cyclic,none,block on 2x1x2",
        4,
        &[4, 3, 5],
        &[Cyclic, None, Block],
        &[D, D, D],
        &[2, 1, 2],
        Order::Fortran,
        &[
            (0, 140, (0..18).map(|k| 2 * k).collect()),
            (144, 92, (18..30).map(|k| 2 * k).collect()),
            (4, 140, (0..18).map(|k| 2 * k + 1).collect()),
            (148, 92, (18..30).map(|k| 2 * k + 1).collect()),
        ],
    );
    check_darray(
        "4x3x5 C cyclic,none,block on 2x1x2",
        4,
        &[4, 3, 5],
        &[Cyclic, None, Block],
        &[D, D, D],
        &[2, 1, 2],
        Order::C,
        &[
            (0, 172, vec![0, 1, 2, 5, 6, 7, 10, 11, 12, 30, 31, 32, 35, 36, 37, 40, 41, 42]),
            (12, 168, vec![3, 4, 8, 9, 13, 14, 33, 34, 38, 39, 43, 44]),
            (60, 172, vec![15, 16, 17, 20, 21, 22, 25, 26, 27, 45, 46, 47, 50, 51, 52, 55, 56, 57]),
            (72, 168, vec![18, 19, 23, 24, 28, 29, 48, 49, 53, 54, 58, 59]),
        ],
    );
    // Processes with nothing.
    let int = b(BasicType::Int);
    for distrib in [Block, Cyclic] {
        let d = Datatype::darray(4, 3, &[2], &[distrib], &[D], &[4], Order::C, &int).unwrap();
        assert_eq!(shape(&d), (0, 0, 8, 0, 0));
    }
    // Old type with its own bounds.
    let r = rsz(&int, -4, 8);
    let d = Datatype::darray(2, 1, &[6], &[Block], &[D], &[2], Order::C, &r).unwrap();
    assert_eq!(shape(&d), (12, 0, 48, 24, 20));
    // MPICH refuses a block size too small for the array.
    let e = Datatype::darray(3, 0, &[10], &[Block], &[3], &[3], Order::C, &int).unwrap_err();
    assert!(e.to_string().contains("dargs[0] 3"), "{e}");
}

#[test]
fn subarray_3d_agrees_with_mpich() {
    let int = b(BasicType::Int);
    let c = Datatype::subarray(&[3, 4, 5], &[2, 2, 3], &[1, 1, 2], Order::C, &int).unwrap();
    assert_eq!(shape(&c), (48, 0, 240, 108, 112));
    assert_eq!(packed_indices(&c, 60), vec![27, 28, 29, 32, 33, 34, 47, 48, 49, 52, 53, 54]);
    let f = Datatype::subarray(&[3, 4, 5], &[2, 2, 3], &[1, 1, 2], Order::Fortran, &int).unwrap();
    assert_eq!(shape(&f), (48, 0, 240, 112, 116));
    assert_eq!(packed_indices(&f, 60), vec![28, 29, 31, 32, 40, 41, 43, 44, 52, 53, 55, 56]);
}

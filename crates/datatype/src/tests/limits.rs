//! Argument errors, overflow, hostile inputs (nothing may panic), deep
//! nesting, and types far too large to flatten.

use std::sync::Arc;

use super::reference::{elements, Rng};
use crate::datatype::{Datatype, Distrib, Order, DISTRIBUTE_DFLT_DARG};
use crate::layout::Node;
use crate::{pack, unpack, BasicType, ErrorClass, TypeError};

fn int() -> Arc<Datatype> {
    Arc::new(Datatype::basic(BasicType::Int))
}
fn double() -> Arc<Datatype> {
    Arc::new(Datatype::basic(BasicType::Double))
}

#[test]
fn bad_arguments_are_named() {
    let i = int();
    let msg = |r: Result<Datatype, TypeError>| r.unwrap_err().to_string();
    assert_eq!(msg(Datatype::contiguous(-3, &i)), "count -3 is negative");
    assert_eq!(msg(Datatype::vector(2, -1, 3, &i)), "blocklength -1 is negative");
    assert_eq!(msg(Datatype::indexed(&[1, -3], &[0, 4], &i)), "blocklengths[1] -3 is negative");
    assert_eq!(msg(Datatype::indexed(&[1, 3], &[0], &i)), "displacements has 1 entries, expected 2");
    assert_eq!(msg(Datatype::create_struct(&[1], &[0], &[])), "types has 0 entries, expected 1");
    assert_eq!(msg(Datatype::indexed_block(-1, &[0], &i)), "blocklength -1 is negative");
    assert_eq!(msg(Datatype::subarray(&[4], &[5], &[0], Order::C, &i)), "subsizes[0] 5 is out of range: it must not exceed sizes[d]");
    assert_eq!(
        msg(Datatype::subarray(&[4], &[2], &[3], Order::C, &i)),
        "starts[0] 3 is out of range: starts[d] + subsizes[d] must not exceed sizes[d]"
    );
    assert_eq!(msg(Datatype::subarray(&[0], &[0], &[0], Order::C, &i)), "sizes[0] 0 must be positive");
    assert_eq!(msg(Datatype::subarray(&[], &[], &[], Order::C, &i)), "ndims 0 is out of range: it must be at least 1");
    let e = Datatype::subarray(&[], &[], &[], Order::C, &i).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Dims);
    let d = DISTRIBUTE_DFLT_DARG;
    assert_eq!(
        msg(Datatype::darray(4, 0, &[8], &[Distrib::Block], &[d], &[2], Order::C, &i)),
        "size 4 is out of range: it must equal the product of psizes"
    );
    assert_eq!(
        msg(Datatype::darray(2, 2, &[8], &[Distrib::Block], &[d], &[2], Order::C, &i)),
        "rank 2 is out of range: it must be in 0..size"
    );
    assert_eq!(
        msg(Datatype::darray(2, 0, &[8], &[Distrib::None], &[d], &[2], Order::C, &i)),
        "psizes[0] 2 is out of range: it must be 1 for MPI_DISTRIBUTE_NONE"
    );
    assert_eq!(msg(Datatype::darray(2, 0, &[8], &[Distrib::Cyclic], &[0], &[2], Order::C, &i)), "dargs[0] 0 must be positive");
    assert_eq!(msg(Datatype::darray(1, 0, &[0], &[Distrib::Cyclic], &[d], &[1], Order::C, &i)), "gsizes[0] 0 must be positive");
}

#[test]
fn sizes_and_bounds_that_overflow_are_refused() {
    let d = double();
    let over = |r: Result<Datatype, TypeError>| match r {
        Err(TypeError::Overflow { .. }) => {}
        other => panic!("expected overflow, got {other:?}"),
    };
    over(Datatype::contiguous(i64::MAX, &d));
    over(Datatype::contiguous(1 << 61, &d));
    over(Datatype::vector(3, 1, i64::MAX / 4, &d));
    over(Datatype::vector(1 << 40, 1 << 30, 1, &d));
    over(Datatype::hvector(3, 1, i64::MAX / 2, &d));
    over(Datatype::indexed(&[1], &[i64::MAX / 2], &d));
    over(Datatype::hindexed(&[1], &[i64::MAX - 4], &d));
    over(Datatype::hindexed(&[2], &[i64::MIN + 4], &Arc::new(Datatype::resized(&d, 0, -16).unwrap())));
    over(Datatype::create_struct(&[1, 1], &[i64::MIN, i64::MAX - 8], &[d.clone(), d.clone()]));
    over(Datatype::resized(&d, i64::MAX, 1));
    over(Datatype::resized(&d, i64::MIN, -1));
    over(Datatype::subarray(&[1 << 40, 1 << 40], &[1, 1], &[0, 0], Order::C, &d));
    over(Datatype::darray(1, 0, &[1 << 40, 1 << 40], &[Distrib::None, Distrib::None], &[0, 0], &[1, 1], Order::C, &d));
    // Big but representable: fine, and not flattened.
    let big = Datatype::vector(1 << 30, 1, 4, &d).unwrap();
    assert_eq!(big.size(), 8 << 30);
    assert_eq!(big.extent(), ((1i64 << 30) - 1) * 32 + 8);
    // A resized type near the limits of an MPI_Aint.
    let r = Datatype::resized(&d, i64::MIN, i64::MAX).unwrap();
    assert_eq!((r.lb(), r.ub()), (i64::MIN, -1));
}

/// Throws random, mostly invalid arguments at every constructor: errors are
/// fine, panics are not (the test harness would catch them).
#[test]
fn hostile_arguments_never_panic() {
    let mut rng = Rng::new(99);
    let nasty = [i64::MIN, i64::MIN + 1, -1, 0, 1, 2, 7, i32::MAX as i64, 1 << 32, 1 << 62, i64::MAX - 1, i64::MAX, DISTRIBUTE_DFLT_DARG];
    let mut pool: Vec<Arc<Datatype>> = vec![int(), double(), Arc::new(Datatype::basic(BasicType::Lb)), Arc::new(Datatype::basic(BasicType::Ub))];
    let mut v = |rng: &mut Rng| if rng.chance(50) { rng.pick(&nasty) } else { rng.range(-9, 9) };
    for _ in 0..20000 {
        let old = pool[rng.below(pool.len())].clone();
        let n = rng.below(4);
        let arr = |rng: &mut Rng, v: &mut dyn FnMut(&mut Rng) -> i64| (0..n).map(|_| v(rng)).collect::<Vec<i64>>();
        let r = match rng.below(12) {
            0 => Datatype::contiguous(v(&mut rng), &old),
            1 => Datatype::vector(v(&mut rng), v(&mut rng), v(&mut rng), &old),
            2 => Datatype::hvector(v(&mut rng), v(&mut rng), v(&mut rng), &old),
            3 => Datatype::indexed(&arr(&mut rng, &mut v), &arr(&mut rng, &mut v), &old),
            4 => Datatype::hindexed(&arr(&mut rng, &mut v), &arr(&mut rng, &mut v), &old),
            5 => Datatype::indexed_block(v(&mut rng), &arr(&mut rng, &mut v), &old),
            6 => Datatype::hindexed_block(v(&mut rng), &arr(&mut rng, &mut v), &old),
            7 => {
                let types: Vec<Arc<Datatype>> = (0..n).map(|_| pool[rng.below(pool.len())].clone()).collect();
                Datatype::create_struct(&arr(&mut rng, &mut v), &arr(&mut rng, &mut v), &types)
            }
            8 => Datatype::subarray(&arr(&mut rng, &mut v), &arr(&mut rng, &mut v), &arr(&mut rng, &mut v), Order::C, &old),
            9 => {
                let distribs: Vec<Distrib> = (0..n).map(|_| rng.pick(&[Distrib::Block, Distrib::Cyclic, Distrib::None])).collect();
                Datatype::darray(v(&mut rng), v(&mut rng), &arr(&mut rng, &mut v), &distribs, &arr(&mut rng, &mut v), &arr(&mut rng, &mut v), Order::Fortran, &old)
            }
            10 => Datatype::resized(&old, v(&mut rng), v(&mut rng)),
            _ => Ok(Datatype::dup(&old)),
        };
        if let Ok(t) = r {
            // Every query works on whatever was accepted.
            let _ = (t.size(), t.extent(), t.true_extent(), t.envelope(), t.contents(), t.signature_hash(7));
            let _ = (t.elements_in(12345), t.bytes_of_elements(77), t.signature_hash_of_elements(5));
            let _ = crate::external32_size(&t, 3);
            let mut c = t.cursor(3);
            c.seek(t.size() / 2);
            let _ = c.next_run(64);
            if pool.len() < 64 && t.size() < 1 << 20 {
                pool.push(Arc::new(t));
            }
        }
    }
}

#[test]
fn deep_nesting_spills_the_cursor_stack() {
    // 20 levels of "2 copies, far apart": a loop nest 20 deep that nothing
    // can collapse.
    let mut t = int();
    for level in 0..20 {
        let stride = t.extent() + 4 + level;
        t = Arc::new(Datatype::hvector(2, 1, stride, &t).unwrap());
    }
    assert!(t.loop_depth() >= 20, "depth {}", t.loop_depth());
    assert_eq!(t.size(), 4 << 20);
    let map = elements(&t, 1);
    let hi = map.iter().map(|&(_, d)| d).max().unwrap() as usize + 4;
    let src: Vec<u8> = (0..hi).map(|k| (k * 7) as u8).collect();
    let want: Vec<u8> = map.iter().flat_map(|&(_, d)| src[d as usize..d as usize + 4].to_vec()).collect();
    let mut out = vec![0u8; want.len()];
    assert_eq!(unsafe { pack(src.as_ptr(), 1, &t, 0, &mut out) }, want.len());
    assert_eq!(out, want);
    // Resume from odd offsets.
    let mut c = t.cursor(1);
    for from in [1u64, 4093, 1 << 19, (4 << 20) - 3] {
        c.seek(from);
        let mut part = vec![0u8; 64];
        let n = unsafe { c.pack(src.as_ptr(), &mut part) };
        assert_eq!(&part[..n], &want[from as usize..from as usize + n]);
    }
}

#[test]
fn a_million_element_vector_is_one_loop() {
    let d = double();
    let v = Datatype::vector(1_000_000, 1, 2, &d).unwrap();
    match v.node.as_deref() {
        Some(Node::Seq(seq)) => {
            assert_eq!(seq.parts.len(), 1);
            assert_eq!(seq.parts[0].count, 1_000_000);
            assert!(matches!(*seq.kids[0].node, Node::Run(8)));
        }
        other => panic!("{other:?}"),
    }
    // Seek into the middle: the run is the 123457th double.
    let mut c = v.cursor(2);
    c.seek(8 * 1_123_456 + 3);
    let item_extent = v.extent();
    assert_eq!(c.next_run(100), Some((item_extent + 16 * 123_456 + 3, 5)));
    assert_eq!(c.next_run(100), Some((item_extent + 16 * 123_457, 8)));
    // Indexed blocks at uniform sizes need no table of start offsets.
    let displs: Vec<i64> = (0..100_000).map(|k| 3 * k).collect();
    let ib = Datatype::indexed_block(2, &displs, &d).unwrap();
    match ib.node.as_deref() {
        Some(Node::Seq(seq)) => assert!(seq.starts.is_empty()),
        other => panic!("{other:?}"),
    }
    // A contiguous type is a single run however many items.
    let c = Datatype::contiguous(1 << 20, &d).unwrap();
    assert!(c.is_contiguous());
    assert_eq!(c.single_run(), Some((0, 8 << 20)));
}

#[test]
fn subarray_rows_collapse_and_darray_stays_small() {
    let d = double();
    // Full rows of a C array: one run per selected block of rows.
    let s = Datatype::subarray(&[100, 200], &[10, 200], &[5, 0], Order::C, &d).unwrap();
    assert_eq!(s.single_run(), Some((5 * 200 * 8, 10 * 200 * 8)));
    // A cyclic darray of a huge dimension is a couple of parts, not a list.
    let t = Datatype::darray(3, 1, &[10_000_000], &[Distrib::Cyclic], &[7], &[3], Order::C, &d).unwrap();
    match t.node.as_deref() {
        Some(Node::Seq(seq)) => assert!(seq.parts.len() <= 2, "{} parts", seq.parts.len()),
        other => panic!("{other:?}"),
    }
    assert_eq!(t.size(), 8 * 3_333_333);
}

#[test]
fn unpack_and_pack_stop_at_the_end_of_the_items() {
    let i = int();
    let v = Datatype::vector(2, 1, 2, &i).unwrap();
    let mut buf = [0i32; 8];
    let input = [1u8; 64];
    let used = unsafe { unpack(buf.as_mut_ptr().cast(), 2, &v, 0, &input) };
    assert_eq!(used, 16);
    assert_eq!(buf, [0x01010101, 0, 0x01010101, 0x01010101, 0, 0x01010101, 0, 0]);
    let mut out = [0u8; 64];
    assert_eq!(unsafe { pack(buf.as_ptr().cast(), 2, &v, 12, &mut out) }, 4);
    assert_eq!(unsafe { pack(buf.as_ptr().cast(), 2, &v, 16, &mut out) }, 0);
    assert_eq!(unsafe { pack(buf.as_ptr().cast(), 2, &v, 1 << 40, &mut out) }, 0);
    // Contiguous fast path, same rules.
    let c = Datatype::contiguous(3, &i).unwrap();
    assert_eq!(unsafe { pack(buf.as_ptr().cast(), 1, &c, 10, &mut out) }, 2);
    // Zero-size types move nothing.
    let z = Datatype::contiguous(0, &i).unwrap();
    assert_eq!(unsafe { pack(buf.as_ptr().cast(), 100, &z, 0, &mut out) }, 0);
    assert_eq!(z.cursor(100).next_run(8), None);
}

#[test]
fn element_counts() {
    let i = int();
    let d = double();
    let s = Datatype::create_struct(&[1, 2], &[0, 8], &[i.clone(), d.clone()]).unwrap();
    // int, double, double per item (20 bytes).
    assert_eq!(s.elements_in(0), Some(0));
    assert_eq!(s.elements_in(4), Some(1));
    assert_eq!(s.elements_in(6), None);
    assert_eq!(s.elements_in(12), Some(2));
    assert_eq!(s.elements_in(20), Some(3));
    assert_eq!(s.elements_in(24), Some(4));
    assert_eq!(s.elements_in(40 * 1000), Some(6000));
    assert_eq!(s.bytes_of_elements(4), Some(24));
    assert_eq!(s.bytes_of_elements(5), Some(32));
    let z = Datatype::contiguous(0, &i).unwrap();
    assert_eq!(z.elements_in(0), Some(0));
    assert_eq!(z.elements_in(4), None);
    assert_eq!(z.bytes_of_elements(0), Some(0));
    assert_eq!(z.bytes_of_elements(1), None);
    let pair = Datatype::value_index(BasicType::Double, BasicType::Int);
    assert_eq!(pair.elements_in(8), Some(1));
    assert_eq!(pair.elements_in(12), Some(2));
    assert_eq!(pair.elements_in(10), None);
    assert_eq!(pair.uniform_pair(), Some((BasicType::Double, BasicType::Int, 8)));
    let v = Datatype::vector(3, 2, 4, &Arc::new(pair)).unwrap();
    assert_eq!(v.uniform_pair(), Some((BasicType::Double, BasicType::Int, 8)));
    assert_eq!(v.uniform_element(), None);
    assert_eq!(v.pair(), None);
    let ints = Datatype::vector(3, 2, 4, &i).unwrap();
    assert_eq!(ints.uniform_element(), Some(BasicType::Int));
    assert_eq!(ints.uniform_pair(), None);
}

#[test]
fn signatures_ignore_layout() {
    let i = int();
    let a = Datatype::contiguous(6, &i).unwrap();
    let b = Datatype::vector(3, 2, 7, &i).unwrap();
    let c = Datatype::create_struct(&[2, 4], &[0, 100], &[i.clone(), i.clone()]).unwrap();
    assert_eq!(a.signature_hash(1), b.signature_hash(1));
    assert_eq!(a.signature_hash(2), c.signature_hash(2));
    assert_eq!(a.signature_hash(2), i.signature_hash(12));
    assert_eq!(a.signature_hash_of_elements(5), i.signature_hash_of_elements(5));
    let f = Datatype::contiguous(6, &Arc::new(Datatype::basic(BasicType::Float))).unwrap();
    assert_ne!(a.signature_hash(1), f.signature_hash(1));
    // MPI_2INT is two ints.
    let two = Datatype::value_index(BasicType::Int, BasicType::Int);
    assert_eq!(two.signature_hash(3), a.signature_hash(1));
}

#[test]
fn bulk_paths_resume_anywhere() {
    // Irregular blocks (some adjacent, some overlapping) and a struct with
    // an inner repeat: chunked packs from random offsets equal the reference.
    let mut rng = Rng::new(4242);
    let d = double();
    let n = 3000;
    let bl: Vec<i64> = (0..n).map(|_| rng.range(0, 3)).collect();
    let displs: Vec<i64> = (0..n as i64).map(|k| 3 * k + rng.range(0, 2)).collect();
    let ix = Arc::new(Datatype::indexed(&bl, &displs, &d).unwrap());
    let inner = Arc::new(Datatype::vector(3, 1, 2, &int()).unwrap());
    let st = Arc::new(Datatype::create_struct(&[1, 2, 1], &[0, 8, 40], &[d.clone(), inner, int()]).unwrap());
    for t in [ix, st] {
        let count = 7u64;
        let map = elements(&t, count);
        let hi = map.iter().map(|&(ty, off)| off + ty.size() as i64).max().unwrap() as usize;
        let src: Vec<u8> = (0..hi).map(|k| (k * 13 + 5) as u8).collect();
        let want: Vec<u8> = map.iter().flat_map(|&(ty, off)| src[off as usize..off as usize + ty.size()].to_vec()).collect();
        for _ in 0..50 {
            let mut got = vec![0u8; want.len()];
            let mut c = t.cursor(count);
            let mut at = rng.range(0, want.len() as i64 - 1) as usize;
            c.seek(at as u64);
            let start = at;
            while at < want.len() {
                let end = (at + rng.range(1, 300) as usize).min(want.len());
                at += unsafe { c.pack(src.as_ptr(), &mut got[at..end]) };
            }
            assert_eq!(&got[start..], &want[start..]);
            // And back.
            let mut back = vec![0u8; hi];
            let mut c = t.cursor(count);
            let mut at = 0;
            while at < want.len() {
                let end = (at + rng.range(1, 300) as usize).min(want.len());
                at += unsafe { c.unpack(back.as_mut_ptr(), &want[at..end]) };
            }
            for &(ty, off) in &map {
                let r = off as usize..off as usize + ty.size();
                assert_eq!(back[r.clone()], src[r]);
            }
        }
    }
}

//! Random nested types checked against the naive reference: size, true
//! bounds, sticky markers, pack/unpack/copy (whole, chunked, from arbitrary
//! offsets), cursor runs, element counting, signatures and external32.

use super::reference::{elements, random_type, typemap, Entry, Rng};
use crate::datatype::Datatype;
use crate::signature::{element, Sig};
use crate::{copy, pack, pack_external32, unpack, unpack_external32, BasicType};

/// A user buffer covering every byte a type map of `count` items touches,
/// filled with a byte pattern; `origin` is the index of the base address.
struct Buffer {
    bytes: Vec<u8>,
    origin: usize,
}

impl Buffer {
    fn covering(map: &[(BasicType, i64)], fill: impl Fn(usize) -> u8) -> Buffer {
        let lo = map.iter().map(|&(_, d)| d).min().unwrap_or(0).min(0);
        let hi = map.iter().map(|&(t, d)| d + t.size() as i64).max().unwrap_or(0).max(0);
        let len = (hi - lo) as usize + 16;
        Buffer { bytes: (0..len).map(fill).collect(), origin: (-lo) as usize }
    }
    fn base(&self) -> *const u8 {
        self.bytes[self.origin..].as_ptr()
    }
    fn base_mut(&mut self) -> *mut u8 {
        self.bytes[self.origin..].as_mut_ptr()
    }
    fn at(&self, disp: i64, len: usize) -> &[u8] {
        let i = (self.origin as i64 + disp) as usize;
        &self.bytes[i..i + len]
    }
    fn at_mut(&mut self, disp: i64, len: usize) -> &mut [u8] {
        let i = (self.origin as i64 + disp) as usize;
        &mut self.bytes[i..i + len]
    }
}

fn reference_pack(map: &[(BasicType, i64)], buf: &Buffer) -> Vec<u8> {
    let mut out = Vec::new();
    for &(t, d) in map {
        out.extend_from_slice(buf.at(d, t.size()));
    }
    out
}

fn reference_unpack(map: &[(BasicType, i64)], packed: &[u8], buf: &mut Buffer) {
    let mut i = 0;
    for &(t, d) in map {
        let n = t.size();
        buf.at_mut(d, n).copy_from_slice(&packed[i..i + n]);
        i += n;
    }
}

fn check_type(dt: &Datatype, rng: &mut Rng, case: usize) {
    let what = format!("case {case}: {dt:?}");
    let one = typemap(dt);
    let elems: Vec<(BasicType, i64)> = one
        .iter()
        .filter_map(|&(e, d)| if let Entry::Elem(t) = e { Some((t, d)) } else { None })
        .collect();

    // Size, element count, true bounds (exact, by the standard).
    let size: u64 = elems.iter().map(|&(t, _)| t.size() as u64).sum();
    assert_eq!(dt.size(), size, "{what}");
    assert_eq!(dt.elements_per_item(), elems.len() as u64, "{what}");
    if elems.is_empty() {
        assert_eq!((dt.true_lb(), dt.true_extent()), (0, 0), "{what}");
    } else {
        let lo = elems.iter().map(|&(_, d)| d).min().unwrap();
        let hi = elems.iter().map(|&(t, d)| d + t.size() as i64).max().unwrap();
        assert_eq!((dt.true_lb(), dt.true_ub()), (lo, hi), "{what}");
    }
    // Sticky markers fix the bounds; without them the data does.
    let lbs: Vec<i64> = one.iter().filter(|(e, _)| *e == Entry::LbMark).map(|&(_, d)| d).collect();
    let ubs: Vec<i64> = one.iter().filter(|(e, _)| *e == Entry::UbMark).map(|&(_, d)| d).collect();
    match lbs.iter().min() {
        Some(&m) => assert_eq!(dt.lb(), m, "{what}"),
        None if !elems.is_empty() => assert_eq!(dt.lb(), dt.true_lb(), "{what}"),
        None => {}
    }
    match ubs.iter().max() {
        Some(&m) => assert_eq!(dt.ub(), m, "{what}"),
        None if !elems.is_empty() => assert!(dt.ub() >= dt.true_ub(), "{what}"),
        None => {}
    }
    assert_eq!(dt.extent(), dt.ub() - dt.lb());

    // Uniform element and signature hash.
    let first = elems.first().map(|&(t, _)| t);
    let uniform = first.filter(|&f| elems.iter().all(|&(t, _)| t == f));
    assert_eq!(dt.uniform_element(), uniform, "{what}");
    // Mostly a few items; sometimes many, for the cursor's bulk paths.
    let count = if rng.chance(15) && dt.size() <= 200 { rng.range(4, 40) } else { rng.range(0, 3) } as u64;
    let map = elements(dt, count);
    let sig = map.iter().fold(Sig::EMPTY, |s, &(t, _)| s.concat(element(t)));
    assert_eq!(dt.signature_hash(count), sig.hash(), "{what}");
    let n = rng.range(0, map.len() as i64) as usize;
    let prefix = map[..n].iter().fold(Sig::EMPTY, |s, &(t, _)| s.concat(element(t)));
    assert_eq!(dt.signature_hash_of_elements(n as u64), Some(prefix.hash()), "{what}");

    // Element counting at every byte boundary.
    let mut boundaries = vec![0u64];
    for &(t, _) in &map {
        boundaries.push(boundaries.last().unwrap() + t.size() as u64);
    }
    let total = *boundaries.last().unwrap();
    for bytes in 0..=total.min(400) {
        let expect = boundaries.iter().position(|&b| b == bytes).map(|i| i as u64);
        assert_eq!(dt.elements_in(bytes), expect, "{what} bytes={bytes}");
    }
    for (i, &b) in boundaries.iter().enumerate().take(200) {
        assert_eq!(dt.bytes_of_elements(i as u64), Some(b), "{what} elements={i}");
    }

    // Pack: whole, then in random chunks from arbitrary offsets.
    let src = Buffer::covering(&map, |i| (i as u8).wrapping_mul(31).wrapping_add(7));
    let expect = reference_pack(&map, &src);
    assert_eq!(expect.len() as u64, count * dt.size());
    let mut out = vec![0u8; expect.len() + 8];
    let n = unsafe { pack(src.base(), count, dt, 0, &mut out) };
    assert_eq!(n, expect.len(), "{what}");
    assert_eq!(&out[..n], &expect[..], "{what}");
    let mut chunked = vec![0u8; expect.len()];
    let mut at = 0;
    while at < expect.len() {
        let len = rng.range(1, 13) as usize;
        let end = (at + len).min(expect.len());
        let got = unsafe { pack(src.base(), count, dt, at as u64, &mut chunked[at..end]) };
        assert_eq!(got, end - at, "{what}");
        at = end;
    }
    assert_eq!(chunked, expect, "{what}");

    // Cursor: seek anywhere, then the runs cover exactly the remaining bytes.
    if !expect.is_empty() {
        let byte_offsets: Vec<i64> =
            map.iter().flat_map(|&(t, d)| (0..t.size() as i64).map(move |k| d + k)).collect();
        for _ in 0..3 {
            let from = rng.range(0, expect.len() as i64) as usize;
            let mut c = dt.cursor(count);
            c.seek(from as u64);
            assert_eq!(c.position(), from as u64);
            let mut seen = Vec::new();
            let max = rng.range(1, 20) as usize;
            while let Some((off, len)) = c.next_run(max) {
                assert!(len > 0 && len <= max, "{what}");
                seen.extend((0..len as i64).map(|k| off + k));
            }
            assert_eq!(&seen[..], &byte_offsets[from..], "{what} from={from}");
            assert_eq!(c.position(), expect.len() as u64);
        }
        // Runs from a fresh cursor are maximal: no two consecutive runs
        // (with no length limit) are adjacent.
        let runs: Vec<(i64, usize)> = dt.cursor(count).collect();
        for w in runs.windows(2) {
            assert_ne!(w[0].0 + w[0].1 as i64, w[1].0, "{what}: unmerged runs {runs:?}");
        }
    }

    // Unpack: whole and chunked, against the reference (later entries win
    // where a type map overlaps itself).
    let mut want = Buffer::covering(&map, |_| 0);
    reference_unpack(&map, &expect, &mut want);
    let mut got = Buffer::covering(&map, |_| 0);
    let n = unsafe { unpack(got.base_mut(), count, dt, 0, &expect) };
    assert_eq!(n, expect.len());
    assert_eq!(got.bytes, want.bytes, "{what}");
    let mut got = Buffer::covering(&map, |_| 0);
    let mut at = 0;
    while at < expect.len() {
        let end = (at + rng.range(1, 9) as usize).min(expect.len());
        let used = unsafe { unpack(got.base_mut(), count, dt, at as u64, &expect[at..end]) };
        assert_eq!(used, end - at);
        at = end;
    }
    assert_eq!(got.bytes, want.bytes, "{what}");

    // Typed copy between two buffers of the same type.
    let mut dst = Buffer::covering(&map, |_| 0);
    let moved = unsafe { copy(src.base(), count, dt, dst.base_mut(), count, dt) };
    assert_eq!(moved, expect.len() as u64);
    assert_eq!(dst.bytes, want.bytes, "{what}");

    // External32 of the same elements, element by element.
    let ext_size = crate::external32_size(dt, count).unwrap() as usize;
    let mut ext = vec![0u8; ext_size];
    let n = unsafe { pack_external32(src.base(), count, dt, &mut ext) }.unwrap();
    assert_eq!(n, ext_size);
    let mut at = 0;
    for &(t, d) in &map {
        let es = t.external32_size();
        let bytes = src.at(d, t.size());
        let field = &ext[at..at + es];
        match t {
            BasicType::Long => assert_eq!(field, &bytes[..4].iter().rev().copied().collect::<Vec<u8>>()[..]),
            BasicType::CDoubleComplex => {
                let mut b = bytes.to_vec();
                b[..8].reverse();
                b[8..].reverse();
                assert_eq!(field, &b[..]);
            }
            _ => assert_eq!(field, &bytes.iter().rev().copied().collect::<Vec<u8>>()[..], "{what} {t:?}"),
        }
        at += es;
    }
    if !map.iter().any(|&(t, _)| t == BasicType::Long) {
        let mut back = Buffer::covering(&map, |_| 0);
        let used = unsafe { unpack_external32(back.base_mut(), count, dt, &ext) }.unwrap();
        assert_eq!(used, ext_size);
        assert_eq!(back.bytes, want.bytes, "{what}");
    }
}

#[test]
fn random_nested_types_match_the_reference() {
    let mut rng = Rng::new(0x5eed_0001);
    for case in 0..3000 {
        let depth = rng.range(1, 5) as u32;
        let dt = random_type(&mut rng, depth);
        check_type(&dt, &mut rng, case);
    }
}

#[test]
fn copy_between_different_layouts_of_one_signature() {
    // vector of doubles -> indexed doubles -> struct of doubles.
    let double = std::sync::Arc::new(Datatype::basic(BasicType::Double));
    let a = Datatype::vector(6, 2, 3, &double).unwrap();
    let b = Datatype::indexed(&[3, 1, 5, 3], &[20, 0, 9, 2], &double).unwrap();
    assert_eq!(a.size(), b.size());
    let src: Vec<f64> = (0..64).map(|i| i as f64).collect();
    let mut dst = vec![-1.0f64; 64];
    let n = unsafe { copy(src.as_ptr().cast(), 1, &a, dst.as_mut_ptr().cast(), 1, &b) };
    assert_eq!(n, 96);
    let sent: Vec<f64> = elements(&a, 1).iter().map(|&(_, d)| src[d as usize / 8]).collect();
    let got: Vec<f64> = elements(&b, 1).iter().map(|&(_, d)| dst[d as usize / 8]).collect();
    assert_eq!(sent, got);
    // Truncation to the smaller side.
    let mut dst = vec![-1.0f64; 64];
    let n = unsafe { copy(src.as_ptr().cast(), 1, &a, dst.as_mut_ptr().cast(), 1, &Datatype::contiguous(5, &double).unwrap()) };
    assert_eq!(n, 40);
    assert_eq!(&dst[..6], &[0.0, 1.0, 3.0, 4.0, 6.0, -1.0]);
}

#[test]
fn generator_stats() {
    let mut rng = Rng::new(0x5eed_0001);
    let mut combiners = std::collections::BTreeMap::new();
    let (mut nonempty, mut marks, mut negext, mut depth3, mut total_elems) = (0, 0, 0, 0, 0);
    for _ in 0..3000 {
        let depth = rng.range(1, 5) as u32;
        let dt = random_type(&mut rng, depth);
        *combiners.entry(dt.combiner().name()).or_insert(0) += 1;
        let tm = typemap(&dt);
        if dt.size() > 0 { nonempty += 1; }
        if tm.iter().any(|(e, _)| *e != Entry::Elem(BasicType::Char) && !matches!(e, Entry::Elem(_))) { marks += 1; }
        if dt.extent() < 0 { negext += 1; }
        if dt.loop_depth() >= 3 { depth3 += 1; }
        total_elems += dt.elements_per_item();
        let _ = rng.range(0, 3); // keep the stream roughly comparable
    }
    eprintln!("{combiners:?}\nnonempty={nonempty} with_markers={marks} negative_extent={negext} loop_depth>=3: {depth3} elements={total_elems}");
}

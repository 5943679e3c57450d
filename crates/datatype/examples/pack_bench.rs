//! Pack/unpack throughput of a few layouts.
//!
//! `CARGO_TARGET_DIR=... cargo run --release -p gridmpi-datatype --example pack_bench`
//!
//! Compare with MPICH on the same layouts: `probe/pack_bench.c`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use gridmpi_datatype::{pack, unpack, BasicType, Datatype, Order};

/// Best of `reps` runs of `f`, in seconds.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn report(name: &str, bytes: usize, elements: usize, secs: f64) {
    println!(
        "{name:<44} {:>8.2} ms  {:>7.2} GB/s  {:>6.2} ns/element",
        secs * 1e3,
        bytes as f64 / secs / 1e9,
        secs * 1e9 / elements as f64
    );
}

fn main() {
    let double = Arc::new(Datatype::basic(BasicType::Double));
    let n = 1_000_000usize;
    let src: Vec<f64> = (0..2 * n).map(|i| i as f64).collect();
    let mut packed = vec![0u8; 8 * n];
    let mut dst = vec![0f64; 2 * n];

    // Baseline: a hand-written strided gather loop.
    let secs = best(20, || {
        let out: &mut [f64] = bytemuck_cast(&mut packed);
        for i in 0..n {
            out[i] = src[2 * i];
        }
        black_box(&packed);
    });
    report("hand-written gather loop (1M doubles, stride 2)", 8 * n, n, secs);

    let v = Datatype::vector(n as i64, 1, 2, &double).unwrap();
    let secs = best(20, || {
        let k = unsafe { pack(src.as_ptr().cast(), 1, &v, 0, &mut packed) };
        assert_eq!(k, 8 * n);
        black_box(&packed);
    });
    report("pack vector(1M, 1, 2, double)", 8 * n, n, secs);
    let secs = best(20, || {
        unsafe { unpack(dst.as_mut_ptr().cast(), 1, &v, 0, &packed) };
        black_box(&dst);
    });
    report("unpack vector(1M, 1, 2, double)", 8 * n, n, secs);

    // Resumed in 64 KiB chunks through one cursor (a pipelined send).
    let secs = best(20, || {
        let mut c = v.cursor(1);
        let mut at = 0;
        while at < packed.len() {
            let end = (at + 65536).min(packed.len());
            at += unsafe { c.pack(src.as_ptr().cast(), &mut packed[at..end]) };
        }
        black_box(&packed);
    });
    report("pack vector(1M,1,2) in 64 KiB chunks", 8 * n, n, secs);

    // Blocks of 4 doubles (32-byte runs).
    let v4 = Datatype::vector((n / 4) as i64, 4, 8, &double).unwrap();
    let secs = best(20, || {
        unsafe { pack(src.as_ptr().cast(), 1, &v4, 0, &mut packed) };
        black_box(&packed);
    });
    report("pack vector(250k, 4, 8, double)", 8 * n, n, secs);

    // Long runs: 1000 rows of 1000 doubles.
    let rows = Datatype::vector(1000, 1000, 2000, &double).unwrap();
    let secs = best(20, || {
        unsafe { pack(src.as_ptr().cast(), 1, &rows, 0, &mut packed) };
        black_box(&packed);
    });
    report("pack vector(1000, 1000, 2000, double)", 8 * n, n, secs);

    // Contiguous: one memcpy.
    let contig = Datatype::contiguous(n as i64, &double).unwrap();
    let secs = best(20, || {
        unsafe { pack(src.as_ptr().cast(), 1, &contig, 0, &mut packed) };
        black_box(&packed);
    });
    report("pack contiguous(1M, double)", 8 * n, n, secs);

    // A 3-D subarray (100^3 block of a 200x100x100 array, inner rows of 100).
    let sub = Datatype::subarray(&[200, 100, 100], &[100, 100, 100], &[50, 0, 0], Order::C, &double).unwrap();
    let big: Vec<f64> = vec![1.0; 200 * 100 * 100];
    let secs = best(20, || {
        unsafe { pack(big.as_ptr().cast(), 1, &sub, 0, &mut packed) };
        black_box(&packed);
    });
    report("pack subarray 100x100x100 of 200x100x100", 8 * n, n, secs);

    // Building and packing an indexed type of a million irregular blocks.
    let blocklengths: Vec<i64> = (0..n as i64).map(|k| 1 + k % 3).collect();
    let displs: Vec<i64> = (0..n as i64).map(|k| 4 * k + (k % 2)).collect();
    let t = Instant::now();
    let ix = Datatype::indexed(&blocklengths, &displs, &double).unwrap();
    let build = t.elapsed().as_secs_f64();
    println!("{:<44} {:>8.2} ms", "build indexed with 1M blocks", build * 1e3);
    let big: Vec<f64> = vec![2.0; 4 * n + 8];
    let mut out = vec![0u8; ix.size() as usize];
    let secs = best(10, || {
        unsafe { pack(big.as_ptr().cast(), 1, &ix, 0, &mut out) };
        black_box(&out);
    });
    report("pack indexed, 1M blocks of 1-3 doubles", out.len(), out.len() / 8, secs);

    // A struct {int; double} (12 bytes of data in a 16-byte extent), 500k items.
    let int = Arc::new(Datatype::basic(BasicType::Int));
    let s = Datatype::create_struct(&[1, 1], &[0, 8], &[int, double.clone()]).unwrap();
    let secs = best(20, || {
        let k = unsafe { pack(src.as_ptr().cast(), 500_000, &s, 0, &mut packed) };
        assert_eq!(k, 6_000_000);
        black_box(&packed);
    });
    report("pack 500k struct{int; double}", 6_000_000, 1_000_000, secs);
}

/// Views a byte buffer as f64s (it was allocated from a Vec<u8>; the
/// gather loop writes through unaligned-safe element copies).
fn bytemuck_cast(bytes: &mut [u8]) -> &mut [f64] {
    let (head, body, _) = unsafe { bytes.align_to_mut::<f64>() };
    assert!(head.is_empty(), "allocation is 8-byte aligned");
    body
}

//! The test process checkpoints itself (with a few extra threads), and the
//! image decodes and describes it; gridmpi-restore refuses the same image
//! rewritten as if taken on another machine, or with a vDSO of another
//! size, saying why.

use gridmpi_checkpoint::image::{self, encode_header, HEADER_SIZE};
use gridmpi_checkpoint::{checkpoint, Outcome};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn an_image_of_this_process_decodes_and_a_foreign_machine_is_refused() {
    let dir = std::env::temp_dir().join(format!("gridmpi-ckpt-self-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("img");
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(31).wrapping_add(1);
                    std::hint::black_box(x);
                }
            })
        })
        .collect();
    let out = checkpoint(path.to_str().unwrap()).unwrap();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let Outcome::Checkpointed {
        bytes,
        regions,
        threads,
    } = out
    else {
        panic!("restarted?")
    };
    assert!(threads >= 4, "{threads} threads saved");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), bytes);

    let f = std::fs::File::open(&path).unwrap();
    let (h, m) = image::read_image(&f, "img").unwrap();
    assert_eq!(m.regions.len() as u32, regions);
    assert_eq!(m.threads.len() as u32, threads);
    assert_eq!(m.process.pid, std::process::id());
    assert_eq!(m.sigactions.len(), 64);
    // where the writer's frame is, and the restart word, are saved memory
    let inside = |a: u64| {
        m.regions
            .iter()
            .any(|r| r.start <= a && a < r.end && r.content_len > 0)
    };
    for t in &m.threads {
        assert!(
            inside(t.ucontext),
            "thread {}'s frame at {:#x} is not in saved memory",
            t.tid,
            t.ucontext
        );
        assert!(t.fs_base != 0);
    }
    assert!(inside(m.process.restarted_flag));
    assert!(m
        .regions
        .iter()
        .any(|r| r.name == b"[stack]" && r.flags & image::RFLAG_GROWSDOWN != 0));
    assert!(m
        .regions
        .iter()
        .any(|r| r.name == b"[vdso]" && r.kind == image::REGION_SPECIAL && r.content_len == 0));
    assert_eq!(
        m.process.cwd,
        std::env::current_dir()
            .unwrap()
            .as_os_str()
            .as_encoded_bytes()
    );
    // the data section is all there
    assert_eq!(h.data_offset + h.data_len, bytes);

    // The same image, as if taken where the XSAVE area is larger.
    let mut foreign = h.clone();
    foreign.machine.xsave_size += 64;
    let mut hb = [0u8; HEADER_SIZE];
    encode_header(&foreign, &mut hb);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..HEADER_SIZE].copy_from_slice(&hb);
    let fpath = dir.join("foreign");
    std::fs::write(&fpath, &bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gridmpi-restore"))
        .arg(&fpath)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let want = format!(
        "gridmpi-restore: image {} was taken on kernel {} with xsave size {}",
        fpath.display(),
        h.machine.kernel_str(),
        foreign.machine.xsave_size
    );
    assert!(err.starts_with(&want), "{err}");
    assert!(err.contains("XSAVE layout"), "{err}");

    // The same image with a vDSO one page larger than this kernel's: the
    // program's pointers into it would not fit this one.
    let mut m2 = m.clone();
    let v = m2.regions.iter_mut().find(|r| r.name == b"[vdso]").unwrap();
    let (vsize, vnew) = (v.end - v.start, v.end - v.start + 4096);
    v.start -= 4096;
    let mut mb = vec![0u8; h.meta_len as usize];
    let mut e = image::Enc::new(&mut mb);
    image::encode_meta(&m2, &mut e);
    assert_eq!(e.pos as u64, h.meta_len, "same numbers, same length");
    let mut h2 = h.clone();
    h2.meta_hash = gridmpi_checkpoint::hash::hash(&mb);
    encode_header(&h2, &mut hb);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..HEADER_SIZE].copy_from_slice(&hb);
    bytes[HEADER_SIZE..HEADER_SIZE + mb.len()].copy_from_slice(&mb);
    let vpath = dir.join("vdso");
    std::fs::write(&vpath, &bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gridmpi-restore"))
        .arg(&vpath)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "has a [vdso] of {vnew} bytes, this kernel's is {vsize} bytes"
        )),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

//! A Rust program across checkpoints (tests/checkpoint/run.sh): std
//! threads with channels, a HashMap, Rust's own stdout, the standard
//! library's alternate signal stack and thread-locals.
//!
//! rust_roundtrip IMAGE STEPS run|kill (as tests/checkpoint/single.c).

use gridmpi_checkpoint::{checkpoint, Outcome};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::mpsc;

thread_local! {
    static LOCAL: Cell<u64> = const { Cell::new(7) };
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: rust_roundtrip IMAGE STEPS run|kill");
        std::process::exit(2);
    }
    let steps: Vec<u32> = args[2]
        .split(',')
        .map(|s| s.parse().expect("a step number"))
        .collect();
    let kill = args[3] == "kill";
    // workers square what they are sent, with a thread-local twist
    let mut to_workers = Vec::new();
    let (back_tx, back_rx) = mpsc::channel::<(usize, u64)>();
    let mut handles = Vec::new();
    for w in 0..3usize {
        let (tx, rx) = mpsc::channel::<u64>();
        to_workers.push(tx);
        let back = back_tx.clone();
        handles.push(std::thread::spawn(move || {
            for v in rx {
                let t = LOCAL.with(|l| {
                    l.set(l.get().wrapping_mul(6364136223846793005).wrapping_add(v));
                    l.get()
                });
                back.send((w, v.wrapping_mul(v) ^ t)).unwrap();
            }
            LOCAL.with(|l| l.get())
        }));
    }
    drop(back_tx);
    let mut table: HashMap<u64, String> = HashMap::new();
    let mut acc = 0u64;
    for step in 0..25u32 {
        for (w, tx) in to_workers.iter().enumerate() {
            tx.send(acc.wrapping_add((step * 10 + w as u32) as u64))
                .unwrap();
        }
        let mut got = [0u64; 3];
        for _ in 0..3 {
            let (w, v) = back_rx.recv().unwrap();
            got[w] = v;
        }
        acc = got.iter().fold(acc, |a, v| a.rotate_left(7) ^ v);
        table.insert(acc % 1000, format!("s{step}"));
        println!(
            "step {step}: {:016x} {:016x} {:016x} acc {acc:016x} table {}",
            got[0],
            got[1],
            got[2],
            table.len()
        );
        if steps.contains(&step) {
            match checkpoint(&args[1]) {
                Ok(Outcome::Checkpointed { .. }) if kill => unsafe {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                },
                Ok(_) => {}
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(3);
                }
            }
        }
    }
    drop(to_workers);
    let locals: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    println!(
        "joined {:016x}; done",
        locals.iter().fold(0u64, |a, v| a ^ v)
    );
}

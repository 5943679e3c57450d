//! gridmpi-fuzz-smoke: every fuzz target over a few hundred thousand
//! inputs made by mutating valid encodings with a seeded PRNG. Stable Rust,
//! deterministic, a few seconds per target: the part of fuzzing `make test`
//! runs. The long runs are libFuzzer's (`make fuzz`, see ../README.md).
//!
//! ```text
//! gridmpi-fuzz-smoke [--inputs N] [--seed S] [TARGET...]   run (default: all targets)
//! gridmpi-fuzz-smoke --write-seeds DIR                      write seed corpora DIR/TARGET/seed-NN
//! ```
//!
//! An input that fails is saved under fuzz/artifacts/TARGET/ and can be
//! replayed with `cargo +nightly fuzz run TARGET FILE`.

mod mutate;

// gridmpirun is a binary crate: its link module (and the exit status type
// it carries) are compiled in here from their files.
#[allow(dead_code)]
#[path = "../../../crates/launcher/src/sys.rs"]
mod sys;

#[path = "../../../crates/launcher/src/link.rs"]
#[allow(dead_code)]
mod link;

use mutate::{mutate, Rng};
use std::panic;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A fuzz target: its name (as in fuzz/Cargo.toml), the function, its seeds.
struct Target {
    name: &'static str,
    run: fn(&[u8]),
    seeds: fn() -> Vec<Vec<u8>>,
}

const TARGETS: [Target; 4] = [
    Target { name: "wire_header", run: gridmpi_wire::fuzzing::header, seeds: gridmpi_wire::fuzzing::seeds },
    Target {
        name: "handshake",
        run: gridmpi_transport::tcp::handshake::fuzzing::handshake,
        seeds: gridmpi_transport::tcp::handshake::fuzzing::seeds,
    },
    Target { name: "pmi", run: gridmpi_pmi::fuzzing::pmi, seeds: gridmpi_pmi::fuzzing::seeds },
    Target { name: "launcher_link", run: link::fuzzing::link, seeds: link::fuzzing::seeds },
];

const DEFAULT_INPUTS: u64 = 250_000;

fn usage() -> ! {
    eprintln!("usage: gridmpi-fuzz-smoke [--inputs N] [--seed S] [TARGET...] | --write-seeds DIR");
    std::process::exit(2);
}

fn main() {
    let mut inputs = DEFAULT_INPUTS;
    let mut seed = 0x6772_6964_6d70_6921u64;
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--inputs" => inputs = args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
            "--seed" => seed = args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
            "--write-seeds" => {
                let dir = args.next().unwrap_or_else(|| usage());
                write_seeds(Path::new(&dir));
                return;
            }
            name if TARGETS.iter().any(|t| t.name == name) => names.push(name.to_string()),
            _ => usage(),
        }
    }
    let chosen: Vec<&Target> = TARGETS.iter().filter(|t| names.is_empty() || names.iter().any(|n| n == t.name)).collect();

    // Keep a failing input's panic message for the report instead of
    // printing one per input.
    let last_panic = Arc::new(Mutex::new(String::new()));
    let recorder = last_panic.clone();
    panic::set_hook(Box::new(move |info| {
        *recorder.lock().unwrap_or_else(|e| e.into_inner()) = info.to_string();
    }));

    let started = Instant::now();
    let mut total = 0u64;
    let mut failed = 0;
    for t in chosen {
        let t0 = Instant::now();
        match run_target(t, inputs, seed, &last_panic) {
            Ok(()) => println!("fuzz-smoke: {:<14} {inputs} inputs in {:.1} s, no failure", t.name, t0.elapsed().as_secs_f64()),
            Err(report) => {
                failed += 1;
                println!("fuzz-smoke: {:<14} FAILED: {report}", t.name);
            }
        }
        total += inputs;
    }
    println!("fuzz-smoke: {total} inputs in {:.1} s, {failed} target(s) failed", started.elapsed().as_secs_f64());
    if failed > 0 {
        std::process::exit(1);
    }
}

/// Run `t` over its seeds and `inputs` mutations of them; on the first
/// failure, save the input and describe it.
fn run_target(t: &Target, inputs: u64, seed: u64, last_panic: &Mutex<String>) -> Result<(), String> {
    let seeds = (t.seeds)();
    assert!(!seeds.is_empty(), "{} has no seeds", t.name);
    // Each target has its own sequence, so adding one changes no other.
    let mut rng = Rng::new(seed ^ fnv(t.name.as_bytes()));
    for i in 0..inputs {
        let input = if (i as usize) < seeds.len() {
            seeds[i as usize].clone()
        } else {
            let base = &seeds[rng.below(seeds.len())];
            mutate(&mut rng, base, &seeds)
        };
        if panic::catch_unwind(|| (t.run)(&input)).is_err() {
            let why = last_panic.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let saved = save_artifact(t.name, i, &input);
            return Err(format!(
                "input #{i} ({} bytes) {}\n  {why}\n  replay: cargo +nightly fuzz run {} {}",
                input.len(),
                saved.as_ref().map_or_else(|e| format!("(not saved: {e})"), |p| format!("saved to {}", p.display())),
                t.name,
                saved.map_or_else(|_| "FILE".into(), |p| p.display().to_string()),
            ));
        }
    }
    Ok(())
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// fuzz/artifacts/TARGET/smoke-INDEX, where cargo-fuzz keeps its own.
fn save_artifact(target: &str, index: u64, input: &[u8]) -> std::io::Result<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../artifacts").join(target);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("smoke-{index}"));
    std::fs::write(&path, input)?;
    Ok(path)
}

/// The seed corpora for libFuzzer: DIR/TARGET/seed-NN, one per seed.
fn write_seeds(dir: &Path) {
    for t in &TARGETS {
        let d = dir.join(t.name);
        let written = std::fs::create_dir_all(&d).and_then(|_| {
            for (i, s) in (t.seeds)().iter().enumerate() {
                std::fs::write(d.join(format!("seed-{i:02}")), s)?;
            }
            Ok(())
        });
        if let Err(e) = written {
            eprintln!("gridmpi-fuzz-smoke: cannot write seeds to {}: {e}", d.display());
            std::process::exit(1);
        }
    }
}

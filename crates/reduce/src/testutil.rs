//! Test helpers: compiling and running small C reference programs.

use std::io::Write;
use std::process::{Command, Stdio};

/// Compiles `source` with the system C compiler (`$CC`, else `cc`) and runs
/// it with `stdin`, returning its standard output. Returns `None` (and says
/// so on stderr) only when no C compiler can be started at all; a program
/// that fails to build or run fails the test.
pub(crate) fn run_c_program(name: &str, source: &str, stdin: &str) -> Option<String> {
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let dir = std::env::temp_dir().join(format!("gridmpi-reduce-{}-{}", std::process::id(), name));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = dir.join(format!("{name}.c"));
    let exe = dir.join(name);
    std::fs::write(&src, source).expect("write C source");
    let build = Command::new(&compiler)
        .args(["-O2", "-std=gnu11", "-o"])
        .arg(&exe)
        .arg(&src)
        .output();
    let build = match build {
        Ok(out) => out,
        Err(err) => {
            eprintln!("skipping C reference check `{name}`: cannot run `{compiler}`: {err}");
            let _ = std::fs::remove_dir_all(&dir);
            return None;
        }
    };
    assert!(
        build.status.success(),
        "C reference `{name}` failed to build:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let mut child = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run C reference");
    // Feed stdin from a thread so a large output cannot deadlock the pipe.
    let mut child_stdin = child.stdin.take().expect("stdin");
    let input = stdin.to_owned();
    let feeder = std::thread::spawn(move || child_stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("C reference output");
    feeder.join().expect("feeder").expect("write stdin");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "C reference `{name}` failed: {:?}",
        out.status
    );
    Some(String::from_utf8(out.stdout).expect("utf-8 output"))
}

/// A deterministic xorshift64 generator for test data.
pub(crate) fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

//! `gridmpi-checkpoint PID`: ask the gridmpirun whose process id is PID
//! for a checkpoint of its job (docs/checkpoint.md).
//!
//! It sends SIGQUIT, which a gridmpirun started with `--checkpoint-dir` or
//! `--restart` takes as a checkpoint request; how the checkpoint went is
//! on that gridmpirun's stderr. Any other process, a gridmpirun without
//! checkpointing included, would die of SIGQUIT, so PID's executable and
//! command line are checked first. Exit status: 0 asked, 1 not (and why),
//! 2 usage.

use std::path::Path;

const USAGE: &str = "usage: gridmpi-checkpoint PID\n\
    \n\
    Asks gridmpirun (process PID) for a checkpoint of its job, which it must have been\n\
    started with --checkpoint-dir DIR or --restart DIR to take (sends it SIGQUIT).\n";

/// The options that make a gridmpirun checkpoint its job.
const CHECKPOINT_OPTIONS: &[&str] = &["--checkpoint-dir", "-checkpoint-dir", "--restart", "-restart"];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pid = match args.as_slice() {
        [a] if a == "-h" || a == "--help" => {
            print!("{USAGE}");
            std::process::exit(0);
        }
        [a] => match a.parse::<i32>() {
            Ok(pid) if pid > 0 => pid,
            _ => usage_error(&format!("{a:?} is not a process id")),
        },
        _ => usage_error("one process id, gridmpirun's"),
    };
    if let Err(e) = ask(pid) {
        eprintln!("gridmpi-checkpoint: {e}");
        std::process::exit(1);
    }
}

fn usage_error(what: &str) -> ! {
    eprint!("gridmpi-checkpoint: {what}\n{USAGE}");
    std::process::exit(2);
}

/// Check that `pid` is a checkpointed job's gridmpirun, and send it SIGQUIT.
fn ask(pid: i32) -> Result<(), String> {
    let proc_dir = format!("/proc/{pid}");
    if !Path::new(&proc_dir).exists() {
        return Err(format!("there is no process {pid}"));
    }
    let exe = std::fs::read_link(format!("{proc_dir}/exe"))
        .map_err(|e| format!("cannot see which program process {pid} runs ({proc_dir}/exe: {e}); is it yours?"))?;
    if !is_gridmpirun(&exe) {
        return Err(format!("process {pid} runs {}, not gridmpirun: SIGQUIT would not ask it for a checkpoint", exe.display()));
    }
    let cmdline = std::fs::read(format!("{proc_dir}/cmdline")).map_err(|e| format!("cannot read {proc_dir}/cmdline: {e}"))?;
    let args: Vec<String> = cmdline.split(|&b| b == 0).skip(1).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    if !checkpointed(&args) {
        return Err(format!(
            "gridmpirun {pid} was started without --checkpoint-dir or --restart: its job cannot be checkpointed (and SIGQUIT would kill it)"
        ));
    }
    // SAFETY: plain syscall.
    if unsafe { libc::kill(pid, libc::SIGQUIT) } != 0 {
        return Err(format!("cannot signal process {pid}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Whether `exe` (a process's `/proc/PID/exe`) is gridmpirun; mpiexec and
/// mpirun are links to it, which the kernel resolved. A gridmpirun
/// reinstalled while it ran shows as `gridmpirun (deleted)`.
fn is_gridmpirun(exe: &Path) -> bool {
    let name = exe.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_suffix(" (deleted)").unwrap_or(&name) == "gridmpirun"
}

/// Whether gridmpirun's arguments make it checkpoint its job.
fn checkpointed(args: &[String]) -> bool {
    args.iter().any(|a| {
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        CHECKPOINT_OPTIONS.contains(&name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_checkpointed_gridmpirun_is_asked() {
        assert!(is_gridmpirun(Path::new("/opt/gridmpi/bin/gridmpirun")));
        assert!(is_gridmpirun(Path::new("/x/build/bin/gridmpirun (deleted)")));
        assert!(!is_gridmpirun(Path::new("/usr/bin/mpirun")));
        assert!(!is_gridmpirun(Path::new("/usr/bin/python3")));
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert!(checkpointed(&args("-n 4 --checkpoint-dir /ck ./prog")));
        assert!(checkpointed(&args("--checkpoint-dir=/ck -n 4 ./prog")));
        assert!(checkpointed(&args("--restart /ck -hosts a,b")));
        assert!(!checkpointed(&args("-n 4 ./prog --checkpoint-interval")));
        assert!(!checkpointed(&args("-n 4 ./prog")));
    }

    #[test]
    fn a_missing_or_foreign_process_is_not_signalled() {
        assert!(ask(i32::MAX).unwrap_err().contains("there is no process"));
        // This test process: not gridmpirun.
        let e = ask(std::process::id() as i32).unwrap_err();
        assert!(e.contains("not gridmpirun"), "{e}");
    }
}

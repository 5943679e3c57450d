//! Real jobs through the real launcher. The ranks are `gridmpirun
//! --pmi-check` (a PMI client that puts, fences, gets and checks, and can
//! misbehave on request), shell commands, and, when MPICH is installed in
//! /opt/peers/mpich, a C program built with MPICH's own mpicc.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const G: &str = env!("CARGO_BIN_EXE_gridmpirun");
const MPICH: &str = "/opt/peers/mpich/bin";

fn gridmpirun(args: &[&str]) -> Command {
    let mut c = Command::new(G);
    c.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Settings of whoever runs the tests must not leak in.
    c.env_remove("GRIDMPI_LAUNCHER").env_remove("GRIDMPI_HOSTFILE").env_remove("PMI_VERSION");
    // Nor the allocation they may run in (its nodes would be used).
    for v in ["SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_NNODES", "SLURM_TASKS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE", "PBS_NODEFILE"] {
        c.env_remove(v);
    }
    c
}

/// The repository's `make build` output, when it has been built.
fn built() -> Option<PathBuf> {
    let build = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../build").canonicalize().ok()?;
    (build.join("bin/mpicc").exists() && build.join("lib/libmpi.so").exists()).then_some(build)
}

/// Wait for a child, killing it if it takes longer than `limit`.
fn finish(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    // Drain pipes in threads so a chatty job cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let s = child.wait().unwrap();
            panic!("job did not finish within {limit:?} ({s:?}); stderr: {}", String::from_utf8_lossy(&t_err.join().unwrap()));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output { status, stdout: t_out.join().unwrap(), stderr: t_err.join().unwrap() }
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = finish(cmd.spawn().expect("start gridmpirun"), Duration::from_secs(60));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok_lines(stdout: &str) -> usize {
    stdout.lines().filter(|l| l.contains("pmi-check: rank") && l.contains(" ok (")).count()
}

/// A directory of the test's own, removed when the test ends (passed or
/// not: nothing of a test outlives it).
struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir(name: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("gridmpirun-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

/// A launch agent that runs the command here, with an empty environment
/// (so what reaches the ranks must have been passed explicitly).
fn fake_agent(dir: &Path) -> PathBuf {
    let p = dir.join("fake-agent");
    std::fs::write(&p, "#!/bin/sh\n# fake launch agent: HOST COMMAND...\nshift\nexec env -i PATH=\"$PATH\" \"$@\"\n").unwrap();
    Command::new("chmod").arg("+x").arg(&p).status().unwrap();
    p
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(marker) && pid != std::process::id() {
                found.push(pid);
            }
        }
    }
    found
}

#[test]
fn put_fence_get_from_1_to_8_ranks() {
    for n in [1, 2, 3, 5, 8] {
        let (code, out, err) = run(gridmpirun(&["-n", &n.to_string(), G, "--pmi-check"]).env_remove("GRIDMPI_PMI_VERSION"));
        assert_eq!(code, 0, "n={n}: {err}");
        assert_eq!(ok_lines(&out), n, "n={n}: {out}");
        assert!(out.contains("PMI-1"), "{out}");
    }
}

#[test]
fn pmi2_clients_are_served_too() {
    let (code, out, err) = run(&mut gridmpirun(&["-n", "4", "-genv", "GRIDMPI_PMI_VERSION", "2", G, "--pmi-check"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(ok_lines(&out), 4);
    assert_eq!(out.matches("PMI-2").count(), 4, "{out}");
}

#[test]
fn abort_names_the_rank_and_sets_the_exit_code() {
    let (code, _out, err) = run(&mut gridmpirun(&["-n", "4", G, "--pmi-check", "abort=7@2"]));
    assert_eq!(code, 7, "{err}");
    assert!(
        err.contains("gridmpirun: rank 2 (pid ") && err.contains("aborted the job with exit code 7: pmi-check: rank 2 aborts as asked"),
        "{err}"
    );
    assert_eq!(err.matches("gridmpirun:").count(), 1, "one message, not one per killed rank: {err}");
}

#[test]
fn a_rank_killed_by_a_signal_ends_the_job() {
    let (code, _out, err) = run(&mut gridmpirun(&["-n", "3", G, "--pmi-check", "signal=11@1", "sleep=30@0", "sleep=30@2"]));
    assert_eq!(code, 128 + 11, "{err}");
    assert!(err.contains("rank 1 (pid ") && err.contains("was killed by signal 11 (SIGSEGV); killing the job"), "{err}");
}

/// `--with-ft ulfm`: rank 1 dies after PMI init; ranks 0 and 2 get the
/// failure notice (blocked since they started), ask who failed, meet in a
/// barrier without rank 1 and finalize; the job succeeds.
#[test]
fn a_fault_tolerant_job_goes_on_without_a_killed_rank() {
    let (code, out, err) = run(&mut gridmpirun(&["--with-ft", "ulfm", "-n", "3", G, "--pmi-check", "signal=9@1", "ft=30"]));
    assert_eq!(code, 0, "the survivors finalized and exited 0: {out}{err}");
    assert!(
        err.contains("gridmpirun: rank 1 (pid ")
            && err.contains("was killed by signal 9 (SIGKILL); the job goes on without it (--with-ft ulfm)"),
        "{err}"
    );
    assert_eq!(err.matches("gridmpirun:").count(), 1, "one note: {err}");
    for rank in [0, 2] {
        assert!(out.contains(&format!("pmi-check: rank {rank}: failed ranks: 1\n")), "{out}");
        assert!(out.contains(&format!("pmi-check: rank {rank}: the survivors met\n")), "{out}");
    }
    assert!(!out.contains("rank 1: failed ranks"), "{out}");
}

/// The same program without `--with-ft`: the rank's death ends the job.
#[test]
fn without_ft_a_killed_rank_still_ends_the_job() {
    let (code, out, err) = run(&mut gridmpirun(&["-n", "3", G, "--pmi-check", "signal=9@1", "ft=30"]));
    assert_eq!(code, 128 + 9, "{out}{err}");
    assert!(err.contains("rank 1 (pid ") && err.contains("was killed by signal 9 (SIGKILL); killing the job"), "{err}");
    assert!(!out.contains("failed ranks"), "{out}");
}

/// `--with-ft ulfm` across hosts: the variable and the blocked signal
/// reach ranks behind a launch agent, a rank that exits before
/// MPI_Finalize there is a failure, the notice reaches the survivors
/// through each host's proxy (which does not take it as the job's end),
/// and a survivor's nonzero exit code is the job's.
#[test]
fn a_fault_tolerant_job_spans_hosts() {
    let dir = tempdir("ft-hosts");
    let agent = fake_agent(&dir);
    let agent = agent.to_str().unwrap();
    let (code, out, err) = run(&mut gridmpirun(&[
        "--with-ft", "ulfm", "--launcher", agent, "-hosts", "fakeA:2,localhost:2", "-n", "4",
        G, "--pmi-check", "exit-early=5@1", "ft=30", "exit=3@3",
    ]));
    assert_eq!(code, 3, "rank 3's exit code after MPI_Finalize: {out}{err}");
    assert!(
        err.contains("rank 1 (pid ") && err.contains("on host fakeA) exited with code 5 before MPI_Finalize; the job goes on without it (--with-ft ulfm)"),
        "{err}"
    );
    for rank in [0, 2, 3] {
        assert!(out.contains(&format!("pmi-check: rank {rank}: failed ranks: 1\n")), "{out}");
        assert!(out.contains(&format!("pmi-check: rank {rank}: the survivors met\n")), "{out}");
    }
}

/// `--with-ft ulfm`: a host lost (its proxy killed outright, taking its
/// rank with it) fails the ranks that ran there, and the job goes on.
#[test]
fn a_fault_tolerant_job_outlives_a_lost_host() {
    let dir = tempdir("ft-lost-host");
    // The fake agent, noting its pid: it becomes the host's proxy.
    let agent = dir.join("agent-noting-pid");
    let pid_file = dir.join("proxy.pid");
    let script = format!("#!/bin/sh\nshift\necho $$ > {}\nexec env -i PATH=\"$PATH\" \"$@\"\n", pid_file.display());
    std::fs::write(&agent, script).unwrap();
    Command::new("chmod").arg("+x").arg(&agent).status().unwrap();
    let mut child = gridmpirun(&[
        "--with-ft", "ulfm", "--launcher", agent.to_str().unwrap(), "-hosts", "fakeL:1,localhost:2", "-n", "3",
        G, "--pmi-check", "sleep=3605@0", "ft=30",
    ])
    .spawn()
    .unwrap();
    let seen = wait_for_ok_lines(&mut child, 3);
    let proxy: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    // SAFETY: signalling the proxy our job started.
    unsafe { libc::kill(proxy, libc::SIGKILL) };
    let done = finish(child, Duration::from_secs(30));
    let (out, err) = (seen + &String::from_utf8_lossy(&done.stdout), String::from_utf8_lossy(&done.stderr).into_owned());
    assert_eq!(done.status.code(), Some(0), "the survivors finalized and exited 0: {out}{err}");
    assert!(err.contains("rank 0 (pid ") && err.contains("on host fakeL) was lost with its host"), "{err}");
    assert!(err.contains("the job goes on without it (--with-ft ulfm)"), "{err}");
    assert_eq!(err.matches("the job goes on without it").count(), 1, "once, though the link and the agent both end: {err}");
    for rank in [1, 2] {
        assert!(out.contains(&format!("pmi-check: rank {rank}: failed ranks: 0\n")), "{out}");
        assert!(out.contains(&format!("pmi-check: rank {rank}: the survivors met\n")), "{out}");
    }
}

/// A fault-tolerant job in which every rank failed did not succeed.
#[test]
fn a_fault_tolerant_job_without_survivors_fails() {
    let (code, _out, err) = run(&mut gridmpirun(&["--with-ft", "ulfm", "-n", "2", G, "--pmi-check", "exit-early=4"]));
    assert_eq!(code, 4, "{err}");
    assert_eq!(err.matches("the job goes on without it").count(), 2, "{err}");
    // Programs that never start MPI: exiting 0 is no failure, as in any job.
    let (code, _, err) = run(&mut gridmpirun(&["--with-ft", "ulfm", "-n", "2", "sh", "-c", "exit 0"]));
    assert_eq!((code, err.as_str()), (0, ""));
    let (code, _, err) = run(&mut gridmpirun(&["--with-ft", "ulfm", "-n", "2", "sh", "-c", "exit $((PMI_RANK + 5))"]));
    assert!(code == 5 || code == 6, "{code} {err}");
    assert!(err.contains("exited with code 5; the job goes on without it (--with-ft ulfm)"), "{err}");
}

#[test]
fn exit_before_finalize_ends_the_job() {
    let (code, _out, err) = run(&mut gridmpirun(&["-n", "3", G, "--pmi-check", "exit-early=3@1", "sleep=30@0", "sleep=30@2"]));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("rank 1 (pid ") && err.contains("exited with code 3 before MPI_Finalize; killing the job"), "{err}");
}

#[test]
fn exit_codes_after_finalize_are_passed_on() {
    let (code, out, err) = run(&mut gridmpirun(&["-n", "3", G, "--pmi-check", "exit=4@2"]));
    assert_eq!(code, 4, "{err}");
    assert_eq!(ok_lines(&out), 3);
    assert!(!err.contains("killing"), "{err}");
    let (code, _, _) = run(&mut gridmpirun(&["-n", "2", "sh", "-c", "exit 0"]));
    assert_eq!(code, 0);
    let (code, _, err) = run(&mut gridmpirun(&["-n", "2", "sh", "-c", "exit $((PMI_RANK + 5))"]));
    assert!(code == 5 || code == 6, "{code} {err}");
}

#[test]
fn missing_program() {
    let (code, _, err) = run(&mut gridmpirun(&["-n", "2", "/no/such/program"]));
    assert_eq!(code, 127);
    assert!(err.contains("cannot start rank") && err.contains("/no/such/program: command not found"), "{err}");
}

#[test]
fn tag_output_keeps_lines_whole() {
    let (code, out, err) = run(&mut gridmpirun(&["-n", "4", "--tag-output", G, "--pmi-check", "lines=200"]));
    assert_eq!(code, 0, "{err}");
    let mut counts = [0; 4];
    for line in out.lines() {
        let (tag, rest) = line.split_once("] ").unwrap_or_else(|| panic!("untagged line {line:?}"));
        let rank: usize = tag.trim_start_matches('[').parse().unwrap();
        if rest.starts_with("rank ") {
            assert_eq!(rest, format!("rank {rank} line {} of 200", counts[rank]), "mangled line {line:?}");
            counts[rank] += 1;
        } else {
            assert!(rest.starts_with(&format!("pmi-check: rank {rank} of 4 ok")), "{line:?}");
        }
    }
    assert_eq!(counts, [200; 4]);
}

#[test]
fn stdin_goes_to_rank_0() {
    let mut child = gridmpirun(&["-n", "3", G, "--pmi-check", "stdin@0"]).stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"first line\nsecond line\n").unwrap();
    drop(stdin);
    let out = finish(child, Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.matches("first line\nsecond line\n").count(), 1, "{text}");
    assert_eq!(ok_lines(&text), 3);
}

fn wait_for_ok_lines(child: &mut Child, n: usize) -> String {
    let mut out = child.stdout.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while ok_lines(&seen) < n {
        let k = out.read(&mut buf).unwrap();
        assert!(k > 0, "job ended early: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..k]));
    }
    child.stdout = Some(out);
    seen
}

fn teardown_leaves_nothing(args: &[&str], marker: &str, n: usize, sig: i32) {
    let mut child = gridmpirun(args).spawn().unwrap();
    wait_for_ok_lines(&mut child, n);
    assert!(processes_with(marker).len() >= n, "ranks are running");
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as i32, sig) };
    let out = finish(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(128 + sig), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("caught SIG"), "{}", String::from_utf8_lossy(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_with(marker).is_empty() {
        assert!(Instant::now() < deadline, "left behind: {:?}", processes_with(marker));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_tears_every_rank_down() {
    teardown_leaves_nothing(&["-n", "4", G, "--pmi-check", "sleep=3601"], "sleep=3601", 4, libc::SIGTERM);
}

#[test]
fn sigint_tears_remote_ranks_down_too() {
    let dir = tempdir("sigint");
    let agent = fake_agent(&dir);
    let agent = agent.to_str().unwrap();
    teardown_leaves_nothing(
        &["--launcher", agent, "-hosts", "fakeA:2,localhost:1,fakeB", "-n", "5", G, "--pmi-check", "sleep=3602"],
        "sleep=3602",
        5,
        libc::SIGINT,
    );
}

#[test]
fn ranks_die_with_a_killed_launcher() {
    // kill -9 gives the launcher no chance to tear anything down: the
    // ranks, local and behind a launch agent, must go by themselves.
    let dir = tempdir("sigkill");
    let agent = fake_agent(&dir);
    let mut child = gridmpirun(&["--launcher", agent.to_str().unwrap(), "-hosts", "localhost:2,fakeC:2", "-n", "4", G, "--pmi-check", "sleep=3603"])
        .spawn()
        .unwrap();
    wait_for_ok_lines(&mut child, 4);
    assert!(processes_with("sleep=3603").len() >= 4, "ranks are running");
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_with("sleep=3603").is_empty() {
        assert!(Instant::now() < deadline, "left behind: {:?}", processes_with("sleep=3603"));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn shared_memory_files_left_by_ranks_are_removed() {
    // Ranks that die before unlinking their /dev/shm files (an exit right
    // after MPI_Init, a crash) must not leave them behind: the launcher
    // names them (GRIDMPI_SHM_PREFIX) and removes the rest, here and, through
    // the proxy, on hosts behind a launch agent.
    let dir = tempdir("shm");
    let agent = fake_agent(&dir);
    let script = "touch /dev/shm/$GRIDMPI_SHM_PREFIX-left-$PMI_RANK && echo prefix=$GRIDMPI_SHM_PREFIX";
    let (code, out, err) = run(&mut gridmpirun(&["--launcher", agent.to_str().unwrap(), "-hosts", "localhost:1,fakeD:1", "-n", "2", "sh", "-c", script]));
    assert_eq!(code, 0, "{err}");
    let prefixes: Vec<&str> = out.lines().filter_map(|l| l.split("prefix=").nth(1)).collect();
    assert_eq!(prefixes.len(), 2, "{out}");
    assert!(prefixes[0].starts_with("gridmpi-") && prefixes[0] == prefixes[1], "{out}");
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefixes[0]))
        .collect();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}

#[test]
fn hostfile_and_launch_agent() {
    let dir = tempdir("hostfile");
    let agent = fake_agent(&dir);
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, "# two fake hosts and this one\nfakeA slots=2\nfakeB:2\nlocalhost\n").unwrap();
    let (code, out, err) = run(gridmpirun(&[
        "-f",
        hostfile.to_str().unwrap(),
        "--launcher",
        agent.to_str().unwrap(),
        "--tag-output",
        "-genv",
        "FROM_GENV",
        "g1",
        "-x",
        "FROM_X=x1",
        "sh",
        "-c",
        "echo rank=$PMI_RANK size=$PMI_SIZE genv=$FROM_GENV x=$FROM_X debug=$GRIDMPI_DEBUG local=$MPI_LOCALRANKID/$MPI_LOCALNRANKS",
    ])
    .env("GRIDMPI_DEBUG", "pmi"));
    assert_eq!(code, 0, "{err}");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        vec![
            "[0] rank=0 size=5 genv=g1 x=x1 debug=pmi local=0/2",
            "[1] rank=1 size=5 genv=g1 x=x1 debug=pmi local=1/2",
            "[2] rank=2 size=5 genv=g1 x=x1 debug=pmi local=0/2",
            "[3] rank=3 size=5 genv=g1 x=x1 debug=pmi local=1/2",
            "[4] rank=4 size=5 genv=g1 x=x1 debug=pmi local=0/1",
        ]
    );
    // PMI through the proxies, and an abort on a remote host.
    let (code, out, err) = run(&mut gridmpirun(&[
        "-f",
        hostfile.to_str().unwrap(),
        "--launcher",
        agent.to_str().unwrap(),
        "-n",
        "6",
        G,
        "--pmi-check",
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(ok_lines(&out), 6);
    let (code, _, err) = run(&mut gridmpirun(&[
        "-f",
        hostfile.to_str().unwrap(),
        "--launcher",
        agent.to_str().unwrap(),
        G,
        "--pmi-check",
        "abort=5@3",
    ]));
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("rank 3 (pid ") && err.contains("on host fakeB) aborted the job with exit code 5"), "{err}");
}

#[test]
fn a_failing_launch_agent_is_reported() {
    let (code, _, err) = run(&mut gridmpirun(&["--launcher", "false", "-hosts", "fakeA", "-n", "2", G, "--pmi-check"]));
    assert_ne!(code, 0);
    assert!(err.contains("fakeA"), "{err}");
}

#[test]
fn info_lists_settings_and_sources() {
    let (code, out, _) = run(gridmpirun(&["--info"]).env("GRIDMPI_KILL_GRACE", "1s"));
    assert_eq!(code, 0);
    let line = out.lines().find(|l| l.starts_with("GRIDMPI_KILL_GRACE")).expect("listed");
    assert!(line.contains("1s") && line.contains("environment"), "{line}");
    assert!(out.contains("GRIDMPI_LAUNCHER"));
    let (code, _, err) = run(gridmpirun(&["-n", "1", "true"]).env("GRIDMPI_KILL_GRACE", "soon"));
    assert_eq!(code, 1);
    assert!(err.contains("GRIDMPI_KILL_GRACE"), "{err}");
}

/// MPICH's own client library against our PMI server.
#[test]
fn mpich_program_runs_under_gridmpirun() {
    let mpicc = Path::new(MPICH).join("mpicc");
    if !mpicc.exists() {
        eprintln!("skipped: {} not installed", mpicc.display());
        return;
    }
    let dir = tempdir("mpich");
    let src = dir.join("allreduce.c");
    std::fs::write(
        &src,
        r#"#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0, one;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    one = rank + 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d: sum %d\n", rank, size, sum);
    MPI_Finalize();
    return sum == size * (size + 1) / 2 ? 0 : 1;
}
"#,
    )
    .unwrap();
    let exe = dir.join("allreduce");
    let st = Command::new(&mpicc).arg(&src).arg("-o").arg(&exe).status().unwrap();
    assert!(st.success(), "mpicc failed");
    let exe = exe.to_str().unwrap();
    let (code, out, err) = run(&mut gridmpirun(&["-n", "4", exe]));
    assert_eq!(code, 0, "{err}");
    for r in 0..4 {
        assert!(out.contains(&format!("rank {r} of 4: sum 10")), "{out}");
    }
    // Two "hosts": MPICH exchanges its addresses through our KVS.
    let agent = fake_agent(&dir);
    let (code, out, err) =
        run(&mut gridmpirun(&["--launcher", agent.to_str().unwrap(), "-hosts", "fakeA:2,fakeB:2", "-n", "4", exe]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("of 4: sum 10").count(), 4, "{out}");
}

/// MPICH's own MPI_Comm_spawn under gridmpirun: its PMI-1 spawn request,
/// the children started by a nested gridmpirun with the parent's port in
/// their key-value space and PMI_SPAWNED=1; a spawn that cannot start is an
/// error the program gets back.
#[test]
fn mpich_spawn_under_gridmpirun() {
    let mpicc = Path::new(MPICH).join("mpicc");
    if !mpicc.exists() {
        eprintln!("skipped: {} not installed", mpicc.display());
        return;
    }
    let dir = tempdir("mpich-spawn");
    let src = dir.join("spawn.c");
    std::fs::write(
        &src,
        r#"#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Comm parent, inter;
    int rank, size, errs[3];
    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        int token;
        if (parent == MPI_COMM_NULL) { printf("child %d: no parent\n", rank); MPI_Finalize(); return 1; }
        MPI_Recv(&token, 1, MPI_INT, 0, 0, parent, MPI_STATUS_IGNORE);
        token += rank;
        MPI_Send(&token, 1, MPI_INT, 0, 1, parent);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "missing") == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Comm_spawn("/nonexistent/program", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errs);
        printf("rank %d: %s\n", rank, rc == MPI_SUCCESS ? "spawned a missing program" : "spawn failed");
        MPI_Finalize();
        return rc == MPI_SUCCESS;
    }
    char *cargv[] = {"child", NULL};
    MPI_Comm_spawn(argv[0], cargv, 3, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errs);
    if (rank == 0) {
        int sum = 0, x, token = 42;
        for (int i = 0; i < 3; i++) MPI_Send(&token, 1, MPI_INT, i, 0, inter);
        for (int i = 0; i < 3; i++) { MPI_Recv(&x, 1, MPI_INT, i, 1, inter, MPI_STATUS_IGNORE); sum += x; }
        printf("parent: sum %d\n", sum);
    }
    MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.join("spawn");
    let st = Command::new(&mpicc).arg(&src).arg("-o").arg(&exe).status().unwrap();
    assert!(st.success(), "mpicc failed");
    let exe = exe.to_str().unwrap();
    for n in ["1", "2"] {
        let (code, out, err) = run(&mut gridmpirun(&["-hosts", "localhost:8", "-n", n, exe]));
        assert_eq!(code, 0, "-n {n}: {out}{err}");
        assert!(out.contains("parent: sum 129"), "-n {n}: {out}{err}");
        assert!(!err.contains("oversubscribed"), "{err}");
    }
    let (code, out, err) = run(&mut gridmpirun(&["-n", "2", exe, "missing"]));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.matches("spawn failed").count(), 2, "{out}{err}");
    assert!(err.contains("/nonexistent/program: command not found"), "{err}");
}

/// Our client against MPICH's launcher (hydra), PMI-1 and PMI-2, over an
/// inherited socket and over PMI_PORT.
#[test]
fn our_client_under_mpich_hydra() {
    let mpiexec = Path::new(MPICH).join("mpiexec");
    if !mpiexec.exists() {
        eprintln!("skipped: {} not installed", mpiexec.display());
        return;
    }
    for (extra, version) in [
        (vec![], "PMI-1"),
        (vec!["-genv", "PMI_VERSION", "2"], "PMI-2"),
        (vec!["-pmi-port"], "PMI-1"),
        (vec!["-pmi-port", "-genv", "PMI_VERSION", "2"], "PMI-2"),
    ] {
        let mut cmd = Command::new(&mpiexec);
        cmd.args(&extra).args(["-n", "4", G, "--pmi-check"]);
        cmd.env_remove("PMI_VERSION").env_remove("GRIDMPI_PMI_VERSION");
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let (code, out, err) = run(&mut cmd);
        assert_eq!(code, 0, "{extra:?}: {err}");
        assert_eq!(ok_lines(&out), 4, "{extra:?}: {out}");
        assert_eq!(out.matches(version).count(), 4, "{extra:?}: {out}");
    }
    let (code, _, _) = run(Command::new(&mpiexec).args(["-n", "3", G, "--pmi-check", "abort=6@1"]).stdout(Stdio::piped()).stderr(Stdio::piped()));
    assert_eq!(code, 6);
    // Under another launcher's PMI our client refuses to spawn, at once.
    for extra in [vec![], vec!["-genv", "PMI_VERSION", "2"]] {
        let mut cmd = Command::new(&mpiexec);
        cmd.args(&extra).args(["-n", "1", G, "--pmi-check", "spawn=1"]).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.env("GRIDMPI_SPAWN_SERVER", "kvs_1_0"); // inherited from a gridmpirun rank, say: not this job's
        let (code, out, err) = run(&mut cmd);
        assert_eq!(code, 0, "{extra:?}: {err}");
        assert!(out.contains("could not spawn: MPI_Comm_spawn needs gridmpirun: "), "{extra:?}: {out}");
    }
}

/// Our client's spawn through gridmpirun, in both PMI versions: the new
/// job's ranks run (their own exchange), the parent's rank goes on.
#[test]
fn our_client_spawns_through_gridmpirun() {
    for version in ["1", "2"] {
        let (code, out, err) = run(&mut gridmpirun(&["-genv", "GRIDMPI_PMI_VERSION", version, "-hosts", "localhost:4", "-n", "2", G, "--pmi-check", "spawn=2@1"]));
        assert_eq!(code, 0, "PMI-{version}: {out}{err}");
        assert!(out.contains("pmi-check: rank 1 spawned 2"), "{out}");
        assert_eq!(out.matches("of 2 ok (PMI-").count(), 4, "two ranks and two spawned: {out}");
        assert!(!err.contains("oversubscribed"), "{err}");
    }
    // On other hosts (through the launch agent), on the slots the job does
    // not use: the new job's ranks on fakeB.
    let dir = tempdir("spawn-remote");
    let agent = fake_agent(&dir);
    let (code, out, err) = run(&mut gridmpirun(&["-v", "--launcher", agent.to_str().unwrap(), "-hosts", "fakeA:1,fakeB:2", "-n", "1", G, "--pmi-check", "spawn=2"]));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.matches("of 2 ok (PMI-").count(), 2, "{out}{err}");
    assert!(err.contains("gridmpirun (spawned job): starting ranks 0-1 on fakeB via:"), "{err}");
    // A job on this machine alone spawns on it too (its ranks listen on
    // 127.0.0.1; tests/spawn/launcher.py checks that another host is refused).
    let (code, out, err) = run(&mut gridmpirun(&["--launcher", agent.to_str().unwrap(), "-n", "1", G, "--pmi-check", "spawn=1"]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("rank 0 spawned 1"), "{out}{err}");
    // A singleton cannot.
    let mut c = Command::new(G);
    c.args(["--pmi-check", "spawn=1"]).env_remove("PMI_FD").env_remove("PMI_PORT").env_remove("PMIX_NAMESPACE");
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let (code, out, _) = run(&mut c);
    assert_eq!(code, 0);
    assert!(out.contains("could not spawn: MPI_Comm_spawn needs gridmpirun: this process was not started by gridmpirun"), "{out}");
}

/// The compiler wrappers: flags, -show, and a real build (with MPICH's
/// library standing in for ours) that runs under gridmpirun.

/// Run a command whose program this test has just copied. Another test's
/// thread may be forking at that moment, and its child holds our copy's
/// write descriptor until it execs: exec fails with ETXTBSY meanwhile.
fn output_of_copied(c: &mut Command) -> std::process::Output {
    for _ in 0..100 {
        match c.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => std::thread::sleep(Duration::from_millis(20)),
            other => return other.unwrap(),
        }
    }
    panic!("the copied program stayed busy for 2 s");
}

#[test]
fn compiler_wrappers() {
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let dir = tempdir("wrappers");
    let prefix = dir.join("prefix");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    for name in ["mpicc", "mpicxx"] {
        std::fs::copy(scripts.join(name), prefix.join("bin").join(name)).unwrap();
    }
    // Called through a symlink elsewhere, the prefix is still the real one.
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let _ = std::fs::remove_file(elsewhere.join("mpicc"));
    std::os::unix::fs::symlink(prefix.join("bin/mpicc"), elsewhere.join("mpicc")).unwrap();
    let p = prefix.canonicalize().unwrap();
    let p = p.display();
    let show = |tool: &Path, args: &[&str], cc: Option<&str>| {
        let mut c = Command::new(tool);
        c.args(args).env_remove("GRIDMPI_CC").env_remove("MPICH_CC").env_remove("GRIDMPI_CXX").env_remove("MPICH_CXX");
        if let Some(cc) = cc {
            c.env("GRIDMPI_CC", cc);
        }
        let out = output_of_copied(&mut c);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(
        show(&elsewhere.join("mpicc"), &["-show", "-O2", "a.c", "-o", "a"], None),
        format!("cc -I{p}/include -O2 a.c -o a -L{p}/lib -Wl,-rpath,{p}/lib -lmpi")
    );
    assert_eq!(show(&prefix.join("bin/mpicc"), &["-show", "-c", "a.c"], Some("gcc")), format!("gcc -I{p}/include -c a.c"));
    assert_eq!(
        show(&prefix.join("bin/mpicxx"), &["-show", "x.cc"], None),
        format!("c++ -I{p}/include x.cc -L{p}/lib -Wl,-rpath,{p}/lib -lmpi")
    );
    assert_eq!(show(&prefix.join("bin/mpicc"), &["-showme:compile"], None), format!("-I{p}/include"));
    // MPICH's -compile_info and -link_info: the whole command (CMake reads it).
    assert_eq!(show(&prefix.join("bin/mpicc"), &["-compile_info"], None), format!("cc -I{p}/include"));
    assert_eq!(
        show(&prefix.join("bin/mpicc"), &["-link_info"], Some("gcc")),
        format!("gcc -I{p}/include -L{p}/lib -Wl,-rpath,{p}/lib -lmpi")
    );
    assert_eq!(
        show(&prefix.join("bin/mpicxx"), &["-link_info", "x.cc"], None),
        format!("c++ -I{p}/include x.cc -L{p}/lib -Wl,-rpath,{p}/lib -lmpi")
    );
    assert_eq!(show(&prefix.join("bin/mpicc"), &["-compile_info", "a.c"], None), format!("cc -I{p}/include a.c"));
    // mpifort likewise (a compiler that is not gfortran gets no gfortran flag).
    let mpifort = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fortran/scripts/mpifort");
    std::fs::copy(mpifort, prefix.join("bin/mpifort")).unwrap();
    let fort = |args: &[&str]| {
        let out = output_of_copied(Command::new(prefix.join("bin/mpifort")).args(args).env("GRIDMPI_FC", "myfc"));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(fort(&["-compile_info"]), format!("myfc -I{p}/include"));
    assert_eq!(fort(&["-link_info", "f.f90"]), format!("myfc -I{p}/include f.f90 -L{p}/lib -Wl,-rpath,{p}/lib -lmpifort -lmpi"));

    if !Path::new(MPICH).join("mpicc").exists() {
        eprintln!("skipped the build: MPICH not installed");
        return;
    }
    let mpich = Path::new(MPICH).parent().unwrap();
    for sub in ["include", "lib"] {
        let _ = std::fs::remove_file(prefix.join(sub));
        std::os::unix::fs::symlink(mpich.join(sub), prefix.join(sub)).unwrap();
    }
    let src = dir.join("ring.c");
    std::fs::write(
        &src,
        "#include <mpi.h>\n#include <stdio.h>\nint main(int c, char **v) {\n  int r, n, x;\n  MPI_Init(&c, &v);\n  MPI_Comm_rank(MPI_COMM_WORLD, &r);\n  MPI_Comm_size(MPI_COMM_WORLD, &n);\n  MPI_Allreduce(&r, &x, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);\n  printf(\"max %d\\n\", x);\n  MPI_Finalize();\n  return 0;\n}\n",
    )
    .unwrap();
    let exe = dir.join("ring");
    let st = Command::new(elsewhere.join("mpicc")).arg(&src).arg("-o").arg(&exe).status().unwrap();
    assert!(st.success());
    let (code, out, err) = run(&mut gridmpirun(&["-n", "3", exe.to_str().unwrap()]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("max 2").count(), 3, "{out}");
}

/// MPMD: `a : b` runs each program on its ranks, with its own arguments
/// and environment, and GRIDMPI_APPNUM its index; a ':' is never an argument.
#[test]
fn mpmd_runs_each_program_on_its_ranks() {
    let show = "echo $0 rank=$PMI_RANK size=$PMI_SIZE app=$GRIDMPI_APPNUM g=$G a=$A b=$B x=$X args=$*";
    let (code, out, err) = run(&mut gridmpirun(&[
        "-genv", "G", "all", "-x", "X=everyone", "-n", "1", "-env", "A", "only-a", "sh", "-c", show, "first", "one",
        ":", "-np", "2", "-x", "B=only-b", "sh", "-c", show, "second", "two", "three",
    ]));
    assert_eq!(code, 0, "{err}");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        vec![
            "first rank=0 size=3 app=0 g=all a=only-a b= x=everyone args=one",
            "second rank=1 size=3 app=1 g=all a= b=only-b x=everyone args=two three",
            "second rank=2 size=3 app=1 g=all a= b=only-b x=everyone args=two three",
        ]
    );
    // The PMI side is one job of three ranks.
    let (code, out, err) = run(&mut gridmpirun(&["-n", "1", G, "--pmi-check", ":", "-n", "2", G, "--pmi-check"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(ok_lines(&out), 3, "{out}");
    assert_eq!(out.matches(" of 3 ok").count(), 3, "{out}");
    // What used to run one rank with ": -n 1 b" as its arguments.
    let (code, _, err) = run(&mut gridmpirun(&["-n", "1", "true", ":"]));
    assert_eq!(code, 2);
    assert!(err.contains("nothing after the last ':'"), "{err}");
    let (code, _, err) = run(&mut gridmpirun(&["-n", "1", "true", ":", "-n", "1", "--bind-to", "core", "true"]));
    assert_eq!(code, 2);
    assert!(err.contains("--bind-to applies to the whole job"), "{err}");
}

/// MPI_APPNUM in an MPMD job of one program with several argument lists:
/// as our library reports it (GRIDMPI_APPNUM; needs `make build`), and as
/// MPICH's does (PMI's appnum; needs MPICH in /opt/peers/mpich).
#[test]
fn mpi_appnum_is_the_program_index() {
    let dir = tempdir("appnum");
    let src = dir.join("appnum.c");
    std::fs::write(
        &src,
        r#"#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, flag, *appnum;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    printf("rank %d of %d appnum %d arg %s\n", rank, size, flag ? *appnum : -1, argc > 1 ? argv[1] : "-");
    MPI_Finalize();
    return 0;
}
"#,
    )
    .unwrap();
    let wrappers = [
        built().map(|b| ("GridMPI", b.join("bin/mpicc"))),
        Some(("MPICH", Path::new(MPICH).join("mpicc"))).filter(|(_, p)| p.exists()),
    ];
    for (mpi, mpicc) in wrappers.into_iter().flatten() {
        let exe = dir.join(format!("appnum-{mpi}"));
        let st = Command::new(&mpicc).arg(&src).arg("-o").arg(&exe).status().unwrap();
        assert!(st.success(), "{mpi}: mpicc failed");
        let exe = exe.to_str().unwrap();
        let (code, out, err) = run(&mut gridmpirun(&["-n", "2", exe, "red", ":", "-n", "1", exe, "blue", ":", exe, "green"]));
        assert_eq!(code, 0, "{mpi}: {err}");
        let mut lines: Vec<&str> = out.lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            vec![
                "rank 0 of 4 appnum 0 arg red",
                "rank 1 of 4 appnum 0 arg red",
                "rank 2 of 4 appnum 1 arg blue",
                "rank 3 of 4 appnum 2 arg green",
            ],
            "{mpi}"
        );
        eprintln!("{mpi}: checked");
    }
}

#[test]
fn a_bad_hostfile_line_is_an_error_naming_file_and_line() {
    let dir = tempdir("badhostfile");
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, "# mine\nlocalhost slots=2\nthis is bad\n").unwrap();
    let (code, out, err) = run(&mut gridmpirun(&["-f", hostfile.to_str().unwrap(), "echo", "ran"]));
    assert_eq!(code, 2, "{err}");
    assert!(!out.contains("ran"), "nothing runs: {out}");
    assert!(err.contains(&format!("hostfile {}: line 3: ", hostfile.display())) && err.contains("\"is\""), "{err}");
}

#[test]
fn unknown_gridmpi_variables_are_named() {
    let (code, _, err) = run(gridmpirun(&["-n", "1", "true"])
        .env("GRIDMPI_WAN_OUTAGE_BUGDET", "5m")
        .env("GRIDMPI_CMDLINE_SET", "GRIDMPI_SPIN_US")
        .env("GRIDMPI_APPNUM", "3")
        .env("GRIDMPI_SPIN_US", "10"));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("gridmpirun: warning: GRIDMPI_WAN_OUTAGE_BUGDET is not a GridMPI setting; did you mean GRIDMPI_WAN_OUTAGE_BUDGET?"),
        "{err}"
    );
    assert_eq!(err.matches("warning").count(), 1, "internal and known names pass: {err}");
    // Given on the command line, the same.
    let (code, _, err) = run(&mut gridmpirun(&["-genv", "GRIDMPI_EAGER_LIMT", "1k", "-n", "1", "true"]));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("GRIDMPI_EAGER_LIMT is not a GridMPI setting; did you mean GRIDMPI_EAGER_LIMIT?"), "{err}");
}

fn cpu_list(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        out.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap());
    }
    out
}

/// --bind-to: each rank runs on the CPUs the report names, within ours.
#[test]
fn bind_to_core_binds_and_reports() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let mine = cpu_list(status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap());
    for policy in ["core", "hwthread"] {
        let (code, out, err) = run(&mut gridmpirun(&[
            "-n",
            "2",
            "--bind-to",
            policy,
            "--report-bindings",
            "sh",
            "-c",
            "echo rank=$PMI_RANK $(grep Cpus_allowed_list /proc/self/status)",
        ]));
        assert_eq!(code, 0, "{err}");
        let mut seen = Vec::new();
        for rank in 0..2 {
            let line = out.lines().find(|l| l.starts_with(&format!("rank={rank} "))).unwrap_or_else(|| panic!("{out}"));
            let cpus = cpu_list(line.rsplit(':').next().unwrap());
            assert!(!cpus.is_empty() && cpus.iter().all(|c| mine.contains(c)), "{policy}: {cpus:?} not within {mine:?}");
            let report = err
                .lines()
                .find(|l| l.starts_with(&format!("gridmpirun: rank {rank} on host ")))
                .unwrap_or_else(|| panic!("no report for rank {rank}: {err}"));
            let reported = report.split("bound to CPUs ").nth(1).and_then(|r| r.split(' ').next()).unwrap_or_else(|| panic!("{report}"));
            assert_eq!(cpu_list(reported), cpus, "{report}");
            assert!(report.ends_with(&format!("(--bind-to {policy})")), "{report}");
            seen.push(cpus);
        }
        if policy == "hwthread" {
            assert_eq!(seen[0].len(), 1);
            if mine.len() >= 2 {
                assert_ne!(seen[0], seen[1], "two hardware threads for two ranks");
            }
        }
    }
    // Unbound ranks are reported as such.
    let (code, _, err) = run(&mut gridmpirun(&["-n", "1", "--report-bindings", "true"]));
    assert_eq!(code, 0);
    assert!(err.contains("gridmpirun: rank 0 on host ") && err.contains(": not bound"), "{err}");
}

/// Inside a Slurm allocation with no host named, its nodes are the hosts;
/// --map-by node spreads ranks over them one at a time.
#[test]
fn slurm_allocation_and_map_by_node() {
    let dir = tempdir("slurm");
    let agent = fake_agent(&dir);
    let (code, out, err) = run(gridmpirun(&[
        "-v",
        "--launcher",
        agent.to_str().unwrap(),
        "--map-by",
        "node",
        "sh",
        "-c",
        "echo rank=$PMI_RANK size=$PMI_SIZE",
    ])
    .env("SLURM_JOB_NODELIST", "fakeS[1-2]")
    .env("SLURM_JOB_NUM_NODES", "2")
    .env("SLURM_TASKS_PER_NODE", "2(x2)"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("size=4").count(), 4, "{out}");
    assert!(err.contains("hosts from the Slurm allocation (SLURM_JOB_NODELIST): fakeS1:2,fakeS2:2"), "{err}");
    assert!(err.contains("starting ranks 0,2 on fakeS1") && err.contains("starting ranks 1,3 on fakeS2"), "{err}");
    // A broken nodelist is an error naming the variable.
    let (code, _, err) = run(gridmpirun(&["true"]).env("SLURM_JOB_NODELIST", "node[01-"));
    assert_eq!(code, 2);
    assert!(err.contains("SLURM_JOB_NODELIST \"node[01-\""), "{err}");
}

/// `pkg-config --cflags --libs mpi` finds us, as `make build` writes it.
#[test]
fn pkg_config_files() {
    if Command::new("pkg-config").arg("--version").output().is_err() {
        eprintln!("skipped: pkg-config is not installed");
        return;
    }
    let writer = Path::new(env!("CARGO_MANIFEST_DIR")).join("pkgconfig/write-pc.sh");
    let dir = tempdir("pkgconfig");
    let prefix = dir.join("prefix");
    std::fs::create_dir_all(&prefix).unwrap();
    let st = Command::new("sh").arg(&writer).arg(&prefix).args(["9.8.7", "4.1.0"]).status().unwrap();
    assert!(st.success());
    let p = prefix.canonicalize().unwrap();
    let p = p.display();
    let query = |pc_path: &Path, args: &[&str]| {
        let out = Command::new("pkg-config").args(args).env("PKG_CONFIG_PATH", pc_path).output().unwrap();
        assert!(out.status.success(), "pkg-config {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let pc = prefix.join("lib/pkgconfig");
    assert_eq!(query(&pc, &["--cflags", "--libs", "mpi"]), format!("-I{p}/include -L{p}/lib -Wl,-rpath,{p}/lib -lmpi"));
    assert_eq!(query(&pc, &["--modversion", "gridmpi"]), "9.8.7");
    assert_eq!(query(&pc, &["--modversion", "mpich"]), "4.1.0");
    assert_eq!(query(&pc, &["--libs", "mpich"]), query(&pc, &["--libs", "mpi"]));
    // Every path follows ${prefix}.
    assert_eq!(query(&pc, &["--define-variable=prefix=/elsewhere", "--cflags", "mpi"]), "-I/elsewhere/include");
    // And the files make build installed, when it has run.
    if let Some(build) = built() {
        let pc = build.join("lib/pkgconfig");
        let flags = query(&pc, &["--cflags", "--libs", "mpi"]);
        assert!(flags.contains(&format!("-I{}/include", build.display())) && flags.ends_with("-lmpi"), "{flags}");
    } else {
        eprintln!("build/ not checked: run make build");
    }
}

const ASK: &str = env!("CARGO_BIN_EXE_gridmpi-checkpoint");

/// The checkpoint numbers in `dir/latest` and the manifest it names.
fn latest_checkpoint(dir: &Path) -> (u64, String) {
    let seq: u64 = std::fs::read_to_string(dir.join("latest")).unwrap().trim().parse().unwrap();
    (seq, std::fs::read_to_string(dir.join(format!("ckpt-{seq}/MANIFEST"))).unwrap())
}

/// The launcher's side of coordinated checkpoints (docs/checkpoint.md),
/// with `--pmi-check` ranks answering as the rank library does.
#[test]
fn a_checkpointed_job_takes_checkpoints_on_request_and_on_time() {
    let dir = tempdir("checkpoints");
    let ck = dir.join("ck");
    let _ = std::fs::remove_dir_all(&ck);
    let ck_s = ck.to_str().unwrap();
    // Asked through gridmpi-checkpoint (SIGQUIT), then every 300 ms. The
    // ranks answer for 5 s: with the other tests running beside this one
    // on a 2-core machine, 2 s once gave time for only two rounds.
    let mut child = gridmpirun(&["-n", "3", "--checkpoint-dir", ck_s, "--checkpoint-interval", "300ms", G, "--pmi-check", "checkpoint=5"]).spawn().unwrap();
    wait_for_ok_lines(&mut child, 3);
    let asked = Command::new(ASK).arg(child.id().to_string()).output().unwrap();
    assert!(asked.status.success(), "{}", String::from_utf8_lossy(&asked.stderr));
    let out = finish(child, Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let said = err.lines().find(|l| l.starts_with("gridmpirun: checkpoint 1 written: 3 ranks, 0.0 MB, slowest rank ")).unwrap_or_else(|| panic!("{err}"));
    assert!(said.ends_with(&format!(" ms, in {ck_s}/ckpt-1")), "{said}");
    let (seq, manifest) = latest_checkpoint(&ck);
    assert!(seq >= 3, "{err}");
    assert!(manifest.starts_with(&format!("gridmpi-checkpoint 1\nseq {seq}\nsize 3\nrank 0 host ")), "{manifest}");
    assert!(manifest.contains(&format!(" path {ck_s}/ckpt-{seq}/rank-2.img\n")), "{manifest}");
    assert!(ck.join(format!("ckpt-{}", seq - 1)).is_dir() && !ck.join(format!("ckpt-{}", seq - 2)).exists(), "the last two are kept");

    // --checkpoint-and-stop: the ranks exit after the first one, and the job is a success.
    let ck2 = dir.join("ck2");
    let _ = std::fs::remove_dir_all(&ck2);
    let (code, out, err) =
        run(&mut gridmpirun(&["-n", "2", "--checkpoint-dir", ck2.to_str().unwrap(), "--checkpoint-interval", "300ms", "--checkpoint-and-stop", G, "--pmi-check", "checkpoint=50"]));
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("written"), "the ranks stopped instead of going on: {out}");
    assert_eq!(latest_checkpoint(&ck2).0, 1);

    // A restart takes the checkpoint's size.
    let (code, _, err) = run(&mut gridmpirun(&["--restart", ck_s, "-n", "2"]));
    assert_eq!(code, 2);
    assert!(err.contains("the checkpoint has 3 ranks; -n 2 was given"), "{err}");
}

#[test]
fn a_job_without_checkpointing_is_not_asked() {
    let mut child = gridmpirun(&["-n", "1", G, "--pmi-check", "sleep=5"]).spawn().unwrap();
    wait_for_ok_lines(&mut child, 1);
    let asked = Command::new(ASK).arg(child.id().to_string()).output().unwrap();
    assert_eq!(asked.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&asked.stderr).contains("without --checkpoint-dir or --restart"), "{asked:?}");
    let _ = child.kill();
    let _ = child.wait();
}

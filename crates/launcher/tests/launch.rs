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
    c
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

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gridmpirun-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
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
}

/// The compiler wrappers: flags, -show, and a real build (with MPICH's
/// library standing in for ours) that runs under gridmpirun.
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
        let out = c.output().unwrap();
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

//! `gridmpirun --pmi-check [ACTION...]`: a PMI test rank.
//!
//! Run as `gridmpirun -n 4 gridmpirun --pmi-check` (or under any other PMI
//! launcher: `mpiexec -n 4 gridmpirun --pmi-check`), each rank puts a short
//! and a long value, fences, reads every peer's values back and checks
//! them, then prints one line. ACTIONs (`NAME[=VALUE][@RANK]`, only on
//! RANK when given) make a rank misbehave on purpose, for tests:
//!
//! | action | effect |
//! |---|---|
//! | `stdin` | copy stdin to stdout first |
//! | `lines=N` | print N numbered lines, each in two writes |
//! | `sleep=SECONDS` | sleep after the exchange |
//! | `signal=N` | kill itself with signal N after the exchange |
//! | `abort=CODE` | PMI abort with CODE after the exchange |
//! | `exit-early=CODE` | exit with CODE without finalizing |
//! | `exit=CODE` | exit with CODE after finalizing |
//! | `spawn=N` | after the exchange, start N more `gridmpirun --pmi-check` as a new job (MPI_Comm_spawn's request), saying whether it could |
//! | `ft=SECONDS` | after `signal`, `abort` and `exit-early` (so a rank told one of those fails before), wait up to SECONDS for the notice that a rank of the job failed (a job run with `--with-ft ulfm`), print the failed ranks gridmpirun lists, then meet the other survivors in a PMI barrier before finalizing |
//! | `checkpoint=SECONDS` | for SECONDS after the exchange, answer the checkpoint requests of a job run with `--checkpoint-dir`: freeze at once, write a small stand-in image, exit when told to stop; then retire |

use std::io::{self, Read, Write};
use std::time::Duration;

use gridmpi_pmi::{Pmi, Version};

struct Action {
    name: String,
    value: Option<String>,
    rank: Option<u32>,
}

fn parse_actions(args: &[String]) -> Result<Vec<Action>, String> {
    args.iter()
        .map(|a| {
            let (body, rank) = match a.rsplit_once('@') {
                Some((b, r)) => (b, Some(r.parse::<u32>().map_err(|_| format!("bad rank in {a:?}"))?)),
                None => (a.as_str(), None),
            };
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (body.to_string(), None),
            };
            const KNOWN: &[&str] = &["stdin", "lines", "sleep", "signal", "ft", "abort", "exit-early", "exit", "spawn", "checkpoint"];
            if !KNOWN.contains(&name.as_str()) {
                return Err(format!("unknown action {name:?} (known: {})", KNOWN.join(", ")));
            }
            Ok(Action { name, value, rank })
        })
        .collect()
}

fn long_value(rank: u32) -> String {
    (0..2500).map(|i| char::from(b'!' + ((i * 7 + rank as usize) % 90) as u8)).collect()
}

pub fn run(args: &[String]) -> i32 {
    let actions = match parse_actions(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pmi-check: {e}");
            return 2;
        }
    };
    let mut pmi = match Pmi::init() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("pmi-check: init failed: {e}");
            return 1;
        }
    };
    let (me, n) = (pmi.rank(), pmi.size());
    let value_of = |name: &str| -> Option<i64> {
        actions
            .iter()
            .find(|a| a.name == name && a.rank.is_none_or(|r| r == me))
            .map(|a| a.value.as_deref().unwrap_or("0").parse().unwrap_or(0))
    };
    let has = |name: &str| actions.iter().any(|a| a.name == name && a.rank.is_none_or(|r| r == me));

    if has("stdin") {
        let mut data = Vec::new();
        let _ = io::stdin().read_to_end(&mut data);
        let _ = io::stdout().write_all(&data);
        let _ = io::stdout().flush();
    }
    if let Some(lines) = value_of("lines") {
        let mut out = io::stdout();
        for i in 0..lines {
            let _ = write!(out, "rank {me} line {i} ");
            let _ = out.flush();
            let _ = writeln!(out, "of {lines}");
            let _ = out.flush();
        }
    }

    let short = format!("rank {me} of {n}; a=b \\ 100%");
    let long = long_value(me);
    let result = (|| -> Result<(), String> {
        pmi.put("short", &short).map_err(|e| e.to_string())?;
        pmi.put("long", &long).map_err(|e| e.to_string())?;
        pmi.fence().map_err(|e| e.to_string())?;
        for peer in 0..n {
            let s = pmi.get(peer, "short").map_err(|e| e.to_string())?;
            if s != format!("rank {peer} of {n}; a=b \\ 100%") {
                return Err(format!("rank {peer}'s short value came back as {s:?}"));
            }
            if pmi.get(peer, "long").map_err(|e| e.to_string())? != long_value(peer) {
                return Err(format!("rank {peer}'s long value came back wrong"));
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        eprintln!("pmi-check: rank {me} of {n}: FAILED: {e}");
        pmi.abort(1, &format!("pmi-check failed on rank {me}: {e}"));
    }
    let version = match pmi.version() {
        Some(Version::Pmi1) => "PMI-1",
        Some(Version::Pmi2) => "PMI-2",
        None => "singleton",
    };
    println!("pmi-check: rank {me} of {n} ok ({version}, kvs {}, {n} peers checked)", pmi.kvs_name());
    let _ = io::stdout().flush();

    if let Some(n) = value_of("spawn") {
        let exe = std::env::current_exe().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|_| "gridmpirun".into());
        let app = gridmpi_pmi::SpawnApp { command: exe, args: vec!["--pmi-check".into()], maxprocs: n.max(0) as u32, info: Vec::new() };
        match pmi.spawn(&[app], &[("GRIDMPI_PARENT_PORT".into(), format!("pmi-check rank {me}"))]) {
            Ok(()) => println!("pmi-check: rank {me} spawned {n}"),
            Err(e) => println!("pmi-check: rank {me} could not spawn: {e}"),
        }
        let _ = io::stdout().flush();
    }
    if let Some(s) = value_of("checkpoint") {
        if let Err(e) = answer_checkpoints(&mut pmi, Duration::from_secs(s.max(0) as u64)) {
            eprintln!("pmi-check: rank {me}: checkpoint: {e}");
            return 1;
        }
    }
    if let Some(s) = value_of("sleep") {
        std::thread::sleep(Duration::from_secs(s as u64));
    }
    if let Some(sig) = value_of("signal") {
        crate::sys::raise(sig as i32);
        std::thread::sleep(Duration::from_secs(5));
    }
    if let Some(code) = value_of("abort") {
        pmi.abort(code as i32, &format!("pmi-check: rank {me} aborts as asked"));
    }
    if let Some(code) = value_of("exit-early") {
        std::process::exit(code as i32);
    }
    if let Some(s) = value_of("ft") {
        if let Err(e) = await_failure(&mut pmi, Duration::from_secs(s.max(0) as u64)) {
            eprintln!("pmi-check: rank {me}: ft: {e}");
            return 1;
        }
    }
    if let Err(e) = pmi.finalize() {
        eprintln!("pmi-check: rank {me}: finalize failed: {e}");
        return 1;
    }
    value_of("exit").unwrap_or(0) as i32
}

/// `ft=SECONDS`: wait for the failure notice as the rank library of a
/// fault-tolerant job does, ask which ranks failed, and meet the survivors
/// in a barrier (which must not wait for the failed).
fn await_failure(pmi: &mut Pmi, during: Duration) -> Result<(), String> {
    let me = pmi.rank();
    // SAFETY: a signal set of our own. The launcher of a fault-tolerant job
    // started us with the signal blocked; blocking it again covers any
    // other launcher (which never sends it: the wait times out).
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, gridmpi_pmi::failure_signal());
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let end = std::time::Instant::now() + during;
    loop {
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(format!("no failure notice within {} s", during.as_secs()));
        }
        let timeout = libc::timespec { tv_sec: left.as_secs() as libc::time_t, tv_nsec: left.subsec_nanos() as libc::c_long };
        // SAFETY: waits on our set; the siginfo is not wanted.
        if unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &timeout) } >= 0 {
            break;
        }
    }
    let failed = pmi.failed_ranks().map_err(|e| e.to_string())?;
    let list = failed.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(",");
    println!("pmi-check: rank {me}: failed ranks: {list}");
    let _ = io::stdout().flush();
    pmi.fence().map_err(|e| format!("the survivors' barrier: {e}"))?;
    println!("pmi-check: rank {me}: the survivors met");
    let _ = io::stdout().flush();
    Ok(())
}

/// `checkpoint=SECONDS`: take part in the job's checkpoints for that long
/// as the rank library does, with a few bytes for an image; exit when a
/// checkpoint says the job stops. Then retire, as MPI_Finalize does.
fn answer_checkpoints(pmi: &mut Pmi, during: Duration) -> Result<(), String> {
    let dir = std::env::var(gridmpi_pmi::CHECKPOINT_DIR_VAR).map_err(|_| "the job is not checkpointed (no --checkpoint-dir)".to_string())?;
    let end = std::time::Instant::now() + during;
    // SAFETY: a signal set of our own, and a wait for the signal the
    // launcher started us with blocked.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, gridmpi_pmi::checkpoint_signal());
    }
    loop {
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        let timeout = libc::timespec { tv_sec: left.as_secs() as libc::time_t, tv_nsec: left.subsec_nanos() as libc::c_long };
        // SAFETY: waits on our set; the siginfo is not wanted.
        if unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &timeout) } < 0 {
            continue; // the time is up, or EINTR
        }
        let started = std::time::Instant::now();
        let seq = match pmi.checkpoint_frozen(Ok(())).map_err(|e| e.to_string())? {
            Ok(seq) => seq,
            Err(why) => {
                println!("pmi-check: rank {}: checkpoint abandoned: {why}", pmi.rank());
                continue;
            }
        };
        let ckpt = std::path::Path::new(&dir).join(format!("ckpt-{seq}"));
        let image = ckpt.join(format!("rank-{}.img", pmi.rank()));
        let bytes = format!("pmi-check rank {} checkpoint {seq}\n", pmi.rank());
        let failure = std::fs::create_dir_all(&ckpt).and_then(|_| std::fs::write(&image, &bytes)).err().map(|e| format!("{}: {e}", image.display()));
        let (host, path) = (crate::sys::hostname(), image.to_string_lossy().into_owned());
        let report = match &failure {
            None => Ok((bytes.len() as u64, started.elapsed().as_millis() as u64, host.as_str(), path.as_str())),
            Some(why) => Err(why.as_str()),
        };
        match pmi.checkpoint_written(report).map_err(|e| e.to_string())? {
            Ok(true) => std::process::exit(0),
            Ok(false) => println!("pmi-check: rank {}: checkpoint {seq} written", pmi.rank()),
            Err(why) => println!("pmi-check: rank {}: checkpoint {seq} failed: {why}", pmi.rank()),
        }
        let _ = io::stdout().flush();
    }
    pmi.checkpoint_retire().map_err(|e| e.to_string())
}

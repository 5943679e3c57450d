//! MPI_Comm_spawn, the launcher's side: a rank's spawn request (PMI) is
//! run as a nested gridmpirun, this very executable started as a child
//! with a command line for the new job: the hosts as this launcher placed
//! the new processes (`--spawn-hosts`, hostfile syntax), the job's
//! placement options and variables, the request's preput pairs as
//! variables (`-genv`), and the programs in MPMD form.
//!
//! The nested gridmpirun says on a pipe (`--started-fd N`) when every one
//! of its ranks has started (`ok`) or that it failed before that
//! (`failed WHY`); only then does the requesting rank get its answer. The
//! parent job waits for its nested jobs, stops them when it ends early,
//! and fails when one of them fails after starting.
//!
//! Placement: on the job's hosts (or those of the request's `host` or
//! `hostfile` info), first on the slots that neither the job nor a running
//! nested job uses, then, with a warning, oversubscribed.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use gridmpi_pmi::SpawnApp;

use crate::binding::Bind;
use crate::hosts::{self, HostEntry, Node};
use crate::sys;

/// What a spawn needs to know of the parent job.
pub struct Context {
    /// gridmpirun's own executable.
    pub exe: PathBuf,
    /// Where the parent job's ranks run: relative paths of a request
    /// (command, wdir, hostfile) start there.
    pub cwd: PathBuf,
    pub universe: u32,
    pub nodes: Vec<Node>,
    /// Slots of each node for placing spawned processes (its slot count;
    /// without a host list, the universe).
    pub slots: Vec<u32>,
    pub launcher: Option<String>,
    pub bind: Bind,
    pub tag_output: bool,
    pub verbose: bool,
    /// The job's variables from the command line (-genv, -x, --trace...).
    pub genv: Vec<(String, String)>,
}

/// A spawn request made ready to run.
#[derive(Debug)]
pub struct Prepared {
    /// gridmpirun's arguments but `--started-fd`.
    pub args: Vec<String>,
    /// Processes placed on each of the job's nodes (by index).
    pub usage: Vec<(usize, u32)>,
    /// How many processes had no free slot.
    pub oversubscribed: u32,
    /// What it runs, for messages: `./a (2), ./b (1)`.
    pub summary: String,
    /// The hosts it places processes on that are not this machine.
    pub remote_hosts: Vec<String>,
}

/// A host spawned processes may go to.
struct Candidate {
    name: String,
    cluster: Option<String>,
    /// Its index among the job's nodes, if it is one of them.
    job_node: Option<usize>,
    local: bool,
    slots: u32,
    max_slots: Option<u32>,
}

fn candidates(ctx: &Context, info: &[(String, String)], is_local: &dyn Fn(&str) -> bool) -> Result<Vec<Candidate>, String> {
    let get = |k: &str| info.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    let entries: Vec<HostEntry> = if let Some(list) = get("host").or(get("hosts")) {
        let list = list.replace([' ', '\t', '\n'], ",");
        let e = hosts::parse_host_list(&list).map_err(|e| format!("info host {list:?}: {e}"))?;
        if e.is_empty() {
            return Err("info host names no host".into());
        }
        e
    } else if let Some(file) = get("hostfile") {
        let path = ctx.cwd.join(file);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("info hostfile: cannot read {}: {e}", path.display()))?;
        hosts::parse_hostfile(&text).map_err(|e| format!("info hostfile {}: {e}", path.display()))?
    } else {
        return Ok(ctx
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| Candidate { name: n.name.clone(), cluster: n.cluster.clone(), job_node: Some(i), local: n.local, slots: ctx.slots[i], max_slots: n.max_slots })
            .collect());
    };
    let mut out: Vec<Candidate> = Vec::new();
    for e in entries {
        let local = is_local(&e.name);
        let job_node = ctx.nodes.iter().position(|n| n.name == e.name || (local && n.local));
        if let Some(c) = out.iter_mut().find(|c| c.name == e.name || (job_node.is_some() && c.job_node == job_node)) {
            if c.job_node.is_none() {
                c.slots += e.slots.unwrap_or(1);
            }
            continue;
        }
        out.push(match job_node {
            Some(i) => {
                let n = &ctx.nodes[i];
                Candidate { name: n.name.clone(), cluster: n.cluster.clone(), job_node: Some(i), local: n.local, slots: ctx.slots[i], max_slots: n.max_slots }
            }
            None => Candidate { name: e.name.clone(), cluster: e.cluster.clone(), job_node: None, local, slots: e.slots.unwrap_or(1), max_slots: e.max_slots },
        });
    }
    Ok(out)
}

/// `command` looked up in the info's `path` (directories separated by
/// `:`), when it has no `/`: the first directory holding it, else the
/// first directory (which then says "not found").
fn resolve_command(command: &str, path: Option<&str>, cwd: &Path) -> String {
    let Some(path) = path.filter(|p| !p.is_empty() && !command.contains('/')) else { return command.to_string() };
    let dirs: Vec<&str> = path.split(':').filter(|d| !d.is_empty()).collect();
    let found = dirs.iter().map(|d| Path::new(d).join(command)).find(|p| cwd.join(p).is_file());
    match found.or_else(|| dirs.first().map(|d| Path::new(d).join(command))) {
        Some(p) => p.to_string_lossy().into_owned(),
        None => command.to_string(),
    }
}

/// Place the request's processes and write the nested gridmpirun's
/// command line. `used`: ranks on each of the job's nodes now (the job's
/// and its running nested jobs').
pub fn prepare(ctx: &Context, used: &[u32], apps: &[SpawnApp], env: &[(String, String)], is_local: &dyn Fn(&str) -> bool) -> Result<Prepared, String> {
    if let Some((k, v)) = env.iter().find(|(k, v)| k.is_empty() || k == ":" || v == ":") {
        return Err(format!("preput pair {k:?} = {v:?}: gridmpirun cannot pass it (an empty key, or a lone \":\")"));
    }
    // Each program's working directory (its `wdir` key), relative to the
    // spawning job's.
    let wdirs: Vec<Option<&str>> = apps.iter().map(|a| a.info.iter().find(|(k, _)| k == "wdir").map(|(_, v)| v.as_str())).collect();
    let mut used_now = used.to_vec();
    let mut runs: Vec<(String, Option<String>, u32)> = Vec::new();
    let mut usage: Vec<(usize, u32)> = Vec::new();
    let mut oversubscribed = 0;
    let mut remote_hosts: Vec<String> = Vec::new();
    for app in apps {
        if app.args.iter().any(|a| a == ":") {
            return Err(format!("{}: an argument \":\" cannot be passed (gridmpirun reads it as the end of a program)", app.command));
        }
        let mut cands = candidates(ctx, &app.info, is_local)?;
        let mut extra_used = vec![0u32; cands.len()];
        for _ in 0..app.maxprocs {
            let load = |i: usize, c: &Candidate| c.job_node.map_or(extra_used[i], |j| used_now[j]);
            let fits = |i: usize, c: &Candidate| c.max_slots.is_none_or(|m| load(i, c) < m);
            let pick = cands
                .iter()
                .enumerate()
                .position(|(i, c)| fits(i, c) && load(i, c) < c.slots)
                .or_else(|| {
                    // Every slot is taken: the least loaded host, per slot.
                    let best = cands
                        .iter()
                        .enumerate()
                        .filter(|&(i, c)| fits(i, c))
                        .min_by_key(|&(i, c)| (load(i, c) as u64 * 1_000_000) / c.slots.max(1) as u64)?;
                    oversubscribed += 1;
                    Some(best.0)
                })
                .ok_or_else(|| format!("{} processes of {} do not fit on the hosts (max_slots)", app.maxprocs, app.command))?;
            let c = &mut cands[pick];
            match c.job_node {
                Some(j) => {
                    used_now[j] += 1;
                    match usage.iter_mut().find(|(n, _)| *n == j) {
                        Some((_, k)) => *k += 1,
                        None => usage.push((j, 1)),
                    }
                }
                None => extra_used[pick] += 1,
            }
            if !c.local && !remote_hosts.contains(&c.name) {
                remote_hosts.push(c.name.clone());
            }
            match runs.last_mut() {
                Some((name, _, k)) if *name == c.name => *k += 1,
                _ => runs.push((c.name.clone(), c.cluster.clone(), 1)),
            }
        }
    }
    let hostfile: String = runs
        .iter()
        .map(|(name, cluster, k)| match cluster {
            Some(c) => format!("{name} slots={k} cluster={c}\n"),
            None => format!("{name} slots={k}\n"),
        })
        .collect();
    // The universe holds at least the processes running in it: a spawn
    // that oversubscribes grows it, so the new job never sees itself fill
    // or overfill its universe when it can still spawn (oversubscribed).
    let running: u32 = used.iter().sum::<u32>() + apps.iter().map(|a| a.maxprocs).sum::<u32>();
    let mut args: Vec<String> = vec!["--universe".into(), ctx.universe.max(running).to_string(), "--spawn-hosts".into(), hostfile];
    if let Some(l) = &ctx.launcher {
        args.extend(["--launcher".into(), l.clone()]);
    }
    if ctx.bind != Bind::None {
        args.extend(["--bind-to".into(), ctx.bind.name().to_string()]);
    }
    if ctx.tag_output {
        args.push("--tag-output".into());
    }
    if ctx.verbose {
        args.push("-v".into());
    }
    for (k, v) in &ctx.genv {
        args.extend(["-genv".into(), k.clone(), v.clone()]);
    }
    for (k, v) in env {
        args.extend(["--spawn-preput".into(), k.clone(), v.clone()]);
    }
    // The first program's directory is the nested job's; a later one with
    // none of its own gets the spawning job's back.
    if let Some(Some(w)) = wdirs.first() {
        args.extend(["-wdir".into(), w.to_string()]);
    }
    let mut summary = Vec::new();
    for (i, app) in apps.iter().enumerate() {
        if i > 0 {
            args.push(":".into());
            match (wdirs[i], wdirs[0]) {
                (Some(w), _) => args.extend(["-wdir".into(), ctx.cwd.join(w).to_string_lossy().into_owned()]),
                (None, Some(_)) => args.extend(["-wdir".into(), ctx.cwd.to_string_lossy().into_owned()]),
                (None, None) => {}
            }
        }
        let wdir = ctx.cwd.join(wdirs[i].unwrap_or("."));
        let path = app.info.iter().find(|(k, _)| k == "path").map(|(_, v)| v.as_str());
        let command = resolve_command(&app.command, path, &wdir);
        summary.push(format!("{command} ({})", app.maxprocs));
        args.extend(["-n".into(), app.maxprocs.to_string(), "--".into(), command]);
        args.extend(app.args.iter().cloned());
    }
    Ok(Prepared { args, usage, oversubscribed, summary: summary.join(", "), remote_hosts })
}

/// Start the nested gridmpirun: its pid, and the pipe it reports on.
/// Called from the launcher's main thread (its death signal is tied to
/// the thread that forks it).
pub fn start(ctx: &Context, args: &[String]) -> Result<(u32, File), String> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: both descriptors were just created and are owned here.
    let (read, write) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    let wfd = fds[1];
    let mut cmd = Command::new(&ctx.exe);
    cmd.arg("--started-fd").arg(wfd.to_string()).args(args);
    if ctx.cwd.is_dir() {
        cmd.current_dir(&ctx.cwd);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::inherit()).stderr(Stdio::inherit());
    // SAFETY: child_setup only makes async-signal-safe syscalls (its own
    // process group, PR_SET_PDEATHSIG, keeping the pipe's write end open).
    unsafe {
        cmd.pre_exec(move || sys::child_setup(Some(wfd), &[]));
    }
    let child = cmd.spawn().map_err(|e| format!("cannot run {}: {e}", ctx.exe.display()))?;
    drop(write);
    Ok((child.id(), read))
}

/// What the nested gridmpirun said on its pipe (its first line).
pub fn read_started(pipe: File) -> Result<(), String> {
    let mut line = String::new();
    // A line, not a stream: at most a few KiB.
    let _ = BufReader::new(std::io::Read::take(pipe, 16384)).read_line(&mut line);
    let line = line.trim_end();
    if line == "ok" {
        return Ok(());
    }
    match line.strip_prefix("failed") {
        Some(why) if !why.trim().is_empty() => Err(why.trim().to_string()),
        _ => Err("the spawned job's gridmpirun ended before starting its processes".into()),
    }
}

/// The nested side: the pipe to the parent launcher (`--started-fd`).
pub struct StartedPipe(Option<File>);

impl StartedPipe {
    /// Take over descriptor `fd`; ranks and agents started later do not
    /// inherit it.
    pub fn adopt(fd: Option<i32>) -> StartedPipe {
        StartedPipe(fd.map(|fd| {
            // SAFETY: the descriptor was handed to us for this (the parent
            // launcher keeps it open across exec); we own it from here.
            unsafe {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                File::from_raw_fd(fd)
            }
        }))
    }

    /// Whether the parent still waits to hear.
    pub fn waiting(&self) -> bool {
        self.0.is_some()
    }

    pub fn ok(&mut self) {
        self.say("ok");
    }

    pub fn failed(&mut self, why: &str) {
        self.say(&format!("failed {}", why.replace(['\n', '\r'], " ")));
    }

    fn say(&mut self, line: &str) {
        if let Some(mut f) = self.0.take() {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, slots: u32, local: bool) -> Node {
        Node { name: name.into(), local, slots, max_slots: None, cluster: None }
    }

    fn ctx(nodes: Vec<Node>) -> Context {
        Context {
            exe: "/bin/gridmpirun".into(),
            cwd: "/".into(),
            universe: nodes.iter().map(|n| n.slots).sum(),
            slots: nodes.iter().map(|n| n.slots).collect(),
            nodes,
            launcher: None,
            bind: Bind::None,
            tag_output: false,
            verbose: false,
            genv: vec![("G".into(), "1".into())],
        }
    }

    fn app(cmd: &str, n: u32, info: &[(&str, &str)]) -> SpawnApp {
        SpawnApp {
            command: cmd.into(),
            args: vec!["x y".into()],
            maxprocs: n,
            info: info.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    fn hosts_arg(p: &Prepared) -> &str {
        let i = p.args.iter().position(|a| a == "--spawn-hosts").unwrap();
        &p.args[i + 1]
    }

    #[test]
    fn free_slots_first_then_oversubscribed() {
        let c = ctx(vec![node("a", 4, true)]);
        let local = |n: &str| n == "a";
        // gridmpirun -n 1 -hosts a:4, then spawn 3: the 3 free slots.
        let p = prepare(&c, &[1], &[app("./child", 3, &[])], &[("GRIDMPI_PARENT_PORT".into(), "p q".into())], &local).unwrap();
        assert_eq!((p.oversubscribed, p.usage.clone()), (0, vec![(0, 3)]));
        assert_eq!(hosts_arg(&p), "a slots=3\n");
        let tail: Vec<&str> = p.args.iter().map(String::as_str).skip_while(|a| *a != "-genv").collect();
        assert_eq!(tail, ["-genv", "G", "1", "--spawn-preput", "GRIDMPI_PARENT_PORT", "p q", "-n", "3", "--", "./child", "x y"]);
        let universe = |p: &Prepared| p.args[p.args.iter().position(|a| a == "--universe").unwrap() + 1].clone();
        assert_eq!(universe(&p), "4");
        // Full: oversubscribed; the new job's universe holds the 6 running.
        let p = prepare(&c, &[3], &[app("./child", 3, &[])], &[], &local).unwrap();
        assert_eq!(p.oversubscribed, 2);
        assert_eq!(universe(&p), "6");
    }

    #[test]
    fn hosts_mpmd_wdir_and_path() {
        let mut c = ctx(vec![node("a", 2, true), node("b", 2, false)]);
        c.nodes[1].cluster = Some("east".into());
        let local = |n: &str| n == "a";
        let apps = [app("one", 1, &[("wdir", "/tmp")]), app("two", 3, &[("host", "b c:2"), ("path", "/nonexistent:/bin")])];
        let p = prepare(&c, &[2, 0], &apps, &[], &local).unwrap();
        // one: a is full, so b; two: on b (1 left) then c.
        assert_eq!(hosts_arg(&p), "b slots=2 cluster=east\nc slots=2\n");
        assert_eq!(p.usage, vec![(1, 2)]);
        assert_eq!(p.remote_hosts, ["b", "c"]);
        let s = p.args.join(" ");
        // A program after the first without a wdir of its own runs in the
        // spawning job's directory, not the first one's.
        let home = c.cwd.to_string_lossy();
        assert!(s.contains(&format!("-wdir /tmp -n 1 -- one x y : -wdir {home} -n 3 -- /nonexistent/two x y")), "{s}");
        // Each program its own directory (relative ones from the job's).
        let apps = [app("one", 1, &[]), app("two", 1, &[("wdir", "/")]), app("three", 1, &[("wdir", "sub")])];
        let s = prepare(&c, &[0, 0], &apps, &[], &local).unwrap().args.join(" ");
        let sub = c.cwd.join("sub");
        assert!(s.contains(&format!("-n 1 -- one x y : -wdir / -n 1 -- two x y : -wdir {} -n 1 -- three x y", sub.display())), "{s}");
        assert!(!s.contains("-wdir / -n 1 -- one"), "{s}");
        assert!(prepare(&c, &[0, 0], &[app("x", 1, &[])], &[("".into(), "v".into())], &local).is_err());
        assert_eq!(resolve_command("sh", Some("/nonexistent:/bin"), Path::new("/")), "/bin/sh");
    }
}

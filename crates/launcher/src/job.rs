//! One MPI job: place the ranks, start them (here directly, elsewhere
//! through a proxy per host), serve their PMI, carry their output and
//! stdin, and end the job when it is over or when a rank fails (in a
//! fault-tolerant job, `--with-ft ulfm`, the others are told and go on).

use std::collections::BTreeSet;
use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use gridmpi_config::Config;
use gridmpi_pmi::server::{Event as PmiEvent, ImageReport, JobInfo, Server};

use crate::allocation::{self, Allocation};
use crate::binding::Bind;
use crate::checkpoint_dir::{self, Manifest};
use crate::checkpoint_rounds::Rounds;
use crate::hosts::{self, HostEntry, Node};
use crate::link::{self, Down, RankSpec, Up};
use crate::options::{App, Options};
use crate::output::Output;
use crate::ranks::{self, LocalRanks};
use crate::spawn::{self, StartedPipe};
use crate::sys::{self, ExitStatus};

/// How long a rank's exit may wait for its PMI connection and output
/// pipes to drain before it is handled anyway.
const EXIT_HOLD: Duration = Duration::from_secs(1);
/// After SIGKILL, how long to wait for remote hosts to confirm.
const REMOTE_GIVE_UP: Duration = Duration::from_secs(5);
/// At the end, how long to wait for launch agents to exit.
const AGENT_LINGER: Duration = Duration::from_secs(3);
/// gridmpirun's exit status when the job ran past its time limit (as
/// timeout(1) gives).
const TIMED_OUT: i32 = 124;

enum Event {
    Up { host: usize, up: Up },
    HostLost { host: usize, reason: String },
    Reaped { pid: u32, status: ExitStatus },
    Signal(i32),
    Stdin(Option<Vec<u8>>),
    /// What nested job `id` (MPI_Comm_spawn) said on its pipe.
    SpawnStarted { id: usize, result: Result<(), String> },
}

/// What the launcher needs from its settings and environment.
pub struct Setup {
    pub agent: Vec<String>,
    pub proxy_command: Vec<String>,
    pub kill_grace: Duration,
    pub default_hostfile: Option<PathBuf>,
    /// Variables every rank gets (GRIDMPI_*, -genv, -x).
    pub rank_env: Vec<(String, String)>,
    /// Settings given on the command line for every rank (GRIDMPI_CMDLINE_SET).
    pub cmdline_set: Vec<String>,
    pub cwd: PathBuf,
    /// The job's shared-memory names begin with this (GRIDMPI_SHM_PREFIX);
    /// what is left of them is removed when the job ends.
    pub shm_prefix: String,
    /// The Slurm or PBS allocation gridmpirun runs in, if any.
    pub allocation: Option<Allocation>,
    /// How long the job may run (`--timeout`, else MPIEXEC_TIMEOUT).
    pub time_limit: Option<Duration>,
}

impl Setup {
    pub fn from_config(opts: &Options, config: &Config, env: &[(String, String)]) -> Result<Setup, String> {
        let agent_text = opts.launcher.clone().unwrap_or_else(|| config.text("GRIDMPI_LAUNCHER").to_string());
        let agent: Vec<String> = agent_text.split_whitespace().map(String::from).collect();
        if agent.is_empty() {
            return Err("the launch agent (--launcher / GRIDMPI_LAUNCHER) is empty".into());
        }
        let proxy_command = match config.text("GRIDMPI_PROXY_COMMAND") {
            "auto" | "" => {
                let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
                vec![exe.to_string_lossy().into_owned()]
            }
            cmd => cmd.split_whitespace().map(String::from).collect(),
        };
        let kill_grace = Duration::from_micros(config.micros("GRIDMPI_KILL_GRACE").unwrap_or(3_000_000));
        let default_hostfile = Some(config.text("GRIDMPI_HOSTFILE")).filter(|s| !s.is_empty()).map(PathBuf::from);
        // What the launcher sets per rank is not inherited from a launcher
        // above us (a gridmpirun run as a rank of another job).
        let mut rank_env: Vec<(String, String)> = env
            .iter()
            .filter(|(k, _)| k.starts_with("GRIDMPI_") && !matches!(k.as_str(), "GRIDMPI_CMDLINE_SET" | "GRIDMPI_APPNUM"))
            .cloned()
            .collect();
        let mut cmdline_set = Vec::new();
        overlay(&mut rank_env, &mut cmdline_set, &opts.env);
        let here = std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
        let cwd = match &opts.wdir {
            Some(d) => here.join(d),
            None => here,
        };
        // Named by us, so whatever the ranks leave in /dev/shm (a rank that
        // exits or is killed before unlinking) can be found and removed.
        let shm_prefix = sys::new_shm_prefix();
        rank_env.retain(|(n, _)| n != "GRIDMPI_SHM_PREFIX");
        rank_env.push(("GRIDMPI_SHM_PREFIX".into(), shm_prefix.clone()));
        let getenv = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let allocation = allocation::detect(&getenv)?;
        let time_limit = match (opts.timeout, getenv("MPIEXEC_TIMEOUT").filter(|v| !v.trim().is_empty())) {
            (Some(t), _) => Some(t),
            (None, Some(v)) => Some(crate::options::timeout_seconds("MPIEXEC_TIMEOUT", &v)?),
            (None, None) => None,
        };
        Ok(Setup { agent, proxy_command, kill_grace, default_hostfile, rank_env, cmdline_set, cwd, shm_prefix, allocation, time_limit })
    }
}

/// The environment of the ranks of program `appnum` of the command line:
/// the job's (`job`), then the program's own (`-env`, `-x` after a `:`).
fn app_env(job: &[(String, String)], cmdline_set: &[String], app: &App, appnum: usize) -> Vec<(String, String)> {
    let mut env = job.to_vec();
    let mut cmdline_set = cmdline_set.to_vec();
    overlay(&mut env, &mut cmdline_set, &app.env);
    env.retain(|(k, _)| !matches!(k.as_str(), "GRIDMPI_CMDLINE_SET" | "GRIDMPI_APPNUM"));
    if !cmdline_set.is_empty() {
        env.push(("GRIDMPI_CMDLINE_SET".into(), cmdline_set.join(",")));
    }
    env.push(("GRIDMPI_APPNUM".into(), appnum.to_string()));
    env
}

/// Set `vars` over `env` (later wins), noting settings among them as given
/// on the command line.
fn overlay(env: &mut Vec<(String, String)>, cmdline_set: &mut Vec<String>, vars: &[(String, String)]) {
    for (k, v) in vars {
        env.retain(|(n, _)| n != k);
        env.push((k.clone(), v.clone()));
        if k.starts_with("GRIDMPI_") && gridmpi_config::find(k).is_some() && !cmdline_set.contains(k) {
            cmdline_set.push(k.clone());
        }
    }
}

/// Where the job runs.
pub struct Plan {
    pub nodes: Vec<Node>,
    /// The node of each rank.
    pub placement: Vec<u32>,
    /// The program (index in the command line) of each rank.
    pub app_of_rank: Vec<usize>,
    pub universe: i32,
    /// Where the hosts came from, when not from the command line.
    pub hosts_from: Option<String>,
    /// Whether hosts were named (else: this machine, `nodes[0]`).
    pub explicit_hosts: bool,
}

/// The nodes of the job, the node and program of each rank. Hosts come
/// from -hosts and -f, else GRIDMPI_HOSTFILE, else the allocation we run
/// in, else this machine alone.
pub fn plan(opts: &Options, setup: &Setup) -> Result<Plan, String> {
    let mut entries: Vec<HostEntry> = opts.hosts.clone();
    let mut hosts_from = None;
    let hostfile = opts.hostfile.clone().or_else(|| if entries.is_empty() { setup.default_hostfile.clone() } else { None });
    if let Some(path) = &hostfile {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read hostfile {}: {e}", path.display()))?;
        entries.extend(hosts::parse_hostfile(&text).map_err(|e| format!("hostfile {}: {e}", path.display()))?);
        if opts.hostfile.is_none() {
            hosts_from = Some(format!("GRIDMPI_HOSTFILE {}", path.display()));
        }
    } else if let (true, Some(a)) = (entries.is_empty(), &setup.allocation) {
        entries = a.hosts.clone();
        hosts_from = Some(a.source.clone());
    }
    let explicit_hosts = !entries.is_empty();
    let single = opts.apps.len() == 1;
    let nodes = if explicit_hosts {
        hosts::nodes_from_entries(&entries, &hosts::is_local_host)?
    } else {
        let np: u32 = opts.apps.iter().map(|a| a.np.unwrap_or(1)).sum();
        vec![Node { name: sys::hostname(), local: true, slots: np, max_slots: None, cluster: None }]
    };
    let total_slots: u32 = nodes.iter().map(|n| opts.ppn.unwrap_or(n.slots)).sum();
    // A job of one program fills the hosts' slots unless told -n; each
    // program of an MPMD line runs 1 rank unless told.
    let counts: Vec<u32> = if single {
        vec![opts.apps[0].np.unwrap_or(if explicit_hosts { total_slots } else { 1 })]
    } else {
        opts.apps.iter().map(|a| a.np.unwrap_or(1)).collect()
    };
    let np: u32 = counts.iter().sum();
    let placement = hosts::place(&nodes, np, opts.ppn, opts.map_by)?;
    let app_of_rank = counts.iter().enumerate().flat_map(|(k, &n)| std::iter::repeat(k).take(n as usize)).collect();
    // MPI_UNIVERSE_SIZE: the slots we know of; on this machine alone, its
    // CPUs; at least the job. A nested gridmpirun (MPI_Comm_spawn) is told
    // its parent's.
    let universe = match opts.universe {
        Some(u) => u,
        None if explicit_hosts => total_slots.max(np),
        None => (std::thread::available_parallelism().map_or(1, |n| n.get()) as u32).max(np),
    };
    Ok(Plan { nodes, placement, app_of_rank, universe: universe as i32, hosts_from, explicit_hosts })
}

struct RankState {
    host: usize,
    pid: Option<u32>,
    initialized: bool,
    finalized: bool,
    pmi_closed: bool,
    open_outputs: u8,
    held_exit: Option<(ExitStatus, Instant)>,
    done: bool,
}

struct Host {
    name: String,
    local: bool,
    ranks: Vec<u32>,
    link: Option<Arc<Mutex<ChildStdin>>>,
    agent_pid: Option<u32>,
    agent_done: bool,
}

struct Job {
    hosts: Vec<Host>,
    ranks: Vec<RankState>,
    server: Server,
    local: LocalRanks,
    out: Output<io::Stdout, io::Stderr>,
    failure: Option<i32>,
    first_nonzero: Option<i32>,
    teardown_at: Option<Instant>,
    killed_at: Option<Instant>,
    kill_grace: Duration,
    /// When the job has run too long (its time limit, and the limit).
    time_limit: Option<(Instant, Duration)>,
    warned_unsupported: BTreeSet<String>,
    /// WAN links the ranks report down (said once per link).
    outages: crate::outages::Outages,
    verbose: bool,
    /// `--report-bindings`: the `--bind-to` policy to report.
    report_bindings: Option<Bind>,
    /// MPI_Comm_spawn: what a nested job needs to know of this one.
    spawn_ctx: spawn::Context,
    /// The nested jobs started for MPI_Comm_spawn, by id.
    spawned: Vec<Spawned>,
    /// Whether a spawn has warned that it oversubscribes the hosts.
    warned_oversubscribed: bool,
    /// Ranks on each node: this job's and its running nested jobs'.
    node_used: Vec<u32>,
    tx: mpsc::Sender<Event>,
    /// When started for MPI_Comm_spawn: where to tell the parent launcher
    /// that every rank started, or that the job failed before.
    started_pipe: StartedPipe,
    started_ranks: u32,
    /// The job runs on this machine alone, so its ranks listen on
    /// 127.0.0.1 (GRIDMPI_TCP_ADDR): processes elsewhere cannot reach them.
    loopback_only: bool,
    /// The job's checkpoints, when it is checkpointed (`--checkpoint-dir`).
    checkpoints: Option<Rounds>,
    /// `--with-ft ulfm`: a rank that fails does not end the job.
    fault_tolerant: bool,
    /// The exit code of the first failed rank (`fault_tolerant`): the
    /// job's, should no rank survive.
    first_failure: Option<i32>,
}

/// What asks for a checkpoint.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// SIGQUIT (as gridmpi-checkpoint sends it).
    Signal,
    /// `--checkpoint-interval`.
    Interval,
}

impl Trigger {
    fn name(self) -> &'static str {
        match self {
            Trigger::Signal => "SIGQUIT",
            Trigger::Interval => "--checkpoint-interval",
        }
    }
}

/// `--restart DIR`: the checkpoint the ranks come back from.
struct Restart {
    dir: PathBuf,
    manifest: Manifest,
    /// gridmpi-restore, beside gridmpirun: each rank runs it on its image.
    restore: PathBuf,
}

impl Restart {
    /// DIR's latest checkpoint, for a job of `np` ranks if -n was given.
    fn prepare(dir: &std::path::Path, np: Option<u32>) -> Result<Restart, String> {
        let manifest = checkpoint_dir::read_latest(dir)?;
        manifest.restart_size(np)?;
        let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
        let restore = exe.with_file_name("gridmpi-restore");
        if !restore.is_file() {
            return Err(format!(
                "--restart needs gridmpi-restore beside gridmpirun, and there is no {} (make build installs both in build/bin)",
                restore.display()
            ));
        }
        Ok(Restart { dir: dir.to_path_buf(), manifest, restore })
    }

    /// What rank `rank` runs.
    fn argv(&self, rank: u32) -> Vec<String> {
        vec![self.restore.to_string_lossy().into_owned(), self.manifest.images[rank as usize].path.clone()]
    }
}

/// A nested gridmpirun (MPI_Comm_spawn).
struct Spawned {
    pid: u32,
    /// The rank that asked.
    rank: u32,
    summary: String,
    /// Processes on each of this job's nodes, until it ends.
    usage: Vec<(usize, u32)>,
    /// Whether its processes started (once it said).
    started: Option<bool>,
    ended: Option<ExitStatus>,
}

/// Run a job; returns gridmpirun's exit code.
pub fn run(mut opts: Options, setup: Setup) -> i32 {
    let mut started_pipe = StartedPipe::adopt(opts.started_fd);
    // A restarted job is as big as its checkpoint; a checkpointed one has
    // its directory before any rank runs.
    let restart = match opts.restart.as_deref().map(|dir| Restart::prepare(dir, opts.apps[0].np)).transpose() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gridmpirun: {e}");
            return 2;
        }
    };
    if let Some(r) = &restart {
        opts.apps[0].np = Some(r.manifest.size());
    }
    if let Some(dir) = &opts.checkpoint_dir {
        if let Err(e) = checkpoint_dir::create(dir) {
            eprintln!("gridmpirun: {e}");
            return 2;
        }
    }
    let Plan { nodes, placement, app_of_rank, universe, hosts_from, explicit_hosts } = match plan(&opts, &setup) {
        Ok(p) => p,
        Err(e) => {
            let who = if opts.started_fd.is_some() { "gridmpirun (spawned job)" } else { "gridmpirun" };
            eprintln!("{who}: {e}");
            started_pipe.failed(&e);
            return 2;
        }
    };
    if let (true, Some(from)) = (opts.verbose, &hosts_from) {
        eprintln!("gridmpirun: hosts from {from}: {}", nodes.iter().map(|n| format!("{}:{}", n.name, n.slots)).collect::<Vec<_>>().join(","));
    }
    let size = placement.len() as u32;
    if let Some(r) = &restart {
        if let Err(e) = check_local_images(r, &nodes, &placement) {
            eprintln!("gridmpirun: {e}");
            return 2;
        }
        if opts.verbose {
            let hosts: BTreeSet<&str> = r.manifest.images.iter().map(|i| i.host.as_str()).collect();
            let hosts = hosts.into_iter().collect::<Vec<_>>().join(",");
            eprintln!("gridmpirun: restarting checkpoint {} of {}: {size} ranks, written on {hosts}", r.manifest.seq, r.dir.display());
        }
    }
    let (tx, rx) = mpsc::channel::<Event>();

    // Signals and reaping first: nothing may escape them. A checkpointed
    // job takes SIGQUIT as a checkpoint request (gridmpi-checkpoint sends
    // it); otherwise SIGQUIT does what it always did.
    let extra_signals: &[i32] = if opts.checkpoint_dir.is_some() { &[libc::SIGQUIT] } else { &[] };
    match sys::signal_pipe(extra_signals) {
        Ok(mut pipe) => {
            let tx = tx.clone();
            thread::spawn(move || {
                let mut b = [0u8; 1];
                while let Ok(1) = pipe.read(&mut b) {
                    if tx.send(Event::Signal(b[0] as i32)).is_err() {
                        return;
                    }
                }
            });
        }
        Err(e) => eprintln!("gridmpirun: warning: cannot catch signals: {e}"),
    }
    {
        let tx = tx.clone();
        ranks::start_reaper(move |pid, status| {
            let _ = tx.send(Event::Reaped { pid, status });
        });
    }

    let local_host = nodes.iter().position(|n| n.local);
    let sink_tx = Mutex::new(tx.clone());
    let local = LocalRanks::new(
        size,
        Arc::new(move |up| {
            let _ = sink_tx.lock().expect("sink lock").send(Event::Up { host: local_host.unwrap_or(0), up });
        }),
    );
    let info = JobInfo {
        size,
        kvsname: format!("kvs_{}_0", std::process::id()),
        // For programs of other MPIs; ours read GRIDMPI_APPNUM.
        appnum_of_rank: app_of_rank.iter().map(|&a| a as i32).collect(),
        universe_size: universe,
        node_of_rank: placement.clone(),
    };
    let mut job = Job {
        hosts: nodes
            .iter()
            .enumerate()
            .map(|(i, n)| Host {
                name: if n.local { sys::hostname() } else { n.name.clone() },
                local: n.local,
                ranks: (0..size).filter(|&r| placement[r as usize] == i as u32).collect(),
                link: None,
                agent_pid: None,
                agent_done: false,
            })
            .collect(),
        ranks: placement
            .iter()
            .map(|&h| RankState {
                host: h as usize,
                pid: None,
                initialized: false,
                finalized: false,
                pmi_closed: false,
                open_outputs: 2,
                held_exit: None,
                done: false,
            })
            .collect(),
        server: Server::new(info),
        local,
        out: Output::new(opts.tag_output, io::stdout(), io::stderr()),
        failure: None,
        first_nonzero: None,
        teardown_at: None,
        killed_at: None,
        kill_grace: setup.kill_grace,
        time_limit: setup.time_limit.map(|d| (Instant::now() + d, d)),
        warned_unsupported: BTreeSet::new(),
        outages: Default::default(),
        verbose: opts.verbose,
        report_bindings: opts.report_bindings.then_some(opts.bind),
        spawn_ctx: spawn::Context {
            exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("gridmpirun")),
            cwd: setup.cwd.clone(),
            universe: universe.max(1) as u32,
            slots: nodes
                .iter()
                .map(|n| if explicit_hosts { opts.ppn.unwrap_or(n.slots) } else { universe.max(1) as u32 })
                .collect(),
            nodes: nodes.clone(),
            launcher: opts.launcher.clone(),
            bind: opts.bind,
            tag_output: opts.tag_output,
            verbose: opts.verbose,
            genv: opts.env.clone(),
        },
        spawned: Vec::new(),
        warned_oversubscribed: false,
        node_used: (0..nodes.len()).map(|i| placement.iter().filter(|&&p| p as usize == i).count() as u32).collect(),
        tx: tx.clone(),
        started_pipe,
        started_ranks: 0,
        loopback_only: false,
        checkpoints: opts.checkpoint_dir.clone().map(|dir| {
            // A restarted job's checkpoints go on from the one it came from.
            let first = restart.as_ref().map_or(1, |r| r.manifest.seq + 1);
            Rounds::new(dir, first, opts.checkpoint_interval, opts.checkpoint_timeout, opts.checkpoint_and_stop, Instant::now())
        }),
        fault_tolerant: opts.fault_tolerant,
        first_failure: None,
    };
    if job.checkpoints.is_some() {
        job.server.enable_checkpoints();
    }

    if opts.started_fd.is_some() {
        job.out.name = "gridmpirun (spawned job)";
    }
    // A spawn request's preput pairs: in the key-value space, where
    // MPICH's library looks for its parent's port (it also reads
    // PMI_SPAWNED, as hydra sets it); as variables through opts.env.
    for (k, v) in &opts.spawn_preput {
        job.server.preput(k, v);
    }
    // Every rank on this host: their TCP listeners need not be reachable
    // from elsewhere (unless the user chose the addresses).
    let mut rank_env = setup.rank_env.clone();
    // Our PMI server starts processes (MPI_Comm_spawn): the client asks
    // for it only when this names its job's key-value space (under
    // another launcher's PMI it refuses at once).
    rank_env.retain(|(k, _)| k != gridmpi_pmi::SPAWN_SERVER_VAR);
    rank_env.push((gridmpi_pmi::SPAWN_SERVER_VAR.to_string(), job.server.info().kvsname.clone()));
    if opts.started_fd.is_some() {
        rank_env.push(("PMI_SPAWNED".into(), "1".into()));
    }
    let all_here = job.hosts.iter().all(|h| h.local || h.ranks.is_empty());
    if all_here && !rank_env.iter().any(|(k, _)| k == "GRIDMPI_TCP_ADDR") {
        job.loopback_only = true;
        rank_env.push(("GRIDMPI_TCP_ADDR".into(), "127.0.0.1".into()));
    }
    let app_env: Vec<Vec<(String, String)>> =
        opts.apps.iter().enumerate().map(|(k, app)| app_env(&rank_env, &setup.cmdline_set, app, k)).collect();
    let bind = if opts.bind == Bind::None { String::new() } else { opts.bind.name().to_string() };
    // A host's cluster, from the hostfile, is its ranks' GRIDMPI_CLUSTER.
    let spec = |rank: u32| {
        let app = app_of_rank[rank as usize];
        let mut env = app_env[app].clone();
        if let Some(c) = &nodes[placement[rank as usize] as usize].cluster {
            env.retain(|(k, _)| k != "GRIDMPI_CLUSTER");
            env.push(("GRIDMPI_CLUSTER".into(), c.clone()));
        }
        // Set by us alone, from --checkpoint-dir: a rank that has it blocks
        // the checkpoint signal and answers it, which only a job whose
        // launcher asks for checkpoints may do.
        env.retain(|(k, _)| k != gridmpi_pmi::CHECKPOINT_DIR_VAR);
        if let Some(dir) = &opts.checkpoint_dir {
            env.push((gridmpi_pmi::CHECKPOINT_DIR_VAR.into(), dir.to_string_lossy().into_owned()));
        }
        // Likewise from --with-ft alone: a rank that has it goes on after
        // a failure, which only a job whose launcher goes on may do. (A
        // job started by MPI_Comm_spawn is not fault tolerant: its
        // gridmpirun is not given --with-ft.)
        env.retain(|(k, _)| k != gridmpi_pmi::FT_VAR);
        if opts.fault_tolerant {
            env.push((gridmpi_pmi::FT_VAR.into(), "ulfm".into()));
        }
        RankSpec {
            rank,
            argv: match &restart {
                Some(r) => r.argv(rank),
                None => opts.apps[app].program.clone(),
            },
            env,
            cwd: match &opts.apps[app].wdir {
                Some(d) => setup.cwd.join(d),
                None => setup.cwd.clone(),
            }
            .to_string_lossy()
            .into_owned(),
            bind: bind.clone(),
            stdin: rank == 0,
        }
    };

    // Remote hosts: one proxy each, started through the launch agent.
    for h in 0..job.hosts.len() {
        if job.hosts[h].local || job.hosts[h].ranks.is_empty() {
            continue;
        }
        let specs: Vec<RankSpec> = job.hosts[h].ranks.iter().map(|&r| spec(r)).collect();
        if let Err(e) = job.start_remote(h, &setup, specs, tx.clone()) {
            job.out.note(&format!("cannot reach host {}: {e}", job.hosts[h].name));
            for r in job.hosts[h].ranks.clone() {
                job.ranks[r as usize].done = true;
            }
            job.fail(1);
            break;
        }
    }
    // Local ranks: started directly.
    if let Some(h) = local_host {
        let mine = job.hosts[h].ranks.clone();
        if job.verbose && !mine.is_empty() {
            job.out.note(&format!("starting {} on {} (this machine)", rank_list(&mine), job.hosts[h].name));
        }
        let n_local = mine.len() as u32;
        for (i, &r) in mine.iter().enumerate() {
            if job.teardown_at.is_some() {
                job.ranks[r as usize].done = true;
                continue;
            }
            job.local.spawn(&spec(r), i as u32, n_local);
        }
    }

    // Rank 0's stdin.
    if sys::stdin_readable() {
        let tx = tx.clone();
        thread::spawn(move || {
            let mut stdin = io::stdin();
            let mut buf = vec![0u8; 65536];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Event::Stdin(None));
                        return;
                    }
                    Ok(n) => {
                        if tx.send(Event::Stdin(Some(buf[..n].to_vec()))).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    } else {
        let _ = tx.send(Event::Stdin(None));
    }
    drop(tx);

    // The event loop.
    let mut finished_at: Option<Instant> = None;
    loop {
        let now = Instant::now();
        job.check_deadlines(now);
        // (A nested job is over once it ended and said whether it started:
        // a failure after starting fails this job.)
        if job.ranks.iter().all(|r| r.done) && job.spawned.iter().all(|s| s.ended.is_some() && s.started.is_some()) {
            let t = *finished_at.get_or_insert_with(|| {
                job.close_links();
                now
            });
            let agents_left = job.hosts.iter().any(|h| h.agent_pid.is_some() && !h.agent_done);
            if !agents_left || now.duration_since(t) >= AGENT_LINGER {
                break;
            }
        }
        let deadline = job.next_deadline(now);
        let ev = match rx.recv_timeout(deadline.saturating_duration_since(now)) {
            Ok(ev) => ev,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        job.handle(ev);
    }
    job.out.finish();
    job.started_pipe.failed(job.out.last_note.as_deref().unwrap_or("the job ended before all its ranks started"));
    for h in &job.hosts {
        if let (Some(pid), false) = (h.agent_pid, h.agent_done) {
            sys::kill_group(pid, libc::SIGTERM);
        }
    }
    job.exit_code()
}

/// Each image a rank restarted on this machine reads must be here (an
/// image on another host's disk is only there); said before anything starts.
fn check_local_images(restart: &Restart, nodes: &[Node], placement: &[u32]) -> Result<(), String> {
    for (rank, &node) in placement.iter().enumerate() {
        let image = &restart.manifest.images[rank];
        if nodes[node as usize].local && !std::path::Path::new(&image.path).is_file() {
            return Err(format!(
                "rank {rank} runs on this machine, and its image {} (written on host {}) is not here: place the ranks where their images are (-hosts, -f), or copy them",
                image.path, image.host
            ));
        }
    }
    Ok(())
}

fn rank_list(ranks: &[u32]) -> String {
    match ranks {
        [one] => format!("rank {one}"),
        [first, .., last] if (*last - *first) as usize + 1 == ranks.len() => format!("ranks {first}-{last}"),
        _ => format!("ranks {}", ranks.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(",")),
    }
}

impl Job {
    fn start_remote(&mut self, h: usize, setup: &Setup, specs: Vec<RankSpec>, tx: mpsc::Sender<Event>) -> Result<(), String> {
        let host = self.hosts[h].name.clone();
        let mut cmd = Command::new(&setup.agent[0]);
        cmd.args(&setup.agent[1..]).arg(&host).args(&setup.proxy_command).arg("--proxy");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        // SAFETY: child_setup only makes async-signal-safe syscalls. Its own
        // process group keeps a terminal's Ctrl-C away from the agent: we
        // tear remote ranks down ourselves.
        unsafe {
            cmd.pre_exec(|| sys::child_setup(None, &[]));
        }
        if self.verbose {
            let shown: Vec<String> = std::iter::once(setup.agent.join(" "))
                .chain([host.clone()])
                .chain(setup.proxy_command.iter().cloned())
                .chain(["--proxy".to_string()])
                .collect();
            self.out.note(&format!("starting {} on {} via: {}", rank_list(&self.hosts[h].ranks), host, shown.join(" ")));
        }
        let mut child = cmd.spawn().map_err(|e| format!("cannot run the launch agent {:?}: {e}", setup.agent[0]))?;
        self.hosts[h].agent_pid = Some(child.id());
        ranks::adopt(child.id());
        let stdin = child.stdin.take().expect("piped stdin");
        let mut stdout = child.stdout.take().expect("piped stdout");
        drop(child);
        let link = Arc::new(Mutex::new(stdin));
        self.hosts[h].link = Some(link.clone());
        thread::spawn(move || {
            let reason = match link::skip_to_magic(&mut stdout) {
                Err(e) => e.to_string(),
                Ok(noise) => {
                    if !noise.is_empty() {
                        eprint!("{}", String::from_utf8_lossy(&noise));
                    }
                    loop {
                        match link::read_up(&mut stdout) {
                            Ok(Some(up)) => {
                                if tx.send(Event::Up { host: h, up }).is_err() {
                                    return;
                                }
                            }
                            Ok(None) => break "the connection closed".to_string(),
                            Err(e) => break e.to_string(),
                        }
                    }
                }
            };
            let _ = tx.send(Event::HostLost { host: h, reason });
        });
        let launch = Down::Launch { size: self.ranks.len() as u32, ranks: specs, kill_grace_ms: self.kill_grace.as_millis() as u64 };
        self.send(h, &launch);
        Ok(())
    }

    fn send(&mut self, h: usize, msg: &Down) {
        if let Some(link) = &self.hosts[h].link {
            let _ = link::write_all(&mut *link.lock().expect("link lock"), &msg.encode());
        }
    }

    fn close_links(&mut self) {
        for h in &mut self.hosts {
            h.link = None;
        }
    }

    fn describe(&self, rank: u32) -> String {
        let r = &self.ranks[rank as usize];
        let host = &self.hosts[r.host].name;
        match r.pid {
            Some(pid) => format!("rank {rank} (pid {pid} on host {host})"),
            None => format!("rank {rank} (on host {host})"),
        }
    }

    fn fail(&mut self, code: i32) {
        if self.failure.is_none() {
            self.failure = Some(code);
        }
        if self.started_pipe.waiting() {
            let why = self.out.last_note.clone().unwrap_or_else(|| format!("the job failed with exit code {code}"));
            self.started_pipe.failed(&why);
        }
        self.teardown();
    }

    fn teardown(&mut self) {
        if self.teardown_at.is_some() {
            return;
        }
        self.teardown_at = Some(Instant::now());
        self.signal_all(libc::SIGTERM);
    }

    fn signal_all(&mut self, sig: i32) {
        self.local.kill_all(sig);
        // Nested jobs (MPI_Comm_spawn): their gridmpirun stops its ranks.
        for s in self.spawned.iter().filter(|s| s.ended.is_none()) {
            sys::kill_group(s.pid, sig);
        }
        for h in 0..self.hosts.len() {
            if !self.hosts[h].local {
                self.send(h, &Down::Kill { signal: sig });
            }
        }
    }

    fn next_deadline(&self, now: Instant) -> Instant {
        let mut d = now + Duration::from_secs(1);
        if let Some(t) = self.out.next_deadline() {
            d = d.min(t);
        }
        for r in &self.ranks {
            if let Some((_, t)) = r.held_exit {
                d = d.min(t + EXIT_HOLD);
            }
        }
        if let (Some(t), None) = (self.teardown_at, self.killed_at) {
            d = d.min(t + self.kill_grace);
        }
        if let Some(t) = self.checkpoints.as_ref().and_then(Rounds::next_deadline) {
            d = d.min(t);
        }
        if let (Some((t, _)), None) = (self.time_limit, self.teardown_at) {
            d = d.min(t);
        }
        d.max(now)
    }

    fn check_deadlines(&mut self, now: Instant) {
        self.out.flush_stale(now);
        if let (Some((t, limit)), None) = (self.time_limit, self.teardown_at) {
            if now >= t {
                self.out.note(&format!("the job ran longer than its time limit of {} s (--timeout / MPIEXEC_TIMEOUT); killing it", limit.as_secs_f64()));
                self.fail(TIMED_OUT);
            }
        }
        self.checkpoint_deadlines(now);
        for rank in 0..self.ranks.len() as u32 {
            if let Some((_, t)) = self.ranks[rank as usize].held_exit {
                if now >= t + EXIT_HOLD {
                    self.release_exit(rank, true);
                }
            }
        }
        if let Some(t) = self.teardown_at {
            if self.killed_at.is_none() && now >= t + self.kill_grace {
                self.killed_at = Some(now);
                self.signal_all(libc::SIGKILL);
            }
        }
        if let Some(t) = self.killed_at {
            if now >= t + REMOTE_GIVE_UP {
                // Remote hosts that never confirmed: stop waiting for them.
                for r in self.ranks.iter_mut().filter(|r| !r.done) {
                    r.done = true;
                }
                for s in self.spawned.iter_mut() {
                    s.ended.get_or_insert(ExitStatus::Signal(libc::SIGKILL));
                    s.started.get_or_insert(false);
                }
            }
        }
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Up { host, up } => self.handle_up(host, up),
            Event::HostLost { host, reason } => {
                let lost: Vec<u32> = self.hosts[host].ranks.iter().copied().filter(|&r| !self.ranks[r as usize].done).collect();
                self.hosts[host].link = None;
                if lost.is_empty() {
                    return;
                }
                for &r in &lost {
                    self.ranks[r as usize].done = true;
                }
                if self.fault_tolerant && self.teardown_at.is_none() {
                    let what = format!("was lost with its host (lost contact with host {}: {reason})", self.hosts[host].name);
                    for &r in &lost {
                        self.rank_failed(r, &what, 1);
                    }
                } else if self.teardown_at.is_none() {
                    self.out.note(&format!(
                        "lost contact with host {} ({reason}) while {} still ran; killing the job",
                        self.hosts[host].name,
                        rank_list(&lost)
                    ));
                    self.fail(1);
                }
            }
            Event::Reaped { pid, status } => {
                if self.local.reaped(pid, status) {
                    return;
                }
                if let Some(id) = self.spawned.iter().position(|s| s.pid == pid) {
                    self.spawned[id].ended = Some(status);
                    return self.spawn_settled(id);
                }
                if let Some(h) = self.hosts.iter().position(|h| h.agent_pid == Some(pid)) {
                    self.hosts[h].agent_done = true;
                    let lost: Vec<u32> =
                        self.hosts[h].ranks.iter().copied().filter(|&r| !self.ranks[r as usize].done).collect();
                    if !lost.is_empty() && self.teardown_at.is_none() {
                        // The link reader reports the details; give it a moment.
                        let how = match status {
                            ExitStatus::Code(c) => format!("exited with code {c}"),
                            ExitStatus::Signal(s) => format!("was killed by {}", sys::signal_name(s)),
                        };
                        self.hosts[h].link = None;
                        for &r in &lost {
                            self.ranks[r as usize].done = true;
                        }
                        if self.fault_tolerant {
                            let what = format!("was lost with its host (the launch agent for host {} {how})", self.hosts[h].name);
                            for &r in &lost {
                                self.rank_failed(r, &what, 1);
                            }
                            return;
                        }
                        self.out.note(&format!(
                            "the launch agent for host {} {how} while {} still ran; killing the job",
                            self.hosts[h].name,
                            rank_list(&lost)
                        ));
                        self.fail(1);
                    }
                }
            }
            Event::Signal(libc::SIGQUIT) if self.checkpoints.is_some() => self.checkpoint_trigger(Trigger::Signal),
            Event::Signal(sig) => {
                if self.teardown_at.is_none() {
                    self.out.note(&format!("caught {}; killing the job", sys::signal_name(sig)));
                    self.failure.get_or_insert(128 + sig);
                    self.teardown();
                } else if self.killed_at.is_none() {
                    self.killed_at = Some(Instant::now());
                    self.signal_all(libc::SIGKILL);
                }
            }
            Event::SpawnStarted { id, result } => {
                let s = &mut self.spawned[id];
                s.started = Some(result.is_ok());
                let rank = s.rank;
                if self.verbose {
                    let what = match &result {
                        Ok(()) => "started".to_string(),
                        Err(e) => format!("could not start: {e}"),
                    };
                    let line = format!("spawned job {} ({}) for rank {rank}: {what}", id + 1, s.summary);
                    self.out.note(&line);
                }
                self.server.spawn_done(rank, result);
                self.drain_server();
                self.spawn_settled(id);
            }
            Event::Stdin(data) => {
                let h = self.ranks[0].host;
                if self.hosts[h].local {
                    match data {
                        Some(d) => self.local.write_stdin(d),
                        None => self.local.close_stdin(),
                    }
                } else {
                    let msg = match data {
                        Some(d) => Down::Stdin { data: d },
                        None => Down::StdinClose,
                    };
                    self.send(h, &msg);
                }
            }
        }
    }

    fn handle_up(&mut self, host: usize, up: Up) {
        let now = Instant::now();
        match up {
            Up::Hello { hostname } => {
                if self.verbose {
                    self.out.note(&format!("host {} answered (it calls itself {hostname})", self.hosts[host].name));
                }
            }
            Up::Started { rank, pid, cpus } => {
                if let Some(r) = self.ranks.get_mut(rank as usize) {
                    r.pid = Some(pid);
                    self.started_ranks += 1;
                    if self.started_ranks == self.ranks.len() as u32 && self.teardown_at.is_none() {
                        self.started_pipe.ok();
                    }
                }
                if let Some(bind) = self.report_bindings {
                    let what = if cpus.is_empty() { "not bound".to_string() } else { format!("bound to CPUs {cpus} (--bind-to {})", bind.name()) };
                    self.out.note(&format!("rank {rank} on host {}: {what}", self.hosts[host].name));
                }
            }
            Up::SpawnFailed { rank, error } => {
                if let Some(r) = self.ranks.get_mut(rank as usize) {
                    r.done = true;
                }
                if self.teardown_at.is_none() {
                    self.out.note(&format!("cannot start rank {rank} on host {}: {error}", self.hosts[host].name));
                }
                self.fail(ranks::spawn_failure_code(&error));
            }
            Up::Pmi { rank, data } => {
                if (rank as usize) < self.ranks.len() {
                    self.server.receive(rank, &data);
                    self.drain_server();
                }
            }
            Up::PmiClosed { rank } => {
                if (rank as usize) < self.ranks.len() {
                    self.server.disconnected(rank);
                    self.ranks[rank as usize].pmi_closed = true;
                    self.drain_server();
                    self.release_exit(rank, false);
                }
            }
            Up::Output { rank, stream, data } => self.out.data(rank, stream, &data, now),
            Up::OutputClosed { rank, stream } => {
                self.out.close(rank, stream);
                if let Some(r) = self.ranks.get_mut(rank as usize) {
                    r.open_outputs = r.open_outputs.saturating_sub(1);
                }
                self.release_exit(rank, false);
            }
            Up::Exited { rank, status } => {
                if let Some(r) = self.ranks.get_mut(rank as usize) {
                    r.held_exit = Some((status, now));
                }
                self.release_exit(rank, false);
            }
        }
    }

    fn drain_server(&mut self) {
        while let Some(ev) = self.server.poll_event() {
            match ev {
                PmiEvent::Reply { rank, bytes } => {
                    let h = self.ranks[rank as usize].host;
                    if self.hosts[h].local {
                        self.local.write_pmi(rank, &bytes);
                    } else {
                        self.send(h, &Down::Pmi { rank, data: bytes });
                    }
                }
                PmiEvent::Initialized { rank, .. } => self.ranks[rank as usize].initialized = true,
                PmiEvent::Finalized { rank } => self.ranks[rank as usize].finalized = true,
                PmiEvent::Abort { rank, exit_code, message } => {
                    if self.teardown_at.is_none() {
                        let what = if message.trim().is_empty() { String::new() } else { format!(": {}", message.trim()) };
                        self.out.note(&format!("{} aborted the job with exit code {exit_code}{what}", self.describe(rank)));
                    }
                    self.fail(exit_code);
                }
                PmiEvent::ProtocolError { rank, message } => {
                    if self.teardown_at.is_none() {
                        self.out.note(&format!("{} broke the PMI protocol: {message}; killing the job", self.describe(rank)));
                    }
                    self.fail(1);
                }
                PmiEvent::Spawn { rank, apps, env } => {
                    if let Err(e) = self.start_spawn(rank, &apps, &env) {
                        self.server.spawn_done(rank, Err(e));
                    }
                }
                PmiEvent::Unsupported { rank, command } => {
                    if self.warned_unsupported.insert(command.clone()) {
                        self.out.note(&format!("warning: {} asked for PMI {command}, which gridmpirun does not support", self.describe(rank)));
                    }
                }
                PmiEvent::Outage { rank, from, to, back, secs, budget } => {
                    if let Some(line) = self.outages.report(rank, &from, &to, back, secs, budget, Instant::now()) {
                        self.out.note(&line);
                    }
                }
                PmiEvent::CheckpointFrozen { seq } => {
                    let took = self.checkpoints.as_mut().and_then(|c| c.frozen(Instant::now()));
                    if let (true, Some(took)) = (self.verbose, took) {
                        self.out.note(&format!("checkpoint {seq}: every rank froze in {} ms; writing the images", took.as_millis()));
                    }
                }
                PmiEvent::CheckpointWritten { seq, images } => self.record_checkpoint(seq, images),
                PmiEvent::CheckpointAbandoned { seq, reason } => {
                    if let Some(c) = &mut self.checkpoints {
                        c.ended(false, Instant::now());
                    }
                    if self.teardown_at.is_none() {
                        self.out.note(&format!("checkpoint {seq} abandoned: {reason}"));
                    }
                }
            }
        }
    }

    /// MPI_Comm_spawn: start a nested gridmpirun for `apps`; the rank gets
    /// its answer when it says its ranks started (`Event::SpawnStarted`).
    fn start_spawn(&mut self, rank: u32, apps: &[gridmpi_pmi::SpawnApp], env: &[(String, String)]) -> Result<(), String> {
        if self.teardown_at.is_some() {
            return Err("the job is ending".into());
        }
        let prepared = spawn::prepare(&self.spawn_ctx, &self.node_used, apps, env, &hosts::is_local_host)?;
        if let (true, Some(host)) = (self.loopback_only, prepared.remote_hosts.first()) {
            return Err(format!(
                "this job runs on this machine alone, so its ranks listen on 127.0.0.1 only (GRIDMPI_TCP_ADDR): processes on host {host} could not reach them; name the hosts when starting the job (-hosts, -f), or set GRIDMPI_TCP_ADDR"
            ));
        }
        let id = self.spawned.len();
        // Said once: a program that spawns in a loop would repeat it.
        if prepared.oversubscribed > 0 && !self.warned_oversubscribed {
            self.warned_oversubscribed = true;
            let n: u32 = apps.iter().map(|a| a.maxprocs).sum();
            self.out.note(&format!(
                "warning: spawned job {} ({}): {} of its {n} processes have no free slot (MPI_UNIVERSE_SIZE {}); the hosts are oversubscribed (said once)",
                id + 1,
                prepared.summary,
                prepared.oversubscribed,
                self.spawn_ctx.universe
            ));
        }
        if self.verbose {
            let line = format!("rank {rank} spawns job {}: {} {}", id + 1, self.spawn_ctx.exe.display(), prepared.args.join(" ").replace('\n', ";"));
            self.out.note(&line);
        }
        let (pid, pipe) = spawn::start(&self.spawn_ctx, &prepared.args)?;
        ranks::adopt(pid);
        for &(n, k) in &prepared.usage {
            self.node_used[n] += k;
        }
        self.spawned.push(Spawned { pid, rank, summary: prepared.summary, usage: prepared.usage, started: None, ended: None });
        let tx = self.tx.clone();
        thread::spawn(move || {
            let result = spawn::read_started(pipe);
            let _ = tx.send(Event::SpawnStarted { id, result });
        });
        Ok(())
    }

    /// A nested job said whether it started, or ended: once both are known,
    /// its slots are free again, and a failure after it started fails
    /// this job as a failed rank does.
    fn spawn_settled(&mut self, id: usize) {
        let s = &mut self.spawned[id];
        if s.started == Some(false) || s.ended.is_some() {
            for (n, k) in std::mem::take(&mut s.usage) {
                self.node_used[n] = self.node_used[n].saturating_sub(k);
            }
        }
        let (Some(true), Some(status)) = (s.started, s.ended) else { return };
        if status == ExitStatus::Code(0) || self.teardown_at.is_some() {
            return;
        }
        let how = match status {
            ExitStatus::Code(c) => format!("exit code {c}"),
            ExitStatus::Signal(sig) => format!("signal {sig} ({})", sys::signal_name(sig)),
        };
        let line = format!("spawned job {} ({}, spawned by rank {}) failed with {how}; killing the job", id + 1, s.summary, s.rank);
        self.out.note(&line);
        self.fail(status.shell_code());
    }

    /// Handle a rank's exit once its PMI connection and output have drained
    /// (or `force` after [`EXIT_HOLD`]), so its last words come first.
    fn release_exit(&mut self, rank: u32, force: bool) {
        let Some(r) = self.ranks.get(rank as usize) else { return };
        let Some((status, _)) = r.held_exit else { return };
        if !force && (!r.pmi_closed || r.open_outputs != 0) {
            return;
        }
        let r = &mut self.ranks[rank as usize];
        r.held_exit = None;
        if r.done {
            return;
        }
        r.done = true;
        let (initialized, finalized) = (r.initialized, r.finalized);
        if self.server.checkpoint_in_progress().is_some() {
            self.server.checkpoint_abort(&format!("rank {rank} exited"));
            self.drain_server();
        }
        if self.teardown_at.is_some() {
            return;
        }
        let who = self.describe(rank);
        let stopping = self.checkpoints.as_ref().is_some_and(Rounds::stopping);
        if self.fault_tolerant {
            // What ends a job otherwise (below, with the same exit code)
            // is a failed rank here.
            let failure = match status {
                ExitStatus::Signal(s) => Some((format!("was killed by signal {s} ({})", sys::signal_name(s)), status.shell_code())),
                ExitStatus::Code(_) if finalized => None,
                ExitStatus::Code(c) if initialized => Some((format!("exited with code {c} before MPI_Finalize"), if c != 0 { c } else { 1 })),
                ExitStatus::Code(0) => None,
                ExitStatus::Code(c) => Some((format!("exited with code {c}"), c)),
            };
            if let Some((what, code)) = failure {
                return self.rank_failed(rank, &what, code);
            }
        }
        match status {
            // Told to exit after the checkpoint (--checkpoint-and-stop).
            ExitStatus::Code(0) if stopping => {}
            ExitStatus::Signal(s) => {
                self.out.note(&format!("{who} was killed by signal {s} ({}); killing the job", sys::signal_name(s)));
                self.fail(status.shell_code());
            }
            ExitStatus::Code(c) if finalized => {
                if c != 0 {
                    self.first_nonzero.get_or_insert(c);
                }
            }
            ExitStatus::Code(c) if initialized => {
                self.out.note(&format!("{who} exited with code {c} before MPI_Finalize; killing the job"));
                self.fail(if c != 0 { c } else { 1 });
            }
            ExitStatus::Code(0) => {}
            ExitStatus::Code(c) => {
                self.out.note(&format!("{who} exited with code {c}; killing the job"));
                self.fail(c);
            }
        }
    }

    /// Rank `rank` of a fault-tolerant job failed (`what` happened to it;
    /// `code`: what the job's exit code would be without --with-ft): say
    /// so, record it in the PMI server, and tell every rank.
    fn rank_failed(&mut self, rank: u32, what: &str, code: i32) {
        self.ranks[rank as usize].done = true;
        if !self.server.rank_failed(rank) {
            return;
        }
        self.first_failure.get_or_insert(code);
        self.out.note(&format!("{} {what}; the job goes on without it (--with-ft ulfm)", self.describe(rank)));
        // (Barriers that waited only for it are answered now.)
        self.drain_server();
        // The ranks' process groups, here and through each host's proxy;
        // ranks started with the signal blocked, so none dies of it.
        let sig = gridmpi_pmi::failure_signal();
        self.local.kill_all(sig);
        for h in 0..self.hosts.len() {
            let alive = self.hosts[h].ranks.iter().any(|&r| !self.ranks[r as usize].done);
            if !self.hosts[h].local && alive {
                self.send(h, &Down::Kill { signal: sig });
            }
        }
    }

    /// gridmpirun's exit code: the first failure that ended the job, else
    /// the first nonzero exit code of a rank that finalized. Ranks that
    /// failed in a fault-tolerant job do not count: the survivors handled
    /// it, unless none is left.
    fn exit_code(&self) -> i32 {
        if let Some(code) = self.failure {
            return code;
        }
        let failed = self.server.failed_ranks();
        if let (Some(code), true) = (self.first_failure, failed.len() == self.ranks.len()) {
            return code;
        }
        self.first_nonzero.unwrap_or(0)
    }

    /// A checkpoint is asked for: start a round, unless one is in
    /// progress or the job cannot be checkpointed now (said with
    /// --verbose: at each request, but once for the interval's).
    fn checkpoint_trigger(&mut self, why: Trigger) {
        let now = Instant::now();
        let Some(rounds) = &mut self.checkpoints else { return };
        let refused = if self.teardown_at.is_some() {
            Err("the job is ending".to_string())
        } else if rounds.stopping() {
            Err("the job is stopping after its checkpoint (--checkpoint-and-stop)".to_string())
        } else if let Some(seq) = rounds.in_progress() {
            Err(format!("checkpoint {seq} is in progress"))
        } else if self.spawned.iter().any(|s| s.ended.is_none()) {
            Err("processes started by MPI_Comm_spawn run, and they would not be in it".to_string())
        } else {
            self.server.checkpoint_start(rounds.next_seq())
        };
        if let Err(e) = refused {
            let new = rounds.skipped(now, &e);
            if self.verbose && (new || why == Trigger::Signal) {
                self.out.note(&format!("checkpoint not taken ({}): {e}", why.name()));
            }
            return;
        }
        let seq = rounds.begin(now);
        if self.verbose {
            self.out.note(&format!("checkpoint {seq} ({}): asking the {} ranks to freeze", why.name(), self.ranks.len()));
        }
        // The ranks' process groups, here and through each host's proxy.
        let sig = gridmpi_pmi::checkpoint_signal();
        self.local.kill_all(sig);
        for h in 0..self.hosts.len() {
            if !self.hosts[h].local && !self.hosts[h].ranks.is_empty() {
                self.send(h, &Down::Kill { signal: sig });
            }
        }
    }

    /// Every rank wrote its image of checkpoint `seq`: write the manifest
    /// and `latest`, remove the checkpoint before the previous one, and let
    /// the ranks go on (or stop).
    fn record_checkpoint(&mut self, seq: u64, images: Vec<ImageReport>) {
        let now = Instant::now();
        let Some(rounds) = &mut self.checkpoints else { return };
        let manifest = Manifest { seq, images };
        if let Err(e) = checkpoint_dir::record(&rounds.dir, &manifest) {
            // The CheckpointAbandoned event that follows says it.
            return self.server.checkpoint_abort(&format!("cannot record it: {e}"));
        }
        let pruned = checkpoint_dir::prune(&rounds.dir, seq);
        rounds.ended(true, now);
        let stop = rounds.and_stop;
        if stop {
            rounds.stop(now);
        }
        let where_ = checkpoint_dir::checkpoint_path(&rounds.dir, seq);
        let megabytes = manifest.images.iter().map(|i| i.bytes).sum::<u64>() as f64 / 1e6;
        let slowest = manifest.images.iter().map(|i| i.ms).max().unwrap_or(0);
        self.out.note(&format!(
            "checkpoint {seq} written: {} ranks, {megabytes:.1} MB, slowest rank {slowest} ms, in {}",
            manifest.size(),
            where_.display()
        ));
        if let Err(e) = pruned {
            self.out.note(&format!("warning: {e}"));
        }
        if stop && self.verbose {
            self.out.note("stopping the job after its checkpoint (--checkpoint-and-stop)");
        }
        self.server.checkpoint_finish(stop);
    }

    /// The checkpoints' clock: the interval, the freeze timeout, the ranks
    /// told to stop that have not.
    fn checkpoint_deadlines(&mut self, now: Instant) {
        let Some(rounds) = &mut self.checkpoints else { return };
        if rounds.interval_due(now) {
            return self.checkpoint_trigger(Trigger::Interval);
        }
        if let Some((seq, timeout)) = rounds.freeze_overdue(now) {
            if self.server.checkpoint_in_progress() != Some(seq) {
                // (Not expected: the server's end of a round is an event.)
                return rounds.ended(false, now);
            }
            let late = self.server.checkpoint_unanswered();
            let who = if late.is_empty() { "some rank".to_string() } else { rank_list(&late) };
            // The CheckpointAbandoned event says it and ends the round.
            self.server.checkpoint_abort(&format!("{who} did not freeze within {} s (--checkpoint-timeout)", timeout.as_secs_f64()));
            return self.drain_server();
        }
        if rounds.stop_overdue(now) && self.teardown_at.is_none() {
            let left: Vec<u32> = (0..self.ranks.len() as u32).filter(|&r| !self.ranks[r as usize].done).collect();
            if !left.is_empty() {
                self.out.note(&format!("{} still running {} s after the checkpoint that stops the job; killing it", rank_list(&left), crate::checkpoint_rounds::STOP_GRACE.as_secs()));
                self.teardown();
            }
        }
    }
}

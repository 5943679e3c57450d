//! Command-line options, in MPI's idiosyncratic syntax: `-n 4`, `-np 4`,
//! `-genv NAME VALUE`, `-x NAME[=VALUE]`, single or double dashes, and
//! `--name=value` for the long ones. Options end at the program name.
//!
//! MPMD: `gridmpirun -n 1 a : -n 2 b ARGS` runs several programs in one
//! job, as MPICH and Open MPI write it. A lone `:` always ends a program's
//! arguments. Each part has its own rank count and environment
//! ([`Scope::Program`] options); the others apply to the whole job and
//! come before the first program (after a `:` they are an error, never
//! silently applied to something else). `-x`, `-envlist` and `-wdir` given
//! before the first program apply to every rank, as they always did; given
//! in a later part, to that part's ranks.
//!
//! To add an option: one entry in [`OPTIONS`].

use std::path::PathBuf;
use std::time::Duration;

use crate::binding::Bind;
use crate::hosts::{parse_host_list, parse_map_by, HostEntry, MapBy};

/// What gridmpirun was asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Run,
    Info,
    Help,
    Version,
    /// Hidden: serve one remote host for a gridmpirun elsewhere.
    Proxy,
    /// Hidden-ish: act as a PMI test rank (`gridmpirun -n 4 gridmpirun --pmi-check`).
    PmiCheck(Vec<String>),
    /// `--rendezvous-server`: where separately started groups meet.
    RendezvousServer(crate::rendezvous::Args),
    /// `--relay ADDR:PORT`: forward connections for ranks that cannot
    /// reach each other (on a site's gateway host).
    Relay { listen: String, secret_file: PathBuf, address_file: Option<PathBuf> },
}

/// One program of the job (one part of an MPMD line).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct App {
    /// `-n`: how many ranks run it (default: the slots of the host list
    /// for a job of one program, else 1).
    pub np: Option<u32>,
    /// Program and its arguments.
    pub program: Vec<String>,
    /// Environment for this program's ranks only, after the job's.
    pub env: Vec<(String, String)>,
    /// `-wdir` after a `:`: this program's working directory (relative to
    /// the job's), instead of the job's.
    pub wdir: Option<PathBuf>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub mode: Mode,
    /// The programs, in rank order: the first gets ranks 0.., the next
    /// the ranks after those. Never empty.
    pub apps: Vec<App>,
    pub hosts: Vec<HostEntry>,
    pub hostfile: Option<PathBuf>,
    pub ppn: Option<u32>,
    /// Environment given to every rank, in order (later wins).
    pub env: Vec<(String, String)>,
    pub tag_output: bool,
    pub launcher: Option<String>,
    pub wdir: Option<PathBuf>,
    pub verbose: bool,
    /// `--trace DIR` (absolute): every rank records its TCP history there.
    pub trace: Option<PathBuf>,
    /// `--bind-to`: what each rank is bound to on its host.
    pub bind: Bind,
    /// `--map-by`: how ranks are spread over the hosts.
    pub map_by: MapBy,
    /// `--oversubscribe`: accepted; more ranks than slots is always allowed.
    pub oversubscribe: bool,
    /// `--report-bindings`: say on stderr where each rank is bound.
    pub report_bindings: bool,
    /// `--rendezvous-server ADDR:PORT`: serve a rendezvous there.
    pub rendezvous_listen: Option<String>,
    /// `--groups N`: how many groups the rendezvous waits for.
    pub groups: Option<u32>,
    /// `--secret-file`: the job secret (the server creates it).
    pub secret_file: Option<PathBuf>,
    /// `--address-file`: where the server writes its address.
    pub address_file: Option<PathBuf>,
    /// `--relay ADDR:PORT`: be a relay listening there.
    pub relay_listen: Option<String>,
    /// Hidden, for a gridmpirun started by another for MPI_Comm_spawn
    /// (`--started-fd N`): write one line on this descriptor once every
    /// rank has started (`ok`) or the job failed before that (`failed WHY`).
    pub started_fd: Option<i32>,
    /// Hidden (`--universe N`): MPI_UNIVERSE_SIZE, as the parent job's.
    pub universe: Option<u32>,
    /// Hidden (`--spawn-hosts TEXT`): hosts in hostfile syntax, one per
    /// line, as the parent launcher placed the spawned processes.
    pub spawn_hosts: Option<String>,
    /// Hidden (`--spawn-preput KEY VALUE`, repeated): the spawn request's
    /// preput pairs, stored in the job's key-value space (and, when KEY
    /// can be one, set as variables of every rank).
    pub spawn_preput: Vec<(String, String)>,
    /// `--checkpoint-dir DIR` (absolute), or `--restart`'s DIR: the job is
    /// checkpointed, into DIR (docs/checkpoint.md).
    pub checkpoint_dir: Option<PathBuf>,
    /// `--checkpoint-interval`: a checkpoint this long after the last one ended.
    pub checkpoint_interval: Option<Duration>,
    /// `--checkpoint-timeout`: how long every rank has to freeze.
    pub checkpoint_timeout: Option<Duration>,
    /// `--timeout SECONDS` (or MPIEXEC_TIMEOUT): the job is killed when
    /// it runs longer.
    pub timeout: Option<Duration>,
    /// `--checkpoint-and-stop`: the job ends after its first checkpoint.
    pub checkpoint_and_stop: bool,
    /// `--restart DIR` (absolute): run the ranks of DIR's latest
    /// checkpoint instead of a program.
    pub restart: Option<PathBuf>,
    /// `--with-ft ulfm`: a rank that dies does not end the job; the others
    /// are told (`--with-ft none`, the default: it ends the job).
    pub fault_tolerant: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            mode: Mode::Run,
            apps: vec![App::default()],
            hosts: Vec::new(),
            hostfile: None,
            ppn: None,
            env: Vec::new(),
            tag_output: false,
            launcher: None,
            wdir: None,
            verbose: false,
            trace: None,
            bind: Bind::None,
            map_by: MapBy::Slot,
            oversubscribe: false,
            report_bindings: false,
            rendezvous_listen: None,
            groups: None,
            secret_file: None,
            address_file: None,
            relay_listen: None,
            started_fd: None,
            universe: None,
            spawn_hosts: None,
            spawn_preput: Vec::new(),
            checkpoint_dir: None,
            checkpoint_interval: None,
            checkpoint_timeout: None,
            timeout: None,
            checkpoint_and_stop: false,
            restart: None,
            fault_tolerant: false,
        }
    }
}

/// Whether an option belongs to one program of an MPMD line or to the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Job,
    Program,
}

type Handler = fn(&mut Options, &[String], &dyn Fn(&str) -> Option<String>) -> Result<(), String>;

/// One option: its spellings, how many values it takes, what it does.
pub struct OptionSpec {
    pub names: &'static [&'static str],
    pub values: usize,
    pub metavar: &'static str,
    pub help: &'static str,
    pub scope: Scope,
    handler: Handler,
}

fn count(name: &str, v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name} needs a positive number, got {v:?}")),
    }
}

/// A positive duration in the project's notation (`30s`, `1.5s`, `500ms`).
fn positive_duration(name: &str, v: &str) -> Result<Duration, String> {
    match gridmpi_config::units::parse_duration(v, gridmpi_config::units::Bare::Refused) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(format!("{name} needs a duration longer than 0, got {v:?}")),
        Err(e) => Err(format!("{name}: {e}")),
    }
}

/// A time limit in whole seconds (`--timeout`, MPIEXEC_TIMEOUT), as the
/// other launchers take it; a duration with a unit is taken too.
pub fn timeout_seconds(name: &str, v: &str) -> Result<Duration, String> {
    match v.trim().parse::<u64>() {
        Ok(0) => Err(format!("{name} needs a time longer than 0 seconds, got {v:?}")),
        Ok(s) => Ok(Duration::from_secs(s)),
        Err(_) => positive_duration(name, v.trim()),
    }
}

fn check_env_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!("{name:?} is not an environment variable name"))
    }
}

/// The part of the command line being read: the last program's.
fn current(o: &mut Options) -> &mut App {
    o.apps.last_mut().expect("there is always a program being read")
}

/// Where `-x` and `-envlist` put a variable: before the first program,
/// every rank (Open MPI's meaning, and what they always did here); after a
/// `:`, that program's ranks.
fn env_target(o: &mut Options) -> &mut Vec<(String, String)> {
    if o.apps.len() == 1 {
        &mut o.env
    } else {
        &mut current(o).env
    }
}

pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        names: &["-n", "-np", "-c", "--n", "--np"],
        values: 1,
        metavar: "N",
        help: "number of ranks of the program that follows (default: the slots of the host list, else 1; in an MPMD line 1 per program)",
        scope: Scope::Program,
        handler: |o, v, _| {
            current(o).np = Some(count("-n", &v[0])?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["-hosts", "-host", "--host", "--hosts", "-H"],
        values: 1,
        metavar: "H1,H2:SLOTS,...",
        help: "hosts to run on, each with an optional slot count",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.hosts.extend(parse_host_list(&v[0]).map_err(|e| format!("-hosts: {e}"))?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["-f", "-hostfile", "--hostfile", "-machinefile", "--machinefile"],
        values: 1,
        metavar: "FILE",
        help: "file of hosts, one per line: `host`, `host:N`, or `host slots=N max_slots=M`, optionally `cluster=NAME`; # comments",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.hostfile = Some(PathBuf::from(&v[0]));
            Ok(())
        },
    },
    OptionSpec {
        names: &["-ppn", "--ppn", "-npernode", "--npernode"],
        values: 1,
        metavar: "N",
        help: "ranks per host (overrides slot counts)",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.ppn = Some(count("-ppn", &v[0])?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["-genv", "--genv"],
        values: 2,
        metavar: "NAME VALUE",
        help: "set NAME=VALUE in every rank's environment",
        scope: Scope::Job,
        handler: |o, v, _| {
            check_env_name(&v[0])?;
            o.env.push((v[0].clone(), v[1].clone()));
            Ok(())
        },
    },
    OptionSpec {
        names: &["-env", "--env"],
        values: 2,
        metavar: "NAME VALUE",
        help: "set NAME=VALUE in the environment of the program that follows (every rank's in a job of one program)",
        scope: Scope::Program,
        handler: |o, v, _| {
            check_env_name(&v[0])?;
            current(o).env.push((v[0].clone(), v[1].clone()));
            Ok(())
        },
    },
    OptionSpec {
        names: &["-x", "--x"],
        values: 1,
        metavar: "NAME[=VALUE]",
        help: "pass NAME (with this VALUE, or its value here) to every rank; after a `:`, to that program's ranks",
        scope: Scope::Program,
        handler: |o, v, getenv| {
            let (name, value) = match v[0].split_once('=') {
                Some((n, val)) => (n.to_string(), val.to_string()),
                None => {
                    let val = getenv(&v[0]).ok_or_else(|| format!("-x {}: {} is not set here", v[0], v[0]))?;
                    (v[0].clone(), val)
                }
            };
            check_env_name(&name)?;
            env_target(o).push((name, value));
            Ok(())
        },
    },
    OptionSpec {
        names: &["-genvlist", "--genvlist"],
        values: 1,
        metavar: "NAME1,NAME2,...",
        help: "pass these variables, with their values here, to every rank",
        scope: Scope::Job,
        handler: |o, v, getenv| {
            for name in v[0].split(',').map(str::trim).filter(|s| !s.is_empty()) {
                check_env_name(name)?;
                if let Some(val) = getenv(name) {
                    o.env.push((name.to_string(), val));
                }
            }
            Ok(())
        },
    },
    OptionSpec {
        names: &["-envlist", "--envlist"],
        values: 1,
        metavar: "NAME1,NAME2,...",
        help: "as -genvlist; after a `:`, for that program's ranks",
        scope: Scope::Program,
        handler: |o, v, getenv| {
            for name in v[0].split(',').map(str::trim).filter(|s| !s.is_empty()) {
                check_env_name(name)?;
                if let Some(val) = getenv(name) {
                    env_target(o).push((name.to_string(), val));
                }
            }
            Ok(())
        },
    },
    OptionSpec {
        names: &["--bind-to", "-bind-to"],
        values: 1,
        metavar: "core|socket|numa|hwthread|none",
        help: "bind each rank to one core (socket, NUMA node, hardware thread) of those its host lets gridmpirun use, taken round-robin by the ranks of the host (default: none)",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.bind = Bind::parse(&v[0])?;
            Ok(())
        },
    },
    OptionSpec {
        names: &["--map-by", "-map-by"],
        values: 1,
        metavar: "slot|node|ppr:N:node|...",
        help: "spread ranks over the hosts: slot fills each host's slots before the next (so do core, socket, numa, hwthread); node puts one rank on each host in turn; ppr:N:node is -ppn N",
        scope: Scope::Job,
        handler: |o, v, _| {
            let (map, ppn) = parse_map_by(&v[0])?;
            o.map_by = map;
            if ppn.is_some() {
                o.ppn = ppn;
            }
            if v[0].to_ascii_lowercase().split(':').any(|m| m == "oversubscribe") {
                o.oversubscribe = true;
            }
            Ok(())
        },
    },
    OptionSpec {
        names: &["--oversubscribe", "-oversubscribe"],
        values: 0,
        metavar: "",
        help: "allow more ranks than slots (accepted for Open MPI command lines: gridmpirun always allows it, up to a hostfile's max_slots)",
        scope: Scope::Job,
        handler: |o, _, _| {
            o.oversubscribe = true;
            Ok(())
        },
    },
    OptionSpec {
        names: &["--report-bindings", "-report-bindings"],
        values: 0,
        metavar: "",
        help: "print each rank's host and CPU list on stderr when it starts",
        scope: Scope::Job,
        handler: |o, _, _| {
            o.report_bindings = true;
            Ok(())
        },
    },
    OptionSpec {
        names: &["--tag-output", "-tag-output", "-l", "-prepend-rank", "--prepend-rank"],
        values: 0,
        metavar: "",
        help: "prefix every output line with [rank]",
        scope: Scope::Job,
        handler: |o, _, _| {
            o.tag_output = true;
            Ok(())
        },
    },
    OptionSpec {
        names: &["--launcher", "-launcher", "-launcher-exec", "--launcher-exec", "-bootstrap", "-rsh"],
        values: 1,
        metavar: "CMD",
        help: "launch agent for remote hosts, run as `CMD HOST COMMAND...` (default: $GRIDMPI_LAUNCHER, ssh)",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.launcher = Some(v[0].clone());
            Ok(())
        },
    },
    OptionSpec {
        names: &["-wdir", "--wdir", "-wd", "--wd", "-dir"],
        values: 1,
        metavar: "DIR",
        help: "working directory of the ranks (default: the current one); after a `:`, of that program's ranks",
        scope: Scope::Program,
        handler: |o, v, _| {
            if o.apps.len() == 1 {
                o.wdir = Some(PathBuf::from(&v[0]));
            } else {
                current(o).wdir = Some(PathBuf::from(&v[0]));
            }
            Ok(())
        },
    },
    OptionSpec {
        names: &["-v", "--verbose", "-verbose"],
        values: 0,
        metavar: "",
        help: "say what is launched where",
        scope: Scope::Job,
        handler: |o, _, _| {
            o.verbose = true;
            Ok(())
        },
    },
    OptionSpec {
        names: &["--trace", "-trace"],
        values: 1,
        metavar: "DIR",
        help: "every rank records the TCP history of its connections into DIR/rank-N.trace (GRIDMPI_TRACE); read it with gridmpi-trace",
        scope: Scope::Job,
        handler: |o, v, _| {
            let dir = absolute(&v[0], "--trace")?;
            o.env.retain(|(k, _)| k != "GRIDMPI_TRACE");
            o.env.push(("GRIDMPI_TRACE".into(), dir.to_string_lossy().into_owned()));
            o.trace = Some(dir);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--checkpoint-dir", "-checkpoint-dir"],
        values: 1,
        metavar: "DIR",
        help: "make the job checkpointable: when gridmpirun gets SIGQUIT (what gridmpi-checkpoint PID sends) and every --checkpoint-interval, every rank's image goes into DIR/ckpt-N (DIR is created, mode 700; the last two checkpoints are kept); go on from the latest with --restart DIR",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.checkpoint_dir = Some(absolute(&v[0], "--checkpoint-dir")?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--checkpoint-interval", "-checkpoint-interval"],
        values: 1,
        metavar: "DURATION",
        help: "with --checkpoint-dir: take a checkpoint DURATION (such as 600s) after the start, then after each checkpoint ends",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.checkpoint_interval = Some(positive_duration("--checkpoint-interval", &v[0])?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--timeout", "-timeout"],
        values: 1,
        metavar: "SECONDS",
        help: "kill the job when it has run longer than SECONDS (also MPIEXEC_TIMEOUT, as mpiexec of MPICH and Open MPI read it); gridmpirun then exits with 124",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.timeout = Some(timeout_seconds("--timeout", &v[0])?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--checkpoint-timeout", "-checkpoint-timeout"],
        values: 1,
        metavar: "DURATION",
        help: "with --checkpoint-dir: give up a checkpoint (the job goes on) when the ranks have not all frozen after DURATION (default 60s)",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.checkpoint_timeout = Some(positive_duration("--checkpoint-timeout", &v[0])?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--checkpoint-and-stop", "-checkpoint-and-stop"],
        values: 0,
        metavar: "",
        help: "with --checkpoint-dir: the ranks exit once the first checkpoint is written, and so does gridmpirun (exit status 0)",
        scope: Scope::Job,
        handler: |o, _, _| {
            o.checkpoint_and_stop = true;
            Ok(())
        },
    },
    OptionSpec {
        names: &["--restart", "-restart"],
        values: 1,
        metavar: "DIR",
        help: "restart the job of DIR's latest checkpoint (no program; -n, if given, must be its size; hosts as usual: rank R reads its image at the path written in the manifest, on whichever host it runs); checkpoints go on into DIR unless --checkpoint-dir says otherwise",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.restart = Some(absolute(&v[0], "--restart")?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--with-ft", "-with-ft"],
        values: 1,
        metavar: "none|ulfm",
        help: "ulfm: a fault-tolerant job (Open MPI 5's spelling): a rank that dies before MPI_Finalize, or whose host is lost, does not end the job; gridmpirun says so and tells the other ranks, which go on (MPI_Comm_revoke, MPI_Comm_shrink, ...). gridmpirun then exits 0 if every other rank exited 0 after MPI_Finalize (the program handled the failure), else with the first nonzero code among them. none (the default): a failed rank ends the job. Not with --checkpoint-dir or --restart",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.fault_tolerant = match v[0].as_str() {
                "ulfm" => true,
                "none" => false,
                other => return Err(format!("--with-ft {other:?}: not a fault-tolerance model (ulfm, or none: the default)")),
            };
            Ok(())
        },
    },
    OptionSpec {
        names: &["--topology", "-topology"],
        values: 1,
        metavar: "FILE",
        help: "the clusters and the WAN between them (GRIDMPI_TOPOLOGY; format in docs/grid.md); FILE must be readable at the same path on every host",
        scope: Scope::Job,
        handler: |o, v, _| {
            let path = absolute(&v[0], "--topology")?;
            std::fs::metadata(&path).map_err(|e| format!("--topology {}: {e}", path.display()))?;
            o.env.retain(|(k, _)| k != "GRIDMPI_TOPOLOGY");
            o.env.push(("GRIDMPI_TOPOLOGY".into(), path.to_string_lossy().into_owned()));
            Ok(())
        },
    },
    OptionSpec {
        names: &["--info", "-info"],
        values: 0,
        metavar: "",
        help: "print every GridMPI setting with its value and where it came from",
        scope: Scope::Job,
        handler: |o, _, _| {
            o.mode = Mode::Info;
            Ok(())
        },
    },
    OptionSpec {
        names: &["-h", "--help", "-help"],
        values: 0,
        metavar: "",
        help: "this help",
        scope: Scope::Job,
        handler: |o, _, _| {
            o.mode = Mode::Help;
            Ok(())
        },
    },
    OptionSpec {
        names: &["--version", "-version", "-V"],
        values: 0,
        metavar: "",
        help: "print the version",
        scope: Scope::Job,
        handler: |o, _, _| {
            o.mode = Mode::Version;
            Ok(())
        },
    },
    OptionSpec {
        names: &["--rendezvous", "-rendezvous"],
        values: 1,
        metavar: "HOST:PORT",
        help: "join the ranks of this command to a job formed at a rendezvous server (GRIDMPI_RENDEZVOUS); see docs/grid.md",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.env.push(("GRIDMPI_RENDEZVOUS".into(), v[0].clone()));
            Ok(())
        },
    },
    OptionSpec {
        names: &["--rendezvous-server", "-rendezvous-server"],
        values: 1,
        metavar: "ADDR:PORT",
        help: "be the rendezvous server where --groups separately started groups of ranks meet (no program)",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.rendezvous_listen = Some(v[0].clone());
            Ok(())
        },
    },
    OptionSpec {
        names: &["--relay", "-relay"],
        values: 1,
        metavar: "ADDR:PORT",
        help: "be a relay on a site's gateway host: forward connections between ranks that cannot reach each other (ranks say GRIDMPI_RELAY=HOST:PORT; no program)",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.relay_listen = Some(v[0].clone());
            Ok(())
        },
    },
    OptionSpec {
        names: &["--groups", "-groups"],
        values: 1,
        metavar: "N",
        help: "with --rendezvous-server: how many groups form the job",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.groups = Some(count("--groups", &v[0])?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--secret-file", "-secret-file"],
        values: 1,
        metavar: "PATH",
        help: "the job secret of a rendezvous (default ~/.gridmpi/job-secret; the server creates it, mode 600; copy it to every site)",
        scope: Scope::Job,
        handler: |o, v, _| {
            let path = absolute(&v[0], "--secret-file")?;
            o.env.push(("GRIDMPI_JOB_SECRET_FILE".into(), path.display().to_string()));
            o.secret_file = Some(path);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--address-file", "-address-file"],
        values: 1,
        metavar: "PATH",
        help: "with --rendezvous-server: write the address listened on there (useful with port 0)",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.address_file = Some(absolute(&v[0], "--address-file")?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--started-fd"],
        values: 1,
        metavar: "FD",
        help: "",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.started_fd = Some(v[0].parse::<i32>().ok().filter(|&fd| fd > 2).ok_or_else(|| format!("--started-fd needs a descriptor number, got {:?}", v[0]))?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--universe"],
        values: 1,
        metavar: "N",
        help: "",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.universe = Some(count("--universe", &v[0])?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--spawn-hosts"],
        values: 1,
        metavar: "TEXT",
        help: "",
        scope: Scope::Job,
        handler: |o, v, _| {
            o.hosts.extend(crate::hosts::parse_hostfile(&v[0]).map_err(|e| format!("--spawn-hosts: {e}"))?);
            o.spawn_hosts = Some(v[0].clone());
            Ok(())
        },
    },
    OptionSpec {
        names: &["--spawn-preput"],
        values: 2,
        metavar: "KEY VALUE",
        help: "",
        scope: Scope::Job,
        handler: |o, v, _| {
            if check_env_name(&v[0]).is_ok() {
                o.env.push((v[0].clone(), v[1].clone()));
            }
            o.spawn_preput.push((v[0].clone(), v[1].clone()));
            Ok(())
        },
    },
    OptionSpec {
        names: &["--proxy"],
        values: 0,
        metavar: "",
        help: "",
        scope: Scope::Job,
        handler: |o, _, _| {
            o.mode = Mode::Proxy;
            Ok(())
        },
    },
];

/// `p` made absolute against the current directory (ranks may run
/// elsewhere).
fn absolute(p: &str, option: &str) -> Result<PathBuf, String> {
    if p.is_empty() {
        return Err(format!("{option} needs a path"));
    }
    let path = PathBuf::from(p);
    if path.is_absolute() {
        return Ok(path);
    }
    Ok(std::env::current_dir().map_err(|e| format!("{option}: cannot read the current directory: {e}"))?.join(path))
}

fn find_option(name: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.names.contains(&name))
}

/// Parse arguments (without the program name). `getenv` reads the
/// launcher's environment (for `-x NAME`).
pub fn parse(args: &[String], getenv: &dyn Fn(&str) -> Option<String>) -> Result<Options, String> {
    let mut o = Options::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == ":" {
            return Err(if o.apps.len() == 1 {
                "':' before any program (MPMD is: gridmpirun [options] -n N PROGRAM [ARGS] : -n M PROGRAM [ARGS])".into()
            } else {
                format!("':' with no program before it (program {} of the MPMD line is missing)", o.apps.len())
            });
        }
        if arg == "--" || !arg.starts_with('-') || arg == "-" {
            // The program and its arguments, up to a lone ':' (which
            // starts the next program of an MPMD line).
            let from = if arg == "--" { i + 1 } else { i };
            let end = args[from..].iter().position(|a| a == ":").map_or(args.len(), |k| from + k);
            current(&mut o).program = args[from..end].to_vec();
            if current(&mut o).program.is_empty() {
                return Err("no program after -- (usage: gridmpirun [options] PROGRAM [ARGS...])".into());
            }
            if end == args.len() {
                break;
            }
            o.apps.push(App::default());
            i = end + 1;
            if i == args.len() {
                return Err("nothing after the last ':' (each ':' is followed by [options] PROGRAM [ARGS])".into());
            }
            continue;
        }
        if arg == "--pmi-check" && o.apps.len() == 1 {
            o.mode = Mode::PmiCheck(args[i + 1..].to_vec());
            return Ok(o);
        }
        // --name=value
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if arg.starts_with("--") || find_option(n).is_some_and(|s| s.values == 1) => {
                (n.to_string(), Some(v.to_string()))
            }
            _ => (arg.clone(), None),
        };
        // -n4 (glued number)
        let (spec, inline) = match find_option(&name) {
            Some(s) => (s, inline),
            None => match name.strip_prefix("-np").or_else(|| name.strip_prefix("-n")) {
                Some(num) if !num.is_empty() && num.chars().all(|c| c.is_ascii_digit()) => {
                    (find_option("-n").expect("-n exists"), Some(num.to_string()))
                }
                _ => return Err(format!("unknown option {arg} (see gridmpirun --help)")),
            },
        };
        if spec.scope == Scope::Job && o.apps.len() > 1 {
            return Err(format!(
                "{name} applies to the whole job: give it before the first program, not after a ':' (options after a ':' are -n, -env, -x, -envlist)"
            ));
        }
        let mut values = Vec::new();
        if let Some(v) = inline {
            if spec.values != 1 {
                return Err(format!("{name} does not take a value with ="));
            }
            values.push(v);
        } else {
            for k in 0..spec.values {
                let v = args.get(i + 1 + k).filter(|v| *v != ":").ok_or_else(|| {
                    format!("{name} needs {} value{} ({})", spec.values, if spec.values > 1 { "s" } else { "" }, spec.metavar)
                })?;
                values.push(v.clone());
            }
            i += spec.values;
        }
        (spec.handler)(&mut o, &values, getenv)?;
        i += 1;
    }
    if let Some(listen) = o.relay_listen.clone() {
        if o.rendezvous_listen.is_some() || o.groups.is_some() || !o.apps[0].program.is_empty() {
            return Err("--relay runs alone: no program, no --rendezvous-server or --groups (start a relay and a rendezvous as two processes)".into());
        }
        let secret_file = o.secret_file.clone().unwrap_or_else(gridmpi_pmi::rendezvous::default_secret_file);
        o.mode = Mode::Relay { listen, secret_file, address_file: o.address_file.take() };
    } else if let Some(listen) = o.rendezvous_listen.clone() {
        if o.mode == Mode::Run {
            if !o.apps[0].program.is_empty() {
                return Err("--rendezvous-server runs no program: start the groups' ranks with --rendezvous HOST:PORT".into());
            }
            let groups = o.groups.ok_or("--rendezvous-server needs --groups N (how many groups form the job)")?;
            let secret_file = o.secret_file.clone().unwrap_or_else(gridmpi_pmi::rendezvous::default_secret_file);
            o.mode = Mode::RendezvousServer(crate::rendezvous::Args { listen, groups, secret_file, address_file: o.address_file.clone() });
        }
    } else if o.groups.is_some() || o.address_file.is_some() {
        return Err("--groups and --address-file go with --rendezvous-server (--address-file also with --relay)".into());
    }
    if let Some(dir) = &o.restart {
        if let Some(program) = o.apps.iter().map(|a| &a.program).find(|p| !p.is_empty()) {
            return Err(format!(
                "--restart {} runs the checkpoint's processes: no program may be given (got {})",
                dir.display(),
                program.join(" ")
            ));
        }
        if o.checkpoint_dir.is_none() {
            o.checkpoint_dir = Some(dir.clone());
        }
    }
    if let (true, Some(dir)) = (o.fault_tolerant, &o.checkpoint_dir) {
        // A checkpoint round needs every rank, and a restart every image.
        let what = if o.restart.is_some() { "--restart" } else { "--checkpoint-dir" };
        return Err(format!(
            "--with-ft ulfm and {what} {} are not supported together: a fault-tolerant job cannot be checkpointed",
            dir.display()
        ));
    }
    if o.checkpoint_dir.is_none() {
        let given = [
            (o.checkpoint_interval.is_some(), "--checkpoint-interval"),
            (o.checkpoint_timeout.is_some(), "--checkpoint-timeout"),
            (o.checkpoint_and_stop, "--checkpoint-and-stop"),
        ];
        if let Some((_, name)) = given.iter().find(|(g, _)| *g) {
            return Err(format!("{name} needs --checkpoint-dir DIR (or --restart DIR): where the checkpoints go"));
        }
    }
    if o.mode == Mode::Run && o.restart.is_none() {
        if o.apps.len() == 1 && o.apps[0].program.is_empty() {
            return Err("no program to run (usage: gridmpirun [options] PROGRAM [ARGS...]; see --help)".into());
        }
        if let Some(k) = o.apps.iter().position(|a| a.program.is_empty()) {
            return Err(format!("program {} of the MPMD line is missing: its options are not followed by a program", k + 1));
        }
    }
    Ok(o)
}

pub fn usage() -> String {
    let mut s = String::from(
        "usage: gridmpirun [options] PROGRAM [ARGS...]\n\
         \x20      gridmpirun [options] -n N PROGRAM [ARGS...] : -n M PROGRAM2 [ARGS...] : ...\n\
         \x20      gridmpirun [options] --restart DIR\n\
         \n\
         Starts PROGRAM as an MPI job: locally, on remote hosts through a launch\n\
         agent (ssh, gridmpi-testbed exec, ...), or across clusters. It is a PMI-1 and\n\
         PMI-2 server, so programs built with MPICH-compatible MPIs run under it.\n\
         \n\
         MPMD: programs separated by ':' run in one job, in rank order; each has its\n\
         own -n, -env and -x (after the ':'), and MPI_APPNUM is its index (0, 1, ...).\n\
         \n\
         options:\n",
    );
    for o in OPTIONS.iter().filter(|o| !o.help.is_empty()) {
        let names = o.names.join(", ");
        let left = if o.metavar.is_empty() { names } else { format!("{names} {}", o.metavar) };
        s.push_str(&format!("  {left}\n      {}\n", o.help));
    }
    s.push_str(
        "\nenvironment: every GRIDMPI_* setting is passed to the ranks; see --info. A GRIDMPI_*\n\
         variable that is no setting is named in a warning (a misspelling does nothing).\n\
         GRIDMPI_LAUNCHER sets the launch agent, GRIDMPI_HOSTFILE a default hostfile.\n\
         Hosts, when neither -hosts, -f nor GRIDMPI_HOSTFILE names them: the nodes of the\n\
         Slurm allocation (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE) or PBS job\n\
         (PBS_NODEFILE) gridmpirun runs in, else this machine.\n\
         \n\
         checkpoints: gridmpirun --checkpoint-dir DIR [...] PROGRAM, then gridmpi-checkpoint PID\n\
         (or kill -QUIT PID; PID is gridmpirun's) for each checkpoint, and later\n\
         gridmpirun --restart DIR [hosts] to go on from the latest one (docs/checkpoint.md).\n\
         \n\
         check the PMI plumbing: gridmpirun -n 4 gridmpirun --pmi-check\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn p(args: &str) -> Result<Options, String> {
        let args: Vec<String> = args.split_whitespace().map(String::from).collect();
        parse(&args, &|n| (n == "HOME").then(|| "/home/u".to_string()))
    }

    #[test]
    fn mpi_style_options() {
        let o = p("-np 4 -hosts a,b:2 -ppn 2 -genv A 1 -x HOME -x B=2 --tag-output ./prog -n 3 x").unwrap();
        assert_eq!(o.apps.len(), 1);
        assert_eq!(o.apps[0].np, Some(4));
        assert_eq!(o.hosts.len(), 2);
        assert_eq!(o.ppn, Some(2));
        assert_eq!(o.env, vec![("A".into(), "1".into()), ("HOME".into(), "/home/u".into()), ("B".into(), "2".into())]);
        assert!(o.tag_output);
        assert_eq!(o.apps[0].program, ["./prog", "-n", "3", "x"]);
        // -env belongs to the program (the only one here).
        let o = p("-env A 1 prog").unwrap();
        assert_eq!(o.apps[0].env, vec![("A".into(), "1".into())]);
    }

    #[test]
    fn long_forms_and_glued() {
        let o = p("--np=8 --hostfile=hf --launcher=gridmpi-testbed -n2 prog").unwrap();
        assert_eq!(o.apps[0].np, Some(2));
        assert_eq!(o.hostfile, Some(PathBuf::from("hf")));
        assert_eq!(o.launcher.as_deref(), Some("gridmpi-testbed"));
        let o = p("-n 1 -- -weird-program").unwrap();
        assert_eq!(o.apps[0].program, ["-weird-program"]);
    }

    #[test]
    fn mpmd_in_both_forms() {
        // MPICH: -n and -env per program, -genv for all.
        let o = p("-genv G 1 -n 1 -env A a ./a x : -n 2 -env B b ./b y z").unwrap();
        assert_eq!(o.apps.len(), 2);
        assert_eq!((o.apps[0].np, o.apps[0].program.clone()), (Some(1), vec!["./a".to_string(), "x".into()]));
        assert_eq!(o.apps[0].env, vec![("A".into(), "a".into())]);
        assert_eq!((o.apps[1].np, o.apps[1].program.clone()), (Some(2), vec!["./b".to_string(), "y".into(), "z".into()]));
        assert_eq!(o.apps[1].env, vec![("B".into(), "b".into())]);
        assert_eq!(o.env, vec![("G".into(), "1".into())]);
        // Open MPI: -np and -x; -x before the first program is for all.
        let o = p("-x X=1 -np 2 a : -np 1 -x Y=2 b : c").unwrap();
        assert_eq!(o.apps.len(), 3);
        assert_eq!(o.env, vec![("X".into(), "1".into())]);
        assert_eq!(o.apps[1].env, vec![("Y".into(), "2".into())]);
        assert_eq!((o.apps[1].np, o.apps[2].np), (Some(1), None));
        assert_eq!(o.apps[2].program, ["c"]);
        let o = p("-n 1 -- -a : -n 1 -- -b").unwrap();
        assert_eq!((o.apps[0].program.clone(), o.apps[1].program.clone()), (vec!["-a".to_string()], vec!["-b".to_string()]));
    }

    #[test]
    fn a_colon_never_becomes_an_argument() {
        for (args, want) in [
            ("-n 1 a :", "nothing after the last ':'"),
            (": -n 1 b", "':' before any program"),
            ("-n 1 a : : b", "':' with no program before it"),
            ("-n 1 a : -n 2", "program 2 of the MPMD line is missing"),
            ("-n 1 a : -hosts x b", "-hosts applies to the whole job"),
            ("-n 1 a : --bind-to core b", "--bind-to applies to the whole job"),
            ("-n : a", "-n needs 1 value"),
        ] {
            let e = p(args).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }

    #[test]
    fn binding_and_mapping() {
        let o = p("--bind-to core --map-by node --report-bindings --oversubscribe prog").unwrap();
        assert_eq!((o.bind, o.map_by, o.report_bindings, o.oversubscribe), (Bind::Core, MapBy::Node, true, true));
        let o = p("-bind-to=socket -map-by ppr:2:node prog").unwrap();
        assert_eq!((o.bind, o.ppn), (Bind::Socket, Some(2)));
        assert!(p("--map-by slot:oversubscribe prog").unwrap().oversubscribe);
        assert!(p("--bind-to board prog").unwrap_err().starts_with("--bind-to board:"));
        assert!(p("--map-by diagonal prog").unwrap_err().starts_with("--map-by diagonal:"));
        assert!(p("--bind-to").unwrap_err().contains("--bind-to needs 1 value"));
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(p("-n").unwrap_err().contains("-n needs 1 value"));
        assert!(p("-n zero prog").unwrap_err().contains("positive number"));
        assert!(p("--bogus prog").unwrap_err().contains("unknown option --bogus"));
        assert!(p("-x NOPE prog").unwrap_err().contains("NOPE is not set"));
        assert!(p("-n 2").unwrap_err().contains("no program"));
        assert!(p("-genv 1BAD v prog").is_err());
    }

    #[test]
    fn trace_sets_an_absolute_directory() {
        let o = p("--trace tr -n 2 prog").unwrap();
        let want = std::env::current_dir().unwrap().join("tr");
        assert_eq!(o.trace.as_deref(), Some(want.as_path()));
        assert_eq!(o.env, vec![("GRIDMPI_TRACE".to_string(), want.to_string_lossy().into_owned())]);
        let o = p("--trace=/abs/dir prog").unwrap();
        assert_eq!(o.env, vec![("GRIDMPI_TRACE".to_string(), "/abs/dir".to_string())]);
    }

    #[test]
    fn checkpoint_options() {
        let here = std::env::current_dir().unwrap();
        assert_eq!(p("--timeout 30 prog").unwrap().timeout, Some(Duration::from_secs(30)));
        assert_eq!(p("-timeout 1.5s prog").unwrap().timeout, Some(Duration::from_millis(1500)));
        assert!(p("--timeout 0 prog").unwrap_err().contains("longer than 0"));
        let o = p("--checkpoint-dir ck --checkpoint-interval 1.5s --checkpoint-timeout 500ms --checkpoint-and-stop -n 2 prog").unwrap();
        assert_eq!(o.checkpoint_dir, Some(here.join("ck")));
        assert_eq!(o.checkpoint_interval, Some(Duration::from_millis(1500)));
        assert_eq!(o.checkpoint_timeout, Some(Duration::from_millis(500)));
        assert!(o.checkpoint_and_stop);
        assert_eq!(o.restart, None);
        assert!(o.env.is_empty(), "the rank variable is set per rank by the job, not here");
        // --restart: no program; its directory is where checkpoints go on, unless told.
        let o = p("--restart /ck -hosts a,b").unwrap();
        assert_eq!((o.restart.as_deref(), o.checkpoint_dir.as_deref()), (Some(Path::new("/ck")), Some(Path::new("/ck"))));
        assert_eq!(o.mode, Mode::Run);
        let o = p("--restart=/ck --checkpoint-dir /ck2 -n 4").unwrap();
        assert_eq!((o.apps[0].np, o.checkpoint_dir.as_deref()), (Some(4), Some(Path::new("/ck2"))));
        for (args, want) in [
            ("--restart /ck ./prog x", "--restart /ck runs the checkpoint's processes: no program may be given (got ./prog x)"),
            ("--restart", "--restart needs 1 value"),
            ("--checkpoint-interval 30s prog", "--checkpoint-interval needs --checkpoint-dir DIR"),
            ("--checkpoint-and-stop prog", "--checkpoint-and-stop needs --checkpoint-dir DIR"),
            ("--checkpoint-dir /ck --checkpoint-interval 30 prog", "--checkpoint-interval: \"30\" needs a unit"),
            ("--checkpoint-dir /ck --checkpoint-interval 0s prog", "longer than 0"),
            ("--checkpoint-dir /ck --checkpoint-timeout soon prog", "--checkpoint-timeout: \"soon\" is not a duration"),
            ("--checkpoint-dir /ck", "no program to run"),
        ] {
            let e = p(args).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
        assert!(usage().contains("--checkpoint-dir") && usage().contains("--restart DIR"));
    }

    #[test]
    fn fault_tolerance_option() {
        assert!(!p("-n 2 prog").unwrap().fault_tolerant);
        assert!(p("--with-ft ulfm -n 3 prog").unwrap().fault_tolerant);
        assert!(p("-with-ft=ulfm prog").unwrap().fault_tolerant);
        assert!(!p("--with-ft none prog").unwrap().fault_tolerant);
        let o = p("--with-ft ulfm prog").unwrap();
        assert!(o.env.is_empty(), "the rank variable is set per rank by the job, not here");
        for (args, want) in [
            ("--with-ft reinit prog", "--with-ft \"reinit\": not a fault-tolerance model (ulfm, or none: the default)"),
            ("--with-ft", "--with-ft needs 1 value"),
            ("--with-ft ulfm --checkpoint-dir /ck prog", "--with-ft ulfm and --checkpoint-dir /ck are not supported together"),
            ("--with-ft ulfm --restart /ck", "--with-ft ulfm and --restart /ck are not supported together"),
            ("-n 1 a : --with-ft ulfm -n 1 b", "--with-ft applies to the whole job"),
        ] {
            let e = p(args).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
        assert!(usage().contains("--with-ft, -with-ft none|ulfm"));
    }

    /// The hidden options a gridmpirun gives the nested one it starts for
    /// MPI_Comm_spawn.
    #[test]
    fn spawn_options() {
        let args: Vec<String> = ["--started-fd", "7", "--universe", "8", "--spawn-hosts", "a slots=2 cluster=x\nb slots=1\n", "-n", "3", "--", "prog"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let o = parse(&args, &|_| None).unwrap();
        assert_eq!((o.started_fd, o.universe), (Some(7), Some(8)));
        assert_eq!(o.hosts.len(), 2);
        assert_eq!((o.hosts[0].slots, o.hosts[0].cluster.as_deref()), (Some(2), Some("x")));
        assert!(p("--started-fd 1 prog").unwrap_err().contains("descriptor"));
        assert!(!usage().contains("--started-fd"), "hidden");
    }

    #[test]
    fn modes() {
        assert_eq!(p("--info").unwrap().mode, Mode::Info);
        assert_eq!(p("--pmi-check exit=3@1").unwrap().mode, Mode::PmiCheck(vec!["exit=3@1".into()]));
        assert_eq!(p("--proxy").unwrap().mode, Mode::Proxy);
        match p("--rendezvous-server 0.0.0.0:7000 --groups 2 --secret-file /s").unwrap().mode {
            Mode::RendezvousServer(a) => {
                assert_eq!((a.listen.as_str(), a.groups, a.secret_file.to_str()), ("0.0.0.0:7000", 2, Some("/s")));
            }
            m => panic!("{m:?}"),
        }
        assert!(p("--rendezvous-server :7000").unwrap_err().contains("--groups"));
        assert!(p("--rendezvous-server :7000 --groups 2 prog").unwrap_err().contains("runs no program"));
        assert!(p("--groups 2 prog").unwrap_err().contains("--rendezvous-server"));
        assert_eq!(
            p("--relay 0.0.0.0:7100 --secret-file /s").unwrap().mode,
            Mode::Relay { listen: "0.0.0.0:7100".into(), secret_file: "/s".into(), address_file: None }
        );
        assert!(p("--relay :7100 prog").unwrap_err().contains("runs alone"));
        let o = p("--rendezvous h:7000 --secret-file /k -n 2 prog").unwrap();
        assert_eq!(o.mode, Mode::Run);
        assert!(o.env.contains(&("GRIDMPI_RENDEZVOUS".into(), "h:7000".into())));
        assert!(o.env.contains(&("GRIDMPI_JOB_SECRET_FILE".into(), "/k".into())));
        assert!(usage().contains("-genv"));
    }
}

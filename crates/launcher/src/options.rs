//! Command-line options, in MPI's idiosyncratic syntax: `-n 4`, `-np 4`,
//! `-genv NAME VALUE`, `-x NAME[=VALUE]`, single or double dashes, and
//! `--name=value` for the long ones. Options end at the program name.
//!
//! To add an option: one entry in [`OPTIONS`].

use std::path::PathBuf;

use crate::hosts::{parse_host_list, HostEntry};

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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub mode: Mode,
    pub np: Option<u32>,
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
    /// Program and its arguments.
    pub program: Vec<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            mode: Mode::Run,
            np: None,
            hosts: Vec::new(),
            hostfile: None,
            ppn: None,
            env: Vec::new(),
            tag_output: false,
            launcher: None,
            wdir: None,
            verbose: false,
            trace: None,
            program: Vec::new(),
        }
    }
}

type Handler = fn(&mut Options, &[String], &dyn Fn(&str) -> Option<String>) -> Result<(), String>;

/// One option: its spellings, how many values it takes, what it does.
pub struct OptionSpec {
    pub names: &'static [&'static str],
    pub values: usize,
    pub metavar: &'static str,
    pub help: &'static str,
    handler: Handler,
}

fn count(name: &str, v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name} needs a positive number, got {v:?}")),
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

pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        names: &["-n", "-np", "-c", "--n", "--np"],
        values: 1,
        metavar: "N",
        help: "number of ranks (default: the slots of the host list, else 1)",
        handler: |o, v, _| {
            o.np = Some(count("-n", &v[0])?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["-hosts", "-host", "--host", "--hosts", "-H"],
        values: 1,
        metavar: "H1,H2:SLOTS,...",
        help: "hosts to run on, each with an optional slot count",
        handler: |o, v, _| {
            o.hosts.extend(parse_host_list(&v[0]).map_err(|e| format!("-hosts: {e}"))?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["-f", "-hostfile", "--hostfile", "-machinefile", "--machinefile"],
        values: 1,
        metavar: "FILE",
        help: "file of hosts: one per line, `host`, `host:N` or `host slots=N`",
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
        handler: |o, v, _| {
            o.ppn = Some(count("-ppn", &v[0])?);
            Ok(())
        },
    },
    OptionSpec {
        names: &["-genv", "--genv", "-env", "--env"],
        values: 2,
        metavar: "NAME VALUE",
        help: "set NAME=VALUE in every rank's environment",
        handler: |o, v, _| {
            check_env_name(&v[0])?;
            o.env.push((v[0].clone(), v[1].clone()));
            Ok(())
        },
    },
    OptionSpec {
        names: &["-x", "--x"],
        values: 1,
        metavar: "NAME[=VALUE]",
        help: "pass NAME (with this VALUE, or its value here) to every rank",
        handler: |o, v, getenv| {
            let (name, value) = match v[0].split_once('=') {
                Some((n, val)) => (n.to_string(), val.to_string()),
                None => {
                    let val = getenv(&v[0]).ok_or_else(|| format!("-x {}: {} is not set here", v[0], v[0]))?;
                    (v[0].clone(), val)
                }
            };
            check_env_name(&name)?;
            o.env.push((name, value));
            Ok(())
        },
    },
    OptionSpec {
        names: &["-genvlist", "--genvlist", "-envlist", "--envlist"],
        values: 1,
        metavar: "NAME1,NAME2,...",
        help: "pass these variables, with their values here, to every rank",
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
        names: &["--tag-output", "-tag-output", "-l", "-prepend-rank", "--prepend-rank"],
        values: 0,
        metavar: "",
        help: "prefix every output line with [rank]",
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
        handler: |o, v, _| {
            o.launcher = Some(v[0].clone());
            Ok(())
        },
    },
    OptionSpec {
        names: &["-wdir", "--wdir", "-wd", "--wd", "-dir"],
        values: 1,
        metavar: "DIR",
        help: "working directory of the ranks (default: the current one)",
        handler: |o, v, _| {
            o.wdir = Some(PathBuf::from(&v[0]));
            Ok(())
        },
    },
    OptionSpec {
        names: &["-v", "--verbose", "-verbose"],
        values: 0,
        metavar: "",
        help: "say what is launched where",
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
        handler: |o, v, _| {
            let dir = absolute(&v[0], "--trace")?;
            o.env.retain(|(k, _)| k != "GRIDMPI_TRACE");
            o.env.push(("GRIDMPI_TRACE".into(), dir.to_string_lossy().into_owned()));
            o.trace = Some(dir);
            Ok(())
        },
    },
    OptionSpec {
        names: &["--topology", "-topology"],
        values: 1,
        metavar: "FILE",
        help: "the clusters and the WAN between them (GRIDMPI_TOPOLOGY; format in docs/grid.md); FILE must be readable at the same path on every host",
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
        handler: |o, _, _| {
            o.mode = Mode::Version;
            Ok(())
        },
    },
    OptionSpec {
        names: &["--proxy"],
        values: 0,
        metavar: "",
        help: "",
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
        if arg == "--" {
            o.program = args[i + 1..].to_vec();
            break;
        }
        if arg == "--pmi-check" {
            o.mode = Mode::PmiCheck(args[i + 1..].to_vec());
            return Ok(o);
        }
        if !arg.starts_with('-') || arg == "-" {
            o.program = args[i..].to_vec();
            break;
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
        let mut values = Vec::new();
        if let Some(v) = inline {
            if spec.values != 1 {
                return Err(format!("{name} does not take a value with ="));
            }
            values.push(v);
        } else {
            for k in 0..spec.values {
                let v = args.get(i + 1 + k).ok_or_else(|| {
                    format!("{name} needs {} value{} ({})", spec.values, if spec.values > 1 { "s" } else { "" }, spec.metavar)
                })?;
                values.push(v.clone());
            }
            i += spec.values;
        }
        (spec.handler)(&mut o, &values, getenv)?;
        i += 1;
    }
    if o.mode == Mode::Run && o.program.is_empty() {
        return Err("no program to run (usage: gridmpirun [options] PROGRAM [ARGS...]; see --help)".into());
    }
    Ok(o)
}

pub fn usage() -> String {
    let mut s = String::from(
        "usage: gridmpirun [options] PROGRAM [ARGS...]\n\
         \n\
         Starts PROGRAM as an MPI job: locally, on remote hosts through a launch\n\
         agent (ssh, gridmpi-testbed exec, ...), or across clusters. It is a PMI-1 and\n\
         PMI-2 server, so programs built with MPICH-compatible MPIs run under it.\n\
         \n\
         options:\n",
    );
    for o in OPTIONS.iter().filter(|o| !o.help.is_empty()) {
        let names = o.names.join(", ");
        let left = if o.metavar.is_empty() { names } else { format!("{names} {}", o.metavar) };
        s.push_str(&format!("  {left}\n      {}\n", o.help));
    }
    s.push_str(
        "\nenvironment: every GRIDMPI_* setting is passed to the ranks; see --info.\n\
         GRIDMPI_LAUNCHER sets the launch agent, GRIDMPI_HOSTFILE a default hostfile.\n\
         \n\
         check the PMI plumbing: gridmpirun -n 4 gridmpirun --pmi-check\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &str) -> Result<Options, String> {
        let args: Vec<String> = args.split_whitespace().map(String::from).collect();
        parse(&args, &|n| (n == "HOME").then(|| "/home/u".to_string()))
    }

    #[test]
    fn mpi_style_options() {
        let o = p("-np 4 -hosts a,b:2 -ppn 2 -genv A 1 -x HOME -x B=2 --tag-output ./prog -n 3 x").unwrap();
        assert_eq!(o.np, Some(4));
        assert_eq!(o.hosts.len(), 2);
        assert_eq!(o.ppn, Some(2));
        assert_eq!(o.env, vec![("A".into(), "1".into()), ("HOME".into(), "/home/u".into()), ("B".into(), "2".into())]);
        assert!(o.tag_output);
        assert_eq!(o.program, vec!["./prog", "-n", "3", "x"]);
    }

    #[test]
    fn long_forms_and_glued() {
        let o = p("--np=8 --hostfile=hf --launcher=gridmpi-testbed -n2 prog").unwrap();
        assert_eq!(o.np, Some(2));
        assert_eq!(o.hostfile, Some(PathBuf::from("hf")));
        assert_eq!(o.launcher.as_deref(), Some("gridmpi-testbed"));
        let o = p("-n 1 -- -weird-program").unwrap();
        assert_eq!(o.program, vec!["-weird-program"]);
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
    fn modes() {
        assert_eq!(p("--info").unwrap().mode, Mode::Info);
        assert_eq!(p("--pmi-check exit=3@1").unwrap().mode, Mode::PmiCheck(vec!["exit=3@1".into()]));
        assert_eq!(p("--proxy").unwrap().mode, Mode::Proxy);
        assert!(usage().contains("-genv"));
    }
}

//! gridmpirun (also installed as mpiexec and mpirun): starts MPI jobs
//! locally, on remote hosts through a launch agent, and across clusters,
//! and serves PMI-1 and PMI-2 to their ranks.
//!
//! Layout: `options` (command line), `hosts` (host lists, hostfiles,
//! placement), `allocation` (the nodes of a Slurm or PBS job), `job` (the
//! launcher's event loop), `ranks` (starting ranks on this machine),
//! `binding` (which CPUs a rank gets), `proxy` (the remote side), `link`
//! (launcher <-> proxy frames), `output` (whole-line output), `check` (the
//! `--pmi-check` test rank), `rendezvous` (where separately started
//! groups of ranks meet), `spawn` (MPI_Comm_spawn: nested gridmpiruns),
//! `checkpoint_rounds` (when a checkpointed job's checkpoints happen),
//! `checkpoint_dir` (where they go: manifests, `latest`),
//! `sys` (POSIX calls). The PMI protocol itself
//! is the gridmpi-pmi crate.

mod allocation;
mod binding;
mod check;
mod checkpoint_dir;
mod checkpoint_rounds;
mod hosts;
mod job;
mod link;
mod options;
mod outages;
mod output;
mod proxy;
mod ranks;
mod rendezvous;
mod spawn;
mod sys;

use gridmpi_config::Config;
use options::Mode;

fn main() {
    sys::note_launcher_pid();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match options::parse(&args, &|n| std::env::var(n).ok()) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gridmpirun: {e}");
            std::process::exit(2);
        }
    };
    let code = match &opts.mode {
        Mode::Help => {
            print!("{}", options::usage());
            0
        }
        Mode::Version => {
            println!("gridmpirun (GridMPI) {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Mode::Proxy => proxy::run(),
        Mode::RendezvousServer(args) => rendezvous::run(args),
        Mode::Relay { listen, secret_file, address_file } => relay(listen, secret_file, address_file.as_deref()),
        Mode::PmiCheck(actions) => check::run(actions),
        Mode::Info => match Config::load() {
            Ok(c) => {
                print!("{}", c.render_table());
                0
            }
            Err(e) => {
                eprintln!("gridmpirun: {e}");
                1
            }
        },
        Mode::Run => {
            warn_unknown_variables(&opts);
            let config = match Config::load() {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("gridmpirun: {e}");
                    std::process::exit(1);
                }
            };
            if let Some(dir) = &opts.trace {
                prepare_trace_dir(dir);
            }
            let env: Vec<(String, String)> = std::env::vars().collect();
            match job::Setup::from_config(&opts, &config, &env) {
                Ok(setup) => {
                    let prefix = setup.shm_prefix.clone();
                    let code = job::run(opts, setup);
                    sys::remove_shm_files(&prefix);
                    code
                }
                Err(e) => {
                    eprintln!("gridmpirun: {e}");
                    2
                }
            }
        }
    };
    std::process::exit(code);
}

/// `--relay`: forward connections for the job whose secret is in
/// `secret_file` until killed (gridmpi_relay).
fn relay(listen: &str, secret_file: &std::path::Path, address_file: Option<&std::path::Path>) -> i32 {
    let secret = match gridmpi_pmi::rendezvous::read_secret_file(secret_file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gridmpirun: relay: {e}");
            return 1;
        }
    };
    let listener = match std::net::TcpListener::bind(listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gridmpirun: relay: cannot listen on {listen}: {e}");
            return 1;
        }
    };
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    if let Some(f) = address_file {
        if let Err(e) = std::fs::write(f, format!("{addr}\n")) {
            eprintln!("gridmpirun: relay: --address-file {}: {e}", f.display());
            return 1;
        }
    }
    let log = std::env::var("GRIDMPI_DEBUG").is_ok_and(|d| d.split(',').any(|x| x == "relay" || x == "all"));
    eprintln!("gridmpirun: relay at {addr} for the job secret in {}", secret_file.display());
    let e = gridmpi_relay::server::serve(listener, gridmpi_relay::relay_key(&secret), log);
    eprintln!("gridmpirun: relay: {e}");
    1
}

/// Name every `GRIDMPI_*` variable of our environment or command line
/// (`-genv`, `-x`...) that no part of GridMPI reads (a misspelled setting
/// would otherwise do nothing), with the setting it probably meant.
fn warn_unknown_variables(opts: &options::Options) {
    let mut vars: Vec<(String, String)> = std::env::vars().collect();
    vars.extend(opts.env.iter().chain(opts.apps.iter().flat_map(|a| &a.env)).cloned());
    let mut named = std::collections::BTreeSet::new();
    for unknown in gridmpi_config::names::unknown_variables(&vars) {
        if named.insert(unknown.name.clone()) {
            eprintln!("gridmpirun: warning: {unknown}");
        }
    }
}

/// `--trace DIR`: create DIR here and remove the rank files of an earlier
/// job, so gridmpi-trace reads this job only. (Ranks on other hosts create
/// DIR there themselves.)
fn prepare_trace_dir(dir: &std::path::Path) {
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("gridmpirun: --trace: cannot create {}: {e} (ranks on other hosts may still create it)", dir.display());
        return;
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("rank-") && name.ends_with(".trace") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

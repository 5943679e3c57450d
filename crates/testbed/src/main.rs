//! gridmpi-testbed: an emulated grid on one Linux machine.
//!
//! Clusters of hosts (network namespaces with their own hostname and
//! /etc/hosts) on per-cluster switches, joined by WAN links that a user-space,
//! real-time emulator runs with set bandwidth, delay, drop-tail queue and
//! loss. See docs/testbed.md.

mod capture;
mod control;
mod emulator;
mod hostexec;
mod monitor;
mod netns;
mod netsetup;
mod plot;
mod privileges;
mod spec;
mod state;
mod units;

use clap::{Parser, Subcommand};
use control::{CapturePoint, Request};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "gridmpi-testbed", version, about = "An emulated grid: clusters of hosts in network namespaces joined by emulated WAN links")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create the grid from a spec file or an inline form such as 2x4
    Up {
        /// TOML spec file, or inline: 2x4, 4+4+2, 2x4:rate=100mbit,delay=5ms
        spec: String,
        /// Rate of every link direction (e.g. 100mbit; 0 = unlimited)
        #[arg(long)]
        rate: Option<String>,
        /// One-way delay of every link direction (e.g. 5ms)
        #[arg(long)]
        delay: Option<String>,
        /// Drop-tail queue limit of every link direction: packets (100p) or bytes (64kb)
        #[arg(long)]
        queue: Option<String>,
        /// Random loss rate of every link direction (e.g. 0.1%)
        #[arg(long)]
        loss: Option<String>,
        /// Default TCP congestion control of every host (e.g. cubic)
        #[arg(long)]
        cc: Option<String>,
        /// Record the 1 ms monitor from now until `down` into this CSV (plot drawn at `down`)
        #[arg(long)]
        monitor: Option<PathBuf>,
        /// Run the emulator without real-time priority (for comparison)
        #[arg(long)]
        no_rt: bool,
        /// SCHED_FIFO priority of the emulator threads
        #[arg(long, default_value_t = 50)]
        rt_priority: i32,
        /// Seed of the random loss generator (default: from the clock)
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Remove the grid: processes in it, namespaces, links, emulator, sysctl change
    Down {
        /// Also remove gtb-* namespaces that no state file records
        #[arg(long)]
        force: bool,
    },
    /// Show the grid, the link settings and counters, and the emulator's timing
    Status {
        #[arg(long)]
        json: bool,
        /// Zero the counters and the release-error statistics after showing them
        #[arg(long)]
        reset: bool,
    },
    /// Run a command as a host: exec HOST -- CMD ARGS..., or ssh-style exec [-x ...] HOST 'CMD LINE'
    #[command(disable_help_flag = true)]
    Exec {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Change a link at run time: set c0-c1 rate=10mbit delay=20ms queue=50p loss=0.1%
    Set {
        /// c0-c1 (both directions), c0>c1 (one direction) or all
        link: String,
        /// Only the direction leaving this cluster
        #[arg(long)]
        from: Option<String>,
        /// key=value: rate, delay, queue, loss
        #[arg(required = true)]
        settings: Vec<String>,
    },
    /// Cut a link (every packet on it and arriving is lost) for outage tests
    Cut {
        link: String,
        #[arg(long)]
        from: Option<String>,
    },
    /// Restore a cut link
    Restore {
        link: String,
        #[arg(long)]
        from: Option<String>,
    },
    /// Record throughput, queue and drops per direction at 1 ms while CMD runs, then plot
    Monitor {
        /// CSV file to write
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        /// SVG plot (default: the CSV name with .svg)
        #[arg(long)]
        svg: Option<PathBuf>,
        #[arg(long)]
        no_plot: bool,
        #[arg(long)]
        title: Option<String>,
        /// Start recording and return (stop with --stop)
        #[arg(long, conflicts_with = "stop")]
        start: bool,
        /// Stop a recording started with --start (the one to -o FILE, else the latest), and plot it
        #[arg(long)]
        stop: bool,
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Draw a monitor CSV as an SVG
    Plot {
        csv: PathBuf,
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        #[arg(long)]
        title: Option<String>,
    },
    /// Capture packet headers on a WAN link into a pcapng file (tshark reads it)
    Capture {
        link: String,
        #[arg(short = 'o', long)]
        output: PathBuf,
        #[arg(long)]
        from: Option<String>,
        /// Bytes kept of each packet
        #[arg(long, default_value_t = 96)]
        snaplen: u32,
        /// out: as released at the far end; in: as arriving (drops marked); both
        #[arg(long, default_value = "out")]
        at: String,
        /// Capture this many seconds (without a command; default: until Ctrl-C)
        #[arg(long)]
        duration: Option<f64>,
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Print the grid's host names, one per line (for MPI host files)
    Hostfile {
        #[arg(long)]
        cluster: Option<String>,
    },
    /// Check privileges and kernel features the testbed needs
    Check,
    /// The link emulator daemon (started by `up`)
    #[command(hide = true)]
    Emulate {
        #[arg(long)]
        no_rt: bool,
        #[arg(long, default_value_t = 50)]
        rt_priority: i32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let argv0 = Path::new(&args[0]).file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    // ssh-compatible agent: called as ssh / gridmpi-testbed-ssh, or `exec`
    // (parsed by hand: ssh options must not meet clap).
    let exec_args = if argv0 == "ssh" || argv0 == "gridmpi-testbed-ssh" {
        Some(&args[1..])
    } else if args.get(1).map(String::as_str) == Some("exec") && args.get(2).map(String::as_str) != Some("--help") {
        Some(&args[2..])
    } else {
        None
    };
    if let Some(rest) = exec_args {
        let Err(e) = hostexec::exec(rest);
        eprintln!("gridmpi-testbed exec: {e}");
        return ExitCode::from(255); // like ssh when it cannot connect
    }
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gridmpi-testbed: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cmd: Cmd) -> Result<ExitCode, String> {
    match cmd {
        Cmd::Up { spec, rate, delay, queue, loss, cc, monitor, no_rt, rt_priority, seed } => {
            let mut grid = spec::load(&spec)?;
            for (key, value) in [("rate", rate), ("delay", delay), ("queue", queue), ("loss", loss)] {
                if let Some(v) = value {
                    for l in &mut grid.links {
                        l.forward.apply(key, &v)?;
                        l.reverse.apply(key, &v)?;
                    }
                }
            }
            if cc.is_some() {
                grid.cc = cc;
            }
            let seed = seed.unwrap_or_else(emulator::rt::realtime_ns);
            let opts = netsetup::UpOptions { monitor, realtime: !no_rt, priority: rt_priority, seed };
            let state = netsetup::up(grid, opts)?;
            print_grid(&state);
            println!("run as a host:   gridmpi-testbed exec {} -- hostname", state.grid.clusters[0].hosts[0].name);
            println!("launch agent:    {}/gridmpi-testbed-ssh (ssh-compatible)", state::bin_dir().display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Down { force } => {
            match netsetup::down(force)? {
                None => {
                    state::remove_dir();
                    println!("no grid is up")
                }
                Some((state, monitor)) => {
                    state::remove_dir();
                    println!("grid removed: {} namespaces, the emulator and the sysctl change", state.namespaces.len());
                    if let (Some(file), Some(m)) = (&state.monitor_file, monitor) {
                        finish_monitor(file, &m, None, None);
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Status { json, reset } => status(json, reset),
        // `exec` is parsed by hand in main(); clap gets here only for
        // `exec --help` (its arguments take hyphens verbatim).
        Cmd::Exec { .. } => {
            let mut cli = <Cli as clap::CommandFactory>::command();
            let sub = cli.find_subcommand_mut("exec").expect("exec is a subcommand");
            sub.print_long_help().map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Set { link, from, settings } => {
            let mut pairs = Vec::new();
            for s in &settings {
                let (k, v) = spec::split_setting(s)?;
                if k == "cut" {
                    return Err("use `gridmpi-testbed cut LINK` / `restore LINK`".into());
                }
                pairs.push((k.to_string(), v.to_string()));
            }
            set(&link, from.as_deref(), pairs)
        }
        Cmd::Cut { link, from } => set(&link, from.as_deref(), vec![("cut".into(), "true".into())]),
        Cmd::Restore { link, from } => set(&link, from.as_deref(), vec![("cut".into(), "false".into())]),
        Cmd::Monitor { output, svg, no_plot, title, start, stop, command } => {
            monitor_cmd(output, svg, no_plot, title, start, stop, command)
        }
        Cmd::Plot { csv, output, title } => {
            let svg = output.unwrap_or_else(|| plot::default_svg(&csv));
            plot::plot_file(&csv, &svg, title.as_deref())?;
            println!("plot: {}", svg.display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Capture { link, output, from, snaplen, at, duration, command } => {
            capture_cmd(&link, output, from.as_deref(), snaplen, &at, duration, command)
        }
        Cmd::Hostfile { cluster } => {
            let state = state::State::require()?;
            let mut found = cluster.is_none();
            for (c, h) in state.grid.hosts() {
                if cluster.as_deref().is_none_or(|want| want == c.name) {
                    found = true;
                    println!("{}", h.name);
                }
            }
            if !found {
                return Err(format!("no cluster '{}'", cluster.unwrap_or_default()));
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Check => Ok(if privileges::report() { ExitCode::SUCCESS } else { ExitCode::from(2) }),
        Cmd::Emulate { no_rt, rt_priority, seed } => {
            emulator::run(emulator::Options { realtime: !no_rt, priority: rt_priority, seed })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Directions named by a LINK argument: "a-b", "a>b", "all"; `from` picks
/// one direction of "a-b".
fn resolve_dirs(grid: &spec::Grid, link: &str, from: Option<&str>) -> Result<Vec<String>, String> {
    if link == "all" {
        return Ok(grid.links.iter().flat_map(|l| [grid.dir_name(l, true), grid.dir_name(l, false)]).collect());
    }
    if let Some((x, y)) = link.split_once('>') {
        let l = &grid.links[grid.find_link(&format!("{x}-{y}"))?];
        let forward = grid.clusters[l.a].name == x;
        return Ok(vec![grid.dir_name(l, forward)]);
    }
    let l = &grid.links[grid.find_link(link)?];
    match from {
        None => Ok(vec![grid.dir_name(l, true), grid.dir_name(l, false)]),
        Some(c) if c == grid.clusters[l.a].name => Ok(vec![grid.dir_name(l, true)]),
        Some(c) if c == grid.clusters[l.b].name => Ok(vec![grid.dir_name(l, false)]),
        Some(c) => Err(format!("--from {c}: link {link} does not touch cluster {c}")),
    }
}

fn set(link: &str, from: Option<&str>, settings: Vec<(String, String)>) -> Result<ExitCode, String> {
    let state = state::State::require()?;
    let dirs = resolve_dirs(&state.grid, link, from)?;
    let reply = control::request(&Request::Set { dirs, settings })?;
    for d in reply["dirs"].as_array().into_iter().flatten() {
        println!("{}: {}", d["dir"].as_str().unwrap_or("?"), d["settings"].as_str().unwrap_or(""));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_grid(state: &state::State) {
    let g = &state.grid;
    println!(
        "grid: {} clusters, {} hosts, {} WAN links (state in {})",
        g.clusters.len(),
        g.hosts().count(),
        g.links.len(),
        state::dir().display()
    );
    for c in &g.clusters {
        let hosts: Vec<String> = c.hosts.iter().map(|h| format!("{} {}", h.name, h.ip)).collect();
        println!("  cluster {} {} (switch {}): {}", c.name, c.subnet(), netns::switch_ns(&c.name), hosts.join(", "));
        if c.private {
            println!("    private: only its gateway {} is reachable across the WAN", c.gateway_host().name);
        }
    }
    if let Some(cc) = &g.cc {
        println!("  hosts use TCP congestion control {cc}");
    }
}

fn fmt_bytes(b: u64) -> String {
    match b {
        b if b >= 10_000_000_000 => format!("{:.1} GB", b as f64 / 1e9),
        b if b >= 10_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 10_000 => format!("{:.1} kB", b as f64 / 1e3),
        b => format!("{b} B"),
    }
}

fn status(json: bool, reset: bool) -> Result<ExitCode, String> {
    // A reader that stops early (`status | head`) ends us quietly, as it
    // would any Unix tool, instead of making println! panic.
    // SAFETY: restoring the default disposition of SIGPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let state = state::State::require()?;
    let live = control::request(&Request::Status);
    if reset && live.is_ok() {
        control::request(&Request::ResetStats)?;
    }
    if json {
        let out = serde_json::json!({
            "dir": state::dir(),
            "grid": state.grid,
            "namespaces": state.namespaces,
            "emulator": live.as_ref().ok(),
            "offloads_left_on": netsetup::offloads_left_on(&state.grid),
            "emulator_error": live.as_ref().err(),
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(if live.is_ok() { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    print_grid(&state);
    let missing: Vec<&String> = state.namespaces.iter().filter(|n| !netns::exists(n)).collect();
    if !missing.is_empty() {
        println!("  WARNING: namespaces missing: {missing:?}");
    }
    let live = match live {
        Ok(v) => v,
        Err(e) => {
            println!("emulator: NOT RUNNING: {e}");
            println!("  (the WAN links carry nothing; `gridmpi-testbed down` and `up` again)");
            return Ok(ExitCode::from(1));
        }
    };
    let sched = live["dirs"][0]["scheduling"].as_str().unwrap_or("?").to_string();
    println!(
        "emulator: pid {}, {}, memory {}",
        live["pid"],
        sched,
        if live["memory_locked"] == true { "locked" } else { "NOT locked" }
    );
    for l in &state.grid.links {
        println!("link {}", state.grid.link_name(l));
        for fwd in [true, false] {
            let name = state.grid.dir_name(l, fwd);
            let Some(d) = live["dirs"].as_array().and_then(|a| a.iter().find(|d| d["name"] == name.as_str())) else {
                continue;
            };
            let c = &d["counters"];
            let n = |k: &str| c[k].as_u64().unwrap_or(0);
            println!("  {name:<10} {}", d["settings"].as_str().unwrap_or(""));
            println!(
                "  {:<10} in {} pkts {} | out {} pkts {} | queue now {} pkts (max {}) | drop-tail drops {} | random losses {} | cut {} | private {}",
                "",
                n("pkts_in"),
                fmt_bytes(n("bytes_in")),
                n("pkts_out"),
                fmt_bytes(n("bytes_out")),
                n("qlen_pkts"),
                n("qmax_pkts"),
                n("drops"),
                n("losses"),
                n("cut_drops"),
                n("private_drops")
            );
            let r = &d["release_error"];
            if r["count"].as_u64().unwrap_or(0) > 0 {
                println!(
                    "  {:<10} release error: mean {:.1} us, p50 <{} us, p99 <{} us, p99.9 <{} us, max {:.0} us ({} pkts, {} over 100 us)",
                    "",
                    r["mean_us"].as_f64().unwrap_or(0.0),
                    r["p50_us"],
                    r["p99_us"],
                    r["p999_us"],
                    r["max_us"].as_f64().unwrap_or(0.0),
                    r["count"],
                    r["over_100us"]
                );
            }
            let r = &d["read_latency"];
            if r["count"].as_u64().unwrap_or(0) > 0 {
                println!(
                    "  {:<10} arrival: {}; read {:.1} us after arrival on average (p99 <{} us)",
                    "",
                    d["arrival_clock"].as_str().unwrap_or("?"),
                    r["mean_us"].as_f64().unwrap_or(0.0),
                    r["p99_us"]
                );
            }
            for (k, what) in [("write_errors", "write errors"), ("oversize", "oversize packets"), ("monitor_overflow", "monitor bins lost"), ("capture_overflow", "captured packets lost")] {
                if n(k) > 0 {
                    println!("  {:<10} WARNING: {} {what}", "", n(k));
                }
            }
        }
    }
    let kernel_drops: u64 = live["tun_devices"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["rx_dropped"].as_u64().unwrap_or(0) + t["tx_dropped"].as_u64().unwrap_or(0))
        .sum();
    println!("kernel-side drops at the TUN devices (should be 0): {kernel_drops}");
    let offloads = netsetup::offloads_left_on(&state.grid);
    if offloads.is_empty() {
        println!("segmentation/GRO offloads: off on every veth and TUN device");
    } else {
        for (ns, dev, on) in offloads {
            println!("WARNING: {ns} {dev}: offloads still on: {}", on.join(", "));
        }
    }
    for m in live["monitors"].as_array().into_iter().flatten() {
        println!("monitor: recording to {}", m.as_str().unwrap_or("?"));
    }
    if let Some(c) = live["capture"].as_str() {
        println!("capture: writing {c}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Print a monitor's totals and draw its plot.
fn finish_monitor(csv: &Path, reply: &serde_json::Value, svg: Option<PathBuf>, title: Option<&str>) {
    println!("monitor: {}", csv.display());
    for t in reply["totals"].as_array().into_iter().flatten() {
        let ms = t["ms"].as_u64().unwrap_or(0).max(1);
        println!(
            "  {:<10} {:.2} Mbit/s average over {:.3} s, {} drop-tail drops, {} random losses, queue max {} pkts",
            t["dir"].as_str().unwrap_or("?"),
            t["bytes_out"].as_u64().unwrap_or(0) as f64 * 8.0 / (ms as f64 / 1000.0) / 1e6,
            ms as f64 / 1000.0,
            t["drops"],
            t["losses"],
            t["qmax_pkts"]
        );
    }
    let svg = svg.unwrap_or_else(|| plot::default_svg(csv));
    match plot::plot_file(csv, &svg, title) {
        Ok(()) => println!("plot: {}", svg.display()),
        Err(e) => eprintln!("gridmpi-testbed: plot: {e}"),
    }
}

/// Run a command to completion with our SIGINT/SIGQUIT ignored (Ctrl-C goes
/// to it; we stay to finish the recording). Returns its exit code.
fn run_child(command: &[String]) -> Result<ExitCode, String> {
    // SAFETY: changing signal dispositions of this process; restored in the
    // child before exec so it gets the defaults.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]);
    // SAFETY: signal(2) is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    let status = cmd.status().map_err(|e| format!("cannot run {}: {e}", command[0]));
    let status = status?;
    use std::os::unix::process::ExitStatusExt;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c as u8),
        (None, Some(s)) => ExitCode::from(128 + s as u8),
        _ => ExitCode::FAILURE,
    })
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn monitor_cmd(
    output: Option<PathBuf>,
    svg: Option<PathBuf>,
    no_plot: bool,
    title: Option<String>,
    start: bool,
    stop: bool,
    command: Vec<String>,
) -> Result<ExitCode, String> {
    if stop {
        let file = output.map(|o| absolute(&o).to_string_lossy().into_owned());
        let reply = control::request(&Request::MonitorStop { file })?;
        let file = PathBuf::from(reply["file"].as_str().unwrap_or_default());
        if no_plot {
            println!("monitor: {}", file.display());
        } else {
            finish_monitor(&file, &reply, svg, title.as_deref());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let output = absolute(&output.ok_or("monitor needs -o FILE (the CSV to write)")?);
    if !start && command.is_empty() {
        return Err("give a command to run (monitor -o FILE -- CMD...) or --start / --stop".into());
    }
    control::request(&Request::MonitorStart { file: output.to_string_lossy().into_owned() })?;
    if start {
        println!("monitor: recording to {} (stop with `gridmpi-testbed monitor --stop`)", output.display());
        return Ok(ExitCode::SUCCESS);
    }
    let code = run_child(&command);
    let reply = control::request(&Request::MonitorStop { file: Some(output.to_string_lossy().into_owned()) })?;
    if no_plot {
        println!("monitor: {}", output.display());
    } else {
        finish_monitor(&output, &reply, svg, title.as_deref());
    }
    code
}

fn capture_cmd(
    link: &str,
    output: PathBuf,
    from: Option<&str>,
    snaplen: u32,
    at: &str,
    duration: Option<f64>,
    command: Vec<String>,
) -> Result<ExitCode, String> {
    let at = match at {
        "in" => CapturePoint::In,
        "out" => CapturePoint::Out,
        "both" => CapturePoint::Both,
        _ => return Err(format!("--at {at}: use in, out or both")),
    };
    let state = state::State::require()?;
    let dirs = resolve_dirs(&state.grid, link, from)?;
    let file = absolute(&output);
    control::request(&Request::CaptureStart { file: file.to_string_lossy().into_owned(), dirs, snaplen, at })?;
    let code = if !command.is_empty() {
        run_child(&command)
    } else {
        wait_for_signal_or(duration);
        Ok(ExitCode::SUCCESS)
    };
    let reply = control::request(&Request::CaptureStop)?;
    println!("capture: {} packets in {}", reply["packets"], file.display());
    if reply["overflow"].as_u64().unwrap_or(0) > 0 {
        println!("  WARNING: {} packets were not captured (writer fell behind)", reply["overflow"]);
    }
    code
}

/// Block until SIGINT/SIGTERM, or `duration` seconds.
fn wait_for_signal_or(duration: Option<f64>) {
    // SAFETY: a sigset on our stack, blocked so sigtimedwait can take it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        match duration {
            Some(secs) => {
                let ts = libc::timespec { tv_sec: secs.trunc() as i64, tv_nsec: (secs.fract() * 1e9) as i64 };
                libc::sigtimedwait(&set, std::ptr::null_mut(), &ts);
            }
            None => {
                eprintln!("capturing; Ctrl-C to stop");
                let mut sig = 0;
                libc::sigwait(&set, &mut sig);
            }
        }
    }
}

//! Building the grid (`up`) and taking it apart (`down`).
//!
//! ```text
//!  gtb-h0 [eth0]--veth--[h0]                      [h4]--veth--[eth0] gtb-h4
//!  gtb-h1 [eth0]--veth--[h1]  br0  gtb-sw-c0      br0  [h5]--veth--[eth0] gtb-h5
//!                          wan-c1 (TUN) <-- emulator --> wan-c0 (TUN)   gtb-sw-c1
//! ```
//!
//! Each host is a network namespace `gtb-<host>` whose `eth0` is a veth into
//! its cluster's switch namespace `gtb-sw-<cluster>`, where a bridge `br0`
//! joins the cluster's hosts and routes (10.77.i.254) to other clusters
//! through TUN devices `wan-<peer>`, which the emulator daemon connects in
//! user space. Nothing is made in the initial namespace except one sysctl
//! (tcp_allowed_congestion_control, restored by `down`).
//!
//! Every namespace is written to the state file before it is made, so
//! `down` can always remove exactly what `up` made.

use crate::netns;
use crate::spec::Grid;
use crate::state::{self, State, SysctlChange};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct UpOptions {
    pub monitor: Option<std::path::PathBuf>,
    pub realtime: bool,
    pub priority: i32,
    pub seed: u64,
}

/// Run `ip -n NS -batch -` with the given commands (one per line).
fn ip_batch(ns: Option<&str>, lines: &[String]) -> Result<(), String> {
    let mut cmd = Command::new("ip");
    if let Some(ns) = ns {
        cmd.args(["-n", ns]);
    }
    cmd.args(["-batch", "-"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
    {
        let mut stdin = child.stdin.take().unwrap();
        for l in lines {
            writeln!(stdin, "{l}").map_err(|e| e.to_string())?;
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip{} failed: {}\n  commands were:\n    {}",
            ns.map(|n| format!(" -n {n}")).unwrap_or_default(),
            String::from_utf8_lossy(&out.stderr).trim(),
            lines.join("\n    ")
        ))
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).stdin(Stdio::null()).output().map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Sysctls every namespace of ours gets: no IPv6 (no router solicitations
/// or DAD noise on the links, and MPIs do not try v6 addresses).
fn base_sysctls(forwarding: bool) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![("net/ipv6/conf/all/disable_ipv6", "1"), ("net/ipv6/conf/default/disable_ipv6", "1")];
    if forwarding {
        v.push(("net/ipv4/ip_forward", "1"));
    }
    v
}

fn configure_ns(ns: &str, sysctls: Vec<(String, String)>, no_offload: Vec<String>) -> Result<(), String> {
    netns::in_netns(ns, move || {
        for (k, v) in &sysctls {
            netns::write_sysctl(k, v)?;
        }
        for dev in &no_offload {
            netns::disable_offloads(dev)?;
        }
        Ok(())
    })
    .map_err(|e| format!("{ns}: {e}"))
}

fn add_namespace(state: &mut State, ns: &str) -> Result<(), String> {
    state.namespaces.push(ns.to_string());
    state.save().map_err(|e| format!("saving state: {e}"))?;
    ip(&["netns", "add", ns])
}

/// Let host namespaces choose cubic and reno too (a namespace may only pick
/// what the initial namespace allows).
fn allow_congestion_controls(state: &mut State, wanted: Option<&str>) -> Result<(), String> {
    let key = "net/ipv4/tcp_allowed_congestion_control";
    let available = netns::read_sysctl("net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    let original = netns::read_sysctl(key).map_err(|e| e.to_string())?;
    let mut allowed: Vec<String> = original.split_whitespace().map(String::from).collect();
    let mut want: Vec<&str> = vec!["cubic", "reno"];
    if let Some(w) = wanted {
        if !available.split_whitespace().any(|a| a == w) {
            // Loading the module makes it available (tcp_<name>).
            let _ = Command::new("modprobe").arg(format!("tcp_{w}")).stderr(Stdio::null()).status();
            let available = netns::read_sysctl("net/ipv4/tcp_available_congestion_control").unwrap_or_default();
            if !available.split_whitespace().any(|a| a == w) {
                return Err(format!("congestion control '{w}' is not available in this kernel (have: {available})"));
            }
        }
        want.push(w);
    }
    let available = netns::read_sysctl("net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    for w in want {
        if available.split_whitespace().any(|a| a == w) && !allowed.iter().any(|a| a == w) {
            allowed.push(w.to_string());
        }
    }
    let new = allowed.join(" ");
    if new != original {
        state.sysctls.push(SysctlChange { key: key.into(), original });
        state.save().map_err(|e| e.to_string())?;
        netns::write_sysctl(key, &new).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn write_hosts_files(grid: &Grid) -> Result<(), String> {
    let dir = state::dir().join("hosts");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    for (_, me) in grid.hosts() {
        let mut text = format!(
            "# /etc/hosts of {} in the gridmpi-testbed grid (written by `gridmpi-testbed up`)\n127.0.0.1\tlocalhost\n",
            me.name
        );
        for c in &grid.clusters {
            text.push_str(&format!("# cluster {} ({})\n", c.name, c.subnet()));
            for h in &c.hosts {
                text.push_str(&format!("{}\t{}\n", h.ip, h.name));
            }
        }
        std::fs::write(state::hosts_file(&me.name), text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// bin/ssh and bin/gridmpi-testbed-ssh: this program under names that make
/// it behave as an ssh-compatible launch agent.
fn write_agent_links() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bin = state::bin_dir();
    std::fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    for name in ["ssh", "gridmpi-testbed-ssh"] {
        let link = bin.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&exe, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    }
    Ok(())
}

fn build(grid: &Grid, state: &mut State) -> Result<(), String> {
    allow_congestion_controls(state, grid.cc.as_deref())?;
    // switches
    for c in &grid.clusters {
        let sw = netns::switch_ns(&c.name);
        add_namespace(state, &sw)?;
        configure_ns(&sw, base_sysctls(true).into_iter().map(|(k, v)| (k.into(), v.into())).collect(), vec![])?;
        ip_batch(
            Some(&sw),
            &[
                "link set lo up".into(),
                "link add br0 type bridge forward_delay 0 stp_state 0".into(),
                "link set br0 mtu 1500 up".into(),
                format!("addr add {}/24 dev br0", c.gateway()),
            ],
        )?;
    }
    // hosts
    for c in &grid.clusters {
        let sw = netns::switch_ns(&c.name);
        for h in &c.hosts {
            let hns = netns::host_ns(&h.name);
            add_namespace(state, &hns)?;
            let mut sysctls: Vec<(String, String)> =
                base_sysctls(false).into_iter().map(|(k, v)| (k.into(), v.into())).collect();
            if let Some(cc) = &grid.cc {
                sysctls.push(("net/ipv4/tcp_congestion_control".into(), cc.clone()));
            }
            configure_ns(&hns, sysctls, vec![])?;
            ip_batch(
                Some(&sw),
                &[
                    format!("link add {} mtu 1500 type veth peer name eth0 netns {hns}", h.name),
                    format!("link set {} master br0 up", h.name),
                ],
            )?;
            ip_batch(
                Some(&hns),
                &[
                    "link set lo up".into(),
                    "link set eth0 mtu 1500 up".into(),
                    format!("addr add {}/24 dev eth0", h.ip),
                    format!("route add default via {}", c.gateway()),
                ],
            )?;
            configure_ns(&hns, vec![], vec!["eth0".into()])?;
            configure_ns(&sw, vec![], vec![h.name.clone()])?;
        }
    }
    // WAN links: a TUN device at each end
    for l in &grid.links {
        for (here, peer) in [(l.a, l.b), (l.b, l.a)] {
            let sw = netns::switch_ns(&grid.clusters[here].name);
            let dev = format!("wan-{}", grid.clusters[peer].name);
            ip_batch(
                Some(&sw),
                &[format!("tuntap add dev {dev} mode tun"), format!("link set {dev} mtu 1500 txqueuelen 10000 up")],
            )?;
            configure_ns(&sw, vec![], vec![dev])?;
        }
    }
    // routes between clusters, over the shortest chain of links
    for (i, c) in grid.clusters.iter().enumerate() {
        let lines: Vec<String> = grid
            .next_hops(i)
            .iter()
            .enumerate()
            .filter_map(|(d, hop)| hop.map(|h| format!("route add {} dev wan-{}", grid.clusters[d].subnet(), grid.clusters[h].name)))
            .collect();
        if !lines.is_empty() {
            ip_batch(Some(&netns::switch_ns(&c.name)), &lines)?;
        }
    }
    write_hosts_files(grid)?;
    write_agent_links()?;
    Ok(())
}

fn start_emulator(state: &mut State, opts: &UpOptions) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let log = std::fs::File::create(state::emulator_log()).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
    cmd.arg("emulate").arg("--seed").arg(opts.seed.to_string()).arg("--rt-priority").arg(opts.priority.to_string());
    if !opts.realtime {
        cmd.arg("--no-rt");
    }
    cmd.stdin(Stdio::null()).stdout(log.try_clone().map_err(|e| e.to_string())?).stderr(log);
    // SAFETY: setsid is async-signal-safe; it detaches the daemon from our
    // terminal and process group.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| format!("starting the emulator: {e}"))?;
    let pid = child.id() as i32;
    state.emulator = Some((pid, netns::process_start_time(pid).unwrap_or(0)));
    state.save().map_err(|e| e.to_string())?;
    // Reap it if it dies early, so the check below sees it gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut child = child;
    loop {
        if crate::control::request(&crate::control::Request::Status).is_ok() {
            std::mem::forget(child); // the daemon outlives us
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(state::emulator_log()).unwrap_or_default();
            return Err(format!("the link emulator exited ({status}):\n{log}"));
        }
        if Instant::now() > deadline {
            return Err("the link emulator did not start within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `up`: make the grid; on any failure take down what was made.
pub fn up(grid: Grid, opts: UpOptions) -> Result<State, String> {
    crate::privileges::require("bring up the grid")?;
    let _lock = state::lock().map_err(|e| e.to_string())?;
    if let Some(old) = State::load().map_err(|e| e.to_string())? {
        return Err(format!(
            "a grid is already up ({} hosts); `gridmpi-testbed down` first",
            old.grid.hosts().count()
        ));
    }
    let stray = stray_namespaces(&[]);
    if !stray.is_empty() {
        return Err(format!(
            "namespaces from an earlier grid are still there ({}); `gridmpi-testbed down --force` removes them",
            stray.join(", ")
        ));
    }
    let mut state = State::new(grid.clone());
    state.monitor_file = opts.monitor.clone().map(|p| std::path::absolute(&p).unwrap_or(p));
    state.save().map_err(|e| e.to_string())?;
    let result = build(&grid, &mut state).and_then(|_| start_emulator(&mut state, &opts));
    if let Err(e) = result {
        eprintln!("gridmpi-testbed: up failed, removing what was made");
        let _ = teardown(&state, false);
        state::remove_files();
        state::remove_dir();
        return Err(e);
    }
    Ok(state)
}

/// Our namespaces (by prefix) that `keep` does not list.
pub fn stray_namespaces(keep: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(netns::NETNS_DIR) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(netns::PREFIX) && !keep.contains(&name) {
                out.push(name);
            }
        }
    }
    out.sort();
    out
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// End the processes inside a namespace: TERM, then KILL after 2 s.
fn kill_processes_in(ns: &str) -> usize {
    let pids = netns::processes_in(ns);
    for &p in &pids {
        // SAFETY: sending a signal to a pid we found in our namespace.
        unsafe { libc::kill(p, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline && pids.iter().any(|&p| pid_alive(p) && netns::processes_in(ns).contains(&p)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for p in netns::processes_in(ns) {
        // SAFETY: as above; the survivors get SIGKILL.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    pids.len()
}

/// Stop the emulator: politely over the socket, then by its recorded pid.
/// Returns the monitor totals if one was recording.
fn stop_emulator(state: &State) -> Option<serde_json::Value> {
    let (pid, start) = state.emulator?;
    let reply = crate::control::request(&crate::control::Request::Shutdown).ok();
    let same_process = || pid_alive(pid) && netns::process_start_time(pid) == Some(start);
    let deadline = Instant::now() + Duration::from_secs(5);
    while same_process() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if same_process() {
        // SAFETY: the pid and start time are those of the daemon we started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    reply.and_then(|r| r.get("monitor").cloned()).filter(|m| !m.is_null())
}

/// Remove everything `state` records. With `force`, also namespaces with our
/// prefix that it does not record.
pub fn teardown(state: &State, force: bool) -> Result<Option<serde_json::Value>, String> {
    let monitor = stop_emulator(state);
    let mut errors = Vec::new();
    let mut namespaces: Vec<String> = state.namespaces.iter().rev().cloned().collect();
    if force {
        namespaces.extend(stray_namespaces(&state.namespaces));
    }
    // Hosts first (their processes), then switches.
    for ns in &namespaces {
        if netns::exists(ns) {
            kill_processes_in(ns);
        }
    }
    for ns in &namespaces {
        if netns::exists(ns) {
            if let Err(e) = ip(&["netns", "del", ns]) {
                errors.push(e);
            }
        }
    }
    for s in &state.sysctls {
        if let Err(e) = netns::write_sysctl(&s.key, &s.original) {
            errors.push(format!("restoring {}: {e}", s.key));
        }
    }
    if errors.is_empty() {
        Ok(monitor)
    } else {
        Err(errors.join("\n"))
    }
}

/// `down`.
pub fn down(force: bool) -> Result<Option<(State, Option<serde_json::Value>)>, String> {
    crate::privileges::require("take down the grid")?;
    let _lock = state::lock().map_err(|e| e.to_string())?;
    let state = State::load().map_err(|e| e.to_string())?;
    let Some(state) = state else {
        let stray = stray_namespaces(&[]);
        if stray.is_empty() {
            return Ok(None);
        }
        if !force {
            return Err(format!(
                "no grid is recorded, but these namespaces look like ours: {}; `down --force` removes them",
                stray.join(", ")
            ));
        }
        let empty = State::new(Grid { clusters: vec![], links: vec![], cc: None });
        teardown(&empty, true)?;
        println!("removed namespaces no grid recorded: {}", stray.join(", "));
        return Ok(None);
    };
    let monitor = teardown(&state, force)?;
    let others = stray_namespaces(&state.namespaces);
    if !others.is_empty() {
        eprintln!(
            "gridmpi-testbed: note: namespaces that look like ours but that this grid did not make are left: {} (`down --force` removes them)",
            others.join(", ")
        );
    }
    let left = stray_namespaces(&[]).into_iter().filter(|n| state.namespaces.contains(n)).collect::<Vec<_>>();
    if !left.is_empty() {
        return Err(format!("could not remove: {}", left.join(", ")));
    }
    state::remove_files();
    Ok(Some((state, monitor)))
}

/// Segmentation/aggregation offloads still on, per (namespace, device):
/// should be none.
pub fn offloads_left_on(grid: &Grid) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    let mut check = |ns: String, dev: String| {
        let d = dev.clone();
        if let Ok(on) = netns::in_netns(&ns, move || netns::offloads_on(&d)) {
            if !on.is_empty() {
                out.push((ns, dev, on));
            }
        }
    };
    for (c, h) in grid.hosts() {
        check(netns::host_ns(&h.name), "eth0".into());
        check(netns::switch_ns(&c.name), h.name.clone());
    }
    for l in &grid.links {
        check(netns::switch_ns(&grid.clusters[l.a].name), format!("wan-{}", grid.clusters[l.b].name));
        check(netns::switch_ns(&grid.clusters[l.b].name), format!("wan-{}", grid.clusters[l.a].name));
    }
    out
}

//! What the testbed needs from the machine, checked up front so that a
//! missing privilege or feature is named, not met as an obscure EPERM.

use std::path::Path;

pub struct Check {
    pub what: &'static str,
    pub ok: bool,
    /// What needs it and how to get it.
    pub why: String,
    /// Missing but not fatal (e.g. real-time priority).
    pub optional: bool,
}

const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_SYS_NICE: u32 = 23;
const CAP_KILL: u32 = 5;

fn effective_caps() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

fn in_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin").join(tool).is_file()
        || Path::new("/sbin").join(tool).is_file()
}

/// Can this process use SCHED_FIFO? (tries it on a throwaway thread)
fn can_realtime() -> bool {
    std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: changes only this short-lived thread's policy.
        unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
    })
    .join()
    .unwrap_or(false)
}

pub fn checks() -> Vec<Check> {
    let caps = effective_caps();
    let has = |cap: u32| caps & (1u64 << cap) != 0;
    let root_hint = "run as root (sudo gridmpi-testbed ...) or in a container with --privileged";
    vec![
        Check {
            what: "CAP_NET_ADMIN",
            ok: has(CAP_NET_ADMIN),
            why: format!("creates namespaces, veths, bridges, TUN devices, routes and sysctls; {root_hint}"),
            optional: false,
        },
        Check {
            what: "CAP_SYS_ADMIN",
            ok: has(CAP_SYS_ADMIN),
            why: format!("enters namespaces (setns), sets hostnames, bind-mounts each host's /etc/hosts; {root_hint}"),
            optional: false,
        },
        Check {
            what: "CAP_KILL",
            ok: has(CAP_KILL),
            why: "`down` ends the processes left inside the hosts".into(),
            optional: false,
        },
        Check {
            what: "/dev/net/tun",
            ok: Path::new("/dev/net/tun").exists(),
            why: "the WAN links run through TUN devices: modprobe tun, or in a container --device /dev/net/tun".into(),
            optional: false,
        },
        Check {
            what: "network namespaces",
            ok: Path::new("/proc/self/ns/net").exists() && Path::new("/proc/self/ns/uts").exists(),
            why: "kernel needs CONFIG_NET_NS and CONFIG_UTS_NS".into(),
            optional: false,
        },
        Check {
            what: "ip (iproute2)",
            ok: in_path("ip"),
            why: "builds the namespaces and links: apt-get install iproute2".into(),
            optional: false,
        },
        Check {
            what: "real-time scheduling (SCHED_FIFO)",
            ok: has(CAP_SYS_NICE) && can_realtime(),
            why: "keeps the link emulator's timing when the CPUs are busy; needs CAP_SYS_NICE and RT budget \
                  (kernel.sched_rt_runtime_us, cgroup cpu.rt_runtime_us). Without it the grid runs, less precisely"
                .into(),
            optional: true,
        },
    ]
}

/// Print what is missing for `action`; Err if something required is.
pub fn require(action: &str) -> Result<(), String> {
    let checks = checks();
    let missing: Vec<&Check> = checks.iter().filter(|c| !c.ok && !c.optional).collect();
    for c in checks.iter().filter(|c| !c.ok && c.optional) {
        eprintln!("gridmpi-testbed: warning: no {}: {}", c.what, c.why);
    }
    if missing.is_empty() {
        return Ok(());
    }
    let mut msg = format!("cannot {action}: missing privileges or features:\n");
    for c in missing {
        msg.push_str(&format!("  - {}: {}\n", c.what, c.why));
    }
    msg.push_str("  (`gridmpi-testbed check` lists everything the testbed needs)");
    Err(msg)
}

/// `gridmpi-testbed check`: print every requirement; exit code 0 only if
/// everything required is there.
pub fn report() -> bool {
    let mut all = true;
    for c in checks() {
        let mark = if c.ok { "ok     " } else if c.optional { "warning" } else { "MISSING" };
        println!("{mark} {}{}", c.what, if c.ok { String::new() } else { format!(": {}", c.why) });
        all &= c.ok || c.optional;
    }
    for (tool, purpose) in [("iperf3", "bandwidth tests (tests/testbed/run.sh)"), ("ping", "RTT tests"), ("tshark", "reading captures")] {
        if !in_path(tool) {
            println!("note    {tool} not found: needed for {purpose} (Debian package of that name)");
        }
    }
    all
}

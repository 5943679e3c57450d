//! Binding ranks to CPUs (`--bind-to`): which CPUs of this host each local
//! rank gets, and setting that in the child before it runs the program.
//!
//! The CPUs are those this process may use (its own affinity mask, so a
//! launcher confined by a batch system or `taskset` binds within its share),
//! grouped into units by the policy: one hardware thread, the threads of
//! one core, of one socket, or of one NUMA node. The local ranks take the
//! units round-robin in order; more ranks than units share them. The
//! machine's layout is read from sysfs; where it says nothing (a container
//! hiding it) every CPU is its own core, socket and node are the whole set.

use std::collections::BTreeMap;
use std::fs;

/// What a rank is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Bind {
    #[default]
    None,
    HwThread,
    Core,
    Socket,
    Numa,
}

impl Bind {
    /// `--bind-to` values: a unit, optionally followed by the modifiers
    /// other launchers accept (`core:overload-allowed`); those change
    /// nothing here (sharing units is always allowed).
    pub fn parse(value: &str) -> Result<Bind, String> {
        let mut parts = value.split(':');
        let unit = parts.next().unwrap_or("");
        let bind = match unit.to_ascii_lowercase().as_str() {
            "none" => Bind::None,
            "hwthread" | "hwthreads" | "thread" | "threads" | "cpu" => Bind::HwThread,
            "core" | "cores" => Bind::Core,
            "socket" | "sockets" | "package" => Bind::Socket,
            "numa" | "numanode" => Bind::Numa,
            _ => return Err(format!("--bind-to {value}: expected core, socket, numa, hwthread or none")),
        };
        for m in parts {
            if !matches!(m.to_ascii_lowercase().as_str(), "overload-allowed" | "if-supported") {
                return Err(format!("--bind-to {value}: unknown modifier {m:?} (known: overload-allowed, if-supported)"));
            }
        }
        Ok(bind)
    }

    /// The name used on the command line and on the link to a proxy.
    pub fn name(self) -> &'static str {
        match self {
            Bind::None => "none",
            Bind::HwThread => "hwthread",
            Bind::Core => "core",
            Bind::Socket => "socket",
            Bind::Numa => "numa",
        }
    }
}

/// The CPU numbers this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the zeroed set we own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// The units of `bind` over `allowed`, in order of their first CPU; each
/// unit is a sorted, non-empty list of allowed CPUs. `group_of` says which
/// group a CPU is in (its core, socket or node), `None` when unknown.
fn units(allowed: &[usize], group_of: &dyn Fn(usize) -> Option<String>) -> Vec<Vec<usize>> {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for &cpu in allowed {
        let key = group_of(cpu).unwrap_or_else(|| format!("cpu{cpu}"));
        let g = groups.entry(key.clone()).or_default();
        if g.is_empty() {
            order.push(key);
        }
        g.push(cpu);
    }
    order.into_iter().map(|k| groups.remove(&k).unwrap_or_default()).collect()
}

/// Which group of `bind` a CPU belongs to, read from sysfs.
fn sysfs_group(bind: Bind, cpu: usize) -> Option<String> {
    let read = |p: String| fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    let topo = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
    match bind {
        Bind::None | Bind::HwThread => None,
        // The core's threads; its id alone is only unique within a socket.
        Bind::Core => read(format!("{topo}/core_cpus_list")).or_else(|| read(format!("{topo}/thread_siblings_list"))),
        Bind::Socket => read(format!("{topo}/physical_package_id")).map(|p| format!("socket{p}")),
        Bind::Numa => {
            let dir = fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}")).ok()?;
            dir.flatten().find_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name.starts_with("node") && name[4..].chars().all(|c| c.is_ascii_digit())).then_some(name)
            })
        }
    }
}

/// Where sysfs says nothing of sockets or nodes, the whole set is one.
fn fallback_group(bind: Bind, found: Option<String>) -> Option<String> {
    match (bind, found) {
        (_, Some(g)) => Some(g),
        (Bind::Socket | Bind::Numa, None) => Some("all".into()),
        (_, None) => None,
    }
}

/// This host's units of `bind` (empty for no binding), read once per
/// batch of ranks.
pub fn host_units(bind: Bind) -> Vec<Vec<usize>> {
    if bind == Bind::None {
        return Vec::new();
    }
    units(&allowed_cpus(), &|cpu| fallback_group(bind, sysfs_group(bind, cpu)))
}

/// The CPUs of the `local_rank`-th rank of the host: `None` for no
/// binding (no units).
pub fn pick(units: &[Vec<usize>], local_rank: u32) -> Option<Vec<usize>> {
    if units.is_empty() {
        return None;
    }
    Some(units[local_rank as usize % units.len()].clone())
}

/// A mask ready for [`apply`], built before fork (the child may not allocate).
pub fn mask(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: CPU_ZERO/CPU_SET write into the set we own; numbers past
    // CPU_SETSIZE are skipped.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        set
    }
}

/// Bind the calling process (the child, between fork and exec: one
/// system call, no allocation).
pub fn apply(set: &libc::cpu_set_t) -> std::io::Result<()> {
    // SAFETY: sched_setaffinity reads the set we pass.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `0-3,8,10-11`: the kernel's way of writing a CPU list.
pub fn format_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_errors_name_the_option() {
        assert_eq!(Bind::parse("core").unwrap(), Bind::Core);
        assert_eq!(Bind::parse("socket").unwrap(), Bind::Socket);
        assert_eq!(Bind::parse("numa").unwrap(), Bind::Numa);
        assert_eq!(Bind::parse("hwthread").unwrap(), Bind::HwThread);
        assert_eq!(Bind::parse("none").unwrap(), Bind::None);
        assert_eq!(Bind::parse("core:overload-allowed").unwrap(), Bind::Core);
        let e = Bind::parse("board").unwrap_err();
        assert!(e.starts_with("--bind-to board:") && e.contains("core, socket"), "{e}");
        assert!(Bind::parse("core:bogus").unwrap_err().contains("bogus"));
        for b in [Bind::None, Bind::HwThread, Bind::Core, Bind::Socket, Bind::Numa] {
            assert_eq!(Bind::parse(b.name()).unwrap(), b);
        }
    }

    #[test]
    fn ranks_take_units_round_robin() {
        // Two sockets of two cores of two threads: 0,4 | 1,5 on socket 0.
        let core = |c: usize| Some(format!("core{}", c % 4));
        let socket = |c: usize| Some(format!("s{}", (c % 4) / 2));
        let allowed: Vec<usize> = (0..8).collect();
        let cores = units(&allowed, &core);
        assert_eq!(cores, vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        assert_eq!(pick(&cores, 1), Some(vec![1, 5]));
        assert_eq!(pick(&cores, 5), Some(vec![1, 5]), "more ranks than cores share them");
        assert_eq!(units(&allowed, &socket), vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
        // Only the allowed CPUs count.
        assert_eq!(units(&[2, 3, 6], &core), vec![vec![2, 6], vec![3]]);
        assert_eq!(pick(&[], 0), None);
    }

    #[test]
    fn this_host_binds_within_what_it_may_use() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        for bind in [Bind::HwThread, Bind::Core, Bind::Socket, Bind::Numa] {
            let units = host_units(bind);
            let cpus = pick(&units, 0).expect("a unit");
            assert!(!cpus.is_empty() && cpus.iter().all(|c| allowed.contains(c)), "{bind:?}: {cpus:?} of {allowed:?}");
            // Every allowed CPU is in exactly one unit.
            let mut all: Vec<usize> = units.concat();
            all.sort();
            assert_eq!(all, allowed, "{bind:?}");
        }
        assert_eq!(host_units(Bind::HwThread).len(), allowed.len());
        assert_eq!(pick(&host_units(Bind::None), 0), None);
    }

    #[test]
    fn cpu_lists_as_the_kernel_writes_them() {
        assert_eq!(format_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_list(&[5]), "5");
        assert_eq!(format_list(&[]), "");
    }
}

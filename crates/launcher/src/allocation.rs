//! The nodes a resource manager gave this job: inside a Slurm allocation
//! (`salloc`, `sbatch`) or a PBS/Torque job, gridmpirun runs on them when
//! no host was named. Slurm says it in variables (`SLURM_JOB_NODELIST` in
//! its compressed form, `SLURM_TASKS_PER_NODE` for the slots); PBS in a
//! file with one line per slot (`PBS_NODEFILE`).

use crate::hosts::{self, HostEntry};

/// Where the nodes came from, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub source: String,
    pub hosts: Vec<HostEntry>,
}

/// The allocation this process is in, if any: Slurm's, else PBS's.
pub fn detect(getenv: &dyn Fn(&str) -> Option<String>) -> Result<Option<Allocation>, String> {
    let nodelist = getenv("SLURM_JOB_NODELIST").or_else(|| getenv("SLURM_NODELIST")).filter(|s| !s.trim().is_empty());
    if let Some(list) = nodelist {
        let names = expand_nodelist(&list).map_err(|e| format!("SLURM_JOB_NODELIST {list:?}: {e}"))?;
        if let Some(n) = getenv("SLURM_JOB_NUM_NODES").or_else(|| getenv("SLURM_NNODES")) {
            if n.trim().parse::<usize>().ok() != Some(names.len()) {
                return Err(format!("SLURM_JOB_NODELIST {list:?} names {} nodes but SLURM_JOB_NUM_NODES is {n}", names.len()));
            }
        }
        // Slots: the tasks Slurm planned per node, else its CPUs, else one.
        let per_node = match getenv("SLURM_TASKS_PER_NODE").map(|v| ("SLURM_TASKS_PER_NODE", v)).or_else(|| {
            getenv("SLURM_JOB_CPUS_PER_NODE").map(|v| ("SLURM_JOB_CPUS_PER_NODE", v))
        }) {
            Some((var, v)) => {
                let counts = expand_counts(&v).map_err(|e| format!("{var} {v:?}: {e}"))?;
                if counts.len() != names.len() {
                    return Err(format!("{var} {v:?} gives {} nodes, SLURM_JOB_NODELIST {}", counts.len(), names.len()));
                }
                counts.into_iter().map(Some).collect()
            }
            None => vec![None; names.len()],
        };
        let hosts = names.iter().zip(per_node).map(|(n, s)| HostEntry::new(n, s)).collect();
        return Ok(Some(Allocation { source: "the Slurm allocation (SLURM_JOB_NODELIST)".into(), hosts }));
    }
    if let Some(path) = getenv("PBS_NODEFILE").filter(|s| !s.trim().is_empty()) {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read PBS_NODEFILE {path}: {e}"))?;
        // One line per slot: a host named twice has two slots.
        let hosts = hosts::parse_hostfile(&text).map_err(|e| format!("PBS_NODEFILE {path}: {e}"))?;
        return Ok(Some(Allocation { source: format!("the PBS allocation (PBS_NODEFILE {path})"), hosts }));
    }
    Ok(None)
}

/// Slurm's compressed host list: `node[01-04,07],login1,rack[1-2]-n[1-2]`.
/// Ranges keep the zero padding of their first number; a name may hold
/// several bracket groups (each multiplies the names).
pub fn expand_nodelist(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in split_top_level(list)? {
        if item.is_empty() {
            continue;
        }
        out.extend(expand_name(&item)?);
    }
    if out.is_empty() {
        return Err("no nodes in it".into());
    }
    Ok(out)
}

/// Split at commas outside brackets.
fn split_top_level(list: &str) -> Result<Vec<String>, String> {
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut depth = 0;
    for c in list.trim().chars() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => return Err("nested brackets".into()),
            ']' if depth == 1 => depth = 0,
            ']' => return Err("a ] without its [".into()),
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if depth != 0 {
        return Err("a [ without its ]".into());
    }
    items.push(cur);
    Ok(items)
}

/// One name with bracket groups: every combination, in order.
fn expand_name(name: &str) -> Result<Vec<String>, String> {
    let Some(open) = name.find('[') else { return Ok(vec![name.to_string()]) };
    let close = open + name[open..].find(']').ok_or("a [ without its ]")?;
    let (prefix, group, rest) = (&name[..open], &name[open + 1..close], &name[close + 1..]);
    let tails = expand_name(rest)?;
    let mut out = Vec::new();
    for part in group.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let bad = || format!("{part:?} in [{group}] is not a number or a range of numbers");
        if lo.is_empty() || !lo.chars().all(|c| c.is_ascii_digit()) || !hi.chars().all(|c| c.is_ascii_digit()) || hi.is_empty() {
            return Err(bad());
        }
        let (a, b): (u64, u64) = (lo.parse().map_err(|_| bad())?, hi.parse().map_err(|_| bad())?);
        if b < a {
            return Err(format!("the range {part:?} goes backwards"));
        }
        if b - a > 100_000 {
            return Err(format!("the range {part:?} is too large"));
        }
        let width = lo.len();
        for i in a..=b {
            for t in &tails {
                out.push(format!("{prefix}{i:0width$}{t}"));
            }
        }
    }
    Ok(out)
}

/// Slurm's per-node counts: `2(x3),1` is 2, 2, 2, 1.
pub fn expand_counts(text: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for item in text.trim().split(',') {
        let (n, times) = match item.split_once('(') {
            Some((n, rep)) => {
                let rep = rep.strip_prefix('x').and_then(|r| r.strip_suffix(')')).ok_or_else(|| format!("{item:?} is not N(xM)"))?;
                (n, rep.parse::<usize>().map_err(|_| format!("{item:?} is not N(xM)"))?)
            }
            None => (item, 1),
        };
        let n: u32 = n.parse().ok().filter(|&n| n > 0).ok_or_else(|| format!("{item:?} is not a positive count"))?;
        out.extend(std::iter::repeat(n).take(times));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_nodelists() {
        assert_eq!(expand_nodelist("node[01-04,07]").unwrap(), ["node01", "node02", "node03", "node04", "node07"]);
        assert_eq!(expand_nodelist("a,b[1-2],c").unwrap(), ["a", "b1", "b2", "c"]);
        assert_eq!(expand_nodelist("login").unwrap(), ["login"]);
        assert_eq!(expand_nodelist("r[1-2]-n[8-9]").unwrap(), ["r1-n8", "r1-n9", "r2-n8", "r2-n9"]);
        assert_eq!(expand_nodelist("n[098-101]").unwrap(), ["n098", "n099", "n100", "n101"]);
        assert_eq!(expand_nodelist("gpu[3],cpu[1,5]").unwrap(), ["gpu3", "cpu1", "cpu5"]);
        for bad in ["node[01-", "node]", "n[a-b]", "n[5-3]", "n[[1]]", "", "n[1-]"] {
            assert!(expand_nodelist(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn slurm_counts() {
        assert_eq!(expand_counts("2(x3),1").unwrap(), [2, 2, 2, 1]);
        assert_eq!(expand_counts("4").unwrap(), [4]);
        assert!(expand_counts("2(3)").is_err());
        assert!(expand_counts("0").is_err());
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn a_slurm_allocation_gives_hosts_and_slots() {
        let a = detect(&env(&[
            ("SLURM_JOB_NODELIST", "cn[1-3]"),
            ("SLURM_JOB_NUM_NODES", "3"),
            ("SLURM_TASKS_PER_NODE", "2(x2),1"),
        ]))
        .unwrap()
        .unwrap();
        let got: Vec<_> = a.hosts.iter().map(|h| (h.name.as_str(), h.slots)).collect();
        assert_eq!(got, [("cn1", Some(2)), ("cn2", Some(2)), ("cn3", Some(1))]);
        let e = detect(&env(&[("SLURM_JOB_NODELIST", "cn[1-3]"), ("SLURM_JOB_NUM_NODES", "2")])).unwrap_err();
        assert!(e.contains("SLURM_JOB_NUM_NODES is 2"), "{e}");
        let e = detect(&env(&[("SLURM_JOB_NODELIST", "cn[1-3]"), ("SLURM_TASKS_PER_NODE", "2(x2)")])).unwrap_err();
        assert!(e.contains("SLURM_TASKS_PER_NODE"), "{e}");
        assert_eq!(detect(&env(&[])).unwrap(), None);
    }

    #[test]
    fn a_pbs_nodefile_has_a_line_per_slot() {
        let dir = std::env::temp_dir().join(format!("gridmpirun-pbs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("nodes");
        std::fs::write(&f, "n1\nn1\nn2\n").unwrap();
        let path: &'static str = Box::leak(f.to_string_lossy().into_owned().into_boxed_str());
        let pairs: &'static [(&str, &str)] = Box::leak(vec![("PBS_NODEFILE", path)].into_boxed_slice());
        let a = detect(&env(pairs)).unwrap().unwrap();
        assert_eq!(a.hosts.len(), 3, "merged into nodes later, as hostfile lines are");
        assert!(a.source.contains("PBS"));
        std::fs::remove_dir_all(dir).ok();
    }
}

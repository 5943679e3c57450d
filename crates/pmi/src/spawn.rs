//! The spawn request (MPI_Comm_spawn, MPI_Comm_spawn_multiple) in both wire
//! forms, as MPICH's clients write it and hydra reads it.
//!
//! PMI-1: one multi-line `mcmd=spawn` block per program, each closed by
//! `endcmd`; the reply (`cmd=spawn_result rc=...`) comes once, after the
//! last block:
//!
//! ```text
//! mcmd=spawn
//! nprocs=2            (this program's maxprocs)
//! execname=./child
//! totspawns=1         (how many blocks)
//! spawnssofar=1       (this block's number, from 1)
//! argcnt=1
//! arg1=x              (arguments numbered from 1)
//! preput_num=1        (first block only)
//! preput_key_0=GRIDMPI_PARENT_PORT
//! preput_val_0=...
//! info_num=1
//! info_key_0=wdir
//! info_val_0=/tmp
//! endcmd
//! ```
//!
//! PMI-2: one `cmd=spawn` message: `ncmds`, `preputcount`, `ppkeyI`/`ppvalI`,
//! then per program `subcmd` (the command; it starts the program's part),
//! `maxprocs`, `argc`, `argvI` (from 0), `infokeycount`, `infokeyI`/`infovalI`.
//! The reply is `cmd=spawn-response;rc=...;` (with the request's `thrid`).

use std::collections::HashMap;

use crate::wire::{Message, Wire};

/// One program of a spawn request (MPI_Comm_spawn_multiple has several).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnApp {
    pub command: String,
    pub args: Vec<String>,
    pub maxprocs: u32,
    /// The MPI_Info keys and values given for this program (e.g. "host", "wdir", "path", "hostfile").
    pub info: Vec<(String, String)>,
}

/// The most processes one spawn request may start (in all its programs).
pub const MAX_SPAWN_PROCS: u64 = 65536;

/// The blocks of a PMI-1 spawn request, one message each.
pub fn encode_v1(apps: &[SpawnApp], env: &[(String, String)]) -> Vec<Message> {
    let total = apps.len();
    apps.iter()
        .enumerate()
        .map(|(i, app)| {
            let mut m = Message::new(Wire::V1Multi, "spawn")
                .with("nprocs", app.maxprocs)
                .with("execname", &app.command)
                .with("totspawns", total)
                .with("spawnssofar", i + 1)
                .with("argcnt", app.args.len());
            for (k, a) in app.args.iter().enumerate() {
                m = m.with(&format!("arg{}", k + 1), a);
            }
            if i == 0 {
                m = m.with("preput_num", env.len());
                for (k, (key, val)) in env.iter().enumerate() {
                    m = m.with(&format!("preput_key_{k}"), key).with(&format!("preput_val_{k}"), val);
                }
            }
            m = m.with("info_num", app.info.len());
            for (k, (key, val)) in app.info.iter().enumerate() {
                m = m.with(&format!("info_key_{k}"), key).with(&format!("info_val_{k}"), val);
            }
            m
        })
        .collect()
}

/// The PMI-2 spawn request.
pub fn encode_v2(apps: &[SpawnApp], env: &[(String, String)]) -> Message {
    let mut m = Message::new(Wire::V2, "spawn").with("ncmds", apps.len()).with("preputcount", env.len());
    for (k, (key, val)) in env.iter().enumerate() {
        m = m.with(&format!("ppkey{k}"), key).with(&format!("ppval{k}"), val);
    }
    for app in apps {
        m = m.with("subcmd", &app.command).with("maxprocs", app.maxprocs).with("argc", app.args.len());
        for (k, a) in app.args.iter().enumerate() {
            m = m.with(&format!("argv{k}"), a);
        }
        m = m.with("infokeycount", app.info.len());
        for (k, (key, val)) in app.info.iter().enumerate() {
            m = m.with(&format!("infokey{k}"), key).with(&format!("infoval{k}"), val);
        }
    }
    m
}

/// Attributes by key (the first of a repeated key wins).
fn index(attrs: &[(String, String)]) -> HashMap<&str, &str> {
    let mut map = HashMap::with_capacity(attrs.len());
    for (k, v) in attrs {
        map.entry(k.as_str()).or_insert(v.as_str());
    }
    map
}

/// A count that must be a small number: at most `limit` (the number of
/// attributes there are to count, so a huge count never makes us loop).
fn count(map: &HashMap<&str, &str>, key: &str, limit: usize) -> Result<usize, String> {
    let v = map.get(key).ok_or_else(|| format!("spawn request without {key}"))?;
    let n: usize = v.trim().parse().map_err(|_| format!("spawn request with {key}={v:?}, not a count"))?;
    if n > limit {
        return Err(format!("spawn request with {key}={n}, but not that many values"));
    }
    Ok(n)
}

fn string(map: &HashMap<&str, &str>, key: &str) -> Result<String, String> {
    map.get(key).map(|v| v.to_string()).ok_or_else(|| format!("spawn request without {key}"))
}

fn pairs(map: &HashMap<&str, &str>, n: usize, key: &dyn Fn(usize) -> String, val: &dyn Fn(usize) -> String) -> Result<Vec<(String, String)>, String> {
    (0..n).map(|i| Ok((string(map, &key(i))?, string(map, &val(i))?))).collect()
}

fn maxprocs(map: &HashMap<&str, &str>, key: &str) -> Result<u32, String> {
    let v = map.get(key).ok_or_else(|| format!("spawn request without {key}"))?;
    match v.trim().parse::<u64>() {
        Ok(n) if (1..=MAX_SPAWN_PROCS).contains(&n) => Ok(n as u32),
        _ => Err(format!("spawn request with {key}={v:?}: a program runs 1 to {MAX_SPAWN_PROCS} processes")),
    }
}

/// One block of a PMI-1 request, checked: where it stands in the request
/// (`spawnssofar`, `totspawns`), its program, and (if the block has them)
/// the preput pairs.
pub struct V1Block {
    pub number: u32,
    pub total: u32,
    pub app: Result<SpawnApp, String>,
    pub env: Result<Vec<(String, String)>, String>,
}

/// Read a PMI-1 `mcmd=spawn` block. `Err` when it does not even say where
/// it stands in its request.
pub fn parse_v1_block(msg: &Message) -> Result<V1Block, String> {
    let map = index(&msg.attrs);
    let number = |key: &str| -> Result<u32, String> {
        let v = map.get(key).ok_or_else(|| format!("spawn request without {key}"))?;
        match v.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_SPAWN_PROCS as u32).contains(&n) => Ok(n),
            _ => Err(format!("spawn request with {key}={v:?}")),
        }
    };
    let total = number("totspawns")?;
    let number = number("spawnssofar")?;
    if number > total {
        return Err(format!("spawn request block {number} of {total}"));
    }
    let limit = msg.attrs.len();
    let app = (|| {
        let argc = count(&map, "argcnt", limit)?;
        let ninfo = count(&map, "info_num", limit).or_else(|e| if map.contains_key("info_num") { Err(e) } else { Ok(0) })?;
        Ok(SpawnApp {
            command: string(&map, "execname")?,
            args: (1..=argc).map(|k| string(&map, &format!("arg{k}"))).collect::<Result<_, _>>()?,
            maxprocs: maxprocs(&map, "nprocs")?,
            info: pairs(&map, ninfo, &|k| format!("info_key_{k}"), &|k| format!("info_val_{k}"))?,
        })
    })();
    let env = match map.contains_key("preput_num") {
        false => Ok(Vec::new()),
        true => count(&map, "preput_num", limit)
            .and_then(|n| pairs(&map, n, &|k| format!("preput_key_{k}"), &|k| format!("preput_val_{k}"))),
    };
    Ok(V1Block { number, total, app, env })
}

/// Read a PMI-2 `spawn` request: its programs and preput pairs.
pub fn parse_v2(msg: &Message) -> Result<(Vec<SpawnApp>, Vec<(String, String)>), String> {
    // The common part, then one part per program, each opened by subcmd.
    let mut parts: Vec<&[(String, String)]> = Vec::new();
    let mut start = 0;
    for (i, (k, _)) in msg.attrs.iter().enumerate() {
        if k == "subcmd" {
            parts.push(&msg.attrs[start..i]);
            start = i;
        }
    }
    parts.push(&msg.attrs[start..]);
    let common = index(parts[0]);
    let limit = msg.attrs.len();
    let ncmds = count(&common, "ncmds", limit)?;
    if ncmds == 0 {
        return Err("spawn request of no program (ncmds=0)".into());
    }
    if ncmds != parts.len() - 1 {
        return Err(format!("spawn request with ncmds={ncmds} but {} programs (subcmd)", parts.len() - 1));
    }
    let npre = match common.contains_key("preputcount") {
        false => 0,
        true => count(&common, "preputcount", limit)?,
    };
    let env = pairs(&common, npre, &|k| format!("ppkey{k}"), &|k| format!("ppval{k}"))?;
    let mut apps = Vec::with_capacity(ncmds);
    for part in &parts[1..] {
        let map = index(part);
        let argc = count(&map, "argc", limit)?;
        let ninfo = match map.contains_key("infokeycount") {
            false => 0,
            true => count(&map, "infokeycount", limit)?,
        };
        apps.push(SpawnApp {
            command: string(&map, "subcmd")?,
            args: (0..argc).map(|k| string(&map, &format!("argv{k}"))).collect::<Result<_, _>>()?,
            maxprocs: maxprocs(&map, "maxprocs")?,
            info: pairs(&map, ninfo, &|k| format!("infokey{k}"), &|k| format!("infoval{k}"))?,
        });
    }
    check_apps(&apps)?;
    Ok((apps, env))
}

/// What holds for a whole request: at least one program, each with a
/// command, and not too many processes in all.
pub fn check_apps(apps: &[SpawnApp]) -> Result<(), String> {
    if apps.is_empty() {
        return Err("spawn request of no program".into());
    }
    if let Some(i) = apps.iter().position(|a| a.command.is_empty()) {
        return Err(format!("spawn request: program {} has no command", i + 1));
    }
    let total: u64 = apps.iter().map(|a| a.maxprocs as u64).sum();
    if total > MAX_SPAWN_PROCS {
        return Err(format!("spawn request of {total} processes: at most {MAX_SPAWN_PROCS}"));
    }
    Ok(())
}

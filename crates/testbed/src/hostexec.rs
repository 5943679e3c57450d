//! Running a command as one host of the grid: in its network namespace,
//! with its own hostname (a new UTS namespace) and its own /etc/hosts (a new
//! mount namespace with the host's file bind-mounted, and /sys remounted so
//! /sys/class/net shows the host's interfaces).
//!
//! Two argument conventions:
//! - `gridmpi-testbed exec HOST -- CMD ARG...` runs CMD with exactly those
//!   arguments;
//! - `gridmpi-testbed exec [SSH-OPTIONS] HOST CMD...` (or the program called
//!   as `ssh` / `gridmpi-testbed-ssh`) behaves like ssh: options such as
//!   `-x`, `-o Key=Value`, `-p 22`, `-l user`, `user@host` are accepted and
//!   ignored, and the words of the command are joined with spaces and run
//!   by `/bin/sh -c`, so quoting works as it does through ssh (MPICH's hydra
//!   and Open MPI's prte both rely on that). No command: an interactive
//!   shell.

use crate::netns;
use crate::state::{self, State};
use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// ssh options that take a value (from ssh(1)).
const SSH_OPTS_WITH_VALUE: &str = "BbcDEeFIiJLlmOoPpQRSWw";
/// ssh options that are flags.
const SSH_FLAGS: &str = "46AaCfGgKkMNnqsTtVvXxYy";

#[derive(Debug, PartialEq, Eq)]
pub enum RemoteCommand {
    /// Exact argv.
    Argv(Vec<String>),
    /// A shell command line (ssh semantics).
    Shell(String),
    /// Interactive shell.
    Login,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Invocation {
    pub host: String,
    pub command: RemoteCommand,
}

/// Parse what a launcher passes: `[ssh options] [user@]host [--] command...`.
pub fn parse(args: &[String]) -> Result<Invocation, String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if !a.starts_with('-') || a == "-" {
            break;
        }
        if a == "--" {
            i += 1;
            break;
        }
        // A cluster of flags, possibly ending with an option that takes a
        // value (attached or as the next word): -xT, -p22, -o Opt=v.
        let chars: Vec<char> = a[1..].chars().collect();
        let mut consumed_next = false;
        for (k, ch) in chars.iter().enumerate() {
            if SSH_OPTS_WITH_VALUE.contains(*ch) {
                if k + 1 == chars.len() {
                    consumed_next = true;
                }
                break;
            } else if !SSH_FLAGS.contains(*ch) {
                return Err(format!("unknown ssh-style option '-{ch}' in '{a}'"));
            }
        }
        i += if consumed_next { 2 } else { 1 };
    }
    let Some(host) = args.get(i) else {
        return Err("no host given; usage: gridmpi-testbed exec HOST [--] COMMAND...".into());
    };
    let host = host.rsplit_once('@').map_or(host.as_str(), |(_, h)| h).to_string();
    let rest = &args[i + 1..];
    let command = match rest.first().map(String::as_str) {
        None => RemoteCommand::Login,
        Some("--") if rest.len() > 1 => RemoteCommand::Argv(rest[1..].to_vec()),
        Some("--") => RemoteCommand::Login,
        Some(_) => RemoteCommand::Shell(rest.join(" ")),
    };
    Ok(Invocation { host, command })
}

fn check(rc: libc::c_int, what: &str) -> Result<(), String> {
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("{what}: {}", std::io::Error::last_os_error()))
    }
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("no NUL in paths")
}

/// Enter the host's namespaces (the calling process must be single-threaded).
pub fn enter_host(host: &str) -> Result<(), String> {
    let state = State::require()?;
    if state.grid.host(host).is_none() {
        let names: Vec<&str> = state.grid.hosts().map(|(_, h)| h.name.as_str()).collect();
        return Err(format!("no host '{host}' in the grid (hosts: {})", names.join(" ")));
    }
    let hosts_file = state::hosts_file(host);
    netns::enter(&netns::host_ns(host)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            format!("{e}: entering a host needs CAP_SYS_ADMIN (run as root)")
        } else {
            e.to_string()
        }
    })?;
    // SAFETY: unshare/mount/sethostname take valid C strings that live
    // across each call; the process is single-threaded here, which
    // unshare(CLONE_NEWNS) requires.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWUTS), "unshare(mount, uts)")?;
        // Our mounts must not leak back into the parent namespace.
        check(
            libc::mount(std::ptr::null(), cstr("/").as_ptr(), std::ptr::null(), libc::MS_REC | libc::MS_SLAVE, std::ptr::null()),
            "making / a slave mount",
        )?;
        check(libc::sethostname(host.as_ptr() as *const libc::c_char, host.len()), "sethostname")?;
        check(
            libc::mount(
                cstr(&hosts_file.to_string_lossy()).as_ptr(),
                cstr("/etc/hosts").as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            ),
            "bind-mounting /etc/hosts",
        )?;
        // /sys shows the namespace that mounted it: mount a fresh one, as
        // `ip netns exec` does. Not fatal if it fails.
        if libc::umount2(cstr("/sys").as_ptr(), libc::MNT_DETACH) == 0 {
            libc::mount(cstr("sysfs").as_ptr(), cstr("/sys").as_ptr(), cstr("sysfs").as_ptr(), 0, std::ptr::null());
        }
    }
    Ok(())
}

/// `exec`: never returns on success.
pub fn exec(args: &[String]) -> Result<std::convert::Infallible, String> {
    let inv = parse(args)?;
    enter_host(&inv.host)?;
    let err = match inv.command {
        RemoteCommand::Argv(argv) => Command::new(&argv[0]).args(&argv[1..]).exec(),
        RemoteCommand::Shell(line) => Command::new("/bin/sh").arg("-c").arg(line).exec(),
        RemoteCommand::Login => {
            let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
            Command::new(&shell).arg("-i").exec()
        }
    };
    Err(format!("cannot run the command on {}: {err}", inv.host))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn argv_mode() {
        let inv = parse(&v(&["h1", "--", "echo", "a  b"])).unwrap();
        assert_eq!(inv, Invocation { host: "h1".into(), command: RemoteCommand::Argv(v(&["echo", "a  b"])) });
    }

    #[test]
    fn hydra_style() {
        let inv = parse(&v(&["-x", "h3", "\"/opt/bin/hydra_pmi_proxy\"", "--control-port", "h0:4000"])).unwrap();
        assert_eq!(inv.host, "h3");
        assert_eq!(inv.command, RemoteCommand::Shell("\"/opt/bin/hydra_pmi_proxy\" --control-port h0:4000".into()));
    }

    #[test]
    fn ssh_options_with_values() {
        let inv = parse(&v(&["-o", "StrictHostKeyChecking=no", "-p22", "-l", "root", "-xT", "root@h2", "hostname"])).unwrap();
        assert_eq!(inv, Invocation { host: "h2".into(), command: RemoteCommand::Shell("hostname".into()) });
    }

    #[test]
    fn prte_style_single_string() {
        let cmd = "PRTE_PREFIX=/opt;export PRTE_PREFIX;/opt/bin/prted --prtemca ess \"env\"";
        let inv = parse(&v(&["h5", cmd])).unwrap();
        assert_eq!(inv.command, RemoteCommand::Shell(cmd.into()));
    }

    #[test]
    fn login_and_errors() {
        assert_eq!(parse(&v(&["h0"])).unwrap().command, RemoteCommand::Login);
        assert!(parse(&v(&["-x"])).is_err());
        assert!(parse(&v(&["-Z", "h0", "ls"])).is_err());
    }
}

//! Low-level namespace helpers: entering a named network namespace, writing
//! its sysctls, switching off segmentation offloads, opening TUN devices and
//! finding the processes that live in a namespace.
//!
//! Named network namespaces are the files `ip netns add` bind-mounts under
//! /run/netns. Entering one with setns(2) changes only the calling thread,
//! so work for a namespace runs on a short-lived thread (`in_netns`).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub const NETNS_DIR: &str = "/run/netns";
/// Every namespace the testbed makes starts with this.
pub const PREFIX: &str = "gtb-";

pub fn host_ns(host: &str) -> String {
    format!("{PREFIX}{host}")
}

pub fn switch_ns(cluster: &str) -> String {
    format!("{PREFIX}sw-{cluster}")
}

pub fn ns_path(ns: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(ns)
}

pub fn exists(ns: &str) -> bool {
    ns_path(ns).exists()
}

/// Move the calling thread into the named network namespace.
pub fn enter(ns: &str) -> io::Result<()> {
    let file = File::open(ns_path(ns))
        .map_err(|e| io::Error::new(e.kind(), format!("network namespace {ns}: {e}")))?;
    // SAFETY: setns on a valid fd we own; affects only this thread's namespaces.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("setns({ns}): {e}")));
    }
    Ok(())
}

/// Run `f` on a thread inside the named network namespace.
pub fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> io::Result<T> + Send + 'static) -> io::Result<T> {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        enter(&ns)?;
        f()
    })
    .join()
    .map_err(|_| io::Error::other("namespace worker thread panicked"))?
}

/// Write a sysctl of the current thread's network namespace, e.g.
/// `net/ipv4/ip_forward`.
pub fn write_sysctl(key: &str, value: &str) -> io::Result<()> {
    let path = format!("/proc/sys/{key}");
    std::fs::write(&path, value).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))
}

pub fn read_sysctl(key: &str) -> io::Result<String> {
    let path = format!("/proc/sys/{key}");
    Ok(std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?
        .trim()
        .to_string())
}

// ---- ethtool (SIOCETHTOOL feature ioctls, linux/ethtool.h) ----

const SIOCETHTOOL: libc::c_ulong = 0x8946;

#[repr(C)]
struct IfreqData {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

fn ifreq_name(ifname: &str) -> io::Result<[libc::c_char; libc::IFNAMSIZ]> {
    if ifname.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface name '{ifname}' too long")));
    }
    let mut name = [0 as libc::c_char; libc::IFNAMSIZ];
    for (dst, src) in name.iter_mut().zip(ifname.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(name)
}

fn dgram_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the fd is wrapped in OwnedFd at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh, valid descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ethtool_raw(sock: &OwnedFd, ifname: &str, buf: &mut [u32]) -> io::Result<libc::c_int> {
    let mut req = IfreqData { name: ifreq_name(ifname)?, data: buf.as_mut_ptr() as *mut libc::c_void, _pad: [0; 16] };
    // SAFETY: the ethtool command in buf[0] reads/writes at most buf's
    // length (the sizes inside buf were set from it); buf outlives the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL, &mut req) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GFEATURES: u32 = 0x3a;
const ETHTOOL_SFEATURES: u32 = 0x3b;
const ETH_SS_FEATURES: u32 = 4;

/// The device's feature names (ethtool -k), in bit order.
fn feature_names(sock: &OwnedFd, ifname: &str) -> io::Result<Vec<String>> {
    // struct ethtool_sset_info { cmd, reserved, u64 sset_mask, u32 data[1] }
    let mut info = [ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_FEATURES, 0, 0];
    ethtool_raw(sock, ifname, &mut info)?;
    let n = info[4] as usize;
    // struct ethtool_gstrings { cmd, string_set, len, u8 data[len * 32] }
    let mut buf = vec![0u32; 3 + n * 8];
    buf[0] = ETHTOOL_GSTRINGS;
    buf[1] = ETH_SS_FEATURES;
    buf[2] = n as u32;
    ethtool_raw(sock, ifname, &mut buf)?;
    let bytes: Vec<u8> = buf[3..].iter().flat_map(|w| w.to_ne_bytes()).collect();
    Ok(bytes
        .chunks(32)
        .map(|c| String::from_utf8_lossy(&c[..c.iter().position(|&b| b == 0).unwrap_or(32)]).into_owned())
        .collect())
}

/// Active feature bits.
fn active_features(sock: &OwnedFd, ifname: &str, n: usize) -> io::Result<Vec<bool>> {
    let words = n.div_ceil(32);
    // struct ethtool_gfeatures { cmd, size, { available, requested, active, never_changed }[size] }
    let mut buf = vec![0u32; 2 + words * 4];
    buf[0] = ETHTOOL_GFEATURES;
    buf[1] = words as u32;
    ethtool_raw(sock, ifname, &mut buf)?;
    Ok((0..n).map(|i| buf[2 + (i / 32) * 4 + 2] & (1 << (i % 32)) != 0).collect())
}

/// Is this a segmentation or receive-aggregation offload?
fn is_offload(name: &str) -> bool {
    (name.starts_with("tx-") && name.ends_with("segmentation")) || name.starts_with("rx-gro") || name == "rx-lro"
}

/// Switch off every segmentation offload (TSO of all kinds, GSO) and every
/// receive aggregation (GRO, LRO) of an interface of the current namespace,
/// so that TCP hands the link real MTU-sized packets. Errors name any TCP
/// segmentation or GRO that stays on.
pub fn disable_offloads(ifname: &str) -> io::Result<()> {
    let sock = dgram_socket()?;
    let names = feature_names(&sock, ifname).map_err(|e| io::Error::new(e.kind(), format!("ethtool {ifname}: {e}")))?;
    let words = names.len().div_ceil(32);
    // struct ethtool_sfeatures { cmd, size, { valid, requested }[size] }
    let mut buf = vec![0u32; 2 + words * 2];
    buf[0] = ETHTOOL_SFEATURES;
    buf[1] = words as u32;
    for (i, name) in names.iter().enumerate() {
        if is_offload(name) {
            buf[2 + (i / 32) * 2] |= 1 << (i % 32); // valid; requested stays 0 = off
        }
    }
    ethtool_raw(&sock, ifname, &mut buf).map_err(|e| io::Error::new(e.kind(), format!("ethtool {ifname}: {e}")))?;
    let active = active_features(&sock, ifname, names.len())?;
    let still_on: Vec<&str> = names
        .iter()
        .zip(&active)
        .filter(|(n, &on)| on && (n.starts_with("tx-tcp") || n.as_str() == "tx-generic-segmentation" || n.as_str() == "rx-gro"))
        .map(|(n, _)| n.as_str())
        .collect();
    if still_on.is_empty() {
        Ok(())
    } else {
        Err(io::Error::other(format!("{ifname}: could not switch off {}", still_on.join(", "))))
    }
}

/// Offloads still on (names), for checks.
pub fn offloads_on(ifname: &str) -> io::Result<Vec<String>> {
    let sock = dgram_socket()?;
    let names = feature_names(&sock, ifname)?;
    let active = active_features(&sock, ifname, names.len())?;
    Ok(names.into_iter().zip(active).filter(|(n, on)| *on && is_offload(n)).map(|(n, _)| n).collect())
}

// ---- TUN ----

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfreqFlags {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Attach to the (persistent) TUN device `ifname` of the current thread's
/// namespace. Packets are plain IP (no packet-information header). The fd is
/// non-blocking.
pub fn open_tun(ifname: &str) -> io::Result<OwnedFd> {
    let path = CString::new("/dev/net/tun").unwrap();
    // SAFETY: open(2) on a constant path; the fd is wrapped at once.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("/dev/net/tun: {e}")));
    }
    // SAFETY: fd is fresh and owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfreqFlags { name: ifreq_name(ifname)?, flags: IFF_TUN | IFF_NO_PI, _pad: [0; 22] };
    // SAFETY: TUNSETIFF reads and writes the ifreq on our stack.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("TUNSETIFF {ifname}: {e}")));
    }
    Ok(fd)
}

// ---- processes ----

/// (device, inode) identifying a namespace file.
fn ns_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Pids of all processes whose network namespace is the named one.
pub fn processes_in(ns: &str) -> Vec<i32> {
    let Some(target) = ns_id(&ns_path(ns)) else { return Vec::new() };
    let me = std::process::id() as i32;
    let mut pids = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            if pid != me && ns_id(&entry.path().join("ns/net")) == Some(target) {
                pids.push(pid);
            }
        }
    }
    pids
}

/// Start time of a process (clock ticks since boot, /proc/PID/stat field 22);
/// with the pid it names one process even if pids are reused.
pub fn process_start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 2..];
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

/// (interface, rx_dropped, tx_dropped) of the current thread's namespace
/// for interfaces whose name starts with `prefix` (from /proc/net/dev).
pub fn tun_drop_counts(prefix: &str) -> io::Result<Vec<(String, u64, u64)>> {
    let text = std::fs::read_to_string("/proc/thread-self/net/dev")?;
    let mut out = Vec::new();
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else { continue };
        let name = name.trim();
        if !name.starts_with(prefix) {
            continue;
        }
        let f: Vec<u64> = rest.split_whitespace().filter_map(|v| v.parse().ok()).collect();
        if f.len() >= 12 {
            out.push((name.to_string(), f[3], f[11]));
        }
    }
    Ok(out)
}

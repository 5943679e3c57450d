//! Relays: how a rank reaches a rank it cannot connect to.
//!
//! Sites hide their compute nodes: private addresses, a firewall that lets
//! in only a gateway host. A relay runs on such a gateway
//! (`gridmpirun --relay ADDR:PORT`); ranks of the site say so in their
//! address card (`GRIDMPI_RELAY`), and a connection between two clusters
//! then goes through the relay of each end that has one:
//!
//! ```text
//! rank a ──▶ relay of a's site ──▶ relay of b's site ──▶ rank b
//! ```
//!
//! The caller opens a TCP connection to the first relay and writes one
//! [`Preface`] line naming the rest of the way: the relays after it
//! (`via`) and the addresses of the rank it wants (`to`). The relay checks
//! the line, connects onward (writing the next relay a preface for the
//! rest of the way), and from then on copies bytes both ways without
//! looking at them (`splice(2)`: the kernel moves them). What follows is
//! the ranks' own handshake, end to end: a relay is not trusted with the
//! job, it only forwards, and it knows nothing of MPI.
//!
//! The line is authenticated with a key derived from the job secret
//! ([`relay_key`]), so a relay is no open proxy: it forwards only for
//! whoever holds the secret. A line is good for [`FRESH_FOR`] around its
//! time stamp and once (its nonce is remembered: [`Replays`]), so a line
//! seen on the network cannot be used again.
//!
//! The line: `GRIDMPI-RELAY-1 via=A:P,... to=A:P,... t=UNIX_SECONDS n=NONCE mac=HMAC\n`.

use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gridmpi_auth::{equal_ct, hex, hmac_sha256, unhex};

pub mod server;

pub const MAGIC: &str = "GRIDMPI-RELAY-1";
/// No preface is longer (a relay reads at most this before giving up).
pub const MAX_LINE: usize = 2048;
/// How far a preface's time stamp may be from the relay's clock.
pub const FRESH_FOR: Duration = Duration::from_secs(300);
/// At most this many relays after the first, and addresses to try.
const MAX_HOPS: usize = 8;
const MAX_TARGETS: usize = 16;

/// The key relays and ranks share: derived from the job secret, so a
/// relay need not hold the secret the ranks' own handshake proves.
pub fn relay_key(secret: &[u8; 32]) -> [u8; 32] {
    hmac_sha256(secret, &[b"gridmpi relay key"])
}

/// Where a connection is to go from the relay that reads this.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preface {
    /// Relays still to pass, in order.
    pub via: Vec<SocketAddrV4>,
    /// Addresses of the destination, tried in order by the last relay.
    pub to: Vec<SocketAddrV4>,
    /// Seconds since the Unix epoch when it was made.
    pub time: u64,
    pub nonce: [u8; 16],
}

fn list(addrs: &[SocketAddrV4]) -> String {
    addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")
}

pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Preface {
    /// A fresh preface for the way `via` then `to`.
    pub fn new(via: Vec<SocketAddrV4>, to: Vec<SocketAddrV4>) -> std::io::Result<Preface> {
        let mut nonce = [0u8; 16];
        random_bytes(&mut nonce)?;
        Ok(Preface { via, to, time: unix_now(), nonce })
    }

    fn mac(&self, key: &[u8; 32]) -> [u8; 32] {
        let fields = format!("{}|{}|{}", list(&self.via), list(&self.to), self.time);
        hmac_sha256(key, &[b"gridmpi relay preface", &self.nonce, fields.as_bytes()])
    }

    pub fn line(&self, key: &[u8; 32]) -> Vec<u8> {
        format!(
            "{MAGIC} via={} to={} t={} n={} mac={}\n",
            list(&self.via),
            list(&self.to),
            self.time,
            hex(&self.nonce),
            hex(&self.mac(key))
        )
        .into_bytes()
    }

    /// Read and check a line (without its `\n`). Errors say what is wrong,
    /// for the relay's log.
    pub fn parse(line: &[u8], key: &[u8; 32]) -> Result<Preface, String> {
        let line = std::str::from_utf8(line).map_err(|_| "the line is not text".to_string())?;
        let mut it = line.trim_end_matches('\r').split(' ');
        if it.next() != Some(MAGIC) {
            return Err(format!("not a {MAGIC} line"));
        }
        let mut fields: HashMap<&str, &str> = HashMap::new();
        for kv in it {
            let (k, v) = kv.split_once('=').ok_or_else(|| format!("malformed field {:?}", cut(kv)))?;
            if fields.insert(k, v).is_some() {
                return Err(format!("two {k} fields"));
            }
        }
        let get = |k: &str| fields.get(k).copied().ok_or_else(|| format!("no {k} field"));
        let addrs = |k: &str, max: usize| -> Result<Vec<SocketAddrV4>, String> {
            let v = get(k)?;
            let out: Vec<SocketAddrV4> = if v.is_empty() {
                Vec::new()
            } else {
                v.split(',').map(|a| a.parse().map_err(|_| format!("{k}: {:?} is not an address:port", cut(a)))).collect::<Result<_, _>>()?
            };
            if out.len() > max {
                return Err(format!("{k}: more than {max} addresses"));
            }
            Ok(out)
        };
        let p = Preface {
            via: addrs("via", MAX_HOPS)?,
            to: addrs("to", MAX_TARGETS)?,
            time: get("t")?.parse().map_err(|_| "t is not a number".to_string())?,
            nonce: unhex::<16>(get("n")?).ok_or("n is not 32 hex digits")?,
        };
        if p.to.is_empty() {
            return Err("no destination".into());
        }
        let mac = unhex::<32>(get("mac")?).ok_or("mac is not 64 hex digits")?;
        if !equal_ct(&mac, &p.mac(key)) {
            return Err("its MAC does not match the job's relay key (another job's secret, or forged)".into());
        }
        Ok(p)
    }

    /// The preface for the next relay: the rest of the way, stamped anew.
    pub fn onward(&self) -> std::io::Result<Preface> {
        Preface::new(self.via[1..].to_vec(), self.to.clone())
    }
}

/// Prefaces seen lately, by nonce: each is accepted once.
#[derive(Default)]
pub struct Replays {
    seen: HashMap<[u8; 16], u64>,
}

impl Replays {
    /// Accept `p` at `now` (Unix seconds) unless it is stale, from the
    /// future, or seen before.
    pub fn admit(&mut self, p: &Preface, now: u64) -> Result<(), String> {
        let fresh = FRESH_FOR.as_secs();
        if p.time + fresh < now || p.time > now + fresh {
            return Err(format!("its time stamp is {} s from ours (more than {fresh} s: clocks apart, or a recorded line)", now.abs_diff(p.time)));
        }
        // Anything older than the window can no longer be admitted anyway.
        self.seen.retain(|_, &mut t| t + fresh >= now);
        if self.seen.insert(p.nonce, p.time).is_some() {
            return Err("the same line was used before (a replay)".into());
        }
        Ok(())
    }
}

fn cut(s: &str) -> &str {
    match s.char_indices().nth(60) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Fill `out` from the kernel's random source (getrandom(2): no file
/// descriptor, so it works when a process has run out of them).
pub fn random_bytes(out: &mut [u8]) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < out.len() {
        // SAFETY: the pointer and length describe the unfilled part of `out`.
        let n = unsafe { libc::getrandom(out[filled..].as_mut_ptr().cast(), out.len() - filled, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        filled += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddrV4 {
        s.parse().unwrap()
    }

    #[test]
    fn preface_round_trips_and_needs_the_key() {
        let key = relay_key(&[7; 32]);
        let p = Preface::new(vec![a("10.0.0.1:7100")], vec![a("10.1.0.2:4000"), a("127.0.0.1:4000")]).unwrap();
        let line = p.line(&key);
        assert_eq!(line.last(), Some(&b'\n'));
        let body = &line[..line.len() - 1];
        assert_eq!(Preface::parse(body, &key).unwrap(), p);
        assert!(Preface::parse(body, &relay_key(&[8; 32])).unwrap_err().contains("MAC"));
        let text = String::from_utf8(body.to_vec()).unwrap();
        let redirected = text.replace("10.1.0.2:4000", "10.1.0.9:22");
        assert!(Preface::parse(redirected.as_bytes(), &key).unwrap_err().contains("MAC"));
        assert_eq!(p.onward().unwrap().via, Vec::<SocketAddrV4>::new());
    }

    #[test]
    fn a_line_is_good_once_and_only_while_fresh() {
        let key = relay_key(&[1; 32]);
        let p = Preface::new(vec![], vec![a("10.1.0.2:4000")]).unwrap();
        let mut r = Replays::default();
        let now = p.time;
        r.admit(&p, now).unwrap();
        assert!(r.admit(&p, now + 1).unwrap_err().contains("replay"));
        let old = Preface { time: now - 1000, ..p.clone() };
        assert!(r.admit(&old, now).unwrap_err().contains("time stamp"));
        let _ = key;
    }

    #[test]
    fn hostile_lines_are_errors() {
        let key = relay_key(&[1; 32]);
        for bad in [
            "",
            "GRIDMPI-RELAY-1",
            "SSH-2.0-x",
            "GRIDMPI-RELAY-1 via= to= t=1 n=00 mac=00",
            "GRIDMPI-RELAY-1 via= to=1.2.3.4 t=1 n=00000000000000000000000000000000 mac=0",
            "GRIDMPI-RELAY-1 via= via= to=1.2.3.4:5 t=1 n=00000000000000000000000000000000 mac=0",
            "GRIDMPI-RELAY-1 via=1.2.3.4:5 to=1.2.3.4:5 t=x n=00000000000000000000000000000000 mac=0",
        ] {
            assert!(Preface::parse(bad.as_bytes(), &key).is_err(), "{bad}");
        }
        assert!(Preface::parse(&[0xff, 0xfe], &key).is_err());
    }
}

//! The quantities a WAN link is described with: rates (bits per second),
//! delays (nanoseconds), queue limits (packets or bytes) and loss rates (a
//! probability), parsed and printed.
//!
//! Rates, delays and byte counts follow the one rule GridMPI has for them
//! (`gridmpi_config::units`, docs/grid.md "Writing rates, sizes and
//! durations"): `100mbit`, `100Mbit/s`, `100M`, `2.5gbit`, `0` (= no limit),
//! `bps` refused; `5ms`, `250us`, `0`; `64kB` (x1000), `64KiB` or `64k`
//! (x1024). What is the testbed's own: a queue in packets, a loss rate, and
//! the limits of the emulator.

use gridmpi_config::units::{self as config_units, Bare};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The emulator holds at most this much delay per direction.
const MAX_DELAY_NS: u64 = 60_000_000_000;
/// The emulator's rate arithmetic is exact up to this many bits per second.
const MAX_RATE_BPS: u64 = 1_000_000_000_000;

/// Link rate in bits per second; 0 means "no rate limit".
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let bps = config_units::parse_rate(text).map_err(|e| format!("rate {e}"))?;
    if bps > MAX_RATE_BPS {
        return Err(format!("rate {text:?} out of range (at most 1000gbit)"));
    }
    Ok(bps)
}

/// A one-way delay in nanoseconds: `5ms`, `250us`, `0.5ms`, `1s`, `0`.
pub fn parse_delay(text: &str) -> Result<u64, String> {
    let delay = config_units::parse_duration(text, Bare::Refused).map_err(|e| format!("delay {e}"))?;
    let ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
    if ns > MAX_DELAY_NS {
        return Err(format!("delay {text:?} out of range (at most 60 s)"));
    }
    Ok(ns)
}

/// The drop-tail limit of a link's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueueLimit {
    /// At most this many packets buffered (counting the one being sent).
    Packets(u32),
    /// At most this many bytes (IP packet lengths) buffered.
    Bytes(u64),
}

/// `100p`, `100pkt`, `100packets` are packets; `64000b`, `64kB`, `64KiB`,
/// `1MB` are bytes, as every size is written. A bare number is refused:
/// packets or bytes?
pub fn parse_queue(text: &str) -> Result<QueueLimit, String> {
    let trimmed = text.trim();
    let end = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(trimmed.len());
    let (number, unit) = (trimmed[..end].replace('_', ""), trimmed[end..].trim().to_ascii_lowercase());
    if matches!(unit.as_str(), "p" | "pkt" | "pkts" | "packet" | "packets") {
        return match number.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(QueueLimit::Packets(n)),
            _ => Err(format!("queue {text:?}: a whole number of packets >= 1, e.g. 100p")),
        };
    }
    if !number.is_empty() && unit.is_empty() {
        return Err(format!("queue {text:?}: say packets (100p) or bytes (64kB, 64KiB, 64000b)"));
    }
    match config_units::parse_size(text) {
        Ok(0) => Err(format!("queue {text:?}: at least one byte")),
        Ok(bytes) => Ok(QueueLimit::Bytes(bytes)),
        Err(e) => Err(format!("queue {e}; or packets, e.g. 100p")),
    }
}

/// A loss probability: `1%`, `0.5%`, `0.01`, `0`.
pub fn parse_loss(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let p = if let Some(pct) = text.strip_suffix('%') {
        pct.trim().parse::<f64>().map_err(|_| format!("loss '{text}': bad number"))? / 100.0
    } else {
        text.parse::<f64>().map_err(|_| format!("loss '{text}': bad number"))?
    };
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("loss '{text}' must be between 0 and 100%"));
    }
    Ok(p)
}

pub struct Rate(pub u64);
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let r = self.0 as f64;
        match self.0 {
            0 => write!(f, "unlimited"),
            b if b >= 1_000_000_000 => write!(f, "{}gbit", trim(r / 1e9)),
            b if b >= 1_000_000 => write!(f, "{}mbit", trim(r / 1e6)),
            b if b >= 1_000 => write!(f, "{}kbit", trim(r / 1e3)),
            _ => write!(f, "{}bit", self.0),
        }
    }
}

pub struct Delay(pub u64);
impl fmt::Display for Delay {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let ns = self.0 as f64;
        match self.0 {
            0 => write!(f, "0ms"),
            n if n >= 1_000_000 => write!(f, "{}ms", trim(ns / 1e6)),
            n if n >= 1_000 => write!(f, "{}us", trim(ns / 1e3)),
            _ => write!(f, "{}ns", self.0),
        }
    }
}

impl fmt::Display for QueueLimit {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            QueueLimit::Packets(p) => write!(f, "{p}p"),
            QueueLimit::Bytes(b) => write!(f, "{b}b"),
        }
    }
}

pub struct Loss(pub f64);
impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}%", trim(self.0 * 100.0))
    }
}

/// Print a float without trailing zeros: 2.50 -> "2.5", 100.0 -> "100".
fn trim(x: f64) -> String {
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate("100Mbit/s").unwrap(), 100_000_000);
        assert_eq!(parse_rate("2.5gbit").unwrap(), 2_500_000_000);
        assert_eq!(parse_rate("64k").unwrap(), 64_000);
        assert_eq!(parse_rate("0").unwrap(), 0);
        assert!(parse_rate("100mbps").unwrap_err().contains("ambiguous"));
        assert!(parse_rate("fast").is_err());
        // A bare number was bits per second here, refused by the library's
        // topology file; refused everywhere now (100 what?).
        assert!(parse_rate("100").unwrap_err().contains("unit"));
        assert!(parse_rate("2000gbit").unwrap_err().contains("out of range"));
        assert_eq!(Rate(100_000_000).to_string(), "100mbit");
        assert_eq!(Rate(2_500_000_000).to_string(), "2.5gbit");
        for bps in [1, 999, 64_000, 100_000_000, 2_500_000_000, 1_000_000_000_000] {
            assert_eq!(parse_rate(&Rate(bps).to_string()), Ok(bps), "what the testbed prints reads back");
        }
    }

    #[test]
    fn delays() {
        assert_eq!(parse_delay("5ms").unwrap(), 5_000_000);
        assert_eq!(parse_delay("0.5ms").unwrap(), 500_000);
        assert_eq!(parse_delay("250us").unwrap(), 250_000);
        assert_eq!(parse_delay("100ns").unwrap(), 100);
        assert_eq!(parse_delay("0").unwrap(), 0);
        assert!(parse_delay("5").unwrap_err().contains("unit"));
        assert!(parse_delay("61s").unwrap_err().contains("out of range"));
        assert_eq!(Delay(5_000_000).to_string(), "5ms");
        assert_eq!(Delay(250_000).to_string(), "250us");
        for ns in [0, 100, 250_000, 5_000_000, 60_000_000_000] {
            assert_eq!(parse_delay(&Delay(ns).to_string()), Ok(ns));
        }
    }

    #[test]
    fn queues() {
        assert_eq!(parse_queue("100p").unwrap(), QueueLimit::Packets(100));
        assert_eq!(parse_queue("40packets").unwrap(), QueueLimit::Packets(40));
        assert_eq!(parse_queue("64kb").unwrap(), QueueLimit::Bytes(64_000));
        assert_eq!(parse_queue("64kB").unwrap(), QueueLimit::Bytes(64_000));
        assert_eq!(parse_queue("64KiB").unwrap(), QueueLimit::Bytes(65_536));
        assert_eq!(parse_queue("64000b").unwrap(), QueueLimit::Bytes(64_000));
        assert_eq!(parse_queue("1MB").unwrap(), QueueLimit::Bytes(1_000_000));
        // `k` alone was 1000 here, 1024 in every GridMPI size setting: 1024 now.
        assert_eq!(parse_queue("64k").unwrap(), QueueLimit::Bytes(65_536));
        assert!(parse_queue("100").unwrap_err().contains("packets (100p) or bytes"));
        assert!(parse_queue("1.5").is_err());
        assert!(parse_queue("0p").is_err());
        assert!(parse_queue("1.5p").is_err());
        assert!(parse_queue("0b").is_err());
        assert!(parse_queue("lots").unwrap_err().contains("\"lots\""));
        for q in [QueueLimit::Packets(100), QueueLimit::Bytes(64_000)] {
            assert_eq!(parse_queue(&q.to_string()), Ok(q));
        }
    }

    #[test]
    fn losses() {
        assert_eq!(parse_loss("1%").unwrap(), 0.01);
        assert_eq!(parse_loss("0.02").unwrap(), 0.02);
        assert!(parse_loss("120%").is_err());
        assert_eq!(Loss(0.005).to_string(), "0.5%");
    }
}

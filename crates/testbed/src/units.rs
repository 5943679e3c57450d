//! Parsing and printing of the quantities a WAN link is described with:
//! rates (bits per second), delays (nanoseconds), queue limits (packets or
//! bytes) and loss rates (a probability).
//!
//! Rates use decimal prefixes and bits, as network people write them:
//! `100mbit`, `100Mbit/s`, `100M`, `1gbit`, `2.5gbit`, `64kbit`, `0` (= no
//! limit). `mbps` is refused: tc reads it as megabytes, everyone else as
//! megabits.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Split "12.5ms" into (12.5, "ms").
fn split_number(text: &str) -> Result<(f64, String), String> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    let (num, unit) = text.split_at(end);
    let num = num.replace('_', "");
    if num.is_empty() {
        return Err(format!("'{text}': expected a number"));
    }
    let value: f64 = num.parse().map_err(|_| format!("'{text}': bad number '{num}'"))?;
    Ok((value, unit.trim().to_ascii_lowercase()))
}

/// Link rate in bits per second; 0 means "no rate limit".
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)?;
    let unit = unit.strip_suffix("/s").unwrap_or(&unit);
    if unit.ends_with("bps") {
        return Err(format!(
            "rate '{text}': 'bps' is ambiguous (tc reads it as bytes); write e.g. 100mbit"
        ));
    }
    let multiplier = match unit {
        "" | "bit" => 1.0,
        "k" | "kbit" => 1e3,
        "m" | "mbit" => 1e6,
        "g" | "gbit" => 1e9,
        _ => return Err(format!("rate '{text}': unknown unit '{unit}' (use bit, kbit, mbit, gbit)")),
    };
    let bits = value * multiplier;
    if !(0.0..=1e12).contains(&bits) {
        return Err(format!("rate '{text}' out of range"));
    }
    Ok(bits.round() as u64)
}

/// A duration (delay) in nanoseconds: `5ms`, `250us`, `0.5ms`, `1s`, `0`.
pub fn parse_delay(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)?;
    let multiplier = match unit.as_str() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" if value == 0.0 => 0.0,
        "" => return Err(format!("delay '{text}': give a unit (ms, us, s)")),
        _ => return Err(format!("delay '{text}': unknown unit '{unit}' (use ns, us, ms, s)")),
    };
    let ns = value * multiplier;
    if !(0.0..=60e9).contains(&ns) {
        return Err(format!("delay '{text}' out of range (at most 60 s)"));
    }
    Ok(ns.round() as u64)
}

/// The drop-tail limit of a link's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueueLimit {
    /// At most this many packets buffered (counting the one being sent).
    Packets(u32),
    /// At most this many bytes (IP packet lengths) buffered.
    Bytes(u64),
}

/// `100p`, `100pkt`, `100packets` are packets; `64000b`, `64kb`, `64KiB`,
/// `1MB` are bytes (k/M are decimal, KiB/MiB binary).
pub fn parse_queue(text: &str) -> Result<QueueLimit, String> {
    let (value, unit) = split_number(text)?;
    if value < 1.0 || value.fract() != 0.0 && matches!(unit.as_str(), "p" | "pkt" | "pkts" | "packets") {
        return Err(format!("queue '{text}': must be a whole number >= 1"));
    }
    let bytes = |m: f64| Ok(QueueLimit::Bytes((value * m).round() as u64));
    match unit.as_str() {
        "p" | "pkt" | "pkts" | "packet" | "packets" => Ok(QueueLimit::Packets(value as u32)),
        "b" | "byte" | "bytes" => bytes(1.0),
        "k" | "kb" => bytes(1e3),
        "kib" => bytes(1024.0),
        "m" | "mb" => bytes(1e6),
        "mib" => bytes(1024.0 * 1024.0),
        "" => Err(format!("queue '{text}': say packets (100p) or bytes (64kb)")),
        _ => Err(format!("queue '{text}': unknown unit '{unit}' (use p, b, kb, KiB, mb)")),
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
        assert!(parse_rate("100mbps").is_err());
        assert!(parse_rate("fast").is_err());
        assert_eq!(Rate(100_000_000).to_string(), "100mbit");
        assert_eq!(Rate(2_500_000_000).to_string(), "2.5gbit");
    }

    #[test]
    fn delays() {
        assert_eq!(parse_delay("5ms").unwrap(), 5_000_000);
        assert_eq!(parse_delay("0.5ms").unwrap(), 500_000);
        assert_eq!(parse_delay("250us").unwrap(), 250_000);
        assert_eq!(parse_delay("0").unwrap(), 0);
        assert!(parse_delay("5").is_err());
        assert_eq!(Delay(5_000_000).to_string(), "5ms");
        assert_eq!(Delay(250_000).to_string(), "250us");
    }

    #[test]
    fn queues() {
        assert_eq!(parse_queue("100p").unwrap(), QueueLimit::Packets(100));
        assert_eq!(parse_queue("40packets").unwrap(), QueueLimit::Packets(40));
        assert_eq!(parse_queue("64kb").unwrap(), QueueLimit::Bytes(64_000));
        assert_eq!(parse_queue("64KiB").unwrap(), QueueLimit::Bytes(65_536));
        assert!(parse_queue("100").is_err());
        assert!(parse_queue("0p").is_err());
    }

    #[test]
    fn losses() {
        assert_eq!(parse_loss("1%").unwrap(), 0.01);
        assert_eq!(parse_loss("0.02").unwrap(), 0.02);
        assert!(parse_loss("120%").is_err());
        assert_eq!(Loss(0.005).to_string(), "0.5%");
    }
}

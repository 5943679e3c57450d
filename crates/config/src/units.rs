//! Rates, sizes and durations as people write them: in `GRIDMPI_*`
//! settings, in topology files and in the testbed's grid specs. One rule per
//! quantity, the same everywhere (docs/grid.md, "Writing rates, sizes and
//! durations", says it for users):
//!
//! - **rate**: bits per second with decimal prefixes: `100mbit`,
//!   `100Mbit/s`, `100M`, `2.5gbit`, `64kbit`, `1000bit`, `0`. `bps` in any
//!   form (`mbps`, `MBps`) is refused: tc reads it as bytes per second, most
//!   people as bits. A bare number other than 0 is refused: `100` is far more
//!   often a forgotten `mbit` than a link of 100 bits per second.
//! - **size**: bytes. `k`, `m`, `g` (either case) and `KiB`, `MiB`, `GiB`
//!   are binary (x1024), `kB`, `MB`, `GB` decimal (x1000); a bare number or
//!   `b` is bytes. Single letters are binary because every size setting has
//!   always read them so (`GRIDMPI_EAGER_LIMIT=64k` is 65536).
//! - **duration**: `ns`, `us` (or `µs`), `ms`, `s`. A bare number is refused
//!   except 0, unless the setting's name carries its unit
//!   (`GRIDMPI_SPIN_US=200` is 200 µs): the caller says which with [`Bare`].
//!
//! Numbers may have a fraction (`2.5gbit`, `0.5ms`, `1.5k`) and `_` between
//! digits (`100_000`); the result is rounded to a whole bit, byte or
//! nanosecond. Units are case-insensitive, and a space may separate them
//! from the number. Negative numbers are refused.

use std::time::Duration;

/// A number as written: whole numbers are kept exact (a size may exceed
/// what an f64 holds exactly), fractions go through f64.
#[derive(Clone, Copy, Debug)]
enum Number {
    Whole(u64),
    Fraction(f64),
}

impl Number {
    fn is_zero(self) -> bool {
        match self {
            Number::Whole(n) => n == 0,
            Number::Fraction(x) => x == 0.0,
        }
    }

    /// `self x unit`, rounded; None if it does not fit in a u64.
    fn times(self, unit: u64) -> Option<u64> {
        match self {
            Number::Whole(n) => n.checked_mul(unit),
            Number::Fraction(x) => {
                let v = (x * unit as f64).round();
                // 2^64 is exactly representable; anything at or above it does not fit.
                (v < 18_446_744_073_709_551_616.0).then_some(v as u64)
            }
        }
    }
}

/// Split `12.5ms` into the number and the unit (lowercased, trimmed).
/// `None` when the text does not start with a number.
fn split(text: &str) -> Option<(Number, String)> {
    let text = text.trim();
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(text.len());
    let (digits, unit) = text.split_at(end);
    let digits = digits.replace('_', "");
    if !digits.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let number = if digits.contains('.') {
        Number::Fraction(digits.parse().ok()?)
    } else {
        Number::Whole(digits.parse().ok()?)
    };
    Some((number, unit.trim().to_lowercase()))
}

const RATE_FORM: &str = "expected bits per second such as 100mbit, 100Mbit/s, 100M, 2.5gbit, 64kbit or 0";

/// A rate in bits per second (see the module's rule).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let (number, unit) = split(text).ok_or_else(|| format!("{text:?} is not a rate: {RATE_FORM}"))?;
    let unit = unit.strip_suffix("/s").unwrap_or(&unit);
    if unit.ends_with("bps") {
        return Err(format!(
            "{text:?}: 'bps' is ambiguous (tc reads it as bytes per second, most people as bits); write bits, e.g. 100mbit"
        ));
    }
    let scale = match unit {
        "" if number.is_zero() => 1,
        "" => return Err(format!("{text:?} needs a unit: {RATE_FORM}")),
        "bit" => 1,
        "k" | "kbit" => 1_000,
        "m" | "mbit" => 1_000_000,
        "g" | "gbit" => 1_000_000_000,
        _ => return Err(format!("{text:?}: unknown rate unit {unit:?}; {RATE_FORM}")),
    };
    number.times(scale).ok_or_else(|| format!("{text:?}: too large a rate"))
}

const SIZE_FORM: &str = "expected bytes such as 4096, 64k or 64KiB (x1024), 64kB (x1000), 1m, 1MB";

/// A size in bytes (see the module's rule).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (number, unit) = split(text).ok_or_else(|| format!("{text:?} is not a size: {SIZE_FORM}"))?;
    let scale: u64 = match unit.as_str() {
        "" | "b" | "byte" | "bytes" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return Err(format!("{text:?}: unknown size unit {unit:?}; {SIZE_FORM}")),
    };
    if scale == 1 && matches!(number, Number::Fraction(x) if x.fract() != 0.0) {
        return Err(format!("{text:?}: not a whole number of bytes"));
    }
    number.times(scale).ok_or_else(|| format!("{text:?}: too large a size"))
}

/// What a duration written without a unit means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bare {
    /// Refused (except 0): `delay=5` is 5 what?
    Refused,
    /// Microseconds: for settings whose name says so (`GRIDMPI_SPIN_US`).
    Micros,
}

const DURATION_FORM: &str = "expected a duration such as 5ms, 250us, 1.5s, 100ns, 10min or 2h";

/// A duration (see the module's rule); `bare` says what a number without a
/// unit means.
pub fn parse_duration(text: &str, bare: Bare) -> Result<Duration, String> {
    let (number, unit) = split(text).ok_or_else(|| format!("{text:?} is not a duration: {DURATION_FORM}"))?;
    let nanos_per_unit: u64 = match unit.as_str() {
        "ns" => 1,
        // The micro sign (U+00B5) and the Greek mu (U+03BC) look alike.
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        // Minutes are `min`, never `m` (milli? mega?): an outage budget or
        // a checkpoint interval is naturally written in minutes.
        "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" if number.is_zero() => 1,
        "" if bare == Bare::Micros => 1_000,
        "" => return Err(format!("{text:?} needs a unit (ns, us, ms, s, min, h): {DURATION_FORM}; only 0 may go without")),
        _ => return Err(format!("{text:?}: unknown duration unit {unit:?}; {DURATION_FORM}")),
    };
    let nanos = number.times(nanos_per_unit).ok_or_else(|| format!("{text:?}: too long a duration"))?;
    Ok(Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_bits_per_second_with_decimal_prefixes() {
        for (text, bps) in [
            ("100mbit", 100_000_000),
            ("100Mbit/s", 100_000_000),
            ("100M", 100_000_000),
            ("100 mbit", 100_000_000),
            ("1gbit", 1_000_000_000),
            ("1.5Gbit", 1_500_000_000),
            ("2.5gbit", 2_500_000_000),
            ("64k", 64_000),
            ("64kbit", 64_000),
            ("1000bit", 1_000),
            ("1_000_000bit", 1_000_000),
            ("0", 0),
            ("0mbit", 0),
        ] {
            assert_eq!(parse_rate(text), Ok(bps), "{text}");
        }
    }

    #[test]
    fn rates_refuse_bps_bare_numbers_and_nonsense() {
        // The testbed read a bare number as bits per second, the topology
        // file refused it: refused now, the message names the text and the form.
        let e = parse_rate("100").unwrap_err();
        assert!(e.contains("\"100\"") && e.contains("unit") && e.contains("100mbit"), "{e}");
        for text in ["100mbps", "100Mbps", "1gbps", "100bps", "100MBps", "12.5MBps/s"] {
            let e = parse_rate(text).unwrap_err();
            assert!(e.contains("ambiguous"), "{text}: {e}");
        }
        for text in ["fast", "", "mbit", "-5mbit", "100mb", "100 furlongs", "1.2.3mbit"] {
            let e = parse_rate(text).unwrap_err();
            assert!(e.contains(&format!("{text:?}")) && e.contains("100mbit"), "{text}: {e}");
        }
        assert!(parse_rate("99999999999999gbit").unwrap_err().contains("too large"));
    }

    #[test]
    fn sizes_single_letters_and_iec_are_binary_si_is_decimal() {
        for (text, bytes) in [
            ("4096", 4096),
            ("64b", 64),
            ("4k", 4096),
            ("4K", 4096),
            ("64KiB", 65_536),
            ("1M", 1 << 20),
            ("1m", 1 << 20),
            ("1MiB", 1 << 20),
            ("4g", 4 << 30),
            ("1GiB", 1 << 30),
            ("64kb", 64_000),
            ("64kB", 64_000),
            ("1MB", 1_000_000),
            ("2GB", 2_000_000_000),
            ("1.5k", 1536),
            ("32 k", 32 * 1024),
            ("18446744073709551615", u64::MAX),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn sizes_where_the_old_parsers_disagreed() {
        // The library read `k` as 1024 and refused `kb`; the testbed's queue
        // read `k` as 1000. One rule now: the library's meaning of every
        // setting it accepted is kept.
        assert_eq!(parse_size("64k"), Ok(65_536));
        assert_eq!(parse_size("64kb"), Ok(64_000));
        for text in ["lots", "", "k", "4x", "4kbit", "-1", "1.5", "16777216t", "18446744073709551616", "17179869184g"] {
            let e = parse_size(text).unwrap_err();
            assert!(e.contains(&format!("{text:?}")), "{text}: {e}");
        }
        assert!(parse_size("4x").unwrap_err().contains("64KiB"));
    }

    #[test]
    fn durations() {
        let ms = Duration::from_millis;
        for (text, d) in [
            ("5ms", ms(5)),
            ("0.5ms", Duration::from_micros(500)),
            ("1.5ms", Duration::from_micros(1500)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("250μs", Duration::from_micros(250)),
            ("100ns", Duration::from_nanos(100)),
            ("2s", Duration::from_secs(2)),
            ("30S", Duration::from_secs(30)),
            ("10min", Duration::from_secs(600)),
            ("1.5h", Duration::from_secs(5400)),
            ("5 ms", ms(5)),
            ("0", Duration::ZERO),
        ] {
            assert_eq!(parse_duration(text, Bare::Refused), Ok(d), "{text}");
            assert_eq!(parse_duration(text, Bare::Micros), Ok(d), "{text}");
        }
    }

    #[test]
    fn a_bare_duration_is_refused_unless_the_name_carries_the_unit() {
        // The library read `5` as 5 us everywhere, the testbed refused it.
        let e = parse_duration("5", Bare::Refused).unwrap_err();
        assert!(e.contains("\"5\"") && e.contains("unit") && e.contains("5ms"), "{e}");
        assert_eq!(parse_duration("200", Bare::Micros), Ok(Duration::from_micros(200)));
        assert_eq!(parse_duration("1.5", Bare::Micros), Ok(Duration::from_nanos(1500)));
        for text in ["soon", "", "ms", "-1ms", "-1", "5m", "5 minutes", "99999999999s"] {
            let e = parse_duration(text, Bare::Micros).unwrap_err();
            assert!(e.contains(&format!("{text:?}")), "{text}: {e}");
        }
    }
}

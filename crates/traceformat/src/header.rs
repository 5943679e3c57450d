//! The HEADER record: who recorded the file and how, as `key=value` lines.

use crate::{FIELDS, VERSION};

/// What the first record says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub rank: u32,
    pub host: String,
    /// The rank's process id.
    pub pid: u32,
    /// When the trace started (wall clock), microseconds since 1970; every
    /// time in the file counts from here.
    pub start_unix_us: u64,
    /// Sampling interval while data moves, and while all is idle.
    pub interval_us: u64,
    pub idle_interval_us: u64,
    /// The kernel release (`uname -r`).
    pub kernel: String,
    /// Field names in the order of the SAMPLE mask bits.
    pub fields: Vec<String>,
}

impl Header {
    /// A header naming every field of [`FIELDS`], as the recorder writes it.
    pub fn with_all_fields() -> Header {
        Header { fields: FIELDS.iter().map(|f| f.name.to_string()).collect(), ..Header::default() }
    }

    /// The record's text. Line breaks in the host name and kernel release
    /// become spaces (they would end the line).
    pub fn to_text(&self) -> String {
        let line = |s: &str| s.replace(['\n', '\r'], " ");
        format!(
            "format={VERSION}\nrank={}\nhost={}\npid={}\nstart_unix_us={}\ninterval_us={}\nidle_interval_us={}\nkernel={}\nfields={}\n",
            self.rank,
            line(&self.host),
            self.pid,
            self.start_unix_us,
            self.interval_us,
            self.idle_interval_us,
            line(&self.kernel),
            self.fields.join(","),
        )
    }

    /// Read a header's text; a missing or malformed number reads as 0, a
    /// missing text as empty (older or foreign writers).
    pub fn from_text(text: &str) -> Header {
        let mut h = Header::default();
        for (key, value) in key_values(text) {
            let num = || value.parse::<u64>().unwrap_or(0);
            match key {
                "rank" => h.rank = num() as u32,
                "host" => h.host = value.to_string(),
                "pid" => h.pid = num() as u32,
                "start_unix_us" => h.start_unix_us = num(),
                "interval_us" => h.interval_us = num(),
                "idle_interval_us" => h.idle_interval_us = num(),
                "kernel" => h.kernel = value.to_string(),
                "fields" => h.fields = value.split(',').filter(|f| !f.is_empty()).map(String::from).collect(),
                _ => {}
            }
        }
        h
    }
}

/// The `key=value` lines of a HEADER or STATS record, trimmed; lines
/// without `=` are skipped.
pub fn key_values(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.trim(), v.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back() {
        let h = Header {
            rank: 3,
            host: "node\n7".into(),
            pid: 4242,
            start_unix_us: 1_700_000_000_000_000,
            interval_us: 1000,
            idle_interval_us: 100_000,
            kernel: "6.12.0".into(),
            fields: vec!["state".into(), "rtt".into()],
        };
        let text = h.to_text();
        assert!(text.starts_with("format=1\nrank=3\nhost=node 7\n"), "{text}");
        assert_eq!(Header::from_text(&text), Header { host: "node 7".into(), ..h });
        assert_eq!(Header::with_all_fields().fields.len(), crate::NFIELDS);
    }

    #[test]
    fn missing_keys_read_as_nothing() {
        let h = Header::from_text("rank=2\nfields=a,b\npid=x\nnoise\n");
        assert_eq!((h.rank, h.pid, h.fields.len(), h.host.as_str()), (2, 0, 2, ""));
        assert_eq!(key_values(" a = 1 \nb=\nc").collect::<Vec<_>>(), [("a", "1"), ("b", "")]);
    }
}

//! Ranks' stdout and stderr, reassembled into whole lines so that lines of
//! different ranks never interleave mid-line, optionally tagged `[rank] `.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use crate::link::Stream;

/// A partial line is written out after this long without its newline
/// (untagged output only: a prompt should show up).
pub const PARTIAL_LINE_DELAY: Duration = Duration::from_millis(100);
/// A line longer than this is written in pieces.
const MAX_LINE: usize = 64 * 1024;

struct Pending {
    bytes: Vec<u8>,
    since: Instant,
    /// The start of this line was already written (without newline).
    continued: bool,
}

pub struct Output<O: Write, E: Write> {
    tag: bool,
    out: O,
    err: E,
    pending: HashMap<(u32, Stream), Pending>,
    /// The last line given to [`Output::note`] (why a job failed).
    pub last_note: Option<String>,
    /// What notes begin with: `gridmpirun`, or for a job started by
    /// MPI_Comm_spawn `gridmpirun (spawned job)`.
    pub name: &'static str,
}

impl<O: Write, E: Write> Output<O, E> {
    pub fn new(tag: bool, out: O, err: E) -> Self {
        Output { tag, out, err, pending: HashMap::new(), last_note: None, name: "gridmpirun" }
    }

    /// Bytes a rank wrote.
    pub fn data(&mut self, rank: u32, stream: Stream, data: &[u8], now: Instant) {
        let tag = self.tag;
        let p = self
            .pending
            .entry((rank, stream))
            .or_insert_with(|| Pending { bytes: Vec::new(), since: now, continued: false });
        if p.bytes.is_empty() {
            p.since = now;
        }
        p.bytes.extend_from_slice(data);
        let mut block = Vec::new();
        // Every complete line.
        if let Some(last_nl) = p.bytes.iter().rposition(|&b| b == b'\n') {
            let lines: Vec<u8> = p.bytes.drain(..=last_nl).collect();
            for line in lines.split_inclusive(|&b| b == b'\n') {
                if tag && !p.continued {
                    block.extend_from_slice(format!("[{rank}] ").as_bytes());
                }
                p.continued = false;
                block.extend_from_slice(line);
            }
            p.since = now;
        }
        // An overlong line: write what we have.
        if p.bytes.len() > MAX_LINE {
            if tag && !p.continued {
                block.extend_from_slice(format!("[{rank}] ").as_bytes());
            }
            block.append(&mut p.bytes);
            p.continued = true;
        }
        self.write(stream, &block);
    }

    /// The rank closed the stream: write its last partial line.
    pub fn close(&mut self, rank: u32, stream: Stream) {
        if let Some(mut p) = self.pending.remove(&(rank, stream)) {
            if !p.bytes.is_empty() {
                let mut block = Vec::new();
                if self.tag && !p.continued {
                    block.extend_from_slice(format!("[{rank}] ").as_bytes());
                }
                block.append(&mut p.bytes);
                if self.tag {
                    block.push(b'\n');
                }
                self.write(stream, &block);
            }
        }
    }

    /// Untagged output: write partial lines that have waited long enough.
    pub fn flush_stale(&mut self, now: Instant) {
        if self.tag {
            return;
        }
        let mut blocks = Vec::new();
        for ((_, stream), p) in self.pending.iter_mut() {
            if !p.bytes.is_empty() && now.duration_since(p.since) >= PARTIAL_LINE_DELAY {
                blocks.push((*stream, std::mem::take(&mut p.bytes)));
                p.continued = true;
            }
        }
        for (stream, block) in blocks {
            self.write(stream, &block);
        }
    }

    /// When `flush_stale` next has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.tag {
            return None;
        }
        self.pending.values().filter(|p| !p.bytes.is_empty()).map(|p| p.since + PARTIAL_LINE_DELAY).min()
    }

    /// Write everything still pending (at the end of the job).
    pub fn finish(&mut self) {
        let keys: Vec<_> = self.pending.keys().copied().collect();
        for (rank, stream) in keys {
            self.close(rank, stream);
        }
        let _ = self.out.flush();
        let _ = self.err.flush();
    }

    /// A line of gridmpirun's own, on stderr, between whole lines.
    pub fn note(&mut self, text: &str) {
        self.last_note = Some(text.to_string());
        let _ = self.out.flush();
        let line = format!("{}: {text}\n", self.name);
        self.write(Stream::Stderr, line.as_bytes());
    }

    fn write(&mut self, stream: Stream, block: &[u8]) {
        if block.is_empty() {
            return;
        }
        let _ = match stream {
            Stream::Stdout => self.out.write_all(block).and_then(|_| self.out.flush()),
            Stream::Stderr => self.err.write_all(block).and_then(|_| self.err.flush()),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &[u8]) -> String {
        String::from_utf8_lossy(v).into_owned()
    }

    #[test]
    fn lines_are_whole_and_tagged() {
        let now = Instant::now();
        let mut o = Output::new(true, Vec::new(), Vec::new());
        o.data(0, Stream::Stdout, b"hel", now);
        o.data(1, Stream::Stdout, b"other line\nsecond ", now);
        o.data(0, Stream::Stdout, b"lo\nworld\n", now);
        o.data(1, Stream::Stderr, b"oops\n", now);
        o.close(1, Stream::Stdout);
        assert_eq!(text(&o.out), "[1] other line\n[0] hello\n[0] world\n[1] second \n");
        assert_eq!(text(&o.err), "[1] oops\n");
        // Tagged partial lines wait for their newline.
        o.data(2, Stream::Stdout, b"prompt> ", now);
        o.flush_stale(now + Duration::from_secs(1));
        assert!(!text(&o.out).contains("prompt"));
        o.finish();
        assert!(text(&o.out).ends_with("[2] prompt> \n"));
    }

    #[test]
    fn untagged_partial_lines_show_after_a_delay() {
        let now = Instant::now();
        let mut o = Output::new(false, Vec::new(), Vec::new());
        o.data(0, Stream::Stdout, b"Enter: ", now);
        assert_eq!(o.next_deadline(), Some(now + PARTIAL_LINE_DELAY));
        o.flush_stale(now + Duration::from_millis(10));
        assert_eq!(text(&o.out), "");
        o.flush_stale(now + PARTIAL_LINE_DELAY);
        assert_eq!(text(&o.out), "Enter: ");
        o.data(0, Stream::Stdout, b"42\n", now);
        assert_eq!(text(&o.out), "Enter: 42\n");
        assert_eq!(o.next_deadline(), None);
    }
}

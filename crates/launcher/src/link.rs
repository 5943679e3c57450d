//! The link between gridmpirun and a proxy on a remote host: binary frames
//! over the launch agent's stdin/stdout.
//!
//! The proxy first writes the line [`MAGIC`] (anything the remote shell
//! printed before it is skipped); after that both directions carry frames:
//! `u32` big-endian length of what follows, a `u8` kind, then the fields
//! (integers big-endian, byte strings as `u32` length + bytes).

use std::io::{self, Read, Write};

use crate::sys::ExitStatus;

// The number changes with the frames' format or meaning: a proxy of
// another version is then "never answered", not a garbled launch. (3: a
// Kill with the checkpoint signal is a request, not the job's end; 4: nor
// is one with the failure signal.)
pub const MAGIC: &[u8] = b"GRIDMPI-PROXY-LINK-4\n";
const MAX_FRAME: usize = 64 << 20;

/// A rank to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSpec {
    pub rank: u32,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Variables to set on top of the environment the rank inherits.
    pub env: Vec<(String, String)>,
    pub cwd: String,
    /// What to bind the rank to (`--bind-to`, by name: "none", "core"...);
    /// the host it runs on picks the CPUs.
    pub bind: String,
    /// Whether the rank's stdin comes from gridmpirun (rank 0) or /dev/null.
    pub stdin: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Launcher to proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Down {
    /// Start these ranks of a job of `size` ranks.
    Launch { size: u32, ranks: Vec<RankSpec>, kill_grace_ms: u64 },
    Pmi { rank: u32, data: Vec<u8> },
    Stdin { data: Vec<u8> },
    StdinClose,
    /// Signal every rank of this host (process groups). Any signal but
    /// the checkpoint request (`gridmpi_pmi::checkpoint_signal`) and the
    /// failure notice of a fault-tolerant job (`gridmpi_pmi::failure_signal`)
    /// ends the job: the proxy kills what is left after the grace period.
    Kill { signal: i32 },
}

/// Proxy (or local spawner) to launcher: what happened to a rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Up {
    Hello { hostname: String },
    /// `cpus`: the CPU list it is bound to (`0-1,4`), empty if unbound.
    Started { rank: u32, pid: u32, cpus: String },
    SpawnFailed { rank: u32, error: String },
    Pmi { rank: u32, data: Vec<u8> },
    PmiClosed { rank: u32 },
    Output { rank: u32, stream: Stream, data: Vec<u8> },
    OutputClosed { rank: u32, stream: Stream },
    Exited { rank: u32, status: ExitStatus },
}

struct Enc(Vec<u8>);
impl Enc {
    fn new(kind: u8) -> Enc {
        Enc(vec![0, 0, 0, 0, kind])
    }
    fn u32(mut self, v: u32) -> Enc {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Enc {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn bytes(self, b: &[u8]) -> Enc {
        let mut e = self.u32(b.len() as u32);
        e.0.extend_from_slice(b);
        e
    }
    fn str(self, s: &str) -> Enc {
        self.bytes(s.as_bytes())
    }
    fn finish(mut self) -> Vec<u8> {
        let len = (self.0.len() - 4) as u32;
        self.0[..4].copy_from_slice(&len.to_be_bytes());
        self.0
    }
}

struct Dec<'a>(&'a [u8]);
impl<'a> Dec<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(bad("truncated frame"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn bytes(&mut self) -> io::Result<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn str(&mut self) -> io::Result<String> {
        String::from_utf8(self.bytes()?).map_err(|_| bad("string is not UTF-8"))
    }
    /// A yes/no written as a `u32` 0 or 1.
    fn flag(&mut self) -> io::Result<bool> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(bad("a flag that is neither 0 nor 1")),
        }
    }
    /// The frame must have been read to its end: one value, one encoding.
    fn end<T>(&self, value: T) -> io::Result<T> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(bad("bytes left over after the frame's fields"))
        }
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("proxy link: {what}"))
}

fn stream_code(s: Stream) -> u32 {
    match s {
        Stream::Stdout => 1,
        Stream::Stderr => 2,
    }
}

fn stream_from(c: u32) -> io::Result<Stream> {
    match c {
        1 => Ok(Stream::Stdout),
        2 => Ok(Stream::Stderr),
        _ => Err(bad("bad stream")),
    }
}

impl Down {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Down::Launch { size, ranks, kill_grace_ms } => {
                let mut e = Enc::new(1).u32(*size).u64(*kill_grace_ms).u32(ranks.len() as u32);
                for r in ranks {
                    e = e.u32(r.rank).str(&r.cwd).str(&r.bind).u32(r.stdin as u32).u32(r.argv.len() as u32);
                    for a in &r.argv {
                        e = e.str(a);
                    }
                    e = e.u32(r.env.len() as u32);
                    for (k, v) in &r.env {
                        e = e.str(k).str(v);
                    }
                }
                e.finish()
            }
            Down::Pmi { rank, data } => Enc::new(2).u32(*rank).bytes(data).finish(),
            Down::Stdin { data } => Enc::new(3).bytes(data).finish(),
            Down::StdinClose => Enc::new(4).finish(),
            Down::Kill { signal } => Enc::new(5).u32(*signal as u32).finish(),
        }
    }

    fn decode(frame: &[u8]) -> io::Result<Down> {
        let mut d = Dec(frame);
        let down = match d.u8()? {
            1 => {
                let size = d.u32()?;
                let kill_grace_ms = d.u64()?;
                let n = d.u32()?;
                let mut ranks = Vec::new();
                for _ in 0..n {
                    let rank = d.u32()?;
                    let cwd = d.str()?;
                    let bind = d.str()?;
                    let stdin = d.flag()?;
                    let argc = d.u32()?;
                    let argv = (0..argc).map(|_| d.str()).collect::<io::Result<_>>()?;
                    let envc = d.u32()?;
                    let env = (0..envc).map(|_| Ok((d.str()?, d.str()?))).collect::<io::Result<_>>()?;
                    ranks.push(RankSpec { rank, argv, env, cwd, bind, stdin });
                }
                Down::Launch { size, ranks, kill_grace_ms }
            }
            2 => Down::Pmi { rank: d.u32()?, data: d.bytes()? },
            3 => Down::Stdin { data: d.bytes()? },
            4 => Down::StdinClose,
            5 => Down::Kill { signal: d.u32()? as i32 },
            _ => return Err(bad("unknown frame kind")),
        };
        d.end(down)
    }
}

impl Up {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Up::Hello { hostname } => Enc::new(1).str(hostname).finish(),
            Up::Started { rank, pid, cpus } => Enc::new(2).u32(*rank).u32(*pid).str(cpus).finish(),
            Up::SpawnFailed { rank, error } => Enc::new(3).u32(*rank).str(error).finish(),
            Up::Pmi { rank, data } => Enc::new(4).u32(*rank).bytes(data).finish(),
            Up::PmiClosed { rank } => Enc::new(5).u32(*rank).finish(),
            Up::Output { rank, stream, data } => Enc::new(6).u32(*rank).u32(stream_code(*stream)).bytes(data).finish(),
            Up::OutputClosed { rank, stream } => Enc::new(7).u32(*rank).u32(stream_code(*stream)).finish(),
            Up::Exited { rank, status } => {
                let (kind, v) = match status {
                    ExitStatus::Code(c) => (0, *c),
                    ExitStatus::Signal(s) => (1, *s),
                };
                Enc::new(8).u32(*rank).u32(kind).u32(v as u32).finish()
            }
        }
    }

    fn decode(frame: &[u8]) -> io::Result<Up> {
        let mut d = Dec(frame);
        let up = match d.u8()? {
            1 => Up::Hello { hostname: d.str()? },
            2 => Up::Started { rank: d.u32()?, pid: d.u32()?, cpus: d.str()? },
            3 => Up::SpawnFailed { rank: d.u32()?, error: d.str()? },
            4 => Up::Pmi { rank: d.u32()?, data: d.bytes()? },
            5 => Up::PmiClosed { rank: d.u32()? },
            6 => Up::Output { rank: d.u32()?, stream: stream_from(d.u32()?)?, data: d.bytes()? },
            7 => Up::OutputClosed { rank: d.u32()?, stream: stream_from(d.u32()?)? },
            8 => {
                let rank = d.u32()?;
                let signaled = d.flag()?;
                let v = d.u32()? as i32;
                let status = if signaled { ExitStatus::Signal(v) } else { ExitStatus::Code(v) };
                Up::Exited { rank, status }
            }
            _ => return Err(bad("unknown frame kind")),
        };
        d.end(up)
    }
}

/// Read one frame; `Ok(None)` at a clean end of stream.
fn read_frame(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(bad("bad frame length"));
    }
    // Grow with what arrives: a corrupt length must not cost its size in memory.
    let mut frame = Vec::new();
    r.take(len as u64).read_to_end(&mut frame)?;
    if frame.len() < len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "proxy link: the stream ended inside a frame"));
    }
    Ok(Some(frame))
}

pub fn read_down(r: &mut impl Read) -> io::Result<Option<Down>> {
    read_frame(r)?.map(|f| Down::decode(&f)).transpose()
}

pub fn read_up(r: &mut impl Read) -> io::Result<Option<Up>> {
    read_frame(r)?.map(|f| Up::decode(&f)).transpose()
}

/// Skip whatever precedes [`MAGIC`] (shell banners), returning it.
pub fn skip_to_magic(r: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut seen = Vec::new();
    let mut b = [0u8; 1];
    loop {
        if r.read(&mut b)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the remote gridmpirun never answered{}",
                    if seen.is_empty() { String::new() } else { format!(" (it said: {:?})", String::from_utf8_lossy(&seen).trim()) }
                ),
            ));
        }
        seen.push(b[0]);
        if seen.ends_with(MAGIC) {
            seen.truncate(seen.len() - MAGIC.len());
            return Ok(seen);
        }
        if seen.len() > 1 << 20 {
            return Err(bad("no link greeting in the first megabyte"));
        }
    }
}

pub fn write_all(w: &mut impl Write, frame: &[u8]) -> io::Result<()> {
    w.write_all(frame)?;
    w.flush()
}

/// Fuzz targets (run by `fuzz/`, which compiles this file into itself, and
/// briefly by `make fuzz-smoke`). Dead code in gridmpirun itself.
#[doc(hidden)]
#[allow(dead_code)]
pub mod fuzzing {
    use super::*;

    /// Bytes read as frames of either direction: every frame either decodes
    /// to a value whose encoding is exactly the bytes it came from, or is an
    /// error (never a panic, never an allocation larger than what arrived).
    /// Byte 0 chooses: bit 0 the direction (1: up), bit 1 a greeting to skip
    /// first, bit 2 a value built from the bytes instead (which must survive
    /// an encode and decode unchanged).
    pub fn link(data: &[u8]) {
        let Some((&mode, rest)) = data.split_first() else { return };
        if mode & 4 != 0 {
            return round_trip(mode & 1 != 0, rest);
        }
        let mut r = rest;
        if mode & 2 != 0 {
            let before = r.len();
            match skip_to_magic(&mut r) {
                Ok(banner) => assert_eq!(&rest[..before - r.len()], &[&banner[..], MAGIC].concat()[..]),
                Err(_) => return,
            }
        }
        loop {
            let before = r;
            let (got, again) = if mode & 1 != 0 {
                match read_up(&mut r) {
                    Ok(Some(u)) => (Some(u.encode()), Up::decode(&u.encode()[4..]).ok() == Some(u)),
                    Ok(None) => (None, true),
                    Err(_) => return,
                }
            } else {
                match read_down(&mut r) {
                    Ok(Some(d)) => (Some(d.encode()), Down::decode(&d.encode()[4..]).ok() == Some(d)),
                    Ok(None) => (None, true),
                    Err(_) => return,
                }
            };
            assert!(again, "a decoded frame does not decode again from its encoding");
            let Some(encoded) = got else { return };
            let took = &before[..before.len() - r.len()];
            assert_eq!(encoded, took, "a frame decoded from bytes that are not its encoding");
        }
    }

    /// Reads fuzz bytes as numbers and strings (0 or empty when they run out).
    struct Source<'a>(&'a [u8]);

    impl Source<'_> {
        fn u8(&mut self) -> u8 {
            let Some((&b, rest)) = self.0.split_first() else { return 0 };
            self.0 = rest;
            b
        }
        fn u32(&mut self) -> u32 {
            u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
        }
        fn bytes(&mut self) -> Vec<u8> {
            let n = (self.u8() as usize).min(self.0.len());
            let (a, b) = self.0.split_at(n);
            self.0 = b;
            a.to_vec()
        }
        fn string(&mut self) -> String {
            String::from_utf8_lossy(&self.bytes()).into_owned()
        }
    }

    fn round_trip(up: bool, data: &[u8]) {
        let mut s = Source(data);
        let stream = |s: &mut Source| if s.u8() & 1 == 0 { Stream::Stdout } else { Stream::Stderr };
        let mut bytes = Vec::new();
        if up {
            let u = match s.u8() % 8 {
                0 => Up::Hello { hostname: s.string() },
                1 => Up::Started { rank: s.u32(), pid: s.u32(), cpus: s.string() },
                2 => Up::SpawnFailed { rank: s.u32(), error: s.string() },
                3 => Up::Pmi { rank: s.u32(), data: s.bytes() },
                4 => Up::PmiClosed { rank: s.u32() },
                5 => Up::Output { rank: s.u32(), stream: stream(&mut s), data: s.bytes() },
                6 => Up::OutputClosed { rank: s.u32(), stream: stream(&mut s) },
                _ => {
                    let rank = s.u32();
                    let v = s.u32() as i32;
                    Up::Exited { rank, status: if s.u8() & 1 == 0 { ExitStatus::Code(v) } else { ExitStatus::Signal(v) } }
                }
            };
            bytes.extend(u.encode());
            assert_eq!(read_up(&mut &bytes[..]).expect("a frame we encoded decodes"), Some(u));
        } else {
            let d = match s.u8() % 5 {
                0 => {
                    let (size, kill_grace_ms) = (s.u32(), s.u32() as u64 * 1000);
                    let ranks = (0..s.u8() % 4)
                        .map(|_| RankSpec {
                            rank: s.u32(),
                            cwd: s.string(),
                            bind: s.string(),
                            stdin: s.u8() & 1 != 0,
                            argv: (0..s.u8() % 4).map(|_| s.string()).collect(),
                            env: (0..s.u8() % 4).map(|_| (s.string(), s.string())).collect(),
                        })
                        .collect();
                    Down::Launch { size, ranks, kill_grace_ms }
                }
                1 => Down::Pmi { rank: s.u32(), data: s.bytes() },
                2 => Down::Stdin { data: s.bytes() },
                3 => Down::StdinClose,
                _ => Down::Kill { signal: s.u32() as i32 },
            };
            bytes.extend(d.encode());
            assert_eq!(read_down(&mut &bytes[..]).expect("a frame we encoded decodes"), Some(d));
        }
    }

    /// Inputs to start from: every frame of both directions, and a greeting.
    pub fn seeds() -> Vec<Vec<u8>> {
        let downs = [
            Down::Launch {
                size: 8,
                kill_grace_ms: 3000,
                ranks: vec![RankSpec {
                    rank: 3,
                    argv: vec!["./a.out".into(), "x y".into()],
                    env: vec![("GRIDMPI_X".into(), "1".into())],
                    cwd: "/tmp".into(),
                    bind: "core".into(),
                    stdin: true,
                }],
            },
            Down::Pmi { rank: 1, data: b"cmd=barrier_out\n".to_vec() },
            Down::Stdin { data: vec![0, 1, 2] },
            Down::StdinClose,
            Down::Kill { signal: 15 },
        ];
        let ups = [
            Up::Hello { hostname: "h1".into() },
            Up::Started { rank: 2, pid: 99, cpus: "0-1,4".into() },
            Up::SpawnFailed { rank: 2, error: "nope".into() },
            Up::Pmi { rank: 2, data: b"cmd=init\n".to_vec() },
            Up::PmiClosed { rank: 2 },
            Up::Output { rank: 2, stream: Stream::Stderr, data: b"hi\n".to_vec() },
            Up::OutputClosed { rank: 2, stream: Stream::Stdout },
            Up::Exited { rank: 2, status: ExitStatus::Signal(11) },
            Up::Exited { rank: 2, status: ExitStatus::Code(3) },
        ];
        vec![
            [&[0u8][..], &downs.iter().flat_map(|d| d.encode()).collect::<Vec<_>>()].concat(),
            [&[1u8][..], &ups.iter().flat_map(|u| u.encode()).collect::<Vec<_>>()].concat(),
            [&[3u8][..], b"Welcome!\n", MAGIC, &ups[0].encode()].concat(),
            vec![4, 0, 1, 2, 3, 4, 5, 6, 7, 8, 2, b'a', b'b', 1, 1, 1, b'x'],
            vec![5, 7, 1, 0, 0, 0, 255, 255, 255, 255, 1],
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let downs = vec![
            Down::Launch {
                ranks: vec![RankSpec {
                    rank: 3,
                    argv: vec!["./a.out".into(), "x y".into()],
                    env: vec![("GRIDMPI_X".into(), "1".into())],
                    cwd: "/tmp".into(),
                    bind: "core".into(),
                    stdin: true,
                }],
                kill_grace_ms: 3000,
                size: 8,
            },
            Down::Pmi { rank: 1, data: b"cmd=barrier_out\n".to_vec() },
            Down::Stdin { data: vec![0, 1, 2] },
            Down::StdinClose,
            Down::Kill { signal: 15 },
        ];
        let mut bytes = Vec::new();
        for d in &downs {
            bytes.extend(d.encode());
        }
        let mut r = &bytes[..];
        let mut got = Vec::new();
        while let Some(d) = read_down(&mut r).unwrap() {
            got.push(d);
        }
        assert_eq!(got, downs);

        let ups = vec![
            Up::Hello { hostname: "h1".into() },
            Up::Started { rank: 2, pid: 99, cpus: "0-1,4".into() },
            Up::SpawnFailed { rank: 2, error: "nope".into() },
            Up::Pmi { rank: 2, data: b"cmd=init\n".to_vec() },
            Up::PmiClosed { rank: 2 },
            Up::Output { rank: 2, stream: Stream::Stderr, data: b"hi\n".to_vec() },
            Up::OutputClosed { rank: 2, stream: Stream::Stdout },
            Up::Exited { rank: 2, status: ExitStatus::Signal(11) },
            Up::Exited { rank: 2, status: ExitStatus::Code(3) },
        ];
        let mut bytes = b"Welcome to host h1!\n".to_vec();
        bytes.extend_from_slice(MAGIC);
        for u in &ups {
            bytes.extend(u.encode());
        }
        let mut r = &bytes[..];
        assert_eq!(skip_to_magic(&mut r).unwrap(), b"Welcome to host h1!\n");
        let mut got = Vec::new();
        while let Some(u) = read_up(&mut r).unwrap() {
            got.push(u);
        }
        assert_eq!(got, ups);
    }

    /// Found by fuzzing: a frame has exactly one encoding. Bytes past its
    /// fields, a flag other than 0 or 1, an exit status of a third kind
    /// were accepted (and re-encoded differently).
    #[test]
    fn frames_have_one_encoding() {
        let mut frame = Up::PmiClosed { rank: 2 }.encode();
        frame.push(0);
        frame[3] += 1;
        assert!(read_up(&mut &frame[..]).unwrap_err().to_string().contains("left over"));
        let mut frame = Up::Exited { rank: 2, status: ExitStatus::Signal(9) }.encode();
        frame[12] = 2; // the status kind
        assert!(read_up(&mut &frame[..]).is_err());
        let launch = Down::Launch {
            size: 1,
            kill_grace_ms: 0,
            ranks: vec![RankSpec { rank: 0, argv: vec![], env: vec![], cwd: String::new(), bind: String::new(), stdin: true }],
        };
        let mut frame = launch.encode();
        let at = frame.len() - 9; // stdin, then argc and envc
        assert_eq!(frame[at], 1);
        frame[at] = 2;
        assert!(read_down(&mut &frame[..]).is_err());
    }

    #[test]
    fn the_fuzz_target_holds_on_its_seeds() {
        for s in fuzzing::seeds() {
            fuzzing::link(&s);
        }
    }

    #[test]
    fn bad_frames_are_errors() {
        let mut r = &[0u8, 0, 0, 1, 99][..];
        assert!(read_up(&mut r).is_err());
        let mut r = &[0u8, 0, 0, 9, 4][..];
        assert!(read_up(&mut r).is_err());
        // A length far past the end: an error, without allocating it.
        let mut r = &[0x03u8, 0xff, 0xff, 0xff, 4, 0, 0][..];
        assert_eq!(read_up(&mut r).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        let mut r = &b"no magic here"[..];
        assert!(skip_to_magic(&mut r).unwrap_err().to_string().contains("no magic here"));
    }
}

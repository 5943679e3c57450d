//! Fuzz targets (run by `fuzz/`, and briefly by `make fuzz-smoke`): plain
//! functions that panic only when a property of the PMI codecs or server
//! breaks.

use crate::server::{Event, JobInfo, Server};
use crate::wire::{parse_v1, parse_v1_multi, parse_v2, Decoder, Message, Wire, MAX_MESSAGE};

/// The PMI target: byte 0 picks one of [`decoder`], [`parsers`],
/// [`round_trip`], [`server`] and [`rendezvous_lines`], which gets the rest.
pub fn pmi(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else { return };
    match which % 5 {
        0 => decoder(rest),
        1 => parsers(rest),
        2 => round_trip(rest),
        3 => server(rest),
        _ => rendezvous_lines(rest),
    }
}

/// What a stranger may send a rendezvous server, a relay or a rank: any
/// bytes are an error or, for a line made with the secret, exactly what
/// was sent.
pub fn rendezvous_lines(data: &[u8]) {
    use crate::rendezvous::{parse_greeting, Join, Placed};
    let (secret, nonce) = ([0x11u8; 32], [0x22u8; 32]);
    let key = gridmpi_relay::relay_key(&secret);
    if let Ok(p) = gridmpi_relay::Preface::parse(data, &key) {
        let line = p.line(&key);
        assert_eq!(gridmpi_relay::Preface::parse(&line[..line.len() - 1], &key).as_ref(), Ok(&p));
    }
    let text = String::from_utf8_lossy(data);
    let _ = parse_greeting(&text);
    let _ = Placed::parse(&text, &secret, &nonce, &nonce);
    if let Ok(j) = Join::parse(&text, &secret, &nonce) {
        // Only a line carrying the right MAC parses: it must say again
        // exactly what it said.
        assert_eq!(Join::parse(&j.line(&secret, &nonce), &secret, &nonce).as_ref(), Ok(&j));
    }
    // Lines built from fuzz fields round-trip.
    let mut c = Cursor(data);
    let name: String = c.take(8).iter().map(|&b| (b'a' + b % 26) as char).collect();
    let size = u32::from(c.byte()) + 1;
    let j = Join { group: "00ff".into(), name, size, rank: u32::from(c.byte()) % size, nonce };
    assert_eq!(Join::parse(&j.line(&secret, &nonce), &secret, &nonce), Ok(j));
}

/// Reads fuzz bytes as small numbers and strings.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else { return 0 };
        self.0 = rest;
        b
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A byte stream split into messages, fed in pieces of any size: a bad
/// stream is an error, never a panic; the decoder never holds more than a
/// message's worth; every message it yields comes out again the same after
/// being encoded and decoded once more (a decoded message is in the form the
/// encoder writes).
pub fn decoder(data: &[u8]) {
    let mut c = Cursor(data);
    let piece = c.byte() as usize + 1;
    let stream = c.0;
    let mut d = Decoder::new();
    let mut got = Vec::new();
    'feed: for chunk in stream.chunks(piece) {
        d.push(chunk);
        loop {
            match d.next_message() {
                Ok(Some(m)) => got.push(m),
                Ok(None) => break,
                Err(e) => {
                    assert!(!e.0.is_empty());
                    break 'feed;
                }
            }
        }
        assert!(d.pending() <= MAX_MESSAGE + 6 + piece, "the decoder holds {} bytes", d.pending());
    }
    for m in got {
        assert!(!m.cmd.is_empty());
        // Only a PMI-2 message near the length limit may fail to encode
        // (a bare field gains its `=`).
        let encoded = |m: &Message| match m.encode() {
            Ok(b) => Some(b),
            Err(e) => {
                assert!(m.wire == Wire::V2 && e.0.contains("too long"), "{m:?} decoded but has no encoding: {e}");
                None
            }
        };
        let Some(bytes) = encoded(&m) else { continue };
        let again = decode_one(&bytes).unwrap_or_else(|e| panic!("{m:?} encodes to bytes that do not decode: {e}"));
        let Some(bytes) = encoded(&again) else { continue };
        let third = decode_one(&bytes).unwrap_or_else(|e| panic!("{again:?} encodes to bytes that do not decode: {e}"));
        assert_eq!(again, third, "re-encoding {m:?} does not settle");
    }
}

/// Exactly one whole message from `bytes`.
fn decode_one(bytes: &[u8]) -> Result<Message, String> {
    let mut d = Decoder::new();
    d.push(bytes);
    let m = d.next_message().map_err(|e| e.to_string())?.ok_or("an incomplete message")?;
    if d.pending() != 0 {
        return Err(format!("{} bytes left after the message", d.pending()));
    }
    Ok(m)
}

/// The three line parsers on any text: an error or a message with a command.
pub fn parsers(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for parsed in [parse_v1(&text), parse_v1_multi(&text), parse_v2(&text)] {
        match parsed {
            Ok(m) => assert!(!m.cmd.is_empty()),
            Err(e) => assert!(!e.0.is_empty()),
        }
    }
}

/// A message built from fuzz bytes, in a wire format that can carry it
/// (keys and commands as PMI clients write them, values anything the
/// format does not change: PMI-1 lines cannot carry a newline, PMI-2 trims
/// the ends of a field), must come out of its encoding unchanged.
pub fn round_trip(data: &[u8]) {
    let mut c = Cursor(data);
    let wire = match c.byte() % 3 {
        0 => Wire::V1,
        1 => Wire::V1Multi,
        _ => Wire::V2,
    };
    let word = |c: &mut Cursor| -> String {
        let n = c.byte() as usize % 12 + 1;
        let w: String = c.take(n).iter().map(|&b| b"abcdefghijklmnopqrstuvwxyz0123456789_-/."[b as usize % 40] as char).collect();
        if w.is_empty() {
            "x".to_string() // the input ran out; a command is never empty
        } else {
            w
        }
    };
    let cmd = word(&mut c);
    let mut m = Message::new(wire, &cmd);
    while !c.is_empty() {
        let key = word(&mut c);
        // (Values near the length limits, a million bytes, make every input
        // slow: wire.rs tests that boundary itself.)
        let n = c.byte() as usize % 64;
        let value = String::from_utf8_lossy(c.take(n)).into_owned();
        let value = match wire {
            Wire::V1 | Wire::V1Multi => value.replace(['\n', '\r'], "~"),
            Wire::V2 => value.trim_matches(['\n', '\r', ' ']).to_string(),
        };
        // The rest of an abort's PMI-1 line is its message: keep it last.
        if wire == Wire::V1 && cmd == "abort" && (key == "message" || key == "msg") {
            continue;
        }
        // The multi-line form names its command with this key.
        if wire == Wire::V1Multi && key == "mcmd" {
            continue;
        }
        m = m.with(&key, value);
    }
    let bytes = match m.encode() {
        Ok(b) => b,
        Err(e) => {
            // Only a PMI-2 body past its length field has no encoding.
            assert!(wire == Wire::V2 && e.0.contains("too long"), "{e}");
            return;
        }
    };
    if bytes.len() > MAX_MESSAGE {
        return; // too long for any reader; the client splits long values
    }
    match decode_one(&bytes) {
        Ok(back) => assert_eq!(back, m, "a message changed on its way through the codec"),
        Err(e) => panic!("{m:?} encodes to bytes that do not decode: {e}"),
    }
}

/// A job's PMI server fed arbitrary bytes by its ranks, with connections
/// closing now and then: it never panics, and everything it asks the
/// launcher to write is well-formed PMI.
pub fn server(data: &[u8]) {
    let info = JobInfo {
        size: 4,
        kvsname: "kvs_fuzz".into(),
        appnum_of_rank: Vec::new(),
        universe_size: 4,
        node_of_rank: vec![0, 0, 1, 1],
    };
    let mut s = Server::new(info);
    s.enable_checkpoints();
    let mut c = Cursor(data);
    let mut spawns: Vec<u32> = Vec::new();
    let mut seq = 0;
    while !c.is_empty() {
        let op = c.byte();
        let rank = (op % 5) as u32; // 4 is no rank of the job
        if op >> 3 == 31 {
            s.disconnected(rank);
        } else if op >> 3 == 30 {
            // The launcher starts a checkpoint round, or gives one up.
            seq += 1;
            if s.checkpoint_start(seq).is_err() {
                s.checkpoint_abort("the launcher gave up");
            }
        } else {
            let n = c.byte() as usize;
            s.receive(rank, c.take(n));
        }
        while let Some(ev) = s.poll_event() {
            check_event(&ev);
            // The launcher answers a spawn, now or (here) with the next
            // record: started, or why not.
            if let Event::Spawn { rank, apps, .. } = &ev {
                assert!(!apps.is_empty() && apps.iter().all(|a| !a.command.is_empty() && a.maxprocs > 0));
                spawns.push(*rank);
            }
            // The launcher records a written checkpoint, or cannot.
            if let Event::CheckpointWritten { images, .. } = &ev {
                assert_eq!(images.iter().map(|i| i.rank).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
                match op & 3 {
                    0 => s.checkpoint_abort("the manifest could not be written"),
                    k => s.checkpoint_finish(k == 1),
                }
            }
        }
        if let Some(rank) = spawns.pop() {
            let result = if op & 4 == 0 { Ok(()) } else { Err(format!("no\nsuch program {op}")) };
            s.spawn_done(rank, result);
            s.spawn_done(rank, Ok(())); // a second answer is ignored
        }
    }
}

fn check_event(ev: &Event) {
    match ev {
        Event::Reply { rank, bytes } => {
            assert!(*rank < 4, "a reply to rank {rank}");
            // A reply may hold several messages (initack); all must decode.
            let mut d = Decoder::new();
            d.push(bytes);
            let mut n = 0;
            loop {
                match d.next_message() {
                    Ok(Some(_)) => n += 1,
                    Ok(None) => break,
                    Err(e) => panic!("the server wrote {:?}, which is not PMI: {e}", String::from_utf8_lossy(bytes)),
                }
            }
            assert!(n > 0 && d.pending() == 0, "the server wrote an incomplete message: {:?}", String::from_utf8_lossy(bytes));
        }
        Event::Initialized { rank, .. }
        | Event::Finalized { rank }
        | Event::Abort { rank, .. }
        | Event::ProtocolError { rank, .. }
        | Event::Unsupported { rank, .. }
        | Event::Spawn { rank, .. }
        | Event::Outage { rank, .. } => assert!(*rank < 4),
        Event::CheckpointFrozen { .. } | Event::CheckpointWritten { .. } | Event::CheckpointAbandoned { .. } => {}
    }
}

/// Inputs to start from: real sessions of both protocol versions.
pub fn seeds() -> Vec<Vec<u8>> {
    let v1 = b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_maxes\ncmd=put kvsname=kvs_fuzz key=card value=tcp:10.0.0.1:4000\ncmd=barrier_in\ncmd=gridmpi_outage from=a to=b state=down secs=7 budget=900\ncmd=get kvsname=kvs_fuzz key=card\ncmd=abort exitcode=3 message=it broke\ncmd=finalize\n".to_vec();
    let mut v2 = b"cmd=init pmi_version=2 pmi_subversion=0\n".to_vec();
    for m in [
        Message::new(Wire::V2, "fullinit").with("pmirank", 1),
        Message::new(Wire::V2, "kvs-put").with("key", "k").with("value", "a;b"),
        Message::new(Wire::V2, "kvs-fence").with("thrid", "0x1"),
        Message::new(Wire::V2, "info-getnodeattr").with("key", "shm").with("wait", "TRUE"),
        Message::new(Wire::V2, "info-putnodeattr").with("key", "shm").with("value", "/dev/shm/x"),
        Message::new(Wire::V2, "finalize"),
    ] {
        v2.extend(m.encode().expect("a short message"));
    }
    let multi = b"mcmd=spawn\nnprocs=2\nexecname=a.out\nendcmd\n".to_vec();
    // MPI_Comm_spawn_multiple of two programs, in both wire forms.
    let apps = [
        crate::SpawnApp { command: "./child".into(), args: vec!["a b".into(), "".into()], maxprocs: 2, info: vec![("wdir".into(), "/tmp".into())] },
        crate::SpawnApp { command: "other".into(), args: Vec::new(), maxprocs: 1, info: vec![("host".into(), "h1,h2".into()), ("path".into(), "/bin".into())] },
    ];
    let env = [("GRIDMPI_PARENT_PORT".to_string(), "tag#0$description#x;y".to_string())];
    let mut spawn_v1 = b"cmd=init pmi_version=1 pmi_subversion=1\n".to_vec();
    for m in crate::spawn::encode_v1(&apps, &env) {
        spawn_v1.extend(m.encode().expect("a short message"));
    }
    let mut spawn_v2 = b"cmd=init pmi_version=2 pmi_subversion=0\n".to_vec();
    spawn_v2.extend(crate::spawn::encode_v2(&apps, &env).with("thrid", "0x7").encode().expect("a short message"));
    spawn_v2.extend(Message::new(Wire::V2, "name-publish").with("name", "svc").with("port", "p").encode().expect("a short message"));
    let mut seeds = Vec::new();
    for s in [&v1, &v2, &multi, &spawn_v1, &spawn_v2] {
        // decoder (first byte: piece size) and parsers: the stream itself.
        seeds.push([&[0u8, 7][..], s].concat());
        seeds.push([&[1u8][..], s].concat());
        // server: records of (rank, length, bytes).
        let mut rec = vec![3u8];
        for (i, piece) in s.chunks(40).enumerate() {
            rec.extend([(i % 4) as u8, piece.len() as u8]);
            rec.extend(piece);
        }
        seeds.push(rec);
    }
    // server: a spawn request whole from rank 0, answered Ok (op 0) or
    // with an error (op 5, also rank 0).
    for s in [&spawn_v1, &spawn_v2] {
        for op in [0u8, 5] {
            let mut rec = vec![3u8];
            for piece in s.chunks(200) {
                rec.extend([op, piece.len() as u8]);
                rec.extend(piece);
            }
            seeds.push(rec);
        }
    }
    // server: a checkpoint round (op 240 starts it), every rank frozen,
    // then every image written.
    let mut rec = vec![3u8, 240];
    for cmd in ["cmd=gridmpi_ckpt_frozen ok=1\n", "cmd=gridmpi_ckpt_written ok=1 bytes=4096 ms=3 host=h path=/c/ckpt-1/r.img\n"] {
        for rank in 0..4u8 {
            rec.extend([rank, cmd.len() as u8]);
            rec.extend(cmd.as_bytes());
        }
    }
    seeds.push(rec);
    // round_trip: wire, command, then (key, value) pairs.
    for wire in 0..3u8 {
        seeds.push([&[2u8, wire][..], b"\x03put\x0avalue with spaces\x04keyz\x03a;b"].concat());
    }
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_targets_hold_on_their_seeds() {
        for s in seeds() {
            pmi(&s);
        }
    }
}

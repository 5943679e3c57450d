//! Packet capture on a WAN link, written as pcapng (read by tshark,
//! Wireshark, tcpdump >= 4.x).
//!
//! Each captured direction and point is one pcapng interface, named like
//! `c0>c1:out` (packets as they are released at the far end) or `c0>c1:in`
//! (packets as they reach the link, each one that the link then drops
//! carrying a comment: "dropped: queue full", "lost: random loss",
//! "dropped: link cut"). Packets are raw IPv4 (LINKTYPE_RAW) cut to the snap
//! length; timestamps are wall-clock nanoseconds.

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::Receiver;

pub struct CaptureMsg {
    pub iface: u32,
    pub ts_mono_ns: u64,
    pub orig_len: u32,
    pub data: Vec<u8>,
    pub comment: Option<&'static str>,
}

const LINKTYPE_RAW: u16 = 101;

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

struct Block {
    body: Vec<u8>,
}

impl Block {
    fn new() -> Block {
        Block { body: Vec::new() }
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.body.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.body.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes_padded(&mut self, b: &[u8]) -> &mut Self {
        self.body.extend_from_slice(b);
        self.body.resize(pad4(self.body.len()), 0);
        self
    }
    fn option(&mut self, code: u16, value: &[u8]) -> &mut Self {
        self.u16(code).u16(value.len() as u16).bytes_padded(value)
    }
    fn end_options(&mut self) -> &mut Self {
        self.u16(0).u16(0)
    }
    fn write(&self, block_type: u32, out: &mut impl Write) -> io::Result<()> {
        let total = (12 + self.body.len()) as u32;
        out.write_all(&block_type.to_le_bytes())?;
        out.write_all(&total.to_le_bytes())?;
        out.write_all(&self.body)?;
        out.write_all(&total.to_le_bytes())
    }
}

/// Writer thread body: write the header, then every packet until all
/// senders are gone. Returns the number of packets written.
pub fn write_pcapng(path: &Path, ifaces: &[String], snaplen: u32, mono_to_real_ns: i128, rx: Receiver<CaptureMsg>) -> io::Result<u64> {
    let file = std::fs::File::create(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    // Section header: byte-order magic, version 1.0, section length unknown.
    let mut shb = Block::new();
    shb.u32(0x1A2B_3C4D).u16(1).u16(0).u32(u32::MAX).u32(u32::MAX);
    shb.option(4, b"gridmpi-testbed").end_options(); // shb_userappl
    shb.write(0x0A0D_0D0A, &mut out)?;
    for name in ifaces {
        let mut idb = Block::new();
        idb.u16(LINKTYPE_RAW).u16(0).u32(snaplen);
        idb.option(2, name.as_bytes()); // if_name
        idb.option(9, &[9]); // if_tsresol: 10^-9 s
        idb.end_options();
        idb.write(0x0000_0001, &mut out)?;
    }
    let mut count = 0;
    for msg in rx {
        let ts = (msg.ts_mono_ns as i128 + mono_to_real_ns).max(0) as u64;
        let mut epb = Block::new();
        epb.u32(msg.iface).u32((ts >> 32) as u32).u32(ts as u32).u32(msg.data.len() as u32).u32(msg.orig_len);
        epb.bytes_padded(&msg.data);
        if let Some(c) = msg.comment {
            epb.option(1, c.as_bytes()).end_options(); // opt_comment
        }
        epb.write(0x0000_0006, &mut out)?;
        count += 1;
    }
    out.flush()?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_well_formed_blocks() {
        let dir = std::env::temp_dir().join(format!("gtb-cap-test-{}", std::process::id()));
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(CaptureMsg { iface: 0, ts_mono_ns: 5, orig_len: 60, data: vec![0x45; 21], comment: Some("dropped: queue full") })
            .unwrap();
        drop(tx);
        let n = write_pcapng(&dir, &["a>b:out".into()], 96, 1_000_000_000, rx).unwrap();
        assert_eq!(n, 1);
        let bytes = std::fs::read(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        // walk the blocks: each starts and ends with the same total length
        let mut off = 0;
        let mut types = Vec::new();
        while off < bytes.len() {
            let t = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap());
            let len = u32::from_le_bytes(bytes[off + 4..off + 8].try_into().unwrap()) as usize;
            assert_eq!(len % 4, 0);
            let trailer = u32::from_le_bytes(bytes[off + len - 4..off + len].try_into().unwrap()) as usize;
            assert_eq!(len, trailer);
            types.push(t);
            off += len;
        }
        assert_eq!(types, vec![0x0A0D_0D0A, 1, 6]);
    }
}

//! The recorded fields of Linux's `struct tcp_info` (linux/tcp.h), in the
//! order of the SAMPLE mask bits: their names in the trace (without
//! `tcpi_`), byte offsets and widths.

/// How a field is stored in `struct tcp_info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    U8,
    /// Bit 0 of a byte (`tcpi_delivery_rate_app_limited`).
    Bit0,
    U16,
    U32,
    U64,
}

impl Width {
    const fn bytes(self) -> usize {
        match self {
            Width::U8 | Width::Bit0 => 1,
            Width::U16 => 2,
            Width::U32 => 4,
            Width::U64 => 8,
        }
    }
}

/// One recorded field.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    /// Byte offset in `struct tcp_info`.
    pub offset: usize,
    pub width: Width,
}

const fn f(name: &'static str, offset: usize, width: Width) -> Field {
    Field { name, offset, width }
}

/// How many fields a sample may carry (a mask is a u64).
pub const NFIELDS: usize = 54;
const _: () = assert!(NFIELDS <= 64);

/// The recorded fields, in mask-bit order. Offsets are those of Linux's
/// `struct tcp_info`, which only ever grows at its end; a field the running
/// kernel does not fill is left out of a connection's available-fields mask.
/// A new field goes at the end (the header lists the names, so readers
/// follow; docs/trace.md numbers the bits).
pub static FIELDS: [Field; NFIELDS] = [
    f("state", 0, Width::U8),
    f("ca_state", 1, Width::U8),
    f("retransmits", 2, Width::U8),
    f("probes", 3, Width::U8),
    f("backoff", 4, Width::U8),
    f("options", 5, Width::U8),
    f("wscale", 6, Width::U8),
    f("app_limited", 7, Width::Bit0),
    f("rto", 8, Width::U32),
    f("ato", 12, Width::U32),
    f("snd_mss", 16, Width::U32),
    f("rcv_mss", 20, Width::U32),
    f("unacked", 24, Width::U32),
    f("sacked", 28, Width::U32),
    f("lost", 32, Width::U32),
    f("retrans", 36, Width::U32),
    f("pmtu", 60, Width::U32),
    f("rcv_ssthresh", 64, Width::U32),
    f("rtt", 68, Width::U32),
    f("rttvar", 72, Width::U32),
    f("snd_ssthresh", 76, Width::U32),
    f("snd_cwnd", 80, Width::U32),
    f("advmss", 84, Width::U32),
    f("reordering", 88, Width::U32),
    f("rcv_rtt", 92, Width::U32),
    f("rcv_space", 96, Width::U32),
    f("total_retrans", 100, Width::U32),
    f("pacing_rate", 104, Width::U64),
    f("max_pacing_rate", 112, Width::U64),
    f("bytes_acked", 120, Width::U64),
    f("bytes_received", 128, Width::U64),
    f("segs_out", 136, Width::U32),
    f("segs_in", 140, Width::U32),
    f("notsent_bytes", 144, Width::U32),
    f("min_rtt", 148, Width::U32),
    f("data_segs_in", 152, Width::U32),
    f("data_segs_out", 156, Width::U32),
    f("delivery_rate", 160, Width::U64),
    f("busy_time", 168, Width::U64),
    f("rwnd_limited", 176, Width::U64),
    f("sndbuf_limited", 184, Width::U64),
    f("delivered", 192, Width::U32),
    f("delivered_ce", 196, Width::U32),
    f("bytes_sent", 200, Width::U64),
    f("bytes_retrans", 208, Width::U64),
    f("dsack_dups", 216, Width::U32),
    f("reord_seen", 220, Width::U32),
    f("rcv_ooopack", 224, Width::U32),
    f("snd_wnd", 228, Width::U32),
    f("rcv_wnd", 232, Width::U32),
    f("rehash", 236, Width::U32),
    f("total_rto", 240, Width::U16),
    f("total_rto_recoveries", 242, Width::U16),
    f("total_rto_time", 244, Width::U32),
];

/// Read every recorded field from `tcp_info`, the bytes the kernel filled
/// (in the machine's byte order). Returns the mask of the fields it holds;
/// the others are set to 0.
#[inline]
pub fn extract(tcp_info: &[u8], out: &mut [u64; NFIELDS]) -> u64 {
    let mut avail = 0u64;
    for (i, (field, value)) in FIELDS.iter().zip(out.iter_mut()).enumerate() {
        let Some(b) = tcp_info.get(field.offset..field.offset + field.width.bytes()) else {
            *value = 0;
            continue;
        };
        *value = match field.width {
            Width::U8 => b[0] as u64,
            Width::Bit0 => (b[0] & 1) as u64,
            Width::U16 => u16::from_ne_bytes([b[0], b[1]]) as u64,
            Width::U32 => u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as u64,
            Width::U64 => u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        };
        avail |= 1 << i;
    }
    avail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_named_once_and_do_not_overlap() {
        let mut names: Vec<_> = FIELDS.iter().map(|f| f.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), NFIELDS);
        for w in FIELDS.windows(2) {
            assert!(w[0].offset + w[0].width.bytes() <= w[1].offset, "{} overlaps {}", w[0].name, w[1].name);
        }
        assert_eq!(FIELDS[NFIELDS - 1].name, "total_rto_time");
    }

    #[test]
    fn extract_reads_what_the_kernel_filled() {
        let mut info = [0u8; 248];
        info[0] = 1; // state
        info[7] = 0xff; // app_limited: bit 0 only
        info[80..84].copy_from_slice(&10u32.to_ne_bytes()); // snd_cwnd
        info[200..208].copy_from_slice(&(5u64 << 40).to_ne_bytes()); // bytes_sent
        info[240..242].copy_from_slice(&3u16.to_ne_bytes()); // total_rto
        let index = |name| FIELDS.iter().position(|f| f.name == name).unwrap();
        let mut vals = [7u64; NFIELDS];
        assert_eq!(extract(&info, &mut vals), (1u64 << NFIELDS) - 1);
        assert_eq!(vals[index("state")], 1);
        assert_eq!(vals[index("app_limited")], 1);
        assert_eq!(vals[index("snd_cwnd")], 10);
        assert_eq!(vals[index("bytes_sent")], 5 << 40);
        assert_eq!(vals[index("total_rto")], 3);
        assert_eq!(vals[index("rtt")], 0);
        // An older kernel's shorter struct: the fields past its end are absent.
        let avail = extract(&info[..232], &mut vals);
        assert_eq!(avail, (1 << index("rcv_wnd")) - 1, "snd_wnd ends at byte 232, rcv_wnd starts there");
        assert_eq!(vals[index("total_rto")], 0);
        assert_eq!(vals[index("bytes_sent")], 5 << 40);
    }
}

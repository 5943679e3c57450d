//! MPI_T performance variables: what GridMPI knows about its connections,
//! its traffic and its matching.
//!
//! None is bound to an MPI object (MPI_T_BIND_NO_OBJECT). The per-peer
//! variables have one element per process of the job, element `i` being
//! the connection to the process of rank `i` in MPI_COMM_WORLD (or in the
//! session's mpi://WORLD): 0 where there is no TCP connection to it (a
//! peer on the same host reached by shared memory, the process itself, a
//! peer not talked to yet); `gridmpi_tcp_connection` tells which elements
//! are real connections. The TCP values are read from the kernel
//! (TCP_INFO) when the variable is read, tracing or not. The per-cluster
//! variables have one element per cluster of the cluster map, in the order
//! of the session's gridmpi://cluster/NAME process sets.
//!
//! Reading needs MPI to run: a handle can be made once MPI_Init or
//! MPI_Session_init has started it, and reads after MPI ended fail with
//! MPI_T_ERR_INVALID.
//!
//! Most variables are continuous and read-only: they always count, and
//! only the library changes them. `gridmpi_cluster_bytes_sent` is the
//! counter a tool measures a phase with: it counts only between
//! MPI_T_pvar_start and MPI_T_pvar_stop of its handle, and a handle may be
//! reset or written.

use super::categories::{self, Cat, Enum};
use super::*;
use crate::state::State;

/// How many elements a variable has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// One per process of the job.
    Peers,
    /// One per cluster of the cluster map.
    Clusters,
    One,
}

/// Where a variable's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A field of the connection's TCP_INFO (gridmpi_traceformat::FIELDS).
    TcpField(&'static str),
    /// 1 for an established TCP connection, else 0.
    TcpConnected,
    /// The rate GridMPI paces the connection to (bytes/s, 0: unpaced).
    PacedRate,
    /// TCP connections re-made after a break, per peer.
    Reconnections,
    /// Bytes those connections wrote again, per peer.
    ResentBytes,
    /// Bytes of frames handed to a transport for each peer.
    BytesSent,
    /// The same summed per cluster of the receiving peers.
    ClusterBytesSent,
    UnexpectedMessages,
    UnexpectedBytes,
    UnexpectedPeak,
    PostedReceives,
}

pub struct Pvar {
    pub name: &'static str,
    pub desc: &'static str,
    pub class: c_int,
    pub verbosity: c_int,
    pub category: Cat,
    pub count: Count,
    pub origin: Origin,
    pub continuous: bool,
    pub readonly: bool,
}

impl Pvar {
    pub fn datatype(&self) -> MPI_Datatype {
        if self.class == MPI_T_PVAR_CLASS_STATE {
            MPI_INT
        } else {
            MPI_UNSIGNED_LONG_LONG
        }
    }

    /// The enumeration of a state variable (index among the pvars' own).
    pub fn enum_index(&self) -> Option<usize> {
        (self.origin == Origin::TcpConnected).then(|| categories::pvar_enum_index(0))
    }

    /// Whether a read and a reset can be done as one (MPI_T_pvar_readreset).
    pub fn atomic(&self) -> bool {
        !self.readonly
    }
}

const fn tcp(name: &'static str, desc: &'static str, class: c_int, field: &'static str) -> Pvar {
    Pvar {
        name,
        desc,
        class,
        verbosity: MPI_T_VERBOSITY_USER_DETAIL,
        category: Cat::Tcp,
        count: Count::Peers,
        origin: Origin::TcpField(field),
        continuous: true,
        readonly: true,
    }
}

const fn engine(name: &'static str, desc: &'static str, class: c_int, origin: Origin) -> Pvar {
    Pvar { name, desc, class, verbosity: MPI_T_VERBOSITY_TUNER_BASIC, category: Cat::Matching, count: Count::One, origin, continuous: true, readonly: true }
}

pub static PVARS: &[Pvar] = &[
    Pvar {
        name: "gridmpi_tcp_connection",
        desc: "per peer: whether a TCP connection to it is established (open) or not (none: shared memory, this process, or not connected yet)",
        class: MPI_T_PVAR_CLASS_STATE,
        verbosity: MPI_T_VERBOSITY_USER_BASIC,
        category: Cat::Tcp,
        count: Count::Peers,
        origin: Origin::TcpConnected,
        continuous: true,
        readonly: true,
    },
    tcp("gridmpi_tcp_total_retrans", "per peer: segments the connection retransmitted (tcpi_total_retrans)", MPI_T_PVAR_CLASS_COUNTER, "total_retrans"),
    tcp("gridmpi_tcp_total_rto", "per peer: retransmission timeouts on the connection (tcpi_total_rto; 0 on kernels before Linux 6.7)", MPI_T_PVAR_CLASS_COUNTER, "total_rto"),
    tcp("gridmpi_tcp_rto", "per peer: the connection's retransmission timeout now, in microseconds (tcpi_rto)", MPI_T_PVAR_CLASS_GENERIC, "rto"),
    tcp("gridmpi_tcp_rtt", "per peer: the connection's smoothed round-trip time, in microseconds (tcpi_rtt)", MPI_T_PVAR_CLASS_GENERIC, "rtt"),
    tcp("gridmpi_tcp_cwnd", "per peer: the connection's congestion window, in segments (tcpi_snd_cwnd)", MPI_T_PVAR_CLASS_LEVEL, "snd_cwnd"),
    tcp("gridmpi_tcp_pacing_rate", "per peer: the kernel's pacing rate of the connection, in bytes per second (tcpi_pacing_rate)", MPI_T_PVAR_CLASS_GENERIC, "pacing_rate"),
    Pvar {
        name: "gridmpi_tcp_paced_rate",
        desc: "per peer: the rate GridMPI paces the connection to (WAN collectives), in bytes per second; 0 when unpaced",
        class: MPI_T_PVAR_CLASS_GENERIC,
        verbosity: MPI_T_VERBOSITY_USER_DETAIL,
        category: Cat::Tcp,
        count: Count::Peers,
        origin: Origin::PacedRate,
        continuous: true,
        readonly: true,
    },
    tcp("gridmpi_tcp_notsent_bytes", "per peer: bytes written to the socket and not yet sent (tcpi_notsent_bytes)", MPI_T_PVAR_CLASS_LEVEL, "notsent_bytes"),
    Pvar {
        name: "gridmpi_tcp_reconnections",
        desc: "per peer: TCP connections that took over from a broken (reset) one, resending what the peer had not received",
        class: MPI_T_PVAR_CLASS_COUNTER,
        verbosity: MPI_T_VERBOSITY_USER_BASIC,
        category: Cat::Tcp,
        count: Count::Peers,
        origin: Origin::Reconnections,
        continuous: true,
        readonly: true,
    },
    Pvar {
        name: "gridmpi_tcp_resent_bytes",
        desc: "per peer: bytes written again by connections that took over from a broken one (the peer had not received them)",
        class: MPI_T_PVAR_CLASS_COUNTER,
        verbosity: MPI_T_VERBOSITY_USER_DETAIL,
        category: Cat::Tcp,
        count: Count::Peers,
        origin: Origin::ResentBytes,
        continuous: true,
        readonly: true,
    },
    Pvar {
        name: "gridmpi_bytes_sent",
        desc: "per peer: bytes of messages and protocol frames (headers included) this process handed to a transport for the peer",
        class: MPI_T_PVAR_CLASS_COUNTER,
        verbosity: MPI_T_VERBOSITY_USER_BASIC,
        category: Cat::Traffic,
        count: Count::Peers,
        origin: Origin::BytesSent,
        continuous: true,
        readonly: true,
    },
    Pvar {
        name: "gridmpi_cluster_bytes_sent",
        desc: "per cluster: bytes this process sent to the processes of the cluster while the handle was started (MPI_T_pvar_start .. _stop)",
        class: MPI_T_PVAR_CLASS_COUNTER,
        verbosity: MPI_T_VERBOSITY_USER_BASIC,
        category: Cat::Traffic,
        count: Count::Clusters,
        origin: Origin::ClusterBytesSent,
        continuous: false,
        readonly: false,
    },
    engine("gridmpi_unexpected_messages", "messages arrived and not yet matched by a receive (the unexpected queue's length)", MPI_T_PVAR_CLASS_LEVEL, Origin::UnexpectedMessages),
    engine("gridmpi_unexpected_bytes", "bytes of eager messages from other processes waiting in the unexpected queue", MPI_T_PVAR_CLASS_SIZE, Origin::UnexpectedBytes),
    engine("gridmpi_unexpected_messages_peak", "the longest the unexpected queue has been", MPI_T_PVAR_CLASS_HIGHWATERMARK, Origin::UnexpectedPeak),
    engine("gridmpi_posted_receives", "receives posted and not yet matched", MPI_T_PVAR_CLASS_LEVEL, Origin::PostedReceives),
];

/// The enumerations of the performance variables (see categories::enums).
pub fn enums() -> Vec<Enum> {
    vec![Enum { name: "gridmpi_tcp_connection_state".into(), items: vec![("none".into(), 0), ("open".into(), 1)] }]
}

pub fn index_of(name: &str, class: c_int) -> Option<usize> {
    PVARS.iter().position(|p| p.name == name && p.class == class)
}

/// Elements of variable `p` in this job.
fn elements(p: &Pvar, st: &State) -> usize {
    match p.count {
        Count::Peers => st.rt.size as usize,
        Count::Clusters => st.rt.map.clusters(),
        Count::One => 1,
    }
}

/// The variable's values now, as the library counts them.
fn sample(p: &Pvar, st: &State) -> Vec<u64> {
    let drv = st.rt.driver();
    let peers = 0..st.rt.size;
    match p.origin {
        Origin::TcpField(name) => {
            let i = crate::trace::field_index(name);
            peers
                .map(|peer| match drv.tcp_fd(peer).and_then(crate::trace::tcp_info) {
                    Some((fields, avail)) if avail & (1 << i) != 0 => fields[i],
                    _ => 0,
                })
                .collect()
        }
        Origin::TcpConnected => peers.map(|peer| drv.tcp_fd(peer).is_some() as u64).collect(),
        Origin::PacedRate => peers.map(|peer| drv.tcp_pace(peer).unwrap_or(0)).collect(),
        Origin::Reconnections => peers.map(|peer| drv.tcp_resumptions(peer).0).collect(),
        Origin::ResentBytes => peers.map(|peer| drv.tcp_resumptions(peer).1).collect(),
        Origin::BytesSent => drv.sent_bytes().to_vec(),
        Origin::ClusterBytesSent => {
            let mut v = vec![0u64; st.rt.map.clusters()];
            for (peer, &b) in drv.sent_bytes().iter().enumerate() {
                v[st.rt.map.cluster_of(peer as u32) as usize] += b;
            }
            v
        }
        Origin::UnexpectedMessages => vec![st.rt.engine.unexpected_messages()],
        Origin::UnexpectedBytes => vec![st.rt.engine.unexpected_eager_bytes()],
        Origin::UnexpectedPeak => vec![st.rt.engine.unexpected_peak()],
        Origin::PostedReceives => vec![st.rt.engine.posted_receives()],
    }
}

/// Run `f` on the running library (performance variables need it).
fn with_library<T>(f: impl FnOnce(&mut State) -> T) -> TR<T> {
    crate::state::with(|st| Ok(f(st))).map_err(|_| INVALID)
}

/// A handle: a variable in a session, with its own start/stop state.
pub struct PvarHandle {
    pub index: usize,
    pub count: usize,
    started: bool,
    /// Counted while started, before the current start.
    kept: Vec<u64>,
    /// The library's values when the handle was last started (or reset
    /// or written while started).
    since: Vec<u64>,
}

impl PvarHandle {
    /// MPI_T_pvar_handle_alloc.
    pub fn alloc(index: usize) -> TR<PvarHandle> {
        let p = PVARS.get(index).ok_or(INVALID_INDEX)?;
        let count = with_library(|st| elements(p, st))?;
        Ok(PvarHandle { index, count, started: p.continuous, kept: vec![0; count], since: vec![0; count] })
    }

    fn def(&self) -> &'static Pvar {
        &PVARS[self.index]
    }

    /// The handle's values now.
    pub fn values(&self) -> TR<Vec<u64>> {
        let p = self.def();
        let now = with_library(|st| sample(p, st))?;
        if p.continuous {
            return Ok(now);
        }
        Ok((0..self.count)
            .map(|i| self.kept[i] + if self.started { now[i].saturating_sub(self.since[i]) } else { 0 })
            .collect())
    }

    pub fn start(&mut self) -> TR<()> {
        if self.def().continuous {
            return Err(TError(MPI_T_ERR_PVAR_NO_STARTSTOP));
        }
        if !self.started {
            self.since = with_library(|st| sample(self.def(), st))?;
            self.started = true;
        }
        Ok(())
    }

    pub fn stop(&mut self) -> TR<()> {
        if self.def().continuous {
            return Err(TError(MPI_T_ERR_PVAR_NO_STARTSTOP));
        }
        if self.started {
            self.kept = self.values()?;
            self.started = false;
        }
        Ok(())
    }

    /// MPI_T_pvar_write: the handle's values become `v`.
    pub fn write(&mut self, v: &[u64]) -> TR<()> {
        if self.def().readonly {
            return Err(TError(MPI_T_ERR_PVAR_NO_WRITE));
        }
        self.kept = v.to_vec();
        if self.started {
            self.since = with_library(|st| sample(self.def(), st))?;
        }
        Ok(())
    }

    pub fn reset(&mut self) -> TR<()> {
        self.write(&vec![0; self.count])
    }

    pub fn is_continuous(&self) -> bool {
        self.def().continuous
    }

    pub fn is_readonly(&self) -> bool {
        self.def().readonly
    }
}

/// Copy a handle's values into the caller's buffer, in the variable's type.
///
/// # Safety
/// `buf` holds `v.len()` items of the variable's datatype.
pub unsafe fn store(p: &Pvar, v: &[u64], buf: *mut c_void) {
    if p.datatype() == MPI_INT {
        for (i, &x) in v.iter().enumerate() {
            *(buf as *mut c_int).add(i) = x.min(c_int::MAX as u64) as c_int;
        }
    } else {
        std::ptr::copy_nonoverlapping(v.as_ptr(), buf as *mut u64, v.len());
    }
}

/// Read a write's values from the caller's buffer.
///
/// # Safety
/// `buf` holds `n` items of the variable's datatype.
pub unsafe fn load(p: &Pvar, n: usize, buf: *const c_void) -> Vec<u64> {
    if p.datatype() == MPI_INT {
        (0..n).map(|i| (*(buf as *const c_int).add(i)).max(0) as u64).collect()
    } else {
        std::slice::from_raw_parts(buf as *const u64, n).to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_are_well_formed() {
        for (i, p) in PVARS.iter().enumerate() {
            assert_eq!(index_of(p.name, p.class), Some(i), "{} is not unique", p.name);
            if let Origin::TcpField(f) = p.origin {
                assert!(gridmpi_traceformat::FIELDS.iter().any(|x| x.name == f), "{f} is not a recorded field");
            }
            // Only counters a tool may start, stop, reset and write.
            assert_eq!(!p.continuous, !p.readonly, "{}", p.name);
            assert!(p.continuous || p.class == MPI_T_PVAR_CLASS_COUNTER, "{}", p.name);
            assert_eq!(p.enum_index().is_some(), p.class == MPI_T_PVAR_CLASS_STATE, "{}", p.name);
        }
        assert_eq!(index_of("gridmpi_tcp_rtt", MPI_T_PVAR_CLASS_COUNTER), None);
    }
}

//! Per-connection TCP history (issue 5): the hook points the runtime calls.
//! The recorder itself (sampling TCP_INFO, writing the trace files) lives in
//! this module; see `Tracer`.

use gridmpi_config::Config;
use gridmpi_engine::Pid;
use std::os::fd::RawFd;

/// Records connection events, TCP_INFO samples and collective markers of one
/// rank into a trace directory (`GRIDMPI_TRACE=DIR`, `gridmpirun --trace DIR`).
pub struct Tracer {
    _private: (),
}

impl Tracer {
    /// A tracer if tracing is enabled in `config`.
    pub fn from_config(_config: &Config, _me: Pid, _host: &str) -> Result<Option<Tracer>, String> {
        Ok(None)
    }

    /// An authenticated TCP connection to `peer` is ready on `fd`.
    pub fn conn_opened(&mut self, _peer: Pid, _fd: RawFd, _peer_host: &str) {}

    /// The connection to `peer` is gone (before its fd is closed).
    pub fn conn_closed(&mut self, _peer: Pid, _fd: RawFd) {}

    /// A socket option was set on the connection to `peer`.
    pub fn tuning(&mut self, _peer: Pid, _option: &str, _value: &str) {}

    /// A collective starts; returns a token for [`Tracer::coll_end`].
    pub fn coll_begin(&mut self, _name: &str, _ctx: u32, _bytes: u64) -> u64 {
        0
    }

    pub fn coll_end(&mut self, _token: u64) {}

    /// Called from every progress pass: sample when it is time. `busy` says
    /// whether data moved since the last call.
    pub fn tick(&mut self, _busy: bool) {}

    /// At MPI_Finalize: write everything out.
    pub fn finish(&mut self) {}
}

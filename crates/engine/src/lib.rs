//! GridMPI's MPI engine. Sans-IO: no system calls, no clock. See DESIGN.md.

pub mod buf;
pub mod coll;
pub mod p2p;
pub mod sched;
pub mod slab;
pub mod wire;

#[cfg(test)]
mod sim_tests;

pub use buf::UserBuf;
pub use p2p::{
    Action, Engine, EngineConfig, ErrorKind, MsgId, Payload, PeerParams, Pid, ProtocolError, RecvArgs, ReqId,
    SendArgs, SendMode, Status, Transmit,
};

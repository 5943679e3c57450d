//! GridMPI's MPI engine: the sole owner of MPI semantics. Sans-IO: no system
//! calls, no clock. See [`engine`] for the contract with the driver.

pub mod coll;
pub mod engine;
pub mod ft;
pub mod p2p;
pub mod pacing;
pub mod partitioned;
pub mod request;
pub mod rma;
pub mod sched;
pub mod slab;
pub mod topo;

#[cfg(test)]
mod sim;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod partitioned_tests;
#[cfg(test)]
mod ft_tests;

pub use engine::{Action, Engine, EngineConfig, PeerParams, ProtocolError};
pub use ft::agree::{AgreeView, Value as AgreeValue};
pub use gridmpi_datatype::UserBuf;
pub use gridmpi_wire as wire;
pub use gridmpi_wire::{Payload, Pid, Transmit};
pub use p2p::{MsgId, RecvArgs, SendArgs, SendMode};
pub use partitioned::{PartError, PartId, PrecvArgs, PsendArgs, PART_CTX_BIT};
pub use request::{ErrorKind, ReqId, Status};

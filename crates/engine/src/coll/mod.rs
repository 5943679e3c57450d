//! Collective algorithms: functions from (communicator view, arguments) to
//! schedules. Each collective has its module, each algorithm is one
//! function there, with its cost and when it is chosen in its doc comment;
//! the choice among them is made from one table ([`select`]).
//!
//! Conventions: `rank`/`size` come from the view; buffers are [`UserBuf`]s
//! (user memory or schedule temps); every function returns a complete
//! schedule with the collective's tag already set. Messages that carry no
//! bytes on both sides are left out (both sides compute the same sizes).
//!
//! [`UserBuf`]: gridmpi_datatype::UserBuf

pub mod agree;
pub mod allgather;
pub mod allreduce;
pub mod alltoall;
pub mod barrier;
pub mod basic;
pub mod bcast;
pub mod gather;
pub mod host;
pub mod inter;
pub mod neighbor;
pub mod reduce;
pub mod reduce_scatter;
pub mod scan;
pub mod scatter;
pub mod select;
pub mod util;
pub mod wan;

#[cfg(test)]
mod mismatch_tests;
#[cfg(test)]
pub mod sim;

pub use basic::*;

//! Collective algorithms: functions from (communicator view, arguments) to
//! schedules. Each algorithm is in the module of its collective; the choice
//! among them is made by the caller from one table (the library's
//! `coll_select`).
//!
//! Conventions: `rank`/`size` come from the view; buffers are [`UserBuf`]s
//! (user memory or schedule temps); every function returns a complete
//! schedule with the collective's tag already set.

pub mod basic;

pub use basic::*;

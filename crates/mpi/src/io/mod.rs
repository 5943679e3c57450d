//! Parallel file I/O (MPI 4.1 chapter 14) below the C shell
//! (`shell/file.rs`): one file per idea.
//!
//! - `view.rs`: a file view as a map from the view's byte stream to file
//!   byte ranges (pure, unit-tested).
//! - `datarep.rs`: native, internal, external32 and user-defined data
//!   representations.
//! - `shared_ptr.rs`: the shared file pointer (a locked sidecar file).
//! - `access.rs`: positioned reads and writes of byte ranges, byte-range
//!   locks, errno as MPI error classes.
//! - `aggregate.rs`: the plan of two-phase collective I/O (file domains,
//!   pieces per aggregator; pure, unit-tested).
//!
//! The engine does no I/O; every file system call of the library is here.

pub mod access;
pub mod aggregate;
pub mod datarep;
pub mod shared_ptr;
pub mod view;

//! PMI-1 and PMI-2: the client every rank uses to find its peers, and the
//! server side the launcher runs.
//!
//! PMI is how an MPI process learns its rank and the job size from the
//! process manager, and exchanges addresses with its peers through a
//! key-value store: each rank `put`s its "business card", all ranks `fence`,
//! then anyone can `get` anyone's card.
//!
//! # Client ([`Pmi`])
//!
//! [`Pmi::init`] reads the environment the launcher set:
//!
//! | variable | meaning |
//! |---|---|
//! | `PMI_FD` | an inherited, connected socket (gridmpirun, hydra, Slurm) |
//! | `PMI_PORT` = `host:port`, `PMI_ID` | connect over TCP (hydra `-pmi-port`) and introduce ourselves with `initack` |
//! | `PMI_RANK`, `PMI_SIZE` | rank and size (PMI-1 over `PMI_FD`) |
//! | `PMI_JOBID` | set by Slurm's `srun --mpi=pmi2`: speak PMI-2 |
//! | `GRIDMPI_PMI_VERSION`, else `PMI_VERSION` | force `1` or `2` |
//! | `GRIDMPI_SPAWN_SERVER` | set by gridmpirun to the job's key-value space name: [`Pmi::spawn`] may ask it to start processes (MPI_Comm_spawn; else it refuses) |
//! | `GRIDMPI_PMI_TIMEOUT` | give up waiting for a reply after this long (`30s`, `500ms`; default: wait forever, but a closed connection is always detected) |
//!
//! Without `PMI_FD` or `PMI_PORT` but with `PMIX_NAMESPACE` (set by a PMIx
//! server: Open MPI's mpirun, `srun --mpi=pmix`) the process speaks PMIx
//! through the system's PMIx library, loaded at run time (`pmix`).
//! Without any of them the process is a singleton: rank 0 of 1
//! with an in-process store. When PMI-2 is asked for and the server only
//! speaks PMI-1, the client falls back to PMI-1.
//!
//! Keys are per rank: `put("card", v)` on rank 3 is read with
//! `get(3, "card")` (stored as `card@3`). Values may be any string of any
//! length: characters PMI cannot carry are `%XX`-escaped and long values are
//! split over several entries, transparently.
//!
//! Spawn requests ([`Pmi::spawn`], formats in [`spawn`]) and the name
//! service ([`Pmi::publish_name`], [`Pmi::lookup_name`]) speak the
//! connection's wire version.
//!
//! # Server ([`server::Server`])
//!
//! Sans-IO: bytes in, replies and events out. See the module docs.
//!
//! # Wire formats ([`wire`])
//!
//! PMI-1 "simple" lines and PMI-2 length-prefixed messages, as spoken by
//! MPICH's hydra and by Slurm.

mod client;
pub mod rendezvous;
mod pmix;
#[doc(hidden)]
pub mod fuzzing;
pub mod server;
pub mod spawn;
pub mod wire;

pub use client::{resolve_v4, Joined, Pmi, PmiError, Version, SPAWN_SERVER_VAR};
pub use spawn::SpawnApp;

/// The signal gridmpirun sends every rank to ask for a checkpoint of the
/// job: `SIGRTMAX-4` (60 with glibc). Ranks of a job with checkpointing on
/// start with it blocked, and the rank library waits for it with
/// `sigwaitinfo` in a thread of its own, so a request that comes before
/// `MPI_Init` stays pending instead of killing the process (a real-time
/// signal's default action). One below the process checkpointer's own
/// signal (`SIGRTMAX-3`, docs/checkpoint.md), so neither is taken for the other.
pub fn checkpoint_signal() -> i32 {
    libc::SIGRTMAX() - 4
}

/// The signal gridmpirun sends every rank of a fault-tolerant job
/// (`--with-ft ulfm`) when a rank of the job has failed: `SIGRTMAX-5`.
/// Such ranks start with it blocked; the rank library waits for it in a
/// thread of its own and then asks gridmpirun which ranks failed
/// ([`Pmi::failed_ranks`]).
pub fn failure_signal() -> i32 {
    libc::SIGRTMAX() - 5
}

/// The variable gridmpirun sets to `ulfm` in every rank's environment
/// when the job is fault tolerant (`--with-ft ulfm`): a rank that dies
/// does not end the job, and the others learn of it.
pub const FT_VAR: &str = "GRIDMPI_FT";

/// The variable gridmpirun sets in every rank's environment when the job
/// is checkpointed (`--checkpoint-dir`, `--restart`): the directory, absolute,
/// where each checkpoint goes (`ckpt-SEQ/rank-R.img`).
pub const CHECKPOINT_DIR_VAR: &str = "GRIDMPI_CHECKPOINT_DIR";

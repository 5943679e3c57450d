//! A rank's side of a coordinated checkpoint of the whole job (issue 15;
//! docs/checkpoint.md has the protocol and its reasons).
//!
//! gridmpirun started with `--checkpoint-dir DIR` sets
//! `GRIDMPI_CHECKPOINT_DIR` and starts its ranks with the checkpoint
//! request signal ([`gridmpi_pmi::checkpoint_signal`]) blocked. A thread of
//! the library waits for that signal and, when it comes, runs one round:
//!
//! 1. **Freeze**: take the library's lock. No thread of this process moves
//!    MPI forward while it is held, so no byte is written to or read from
//!    a link (a thread computing outside MPI goes on: it is stopped later,
//!    wherever it is, by the process checkpointer). Tell gridmpirun
//!    (`gridmpi_ckpt_frozen`) and wait until every rank has frozen.
//! 2. **Image**: write this process's image with the process checkpointer
//!    (crates/checkpoint) to `DIR/ckpt-SEQ/rank-R.img`, tell gridmpirun,
//!    and wait until every rank has written its own (gridmpirun then
//!    writes the manifest that makes the checkpoint valid).
//! 3. **Go on** (release the lock), or exit (`--checkpoint-and-stop`).
//!
//! Why nothing in flight is lost or doubled: every rank froze before any
//! image was written, so each link's receiver had read no more than its
//! sender had written when their images were taken. Every TCP link of a
//! job that checkpoints keeps a copy of what its peer has not acknowledged
//! (runtime.rs makes them all resumable, and shared memory is off), so
//! after a restart each link is re-made like one reset by the network and
//! each side writes again exactly what the other's image lacks.
//!
//! In a process restored from the image the checkpointer's call returns
//! a second time, saying so: the thread, still holding the lock, connects
//! to the new gridmpirun (its socket and settings come through
//! gridmpi-restore's handover), listens again, exchanges address cards,
//! and releases the lock; the links resume on their own.

use crate::clustermap::ClusterMap;
use crate::state::{self, State};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The variable gridmpirun sets (docs/checkpoint.md).
pub const DIR_VAR: &str = gridmpi_pmi::CHECKPOINT_DIR_VAR;

/// Where this job's checkpoints go, when gridmpirun may take them.
pub fn dir() -> Option<String> {
    std::env::var(DIR_VAR).ok().filter(|d| !d.is_empty())
}

/// The rank is finishing: no more rounds.
static RETIRED: AtomicBool = AtomicBool::new(false);
/// The thread answering requests, while it runs.
static THREAD: Mutex<Option<libc::pthread_t>> = Mutex::new(None);
/// Where images go (a restart may name another directory).
static DIR: Mutex<String> = Mutex::new(String::new());

/// Start answering gridmpirun's checkpoint requests (at the end of the
/// runtime's start, when [`dir`] is set).
pub fn start(dir: String) -> Result<(), String> {
    let sig = gridmpi_pmi::checkpoint_signal();
    if !crate::launcher_signal::blocked(sig) {
        // The request would kill the process (its default action), and
        // sigwaitinfo would miss it in threads that do not block it.
        eprintln!(
            "gridmpi: warning: {DIR_VAR} is set but signal {sig} is not blocked (the process was not started by gridmpirun --checkpoint-dir, or unblocked it): this process takes no checkpoints"
        );
        return Ok(());
    }
    *DIR.lock().unwrap_or_else(|p| p.into_inner()) = dir;
    RETIRED.store(false, Ordering::SeqCst);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("gridmpi-ckpt".into())
        .spawn(move || {
            // SAFETY: the id of the calling thread.
            let _ = tx.send(unsafe { libc::pthread_self() });
            while crate::launcher_signal::wait(sig) && !RETIRED.load(Ordering::SeqCst) {
                round();
            }
        })
        .map_err(|e| format!("cannot start the checkpoint thread: {e}"))?;
    let id = rx.recv().map_err(|_| "the checkpoint thread did not start".to_string())?;
    *THREAD.lock().unwrap_or_else(|p| p.into_inner()) = Some(id);
    Ok(())
}

/// MPI is finishing in this process (before its final barrier): tell
/// gridmpirun this rank takes part in no more rounds, and end the thread.
/// Under the lock, so it comes either before a round froze this rank or
/// after the round is over; a round waiting for this rank is abandoned.
pub fn retire(st: &mut State) {
    let Some(thread) = THREAD.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
    RETIRED.store(true, Ordering::SeqCst);
    if let Err(e) = st.rt.pmi.checkpoint_retire() {
        eprintln!("gridmpi: rank {}: checkpoint: {e}", st.rt.me);
    }
    // Wake the thread: it sees RETIRED and ends.
    // SAFETY: the thread waits for this signal in sigwaitinfo (or will).
    unsafe { libc::pthread_kill(thread, gridmpi_pmi::checkpoint_signal()) };
}

/// Why this process cannot be checkpointed now, if it cannot.
fn obstacle(st: &State) -> Option<String> {
    if let Some(why) = st.rt.checkpoint_obstacle() {
        return Some(why);
    }
    if st.wins.values().any(|w| matches!(w.memory, crate::objects::WinMemory::Shared(_))) {
        return Some("a window in shared memory (MPI_Win_allocate_shared) is open".into());
    }
    None
}

/// One checkpoint round, from the freeze to going on.
fn round() {
    let mut g = state::lock();
    let Some(st) = g.as_mut() else { return };
    if RETIRED.load(Ordering::SeqCst) {
        return;
    }
    let me = st.rt.me;
    let verdict = obstacle(st);
    let seq = match st.rt.pmi.checkpoint_frozen(verdict.as_deref().map_or(Ok(()), Err)) {
        Ok(Ok(seq)) => seq,
        Ok(Err(why)) => {
            if verdict.is_some() {
                eprintln!("gridmpi: rank {me}: no checkpoint: {why}");
            }
            return;
        }
        Err(e) => {
            eprintln!("gridmpi: rank {me}: checkpoint: {e}");
            return;
        }
    };
    let dir = DIR.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let folder = format!("{dir}/ckpt-{seq}");
    let path = format!("{folder}/rank-{me}.img");
    let started = Instant::now();
    let written = make_private_dir(&folder).and_then(|()| gridmpi_checkpoint::checkpoint(&path));
    let report = match written {
        Ok(gridmpi_checkpoint::Outcome::Restarted) => {
            restarted(st);
            return;
        }
        Ok(gridmpi_checkpoint::Outcome::Checkpointed { bytes, .. }) => Ok(bytes),
        Err(e) => Err(e),
    };
    let host = gridmpi_transport::sys::hostname();
    let ms = started.elapsed().as_millis() as u64;
    let answer = match &report {
        Ok(bytes) => st.rt.pmi.checkpoint_written(Ok((*bytes, ms, &host, &path))),
        Err(e) => st.rt.pmi.checkpoint_written(Err(e)),
    };
    match answer {
        // --checkpoint-and-stop: the image is the job's future. Nothing is
        // flushed: what the program's buffers hold is in the image and
        // comes out after the restart.
        Ok(Ok(true)) => unsafe { libc::_exit(0) },
        Ok(Ok(false)) => {}
        Ok(Err(why)) => eprintln!("gridmpi: rank {me}: checkpoint {seq} failed: {why}"),
        Err(e) => eprintln!("gridmpi: rank {me}: checkpoint: {e}"),
    }
}

/// A directory only we can read (the images hold the job's secret).
fn make_private_dir(path: &str) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path) {
        Ok(()) => Ok(()),
        Err(e) => Err(format!("cannot create {path}: {e}")),
    }
}

/// This process was just restored from its image by `gridmpirun
/// --restart`: join the new launcher (see [`crate::runtime::Runtime::after_restore`]).
/// A rank that cannot has no way back: it says why and exits, and
/// gridmpirun ends the job.
fn restarted(st: &mut State) {
    let handover = gridmpi_checkpoint::handover();
    if let Some((_, d)) = handover.iter().find(|(k, _)| k == DIR_VAR) {
        *DIR.lock().unwrap_or_else(|p| p.into_inner()) = d.clone();
    }
    let resumed = st.rt.after_restore(&handover).and_then(|old| {
        let moved = old.of_pid != st.rt.map.of_pid || old.names != st.rt.map.names;
        if moved && st.rt.me == 0 {
            eprintln!("gridmpi: the cluster map changed at the restart: it was {}, it is {}", old.members(), st.rt.map.members());
        }
        st.map_switch = Some(MapSwitch::agree(st, old)?);
        if moved {
            crate::lifecycle::describe_clusters(&mut st.world, &st.rt);
        }
        Ok(())
    });
    if let Err(e) = resumed {
        eprintln!("gridmpi: rank {}: cannot resume after the restart: {e}", st.rt.me);
        // SAFETY: ending the process; nothing of it can go on.
        unsafe { libc::_exit(1) };
    }
    state::wake_all(st);
}

/// After a restart the cluster map is made again, and the shape of a
/// collective's schedule depends on it (which ranks are a site). Ranks froze
/// at different points: one may have begun the 7th collective of a
/// communicator before the checkpoint while another begins it after. So
/// every collective that any member had begun before the checkpoint runs
/// on the image's map everywhere, and the later ones on the new map.
pub struct MapSwitch {
    /// The image's map.
    pub old: ClusterMap,
    /// By communicator context id: the first blocking and nonblocking
    /// sequence numbers that no rank had reached at the checkpoint.
    from: HashMap<u32, (u32, u32)>,
}

impl MapSwitch {
    /// Whether collective `tag` of the communicator with context `ctx` runs
    /// on the image's map.
    pub fn before(&self, ctx: u32, tag: i32) -> bool {
        self.from.get(&ctx).is_some_and(|&(b, nb)| crate::objects::coll_tag_before(tag, b, nb))
    }

    /// Every rank says how far each of its communicators got; each takes
    /// the furthest. All ranks read all reports, so the members of a
    /// communicator agree (communicators of one MPI_Comm_split that share a
    /// context id take the furthest of them all, alike).
    fn agree(st: &mut State, old: ClusterMap) -> Result<MapSwitch, String> {
        let mine: Vec<(u32, u32, u32)> =
            [&st.world, &st.selfc].into_iter().chain(st.comms.values()).map(|c| (c.ctx, c.coll_seq, c.icoll_seq)).collect();
        let mut from = HashMap::new();
        let mut take = |(ctx, b, nb): (u32, u32, u32)| {
            let e = from.entry(ctx).or_insert((b, nb));
            *e = (crate::objects::seq_later(e.0, b), crate::objects::seq_later(e.1, nb));
        };
        mine.iter().for_each(|&m| take(m));
        let (me, size) = (st.rt.me, st.rt.size);
        if size > 1 {
            let text: Vec<String> = mine.iter().map(|(c, b, nb)| format!("{c}:{b}:{nb}")).collect();
            let pmi = &mut st.rt.pmi;
            pmi.put("collseq", &text.join(",")).map_err(|e| format!("PMI put: {e}"))?;
            pmi.fence().map_err(|e| format!("PMI fence: {e}"))?;
            for r in (0..size).filter(|&r| r != me) {
                let v = pmi.get(r, "collseq").map_err(|e| format!("PMI get of rank {r}'s collective sequences: {e}"))?;
                for part in v.split(',').filter(|p| !p.is_empty()) {
                    take(parse_seqs(part).ok_or_else(|| format!("rank {r} reported malformed collective sequences {part:?}"))?);
                }
            }
        }
        Ok(MapSwitch { old, from })
    }
}

/// "ctx:blocking:nonblocking".
fn parse_seqs(part: &str) -> Option<(u32, u32, u32)> {
    let mut it = part.split(':').map(|x| x.parse::<u32>().ok());
    let t = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clustermap::MapSource;

    #[test]
    fn collectives_begun_before_the_checkpoint_keep_the_images_map() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let old = ClusterMap::from_names(&names(&["A", "A", "B", "B"]), MapSource::Launcher);
        // Context 4 got to blocking collective 7 and nonblocking 2 somewhere.
        let switch = MapSwitch { old, from: HashMap::from([(4, (7, 2))]) };
        assert!(switch.before(4, 6));
        assert!(!switch.before(4, 7));
        assert!(switch.before(4, 1 << 29 | 1));
        assert!(!switch.before(4, 1 << 29 | 2));
        assert!(!switch.before(6, 0), "a communicator no rank had at the checkpoint is on the new map");
    }

    #[test]
    fn sequence_reports_parse_strictly() {
        assert_eq!(parse_seqs("4:7:2"), Some((4, 7, 2)));
        for bad in ["", "4:7", "4:7:2:1", "4:x:2", "-1:0:0"] {
            assert_eq!(parse_seqs(bad), None, "{bad:?}");
        }
    }
}

//! Agreeing on a new communicator's context id, as a schedule.
//!
//! Every member proposes the lowest context id it knows to be free; the
//! new communicator takes the largest proposal, which is free everywhere.
//! Over an intracommunicator that is an allreduce-max; over an
//! intercommunicator both groups take part: each group reduces locally,
//! the two leaders (local rank 0) swap their maxima, and each leader
//! broadcasts the larger to its group. As a schedule it serves the
//! blocking and the nonblocking calls alike (MPI_Comm_dup, MPI_Comm_idup),
//! so a nonblocking one never waits for the other group inside the call.

use super::basic::{allreduce_reduce_bcast, bcast_binomial};
use crate::sched::{CommView, Reducer, Schedule, Step};
use gridmpi_datatype::{Datatype, UserBuf};
use std::sync::Arc;

/// `inout = max(left, inout)` over native-endian u32s.
pub struct MaxU32;

impl Reducer for MaxU32 {
    unsafe fn reduce(&self, left: *const u8, inout: *mut u8, count: u64, _dt: &Arc<Datatype>) -> Result<(), String> {
        // `count` MPI_BYTEs holding count / 4 u32s.
        for i in 0..(count / 4) as usize {
            let a = (left as *const u32).add(i).read_unaligned();
            let p = (inout as *mut u32).add(i);
            p.write_unaligned(a.max(p.read_unaligned()));
        }
        Ok(())
    }

    fn is_commutative(&self) -> bool {
        true
    }
}

/// The largest of every member's u32s in `value` (4 bytes each; word by
/// word), left in `value` everywhere. `remote`/`local`: the
/// intercommunicator's views, or `local` None for an intracommunicator
/// (`remote` is then its view).
pub fn max_u32(remote: CommView, local: Option<CommView>, tag: i32, value: UserBuf) -> Schedule {
    let max: Arc<dyn Reducer> = Arc::new(MaxU32);
    let bytes = value.len();
    let Some(local) = local else {
        let mut s = Schedule::new(remote.clone(), tag);
        let tmp = s.temp_bytes(bytes);
        s.append(allreduce_reduce_bcast(remote, tag, value, tmp, max));
        return s;
    };
    let mut s = Schedule::new_inter(remote, local.clone(), tag);
    let tmp = s.temp_bytes(bytes);
    s.append_local(allreduce_reduce_bcast(local.clone(), tag, value.clone(), tmp.clone(), max.clone()));
    if local.rank == 0 {
        let theirs = s.temp_bytes(bytes);
        let r = s.round();
        r.comm.push(Step::Send { to: 0, buf: value.clone() });
        r.comm.push(Step::Recv { from: 0, buf: theirs.clone() });
        s.round().local.push(Step::Reduce { op: max, left: theirs, inout: value.clone() });
    }
    s.append_local(bcast_binomial(local, tag, value, 0));
    s.prune();
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::sim;

    fn cell(v: &mut u32) -> UserBuf {
        // SAFETY: the cell outlives the simulated run.
        unsafe { UserBuf::new(v as *mut u32 as *mut u8, 4, crate::sched::byte_type()) }
    }

    #[test]
    fn intra_members_agree_on_the_largest_proposal() {
        for n in [1, 2, 3, 5, 8] {
            for seed in 0..10 {
                let mut v: Vec<u32> = (0..n).map(|p| ((p as u64 * 7 + seed) % 11) as u32 * 2).collect();
                let want = *v.iter().max().unwrap();
                let cells: Vec<UserBuf> = v.iter_mut().map(cell).collect();
                let errs = sim::run(n, seed, |p| max_u32(sim::view(p, n), None, 3, cells[p].clone()));
                assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                assert!(v.iter().all(|&x| x == want), "n {n} seed {seed}: {v:?}");
            }
        }
    }

    #[test]
    fn both_groups_of_an_intercommunicator_agree() {
        for (a, b) in [(1, 1), (1, 3), (2, 2), (3, 4)] {
            for seed in 0..10 {
                let n = a + b;
                // The largest proposal is in either group, at any rank.
                let top = (seed as usize * 5) % n;
                let mut v: Vec<u32> = (0..n).map(|p| if p == top { 100 } else { (p as u32) * 2 }).collect();
                let cells: Vec<UserBuf> = v.iter_mut().map(cell).collect();
                let errs = sim::run_opts(n, seed, |p| {
                    let (remote, local) = sim::inter_views(p, a, b);
                    max_u32(remote, Some(local), 9, cells[p].clone())
                }, true);
                assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                assert!(v.iter().all(|&x| x == 100), "groups {a}+{b} seed {seed}: {v:?}");
            }
        }
    }
}

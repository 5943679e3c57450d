//! Barrier.

use super::util::nothing;
use crate::sched::{CommView, Schedule, Step};

pub use super::basic::barrier_dissemination as dissemination;

/// Binomial fan-in to rank 0 then fan-out: 2 ceil(log2 p) message steps on
/// the critical path, 2(p-1) zero-byte messages in all (dissemination sends
/// p ceil(log2 p)). Chosen only when forced: dissemination has half the
/// latency.
pub fn tree(view: CommView, tag: i32) -> Schedule {
    let mut s = Schedule::new(view.clone(), tag);
    s.append(fan_in(view.clone(), tag));
    s.append(fan_out(view, tag));
    s
}

/// Zero-byte binomial fan-in to rank 0: a rank signals its parent once its
/// whole subtree has signalled it.
pub fn fan_in(view: CommView, tag: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let mut children = Vec::new();
    let mut mask = 1;
    while mask < size && rank & mask == 0 {
        if rank + mask < size {
            children.push(Step::Recv { from: rank + mask, buf: nothing() });
        }
        mask <<= 1;
    }
    if !children.is_empty() {
        s.round().comm = children;
    }
    if rank != 0 {
        s.round().comm.push(Step::Send { to: rank - (rank & -rank), buf: nothing() });
    }
    s
}

/// Zero-byte binomial fan-out from rank 0.
pub fn fan_out(view: CommView, tag: i32) -> Schedule {
    let (rank, size) = (view.rank, view.size);
    let mut s = Schedule::new(view, tag);
    let low = if rank == 0 { super::util::ceil_pow2(size) } else { rank & -rank };
    if rank != 0 {
        s.round().comm.push(Step::Recv { from: rank - low, buf: nothing() });
    }
    let mut sends = Vec::new();
    let mut mask = low >> 1;
    while mask > 0 {
        if rank + mask < size {
            sends.push(Step::Send { to: rank + mask, buf: nothing() });
        }
        mask >>= 1;
    }
    if !sends.is_empty() {
        s.round().comm = sends;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::sim;

    #[test]
    fn barriers_complete() {
        for &n in sim::PROCS.iter().chain(&[16, 13]) {
            for seed in 0..20 {
                for algo in 0..2 {
                    let errs = sim::run_opts(n, seed, |r| {
                        let v = sim::view(r, n);
                        if algo == 0 {
                            super::dissemination(v, 7)
                        } else {
                            super::tree(v, 7)
                        }
                    }, true);
                    assert!(errs.iter().all(|e| e.is_none()));
                }
            }
        }
    }
}

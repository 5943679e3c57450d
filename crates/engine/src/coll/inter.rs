//! Intercommunicator collectives. A schedule here has two views: `remote`
//! (the other group, on the intercommunicator's context) and `local` (our
//! group, on its local context). Data crosses between the groups either
//! directly (every process with every remote process) or through the two
//! groups' rank-0 leaders, with intracommunicator algorithms inside each
//! group.

use super::util::{items, nothing, offsets};
use super::{barrier, bcast, reduce, scatter};
use gridmpi_datatype::UserBuf;
use crate::sched::{CommView, Reducer, Schedule, Step};
use std::sync::Arc;

/// Our part in a rooted intercommunicator collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// We are the root (MPI_ROOT).
    Root,
    /// Another process of our group is the root (MPI_PROC_NULL): nothing to do.
    Idle,
    /// The root is this rank of the remote group.
    Remote(i32),
}

fn push(s: &mut Schedule, step: Step) {
    let empty = match &step {
        Step::Send { buf, .. } | Step::Recv { buf, .. } => buf.is_empty(),
        _ => false,
    };
    if !empty {
        s.last_round().comm.push(step);
    }
}

/// Barrier: each group fans in to its leader, the leaders swap a message,
/// each leader fans out. 4 ceil(log2 p) + 1 steps, ~2 messages per process.
pub fn barrier(remote: CommView, local: CommView, tag: i32) -> Schedule {
    let rank = local.rank;
    let mut s = Schedule::new_inter(remote, local.clone(), tag);
    s.append_local(barrier::fan_in(local.clone(), tag));
    if rank == 0 {
        let r = s.round();
        r.comm.push(Step::Send { to: 0, buf: nothing() });
        r.comm.push(Step::Recv { from: 0, buf: nothing() });
    }
    s.append_local(barrier::fan_out(local, tag));
    s
}

/// Broadcast: the root sends to the remote leader, which broadcasts in its
/// group (binomial). ceil(log2 q) + 1 steps.
pub fn bcast(remote: CommView, local: CommView, tag: i32, buf: UserBuf, role: Role) -> Schedule {
    let rank = local.rank;
    let mut s = Schedule::new_inter(remote, local.clone(), tag);
    match role {
        Role::Idle => {}
        Role::Root => push(&mut s, Step::Send { to: 0, buf }),
        Role::Remote(root) => {
            if rank == 0 {
                s.round();
                push(&mut s, Step::Recv { from: root, buf: buf.clone() });
            }
            s.append_local(bcast::binomial(local, tag, buf, 0));
        }
    }
    s.prune();
    s
}

/// Gather(v): every remote process sends its block straight to the root.
/// One step. `blocks[r]` (root) is where remote rank r's data goes.
pub fn gather(remote: CommView, local: CommView, tag: i32, send: Option<UserBuf>, blocks: &[UserBuf], role: Role) -> Schedule {
    let mut s = Schedule::new_inter(remote, local, tag);
    s.round();
    match role {
        Role::Idle => {}
        Role::Root => {
            for (r, b) in blocks.iter().enumerate() {
                push(&mut s, Step::Recv { from: r as i32, buf: b.clone() });
            }
        }
        Role::Remote(root) => push(&mut s, Step::Send { to: root, buf: send.expect("the send buffer") }),
    }
    s.prune();
    s
}

/// Scatter(v): the root sends every remote process its block. One step.
pub fn scatter(remote: CommView, local: CommView, tag: i32, blocks: &[UserBuf], recv: Option<UserBuf>, role: Role) -> Schedule {
    let mut s = Schedule::new_inter(remote, local, tag);
    s.round();
    match role {
        Role::Idle => {}
        Role::Root => {
            for (r, b) in blocks.iter().enumerate() {
                push(&mut s, Step::Send { to: r as i32, buf: b.clone() });
            }
        }
        Role::Remote(root) => push(&mut s, Step::Recv { from: root, buf: recv.expect("the receive buffer") }),
    }
    s.prune();
    s
}

/// Allgather(v): every process sends its block to every remote process and
/// receives theirs into `blocks[r]`. One step, q messages each way.
pub fn allgather(remote: CommView, local: CommView, tag: i32, mine: UserBuf, blocks: &[UserBuf]) -> Schedule {
    let q = remote.size;
    let first = (local.rank % q.max(1)) as usize;
    let mut s = Schedule::new_inter(remote, local, tag);
    s.round();
    for (r, b) in blocks.iter().enumerate() {
        push(&mut s, Step::Recv { from: r as i32, buf: b.clone() });
    }
    // Start at a different remote process on each rank, to spread the load.
    for k in 0..q as usize {
        push(&mut s, Step::Send { to: ((first + k) % q as usize) as i32, buf: mine.clone() });
    }
    s.prune();
    s
}

/// Alltoall(v,w): every process exchanges its blocks with every remote
/// process. One step, q messages each way.
pub fn alltoall(remote: CommView, local: CommView, tag: i32, send: &[UserBuf], recv: &[UserBuf]) -> Schedule {
    let q = remote.size as usize;
    let first = local.rank as usize % q.max(1);
    let mut s = Schedule::new_inter(remote, local, tag);
    s.round();
    for (r, b) in recv.iter().enumerate() {
        push(&mut s, Step::Recv { from: r as i32, buf: b.clone() });
    }
    for k in 0..q {
        let to = (first + k) % q;
        push(&mut s, Step::Send { to: to as i32, buf: send[to].clone() });
    }
    s.prune();
    s
}

/// Reduce: the remote group reduces to its leader (binomial, rank order),
/// which sends the result to the root.
#[allow(clippy::too_many_arguments)]
pub fn reduce(remote: CommView, local: CommView, tag: i32, input: Option<UserBuf>, recv: Option<UserBuf>, op: Arc<dyn Reducer>, role: Role) -> Schedule {
    let rank = local.rank;
    let mut s = Schedule::new_inter(remote, local.clone(), tag);
    match role {
        Role::Idle => {}
        Role::Root => push(&mut s, Step::Recv { from: 0, buf: recv.expect("the root's receive buffer") }),
        Role::Remote(root) => {
            let input = input.expect("the send buffer");
            let work = s.temp_typed(input.count(), input.datatype());
            s.append_local(reduce::binomial(local, tag, input, (rank == 0).then(|| work.clone()), op, 0));
            if rank == 0 {
                s.round();
                push(&mut s, Step::Send { to: root, buf: work });
            }
        }
    }
    s.prune();
    s
}

/// Allreduce: each group reduces to its leader (rank order), the leaders
/// swap results, each broadcasts the other group's result in its group.
pub fn allreduce(remote: CommView, local: CommView, tag: i32, input: UserBuf, recv: UserBuf, op: Arc<dyn Reducer>) -> Schedule {
    let rank = local.rank;
    let mut s = Schedule::new_inter(remote, local.clone(), tag);
    let work = s.temp_typed(input.count(), input.datatype());
    s.append_local(reduce::binomial(local.clone(), tag, input, (rank == 0).then(|| work.clone()), op, 0));
    if rank == 0 {
        s.round();
        push(&mut s, Step::Send { to: 0, buf: work });
        push(&mut s, Step::Recv { from: 0, buf: recv.clone() });
    }
    s.append_local(bcast::binomial(local, tag, recv, 0));
    s.prune();
    s
}

/// Reduce_scatter(_block): each group reduces its vectors to its leader,
/// the leaders swap results, and each leader scatters the other group's
/// result over its group by `counts` (our group's counts).
pub fn reduce_scatter(remote: CommView, local: CommView, tag: i32, input: UserBuf, recv: UserBuf, counts: &[u64], op: Arc<dyn Reducer>) -> Schedule {
    let rank = local.rank;
    let offs = offsets(counts);
    let n = offs[counts.len()];
    let dt = input.datatype().clone();
    let mut s = Schedule::new_inter(remote, local.clone(), tag);
    let mine = s.temp_typed(n, &dt);
    let theirs = s.temp_typed(n, &dt);
    s.append_local(reduce::binomial(local.clone(), tag, items(&input, 0, n), (rank == 0).then(|| mine.clone()), op, 0));
    if rank == 0 {
        s.round();
        push(&mut s, Step::Send { to: 0, buf: mine });
        push(&mut s, Step::Recv { from: 0, buf: theirs.clone() });
    }
    let blocks: Vec<UserBuf> = if rank == 0 { (0..counts.len()).map(|i| items(&theirs, offs[i], counts[i])).collect() } else { Vec::new() };
    s.append_local(scatter::linear(local, tag, &blocks, Some(recv), 0));
    s.prune();
    s
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::super::sim::{self, Rng, TBuf};
    use super::Role;

    /// Group sizes to try: (a, b).
    const GROUPS: &[(usize, usize)] = &[(1, 1), (1, 3), (2, 2), (3, 1), (3, 4), (4, 3), (2, 5)];

    #[test]
    fn barrier_waits_for_the_other_group() {
        for &(a, b) in GROUPS {
            for seed in 0..20 {
                let errs = sim::run_opts(a + b, seed, |p| {
                    let (remote, local) = sim::inter_views(p, a, b);
                    super::barrier(remote, local, 5)
                }, true);
                assert!(errs.iter().all(|e| e.is_none()));
            }
        }
    }

    #[test]
    fn rooted_collectives_move_the_data() {
        let mut rng = Rng(37);
        for &(a, b) in GROUPS {
            for &count in &[0u64, 1, 7, 100] {
                for what in 0..4 {
                    let seed = rng.next() % 1000;
                    let n = a + b;
                    // Root: a rank of group A; group B the leaves.
                    let root = rng.below(a as u64) as usize;
                    let dt = sim::test_type(rng.below(2));
                    let (op, f) = sim::test_op(rng.below(2));
                    let mut bufs: Vec<TBuf> = (0..n).map(|_| TBuf::new(count, &dt)).collect();
                    let mut big: Vec<TBuf> = (0..n).map(|_| TBuf::new(count * b as u64, &dt)).collect();
                    let els = bufs[0].elements();
                    let mut expect: Vec<Vec<u64>> = bufs.iter().map(|b| b.mem.clone()).collect();
                    let mut expect_big: Vec<Vec<u64>> = big.iter().map(|b| b.mem.clone()).collect();
                    match what {
                        0 => {
                            // bcast from root
                            let v: Vec<u64> = (0..els).map(|i| sim::value(root, i, seed)).collect();
                            bufs[root].set(&v);
                            for (p, e) in expect.iter_mut().enumerate() {
                                if p >= a || p == root {
                                    *e = bufs[0].expect(&v);
                                }
                            }
                        }
                        1 | 3 => {
                            // gather to root (1) / reduce to root (3): leaves' inputs in bufs
                            let mut all = Vec::new();
                            let mut red: Vec<u64> = Vec::new();
                            for q in 0..b {
                                let v: Vec<u64> = (0..els).map(|i| sim::value(q, i, seed)).collect();
                                bufs[a + q].set(&v);
                                expect[a + q] = bufs[a + q].mem.clone();
                                red = if q == 0 { v.clone() } else { red.iter().zip(&v).map(|(x, y)| f(*x, *y)).collect() };
                                all.extend(v);
                            }
                            if what == 1 {
                                expect_big[root] = big[0].expect(&all);
                            } else {
                                expect[root] = bufs[0].expect(&red);
                            }
                        }
                        _ => {
                            // scatter from root
                            let all: Vec<u64> = (0..big[0].elements()).map(|i| sim::value(root, i, seed)).collect();
                            big[root].set(&all);
                            expect_big[root] = big[root].mem.clone();
                            for q in 0..b {
                                expect[a + q] = bufs[0].expect(&all[q * els..(q + 1) * els]);
                            }
                        }
                    }
                    let blocks: Vec<_> = (0..b).map(|q| big[root].items(q as u64 * count, count)).collect();
                    let errs = sim::run(n, seed, |p| {
                        let (remote, local) = sim::inter_views(p, a, b);
                        let role = if p == root { Role::Root } else if p < a { Role::Idle } else { Role::Remote(root as i32) };
                        let buf = bufs[p].ub();
                        let bl = if p == root { blocks.clone() } else { Vec::new() };
                        match what {
                            0 => super::bcast(remote, local, 9, buf, role),
                            1 => super::gather(remote, local, 9, Some(buf), &bl, role),
                            2 => super::scatter(remote, local, 9, &bl, Some(buf), role),
                            _ => super::reduce(remote, local, 9, Some(buf.clone()), Some(buf), op.clone(), role),
                        }
                    });
                    assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                    for p in 0..n {
                        assert!(bufs[p].mem == expect[p], "what {what} groups {a}+{b} count {count} process {p} seed {seed}");
                        assert!(big[p].mem == expect_big[p], "what {what} groups {a}+{b} count {count} process {p} seed {seed} (big)");
                    }
                }
            }
        }
    }

    #[test]
    fn all_to_all_collectives_cross_groups() {
        let mut rng = Rng(41);
        for &(a, b) in GROUPS {
            for &count in &[0u64, 1, 5, 64] {
                for what in 0..4 {
                    let seed = rng.next() % 1000;
                    let n = a + b;
                    let size = |p: usize| if p < a { a } else { b };
                    let rsize = |p: usize| if p < a { b } else { a };
                    let lrank = |p: usize| if p < a { p } else { p - a };
                    let other = |p: usize| if p < a { a..n } else { 0..a };
                    let dt = sim::u64_type();
                    let (op, f) = sim::test_op(rng.below(2));
                    // what 0 allgather, 1 alltoall, 2 allreduce, 3 reduce_scatter_block
                    // (the two groups' totals must agree: each group's block is
                    // count * the other group's size).
                    let rc = |p: usize| count * rsize(p) as u64;
                    let sizes = |p: usize| match what {
                        0 => (count, count * rsize(p) as u64),
                        1 => (count * rsize(p) as u64, count * rsize(p) as u64),
                        2 => (count, count),
                        _ => (count * (a * b) as u64, rc(p)),
                    };
                    let mut ins: Vec<TBuf> = (0..n).map(|p| TBuf::new(sizes(p).0, &dt)).collect();
                    let mut outs: Vec<TBuf> = (0..n).map(|p| TBuf::new(sizes(p).1, &dt)).collect();
                    let c = count as usize;
                    let val = |p: usize, i: usize| sim::value(p, i, seed);
                    for p in 0..n {
                        let v: Vec<u64> = (0..ins[p].elements()).map(|i| val(p, i)).collect();
                        ins[p].set(&v);
                    }
                    let expects: Vec<Vec<u64>> = (0..n)
                        .map(|p| {
                            let mut e = outs[p].get();
                            match what {
                                0 => {
                                    for (k, q) in other(p).enumerate() {
                                        for i in 0..c {
                                            e[k * c + i] = val(q, i);
                                        }
                                    }
                                }
                                1 => {
                                    for (k, q) in other(p).enumerate() {
                                        for i in 0..c {
                                            e[k * c + i] = val(q, lrank(p) * c + i);
                                        }
                                    }
                                }
                                _ => {
                                    let off = if what == 2 { 0 } else { lrank(p) * rc(p) as usize };
                                    for i in 0..e.len() {
                                        let mut it = other(p);
                                        let first = it.next().unwrap();
                                        e[i] = it.fold(val(first, off + i), |acc, q| f(acc, val(q, off + i)));
                                    }
                                }
                            }
                            outs[p].expect(&e)
                        })
                        .collect();
                    let errs = sim::run(n, seed, |p| {
                        let (remote, local) = sim::inter_views(p, a, b);
                        let q = rsize(p) as u64;
                        match what {
                            0 => {
                                let blocks: Vec<_> = (0..q).map(|k| outs[p].items(k * count, count)).collect();
                                let mine = ins[p].items(0, count);
                                super::allgather(remote, local, 9, mine, &blocks)
                            }
                            1 => {
                                let sb: Vec<_> = (0..q).map(|k| ins[p].items(k * count, count)).collect();
                                let rb: Vec<_> = (0..q).map(|k| outs[p].items(k * count, count)).collect();
                                super::alltoall(remote, local, 9, &sb, &rb)
                            }
                            2 => super::allreduce(remote, local, 9, ins[p].ub(), outs[p].ub(), op.clone()),
                            _ => {
                                let counts = vec![rc(p); size(p)];
                                super::reduce_scatter(remote, local, 9, ins[p].ub(), outs[p].ub(), &counts, op.clone())
                            }
                        }
                    });
                    assert!(errs.iter().all(|e| e.is_none()), "{errs:?}");
                    for p in 0..n {
                        assert!(outs[p].mem == expects[p], "what {what} groups {a}+{b} count {count} process {p} seed {seed}");
                    }
                }
            }
        }
    }
}

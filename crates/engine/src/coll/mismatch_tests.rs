//! Ranks that disagree on a collective's sizes (an erroneous program, say
//! a root that sends 1 item to ranks that expect 3): every rank that
//! receives wrong data fails the call, a rank that forwards passes the
//! failure on, and nobody waits for ever ([`sim::run`] panics on a
//! deadlock).

use super::sim::{self, TBuf};
use super::host::{Host, HostOp};
use gridmpi_datatype::UserBuf;

/// Items at the root and at the others, both ways round.
const SIZES: [(u64, u64); 2] = [(1, 3), (3, 1)];

#[test]
fn a_bcast_whose_root_sends_another_size_fails_every_other_rank() {
    let dt = sim::u64_type();
    for n in 2..=9usize {
        for (at_root, elsewhere) in SIZES {
            let root = n / 2;
            let count = |r: usize| if r == root { at_root } else { elsewhere };
            let mut bufs: Vec<TBuf> = (0..n).map(|r| TBuf::new(count(r), &dt)).collect();
            let ubs: Vec<UserBuf> = bufs.iter_mut().map(|b| b.ub()).collect();
            let errs = sim::run(n, n as u64, |r| super::bcast_binomial(sim::view(r, n), 1, ubs[r].clone(), root as i32));
            for (r, e) in errs.iter().enumerate().filter(|&(r, _)| r != root) {
                let e = e.as_deref().unwrap_or_else(|| panic!("n {n}, root {at_root} items, rank {r} ({elsewhere}) saw no error"));
                assert!(e.contains("truncated") || e.contains("came up short"), "{e}");
            }
        }
    }
}

#[test]
fn a_scatter_whose_root_sends_short_blocks_fails_every_other_rank() {
    let dt = sim::u64_type();
    for n in 2..=9usize {
        for binomial in [false, true] {
            let root = 0;
            let mut send = TBuf::new(n as u64, &dt);
            let mut recvs: Vec<TBuf> = (0..n).map(|_| TBuf::new(3, &dt)).collect();
            let blocks: Vec<UserBuf> = (0..n as u64).map(|j| send.items(j, 1)).collect();
            let ubs: Vec<UserBuf> = recvs.iter_mut().map(|b| b.ub()).collect();
            let errs = sim::run(n, 3 + n as u64, |r| {
                let (v, recv) = (sim::view(r, n), Some(ubs[r].clone()));
                let bl = if r == root { blocks.clone() } else { Vec::new() };
                // The block size each rank believes in: the root's is 1 item.
                let block = if r == root { 8 } else { 24 };
                if binomial {
                    super::scatter::binomial(v, 2, &bl, recv, block, root as i32)
                } else {
                    super::scatter::linear(v, 2, &bl, recv, root as i32)
                }
            });
            for (r, e) in errs.iter().enumerate().skip(1) {
                assert!(e.is_some(), "n {n}, binomial {binomial}: rank {r} saw no error");
            }
        }
    }
}

#[test]
fn an_allreduce_with_a_rank_of_another_count_ends_in_an_error() {
    let dt = sim::u64_type();
    let (op, _) = sim::test_op(0);
    for n in 2..=9usize {
        for (first, others) in SIZES {
            let count = |r: usize| if r == 0 { first } else { others };
            let mut bufs: Vec<TBuf> = (0..n).map(|r| TBuf::new(count(r), &dt)).collect();
            let ubs: Vec<UserBuf> = bufs.iter_mut().map(|b| b.ub()).collect();
            let errs = sim::run(n, 11 * n as u64, |r| super::allreduce::recursive_doubling(sim::view(r, n), 1, None, ubs[r].clone(), op.clone()));
            assert!(errs[0].is_some() || errs[1].is_some(), "n {n}: rank 0 ({first}) and its partner ({others}) saw no error: {errs:?}");
        }
    }
}

#[test]
fn members_of_a_host_area_that_disagree_on_the_size_all_fail_and_the_area_goes_on() {
    let dt = sim::u64_type();
    let (op, _) = sim::test_op(0);
    for n in [2usize, 3, 5] {
        let areas = super::host::tests::hosts(n, 256);
        let h = |r: usize, op: u64| Host { op: HostOp { area: areas[r].clone(), op }, slot: 256 };
        let mut bufs: Vec<TBuf> = (0..n).map(|r| TBuf::new(if r == n - 1 { 2 } else { 4 }, &dt)).collect();
        let ubs: Vec<UserBuf> = bufs.iter_mut().map(|b| b.ub()).collect();
        let errs = sim::run(n, 1, |r| super::host::allreduce(sim::view(r, n), 1, &h(r, 0), None, ubs[r].clone(), op.clone(), dt.clone()));
        for (r, e) in errs.iter().enumerate() {
            let e = e.as_deref().unwrap_or_else(|| panic!("n {n}: member {r} saw no error"));
            assert!(e.contains("disagree") && e.contains("32 bytes") && e.contains("16 bytes"), "{e}");
        }
        // A gather root whose send block is not its receive block.
        let mut mine: Vec<TBuf> = (0..n).map(|r| TBuf::new(if r == 0 { 2 } else { 1 }, &dt)).collect();
        let mut all = TBuf::new(n as u64, &dt);
        let blocks: Vec<UserBuf> = (0..n as u64).map(|j| all.items(j, 1)).collect();
        let mine: Vec<UserBuf> = mine.iter_mut().map(|b| b.ub()).collect();
        let errs = sim::run(n, 2, |r| {
            let bl = if r == 0 { blocks.clone() } else { Vec::new() };
            super::host::gather(sim::view(r, n), 2, &h(r, 1), Some(mine[r].clone()), &bl, 0)
        });
        assert!(errs.iter().all(|e| e.as_deref().is_some_and(|e| e.contains("a rank that sends blocks of another size"))), "{errs:?}");
        // Sizes that agree work on both parities afterwards.
        for k in 2..4 {
            let mut bufs: Vec<TBuf> = (0..n).map(|_| TBuf::new(4, &dt)).collect();
            let ubs: Vec<UserBuf> = bufs.iter_mut().map(|b| b.ub()).collect();
            let errs = sim::run(n, k, |r| super::host::allreduce(sim::view(r, n), 3, &h(r, k), None, ubs[r].clone(), op.clone(), dt.clone()));
            assert!(errs.iter().all(|e| e.is_none()), "op {k}: {errs:?}");
        }
    }
}

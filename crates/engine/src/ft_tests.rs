//! Fault tolerance on the simulated network (ft/): failed processes,
//! revoked communicators and agreements, with deaths at random moments and
//! the news of them reaching each survivor at its own random moment.

use crate::ft::agree::AgreeView;
use crate::p2p::*;
use crate::request::ErrorKind;
use crate::sim::{Rng, Sim};
use crate::{PeerParams, Pid};
use gridmpi_datatype::{BasicType, Datatype, UserBuf};
use std::sync::Arc;

fn bytes(v: &mut [u8]) -> UserBuf {
    let t = Arc::new(Datatype::basic(BasicType::Byte));
    // SAFETY: the tests keep their buffers alive until the requests finish.
    unsafe { UserBuf::new(v.as_mut_ptr(), v.len() as u64, t) }
}

fn params() -> PeerParams {
    PeerParams { eager_limit: 1024, max_data_frame: 4096, single_copy: false, single_copy_min: u64::MAX }
}

fn view(n: usize, rank: usize) -> AgreeView {
    AgreeView { ctx: 40, pids: (0..n as Pid).collect::<Vec<_>>().into(), rank: rank as i32 }
}

#[test]
fn an_agreement_without_failures_ands_the_flags_and_maxes_the_values() {
    for seed in 1..=50u64 {
        let n = 2 + (seed % 6) as usize;
        let mut net = Sim::new(n, seed, params(), 1 << 20);
        let reqs: Vec<_> = (0..n).map(|i| net.engines[i].start_agreement(view(n, i), 0, !(1u32 << i), 10 * i as u64)).collect();
        net.run();
        for i in 0..n {
            assert!(net.engines[i].is_complete(reqs[i]), "seed {seed}: rank {i} did not finish");
            let v = net.engines[i].take_agreement(reqs[i]).unwrap();
            let want = (0..n).fold(u32::MAX, |f, j| f & !(1 << j));
            assert_eq!((v.flag, v.max), (want, 10 * (n as u64 - 1)), "seed {seed}");
            assert!(v.failed_ranks().is_empty());
        }
    }
}

#[test]
fn survivors_agree_on_one_value_whoever_dies_and_whenever_they_hear_of_it() {
    let only: Option<u64> = std::env::var("SIM_SEED").ok().and_then(|v| v.parse().ok());
    for seed in 1..=400u64 {
        if only.is_some_and(|o| o != seed) {
            continue;
        }
        let mut rng = Rng(seed * 7919 + 3);
        let n = 3 + rng.below(5) as usize;
        let mut net = Sim::new(n, seed, params(), 1 << 20);
        // One to n-1 deaths, coordinators (low ranks) more often than not.
        let deaths = 1 + rng.below(n as u64 - 1) as usize;
        let mut victims: Vec<usize> = Vec::new();
        while victims.len() < deaths {
            let v = if rng.below(2) == 0 { victims.len() } else { rng.below(n as u64) as usize };
            if !victims.contains(&v) {
                victims.push(v);
            }
        }
        // Each death at a random step; each survivor hears of it later.
        let mut plan: Vec<(u64, usize, Option<usize>)> = Vec::new();
        for &v in &victims {
            let t = rng.below(40);
            plan.push((t, v, None));
            for s in 0..n {
                plan.push((t + 1 + rng.below(60), v, Some(s)));
            }
        }
        plan.sort_by_key(|p| p.0);
        let flags: Vec<u32> = (0..n).map(|_| rng.next() as u32 | 0xff00_0000).collect();
        let mut reqs = vec![None; n];
        // Ranks start the agreement at different moments, too.
        let starts: Vec<u64> = (0..n).map(|_| rng.below(30)).collect();
        let mut step = 0u64;
        loop {
            for i in 0..n {
                if starts[i] == step && !net.dead[i] && reqs[i].is_none() {
                    reqs[i] = Some(net.engines[i].start_agreement(view(n, i), 3, flags[i], i as u64));
                }
            }
            while let Some(&(t, v, who)) = plan.first() {
                if t > step {
                    break;
                }
                plan.remove(0);
                match who {
                    None => net.kill(v),
                    Some(s) if !net.dead[s] => net.engines[s].handle_proc_failed(v as Pid),
                    Some(_) => {}
                }
            }
            let moved = net.step();
            step += 1;
            if !moved && plan.is_empty() && step > 100 {
                break;
            }
        }
        net.run();
        let mut decided = None;
        for i in (0..n).filter(|&i| !net.dead[i]) {
            let r = reqs[i].expect("survivors started");
            assert!(net.engines[i].is_complete(r), "seed {seed}: survivor {i} did not finish (victims {victims:?})");
            let v = net.engines[i].take_agreement(r).unwrap();
            // Every survivor contributed; the AND covers at least them.
            for j in (0..n).filter(|&j| !net.dead[j]) {
                assert_eq!(v.flag & flags[j], v.flag, "seed {seed}: rank {j}'s flag is not in the AND");
                assert!(!v.failed_ranks().contains(&(j as i32)), "seed {seed}: survivor {j} reported failed");
            }
            match &decided {
                None => decided = Some(v),
                Some(d) => assert_eq!(d, &v, "seed {seed}: survivors disagree (victims {victims:?})"),
            }
        }
    }
}

#[test]
fn a_failure_fails_sends_to_it_and_receives_it_was_feeding() {
    for seed in 1..=30u64 {
        let mut net = Sim::new(3, seed, params(), 1 << 20);
        let mut big = vec![7u8; 100_000];
        let mut sink = vec![0u8; 100_000];
        // 0 -> 2 rendezvous send, 1 <- 2 rendezvous receive (matched), and
        // a receive on 1 from 2 not yet matched (the shell fails those).
        let s = net.engines[0].isend(SendArgs { ctx: 0, src: 0, dest: 2, tag: 1, buf: bytes(&mut big), mode: SendMode::Standard });
        let mut src2 = vec![3u8; 100_000];
        net.engines[2].isend(SendArgs { ctx: 0, src: 2, dest: 1, tag: 2, buf: bytes(&mut src2), mode: SendMode::Standard });
        let r = net.engines[1].irecv(RecvArgs { ctx: 0, src: Some(2), tag: Some(2), buf: bytes(&mut sink) });
        let mut later = vec![0u8; 8];
        let r2 = net.engines[1].irecv(RecvArgs { ctx: 0, src: Some(2), tag: Some(9), buf: bytes(&mut later) });
        for _ in 0..(3 + seed % 5) {
            net.step();
        }
        net.kill(2);
        for i in 0..2 {
            net.engines[i].handle_proc_failed(2);
        }
        net.engines[1].fail_posted_from(0, 2);
        net.run();
        let st = net.engines[0].take(s).expect("the send to the failed process finished");
        assert_eq!(st.error, Some(ErrorKind::ProcFailed), "seed {seed}");
        let st = net.engines[1].take(r2).expect("the unmatched receive finished");
        assert_eq!(st.error, Some(ErrorKind::ProcFailed), "seed {seed}");
        // The matched one either got everything before the death or failed.
        let st = net.engines[1].take(r).expect("the matched receive finished");
        assert!(st.error == Some(ErrorKind::ProcFailed) || (st.error.is_none() && sink == src2), "seed {seed}: {st:?}");
        // New sends to it fail at once.
        let mut b = [0u8; 4];
        let s = net.engines[0].isend(SendArgs { ctx: 0, src: 0, dest: 2, tag: 1, buf: bytes(&mut b), mode: SendMode::Standard });
        assert_eq!(net.engines[0].take(s).unwrap().error, Some(ErrorKind::ProcFailed));
    }
}

#[test]
fn a_revoked_communicator_fails_its_receives_and_releases_its_senders() {
    for seed in 1..=30u64 {
        let mut net = Sim::new(3, seed, params(), 1 << 20);
        let mut a = vec![0u8; 64];
        let r = net.engines[0].irecv(RecvArgs { ctx: 10, src: None, tag: None, buf: bytes(&mut a) });
        // A rendezvous send and a synchronous one from 2 that 0 never receives.
        let mut big = vec![1u8; 50_000];
        let mut small = vec![2u8; 16];
        net.engines[1].revoke(&[10, 11], &[0, 1, 2]);
        let s1 = net.engines[2].isend(SendArgs { ctx: 10, src: 2, dest: 0, tag: 5, buf: bytes(&mut big), mode: SendMode::Standard });
        let s2 = net.engines[2].isend(SendArgs { ctx: 10, src: 2, dest: 0, tag: 6, buf: bytes(&mut small), mode: SendMode::Sync });
        net.run();
        let st = net.engines[0].take(r).expect("the receive finished");
        // Revoked, unless one of 2's messages reached 0 before the revocation.
        assert!(st.error == Some(ErrorKind::Revoked) || (st.source == 2 && (st.tag == 5 || st.tag == 6)), "seed {seed}: {st:?}");
        assert!(net.engines[2].take(s1).is_some(), "seed {seed}: a rendezvous send to a revoked communicator hangs");
        assert!(net.engines[2].take(s2).is_some(), "seed {seed}: a synchronous send to a revoked communicator hangs");
        for e in &net.engines {
            assert!(e.is_revoked(10) && e.is_revoked(11));
        }
        assert_eq!(net.engines[0].take_revoked_news(), vec![10]);
    }
}

#[test]
fn a_bitmap_longer_than_the_communicator_names_no_rank_outside_it() {
    use gridmpi_wire::{AgreeStep, Frame, Header};
    let mut net = Sim::new(3, 7, params(), 1 << 20);
    // Rank 1 contributes to coordinator 0 with a bitmap of 64 ranks, all set.
    let h = Header::new(Frame::Agree { ctx: 40, seq: 0, step: AgreeStep::Contribute, flag: 1, max: 0 }, 8);
    net.engines[0].handle_frame(1, &h, &[0xff; 8]).unwrap();
    let r0 = net.engines[0].start_agreement(view(3, 0), 0, 1, 0);
    let r2 = net.engines[2].start_agreement(view(3, 2), 0, 1, 0);
    net.run();
    let v = net.engines[0].take_agreement(r0).expect("decided");
    assert!(v.failed_ranks().iter().all(|&r| r < 3), "{:?}", v.failed_ranks());
    assert!(net.engines[2].is_complete(r2));
}

/// A collective abandoned because a member failed must not return while a
/// message from a live member is still landing in its buffers: the caller
/// may free them (a schedule's own scratch buffers are freed with it), and
/// a transport writing there afterwards corrupts memory. Found as a heap
/// corruption in tests/c/ulfm_kill_collective_tcp.c, once in 400 runs.
#[test]
fn an_abandoned_collective_returns_only_after_its_matched_receives_landed() {
    use crate::sched::{CommView, Schedule, Step};
    for seed in 1..=40u64 {
        let mut net = Sim::new(3, seed, params(), 1 << 20);
        let view = CommView { ctx: 30, rank: 1, size: 3, pids: vec![0, 1, 2].into(), local_pids: None };
        let mut big = vec![0u8; 100_000];
        let mut small = vec![0u8; 8];
        let mut s = Schedule::new(view, 7);
        s.round().comm.extend([Step::Recv { from: 0, buf: bytes(&mut big) }, Step::Recv { from: 2, buf: bytes(&mut small) }]);
        let coll = net.engines[1].start_schedule(s);
        let mut src = vec![5u8; 100_000];
        let sent = net.engines[0].isend(SendArgs { ctx: 30, src: 0, dest: 1, tag: 7, buf: bytes(&mut src), mode: SendMode::Standard });
        // Until some of the data has landed (the receive is matched).
        let mut steps = 0;
        while !big.contains(&5) && net.step() {
            steps += 1;
        }
        assert!(big.contains(&5), "seed {seed}: no data moved in {steps} steps");
        net.kill(2);
        net.engines[1].handle_proc_failed(2);
        net.engines[0].handle_proc_failed(2);
        let mut seen_done: Option<Vec<u8>> = None;
        loop {
            net.settle_all();
            if seen_done.is_none() && net.engines[1].is_complete(coll) {
                seen_done = Some(big.clone());
            }
            if !net.step() {
                break;
            }
        }
        let at_return = seen_done.expect("the abandoned collective finished");
        let late = at_return.iter().zip(&big).filter(|(a, b)| a != b).count();
        assert!(late == 0, "seed {seed}: {late} bytes landed after the collective returned");
        assert!(big.iter().all(|&b| b == 5), "seed {seed}: the matched message did not land whole");
        assert_eq!(net.engines[1].take(coll).unwrap().error, Some(ErrorKind::ProcFailed), "seed {seed}");
        assert!(net.engines[0].take(sent).unwrap().error.is_none(), "seed {seed}");
    }
}

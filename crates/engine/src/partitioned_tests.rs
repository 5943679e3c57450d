//! Partitioned communication on the simulated network (sim.rs): random
//! partitionings on both sides, random readiness orders, several requests
//! per pair initialized in random orders, several rounds; every byte
//! checked, and MPI_Parrived never true before its bytes are there.

use crate::partitioned::{PartError, PartId, PrecvArgs, PsendArgs};
use crate::sim::{Rng, Sim};
use crate::{PeerParams, Pid, Status};
use gridmpi_datatype::{BasicType, Datatype, UserBuf};
use std::sync::Arc;

fn ints() -> Arc<Datatype> {
    Arc::new(Datatype::basic(BasicType::Int))
}

fn bytes() -> Arc<Datatype> {
    Arc::new(Datatype::basic(BasicType::Byte))
}

/// The value of byte `i` of round `round` of message `msg`.
fn pattern(msg: usize, round: usize, i: usize) -> u8 {
    (i.wrapping_mul(31) ^ msg.wrapping_mul(131) ^ round.wrapping_mul(17)) as u8
}

struct Msg {
    src: usize,
    dst: usize,
    tag: i32,
    /// Send side: partitions and bytes per partition.
    sparts: u64,
    /// Receive side partitions (same total; the datatype below).
    rparts: u64,
    /// Receive in ints (4-byte items) or bytes.
    recv_ints: bool,
    data: Vec<u8>,
    recv: Vec<u8>,
    send_id: Option<PartId>,
    recv_id: Option<PartId>,
}

/// The partition counts that split `n` items evenly (up to 64 of them).
fn divisors(n: u64) -> Vec<u64> {
    (1..=n.min(64)).filter(|d| n % d == 0).collect()
}

#[test]
fn random_partitioned_traffic_arrives_intact_in_init_order() {
    let only: Option<u64> = std::env::var("SIM_SEED").ok().and_then(|v| v.parse().ok());
    for seed in 1..=300u64 {
        if only.is_some_and(|o| o != seed) {
            continue;
        }
        let mut rng = Rng(seed * 0x9e37_79b9 + 11);
        let n = 1 + rng.below(3) as usize;
        let params = PeerParams { eager_limit: 2048, max_data_frame: 1500, single_copy: seed % 3 == 0, single_copy_min: 2049 };
        let mut net = Sim::new(n, seed, params, 1 << 16);
        let mut msgs: Vec<Msg> = Vec::new();
        for _ in 0..(1 + rng.below(6)) {
            let src = rng.below(n as u64) as usize;
            let dst = rng.below(n as u64) as usize;
            // Totals are multiples of 4 so both sides can use ints.
            let total = 4 * rng.pick(&[0u64, 1, 6, 12, 60, 600, 1500]);
            let sparts = if total == 0 { rng.pick(&[1u64, 3]) } else { rng.pick(&divisors(total)) };
            let recv_ints = rng.below(2) == 0;
            let rparts = if total == 0 {
                rng.pick(&[1u64, 2])
            } else if recv_ints {
                rng.pick(&divisors(total / 4))
            } else {
                rng.pick(&divisors(total))
            };
            msgs.push(Msg {
                src,
                dst,
                tag: rng.below(2) as i32,
                sparts,
                rparts,
                recv_ints,
                data: vec![0; total as usize],
                recv: vec![0; total as usize],
                send_id: None,
                recv_id: None,
            });
        }
        // Initialize sends and receives in a random interleaving, each side
        // in message order per (src, dst, tag): that is what pairs them.
        let mut order: Vec<(bool, usize)> = (0..msgs.len()).flat_map(|i| [(true, i), (false, i)]).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        // Keep the order of sends among themselves and receives among themselves.
        let mut sends: Vec<usize> = order.iter().filter(|(s, _)| *s).map(|&(_, i)| i).collect();
        let mut recvs: Vec<usize> = order.iter().filter(|(s, _)| !*s).map(|&(_, i)| i).collect();
        sends.sort();
        recvs.sort();
        let (mut si, mut ri) = (0, 0);
        for (is_send, _) in order {
            let i = if is_send {
                si += 1;
                sends[si - 1]
            } else {
                ri += 1;
                recvs[ri - 1]
            };
            let m = &mut msgs[i];
            if is_send {
                let total = m.data.len() as u64;
                // SAFETY: `m.data` outlives the simulation.
                let buf = unsafe { UserBuf::new(m.data.as_mut_ptr(), total, bytes()) };
                let id = net.engines[m.src]
                    .psend_init(PsendArgs { ctx: 8, src: m.src as i32, dest: Some(m.dst as Pid), tag: m.tag, buf, partitions: m.sparts })
                    .unwrap();
                m.send_id = Some(id);
            } else {
                let total = m.recv.len() as u64;
                // SAFETY: `m.recv` outlives the simulation.
                let buf = unsafe {
                    if m.recv_ints {
                        UserBuf::new(m.recv.as_mut_ptr(), total / 4, ints())
                    } else {
                        UserBuf::new(m.recv.as_mut_ptr(), total, bytes())
                    }
                };
                let id = net.engines[m.dst]
                    .precv_init(PrecvArgs { ctx: 8, src: Some(m.src as i32), tag: m.tag, buf, partitions: m.rparts })
                    .unwrap();
                m.recv_id = Some(id);
            }
            for _ in 0..rng.below(3) {
                net.step();
            }
        }
        for round in 0..3 {
            for (k, m) in msgs.iter_mut().enumerate() {
                for (i, b) in m.data.iter_mut().enumerate() {
                    *b = pattern(k, round, i);
                }
                m.recv.fill(0xee);
            }
            // Start everything (receives and sends in random order).
            let mut users = Vec::new();
            let mut starts: Vec<(bool, usize)> = (0..msgs.len()).flat_map(|i| [(true, i), (false, i)]).collect();
            for i in (1..starts.len()).rev() {
                starts.swap(i, rng.below(i as u64 + 1) as usize);
            }
            for (is_send, i) in starts {
                let m = &msgs[i];
                let (rank, id) = if is_send { (m.src, m.send_id.unwrap()) } else { (m.dst, m.recv_id.unwrap()) };
                users.push((is_send, i, net.engines[rank].part_start(id).unwrap()));
                net.step();
            }
            // Ready the partitions in random orders, checking arrivals as we go.
            let mut ready: Vec<(usize, u64)> = msgs.iter().enumerate().flat_map(|(i, m)| (0..m.sparts).map(move |p| (i, p))).collect();
            for i in (1..ready.len()).rev() {
                ready.swap(i, rng.below(i as u64 + 1) as usize);
            }
            for (i, p) in ready {
                let m = &msgs[i];
                net.engines[m.src].pready(m.send_id.unwrap(), p).unwrap();
                for _ in 0..rng.below(4) {
                    net.step();
                }
                check_arrivals(&mut net, &msgs, round, seed);
            }
            net.run();
            for (is_send, i, r) in users {
                let m = &msgs[i];
                let rank = if is_send { m.src } else { m.dst };
                let st: Status = net.engines[rank].take(r).unwrap_or_else(|| panic!("seed {seed}: round {round} did not complete"));
                if !is_send {
                    assert_eq!((st.source, st.tag, st.count, st.error), (m.src as i32, m.tag, m.data.len() as u64, None), "seed {seed}");
                    assert_eq!(m.recv, m.data, "seed {seed} round {round}: message {i} ({} -> {} tag {}) differs", m.src, m.dst, m.tag);
                }
            }
            for m in &msgs {
                for q in 0..m.rparts {
                    assert!(net.engines[m.dst].parrived(m.recv_id.unwrap(), q).unwrap(), "seed {seed}: an inactive request reports a partition missing");
                }
            }
        }
        for m in &msgs {
            net.engines[m.src].part_free(m.send_id.unwrap());
            net.engines[m.dst].part_free(m.recv_id.unwrap());
        }
        net.run();
        for (r, e) in net.engines.iter().enumerate() {
            assert_eq!(e.partitioned_requests(), 0, "seed {seed}: rank {r} kept freed partitioned requests");
            assert_eq!(e.live_requests(), 0, "seed {seed}: rank {r} leaked engine requests");
        }
    }
}

/// Every receive partition MPI_Parrived calls arrived holds its bytes.
fn check_arrivals(net: &mut Sim, msgs: &[Msg], round: usize, seed: u64) {
    for (k, m) in msgs.iter().enumerate() {
        let rbytes = m.recv.len() as u64 / m.rparts;
        for q in 0..m.rparts {
            if net.engines[m.dst].parrived(m.recv_id.unwrap(), q).unwrap() {
                let lo = (q * rbytes) as usize;
                for i in lo..lo + rbytes as usize {
                    assert_eq!(m.recv[i], pattern(k, round, i), "seed {seed}: partition {q} of message {k} said arrived before byte {i} did");
                }
            }
        }
    }
}

#[test]
fn a_larger_message_is_truncated_and_errors_are_refused() {
    let mut net = Sim::new(2, 5, PeerParams::default(), 1 << 20);
    let mut data: Vec<u8> = (0..100).collect();
    let mut recv = vec![0u8; 60];
    // SAFETY: both vectors outlive the simulation.
    let sbuf = unsafe { UserBuf::new(data.as_mut_ptr(), 100, bytes()) };
    let rbuf = unsafe { UserBuf::new(recv.as_mut_ptr(), 60, bytes()) };
    let s = net.engines[0].psend_init(PsendArgs { ctx: 2, src: 0, dest: Some(1), tag: 3, buf: sbuf.clone(), partitions: 4 }).unwrap();
    let r = net.engines[1].precv_init(PrecvArgs { ctx: 2, src: Some(0), tag: 3, buf: rbuf, partitions: 2 }).unwrap();
    assert_eq!(net.engines[0].pready(s, 0), Err(PartError::NotActive));
    let us = net.engines[0].part_start(s).unwrap();
    let ur = net.engines[1].part_start(r).unwrap();
    assert_eq!(net.engines[0].part_start(s), Err(PartError::AlreadyActive));
    assert_eq!(net.engines[0].pready(s, 4), Err(PartError::NoSuchPartition { partition: 4, partitions: 4 }));
    assert_eq!(net.engines[1].pready(r, 0), Err(PartError::WrongSide { needs: "send" }));
    assert_eq!(net.engines[0].parrived(s, 0), Err(PartError::WrongSide { needs: "receive" }));
    // A list naming a partition twice, or one past the end, marks nothing.
    assert_eq!(net.engines[0].pready_many(s, &[3, 1, 3]), Err(PartError::AlreadyReady(3)));
    assert_eq!(net.engines[0].pready_many(s, &[3, 9]), Err(PartError::NoSuchPartition { partition: 9, partitions: 4 }));
    net.engines[0].pready_many(s, &[3, 1]).unwrap();
    assert_eq!(net.engines[0].pready(s, 1), Err(PartError::AlreadyReady(1)));
    for p in [0, 2] {
        net.engines[0].pready(s, p).unwrap();
    }
    net.run();
    assert!(net.engines[0].take(us).is_some());
    let st = net.engines[1].take(ur).unwrap();
    assert_eq!((st.count, st.error), (60, Some(crate::ErrorKind::Truncate)));
    assert_eq!(recv, (0..60).collect::<Vec<u8>>());
    // Items that do not split evenly are refused.
    let e = net.engines[0].psend_init(PsendArgs { ctx: 2, src: 0, dest: Some(1), tag: 3, buf: sbuf, partitions: 3 });
    assert_eq!(e, Err(PartError::Uneven { items: 100, partitions: 3 }));
}

#[test]
fn proc_null_partitions_complete_at_once() {
    let mut net = Sim::new(1, 1, PeerParams::default(), 1 << 20);
    let e = &mut net.engines[0];
    let s = e.psend_init(PsendArgs { ctx: 2, src: 0, dest: None, tag: 0, buf: UserBuf::empty(), partitions: 2 }).unwrap();
    let r = e.precv_init(PrecvArgs { ctx: 2, src: None, tag: 0, buf: UserBuf::empty(), partitions: 2 }).unwrap();
    let us = e.part_start(s).unwrap();
    let ur = e.part_start(r).unwrap();
    e.pready(s, 1).unwrap();
    assert!(e.parrived(r, 0).unwrap());
    assert!(e.take(us).is_some());
    let st = e.take(ur).unwrap();
    assert_eq!((st.source, st.tag, st.count), (-1, -1, 0));
    assert_eq!(e.pready(s, 1), Err(PartError::NotActive));
    e.part_free(s);
    e.part_free(r);
    assert_eq!(e.partitioned_requests(), 0);
}

//! Point-to-point tests on the simulated network (sim.rs): every seed is a
//! different legal interleaving, and every failure replays from its seed.

use crate::p2p::*;
use crate::sim::{Rng, Sim};
use crate::{Engine, EngineConfig, PeerParams, Pid, ProtocolError};
use gridmpi_datatype::{BasicType, Datatype, UserBuf};
use gridmpi_wire::{Envelope, Frame, Header, HEADER_LEN};
use std::sync::Arc;

fn bytes_type() -> Arc<Datatype> {
    Arc::new(Datatype::basic(BasicType::Byte))
}

/// A message's payload: source, sequence number and a pattern.
fn payload(src: usize, seq: usize, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len).map(|i| (i * 7 + src * 13 + seq * 31) as u8).collect();
    if len >= 8 {
        v[..4].copy_from_slice(&(src as u32).to_le_bytes());
        v[4..8].copy_from_slice(&(seq as u32).to_le_bytes());
    }
    v
}

/// Some network steps between postings.
fn interleave_steps(net: &mut Sim, rng: &mut Rng) {
    for _ in 0..rng.below(4) {
        net.step();
    }
}

#[test]
fn random_traffic_is_matched_in_order_and_intact() {
    let sizes = [0usize, 1, 8, 100, 1000, 4096, 5000, 20000];
    let only: Option<u64> = std::env::var("SIM_SEED").ok().and_then(|v| v.parse().ok());
    // SIM_SEED=n replays one seed; SIM_TRACE=1 prints the 0->1 traffic.
    for seed in 1..=1000u64 {
        if only.is_some_and(|o| o != seed) {
            continue;
        }
        let mut rng = Rng(seed * 0x9e37_79b9 + 7);
        let n = 2 + rng.below(3) as usize;
        // On a quarter of the seeds every link is paced, at a rate that
        // cuts payloads into 4 KiB pieces, and eager messages go up to
        // 20000 bytes, so they travel in pieces too.
        let paced = seed % 4 == 1;
        let eager_limit = if paced { 20_000 } else { 4096 };
        let params = PeerParams { eager_limit, max_data_frame: 3000, single_copy: seed % 2 == 0, single_copy_min: 4097 };
        let credit = [HEADER_LEN as u32 + 64, 10_000, 1 << 20][rng.below(3) as usize];
        let mut net = Sim::new(n, seed, params, credit);
        if paced {
            for a in 0..n {
                for b in (0..n).filter(|&b| b != a) {
                    net.engines[a].pace(b as Pid, Some(1_000_000));
                }
            }
        }
        // Plan: every rank sends some messages to random peers (including itself).
        struct Msg {
            src: usize,
            dst: usize,
            tag: i32,
            data: Vec<u8>,
        }
        let mut msgs = Vec::new();
        for src in 0..n {
            for seq in 0..(5 + rng.below(20) as usize) {
                let dst = rng.below(n as u64) as usize;
                let len = sizes[rng.below(sizes.len() as u64) as usize];
                msgs.push(Msg { src, dst, tag: rng.below(3) as i32, data: payload(src, seq, len) });
            }
        }
        let bt = bytes_type();
        // Post sends and receives in a random global order.
        let mut order: Vec<(bool, usize)> = (0..msgs.len()).flat_map(|i| [(true, i), (false, i)]).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut recv_bufs: Vec<Vec<u8>> = msgs.iter().map(|_| vec![0u8; 20000]).collect();
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        // The order in which each message's send was posted.
        let mut posted_at = vec![0usize; msgs.len()];
        let mut post_counter = 0usize;
        // Each receive gets a specific (src, tag), or wildcards for some of
        // them; a receive for message i is posted at the destination.
        // At some destinations every tag-0 receive is MPI_ANY_SOURCE (so any
        // tag-0 message can satisfy any of them); all others are exact.
        let dst_wild: Vec<bool> = (0..n).map(|_| rng.below(2) == 0).collect();
        let wild: Vec<bool> = msgs.iter().map(|m| m.tag == 0 && dst_wild[m.dst]).collect();
        for (is_send, i) in order {
            let m = &msgs[i];
            if is_send {
                let buf = unsafe { UserBuf::new(m.data.as_ptr() as *mut u8, m.data.len() as u64, bt.clone()) };
                let mode = if rng.below(4) == 0 { SendMode::Sync } else { SendMode::Standard };
                let mut args = SendArgs { ctx: 2, src: m.src as i32, dest: m.dst as Pid, tag: m.tag, buf, mode };
                // Half the sends try to leave at once without a request (as
                // the driver does for a small message on shared memory):
                // on the link now, or, as if the transport were full, queued
                // with a copy. Refused ones take the ordinary way.
                if rng.below(2) == 0 {
                    match net.engines[m.src].eager_now(args) {
                        Ok(t) if rng.below(4) == 0 => {
                            let owned = gridmpi_wire::Payload::Owned(m.data.clone());
                            net.engines[m.src].transmit_later(gridmpi_wire::Transmit { payload: owned, ..t });
                            posted_at[i] = post_counter;
                            post_counter += 1;
                            interleave_steps(&mut net, &mut rng);
                            continue;
                        }
                        Ok(t) => {
                            net.send_now(m.src, t);
                            posted_at[i] = post_counter;
                            post_counter += 1;
                            interleave_steps(&mut net, &mut rng);
                            continue;
                        }
                        Err(a) => args = a,
                    }
                }
                let r = net.engines[m.src].isend(args);
                if std::env::var("SIM_TRACE").is_ok() && m.src == 0 && m.dst == 1 {
                    eprintln!("post send #{post_counter} 0->1 tag {} len {} mode {:?} sreq {}", m.tag, m.data.len(), mode, r.0);
                }
                posted_at[i] = post_counter;
                post_counter += 1;
                sends.push((m.src, r));
            } else {
                let buf = unsafe { UserBuf::new(recv_bufs[i].as_mut_ptr(), 20000, bt.clone()) };
                let (src, tag) = if wild[i] { (None, Some(0)) } else { (Some(m.src as i32), Some(m.tag)) };
                let r = net.engines[m.dst].irecv(RecvArgs { ctx: 2, src, tag, buf });
                if std::env::var("SIM_TRACE").is_ok() && m.dst == 1 {
                    eprintln!("post recv at 1 src {:?} tag {:?} rreq {}", src, tag, r.0);
                }
                recvs.push((m.dst, r, i));
            }
            // Interleave some network steps with posting.
            interleave_steps(&mut net, &mut rng);
        }
        net.run();
        for &(src, r) in &sends {
            assert!(net.engines[src].take(r).is_some(), "seed {seed}: a send did not complete");
        }
        // Every receive completed with a message that was sent to it,
        // byte for byte; every message was received once; and receives of
        // one (src, dst, tag), in posting order, got increasing sequence
        // numbers (MPI's non-overtaking rule).
        let mut got = vec![false; msgs.len()];
        let mut last_seq: std::collections::HashMap<(usize, usize, i32), usize> = Default::default();
        for &(dst, r, i) in &recvs {
            let st = net.engines[dst].take(r).unwrap_or_else(|| panic!("seed {seed}: a receive did not complete"));
            let src = st.source as usize;
            let b = &recv_bufs[i][..st.count as usize];
            // Messages with equal contents are indistinguishable: take the
            // earliest posted of them.
            let j = (0..msgs.len())
                .filter(|&j| !got[j] && msgs[j].src == src && msgs[j].dst == dst && msgs[j].tag == st.tag && msgs[j].data.as_slice() == b)
                .min_by_key(|&j| posted_at[j])
                .unwrap_or_else(|| panic!("seed {seed}: received data matches no sent message"));
            got[j] = true;
            if let Some(&prev) = last_seq.get(&(src, dst, st.tag)) {
                assert!(
                    posted_at[j] > prev,
                    "seed {seed}: a message from {src} to {dst} tag {} (posted {}, {} bytes, wild {}) overtook one posted at {prev}",
                    st.tag,
                    posted_at[j],
                    msgs[j].data.len(),
                    wild[i]
                );
            }
            last_seq.insert((src, dst, st.tag), posted_at[j]);
        }
        assert!(got.iter().all(|&g| g), "seed {seed}: some message was never received");
        for e in &net.engines {
            assert_eq!(e.live_requests(), 0, "seed {seed}: requests leaked");
        }
    }
}

#[test]
fn exact_receives_get_messages_in_send_order() {
    // Many messages with one envelope: receive i must get message i.
    for seed in 1..=200u64 {
        let mut rng = Rng(seed);
        let params = PeerParams { eager_limit: 512, max_data_frame: 700, single_copy: seed % 3 == 0, single_copy_min: 513 };
        let mut net = Sim::new(2, seed, params, 2000);
        let bt = bytes_type();
        let k = 40;
        let data: Vec<Vec<u8>> = (0..k).map(|s| payload(0, s, [8usize, 100, 600, 3000][rng.below(4) as usize])).collect();
        let mut bufs: Vec<Vec<u8>> = (0..k).map(|_| vec![0u8; 3000]).collect();
        let mut rr = Vec::new();
        let mut sr = Vec::new();
        let mut posted_recv = 0;
        let mut posted_send = 0;
        while posted_recv < k || posted_send < k {
            if posted_send < k && (posted_recv == k || rng.below(2) == 0) {
                let d = &data[posted_send];
                let buf = unsafe { UserBuf::new(d.as_ptr() as *mut u8, d.len() as u64, bt.clone()) };
                sr.push(net.engines[0].isend(SendArgs { ctx: 0, src: 0, dest: 1, tag: 5, buf, mode: SendMode::Standard }));
                posted_send += 1;
            } else {
                let buf = unsafe { UserBuf::new(bufs[posted_recv].as_mut_ptr(), 3000, bt.clone()) };
                rr.push(net.engines[1].irecv(RecvArgs { ctx: 0, src: Some(0), tag: Some(5), buf }));
                posted_recv += 1;
            }
            net.step();
        }
        net.run();
        for (i, r) in rr.iter().enumerate() {
            let st = net.engines[1].take(*r).expect("receive completed");
            assert_eq!(&bufs[i][..st.count as usize], &data[i][..], "seed {seed}: message {i} overtaken");
        }
        for r in sr {
            assert!(net.engines[0].take(r).is_some());
        }
    }
}

#[test]
fn a_flood_of_unmatched_sends_stays_within_the_credit() {
    // 2000 small sends with no receive posted: the receiver may hold at most
    // `credit` bytes of eager data; the rest wait as small RTS frames.
    let credit = 8 * 1024u32;
    let params = PeerParams { eager_limit: 1024, max_data_frame: 4096, single_copy: false, single_copy_min: u64::MAX };
    let mut net = Sim::new(2, 42, params, credit);
    let bt = bytes_type();
    let data = payload(0, 0, 1000);
    let mut sends = Vec::new();
    for _ in 0..2000 {
        let buf = unsafe { UserBuf::new(data.as_ptr() as *mut u8, 1000, bt.clone()) };
        sends.push(net.engines[0].isend(SendArgs { ctx: 0, src: 0, dest: 1, tag: 1, buf, mode: SendMode::Standard }));
    }
    net.run();
    let held = net.engines[1].unexpected_eager_bytes();
    assert!(held <= credit as u64, "receiver holds {held} eager bytes, credit is {credit}");
    assert!(held > 0);
    // Now receive them all, in order.
    let mut buf = vec![0u8; 1000];
    for _ in 0..2000 {
        let ub = unsafe { UserBuf::new(buf.as_mut_ptr(), 1000, bt.clone()) };
        let r = net.engines[1].irecv(RecvArgs { ctx: 0, src: Some(0), tag: Some(1), buf: ub });
        net.run();
        let st = net.engines[1].take(r).expect("receive completed");
        assert_eq!(st.count, 1000);
        assert_eq!(buf, data);
    }
    for r in sends {
        assert!(net.engines[0].take(r).is_some());
    }
}

/// A peer that breaks the protocol gets an error naming what it did wrong;
/// the engine's state is unchanged by the frame, and nothing panics.
#[test]
fn hostile_frames_get_the_right_error() {
    let bt = bytes_type();
    let mut e = Engine::new(1, 3, EngineConfig::default());
    let env = Envelope { ctx: 0, src: 0, tag: 1 };
    let reason = |r: Result<(), ProtocolError>| r.expect_err("a hostile frame was accepted").reason;
    // From nobody we know, or from ourselves.
    let credit = Header::new(Frame::Credit, 0);
    assert!(reason(e.handle_frame(7, &credit, &[])).contains("unknown process 7"));
    assert!(reason(e.handle_frame(1, &credit, &[])).contains("unknown process 1"));
    // A payload that disagrees with its header.
    let eager = Header::new(Frame::Eager { env, sync: None }, 4);
    assert!(reason(e.handle_frame(0, &eager, &[1, 2])).contains("payload length"));
    // Replies about requests that do not exist.
    let cts = Header::new(Frame::Cts { sreq: 5, rreq: 0, accepted: 10 }, 0);
    assert!(reason(e.handle_frame(0, &cts, &[])).contains("unknown send request 5"));
    let data = Header::new(Frame::Data { rreq: 3, offset: 0 }, 2);
    assert!(reason(e.handle_frame(0, &data, &[0, 0])).contains("unknown receive request 3"));
    assert!(reason(e.handle_frame(0, &Header::new(Frame::Fin { sreq: 2 }, 0), &[])).contains("unknown send request 2"));
    assert!(reason(e.handle_frame(0, &Header::new(Frame::SyncAck { sreq: 2 }, 0), &[])).contains("unknown send request 2"));
    assert!(e.data_target(0, &data).is_err());
    // A single-copy rendezvous from a peer not on this host (the default
    // parameters: no single copy): reading its "address" would read
    // whichever local process has its pid.
    let rts_sc = Header::new(Frame::Rts { env, len: 10, sreq: 9, single_copy: true }, 8);
    assert!(reason(e.handle_frame(0, &rts_sc, &0x1000u64.to_le_bytes())).contains("not on this host"));

    // A real rendezvous from 0 to 1: receive 10 bytes.
    let mut rbuf = vec![0u8; 10];
    let r = e.irecv(RecvArgs { ctx: 0, src: Some(0), tag: Some(1), buf: unsafe { UserBuf::new(rbuf.as_mut_ptr(), 10, bt.clone()) } });
    e.handle_frame(0, &Header::new(Frame::Rts { env, len: 10, sreq: 9, single_copy: false }, 0), &[]).unwrap();
    let rreq = loop {
        match e.poll_action() {
            Some(crate::Action::Transmit(t)) => {
                if let Frame::Cts { rreq, accepted, .. } = t.header.frame {
                    assert_eq!(accepted, 10);
                    break rreq;
                }
            }
            Some(_) => {}
            None => panic!("no clear-to-send"),
        }
    };
    // Data from another peer, at the wrong offset, or past the accepted length.
    let d = |offset, len| Header::new(Frame::Data { rreq, offset }, len);
    assert!(reason(e.handle_frame(2, &d(0, 4), &[0; 4])).contains("does not continue"));
    assert!(reason(e.handle_frame(0, &d(4, 4), &[0; 4])).contains("at offset 4"));
    assert!(reason(e.handle_frame(0, &d(0, 11), &[0; 11])).contains("(+11)"));
    assert!(e.data_target(0, &d(8, 4)).is_err());
    // None of that touched the receive: the real data still lands.
    e.handle_frame(0, &d(0, 6), &[1; 6]).unwrap();
    e.handle_frame(0, &d(6, 4), &[2; 4]).unwrap();
    assert_eq!(e.take(r).map(|s| s.count), Some(10));
    assert_eq!(rbuf, [1, 1, 1, 1, 1, 1, 2, 2, 2, 2]);
    // Finished: more data for it is an error.
    assert!(reason(e.handle_frame(0, &d(10, 1), &[0])).contains("unknown receive request"));

    // A send of ours, then replies that do not fit it.
    let sdata = vec![5u8; 100_000];
    let s = e.isend(SendArgs {
        ctx: 0,
        src: 1,
        dest: 0,
        tag: 2,
        buf: unsafe { UserBuf::new(sdata.as_ptr() as *mut u8, 100_000, bt.clone()) },
        mode: SendMode::Standard,
    });
    while e.poll_action().is_some() {}
    let cts = |accepted| Header::new(Frame::Cts { sreq: s.0, rreq: 4, accepted }, 0);
    assert!(reason(e.handle_frame(2, &cts(10), &[])).contains("unexpected clear-to-send"));
    assert!(reason(e.handle_frame(0, &cts(100_001), &[])).contains("accepts 100001 bytes of a 100000-byte message"));
    assert!(reason(e.handle_frame(0, &Header::new(Frame::SyncAck { sreq: s.0 }, 0), &[])).contains("unexpected SyncAck"));
    assert!(!e.is_complete(s));
    e.handle_frame(0, &cts(100_000), &[]).unwrap();
    assert!(reason(e.handle_frame(0, &cts(100_000), &[])).contains("unexpected clear-to-send"));
}

/// An eager message to a paced peer goes in pieces of what the link may
/// hold unsent; only the last piece completes the send, and the receiver
/// matches the message once it is whole, in order with the sender's other
/// messages.
#[test]
fn eager_messages_to_a_paced_peer_go_in_pieces() {
    let bt = bytes_type();
    let params = PeerParams { eager_limit: 64 * 1024, max_data_frame: 1 << 20, single_copy: false, single_copy_min: u64::MAX };
    for sync in [false, true] {
        let mut net = Sim::new(2, 5, params, 1 << 20);
        // 1 MB/s: 4 ms of it is under the 4096-byte smallest piece.
        net.engines[0].pace(1, Some(1_000_000));
        let big = payload(0, 1, 10_000);
        let small = payload(0, 2, 100);
        let send = |net: &mut Sim, d: &Vec<u8>, mode| {
            let buf = unsafe { UserBuf::new(d.as_ptr() as *mut u8, d.len() as u64, bt.clone()) };
            net.engines[0].isend(SendArgs { ctx: 0, src: 0, dest: 1, tag: 3, buf, mode })
        };
        let mode = if sync { SendMode::Sync } else { SendMode::Standard };
        let s1 = send(&mut net, &big, mode);
        let s2 = send(&mut net, &small, SendMode::Standard);
        // The frames as the engine queues them.
        let mut frames = Vec::new();
        while let Some(a) = net.engines[0].poll_action() {
            if let crate::Action::Transmit(t) = a {
                frames.push((t.header.frame, t.header.payload_len, t.notify.is_some()));
                net.send_now(0, t);
            }
        }
        let sreq = sync.then_some(s1.0);
        assert_eq!(
            frames,
            [
                (Frame::EagerHead { env: Envelope { ctx: 0, src: 0, tag: 3 }, sync: sreq, len: 10_000 }, 4096, false),
                (Frame::EagerRest { offset: 4096 }, 4096, false),
                (Frame::EagerRest { offset: 8192 }, 1808, true),
                (Frame::Eager { env: Envelope { ctx: 0, src: 0, tag: 3 }, sync: None }, 100, true),
            ]
        );
        // Received in order, whole, the large one first.
        let mut b1 = vec![0u8; 10_000];
        let mut b2 = vec![0u8; 10_000];
        let recv = |net: &mut Sim, b: &mut Vec<u8>| {
            let buf = unsafe { UserBuf::new(b.as_mut_ptr(), b.len() as u64, bt.clone()) };
            net.engines[1].irecv(RecvArgs { ctx: 0, src: Some(0), tag: Some(3), buf })
        };
        let r1 = recv(&mut net, &mut b1);
        net.run();
        let r2 = recv(&mut net, &mut b2);
        net.run();
        assert_eq!(net.engines[1].take(r1).map(|s| s.count), Some(10_000));
        assert_eq!(net.engines[1].take(r2).map(|s| s.count), Some(100));
        assert_eq!(b1, big);
        assert_eq!(&b2[..100], &small[..]);
        assert!(net.engines[0].take(s1).is_some() && net.engines[0].take(s2).is_some());
        // Unpaced, the same message is one frame again.
        net.engines[0].pace(1, None);
        net.run();
        let s3 = send(&mut net, &big, SendMode::Standard);
        let Some(crate::Action::Transmit(t)) = net.engines[0].poll_action() else { panic!("no frame") };
        assert_eq!((t.header.frame.kind(), t.header.payload_len), (gridmpi_wire::Kind::Eager, 10_000));
        net.send_now(0, t);
        let r3 = recv(&mut net, &mut b1);
        net.run();
        assert!(net.engines[1].take(r3).is_some() && net.engines[0].take(s3).is_some());
    }
}

/// The pieces of an eager message from a hostile peer: each rule broken
/// gets its error, and an honest message still arrives whole afterwards.
#[test]
fn hostile_eager_pieces_get_the_right_error() {
    let bt = bytes_type();
    let mut e = Engine::new(1, 3, EngineConfig { eager_credit: 1 << 16 });
    let env = Envelope { ctx: 0, src: 0, tag: 1 };
    let reason = |r: Result<(), ProtocolError>| r.expect_err("a hostile frame was accepted").reason;
    let head = |len| Header::new(Frame::EagerHead { env, sync: None, len }, 4);
    let rest = |offset, plen| Header::new(Frame::EagerRest { offset }, plen);
    assert!(reason(e.handle_frame(0, &rest(4, 4), &[0; 4])).contains("of no eager message"));
    assert!(reason(e.handle_frame(0, &head(1 << 16), &[0; 4])).contains("exceeds the 65536-byte credit"));
    // A length that would wrap with the header added is refused too (not
    // reserved: that would abort the process).
    assert!(reason(e.handle_frame(0, &head(u64::MAX - 8), &[0; 4])).contains("exceeds the 65536-byte credit"));
    e.handle_frame(0, &head(10), &[1; 4]).unwrap();
    assert!(reason(e.handle_frame(0, &rest(5, 4), &[0; 4])).contains("at offset 5 (+4) does not continue a 10-byte message at 4"));
    assert!(reason(e.handle_frame(0, &rest(4, 7), &[0; 7])).contains("(+7)"));
    let eager = Header::new(Frame::Eager { env, sync: None }, 1);
    assert!(reason(e.handle_frame(0, &eager, &[0])).contains("Eager frame inside the pieces"));
    assert!(reason(e.handle_frame(0, &head(10), &[0; 4])).contains("EagerHead frame inside the pieces"));
    // Another peer's message is not held up by it.
    let eager2 = Header::new(Frame::Eager { env: Envelope { src: 2, ..env }, sync: None }, 1);
    e.handle_frame(2, &eager2, &[9]).unwrap();
    // The honest rest; the message is matched whole.
    e.handle_frame(0, &rest(4, 6), &[2; 6]).unwrap();
    let mut b = vec![0u8; 10];
    let r = e.irecv(RecvArgs { ctx: 0, src: Some(0), tag: Some(1), buf: unsafe { UserBuf::new(b.as_mut_ptr(), 10, bt.clone()) } });
    assert_eq!(e.take(r).map(|s| s.count), Some(10));
    assert_eq!(b, [1, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
    assert!(reason(e.handle_frame(0, &rest(10, 1), &[0])).contains("of no eager message"));
}

/// Random frames (valid headers with random ids and lengths) from several
/// peers: errors are fine, panics are not.
#[test]
fn random_frames_are_errors_not_crashes() {
    let mut e = Engine::new(1, 2, EngineConfig::default());
    let mut rng = Rng(99);
    for _ in 0..20000 {
        let env = Envelope { ctx: 0, src: 0, tag: rng.below(3) as i32 };
        let (sreq, rreq, len) = (rng.below(8) as u32, rng.below(8) as u32, rng.below(100));
        let (frame, plen) = match rng.below(10) {
            8 => (Frame::CancelSend { sreq }, 0),
            9 => (Frame::CancelReply { sreq, cancelled: rng.below(2) == 0 }, 0),
            6 => (Frame::EagerHead { env, sync: (rng.below(2) == 0).then_some(sreq), len: len + 2 }, 1 + len as u32),
            7 => (Frame::EagerRest { offset: len }, 1 + rng.below(50) as u32),
            0 => (Frame::Cts { sreq, rreq, accepted: len }, 0),
            1 => (Frame::Data { rreq, offset: len }, 1 + rng.below(50) as u32),
            2 => (Frame::Fin { sreq }, 0),
            3 => (Frame::SyncAck { sreq }, 0),
            4 => (Frame::Eager { env, sync: (rng.below(2) == 0).then_some(sreq) }, len as u32),
            _ => (Frame::Rts { env, len, sreq, single_copy: false }, 0),
        };
        let h = Header::new(frame, plen);
        let p = vec![0u8; plen as usize];
        let _ = e.handle_frame(0, &h, &p);
        let _ = e.handle_frame(7, &h, &p);
        let _ = e.handle_frame(1, &h, &p);
        while e.poll_action().is_some() {}
    }
}

/// MPI_Recv's quick road takes a frame straight from the ring only where a
/// posted receive would have matched it at once, and books it as the usual
/// road does: the credit the frame returns, and the credit owed for it.
#[test]
fn a_lone_receive_takes_only_what_a_posted_one_would() {
    let bt = bytes_type();
    let mut e = Engine::new(1, 3, EngineConfig { eager_credit: 1 << 16 });
    let eager = |tag, len, sync| Header::new(Frame::Eager { env: Envelope { ctx: 0, src: 0, tag }, sync }, len);
    // What a posted receive of (ctx 0, rank 0, tag 1, 8 bytes) takes.
    let mut h = eager(1, 8, None);
    h.credit = 100;
    let st = e.take_lone_eager(0, &h, 0, 0, Some(1), 8).expect("taken");
    assert_eq!((st.source, st.tag, st.count, st.error), (0, 1, 8, None));
    assert!(e.peers[0].credit.try_spend((1 << 16) + 100), "the credit the frame returned");
    assert_eq!(e.peers[0].owes(), 8 + HEADER_LEN as u64, "the credit owed for it");
    assert!(e.take_lone_eager(0, &eager(7, 8, None), 0, 0, None, 8).is_some(), "MPI_ANY_TAG");
    // What it leaves to the usual road: a synchronous send (it needs its
    // acknowledgment), another context, source or tag, a message longer
    // than the buffer (a truncation is reported there), one from ourselves,
    // and any other kind of frame.
    assert!(e.take_lone_eager(0, &eager(1, 8, Some(3)), 0, 0, Some(1), 8).is_none());
    assert!(e.take_lone_eager(0, &eager(1, 8, None), 4, 0, Some(1), 8).is_none());
    assert!(e.take_lone_eager(0, &eager(1, 8, None), 0, 2, Some(1), 8).is_none());
    assert!(e.take_lone_eager(0, &eager(2, 8, None), 0, 0, Some(1), 8).is_none());
    assert!(e.take_lone_eager(0, &eager(1, 9, None), 0, 0, Some(1), 8).is_none());
    assert!(e.take_lone_eager(1, &eager(1, 8, None), 0, 0, Some(1), 8).is_none());
    let rts = Header::new(Frame::Rts { env: Envelope { ctx: 0, src: 0, tag: 1 }, len: 8, sreq: 1, single_copy: false }, 0);
    assert!(e.take_lone_eager(0, &rts, 0, 0, Some(1), 8).is_none());
    // A message waiting unmatched on the context comes first.
    e.handle_frame(0, &eager(9, 2, None), &[5, 6]).unwrap();
    assert!(e.take_lone_eager(0, &eager(1, 8, None), 0, 0, Some(1), 8).is_none());
    let mut b = [0u8; 2];
    let r = e.irecv(RecvArgs { ctx: 0, src: Some(0), tag: Some(9), buf: unsafe { UserBuf::new(b.as_mut_ptr(), 2, bt.clone()) } });
    assert!(e.take(r).is_some() && b == [5, 6]);
    assert!(e.take_lone_eager(0, &eager(1, 8, None), 0, 0, Some(1), 8).is_some(), "nothing waits any more");
    // So does a receive posted before.
    let mut b = [0u8; 8];
    let r = e.irecv(RecvArgs { ctx: 0, src: None, tag: None, buf: unsafe { UserBuf::new(b.as_mut_ptr(), 8, bt.clone()) } });
    assert!(e.take_lone_eager(0, &eager(1, 8, None), 0, 0, Some(1), 8).is_none());
    e.handle_frame(0, &eager(1, 8, None), &[1; 8]).unwrap();
    assert!(e.take(r).is_some());
    // And the pieces of an eager message from that peer.
    let head = Header::new(Frame::EagerHead { env: Envelope { ctx: 0, src: 0, tag: 1 }, sync: None, len: 16 }, 8);
    e.handle_frame(0, &head, &[0; 8]).unwrap();
    assert!(e.take_lone_eager(0, &eager(1, 8, None), 0, 0, Some(1), 8).is_none());
    // Taken messages' credit goes back once a quarter of the grant is owed.
    let mut e = Engine::new(1, 3, EngineConfig { eager_credit: 1 << 16 });
    for _ in 0..4 {
        assert!(e.poll_action().is_none());
        e.take_lone_eager(0, &eager(1, 4096, None), 0, 0, Some(1), 4096).expect("taken");
    }
    match e.poll_action() {
        Some(crate::Action::Transmit(t)) => assert!(matches!(t.header.frame, Frame::Credit) && t.peer == 0),
        _ => panic!("no credit frame"),
    }
}

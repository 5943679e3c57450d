//! A connection reset by the network (a NAT or firewall losing its state,
//! `ss -K`) does not lose or duplicate a byte: both ends make a new
//! connection and each stream goes on where its receiver stands. Two
//! transports in one process, over loopback; resets at random moments,
//! from either side, while eager frames and large Data frames (read
//! straight into the receive buffer) flow both ways.

use gridmpi_datatype::UserBuf;
use gridmpi_transport::tcp::Tcp;
use gridmpi_transport::Transport;
use gridmpi_wire::{Envelope, Frame, Header, Payload, Pid, SentToken, Transmit};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

mod common;
use common::*;

/// The largest eager payload sent.
const EAGER_MAX: usize = 30_000;

#[test]
fn resets_lose_and_duplicate_nothing() {
    // A reset from a random side.
    let (resets, g) = exchange_through(|t, rng| {
        let side = rng.below(2) as usize;
        t[side].abort_connection(1 - side as Pid)
    });
    assert!(resets >= 15, "only {resets} resets");
    assert!(g[0].resumed + g[1].resumed >= resets, "{resets} resets, {} + {} resumptions", g[0].resumed, g[1].resumed);
    // Bytes in flight when a reset hit were lost with the connection and
    // came again from the copy kept for them.
    assert!(g[0].resent > 0 && g[1].resent > 0, "no reset caught bytes in flight in both directions");
}

/// A job restarted from a checkpoint: both processes froze at the same
/// moment (no poll between their images), and come back with new
/// listeners on new ports, their old sockets gone with whatever the kernel
/// held; every link resumes where its receiver stood.
#[test]
fn restarts_from_a_checkpoint_lose_and_duplicate_nothing() {
    let lo = Ipv4Addr::LOCALHOST;
    let (restarts, g) = exchange_through(|t, _| {
        for x in t.iter_mut() {
            x.after_restore(lo, None).unwrap();
        }
        let (p0, p1) = (t[0].port(), t[1].port());
        t[0].set_peer_addrs(1, vec![SocketAddrV4::new(lo, p1)]);
        t[1].set_peer_addrs(0, vec![SocketAddrV4::new(lo, p0)]);
        true
    });
    assert!(restarts >= 15, "only {restarts} restarts");
    assert!(g[0].resent + g[1].resent > 0, "no restart caught bytes in flight");
}

/// Both transports send each other eager frames and large Data frames
/// (read straight into the receive buffer) while `disrupt` breaks things
/// every 40 frames queued or so (true: it did); every byte must arrive
/// once, in order. Returns how many disruptions there were.
fn exchange_through(mut disrupt: impl FnMut(&mut [Tcp; 2], &mut Rng) -> bool) -> (usize, [Got; 2]) {
    let lo = Ipv4Addr::LOCALHOST;
    let secret = [9u8; 32];
    let mut t = [Tcp::new(0, 2, 42, secret, lo).unwrap(), Tcp::new(1, 2, 42, secret, lo).unwrap()];
    // Small socket buffers: much is in flight in the kernel when a reset hits.
    for x in t.iter_mut() {
        x.sndbuf = Some(16 * 1024);
        x.rcvbuf = Some(16 * 1024);
    }
    let (p0, p1) = (t[0].port(), t[1].port());
    t[0].set_peer_addrs(1, vec![SocketAddrV4::new(lo, p1)]);
    t[1].set_peer_addrs(0, vec![SocketAddrV4::new(lo, p0)]);
    const NEAGER: usize = 600;
    const NDATA: usize = 12;
    let mut g = [Got::new(NDATA), Got::new(NDATA)];
    // The payloads of Data frames must stay put until sent: kept here.
    let data: Vec<Vec<Vec<u8>>> = (0..2).map(|from| (0..NDATA).map(|i| data_payload(from, i)).collect()).collect();
    let env = Envelope { ctx: 0, src: 0, tag: 1 };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut resets = 0;
    let mut next_reset = 30;
    let mut queued = [0usize; 2];
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for me in 0..2usize {
            let peer = 1 - me as Pid;
            // Queue a few frames at a time, so resets hit a busy stream.
            for _ in 0..3 {
                let i = queued[me];
                if i >= NEAGER {
                    break;
                }
                let p = eager_payload(me as Pid, i, EAGER_MAX);
                let h = Header::new(Frame::Eager { env, sync: None }, p.len() as u32);
                t[me].send(Transmit { peer, header: h, payload: Payload::Owned(p), notify: None }, &mut g[me]).unwrap();
                if i % (NEAGER / NDATA) == 0 && i / (NEAGER / NDATA) < NDATA {
                    let k = i / (NEAGER / NDATA);
                    let d = &data[me][k];
                    // SAFETY: `data` outlives the transports' use of it.
                    let buf = unsafe { UserBuf::new(d.as_ptr() as *mut u8, d.len() as u64, bytes()) };
                    for (off, len) in [(0u64, 70_000u64), (70_000, (DATA_LEN - 70_000) as u64)] {
                        let h = Header::new(Frame::Data { rreq: k as u32, offset: off }, len as u32);
                        let payload = Payload::User { buf: buf.clone(), offset: off, len };
                        t[me].send(Transmit { peer, header: h, payload, notify: Some(SentToken(k as u32)) }, &mut g[me]).unwrap();
                    }
                }
                queued[me] += 1;
            }
            t[me].poll(&mut g[me]).unwrap();
            // A reset every 40 frames queued or so, from a random side,
            // after either side's turn.
            let total = queued[0] + queued[1];
            if total >= next_reset {
                if disrupt(&mut t, &mut rng) {
                    resets += 1;
                }
                next_reset = total + 20 + rng.below(40) as usize;
            }
        }
        let done = (0..2).all(|me| g[me].eager.len() == NEAGER && g[me].landed.len() == 2 * NDATA);
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "stuck: {} and {} eager frames, {resets} resets", g[0].eager.len(), g[1].eager.len());
    }
    for me in 0..2 {
        let from = 1 - me as Pid;
        for (i, p) in g[me].eager.iter().enumerate() {
            assert!(*p == eager_payload(from, i, EAGER_MAX), "eager frame {i} from {from} differs");
        }
        for k in 0..NDATA {
            assert!(g[me].data[k] == data[from as usize][k], "Data {k} from {from} differs");
        }
    }
    eprintln!("{resets} disruptions, resumed {} + {}, {} + {} bytes written again", g[0].resumed, g[1].resumed, g[0].resent, g[1].resent);
    (resets, g)
}

fn pair() -> (Tcp, Tcp) {
    let lo = Ipv4Addr::LOCALHOST;
    let secret = [5u8; 32];
    let mut a = Tcp::new(0, 2, 43, secret, lo).unwrap();
    let mut b = Tcp::new(1, 2, 43, secret, lo).unwrap();
    a.set_peer_addrs(1, vec![SocketAddrV4::new(lo, b.port())]);
    b.set_peer_addrs(0, vec![SocketAddrV4::new(lo, a.port())]);
    (a, b)
}

fn eager(peer: Pid, bytes: &[u8]) -> Transmit {
    let env = Envelope { ctx: 0, src: 0, tag: 2 };
    Transmit { peer, header: Header::new(Frame::Eager { env, sync: None }, bytes.len() as u32), payload: Payload::Owned(bytes.to_vec()), notify: None }
}

/// Poll both until `done` or 10 s.
fn settle(a: &mut Tcp, ga: &mut Got, b: &mut Tcp, gb: &mut Got, done: impl Fn(&Got, &Got) -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !done(ga, gb) && Instant::now() < end {
        a.poll(ga).unwrap();
        b.poll(gb).unwrap();
    }
}

/// A peer that finalizes acknowledges everything on its way out: its
/// closing is the end of the link, not a break to repair, and sending to it
/// afterwards is an error naming what happened.
#[test]
fn a_peer_that_finished_closes_its_link_for_good() {
    let (mut a, mut b) = pair();
    let (mut ga, mut gb) = (Got::new(0), Got::new(0));
    b.send(eager(0, &[7; 3000]), &mut gb).unwrap();
    settle(&mut a, &mut ga, &mut b, &mut gb, |ga, _| ga.eager.len() == 1);
    a.finalizing = true;
    a.close(&mut ga);
    drop(a);
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        b.poll(&mut gb).unwrap();
    }
    assert_eq!(gb.resumed, 0);
    let e = b.send(eager(0, b"late"), &mut gb).unwrap_err();
    assert!(e.message.contains("closed"), "{e}");
}

/// A peer that is gone without a word (its process died) while it still
/// lacked our bytes: the link is tried again until the budget runs out,
/// then the error says so.
#[test]
fn a_peer_gone_for_good_ends_the_link_within_the_budget() {
    let (a, mut b) = pair();
    let (mut a, mut ga, mut gb) = (a, Got::new(0), Got::new(0));
    b.resume_budget = Duration::from_millis(800);
    b.send(eager(0, b"first"), &mut gb).unwrap();
    settle(&mut a, &mut ga, &mut b, &mut gb, |ga, _| !ga.eager.is_empty());
    // Sent, never read (so never acknowledged) by the peer, which then dies.
    for _ in 0..10 {
        b.send(eager(0, &[1; 30_000]), &mut gb).unwrap();
    }
    drop(a); // no goodbye: the kernel closes its sockets
    let start = Instant::now();
    let err = loop {
        if let Err(e) = b.poll(&mut gb) {
            break e;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the broken link was never given up");
    };
    assert!(err.message.contains("could not be made again"), "{err}");
    assert!(start.elapsed() >= Duration::from_millis(700), "gave up after {:?}", start.elapsed());
}

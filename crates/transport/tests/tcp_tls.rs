//! TLS on links (GRIDMPI_WAN_TLS): two transports in one process over
//! loopback with their link encrypted. Every byte arrives once, in order,
//! both ways (eager frames of many sizes, large Data frames read straight
//! into the receive buffer), also across resets; the bytes on the wire are
//! not the plaintext; a peer of another job, and a plain caller where TLS
//! is required, are refused.

use gridmpi_datatype::UserBuf;
use gridmpi_transport::tcp::Tcp;
use gridmpi_transport::Transport;
use gridmpi_wire::{Envelope, Frame, Header, Payload, Pid, SentToken, Transmit};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;
use common::*;

/// The largest eager payload sent.
const EAGER_MAX: usize = 60_000;

fn pair(secrets: [[u8; 32]; 2], tls: [bool; 2]) -> [Tcp; 2] {
    let lo = Ipv4Addr::LOCALHOST;
    let mut t = [Tcp::new(0, 2, 42, secrets[0], lo).unwrap(), Tcp::new(1, 2, 42, secrets[1], lo).unwrap()];
    let (p0, p1) = (t[0].port(), t[1].port());
    t[0].set_peer_addrs(1, vec![SocketAddrV4::new(lo, p1)]);
    t[1].set_peer_addrs(0, vec![SocketAddrV4::new(lo, p0)]);
    for (me, x) in t.iter_mut().enumerate() {
        x.set_tls(1 - me as Pid, tls[me]);
    }
    t
}

/// Both transports send each other eager frames and Data frames (cut in
/// pieces of 16 KiB to 170 KB, most read straight into the receive
/// buffer); `resets` connections are aborted on the way. Every byte is
/// checked.
fn exchange(resets: bool, small_buffers: bool) -> [Got; 2] {
    let mut t = pair([[9; 32]; 2], [true, true]);
    if small_buffers {
        for x in t.iter_mut() {
            x.sndbuf = Some(16 * 1024);
            x.rcvbuf = Some(16 * 1024);
        }
    }
    const NEAGER: usize = 400;
    const NDATA: usize = 10;
    let mut g = [Got::new(NDATA), Got::new(NDATA)];
    let data: Vec<Vec<Vec<u8>>> = (0..2).map(|from| (0..NDATA).map(|i| data_payload(from, i)).collect()).collect();
    let env = Envelope { ctx: 0, src: 0, tag: 1 };
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut aborted = 0;
    let mut next_reset = 30;
    let mut queued = [0usize; 2];
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for me in 0..2usize {
            let peer = 1 - me as Pid;
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
                    let mut off = 0u64;
                    while off < DATA_LEN as u64 {
                        let len = (16_384 + rng.below(150_000)).min(DATA_LEN as u64 - off);
                        let h = Header::new(Frame::Data { rreq: k as u32, offset: off }, len as u32);
                        let payload = Payload::User { buf: buf.clone(), offset: off, len };
                        t[me].send(Transmit { peer, header: h, payload, notify: Some(SentToken(k as u32)) }, &mut g[me]).unwrap();
                        off += len;
                    }
                }
                queued[me] += 1;
            }
            t[me].poll(&mut g[me]).unwrap();
            let total = queued[0] + queued[1];
            if resets && total >= next_reset {
                let side = rng.below(2) as usize;
                if t[side].abort_connection(1 - side as Pid) {
                    aborted += 1;
                }
                next_reset = total + 20 + rng.below(40) as usize;
            }
            if let Some(enc) = t[me].encrypted(peer) {
                assert!(enc, "a plain connection on a link that must be encrypted");
            }
        }
        let done = (0..2).all(|me| g[me].eager.len() == NEAGER && g[me].data.iter().enumerate().all(|(k, d)| *d == data[1 - me][k]));
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "stuck: {} and {} eager frames, {aborted} resets", g[0].eager.len(), g[1].eager.len());
    }
    for me in 0..2 {
        let from = 1 - me as Pid;
        assert_eq!(g[me].eager.len(), NEAGER);
        for (i, p) in g[me].eager.iter().enumerate() {
            assert!(*p == eager_payload(from, i, EAGER_MAX), "eager frame {i} from {from} differs");
        }
        for k in 0..NDATA {
            assert!(g[me].data[k] == data[from as usize][k], "Data {k} from {from} differs");
        }
        assert!(g[me].refused.is_empty(), "{:?}", g[me].refused);
    }
    if resets {
        assert!(aborted >= 10, "only {aborted} resets");
        assert!(g[0].resumed + g[1].resumed >= aborted, "{aborted} resets, {} + {} resumptions", g[0].resumed, g[1].resumed);
    }
    eprintln!("{aborted} resets; {} + {} Data frames read in place", g[0].direct, g[1].direct);
    g
}

#[test]
fn an_encrypted_link_carries_every_byte_both_ways() {
    let g = exchange(false, false);
    assert!(g[0].direct > 0 && g[1].direct > 0, "no Data frame was read straight into its buffer");
}

#[test]
fn an_encrypted_link_resumes_after_resets_losing_nothing() {
    exchange(true, true);
}

/// A forwarding proxy on loopback: every connection to it goes on to
/// `target`; what passes in either direction is recorded.
fn proxy(target: u16) -> (u16, Arc<Mutex<Vec<u8>>>) {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(a) = c else { return };
            let Ok(b) = TcpStream::connect((Ipv4Addr::LOCALHOST, target)) else { return };
            for (mut from, mut to) in [(a.try_clone().unwrap(), b.try_clone().unwrap()), (b, a)] {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 65536];
                    loop {
                        match from.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                s.lock().unwrap().extend_from_slice(&buf[..n]);
                                if to.write_all(&buf[..n]).is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    let _ = to.shutdown(Shutdown::Write);
                });
            }
        }
    });
    (port, seen)
}

/// Send a recognizable payload from 0 to 1 through the proxy; what the
/// proxy saw.
fn through_proxy(tls: bool) -> Vec<u8> {
    let mut t = pair([[3; 32]; 2], [tls, tls]);
    let (port, seen) = proxy(t[1].port());
    t[0].set_peer_addrs(1, vec![SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)]);
    let mut g = [Got::new(0), Got::new(0)];
    let marker: Vec<u8> = b"GRIDMPI-PLAINTEXT-MARKER/".iter().copied().cycle().take(20_000).collect();
    let env = Envelope { ctx: 0, src: 0, tag: 1 };
    for _ in 0..5 {
        let h = Header::new(Frame::Eager { env, sync: None }, marker.len() as u32);
        t[0].send(Transmit { peer: 1, header: h, payload: Payload::Owned(marker.clone()), notify: None }, &mut g[0]).unwrap();
    }
    let end = Instant::now() + Duration::from_secs(10);
    while g[1].eager.len() < 5 && Instant::now() < end {
        t[0].poll(&mut g[0]).unwrap();
        t[1].poll(&mut g[1]).unwrap();
    }
    assert_eq!(g[1].eager.len(), 5, "the frames did not arrive");
    assert!(g[1].eager.iter().all(|p| *p == marker));
    assert_eq!(t[0].encrypted(1), Some(tls));
    let v = seen.lock().unwrap().clone();
    v
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_bytes_on_the_wire_are_encrypted() {
    let needle = b"PLAINTEXT-MARKER";
    // The check sees plaintext when there is some...
    let plain = through_proxy(false);
    assert!(contains(&plain, needle), "the proxy saw no plaintext of an unencrypted link");
    assert!(contains(&plain, b"GMPIhelo"));
    // ...and none of the payload, nor of the inner handshake, with TLS.
    let wire = through_proxy(true);
    assert!(wire.len() > 100_000, "only {} bytes passed", wire.len());
    assert_eq!(wire[0], 0x16, "not a TLS record");
    assert!(!contains(&wire, needle), "the payload is readable on the wire");
    assert!(!contains(&wire, b"GMPI"), "the handshake is readable on the wire");
}

/// Poll both until `done` or `secs`; the first error of each.
fn run(t: &mut [Tcp; 2], g: &mut [Got; 2], secs: u64, done: impl Fn(&[Got; 2]) -> bool) -> [Option<String>; 2] {
    let mut err = [None, None];
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end && !done(g) {
        for me in 0..2 {
            if err[me].is_none() {
                if let Err(e) = t[me].poll(&mut g[me]) {
                    err[me] = Some(e.to_string());
                }
            }
        }
        if err[0].is_some() && err[1].is_some() {
            break;
        }
    }
    err
}

fn hello(t: &mut Tcp, g: &mut Got, peer: Pid) -> Result<(), String> {
    let env = Envelope { ctx: 0, src: 0, tag: 1 };
    let h = Header::new(Frame::Eager { env, sync: None }, 5);
    t.send(Transmit { peer, header: h, payload: Payload::Owned(b"hello".to_vec()), notify: None }, g).map_err(|e| e.to_string())
}

#[test]
fn a_peer_with_another_job_secret_is_refused() {
    let mut t = pair([[1; 32], [2; 32]], [true, true]);
    let mut g = [Got::new(0), Got::new(0)];
    hello(&mut t[0], &mut g[0], 1).unwrap();
    let err = run(&mut t, &mut g, 5, |_| false);
    let e = err[0].as_ref().expect("the caller was not told");
    assert!(e.contains("TLS handshake failed"), "{e}");
    // The callee drops the stranger and goes on; nothing was delivered.
    assert!(err[1].is_none(), "{:?}", err[1]);
    assert!(g[1].eager.is_empty());
}

#[test]
fn a_plain_caller_is_refused_where_tls_is_required() {
    // Rank 0 calls in clear; rank 1 requires TLS on this link.
    let mut t = pair([[4; 32]; 2], [false, true]);
    let mut g = [Got::new(0), Got::new(0)];
    hello(&mut t[0], &mut g[0], 1).unwrap();
    let err = run(&mut t, &mut g, 5, |_| false);
    let e = err[0].as_ref().expect("the caller was not told");
    assert!(e.contains("requires TLS"), "{e}");
    assert!(err[1].is_none(), "{:?}", err[1]);
    assert!(g[1].eager.is_empty(), "a plain caller's frame was delivered");
    assert_eq!(g[1].refused.len(), 1, "{:?}", g[1].refused);
    assert!(g[1].refused[0].contains("without TLS"));
}

#[test]
fn a_tls_caller_is_welcome_where_tls_is_not_required() {
    // The acceptor makes the job's TLS side when a caller speaks it.
    let mut t = pair([[6; 32]; 2], [true, false]);
    let mut g = [Got::new(0), Got::new(0)];
    hello(&mut t[0], &mut g[0], 1).unwrap();
    let err = run(&mut t, &mut g, 5, |g| g[1].eager.len() == 1);
    assert!(err.iter().all(|e| e.is_none()), "{err:?}");
    assert_eq!(g[1].eager, vec![b"hello".to_vec()]);
    assert_eq!(t[1].encrypted(0), Some(true));
}

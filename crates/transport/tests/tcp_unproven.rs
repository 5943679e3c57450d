//! Anyone who can reach a rank's port can open connections to it. Idle
//! callers that never prove they hold the job secret must not use up the
//! rank's descriptors, and the job's own connections must keep working.

use gridmpi_datatype::UserBuf;
use gridmpi_transport::tcp::Tcp;
use gridmpi_transport::{Sink, Transport};
use gridmpi_wire::{Envelope, Frame, Header, Payload, Pid, SentToken, Transmit};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Got {
    frames: Vec<(Pid, Vec<u8>)>,
}

impl Sink for Got {
    fn frame(&mut self, peer: Pid, _h: &Header, payload: &[u8]) -> Result<(), String> {
        self.frames.push((peer, payload.to_vec()));
        Ok(())
    }
    fn data_target(&mut self, _peer: Pid, _h: &Header) -> Result<UserBuf, String> {
        Err("no Data frames in this test".into())
    }
    fn data_landed(&mut self, _peer: Pid, _h: &Header) -> Result<(), String> {
        Ok(())
    }
    fn sent(&mut self, _token: SentToken) {}
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn idle_unproven_callers_are_capped_and_the_job_goes_on() {
    let lo = Ipv4Addr::LOCALHOST;
    let secret = [7u8; 32];
    let mut t0 = Tcp::new(0, 2, 42, secret, lo).unwrap();
    let mut t1 = Tcp::new(1, 2, 42, secret, lo).unwrap();
    t0.set_peer_addrs(1, vec![SocketAddrV4::new(lo, t1.port())]);
    t1.set_peer_addrs(0, vec![SocketAddrV4::new(lo, t0.port())]);
    let (mut g0, mut g1) = (Got::default(), Got::default());

    // 300 callers that connect and say nothing.
    let before = open_fds();
    let idle: Vec<TcpStream> = (0..300).map(|_| TcpStream::connect((lo, t1.port())).unwrap()).collect();
    let end = Instant::now() + Duration::from_millis(500);
    while Instant::now() < end {
        t1.poll(&mut g1).unwrap();
    }
    // The callers' 300 sockets are ours too; rank 1 holds at most its cap.
    let held = open_fds() - before - idle.len();
    assert!(held <= 64 + 2, "rank 1 holds {held} descriptors for 300 unproven callers");

    // The job's own connection is made and carries a frame both ways.
    let env = Envelope { ctx: 0, src: 0, tag: 5 };
    let msg = |peer: Pid, bytes: &[u8]| Transmit {
        peer,
        header: Header::new(Frame::Eager { env, sync: None }, bytes.len() as u32),
        payload: Payload::Owned(bytes.to_vec()),
        notify: None,
    };
    t0.send(msg(1, b"hello"), &mut g0).unwrap();
    t1.send(msg(0, b"world"), &mut g1).unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while (g0.frames.is_empty() || g1.frames.is_empty()) && Instant::now() < end {
        t0.poll(&mut g0).unwrap();
        t1.poll(&mut g1).unwrap();
    }
    assert_eq!(g1.frames, vec![(0, b"hello".to_vec())]);
    assert_eq!(g0.frames, vec![(1, b"world".to_vec())]);
    drop(idle);
}

/// Someone on the network (without the secret) forges a HELLO claiming to be
/// rank 0, before rank 0 itself connects, and holds its connection open.
/// It must get no slot: the real rank 0 is admitted and the frames flow.
#[test]
fn a_forged_hello_takes_no_rank_slot() {
    use gridmpi_transport::tcp::handshake::{Connector, Identity, Keys};
    use std::io::{Read, Write};
    let lo = Ipv4Addr::LOCALHOST;
    let secret = [9u8; 32];
    let mut t0 = Tcp::new(0, 2, 77, secret, lo).unwrap();
    let mut t1 = Tcp::new(1, 2, 77, secret, lo).unwrap();
    t0.set_peer_addrs(1, vec![SocketAddrV4::new(lo, t1.port())]);
    t1.set_peer_addrs(0, vec![SocketAddrV4::new(lo, t0.port())]);
    let (mut g0, mut g1) = (Got::default(), Got::default());

    // The forger knows the protocol and the ranks, not the job or secret.
    let fake = Identity { me: 0, version: gridmpi_wire::WIRE_VERSION, keys: Keys { job: 77, secret: [0u8; 32] } };
    let mut forger = Connector::new(fake, 1, [3u8; 16]);
    let mut sock = TcpStream::connect((lo, t1.port())).unwrap();
    sock.set_nonblocking(true).unwrap();
    let end = Instant::now() + Duration::from_millis(500);
    let mut buf = [0u8; 512];
    while Instant::now() < end {
        while let Some(out) = forger.poll_transmit() {
            let _ = sock.write_all(&out);
        }
        t1.poll(&mut g1).unwrap();
        if let Ok(n) = sock.read(&mut buf) {
            forger.handle_bytes(&buf[..n]);
        }
    }

    // The real rank 0 now calls, and messages go both ways.
    let env = Envelope { ctx: 0, src: 0, tag: 1 };
    let msg = |peer: Pid, bytes: &[u8]| Transmit {
        peer,
        header: Header::new(Frame::Eager { env, sync: None }, bytes.len() as u32),
        payload: Payload::Owned(bytes.to_vec()),
        notify: None,
    };
    t0.send(msg(1, b"real"), &mut g0).unwrap();
    t1.send(msg(0, b"reply"), &mut g1).unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while (g0.frames.is_empty() || g1.frames.is_empty()) && Instant::now() < end {
        t0.poll(&mut g0).unwrap();
        t1.poll(&mut g1).unwrap();
    }
    assert_eq!(g1.frames, vec![(0, b"real".to_vec())], "rank 1 did not hear the real rank 0");
    assert_eq!(g0.frames, vec![(1, b"reply".to_vec())]);
    drop(sock);
}

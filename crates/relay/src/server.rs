//! The relay process (`gridmpirun --relay ADDR:PORT`): for every caller,
//! read and check its preface, connect onward, then move bytes both ways
//! until either side is done. One thread per direction of each relayed
//! connection: a job has one connection per pair of ranks in different
//! clusters, so a few dozen threads, each asleep in `splice(2)`.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::{unix_now, Preface, Replays, MAX_LINE};

/// How long a caller has to send its preface, and a connection onward to
/// open.
const PREFACE_TIME: Duration = Duration::from_secs(10);
const CONNECT_TIME: Duration = Duration::from_secs(10);
/// Callers that have not sent a preface yet, at most; more are closed at
/// once (someone is flooding the port).
const MAX_PENDING: usize = 512;

/// Serve callers on `listener` until it fails. `log` says what happens to
/// every connection on stderr.
pub fn serve(listener: TcpListener, key: [u8; 32], log: bool) -> io::Error {
    let replays = Arc::new(Mutex::new(Replays::default()));
    let pending = Arc::new(Mutex::new(0usize));
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted || e.kind() == io::ErrorKind::ConnectionAborted => continue,
            Err(e) => return e,
        };
        {
            let mut p = pending.lock().expect("pending lock");
            if *p >= MAX_PENDING {
                continue; // dropped: closes it
            }
            *p += 1;
        }
        let (replays, pending) = (replays.clone(), pending.clone());
        let spawned = thread::Builder::new().name("relay".into()).spawn(move || {
            let opened = open(&stream, &key, &replays);
            *pending.lock().expect("pending lock") -= 1;
            match opened {
                Ok(onward) => {
                    let to = onward.peer_addr().map_or("?".into(), |a| a.to_string());
                    if log {
                        eprintln!("gridmpi-relay: {peer} -> {to}: relaying");
                    }
                    let (up, down) = relay(stream, onward);
                    if log {
                        eprintln!("gridmpi-relay: {peer} -> {to}: closed after {up} bytes up, {down} down");
                    }
                }
                Err(why) => eprintln!("gridmpi-relay: refused {peer}: {why}"),
            }
        });
        if spawned.is_err() {
            eprintln!("gridmpi-relay: cannot start a thread for {peer}; closed it");
        }
    }
}

/// Read the caller's preface, check it, open the connection onward and
/// pass on what the caller sent after its preface.
fn open(caller: &TcpStream, key: &[u8; 32], replays: &Mutex<Replays>) -> Result<TcpStream, String> {
    caller.set_read_timeout(Some(PREFACE_TIME)).map_err(|e| e.to_string())?;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    let end = loop {
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            break i;
        }
        if buf.len() > MAX_LINE {
            return Err("no preface line (too long)".into());
        }
        match (&*caller).read(&mut chunk) {
            Ok(0) => return Err("closed before its preface".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("no preface within {PREFACE_TIME:?}: {e}")),
        }
    };
    let preface = Preface::parse(&buf[..end], key)?;
    replays.lock().expect("replays lock").admit(&preface, unix_now())?;
    caller.set_read_timeout(None).map_err(|e| e.to_string())?;
    let mut onward = match preface.via.first() {
        Some(next) => {
            let s = connect(*next)?;
            (&s).write_all(&preface.onward().map_err(|e| e.to_string())?.line(key)).map_err(|e| format!("writing to relay {next}: {e}"))?;
            s
        }
        None => {
            let mut last = String::new();
            let mut found = None;
            for to in &preface.to {
                match connect(*to) {
                    Ok(s) => {
                        found = Some(s);
                        break;
                    }
                    Err(e) => last = e,
                }
            }
            found.ok_or(last)?
        }
    };
    onward.write_all(&buf[end + 1..]).map_err(|e| format!("passing on the first bytes: {e}"))?;
    caller.set_nodelay(true).ok();
    Ok(onward)
}

fn connect(to: SocketAddrV4) -> Result<TcpStream, String> {
    let s = TcpStream::connect_timeout(&to.into(), CONNECT_TIME).map_err(|e| format!("cannot connect to {to}: {e}"))?;
    s.set_nodelay(true).ok();
    Ok(s)
}

/// Move bytes both ways until both directions end; (up, down) byte counts.
fn relay(caller: TcpStream, onward: TcpStream) -> (u64, u64) {
    let (c2, o2) = match (caller.try_clone(), onward.try_clone()) {
        (Ok(c), Ok(o)) => (c, o),
        _ => return (0, 0),
    };
    let down = thread::Builder::new().name("relay-down".into()).spawn(move || pump(&o2, &c2));
    let up = pump(&caller, &onward);
    let down = match down {
        Ok(h) => h.join().unwrap_or(0),
        Err(_) => {
            let _ = caller.shutdown(Shutdown::Both);
            0
        }
    };
    (up, down)
}

/// Copy `from` to `to` until `from` ends: then end `to`'s direction too
/// (a reset or error ends both connections, so each end notices as it
/// would without the relay in between).
fn pump(from: &TcpStream, to: &TcpStream) -> u64 {
    let (n, clean) = match splice_all(from.as_raw_fd(), to.as_raw_fd()) {
        Ok(n) => (n, true),
        Err((n, _)) => (n, false),
    };
    if clean {
        let _ = to.shutdown(Shutdown::Write);
    } else {
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    }
    n
}

/// Move everything from socket `from` to socket `to` through a pipe, in
/// the kernel; the bytes moved, also on error.
fn splice_all(from: RawFd, to: RawFd) -> Result<u64, (u64, io::Error)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors we pass.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err((0, io::Error::last_os_error()));
    }
    // SAFETY: both descriptors were just created and are owned only here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // A bigger pipe moves more per call (the default is 64 KiB).
    // SAFETY: fcntl on our pipe.
    unsafe { libc::fcntl(wr.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    // Not SPLICE_F_MORE: on a socket it corks what is written until more
    // comes, and a rank's last message waits for a timer.
    let flags = libc::SPLICE_F_MOVE;
    let mut total = 0u64;
    loop {
        // SAFETY: splice between descriptors we hold, no offsets.
        let n = unsafe { libc::splice(from, std::ptr::null_mut(), wr.as_raw_fd(), std::ptr::null_mut(), 1 << 20, flags) };
        if n == 0 {
            return Ok(total);
        }
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err((total, e));
        }
        let mut left = n as usize;
        while left > 0 {
            // SAFETY: as above.
            let m = unsafe { libc::splice(rd.as_raw_fd(), std::ptr::null_mut(), to, std::ptr::null_mut(), left, flags) };
            if m <= 0 {
                let e = if m == 0 { io::Error::from(io::ErrorKind::WriteZero) } else { io::Error::last_os_error() };
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err((total, e));
            }
            left -= m as usize;
        }
        total += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay_key;

    fn listen() -> (TcpListener, SocketAddrV4) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = match l.local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            _ => unreachable!(),
        };
        (l, a)
    }

    fn start_relay(key: [u8; 32]) -> SocketAddrV4 {
        let (l, a) = listen();
        thread::spawn(move || serve(l, key, false));
        a
    }

    /// Two relays in a row carry 8 MiB each way, unchanged, and a half
    /// close passes through.
    #[test]
    fn bytes_pass_two_relays_both_ways() {
        let key = relay_key(&[3; 32]);
        let (r1, r2) = (start_relay(key), start_relay(key));
        let (dest, dest_addr) = listen();
        let echo = thread::spawn(move || {
            let (mut s, _) = dest.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            let back: Vec<u8> = got.iter().map(|b| b.wrapping_add(1)).collect();
            s.write_all(&back).unwrap();
            got.len()
        });
        let mut c = TcpStream::connect(r1).unwrap();
        let p = Preface::new(vec![r2], vec!["127.0.0.1:1".parse().unwrap(), dest_addr]).unwrap();
        let data: Vec<u8> = (0..8 << 20).map(|i: u32| (i % 251) as u8).collect();
        let mut first = p.line(&key);
        first.extend_from_slice(&data[..1000]);
        c.write_all(&first).unwrap();
        c.write_all(&data[1000..]).unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        c.read_to_end(&mut back).unwrap();
        assert_eq!(echo.join().unwrap(), data.len());
        assert!(back.iter().zip(&data).all(|(b, d)| *b == d.wrapping_add(1)) && back.len() == data.len());
    }

    /// A preface with another key, or used twice, gets nothing through.
    #[test]
    fn strangers_and_replays_are_refused() {
        let key = relay_key(&[4; 32]);
        let r = start_relay(key);
        let (dest, dest_addr) = listen();
        dest.set_nonblocking(true).unwrap();
        let line = Preface::new(vec![], vec![dest_addr]).unwrap().line(&relay_key(&[5; 32]));
        let mut c = TcpStream::connect(r).unwrap();
        c.write_all(&line).unwrap();
        let mut buf = [0u8; 1];
        assert_eq!(c.read(&mut buf).unwrap_or(0), 0, "the relay closes on a wrong key");
        let good = Preface::new(vec![], vec![dest_addr]).unwrap().line(&key);
        for attempt in 0..2 {
            let mut c = TcpStream::connect(r).unwrap();
            c.write_all(&good).unwrap();
            if attempt == 0 {
                c.write_all(b"x").unwrap();
                thread::sleep(Duration::from_millis(200));
                assert!(dest.accept().is_ok(), "the first use goes through");
            } else {
                assert_eq!(c.read(&mut buf).unwrap_or(0), 0, "the replay is closed");
                assert!(dest.accept().is_err(), "and reaches nobody");
            }
        }
    }
}

//! The library's recorder writes, this crate reads: a traced loopback
//! connection with collective markers comes back with its counters, and the
//! report and CSV are produced from it.

use mpi::trace::{TraceSettings, Tracer};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

#[test]
fn recorder_output_reads_back_and_renders() {
    let dir = std::env::temp_dir().join(format!("gridmpi-trace-roundtrip-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let settings = TraceSettings { dir: dir.clone(), interval: Duration::from_millis(1), idle_interval: Duration::from_millis(20), buffer_max: 8 << 20 };
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut b, _) = l.accept().unwrap();
    let mut t0 = Tracer::start(&settings, 0, "left").unwrap();
    let mut t1 = Tracer::start(&settings, 1, "right").unwrap();
    t0.conn_opened(1, a.as_raw_fd(), "right");
    t1.conn_opened(0, b.as_raw_fd(), "left");
    t0.tuning(1, "TCP_NOTSENT_LOWAT", "131072");
    const N: usize = 30;
    const CHUNK: usize = 256 * 1024;
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        for _ in 0..N {
            b.read_exact(&mut buf).unwrap();
        }
        b
    });
    for k in 0..N {
        let tok = t0.coll_begin("MPI_Alltoall", 5, CHUNK as u64);
        a.write_all(&vec![k as u8; CHUNK]).unwrap();
        t0.tick(true);
        std::thread::sleep(Duration::from_millis(2));
        t0.coll_end(tok);
    }
    let b = reader.join().unwrap();
    std::thread::sleep(Duration::from_millis(10));
    t0.conn_closed(1, a.as_raw_fd());
    t1.conn_closed(0, b.as_raw_fd());
    t0.finish();
    t1.finish();

    let job = gridmpi_trace::load(&dir).unwrap();
    assert_eq!(job.ranks.len(), 2);
    assert!(job.warnings.is_empty(), "{:?}", job.warnings);
    let c0 = job.conns.iter().find(|c| c.rank == 0).unwrap();
    assert_eq!(c0.peer, 1);
    assert!(c0.bytes_sent >= (N * CHUNK) as u64, "sent {}", c0.bytes_sent);
    assert!(c0.max_cwnd > 0);
    let c1 = job.conns.iter().find(|c| c.rank == 1).unwrap();
    assert!(c1.bytes_received >= (N * CHUNK) as u64);
    assert!(job.ranks[0].conns[0].samples.len() >= 3, "samples: {}", job.ranks[0].conns[0].samples.len());
    assert_eq!(job.colls.len(), 1);
    assert_eq!(job.colls[0].calls, N);
    assert_eq!(job.ranks[0].tunings[0].option, "TCP_NOTSENT_LOWAT");

    let text = gridmpi_trace::summary::render(&job, "x");
    assert!(text.contains("0 \u{2192} 1") && text.contains("MPI_Alltoall"), "{text}");
    let page = gridmpi_trace::html::render(&job, "roundtrip");
    assert!(page.contains("<svg") && page.contains("conn-0") && !page.contains("http://") && !page.contains("https://"));
    let files = gridmpi_trace::csv::write(&job, &dir.join("csv")).unwrap();
    assert_eq!(files.len(), 4);
    let samples = std::fs::read_to_string(dir.join("csv/samples.csv")).unwrap();
    assert!(samples.starts_with("rank,conn,peer,t_s,state,ca_state"));
    std::fs::remove_dir_all(&dir).ok();
}

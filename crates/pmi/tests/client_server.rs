//! Our client against our server, over real sockets, in one process.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::thread;

use gridmpi_pmi::server::{Event, JobInfo, Server};
use gridmpi_pmi::{Pmi, PmiError, SpawnApp, Version};

/// Serve `n` ranks until every connection closes; returns the events seen
/// (replies excluded).
fn serve(n: u32, server_ends: Vec<UnixStream>) -> thread::JoinHandle<Vec<Event>> {
    thread::spawn(move || {
        let mut server = Server::new(JobInfo {
            size: n,
            kvsname: "kvs_test".into(),
            appnum_of_rank: Vec::new(),
            universe_size: n as i32,
            node_of_rank: (0..n).map(|r| r / 2).collect(),
        });
        let (tx, rx) = mpsc::channel::<(u32, Option<Vec<u8>>)>();
        let mut writers = Vec::new();
        for (rank, s) in server_ends.into_iter().enumerate() {
            writers.push(s.try_clone().unwrap());
            let tx = tx.clone();
            thread::spawn(move || {
                let mut s = s;
                let mut buf = [0u8; 1000];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => {
                            let _ = tx.send((rank as u32, None));
                            return;
                        }
                        Ok(k) => {
                            let _ = tx.send((rank as u32, Some(buf[..k].to_vec())));
                        }
                    }
                }
            });
        }
        drop(tx);
        let mut seen = Vec::new();
        let mut open = n;
        while open > 0 {
            let (rank, data) = rx.recv().unwrap();
            match data {
                Some(bytes) => server.receive(rank, &bytes),
                None => {
                    server.disconnected(rank);
                    open -= 1;
                }
            }
            while let Some(ev) = server.poll_event() {
                match ev {
                    Event::Reply { rank, bytes } => {
                        let _ = writers[rank as usize].write_all(&bytes);
                    }
                    Event::Spawn { rank, apps, env } => {
                        // As gridmpirun answers: started, or why not.
                        let result = match apps[0].command.as_str() {
                            "missing" => Err("cannot start rank 0 on host h: missing: command not found".to_string()),
                            _ => Ok(()),
                        };
                        seen.push(Event::Spawn { rank, apps, env });
                        server.spawn_done(rank, result);
                    }
                    other => seen.push(other),
                }
            }
        }
        seen
    })
}

fn run_job(n: u32, version: Version, body: fn(&mut Pmi)) -> Vec<Event> {
    let mut server_ends = Vec::new();
    let mut clients = Vec::new();
    for rank in 0..n {
        let (a, b) = UnixStream::pair().unwrap();
        server_ends.push(a);
        clients.push(thread::spawn(move || {
            let mut pmi = Pmi::from_stream(b, version, rank, n).unwrap();
            assert_eq!(pmi.version(), Some(version));
            assert_eq!((pmi.rank(), pmi.size()), (rank, n));
            assert_eq!(pmi.kvs_name(), "kvs_test");
            assert_eq!(pmi.universe_size(), Some(n));
            body(&mut pmi);
            pmi.finalize().unwrap();
        }));
    }
    let server = serve(n, server_ends);
    for c in clients {
        c.join().unwrap();
    }
    server.join().unwrap()
}

fn exchange(pmi: &mut Pmi) {
    let me = pmi.rank();
    let n = pmi.size();
    // A value with every awkward character, and one far over the entry limit.
    let card = format!("rank {me}; tcp=10.0.0.{me}:4000 \\ 100% done\nend");
    let long: String = (0..3000).map(|i| char::from(b'a' + ((i + me as usize) % 26) as u8)).collect();
    pmi.put("card", &card).unwrap();
    pmi.put("long", &long).unwrap();
    pmi.put("empty", "").unwrap();
    pmi.fence().unwrap();
    for peer in 0..n {
        assert_eq!(pmi.get(peer, "card").unwrap(), format!("rank {peer}; tcp=10.0.0.{peer}:4000 \\ 100% done\nend"));
        let expect: String = (0..3000).map(|i| char::from(b'a' + ((i + peer as usize) % 26) as u8)).collect();
        assert_eq!(pmi.get(peer, "long").unwrap(), expect);
        assert_eq!(pmi.get(peer, "empty").unwrap(), "");
    }
    assert!(matches!(pmi.get(0, "missing"), Err(PmiError::NotFound { rank: 0, .. })));
    let mapping = pmi.job_attr("PMI_process_mapping").unwrap().unwrap();
    assert!(mapping.starts_with("(vector,"), "{mapping}");
    // A second round reuses the store.
    pmi.put("round2", &me.to_string()).unwrap();
    pmi.fence().unwrap();
    assert_eq!(pmi.get((me + 1) % n, "round2").unwrap(), ((me + 1) % n).to_string());
}

#[test]
fn pmi1_put_fence_get() {
    let events = run_job(5, Version::Pmi1, exchange);
    assert_eq!(events.iter().filter(|e| matches!(e, Event::Finalized { .. })).count(), 5);
    assert!(events.contains(&Event::Initialized { rank: 4, version: 1 }));
}

#[test]
fn pmi2_put_fence_get() {
    let events = run_job(4, Version::Pmi2, exchange);
    assert_eq!(events.iter().filter(|e| matches!(e, Event::Finalized { .. })).count(), 4);
    assert!(events.contains(&Event::Initialized { rank: 0, version: 2 }));
}

#[test]
fn dead_server_is_an_error_not_a_hang() {
    let (a, b) = UnixStream::pair().unwrap();
    let server = thread::spawn(move || {
        // Answer init, then die in the middle of the fence.
        let mut a = a;
        let mut server = Server::new(JobInfo::single_node(2, "kvs"));
        let mut buf = [0u8; 4096];
        loop {
            let k = a.read(&mut buf).unwrap();
            server.receive(0, &buf[..k]);
            let mut done = false;
            while let Some(ev) = server.poll_event() {
                if let Event::Reply { bytes, .. } = ev {
                    a.write_all(&bytes).unwrap();
                }
            }
            if server.ranks_in_barrier().contains(&0) {
                done = true;
            }
            if done {
                return; // drops the socket
            }
        }
    });
    let mut pmi = Pmi::from_stream(b, Version::Pmi1, 0, 2).unwrap();
    let err = pmi.fence().unwrap_err();
    assert_eq!(err.to_string(), "PMI server closed the connection during fence");
    server.join().unwrap();
}

fn spawn_apps() -> Vec<SpawnApp> {
    vec![
        SpawnApp {
            command: "/bin/sh".into(),
            args: vec!["-c".into(), "echo child $PMI_RANK; x=1".into(), "".into()],
            maxprocs: 2,
            info: vec![("wdir".into(), "/tmp".into()), ("host".into(), "a, b".into())],
        },
        SpawnApp { command: "./second".into(), args: Vec::new(), maxprocs: 1, info: Vec::new() },
    ]
}

fn spawn_env() -> Vec<(String, String)> {
    vec![("GRIDMPI_PARENT_PORT".into(), "tag#0$host#10.0.0.1 port=5;x".into()), ("OTHER".into(), "".into())]
}

fn spawn_and_names(pmi: &mut Pmi) {
    if pmi.rank() == 0 {
        pmi.spawn(&spawn_apps(), &spawn_env()).unwrap();
        let missing = SpawnApp { command: "missing".into(), args: Vec::new(), maxprocs: 1, info: Vec::new() };
        let e = pmi.spawn(&[missing], &[]).unwrap_err();
        assert!(e.to_string().contains("missing: command not found"), "{e}");
        assert!(matches!(pmi.spawn(&[], &[]), Err(PmiError::SpawnRequest { .. })));
        pmi.publish_name("svc", "port name with spaces;x").unwrap();
        assert!(pmi.publish_name("svc", "again").is_err());
    }
    pmi.fence().unwrap();
    assert_eq!(pmi.lookup_name("svc").unwrap().as_deref(), Some("port name with spaces;x"));
    assert_eq!(pmi.lookup_name("nobody").unwrap(), None);
    pmi.fence().unwrap();
    if pmi.rank() == 1 {
        pmi.unpublish_name("svc").unwrap();
        assert!(pmi.unpublish_name("svc").is_err());
    }
    pmi.fence().unwrap();
    assert_eq!(pmi.lookup_name("svc").unwrap(), None);
}

fn check_spawn_events(events: &[Event]) {
    let spawns: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::Spawn { .. })).collect();
    assert_eq!(spawns.len(), 2, "{events:?}");
    assert_eq!(spawns[0], &Event::Spawn { rank: 0, apps: spawn_apps(), env: spawn_env() });
}

#[test]
fn pmi1_spawn_and_name_service() {
    check_spawn_events(&run_job(2, Version::Pmi1, spawn_and_names));
}

#[test]
fn pmi2_spawn_and_name_service() {
    check_spawn_events(&run_job(2, Version::Pmi2, spawn_and_names));
}

#[test]
fn a_singleton_cannot_spawn_but_names_itself() {
    let mut pmi = Pmi::singleton();
    let app = SpawnApp { command: "x".into(), args: Vec::new(), maxprocs: 1, info: Vec::new() };
    let e = pmi.spawn(&[app], &[]).unwrap_err();
    assert!(e.to_string().starts_with("MPI_Comm_spawn needs gridmpirun: "), "{e}");
    pmi.publish_name("s", "p").unwrap();
    assert_eq!(pmi.lookup_name("s").unwrap().as_deref(), Some("p"));
    pmi.unpublish_name("s").unwrap();
    assert_eq!(pmi.lookup_name("s").unwrap(), None);
}

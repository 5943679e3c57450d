//! `gridmpirun --rendezvous-server ADDR:PORT --groups N`: where groups of
//! ranks started separately (one per site, each by its own launcher) meet
//! and become one job.
//!
//! Each rank connects, proves it holds the job secret and says which group
//! it belongs to (the exchange is `gridmpi_pmi::rendezvous`). Once all N
//! groups are complete, every rank is told its rank in the whole job and
//! this process becomes the job's PMI server over the same connections
//! (the `gridmpi_pmi::server` state machine, as for ranks gridmpirun
//! starts itself). It ends when every rank has finalized; when a rank
//! aborts or leaves without finalizing, it tells every other rank to end
//! (`rendezvous-end`) and exits with the failed rank's code.
//!
//! A connection that does not prove the secret within
//! [`HANDSHAKE_TIME`] is closed and logged; it never holds up the job.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use gridmpi_pmi::rendezvous::{self, Join, Placed};
use gridmpi_pmi::server::{Event as PmiEvent, JobInfo, Server};
use gridmpi_pmi::wire::{Message, Wire};

/// How long a connection has to prove the secret.
const HANDSHAKE_TIME: Duration = Duration::from_secs(10);
/// Connections still proving themselves at once; more are closed at once
/// (someone is flooding the port).
const MAX_HANDSHAKES: usize = 512;
/// While the job forms, say what it still waits for this often.
const WAITING_NOTE: Duration = Duration::from_secs(30);
/// After a rank leaves without finalizing, how long an abort may still
/// arrive and name the job's real end. A rank that calls MPI_Abort writes
/// its abort here first and then has its own launcher kill its group; the
/// abort is in our socket before the killed ranks' ends are, but each
/// connection has its own reader thread, so the ends can reach the loop
/// first.
const ABORT_GRACE: Duration = Duration::from_millis(500);

/// What the command line asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    pub listen: String,
    pub groups: u32,
    pub secret_file: PathBuf,
    /// Write the address actually listened on here (for `:0`).
    pub address_file: Option<PathBuf>,
}

enum Event {
    /// A rank proved the secret.
    Joined { join: Join, server_nonce: [u8; 32], stream: TcpStream, peer: SocketAddr },
    /// Bytes from a placed rank's connection.
    Bytes { rank: u32, bytes: Vec<u8> },
    Closed { rank: u32 },
}

/// A rank that has joined, before the job forms.
struct Waiting {
    join: Join,
    server_nonce: [u8; 32],
    stream: TcpStream,
    peer: SocketAddr,
}

pub fn run(args: &Args) -> i32 {
    match serve(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gridmpirun: rendezvous: {e}");
            1
        }
    }
}

fn serve(args: &Args) -> Result<i32, String> {
    let secret = rendezvous::create_secret_file(&args.secret_file)?;
    let listener = TcpListener::bind(&args.listen).map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    if let Some(f) = &args.address_file {
        std::fs::write(f, format!("{addr}\n")).map_err(|e| format!("--address-file {}: {e}", f.display()))?;
    }
    eprintln!(
        "gridmpirun: rendezvous at {addr}: waiting for {} group{} (job secret: {})",
        args.groups,
        if args.groups == 1 { "" } else { "s" },
        args.secret_file.display()
    );
    let (tx, events) = mpsc::channel();
    {
        let tx = tx.clone();
        thread::Builder::new()
            .name("accept".into())
            .spawn(move || accept(listener, secret, tx))
            .map_err(|e| format!("cannot start the accepting thread: {e}"))?;
    }
    let placed = form_job(args.groups, &secret, &events)?;
    serve_job(placed, tx, &events)
}

fn accept(listener: TcpListener, secret: [u8; 32], tx: mpsc::Sender<Event>) {
    let pending = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if pending.load(Ordering::Relaxed) >= MAX_HANDSHAKES {
            continue; // dropped: closes it
        }
        pending.fetch_add(1, Ordering::Relaxed);
        let (tx, pending) = (tx.clone(), pending.clone());
        let spawned = thread::Builder::new().name("handshake".into()).spawn(move || {
            let peer = stream.peer_addr().ok();
            match handshake(&stream, &secret) {
                Ok((join, server_nonce)) => {
                    if let Some(peer) = peer {
                        let _ = tx.send(Event::Joined { join, server_nonce, stream, peer });
                    }
                }
                Err(why) => {
                    let who = peer.map_or("?".to_string(), |p| p.to_string());
                    eprintln!("gridmpirun: rendezvous: refused a connection from {who}: {why}");
                    let _ = (&stream).write_all(b"refused no valid proof of the job secret\n");
                }
            }
            pending.fetch_sub(1, Ordering::Relaxed);
        });
        if spawned.is_err() {
            eprintln!("gridmpirun: rendezvous: cannot start a thread for a new connection; closed it");
        }
    }
}

/// Greet, read the join line, check it.
fn handshake(stream: &TcpStream, secret: &[u8; 32]) -> Result<(Join, [u8; 32]), String> {
    stream.set_read_timeout(Some(HANDSHAKE_TIME)).map_err(|e| e.to_string())?;
    stream.set_nodelay(true).ok();
    let mut nonce = [0u8; 32];
    rendezvous::random_bytes(&mut nonce).map_err(|e| format!("getrandom: {e}"))?;
    let mut w = stream;
    w.write_all(rendezvous::greeting(&nonce).as_bytes()).map_err(|e| e.to_string())?;
    let mut line = Vec::new();
    // One byte at a time: nothing past the line may be read here, it is
    // the rank's PMI. (A few hundred bytes, once per rank.)
    let mut r = BufReader::with_capacity(1, stream).take(rendezvous::MAX_LINE as u64);
    r.read_until(b'\n', &mut line).map_err(|e| format!("no proof within {HANDSHAKE_TIME:?}: {e}"))?;
    if line.last() != Some(&b'\n') {
        return Err("no complete line".into());
    }
    let line = String::from_utf8(line).map_err(|_| "not text".to_string())?;
    let join = Join::parse(&line, secret, &nonce)?;
    stream.set_read_timeout(None).map_err(|e| e.to_string())?;
    Ok((join, nonce))
}

/// What the job still lacks, for the periodic note while it forms.
fn waiting_for(waiting: &BTreeMap<String, BTreeMap<u32, Waiting>>, groups: u32) -> String {
    let mut parts: Vec<String> = waiting
        .values()
        .filter_map(|g| {
            let first = &g.values().next()?.join;
            let name = if first.name.is_empty() { "(unnamed)" } else { first.name.as_str() };
            (g.len() < first.size as usize).then(|| format!("group {name} has {} of {} ranks", g.len(), first.size))
        })
        .collect();
    let unseen = groups as usize - waiting.len();
    if unseen > 0 {
        parts.push(format!("{unseen} group{} not seen yet", if unseen == 1 { "" } else { "s" }));
    }
    parts.join("; ")
}

/// A placed rank: its connection and where it came from.
struct Member {
    stream: TcpStream,
    peer: SocketAddr,
    group: String,
    group_rank: u32,
}

/// Wait until every group is complete; place every rank.
fn form_job(groups: u32, secret: &[u8; 32], events: &mpsc::Receiver<Event>) -> Result<Vec<Member>, String> {
    // group id -> its ranks, by group rank
    let mut waiting: BTreeMap<String, BTreeMap<u32, Waiting>> = BTreeMap::new();
    let complete = |w: &BTreeMap<String, BTreeMap<u32, Waiting>>| {
        w.len() == groups as usize && w.values().all(|g| g.values().next().is_some_and(|r| r.join.size as usize == g.len()))
    };
    while !complete(&waiting) {
        let ev = match events.recv_timeout(WAITING_NOTE) {
            Ok(ev) => ev,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                eprintln!("gridmpirun: rendezvous: still waiting: {}", waiting_for(&waiting, groups));
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err("the accepting thread ended".into()),
        };
        let Event::Joined { join, server_nonce, stream, peer } = ev else { continue };
        let refuse = |stream: &TcpStream, why: String| {
            eprintln!("gridmpirun: rendezvous: refused rank {} of group {:?} from {peer}: {why}", join.rank, join.name);
            let _ = (&*stream).write_all(format!("refused {why}\n").as_bytes());
        };
        if !waiting.contains_key(&join.group) && waiting.len() == groups as usize {
            refuse(&stream, format!("the job has {groups} groups already (gridmpirun --rendezvous-server --groups {groups})"));
            continue;
        }
        let g = waiting.entry(join.group.clone()).or_default();
        if let Some(first) = g.values().next() {
            if first.join.size != join.size || first.join.name != join.name {
                refuse(&stream, format!("its group said it has {} ranks named {:?}", first.join.size, first.join.name));
                continue;
            }
        }
        if g.contains_key(&join.rank) {
            refuse(&stream, format!("rank {} of this group has joined already", join.rank));
            continue;
        }
        let (rank, size, name) = (join.rank, join.size, join.name.clone());
        g.insert(rank, Waiting { join, server_nonce, stream, peer });
        if g.len() == size as usize {
            let done = waiting.values().filter(|g| g.values().next().is_some_and(|r| r.join.size as usize == g.len())).count();
            let name = if name.is_empty() { "(unnamed)".to_string() } else { name };
            eprintln!("gridmpirun: rendezvous: group {name} arrived ({size} ranks); {done} of {groups} groups complete");
        }
    }
    // Order: named groups by name, then unnamed ones (by their random
    // id); ranks keep their order within a group.
    let mut order: Vec<(bool, String, String)> = waiting
        .iter()
        .map(|(id, g)| {
            let name = g.values().next().expect("complete").join.name.clone();
            (name.is_empty(), name, id.clone())
        })
        .collect();
    order.sort();
    let size: u32 = waiting.values().map(|g| g.len() as u32).sum();
    let mut job = [0u8; 32];
    rendezvous::random_bytes(&mut job).map_err(|e| format!("getrandom: {e}"))?;
    let mut members = Vec::with_capacity(size as usize);
    for (k, (_, name, id)) in order.iter().enumerate() {
        let name = if name.is_empty() { format!("group{k}") } else { name.clone() };
        for (group_rank, w) in waiting.remove(id).expect("ordered from the map") {
            let placed = Placed { rank: members.len() as u32, size, group: k as u32, groups, name: name.clone(), job };
            let line = placed.line(secret, &w.server_nonce, &w.join.nonce);
            // A rank that left while waiting is found by its reader below.
            let _ = (&w.stream).write_all(line.as_bytes());
            members.push(Member { stream: w.stream, peer: w.peer, group: name.clone(), group_rank });
        }
    }
    eprintln!("gridmpirun: rendezvous: the job has {size} ranks in {groups} groups");
    Ok(members)
}

/// Be the PMI server of the formed job until it ends.
fn serve_job(members: Vec<Member>, tx: mpsc::Sender<Event>, events: &mpsc::Receiver<Event>) -> Result<i32, String> {
    let size = members.len() as u32;
    let info = JobInfo {
        size,
        kvsname: format!("rendezvous-{}", std::process::id()),
        appnum_of_rank: Vec::new(),
        universe_size: size as i32,
        // Nothing here knows hosts; ranks find who shares theirs themselves.
        node_of_rank: (0..size).collect(),
    };
    let mut server = Server::new(info);
    for (rank, m) in members.iter().enumerate() {
        let reader = m.stream.try_clone().map_err(|e| format!("cannot read rank {rank}'s connection: {e}"))?;
        let tx = tx.clone();
        let rank = rank as u32;
        thread::Builder::new()
            .name(format!("rank-{rank}"))
            .spawn(move || read_rank(reader, rank, tx))
            .map_err(|e| format!("cannot start a thread for rank {rank}: {e}"))?;
    }
    drop(tx);
    let describe = |rank: u32| {
        let m = &members[rank as usize];
        format!("rank {rank} (rank {} of group {}, from {})", m.group_rank, m.group, m.peer)
    };
    let mut finalized = 0u32;
    let mut outages = crate::outages::Outages::default();
    let mut closed: HashMap<u32, bool> = HashMap::new();
    // The first rank that left without finalizing, and until when an abort
    // may still take its place as the reason the job ends.
    let mut left: Option<(String, Instant)> = None;
    loop {
        let ev = match &left {
            None => events.recv().map_err(|_| "every connection ended without a verdict".to_string())?,
            Some((why, until)) => match events.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(ev) => ev,
                Err(_) => return Ok(end_job(&members, &closed, None, 1, why)),
            },
        };
        match ev {
            Event::Joined { stream, .. } => {
                let _ = (&stream).write_all(b"refused the job is formed already\n");
            }
            Event::Bytes { rank, bytes } => server.receive(rank, &bytes),
            Event::Closed { rank } => {
                closed.insert(rank, true);
                if server.is_finalized(rank) {
                    server.disconnected(rank);
                } else if left.is_none() {
                    let why = format!("{} left the job without MPI_Finalize", describe(rank));
                    left = Some((why, Instant::now() + ABORT_GRACE));
                }
            }
        }
        while let Some(ev) = server.poll_event() {
            match ev {
                PmiEvent::Reply { rank, bytes } => {
                    if (&members[rank as usize].stream).write_all(&bytes).is_err() {
                        closed.insert(rank, true);
                    }
                }
                PmiEvent::Finalized { .. } => finalized += 1,
                PmiEvent::Abort { rank, exit_code, message } => {
                    let why = format!("{} aborted the job: {message}", describe(rank));
                    return Ok(end_job(&members, &closed, Some(rank), exit_code.clamp(1, 255), &why));
                }
                PmiEvent::ProtocolError { rank, message } => {
                    let why = format!("{} broke the PMI protocol: {message}", describe(rank));
                    return Ok(end_job(&members, &closed, Some(rank), 1, &why));
                }
                PmiEvent::Initialized { .. } => {}
                PmiEvent::Spawn { rank, .. } => {
                    // (GridMPI's client does not ask: it knows it joined a rendezvous.)
                    server.spawn_done(rank, Err("a rendezvous server starts no processes (MPI_Comm_spawn needs gridmpirun)".into()));
                }
                PmiEvent::Unsupported { rank, command } => {
                    eprintln!("gridmpirun: rendezvous: {} asked for {command:?}, which a rendezvous does not serve", describe(rank));
                }
                PmiEvent::Outage { rank, from, to, back, secs, budget } => {
                    if let Some(line) = outages.report(rank, &from, &to, back, secs, budget, Instant::now()) {
                        eprintln!("gridmpirun: rendezvous: {line}");
                    }
                }
                // A job formed at a rendezvous is not checkpointed: its
                // server refuses every checkpoint request, so none come.
                PmiEvent::CheckpointFrozen { .. } | PmiEvent::CheckpointWritten { .. } | PmiEvent::CheckpointAbandoned { .. } => {}
            }
        }
        // Only now: the last finalize's answer has been written above.
        if finalized == size {
            eprintln!("gridmpirun: rendezvous: all {size} ranks finalized");
            return Ok(0);
        }
    }
}

fn read_rank(mut stream: TcpStream, rank: u32, tx: mpsc::Sender<Event>) {
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => {
                let _ = tx.send(Event::Closed { rank });
                return;
            }
            Ok(n) => {
                if tx.send(Event::Bytes { rank, bytes: buf[..n].to_vec() }).is_err() {
                    return;
                }
            }
        }
    }
}

/// Tell every other rank the job is over, and why; the exit code.
fn end_job(members: &[Member], closed: &HashMap<u32, bool>, source: Option<u32>, code: i32, why: &str) -> i32 {
    eprintln!("gridmpirun: rendezvous: {why}; ending the job");
    let end = Message::new(Wire::V1, rendezvous::END_CMD).with("code", code).with("reason", format!("the job ended: {why}"));
    let bytes = end.encode().unwrap_or_default();
    for (rank, m) in members.iter().enumerate() {
        let rank = rank as u32;
        if Some(rank) != source && !closed.contains_key(&rank) {
            let _ = m.stream.set_write_timeout(Some(Duration::from_secs(2)));
            let _ = (&m.stream).write_all(&bytes);
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four members on loopback connections (ranks 0-1 group A, 2-3 group
    /// B); the far ends, to read what the server tells each rank.
    fn members() -> (Vec<Member>, Vec<TcpStream>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (mut members, mut far) = (Vec::new(), Vec::new());
        for rank in 0..4u32 {
            far.push(TcpStream::connect(addr).unwrap());
            let (stream, peer) = listener.accept().unwrap();
            members.push(Member { stream, peer, group: ["A", "B"][rank as usize / 2].into(), group_rank: rank % 2 });
        }
        (members, far)
    }

    /// The end the server sent to a rank, its escaped spaces plain.
    fn ended_with(far: &mut TcpStream) -> String {
        far.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut line = String::new();
        BufReader::new(far).read_line(&mut line).unwrap();
        line.replace("\\ ", " ")
    }

    /// The race CI once lost: rank 3 aborts, its launcher kills rank 2,
    /// and rank 2's end reaches the loop before rank 3's abort does.
    #[test]
    fn an_abort_just_after_a_rank_left_names_the_end() {
        let (members, mut far) = members();
        let (tx, rx) = mpsc::channel();
        tx.send(Event::Closed { rank: 2 }).unwrap();
        tx.send(Event::Bytes { rank: 3, bytes: b"cmd=abort exitcode=7 message=it broke\n".to_vec() }).unwrap();
        assert_eq!(serve_job(members, tx, &rx).unwrap(), 7);
        let line = ended_with(&mut far[0]);
        assert!(line.contains("code=7") && line.contains("rank 3 (rank 1 of group B") && line.contains("aborted"), "{line}");
    }

    /// Without an abort, a rank that left ends the job with code 1 once
    /// the grace is over, naming that rank.
    #[test]
    fn a_rank_that_left_ends_the_job_after_the_grace() {
        let (members, mut far) = members();
        let (tx, rx) = mpsc::channel();
        tx.send(Event::Closed { rank: 1 }).unwrap();
        // Another rank's requests in the grace change nothing.
        tx.send(Event::Bytes { rank: 0, bytes: b"cmd=init pmi_version=1 pmi_subversion=1\n".to_vec() }).unwrap();
        let keep = tx.clone();
        let start = Instant::now();
        assert_eq!(serve_job(members, tx, &rx).unwrap(), 1);
        assert!(start.elapsed() >= ABORT_GRACE);
        drop(keep);
        let line = ended_with(&mut far[2]);
        assert!(line.contains("code=1") && line.contains("rank 1 (rank 1 of group A") && line.contains("without MPI_Finalize"), "{line}");
    }
}

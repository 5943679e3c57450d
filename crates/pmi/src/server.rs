//! The process-manager side of PMI-1 and PMI-2, without I/O.
//!
//! The launcher owns one [`Server`] per job. It feeds the bytes each rank
//! writes on its PMI connection into [`Server::receive`], tells it when a
//! connection closes ([`Server::disconnected`]), and drains
//! [`Server::poll_event`]: replies to write back to ranks, and the facts the
//! launcher acts on (a rank initialized, finalized, aborted, spoke garbage).
//!
//! Connections are identified by rank: the launcher hands each rank its own
//! socket (`PMI_FD`), so it knows who is speaking before the first byte.
//!
//! What is served:
//! - PMI-1 (wire v1, versions 1.1 and 1.2): `init`, `initack`, `get_maxes`,
//!   `get_appnum`, `get_my_kvsname`, `get_universe_size`, `put`, `get`,
//!   `barrier_in` (also PMI-1.2 group barriers `WORLD:tag`, `NODE:tag`,
//!   `r1,r2,...:tag`), `finalize`, `abort`, `publish_name`,
//!   `unpublish_name`, `lookup_name`.
//! - PMI-2 (wire v2): `fullinit`, `job-getid`, `kvs-put`, `kvs-fence`,
//!   `kvs-get`, `info-getjobattr`, `info-putnodeattr`, `info-getnodeattr`
//!   (including `wait=TRUE`), `finalize`, `abort`, `name-publish`,
//!   `name-unpublish`, `name-lookup`; a `thrid` is echoed back.
//! - `spawn`, in both versions (PMI-1's `mcmd=spawn` blocks, PMI-2's
//!   `spawn`; formats in [`crate::spawn`]): the server checks the request
//!   and hands it to the launcher as [`Event::Spawn`]; the rank waits,
//!   while the server goes on serving the others, until the launcher says
//!   the new processes started or could not ([`Server::spawn_done`]),
//!   which sends the rank its reply. A malformed request gets an error
//!   reply at once.
//! - `job-connect` is refused with an error reply.
//! - GridMPI's checkpoint protocol, PMI-1 only (`gridmpi_ckpt_frozen`,
//!   `gridmpi_ckpt_written`, `gridmpi_ckpt_retire`): see
//!   [the section below](#checkpoint-rounds).
//! - GridMPI's list of failed ranks, PMI-1 only (`gridmpi_failed`): see
//!   [the section below](#failed-ranks).
//! - GridMPI's WAN outage reports, PMI-1 only: `cmd=gridmpi_outage
//!   from=A to=B state=down|still|back secs=S budget=N|kernel` is what a
//!   rank of cluster A sees of the WAN link to cluster B. It gets no reply
//!   (the rank must not block on a launcher link that may cross that very
//!   WAN); the launcher gets [`Event::Outage`] and says it once per link.
//!
//! # Failed ranks
//!
//! In a fault-tolerant job (`gridmpirun --with-ft ulfm`) a rank that dies
//! does not end the job: the launcher tells the server
//! ([`Server::rank_failed`]) and signals the others, which ask
//! `cmd=gridmpi_failed` and get `cmd=gridmpi_failed rc=0 ranks=R1,R2,...`
//! (world ranks in the order the launcher reported them; empty when none).
//! From then on no barrier or fence waits for a failed rank: one that
//! waited only for it completes at once, so the survivors can still meet
//! (and finalize). Whatever a failed rank still writes is ignored, and
//! nothing is sent to it.
//!
//! # Checkpoint rounds
//!
//! When the launcher checkpoints the job ([`Server::enable_checkpoints`]),
//! a round goes:
//!
//! 1. The launcher calls [`Server::checkpoint_start`] and signals every rank.
//! 2. Each rank freezes its MPI state and sends `cmd=gridmpi_ckpt_frozen
//!    ok=1` (or `ok=0 reason=...`). Nobody gets an answer until every rank
//!    of the job said ok=1: then each gets `cmd=gridmpi_ckpt_go rc=0
//!    seq=N` ([`Event::CheckpointFrozen`]).
//! 3. Each rank writes its image and sends `cmd=gridmpi_ckpt_written ok=1
//!    bytes=B ms=T host=H path=P` (or `ok=0 reason=...`). Once every rank
//!    did, the launcher gets [`Event::CheckpointWritten`], records the
//!    checkpoint, and calls [`Server::checkpoint_finish`], which answers
//!    every rank `cmd=gridmpi_ckpt_done rc=0 stop=0|1`.
//!
//! A rank that says ok=0, finalizes, retires, or closes its connection
//! during a round, or the launcher ([`Server::checkpoint_abort`]: a
//! timeout, a rank that exited), abandons it: every rank waiting gets
//! `rc=1 msg=REASON` (`go` or `done`, as it waits for), later requests of
//! the round get the same at once, and the launcher gets
//! [`Event::CheckpointAbandoned`]. The job goes on.
//!
//! `cmd=gridmpi_ckpt_retire` (a rank entering MPI_Finalize) is answered
//! `cmd=gridmpi_ckpt_retired rc=0` at once; from then on no round starts.
//!
//! Job attributes `PMI_process_mapping` (MPICH's node layout, in its
//! `(vector,(node,count,ranks_per_node),...)` notation) and `universeSize`
//! are answered from [`JobInfo`].

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use crate::spawn::{self, SpawnApp};
use crate::wire::{Decoder, Message, Wire};

/// Values advertised to PMI-1 clients by `get_maxes` (hydra's values; MPICH
/// clients size their buffers from them).
pub const KVSNAME_MAX: usize = 256;
pub const KEYLEN_MAX: usize = 64;
pub const VALLEN_MAX: usize = 1024;

/// What the server knows about the job.
#[derive(Clone, Debug)]
pub struct JobInfo {
    /// Number of ranks.
    pub size: u32,
    /// Name of the job's key-value space (PMI-2 calls it the job id).
    pub kvsname: String,
    /// `MPI_APPNUM` of each rank: which program of an MPMD command line it
    /// runs (empty: 0 for every rank).
    pub appnum_of_rank: Vec<i32>,
    /// `MPI_UNIVERSE_SIZE`; -1 for unknown.
    pub universe_size: i32,
    /// Node index of each rank (ranks with equal index share a host).
    pub node_of_rank: Vec<u32>,
}

impl JobInfo {
    /// The appnum of `rank`.
    pub fn appnum(&self, rank: u32) -> i32 {
        self.appnum_of_rank.get(rank as usize).copied().unwrap_or(0)
    }

    /// A job of `size` ranks all on one node.
    pub fn single_node(size: u32, kvsname: &str) -> JobInfo {
        JobInfo {
            size,
            kvsname: kvsname.to_string(),
            appnum_of_rank: Vec::new(),
            universe_size: size as i32,
            node_of_rank: vec![0; size as usize],
        }
    }

    /// MPICH's `PMI_process_mapping`: consecutive runs of ranks on one node,
    /// written as `(node, node_count, ranks_per_node)` blocks; runs of
    /// consecutive nodes with equal counts are merged.
    pub fn process_mapping(&self) -> String {
        // Runs of equal node index.
        let mut runs: Vec<(u32, u32)> = Vec::new(); // (node, count)
        for &n in &self.node_of_rank {
            match runs.last_mut() {
                Some((node, count)) if *node == n => *count += 1,
                _ => runs.push((n, 1)),
            }
        }
        // Merge runs on consecutive nodes with equal counts.
        let mut blocks: Vec<(u32, u32, u32)> = Vec::new(); // (start node, nodes, per node)
        for (node, count) in runs {
            match blocks.last_mut() {
                Some((start, nodes, per)) if *per == count && *start + *nodes == node => *nodes += 1,
                _ => blocks.push((node, 1, count)),
            }
        }
        let mut s = String::from("(vector");
        for (start, nodes, per) in blocks {
            s.push_str(&format!(",({start},{nodes},{per})"));
        }
        s.push(')');
        s
    }
}

/// What the launcher must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Write these bytes to the rank's PMI connection.
    Reply { rank: u32, bytes: Vec<u8> },
    /// The rank completed PMI initialization (PMI version 1 or 2).
    Initialized { rank: u32, version: u32 },
    /// The rank called finalize.
    Finalized { rank: u32 },
    /// The rank asked for the job to be aborted.
    Abort { rank: u32, exit_code: i32, message: String },
    /// The rank's byte stream is not PMI; its connection is useless now.
    ProtocolError { rank: u32, message: String },
    /// A request we do not serve (it got an error reply); worth a warning.
    Unsupported { rank: u32, command: String },
    /// The rank asks for `apps` to be started as one new job, each process
    /// with `env` added to its environment (the request's preput pairs).
    /// The rank waits for [`Server::spawn_done`].
    Spawn { rank: u32, apps: Vec<SpawnApp>, env: Vec<(String, String)> },
    /// Every rank froze for checkpoint `seq` and was told to write its image.
    CheckpointFrozen { seq: u64 },
    /// Every rank wrote its image of checkpoint `seq` (in rank order). The
    /// ranks wait for [`Server::checkpoint_finish`] (or
    /// [`Server::checkpoint_abort`] if it cannot be recorded).
    CheckpointWritten { seq: u64, images: Vec<ImageReport> },
    /// Checkpoint `seq` was abandoned; the ranks go on.
    CheckpointAbandoned { seq: u64, reason: String },
    /// A rank's view of a WAN link (`gridmpi_outage`): from its cluster to
    /// `to`, down (`back` false) for `secs` seconds, or back after them;
    /// the job waits `budget` seconds (None: the kernel's retries).
    Outage { rank: u32, from: String, to: String, back: bool, secs: u64, budget: Option<u64> },
}

/// One rank's image of a checkpoint, as the rank reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageReport {
    pub rank: u32,
    /// The host it was written on (a local disk's image is only there).
    pub host: String,
    pub bytes: u64,
    /// How long the rank took to write it, in milliseconds.
    pub ms: u64,
    pub path: String,
}

#[derive(Default)]
struct Conn {
    decoder: Decoder,
    broken: bool,
    closed: bool,
    finalized: bool,
    /// A PMI-1 spawn request whose last block has not come yet.
    v1_spawn: Option<V1Spawn>,
    /// A spawn handed to the launcher and not answered yet: the wire to
    /// answer in, and the PMI-2 thrid.
    spawning: Option<(Wire, Option<String>)>,
    /// The rank said it takes part in no more checkpoints (`gridmpi_ckpt_retire`).
    retired: bool,
    /// The launcher reported the rank failed ([`Server::rank_failed`]).
    failed: bool,
}

/// Where a checkpoint round is.
enum Phase {
    /// Waiting for every rank to freeze; these did (and wait for `go`).
    Freezing { frozen: BTreeSet<u32> },
    /// `go` sent; the images reported so far (those ranks wait for `done`).
    Writing { images: BTreeMap<u32, ImageReport> },
    /// Every image written: the launcher records the checkpoint; every
    /// rank waits for `done`.
    Recording,
    /// Given up for this reason, which late requests of the round get.
    Abandoned { reason: String },
}

/// The checkpoint round in progress, or the last one.
struct Round {
    seq: u64,
    phase: Phase,
}

/// The blocks of a PMI-1 spawn request read so far.
struct V1Spawn {
    total: u32,
    apps: Vec<SpawnApp>,
    env: Vec<(String, String)>,
    /// The first thing wrong with a block: the reply, after the last one.
    error: Option<String>,
}

struct NodeWaiter {
    rank: u32,
    node: u32,
    key: String,
    thrid: Option<String>,
}

/// A pending barrier: who has entered, and who must.
struct Barrier {
    members: BTreeSet<u32>,
    entered: BTreeSet<u32>,
    tag: i64,
    /// The request each rank entered with (to answer in its wire format).
    requests: Vec<(u32, Wire, Option<String>, BarrierKind)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BarrierKind {
    /// PMI-1 `barrier_in`.
    V1,
    /// PMI-2 `kvs-fence`.
    Fence,
}

/// The PMI server state of one job.
pub struct Server {
    info: JobInfo,
    conns: Vec<Conn>,
    kvs: HashMap<String, String>,
    node_kvs: HashMap<(u32, String), String>,
    names: HashMap<String, String>,
    barriers: HashMap<String, Barrier>,
    node_waiters: Vec<NodeWaiter>,
    events: VecDeque<Event>,
    /// Whether the launcher checkpoints this job (else every
    /// `gridmpi_ckpt_*` request is refused).
    checkpoints: bool,
    round: Option<Round>,
    /// The failed ranks, in the order the launcher reported them.
    failed: Vec<u32>,
}

impl Server {
    pub fn new(info: JobInfo) -> Server {
        assert_eq!(info.node_of_rank.len(), info.size as usize, "node_of_rank must name a node for every rank");
        let mut kvs = HashMap::new();
        kvs.insert("PMI_process_mapping".to_string(), info.process_mapping());
        Server {
            conns: (0..info.size).map(|_| Conn::default()).collect(),
            info,
            kvs,
            node_kvs: HashMap::new(),
            names: HashMap::new(),
            barriers: HashMap::new(),
            node_waiters: Vec::new(),
            events: VecDeque::new(),
            checkpoints: false,
            round: None,
            failed: Vec::new(),
        }
    }

    pub fn info(&self) -> &JobInfo {
        &self.info
    }

    /// Store `key` = `value` in the job's key-value space before any rank
    /// runs: a spawn request's preput pairs, which MPICH's library reads
    /// there (`PARENT_ROOT_PORT_NAME`).
    pub fn preput(&mut self, key: &str, value: &str) {
        self.kvs.insert(key.to_string(), value.to_string());
    }

    /// Bytes that `rank` wrote on its PMI connection.
    pub fn receive(&mut self, rank: u32, bytes: &[u8]) {
        let Some(conn) = self.conns.get_mut(rank as usize) else { return };
        // (A failed rank is out of the job, whatever it still says.)
        if conn.broken || conn.failed {
            return;
        }
        conn.decoder.push(bytes);
        loop {
            let conn = &mut self.conns[rank as usize];
            match conn.decoder.next_message() {
                Ok(Some(msg)) => self.handle(rank, msg),
                Ok(None) => break,
                Err(e) => {
                    conn.broken = true;
                    self.events.push_back(Event::ProtocolError { rank, message: e.to_string() });
                    break;
                }
            }
        }
    }

    /// The rank's PMI connection reached end-of-file.
    pub fn disconnected(&mut self, rank: u32) {
        if let Some(conn) = self.conns.get_mut(rank as usize) {
            conn.closed = true;
            if conn.decoder.pending() > 0 && !conn.broken {
                conn.broken = true;
                self.events.push_back(Event::ProtocolError {
                    rank,
                    message: "connection closed in the middle of a PMI message".into(),
                });
            }
        }
        self.node_waiters.retain(|w| w.rank != rank);
        if rank < self.info.size {
            self.checkpoint_abort(&format!("rank {rank} closed its PMI connection"));
        }
    }

    /// Whether `rank` has called finalize.
    pub fn is_finalized(&self, rank: u32) -> bool {
        self.conns.get(rank as usize).is_some_and(|c| c.finalized)
    }

    /// The next thing for the launcher to do.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Ranks waiting in a barrier or fence, for diagnostics.
    pub fn ranks_in_barrier(&self) -> BTreeSet<u32> {
        self.barriers.values().flat_map(|b| b.entered.iter().copied()).collect()
    }

    fn reply(&mut self, rank: u32, msg: Message) {
        if self.conns[rank as usize].closed {
            return;
        }
        match msg.encode() {
            Ok(bytes) => self.events.push_back(Event::Reply { rank, bytes }),
            Err(e) => {
                // Too long to send (a huge stored value, a huge thrid): say
                // so in a reply that fits, if the command itself fits.
                let error_key = if msg.wire == Wire::V2 { "errmsg" } else { "msg" };
                match Message::new(msg.wire, &msg.cmd).with("rc", -1).with(error_key, &e.0).encode() {
                    Ok(bytes) => self.events.push_back(Event::Reply { rank, bytes }),
                    Err(_) => self.events.push_back(Event::ProtocolError { rank, message: e.0 }),
                }
            }
        }
    }

    /// The launcher's answer to [`Event::Spawn`] of `rank`: the processes
    /// started (`Ok`), or why not. Sends the rank its reply, in the wire
    /// version it asked in; nothing if the rank has no spawn waiting.
    pub fn spawn_done(&mut self, rank: u32, result: Result<(), String>) {
        let Some(conn) = self.conns.get_mut(rank as usize) else { return };
        let Some((wire, thrid)) = conn.spawning.take() else { return };
        self.spawn_reply(rank, wire, thrid, result);
    }

    fn spawn_reply(&mut self, rank: u32, wire: Wire, thrid: Option<String>, result: Result<(), String>) {
        let m = match wire {
            Wire::V2 => {
                let mut m = Message::new(Wire::V2, "spawn-response");
                if let Some(t) = thrid {
                    m = m.with("thrid", t);
                }
                match result {
                    Ok(()) => m.with("rc", 0).with("nerrs", 0),
                    Err(e) => m.with("rc", -1).with("errmsg", one_line(&e)),
                }
            }
            _ => match result {
                Ok(()) => Message::new(Wire::V1, "spawn_result").with("rc", 0),
                Err(e) => Message::new(Wire::V1, "spawn_result").with("rc", -1).with("msg", one_line(&e)),
            },
        };
        self.reply(rank, m);
    }

    /// A checked spawn request of `rank`: to the launcher, unless the rank
    /// already waits for one.
    fn spawn_request(&mut self, rank: u32, wire: Wire, thrid: Option<String>, apps: Vec<SpawnApp>, env: Vec<(String, String)>) {
        let conn = &mut self.conns[rank as usize];
        if conn.spawning.is_some() {
            let e = "a spawn request while the previous one is not answered".to_string();
            return self.spawn_reply(rank, wire, thrid, Err(e));
        }
        conn.spawning = Some((wire, thrid));
        self.events.push_back(Event::Spawn { rank, apps, env });
    }

    /// One `mcmd=spawn` block of a PMI-1 request.
    fn handle_v1_spawn(&mut self, rank: u32, msg: &Message) {
        let block = match spawn::parse_v1_block(msg) {
            Ok(b) => b,
            Err(e) => {
                // Where it stands in its request is unknown: answer now.
                self.conns[rank as usize].v1_spawn = None;
                return self.spawn_reply(rank, Wire::V1, None, Err(e));
            }
        };
        let conn = &mut self.conns[rank as usize];
        if block.number == 1 {
            let env = block.env.clone();
            conn.v1_spawn = Some(V1Spawn { total: block.total, apps: Vec::new(), error: env.as_ref().err().cloned(), env: env.unwrap_or_default() });
        }
        let expected = conn.v1_spawn.as_ref().map(|p| (p.total, p.apps.len() as u32 + 1));
        if expected != Some((block.total, block.number)) {
            conn.v1_spawn = None;
            let e = format!("spawn request block {} of {} out of order", block.number, block.total);
            return self.spawn_reply(rank, Wire::V1, None, Err(e));
        }
        let pending = conn.v1_spawn.as_mut().expect("checked above");
        match block.app {
            Ok(app) => pending.apps.push(app),
            Err(e) => {
                pending.error.get_or_insert(e);
                // Keep counting the blocks: the reply comes after the last.
                pending.apps.push(SpawnApp { command: String::new(), args: Vec::new(), maxprocs: 0, info: Vec::new() });
            }
        }
        if block.number < block.total {
            return;
        }
        let done = conn.v1_spawn.take().expect("checked above");
        match done.error.map_or_else(|| spawn::check_apps(&done.apps), Err) {
            Ok(()) => self.spawn_request(rank, Wire::V1, None, done.apps, done.env),
            Err(e) => self.spawn_reply(rank, Wire::V1, None, Err(e)),
        }
    }

    fn handle(&mut self, rank: u32, msg: Message) {
        match msg.wire {
            Wire::V1 => self.handle_v1(rank, msg),
            Wire::V1Multi if msg.cmd == "spawn" => self.handle_v1_spawn(rank, &msg),
            Wire::V1Multi => {
                self.events.push_back(Event::Unsupported { rank, command: msg.cmd.clone() });
                let reply = Message::new(Wire::V1, &format!("{}_result", msg.cmd))
                    .with("rc", -1)
                    .with("msg", format!("{} is not supported by gridmpirun", msg.cmd));
                self.reply(rank, reply);
            }
            Wire::V2 => self.handle_v2(rank, msg),
        }
    }

    fn handle_v1(&mut self, rank: u32, msg: Message) {
        let r = |cmd: &str| Message::new(Wire::V1, cmd);
        let info = &self.info;
        match msg.cmd.as_str() {
            "init" => {
                let version = msg.get_int("pmi_version").unwrap_or(1);
                let reply = match version {
                    1 => {
                        self.events.push_back(Event::Initialized { rank, version: 1 });
                        r("response_to_init").with("rc", 0).with("pmi_version", 1).with("pmi_subversion", 2)
                    }
                    // A PMI-2 client opens with a PMI-1 init, then sends fullinit.
                    2 => r("response_to_init").with("rc", 0).with("pmi_version", 2).with("pmi_subversion", 0),
                    v => r("response_to_init")
                        .with("rc", -1)
                        .with("pmi_version", 1)
                        .with("pmi_subversion", 2)
                        .with("msg", format!("PMI version {v} is not supported")),
                };
                self.reply(rank, reply);
            }
            "initack" => {
                let id = msg.get_int("pmiid").unwrap_or(rank as i64);
                let (size, appnum) = (info.size, info.appnum(rank));
                // PMI-1 lines always have an encoding.
                let line = |m: Message| m.encode().expect("a PMI-1 line");
                let mut bytes = line(r("initack").with("rc", 0).with("rank", id).with("size", size).with("appnum", appnum).with("debug", 0));
                bytes.extend(line(r("set").with("size", size)));
                bytes.extend(line(r("set").with("rank", id)));
                bytes.extend(line(r("set").with("debug", 0)));
                if !self.conns[rank as usize].closed {
                    self.events.push_back(Event::Reply { rank, bytes });
                }
            }
            "get_maxes" => {
                let m = r("maxes")
                    .with("rc", 0)
                    .with("kvsname_max", KVSNAME_MAX)
                    .with("keylen_max", KEYLEN_MAX)
                    .with("vallen_max", VALLEN_MAX);
                self.reply(rank, m)
            }
            "get_appnum" => {
                let m = r("appnum").with("rc", 0).with("appnum", info.appnum(rank));
                self.reply(rank, m)
            }
            "get_my_kvsname" => {
                let m = r("my_kvsname").with("rc", 0).with("kvsname", &info.kvsname);
                self.reply(rank, m)
            }
            "get_universe_size" => {
                let m = r("universe_size").with("rc", 0).with("size", info.universe_size);
                self.reply(rank, m)
            }
            "put" => {
                let reply = match (msg.get("key"), msg.get("value")) {
                    (Some(k), v) => {
                        self.kvs.insert(k.to_string(), v.unwrap_or("").to_string());
                        r("put_result").with("rc", 0)
                    }
                    _ => r("put_result").with("rc", -1).with("msg", "put without a key"),
                };
                self.reply(rank, reply)
            }
            "get" => {
                let reply = match msg.get("key").and_then(|k| self.kvs.get(k)) {
                    Some(v) => r("get_result").with("rc", 0).with("value", v),
                    None => r("get_result")
                        .with("rc", 1)
                        .with("msg", format!("key_{}_not_found", msg.get("key").unwrap_or(""))),
                };
                self.reply(rank, reply)
            }
            "barrier_in" => {
                let group = msg.get("group").unwrap_or("WORLD:0").to_string();
                self.enter_barrier(rank, &group, Wire::V1, None, BarrierKind::V1);
            }
            "finalize" => {
                self.conns[rank as usize].finalized = true;
                self.events.push_back(Event::Finalized { rank });
                self.reply(rank, r("finalize_ack").with("rc", 0));
                self.checkpoint_abort(&format!("rank {rank} called MPI_Finalize"));
            }
            "abort" => self.abort(rank, &msg),
            "publish_name" => {
                let reply = self.publish(msg.get("service"), msg.get("port"));
                self.reply(rank, r("publish_result").with("rc", reply.0).with("msg", reply.1))
            }
            "unpublish_name" => {
                let reply = self.unpublish(msg.get("service"));
                self.reply(rank, r("unpublish_result").with("rc", reply.0).with("msg", reply.1))
            }
            "lookup_name" => {
                let reply = match msg.get("service").and_then(|s| self.names.get(s)) {
                    Some(port) => r("lookup_result").with("rc", 0).with("port", port),
                    None => r("lookup_result").with("rc", 1).with("msg", "service_not_published"),
                };
                self.reply(rank, reply)
            }
            "gridmpi_outage" => {
                let (from, to, state) = (msg.get("from"), msg.get("to"), msg.get("state"));
                let secs = msg.get("secs").and_then(|s| s.parse().ok());
                let budget = msg.get("budget").map(|b| b.parse::<u64>().ok());
                match (from, to, state, secs, budget) {
                    (Some(from), Some(to), Some(st @ ("down" | "still" | "back")), Some(secs), Some(budget)) => {
                        let (from, to, back) = (from.to_string(), to.to_string(), st == "back");
                        self.events.push_back(Event::Outage { rank, from, to, back, secs, budget });
                    }
                    // No reply to get wrong: a malformed report is the
                    // rank's protocol error.
                    _ => self.events.push_back(Event::ProtocolError { rank, message: format!("malformed outage report: {msg}") }),
                }
            }
            "gridmpi_failed" => {
                let ranks = self.failed.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(",");
                self.reply(rank, r("gridmpi_failed").with("rc", 0).with("ranks", ranks))
            }
            ckpt if ckpt.starts_with(CHECKPOINT_PREFIX) => self.checkpoint_request(rank, &msg),
            other => {
                self.events.push_back(Event::Unsupported { rank, command: other.to_string() });
                let reply = r(&format!("{other}_result"))
                    .with("rc", -1)
                    .with("msg", format!("unknown PMI-1 command {other}"));
                self.reply(rank, reply)
            }
        }
    }

    fn handle_v2(&mut self, rank: u32, msg: Message) {
        let thrid = msg.get("thrid").map(str::to_string);
        let r = |cmd: &str| {
            let m = Message::new(Wire::V2, cmd);
            match &thrid {
                Some(t) => m.with("thrid", t),
                None => m,
            }
        };
        let node = self.info.node_of_rank[rank as usize];
        match msg.cmd.as_str() {
            "fullinit" => {
                let claimed = msg.get_int("pmirank").unwrap_or(-1);
                if claimed >= 0 && claimed != rank as i64 {
                    let m = r("fullinit-response")
                        .with("rc", -1)
                        .with("errmsg", format!("pmirank {claimed} does not match this connection's rank {rank}"));
                    self.reply(rank, m);
                    return;
                }
                self.events.push_back(Event::Initialized { rank, version: 2 });
                let m = r("fullinit-response")
                    .with("rc", 0)
                    .with("pmi-version", 2)
                    .with("pmi-subversion", 0)
                    .with("rank", rank)
                    .with("size", self.info.size)
                    .with("appnum", self.info.appnum(rank))
                    .with("debugged", "FALSE")
                    .with("pmiverbose", 0);
                self.reply(rank, m)
            }
            "job-getid" => {
                let m = r("job-getid-response").with("rc", 0).with("jobid", &self.info.kvsname);
                self.reply(rank, m)
            }
            "kvs-put" => {
                let m = match msg.get("key") {
                    Some(k) => {
                        self.kvs.insert(k.to_string(), msg.get("value").unwrap_or("").to_string());
                        r("kvs-put-response").with("rc", 0)
                    }
                    None => r("kvs-put-response").with("rc", -1).with("errmsg", "kvs-put without a key"),
                };
                self.reply(rank, m)
            }
            "kvs-fence" => self.enter_barrier(rank, "WORLD:0", Wire::V2, thrid, BarrierKind::Fence),
            "kvs-get" => {
                let m = match msg.get("key").and_then(|k| self.kvs.get(k)) {
                    Some(v) => r("kvs-get-response").with("rc", 0).with("found", "TRUE").with("value", v),
                    None => r("kvs-get-response").with("rc", 1).with("found", "FALSE"),
                };
                self.reply(rank, m)
            }
            "info-getjobattr" => {
                let key = msg.get("key").unwrap_or("");
                let value = match key {
                    "universeSize" => Some(self.info.universe_size.to_string()),
                    _ => self.kvs.get(key).cloned(),
                };
                let m = match value {
                    Some(v) => r("info-getjobattr-response").with("rc", 0).with("found", "TRUE").with("value", v),
                    None => r("info-getjobattr-response").with("rc", 0).with("found", "FALSE"),
                };
                self.reply(rank, m)
            }
            "info-putnodeattr" => {
                let Some(key) = msg.get("key") else {
                    let m = r("info-putnodeattr-response").with("rc", -1).with("errmsg", "no key");
                    return self.reply(rank, m);
                };
                let value = msg.get("value").unwrap_or("").to_string();
                self.node_kvs.insert((node, key.to_string()), value.clone());
                self.reply(rank, r("info-putnodeattr-response").with("rc", 0));
                // Wake whoever waits for this key on this node.
                let (woken, rest): (Vec<_>, Vec<_>) =
                    std::mem::take(&mut self.node_waiters).into_iter().partition(|w| w.node == node && w.key == key);
                self.node_waiters = rest;
                for w in woken {
                    let mut m = Message::new(Wire::V2, "info-getnodeattr-response");
                    if let Some(t) = w.thrid {
                        m = m.with("thrid", t);
                    }
                    self.reply(w.rank, m.with("rc", 0).with("found", "TRUE").with("value", &value));
                }
            }
            "info-getnodeattr" => {
                let key = msg.get("key").unwrap_or("").to_string();
                let wait = msg.get("wait").is_some_and(|w| w.eq_ignore_ascii_case("TRUE"));
                match self.node_kvs.get(&(node, key.clone())) {
                    Some(v) => {
                        let m = r("info-getnodeattr-response").with("rc", 0).with("found", "TRUE").with("value", v);
                        self.reply(rank, m)
                    }
                    None if wait => self.node_waiters.push(NodeWaiter { rank, node, key, thrid }),
                    None => self.reply(rank, r("info-getnodeattr-response").with("rc", 0).with("found", "FALSE")),
                }
            }
            "finalize" => {
                self.conns[rank as usize].finalized = true;
                self.events.push_back(Event::Finalized { rank });
                self.reply(rank, r("finalize-response").with("rc", 0));
                self.checkpoint_abort(&format!("rank {rank} called MPI_Finalize"));
            }
            "abort" => self.abort(rank, &msg),
            "name-publish" => {
                let (rc, text) = self.publish(msg.get("name"), msg.get("port"));
                self.reply(rank, r("name-publish-response").with("rc", rc).with("errmsg", text))
            }
            "name-unpublish" => {
                let (rc, text) = self.unpublish(msg.get("name"));
                self.reply(rank, r("name-unpublish-response").with("rc", rc).with("errmsg", text))
            }
            "name-lookup" => {
                let m = match msg.get("name").and_then(|s| self.names.get(s)) {
                    Some(port) => r("name-lookup-response").with("rc", 0).with("port", port),
                    None => r("name-lookup-response").with("rc", 1).with("errmsg", "name not published"),
                };
                self.reply(rank, m)
            }
            "spawn" => match spawn::parse_v2(&msg) {
                Ok((apps, env)) => self.spawn_request(rank, Wire::V2, thrid.clone(), apps, env),
                Err(e) => self.spawn_reply(rank, Wire::V2, thrid.clone(), Err(e)),
            },
            other => {
                self.events.push_back(Event::Unsupported { rank, command: other.to_string() });
                let m = r(&format!("{other}-response"))
                    .with("rc", -1)
                    .with("errmsg", format!("{other} is not supported by gridmpirun"));
                self.reply(rank, m)
            }
        }
    }

    fn abort(&mut self, rank: u32, msg: &Message) {
        let exit_code = msg.get_int("exitcode").unwrap_or(1) as i32;
        let message = msg.get("message").or_else(|| msg.get("msg")).unwrap_or("").to_string();
        self.events.push_back(Event::Abort { rank, exit_code, message });
    }

    fn publish(&mut self, name: Option<&str>, port: Option<&str>) -> (i32, String) {
        match (name, port) {
            (Some(n), Some(p)) => {
                if self.names.contains_key(n) {
                    (1, format!("{n} is already published"))
                } else {
                    self.names.insert(n.to_string(), p.to_string());
                    (0, "ok".into())
                }
            }
            _ => (-1, "missing name or port".into()),
        }
    }

    fn unpublish(&mut self, name: Option<&str>) -> (i32, String) {
        match name.and_then(|n| self.names.remove(n)) {
            Some(_) => (0, "ok".into()),
            None => (1, "not published".into()),
        }
    }

    /// Members of a PMI-1.2 barrier group as seen by `rank`, and its tag.
    fn barrier_group(&self, rank: u32, group: &str) -> Result<(String, BTreeSet<u32>, i64), String> {
        let (who, tag) = match group.rsplit_once(':') {
            Some((w, t)) => (w, t.trim().parse::<i64>().map_err(|_| format!("bad barrier tag in group {group:?}"))?),
            None => (group, 0),
        };
        let all = || (0..self.info.size).collect::<BTreeSet<u32>>();
        match who {
            "WORLD" | "" => Ok((format!("WORLD:{tag}"), all(), tag)),
            "NODE" => {
                let node = self.info.node_of_rank[rank as usize];
                let members = all().into_iter().filter(|&r| self.info.node_of_rank[r as usize] == node).collect();
                Ok((format!("NODE{node}:{tag}"), members, tag))
            }
            list => {
                let mut members = BTreeSet::new();
                for part in list.split(',') {
                    let r: u32 = part.trim().parse().map_err(|_| format!("bad rank {part:?} in barrier group"))?;
                    if r >= self.info.size {
                        return Err(format!("rank {r} in barrier group is outside the job (size {})", self.info.size));
                    }
                    members.insert(r);
                }
                if !members.contains(&rank) {
                    return Err(format!("rank {rank} entered barrier group {list:?} that does not contain it"));
                }
                let key = members.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(",");
                Ok((format!("{key}:{tag}"), members, tag))
            }
        }
    }

    fn enter_barrier(&mut self, rank: u32, group: &str, wire: Wire, thrid: Option<String>, kind: BarrierKind) {
        let (key, members, tag) = match self.barrier_group(rank, group) {
            Ok(g) => g,
            Err(e) => {
                let m = match kind {
                    BarrierKind::V1 => Message::new(Wire::V1, "barrier_out").with("rc", -1).with("msg", e),
                    BarrierKind::Fence => Message::new(Wire::V2, "kvs-fence-response").with("rc", -1).with("errmsg", e),
                };
                return self.reply(rank, m);
            }
        };
        let b = self.barriers.entry(key.clone()).or_insert_with(|| Barrier {
            members,
            entered: BTreeSet::new(),
            tag,
            requests: Vec::new(),
        });
        if !b.entered.insert(rank) {
            self.conns[rank as usize].broken = true;
            self.events.push_back(Event::ProtocolError {
                rank,
                message: "entered the same barrier twice without waiting for it to complete".into(),
            });
            return;
        }
        b.requests.push((rank, wire, thrid, kind));
        self.complete_barrier(&key);
    }

    /// Answer everyone in barrier `key` if every member entered it or failed.
    fn complete_barrier(&mut self, key: &str) {
        let Some(b) = self.barriers.get(key) else { return };
        let conns = &self.conns;
        if !b.members.iter().all(|r| b.entered.contains(r) || conns[*r as usize].failed) {
            return;
        }
        let b = self.barriers.remove(key).expect("barrier present");
        for (r, _wire, thrid, kind) in b.requests {
            let m = match kind {
                BarrierKind::V1 => Message::new(Wire::V1, "barrier_out").with("tag", b.tag),
                BarrierKind::Fence => {
                    let m = Message::new(Wire::V2, "kvs-fence-response");
                    match thrid {
                        Some(t) => m.with("thrid", t).with("rc", 0),
                        None => m.with("rc", 0),
                    }
                }
            };
            self.reply(r, m);
        }
    }
}

/// Fault-tolerant jobs (see the module docs).
impl Server {
    /// `rank` failed (it died before MPI_Finalize, or its host was lost):
    /// it goes on the list `gridmpi_failed` answers, no barrier or fence
    /// waits for it any more (one that waited only for it completes now),
    /// and whatever it still says is ignored. False if it was known already.
    pub fn rank_failed(&mut self, rank: u32) -> bool {
        let Some(conn) = self.conns.get_mut(rank as usize) else { return false };
        if conn.failed {
            return false;
        }
        conn.failed = true;
        // Nothing is sent to it any more (a reply is for the living).
        conn.closed = true;
        self.failed.push(rank);
        self.node_waiters.retain(|w| w.rank != rank);
        let keys: Vec<String> = self.barriers.keys().cloned().collect();
        for key in keys {
            let b = self.barriers.get_mut(&key).expect("barrier present");
            b.entered.remove(&rank);
            b.requests.retain(|(r, ..)| *r != rank);
            if b.entered.is_empty() {
                // Only the failed rank was in it: nobody waits.
                self.barriers.remove(&key);
            } else {
                self.complete_barrier(&key);
            }
        }
        self.checkpoint_abort(&format!("rank {rank} failed"));
        true
    }

    /// The failed ranks, in the order [`Server::rank_failed`] reported them.
    pub fn failed_ranks(&self) -> &[u32] {
        &self.failed
    }
}

/// The commands of GridMPI's checkpoint protocol begin with this.
const CHECKPOINT_PREFIX: &str = "gridmpi_ckpt_";

/// Checkpoint rounds (see the module docs).
impl Server {
    /// The launcher checkpoints this job: serve the checkpoint protocol
    /// (without this, its requests are refused).
    pub fn enable_checkpoints(&mut self) {
        self.checkpoints = true;
    }

    /// Start checkpoint round `seq`; the launcher then signals every rank.
    /// Refused, saying why, when checkpointing is off, a round is in
    /// progress, or a rank has finished or is finishing (it would never
    /// freeze).
    pub fn checkpoint_start(&mut self, seq: u64) -> Result<(), String> {
        if !self.checkpoints {
            return Err("checkpointing is not enabled".into());
        }
        if let Some(round) = self.round.as_ref().filter(|r| !matches!(r.phase, Phase::Abandoned { .. })) {
            return Err(format!("checkpoint {} is in progress", round.seq));
        }
        for (rank, c) in self.conns.iter().enumerate() {
            let gone = if c.retired {
                "is finishing (it entered MPI_Finalize)"
            } else if c.finalized {
                "called MPI_Finalize"
            } else if c.closed {
                "closed its PMI connection"
            } else {
                continue;
            };
            return Err(format!("rank {rank} {gone}"));
        }
        self.round = Some(Round { seq, phase: Phase::Freezing { frozen: BTreeSet::new() } });
        Ok(())
    }

    /// The launcher recorded the checkpoint of [`Event::CheckpointWritten`]:
    /// every rank is told it is done, and whether to exit now (`stop`:
    /// `--checkpoint-and-stop`). Nothing when no checkpoint waits for it.
    pub fn checkpoint_finish(&mut self, stop: bool) {
        let Some(Round { phase: Phase::Recording, .. }) = &self.round else { return };
        self.round = None;
        for rank in 0..self.info.size {
            let m = Message::new(Wire::V1, "gridmpi_ckpt_done").with("rc", 0).with("stop", u8::from(stop));
            self.reply(rank, m);
        }
    }

    /// Abandon the round in progress (the launcher's reason: a timeout, a
    /// rank that exited, a manifest it could not write): every rank that
    /// waits is told why, and so is every later request of the round.
    /// Nothing when no round is in progress.
    pub fn checkpoint_abort(&mut self, reason: &str) {
        let Some(round) = &mut self.round else { return };
        let waiting: Vec<u32> = match &round.phase {
            Phase::Abandoned { .. } => return,
            Phase::Freezing { frozen } => frozen.iter().copied().collect(),
            Phase::Writing { images } => images.keys().copied().collect(),
            Phase::Recording => (0..self.info.size).collect(),
        };
        let answer = if matches!(round.phase, Phase::Freezing { .. }) { "gridmpi_ckpt_go" } else { "gridmpi_ckpt_done" };
        let seq = round.seq;
        round.phase = Phase::Abandoned { reason: reason.to_string() };
        for rank in waiting {
            self.reply(rank, Message::new(Wire::V1, answer).with("rc", 1).with("msg", one_line(reason)));
        }
        self.events.push_back(Event::CheckpointAbandoned { seq, reason: reason.to_string() });
    }

    /// The ranks the round in progress still waits for (to freeze, or to
    /// report their image), for a timeout's message.
    pub fn checkpoint_unanswered(&self) -> Vec<u32> {
        let answered = |r: &u32| match &self.round.as_ref().map(|r| &r.phase) {
            Some(Phase::Freezing { frozen }) => frozen.contains(r),
            Some(Phase::Writing { images }) => images.contains_key(r),
            _ => true,
        };
        (0..self.info.size).filter(|r| !answered(r)).collect()
    }

    /// The round in progress (not abandoned): its sequence number.
    pub fn checkpoint_in_progress(&self) -> Option<u64> {
        self.round.as_ref().filter(|r| !matches!(r.phase, Phase::Abandoned { .. })).map(|r| r.seq)
    }

    /// A `gridmpi_ckpt_*` request of `rank`.
    fn checkpoint_request(&mut self, rank: u32, msg: &Message) {
        let answer = match msg.cmd.as_str() {
            "gridmpi_ckpt_frozen" => "gridmpi_ckpt_go",
            "gridmpi_ckpt_written" => "gridmpi_ckpt_done",
            "gridmpi_ckpt_retire" => "gridmpi_ckpt_retired",
            other => {
                if self.checkpoints {
                    self.events.push_back(Event::Unsupported { rank, command: other.to_string() });
                }
                let why = if self.checkpoints { format!("unknown checkpoint command {other}") } else { NOT_ENABLED.to_string() };
                let m = Message::new(Wire::V1, &format!("{other}_result")).with("rc", -1).with("msg", why);
                return self.reply(rank, m);
            }
        };
        let refuse = |why: &str| Message::new(Wire::V1, answer).with("rc", 1).with("msg", one_line(why));
        if !self.checkpoints {
            return self.reply(rank, refuse(NOT_ENABLED));
        }
        if msg.cmd == "gridmpi_ckpt_retire" {
            self.conns[rank as usize].retired = true;
            self.reply(rank, Message::new(Wire::V1, answer).with("rc", 0));
            return self.checkpoint_abort(&format!("rank {rank} is finishing (it entered MPI_Finalize)"));
        }
        // What the rank says: ok=1, or why not.
        let refused = match msg.get("ok") {
            Some("1") => None,
            _ => Some(msg.get("reason").filter(|r| !r.trim().is_empty()).unwrap_or("no reason given").to_string()),
        };
        let Some(round) = &mut self.round else {
            return self.reply(rank, refuse("no checkpoint in progress"));
        };
        let seq = round.seq;
        match (&mut round.phase, msg.cmd.as_str()) {
            (Phase::Abandoned { reason }, _) => {
                let m = refuse(reason);
                self.reply(rank, m)
            }
            (Phase::Freezing { frozen }, "gridmpi_ckpt_frozen") => {
                if let Some(why) = refused {
                    self.reply(rank, refuse(&format!("rank {rank} cannot be checkpointed: {why}")));
                    return self.checkpoint_abort(&format!("rank {rank} cannot be checkpointed: {why}"));
                }
                if !frozen.insert(rank) {
                    return self.protocol_error(rank, format!("said twice that it froze for checkpoint {seq}"));
                }
                if frozen.len() < self.info.size as usize {
                    return;
                }
                round.phase = Phase::Writing { images: BTreeMap::new() };
                for r in 0..self.info.size {
                    self.reply(r, Message::new(Wire::V1, answer).with("rc", 0).with("seq", seq));
                }
                self.events.push_back(Event::CheckpointFrozen { seq });
            }
            (Phase::Writing { images }, "gridmpi_ckpt_written") => {
                let report = match refused {
                    Some(why) => Err(format!("rank {rank} could not write its image: {why}")),
                    None => image_report(rank, msg),
                };
                let report = match report {
                    Ok(r) => r,
                    Err(why) => {
                        self.reply(rank, refuse(&why));
                        return self.checkpoint_abort(&why);
                    }
                };
                if images.insert(rank, report).is_some() {
                    return self.protocol_error(rank, format!("reported its image of checkpoint {seq} twice"));
                }
                if images.len() < self.info.size as usize {
                    return;
                }
                let images = std::mem::take(images).into_values().collect();
                round.phase = Phase::Recording;
                self.events.push_back(Event::CheckpointWritten { seq, images });
            }
            (Phase::Recording, _) => self.protocol_error(rank, format!("a checkpoint request while checkpoint {seq} is being recorded")),
            (Phase::Freezing { .. }, _) => {
                let m = refuse(&format!("checkpoint {seq}: an image reported before every rank froze"));
                self.reply(rank, m)
            }
            (Phase::Writing { .. }, _) => {
                let m = refuse(&format!("checkpoint {seq} is being written: every rank froze already"));
                self.reply(rank, m)
            }
        }
    }

    /// `rank` broke the protocol: its connection is useless now.
    fn protocol_error(&mut self, rank: u32, message: String) {
        self.conns[rank as usize].broken = true;
        self.events.push_back(Event::ProtocolError { rank, message });
    }
}

/// The refusal of a checkpoint request in a job that is not checkpointed.
const NOT_ENABLED: &str = "checkpointing is not enabled (gridmpirun --checkpoint-dir)";

/// The image a `gridmpi_ckpt_written ok=1` reports, or what it lacks.
fn image_report(rank: u32, msg: &Message) -> Result<ImageReport, String> {
    let number = |key: &str| {
        msg.get(key)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| format!("rank {rank} reported its image without a valid {key}= (a count)"))
    };
    let text = |key: &str| {
        msg.get(key)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .ok_or_else(|| format!("rank {rank} reported its image without {key}="))
    };
    Ok(ImageReport { rank, host: text("host")?, bytes: number("bytes")?, ms: number("ms")?, path: text("path")? })
}

/// An error message as one line (a reply is one line in PMI-1).
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{parse_v1, Decoder};

    fn drain(s: &mut Server) -> Vec<Event> {
        std::iter::from_fn(|| s.poll_event()).collect()
    }

    fn replies(events: &[Event]) -> Vec<(u32, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Reply { rank, bytes } => Some((*rank, String::from_utf8_lossy(bytes).into_owned())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn pmi1_session_matches_hydra() {
        let mut s = Server::new(JobInfo::single_node(2, "kvs_test"));
        s.receive(0, b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_maxes\ncmd=get_appnum\ncmd=get_my_kvsname\n");
        let ev = drain(&mut s);
        assert_eq!(ev[0], Event::Initialized { rank: 0, version: 1 });
        let r = replies(&ev);
        assert_eq!(r[0].1, "cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=2\n");
        assert_eq!(r[1].1, "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n");
        assert_eq!(r[2].1, "cmd=appnum rc=0 appnum=0\n");
        assert_eq!(r[3].1, "cmd=my_kvsname rc=0 kvsname=kvs_test\n");

        s.receive(0, b"cmd=put kvsname=kvs_test key=a value=x\\ y\n");
        s.receive(0, b"cmd=get kvsname=kvs_test key=PMI_process_mapping\n");
        let r = replies(&drain(&mut s));
        assert_eq!(r[0].1, "cmd=put_result rc=0\n");
        assert_eq!(r[1].1, "cmd=get_result rc=0 value=(vector,(0,1,2))\n");

        // Barrier completes only when both ranks entered.
        s.receive(0, b"cmd=barrier_in\n");
        assert!(replies(&drain(&mut s)).is_empty());
        assert_eq!(s.ranks_in_barrier(), BTreeSet::from([0]));
        s.receive(1, b"cmd=barrier_in\n");
        let r = replies(&drain(&mut s));
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|(_, m)| m == "cmd=barrier_out tag=0\n"));

        s.receive(1, b"cmd=get kvsname=kvs_test key=a\ncmd=get kvsname=kvs_test key=nope\n");
        let r = replies(&drain(&mut s));
        assert_eq!(parse_v1(&r[0].1).unwrap().get("value"), Some("x y"));
        assert_eq!(parse_v1(&r[1].1).unwrap().rc(), 1);

        s.receive(1, b"cmd=finalize\n");
        let ev = drain(&mut s);
        assert_eq!(ev[0], Event::Finalized { rank: 1 });
        assert!(s.is_finalized(1));
    }

    #[test]
    fn pmi2_session() {
        let mut s = Server::new(JobInfo::single_node(2, "kvs_t2"));
        for rank in 0..2u32 {
            s.receive(rank, b"cmd=init pmi_version=2 pmi_subversion=0\n");
            s.receive(rank, &Message::new(Wire::V2, "fullinit").with("pmirank", rank).encode().unwrap());
        }
        let ev = drain(&mut s);
        assert!(ev.contains(&Event::Initialized { rank: 1, version: 2 }));
        let r = replies(&ev);
        assert_eq!(r[0].1, "cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n");
        let mut d = Decoder::new();
        d.push(r[1].1.as_bytes());
        let full = d.next_message().unwrap().unwrap();
        assert_eq!((full.cmd.as_str(), full.get_int("size"), full.get_int("rank")), ("fullinit-response", Some(2), Some(0)));

        let put = Message::new(Wire::V2, "kvs-put").with("key", "k0").with("value", "v;0");
        s.receive(0, &put.encode().unwrap());
        s.receive(0, &Message::new(Wire::V2, "kvs-fence").with("thrid", "0x1").encode().unwrap());
        let r = replies(&drain(&mut s));
        assert_eq!(r.len(), 1); // put response only
        s.receive(1, &Message::new(Wire::V2, "kvs-fence").encode().unwrap());
        let r = replies(&drain(&mut s));
        assert_eq!(r.len(), 2);
        assert!(r.iter().any(|(rk, m)| *rk == 0 && m.contains("thrid=0x1;")));
        s.receive(1, &Message::new(Wire::V2, "kvs-get").with("jobid", "kvs_t2").with("srcid", 0).with("key", "k0").encode().unwrap());
        s.receive(1, &Message::new(Wire::V2, "info-getjobattr").with("key", "PMI_process_mapping").encode().unwrap());
        let r = replies(&drain(&mut s));
        let mut d = Decoder::new();
        d.push(r[0].1.as_bytes());
        d.push(r[1].1.as_bytes());
        let get = d.next_message().unwrap().unwrap();
        assert_eq!(get.get("value"), Some("v;0"));
        assert_eq!(get.get("found"), Some("TRUE"));
        assert_eq!(d.next_message().unwrap().unwrap().get("value"), Some("(vector,(0,1,2))"));
    }

    #[test]
    fn node_attr_wait() {
        let mut s = Server::new(JobInfo::single_node(2, "k"));
        s.receive(1, &Message::new(Wire::V2, "info-getnodeattr").with("key", "shm").with("wait", "TRUE").encode().unwrap());
        assert!(replies(&drain(&mut s)).is_empty());
        s.receive(0, &Message::new(Wire::V2, "info-putnodeattr").with("key", "shm").with("value", "/dev/shm/x").encode().unwrap());
        let r = replies(&drain(&mut s));
        assert_eq!(r.len(), 2);
        assert!(r[1].1.contains("value=/dev/shm/x;"), "{r:?}");
        assert_eq!(r[1].0, 1);
    }

    #[test]
    fn each_rank_is_told_its_program() {
        let mut info = JobInfo::single_node(3, "k");
        info.appnum_of_rank = vec![0, 1, 1];
        let mut s = Server::new(info);
        s.receive(2, b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_appnum\n");
        s.receive(0, b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_appnum\n");
        let r = replies(&drain(&mut s));
        assert_eq!((r[1].0, r[1].1.as_str()), (2, "cmd=appnum rc=0 appnum=1\n"));
        assert_eq!((r[3].0, r[3].1.as_str()), (0, "cmd=appnum rc=0 appnum=0\n"));
    }

    #[test]
    fn group_barriers() {
        let info = JobInfo {
            size: 4,
            kvsname: "k".into(),
            appnum_of_rank: Vec::new(),
            universe_size: 4,
            node_of_rank: vec![0, 0, 1, 1],
        };
        let mut s = Server::new(info);
        s.receive(2, b"cmd=barrier_in group=NODE:7\n");
        assert!(replies(&drain(&mut s)).is_empty());
        s.receive(3, b"cmd=barrier_in group=NODE:7\n");
        let r = replies(&drain(&mut s));
        assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(r[0].1, "cmd=barrier_out tag=7\n");
        s.receive(0, b"cmd=barrier_in group=0,3:5\n");
        s.receive(3, b"cmd=barrier_in group=0,3:5\n");
        assert_eq!(replies(&drain(&mut s)).len(), 2);
    }

    #[test]
    fn abort_and_errors() {
        let mut s = Server::new(JobInfo::single_node(1, "k"));
        s.receive(0, b"cmd=abort exitcode=7 message=it broke: x=1\n");
        assert_eq!(drain(&mut s), vec![Event::Abort { rank: 0, exit_code: 7, message: "it broke: x=1".into() }]);
        let mut s = Server::new(JobInfo::single_node(1, "k"));
        s.receive(0, b"GET / HTTP/1.0\r\n");
        assert!(matches!(drain(&mut s)[0], Event::ProtocolError { rank: 0, .. }));
        let mut s = Server::new(JobInfo::single_node(1, "k"));
        s.receive(0, b"mcmd=spawn\nnprocs=1\nendcmd\n");
        let ev = drain(&mut s);
        assert_eq!(ev.len(), 1);
        assert!(replies(&ev)[0].1.starts_with("cmd=spawn_result rc=-1 msg=spawn\\ request\\ without\\ totspawns"), "{ev:?}");
        s.receive(0, b"mcmd=job-connect\nendcmd\n");
        assert!(drain(&mut s).contains(&Event::Unsupported { rank: 0, command: "job-connect".into() }));
    }

    fn apps() -> Vec<SpawnApp> {
        vec![
            SpawnApp { command: "./a".into(), args: vec!["x y".into(), "".into()], maxprocs: 2, info: vec![("wdir".into(), "/tmp".into())] },
            SpawnApp { command: "b".into(), args: Vec::new(), maxprocs: 3, info: Vec::new() },
        ]
    }

    fn env() -> Vec<(String, String)> {
        vec![("GRIDMPI_PARENT_PORT".into(), "p;q r".into())]
    }

    /// The request bytes a client writes, in the server's event; the
    /// reply comes only at spawn_done, meanwhile other ranks are served.
    #[test]
    fn spawn_in_both_wires() {
        for wire in [Wire::V1, Wire::V2] {
            let mut s = Server::new(JobInfo::single_node(2, "k"));
            let mut bytes = Vec::new();
            match wire {
                Wire::V2 => bytes.extend(spawn::encode_v2(&apps(), &env()).with("thrid", "0x9").encode().unwrap()),
                _ => spawn::encode_v1(&apps(), &env()).iter().for_each(|m| bytes.extend(m.encode().unwrap())),
            }
            // Delivered a byte at a time.
            for b in &bytes {
                s.receive(0, std::slice::from_ref(b));
            }
            assert_eq!(drain(&mut s), vec![Event::Spawn { rank: 0, apps: apps(), env: env() }], "{wire:?}");
            s.receive(1, b"cmd=put kvsname=k key=a value=1\n");
            assert_eq!(replies(&drain(&mut s)), vec![(1, "cmd=put_result rc=0\n".to_string())]);
            // A second request while the first waits is refused at once.
            s.receive(0, &bytes);
            let r = replies(&drain(&mut s));
            assert_eq!(r.len(), 1);
            assert!(r[0].1.replace("\\ ", " ").contains("previous one is not answered"), "{r:?}");
            s.spawn_done(0, Ok(()));
            let r = replies(&drain(&mut s));
            match wire {
                Wire::V2 => assert_eq!(r, vec![(0, "    42cmd=spawn-response;thrid=0x9;rc=0;nerrs=0;".to_string())]),
                _ => assert_eq!(r, vec![(0, "cmd=spawn_result rc=0\n".to_string())]),
            }
            s.spawn_done(0, Ok(()));
            assert!(drain(&mut s).is_empty(), "a second answer is not sent");
            // A failure, with its message.
            s.receive(0, &bytes);
            assert_eq!(drain(&mut s).len(), 1);
            s.spawn_done(0, Err("./a: command not found\non host h".into()));
            let r = replies(&drain(&mut s));
            let mut d = Decoder::new();
            d.push(r[0].1.as_bytes());
            let m = d.next_message().unwrap().unwrap();
            assert_eq!(m.rc(), -1);
            assert_eq!(m.get("msg").or(m.get("errmsg")), Some("./a: command not found on host h"));
        }
    }

    fn spawn_error(wire: Wire, text: &str) -> String {
        let mut s = Server::new(JobInfo::single_node(1, "k"));
        let bytes = match wire {
            Wire::V2 => Message { wire, cmd: "spawn".into(), attrs: parse_v1(&format!("cmd=x {text}")).unwrap().attrs }.encode().unwrap(),
            _ => text.as_bytes().to_vec(),
        };
        s.receive(0, &bytes);
        let ev = drain(&mut s);
        assert_eq!(ev.len(), 1, "{text}: {ev:?}");
        let r = replies(&ev);
        let mut d = Decoder::new();
        d.push(r[0].1.as_bytes());
        let m = d.next_message().unwrap().unwrap();
        assert_eq!(m.rc(), -1, "{text}");
        m.get("msg").or(m.get("errmsg")).unwrap().to_string()
    }

    #[test]
    fn malformed_spawn_requests_get_an_error_reply() {
        let v1 = |body: &str| spawn_error(Wire::V1, &format!("mcmd=spawn\n{body}endcmd\n"));
        let ok = "nprocs=1\nexecname=a\ntotspawns=1\nspawnssofar=1\nargcnt=0\ninfo_num=0\n";
        assert!(v1("nprocs=1\nexecname=a\ntotspawns=1\nspawnssofar=1\n").contains("without argcnt"));
        assert!(v1(&ok.replace("argcnt=0", "argcnt=1")).contains("without arg1"));
        assert!(v1(&ok.replace("argcnt=0", "argcnt=1000")).contains("argcnt=1000, but not that many"));
        assert!(v1(&ok.replace("argcnt=0", "argcnt=2\narg1=x\narg3=y")).contains("without arg2"));
        assert!(v1(&ok.replace("nprocs=1", "nprocs=65537")).contains("1 to 65536"));
        assert!(v1(&ok.replace("nprocs=1", "nprocs=0")).contains("1 to 65536"));
        assert!(v1(&ok.replace("totspawns=1", "totspawns=0")).contains("totspawns"));
        assert!(v1(&ok.replace("spawnssofar=1", "spawnssofar=2")).contains("block 2 of 1"));
        assert!(v1(&ok.replace("spawnssofar=1\n", "")).contains("without spawnssofar"));
        assert!(v1(&ok.replace("execname=a\n", "")).contains("without execname"));
        assert!(v1(&format!("{ok}preput_num=1\npreput_key_0=K\n")).contains("without preput_val_0"));
        assert!(v1(&ok.replace("argcnt=0", "argcnt=99999999999999999999")).contains("not a count"));
        // Two blocks of 40000: too many processes in all, said after the last block.
        let two = |n| ok.replace("totspawns=1", "totspawns=2").replace("nprocs=1", "nprocs=40000").replace("spawnssofar=1", &format!("spawnssofar={n}"));
        let mut s = Server::new(JobInfo::single_node(1, "k"));
        s.receive(0, format!("mcmd=spawn\n{}endcmd\n", two(1)).as_bytes());
        assert!(drain(&mut s).is_empty());
        s.receive(0, format!("mcmd=spawn\n{}endcmd\n", two(2)).as_bytes());
        assert!(replies(&drain(&mut s))[0].1.contains("80000\\ processes"));
        // A block out of order.
        s.receive(0, format!("mcmd=spawn\n{}endcmd\n", two(2)).as_bytes());
        assert!(replies(&drain(&mut s))[0].1.contains("out\\ of\\ order"));

        let v2 = |attrs: &str| spawn_error(Wire::V2, attrs);
        assert!(v2("ncmds=0").contains("no program"));
        assert!(v2("ncmds=2 subcmd=a maxprocs=1 argc=0").contains("ncmds=2 but 1 programs"));
        assert!(v2("ncmds=1 subcmd=a maxprocs=1").contains("without argc"));
        assert!(v2("ncmds=1 subcmd=a maxprocs=100000 argc=0").contains("1 to 65536"));
        assert!(v2("ncmds=1 preputcount=1 ppkey0=K subcmd=a maxprocs=1 argc=0").contains("without ppval0"));
        assert!(v2("ncmds=1 subcmd=a maxprocs=1 argc=1 argv1=x").contains("without argv0"));
        assert!(v2("ncmds=1 subcmd= maxprocs=1 argc=0").contains("no command"));
        assert!(v2("subcmd=a maxprocs=1 argc=0").contains("without ncmds"));
    }

    /// A job of `n` ranks with checkpointing on and round 1 started.
    fn checkpointed(n: u32) -> Server {
        let mut s = Server::new(JobInfo::single_node(n, "k"));
        s.enable_checkpoints();
        s.checkpoint_start(1).unwrap();
        s
    }

    const FROZEN: &[u8] = b"cmd=gridmpi_ckpt_frozen ok=1\n";

    fn written(rank: u32) -> Vec<u8> {
        format!("cmd=gridmpi_ckpt_written ok=1 bytes={} ms={} host=h{rank} path=/c/ckpt-1/rank\\ {rank}.img\n", 1000 + rank, 10 * rank).into_bytes()
    }

    fn abandoned(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::CheckpointAbandoned { reason, .. } => Some(reason.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_round_goes_when_every_rank_froze_and_is_done_when_every_image_is_written() {
        let mut s = checkpointed(3);
        assert_eq!(s.checkpoint_in_progress(), Some(1));
        s.receive(2, FROZEN);
        s.receive(0, FROZEN);
        assert!(drain(&mut s).is_empty(), "nobody is answered before every rank froze");
        assert_eq!(s.checkpoint_unanswered(), vec![1]);
        s.receive(1, FROZEN);
        let ev = drain(&mut s);
        assert_eq!(replies(&ev), (0..3).map(|r| (r, "cmd=gridmpi_ckpt_go rc=0 seq=1\n".to_string())).collect::<Vec<_>>());
        assert!(ev.contains(&Event::CheckpointFrozen { seq: 1 }));

        for r in [1, 0] {
            s.receive(r, &written(r));
        }
        assert!(drain(&mut s).is_empty());
        assert_eq!(s.checkpoint_unanswered(), vec![2]);
        s.receive(2, &written(2));
        let ev = drain(&mut s);
        let Some(Event::CheckpointWritten { seq: 1, images }) = ev.first() else { panic!("{ev:?}") };
        assert_eq!(images.len(), 3);
        assert_eq!(images[1], ImageReport { rank: 1, host: "h1".into(), bytes: 1001, ms: 10, path: "/c/ckpt-1/rank 1.img".into() });
        assert!(replies(&ev).is_empty(), "the ranks wait while the launcher records the checkpoint");
        assert!(s.checkpoint_start(2).unwrap_err().contains("checkpoint 1 is in progress"));

        s.checkpoint_finish(false);
        let r = replies(&drain(&mut s));
        assert_eq!(r, (0..3).map(|r| (r, "cmd=gridmpi_ckpt_done rc=0 stop=0\n".to_string())).collect::<Vec<_>>());
        assert_eq!(s.checkpoint_in_progress(), None);
        s.checkpoint_finish(false);
        assert!(drain(&mut s).is_empty(), "finished once");

        // The next round, told to stop.
        s.checkpoint_start(2).unwrap();
        for r in 0..3 {
            s.receive(r, FROZEN);
        }
        assert!(replies(&drain(&mut s))[0].1.ends_with("seq=2\n"));
        for r in 0..3 {
            s.receive(r, &written(r));
        }
        assert!(matches!(drain(&mut s)[..], [Event::CheckpointWritten { seq: 2, .. }]));
        s.checkpoint_finish(true);
        assert!(replies(&drain(&mut s)).iter().all(|(_, m)| m == "cmd=gridmpi_ckpt_done rc=0 stop=1\n"));
    }

    #[test]
    fn a_rank_that_cannot_freeze_abandons_the_round_for_all() {
        let mut s = checkpointed(3);
        s.receive(0, FROZEN);
        s.receive(1, b"cmd=gridmpi_ckpt_frozen ok=0 reason=an\\ open\\ socket\n");
        let ev = drain(&mut s);
        let r = replies(&ev);
        let want = "cmd=gridmpi_ckpt_go rc=1 msg=rank\\ 1\\ cannot\\ be\\ checkpointed:\\ an\\ open\\ socket\n";
        assert_eq!(r, vec![(1, want.to_string()), (0, want.to_string())]);
        assert_eq!(abandoned(&ev), vec!["rank 1 cannot be checkpointed: an open socket".to_string()]);
        // The late rank of the round is told at once.
        s.receive(2, FROZEN);
        assert_eq!(replies(&drain(&mut s)), vec![(2, want.to_string())]);
        assert_eq!(s.checkpoint_in_progress(), None);
        // The job goes on: a new round may start.
        s.checkpoint_start(2).unwrap();
    }

    #[test]
    fn an_image_that_could_not_be_written_fails_the_checkpoint() {
        let mut s = checkpointed(3);
        for r in 0..3 {
            s.receive(r, FROZEN);
        }
        drain(&mut s);
        s.receive(2, &written(2));
        s.receive(0, b"cmd=gridmpi_ckpt_written ok=0 reason=disk\\ full\n");
        let ev = drain(&mut s);
        let want = "cmd=gridmpi_ckpt_done rc=1 msg=rank\\ 0\\ could\\ not\\ write\\ its\\ image:\\ disk\\ full\n";
        assert_eq!(replies(&ev), vec![(0, want.to_string()), (2, want.to_string())]);
        assert_eq!(abandoned(&ev).len(), 1);
        s.receive(1, &written(1));
        assert_eq!(replies(&drain(&mut s)), vec![(1, want.to_string())]);
        // A report lacking a field is a failure too.
        let mut s = checkpointed(1);
        s.receive(0, FROZEN);
        drain(&mut s);
        s.receive(0, b"cmd=gridmpi_ckpt_written ok=1 bytes=12 host=h path=/p\n");
        let ev = drain(&mut s);
        assert!(abandoned(&ev)[0].contains("without a valid ms="), "{ev:?}");
    }

    #[test]
    fn a_rank_finishing_during_a_round_abandons_it() {
        // Retiring: answered at once; no round starts after.
        let mut s = checkpointed(2);
        s.receive(0, FROZEN);
        s.receive(1, b"cmd=gridmpi_ckpt_retire\n");
        let ev = drain(&mut s);
        let r = replies(&ev);
        assert_eq!(r[0], (1, "cmd=gridmpi_ckpt_retired rc=0\n".to_string()));
        assert_eq!(r[1].0, 0);
        assert!(r[1].1.starts_with("cmd=gridmpi_ckpt_go rc=1 msg=rank\\ 1\\ is\\ finishing"), "{r:?}");
        assert_eq!(abandoned(&ev).len(), 1);
        assert!(s.checkpoint_start(2).unwrap_err().contains("rank 1 is finishing"));

        // Finalizing, closing the connection, the launcher's timeout.
        for end in 0..3 {
            let mut s = checkpointed(2);
            s.receive(0, FROZEN);
            match end {
                0 => s.receive(1, b"cmd=finalize\n"),
                1 => s.disconnected(1),
                _ => {
                    assert_eq!(s.checkpoint_unanswered(), vec![1]);
                    s.checkpoint_abort("rank 1 did not freeze within 60 s");
                }
            }
            let ev = drain(&mut s);
            let reason = &abandoned(&ev)[0];
            assert!(reason.contains("rank 1"), "{reason}");
            assert!(replies(&ev).iter().any(|(r, m)| *r == 0 && m.starts_with("cmd=gridmpi_ckpt_go rc=1")), "{ev:?}");
            s.checkpoint_abort("again");
            assert!(drain(&mut s).is_empty(), "abandoned once");
        }
        // During the writing phase: the ranks waiting are told `done rc=1`.
        let mut s = checkpointed(2);
        s.receive(0, FROZEN);
        s.receive(1, FROZEN);
        s.receive(0, &written(0));
        drain(&mut s);
        s.disconnected(1);
        let r = replies(&drain(&mut s));
        assert_eq!(r.len(), 1);
        assert!(r[0].1.starts_with("cmd=gridmpi_ckpt_done rc=1 msg=rank\\ 1\\ closed"), "{r:?}");
        // While the launcher records it: everyone is.
        let mut s = checkpointed(2);
        for m in [FROZEN.to_vec(), written(0)] {
            s.receive(0, &m);
            s.receive(1, &m);
        }
        drain(&mut s);
        s.checkpoint_abort("cannot write the manifest");
        assert_eq!(replies(&drain(&mut s)).len(), 2);
    }

    #[test]
    fn requests_outside_a_round_are_refused_at_once() {
        let mut s = Server::new(JobInfo::single_node(2, "k"));
        s.receive(0, FROZEN);
        s.receive(0, b"cmd=gridmpi_ckpt_retire\ncmd=gridmpi_ckpt_what\n");
        let r = replies(&drain(&mut s));
        let off = "msg=checkpointing\\ is\\ not\\ enabled\\ (gridmpirun\\ --checkpoint-dir)\n";
        assert_eq!(r[0].1, format!("cmd=gridmpi_ckpt_go rc=1 {off}"));
        assert_eq!(r[1].1, format!("cmd=gridmpi_ckpt_retired rc=1 {off}"));
        assert_eq!(r[2].1, format!("cmd=gridmpi_ckpt_what_result rc=-1 {off}"));
        assert!(s.checkpoint_start(1).is_err());

        s.enable_checkpoints();
        s.receive(1, FROZEN);
        s.receive(1, &written(1));
        let r = replies(&drain(&mut s));
        assert_eq!(r[0].1, "cmd=gridmpi_ckpt_go rc=1 msg=no\\ checkpoint\\ in\\ progress\n");
        assert_eq!(r[1].1, "cmd=gridmpi_ckpt_done rc=1 msg=no\\ checkpoint\\ in\\ progress\n");
        // Out of order within a round; twice is a broken protocol.
        s.checkpoint_start(1).unwrap();
        s.receive(0, &written(0));
        assert!(replies(&drain(&mut s))[0].1.starts_with("cmd=gridmpi_ckpt_done rc=1 msg=checkpoint\\ 1:\\ an\\ image"));
        s.receive(0, FROZEN);
        s.receive(0, FROZEN);
        assert!(matches!(drain(&mut s)[..], [Event::ProtocolError { rank: 0, .. }]));
    }

    const FAILED: &[u8] = b"cmd=gridmpi_failed\n";

    #[test]
    fn outage_reports_become_events_without_a_reply() {
        let mut s = Server::new(JobInfo::single_node(4, "k"));
        s.receive(2, b"cmd=gridmpi_outage from=c0 to=c1 state=down secs=6 budget=900\ncmd=gridmpi_outage from=c1 to=c0 state=back secs=21 budget=kernel\n");
        let ev = drain(&mut s);
        assert!(replies(&ev).is_empty(), "an outage report is not answered");
        let outages: Vec<_> = ev.iter().filter_map(|e| if let Event::Outage { rank, from, to, back, secs, budget } = e { Some((*rank, from.as_str(), to.as_str(), *back, *secs, *budget)) } else { None }).collect();
        assert_eq!(outages, vec![(2, "c0", "c1", false, 6, Some(900)), (2, "c1", "c0", true, 21, None)]);
        s.receive(1, b"cmd=gridmpi_outage from=c0 to=c1 state=sideways secs=6 budget=900\n");
        assert!(matches!(drain(&mut s).as_slice(), [Event::ProtocolError { rank: 1, .. }]));
    }

    #[test]
    fn failed_ranks_are_listed_in_the_order_reported() {
        let mut s = Server::new(JobInfo::single_node(4, "k"));
        s.receive(0, FAILED);
        assert_eq!(replies(&drain(&mut s)), vec![(0, "cmd=gridmpi_failed rc=0 ranks=\n".to_string())]);
        assert!(s.rank_failed(3));
        assert!(s.rank_failed(1));
        assert!(!s.rank_failed(3), "known already");
        assert!(!s.rank_failed(9), "not in the job");
        assert_eq!(s.failed_ranks(), &[3, 1]);
        s.receive(2, FAILED);
        assert_eq!(replies(&drain(&mut s)), vec![(2, "cmd=gridmpi_failed rc=0 ranks=3,1\n".to_string())]);
        // The client reads it back.
        let m = parse_v1("cmd=gridmpi_failed rc=0 ranks=3,1\n").unwrap();
        assert_eq!(m.get("ranks"), Some("3,1"));
        // What a failed rank still says is ignored, and it is told nothing.
        s.receive(1, b"cmd=put kvsname=k key=a value=1\ncmd=barrier_in\n");
        s.receive(1, FAILED);
        assert!(drain(&mut s).is_empty());
    }

    #[test]
    fn barriers_complete_without_the_failed_ranks() {
        // Failed before the barrier: the others meet without it, in PMI-1
        // barriers, group barriers and PMI-2 fences alike.
        let mut s = Server::new(JobInfo::single_node(3, "k"));
        s.rank_failed(1);
        s.receive(0, b"cmd=barrier_in\n");
        assert!(replies(&drain(&mut s)).is_empty());
        s.receive(2, b"cmd=barrier_in\n");
        let r = replies(&drain(&mut s));
        assert_eq!(r, vec![(0, "cmd=barrier_out tag=0\n".to_string()), (2, "cmd=barrier_out tag=0\n".to_string())]);
        s.receive(0, b"cmd=barrier_in group=0,1:5\n");
        assert_eq!(replies(&drain(&mut s)), vec![(0, "cmd=barrier_out tag=5\n".to_string())]);
        let fence = Message::new(Wire::V2, "kvs-fence").encode().unwrap();
        s.receive(0, &fence);
        s.receive(2, &fence);
        let r = replies(&drain(&mut s));
        assert_eq!(r.iter().map(|(rank, _)| *rank).collect::<Vec<_>>(), vec![0, 2]);
        assert!(r.iter().all(|(_, m)| m.contains("cmd=kvs-fence-response;rc=0;")), "{r:?}");
    }

    #[test]
    fn a_failure_completes_the_barrier_the_others_wait_in() {
        let mut s = Server::new(JobInfo::single_node(4, "k"));
        s.receive(0, b"cmd=barrier_in\n");
        s.receive(2, b"cmd=barrier_in\n");
        // Rank 1 had entered too, then died: its entry goes with it.
        s.receive(1, b"cmd=barrier_in\n");
        assert!(s.rank_failed(1));
        assert!(replies(&drain(&mut s)).is_empty(), "rank 3 has not come");
        assert_eq!(s.ranks_in_barrier(), BTreeSet::from([0, 2]));
        // The last missing rank fails: the survivors are released at once.
        assert!(s.rank_failed(3));
        let r = replies(&drain(&mut s));
        assert_eq!(r, vec![(0, "cmd=barrier_out tag=0\n".to_string()), (2, "cmd=barrier_out tag=0\n".to_string())]);
        assert!(s.ranks_in_barrier().is_empty());
        // A barrier only a failed rank was in is gone (nobody waits in it).
        let mut s = Server::new(JobInfo::single_node(2, "k"));
        s.receive(1, b"cmd=barrier_in\n");
        s.rank_failed(1);
        assert!(s.ranks_in_barrier().is_empty());
        s.receive(0, b"cmd=barrier_in\n");
        assert_eq!(replies(&drain(&mut s)), vec![(0, "cmd=barrier_out tag=0\n".to_string())]);
    }

    #[test]
    fn process_mapping_notation() {
        let mk = |nodes: Vec<u32>| JobInfo {
            size: nodes.len() as u32,
            kvsname: "k".into(),
            appnum_of_rank: Vec::new(),
            universe_size: -1,
            node_of_rank: nodes,
        };
        assert_eq!(mk(vec![0, 0, 1, 1, 2, 2]).process_mapping(), "(vector,(0,3,2))");
        assert_eq!(mk(vec![0, 0, 0, 1, 1]).process_mapping(), "(vector,(0,1,3),(1,1,2))");
        assert_eq!(mk(vec![0, 1, 0, 1]).process_mapping(), "(vector,(0,2,1),(0,2,1))");
    }
}

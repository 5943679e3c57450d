//! The TCP handshake as a step machine: bytes in, bytes out, a conclusion.
//! No socket, no clock, no randomness of its own (nonces are handed in):
//! the transport feeds what it read to [`Connector::handle_bytes`] or
//! [`Acceptor::handle_bytes`], writes what `poll_transmit` gives, and acts
//! on the [`Outcome`].
//!
//! ```text
//! connector -> acceptor  HELLO    magic version from to 0 nonce_c              56 bytes
//!                                  from_world to_world
//! acceptor  -> connector WELCOME  magic status version nonce_a                 32 bytes
//! connector -> acceptor  PROOF    magic generation 0 received_c mac_c          56 bytes
//! acceptor  -> connector VERDICT  magic status 0 received_a mac_a              56 bytes
//!
//! mac_c = HMAC(secret, "gridmpi connector" version from from_world to to_world
//!              job nonce_c nonce_a generation received_c)
//! mac_a = HMAC(secret, "gridmpi acceptor" version from from_world to to_world
//!              job nonce_c nonce_a status received_a)
//! ```
//!
//! Integers are little-endian. A process is named by its world (the public
//! id of its job, [`Keys::world`]) and its rank there ([`Who`]): `from` is
//! the connector's rank, `to` the acceptor's. Both ends of a job's own
//! connections use the job's keys; processes of two jobs joined by
//! MPI_Comm_accept/connect, spawn or join use the keys of that pair of
//! jobs, which the acceptor finds in its [`Directory`] by the caller's
//! world and rank. Frames follow the VERDICT on the same stream, in both
//! directions; the machines consume exactly their messages and leave the
//! bytes after them to the caller.
//!
//! Why it has these steps:
//! - The acceptor learns who is calling (HELLO) but gives a caller nothing
//!   derived from the secret, and takes no decision about the rank it
//!   claims to be, until that caller has proven it holds the secret (PROOF
//!   over the acceptor's fresh nonce, so a recorded PROOF is useless). Only
//!   then does the owner decide ([`Proven::decide`]) whether this
//!   connection becomes the rank's one connection, so a stranger claiming a
//!   rank can neither take its slot nor get the real rank refused.
//! - The VERDICT is authenticated (its MAC covers the status and both
//!   nonces): a connector gives up its connection as a DUPLICATE only on
//!   the word of a peer holding the secret. Refusals that come before any
//!   proof (WRONG_PEER, WRONG_VERSION, BAD_PROOF) cannot be authenticated;
//!   they only end a connection that could not have worked.
//! - The job id is never sent in clear (the MACs bind it): it may be
//!   derived from the secret.
//! - The first 16 bytes of WELCOME (magic, status, version) and the first
//!   12 of HELLO (magic, version) keep their layout in every version, so a
//!   peer of another version is told so instead of left waiting.
//!
//! When two processes connect to each other at once, the connection made by
//! the lower pid wins ([`verdict`]): the other one is refused as DUPLICATE.
//!
//! A connection may replace a broken one ([`Resume`]): PROOF names the
//! link's generation the caller asks for (one past the last connection it
//! had with us) and how many stream bytes it received from us; VERDICT
//! says how many we received from it. Each side then writes again what
//! the other lacks (`stream.rs`). A caller asking for a generation past
//! the one we use has lost that connection, so it is replaced; asking for
//! it again is a stale attempt, refused as DUPLICATE.

#![forbid(unsafe_code)]

use crate::auth;
use gridmpi_wire::Pid;
use std::fmt;

pub const HELLO_LEN: usize = 56;
pub const WELCOME_LEN: usize = 32;
pub const PROOF_LEN: usize = 56;
pub const VERDICT_LEN: usize = 56;
/// The longest handshake message.
const MAX_MESSAGE: usize = VERDICT_LEN;

const HELLO_MAGIC: &[u8; 8] = b"GMPIhelo";
const WELCOME_MAGIC: &[u8; 8] = b"GMPIwlcm";
const PROOF_MAGIC: &[u8; 8] = b"GMPIprof";
const VERDICT_MAGIC: &[u8; 8] = b"GMPIvrdt";

/// A connection nonce: fresh random bytes from the owner, one per connection.
pub type Nonce = [u8; 16];

/// Where a link between two processes stands when a connection is made:
/// which connection of the link this is (1 for the first) and how many
/// stream bytes one side received from the other over all earlier ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resume {
    pub generation: u32,
    pub received: u64,
}

impl Resume {
    /// A link's first connection.
    pub const FIRST: Resume = Resume { generation: 1, received: 0 };
}

/// What both ends of every connection of a job share.
#[derive(Clone, PartialEq, Eq)]
pub struct Keys {
    /// The job's id (bound into every MAC, never sent).
    pub job: u64,
    pub secret: [u8; 32],
}

impl Keys {
    /// The public id of the world (job) these are the keys of: what its
    /// processes call it on the wire. A hash of the job id, which is never
    /// sent (the job id may be derived from the secret).
    pub fn world(&self) -> u64 {
        let h = auth::sha256(&[&b"gridmpi world "[..], &self.job.to_le_bytes()].concat());
        u64::from_le_bytes(array(&h[..8]))
    }
}

/// A process as it names itself on the wire: its world and its rank there.
/// Ordered, so that two processes of any worlds agree which is the lower.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Who {
    pub world: u64,
    pub rank: u32,
}

/// A peer as its connections need it: our pid for it, who it is, and the
/// keys of our link with its world (our job's keys for our own ranks).
#[derive(Clone, Debug)]
pub struct Party {
    pub pid: Pid,
    pub who: Who,
    pub keys: Keys,
}

/// Who may call us: the ranks of our own world (`0..own`), and the
/// processes of other worlds joined to ours, with our pid for each and the
/// keys of the pair of worlds.
#[derive(Clone, Debug, Default)]
pub struct Directory {
    pub own: u32,
    pub foreign: std::collections::HashMap<Who, (Pid, Keys)>,
}

impl Directory {
    /// Only the ranks of our own world.
    pub fn own(npeers: usize) -> Directory {
        Directory { own: npeers.min(u32::MAX as usize) as u32, foreign: Default::default() }
    }

    /// The peer `who` is to us, if it may call.
    fn find(&self, id: &Identity, who: Who) -> Option<Party> {
        if who.world == id.world() {
            return (who.rank != id.me && who.rank < self.own).then(|| Party { pid: who.rank, who, keys: id.keys.clone() });
        }
        self.foreign.get(&who).map(|(pid, keys)| Party { pid: *pid, who, keys: keys.clone() })
    }
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Keys { .. }") // never print the secret
    }
}

/// An acceptor's answer, in WELCOME or VERDICT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok = 0,
    /// Another connection between the two processes is (or will be) used.
    Duplicate = 1,
    /// The caller is not a rank of this job, or not calling this rank.
    WrongPeer = 2,
    /// The caller speaks another protocol version.
    WrongVersion = 3,
    /// The caller's PROOF did not check out (another job or secret).
    BadProof = 4,
}

impl Status {
    fn from_u32(v: u32) -> Option<Status> {
        Some(match v {
            0 => Status::Ok,
            1 => Status::Duplicate,
            2 => Status::WrongPeer,
            3 => Status::WrongVersion,
            4 => Status::BadProof,
            _ => return None,
        })
    }
}

/// A handshake that ended with one side refusing the other: sent by an
/// acceptor, or received by a connector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    Duplicate,
    WrongPeer,
    /// `theirs` is the other side's version.
    WrongVersion { theirs: u32 },
    BadProof,
}

impl Refusal {
    pub fn status(&self) -> Status {
        match self {
            Refusal::Duplicate => Status::Duplicate,
            Refusal::WrongPeer => Status::WrongPeer,
            Refusal::WrongVersion { .. } => Status::WrongVersion,
            Refusal::BadProof => Status::BadProof,
        }
    }
}

/// A handshake that ended without agreement or refusal: the other side
/// broke the protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The first bytes are not a GridMPI handshake message.
    NotGridMpi,
    /// A field that must be zero is not, or a status is unknown.
    Malformed(&'static str),
    /// The acceptor said OK with another version than ours.
    VersionMismatch { theirs: u32 },
    /// The acceptor's verdict does not carry a valid MAC.
    BadMac,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::NotGridMpi => f.write_str("the peer does not speak GridMPI's protocol"),
            Failure::Malformed(what) => write!(f, "malformed handshake message ({what})"),
            Failure::VersionMismatch { theirs } => write!(f, "the peer accepted us with protocol version {theirs}"),
            Failure::BadMac => f.write_str("the peer failed to prove it belongs to this job (bad MAC)"),
        }
    }
}

/// How a handshake ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Both sides proved they hold the secret and agreed to use this
    /// connection; frames follow.
    Established { peer: Pid },
    Refused(Refusal),
    Failed(Failure),
}

/// The MAC of a PROOF (`status` None) or a VERDICT; `generation` is in a
/// PROOF only, `received` in both.
#[allow(clippy::too_many_arguments)]
fn mac(
    keys: &Keys,
    label: &[u8],
    version: u32,
    from: Who,
    to: Who,
    nonces: (&Nonce, &Nonce),
    status: Option<Status>,
    generation: Option<u32>,
    received: u64,
) -> [u8; 32] {
    let status = status.map(|s| (s as u32).to_le_bytes());
    let generation = generation.map(|g| g.to_le_bytes());
    auth::hmac_sha256(
        &keys.secret,
        &[
            label,
            &version.to_le_bytes(),
            &from.rank.to_le_bytes(),
            &from.world.to_le_bytes(),
            &to.rank.to_le_bytes(),
            &to.world.to_le_bytes(),
            &keys.job.to_le_bytes(),
            nonces.0,
            nonces.1,
            status.as_ref().map_or(&[][..], |s| &s[..]),
            generation.as_ref().map_or(&[][..], |g| &g[..]),
            &received.to_le_bytes(),
        ],
    )
}

const CONNECTOR_LABEL: &[u8] = b"gridmpi connector";
const ACCEPTOR_LABEL: &[u8] = b"gridmpi acceptor";

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(array(&b[i..i + 8]))
}

fn array<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

// The four messages. `decode` takes exactly the message's bytes.

struct Hello {
    version: u32,
    from: Who,
    to: Who,
    nonce_c: Nonce,
}

impl Hello {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HELLO_LEN);
        b.extend_from_slice(HELLO_MAGIC);
        b.extend_from_slice(&self.version.to_le_bytes());
        b.extend_from_slice(&self.from.rank.to_le_bytes());
        b.extend_from_slice(&self.to.rank.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.nonce_c);
        b.extend_from_slice(&self.from.world.to_le_bytes());
        b.extend_from_slice(&self.to.world.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Result<Hello, Failure> {
        if &b[..8] != HELLO_MAGIC {
            return Err(Failure::NotGridMpi);
        }
        if u32_at(b, 20) != 0 {
            return Err(Failure::Malformed("reserved HELLO field"));
        }
        Ok(Hello {
            version: u32_at(b, 8),
            from: Who { world: u64_at(b, 40), rank: u32_at(b, 12) },
            to: Who { world: u64_at(b, 48), rank: u32_at(b, 16) },
            nonce_c: array(&b[24..40]),
        })
    }
}

struct Welcome {
    status: Status,
    version: u32,
    nonce_a: Nonce,
}

impl Welcome {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(WELCOME_LEN);
        b.extend_from_slice(WELCOME_MAGIC);
        b.extend_from_slice(&(self.status as u32).to_le_bytes());
        b.extend_from_slice(&self.version.to_le_bytes());
        b.extend_from_slice(&self.nonce_a);
        b
    }

    fn decode(b: &[u8]) -> Result<Welcome, Failure> {
        if &b[..8] != WELCOME_MAGIC {
            return Err(Failure::NotGridMpi);
        }
        let status = match Status::from_u32(u32_at(b, 8)) {
            Some(s @ (Status::Ok | Status::WrongPeer | Status::WrongVersion)) => s,
            _ => return Err(Failure::Malformed("WELCOME status")),
        };
        Ok(Welcome { status, version: u32_at(b, 12), nonce_a: array(&b[16..32]) })
    }
}

struct Proof {
    resume: Resume,
    mac: [u8; 32],
}

impl Proof {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(PROOF_LEN);
        b.extend_from_slice(PROOF_MAGIC);
        b.extend_from_slice(&self.resume.generation.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.resume.received.to_le_bytes());
        b.extend_from_slice(&self.mac);
        b
    }

    fn decode(b: &[u8]) -> Result<Proof, Failure> {
        if &b[..8] != PROOF_MAGIC {
            return Err(Failure::NotGridMpi);
        }
        if u32_at(b, 12) != 0 {
            return Err(Failure::Malformed("reserved PROOF field"));
        }
        Ok(Proof { resume: Resume { generation: u32_at(b, 8), received: u64_at(b, 16) }, mac: array(&b[24..56]) })
    }
}

struct Verdict {
    status: Status,
    /// What the acceptor received from the caller (zero unless OK).
    received: u64,
    /// Zero unless the status is OK or DUPLICATE (an unproven caller gets
    /// nothing derived from the secret).
    mac: [u8; 32],
}

impl Verdict {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(VERDICT_LEN);
        b.extend_from_slice(VERDICT_MAGIC);
        b.extend_from_slice(&(self.status as u32).to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.received.to_le_bytes());
        b.extend_from_slice(&self.mac);
        b
    }

    fn decode(b: &[u8]) -> Result<Verdict, Failure> {
        if &b[..8] != VERDICT_MAGIC {
            return Err(Failure::NotGridMpi);
        }
        let status = match Status::from_u32(u32_at(b, 8)) {
            Some(s @ (Status::Ok | Status::Duplicate | Status::BadProof)) => s,
            _ => return Err(Failure::Malformed("VERDICT status")),
        };
        if u32_at(b, 12) != 0 {
            return Err(Failure::Malformed("reserved VERDICT field"));
        }
        Ok(Verdict { status, received: u64_at(b, 16), mac: array(&b[24..56]) })
    }
}

/// The bytes of the message being received, gathered across reads.
struct Partial {
    buf: [u8; MAX_MESSAGE],
    len: usize,
}

impl Partial {
    fn new() -> Partial {
        Partial { buf: [0; MAX_MESSAGE], len: 0 }
    }

    /// Take bytes from `input` until `want` are gathered; returns how many
    /// were taken.
    fn fill(&mut self, want: usize, input: &[u8]) -> usize {
        let n = want.saturating_sub(self.len).min(input.len());
        self.buf[self.len..self.len + n].copy_from_slice(&input[..n]);
        self.len += n;
        n
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn clear(&mut self) {
        self.len = 0;
    }
}

/// Who a machine is and what it shares with its peers.
#[derive(Clone, Debug)]
pub struct Identity {
    pub me: Pid,
    /// Protocol version spoken (the wire version).
    pub version: u32,
    /// Our job's keys.
    pub keys: Keys,
}

impl Identity {
    fn world(&self) -> u64 {
        self.keys.world()
    }

    fn who(&self) -> Who {
        Who { world: self.world(), rank: self.me }
    }

    /// A rank of our own world, as a party.
    fn own(&self, pid: Pid) -> Party {
        Party { pid, who: Who { world: self.world(), rank: pid }, keys: self.keys.clone() }
    }
}

// ---------------------------------------------------------------------------
// The connector

/// The side that called: sends HELLO, proves itself, waits for the verdict.
pub struct Connector {
    id: Identity,
    peer: Party,
    /// What the acceptor said it received from us (once established).
    peer_received: Option<u64>,
    state: ConnectorState,
    incoming: Partial,
    out: Vec<u8>,
}

enum ConnectorState {
    AwaitWelcome(AwaitWelcome),
    AwaitVerdict(AwaitVerdict),
    Done(Outcome),
}

/// HELLO sent.
struct AwaitWelcome {
    nonce_c: Nonce,
    resume: Resume,
}

/// PROOF sent.
struct AwaitVerdict {
    nonce_c: Nonce,
    nonce_a: Nonce,
}

impl AwaitWelcome {
    fn on_welcome(self, id: &Identity, peer: &Party, msg: &[u8], out: &mut Vec<u8>) -> ConnectorState {
        let w = match Welcome::decode(msg) {
            Ok(w) => w,
            Err(f) => return ConnectorState::Done(Outcome::Failed(f)),
        };
        match w.status {
            Status::WrongPeer => return ConnectorState::Done(Outcome::Refused(Refusal::WrongPeer)),
            Status::WrongVersion => {
                return ConnectorState::Done(Outcome::Refused(Refusal::WrongVersion { theirs: w.version }))
            }
            _ => {}
        }
        if w.version != id.version {
            return ConnectorState::Done(Outcome::Failed(Failure::VersionMismatch { theirs: w.version }));
        }
        let nonces = (&self.nonce_c, &w.nonce_a);
        let r = self.resume;
        let proof = Proof { resume: r, mac: mac(&peer.keys, CONNECTOR_LABEL, id.version, id.who(), peer.who, nonces, None, Some(r.generation), r.received) };
        out.extend_from_slice(&proof.encode());
        ConnectorState::AwaitVerdict(AwaitVerdict { nonce_c: self.nonce_c, nonce_a: w.nonce_a })
    }
}

impl AwaitVerdict {
    /// The outcome, and what the acceptor received from us if established.
    fn on_verdict(self, id: &Identity, peer: &Party, msg: &[u8]) -> (Outcome, Option<u64>) {
        let v = match Verdict::decode(msg) {
            Ok(v) => v,
            Err(f) => return (Outcome::Failed(f), None),
        };
        if v.status == Status::BadProof {
            return (Outcome::Refused(Refusal::BadProof), None);
        }
        let nonces = (&self.nonce_c, &self.nonce_a);
        let expect = mac(&peer.keys, ACCEPTOR_LABEL, id.version, id.who(), peer.who, nonces, Some(v.status), None, v.received);
        if !auth::equal_ct(&expect, &v.mac) {
            return (Outcome::Failed(Failure::BadMac), None);
        }
        match v.status {
            Status::Ok => (Outcome::Established { peer: peer.pid }, Some(v.received)),
            _ => (Outcome::Refused(Refusal::Duplicate), None),
        }
    }
}

impl Connector {
    /// A connector making the first connection to `peer`, with a fresh
    /// `nonce_c`. The HELLO is ready to transmit once the connection is made.
    pub fn new(id: Identity, peer: Pid, nonce_c: Nonce) -> Connector {
        let peer = id.own(peer);
        Connector::calling(id, peer, nonce_c, Resume::FIRST)
    }

    /// A connector asking for connection `resume.generation` of the link
    /// with `peer`, having received `resume.received` bytes from it.
    pub fn resuming(id: Identity, peer: Pid, nonce_c: Nonce, resume: Resume) -> Connector {
        let peer = id.own(peer);
        Connector::calling(id, peer, nonce_c, resume)
    }

    /// A connector calling `peer`, of our world or another one.
    pub fn calling(id: Identity, peer: Party, nonce_c: Nonce, resume: Resume) -> Connector {
        let hello = Hello { version: id.version, from: id.who(), to: peer.who, nonce_c };
        Connector {
            out: hello.encode(),
            id,
            peer,
            peer_received: None,
            state: ConnectorState::AwaitWelcome(AwaitWelcome { nonce_c, resume }),
            incoming: Partial::new(),
        }
    }

    /// Send `preface` (the line for the relays on the way: gridmpi_relay)
    /// before the HELLO. The relays consume it; the acceptor never sees it.
    pub fn through_relay(mut self, mut preface: Vec<u8>) -> Connector {
        preface.append(&mut self.out);
        self.out = preface;
        self
    }

    /// Once established: the stream bytes the acceptor received from us.
    pub fn peer_received(&self) -> Option<u64> {
        self.peer_received
    }

    pub fn peer(&self) -> Pid {
        self.peer.pid
    }

    /// Bytes received; returns how many were handshake bytes. Once the
    /// handshake has ended it takes no more: what follows is frames.
    pub fn handle_bytes(&mut self, input: &[u8]) -> usize {
        let mut used = 0;
        loop {
            let want = match &self.state {
                ConnectorState::AwaitWelcome(_) => WELCOME_LEN,
                ConnectorState::AwaitVerdict(_) => VERDICT_LEN,
                ConnectorState::Done(_) => return used,
            };
            used += self.incoming.fill(want, &input[used..]);
            if self.incoming.len < want {
                return used;
            }
            let msg = self.incoming.bytes();
            let placeholder = ConnectorState::Done(Outcome::Failed(Failure::NotGridMpi));
            self.state = match std::mem::replace(&mut self.state, placeholder) {
                ConnectorState::AwaitWelcome(s) => s.on_welcome(&self.id, &self.peer, msg, &mut self.out),
                ConnectorState::AwaitVerdict(s) => {
                    let (outcome, received) = s.on_verdict(&self.id, &self.peer, msg);
                    self.peer_received = received;
                    ConnectorState::Done(outcome)
                }
                done @ ConnectorState::Done(_) => done,
            };
            self.incoming.clear();
        }
    }

    /// Bytes to write to the peer, if any.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        (!self.out.is_empty()).then(|| std::mem::take(&mut self.out))
    }

    /// How the handshake ended, once it has.
    pub fn outcome(&self) -> Option<&Outcome> {
        match &self.state {
            ConnectorState::Done(o) => Some(o),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------
// The acceptor

/// The side that was called: checks HELLO, checks PROOF, and gives the
/// verdict its owner decides.
pub struct Acceptor {
    id: Identity,
    /// Where the caller said the link stands (once admitted).
    caller_resume: Option<Resume>,
    /// Who may call.
    directory: std::sync::Arc<Directory>,
    state: AcceptorState,
    incoming: Partial,
    out: Vec<u8>,
}

enum AcceptorState {
    AwaitHello(AwaitHello),
    AwaitProof(AwaitProof),
    Proven(ProvenCaller),
    Done(Outcome),
}

/// Nothing received yet.
struct AwaitHello {
    nonce_a: Nonce,
}

/// WELCOME sent to a caller claiming to be `peer`. Nothing is decided about
/// `peer` in this state.
struct AwaitProof {
    peer: Party,
    nonce_c: Nonce,
    nonce_a: Nonce,
}

/// The caller proved it is `peer`; the owner decides.
struct ProvenCaller {
    peer: Party,
    nonce_c: Nonce,
    nonce_a: Nonce,
    resume: Resume,
}

impl AwaitHello {
    /// Check the prefix as soon as it is there: another protocol is dropped
    /// at its first bytes, another version told so after 12.
    fn on_prefix(&self, id: &Identity, prefix: &[u8], out: &mut Vec<u8>) -> Option<Outcome> {
        let magic_len = prefix.len().min(8);
        if prefix[..magic_len] != HELLO_MAGIC[..magic_len] {
            return Some(Outcome::Failed(Failure::NotGridMpi));
        }
        if prefix.len() >= 12 {
            let theirs = u32_at(prefix, 8);
            if theirs != id.version {
                out.extend_from_slice(&Welcome { status: Status::WrongVersion, version: id.version, nonce_a: [0; 16] }.encode());
                return Some(Outcome::Refused(Refusal::WrongVersion { theirs }));
            }
        }
        None
    }

    fn on_hello(self, id: &Identity, directory: &Directory, msg: &[u8], out: &mut Vec<u8>) -> AcceptorState {
        let h = match Hello::decode(msg) {
            Ok(h) => h,
            Err(f) => return AcceptorState::Done(Outcome::Failed(f)),
        };
        let peer = match directory.find(id, h.from) {
            Some(peer) if h.to == id.who() => peer,
            _ => {
                out.extend_from_slice(&Welcome { status: Status::WrongPeer, version: id.version, nonce_a: [0; 16] }.encode());
                return AcceptorState::Done(Outcome::Refused(Refusal::WrongPeer));
            }
        };
        out.extend_from_slice(&Welcome { status: Status::Ok, version: id.version, nonce_a: self.nonce_a }.encode());
        AcceptorState::AwaitProof(AwaitProof { peer, nonce_c: h.nonce_c, nonce_a: self.nonce_a })
    }
}

impl AwaitProof {
    fn on_proof(self, id: &Identity, msg: &[u8], out: &mut Vec<u8>) -> AcceptorState {
        let expect = |r: Resume| {
            let nonces = (&self.nonce_c, &self.nonce_a);
            mac(&self.peer.keys, CONNECTOR_LABEL, id.version, self.peer.who, id.who(), nonces, None, Some(r.generation), r.received)
        };
        match Proof::decode(msg) {
            Ok(p) if auth::equal_ct(&expect(p.resume), &p.mac) => {
                let AwaitProof { peer, nonce_c, nonce_a } = self;
                AcceptorState::Proven(ProvenCaller { peer, nonce_c, nonce_a, resume: p.resume })
            }
            Ok(_) => {
                out.extend_from_slice(&Verdict { status: Status::BadProof, received: 0, mac: [0; 32] }.encode());
                AcceptorState::Done(Outcome::Refused(Refusal::BadProof))
            }
            Err(f) => AcceptorState::Done(Outcome::Failed(f)),
        }
    }
}

/// What the owner of a proven connection from `peer` knows about `peer`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Link {
    /// An established connection with `peer` exists.
    pub established: bool,
    /// Our own connection to `peer` is being made (not yet established).
    pub connecting: bool,
    /// The generation of the link's last established connection (0: none yet).
    pub generation: u32,
    /// Stream bytes we received from `peer` (told to it if admitted).
    pub received: u64,
}

/// What becomes of a proven connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// It becomes the connection with `peer`. If we were connecting to
    /// `peer` ourselves, that attempt is to be dropped: the peer refuses it.
    Admit,
    /// Another connection is used; this one is refused.
    Duplicate,
}

/// The rule both ends apply, so that two processes calling each other at
/// once agree on one connection: the one made by the lower process (by
/// world, then rank: both ends order them alike, whatever their pids). A caller
/// asking for a generation past our established connection's lost that
/// connection: it is replaced. Asking for the same one again is stale.
pub fn verdict(me: Who, peer: Who, link: Link, asked: u32) -> Decision {
    if link.established {
        return if asked > link.generation { Decision::Admit } else { Decision::Duplicate };
    }
    if link.connecting && me < peer {
        Decision::Duplicate
    } else {
        Decision::Admit
    }
}

/// An acceptor whose caller has proven itself, waiting for its owner's
/// decision: the only way to give the verdict.
pub struct Proven<'a> {
    acceptor: &'a mut Acceptor,
}

impl Proven<'_> {
    /// The rank the caller proved to be.
    pub fn peer(&self) -> Pid {
        match &self.acceptor.state {
            AcceptorState::Proven(p) => p.peer.pid,
            _ => unreachable!("Proven exists only for a proven acceptor"),
        }
    }

    /// Where the caller says the link stands.
    pub fn asked(&self) -> Resume {
        match &self.acceptor.state {
            AcceptorState::Proven(p) => p.resume,
            _ => unreachable!("Proven exists only for a proven acceptor"),
        }
    }

    /// Apply [`verdict`] to what the owner knows of the peer and send the
    /// VERDICT; returns the decision.
    pub fn decide(self, link: Link) -> Decision {
        let a = self.acceptor;
        let placeholder = AcceptorState::Done(Outcome::Failed(Failure::NotGridMpi));
        let AcceptorState::Proven(p) = std::mem::replace(&mut a.state, placeholder) else {
            unreachable!("Proven exists only for a proven acceptor")
        };
        let decision = verdict(a.id.who(), p.peer.who, link, p.resume.generation);
        let (status, received) = match decision {
            Decision::Admit => (Status::Ok, link.received),
            Decision::Duplicate => (Status::Duplicate, 0),
        };
        let nonces = (&p.nonce_c, &p.nonce_a);
        let mac = mac(&p.peer.keys, ACCEPTOR_LABEL, a.id.version, p.peer.who, a.id.who(), nonces, Some(status), None, received);
        a.out.extend_from_slice(&Verdict { status, received, mac }.encode());
        if decision == Decision::Admit {
            a.caller_resume = Some(p.resume);
        }
        a.state = AcceptorState::Done(match decision {
            Decision::Admit => Outcome::Established { peer: p.peer.pid },
            Decision::Duplicate => Outcome::Refused(Refusal::Duplicate),
        });
        decision
    }
}

impl Acceptor {
    /// An acceptor for a connection just accepted, with a fresh `nonce_a`;
    /// callers may be ranks `0..npeers` other than `id.me`.
    pub fn new(id: Identity, npeers: usize, nonce_a: Nonce) -> Acceptor {
        Acceptor::with_directory(id, std::sync::Arc::new(Directory::own(npeers)), nonce_a)
    }

    /// An acceptor for a connection just accepted: callers may be those of
    /// `directory`.
    pub fn with_directory(id: Identity, directory: std::sync::Arc<Directory>, nonce_a: Nonce) -> Acceptor {
        Acceptor {
            id,
            caller_resume: None,
            directory,
            state: AcceptorState::AwaitHello(AwaitHello { nonce_a }),
            incoming: Partial::new(),
            out: Vec::new(),
        }
    }

    /// Once admitted: where the caller said the link stands.
    pub fn caller_resume(&self) -> Option<Resume> {
        self.caller_resume
    }

    /// Bytes received; returns how many were handshake bytes. It takes none
    /// while a proven caller waits for the decision, nor once the handshake
    /// has ended.
    pub fn handle_bytes(&mut self, input: &[u8]) -> usize {
        let mut used = 0;
        loop {
            match &self.state {
                AcceptorState::AwaitHello(s) => {
                    // Gather the magic, then the version, then the rest.
                    let want = match self.incoming.len {
                        0..8 => 8,
                        8..12 => 12,
                        _ => HELLO_LEN,
                    };
                    used += self.incoming.fill(want, &input[used..]);
                    if let Some(o) = s.on_prefix(&self.id, self.incoming.bytes(), &mut self.out) {
                        self.state = AcceptorState::Done(o);
                        return used;
                    }
                    if self.incoming.len < want {
                        return used;
                    }
                    if want < HELLO_LEN {
                        continue;
                    }
                }
                AcceptorState::AwaitProof(_) => {
                    used += self.incoming.fill(PROOF_LEN, &input[used..]);
                    if self.incoming.len < PROOF_LEN {
                        return used;
                    }
                }
                AcceptorState::Proven(_) | AcceptorState::Done(_) => return used,
            }
            let msg = self.incoming.bytes();
            let placeholder = AcceptorState::Done(Outcome::Failed(Failure::NotGridMpi));
            self.state = match std::mem::replace(&mut self.state, placeholder) {
                AcceptorState::AwaitHello(s) => s.on_hello(&self.id, &self.directory, msg, &mut self.out),
                AcceptorState::AwaitProof(s) => s.on_proof(&self.id, msg, &mut self.out),
                other => other,
            };
            self.incoming.clear();
        }
    }

    /// The caller has proven itself and the owner must decide.
    pub fn proven(&mut self) -> Option<Proven<'_>> {
        matches!(self.state, AcceptorState::Proven(_)).then_some(Proven { acceptor: self })
    }

    /// Bytes to write to the caller, if any.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        (!self.out.is_empty()).then(|| std::mem::take(&mut self.out))
    }

    /// How the handshake ended, once it has.
    pub fn outcome(&self) -> Option<&Outcome> {
        match &self.state {
            AcceptorState::Done(o) => Some(o),
            _ => None,
        }
    }
}

/// Fuzz targets (run by `fuzz/`): arbitrary bytes into both machines.
#[doc(hidden)]
pub mod fuzzing {
    use super::*;

    const ME: Pid = 3;
    const PEER: Pid = 1;
    const NPEERS: usize = 8;
    const VERSION: u32 = 7;
    const NONCE_C: Nonce = [0xc5; 16];
    const NONCE_A: Nonce = [0xa5; 16];

    fn keys() -> Keys {
        Keys { job: 0x1234_5678_9abc_def0, secret: [0x42; 32] }
    }

    fn id(me: Pid) -> Identity {
        Identity { me, version: VERSION, keys: keys() }
    }

    /// A rank of the fuzzed job, as named on the wire.
    fn w(rank: Pid) -> Who {
        Who { world: keys().world(), rank }
    }

    /// The valid messages of a handshake between PEER (connector) and ME.
    fn valid_session() -> [Vec<u8>; 4] {
        let k = keys();
        let nonces = (&NONCE_C, &NONCE_A);
        let hello = Hello { version: VERSION, from: w(PEER), to: w(ME), nonce_c: NONCE_C }.encode();
        let welcome = Welcome { status: Status::Ok, version: VERSION, nonce_a: NONCE_A }.encode();
        let r = Resume::FIRST;
        let proof_mac = mac(&k, CONNECTOR_LABEL, VERSION, w(PEER), w(ME), nonces, None, Some(r.generation), r.received);
        let proof = Proof { resume: r, mac: proof_mac }.encode();
        let verdict_mac = mac(&k, ACCEPTOR_LABEL, VERSION, w(PEER), w(ME), nonces, Some(Status::Ok), None, 0);
        let verdict = Verdict { status: Status::Ok, received: 0, mac: verdict_mac }.encode();
        [hello, welcome, proof, verdict]
    }

    /// Inputs to start from: the valid messages, in each mode.
    pub fn seeds() -> Vec<Vec<u8>> {
        let [hello, welcome, proof, verdict] = valid_session();
        let mut seeds = Vec::new();
        for mode in [0u8, 1, 2, 3, 4, 5, 6, 7, 0x31, 0x52] {
            let mut s = vec![mode];
            match mode & 7 {
                0 => s.extend([hello.clone(), proof.clone(), b"frames".to_vec()].concat()),
                1 => s.extend([welcome.clone(), verdict.clone()].concat()),
                2 | 6 => s.extend(b"extra bytes after the handshake"),
                3 | 7 => s.extend(b"after"),
                _ => s.extend([0u8, 0, 0, 0, 1, 17, 2, 5]),
            }
            seeds.push(s);
        }
        seeds
    }

    /// Feed `stream` to a fresh machine of `role` in chunks of `chunk`
    /// bytes (0: all at once); returns (bytes consumed, bytes transmitted,
    /// outcome, proven peer).
    fn run(role_connector: bool, stream: &[u8], chunk: usize, admit: bool) -> (usize, Vec<u8>, Option<Outcome>, Option<Pid>) {
        let chunk = if chunk == 0 { stream.len().max(1) } else { chunk };
        let mut sent = Vec::new();
        let mut used = 0;
        let mut proven = None;
        if role_connector {
            let mut c = Connector::new(id(PEER), ME, NONCE_C);
            sent.extend(c.poll_transmit().unwrap_or_default());
            for piece in stream.chunks(chunk) {
                let before = c.outcome().cloned();
                let n = c.handle_bytes(piece);
                assert!(n <= piece.len());
                if before.is_some() {
                    assert_eq!(n, 0, "a finished handshake took more bytes");
                    assert_eq!(c.outcome().cloned(), before, "a finished handshake changed its outcome");
                }
                used += n;
                sent.extend(c.poll_transmit().unwrap_or_default());
                if n < piece.len() {
                    assert!(c.outcome().is_some(), "bytes left over while the handshake goes on");
                }
            }
            (used, sent, c.outcome().cloned(), None)
        } else {
            let mut a = Acceptor::new(id(ME), NPEERS, NONCE_A);
            for piece in stream.chunks(chunk) {
                let mut piece = piece;
                loop {
                    let before = a.outcome().cloned();
                    let n = a.handle_bytes(piece);
                    assert!(n <= piece.len());
                    if before.is_some() {
                        assert_eq!(n, 0, "a finished handshake took more bytes");
                        assert_eq!(a.outcome().cloned(), before, "a finished handshake changed its outcome");
                    }
                    used += n;
                    piece = &piece[n..];
                    sent.extend(a.poll_transmit().unwrap_or_default());
                    match a.proven() {
                        Some(p) => {
                            proven = Some(p.peer());
                            let link = Link { established: !admit, connecting: false, generation: 1, received: 0 };
                            p.decide(link);
                            sent.extend(a.poll_transmit().unwrap_or_default());
                        }
                        None => break,
                    }
                }
                if !piece.is_empty() {
                    assert!(a.outcome().is_some(), "bytes left over while the handshake goes on");
                }
            }
            (used, sent, a.outcome().cloned(), proven)
        }
    }

    /// Arbitrary bytes into a connector or an acceptor, after a valid prefix
    /// or not, whole or in pieces. Byte 0 chooses: bit 0 the role (1:
    /// connector), bit 1 a valid prefix, bit 2 a peer that runs the
    /// handshake against the bytes (duel), bits 4..8 the piece size.
    pub fn handshake(data: &[u8]) {
        let Some((&mode, rest)) = data.split_first() else { return };
        if mode & 4 != 0 {
            return duel(mode, rest);
        }
        let connector = mode & 1 != 0;
        let [hello, welcome, proof, verdict] = valid_session();
        let prefix = match (mode & 2 != 0, connector) {
            (false, _) => Vec::new(),
            (true, false) => [hello, proof].concat(),
            (true, true) => [welcome, verdict].concat(),
        };
        let stream = [prefix.clone(), rest.to_vec()].concat();
        let admit = mode & 8 == 0;
        let whole = run(connector, &stream, 0, admit);
        // Pieces of any size make no difference (but to how much of a
        // stream that is not GridMPI's was looked at before giving up).
        let mut pieces = run(connector, &stream, (mode >> 4) as usize + 1, admit);
        if let Some(Outcome::Failed(Failure::NotGridMpi)) = whole.2 {
            pieces.0 = whole.0;
        }
        assert_eq!(whole, pieces, "the outcome depends on how the bytes were cut");
        let (used, sent, outcome, proven) = whole;
        if !prefix.is_empty() {
            // The valid prefix always succeeds, and the rest is left as frames.
            assert_eq!(used, prefix.len());
            if connector {
                assert_eq!(outcome, Some(Outcome::Established { peer: ME }));
            } else {
                assert_eq!(proven, Some(PEER));
                let expect = if admit { Outcome::Established { peer: PEER } } else { Outcome::Refused(Refusal::Duplicate) };
                assert_eq!(outcome, Some(expect));
            }
        }
        // Whatever the bytes: a connector is established only by a genuine
        // verdict, an acceptor is proven only by a genuine proof; checked
        // here independently of the machines.
        let consumed = &stream[..used];
        if connector {
            let [hello, ..] = valid_session();
            assert_eq!(sent.get(..HELLO_LEN), Some(&hello[..]), "a connector opens with its HELLO");
            if let Some(Outcome::Established { .. }) = outcome {
                assert_eq!(consumed.len(), WELCOME_LEN + VERDICT_LEN);
                let welcome = Welcome::decode(&consumed[..WELCOME_LEN]).expect("established after a bad WELCOME");
                let nonces = (&NONCE_C, &welcome.nonce_a);
                let v = &consumed[WELCOME_LEN..];
                let received = u64_at(v, 16);
                let good = mac(&keys(), ACCEPTOR_LABEL, VERSION, w(PEER), w(ME), nonces, Some(Status::Ok), None, received);
                assert_eq!(&v[..16], &[VERDICT_MAGIC[..].to_vec(), vec![0; 8]].concat()[..]);
                assert_eq!(&v[24..], &good[..], "established without a valid verdict");
            }
        } else if let Some(peer) = proven {
            assert_eq!(consumed.len(), HELLO_LEN + PROOF_LEN);
            let h = Hello::decode(&consumed[..HELLO_LEN]).expect("proven after a bad HELLO");
            assert_eq!(peer, h.from.rank);
            assert!(h.from != w(ME) && h.from.world == w(ME).world && (h.from.rank as usize) < NPEERS && h.to == w(ME) && h.version == VERSION);
            let p = &consumed[HELLO_LEN..];
            let (generation, received) = (u32_at(p, 8), u64_at(p, 16));
            let good = mac(&keys(), CONNECTOR_LABEL, VERSION, h.from, w(ME), (&h.nonce_c, &NONCE_A), None, Some(generation), received);
            assert_eq!(&p[..8], PROOF_MAGIC);
            assert_eq!(&p[12..16], &[0; 4]);
            assert_eq!(&p[24..], &good[..], "proven without a valid proof");
        } else if let Some(Outcome::Established { .. }) = outcome {
            panic!("an acceptor established without a decision");
        }
        // An unproven caller is told nothing derived from the secret: at
        // most a WELCOME and a MAC-less refusal.
        if !connector && proven.is_none() {
            let welcome = |status, nonce_a| Welcome { status, version: VERSION, nonce_a }.encode();
            let allowed = [
                Vec::new(),
                welcome(Status::Ok, NONCE_A),
                welcome(Status::WrongPeer, [0; 16]),
                welcome(Status::WrongVersion, [0; 16]),
                [welcome(Status::Ok, NONCE_A), Verdict { status: Status::BadProof, received: 0, mac: [0; 32] }.encode()].concat(),
            ];
            assert!(allowed.contains(&sent), "an unproven caller was sent {sent:?}");
        }
    }

    /// A connector and an acceptor on a channel the fuzzer tampers with:
    /// each message may be delivered whole, with a flipped bit, cut, with
    /// bytes added, or replaced by an earlier one. A side may be proven or
    /// established only if the bytes it took are the ones the other sent.
    fn duel(mode: u8, edits: &[u8]) {
        let mut c = Connector::new(id(PEER), ME, NONCE_C);
        let mut a = Acceptor::new(id(ME), NPEERS, NONCE_A);
        let mut edits = edits.chunks(2);
        let mut history: Vec<Vec<u8>> = Vec::new();
        // What each side sent, and what the other was given and took.
        let (mut c_sent, mut a_got, mut a_took) = (Vec::new(), Vec::new(), 0);
        let (mut a_sent, mut c_got, mut c_took) = (Vec::new(), Vec::new(), 0);
        let admit = mode & 8 == 0;
        let intact = |sent: &[u8], got: &[u8], took: usize| took <= sent.len() && sent[..took] == got[..took];
        for _round in 0..4 {
            let mut moved = false;
            for to_acceptor in [true, false] {
                let msg = if to_acceptor { c.poll_transmit() } else { a.poll_transmit() };
                let Some(mut msg) = msg else { continue };
                moved = true;
                let original = msg.clone();
                if let Some(e) = edits.next() {
                    let (op, arg) = (e[0], *e.get(1).unwrap_or(&0) as usize);
                    match op % 6 {
                        1 => msg[arg % original.len()] ^= 1 << (op >> 5),
                        2 => msg.truncate(arg % original.len()),
                        3 => msg.extend(std::iter::repeat_n(op, arg % 9 + 1)),
                        4 if !history.is_empty() => msg = history[arg % history.len()].clone(),
                        _ => {}
                    }
                }
                history.push(original.clone());
                if to_acceptor {
                    c_sent.extend(original);
                    a_got.extend(&msg);
                    let mut rest = &msg[..];
                    loop {
                        let n = a.handle_bytes(rest);
                        a_took += n;
                        rest = &rest[n..];
                        match a.proven() {
                            Some(p) => {
                                assert_eq!(p.peer(), PEER);
                                assert!(intact(&c_sent, &a_got, a_took), "proven by altered bytes");
                                p.decide(Link { established: !admit, connecting: false, generation: 1, received: 0 });
                            }
                            None => break,
                        }
                    }
                } else {
                    a_sent.extend(original);
                    c_got.extend(&msg);
                    c_took += c.handle_bytes(&msg);
                }
            }
            if !moved {
                break;
            }
        }
        if let Some(Outcome::Established { peer }) = c.outcome() {
            assert_eq!(*peer, ME);
            assert!(intact(&a_sent, &c_got, c_took), "established by altered bytes");
            assert_eq!(a.outcome(), Some(&Outcome::Established { peer: PEER }), "only one side established");
        }
        if c_sent == a_got && a_sent == c_got {
            let expect = if admit { Outcome::Established { peer: ME } } else { Outcome::Refused(Refusal::Duplicate) };
            assert_eq!(c.outcome(), Some(&expect), "an untouched handshake did not conclude");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(secret: u8) -> Keys {
        Keys { job: 77, secret: [secret; 32] }
    }

    fn id(me: Pid, secret: u8) -> Identity {
        Identity { me, version: 5, keys: keys(secret) }
    }

    /// Move what each side has to say to the other until neither says
    /// anything more; the acceptor's owner decides with `link`.
    fn converse(c: &mut Connector, a: &mut Acceptor, link: Link) {
        for _ in 0..8 {
            let mut moved = false;
            if let Some(b) = c.poll_transmit() {
                moved = true;
                let n = a.handle_bytes(&b);
                assert!(n == b.len() || a.outcome().is_some() || a.proven().is_some());
            }
            if let Some(p) = a.proven() {
                p.decide(link);
            }
            if let Some(b) = a.poll_transmit() {
                moved = true;
                c.handle_bytes(&b);
            }
            if !moved {
                return;
            }
        }
        panic!("the handshake did not settle");
    }

    fn pair(c_id: Identity, peer: Pid, a_id: Identity) -> (Connector, Acceptor) {
        (Connector::new(c_id, peer, [1; 16]), Acceptor::new(a_id, 4, [2; 16]))
    }

    #[test]
    fn both_sides_establish() {
        let (mut c, mut a) = pair(id(1, 9), 2, id(2, 9));
        converse(&mut c, &mut a, Link::default());
        assert_eq!(c.outcome(), Some(&Outcome::Established { peer: 2 }));
        assert_eq!(a.outcome(), Some(&Outcome::Established { peer: 1 }));
    }

    #[test]
    fn a_wrong_secret_fails_either_way() {
        // The connector has the wrong secret: its proof is refused.
        let (mut c, mut a) = pair(id(1, 8), 2, id(2, 9));
        converse(&mut c, &mut a, Link::default());
        assert_eq!(a.outcome(), Some(&Outcome::Refused(Refusal::BadProof)));
        assert_eq!(c.outcome(), Some(&Outcome::Refused(Refusal::BadProof)));
        // The acceptor has the wrong secret: the same (it checks first).
        let (mut c, mut a) = pair(id(1, 9), 2, id(2, 8));
        converse(&mut c, &mut a, Link::default());
        assert_eq!(a.outcome(), Some(&Outcome::Refused(Refusal::BadProof)));
        // An impostor acceptor that skips the check cannot forge a verdict:
        // replay a genuine acceptor's VERDICT to a connector of another session.
        let (mut c1, mut a1) = pair(id(1, 9), 2, id(2, 9));
        let mut transcript = Vec::new();
        let hello = c1.poll_transmit().unwrap();
        a1.handle_bytes(&hello);
        let welcome = a1.poll_transmit().unwrap();
        c1.handle_bytes(&welcome);
        a1.handle_bytes(&c1.poll_transmit().unwrap());
        a1.proven().unwrap().decide(Link::default());
        let verdict = a1.poll_transmit().unwrap();
        transcript.extend([welcome.clone(), verdict.clone()]);
        let mut c2 = Connector::new(id(1, 9), 2, [3; 16]); // fresh nonce
        c2.handle_bytes(&transcript.concat());
        assert_eq!(c2.outcome(), Some(&Outcome::Failed(Failure::BadMac)));
        // A connector whose acceptor holds another secret sees a bad MAC.
        let mut c3 = Connector::new(id(1, 9), 2, [1; 16]);
        c3.handle_bytes(&welcome);
        let nonces = (&[1u8; 16], &[2u8; 16]);
        let forged = Verdict { status: Status::Ok, received: 0, mac: mac(&keys(8), ACCEPTOR_LABEL, 5, id(1, 8).who(), id(2, 8).who(), nonces, Some(Status::Ok), None, 0) };
        c3.handle_bytes(&forged.encode());
        assert_eq!(c3.outcome(), Some(&Outcome::Failed(Failure::BadMac)));
    }

    #[test]
    fn another_job_fails() {
        // A rank of another job names another world: no one of ours.
        let other_job = Identity { me: 1, version: 5, keys: Keys { job: 78, secret: [9; 32] } };
        let (mut c, mut a) = pair(other_job, 2, id(2, 9));
        converse(&mut c, &mut a, Link::default());
        assert_eq!(a.outcome(), Some(&Outcome::Refused(Refusal::WrongPeer)));
        assert_eq!(c.outcome(), Some(&Outcome::Refused(Refusal::WrongPeer)));
    }

    /// Processes of two jobs joined by MPI_Comm_accept/connect: each names
    /// itself by its own world, and both prove the keys of the pair.
    #[test]
    fn joined_worlds_connect_with_the_pair_keys() {
        let (a_job, b_job) = (id(0, 9), Identity { me: 3, version: 5, keys: Keys { job: 78, secret: [5; 32] } });
        let pair_keys = Keys { job: 99, secret: [7; 32] };
        // B's rank 3 is our pid 6; we (rank 0 of A) are its pid 12.
        let b3 = Who { world: b_job.keys.world(), rank: 3 };
        let mut dir = Directory::own(4);
        dir.foreign.insert(b3, (6, pair_keys.clone()));
        let dir = std::sync::Arc::new(dir);
        let to_a = Party { pid: 12, who: a_job.who(), keys: pair_keys.clone() };
        let mut c = Connector::calling(b_job.clone(), to_a.clone(), [1; 16], Resume::FIRST);
        let mut a = Acceptor::with_directory(a_job.clone(), dir.clone(), [2; 16]);
        converse(&mut c, &mut a, Link::default());
        assert_eq!(c.outcome(), Some(&Outcome::Established { peer: 12 }));
        assert_eq!(a.outcome(), Some(&Outcome::Established { peer: 6 }));
        // The pair's keys, not B's own, are what counts.
        let own_keys = Party { keys: b_job.keys.clone(), ..to_a.clone() };
        let mut c = Connector::calling(b_job.clone(), own_keys, [1; 16], Resume::FIRST);
        let mut a = Acceptor::with_directory(a_job.clone(), dir.clone(), [2; 16]);
        converse(&mut c, &mut a, Link::default());
        assert_eq!(a.outcome(), Some(&Outcome::Refused(Refusal::BadProof)));
        // A rank of B we were not told of is nobody to us.
        let b2 = Identity { me: 2, ..b_job.clone() };
        let mut c = Connector::calling(b2, to_a.clone(), [1; 16], Resume::FIRST);
        let mut a = Acceptor::with_directory(a_job.clone(), dir.clone(), [2; 16]);
        converse(&mut c, &mut a, Link::default());
        assert_eq!(a.outcome(), Some(&Outcome::Refused(Refusal::WrongPeer)));
        // Nor does B's rank reach A's rank 1 by calling rank 0's world and rank 1.
        let to_a1 = Party { pid: 13, who: Who { world: a_job.keys.world(), rank: 1 }, keys: pair_keys };
        let mut c = Connector::calling(b_job, to_a1, [1; 16], Resume::FIRST);
        let mut a = Acceptor::with_directory(a_job, dir, [2; 16]);
        converse(&mut c, &mut a, Link::default());
        assert_eq!(a.outcome(), Some(&Outcome::Refused(Refusal::WrongPeer)));
    }

    #[test]
    fn wrong_peers_are_refused_before_any_mac() {
        for (from, to) in [(1, 3), (2, 2), (4, 2), (u32::MAX, 2)] {
            let (mut c, mut a) = pair(id(from, 9), to, id(2, 9));
            converse(&mut c, &mut a, Link::default());
            assert_eq!(a.outcome(), Some(&Outcome::Refused(Refusal::WrongPeer)), "{from} -> {to}");
            assert_eq!(c.outcome(), Some(&Outcome::Refused(Refusal::WrongPeer)));
        }
    }

    #[test]
    fn another_version_is_told_so_after_twelve_bytes() {
        let newer = Identity { version: 6, ..id(1, 9) };
        let (mut c, mut a) = pair(newer, 2, id(2, 9));
        let hello = c.poll_transmit().unwrap();
        assert_eq!(a.handle_bytes(&hello[..11]), 11);
        assert!(a.outcome().is_none());
        assert_eq!(a.handle_bytes(&hello[11..]), 1, "decided on the version alone");
        assert_eq!(a.outcome(), Some(&Outcome::Refused(Refusal::WrongVersion { theirs: 6 })));
        c.handle_bytes(&a.poll_transmit().unwrap());
        assert_eq!(c.outcome(), Some(&Outcome::Refused(Refusal::WrongVersion { theirs: 5 })));
    }

    #[test]
    fn bad_magic_is_dropped_at_once_without_a_word() {
        let mut a = Acceptor::new(id(2, 9), 4, [2; 16]);
        assert_eq!(a.handle_bytes(b"GET / HTTP/1.1\r\n"), 8);
        assert_eq!(a.outcome(), Some(&Outcome::Failed(Failure::NotGridMpi)));
        assert_eq!(a.poll_transmit(), None);
        let mut a = Acceptor::new(id(2, 9), 4, [2; 16]);
        a.handle_bytes(b"GMPIx");
        assert_eq!(a.outcome(), Some(&Outcome::Failed(Failure::NotGridMpi)), "rejected at its fifth byte");
        // A connector answered by something else fails too.
        let mut c = Connector::new(id(1, 9), 2, [1; 16]);
        c.handle_bytes(&[b'x'; WELCOME_LEN]);
        assert_eq!(c.outcome(), Some(&Outcome::Failed(Failure::NotGridMpi)));
        // And so does a proof with the wrong magic.
        let (mut c, mut a) = pair(id(1, 9), 2, id(2, 9));
        a.handle_bytes(&c.poll_transmit().unwrap());
        c.handle_bytes(&a.poll_transmit().unwrap());
        let mut proof = c.poll_transmit().unwrap();
        proof[0] = b'g';
        a.handle_bytes(&proof);
        assert_eq!(a.outcome(), Some(&Outcome::Failed(Failure::NotGridMpi)));
    }

    #[test]
    fn messages_in_pieces_and_frames_after_them() {
        let (mut c, mut a) = pair(id(1, 9), 2, id(2, 9));
        // One byte at a time; nothing is decided early.
        let hello = c.poll_transmit().unwrap();
        let mut a_to_c = Vec::new();
        for (i, b) in hello.iter().enumerate() {
            assert_eq!(a.handle_bytes(std::slice::from_ref(b)), 1);
            let reply = a.poll_transmit();
            assert_eq!(reply.is_some(), i == HELLO_LEN - 1);
            a_to_c.extend(reply.unwrap_or_default());
            assert!(a.outcome().is_none());
        }
        // The acceptor's reply, truncated: the connector waits.
        assert_eq!(c.handle_bytes(&a_to_c[..WELCOME_LEN - 1]), WELCOME_LEN - 1);
        assert!(c.poll_transmit().is_none() && c.outcome().is_none());
        assert_eq!(c.handle_bytes(&a_to_c[WELCOME_LEN - 1..]), 1);
        // PROOF followed by frames in one read: the acceptor takes only
        // the PROOF, and nothing while its owner has not decided.
        let mut bytes = c.poll_transmit().unwrap();
        bytes.extend_from_slice(b"frame bytes");
        assert_eq!(a.handle_bytes(&bytes), PROOF_LEN);
        assert_eq!(a.handle_bytes(b"more"), 0);
        assert_eq!(a.proven().unwrap().decide(Link::default()), Decision::Admit);
        assert_eq!(a.handle_bytes(b"more"), 0);
        // VERDICT and the acceptor's first frames in one read.
        let mut bytes = a.poll_transmit().unwrap();
        bytes.extend_from_slice(b"frames");
        assert_eq!(c.handle_bytes(&bytes), VERDICT_LEN);
        assert_eq!(c.outcome(), Some(&Outcome::Established { peer: 2 }));
        assert_eq!(c.handle_bytes(b"frames"), 0);
    }

    #[test]
    fn malformed_fields_fail() {
        // Reserved HELLO field.
        let c = Connector::new(id(1, 9), 2, [1; 16]);
        let mut hello = c.out.clone();
        hello[20] = 1;
        let mut a = Acceptor::new(id(2, 9), 4, [2; 16]);
        a.handle_bytes(&hello);
        assert_eq!(a.outcome(), Some(&Outcome::Failed(Failure::Malformed("reserved HELLO field"))));
        // Unknown WELCOME status; a DUPLICATE in a WELCOME (only a verdict may say it).
        for status in [1u32, 9] {
            let mut c = Connector::new(id(1, 9), 2, [1; 16]);
            let mut w = Welcome { status: Status::Ok, version: 5, nonce_a: [2; 16] }.encode();
            w[8..12].copy_from_slice(&status.to_le_bytes());
            c.handle_bytes(&w);
            assert_eq!(c.outcome(), Some(&Outcome::Failed(Failure::Malformed("WELCOME status"))));
        }
        // WELCOME OK with another version.
        let mut c = Connector::new(id(1, 9), 2, [1; 16]);
        c.handle_bytes(&Welcome { status: Status::Ok, version: 4, nonce_a: [2; 16] }.encode());
        assert_eq!(c.outcome(), Some(&Outcome::Failed(Failure::VersionMismatch { theirs: 4 })));
        // Reserved VERDICT field, and an unknown verdict status.
        let (mut c, mut a) = pair(id(1, 9), 2, id(2, 9));
        converse(&mut c, &mut a, Link::default());
        for (at, v, what) in [(12, 1u8, "reserved VERDICT field"), (8, 2, "VERDICT status")] {
            let (mut c, mut a) = pair(id(1, 9), 2, id(2, 9));
            a.handle_bytes(&c.poll_transmit().unwrap());
            c.handle_bytes(&a.poll_transmit().unwrap());
            a.handle_bytes(&c.poll_transmit().unwrap());
            a.proven().unwrap().decide(Link::default());
            let mut verdict = a.poll_transmit().unwrap();
            verdict[at] = v;
            c.handle_bytes(&verdict);
            assert_eq!(c.outcome(), Some(&Outcome::Failed(Failure::Malformed(what))));
        }
    }

    #[test]
    fn replayed_messages_prove_nothing() {
        // Record a whole session.
        let (mut c, mut a) = pair(id(1, 9), 2, id(2, 9));
        let hello = c.poll_transmit().unwrap();
        a.handle_bytes(&hello);
        c.handle_bytes(&a.poll_transmit().unwrap());
        let proof = c.poll_transmit().unwrap();
        a.handle_bytes(&proof);
        a.proven().unwrap().decide(Link::default());
        // Replaying the caller's side to a new acceptor (fresh nonce) fails
        // at the proof; the rank is never proven.
        let mut a2 = Acceptor::new(id(2, 9), 4, [7; 16]);
        a2.handle_bytes(&[hello.clone(), proof.clone()].concat());
        assert!(a2.proven().is_none());
        assert_eq!(a2.outcome(), Some(&Outcome::Refused(Refusal::BadProof)));
        // Replaying a HELLO where the PROOF belongs fails too.
        let mut a3 = Acceptor::new(id(2, 9), 4, [2; 16]);
        let mut as_proof = hello.clone();
        as_proof.resize(PROOF_LEN, 0);
        a3.handle_bytes(&[hello.clone(), as_proof].concat());
        assert_eq!(a3.outcome(), Some(&Outcome::Failed(Failure::NotGridMpi)));
        // Replaying the acceptor's first message where its verdict belongs.
        let (mut c4, mut a4) = pair(id(1, 9), 2, id(2, 9));
        a4.handle_bytes(&c4.poll_transmit().unwrap());
        let mut welcome = a4.poll_transmit().unwrap();
        c4.handle_bytes(&welcome);
        welcome.resize(VERDICT_LEN, 0);
        c4.handle_bytes(&welcome);
        assert_eq!(c4.outcome(), Some(&Outcome::Failed(Failure::NotGridMpi)));
    }

    #[test]
    fn the_fuzz_target_holds_on_its_seeds() {
        for seed in fuzzing::seeds() {
            fuzzing::handshake(&seed);
        }
    }

    #[test]
    fn the_verdict_rule() {
        let who = |rank| Who { world: 7, rank };
        let l = |established, connecting, generation| Link { established, connecting, generation, received: 0 };
        assert_eq!(verdict(who(1), who(2), l(false, false, 0), 1), Decision::Admit);
        assert_eq!(verdict(who(1), who(2), l(true, false, 1), 1), Decision::Duplicate);
        // Both calling: the lower pid's connection wins at both ends.
        assert_eq!(verdict(who(1), who(2), l(false, true, 0), 1), Decision::Duplicate);
        assert_eq!(verdict(who(2), who(1), l(false, true, 0), 1), Decision::Admit);
        // A caller that lost our connection replaces it; a stale attempt
        // (for the connection we use) is refused.
        assert_eq!(verdict(who(1), who(2), l(true, false, 3), 4), Decision::Admit);
        assert_eq!(verdict(who(1), who(2), l(true, false, 3), 3), Decision::Duplicate);
        // Both reconnecting after a break: the pid rule again.
        assert_eq!(verdict(who(1), who(2), l(false, true, 3), 4), Decision::Duplicate);
        assert_eq!(verdict(who(2), who(1), l(false, true, 3), 4), Decision::Admit);
    }

    #[test]
    fn a_resuming_connection_tells_both_positions_under_the_macs() {
        let mut c = Connector::resuming(id(1, 9), 2, [1; 16], Resume { generation: 5, received: 123_456 });
        let mut a = Acceptor::new(id(2, 9), 4, [2; 16]);
        a.handle_bytes(&c.poll_transmit().unwrap());
        c.handle_bytes(&a.poll_transmit().unwrap());
        let proof = c.poll_transmit().unwrap();
        // A position changed in flight breaks the proof.
        let mut forged = proof.clone();
        forged[16] ^= 1;
        let mut a2 = Acceptor::new(id(2, 9), 4, [2; 16]);
        a2.handle_bytes(&Connector::resuming(id(1, 9), 2, [1; 16], Resume { generation: 5, received: 123_456 }).poll_transmit().unwrap());
        a2.handle_bytes(&forged);
        assert_eq!(a2.outcome(), Some(&Outcome::Refused(Refusal::BadProof)));
        a.handle_bytes(&proof);
        let p = a.proven().unwrap();
        assert_eq!(p.asked(), Resume { generation: 5, received: 123_456 });
        let link = Link { established: true, connecting: false, generation: 4, received: 777 };
        assert_eq!(p.decide(link), Decision::Admit);
        assert_eq!(a.caller_resume(), Some(Resume { generation: 5, received: 123_456 }));
        let mut verdict = a.poll_transmit().unwrap();
        // And so does one changed in the verdict.
        let mut c2 = Connector::resuming(id(1, 9), 2, [1; 16], Resume { generation: 5, received: 123_456 });
        let mut a3 = Acceptor::new(id(2, 9), 4, [2; 16]);
        a3.handle_bytes(&c2.poll_transmit().unwrap());
        c2.handle_bytes(&a3.poll_transmit().unwrap());
        a3.handle_bytes(&c2.poll_transmit().unwrap());
        a3.proven().unwrap().decide(link);
        let mut v3 = a3.poll_transmit().unwrap();
        v3[16] ^= 1;
        c2.handle_bytes(&v3);
        assert_eq!(c2.outcome(), Some(&Outcome::Failed(Failure::BadMac)));
        verdict.extend_from_slice(b"frames");
        assert_eq!(c.handle_bytes(&verdict), VERDICT_LEN);
        assert_eq!(c.outcome(), Some(&Outcome::Established { peer: 2 }));
        assert_eq!(c.peer_received(), Some(777));
    }

    #[test]
    fn a_duplicate_verdict_is_authenticated() {
        let (mut c, mut a) = pair(id(1, 9), 2, id(2, 9));
        converse(&mut c, &mut a, Link { established: true, connecting: false, generation: 1, received: 0 });
        assert_eq!(a.outcome(), Some(&Outcome::Refused(Refusal::Duplicate)));
        assert_eq!(c.outcome(), Some(&Outcome::Refused(Refusal::Duplicate)));
        // A forged DUPLICATE (status changed in flight) is a bad MAC.
        let (mut c, mut a) = pair(id(1, 9), 2, id(2, 9));
        a.handle_bytes(&c.poll_transmit().unwrap());
        c.handle_bytes(&a.poll_transmit().unwrap());
        a.handle_bytes(&c.poll_transmit().unwrap());
        a.proven().unwrap().decide(Link::default());
        let mut v = a.poll_transmit().unwrap();
        v[8] = Status::Duplicate as u8;
        c.handle_bytes(&v);
        assert_eq!(c.outcome(), Some(&Outcome::Failed(Failure::BadMac)));
    }

    #[test]
    fn an_unproven_caller_learns_nothing_of_the_secret() {
        let (mut c, mut a) = pair(id(1, 8), 2, id(2, 9)); // wrong secret
        let mut to_caller = Vec::new();
        a.handle_bytes(&c.poll_transmit().unwrap());
        to_caller.extend(a.poll_transmit().unwrap());
        c.handle_bytes(&to_caller);
        a.handle_bytes(&c.poll_transmit().unwrap());
        to_caller.extend(a.poll_transmit().unwrap());
        // WELCOME (magic, status, version, nonce) and a MAC-less verdict.
        let mut expect = Welcome { status: Status::Ok, version: 5, nonce_a: [2; 16] }.encode();
        expect.extend(Verdict { status: Status::BadProof, received: 0, mac: [0; 32] }.encode());
        assert_eq!(to_caller, expect);
    }

    /// Two processes that may call each other at any moment, messages
    /// delivered in any order: they always end with one connection, the
    /// same at both ends, and no connector ever sees its connection closed
    /// before its handshake ended.
    #[test]
    fn simultaneous_connects_settle_on_one_connection() {
        struct Conn {
            from: usize,
            connector: Connector,
            acceptor: Acceptor,
            to_acceptor: Vec<u8>,
            to_connector: Vec<u8>,
            closed: bool,
        }
        #[derive(Default, Clone, Copy)]
        struct Side {
            conn: Option<usize>,
            established: bool,
            attempts: u32,
        }
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        let pids = [3u32, 5];
        let mut duplicates = 0;
        for _run in 0..3000 {
            let mut conns: Vec<Conn> = Vec::new();
            let mut sides = [Side::default(); 2];
            for _step in 0..400 {
                // Either side may start calling (a send needs a connection).
                let who = next(2);
                let s = &mut sides[who];
                if next(4) == 0 && s.conn.is_none() && !s.established && s.attempts < 3 {
                    s.attempts += 1;
                    let other = 1 - who;
                    let mut c = Connector::new(id(pids[who], 9), pids[other], [conns.len() as u8; 16]);
                    let hello = c.poll_transmit().unwrap();
                    conns.push(Conn {
                        from: who,
                        connector: c,
                        acceptor: Acceptor::new(id(pids[other], 9), 8, [100 + conns.len() as u8; 16]),
                        to_acceptor: hello,
                        to_connector: Vec::new(),
                        closed: false,
                    });
                    sides[who].conn = Some(conns.len() - 1);
                    continue;
                }
                // Deliver part of what is in flight on one connection.
                let live: Vec<usize> = (0..conns.len())
                    .filter(|&i| !conns[i].closed && (!conns[i].to_acceptor.is_empty() || !conns[i].to_connector.is_empty()))
                    .collect();
                if live.is_empty() {
                    continue;
                }
                let i = live[next(live.len())];
                let (from, to) = (conns[i].from, 1 - conns[i].from);
                if !conns[i].to_acceptor.is_empty() && (conns[i].to_connector.is_empty() || next(2) == 0) {
                    let n = 1 + next(conns[i].to_acceptor.len());
                    let bytes: Vec<u8> = conns[i].to_acceptor.drain(..n).collect();
                    let c = &mut conns[i];
                    assert_eq!(c.acceptor.handle_bytes(&bytes), n);
                    if let Some(p) = c.acceptor.proven() {
                        let side = sides[to];
                        let link = Link { established: side.established, connecting: side.conn.is_some() && !side.established, generation: side.established as u32, received: 0 };
                        if p.decide(link) == Decision::Admit {
                            if let Some(own) = side.conn {
                                conns[own].closed = true; // our own attempt: dropped
                            }
                            sides[to].conn = Some(i);
                            sides[to].established = true;
                        }
                    }
                    let c = &mut conns[i];
                    c.to_connector.extend(c.acceptor.poll_transmit().unwrap_or_default());
                    if matches!(c.acceptor.outcome(), Some(Outcome::Refused(_))) {
                        c.closed = true;
                        // The refusal was written before the close.
                        let reply = std::mem::take(&mut c.to_connector);
                        c.connector.handle_bytes(&reply);
                        assert!(c.connector.outcome().is_some());
                    }
                } else {
                    let n = 1 + next(conns[i].to_connector.len());
                    let bytes: Vec<u8> = conns[i].to_connector.drain(..n).collect();
                    let c = &mut conns[i];
                    assert_eq!(c.connector.handle_bytes(&bytes), n);
                    c.to_acceptor.extend(c.connector.poll_transmit().unwrap_or_default());
                    match c.connector.outcome() {
                        Some(Outcome::Established { .. }) => sides[from].established = true,
                        Some(Outcome::Refused(Refusal::Duplicate)) => {
                            c.closed = true;
                            if sides[from].conn == Some(i) {
                                sides[from].conn = None;
                            }
                        }
                        None => {}
                        Some(o) => panic!("unexpected {o:?}"),
                    }
                }
            }
            // Let everything in flight arrive: run the remaining deliveries
            // in order until quiet.
            loop {
                let mut moved = false;
                for i in 0..conns.len() {
                    if conns[i].closed {
                        continue;
                    }
                    let (from, to) = (conns[i].from, 1 - conns[i].from);
                    let bytes = std::mem::take(&mut conns[i].to_acceptor);
                    if !bytes.is_empty() {
                        moved = true;
                        let c = &mut conns[i];
                        c.acceptor.handle_bytes(&bytes);
                        if let Some(p) = c.acceptor.proven() {
                            let side = sides[to];
                            let link = Link { established: side.established, connecting: side.conn.is_some() && !side.established, generation: side.established as u32, received: 0 };
                            if p.decide(link) == Decision::Admit {
                                if let Some(own) = side.conn {
                                    conns[own].closed = true;
                                }
                                sides[to].conn = Some(i);
                                sides[to].established = true;
                            }
                        }
                        let c = &mut conns[i];
                        c.to_connector.extend(c.acceptor.poll_transmit().unwrap_or_default());
                    }
                    let c = &mut conns[i];
                    let bytes = std::mem::take(&mut c.to_connector);
                    if !bytes.is_empty() {
                        moved = true;
                        c.connector.handle_bytes(&bytes);
                        c.to_acceptor.extend(c.connector.poll_transmit().unwrap_or_default());
                        match c.connector.outcome() {
                            Some(Outcome::Established { .. }) => sides[from].established = true,
                            Some(Outcome::Refused(Refusal::Duplicate)) => {
                                c.closed = true;
                                if sides[from].conn == Some(i) {
                                    sides[from].conn = None;
                                }
                            }
                            _ => {}
                        }
                    }
                    if matches!(conns[i].acceptor.outcome(), Some(Outcome::Refused(_))) {
                        conns[i].closed = true;
                    }
                }
                if !moved {
                    break;
                }
            }
            if conns.is_empty() {
                continue;
            }
            // A connector whose connection was closed by the other side had
            // its answer first (only refusals close a connection).
            for c in &conns {
                if c.closed && c.connector.outcome().is_none() {
                    // Closed by its own side (dropped for the peer's winning
                    // connection): the connector's process closed it itself.
                    let owner = &sides[c.from];
                    assert!(owner.established, "a connection closed under a live handshake");
                }
            }
            let a = sides[0].conn.expect("side 0 ends with a connection");
            let b = sides[1].conn.expect("side 1 ends with a connection");
            assert!(sides[0].established && sides[1].established);
            assert_eq!(a, b, "both ends use the same connection");
            assert!(!conns[a].closed);
            // ... and both of its ends concluded it.
            duplicates += conns.iter().filter(|c| c.acceptor.outcome() == Some(&Outcome::Refused(Refusal::Duplicate))).count();
            let winner = &conns[a];
            assert_eq!(winner.connector.outcome(), Some(&Outcome::Established { peer: pids[1 - winner.from] }));
            assert_eq!(winner.acceptor.outcome(), Some(&Outcome::Established { peer: pids[winner.from] }));
        }
        // The runs did race: many connections were refused as duplicates.
        assert!(duplicates > 100, "{duplicates}");
    }
}

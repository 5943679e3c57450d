//! The objects behind handles: communicators, groups, datatypes, operations,
//! error handlers, info, keyvals, requests, messages.

use crate::errors::{err, R};
use crate::ffi::*;
use gridmpi_datatype::{BasicType, Datatype};
use gridmpi_engine::{MsgId, Pid, ReqId};
use std::collections::BTreeMap;
use std::sync::Arc;

/// An ordered set of processes: rank -> pid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub pids: Vec<Pid>,
    /// The session the group derives from (MPI_Group_from_session_pset,
    /// or a communicator or group that derives from one); None in the
    /// world model.
    pub session: Option<MPI_Session>,
}

impl Group {
    /// A group of the world model.
    pub fn new(pids: Vec<Pid>) -> Group {
        Group { pids, session: None }
    }

    /// A group of the same session as `self`.
    pub fn derived(&self, pids: Vec<Pid>) -> Group {
        Group { pids, session: self.session }
    }

    pub fn size(&self) -> i32 {
        self.pids.len() as i32
    }

    pub fn rank_of(&self, pid: Pid) -> Option<i32> {
        self.pids.iter().position(|&p| p == pid).map(|r| r as i32)
    }
}

pub use gridmpi_engine::topo::Topo;

/// Which language's bindings made a keyval or set an attribute value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    C,
    Fortran,
}

/// An attribute value as its setter gave it (MPI 4.1, 19.3.7): C sets a
/// pointer, kept as it is; Fortran sets an address-sized integer, kept
/// here, and a read in C gets a pointer to it. A read in Fortran of a
/// value C set gets the pointer as an integer.
#[derive(Clone, Debug)]
pub enum AttrValue {
    C(*mut c_void),
    Fortran(Box<MPI_Aint>),
}

impl AttrValue {
    /// The value `v` a call in `lang` set (from Fortran: the integer,
    /// carried in a pointer-sized word).
    pub fn new(v: *mut c_void, lang: Lang) -> AttrValue {
        match lang {
            Lang::C => AttrValue::C(v),
            Lang::Fortran => AttrValue::Fortran(Box::new(v as MPI_Aint)),
        }
    }

    /// What a read, or a callback, in `lang` gets (in Fortran the integer,
    /// carried in a pointer-sized word). A C view of a Fortran value
    /// points into this value: valid while it is set.
    pub fn view(&self, lang: Lang) -> *mut c_void {
        match (self, lang) {
            (AttrValue::C(p), _) => *p,
            (AttrValue::Fortran(b), Lang::C) => &**b as *const MPI_Aint as *mut c_void,
            (AttrValue::Fortran(b), Lang::Fortran) => **b as *mut c_void,
        }
    }
}

/// The attributes of an object, in the order they were first set: they are
/// deleted last-set first (MPI 4.1, 11.2.4, for MPI_COMM_SELF at
/// MPI_Finalize; the same order everywhere else). Objects carry a few
/// attributes at most, so a list is the right map.
#[derive(Clone, Debug, Default)]
pub struct Attrs(Vec<(c_int, AttrValue)>);

impl Attrs {
    pub fn get(&self, k: &c_int) -> Option<&AttrValue> {
        self.0.iter().find(|(key, _)| key == k).map(|(_, v)| v)
    }

    /// Set `k`; a value set again keeps its place. Returns the old value.
    pub fn insert(&mut self, k: c_int, v: AttrValue) -> Option<AttrValue> {
        match self.0.iter_mut().find(|(key, _)| *key == k) {
            Some(e) => Some(std::mem::replace(&mut e.1, v)),
            None => {
                self.0.push((k, v));
                None
            }
        }
    }

    pub fn remove(&mut self, k: &c_int) -> Option<AttrValue> {
        let i = self.0.iter().position(|(key, _)| key == k)?;
        Some(self.0.remove(i).1)
    }

    /// The last set, removed.
    pub fn pop(&mut self) -> Option<(c_int, AttrValue)> {
        self.0.pop()
    }

    /// In the order they were set.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&c_int, &AttrValue)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

pub struct Comm {
    /// Point-to-point context id (even); collectives use `ctx + 1`.
    pub ctx: u32,
    pub group: Arc<Group>,
    /// For an intercommunicator: the remote group.
    pub remote: Option<Arc<Group>>,
    /// Our rank in `group`.
    pub rank: i32,
    pub name: String,
    pub errh: MPI_Errhandler,
    /// Attributes by keyval.
    pub attrs: Attrs,
    pub info: Vec<(String, String)>,
    pub topo: Option<Arc<Topo>>,
    /// Sequence number of the next blocking collective (its tag).
    pub coll_seq: u32,
    /// Sequence number of the next nonblocking or persistent collective.
    pub icoll_seq: u32,
    /// For an intercommunicator: an intracommunicator context over the
    /// local group, used inside intercommunicator collectives.
    pub local_ctx: Option<u32>,
    /// Buffer for buffered sends on this communicator (MPI 4.1).
    pub bsend: Option<BsendBuffer>,
    /// The session the communicator derives from (None in the world model).
    pub session: Option<MPI_Session>,
    /// The shared-memory area for collectives when every member is on
    /// this host (see shell/coll.rs: set up at the first collective).
    pub host: HostColl,
    /// The group's pids as collective schedules take them (a communicator's
    /// group never changes; shared so a collective's start copies nothing).
    pub coll_pids: Arc<[Pid]>,
    /// How many clusters the members span, once counted (shell/coll.rs,
    /// `CommShape::of`).
    pub clusters: std::cell::Cell<Option<u32>>,
}

/// A communicator's shared-memory area for collectives
/// (gridmpi_engine::coll::host).
pub enum HostColl {
    /// Not looked at yet.
    Unknown,
    /// Members on several hosts, an intercommunicator, or turned off.
    None,
    /// The area and the number of the next operation on it.
    Area { area: Arc<dyn gridmpi_engine::coll::host::HostArea>, next_op: u64, slot: u64 },
}

impl Comm {
    pub fn new(ctx: u32, group: Arc<Group>, rank: i32, errh: MPI_Errhandler) -> Comm {
        Comm {
            ctx,
            group: group.clone(),
            remote: None,
            rank,
            name: String::new(),
            errh,
            attrs: Attrs::default(),
            info: Vec::new(),
            topo: None,
            coll_seq: 0,
            icoll_seq: 0,
            local_ctx: None,
            bsend: None,
            session: None,
            host: HostColl::Unknown,
            coll_pids: group.pids.clone().into(),
            clusters: std::cell::Cell::new(None),
        }
    }

    pub fn is_inter(&self) -> bool {
        self.remote.is_some()
    }

    pub fn size(&self) -> i32 {
        self.group.size()
    }

    /// Size of the group point-to-point ranks refer to.
    pub fn peer_size(&self) -> i32 {
        self.remote.as_ref().unwrap_or(&self.group).size()
    }

    /// Pid of point-to-point rank `r` (remote group for intercommunicators).
    pub fn peer_pid(&self, r: i32) -> Pid {
        self.remote.as_ref().unwrap_or(&self.group).pids[r as usize]
    }

    /// Check a destination rank (or MPI_PROC_NULL).
    pub fn check_dest(&self, r: c_int) -> R<Option<Pid>> {
        if r == MPI_PROC_NULL {
            return Ok(None);
        }
        if r < 0 || r >= self.peer_size() {
            return Err(err(MPI_ERR_RANK, format!("invalid rank {r} (communicator has {} ranks)", self.peer_size())));
        }
        Ok(Some(self.peer_pid(r)))
    }

    /// Check a source rank: Ok(None) for MPI_ANY_SOURCE.
    pub fn check_source(&self, r: c_int) -> R<Option<i32>> {
        if r == MPI_ANY_SOURCE {
            return Ok(None);
        }
        if r < 0 || r >= self.peer_size() {
            return Err(err(MPI_ERR_RANK, format!("invalid source rank {r} (communicator has {} ranks)", self.peer_size())));
        }
        Ok(Some(r))
    }

    /// The tag of the next blocking collective (and of the internal
    /// exchanges of communicator constructors).
    ///
    /// Blocking and nonblocking collectives count in two sequences with
    /// disjoint tags. A correct program calls collectives in the same order
    /// on every rank, so each sequence matches too; and programs that run a
    /// blocking collective while a nonblocking one is pending on other
    /// ranks (the usual fallback for MPI_Comm_iagree does, as MPICH's fixed
    /// per-kind tags allow) still match.
    pub fn next_coll_tag(&mut self) -> i32 {
        let t = self.peek_coll_tag();
        self.coll_seq = (self.coll_seq + 1) & COLL_SEQ_MASK;
        t
    }

    /// The tag [`Comm::next_coll_tag`] will give.
    pub fn peek_coll_tag(&self) -> i32 {
        self.coll_seq as i32
    }

    /// The tag [`Comm::next_icoll_tag`] will give.
    pub fn peek_icoll_tag(&self) -> i32 {
        (ICOLL_TAG_BIT | self.icoll_seq) as i32
    }

    /// The tag of the next nonblocking collective, nonblocking constructor
    /// (MPI_Comm_idup) or persistent collective initialisation.
    pub fn next_icoll_tag(&mut self) -> i32 {
        let t = self.peek_icoll_tag();
        self.icoll_seq = (self.icoll_seq + 1) & COLL_SEQ_MASK;
        t
    }
}

/// Collective tags: bit 30 marks side exchanges (see shell/comm.rs), bit
/// 29 the nonblocking sequence, the low 29 bits count.
const COLL_SEQ_MASK: u32 = (1 << 29) - 1;
const ICOLL_TAG_BIT: u32 = 1 << 29;

/// Whether collective `tag` comes before sequence numbers `blocking` (for a
/// blocking one's tag) or `nonblocking` (for the others'). Sequences wrap:
/// "before" means less than half the counter's range behind.
pub fn coll_tag_before(tag: i32, blocking: u32, nonblocking: u32) -> bool {
    let tag = tag as u32;
    let (seq, bound) = if tag & ICOLL_TAG_BIT != 0 { (tag & COLL_SEQ_MASK, nonblocking) } else { (tag & COLL_SEQ_MASK, blocking) };
    seq_before(seq, bound)
}

/// `a` comes before `b` in a wrapping collective sequence.
fn seq_before(a: u32, b: u32) -> bool {
    let behind = b.wrapping_sub(a) & COLL_SEQ_MASK;
    behind != 0 && behind <= COLL_SEQ_MASK / 2
}

/// The later of two collective sequence numbers.
pub fn seq_later(a: u32, b: u32) -> u32 {
    if seq_before(a, b) {
        b
    } else {
        a
    }
}

pub fn check_tag(tag: c_int) -> R<()> {
    if !(0..=TAG_UB).contains(&tag) {
        return Err(err(MPI_ERR_TAG, format!("invalid tag {tag} (must be 0..={TAG_UB}, MPI_TAG_UB)")));
    }
    Ok(())
}

pub fn check_recv_tag(tag: c_int) -> R<Option<i32>> {
    if tag == MPI_ANY_TAG {
        return Ok(None);
    }
    check_tag(tag)?;
    Ok(Some(tag))
}

/// A count argument of either binding (C `int`, or `MPI_Count` in the
/// large-count `_c` functions), checked non-negative.
pub fn check_count(count: i64) -> R<u64> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("invalid count {count} (must not be negative)")));
    }
    Ok(count as u64)
}

pub struct TypeEntry {
    pub dt: Arc<Datatype>,
    pub name: String,
    pub committed: bool,
    pub attrs: Attrs,
}

/// The predefined datatypes, indexed for fast lookup by handle.
pub struct Predefined {
    /// 0x4c0000XX handles, by XX.
    pub basic: Vec<Option<(Arc<Datatype>, &'static str)>>,
    /// 0x8c00000X pair handles, by X.
    pub pairs: Vec<(Arc<Datatype>, &'static str)>,
    /// Names set on predefined types and their attributes.
    pub names: BTreeMap<c_int, String>,
    pub attrs: BTreeMap<c_int, Attrs>,
}

/// Every predefined datatype handle, with its element type. Pair types have
/// their (value, index) element types.
pub const PREDEFINED_TYPES: &[(c_int, &str, Predef)] = {
    use BasicType::*;
    use Predef::{Basic as B, Pair as P};
    &[
        (MPI_CHAR, "MPI_CHAR", B(Char)),
        (MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", B(SignedChar)),
        (MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", B(UnsignedChar)),
        (MPI_BYTE, "MPI_BYTE", B(Byte)),
        (MPI_WCHAR, "MPI_WCHAR", B(WChar)),
        (MPI_SHORT, "MPI_SHORT", B(Short)),
        (MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", B(UnsignedShort)),
        (MPI_INT, "MPI_INT", B(Int)),
        (MPI_UNSIGNED, "MPI_UNSIGNED", B(Unsigned)),
        (MPI_LONG, "MPI_LONG", B(Long)),
        (MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", B(UnsignedLong)),
        (MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT", B(LongLong)),
        (MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", B(UnsignedLongLong)),
        (MPI_FLOAT, "MPI_FLOAT", B(Float)),
        (MPI_DOUBLE, "MPI_DOUBLE", B(Double)),
        (MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", B(LongDouble)),
        (MPI_PACKED, "MPI_PACKED", B(Packed)),
        (MPI_LB, "MPI_LB", B(Lb)),
        (MPI_UB, "MPI_UB", B(Ub)),
        (MPI_INT8_T, "MPI_INT8_T", B(Int8)),
        (MPI_INT16_T, "MPI_INT16_T", B(Int16)),
        (MPI_INT32_T, "MPI_INT32_T", B(Int32)),
        (MPI_INT64_T, "MPI_INT64_T", B(Int64)),
        (MPI_UINT8_T, "MPI_UINT8_T", B(Uint8)),
        (MPI_UINT16_T, "MPI_UINT16_T", B(Uint16)),
        (MPI_UINT32_T, "MPI_UINT32_T", B(Uint32)),
        (MPI_UINT64_T, "MPI_UINT64_T", B(Uint64)),
        (MPI_C_BOOL, "MPI_C_BOOL", B(CBool)),
        // One handle, two names: MPICH and the standard's own examples report it as MPI_C_COMPLEX.
        (MPI_C_FLOAT_COMPLEX, "MPI_C_COMPLEX", B(CFloatComplex)),
        (MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", B(CDoubleComplex)),
        (MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", B(CLongDoubleComplex)),
        (MPI_AINT, "MPI_AINT", B(Aint)),
        (MPI_OFFSET, "MPI_OFFSET", B(Offset)),
        (MPI_COUNT, "MPI_COUNT", B(Count)),
        (MPIX_C_FLOAT16, "MPIX_C_FLOAT16", B(Float16)),
        (MPIX_BFLOAT16, "MPIX_BFLOAT16", B(BFloat16)),
        (MPI_CXX_BOOL, "MPI_CXX_BOOL", B(CxxBool)),
        (MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", B(CxxFloatComplex)),
        (MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", B(CxxDoubleComplex)),
        (MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX", B(CxxLongDoubleComplex)),
        (MPI_CHARACTER, "MPI_CHARACTER", B(Character)),
        (MPI_INTEGER, "MPI_INTEGER", B(Integer)),
        (MPI_REAL, "MPI_REAL", B(Real)),
        (MPI_LOGICAL, "MPI_LOGICAL", B(Logical)),
        (MPI_COMPLEX, "MPI_COMPLEX", B(Complex)),
        (MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", B(DoublePrecision)),
        (MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", B(DoubleComplex)),
        (MPI_REAL2, "MPI_REAL2", B(Real2)),
        (MPI_REAL4, "MPI_REAL4", B(Real4)),
        (MPI_REAL8, "MPI_REAL8", B(Real8)),
        (MPI_REAL16, "MPI_REAL16", B(Real16)),
        (MPI_COMPLEX4, "MPI_COMPLEX4", B(Complex4)),
        (MPI_COMPLEX8, "MPI_COMPLEX8", B(Complex8)),
        (MPI_COMPLEX16, "MPI_COMPLEX16", B(Complex16)),
        (MPI_COMPLEX32, "MPI_COMPLEX32", B(Complex32)),
        (MPI_INTEGER1, "MPI_INTEGER1", B(Integer1)),
        (MPI_INTEGER2, "MPI_INTEGER2", B(Integer2)),
        (MPI_INTEGER4, "MPI_INTEGER4", B(Integer4)),
        (MPI_INTEGER8, "MPI_INTEGER8", B(Integer8)),
        (MPI_INTEGER16, "MPI_INTEGER16", B(Integer16)),
        (MPI_LOGICAL1, "MPI_LOGICAL1", B(Logical1)),
        (MPI_LOGICAL2, "MPI_LOGICAL2", B(Logical2)),
        (MPI_LOGICAL4, "MPI_LOGICAL4", B(Logical4)),
        (MPI_LOGICAL8, "MPI_LOGICAL8", B(Logical8)),
        (MPI_LOGICAL16, "MPI_LOGICAL16", B(Logical16)),
        (MPI_FLOAT_INT, "MPI_FLOAT_INT", P(Float, Int)),
        (MPI_DOUBLE_INT, "MPI_DOUBLE_INT", P(Double, Int)),
        (MPI_LONG_INT, "MPI_LONG_INT", P(Long, Int)),
        (MPI_SHORT_INT, "MPI_SHORT_INT", P(Short, Int)),
        (MPI_2INT, "MPI_2INT", P(Int, Int)),
        (MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", P(LongDouble, Int)),
        (MPI_2INTEGER, "MPI_2INTEGER", P(Integer, Integer)),
        (MPI_2REAL, "MPI_2REAL", P(Real, Real)),
        (MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", P(DoublePrecision, DoublePrecision)),
    ]
};

#[derive(Clone, Copy, Debug)]
pub enum Predef {
    Basic(BasicType),
    Pair(BasicType, BasicType),
}

impl Predefined {
    pub fn new() -> Predefined {
        let mut basic: Vec<Option<(Arc<Datatype>, &'static str)>> = vec![None; 256];
        let mut pairs = Vec::new();
        for &(h, name, p) in PREDEFINED_TYPES {
            let dt = Arc::new(match p {
                Predef::Basic(b) => Datatype::basic(b),
                Predef::Pair(v, i) => Datatype::value_index(v, i),
            });
            if (h as u32) >> 24 == 0x8c {
                let i = (h & 0xff) as usize;
                if pairs.len() <= i {
                    pairs.resize(i + 1, (dt.clone(), name));
                }
                pairs[i] = (dt, name);
            } else {
                basic[(h & 0xff) as usize] = Some((dt, name));
            }
        }
        Predefined { basic, pairs, names: BTreeMap::new(), attrs: BTreeMap::new() }
    }

    pub fn get(&self, h: c_int) -> Option<&(Arc<Datatype>, &'static str)> {
        let u = h as u32;
        match u >> 24 {
            0x4c if u & 0x00ff_0000 == 0 => self.basic.get((u & 0xff) as usize)?.as_ref(),
            0x8c if u & 0x00ff_fff0 == 0 => self.pairs.get((u & 0xf) as usize),
            _ => None,
        }
    }

    /// The handle of a predefined type, given its datatype object (by identity).
    pub fn handle_of(&self, dt: &Arc<Datatype>) -> Option<c_int> {
        for &(h, _, _) in PREDEFINED_TYPES {
            if let Some((d, _)) = self.get(h) {
                if Arc::ptr_eq(d, dt) {
                    return Some(h);
                }
            }
        }
        None
    }
}

impl Default for Predefined {
    fn default() -> Self {
        Self::new()
    }
}

pub enum OpEntry {
    User { func: MPI_User_function, commute: bool },
    UserBig { func: MPI_User_function_c, commute: bool },
}

#[derive(Clone, Copy)]
pub enum ErrhFunc {
    Comm(MPI_Comm_errhandler_function),
    Win(MPI_Win_errhandler_function),
    File(MPI_File_errhandler_function),
    Session(MPI_Session_errhandler_function),
}

pub struct ErrhEntry {
    pub func: ErrhFunc,
    /// Objects using it plus one for the user's handle until freed.
    pub refs: u32,
}

#[derive(Clone, Debug, Default)]
pub struct Info {
    pub entries: Vec<(String, String)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum KeyvalKind {
    Comm,
    Type,
    Win,
}

pub struct Keyval {
    pub kind: KeyvalKind,
    pub copy: Option<MPI_Comm_copy_attr_function>,
    pub delete: Option<MPI_Comm_delete_attr_function>,
    /// The copy function is MPI_DUP_FN (copy the value).
    pub extra: *mut c_void,
    /// MPI_*_free_keyval was called; the keyval lives while attributes use it.
    pub freed: bool,
    pub uses: u32,
    /// The language of the callbacks: they get values in its view.
    pub lang: Lang,
}

/// What a request handle stands for.
pub enum ReqEntry {
    /// A point-to-point or collective operation in the engine, on `comm`.
    Active { r: ReqId, kind: ReqKind, comm: MPI_Comm },
    /// A persistent request: its arguments, and the operation when started.
    Persistent { spec: PersistentSpec, active: Option<ReqId> },
    /// A generalized request (MPI_Grequest_start).
    Greq {
        r: ReqId,
        query: Option<MPI_Grequest_query_function>,
        free: Option<MPI_Grequest_free_function>,
        cancel: Option<MPI_Grequest_cancel_function>,
        extra: *mut c_void,
        status: Option<MPI_Status>,
        /// MPI_Request_free came before MPI_Grequest_complete: the user's
        /// copies of the handle stay valid for that call, which then frees
        /// the request (MPI 4.1 section 13.2).
        freed: bool,
    },
    /// Completed at creation with an empty status (MPI_PROC_NULL).
    Null { kind: ReqKind, comm: MPI_Comm },
    /// Completed at creation with this status (nonblocking file accesses,
    /// which do their I/O in the call).
    Done { status: MPI_Status },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqKind {
    Send,
    Recv,
    /// A buffered send: releases its attached-buffer block on completion.
    Bsend { block: usize },
    Coll,
}

#[derive(Clone)]
pub enum PersistentSpec {
    Send { buf: *const c_void, count: MPI_Count, dt: Arc<Datatype>, dest: c_int, tag: c_int, comm: MPI_Comm, mode: SendMode },
    Recv { buf: *mut c_void, count: MPI_Count, dt: Arc<Datatype>, source: c_int, tag: c_int, comm: MPI_Comm },
    /// A persistent collective: the schedule is rebuilt on each start.
    Coll { start: Arc<dyn Fn() -> R<ReqId> + Send + Sync>, comm: MPI_Comm },
    /// A partitioned send or receive (MPI_Psend_init, MPI_Precv_init): the
    /// engine holds it; each start is a round.
    Partitioned { id: gridmpi_engine::PartId, recv: bool, comm: MPI_Comm },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    Standard,
    Sync,
    Ready,
    Buffered,
}

/// A window: the engine's window, and what the C API shows of it.
pub struct WinEntry {
    pub id: gridmpi_engine::rma::WinId,
    /// The group of the communicator it was created on.
    pub group: Arc<Group>,
    pub flavor: gridmpi_engine::rma::Flavor,
    pub name: String,
    pub errh: MPI_Errhandler,
    pub attrs: Attrs,
    /// Hints set by the program (MPI_Win_create's info, MPI_Win_set_info).
    pub info: Vec<(String, String)>,
    /// What MPI_WIN_BASE, _SIZE, _DISP_UNIT, _CREATE_FLAVOR and _MODEL
    /// point to (the attribute values are pointers, so they live here).
    pub base: *mut c_void,
    pub size: Box<MPI_Aint>,
    pub disp_unit: Box<c_int>,
    pub flavor_attr: Box<c_int>,
    pub model: Box<c_int>,
    /// Memory the library allocated for the window, freed with it.
    pub memory: WinMemory,
}

pub enum WinMemory {
    /// The program's (MPI_Win_create) or none (dynamic).
    User,
    /// MPI_Win_allocate: from the heap.
    Heap { ptr: *mut u8, layout: std::alloc::Layout },
    /// MPI_Win_allocate_shared: one mapping shared by the members.
    Shared(std::sync::Arc<gridmpi_transport::sys::SharedMap>),
}

impl Drop for WinMemory {
    fn drop(&mut self) {
        if let WinMemory::Heap { ptr, layout } = *self {
            // SAFETY: allocated with this layout by MPI_Win_allocate, and the
            // window (its only user in the library) is gone.
            unsafe { std::alloc::dealloc(ptr, layout) };
        }
    }
}

pub struct MsgEntry {
    pub msg: MsgId,
    /// The communicator it was probed on (errors of MPI_Mrecv go there).
    pub comm: MPI_Comm,
}

/// A buffer for buffered sends, attached to the process (MPI_Buffer_attach)
/// or to one communicator (MPI_Comm_attach_buffer): a first-fit allocator
/// over the user's memory, or, for MPI_BUFFER_AUTOMATIC, heap memory
/// allocated per message.
pub struct BsendBuffer {
    pub base: *mut u8,
    pub size: usize,
    /// Allocated blocks: (offset, len), sorted by offset.
    pub used: Vec<(usize, usize)>,
    pub automatic: bool,
}

/// Whose attached buffer a buffered send uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufOwner {
    Process,
    Comm(MPI_Comm),
    Session(MPI_Session),
}

/// A session (MPI_Session_init .. MPI_Session_finalize).
pub struct SessionEntry {
    pub errh: MPI_Errhandler,
    /// The thread support level the session provides.
    pub thread_level: c_int,
    /// The hints given to MPI_Session_init.
    pub info: Vec<(String, String)>,
    /// Buffer for buffered sends on the session's communicators (MPI 4.1).
    pub bsend: Option<BsendBuffer>,
}

/// A buffered send in flight.
pub struct BsendInflight {
    pub r: ReqId,
    pub owner: BufOwner,
    /// Block offset in the owner's buffer (unused for automatic buffers).
    pub off: usize,
    /// The message copy, for automatic buffers.
    pub heap: Option<Box<[u8]>>,
}

impl BsendBuffer {
    pub fn alloc(&mut self, len: usize) -> Option<usize> {
        let need = (len + 15) & !15;
        let mut at = 0usize;
        for (i, &(off, l)) in self.used.iter().enumerate() {
            if off - at >= need {
                self.used.insert(i, (at, need));
                return Some(at);
            }
            at = off + l;
        }
        if self.size >= at && self.size - at >= need {
            self.used.push((at, need));
            return Some(at);
        }
        None
    }

    pub fn free(&mut self, off: usize) {
        if let Some(i) = self.used.iter().position(|&(o, _)| o == off) {
            self.used.remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_sequences_compare_across_the_wrap() {
        assert!(seq_before(3, 4));
        assert!(!seq_before(4, 4));
        assert!(!seq_before(5, 4));
        assert!(seq_before(COLL_SEQ_MASK, 2), "the counter wrapped: 2 is after its top");
        assert_eq!(seq_later(COLL_SEQ_MASK, 1), 1);
        assert_eq!(seq_later(7, 3), 7);
        // A blocking tag is judged against the blocking bound, a
        // nonblocking one against the nonblocking bound.
        assert!(coll_tag_before(3, 4, 0));
        assert!(!coll_tag_before(4, 4, 100));
        assert!(coll_tag_before((ICOLL_TAG_BIT | 9) as i32, 0, 10));
        assert!(!coll_tag_before((ICOLL_TAG_BIT | 10) as i32, 100, 10));
    }
}

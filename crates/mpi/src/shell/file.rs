//! Parallel I/O (MPI 4.1 chapter 14): file handles, views, the data
//! access calls in all their forms, error handlers on files. What the
//! calls do to a file is in `crate::io` (views, data representations,
//! the shared file pointer, the system calls); this module keeps the
//! handles, checks arguments and runs the collectives.
//!
//! A file handle owns a context of its own (agreed at open, as a
//! duplicate communicator would), so the file's internal collectives
//! never match the program's messages. MPI_File is a pointer in the
//! MPICH ABI: ours carry a handle value of kind `File` (never 0, which is
//! MPI_FILE_NULL), and MPI_File_c2f/f2c are the conversion to and from it.
//!
//! Every data access does its I/O inside the call, without the state's
//! lock: the nonblocking forms return a completed request and the split
//! collectives finish in `_begin` (the standard allows both). Blocking
//! collective accesses (and split collectives' `_begin`) whose pieces
//! interleave are aggregated (two-phase I/O, `io/aggregate.rs`); the
//! nonblocking collective forms never exchange data inside the call (a
//! member may reach its call only after the others' calls returned), so
//! each member does its own pieces there.

use super::*;
use crate::errors::MpiError;
use crate::io::access::{self, RangeLock};
use crate::io::aggregate::{self, Piece};
use crate::io::datarep::{self, Conversion, Datarep, UserRep};
use crate::io::shared_ptr::{self, SharedPtr};
use crate::io::view::View;
use crate::objects::*;
use crate::state::{self, api, Target};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// The MPI_File value of a handle.
pub fn file_ptr(h: c_int) -> MPI_File {
    h as u32 as usize as MPI_File
}

/// The handle an MPI_File carries (0, never valid, for a value no handle
/// could be).
pub fn file_id(fh: MPI_File) -> c_int {
    let v = fh as usize;
    if v >> 32 != 0 {
        return 0;
    }
    v as u32 as c_int
}

/// Which data access a call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoOp {
    Read,
    ReadAll,
    ReadAt,
    ReadAtAll,
    ReadShared,
    ReadOrdered,
    Write,
    WriteAll,
    WriteAt,
    WriteAtAll,
    WriteShared,
    WriteOrdered,
}

/// Which file pointer an access uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pos {
    Individual,
    Explicit,
    Shared,
    Ordered,
}

impl IoOp {
    fn writes(self) -> bool {
        matches!(self, IoOp::Write | IoOp::WriteAll | IoOp::WriteAt | IoOp::WriteAtAll | IoOp::WriteShared | IoOp::WriteOrdered)
    }

    fn pos(self) -> Pos {
        match self {
            IoOp::Read | IoOp::ReadAll | IoOp::Write | IoOp::WriteAll => Pos::Individual,
            IoOp::ReadAt | IoOp::ReadAtAll | IoOp::WriteAt | IoOp::WriteAtAll => Pos::Explicit,
            IoOp::ReadShared | IoOp::WriteShared => Pos::Shared,
            IoOp::ReadOrdered | IoOp::WriteOrdered => Pos::Ordered,
        }
    }
}

/// A buffer argument of either direction (`void *` for reads, `const
/// void *` for writes): one implementation takes both.
#[derive(Clone, Copy)]
pub struct IoBuf(*mut c_void);

impl From<*mut c_void> for IoBuf {
    fn from(p: *mut c_void) -> IoBuf {
        IoBuf(p)
    }
}

impl From<*const c_void> for IoBuf {
    fn from(p: *const c_void) -> IoBuf {
        IoBuf(p as *mut c_void)
    }
}

/// The open file every access of a handle goes through.
pub struct Opened {
    file: File,
    path: PathBuf,
    amode: c_int,
}

/// The current view: the byte map and what MPI_File_get_view reports.
pub struct ViewState {
    map: View,
    disp: i64,
    etype: MPI_Datatype,
    filetype: MPI_Datatype,
    etype_dt: Arc<Datatype>,
    filetype_dt: Arc<Datatype>,
    rep: Datarep,
}

pub struct FileEntry {
    opened: Arc<Opened>,
    /// The handle's own communicator (a context of its own; in the
    /// communicator table for the exchanges of collective I/O, never
    /// given to the program).
    comm: MPI_Comm,
    rank: i32,
    pub errh: MPI_Errhandler,
    view: Arc<ViewState>,
    /// The individual file pointer, in etypes of the view.
    pos: u64,
    atomic: bool,
    hints: Vec<(String, String)>,
    /// The split collective begun and not ended: its access and status.
    split: Option<(IoOp, MPI_Status)>,
    /// The shared file pointer, or why there is none (the sidecar could
    /// not be made).
    shfp: Result<Arc<SharedPtr>, String>,
    /// Where the members run, by rank: for choosing aggregators.
    members: Arc<Members>,
}

/// The host (its smallest pid) and the cluster (a hash of its name, the
/// same at every member whatever its job) of each member of a file's group.
pub struct Members {
    host: Vec<i64>,
    cluster: Vec<i64>,
}

/// A cluster's name as the members compare it.
fn cluster_id(name: &str) -> i64 {
    let h = crate::auth::sha256(name.as_bytes());
    i64::from_le_bytes(h[..8].try_into().expect("8 bytes")) & i64::MAX
}

impl State {
    pub fn file(&self, fh: c_int) -> R<&FileEntry> {
        if fh == 0 {
            return Err(err(MPI_ERR_FILE, "the file is MPI_FILE_NULL"));
        }
        self.files.get(fh).ok_or_else(|| err(MPI_ERR_FILE, format!("invalid file handle {fh:#x}")))
    }

    pub fn file_mut(&mut self, fh: c_int) -> R<&mut FileEntry> {
        if fh == 0 {
            return Err(err(MPI_ERR_FILE, "the file is MPI_FILE_NULL"));
        }
        self.files.get_mut(fh).ok_or_else(|| err(MPI_ERR_FILE, format!("invalid file handle {fh:#x}")))
    }

    /// The predefined handle of the one element type of `dt`, if it has one.
    fn element_handle(&self, dt: &Datatype) -> Option<MPI_Datatype> {
        let b = dt.uniform_element()?;
        PREDEFINED_TYPES.iter().map(|&(h, _, _)| h).find(|&h| self.predef.get(h).is_some_and(|(d, _)| d.is_named() && d.basic_type() == Some(b)))
    }
}

fn io_err(what: &str, e: std::io::Error) -> MpiError {
    err(access::errno_class(&e), format!("{what}: {e}"))
}

// ---- internal collectives over the file's context ----------------------------

fn allgather_view(view: gridmpi_engine::sched::CommView, tag: i32, mine: &[i64]) -> R<Vec<Vec<i64>>> {
    let ints: Vec<i32> = mine.iter().flat_map(|&v| [v as u32 as i32, ((v as u64) >> 32) as u32 as i32]).collect();
    let all = super::comm::allgather(view, tag, &ints)?;
    Ok(all
        .chunks(ints.len())
        .map(|c| c.chunks(2).map(|p| (p[0] as u32 as u64 | (p[1] as u32 as u64) << 32) as i64).collect())
        .collect())
}

/// Allgather of i64 values over the file's members (at least one value).
fn file_allgather(fh: c_int, mine: &[i64]) -> R<Vec<Vec<i64>>> {
    let (view, tag) = state::with(|st| {
        let c = st.file(fh)?.comm;
        let c = st.comm_mut(c)?;
        let tag = c.next_coll_tag();
        Ok((super::env::coll_view(c), tag))
    })?;
    allgather_view(view, tag, mine)
}

fn barrier(fh: c_int) -> R<()> {
    file_allgather(fh, &[0]).map(|_| ())
}

fn file_rank(fh: c_int) -> R<i32> {
    state::with(|st| Ok(st.file(fh)?.rank))
}

// ---- open, close, delete ------------------------------------------------------

fn check_amode(amode: c_int) -> R<()> {
    let access = [MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY].iter().filter(|&&m| amode & m != 0).count();
    if access != 1 {
        return Err(err(MPI_ERR_AMODE, format!("amode {amode:#x} must have exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY")));
    }
    let known = MPI_MODE_RDONLY | MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN | MPI_MODE_SEQUENTIAL | MPI_MODE_APPEND;
    if amode & !known != 0 {
        return Err(err(MPI_ERR_AMODE, format!("amode {amode:#x} has unknown bits {:#x}", amode & !known)));
    }
    if amode & MPI_MODE_RDONLY != 0 && amode & (MPI_MODE_CREATE | MPI_MODE_EXCL) != 0 {
        return Err(err(MPI_ERR_AMODE, "MPI_MODE_CREATE and MPI_MODE_EXCL cannot go with MPI_MODE_RDONLY"));
    }
    if amode & MPI_MODE_RDWR != 0 && amode & MPI_MODE_SEQUENTIAL != 0 {
        return Err(err(MPI_ERR_AMODE, "MPI_MODE_SEQUENTIAL cannot go with MPI_MODE_RDWR"));
    }
    Ok(())
}

/// The file name without a ROMIO-style file system prefix ("ufs:", "nfs:").
fn file_path(name: &str) -> PathBuf {
    for p in ["ufs:", "nfs:", "lustre:", "gpfs:", "pvfs2:", "testfs:"] {
        if let Some(rest) = name.strip_prefix(p) {
            return PathBuf::from(rest);
        }
    }
    PathBuf::from(name)
}

/// Open the file; `first` is rank 0, which creates it (the others open
/// what it made, so MPI_MODE_EXCL means "no one had made it").
fn open_file(path: &PathBuf, amode: c_int, perm: u32, first: bool) -> R<File> {
    let mut o = OpenOptions::new();
    o.read(amode & (MPI_MODE_RDONLY | MPI_MODE_RDWR) != 0).write(amode & (MPI_MODE_WRONLY | MPI_MODE_RDWR) != 0);
    if first && amode & MPI_MODE_CREATE != 0 {
        if amode & MPI_MODE_EXCL != 0 {
            o.create_new(true);
        } else {
            o.create(true);
        }
    } else if first && amode & MPI_MODE_EXCL != 0 && path.exists() {
        return Err(err(MPI_ERR_FILE_EXISTS, format!("{} exists (MPI_MODE_EXCL)", path.display())));
    }
    o.mode(perm);
    let f = o.open(path).map_err(|e| io_err(&format!("cannot open {}", path.display()), e))?;
    if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(err(MPI_ERR_BAD_FILE, format!("{} is a directory", path.display())));
    }
    Ok(f)
}

/// The hints of the reserved keys (MPI 4.1, 14.2.8) a file keeps and
/// reports; the others are dropped as the standard allows.
const HINT_KEYS: &[&str] = &[
    "access_style",
    "cb_block_size",
    "cb_buffer_size",
    "cb_nodes",
    "chunked",
    "chunked_item",
    "chunked_size",
    "collective_buffering",
    "file_perm",
    "gridmpi_file_cluster",
    "io_node_list",
    "nb_proc",
    "num_io_nodes",
    "striping_factor",
    "striping_unit",
];

fn merge_hints(hints: &mut Vec<(String, String)>, mut given: Vec<(String, String)>) {
    given.retain(|(k, _)| HINT_KEYS.contains(&k.as_str()));
    super::info::merge_entries(hints, given);
}

/// The hints a file starts with: one aggregator per host.
fn default_hints(hosts: usize) -> Vec<(String, String)> {
    vec![
        ("cb_buffer_size".into(), "16777216".into()),
        ("cb_nodes".into(), hosts.max(1).to_string()),
        ("collective_buffering".into(), "true".into()),
    ]
}

fn byte_view() -> R<Arc<ViewState>> {
    let byte = state::with(|st| st.dtype(MPI_BYTE))?;
    Ok(Arc::new(ViewState { map: View::bytes(), disp: 0, etype: MPI_BYTE, filetype: MPI_BYTE, etype_dt: byte.clone(), filetype_dt: byte, rep: Datarep::Native }))
}

fn open(comm: MPI_Comm, filename: &str, amode: c_int, info: MPI_Info) -> R<c_int> {
    let given = super::info::info_entries_or_empty(info)?;
    let (group, rank, inter, job, errh) = state::with(|st| {
        let c = st.comm(comm)?;
        Ok((c.group.clone(), c.rank, c.is_inter(), st.rt.job_tag, st.file_null_errh))
    })?;
    if inter {
        return Err(err(MPI_ERR_COMM, "files are opened on intracommunicators only"));
    }
    check_amode(amode)?;
    let path = file_path(filename);
    let perm = match given.iter().find(|(k, _)| k == "file_perm") {
        Some((_, v)) => u32::from_str_radix(v.trim_start_matches("0o"), 8).map_err(|_| err(MPI_ERR_INFO, format!("file_perm {v:?} is not an octal mode")))?,
        None => 0o644,
    };
    let ctx = super::ctx_id::agree_ctx(comm, 1)?;
    let mut fcomm = Comm::new(ctx, group, rank, MPI_ERRORS_RETURN);
    let view = super::env::coll_view(&fcomm);
    let shfp_path = shared_ptr::sidecar_path(&path, job, ctx);
    // Rank 0 opens (creating) first; then the others open what it made.
    let mut mine: Option<R<File>> = None;
    let mut shfp: Result<Arc<SharedPtr>, String> = Err("not opened".into());
    if rank == 0 {
        let f = open_file(&path, amode, perm, true);
        if let Ok(f) = &f {
            let start = if amode & MPI_MODE_APPEND != 0 { f.metadata().map(|m| m.len()).unwrap_or(0) } else { 0 };
            shfp = SharedPtr::create(shfp_path.clone(), start)
                .map(Arc::new)
                .map_err(|e| format!("the shared file pointer's file {} cannot be made: {e}", shfp_path.display()));
        }
        mine = Some(f);
    }
    let code0 = match &mine {
        Some(Err(e)) => e.class as i64,
        _ => 0,
    };
    let first = allgather_view(view.clone(), fcomm.next_coll_tag(), &[amode as i64, code0])?;
    if first.iter().any(|v| v[0] != amode as i64) {
        if let Ok(p) = &shfp {
            p.remove();
        }
        return Err(err(MPI_ERR_NOT_SAME, "the processes passed different amodes"));
    }
    if first[0][1] != 0 {
        return match mine {
            Some(Err(e)) => Err(e),
            _ => Err(err(first[0][1] as c_int, format!("rank 0 could not open {}", path.display()))),
        };
    }
    let mine = match mine {
        Some(f) => f,
        None => {
            shfp = SharedPtr::open(shfp_path.clone()).map(Arc::new).map_err(|e| format!("the shared file pointer's file {} cannot be opened: {e}", shfp_path.display()));
            open_file(&path, amode, perm, false)
        }
    };
    let code = match &mine {
        Err(e) => e.class as i64,
        Ok(_) => 0,
    };
    // The host of each member (the smallest pid on it): cb_nodes' default.
    let (host, cluster) = state::with(|st| {
        let host = st.rt.local_pids().into_iter().min().unwrap_or(0) as i64;
        let map = &st.rt.map;
        Ok((host, cluster_id(&map.names[map.cluster_of(st.rt.me) as usize])))
    })?;
    let all = allgather_view(view, fcomm.next_coll_tag(), &[code, host, cluster])?;
    if let Some(bad) = all.iter().position(|v| v[0] != 0) {
        if rank == 0 {
            if let Ok(p) = &shfp {
                p.remove();
            }
        }
        return match mine {
            Err(e) => Err(e),
            Ok(_) => Err(err(all[bad][0] as c_int, format!("rank {bad} could not open {}", path.display()))),
        };
    }
    let file = mine?;
    let pos = if amode & MPI_MODE_APPEND != 0 { file.metadata().map(|m| m.len()).unwrap_or(0) } else { 0 };
    let members = Arc::new(Members { host: all.iter().map(|v| v[1]).collect(), cluster: all.iter().map(|v| v[2]).collect() });
    let mut hosts: Vec<i64> = all.iter().map(|v| v[1]).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let mut hints = default_hints(hosts.len());
    merge_hints(&mut hints, given);
    let view = byte_view()?;
    let comm = state::with(|st| Ok(st.comms.insert(fcomm)))?;
    let entry = FileEntry {
        opened: Arc::new(Opened { file, path, amode }),
        comm,
        rank,
        errh,
        view,
        pos,
        atomic: false,
        hints,
        split: None,
        shfp,
        members,
    };
    super::errh::retain_errhandler(errh);
    state::with(|st| Ok(st.files.insert(entry)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_open(comm: MPI_Comm, filename: *const c_char, amode: c_int, info: MPI_Info, fh: *mut MPI_File) -> c_int {
    api("MPI_File_open", Target::File(0), || {
        check_ptr(fh, "fh")?;
        let name = read_cstr(filename)?;
        *fh = file_ptr(open(comm, &name, amode, info)?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_close(fh: *mut MPI_File) -> c_int {
    let id = if fh.is_null() { 0 } else { file_id(*fh) };
    api("MPI_File_close", Target::File(id), || {
        check_ptr(fh, "fh")?;
        state::with(|st| st.file(id).map(|_| ()))?;
        // Every member is done with the file and its sidecar.
        barrier(id)?;
        let delete = state::with(|st| Ok(st.file(id)?.opened.amode & MPI_MODE_DELETE_ON_CLOSE != 0))?;
        let rank = file_rank(id)?;
        if rank == 0 {
            let e = state::with(|st| st.file(id).map(|f| (f.shfp.clone(), f.opened.path.clone())))?;
            if let Ok(p) = &e.0 {
                p.remove();
            }
            if delete {
                let _ = std::fs::remove_file(&e.1);
            }
        }
        if delete {
            // The file is gone when anyone's close returns.
            barrier(id)?;
        }
        let e = state::with(|st| {
            let e = st.files.remove(id).ok_or_else(|| err(MPI_ERR_FILE, "the file was closed meanwhile"))?;
            st.comms.remove(e.comm);
            Ok(e)
        })?;
        super::errh::release_errhandler(e.errh);
        *fh = file_ptr(0);
        Ok(())
    })
}

/// At the end of MPI, for files the program left open: every process is
/// past the teardown barrier, so rank 0 of each file removes what close
/// would have (the shared pointer's sidecar, a DELETE_ON_CLOSE file).
pub fn clean_up_unclosed(st: &State) {
    for h in st.files.handles() {
        let Some(f) = st.files.get(h) else { continue };
        if f.rank != 0 {
            continue;
        }
        if let Ok(p) = &f.shfp {
            p.remove();
        }
        if f.opened.amode & MPI_MODE_DELETE_ON_CLOSE != 0 {
            let _ = std::fs::remove_file(&f.opened.path);
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_delete(filename: *const c_char, info: MPI_Info) -> c_int {
    api("MPI_File_delete", Target::File(0), || {
        let name = read_cstr(filename)?;
        super::info::info_entries_or_empty(info)?;
        let path = file_path(&name);
        std::fs::remove_file(&path).map_err(|e| io_err(&format!("cannot delete {}", path.display()), e))
    })
}

// ---- queries and settings ---------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_atomicity(fh: MPI_File, flag: c_int) -> c_int {
    let id = file_id(fh);
    api("MPI_File_set_atomicity", Target::File(id), || {
        state::with(|st| {
            st.file_mut(id)?.atomic = flag != 0;
            Ok(())
        })?;
        // Collective: accesses after it on any rank see the new mode everywhere.
        barrier(id)
    })
}

/// The stream position (in etypes) of the file's end in the view: the
/// first etype not wholly before it.
fn eof_etypes(opened: &Opened, view: &ViewState) -> R<u64> {
    let size = opened.file.metadata().map_err(|e| io_err("cannot stat the file", e))?.len();
    Ok(view.map.stream_before(size).div_ceil(view.map.esize))
}

fn seek_target(opened: &Opened, view: &ViewState, cur: u64, offset: i64, whence: c_int) -> R<u64> {
    let base = match whence {
        MPI_SEEK_SET => 0,
        MPI_SEEK_CUR => cur as i64,
        MPI_SEEK_END => eof_etypes(opened, view)? as i64,
        w => return Err(err(MPI_ERR_ARG, format!("invalid whence {w} (MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END)"))),
    };
    let at = base.checked_add(offset).ok_or_else(|| err(MPI_ERR_ARG, "the position overflows"))?;
    if at < 0 {
        return Err(err(MPI_ERR_ARG, format!("cannot seek to position {at} (before the start of the view)")));
    }
    Ok(at as u64)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_seek(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> c_int {
    let id = file_id(fh);
    api("MPI_File_seek", Target::File(id), || {
        let (opened, view, pos) = state::with(|st| {
            let f = st.file(id)?;
            Ok((f.opened.clone(), f.view.clone(), f.pos))
        })?;
        if opened.amode & MPI_MODE_SEQUENTIAL != 0 {
            return Err(err(MPI_ERR_UNSUPPORTED_OPERATION, "the file was opened with MPI_MODE_SEQUENTIAL: there is no individual file pointer"));
        }
        let at = seek_target(&opened, &view, pos, offset, whence)?;
        state::with(|st| {
            st.file_mut(id)?.pos = at;
            Ok(())
        })
    })
}

fn shared_of(f: &FileEntry) -> R<Arc<SharedPtr>> {
    f.shfp.clone().map_err(|why| err(MPI_ERR_UNSUPPORTED_OPERATION, format!("no shared file pointer: {why}")))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_seek_shared(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> c_int {
    let id = file_id(fh);
    api("MPI_File_seek_shared", Target::File(id), || {
        let (opened, view, shfp, rank) = state::with(|st| {
            let f = st.file(id)?;
            Ok((f.opened.clone(), f.view.clone(), f.shfp.clone(), f.rank))
        })?;
        // Everyone's earlier shared-pointer accesses are done before it moves.
        barrier(id)?;
        let mut outcome = Ok(());
        if rank == 0 {
            outcome = (|| {
                let p = shfp.as_ref().map_err(|why| err(MPI_ERR_UNSUPPORTED_OPERATION, format!("no shared file pointer: {why}")))?;
                let cur = p.get().map_err(|e| io_err("cannot read the shared file pointer", e))?;
                let at = seek_target(&opened, &view, cur, offset, whence)?;
                p.set(at).map_err(|e| io_err("cannot set the shared file pointer", e))
            })();
        }
        let all = file_allgather(id, &[outcome.as_ref().map_or_else(|e| e.class as i64, |_| 0)])?;
        outcome?;
        if all[0][0] != 0 {
            return Err(err(all[0][0] as c_int, "rank 0 could not move the shared file pointer"));
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_position_shared(fh: MPI_File, offset: *mut MPI_Offset) -> c_int {
    let id = file_id(fh);
    api("MPI_File_get_position_shared", Target::File(id), || {
        check_ptr(offset, "offset")?;
        let p = state::with(|st| shared_of(st.file(id)?))?;
        *offset = p.get().map_err(|e| io_err("cannot read the shared file pointer", e))? as i64;
        Ok(())
    })
}

/// Collective size changes: rank 0 changes the file between two barriers
/// (so no member's access straddles it) and tells the others the outcome.
fn resize(id: c_int, size: i64, what: &str, change: impl FnOnce(&File, u64) -> std::io::Result<()>) -> R<()> {
    if size < 0 {
        return Err(err(MPI_ERR_ARG, format!("invalid size {size} (must not be negative)")));
    }
    let (opened, rank) = state::with(|st| {
        let f = st.file(id)?;
        Ok((f.opened.clone(), f.rank))
    })?;
    if opened.amode & MPI_MODE_RDONLY != 0 {
        return Err(err(MPI_ERR_READ_ONLY, format!("cannot {what} a file opened with MPI_MODE_RDONLY")));
    }
    if opened.amode & MPI_MODE_SEQUENTIAL != 0 && what == "resize" {
        return Err(err(MPI_ERR_UNSUPPORTED_OPERATION, "cannot resize a file opened with MPI_MODE_SEQUENTIAL"));
    }
    barrier(id)?;
    let outcome = if rank == 0 { change(&opened.file, size as u64).map_err(|e| io_err(&format!("cannot {what} the file"), e)) } else { Ok(()) };
    let all = file_allgather(id, &[outcome.as_ref().map_or_else(|e| e.class as i64, |_| 0)])?;
    outcome?;
    if all[0][0] != 0 {
        return Err(err(all[0][0] as c_int, format!("rank 0 could not {what} the file")));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_size(fh: MPI_File, size: MPI_Offset) -> c_int {
    let id = file_id(fh);
    api("MPI_File_set_size", Target::File(id), || resize(id, size, "resize", |f, n| f.set_len(n)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_preallocate(fh: MPI_File, size: MPI_Offset) -> c_int {
    let id = file_id(fh);
    api("MPI_File_preallocate", Target::File(id), || {
        resize(id, size, "preallocate", |f, n| {
            use std::os::unix::io::AsRawFd;
            if n == 0 || f.metadata()?.len() >= n {
                return Ok(());
            }
            // SAFETY: a valid fd.
            match unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, n as libc::off_t) } {
                0 => Ok(()),
                // No allocation on this file system: at least the size.
                libc::EOPNOTSUPP | libc::EINVAL => f.set_len(n),
                e => Err(std::io::Error::from_raw_os_error(e)),
            }
        })
    })
}

// ---- views --------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_set_view(fh: MPI_File, disp: MPI_Offset, etype: MPI_Datatype, filetype: MPI_Datatype, datarep: *const c_char, info: MPI_Info) -> c_int {
    let id = file_id(fh);
    api("MPI_File_set_view", Target::File(id), || {
        let rep_name = read_cstr(datarep)?;
        let given = super::info::info_entries_or_empty(info)?;
        let rep = Datarep::lookup(&rep_name)?;
        let (e, ft, elem, rank, opened, shfp) = state::with(|st| {
            let e = st.dtype(etype).map_err(|x| err(x.class, format!("etype: {}", x.msg)))?;
            let ft = st.dtype(filetype).map_err(|x| err(x.class, format!("filetype: {}", x.msg)))?;
            let elem = st.element_handle(&e);
            let f = st.file(id)?;
            Ok((e, ft, elem, f.rank, f.opened.clone(), f.shfp.clone()))
        })?;
        let mut disp = disp;
        if disp == MPI_DISPLACEMENT_CURRENT as i64 {
            if opened.amode & MPI_MODE_SEQUENTIAL == 0 {
                return Err(err(MPI_ERR_ARG, "MPI_DISPLACEMENT_CURRENT is only for files opened with MPI_MODE_SEQUENTIAL"));
            }
            let p = shfp.as_ref().map_err(|why| err(MPI_ERR_UNSUPPORTED_OPERATION, format!("no shared file pointer: {why}")))?;
            let cur = p.get().map_err(|e| io_err("cannot read the shared file pointer", e))?;
            let old = state::with(|st| Ok(st.file(id)?.view.clone()))?;
            disp = old.map.file_offset(cur * old.map.esize) as i64;
        }
        if disp < 0 {
            return Err(err(MPI_ERR_ARG, format!("invalid displacement {disp} (must not be negative)")));
        }
        let esize = rep.file_size(&e, 1, elem)?;
        let map = View::new(disp, &e, &ft, esize, esize != e.size()).map_err(|m| err(MPI_ERR_TYPE, m))?;
        // Handles that stay valid however the program frees its own.
        let (eh, fth) = state::with(|st| {
            let keep = |st: &mut State, h: MPI_Datatype, dt: &Arc<Datatype>| if st.predef.get(h).is_some() { h } else { st.new_type(Datatype::dup(dt), true) };
            Ok((keep(st, etype, &e), keep(st, filetype, &ft)))
        })?;
        let vs = Arc::new(ViewState { map, disp, etype: eh, filetype: fth, etype_dt: e, filetype_dt: ft, rep });
        // Every member's accesses under the old view are done.
        barrier(id)?;
        let old = state::with(|st| {
            let f = st.file_mut(id)?;
            merge_hints(&mut f.hints, given);
            f.pos = 0;
            Ok(std::mem::replace(&mut f.view, vs))
        })?;
        state::with(|st| {
            for h in [old.etype, old.filetype] {
                if st.predef.get(h).is_none() {
                    st.types.remove(h);
                }
            }
            Ok(())
        })?;
        if rank == 0 {
            if let Ok(p) = &shfp {
                p.set(0).map_err(|e| io_err("cannot reset the shared file pointer", e))?;
            }
        }
        barrier(id)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_get_view(fh: MPI_File, disp: *mut MPI_Offset, etype: *mut MPI_Datatype, filetype: *mut MPI_Datatype, datarep: *mut c_char) -> c_int {
    let id = file_id(fh);
    api("MPI_File_get_view", Target::File(id), || {
        check_ptr(disp, "disp")?;
        check_ptr(etype, "etype")?;
        check_ptr(filetype, "filetype")?;
        check_ptr(datarep, "datarep")?;
        let (d, e, f, name) = state::with(|st| {
            let v = st.file(id)?.view.clone();
            // Derived types come back as new handles the program frees.
            let give = |st: &mut State, h: MPI_Datatype, dt: &Arc<Datatype>| if st.predef.get(h).is_some() { h } else { st.new_type(Datatype::dup(dt), true) };
            Ok((v.disp, give(st, v.etype, &v.etype_dt), give(st, v.filetype, &v.filetype_dt), v.rep.name().to_string()))
        })?;
        *disp = d;
        *etype = e;
        *filetype = f;
        write_cstr(datarep, MPI_MAX_DATAREP_STRING as usize, &name, std::ptr::null_mut());
        Ok(())
    })
}

/// MPI_File_get_type_extent(_c): the extent of a datatype in the file's
/// data representation.
pub fn file_get_type_extent(name: &'static str, fh: MPI_File, datatype: MPI_Datatype, extent: *mut i64) -> c_int {
    let id = file_id(fh);
    api(name, Target::File(id), || {
        check_ptr(extent, "extent")?;
        let (dt, elem, v) = state::with(|st| {
            let dt = st.dtype_any(datatype, false)?;
            Ok((dt.clone(), st.element_handle(&dt), st.file(id)?.view.clone()))
        })?;
        let e = if v.rep.is_native() || dt.extent() != dt.size() as i64 { dt.extent() } else { v.rep.file_size(&dt, 1, elem)? as i64 };
        // SAFETY: checked non-null; the caller's output.
        unsafe { *extent = e };
        Ok(())
    })
}

// ---- data access --------------------------------------------------------------

/// One data access: everything but the pointer it starts from.
struct Access {
    id: c_int,
    op: IoOp,
    offset: i64,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    /// A blocking collective form (or a split collective's begin, which
    /// may block): the members may exchange data (two-phase I/O).
    may_block: bool,
}

impl Access {
    fn two_phase(&self) -> bool {
        self.may_block && matches!(self.op, IoOp::ReadAll | IoOp::WriteAll | IoOp::ReadAtAll | IoOp::WriteAtAll)
    }
}

/// Do an access now; its status (bytes moved).
fn run_access(a: Access) -> R<MPI_Status> {
    let count = check_count(a.count)?;
    let (opened, view, pos, atomic, shfp, dt, elem) = state::with(|st| {
        let dt = st.dtype(a.datatype)?;
        let elem = st.element_handle(&dt);
        let f = st.file(a.id)?;
        Ok((f.opened.clone(), f.view.clone(), f.pos, f.atomic, f.shfp.clone(), dt, elem))
    })?;
    let amode = opened.amode;
    if a.op.writes() && amode & MPI_MODE_RDONLY != 0 {
        return Err(err(MPI_ERR_READ_ONLY, "cannot write to a file opened with MPI_MODE_RDONLY"));
    }
    if !a.op.writes() && amode & MPI_MODE_WRONLY != 0 {
        return Err(err(MPI_ERR_ACCESS, "cannot read from a file opened with MPI_MODE_WRONLY"));
    }
    let pos_kind = a.op.pos();
    if amode & MPI_MODE_SEQUENTIAL != 0 && matches!(pos_kind, Pos::Individual | Pos::Explicit) {
        return Err(err(MPI_ERR_UNSUPPORTED_OPERATION, "a file opened with MPI_MODE_SEQUENTIAL is accessed through the shared file pointer only"));
    }
    if pos_kind == Pos::Explicit && a.offset < 0 {
        return Err(err(MPI_ERR_ARG, format!("invalid offset {} (must not be negative)", a.offset)));
    }
    let esize = view.map.esize;
    let nbytes = view.rep.file_size(&dt, count, elem)?;
    if nbytes % esize != 0 {
        return Err(err(MPI_ERR_TYPE, format!("the access's {nbytes} bytes are not a whole number of etypes of {esize} bytes")));
    }
    let n = nbytes / esize;
    let start = match pos_kind {
        Pos::Individual => pos,
        Pos::Explicit => a.offset as u64,
        Pos::Shared => shared_of_arc(&shfp)?.fetch_add(n).map_err(|e| io_err("cannot update the shared file pointer", e))?,
        Pos::Ordered => ordered_start(a.id, &shfp, n)?,
    };
    let ranges = view.map.ranges(start * esize, nbytes);
    let span = match (ranges.first(), ranges.last()) {
        (Some(f), Some(l)) => Some((f.0, l.0 + l.1 - f.0)),
        _ => None,
    };
    let lock = |write| -> R<Option<RangeLock>> {
        match span {
            Some((s, len)) if atomic => RangeLock::new(&opened.file, s, len, write).map(Some).map_err(|e| io_err("cannot lock the file's bytes (atomic mode)", e)),
            _ => Ok(None),
        }
    };
    let (moved, etypes) = if a.op.writes() {
        // SAFETY: the caller's buffer holds `count` items (MPI's contract).
        let data = unsafe { view.rep.encode(a.buf as *const u8, count, &dt, a.datatype, elem)? };
        if !(a.two_phase() && two_phase_write(a.id, &opened, atomic, &ranges, &data)?) {
            let _held = lock(true)?;
            access::write_ranges(&opened.file, &ranges, &data).map_err(|e| io_err("cannot write", e))?;
        }
        (count * dt.size(), n)
    } else {
        let mut data = vec![0u8; nbytes as usize];
        let aggregated = if a.two_phase() { two_phase_read(a.id, &opened, atomic, &ranges, &mut data)? } else { None };
        let got = match aggregated {
            Some(got) => got,
            None => {
                let _held = lock(false)?;
                access::read_ranges(&opened.file, &ranges, &mut data).map_err(|e| io_err("cannot read", e))?
            }
        };
        // SAFETY: as above, writable.
        let moved = unsafe { view.rep.decode(&data[..got], a.buf as *mut u8, count, &dt, a.datatype, elem)? };
        (moved, got as u64 / esize)
    };
    if pos_kind == Pos::Individual {
        state::with(|st| {
            st.file_mut(a.id)?.pos = start + etypes;
            Ok(())
        })?;
    }
    let mut s = empty_status();
    set_count(&mut s, moved as i64);
    Ok(s)
}

// ---- two-phase collective I/O ----------------------------------------------------

/// What the members of a collective access agreed: aggregate, over these
/// file domains, exchanging on the file's communicator.
struct Plan {
    comm: MPI_Comm,
    size: usize,
    domains: Vec<(u64, u64)>,
    /// The rank that aggregates each domain.
    aggregator: Vec<usize>,
    /// Bytes an aggregator handles per round (`cb_buffer_size`).
    cb: u64,
}

/// Whether (and how) a collective access is aggregated; every member
/// reaches the same answer from what it learns of the others. Aggregation
/// pays when some member's access is in several pieces (an interleaved
/// view); not in atomic mode (each access must stay one locked access),
/// nor when `collective_buffering` is "false". When the members span
/// clusters, a domain's aggregator is in the cluster that has most of its
/// bytes, or in the cluster the `gridmpi_file_cluster` hint names (the one
/// whose file system holds the file), so bytes cross the WAN once at most.
fn plan_collective(id: c_int, atomic: bool, ranges: &[(u64, u64)]) -> R<Option<Plan>> {
    let (lo, hi) = match (ranges.first(), ranges.last()) {
        (Some(f), Some(l)) => (f.0, l.0 + l.1),
        _ => (0, 0),
    };
    let (comm, size, hints, members) = state::with(|st| {
        let f = st.file(id)?;
        Ok((f.comm, st.comm(f.comm)?.size() as usize, f.hints.clone(), f.members.clone()))
    })?;
    let hint = |k: &str| hints.iter().find(|(hk, _)| hk == k).map(|(_, v)| v.clone());
    let enabled = hint("collective_buffering").is_none_or(|v| v != "false");
    let naggr = hint("cb_nodes").and_then(|v| v.parse::<usize>().ok()).unwrap_or(1).clamp(1, size);
    let align = hint("striping_unit").and_then(|v| v.parse::<u64>().ok()).filter(|&a| a > 0).unwrap_or(4096);
    let cb = hint("cb_buffer_size").and_then(|v| v.parse::<u64>().ok()).filter(|&c| c > 0).unwrap_or(16 << 20);
    let file_cluster = hint("gridmpi_file_cluster").map_or(-1, |name| cluster_id(name.trim()));
    let mine = [lo as i64, hi as i64, ranges.len() as i64, atomic as i64, enabled as i64, naggr as i64, align as i64, cb as i64, file_cluster];
    let all = file_allgather(id, &mine)?;
    // Rank 0's settings rule: members given different hints still agree.
    let (enabled, naggr, align, cb, file_cluster) = (all[0][4] != 0, all[0][5] as usize, all[0][6] as u64, all[0][7] as u64, all[0][8]);
    let interleaved = all.iter().any(|v| v[2] > 1);
    if size < 2 || !enabled || !interleaved || all.iter().any(|v| v[3] != 0) {
        return Ok(None);
    }
    let busy = all.iter().filter(|v| v[2] > 0);
    let glo = busy.clone().map(|v| v[0] as u64).min().unwrap_or(0);
    let ghi = busy.map(|v| v[1] as u64).max().unwrap_or(0);
    let domains = aggregate::domains(glo, ghi, naggr, align);
    let aggregator = if members.cluster.iter().any(|&c| c != members.cluster[0]) {
        let (cluster, ids) = crate::clustermap::first_appearance(members.cluster.iter().copied());
        let only = ids.iter().position(|&c| c == file_cluster).map(|i| i as u32);
        let mut mine = vec![0i64; domains.len()];
        for p in aggregate::pieces(ranges, &domains) {
            mine[p.domain] += p.len as i64;
        }
        let bytes: Vec<Vec<u64>> = file_allgather(id, &mine)?.iter().map(|v| v.iter().map(|&b| b as u64).collect()).collect();
        aggregate::cluster_aggregators(&bytes, &cluster, &members.host, only)
    } else {
        (0..domains.len()).map(|k| aggregate::aggregator(k, domains.len(), size)).collect()
    };
    Ok(Some(Plan { comm, size, domains, aggregator, cb }))
}

impl Plan {
    fn dest(&self, p: &Piece) -> usize {
        self.aggregator[p.domain]
    }

    /// This member's pieces of `ranges`, per round.
    fn rounds(&self, ranges: &[(u64, u64)]) -> Vec<Vec<Piece>> {
        aggregate::rounds(&aggregate::pieces(ranges, &self.domains), &self.domains, self.cb)
    }

    /// The exchange message to each rank: the count and (offset, length)
    /// of the pieces for it, then (writes) their bytes.
    fn messages(&self, ps: &[Piece], data: Option<&[u8]>) -> Outbox {
        let mut by_dest: Vec<Vec<&Piece>> = vec![Vec::new(); self.size];
        for p in ps {
            by_dest[self.dest(p)].push(p);
        }
        let mut out = Outbox::new(self.size);
        for (d, mine) in by_dest.iter().enumerate() {
            if mine.is_empty() {
                continue;
            }
            let m = out.to(d);
            put_u64(m, mine.len() as u64);
            for p in mine {
                put_u64(m, p.off);
                put_u64(m, p.len);
            }
            if let Some(data) = data {
                for p in mine {
                    m.extend_from_slice(&data[p.at as usize..(p.at + p.len) as usize]);
                }
            }
        }
        out
    }
}

/// The messages of one exchange, laid end to end in rank order as the
/// alltoallv sends them (no copy into a send buffer after).
struct Outbox {
    buf: Vec<u8>,
    counts: Vec<i64>,
    /// The rank whose message is being written, and where it starts in `buf`.
    at: usize,
    start: usize,
}

impl Outbox {
    fn new(n: usize) -> Outbox {
        Outbox { buf: Vec::new(), counts: vec![0; n], at: 0, start: 0 }
    }

    /// The buffer to append rank `r`'s message to; ranks in increasing order.
    fn to(&mut self, r: usize) -> &mut Vec<u8> {
        assert!(r >= self.at, "exchange messages are written in rank order");
        self.close();
        self.at = r;
        &mut self.buf
    }

    /// Count what was appended since the last call as the current rank's.
    fn close(&mut self) {
        self.counts[self.at] += (self.buf.len() - self.start) as i64;
        self.start = self.buf.len();
    }
}

/// What an exchange brought: every rank's message, in one buffer.
struct Inbox {
    buf: Vec<u8>,
    displs: Vec<i64>,
    counts: Vec<i64>,
}

impl Inbox {
    fn from(&self, r: usize) -> &[u8] {
        &self.buf[self.displs[r] as usize..(self.displs[r] + self.counts[r]) as usize]
    }
}

fn put_u64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_ne_bytes());
}

fn get_u64(b: &[u8], i: usize) -> u64 {
    u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
}

/// The (offset, length) list at the head of an exchange message, and
/// where the bytes after it start.
fn parse_pieces(m: &[u8]) -> (Vec<(u64, u64)>, usize) {
    if m.is_empty() {
        return (Vec::new(), 0);
    }
    let n = get_u64(m, 0) as usize;
    ((0..n).map(|i| (get_u64(m, 1 + 2 * i), get_u64(m, 2 + 2 * i))).collect(), 8 * (1 + 2 * n))
}

fn rc_err(rc: c_int, what: &str) -> MpiError {
    let class = state::with(|st| Ok(st.errors.class_of(rc).unwrap_or(MPI_ERR_OTHER))).unwrap_or(MPI_ERR_OTHER);
    MpiError { class, msg: what.to_string(), code: Some(rc) }
}

/// Every member sends its message for rank r to rank r and gets what
/// each sent it (an alltoall of sizes, then an alltoallv of bytes, on the
/// file's communicator).
fn exchange(comm: MPI_Comm, mut out: Outbox) -> R<Inbox> {
    out.close();
    let n = out.counts.len();
    let mut recvcounts = vec![0i64; n];
    // SAFETY: buffers of n counts each, alive for the blocking calls.
    let rc = unsafe { PMPI_Alltoall(out.counts.as_ptr() as *const c_void, 1, MPI_INT64_T, recvcounts.as_mut_ptr() as *mut c_void, 1, MPI_INT64_T, comm) };
    if rc != MPI_SUCCESS {
        return Err(rc_err(rc, "the exchange of sizes of collective I/O failed"));
    }
    let displs = |c: &[i64]| -> Vec<i64> {
        c.iter()
            .scan(0i64, |a, &x| {
                let d = *a;
                *a += x;
                Some(d)
            })
            .collect()
    };
    let (sd, rd) = (displs(&out.counts), displs(&recvcounts));
    let rtotal: i64 = recvcounts.iter().sum();
    // Never empty: two empty vectors would share a dangling address.
    out.buf.reserve(1);
    let mut recvbuf = vec![0u8; rtotal.max(1) as usize];
    // SAFETY: as above; the counts and displacements describe the buffers.
    let rc = unsafe {
        PMPI_Alltoallv_c(
            out.buf.as_ptr() as *const c_void,
            out.counts.as_ptr(),
            sd.as_ptr(),
            MPI_BYTE,
            recvbuf.as_mut_ptr() as *mut c_void,
            recvcounts.as_ptr(),
            rd.as_ptr(),
            MPI_BYTE,
            comm,
        )
    };
    if rc != MPI_SUCCESS {
        return Err(rc_err(rc, "the data exchange of collective I/O failed"));
    }
    Ok(Inbox { buf: recvbuf, displs: rd, counts: recvcounts })
}

/// Every member learns whether all of them succeeded; the first failure
/// becomes everyone's error.
fn agree_outcome(id: c_int, outcome: R<()>, what: &str) -> R<()> {
    let codes = file_allgather(id, &[outcome.as_ref().map_or_else(|e| e.class as i64, |_| 0)])?;
    outcome?;
    match codes.iter().position(|v| v[0] != 0) {
        Some(r) => Err(err(codes[r][0] as c_int, format!("rank {r} could not {what} its part of the collective access"))),
        None => Ok(()),
    }
}

/// A collective write, aggregated: in each round, each member sends its
/// pieces to the aggregators of their domains, which write what they got
/// as contiguous runs. False when the members agreed not to aggregate
/// (each writes its own then).
fn two_phase_write(id: c_int, opened: &Opened, atomic: bool, ranges: &[(u64, u64)], data: &[u8]) -> R<bool> {
    let Some(plan) = plan_collective(id, atomic, ranges)? else { return Ok(false) };
    // An aggregator that fails goes on exchanging (the others are in the
    // rounds too) and says so at the end.
    let mut outcome: R<()> = Ok(());
    for ps in plan.rounds(ranges) {
        let got = exchange(plan.comm, plan.messages(&ps, Some(data)))?;
        // The pieces in file order, adjacent ones written together.
        let mut parts: Vec<(u64, &[u8])> = Vec::new();
        for r in 0..plan.size {
            let m = got.from(r);
            let (list, mut at) = parse_pieces(m);
            for (off, len) in list {
                parts.push((off, &m[at..at + len as usize]));
                at += len as usize;
            }
        }
        parts.sort_by_key(|p| p.0);
        let mut i = 0;
        while i < parts.len() && outcome.is_ok() {
            let start = parts[i].0;
            let mut run = parts[i].1.to_vec();
            i += 1;
            while i < parts.len() && parts[i].0 == start + run.len() as u64 {
                run.extend_from_slice(parts[i].1);
                i += 1;
            }
            outcome = access::write_ranges(&opened.file, &[(start, run.len() as u64)], &run).map_err(|e| io_err("cannot write", e));
        }
    }
    agree_outcome(id, outcome, "write")?;
    Ok(true)
}

/// A collective read, aggregated: in each round, the aggregators read the
/// runs the members asked for and send each its pieces. None when the
/// members agreed not to aggregate; else the bytes of this member's access
/// that lie before the end of the file.
fn two_phase_read(id: c_int, opened: &Opened, atomic: bool, ranges: &[(u64, u64)], out: &mut [u8]) -> R<Option<usize>> {
    let Some(plan) = plan_collective(id, atomic, ranges)? else { return Ok(None) };
    let mut outcome: R<()> = Ok(());
    for ps in plan.rounds(ranges) {
        let requests = exchange(plan.comm, plan.messages(&ps, None))?;
        let asked: Vec<Vec<(u64, u64)>> = (0..plan.size).map(|r| parse_pieces(requests.from(r)).0).collect();
        // Read the union of what was asked as runs (zeros past the end).
        let mut wanted: Vec<(u64, u64)> = asked.iter().flatten().copied().collect();
        wanted.sort_unstable();
        let mut runs: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut i = 0;
        while i < wanted.len() {
            let start = wanted[i].0;
            let mut end = start + wanted[i].1;
            i += 1;
            while i < wanted.len() && wanted[i].0 <= end {
                end = end.max(wanted[i].0 + wanted[i].1);
                i += 1;
            }
            let mut buf = vec![0u8; (end - start) as usize];
            if outcome.is_ok() {
                outcome = access::read_ranges(&opened.file, &[(start, end - start)], &mut buf).map(|_| ()).map_err(|e| io_err("cannot read", e));
            }
            runs.push((start, buf));
        }
        let mut replies = Outbox::new(plan.size);
        for (r, list) in asked.iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            let m = replies.to(r);
            for &(off, len) in list {
                let k = runs.partition_point(|r| r.0 <= off) - 1;
                let (start, buf) = &runs[k];
                m.extend_from_slice(&buf[(off - start) as usize..(off - start + len) as usize]);
            }
        }
        let back = exchange(plan.comm, replies)?;
        let mut used = vec![0usize; plan.size];
        for p in &ps {
            let d = plan.dest(p);
            out[p.at as usize..(p.at + p.len) as usize].copy_from_slice(&back.from(d)[used[d]..used[d] + p.len as usize]);
            used[d] += p.len as usize;
        }
    }
    agree_outcome(id, outcome, "read")?;
    // This member's bytes before the end of the file, as a read of its own would stop.
    let size = opened.file.metadata().map_err(|e| io_err("cannot stat the file", e))?.len();
    let mut got = 0u64;
    for &(off, len) in ranges {
        let n = len.min(size.saturating_sub(off));
        got += n;
        if n < len {
            break;
        }
    }
    Ok(Some(got as usize))
}

fn shared_of_arc(p: &Result<Arc<SharedPtr>, String>) -> R<Arc<SharedPtr>> {
    p.clone().map_err(|why| err(MPI_ERR_UNSUPPORTED_OPERATION, format!("no shared file pointer: {why}")))
}

/// Where this rank's part of an ordered access starts: an exclusive scan
/// of the members' sizes in rank order, from the shared pointer, which
/// rank 0 moves past them all in one update.
fn ordered_start(id: c_int, shfp: &Result<Arc<SharedPtr>, String>, n: u64) -> R<u64> {
    let all = file_allgather(id, &[n as i64])?;
    let rank = file_rank(id)? as usize;
    let before: u64 = all[..rank].iter().map(|v| v[0] as u64).sum();
    let total: u64 = all.iter().map(|v| v[0] as u64).sum();
    let mut mine: R<u64> = Ok(0);
    if rank == 0 {
        mine = shared_of_arc(shfp).and_then(|p| p.fetch_add(total).map_err(|e| io_err("cannot update the shared file pointer", e)));
    }
    let base = file_allgather(id, &[mine.as_ref().map_or(-1, |&b| b as i64)])?[0][0];
    mine?;
    if base < 0 {
        return Err(err(MPI_ERR_UNSUPPORTED_OPERATION, "rank 0 could not update the shared file pointer"));
    }
    Ok(base as u64 + before)
}

/// MPI_File_read, _write, _all, _shared, _ordered (and their `_c` forms).
pub fn file_blocking(name: &'static str, fh: MPI_File, buf: IoBuf, count: i64, datatype: MPI_Datatype, status: *mut MPI_Status, op: IoOp) -> c_int {
    let id = file_id(fh);
    api(name, Target::File(id), || {
        let s = run_access(Access { id, op, offset: 0, buf: buf.0, count, datatype, may_block: true })?;
        // SAFETY: the caller's status, or IGNORE.
        unsafe { put_status(status, &s) };
        Ok(())
    })
}

/// MPI_File_read_at, _write_at, _at_all (and their `_c` forms).
#[allow(clippy::too_many_arguments)]
pub fn file_blocking_at(name: &'static str, fh: MPI_File, offset: MPI_Offset, buf: IoBuf, count: i64, datatype: MPI_Datatype, status: *mut MPI_Status, op: IoOp) -> c_int {
    let id = file_id(fh);
    api(name, Target::File(id), || {
        let s = run_access(Access { id, op, offset, buf: buf.0, count, datatype, may_block: true })?;
        // SAFETY: as above.
        unsafe { put_status(status, &s) };
        Ok(())
    })
}

fn completed_request(request: *mut MPI_Request, s: MPI_Status) -> R<()> {
    let h = state::with(|st| Ok(st.reqs.insert(ReqEntry::Done { status: s })))?;
    // SAFETY: checked non-null by the caller.
    unsafe { *request = h };
    Ok(())
}

/// MPI_File_iread, _iwrite, _all, _shared: done in the call, the request
/// complete (MPI 4.1, 14.4.3 allows it).
pub fn file_inonblocking(name: &'static str, fh: MPI_File, buf: IoBuf, count: i64, datatype: MPI_Datatype, request: *mut MPI_Request, op: IoOp) -> c_int {
    let id = file_id(fh);
    api(name, Target::File(id), || {
        check_ptr(request, "request")?;
        let s = run_access(Access { id, op, offset: 0, buf: buf.0, count, datatype, may_block: false })?;
        completed_request(request, s)
    })
}

/// MPI_File_iread_at, _iwrite_at, _at_all.
#[allow(clippy::too_many_arguments)]
pub fn file_inonblocking_at(name: &'static str, fh: MPI_File, offset: MPI_Offset, buf: IoBuf, count: i64, datatype: MPI_Datatype, request: *mut MPI_Request, op: IoOp) -> c_int {
    let id = file_id(fh);
    api(name, Target::File(id), || {
        check_ptr(request, "request")?;
        let s = run_access(Access { id, op, offset, buf: buf.0, count, datatype, may_block: false })?;
        completed_request(request, s)
    })
}

fn begin(id: c_int, a: Access) -> R<()> {
    let op = a.op;
    state::with(|st| match st.file(id)?.split {
        Some((active, _)) => Err(err(MPI_ERR_OTHER, format!("a split collective ({active:?}) is already active on this file: end it first"))),
        None => Ok(()),
    })?;
    let s = run_access(a)?;
    state::with(|st| {
        st.file_mut(id)?.split = Some((op, s));
        Ok(())
    })
}

/// MPI_File_read_all_begin and friends: the access is done here.
pub fn file_begin(name: &'static str, fh: MPI_File, buf: IoBuf, count: i64, datatype: MPI_Datatype, op: IoOp) -> c_int {
    let id = file_id(fh);
    api(name, Target::File(id), || begin(id, Access { id, op, offset: 0, buf: buf.0, count, datatype, may_block: true }))
}

pub fn file_begin_at(name: &'static str, fh: MPI_File, offset: MPI_Offset, buf: IoBuf, count: i64, datatype: MPI_Datatype, op: IoOp) -> c_int {
    let id = file_id(fh);
    api(name, Target::File(id), || begin(id, Access { id, op, offset, buf: buf.0, count, datatype, may_block: true }))
}

/// MPI_File_read_all_end and friends: the status of the matching begin.
pub fn file_end(name: &'static str, fh: MPI_File, _buf: IoBuf, status: *mut MPI_Status, op: IoOp) -> c_int {
    let id = file_id(fh);
    api(name, Target::File(id), || {
        let s = state::with(|st| {
            let f = st.file_mut(id)?;
            match f.split {
                Some((active, s)) if active == op => {
                    f.split = None;
                    Ok(s)
                }
                Some((active, _)) => Err(err(MPI_ERR_OTHER, format!("the active split collective is {active:?}, not {op:?}"))),
                None => Err(err(MPI_ERR_OTHER, "no split collective is active on this file (call the _begin first)")),
            }
        })?;
        // SAFETY: the caller's status, or IGNORE.
        unsafe { put_status(status, &s) };
        Ok(())
    })
}

// ---- data representations -------------------------------------------------------

unsafe fn register(name: *const c_char, read: Option<Conversion>, write: Option<Conversion>, extent: Option<MPI_Datarep_extent_function>, extra: *mut c_void) -> R<()> {
    let name = read_cstr(name)?;
    let extent = extent.ok_or_else(|| err(MPI_ERR_ARG, "the extent function is NULL"))?;
    datarep::register(UserRep { name, read, write, extent, extra })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Register_datarep(
    datarep: *const c_char,
    read_conversion_fn: Option<MPI_Datarep_conversion_function>,
    write_conversion_fn: Option<MPI_Datarep_conversion_function>,
    dtype_file_extent_fn: Option<MPI_Datarep_extent_function>,
    extra_state: *mut c_void,
) -> c_int {
    api("MPI_Register_datarep", Target::File(0), || {
        register(datarep, read_conversion_fn.map(Conversion::Int), write_conversion_fn.map(Conversion::Int), dtype_file_extent_fn, extra_state)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Register_datarep_c(
    datarep: *const c_char,
    read_conversion_fn: Option<MPI_Datarep_conversion_function_c>,
    write_conversion_fn: Option<MPI_Datarep_conversion_function_c>,
    dtype_file_extent_fn: Option<MPI_Datarep_extent_function>,
    extra_state: *mut c_void,
) -> c_int {
    api("MPI_Register_datarep_c", Target::File(0), || {
        register(datarep, read_conversion_fn.map(Conversion::Large), write_conversion_fn.map(Conversion::Large), dtype_file_extent_fn, extra_state)
    })
}

// ---- error handlers and handle conversion ----------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_call_errhandler(fh: MPI_File, errorcode: c_int) -> c_int {
    let id = file_id(fh);
    let known = state::with(|st| {
        if id != 0 {
            st.file(id)?;
        }
        Ok((st.errors.class_of(errorcode).unwrap_or(MPI_ERR_OTHER), st.errors.string_of(errorcode).unwrap_or_default()))
    });
    match known {
        Err(e) => state::report("MPI_File_call_errhandler", Target::File(0), e),
        Ok((class, msg)) => {
            state::report("MPI_File_call_errhandler", Target::File(id), MpiError { class, msg, code: Some(errorcode) });
            MPI_SUCCESS
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_c2f(file: MPI_File) -> MPI_Fint {
    file_id(file)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_f2c(file: MPI_Fint) -> MPI_File {
    file_ptr(file)
}

/// Written out: its errors go to MPI_FILE_NULL's handler, which the
/// generator knows nothing of.
#[no_mangle]
pub unsafe extern "C" fn PMPI_File_create_errhandler(file_errhandler_fn: Option<MPI_File_errhandler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    api("MPI_File_create_errhandler", Target::File(0), || {
        check_ptr(errhandler, "errhandler")?;
        let f = file_errhandler_fn.ok_or_else(|| err(MPI_ERR_ARG, "the handler function is NULL"))?;
        *errhandler = super::errh::new_errhandler(ErrhFunc::File(f));
        Ok(())
    })
}

// The queries of a file, its infos and error handlers and MPI_File_sync
// are generated from abi/functions.txt; these are their implementations.

pub(crate) fn file_get_group(st: &mut State, fh: MPI_File) -> R<MPI_Group> {
    let c = st.file(file_id(fh))?.comm;
    let g = (*st.comm(c)?.group).clone();
    Ok(st.new_group(g))
}

pub(crate) fn file_get_amode(st: &mut State, fh: MPI_File) -> R<c_int> {
    Ok(st.file(file_id(fh))?.opened.amode)
}

pub(crate) fn file_get_atomicity(st: &mut State, fh: MPI_File) -> R<c_int> {
    Ok(st.file(file_id(fh))?.atomic as c_int)
}

pub(crate) fn file_get_position(st: &mut State, fh: MPI_File) -> R<MPI_Offset> {
    Ok(st.file(file_id(fh))?.pos as MPI_Offset)
}

pub(crate) fn file_get_size(fh: MPI_File) -> R<MPI_Offset> {
    let opened = state::with(|st| Ok(st.file(file_id(fh))?.opened.clone()))?;
    Ok(opened.file.metadata().map_err(|e| io_err("cannot stat the file", e))?.len() as MPI_Offset)
}

pub(crate) fn file_get_info(st: &mut State, fh: MPI_File) -> R<MPI_Info> {
    Ok(super::info::new_info(Info { entries: st.file(file_id(fh))?.hints.clone() }))
}

/// The info's entries are read first, without the lock: MPI_INFO_ENV's
/// look at the state.
pub(crate) fn file_set_info(fh: MPI_File, info: MPI_Info) -> R<()> {
    let given = super::info::info_entries_or_empty(info)?;
    state::with(|st| Ok(merge_hints(&mut st.file_mut(file_id(fh))?.hints, given)))
}

pub(crate) fn file_get_byte_offset(st: &mut State, fh: MPI_File, offset: MPI_Offset) -> R<MPI_Offset> {
    if offset < 0 {
        return Err(err(MPI_ERR_ARG, format!("invalid offset {offset} (must not be negative)")));
    }
    let v = &st.file(file_id(fh))?.view;
    Ok(v.map.file_offset(offset as u64 * v.map.esize) as MPI_Offset)
}

pub(crate) fn file_sync(fh: MPI_File) -> R<()> {
    let opened = state::with(|st| Ok(st.file(file_id(fh))?.opened.clone()))?;
    if opened.amode & MPI_MODE_RDONLY != 0 {
        return Ok(());
    }
    opened.file.sync_all().map_err(|e| io_err("cannot sync the file", e))
}

/// MPI_FILE_NULL has a handler of its own: that of files failing to open.
fn errh_slot(st: &mut State, fh: MPI_File) -> R<&mut MPI_Errhandler> {
    Ok(match file_id(fh) {
        0 => &mut st.file_null_errh,
        id => &mut st.file_mut(id)?.errh,
    })
}

pub(crate) fn file_set_errhandler(st: &mut State, fh: MPI_File, errhandler: MPI_Errhandler) -> R<()> {
    super::errh::check_errhandler(errhandler, super::errh::ErrhKind::File)?;
    super::errh::replace_errhandler(errh_slot(st, fh)?, errhandler);
    Ok(())
}

/// The returned handle is a new reference the user frees.
pub(crate) fn file_get_errhandler(st: &mut State, fh: MPI_File) -> R<MPI_Errhandler> {
    let h = *errh_slot(st, fh)?;
    super::errh::retain_errhandler(h);
    Ok(h)
}


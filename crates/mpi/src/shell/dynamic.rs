//! Dynamic process management (MPI 4.1 chapter 11): ports, accept and
//! connect, join, spawn, the name service, the parent of spawned processes.
//!
//! Every way of joining two groups ends in [`join_groups`]: the members
//! agree on a context-id proposal, the root makes the exchange with the
//! other group's root (port.rs), tells its members what the other group
//! is, every member makes those processes its peers (`Runtime::join_world`)
//! and builds the intercommunicator, and only when both groups have done
//! so (READY) does anyone return, so no process is called by one it does
//! not know yet.

use super::*;
use crate::objects::*;
use crate::port::{self, Joined, Offer, Port, PortName};
use crate::state::{self, api, Target};
use gridmpi_engine::sched::CommView;
use gridmpi_transport::tcp::handshake::Keys;
use std::ffi::CStr;

/// The ports this process opened (MPI_Open_port), by name.
#[derive(Default)]
pub struct Ports {
    open: Vec<Port>,
}

/// The parent of a spawned process (MPI_Comm_get_parent): the handle and
/// context of the intercommunicator, so that a freed and reused handle is
/// not taken for it.
#[derive(Clone, Copy, Default)]
pub struct Parent {
    pub comm: Option<(MPI_Comm, u32)>,
}

/// Run the progress engine (what the root does while it waits on the other
/// group's root).
fn idle() -> Result<(), String> {
    state::with(|st| st.progress().map(|_| ())).map_err(|e| e.msg)
}

/// Bytes through a bcast of i32 words from `root`: first the status (0:
/// go on) and length, then the bytes.
fn bcast_bytes(view: &CommView, tag: i32, root: i32, status: i32, bytes: &[u8]) -> R<(i32, Vec<u8>)> {
    let mut head = [status, bytes.len() as i32];
    super::comm::bcast(view.clone(), tag, &mut head, root)?;
    let len = head[1].max(0) as usize;
    let mut words = vec![0i32; len.div_ceil(4)];
    if view.rank == root {
        for (w, c) in words.iter_mut().zip(bytes.chunks(4)) {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            *w = i32::from_le_bytes(b);
        }
    }
    super::comm::bcast(view.clone(), tag, &mut words, root)?;
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    out.truncate(len);
    Ok((head[0], out))
}

/// What a root tells its members about the other group.
fn encode_joined(j: &Joined) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&j.keys.job.to_le_bytes());
    b.extend_from_slice(&j.keys.secret);
    b.extend_from_slice(&j.theirs.encode());
    b
}

fn decode_joined(b: &[u8]) -> Option<(Keys, Offer)> {
    if b.len() < 40 {
        return None;
    }
    let job = u64::from_le_bytes(b[..8].try_into().ok()?);
    let secret: [u8; 32] = b[8..40].try_into().ok()?;
    Some((Keys { job, secret }, Offer::decode(&b[40..])?))
}

/// Join the members of the intracommunicator `comm` with another group:
/// `exchange` runs at `root` only, given our group's offer. Collective over
/// `comm`; returns the intercommunicator.
fn join_groups(comm: MPI_Comm, root: i32, err_class: c_int, exchange: impl FnOnce(&Offer) -> Result<Joined, String>) -> R<MPI_Comm> {
    let (view, tag, pids, proposal) = state::with(|st| {
        let proposal = st.next_ctx;
        let c = st.comm_mut(comm)?;
        if c.is_inter() {
            return Err(err(MPI_ERR_COMM, "the communicator must be an intracommunicator"));
        }
        if root < 0 || root >= c.size() {
            return Err(err(MPI_ERR_ROOT, format!("invalid root {root} (the communicator has {} processes)", c.size())));
        }
        let tag = c.next_coll_tag();
        Ok((super::env::coll_view(c), tag, c.group.pids.clone(), proposal))
    })?;
    let mut ctx = [proposal];
    super::comm::allreduce_max(view.clone(), tag, &mut ctx)?;
    // The root makes the exchange; everyone learns how it went.
    let mut joined = None;
    let (status, bytes) = if view.rank == root {
        let offer = state::with(|st| st.rt.describe(&pids).map_err(|e| err(err_class, e)))?;
        match exchange(&Offer { ctx: ctx[0], procs: offer }) {
            Ok(j) => {
                let b = encode_joined(&j);
                joined = Some(j);
                bcast_bytes(&view, tag, root, 0, &b)?
            }
            Err(why) => bcast_bytes(&view, tag, root, 1, why.as_bytes())?,
        }
    } else {
        bcast_bytes(&view, tag, root, 0, &[])?
    };
    if status != 0 {
        let why = String::from_utf8_lossy(&bytes);
        return Err(err(err_class, if view.rank == root { why.into_owned() } else { format!("the root (rank {root}) failed: {why}") }));
    }
    let (keys, theirs) = decode_joined(&bytes).ok_or_else(|| err(MPI_ERR_INTERN, "the root sent a malformed description of the other group"))?;
    let ctx = ctx[0].max(theirs.ctx);
    let newcomm = state::with(|st| {
        let remote = st.rt.join_world(&theirs.procs, &keys).map_err(|e| err(err_class, e))?;
        st.next_ctx = st.next_ctx.max(ctx + 4);
        let l = st.comm(comm)?;
        let mut c = Comm::new(ctx, l.group.clone(), l.rank, MPI_ERRORS_ARE_FATAL);
        c.remote = Some(Arc::new(Group::new(remote)));
        c.local_ctx = Some(ctx + 2);
        st.add_comm(comm, c, false)
    })?;
    // Everyone here knows the other group: say so, and wait for the same word.
    let mut dummy = [0u32];
    super::comm::allreduce_max(view.clone(), tag, &mut dummy)?;
    let ready = match joined {
        Some(j) => j.ready(&mut idle).err(),
        None => None,
    };
    let (status, why) = bcast_bytes(&view, tag, root, ready.is_some() as i32, ready.unwrap_or_default().as_bytes())?;
    if status != 0 {
        return Err(err(err_class, format!("the other group did not finish joining: {}", String::from_utf8_lossy(&why))));
    }
    Ok(newcomm)
}

unsafe fn c_str(p: *const c_char, what: &str) -> R<String> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    Ok(CStr::from_ptr(p).to_string_lossy().into_owned())
}

/// Copy `s` into a caller's buffer of `cap` bytes (with its NUL).
unsafe fn put_c_str(dst: *mut c_char, cap: usize, s: &str, what: &str) -> R<()> {
    if dst.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    if s.len() >= cap {
        return Err(err(MPI_ERR_INTERN, format!("{what} needs {} bytes", s.len() + 1)));
    }
    std::ptr::copy_nonoverlapping(s.as_ptr(), dst as *mut u8, s.len());
    *dst.add(s.len()) = 0;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Open_port(_info: MPI_Info, port_name: *mut c_char) -> c_int {
    api("MPI_Open_port", Target::NoComm, || {
        check_ptr(port_name, "port_name")?;
        state::with(|st| {
            let addrs = st.rt.cards[st.rt.me as usize].addrs.clone();
            let p = Port::open(&addrs).map_err(|e| err(MPI_ERR_PORT, e))?;
            put_c_str(port_name, MPI_MAX_PORT_NAME as usize, &p.name.format(), "port_name")?;
            st.ports.open.push(p);
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Close_port(port_name: *const c_char) -> c_int {
    api("MPI_Close_port", Target::NoComm, || {
        let name = c_str(port_name, "port_name")?;
        let parsed = PortName::parse(&name).map_err(|e| err(MPI_ERR_PORT, e))?;
        state::with(|st| {
            let i = st.ports.open.iter().position(|p| p.name == parsed).ok_or_else(|| err(MPI_ERR_PORT, "this process has no open port of that name"))?;
            st.ports.open.remove(i);
            Ok(())
        })
    })
}

/// Accept at the port `name` (open in this process): the root's exchange.
fn accept_at(name: &str, offer: &Offer) -> Result<Joined, String> {
    let parsed = PortName::parse(name)?;
    // The port stays in the table while we wait (another thread may close
    // it: then our wait ends with an error); we wait on a clone of it.
    let (port, debug) = state::with(|st| {
        let p = st.ports.open.iter().find(|p| p.name == parsed).ok_or_else(|| err(MPI_ERR_PORT, "this process has no open port of that name (MPI_Open_port)"))?;
        let debug = st.rt.config.text("GRIDMPI_DEBUG").split(',').any(|x| x == "conn" || x == "all");
        Ok((p.try_clone().map_err(|e| err(MPI_ERR_PORT, e))?, debug))
    })
    .map_err(|e| e.msg)?;
    port.accept(offer, &mut idle, debug)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_accept(port_name: *const c_char, _info: MPI_Info, root: c_int, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    api("MPI_Comm_accept", Target::Comm(comm), || {
        check_ptr(newcomm, "newcomm")?;
        // The name matters at the root only.
        let am_root = state::with(|st| Ok(st.comm(comm)?.rank == root))?;
        let name = if am_root { c_str(port_name, "port_name")? } else { String::new() };
        *newcomm = join_groups(comm, root, MPI_ERR_PORT, |offer| accept_at(&name, offer))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_connect(port_name: *const c_char, _info: MPI_Info, root: c_int, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    api("MPI_Comm_connect", Target::Comm(comm), || {
        check_ptr(newcomm, "newcomm")?;
        let am_root = state::with(|st| Ok(st.comm(comm)?.rank == root))?;
        let name = if am_root { c_str(port_name, "port_name")? } else { String::new() };
        *newcomm = join_groups(comm, root, MPI_ERR_PORT, |offer| {
            let parsed = PortName::parse(&name)?;
            port::connect(&parsed, offer, &mut idle)
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_join(fd: c_int, intercomm: *mut MPI_Comm) -> c_int {
    api("MPI_Comm_join", Target::Comm(MPI_COMM_SELF), || {
        check_ptr(intercomm, "intercomm")?;
        if fd < 0 {
            return Err(err(MPI_ERR_ARG, format!("invalid socket {fd}")));
        }
        *intercomm = join_groups(MPI_COMM_SELF, 0, MPI_ERR_OTHER, |offer| port::join(fd, offer, &mut idle))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    api("MPI_Comm_get_parent", Target::NoComm, || {
        check_ptr(parent, "parent")?;
        *parent = state::with(|st| {
            Ok(match st.parent.comm {
                Some((h, ctx)) if st.comms.get(h).is_some_and(|c| c.ctx == ctx) => h,
                _ => MPI_COMM_NULL,
            })
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    api("MPI_Comm_disconnect", Target::NoComm, || {
        check_ptr(comm, "comm")?;
        let h = *comm;
        if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
            return Err(err(MPI_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected"));
        }
        state::with(|st| st.comm(h).map(|_| ()))?;
        // Collective: when every member is here, what they sent on it
        // before has been matched or is on its way; then it is freed.
        let rc = super::PMPI_Barrier(h);
        if rc != MPI_SUCCESS {
            return Err(err(rc, "the barrier of the disconnect failed"));
        }
        let rc = super::comm::PMPI_Comm_free(comm);
        if rc != MPI_SUCCESS {
            return Err(err(rc, "freeing the communicator failed"));
        }
        Ok(())
    })
}

/// At MPI_Init of a spawned process: connect to the parent's port
/// (GRIDMPI_PARENT_PORT, given by the launcher) over MPI_COMM_WORLD.
pub fn connect_to_parent() -> R<()> {
    let Ok(name) = std::env::var("GRIDMPI_PARENT_PORT") else { return Ok(()) };
    let parsed = PortName::parse(&name).map_err(|e| err(MPI_ERR_SPAWN, format!("GRIDMPI_PARENT_PORT: {e}")))?;
    let c = join_groups(MPI_COMM_WORLD, 0, MPI_ERR_SPAWN, |offer| port::connect(&parsed, offer, &mut idle))?;
    state::with(|st| {
        let ctx = st.comm(c)?.ctx;
        st.comm_mut(c)?.name = "MPI_COMM_PARENT".into();
        st.parent.comm = Some((c, ctx));
        Ok(())
    })
}

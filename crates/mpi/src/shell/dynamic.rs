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
use gridmpi_pmi::SpawnApp;
use gridmpi_transport::tcp::handshake::Keys;

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

/// The collective view and a fresh tag of the intracommunicator `comm`,
/// after checking `root`.
fn coll_setup(comm: MPI_Comm, root: i32) -> R<(CommView, i32)> {
    state::with(|st| {
        let c = st.comm_mut(comm)?;
        if c.is_inter() {
            return Err(err(MPI_ERR_COMM, "the communicator must be an intracommunicator"));
        }
        if root < 0 || root >= c.size() {
            return Err(err(MPI_ERR_ROOT, format!("invalid root {root} (the communicator has {} processes)", c.size())));
        }
        let tag = c.next_coll_tag();
        Ok((super::env::coll_view(c), tag))
    })
}

/// Join the members of the intracommunicator `comm` with another group:
/// `exchange` runs at `root` only, given our group's offer. Collective over
/// `comm`; returns the intercommunicator.
fn join_groups(comm: MPI_Comm, root: i32, err_class: c_int, exchange: impl FnOnce(&Offer) -> Result<Joined, String>) -> R<MPI_Comm> {
    let (view, tag) = coll_setup(comm, root)?;
    // The proposal is reserved at once: another thread of this process
    // joining at the same time (mpi4py's pools spawn from threads) must not
    // propose it too, or both intercommunicators could get one context.
    let (pids, proposal) = state::with(|st| {
        let pids = st.comm(comm)?.group.pids.clone();
        let proposal = st.next_ctx;
        st.next_ctx += 4;
        Ok((pids, proposal))
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

/// A string argument, its name in the error when it is NULL.
unsafe fn c_str(p: *const c_char, what: &str) -> R<String> {
    check_ptr(p, what)?;
    read_cstr(p)
}

/// Copy `s` into a caller's buffer of `cap` bytes (with its NUL); a port
/// name cut short would be useless, so one that does not fit is an error.
unsafe fn put_c_str(dst: *mut c_char, cap: usize, s: &str, what: &str) -> R<()> {
    check_ptr(dst, what)?;
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

/// Whether GRIDMPI_DEBUG asks for connection messages.
fn debug_conn(st: &state::State) -> bool {
    crate::runtime::debug_channel(&st.rt.config, "conn")
}

/// Accept at the port `name` (open in this process): the root's exchange.
fn accept_at(name: &str, offer: &Offer) -> Result<Joined, String> {
    let parsed = PortName::parse(name)?;
    // The port stays in the table while we wait (another thread may close
    // it: then our wait ends with an error); we wait on a clone of it.
    let (port, debug) = state::with(|st| {
        let p = st.ports.open.iter().find(|p| p.name == parsed).ok_or_else(|| err(MPI_ERR_PORT, "this process has no open port of that name (MPI_Open_port)"))?;
        Ok((p.try_clone().map_err(|e| err(MPI_ERR_PORT, e))?, debug_conn(st)))
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
pub unsafe extern "C" fn PMPI_Comm_connect(port_name: *const c_char, info: MPI_Info, root: c_int, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    api("MPI_Comm_connect", Target::Comm(comm), || {
        check_ptr(newcomm, "newcomm")?;
        let am_root = state::with(|st| Ok(st.comm(comm)?.rank == root))?;
        let name = if am_root { c_str(port_name, "port_name")? } else { String::new() };
        // How long the root waits for an MPI_Comm_accept: the info key
        // `timeout` (seconds, as MPICH reads it), else the setting.
        let patience = if am_root { connect_patience(info)? } else { None };
        *newcomm = join_groups(comm, root, MPI_ERR_PORT, |offer| {
            let parsed = PortName::parse(&name)?;
            port::connect(&parsed, offer, &mut idle, patience)
        })?;
        Ok(())
    })
}

/// How long MPI_Comm_connect's root waits for an accept; None: for ever.
fn connect_patience(info: MPI_Info) -> R<Option<std::time::Duration>> {
    let given = if info == MPI_INFO_NULL { None } else { super::info::info_value(info, "timeout")? };
    let t = match given {
        Some(v) => {
            let secs: f64 = v.trim().parse().map_err(|_| err(MPI_ERR_INFO_VALUE, format!("info key timeout: {v:?} is not a number of seconds")))?;
            if !secs.is_finite() || secs < 0.0 {
                return Err(err(MPI_ERR_INFO_VALUE, format!("info key timeout: {v:?} is not a number of seconds")));
            }
            std::time::Duration::from_secs_f64(secs)
        }
        None => state::with(|st| Ok(st.rt.config.get_duration("GRIDMPI_CONNECT_TIMEOUT")))?,
    };
    Ok((!t.is_zero()).then_some(t))
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

// MPI_Comm_get_parent and MPI_Comm_disconnect are generated from
// abi/functions.txt; these are their implementations.

pub(crate) fn comm_get_parent(st: &mut State) -> R<MPI_Comm> {
    Ok(match st.parent.comm {
        Some((h, ctx)) if st.comms.get(h).is_some_and(|c| c.ctx == ctx) => h,
        _ => MPI_COMM_NULL,
    })
}

pub(crate) fn comm_disconnect(h: MPI_Comm) -> R<MPI_Comm> {
    if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
        return Err(err(MPI_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected"));
    }
    state::with(|st| st.comm(h).map(|_| ()))?;
    // Collective: when every member is here, what they sent on it
    // before has been matched or is on its way; then it is freed.
    // SAFETY: no pointer is passed.
    let rc = unsafe { super::PMPI_Barrier(h) };
    if rc != MPI_SUCCESS {
        return Err(err(rc, "the barrier of the disconnect failed"));
    }
    super::comm::comm_free(h)
}

/// The strings of a NULL-terminated C array (an argv); NULL is none.
unsafe fn c_strings(v: *const *mut c_char, what: &str) -> R<Vec<String>> {
    const MAX: usize = 1 << 16;
    let mut out = Vec::new();
    if v.is_null() {
        return Ok(out);
    }
    while !(*v.add(out.len())).is_null() {
        if out.len() == MAX {
            return Err(err(MPI_ERR_ARG, format!("{what} has no NULL terminator within {MAX} strings")));
        }
        out.push(read_cstr(*v.add(out.len()))?);
    }
    Ok(out)
}

/// Read one program of a spawn from the root's arguments.
unsafe fn spawn_app(i: usize, command: *const c_char, argv: *const *mut c_char, maxprocs: c_int, info: MPI_Info) -> R<SpawnApp> {
    let command = c_str(command, &format!("command {i}"))?;
    if command.trim().is_empty() {
        return Err(err(MPI_ERR_SPAWN, format!("command {i} is empty")));
    }
    if maxprocs <= 0 {
        return Err(err(MPI_ERR_SPAWN, format!("maxprocs {maxprocs} of command {i} ({command}) must be positive")));
    }
    let args = c_strings(argv, &format!("argv {i}"))?;
    let info = info_entries_or_empty(info)?;
    Ok(SpawnApp { command, args, maxprocs: maxprocs as u32, info })
}

/// MPI_Comm_spawn(_multiple): `read` gives the programs at the root. The
/// root opens a port of its own, asks the process manager to start the
/// programs with the port's name (GRIDMPI_PARENT_PORT), and accepts them:
/// they connect over their MPI_COMM_WORLD in MPI_Init (connect_to_parent).
unsafe fn spawn(comm: MPI_Comm, root: i32, errcodes: *mut c_int, read: impl FnOnce() -> R<Vec<SpawnApp>>) -> R<MPI_Comm> {
    let (view, tag) = coll_setup(comm, root)?;
    // The root reads the programs and tells everyone how many processes
    // they are (the length of array_of_errcodes) or why it cannot start them.
    let mut apps = None;
    let (class, bytes) = if view.rank == root {
        let counted = read().and_then(|a| {
            let total: u64 = a.iter().map(|a| a.maxprocs as u64).sum();
            let total = u32::try_from(total).map_err(|_| err(MPI_ERR_SPAWN, format!("{total} processes are too many")))?;
            Ok((a, total))
        });
        match counted {
            Ok((a, total)) => {
                apps = Some(a);
                bcast_bytes(&view, tag, root, 0, &total.to_le_bytes())?
            }
            Err(e) => bcast_bytes(&view, tag, root, e.class, e.msg.as_bytes())?,
        }
    } else {
        bcast_bytes(&view, tag, root, 0, &[])?
    };
    if class != 0 {
        let why = String::from_utf8_lossy(&bytes);
        return Err(err(class, if view.rank == root { why.into_owned() } else { format!("the root (rank {root}) failed: {why}") }));
    }
    let total = u32::from_le_bytes(bytes.get(..4).and_then(|b| b.try_into().ok()).ok_or_else(|| err(MPI_ERR_INTERN, "the root sent a malformed process count"))?);
    let set_codes = |code: c_int| {
        if !errcodes.is_null() {
            for i in 0..total as usize {
                *errcodes.add(i) = code;
            }
        }
    };
    let joined = join_groups(comm, root, MPI_ERR_SPAWN, |offer| {
        let apps = apps.take().unwrap_or_default();
        let (port, debug) = state::with(|st| {
            let addrs = st.rt.cards[st.rt.me as usize].addrs.clone();
            Ok((Port::open(&addrs).map_err(|e| err(MPI_ERR_SPAWN, e))?, debug_conn(st)))
        })
        .map_err(|e| e.msg)?;
        let env = [("GRIDMPI_PARENT_PORT".to_string(), port.name.format())];
        state::with(|st| st.rt.pmi.spawn(&apps, &env).map_err(|e| err(MPI_ERR_SPAWN, e.to_string()))).map_err(|e| e.msg)?;
        port.accept(offer, &mut idle, debug)
    });
    match joined {
        Ok(c) => {
            set_codes(MPI_SUCCESS);
            Ok(c)
        }
        Err(e) => {
            set_codes(e.class);
            Err(e)
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_spawn(command: *const c_char, argv: *mut *mut c_char, maxprocs: c_int, info: MPI_Info, root: c_int, comm: MPI_Comm, intercomm: *mut MPI_Comm, array_of_errcodes: *mut c_int) -> c_int {
    api("MPI_Comm_spawn", Target::Comm(comm), || {
        check_ptr(intercomm, "intercomm")?;
        *intercomm = spawn(comm, root, array_of_errcodes, || Ok(vec![spawn_app(0, command, argv, maxprocs, info)?]))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    api("MPI_Comm_spawn_multiple", Target::Comm(comm), || {
        check_ptr(intercomm, "intercomm")?;
        *intercomm = spawn(comm, root, array_of_errcodes, || {
            if count <= 0 {
                return Err(err(MPI_ERR_ARG, format!("count {count} must be positive")));
            }
            check_ptr(array_of_commands, "array_of_commands")?;
            check_ptr(array_of_maxprocs, "array_of_maxprocs")?;
            check_ptr(array_of_info, "array_of_info")?;
            (0..count as usize)
                .map(|i| {
                    let argv = if array_of_argv.is_null() { std::ptr::null_mut() } else { *array_of_argv.add(i) };
                    spawn_app(i, *array_of_commands.add(i), argv, *array_of_maxprocs.add(i), *array_of_info.add(i))
                })
                .collect()
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Publish_name(service_name: *const c_char, _info: MPI_Info, port_name: *const c_char) -> c_int {
    api("MPI_Publish_name", Target::NoComm, || {
        let service = c_str(service_name, "service_name")?;
        let port = c_str(port_name, "port_name")?;
        state::with(|st| st.rt.pmi.publish_name(&service, &port).map_err(|e| err(MPI_ERR_SERVICE, format!("cannot publish {service}: {e}"))))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpublish_name(service_name: *const c_char, _info: MPI_Info, port_name: *const c_char) -> c_int {
    api("MPI_Unpublish_name", Target::NoComm, || {
        let service = c_str(service_name, "service_name")?;
        c_str(port_name, "port_name")?;
        state::with(|st| st.rt.pmi.unpublish_name(&service).map_err(|e| err(MPI_ERR_SERVICE, format!("cannot unpublish {service}: {e}"))))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Lookup_name(service_name: *const c_char, _info: MPI_Info, port_name: *mut c_char) -> c_int {
    api("MPI_Lookup_name", Target::NoComm, || {
        let service = c_str(service_name, "service_name")?;
        check_ptr(port_name, "port_name")?;
        let found = state::with(|st| st.rt.pmi.lookup_name(&service).map_err(|e| err(MPI_ERR_NAME, format!("cannot look up {service}: {e}"))))?;
        let port = found.ok_or_else(|| err(MPI_ERR_NAME, format!("no port is published as {service}")))?;
        put_c_str(port_name, MPI_MAX_PORT_NAME as usize, &port, "port_name")
    })
}

/// At MPI_Init of a spawned process: connect to the parent's port
/// (GRIDMPI_PARENT_PORT, given by the launcher) over MPI_COMM_WORLD.
pub fn connect_to_parent() -> R<()> {
    let Ok(name) = std::env::var("GRIDMPI_PARENT_PORT") else { return Ok(()) };
    let parsed = PortName::parse(&name).map_err(|e| err(MPI_ERR_SPAWN, format!("GRIDMPI_PARENT_PORT: {e}")))?;
    let c = join_groups(MPI_COMM_WORLD, 0, MPI_ERR_SPAWN, |offer| port::connect(&parsed, offer, &mut idle, None))?;
    state::with(|st| {
        let ctx = st.comm(c)?.ctx;
        st.comm_mut(c)?.name = "MPI_COMM_PARENT".into();
        st.parent.comm = Some((c, ctx));
        Ok(())
    })
}

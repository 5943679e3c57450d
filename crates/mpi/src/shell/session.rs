//! Sessions (MPI 4.1, 11.3): MPI_Session_init and _finalize, process sets
//! and the groups made from them, a session's info, error handler and
//! buffer for buffered sends.
//!
//! A session is a user of the runtime (lifecycle.rs): the first session,
//! or MPI_Init, starts it; the last user to leave tears it down.
//! MPI_Session_init and MPI_Session_finalize are local otherwise (the
//! standard lets finalize synchronize over the session's communicators;
//! GridMPI's does not: their traffic is complete once the program
//! completed its requests, and the last teardown is a barrier). Groups
//! made from a session's process sets (psets.rs), and the communicators
//! made from those groups and from them, remember the session: errors of
//! MPI_Comm_create_from_group go to its handler, and buffered sends on its
//! communicators use its buffer when the communicator has none.

use super::*;
use crate::lifecycle::{self, User};
use crate::objects::*;
use crate::psets::Psets;
use crate::state::{self, api, Target};

/// The info key of MPI_Session_init and MPI_Session_get_info for the
/// thread support level (MPI 4.1, 11.3.1).
const THREAD_LEVEL_KEY: &str = "mpi_thread_support_level";
/// MPICH's name for it (MPI_INFO_ENV's key): accepted and reported too, so
/// programs written against MPICH find it.
const MPICH_THREAD_LEVEL_KEY: &str = "thread_level";
const THREAD_LEVELS: [&str; 4] = ["MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"];

impl State {
    pub fn session(&self, h: MPI_Session) -> R<&SessionEntry> {
        self.sessions.get(h).ok_or_else(|| bad_session(h))
    }

    pub fn session_mut(&mut self, h: MPI_Session) -> R<&mut SessionEntry> {
        self.sessions.get_mut(h).ok_or_else(|| bad_session(h))
    }

    /// The process sets this process sees.
    pub fn psets(&self) -> Psets {
        Psets::new(self.rt.me, self.rt.size, &self.rt.map)
    }
}

fn bad_session(h: MPI_Session) -> crate::errors::MpiError {
    if h == MPI_SESSION_NULL {
        err(MPI_ERR_SESSION, "the session is MPI_SESSION_NULL")
    } else {
        err(MPI_ERR_SESSION, format!("invalid session handle {h:#x}"))
    }
}

/// The thread level a session asks for in its info (MPI_THREAD_SINGLE when
/// it asks for none); an unknown value is an error, as a misspelt level
/// would otherwise go unnoticed.
fn requested_level(info: &[(String, String)]) -> R<c_int> {
    let given = info.iter().find(|(k, _)| k == THREAD_LEVEL_KEY).or_else(|| info.iter().find(|(k, _)| k == MPICH_THREAD_LEVEL_KEY));
    let Some((k, v)) = given else { return Ok(MPI_THREAD_SINGLE) };
    THREAD_LEVELS
        .iter()
        .position(|l| l.eq_ignore_ascii_case(v.trim()))
        .map(|i| i as c_int)
        .ok_or_else(|| err(MPI_ERR_INFO_VALUE, format!("{k} = {v:?} is not a thread level (MPI_THREAD_SINGLE .. MPI_THREAD_MULTIPLE)")))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_init(info: MPI_Info, errhandler: MPI_Errhandler, session: *mut MPI_Session) -> c_int {
    // Errors of this call go to the handler it is given (MPI 4.1, 11.3.1);
    // an invalid handler cannot, so those go to the initial one.
    let target = match super::errh::check_errhandler(errhandler, super::errh::ErrhKind::Session) {
        Ok(()) => Target::Handler(errhandler),
        Err(_) => Target::Handler(MPI_ERRORS_ARE_FATAL),
    };
    api("MPI_Session_init", target, || {
        check_ptr(session, "session")?;
        super::errh::check_errhandler(errhandler, super::errh::ErrhKind::Session)?;
        let hints = super::info::info_entries_or_empty(info)?;
        let level = requested_level(&hints)?;
        lifecycle::join(User::Session)?;
        let h = state::with(|st| {
            super::errh::retain_errhandler(errhandler);
            // Every level is provided: calls are serialised under one lock.
            Ok(st.sessions.insert(SessionEntry { errh: errhandler, thread_level: level, info: hints, bsend: None }))
        });
        let h = match h {
            Ok(h) => h,
            Err(e) => {
                lifecycle::leave(User::Session)?;
                return Err(e);
            }
        };
        *session = h;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_finalize(session: *mut MPI_Session) -> c_int {
    let target = if session.is_null() { Target::NoComm } else { Target::Session(*session) };
    api("MPI_Session_finalize", target, || {
        check_ptr(session, "session")?;
        let h = *session;
        state::with(|st| st.session(h).map(|_| ()))?;
        // Buffered sends from the session's buffer must drain.
        state::wait_until(|st| Ok(st.bsend_pending_done(Some(BufOwner::Session(h)))))?;
        let e = state::with(|st| Ok(st.sessions.remove(h)))?;
        if let Some(e) = e {
            super::errh::release_errhandler(e.errh);
        }
        *session = MPI_SESSION_NULL;
        lifecycle::leave(User::Session)
    })
}

pub(crate) fn session_num_psets(st: &mut State, session: MPI_Session, info: MPI_Info) -> R<c_int> {
    st.session(session)?;
    super::info::info_entries_or_empty(info)?;
    Ok(st.psets().len() as c_int)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_get_nth_pset(session: MPI_Session, info: MPI_Info, n: c_int, pset_len: *mut c_int, pset_name: *mut c_char) -> c_int {
    api("MPI_Session_get_nth_pset", Target::Session(session), || {
        check_ptr(pset_len, "pset_len")?;
        let name = state::with(|st| {
            st.session(session)?;
            super::info::info_entries_or_empty(info)?;
            let p = st.psets();
            let k = p.len();
            let name = usize::try_from(n).ok().and_then(|n| p.name(n));
            name.map(str::to_string)
                .ok_or_else(|| err(MPI_ERR_ARG, format!("there is no process set number {n} (this session has {k}: 0..{})", k - 1)))
        })?;
        // pset_len 0 asks for the length only; otherwise at most pset_len
        // bytes are written, the terminating NUL included. Either way the
        // full length (with the NUL) comes back.
        if *pset_len > 0 {
            check_ptr(pset_name, "pset_name")?;
            write_cstr(pset_name, *pset_len as usize, &name, std::ptr::null_mut());
        } else if *pset_len < 0 {
            return Err(err(MPI_ERR_ARG, format!("invalid pset_len {}", *pset_len)));
        }
        *pset_len = name.len() as c_int + 1;
        Ok(())
    })
}

// MPI_Session_get_pset_info, MPI_Group_from_session_pset and
// MPI_Session_set_errhandler are generated from abi/functions.txt; these
// are their implementations.

fn pset_members(st: &mut State, session: MPI_Session, name: &str) -> R<Vec<gridmpi_engine::Pid>> {
    st.session(session)?;
    st.psets().members(name).map(<[_]>::to_vec).ok_or_else(|| unknown_pset(name))
}

pub(crate) fn session_pset_info(st: &mut State, session: MPI_Session, name: &str) -> R<MPI_Info> {
    let size = pset_members(st, session, name)?.len();
    Ok(super::info::new_info(Info { entries: vec![("mpi_size".into(), size.to_string())] }))
}

pub(crate) fn group_from_pset(st: &mut State, session: MPI_Session, name: &str) -> R<MPI_Group> {
    let pids = pset_members(st, session, name)?;
    Ok(st.new_group(Group { pids, session: Some(session) }))
}

pub(crate) fn session_set_errhandler(st: &mut State, session: MPI_Session, errhandler: MPI_Errhandler) -> R<()> {
    super::errh::check_errhandler(errhandler, super::errh::ErrhKind::Session)?;
    super::errh::replace_errhandler(&mut st.session_mut(session)?.errh, errhandler);
    Ok(())
}

fn unknown_pset(name: &str) -> crate::errors::MpiError {
    err(
        MPI_ERR_ARG,
        format!("there is no process set named {name:?} (MPI_Session_get_nth_pset lists them: mpi://WORLD, mpi://SELF, gridmpi://cluster/NAME...)"),
    )
}

pub(crate) fn session_get_info(st: &mut State, session: MPI_Session) -> R<MPI_Info> {
    let level = st.session(session)?.thread_level;
    let name = THREAD_LEVELS[level as usize];
    Ok(super::info::new_info(Info { entries: vec![(THREAD_LEVEL_KEY.into(), name.into()), (MPICH_THREAD_LEVEL_KEY.into(), name.into())] }))
}

// ---- error handlers ------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_create_errhandler(session_errhandler_fn: Option<MPI_Session_errhandler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    // Allowed before any session exists: the handler is MPI_Session_init's argument.
    api("MPI_Session_create_errhandler", Target::Handler(MPI_ERRORS_ARE_FATAL), || {
        check_ptr(errhandler, "errhandler")?;
        let f = session_errhandler_fn.ok_or_else(|| err(MPI_ERR_ARG, "the handler function is NULL"))?;
        *errhandler = super::errh::new_errhandler(ErrhFunc::Session(f));
        Ok(())
    })
}

pub(crate) fn session_get_errhandler(st: &mut State, session: MPI_Session) -> R<MPI_Errhandler> {
    let h = st.session(session)?.errh;
    // The returned handle is a new reference the user frees.
    super::errh::retain_errhandler(h);
    Ok(h)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Session_call_errhandler(session: MPI_Session, errorcode: c_int) -> c_int {
    // Invoke the handler as if an MPI call on `session` had failed with `errorcode`.
    let known = state::with(|st| st.session(session).map(|_| ()));
    if let Err(e) = known {
        return state::report("MPI_Session_call_errhandler", Target::NoComm, e);
    }
    let (class, msg) = state::with(|st| Ok((st.errors.class_of(errorcode).unwrap_or(MPI_ERR_OTHER), st.errors.string_of(errorcode).unwrap_or_default())))
        .unwrap_or((MPI_ERR_OTHER, String::new()));
    state::report("MPI_Session_call_errhandler", Target::Session(session), crate::errors::MpiError { class, msg, code: Some(errorcode) });
    MPI_SUCCESS
}

// ---- buffered sends ------------------------------------------------------------------

pub(crate) fn session_attach_buffer(name: &'static str, session: MPI_Session, buffer: *mut c_void, size: MPI_Count) -> c_int {
    api(name, Target::Session(session), || {
        let b = super::p2p::new_buffer(buffer, size)?;
        state::with(|st| {
            let e = st.session_mut(session)?;
            if e.bsend.is_some() {
                return Err(err(MPI_ERR_BUFFER, "a buffer is already attached to this session (detach it first)"));
            }
            e.bsend = Some(b);
            Ok(())
        })
    })
}

pub(crate) fn session_detach_buffer(name: &'static str, session: MPI_Session, buffer_addr: *mut c_void, size: CountPtr) -> c_int {
    api(name, Target::Session(session), || {
        check_ptr(buffer_addr, "buffer_addr")?;
        size.check("size")?;
        state::with(|st| st.session(session).map(|_| ()))?;
        state::wait_until(|st| Ok(st.bsend_pending_done(Some(BufOwner::Session(session)))))?;
        let b = state::with(|st| Ok(st.session_mut(session)?.bsend.take()))?;
        // SAFETY: both checked non-null; the caller's variables.
        unsafe { super::p2p::give_back(b, buffer_addr, size) };
        Ok(())
    })
}

pub(crate) fn session_flush_buffer(session: MPI_Session) -> R<()> {
    state::with(|st| st.session(session).map(|_| ()))?;
    state::wait_until(|st| Ok(st.bsend_pending_done(Some(BufOwner::Session(session)))))
}

pub(crate) fn session_iflush_buffer(session: MPI_Session, request: *mut MPI_Request) -> R<()> {
    state::with(|st| st.session(session).map(|_| ()))?;
    super::p2p::iflush(BufOwner::Session(session), MPI_COMM_SELF, request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_levels_from_info() {
        assert_eq!(requested_level(&[]).unwrap(), MPI_THREAD_SINGLE);
        let kv = |v: &str| vec![(THREAD_LEVEL_KEY.to_string(), v.to_string())];
        assert_eq!(requested_level(&kv("MPI_THREAD_MULTIPLE")).unwrap(), MPI_THREAD_MULTIPLE);
        assert_eq!(requested_level(&kv("mpi_thread_funneled")).unwrap(), MPI_THREAD_FUNNELED);
        assert_eq!(requested_level(&kv("multiple")).unwrap_err().class, MPI_ERR_INFO_VALUE);
        let mpich = vec![(MPICH_THREAD_LEVEL_KEY.to_string(), "MPI_THREAD_SERIALIZED".to_string())];
        assert_eq!(requested_level(&mpich).unwrap(), MPI_THREAD_SERIALIZED);
    }
}

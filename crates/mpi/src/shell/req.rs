//! Requests: completion (wait/test families), start, free, cancel, and
//! status queries.

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};
use gridmpi_engine::ReqId;

/// Outcome of looking at one request.
pub enum Poll {
    /// MPI_REQUEST_NULL or an inactive persistent request: an empty status.
    Inactive,
    Pending,
    /// Completed; the handle has been freed (or the persistent request made inactive).
    Done(MPI_Status),
}

impl State {
    /// A receive's status whose MPI_ERROR carries a detailed error code.
    fn recv_status_coded(&mut self, st: &gridmpi_engine::Status) -> MPI_Status {
        let mut s = recv_status(st);
        let detail = match st.error {
            Some(gridmpi_engine::ErrorKind::Truncate) => Some(super::p2p::truncated(st)),
            Some(gridmpi_engine::ErrorKind::Signature) => Some(super::p2p::signature_mismatch(st)),
            _ => None,
        };
        if let Some(e) = detail {
            s.MPI_ERROR = self.errors.code_for(e.class, format!("rank {}: {}", self.rt.me, e.msg));
        }
        s
    }

    /// The communicator whose error handler applies to a request.
    pub fn request_comm(&self, h: MPI_Request) -> MPI_Comm {
        match self.reqs.get(h) {
            Some(ReqEntry::Active { comm, .. }) | Some(ReqEntry::Null { comm, .. }) => *comm,
            Some(ReqEntry::Persistent {
                spec:
                    PersistentSpec::Send { comm, .. }
                    | PersistentSpec::Recv { comm, .. }
                    | PersistentSpec::Coll { comm, .. }
                    | PersistentSpec::Partitioned { comm, .. },
                ..
            }) => *comm,
            Some(ReqEntry::Done { .. }) => MPI_COMM_SELF,
            _ => MPI_COMM_WORLD,
        }
    }

    /// The engine request a handle waits on, if any (for blocking).
    fn engine_req(&self, h: MPI_Request) -> Option<ReqId> {
        match self.reqs.get(h)? {
            ReqEntry::Active { r, .. } | ReqEntry::Greq { r, .. } => Some(*r),
            ReqEntry::Persistent { active, .. } => *active,
            ReqEntry::Null { .. } | ReqEntry::Done { .. } => None,
        }
    }

    /// Complete request `*h` if it is done: free it (or deactivate it) and
    /// return its status.
    pub fn poll_request(&mut self, h: &mut MPI_Request) -> R<Poll> {
        if *h == MPI_REQUEST_NULL {
            return Ok(Poll::Inactive);
        }
        let Some(entry) = self.reqs.get_mut(*h) else {
            return Err(err(MPI_ERR_REQUEST, format!("invalid request handle {:#x}", *h)));
        };
        match entry {
            ReqEntry::Null { kind, .. } => {
                let s = if *kind == ReqKind::Recv { proc_null_status() } else { empty_status() };
                self.reqs.remove(*h);
                *h = MPI_REQUEST_NULL;
                Ok(Poll::Done(s))
            }
            ReqEntry::Done { status } => {
                let s = *status;
                self.reqs.remove(*h);
                *h = MPI_REQUEST_NULL;
                Ok(Poll::Done(s))
            }
            ReqEntry::Active { r, kind, .. } => {
                let (r, kind) = (*r, *kind);
                if self.rt.engine.ft_active() && self.any_source_interrupted(r) {
                    return Err(err(MPIX_ERR_PROC_FAILED_PENDING, format!("rank {}: a process of the communicator failed while this receive from MPI_ANY_SOURCE waited (acknowledge with MPIX_Comm_failure_ack to go on waiting)", self.rt.me)));
                }
                let Some(st) = self.rt.engine.take(r) else { return Ok(Poll::Pending) };
                self.reqs.remove(*h);
                *h = MPI_REQUEST_NULL;
                let mut s = match kind {
                    ReqKind::Recv => self.recv_status_coded(&st),
                    _ => super::sent_status(&st),
                };
                if kind == ReqKind::Coll {
                    if let Some(msg) = self.rt.engine.take_schedule_error(r) {
                        let class = st.error.map_or(MPI_ERR_TRUNCATE, super::error_class);
                        let code = self.errors.code_for(class, format!("collective (rank {}): {msg}", self.rt.me));
                        s.MPI_ERROR = code;
                    }
                }
                Ok(Poll::Done(s))
            }
            ReqEntry::Persistent { active, spec } => {
                let Some(r) = *active else { return Ok(Poll::Inactive) };
                let is_recv = matches!(spec, PersistentSpec::Recv { .. } | PersistentSpec::Partitioned { recv: true, .. });
                let is_coll = matches!(spec, PersistentSpec::Coll { .. });
                let Some(st) = self.rt.engine.take(r) else { return Ok(Poll::Pending) };
                *active = None;
                let mut s = if is_recv { self.recv_status_coded(&st) } else { super::sent_status(&st) };
                if is_coll {
                    if let Some(msg) = self.rt.engine.take_schedule_error(r) {
                        let class = st.error.map_or(MPI_ERR_TRUNCATE, super::error_class);
                        s.MPI_ERROR = self.errors.code_for(class, format!("collective (rank {}): {msg}", self.rt.me));
                    }
                }
                Ok(Poll::Done(s))
            }
            ReqEntry::Greq { r, .. } => {
                let r = *r;
                if !self.rt.engine.is_complete(r) {
                    return Ok(Poll::Pending);
                }
                // Status comes from the user's query function, called by the
                // caller without the lock (see complete_greq).
                Ok(Poll::Pending)
            }
        }
    }
}

/// Generalized requests call user functions; do it without the lock.
/// Returns Some(status) when `*h` is a completed generalized request (now freed).
fn complete_greq(h: &mut MPI_Request) -> R<Option<MPI_Status>> {
    let taken = state::with(|st| {
        let Some(ReqEntry::Greq { r, .. }) = st.reqs.get(*h) else { return Ok(None) };
        let r = *r;
        if !st.rt.engine.is_complete(r) {
            return Ok(None);
        }
        st.rt.engine.take(r);
        match st.reqs.remove(*h) {
            Some(ReqEntry::Greq { query, free, extra, .. }) => Ok(Some((query, free, extra))),
            _ => Ok(None),
        }
    })?;
    let Some((query, free, extra)) = taken else { return Ok(None) };
    *h = MPI_REQUEST_NULL;
    let mut s = empty_status();
    let mut code = MPI_SUCCESS;
    if let Some(q) = query {
        // SAFETY: user callbacks registered with MPI_Grequest_start.
        code = unsafe { q(extra, &mut s) };
    }
    if let Some(f) = free {
        let c = unsafe { f(extra) };
        if code == MPI_SUCCESS {
            code = c;
        }
    }
    if code != MPI_SUCCESS {
        return Err(crate::errors::MpiError { class: MPI_ERR_OTHER, msg: "generalized request callback failed".into(), code: Some(code) });
    }
    Ok(Some(s))
}

fn is_greq(h: MPI_Request) -> bool {
    state::with(|st| Ok(st.is_greq(h))).unwrap_or(false)
}

impl State {
    fn is_greq(&self, h: MPI_Request) -> bool {
        h != MPI_REQUEST_NULL && matches!(self.reqs.get(h), Some(ReqEntry::Greq { .. }))
    }
}

/// Test one request (progressing first). Done(status) or Inactive or Pending.
pub fn test_one(h: &mut MPI_Request) -> R<Poll> {
    if is_greq(*h) {
        state::with(|st| st.progress().map(|_| ()))?;
        return Ok(match complete_greq(h)? {
            Some(s) => Poll::Done(s),
            None => Poll::Pending,
        });
    }
    state::with(|st| {
        let p = st.poll_request(h)?;
        if let Poll::Pending = p {
            st.progress()?;
            return st.poll_request(h);
        }
        Ok(p)
    })
}

/// Wait for one request.
pub fn wait_one(h: &mut MPI_Request) -> R<MPI_Status> {
    let mut out = None;
    state::wait_checked(|st| {
        if st.is_greq(*h) {
            return Ok(true);
        }
        match st.poll_request(h)? {
            Poll::Pending => return Ok(false),
            Poll::Inactive => out = Some(empty_status()),
            Poll::Done(s) => out = Some(s),
        }
        Ok(true)
    })?;
    match out {
        Some(s) => Ok(s),
        None => wait_greq(h),
    }
}

/// Wait for a generalized request; its callbacks run without the lock.
fn wait_greq(h: &mut MPI_Request) -> R<MPI_Status> {
    let r = state::with(|st| Ok(st.engine_req(*h)))?;
    if let Some(r) = r {
        state::wait_until(|st| Ok(st.rt.engine.is_complete(r)))?;
    }
    Ok(complete_greq(h)?.unwrap_or_else(empty_status))
}

fn status_error(s: &MPI_Status) -> R<()> {
    if s.MPI_ERROR != MPI_SUCCESS {
        let class = state::with(|st| Ok(st.errors.class_of(s.MPI_ERROR).unwrap_or(MPI_ERR_OTHER)))?;
        let msg = state::with(|st| Ok(st.errors.string_of(s.MPI_ERROR).unwrap_or_default()))?;
        return Err(crate::errors::MpiError { class, msg, code: Some(s.MPI_ERROR) });
    }
    Ok(())
}

/// The error-handler target of a request (its communicator's handler).
unsafe fn req_target(request: *const MPI_Request) -> Target {
    if request.is_null() {
        return Target::NoComm;
    }
    let h = *request;
    Target::Comm(state::with(|st| Ok(st.request_comm(h))).unwrap_or(MPI_COMM_WORLD))
}

/// The target for an array of requests: the first one's communicator.
unsafe fn reqs_target(count: c_int, reqs: *const MPI_Request) -> Target {
    if count <= 0 || reqs.is_null() {
        return Target::NoComm;
    }
    let hs = std::slice::from_raw_parts(reqs, count as usize);
    match hs.iter().find(|&&h| h != MPI_REQUEST_NULL) {
        Some(h) => req_target(h),
        None => Target::NoComm,
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    api("MPI_Wait", req_target(request), || {
        check_ptr(request, "request")?;
        let s = wait_one(&mut *request)?;
        put_status(status, &s);
        status_error(&s)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    api("MPI_Test", req_target(request), || {
        check_ptr(request, "request")?;
        check_ptr(flag, "flag")?;
        match test_one(&mut *request)? {
            Poll::Pending => *flag = 0,
            Poll::Inactive => {
                *flag = 1;
                put_status(status, &empty_status());
            }
            Poll::Done(s) => {
                *flag = 1;
                put_status(status, &s);
                status_error(&s)?;
            }
        }
        Ok(())
    })
}

unsafe fn reqs_slice<'a>(count: c_int, reqs: *mut MPI_Request) -> R<&'a mut [MPI_Request]> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("invalid count {count}")));
    }
    if count == 0 {
        return Ok(&mut []);
    }
    check_ptr(reqs, "array_of_requests")?;
    Ok(std::slice::from_raw_parts_mut(reqs, count as usize))
}

unsafe fn status_at(statuses: *mut MPI_Status, i: usize) -> *mut MPI_Status {
    if is_ignore(statuses) {
        STATUS_IGNORE
    } else {
        statuses.add(i)
    }
}

/// Record per-request errors for the multiple-completion calls.
unsafe fn finish_many(statuses: *mut MPI_Status, results: &[(usize, MPI_Status)], any_error: bool) -> R<()> {
    for (i, s) in results {
        let p = status_at(statuses, *i);
        if any_error {
            put_status_full(p, s);
        } else {
            put_status(p, s);
        }
    }
    if any_error {
        return Err(err(MPI_ERR_IN_STATUS, "one or more requests failed (see the statuses)"));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitall(count: c_int, array_of_requests: *mut MPI_Request, array_of_statuses: *mut MPI_Status) -> c_int {
    api("MPI_Waitall", reqs_target(count, array_of_requests), || {
        let reqs = reqs_slice(count, array_of_requests)?;
        let mut results = Vec::with_capacity(reqs.len());
        let mut any_error = false;
        // In order, as waiting for each in turn would, but with one
        // progress pass serving them all: a pass completes the requests
        // up to the first one still pending.
        let mut next = 0;
        while next < reqs.len() {
            let mut greq = false;
            state::wait_checked(|st| {
                while let Some(h) = reqs.get_mut(next) {
                    if st.is_greq(*h) {
                        greq = true;
                        return Ok(true);
                    }
                    let s = match st.poll_request(h)? {
                        Poll::Pending => return Ok(false),
                        Poll::Inactive => empty_status(),
                        Poll::Done(s) => s,
                    };
                    any_error |= s.MPI_ERROR != MPI_SUCCESS;
                    results.push((next, s));
                    next += 1;
                }
                Ok(true)
            })?;
            if greq {
                let s = wait_greq(&mut reqs[next])?;
                any_error |= s.MPI_ERROR != MPI_SUCCESS;
                results.push((next, s));
                next += 1;
            }
        }
        finish_many(array_of_statuses, &results, any_error)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testall(count: c_int, array_of_requests: *mut MPI_Request, flag: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    api("MPI_Testall", reqs_target(count, array_of_requests), || {
        check_ptr(flag, "flag")?;
        let reqs = reqs_slice(count, array_of_requests)?;
        // Only complete them if all are complete.
        let all = state::with(|st| {
            st.progress()?;
            Ok(reqs.iter().all(|&h| {
                h == MPI_REQUEST_NULL
                    || match st.reqs.get(h) {
                        Some(ReqEntry::Null { .. }) | Some(ReqEntry::Done { .. }) | Some(ReqEntry::Persistent { active: None, .. }) => true,
                        Some(e) => {
                            let r = match e {
                                ReqEntry::Active { r, .. } | ReqEntry::Greq { r, .. } => Some(*r),
                                ReqEntry::Persistent { active, .. } => *active,
                                ReqEntry::Null { .. } | ReqEntry::Done { .. } => None,
                            };
                            r.is_none_or(|r| st.rt.engine.is_complete(r))
                        }
                        None => true, // reported as invalid below
                    }
            }))
        })?;
        if !all {
            *flag = 0;
            return Ok(());
        }
        *flag = 1;
        let mut results = Vec::with_capacity(reqs.len());
        let mut any_error = false;
        for (i, h) in reqs.iter_mut().enumerate() {
            let s = match test_one(h)? {
                Poll::Done(s) => s,
                _ => empty_status(),
            };
            any_error |= s.MPI_ERROR != MPI_SUCCESS;
            results.push((i, s));
        }
        finish_many(array_of_statuses, &results, any_error)
    })
}

/// Look for any completed request; None if all are null/inactive.
fn any_done(reqs: &mut [MPI_Request]) -> R<(bool, Option<(usize, MPI_Status)>)> {
    let mut active = false;
    for (i, h) in reqs.iter_mut().enumerate() {
        match test_one(h)? {
            Poll::Inactive => {}
            Poll::Pending => active = true,
            Poll::Done(s) => return Ok((true, Some((i, s)))),
        }
    }
    Ok((active, None))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitany(count: c_int, array_of_requests: *mut MPI_Request, indx: *mut c_int, status: *mut MPI_Status) -> c_int {
    api("MPI_Waitany", reqs_target(count, array_of_requests), || {
        check_ptr(indx, "indx")?;
        let reqs = reqs_slice(count, array_of_requests)?;
        loop {
            let (active, done) = any_done(reqs)?;
            if let Some((i, s)) = done {
                *indx = i as c_int;
                put_status(status, &s);
                return status_error(&s);
            }
            if !active {
                *indx = MPI_UNDEFINED;
                put_status(status, &empty_status());
                return Ok(());
            }
            // Sleep until something completes.
            let c0 = state::with(|st| Ok(st.rt.engine.completions()))?;
            state::wait_until(|st| Ok(st.rt.engine.completions() != c0))?;
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testany(count: c_int, array_of_requests: *mut MPI_Request, indx: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    api("MPI_Testany", reqs_target(count, array_of_requests), || {
        check_ptr(indx, "indx")?;
        check_ptr(flag, "flag")?;
        let reqs = reqs_slice(count, array_of_requests)?;
        let (active, done) = any_done(reqs)?;
        match done {
            Some((i, s)) => {
                *flag = 1;
                *indx = i as c_int;
                put_status(status, &s);
                status_error(&s)
            }
            None => {
                *flag = (!active) as c_int;
                *indx = MPI_UNDEFINED;
                if !active {
                    put_status(status, &empty_status());
                }
                Ok(())
            }
        }
    })
}

/// Complete every completed request; (any active, completed list).
fn some_done(reqs: &mut [MPI_Request]) -> R<(bool, Vec<(usize, MPI_Status)>)> {
    let mut active = false;
    let mut out = Vec::new();
    for (i, h) in reqs.iter_mut().enumerate() {
        match test_one(h)? {
            Poll::Inactive => {}
            Poll::Pending => active = true,
            Poll::Done(s) => out.push((i, s)),
        }
    }
    Ok((active || !out.is_empty(), out))
}

unsafe fn report_some(outcount: *mut c_int, indices: *mut c_int, statuses: *mut MPI_Status, done: &[(usize, MPI_Status)]) -> R<()> {
    *outcount = done.len() as c_int;
    let mut any_error = false;
    for (k, (i, s)) in done.iter().enumerate() {
        *indices.add(k) = *i as c_int;
        any_error |= s.MPI_ERROR != MPI_SUCCESS;
    }
    let compact: Vec<(usize, MPI_Status)> = done.iter().enumerate().map(|(k, (_, s))| (k, *s)).collect();
    finish_many(statuses, &compact, any_error)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitsome(incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    api("MPI_Waitsome", reqs_target(incount, array_of_requests), || {
        check_ptr(outcount, "outcount")?;
        let reqs = reqs_slice(incount, array_of_requests)?;
        loop {
            let c0 = state::with(|st| Ok(st.rt.engine.completions()))?;
            let (active, done) = some_done(reqs)?;
            if !active {
                *outcount = MPI_UNDEFINED;
                return Ok(());
            }
            if !done.is_empty() {
                check_ptr(array_of_indices, "array_of_indices")?;
                return report_some(outcount, array_of_indices, array_of_statuses, &done);
            }
            state::wait_until(|st| Ok(st.rt.engine.completions() != c0))?;
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Testsome(incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    api("MPI_Testsome", reqs_target(incount, array_of_requests), || {
        check_ptr(outcount, "outcount")?;
        let reqs = reqs_slice(incount, array_of_requests)?;
        let (active, done) = some_done(reqs)?;
        if !active {
            *outcount = MPI_UNDEFINED;
            return Ok(());
        }
        if !done.is_empty() {
            check_ptr(array_of_indices, "array_of_indices")?;
        }
        report_some(outcount, array_of_indices, array_of_statuses, &done)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_free(request: *mut MPI_Request) -> c_int {
    api("MPI_Request_free", Target::NoComm, || {
        check_ptr(request, "request")?;
        let h = *request;
        if h == MPI_REQUEST_NULL {
            return Err(err(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL"));
        }
        let greq = state::with(|st| {
            // An incomplete generalized request is freed by MPI_Grequest_complete.
            if let Some(ReqEntry::Greq { r, freed, .. }) = st.reqs.get_mut(h) {
                if !st.rt.engine.is_complete(*r) {
                    *freed = true;
                    return Ok(None);
                }
            }
            let e = st.reqs.remove(h).ok_or_else(|| err(MPI_ERR_REQUEST, format!("invalid request handle {h:#x}")))?;
            match e {
                ReqEntry::Active { r, .. } => st.rt.engine.detach(r),
                ReqEntry::Persistent { active, spec } => {
                    if let Some(r) = active {
                        st.rt.engine.detach(r);
                    }
                    if let PersistentSpec::Partitioned { id, .. } = spec {
                        st.rt.engine.part_free(id);
                    }
                }
                ReqEntry::Null { .. } | ReqEntry::Done { .. } => {}
                ReqEntry::Greq { r, free, extra, .. } => {
                    st.rt.engine.detach(r);
                    return Ok(free.map(|f| (f, extra)));
                }
            }
            Ok(None)
        })?;
        *request = MPI_REQUEST_NULL;
        if let Some((f, extra)) = greq {
            f(extra);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_get_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    api("MPI_Request_get_status", Target::NoComm, || {
        check_ptr(flag, "flag")?;
        let (done, s) = request_status(request)?;
        *flag = done as c_int;
        if done {
            put_status(status, &s);
        }
        Ok(())
    })
}

/// Status of a request without freeing it.
fn request_status(h: MPI_Request) -> R<(bool, MPI_Status)> {
    if h == MPI_REQUEST_NULL {
        return Ok((true, empty_status()));
    }
    let greq = state::with(|st| {
        st.progress()?;
        match st.reqs.get(h) {
            None => Err(err(MPI_ERR_REQUEST, format!("invalid request handle {h:#x}"))),
            Some(ReqEntry::Null { kind, .. }) => Ok(Err((true, if *kind == ReqKind::Recv { proc_null_status() } else { empty_status() }))),
            Some(ReqEntry::Done { status }) => Ok(Err((true, *status))),
            Some(ReqEntry::Persistent { active: None, .. }) => Ok(Err((true, empty_status()))),
            Some(ReqEntry::Persistent { active: Some(r), spec }) => {
                let recv = matches!(spec, PersistentSpec::Recv { .. } | PersistentSpec::Partitioned { recv: true, .. });
                Ok(Err(match st.rt.engine.peek_status(*r) {
                    Some(s) => (true, if recv { recv_status(&s) } else { super::sent_status(&s) }),
                    None => (false, empty_status()),
                }))
            }
            Some(ReqEntry::Active { r, kind, .. }) => Ok(Err(match st.rt.engine.peek_status(*r) {
                Some(s) => (true, if *kind == ReqKind::Recv { recv_status(&s) } else { super::sent_status(&s) }),
                None => (false, empty_status()),
            })),
            Some(ReqEntry::Greq { r, query, extra, .. }) => Ok(Ok((st.rt.engine.is_complete(*r), *query, *extra))),
        }
    })?;
    match greq {
        Err(res) => Ok(res),
        Ok((done, query, extra)) => {
            let mut s = empty_status();
            if done {
                if let Some(q) = query {
                    // SAFETY: the user's query callback.
                    unsafe { q(extra, &mut s) };
                }
            }
            Ok((done, s))
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_get_status_all(count: c_int, array_of_requests: *const MPI_Request, flag: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    api("MPI_Request_get_status_all", Target::NoComm, || {
        check_ptr(flag, "flag")?;
        let reqs = reqs_slice(count, array_of_requests as *mut MPI_Request)?;
        let mut sts = Vec::new();
        for &h in reqs.iter() {
            let (d, s) = request_status(h)?;
            if !d {
                *flag = 0;
                return Ok(());
            }
            sts.push(s);
        }
        *flag = 1;
        for (i, s) in sts.iter().enumerate() {
            put_status(status_at(array_of_statuses, i), s);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_get_status_any(count: c_int, array_of_requests: *const MPI_Request, indx: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    api("MPI_Request_get_status_any", Target::NoComm, || {
        check_ptr(flag, "flag")?;
        check_ptr(indx, "indx")?;
        let reqs = reqs_slice(count, array_of_requests as *mut MPI_Request)?;
        let mut active = false;
        for (i, &h) in reqs.iter().enumerate() {
            if h == MPI_REQUEST_NULL {
                continue;
            }
            let (d, s) = request_status(h)?;
            active = true;
            if d {
                *flag = 1;
                *indx = i as c_int;
                put_status(status, &s);
                return Ok(());
            }
        }
        *flag = (!active) as c_int;
        *indx = MPI_UNDEFINED;
        if !active {
            // An empty status, MPI_ERROR included.
            put_status_full(status, &empty_status());
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_get_status_some(incount: c_int, array_of_requests: *const MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    api("MPI_Request_get_status_some", Target::NoComm, || {
        check_ptr(outcount, "outcount")?;
        let reqs = reqs_slice(incount, array_of_requests as *mut MPI_Request)?;
        let mut n = 0;
        let mut active = false;
        for (i, &h) in reqs.iter().enumerate() {
            if h == MPI_REQUEST_NULL {
                continue;
            }
            active = true;
            let (d, s) = request_status(h)?;
            if d {
                *array_of_indices.add(n) = i as c_int;
                put_status(status_at(array_of_statuses, n), &s);
                n += 1;
            }
        }
        *outcount = if active { n as c_int } else { MPI_UNDEFINED };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cancel(request: *mut MPI_Request) -> c_int {
    api("MPI_Cancel", Target::NoComm, || {
        check_ptr(request, "request")?;
        let h = *request;
        let greq = state::with(|st| {
            match st.reqs.get(h) {
                None => Err(err(MPI_ERR_REQUEST, format!("invalid request handle {h:#x}"))),
                Some(ReqEntry::Active { r, .. }) => {
                    st.rt.engine.cancel(*r);
                    Ok(None)
                }
                Some(ReqEntry::Persistent { active: Some(r), .. }) => {
                    st.rt.engine.cancel(*r);
                    Ok(None)
                }
                Some(ReqEntry::Greq { r, cancel, extra, .. }) => Ok(Some((*cancel, *extra, st.rt.engine.is_complete(*r)))),
                Some(_) => Ok(None),
            }
        })?;
        if let Some((Some(c), extra, done)) = greq {
            let rc = c(extra, done as c_int);
            if rc != MPI_SUCCESS {
                return Err(crate::errors::MpiError { class: MPI_ERR_OTHER, msg: "the generalized request's cancel function failed".into(), code: Some(rc) });
            }
        }
        Ok(())
    })
}

/// Errors of MPI_Start(all) go to the communicator of the first valid
/// request; with none (MPI_REQUEST_NULL, a bad handle) where errors of no
/// object go.
unsafe fn start_target(reqs: *const MPI_Request, count: c_int) -> Target {
    if reqs.is_null() || count <= 0 {
        return Target::NoComm;
    }
    let hs = std::slice::from_raw_parts(reqs, count as usize);
    state::with(|st| Ok(hs.iter().find(|&&h| st.reqs.get(h).is_some()).map(|&h| st.request_comm(h))))
        .ok()
        .flatten()
        .map_or(Target::NoComm, Target::Comm)
}

pub fn start_persistent(h: MPI_Request) -> R<()> {
    let spec = state::with(|st| match st.reqs.get(h) {
        Some(ReqEntry::Persistent { active: None, spec }) => Ok(spec.clone()),
        Some(ReqEntry::Persistent { active: Some(_), .. }) => {
            Err(err(MPI_ERR_REQUEST, "the persistent request is already active (complete it before starting it again)"))
        }
        Some(_) => Err(err(MPI_ERR_REQUEST, format!("request {h:#x} is not a persistent request"))),
        None => Err(err(MPI_ERR_REQUEST, format!("invalid request handle {h:#x}"))),
    })?;
    let r = match spec {
        PersistentSpec::Coll { start, .. } => start()?,
        PersistentSpec::Partitioned { id, .. } => state::with(|st| st.rt.engine.part_start(id).map_err(|e| err(MPI_ERR_REQUEST, e.to_string())))?,
        PersistentSpec::Send { buf, count, dt, dest, tag, comm, mode } => state::with(|st| {
            let s = st.start_send(buf, count, dt, dest, tag, comm, mode)?;
            Ok(match s {
                super::p2p::Started::Engine(r, _) => r,
                super::p2p::Started::Done(_) => st.rt.engine.completed_request(Default::default()),
            })
        })?,
        PersistentSpec::Recv { buf, count, dt, source, tag, comm } => state::with(|st| {
            let s = st.start_recv(buf, count, dt, source, tag, comm)?;
            Ok(match s {
                super::p2p::Started::Engine(r, _) => r,
                super::p2p::Started::Done(_) => st.rt.engine.completed_request(gridmpi_engine::Status {
                    source: MPI_PROC_NULL,
                    tag: MPI_ANY_TAG,
                    ..Default::default()
                }),
            })
        })?,
    };
    state::with(|st| {
        if let Some(ReqEntry::Persistent { active, .. }) = st.reqs.get_mut(h) {
            *active = Some(r);
        }
        st.progress()?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Start(request: *mut MPI_Request) -> c_int {
    api("MPI_Start", start_target(request, 1), || {
        check_ptr(request, "request")?;
        start_persistent(*request)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Startall(count: c_int, array_of_requests: *mut MPI_Request) -> c_int {
    api("MPI_Startall", start_target(array_of_requests, count), || {
        let reqs = reqs_slice(count, array_of_requests)?;
        for &h in reqs.iter() {
            start_persistent(h)?;
        }
        Ok(())
    })
}

// ---- statuses ---------------------------------------------------------------------

/// Whole items of `size` bytes in `bytes`, or MPI_UNDEFINED.
fn count_in(bytes: i64, size: u64) -> i64 {
    if size == 0 {
        return if bytes == 0 { 0 } else { MPI_UNDEFINED as i64 };
    }
    if bytes % size as i64 != 0 {
        return MPI_UNDEFINED as i64;
    }
    bytes / size as i64
}

pub(crate) fn get_count(name: &'static str, status: *const MPI_Status, datatype: MPI_Datatype, count: CountPtr) -> c_int {
    api(name, Target::NoComm, || {
        check_ptr(status, "status")?;
        count.check("count")?;
        let dt = state::with(|st| st.dtype(datatype))?;
        // SAFETY: both checked non-null.
        unsafe { count.put(count_in(get_count_bytes(&*status), dt.size())) };
        Ok(())
    })
}

fn elements(status: *const MPI_Status, datatype: MPI_Datatype) -> R<i64> {
    check_ptr(status, "status")?;
    let dt = state::with(|st| st.dtype(datatype))?;
    // SAFETY: checked non-null.
    let bytes = get_count_bytes(unsafe { &*status });
    Ok(dt.elements_in(bytes as u64).map_or(MPI_UNDEFINED as i64, |e| e as i64))
}

pub(crate) fn get_elements(name: &'static str, status: *const MPI_Status, datatype: MPI_Datatype, count: CountPtr) -> c_int {
    api(name, Target::NoComm, || {
        count.check("count")?;
        let e = elements(status, datatype)?;
        // SAFETY: checked non-null.
        unsafe { count.put(e) };
        Ok(())
    })
}

pub(crate) fn set_elements(status: *mut MPI_Status, datatype: MPI_Datatype, count: i64) -> R<()> {
    check_ptr(status, "status")?;
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("invalid count {count}")));
    }
    let dt = state::with(|st| st.dtype(datatype))?;
    let bytes = dt
        .bytes_of_elements(count as u64)
        .ok_or_else(|| err(MPI_ERR_COUNT, format!("{count} elements do not fit the datatype")))?;
    // SAFETY: checked non-null.
    unsafe { set_count(&mut *status, bytes as i64) };
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_set_elements(status: *mut MPI_Status, datatype: MPI_Datatype, count: c_int) -> c_int {
    api("MPI_Status_set_elements", Target::NoComm, || set_elements(status, datatype, count as i64))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_set_elements_c(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> c_int {
    api("MPI_Status_set_elements_c", Target::NoComm, || set_elements(status, datatype, count))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) -> c_int {
    api("MPI_Status_set_cancelled", Target::NoComm, || {
        check_ptr(status, "status")?;
        set_cancelled(&mut *status, flag != 0);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) -> c_int {
    api("MPI_Test_cancelled", Target::NoComm, || {
        check_ptr(status, "status")?;
        check_ptr(flag, "flag")?;
        *flag = is_cancelled(&*status) as c_int;
        Ok(())
    })
}

macro_rules! status_field {
    ($get:ident, $set:ident, $gname:expr, $sname:expr, $field:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $get(status: *const MPI_Status, out: *mut c_int) -> c_int {
            api($gname, Target::NoComm, || {
                check_ptr(status, "status")?;
                check_ptr(out, "output")?;
                *out = (*status).$field;
                Ok(())
            })
        }
        #[no_mangle]
        pub unsafe extern "C" fn $set(status: *mut MPI_Status, v: c_int) -> c_int {
            api($sname, Target::NoComm, || {
                check_ptr(status, "status")?;
                (*status).$field = v;
                Ok(())
            })
        }
    };
}

status_field!(PMPI_Status_get_source, PMPI_Status_set_source, "MPI_Status_get_source", "MPI_Status_set_source", MPI_SOURCE);
status_field!(PMPI_Status_get_tag, PMPI_Status_set_tag, "MPI_Status_get_tag", "MPI_Status_set_tag", MPI_TAG);
status_field!(PMPI_Status_get_error, PMPI_Status_set_error, "MPI_Status_get_error", "MPI_Status_set_error", MPI_ERROR);

// ---- generalized requests -----------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_Grequest_start(
    query_fn: Option<MPI_Grequest_query_function>,
    free_fn: Option<MPI_Grequest_free_function>,
    cancel_fn: Option<MPI_Grequest_cancel_function>,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> c_int {
    api("MPI_Grequest_start", Target::NoComm, || {
        check_ptr(request, "request")?;
        let h = state::with(|st| {
            let r = st.rt.engine.external_request();
            Ok(st.reqs.insert(ReqEntry::Greq { r, query: query_fn, free: free_fn, cancel: cancel_fn, extra: extra_state, status: None, freed: false }))
        })?;
        *request = h;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Grequest_complete(request: MPI_Request) -> c_int {
    api("MPI_Grequest_complete", Target::NoComm, || {
        let free = state::with(|st| {
            let (r, freed) = match st.reqs.get(request) {
                Some(ReqEntry::Greq { r, freed, .. }) => (*r, *freed),
                _ => return Err(err(MPI_ERR_REQUEST, format!("{request:#x} is not a generalized request"))),
            };
            st.rt.engine.complete_external(r, Default::default());
            if freed {
                // Nobody waits for it: it ends here.
                st.rt.engine.take(r);
                if let Some(ReqEntry::Greq { free, extra, .. }) = st.reqs.remove(request) {
                    return Ok(free.map(|f| (f, extra)));
                }
            }
            st.wake_waiters();
            Ok(None)
        })?;
        // The user's free function runs without the lock (it may call MPI).
        if let Some((f, extra)) = free {
            let code = f(extra);
            if code != MPI_SUCCESS {
                return Err(crate::errors::MpiError { class: MPI_ERR_OTHER, msg: "generalized request free function failed".into(), code: Some(code) });
            }
        }
        Ok(())
    })
}

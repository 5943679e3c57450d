//! Partitioned communication (MPI 4.1, ch. 4): the C functions. The
//! protocol and its semantics are the engine's (gridmpi_engine::partitioned);
//! here: handles, argument checks, and the persistent request that stands
//! for an engine partitioned request (MPI_Start, MPI_Wait, MPI_Test and
//! MPI_Request_free treat it like any persistent request: req.rs).

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};
use gridmpi_engine::{PartError, PartId, PrecvArgs, PsendArgs};

/// The shared checks of MPI_Psend_init and MPI_Precv_init: the message is
/// `partitions` x `count` items of `datatype` at `buf`.
fn message(st: &State, buf: *const c_void, partitions: c_int, count: MPI_Count, datatype: MPI_Datatype, tag: c_int, info: MPI_Info) -> R<UserBuf> {
    if partitions < 0 {
        return Err(err(MPI_ERR_ARG, format!("invalid number of partitions {partitions}")));
    }
    let count = check_count(count)?;
    check_tag(tag)?;
    super::info::info_entries_or_empty(info)?;
    let dt = st.dtype(datatype)?;
    let items = count.checked_mul(partitions as u64).ok_or_else(|| err(MPI_ERR_COUNT, format!("{partitions} partitions of {count} items overflow")))?;
    user_buf(buf, items, dt)
}

/// The MPI error for a refused partitioned call.
fn part_err(e: PartError) -> crate::errors::MpiError {
    let class = match e {
        PartError::Invalid | PartError::WrongSide { .. } | PartError::NotActive | PartError::AlreadyActive => MPI_ERR_REQUEST,
        PartError::NoSuchPartition { .. } | PartError::AlreadyReady(_) => MPI_ERR_ARG,
        PartError::Uneven { .. } => MPI_ERR_COUNT,
        PartError::TagsExhausted => MPI_ERR_OTHER,
    };
    err(class, e.to_string())
}

fn partitioned_request(st: &mut State, id: R<PartId>, recv: bool, comm: MPI_Comm) -> R<MPI_Request> {
    Ok(st.reqs.insert(ReqEntry::Persistent { spec: PersistentSpec::Partitioned { id: id?, recv, comm }, active: None }))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    api("MPI_Psend_init", Target::Comm(comm), || {
        check_ptr(request, "request")?;
        *request = state::with(|st| {
            let ub = message(st, buf, partitions, count, datatype, tag, info)?;
            let c = st.comm(comm)?;
            let (ctx, src, dest) = (c.ctx, c.rank, c.check_dest(dest)?);
            let id = st.rt.engine.psend_init(PsendArgs { ctx, src, dest, tag, buf: ub, partitions: partitions as u64 });
            let h = partitioned_request(st, id.map_err(part_err), false, comm)?;
            st.progress()?;
            Ok(h)
        })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    api("MPI_Precv_init", Target::Comm(comm), || {
        check_ptr(request, "request")?;
        // Partitioned receives name their sender: no wildcards (MPI 4.1, 4.2.2).
        if source == MPI_ANY_SOURCE {
            return Err(err(MPI_ERR_RANK, "a partitioned receive cannot use MPI_ANY_SOURCE"));
        }
        if tag == MPI_ANY_TAG {
            return Err(err(MPI_ERR_TAG, "a partitioned receive cannot use MPI_ANY_TAG"));
        }
        *request = state::with(|st| {
            let ub = message(st, buf, partitions, count, datatype, tag, info)?;
            let c = st.comm(comm)?;
            let src = if source == MPI_PROC_NULL { None } else { c.check_source(source)? };
            let id = st.rt.engine.precv_init(PrecvArgs { ctx: c.ctx, src, tag, buf: ub, partitions: partitions as u64 });
            let h = partitioned_request(st, id.map_err(part_err), true, comm)?;
            st.progress()?;
            Ok(h)
        })?;
        Ok(())
    })
}

/// The engine's partitioned request behind `request`, and its communicator.
fn part_of(st: &State, request: MPI_Request, want_recv: bool, name: &str) -> R<PartId> {
    match st.reqs.get(request) {
        Some(ReqEntry::Persistent { spec: PersistentSpec::Partitioned { id, recv, .. }, .. }) if *recv == want_recv => Ok(*id),
        Some(ReqEntry::Persistent { spec: PersistentSpec::Partitioned { .. }, .. }) => {
            let (is, needs) = if want_recv { ("send", "receive") } else { ("receive", "send") };
            Err(err(MPI_ERR_REQUEST, format!("{name} needs a partitioned {needs} request; this one is a {is}")))
        }
        Some(_) => Err(err(MPI_ERR_REQUEST, format!("request {request:#x} is not a partitioned request"))),
        None if request == MPI_REQUEST_NULL => Err(err(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL")),
        None => Err(err(MPI_ERR_REQUEST, format!("invalid request handle {request:#x}"))),
    }
}

/// Errors of MPI_Pready* and MPI_Parrived go to the request's communicator.
fn target(request: MPI_Request) -> Target {
    Target::Comm(state::with(|st| Ok(st.request_comm(request))).unwrap_or(MPI_COMM_SELF))
}

/// Mark the partitions `parts` of `request` ready.
fn ready(request: MPI_Request, parts: impl IntoIterator<Item = i64>) -> R<()> {
    state::with(|st| {
        let id = part_of(st, request, false, "MPI_Pready")?;
        let parts = parts
            .into_iter()
            .map(|p| u64::try_from(p).map_err(|_| err(MPI_ERR_ARG, format!("partition {p} does not exist"))))
            .collect::<R<Vec<u64>>>()?;
        st.rt.engine.pready_many(id, &parts).map_err(part_err)?;
        st.progress()?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pready(partition: c_int, request: MPI_Request) -> c_int {
    api("MPI_Pready", target(request), || ready(request, [partition as i64]))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pready_range(partition_low: c_int, partition_high: c_int, request: MPI_Request) -> c_int {
    api("MPI_Pready_range", target(request), || {
        if partition_low > partition_high {
            return Err(err(MPI_ERR_ARG, format!("partition_low {partition_low} is above partition_high {partition_high}")));
        }
        ready(request, (partition_low as i64)..=(partition_high as i64))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pready_list(length: c_int, array_of_partitions: *const c_int, request: MPI_Request) -> c_int {
    api("MPI_Pready_list", target(request), || {
        let parts = Ints::from(array_of_partitions).read(length as i64, "array_of_partitions")?;
        if length < 0 {
            return Err(err(MPI_ERR_ARG, format!("invalid length {length}")));
        }
        ready(request, parts)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Parrived(request: MPI_Request, partition: c_int, flag: *mut c_int) -> c_int {
    api("MPI_Parrived", target(request), || {
        check_ptr(flag, "flag")?;
        let arrived = state::with(|st| {
            let id = part_of(st, request, true, "MPI_Parrived")?;
            st.progress()?;
            let p = u64::try_from(partition).map_err(|_| err(MPI_ERR_ARG, format!("invalid partition {partition}")))?;
            st.rt.engine.parrived(id, p).map_err(part_err)
        })?;
        *flag = arrived as c_int;
        Ok(())
    })
}

//! Neighbourhood collectives: allgather(v) and alltoall(v,w) over the
//! communicator's process topology, in their blocking, nonblocking and
//! persistent forms. Block k of the send buffer goes to the k-th
//! destination and block k of the receive buffer comes from the k-th source
//! (topo.rs gives the lists); duplicate edges pair up as the standard says.

use super::coll::*;
use super::*;
use gridmpi_engine::coll::neighbor;

/// The Build of a neighbourhood collective: `send(outdegree)` gives the
/// send blocks, `recv(indegree)` the receive blocks.
fn neighborhood(
    st: &State,
    comm: MPI_Comm,
    sendbuf: *const c_void,
    send: impl FnOnce(i32) -> R<Vec<UserBuf>>,
    recv: impl FnOnce(i32) -> R<Vec<UserBuf>>,
) -> R<Build> {
    let c = st.comm(comm)?;
    if c.is_inter() {
        return Err(err(MPI_ERR_COMM, "neighborhood collectives need an intracommunicator with a topology"));
    }
    if in_place(sendbuf) {
        return Err(err(MPI_ERR_ARG, "MPI_IN_PLACE is not allowed in neighborhood collectives"));
    }
    let nb = super::topo::neighbors(c)?;
    let sends: Vec<(i32, UserBuf)> = nb.dests.iter().copied().zip(send(nb.dests.len() as i32)?).collect();
    let mut recvs: Vec<(i32, UserBuf)> = nb.sources.iter().copied().zip(recv(nb.sources.len() as i32)?).collect();
    if nb.cartesian {
        // Post each dimension's +1 receive first: a process that is our
        // neighbour both ways sends its -1 block first, and that one is ours
        // from the +1 side.
        for pair in recvs.chunks_mut(2) {
            pair.swap(0, 1);
        }
    }
    Ok(Box::new(move |e| neighbor::exchange(e.v(), e.tag, &sends, &recvs)))
}

#[allow(clippy::too_many_arguments)]
fn plan_allgather(
    st: &State,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> R<Build> {
    neighborhood(
        st,
        comm,
        sendbuf,
        |n| {
            let b = user_buf(sendbuf, check_count(sendcount)?, st.dtype(sendtype)?)?;
            Ok(vec![b; n as usize])
        },
        |n| blocks(recvbuf, n, check_count(recvcount)?, &st.dtype(recvtype)?),
    )
}

#[allow(clippy::too_many_arguments)]
fn plan_allgatherv(
    st: &State,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    displs: Ints,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> R<Build> {
    neighborhood(
        st,
        comm,
        sendbuf,
        |n| {
            let b = user_buf(sendbuf, check_count(sendcount)?, st.dtype(sendtype)?)?;
            Ok(vec![b; n as usize])
        },
        |n| blocks_v(recvbuf, &counts(recvcounts, n, "recvcounts")?, &displs.read(n.into(), "displs")?, &st.dtype(recvtype)?),
    )
}

#[allow(clippy::too_many_arguments)]
fn plan_alltoall(
    st: &State,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> R<Build> {
    neighborhood(
        st,
        comm,
        sendbuf,
        |n| blocks(sendbuf, n, check_count(sendcount)?, &st.dtype(sendtype)?),
        |n| blocks(recvbuf, n, check_count(recvcount)?, &st.dtype(recvtype)?),
    )
}

#[allow(clippy::too_many_arguments)]
fn plan_alltoallv(
    st: &State,
    sendbuf: *const c_void,
    sendcounts: Ints,
    sdispls: Ints,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: Ints,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> R<Build> {
    neighborhood(
        st,
        comm,
        sendbuf,
        |n| blocks_v(sendbuf, &counts(sendcounts, n, "sendcounts")?, &sdispls.read(n.into(), "sdispls")?, &st.dtype(sendtype)?),
        |n| blocks_v(recvbuf, &counts(recvcounts, n, "recvcounts")?, &rdispls.read(n.into(), "rdispls")?, &st.dtype(recvtype)?),
    )
}

#[allow(clippy::too_many_arguments)]
fn plan_alltoallw(
    st: &State,
    sendbuf: *const c_void,
    sendcounts: Ints,
    sdispls: *const MPI_Aint,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: *const MPI_Aint,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> R<Build> {
    neighborhood(
        st,
        comm,
        sendbuf,
        |n| blocks_w(st, sendbuf, sendcounts, &Ints::from(sdispls).read(n.into(), "sdispls")?, sendtypes, n, "send"),
        |n| blocks_w(st, recvbuf, recvcounts, &Ints::from(rdispls).read(n.into(), "rdispls")?, recvtypes, n, "recv"),
    )
}

// ---- entry points -------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgather(
    sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
) -> c_int {
    blocking("MPI_Neighbor_allgather", comm, |st| plan_allgather(st, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgather_c(
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, comm: MPI_Comm,
) -> c_int {
    blocking("MPI_Neighbor_allgather_c", comm, |st| plan_allgather(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_allgather(
    sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request,
) -> c_int {
    nonblocking("MPI_Ineighbor_allgather", comm, request, |st| {
        plan_allgather(st, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_allgather_c(
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request,
) -> c_int {
    nonblocking("MPI_Ineighbor_allgather_c", comm, request, |st| {
        plan_allgather(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgather_init(
    sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
    info: MPI_Info, request: *mut MPI_Request,
) -> c_int {
    persistent("MPI_Neighbor_allgather_init", comm, info, request, |st| {
        plan_allgather(st, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgather_init_c(
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, comm: MPI_Comm,
    info: MPI_Info, request: *mut MPI_Request,
) -> c_int {
    persistent("MPI_Neighbor_allgather_init_c", comm, info, request, |st| {
        plan_allgather(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgatherv(
    sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
) -> c_int {
    blocking("MPI_Neighbor_allgatherv", comm, |st| {
        plan_allgatherv(st, sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgatherv_c(
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const MPI_Count, displs: *const MPI_Aint, recvtype: MPI_Datatype, comm: MPI_Comm,
) -> c_int {
    blocking("MPI_Neighbor_allgatherv_c", comm, |st| {
        plan_allgatherv(st, sendbuf, sendcount, sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_allgatherv(
    sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    nonblocking("MPI_Ineighbor_allgatherv", comm, request, |st| {
        plan_allgatherv(st, sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_allgatherv_c(
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const MPI_Count, displs: *const MPI_Aint, recvtype: MPI_Datatype, comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    nonblocking("MPI_Ineighbor_allgatherv_c", comm, request, |st| {
        plan_allgatherv(st, sendbuf, sendcount, sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgatherv_init(
    sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
    info: MPI_Info, request: *mut MPI_Request,
) -> c_int {
    persistent("MPI_Neighbor_allgatherv_init", comm, info, request, |st| {
        plan_allgatherv(st, sendbuf, sendcount.into(), sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgatherv_init_c(
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const MPI_Count, displs: *const MPI_Aint, recvtype: MPI_Datatype, comm: MPI_Comm,
    info: MPI_Info, request: *mut MPI_Request,
) -> c_int {
    persistent("MPI_Neighbor_allgatherv_init_c", comm, info, request, |st| {
        plan_allgatherv(st, sendbuf, sendcount, sendtype, recvbuf, recvcounts.into(), displs.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoall(
    sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
) -> c_int {
    blocking("MPI_Neighbor_alltoall", comm, |st| plan_alltoall(st, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoall_c(
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, comm: MPI_Comm,
) -> c_int {
    blocking("MPI_Neighbor_alltoall_c", comm, |st| plan_alltoall(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoall(
    sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request,
) -> c_int {
    nonblocking("MPI_Ineighbor_alltoall", comm, request, |st| {
        plan_alltoall(st, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoall_c(
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request,
) -> c_int {
    nonblocking("MPI_Ineighbor_alltoall_c", comm, request, |st| {
        plan_alltoall(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoall_init(
    sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
    info: MPI_Info, request: *mut MPI_Request,
) -> c_int {
    persistent("MPI_Neighbor_alltoall_init", comm, info, request, |st| {
        plan_alltoall(st, sendbuf, sendcount.into(), sendtype, recvbuf, recvcount.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoall_init_c(
    sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcount: MPI_Count, recvtype: MPI_Datatype, comm: MPI_Comm,
    info: MPI_Info, request: *mut MPI_Request,
) -> c_int {
    persistent("MPI_Neighbor_alltoall_init_c", comm, info, request, |st| {
        plan_alltoall(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallv(
    sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
) -> c_int {
    blocking("MPI_Neighbor_alltoallv", comm, |st| {
        plan_alltoallv(st, sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallv_c(
    sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtype: MPI_Datatype, comm: MPI_Comm,
) -> c_int {
    blocking("MPI_Neighbor_alltoallv_c", comm, |st| {
        plan_alltoallv(st, sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoallv(
    sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    nonblocking("MPI_Ineighbor_alltoallv", comm, request, |st| {
        plan_alltoallv(st, sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoallv_c(
    sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtype: MPI_Datatype, comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    nonblocking("MPI_Ineighbor_alltoallv_c", comm, request, |st| {
        plan_alltoallv(st, sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallv_init(
    sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
    info: MPI_Info, request: *mut MPI_Request,
) -> c_int {
    persistent("MPI_Neighbor_alltoallv_init", comm, info, request, |st| {
        plan_alltoallv(st, sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallv_init_c(
    sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtype: MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtype: MPI_Datatype, comm: MPI_Comm,
    info: MPI_Info, request: *mut MPI_Request,
) -> c_int {
    persistent("MPI_Neighbor_alltoallv_init_c", comm, info, request, |st| {
        plan_alltoallv(st, sendbuf, sendcounts.into(), sdispls.into(), sendtype, recvbuf, recvcounts.into(), rdispls.into(), recvtype, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallw(
    sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm,
) -> c_int {
    blocking("MPI_Neighbor_alltoallw", comm, |st| {
        plan_alltoallw(st, sendbuf, sendcounts.into(), sdispls, sendtypes, recvbuf, recvcounts.into(), rdispls, recvtypes, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallw_c(
    sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm,
) -> c_int {
    blocking("MPI_Neighbor_alltoallw_c", comm, |st| {
        plan_alltoallw(st, sendbuf, sendcounts.into(), sdispls, sendtypes, recvbuf, recvcounts.into(), rdispls, recvtypes, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoallw(
    sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    nonblocking("MPI_Ineighbor_alltoallw", comm, request, |st| {
        plan_alltoallw(st, sendbuf, sendcounts.into(), sdispls, sendtypes, recvbuf, recvcounts.into(), rdispls, recvtypes, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoallw_c(
    sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    nonblocking("MPI_Ineighbor_alltoallw_c", comm, request, |st| {
        plan_alltoallw(st, sendbuf, sendcounts.into(), sdispls, sendtypes, recvbuf, recvcounts.into(), rdispls, recvtypes, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallw_init(
    sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm,
    info: MPI_Info, request: *mut MPI_Request,
) -> c_int {
    persistent("MPI_Neighbor_alltoallw_init", comm, info, request, |st| {
        plan_alltoallw(st, sendbuf, sendcounts.into(), sdispls, sendtypes, recvbuf, recvcounts.into(), rdispls, recvtypes, comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallw_init_c(
    sendbuf: *const c_void, sendcounts: *const MPI_Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void, recvcounts: *const MPI_Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm,
    info: MPI_Info, request: *mut MPI_Request,
) -> c_int {
    persistent("MPI_Neighbor_alltoallw_init_c", comm, info, request, |st| {
        plan_alltoallw(st, sendbuf, sendcounts.into(), sdispls, sendtypes, recvbuf, recvcounts.into(), rdispls, recvtypes, comm)
    })
}

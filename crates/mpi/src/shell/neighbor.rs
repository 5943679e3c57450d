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
pub(crate) fn plan_neighbor_allgather(
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
pub(crate) fn plan_neighbor_allgatherv(
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
pub(crate) fn plan_neighbor_alltoall(
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
pub(crate) fn plan_neighbor_alltoallv(
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
pub(crate) fn plan_neighbor_alltoallw(
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

//! Gather(v), scatter(v), allgather(v), alltoall(v,w): the collectives that
//! move blocks, in their blocking, nonblocking and persistent forms.

use super::*;
use gridmpi_engine::coll::select::{Allgather, Alltoall, Rooted};
use gridmpi_engine::coll::{allgather, alltoall, gather, scatter, wan};

// ---- gather ------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_gather(
    st: &State,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    let root = root_of(&c, root)?;
    no_in_place_inter(&c, sendbuf)?;
    let send = || -> R<UserBuf> { user_buf(sendbuf, check_count(sendcount)?, st.dtype(sendtype)?) };
    let recv_blocks = || -> R<(Vec<UserBuf>, u64)> {
        let (rc, rdt) = (check_count(recvcount)?, st.dtype(recvtype)?);
        Ok((blocks(recvbuf, c.peers(), rc, &rdt)?, rc * rdt.size()))
    };
    match root {
        RootOf::Inter(Role::Idle) => Ok(Box::new(|e| e.nothing())),
        RootOf::Inter(Role::Root) => {
            let (bl, _) = recv_blocks()?;
            Ok(Box::new(move |e| inter::gather(e.v(), e.local(), e.tag, None, &bl, Role::Root)))
        }
        RootOf::Inter(role) => {
            let send = send()?;
            Ok(Box::new(move |e| inter::gather(e.v(), e.local(), e.tag, Some(send.clone()), &[], role)))
        }
        RootOf::Intra(root) => {
            let is_root = c.rank == root;
            in_place_only_at_root(is_root, sendbuf)?;
            if is_root {
                not_aliased(sendbuf, recvbuf, sendcount > 0)?;
            }
            let send = if is_root && in_place(sendbuf) { None } else { Some(send()?) };
            let (bl, block) = match (is_root, &send) {
                (true, _) => recv_blocks()?,
                (false, Some(s)) => (Vec::new(), s.len()),
                (false, None) => unreachable!(),
            };
            if is_root {
                not_overlapping(send.as_ref(), &bl)?;
            }
            let input = c.input(block);
            Ok(Box::new(move |e| match e.sel.gather(&e.fit(&input)) {
                Rooted::Host => host::gather(e.v(), e.tag, &e.host(), send.clone(), &bl, root),
                Rooted::Linear => gather::linear(e.v(), e.tag, send.clone(), &bl, root),
                Rooted::Binomial => gather::binomial(e.v(), e.tag, send.clone(), &bl, block, root),
                Rooted::Wan => match &e.sites {
                    Some(sites) => wan::gather(e.v(), sites, e.tag, send.clone(), &bl, Some(block), root),
                    None => gather::linear(e.v(), e.tag, send.clone(), &bl, root),
                },
            }))
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_gatherv(
    st: &State,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    displs: Ints,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    let root = root_of(&c, root)?;
    no_in_place_inter(&c, sendbuf)?;
    let send = || -> R<UserBuf> { user_buf(sendbuf, check_count(sendcount)?, st.dtype(sendtype)?) };
    let recv_blocks = || -> R<Vec<UserBuf>> {
        let rc = counts(recvcounts, c.peers(), "recvcounts")?;
        blocks_v(recvbuf, &rc, &displs.read(c.peers().into(), "displs")?, &st.dtype(recvtype)?)
    };
    match root {
        RootOf::Inter(Role::Idle) => Ok(Box::new(|e| e.nothing())),
        RootOf::Inter(Role::Root) => {
            let bl = recv_blocks()?;
            Ok(Box::new(move |e| inter::gather(e.v(), e.local(), e.tag, None, &bl, Role::Root)))
        }
        RootOf::Inter(role) => {
            let send = send()?;
            Ok(Box::new(move |e| inter::gather(e.v(), e.local(), e.tag, Some(send.clone()), &[], role)))
        }
        RootOf::Intra(root) => {
            let is_root = c.rank == root;
            in_place_only_at_root(is_root, sendbuf)?;
            if is_root {
                not_aliased(sendbuf, recvbuf, sendcount > 0)?;
            }
            let send = if is_root && in_place(sendbuf) { None } else { Some(send()?) };
            let bl = if is_root { recv_blocks()? } else { Vec::new() };
            if is_root {
                not_overlapping(send.as_ref(), &bl)?;
            }
            // Block sizes are known at the root only: no leader aggregation.
            let input = uneven(&c);
            Ok(Box::new(move |e| match (e.sel.gather(&input), &e.sites) {
                (Rooted::Wan, Some(sites)) => wan::gather(e.v(), sites, e.tag, send.clone(), &bl, None, root),
                _ => gather::linear(e.v(), e.tag, send.clone(), &bl, root),
            }))
        }
    }
}

// ---- scatter -----------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_scatter(
    st: &State,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    let root = root_of(&c, root)?;
    no_in_place_inter(&c, recvbuf)?;
    let recv = || -> R<UserBuf> { user_buf(recvbuf, check_count(recvcount)?, st.dtype(recvtype)?) };
    let send_blocks = || -> R<(Vec<UserBuf>, u64)> {
        let (sc, sdt) = (check_count(sendcount)?, st.dtype(sendtype)?);
        Ok((blocks(sendbuf, c.peers(), sc, &sdt)?, sc * sdt.size()))
    };
    match root {
        RootOf::Inter(Role::Idle) => Ok(Box::new(|e| e.nothing())),
        RootOf::Inter(Role::Root) => {
            let (bl, _) = send_blocks()?;
            Ok(Box::new(move |e| inter::scatter(e.v(), e.local(), e.tag, &bl, None, Role::Root)))
        }
        RootOf::Inter(role) => {
            let recv = recv()?;
            Ok(Box::new(move |e| inter::scatter(e.v(), e.local(), e.tag, &[], Some(recv.clone()), role)))
        }
        RootOf::Intra(root) => {
            let is_root = c.rank == root;
            in_place_only_at_root(is_root, recvbuf)?;
            if is_root {
                not_aliased(sendbuf, recvbuf, recvcount > 0)?;
            }
            let recv = if is_root && in_place(recvbuf) { None } else { Some(recv()?) };
            let (bl, block) = match (is_root, &recv) {
                (true, _) => send_blocks()?,
                (false, Some(r)) => (Vec::new(), r.len()),
                (false, None) => unreachable!(),
            };
            if is_root {
                not_overlapping(recv.as_ref(), &bl)?;
            }
            let input = c.input(block);
            Ok(Box::new(move |e| match e.sel.scatter(&input) {
                // Selector::scatter never chooses the area.
                Rooted::Linear | Rooted::Host => scatter::linear(e.v(), e.tag, &bl, recv.clone(), root),
                Rooted::Binomial => scatter::binomial(e.v(), e.tag, &bl, recv.clone(), block, root),
                Rooted::Wan => match &e.sites {
                    Some(sites) => wan::scatter(e.v(), sites, e.tag, &bl, recv.clone(), Some(block), root),
                    None => scatter::linear(e.v(), e.tag, &bl, recv.clone(), root),
                },
            }))
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_scatterv(
    st: &State,
    sendbuf: *const c_void,
    sendcounts: Ints,
    displs: Ints,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    let root = root_of(&c, root)?;
    no_in_place_inter(&c, recvbuf)?;
    let recv = || -> R<UserBuf> { user_buf(recvbuf, check_count(recvcount)?, st.dtype(recvtype)?) };
    let send_blocks = || -> R<Vec<UserBuf>> {
        let sc = counts(sendcounts, c.peers(), "sendcounts")?;
        blocks_v(sendbuf, &sc, &displs.read(c.peers().into(), "displs")?, &st.dtype(sendtype)?)
    };
    match root {
        RootOf::Inter(Role::Idle) => Ok(Box::new(|e| e.nothing())),
        RootOf::Inter(Role::Root) => {
            let bl = send_blocks()?;
            Ok(Box::new(move |e| inter::scatter(e.v(), e.local(), e.tag, &bl, None, Role::Root)))
        }
        RootOf::Inter(role) => {
            let recv = recv()?;
            Ok(Box::new(move |e| inter::scatter(e.v(), e.local(), e.tag, &[], Some(recv.clone()), role)))
        }
        RootOf::Intra(root) => {
            let is_root = c.rank == root;
            in_place_only_at_root(is_root, recvbuf)?;
            if is_root {
                not_aliased(sendbuf, recvbuf, recvcount > 0)?;
            }
            let recv = if is_root && in_place(recvbuf) { None } else { Some(recv()?) };
            let bl = if is_root { send_blocks()? } else { Vec::new() };
            if is_root {
                not_overlapping(recv.as_ref(), &bl)?;
            }
            // Block sizes are known at the root only: no leader aggregation.
            let input = uneven(&c);
            Ok(Box::new(move |e| match (e.sel.scatter(&input), &e.sites) {
                (Rooted::Wan, Some(sites)) => wan::scatter(e.v(), sites, e.tag, &bl, recv.clone(), None, root),
                _ => scatter::linear(e.v(), e.tag, &bl, recv.clone(), root),
            }))
        }
    }
}

// ---- allgather ---------------------------------------------------------------------------

/// Allgather(v) on the blocks of the receive buffer.
fn allgather_build(c: &CommShape, mine: Option<UserBuf>, bl: Vec<UserBuf>, input: Input) -> Build {
    if c.remote.is_some() {
        let mine = mine.expect("intercommunicator send buffer");
        return Box::new(move |e| inter::allgather(e.v(), e.local(), e.tag, mine.clone(), &bl));
    }
    Box::new(move |e| match e.sel.allgather(&e.fit(&input)) {
        Allgather::Ring => allgather::ring(e.v(), e.tag, mine.clone(), &bl),
        Allgather::RecursiveDoubling => allgather::recursive_doubling(e.v(), e.tag, mine.clone(), &bl),
        Allgather::Bruck => allgather::bruck(e.v(), e.tag, mine.clone(), &bl),
        Allgather::Host => host::allgather(e.v(), e.tag, &e.host(), mine.clone(), &bl),
        Allgather::Wan => match &e.sites {
            Some(sites) => wan::allgather(e.v(), sites, e.tag, mine.clone(), &bl),
            None => allgather::ring(e.v(), e.tag, mine.clone(), &bl),
        },
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_allgather(
    st: &State,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    not_aliased(sendbuf, recvbuf, c.remote.is_none() && sendcount > 0)?;
    no_in_place_inter(&c, sendbuf)?;
    let mine = if in_place(sendbuf) { None } else { Some(user_buf(sendbuf, check_count(sendcount)?, st.dtype(sendtype)?)?) };
    let (rc, rdt) = (check_count(recvcount)?, st.dtype(recvtype)?);
    let bl = blocks(recvbuf, c.peers(), rc, &rdt)?;
    if c.remote.is_none() {
        not_overlapping(mine.as_ref(), &bl)?;
    }
    Ok(allgather_build(&c, mine, bl, c.input(rc * rdt.size())))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_allgatherv(
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
    let c = CommShape::of(st, comm)?;
    not_aliased(sendbuf, recvbuf, c.remote.is_none() && sendcount > 0)?;
    no_in_place_inter(&c, sendbuf)?;
    let mine = if in_place(sendbuf) { None } else { Some(user_buf(sendbuf, check_count(sendcount)?, st.dtype(sendtype)?)?) };
    let rdt = st.dtype(recvtype)?;
    let rc = counts(recvcounts, c.peers(), "recvcounts")?;
    let bl = blocks_v(recvbuf, &rc, &displs.read(c.peers().into(), "displs")?, &rdt)?;
    if c.remote.is_none() {
        not_overlapping(mine.as_ref(), &bl)?;
    }
    let total: u64 = rc.iter().sum::<u64>() * rdt.size();
    let input = Input { equal_blocks: false, ..c.input(total / c.peers().max(1) as u64) };
    Ok(allgather_build(&c, mine, bl, input))
}

// ---- alltoall ----------------------------------------------------------------------------

/// Alltoall(v,w) on per-peer blocks; `send` None for MPI_IN_PLACE.
/// `block`: the common block size in bytes (alltoall), None for v and w.
fn alltoall_build(c: &CommShape, send: Option<Vec<UserBuf>>, recv: Vec<UserBuf>, input: Input, block: Option<u64>) -> Build {
    if c.remote.is_some() {
        let send = send.expect("intercommunicator send buffer");
        return Box::new(move |e| inter::alltoall(e.v(), e.local(), e.tag, &send, &recv));
    }
    Box::new(move |e| {
        let mut s = e.nothing();
        let copies;
        let send: &[UserBuf] = match &send {
            Some(b) => b,
            None => {
                copies = alltoall::in_place_sources(&mut s, &recv);
                &copies
            }
        };
        s.append(alltoall_blocks(e, e.sel.alltoall(&e.fit(&input)), send, &recv, block));
        s
    })
}

/// The chosen algorithm's schedule on per-peer blocks (`block`: as for
/// [`alltoall_build`]).
fn alltoall_blocks(e: &Env, alg: Alltoall, send: &[UserBuf], recv: &[UserBuf], block: Option<u64>) -> Schedule {
    match alg {
        Alltoall::Pairwise => alltoall::pairwise(e.v(), e.tag, send, recv),
        Alltoall::Scattered => alltoall::scattered(e.v(), e.tag, send, recv, e.sel.alltoall_inflight),
        Alltoall::Bruck => alltoall::bruck(e.v(), e.tag, send, recv, block.unwrap_or(0)),
        Alltoall::Host => host::alltoall(e.v(), e.tag, &e.host(), send, recv, block.expect("chosen for equal blocks only")),
        Alltoall::Wan => match &e.sites {
            Some(sites) => wan::alltoall(e.v(), sites, e.tag, send, recv, block.is_some()),
            None => alltoall::scattered(e.v(), e.tag, send, recv, e.sel.alltoall_inflight),
        },
    }
}

/// An alltoall's `n` equal blocks of `count` items of `dt` from `base`, one
/// after the other. Made into buffers only once the algorithm is chosen:
/// through a host's area the whole buffer is one, so an alltoall there
/// builds two buffers instead of two per rank.
struct EqualBlocks {
    base: usize,
    n: i32,
    count: u64,
    dt: Arc<gridmpi_datatype::Datatype>,
}

impl EqualBlocks {
    /// Check every block as [`blocks`] would: only the first can be NULL,
    /// and the last has the largest displacement.
    fn checked(base: *const c_void, n: i32, count: u64, dt: &Arc<gridmpi_datatype::Datatype>) -> R<EqualBlocks> {
        block_at(base, 0, count, dt)?;
        if n > 1 {
            block_at(base, (n as i64 - 1) * count as i64, count, dt)?;
        }
        Ok(EqualBlocks { base: base as usize, n, count, dt: dt.clone() })
    }

    fn blocks(&self) -> Vec<UserBuf> {
        blocks(self.base as *const c_void, self.n, self.count, &self.dt).expect("checked when planned")
    }

    /// All the blocks as one buffer (for sizes that fit a host's area).
    fn whole(&self) -> UserBuf {
        user_buf(self.base as *const c_void, self.n as u64 * self.count, self.dt.clone()).expect("checked when planned")
    }

    fn block_bytes(&self) -> u64 {
        self.count * self.dt.size()
    }
}

/// Alltoall of equal blocks on an intracommunicator, not in place.
fn alltoall_equal_build(send: EqualBlocks, recv: EqualBlocks, input: Input) -> Build {
    Box::new(move |e| {
        let block = recv.block_bytes();
        match e.sel.alltoall(&e.fit(&input)) {
            Alltoall::Host => host::alltoall_whole(e.v(), e.tag, &e.host(), send.whole(), recv.whole(), block),
            alg => {
                let mut s = e.nothing();
                s.append(alltoall_blocks(e, alg, &send.blocks(), &recv.blocks(), Some(block)));
                s
            }
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_alltoall(
    st: &State,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    not_aliased(sendbuf, recvbuf, c.remote.is_none() && sendcount > 0)?;
    no_in_place_inter(&c, sendbuf)?;
    let (rc, rdt) = (check_count(recvcount)?, st.dtype(recvtype)?);
    if c.remote.is_none() && !in_place(sendbuf) {
        let send = EqualBlocks::checked(sendbuf, c.peers(), check_count(sendcount)?, &st.dtype(sendtype)?)?;
        let recv = EqualBlocks::checked(recvbuf, c.peers(), rc, &rdt)?;
        return Ok(alltoall_equal_build(send, recv, c.input(rc * rdt.size())));
    }
    let recv = blocks(recvbuf, c.peers(), rc, &rdt)?;
    let send = if in_place(sendbuf) { None } else { Some(blocks(sendbuf, c.peers(), check_count(sendcount)?, &st.dtype(sendtype)?)?) };
    let block = rc * rdt.size();
    Ok(alltoall_build(&c, send, recv, c.input(block), Some(block)))
}

/// Input of the v and w forms: only what every rank knows alike.
fn uneven(c: &CommShape) -> Input {
    Input { equal_blocks: false, ..c.input(0) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_alltoallv(
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
    let c = CommShape::of(st, comm)?;
    let q = c.peers();
    no_in_place_inter(&c, sendbuf)?;
    let recv = blocks_v(recvbuf, &counts(recvcounts, q, "recvcounts")?, &rdispls.read(q.into(), "rdispls")?, &st.dtype(recvtype)?)?;
    let send = if in_place(sendbuf) {
        None
    } else {
        Some(blocks_v(sendbuf, &counts(sendcounts, q, "sendcounts")?, &sdispls.read(q.into(), "sdispls")?, &st.dtype(sendtype)?)?)
    };
    not_aliased(sendbuf, recvbuf, c.remote.is_none() && sends_data(&send))?;
    Ok(alltoall_build(&c, send, recv, uneven(&c), None))
}

/// Blocks with byte displacements and per-block types (the w forms).
pub fn blocks_w(st: &State, base: *const c_void, counts_p: Ints, displs: &[i64], types_p: *const MPI_Datatype, n: i32, what: &str) -> R<Vec<UserBuf>> {
    let cs = counts(counts_p, n, &format!("{what}counts"))?;
    let ts = types(st, types_p, n, &format!("{what}types"))?;
    (0..n as usize).map(|i| block_at_bytes(base, displs[i], cs[i], &ts[i])).collect()
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_alltoallw(
    st: &State,
    sendbuf: *const c_void,
    sendcounts: Ints,
    sdispls: Ints,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    rdispls: Ints,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    let q = c.peers();
    no_in_place_inter(&c, sendbuf)?;
    let rd = rdispls.read(q.into(), "rdispls")?;
    let recv = blocks_w(st, recvbuf, recvcounts, &rd, recvtypes, q, "recv")?;
    let send = if in_place(sendbuf) {
        None
    } else {
        let sd = sdispls.read(q.into(), "sdispls")?;
        Some(blocks_w(st, sendbuf, sendcounts, &sd, sendtypes, q, "send")?)
    };
    not_aliased(sendbuf, recvbuf, c.remote.is_none() && sends_data(&send))?;
    Ok(alltoall_build(&c, send, recv, uneven(&c), None))
}

/// Whether any of the send blocks (None: in place) holds data.
fn sends_data(send: &Option<Vec<UserBuf>>) -> bool {
    send.as_ref().is_some_and(|b| b.iter().any(|b| b.len() > 0))
}

//! Reduce, allreduce, reduce_scatter(_block), scan, exscan, in their
//! blocking, nonblocking and persistent forms. (MPI_Reduce_local is in
//! op.rs with the operations.)

use super::*;
use gridmpi_engine::coll::select::{Allreduce, Reduce, ReduceScatter, Scan};
use gridmpi_engine::coll::{allreduce, reduce, reduce_scatter, scan};
use gridmpi_datatype::BasicType;
use gridmpi_engine::sched::Reducer;

/// The table's input for a reduction of `n` items of `dt`, and the basic
/// type to combine them as in the shared-memory area, when they can be
/// (else the input says there is no area).
pub(super) fn reduction_input(c: &CommShape, n: u64, dt: &Datatype, op: &Arc<dyn Reducer>) -> (Input, Option<Arc<Datatype>>) {
    let (input, basic) = selection_input(c, n, dt, op.is_commutative(), op.calls_user_code());
    (input, basic.map(Datatype::basic_shared))
}

/// [`reduction_input`] from what it asks of the operation: the quick
/// road (fast.rs) knows it of a predefined operation without making its
/// reducer.
pub(super) fn selection_input(c: &CommShape, n: u64, dt: &Datatype, commutative: bool, user_code: bool) -> (Input, Option<BasicType>) {
    let basic = if c.host_slot > 0 { host::reduction_fits(c.host_slot, n, dt, user_code) } else { None };
    let host_slot = if basic.is_some() { c.host_slot } else { 0 };
    (Input { count: n, commutative, host_slot, ..c.input(n * dt.size()) }, basic)
}

// ---- reduce ------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_reduce(
    st: &State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    let root = root_of(&c, root)?;
    no_in_place_inter(&c, sendbuf)?;
    if let RootOf::Inter(Role::Idle) = root {
        return Ok(Box::new(|e| e.nothing()));
    }
    let n = check_count(count)?;
    let dt = st.dtype(datatype)?;
    let red = st.reducer(op, datatype)?;
    match root {
        RootOf::Inter(role) => {
            let (input, recv) = match role {
                Role::Root => (None, Some(user_buf(recvbuf, n, dt)?)),
                _ => (Some(user_buf(sendbuf, n, dt)?), None),
            };
            Ok(Box::new(move |e| inter::reduce(e.v(), e.local(), e.tag, input.clone(), recv.clone(), red.clone(), role)))
        }
        RootOf::Intra(root) => {
            in_place_only_at_root(c.rank == root, sendbuf)?;
            if c.rank == root {
                not_aliased(sendbuf, recvbuf, count > 0)?;
            }
            let recv = if c.rank == root { Some(user_buf(recvbuf, n, dt.clone())?) } else { None };
            let input = match (&recv, in_place(sendbuf)) {
                (Some(r), true) => r.clone(),
                _ => user_buf(sendbuf, n, dt.clone())?,
            };
            let (sel_in, basic) = reduction_input(&c, n, &dt, &red);
            Ok(Box::new(move |e| match e.sel.reduce(&e.fit(&sel_in)) {
                Reduce::Host => {
                    let basic = basic.clone().expect("chosen only when the data fits");
                    host::reduce(e.v(), e.tag, &e.host(), input.clone(), recv.clone(), red.clone(), basic, root)
                }
                Reduce::Binomial => reduce::binomial(e.v(), e.tag, input.clone(), recv.clone(), red.clone(), root),
                Reduce::Rabenseifner => reduce::rabenseifner(e.v(), e.tag, input.clone(), recv.clone(), red.clone(), root),
                Reduce::Wan => match &e.sites {
                    Some(sites) => gridmpi_engine::coll::wan::reduce(e.v(), sites, e.tag, input.clone(), recv.clone(), red.clone(), root),
                    None => reduce::binomial(e.v(), e.tag, input.clone(), recv.clone(), red.clone(), root),
                },
            }))
        }
    }
}

// ---- allreduce ---------------------------------------------------------------------------

pub(crate) fn plan_allreduce(st: &State, sendbuf: *const c_void, recvbuf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    not_aliased(sendbuf, recvbuf, c.remote.is_none() && count > 0)?;
    no_in_place_inter(&c, sendbuf)?;
    let n = check_count(count)?;
    let dt = st.dtype(datatype)?;
    let red = st.reducer(op, datatype)?;
    let recv = user_buf(recvbuf, n, dt.clone())?;
    let input = if in_place(sendbuf) { None } else { Some(user_buf(sendbuf, n, dt.clone())?) };
    if c.remote.is_some() {
        let input = input.expect("checked: not in place");
        return Ok(Box::new(move |e| inter::allreduce(e.v(), e.local(), e.tag, input.clone(), recv.clone(), red.clone())));
    }
    let (sel_in, basic) = reduction_input(&c, n, &dt, &red);
    Ok(Box::new(move |e| {
        let (v, t, i, r, o) = (e.v(), e.tag, input.clone(), recv.clone(), red.clone());
        match e.sel.allreduce(&e.fit(&sel_in)) {
            Allreduce::Host => host::allreduce(v, t, &e.host(), i, r, o, basic.clone().expect("chosen only when the data fits")),
            Allreduce::RecursiveDoubling => allreduce::recursive_doubling(v, t, i, r, o),
            Allreduce::Rabenseifner => allreduce::rabenseifner(v, t, i, r, o),
            Allreduce::Ring => allreduce::ring(v, t, i, r, o),
            Allreduce::ReduceBcast => allreduce::reduce_bcast(v, t, i, r, o),
            Allreduce::Wan => match &e.sites {
                Some(sites) => gridmpi_engine::coll::wan::allreduce(v, sites, t, i, r, o),
                None => allreduce::recursive_doubling(v, t, i, r, o),
            },
        }
    }))
}

// ---- reduce_scatter ------------------------------------------------------------------------

/// Reduce_scatter over our group's `counts` (items of `datatype` per rank).
fn plan_reduce_scatter_counts(
    st: &State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Vec<u64>,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    not_aliased(sendbuf, recvbuf, c.remote.is_none() && counts.iter().any(|&n| n > 0))?;
    no_in_place_inter(&c, sendbuf)?;
    let dt = st.dtype(datatype)?;
    let red = st.reducer(op, datatype)?;
    let total: u64 = counts.iter().sum();
    let recv = user_buf(recvbuf, counts[c.rank as usize], dt.clone())?;
    // In place, the input vector is the receive buffer.
    let input = user_buf(if in_place(sendbuf) { recvbuf } else { sendbuf }, total, dt.clone())?;
    if c.remote.is_some() {
        return Ok(Box::new(move |e| inter::reduce_scatter(e.v(), e.local(), e.tag, input.clone(), recv.clone(), &counts, red.clone())));
    }
    let (sel_in, basic) = reduction_input(&c, total, &dt, &red);
    // Where our part starts in the (packed) result.
    let at = counts[..c.rank as usize].iter().sum::<u64>() * dt.size();
    Ok(Box::new(move |e| {
        let (v, t, i, r, o) = (e.v(), e.tag, input.clone(), recv.clone(), red.clone());
        match e.sel.reduce_scatter(&e.fit(&sel_in)) {
            ReduceScatter::Host => host::reduce_scatter(v, t, &e.host(), i, r, at, o, basic.clone().expect("chosen only when the data fits")),
            ReduceScatter::RecursiveHalving => reduce_scatter::recursive_halving(v, t, i, r, &counts, o),
            ReduceScatter::Ring => reduce_scatter::ring(v, t, i, r, &counts, o),
            ReduceScatter::ReduceScatterv => reduce_scatter::reduce_scatterv(v, t, i, r, &counts, o),
            ReduceScatter::Wan => match &e.sites {
                Some(sites) => gridmpi_engine::coll::wan::reduce_scatter(v, sites, t, i, r, &counts, o),
                None => reduce_scatter::recursive_halving(v, t, i, r, &counts, o),
            },
        }
    }))
}

pub(crate) fn plan_reduce_scatter(
    st: &State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: Ints,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    let cs = counts(recvcounts, c.size, "recvcounts")?;
    plan_reduce_scatter_counts(st, sendbuf, recvbuf, cs, datatype, op, comm)
}

pub(crate) fn plan_reduce_scatter_block(
    st: &State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    let n = check_count(recvcount)?;
    plan_reduce_scatter_counts(st, sendbuf, recvbuf, vec![n; c.size as usize], datatype, op, comm)
}

// ---- scan and exscan ---------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_scan(
    st: &State,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    exclusive: bool,
) -> R<Build> {
    let c = CommShape::of(st, comm)?;
    not_aliased(sendbuf, recvbuf, c.remote.is_none() && count > 0)?;
    c.intra_only(if exclusive { "MPI_Exscan" } else { "MPI_Scan" })?;
    let n = check_count(count)?;
    let dt = st.dtype(datatype)?;
    let red = st.reducer(op, datatype)?;
    let recv = user_buf(recvbuf, n, dt.clone())?;
    let input = if in_place(sendbuf) { None } else { Some(user_buf(sendbuf, n, dt.clone())?) };
    let sel_in = reduction_input(&c, n, &dt, &red).0;
    Ok(Box::new(move |e| {
        let (v, t, i, r, o) = (e.v(), e.tag, input.clone(), recv.clone(), red.clone());
        match e.sel.scan(&sel_in) {
            Scan::RecursiveDoubling => scan::recursive_doubling(v, t, i, r, o, exclusive),
            Scan::Linear => scan::linear(v, t, i, r, o, exclusive),
        }
    }))
}

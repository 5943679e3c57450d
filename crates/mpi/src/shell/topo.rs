//! Process topologies: Cartesian, graph and distributed graph. A topology
//! is attached to a new communicator (`Comm::topo`) made by splitting the
//! old one; ranks are never reordered (`reorder` is a hint the standard
//! lets us ignore). The neighbour lists here are also those of the
//! neighbourhood collectives (neighbor.rs).

use super::*;
use crate::objects::*;
use gridmpi_engine::topo::{self as engine_topo, balanced_dims, graph_neighbors, Topo};
use crate::state;

/// MPI_UNWEIGHTED: the graph has no weights.
fn is_unweighted(p: *const c_int) -> bool {
    crate::exported::is_unweighted(p)
}

use crate::exported::is_weights_empty;


/// The neighbours of a process in its communicator's topology, in the
/// order of the neighbourhood collectives' buffers.
pub struct Neighbors {
    pub sources: Vec<i32>,
    pub dests: Vec<i32>,
    /// A Cartesian topology: the two directions of a dimension pair up
    /// crosswise (what I send towards -1 arrives in my -1 neighbour's +1 slot).
    pub cartesian: bool,
}

pub fn neighbors(c: &Comm) -> R<Neighbors> {
    let topo = c.topo.as_deref().ok_or_else(|| err(MPI_ERR_TOPOLOGY, "the communicator has no process topology"))?;
    Ok(match topo {
        Topo::Cart { dims, periods } => {
            let mut v = Vec::new();
            for d in 0..dims.len() {
                let (neg, pos) = Topo::shift(dims, periods, c.rank, d, 1);
                let (neg, pos) = (neg.unwrap_or(MPI_PROC_NULL), pos.unwrap_or(MPI_PROC_NULL));
                v.push(neg);
                v.push(pos);
            }
            Neighbors { sources: v.clone(), dests: v, cartesian: true }
        }
        Topo::Graph { index, edges } => {
            let v = graph_neighbors(index, edges, c.rank).to_vec();
            Neighbors { sources: v.clone(), dests: v, cartesian: false }
        }
        Topo::DistGraph { sources, dests, .. } => Neighbors { sources: sources.clone(), dests: dests.clone(), cartesian: false },
    })
}


/// The topology of `comm`.
fn topo_of(st: &State, comm: MPI_Comm) -> R<Arc<Topo>> {
    st.comm(comm)?.topo.clone().ok_or_else(|| err(MPI_ERR_TOPOLOGY, "the communicator has no process topology"))
}

fn cart_of(st: &State, comm: MPI_Comm) -> R<(Vec<i32>, Vec<bool>, i32)> {
    let rank = st.comm(comm)?.rank;
    match &*topo_of(st, comm)? {
        Topo::Cart { dims, periods } => Ok((dims.clone(), periods.clone(), rank)),
        _ => Err(err(MPI_ERR_TOPOLOGY, "the communicator does not have a Cartesian topology")),
    }
}

fn intra(st: &State, comm: MPI_Comm) -> R<(i32, i32)> {
    let c = st.comm(comm)?;
    if c.is_inter() {
        return Err(err(MPI_ERR_COMM, "process topologies need an intracommunicator"));
    }
    Ok((c.rank, c.size()))
}

/// A new communicator of the processes with `member` true (in rank order),
/// with `topo` attached; MPI_COMM_NULL for the others. Collective.
fn topo_comm(comm: MPI_Comm, member: bool, color: c_int, topo: Topo) -> R<MPI_Comm> {
    let rank = state::with(|st| Ok(st.comm(comm)?.rank))?;
    let newcomm = super::comm::split(comm, if member { color } else { MPI_UNDEFINED }, rank)?;
    if newcomm != MPI_COMM_NULL {
        state::with(|st| {
            st.comm_mut(newcomm)?.topo = Some(Arc::new(topo));
            Ok(())
        })?;
    }
    Ok(newcomm)
}

// The MPI_X of this file are generated from abi/functions.txt; these are
// their implementations.

// ---- Cartesian -------------------------------------------------------------------------

/// The number of processes of a grid, which must fit in `size`.
fn grid_size(dims: &[c_int], size: i32) -> R<i64> {
    let mut prod = 1i64;
    for (i, &d) in dims.iter().enumerate() {
        if d <= 0 {
            return Err(err(MPI_ERR_DIMS, format!("dims[{i}] = {d} (must be positive)")));
        }
        prod = prod.saturating_mul(d as i64);
    }
    if prod > size as i64 {
        return Err(err(MPI_ERR_ARG, format!("the grid has {prod} processes, the communicator only {size}")));
    }
    Ok(prod)
}

pub(crate) fn cart_create(comm: MPI_Comm, _ndims: c_int, dims: &[c_int], periods: &[c_int], _reorder: c_int) -> R<MPI_Comm> {
    let (rank, size) = state::with(|st| intra(st, comm))?;
    let prod = grid_size(dims, size)?;
    let topo = Topo::Cart { dims: dims.to_vec(), periods: periods.iter().map(|&x| x != 0).collect() };
    topo_comm(comm, (rank as i64) < prod, 0, topo)
}

pub(crate) fn cartdim(st: &mut State, comm: MPI_Comm) -> R<c_int> {
    Ok(cart_of(st, comm)?.0.len() as c_int)
}

pub(crate) fn cart_get(st: &mut State, comm: MPI_Comm, _maxdims: c_int) -> R<(Vec<c_int>, Vec<c_int>, Vec<c_int>)> {
    let (d, p, rank) = cart_of(st, comm)?;
    let c = Topo::coords_of(&d, rank);
    Ok((d, p.iter().map(|&x| x as c_int).collect(), c))
}

/// `coords` has as many entries as the grid has dimensions.
pub(crate) unsafe fn cart_rank(st: &mut State, comm: MPI_Comm, coords: *const c_int) -> R<c_int> {
    let (d, p, _) = cart_of(st, comm)?;
    let c = in_array(coords, d.len() as i64, "coords", "ndims")?;
    Topo::rank_at(&d, &p, c).ok_or_else(|| err(MPI_ERR_ARG, format!("coordinates {c:?} are outside the grid {d:?} (non-periodic dimension)")))
}

pub(crate) fn cart_coords(st: &mut State, comm: MPI_Comm, rank: c_int, _maxdims: c_int) -> R<Vec<c_int>> {
    let (d, _, _) = cart_of(st, comm)?;
    let size: i32 = d.iter().product();
    if !(0..size).contains(&rank) {
        return Err(err(MPI_ERR_RANK, format!("invalid rank {rank} (the grid has {size} processes)")));
    }
    Ok(Topo::coords_of(&d, rank))
}

pub(crate) fn cart_shift(st: &mut State, comm: MPI_Comm, direction: c_int, disp: c_int) -> R<(c_int, c_int)> {
    let (d, p, rank) = cart_of(st, comm)?;
    if !(0..d.len() as i32).contains(&direction) {
        return Err(err(MPI_ERR_ARG, format!("invalid direction {direction} (the grid has {} dimensions)", d.len())));
    }
    let (s, t) = Topo::shift(&d, &p, rank, direction as usize, disp);
    Ok((s.unwrap_or(MPI_PROC_NULL), t.unwrap_or(MPI_PROC_NULL)))
}

/// `remain_dims` has as many entries as the grid has dimensions.
pub(crate) unsafe fn cart_sub(comm: MPI_Comm, remain_dims: *const c_int) -> R<MPI_Comm> {
    let (d, p, rank) = state::with(|st| cart_of(st, comm))?;
    let keep: Vec<bool> = in_array(remain_dims, d.len() as i64, "remain_dims", "ndims")?.iter().map(|&x| x != 0).collect();
    let (color, sub) = engine_topo::cart_sub(&d, &p, rank, &keep);
    topo_comm(comm, true, color, sub)
}

/// Ranks are not reordered: a process keeps its rank if the grid has room.
pub(crate) fn cart_map(st: &mut State, comm: MPI_Comm, _ndims: c_int, dims: &[c_int], _periods: *const c_int) -> R<c_int> {
    let (rank, size) = intra(st, comm)?;
    let prod = grid_size(dims, size)?;
    Ok(if (rank as i64) < prod { rank } else { MPI_UNDEFINED })
}

/// The zero entries of `dims` filled with a balanced factorisation of what
/// the others leave of `nnodes`, largest first.
pub(crate) fn dims_create(nnodes: c_int, ndims: c_int, dims: &[c_int]) -> R<Vec<c_int>> {
    if nnodes <= 0 {
        return Err(err(MPI_ERR_ARG, format!("invalid nnodes {nnodes} (must be positive)")));
    }
    if ndims == 0 && nnodes != 1 {
        return Err(err(MPI_ERR_DIMS, "ndims is 0 but nnodes is not 1"));
    }
    let mut fixed = 1i64;
    for (i, &x) in dims.iter().enumerate() {
        if x < 0 {
            return Err(err(MPI_ERR_DIMS, format!("dims[{i}] = {x} is negative")));
        }
        fixed *= x.max(1) as i64;
    }
    if nnodes as i64 % fixed != 0 {
        return Err(err(MPI_ERR_DIMS, format!("nnodes {nnodes} is not a multiple of the fixed dimensions' product {fixed}")));
    }
    let free = dims.iter().filter(|&&x| x == 0).count();
    let rest = (nnodes as i64 / fixed) as i32;
    if free == 0 && rest != 1 {
        return Err(err(MPI_ERR_DIMS, format!("the fixed dimensions make {fixed} processes, not {nnodes}")));
    }
    let mut fill = balanced_dims(rest, free).into_iter();
    Ok(dims.iter().map(|&x| if x == 0 { fill.next().unwrap() } else { x }).collect())
}

// ---- graph ------------------------------------------------------------------------------

/// A graph description (`index` cumulative degrees of `nnodes` nodes, then
/// `edges` targets), checked, as (index, edges).
unsafe fn graph_arg(nnodes: c_int, size: i32, index: &[c_int], edges: *const c_int) -> R<(Vec<i32>, Vec<i32>)> {
    if nnodes > size {
        return Err(err(MPI_ERR_ARG, format!("invalid nnodes {nnodes} (communicator has {size} ranks)")));
    }
    let mut prev = 0;
    for (i, &x) in index.iter().enumerate() {
        if x < prev {
            return Err(err(MPI_ERR_ARG, format!("index[{i}] = {x} is smaller than index[{}] = {prev}", i.max(1) - 1)));
        }
        prev = x;
    }
    let edges = in_array(edges, prev, "edges", "index[nnodes - 1]")?;
    if let Some((i, e)) = edges.iter().enumerate().find(|(_, e)| !(0..nnodes).contains(e)) {
        return Err(err(MPI_ERR_ARG, format!("edges[{i}] = {e} is not a node (0..{nnodes})")));
    }
    Ok((index.to_vec(), edges.to_vec()))
}

pub(crate) unsafe fn graph_create(comm: MPI_Comm, nnodes: c_int, index: &[c_int], edges: *const c_int, _reorder: c_int) -> R<MPI_Comm> {
    let (rank, size) = state::with(|st| intra(st, comm))?;
    let (index, edges) = graph_arg(nnodes, size, index, edges)?;
    topo_comm(comm, rank < nnodes, 0, Topo::Graph { index, edges })
}

/// Ranks are not reordered: a process keeps its rank if it is a node.
pub(crate) unsafe fn graph_map(st: &mut State, comm: MPI_Comm, nnodes: c_int, index: &[c_int], edges: *const c_int) -> R<c_int> {
    let (rank, size) = intra(st, comm)?;
    graph_arg(nnodes, size, index, edges)?;
    Ok(if rank < nnodes { rank } else { MPI_UNDEFINED })
}

fn graph_of(st: &State, comm: MPI_Comm) -> R<(Vec<i32>, Vec<i32>)> {
    match &*topo_of(st, comm)? {
        Topo::Graph { index, edges } => Ok((index.clone(), edges.clone())),
        _ => Err(err(MPI_ERR_TOPOLOGY, "the communicator does not have a graph topology")),
    }
}

pub(crate) fn graphdims(st: &mut State, comm: MPI_Comm) -> R<(c_int, c_int)> {
    let (index, edges) = graph_of(st, comm)?;
    Ok((index.len() as c_int, edges.len() as c_int))
}

pub(crate) fn graph_get(st: &mut State, comm: MPI_Comm, _maxindex: c_int, _maxedges: c_int) -> R<(Vec<c_int>, Vec<c_int>)> {
    graph_of(st, comm)
}

/// The neighbours of node `rank`.
pub(crate) fn graph_node_neighbors(st: &mut State, comm: MPI_Comm, rank: c_int) -> R<Vec<c_int>> {
    let (index, edges) = graph_of(st, comm)?;
    if !(0..index.len() as i32).contains(&rank) {
        return Err(err(MPI_ERR_RANK, format!("invalid rank {rank} (the graph has {} nodes)", index.len())));
    }
    Ok(graph_neighbors(&index, &edges, rank).to_vec())
}

pub(crate) fn graph_neighbors_count(st: &mut State, comm: MPI_Comm, rank: c_int) -> R<c_int> {
    Ok(graph_node_neighbors(st, comm, rank)?.len() as c_int)
}

pub(crate) fn graph_neighbors_of(st: &mut State, comm: MPI_Comm, rank: c_int, _maxneighbors: c_int) -> R<Vec<c_int>> {
    graph_node_neighbors(st, comm, rank)
}

// ---- distributed graph ------------------------------------------------------------------

fn check_ranks(v: &[c_int], size: i32, what: &str) -> R<()> {
    match v.iter().enumerate().find(|(_, r)| !(0..size).contains(r)) {
        Some((i, r)) => Err(err(MPI_ERR_RANK, format!("{what}[{i}] = {r} is not a rank (0..{size})"))),
        None => Ok(()),
    }
}

/// A weights argument of `n` entries: None for MPI_UNWEIGHTED, the only
/// way to say the graph has no weights (MPI 4.1, 8.5.5: "weighted" is
/// false only then). NULL is an empty array where there are no entries
/// (MPICH's distgraph1), and taken leniently as MPI_UNWEIGHTED where
/// there are.
unsafe fn weights(p: *const c_int, n: i32, what: &str) -> R<Option<Vec<i32>>> {
    if is_unweighted(p) || (p.is_null() && n > 0) {
        return Ok(None);
    }
    if is_weights_empty(p) || n == 0 {
        return Ok(Some(Vec::new()));
    }
    Ok(Some(in_array(p, n, what, "the degree")?.to_vec()))
}

/// The size of `comm`, an intracommunicator, once `info` is checked.
fn graph_comm_size(comm: MPI_Comm, info: MPI_Info) -> R<i32> {
    state::with(|st| {
        if info != MPI_INFO_NULL {
            super::info::check_info(info)?;
        }
        Ok(intra(st, comm)?.1)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn dist_graph_create_adjacent(
    comm: MPI_Comm,
    indegree: c_int,
    sources: &[c_int],
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: &[c_int],
    destweights: *const c_int,
    info: MPI_Info,
    _reorder: c_int,
) -> R<MPI_Comm> {
    let size = graph_comm_size(comm, info)?;
    check_ranks(sources, size, "sources")?;
    check_ranks(destinations, size, "destinations")?;
    let topo = Topo::DistGraph {
        sourceweights: weights(sourceweights, indegree, "sourceweights")?,
        destweights: weights(destweights, outdegree, "destweights")?,
        sources: sources.to_vec(),
        dests: destinations.to_vec(),
    };
    topo_comm(comm, true, 0, topo)
}

/// Each process describes some edges; every edge's two ends learn of it
/// in one exchange.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn dist_graph_create(
    comm: MPI_Comm,
    _n: c_int,
    sources: &[c_int],
    degrees: &[c_int],
    destinations: *const c_int,
    weights_p: *const c_int,
    info: MPI_Info,
    _reorder: c_int,
) -> R<MPI_Comm> {
    let size = graph_comm_size(comm, info)?;
    check_ranks(sources, size, "sources")?;
    if let Some(d) = degrees.iter().find(|&&d| d < 0) {
        return Err(err(MPI_ERR_ARG, format!("negative degree {d}")));
    }
    let nedges: i32 = degrees.iter().sum();
    let dst = in_array(destinations, nedges, "destinations", "the sum of degrees")?;
    check_ranks(dst, size, "destinations")?;
    let given = weights(weights_p, nedges, "weights")?;
    let weighted = given.is_some();
    let w = match given {
        Some(w) if !w.is_empty() => w,
        _ => vec![1; nedges as usize],
    };
    let incoming = exchange_records(comm, &engine_topo::dist_graph_records(size, sources, degrees, dst, &w))?;
    topo_comm(comm, true, 0, engine_topo::dist_graph_from_records(&incoming, weighted))
}

/// Send `out[r]` to every rank r; returns what every rank sent us, in rank
/// order (counts first, then the data, both by the scattered alltoall).
fn exchange_records(comm: MPI_Comm, out: &[Vec<i32>]) -> R<Vec<i32>> {
    use gridmpi_engine::coll::alltoall;
    let p = out.len();
    let i32_buf = |v: &mut [i32]| unsafe { UserBuf::new(v.as_mut_ptr() as *mut u8, (v.len() * 4) as u64, gridmpi_engine::sched::byte_type()) };
    let mut send_n: Vec<i32> = out.iter().map(|v| v.len() as i32).collect();
    let mut recv_n = vec![0i32; p];
    let sb: Vec<UserBuf> = send_n.chunks_mut(1).map(i32_buf).collect();
    let rb: Vec<UserBuf> = recv_n.chunks_mut(1).map(i32_buf).collect();
    run_internal(comm, Box::new(move |e| alltoall::scattered(e.v(), e.tag, &sb, &rb, e.sel.alltoall_inflight)))?;
    let mut flat: Vec<i32> = out.concat();
    let total: usize = recv_n.iter().map(|&n| n as usize).sum();
    let mut inn = vec![0i32; total];
    let mut sb = Vec::new();
    let mut at = 0;
    for v in out {
        sb.push(i32_buf(&mut flat[at..at + v.len()]));
        at += v.len();
    }
    let mut rb = Vec::new();
    let mut at = 0;
    for &n in &recv_n {
        rb.push(i32_buf(&mut inn[at..at + n as usize]));
        at += n as usize;
    }
    run_internal(comm, Box::new(move |e| alltoall::scattered(e.v(), e.tag, &sb, &rb, e.sel.alltoall_inflight)))?;
    Ok(inn)
}

/// Run a collective schedule on `comm` to completion (for the library's own
/// use; the buffers must outlive the call).
fn run_internal(comm: MPI_Comm, build: super::coll::Build) -> R<()> {
    let r = state::with(|st| super::coll::start_internal(st, comm, &build))?;
    super::env::wait_engine(r)?;
    match state::with(|st| Ok(st.rt.engine.take_schedule_error(r)))? {
        Some(msg) => Err(super::coll::schedule_error(msg)),
        None => Ok(()),
    }
}

fn dist_graph_of(st: &State, comm: MPI_Comm) -> R<Arc<Topo>> {
    let t = topo_of(st, comm)?;
    match &*t {
        Topo::DistGraph { .. } => Ok(t),
        _ => Err(err(MPI_ERR_TOPOLOGY, "the communicator does not have a distributed graph topology")),
    }
}

pub(crate) fn dist_graph_counts(st: &mut State, comm: MPI_Comm) -> R<(c_int, c_int, c_int)> {
    match &*dist_graph_of(st, comm)? {
        Topo::DistGraph { sources, sourceweights, dests, .. } => Ok((sources.len() as c_int, dests.len() as c_int, sourceweights.is_some() as c_int)),
        _ => unreachable!(),
    }
}

/// The neighbour lists; the weights are stored here, where the caller did
/// not pass MPI_UNWEIGHTED or MPI_WEIGHTS_EMPTY.
pub(crate) unsafe fn dist_graph_neighbors_of(
    st: &mut State,
    comm: MPI_Comm,
    maxindegree: c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destweights: *mut c_int,
) -> R<(Vec<c_int>, Vec<c_int>)> {
    let t = dist_graph_of(st, comm)?;
    let Topo::DistGraph { sources, sourceweights: sw, dests, destweights: dw } = &*t else { unreachable!() };
    for (out, w, max, what) in [(sourceweights, sw, maxindegree, "sourceweights"), (destweights, dw, maxoutdegree, "destweights")] {
        if let Some(w) = w.as_ref().filter(|_| !out.is_null() && !is_unweighted(out) && !is_weights_empty(out)) {
            put_array(out, max, w, what)?;
        }
    }
    Ok((sources.clone(), dests.clone()))
}

pub(crate) fn topo_test(st: &mut State, comm: MPI_Comm) -> R<c_int> {
    Ok(match st.comm(comm)?.topo.as_deref() {
        None => MPI_UNDEFINED,
        Some(Topo::Cart { .. }) => MPI_CART,
        Some(Topo::Graph { .. }) => MPI_GRAPH,
        Some(Topo::DistGraph { .. }) => MPI_DIST_GRAPH,
    })
}

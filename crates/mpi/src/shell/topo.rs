//! Process topologies: Cartesian, graph and distributed graph. A topology
//! is attached to a new communicator (`Comm::topo`) made by splitting the
//! old one; ranks are never reordered (`reorder` is a hint the standard
//! lets us ignore). The neighbour lists here are also those of the
//! neighbourhood collectives (neighbor.rs).

use super::*;
use crate::objects::*;
use gridmpi_engine::topo::{balanced_dims, graph_neighbors, Topo};
use crate::state::{self, api, Target};

/// No weights: MPI_UNWEIGHTED (or, leniently, NULL).
fn is_unweighted(p: *const c_int) -> bool {
    p.is_null() || crate::exported::is_unweighted(p)
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
    let mut newcomm = MPI_COMM_NULL;
    // SAFETY: a valid output pointer.
    let rc = unsafe { super::comm::PMPI_Comm_split(comm, if member { color } else { MPI_UNDEFINED }, rank, &mut newcomm) };
    if rc != MPI_SUCCESS {
        return Err(crate::errors::MpiError { class: MPI_ERR_OTHER, msg: "splitting the communicator failed".into(), code: Some(rc) });
    }
    if newcomm != MPI_COMM_NULL {
        state::with(|st| {
            st.comm_mut(newcomm)?.topo = Some(Arc::new(topo));
            Ok(())
        })?;
    }
    Ok(newcomm)
}

// ---- Cartesian -------------------------------------------------------------------------

fn check_dims(dims: &[c_int]) -> R<i64> {
    let mut prod = 1i64;
    for (i, &d) in dims.iter().enumerate() {
        if d <= 0 {
            return Err(err(MPI_ERR_DIMS, format!("dims[{i}] = {d} (must be positive)")));
        }
        prod = prod.saturating_mul(d as i64);
    }
    Ok(prod)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_create(
    comm_old: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    comm_cart: *mut MPI_Comm,
) -> c_int {
    api("MPI_Cart_create", Target::Comm(comm_old), || {
        check_ptr(comm_cart, "comm_cart")?;
        if ndims < 0 {
            return Err(err(MPI_ERR_DIMS, format!("invalid ndims {ndims}")));
        }
        let (rank, size) = state::with(|st| intra(st, comm_old))?;
        let d = super::coll::array(dims, ndims, "dims")?.to_vec();
        let p: Vec<bool> = super::coll::array(periods, ndims, "periods")?.iter().map(|&x| x != 0).collect();
        let prod = check_dims(&d)?;
        if prod > size as i64 {
            return Err(err(MPI_ERR_ARG, format!("the grid has {prod} processes, the communicator only {size}")));
        }
        *comm_cart = topo_comm(comm_old, (rank as i64) < prod, 0, Topo::Cart { dims: d, periods: p })?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cartdim_get(comm: MPI_Comm, ndims: *mut c_int) -> c_int {
    api("MPI_Cartdim_get", Target::Comm(comm), || {
        check_ptr(ndims, "ndims")?;
        let (d, _, _) = state::with(|st| cart_of(st, comm))?;
        *ndims = d.len() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_get(comm: MPI_Comm, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) -> c_int {
    api("MPI_Cart_get", Target::Comm(comm), || {
        let (d, p, rank) = state::with(|st| cart_of(st, comm))?;
        let n = (maxdims.max(0) as usize).min(d.len());
        if n > 0 {
            check_ptr(dims, "dims")?;
            check_ptr(periods, "periods")?;
            check_ptr(coords, "coords")?;
        }
        let c = Topo::coords_of(&d, rank);
        for i in 0..n {
            *dims.add(i) = d[i];
            *periods.add(i) = p[i] as c_int;
            *coords.add(i) = c[i];
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_rank(comm: MPI_Comm, coords: *const c_int, rank: *mut c_int) -> c_int {
    api("MPI_Cart_rank", Target::Comm(comm), || {
        check_ptr(rank, "rank")?;
        let (d, p, _) = state::with(|st| cart_of(st, comm))?;
        let c = super::coll::array(coords, d.len() as i32, "coords")?;
        *rank = Topo::rank_at(&d, &p, c)
            .ok_or_else(|| err(MPI_ERR_ARG, format!("coordinates {c:?} are outside the grid {d:?} (non-periodic dimension)")))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_coords(comm: MPI_Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int {
    api("MPI_Cart_coords", Target::Comm(comm), || {
        let (d, _, _) = state::with(|st| cart_of(st, comm))?;
        let size: i32 = d.iter().product();
        if !(0..size).contains(&rank) {
            return Err(err(MPI_ERR_RANK, format!("invalid rank {rank} (the grid has {size} processes)")));
        }
        let c = Topo::coords_of(&d, rank);
        let n = (maxdims.max(0) as usize).min(d.len());
        if n > 0 {
            check_ptr(coords, "coords")?;
        }
        for (i, &x) in c.iter().take(n).enumerate() {
            *coords.add(i) = x;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_shift(comm: MPI_Comm, direction: c_int, disp: c_int, rank_source: *mut c_int, rank_dest: *mut c_int) -> c_int {
    api("MPI_Cart_shift", Target::Comm(comm), || {
        check_ptr(rank_source, "rank_source")?;
        check_ptr(rank_dest, "rank_dest")?;
        let (d, p, rank) = state::with(|st| cart_of(st, comm))?;
        if !(0..d.len() as i32).contains(&direction) {
            return Err(err(MPI_ERR_ARG, format!("invalid direction {direction} (the grid has {} dimensions)", d.len())));
        }
        let (s, t) = Topo::shift(&d, &p, rank, direction as usize, disp);
        *rank_source = s.unwrap_or(MPI_PROC_NULL);
        *rank_dest = t.unwrap_or(MPI_PROC_NULL);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_sub(comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm) -> c_int {
    api("MPI_Cart_sub", Target::Comm(comm), || {
        check_ptr(newcomm, "newcomm")?;
        let (d, p, rank) = state::with(|st| cart_of(st, comm))?;
        let keep: Vec<bool> = super::coll::array(remain_dims, d.len() as i32, "remain_dims")?.iter().map(|&x| x != 0).collect();
        // Processes that agree on the dropped coordinates share a subgrid.
        let c = Topo::coords_of(&d, rank);
        let mut color = 0;
        for i in 0..d.len() {
            if !keep[i] {
                color = color * d[i] + c[i];
            }
        }
        let sub = Topo::Cart {
            dims: (0..d.len()).filter(|&i| keep[i]).map(|i| d[i]).collect(),
            periods: (0..d.len()).filter(|&i| keep[i]).map(|i| p[i]).collect(),
        };
        *newcomm = topo_comm(comm, true, color, sub)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_map(comm: MPI_Comm, ndims: c_int, dims: *const c_int, _periods: *const c_int, newrank: *mut c_int) -> c_int {
    api("MPI_Cart_map", Target::Comm(comm), || {
        check_ptr(newrank, "newrank")?;
        if ndims < 0 {
            return Err(err(MPI_ERR_DIMS, format!("invalid ndims {ndims}")));
        }
        let (rank, size) = state::with(|st| intra(st, comm))?;
        let prod = check_dims(super::coll::array(dims, ndims, "dims")?)?;
        if prod > size as i64 {
            return Err(err(MPI_ERR_ARG, format!("the grid has {prod} processes, the communicator only {size}")));
        }
        *newrank = if (rank as i64) < prod { rank } else { MPI_UNDEFINED };
        Ok(())
    })
}

/// Balanced factorisation of `n` over `free` dimensions, largest first.

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    api("MPI_Dims_create", Target::NoComm, || {
        if nnodes <= 0 {
            return Err(err(MPI_ERR_ARG, format!("invalid nnodes {nnodes} (must be positive)")));
        }
        if ndims < 0 {
            return Err(err(MPI_ERR_DIMS, format!("invalid ndims {ndims}")));
        }
        if ndims == 0 {
            return if nnodes == 1 { Ok(()) } else { Err(err(MPI_ERR_DIMS, "ndims is 0 but nnodes is not 1")) };
        }
        check_ptr(dims, "dims")?;
        let d = std::slice::from_raw_parts_mut(dims, ndims as usize);
        let mut fixed = 1i64;
        for (i, &x) in d.iter().enumerate() {
            if x < 0 {
                return Err(err(MPI_ERR_DIMS, format!("dims[{i}] = {x} is negative")));
            }
            if x > 0 {
                fixed *= x as i64;
            }
        }
        if nnodes as i64 % fixed != 0 {
            return Err(err(MPI_ERR_DIMS, format!("nnodes {nnodes} is not a multiple of the fixed dimensions' product {fixed}")));
        }
        let free = d.iter().filter(|&&x| x == 0).count();
        let rest = (nnodes as i64 / fixed) as i32;
        if free == 0 {
            if rest != 1 {
                return Err(err(MPI_ERR_DIMS, format!("the fixed dimensions make {fixed} processes, not {nnodes}")));
            }
            return Ok(());
        }
        let mut fill = balanced_dims(rest, free).into_iter();
        for x in d.iter_mut().filter(|x| **x == 0) {
            *x = fill.next().unwrap();
        }
        Ok(())
    })
}

// ---- graph ------------------------------------------------------------------------------

/// Check a graph description (`index` cumulative degrees, `edges` targets).
fn check_graph(index: &[c_int], edges: &[c_int], nnodes: i32) -> R<()> {
    let mut prev = 0;
    for (i, &x) in index.iter().enumerate() {
        if x < prev {
            return Err(err(MPI_ERR_ARG, format!("index[{i}] = {x} is smaller than index[{}] = {prev}", i.max(1) - 1)));
        }
        prev = x;
    }
    for (i, &e) in edges.iter().enumerate() {
        if !(0..nnodes).contains(&e) {
            return Err(err(MPI_ERR_ARG, format!("edges[{i}] = {e} is not a node (0..{nnodes})")));
        }
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_create(
    comm_old: MPI_Comm,
    nnodes: c_int,
    indx: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    comm_graph: *mut MPI_Comm,
) -> c_int {
    api("MPI_Graph_create", Target::Comm(comm_old), || {
        check_ptr(comm_graph, "comm_graph")?;
        let (rank, size) = state::with(|st| intra(st, comm_old))?;
        if !(0..=size).contains(&nnodes) {
            return Err(err(MPI_ERR_ARG, format!("invalid nnodes {nnodes} (communicator has {size} ranks)")));
        }
        let index = super::coll::array(indx, nnodes, "index")?.to_vec();
        let nedges = index.last().copied().unwrap_or(0);
        let e = super::coll::array(edges, nedges, "edges")?.to_vec();
        check_graph(&index, &e, nnodes)?;
        *comm_graph = topo_comm(comm_old, rank < nnodes, 0, Topo::Graph { index, edges: e })?;
        Ok(())
    })
}

fn graph_of(st: &State, comm: MPI_Comm) -> R<(Vec<i32>, Vec<i32>)> {
    match &*topo_of(st, comm)? {
        Topo::Graph { index, edges } => Ok((index.clone(), edges.clone())),
        _ => Err(err(MPI_ERR_TOPOLOGY, "the communicator does not have a graph topology")),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graphdims_get(comm: MPI_Comm, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
    api("MPI_Graphdims_get", Target::Comm(comm), || {
        check_ptr(nnodes, "nnodes")?;
        check_ptr(nedges, "nedges")?;
        let (index, edges) = state::with(|st| graph_of(st, comm))?;
        *nnodes = index.len() as c_int;
        *nedges = edges.len() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_get(comm: MPI_Comm, maxindex: c_int, maxedges: c_int, indx: *mut c_int, edges: *mut c_int) -> c_int {
    api("MPI_Graph_get", Target::Comm(comm), || {
        let (index, e) = state::with(|st| graph_of(st, comm))?;
        for (i, &x) in index.iter().take(maxindex.max(0) as usize).enumerate() {
            check_ptr(indx, "index")?;
            *indx.add(i) = x;
        }
        for (i, &x) in e.iter().take(maxedges.max(0) as usize).enumerate() {
            check_ptr(edges, "edges")?;
            *edges.add(i) = x;
        }
        Ok(())
    })
}

fn graph_node(index: &[i32], rank: c_int) -> R<()> {
    if !(0..index.len() as i32).contains(&rank) {
        return Err(err(MPI_ERR_RANK, format!("invalid rank {rank} (the graph has {} nodes)", index.len())));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_neighbors_count(comm: MPI_Comm, rank: c_int, nneighbors: *mut c_int) -> c_int {
    api("MPI_Graph_neighbors_count", Target::Comm(comm), || {
        check_ptr(nneighbors, "nneighbors")?;
        let (index, edges) = state::with(|st| graph_of(st, comm))?;
        graph_node(&index, rank)?;
        *nneighbors = graph_neighbors(&index, &edges, rank).len() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_neighbors(comm: MPI_Comm, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int) -> c_int {
    api("MPI_Graph_neighbors", Target::Comm(comm), || {
        let (index, edges) = state::with(|st| graph_of(st, comm))?;
        graph_node(&index, rank)?;
        for (i, &x) in graph_neighbors(&index, &edges, rank).iter().take(maxneighbors.max(0) as usize).enumerate() {
            check_ptr(neighbors, "neighbors")?;
            *neighbors.add(i) = x;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_map(comm: MPI_Comm, nnodes: c_int, indx: *const c_int, edges: *const c_int, newrank: *mut c_int) -> c_int {
    api("MPI_Graph_map", Target::Comm(comm), || {
        check_ptr(newrank, "newrank")?;
        let (rank, size) = state::with(|st| intra(st, comm))?;
        if !(0..=size).contains(&nnodes) {
            return Err(err(MPI_ERR_ARG, format!("invalid nnodes {nnodes} (communicator has {size} ranks)")));
        }
        let index = super::coll::array(indx, nnodes, "index")?;
        let e = super::coll::array(edges, index.last().copied().unwrap_or(0), "edges")?;
        check_graph(index, e, nnodes)?;
        *newrank = if rank < nnodes { rank } else { MPI_UNDEFINED };
        Ok(())
    })
}

// ---- distributed graph ------------------------------------------------------------------

fn check_ranks(v: &[c_int], size: i32, what: &str) -> R<()> {
    for (i, &r) in v.iter().enumerate() {
        if !(0..size).contains(&r) {
            return Err(err(MPI_ERR_RANK, format!("{what}[{i}] = {r} is not a rank (0..{size})")));
        }
    }
    Ok(())
}

fn weights(p: *const c_int, n: i32, what: &str) -> R<Option<Vec<i32>>> {
    if is_unweighted(p) {
        return Ok(None);
    }
    if is_weights_empty(p) || n == 0 {
        return Ok(Some(Vec::new()));
    }
    Ok(Some(super::coll::array(p, n, what)?.to_vec()))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_create_adjacent(
    comm_old: MPI_Comm,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    info: MPI_Info,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    api("MPI_Dist_graph_create_adjacent", Target::Comm(comm_old), || {
        check_ptr(comm_dist_graph, "comm_dist_graph")?;
        if indegree < 0 || outdegree < 0 {
            return Err(err(MPI_ERR_ARG, format!("invalid degrees {indegree}, {outdegree}")));
        }
        let (_, size) = state::with(|st| {
            if info != MPI_INFO_NULL {
                super::info::check_info(info)?;
            }
            intra(st, comm_old)
        })?;
        let src = super::coll::array(sources, indegree, "sources")?.to_vec();
        let dst = super::coll::array(destinations, outdegree, "destinations")?.to_vec();
        check_ranks(&src, size, "sources")?;
        check_ranks(&dst, size, "destinations")?;
        let topo = Topo::DistGraph {
            sourceweights: weights(sourceweights, indegree, "sourceweights")?,
            destweights: weights(destweights, outdegree, "destweights")?,
            sources: src,
            dests: dst,
        };
        *comm_dist_graph = topo_comm(comm_old, true, 0, topo)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_create(
    comm_old: MPI_Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_p: *const c_int,
    info: MPI_Info,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    api("MPI_Dist_graph_create", Target::Comm(comm_old), || {
        check_ptr(comm_dist_graph, "comm_dist_graph")?;
        if n < 0 {
            return Err(err(MPI_ERR_ARG, format!("invalid n {n}")));
        }
        let (_, size) = state::with(|st| {
            if info != MPI_INFO_NULL {
                super::info::check_info(info)?;
            }
            intra(st, comm_old)
        })?;
        let src = super::coll::array(sources, n, "sources")?;
        let deg = super::coll::array(degrees, n, "degrees")?;
        check_ranks(src, size, "sources")?;
        if let Some(d) = deg.iter().find(|&&d| d < 0) {
            return Err(err(MPI_ERR_ARG, format!("negative degree {d}")));
        }
        let nedges: i32 = deg.iter().sum();
        let dst = super::coll::array(destinations, nedges, "destinations")?;
        check_ranks(dst, size, "destinations")?;
        let weighted = !is_unweighted(weights_p);
        let w = if weighted && nedges > 0 && !is_weights_empty(weights_p) {
            super::coll::array(weights_p, nedges, "weights")?.to_vec()
        } else {
            vec![1; nedges as usize]
        };
        // Tell each edge's two ends about it: records (is_out, peer, weight),
        // the source learning an out-edge and the destination an in-edge.
        let mut outgoing: Vec<Vec<i32>> = vec![Vec::new(); size as usize];
        let mut k = 0;
        for (i, &s) in src.iter().enumerate() {
            for _ in 0..deg[i] {
                let d = dst[k];
                outgoing[s as usize].extend([1, d, w[k]]);
                outgoing[d as usize].extend([0, s, w[k]]);
                k += 1;
            }
        }
        let incoming = exchange_records(comm_old, &outgoing)?;
        let (mut ins, mut inw, mut outs, mut outw) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for rec in incoming.chunks(3) {
            if rec[0] == 1 {
                outs.push(rec[1]);
                outw.push(rec[2]);
            } else {
                ins.push(rec[1]);
                inw.push(rec[2]);
            }
        }
        let topo = Topo::DistGraph {
            sources: ins,
            sourceweights: weighted.then_some(inw),
            dests: outs,
            destweights: weighted.then_some(outw),
        };
        *comm_dist_graph = topo_comm(comm_old, true, 0, topo)?;
        Ok(())
    })
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

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_neighbors_count(comm: MPI_Comm, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) -> c_int {
    api("MPI_Dist_graph_neighbors_count", Target::Comm(comm), || {
        check_ptr(indegree, "indegree")?;
        check_ptr(outdegree, "outdegree")?;
        check_ptr(weighted, "weighted")?;
        let t = state::with(|st| dist_graph_of(st, comm))?;
        if let Topo::DistGraph { sources, sourceweights, dests, .. } = &*t {
            *indegree = sources.len() as c_int;
            *outdegree = dests.len() as c_int;
            *weighted = sourceweights.is_some() as c_int;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_neighbors(
    comm: MPI_Comm,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    api("MPI_Dist_graph_neighbors", Target::Comm(comm), || {
        let t = state::with(|st| dist_graph_of(st, comm))?;
        let Topo::DistGraph { sources: s, sourceweights: sw, dests: d, destweights: dw } = &*t else { unreachable!() };
        let put = |out: *mut c_int, v: &[i32], max: c_int, what: &str| -> R<()> {
            let n = v.len().min(max.max(0) as usize);
            if n > 0 {
                check_ptr(out, what)?;
                // SAFETY: the caller passes room for `max` values.
                unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out, n) };
            }
            Ok(())
        };
        put(sources, s, maxindegree, "sources")?;
        put(destinations, d, maxoutdegree, "destinations")?;
        if let Some(w) = sw {
            if !is_unweighted(sourceweights) && !is_weights_empty(sourceweights) {
                put(sourceweights, w, maxindegree, "sourceweights")?;
            }
        }
        if let Some(w) = dw {
            if !is_unweighted(destweights) && !is_weights_empty(destweights) {
                put(destweights, w, maxoutdegree, "destweights")?;
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Topo_test(comm: MPI_Comm, status: *mut c_int) -> c_int {
    api("MPI_Topo_test", Target::Comm(comm), || {
        check_ptr(status, "status")?;
        let t = state::with(|st| Ok(st.comm(comm)?.topo.clone()))?;
        *status = match t.as_deref() {
            None => MPI_UNDEFINED,
            Some(Topo::Cart { .. }) => MPI_CART,
            Some(Topo::Graph { .. }) => MPI_GRAPH,
            Some(Topo::DistGraph { .. }) => MPI_DIST_GRAPH,
        };
        Ok(())
    })
}

//! Virtual topology entry points: Cartesian, graph and distributed-graph communicators,
//! MPI_Dims_create and MPI_Topo_test. The behaviour is in `crate::topo`.

// The entry points take MPI's C argument lists as they are.
#![allow(clippy::too_many_arguments)]

use super::consts::*;
use super::types::*;
use crate::error::{MpiResult, err};
use crate::runtime;
use crate::topo::{self, Topology};
use std::ffi::c_int;

/// A C array of `n` ints (NULL is fine when `n` is 0).
///
/// # Safety
/// `p` is NULL or points at `n` readable ints that outlive the returned slice's use.
unsafe fn ints<'a>(p: *const c_int, n: usize, what: &str) -> MpiResult<&'a [c_int]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return err(MPI_ERR_ARG, format!("null pointer in parameter {what}"));
    }
    // SAFETY: non-null, and the caller guarantees n elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Writes `vals` to the C array `p` (room for at least `vals.len()`).
///
/// # Safety
/// `p` is NULL only when `vals` is empty, else points at `vals.len()` writable ints.
unsafe fn write_ints(p: *mut c_int, vals: &[c_int], what: &str) -> MpiResult {
    if vals.is_empty() {
        return Ok(());
    }
    if p.is_null() {
        return err(MPI_ERR_ARG, format!("null pointer in parameter {what}"));
    }
    // SAFETY: non-null; the caller guarantees room for vals.len() ints.
    unsafe { std::ptr::copy_nonoverlapping(vals.as_ptr(), p, vals.len()) };
    Ok(())
}

/// Writes one int through a checked pointer.
///
/// # Safety
/// `p` is NULL or writable.
unsafe fn write_int(p: *mut c_int, v: c_int, what: &str) -> MpiResult {
    if p.is_null() {
        return err(MPI_ERR_ARG, format!("null pointer in parameter {what}"));
    }
    // SAFETY: non-null; writable by the caller's contract.
    unsafe { *p = v };
    Ok(())
}

fn check_count(n: c_int, what: &str) -> MpiResult<usize> {
    if n < 0 {
        return err(MPI_ERR_ARG, format!("invalid {what} argument ({what}={n}, must be non-negative)"));
    }
    Ok(n as usize)
}

/// Hands a new communicator to C with the parent's error handler.
///
/// # Safety
/// `newcomm` is NULL or writable.
unsafe fn store(parent: MPI_Comm, made: Option<MPI_Comm>, newcomm: *mut MPI_Comm) -> MpiResult {
    if let Some(h) = made {
        crate::errhandler::on_comm_dup(parent, h);
    }
    // SAFETY: checked non-null by the callers.
    unsafe { *newcomm = made.unwrap_or(MPI_COMM_NULL) };
    Ok(())
}

/// Checks the new communicator's pointer and sets it to MPI_COMM_NULL, so that a call
/// failing from here on (a grid larger than the communicator, ...) leaves MPI_COMM_NULL there
/// rather than whatever the caller's variable held (as MPICH does).
fn clear_new(p: *mut MPI_Comm) -> MpiResult {
    if p.is_null() {
        return err(MPI_ERR_ARG, "null pointer in parameter newcomm");
    }
    // SAFETY: non-null, and MPI's contract makes it the caller's writable MPI_Comm.
    unsafe { *p = MPI_COMM_NULL };
    Ok(())
}

fn comm_size(comm: MPI_Comm) -> MpiResult<usize> {
    runtime::with(|rt| Ok(rt.comms.get(comm)?.size()))
}

// ----- Cartesian -----

pub unsafe fn MPI_Cart_create(
    comm_old: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    comm_cart: *mut MPI_Comm,
) -> MpiResult {
    comm_size(comm_old)?;
    let n = check_count(ndims, "ndims")?;
    // SAFETY: MPI's contract: ndims entries each.
    let (dims, periods) = unsafe { (ints(dims, n, "dims")?, ints(periods, n, "periods")?) };
    clear_new(comm_cart)?;
    let made = runtime::with(|rt| topo::cart_create(&mut rt.comms, &mut rt.engine, comm_old, dims, periods))?;
    // SAFETY: checked non-null.
    unsafe { store(comm_old, made, comm_cart) }
}

/// Size of `comm` and this rank in it; MPI_ERR_COMM unless it is an intracommunicator.
fn intra_size_rank(comm: MPI_Comm, what: &str) -> MpiResult<(usize, usize)> {
    runtime::with(|rt| {
        let c = rt.comms.get(comm)?;
        c.check_intra(what)?;
        Ok((c.size(), c.rank))
    })
}

pub unsafe fn MPI_Cart_map(
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> MpiResult {
    let (size, rank) = intra_size_rank(comm, "MPI_Cart_map")?;
    let n = check_count(ndims, "ndims")?;
    // SAFETY: MPI's contract: ndims entries each.
    let cart = unsafe { topo::Cart::new(ints(dims, n, "dims")?, ints(periods, n, "periods")?, size)? };
    // SAFETY: checked by write_int.
    unsafe { write_int(newrank, topo::map_rank(rank, cart.size()), "newrank") }
}

pub unsafe fn MPI_Cartdim_get(comm: MPI_Comm, ndims: *mut c_int) -> MpiResult {
    let n = runtime::with(|rt| Ok(topo::cart_of(rt.comms.get(comm)?)?.ndims()))?;
    // SAFETY: checked by write_int.
    unsafe { write_int(ndims, n as c_int, "ndims") }
}

pub unsafe fn MPI_Cart_get(
    comm: MPI_Comm,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> MpiResult {
    let (cart, rank) = runtime::with(|rt| {
        let c = rt.comms.get(comm)?;
        Ok((topo::cart_of(c)?.clone(), c.rank))
    })?;
    let max = check_count(maxdims, "maxdims")?;
    let n = cart.ndims().min(max);
    let periods_int: Vec<c_int> = cart.periods.iter().map(|&p| p as c_int).collect();
    // SAFETY: MPI's contract: room for maxdims entries in each array.
    unsafe {
        write_ints(dims, &cart.dims[..n], "dims")?;
        write_ints(periods, &periods_int[..n], "periods")?;
        write_ints(coords, &cart.coords(rank)[..n], "coords")
    }
}

pub unsafe fn MPI_Cart_rank(comm: MPI_Comm, coords: *const c_int, rank: *mut c_int) -> MpiResult {
    let cart = runtime::with(|rt| Ok(topo::cart_of(rt.comms.get(comm)?)?.clone()))?;
    // SAFETY: MPI's contract: ndims entries.
    let coords = unsafe { ints(coords, cart.ndims(), "coords")? };
    let r = cart.rank(coords)?;
    // SAFETY: checked by write_int.
    unsafe { write_int(rank, r, "rank") }
}

pub unsafe fn MPI_Cart_coords(comm: MPI_Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) -> MpiResult {
    let (cart, size) = runtime::with(|rt| {
        let c = rt.comms.get(comm)?;
        Ok((topo::cart_of(c)?.clone(), c.size()))
    })?;
    if rank < 0 || rank as usize >= size {
        return err(MPI_ERR_RANK, format!("invalid rank argument (rank={rank}, communicator size {size})"));
    }
    let max = check_count(maxdims, "maxdims")?;
    if max < cart.ndims() {
        return err(
            MPI_ERR_ARG,
            format!("invalid maxdims argument (maxdims={max}, the topology has {} dimensions)", cart.ndims()),
        );
    }
    // SAFETY: MPI's contract: room for maxdims entries.
    unsafe { write_ints(coords, &cart.coords(rank as usize), "coords") }
}

pub unsafe fn MPI_Cart_shift(
    comm: MPI_Comm,
    direction: c_int,
    disp: c_int,
    rank_source: *mut c_int,
    rank_dest: *mut c_int,
) -> MpiResult {
    let (src, dst) = runtime::with(|rt| {
        let c = rt.comms.get(comm)?;
        topo::cart_of(c)?.shift(c.rank, direction, disp)
    })?;
    // SAFETY: checked by write_int.
    unsafe {
        write_int(rank_source, src, "rank_source")?;
        write_int(rank_dest, dst, "rank_dest")
    }
}

pub unsafe fn MPI_Cart_sub(comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm) -> MpiResult {
    let n = runtime::with(|rt| Ok(topo::cart_of(rt.comms.get(comm)?)?.ndims()))?;
    // SAFETY: MPI's contract: ndims entries.
    let remain: Vec<bool> = unsafe { ints(remain_dims, n, "remain_dims")? }.iter().map(|&r| r != 0).collect();
    clear_new(newcomm)?;
    let h = runtime::with(|rt| topo::cart_sub(&mut rt.comms, &mut rt.engine, comm, &remain))?;
    // SAFETY: checked non-null.
    unsafe { store(comm, h, newcomm) }
}

pub unsafe fn MPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> MpiResult {
    if ndims < 0 {
        return err(MPI_ERR_DIMS, format!("invalid ndims argument (ndims={ndims}, must be non-negative)"));
    }
    if ndims == 0 {
        return Ok(());
    }
    if dims.is_null() {
        return err(MPI_ERR_ARG, "null pointer in parameter dims");
    }
    // SAFETY: non-null; MPI's contract: ndims read-write entries.
    let dims = unsafe { std::slice::from_raw_parts_mut(dims, ndims as usize) };
    let mut work = dims.to_vec();
    topo::dims_create(nnodes, &mut work)?;
    dims.copy_from_slice(&work);
    Ok(())
}

// ----- graphs -----

pub unsafe fn MPI_Graph_create(
    comm_old: MPI_Comm,
    nnodes: c_int,
    indx: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    comm_graph: *mut MPI_Comm,
) -> MpiResult {
    comm_size(comm_old)?;
    let n = check_count(nnodes, "nnodes")?;
    // SAFETY: MPI's contract: nnodes index entries, index[nnodes-1] edges.
    let (index, edges) = unsafe {
        let index = ints(indx, n, "index")?;
        let nedges = index.last().copied().unwrap_or(0);
        (index, ints(edges, check_count(nedges, "index[nnodes-1]")?, "edges")?)
    };
    clear_new(comm_graph)?;
    let made = runtime::with(|rt| topo::graph_create(&mut rt.comms, &mut rt.engine, comm_old, index, edges))?;
    // SAFETY: checked non-null.
    unsafe { store(comm_old, made, comm_graph) }
}

pub unsafe fn MPI_Graph_map(
    comm: MPI_Comm,
    nnodes: c_int,
    indx: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> MpiResult {
    let (size, rank) = intra_size_rank(comm, "MPI_Graph_map")?;
    let n = check_count(nnodes, "nnodes")?;
    if n == 0 {
        return err(MPI_ERR_ARG, "invalid nnodes argument (nnodes=0, must be positive)");
    }
    // SAFETY: MPI's contract: nnodes index entries, index[nnodes-1] edges.
    let graph = unsafe {
        let index = ints(indx, n, "index")?;
        let nedges = check_count(index[n - 1], "index[nnodes-1]")?;
        topo::Graph::new(index, ints(edges, nedges, "edges")?, size)?
    };
    // SAFETY: checked by write_int.
    unsafe { write_int(newrank, topo::map_rank(rank, graph.nnodes() as u64), "newrank") }
}

pub unsafe fn MPI_Graphdims_get(comm: MPI_Comm, nnodes: *mut c_int, nedges: *mut c_int) -> MpiResult {
    let (n, e) = runtime::with(|rt| {
        let g = topo::graph_of(rt.comms.get(comm)?)?;
        Ok((g.nnodes(), g.edges.len()))
    })?;
    // SAFETY: checked by write_int.
    unsafe {
        write_int(nnodes, n as c_int, "nnodes")?;
        write_int(nedges, e as c_int, "nedges")
    }
}

pub unsafe fn MPI_Graph_get(
    comm: MPI_Comm,
    maxindex: c_int,
    maxedges: c_int,
    indx: *mut c_int,
    edges: *mut c_int,
) -> MpiResult {
    let g = runtime::with(|rt| Ok(topo::graph_of(rt.comms.get(comm)?)?.clone()))?;
    let (mi, me) = (check_count(maxindex, "maxindex")?, check_count(maxedges, "maxedges")?);
    // SAFETY: MPI's contract: room for maxindex and maxedges entries.
    unsafe {
        write_ints(indx, &g.index[..mi.min(g.index.len())], "index")?;
        write_ints(edges, &g.edges[..me.min(g.edges.len())], "edges")
    }
}

pub unsafe fn MPI_Graph_neighbors_count(comm: MPI_Comm, rank: c_int, nneighbors: *mut c_int) -> MpiResult {
    let n = runtime::with(|rt| Ok(topo::graph_of(rt.comms.get(comm)?)?.neighbors(rank)?.len()))?;
    // SAFETY: checked by write_int.
    unsafe { write_int(nneighbors, n as c_int, "nneighbors") }
}

pub unsafe fn MPI_Graph_neighbors(
    comm: MPI_Comm,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> MpiResult {
    let nb = runtime::with(|rt| Ok(topo::graph_of(rt.comms.get(comm)?)?.neighbors(rank)?.to_vec()))?;
    let max = check_count(maxneighbors, "maxneighbors")?;
    // SAFETY: MPI's contract: room for maxneighbors entries.
    unsafe { write_ints(neighbors, &nb[..max.min(nb.len())], "neighbors") }
}

// ----- distributed graphs -----

/// Weights as given: `None` for MPI_UNWEIGHTED.
///
/// # Safety
/// As `ints`.
unsafe fn weights<'a>(p: *const c_int, n: usize, what: &str) -> MpiResult<Option<&'a [c_int]>> {
    if p == super::globals::MPI_UNWEIGHTED.get().cast_const() {
        return Ok(None);
    }
    if p == super::globals::MPI_WEIGHTS_EMPTY.get().cast_const() || n == 0 {
        return Ok(Some(&[]));
    }
    // SAFETY: caller contract.
    unsafe { ints(p, n, what).map(Some) }
}

pub unsafe fn MPI_Dist_graph_create_adjacent(
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
) -> MpiResult {
    comm_size(comm_old)?;
    crate::info::get_or_empty(info)?;
    let (nin, nout) = (check_count(indegree, "indegree")?, check_count(outdegree, "outdegree")?);
    // SAFETY: MPI's contract: indegree sources (and weights), outdegree destinations.
    let (src, sw, dst, dw) = unsafe {
        (
            ints(sources, nin, "sources")?,
            weights(sourceweights, nin, "sourceweights")?,
            ints(destinations, nout, "destinations")?,
            weights(destweights, nout, "destweights")?,
        )
    };
    clear_new(comm_dist_graph)?;
    let h = runtime::with(|rt| {
        topo::dist_graph_create_adjacent(&mut rt.comms, &mut rt.engine, comm_old, src, sw, dst, dw)
    })?;
    // SAFETY: checked non-null.
    unsafe { store(comm_old, Some(h), comm_dist_graph) }
}

pub unsafe fn MPI_Dist_graph_create(
    comm_old: MPI_Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_: *const c_int,
    info: MPI_Info,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> MpiResult {
    comm_size(comm_old)?;
    crate::info::get_or_empty(info)?;
    let n = check_count(n, "n")?;
    // SAFETY: MPI's contract: n sources and degrees, sum(degrees) destinations and weights.
    let (edges, weighted) = unsafe {
        let src = ints(sources, n, "sources")?;
        let deg = ints(degrees, n, "degrees")?;
        let mut total = 0usize;
        for &d in deg {
            total += check_count(d, "degrees")?;
        }
        let dst = ints(destinations, total, "destinations")?;
        let w = weights(weights_, total, "weights")?;
        let mut edges = Vec::with_capacity(total);
        let mut k = 0;
        for (i, &s) in src.iter().enumerate() {
            for _ in 0..deg[i] {
                edges.push((s, dst[k], w.map_or(1, |w| w.get(k).copied().unwrap_or(1))));
                k += 1;
            }
        }
        (edges, w.is_some())
    };
    clear_new(comm_dist_graph)?;
    let h = runtime::with(|rt| topo::dist_graph_create(&mut rt.comms, &mut rt.engine, comm_old, &edges, weighted))?;
    // SAFETY: checked non-null.
    unsafe { store(comm_old, Some(h), comm_dist_graph) }
}

pub unsafe fn MPI_Dist_graph_neighbors_count(
    comm: MPI_Comm,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> MpiResult {
    let (i, o, w) = runtime::with(|rt| {
        let g = topo::dist_graph_of(rt.comms.get(comm)?)?;
        Ok((g.sources.len(), g.dests.len(), g.weighted))
    })?;
    // SAFETY: checked by write_int.
    unsafe {
        write_int(indegree, i as c_int, "indegree")?;
        write_int(outdegree, o as c_int, "outdegree")?;
        write_int(weighted, w as c_int, "weighted")
    }
}

pub unsafe fn MPI_Dist_graph_neighbors(
    comm: MPI_Comm,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> MpiResult {
    let g = runtime::with(|rt| Ok(topo::dist_graph_of(rt.comms.get(comm)?)?.clone()))?;
    let (mi, mo) = (check_count(maxindegree, "maxindegree")?, check_count(maxoutdegree, "maxoutdegree")?);
    let (ni, no) = (mi.min(g.sources.len()), mo.min(g.dests.len()));
    let unweighted = super::globals::MPI_UNWEIGHTED.get();
    // SAFETY: MPI's contract: room for maxindegree / maxoutdegree entries.
    unsafe {
        write_ints(sources, &g.sources[..ni], "sources")?;
        write_ints(destinations, &g.dests[..no], "destinations")?;
        if g.weighted {
            if sourceweights != unweighted && !sourceweights.is_null() {
                write_ints(sourceweights, &g.source_weights[..ni.min(g.source_weights.len())], "sourceweights")?;
            }
            if destweights != unweighted && !destweights.is_null() {
                write_ints(destweights, &g.dest_weights[..no.min(g.dest_weights.len())], "destweights")?;
            }
        }
    }
    Ok(())
}

pub unsafe fn MPI_Topo_test(comm: MPI_Comm, status: *mut c_int) -> MpiResult {
    let kind = runtime::with(|rt| Ok(rt.comms.get(comm)?.topo.as_ref().map_or(MPI_UNDEFINED, Topology::kind)))?;
    // SAFETY: checked by write_int.
    unsafe { write_int(status, kind, "status") }
}

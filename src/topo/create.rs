//! Making communicators with a topology: the first ranks of the parent in order (no
//! reordering, as MPICH by default), with the topology attached. MPI_Dist_graph_create also
//! routes every edge to both of its ends, collectively over the parent's internal context.

use super::*;
use crate::abi::types::MPI_Comm;
use crate::comm::{Comm, Comms};
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::{Op, SendMode};
use crate::p2p::{Engine, Envelope};

/// Tags of the edge exchange of MPI_Dist_graph_create on the parent's internal context
/// (apart from the communicator-management tags 1..5 and the collectives' ranges).
const TAG_EDGE_COUNT: i32 = 8;
const TAG_EDGES: i32 = 9;

/// The topology of `comm`, which must be of the kind `what` names (MPI_ERR_TOPOLOGY if not).
pub fn topology<'a, T>(
    comm: &'a Comm,
    what: &str,
    pick: impl FnOnce(&'a Topology) -> Option<&'a T>,
) -> MpiResult<&'a T> {
    match comm.topo.as_ref().and_then(pick) {
        Some(t) => Ok(t),
        None => err(MPI_ERR_TOPOLOGY, format!("invalid topology (the communicator has no {what} topology)")),
    }
}

pub fn cart_of(comm: &Comm) -> MpiResult<&Cart> {
    topology(comm, "Cartesian", |t| if let Topology::Cart(c) = t { Some(c) } else { None })
}

pub fn graph_of(comm: &Comm) -> MpiResult<&Graph> {
    topology(comm, "graph", |t| if let Topology::Graph(g) = t { Some(g) } else { None })
}

pub fn dist_graph_of(comm: &Comm) -> MpiResult<&DistGraph> {
    topology(comm, "distributed graph", |t| if let Topology::DistGraph(g) = t { Some(g) } else { None })
}

/// The communicator of the first `n` ranks of `parent` with topology `topo`; `None` on the
/// other ranks.
fn first_ranks(
    comms: &mut Comms,
    engine: &mut Engine,
    parent: MPI_Comm,
    n: usize,
    topo: Topology,
) -> MpiResult<Option<MPI_Comm>> {
    let group = comms.get(parent)?.members[..n].to_vec();
    let made = comms.create(engine, parent, &group)?.run(comms, engine)?;
    if let Some(h) = made {
        comms.get_mut(h)?.topo = Some(topo);
    }
    Ok(made)
}

/// MPI_Cart_create (collective over `parent`).
pub fn cart_create(
    comms: &mut Comms,
    engine: &mut Engine,
    parent: MPI_Comm,
    dims: &[i32],
    periods: &[i32],
) -> MpiResult<Option<MPI_Comm>> {
    let p = comms.get(parent)?;
    p.check_intra("MPI_Cart_create")?;
    let cart = Cart::new(dims, periods, p.size())?;
    let n = cart.size() as usize;
    first_ranks(comms, engine, parent, n, Topology::Cart(cart))
}

/// MPI_Graph_create (collective over `parent`).
pub fn graph_create(
    comms: &mut Comms,
    engine: &mut Engine,
    parent: MPI_Comm,
    index: &[i32],
    edges: &[i32],
) -> MpiResult<Option<MPI_Comm>> {
    let p = comms.get(parent)?;
    p.check_intra("MPI_Graph_create")?;
    let graph = Graph::new(index, edges, p.size())?;
    let n = graph.nnodes();
    first_ranks(comms, engine, parent, n, Topology::Graph(graph))
}

/// MPI_Cart_sub (collective over `parent`, a Cartesian communicator). Keeping no dimension
/// gives rank 0 a zero-dimensional grid of itself and the other ranks MPI_COMM_NULL, as in
/// MPICH.
pub fn cart_sub(
    comms: &mut Comms,
    engine: &mut Engine,
    parent: MPI_Comm,
    remain: &[bool],
) -> MpiResult<Option<MPI_Comm>> {
    let p = comms.get(parent)?;
    let (mut color, key, sub) = cart_of(p)?.sub(p.rank, remain);
    if !remain.contains(&true) && p.rank != 0 {
        color = MPI_UNDEFINED;
    }
    let Some(h) = comms.split(engine, parent, color, key)?.run(comms, engine)? else { return Ok(None) };
    comms.get_mut(h)?.topo = Some(Topology::Cart(sub));
    Ok(Some(h))
}

/// Checks that every rank of `ranks` names a process of a communicator of `size`.
pub fn check_ranks(ranks: &[i32], size: usize, what: &str) -> MpiResult<()> {
    match ranks.iter().enumerate().find(|(_, r)| !(0..size as i32).contains(r)) {
        Some((i, r)) => err(MPI_ERR_ARG, format!("invalid {what} array ({what}[{i}]={r}, communicator size {size})")),
        None => Ok(()),
    }
}

/// A duplicate of `parent` (collective) carrying `topo`.
fn dup_with(comms: &mut Comms, engine: &mut Engine, parent: MPI_Comm, topo: Topology) -> MpiResult<MPI_Comm> {
    comms.get(parent)?.check_intra("MPI_Dist_graph_create")?;
    let h = comms.dup(engine, parent)?.run(comms, engine)?.expect("a duplicate exists on every member");
    comms.get_mut(h)?.topo = Some(topo);
    Ok(h)
}

/// MPI_Dist_graph_create_adjacent (collective over `parent`); weights are `None` for
/// MPI_UNWEIGHTED.
pub fn dist_graph_create_adjacent(
    comms: &mut Comms,
    engine: &mut Engine,
    parent: MPI_Comm,
    sources: &[i32],
    source_weights: Option<&[i32]>,
    dests: &[i32],
    dest_weights: Option<&[i32]>,
) -> MpiResult<MPI_Comm> {
    let size = comms.get(parent)?.size();
    check_ranks(sources, size, "sources")?;
    check_ranks(dests, size, "destinations")?;
    let weighted = source_weights.is_some() || dest_weights.is_some();
    let g = DistGraph {
        sources: sources.to_vec(),
        source_weights: source_weights.map_or_else(Vec::new, |w| w.to_vec()),
        dests: dests.to_vec(),
        dest_weights: dest_weights.map_or_else(Vec::new, |w| w.to_vec()),
        weighted,
    };
    dup_with(comms, engine, parent, Topology::DistGraph(g))
}

/// MPI_Dist_graph_create (collective over `parent`): this process names the edges
/// `edges[i] = (source, destination, weight)`; weights are ignored when `weighted` is false.
pub fn dist_graph_create(
    comms: &mut Comms,
    engine: &mut Engine,
    parent: MPI_Comm,
    edges: &[(i32, i32, i32)],
    weighted: bool,
) -> MpiResult<MPI_Comm> {
    let p = comms.get(parent)?;
    p.check_intra("MPI_Dist_graph_create")?;
    let (rank, members, ctx) = (p.rank, p.members.clone(), p.coll_ctx());
    let n = members.len();
    let ends: Vec<i32> = edges.iter().flat_map(|&(s, d, _)| [s, d]).collect();
    check_ranks(&ends, n, "sources or destinations")?;
    // What each process learns: (0 = out-edge / 1 = in-edge, the other end, weight).
    let mut outgoing: Vec<Vec<i32>> = vec![Vec::new(); n];
    for &(s, d, w) in edges {
        outgoing[s as usize].extend([0, d, w]);
        outgoing[d as usize].extend([1, s, w]);
    }
    let mine = std::mem::take(&mut outgoing[rank]);
    let counts: Vec<Vec<u8>> = outgoing.iter().map(|v| (v.len() as u64).to_ne_bytes().to_vec()).collect();
    let theirs_len = all_to_all(engine, ctx, TAG_EDGE_COUNT, rank, &members, counts, |_| 8);
    let lens: Vec<usize> = theirs_len
        .iter()
        .map(|b| if b.is_empty() { 0 } else { u64::from_ne_bytes(b[..8].try_into().unwrap()) as usize })
        .collect();
    let data: Vec<Vec<u8>> = outgoing.iter().map(|v| v.iter().flat_map(|x| x.to_ne_bytes()).collect()).collect();
    let mut received = all_to_all(engine, ctx, TAG_EDGES, rank, &members, data, |r| lens[r] * 4);
    received[rank] = mine.iter().flat_map(|x| x.to_ne_bytes()).collect();
    let mut g = DistGraph {
        sources: Vec::new(),
        source_weights: Vec::new(),
        dests: Vec::new(),
        dest_weights: Vec::new(),
        weighted,
    };
    for bytes in &received {
        let ints: Vec<i32> = bytes.chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect();
        for e in ints.chunks_exact(3) {
            let (list, weights) =
                if e[0] == 0 { (&mut g.dests, &mut g.dest_weights) } else { (&mut g.sources, &mut g.source_weights) };
            list.push(e[1]);
            if weighted {
                weights.push(e[2]);
            }
        }
    }
    dup_with(comms, engine, parent, Topology::DistGraph(g))
}

/// Every process sends `data[r]` to rank `r` and receives `len(r)` bytes from each rank `r`
/// (its own entry stays empty), on context `ctx` with `tag`.
fn all_to_all(
    engine: &mut Engine,
    ctx: u32,
    tag: i32,
    rank: usize,
    members: &[usize],
    data: Vec<Vec<u8>>,
    len: impl Fn(usize) -> usize,
) -> Vec<Vec<u8>> {
    let n = members.len();
    let recvs: Vec<(usize, u32)> = (0..n)
        .filter(|&r| r != rank)
        .map(|r| {
            let env = Envelope { ctx, src: r as i32, tag };
            (r, engine.irecv(env, RecvBuf::owned(len(r)), crate::abi::consts::MPI_COMM_NULL))
        })
        .collect();
    let sends: Vec<u32> = data
        .into_iter()
        .enumerate()
        .filter(|&(r, _)| r != rank)
        .map(|(r, d)| {
            let env = Envelope { ctx, src: rank as i32, tag };
            engine.isend(members[r], env, SendBuf::owned(d), SendMode::Standard, crate::abi::consts::MPI_COMM_NULL)
        })
        .collect();
    engine.wait_until(|e| recvs.iter().all(|&(_, q)| e.is_complete(q)) && sends.iter().all(|&q| e.is_complete(q)));
    for q in sends {
        engine.reqs.remove(q);
    }
    let mut out = vec![Vec::new(); n];
    for (r, q) in recvs {
        if let Some(Op::Recv { buf, .. }) = engine.reqs.remove(q).map(|x| x.op) {
            out[r] = buf.into_owned();
        }
    }
    out
}

//! Neighbourhood collectives (MPI_Neighbor_allgather(v), MPI_Neighbor_alltoall(v,w), their
//! nonblocking and persistent forms) over a communicator's virtual topology.
//!
//! Every rank receives block i of its receive buffer from its i-th source and sends block i of
//! its send buffer to its i-th destination (for allgather, the callers make every send block
//! the same): all receives are posted, then all sends started, then one wait.
//!
//! Neighbour order: Cartesian, for each dimension the negative then the positive neighbour of
//! MPI_Cart_shift with displacement 1 (both lists); graph, MPI_Graph_neighbors (both lists);
//! distributed graph, the sources for receives and the destinations for sends.
//!
//! Matching: a rank may appear more than once in a list (multigraph edges; periodic Cartesian
//! dimensions of extent 1 or 2, where both neighbours are the same rank or the rank itself).
//! Messages between a pair on one tag match in the order they are sent and posted, which pairs
//! graph and distributed-graph edges in list order, as MPI defines. On a Cartesian grid the
//! order alone would pair wrongly (with extent 2 the rank sends "down" first, while its
//! neighbour posts its receive from "down" — the other one — first), so the tag also carries
//! the direction of travel, as MPICH does: a message sent towards the positive neighbour is
//! received from the negative one, and within one direction both sides go through the
//! dimensions in the same order.

use super::sched::Schedule;
use super::{Group, In, Out};
use crate::abi::consts::*;
use crate::comm::Comm;
use crate::error::{MpiResult, err};
use crate::topo::Topology;

/// Tags of the blocking forms on the collective context: `BASE + direction`. Apart from the
/// ranges of `super::tag` (16..192 for the blocking collectives, 256.. for schedules).
const BASE: i32 = 240;
/// Direction of travel (tag offset, and phase of a schedule): towards the negative neighbour
/// of a Cartesian dimension, or along any graph edge; towards the positive neighbour.
const DOWN: i32 = 0;
const UP: i32 = 1;

/// One neighbour: its rank in the communicator (None for MPI_PROC_NULL: nothing is sent or
/// received, the receive block is left as it is) and the direction its messages travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neighbor {
    pub rank: Option<usize>,
    pub dir: i32,
}

/// A rank's neighbours in a topology: where each receive block comes from, where each send
/// block goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbors {
    pub sources: Vec<Neighbor>,
    pub dests: Vec<Neighbor>,
}

impl Neighbors {
    /// The neighbours of `comm`'s own rank; MPI_ERR_TOPOLOGY without a topology.
    pub fn of(comm: &Comm) -> MpiResult<Neighbors> {
        match &comm.topo {
            Some(t) => Ok(Neighbors::in_topology(t, comm.rank)),
            None => err(
                MPI_ERR_TOPOLOGY,
                "invalid topology (neighborhood collectives need a Cartesian, graph or distributed graph communicator)",
            ),
        }
    }

    /// The neighbours of `rank` in `topo`.
    pub fn in_topology(topo: &Topology, rank: usize) -> Neighbors {
        let along = |r: i32| Neighbor { rank: (r >= 0).then_some(r as usize), dir: DOWN };
        match topo {
            Topology::Cart(c) => {
                let mut sources = Vec::with_capacity(2 * c.ndims());
                let mut dests = Vec::with_capacity(2 * c.ndims());
                for d in 0..c.ndims() {
                    let (lo, hi) = c.shift(rank, d as i32, 1).expect("the dimension exists");
                    let (lo, hi) = ((lo >= 0).then_some(lo as usize), (hi >= 0).then_some(hi as usize));
                    // From the negative neighbour comes what it sent up; from the positive one
                    // what it sent down.
                    sources.extend([Neighbor { rank: lo, dir: UP }, Neighbor { rank: hi, dir: DOWN }]);
                    dests.extend([Neighbor { rank: lo, dir: DOWN }, Neighbor { rank: hi, dir: UP }]);
                }
                Neighbors { sources, dests }
            }
            Topology::Graph(g) => {
                let list: Vec<Neighbor> = g.neighbors(rank as i32).unwrap_or(&[]).iter().map(|&r| along(r)).collect();
                Neighbors { sources: list.clone(), dests: list }
            }
            Topology::DistGraph(g) => Neighbors {
                sources: g.sources.iter().map(|&r| along(r)).collect(),
                dests: g.dests.iter().map(|&r| along(r)).collect(),
            },
        }
    }

    pub fn indegree(&self) -> usize {
        self.sources.len()
    }

    pub fn outdegree(&self) -> usize {
        self.dests.len()
    }
}

/// The blocking neighbourhood exchange: block i of `send` to destination i, block i of `recv`
/// from source i.
pub fn exchange(g: &mut Group, nb: &Neighbors, send: In, mut recv: Out) -> MpiResult<()> {
    let mut reqs = Vec::new();
    for (i, src) in nb.sources.iter().enumerate() {
        let len = recv.blocks[i].bytes();
        if let Some(from) = src.rank
            && len > 0
        {
            reqs.push((i, g.post_recv(from, BASE + src.dir, len)));
        }
    }
    for (i, dst) in nb.dests.iter().enumerate() {
        if let Some(to) = dst.rank
            && send.blocks[i].bytes() > 0
        {
            g.send(to, BASE + dst.dir, send.pack(i));
        }
    }
    let ids: Vec<u32> = reqs.iter().map(|&(_, q)| q).collect();
    g.wait_all(&ids);
    // Collect every receive (freeing each request) before reporting the first error.
    let mut result = Ok(());
    for (i, q) in reqs {
        match g.take(q) {
            Ok(data) => recv.put(i, &data),
            Err(e) => result = result.and(Err(e)),
        }
    }
    result
}

/// The schedule of the nonblocking and persistent forms: the same exchange, with `outgoing`
/// the packed block for each destination; the schedule's output buffer is the receive buffer.
pub fn schedule(s: &mut Schedule, nb: &Neighbors, outgoing: Vec<Vec<u8>>) {
    let mut got = Vec::new();
    for (i, src) in nb.sources.iter().enumerate() {
        let len = s.out().map_or(0, |o| o.blocks[i].bytes());
        if let Some(from) = src.rank
            && len > 0
        {
            let b = s.slot(Vec::new());
            s.recv(from, src.dir, b, len);
            got.push((i, b));
        }
    }
    for (dst, data) in nb.dests.iter().zip(outgoing) {
        if let Some(to) = dst.rank
            && !data.is_empty()
        {
            let b = s.slot(data);
            s.send(to, dst.dir, b, false);
        }
    }
    if !got.is_empty() {
        s.fence();
    }
    for (i, b) in got {
        s.put(b, i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::{Cart, DistGraph, Graph};

    fn ranks(list: &[Neighbor]) -> Vec<i32> {
        list.iter().map(|n| n.rank.map_or(MPI_PROC_NULL, |r| r as i32)).collect()
    }

    /// Every message a rank sends lands in the receive block that expects it: for each
    /// (sender, receiver, direction), the k-th send is matched with the k-th posted receive.
    fn assert_matched(topo: &Topology, n: usize) {
        use std::collections::HashMap;
        let all: Vec<Neighbors> = (0..n).map(|r| Neighbors::in_topology(topo, r)).collect();
        let mut sent: HashMap<(usize, usize, i32), Vec<usize>> = HashMap::new();
        let mut posted: HashMap<(usize, usize, i32), Vec<usize>> = HashMap::new();
        for (r, nb) in all.iter().enumerate() {
            for (i, d) in nb.dests.iter().enumerate() {
                if let Some(to) = d.rank {
                    sent.entry((r, to, d.dir)).or_default().push(i);
                }
            }
            for (i, s) in nb.sources.iter().enumerate() {
                if let Some(from) = s.rank {
                    posted.entry((from, r, s.dir)).or_default().push(i);
                }
            }
        }
        assert_eq!(sent.keys().collect::<std::collections::BTreeSet<_>>(), posted.keys().collect());
        if let Topology::Cart(_) = topo {
            // Send block 2d+1 (up) arrives in block 2d (from below), and the reverse.
            for (key, blocks) in &sent {
                let want: Vec<usize> = blocks.iter().map(|b| b ^ 1).collect();
                assert_eq!(&want, &posted[key], "pair {key:?}");
            }
        }
    }

    #[test]
    fn cartesian_order_and_matching() {
        let c = Topology::Cart(Cart::new(&[2, 3], &[1, 0], 6).unwrap());
        let nb = Neighbors::in_topology(&c, 4);
        assert_eq!(ranks(&nb.sources), [1, 1, 3, 5]);
        assert_eq!(ranks(&nb.dests), [1, 1, 3, 5]);
        assert_eq!(ranks(&Neighbors::in_topology(&c, 5).dests), [2, 2, 4, MPI_PROC_NULL]);
        for (dims, periods) in
            [(vec![2, 3], vec![1, 0]), (vec![1], vec![1]), (vec![2], vec![1]), (vec![1, 2, 2], vec![1, 1, 0])]
        {
            let c = Cart::new(&dims, &periods, 8).unwrap();
            let n = c.size() as usize;
            assert_matched(&Topology::Cart(c), n);
        }
        let one = Neighbors::in_topology(&Topology::Cart(Cart::new(&[1], &[1], 1).unwrap()), 0);
        assert_eq!(ranks(&one.sources), [0, 0]);
        assert_eq!(one.sources.iter().map(|n| n.dir).collect::<Vec<_>>(), [UP, DOWN]);
    }

    #[test]
    fn graph_and_dist_graph_lists() {
        let g = Topology::Graph(Graph::new(&[2, 3, 4, 6], &[1, 3, 0, 3, 0, 2], 4).unwrap());
        assert_eq!(ranks(&Neighbors::in_topology(&g, 3).sources), [0, 2]);
        let d = Topology::DistGraph(DistGraph {
            sources: vec![2, 2],
            source_weights: vec![],
            dests: vec![1],
            dest_weights: vec![],
            weighted: false,
        });
        let nb = Neighbors::in_topology(&d, 0);
        assert_eq!((ranks(&nb.sources), ranks(&nb.dests)), (vec![2, 2], vec![1]));
    }
}

//! Virtual topologies: the Cartesian, graph and distributed-graph structures attached to a
//! communicator, and the arithmetic over them (coordinates, shifts, neighbours, the balanced
//! factorisation of MPI_Dims_create). Creating the communicators is `crate::comm`'s work;
//! this module only checks the descriptions and answers questions about them.

use crate::abi::consts::*;
use crate::error::{MpiResult, err};

mod create;
pub use create::*;

/// The topology attached to a communicator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    Cart(Cart),
    Graph(Graph),
    DistGraph(DistGraph),
}

impl Topology {
    /// MPI_Topo_test's answer.
    pub fn kind(&self) -> i32 {
        match self {
            Topology::Cart(_) => MPI_CART,
            Topology::Graph(_) => MPI_GRAPH,
            Topology::DistGraph(_) => MPI_DIST_GRAPH,
        }
    }
}

/// A Cartesian grid: extents and periodicity per dimension; ranks in row-major order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cart {
    pub dims: Vec<i32>,
    pub periods: Vec<bool>,
}

/// A graph over ranks 0..nnodes, in MPI_Graph_create's (index, edges) form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    pub index: Vec<i32>,
    pub edges: Vec<i32>,
}

/// This process's view of a distributed graph: in- and out-neighbours, with weights when the
/// graph is weighted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistGraph {
    pub sources: Vec<i32>,
    pub source_weights: Vec<i32>,
    pub dests: Vec<i32>,
    pub dest_weights: Vec<i32>,
    pub weighted: bool,
}

impl Cart {
    /// Checks a description for MPI_Cart_create / MPI_Cart_map on a communicator of `size`.
    pub fn new(dims: &[i32], periods: &[i32], size: usize) -> MpiResult<Cart> {
        if let Some(d) = dims.iter().find(|&&d| d <= 0) {
            return err(MPI_ERR_DIMS, format!("invalid dimension argument (dims contains {d}, must be positive)"));
        }
        let cart = Cart { dims: dims.to_vec(), periods: periods.iter().map(|&p| p != 0).collect() };
        let n = cart.size();
        if n > size as u64 {
            return err(
                MPI_ERR_ARG,
                format!("size of the communicator ({size}) is smaller than the size of the Cartesian topology ({n})"),
            );
        }
        Ok(cart)
    }

    /// Number of processes in the grid.
    pub fn size(&self) -> u64 {
        self.dims.iter().map(|&d| d as u64).product()
    }

    pub fn ndims(&self) -> usize {
        self.dims.len()
    }

    /// Coordinates of `rank` (row-major: the last dimension varies fastest).
    pub fn coords(&self, rank: usize) -> Vec<i32> {
        let mut rest = rank as i64;
        let mut c = vec![0; self.ndims()];
        for i in (0..self.ndims()).rev() {
            let d = self.dims[i] as i64;
            c[i] = (rest % d) as i32;
            rest /= d;
        }
        c
    }

    /// MPI_Cart_rank: coordinates outside a non-periodic dimension are an error; periodic
    /// ones wrap.
    pub fn rank(&self, coords: &[i32]) -> MpiResult<i32> {
        let mut r: i64 = 0;
        for (i, &c) in coords.iter().enumerate() {
            let d = self.dims[i];
            let c = if self.periods[i] {
                c.rem_euclid(d)
            } else if !(0..d).contains(&c) {
                return err(MPI_ERR_ARG, format!("invalid coordinate (coords[{i}]={c}, dimension extent {d})"));
            } else {
                c
            };
            r = r * d as i64 + c as i64;
        }
        Ok(r as i32)
    }

    /// MPI_Cart_shift for the process at `rank`: (source, destination), MPI_PROC_NULL off the
    /// edge of a non-periodic dimension.
    pub fn shift(&self, rank: usize, direction: i32, disp: i32) -> MpiResult<(i32, i32)> {
        if direction < 0 || direction as usize >= self.ndims() {
            return err(
                MPI_ERR_ARG,
                format!("invalid direction argument (direction={direction}, number of dimensions {})", self.ndims()),
            );
        }
        let dir = direction as usize;
        let me = self.coords(rank);
        let at = |offset: i64| {
            let mut c = me.clone();
            let v = c[dir] as i64 + offset;
            let d = self.dims[dir] as i64;
            if self.periods[dir] {
                c[dir] = v.rem_euclid(d) as i32;
            } else if (0..d).contains(&v) {
                c[dir] = v as i32;
            } else {
                return MPI_PROC_NULL;
            }
            self.rank(&c).unwrap_or(MPI_PROC_NULL)
        };
        Ok((at(-(disp as i64)), at(disp as i64)))
    }

    /// MPI_Cart_sub for the process at `rank`: the (color, key) of the split that forms its
    /// sub-grid, and the sub-grid itself.
    pub fn sub(&self, rank: usize, remain: &[bool]) -> (i32, i32, Cart) {
        let c = self.coords(rank);
        let (mut color, mut key) = (0i64, 0i64);
        let mut sub = Cart { dims: Vec::new(), periods: Vec::new() };
        for i in 0..self.ndims() {
            let d = self.dims[i] as i64;
            if remain[i] {
                key = key * d + c[i] as i64;
                sub.dims.push(self.dims[i]);
                sub.periods.push(self.periods[i]);
            } else {
                color = color * d + c[i] as i64;
            }
        }
        (color as i32, key as i32, sub)
    }
}

impl Graph {
    /// Checks a description for MPI_Graph_create / MPI_Graph_map on a communicator of
    /// `size`; `index` and `edges` are the caller's arrays (edges has index[nnodes-1] entries).
    pub fn new(index: &[i32], edges: &[i32], size: usize) -> MpiResult<Graph> {
        let nnodes = index.len();
        if nnodes > size {
            return err(
                MPI_ERR_ARG,
                format!("size of the communicator ({size}) is smaller than the size of the graph ({nnodes})"),
            );
        }
        let mut prev = 0;
        for (i, &x) in index.iter().enumerate() {
            if x < prev {
                return err(MPI_ERR_ARG, format!("invalid index array (index[{i}]={x} is less than {prev})"));
            }
            prev = x;
        }
        if let Some((i, &e)) = edges.iter().enumerate().find(|(_, e)| !(0..nnodes as i32).contains(e)) {
            return err(MPI_ERR_ARG, format!("invalid edge (edges[{i}]={e}, graph of {nnodes} nodes)"));
        }
        Ok(Graph { index: index.to_vec(), edges: edges.to_vec() })
    }

    pub fn nnodes(&self) -> usize {
        self.index.len()
    }

    /// The neighbours of node `rank` (MPI_ERR_RANK when it is not a node).
    pub fn neighbors(&self, rank: i32) -> MpiResult<&[i32]> {
        if rank < 0 || rank as usize >= self.nnodes() {
            return err(MPI_ERR_RANK, format!("invalid rank argument (rank={rank}, graph of {} nodes)", self.nnodes()));
        }
        let r = rank as usize;
        let lo = if r == 0 { 0 } else { self.index[r - 1] as usize };
        Ok(&self.edges[lo..self.index[r] as usize])
    }
}

/// MPI_Dims_create: fills the zero entries of `dims` so that the product of all entries is
/// `nnodes`, as balanced as possible and in non-increasing order (MPICH's result).
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> MpiResult<()> {
    if nnodes < 0 {
        return err(MPI_ERR_ARG, format!("invalid nnodes argument (nnodes={nnodes}, must be non-negative)"));
    }
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return err(MPI_ERR_DIMS, format!("invalid dimension argument (dims contains {d}, must be non-negative)"));
    }
    let fixed: i64 = dims.iter().filter(|&&d| d > 0).map(|&d| d as i64).product();
    let free = dims.iter().filter(|&&d| d == 0).count();
    if free == 0 {
        if fixed != nnodes as i64 {
            return err(MPI_ERR_DIMS, format!("the product of dims ({fixed}) is not nnodes ({nnodes})"));
        }
        return Ok(());
    }
    if nnodes == 0 || nnodes as i64 % fixed != 0 {
        return err(
            MPI_ERR_DIMS,
            format!("nnodes ({nnodes}) is not a multiple of the product of fixed dims ({fixed})"),
        );
    }
    let factors = balanced((nnodes as i64 / fixed) as u64, free);
    let mut it = factors.into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = it.next().unwrap() as i32;
    }
    Ok(())
}

/// The factorisation of `n` into `k` factors, non-increasing, with the smallest spread
/// between largest and smallest factor.
fn balanced(n: u64, k: usize) -> Vec<u64> {
    fn search(n: u64, k: usize, max: u64, divs: &[u64], cur: &mut Vec<u64>, best: &mut Option<(u64, Vec<u64>)>) {
        if k == 1 {
            if n <= max {
                cur.push(n);
                let spread = cur[0] - n;
                // Ties go to the larger smallest factor, then the larger next one (MPICH's
                // choice, e.g. 5616 in 4-d is 13x9x8x6, not 13x12x6x6).
                let better =
                    |(s, b): &(u64, Vec<u64>)| spread < *s || (spread == *s && cur.iter().rev().gt(b.iter().rev()));
                if best.as_ref().is_none_or(better) {
                    *best = Some((spread, cur.clone()));
                }
                cur.pop();
            }
            return;
        }
        for &f in divs.iter().filter(|&&f| f <= max && n.is_multiple_of(f)) {
            let rest = n / f;
            // Factors are non-increasing: the rest must fit in k-1 factors of at most f.
            if (f as f64).powi(k as i32 - 1) + 0.5 < rest as f64 {
                break;
            }
            cur.push(f);
            search(rest, k - 1, f, divs, cur, best);
            cur.pop();
        }
    }
    // The divisors of n, largest first.
    let mut divs: Vec<u64> =
        (1..).take_while(|d| d * d <= n).filter(|d| n.is_multiple_of(*d)).flat_map(|d| [d, n / d]).collect();
    divs.sort_unstable_by(|a, b| b.cmp(a));
    divs.dedup();
    let mut best = None;
    search(n, k, n, &divs, &mut Vec::new(), &mut best);
    best.map(|(_, v)| v).unwrap_or_else(|| vec![1; k])
}

/// MPI_Graph_map / MPI_Cart_map without reordering: the first `n` ranks keep their rank.
pub fn map_rank(rank: usize, n: u64) -> i32 {
    if (rank as u64) < n { rank as i32 } else { MPI_UNDEFINED }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dc(n: i32, mut d: Vec<i32>) -> Vec<i32> {
        dims_create(n, &mut d).unwrap();
        d
    }

    #[test]
    fn dims_are_balanced() {
        assert_eq!(dc(6, vec![0, 0]), [3, 2]);
        assert_eq!(dc(12, vec![0, 0, 0]), [3, 2, 2]);
        assert_eq!(dc(16, vec![0, 0]), [4, 4]);
        assert_eq!(dc(24, vec![0, 0, 0]), [4, 3, 2]);
        assert_eq!(dc(7, vec![0, 0]), [7, 1]);
        assert_eq!(dc(60, vec![0, 0]), [10, 6]);
        assert_eq!(dc(12, vec![0, 3, 0]), [2, 3, 2]);
        assert_eq!(dc(1, vec![0, 0, 0]), [1, 1, 1]);
        assert_eq!(dc(5616, vec![0, 0, 0, 0]), [13, 9, 8, 6]);
        assert_eq!(dc(143520, vec![0, 0, 0, 0]), [26, 23, 16, 15]);
        assert_eq!(dims_create(10, &mut [3, 0]).unwrap_err().code, MPI_ERR_DIMS);
        assert_eq!(dims_create(10, &mut [-1, 0]).unwrap_err().code, MPI_ERR_DIMS);
        assert_eq!(dc(1 << 20, vec![0, 0, 0]), [128, 128, 64]);
    }

    #[test]
    fn cart_arithmetic() {
        let c = Cart::new(&[2, 3], &[1, 0], 8).unwrap();
        assert_eq!(c.coords(4), [1, 1]);
        assert_eq!(c.rank(&[1, 1]).unwrap(), 4);
        assert_eq!(c.rank(&[-1, 2]).unwrap(), 5);
        assert!(c.rank(&[0, 3]).is_err());
        assert_eq!(c.shift(4, 0, 1).unwrap(), (1, 1));
        assert_eq!(c.shift(4, 1, 1).unwrap(), (3, 5));
        assert_eq!(c.shift(5, 1, 1).unwrap(), (4, MPI_PROC_NULL));
        let (color, key, sub) = c.sub(4, &[false, true]);
        assert_eq!((color, key), (1, 1));
        assert_eq!(sub.dims, [3]);
        assert_eq!(Cart::new(&[3, 3], &[0, 0], 8).unwrap_err().code, MPI_ERR_ARG);
    }

    #[test]
    fn graph_neighbors() {
        let g = Graph::new(&[2, 3, 4, 6], &[1, 3, 0, 3, 0, 2], 4).unwrap();
        assert_eq!(g.neighbors(0).unwrap(), [1, 3]);
        assert_eq!(g.neighbors(3).unwrap(), [0, 2]);
        assert!(g.neighbors(4).is_err());
        assert!(Graph::new(&[1], &[1], 4).is_err());
    }
}

//! Algorithm selection for the blocking collectives: one table of thresholds, read from the
//! environment once (the first collective) and consulted by every call.
//!
//! Defaults are MPICH's (MPIR_CVAR_* of MPICH 4: short/long message sizes, minimum process
//! counts) until they are measured for oxmpi on a quiet machine, except where measured here
//! (docs/perf-r5-collp2p.md): the direct allgather and reduce-scatter below 16 KiB on up to
//! 8 ranks, Bruck all-to-all from 16 ranks (not 8), detached sends up to 4 KiB when ranks
//! outnumber cores; gather/scatter blocks in eager pieces when ranks outnumber cores
//! (docs/perf-r6-collbig.md). Every threshold and every algorithm choice can be overridden by its
//! `OXMPI_*` variable (see `config::TUNABLES`).
//! A forced algorithm that cannot run on a call (Rabenseifner with a non-commutative
//! operation, Bruck all-to-all on Alltoallv) falls back to the automatic choice for it.

use crate::config;
use std::sync::OnceLock;

/// Allreduce algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allreduce {
    RecursiveDoubling,
    Rabenseifner,
    Ring,
    ReduceBcast,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bcast {
    Binomial,
    ScatterAllgather,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allgather {
    Ring,
    RecursiveDoubling,
    Bruck,
    /// Every block sent to every member at once (one round).
    Direct,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alltoall {
    /// Every receive and send posted at once.
    Post,
    Pairwise,
    Bruck,
}

/// Gather and scatter algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rooted {
    /// The root talks to every member directly.
    Linear,
    /// Binomial tree (MPI_Gather/MPI_Scatter: blocks of one size everywhere).
    Binomial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceScatter {
    /// Reduce to rank 0, then scatter (any operation; rank order kept).
    ReduceThenScatter,
    /// Recursive halving (commutative operations).
    Halving,
    /// Pairwise exchange (commutative operations).
    Pairwise,
    /// Every block sent to its member at once, combined in rank order there (any operation).
    Direct,
}

/// The thresholds and forced choices (None: choose by size).
#[derive(Debug, Clone)]
pub struct Tuning {
    pub allreduce: Option<Allreduce>,
    /// Vectors above this many bytes use Rabenseifner (commutative) or reduce + bcast.
    pub allreduce_large: usize,
    /// Vectors above this many bytes use the ring on non-power-of-two sizes (commutative
    /// operations), where Rabenseifner would move the whole vector once more to fold ranks.
    pub allreduce_ring: usize,
    pub bcast: Option<Bcast>,
    /// Messages of at least this many bytes use scatter + allgather (from `bcast_min_procs`).
    pub bcast_large: usize,
    pub bcast_min_procs: usize,
    pub allgather: Option<Allgather>,
    /// Total gathered bytes below which Bruck runs on non-power-of-two sizes.
    pub allgather_short: usize,
    /// Total gathered bytes below which recursive doubling runs on power-of-two sizes.
    pub allgather_long: usize,
    /// Total gathered bytes below which the direct algorithm runs (up to `direct_procs`).
    pub allgather_direct: usize,
    /// The one-round (direct) allgather and reduce-scatter run on at most this many members.
    pub direct_procs: usize,
    pub alltoall: Option<Alltoall>,
    /// Per-peer block bytes up to which Bruck runs (from `alltoall_min_procs` members).
    pub alltoall_short: usize,
    pub alltoall_min_procs: usize,
    /// Per-peer block bytes below which every transfer is posted at once; above, pairwise.
    pub alltoall_medium: usize,
    pub gather: Option<Rooted>,
    /// Total bytes (all blocks) below which gather and scatter use the binomial tree.
    pub gather_large: usize,
    /// When ranks outnumber cores, scatter sends of at most this many bytes never hold a call
    /// (`Group::send_block`).
    pub detach_max: usize,
    /// When ranks outnumber cores, gather and scatter blocks above the eager limit travel as
    /// eager pieces instead of one rendezvous message while the block times the number of
    /// members is at most this many bytes (`piece`).
    pub piece_max: usize,
    /// Pieces forced on or off (None: when ranks outnumber cores).
    pub pieces: Option<bool>,
    pub reduce_scatter: Option<ReduceScatter>,
    /// Total bytes below which commutative reduce-scatter uses recursive halving (pairwise above).
    pub reduce_scatter_long: usize,
    /// Total bytes below which reduce-scatter runs direct (up to `direct_procs` members).
    pub reduce_scatter_direct: usize,
    /// Sparse-aware reductions (see `sparse`).
    pub sparse: bool,
    /// Smallest vector (bytes) checked for sparsity.
    pub sparse_min: usize,
    /// A sparse encoding is used while it takes at most this percentage of the dense bytes.
    pub sparse_ratio: usize,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            allreduce: None,
            allreduce_large: 2048,
            allreduce_ring: 1 << 20,
            bcast: None,
            bcast_large: 12288,
            bcast_min_procs: 8,
            allgather: None,
            allgather_short: 81920,
            allgather_long: 524288,
            allgather_direct: 16384,
            direct_procs: 8,
            alltoall: None,
            alltoall_short: 256,
            alltoall_min_procs: 16,
            alltoall_medium: 32768,
            gather: None,
            gather_large: 65536,
            detach_max: 4096,
            piece_max: 524288,
            pieces: None,
            reduce_scatter: None,
            reduce_scatter_long: 524288,
            reduce_scatter_direct: 16384,
            sparse: true,
            sparse_min: 1024,
            sparse_ratio: 50,
        }
    }
}

/// An algorithm name from variable `name`, among `names`; warns about an unknown value.
fn choice<T: Copy>(name: &str, names: &[(&str, T)]) -> Option<T> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    if v.is_empty() || v == "auto" {
        return None;
    }
    let found = names.iter().find(|(n, _)| n.eq_ignore_ascii_case(v)).map(|&(_, t)| t);
    if found.is_none() {
        let known: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
        log::warn!("ignoring {name}={v}: not one of auto, {}", known.join(", "));
    }
    found
}

impl Tuning {
    /// The defaults with every `OXMPI_*` override applied.
    pub fn from_env() -> Tuning {
        use config as c;
        let d = Tuning::default();
        let num = |name: &str, default: usize| config::usize_var(name).unwrap_or(default);
        Tuning {
            allreduce: choice(
                c::ALLREDUCE_ALG,
                &[
                    ("recdbl", Allreduce::RecursiveDoubling),
                    ("rabenseifner", Allreduce::Rabenseifner),
                    ("ring", Allreduce::Ring),
                    ("reduce_bcast", Allreduce::ReduceBcast),
                ],
            ),
            allreduce_large: num(c::ALLREDUCE_LARGE, d.allreduce_large),
            allreduce_ring: num(c::ALLREDUCE_RING, d.allreduce_ring),
            bcast: choice(
                c::BCAST_ALG,
                &[("binomial", Bcast::Binomial), ("scatter_allgather", Bcast::ScatterAllgather)],
            ),
            bcast_large: num(c::BCAST_LARGE, d.bcast_large),
            bcast_min_procs: num(c::BCAST_MIN_PROCS, d.bcast_min_procs),
            allgather: choice(
                c::ALLGATHER_ALG,
                &[
                    ("ring", Allgather::Ring),
                    ("recdbl", Allgather::RecursiveDoubling),
                    ("bruck", Allgather::Bruck),
                    ("direct", Allgather::Direct),
                ],
            ),
            allgather_short: num(c::ALLGATHER_SHORT, d.allgather_short),
            allgather_long: num(c::ALLGATHER_LONG, d.allgather_long),
            allgather_direct: num(c::ALLGATHER_DIRECT, d.allgather_direct),
            direct_procs: num(c::COLL_DIRECT_PROCS, d.direct_procs),
            alltoall: choice(
                c::ALLTOALL_ALG,
                &[("post", Alltoall::Post), ("pairwise", Alltoall::Pairwise), ("bruck", Alltoall::Bruck)],
            ),
            alltoall_short: num(c::ALLTOALL_SHORT, d.alltoall_short),
            alltoall_min_procs: num(c::ALLTOALL_MIN_PROCS, d.alltoall_min_procs),
            alltoall_medium: num(c::ALLTOALL_MEDIUM, d.alltoall_medium),
            gather: choice(c::GATHER_ALG, &[("linear", Rooted::Linear), ("binomial", Rooted::Binomial)]),
            gather_large: num(c::GATHER_LARGE, d.gather_large),
            detach_max: num(c::COLL_DETACH_MAX, d.detach_max),
            piece_max: num(c::COLL_PIECE_MAX, d.piece_max),
            pieces: choice(c::COLL_PIECES, &[("1", true), ("on", true), ("0", false), ("off", false)]),
            reduce_scatter: choice(
                c::REDUCE_SCATTER_ALG,
                &[
                    ("reduce_scatter", ReduceScatter::ReduceThenScatter),
                    ("halving", ReduceScatter::Halving),
                    ("pairwise", ReduceScatter::Pairwise),
                    ("direct", ReduceScatter::Direct),
                ],
            ),
            reduce_scatter_long: num(c::REDUCE_SCATTER_LONG, d.reduce_scatter_long),
            reduce_scatter_direct: num(c::REDUCE_SCATTER_DIRECT, d.reduce_scatter_direct),
            sparse: num(c::SPARSE, 1) != 0,
            sparse_min: num(c::SPARSE_MIN, d.sparse_min),
            sparse_ratio: num(c::SPARSE_RATIO, d.sparse_ratio).min(100),
        }
    }

    /// Allreduce of `bytes` on `n` members.
    pub fn allreduce(&self, bytes: usize, count: usize, n: usize, commutative: bool) -> Allreduce {
        let pof2 = pof2_below(n);
        let fits = |a: Allreduce| match a {
            // Rabenseifner and ring split the vector and combine pieces out of rank order.
            Allreduce::Rabenseifner => commutative && count >= pof2,
            Allreduce::Ring => commutative && count >= n,
            _ => true,
        };
        if let Some(a) = self.allreduce.filter(|&a| fits(a)) {
            return a;
        }
        if !commutative {
            // Rank order rules out splitting the vector; recursive doubling moves the whole
            // vector log2(n) times, reduce + bcast about twice (oxmpi's earlier threshold).
            if bytes > NONCOMMUTATIVE_LARGE { Allreduce::ReduceBcast } else { Allreduce::RecursiveDoubling }
        } else if bytes <= self.allreduce_large {
            Allreduce::RecursiveDoubling
        } else if bytes > self.allreduce_ring && !n.is_power_of_two() && fits(Allreduce::Ring) {
            Allreduce::Ring
        } else if fits(Allreduce::Rabenseifner) {
            Allreduce::Rabenseifner
        } else {
            Allreduce::RecursiveDoubling
        }
    }

    pub fn bcast(&self, bytes: usize, n: usize) -> Bcast {
        // Scatter + allgather needs a piece for every member.
        if n < 2 || bytes < n {
            return Bcast::Binomial;
        }
        if let Some(b) = self.bcast {
            return b;
        }
        if bytes < self.bcast_large || n < self.bcast_min_procs { Bcast::Binomial } else { Bcast::ScatterAllgather }
    }

    pub fn allgather(&self, total: usize, n: usize) -> Allgather {
        if let Some(a) = self.allgather {
            return a;
        }
        if n <= self.direct_procs && total < self.allgather_direct {
            Allgather::Direct
        } else if n.is_power_of_two() && total < self.allgather_long {
            Allgather::RecursiveDoubling
        } else if !n.is_power_of_two() && total < self.allgather_short {
            Allgather::Bruck
        } else {
            Allgather::Ring
        }
    }

    /// `uniform`: every member sends every other the same number of bytes (MPI_Alltoall).
    pub fn alltoall(&self, block: usize, n: usize, uniform: bool) -> Alltoall {
        match self.alltoall {
            Some(Alltoall::Bruck) if !uniform => {}
            Some(a) => return a,
            None => {}
        }
        if uniform && block <= self.alltoall_short && n >= self.alltoall_min_procs {
            Alltoall::Bruck
        } else if block < self.alltoall_medium {
            Alltoall::Post
        } else {
            Alltoall::Pairwise
        }
    }

    /// Bytes up to which a send to a full ring is copied and left to complete on its own
    /// (`Group::send_block`): only when the node's ranks outnumber its cores
    /// (`oversubscribed`, `Engine::ranks_outnumber_cores`). Then a receiver may be descheduled for a whole time slice, and a sender that
    /// waits for it loses its own; otherwise the receiver drains its ring at once and the copy
    /// (and the second one from the queue into the ring) would cost more than the wait.
    pub fn detach_limit(&self, oversubscribed: bool) -> usize {
        if oversubscribed { self.detach_max } else { 0 }
    }

    /// The piece size in which a gather or scatter block of `len` bytes travels between two
    /// of `n` members, messages of up to `eager` bytes being sent eagerly; None: as one
    /// message. Pieces only when the node's ranks outnumber its cores (`oversubscribed`): a
    /// rendezvous needs both ranks to run (the sender offers, the receiver copies, the sender
    /// learns it is done), each a scheduling round away, while eager pieces are copied into
    /// the receiver's ring and the sender moves on. Up to `piece_max` bytes for all members
    /// together: beyond, the second copy and the rings filling up cost more than the rounds
    /// (np 4 on 2 cores: 256 KiB blocks 1.2-2x slower in pieces, 16-128 KiB 1.6-20x faster).
    /// Both ends decide alike: the same length, sizes and settings, and `oversubscribed` is
    /// the node's finding, the same on every rank whatever its own affinity mask
    /// (`Engine::ranks_outnumber_cores`); blocking collectives run as schedules (which send
    /// whole blocks) either on every rank or on none (`runtime::collectives_as_schedules`).
    /// Should they still differ (different `OXMPI_*` settings), the receive reports
    /// truncation or a short message instead of mixing data.
    pub fn piece(&self, len: usize, n: usize, oversubscribed: bool, eager: usize) -> Option<usize> {
        let fits = len.checked_mul(n).is_some_and(|total| total <= self.piece_max);
        (self.pieces.unwrap_or(oversubscribed) && eager > 0 && len > eager && fits).then_some(eager)
    }

    /// Gather or scatter of `total` bytes; `uniform`: MPI_Gather/MPI_Scatter (not the v forms).
    pub fn rooted(&self, total: usize, uniform: bool) -> Rooted {
        if !uniform {
            return Rooted::Linear;
        }
        if let Some(a) = self.gather {
            return a;
        }
        if total < self.gather_large { Rooted::Binomial } else { Rooted::Linear }
    }

    /// Reduce-scatter of `total` input bytes on `n` members.
    pub fn reduce_scatter(&self, total: usize, n: usize, commutative: bool) -> ReduceScatter {
        match self.reduce_scatter {
            // Halving and pairwise combine out of rank order.
            Some(ReduceScatter::Halving | ReduceScatter::Pairwise) if !commutative => {}
            Some(a) => return a,
            None => {}
        }
        if n <= self.direct_procs && total < self.reduce_scatter_direct {
            ReduceScatter::Direct
        } else if !commutative {
            ReduceScatter::ReduceThenScatter
        } else if total < self.reduce_scatter_long {
            ReduceScatter::Halving
        } else {
            ReduceScatter::Pairwise
        }
    }
}

/// Non-commutative allreduce above this many bytes uses reduce + bcast.
const NONCOMMUTATIVE_LARGE: usize = 64 * 1024;

/// The largest power of two not above `n` (n >= 1).
pub fn pof2_below(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.max(1).leading_zeros())
}

static TUNING: OnceLock<Tuning> = OnceLock::new();

/// The process's selection table (read from the environment on first use).
pub fn get() -> &'static Tuning {
    TUNING.get_or_init(Tuning::from_env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_size_and_operation() {
        let t = Tuning::default();
        assert_eq!(t.allreduce(8, 1, 4, true), Allreduce::RecursiveDoubling);
        assert_eq!(t.allreduce(1 << 16, 8192, 4, true), Allreduce::Rabenseifner);
        assert_eq!(t.allreduce(1 << 16, 8192, 4, false), Allreduce::RecursiveDoubling);
        assert_eq!(t.allreduce(1 << 17, 16384, 4, false), Allreduce::ReduceBcast);
        assert_eq!(t.allreduce(8 << 20, 1 << 20, 6, true), Allreduce::Ring);
        assert_eq!(t.allreduce(8 << 20, 1 << 20, 8, true), Allreduce::Rabenseifner);
        // Fewer elements than ranks: nothing to split.
        assert_eq!(t.allreduce(4096, 3, 8, true), Allreduce::RecursiveDoubling);
        assert_eq!(t.bcast(1 << 20, 4), Bcast::Binomial);
        assert_eq!(t.bcast(1 << 20, 8), Bcast::ScatterAllgather);
        assert_eq!(t.allgather(1024, 4), Allgather::Direct);
        assert_eq!(t.allgather(16384, 4), Allgather::RecursiveDoubling);
        assert_eq!(t.allgather(1024, 16), Allgather::RecursiveDoubling);
        assert_eq!(t.allgather(1024, 12), Allgather::Bruck);
        assert_eq!(t.allgather(16384, 6), Allgather::Bruck);
        assert_eq!(t.allgather(1 << 20, 6), Allgather::Ring);
        assert_eq!(t.alltoall(64, 16, true), Alltoall::Bruck);
        assert_eq!(t.alltoall(64, 8, true), Alltoall::Post);
        assert_eq!(t.alltoall(64, 8, false), Alltoall::Post);
        assert_eq!(t.alltoall(1 << 16, 8, true), Alltoall::Pairwise);
        assert_eq!(t.rooted(1024, true), Rooted::Binomial);
        assert_eq!(t.rooted(1024, false), Rooted::Linear);
        assert_eq!(t.rooted(1 << 20, true), Rooted::Linear);
        assert_eq!(t.reduce_scatter(1024, 8, true), ReduceScatter::Direct);
        assert_eq!(t.reduce_scatter(1024, 8, false), ReduceScatter::Direct);
        assert_eq!(t.reduce_scatter(1024, 16, true), ReduceScatter::Halving);
        assert_eq!(t.reduce_scatter(16384, 4, true), ReduceScatter::Halving);
        assert_eq!(t.reduce_scatter(1 << 20, 4, true), ReduceScatter::Pairwise);
        assert_eq!(t.reduce_scatter(16384, 4, false), ReduceScatter::ReduceThenScatter);
    }

    #[test]
    fn pieces_need_more_ranks_than_cores_and_mid_sizes() {
        let t = Tuning::default();
        assert_eq!(t.piece(16384, 4, false, 12288), None);
        assert_eq!(t.piece(16384, 4, true, 12288), Some(12288));
        assert_eq!(t.piece(12288, 4, true, 12288), None);
        assert_eq!(t.piece(131072, 4, true, 12288), Some(12288));
        assert_eq!(t.piece(262144, 4, true, 12288), None);
        assert_eq!(t.piece(65536, 8, true, 12288), Some(12288));
        assert_eq!(t.piece(131072, 8, true, 12288), None);
        assert_eq!(t.piece(usize::MAX, 8, true, 12288), None);
        let t = Tuning { piece_max: 0, ..Tuning::default() };
        assert_eq!(t.piece(16384, 4, true, 12288), None);
        let t = Tuning { pieces: Some(true), ..Tuning::default() };
        assert_eq!(t.piece(2000, 2, false, 1000), Some(1000));
        let t = Tuning { pieces: Some(false), ..Tuning::default() };
        assert_eq!(t.piece(16384, 4, true, 12288), None);
    }

    #[test]
    fn detaching_needs_more_ranks_than_cores() {
        let t = Tuning::default();
        assert_eq!(t.detach_limit(false), 0);
        assert_eq!(t.detach_limit(true), 4096);
    }

    #[test]
    fn forced_choices_that_cannot_run_fall_back() {
        let t = Tuning {
            allreduce: Some(Allreduce::Ring),
            alltoall: Some(Alltoall::Bruck),
            bcast: Some(Bcast::ScatterAllgather),
            ..Tuning::default()
        };
        assert_eq!(t.allreduce(8, 1, 4, true), Allreduce::RecursiveDoubling);
        assert_eq!(t.allreduce(1 << 17, 16384, 4, false), Allreduce::ReduceBcast);
        assert_eq!(t.allreduce(1 << 16, 8192, 4, true), Allreduce::Ring);
        assert_eq!(t.alltoall(64, 8, false), Alltoall::Post);
        assert_eq!(t.bcast(3, 8), Bcast::Binomial);
        let t = Tuning { reduce_scatter: Some(ReduceScatter::Halving), ..Tuning::default() };
        assert_eq!(t.reduce_scatter(1 << 20, 4, false), ReduceScatter::ReduceThenScatter);
        let t = Tuning { reduce_scatter: Some(ReduceScatter::Direct), ..Tuning::default() };
        assert_eq!(t.reduce_scatter(1 << 20, 64, false), ReduceScatter::Direct);
        assert_eq!(pof2_below(1), 1);
        assert_eq!(pof2_below(7), 4);
    }
}

//! Tunables: every `OXMPI_*` environment variable the library reads, with its default, in
//! one table that `oxmpi-info` prints.

pub struct Tunable {
    pub name: &'static str,
    pub default: &'static str,
    pub what: &'static str,
    /// The values it accepts: MPI_Init refuses any other (`check_environment`).
    pub kind: Kind,
}

/// What values a tunable accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number within `min..=max`.
    Number { min: u64, max: u64 },
    /// 0 (off) or 1 (on).
    Switch,
    /// One of these words (case-insensitive).
    Word(&'static [&'static str]),
    /// `k`, `k:block` or `k:cyclic` with k >= 1 (`OXMPI_FAKE_NODES`).
    FakeNodes,
    /// Any text; checked where it is used (a log filter, provider or interface names).
    Text,
}

/// A size in bytes, a rank count or another threshold: any whole number a `usize` holds.
const ANY_SIZE: Kind = Kind::Number { min: 0, max: usize::MAX as u64 };

impl Kind {
    /// The accepted values, as the docs and the error messages say them.
    pub fn range(&self) -> String {
        match *self {
            Kind::Number { min, max } if max == usize::MAX as u64 => format!("a whole number, {min} or more"),
            Kind::Number { min, max } => format!("a whole number from {min} to {max}"),
            Kind::Switch => "0 or 1".to_string(),
            Kind::Word(words) => format!("one of {}", words.join(", ")),
            Kind::FakeNodes => "k, k:block or k:cyclic with k a whole number, 1 or more".to_string(),
            Kind::Text => "any text".to_string(),
        }
    }

    /// Whether `value` (as set in the environment) is accepted.
    pub fn accepts(&self, value: &str) -> bool {
        let v = value.trim();
        match *self {
            Kind::Number { min, max } => v.parse::<u64>().is_ok_and(|n| (min..=max).contains(&n)),
            Kind::Switch => v == "0" || v == "1",
            Kind::Word(words) => words.iter().any(|w| w.eq_ignore_ascii_case(v)),
            Kind::FakeNodes => {
                let (k, layout) = v.split_once(':').unwrap_or((v, "block"));
                k.parse::<u64>().is_ok_and(|k| k >= 1) && (layout == "block" || layout == "cyclic")
            }
            Kind::Text => true,
        }
    }
}

/// Why the value of tunable `t` in the environment is not accepted, if it is not.
pub fn check(t: &Tunable, value: &str) -> Result<(), String> {
    // Set but empty reads as unset everywhere (the default applies), as scripts use it.
    if value.trim().is_empty() || t.kind.accepts(value) {
        Ok(())
    } else {
        Err(format!("{}={value} is not valid: the allowed values are {}", t.name, t.kind.range()))
    }
}

/// Checks every `OXMPI_*` tunable set in the environment (MPI_Init): all the problems, if
/// there are any.
pub fn check_environment() -> Result<(), String> {
    check_environment_of(TUNABLES.iter().map(|t| t.name))
}

/// As `check_environment`, for the tunables named.
pub fn check_environment_of<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
    let problems: Vec<String> = names
        .into_iter()
        .filter_map(|name| TUNABLES.iter().find(|t| t.name == name))
        .filter_map(|t| std::env::var_os(t.name).and_then(|v| check(t, &v.to_string_lossy()).err()))
        .collect();
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

pub const LOG: &str = "OXMPI_LOG";
pub const EAGER_LIMIT: &str = "OXMPI_EAGER_LIMIT";
pub const SHM_SLOTS: &str = "OXMPI_SHM_SLOTS";
pub const SHM_CELLS: &str = "OXMPI_SHM_CELLS";
pub const EAGER_PIECE: &str = "OXMPI_EAGER_PIECE";
pub const EAGER_PIECES_FROM: &str = "OXMPI_EAGER_PIECES_FROM";
pub const CMA: &str = "OXMPI_CMA";
pub const CMA_SPLIT: &str = "OXMPI_CMA_SPLIT";
pub const ASYNC_PROGRESS: &str = "OXMPI_ASYNC_PROGRESS";
pub const SHM_FILES: &str = "OXMPI_SHM_FILES";
pub const LINK_TIMEOUT: &str = "OXMPI_LINK_TIMEOUT";
pub const CONNECT_TIMEOUT: &str = "OXMPI_CONNECT_TIMEOUT";
pub const SPIN_US: &str = "OXMPI_SPIN_US";
pub const YIELD_US: &str = "OXMPI_YIELD_US";
pub const MEMBARRIER: &str = "OXMPI_MEMBARRIER";
pub const ALLREDUCE_ALG: &str = "OXMPI_ALLREDUCE_ALG";
pub const ALLREDUCE_LARGE: &str = "OXMPI_ALLREDUCE_LARGE";
pub const ALLREDUCE_RING: &str = "OXMPI_ALLREDUCE_RING";
pub const BCAST_ALG: &str = "OXMPI_BCAST_ALG";
pub const BCAST_LARGE: &str = "OXMPI_BCAST_LARGE";
pub const BCAST_MIN_PROCS: &str = "OXMPI_BCAST_MIN_PROCS";
pub const ALLGATHER_ALG: &str = "OXMPI_ALLGATHER_ALG";
pub const ALLGATHER_SHORT: &str = "OXMPI_ALLGATHER_SHORT";
pub const ALLGATHER_LONG: &str = "OXMPI_ALLGATHER_LONG";
pub const ALLGATHER_DIRECT: &str = "OXMPI_ALLGATHER_DIRECT";
pub const COLL_DIRECT_PROCS: &str = "OXMPI_COLL_DIRECT_PROCS";
pub const ALLTOALL_ALG: &str = "OXMPI_ALLTOALL_ALG";
pub const ALLTOALL_SHORT: &str = "OXMPI_ALLTOALL_SHORT";
pub const ALLTOALL_MIN_PROCS: &str = "OXMPI_ALLTOALL_MIN_PROCS";
pub const ALLTOALL_MEDIUM: &str = "OXMPI_ALLTOALL_MEDIUM";
pub const GATHER_ALG: &str = "OXMPI_GATHER_ALG";
pub const GATHER_LARGE: &str = "OXMPI_GATHER_LARGE";
pub const COLL_DETACH_MAX: &str = "OXMPI_COLL_DETACH_MAX";
pub const COLL_PIECE_MAX: &str = "OXMPI_COLL_PIECE_MAX";
pub const COLL_PIECES: &str = "OXMPI_COLL_PIECES";
pub const REDUCE_SCATTER_ALG: &str = "OXMPI_REDUCE_SCATTER_ALG";
pub const REDUCE_SCATTER_LONG: &str = "OXMPI_REDUCE_SCATTER_LONG";
pub const REDUCE_SCATTER_DIRECT: &str = "OXMPI_REDUCE_SCATTER_DIRECT";
pub const SPARSE: &str = "OXMPI_SPARSE";
pub const SPARSE_MIN: &str = "OXMPI_SPARSE_MIN";
pub const SPARSE_RATIO: &str = "OXMPI_SPARSE_RATIO";
pub const COLL_SHM: &str = "OXMPI_COLL_SHM";
pub const COLL_SHM_GATHER_MAX: &str = "OXMPI_COLL_SHM_GATHER_MAX";
pub const COLL_SHM_SCATTER_MAX: &str = "OXMPI_COLL_SHM_SCATTER_MAX";
pub const COLL_SHM_EXCHANGE_MAX: &str = "OXMPI_COLL_SHM_EXCHANGE_MAX";
pub const COLL_SHM_ROOTED_COPY_MIN: &str = "OXMPI_COLL_SHM_ROOTED_COPY_MIN";
pub const COLL_SHM_EXCHANGE_ENTRY: &str = "OXMPI_COLL_SHM_EXCHANGE_ENTRY";
pub const COLL_SHM_COPY_MIN: &str = "OXMPI_COLL_SHM_COPY_MIN";
pub const COLL_SHM_BCAST_COPY_MIN: &str = "OXMPI_COLL_SHM_BCAST_COPY_MIN";
pub const COLL_SHM_REDUCE_COPY_MIN: &str = "OXMPI_COLL_SHM_REDUCE_COPY_MIN";
pub const COLL_SHM_REDUCE_ROOT_RANKS: &str = "OXMPI_COLL_SHM_REDUCE_ROOT_RANKS";
pub const COLL_SHM_EXCHANGE_COPY_MIN: &str = "OXMPI_COLL_SHM_EXCHANGE_COPY_MIN";
pub const FAKE_NODES: &str = "OXMPI_FAKE_NODES";
pub const RANK_SESSIONS: &str = "OXMPI_RANK_SESSIONS";
pub const PMI: &str = "OXMPI_PMI";
pub const WIDE_COPY: &str = "OXMPI_WIDE_COPY";
pub const NET_PROVIDER: &str = "OXMPI_NET_PROVIDER";
pub const NET_DOMAIN: &str = "OXMPI_NET_DOMAIN";
pub const NET_EAGER_LIMIT: &str = "OXMPI_NET_EAGER_LIMIT";
pub const NET_RAILS: &str = "OXMPI_NET_RAILS";
pub const NET_RNDV_READ: &str = "OXMPI_NET_RNDV_READ";
pub const NET_EAGER_RDMA: &str = "OXMPI_NET_EAGER_RDMA";
pub const NET_RDMA_RMA: &str = "OXMPI_NET_RDMA_RMA";

pub const TUNABLES: &[Tunable] = &[
    Tunable { name: LOG, default: "warn", what: "log filter (env_logger syntax), e.g. debug", kind: Kind::Text },
    Tunable {
        name: EAGER_LIMIT,
        default: "12288",
        what: "largest message (bytes) sent eagerly through a ring slot (slots hold max(this, 16384) bytes); larger ones use rendezvous",
        kind: Kind::Number { min: 0, max: 1 << 20 },
    },
    Tunable {
        name: EAGER_PIECE,
        default: "2048",
        what: "a non-contiguous eager message to a rank that answered the last one and took everything sent to it goes in pieces of this many bytes, so it unpacks the first while the rest is packed (latency of 4-12 KiB vectors); 0: off. Only when ranks have a core each",
        kind: Kind::Number { min: 0, max: 1 << 20 },
    },
    Tunable {
        name: EAGER_PIECES_FROM,
        default: "4096",
        what: "smallest eager message sent in pieces (OXMPI_EAGER_PIECE)",
        kind: ANY_SIZE,
    },
    Tunable {
        name: SHM_SLOTS,
        default: "256/ranks, within 4..64; 8 with cells (OXMPI_SHM_CELLS)",
        what: "slots per ring between two ranks (memory: ranks^2 * slots * slot size)",
        kind: Kind::Number { min: 2, max: 1024 },
    },
    Tunable {
        name: SHM_CELLS,
        default: "0 below 32 ranks on the node, 16 from 32",
        what: "cells per rank for payloads larger than a ring slot; with cells, ring slots are 128 bytes and default to 8 per ring (memory: ranks^2 * slots * 128 + ranks * cells * 16 KiB, where 0 takes ranks^2 * slots * 16 KiB)",
        kind: Kind::Number { min: 0, max: 1024 },
    },
    Tunable {
        name: SHM_FILES,
        default: "0",
        what: "1 names the node's shared memory (segment, collectives areas, shared windows) in /dev/shm instead of anonymous memory opened through /proc/<pid>/fd: for ranks of one node that cannot see each other's /proc (separate containers sharing /dev/shm); mpiexec then checks /dev/shm has room",
        kind: Kind::Switch,
    },
    Tunable {
        name: CMA,
        default: "1",
        what: "0 disables single-copy process_vm_readv for large messages (streams through the ring)",
        kind: Kind::Switch,
    },
    Tunable {
        name: ASYNC_PROGRESS,
        default: "0",
        what: "1 starts a progress thread in every rank, so one-sided requests to it (windows across nodes, or without single copy), rendezvous sends and nonblocking collectives advance while the program computes outside MPI; every MPI call then takes the library lock, as at MPI_THREAD_MULTIPLE",
        kind: Kind::Switch,
    },
    Tunable {
        name: CMA_SPLIT,
        default: "65536",
        what: "contiguous messages of at least this many bytes are copied by both ranks at once (receiver reads from the front, sender writes from the back); 0: off. Only when ranks have a core each",
        kind: ANY_SIZE,
    },
    Tunable {
        name: SPIN_US,
        default: "20 (0 when ranks outnumber cores)",
        what: "microseconds a waiting rank polls before it starts yielding the CPU",
        kind: ANY_SIZE,
    },
    Tunable {
        name: YIELD_US,
        default: "200; when ranks outnumber cores 1000 if they share a session (yield on every poll), else 20",
        what: "microseconds a waiting rank polls and yields before it sleeps on its doorbell (mpiexec keeps ranks in its session when they outnumber cores: sched_yield reaches only tasks of the yielder's session under autogroup scheduling)",
        kind: ANY_SIZE,
    },
    Tunable {
        name: MEMBARRIER,
        default: "1",
        what: "0: senders fence before every doorbell check instead of sleepers calling membarrier(2) (always so when ranks outnumber cores)",
        kind: Kind::Switch,
    },
    // Collective algorithm selection (src/coll/tune.rs). Sizes are bytes of packed data;
    // `*_ALG` forces an algorithm (auto: choose by size) where the call allows it.
    Tunable {
        name: ALLREDUCE_ALG,
        default: "auto",
        what: "allreduce algorithm: recdbl, rabenseifner, ring, reduce_bcast (the last two need a commutative op)",
        kind: Kind::Word(&["auto", "recdbl", "rabenseifner", "ring", "reduce_bcast"]),
    },
    Tunable {
        name: ALLREDUCE_LARGE,
        default: "2048",
        what: "allreduce above this many bytes uses Rabenseifner (commutative op; non-commutative ones switch to reduce + bcast above 64 KiB); recursive doubling below",
        kind: ANY_SIZE,
    },
    Tunable {
        name: ALLREDUCE_RING,
        default: "1048576",
        what: "allreduce above this many bytes on a non-power-of-two size uses the ring (commutative op)",
        kind: ANY_SIZE,
    },
    Tunable {
        name: BCAST_ALG,
        default: "auto",
        what: "bcast algorithm: binomial, scatter_allgather",
        kind: Kind::Word(&["auto", "binomial", "scatter_allgather"]),
    },
    Tunable {
        name: BCAST_LARGE,
        default: "12288",
        what: "bcast of at least this many bytes uses scatter + ring allgather (with OXMPI_BCAST_MIN_PROCS ranks)",
        kind: ANY_SIZE,
    },
    Tunable { name: BCAST_MIN_PROCS, default: "8", what: "fewest ranks for scatter + allgather bcast", kind: ANY_SIZE },
    Tunable {
        name: ALLGATHER_ALG,
        default: "auto",
        what: "allgather(v) algorithm: ring, recdbl, bruck, direct",
        kind: Kind::Word(&["auto", "ring", "recdbl", "bruck", "direct"]),
    },
    Tunable {
        name: ALLGATHER_SHORT,
        default: "81920",
        what: "allgather of fewer total bytes on a non-power-of-two size uses Bruck",
        kind: ANY_SIZE,
    },
    Tunable {
        name: ALLGATHER_LONG,
        default: "524288",
        what: "allgather of fewer total bytes on a power-of-two size uses recursive doubling; ring above",
        kind: ANY_SIZE,
    },
    Tunable {
        name: ALLGATHER_DIRECT,
        default: "16384",
        what: "allgather of fewer total bytes uses the direct algorithm (every block to every rank at once), up to OXMPI_COLL_DIRECT_PROCS ranks",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_DIRECT_PROCS,
        default: "8",
        what: "most ranks for the direct (one-round) allgather and reduce_scatter",
        kind: ANY_SIZE,
    },
    Tunable {
        name: ALLTOALL_ALG,
        default: "auto",
        what: "alltoall algorithm: post (all transfers at once), pairwise, bruck (MPI_Alltoall only)",
        kind: Kind::Word(&["auto", "post", "pairwise", "bruck"]),
    },
    Tunable {
        name: ALLTOALL_SHORT,
        default: "256",
        what: "alltoall blocks of at most this many bytes use Bruck (with OXMPI_ALLTOALL_MIN_PROCS ranks)",
        kind: ANY_SIZE,
    },
    Tunable { name: ALLTOALL_MIN_PROCS, default: "16", what: "fewest ranks for Bruck alltoall", kind: ANY_SIZE },
    Tunable {
        name: ALLTOALL_MEDIUM,
        default: "32768",
        what: "alltoall blocks of at least this many bytes use pairwise exchange; smaller ones post everything",
        kind: ANY_SIZE,
    },
    Tunable {
        name: GATHER_ALG,
        default: "auto",
        what: "gather/scatter algorithm: linear, binomial (MPI_Gather/MPI_Scatter only; the v forms are linear)",
        kind: Kind::Word(&["auto", "linear", "binomial"]),
    },
    Tunable {
        name: GATHER_LARGE,
        default: "65536",
        what: "gather/scatter of fewer total bytes uses the binomial tree; linear above",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_DETACH_MAX,
        default: "4096",
        what: "when ranks outnumber cores, scatter sends of at most this many bytes are copied when the peer's ring is full, so the root returns without waiting for the receiver",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_PIECE_MAX,
        default: "524288",
        what: "when ranks outnumber cores, gather and scatter blocks above the eager limit travel as eager pieces instead of one rendezvous message while block bytes times members are at most this; 0: off",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_PIECES,
        default: "auto",
        what: "1: gather and scatter blocks travel in eager pieces (as OXMPI_COLL_PIECE_MAX allows) at any rank count; 0: never; auto: when ranks outnumber cores",
        kind: Kind::Word(&["auto", "1", "on", "0", "off"]),
    },
    Tunable {
        name: REDUCE_SCATTER_ALG,
        default: "auto",
        what: "reduce_scatter(_block) algorithm: direct, reduce_scatter (any op); halving, pairwise (commutative ops)",
        kind: Kind::Word(&["auto", "reduce_scatter", "halving", "pairwise", "direct"]),
    },
    Tunable {
        name: REDUCE_SCATTER_LONG,
        default: "524288",
        what: "reduce_scatter of at least this many total bytes uses pairwise exchange; recursive halving below",
        kind: ANY_SIZE,
    },
    Tunable {
        name: REDUCE_SCATTER_DIRECT,
        default: "16384",
        what: "reduce_scatter of fewer total bytes uses the direct algorithm (every block to its rank at once, combined in rank order), up to OXMPI_COLL_DIRECT_PROCS ranks",
        kind: ANY_SIZE,
    },
    Tunable {
        name: SPARSE,
        default: "1",
        what: "0 disables sparse-aware Reduce/Allreduce (index/value encoding of vectors with many neutral elements)",
        kind: Kind::Switch,
    },
    Tunable { name: SPARSE_MIN, default: "1024", what: "smallest vector (bytes) checked for sparsity", kind: ANY_SIZE },
    Tunable {
        name: SPARSE_RATIO,
        default: "50",
        what: "sparse encoding is used while it takes at most this percentage of the dense bytes",
        kind: Kind::Number { min: 0, max: 100 },
    },
    Tunable {
        name: COLL_SHM,
        default: "1",
        what: "0: barrier, bcast, reduce and allreduce use point-to-point algorithms only (no shared-memory, node-aware path)",
        kind: Kind::Switch,
    },
    Tunable {
        name: COLL_SHM_COPY_MIN,
        default: "65536",
        what: "on one node, allreduce vectors of at least this many bytes move by single copy (every rank reads its peers' buffers) when the ranks can read each other's memory",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_SHM_BCAST_COPY_MIN,
        default: "65536, or never when ranks outnumber cores",
        what: "on one node, broadcasts of at least this many bytes move by single copy (the others read the root's buffer; between two ranks, a point-to-point message that both copy at once); below, and by default when ranks outnumber cores, they go through the shared slots",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_SHM_REDUCE_COPY_MIN,
        default: "2097152 on 8 ranks or more, else never",
        what: "on one node, reduce vectors of at least this many bytes move by single copy (the ranks read each other's inputs); below, and by default on fewer than 8 ranks, they go through the shared slots",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_SHM_REDUCE_ROOT_RANKS,
        default: "2",
        what: "a single-copy reduce on a node of at most this many ranks is combined by the root alone (reading every input); larger: every rank combines a segment, the root collects them",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_SHM_EXCHANGE_COPY_MIN,
        default: "16384",
        what: "on one node, allgather(v) and alltoall blocks and reduce_scatter segments (builtin ops, 3 ranks or more) of at least this many bytes (the largest) move by single copy: every rank reads what it needs straight from the others' buffers (0: never)",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_SHM_GATHER_MAX,
        default: "2048",
        what: "largest total (bytes, block times ranks) of a Gather on one node through the shared-memory lanes \
               (0: point-to-point; blocks of at most 2048 bytes)",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_SHM_SCATTER_MAX,
        default: "2048",
        what: "largest total (bytes, block times ranks) of a Scatter on one node through the shared-memory lanes \
               (0: point-to-point; the blocks for the other ranks must fit 2048 bytes)",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_SHM_EXCHANGE_MAX,
        default: "2048 while the node has a core per rank, else no limit",
        what: "largest total (bytes, all blocks of all ranks) of an Allgather(v)/Alltoall/Reduce_scatter(_block) on \
               one node through the shared-memory lanes (0: point-to-point; one rank's entry holds at most 2048 bytes, \
               or OXMPI_COLL_SHM_EXCHANGE_ENTRY when ranks outnumber cores)",
        kind: ANY_SIZE,
    },
    Tunable {
        name: COLL_SHM_EXCHANGE_ENTRY,
        default: "16384",
        what: "when ranks outnumber cores on one node: largest entry (bytes one rank publishes: an Allgather block, the \
               other ranks' Alltoall blocks, a Reduce_scatter input) of an exchange through the shared-memory lanes \
               (at most 16384)",
        kind: Kind::Number { min: 0, max: 16384 },
    },
    Tunable {
        name: COLL_SHM_ROOTED_COPY_MIN,
        default: "32768, or less where blocks would not travel in pieces (block x ranks > OXMPI_COLL_PIECE_MAX); scatters only below 262144",
        what: "when ranks outnumber cores on one node: smallest block (bytes) of a Gather/Scatter moved by single copy \
               through the shared-memory area (the root reads every block, or every member its own; 0: never)",
        kind: ANY_SIZE,
    },
    Tunable {
        name: NET_PROVIDER,
        default: "fastest present",
        what: "libfabric provider for jobs that span nodes, e.g. tcp;ofi_rxm or verbs;ofi_rxm (libfabric's FI_PROVIDER also filters); \
               by default the first present of cxi, efa, verbs;ofi_rxm, psm3, opx, psm2, tcp, net, tcp;ofi_rxm, net;ofi_rxm",
        kind: Kind::Text,
    },
    Tunable {
        name: NET_DOMAIN,
        default: "first non-loopback",
        what: "libfabric domain (NIC or interface name, as oxmpi-info lists them) for jobs that span nodes",
        kind: Kind::Text,
    },
    Tunable {
        name: NET_EAGER_LIMIT,
        default: "32768",
        what: "largest message (bytes) sent eagerly to a rank on another node; larger ones go by rendezvous straight between the buffers",
        kind: Kind::Number { min: 0, max: 65536 },
    },
    Tunable {
        name: NET_RAILS,
        default: "every NIC of the provider (at most 4); 1 over TCP",
        what: "network endpoints per rank, one per NIC (domain) of the chosen provider, in libfabric's order from OXMPI_NET_DOMAIN; transfers of 256 KiB or more are striped over the rails two ranks share, and a rank's peers spread over them for packets (each pair keeps to one)",
        kind: Kind::Number { min: 1, max: 4 },
    },
    Tunable {
        name: NET_EAGER_RDMA,
        default: "1 where the provider does RMA in the NIC, 0 over TCP",
        what: "1: a rank offers each of up to 16 peers on other nodes that sent it 16 packets a ring of 16 slots in its memory, which the peer writes its packets into by RDMA and this rank polls (the RDMA eager channel, where the provider does RMA); 0: packets always travel as tagged messages",
        kind: Kind::Switch,
    },
    Tunable {
        name: NET_RNDV_READ,
        default: "1 where the provider does RMA in the NIC, 0 over TCP",
        what: "1: rendezvous messages to another node (contiguous, or in blocks that are not tiny) are read by the receiver from the sender's registered buffer (RDMA read, \
               where the provider does RMA); 0: they move as one tagged message the receiver asked for (clear to send)",
        kind: Kind::Switch,
    },
    Tunable {
        name: NET_RDMA_RMA,
        default: "1 where the provider does RMA (also emulated over TCP)",
        what: "1: MPI_Put and MPI_Get toward window members on other nodes write and read their registered window memory by RDMA \
               (MPI_Win_create and MPI_Win_allocate windows, contiguous target data; where the provider does RMA); 0: they go as \
               requests the target's agent applies, like accumulates",
        kind: Kind::Switch,
    },
    Tunable {
        name: FAKE_NODES,
        default: "unset",
        what: "k or k:cyclic: simulate k nodes on this machine (blocks of consecutive world ranks, or rank w on node w % k); \
               MPI_COMM_TYPE_SHARED and the node-aware collectives follow them",
        kind: Kind::FakeNodes,
    },
    Tunable {
        name: LINK_TIMEOUT,
        default: "2000",
        what: "read by mpiexec and its proxies: milliseconds the connection between them may go unanswered (TCP keepalive probes every half of it, and a user timeout on unacknowledged data) before the host counts as unreachable and the job ends",
        kind: Kind::Number { min: 2000, max: 3_600_000 },
    },
    Tunable {
        name: CONNECT_TIMEOUT,
        default: "180 (MPICH's MPIR_CVAR_CH4_COMM_CONNECT_TIMEOUT or MPIR_CVAR_CH3_COMM_CONNECT_TIMEOUT when set)",
        what: "seconds an MPI_Comm_connect waits for an MPI_Comm_accept at an open port before it fails with MPI_ERR_PORT",
        kind: Kind::Number { min: 1, max: 1 << 32 },
    },
    Tunable {
        name: RANK_SESSIONS,
        default: "ranks <= CPUs",
        what: "read by mpiexec: 1 starts every rank in a session of its own (an autogroup CPU share each), 0 keeps them in mpiexec's session (waiting ranks can then hand the CPU to each other with sched_yield); by default own sessions only when every rank has a CPU",
        kind: Kind::Switch,
    },
    Tunable {
        name: PMI,
        default: "2 when PMI_JOBID is set (Slurm's srun --mpi=pmi2), else 1 when PMI_FD is set, else x when PMIX_NAMESPACE is set (srun --mpi=pmix)",
        what: "the process-manager interface: 1 (PMI-1 on PMI_FD, our mpiexec and Hydra's default), 2 (PMI-2 on PMI_FD, Slurm's mpi/pmi2 plugin; Hydra serves both) or x (PMIx through libpmix.so.2, Slurm's mpi/pmix plugin)",
        kind: Kind::Word(&["1", "2", "x"]),
    },
    Tunable {
        name: WIDE_COPY,
        default: "1",
        what: "0: packing and unpacking of 192-512-byte blocks use the baseline copies (memcpy calls) even where the CPU has AVX-512",
        kind: Kind::Switch,
    },
];

/// How long MPI_Comm_connect waits for an accept: `OXMPI_CONNECT_TIMEOUT` seconds, else
/// MPICH's variable for the same (scripts written for MPICH set it), else 180 s as in MPICH.
pub fn connect_timeout() -> std::time::Duration {
    let seconds = [CONNECT_TIMEOUT, "MPIR_CVAR_CH4_COMM_CONNECT_TIMEOUT", "MPIR_CVAR_CH3_COMM_CONNECT_TIMEOUT"]
        .iter()
        .find_map(|name| std::env::var(name).ok().and_then(|v| v.trim().parse::<u64>().ok()))
        .unwrap_or(180);
    std::time::Duration::from_secs(seconds.max(1))
}

/// The value of switch tunable `name`, if set: anything but 0 turns it on.
pub fn switch_var(name: &str) -> Option<bool> {
    std::env::var(name).ok().map(|v| v.trim() != "0")
}

/// The value of tunable `name` as a number, if set and valid.
pub fn usize_var(name: &str) -> Option<usize> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => {
            log::warn!("ignoring {name}={v}: not a number");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tunable(name: &str) -> &'static Tunable {
        TUNABLES.iter().find(|t| t.name == name).unwrap()
    }

    #[test]
    fn values_are_range_checked() {
        let eager = tunable(EAGER_LIMIT);
        for good in ["0", "12288", " 4096 ", "1048576", ""] {
            assert!(check(eager, good).is_ok(), "{good}");
        }
        for bad in ["abc", "-5", "1048577", "1e4", "99999999999999999999999"] {
            let message = check(eager, bad).unwrap_err();
            assert!(message.starts_with("OXMPI_EAGER_LIMIT=") && message.contains("from 0 to 1048576"), "{message}");
        }
        let slots = tunable(SHM_SLOTS);
        assert!(check(slots, "0").unwrap_err().contains("from 2 to 1024"));
        assert!(check(slots, "100000").is_err());
        assert!(check(slots, "2").is_ok() && check(slots, "1024").is_ok());
        assert!(check(tunable(CMA), "1").is_ok() && check(tunable(CMA), "yes").is_err());
        assert!(check(tunable(ALLREDUCE_ALG), "RING").is_ok());
        assert!(check(tunable(ALLREDUCE_ALG), "rings").unwrap_err().contains("one of auto, recdbl"));
        assert!(check(tunable(SPARSE_RATIO), "101").is_err());
        let fake = tunable(FAKE_NODES);
        for good in ["2", "3:cyclic", "1:block"] {
            assert!(check(fake, good).is_ok(), "{good}");
        }
        for bad in ["0", "x", "2:diagonal", "-1"] {
            assert!(check(fake, bad).is_err(), "{bad}");
        }
        assert!(check(tunable(ALLGATHER_LONG), &usize::MAX.to_string()).is_ok());
        assert!(check(tunable(NET_DOMAIN), "anything at all").is_ok());
    }

    #[test]
    fn every_default_is_documented_with_its_range() {
        let guide = include_str!("../docs/user-guide.md");
        for t in TUNABLES {
            let row = guide
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", t.name)))
                .unwrap_or_else(|| panic!("docs/user-guide.md has no row for {}", t.name));
            assert!(row.contains(&t.kind.range()), "{}: the row lacks {:?}", t.name, t.kind.range());
        }
    }

    #[test]
    fn numeric_defaults_are_in_range() {
        for t in TUNABLES {
            if let Ok(n) = t.default.parse::<u64>() {
                assert!(t.kind.accepts(&n.to_string()), "{} default {n}", t.name);
            }
        }
    }
}

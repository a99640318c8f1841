//! Tunables: every `OXMPI_*` environment variable the library reads, with its default, in
//! one table that `oxmpi-info` prints.

pub struct Tunable {
    pub name: &'static str,
    pub default: &'static str,
    pub what: &'static str,
}

pub const LOG: &str = "OXMPI_LOG";
pub const EAGER_LIMIT: &str = "OXMPI_EAGER_LIMIT";
pub const SHM_SLOTS: &str = "OXMPI_SHM_SLOTS";
pub const CMA: &str = "OXMPI_CMA";
pub const SPIN_US: &str = "OXMPI_SPIN_US";
pub const YIELD_US: &str = "OXMPI_YIELD_US";
pub const MEMBARRIER: &str = "OXMPI_MEMBARRIER";
pub const COLL_SHM: &str = "OXMPI_COLL_SHM";
pub const FAKE_NODES: &str = "OXMPI_FAKE_NODES";

pub const TUNABLES: &[Tunable] = &[
    Tunable { name: LOG, default: "warn", what: "log filter (env_logger syntax), e.g. debug" },
    Tunable {
        name: EAGER_LIMIT,
        default: "16384",
        what: "largest message (bytes) sent eagerly through a ring slot; larger ones use rendezvous",
    },
    Tunable {
        name: SHM_SLOTS,
        default: "128/ranks, within 4..16",
        what: "slots per ring between two ranks (memory: ranks^2 * slots * slot size)",
    },
    Tunable {
        name: CMA,
        default: "1",
        what: "0 disables single-copy process_vm_readv for large messages (streams through the ring)",
    },
    Tunable {
        name: SPIN_US,
        default: "20 (0 when ranks outnumber cores)",
        what: "microseconds a waiting rank polls before it starts yielding the CPU",
    },
    Tunable {
        name: YIELD_US,
        default: "200 (20 when ranks outnumber cores)",
        what: "microseconds a waiting rank polls and yields before it sleeps on its doorbell",
    },
    Tunable {
        name: MEMBARRIER,
        default: "1",
        what: "0: senders fence before every doorbell check instead of sleepers calling membarrier(2) (always so when ranks outnumber cores)",
    },
    Tunable {
        name: COLL_SHM,
        default: "1",
        what: "0: barrier, bcast, reduce and allreduce use point-to-point algorithms only (no shared-memory, node-aware path)",
    },
    Tunable {
        name: FAKE_NODES,
        default: "unset",
        what: "k or k:cyclic: simulate k nodes on this machine (blocks of consecutive world ranks, or rank w on node w % k); \
               MPI_COMM_TYPE_SHARED and the node-aware collectives follow them",
    },
];

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

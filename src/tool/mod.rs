//! The tools information interface (MPI-4.1 chapter 15): control variables (one per `OXMPI_*`
//! tunable of `crate::config`), performance variables (the engine's message counts,
//! `p2p::stats`), categories, and the reference-counted MPI_T state with its pvar sessions
//! and handles. Safe Rust; `src/abi/mpit.rs` decodes the C arguments.
//!
//! Every variable is bound to no MPI object. Control variables are read-only
//! (`MPI_T_SCOPE_READONLY`): the library reads the tunables once, at MPI_Init, so a write
//! could not take effect. Performance variables are read-only too (no write, no reset) and
//! not atomic; the message counters are not continuous (a handle counts only while started),
//! the unexpected queue's length and high-water mark are continuous. While the runtime is not
//! up (before MPI_Init, after MPI_Finalize) performance variables read the values they had
//! when it was last torn down, 0 before the first MPI_Init.

use crate::abi::consts::*;
use crate::config::{self, Kind, TUNABLES, Tunable};
use crate::error::{MpiError, MpiResult, err};
use crate::p2p::stats::Stats;
use crate::transport::Route;
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard};

/// The C type of a variable's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// `MPI_INT`: switches.
    Int,
    /// `MPI_UNSIGNED_LONG_LONG`: numbers, counters.
    UnsignedLongLong,
    /// `MPI_CHAR`: a NUL-terminated string.
    Char,
}

/// A value read from a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Int(c_int),
    UnsignedLongLong(u64),
    /// Without the terminating NUL.
    Text(String),
}

impl Value {
    /// How many elements of its type a buffer must hold (the string with its NUL).
    pub fn count(&self) -> usize {
        match self {
            Value::Text(s) => s.len() + 1,
            _ => 1,
        }
    }
}

// ----- categories -----

/// A category: its name, description, and the categories it contains.
pub struct Category {
    pub name: &'static str,
    pub desc: &'static str,
    pub subcategories: &'static [usize],
}

/// The category that holds every other one.
pub const TOP: usize = 0;
const P2P: usize = 1;
const SHM: usize = 2;
const NET: usize = 3;
const COLL: usize = 4;
const PROGRESS: usize = 5;
const RUNTIME: usize = 6;

pub const CATEGORIES: &[Category] = &[
    Category {
        name: "oxmpi",
        desc: "every variable of oxmpi, by subject",
        subcategories: &[P2P, SHM, NET, COLL, PROGRESS, RUNTIME],
    },
    Category {
        name: "point_to_point",
        desc: "point-to-point protocols: eager limits, messages and bytes moved, the unexpected queue",
        subcategories: &[],
    },
    Category { name: "shared_memory", desc: "the shared-memory transport between ranks of a node", subcategories: &[] },
    Category { name: "network", desc: "the network transport (libfabric) between nodes", subcategories: &[] },
    Category {
        name: "collectives",
        desc: "collective algorithms, their thresholds and the node-aware shared-memory paths",
        subcategories: &[],
    },
    Category {
        name: "progress",
        desc: "how waiting ranks poll, yield and sleep; the progress thread",
        subcategories: &[],
    },
    Category { name: "runtime", desc: "start-up: logging, process manager, node layout", subcategories: &[] },
];

/// The category of a tunable, from its name.
fn tunable_category(name: &str) -> usize {
    let n = name.strip_prefix("OXMPI_").unwrap_or(name);
    const COLL_PREFIXES: &[&str] =
        &["COLL_", "ALLREDUCE_", "BCAST_", "ALLGATHER_", "ALLTOALL_", "GATHER_", "REDUCE_SCATTER_", "SPARSE"];
    if n.starts_with("NET_") {
        NET
    } else if COLL_PREFIXES.iter().any(|p| n.starts_with(p)) {
        COLL
    } else if n.starts_with("EAGER_") {
        P2P
    } else if n.starts_with("SHM_") || n.starts_with("CMA") || n == "MEMBARRIER" || n == "WIDE_COPY" {
        SHM
    } else if n == "SPIN_US" || n == "YIELD_US" || n == "ASYNC_PROGRESS" {
        PROGRESS
    } else {
        RUNTIME
    }
}

// ----- control variables -----

/// Control variable `index`: a tunable of `config::TUNABLES`, same index.
pub fn cvar(index: usize) -> Option<&'static Tunable> {
    TUNABLES.get(index)
}

pub fn cvar_count() -> usize {
    TUNABLES.len()
}

/// The C type of a tunable's value: switches are `int`, numbers `unsigned long long`, when
/// their default is a number; the rest are strings (words, text, and numbers whose default
/// depends on the job, as "256/ranks, within 4..64": the library tells its effective value
/// only once it runs, so the text is what a tool can be told).
pub fn cvar_type(t: &Tunable) -> ValueType {
    match t.kind {
        Kind::Switch if t.default.parse::<c_int>().is_ok() => ValueType::Int,
        Kind::Number { .. } if t.default.parse::<u64>().is_ok() => ValueType::UnsignedLongLong,
        _ => ValueType::Char,
    }
}

pub fn cvar_category(t: &Tunable) -> usize {
    tunable_category(t.name)
}

/// The description of a tunable: what it does, its default and what it accepts.
pub fn cvar_desc(t: &Tunable) -> String {
    format!("{} (default: {}; accepts {})", t.what, t.default, t.kind.range())
}

/// The value of a tunable: the environment's when set (non-empty) and valid, as MPI_Init
/// reads it, else the default.
pub fn cvar_value(t: &Tunable) -> Value {
    let set = std::env::var(t.name).ok().filter(|v| !v.trim().is_empty() && config::check(t, v).is_ok());
    let text = set.as_deref().map(str::trim).unwrap_or(t.default);
    match cvar_type(t) {
        ValueType::Int => Value::Int(text.parse().unwrap_or(0)),
        ValueType::UnsignedLongLong => Value::UnsignedLongLong(text.parse().unwrap_or(0)),
        ValueType::Char => Value::Text(text.to_string()),
    }
}

pub fn cvar_index(name: &str) -> Option<usize> {
    TUNABLES.iter().position(|t| t.name == name)
}

// ----- performance variables -----

/// What a performance variable reads from the engine's counts.
#[derive(Debug, Clone, Copy)]
enum Source {
    SentMessages(Route),
    SentBytes(Route),
    ReceivedMessages(Route),
    ReceivedBytes(Route),
    EagerSent,
    RendezvousSent,
    RdmaReads,
    RdmaWindowAccesses,
    RingPackets,
    UnexpectedNow,
    UnexpectedHigh,
}

impl Source {
    fn read(self, s: &Stats) -> u64 {
        match self {
            Source::SentMessages(r) => s.sent.messages[r as usize],
            Source::SentBytes(r) => s.sent.bytes[r as usize],
            Source::ReceivedMessages(r) => s.received.messages[r as usize],
            Source::ReceivedBytes(r) => s.received.bytes[r as usize],
            Source::EagerSent => {
                let others = s.sent.messages[Route::Shm as usize] + s.sent.messages[Route::Net as usize];
                others.saturating_sub(s.rendezvous_sent)
            }
            Source::RendezvousSent => s.rendezvous_sent,
            Source::RdmaReads => s.rdma_reads,
            Source::RdmaWindowAccesses => s.rdma_window_accesses,
            Source::RingPackets => s.ring_packets,
            Source::UnexpectedNow => s.unexpected_now,
            Source::UnexpectedHigh => s.unexpected_high,
        }
    }
}

pub struct Pvar {
    pub name: &'static str,
    pub desc: &'static str,
    /// `MPI_T_PVAR_CLASS_*`.
    pub class: c_int,
    /// Always active: no start or stop, a handle reads the variable itself.
    pub continuous: bool,
    pub category: usize,
    source: Source,
}

macro_rules! counter {
    ($name:literal, $desc:literal, $source:expr) => {
        Pvar {
            name: $name,
            desc: $desc,
            class: MPI_T_PVAR_CLASS_COUNTER,
            continuous: false,
            category: P2P,
            source: $source,
        }
    };
}

pub const PVARS: &[Pvar] = &[
    counter!(
        "shm_messages_sent",
        "messages sent to ranks of this node (shared memory)",
        Source::SentMessages(Route::Shm)
    ),
    counter!("shm_bytes_sent", "bytes of messages sent to ranks of this node", Source::SentBytes(Route::Shm)),
    counter!(
        "shm_messages_received",
        "messages from ranks of this node matched by a receive",
        Source::ReceivedMessages(Route::Shm)
    ),
    counter!("shm_bytes_received", "bytes of messages from ranks of this node", Source::ReceivedBytes(Route::Shm)),
    counter!("net_messages_sent", "messages sent to ranks of other nodes (network)", Source::SentMessages(Route::Net)),
    counter!("net_bytes_sent", "bytes of messages sent to ranks of other nodes", Source::SentBytes(Route::Net)),
    counter!(
        "net_messages_received",
        "messages from ranks of other nodes matched by a receive",
        Source::ReceivedMessages(Route::Net)
    ),
    counter!("net_bytes_received", "bytes of messages from ranks of other nodes", Source::ReceivedBytes(Route::Net)),
    counter!("self_messages_sent", "messages a rank sent to itself", Source::SentMessages(Route::Me)),
    counter!(
        "self_messages_received",
        "messages from itself matched by a receive",
        Source::ReceivedMessages(Route::Me)
    ),
    counter!("eager_messages_sent", "messages sent to other ranks eagerly (with their data)", Source::EagerSent),
    counter!(
        "rendezvous_messages_sent",
        "messages sent to other ranks by rendezvous (a request to send, the data once the receive matched)",
        Source::RendezvousSent
    ),
    counter!(
        "net_rdma_reads",
        "rendezvous messages from ranks of other nodes received by an RDMA read of the sender's buffer",
        Source::RdmaReads
    ),
    counter!(
        "net_rdma_rma",
        "one-sided Puts and Gets toward members of other nodes done by RDMA of their window memory",
        Source::RdmaWindowAccesses
    ),
    counter!(
        "net_ring_packets",
        "packets (eager messages and the protocols' control packets) from ranks of other nodes taken from RDMA eager rings",
        Source::RingPackets
    ),
    Pvar {
        name: "unexpected_recvq_length",
        desc: "messages arrived before a receive took them (the unexpected queue), now",
        class: MPI_T_PVAR_CLASS_LEVEL,
        continuous: true,
        category: P2P,
        source: Source::UnexpectedNow,
    },
    Pvar {
        name: "unexpected_recvq_high_water",
        desc: "most messages the unexpected queue held at once since MPI_Init",
        class: MPI_T_PVAR_CLASS_HIGHWATERMARK,
        continuous: true,
        category: P2P,
        source: Source::UnexpectedHigh,
    },
];

pub fn pvar_index(name: &str, class: c_int) -> Option<usize> {
    PVARS.iter().position(|p| p.name == name && p.class == class)
}

/// Control variables of category `cat`, in index order.
pub fn category_cvars(cat: usize) -> Vec<usize> {
    TUNABLES.iter().enumerate().filter(|(_, t)| cvar_category(t) == cat).map(|(i, _)| i).collect()
}

pub fn category_pvars(cat: usize) -> Vec<usize> {
    PVARS.iter().enumerate().filter(|(_, p)| p.category == cat).map(|(i, _)| i).collect()
}

pub fn category_index(name: &str) -> Option<usize> {
    CATEGORIES.iter().position(|c| c.name == name)
}

// ----- the counts while the runtime is down -----

/// The engine's counts when the runtime was last torn down.
static LAST_STATS: Mutex<Option<Stats>> = Mutex::new(None);

/// Keeps the engine's counts for reads after MPI_Finalize (`runtime::tear_down`).
pub fn keep_final_stats(s: Stats) {
    *LAST_STATS.lock().unwrap_or_else(|p| p.into_inner()) = Some(Stats { unexpected_now: 0, ..s });
}

/// The engine's counts now, or the last ones kept while the runtime is down.
fn current_stats() -> Stats {
    // Err: the runtime is not up.
    if let Ok(s) = crate::runtime::with(|rt| Ok(rt.engine.stats())) {
        return s;
    }
    LAST_STATS.lock().unwrap_or_else(|p| p.into_inner()).unwrap_or_default()
}

// ----- MPI_T state: initialization count, sessions, handles -----

struct PvarHandle {
    session: usize,
    var: usize,
    started: bool,
    /// Counted in earlier started intervals.
    accumulated: u64,
    /// The variable's value when this interval started.
    base: u64,
}

impl PvarHandle {
    fn value(&self, raw: u64) -> u64 {
        if PVARS[self.var].continuous {
            raw
        } else if self.started {
            self.accumulated + raw.saturating_sub(self.base)
        } else {
            self.accumulated
        }
    }
}

#[derive(Default)]
struct State {
    /// MPI_T_init_thread calls not yet matched by MPI_T_finalize.
    inits: usize,
    /// Ids of the live cvar handles and the variable each reads.
    cvar_handles: BTreeMap<usize, usize>,
    sessions: BTreeMap<usize, ()>,
    pvar_handles: BTreeMap<usize, PvarHandle>,
    /// The last id given to a session or handle (0 is never one: it is the null handle).
    last_id: usize,
}

static STATE: Mutex<State> = Mutex::new(State {
    inits: 0,
    cvar_handles: BTreeMap::new(),
    sessions: BTreeMap::new(),
    pvar_handles: BTreeMap::new(),
    last_id: 0,
});

fn lock() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

impl State {
    fn new_id(&mut self) -> usize {
        self.last_id += 1;
        self.last_id
    }
}

/// Runs `f` on the state if MPI_T is initialized.
fn initialized<R>(f: impl FnOnce(&mut State) -> MpiResult<R>) -> MpiResult<R> {
    let mut st = lock();
    if st.inits == 0 {
        return err(MPI_T_ERR_NOT_INITIALIZED, "the tools interface is not initialized (MPI_T_init_thread)");
    }
    f(&mut st)
}

/// Fails with MPI_T_ERR_NOT_INITIALIZED unless MPI_T is initialized.
pub fn check_initialized() -> MpiResult {
    initialized(|_| Ok(()))
}

/// MPI_T_init_thread: one more user. Every thread level is provided: MPI_T's state is behind
/// its own lock; reading a pvar while MPI runs enters the runtime as any MPI call does, so
/// from several threads at once it needs MPI's own MPI_THREAD_MULTIPLE (docs/user-guide.md).
pub fn init(required: c_int) -> MpiResult<c_int> {
    let mut st = lock();
    st.inits += 1;
    Ok(required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE))
}

/// MPI_T_finalize: one user fewer; the last frees every session and handle.
pub fn finalize() -> MpiResult {
    initialized(|st| {
        st.inits -= 1;
        if st.inits == 0 {
            let last_id = st.last_id;
            *st = State { last_id, ..State::default() };
        }
        Ok(())
    })
}

fn index_error(what: &str, index: c_int) -> MpiError {
    MpiError::new(MPI_T_ERR_INVALID_INDEX, format!("invalid {what} index {index}"))
}

/// `index` as an index below `n`.
pub fn check_index(index: c_int, n: usize, what: &str) -> MpiResult<usize> {
    check_initialized()?;
    usize::try_from(index).ok().filter(|&i| i < n).ok_or_else(|| index_error(what, index))
}

pub fn cvar_handle_alloc(index: c_int) -> MpiResult<(usize, usize)> {
    let var = check_index(index, cvar_count(), "control variable")?;
    initialized(|st| {
        let id = st.new_id();
        st.cvar_handles.insert(id, var);
        Ok((id, cvar_value(&TUNABLES[var]).count()))
    })
}

fn cvar_of(st: &State, handle: usize) -> MpiResult<usize> {
    st.cvar_handles
        .get(&handle)
        .copied()
        .ok_or_else(|| MpiError::new(MPI_T_ERR_INVALID_HANDLE, "invalid control variable handle"))
}

pub fn cvar_handle_free(handle: usize) -> MpiResult {
    initialized(|st| {
        cvar_of(st, handle)?;
        st.cvar_handles.remove(&handle);
        Ok(())
    })
}

pub fn cvar_read(handle: usize) -> MpiResult<Value> {
    let var = initialized(|st| cvar_of(st, handle))?;
    Ok(cvar_value(&TUNABLES[var]))
}

pub fn cvar_write(handle: usize) -> MpiResult {
    let var = initialized(|st| cvar_of(st, handle))?;
    err(MPI_T_ERR_CVAR_SET_NEVER, format!("{} is read at MPI_Init only; set it in the environment", TUNABLES[var].name))
}

pub fn session_create() -> MpiResult<usize> {
    initialized(|st| {
        let id = st.new_id();
        st.sessions.insert(id, ());
        Ok(id)
    })
}

fn check_session(st: &State, session: usize) -> MpiResult {
    if st.sessions.contains_key(&session) {
        Ok(())
    } else {
        err(MPI_T_ERR_INVALID_SESSION, "invalid performance variable session")
    }
}

pub fn session_free(session: usize) -> MpiResult {
    initialized(|st| {
        check_session(st, session)?;
        st.sessions.remove(&session);
        st.pvar_handles.retain(|_, h| h.session != session);
        Ok(())
    })
}

/// Allocates a handle to pvar `index` in `session`; returns it and the value's count (1).
pub fn pvar_handle_alloc(session: usize, index: c_int) -> MpiResult<(usize, usize)> {
    let var = check_index(index, PVARS.len(), "performance variable")?;
    initialized(|st| {
        check_session(st, session)?;
        let id = st.new_id();
        let continuous = PVARS[var].continuous;
        st.pvar_handles.insert(id, PvarHandle { session, var, started: continuous, accumulated: 0, base: 0 });
        Ok((id, 1))
    })
}

fn pvar_handle<'a>(st: &'a mut State, session: usize, handle: usize) -> MpiResult<&'a mut PvarHandle> {
    check_session(st, session)?;
    match st.pvar_handles.get_mut(&handle) {
        Some(h) if h.session == session => Ok(h),
        _ => err(MPI_T_ERR_INVALID_HANDLE, "invalid performance variable handle (for this session)"),
    }
}

pub fn pvar_handle_free(session: usize, handle: usize) -> MpiResult {
    initialized(|st| {
        pvar_handle(st, session, handle)?;
        st.pvar_handles.remove(&handle);
        Ok(())
    })
}

/// Which handles an operation applies to: one, or every handle of the session
/// (`MPI_T_PVAR_ALL_HANDLES`).
#[derive(Debug, Clone, Copy)]
pub enum Handles {
    One(usize),
    All,
}

/// Starts (`start`) or stops the handles: a continuous variable has neither
/// (MPI_T_ERR_PVAR_NO_STARTSTOP for one handle; skipped among all handles).
pub fn pvar_start_stop(session: usize, handles: Handles, start: bool) -> MpiResult {
    let stats = current_stats();
    initialized(|st| {
        check_session(st, session)?;
        let ids: Vec<usize> = match handles {
            Handles::One(id) => {
                let h = pvar_handle(st, session, id)?;
                if PVARS[h.var].continuous {
                    return err(
                        MPI_T_ERR_PVAR_NO_STARTSTOP,
                        "a continuous performance variable cannot be started or stopped",
                    );
                }
                vec![id]
            }
            Handles::All => st
                .pvar_handles
                .iter()
                .filter(|(_, h)| h.session == session && !PVARS[h.var].continuous)
                .map(|(&id, _)| id)
                .collect(),
        };
        for id in ids {
            let h = st.pvar_handles.get_mut(&id).unwrap();
            let raw = PVARS[h.var].source.read(&stats);
            if start && !h.started {
                h.base = raw;
                h.started = true;
            } else if !start && h.started {
                h.accumulated += raw.saturating_sub(h.base);
                h.started = false;
            }
        }
        Ok(())
    })
}

pub fn pvar_read(session: usize, handle: usize) -> MpiResult<u64> {
    let stats = current_stats();
    initialized(|st| {
        let h = pvar_handle(st, session, handle)?;
        Ok(h.value(PVARS[h.var].source.read(&stats)))
    })
}

/// MPI_T_pvar_write, reset (`MPI_T_PVAR_ALL_HANDLES` allowed) and readreset: every variable
/// is read-only, and none atomic.
pub fn pvar_write(session: usize, handles: Handles, what: &str) -> MpiResult {
    initialized(|st| {
        check_session(st, session)?;
        match handles {
            Handles::One(h) => {
                let h = pvar_handle(st, session, h)?;
                err(MPI_T_ERR_PVAR_NO_WRITE, format!("{} is read-only (no {what})", PVARS[h.var].name))
            }
            // Reset of all handles applies to those that can be reset: none.
            Handles::All => Ok(()),
        }
    })
}

pub fn pvar_readreset(session: usize, handle: usize) -> MpiResult {
    initialized(|st| {
        let h = pvar_handle(st, session, handle)?;
        err(MPI_T_ERR_PVAR_NO_ATOMIC, format!("{} cannot be read and reset atomically", PVARS[h.var].name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_has_one_category_and_unique_names() {
        let mut seen = std::collections::BTreeSet::new();
        for t in TUNABLES {
            assert!(seen.insert(t.name), "{}", t.name);
            assert!(cvar_category(t) < CATEGORIES.len() && cvar_category(t) != TOP);
        }
        for p in PVARS {
            assert!(pvar_index(p.name, p.class).is_some());
        }
        let covered: usize = (0..CATEGORIES.len()).map(|c| category_cvars(c).len()).sum();
        assert_eq!(covered, TUNABLES.len());
        assert_eq!(tunable_category("OXMPI_NET_RAILS"), NET);
        assert_eq!(tunable_category("OXMPI_COLL_SHM"), COLL);
        assert_eq!(tunable_category("OXMPI_EAGER_LIMIT"), P2P);
        assert_eq!(tunable_category("OXMPI_CMA_SPLIT"), SHM);
    }

    #[test]
    fn types_follow_the_kinds() {
        let t = |n: &str| &TUNABLES[cvar_index(n).unwrap()];
        assert_eq!(cvar_type(t(config::CMA)), ValueType::Int);
        assert_eq!(cvar_type(t(config::EAGER_LIMIT)), ValueType::UnsignedLongLong);
        assert_eq!(cvar_type(t(config::SHM_SLOTS)), ValueType::Char);
        assert_eq!(cvar_type(t(config::LOG)), ValueType::Char);
        assert_eq!(cvar_type(t(config::RANK_SESSIONS)), ValueType::Char);
    }

    /// The whole life of MPI_T without a runtime: the counts are those kept at the last
    /// tear-down. (The only test that touches the global state.)
    #[test]
    fn sessions_and_handles() {
        let class = |e: MpiError| e.code;
        assert_eq!(session_create().map_err(class), Err(MPI_T_ERR_NOT_INITIALIZED));
        assert_eq!(init(MPI_THREAD_FUNNELED), Ok(MPI_THREAD_FUNNELED));
        assert_eq!(init(99), Ok(MPI_THREAD_MULTIPLE));
        finalize().unwrap();
        let mut stats = Stats::default();
        stats.sent.add(Route::Shm, 10);
        keep_final_stats(stats);
        let s = session_create().unwrap();
        let sent = pvar_index("shm_messages_sent", MPI_T_PVAR_CLASS_COUNTER).unwrap() as c_int;
        let (h, count) = pvar_handle_alloc(s, sent).unwrap();
        assert_eq!(count, 1);
        assert_eq!(pvar_read(s, h), Ok(0), "stopped");
        pvar_start_stop(s, Handles::All, true).unwrap();
        stats.sent.add(Route::Shm, 10);
        keep_final_stats(stats);
        assert_eq!(pvar_read(s, h), Ok(1));
        pvar_start_stop(s, Handles::One(h), false).unwrap();
        stats.sent.add(Route::Shm, 10);
        keep_final_stats(stats);
        assert_eq!(pvar_read(s, h), Ok(1), "stopped again");
        let level = pvar_index("unexpected_recvq_length", MPI_T_PVAR_CLASS_LEVEL).unwrap() as c_int;
        let (q, _) = pvar_handle_alloc(s, level).unwrap();
        assert_eq!(pvar_start_stop(s, Handles::One(q), true).map_err(class), Err(MPI_T_ERR_PVAR_NO_STARTSTOP));
        assert_eq!(pvar_write(s, Handles::One(h), "reset").map_err(class), Err(MPI_T_ERR_PVAR_NO_WRITE));
        assert_eq!(pvar_readreset(s, h).map_err(class), Err(MPI_T_ERR_PVAR_NO_ATOMIC));
        let other = session_create().unwrap();
        assert_eq!(pvar_read(other, h).map_err(class), Err(MPI_T_ERR_INVALID_HANDLE));
        session_free(s).unwrap();
        assert_eq!(pvar_read(s, h).map_err(class), Err(MPI_T_ERR_INVALID_SESSION));
        assert_eq!(pvar_handle_alloc(other, 1000).map_err(class), Err(MPI_T_ERR_INVALID_INDEX));
        let (c, _) = cvar_handle_alloc(cvar_index(config::CMA).unwrap() as c_int).unwrap();
        assert_eq!(cvar_write(c).map_err(class), Err(MPI_T_ERR_CVAR_SET_NEVER));
        finalize().unwrap();
        assert_eq!(cvar_read(c).map_err(class), Err(MPI_T_ERR_NOT_INITIALIZED));
        init(MPI_THREAD_SINGLE).unwrap();
        assert_eq!(cvar_read(c).map_err(class), Err(MPI_T_ERR_INVALID_HANDLE), "freed by the last finalize");
        finalize().unwrap();
        *LAST_STATS.lock().unwrap() = None;
    }

    #[test]
    fn non_continuous_handles_count_only_while_started() {
        let mut h = PvarHandle { session: 1, var: 0, started: false, accumulated: 0, base: 0 };
        assert_eq!(h.value(10), 0);
        h.started = true;
        h.base = 10;
        assert_eq!(h.value(15), 5);
        h.accumulated = 5;
        h.started = false;
        assert_eq!(h.value(99), 5);
    }
}

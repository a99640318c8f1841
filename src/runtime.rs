//! Process-wide MPI state: initialisation and finalisation, the world, and job abort.
//!
//! All state lives in one `Runtime` reached through `with`. MPI calls into the library are
//! serialized (the thread levels offered are at most MPI_THREAD_SERIALIZED), which is the
//! invariant that makes the unsynchronised cell below sound; `with` also refuses re-entry.
//!
//! The runtime (process manager connection, transports, engine) has several users: the world
//! model (MPI_Init .. MPI_Finalize) and every MPI-4 session (MPI_Session_init ..
//! MPI_Session_finalize). The first of them brings it up and the last one tears it down; it
//! is not brought up again after that (the process manager connection is closed for good),
//! as in MPICH. `initialized`/`finalized` describe the world model only.

use crate::abi::consts::*;
use crate::comm::Comms;
use crate::error::{MpiError, MpiResult, err};
use crate::p2p::Engine;
use crate::pmi::Pmi;
use crate::transport::shm::{self, Geometry, Segment};
use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::thread::ThreadId;

pub struct Runtime {
    pub pmi: Pmi,
    pub engine: Engine,
    pub comms: Comms,
    pub thread_level: c_int,
    pub main_thread: ThreadId,
}

struct Global {
    state: UnsafeCell<Option<Runtime>>,
    busy: AtomicBool,
}

// SAFETY: MPI calls are serialized by the caller (thread level <= SERIALIZED), so at most one
// thread is inside `with` at a time; `busy` catches re-entry from the same thread.
unsafe impl Sync for Global {}

static GLOBAL: Global = Global { state: UnsafeCell::new(None), busy: AtomicBool::new(false) };
static INITIALIZED: AtomicBool = AtomicBool::new(false);
static FINALIZED: AtomicBool = AtomicBool::new(false);
/// Sessions initialised and not finalised yet.
static SESSIONS: AtomicUsize = AtomicUsize::new(0);
/// The runtime was torn down by its last user.
static TORN_DOWN: AtomicBool = AtomicBool::new(false);
static WORLD_RANK: AtomicI32 = AtomicI32::new(-1);
static LOGGER: OnceLock<()> = OnceLock::new();

/// Runs `f` on the initialised runtime; MPI_ERR_OTHER before MPI_Init or after MPI_Finalize.
pub fn with<R>(f: impl FnOnce(&mut Runtime) -> MpiResult<R>) -> MpiResult<R> {
    if GLOBAL.busy.load(Ordering::Relaxed) {
        panic!("oxmpi entered recursively (an MPI call from inside the library)");
    }
    GLOBAL.busy.store(true, Ordering::Relaxed);
    struct Release;
    impl Drop for Release {
        fn drop(&mut self) {
            GLOBAL.busy.store(false, Ordering::Relaxed);
        }
    }
    let _release = Release;
    // SAFETY: see `Global`: one thread at a time, no re-entry (checked above), and the
    // reference does not outlive this call.
    let state = unsafe { &mut *GLOBAL.state.get() };
    match state.as_mut() {
        Some(rt) => {
            let out = f(rt);
            // Communicators of MPI_Comm_idup whose request completed in this call become
            // usable before the program sees the completion.
            rt.comms.settle();
            out
        }
        None if TORN_DOWN.load(Ordering::Relaxed) => err(MPI_ERR_OTHER, "MPI has already been finalized"),
        None => err(MPI_ERR_OTHER, "MPI has not been initialized (call MPI_Init first)"),
    }
}

pub fn initialized() -> bool {
    INITIALIZED.load(Ordering::Relaxed)
}

pub fn finalized() -> bool {
    FINALIZED.load(Ordering::Relaxed)
}

/// This process's rank in MPI_COMM_WORLD, once MPI is initialised.
pub fn world_rank() -> Option<c_int> {
    let r = WORLD_RANK.load(Ordering::Relaxed);
    (r >= 0).then_some(r)
}

fn init_logger(rank: usize) {
    LOGGER.get_or_init(|| {
        let env = env_logger::Env::new().filter(crate::config::LOG);
        let _ = env_logger::Builder::from_env(env)
            .format(move |buf, record| {
                use std::io::Write;
                writeln!(buf, "[oxmpi rank {rank}] {}: {}", record.level(), record.args())
            })
            .try_init();
    });
}

fn pmi_error(what: &str, e: std::io::Error) -> MpiError {
    MpiError::new(MPI_ERR_OTHER, format!("process manager: {what}: {e}"))
}

/// MPI_Init / MPI_Init_thread: starts the world model (and the runtime unless a session
/// already did).
pub fn init(required: c_int) -> MpiResult<c_int> {
    if initialized() {
        return err(MPI_ERR_OTHER, "MPI is already initialized");
    }
    if finalized() {
        return err(MPI_ERR_OTHER, "MPI cannot be initialized again after MPI_Finalize");
    }
    let provided = bring_up(required)?;
    INITIALIZED.store(true, Ordering::Relaxed);
    Ok(provided)
}

/// MPI_Session_init's share: one more session keeps the runtime up (brought up here if it is
/// the first user). Returns the thread level provided.
pub fn session_init(required: c_int) -> MpiResult<c_int> {
    let provided = bring_up(required)?;
    SESSIONS.fetch_add(1, Ordering::Relaxed);
    Ok(provided)
}

/// The thread level provided for `required`: at most MPI_THREAD_SERIALIZED.
fn provided_level(required: c_int) -> c_int {
    required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_SERIALIZED)
}

/// Brings the runtime up if no user has yet: connects to the process manager and builds the
/// transports. Returns the thread level provided to this caller.
fn bring_up(required: c_int) -> MpiResult<c_int> {
    let provided = provided_level(required);
    // SAFETY: callers are serialized (see `Global`) and no `with` is running here.
    if let Some(rt) = unsafe { (*GLOBAL.state.get()).as_mut() } {
        rt.thread_level = rt.thread_level.max(provided);
        return Ok(provided);
    }
    if TORN_DOWN.load(Ordering::Relaxed) {
        return err(MPI_ERR_OTHER, "MPI cannot be initialized again after its last user finalized it");
    }
    let mut pmi = Pmi::init().map_err(|e| pmi_error("cannot connect", e))?;
    let (rank, size) = (pmi.rank(), pmi.size());
    init_logger(rank);
    let seg = if size > 1 { Some(attach_node_segment(&mut pmi)?) } else { None };
    let mut engine = Engine::new(rank, size, seg);
    engine.probe_cma();
    log::debug!("initialized: {size} ranks, single-copy from {} peers", engine.cma_enabled_peers());
    let rt = Runtime {
        pmi,
        engine,
        comms: Comms::new(rank, size),
        thread_level: provided,
        main_thread: std::thread::current().id(),
    };
    // SAFETY: not initialised yet, so no other reference to the state exists; callers are
    // serialized (see `Global`).
    unsafe { *GLOBAL.state.get() = Some(rt) };
    WORLD_RANK.store(rank as i32, Ordering::Relaxed);
    Ok(provided)
}

/// Creates (node rank 0) or opens the node's shared segment; it is unlinked as soon as
/// every rank has mapped it, so no file outlives the job.
fn attach_node_segment(pmi: &mut Pmi) -> MpiResult<Segment> {
    let (rank, size) = (pmi.rank(), pmi.size());
    let nodes = pmi.node_ids().map_err(|e| pmi_error("process mapping", e))?;
    if nodes.iter().any(|&n| n != nodes[0]) {
        return err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            "ranks on several nodes need the TCP transport, which is not implemented yet in oxmpi",
        );
    }
    let geo = Geometry::for_ranks(size);
    crate::coll::hier::set_job_prefix(crate::pmi::shm_prefix(pmi.kvsname()));
    let path = format!("/dev/shm/{}p2p", crate::pmi::shm_prefix(pmi.kvsname()));
    if rank == 0 {
        Segment::create(&path, geo)?;
    }
    pmi.fence().map_err(|e| pmi_error("fence", e))?;
    let mut seg = Segment::attach(&path, geo, rank, Engine::cma_probe_addr())?;
    shm::allow_peer_reads();
    pmi.fence().map_err(|e| pmi_error("fence", e))?;
    if rank == 0 {
        let _ = std::fs::remove_file(&path);
    }
    seg.verify()?;
    Ok(seg)
}

/// MPI_Finalize: ends the world model; the runtime goes too unless a session still uses it.
pub fn finalize() -> MpiResult<()> {
    with(|_| Ok(()))?;
    if finalized() {
        return err(MPI_ERR_OTHER, "MPI has already been finalized");
    }
    if !initialized() {
        return err(MPI_ERR_OTHER, "MPI_Finalize called without MPI_Init (only sessions are active)");
    }
    if SESSIONS.load(Ordering::Relaxed) == 0 {
        tear_down()?;
    }
    FINALIZED.store(true, Ordering::Relaxed);
    Ok(())
}

/// MPI_Session_finalize's share: one session fewer; the last user tears the runtime down.
pub fn session_finalize() -> MpiResult<()> {
    with(|_| Ok(()))?;
    let left = SESSIONS.fetch_sub(1, Ordering::Relaxed) - 1;
    let world_active = initialized() && !finalized();
    if left == 0 && !world_active {
        tear_down()?;
    }
    Ok(())
}

/// Completes queued traffic, synchronises with every rank, and releases the transports.
fn tear_down() -> MpiResult<()> {
    with(|rt| {
        rt.engine.wait_until(|e| e.quiet());
        rt.pmi.fence().map_err(|e| pmi_error("fence", e))?;
        rt.pmi.finalize().map_err(|e| pmi_error("finalize", e))
    })?;
    // SAFETY: `with` returned, so no reference into the state is live; callers are serialized.
    unsafe { *GLOBAL.state.get() = None };
    TORN_DOWN.store(true, Ordering::Relaxed);
    Ok(())
}

/// Ends the whole job: tells the process manager, then exits with `code`.
pub fn abort_job(code: c_int, msg: &str) -> ! {
    // The process manager kills this process on abort: flush the program's C stdio first so
    // what it printed before the error is not lost.
    // SAFETY: fflush(NULL) flushes every open output stream; no pointers of ours involved.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    if !GLOBAL.busy.load(Ordering::Relaxed) {
        // SAFETY: not inside `with` (checked), and callers are serialized.
        if let Some(rt) = unsafe { (*GLOBAL.state.get()).as_mut() } {
            rt.pmi.abort(code, msg);
        }
    }
    eprintln!("{msg}");
    std::process::exit(if code == 0 { 1 } else { code & 0xff })
}

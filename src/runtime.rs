//! Process-wide MPI state: initialisation and finalisation, the world, and job abort.
//!
//! All state lives in one `Runtime` reached through `with`, which gives one thread at a time
//! `&mut Runtime` for the length of a closure. How that exclusion is ensured is chosen when
//! the runtime comes up (or a session asks for more), never per call:
//!
//! - Below MPI_THREAD_MULTIPLE the program serializes its MPI calls (MPI's rule for SINGLE,
//!   FUNNELED and SERIALIZED), so `with` takes no lock: a flag only catches re-entry (an MPI
//!   call from inside the library, e.g. from a user callback run under `with`).
//! - At MPI_THREAD_MULTIPLE `with` takes a mutex (uncontended: one atomic swap each way), and
//!   a per-thread flag catches re-entry, which would otherwise self-deadlock. Once on, the
//!   lock stays on for the life of the process (threads may be inside the library).
//!
//! Blocking calls must not hold the lock while they wait, or a thread waiting for a message
//! would stop the thread that sends what the peer waits for. So they are written as
//! `blocking(start, done, finish)`: below MULTIPLE that is one `with` around the engine's wait
//! loop, exactly the former code path; at MULTIPLE each poll takes the lock, drives progress,
//! checks `done`, and releases it before backing off. Blocking collectives and communicator
//! constructors run as their nonblocking forms (a schedule, an agreement) polled the same
//! way, so threads running collectives on different communicators in different orders do
//! not deadlock. What still runs its whole wait under the lock at MULTIPLE: split and
//! create over intercommunicators, the topology constructors and MPI_Finalize (see
//! `Engine::wait_until`'s callers). User callbacks run from inside `with` (reduction
//! operators, generalized-request query/free/cancel) must not call MPI, as before;
//! attribute copy/delete callbacks and error handlers run outside it.
//!
//! `Runtime` holds `Rc`s and `RefCell`s (the context pool, a communicator's sequence
//! counters): they are only touched by the thread inside `with`, and values holding such
//! `Rc`s that live across polls (an agreement in flight) are moved between `with` calls but
//! only used and dropped inside them.
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
use crate::transport::net::Net;
use crate::transport::shared_file::SharedFile;
use crate::transport::shm::{self, Geometry, Segment};
use std::cell::{Cell, UnsafeCell};
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::ThreadId;

pub struct Runtime {
    /// The process manager, behind a lock of its own: the roots of MPI_Comm_spawn and
    /// MPI_Comm_accept/connect wait on it with the library released.
    pub pmi: Arc<Mutex<Pmi>>,
    pub engine: Engine,
    pub comms: Comms,
    pub thread_level: c_int,
    pub main_thread: ThreadId,
    /// MPI_UNIVERSE_SIZE as the process manager gives it (`None`: it gives none).
    pub universe_size: Option<usize>,
}

impl Runtime {
    /// The process manager (its own lock, taken under the library's).
    pub fn pmi(&self) -> MutexGuard<'_, Pmi> {
        lock_pmi(&self.pmi)
    }
}

/// Takes the process manager's lock (a panic while it was held leaves it usable).
pub fn lock_pmi(pmi: &Mutex<Pmi>) -> MutexGuard<'_, Pmi> {
    pmi.lock().unwrap_or_else(|p| p.into_inner())
}

struct Global {
    state: UnsafeCell<Option<Runtime>>,
    /// Below MULTIPLE: a thread is inside `with`.
    busy: AtomicBool,
    /// At MULTIPLE: held by the thread inside `with`.
    lock: Mutex<()>,
}

// SAFETY: at most one thread is inside `with` at a time: below MPI_THREAD_MULTIPLE because
// the program serializes its MPI calls (MPI's rule at those levels), at MULTIPLE because
// `with` holds `lock`. `busy` / `IN_LIBRARY` catch re-entry from the same thread.
unsafe impl Sync for Global {}

static GLOBAL: Global = Global { state: UnsafeCell::new(None), busy: AtomicBool::new(false), lock: Mutex::new(()) };
/// The runtime provides MPI_THREAD_MULTIPLE: blocking waits release the lock between polls
/// (set before any concurrent use, never cleared; implies `LOCKING`).
static MULTIPLE: AtomicBool = AtomicBool::new(false);
/// `with` locks: at MPI_THREAD_MULTIPLE, or beside the progress thread (set before any
/// concurrent use, never cleared).
static LOCKING: AtomicBool = AtomicBool::new(false);
/// Blocking collectives run as schedules (`collectives_as_schedules`).
static COLL_SCHEDULES: AtomicBool = AtomicBool::new(false);
/// Serializes bringing the runtime up and tearing it down (sessions may start and end on
/// several threads at once at MULTIPLE).
static LIFECYCLE: Mutex<()> = Mutex::new(());

/// Threads of this process asleep on its doorbell outside the lock (MULTIPLE only): the
/// thread leaving `with` rings it for them, since it may have completed what they wait for.
static SLEEPERS: AtomicUsize = AtomicUsize::new(0);

/// The progress thread (`OXMPI_ASYNC_PROGRESS`), while the runtime is up.
static PROGRESS_THREAD: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);
/// Asks the progress thread to end (tear-down).
static PROGRESS_STOP: AtomicBool = AtomicBool::new(false);
/// Entries into the library while `with` locks (`LOCKING`): the progress thread stands
/// back while the program's threads enter, since they drive progress themselves.
static ENTRIES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread is inside `with` (MULTIPLE only).
    static IN_LIBRARY: Cell<bool> = const { Cell::new(false) };
    /// The current `with` of this thread changed nothing another thread could wait for (an
    /// idle poll of `blocking`): leaving it rings for no sleeper. Ringing there would wake
    /// the poller's own announced sleep (and its sleeping siblings) at once, so no waiting
    /// thread ever slept: they spun through membarrier and futex calls, 100x slower.
    static IDLE_POLL: Cell<bool> = const { Cell::new(false) };
}
static INITIALIZED: AtomicBool = AtomicBool::new(false);
static FINALIZED: AtomicBool = AtomicBool::new(false);
/// Sessions initialised and not finalised yet.
static SESSIONS: AtomicUsize = AtomicUsize::new(0);
/// The runtime was torn down by its last user.
static TORN_DOWN: AtomicBool = AtomicBool::new(false);
static WORLD_RANK: AtomicI32 = AtomicI32::new(-1);
static LOGGER: OnceLock<()> = OnceLock::new();
/// The process manager's connection of a bring-up that failed, through which the error that
/// follows aborts the job.
static FAILED_INIT_PMI: Mutex<Option<Pmi>> = Mutex::new(None);

/// Runs `f` on the initialised runtime; MPI_ERR_OTHER before MPI_Init or after MPI_Finalize.
pub fn with<R>(f: impl FnOnce(&mut Runtime) -> MpiResult<R>) -> MpiResult<R> {
    if LOCKING.load(Ordering::Relaxed) {
        return with_locked(f);
    }
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
    run_on_state(unsafe { &mut *GLOBAL.state.get() }, false, f)
}

/// `with` when it locks (`LOCKING`): the same under the lock.
#[inline(never)]
fn with_locked<R>(f: impl FnOnce(&mut Runtime) -> MpiResult<R>) -> MpiResult<R> {
    if IN_LIBRARY.get() {
        panic!("oxmpi entered recursively (an MPI call from inside the library)");
    }
    let _guard = lock();
    ENTRIES.fetch_add(1, Ordering::Relaxed);
    IN_LIBRARY.set(true);
    struct Release;
    impl Drop for Release {
        fn drop(&mut self) {
            IN_LIBRARY.set(false);
        }
    }
    let _release = Release;
    // SAFETY: `lock` is held, so no other thread is inside `with`; this thread is not
    // either (checked); the reference does not outlive this call.
    run_on_state(unsafe { &mut *GLOBAL.state.get() }, true, f)
}

/// The library lock. A panic inside the library (reported as an error at the C boundary)
/// poisons it; later calls go on, as below MULTIPLE, where nothing records the panic.
fn lock() -> MutexGuard<'static, ()> {
    GLOBAL.lock.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` on the runtime in `state`; with `wake`, rings for this process's sleeping
/// threads afterwards (MULTIPLE, see `SLEEPERS`).
fn run_on_state<R>(
    state: &mut Option<Runtime>,
    wake: bool,
    f: impl FnOnce(&mut Runtime) -> MpiResult<R>,
) -> MpiResult<R> {
    match state.as_mut() {
        Some(rt) => {
            let out = f(rt);
            // Communicators of MPI_Comm_idup whose request completed in this call become
            // usable before the program sees the completion.
            rt.comms.settle();
            if wake && !IDLE_POLL.replace(false) && SLEEPERS.load(Ordering::Relaxed) > 0 {
                rt.engine.wake_own_sleepers();
            }
            out
        }
        None if TORN_DOWN.load(Ordering::Relaxed) => err(MPI_ERR_OTHER, "MPI has already been finalized"),
        None => err(MPI_ERR_OTHER, "MPI has not been initialized (call MPI_Init first)"),
    }
}

/// Whether the runtime provides MPI_THREAD_MULTIPLE (`with` locks, waits release the lock).
pub fn multiple() -> bool {
    MULTIPLE.load(Ordering::Relaxed)
}

/// Whether blocking collectives run as their nonblocking schedules (`abi::coll::in_mode`):
/// when some rank of the job started at MPI_THREAD_MULTIPLE, on every rank. The schedules'
/// messages differ from the blocking algorithms' (other tags, no shared-memory area, no
/// pieces), so ranks must choose alike even when their thread levels differ, which MPI
/// allows. Decided at start-up from what every rank recorded in the node's segment; a level
/// raised later (a session asking for more) does not change it.
pub fn collectives_as_schedules() -> bool {
    COLL_SCHEDULES.load(Ordering::Relaxed)
}

/// A blocking call: `start` begins it, then it waits until `done` holds, then `finish` gives
/// the result, or `None` to wait again (a probed message another thread took meanwhile).
///
/// Below MPI_THREAD_MULTIPLE this is one `with` around `Engine::wait_until`. At MULTIPLE
/// every poll takes the lock, drives progress, checks `done` and calls `finish`, and the
/// thread backs off with the lock released, so other threads' calls go through meanwhile.
/// The state `W` lives across polls but is only used (and dropped) under the lock.
pub fn blocking<W, R>(
    start: impl FnOnce(&mut Runtime) -> MpiResult<W>,
    mut done: impl FnMut(&Engine, &W) -> bool,
    mut finish: impl FnMut(&mut Runtime, &mut W) -> MpiResult<Option<R>>,
) -> MpiResult<R> {
    if !multiple() {
        return with(|rt| {
            let mut w = start(rt)?;
            loop {
                rt.engine.wait_until(|e| done(e, &w));
                if let Some(r) = finish(rt, &mut w)? {
                    return Ok(r);
                }
            }
        });
    }
    let mut start = Some(start);
    let mut parked: Option<W> = None;
    let mut backoff = Backoff::default();
    let mut ticket = None;
    loop {
        let out = with(|rt| {
            let (mut w, started) = match parked.take() {
                Some(w) => (w, false),
                None => ((start.take().expect("started once"))(rt)?, true),
            };
            if !done(&rt.engine, &w) {
                let progressed = rt.engine.progress();
                if progressed {
                    backoff.reset();
                }
                if !done(&rt.engine, &w) {
                    IDLE_POLL.set(!started && !progressed);
                    parked = Some(w);
                    // As `Engine::wait_until` does before it spins (the first pauses).
                    backoff.cpu_shared = !backoff.past_spins() && rt.engine.cpu_shared_with_rank();
                    if backoff.sleepy() {
                        ticket = rt.engine.announce_sleep();
                        if ticket.is_some() {
                            SLEEPERS.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    return Ok(None);
                }
            }
            let r = finish(rt, &mut w)?;
            if r.is_none() {
                parked = Some(w);
            }
            Ok(r)
        })?;
        if let Some(r) = out {
            return Ok(r);
        }
        match ticket.take() {
            Some(t) => {
                // SAFETY: the segment stays mapped until the runtime is torn down, which
                // MPI_Finalize does only once no thread is in an MPI call. The timeout only
                // bounds a missed ring.
                unsafe { t.sleep(std::time::Duration::from_millis(20)) };
                SLEEPERS.fetch_sub(1, Ordering::Relaxed);
            }
            None => backoff.snooze(),
        }
    }
}

/// How a thread waiting at MPI_THREAD_MULTIPLE spends the time between polls, with the lock
/// released: a few spins, then yields, then sleeps on the doorbell (announced under the
/// lock, see `Engine::announce_sleep`), which peers ring when they send to this rank and
/// this rank's threads when they leave the library; without one (a job of one), short sleeps.
#[derive(Default)]
struct Backoff {
    idle_polls: u32,
    /// The next pause would spin, but another rank runs on this CPU (or ranks hand the CPU
    /// around): yield instead (`Engine::cpu_shared_with_rank`).
    cpu_shared: bool,
}

const BACKOFF_SPINS: u32 = 4;
const BACKOFF_YIELDS: u32 = 32;

impl Backoff {
    fn reset(&mut self) {
        self.idle_polls = 0;
    }

    /// Whether the spinning pauses are over.
    fn past_spins(&self) -> bool {
        self.idle_polls >= BACKOFF_SPINS
    }

    /// Whether the next pause should be a sleep.
    fn sleepy(&self) -> bool {
        self.idle_polls >= BACKOFF_SPINS + BACKOFF_YIELDS
    }

    fn snooze(&mut self) {
        self.idle_polls = self.idle_polls.saturating_add(1);
        if self.idle_polls <= BACKOFF_SPINS && self.cpu_shared {
            std::thread::yield_now();
        } else if self.idle_polls <= BACKOFF_SPINS {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        } else if self.idle_polls <= BACKOFF_SPINS + BACKOFF_YIELDS {
            std::thread::yield_now();
        } else {
            let exp = (self.idle_polls - BACKOFF_SPINS - BACKOFF_YIELDS).min(4);
            std::thread::sleep(std::time::Duration::from_micros(8 << exp));
        }
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
    let _lifecycle = lifecycle();
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
    let _lifecycle = lifecycle();
    let provided = bring_up(required)?;
    SESSIONS.fetch_add(1, Ordering::Relaxed);
    Ok(provided)
}

/// The thread level provided for `required`: the level asked for (every level is offered).
fn provided_level(required: c_int) -> c_int {
    required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE)
}

/// Turns the lock on when `level` is MULTIPLE. Called with no thread inside `with` (the
/// runtime is not up yet, or the program is still serialized at its former level).
fn enable_level(level: c_int) {
    if level == MPI_THREAD_MULTIPLE {
        LOCKING.store(true, Ordering::SeqCst);
        MULTIPLE.store(true, Ordering::SeqCst);
    }
}

/// `f` on the state itself, outside `with` (bring-up and tear-down), under the lock at
/// MULTIPLE; the caller holds `lifecycle()`.
fn with_state<R>(f: impl FnOnce(&mut Option<Runtime>) -> R) -> R {
    let _guard = LOCKING.load(Ordering::Relaxed).then(lock);
    // SAFETY: at MULTIPLE the lock is held; below it the program is serialized and no
    // `with` is running on this thread (bring-up and tear-down are not called from one).
    f(unsafe { &mut *GLOBAL.state.get() })
}

/// Held while users come and go (bring-up, tear-down, the user counts).
fn lifecycle() -> MutexGuard<'static, ()> {
    LIFECYCLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Brings the runtime up if no user has yet: connects to the process manager and builds the
/// transports. Returns the thread level provided to this caller.
fn bring_up(required: c_int) -> MpiResult<c_int> {
    let provided = provided_level(required);
    let up = with_state(|state| {
        state.as_mut().map(|rt| {
            rt.thread_level = rt.thread_level.max(provided);
            rt.thread_level
        })
    });
    if let Some(level) = up {
        enable_level(level);
        // The level in force, which is at least the one asked for (as MPICH reports it: a
        // session started without a level inside an MPI_THREAD_MULTIPLE program has it).
        return Ok(level);
    }
    if TORN_DOWN.load(Ordering::Relaxed) {
        return err(MPI_ERR_OTHER, "MPI cannot be initialized again after its last user finalized it");
    }
    crate::config::check_environment().map_err(|e| MpiError::new(MPI_ERR_OTHER, e))?;
    let mut pmi = Pmi::init().map_err(|e| pmi_error("cannot connect", e))?;
    let (rank, size) = (pmi.rank(), pmi.size());
    init_logger(rank);
    log::debug!("process manager: {:?}, rank {rank} of {size}", pmi.version());
    let (engine, comms, universe_size) = match connect_job(&mut pmi, provided) {
        Ok(parts) => parts,
        Err(e) => {
            // Kept open until the error is reported: a launcher that sees the connection
            // close kills the job at once (Hydra: SIGKILL), before the rank can say why.
            *FAILED_INIT_PMI.lock().unwrap_or_else(|p| p.into_inner()) = Some(pmi);
            return Err(e);
        }
    };
    let rt = Runtime {
        pmi: Arc::new(Mutex::new(pmi)),
        engine,
        comms,
        thread_level: provided,
        main_thread: std::thread::current().id(),
        universe_size,
    };
    enable_level(provided);
    let progress_thread = std::env::var(crate::config::ASYNC_PROGRESS).is_ok_and(|v| v.trim() == "1");
    if progress_thread {
        // The progress thread enters the library beside the program: `with` must lock.
        // Blocking waits below MPI_THREAD_MULTIPLE still hold the lock while they wait
        // (they progress themselves; the progress thread blocks on the lock meanwhile).
        LOCKING.store(true, Ordering::SeqCst);
    }
    with_state(|state| *state = Some(rt));
    WORLD_RANK.store(rank as i32, Ordering::Relaxed);
    if progress_thread {
        start_progress_thread()?;
    }
    Ok(provided)
}

/// The job's side of bring-up, once connected to the process manager: the transports to
/// every peer, the engine over them, the communicators (with the parent job's, if spawned),
/// and the universe size.
fn connect_job(pmi: &mut Pmi, provided: c_int) -> MpiResult<(Engine, Comms, Option<usize>)> {
    let (rank, size) = (pmi.rank(), pmi.size());
    let multiple = provided == MPI_THREAD_MULTIPLE;
    // A spawned process connects to its parents over the network, even alone on its node.
    let routes = if size > 1 || pmi.spawned() {
        connect_transports(pmi, multiple)?
    } else {
        Transports { seg: None, net: None, nodes: vec![0], any_multiple: multiple, any_oversubscribed: false }
    };
    // Decided once for the job, the same on every rank (see `collectives_as_schedules`).
    COLL_SCHEDULES.store(routes.any_multiple, Ordering::Relaxed);
    let mut engine = Engine::spanning(rank, size, routes.seg, routes.net, routes.nodes, routes.any_oversubscribed);
    engine.probe_cma();
    if log::log_enabled!(log::Level::Debug)
        && let Some(summary) = engine.node_summary()
    {
        // Decisions every rank must take alike (a C test checks them under per-rank binding).
        log::debug!("initialized: {summary}");
    }
    log::debug!("initialized: {size} ranks, single-copy from {} peers", engine.cma_enabled_peers());
    let mut comms = Comms::new(rank, size);
    comms.connect_parent(&mut engine, pmi)?;
    // A process manager that cannot say (an old one) is one that gives no universe size.
    let universe_size = pmi.universe_size().unwrap_or(None);
    Ok((engine, comms, universe_size))
}

/// Starts the thread that drives progress while the program's threads are outside MPI
/// (`OXMPI_ASYNC_PROGRESS`): it serves one-sided requests for windows reached by messages,
/// and advances rendezvous transfers and nonblocking collectives.
fn start_progress_thread() -> MpiResult<()> {
    PROGRESS_STOP.store(false, Ordering::Relaxed);
    let handle = std::thread::Builder::new()
        .name("oxmpi-progress".into())
        .spawn(progress_loop)
        .map_err(|e| MpiError::new(MPI_ERR_OTHER, format!("cannot start the progress thread: {e}")))?;
    *PROGRESS_THREAD.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
    Ok(())
}

/// Ends the progress thread, if there is one, before the runtime goes down (its sleeps use
/// the node's segment). Called outside `with`: the thread needs the lock to notice.
fn stop_progress_thread() {
    let handle = PROGRESS_THREAD.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(handle) = handle {
        PROGRESS_STOP.store(true, Ordering::Relaxed);
        let _ = handle.join();
    }
}

/// The progress thread's loop: polls the engine under the lock; when nothing happens it
/// keeps polling for `PROGRESS_SPIN` (requests come in bursts), then sleeps on the doorbell,
/// which peers ring when they send to this rank, or, with remote peers (which ring none),
/// naps, longer once idle for `PROGRESS_IDLE`. While the program's threads enter the library
/// they progress themselves, so the thread only naps (below MPI_THREAD_MULTIPLE a blocking
/// wait holds the lock throughout, and the thread blocks on it meanwhile).
fn progress_loop() {
    // Naps of a few microseconds, not the default 50 µs of timer slack.
    // SAFETY: PR_SET_TIMERSLACK takes a value and touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let mut last_progress = std::time::Instant::now();
    let mut seen_entries = ENTRIES.load(Ordering::Relaxed);
    while !PROGRESS_STOP.load(Ordering::Relaxed) {
        let entries = ENTRIES.load(Ordering::Relaxed);
        if entries != seen_entries {
            seen_entries = entries;
            std::thread::sleep(PROGRESS_STAND_BACK);
            continue;
        }
        let idle = last_progress.elapsed();
        let mut ticket = None;
        let progressed = with(|rt| {
            let progressed = rt.engine.progress();
            if !progressed {
                // Nothing changed: leaving rings no sleeper (see `IDLE_POLL`).
                IDLE_POLL.set(true);
                if idle >= PROGRESS_SPIN {
                    ticket = rt.engine.announce_sleep();
                }
            }
            Ok(progressed)
        });
        seen_entries = ENTRIES.load(Ordering::Relaxed);
        match (progressed, ticket) {
            (Err(_), _) => return,
            (Ok(true), _) => last_progress = std::time::Instant::now(),
            // Not counted in `SLEEPERS`: the program's threads leaving the library need not
            // wake it, since they progressed themselves.
            // SAFETY: the segment stays mapped until the runtime is torn down, which joins
            // this thread first (`stop_progress_thread`). The timeout bounds a missed ring
            // and the wait for `PROGRESS_STOP`.
            (Ok(false), Some(t)) => unsafe { t.sleep(PROGRESS_SLEEP) },
            (Ok(false), None) if idle < PROGRESS_SPIN => std::hint::spin_loop(),
            (Ok(false), None) if idle < PROGRESS_IDLE => std::thread::sleep(PROGRESS_NAP),
            (Ok(false), None) => std::thread::sleep(PROGRESS_LONG_NAP),
        }
    }
}

/// How long the progress thread keeps polling after the last progress.
const PROGRESS_SPIN: std::time::Duration = std::time::Duration::from_micros(50);
/// How long it naps between polls without a doorbell to sleep on.
const PROGRESS_NAP: std::time::Duration = std::time::Duration::from_micros(20);
/// How long it naps after the program's threads entered the library.
const PROGRESS_STAND_BACK: std::time::Duration = std::time::Duration::from_micros(200);
/// After this long without progress it naps `PROGRESS_LONG_NAP` at a time: polling a network
/// endpoint costs system calls, so a long idle stretch trades the first request's latency
/// for the computing program's CPU.
const PROGRESS_IDLE: std::time::Duration = std::time::Duration::from_millis(10);
const PROGRESS_LONG_NAP: std::time::Duration = std::time::Duration::from_micros(500);
/// The longest sleep of the progress thread on the doorbell.
const PROGRESS_SLEEP: std::time::Duration = std::time::Duration::from_millis(20);

/// What `connect_transports` builds and finds out.
struct Transports {
    /// The node's segment (None when alone on the node).
    seg: Option<Segment>,
    /// The network endpoint (None when the job runs on one node).
    net: Option<Net>,
    /// The node of every rank.
    nodes: Vec<usize>,
    /// Some rank of the job runs at MPI_THREAD_MULTIPLE.
    any_multiple: bool,
    /// Some node's ranks outnumber its cores (the job-wide answer for choices both ends of a
    /// message make alike, `Engine::ranks_outnumber_cores`).
    any_oversubscribed: bool,
}

/// Builds the routes to the other ranks: the node's shared segment when the node holds
/// other ranks of the job, and the network endpoint when the job spans nodes. Returns them
/// with the node of every rank.
///
/// Every rank takes part in the same two process-manager fences, whatever its node: the
/// node's first rank creates the segment's file (`SharedFile`) and publishes its name, and
/// every rank publishes its network address, before the first; ranks map the segment and
/// connect to their remote peers between the two; the file is released (closed, or
/// unlinked) after the second, once every rank of the node has mapped it, so no file
/// outlives the job. A job that spans nodes takes a third fence, after
/// which every rank reads whether each node's ranks outnumber its cores.
/// `multiple`: this rank starts at MPI_THREAD_MULTIPLE (recorded for `collectives_as_schedules`).
fn connect_transports(pmi: &mut Pmi, multiple: bool) -> MpiResult<Transports> {
    let (rank, size) = (pmi.rank(), pmi.size());
    let nodes = pmi.node_ids().map_err(|e| pmi_error("process mapping", e))?;
    let node: Vec<usize> = (0..size).filter(|&r| nodes[r] == nodes[rank]).collect();
    let spans_nodes = node.len() < size;
    let prefix = crate::pmi::shm_prefix(pmi.kvsname());
    crate::coll::hier::set_job_prefix(prefix.clone());
    let geo = Geometry::for_ranks(node.len());
    let shared = node.len() > 1;
    // The node's first rank makes the segment's file and publishes its name. Labelled by
    // node: nodes of one job may share a /dev/shm (several "hosts" on one machine).
    let segment_file = if shared && rank == node[0] {
        let file = SharedFile::create(&format!("p2p-{}", nodes[rank]), geo.total_bytes())?;
        pmi.put(&segment_key(nodes[rank]), file.name()).map_err(|e| pmi_error("publishing the segment", e))?;
        Some(file)
    } else {
        None
    };
    let mut net = None;
    // A spawned job's ranks also publish their addresses for their parents (`comm::spawn`).
    if spans_nodes || pmi.spawned() {
        let endpoint = Net::open(rank, size)?;
        // The address, and this rank's thread level, which ranks of other nodes cannot read
        // in the segment.
        let name: String = endpoint.address()?.iter().map(|b| format!("{b:02x}")).collect();
        let name = format!("{name}:{}", multiple as u8);
        pmi.put(&net_key(rank), &name).map_err(|e| pmi_error("publishing the network address", e))?;
        net = Some(endpoint);
    }
    pmi.fence().map_err(|e| pmi_error("fence", e))?;
    let seg = if shared {
        let path = match &segment_file {
            Some(file) => file.name().to_string(),
            None => pmi
                .get(node[0], &segment_key(nodes[rank]))
                .map_err(|e| pmi_error("reading the segment's name", e))?
                .ok_or_else(|| MpiError::new(MPI_ERR_OTHER, "the node's first rank published no segment"))?,
        };
        let seg = Segment::attach(&path, geo, rank, &node, Engine::cma_probe_addr())?;
        seg.publish_thread_multiple(multiple);
        shm::allow_peer_reads();
        Some(seg)
    } else {
        None
    };
    let mut any_multiple = multiple;
    if let Some(endpoint) = &mut net {
        let mut names = Vec::with_capacity(size - node.len());
        for peer in (0..size).filter(|&r| nodes[r] != nodes[rank]) {
            let value = pmi
                .get(peer, &net_key(peer))
                .map_err(|e| pmi_error("reading a network address", e))?
                .ok_or_else(|| MpiError::new(MPI_ERR_OTHER, format!("rank {peer} published no network address")))?;
            let (hex, level) = value.split_once(':').unwrap_or((&value, "0"));
            any_multiple |= level == "1";
            let name = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .map_err(|_| MpiError::new(MPI_ERR_OTHER, format!("rank {peer}'s network address is garbled")))?;
            names.push((peer, name));
        }
        endpoint.connect(&names)?;
    }
    pmi.fence().map_err(|e| pmi_error("fence", e))?;
    // Every rank of the node has mapped it: the file is not needed any more.
    drop(segment_file);
    let seg = match seg {
        Some(mut seg) => {
            seg.verify()?;
            any_multiple |= seg.any_thread_multiple();
            Some(seg)
        }
        None => None,
    };
    let mut any_oversubscribed = seg.as_ref().is_some_and(Segment::ranks_outnumber_cores);
    if spans_nodes {
        if rank == node[0] {
            pmi.put(&busy_key(rank), if any_oversubscribed { "1" } else { "0" })
                .map_err(|e| pmi_error("publishing the node's load", e))?;
        }
        pmi.fence().map_err(|e| pmi_error("fence", e))?;
        // The first rank of every other node, in one pass over the map.
        let mut firsts = std::collections::BTreeMap::new();
        for (r, &n) in nodes.iter().enumerate() {
            firsts.entry(n).or_insert(r);
        }
        for (_, first) in firsts.into_iter().filter(|&(n, _)| n != nodes[rank]) {
            let busy = pmi.get(first, &busy_key(first)).map_err(|e| pmi_error("reading a node's load", e))?;
            any_oversubscribed |= busy.as_deref() == Some("1");
        }
    }
    Ok(Transports { seg, net, nodes, any_multiple, any_oversubscribed })
}

/// The process manager's key of the name of node `node`'s segment file.
fn segment_key(node: usize) -> String {
    format!("oxmpi-seg-{node}")
}

/// The process manager's key of whether the node whose first rank is `rank` has more ranks
/// than cores.
fn busy_key(rank: usize) -> String {
    format!("oxmpi-busy-{rank}")
}

/// The process manager's key of rank `rank`'s network address.
fn net_key(rank: usize) -> String {
    format!("oxmpi-net-{rank}")
}

/// MPI_Finalize: ends the world model; the runtime goes too unless a session still uses it.
pub fn finalize() -> MpiResult<()> {
    with(|_| Ok(()))?;
    let _lifecycle = lifecycle();
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
    let _lifecycle = lifecycle();
    let left = SESSIONS.fetch_sub(1, Ordering::Relaxed) - 1;
    let world_active = initialized() && !finalized();
    if left == 0 && !world_active {
        tear_down()?;
    }
    Ok(())
}

/// Completes queued traffic, synchronises with every rank, and releases the transports.
///
/// A rank whose own queues are empty may still have to drain its rings: a peer's
/// acknowledgements (of sends freed before finalize) can be queued behind a full ring towards
/// it. So the ranks meet in a barrier that keeps progressing (every rank arrives only once its
/// queues are empty, so nothing more is queued towards a rank once the barrier completes)
/// before the process manager's fence, which blocks without progress.
fn tear_down() -> MpiResult<()> {
    stop_progress_thread();
    with(|rt| {
        rt.engine.wait_until(|e| e.quiet());
        let world = rt.comms.get(MPI_COMM_WORLD)?;
        crate::coll::barrier(&mut crate::coll::Group::new(&mut rt.engine, world))?;
        rt.engine.wait_until(|e| e.quiet());
        crate::tool::keep_final_stats(rt.engine.stats());
        let mut pmi = rt.pmi();
        pmi.fence().map_err(|e| pmi_error("fence", e))?;
        pmi.finalize().map_err(|e| pmi_error("finalize", e))
    })?;
    with_state(|state| *state = None);
    TORN_DOWN.store(true, Ordering::Relaxed);
    Ok(())
}

/// The library lock if it comes free within 100 ms (another thread, the progress thread
/// say, may be inside the library for a moment, or for good).
fn try_lock_briefly() -> Option<MutexGuard<'static, ()>> {
    for _ in 0..1000 {
        match GLOBAL.lock.try_lock() {
            Ok(guard) => return Some(guard),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_micros(100)),
        }
    }
    None
}

/// Aborts the job through the process manager, unless another thread holds it (a spawn or
/// accept waiting there): the launcher then learns of this process's exit.
fn abort_through(pmi: &Mutex<Pmi>, code: c_int, msg: &str) {
    let pmi = match pmi.try_lock() {
        Ok(pmi) => Some(pmi),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    };
    if let Some(mut pmi) = pmi {
        pmi.abort(code, msg);
    }
}

/// Ends the whole job: tells the process manager, then exits with `code`.
pub fn abort_job(code: c_int, msg: &str) -> ! {
    // The process manager kills this process on abort: flush the program's C stdio first so
    // what it printed before the error is not lost.
    // SAFETY: fflush(NULL) flushes every open output stream; no pointers of ours involved.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    if LOCKING.load(Ordering::Relaxed) {
        // Another thread may hold the lock for good (or this one, from a callback): then
        // exit without telling the process manager, which notices the exit anyway.
        if !IN_LIBRARY.get()
            && let Some(_guard) = try_lock_briefly()
            // SAFETY: the lock is held and this thread is not inside `with`.
            && let Some(rt) = unsafe { (*GLOBAL.state.get()).as_mut() }
        {
            abort_through(&rt.pmi, code, msg);
        }
    } else if !GLOBAL.busy.load(Ordering::Relaxed) {
        // SAFETY: not inside `with` (checked), and callers are serialized.
        if let Some(rt) = unsafe { (*GLOBAL.state.get()).as_mut() } {
            abort_through(&rt.pmi, code, msg);
        }
    }
    let failed_init = FAILED_INIT_PMI.try_lock().ok().and_then(|mut pmi| pmi.take());
    if let Some(mut pmi) = failed_init {
        pmi.abort(code, msg);
    }
    // Not through the process manager (before it was reached, or its lock is lost): the
    // launcher learns of the exit.
    crate::pmi::write_last_line(msg);
    std::process::exit(crate::pmi::abort_exit_status(code))
}

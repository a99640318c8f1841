//! C test programs of `ctests/`, compiled with the installed `mpicc` wrapper and run with
//! the installed `mpiexec` at several rank counts; Fortran programs of `ctests/fortran/`
//! (`.f` fixed form, `.f90` free form) likewise with the installed `mpifort`.
//!
//! The install tree is made once per `cargo test` run by `scripts/install.sh --prefix
//! <target>/ctest-prefix --from <target>/<profile>`. Programs are compiled and run one at a
//! time (a global lock), since CI machines have two cores and the runs oversubscribe them.
//!
//! Environment:
//! - `OXMPI_CTEST_MPICC`, `OXMPI_CTEST_MPIEXEC`: use another MPI instead of the built one, to
//!   validate the tests themselves, e.g. `OXMPI_CTEST_MPICC=mpicc.mpich
//!   OXMPI_CTEST_MPIEXEC=mpiexec.mpich cargo test --test ctests`. The launcher value is split
//!   on whitespace, so `OXMPI_CTEST_MPIEXEC="mpirun.openmpi --oversubscribe"` works.
//! - `OXMPI_CTEST_ACROSS_HOSTS=LAUNCHER`: test the oxmpi build with ranks spread over several
//!   hosts by LAUNCHER (split on whitespace, `-n N prog` appended), e.g. MPICH's Hydra over
//!   the namespace hosts of `scripts/hosts.sh` (see `scripts/multinode-tests.sh`). Tests
//!   marked `one-node` are not run then, and say so.
//! - `OXMPI_CTEST_LAUNCHER=LAUNCHER`: test the oxmpi build on this machine under another
//!   process manager (split on whitespace, `-n N prog` appended): MPICH's Hydra speaking PMI-2
//!   (`OXMPI_PMI=2 OXMPI_CTEST_LAUNCHER=mpiexec.hydra`), Slurm's `srun --mpi=pmi2` (see
//!   `scripts/slurm-tests.sh`). Unlike `OXMPI_CTEST_MPIEXEC` every check stays on; tests
//!   whose expectations are about our `mpiexec` need a filter that leaves them out.
//! - `OXMPI_CTEST_FILTER=substring[,substring...]`: run only the C tests whose name contains
//!   one of them.
//! - `OXMPI_CTEST_MPICH_CC`, `OXMPI_CTEST_MPICH_MPIEXEC`: Debian's MPICH compiler and launcher
//!   used by the ABI tests (defaults `mpicc.mpich`, `mpiexec.mpich`).
//! - `OXMPI_CTEST_CFLAGS`: compiler flags (default `-O2 -Wall -Werror -Wno-stringop-overflow`; GCC 12 warns
//!   falsely about `MPI_STATUSES_IGNORE` passed as an array).
//! - `OXMPI_CTEST_TIMEOUT_SCALE`: multiply every timeout (not the `max-wall` limits).
//! - `OXMPI_CTEST_MPIFORT`, `OXMPI_CTEST_FFLAGS`: the Fortran compiler wrapper (default: the
//!   installed `mpifort`, or `mpifort` with an override) and its flags (default `-O2 -Wall`).
//! - `OXMPI_CTEST_MPICH_FC`, `OXMPI_CTEST_MPICH_F90`: Debian's MPICH Fortran compilers for the
//!   ABI tests (`mpif77.mpich`, `mpif90.mpich`).
//!
//! Metadata: a C file declares how it is run in comment lines containing `oxmpi-test:`
//! (a Fortran file in `! oxmpi-test: ...` comment lines),
//! followed by space-separated items (values with spaces in double quotes):
//! - `np=1,2,4,8` rank counts (default `1,2,4,8`);
//! - `singleton` also run the program directly, without a launcher (with no `np=`: only that);
//! - `expect-exit=0|nonzero|N` (default 0); with 0 stdout must contain `No Errors` exactly
//!   once and no ` Found ` (substrings: launchers may interleave lines of different ranks);
//! - `expect-stderr="text"` / `expect-stdout="text"`: case-insensitive substring (repeatable);
//! - `expect-stderr-once="text"`: as `expect-stderr`, and found exactly once (repeatable);
//! - `forbid-stderr="text"`: case-insensitive substring stderr must not contain (repeatable);
//! - `max-wall=SECONDS`: the run must end within this wall time (for fatal-error tests);
//! - `timeout=SECONDS`: kill the run after this long (default 60);
//! - `env=NAME=VALUE`: extra environment for the run (repeatable);
//! - `expect-output="text"`: case-insensitive substring of stdout and stderr together;
//! - `oxmpi-strict=exit,output`: check the exit status / the expected texts only when
//!   testing oxmpi (a reference MPI behaves differently; say which in the file);
//! - `one-node="why"`: the test is about one node (our launcher, node-local decisions, windows
//!   within a node): not run with `OXMPI_CTEST_ACROSS_HOSTS`;
//! - `with=FILE`: another source compiled into the program, relative to the test's directory
//!   (repeatable; e.g. the C half of a mixed-language Fortran test, kept in a subdirectory so
//!   that it is not taken for a test itself).
//!
//! A run expected to fail (exit not 0) must not print a `No Errors` line.

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// The list of C tests: one libtest test per file. `every_ctest_is_listed` fails when a file of
// ctests/ (or ctests/examples/) is missing here.

macro_rules! ctests {
    ($($name:ident => $path:literal),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_ctest(stringify!($name), $path);
            }
        )*
        const LISTED: &[&str] = &[$($path),*];
    };
}

ctests! {
    env_init => "env_init.c",
    env_init_thread => "env_init_thread.c",
    init_signal_handlers => "init_signal_handlers.c",
    env_singleton => "env_singleton.c",
    env_abort => "env_abort.c",
    env_abort_negative => "env_abort_negative.c",
    env_abort_256 => "env_abort_256.c",
    env_bad_tunable => "env_bad_tunable.c",
    env_bad_tunable_ranks => "env_bad_tunable_ranks.c",
    env_bad_slots => "env_bad_slots.c",
    env_alloc_mem => "env_alloc_mem.c",
    comm_basic => "comm_basic.c",
    p2p_types_sizes => "p2p_types_sizes.c",
    p2p_ring => "p2p_ring.c",
    p2p_freed_sends_finalize => "p2p_freed_sends_finalize.c",
    p2p_wildcard => "p2p_wildcard.c",
    p2p_order => "p2p_order.c",
    p2p_eager_paths => "p2p_eager_paths.c",
    p2p_recv_arriving => "p2p_recv_arriving.c",
    p2p_shared_copy => "p2p_shared_copy.c",
    p2p_bound_ranks => "p2p_bound_ranks.c",
    p2p_nonblocking => "p2p_nonblocking.c",
    p2p_null_requests => "p2p_null_requests.c",
    p2p_ssend => "p2p_ssend.c",
    p2p_rsend => "p2p_rsend.c",
    p2p_bsend => "p2p_bsend.c",
    p2p_persistent => "p2p_persistent.c",
    part_basic => "part_basic.c",
    part_errors => "part_errors.c",
    part_early => "part_early.c",
    part_threads => "part_threads.c",
    mpit_vars => "mpit_vars.c",
    p2p_sendrecv => "p2p_sendrecv.c",
    p2p_isendrecv => "p2p_isendrecv.c",
    p2p_probe => "p2p_probe.c",
    p2p_mprobe => "p2p_mprobe.c",
    p2p_net_eager_rdma => "p2p_net_eager_rdma.c",
    p2p_net_eager_rdma_off => "p2p_net_eager_rdma_off.c",
    p2p_net_rendezvous => "p2p_net_rendezvous.c",
    p2p_net_rendezvous_cts => "p2p_net_rendezvous_cts.c",
    p2p_cancel => "p2p_cancel.c",
    p2p_cells => "p2p_cells.c",
    p2p_blocks => "p2p_blocks.c",
    p2p_grequest => "p2p_grequest.c",
    p2p_status => "p2p_status.c",
    p2p_large_count => "p2p_large_count.c",
    type_predefined => "type_predefined.c",
    err_return => "err_return.c",
    err_truncate => "err_truncate.c",
    err_request_comm => "err_request_comm.c",
    err_signature => "err_signature.c",
    err_user => "err_user.c",
    err_codes => "err_codes.c",
    errhandler_default => "errhandler_default.c",
    fatal_bad_count => "fatal_bad_count.c",
    fatal_sigkill => "fatal_sigkill.c",
    fatal_no_finalize => "fatal_no_finalize.c",
    fatal_no_init => "fatal_no_init.c",
    oversub_pingpong => "oversub_pingpong.c",
    group_algebra => "group_algebra.c",
    comm_split => "comm_split.c",
    comm_create => "comm_create.c",
    attr_comm => "attr_comm.c",
    info_basic => "info_basic.c",
    coll_allgather => "coll_allgather.c",
    coll_alltoall => "coll_alltoall.c",
    coll_barrier => "coll_barrier.c",
    coll_bcast => "coll_bcast.c",
    coll_errors => "coll_errors.c",
    coll_gather => "coll_gather.c",
    coll_redscat => "coll_redscat.c",
    coll_reduce => "coll_reduce.c",
    coll_bottom => "coll_bottom.c",
    coll_contig_paths => "coll_contig_paths.c",
    coll_datapaths => "coll_datapaths.c",
    coll_datapaths_alt => "coll_datapaths_alt.c",
    coll_datapaths_bruck => "coll_datapaths_bruck.c",
    coll_reduce_local => "coll_reduce_local.c",
    coll_scan => "coll_scan.c",
    coll_alg_default => "coll_alg_default.c",
    coll_alg_a => "coll_alg_a.c",
    coll_alg_b => "coll_alg_b.c",
    coll_alg_c => "coll_alg_c.c",
    coll_alg_d => "coll_alg_d.c",
    coll_alg_e => "coll_alg_e.c",
    coll_alg_nb_default => "coll_alg_nb_default.c",
    coll_alg_nb_e => "coll_alg_nb_e.c",
    coll_alg_nb_b => "coll_alg_nb_b.c",
    coll_alg_nb_c => "coll_alg_nb_c.c",
    coll_alg_pers_d => "coll_alg_pers_d.c",
    coll_alg_pers_e => "coll_alg_pers_e.c",
    coll_p2p_thresholds => "coll_p2p_thresholds.c",
    coll_p2p_thresholds_env => "coll_p2p_thresholds_env.c",
    coll_pieces => "coll_pieces.c",
    coll_pieces_forced => "coll_pieces_forced.c",
    coll_pieces_linear => "coll_pieces_linear.c",
    coll_pieces_copy => "coll_pieces_copy.c",
    coll_pieces_nocopy => "coll_pieces_nocopy.c",
    coll_mixed_affinity => "coll_mixed_affinity.c",
    coll_mixed_threads => "coll_mixed_threads.c",
    coll_sparse => "coll_sparse.c",
    coll_sparse_recdbl => "coll_sparse_recdbl.c",
    coll_sparse_rabenseifner => "coll_sparse_rabenseifner.c",
    coll_sparse_ring => "coll_sparse_ring.c",
    coll_sparse_reduce_bcast => "coll_sparse_reduce_bcast.c",
    coll_sparse_off => "coll_sparse_off.c",
    op_user_derived => "op_user_derived.c",
    reduce_grouping => "reduce_grouping.c",
    rma_basic => "rma_basic.c",
    rma_nocma => "rma_nocma.c",
    rma_net_messages => "rma_net_messages.c",
    rma_net_rdma => "rma_net_rdma.c",
    rma_stress => "rma_stress.c",
    rma_dynamic => "rma_dynamic.c",
    rma_lock_contention => "rma_lock_contention.c",
    rma_poll_own => "rma_poll_own.c",
    rma_async_progress => "rma_async_progress.c",
    rma_threads => "rma_threads.c",
    diff_default => "diff_default.c",
    diff_nosparse => "diff_nosparse.c",
    diff_noshm => "diff_noshm.c",
    diff_nocma => "diff_nocma.c",
    diff_copy => "diff_copy.c",
    diff_algs_a => "diff_algs_a.c",
    diff_algs_b => "diff_algs_b.c",
    diff_algs_c => "diff_algs_c.c",
    diff_algs_d => "diff_algs_d.c",
    coll_shm => "coll_shm.c",
    coll_shm_fake2 => "coll_shm_fake2.c",
    coll_shm_fake3 => "coll_shm_fake3.c",
    coll_shm_nocma => "coll_shm_nocma.c",
    coll_shm_copy => "coll_shm_copy.c",
    coll_shm_copy_low => "coll_shm_copy_low.c",
    coll_shm_copy_split => "coll_shm_copy_split.c",
    coll_shm_rooted => "coll_shm_rooted.c",
    coll_shm_rooted_default => "coll_shm_rooted_default.c",
    coll_shm_rooted_fake2 => "coll_shm_rooted_fake2.c",
    coll_shm_rooted_off => "coll_shm_rooted_off.c",
    coll_shm_rooted_copy => "coll_shm_rooted_copy.c",
    coll_inter => "coll_inter.c",
    coll_inter_nb => "coll_inter_nb.c",
    example_hello_ring => "examples/hello_ring.c",
    example_mpit_list => "examples/mpit_list.c",
    fortran_sentinels => "fortran/f_sentinels.f",
    fortran_address => "fortran/f_address.f",
    fortran_rma => "fortran/f_rma.f90",
    fortran_pt2pt => "fortran/f_pt2pt.f90",
    fortran_part => "fortran/f_part.f90",
    fortran_spawn => "fortran/f_spawn.f90",
    fortran_coll => "fortran/f_coll.f90",
    fortran_comm => "fortran/f_comm.f90",
    fortran_use_mpi => "fortran/f_use_mpi.f90",
    fortran_cg_solver => "fortran/f_cg_solver.f90",
    fortran_callbacks => "fortran/f_callbacks.f90",
    fortran_mpi_module => "fortran/f_mpi_module.f90",
    fortran_grequest => "fortran/f_grequest.f90",
    fortran_attr_lang => "fortran/f_attr_lang.f90",
    fortran_f08_sections => "fortran/f08_sections.f90",
    fortran_f08_callbacks => "fortran/f08_callbacks.f90",
    dtype_constructors => "dtype_constructors.c",
    dtype_pack => "dtype_pack.c",
    dtype_sendrecv => "dtype_sendrecv.c",
    dtype_sgrs_thresholds => "dtype_sgrs_thresholds.c",
    dtype_sgrs_thresholds_nocma => "dtype_sgrs_thresholds_nocma.c",
    dtype_errors => "dtype_errors.c",
    dtype_darray => "dtype_darray.c",
    dtype_blocklists => "dtype_blocklists.c",
    dtype_plan_cache => "dtype_plan_cache.c",
    dtype_blocklists_nocma => "dtype_blocklists_nocma.c",
    dtype_blocklists_split => "dtype_blocklists_split.c",
    dtype_sgrs_thresholds_split => "dtype_sgrs_thresholds_split.c",
    dtype_sgrs_thresholds_nosplit => "dtype_sgrs_thresholds_nosplit.c",
    dtype_stream => "dtype_stream.c",
    dtype_stream_small_rings => "dtype_stream_small_rings.c",
    dtype_stream_window => "dtype_stream_window.c",
    dtype_small_direct => "dtype_small_direct.c",
    dtype_nonblocking_small => "dtype_nonblocking_small.c",
    coll_mixed_order => "coll_mixed_order.c",
    coll_nonblocking => "coll_nonblocking.c",
    coll_persistent => "coll_persistent.c",
    coll_nonblocking_types => "coll_nonblocking_types.c",
    topo_dims => "topo_dims.c",
    topo_cart => "topo_cart.c",
    threads_coll => "threads_coll.c",
    threads_probe => "threads_probe.c",
    threads_pt2pt => "threads_pt2pt.c",
    threads_wait => "threads_wait.c",
    threads_wait_sleeps => "threads_wait_sleeps.c",
    wait_late_ranks => "wait_late_ranks.c",
    topo_graph => "topo_graph.c",
    topo_distgraph => "topo_distgraph.c",
    neighbor_cart => "neighbor_cart.c",
    neighbor_graph => "neighbor_graph.c",
    neighbor_errors => "neighbor_errors.c",
    intercomm_basic => "intercomm_basic.c",
    session_only => "session_only.c",
    session_world => "session_world.c",
    scale_ranks => "scale_ranks.c",
    attr_type => "attr_type.c",
    attr_win => "attr_win.c",
    comm_idup => "comm_idup.c",
    comm_idup_overlap => "comm_idup_overlap.c",
    comm_inter_split => "comm_inter_split.c",
    win_basic => "win_basic.c",
    win_attr => "win_attr.c",
    win_errhandler => "win_errhandler.c",
    file_errhandler => "file_errhandler.c",
    io_basic => "io_basic.c",
    io_views => "io_views.c",
    io_collective => "io_collective.c",
    io_sieve => "io_sieve.c",
    io_datarep => "io_datarep.c",
    io_datarep_sizes => "io_datarep_sizes.c",
    io_nonblocking => "io_nonblocking.c",
    spawn_basic => "spawn_basic.c",
    spawn_errors => "spawn_errors.c",
    spawn_ports => "spawn_ports.c",
    spawn_churn => "spawn_churn.c",
    spawn_intercomm_jobs => "spawn_intercomm_jobs.c",
    ports_errors => "ports_errors.c",
    ports_threads => "ports_threads.c",
}

/// A Fortran source file (compiled with `mpifort`).
fn is_fortran(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "f" || e == "f90")
}

#[test]
fn every_ctest_is_listed() {
    let root = repo_root();
    let mut missing = Vec::new();
    for sub in ["", "examples/", "fortran/"] {
        let dir = root.join("ctests").join(sub);
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".c") || is_fortran(Path::new(&name)) {
                let rel = format!("{sub}{name}");
                if !LISTED.contains(&rel.as_str()) {
                    missing.push(rel);
                }
            }
        }
    }
    assert!(missing.is_empty(), "C tests not listed in tests/ctests.rs: {missing:?}");
}

#[test]
fn metadata_of_every_ctest_parses() {
    let root = repo_root();
    for path in LISTED {
        let src = fs::read_to_string(root.join("ctests").join(path)).unwrap();
        if let Err(e) = Meta::parse(&src) {
            panic!("ctests/{path}: {e}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Setup: where the compiler and launcher come from.

struct Setup {
    root: PathBuf,
    /// Compiler wrapper command (program + leading arguments).
    mpicc: Vec<String>,
    /// Fortran compiler wrapper command.
    mpifort: Vec<String>,
    /// Launcher command (program + leading arguments); `-n N prog` is appended.
    mpiexec: Vec<String>,
    /// True when testing the oxmpi build (not an override).
    oxmpi: bool,
    /// The launcher spreads ranks over several hosts (`OXMPI_CTEST_ACROSS_HOSTS`).
    across_hosts: bool,
    /// The install prefix when testing oxmpi.
    prefix: Option<PathBuf>,
    /// Where compiled programs go.
    bindir: PathBuf,
    cflags: Vec<String>,
    fflags: Vec<String>,
    timeout_scale: f64,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|s| !s.trim().is_empty())
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// target/<profile> from the test executable's path (target/<profile>/deps/ctests-HASH).
fn profile_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let deps = exe.parent().ok_or("test executable has no parent directory")?;
    let profile =
        if deps.file_name().is_some_and(|n| n == "deps") { deps.parent().ok_or("deps has no parent")? } else { deps };
    Ok(profile.to_path_buf())
}

fn setup() -> &'static Result<Setup, String> {
    static SETUP: OnceLock<Result<Setup, String>> = OnceLock::new();
    SETUP.get_or_init(make_setup)
}

fn make_setup() -> Result<Setup, String> {
    let root = repo_root();
    let profile = profile_dir()?;
    let target = profile.parent().ok_or("profile directory has no parent")?.to_path_buf();
    let cflags =
        words(&env_nonempty("OXMPI_CTEST_CFLAGS").unwrap_or("-O2 -Wall -Werror -Wno-stringop-overflow".into()));
    let timeout_scale = env_nonempty("OXMPI_CTEST_TIMEOUT_SCALE").and_then(|s| s.parse::<f64>().ok()).unwrap_or(1.0);
    let fflags = words(&env_nonempty("OXMPI_CTEST_FFLAGS").unwrap_or("-O2 -Wall".into()));
    let cc_override = env_nonempty("OXMPI_CTEST_MPICC");
    let across_hosts = env_nonempty("OXMPI_CTEST_ACROSS_HOSTS");
    let other_launcher = env_nonempty("OXMPI_CTEST_LAUNCHER");
    let exec_override =
        across_hosts.clone().or_else(|| other_launcher.clone()).or_else(|| env_nonempty("OXMPI_CTEST_MPIEXEC"));

    let mut prefix = None;
    if cc_override.is_none() || exec_override.is_none() {
        let p = target.join("ctest-prefix");
        let out = Command::new("bash")
            .arg(root.join("scripts/install.sh"))
            .arg("--prefix")
            .arg(&p)
            .arg("--from")
            .arg(&profile)
            .current_dir(&root)
            .output()
            .map_err(|e| format!("running scripts/install.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "scripts/install.sh --prefix {} --from {} failed ({}):\n{}{}",
                p.display(),
                profile.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        prefix = Some(p);
    }
    let oxmpi =
        cc_override.is_none() && (exec_override.is_none() || across_hosts.is_some() || other_launcher.is_some());
    let pfx = |name: &str| prefix.as_ref().unwrap().join("bin").join(name).display().to_string();
    let mpicc = match &cc_override {
        Some(s) => words(s),
        None => vec![pfx("mpicc")],
    };
    let mpifort = match env_nonempty("OXMPI_CTEST_MPIFORT") {
        Some(s) => words(&s),
        None if cc_override.is_none() => vec![pfx("mpifort")],
        None => vec!["mpifort".to_string()],
    };
    let mpiexec = match &exec_override {
        Some(s) => words(s),
        None => vec![pfx("mpiexec")],
    };
    let tag = if oxmpi {
        "oxmpi".to_string()
    } else {
        let mut t: String = mpicc[0]
            .rsplit('/')
            .next()
            .unwrap()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        t.insert_str(0, "other-");
        t
    };
    let bindir = target.join("ctest-bin").join(tag);
    fs::create_dir_all(&bindir).map_err(|e| format!("mkdir {}: {e}", bindir.display()))?;
    let across_hosts = across_hosts.is_some();
    Ok(Setup { root, mpicc, mpifort, mpiexec, oxmpi, across_hosts, prefix, bindir, cflags, fflags, timeout_scale })
}

/// One C program runs at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn filtered_out(name: &str) -> bool {
    match env_nonempty("OXMPI_CTEST_FILTER") {
        Some(f) => !f.split(',').any(|part| name.contains(part)),
        None => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Metadata

#[derive(Debug, Clone, PartialEq)]
enum Exit {
    Code(i32),
    Nonzero,
}

#[derive(Debug, Clone)]
struct Meta {
    np: Vec<u32>,
    singleton: bool,
    exit: Exit,
    stderr: Vec<String>,
    /// Substrings of stderr that must occur exactly once.
    stderr_once: Vec<String>,
    /// Substrings stderr must not contain.
    stderr_forbidden: Vec<String>,
    stdout: Vec<String>,
    max_wall: Option<f64>,
    timeout: f64,
    env: Vec<(String, String)>,
    /// Substrings of stdout and stderr together.
    output: Vec<String>,
    /// Checked only against oxmpi (`oxmpi-strict=exit,output`): a reference MPI differs.
    strict_exit: bool,
    strict_output: bool,
    with: Vec<String>,
    /// Why the test needs all ranks on one node (`one-node`).
    one_node: Option<String>,
}

/// Splits `a=b c="d e" f` into items, honouring double quotes.
fn split_items(s: &str) -> Result<Vec<String>, String> {
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut in_q = false;
    let mut any = false;
    for c in s.chars() {
        match c {
            '"' => {
                in_q = !in_q;
                any = true;
            }
            c if c.is_whitespace() && !in_q => {
                if any {
                    items.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if in_q {
        return Err(format!("unbalanced quote in {s:?}"));
    }
    if any {
        items.push(cur);
    }
    Ok(items)
}

impl Meta {
    fn parse(src: &str) -> Result<Meta, String> {
        let mut m = Meta {
            np: vec![],
            singleton: false,
            exit: Exit::Code(0),
            stderr: vec![],
            stderr_once: vec![],
            stderr_forbidden: vec![],
            stdout: vec![],
            max_wall: None,
            timeout: 60.0,
            env: vec![],
            output: vec![],
            strict_exit: false,
            strict_output: false,
            with: vec![],
            one_node: None,
        };
        let mut np_given = false;
        let mut seen = false;
        for line in src.lines() {
            let Some(pos) = line.find("oxmpi-test:") else { continue };
            seen = true;
            let mut rest = &line[pos + "oxmpi-test:".len()..];
            if let Some(end) = rest.find("*/") {
                rest = &rest[..end];
            }
            for item in split_items(rest)? {
                let (k, v) = match item.split_once('=') {
                    Some((k, v)) => (k, Some(v)),
                    None => (item.as_str(), None),
                };
                let need = |v: Option<&'_ str>| -> Result<String, String> {
                    v.map(str::to_string).ok_or_else(|| format!("{k} needs a value"))
                };
                match k {
                    "np" => {
                        np_given = true;
                        for n in need(v)?.split(',').filter(|s| !s.is_empty()) {
                            m.np.push(n.parse().map_err(|_| format!("bad np {n:?}"))?);
                        }
                    }
                    "singleton" => m.singleton = true,
                    "oxmpi-strict" => {
                        for what in need(v)?.split(',') {
                            match what {
                                "exit" => m.strict_exit = true,
                                "output" => m.strict_output = true,
                                _ => return Err(format!("oxmpi-strict: unknown item {what:?}")),
                            }
                        }
                    }
                    "expect-output" => m.output.push(need(v)?),
                    "with" => m.with.push(need(v)?),
                    "one-node" => m.one_node = Some(need(v)?),
                    "expect-exit" => {
                        m.exit = match need(v)?.as_str() {
                            "nonzero" => Exit::Nonzero,
                            n => Exit::Code(n.parse().map_err(|_| format!("bad expect-exit {n:?}"))?),
                        }
                    }
                    "expect-stderr" => m.stderr.push(need(v)?),
                    "expect-stderr-once" => m.stderr_once.push(need(v)?),
                    "forbid-stderr" => m.stderr_forbidden.push(need(v)?),
                    "expect-stdout" => m.stdout.push(need(v)?),
                    "max-wall" => m.max_wall = Some(need(v)?.parse().map_err(|_| "bad max-wall".to_string())?),
                    "timeout" => m.timeout = need(v)?.parse().map_err(|_| "bad timeout".to_string())?,
                    "env" => {
                        let nv = need(v)?;
                        let (a, b) = nv.split_once('=').ok_or("env needs NAME=VALUE")?;
                        m.env.push((a.to_string(), b.to_string()));
                    }
                    _ => return Err(format!("unknown metadata item {item:?}")),
                }
            }
        }
        if !seen {
            return Err("no `oxmpi-test:` metadata line".into());
        }
        if !np_given && !m.singleton {
            m.np = vec![1, 2, 4, 8];
        }
        Ok(m)
    }
}

// ---------------------------------------------------------------------------------------------
// Running a command with a timeout, killing its process group when it runs too long.

struct RunOut {
    /// Pid of the launcher (or of the program run directly); names its job's shm files.
    pid: u32,
    status: Option<ExitStatus>,
    timed_out: bool,
    pipes_stuck: bool,
    stdout: String,
    stderr: String,
    wall: f64,
}

fn describe(status: &Option<ExitStatus>, timed_out: bool) -> String {
    if timed_out {
        return "timed out (killed)".into();
    }
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => format!("{s}"),
        },
        None => "no status".into(),
    }
}

fn spawn_reader<R: Read + Send + 'static>(mut r: R) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

fn kill_group(pgid: u32, sig: &str) {
    let _ =
        Command::new("kill").arg(format!("-{sig}")).arg("--").arg(format!("-{pgid}")).stderr(Stdio::null()).status();
}

fn run_with_timeout(argv: &[String], env: &[(String, String)], clear_pmi: bool, timeout: f64) -> RunOut {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .envs(env.iter().map(|(a, b)| (a, b)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if clear_pmi {
        for (k, _) in std::env::vars() {
            if k.starts_with("PMI_") || k.starts_with("PMIX_") || k.starts_with("OMPI_") {
                cmd.env_remove(k);
            }
        }
    }
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return RunOut {
                pid: 0,
                status: None,
                timed_out: false,
                pipes_stuck: false,
                stdout: String::new(),
                stderr: format!("cannot start {:?}: {e}", argv[0]),
                wall: 0.0,
            };
        }
    };
    let pgid = child.id();
    let out_rx = spawn_reader(child.stdout.take().unwrap());
    let err_rx = spawn_reader(child.stderr.take().unwrap());
    let deadline = start + Duration::from_secs_f64(timeout);
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(_) => break None,
        }
        if Instant::now() >= deadline {
            timed_out = true;
            kill_group(pgid, "TERM");
            let grace = Instant::now() + Duration::from_secs(3);
            while Instant::now() < grace {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                thread::sleep(Duration::from_millis(20));
            }
            kill_group(pgid, "KILL");
            break child.wait().ok();
        }
        thread::sleep(Duration::from_millis(5));
    };
    let wall = start.elapsed().as_secs_f64();
    // Anything left in the group (ranks of a launcher that did not clean up) is killed.
    kill_group(pgid, "KILL");
    // Pipes still open after the launcher exited mean a process outside the group (a rank in
    // its own session) still holds them.
    let mut pipes_stuck = false;
    let mut get = |rx: mpsc::Receiver<Vec<u8>>| match rx.recv_timeout(Duration::from_secs(5)) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(_) => {
            pipes_stuck = true;
            String::from("<output pipe still open 5 s after the launcher exited>")
        }
    };
    let stdout = get(out_rx);
    let stderr = get(err_rx);
    RunOut { pid: pgid, status, timed_out, pipes_stuck, stdout, stderr, wall }
}

fn tail(s: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let from = lines.len().saturating_sub(max_lines);
    let mut t = lines[from..].join("\n");
    if t.len() > 6000 {
        let mut cut = t.len() - 6000;
        while !t.is_char_boundary(cut) {
            cut += 1;
        }
        t = t[cut..].to_string();
    }
    t
}

fn shm_entries() -> BTreeSet<String> {
    fs::read_dir("/dev/shm")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("oxmpi"))
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Compiling and checking one run.

fn compile(s: &Setup, mpicc: &[String], src: &Path, out: &Path, extra: &[&str]) -> Result<(), String> {
    let mut argv: Vec<String> = mpicc.to_vec();
    if is_fortran(src) {
        argv.extend(s.fflags.iter().cloned());
        // Module files of the test's own modules go next to the binary, not into the
        // directory cargo runs in (the repository).
        if let Some(dir) = out.parent() {
            argv.push(format!("-J{}", dir.display()));
        }
    } else {
        argv.extend(s.cflags.iter().cloned());
    }
    if s.oxmpi && !is_fortran(src) {
        // Enables CHECK_STRICT (see ctests/mtest.h).
        argv.push("-DMT_OXMPI=1".into());
    }
    argv.extend(extra.iter().map(|x| x.to_string()));
    argv.push("-o".into());
    argv.push(out.display().to_string());
    argv.push(src.display().to_string());
    let _ = fs::remove_file(out);
    let r = run_with_timeout(&argv, &[], false, 120.0);
    if r.status.is_some_and(|st| st.success()) {
        Ok(())
    } else {
        Err(format!(
            "compile failed ({}): {}\n{}{}",
            describe(&r.status, r.timed_out),
            argv.join(" "),
            tail(&r.stdout, 40),
            tail(&r.stderr, 40)
        ))
    }
}

/// What one run must show.
struct Expect<'a> {
    exit: &'a Exit,
    check_exit: bool,
    no_errors: bool,
    stdout: &'a [String],
    stderr: &'a [String],
    stderr_once: &'a [String],
    stderr_forbidden: &'a [String],
    output: &'a [String],
    max_wall: Option<f64>,
}

impl Expect<'_> {
    fn of(m: &Meta) -> Expect<'_> {
        Expect {
            exit: &m.exit,
            check_exit: true,
            no_errors: m.exit == Exit::Code(0),
            stdout: &m.stdout,
            stderr: &m.stderr,
            stderr_once: &m.stderr_once,
            stderr_forbidden: &m.stderr_forbidden,
            output: &m.output,
            max_wall: m.max_wall,
        }
    }
}

/// Runs one command and returns a failure description, if any.
fn run_and_check(
    s: &Setup,
    label: &str,
    argv: &[String],
    env: &[(String, String)],
    clear_pmi: bool,
    timeout: f64,
    ex: &Expect,
) -> Option<String> {
    let shm_before = if s.oxmpi { shm_entries() } else { BTreeSet::new() };
    let r = run_with_timeout(argv, env, clear_pmi, timeout * s.timeout_scale);
    let mut problems = Vec::new();
    if r.timed_out {
        problems.push(format!("timed out after {:.0} s", timeout * s.timeout_scale));
    } else if ex.check_exit {
        let ok = match (ex.exit, r.status) {
            (_, None) => false,
            (Exit::Code(c), Some(st)) => st.code() == Some(*c),
            (Exit::Nonzero, Some(st)) => !st.success(),
        };
        if !ok {
            problems.push(format!("expected exit {:?}", ex.exit));
        }
    }
    if r.pipes_stuck {
        problems.push("processes outlived the launcher (output pipes still open)".into());
    }
    if ex.no_errors {
        // Counted as substrings: launchers may interleave the output of ranks within lines.
        let n = r.stdout.matches("No Errors").count();
        if n != 1 {
            problems.push(format!("expected `No Errors` exactly once on stdout, found {n}"));
        }
        if r.stdout.contains(" Found ") {
            problems.push("the test reported errors".into());
        }
    }
    if !ex.no_errors && r.stdout.contains("No Errors") {
        problems.push("a run expected to fail printed `No Errors`".into());
    }
    let lower_out = r.stdout.to_lowercase();
    let lower_err = r.stderr.to_lowercase();
    for want in ex.stdout {
        if !lower_out.contains(&want.to_lowercase()) {
            problems.push(format!("stdout lacks {want:?}"));
        }
    }
    for want in ex.stderr {
        if !lower_err.contains(&want.to_lowercase()) {
            problems.push(format!("stderr lacks {want:?}"));
        }
    }
    for want in ex.stderr_once {
        let n = lower_err.matches(&want.to_lowercase()).count();
        if n != 1 {
            problems.push(format!("stderr has {want:?} {n} times, not once"));
        }
    }
    for unwanted in ex.stderr_forbidden {
        if lower_err.contains(&unwanted.to_lowercase()) {
            problems.push(format!("stderr has {unwanted:?}"));
        }
    }
    for want in ex.output {
        let w = want.to_lowercase();
        if !lower_err.contains(&w) && !lower_out.contains(&w) {
            problems.push(format!("output lacks {want:?}"));
        }
    }
    if let Some(max) = ex.max_wall {
        if r.wall > max {
            problems.push(format!("took {:.1} s, more than max-wall {max} s", r.wall));
        }
    }
    if s.oxmpi {
        // Only this job's files: our mpiexec names jobs `oxmpi<pid>_...`, Hydra
        // `kvs_<pid>_...`, a singleton `singleton_<pid>_...`; other jobs on the machine may
        // come and go meanwhile.
        let ours = [format!("oxmpi{}_", r.pid), format!("kvs_{}_", r.pid), format!("singleton_{}_", r.pid)];
        let left: Vec<String> = shm_entries()
            .difference(&shm_before)
            .filter(|n| ours.iter().any(|o| n.contains(o.as_str())))
            .cloned()
            .collect();
        if !left.is_empty() {
            problems.push(format!("left in /dev/shm: {left:?}"));
            for f in &left {
                let _ = fs::remove_file(Path::new("/dev/shm").join(f));
            }
        }
    }
    if problems.is_empty() {
        eprintln!("ok   {label} ({:.2} s)", r.wall);
        return None;
    }
    Some(format!(
        "FAIL {label}: {} [{}; {:.2} s]\n  command: {}\n--- stdout (tail) ---\n{}\n--- stderr (tail) ---\n{}\n",
        problems.join("; "),
        describe(&r.status, r.timed_out),
        r.wall,
        argv.join(" "),
        tail(&r.stdout, 30),
        tail(&r.stderr, 30)
    ))
}

fn launch_argv(s: &Setup, np: u32, prog: &Path, args: &[String]) -> Vec<String> {
    let mut v = s.mpiexec.clone();
    v.push("-n".into());
    v.push(np.to_string());
    v.push(prog.display().to_string());
    v.extend(args.iter().cloned());
    v
}

fn get_setup() -> &'static Setup {
    match setup() {
        Ok(s) => s,
        Err(e) => panic!("C test setup failed: {e}"),
    }
}

fn run_ctest(name: &str, rel: &str) {
    if filtered_out(name) {
        eprintln!("skipped {name} (OXMPI_CTEST_FILTER)");
        return;
    }
    let _guard = serial();
    let s = get_setup();
    let src = s.root.join("ctests").join(rel);
    let text = fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let meta = Meta::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    if let (true, Some(why)) = (s.across_hosts, &meta.one_node) {
        eprintln!("not run across hosts {name}: {why}");
        return;
    }
    let bin = s.bindir.join(name);
    let compiler = if is_fortran(&src) { &s.mpifort } else { &s.mpicc };
    let with: Vec<String> = meta.with.iter().map(|w| src.parent().unwrap().join(w).display().to_string()).collect();
    if let Err(e) = compile(s, compiler, &src, &bin, &with.iter().map(String::as_str).collect::<Vec<_>>()) {
        panic!("{name}: {e}");
    }
    let mut ex = Expect::of(&meta);
    ex.check_exit = s.oxmpi || !meta.strict_exit;
    if !s.oxmpi && meta.strict_output {
        ex.stdout = &[];
        ex.stderr = &[];
        ex.stderr_once = &[];
        ex.stderr_forbidden = &[];
        ex.output = &[];
    }
    let mut failures = Vec::new();
    if meta.singleton {
        let argv = vec![bin.display().to_string()];
        if let Some(f) = run_and_check(s, &format!("{name} singleton"), &argv, &meta.env, true, meta.timeout, &ex) {
            failures.push(f);
        }
    }
    for &np in &meta.np {
        let argv = launch_argv(s, np, &bin, &[]);
        if let Some(f) = run_and_check(s, &format!("{name} np={np}"), &argv, &meta.env, false, meta.timeout, &ex) {
            failures.push(f);
        }
    }
    assert!(failures.is_empty(), "{} failing run(s) of {name}:\n{}", failures.len(), failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// ABI tests: binaries built by Debian's MPICH compiler run on oxmpi.

/// Debian's MPICH compiler and launcher, if installed.
fn mpich_tools() -> Option<(Vec<String>, Vec<String>)> {
    let cc = words(&env_nonempty("OXMPI_CTEST_MPICH_CC").unwrap_or("mpicc.mpich".into()));
    let ex = words(&env_nonempty("OXMPI_CTEST_MPICH_MPIEXEC").unwrap_or("mpiexec.mpich".into()));
    let found = |p: &str| {
        if p.contains('/') {
            return Path::new(p).exists();
        }
        std::env::var_os("PATH").map(|path| std::env::split_paths(&path).any(|d| d.join(p).is_file())).unwrap_or(false)
    };
    if found(&cc[0]) && found(&ex[0]) { Some((cc, ex)) } else { None }
}

fn abi_no_errors() -> Expect<'static> {
    Expect {
        exit: &Exit::Code(0),
        check_exit: true,
        no_errors: true,
        stdout: &[],
        stderr: &[],
        stderr_once: &[],
        stderr_forbidden: &[],
        output: &[],
        max_wall: None,
    }
}

#[test]
fn abi_mpich_built_binary() {
    let name = "abi_mpich_built_binary";
    if filtered_out(name) {
        return;
    }
    let _guard = serial();
    let s = get_setup();
    let Some((mcc, mexec)) = mpich_tools() else {
        if s.oxmpi {
            panic!("{name}: Debian's MPICH (mpicc.mpich, mpiexec.mpich) is needed for the ABI tests");
        }
        eprintln!("skipped {name}: no MPICH tools");
        return;
    };
    let src = s.root.join("ctests/abi/abi_basic.c");
    let bin = s.bindir.join("abi_basic_mpich");
    if let Err(e) = compile(s, &mcc, &src, &bin, &[]) {
        panic!("{name}: {e}");
    }
    let mut failures = Vec::new();
    let mut check = |label: String, argv: Vec<String>, env: Vec<(String, String)>| {
        let ex = abi_no_errors();
        if let Some(f) = run_and_check(s, &label, &argv, &env, false, 60.0, &ex) {
            failures.push(f);
        }
    };
    // With "expect-oxmpi" the program fails when MPICH's own library answers.
    if let Some(prefix) = s.prefix.as_ref().filter(|_| s.oxmpi) {
        let lib = prefix.join("lib");
        let so = lib.join("libmpi.so.12").display().to_string();
        let lib = lib.display().to_string();
        for np in [1u32, 2, 4] {
            // Our launcher, library found through LD_LIBRARY_PATH (libmpich.so.12 link).
            let ours = launch_argv(s, np, &bin, &["expect-oxmpi".into()]);
            check(
                format!("{name} LD_LIBRARY_PATH np={np}"),
                ours.clone(),
                vec![("LD_LIBRARY_PATH".into(), lib.clone())],
            );
            check(format!("{name} LD_PRELOAD np={np}"), ours, vec![("LD_PRELOAD".into(), so.clone())]);
            // MPICH's Hydra launcher; the variables go to the ranks only (-genv).
            for (var, val) in [("LD_LIBRARY_PATH", &lib), ("LD_PRELOAD", &so)] {
                let mut argv = mexec.clone();
                argv.extend(["-genv".into(), var.into(), val.clone(), "-n".into(), np.to_string()]);
                argv.push(bin.display().to_string());
                argv.push("expect-oxmpi".into());
                check(format!("{name} mpiexec.mpich {var} np={np}"), argv, vec![]);
            }
        }
    } else {
        // Validating the program itself: run it on the configured MPI.
        for np in [1u32, 2, 4] {
            check(format!("{name} np={np}"), launch_argv(s, np, &bin, &[]), vec![]);
        }
    }
    assert!(failures.is_empty(), "{} failing run(s):\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn abi_pmpi_profiling_library() {
    let name = "abi_pmpi_profiling_library";
    if filtered_out(name) {
        return;
    }
    let _guard = serial();
    let s = get_setup();
    let mut failures = Vec::new();
    // (label, compiler for the library and the program, env var carrying our library)
    let mut builds: Vec<(&str, Vec<String>, bool)> = vec![("own-mpicc", s.mpicc.clone(), false)];
    if s.oxmpi {
        match mpich_tools() {
            Some((mcc, _)) => builds.push(("mpicc.mpich", mcc, true)),
            None => panic!("{name}: Debian's MPICH (mpicc.mpich) is needed for the ABI tests"),
        }
    }
    for (label, cc, preload_ours) in builds {
        let prof = s.bindir.join(format!("libprof-{label}.so"));
        let prog = s.bindir.join(format!("prof_main-{label}"));
        if let Err(e) = compile(s, &cc, &s.root.join("ctests/abi/prof.c"), &prof, &["-shared", "-fPIC"]) {
            failures.push(format!("{label}: {e}"));
            continue;
        }
        if let Err(e) = compile(s, &cc, &s.root.join("ctests/abi/prof_main.c"), &prog, &["-ldl"]) {
            failures.push(format!("{label}: {e}"));
            continue;
        }
        let mut preload = prof.display().to_string();
        if preload_ours {
            let so = s.prefix.as_ref().unwrap().join("lib/libmpi.so.12");
            preload = format!("{preload}:{}", so.display());
        }
        for np in [1u32, 2, 3] {
            let want: Vec<String> = (0..np).map(|r| format!("prof: rank {r} MPI_Send calls {}", r + 1)).collect();
            let mut ex = abi_no_errors();
            ex.stdout = &want;
            let argv = launch_argv(s, np, &prog, &[]);
            let env = vec![("LD_PRELOAD".to_string(), preload.clone())];
            if let Some(f) = run_and_check(s, &format!("{name} {label} np={np}"), &argv, &env, false, 60.0, &ex) {
                failures.push(f);
            }
        }
    }
    assert!(failures.is_empty(), "{} failing run(s):\n{}", failures.len(), failures.join("\n"));
}

/// Parallel HDF5 over MPI-IO: `ctests/hdf5/hdf5_collective.c`, built with Debian's
/// `h5pcc.mpich` (libhdf5-mpich-dev, over libmpich.so.12), writes and reads a dataset
/// collectively; on oxmpi with the library swapped through LD_LIBRARY_PATH, else (validating
/// the program) on the configured MPI.
#[test]
fn hdf5_mpich_built_binary() {
    let name = "hdf5_mpich_built_binary";
    if filtered_out(name) {
        return;
    }
    let _guard = serial();
    let s = get_setup();
    let h5pcc = words(&env_nonempty("OXMPI_CTEST_H5PCC").unwrap_or("h5pcc.mpich".into()));
    let on_path = |p: &str| {
        std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(p).is_file()))
    };
    if !on_path(&h5pcc[0]) {
        if s.oxmpi {
            panic!("{name}: Debian's parallel HDF5 (h5pcc.mpich, package libhdf5-mpich-dev) is needed");
        }
        eprintln!("skipped {name}: no h5pcc.mpich");
        return;
    }
    let bin = s.bindir.join("hdf5_collective");
    let compiled = compile(s, &h5pcc, &s.root.join("ctests/hdf5/hdf5_collective.c"), &bin, &[]);
    // h5pcc compiles and links in two steps and leaves the object file in the working directory.
    let _ = fs::remove_file("hdf5_collective.o");
    if let Err(e) = compiled {
        panic!("{name}: {e}");
    }
    let dir = std::env::temp_dir().join(format!("oxmpi-hdf5-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{name}: cannot make {}: {e}", dir.display()));
    let mut failures = Vec::new();
    let (env, want) = match s.prefix.as_ref().filter(|_| s.oxmpi) {
        Some(prefix) => (
            vec![("LD_LIBRARY_PATH".to_string(), prefix.join("lib").display().to_string())],
            vec!["library: oxmpi".to_string()],
        ),
        None => (vec![], vec![]),
    };
    for np in [1u32, 2, 4] {
        let mut ex = abi_no_errors();
        ex.stdout = &want;
        let argv = launch_argv(s, np, &bin, &[dir.display().to_string()]);
        if let Some(f) = run_and_check(s, &format!("{name} np={np}"), &argv, &env, false, 60.0, &ex) {
            failures.push(f);
        }
    }
    let _ = fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{} failing run(s):\n{}", failures.len(), failures.join("\n"));
}

/// A Fortran program built with Debian's MPICH (`mpif77.mpich`: MPICH's mpif.h, linked with
/// libmpichfort.so.12 and libmpich.so.12) runs on oxmpi, whose library answers to both names.
#[test]
fn abi_mpich_built_fortran_binary() {
    let fc = env_nonempty("OXMPI_CTEST_MPICH_FC").unwrap_or("mpif77.mpich".into());
    mpich_built_fortran("abi_mpich_built_fortran_binary", &fc, "ctests/fortran/abi/f_abi.f", "f_abi_mpich");
}

/// As `abi_mpich_built_fortran_binary`, for a `use mpi` program (`mpif90.mpich`, MPICH's
/// module files; it calls module procedures that live in libmpichfort).
#[test]
fn abi_mpich_built_use_mpi_binary() {
    let fc = env_nonempty("OXMPI_CTEST_MPICH_F90").unwrap_or("mpif90.mpich".into());
    mpich_built_fortran("abi_mpich_built_use_mpi_binary", &fc, "ctests/fortran/abi/f_abi_use_mpi.f90", "f_abi_use_mpi");
}

/// As `abi_mpich_built_fortran_binary`, for a `use mpi_f08` program: it calls MPICH's f08
/// procedures (`mpi_send_f08ts_`, ...), which oxmpi's libmpichfort.so.12 provides, with array
/// sections, statuses and the large-count overloads.
#[test]
fn abi_mpich_built_f08_binary() {
    let fc = env_nonempty("OXMPI_CTEST_MPICH_F90").unwrap_or("mpif90.mpich".into());
    mpich_built_fortran("abi_mpich_built_f08_binary", &fc, "ctests/fortran/abi/f_abi_f08.f90", "f_abi_f08");
}

/// A library directory holding the libmpichfort.so.12 that `bin` loads by itself (Debian's)
/// and oxmpi's libmpich.so.12 from `prefix`.
fn mixed_fortran_libdir(s: &Setup, bin: &Path, prefix: &Path) -> String {
    let ldd = Command::new("ldd").arg(bin).output().expect("ldd runs");
    let text = String::from_utf8_lossy(&ldd.stdout);
    let fort = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("libmpichfort.so.12 => "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{}: no libmpichfort.so.12 in ldd's output:\n{text}", bin.display()));
    let dir = s.bindir.join("mixed-fortran-lib");
    fs::create_dir_all(&dir).unwrap();
    for (name, target) in
        [("libmpichfort.so.12", PathBuf::from(fort)), ("libmpich.so.12", prefix.join("lib/libmpich.so.12"))]
    {
        let link = dir.join(name);
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
    }
    dir.display().to_string()
}

/// Builds `src` with Debian's MPICH compiler `fc` and runs it on oxmpi (through
/// LD_LIBRARY_PATH, also under mpiexec.mpich and with Debian's libmpichfort over oxmpi's
/// libmpich), or on the reference MPI as it is.
fn mpich_built_fortran(name: &str, fc: &str, src: &str, bin_name: &str) {
    if filtered_out(name) {
        return;
    }
    let _guard = serial();
    let s = get_setup();
    let fc_argv = words(fc);
    let Some((_, mexec)) = mpich_tools() else {
        if s.oxmpi {
            panic!("{name}: Debian's MPICH ({fc}, mpiexec.mpich) is needed for the ABI tests");
        }
        eprintln!("skipped {name}: no MPICH tools");
        return;
    };
    let bin = s.bindir.join(bin_name);
    if let Err(e) = compile(s, &fc_argv, &s.root.join(src), &bin, &[]) {
        panic!("{name}: {e}");
    }
    let mut failures = Vec::new();
    let mut check = |label: String, argv: Vec<String>, env: Vec<(String, String)>| {
        if let Some(f) = run_and_check(s, &label, &argv, &env, false, 60.0, &abi_no_errors()) {
            failures.push(f);
        }
    };
    if let Some(prefix) = s.prefix.as_ref().filter(|_| s.oxmpi) {
        let lib = prefix.join("lib").display().to_string();
        for np in [1u32, 2, 4] {
            let ours = launch_argv(s, np, &bin, &["expect-oxmpi".into()]);
            check(format!("{name} LD_LIBRARY_PATH np={np}"), ours, vec![("LD_LIBRARY_PATH".into(), lib.clone())]);
        }
        let mut argv = mexec.clone();
        argv.extend(["-genv".into(), "LD_LIBRARY_PATH".into(), lib.clone(), "-n".into(), "2".into()]);
        argv.extend([bin.display().to_string(), "expect-oxmpi".into()]);
        check(format!("{name} mpiexec.mpich LD_LIBRARY_PATH np=2"), argv, vec![]);
        // Debian's own libmpichfort over oxmpi's libmpich: its binding calls oxmpi's C
        // functions and MPICH's internal hooks (MPII_*).
        let mixed = mixed_fortran_libdir(s, &bin, prefix);
        let ours = launch_argv(s, 2, &bin, &["expect-oxmpi".into()]);
        check(format!("{name} Debian libmpichfort np=2"), ours, vec![("LD_LIBRARY_PATH".into(), mixed)]);
    } else {
        for np in [1u32, 2, 4] {
            check(format!("{name} np={np}"), launch_argv(s, np, &bin, &[]), vec![]);
        }
    }
    assert!(failures.is_empty(), "{} failing run(s):\n{}", failures.len(), failures.join("\n"));
}

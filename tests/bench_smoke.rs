//! Smoke test of the micro-benchmarks of `ctests/bench/`: builds them with the installed
//! `mpicc` and runs each once with `--check` at tiny sizes and few iterations (point-to-point
//! on 2 ranks, collectives on 4), asserting exit 0 and well-formed CSV records. No timing is
//! asserted: the benchmarks are tools, this only proves they work.
//!
//! The install tree is made as tests/ctests.rs makes it: `scripts/install.sh --prefix
//! <target>/bench-prefix --from <target>/<profile>`. `OXMPI_CTEST_MPICC` and
//! `OXMPI_CTEST_MPIEXEC` (both) run the same checks against another MPI, e.g.
//! `OXMPI_CTEST_MPICC=mpicc.mpich OXMPI_CTEST_MPIEXEC=mpiexec.mpich cargo test --test
//! bench_smoke`.

use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const PROGRAMS: &[(&str, &str)] = &[
    ("bench_latency", "latency.c"),
    ("bench_bw", "bw.c"),
    ("bench_bibw", "bibw.c"),
    ("bench_mbw_mr", "mbw_mr.c"),
    ("bench_vector", "vector.c"),
    ("bench_coll", "coll.c"),
    ("bench_sparse", "sparse.c"),
    ("bench_rma", "rma.c"),
    ("bench_empty", "empty.c"),
    ("bench_scale", "scale.c"),
];

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|s| !s.trim().is_empty())
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// target/<profile> from the test executable's path (target/<profile>/deps/bench_smoke-HASH).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test executable has a parent directory");
    if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("deps has a parent").to_path_buf()
    } else {
        deps.to_path_buf()
    }
}

struct Out {
    status: Option<ExitStatus>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

fn reader<R: Read + Send + 'static>(mut r: R) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

fn kill_group(pgid: u32) {
    let _ = Command::new("kill").arg("-KILL").arg("--").arg(format!("-{pgid}")).stderr(Stdio::null()).status();
}

/// Runs argv in its own process group; kills the group after `timeout` seconds.
fn run(argv: &[String], timeout: f64) -> Out {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Out {
                status: None,
                timed_out: false,
                stdout: String::new(),
                stderr: format!("cannot start {:?}: {e}", argv[0]),
            };
        }
    };
    let pgid = child.id();
    let out_rx = reader(child.stdout.take().unwrap());
    let err_rx = reader(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs_f64(timeout);
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(_) => break None,
        }
        if Instant::now() >= deadline {
            timed_out = true;
            kill_group(pgid);
            break child.wait().ok();
        }
        thread::sleep(Duration::from_millis(10));
    };
    kill_group(pgid);
    let get = |rx: mpsc::Receiver<Vec<u8>>| {
        rx.recv_timeout(Duration::from_secs(5))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_else(|_| "<output pipe still open>".into())
    };
    let stdout = get(out_rx);
    let stderr = get(err_rx);
    Out { status, timed_out, stdout, stderr }
}

struct Setup {
    mpicc: Vec<String>,
    mpiexec: Vec<String>,
    oxmpi: bool,
    bindir: PathBuf,
}

fn setup() -> Setup {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let profile = profile_dir();
    let target = profile.parent().expect("profile directory has a parent").to_path_buf();
    match (env_nonempty("OXMPI_CTEST_MPICC"), env_nonempty("OXMPI_CTEST_MPIEXEC")) {
        (Some(cc), Some(exec)) => {
            let bindir = target.join("bench-bin").join("other");
            std::fs::create_dir_all(&bindir).unwrap();
            Setup { mpicc: words(&cc), mpiexec: words(&exec), oxmpi: false, bindir }
        }
        _ => {
            let prefix = target.join("bench-prefix");
            let out = Command::new("bash")
                .arg(root.join("scripts/install.sh"))
                .arg("--prefix")
                .arg(&prefix)
                .arg("--from")
                .arg(&profile)
                .current_dir(&root)
                .output()
                .expect("running scripts/install.sh");
            assert!(
                out.status.success(),
                "scripts/install.sh failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let bindir = target.join("bench-bin").join("oxmpi");
            std::fs::create_dir_all(&bindir).unwrap();
            Setup {
                mpicc: vec![prefix.join("bin/mpicc").display().to_string()],
                mpiexec: vec![prefix.join("bin/mpiexec").display().to_string()],
                oxmpi: true,
                bindir,
            }
        }
    }
}

fn compile(s: &Setup, srcdir: &Path, prog: &str, src: &str) {
    let mut argv = s.mpicc.clone();
    argv.extend(["-O2", "-Wall", "-Werror", "-std=c99", "-o"].map(String::from));
    argv.push(s.bindir.join(prog).display().to_string());
    argv.push(srcdir.join(src).display().to_string());
    argv.push(srcdir.join("common.c").display().to_string());
    let out = run(&argv, 120.0);
    assert!(
        out.status.is_some_and(|st| st.success()),
        "compiling {src} failed: {argv:?}\n{}{}",
        out.stdout,
        out.stderr
    );
}

/// One CSV record of a benchmark.
#[derive(Debug)]
struct Record {
    bench: String,
    np: u32,
    size: u64,
}

/// Parses stdout: every line is a '#' comment or an 8-field record with sane numbers.
fn parse(stdout: &str, oxmpi: bool, np: u32) -> Result<Vec<Record>, String> {
    let mut recs = Vec::new();
    for line in stdout.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 8 {
            return Err(format!("not a comment nor an 8-field record: {line:?}"));
        }
        let num = |i: usize| -> Result<f64, String> {
            let v: f64 = f[i].parse().map_err(|_| format!("field {i} is not a number: {line:?}"))?;
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(format!("field {i} is negative or not finite: {line:?}"))
            }
        };
        let (median, p90) = (num(4)?, num(5)?);
        num(6)?;
        num(7)?;
        if p90 < median {
            return Err(format!("p90 below the median: {line:?}"));
        }
        if oxmpi && f[1] != "oxmpi" {
            return Err(format!("mpi column is not oxmpi: {line:?}"));
        }
        let rec = Record {
            bench: f[0].to_string(),
            np: f[2].parse().map_err(|_| format!("bad np: {line:?}"))?,
            size: f[3].parse().map_err(|_| format!("bad size: {line:?}"))?,
        };
        if rec.np != np {
            return Err(format!("np column {} but run on {np} ranks: {line:?}", rec.np));
        }
        recs.push(rec);
    }
    Ok(recs)
}

fn sizes(lo: u64, hi: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = lo;
    while s <= hi {
        v.push(s);
        s = if s == 0 { 1 } else { s * 2 };
    }
    v
}

struct Case {
    prog: &'static str,
    np: u32,
    args: &'static str,
    /// (bench, sizes) pairs that must all appear; empty: no records expected.
    expect: Vec<(String, Vec<u64>)>,
    /// The program may skip with a '# SKIPPED' comment instead (derived datatypes missing).
    may_skip: bool,
    /// Expected exit: 0 or nonzero.
    ok: bool,
}

fn cases() -> Vec<Case> {
    let each = |names: &[&str], sz: Vec<u64>| names.iter().map(|n| (n.to_string(), sz.clone())).collect::<Vec<_>>();
    let reductions: Vec<u64> = sizes(8, 4096);
    let mut coll = each(&["bcast", "allgather", "alltoall", "gather", "scatter"], sizes(0, 4096));
    coll.extend(each(&["reduce", "allreduce", "reduce_scatter"], [0].into_iter().chain(reductions.clone()).collect()));
    coll.push(("barrier".into(), vec![0]));
    vec![
        Case {
            prog: "bench_latency",
            np: 2,
            args: "--max-size 4K --iters 5 --warmup 1 --check",
            expect: each(&["latency"], sizes(0, 4096)),
            may_skip: false,
            ok: true,
        },
        // Across the eager limit (16 KiB) into rendezvous.
        Case {
            prog: "bench_latency",
            np: 2,
            args: "--min-size 8K --max-size 128K --iters 3 --warmup 1 --check",
            expect: each(&["latency"], sizes(8192, 131072)),
            may_skip: false,
            ok: true,
        },
        Case {
            prog: "bench_bw",
            np: 2,
            args: "--max-size 64K --iters 3 --warmup 1 --window 8 --check",
            expect: each(&["bw"], sizes(0, 65536)),
            may_skip: false,
            ok: true,
        },
        Case {
            prog: "bench_bibw",
            np: 2,
            args: "--max-size 64K --iters 3 --warmup 1 --window 8 --check",
            expect: each(&["bibw"], sizes(0, 65536)),
            may_skip: false,
            ok: true,
        },
        Case {
            prog: "bench_mbw_mr",
            np: 2,
            args: "--max-size 4K --iters 3 --warmup 1 --window 8 --check",
            expect: each(&["mbw_mr"], sizes(0, 4096)),
            may_skip: false,
            ok: true,
        },
        Case {
            prog: "bench_mbw_mr",
            np: 4,
            args: "--max-size 1K --iters 3 --warmup 1 --window 4 --check",
            expect: each(&["mbw_mr"], sizes(0, 1024)),
            may_skip: false,
            ok: true,
        },
        Case {
            prog: "bench_vector",
            np: 2,
            args: "--max-size 32K --iters 3 --warmup 1 --window 4 --blocks 1:2,4:16 --check",
            expect: each(&["vec_lat_b8_s16", "vec_bw_b8_s16"], sizes(8, 32768))
                .into_iter()
                .chain(each(&["vec_lat_b32_s128", "vec_bw_b32_s128"], sizes(32, 32768)))
                .collect(),
            may_skip: true,
            ok: true,
        },
        Case {
            prog: "bench_coll",
            np: 4,
            args: "--max-size 4K --iters 3 --warmup 1 --check --vary",
            expect: coll,
            may_skip: false,
            ok: true,
        },
        Case {
            prog: "bench_coll",
            np: 2,
            args: "--max-size 64 --iters 3 --warmup 1 --check --ops allreduce,alltoall",
            expect: each(&["allreduce"], [0].into_iter().chain(sizes(8, 64)).collect())
                .into_iter()
                .chain(each(&["alltoall"], sizes(0, 64)))
                .collect(),
            may_skip: false,
            ok: true,
        },
        Case {
            prog: "bench_sparse",
            np: 4,
            args: "--max-size 8K --iters 3 --warmup 1 --check --vary --density 1,10,100",
            expect: each(&["sparse_allreduce_d1", "sparse_allreduce_d10", "sparse_allreduce_d100"], sizes(8, 8192)),
            may_skip: false,
            ok: true,
        },
        Case {
            prog: "bench_rma",
            np: 2,
            args: "--max-size 64K --iters 3 --warmup 1 --check",
            expect: each(
                &[
                    "put_flush_alloc",
                    "get_flush_alloc",
                    "put_fence_alloc",
                    "get_fence_alloc",
                    "put_flush_create",
                    "get_flush_create",
                ],
                sizes(1, 65536),
            )
            .into_iter()
            .chain(each(&["acc_flush_alloc", "acc_flush_create"], sizes(8, 65536)))
            .chain(each(&["fop_flush_alloc", "cas_flush_alloc", "fop_flush_create", "cas_flush_create"], vec![8]))
            .chain(each(&["put_flush_allocmem", "get_flush_allocmem"], sizes(1, 65536)))
            .chain(each(&["acc_flush_allocmem"], sizes(8, 65536)))
            .collect(),
            may_skip: false,
            ok: true,
        },
        // Ranks that only take part in the fences.
        Case {
            prog: "bench_rma",
            np: 3,
            args: "--max-size 256 --iters 3 --warmup 1 --check --ops put_fence_create,get_fence_alloc",
            expect: each(&["put_fence_create", "get_fence_alloc"], sizes(1, 256)),
            may_skip: false,
            ok: true,
        },
        Case { prog: "bench_rma", np: 2, args: "--ops put_sideways_alloc", expect: vec![], may_skip: false, ok: false },
        Case { prog: "bench_empty", np: 2, args: "", expect: vec![], may_skip: false, ok: true },
        // Exits non-zero when its allreduce sums are wrong.
        Case { prog: "bench_scale", np: 3, args: "", expect: vec![], may_skip: false, ok: true },
        // A bad option is an error, not a silent default.
        Case { prog: "bench_latency", np: 2, args: "--no-such-option", expect: vec![], may_skip: false, ok: false },
    ]
}

#[test]
fn bench_suite_smoke() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let srcdir = root.join("ctests/bench");
    let s = setup();
    for (prog, src) in PROGRAMS {
        compile(&s, &srcdir, prog, src);
    }
    let mut failures = Vec::new();
    for c in cases() {
        let mut argv = s.mpiexec.clone();
        argv.extend(["-n".to_string(), c.np.to_string(), s.bindir.join(c.prog).display().to_string()]);
        argv.extend(words(c.args));
        let out = run(&argv, 120.0);
        let what = format!("{} (np {}): {}", c.prog, c.np, argv.join(" "));
        let success = out.status.is_some_and(|st| st.success());
        let report = |msg: String| format!("{what}: {msg}\n--- stdout\n{}--- stderr\n{}", out.stdout, out.stderr);
        if out.timed_out {
            failures.push(report("timed out".into()));
            continue;
        }
        if success != c.ok {
            failures.push(report(format!(
                "exit status {:?}, expected {}",
                out.status,
                if c.ok { "0" } else { "nonzero" }
            )));
            continue;
        }
        if out.stderr.contains("CHECK FAILED") {
            failures.push(report("a data check failed".into()));
            continue;
        }
        if !c.ok {
            continue;
        }
        let recs = match parse(&out.stdout, s.oxmpi, c.np) {
            Ok(r) => r,
            Err(e) => {
                failures.push(report(e));
                continue;
            }
        };
        if c.may_skip && recs.is_empty() && out.stdout.contains("# SKIPPED") {
            eprintln!("{what}: skipped by the program (derived datatypes unsupported)");
            continue;
        }
        let got: BTreeSet<(String, u64)> = recs.iter().map(|r| (r.bench.clone(), r.size)).collect();
        let mut missing = Vec::new();
        for (bench, szs) in &c.expect {
            for sz in szs {
                if !got.contains(&(bench.clone(), *sz)) {
                    missing.push(format!("{bench}@{sz}"));
                }
            }
        }
        let expected: usize = c.expect.iter().map(|(_, v)| v.len()).sum();
        if !missing.is_empty() {
            failures.push(report(format!("missing records: {missing:?}")));
        } else if recs.len() != expected {
            failures.push(report(format!("{} records, expected {expected}", recs.len())));
        }
    }
    assert!(failures.is_empty(), "{} benchmark run(s) failed:\n{}", failures.len(), failures.join("\n"));
}

//! End-to-end tests of `mpiexec` and of the PMI client.
//!
//! Ranks that need the PMI client are this test binary itself, re-executed with
//! `OXMPI_TEST_ROLE` set: the `rank_role` test then plays the role instead of testing
//! (see [`rank_role`]). Plain ranks are `sh -c` scripts.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use oxmpi::pmi::Pmi;

const MPIEXEC: &str = env!("CARGO_BIN_EXE_mpiexec");
const ROLE_VAR: &str = "OXMPI_TEST_ROLE";

/// The 2-second promptness bound, with slack for a loaded 2-core CI machine.
const PROMPT: Duration = Duration::from_secs(5);

fn mpiexec(args: &[&str]) -> Command {
    let mut command = Command::new(MPIEXEC);
    command.args(args).stdin(Stdio::null());
    command
}

fn run(command: &mut Command) -> (Output, Duration) {
    let start = Instant::now();
    let output = command.output().expect("mpiexec runs");
    (output, start.elapsed())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Arguments that make a rank re-execute this test binary in `role`.
fn role_args(role: &str) -> Vec<String> {
    let exe = std::env::current_exe().unwrap();
    vec![
        "-genv".into(),
        ROLE_VAR.into(),
        role.into(),
        exe.to_string_lossy().into_owned(),
        "rank_role".into(),
        "--exact".into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
        "-q".into(),
    ]
}

fn with_role<'a>(head: &[&'a str], role_args: &'a [String]) -> Vec<&'a str> {
    head.iter().copied().chain(role_args.iter().map(String::as_str)).collect()
}

// ----------------------------------------------------------------------------------------
// The rank side.

/// Not a test when run normally; as a rank (`OXMPI_TEST_ROLE` set) it plays that role.
#[test]
fn rank_role() {
    let Ok(role) = std::env::var(ROLE_VAR) else {
        return;
    };
    // A rank that ends (status 0) before it ever speaks PMI; the others start PMI at once or
    // after it is gone.
    if let Some(delay) = role.strip_prefix("exit_before_init:") {
        if std::env::var("PMI_RANK").unwrap() == "1" {
            std::process::exit(0);
        }
        std::thread::sleep(Duration::from_millis(delay.parse().unwrap()));
    }
    let mut pmi = Pmi::init().expect("PMI init");
    let (rank, size) = (pmi.rank(), pmi.size());
    match role.as_str() {
        "pmi_check" => pmi_check(&mut pmi),
        "universe" => {
            let universe = pmi.universe_size().unwrap();
            println!("UNIVERSE rank={rank} {universe:?}");
        }
        "abort" => {
            pmi.fence().unwrap();
            if rank == 1 {
                pmi.abort(5, "test abort message");
            }
            std::thread::sleep(Duration::from_secs(30));
        }
        "abort_code" => {
            pmi.fence().unwrap();
            if rank == size - 1 {
                let code = std::env::var("OXMPI_TEST_ABORT_CODE").unwrap().parse().unwrap();
                pmi.abort(code, "test abort with a code");
            }
            std::thread::sleep(Duration::from_secs(30));
        }
        "no_finalize" => {
            pmi.fence().unwrap();
            if rank == 2 {
                std::process::exit(0);
            }
            std::thread::sleep(Duration::from_secs(30));
        }
        "finalize_then_exit" => {
            pmi.fence().unwrap();
            pmi.finalize().unwrap();
            std::process::exit(if rank == size - 1 { 4 } else { 0 });
        }
        "shm" => {
            let path = format!("/dev/shm/{}rank{rank}", oxmpi::pmi::shm_prefix(pmi.kvsname()));
            std::fs::write(&path, b"test").unwrap();
            println!("SHMFILE {path} PID {}", std::process::id());
            std::io::stdout().flush().unwrap();
            std::thread::sleep(Duration::from_secs(30));
        }
        role if role.starts_with("exit_before_init:") => {
            pmi.fence().unwrap();
        }
        other => panic!("unknown role {other}"),
    }
    pmi.finalize().unwrap();
}

fn pmi_check(pmi: &mut Pmi) {
    let (rank, size) = (pmi.rank(), pmi.size());
    let expected_size: usize = std::env::var("OXMPI_TEST_SIZE").unwrap().parse().unwrap();
    assert_eq!(size, expected_size);
    assert!(!pmi.is_singleton());
    let appnum = std::env::var("OXMPI_TEST_APPNUM").map_or(0, |v| v.parse().unwrap());
    assert_eq!(pmi.appnum(), appnum);
    let kvsname = pmi.kvsname().to_string();
    assert!(!kvsname.is_empty() && kvsname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    // A long value crosses the server's value limit (1024 for Hydra and us) and is split.
    let long_value = |r: usize| format!("{r}:").repeat(900) + "end";
    pmi.put(&format!("card{rank}"), &format!("shm=/oxmpi-{kvsname}-{rank},tcp=127.0.0.1:{}", 4000 + rank)).unwrap();
    pmi.put(&format!("long{rank}"), &long_value(rank)).unwrap();
    assert!(pmi.put("bad key", "v").is_err());
    assert!(pmi.put("k", "a b").is_err());
    pmi.fence().unwrap();
    for peer in 0..size {
        let card = pmi.get(peer, &format!("card{peer}")).unwrap();
        assert_eq!(card, Some(format!("shm=/oxmpi-{kvsname}-{peer},tcp=127.0.0.1:{}", 4000 + peer)));
        assert_eq!(pmi.get(peer, &format!("long{peer}")).unwrap(), Some(long_value(peer)));
    }
    assert_eq!(pmi.get(rank, "no_such_key").unwrap(), None);
    // `OXMPI_TEST_NODES`: the expected node of each rank, `0,1,0,1` (default: all on 0).
    let nodes = std::env::var("OXMPI_TEST_NODES")
        .map_or(vec![0; size], |v| v.split(',').map(|n| n.parse::<usize>().unwrap()).collect());
    assert_eq!(pmi.node_ids().unwrap(), nodes);
    // A second round: fences are reusable.
    pmi.put(&format!("round2_{rank}"), "x").unwrap();
    pmi.fence().unwrap();
    assert_eq!(pmi.get((rank + 1) % size, &format!("round2_{}", (rank + 1) % size)).unwrap().as_deref(), Some("x"));
    println!("PMICHECK rank={rank} size={size} kvs={kvsname} ok");
}

// ----------------------------------------------------------------------------------------
// PMI end to end.

fn check_pmi_job(launcher: &str) {
    let roles = role_args("pmi_check");
    let (output, _) = run(Command::new(launcher)
        .args(with_role(&["-n", "4", "-genv", "OXMPI_TEST_SIZE", "4"], &roles))
        .stdin(Stdio::null()));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{launcher}: {:?}\n{stdout}\n{}", output.status, text(&output.stderr));
    for rank in 0..4 {
        assert!(stdout.contains(&format!("PMICHECK rank={rank} size=4 ")), "{launcher}: rank {rank}\n{stdout}");
    }
}

#[test]
fn pmi_put_fence_get_under_our_mpiexec() {
    check_pmi_job(MPIEXEC);
}

fn hydra() -> Option<&'static str> {
    let found = Command::new("mpiexec.mpich").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("note: mpiexec.mpich (Hydra) not found; skipping the Hydra check");
    }
    found.then_some("mpiexec.mpich")
}

#[test]
fn pmi_put_fence_get_under_hydra() {
    if let Some(hydra) = hydra() {
        check_pmi_job(hydra);
    }
}

/// MPI_UNIVERSE_SIZE as each rank of a 2-rank job reads it from `launcher` with `options`.
fn universe_seen(launcher: &str, options: &[&str]) -> Vec<String> {
    let roles = role_args("universe");
    let head: Vec<&str> = options.iter().copied().chain(["-n", "2"]).collect();
    let (output, _) = run(Command::new(launcher).args(with_role(&head, &roles)).stdin(Stdio::null()));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{launcher} {options:?}: {:?}\n{stdout}\n{}", output.status, text(&output.stderr));
    // Hydra forwards each rank's output as it reads it, not line by line: another rank's
    // bytes (libtest's progress dot) may precede a line on the same line.
    let mut seen: Vec<String> =
        stdout.lines().filter_map(|l| l.find("UNIVERSE").map(|at| l[at..].to_string())).collect();
    seen.sort();
    seen
}

#[test]
fn universe_size_under_our_mpiexec() {
    let both = |value: &str| vec![format!("UNIVERSE rank=0 {value}"), format!("UNIVERSE rank=1 {value}")];
    // On this machine alone, unset (as Hydra): any number of processes can be spawned.
    assert_eq!(universe_seen(MPIEXEC, &[]), both("None"));
    assert_eq!(universe_seen(MPIEXEC, &["-usize", "7"]), both("Some(7)"));
    // The hosts' slots (this machine's names: ranks still forked by mpiexec).
    assert_eq!(universe_seen(MPIEXEC, &["-hosts", "localhost:3,localhost:4"]), both("Some(7)"));
    assert_eq!(universe_seen(MPIEXEC, &["-hosts", "localhost,localhost", "-ppn", "3"]), both("Some(6)"));
    // Never fewer than the ranks started.
    assert_eq!(universe_seen(MPIEXEC, &["-hosts", "localhost:1"]), both("Some(2)"));
    let refused = mpiexec(&["-usize", "0", "true"]).output().unwrap();
    assert!(!refused.status.success(), "-usize 0 is refused");
}

#[test]
fn universe_size_under_hydra() {
    let Some(hydra) = hydra() else { return };
    let both = |value: &str| vec![format!("UNIVERSE rank=0 {value}"), format!("UNIVERSE rank=1 {value}")];
    assert_eq!(universe_seen(hydra, &[]), both("None"));
    assert_eq!(universe_seen(hydra, &["-usize", "5"]), both("Some(5)"));
}

#[test]
fn pmi_singleton() {
    // This process has no PMI environment unless a launcher started the whole test run.
    if std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some() {
        return;
    }
    let mut pmi = Pmi::init().unwrap();
    assert!(pmi.is_singleton());
    assert_eq!((pmi.rank(), pmi.size()), (0, 1));
    assert!(pmi.kvsname().starts_with("singleton_"));
    pmi.put("k", "v").unwrap();
    pmi.fence().unwrap();
    assert_eq!(pmi.get(0, "k").unwrap().as_deref(), Some("v"));
    assert_eq!(pmi.get(0, "other").unwrap(), None);
    assert_eq!(pmi.node_ids().unwrap(), vec![0]);
    pmi.finalize().unwrap();
}

#[test]
fn abort_ends_job_with_its_code() {
    let roles = role_args("abort");
    let (output, elapsed) = run(&mut mpiexec(&with_role(&["-n", "3"], &roles)));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("mpiexec: rank 1 aborted the job (code 5): test abort message"), "{stderr}");
    assert!(elapsed < PROMPT, "took {elapsed:?}");
}

#[test]
fn abort_codes_never_give_exit_status_0() {
    let roles = role_args("abort_code");
    for (np, code, status) in
        [("2", "-1", 255), ("8", "-1", 255), ("2", "256", 1), ("2", "0", 1), ("3", "-256", 1), ("2", "511", 255)]
    {
        let head = ["-n", np, "-genv", "OXMPI_TEST_ABORT_CODE", code];
        let (output, elapsed) = run(&mut mpiexec(&with_role(&head, &roles)));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(status), "np {np} code {code}: {stderr}");
        assert!(stderr.contains("aborted the job"), "{stderr}");
        assert!(elapsed < PROMPT, "took {elapsed:?}");
    }
}

#[test]
fn abort_under_hydra() {
    if let Some(hydra) = hydra() {
        let roles = role_args("abort");
        let (output, elapsed) = run(Command::new(hydra).args(with_role(&["-n", "3"], &roles)).stdin(Stdio::null()));
        assert_eq!(output.status.code(), Some(5), "{}", text(&output.stderr));
        assert!(elapsed < PROMPT * 2, "took {elapsed:?}");
    }
}

#[test]
fn rank_exiting_without_finalize_ends_job() {
    let roles = role_args("no_finalize");
    let (output, elapsed) = run(&mut mpiexec(&with_role(&["-n", "4"], &roles)));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("rank 2 (pid "), "{stderr}");
    assert!(stderr.contains("exited with code 0 without calling MPI_Finalize"), "{stderr}");
    assert!(elapsed < PROMPT, "took {elapsed:?}");
}

#[test]
fn rank_exiting_before_pmi_init_ends_job() {
    for (np, delay) in [("2", "0"), ("2", "300"), ("8", "0"), ("8", "300")] {
        let roles = role_args(&format!("exit_before_init:{delay}"));
        let (output, elapsed) = run(&mut mpiexec(&with_role(&["-n", np], &roles)));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "np {np} delay {delay}: {stderr}");
        assert!(stderr.contains("mpiexec: rank 1 (pid "), "{stderr}");
        assert!(stderr.contains("exited with code 0 without calling MPI_Init"), "{stderr}");
        assert!(elapsed < PROMPT, "np {np} delay {delay}: took {elapsed:?}");
    }
}

#[test]
fn programs_without_mpi_run_to_their_end() {
    // One rank ends at once, another later: no rank uses MPI, so neither is an error.
    let script = "if [ $PMI_RANK = 1 ]; then exit 0; fi; sleep 0.3; echo done $PMI_RANK";
    let (output, _) = run(&mut mpiexec(&["-n", "3", "sh", "-c", script]));
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).lines().count(), 2);
    assert!(!text(&output.stderr).contains("mpiexec:"), "{}", text(&output.stderr));
}

#[test]
fn counts_the_machine_cannot_hold_are_refused_before_starting() {
    let marker = std::env::temp_dir().join(format!("robust-count-{}", std::process::id()));
    let touch = format!("touch {}", marker.display());
    let (output, elapsed) = run(&mut mpiexec(&["-n", "99999999999", "sh", "-c", &touch]));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("mpiexec: cannot start 99999999999 ranks: "), "{stderr}");
    assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");
    // More descriptors than a hard limit of 64 allows.
    let line = format!("ulimit -n 64 && exec {MPIEXEC} -n 100 sh -c '{touch}'");
    let output = Command::new("sh").args(["-c", &line]).stdin(Stdio::null()).output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot start 100 ranks") && stderr.contains("ulimit -n"), "{stderr}");
    assert!(!marker.exists(), "a refused job started a rank");
    // A count that fits still runs.
    let (output, _) = run(&mut mpiexec(&["-n", "8", "true"]));
    assert!(output.status.success(), "{}", text(&output.stderr));
}

#[test]
fn nonzero_exit_after_finalize_propagates_without_killing() {
    let roles = role_args("finalize_then_exit");
    let (output, _) = run(&mut mpiexec(&with_role(&["-n", "3"], &roles)));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(!stderr.contains("mpiexec:"), "{stderr}");
}

// ----------------------------------------------------------------------------------------
// Launcher behaviour with plain programs.

#[test]
fn forwards_stdout_and_stderr() {
    let (output, _) =
        run(&mut mpiexec(&["-n", "3", "sh", "-c", "echo out $PMI_RANK of $PMI_SIZE; echo err $PMI_RANK >&2"]));
    assert!(output.status.success());
    let mut stdout: Vec<String> = text(&output.stdout).lines().map(String::from).collect();
    stdout.sort();
    assert_eq!(stdout, ["out 0 of 3", "out 1 of 3", "out 2 of 3"]);
    let mut stderr: Vec<String> = text(&output.stderr).lines().map(String::from).collect();
    stderr.sort();
    assert_eq!(stderr, ["err 0", "err 1", "err 2"]);
}

#[test]
fn tags_output_lines() {
    for flag in ["-l", "--tag-output"] {
        let (output, _) = run(&mut mpiexec(&["-n", "2", flag, "sh", "-c", "echo a; echo b; printf tail; echo e >&2"]));
        assert!(output.status.success());
        let stdout = text(&output.stdout);
        for rank in 0..2 {
            for line in ["a", "b", "tail"] {
                assert!(stdout.lines().any(|l| l == format!("[{rank}] {line}")), "{stdout}");
            }
            assert!(text(&output.stderr).lines().any(|l| l == format!("[{rank}] e")));
        }
    }
}

#[test]
fn does_not_interleave_partial_lines() {
    let script = "if [ $PMI_RANK = 0 ]; then printf AAA; sleep 0.3; printf 'BBB\\n'; \
                  else sleep 0.1; echo CCC$PMI_RANK; fi";
    let (output, _) = run(&mut mpiexec(&["-n", "3", "sh", "-c", script]));
    let mut stdout: Vec<String> = text(&output.stdout).lines().map(String::from).collect();
    stdout.sort();
    assert_eq!(stdout, ["AAABBB", "CCC1", "CCC2"]);
}

/// Each rank's pid, session and process group, as its `sh` reads them from /proc.
/// `sessions`: the value of OXMPI_RANK_SESSIONS for mpiexec, if any.
fn rank_ids(ranks: usize, sessions: Option<&str>) -> Vec<[i64; 3]> {
    let script = "set -- $(cut -d' ' -f5,6 /proc/$$/stat); echo $$ $2 $1";
    let mut command = mpiexec(&["-n", &ranks.to_string(), "sh", "-c", script]);
    command.env_remove("OXMPI_RANK_SESSIONS");
    if let Some(v) = sessions {
        command.env("OXMPI_RANK_SESSIONS", v);
    }
    let (output, _) = run(&mut command);
    assert!(output.status.success());
    let ids: Vec<[i64; 3]> = text(&output.stdout)
        .lines()
        .map(|l| {
            let v: Vec<i64> = l.split(' ').map(|w| w.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect();
    assert_eq!(ids.len(), ranks);
    ids
}

/// Ranks that each have a CPU get sessions of their own (an autogroup CPU share each); ranks
/// that outnumber the CPUs share mpiexec's session, so a yield hands the CPU to another rank.
/// Either way each rank leads a process group, which mpiexec signals. OXMPI_RANK_SESSIONS
/// decides instead when set.
#[test]
fn ranks_share_a_session_only_when_they_outnumber_cpus() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // SAFETY: getsid(0) only reads this process's session id.
    let ours = unsafe { libc::getsid(0) } as i64;
    for (ranks, sessions, own) in
        [(1, None, true), (cpus + 1, None, false), (1, Some("0"), false), (cpus + 1, Some("1"), true)]
    {
        for [pid, sid, pgid] in rank_ids(ranks, sessions) {
            let expect = if own { (pid, pid) } else { (ours, pid) };
            assert_eq!((sid, pgid), expect, "{ranks} ranks on {cpus} CPUs, OXMPI_RANK_SESSIONS={sessions:?}");
        }
    }
}

#[test]
fn propagates_exit_status() {
    let (output, _) = run(&mut mpiexec(&["-n", "2", "sh", "-c", "exit 3"]));
    assert_eq!(output.status.code(), Some(3));
    let (output, _) = run(&mut mpiexec(&["-n", "2", "true"]));
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stderr.is_empty());
    let (output, _) = run(&mut mpiexec(&["-n", "1", "/nonexistent/program"]));
    assert_eq!(output.status.code(), Some(127));
    assert!(text(&output.stderr).contains("cannot start rank 0"));
}

#[test]
fn passes_env_and_genv() {
    let (output, _) = run(&mut mpiexec(&[
        "-n",
        "2",
        "-env",
        "OXMPI_T_A",
        "one two",
        "-genv",
        "OXMPI_T_B",
        "-x",
        "sh",
        "-c",
        "echo \"$OXMPI_T_A|$OXMPI_T_B\"",
    ]));
    assert!(output.status.success());
    assert_eq!(text(&output.stdout), "one two|-x\none two|-x\n");
}

#[test]
fn stdin_goes_to_rank_zero() {
    let mut child = Command::new(MPIEXEC)
        .args(["-n", "3", "-l", "sh", "-c", "cat; echo done"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"line one\nline two\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let mut stdout: Vec<String> = text(&output.stdout).lines().map(String::from).collect();
    stdout.sort();
    assert_eq!(stdout, ["[0] done", "[0] line one", "[0] line two", "[1] done", "[2] done"]);
}

#[test]
fn timeout_kills_job() {
    let (output, elapsed) = run(&mut mpiexec(&["-n", "2", "--timeout", "0.5", "sleep", "30"]));
    assert_eq!(output.status.code(), Some(124));
    assert!(text(&output.stderr).contains("timed out"));
    assert!(elapsed < PROMPT, "took {elapsed:?}");
}

#[test]
fn rank_killed_by_signal_ends_job_promptly() {
    // Rank 1 kills itself; the others would sleep for 30 s (and ignore SIGTERM for good measure,
    // so the SIGKILL escalation is exercised too).
    let script = "if [ $PMI_RANK = 1 ]; then sleep 0.2; kill -9 $$; fi; trap '' TERM; sleep 30 & wait; wait";
    let (output, elapsed) = run(&mut mpiexec(&["-n", "3", "sh", "-c", script]));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(137), "{stderr}");
    assert!(stderr.contains("mpiexec: rank 1 (pid "), "{stderr}");
    assert!(stderr.contains("killed by signal 9 (Killed)"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(elapsed < PROMPT, "took {elapsed:?}");
}

#[test]
fn early_exit_with_error_kills_others() {
    let script = "if [ $PMI_RANK = 2 ]; then exit 3; fi; sleep 30";
    let (output, elapsed) = run(&mut mpiexec(&["-n", "3", "sh", "-c", script]));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3));
    assert!(
        stderr.contains("rank 2 (pid ") && stderr.contains("exited with code 3 without calling MPI_Finalize"),
        "{stderr}"
    );
    assert!(elapsed < PROMPT, "took {elapsed:?}");
}

#[test]
fn disable_auto_cleanup_lets_the_others_finish() {
    // Rank 2 fails at once (an exit code, or SIGKILL); the others finish 0.5 s later and say
    // so. The job's status is still the failure's.
    for (fail, status, line) in [
        ("exit 3", 3, "exited with code 3 without calling MPI_Finalize"),
        ("kill -9 $$", 137, "killed by signal 9 (Killed)"),
    ] {
        let script = format!("if [ $PMI_RANK = 2 ]; then {fail}; fi; sleep 0.5; echo done $PMI_RANK");
        let (output, _) = run(&mut mpiexec(&["-disable-auto-cleanup", "-n", "3", "sh", "-c", &script]));
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(status), "{fail}: {stderr}");
        let mut finished: Vec<&str> = stdout.lines().collect();
        finished.sort();
        assert_eq!(finished, ["done 0", "done 1"], "{fail}: {stderr}");
        assert!(stderr.contains("mpiexec: rank 2 (pid ") && stderr.contains(line), "{fail}: {stderr}");
        assert!(stderr.contains("the other ranks go on (-disable-auto-cleanup)"), "{fail}: {stderr}");
    }
    // MPI_Abort still ends the job at once.
    let roles = role_args("abort");
    let (output, elapsed) = run(&mut mpiexec(&with_role(&["-disable-auto-cleanup", "-n", "3"], &roles)));
    assert_eq!(output.status.code(), Some(5), "{}", text(&output.stderr));
    assert!(elapsed < PROMPT, "took {elapsed:?}");
}

#[test]
fn bad_usage_exits_2() {
    for args in [&["--bogus", "prog"][..], &[][..], &["-n", "x", "prog"][..]] {
        let (output, _) = run(&mut mpiexec(args));
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(text(&output.stderr).starts_with("mpiexec: "));
    }
    let (output, _) = run(&mut mpiexec(&["--help"]));
    assert!(output.status.success() && text(&output.stdout).contains("usage"));
}

#[test]
fn refused_options_name_themselves_and_run_nothing() {
    let marker = std::env::temp_dir().join(format!("robust-refused-{}", std::process::id()));
    let touch = format!("touch {}", marker.display());
    for head in [
        &["-hostfile", "/dev/null"][..],
        &["-f", "/dev/null"][..],
        &["-machinefile", "/nonexistent/hosts"][..],
        &["-ppn", "0"][..],
        &["-hosts", "a:x"][..],
        &["-launcher", "pbs"][..],
        &["-configfile"][..],
        &["-nolocal"][..],
    ] {
        let mut all: Vec<&str> = head.to_vec();
        all.extend(["sh", "-c", &touch]);
        let (output, _) = run(&mut mpiexec(&all));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{head:?}: {stderr}");
        assert!(stderr.contains(&format!("'{}'", head[0])), "{head:?}: {stderr}");
        assert!(!text(&output.stdout).contains("usage"), "{head:?}");
        assert!(!marker.exists(), "{head:?} ran the program");
    }
    let (output, _) = run(&mut mpiexec(&["-n", "2", "sh", "-c", &touch, ":", "-n", "1"]));
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("no program after ':'"), "{}", text(&output.stderr));
    assert!(!marker.exists(), "a bad MPMD line ran the program");
}

#[test]
fn mpmd_parts_form_one_job() {
    let (output, _) = run(&mut mpiexec(&[
        "-genv",
        "G",
        "g",
        "-n",
        "2",
        "-env",
        "A",
        "a",
        "sh",
        "-c",
        "echo first $PMI_RANK/$PMI_SIZE $G$A$B",
        ":",
        "-n",
        "1",
        "-env",
        "B",
        "b",
        "sh",
        "-c",
        "echo second $PMI_RANK/$PMI_SIZE $G$A$B",
    ]));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut lines: Vec<String> = text(&output.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, ["first 0/3 ga", "first 1/3 ga", "second 2/3 gb"]);
    // Every rank of both programs in one PMI job: the put/fence/get check over 3 ranks.
    let args = role_args("pmi_check");
    let mut all = with_role(&["-genv", "OXMPI_TEST_SIZE", "3", "-n", "2", "-env", "OXMPI_TEST_APPNUM", "0"], &args);
    all.push(":");
    all.extend(with_role(&["-n", "1", "-env", "OXMPI_TEST_APPNUM", "1"], &args));
    let (output, _) = run(&mut mpiexec(&all));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", text(&output.stderr));
    for rank in 0..3 {
        assert!(stdout.contains(&format!("PMICHECK rank={rank} size=3 ")), "rank {rank}\n{stdout}");
    }
}

#[test]
fn configfile_runs_its_lines_as_one_job() {
    let path = std::env::temp_dir().join(format!("oxmpi-launcher-configfile-{}", std::process::id()));
    std::fs::write(&path, "-n 2 echo part-one\n# comment\n-n 1 echo part-two\n").unwrap();
    let (output, _) = run(&mut mpiexec(&["-configfile", path.to_str().unwrap()]));
    std::fs::remove_file(&path).unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert_eq!(stdout.lines().filter(|l| *l == "part-one").count(), 2, "{stdout}");
    assert_eq!(stdout.lines().filter(|l| *l == "part-two").count(), 1, "{stdout}");
}

#[test]
fn without_n_the_hosts_slots_are_filled() {
    let ranks = |args: &[&str]| {
        let (output, _) = run(&mut mpiexec(args));
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    assert_eq!(ranks(&["-print-rank-map", "-hosts", "localhost:3", "true"]), "(localhost:0,1,2)\n");
    assert_eq!(ranks(&["-print-rank-map", "-hosts", "localhost:3", "-ppn", "2", "true"]), "(localhost:0,1)\n");
    assert_eq!(ranks(&["-print-rank-map", "-hosts", "localhost:3", "-n", "1", "true"]), "(localhost:0)\n");
    // With no hosts, one rank; in MPMD, one per part without -n.
    assert_eq!(ranks(&["sh", "-c", "echo $PMI_RANK"]), "0\n");
    let mpmd = ranks(&["-hosts", "localhost:4", "-n", "2", "sh", "-c", "echo a", ":", "sh", "-c", "echo b"]);
    assert_eq!(mpmd.lines().filter(|l| *l == "b").count(), 1, "{mpmd}");
}

#[test]
fn print_rank_map_and_local_hosts() {
    let (output, _) = run(&mut mpiexec(&["-print-rank-map", "-hosts", "localhost:2", "-n", "3", "true"]));
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "(localhost:0,1,2)\n");
}

#[test]
fn genv_name_equals_value_local_hosts_and_version() {
    let (output, _) = run(&mut mpiexec(&[
        "-hosts",
        "localhost:2",
        "-n",
        "2",
        "-genv",
        "A=1=2",
        "-env",
        "B",
        "x",
        "sh",
        "-c",
        "echo $A$B",
    ]));
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "1=2x\n1=2x\n");
    for flag in ["--version", "-V"] {
        let (output, _) = run(&mut mpiexec(&[flag]));
        assert!(output.status.success() && text(&output.stdout).starts_with("mpiexec (oxmpi) "), "{flag}");
    }
}

#[test]
fn bad_tunables_are_refused_by_name() {
    for (name, value) in [("OXMPI_SHM_SLOTS", "100000"), ("OXMPI_SHM_SLOTS", "0"), ("OXMPI_EAGER_LIMIT", "-5")] {
        let (output, _) = run(mpiexec(&["-n", "2", "true"]).env(name, value));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{name}={value}: {stderr}");
        assert!(stderr.contains(&format!("{name}={value} is not valid")), "{stderr}");
    }
    let info = env!("CARGO_BIN_EXE_oxmpi-info");
    let output = Command::new(info).env("OXMPI_EAGER_LIMIT", "abc").env("OXMPI_CMA", "1").output().unwrap();
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout.contains("OXMPI_EAGER_LIMIT=abc (environment; INVALID"), "{stdout}");
    assert!(stdout.contains("OXMPI_CMA=1 (environment; default 1; 0 or 1)"), "{stdout}");
    let output = Command::new(info).env_remove("OXMPI_EAGER_LIMIT").output().unwrap();
    assert!(output.status.success());
}

#[test]
fn oxmpi_info_says_how_windows_reach_their_targets() {
    let info = env!("CARGO_BIN_EXE_oxmpi-info");
    let line = |envs: &[(&str, &str)]| {
        let output = Command::new(info).envs(envs.iter().copied()).output().unwrap();
        assert!(output.status.success());
        let stdout = text(&output.stdout);
        stdout.lines().find(|l| l.starts_with("one-sided communication: ")).expect(&stdout).to_string()
    };
    let messages = line(&[("OXMPI_CMA", "0"), ("OXMPI_ASYNC_PROGRESS", "1")]);
    assert!(messages.contains("the program's memory on the same node by messages"), "{messages}");
    assert!(messages.contains("progress thread on"), "{messages}");
    let default = line(&[("OXMPI_CMA", "1"), ("OXMPI_ASYNC_PROGRESS", "0")]);
    assert!(default.contains("progress thread off"), "{default}");
}

#[test]
fn oxmpi_info_says_what_the_network_does_with_rma() {
    // libfabric's TCP providers here do RMA, emulated over sockets: reads and rings are off
    // unless asked for, one-sided Put and Get by RDMA on (needs libfabric, as
    // tests/net_transport.rs).
    let info = env!("CARGO_BIN_EXE_oxmpi-info");
    let line = |envs: &[(&str, &str)]| {
        let output = Command::new(info).envs(envs.iter().copied()).output().unwrap();
        assert!(output.status.success());
        let stdout = text(&output.stdout);
        stdout.lines().find(|l| l.starts_with("  RMA ")).expect(&stdout).to_string()
    };
    let default = line(&[]);
    assert!(default.starts_with("  RMA emulated over sockets: rendezvous by RDMA read off by default"), "{default}");
    assert!(default.contains("RDMA eager rings off by default over sockets (OXMPI_NET_EAGER_RDMA=1"), "{default}");
    assert!(default.ends_with("one-sided Put and Get by RDMA on"), "{default}");
    let forced = line(&[("OXMPI_NET_RNDV_READ", "1"), ("OXMPI_NET_EAGER_RDMA", "1"), ("OXMPI_NET_RDMA_RMA", "0")]);
    assert!(forced.contains("read on (OXMPI_NET_RNDV_READ=1)"), "{forced}");
    assert!(forced.contains("rings on (OXMPI_NET_EAGER_RDMA=1)"), "{forced}");
    assert!(forced.ends_with("one-sided Put and Get by RDMA off (OXMPI_NET_RDMA_RMA=0)"), "{forced}");
}

#[test]
fn oxmpi_info_into_a_closed_pipe_ends_quietly() {
    let mut child =
        Command::new(env!("CARGO_BIN_EXE_oxmpi-info")).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert!(!text(&output.stderr).contains("panicked"), "{}", text(&output.stderr));
}

/// Whether `pid` has exited (a zombie waiting for its reaper counts as exited), waiting up
/// to a moment for a process that was just sent SIGKILL.
fn process_gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let gone = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            // The state follows the parenthesised command name.
            Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
        };
        if gone || Instant::now() >= deadline {
            return gone;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn teardown_kills_what_a_failed_rank_left_behind() {
    // Rank 1 starts a process that ignores SIGTERM, then fails: the process must not survive.
    let script = "if [ $PMI_RANK = 1 ]; then (trap '' TERM; exec sleep 31) & echo LEFT $!; sleep 0.2; exit 2; fi; \
                  sleep 30";
    let (output, elapsed) = run(&mut mpiexec(&["-n", "2", "sh", "-c", script]));
    assert_eq!(output.status.code(), Some(2));
    assert!(elapsed < PROMPT, "took {elapsed:?}");
    let stdout = text(&output.stdout);
    let pid: i32 = stdout.trim().strip_prefix("LEFT ").expect(&stdout).parse().unwrap();
    assert!(process_gone(pid), "process {pid} of a failed rank survived the job");
}

/// Starts mpiexec with `options` and 3 ranks of the "shm" role, and reads until every rank
/// reported its /dev/shm file and pid: (mpiexec, files, rank pids).
fn start_shm_ranks(options: &[&str]) -> (std::process::Child, Vec<String>, Vec<i32>) {
    let roles = role_args("shm");
    let mut child = Command::new(MPIEXEC)
        .args(with_role(options, &roles))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut files = Vec::new();
    let mut pids = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let ["SHMFILE", path, "PID", pid] = line.split_whitespace().collect::<Vec<_>>()[..] {
            files.push(path.to_string());
            pids.push(pid.parse::<i32>().unwrap());
            if files.len() == 3 {
                break;
            }
        }
    }
    assert_eq!(files.len(), 3);
    (child, files, pids)
}

fn sigterm_cleans_up(signo: i32) {
    let (child, files, pids) = start_shm_ranks(&["-n", "3", "--timeout", "60"]);
    assert!(files.iter().all(|f| Path::new(f).exists()));
    let start = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signo) };
    let output = child.wait_with_output().unwrap();
    assert!(start.elapsed() < PROMPT, "took {:?}", start.elapsed());
    assert_eq!(output.status.code(), Some(128 + signo), "{}", text(&output.stderr));
    for file in &files {
        assert!(!Path::new(file).exists(), "{file} left behind");
    }
    for pid in pids {
        assert!(process_gone(pid), "rank pid {pid} still running");
    }
}

#[test]
fn sigterm_to_mpiexec_kills_ranks_and_removes_shm_files() {
    sigterm_cleans_up(libc::SIGTERM);
}

#[test]
fn sigint_to_mpiexec_kills_ranks_and_removes_shm_files() {
    sigterm_cleans_up(libc::SIGINT);
}

// ----------------------------------------------------------------------------------------
// Proxies on this machine: `-launcher fork` starts the proxy of every named host here, so
// the path across hosts (proxies, their connection to mpiexec, the hierarchical key
// exchange, failures) runs without other hosts. Ranks of different "hosts" are on
// different nodes of PMI_process_mapping. tests/../scripts/launcher-hosts-tests.sh runs the
// same over real (namespace) hosts.

fn wait_until(what: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + PROMPT;
    while !what() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn check_pmi_over_proxies(head: &[&str], size: usize) {
    let roles = role_args("pmi_check");
    let (output, _) = run(&mut mpiexec(&with_role(head, &roles)));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{head:?}: {:?}\n{stdout}\n{}", output.status, text(&output.stderr));
    for rank in 0..size {
        assert!(stdout.contains(&format!("PMICHECK rank={rank} size={size} ")), "{head:?}: rank {rank}\n{stdout}");
    }
}

#[test]
fn proxies_serve_one_pmi_job() {
    let fork = ["-launcher", "fork"];
    let nodes = |list: &'static str| ["-genv", "OXMPI_TEST_NODES", list];
    // Round-robin, blocks with counts, -ppn.
    check_pmi_over_proxies(
        &[&fork[..], &["-hosts", "a,b", "-n", "4", "-genv", "OXMPI_TEST_SIZE", "4"], &nodes("0,1,0,1")].concat(),
        4,
    );
    check_pmi_over_proxies(
        &[&fork[..], &["-hosts", "a:2,b:1", "-n", "5", "-genv", "OXMPI_TEST_SIZE", "5"], &nodes("0,0,1,0,0")].concat(),
        5,
    );
    check_pmi_over_proxies(
        &[&fork[..], &["-ppn", "2", "-hosts", "a,b", "-n", "4", "-genv", "OXMPI_TEST_SIZE", "4"], &nodes("0,0,1,1")]
            .concat(),
        4,
    );
    // MPMD over two proxies: each program its appnum.
    let roles = role_args("pmi_check");
    let mut all = with_role(
        &[
            "-launcher",
            "fork",
            "-hosts",
            "a,b",
            "-genv",
            "OXMPI_TEST_SIZE",
            "3",
            "-genv",
            "OXMPI_TEST_NODES",
            "0,1,0",
            "-n",
            "2",
            "-env",
            "OXMPI_TEST_APPNUM",
            "0",
        ],
        &roles,
    );
    all.push(":");
    all.extend(with_role(&["-n", "1", "-env", "OXMPI_TEST_APPNUM", "1"], &roles));
    let (output, _) = run(&mut mpiexec(&all));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", text(&output.stderr));
    assert_eq!(stdout.matches("PMICHECK").count(), 3, "{stdout}");
}

#[test]
fn proxies_forward_output_and_exit_status() {
    let script = "echo out $PMI_RANK/$PMI_SIZE $G; echo err $PMI_RANK >&2";
    let (output, _) = run(&mut mpiexec(&[
        "-l",
        "-launcher",
        "fork",
        "-hosts",
        "a,b",
        "-n",
        "3",
        "-genv",
        "G",
        "g",
        "sh",
        "-c",
        script,
    ]));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut lines: Vec<String> = text(&output.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, ["[0] out 0/3 g", "[1] out 1/3 g", "[2] out 2/3 g"]);
    let mut lines: Vec<String> = text(&output.stderr).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, ["[0] err 0", "[1] err 1", "[2] err 2"]);
    let (output, elapsed) = run(&mut mpiexec(&[
        "-launcher",
        "fork",
        "-hosts",
        "a,b",
        "-n",
        "3",
        "sh",
        "-c",
        "[ $PMI_RANK = 1 ] && exit 3; sleep 30",
    ]));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("rank 1 (pid ") && stderr.contains(" on b) exited with code 3"), "{stderr}");
    assert!(elapsed < PROMPT, "took {elapsed:?}");
    let (output, elapsed) =
        run(&mut mpiexec(&["-launcher", "fork", "-hosts", "a,b", "-n", "2", "--timeout", "0.5", "sleep", "30"]));
    assert_eq!(output.status.code(), Some(124), "{}", text(&output.stderr));
    assert!(elapsed < PROMPT, "took {elapsed:?}");
    let (output, _) = run(&mut mpiexec(&["-launcher", "fork", "-hosts", "a,b", "-n", "2", "./no-such-program"]));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(127), "{stderr}");
    assert!(stderr.contains("on host a: cannot start rank 0 (./no-such-program): "), "{stderr}");
}

#[test]
fn a_rank_killed_under_a_proxy_ends_the_job_promptly() {
    let script = "if [ $PMI_RANK = 1 ]; then sleep 0.2; kill -9 $$; fi; trap '' TERM; sleep 30 & wait; wait";
    let (output, elapsed) = run(&mut mpiexec(&["-launcher", "fork", "-hosts", "a,b", "-n", "4", "sh", "-c", script]));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(137), "{stderr}");
    assert!(
        stderr.contains("mpiexec: rank 1 (pid ") && stderr.contains(" on b) killed by signal 9 (Killed)"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(elapsed < PROMPT, "took {elapsed:?}");
}

#[test]
fn a_killed_proxy_ends_the_job_promptly() {
    // The rank's parent is its proxy.
    let script = "if [ $PMI_RANK = 1 ]; then sleep 0.3; kill -9 $PPID; fi; sleep 30";
    let (output, elapsed) = run(&mut mpiexec(&["-launcher", "fork", "-hosts", "a,b", "-n", "4", "sh", "-c", script]));
    let stderr = text(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    for rank in [1, 3] {
        assert!(stderr.contains(&format!("rank {rank} (pid ")), "{stderr}");
    }
    assert!(stderr.contains(" on b) lost: the proxy on b ended"), "{stderr}");
    assert!(elapsed < PROMPT, "took {elapsed:?}");
}

#[test]
fn proxies_kill_their_ranks_when_mpiexec_is_killed() {
    let (mut child, files, pids) =
        start_shm_ranks(&["-launcher", "fork", "-hosts", "a,b", "-n", "3", "--timeout", "60"]);
    child.kill().unwrap();
    child.wait().unwrap();
    for pid in pids {
        assert!(process_gone(pid), "rank pid {pid} still running after mpiexec was killed");
    }
    for file in &files {
        assert!(wait_until(|| !Path::new(file).exists()), "{file} left behind");
    }
}

//! One job: start the ranks, serve PMI-1 to them, forward their output, watch how they end.
//!
//! Everything runs in one thread around poll(2): the PMI sockets, the output pipes and the
//! signal self-pipe are its events; the kill escalation, `--timeout` and the final output drain
//! are its timers. Only stdin forwarding has its own thread, because writes to rank 0 may block.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxmpi::pmi::wire::{self, Line};

use crate::options::Options;
use crate::output::{OutputStream, ReadResult, Sink};
use crate::signals::{self, SignalPipe};

/// Time between the polite signal and SIGKILL when the job is torn down.
const KILL_GRACE: Duration = Duration::from_millis(500);
/// How long to keep forwarding output after every rank has ended (a background process of a
/// rank may hold its pipes open forever).
const DRAIN_GRACE_NORMAL: Duration = Duration::from_secs(1);
const DRAIN_GRACE_FAILED: Duration = Duration::from_millis(200);
/// A rank's session is still signalled at teardown if the rank ended less than this ago.
const RECENTLY_ENDED: Duration = Duration::from_secs(2);
/// Limits announced to clients; the same as Hydra's so programs behave alike under both.
const KVSNAME_MAX: usize = 256;
const KEYLEN_MAX: usize = 64;
const VALLEN_MAX: usize = 1024;

/// How a rank process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Exited(i32),
    Signaled(i32),
}

impl Ending {
    fn exit_code(self) -> i32 {
        match self {
            Ending::Exited(code) => code,
            Ending::Signaled(signo) => 128 + signo,
        }
    }
}

/// A rank's PMI connection: the socket and bytes received that do not yet end a line.
struct PmiConnection {
    socket: UnixStream,
    pending: Vec<u8>,
}

struct Rank {
    pid: i32,
    ending: Option<Ending>,
    ended_at: Option<Instant>,
    pmi: Option<PmiConnection>,
    pmi_initialized: bool,
    finalized: bool,
    in_barrier: bool,
    stdout: Option<OutputStream>,
    stderr: Option<OutputStream>,
}

/// Why the job is being torn down (the first cause wins and sets the exit status).
struct Shutdown {
    exit_code: i32,
    kill_at: Instant,
    killed: bool,
    /// Ranks whose sessions were signalled at the start: SIGKILL goes to all of them, since a
    /// rank may die at once while a process it started ignores the polite signal.
    signalled: Vec<usize>,
}

pub struct Job {
    options: Options,
    /// The program index (MPI_APPNUM) of each rank.
    app_of_rank: Vec<usize>,
    size: usize,
    kvsname: String,
    ranks: Vec<Rank>,
    kvs: HashMap<String, String>,
    signals: SignalPipe,
    timeout_at: Option<Instant>,
    shutdown: Option<Shutdown>,
    /// Set once every rank has been reaped: forward output until then, no longer.
    drain_until: Option<Instant>,
}

fn report(message: &str) {
    let _ = writeln!(io::stderr().lock(), "mpiexec: {message}");
}

/// Whether each rank starts in a session of its own. With the kernel's autogroup scheduling
/// (on by default) a session's processes share one CPU share, so ranks left in the caller's
/// session would get half a busy machine between them (DESIGN.md §5): when every rank has a
/// CPU, each gets a session. When ranks outnumber CPUs they stay in mpiexec's session
/// instead, as Open MPI's do: waiting ranks then hand their CPU to each other with
/// sched_yield, which runs only tasks of the yielder's own autogroup (across sessions it
/// returns at once, and a waiter can only sleep and pay a wake-up). 8 ranks on 2 busy cores:
/// barrier 570 -> 28 µs (docs/perf-r6-wait.md). `OXMPI_RANK_SESSIONS` (1 or 0) decides
/// instead.
fn rank_sessions(ranks: usize) -> bool {
    match oxmpi::config::usize_var(oxmpi::config::RANK_SESSIONS) {
        Some(n) => n != 0,
        None => ranks <= std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// Signals a rank's whole process group (it leads one: its own session, or a group in
/// mpiexec's, see `rank_sessions`) and, while it has
/// not been reaped (so its pid is still its own), the rank itself in case it left the group.
fn signal_rank(rank: &Rank, signo: i32) {
    // SAFETY: kill(2) on our child's process group / our unreaped child; ESRCH is harmless.
    unsafe {
        libc::kill(-rank.pid, signo);
        if rank.ending.is_none() {
            libc::kill(rank.pid, signo);
        }
    }
}

/// Removes `/dev/shm/oxmpi-<kvsname>-*`, the job's shared-memory files.
pub fn remove_shm_files(kvsname: &str) {
    let prefix = oxmpi::pmi::shm_prefix(kvsname);
    let Ok(entries) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        if let Err(e) = std::fs::remove_file(entry.path()) {
            log::warn!("cannot remove {}: {e}", entry.path().display());
        }
    }
}

impl Job {
    pub fn new(options: Options, process_mapping: String, signals: SignalPipe) -> Job {
        // Filename-safe and free of '-', so `oxmpi-<kvsname>-` is an unambiguous prefix.
        let kvsname = format!("oxmpi{}_{}", std::process::id(), &oxmpi::pmi::random_hex()[..12]);
        debug_assert_eq!(oxmpi::pmi::sanitize_kvsname(&kvsname), kvsname);
        let mut kvs = HashMap::new();
        kvs.insert("PMI_process_mapping".to_string(), process_mapping);
        let timeout_at = options.timeout.map(|t| Instant::now() + t);
        let app_of_rank = options.app_of_rank();
        let size = app_of_rank.len();
        Job {
            options,
            app_of_rank,
            size,
            kvsname,
            ranks: Vec::new(),
            kvs,
            signals,
            timeout_at,
            shutdown: None,
            drain_until: None,
        }
    }

    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Runs the job to its end and returns mpiexec's exit status.
    pub fn run(mut self) -> i32 {
        for index in 0..self.size {
            if let Err(error) = self.spawn_rank(index) {
                let program = self.options.apps[self.app_of_rank[index]].program.to_string_lossy().into_owned();
                report(&format!("cannot start rank {index} ({program}): {error}"));
                let code = match error.kind() {
                    io::ErrorKind::NotFound => 127,
                    _ => 126,
                };
                self.begin_shutdown(code, libc::SIGTERM);
                break;
            }
        }
        while !self.finished() {
            self.wait_for_events();
        }
        // Every rank is gone, but what they started in their sessions may not be.
        if self.shutdown.as_ref().is_some_and(|s| !s.killed) {
            self.kill_now();
        }
        remove_shm_files(&self.kvsname);
        let _ = io::stdout().lock().flush();
        self.exit_code()
    }

    fn exit_code(&self) -> i32 {
        if let Some(shutdown) = &self.shutdown {
            return shutdown.exit_code;
        }
        self.ranks.iter().filter_map(|r| r.ending).map(Ending::exit_code).max().unwrap_or(0)
    }

    fn spawn_rank(&mut self, index: usize) -> io::Result<()> {
        let (server_end, rank_end) = UnixStream::pair()?;
        let rank_fd = rank_end.as_raw_fd();
        let app = self.app_of_rank[index];
        let mut command = Command::new(&self.options.apps[app].program);
        command
            .args(&self.options.apps[app].args)
            .env_remove("PMI_PORT")
            .env_remove("PMI_ID")
            .env("PMI_FD", rank_fd.to_string())
            .env("PMI_RANK", index.to_string())
            .env("PMI_SIZE", self.size.to_string())
            .env("PMI_SPAWNED", "0")
            .envs(self.options.env_of(app))
            .stdin(if index == 0 { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: `getpid` is async-signal-safe; read here, before the fork.
        let mpiexec_pid = unsafe { libc::getpid() };
        let own_session = rank_sessions(self.size);
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe system calls (setsid or setpgid, prctl, getppid, fcntl); it
        // allocates nothing except on the error path, where the child is about to fail anyway.
        unsafe {
            command.pre_exec(move || {
                // Own session (see `rank_sessions`) or own process group in ours: either way
                // mpiexec can signal the rank with everything it starts as one group.
                if (if own_session { libc::setsid() } else { libc::setpgid(0, 0) }) < 0 {
                    return Err(io::Error::last_os_error());
                }
                // If mpiexec dies without cleaning up, the ranks die with it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
                if libc::getppid() != mpiexec_pid {
                    return Err(io::Error::other("mpiexec exited during launch"));
                }
                // The socket was created close-on-exec; this child is the one that keeps it.
                if libc::fcntl(rank_fd, libc::F_SETFD, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn()?;
        drop(rank_end);
        let tag = self.options.tag_output.then(|| format!("[{index}] "));
        let pipe = |p: Option<OwnedFd>| p.map(File::from);
        let stdout = pipe(child.stdout.take().map(OwnedFd::from));
        let stderr = pipe(child.stderr.take().map(OwnedFd::from));
        if let Some(mut rank_stdin) = child.stdin.take() {
            // A thread, since rank 0 may not read and the write would block the event loop.
            // It is not joined: the process exits when the job ends, whatever stdin is doing.
            std::thread::spawn(move || {
                let _ = io::copy(&mut io::stdin().lock(), &mut rank_stdin);
            });
        }
        self.ranks.push(Rank {
            pid: child.id() as i32,
            ending: None,
            ended_at: None,
            pmi: Some(PmiConnection { socket: server_end, pending: Vec::new() }),
            pmi_initialized: false,
            finalized: false,
            in_barrier: false,
            stdout: stdout.map(|f| OutputStream::new(f, Sink::Stdout, tag.clone())),
            stderr: stderr.map(|f| OutputStream::new(f, Sink::Stderr, tag.clone())),
        });
        Ok(())
    }

    fn finished(&self) -> bool {
        let all_ended = self.ranks.iter().all(|r| r.ending.is_some());
        let outputs_open = self.ranks.iter().any(|r| r.stdout.is_some() || r.stderr.is_some());
        all_ended && (!outputs_open || self.drain_until.is_some_and(|t| Instant::now() >= t))
    }

    /// The file descriptors to poll, and what each one is.
    fn poll_set(&self) -> (Vec<libc::pollfd>, Vec<Source>) {
        let mut fds = vec![libc::pollfd { fd: self.signals.fd(), events: libc::POLLIN, revents: 0 }];
        let mut sources = vec![Source::Signals];
        for (index, rank) in self.ranks.iter().enumerate() {
            let mut add = |fd, source| {
                fds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
                sources.push(source);
            };
            if let Some(pmi) = &rank.pmi {
                add(pmi.socket.as_raw_fd(), Source::Pmi(index));
            }
            if let Some(out) = &rank.stdout {
                add(out.pipe.as_raw_fd(), Source::Output(index, Sink::Stdout));
            }
            if let Some(err) = &rank.stderr {
                add(err.pipe.as_raw_fd(), Source::Output(index, Sink::Stderr));
            }
        }
        (fds, sources)
    }

    fn next_timer(&self) -> Option<Instant> {
        let kill_at = self.shutdown.as_ref().filter(|s| !s.killed).map(|s| s.kill_at);
        [self.timeout_at, kill_at, self.drain_until].into_iter().flatten().min()
    }

    fn wait_for_events(&mut self) {
        let (mut fds, sources) = self.poll_set();
        // Capped so a lost wake-up can only delay, never hang, the loop.
        let mut timeout = Duration::from_secs(1);
        if let Some(at) = self.next_timer() {
            timeout = timeout.min(at.saturating_duration_since(Instant::now()));
        }
        let timeout_ms = timeout.as_micros().div_ceil(1000).min(1000) as i32;
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if ready > 0 {
            for (pollfd, source) in fds.iter().zip(sources) {
                if pollfd.revents != 0 {
                    self.handle(source);
                }
            }
        }
        self.reap_children();
        self.check_timers();
    }

    fn handle(&mut self, source: Source) {
        match source {
            Source::Signals => {
                for signo in self.signals.drain() {
                    if signals::TERMINATING.contains(&signo) {
                        self.on_terminating_signal(signo);
                    }
                }
            }
            Source::Pmi(index) => self.serve_pmi(index),
            Source::Output(index, sink) => {
                let rank = &mut self.ranks[index];
                let stream = match sink {
                    Sink::Stdout => &mut rank.stdout,
                    Sink::Stderr => &mut rank.stderr,
                };
                if let Some(out) = stream
                    && let ReadResult::Closed = out.read_available()
                {
                    *stream = None;
                }
            }
        }
    }

    fn on_terminating_signal(&mut self, signo: i32) {
        match &mut self.shutdown {
            // A second signal while tearing down: stop waiting politely.
            Some(shutdown) => shutdown.kill_at = Instant::now(),
            None => {
                report(&format!("received signal {signo} ({}); terminating the job", signals::describe(signo)));
                self.begin_shutdown(128 + signo, signo);
            }
        }
    }

    /// Starts tearing the job down: `signo` to every live rank now, SIGKILL after a grace.
    fn begin_shutdown(&mut self, exit_code: i32, signo: i32) {
        if self.shutdown.is_some() {
            return;
        }
        // Live ranks, and ranks that just ended (the one whose death started this, typically):
        // processes they started may linger in their sessions. A session of a rank that ended
        // long ago is left alone, as its id may by now belong to an unrelated process group.
        let now = Instant::now();
        let signalled: Vec<usize> = (0..self.ranks.len())
            .filter(|&i| {
                let ended_at = self.ranks[i].ended_at;
                ended_at.is_none_or(|t| now.duration_since(t) < RECENTLY_ENDED)
            })
            .collect();
        for &index in &signalled {
            signal_rank(&self.ranks[index], signo);
        }
        let kill_at = now + KILL_GRACE;
        self.shutdown = Some(Shutdown { exit_code, kill_at, killed: false, signalled });
    }

    fn check_timers(&mut self) {
        let now = Instant::now();
        if self.timeout_at.is_some_and(|t| now >= t) {
            self.timeout_at = None;
            if self.shutdown.is_none() && self.ranks.iter().any(|r| r.ending.is_none()) {
                let seconds = self.options.timeout.unwrap_or_default().as_secs_f64();
                report(&format!("job timed out after {seconds} s; killing the remaining ranks"));
                self.begin_shutdown(124, libc::SIGTERM);
            }
        }
        if let Some(shutdown) = &mut self.shutdown
            && !shutdown.killed
            && now >= shutdown.kill_at
        {
            self.kill_now();
        }
    }

    /// The end of the teardown grace: SIGKILL to every signalled session.
    fn kill_now(&mut self) {
        let Some(shutdown) = &mut self.shutdown else {
            return;
        };
        shutdown.killed = true;
        for &index in &shutdown.signalled {
            signal_rank(&self.ranks[index], libc::SIGKILL);
        }
    }

    fn reap_children(&mut self) {
        loop {
            let mut status = 0;
            // SAFETY: waitpid with a valid status pointer; WNOHANG never blocks.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            let ending = if libc::WIFSIGNALED(status) {
                Ending::Signaled(libc::WTERMSIG(status))
            } else {
                Ending::Exited(libc::WEXITSTATUS(status))
            };
            if let Some(index) = self.ranks.iter().position(|r| r.pid == pid) {
                self.on_rank_ended(index, ending);
            }
        }
        if self.drain_until.is_none() && self.ranks.iter().all(|r| r.ending.is_some()) {
            let grace = if self.shutdown.is_some() { DRAIN_GRACE_FAILED } else { DRAIN_GRACE_NORMAL };
            self.drain_until = Some(Instant::now() + grace);
        }
    }

    fn on_rank_ended(&mut self, index: usize, ending: Ending) {
        let rank = &mut self.ranks[index];
        rank.ending = Some(ending);
        rank.ended_at = Some(Instant::now());
        if self.shutdown.is_some() {
            return; // expected: we are killing the job
        }
        let pid = rank.pid;
        match ending {
            Ending::Signaled(signo) => {
                report(&format!("rank {index} (pid {pid}) killed by signal {signo} ({})", signals::describe(signo)));
                self.begin_shutdown(128 + signo, libc::SIGTERM);
            }
            // A rank that spoke PMI must say finalize; a plain program (no PMI) may exit 0.
            Ending::Exited(code) if !rank.finalized && (code != 0 || rank.pmi_initialized) => {
                report(&format!("rank {index} (pid {pid}) exited with code {code} without calling MPI_Finalize"));
                self.begin_shutdown(if code != 0 { code } else { 1 }, libc::SIGTERM);
            }
            Ending::Exited(_) => self.check_deserted(),
        }
    }

    /// Ends the job when a rank that never spoke PMI has exited while others are in MPI:
    /// they wait for it (in MPI_Init's PMI barrier, or for its messages) and never would stop.
    /// A job of programs that never use MPI on any rank runs to its end, as under Hydra.
    fn check_deserted(&mut self) {
        if self.shutdown.is_some() {
            return;
        }
        let in_mpi = self.ranks.iter().any(|r| r.pmi_initialized && !r.finalized && r.ending.is_none());
        let gone = self.ranks.iter().enumerate().find_map(|(index, r)| match r.ending {
            Some(Ending::Exited(code)) if !r.pmi_initialized => Some((index, r.pid, code)),
            _ => None,
        });
        if in_mpi && let Some((index, pid, code)) = gone {
            report(&format!(
                "rank {index} (pid {pid}) exited with code {code} without calling MPI_Init while the other \
                 ranks wait for it in MPI"
            ));
            self.begin_shutdown(1, libc::SIGTERM);
        }
    }

    /// Reads from rank `index`'s PMI socket and answers every complete command.
    fn serve_pmi(&mut self, index: usize) {
        let Some(pmi) = &mut self.ranks[index].pmi else {
            return;
        };
        let mut buffer = [0u8; 16 * 1024];
        match pmi.socket.read(&mut buffer) {
            Ok(0) | Err(_) => {
                // The rank closed its end (it exited or finished with PMI); its exit is
                // judged when it is reaped.
                self.ranks[index].pmi = None;
                return;
            }
            Ok(n) => pmi.pending.extend_from_slice(&buffer[..n]),
        }
        while let Some(pmi) = &mut self.ranks[index].pmi {
            let Some(newline) = pmi.pending.iter().position(|&b| b == b'\n') else {
                break;
            };
            let raw: Vec<u8> = pmi.pending.drain(..=newline).collect();
            let request = Line::parse(&String::from_utf8_lossy(&raw));
            log::debug!("rank {index} -> {}", request.encode().trim_end());
            self.answer(index, &request);
        }
    }

    fn send(&mut self, index: usize, reply: &Line) {
        if let Some(pmi) = &mut self.ranks[index].pmi {
            log::debug!("rank {index} <- {}", reply.encode().trim_end());
            if pmi.socket.write_all(reply.encode().as_bytes()).is_err() {
                self.ranks[index].pmi = None;
            }
        }
    }

    fn answer(&mut self, index: usize, request: &Line) {
        let size = self.size;
        let kvs_matches = request.get("kvsname") == Some(self.kvsname.as_str());
        let reply = match request.command().unwrap_or("") {
            "init" => {
                self.ranks[index].pmi_initialized = true;
                self.check_deserted();
                let version_ok = request.get("pmi_version") == Some("1");
                Line::cmd("response_to_init")
                    .with("pmi_version", 1)
                    .with("pmi_subversion", 1)
                    .with("rc", if version_ok { 0 } else { -1 })
                    .with("server", "oxmpi")
            }
            "get_maxes" => Line::cmd("maxes")
                .with("kvsname_max", KVSNAME_MAX)
                .with("keylen_max", KEYLEN_MAX)
                .with("vallen_max", VALLEN_MAX),
            "get_appnum" => Line::cmd("appnum").with("appnum", self.app_of_rank[index]),
            "get_my_kvsname" => Line::cmd("my_kvsname").with("kvsname", &self.kvsname),
            "get_universe_size" => Line::cmd("universe_size").with("size", size),
            "put" => match (kvs_matches, request.get("key"), request.get("value")) {
                (true, Some(key), Some(value)) if !key.is_empty() => {
                    self.kvs.insert(key.to_string(), value.to_string());
                    Line::cmd("put_result").with("rc", 0).with("msg", "success")
                }
                (false, _, _) => Line::cmd("put_result").with("rc", -1).with("msg", "unknown_kvsname"),
                _ => Line::cmd("put_result").with("rc", -1).with("msg", "missing_key_or_value"),
            },
            "get" => {
                let key = request.get("key").unwrap_or("");
                match self.kvs.get(key).filter(|_| kvs_matches) {
                    Some(value) => Line::cmd("get_result").with("rc", 0).with("msg", "success").with("value", value),
                    None => Line::cmd("get_result")
                        .with("rc", -1)
                        .with("msg", format!("key_{key}_not_found"))
                        .with("value", "unknown"),
                }
            }
            "barrier_in" => {
                self.ranks[index].in_barrier = true;
                if self.ranks.len() == size && self.ranks.iter().all(|r| r.in_barrier) {
                    for other in 0..size {
                        self.ranks[other].in_barrier = false;
                        self.send(other, &Line::cmd("barrier_out"));
                    }
                }
                return;
            }
            "finalize" => {
                self.ranks[index].finalized = true;
                Line::cmd("finalize_ack")
            }
            "abort" => {
                self.on_abort(index, request);
                return;
            }
            other => {
                log::warn!("rank {index} sent an unsupported PMI command {other:?}");
                Line::cmd(other).with("rc", -1).with("msg", "unsupported_command")
            }
        };
        self.send(index, &reply);
    }

    fn on_abort(&mut self, index: usize, request: &Line) {
        let code = request.get("exitcode").and_then(|c| c.trim().parse::<i32>().ok()).unwrap_or(1);
        // MPI_Abort or a fatal error handler; the detail says which. The rank leaves printing
        // it to us, so every rank's is reported, also while the job is being ended.
        let message = wire::unescape_text(request.get("error_msg").unwrap_or(""));
        let message = message.trim_end();
        let detail = if message.is_empty() { String::new() } else { format!(": {message}") };
        report(&format!("rank {index} aborted the job (code {code}){detail}"));
        if self.shutdown.is_none() {
            // Whatever code a client sends (-1, 256), an aborted job never exits 0.
            self.begin_shutdown(oxmpi::pmi::abort_exit_status(code), libc::SIGTERM);
        }
    }
}

/// What a polled descriptor belongs to.
#[derive(Debug, Clone, Copy)]
enum Source {
    Signals,
    Pmi(usize),
    Output(usize, Sink),
}

//! One job: start the ranks, serve PMI-1 to them, forward their output, watch how they end.
//!
//! Everything runs in one thread around poll(2): the PMI sockets, the output pipes and the
//! signal self-pipe are its events; the kill escalation, `--timeout` and the final output drain
//! are its timers. Only stdin forwarding has its own thread, because writes to rank 0 may block.
//!
//! The same loop plays three roles (`Role`): mpiexec forking every rank itself (one host);
//! a proxy forking its host's ranks and reporting to mpiexec over a `Link`; and mpiexec
//! across hosts, whose ranks run under proxies. Judging how the job goes (a rank that died,
//! aborted or left without MPI_Finalize ends it) is done where every rank is known: by
//! mpiexec, never by a proxy.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxmpi::pmi::wire::{self, Line};

use crate::link::{AppSpec, Ending, Link, StartSpec, ToHead, ToProxy};
use crate::output::{self, OutputStream, ReadResult, Sink};
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

/// How long mpiexec waits for a proxy to connect back.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// After SIGKILL went to the proxies, how long mpiexec waits for their reports before it
/// drops the connections (which makes any proxy still there kill its ranks) and ends.
const ABANDON_GRACE: Duration = Duration::from_millis(1000);

/// mpiexec's stdin on its way to rank 0 on another host: at most this many bytes are sent
/// and not yet taken by rank 0 (rank 0 may read slowly, or never).
const STDIN_WINDOW: usize = 4 << 20;
/// The most bytes of stdin one message carries.
const STDIN_CHUNK: usize = 64 << 10;
/// How soon a proxy looks again whether rank 0 took what it was handed.
const STDIN_ACK_DELAY: Duration = Duration::from_millis(5);

/// mpiexec across hosts: its stdin, forwarded to rank 0's proxy.
struct StdinForward {
    /// Not at its end yet.
    open: bool,
    /// Bytes sent that rank 0's proxy has not reported taken.
    in_flight: usize,
}

/// A proxy's side of stdin: rank 0's stdin pipe, written by a thread (rank 0 may not read,
/// and a blocked write must not stop the loop). Dropping `queue` ends rank 0's stdin once
/// what was queued is written.
struct StdinToRank {
    queue: Option<std::sync::mpsc::Sender<Vec<u8>>>,
    /// Bytes the thread has written (or dropped, once rank 0's stdin is gone).
    taken: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Bytes handed to the thread, and reported to mpiexec as taken.
    handed: usize,
    acked: usize,
}

/// A rank's PMI connection: the socket and bytes received that do not yet end a line.
struct PmiConnection {
    socket: UnixStream,
    pending: Vec<u8>,
    /// The fields of a multi-line command (`mcmd=...` up to `endcmd`) being received.
    mcmd: Option<Vec<(String, String)>>,
    /// The parts of a spawn request received so far (one `mcmd=spawn` per command).
    spawn_parts: Vec<Vec<(String, String)>>,
}

impl PmiConnection {
    fn new(socket: UnixStream) -> PmiConnection {
        PmiConnection { socket, pending: Vec::new(), mcmd: None, spawn_parts: Vec::new() }
    }
}

/// A job started by MPI_Comm_spawn (by mpiexec forking every rank on one host): a world of
/// its own with its own KVS, whose ranks are served, forwarded and judged as the first
/// world's are.
struct SpawnedJob {
    kvsname: String,
    size: usize,
    kvs: HashMap<String, String>,
    app_of_rank: Vec<usize>,
    /// The rank (index into `Job::ranks`) waiting for the answer to its spawn request,
    /// answered when this job's ranks leave their first PMI barrier (in MPI_Init, after
    /// they published their addresses).
    spawner: Option<usize>,
    /// The spawn failed (a process could not start or exited before MPI_Init): its ranks'
    /// endings are not judged; they are killed.
    failed: bool,
}

struct Rank {
    /// Its rank in its MPI_COMM_WORLD (a proxy holds only some ranks).
    world: usize,
    /// Its job: 0 the first, n > 0 `Job::spawned[n - 1]`.
    job: usize,
    /// 0 while not known (a remote rank before its proxy reported it).
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

/// What a job needs to know to start and serve its ranks.
pub struct JobSpec {
    pub kvsname: String,
    pub size: usize,
    pub process_mapping: String,
    pub apps: Vec<AppSpec>,
    /// The ranks this process starts: (world rank, index into `apps`); empty for mpiexec
    /// across hosts.
    pub ranks: Vec<(usize, usize)>,
    /// The program index of every rank of the job (MPI_APPNUM), for reports.
    pub app_of_rank: Vec<usize>,
    pub tag_output: bool,
    pub timeout: Option<Duration>,
    /// A failing rank ends the job (`-disable-auto-cleanup` turns it off).
    pub auto_cleanup: bool,
    /// The whole environment of the ranks (a proxy: mpiexec's); `None`: this process's.
    pub base_env: Option<Vec<(OsString, OsString)>>,
    /// MPI_UNIVERSE_SIZE; `None`: unset (PMI's `get_universe_size` answers -1, as Hydra's).
    pub universe_size: Option<usize>,
}

/// A proxy as mpiexec sees it.
pub struct ProxyState {
    pub host: String,
    pub ranks: Vec<usize>,
    pub launcher_pid: i32,
    pub launcher_reaped: bool,
    pub link: Option<Link>,
    /// Connected and started (a proxy is never connected twice).
    pub started: bool,
    pub in_barrier: bool,
}

/// mpiexec across hosts: the proxies and how to reach them.
pub struct Head {
    listener: TcpListener,
    launch: crate::proxy::Launch,
    proxies: Vec<ProxyState>,
    /// The host of each world rank.
    host_of_rank: Vec<String>,
    /// The job description sent to each proxy, less its ranks.
    start: StartSpec,
    connect_deadline: Instant,
    /// Keys put in this barrier round, from every proxy.
    round_pairs: Vec<(String, String)>,
    abandon_at: Option<Instant>,
    stdin: StdinForward,
}

impl Head {
    pub fn new(
        listener: TcpListener,
        launch: crate::proxy::Launch,
        proxies: Vec<ProxyState>,
        host_of_rank: Vec<String>,
        start: StartSpec,
    ) -> Head {
        let connect_deadline = Instant::now() + CONNECT_TIMEOUT;
        Head {
            listener,
            launch,
            proxies,
            host_of_rank,
            start,
            connect_deadline,
            round_pairs: Vec::new(),
            abandon_at: None,
            stdin: StdinForward { open: true, in_flight: 0 },
        }
    }
}

/// Which part this process plays in the job.
pub enum Role {
    /// mpiexec forking every rank itself.
    Local,
    /// A proxy forking its host's ranks; `upstream` is its connection to mpiexec (`None`
    /// once lost), `barrier_pairs` the keys put since the last barrier.
    Proxy { upstream: Option<Link>, barrier_pairs: Vec<(String, String)> },
    /// mpiexec across hosts.
    Head(Box<Head>),
}

pub struct Job {
    spec: JobSpec,
    role: Role,
    size: usize,
    kvsname: String,
    ranks: Vec<Rank>,
    kvs: HashMap<String, String>,
    signals: SignalPipe,
    timeout_at: Option<Instant>,
    shutdown: Option<Shutdown>,
    /// Set once every rank has been reaped: forward output until then, no longer.
    drain_until: Option<Instant>,
    /// How long a link to mpiexec or a proxy may go unanswered (`link::link_timeout`).
    link_timeout: Duration,
    /// A proxy with rank 0: its stdin.
    stdin_to_rank: Option<StdinToRank>,
    /// Jobs started by MPI_Comm_spawn (mpiexec on one host only).
    spawned: Vec<SpawnedJob>,
    /// The open ports (from MPI_Open_port to MPI_Close_port), with the MPI_Comm_accept and
    /// MPI_Comm_connect roots waiting at each.
    ports: HashMap<String, PortQueue>,
    /// The name service (MPI_Publish_name): service to port, both escaped as on the wire.
    names: HashMap<String, String>,
    /// With `-disable-auto-cleanup`: the exit status the failed ranks call for (0: none).
    failure_status: i32,
}

/// The roots waiting at one port: (rank index, the group's records), accepts and connects,
/// each connect with the time it gives up; and the pairings made at the port so far.
#[derive(Default)]
struct PortQueue {
    accepts: std::collections::VecDeque<(usize, String)>,
    connects: std::collections::VecDeque<(usize, String, Instant)>,
    pairings: u64,
}

/// The answer to an MPI_Comm_accept or MPI_Comm_connect root that cannot meet at its port.
fn port_refusal(why: &str) -> Line {
    Line::cmd("oxmpi_met").with("rc", -1).with("msg", wire::escape_text(why))
}

/// A new job name: filename-safe and free of '-', so `oxmpi-<kvsname>-` is an unambiguous
/// prefix of its shared-memory files.
pub fn new_kvsname() -> String {
    let kvsname = format!("oxmpi{}_{}", std::process::id(), &oxmpi::pmi::random_hex()[..12]);
    debug_assert_eq!(oxmpi::pmi::sanitize_kvsname(&kvsname), kvsname);
    kvsname
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
    pub fn new(spec: JobSpec, role: Role, signals: SignalPipe) -> Job {
        let mut kvs = HashMap::new();
        kvs.insert("PMI_process_mapping".to_string(), spec.process_mapping.clone());
        let timeout_at = spec.timeout.map(|t| Instant::now() + t);
        let size = spec.size;
        let kvsname = spec.kvsname.clone();
        // mpiexec across hosts keeps a record of every rank; the others add theirs as they
        // start them.
        let ranks = match &role {
            Role::Head(_) => (0..size).map(Rank::remote).collect(),
            _ => Vec::new(),
        };
        let link_timeout = crate::link::link_timeout(spec.base_env.as_deref());
        if let Role::Proxy { upstream: Some(link), .. } = &role {
            link.watch(link_timeout);
        }
        Job {
            spec,
            role,
            size,
            kvsname,
            ranks,
            kvs,
            signals,
            timeout_at,
            shutdown: None,
            drain_until: None,
            link_timeout,
            stdin_to_rank: None,
            spawned: Vec::new(),
            ports: HashMap::new(),
            failure_status: 0,
            names: HashMap::new(),
        }
    }

    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Runs the job to its end and returns the exit status (a proxy's is of no use).
    pub fn run(mut self) -> i32 {
        if matches!(self.role, Role::Head(_)) {
            self.launch_proxies();
        } else {
            for index in 0..self.spec.ranks.len() {
                if let Err(error) = self.spawn_rank(index) {
                    let (world, app) = self.spec.ranks[index];
                    let program = self.spec.apps[app].program.to_string_lossy().into_owned();
                    let code = match error.kind() {
                        io::ErrorKind::NotFound => 127,
                        _ => 126,
                    };
                    let message = format!("cannot start rank {world} ({program}): {error}");
                    if let Role::Proxy { .. } = self.role {
                        let rank = world as u32;
                        self.send_upstream(ToHead::StartFailed { rank, code, message });
                    } else {
                        report(&message);
                    }
                    self.begin_shutdown(code, libc::SIGTERM);
                    break;
                }
            }
        }
        while !self.finished() {
            self.wait_for_events();
        }
        // Every rank is gone, but what they started in their sessions may not be.
        if self.shutdown.as_ref().is_some_and(|s| !s.killed) {
            self.kill_now();
        }
        if let Role::Head(head) = &mut self.role {
            // Launchers still running (a proxy that never connected, an ssh lingering).
            for proxy in &head.proxies {
                if !proxy.launcher_reaped && proxy.launcher_pid > 0 {
                    // SAFETY: kill(2) on our unreaped child's process group; ESRCH is harmless.
                    unsafe { libc::kill(-proxy.launcher_pid, libc::SIGKILL) };
                }
            }
            head.proxies.iter_mut().for_each(|p| p.link = None);
        } else {
            remove_shm_files(&self.kvsname);
            for job in &self.spawned {
                remove_shm_files(&job.kvsname);
            }
        }
        let _ = io::stdout().lock().flush();
        self.exit_code()
    }

    fn exit_code(&self) -> i32 {
        if let Some(shutdown) = &self.shutdown {
            return shutdown.exit_code;
        }
        self.ranks
            .iter()
            .filter(|r| r.job == 0 || !self.spawned[r.job - 1].failed)
            .filter_map(|r| r.ending)
            .map(Ending::exit_code)
            .chain([self.failure_status])
            .max()
            .unwrap_or(0)
    }

    /// Starts one proxy per host with the launcher (mpiexec across hosts).
    fn launch_proxies(&mut self) {
        let Role::Head(head) = &mut self.role else {
            return;
        };
        let mut failed = None;
        for (index, proxy) in head.proxies.iter_mut().enumerate() {
            match head.launch.start(index, &proxy.host) {
                Ok(pid) => proxy.launcher_pid = pid,
                Err(error) => {
                    failed = Some(format!("cannot start the proxy on host {}: {error}", proxy.host));
                    break;
                }
            }
        }
        if let Some(message) = failed {
            report(&message);
            self.abandon_unstarted();
            self.begin_shutdown(1, libc::SIGTERM);
        }
    }

    /// Forks rank `self.spec.ranks[index]` with its PMI socket and output pipes.
    fn spawn_rank(&mut self, index: usize) -> io::Result<()> {
        let (world, app) = self.spec.ranks[index];
        let app_spec = &self.spec.apps[app];
        let mut command = Command::new(&app_spec.program);
        if let Some(base) = &self.spec.base_env {
            command.env_clear().envs(base.iter().map(|(k, v)| (k, v)));
        }
        command
            .args(&app_spec.args)
            .env("PMI_SPAWNED", "0")
            .envs(app_spec.env.iter().map(|(k, v)| (k, v)))
            // mpiexec's stdin goes to rank 0 (across hosts, through its proxy).
            .stdin(if world == 0 { Stdio::piped() } else { Stdio::null() });
        let own_session = rank_sessions(self.spec.ranks.len());
        self.fork_rank(command, 0, world, self.size, own_session)
    }

    /// Forks `command` as rank `world` of job `job` (of `size` ranks), with its PMI socket
    /// and output pipes, and keeps its record.
    fn fork_rank(
        &mut self,
        mut command: Command,
        job: usize,
        world: usize,
        size: usize,
        own_session: bool,
    ) -> io::Result<()> {
        let (server_end, rank_end) = UnixStream::pair()?;
        let rank_fd = rank_end.as_raw_fd();
        command
            .env_remove("PMI_PORT")
            .env_remove("PMI_ID")
            .env("PMI_FD", rank_fd.to_string())
            .env("PMI_RANK", world.to_string())
            .env("PMI_SIZE", size.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: `getpid` is async-signal-safe; read here, before the fork.
        let parent_pid = unsafe { libc::getpid() };
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe system calls (setsid or setpgid, prctl, getppid, fcntl); it
        // allocates nothing except on the error path, where the child is about to fail anyway.
        unsafe {
            command.pre_exec(move || {
                // Own session (see `rank_sessions`) or own process group in ours: either way
                // we can signal the rank with everything it starts as one group.
                if (if own_session { libc::setsid() } else { libc::setpgid(0, 0) }) < 0 {
                    return Err(io::Error::last_os_error());
                }
                // If mpiexec (or the proxy) dies without cleaning up, the ranks die with it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
                if libc::getppid() != parent_pid {
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
        let tag = self.spec.tag_output.then(|| match job {
            0 => format!("[{world}] "),
            _ => format!("[{job}:{world}] "),
        });
        let pipe = |p: Option<OwnedFd>| p.map(File::from);
        let stdout = pipe(child.stdout.take().map(OwnedFd::from));
        let stderr = pipe(child.stderr.take().map(OwnedFd::from));
        if let Some(mut rank_stdin) = child.stdin.take() {
            // A thread, since rank 0 may not read and the write would block the event loop.
            // It is not joined: the process exits when the job ends, whatever stdin is doing.
            if let Role::Local = self.role {
                std::thread::spawn(move || {
                    let _ = io::copy(&mut io::stdin().lock(), &mut rank_stdin);
                });
            } else {
                let (queue, chunks) = std::sync::mpsc::channel::<Vec<u8>>();
                let taken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
                let counter = taken.clone();
                std::thread::spawn(move || {
                    let mut open = true;
                    for chunk in chunks {
                        open = open && rank_stdin.write_all(&chunk).is_ok();
                        counter.fetch_add(chunk.len(), std::sync::atomic::Ordering::Release);
                    }
                });
                self.stdin_to_rank = Some(StdinToRank { queue: Some(queue), taken, handed: 0, acked: 0 });
            }
        }
        let pid = child.id() as i32;
        self.ranks.push(Rank {
            world,
            job,
            pid,
            ending: None,
            ended_at: None,
            pmi: Some(PmiConnection::new(server_end)),
            pmi_initialized: false,
            finalized: false,
            in_barrier: false,
            stdout: stdout.map(|f| OutputStream::new(f, tag.clone())),
            stderr: stderr.map(|f| OutputStream::new(f, tag.clone())),
        });
        if let Role::Proxy { .. } = self.role {
            self.send_upstream(ToHead::Started { rank: world as u32, pid });
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        let all_ended = self.ranks.iter().all(|r| r.ending.is_some());
        let drained = self.drain_until.is_some_and(|t| Instant::now() >= t);
        let outputs_open = match &self.role {
            // Proxies send their ranks' output, then close.
            Role::Head(head) => head.proxies.iter().any(|p| p.link.is_some()),
            _ => self.ranks.iter().any(|r| r.stdout.is_some() || r.stderr.is_some()),
        };
        all_ended && (!outputs_open || drained)
    }

    /// The file descriptors to poll, and what each one is.
    fn poll_set(&self) -> (Vec<libc::pollfd>, Vec<Source>) {
        let mut fds = vec![libc::pollfd { fd: self.signals.fd(), events: libc::POLLIN, revents: 0 }];
        let mut sources = vec![Source::Signals];
        let mut add = |fd, source| {
            fds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
            sources.push(source);
        };
        for (index, rank) in self.ranks.iter().enumerate() {
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
        match &self.role {
            Role::Local => {}
            Role::Proxy { upstream, .. } => {
                if let Some(link) = upstream {
                    add(link.stream.as_raw_fd(), Source::Upstream);
                }
            }
            Role::Head(head) => {
                if head.proxies.iter().any(|p| !p.started) {
                    add(head.listener.as_raw_fd(), Source::Listener);
                }
                for (index, proxy) in head.proxies.iter().enumerate() {
                    if let Some(link) = &proxy.link {
                        add(link.stream.as_raw_fd(), Source::Proxy(index));
                    }
                }
                let rank0_linked = head.proxies.iter().any(|p| p.ranks.contains(&0) && p.link.is_some());
                if head.stdin.open && head.stdin.in_flight < STDIN_WINDOW && rank0_linked {
                    add(libc::STDIN_FILENO, Source::Stdin);
                }
            }
        }
        (fds, sources)
    }

    fn next_timer(&self) -> Option<Instant> {
        let kill_at = self.shutdown.as_ref().filter(|s| !s.killed).map(|s| s.kill_at);
        let (connect, abandon) = match &self.role {
            Role::Head(head) => {
                (head.proxies.iter().any(|p| !p.started).then_some(head.connect_deadline), head.abandon_at)
            }
            _ => (None, None),
        };
        // Stdin handed to rank 0's writer and not yet reported taken: look again soon.
        let stdin =
            self.stdin_to_rank.as_ref().filter(|s| s.handed > s.acked).map(|_| Instant::now() + STDIN_ACK_DELAY);
        let port_connect = self.next_connect_timeout();
        [self.timeout_at, kill_at, self.drain_until, connect, abandon, stdin, port_connect].into_iter().flatten().min()
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
                let mut text = Vec::new();
                if let Some(out) = stream
                    && let ReadResult::Closed = out.read_available(&mut text)
                {
                    *stream = None;
                }
                self.forward_output(sink, text);
            }
            Source::Upstream => self.serve_upstream(),
            Source::Listener => self.accept_proxy(),
            Source::Proxy(index) => self.serve_proxy(index),
            Source::Stdin => self.forward_stdin(),
        }
    }

    /// mpiexec across hosts: the next bytes of its stdin (or its end) to rank 0's proxy.
    fn forward_stdin(&mut self) {
        let Role::Head(head) = &mut self.role else {
            return;
        };
        let Some(index) = head.proxies.iter().position(|p| p.ranks.contains(&0)) else {
            head.stdin.open = false;
            return;
        };
        let mut data = vec![0u8; STDIN_CHUNK];
        // SAFETY: read(2) into our buffer of its length; poll found fd 0 readable (or gone).
        let n = unsafe { libc::read(libc::STDIN_FILENO, data.as_mut_ptr().cast(), data.len()) };
        if n < 0 && matches!(io::Error::last_os_error().kind(), io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock)
        {
            return;
        }
        // The end of stdin, or an error reading it (no stdin at all): rank 0's stdin ends.
        data.truncate(n.max(0) as usize);
        head.stdin.open = !data.is_empty();
        head.stdin.in_flight += data.len();
        let Some(link) = &mut head.proxies[index].link else {
            return;
        };
        if link.send(&ToProxy::Stdin { data }.encode()).is_err() {
            self.on_proxy_lost(index);
        }
    }

    /// A proxy: bytes of mpiexec's stdin for rank 0 (empty: its end).
    fn on_stdin(&mut self, data: Vec<u8>) {
        let Some(sink) = &mut self.stdin_to_rank else {
            // Rank 0 is not running here (it could not start): the bytes are taken.
            if !data.is_empty() {
                self.send_upstream(ToHead::StdinTaken { bytes: data.len() as u32 });
            }
            return;
        };
        if data.is_empty() {
            sink.queue = None;
            return;
        }
        sink.handed += data.len();
        let len = data.len();
        if sink.queue.as_ref().is_none_or(|q| q.send(data).is_err()) {
            sink.taken.fetch_add(len, std::sync::atomic::Ordering::Release);
        }
    }

    /// A proxy: tells mpiexec how much more of its stdin rank 0 has taken, so it sends more.
    fn ack_stdin(&mut self) {
        let Some(sink) = &mut self.stdin_to_rank else {
            return;
        };
        let taken = sink.taken.load(std::sync::atomic::Ordering::Acquire);
        if taken > sink.acked {
            let bytes = (taken - sink.acked) as u32;
            sink.acked = taken;
            self.send_upstream(ToHead::StdinTaken { bytes });
        }
    }

    /// Output of local ranks: printed, or sent to mpiexec by a proxy.
    fn forward_output(&mut self, sink: Sink, data: Vec<u8>) {
        if data.is_empty() {
            return;
        }
        match self.role {
            Role::Proxy { .. } => self.send_upstream(ToHead::Output { sink, data }),
            _ => output::write(sink, &data),
        }
    }

    fn on_terminating_signal(&mut self, signo: i32) {
        match &mut self.shutdown {
            // A second signal while tearing down: stop waiting politely.
            Some(shutdown) => shutdown.kill_at = Instant::now(),
            None => {
                // A proxy's ranks report their endings; mpiexec says why the job ended.
                if !matches!(self.role, Role::Proxy { .. }) {
                    report(&format!("received signal {signo} ({}); terminating the job", signals::describe(signo)));
                }
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
        self.signal_ranks(&signalled, signo);
        let kill_at = now + KILL_GRACE;
        self.shutdown = Some(Shutdown { exit_code, kill_at, killed: false, signalled });
    }

    /// Signals ranks: this process's own children, or, across hosts, every rank through
    /// its proxy (which chooses the same way which of its ranks to signal).
    fn signal_ranks(&mut self, which: &[usize], signo: i32) {
        if let Role::Head(head) = &mut self.role {
            let frame = ToProxy::Signal { signo }.encode();
            for proxy in &mut head.proxies {
                if let Some(link) = &mut proxy.link
                    && link.send(&frame).is_err()
                {
                    proxy.link = None;
                }
            }
            return;
        }
        for &index in which {
            signal_rank(&self.ranks[index], signo);
        }
    }

    fn check_timers(&mut self) {
        self.ack_stdin();
        let now = Instant::now();
        if self.next_connect_timeout().is_some_and(|t| now >= t) {
            self.expire_connects(now);
        }
        if self.timeout_at.is_some_and(|t| now >= t) {
            self.timeout_at = None;
            if self.shutdown.is_none() && self.ranks.iter().any(|r| r.ending.is_none()) {
                let seconds = self.spec.timeout.unwrap_or_default().as_secs_f64();
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
        if let Role::Head(head) = &mut self.role {
            if head.abandon_at.is_some_and(|t| now >= t) {
                head.abandon_at = None;
                // Proxies that did not report in time: dropping the connection makes any
                // still alive kill its ranks.
                for proxy in &mut head.proxies {
                    proxy.link = None;
                }
                for rank in self.ranks.iter_mut().filter(|r| r.ending.is_none()) {
                    rank.ending = Some(Ending::Signaled(libc::SIGKILL));
                    rank.ended_at = Some(now);
                }
            }
            if now >= head.connect_deadline && head.proxies.iter().any(|p| !p.started) {
                let late: Vec<&str> = head.proxies.iter().filter(|p| !p.started).map(|p| p.host.as_str()).collect();
                report(&format!(
                    "no proxy connected back from host(s) {} within {} s (is -iface right?)",
                    late.join(", "),
                    CONNECT_TIMEOUT.as_secs()
                ));
                self.abandon_unstarted();
                self.begin_shutdown(1, libc::SIGTERM);
            }
        }
    }

    /// Marks the ranks of proxies that never started as ended, so the job can end.
    fn abandon_unstarted(&mut self) {
        let Role::Head(head) = &mut self.role else {
            return;
        };
        let now = Instant::now();
        for proxy in head.proxies.iter_mut().filter(|p| !p.started) {
            proxy.started = true; // no longer waited for
            for &rank in &proxy.ranks {
                let rank = &mut self.ranks[rank];
                if rank.ending.is_none() {
                    rank.ending = Some(Ending::Signaled(libc::SIGKILL));
                    rank.ended_at = Some(now);
                }
            }
        }
    }

    /// The end of the teardown grace: SIGKILL to every signalled session.
    fn kill_now(&mut self) {
        let Some(shutdown) = &mut self.shutdown else {
            return;
        };
        shutdown.killed = true;
        let signalled = shutdown.signalled.clone();
        self.signal_ranks(&signalled, libc::SIGKILL);
        if let Role::Head(head) = &mut self.role {
            head.abandon_at = Some(Instant::now() + ABANDON_GRACE);
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
            if let Role::Head(_) = self.role {
                self.on_launcher_ended(pid, ending);
            } else if let Some(index) = self.ranks.iter().position(|r| r.pid == pid) {
                self.on_rank_ended(index, ending);
            }
        }
        if self.drain_until.is_none() && self.ranks.iter().all(|r| r.ending.is_some()) {
            let mut grace = if self.shutdown.is_some() { DRAIN_GRACE_FAILED } else { DRAIN_GRACE_NORMAL };
            if let Role::Head(_) = self.role {
                // The proxies drain their ranks' pipes first.
                grace += DRAIN_GRACE_NORMAL;
            }
            self.drain_until = Some(Instant::now() + grace);
        }
    }

    /// Who a rank is, for reports: `rank 3 (pid 812)`, across hosts `rank 3 (pid 812 on h2)`.
    fn who(&self, index: usize) -> String {
        let rank = &self.ranks[index];
        match &self.role {
            Role::Head(head) => {
                let host = &head.host_of_rank[index];
                if rank.pid > 0 {
                    format!("rank {index} (pid {} on {host})", rank.pid)
                } else {
                    format!("rank {index} (on {host})")
                }
            }
            _ if rank.job > 0 => format!("rank {} of spawned job {} (pid {})", rank.world, rank.job, rank.pid),
            _ => format!("rank {index} (pid {})", rank.pid),
        }
    }

    fn on_rank_ended(&mut self, index: usize, ending: Ending) {
        let rank = &mut self.ranks[index];
        rank.ending = Some(ending);
        rank.ended_at = Some(Instant::now());
        if let Role::Proxy { .. } = self.role {
            // mpiexec judges; a proxy reports.
            let world = rank.world as u32;
            self.send_upstream(ToHead::Ended { rank: world, ending });
            return;
        }
        if self.shutdown.is_some() {
            return; // expected: we are killing the job
        }
        let job = rank.job;
        if job > 0 && self.spawned[job - 1].failed {
            return; // killed with its failed spawn
        }
        if job > 0 && self.spawned[job - 1].spawner.is_some() {
            // Before its job finished starting (MPI_Init): the spawn fails, the job goes on.
            let who = self.who(index);
            let how = match ending {
                Ending::Signaled(signo) => format!("was killed by signal {signo}"),
                Ending::Exited(code) => format!("exited with code {code}"),
            };
            self.fail_spawned_job(job, format!("{who} {how} before MPI_Init completed"));
            return;
        }
        let (finalized, pmi_initialized) = (rank.finalized, rank.pmi_initialized);
        let who = self.who(index);
        let (failure, status) = match ending {
            Ending::Signaled(signo) => {
                (format!("{who} killed by signal {signo} ({})", signals::describe(signo)), 128 + signo)
            }
            // A rank that spoke PMI must say finalize; a plain program (no PMI) may exit 0.
            Ending::Exited(code) if !finalized && (code != 0 || pmi_initialized) => (
                format!("{who} exited with code {code} without calling MPI_Finalize"),
                if code != 0 { code } else { 1 },
            ),
            Ending::Exited(_) => {
                if self.spec.auto_cleanup {
                    self.check_deserted();
                }
                return;
            }
        };
        if self.spec.auto_cleanup {
            report(&failure);
            self.begin_shutdown(status, libc::SIGTERM);
        } else {
            report(&format!("{failure}; the other ranks go on (-disable-auto-cleanup)"));
            self.failure_status = self.failure_status.max(status);
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
            // A spawned job's ranks that leave before MPI_Init fail their spawn instead.
            Some(Ending::Exited(code)) if !r.pmi_initialized && r.job == 0 => Some((index, code)),
            _ => None,
        });
        if in_mpi && let Some((index, code)) = gone {
            report(&format!(
                "{} exited with code {code} without calling MPI_Init while the other ranks wait for it in MPI",
                self.who(index)
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
            let text = String::from_utf8_lossy(&raw);
            // Multi-line commands (MPICH's spawn): a field per line, values may hold spaces.
            let line = text.trim_end_matches(['\n', '\r']);
            if let Some(fields) = &mut pmi.mcmd {
                if line == "endcmd" {
                    let fields = pmi.mcmd.take().unwrap_or_default();
                    self.on_multiline(index, fields);
                } else if let Some((key, value)) = line.split_once('=') {
                    fields.push((key.to_string(), value.to_string()));
                }
                continue;
            }
            if let Some(name) = line.strip_prefix("mcmd=") {
                pmi.mcmd = Some(vec![("mcmd".to_string(), name.to_string())]);
                continue;
            }
            let request = Line::parse(&text);
            log::debug!("rank {} -> {}", self.ranks[index].world, request.encode().trim_end());
            self.answer(index, &request);
        }
    }

    fn send(&mut self, index: usize, reply: &Line) {
        let world = self.ranks[index].world;
        if let Some(pmi) = &mut self.ranks[index].pmi {
            log::debug!("rank {world} <- {}", reply.encode().trim_end());
            if pmi.socket.write_all(reply.encode().as_bytes()).is_err() {
                self.ranks[index].pmi = None;
            }
        }
    }

    fn answer(&mut self, index: usize, request: &Line) {
        let world = self.ranks[index].world;
        let job = self.ranks[index].job;
        let kvs_matches = request.get("kvsname") == Some(self.kvsname_of(job));
        let is_proxy = matches!(self.role, Role::Proxy { .. });
        let reply = match request.command().unwrap_or("") {
            "init" => {
                self.ranks[index].pmi_initialized = true;
                if is_proxy {
                    self.send_upstream(ToHead::Initialized { rank: world as u32 });
                } else {
                    self.check_deserted();
                }
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
            "get_appnum" => {
                let appnum = match job {
                    0 => self.spec.app_of_rank[world],
                    _ => self.spawned[job - 1].app_of_rank[world],
                };
                Line::cmd("appnum").with("appnum", appnum)
            }
            "get_my_kvsname" => Line::cmd("my_kvsname").with("kvsname", self.kvsname_of(job)),
            "get_universe_size" => {
                let universe = self.spec.universe_size.map_or(-1, |n| n as i64);
                Line::cmd("universe_size").with("rc", 0).with("size", universe)
            }
            "put" => match (kvs_matches, request.get("key"), request.get("value")) {
                (true, Some(key), Some(value)) if !key.is_empty() => {
                    let kvs = if job == 0 { &mut self.kvs } else { &mut self.spawned[job - 1].kvs };
                    kvs.insert(key.to_string(), value.to_string());
                    if let Role::Proxy { barrier_pairs, .. } = &mut self.role {
                        barrier_pairs.push((key.to_string(), value.to_string()));
                    }
                    Line::cmd("put_result").with("rc", 0).with("msg", "success")
                }
                (false, _, _) => Line::cmd("put_result").with("rc", -1).with("msg", "unknown_kvsname"),
                _ => Line::cmd("put_result").with("rc", -1).with("msg", "missing_key_or_value"),
            },
            "get" => {
                let key = request.get("key").unwrap_or("");
                // Any job's KVS: connected jobs (a spawned one and its parent) read each
                // other's addresses.
                let kvsname = request.get("kvsname").unwrap_or("");
                let kvs = if kvsname == self.kvsname {
                    Some(&self.kvs)
                } else {
                    self.spawned.iter().find(|j| j.kvsname == kvsname).map(|j| &j.kvs)
                };
                match kvs.and_then(|kvs| kvs.get(key)) {
                    Some(value) => Line::cmd("get_result").with("rc", 0).with("msg", "success").with("value", value),
                    None => Line::cmd("get_result")
                        .with("rc", -1)
                        .with("msg", format!("key_{key}_not_found"))
                        .with("value", "unknown"),
                }
            }
            "barrier_in" => {
                self.ranks[index].in_barrier = true;
                if job > 0 {
                    self.check_spawned_barrier(job);
                    return;
                }
                let all_started = self.ranks.iter().filter(|r| r.job == 0).count() == self.spec.ranks.len();
                if all_started && self.ranks.iter().filter(|r| r.job == 0).all(|r| r.in_barrier) {
                    if let Role::Proxy { barrier_pairs, .. } = &mut self.role {
                        // The host's part of the job-wide barrier; mpiexec answers when
                        // every host is in it.
                        let pairs = std::mem::take(barrier_pairs);
                        self.send_upstream(ToHead::Barrier { pairs });
                    } else {
                        self.release_barrier();
                    }
                }
                return;
            }
            "oxmpi_accept" | "oxmpi_connect" => {
                if !matches!(self.role, Role::Local) {
                    port_refusal("not implemented yet under mpiexec across hosts")
                } else {
                    let port = request.get("port").unwrap_or("").to_string();
                    let records = request.get("records").unwrap_or("").to_string();
                    let accept = request.command() == Some("oxmpi_accept");
                    // Without a timeout (an old client), about as good as for ever.
                    let timeout_ms: u64 = request.get("timeout_ms").and_then(|v| v.parse().ok()).unwrap_or(u64::MAX);
                    let give_up = Instant::now() + Duration::from_millis(timeout_ms.min(1 << 40));
                    self.wait_at_port(index, port, records, accept, give_up);
                    return;
                }
            }
            "oxmpi_open_port" => {
                self.ports.entry(request.get("port").unwrap_or("").to_string()).or_default();
                Line::cmd("oxmpi_port_done").with("rc", 0)
            }
            "oxmpi_close_port" => {
                let port = request.get("port").unwrap_or("");
                let Some(queue) = self.ports.remove(port) else {
                    self.send(index, &Line::cmd("oxmpi_port_done").with("rc", -1));
                    return;
                };
                let why = format!("port {port} was closed");
                for (waiting, _) in queue.accepts {
                    self.send(waiting, &port_refusal(&why));
                }
                for (waiting, _, _) in queue.connects {
                    self.send(waiting, &port_refusal(&why));
                }
                Line::cmd("oxmpi_port_done").with("rc", 0)
            }
            "publish_name" => {
                let service = request.get("service").unwrap_or("").to_string();
                let port = request.get("port").unwrap_or("").to_string();
                let fresh = !self.names.contains_key(&service);
                if fresh {
                    self.names.insert(service, port);
                }
                Line::cmd("publish_result").with("rc", if fresh { 0 } else { -1 })
            }
            "unpublish_name" => {
                let found = self.names.remove(request.get("service").unwrap_or("")).is_some();
                Line::cmd("unpublish_result").with("rc", if found { 0 } else { -1 })
            }
            "lookup_name" => match self.names.get(request.get("service").unwrap_or("")) {
                Some(port) => Line::cmd("lookup_result").with("rc", 0).with("port", port.clone()),
                None => Line::cmd("lookup_result").with("rc", -1),
            },
            "finalize" => {
                self.ranks[index].finalized = true;
                if is_proxy {
                    self.send_upstream(ToHead::Finalized { rank: world as u32 });
                }
                Line::cmd("finalize_ack")
            }
            "abort" => {
                let code = request.get("exitcode").and_then(|c| c.trim().parse::<i32>().ok()).unwrap_or(1);
                let message = wire::unescape_text(request.get("error_msg").unwrap_or(""));
                if is_proxy {
                    self.send_upstream(ToHead::Abort { rank: world as u32, code, message });
                } else {
                    self.on_abort(index, code, &message);
                }
                return;
            }
            other => {
                log::warn!("rank {world} sent an unsupported PMI command {other:?}");
                Line::cmd(other).with("rc", -1).with("msg", "unsupported_command")
            }
        };
        self.send(index, &reply);
    }

    /// Every local rank of the first job leaves the PMI barrier.
    fn release_barrier(&mut self) {
        for other in 0..self.ranks.len() {
            if self.ranks[other].job == 0 {
                self.ranks[other].in_barrier = false;
                self.send(other, &Line::cmd("barrier_out"));
            }
        }
    }

    /// A root of MPI_Comm_accept (`accept`) or MPI_Comm_connect at `port`: paired with the
    /// first waiting root of the other kind, both get the other's records; else it waits,
    /// a connect until `give_up`. A port that is not open refuses both.
    fn wait_at_port(&mut self, index: usize, port: String, records: String, accept: bool, give_up: Instant) {
        let Some(queue) = self.ports.get_mut(&port) else {
            self.send(index, &port_refusal(&format!("no port named {port} is open (MPI_Open_port)")));
            return;
        };
        let other = if accept {
            queue.connects.pop_front().map(|(peer, theirs, _)| (peer, theirs))
        } else {
            queue.accepts.pop_front()
        };
        let Some((peer, theirs)) = other else {
            if accept {
                queue.accepts.push_back((index, records));
            } else {
                queue.connects.push_back((index, records, give_up));
            }
            return;
        };
        let serial = queue.pairings;
        queue.pairings += 1;
        self.send(index, &Line::cmd("oxmpi_met").with("rc", 0).with("serial", serial).with("records", theirs));
        self.send(peer, &Line::cmd("oxmpi_met").with("rc", 0).with("serial", serial).with("records", records));
    }

    /// The first time a waiting MPI_Comm_connect gives up.
    fn next_connect_timeout(&self) -> Option<Instant> {
        self.ports.values().flat_map(|q| q.connects.iter().map(|&(_, _, at)| at)).min()
    }

    /// Refuses the MPI_Comm_connect roots whose time ran out with no accept at their port.
    fn expire_connects(&mut self, now: Instant) {
        let mut expired = Vec::new();
        for (port, queue) in &mut self.ports {
            queue.connects.retain(|&(index, _, at)| {
                let over = at <= now;
                if over {
                    expired.push((index, port.clone()));
                }
                !over
            });
        }
        for (index, port) in expired {
            self.send(index, &port_refusal(&format!("no MPI_Comm_accept at port {port} before the connect timed out")));
        }
    }

    /// The KVS name of job `job` (0: the first).
    fn kvsname_of(&self, job: usize) -> &str {
        match job {
            0 => &self.kvsname,
            _ => &self.spawned[job - 1].kvsname,
        }
    }

    /// A rank of spawned job `job` entered a barrier: when all of them are in it, they leave
    /// it; the first time, the spawn request that started them is answered, as their
    /// addresses are now in their KVS.
    fn check_spawned_barrier(&mut self, job: usize) {
        let members: Vec<usize> = (0..self.ranks.len()).filter(|&i| self.ranks[i].job == job).collect();
        if members.len() < self.spawned[job - 1].size || !members.iter().all(|&i| self.ranks[i].in_barrier) {
            return;
        }
        for &i in &members {
            self.ranks[i].in_barrier = false;
            self.send(i, &Line::cmd("barrier_out"));
        }
        if let Some(spawner) = self.spawned[job - 1].spawner.take() {
            let size = self.spawned[job - 1].size;
            let reply = Line::cmd("spawn_result")
                .with("rc", 0)
                .with("kvsname", self.spawned[job - 1].kvsname.clone())
                .with("errcodes", vec!["0"; size].join(","));
            self.send(spawner, &reply);
        }
    }

    /// A complete multi-line command from rank `index`.
    fn on_multiline(&mut self, index: usize, fields: Vec<(String, String)>) {
        let get = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        if get("mcmd") != Some("spawn") {
            let name = get("mcmd").unwrap_or("").to_string();
            self.send(index, &Line::cmd(&name).with("rc", -1).with("msg", "unsupported_command"));
            return;
        }
        let total: usize = get("totspawns").and_then(|v| v.trim().parse().ok()).unwrap_or(1);
        let so_far: usize = get("spawnssofar").and_then(|v| v.trim().parse().ok()).unwrap_or(1);
        let Some(pmi) = &mut self.ranks[index].pmi else { return };
        pmi.spawn_parts.push(fields);
        if so_far < total {
            return;
        }
        let parts = std::mem::take(&mut pmi.spawn_parts);
        self.start_spawned_job(index, parts);
    }

    /// Starts the job a spawn request from rank `index` describes (one part per command),
    /// or answers why it cannot start, with an error code per process.
    fn start_spawned_job(&mut self, index: usize, parts: Vec<Vec<(String, String)>>) {
        let refuse = |job: &mut Job, processes: usize, message: String| {
            let codes = vec!["1"; processes].join(",");
            let reply = Line::cmd("spawn_result")
                .with("rc", -1)
                .with("errcodes", codes)
                .with("msg", wire::escape_text(&message));
            job.send(index, &reply);
        };
        let commands: Vec<SpawnPart> = parts.iter().map(|fields| SpawnPart::parse(fields)).collect();
        let size: usize = commands.iter().map(|c| c.nprocs).sum();
        if !matches!(self.role, Role::Local) {
            let message = "MPI_Comm_spawn is not implemented yet under mpiexec across hosts (only when mpiexec forks every rank on one host)";
            return refuse(self, size, message.to_string());
        }
        if self.shutdown.is_some() {
            return refuse(self, size, "the job is ending".to_string());
        }
        let mut programs = Vec::new();
        for command in &commands {
            match command.resolve() {
                Ok(program) => programs.push(program),
                Err(message) => return refuse(self, size, message),
            }
        }
        let kvsname = new_kvsname();
        let mut kvs: HashMap<String, String> = commands.iter().flat_map(|c| c.preput.iter().cloned()).collect();
        // One node: every process of the spawned job is on this host.
        kvs.insert("PMI_process_mapping".to_string(), format!("(vector,(0,1,{size}))"));
        let app_of_rank = commands.iter().enumerate().flat_map(|(app, c)| std::iter::repeat_n(app, c.nprocs)).collect();
        self.spawned.push(SpawnedJob { kvsname, size, kvs, app_of_rank, spawner: Some(index), failed: false });
        let job = self.spawned.len();
        let own_session = rank_sessions(self.ranks.iter().filter(|r| r.ending.is_none()).count() + size);
        let mut world = 0;
        let mut failure = None;
        'start: for (command, program) in commands.iter().zip(&programs) {
            for _ in 0..command.nprocs {
                let mut process = Command::new(program);
                process.args(&command.args).env("PMI_SPAWNED", "1").stdin(Stdio::null());
                if let Some(dir) = &command.wdir {
                    process.current_dir(dir);
                }
                if let Err(error) = self.fork_rank(process, job, world, size, own_session) {
                    failure =
                        Some(format!("cannot start {} (rank {world} of the spawned job): {error}", program.display()));
                    break 'start;
                }
                world += 1;
            }
        }
        if let Some(message) = failure {
            self.fail_spawned_job(job, message);
        }
    }

    /// Spawned job `job` cannot run: its started ranks are killed and its spawner, if still
    /// waiting, gets an error code per process.
    fn fail_spawned_job(&mut self, job: usize, message: String) {
        let spawned = &mut self.spawned[job - 1];
        spawned.failed = true;
        let spawner = spawned.spawner.take();
        let size = spawned.size;
        let members: Vec<usize> = (0..self.ranks.len()).filter(|&i| self.ranks[i].job == job).collect();
        for &i in &members {
            if self.ranks[i].ending.is_none() {
                signal_rank(&self.ranks[i], libc::SIGKILL);
            }
        }
        if let Some(spawner) = spawner {
            let codes = vec!["1"; size].join(",");
            let reply = Line::cmd("spawn_result")
                .with("rc", -1)
                .with("errcodes", codes)
                .with("msg", wire::escape_text(&message));
            self.send(spawner, &reply);
        } else {
            report(&message);
        }
    }

    fn on_abort(&mut self, index: usize, code: i32, message: &str) {
        // MPI_Abort or a fatal error handler; the detail says which. The rank leaves printing
        // it to us, so every rank's is reported, also while the job is being ended.
        let message = message.trim_end();
        let detail = if message.is_empty() { String::new() } else { format!(": {message}") };
        let place = match &self.role {
            Role::Head(head) => format!(" on {}", head.host_of_rank[index]),
            _ => String::new(),
        };
        let rank = &self.ranks[index];
        let who = match rank.job {
            0 => format!("rank {index}"),
            job => format!("rank {} of spawned job {job}", rank.world),
        };
        report(&format!("{who}{place} aborted the job (code {code}){detail}"));
        if self.shutdown.is_none() {
            // Whatever code a client sends (-1, 256), an aborted job never exits 0.
            self.begin_shutdown(oxmpi::pmi::abort_exit_status(code), libc::SIGTERM);
        }
    }

    // ------------------------------------------------------------------------------------
    // A proxy's side of its connection to mpiexec.

    /// Sends a report to mpiexec; a failed send is a lost connection.
    fn send_upstream(&mut self, message: ToHead) {
        if let Role::Proxy { upstream: Some(link), .. } = &mut self.role
            && link.send(&message.encode()).is_err()
        {
            self.on_upstream_lost();
        }
    }

    fn serve_upstream(&mut self) {
        let Role::Proxy { upstream: Some(link), .. } = &mut self.role else {
            return;
        };
        let frames = match link.receive() {
            Ok(frames) => frames,
            Err(error) => {
                if error.kind() == io::ErrorKind::TimedOut {
                    let host = crate::placement::hostname().unwrap_or_default();
                    eprintln!(
                        "mpiexec proxy on {host}: mpiexec unreachable for {} ms; ending this host's ranks",
                        self.link_timeout.as_millis()
                    );
                }
                return self.on_upstream_lost();
            }
        };
        for frame in frames {
            match ToProxy::decode(&frame) {
                Ok(ToProxy::BarrierOut { pairs }) => {
                    self.kvs.extend(pairs);
                    self.release_barrier();
                }
                Ok(ToProxy::Signal { signo }) => {
                    self.begin_shutdown(128 + signo, signo);
                    if signo == libc::SIGKILL {
                        self.kill_now();
                    }
                }
                Ok(ToProxy::Stdin { data }) => self.on_stdin(data),
                Ok(ToProxy::Start(_)) | Err(_) => {
                    log::warn!("unexpected message from mpiexec");
                    return self.on_upstream_lost();
                }
            }
        }
    }

    /// mpiexec is gone (killed, its host lost): nobody would collect the ranks' output or
    /// end the job, so the ranks are killed now.
    fn on_upstream_lost(&mut self) {
        if let Role::Proxy { upstream, .. } = &mut self.role {
            *upstream = None;
        }
        self.begin_shutdown(1, libc::SIGKILL);
        self.kill_now();
    }

    // ------------------------------------------------------------------------------------
    // mpiexec's side of its connections to the proxies.

    /// A proxy connects back: checks its hello and sends it its ranks.
    fn accept_proxy(&mut self) {
        let Role::Head(head) = &mut self.role else {
            return;
        };
        let Ok((stream, peer)) = head.listener.accept() else {
            return;
        };
        let mut link = Link::new(stream);
        // The proxy says hello as soon as it connects; a silent peer is not a proxy.
        let _ = link.stream.set_read_timeout(Some(Duration::from_secs(5)));
        let hello = link.receive_one().and_then(|frame| ToHead::decode(&frame));
        let _ = link.stream.set_read_timeout(None);
        let index = match hello {
            Ok(ToHead::Hello { proxy, token }) if token == head.launch.token => proxy as usize,
            _ => {
                log::warn!("refused a connection from {peer}: not a proxy of this job");
                return;
            }
        };
        let Some(proxy) = head.proxies.get_mut(index).filter(|p| !p.started) else {
            log::warn!("refused a second connection for proxy {index} from {peer}");
            return;
        };
        if self.shutdown.is_some() {
            // The job is ending: this proxy gets no job (it exits when the connection
            // closes) and its ranks count as ended.
            proxy.started = true;
            let now = Instant::now();
            for &rank in &proxy.ranks {
                self.ranks[rank].ending.get_or_insert(Ending::Signaled(libc::SIGKILL));
                self.ranks[rank].ended_at.get_or_insert(now);
            }
            return;
        }
        let mut start = head.start.clone();
        start.ranks = proxy.ranks.iter().map(|&r| (r as u32, self.spec.app_of_rank[r] as u32)).collect();
        proxy.started = true;
        if link.send(&ToProxy::Start(start).encode()).is_ok() {
            link.watch(self.link_timeout);
            proxy.link = Some(link);
        }
        log::debug!("proxy {index} ({}) connected from {peer}", proxy.host);
        if proxy.link.is_none() {
            self.on_proxy_lost(index);
        }
    }

    fn serve_proxy(&mut self, index: usize) {
        let Role::Head(head) = &mut self.role else {
            return;
        };
        let Some(link) = &mut head.proxies[index].link else {
            return;
        };
        let frames = match link.receive() {
            Ok(frames) => frames,
            Err(error) => {
                if error.kind() == io::ErrorKind::TimedOut && self.shutdown.is_none() {
                    report(&format!(
                        "host {} unreachable: its proxy has not answered for {} ms (network down?)",
                        self.host_of_proxy(index),
                        self.link_timeout.as_millis()
                    ));
                }
                return self.on_proxy_lost(index);
            }
        };
        for frame in frames {
            match ToHead::decode(&frame) {
                Ok(message) => self.on_proxy_message(index, message),
                Err(error) => {
                    log::warn!("proxy {index}: {error}");
                    return self.on_proxy_lost(index);
                }
            }
        }
    }

    /// Whether `rank` is one of proxy `index`'s (a report about another is ignored).
    fn rank_of_proxy(&self, index: usize, rank: u32) -> Option<usize> {
        let Role::Head(head) = &self.role else {
            return None;
        };
        let rank = rank as usize;
        head.proxies[index].ranks.contains(&rank).then_some(rank)
    }

    fn on_proxy_message(&mut self, index: usize, message: ToHead) {
        match message {
            ToHead::Hello { .. } => log::warn!("proxy {index} said hello twice"),
            ToHead::Started { rank, pid } => {
                if let Some(rank) = self.rank_of_proxy(index, rank) {
                    self.ranks[rank].pid = pid;
                }
            }
            ToHead::StartFailed { rank, code, message } => {
                let host = self.host_of_proxy(index);
                report(&format!("on host {host}: {message}"));
                if let Some(rank) = self.rank_of_proxy(index, rank) {
                    self.ranks[rank].ending = Some(Ending::Exited(code));
                    self.ranks[rank].ended_at = Some(Instant::now());
                }
                self.begin_shutdown(code, libc::SIGTERM);
            }
            ToHead::Initialized { rank } => {
                if let Some(rank) = self.rank_of_proxy(index, rank) {
                    self.ranks[rank].pmi_initialized = true;
                    self.check_deserted();
                }
            }
            ToHead::Finalized { rank } => {
                if let Some(rank) = self.rank_of_proxy(index, rank) {
                    self.ranks[rank].finalized = true;
                }
            }
            ToHead::Output { sink, data } => output::write(sink, &data),
            ToHead::Barrier { pairs } => self.on_proxy_barrier(index, pairs),
            ToHead::Abort { rank, code, message } => {
                if let Some(rank) = self.rank_of_proxy(index, rank) {
                    self.on_abort(rank, code, &message);
                }
            }
            ToHead::Ended { rank, ending } => {
                if let Some(rank) = self.rank_of_proxy(index, rank) {
                    self.on_rank_ended(rank, ending);
                }
            }
            ToHead::StdinTaken { bytes } => {
                if let Role::Head(head) = &mut self.role {
                    head.stdin.in_flight = head.stdin.in_flight.saturating_sub(bytes as usize);
                }
            }
        }
    }

    fn host_of_proxy(&self, index: usize) -> String {
        match &self.role {
            Role::Head(head) => head.proxies[index].host.clone(),
            _ => String::new(),
        }
    }

    /// A host's ranks are all in the barrier: when every host's are, each proxy gets the
    /// keys put on all hosts since the last barrier.
    fn on_proxy_barrier(&mut self, index: usize, pairs: Vec<(String, String)>) {
        let Role::Head(head) = &mut self.role else {
            return;
        };
        head.proxies[index].in_barrier = true;
        head.round_pairs.extend(pairs);
        if !head.proxies.iter().all(|p| p.in_barrier) {
            return;
        }
        let pairs = std::mem::take(&mut head.round_pairs);
        let frame = ToProxy::BarrierOut { pairs: pairs.clone() }.encode();
        let mut lost = Vec::new();
        for (other, proxy) in head.proxies.iter_mut().enumerate() {
            proxy.in_barrier = false;
            if let Some(link) = &mut proxy.link
                && link.send(&frame).is_err()
            {
                lost.push(other);
            }
        }
        self.kvs.extend(pairs);
        for other in lost {
            self.on_proxy_lost(other);
        }
    }

    /// A proxy's connection closed. After its ranks all reported their endings that is how
    /// a proxy finishes; before, its host is lost (the proxy killed, the host down) and so
    /// is the job.
    fn on_proxy_lost(&mut self, index: usize) {
        let Role::Head(head) = &mut self.role else {
            return;
        };
        let proxy = &mut head.proxies[index];
        proxy.link = None;
        let host = proxy.host.clone();
        let lost: Vec<usize> = proxy.ranks.iter().copied().filter(|&r| self.ranks[r].ending.is_none()).collect();
        if lost.is_empty() {
            return;
        }
        let now = Instant::now();
        if self.shutdown.is_none() {
            for &rank in &lost {
                report(&format!("{} lost: the proxy on {host} ended or its connection broke", self.who(rank)));
            }
        }
        for &rank in &lost {
            self.ranks[rank].ending = Some(Ending::Signaled(libc::SIGKILL));
            self.ranks[rank].ended_at = Some(now);
        }
        self.begin_shutdown(1, libc::SIGTERM);
    }

    /// A launcher ended: before its proxy connected, the proxy could not start.
    fn on_launcher_ended(&mut self, pid: i32, ending: Ending) {
        let Role::Head(head) = &mut self.role else {
            return;
        };
        let Some(proxy) = head.proxies.iter_mut().find(|p| p.launcher_pid == pid) else {
            return;
        };
        proxy.launcher_reaped = true;
        if proxy.started {
            return; // its connection tells how it went
        }
        let host = proxy.host.clone();
        if self.shutdown.is_none() {
            let how = match ending {
                Ending::Exited(code) => format!("exited with code {code}"),
                Ending::Signaled(signo) => format!("was killed by signal {signo}"),
            };
            report(&format!("cannot start the proxy on host {host}: the launcher {how} before the proxy connected"));
        }
        let Role::Head(head) = &mut self.role else {
            return;
        };
        let now = Instant::now();
        if let Some(proxy) = head.proxies.iter_mut().find(|p| p.launcher_pid == pid) {
            proxy.started = true; // no longer waited for
            for &rank in &proxy.ranks {
                self.ranks[rank].ending.get_or_insert(Ending::Signaled(libc::SIGKILL));
                self.ranks[rank].ended_at.get_or_insert(now);
            }
        }
        self.begin_shutdown(1, libc::SIGTERM);
    }
}

impl Rank {
    /// The record mpiexec keeps of a rank running under a proxy.
    fn remote(world: usize) -> Rank {
        Rank {
            world,
            job: 0,
            pid: 0,
            ending: None,
            ended_at: None,
            pmi: None,
            pmi_initialized: false,
            finalized: false,
            in_barrier: false,
            stdout: None,
            stderr: None,
        }
    }
}

/// What a polled descriptor belongs to.
#[derive(Debug, Clone, Copy)]
enum Source {
    Signals,
    Pmi(usize),
    Output(usize, Sink),
    /// A proxy's connection to mpiexec.
    Upstream,
    /// mpiexec's listening socket, while proxies have yet to connect.
    Listener,
    /// mpiexec's connection to proxy `n`.
    Proxy(usize),
    /// mpiexec's stdin, for rank 0 on another host.
    Stdin,
}

/// One command of a spawn request (PMI-1 `mcmd=spawn`: `nprocs`, `execname`, `argcnt` and
/// `arg1`.., `preput_num` and `preput_key_i`/`preput_val_i`, `info_num` and
/// `info_key_i`/`info_val_i`).
struct SpawnPart {
    nprocs: usize,
    program: String,
    args: Vec<String>,
    preput: Vec<(String, String)>,
    /// `wdir`: the processes' working directory.
    wdir: Option<std::path::PathBuf>,
    /// `path`: directories searched for a program named without a '/'.
    path: Option<String>,
    /// `host`: where to run (this machine's names only).
    host: Option<String>,
}

impl SpawnPart {
    fn parse(fields: &[(String, String)]) -> SpawnPart {
        let get = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let count = |key: &str| get(key).and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(0);
        let args = (1..=count("argcnt")).filter_map(|i| get(&format!("arg{i}"))).collect();
        let pairs = |num: &str, k: &str, v: &str| -> Vec<(String, String)> {
            (0..count(num)).filter_map(|i| Some((get(&format!("{k}_{i}"))?, get(&format!("{v}_{i}"))?))).collect()
        };
        let preput = pairs("preput_num", "preput_key", "preput_val");
        // MPICH's simple PMI names them info_key_i / info_val_i, Hydra's docs infokey_i.
        let mut info = pairs("info_num", "info_key", "info_val");
        info.extend(pairs("info_num", "infokey", "infoval"));
        let info_of = |key: &str| info.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        SpawnPart {
            nprocs: count("nprocs"),
            program: get("execname").unwrap_or_default(),
            args,
            preput,
            wdir: info_of("wdir").map(Into::into),
            path: info_of("path"),
            host: info_of("host"),
        }
    }

    /// The program to run, or why this command cannot start.
    fn resolve(&self) -> Result<std::path::PathBuf, String> {
        if let Some(host) = &self.host
            && !crate::placement::is_local(host)
        {
            return Err(format!(
                "host {host:?}: MPI_Comm_spawn starts processes on this machine only (mpiexec runs on one host)"
            ));
        }
        if let Some(dir) = &self.wdir
            && !dir.is_dir()
        {
            return Err(format!("wdir {}: not a directory", dir.display()));
        }
        if self.program.is_empty() {
            return Err("no program to spawn".to_string());
        }
        let named = std::path::Path::new(&self.program);
        if self.program.contains('/') {
            // Relative to the working directory the processes get.
            return Ok(match &self.wdir {
                Some(dir) if named.is_relative() => std::env::current_dir().unwrap_or_default().join(named),
                _ => named.to_path_buf(),
            });
        }
        // `path` first, then the usual search of PATH by exec.
        for dir in self.path.iter().flat_map(|p| p.split(':')).filter(|d| !d.is_empty()) {
            let candidate = std::path::Path::new(dir).join(named);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
        Ok(named.to_path_buf())
    }
}

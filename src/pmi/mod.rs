//! Process-manager client: PMI-1 over `PMI_FD` (our `mpiexec`, MPICH's Hydra), PMI-1 over
//! `PMI_PORT`/`PMI_ID`, or singleton mode when no process manager started us.
//!
//! The library calls this only during init/finalize/abort, so it favours simplicity:
//! blocking request/response on one socket.
//!
//! Shared-memory naming contract: every file the library creates in `/dev/shm` for a job is
//! named `oxmpi-<kvsname>-<anything>` where `<kvsname>` is [`Pmi::kvsname`] (made of
//! `[A-Za-z0-9_]` only, so the prefix `oxmpi-<kvsname>-` never matches another job's files).
//! Our `mpiexec` removes every such file when the job ends, however it ends.

pub mod mapping;
pub mod wire;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use wire::Line;

/// Limits a PMI-1 server announces with `get_maxes` (Hydra's values are the fallback).
#[derive(Debug, Clone, Copy)]
struct Maxes {
    keylen_max: usize,
    vallen_max: usize,
}

const HYDRA_MAXES: Maxes = Maxes { keylen_max: 64, vallen_max: 1024 };

/// A value longer than the server accepts is stored as numbered chunks `<key>#<i>`, and the
/// key itself holds this marker followed by the chunk count.
const SPLIT_MARKER: &str = "oxmpi-split:";

/// Our `mpiexec` adds `server=oxmpi` to its init reply: it then prints abort messages itself.
const OUR_SERVER_TAG: &str = "oxmpi";

enum Channel {
    /// No process manager: a private key-value space.
    Singleton { kvs: HashMap<String, String> },
    /// A connected PMI-1 server.
    Wire { socket: File, pending: Vec<u8> },
}

/// This rank's connection to the process manager.
pub struct Pmi {
    rank: usize,
    size: usize,
    appnum: i32,
    /// The job's KVS name as the server spells it (used on the wire).
    wire_kvsname: String,
    /// [`Self::wire_kvsname`] made filename-safe (used to name shared-memory files).
    kvsname: String,
    maxes: Maxes,
    server_reports_abort: bool,
    finalized: bool,
    channel: Channel,
}

fn protocol_error(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn env_number(name: &str) -> io::Result<Option<i64>> {
    match std::env::var(name) {
        Ok(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("{name}={text:?} is not a number"))),
        Err(_) => Ok(None),
    }
}

fn required_env_number(name: &str) -> io::Result<i64> {
    env_number(name)?
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("PMI_FD is set but {name} is not")))
}

/// Makes a KVS name usable inside a file name and unambiguous as a prefix: keeps
/// `[A-Za-z0-9_]`, turns everything else into `_`, and shortens very long names (keeping them
/// distinct with a hash of the original).
pub fn sanitize_kvsname(raw: &str) -> String {
    const MAX_LEN: usize = 64;
    let safe: String = raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if safe.len() <= MAX_LEN && !safe.is_empty() {
        return safe;
    }
    // FNV-1a: a stable hash, so every rank derives the same name.
    let hash = raw.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
    format!("{}_{hash:016x}", &safe[..safe.len().min(MAX_LEN - 17)])
}

/// The `/dev/shm` file-name prefix of a job's shared-memory files: `oxmpi-<kvsname>-`.
pub fn shm_prefix(kvsname: &str) -> String {
    format!("oxmpi-{kvsname}-")
}

/// Sixteen random hex digits, for job names that must not collide.
pub fn random_hex() -> String {
    let mut bytes = [0u8; 8];
    let from_urandom = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if from_urandom.is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        bytes = (nanos ^ (u64::from(std::process::id()) << 32)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Pmi {
    /// Connects using `PMI_FD` (+`PMI_RANK`, `PMI_SIZE`) when set, else `PMI_PORT` + `PMI_ID`,
    /// else runs as a singleton (rank 0 of 1, local KVS, kvsname `singleton_<pid>_<hex>`).
    pub fn init() -> io::Result<Pmi> {
        if let Some(fd) = env_number("PMI_FD")? {
            let rank = required_env_number("PMI_RANK")?;
            let size = required_env_number("PMI_SIZE")?;
            let socket = adopt_fd(fd)?;
            return Pmi::connect(socket, rank, size);
        }
        if let Ok(port) = std::env::var("PMI_PORT") {
            return Pmi::connect_port(&port, env_number("PMI_ID")?.unwrap_or(0));
        }
        let wire_kvsname = format!("singleton_{}_{}", std::process::id(), &random_hex()[..8]);
        Ok(Pmi {
            rank: 0,
            size: 1,
            appnum: 0,
            kvsname: sanitize_kvsname(&wire_kvsname),
            wire_kvsname,
            maxes: HYDRA_MAXES,
            server_reports_abort: false,
            finalized: false,
            channel: Channel::Singleton { kvs: HashMap::new() },
        })
    }

    /// `PMI_PORT=host:port`, `PMI_ID=<id>`: the server tells us size and rank after `initack`.
    fn connect_port(port: &str, id: i64) -> io::Result<Pmi> {
        let stream = std::net::TcpStream::connect(port)?;
        stream.set_nodelay(true)?;
        let mut pmi = Pmi::unconnected(File::from(OwnedFd::from(stream)));
        pmi.call(&Line::cmd("initack").with("pmiid", id), "initack")?;
        // The server follows initack with `set size=`, `set rank=` and `set debug=`: read all
        // three, or the last would be taken for the reply to the next request.
        let (mut rank, mut size, mut debug) = (None, None, None);
        while rank.is_none() || size.is_none() || debug.is_none() {
            let line = pmi.receive()?;
            let number = |key| line.get(key).and_then(|v| v.parse::<i64>().ok());
            if line.command() == Some("set") {
                rank = rank.or(number("rank"));
                size = size.or(number("size"));
                debug = debug.or(number("debug"));
            }
        }
        let (rank, size) = (rank.unwrap_or(0), size.unwrap_or(1));
        let Channel::Wire { socket, .. } = pmi.channel else { unreachable!("built as Wire above") };
        Pmi::connect(socket, rank, size)
    }

    fn unconnected(socket: File) -> Pmi {
        Pmi {
            rank: 0,
            size: 1,
            appnum: 0,
            wire_kvsname: String::new(),
            kvsname: String::new(),
            maxes: HYDRA_MAXES,
            server_reports_abort: false,
            finalized: false,
            channel: Channel::Wire { socket, pending: Vec::new() },
        }
    }

    /// The PMI-1 handshake: init, limits, appnum, KVS name.
    fn connect(socket: File, rank: i64, size: i64) -> io::Result<Pmi> {
        if size < 1 || rank < 0 || rank >= size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("PMI rank {rank} is not within size {size}"),
            ));
        }
        let mut pmi = Pmi::unconnected(socket);
        pmi.rank = rank as usize;
        pmi.size = size as usize;
        let init = Line::cmd("init").with("pmi_version", 1).with("pmi_subversion", 1);
        let reply = pmi.call(&init, "response_to_init")?;
        if reply.rc() != 0 {
            return Err(protocol_error(format!("PMI server refused PMI-1.1: {}", reply.encode().trim_end())));
        }
        pmi.server_reports_abort = reply.get("server") == Some(OUR_SERVER_TAG);
        let maxes = pmi.call(&Line::cmd("get_maxes"), "maxes")?;
        let limit = |key, fallback| maxes.get(key).and_then(|v| v.parse().ok()).unwrap_or(fallback);
        pmi.maxes = Maxes {
            keylen_max: limit("keylen_max", HYDRA_MAXES.keylen_max),
            vallen_max: limit("vallen_max", HYDRA_MAXES.vallen_max),
        };
        let appnum = pmi.call(&Line::cmd("get_appnum"), "appnum")?;
        pmi.appnum = appnum.get("appnum").and_then(|v| v.parse().ok()).unwrap_or(0);
        let name = pmi.call(&Line::cmd("get_my_kvsname"), "my_kvsname")?;
        pmi.wire_kvsname = name
            .get("kvsname")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| protocol_error("PMI server sent no kvsname".into()))?
            .to_string();
        pmi.kvsname = sanitize_kvsname(&pmi.wire_kvsname);
        log::debug!("pmi: rank {} of {}, kvs {}", pmi.rank, pmi.size, pmi.wire_kvsname);
        Ok(pmi)
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn appnum(&self) -> i32 {
        self.appnum
    }

    pub fn is_singleton(&self) -> bool {
        matches!(self.channel, Channel::Singleton { .. })
    }

    /// The job's name, filename-safe (`[A-Za-z0-9_]`): shared-memory files are named
    /// `/dev/shm/oxmpi-<kvsname>-*` (see [`shm_prefix`]).
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Publishes `key=value` in the job's KVS; other ranks see it after the next [`Self::fence`].
    /// Neither may contain whitespace. Values longer than the server's limit are split.
    pub fn put(&mut self, key: &str, value: &str) -> io::Result<()> {
        if key.is_empty() || !wire::is_wire_safe(key) || !wire::is_wire_safe(value) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("PMI key/value must be non-empty key and contain no whitespace: {key:?}"),
            ));
        }
        if let Channel::Singleton { kvs } = &mut self.channel {
            kvs.insert(key.to_string(), value.to_string());
            return Ok(());
        }
        // Hydra silently truncates values at vallen_max - 1 bytes.
        let chunk_max = self.maxes.vallen_max.saturating_sub(1).max(16);
        if value.len() <= chunk_max && !value.starts_with(SPLIT_MARKER) {
            return self.put_one(key, value);
        }
        let mut chunks = Vec::new();
        let mut rest = value;
        while !rest.is_empty() {
            let mut end = rest.len().min(chunk_max);
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            chunks.push(&rest[..end]);
            rest = &rest[end..];
        }
        for (index, chunk) in chunks.iter().enumerate() {
            self.put_one(&format!("{key}#{index}"), chunk)?;
        }
        self.put_one(key, &format!("{SPLIT_MARKER}{}", chunks.len()))
    }

    fn put_one(&mut self, key: &str, value: &str) -> io::Result<()> {
        if key.len() >= self.maxes.keylen_max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("PMI key {key:?} is longer than the server's limit ({})", self.maxes.keylen_max - 1),
            ));
        }
        let request = Line::cmd("put").with("kvsname", &self.wire_kvsname).with("key", key).with("value", value);
        let reply = self.call(&request, "put_result")?;
        if reply.rc() != 0 {
            return Err(protocol_error(format!("PMI put {key:?} failed: {}", reply.encode().trim_end())));
        }
        Ok(())
    }

    /// Commit + barrier: after it returns, every rank's earlier puts are visible to [`Self::get`].
    pub fn fence(&mut self) -> io::Result<()> {
        if self.is_singleton() {
            return Ok(());
        }
        self.call(&Line::cmd("barrier_in"), "barrier_out").map(drop)
    }

    /// Looks `key` up in the job's KVS; `None` when no rank put it.
    pub fn get(&mut self, key: &str) -> io::Result<Option<String>> {
        let Some(value) = self.get_one(key)? else {
            return Ok(None);
        };
        let Some(count) = value.strip_prefix(SPLIT_MARKER) else {
            return Ok(Some(value));
        };
        let count: usize =
            count.parse().map_err(|_| protocol_error(format!("PMI key {key:?} has a bad chunk count")))?;
        let mut joined = String::new();
        for index in 0..count {
            let chunk = self
                .get_one(&format!("{key}#{index}"))?
                .ok_or_else(|| protocol_error(format!("PMI key {key:?} is missing chunk {index}")))?;
            joined.push_str(&chunk);
        }
        Ok(Some(joined))
    }

    fn get_one(&mut self, key: &str) -> io::Result<Option<String>> {
        if let Channel::Singleton { kvs } = &self.channel {
            return Ok(kvs.get(key).cloned());
        }
        let request = Line::cmd("get").with("kvsname", &self.wire_kvsname).with("key", key);
        let reply = self.call(&request, "get_result")?;
        if reply.rc() != 0 {
            return Ok(None);
        }
        Ok(reply.get("value").map(str::to_string))
    }

    /// The node index of every rank, from `PMI_process_mapping`; all zeros when the process
    /// manager does not publish one (or in singleton mode).
    pub fn node_ids(&mut self) -> io::Result<Vec<usize>> {
        if self.is_singleton() {
            return Ok(vec![0]);
        }
        match self.get_one("PMI_process_mapping")? {
            Some(mapping) => mapping::node_ids_from_mapping(&mapping, self.size),
            None => Ok(vec![0; self.size]),
        }
    }

    /// Tells the process manager to kill the job with exit code `code`, then exits.
    pub fn abort(&mut self, code: i32, msg: &str) -> ! {
        let code = abort_exit_status(code);
        let reported_by_server = match &self.channel {
            Channel::Singleton { .. } => false,
            Channel::Wire { .. } => self.server_reports_abort,
        };
        if !reported_by_server && !msg.is_empty() {
            // One write, and read by the launcher before it hears of the abort: a launcher
            // that forwards output (Hydra's proxies) kills the job on the abort and may exit
            // with part of the line, or none of it, still in the pipe.
            let line = format!("oxmpi: rank {} aborting job (code {code}): {msg}\n", self.rank);
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            wait_drained(libc::STDERR_FILENO, 1000);
        }
        if let Channel::Wire { socket, .. } = &mut self.channel {
            let request = Line::cmd("abort").with("exitcode", code).with("error_msg", wire::escape_text(msg));
            if socket.write_all(request.encode().as_bytes()).is_ok() {
                // The manager kills us; give it a moment so the job ends with its report
                // rather than with our exit racing it. Returning early (EOF, timeout) is fine.
                wait_readable(socket.as_raw_fd(), 3000);
            }
        }
        std::process::exit(code)
    }

    /// Tells the process manager this rank is done with PMI (MPI_Finalize).
    pub fn finalize(&mut self) -> io::Result<()> {
        if self.finalized || self.is_singleton() {
            self.finalized = true;
            return Ok(());
        }
        self.call(&Line::cmd("finalize"), "finalize_ack")?;
        self.finalized = true;
        Ok(())
    }

    /// Sends one request and waits for the reply named `expect`.
    fn call(&mut self, request: &Line, expect: &str) -> io::Result<Line> {
        let Channel::Wire { socket, .. } = &mut self.channel else {
            return Err(io::Error::other("PMI request in singleton mode"));
        };
        log::trace!("pmi -> {}", request.encode().trim_end());
        socket.write_all(request.encode().as_bytes())?;
        let reply = self.receive()?;
        if reply.command() != Some(expect) {
            return Err(protocol_error(format!(
                "PMI server replied {:?} to {:?} (expected cmd={expect})",
                reply.encode().trim_end(),
                request.command().unwrap_or("")
            )));
        }
        Ok(reply)
    }

    /// Reads one line from the server.
    fn receive(&mut self) -> io::Result<Line> {
        let Channel::Wire { socket, pending } = &mut self.channel else {
            return Err(io::Error::other("PMI read in singleton mode"));
        };
        loop {
            if let Some(newline) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=newline).collect();
                let text = String::from_utf8_lossy(&line);
                log::trace!("pmi <- {}", text.trim_end());
                return Ok(Line::parse(&text));
            }
            let mut buffer = [0u8; 4096];
            match socket.read(&mut buffer) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the process manager closed the PMI connection",
                    ));
                }
                Ok(n) => pending.extend_from_slice(&buffer[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Takes ownership of the inherited `PMI_FD`, after checking it is open, and marks it
/// close-on-exec so programs the rank starts do not hold the connection open (which would hide
/// the rank's death from the launcher).
fn adopt_fd(fd: i64) -> io::Result<File> {
    let fd = i32::try_from(fd).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "PMI_FD out of range"))?;
    // SAFETY: fcntl on an arbitrary integer is harmless; it tells us whether the fd is open.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if fd < 0 || flags < 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("PMI_FD={fd} is not an open file descriptor")));
    }
    // SAFETY: as above, on an fd we just found open.
    unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
    // SAFETY: the process manager handed this descriptor to this process for PMI; nothing
    // else in the process uses it, so owning (and eventually closing) it here is sound.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Waits up to `timeout_ms` for `fd` to become readable (or hang up).
fn wait_readable(fd: i32, timeout_ms: i32) {
    let mut poll_fd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, count 1.
    unsafe { libc::poll(&mut poll_fd, 1, timeout_ms) };
}

/// Waits up to `timeout_ms` until a pipe at `fd` has been read empty (at once when `fd` is not
/// a pipe: a file or terminal has nobody to wait for).
fn wait_drained(fd: i32, timeout_ms: u64) {
    // SAFETY: fstat writes one stat struct.
    let is_pipe = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFIFO
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(timeout_ms);
    while is_pipe {
        let mut pending: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int; on a pipe it counts the unread bytes, from either end.
        if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut pending) } != 0 || pending == 0 {
            return;
        }
        if std::time::Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The exit status of a job aborted with `code` (MPI_Abort's errorcode, a fatal error's
/// class): the code modulo 256 as exit(2) keeps it, except that an abort never looks like
/// success, so a code that would give 0 (0, 256, -256, ...) gives 1. -1 gives 255, as in
/// MPICH.
pub fn abort_exit_status(code: i32) -> i32 {
    match code.rem_euclid(256) {
        0 => 1,
        status => status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abort_never_exits_0() {
        for (code, status) in [
            (1, 1),
            (7, 7),
            (255, 255),
            (-1, 255),
            (0, 1),
            (256, 1),
            (257, 1),
            (-256, 1),
            (i32::MIN, 1),
            (i32::MAX, 255),
        ] {
            assert_eq!(abort_exit_status(code), status, "code {code}");
        }
    }

    #[test]
    fn sanitizes_kvsnames() {
        assert_eq!(sanitize_kvsname("kvs_4234_0_1601662086_vm"), "kvs_4234_0_1601662086_vm");
        assert_eq!(sanitize_kvsname("kvs_1_0_host.example-x"), "kvs_1_0_host_example_x");
        let long = "k".repeat(300);
        let short = sanitize_kvsname(&long);
        assert!(short.len() <= 64 && short.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        assert_ne!(short, sanitize_kvsname(&format!("{long}x")));
        assert_eq!(shm_prefix("oxmpi12_ab"), "oxmpi-oxmpi12_ab-");
    }

    /// A one-client PMI-1 server over TCP, enough for the client's requests.
    fn fake_server(listener: std::net::TcpListener) {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = io::BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        let mut kvs = HashMap::from([("PMI_process_mapping".to_string(), "(vector,(0,2,2))".to_string())]);
        let mut line = String::new();
        while io::BufRead::read_line(&mut reader, &mut line).unwrap() > 0 {
            let request = Line::parse(&line);
            line.clear();
            let replies: Vec<Line> = match request.command().unwrap() {
                "initack" => vec![
                    Line::cmd("initack"),
                    Line::cmd("set").with("size", 4),
                    Line::cmd("set").with("rank", request.get("pmiid").unwrap()),
                    Line::cmd("set").with("debug", 0),
                ],
                "init" => vec![Line::cmd("response_to_init").with("pmi_version", 1).with("rc", 0)],
                "get_maxes" => vec![Line::cmd("maxes").with("keylen_max", 64).with("vallen_max", 32)],
                "get_appnum" => vec![Line::cmd("appnum").with("appnum", 2)],
                "get_my_kvsname" => vec![Line::cmd("my_kvsname").with("kvsname", "kvs-x.y")],
                "put" => {
                    assert_eq!(request.get("kvsname"), Some("kvs-x.y"));
                    let value = request.get("value").unwrap();
                    assert!(value.len() < 32, "chunk of {} bytes", value.len());
                    kvs.insert(request.get("key").unwrap().into(), value.into());
                    vec![Line::cmd("put_result").with("rc", 0)]
                }
                "get" => vec![match kvs.get(request.get("key").unwrap()) {
                    Some(v) => Line::cmd("get_result").with("rc", 0).with("value", v),
                    None => Line::cmd("get_result").with("rc", -1).with("value", "unknown"),
                }],
                "barrier_in" => vec![Line::cmd("barrier_out")],
                "finalize" => vec![Line::cmd("finalize_ack")],
                other => panic!("unexpected {other}"),
            };
            for reply in replies {
                writer.write_all(reply.encode().as_bytes()).unwrap();
            }
        }
    }

    #[test]
    fn pmi_port_client_splits_long_values() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || fake_server(listener));
        let mut pmi = Pmi::connect_port(&address, 3).unwrap();
        assert_eq!((pmi.rank(), pmi.size(), pmi.appnum()), (3, 4, 2));
        assert!(!pmi.is_singleton());
        assert_eq!(pmi.kvsname(), "kvs_x_y");
        let long: String = (0..100).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        pmi.put("card", &long).unwrap();
        pmi.put("short", "v=1").unwrap();
        pmi.put("tricky", &format!("{SPLIT_MARKER}9")).unwrap();
        pmi.fence().unwrap();
        assert_eq!(pmi.get("card").unwrap(), Some(long));
        assert_eq!(pmi.get("short").unwrap().as_deref(), Some("v=1"));
        assert_eq!(pmi.get("tricky").unwrap(), Some(format!("{SPLIT_MARKER}9")));
        assert_eq!(pmi.get("absent").unwrap(), None);
        assert_eq!(pmi.node_ids().unwrap(), vec![0, 0, 1, 1]);
        assert!(pmi.put(&"k".repeat(64), "v").is_err());
        pmi.finalize().unwrap();
        pmi.finalize().unwrap();
        drop(pmi);
        server.join().unwrap();
    }

    #[test]
    fn random_hex_is_sixteen_digits() {
        let token = random_hex();
        assert_eq!(token.len(), 16);
        assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
    }
}

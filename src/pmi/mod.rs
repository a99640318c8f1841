//! Process-manager client: PMI-1 over `PMI_FD` (our `mpiexec`, MPICH's Hydra), PMI-2 over
//! `PMI_FD` (Slurm's `srun --mpi=pmi2`, Hydra), PMIx through libpmix (Slurm's `srun
//! --mpi=pmix`, see [`pmix`]), PMI-1 over `PMI_PORT`/`PMI_ID`, or singleton mode when no
//! process manager started us.
//!
//! All of them serve the same few needs (rank and size, the job's name, a key-value space
//! with a fence, the process mapping, abort, finalize), so [`Pmi`] offers them once and
//! speaks whichever [`Version`] was chosen at init: `OXMPI_PMI=1|2|x` when set, else PMI-2
//! when the environment is Slurm's `mpi/pmi2` plugin's (`PMI_FD` with `PMI_JOBID`), else
//! PMI-1 on `PMI_FD`, else PMIx when a PMIx server started us (`PMIX_NAMESPACE`).
//!
//! The library calls this only during init/finalize/abort, so it favours simplicity:
//! blocking request/response on one socket.
//!
//! Shared-memory naming contract: every file the library creates in `/dev/shm` for a job is
//! named `oxmpi-<kvsname>-<anything>` where `<kvsname>` is [`Pmi::kvsname`] (made of
//! `[A-Za-z0-9_]` only, so the prefix `oxmpi-<kvsname>-` never matches another job's files).
//! Our `mpiexec` removes every such file when the job ends, however it ends.

pub mod mapping;
pub mod pmix;
pub mod pmix_sys;
pub mod wire;
pub mod wire2;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use wire::Line;
use wire2::Command;

/// Limits a PMI-1 server announces with `get_maxes` (Hydra's values are the fallback).
#[derive(Debug, Clone, Copy)]
struct Maxes {
    keylen_max: usize,
    vallen_max: usize,
}

const HYDRA_MAXES: Maxes = Maxes { keylen_max: 64, vallen_max: 1024 };

/// PMI-2 has no `get_maxes`: its limits are fixed (`PMI2_MAX_KEYLEN`, `PMI2_MAX_VALLEN` of
/// MPICH's and Slurm's headers).
const PMI2_MAXES: Maxes = Maxes { keylen_max: 64, vallen_max: 1024 };

/// The interface spoken with the process manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// PMI-1.1: one line per command, `key=value` fields separated by spaces.
    One,
    /// PMI-2.0: length-prefixed `cmd=...;key=value;` messages (see [`wire2`]).
    Two,
    /// PMIx, through the PMIx library (see [`pmix`]).
    X,
}

impl Version {
    /// The version to speak on `PMI_FD`: `OXMPI_PMI` when set (1 or 2; `MPI_Init` has
    /// already refused other values), else PMI-2 when `PMI_JOBID` is set (Slurm's pmi2 plugin
    /// sets it; Hydra and our `mpiexec` do not), else PMI-1.
    fn for_fd() -> Version {
        match std::env::var(crate::config::PMI).map(|v| v.trim().to_string()).as_deref() {
            Ok("1") => Version::One,
            Ok("2") => Version::Two,
            _ if std::env::var_os("PMI_JOBID").is_some() => Version::Two,
            _ => Version::One,
        }
    }
}

/// A value longer than the server accepts is stored as numbered chunks `<key>#<i>`, and the
/// key itself holds this marker followed by the chunk count.
const SPLIT_MARKER: &str = "oxmpi-split:";

/// Our `mpiexec` adds `server=oxmpi` to its init reply: it then prints abort messages itself.
const OUR_SERVER_TAG: &str = "oxmpi";

enum Channel {
    /// No process manager: a private key-value space.
    Singleton { kvs: HashMap<String, String> },
    /// A connected PMI server, spoken to in `version`.
    Wire { socket: File, pending: Vec<u8>, version: Version },
    /// A PMIx server, through its library.
    Pmix(pmix::Pmix),
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
    /// PMI-2 served by something other than Slurm's pmi2 plugin (which sets `PMI_JOBID`),
    /// in practice Hydra, whose PMI-2 server differs from Slurm's in two ways that matter:
    /// its `kvs-fence` returns before the other ranks reach it (its `kvs-get` waits for the
    /// key instead), so [`Self::fence`] completes it by reading a key every rank puts before
    /// fencing; and Hydra 4.0 does not know PMI-2's `abort` (it fails with "Unrecognized PMI
    /// command"), so [`Self::abort`] just exits with the code, which Hydra reports.
    fence_reads_keys: bool,
    /// Fences done so far (names the keys of the next one).
    fences: u64,
    finalized: bool,
    channel: Channel,
}

/// One program of a spawn request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnCommand {
    pub program: String,
    pub args: Vec<String>,
    pub maxprocs: usize,
    /// Info keys the process manager reads (`host`, `wdir`, `path`, ...).
    pub info: Vec<(String, String)>,
}

/// What a spawn request gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnOutcome {
    /// The new job's KVS name; `None` when it did not start.
    pub kvsname: Option<String>,
    /// Per process, in order: 0 when it started, else nonzero.
    pub errcodes: Vec<i32>,
    /// The process manager's reason when it did not start.
    pub message: String,
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
    /// On `PMI_FD` the protocol is PMI-1 or PMI-2 as [`Version::for_fd`] decides.
    pub fn init() -> io::Result<Pmi> {
        let forced = std::env::var(crate::config::PMI).map(|v| v.trim().to_ascii_lowercase()).unwrap_or_default();
        if forced == "x" || (forced.is_empty() && std::env::var_os("PMI_FD").is_none() && pmix::offered()) {
            return Pmi::connect_pmix();
        }
        if let Some(fd) = env_number("PMI_FD")? {
            let rank = required_env_number("PMI_RANK")?;
            let version = Version::for_fd();
            let socket = adopt_fd(fd)?;
            if version == Version::Two {
                let jobid = std::env::var("PMI_JOBID").ok().filter(|j| !j.trim().is_empty());
                return Pmi::connect2(socket, rank, jobid.as_deref());
            }
            let size = required_env_number("PMI_SIZE")?;
            return Pmi::connect(socket, rank, size);
        }
        if let Ok(port) = std::env::var("PMI_PORT") {
            if std::env::var(crate::config::PMI).is_ok_and(|v| v.trim() == "2") {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "OXMPI_PMI=2: PMI-2 is spoken on PMI_FD only, and the process manager gave PMI_PORT",
                ));
            }
            return Pmi::connect_port(&port, env_number("PMI_ID")?.unwrap_or(0));
        }
        if let Some(line) = srun_without_pmi(|name| std::env::var(name).ok()) {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        }
        let wire_kvsname = format!("singleton_{}_{}", std::process::id(), &random_hex()[..8]);
        Ok(Pmi::without_wire(0, 1, 0, wire_kvsname, Channel::Singleton { kvs: HashMap::new() }))
    }

    /// A connection whose rank, size, application number and job name are known at once
    /// (singleton, PMIx), with none of the wire protocols' limits and options.
    fn without_wire(rank: usize, size: usize, appnum: i32, wire_kvsname: String, channel: Channel) -> Pmi {
        Pmi {
            rank,
            size,
            appnum,
            kvsname: sanitize_kvsname(&wire_kvsname),
            wire_kvsname,
            maxes: HYDRA_MAXES,
            server_reports_abort: false,
            fence_reads_keys: false,
            fences: 0,
            finalized: false,
            channel,
        }
    }

    /// `PMI_PORT=host:port`, `PMI_ID=<id>`: the server tells us size and rank after `initack`.
    fn connect_port(port: &str, id: i64) -> io::Result<Pmi> {
        let stream = std::net::TcpStream::connect(port)?;
        stream.set_nodelay(true)?;
        let mut pmi = Pmi::unconnected(File::from(OwnedFd::from(stream)), Version::One);
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

    fn unconnected(socket: File, version: Version) -> Pmi {
        Pmi {
            rank: 0,
            size: 1,
            appnum: 0,
            wire_kvsname: String::new(),
            kvsname: String::new(),
            maxes: HYDRA_MAXES,
            server_reports_abort: false,
            fence_reads_keys: false,
            fences: 0,
            finalized: false,
            channel: Channel::Wire { socket, pending: Vec::new(), version },
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
        let mut pmi = Pmi::unconnected(socket, Version::One);
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
        // Slurm's pmi2 plugin, which serves PMI-1 too, answers -1: one program, application 0.
        pmi.appnum = appnum.get("appnum").and_then(|v| v.parse::<i32>().ok()).unwrap_or(0).max(0);
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

    /// PMIx: the library connects; rank, size and application number are the server's.
    fn connect_pmix() -> io::Result<Pmi> {
        let x = pmix::Pmix::init()?;
        let size = x
            .job_number(c"pmix.job.size")?
            .ok_or_else(|| protocol_error("the PMIx server gives no job size (pmix.job.size)".into()))?
            as usize;
        let rank = x.rank();
        if size < 1 || rank >= size {
            return Err(protocol_error(format!("PMIx rank {rank} is not within size {size}")));
        }
        let appnum = x.proc_number(rank, c"pmix.appnum")?.unwrap_or(0) as i32;
        let wire_kvsname = x.namespace();
        log::debug!("pmix: rank {rank} of {size}, namespace {wire_kvsname}");
        Ok(Pmi::without_wire(rank, size, appnum.max(0), wire_kvsname, Channel::Pmix(x)))
    }

    /// The PMI-2 handshake: `init` in PMI-1 form asking for version 2.0, then `fullinit`
    /// (rank, size, appnum) and `job-getid` (the job's name, used as the KVS name).
    /// `rank` is `PMI_RANK`; `jobid` is `PMI_JOBID` (Slurm requires it in `fullinit`).
    fn connect2(socket: File, rank: i64, jobid: Option<&str>) -> io::Result<Pmi> {
        let mut pmi = Pmi::unconnected(socket, Version::Two);
        pmi.maxes = PMI2_MAXES;
        // Slurm's pmi2 plugin (the one that sets PMI_JOBID) fences as a barrier.
        pmi.fence_reads_keys = jobid.is_none();
        let init = Line::cmd("init").with("pmi_version", 2).with("pmi_subversion", 0);
        let Channel::Wire { socket, .. } = &mut pmi.channel else { unreachable!("built as Wire above") };
        log::trace!("pmi -> {}", init.encode().trim_end());
        socket.write_all(init.encode().as_bytes())?;
        let reply = pmi.receive()?;
        if reply.command() != Some("response_to_init") || reply.rc() != 0 || reply.get("pmi_version") != Some("2") {
            return Err(protocol_error(format!(
                "the process manager does not speak PMI-2 (it answered {:?} to init with pmi_version=2); \
                 set OXMPI_PMI=1 to use PMI-1",
                reply.encode().trim_end()
            )));
        }
        let mut fullinit = Command::cmd("fullinit");
        if let Some(jobid) = jobid {
            fullinit = fullinit.with("pmijobid", jobid);
        }
        let fullinit = fullinit.with("pmirank", rank).with("threaded", "FALSE");
        let reply = pmi.call2(&fullinit, "fullinit-response")?;
        let number = |key: &str| -> io::Result<i64> {
            reply.get(key).and_then(|v| v.trim().parse().ok()).ok_or_else(|| {
                protocol_error(format!("PMI-2 fullinit-response has no number {key}=: {:?}", reply.body()))
            })
        };
        let (rank, size) = (number("rank")?, number("size")?);
        if size < 1 || rank < 0 || rank >= size {
            return Err(protocol_error(format!("PMI-2 rank {rank} is not within size {size}")));
        }
        pmi.rank = rank as usize;
        pmi.size = size as usize;
        // Slurm answers appnum=-1 (it does not number the programs of a job): one program,
        // application 0, as under PMI-1.
        pmi.appnum = reply.get("appnum").and_then(|v| v.trim().parse::<i32>().ok()).unwrap_or(0).max(0);
        let reply = pmi.call2(&Command::cmd("job-getid"), "job-getid-response")?;
        pmi.wire_kvsname = reply
            .get("jobid")
            .filter(|j| !j.is_empty())
            .ok_or_else(|| protocol_error("PMI-2 job-getid-response has no jobid".into()))?
            .to_string();
        pmi.kvsname = sanitize_kvsname(&pmi.wire_kvsname);
        log::debug!("pmi-2: rank {} of {}, job {}", pmi.rank, pmi.size, pmi.wire_kvsname);
        Ok(pmi)
    }

    /// The wire protocol spoken with the process manager (`None` for a singleton).
    pub fn version(&self) -> Option<Version> {
        match self.channel {
            Channel::Singleton { .. } => None,
            Channel::Wire { version, .. } => Some(version),
            Channel::Pmix(_) => Some(Version::X),
        }
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

    /// The job's KVS name as the process manager spells it.
    pub fn wire_kvsname(&self) -> &str {
        &self.wire_kvsname
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
        match &mut self.channel {
            Channel::Singleton { kvs } => {
                kvs.insert(key.to_string(), value.to_string());
                return Ok(());
            }
            // No value limit: no chunks.
            Channel::Pmix(x) => return x.put(key, value),
            Channel::Wire { .. } => {}
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
        if self.version() == Some(Version::Two) {
            let request = Command::cmd("kvs-put").with("key", key).with("value", value);
            return self.call2(&request, "kvs-put-response").map(drop);
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
        match &mut self.channel {
            Channel::Singleton { .. } => Ok(()),
            Channel::Pmix(x) => x.fence(),
            Channel::Wire { version: Version::Two, .. } => self.fence2(),
            Channel::Wire { .. } => self.call(&Line::cmd("barrier_in"), "barrier_out").map(drop),
        }
    }

    /// PMI-2 fence: `kvs-fence`, then, where the server's fence is not a barrier, a read of
    /// every other rank's key of this round (each `kvs-get` waits until that rank has fenced).
    fn fence2(&mut self) -> io::Result<()> {
        let round = self.fences;
        self.fences += 1;
        let key = |rank: usize| format!("oxmpi-fence-{round}-{rank}");
        if self.fence_reads_keys {
            self.put_one(&key(self.rank), "1")?;
        }
        self.call2(&Command::cmd("kvs-fence"), "kvs-fence-response")?;
        if self.fence_reads_keys {
            let me = self.rank;
            for rank in (0..self.size).filter(|&r| r != me) {
                if self.get_one(&key(rank))?.is_none() {
                    return Err(protocol_error(format!("PMI-2 fence {round}: rank {rank} has not reached it")));
                }
            }
        }
        Ok(())
    }

    /// Looks `key` up as rank `owner` put it; `None` when it did not. (PMI-1 and PMI-2 have
    /// one key space for the job, PMIx one per process.)
    pub fn get(&mut self, owner: usize, key: &str) -> io::Result<Option<String>> {
        if let Channel::Pmix(x) = &mut self.channel {
            return x.get(owner, key);
        }
        self.joined(key, |pmi, k| pmi.get_one(k))
    }

    /// `key`'s value as it was put, read with `read`: the value, or the chunks a value too
    /// long for the server was split into (see `put`), joined.
    fn joined(
        &mut self,
        key: &str,
        mut read: impl FnMut(&mut Pmi, &str) -> io::Result<Option<String>>,
    ) -> io::Result<Option<String>> {
        let Some(value) = read(self, key)? else {
            return Ok(None);
        };
        let Some(count) = value.strip_prefix(SPLIT_MARKER) else {
            return Ok(Some(value));
        };
        let count: usize =
            count.parse().map_err(|_| protocol_error(format!("PMI key {key:?} has a bad chunk count")))?;
        let mut joined = String::new();
        for index in 0..count {
            let chunk = read(self, &format!("{key}#{index}"))?
                .ok_or_else(|| protocol_error(format!("PMI key {key:?} is missing chunk {index}")))?;
            joined.push_str(&chunk);
        }
        Ok(Some(joined))
    }

    fn get_one(&mut self, key: &str) -> io::Result<Option<String>> {
        if let Channel::Singleton { kvs } = &self.channel {
            return Ok(kvs.get(key).cloned());
        }
        if self.version() == Some(Version::Two) {
            // srcid -1: whichever rank put it.
            let request = Command::cmd("kvs-get").with("jobid", &self.wire_kvsname).with("srcid", -1).with("key", key);
            let reply = self.call2(&request, "kvs-get-response")?;
            return Ok(found_value(&reply));
        }
        let request = Line::cmd("get").with("kvsname", &self.wire_kvsname).with("key", key);
        let reply = self.call(&request, "get_result")?;
        if reply.rc() != 0 {
            return Ok(None);
        }
        Ok(reply.get("value").map(str::to_string))
    }

    /// Whether this process was started by a spawn of another job (`PMI_SPAWNED`, which our
    /// `mpiexec` and Hydra set).
    pub fn spawned(&self) -> bool {
        !self.is_singleton() && std::env::var("PMI_SPAWNED").is_ok_and(|v| v.trim() == "1")
    }

    /// MPI_UNIVERSE_SIZE as the process manager gives it: `None` when it gives none (Hydra
    /// and our `mpiexec` without `-usize` or hosts: any number of processes can start). A
    /// singleton can start nothing: 1.
    pub fn universe_size(&mut self) -> io::Result<Option<usize>> {
        let size = match self.version() {
            None => return Ok(Some(1)),
            Some(Version::Two) => {
                let request = Command::cmd("info-getjobattr").with("key", "universeSize");
                found_value(&self.call2(&request, "info-getjobattr-response")?)
            }
            Some(Version::One) => {
                let reply = self.call(&Line::cmd("get_universe_size"), "universe_size")?;
                if reply.rc() != 0 { None } else { reply.get("size").map(str::to_string) }
            }
            Some(Version::X) => {
                let Channel::Pmix(x) = &self.channel else { unreachable!("PMIx has its own channel") };
                x.job_number(c"pmix.univ.size")?.map(|n| n.to_string())
            }
        };
        Ok(size.and_then(|s| s.trim().parse::<i64>().ok()).filter(|&n| n > 0).map(|n| n as usize))
    }

    /// Looks `key` up in the KVS of another job of the same process manager (a spawned job's,
    /// or its parent's), as `get` does in this job's. PMI-1 only.
    pub fn get_in(&mut self, kvsname: &str, key: &str) -> io::Result<Option<String>> {
        if self.version() != Some(Version::One) {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "reading another job's keys needs PMI-1"));
        }
        self.joined(key, |pmi, k| pmi.get_one_in(kvsname, k))
    }

    fn get_one_in(&mut self, kvsname: &str, key: &str) -> io::Result<Option<String>> {
        let request = Line::cmd("get").with("kvsname", kvsname).with("key", key);
        let reply = self.call(&request, "get_result")?;
        if reply.rc() != 0 {
            return Ok(None);
        }
        Ok(reply.get("value").map(str::to_string))
    }

    /// Asks the process manager to start `commands` as one new job (PMI-1's multi-line
    /// `spawn`, one per command, as MPICH's simple PMI sends it), with `preput` put in the
    /// new job's KVS before it starts. Returns the new job's KVS name, or why it failed, with
    /// an error code per process (0: started).
    pub fn spawn(&mut self, commands: &[SpawnCommand], preput: &[(String, String)]) -> io::Result<SpawnOutcome> {
        // `server_reports_abort` is set by our mpiexec's init reply only. Hydra's spawn
        // starts processes too, but not as a job whose addresses the root can read before
        // the children wait for it (see `comm::spawn`), which would leave them waiting.
        if self.version() != Some(Version::One) || !self.server_reports_abort {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "MPI_Comm_spawn is implemented under oxmpi's mpiexec only, not yet under Hydra or Slurm",
            ));
        }
        let line_safe = |t: &str| !t.contains(['\n', '\r']);
        for c in commands {
            if !line_safe(&c.program)
                || c.args.iter().any(|a| !line_safe(a))
                || c.info.iter().any(|(k, v)| !line_safe(k) || !line_safe(v))
            {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "a spawn argument contains a line break"));
            }
        }
        let mut text = String::new();
        for (index, c) in commands.iter().enumerate() {
            use std::fmt::Write as _;
            let _ = writeln!(text, "mcmd=spawn");
            let _ = writeln!(text, "nprocs={}", c.maxprocs);
            let _ = writeln!(text, "execname={}", c.program);
            let _ = writeln!(text, "totspawns={}", commands.len());
            let _ = writeln!(text, "spawnssofar={}", index + 1);
            let _ = writeln!(text, "argcnt={}", c.args.len());
            for (a, arg) in c.args.iter().enumerate() {
                let _ = writeln!(text, "arg{}={arg}", a + 1);
            }
            let _ = writeln!(text, "preput_num={}", preput.len());
            for (p, (key, value)) in preput.iter().enumerate() {
                let _ = writeln!(text, "preput_key_{p}={key}");
                let _ = writeln!(text, "preput_val_{p}={value}");
            }
            let _ = writeln!(text, "info_num={}", c.info.len());
            for (i, (key, value)) in c.info.iter().enumerate() {
                let _ = writeln!(text, "info_key_{i}={key}");
                let _ = writeln!(text, "info_val_{i}={value}");
            }
            let _ = writeln!(text, "endcmd");
        }
        let Channel::Wire { socket, .. } = &mut self.channel else { unreachable!("PMI-1 is spoken on a wire") };
        log::trace!("pmi -> spawn of {} command(s)", commands.len());
        socket.write_all(text.as_bytes())?;
        let reply = self.receive()?;
        if reply.command() != Some("spawn_result") {
            return Err(protocol_error(format!("PMI server replied {:?} to spawn", reply.encode().trim_end())));
        }
        let total: usize = commands.iter().map(|c| c.maxprocs).sum();
        let mut errcodes: Vec<i32> = reply
            .get("errcodes")
            .map(|list| list.split(',').filter_map(|c| c.trim().parse().ok()).collect())
            .unwrap_or_default();
        let ok = reply.rc() == 0;
        errcodes.resize(total, if ok { 0 } else { -1 });
        let message = reply.get("msg").map(wire::unescape_text).unwrap_or_default();
        Ok(SpawnOutcome { kvsname: reply.get("kvsname").filter(|_| ok).map(str::to_string), errcodes, message })
    }

    /// The server of our `mpiexec` (which adds the commands below to PMI-1), or an error
    /// saying `what` needs it.
    fn require_ours(&self, what: &str) -> io::Result<()> {
        if self.version() != Some(Version::One) || !self.server_reports_abort {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{what} is implemented under oxmpi's mpiexec only, not yet under Hydra or Slurm"),
            ));
        }
        Ok(())
    }

    /// MPI_Open_port: `port` (a name of ours, wire-safe) is open for accepts and connects
    /// until [`Self::close_port`]. Another process manager keeps no ports (accepts and
    /// connects are refused there).
    pub fn open_port(&mut self, port: &str) -> io::Result<()> {
        if self.require_ours("MPI_Open_port").is_err() {
            return Ok(());
        }
        let reply = self.call(&Line::cmd("oxmpi_open_port").with("port", port), "oxmpi_port_done")?;
        match reply.rc() {
            0 => Ok(()),
            rc => Err(protocol_error(format!("the process manager cannot open a port (rc {rc})"))),
        }
    }

    /// MPI_Close_port: whether `port` was open. The roots waiting at it are refused.
    pub fn close_port(&mut self, port: &str) -> io::Result<bool> {
        if self.require_ours("MPI_Close_port").is_err() {
            return Ok(true);
        }
        if !wire::is_wire_safe(port) || port.is_empty() {
            return Ok(false);
        }
        Ok(self.call(&Line::cmd("oxmpi_close_port").with("port", port), "oxmpi_port_done")?.rc() == 0)
    }

    /// The roots of MPI_Comm_accept (`accept`) and MPI_Comm_connect meet at the open `port`:
    /// each hands `mpiexec` its group's records (a wire-safe string) and waits, a connect at
    /// most `timeout`; `mpiexec` pairs the accepts and connects of a port in order. Returns
    /// the other group's records and the number of this pairing on the port.
    pub fn meet_at_port(
        &mut self,
        accept: bool,
        port: &str,
        records: &str,
        timeout: std::time::Duration,
    ) -> io::Result<(String, u64)> {
        self.require_ours("MPI_Comm_accept/MPI_Comm_connect")?;
        if !wire::is_wire_safe(port) || port.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("invalid port name {port:?}")));
        }
        let request = Line::cmd(if accept { "oxmpi_accept" } else { "oxmpi_connect" })
            .with("port", port)
            .with("records", records)
            .with("timeout_ms", timeout.as_millis().min(u64::MAX as u128) as u64);
        let reply = self.call(&request, "oxmpi_met")?;
        match (reply.rc(), reply.get("records"), reply.get("serial").and_then(|v| v.parse().ok())) {
            (0, Some(records), Some(serial)) => Ok((records.to_string(), serial)),
            _ => Err(io::Error::new(
                io::ErrorKind::NotFound,
                reply.get("msg").map(wire::unescape_text).unwrap_or_else(|| "the process manager refused".into()),
            )),
        }
    }

    /// MPI_Publish_name: `service` (any text) names `port` in the run's name service.
    pub fn publish_name(&mut self, service: &str, port: &str) -> io::Result<bool> {
        self.require_ours("MPI_Publish_name")?;
        let request =
            Line::cmd("publish_name").with("service", wire::escape_text(service)).with("port", wire::escape_text(port));
        Ok(self.call(&request, "publish_result")?.rc() == 0)
    }

    /// MPI_Unpublish_name: whether `service` was published.
    pub fn unpublish_name(&mut self, service: &str) -> io::Result<bool> {
        self.require_ours("MPI_Unpublish_name")?;
        let request = Line::cmd("unpublish_name").with("service", wire::escape_text(service));
        Ok(self.call(&request, "unpublish_result")?.rc() == 0)
    }

    /// MPI_Lookup_name: the port `service` names, if published.
    pub fn lookup_name(&mut self, service: &str) -> io::Result<Option<String>> {
        self.require_ours("MPI_Lookup_name")?;
        let request = Line::cmd("lookup_name").with("service", wire::escape_text(service));
        let reply = self.call(&request, "lookup_result")?;
        Ok((reply.rc() == 0).then(|| reply.get("port").map(wire::unescape_text)).flatten())
    }

    /// The node index of every rank, from `PMI_process_mapping`; all zeros when the process
    /// manager does not publish one (or in singleton mode).
    pub fn node_ids(&mut self) -> io::Result<Vec<usize>> {
        if self.is_singleton() {
            return Ok(vec![0]);
        }
        if let Channel::Pmix(x) = &self.channel {
            return pmix_node_ids(x, self.size);
        }
        let mapping = match self.version() {
            Some(Version::Two) => {
                // A job attribute in PMI-2, not a key of the KVS.
                let request = Command::cmd("info-getjobattr").with("key", "PMI_process_mapping");
                found_value(&self.call2(&request, "info-getjobattr-response")?)
            }
            _ => self.get_one("PMI_process_mapping")?,
        };
        match mapping {
            Some(mapping) => mapping::node_ids_from_mapping(&mapping, self.size),
            None => Ok(vec![0; self.size]),
        }
    }

    /// Tells the process manager to kill the job with exit code `code`, then exits.
    pub fn abort(&mut self, code: i32, msg: &str) -> ! {
        let code = abort_exit_status(code);
        let reported_by_server = match &self.channel {
            Channel::Singleton { .. } | Channel::Pmix(_) => false,
            Channel::Wire { .. } => self.server_reports_abort,
        };
        if !reported_by_server && !msg.is_empty() {
            // One write, and read by the launcher before it hears of the abort: a launcher
            // that forwards output (Hydra's proxies) kills the job on the abort and may exit
            // with part of the line, or none of it, still in the pipe.
            write_last_line(&format!("oxmpi: rank {} aborting job (code {code}): {msg}", self.rank));
        }
        if let Channel::Pmix(x) = &mut self.channel {
            // The server kills the job (Slurm: the step); exiting with the code meanwhile is
            // what a server that does not would see.
            x.abort(code, msg);
            std::process::exit(code)
        }
        let exit_only = self.version() == Some(Version::Two) && self.fence_reads_keys;
        if let Channel::Wire { socket, version, .. } = &mut self.channel
            && !exit_only
        {
            let request = match version {
                Version::One => Line::cmd("abort")
                    .with("exitcode", code)
                    .with("error_msg", wire::escape_text(msg))
                    .encode()
                    .into_bytes(),
                // No exit code in PMI-2's abort: the manager kills the job (Slurm: SIGKILL to
                // the step), and the launcher's status is non-zero. `isworld` first: Slurm
                // reads fields up to the first it cannot parse.
                Version::Two => {
                    let text: String = msg.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
                    Command::cmd("abort").with("isworld", "TRUE").with("msg", text).encode().unwrap_or_default()
                }
                Version::X => unreachable!("PMIx is not spoken on a socket"),
            };
            if socket.write_all(&request).is_ok() {
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
        match &mut self.channel {
            Channel::Pmix(x) => x.finalize()?,
            Channel::Wire { version: Version::Two, .. } => {
                self.call2(&Command::cmd("finalize"), "finalize-response").map(drop)?
            }
            _ => self.call(&Line::cmd("finalize"), "finalize_ack").map(drop)?,
        }
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

    /// Sends one PMI-2 command and waits for the response named `expect`; a response with
    /// `rc` other than 0 is an error naming the command (and the server's `errmsg`).
    fn call2(&mut self, request: &Command, expect: &str) -> io::Result<Command> {
        let Channel::Wire { socket, .. } = &mut self.channel else {
            return Err(io::Error::other("PMI request in singleton mode"));
        };
        let name = request.command().unwrap_or("");
        log::trace!("pmi-2 -> {}", request.body());
        socket.write_all(&request.encode()?)?;
        let reply = self.receive2()?;
        check_response(name, expect, reply)
    }

    /// Reads one PMI-2 message from the server.
    fn receive2(&mut self) -> io::Result<Command> {
        loop {
            let Channel::Wire { pending, .. } = &mut self.channel else {
                return Err(io::Error::other("PMI read in singleton mode"));
            };
            if let Some(message) = wire2::take_message(pending)? {
                log::trace!("pmi-2 <- {}", message.body());
                return Ok(message);
            }
            self.fill()?;
        }
    }

    /// Reads one line from the server.
    fn receive(&mut self) -> io::Result<Line> {
        loop {
            let Channel::Wire { pending, .. } = &mut self.channel else {
                return Err(io::Error::other("PMI read in singleton mode"));
            };
            if let Some(newline) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=newline).collect();
                let text = String::from_utf8_lossy(&line);
                log::trace!("pmi <- {}", text.trim_end());
                return Ok(Line::parse(&text));
            }
            self.fill()?;
        }
    }

    /// Reads what the server has sent into the pending bytes (blocking until something).
    fn fill(&mut self) -> io::Result<()> {
        let Channel::Wire { socket, pending, .. } = &mut self.channel else {
            return Err(io::Error::other("PMI read in singleton mode"));
        };
        loop {
            let mut buffer = [0u8; 4096];
            match socket.read(&mut buffer) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the process manager closed the PMI connection",
                    ));
                }
                Ok(n) => {
                    pending.extend_from_slice(&buffer[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Checks a PMI-2 response to command `name`: it must be `expect`, with `rc=0`.
/// The node index of every rank from the server's node ids (`pmix.nodeid`), renumbered in
/// order of first appearance (the ids need not be dense).
fn pmix_node_ids(x: &pmix::Pmix, size: usize) -> io::Result<Vec<usize>> {
    let mut dense = HashMap::new();
    (0..size)
        .map(|rank| {
            let id = x
                .proc_number(rank, c"pmix.nodeid")?
                .ok_or_else(|| protocol_error(format!("the PMIx server gives no node of rank {rank} (pmix.nodeid)")))?;
            let next = dense.len();
            Ok(*dense.entry(id).or_insert(next))
        })
        .collect()
}

fn check_response(name: &str, expect: &str, reply: Command) -> io::Result<Command> {
    if reply.command() != Some(expect) {
        return Err(protocol_error(format!(
            "PMI-2 server replied {:?} to {name} (expected cmd={expect})",
            reply.body()
        )));
    }
    if reply.rc() != 0 {
        let why = reply.get("errmsg").map(|m| format!(": {m}")).unwrap_or_default();
        return Err(protocol_error(format!("PMI-2 {name} failed with rc={}{why}", reply.rc())));
    }
    Ok(reply)
}

/// The value of a PMI-2 `kvs-get` or `info-get*attr` response: `None` unless `found=TRUE`.
fn found_value(reply: &Command) -> Option<String> {
    match reply.flag("found") {
        Some(true) => Some(reply.get("value").unwrap_or("").to_string()),
        _ => None,
    }
}

/// The warning a singleton prints (from the step's first task only) when `srun` started
/// several tasks without a PMI plugin (`--mpi=none`, the default of many clusters): each task
/// is then a job of one rank, which is what people running ensembles of serial programs want,
/// and a silent surprise for anyone who meant one job. `var` reads the environment.
fn srun_without_pmi(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    let tasks: usize = var("SLURM_STEP_NUM_TASKS")?.trim().parse().ok()?;
    if tasks < 2 || var("SLURM_PROCID")?.trim() != "0" {
        return None;
    }
    let plugin = var("SLURM_MPI_TYPE").unwrap_or_else(|| "none".to_string());
    Some(format!(
        "oxmpi: srun started {tasks} tasks with --mpi={plugin}, which gives them no PMI: each runs as an MPI job of 1 rank; \
         use srun --mpi=pmi2 for one job of {tasks} ranks\n"
    ))
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

/// Writes `line` to stderr as the last words of a rank about to end the job: one write, read
/// by the launcher before the rank goes on. A launcher that forwards output (Hydra's proxies,
/// slurmstepd) ends the job when it hears of the abort or of the rank's exit, and may drop
/// what is still in the pipe, or read but not yet passed on.
pub fn write_last_line(line: &str) {
    let line = format!("{line}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    if wait_drained(libc::STDERR_FILENO, 1000) {
        // Read from the pipe is not yet printed: the reader still passes it on to the
        // launcher, which stops forwarding output once it ends the job.
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Waits up to `timeout_ms` until a pipe at `fd` has been read empty (at once when `fd` is not
/// a pipe: a file or terminal has nobody to wait for). Returns whether `fd` is a pipe.
fn wait_drained(fd: i32, timeout_ms: u64) -> bool {
    // SAFETY: fstat writes one stat struct.
    let is_pipe = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFIFO
    };
    if !is_pipe {
        return false;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(timeout_ms);
    loop {
        let mut pending: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int; on a pipe it counts the unread bytes, from either end.
        let unread = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut pending) } == 0 && pending > 0;
        if !unread || std::time::Instant::now() >= deadline {
            return true;
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
        assert_eq!(pmi.get(0, "card").unwrap(), Some(long));
        assert_eq!(pmi.get(0, "short").unwrap().as_deref(), Some("v=1"));
        assert_eq!(pmi.get(0, "tricky").unwrap(), Some(format!("{SPLIT_MARKER}9")));
        assert_eq!(pmi.get(0, "absent").unwrap(), None);
        assert_eq!(pmi.node_ids().unwrap(), vec![0, 0, 1, 1]);
        assert!(pmi.put(&"k".repeat(64), "v").is_err());
        pmi.finalize().unwrap();
        pmi.finalize().unwrap();
        drop(pmi);
        server.join().unwrap();
    }

    /// A one-client PMI-2 server in Slurm's manner (no `;;` escapes, `appnum=-1`, the mapping
    /// as a job attribute), on one end of a socket pair. `fence_rc`: what `kvs-fence` answers.
    fn fake_pmi2_server(stream: std::os::unix::net::UnixStream, fence_rc: i32) {
        let mut reader = io::BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        let mut line = String::new();
        io::BufRead::read_line(&mut reader, &mut line).unwrap();
        let init = Line::parse(&line);
        assert_eq!((init.command(), init.get("pmi_version")), (Some("init"), Some("2")));
        let reply = Line::cmd("response_to_init").with("rc", 0).with("pmi_version", 2).with("pmi_subversion", 0);
        writer.write_all(reply.encode().as_bytes()).unwrap();
        let mut kvs: HashMap<String, String> = HashMap::new();
        let one = "1".to_string();
        let mut pending = Vec::new();
        loop {
            let request = loop {
                if let Some(request) = wire2::take_message(&mut pending).unwrap() {
                    break request;
                }
                let mut buffer = [0u8; 512];
                let n = io::Read::read(&mut reader, &mut buffer).unwrap();
                if n == 0 {
                    return;
                }
                pending.extend_from_slice(&buffer[..n]);
            };
            let reply = match request.command().unwrap() {
                "fullinit" => {
                    assert!(matches!(request.get("pmijobid"), None | Some("42.0")));
                    assert_eq!(request.flag("threaded"), Some(false));
                    Command::cmd("fullinit-response")
                        .with("rc", 0)
                        .with("pmi-version", 2)
                        .with("pmi-subversion", 0)
                        .with("rank", request.get("pmirank").unwrap())
                        .with("size", 4)
                        .with("appnum", -1)
                        .with("debugged", "FALSE")
                        .with("pmiverbose", "FALSE")
                }
                "job-getid" => Command::cmd("job-getid-response").with("rc", 0).with("jobid", "42.0"),
                "kvs-put" => {
                    let value = request.get("value").unwrap();
                    assert!(value.len() < 1024, "value of {} bytes", value.len());
                    kvs.insert(request.get("key").unwrap().into(), value.into());
                    Command::cmd("kvs-put-response").with("rc", 0)
                }
                "kvs-fence" => Command::cmd("kvs-fence-response").with("rc", fence_rc).with("errmsg", "a node is gone"),
                "kvs-get" => {
                    assert_eq!((request.get("jobid"), request.get("srcid")), (Some("42.0"), Some("-1")));
                    let key = request.get("key").unwrap();
                    // The other three ranks of the fake job have reached every fence.
                    let fenced = key.starts_with("oxmpi-fence-") && !key.ends_with("-1");
                    match kvs.get(key).or(fenced.then_some(&one)) {
                        Some(v) => {
                            Command::cmd("kvs-get-response").with("rc", 0).with("found", "TRUE").with("value", v)
                        }
                        None => Command::cmd("kvs-get-response").with("rc", 0).with("found", "FALSE"),
                    }
                }
                "info-getjobattr" => {
                    assert_eq!(request.get("key"), Some("PMI_process_mapping"));
                    Command::cmd("info-getjobattr-response")
                        .with("rc", 0)
                        .with("found", "TRUE")
                        .with("value", "(vector,(0,2,2))")
                }
                "finalize" => Command::cmd("finalize-response").with("rc", 0),
                other => panic!("unexpected {other}"),
            };
            writer.write_all(&reply.encode().unwrap()).unwrap();
        }
    }

    fn pmi2_pair(fence_rc: i32) -> (File, std::thread::JoinHandle<()>) {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let server = std::thread::spawn(move || fake_pmi2_server(theirs, fence_rc));
        (File::from(OwnedFd::from(ours)), server)
    }

    #[test]
    fn pmi2_client_exchanges_keys() {
        let (socket, server) = pmi2_pair(0);
        let mut pmi = Pmi::connect2(socket, 1, Some("42.0")).unwrap();
        assert_eq!(pmi.version(), Some(Version::Two));
        assert_eq!((pmi.rank(), pmi.size(), pmi.appnum()), (1, 4, 0));
        assert_eq!(pmi.kvsname(), "42_0");
        let long: String = (0..3000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        pmi.put("card", &long).unwrap();
        pmi.put("short", "v=1").unwrap();
        pmi.fence().unwrap();
        assert_eq!(pmi.get(0, "card").unwrap(), Some(long));
        assert_eq!(pmi.get(0, "short").unwrap().as_deref(), Some("v=1"));
        assert_eq!(pmi.get(0, "absent").unwrap(), None);
        assert_eq!(pmi.node_ids().unwrap(), vec![0, 0, 1, 1]);
        pmi.finalize().unwrap();
        pmi.finalize().unwrap();
        drop(pmi);
        server.join().unwrap();
    }

    #[test]
    fn pmi2_fence_outside_slurm_reads_every_ranks_key() {
        let (socket, server) = pmi2_pair(0);
        let mut pmi = Pmi::connect2(socket, 1, None).unwrap();
        assert!(pmi.fence_reads_keys);
        pmi.fence().unwrap();
        pmi.fence().unwrap();
        // Rank 1 put its key of each round; the others' were read.
        assert_eq!(pmi.get(1, "oxmpi-fence-0-1").unwrap().as_deref(), Some("1"));
        assert_eq!(pmi.get(1, "oxmpi-fence-1-1").unwrap().as_deref(), Some("1"));
        assert_eq!(pmi.fences, 2);
        drop(pmi);
        server.join().unwrap();
    }

    #[test]
    fn pmi2_errors_name_the_command() {
        let (socket, server) = pmi2_pair(-1);
        let mut pmi = Pmi::connect2(socket, 0, Some("42.0")).unwrap();
        let error = pmi.fence().unwrap_err().to_string();
        assert!(error.contains("kvs-fence") && error.contains("rc=-1") && error.contains("a node is gone"), "{error}");
        drop(pmi);
        server.join().unwrap();

        // A PMI-1-only server (our mpiexec) refuses version 2 at init.
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let server = std::thread::spawn(move || {
            let mut reader = io::BufReader::new(theirs.try_clone().unwrap());
            let mut line = String::new();
            io::BufRead::read_line(&mut reader, &mut line).unwrap();
            let reply = Line::cmd("response_to_init").with("pmi_version", 1).with("pmi_subversion", 1).with("rc", -1);
            (&theirs).write_all(reply.encode().as_bytes()).unwrap();
        });
        let error = Pmi::connect2(File::from(OwnedFd::from(ours)), 0, None).err().unwrap().to_string();
        assert!(error.contains("does not speak PMI-2") && error.contains("OXMPI_PMI=1"), "{error}");
        server.join().unwrap();

        // A response to another command, or none at all.
        assert!(check_response("kvs-put", "kvs-put-response", Command::cmd("kvs-get-response")).is_err());
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        drop(theirs);
        let error = Pmi::connect2(File::from(OwnedFd::from(ours)), 0, None).err().unwrap();
        assert!(matches!(error.kind(), io::ErrorKind::UnexpectedEof | io::ErrorKind::BrokenPipe), "{error}");
    }

    #[test]
    fn warns_of_srun_without_pmi() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let line = srun_without_pmi(env(&[("SLURM_STEP_NUM_TASKS", "4"), ("SLURM_PROCID", "0")])).unwrap();
        assert!(line.contains("4 tasks with --mpi=none") && line.contains("srun --mpi=pmi2"), "{line}");
        let line =
            srun_without_pmi(env(&[("SLURM_STEP_NUM_TASKS", "2"), ("SLURM_PROCID", "0"), ("SLURM_MPI_TYPE", "pmix")]));
        assert!(line.unwrap().contains("--mpi=pmix"));
        // Only the first task says it; one task, or no srun, is a plain singleton.
        assert_eq!(srun_without_pmi(env(&[("SLURM_STEP_NUM_TASKS", "4"), ("SLURM_PROCID", "1")])), None);
        assert_eq!(srun_without_pmi(env(&[("SLURM_STEP_NUM_TASKS", "1"), ("SLURM_PROCID", "0")])), None);
        assert_eq!(srun_without_pmi(env(&[])), None);
    }

    #[test]
    fn random_hex_is_sixteen_digits() {
        let token = random_hex();
        assert_eq!(token.len(), 16);
        assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
    }
}

//! Across hosts: how mpiexec starts a proxy on each host, and the proxy itself (a hidden
//! mode of the same binary, `mpiexec --proxy ADDRESS INDEX TOKEN`).
//!
//! The proxy connects back to mpiexec at ADDRESS, says hello with its INDEX and the job's
//! TOKEN, receives the job description, forks its host's ranks and runs the job loop in
//! the proxy role (`job::Role::Proxy`) until its ranks have ended.

use std::ffi::{CStr, OsString};
use std::io;
use std::net::{IpAddr, Ipv4Addr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use crate::capacity;
use crate::job::{Job, JobSpec, Role};
use crate::link::{Link, StartSpec, ToHead, ToProxy};
use crate::placement::{hostname, is_local};
use crate::signals::SignalPipe;

/// How long a proxy tries to reach mpiexec.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How mpiexec starts proxies.
pub struct Launch {
    /// The launcher's words (`ssh`, or -launcher-exec's); `None`: every proxy is forked here.
    pub launcher: Option<Vec<String>>,
    /// This binary, run on the other hosts at the same path (a shared file system, as Hydra
    /// assumes for its proxy).
    pub exe: PathBuf,
    /// Where the proxies connect: `host-or-address:port`.
    pub address: String,
    /// A secret of the job that each proxy presents when it connects.
    pub token: String,
}

impl Launch {
    /// Starts proxy `index` for `host`; returns the pid of the process started (the
    /// launcher, or the proxy itself for this machine).
    pub fn start(&self, index: usize, host: &str) -> io::Result<i32> {
        let proxy_args = ["--proxy".to_string(), self.address.clone(), index.to_string(), self.token.clone()];
        let mut command = match &self.launcher {
            Some(words) if !is_local(host) => {
                let mut command = Command::new(&words[0]);
                command.args(&words[1..]).arg(host).arg(&self.exe).args(&proxy_args);
                command
            }
            _ => {
                let mut command = Command::new(&self.exe);
                command.args(&proxy_args);
                command
            }
        };
        // The launcher must not read mpiexec's stdin (ssh would): mpiexec forwards it to
        // rank 0's proxy over their connection.
        command.stdin(Stdio::null());
        // SAFETY: the closure runs in the forked child before exec and only calls setsid(2),
        // which is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                // Its own session: a Ctrl-C at the terminal reaches mpiexec, which ends the job
                // through the proxies, rather than killing the launchers under it; and with
                // autogroup scheduling the ranks of a proxy started here get a CPU share of
                // their own, not one share with mpiexec (see job::rank_sessions).
                if libc::setsid() < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(command.spawn()?.id() as i32)
    }
}

/// The IPv4 address of network interface `name`.
fn interface_address(name: &str) -> io::Result<IpAddr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = None;
    let mut entry = list;
    while !entry.is_null() {
        // SAFETY: `entry` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*entry };
        entry = ifa.ifa_next;
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let ifa_name = unsafe { CStr::from_ptr(ifa.ifa_name) };
        if ifa.ifa_addr.is_null() || ifa_name.to_bytes() != name.as_bytes() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points to a sockaddr of the family it names;
        // for AF_INET that is a sockaddr_in.
        unsafe {
            if i32::from((*ifa.ifa_addr).sa_family) == libc::AF_INET {
                let address = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                found = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(address.sin_addr.s_addr))));
                break;
            }
        }
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    found.ok_or_else(|| io::Error::other(format!("interface {name} has no IPv4 address")))
}

/// The address of the interface this machine would use to reach `host`.
fn address_towards(host: &str) -> Option<IpAddr> {
    let target = (host, 9).to_socket_addrs().ok()?.find(|a| a.is_ipv4())?;
    let socket = UdpSocket::bind(("0.0.0.0", 0)).ok()?;
    // A UDP connect sends nothing; it only picks the route and so the source address.
    socket.connect(target).ok()?;
    let address = socket.local_addr().ok()?.ip();
    (!address.is_unspecified()).then_some(address)
}

/// What the proxies are told to connect to (without the port): the address of `-iface`;
/// with the fork launcher, loopback; else the address of the interface that routes to the
/// first remote host; else this machine's host name.
pub fn contact_host(iface: Option<&str>, fork: bool, first_remote: Option<&str>) -> Result<String, String> {
    if let Some(name) = iface {
        return interface_address(name).map(|a| a.to_string()).map_err(|e| format!("-iface {name}: {e}"));
    }
    if fork {
        return Ok(Ipv4Addr::LOCALHOST.to_string());
    }
    if let Some(address) = first_remote.and_then(address_towards) {
        return Ok(address.to_string());
    }
    hostname().ok_or_else(|| "cannot tell the proxies where to connect: no host name (use -iface)".into())
}

fn proxy_error(message: &str) -> ExitCode {
    let host = hostname().unwrap_or_default();
    eprintln!("mpiexec proxy on {host}: {message}");
    ExitCode::from(1)
}

/// `mpiexec --proxy ADDRESS INDEX TOKEN`.
pub fn run(args: &[OsString]) -> ExitCode {
    let words: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let [address, index, token] = &words[..] else {
        return proxy_error("usage: mpiexec --proxy ADDRESS INDEX TOKEN (started by mpiexec)");
    };
    let Ok(index) = index.parse::<u32>() else {
        return proxy_error("bad proxy index");
    };
    let connected = address.to_socket_addrs().and_then(|mut addresses| {
        let mut last = io::Error::other("no address");
        for target in addresses.by_ref() {
            match TcpStream::connect_timeout(&target, CONNECT_TIMEOUT) {
                Ok(stream) => return Ok(stream),
                Err(error) => last = error,
            }
        }
        Err(last)
    });
    let stream = match connected {
        Ok(stream) => stream,
        Err(error) => return proxy_error(&format!("cannot connect to mpiexec at {address}: {error}")),
    };
    let mut link = Link::new(stream);
    let start = link
        .send(&ToHead::Hello { proxy: index, token: token.clone() }.encode())
        .and_then(|()| link.receive_one())
        .and_then(|frame| ToProxy::decode(&frame));
    let start = match start {
        Ok(ToProxy::Start(start)) => start,
        Ok(_) => return proxy_error("mpiexec did not send the job"),
        Err(error) => return proxy_error(&format!("lost mpiexec before the job started: {error}")),
    };
    serve(start, link)
}

fn serve(start: StartSpec, mut link: Link) -> ExitCode {
    // Where mpiexec runs (a shared file system); a host without it starts the ranks in the
    // proxy's directory (ssh: the home directory) and says so.
    if let Err(error) = std::env::set_current_dir(&start.cwd) {
        log::warn!("cannot change to {}: {error}", start.cwd.to_string_lossy());
    }
    let local = start.ranks.len() as u64;
    if let Some(problem) = capacity::problem(local, &capacity::this_machine(), capacity::shm_segment_bytes) {
        let rank = start.ranks.first().map_or(0, |r| r.0);
        let _ = link.send(&ToHead::StartFailed { rank, code: 1, message: problem }.encode());
        return ExitCode::from(1);
    }
    capacity::raise_open_files(local);
    let signals = match SignalPipe::install() {
        Ok(signals) => signals,
        Err(error) => return proxy_error(&format!("cannot install signal handlers: {error}")),
    };
    let size = start.size as usize;
    let mut app_of_rank = vec![0; size];
    for &(rank, app) in &start.ranks {
        if let Some(slot) = app_of_rank.get_mut(rank as usize) {
            *slot = app as usize;
        }
    }
    let spec = JobSpec {
        kvsname: start.kvsname,
        size,
        process_mapping: start.process_mapping,
        apps: start.apps,
        ranks: start.ranks.iter().map(|&(rank, app)| (rank as usize, app as usize)).collect(),
        app_of_rank,
        tag_output: start.tag_output,
        timeout: None,
        // mpiexec judges how ranks ended; a proxy only reports.
        auto_cleanup: true,
        base_env: Some(start.env),
        universe_size: (start.universe_size > 0).then_some(start.universe_size as usize),
    };
    let job = Job::new(spec, Role::Proxy { upstream: Some(link), barrier_pairs: Vec::new() }, signals);
    job.run();
    ExitCode::SUCCESS
}

/// The environment mpiexec hands its ranks on other hosts: its own, as Hydra does, less
/// what describes this machine only.
pub fn exported_environment() -> Vec<(OsString, OsString)> {
    std::env::vars_os().filter(|(name, _)| !matches!(name.to_str(), Some("HOSTNAME" | "PWD" | "OLDPWD"))).collect()
}

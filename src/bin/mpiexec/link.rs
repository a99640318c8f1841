//! The connection between `mpiexec` and its proxies (one per host): a TCP stream of
//! length-prefixed binary frames, each one message. A frame is a little-endian u32 body
//! length, then the body: a tag byte and the message's fields (integers little-endian,
//! strings and byte strings as a u32 length and the bytes).
//!
//! The proxy speaks first (`Hello` with its index and the job's token, so a stray connection
//! is refused), mpiexec answers with `Start`, the job description. Then the proxy reports
//! (ranks started, PMI init and finalize, output lines, barriers with the keys put since the
//! last one, aborts, endings) and mpiexec answers barriers and sends signals.
//!
//! A host whose network goes down (a cable pulled, the host powered off) sends no error,
//! only silence, and would leave the job waiting for ever: the sockets probe their peer
//! (TCP keepalive, and a user timeout on unacknowledged data, `Link::watch`), so the kernel
//! reports a lost connection within the link timeout (`OXMPI_LINK_TIMEOUT`), also while the
//! processes themselves do not get the CPU.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::time::Duration;

use crate::output::Sink;

/// A frame larger than this is a protocol error, not an allocation.
const MAX_FRAME: usize = 256 << 20;

/// How long a connection may go unanswered before it counts as lost: `OXMPI_LINK_TIMEOUT`
/// (milliseconds) in `env` (a proxy's: mpiexec's environment, sent with the job) or else in
/// this process's environment; by default 2 s.
pub fn link_timeout(env: Option<&[(OsString, OsString)]>) -> Duration {
    let name = oxmpi::config::LINK_TIMEOUT;
    let value = match env {
        Some(env) => env.iter().find(|(k, _)| k == name).map(|(_, v)| v.to_string_lossy().into_owned()),
        None => std::env::var(name).ok(),
    };
    Duration::from_millis(value.and_then(|v| v.trim().parse().ok()).unwrap_or(2000))
}

/// How a rank process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    Signaled(i32),
}

impl Ending {
    pub fn exit_code(self) -> i32 {
        match self {
            Ending::Exited(code) => code,
            Ending::Signaled(signo) => 128 + signo,
        }
    }
}

/// One program of the job as a proxy needs it: the environment is `-genv` then `-env`.
#[derive(Debug, Clone, PartialEq)]
pub struct AppSpec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
}

/// What a proxy needs to start its ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct StartSpec {
    pub kvsname: String,
    pub size: u32,
    pub process_mapping: String,
    pub tag_output: bool,
    /// mpiexec's working directory and environment, which the ranks get (as under Hydra).
    pub cwd: OsString,
    pub env: Vec<(OsString, OsString)>,
    pub apps: Vec<AppSpec>,
    /// This host's ranks: (rank in MPI_COMM_WORLD, index into `apps`).
    pub ranks: Vec<(u32, u32)>,
    /// MPI_UNIVERSE_SIZE (0: unset).
    pub universe_size: u32,
}

/// Proxy to mpiexec.
#[derive(Debug, Clone, PartialEq)]
pub enum ToHead {
    Hello {
        proxy: u32,
        token: String,
    },
    Started {
        rank: u32,
        pid: i32,
    },
    /// The rank could not be started (`code`: 127 not found, 126 otherwise).
    StartFailed {
        rank: u32,
        code: i32,
        message: String,
    },
    Initialized {
        rank: u32,
    },
    Finalized {
        rank: u32,
    },
    /// Complete lines, already tagged with the rank when `-l` was given.
    Output {
        sink: Sink,
        data: Vec<u8>,
    },
    /// Every rank of the proxy is in a PMI barrier; the keys put since the last one.
    Barrier {
        pairs: Vec<(String, String)>,
    },
    Abort {
        rank: u32,
        code: i32,
        message: String,
    },
    Ended {
        rank: u32,
        ending: Ending,
    },
    /// Rank 0 has taken (or its stdin has dropped) this many more bytes of mpiexec's stdin.
    StdinTaken {
        bytes: u32,
    },
}

/// mpiexec to proxy.
#[derive(Debug, Clone, PartialEq)]
pub enum ToProxy {
    Start(StartSpec),
    /// Every rank of the job is in the barrier; the keys put since the last one, all hosts.
    BarrierOut {
        pairs: Vec<(String, String)>,
    },
    /// Send this signal to every rank (SIGKILL: now, also to what they started).
    Signal {
        signo: i32,
    },
    /// The next bytes of mpiexec's stdin, for rank 0; empty: its end.
    Stdin {
        data: Vec<u8>,
    },
}

#[derive(Default)]
struct Encoder(Vec<u8>);

impl Encoder {
    fn u8(&mut self, value: u8) -> &mut Self {
        self.0.push(value);
        self
    }
    fn u32(&mut self, value: u32) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    fn i32(&mut self, value: i32) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    fn bytes(&mut self, value: &[u8]) -> &mut Self {
        self.u32(value.len() as u32);
        self.0.extend_from_slice(value);
        self
    }
    fn os(&mut self, value: &OsString) -> &mut Self {
        self.bytes(value.as_bytes())
    }
    fn pairs<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, pairs: &[(K, V)]) -> &mut Self {
        self.u32(pairs.len() as u32);
        for (key, value) in pairs {
            self.bytes(key.as_ref()).bytes(value.as_ref());
        }
        self
    }
    /// The frame: length prefix and body.
    fn frame(&self) -> Vec<u8> {
        let mut frame = Vec::with_capacity(self.0.len() + 4);
        frame.extend_from_slice(&(self.0.len() as u32).to_le_bytes());
        frame.extend_from_slice(&self.0);
        frame
    }
}

struct Decoder<'a>(&'a [u8]);

fn malformed() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "malformed message between mpiexec and a proxy")
}

impl Decoder<'_> {
    fn take(&mut self, n: usize) -> io::Result<&[u8]> {
        if self.0.len() < n {
            return Err(malformed());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| malformed())?))
    }
    fn i32(&mut self) -> io::Result<i32> {
        Ok(self.u32()? as i32)
    }
    fn bytes(&mut self) -> io::Result<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn string(&mut self) -> io::Result<String> {
        String::from_utf8(self.bytes()?).map_err(|_| malformed())
    }
    fn os(&mut self) -> io::Result<OsString> {
        Ok(OsString::from_vec(self.bytes()?))
    }
    fn count(&mut self) -> io::Result<usize> {
        let n = self.u32()? as usize;
        // Each element takes at least 4 bytes: a count beyond that is corrupt.
        if n > self.0.len() / 4 + 1 {
            return Err(malformed());
        }
        Ok(n)
    }
    fn string_pairs(&mut self) -> io::Result<Vec<(String, String)>> {
        (0..self.count()?).map(|_| Ok((self.string()?, self.string()?))).collect()
    }
    fn os_pairs(&mut self) -> io::Result<Vec<(OsString, OsString)>> {
        (0..self.count()?).map(|_| Ok((self.os()?, self.os()?))).collect()
    }
    fn end(&self) -> io::Result<()> {
        if self.0.is_empty() { Ok(()) } else { Err(malformed()) }
    }
}

fn sink_code(sink: Sink) -> u8 {
    match sink {
        Sink::Stdout => 1,
        Sink::Stderr => 2,
    }
}

impl ToHead {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        match self {
            ToHead::Hello { proxy, token } => e.u8(1).u32(*proxy).bytes(token.as_bytes()),
            ToHead::Started { rank, pid } => e.u8(2).u32(*rank).i32(*pid),
            ToHead::StartFailed { rank, code, message } => e.u8(3).u32(*rank).i32(*code).bytes(message.as_bytes()),
            ToHead::Initialized { rank } => e.u8(4).u32(*rank),
            ToHead::Finalized { rank } => e.u8(5).u32(*rank),
            ToHead::Output { sink, data } => e.u8(6).u8(sink_code(*sink)).bytes(data),
            ToHead::Barrier { pairs } => e.u8(7).pairs(pairs),
            ToHead::Abort { rank, code, message } => e.u8(8).u32(*rank).i32(*code).bytes(message.as_bytes()),
            ToHead::Ended { rank, ending } => match ending {
                Ending::Exited(code) => e.u8(9).u32(*rank).u8(0).i32(*code),
                Ending::Signaled(signo) => e.u8(9).u32(*rank).u8(1).i32(*signo),
            },
            ToHead::StdinTaken { bytes } => e.u8(11).u32(*bytes),
        };
        e.frame()
    }

    pub fn decode(body: &[u8]) -> io::Result<ToHead> {
        let mut d = Decoder(body);
        let message = match d.u8()? {
            1 => ToHead::Hello { proxy: d.u32()?, token: d.string()? },
            2 => ToHead::Started { rank: d.u32()?, pid: d.i32()? },
            3 => ToHead::StartFailed { rank: d.u32()?, code: d.i32()?, message: d.string()? },
            4 => ToHead::Initialized { rank: d.u32()? },
            5 => ToHead::Finalized { rank: d.u32()? },
            6 => {
                let sink = match d.u8()? {
                    1 => Sink::Stdout,
                    2 => Sink::Stderr,
                    _ => return Err(malformed()),
                };
                ToHead::Output { sink, data: d.bytes()? }
            }
            7 => ToHead::Barrier { pairs: d.string_pairs()? },
            8 => ToHead::Abort { rank: d.u32()?, code: d.i32()?, message: d.string()? },
            9 => {
                let rank = d.u32()?;
                let ending = match (d.u8()?, d.i32()?) {
                    (0, code) => Ending::Exited(code),
                    (1, signo) => Ending::Signaled(signo),
                    _ => return Err(malformed()),
                };
                ToHead::Ended { rank, ending }
            }
            11 => ToHead::StdinTaken { bytes: d.u32()? },
            _ => return Err(malformed()),
        };
        d.end()?;
        Ok(message)
    }
}

impl ToProxy {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        match self {
            ToProxy::Start(spec) => {
                e.u8(1)
                    .bytes(spec.kvsname.as_bytes())
                    .u32(spec.size)
                    .bytes(spec.process_mapping.as_bytes())
                    .u8(u8::from(spec.tag_output))
                    .os(&spec.cwd);
                let env: Vec<(&[u8], &[u8])> = spec.env.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())).collect();
                e.pairs(&env).u32(spec.apps.len() as u32);
                for app in &spec.apps {
                    e.os(&app.program).u32(app.args.len() as u32);
                    for arg in &app.args {
                        e.os(arg);
                    }
                    let env: Vec<(&[u8], &[u8])> = app.env.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())).collect();
                    e.pairs(&env);
                }
                e.u32(spec.ranks.len() as u32);
                for &(rank, app) in &spec.ranks {
                    e.u32(rank).u32(app);
                }
                e.u32(spec.universe_size);
            }
            ToProxy::BarrierOut { pairs } => {
                e.u8(2).pairs(pairs);
            }
            ToProxy::Signal { signo } => {
                e.u8(3).i32(*signo);
            }
            ToProxy::Stdin { data } => {
                e.u8(5).bytes(data);
            }
        }
        e.frame()
    }

    pub fn decode(body: &[u8]) -> io::Result<ToProxy> {
        let mut d = Decoder(body);
        let message = match d.u8()? {
            1 => {
                let kvsname = d.string()?;
                let size = d.u32()?;
                let process_mapping = d.string()?;
                let tag_output = d.u8()? != 0;
                let cwd = d.os()?;
                let env = d.os_pairs()?;
                let mut apps = Vec::new();
                for _ in 0..d.count()? {
                    let program = d.os()?;
                    let args = (0..d.count()?).map(|_| d.os()).collect::<io::Result<_>>()?;
                    apps.push(AppSpec { program, args, env: d.os_pairs()? });
                }
                let ranks = (0..d.count()?).map(|_| Ok((d.u32()?, d.u32()?))).collect::<io::Result<_>>()?;
                let universe_size = d.u32()?;
                ToProxy::Start(StartSpec {
                    kvsname,
                    size,
                    process_mapping,
                    tag_output,
                    cwd,
                    env,
                    apps,
                    ranks,
                    universe_size,
                })
            }
            2 => ToProxy::BarrierOut { pairs: d.string_pairs()? },
            3 => ToProxy::Signal { signo: d.i32()? },
            5 => ToProxy::Stdin { data: d.bytes()? },
            _ => return Err(malformed()),
        };
        d.end()?;
        Ok(message)
    }
}

/// One end of a connection: the stream and bytes received that do not yet make a frame.
pub struct Link {
    pub stream: TcpStream,
    pending: Vec<u8>,
}

impl Link {
    pub fn new(stream: TcpStream) -> Link {
        // Barriers are small messages waited for: no Nagle delay.
        let _ = stream.set_nodelay(true);
        Link { stream, pending: Vec::new() }
    }

    /// Has the kernel give up the connection when the peer's host stops answering for
    /// `timeout`: keepalive probes while it is idle (every half of it, one unanswered probe
    /// is enough), and a user timeout on data sent but not acknowledged. The kernel answers
    /// probes whatever its processes are doing, so a busy host is never taken for a lost one.
    pub fn watch(&self, timeout: Duration) {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.stream);
        let half = (timeout.as_secs() / 2).max(1) as libc::c_int;
        let user_timeout = timeout.as_millis().min(u32::MAX as u128) as libc::c_uint;
        let set = |level: libc::c_int, name: libc::c_int, value: libc::c_int| {
            // SAFETY: setsockopt reads one c_int from a valid pointer; `fd` is our socket.
            unsafe {
                libc::setsockopt(
                    fd,
                    level,
                    name,
                    (&value as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
        };
        set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
        set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, half);
        set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, half);
        set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 1);
        set(libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, user_timeout as libc::c_int);
    }

    pub fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.stream.write_all(frame)
    }

    /// Takes a complete frame's body out of `pending`, if there is one.
    fn next_frame(&mut self) -> io::Result<Option<Vec<u8>>> {
        if self.pending.len() < 4 {
            return Ok(None);
        }
        let length = u32::from_le_bytes(self.pending[..4].try_into().map_err(|_| malformed())?) as usize;
        if length > MAX_FRAME {
            return Err(malformed());
        }
        if self.pending.len() < 4 + length {
            return Ok(None);
        }
        let body = self.pending[4..4 + length].to_vec();
        self.pending.drain(..4 + length);
        Ok(Some(body))
    }

    /// One read (the caller polled the socket): the complete frames it finished. An error,
    /// or end of stream, means the connection is gone.
    pub fn receive(&mut self) -> io::Result<Vec<Vec<u8>>> {
        let mut buffer = [0u8; 64 * 1024];
        let n = match self.stream.read(&mut buffer) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted || e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(e) => return Err(e),
        };
        self.pending.extend_from_slice(&buffer[..n]);
        let mut frames = Vec::new();
        while let Some(frame) = self.next_frame()? {
            frames.push(frame);
        }
        Ok(frames)
    }

    /// Blocks until one frame has arrived (the handshake).
    pub fn receive_one(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(frame) = self.next_frame()? {
                return Ok(frame);
            }
            let mut buffer = [0u8; 64 * 1024];
            match self.stream.read(&mut buffer)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => self.pending.extend_from_slice(&buffer[..n]),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(frame: &[u8]) -> &[u8] {
        assert_eq!(u32::from_le_bytes(frame[..4].try_into().unwrap()) as usize, frame.len() - 4);
        &frame[4..]
    }

    #[test]
    fn messages_round_trip() {
        let to_head = [
            ToHead::Hello { proxy: 3, token: "abc".into() },
            ToHead::Started { rank: 1, pid: 4242 },
            ToHead::StartFailed { rank: 2, code: 127, message: "not found".into() },
            ToHead::Initialized { rank: 7 },
            ToHead::Finalized { rank: 7 },
            ToHead::Output { sink: Sink::Stderr, data: b"[1] a\n\xff\x00b\n".to_vec() },
            ToHead::Barrier { pairs: vec![("k".into(), "v v".into()), ("".into(), "".into())] },
            ToHead::Abort { rank: 0, code: -1, message: "bye\nnow".into() },
            ToHead::Ended { rank: 5, ending: Ending::Signaled(9) },
            ToHead::Ended { rank: 5, ending: Ending::Exited(3) },
            ToHead::StdinTaken { bytes: 65536 },
        ];
        for message in to_head {
            assert_eq!(ToHead::decode(body(&message.encode())).unwrap(), message);
        }
        let spec = StartSpec {
            kvsname: "oxmpi1_ab".into(),
            size: 4,
            process_mapping: "(vector,(0,2,1))".into(),
            tag_output: true,
            cwd: "/tmp".into(),
            env: vec![("PATH".into(), "/bin".into())],
            apps: vec![
                AppSpec { program: "./a".into(), args: vec!["x".into(), "".into()], env: vec![] },
                AppSpec { program: "./b".into(), args: vec![], env: vec![("A".into(), "1=2".into())] },
            ],
            ranks: vec![(0, 0), (2, 1)],
            universe_size: 9,
        };
        for message in [
            ToProxy::Start(spec),
            ToProxy::BarrierOut { pairs: vec![("a".into(), "b".into())] },
            ToProxy::Signal { signo: 15 },
            ToProxy::Stdin { data: b"line\n\x00".to_vec() },
            ToProxy::Stdin { data: Vec::new() },
        ] {
            assert_eq!(ToProxy::decode(body(&message.encode())).unwrap(), message);
        }
    }

    #[test]
    fn malformed_messages_are_errors() {
        for bad in [&[][..], &[99], &[2, 1, 0], &[4, 1, 0, 0, 0, 9], &[7, 255, 255, 255, 255]] {
            assert!(ToHead::decode(bad).is_err(), "{bad:?}");
        }
        assert!(ToProxy::decode(&[3, 1]).is_err());
    }
}

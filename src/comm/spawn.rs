//! Dynamic processes: MPI_Comm_spawn / MPI_Comm_spawn_multiple, the spawned job's side in
//! MPI_Init (MPI_Comm_get_parent), and MPI_Comm_disconnect's wait.
//!
//! The table of processes grows: the engine numbers the job's own ranks 0..size and gives
//! the processes of a job it connects to the next indices (`Engine::add_remote_peers`), so
//! communicators, groups, matching and collectives name them as they name world ranks.
//! Processes of another job are always reached through the network transport (libfabric,
//! opened on demand), also on the same node: the jobs share no shared-memory segment.
//! Each connection takes a slot of each process (`Engine::reserve_connection_slot`), which
//! it announces; packets to it from that group carry the slot and the sender's position in
//! its group as their tag (`transport::net::other_job_tag`), and the process numbers the
//! group from the slot's first index on, in group order. Slots are taken when a connection
//! starts, so a process may run several at once (threads spawning on different
//! communicators, in any order on different processes), and a packet that comes before its
//! sender is added is known by its slot:
//!
//! - the parents (the members of the spawning communicator) each announce a slot `s_i`;
//!   child `j` sends to parent `i` with tag (`s_i`, `j`);
//! - the children (a new job, nothing connected yet) take `PARENTS_SLOT` for the parents and
//!   number them after their own ranks, in the order of the spawning communicator; parent
//!   `i` sends to every child with tag (`PARENTS_SLOT`, `i`).
//!
//! The steps: the parents gather (slot, network address) at the root, which hands them to
//! the process manager with the spawn request, as a key put in the children's KVS before
//! they start (`oxmpi-parents`, with the root's rank in `oxmpi-parent-root`). In MPI_Init
//! the children open their endpoints, publish their addresses in their own KVS and fence;
//! `mpiexec` answers the root's request once the children have left that fence, so the
//! root then reads their addresses from the children's KVS and broadcasts them, with the
//! outcome and the error codes, to the parents. Both sides then agree on a context pair
//! free on every member of both groups (`Agreement` with a leader swap, as in
//! MPI_Intercomm_create_from_groups: each group gathers at its leader on `GROUP_CTX`, the
//! parents' root and child 0 swap over the network), which makes the intercommunicator.

use super::*;
use crate::error::MpiError;
use crate::pmi::{Pmi, SpawnCommand};
use crate::runtime::{self, Runtime};
use crate::transport::net::other_job_tag;
use agree::{Agreement, LeaderSwap};

/// Tags on the spawning communicator's internal context (after the intercommunicator
/// exchanges' 3..5, below the collectives' ranges).
const TAG_SPAWN_GATHER: i32 = 6;
const TAG_SPAWN_BCAST: i32 = 7;
/// The slot a spawned process gives its parents: its first connection.
const PARENTS_SLOT: u64 = 1;
/// Key of the parents' records in the children's KVS, and of the root's rank.
const PARENTS_KEY: &str = "oxmpi-parents";
const PARENT_ROOT_KEY: &str = "oxmpi-parent-root";

/// What MPI_Comm_spawn gives every parent.
pub struct SpawnOutcome {
    /// The intercommunicator to the children, when they started.
    pub intercomm: Option<MPI_Comm>,
    /// An error code per child (MPI_SUCCESS when it started).
    pub errcodes: Vec<i32>,
    /// Why the spawn failed.
    pub error: Option<MpiError>,
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn take_u64(b: &mut &[u8]) -> Option<u64> {
    let (head, rest) = b.split_first_chunk::<8>()?;
    *b = rest;
    Some(u64::from_le_bytes(*head))
}

pub(super) fn put_bytes(out: &mut Vec<u8>, v: &[u8]) {
    put_u64(out, v.len() as u64);
    out.extend_from_slice(v);
}

pub(super) fn take_bytes(b: &mut &[u8]) -> Option<Vec<u8>> {
    let n = take_u64(b)? as usize;
    let v = b.get(..n)?.to_vec();
    *b = &b[n..];
    Some(v)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len() / 2).map(|i| u8::from_str_radix(&text.get(2 * i..2 * i + 2)?, 16).ok()).collect()
}

pub(super) fn garbled(what: &str) -> MpiError {
    MpiError::new(MPI_ERR_INTERN, format!("dynamic processes: garbled {what}"))
}

/// Parses `oxmpi-parents`: per parent, its slot for the children and its network address.
fn parse_parents(text: &str) -> MpiResult<Vec<(u64, Vec<u8>)>> {
    let bytes = unhex(text).ok_or_else(|| garbled("parents' records"))?;
    let mut b = &bytes[..];
    let n = take_u64(&mut b).ok_or_else(|| garbled("parents' records"))?;
    (0..n)
        .map(|_| Some((take_u64(&mut b)?, take_bytes(&mut b)?)))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| garbled("parents' records"))
}

/// A network address as published in the KVS (`hex:level`, see `runtime`).
fn parse_published_address(value: &str) -> MpiResult<Vec<u8>> {
    let hex_part = value.split_once(':').map_or(value, |(h, _)| h);
    unhex(hex_part).ok_or_else(|| garbled("network address"))
}

/// Sends `data` (any length) to world rank `dst`: its length, then the bytes, by sends that
/// complete on their own.
fn send_sized(engine: &mut Engine, dst: usize, env: Envelope, data: Vec<u8>) {
    inter::post_send(engine, dst, env, (data.len() as u64).to_le_bytes().to_vec());
    inter::post_send(engine, dst, env, data);
}

/// The receive of a `send_sized`: its length, then its bytes.
enum SizedRecv {
    Length(u32),
    Data(u32),
    Done(Vec<u8>),
}

impl SizedRecv {
    fn start(engine: &mut Engine, env: Envelope) -> SizedRecv {
        SizedRecv::Length(engine.irecv(env, RecvBuf::owned(8), MPI_COMM_NULL))
    }

    /// The receive it waits for, if any.
    fn waiting_on(&self) -> Option<u32> {
        match self {
            SizedRecv::Length(r) | SizedRecv::Data(r) => Some(*r),
            SizedRecv::Done(_) => None,
        }
    }

    /// Takes what has arrived; the bytes once all of them are there.
    fn advance(&mut self, engine: &mut Engine, env: Envelope) -> Option<&[u8]> {
        loop {
            match self {
                SizedRecv::Length(r) if engine.is_complete(*r) => {
                    let len = inter::received(engine, *r);
                    let len = u64::from_le_bytes(len[..8].try_into().expect("8 bytes")) as usize;
                    *self = SizedRecv::Data(engine.irecv(env, RecvBuf::owned(len), MPI_COMM_NULL));
                }
                SizedRecv::Data(r) if engine.is_complete(*r) => *self = SizedRecv::Done(inter::received(engine, *r)),
                SizedRecv::Done(data) => return Some(data),
                _ => return None,
            }
        }
    }

    fn into_bytes(self) -> Vec<u8> {
        match self {
            SizedRecv::Done(data) => data,
            _ => unreachable!("a transfer taken before it arrived"),
        }
    }
}

/// The members of the communicator of a spawn or connection, as its exchanges address them
/// (on its internal context).
struct Members {
    ctx: u32,
    rank: usize,
    members: Vec<usize>,
}

impl Members {
    fn env(&self, src: usize, tag: i32) -> Envelope {
        Envelope { ctx: self.ctx, src: src as i32, tag }
    }
}

/// Gathers every member's `record` at `root` (returned there, by rank), with the library
/// released while it waits.
fn gather_records(g: &Members, root: usize, record: Vec<u8>) -> MpiResult<Option<Vec<Vec<u8>>>> {
    if g.rank != root {
        let to = g.members[root];
        runtime::with(|rt| {
            send_sized(&mut rt.engine, to, g.env(g.rank, TAG_SPAWN_GATHER), record);
            Ok(())
        })?;
        return Ok(None);
    }
    let mut own = Some(record);
    runtime::blocking(
        |rt| {
            Ok((0..g.members.len())
                .map(|r| match r == root {
                    true => SizedRecv::Done(own.take().expect("the root's record, once")),
                    false => SizedRecv::start(&mut rt.engine, g.env(r, TAG_SPAWN_GATHER)),
                })
                .collect::<Vec<_>>())
        },
        |e, recvs| recvs.iter().all(|s| s.waiting_on().is_none_or(|r| e.is_complete(r))),
        |rt, recvs| {
            let mut all = true;
            for (r, recv) in recvs.iter_mut().enumerate() {
                all &= recv.advance(&mut rt.engine, g.env(r, TAG_SPAWN_GATHER)).is_some();
            }
            Ok(all.then(|| Some(std::mem::take(recvs).into_iter().map(SizedRecv::into_bytes).collect())))
        },
    )
}

/// Sends `data` from `root` to every member, which returns it everywhere; the library is
/// released while the others wait for it.
fn bcast_bytes(g: &Members, root: usize, data: Option<Vec<u8>>) -> MpiResult<Vec<u8>> {
    if g.rank == root {
        let data = data.expect("the root has the data");
        runtime::with(|rt| {
            for (_, &w) in g.members.iter().enumerate().filter(|&(r, _)| r != root) {
                send_sized(&mut rt.engine, w, g.env(root, TAG_SPAWN_BCAST), data.clone());
            }
            Ok(())
        })?;
        return Ok(data);
    }
    let env = g.env(root, TAG_SPAWN_BCAST);
    runtime::blocking(
        |rt| Ok(SizedRecv::start(&mut rt.engine, env)),
        |e, recv| recv.waiting_on().is_none_or(|r| e.is_complete(r)),
        |rt, recv| {
            let arrived = recv.advance(&mut rt.engine, env).is_some();
            Ok(arrived.then(|| std::mem::replace(recv, SizedRecv::Done(Vec::new())).into_bytes()))
        },
    )
}

/// The context agreement of the intercommunicator between a spawning group and the job it
/// spawned, with the leaders swapping over the network; installs the intercommunicator.
/// `local`: this group (world ranks, this process `rank`), `leader` its leader's position;
/// `remote`: the other group's table indices; `swap`: at the leader, the swap with theirs.
fn connect_groups(
    comms: &Comms,
    local: Vec<usize>,
    rank: usize,
    leader: usize,
    remote: Vec<usize>,
    swap: Option<LeaderSwap>,
    spawned_kvsname: &str,
) -> MpiResult<Construction> {
    let tag = string_tag(spawned_kvsname);
    let mut parts = by_world(&local);
    parts.swap(0, leader);
    let me = parts.iter().position(|&(_, w)| w == local[rank]).expect("a member of its group");
    let key = (GROUP_CTX, tag as u64, 5 << 40);
    let agreement = Agreement::new(comms.pool.clone(), GROUP_CTX, tag, parts, me, swap, key);
    Construction::agreeing(agreement, move |comms, (pair, _), _| {
        let mut comm = Comm::new((pair * 2) as u32, rank, local);
        comm.remote = Some(remote);
        Ok(Some(comms.install(comm)))
    })
}

/// The members of `comm` for a spawn or connection by `what` rooted at `root`, this
/// process's slot for it and its record (under the library lock).
fn start_connection(rt: &mut Runtime, comm: MPI_Comm, root: usize, what: &str) -> MpiResult<(Members, u64, Vec<u8>)> {
    let c = rt.comms.get(comm)?;
    c.check_intra(&format!("{what}'s comm"))?;
    if root >= c.size() {
        return err(MPI_ERR_ROOT, format!("invalid root argument (root={root}, communicator size {})", c.size()));
    }
    // The communicator may hold processes of several jobs (one merged from a spawn's
    // intercommunicator): every member announces its own slot, the other group numbers the
    // members by their positions in it, and the agreement on the group context learns their
    // indices from the transport.
    let g = Members { ctx: c.coll_ctx(), rank: c.rank, members: c.members.clone() };
    let (slot, record) = own_record(&mut rt.engine)?;
    Ok((g, slot, record))
}

/// MPI_Comm_spawn / MPI_Comm_spawn_multiple (collective over `parent`; `commands` read at
/// `root` only). Returns, on every parent, the intercommunicator and the error codes, or the
/// error of the whole call; errors of arguments at the root are every parent's. At
/// MPI_THREAD_MULTIPLE the library is released while the call waits (for the other parents,
/// the process manager, the children).
pub fn spawn(parent: MPI_Comm, root: usize, commands: MpiResult<Vec<SpawnCommand>>) -> MpiResult<SpawnOutcome> {
    let (g, slot, record) = runtime::with(|rt| start_connection(rt, parent, root, "MPI_Comm_spawn"))?;
    let decided = match gather_records(&g, root, record)? {
        Some(records) => Some(match commands {
            Ok(commands) => {
                let pmi = runtime::with(|rt| Ok(rt.pmi.clone()))?;
                let mut pmi = runtime::lock_pmi(&pmi);
                spawn_at_root(&mut pmi, root, &records, commands)
            }
            // Bad arguments at the root are every parent's error.
            Err(e) => failed(e.code, Vec::new(), e.msg.to_string()),
        }),
        None => None,
    };
    let outcome = bcast_bytes(&g, root, decided)?;
    // The outcome: 0 or the error class, error codes, then (when started) the children's
    // job name and addresses, else the reason.
    let mut b = &outcome[..];
    let class = take_u64(&mut b).ok_or_else(|| garbled("spawn outcome"))? as i32;
    let started = class == MPI_SUCCESS;
    let n = take_u64(&mut b).ok_or_else(|| garbled("spawn outcome"))? as usize;
    let codes: Vec<i32> = (0..n)
        .map(|_| take_u64(&mut b).map(|c| c as i32))
        .collect::<Option<_>>()
        .ok_or_else(|| garbled("spawn outcome"))?;
    let text = String::from_utf8_lossy(&take_bytes(&mut b).ok_or_else(|| garbled("spawn outcome"))?).into_owned();
    if !started {
        return Ok(SpawnOutcome {
            intercomm: None,
            errcodes: codes.iter().map(|&c| if c == 0 { MPI_SUCCESS } else { MPI_ERR_SPAWN }).collect(),
            error: Some(MpiError::new(class, text)),
        });
    }
    let kvsname = text;
    let children: Vec<Vec<u8>> =
        (0..n).map(|_| take_bytes(&mut b)).collect::<Option<_>>().ok_or_else(|| garbled("spawn outcome"))?;
    let rank = g.rank;
    let peers: Vec<(Vec<u8>, u64)> = children.into_iter().map(|a| (a, other_job_tag(PARENTS_SLOT, rank))).collect();
    let intercomm = construct(|rt| {
        let first = rt.engine.add_remote_peers(slot, &peers)?;
        let remote: Vec<usize> = (first..first + n).collect();
        let swap = (rank == root).then_some(LeaderSwap {
            ctx: GROUP_CTX,
            tag: string_tag(&kvsname),
            // The receiver puts the index it gave this process (`p2p::GROUP_CTX`).
            my_src: 0,
            their_src: first as i32,
            their_world: first,
            extra: 0,
        });
        connect_groups(&rt.comms, g.members.clone(), rank, root, remote, swap, &kvsname)
    })?
    .expect("every parent joins the intercommunicator");
    Ok(SpawnOutcome { intercomm: Some(intercomm), errcodes: vec![MPI_SUCCESS; n], error: None })
}

impl Comms {
    /// A spawned process in MPI_Init, once its job's transports are up: connects to the
    /// parents and makes the intercommunicator MPI_Comm_get_parent returns. Nothing for a
    /// process that was not spawned.
    pub fn connect_parent(&mut self, engine: &mut Engine, pmi: &mut Pmi) -> MpiResult<()> {
        if !pmi.spawned() {
            return Ok(());
        }
        let pm = |what: &str, e: std::io::Error| MpiError::new(MPI_ERR_OTHER, format!("process manager: {what}: {e}"));
        // Keys the process manager put before the job started (PMI-1, one key space: no rank
        // put them, rank 0 is as good as any).
        let parents = pmi.get(0, PARENTS_KEY).map_err(|e| pm("reading the parents' addresses", e))?;
        let root = pmi.get(0, PARENT_ROOT_KEY).map_err(|e| pm("reading the parents' root", e))?;
        let (Some(parents), Some(root)) = (parents, root) else {
            return err(MPI_ERR_OTHER, "started as a spawned process, but the process manager gave no parents");
        };
        let parents = parse_parents(&parents)?;
        let root: usize = root.trim().parse().map_err(|_| garbled("parents' root"))?;
        let (rank, size) = (pmi.rank(), pmi.size());
        // Parent i knows this process as (its slot, this rank).
        let peers: Vec<(Vec<u8>, u64)> =
            parents.iter().map(|&(slot, ref address)| (address.clone(), other_job_tag(slot, rank))).collect();
        if engine.reserve_connection_slot()? != PARENTS_SLOT {
            // The parents send with PARENTS_SLOT (see the module's notes).
            return err(MPI_ERR_INTERN, "a spawned process connected to another job before its parents");
        }
        let first = engine.add_remote_peers(PARENTS_SLOT, &peers)?;
        debug_assert_eq!(first, size);
        if root >= parents.len() {
            return Err(garbled("parents' root"));
        }
        let swap = (rank == 0).then_some(LeaderSwap {
            ctx: GROUP_CTX,
            tag: string_tag(pmi.wire_kvsname()),
            // The receiver puts the index it gave this process (`p2p::GROUP_CTX`).
            my_src: 0,
            their_src: (first + root) as i32,
            their_world: first + root,
            extra: 0,
        });
        let remote: Vec<usize> = (first..first + parents.len()).collect();
        let kvsname = pmi.wire_kvsname().to_string();
        let h = connect_groups(self, (0..size).collect(), rank, 0, remote, swap, &kvsname)?
            .run(self, engine)?
            .expect("every process of the job joins the intercommunicator");
        // The name MPI gives the parent communicator (MPI-4.1 11.8.2).
        self.get_mut(h)?.name = "MPI_COMM_PARENT".into();
        self.parent = h;
        Ok(())
    }
}

// ------------------------------------------------------------------------------------
// Ports: MPI_Comm_accept / MPI_Comm_connect and MPI_Comm_join, on the same numbering: every
// process of each group publishes (its offset, its address); the roots swap their groups'
// records through the process manager (`Pmi::meet_at_port`: `mpiexec` pairs the i-th
// accept on a port with the i-th connect), or, for MPI_Comm_join, over the caller's socket.

/// A new slot of this process for a connection, and its record: the slot and its network
/// address.
pub(super) fn own_record(engine: &mut Engine) -> MpiResult<(u64, Vec<u8>)> {
    let slot = engine.reserve_connection_slot()?;
    let address = engine.network_address()?;
    let mut record = Vec::new();
    put_u64(&mut record, slot);
    put_bytes(&mut record, &address);
    Ok((slot, record))
}

/// A group's records as the roots swap them: its root's rank, then the records by rank.
pub(super) fn group_records(root: usize, records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    put_u64(&mut out, root as u64);
    put_u64(&mut out, records.len() as u64);
    records.iter().for_each(|r| out.extend_from_slice(r));
    out
}

/// Parses `group_records`: the root, and each member's (slot, address).
pub(super) fn parse_group_records(bytes: &[u8]) -> MpiResult<(usize, Vec<(u64, Vec<u8>)>)> {
    let mut b = bytes;
    let root = take_u64(&mut b).ok_or_else(|| garbled("group records"))? as usize;
    let n = take_u64(&mut b).ok_or_else(|| garbled("group records"))?;
    let records = (0..n)
        .map(|_| Some((take_u64(&mut b)?, take_bytes(&mut b)?)))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| garbled("group records"))?;
    if root >= records.len() {
        return Err(garbled("group records"));
    }
    Ok((root, records))
}

/// Connects this group (`members`, this process `rank`, its root `root`, its connection
/// `slot`, which `own_record` announced) to the group of `remote` (its root and records) as
/// an intercommunicator; `name` is the same on both sides and tells this connection from
/// others.
#[allow(clippy::too_many_arguments)]
pub(super) fn join_groups(
    comms: &Comms,
    engine: &mut Engine,
    members: Vec<usize>,
    rank: usize,
    root: usize,
    slot: u64,
    remote: (usize, Vec<(u64, Vec<u8>)>),
    name: &str,
) -> MpiResult<Construction> {
    let (remote_root, records) = remote;
    // Remote process j knows this one as (its slot, this rank).
    let peers: Vec<(Vec<u8>, u64)> =
        records.iter().map(|&(their_slot, ref address)| (address.clone(), other_job_tag(their_slot, rank))).collect();
    let first = engine.add_remote_peers(slot, &peers)?;
    let remote_members: Vec<usize> = (first..first + records.len()).collect();
    let swap = (rank == root).then_some(LeaderSwap {
        ctx: GROUP_CTX,
        tag: string_tag(name),
        // The receiver puts the index it gave this process (`p2p::GROUP_CTX`).
        my_src: 0,
        their_src: (first + remote_root) as i32,
        their_world: first + remote_root,
        extra: 0,
    });
    connect_groups(comms, members, rank, root, remote_members, swap, name)
}

/// Ports opened by this process so far (numbers its port names).
static PORTS_OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// MPI_Open_port: a name unique in the run (`mpiexec` pairs accepts and connects by it),
/// opened at the process manager.
pub fn open_port() -> MpiResult<String> {
    let serial = PORTS_OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let rank = runtime::world_rank().unwrap_or(0);
    runtime::with(|rt| {
        let mut pmi = rt.pmi();
        let name = format!("oxmpi-port:{}:{rank}:{serial}", pmi.wire_kvsname());
        pmi.open_port(&name).map_err(|e| MpiError::new(MPI_ERR_PORT, format!("cannot open a port: {e}")))?;
        Ok(name)
    })
}

/// MPI_Close_port: MPI_ERR_PORT for a port that is not open.
pub fn close_port(port: &str) -> MpiResult<()> {
    let was_open = runtime::with(|rt| {
        rt.pmi().close_port(port).map_err(|e| MpiError::new(MPI_ERR_PORT, format!("cannot close port {port}: {e}")))
    })?;
    if !was_open {
        return err(MPI_ERR_PORT, format!("port {port:?} is not open"));
    }
    Ok(())
}

fn name_service_error(e: std::io::Error) -> MpiError {
    MpiError::new(MPI_ERR_SERVICE, format!("name service: {e}"))
}

/// MPI_Publish_name: MPI_ERR_SERVICE for a service already published.
pub fn publish_name(service: &str, port: &str) -> MpiResult<()> {
    if !runtime::with(|rt| rt.pmi().publish_name(service, port).map_err(name_service_error))? {
        return err(MPI_ERR_SERVICE, format!("service {service:?} is already published"));
    }
    Ok(())
}

/// MPI_Unpublish_name: MPI_ERR_SERVICE for a service not published.
pub fn unpublish_name(service: &str) -> MpiResult<()> {
    if !runtime::with(|rt| rt.pmi().unpublish_name(service).map_err(name_service_error))? {
        return err(MPI_ERR_SERVICE, format!("service {service:?} is not published"));
    }
    Ok(())
}

/// MPI_Lookup_name: the port published under `service`, else MPI_ERR_NAME.
pub fn lookup_name(service: &str) -> MpiResult<String> {
    match runtime::with(|rt| rt.pmi().lookup_name(service).map_err(name_service_error))? {
        Some(port) => Ok(port),
        None => err(MPI_ERR_NAME, format!("service {service:?} is not published")),
    }
}

/// MPI_Comm_accept (`accept`) or MPI_Comm_connect (collective over `comm`; `port` read at
/// `root` only, its error every member's). At MPI_THREAD_MULTIPLE the library is released
/// while the call waits (for the other members, at the port, for the other group).
pub fn accept_or_connect(comm: MPI_Comm, root: usize, port: MpiResult<String>, accept: bool) -> MpiResult<MPI_Comm> {
    let what = if accept { "MPI_Comm_accept" } else { "MPI_Comm_connect" };
    let (g, slot, record) = runtime::with(|rt| start_connection(rt, comm, root, what))?;
    // The outcome: the error class (0: connected), then the connection's name and the
    // remote group's records, or the reason.
    let decided = match gather_records(&g, root, record)? {
        Some(records) => {
            let mine = group_records(root, &records);
            let met = match port {
                Ok(port) => {
                    let pmi = runtime::with(|rt| Ok(rt.pmi.clone()))?;
                    let mut pmi = runtime::lock_pmi(&pmi);
                    pmi.meet_at_port(accept, &port, &hex(&mine), crate::config::connect_timeout())
                        .map(|(theirs, serial)| (format!("{port}#{serial}"), theirs))
                        .map_err(|e| MpiError::new(MPI_ERR_PORT, format!("{what}: {e}")))
                }
                Err(e) => Err(e),
            };
            let mut out = Vec::new();
            match met {
                Ok((name, theirs)) => {
                    put_u64(&mut out, MPI_SUCCESS as u64);
                    put_bytes(&mut out, name.as_bytes());
                    put_bytes(&mut out, theirs.as_bytes());
                }
                Err(e) => {
                    put_u64(&mut out, e.code as u64);
                    put_bytes(&mut out, e.msg.as_bytes());
                }
            }
            Some(out)
        }
        None => None,
    };
    let outcome = bcast_bytes(&g, root, decided)?;
    let mut b = &outcome[..];
    let class = take_u64(&mut b).ok_or_else(|| garbled("connection outcome"))? as i32;
    let text = String::from_utf8_lossy(&take_bytes(&mut b).ok_or_else(|| garbled("connection outcome"))?).into_owned();
    if class != MPI_SUCCESS {
        return err(class, text);
    }
    let theirs = take_bytes(&mut b).ok_or_else(|| garbled("connection outcome"))?;
    let theirs = unhex(&String::from_utf8_lossy(&theirs)).ok_or_else(|| garbled("connection outcome"))?;
    let remote = parse_group_records(&theirs)?;
    construct(|rt| join_groups(&rt.comms, &mut rt.engine, g.members.clone(), g.rank, root, slot, remote, &text))?
        .ok_or_else(|| MpiError::new(MPI_ERR_INTERN, format!("{what}: no intercommunicator")))
}

/// MPI_Comm_join: this process and the one at the other end of `socket` (each calls it with
/// its end) swap their records over it and connect; the library is released meanwhile.
pub fn join(socket: &mut std::fs::File) -> MpiResult<MPI_Comm> {
    use std::io::{BufRead, Write};
    let me = crate::runtime::world_rank().unwrap_or(0) as usize;
    let (slot, record) = runtime::with(|rt| own_record(&mut rt.engine))?;
    let mine = hex(&group_records(0, &[record]));
    let io = |e: std::io::Error| MpiError::new(MPI_ERR_OTHER, format!("MPI_Comm_join: the socket: {e}"));
    socket.write_all(format!("{mine}\n").as_bytes()).map_err(io)?;
    // One line, read byte by byte: nothing after it is ours to take from the socket.
    let mut line = Vec::new();
    let mut reader = std::io::BufReader::with_capacity(1, &mut *socket);
    reader.read_until(b'\n', &mut line).map_err(io)?;
    let theirs = String::from_utf8_lossy(&line).trim().to_string();
    let bytes = unhex(&theirs).ok_or_else(|| garbled("MPI_Comm_join record"))?;
    let remote = parse_group_records(&bytes)?;
    // The same name on both sides: the two records in order.
    let name = if mine < theirs { format!("join:{mine}:{theirs}") } else { format!("join:{theirs}:{mine}") };
    construct(|rt| join_groups(&rt.comms, &mut rt.engine, vec![me], 0, 0, slot, remote, &name))?
        .ok_or_else(|| MpiError::new(MPI_ERR_INTERN, "MPI_Comm_join: no intercommunicator"))
}

/// The outcome of a spawn that failed with error class `class` (see `Comms::spawn`).
fn failed(class: i32, codes: Vec<i32>, why: String) -> Vec<u8> {
    let mut out = Vec::new();
    put_u64(&mut out, class as u64);
    put_u64(&mut out, codes.len() as u64);
    codes.iter().for_each(|&c| put_u64(&mut out, c as u64));
    put_bytes(&mut out, why.as_bytes());
    out
}

/// The root's part of a spawn: asks the process manager, then reads the children's
/// addresses. Returns the outcome every parent gets (see `Comms::spawn`).
fn spawn_at_root(pmi: &mut Pmi, root: usize, records: &[Vec<u8>], commands: Vec<SpawnCommand>) -> Vec<u8> {
    let total: usize = commands.iter().map(|c| c.maxprocs).sum();
    let failed = |codes: Vec<i32>, why: String| failed(MPI_ERR_SPAWN, codes, format!("MPI_Comm_spawn: {why}"));
    let mut parents = Vec::new();
    put_u64(&mut parents, records.len() as u64);
    for record in records {
        parents.extend_from_slice(record);
    }
    let preput = vec![(PARENTS_KEY.to_string(), hex(&parents)), (PARENT_ROOT_KEY.to_string(), root.to_string())];
    let started = match pmi.spawn(&commands, &preput) {
        Ok(started) => started,
        Err(e) => return failed(vec![1; total], format!("the process manager cannot spawn: {e}")),
    };
    let Some(kvsname) = started.kvsname else {
        return failed(started.errcodes, started.message);
    };
    let mut addresses = Vec::new();
    for j in 0..total {
        match pmi.get_in(&kvsname, &format!("oxmpi-net-{j}")) {
            Ok(Some(value)) => match parse_published_address(&value) {
                Ok(a) => addresses.push(a),
                Err(e) => return failed(vec![1; total], e.msg.to_string()),
            },
            Ok(None) => return failed(vec![1; total], format!("spawned rank {j} published no network address")),
            Err(e) => return failed(vec![1; total], format!("reading spawned rank {j}'s address: {e}")),
        }
    }
    let mut out = Vec::new();
    put_u64(&mut out, MPI_SUCCESS as u64);
    put_u64(&mut out, total as u64);
    (0..total).for_each(|_| put_u64(&mut out, 0));
    put_bytes(&mut out, kvsname.as_bytes());
    addresses.iter().for_each(|a| put_bytes(&mut out, a));
    out
}

/// MPI_Comm_disconnect's wait: until nothing this process sent to the other members of
/// `comm` is still queued or in flight (the caller then synchronises with them).
pub fn wait_sent(engine: &mut Engine, comm: &Comm) {
    let peers: Vec<usize> = comm.members.iter().chain(comm.remote.iter().flatten()).copied().collect();
    engine.wait_until(|e| peers.iter().all(|&p| !e.busy_towards(p)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_records_round_trip() {
        let mut bytes = Vec::new();
        put_u64(&mut bytes, 2);
        put_u64(&mut bytes, 4);
        put_bytes(&mut bytes, b"addr-a");
        put_u64(&mut bytes, 7);
        put_bytes(&mut bytes, b"");
        let parsed = parse_parents(&hex(&bytes)).unwrap();
        assert_eq!(parsed, vec![(4, b"addr-a".to_vec()), (7, Vec::new())]);
        assert!(parse_parents(&hex(&bytes[..bytes.len() - 1])).is_err());
        assert!(parse_parents("0g").is_err());
    }

    #[test]
    fn published_addresses_drop_the_level() {
        assert_eq!(parse_published_address("0a0b:1").unwrap(), vec![10, 11]);
        assert_eq!(parse_published_address("ff").unwrap(), vec![255]);
        assert!(parse_published_address("f").is_err());
    }
}

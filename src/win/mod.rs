//! Windows: the table behind MPI_Win handles, window creation (the four flavours) and
//! freeing, the memory of the allocating flavours, and what a window records about itself
//! (group, name, hints, attributes, dynamic regions).
//!
//! One-sided operations and synchronisation live in `rma`; a window here is the object MPI
//! programs create, query and free, with its `rma::Rma`.
//!
//! Creation is collective: each window takes a duplicate of its communicator (a context of
//! its own), and every collective step of the window runs on it, so it never meets the
//! program's traffic; the requests of one-sided operations by message travel on it too.
//! Every window has one file of shared memory per node (`SharedFile`) that the node's
//! members map: the control area of `rma`, then, for MPI_Win_allocate and
//! MPI_Win_allocate_shared, the memory of the node's members, so that origins of the node
//! reach it directly. The file is released as soon as all have mapped it. Members of other nodes are reached by messages (`rma::Agent`
//! on every member when any member needs them).
//!
//! Windows are process-local objects like groups, so the table has its own lock; it is never
//! held while the runtime runs a collective or a user callback.

use crate::abi::consts::*;
use crate::abi::types::{MPI_Aint, MPI_Comm, MPI_Win};
use crate::attr::Attrs;
use crate::coll::{self, Block, In, Out, on_comm};
use crate::error::{MpiError, MpiResult, err};
use crate::info::Info;
use crate::runtime;
use crate::transport::net::WindowKeys;
use crate::transport::shared_file::{SharedFile, named_files};
use std::borrow::Cow;
use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard};

/// Handles of user windows: kind DIRECT (bits 31..30 = 10), object WIN (8).
const DIRECT_WIN: u32 = 0xa000_0000;
/// DIRECT handles index a table of at most this many entries (the 26-bit payload).
const MAX_WINS: usize = 0x0400_0000;

/// The window hints this library knows, with their defaults (MPI-4 section 12.2.1 and
/// MPICH's own `alloc_shared_noncontig`). As in MPICH, other keys are ignored, and
/// MPI_Win_get_info returns these.
const HINTS: [(&str, &str); 6] = [
    ("no_locks", "false"),
    ("accumulate_ordering", "rar,raw,war,waw"),
    ("accumulate_ops", "same_op_no_op"),
    ("same_size", "false"),
    ("same_disp_unit", "false"),
    ("alloc_shared_noncontig", "false"),
];

/// The mapping of a window's shared segment (control area, then the allocating flavours'
/// memory); unmapped with the window.
#[derive(Debug)]
struct Segment {
    addr: usize,
    len: usize,
}

/// What a member of a window exposes, as seen from this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peer {
    /// Where this process sees the member's memory: its address in the shared mapping for
    /// MPI_Win_allocate_shared, the member's own address otherwise.
    pub base: usize,
    pub size: MPI_Aint,
    pub disp_unit: MPI_Aint,
}

pub struct Win {
    /// The window's own duplicate of the communicator it was made from.
    pub comm: MPI_Comm,
    /// World rank of each member, by rank in the window's group.
    pub members: Vec<usize>,
    pub rank: usize,
    /// MPI_WIN_FLAVOR_*. The attribute values below are read by C through pointers MPI
    /// hands out, so they never change after creation and each window is boxed.
    pub flavor: c_int,
    pub model: c_int,
    pub base: usize,
    pub size: MPI_Aint,
    pub disp_unit: c_int,
    pub peers: Vec<Peer>,
    pub name: String,
    pub hints: Info,
    pub attrs: Attrs,
    /// MPI_Win_attach'ed regions of a dynamic window: (address, size).
    pub regions: Vec<(usize, usize)>,
    /// One-sided operations and epochs (shared with calls in progress on other threads).
    pub rma: std::sync::Arc<crate::rma::Rma>,
    segment: Segment,
    /// Mappings of other members' MPI_Alloc_mem files (MPI_Win_create over such memory).
    peer_maps: Vec<Segment>,
    /// The task request of this member's agent (`rma::Agent`), when some member reaches
    /// others by messages.
    agent: Option<u32>,
    /// The exposure of this member's memory to RDMA by members on other nodes
    /// (`Engine::expose_window`), until MPI_Win_free.
    rdma_exposure: Option<u64>,
}

/// How the memory of a new window comes about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// MPI_Win_create: the program's memory at this address.
    Create(usize),
    Allocate,
    Shared,
    Dynamic,
}

impl Flavor {
    fn code(self) -> c_int {
        match self {
            Flavor::Create(_) => MPI_WIN_FLAVOR_CREATE,
            Flavor::Allocate => MPI_WIN_FLAVOR_ALLOCATE,
            Flavor::Shared => MPI_WIN_FLAVOR_SHARED,
            Flavor::Dynamic => MPI_WIN_FLAVOR_DYNAMIC,
        }
    }
}

static TABLE: Mutex<Vec<Option<Box<Win>>>> = Mutex::new(Vec::new());

fn table() -> MutexGuard<'static, Vec<Option<Box<Win>>>> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

fn slot_of(handle: MPI_Win) -> Option<usize> {
    let h = handle as u32;
    (h & 0xfc00_0000 == DIRECT_WIN).then_some((h & 0x03ff_ffff) as usize)
}

fn invalid(handle: MPI_Win) -> MpiError {
    if handle == MPI_WIN_NULL {
        MpiError::new(MPI_ERR_WIN, "invalid window (MPI_WIN_NULL)")
    } else {
        MpiError::new(MPI_ERR_WIN, format!("invalid window (0x{:08x}), perhaps already freed", handle as u32))
    }
}

/// Runs `f` on the live window `handle`.
pub fn with<R>(handle: MPI_Win, f: impl FnOnce(&mut Win) -> MpiResult<R>) -> MpiResult<R> {
    let mut t = table();
    match slot_of(handle).and_then(|s| t.get_mut(s)).and_then(Option::as_mut) {
        Some(w) => f(w),
        None => Err(invalid(handle)),
    }
}

/// MPI_ERR_WIN unless `handle` names a live window.
pub fn check(handle: MPI_Win) -> MpiResult<()> {
    with(handle, |_| Ok(()))
}

pub fn is_valid(handle: MPI_Win) -> bool {
    check(handle).is_ok()
}

/// The address of a field of the live window `handle`, for the predefined attributes
/// (stable: windows are boxed and these fields never change).
pub fn field_addr<T>(handle: MPI_Win, field: impl FnOnce(&Win) -> &T) -> MpiResult<*const T> {
    with(handle, |w| Ok(field(w) as *const T))
}

fn insert(win: Win) -> MpiResult<MPI_Win> {
    let mut t = table();
    let slot = match t.iter().position(Option::is_none) {
        Some(s) => s,
        None if t.len() < MAX_WINS => {
            t.push(None);
            t.len() - 1
        }
        None => return err(MPI_ERR_OTHER, "too many windows"),
    };
    t[slot] = Some(Box::new(win));
    Ok((DIRECT_WIN | slot as u32) as MPI_Win)
}

/// The known hints of `info` over the defaults.
pub fn hints_of(info: &Info, mut hints: Info) -> Info {
    for (key, _) in HINTS {
        if let Some(v) = info.get(key) {
            hints.set(key, v);
        }
    }
    hints
}

fn default_hints() -> Info {
    let mut h = Info::default();
    for (k, v) in HINTS {
        h.set(k, v);
    }
    h
}

/// Every member's `mine` (all of the same length), in rank order.
fn allgather_bytes(g: &mut coll::Group, mine: &[u8]) -> MpiResult<Vec<u8>> {
    let (n, len) = (g.size(), mine.len());
    let mut all = vec![0u8; n * len];
    let block = |offset| Block { offset, count: len, layout: crate::datatype::BYTE };
    let send = In { mem: Cow::Borrowed(mine), blocks: coll::Blocks::one(block(0)) };
    let recv = Out { mem: &mut all, blocks: (0..n).map(|i| block(i * len)).collect() };
    coll::allgather(g, Some(send), recv)?;
    Ok(all)
}

/// `root`'s `buf` on every member.
fn bcast_bytes(g: &mut coll::Group, buf: &mut [u8], root: usize) -> MpiResult<()> {
    let len = buf.len();
    let mut out =
        Out { mem: buf, blocks: coll::Blocks::one(Block { offset: 0, count: len, layout: crate::datatype::BYTE }) };
    coll::bcast(g, &mut out, root)
}

/// Whether every member of `comm` gets `ok`: a collective vote, so that all members fail
/// together when one does.
fn all_ok(comm: MPI_Comm, ok: bool) -> MpiResult<bool> {
    let votes = on_comm(comm, |g| allgather_bytes(g, &[ok as u8]))?;
    Ok(votes.iter().all(|&v| v == 1))
}

/// MPI_Win_create, MPI_Win_allocate, MPI_Win_allocate_shared, MPI_Win_create_dynamic
/// (collective over `comm`, an intracommunicator whose arguments the caller checked):
/// returns the window and its base address on this process.
pub fn create(
    comm: MPI_Comm,
    flavor: Flavor,
    size: usize,
    disp_unit: c_int,
    info: &Info,
) -> MpiResult<(MPI_Win, usize)> {
    let (members, rank) = runtime::with(|rt| {
        let c = rt.comms.get(comm)?;
        c.check_intra("window creation")?;
        Ok((c.members.clone(), c.rank))
    })?;
    if flavor == Flavor::Shared {
        let nodes = runtime::with(|rt| Ok(rt.comms.node_ids(&mut crate::runtime::lock_pmi(&rt.pmi))?.to_vec()))?;
        if members.iter().any(|&w| nodes[w] != nodes[members[0]]) {
            return err(MPI_ERR_RMA_SHARED, "the communicator spans several nodes: its memory cannot be shared");
        }
    }
    // A window's own communicator; at MPI_THREAD_MULTIPLE the dup releases the library while it
    // waits, like every constructor.
    let own = crate::comm::construct(|rt| rt.comms.dup(&mut rt.engine, comm))?
        .expect("a duplicate of an intracommunicator is never MPI_COMM_NULL");
    let made = build(own, flavor, size, disp_unit, info, members, rank);
    if made.is_err() {
        let _ = runtime::with(|rt| rt.comms.free(own));
    }
    made
}

/// `create`'s work once the window has its communicator `own`.
fn build(
    own: MPI_Comm,
    flavor: Flavor,
    size: usize,
    disp_unit: c_int,
    info: &Info,
    members: Vec<usize>,
    rank: usize,
) -> MpiResult<(MPI_Win, usize)> {
    let own_base = match flavor {
        Flavor::Create(base) => base,
        _ => 0,
    };
    // Memory of MPI_Alloc_mem in a shared file: (descriptor, offset of the base, file length).
    let shared_file = match flavor {
        Flavor::Create(base) if size > 0 => crate::rma::alloc_mem::find(base, size),
        _ => None,
    };
    let (fd, offset, file_len) = shared_file.map_or((u64::MAX, 0, 0), |(fd, o, l)| (fd as u64, o as u64, l as u64));
    let mine: Vec<u8> = [own_base as u64, size as u64, disp_unit as u64, fd, offset, file_len]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let all = on_comm(own, |g| allgather_bytes(g, &mine))?;
    let word = |c: &[u8], i: usize| u64::from_ne_bytes(c[i * 8..i * 8 + 8].try_into().unwrap());
    let mut peers: Vec<Peer> = all
        .chunks_exact(48)
        .map(|c| Peer { base: word(c, 0) as usize, size: word(c, 1) as MPI_Aint, disp_unit: word(c, 2) as MPI_Aint })
        .collect();
    let files: Vec<Option<(i32, usize, usize)>> = all
        .chunks_exact(48)
        .map(|c| (word(c, 3) != u64::MAX).then(|| (word(c, 3) as i32, word(c, 4) as usize, word(c, 5) as usize)))
        .collect();
    // The control area, then the members' memory: contiguous in rank order for
    // MPI_Win_allocate_shared (MPICH's layout, which programs index across), each part on a
    // cache line of its own for MPI_Win_allocate.
    // Members of this node share its segment; members elsewhere have their node's.
    let nodes = runtime::with(|rt| Ok(members.iter().map(|&w| rt.engine.node_of()[w]).collect::<Vec<usize>>()))?;
    let local: Vec<bool> = nodes.iter().map(|&n| n == nodes[rank]).collect();
    let control = crate::rma::control_bytes(members.len(), flavor == Flavor::Dynamic).next_multiple_of(4096);
    let align = if flavor == Flavor::Allocate { 64 } else { 1 };
    let mut offsets = Vec::with_capacity(peers.len());
    let mut end = control;
    for (p, &here) in peers.iter().zip(&local) {
        end = end.next_multiple_of(align);
        offsets.push(end);
        if here {
            end += p.size as usize;
        }
    }
    let allocating = matches!(flavor, Flavor::Allocate | Flavor::Shared);
    let (addr, len) = map_window_segment(own, rank, &nodes, if allocating { end } else { control })?;
    if allocating {
        for ((p, &off), &here) in peers.iter_mut().zip(&offsets).zip(&local) {
            // A member without memory has no address (MPICH: NULL), in every flavour;
            // members on other nodes have theirs in their node's segment.
            p.base = if p.size > 0 && here { addr + off } else { 0 };
        }
    }
    let base = if allocating { peers[rank].base } else { own_base };
    let worlds = members.clone();
    let node_worlds: Vec<usize> = worlds.iter().zip(&local).filter(|(_, here)| **here).map(|(&w, _)| w).collect();
    let (targets, peer_maps) = targets_of(flavor, &peers, &files, &worlds, &local, &node_worlds, rank);
    let by_message = targets.iter().any(|t| t.access == crate::rma::Access::Message);
    let channel = runtime::with(|rt| Ok(crate::rma::Channel { ctx: rt.comms.get(own)?.ctx, comm: own }))?;
    let (rdma_keys, rdma_exposure) = match expose_for_rdma(own, flavor, base, size, &local) {
        Ok(exposed) => exposed,
        Err(e) => {
            unmap(addr, len);
            return Err(e);
        }
    };
    let rma = std::sync::Arc::new(crate::rma::Rma::new(
        rank,
        worlds,
        node_worlds,
        targets,
        addr,
        flavor == Flavor::Dynamic,
        channel,
        rdma_keys,
    ));
    // Every member runs an agent when any reaches another by messages (the vote keeps
    // members that reach everyone directly serving those that do not).
    let agent = match all_ok(own, !by_message) {
        Ok(true) => None,
        Ok(false) => {
            rma.set_serving();
            Some(runtime::with(|rt| Ok(crate::rma::Agent::start(&mut rt.engine, rma.clone())))?)
        }
        Err(e) => {
            withdraw_exposure(rdma_exposure);
            unmap(addr, len);
            return Err(e);
        }
    };
    let win = Win {
        comm: own,
        members,
        rank,
        flavor: flavor.code(),
        model: MPI_WIN_UNIFIED,
        base,
        size: size as MPI_Aint,
        disp_unit,
        peers,
        name: String::new(),
        hints: hints_of(info, default_hints()),
        attrs: Attrs::default(),
        regions: Vec::new(),
        rma,
        segment: Segment { addr, len },
        peer_maps,
        agent,
        rdma_exposure,
    };
    Ok((insert(win)?, base))
}

/// Exposes this member's memory (`size` bytes at `base`) to RDMA by the members on other
/// nodes and learns how to reach theirs, for windows that span nodes and whose memory is
/// fixed at creation (not dynamic ones). Returns each member's keys where this process uses
/// them (members elsewhere that exposed theirs), and this member's exposure.
fn expose_for_rdma(
    own: MPI_Comm,
    flavor: Flavor,
    base: usize,
    size: usize,
    local: &[bool],
) -> MpiResult<(Vec<Option<WindowKeys>>, Option<u64>)> {
    let none = vec![None; local.len()];
    if local.iter().all(|&here| here) || !matches!(flavor, Flavor::Create(_) | Flavor::Allocate) {
        return Ok((none, None));
    }
    // SAFETY: the window's memory stays allocated until MPI_Win_free withdraws the exposure
    // (MPI forbids freeing the memory of MPI_Win_create earlier).
    let exposed = runtime::with(|rt| Ok(unsafe { rt.engine.expose_window(base, size) }))?;
    let token = exposed.map(|(token, _)| token);
    let mine = exposed.map_or([0u8; WindowKeys::WIRE_BYTES], |(_, keys)| keys.to_wire());
    let all = match on_comm(own, |g| allgather_bytes(g, &mine)) {
        Ok(all) => all,
        Err(e) => {
            withdraw_exposure(token);
            return Err(e);
        }
    };
    if !runtime::with(|rt| Ok(rt.engine.window_rdma()))? {
        return Ok((none, token));
    }
    let keys = all
        .chunks_exact(WindowKeys::WIRE_BYTES)
        .zip(local)
        .map(|(wire, &here)| if here { None } else { WindowKeys::from_wire(wire) })
        .collect();
    Ok((keys, token))
}

fn withdraw_exposure(token: Option<u64>) {
    if let Some(token) = token {
        let _ = runtime::with(|rt| {
            rt.engine.withdraw_window(token);
            Ok(())
        });
    }
}

/// Makes and maps a window's shared segment of `total` bytes, zeroed, on every member: one
/// per node, shared by its members (`nodes`: each member's node). Returns (address, length).
fn map_window_segment(own: MPI_Comm, rank: usize, nodes: &[usize], total: usize) -> MpiResult<(usize, usize)> {
    // The node's first member names and sizes the file; the name goes to the others with a
    // status byte (one node: a broadcast; several: an allgather of every node's).
    const NAME_MAX: usize = 128;
    const ENTRY: usize = NAME_MAX + 1;
    let maker_of = |r: usize| nodes.iter().position(|&n| n == nodes[r]).expect("a member is on its own node");
    let maker = maker_of(rank);
    let one_node = nodes.iter().all(|&n| n == nodes[0]);
    let mut msg = [0u8; ENTRY];
    // Held until every member has mapped it (`SharedFile`).
    let mut made = None;
    if rank == maker {
        let label = format!("win-{}-{}", std::process::id(), crate::pmi::random_hex());
        match SharedFile::create(&label, total) {
            Ok(file) if file.name().len() <= NAME_MAX => {
                msg[0] = 1;
                msg[1..1 + file.name().len()].copy_from_slice(file.name().as_bytes());
                made = Some(file);
            }
            Ok(file) => log::error!("window creation: the name {} is too long", file.name()),
            Err(e) => log::error!("window creation: {}", e.msg),
        }
    }
    if one_node {
        on_comm(own, |g| bcast_bytes(g, &mut msg, 0))?;
    } else {
        let all = on_comm(own, |g| allgather_bytes(g, &msg))?;
        let made = all.chunks_exact(ENTRY).enumerate().all(|(r, m)| m[0] == 1 || maker_of(r) != r);
        msg.copy_from_slice(&all[maker * ENTRY..(maker + 1) * ENTRY]);
        if !made {
            // Some node could not make its file: every member fails alike.
            msg[0] = 0;
        }
    }
    if msg[0] != 1 {
        let room = if named_files() { "is /dev/shm too small or not writable?" } else { "is memory short?" };
        return err(MPI_ERR_NO_MEM, format!("cannot create a shared segment of {total} bytes ({room})"));
    }
    let end = msg[1..].iter().position(|&b| b == 0).unwrap_or(NAME_MAX);
    let path = String::from_utf8_lossy(&msg[1..1 + end]).into_owned();
    let mapped = map_segment(&path, total);
    let ok = all_ok(own, mapped.is_ok());
    // Every member has mapped it (or failed): no file outlives the job.
    drop(made);
    match (ok?, mapped) {
        (true, Ok(addr)) => Ok((addr, total)),
        (_, mapped) => {
            if let Ok(addr) = mapped {
                unmap(addr, total);
            }
            err(MPI_ERR_NO_MEM, format!("cannot map the shared segment of {total} bytes on some rank"))
        }
    }
}

fn os_error(what: &str, path: &str) -> MpiError {
    MpiError::new(MPI_ERR_NO_MEM, format!("{what} {path}: {}", std::io::Error::last_os_error()))
}

/// Maps `len` bytes of the segment file `path`, shared; returns the address.
pub(crate) fn map_segment(path: &str, len: usize) -> MpiResult<usize> {
    let file = crate::transport::shared_file::open(path)?;
    // SAFETY: a new shared mapping of an open file at an address the kernel picks; it does
    // not alias any Rust object, and stays valid after the file is closed.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            std::os::fd::AsRawFd::as_raw_fd(&file),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(os_error("cannot map", path));
    }
    Ok(addr as usize)
}

pub(crate) fn unmap(addr: usize, len: usize) {
    // SAFETY: (addr, len) is a mapping made by `map_segment` that nothing uses any more.
    unsafe { libc::munmap(addr as *mut libc::c_void, len) };
}

/// MPI_Win_free's collective part, after the attributes are gone: waits for every member
/// (their accesses to this process's memory are over), then releases the memory and the
/// window's communicator.
pub fn free(handle: MPI_Win) -> MpiResult<()> {
    let comm = with(handle, |w| {
        w.rma.check_closed()?;
        Ok(w.comm)
    })?;
    on_comm(comm, coll::barrier)?;
    let win = {
        let mut t = table();
        t[slot_of(handle).unwrap()].take().expect("window vanished while being freed")
    };
    // Every member's epochs are closed (the barrier), so no request to this agent is left.
    if let Some(agent) = win.agent {
        runtime::with(|rt| {
            rt.engine.end_task(agent);
            Ok(())
        })?;
    }
    // Every member is done with this one's memory (the barrier).
    withdraw_exposure(win.rdma_exposure);
    for (keyval, _) in win.attrs.iter() {
        crate::attr::release(keyval);
    }
    unmap(win.segment.addr, win.segment.len);
    for m in &win.peer_maps {
        unmap(m.addr, m.len);
    }
    runtime::with(|rt| rt.comms.free(win.comm))
}

/// How this member reaches each member's memory: directly in the shared segment for the
/// allocating flavours (and its own memory always), directly in a mapping of the member's
/// MPI_Alloc_mem file (`files`) for MPI_Win_create over such memory, else by single copy
/// when the kernel permits it, else (and for members on other nodes: `local` false) by
/// messages (`node_worlds`: the world ranks of the members on this node, whose reads are
/// probed). Also the mappings made.
fn targets_of(
    flavor: Flavor,
    peers: &[Peer],
    files: &[Option<(i32, usize, usize)>],
    worlds: &[usize],
    local: &[bool],
    node_worlds: &[usize],
    rank: usize,
) -> (Vec<crate::rma::Target>, Vec<Segment>) {
    use crate::rma::{Access, Target};
    // Probed among this node's members only (the others are reached by messages anyway).
    let me = node_worlds.iter().position(|&w| w == worlds[rank]).expect("this member is on its node");
    let single_copy = matches!(flavor, Flavor::Create(_) | Flavor::Dynamic)
        && runtime::with(|rt| Ok(crate::coll::shm::probe_peer_reads(&rt.engine, node_worlds, me))).unwrap_or(false);
    let pid_of =
        |r: usize| runtime::with(|rt| Ok(rt.engine.segment().map(|s| s.peer_identity(worlds[r]).0))).ok().flatten();
    let mut maps = Vec::new();
    let targets = peers
        .iter()
        .enumerate()
        .map(|(r, p)| {
            let (size, disp_unit) = (p.size as usize, p.disp_unit as usize);
            let by_message = Target { base: 0, size, disp_unit, access: Access::Message };
            if !local[r] {
                return by_message;
            }
            // The same permission as single copy lets this member open the other's file.
            if let (Flavor::Create(_), Some((fd, offset, len)), true) = (flavor, files[r], r != rank && single_copy)
                && let Some(addr) = pid_of(r).and_then(|pid| crate::rma::alloc_mem::map_peer(pid, fd, len))
            {
                maps.push(Segment { addr, len });
                return Target { base: addr + offset, size, disp_unit, access: Access::Direct };
            }
            match flavor {
                Flavor::Allocate | Flavor::Shared => Target { base: p.base, size, disp_unit, access: Access::Direct },
                Flavor::Create(_) | Flavor::Dynamic if r == rank => {
                    Target { base: p.base, size, disp_unit, access: Access::Direct }
                }
                Flavor::Create(_) | Flavor::Dynamic if single_copy => match pid_of(r) {
                    Some(pid) => Target { base: p.base, size, disp_unit, access: Access::SingleCopy { pid } },
                    None => by_message,
                },
                _ => by_message,
            }
        })
        .collect();
    (targets, maps)
}

/// The one-sided side of window `handle`.
pub fn rma(handle: MPI_Win) -> MpiResult<std::sync::Arc<crate::rma::Rma>> {
    with(handle, |w| Ok(w.rma.clone()))
}

/// MPI_Win_shared_query: the size, displacement unit and local address of member `rank`'s
/// memory; MPI_PROC_NULL names the lowest rank with memory.
pub fn shared_query(handle: MPI_Win, rank: c_int) -> MpiResult<Peer> {
    with(handle, |w| {
        if w.flavor != MPI_WIN_FLAVOR_SHARED {
            return err(MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query needs a window of MPI_Win_allocate_shared");
        }
        if rank == MPI_PROC_NULL {
            return Ok(w.peers.iter().copied().find(|p| p.size > 0).unwrap_or_default());
        }
        match usize::try_from(rank).ok().and_then(|r| w.peers.get(r)) {
            Some(p) => Ok(*p),
            None => err(MPI_ERR_RANK, format!("invalid rank (rank={rank}, window group size {})", w.peers.len())),
        }
    })
}

/// MPI_Win_attach: records `size` bytes at `base` as exposed by the dynamic window.
pub fn attach(handle: MPI_Win, base: usize, size: usize) -> MpiResult<()> {
    with(handle, |w| {
        if w.flavor != MPI_WIN_FLAVOR_DYNAMIC {
            return err(MPI_ERR_RMA_FLAVOR, "MPI_Win_attach needs a window of MPI_Win_create_dynamic");
        }
        if size == 0 {
            return Ok(());
        }
        if w.regions.iter().any(|&(b, s)| base < b + s && b < base + size) {
            return err(MPI_ERR_RMA_ATTACH, format!("memory at 0x{base:x} overlaps a region already attached"));
        }
        w.regions.push((base, size));
        w.rma.publish_regions(&w.regions);
        Ok(())
    })
}

/// MPI_Win_detach: forgets the region attached at `base`.
pub fn detach(handle: MPI_Win, base: usize) -> MpiResult<()> {
    with(handle, |w| {
        if w.flavor != MPI_WIN_FLAVOR_DYNAMIC {
            return err(MPI_ERR_RMA_FLAVOR, "MPI_Win_detach needs a window of MPI_Win_create_dynamic");
        }
        match w.regions.iter().position(|&(b, _)| b == base) {
            Some(i) => {
                w.regions.remove(i);
                w.rma.publish_regions(&w.regions);
                Ok(())
            }
            None => err(MPI_ERR_RMA_ATTACH, format!("no memory attached at 0x{base:x}")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_and_hints() {
        assert_eq!(slot_of((DIRECT_WIN | 5) as MPI_Win), Some(5));
        assert_eq!(slot_of(MPI_WIN_NULL), None);
        assert_eq!(check(MPI_WIN_NULL).unwrap_err().code, MPI_ERR_WIN);
        assert_eq!(check(DIRECT_WIN as MPI_Win).unwrap_err().code, MPI_ERR_WIN);
        let mut given = Info::default();
        given.set("no_locks", "true");
        given.set("not_a_hint", "1");
        let h = hints_of(&given, default_hints());
        assert_eq!(h.get("no_locks"), Some("true"));
        assert_eq!(h.get("accumulate_ops"), Some("same_op_no_op"));
        assert_eq!(h.get("not_a_hint"), None);
    }
}

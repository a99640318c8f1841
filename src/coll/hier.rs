//! Node-aware (two-level) blocking collectives: barrier, broadcast, reduce and allreduce on
//! intracommunicators run through shared memory among the ranks of each node (`coll::shm`)
//! and point to point among one leader per node only; on one node, shared memory alone.
//!
//! Nodes are the process manager's, or simulated with `OXMPI_FAKE_NODES` (so the
//! composition is tested on one machine). A communicator's node structure and its area are
//! set up at its first collective here and kept with the communicator (freed with it);
//! `OXMPI_COLL_SHM=0` turns the whole path off (point-to-point algorithms only).
//!
//! Every decision to take this path depends only on what is the same on every rank (the
//! communicator, the operation, packed lengths), never on datatype layouts, so all ranks
//! take the same path. Non-commutative operations keep rank order when every node's ranks
//! are consecutive in the communicator (each node reduces its block in order, then the
//! leaders in node order); otherwise they use the point-to-point algorithms.

use super::shm::{Area, LANE_CAP, LANE_ENTRY_MAX, SLOT_CAP};
use super::{Block, Group, In, Out, allreduce_packed, bcast_packed, pack_block, packed_in, reduce_packed, tag};
use crate::config;
use crate::error::{MpiError, MpiResult};
use crate::op::Reduction;
use crate::p2p::Engine;
use std::borrow::Cow;
use std::cell::{Cell, RefCell, RefMut};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Tag of the area handshake on the communicator's internal context.
const TAG_SETUP: i32 = 12;
/// Context of the traffic among node leaders: the communicator's internal context with this
/// bit set (context ids stay below 2^13), so it never meets the communicator's own
/// collective traffic, where the same ranks have other numbers. Bits 13.. name the set of
/// leaders (0: every node's first rank; r + 1: the same but root r for its node), so the
/// sender behind a leader number is the same for every message on one context, and
/// consecutive collectives with different leaders cannot take each other's messages.
const LEADER_CTX: u32 = 0x4000_0000;
const LEADER_SET_SHIFT: u32 = 13;
/// Roots above this lead their node through the point-to-point path instead.
const MAX_LEADER_SET: usize = (1 << (30 - LEADER_SET_SHIFT)) - 1;

/// `/dev/shm/<prefix>...` names the job's files (see `pmi::shm_prefix`), set at start-up.
static JOB_PREFIX: OnceLock<String> = OnceLock::new();
/// Areas created by this process, to name them apart.
static AREAS_CREATED: AtomicU64 = AtomicU64::new(0);

/// Records the job's shared-memory file prefix (runtime start-up).
pub fn set_job_prefix(prefix: String) {
    let _ = JOB_PREFIX.set(prefix);
}

/// The job's shared-memory file prefix (`oxmpi-single-` before start-up recorded one).
pub fn job_prefix() -> &'static str {
    JOB_PREFIX.get().map_or("oxmpi-single-", String::as_str)
}

/// Whether node-aware collectives are on (`OXMPI_COLL_SHM`, default 1).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var(config::COLL_SHM).map_or(true, |v| v.trim() != "0"))
}

/// Simulated nodes from `OXMPI_FAKE_NODES=k` (k blocks of consecutive world ranks) or
/// `k:cyclic` (world rank w on node w % k): the node of every world rank of a job of `size`.
fn fake_node_ids(size: usize) -> Option<Vec<usize>> {
    static SPEC: OnceLock<Option<(usize, bool)>> = OnceLock::new();
    let spec = *SPEC.get_or_init(|| {
        let v = std::env::var(config::FAKE_NODES).ok()?;
        let (k, kind) = v.trim().split_once(':').unwrap_or((v.trim(), "block"));
        match (k.parse::<usize>(), kind) {
            (Ok(k), "block" | "cyclic") if k > 0 => Some((k, kind == "cyclic")),
            _ => {
                log::warn!(
                    "ignoring {}={v}: expected a node count, optionally with :block or :cyclic",
                    config::FAKE_NODES
                );
                None
            }
        }
    });
    let (k, cyclic) = spec?;
    let k = k.min(size.max(1));
    Some((0..size).map(|w| if cyclic { w % k } else { w * k / size }).collect())
}

/// The nodes collectives and `MPI_COMM_TYPE_SHARED` work with, from the real ones (`real`,
/// per world rank): simulated ones when the job runs on one node and asks for them
/// (simulated nodes cannot split a job that spans real nodes: their ranks share no memory).
pub fn effective_node_ids(real: &[usize]) -> Vec<usize> {
    let one_node = real.iter().all(|&n| n == real[0]);
    match fake_node_ids(real.len()) {
        Some(fake) if one_node => fake,
        _ => real.to_vec(),
    }
}

/// A communicator's node-aware state, decided at its first collective here.
#[derive(Default)]
pub struct CommShm(RefCell<State>);

#[derive(Default)]
enum State {
    #[default]
    Unknown,
    Off,
    On(Box<Hier>),
}

impl CommShm {
    /// A state that never takes the node-aware path (the leaders' own group).
    fn off() -> CommShm {
        CommShm(RefCell::new(State::Off))
    }
}

struct Hier {
    /// Ranks of the communicator by node, nodes ordered by their lowest rank, ranks ascending.
    nodes: Vec<Vec<usize>>,
    my_node: usize,
    /// Every node's ranks are consecutive (rank order = node order, then local order).
    contiguous: bool,
    /// The area shared with the other ranks of this node (None when alone on it).
    area: Option<Area>,
    /// Gathers and scatters through the lanes (one node only).
    lane_blocks: LaneBlocks,
}

impl Hier {
    fn local(&self) -> &[usize] {
        &self.nodes[self.my_node]
    }

    /// The leader of each node for a collective rooted at `root` (the root leads its node).
    fn leaders(&self, root: Option<usize>) -> Vec<usize> {
        self.nodes.iter().map(|v| root.filter(|r| v.contains(r)).unwrap_or(v[0])).collect()
    }

    /// The context of the leaders' traffic of a collective rooted at `root` on the
    /// communicator with internal context `ctx` (see LEADER_CTX); None when the root's
    /// number does not fit.
    fn leader_ctx(&self, ctx: u32, root: Option<usize>) -> Option<u32> {
        let set = match root {
            Some(r) if !self.nodes.iter().any(|v| v[0] == r) => r + 1,
            _ => 0,
        };
        (set <= MAX_LEADER_SET && ctx < 1 << LEADER_SET_SHIFT)
            .then_some(LEADER_CTX | (set as u32) << LEADER_SET_SHIFT | ctx)
    }

    fn local_index(&self, rank: usize) -> usize {
        self.local().iter().position(|&r| r == rank).expect("rank on this node")
    }
}

/// This rank's node-aware state, set up on first use; None where the path does not apply.
#[inline]
fn prepare<'s>(g: &mut Group<'s>) -> MpiResult<Option<RefMut<'s, Hier>>> {
    if !enabled() || g.is_inter() || g.size() < 2 {
        return Ok(None);
    }
    let cell: &'s CommShm = g.shm;
    let mut st = cell.0.borrow_mut();
    if let State::Unknown = *st {
        set_up(g, &mut st)?;
    }
    Ok(RefMut::filter_map(st, |s| match s {
        State::On(h) => Some(&mut **h),
        _ => None,
    })
    .ok())
}

/// `prepare` at the communicator's first collective: finds its node structure and sets up
/// the area (out of line: every later call only looks at the state).
#[cold]
#[inline(never)]
fn set_up(g: &mut Group, st: &mut State) -> MpiResult<()> {
    *st = State::Off;
    if let Some(h) = build(g)? {
        *st = State::On(Box::new(h));
    }
    Ok(())
}

/// The node structure of the communicator and, with company on this node, its area.
fn build(g: &mut Group) -> MpiResult<Option<Hier>> {
    // Processes of another job (MPI_Comm_spawn) are reached through the network, and the
    // jobs do not see each other's node maps alike: such communicators stay flat.
    if g.members.iter().any(|&w| g.engine.is_foreign(w)) {
        return Ok(None);
    }
    let ids = effective_node_ids(g.engine.node_of());
    let mut nodes: Vec<Vec<usize>> = Vec::new();
    let mut node_of_id: Vec<(usize, usize)> = Vec::new();
    for (r, &w) in g.members.iter().enumerate() {
        let id = ids[w];
        match node_of_id.iter().find(|&&(i, _)| i == id) {
            Some(&(_, k)) => nodes[k].push(r),
            None => {
                node_of_id.push((id, nodes.len()));
                nodes.push(vec![r]);
            }
        }
    }
    if nodes.len() == g.size() {
        // No two ranks share a node: nothing to gain.
        return Ok(None);
    }
    let my_node = nodes.iter().position(|v| v.contains(&g.rank)).expect("this rank is a member");
    let contiguous = nodes.iter().all(|v| v[v.len() - 1] - v[0] + 1 == v.len());
    let area = if nodes[my_node].len() > 1 { Some(setup_area(g, &nodes[my_node])?) } else { None };
    let lane_blocks = if nodes.len() == 1 { LaneBlocks::new(g.size()) } else { LaneBlocks::default() };
    Ok(Some(Hier { nodes, my_node, contiguous, area, lane_blocks }))
}

/// Creates (the node's lowest rank) or opens the area of this node's ranks `local`: the
/// creator sends the others its file's name, and releases the file once all have mapped it,
/// so no file outlives the communicator (`SharedFile`).
fn setup_area(g: &mut Group, local: &[usize]) -> MpiResult<Area> {
    let worlds: Vec<usize> = local.iter().map(|&r| g.members[r]).collect();
    let me = local.iter().position(|&r| r == g.rank).expect("this rank is on its node");
    // The name's longest form: "/dev/shm/" and the job's prefix and label, or a /proc path.
    const NAME_MAX: usize = 512;
    if me == 0 {
        let id = AREAS_CREATED.fetch_add(1, Ordering::Relaxed);
        let label = format!("coll{}-{}-{id}", g.ctx, worlds[0]);
        let can_read = super::shm::probe_peer_reads(g.engine, &worlds, me);
        let created = Area::create(&label, worlds.clone(), can_read, g.engine.ranks_outnumber_cores());
        // An empty name says the creation failed.
        let sent = created.as_ref().map_or(Vec::new(), |(_, file)| file.name().as_bytes().to_vec());
        for &r in &local[1..] {
            g.send(r, TAG_SETUP, sent.clone());
        }
        let (area, file) = created?;
        g.engine.wait_until(|_| area.all_attached());
        log::debug!("collective area {} for {} ranks on this node", file.name(), local.len());
        drop(file);
        Ok(area)
    } else {
        let got = g.recv(local[0], TAG_SETUP, NAME_MAX)?;
        if got.is_empty() {
            return Err(MpiError::new(
                crate::abi::consts::MPI_ERR_OTHER,
                "shared-memory collectives: the node's first rank could not create the communicator's area",
            ));
        }
        let name = String::from_utf8_lossy(&got).into_owned();
        let can_read = super::shm::probe_peer_reads(g.engine, &worlds, me);
        let area = Area::open(&name, worlds, me, can_read)?;
        area.announce_attached(g.engine);
        Ok(area)
    }
}

/// Runs `f` as a member of the leaders' group `leaders` (world ranks), as number `idx`, on
/// context `ctx` (from `leader_ctx`).
fn as_leader<R>(
    e: &mut Engine,
    ctx: u32,
    leaders: &[usize],
    idx: usize,
    f: impl FnOnce(&mut Group) -> MpiResult<R>,
) -> MpiResult<R> {
    let (seq, blocking_seq, off) = (Cell::new(0), Cell::new(0), CommShm::off());
    let mut lg = Group {
        engine: e,
        ctx,
        rank: idx,
        members: leaders,
        remote: None,
        seq: &seq,
        blocking_seq: &blocking_seq,
        shm: &off,
    };
    f(&mut lg)
}

/// Runs `f` on the packed bytes of block 0 of `out`: the user's memory itself when the
/// layout is contiguous, else a packed copy (of the current contents when `load`) written
/// back afterwards.
fn with_packed_out<R>(out: &mut Out, load: bool, f: impl FnOnce(&mut [u8]) -> R) -> R {
    let b = out.blocks[0].clone();
    if b.layout.is_contiguous() {
        return f(&mut out.mem[b.offset..b.offset + b.bytes()]);
    }
    let mut v = if load { out.pack(0) } else { vec![0; b.bytes()] };
    let r = f(&mut v);
    out.put(0, &v);
    r
}

macro_rules! hier_or_none {
    ($g:expr) => {
        match prepare($g) {
            Ok(Some(h)) => h,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        }
    };
}

/// The value of a step that may decline (`None`: the caller returns None, the point-to-point
/// path runs) or fail (the caller returns `Some(Err)`): the areas of the paths below.
macro_rules! area_or_decline {
    ($step:expr) => {
        match $step? {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        }
    };
}

/// Whether `red` over `len` bytes may take this path on `h`. User functions see the vector
/// whole: programs may treat several elements as one (MPICH's tests do), so it must fit one
/// slot.
fn reduction_fits(h: &Hier, red: &Reduction, len: usize) -> bool {
    (red.is_commutative() || h.contiguous) && reduction_fits_slots(red, len)
}

/// The part of `reduction_fits` that holds on one node (where rank order is node order).
fn reduction_fits_slots(red: &Reduction, len: usize) -> bool {
    let esize = red.elem_size();
    esize > 0 && esize <= SLOT_CAP && (red.is_builtin() || len <= SLOT_CAP)
}

/// MPI_Barrier: the node's ranks gather at its first rank, the first ranks run a
/// point-to-point barrier, and each releases its node.
pub fn barrier(g: &mut Group) -> Option<MpiResult<()>> {
    let mut h = hier_or_none!(g);
    let ctx = h.leader_ctx(g.ctx, None)?;
    let (my_node, many) = (h.my_node, h.nodes.len() > 1);
    let leaders: Vec<usize> = if many { h.leaders(None).iter().map(|&r| g.members[r]).collect() } else { Vec::new() };
    let mut between = |e: &mut Engine| as_leader(e, ctx, &leaders, my_node, super::barrier);
    Some(match (&mut h.area, many) {
        (Some(a), true) => a.barrier(g.engine, Some(&mut between)),
        (Some(a), false) => a.barrier(g.engine, None),
        (None, _) => between(g.engine),
    })
}

/// MPI_Bcast: among the node leaders (the root leads its node), then within each node.
pub fn bcast(g: &mut Group, buf: &mut Out, root: usize) -> Option<MpiResult<()>> {
    let len = buf.blocks[0].bytes();
    if len == 0 {
        return None;
    }
    let mut h = hier_or_none!(g);
    if h.nodes.len() == 1 {
        // One node: its local numbers are the ranks.
        let (area, e) = (h.area.as_mut().expect("one node of several ranks has an area"), &mut *g.engine);
        if area.bcast_by_pair(len) {
            return None;
        }
        return Some(with_packed_out(buf, g.rank == root, |data| area.bcast(e, data, root)));
    }
    let leaders = h.leaders(Some(root));
    let local_leader = leaders[h.my_node];
    let local_root = h.local_index(local_leader);
    let leader_worlds: Vec<usize> = leaders.iter().map(|&r| g.members[r]).collect();
    let root_node = h.nodes.iter().position(|v| v.contains(&root)).expect("root is a member");
    let ctx = h.leader_ctx(g.ctx, Some(root))?;
    let (my_node, many, me) = (h.my_node, h.nodes.len() > 1, g.rank);
    let e = &mut *g.engine;
    Some(with_packed_out(buf, me == root, |data| {
        if many && me == local_leader {
            let mut v = if me == root { data.to_vec() } else { Vec::new() };
            as_leader(e, ctx, &leader_worlds, my_node, |lg| bcast_packed(lg, &mut v, len, root_node, tag::BCAST))?;
            if me != root {
                data.copy_from_slice(&v);
            }
        }
        match &mut h.area {
            Some(a) => a.bcast(e, data, local_root),
            None => Ok(()),
        }
    }))
}

/// MPI_Reduce: within each node to its leader (the root leads its node), then among the
/// leaders to the root.
pub fn reduce(
    g: &mut Group,
    send: &Option<In>,
    recv: &mut Option<Out>,
    red: &Reduction,
    root: usize,
) -> Option<MpiResult<()>> {
    let len = match (send, recv.as_ref()) {
        (Some(s), _) => s.blocks[0].bytes(),
        (None, Some(o)) => o.blocks[0].bytes(),
        (None, None) => return None,
    };
    if len == 0 {
        return None;
    }
    let mut h = hier_or_none!(g);
    if !reduction_fits(&h, red, len) {
        return None;
    }
    // Packed only now: a large vector that goes point to point is not copied for nothing.
    let input = packed_input(send, recv.as_ref());
    let me = g.rank;
    if h.nodes.len() == 1 {
        // One node: its local numbers are the ranks.
        let (area, e) = (h.area.as_mut().expect("one node of several ranks has an area"), &mut *g.engine);
        return Some(match recv.as_mut().filter(|_| me == root) {
            Some(out) => with_packed_out(out, false, |o| area.reduce(e, &input, Some(o), red, root)),
            None => area.reduce(e, &input, None, red, root),
        });
    }
    let leaders = h.leaders(Some(root));
    let local_leader = leaders[h.my_node];
    let local_root = h.local_index(local_leader);
    let ctx = h.leader_ctx(g.ctx, Some(root))?;
    let my_node = h.my_node;
    let e = &mut *g.engine;
    let mut partial = if me == local_leader { vec![0u8; input.len()] } else { Vec::new() };
    let local = match &mut h.area {
        Some(a) => a.reduce(e, &input, (me == local_leader).then_some(&mut partial[..]), red, local_root),
        None => {
            partial.copy_from_slice(&input);
            Ok(())
        }
    };
    if let Err(err) = local {
        return Some(Err(err));
    }
    if me != local_leader {
        return Some(Ok(()));
    }
    let leader_worlds: Vec<usize> = leaders.iter().map(|&r| g.members[r]).collect();
    let root_node = h.nodes.iter().position(|v| v.contains(&root)).expect("root is a member");
    let result =
        as_leader(e, ctx, &leader_worlds, my_node, |lg| reduce_packed(lg, partial, red, root_node, tag::REDUCE));
    Some(result.map(|r| {
        if let Some(r) = r {
            recv.as_mut().expect("the root has a receive buffer").put(0, &r);
        }
    }))
}

/// Largest total (`block * ranks`) of a gather through the lanes (`OXMPI_COLL_SHM_GATHER_MAX`).
fn gather_max() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| config::usize_var(config::COLL_SHM_GATHER_MAX).unwrap_or(LANE_CAP))
}

/// Largest total (`block * ranks`) of a scatter through the lanes
/// (`OXMPI_COLL_SHM_SCATTER_MAX`, default `LANE_CAP`; at most what one lane entry holds). At
/// 2 ranks 0.82-0.98x the point-to-point scatter's time (docs/perf-r6-collsmall.md); at 4
/// and 8 ranks on 2 cores 0.3-0.6x since waiting ranks yield to each other (round 6 found it
/// mostly worse at 8 ranks before that; docs/perf-r7-np8.md).
fn scatter_max() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| config::usize_var(config::COLL_SHM_SCATTER_MAX).unwrap_or(LANE_CAP))
}

/// Which rooted collective a lane path is for (`LaneBlocks`).
#[derive(Clone, Copy)]
enum RootedKind {
    Gather,
    Scatter,
}

/// The largest block (bytes per rank) of a Gather and of a Scatter that goes through the
/// lanes of a one-node communicator (0: none, as on several nodes), decided when the
/// communicator's area is set up: `gather_max`/`scatter_max` over the ranks, the lane entry,
/// and the single-copy choice (`rooted_copy_from`). Every rank has the same values.
#[derive(Default)]
struct LaneBlocks {
    gather: usize,
    scatter: usize,
}

impl LaneBlocks {
    fn new(n: usize) -> LaneBlocks {
        if n < 2 || !enabled() {
            return LaneBlocks::default();
        }
        // Not for single-copy candidates: the block-list paths try single copy first, and the
        // contiguous `*_bytes` paths, which do not, must choose as they do.
        let most = (LANE_CAP / (n - 1)).min(rooted_copy_from(n).saturating_sub(1));
        LaneBlocks { gather: most.min(gather_max() / n), scatter: most.min(scatter_max() / n) }
    }
}

/// The area of a one-node communicator for a gather or scatter of `block` bytes per rank
/// (the same on every rank: MPI_Gather/Scatter's blocks match), when the blocks go through
/// the lanes (`LaneBlocks`).
#[inline]
fn rooted_area<'s>(g: &mut Group<'s>, block: usize, kind: RootedKind) -> Option<MpiResult<RefMut<'s, Area>>> {
    if block == 0 {
        return None;
    }
    let h = hier_or_none!(g);
    let most = match kind {
        RootedKind::Gather => h.lane_blocks.gather,
        RootedKind::Scatter => h.lane_blocks.scatter,
    };
    if block > most {
        return None;
    }
    Some(Ok(RefMut::map(h, |h| h.area.as_mut().expect("one node of several ranks has an area"))))
}

/// The shared area of a communicator of several ranks on one node (its local numbers are the
/// ranks); None on several nodes.
#[inline]
fn one_node_area<'s>(g: &mut Group<'s>) -> Option<MpiResult<RefMut<'s, Area>>> {
    let h = hier_or_none!(g);
    if h.nodes.len() != 1 {
        return None;
    }
    Some(Ok(RefMut::map(h, |h| h.area.as_mut().expect("one node of several ranks has an area"))))
}

/// MPI_Gather with `block` bytes from every rank, on one node: every member publishes its
/// block in its lane and returns; the root copies them out as they arrive.
pub fn gather(
    g: &mut Group,
    send: &Option<In>,
    recv: &mut Option<Out>,
    root: usize,
    block: usize,
) -> Option<MpiResult<()>> {
    if let Some(r) = gather_single_copy(g, send, recv, root, block) {
        return Some(r);
    }
    let mut area = area_or_decline!(rooted_area(g, block, RootedKind::Gather));
    let e = &mut *g.engine;
    let Some(out) = recv.as_mut().filter(|_| g.rank == root) else {
        let s = send.as_ref().expect("non-root members send");
        return Some(area.gather(e, block, &packed_in(&s.mem, &s.blocks[0]), root, |_, _| {}));
    };
    if let Some(s) = send {
        // The own block (MPI_IN_PLACE: already in place).
        // SAFETY: distinct user buffers (an overlapping input was copied).
        unsafe { super::copy_block(s.mem.as_ptr(), &s.blocks[0], out.mem.as_mut_ptr(), &out.blocks[root]) };
    }
    Some(area.gather(e, block, &[], root, |j, bytes| put_block(out, j, bytes)))
}

/// MPI_Scatter with `block` bytes to every rank, on one node: the root publishes all the
/// other ranks' blocks in one lane entry and returns; every member copies its own out.
pub fn scatter(
    g: &mut Group,
    send: &Option<In>,
    recv: &mut Option<Out>,
    root: usize,
    block: usize,
) -> Option<MpiResult<()>> {
    if let Some(r) = scatter_single_copy(g, send, recv, root, block) {
        return Some(r);
    }
    let mut area = area_or_decline!(rooted_area(g, block, RootedKind::Scatter));
    let (e, n) = (&mut *g.engine, g.members.len());
    if g.rank != root {
        let out = recv.as_mut().expect("non-root members receive");
        return Some(with_packed_out(out, false, |o| area.scatter(e, &[], o, block, root)));
    }
    let s = send.as_ref().expect("the root has a send buffer");
    let others = (0..n).filter(|&j| j != root);
    // The other ranks' blocks are usually packed in rank order in the user's buffer already
    // (root 0 or n - 1, a contiguous type): published from there, without a copy.
    let start = s.blocks[if root == 0 { 1 } else { 0 }].offset;
    let in_place = (root == 0 || root == n - 1)
        && others
            .clone()
            .enumerate()
            .all(|(k, j)| s.blocks[j].is_contiguous() && s.blocks[j].offset == start + k * block);
    let pieces: Cow<[u8]> = if in_place {
        Cow::Borrowed(&s.mem[start..start + block * (n - 1)])
    } else {
        let mut v = Vec::with_capacity(block * (n - 1));
        for j in others {
            v.extend_from_slice(&packed_in(&s.mem, &s.blocks[j]));
        }
        Cow::Owned(v)
    };
    if let Some(out) = recv {
        // SAFETY: distinct user buffers (an overlapping input was copied).
        unsafe { super::copy_block(s.mem.as_ptr(), &s.blocks[root], out.mem.as_mut_ptr(), &out.blocks[0]) };
    }
    Some(area.scatter(e, &pieces, &mut [], block, root))
}

/// Default smallest block of a gather or scatter by single copy when ranks outnumber cores.
/// Below it the blocks travel as eager pieces through the rings, which lets the root
/// (scatter) or the members (gather) return at once; from it the pieces' waits for the
/// members' turns cost more than the single copy's. Tenth session, 2 cores, 5 alternated
/// runs, median (p90) µs per call, pieces against single copy: gather np 4, 32 KiB 18 (28)
/// against 12 (16), 64 KiB 44 (69) against 21 (23), 128 KiB 77 against 30; gather np 8,
/// 32 KiB 47 (481) against 33 (40), 64 KiB 159 (1,247) against 49 (65); scatter np 8,
/// 32 KiB 50 (245) against 34 (42), 64 KiB 66 (369) against 48 (56); scatter np 4, 32 KiB
/// 9 (71) against 12 (15), 64 KiB 17 (210) against 19 (22). At 16 KiB about even (pieces'
/// medians a little lower, their p90 far higher).
const ROOTED_COPY_MIN: usize = 32 * 1024;

/// By default a scatter moves by single copy only below this block size: from it, one
/// rendezvous message per member measured faster (the members' reads of the root's memory
/// then queue behind each other). Tenth session, 3 alternated runs, median µs per call,
/// single copy against rendezvous: np 4, 256 KiB 147 against 88, 1 MiB 616 against 530;
/// np 8, 256 KiB 428 against 314, 1 MiB 1,286 against 1,194; at 64 KiB even (np 4 28
/// against 28, np 8 63 against 70). Gathers by single copy were as fast or faster at every
/// size (np 8, 1 MiB 1,296 against 1,619).
const SCATTER_COPY_MAX: usize = 256 * 1024;

/// Smallest block of a gather or scatter by single copy through the area when ranks
/// outnumber cores (`OXMPI_COLL_SHM_ROOTED_COPY_MIN`; 0: never). Unset: `ROOTED_COPY_MIN`,
/// or smaller where the blocks would not travel in eager pieces (`tune::Tuning::piece`: block
/// times ranks above `OXMPI_COLL_PIECE_MAX`), where single copy took 0.8-1.0x the time of one
/// rendezvous message per member (docs/perf-r7-np8.md).
fn rooted_copy_min() -> Option<usize> {
    static MIN: OnceLock<Option<usize>> = OnceLock::new();
    *MIN.get_or_init(|| config::usize_var(config::COLL_SHM_ROOTED_COPY_MIN))
}

/// The area of a one-node communicator whose ranks outnumber cores and can all read each
/// other's memory, for a gather or scatter of `block` bytes per rank by single copy (the same
/// answer on every rank: the block, the settings, the area's findings).
fn rooted_copy_area<'s>(g: &mut Group<'s>, block: usize, kind: RootedKind) -> Option<MpiResult<RefMut<'s, Area>>> {
    if !rooted_copy_wanted(g.size(), block, kind) {
        return None;
    }
    let mut area = area_or_decline!(one_node_area(g));
    (area.oversubscribed() && area.peers_readable(g.engine)).then_some(Ok(area))
}

/// Whether a gather or scatter of `block` bytes among `n` ranks is one for single copy by
/// its size and the settings (`rooted_copy_area` then asks the area).
fn rooted_copy_wanted(n: usize, block: usize, kind: RootedKind) -> bool {
    let below_max = match kind {
        RootedKind::Scatter if rooted_copy_min().is_none() => block < SCATTER_COPY_MAX,
        _ => true,
    };
    block > 0 && block >= rooted_copy_from(n) && below_max
}

/// The smallest block of a gather or scatter among `n` ranks that is one for single copy by
/// the settings (usize::MAX: none).
fn rooted_copy_from(n: usize) -> usize {
    // The root's slot holds an address per rank.
    if n < 2 || 8 * n > SLOT_CAP || !enabled() {
        return usize::MAX;
    }
    match rooted_copy_min() {
        Some(0) => usize::MAX,
        Some(min) => min,
        // Where block * n > piece_max, if that is smaller.
        None => ROOTED_COPY_MIN.min(super::tune::get().piece_max / n + 1),
    }
}

/// MPI_Gather by single copy (`rooted_copy_area`): the root reads every member's block
/// straight from its memory into its own receive block.
fn gather_single_copy(
    g: &mut Group,
    send: &Option<In>,
    recv: &mut Option<Out>,
    root: usize,
    block: usize,
) -> Option<MpiResult<()>> {
    let mut area = area_or_decline!(rooted_copy_area(g, block, RootedKind::Gather));
    let e = &mut *g.engine;
    let Some(out) = recv.as_mut().filter(|_| g.rank == root) else {
        let s = send.as_ref().expect("non-root members send");
        // The packed block stays alive until the root has read it (the call waits for that).
        let mine = packed_in(&s.mem, &s.blocks[0]);
        return Some(area.gather_single_copy(e, &mine, root, |_, _| Ok(())));
    };
    if let Some(s) = send {
        // The own block (MPI_IN_PLACE: already in place).
        // SAFETY: distinct user buffers (an overlapping input was copied).
        unsafe { super::copy_block(s.mem.as_ptr(), &s.blocks[0], out.mem.as_mut_ptr(), &out.blocks[root]) };
    }
    Some(area.gather_single_copy(e, &[], root, |j, read| {
        let b = &out.blocks[j];
        if b.layout.is_contiguous() {
            return read(&mut out.mem[b.offset..b.offset + b.bytes()]);
        }
        let mut v = vec![0; b.bytes()];
        read(&mut v)?;
        out.put(j, &v);
        Ok(())
    }))
}

/// MPI_Scatter by single copy (`rooted_copy_area`): every member reads its block straight
/// from the root's memory (non-contiguous blocks packed first at the root).
fn scatter_single_copy(
    g: &mut Group,
    send: &Option<In>,
    recv: &mut Option<Out>,
    root: usize,
    block: usize,
) -> Option<MpiResult<()>> {
    let mut area = area_or_decline!(rooted_copy_area(g, block, RootedKind::Scatter));
    let (e, n) = (&mut *g.engine, g.members.len());
    if g.rank != root {
        let out = recv.as_mut().expect("non-root members receive");
        return Some(with_packed_out(out, false, |o| area.scatter_single_copy(e, &[], o, root)));
    }
    let s = send.as_ref().expect("the root has a send buffer");
    // Every block's bytes, borrowed where contiguous; they stay alive until the members have
    // read them (the call waits for that).
    let blocks: Vec<Cow<[u8]>> =
        (0..n).map(|j| if j == root { Cow::Borrowed(&[][..]) } else { packed_in(&s.mem, &s.blocks[j]) }).collect();
    let addrs: Vec<u64> = blocks.iter().map(|b| b.as_ptr() as u64).collect();
    if let Some(out) = recv {
        // SAFETY: distinct user buffers (an overlapping input was copied).
        unsafe { super::copy_block(s.mem.as_ptr(), &s.blocks[root], out.mem.as_mut_ptr(), &out.blocks[0]) };
    }
    Some(area.scatter_single_copy(e, &addrs, &mut [], root))
}

/// The area of a one-node communicator for an exchange whose entries hold `entry` bytes and
/// whose whole payload is `total` bytes (both the same on every rank), when it goes through
/// the lanes.
fn exchange_area<'s>(g: &mut Group<'s>, entry: usize, total: usize) -> Option<MpiResult<RefMut<'s, Area>>> {
    let max = exchange_max();
    if entry == 0 || entry > LANE_ENTRY_MAX || max.is_some_and(|m| total > m) || g.size() < 2 || !enabled() {
        return None;
    }
    let area = area_or_decline!(one_node_area(g));
    // The area's finding, the same on every rank.
    let oversubscribed = area.oversubscribed();
    if entry > if oversubscribed { exchange_entry_max() } else { LANE_CAP }
        || max.is_none() && !oversubscribed && total > LANE_CAP
    {
        return None;
    }
    Some(Ok(area))
}

/// Largest entry (one rank's bytes) of an exchange through the lanes when ranks outnumber
/// cores (`OXMPI_COLL_SHM_EXCHANGE_ENTRY`, default and at most `LANE_ENTRY_MAX`): entries of
/// 2-16 KiB took 0.6-0.9x the point-to-point time at np 4 and 8 on 2 cores (all-to-all and
/// reduce-scatter of 512 B-2 KiB blocks, allgather of 4-8 KiB; docs/perf-r7-np8.md).
fn exchange_entry_max() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| {
        config::usize_var(config::COLL_SHM_EXCHANGE_ENTRY).unwrap_or(LANE_ENTRY_MAX).min(LANE_ENTRY_MAX)
    })
}

/// Largest total (all blocks of all ranks) of an allgather, all-to-all or reduce-scatter
/// through the lanes, when `OXMPI_COLL_SHM_EXCHANGE_MAX` sets it. By default `LANE_CAP` while
/// the node has a core per rank (at 2 ranks 0.55-0.9x the point-to-point time,
/// docs/perf-r6-collsmall.md), and any total whose entries fit `exchange_entry_max` when
/// ranks outnumber cores: there every point-to-point round waits for descheduled peers, while a
/// rank that finds the others' entries published finishes in one turn (np 4 and 8 on 2
/// cores, 1 B-256 B: 0.4-0.6x the point-to-point time, docs/perf-r7-np8.md). (Round 6 found
/// them 0.3-20x from run to run when oversubscribed, before waiting ranks yielded to each
/// other, docs/perf-r6-wait.md.)
fn exchange_max() -> Option<usize> {
    static MAX: OnceLock<Option<usize>> = OnceLock::new();
    *MAX.get_or_init(|| config::usize_var(config::COLL_SHM_EXCHANGE_MAX))
}

/// Writes packed `bytes` into block `b` of `out`.
fn put_block(out: &mut Out, i: usize, bytes: &[u8]) {
    let b = &out.blocks[i];
    if b.layout.is_contiguous() {
        out.mem[b.offset..b.offset + bytes.len()].copy_from_slice(bytes);
    } else {
        out.put(i, bytes);
    }
}

/// MPI_Allgather(v) on one node: every rank publishes its block in its lane, then copies
/// every other rank's out (blocks sizes are known to every rank, so all agree on the entry:
/// the largest block).
pub fn allgather(g: &mut Group, send: &Option<In>, recv: &mut Out) -> Option<MpiResult<()>> {
    if let Some(r) = allgather_copy(g, send, recv) {
        return Some(r);
    }
    let n = g.size();
    let entry = recv.blocks.iter().map(Block::bytes).max().unwrap_or(0);
    let mut area = area_or_decline!(exchange_area(g, entry, entry * n));
    let (e, me) = (&mut *g.engine, g.rank);
    let mine: Cow<[u8]> = match send {
        Some(s) => {
            // SAFETY: distinct user buffers (an overlapping input was copied).
            unsafe { super::copy_block(s.mem.as_ptr(), &s.blocks[0], recv.mem.as_mut_ptr(), &recv.blocks[me]) };
            packed_in(&s.mem, &s.blocks[0])
        }
        // In place: a copy, as the other blocks are written meanwhile.
        None => Cow::Owned(recv.pack(me)),
    };
    // Allgatherv: blocks of different sizes (the same counts on every rank).
    let sizes: Option<Vec<usize>> =
        recv.blocks.iter().any(|b| b.bytes() != entry).then(|| recv.blocks.iter().map(Block::bytes).collect());
    let range = |j: usize| 0..sizes.as_ref().map_or(entry, |v| v[j]);
    Some(area.exchange(e, entry, &mine, range, |j, bytes| put_block(recv, j, bytes)))
}

/// MPI_Alltoall (the same block size everywhere) on one node: every rank publishes the
/// blocks for the others in one lane entry, then copies its own piece out of every other
/// rank's entry.
pub fn alltoall(g: &mut Group, send: &Option<In>, recv: &mut Out) -> Option<MpiResult<()>> {
    if let Some(r) = alltoall_copy(g, send, recv) {
        return Some(r);
    }
    let n = g.size();
    let block = recv.blocks[0].bytes();
    let mut area = area_or_decline!(exchange_area(g, block * (n - 1), block * n * n));
    let (e, me) = (&mut *g.engine, g.rank);
    let mut pieces = vec![0u8; block * (n - 1)];
    for (k, j) in (0..n).filter(|&j| j != me).enumerate() {
        let piece = &mut pieces[k * block..(k + 1) * block];
        match send {
            Some(s) => piece.copy_from_slice(&packed_in(&s.mem, &s.blocks[j])),
            None => piece.copy_from_slice(&packed_in(recv.mem, &recv.blocks[j])),
        }
    }
    if let Some(s) = send {
        // SAFETY: distinct user buffers (an overlapping input was copied).
        unsafe { super::copy_block(s.mem.as_ptr(), &s.blocks[me], recv.mem.as_mut_ptr(), &recv.blocks[me]) };
    }
    // This rank's piece in rank j's entry (which leaves j's own block out).
    let at = |j: usize| (if me < j { me } else { me - 1 }) * block;
    Some(area.exchange(e, block * (n - 1), &pieces, |j| at(j)..at(j) + block, |j, bytes| put_block(recv, j, bytes)))
}

/// Whether an allgather or all-to-all of `block`-byte blocks is a single-copy candidate
/// (`copy_area`'s size test): the byte paths below leave those to the general ones, so that
/// every rank chooses alike whichever path its buffers take.
fn exchange_copy_candidate(block: usize) -> bool {
    let min = exchange_copy_min();
    min != 0 && block >= min
}

/// As `allgather`, for contiguous buffers: blocks of `block` bytes, `send` None for
/// MPI_IN_PLACE. The same lane entries as `allgather`.
#[inline]
pub fn allgather_bytes(g: &mut Group, send: Option<&[u8]>, recv: &mut [u8], block: usize) -> Option<MpiResult<()>> {
    if exchange_copy_candidate(block) {
        return None;
    }
    let n = g.size();
    let mut area = area_or_decline!(exchange_area(g, block, block * n));
    let (e, me) = (&mut *g.engine, g.rank);
    let own = me * block..(me + 1) * block;
    let mine: Cow<[u8]> = match send {
        Some(s) => {
            recv[own].copy_from_slice(s);
            Cow::Borrowed(s)
        }
        // In place: a copy, as the other blocks are written meanwhile.
        None => Cow::Owned(recv[own].to_vec()),
    };
    Some(area.exchange(
        e,
        block,
        &mine,
        |_| 0..block,
        |j, bytes| recv[j * block..(j + 1) * block].copy_from_slice(bytes),
    ))
}

/// As `alltoall`, for contiguous buffers: blocks of `block` bytes, `send` None for
/// MPI_IN_PLACE. The same lane entries as `alltoall` (the blocks for the others, in rank
/// order).
#[inline]
pub fn alltoall_bytes(g: &mut Group, send: Option<&[u8]>, recv: &mut [u8], block: usize) -> Option<MpiResult<()>> {
    if exchange_copy_candidate(block) {
        return None;
    }
    let n = g.size();
    let mut area = area_or_decline!(exchange_area(g, block * (n - 1), block * n * n));
    let (e, me) = (&mut *g.engine, g.rank);
    let own = me * block..(me + 1) * block;
    // The blocks for the others: one run of the send buffer when this rank's own block is
    // first or last, else joined; in place a copy, as they are overwritten as the others'
    // arrive.
    let pieces: Cow<[u8]> = match send {
        Some(s) if me == 0 => Cow::Borrowed(&s[block..]),
        Some(s) if me == n - 1 => Cow::Borrowed(&s[..own.start]),
        Some(s) => Cow::Owned([&s[..own.start], &s[own.end..]].concat()),
        None => Cow::Owned([&recv[..own.start], &recv[own.end..]].concat()),
    };
    if let Some(s) = send {
        recv[own.clone()].copy_from_slice(&s[own]);
    }
    // This rank's piece in rank j's entry (which leaves j's own block out).
    let at = |j: usize| (if me < j { me } else { me - 1 }) * block;
    Some(area.exchange(
        e,
        block * (n - 1),
        &pieces,
        |j| at(j)..at(j) + block,
        |j, bytes| recv[j * block..(j + 1) * block].copy_from_slice(bytes),
    ))
}

// ----- exchanges of large blocks by single copy -----

/// MPI_Reduce_scatter(_block) with builtin operations and large segments (the largest at
/// least `exchange_copy_min`) on one node of 3 ranks or more: every rank combines its
/// segment of all inputs, read straight from the others' memory.
fn reduce_scatter_copy(
    g: &mut Group,
    input: &[u8],
    recv: &mut Out,
    counts: &[usize],
    red: &Reduction,
) -> Option<MpiResult<()>> {
    let esize = red.elem_size();
    // Two ranks: the pairwise exchange is as fast (np 2, 256 KiB-1 MiB: 27-209 µs against
    // 31-333 by single copy, docs/perf-r7-big.md).
    if esize == 0 || !red.is_builtin() || g.size() < 3 {
        return None;
    }
    let largest = counts.iter().max().copied().unwrap_or(0) * esize;
    let mut area = area_or_decline!(copy_area(g, largest));
    let me = g.rank;
    let start = counts[..me].iter().sum::<usize>() * esize;
    let seg = start..start + counts[me] * esize;
    let e = &mut *g.engine;
    Some(with_packed_out(recv, false, |o| area.reduce_scatter_copy(e, input, seg, o, red)))
}

/// Smallest block (bytes; the largest of an allgatherv's; a reduce-scatter's largest
/// segment) of an allgather, all-to-all or reduce-scatter on one node that moves by single
/// copy (`OXMPI_COLL_SHM_EXCHANGE_COPY_MIN`; 0: never).
fn exchange_copy_min() -> usize {
    static MIN: OnceLock<usize> = OnceLock::new();
    *MIN.get_or_init(|| config::usize_var(config::COLL_SHM_EXCHANGE_COPY_MIN).unwrap_or(EXCHANGE_COPY_MIN))
}

/// Default of `exchange_copy_min`. With 4 and 8 ranks on 2 cores, blocks of 64 KiB-1 MiB
/// took 0.4-0.8x the point-to-point algorithms' time (one publication and one final wait
/// instead of n - 1 rendezvous rounds, each needing both partners scheduled); at 2 ranks
/// about the same (docs/perf-r7-big.md). Tenth session, 4 alternated runs, median µs per
/// call, point to point against single copy: np 8, 16 KiB allgather 117 against 74,
/// alltoall 113 against 66, reduce-scatter 139 against 83; 32 KiB 215-239 against 116-146;
/// np 4, 16 KiB allgather 34 against 21, reduce-scatter 30 against 24, alltoall 17 against
/// 20; np 2 even. At 8 KiB mixed (np 8 better, np 4 worse).
const EXCHANGE_COPY_MIN: usize = 16 * 1024;

/// The area of a one-node communicator for an exchange of blocks of `block` bytes (the same
/// on every rank) by single copy, when the ranks can read each other's memory.
fn copy_area<'s>(g: &mut Group<'s>, block: usize) -> Option<MpiResult<RefMut<'s, Area>>> {
    if !exchange_copy_candidate(block) || g.size() < 2 || 8 * g.size() > SLOT_CAP || !enabled() {
        return None;
    }
    let mut area = area_or_decline!(one_node_area(g));
    area.can_copy(g.engine).then_some(Ok(area))
}

/// Where the others read this rank's bytes: block `b` of `mem` when contiguous, else a packed
/// copy kept in `keep` until the exchange ends.
fn copy_source(mem: &[u8], b: &Block, keep: &mut Vec<Vec<u8>>) -> u64 {
    if b.layout.is_contiguous() {
        return mem[b.offset..].as_ptr() as u64;
    }
    keep.push(pack_block(mem, b));
    keep.last().expect("just pushed").as_ptr() as u64
}

/// Reads every other rank's bytes for this one (`at`: where in them) into block j of `out`
/// (through a packed copy when that block is not contiguous), starting after this rank, then
/// ends the exchange; the first failed read is reported once all ranks are done.
fn copy_in(e: &mut Engine, area: &mut Area, addrs: &[u64], out: &mut Out, at: usize) -> MpiResult<()> {
    let (n, me) = (area.size(), area.rank());
    let st = area.copy_publish(e, addrs);
    let mut result = Ok(());
    for j in (me + 1..n).chain(0..me) {
        let b = &out.blocks[j];
        if b.bytes() == 0 || result.is_err() {
            continue;
        }
        result = if b.layout.is_contiguous() {
            let len = b.bytes();
            area.copy_read(&st, j, at, &mut out.mem[b.offset..b.offset + len])
        } else {
            let mut tmp = vec![0u8; b.bytes()];
            let r = area.copy_read(&st, j, at, &mut tmp);
            out.put(j, &tmp);
            r
        };
    }
    area.copy_finish(e, st);
    result
}

/// MPI_Allgather(v) of large blocks on one node: every rank publishes where its block is,
/// then reads every other rank's straight into its receive buffer.
fn allgather_copy(g: &mut Group, send: &Option<In>, recv: &mut Out) -> Option<MpiResult<()>> {
    let entry = recv.blocks.iter().map(Block::bytes).max().unwrap_or(0);
    let mut area = area_or_decline!(copy_area(g, entry));
    let (me, n) = (g.rank, g.size());
    let e = &mut *g.engine;
    let mut keep = Vec::new();
    let mine = match send {
        Some(s) => {
            // SAFETY: distinct user buffers (an overlapping input was copied).
            unsafe { super::copy_block(s.mem.as_ptr(), &s.blocks[0], recv.mem.as_mut_ptr(), &recv.blocks[me]) };
            copy_source(&s.mem, &s.blocks[0], &mut keep)
        }
        // In place: the own receive block, which this call does not write.
        None => copy_source(recv.mem, &recv.blocks[me], &mut keep),
    };
    Some(copy_in(e, &mut area, &vec![mine; n], recv, 0))
}

/// MPI_Alltoall of large blocks on one node: every rank publishes where its block for each
/// rank is, then reads its own from every other rank straight into its receive buffer.
fn alltoall_copy(g: &mut Group, send: &Option<In>, recv: &mut Out) -> Option<MpiResult<()>> {
    let mut area = area_or_decline!(copy_area(g, recv.blocks[0].bytes()));
    let (me, n) = (g.rank, g.size());
    let e = &mut *g.engine;
    let mut keep = Vec::new();
    let addrs: Vec<u64> = match send {
        Some(s) => {
            // SAFETY: distinct user buffers (an overlapping input was copied).
            unsafe { super::copy_block(s.mem.as_ptr(), &s.blocks[me], recv.mem.as_mut_ptr(), &recv.blocks[me]) };
            (0..n).map(|k| copy_source(&s.mem, &s.blocks[k], &mut keep)).collect()
        }
        // In place: the blocks for the others are overwritten as theirs arrive, so they are
        // read from a packed copy.
        None => {
            let block = recv.blocks[0].bytes();
            let mut all = Vec::with_capacity(block * n);
            for k in 0..n {
                all.extend_from_slice(&packed_in(recv.mem, &recv.blocks[k]));
            }
            let base = all.as_ptr() as u64;
            keep.push(all);
            (0..n).map(|k| base + (k * block) as u64).collect()
        }
    };
    Some(copy_in(e, &mut area, &addrs, recv, 0))
}

/// MPI_Reduce_scatter(_block) of the packed `input` (the same length everywhere; `counts`
/// elements go to each rank) on one node: every rank publishes its input in its lane, then
/// combines its own segment of all of them, in rank order.
pub fn reduce_scatter(
    g: &mut Group,
    input: &[u8],
    recv: &mut Out,
    counts: &[usize],
    red: &Reduction,
) -> Option<MpiResult<()>> {
    if let Some(r) = reduce_scatter_copy(g, input, recv, counts, red) {
        return Some(r);
    }
    let mut area = area_or_decline!(exchange_area(g, input.len(), input.len() * g.size()));
    // User functions see the whole segment (one node: rank order is node order).
    if red.elem_size() == 0 || !(red.is_builtin() || input.len() <= SLOT_CAP) {
        return None;
    }
    let esize = red.elem_size();
    let me = g.rank;
    let start = counts[..me].iter().sum::<usize>() * esize;
    let seg = start..start + counts[me] * esize;
    let e = &mut *g.engine;
    Some(with_packed_out(recv, false, |o| area.reduce_scatter(e, input, seg, o, red)))
}

// ----- contiguous buffers on one node (`coll::*_bytes`): the same paths as above, without
// block lists; None where those would not run on one node, or on several nodes.

/// As `bcast`, on one node.
#[inline]
pub fn bcast_bytes(g: &mut Group, data: &mut [u8], root: usize) -> Option<MpiResult<()>> {
    if data.is_empty() {
        return None;
    }
    let mut area = area_or_decline!(one_node_area(g));
    if area.bcast_by_pair(data.len()) {
        return None;
    }
    Some(area.bcast(g.engine, data, root))
}

/// As `reduce`, on one node; `send` is None for MPI_IN_PLACE (the input is in `out`, copied
/// only when this path takes the call: the root's output overwrites it while others may
/// still read it).
#[inline]
pub fn reduce_bytes(
    g: &mut Group,
    send: Option<&[u8]>,
    out: Option<&mut [u8]>,
    red: &Reduction,
    root: usize,
) -> Option<MpiResult<()>> {
    let len = send.or(out.as_deref()).map_or(0, <[u8]>::len);
    if len == 0 {
        return None;
    }
    let mut area = area_or_decline!(one_node_area(g));
    if !reduction_fits_slots(red, len) {
        return None;
    }
    let input = in_place_input(send, out.as_deref());
    Some(area.reduce(g.engine, &input, out.filter(|_| g.rank == root), red, root))
}

/// The packed input of a reduction: `send`'s block, or for MPI_IN_PLACE (None) a copy of
/// the receive buffer's (the result overwrites it while peers may still read it).
fn packed_input<'s>(send: &'s Option<In>, recv: Option<&Out>) -> Cow<'s, [u8]> {
    match (send, recv) {
        (Some(s), _) => packed_in(&s.mem, &s.blocks[0]),
        (None, Some(o)) => Cow::Owned(o.pack(0)),
        (None, None) => unreachable!("MPI_IN_PLACE without a receive buffer is rejected at the edge"),
    }
}

/// The input of a reduction: `send`, or for MPI_IN_PLACE (None) a copy of `out`.
fn in_place_input<'s>(send: Option<&'s [u8]>, out: Option<&[u8]>) -> Cow<'s, [u8]> {
    match (send, out) {
        (Some(s), _) => Cow::Borrowed(s),
        (None, Some(o)) => Cow::Owned(o.to_vec()),
        (None, None) => unreachable!("MPI_IN_PLACE without a receive buffer is rejected at the edge"),
    }
}

/// As `allreduce`, on one node; `send` as in `reduce_bytes`.
#[inline]
pub fn allreduce_bytes(g: &mut Group, send: Option<&[u8]>, out: &mut [u8], red: &Reduction) -> Option<MpiResult<()>> {
    if out.is_empty() {
        return None;
    }
    // Set up (a collective step at the first call) exactly where `allreduce` does.
    let mut area = area_or_decline!(one_node_area(g));
    // `allreduce` declines a context that does not fit the leaders' ones (`Hier::leader_ctx`)
    // on one node too.
    if !reduction_fits_slots(red, out.len()) || g.ctx >= 1 << LEADER_SET_SHIFT {
        return None;
    }
    let input = in_place_input(send, Some(out));
    Some(area.allreduce(g.engine, &input, out, red))
}

/// As `gather`: `send` is this rank's block (None: MPI_IN_PLACE at the root), `out` the
/// root's `block * n` bytes.
#[inline]
pub fn gather_bytes(
    g: &mut Group,
    send: Option<&[u8]>,
    out: Option<&mut [u8]>,
    block: usize,
    root: usize,
) -> Option<MpiResult<()>> {
    let mut area = area_or_decline!(rooted_area(g, block, RootedKind::Gather));
    let e = &mut *g.engine;
    let Some(out) = out.filter(|_| g.rank == root) else {
        return Some(area.gather(e, block, send.expect("non-root members send"), root, |_, _| {}));
    };
    if let Some(s) = send {
        out[root * block..(root + 1) * block].copy_from_slice(s);
    }
    Some(area.gather(e, block, &[], root, |j, bytes| out[j * block..j * block + bytes.len()].copy_from_slice(bytes)))
}

/// As `scatter`: `send` is the root's `block * n` bytes, `out` this rank's block (None:
/// MPI_IN_PLACE at the root).
#[inline]
pub fn scatter_bytes(
    g: &mut Group,
    send: Option<&[u8]>,
    out: Option<&mut [u8]>,
    block: usize,
    root: usize,
) -> Option<MpiResult<()>> {
    let mut area = area_or_decline!(rooted_area(g, block, RootedKind::Scatter));
    let (e, n) = (&mut *g.engine, g.members.len());
    if g.rank != root {
        return Some(area.scatter(e, &[], out.expect("non-root members receive"), block, root));
    }
    let s = send.expect("the root has a send buffer");
    // The other ranks' blocks, in rank order: one run unless the root is in the middle.
    let pieces: Cow<[u8]> = match root {
        0 => Cow::Borrowed(&s[block..]),
        r if r == n - 1 => Cow::Borrowed(&s[..r * block]),
        r => Cow::Owned([&s[..r * block], &s[(r + 1) * block..]].concat()),
    };
    if let Some(out) = out {
        out.copy_from_slice(&s[root * block..(root + 1) * block]);
    }
    Some(area.scatter(e, &pieces, &mut [], block, root))
}

/// MPI_Allreduce: on one node through shared memory alone; across nodes, reduce within
/// each node to its first rank, allreduce among those, broadcast within each node.
pub fn allreduce(g: &mut Group, send: &Option<In>, recv: &mut Out, red: &Reduction) -> Option<MpiResult<()>> {
    let len = match send {
        Some(s) => s.blocks[0].bytes(),
        None => recv.blocks[0].bytes(),
    };
    if len == 0 {
        return None;
    }
    let mut h = hier_or_none!(g);
    if !reduction_fits(&h, red, len) {
        return None;
    }
    let ctx = h.leader_ctx(g.ctx, None)?;
    // Packed only now, as in `reduce`.
    let input = packed_input(send, Some(&*recv));
    let (my_node, many, me) = (h.my_node, h.nodes.len() > 1, g.rank);
    let e = &mut *g.engine;
    if !many {
        let area = h.area.as_mut().expect("one node of several ranks has an area");
        return Some(with_packed_out(recv, false, |o| area.allreduce(e, &input, o, red)));
    }
    let leaders = h.leaders(None);
    let is_leader = me == leaders[my_node];
    let mut partial = if is_leader { vec![0u8; input.len()] } else { Vec::new() };
    let local = match &mut h.area {
        Some(a) => a.reduce(e, &input, is_leader.then_some(&mut partial[..]), red, 0),
        None => {
            partial.copy_from_slice(&input);
            Ok(())
        }
    };
    drop(input);
    if let Err(err) = local {
        return Some(Err(err));
    }
    let leader_worlds: Vec<usize> = leaders.iter().map(|&r| g.members[r]).collect();
    Some(with_packed_out(recv, false, |o| {
        if is_leader {
            let all =
                as_leader(e, ctx, &leader_worlds, my_node, |lg| allreduce_packed(lg, partial, red, tag::ALLREDUCE))?;
            o.copy_from_slice(&all);
        }
        match &mut h.area {
            Some(a) => a.bcast(e, o, 0),
            None => Ok(()),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_sets_get_distinct_contexts() {
        // Nodes {0, 2, 4} and {1, 3}: ranks dealt round robin.
        let h = Hier {
            nodes: vec![vec![0, 2, 4], vec![1, 3]],
            my_node: 0,
            contiguous: false,
            area: None,
            lane_blocks: LaneBlocks::default(),
        };
        assert_eq!(h.leaders(None), vec![0, 1]);
        assert_eq!(h.leaders(Some(3)), vec![0, 3]);
        assert_eq!(h.leaders(Some(4)), vec![4, 1]);
        let ctx = 17;
        let firsts = h.leader_ctx(ctx, None).unwrap();
        // A root that leads its node anyway uses the set of first ranks.
        assert_eq!(h.leader_ctx(ctx, Some(1)), Some(firsts));
        let others: Vec<u32> = [2, 3, 4].iter().map(|&r| h.leader_ctx(ctx, Some(r)).unwrap()).collect();
        assert!(others.iter().all(|&c| c != firsts && c & LEADER_CTX != 0 && c & 0x1fff == ctx));
        assert!(others[0] != others[1] && others[1] != others[2] && others[0] != others[2]);
        assert_eq!(h.leader_ctx(ctx, Some(MAX_LEADER_SET)), None);
    }
}

//! Communicators: the table behind MPI_Comm handles, context ids, and the collective steps
//! communicator management needs.
//!
//! Context ids: every process keeps a mask of the context pairs it has free; a new
//! communicator takes a pair free on all of its members (the AND of their masks, found by an
//! `agree::Agreement`, which may run from the progress engine for MPI_Comm_idup and reserves
//! what it offers while in flight). One process never holds two communicators with the same
//! pair, so the communicators of one MPI_Comm_split may all take the same pair: their member
//! sets are disjoint and a message only ever reaches members of the communicator it was sent
//! on (MPICH does the same).
//!
//! Library traffic for these steps runs on the parent's internal context (`coll_ctx`): an
//! agreement over a whole communicator uses the tag of the next nonblocking collective on it
//! (so it may be in flight with others), MPI_Comm_create_group negative tags derived from the
//! user's tag, the intercommunicator exchanges small positive tags; communicators made from
//! groups alone use a context of their own (`GROUP_CTX`) and a tag derived from the string
//! tag.

use crate::abi::consts::*;
use crate::abi::types::MPI_Comm;
use crate::attr::Attrs;
use crate::error::{MpiResult, err};
use crate::info::Info;
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::SendMode;
use crate::p2p::{Engine, Envelope};

mod agree;
mod inter;
pub mod spawn;

use crate::p2p::request::Task;
use agree::{Agreement, ContextPool, LeaderSwap, SharedPool};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Handles of user communicators: kind DIRECT (bits 31..30 = 10), object COMM (1).
const DIRECT_COMM: u32 = 0x8400_0000;
/// Context ids come in pairs: `ctx` for user point-to-point, `ctx + 1` for the library's own
/// traffic on the communicator, so the two never match each other.
const MAX_CONTEXT_PAIRS: usize = 64 * 64;
use crate::p2p::GROUP_CTX;
/// The context of a communicator of MPI_Comm_idup until its agreement is over.
const PENDING_CTX: u32 = u32::MAX - 1;

/// The internal tag of MPI_Comm_create_group with user tag `tag` (>= 0): negative, so it
/// never meets the positive tags of other library traffic, and never MPI_ANY_TAG (-1).
fn create_group_tag(tag: i32) -> i32 {
    -2 - (tag & 0x3fff_ffff)
}

pub struct Comm {
    pub ctx: u32,
    pub rank: usize,
    /// World rank of each member, by rank in this communicator.
    pub members: Vec<usize>,
    pub name: String,
    /// Cached attributes (MPI_Comm_set_attr).
    pub attrs: Attrs,
    /// Hints set with MPI_Comm_set_info / MPI_Comm_dup_with_info.
    pub hints: Info,
    /// Nonblocking/persistent collectives started so far (their tags; see coll::sched).
    pub coll_seq: std::cell::Cell<u32>,
    /// Blocking collectives run as schedules so far (their own tag range; see coll::sched).
    pub blocking_coll_seq: std::cell::Cell<u32>,
    /// The virtual topology (MPI_Cart_create, MPI_Graph_create, MPI_Dist_graph_create*).
    pub topo: Option<crate::topo::Topology>,
    /// Intercommunicators: world rank of each member of the remote group, by remote rank.
    /// Point-to-point `dest`/`source` name remote ranks; the envelope's `src` is the sender's
    /// rank in its own (local) group.
    pub remote: Option<Vec<usize>>,
    /// Node-aware collective state: node structure and shared-memory area (coll::hier).
    pub coll_shm: crate::coll::hier::CommShm,
}

impl Comm {
    /// A communicator of `members` (world ranks) where this process is `rank`.
    pub fn new(ctx: u32, rank: usize, members: Vec<usize>) -> Comm {
        Comm {
            ctx,
            rank,
            members,
            name: String::new(),
            attrs: Attrs::default(),
            hints: Info::default(),
            coll_seq: Default::default(),
            blocking_coll_seq: Default::default(),
            topo: None,
            remote: None,
            coll_shm: Default::default(),
        }
    }

    pub fn is_inter(&self) -> bool {
        self.remote.is_some()
    }

    /// Number of ranks point-to-point `dest`/`source` may name: the remote group's size on
    /// an intercommunicator, else the size.
    pub fn peer_count(&self) -> usize {
        self.remote.as_ref().map_or(self.members.len(), |r| r.len())
    }

    /// World rank of the point-to-point peer `rank` (remote group on an intercommunicator).
    pub fn peer_world_rank(&self, rank: usize) -> usize {
        self.remote.as_ref().unwrap_or(&self.members)[rank]
    }

    /// MPI_ERR_COMM on an intercommunicator, for operations defined on intracommunicators only.
    pub fn check_intra(&self, what: &str) -> MpiResult<()> {
        if self.is_inter() {
            return err(
                MPI_ERR_COMM,
                format!("{what}: an intracommunicator is required, this is an intercommunicator"),
            );
        }
        Ok(())
    }

    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// World rank of member `rank`.
    pub fn world_rank(&self, rank: usize) -> usize {
        self.members[rank]
    }

    pub fn coll_ctx(&self) -> u32 {
        self.ctx + 1
    }
}

pub struct Comms {
    table: Vec<Option<Comm>>,
    /// The context pairs free on this process, shared with agreements in flight.
    pub(crate) pool: SharedPool,
    /// Communicators of MPI_Comm_idup whose context is still being agreed on: the handle and
    /// where the agreement leaves the context.
    pending: Vec<(MPI_Comm, Rc<Cell<Option<u32>>>)>,
    /// Node of each world rank, read from the process manager on first use.
    node_ids: Option<Vec<usize>>,
    /// MPI_Comm_get_parent's intercommunicator (MPI_COMM_NULL unless spawned, or once
    /// disconnected or freed).
    pub parent: MPI_Comm,
}

fn slot_of(handle: MPI_Comm) -> Option<usize> {
    match handle {
        MPI_COMM_WORLD => Some(0),
        MPI_COMM_SELF => Some(1),
        h if (h as u32) & 0xfc00_0000 == DIRECT_COMM => Some(2 + ((h as u32) & 0x03ff_ffff) as usize),
        _ => None,
    }
}

fn handle_of(slot: usize) -> MPI_Comm {
    match slot {
        0 => MPI_COMM_WORLD,
        1 => MPI_COMM_SELF,
        s => (DIRECT_COMM | (s - 2) as u32) as MPI_Comm,
    }
}

/// FNV-1a of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// A tag for a string tag (MPI_Comm_create_from_group, MPI_Intercomm_create_from_groups):
/// FNV-1a of its bytes, positive.
fn string_tag(s: &str) -> i32 {
    let h = fnv1a(s.as_bytes());
    ((h ^ (h >> 32)) & 0x3fff_ffff) as i32
}

/// The tag of the next nonblocking collective on `comm` (takes a number of its sequence).
fn next_coll_tag(engine: &mut Engine, comm: &Comm) -> i32 {
    crate::coll::sched::Target::next(&crate::coll::Group::new(engine, comm)).tag
}

/// The agreement participants of a communicator's group, addressed by rank on its context.
fn by_rank(members: &[usize]) -> Vec<(i32, usize)> {
    members.iter().enumerate().map(|(r, &w)| (r as i32, w)).collect()
}

/// The participants of a group-based creation, addressed by world rank on GROUP_CTX.
fn by_world(members: &[usize]) -> Vec<(i32, usize)> {
    members.iter().map(|&w| (w as i32, w)).collect()
}

/// What finishes a construction once its agreement is over: the pair agreed on and every
/// participant's record.
type Finish = Box<dyn FnOnce(&mut Comms, agree::Agreed, Vec<u8>) -> MpiResult<Option<MPI_Comm>>>;

/// What follows a leader exchange: the construction's next step, given the exchange's outcome.
type AfterExchange = Box<dyn FnOnce(&mut Comms, &mut Engine, Vec<u8>) -> MpiResult<Construction>>;

/// A blocking communicator constructor, started: done already, or waiting for its context-id
/// agreement. Below MPI_THREAD_MULTIPLE `run` drives the agreement to its end at once; at
/// MULTIPLE `construct` polls it with the library released between polls, so threads
/// building communicators from different parents in different orders do not deadlock.
pub enum Construction {
    Done(Option<MPI_Comm>),
    Agreeing(Agreement, Finish),
    /// MPI_Intercomm_create's exchange of the groups, before its agreement.
    Exchanging(inter::GroupSwap, AfterExchange),
}

impl Construction {
    fn agreeing(
        agreement: Agreement,
        finish: impl FnOnce(&mut Comms, agree::Agreed, Vec<u8>) -> MpiResult<Option<MPI_Comm>> + 'static,
    ) -> MpiResult<Construction> {
        Ok(Construction::Agreeing(agreement, Box::new(finish)))
    }

    /// Runs the construction to its end, holding the library.
    pub fn run(self, comms: &mut Comms, engine: &mut Engine) -> MpiResult<Option<MPI_Comm>> {
        match self {
            Construction::Done(made) => Ok(made),
            Construction::Agreeing(agreement, finish) => {
                let (agreed, records) = agreement.run_with_records(engine)?;
                finish(comms, agreed, records)
            }
            Construction::Exchanging(mut exchange, then) => loop {
                if let Some(out) = exchange.advance(engine) {
                    return then(comms, engine, out)?.run(comms, engine);
                }
                let req = exchange.waiting_on();
                engine.wait_until(|e| req.is_none_or(|r| e.is_complete(r)));
            },
        }
    }

    /// Whether a poll may get further (the agreement's receives are complete).
    fn ready(&self, e: &Engine) -> bool {
        match self {
            Construction::Agreeing(agreement, _) => agreement.waiting_on().iter().all(|&r| e.is_complete(r)),
            Construction::Exchanging(exchange, _) => exchange.waiting_on().is_none_or(|r| e.is_complete(r)),
            Construction::Done(_) => true,
        }
    }

    /// Advances the agreement; the new communicator once over.
    fn poll(&mut self, comms: &mut Comms, engine: &mut Engine) -> MpiResult<Option<Option<MPI_Comm>>> {
        let agreement = match self {
            Construction::Done(made) => return Ok(Some(*made)),
            Construction::Agreeing(agreement, _) => agreement,
            Construction::Exchanging(exchange, _) => {
                if let Some(out) = exchange.advance(engine) {
                    let Construction::Exchanging(_, then) = std::mem::replace(self, Construction::Done(None)) else {
                        unreachable!()
                    };
                    *self = then(comms, engine, out)?;
                }
                return Ok(None);
            }
        };
        let Some((agreed, records)) = agreement.advance_with_records(engine)? else {
            // As in `Agreement::run_with_records`: progress at least once per attempt.
            engine.progress();
            return Ok(None);
        };
        let Construction::Agreeing(_, finish) = std::mem::replace(self, Construction::Done(None)) else {
            unreachable!()
        };
        finish(comms, agreed, records).map(Some)
    }
}

/// Runs a blocking communicator constructor that `start` begins (see `Construction`).
pub fn construct(
    start: impl FnOnce(&mut crate::runtime::Runtime) -> MpiResult<Construction>,
) -> MpiResult<Option<MPI_Comm>> {
    crate::runtime::blocking(start, |e, c| c.ready(e), |rt, c| c.poll(&mut rt.comms, &mut rt.engine))
}

/// The agreement of MPI_Comm_idup, run as a request by the progress engine.
struct IdupTask {
    agreement: Agreement,
    ctx: Rc<Cell<Option<u32>>>,
}

impl Task for IdupTask {
    fn advance(&mut self, e: &mut Engine) -> MpiResult<bool> {
        match self.agreement.advance(e) {
            Ok(Some((pair, _))) => {
                self.ctx.set(Some((pair * 2) as u32));
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(error) => {
                // The communicator stays without a context; the request reports the error.
                self.ctx.set(Some(PENDING_CTX));
                Err(error)
            }
        }
    }
}

impl Comms {
    /// The predefined communicators of a job where this process is `rank` of `size`.
    pub fn new(rank: usize, size: usize) -> Comms {
        let pool = Rc::new(RefCell::new(ContextPool::new(MAX_CONTEXT_PAIRS)));
        let mut c = Comms { table: Vec::new(), pool, pending: Vec::new(), node_ids: None, parent: MPI_COMM_NULL };
        let mut world = Comm::new(c.take_ctx(0), rank, (0..size).collect());
        world.name = "MPI_COMM_WORLD".into();
        let mut me = Comm::new(c.take_ctx(1), 0, vec![rank]);
        me.name = "MPI_COMM_SELF".into();
        c.take_ctx(GROUP_CTX as usize / 2);
        c.table.push(Some(world));
        c.table.push(Some(me));
        c
    }

    pub(crate) fn take_ctx(&mut self, pair: usize) -> u32 {
        self.pool.borrow_mut().take(pair)
    }

    /// The communicator of `handle`, if valid (no error value built: for fast paths).
    #[inline]
    pub fn find(&self, handle: MPI_Comm) -> Option<&Comm> {
        self.table.get(slot_of(handle)?)?.as_ref()
    }

    pub fn get(&self, handle: MPI_Comm) -> MpiResult<&Comm> {
        match slot_of(handle).and_then(|s| self.table.get(s)).and_then(|c| c.as_ref()) {
            Some(c) => Ok(c),
            None if handle == MPI_COMM_NULL => err(MPI_ERR_COMM, "invalid communicator (MPI_COMM_NULL)"),
            None => err(MPI_ERR_COMM, format!("invalid communicator (0x{:08x})", handle as u32)),
        }
    }

    pub fn get_mut(&mut self, handle: MPI_Comm) -> MpiResult<&mut Comm> {
        self.get(handle)?;
        Ok(self.table[slot_of(handle).unwrap()].as_mut().unwrap())
    }

    pub fn is_valid(&self, handle: MPI_Comm) -> bool {
        self.get(handle).is_ok()
    }

    /// The context-id agreement over all members of `comm` (both groups of an
    /// intercommunicator), with `extra` passed to the remote group. Takes the next number of
    /// the communicator's collective sequence, so it may run alongside other nonblocking
    /// collectives.
    fn agreement_over(&self, engine: &mut Engine, comm: &Comm, extra: u64) -> Agreement {
        let seq = comm.coll_seq.get();
        let tag = next_coll_tag(engine, comm);
        let ctx = comm.coll_ctx();
        let (swap, leader) = match &comm.remote {
            Some(remote) => (
                Some(LeaderSwap { ctx, tag, my_src: 0, their_src: 0, their_world: remote[0], extra }),
                comm.members[0].min(remote[0]),
            ),
            None => (None, comm.members[0]),
        };
        let key = (ctx, leader as u64, seq as u64);
        Agreement::new(self.pool.clone(), ctx, tag, by_rank(&comm.members), comm.rank, swap, key)
    }

    /// A copy of `p` (members, remote group, topology) on context `ctx`. Not its hints: the
    /// ones known here are all assertions about how the program uses `p`, which MPI-4 does
    /// not carry over to a duplicate (MPI_Comm_dup_with_info gives the copy its own).
    fn copy_of(p: &Comm, ctx: u32) -> Comm {
        let mut comm = Comm::new(ctx, p.rank, p.members.clone());
        comm.remote = p.remote.clone();
        comm.topo = p.topo.clone();
        comm
    }

    /// MPI_Comm_dup: a communicator with the same members and a new context, agreed on by all
    /// members (collective over `parent`). Attributes are not copied here (their copy
    /// callbacks run outside the runtime).
    pub fn dup(&mut self, engine: &mut Engine, parent: MPI_Comm) -> MpiResult<Construction> {
        let agreement = self.agreement_over(engine, self.get(parent)?, 0);
        Construction::agreeing(agreement, move |comms, (pair, _), _| {
            let comm = Self::copy_of(comms.get(parent)?, (pair * 2) as u32);
            Ok(Some(comms.install(comm)))
        })
    }

    /// MPI_Comm_idup: the new communicator's handle at once, and the request of the
    /// agreement on its context, run by the progress engine. The handle may be used once the
    /// request is complete (`settle` gives it its context then).
    pub fn idup(&mut self, engine: &mut Engine, parent: MPI_Comm) -> MpiResult<(MPI_Comm, u32)> {
        let p = self.get(parent)?;
        let agreement = self.agreement_over(engine, p, 0);
        let comm = Self::copy_of(p, PENDING_CTX);
        let h = self.install(comm);
        let ctx = Rc::new(Cell::new(None));
        self.pending.push((h, ctx.clone()));
        let req = engine.start_task(Box::new(IdupTask { agreement, ctx }), parent);
        self.settle();
        Ok((h, req))
    }

    /// Gives the communicators of finished MPI_Comm_idup agreements their context (called
    /// at the end of every MPI call, so before the program can use them).
    #[inline]
    pub fn settle(&mut self) {
        if !self.pending.is_empty() {
            self.settle_pending();
        }
    }

    #[cold]
    fn settle_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for (h, ctx) in pending {
            match ctx.get() {
                Some(c) => {
                    if let Ok(comm) = self.get_mut(h) {
                        comm.ctx = c;
                    } else if c != PENDING_CTX {
                        // Freed before its request completed (erroneous, but harmless here).
                        self.pool.borrow_mut().give_back(c as usize / 2);
                    }
                }
                None => self.pending.push((h, ctx)),
            }
        }
    }

    /// Puts `comm` in the first free user slot; returns its handle.
    pub(crate) fn install(&mut self, comm: Comm) -> MPI_Comm {
        let slot = match self.table.iter().skip(2).position(|c| c.is_none()) {
            Some(i) => i + 2,
            None => {
                self.table.push(None);
                self.table.len() - 1
            }
        };
        self.table[slot] = Some(comm);
        handle_of(slot)
    }

    /// A communicator on context pair `pair` (already taken) where this process is `rank`.
    fn install_new(&mut self, pair: usize, rank: usize, members: Vec<usize>) -> MPI_Comm {
        self.install(Comm::new((pair * 2) as u32, rank, members))
    }

    /// MPI_Comm_split (collective over `parent`): members with the same `color` form one new
    /// communicator, ordered by `key` then by rank in `parent`; MPI_UNDEFINED gives `None`.
    /// On an intercommunicator, each color's members of both groups form an
    /// intercommunicator, or `None` when either group has none (MPI-2.2).
    pub fn split(&mut self, engine: &mut Engine, parent: MPI_Comm, color: i32, key: i32) -> MpiResult<Construction> {
        let p = self.get(parent)?;
        if p.is_inter() {
            return self.split_inter(engine, parent, color, key).map(Construction::Done);
        }
        let (rank, members) = (p.rank, p.members.clone());
        let record = [color.to_ne_bytes(), key.to_ne_bytes()].concat();
        let agreement = self.agreement_over(engine, p, 0).with_record(record);
        Construction::agreeing(agreement, move |comms, (pair, _), records| {
            let table: Vec<(i32, i32)> = records.chunks_exact(8).map(color_key).collect();
            let Some((new_members, new_rank)) = split_members(&table, &members, rank) else {
                comms.pool.borrow_mut().give_back(pair);
                return Ok(None);
            };
            Ok(Some(comms.install_new(pair, new_rank, new_members)))
        })
    }

    /// MPI_Comm_create (collective over `parent`): the members of `group` (world ranks, a
    /// subset of `parent`) form a new communicator; other processes get `None`. Processes may
    /// pass different, disjoint groups (MPI-2.2). On an intercommunicator `group` is a subset
    /// of the local group, the same on all of it, and the result an intercommunicator between
    /// the groups both sides passed (`None` when either is empty).
    pub fn create(&mut self, engine: &mut Engine, parent: MPI_Comm, group: &[usize]) -> MpiResult<Construction> {
        let p = self.get(parent)?;
        let (rank, members) = (p.rank, p.members.clone());
        check_subset(group, &members)?;
        if p.is_inter() {
            let me = members[rank];
            let (color, key) = match group.iter().position(|&w| w == me) {
                Some(i) => (0, i as i32),
                None => (MPI_UNDEFINED, 0),
            };
            return self.split_inter(engine, parent, color, key).map(Construction::Done);
        }
        let agreement = self.agreement_over(engine, p, 0);
        let group = group.to_vec();
        Construction::agreeing(agreement, move |comms, (pair, _), _| {
            let Some(new_rank) = group.iter().position(|&w| w == members[rank]) else {
                comms.pool.borrow_mut().give_back(pair);
                return Ok(None);
            };
            Ok(Some(comms.install_new(pair, new_rank, group)))
        })
    }

    /// MPI_Comm_create_group (collective over the members of `group` only, a subset of
    /// `parent`): the agreement runs among them on `parent`'s internal context, with a tag
    /// derived from `tag` so concurrent creations from different groups do not mix.
    /// A process outside `group` gets `None` without communicating.
    pub fn create_group(&mut self, parent: MPI_Comm, group: &[usize], tag: i32) -> MpiResult<Construction> {
        let p = self.get(parent)?;
        p.check_intra("MPI_Comm_create_group")?;
        let (rank, members, coll_ctx) = (p.rank, p.members.clone(), p.coll_ctx());
        check_subset(group, &members)?;
        let Some(new_rank) = group.iter().position(|&w| w == members[rank]) else {
            return Ok(Construction::Done(None));
        };
        let parts: Vec<(i32, usize)> =
            group.iter().map(|&w| (members.iter().position(|&m| m == w).unwrap() as i32, w)).collect();
        let key = (coll_ctx, group[0] as u64, (1 << 40) | tag as u64);
        let agreement = Agreement::new(self.pool.clone(), coll_ctx, create_group_tag(tag), parts, new_rank, None, key);
        let group = group.to_vec();
        Construction::agreeing(agreement, move |comms, (pair, _), _| Ok(Some(comms.install_new(pair, new_rank, group))))
    }

    /// A communicator of the processes of `group` (world ranks; this process among them),
    /// collective over them only, told apart from other creations in flight by `stringtag`
    /// (MPI_Comm_create_from_group's building block).
    pub fn create_from_group(&mut self, group: &[usize], stringtag: &str) -> MpiResult<Construction> {
        let me = crate::runtime::world_rank().map_or(0, |r| r as usize);
        let Some(rank) = group.iter().position(|&w| w == me) else {
            return err(MPI_ERR_GROUP, "the calling process is not a member of the group");
        };
        let tag = string_tag(stringtag);
        let key = (GROUP_CTX, group[0] as u64, (2 << 40) | tag as u64);
        let agreement = Agreement::new(self.pool.clone(), GROUP_CTX, tag, by_world(group), rank, None, key);
        let group = group.to_vec();
        Construction::agreeing(agreement, move |comms, (pair, _), _| Ok(Some(comms.install_new(pair, rank, group))))
    }

    /// The node of every world rank (simulated ones, OXMPI_FAKE_NODES, split a job's one node).
    pub fn node_ids(&mut self, pmi: &mut crate::pmi::Pmi) -> MpiResult<&[usize]> {
        if self.node_ids.is_none() {
            let ids = pmi
                .node_ids()
                .map_err(|e| crate::error::MpiError::new(MPI_ERR_OTHER, format!("process mapping: {e}")))?;
            self.node_ids = Some(crate::coll::hier::effective_node_ids(&ids));
        }
        Ok(self.node_ids.as_deref().unwrap())
    }

    /// MPI_Comm_free of a user communicator.
    pub fn free(&mut self, handle: MPI_Comm) -> MpiResult<()> {
        let c = self.get(handle)?;
        if handle == MPI_COMM_WORLD || handle == MPI_COMM_SELF {
            return err(MPI_ERR_COMM, "cannot free a predefined communicator");
        }
        for (keyval, _) in c.attrs.iter() {
            crate::attr::release(keyval);
        }
        if c.ctx != PENDING_CTX {
            self.pool.borrow_mut().give_back((c.ctx / 2) as usize);
        }
        self.table[slot_of(handle).unwrap()] = None;
        if handle == self.parent {
            self.parent = MPI_COMM_NULL;
        }
        Ok(())
    }

    /// MPI_Comm_compare.
    pub fn compare(&self, a: MPI_Comm, b: MPI_Comm) -> MpiResult<i32> {
        let (ca, cb) = (self.get(a)?, self.get(b)?);
        if a == b {
            return Ok(MPI_IDENT);
        }
        match (&ca.remote, &cb.remote) {
            (None, None) => Ok(group_compare(&ca.members, &cb.members)),
            (Some(ra), Some(rb)) => {
                // Both groups must compare alike; the weaker answer of the two wins.
                let local = group_compare(&ca.members, &cb.members);
                let remote = group_compare(ra, rb);
                Ok(if local == MPI_UNEQUAL || remote == MPI_UNEQUAL {
                    MPI_UNEQUAL
                } else if local == MPI_SIMILAR || remote == MPI_SIMILAR {
                    MPI_SIMILAR
                } else {
                    MPI_CONGRUENT
                })
            }
            _ => Ok(MPI_UNEQUAL),
        }
    }
}

/// CONGRUENT (same members, same order), SIMILAR (same members) or UNEQUAL.
fn group_compare(a: &[usize], b: &[usize]) -> i32 {
    if a == b {
        return MPI_CONGRUENT;
    }
    let (mut x, mut y) = (a.to_vec(), b.to_vec());
    x.sort_unstable();
    y.sort_unstable();
    if x == y { MPI_SIMILAR } else { MPI_UNEQUAL }
}

pub(crate) fn first_set_bit(mask: &[u64]) -> Option<usize> {
    mask.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
}

pub(crate) fn out_of_contexts() -> crate::error::MpiError {
    crate::error::MpiError::new(MPI_ERR_OTHER, "out of communicator context ids (too many communicators)")
}

/// MPI_ERR_GROUP unless every process of `group` is in `members`.
fn check_subset(group: &[usize], members: &[usize]) -> MpiResult<()> {
    match group.iter().position(|w| !members.contains(w)) {
        Some(r) => err(MPI_ERR_GROUP, format!("rank {r} of the specified group is not a member of this communicator")),
        None => Ok(()),
    }
}

pub(crate) fn mask_bytes(m: &[u64]) -> Vec<u8> {
    m.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

pub(crate) fn mask_from(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// A (color, key) record of MPI_Comm_split.
fn color_key(b: &[u8]) -> (i32, i32) {
    (i32::from_ne_bytes(b[0..4].try_into().unwrap()), i32::from_ne_bytes(b[4..8].try_into().unwrap()))
}

/// The new communicator of parent rank `rank` after a split with `table[r] = (color, key)`:
/// its members (world ranks), ordered by key then parent rank, and its rank there; `None`
/// for MPI_UNDEFINED.
pub fn split_members(table: &[(i32, i32)], members: &[usize], rank: usize) -> Option<(Vec<usize>, usize)> {
    let color = table[rank].0;
    if color == MPI_UNDEFINED {
        return None;
    }
    let mut same: Vec<usize> = (0..table.len()).filter(|&r| table[r].0 == color).collect();
    same.sort_by_key(|&r| (table[r].1, r));
    let new_rank = same.iter().position(|&r| r == rank).unwrap();
    Some((same.into_iter().map(|r| members[r]).collect(), new_rank))
}

/// Blocking send of library-owned bytes to world rank `dst`.
pub fn internal_send(engine: &mut Engine, dst: usize, env: Envelope, data: Vec<u8>) {
    let req = engine.isend(dst, env, SendBuf::owned(data), SendMode::Standard, MPI_COMM_NULL);
    engine.wait_until(|e| e.is_complete(req));
    engine.reqs.remove(req);
}

/// Blocking receive of up to `len` library-owned bytes.
pub fn internal_recv(engine: &mut Engine, ctx: u32, src: i32, tag: i32, len: usize) -> Vec<u8> {
    let req = engine.irecv(Envelope { ctx, src, tag }, RecvBuf::owned(len), MPI_COMM_NULL);
    engine.wait_until(|e| e.is_complete(req));
    match engine.reqs.remove(req).map(|r| r.op) {
        Some(crate::p2p::request::Op::Recv { buf, .. }) => buf.into_owned(),
        _ => unreachable!(),
    }
}

/// Whether `comm` names a live communicator (false before MPI_Init and after MPI_Finalize).
pub fn is_valid(comm: MPI_Comm) -> bool {
    crate::runtime::with(|rt| Ok(rt.comms.is_valid(comm))).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip() {
        for s in [0, 1, 2, 7, 1000] {
            assert_eq!(slot_of(handle_of(s)), Some(s));
        }
        assert_eq!(handle_of(2) as u32, 0x8400_0000);
        assert_eq!(slot_of(MPI_COMM_NULL), None);
    }

    #[test]
    fn predefined_contexts_are_taken() {
        let c = Comms::new(0, 4);
        assert_eq!(c.get(MPI_COMM_WORLD).unwrap().ctx, 0);
        assert_eq!(c.get(MPI_COMM_SELF).unwrap().ctx, 2);
        assert_eq!(first_set_bit(c.pool.borrow().free_mask()), Some(3));
        assert_eq!(c.compare(MPI_COMM_WORLD, MPI_COMM_SELF).unwrap(), MPI_UNEQUAL);
        assert!(c.get(MPI_COMM_NULL).is_err());
    }

    #[test]
    fn split_orders_by_key_then_rank() {
        let members = [10, 11, 12, 13, 14];
        let table = [(1, 5), (0, 0), (1, 2), (MPI_UNDEFINED, 0), (1, 2)];
        assert_eq!(split_members(&table, &members, 0), Some((vec![12, 14, 10], 2)));
        assert_eq!(split_members(&table, &members, 4), Some((vec![12, 14, 10], 1)));
        assert_eq!(split_members(&table, &members, 1), Some((vec![11], 0)));
        assert_eq!(split_members(&table, &members, 3), None);
    }

    #[test]
    fn subsets_and_tags() {
        assert!(check_subset(&[3, 1], &[1, 2, 3]).is_ok());
        assert_eq!(check_subset(&[3, 4], &[1, 2, 3]).unwrap_err().code, MPI_ERR_GROUP);
        assert_eq!(create_group_tag(0), -2);
        assert!(create_group_tag(i32::MAX) < -1);
    }
}

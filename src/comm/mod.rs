//! Communicators: the table behind MPI_Comm handles, context ids, and the few collective
//! steps communicator management needs (agreeing on a context id, the exchange of split).
//!
//! Context ids: every process keeps a mask of the context pairs it has free; a new
//! communicator takes a pair free on all of its members (the AND of their masks). One process
//! never holds two communicators with the same pair, so the communicators of one
//! MPI_Comm_split may all take the same pair: their member sets are disjoint and a message
//! only ever reaches members of the communicator it was sent on (MPICH does the same).
//!
//! Library traffic for these steps runs on the parent's internal context (`coll_ctx`) with
//! tags of its own: small positive tags below, and negative tags for MPI_Comm_create_group,
//! derived from the user's tag (collective algorithms use other tags on the same context).

use crate::abi::consts::*;
use crate::abi::types::MPI_Comm;
use crate::attr::Attrs;
use crate::error::{MpiResult, err};
use crate::info::Info;
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::SendMode;
use crate::p2p::{Engine, Envelope};

pub mod from_group;
mod inter;

/// Handles of user communicators: kind DIRECT (bits 31..30 = 10), object COMM (1).
const DIRECT_COMM: u32 = 0x8400_0000;
/// Context ids come in pairs: `ctx` for user point-to-point, `ctx + 1` for the library's own
/// traffic on the communicator, so the two never match each other.
const MAX_CONTEXT_PAIRS: usize = 64 * 64;
/// Tag of the context-id agreement messages (on the internal context).
const TAG_CTX_AGREE: i32 = 1;
/// Tag of the (color, key, free mask) exchange of MPI_Comm_split.
const TAG_SPLIT: i32 = 2;

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
    /// The virtual topology (MPI_Cart_create, MPI_Graph_create, MPI_Dist_graph_create*).
    pub topo: Option<crate::topo::Topology>,
    /// Intercommunicators: world rank of each member of the remote group, by remote rank.
    /// Point-to-point `dest`/`source` name remote ranks; the envelope's `src` is the sender's
    /// rank in its own (local) group.
    pub remote: Option<Vec<usize>>,
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
            topo: None,
            remote: None,
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

    /// MPI_ERR_UNSUPPORTED_OPERATION on an intercommunicator, for the constructors (split,
    /// create, create_group) not implemented over intercommunicators yet.
    fn check_not_inter_yet(&self) -> MpiResult<()> {
        if self.is_inter() {
            return err(
                MPI_ERR_UNSUPPORTED_OPERATION,
                "creating communicators from an intercommunicator is not implemented yet",
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
    /// Bit i set: context pair i is free on this process.
    pub(crate) free_ctx: Vec<u64>,
    /// Node of each world rank, read from the process manager on first use.
    node_ids: Option<Vec<usize>>,
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

impl Comms {
    /// The predefined communicators of a job where this process is `rank` of `size`.
    pub fn new(rank: usize, size: usize) -> Comms {
        let mut c = Comms { table: Vec::new(), free_ctx: vec![u64::MAX; MAX_CONTEXT_PAIRS / 64], node_ids: None };
        let mut world = Comm::new(c.take_ctx(0), rank, (0..size).collect());
        world.name = "MPI_COMM_WORLD".into();
        let mut me = Comm::new(c.take_ctx(1), 0, vec![rank]);
        me.name = "MPI_COMM_SELF".into();
        c.take_ctx(from_group::RESERVED_PAIR);
        c.table.push(Some(world));
        c.table.push(Some(me));
        c
    }

    pub(crate) fn take_ctx(&mut self, pair: usize) -> u32 {
        self.free_ctx[pair / 64] &= !(1u64 << (pair % 64));
        (pair * 2) as u32
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

    /// MPI_Comm_dup: a communicator with the same members and a new context, agreed on by all
    /// members (collective over `parent`). Attributes are not copied here (their copy
    /// callbacks run outside the runtime); hints are.
    pub fn dup(&mut self, engine: &mut Engine, parent: MPI_Comm) -> MpiResult<MPI_Comm> {
        let p = self.get(parent)?;
        if p.is_inter() {
            return self.dup_inter(engine, parent);
        }
        let (rank, members, coll_ctx, hints) = (p.rank, p.members.clone(), p.coll_ctx(), p.hints.clone());
        let topo = p.topo.clone();
        let everyone: Vec<(i32, usize)> = members.iter().enumerate().map(|(r, &w)| (r as i32, w)).collect();
        let agreed = agree_free_mask(engine, coll_ctx, TAG_CTX_AGREE, rank, &everyone, &self.free_ctx);
        let pair = first_set_bit(&agreed).ok_or_else(out_of_contexts)?;
        let mut comm = Comm::new(self.take_ctx(pair), rank, members);
        comm.hints = hints;
        comm.topo = topo;
        Ok(self.install(comm))
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

    /// A communicator on context pair `pair` (taken here) where this process is `rank`.
    fn install_new(&mut self, pair: usize, rank: usize, members: Vec<usize>) -> MPI_Comm {
        let ctx = self.take_ctx(pair);
        self.install(Comm::new(ctx, rank, members))
    }

    /// MPI_Comm_split (collective over `parent`): members with the same `color` form one new
    /// communicator, ordered by `key` then by rank in `parent`; MPI_UNDEFINED gives `None`.
    pub fn split(
        &mut self,
        engine: &mut Engine,
        parent: MPI_Comm,
        color: i32,
        key: i32,
    ) -> MpiResult<Option<MPI_Comm>> {
        let p = self.get(parent)?;
        p.check_not_inter_yet()?;
        let (rank, members, coll_ctx) = (p.rank, p.members.clone(), p.coll_ctx());
        let (table, agreed) = split_exchange(engine, coll_ctx, rank, &members, (color, key), &self.free_ctx);
        let Some((new_members, new_rank)) = split_members(&table, &members, rank) else {
            return Ok(None);
        };
        let pair = first_set_bit(&agreed).ok_or_else(out_of_contexts)?;
        Ok(Some(self.install_new(pair, new_rank, new_members)))
    }

    /// MPI_Comm_create (collective over `parent`): the members of `group` (world ranks, a
    /// subset of `parent`) form a new communicator; other processes get `None`. Processes may
    /// pass different, disjoint groups (MPI-2.2).
    pub fn create(&mut self, engine: &mut Engine, parent: MPI_Comm, group: &[usize]) -> MpiResult<Option<MPI_Comm>> {
        let p = self.get(parent)?;
        p.check_not_inter_yet()?;
        let (rank, members, coll_ctx) = (p.rank, p.members.clone(), p.coll_ctx());
        check_subset(group, &members)?;
        let everyone: Vec<(i32, usize)> = members.iter().enumerate().map(|(r, &w)| (r as i32, w)).collect();
        let agreed = agree_free_mask(engine, coll_ctx, TAG_CTX_AGREE, rank, &everyone, &self.free_ctx);
        let Some(new_rank) = group.iter().position(|&w| w == members[rank]) else {
            return Ok(None);
        };
        let pair = first_set_bit(&agreed).ok_or_else(out_of_contexts)?;
        Ok(Some(self.install_new(pair, new_rank, group.to_vec())))
    }

    /// MPI_Comm_create_group (collective over the members of `group` only, a subset of
    /// `parent`): the agreement runs among them on `parent`'s internal context, with a tag
    /// derived from `tag` so concurrent creations from different groups do not mix.
    /// A process outside `group` gets `None` without communicating.
    pub fn create_group(
        &mut self,
        engine: &mut Engine,
        parent: MPI_Comm,
        group: &[usize],
        tag: i32,
    ) -> MpiResult<Option<MPI_Comm>> {
        let p = self.get(parent)?;
        p.check_not_inter_yet()?;
        let (rank, members, coll_ctx) = (p.rank, p.members.clone(), p.coll_ctx());
        check_subset(group, &members)?;
        let Some(new_rank) = group.iter().position(|&w| w == members[rank]) else {
            return Ok(None);
        };
        let parts: Vec<(i32, usize)> =
            group.iter().map(|&w| (members.iter().position(|&m| m == w).unwrap() as i32, w)).collect();
        let agreed = agree_free_mask(engine, coll_ctx, create_group_tag(tag), new_rank, &parts, &self.free_ctx);
        let pair = first_set_bit(&agreed).ok_or_else(out_of_contexts)?;
        Ok(Some(self.install_new(pair, new_rank, group.to_vec())))
    }

    /// The node of every world rank (one node for now, but the mapping is asked for).
    pub fn node_ids(&mut self, pmi: &mut crate::pmi::Pmi) -> MpiResult<&[usize]> {
        if self.node_ids.is_none() {
            let ids = pmi
                .node_ids()
                .map_err(|e| crate::error::MpiError::new(MPI_ERR_OTHER, format!("process mapping: {e}")))?;
            self.node_ids = Some(ids);
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
        let pair = (c.ctx / 2) as usize;
        self.free_ctx[pair / 64] |= 1u64 << (pair % 64);
        self.table[slot_of(handle).unwrap()] = None;
        Ok(())
    }

    /// MPI_Comm_compare.
    pub fn compare(&self, a: MPI_Comm, b: MPI_Comm) -> MpiResult<i32> {
        let (ca, cb) = (self.get(a)?, self.get(b)?);
        if a == b {
            return Ok(MPI_IDENT);
        }
        match (&ca.remote, &cb.remote) {
            (None, None) => {}
            (Some(ra), Some(rb)) => {
                // Both groups must compare alike; the weaker answer of the two wins.
                let local = group_compare(&ca.members, &cb.members);
                let remote = group_compare(ra, rb);
                return Ok(if local == MPI_UNEQUAL || remote == MPI_UNEQUAL {
                    MPI_UNEQUAL
                } else if local == MPI_SIMILAR || remote == MPI_SIMILAR {
                    MPI_SIMILAR
                } else {
                    MPI_CONGRUENT
                });
            }
            _ => return Ok(MPI_UNEQUAL),
        }
        Ok(if ca.members == cb.members {
            MPI_CONGRUENT
        } else {
            let (mut x, mut y) = (ca.members.clone(), cb.members.clone());
            x.sort_unstable();
            y.sort_unstable();
            if x == y { MPI_SIMILAR } else { MPI_UNEQUAL }
        })
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

/// Bitwise AND of the free-context masks of the participants `parts` (rank used in the
/// envelope on context `ctx`, world rank), of which this process is `me`: they send theirs to
/// the first participant, which sends the result back.
pub(crate) fn agree_free_mask(
    engine: &mut Engine,
    ctx: u32,
    tag: i32,
    me: usize,
    parts: &[(i32, usize)],
    mine: &[u64],
) -> Vec<u64> {
    let nbytes = mine.len() * 8;
    if parts.len() == 1 {
        return mine.to_vec();
    }
    let my_src = parts[me].0;
    if me == 0 {
        let mut acc = mine.to_vec();
        for &(src, _) in &parts[1..] {
            let theirs = mask_from(&internal_recv(engine, ctx, src, tag, nbytes));
            acc.iter_mut().zip(theirs).for_each(|(a, t)| *a &= t);
        }
        for &(_, w) in &parts[1..] {
            internal_send(engine, w, Envelope { ctx, src: my_src, tag }, mask_bytes(&acc));
        }
        acc
    } else {
        internal_send(engine, parts[0].1, Envelope { ctx, src: my_src, tag }, mask_bytes(mine));
        mask_from(&internal_recv(engine, ctx, parts[0].0, tag, nbytes))
    }
}

/// The exchange of MPI_Comm_split: every member's (color, key), by rank, and the AND of all
/// free masks. Members send theirs to rank 0, which answers with the whole table.
fn split_exchange(
    engine: &mut Engine,
    ctx: u32,
    rank: usize,
    members: &[usize],
    mine: (i32, i32),
    free: &[u64],
) -> (Vec<(i32, i32)>, Vec<u64>) {
    let n = members.len();
    let nbytes = free.len() * 8;
    let pair_bytes = |(c, k): (i32, i32)| [c.to_ne_bytes(), k.to_ne_bytes()].concat();
    let pair_from =
        |b: &[u8]| (i32::from_ne_bytes(b[0..4].try_into().unwrap()), i32::from_ne_bytes(b[4..8].try_into().unwrap()));
    if n == 1 {
        return (vec![mine], free.to_vec());
    }
    if rank == 0 {
        let mut table = vec![mine];
        let mut acc = free.to_vec();
        for src in 1..n {
            let msg = internal_recv(engine, ctx, src as i32, TAG_SPLIT, 8 + nbytes);
            table.push(pair_from(&msg[..8]));
            acc.iter_mut().zip(mask_from(&msg[8..])).for_each(|(a, t)| *a &= t);
        }
        let mut reply: Vec<u8> = table.iter().flat_map(|&p| pair_bytes(p)).collect();
        reply.extend(mask_bytes(&acc));
        for &w in &members[1..] {
            internal_send(engine, w, Envelope { ctx, src: 0, tag: TAG_SPLIT }, reply.clone());
        }
        (table, acc)
    } else {
        let mut msg = pair_bytes(mine);
        msg.extend(mask_bytes(free));
        internal_send(engine, members[0], Envelope { ctx, src: rank as i32, tag: TAG_SPLIT }, msg);
        let reply = internal_recv(engine, ctx, 0, TAG_SPLIT, n * 8 + nbytes);
        let table = reply[..n * 8].chunks_exact(8).map(pair_from).collect();
        (table, mask_from(&reply[n * 8..]))
    }
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
        assert_eq!(first_set_bit(&c.free_ctx), Some(from_group::RESERVED_PAIR + 1));
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

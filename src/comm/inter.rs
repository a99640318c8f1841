//! Intercommunicators: MPI_Intercomm_create, MPI_Intercomm_create_from_groups,
//! MPI_Intercomm_merge, and MPI_Comm_split / MPI_Comm_create over an intercommunicator.
//!
//! Both groups of an intercommunicator use one context pair, free on every member of both:
//! the context-id agreement (`agree`) ANDs each group's masks at its leader and the leaders
//! swap their ANDs (over the peer communicator when creating, over the intercommunicator's
//! internal context afterwards).
//!
//! The other exchanges here follow the same shape: each group gathers fixed-size records at
//! its leader, the leaders swap what they gathered, and each leader sends the outcome to its
//! group. On an intercommunicator's internal context the two groups' ranks overlap (both have
//! a rank 0): that is harmless, since a message is matched at the process it was sent to and
//! group-internal steps only ever send within the group.

use super::*;

/// Tags on internal contexts for these exchanges (below the collectives' ranges).
const TAG_INTER_GATHER: i32 = 3;
const TAG_INTER_LEADER: i32 = 4;
const TAG_INTER_BCAST: i32 = 5;

/// The tag of MPI_Intercomm_create's leader exchange on the peer communicator's internal
/// context: negative and below the tags of MPI_Comm_create_group.
fn leader_tag(tag: i32) -> i32 {
    i32::MIN + (tag & 0x3fff_fffe)
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn from_u64s(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// Sends `data` to world rank `dst` while receiving up to `len` bytes from `src` (same
/// context and tag as `env`): the two sides of a swap never wait on each other.
fn swap(engine: &mut Engine, dst: usize, env: Envelope, data: Vec<u8>, src: i32, len: usize) -> Vec<u8> {
    let r = engine.irecv(Envelope { ctx: env.ctx, src, tag: env.tag }, RecvBuf::owned(len), MPI_COMM_NULL);
    let s = engine.isend(dst, env, SendBuf::owned(data), SendMode::Standard, MPI_COMM_NULL);
    engine.wait_until(|e| e.is_complete(r) && e.is_complete(s));
    engine.reqs.remove(s);
    match engine.reqs.remove(r) {
        Some(crate::p2p::request::Request { op: crate::p2p::request::Op::Recv { buf, .. }, status, .. }) => {
            let mut v = buf.into_owned();
            v.truncate(status.bytes);
            v
        }
        _ => unreachable!(),
    }
}

/// The local group's steps around a leader exchange: every member's `record` (all of one
/// size) is gathered at the leader (`members[leader]`, this process being `rank`), by rank;
/// the leader runs `exchange` on them and sends what it returns to the group, which every
/// member returns.
fn around_leader(
    engine: &mut Engine,
    ctx: u32,
    rank: usize,
    leader: usize,
    members: &[usize],
    record: Vec<u8>,
    exchange: impl FnOnce(&mut Engine, Vec<Vec<u8>>) -> Vec<u8>,
) -> Vec<u8> {
    if rank == leader {
        let mut records = vec![Vec::new(); members.len()];
        for (r, slot) in records.iter_mut().enumerate() {
            *slot = if r == rank {
                record.clone()
            } else {
                internal_recv(engine, ctx, r as i32, TAG_INTER_GATHER, record.len())
            };
        }
        let out = exchange(engine, records);
        let env = Envelope { ctx, src: leader as i32, tag: TAG_INTER_BCAST };
        for (r, &w) in members.iter().enumerate().filter(|&(r, _)| r != leader) {
            let _ = r;
            internal_send(engine, w, env, (out.len() as u64).to_ne_bytes().to_vec());
            internal_send(engine, w, env, out.clone());
        }
        out
    } else {
        let env = Envelope { ctx, src: rank as i32, tag: TAG_INTER_GATHER };
        internal_send(engine, members[leader], env, record);
        let len = internal_recv(engine, ctx, leader as i32, TAG_INTER_BCAST, 8);
        let len = u64::from_ne_bytes(len[..8].try_into().unwrap()) as usize;
        internal_recv(engine, ctx, leader as i32, TAG_INTER_BCAST, len)
    }
}

/// The bytes of a completed library receive (frees the request).
pub(super) fn received(engine: &mut Engine, req: u32) -> Vec<u8> {
    match engine.reqs.remove(req) {
        Some(crate::p2p::request::Request { op: crate::p2p::request::Op::Recv { buf, .. }, status, .. }) => {
            let mut v = buf.into_owned();
            v.truncate(status.bytes);
            v
        }
        _ => unreachable!("a library receive vanished"),
    }
}

/// Starts a library send that completes on its own.
pub(super) fn post_send(engine: &mut Engine, dst: usize, env: Envelope, data: Vec<u8>) {
    let req = engine.isend(dst, env, SendBuf::owned(data), SendMode::Standard, MPI_COMM_NULL);
    engine.free_request(req);
}

/// MPI_Intercomm_create's exchange of the groups, advanced step by step (so that at
/// MPI_THREAD_MULTIPLE the library is released while it waits): the members report to their
/// leader, the leaders swap their groups over the peer communicator (a header first), and
/// each leader sends the outcome to its members.
///
/// What the groups are swapped as depends on who is in them. Table indices (world ranks)
/// mean the same on both sides only when both groups and both leaders belong to one job; the
/// first swap's headers say whether each side's do, and when either does not (a group
/// reaching processes of another job, as after MPI_Comm_spawn), the swap ends there and a
/// second one swaps every member's connection record instead (`spawn::own_record`), from
/// which every member connects to every member of the other group as MPI_Comm_accept and
/// MPI_Comm_connect do.
pub struct GroupSwap {
    ctx: u32,
    rank: usize,
    leader: usize,
    members: Vec<usize>,
    /// At the leader: the remote leader's world rank, the envelope of the swap, and the
    /// remote leader's rank in the peer communicator.
    link: Option<(usize, Envelope, i32)>,
    /// What this member contributes: nothing when the groups are swapped as table indices,
    /// its connection record when they are swapped as records.
    record: Option<Vec<u8>>,
    /// At the leader, swapping indices: whether its side's indices mean nothing to the other
    /// job (its group or the remote leader is of another job).
    needs_records: bool,
    state: SwapState,
}

/// The first word of a swap of table indices' outcome: the indices follow, or the groups
/// are to be swapped as records.
const SWAPPED_INDICES: u64 = 0;
const SWAP_RECORDS: u64 = 1;

/// The longest connection record a member sends its leader (its slot and network address,
/// a few dozen bytes).
const RECORD_MAX: usize = 4096;

enum SwapState {
    Start,
    /// At the leader: the members' reports still awaited (rank, receive), and those in.
    Gather(Vec<(usize, u32)>, Vec<Vec<u8>>),
    /// At the leader: the remote header awaited, and this group's part of the swap.
    Header(u32, Vec<u8>),
    /// At the leader: the remote group's part awaited, the remote leader's world rank, and
    /// this group's part.
    Members(u32, u64, Vec<u8>),
    Length(u32),
    Data(u32),
    Done,
}

impl GroupSwap {
    /// A swap of the group `members` (this process `rank`, its leader `leader`) on context
    /// `ctx`; `link` and `needs_records` at the leader only; `record` for a swap of records.
    fn new(
        ctx: u32,
        rank: usize,
        leader: usize,
        members: Vec<usize>,
        link: Option<(usize, Envelope, i32)>,
        record: Option<Vec<u8>>,
        needs_records: bool,
    ) -> GroupSwap {
        GroupSwap { ctx, rank, leader, members, link, record, needs_records, state: SwapState::Start }
    }

    /// The receive the current step waits for.
    pub(super) fn waiting_on(&self) -> Option<u32> {
        match &self.state {
            SwapState::Gather(reqs, _) => reqs.first().map(|&(_, r)| r),
            SwapState::Header(r, _) | SwapState::Members(r, ..) | SwapState::Length(r) | SwapState::Data(r) => Some(*r),
            SwapState::Start | SwapState::Done => None,
        }
    }

    /// Sends the outcome to the other members.
    fn tell_members(&self, e: &mut Engine, out: &[u8]) {
        let env = Envelope { ctx: self.ctx, src: self.leader as i32, tag: TAG_INTER_BCAST };
        for (_, &w) in self.members.iter().enumerate().filter(|&(r, _)| r != self.leader) {
            post_send(e, w, env, (out.len() as u64).to_ne_bytes().to_vec());
            post_send(e, w, env, out.to_vec());
        }
    }

    /// Runs what can run now; the outcome once over: swapping indices, `SWAPPED_INDICES`,
    /// the remote leader's world rank and the remote group's (as `u64`s), or `SWAP_RECORDS`
    /// alone; swapping records, a name both groups share, then the remote group's records
    /// (`spawn::group_records`).
    pub(super) fn advance(&mut self, e: &mut Engine) -> Option<Vec<u8>> {
        loop {
            match std::mem::replace(&mut self.state, SwapState::Done) {
                SwapState::Start if self.rank == self.leader => {
                    let capacity = if self.record.is_some() { RECORD_MAX } else { 0 };
                    let reqs = (0..self.members.len())
                        .filter(|&r| r != self.leader)
                        .map(|r| {
                            let env = Envelope { ctx: self.ctx, src: r as i32, tag: TAG_INTER_GATHER };
                            (r, e.irecv(env, RecvBuf::owned(capacity), MPI_COMM_NULL))
                        })
                        .collect();
                    self.state = SwapState::Gather(reqs, vec![Vec::new(); self.members.len()]);
                }
                SwapState::Start => {
                    let env = Envelope { ctx: self.ctx, src: self.rank as i32, tag: TAG_INTER_GATHER };
                    post_send(e, self.members[self.leader], env, self.record.clone().unwrap_or_default());
                    let env = Envelope { ctx: self.ctx, src: self.leader as i32, tag: TAG_INTER_BCAST };
                    self.state = SwapState::Length(e.irecv(env, RecvBuf::owned(8), MPI_COMM_NULL));
                }
                SwapState::Gather(mut reqs, mut reports) => {
                    reqs.retain(|&(r, req)| {
                        let done = e.is_complete(req);
                        if done {
                            reports[r] = received(e, req);
                        }
                        !done
                    });
                    if !reqs.is_empty() {
                        self.state = SwapState::Gather(reqs, reports);
                        return None;
                    }
                    let part = match &self.record {
                        Some(own) => {
                            reports[self.leader] = own.clone();
                            super::spawn::group_records(self.leader, &reports)
                        }
                        None => u64s(&self.members.iter().map(|&w| w as u64).collect::<Vec<_>>()),
                    };
                    let (dst, env, src) = self.link.expect("the leader has the peer link");
                    let header = [part.len() as u64, self.members[self.leader] as u64, self.needs_records as u64];
                    post_send(e, dst, env, u64s(&header));
                    let r = e.irecv(Envelope { src, ..env }, RecvBuf::owned(24), MPI_COMM_NULL);
                    self.state = SwapState::Header(r, part);
                }
                SwapState::Header(r, part) => {
                    if !e.is_complete(r) {
                        self.state = SwapState::Header(r, part);
                        return None;
                    }
                    let header = from_u64s(&received(e, r));
                    if self.record.is_none() && (self.needs_records || header[2] != 0) {
                        // Both leaders see both flags: neither sends its indices.
                        let out = u64s(&[SWAP_RECORDS]);
                        self.tell_members(e, &out);
                        return Some(out);
                    }
                    let (dst, env, src) = self.link.expect("the leader has the peer link");
                    post_send(e, dst, env, part.clone());
                    let r = e.irecv(Envelope { src, ..env }, RecvBuf::owned(header[0] as usize), MPI_COMM_NULL);
                    self.state = SwapState::Members(r, header[1], part);
                }
                SwapState::Members(r, their_leader, part) => {
                    if !e.is_complete(r) {
                        self.state = SwapState::Members(r, their_leader, part);
                        return None;
                    }
                    let theirs = received(e, r);
                    let out = if self.record.is_some() {
                        // Each side's records hold fresh connection slots: their pair names
                        // this connection on both sides, apart from any other.
                        let (lo, hi) = if part < theirs { (&part, &theirs) } else { (&theirs, &part) };
                        let name = format!("intercomm:{:016x}:{:016x}", fnv1a(lo), fnv1a(hi));
                        let mut out = Vec::new();
                        super::spawn::put_bytes(&mut out, name.as_bytes());
                        out.extend(theirs);
                        out
                    } else {
                        let mut out = u64s(&[SWAPPED_INDICES, their_leader]);
                        out.extend(theirs);
                        out
                    };
                    self.tell_members(e, &out);
                    return Some(out);
                }
                SwapState::Length(r) => {
                    if !e.is_complete(r) {
                        self.state = SwapState::Length(r);
                        return None;
                    }
                    let len = u64::from_ne_bytes(received(e, r)[..8].try_into().unwrap()) as usize;
                    let env = Envelope { ctx: self.ctx, src: self.leader as i32, tag: TAG_INTER_BCAST };
                    self.state = SwapState::Data(e.irecv(env, RecvBuf::owned(len), MPI_COMM_NULL));
                }
                SwapState::Data(r) => {
                    if !e.is_complete(r) {
                        self.state = SwapState::Data(r);
                        return None;
                    }
                    return Some(received(e, r));
                }
                SwapState::Done => unreachable!("a group swap advanced after its end"),
            }
        }
    }
}

/// Members (by rank of `members`) with color `color` in `table`, ordered by key then rank.
fn with_color(table: &[(i32, i32)], members: &[usize], color: i32) -> Vec<usize> {
    let mut same: Vec<usize> = (0..table.len()).filter(|&r| table[r].0 == color).collect();
    same.sort_by_key(|&r| (table[r].1, r));
    same.into_iter().map(|r| members[r]).collect()
}

impl Comms {
    /// MPI_Intercomm_create (collective over `local`, whose `local_leader` talks to rank
    /// `remote_leader` of `peer` with `tag`). `peer` may be an intercommunicator, whose
    /// remote group `remote_leader` then names, as in MPICH.
    pub fn intercomm_create(
        &mut self,
        engine: &Engine,
        local: MPI_Comm,
        local_leader: i32,
        peer: MPI_Comm,
        remote_leader: i32,
        tag: i32,
    ) -> MpiResult<Construction> {
        let l = self.get(local)?;
        l.check_intra("MPI_Intercomm_create's local_comm")?;
        if local_leader < 0 || local_leader as usize >= l.size() {
            return err(
                MPI_ERR_RANK,
                format!("invalid local_leader argument (rank={local_leader}, communicator size {})", l.size()),
            );
        }
        let (rank, members, ctx) = (l.rank, l.members.clone(), l.coll_ctx());
        let leader = local_leader as usize;
        // The leader's view of the peer communicator, checked before any traffic.
        let peer_info = if rank == leader {
            let p = self.get(peer)?;
            if remote_leader < 0 || remote_leader as usize >= p.peer_count() {
                return err(
                    MPI_ERR_RANK,
                    format!(
                        "invalid remote_leader argument (rank={remote_leader}, {} size {})",
                        if p.is_inter() { "remote group" } else { "communicator" },
                        p.peer_count()
                    ),
                );
            }
            if p.peer_world_rank(remote_leader as usize) == members[rank] {
                return err(MPI_ERR_RANK, "local and remote leaders are the same process");
            }
            Some((p.peer_world_rank(remote_leader as usize), p.coll_ctx(), p.rank as i32))
        } else {
            None
        };
        // The leaders swap their groups (leader first), and tell their groups; then the
        // agreement on the context.
        let link = peer_info
            .map(|(dst, pctx, psrc)| (dst, Envelope { ctx: pctx, src: psrc, tag: leader_tag(tag) }, remote_leader));
        let needs_records = peer_info.is_some_and(|(their_world, ..)| {
            engine.is_foreign(their_world) || members.iter().any(|&w| engine.is_foreign(w))
        });
        let exchange = GroupSwap::new(ctx, rank, leader, members.clone(), link, None, needs_records);
        let then = move |comms: &mut Comms, engine: &mut Engine, out: Vec<u8>| {
            let out = from_u64s(&out);
            if out[0] == SWAP_RECORDS {
                // Every member connects to every member of the other group.
                let (slot, record) = super::spawn::own_record(engine)?;
                let records = GroupSwap::new(ctx, rank, leader, members.clone(), link, Some(record), true);
                let join = move |comms: &mut Comms, engine: &mut Engine, out: Vec<u8>| {
                    let mut b = &out[..];
                    let garbled = || super::spawn::garbled("MPI_Intercomm_create's records");
                    let name = super::spawn::take_bytes(&mut b).ok_or_else(garbled)?;
                    let remote = super::spawn::parse_group_records(b)?;
                    let name = String::from_utf8(name).map_err(|_| garbled())?;
                    super::spawn::join_groups(comms, engine, members, rank, leader, slot, remote, &name)
                };
                return Ok(Construction::Exchanging(records, Box::new(join)));
            }
            let (remote_leader_world, remote) = (out[1] as usize, out[2..].iter().map(|&w| w as usize).collect());
            let key = (u32::MAX, members[leader].min(remote_leader_world) as u64, tag as u64);
            let leader_swap = peer_info.map(|(their_world, pctx, psrc)| LeaderSwap {
                ctx: pctx,
                tag: leader_tag(tag),
                my_src: psrc,
                their_src: remote_leader,
                their_world,
                extra: 0,
            });
            // The agreement's gather runs on the local communicator's internal context (a tag
            // of its collective sequence), its leader swap on the peer communicator's.
            let l = comms.get(local)?;
            let atag = next_coll_tag(engine, l);
            let mut parts = by_rank(&members);
            parts.swap(0, leader);
            let me = parts.iter().position(|&(r, _)| r as usize == rank).unwrap();
            let agreement = Agreement::new(comms.pool.clone(), ctx, atag, parts, me, leader_swap, key);
            Construction::agreeing(agreement, move |comms, (pair, _), _| {
                let mut comm = Comm::new((pair * 2) as u32, rank, members);
                comm.remote = Some(remote);
                Ok(Some(comms.install(comm)))
            })
        };
        Ok(Construction::Exchanging(exchange, Box::new(then)))
    }

    /// MPI_Intercomm_create_from_groups: `local_group` (world ranks, this process among
    /// them) and `remote_group` form an intercommunicator; the groups' leaders talk directly,
    /// told apart from other creations by `stringtag`.
    pub fn intercomm_create_from_groups(
        &mut self,
        local_group: &[usize],
        local_leader: usize,
        remote_group: &[usize],
        remote_leader: usize,
        stringtag: &str,
    ) -> MpiResult<Construction> {
        let me = crate::runtime::world_rank().map_or(0, |r| r as usize);
        let Some(rank) = local_group.iter().position(|&w| w == me) else {
            return err(MPI_ERR_GROUP, "the calling process is not a member of local_group");
        };
        if remote_group.iter().any(|w| local_group.contains(w)) {
            return err(MPI_ERR_GROUP, "local_group and remote_group overlap");
        }
        let tag = string_tag(stringtag);
        let (lw, rw) = (local_group[local_leader], remote_group[remote_leader]);
        let mut parts = by_world(local_group);
        parts.swap(0, local_leader);
        let me = parts.iter().position(|&(_, w)| w == me).unwrap();
        let leader_swap = (me == 0).then_some(LeaderSwap {
            ctx: GROUP_CTX,
            tag,
            my_src: lw as i32,
            their_src: rw as i32,
            their_world: rw,
            extra: 0,
        });
        let key = (GROUP_CTX, lw.min(rw) as u64, (3 << 40) | tag as u64);
        let agreement = Agreement::new(self.pool.clone(), GROUP_CTX, tag, parts, me, leader_swap, key);
        let (local_group, remote_group) = (local_group.to_vec(), remote_group.to_vec());
        Construction::agreeing(agreement, move |comms, (pair, _), _| {
            let mut comm = Comm::new((pair * 2) as u32, rank, local_group);
            comm.remote = Some(remote_group);
            Ok(Some(comms.install(comm)))
        })
    }

    /// MPI_Intercomm_merge: the group that passed `high` false comes first; when both pass
    /// the same, the group whose leader has the lower world rank.
    pub fn intercomm_merge(&mut self, engine: &mut Engine, inter: MPI_Comm, high: bool) -> MpiResult<Construction> {
        let c = self.get(inter)?;
        if !c.is_inter() {
            return err(MPI_ERR_COMM, format!("communicator 0x{:08x} is not an intercommunicator", inter as u32));
        }
        let agreement = self.agreement_over(engine, c, high as u64);
        Construction::agreeing(agreement, move |comms, (pair, remote_high), _| {
            let c = comms.get(inter)?;
            let remote = c.remote.clone().unwrap();
            let local_first = if high != (remote_high != 0) { !high } else { c.members[0] < remote[0] };
            let mut members = Vec::with_capacity(c.members.len() + remote.len());
            let rank = if local_first {
                members.extend(&c.members);
                members.extend(&remote);
                c.rank
            } else {
                members.extend(&remote);
                members.extend(&c.members);
                remote.len() + c.rank
            };
            Ok(Some(comms.install_new(pair, rank, members)))
        })
    }

    /// MPI_Comm_split over an intercommunicator: the (color, key) of every member of both
    /// groups is gathered at the leaders, swapped and sent to every member; each color's
    /// members of the two groups form an intercommunicator (`None` when one side has none).
    pub(super) fn split_inter(
        &mut self,
        engine: &mut Engine,
        parent: MPI_Comm,
        color: i32,
        key: i32,
    ) -> MpiResult<Option<MPI_Comm>> {
        let c = self.get(parent)?;
        let (rank, members, remote, ctx) = (c.rank, c.members.clone(), c.remote.clone().unwrap(), c.coll_ctx());
        let record = [color.to_ne_bytes(), key.to_ne_bytes()].concat();
        let (nlocal, nremote) = (members.len(), remote.len());
        let remote_leader = remote[0];
        let out = around_leader(engine, ctx, rank, 0, &members, record, |engine, records| {
            let env = Envelope { ctx, src: 0, tag: TAG_INTER_LEADER };
            let ours = records.concat();
            let theirs = swap(engine, remote_leader, env, ours.clone(), 0, nremote * 8);
            [ours, theirs].concat()
        });
        let pairs: Vec<(i32, i32)> = out.chunks_exact(8).map(color_key).collect();
        let (local_table, remote_table) = pairs.split_at(nlocal);
        let (pair, _) = self.agreement_over(engine, self.get(parent)?, 0).run(engine)?;
        let local = with_color(local_table, &members, color);
        let remote = with_color(remote_table, &remote, color);
        if color == MPI_UNDEFINED || local.is_empty() || remote.is_empty() {
            self.pool.borrow_mut().give_back(pair);
            return Ok(None);
        }
        let new_rank = local.iter().position(|&w| w == members[rank]).unwrap();
        let mut comm = Comm::new((pair * 2) as u32, new_rank, local);
        comm.remote = Some(remote);
        Ok(Some(self.install(comm)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_tags_stay_apart() {
        assert!(leader_tag(i32::MAX) < create_group_tag(i32::MAX));
        assert!(leader_tag(0) < 0);
    }

    #[test]
    fn colors_ordered_by_key() {
        let table = [(1, 3), (MPI_UNDEFINED, 0), (1, 0), (2, 0)];
        assert_eq!(with_color(&table, &[10, 11, 12, 13], 1), vec![12, 10]);
        assert!(with_color(&table, &[10, 11, 12, 13], 5).is_empty());
    }
}

//! Intercommunicators: MPI_Intercomm_create, MPI_Intercomm_merge and the duplication of an
//! intercommunicator.
//!
//! Both groups of an intercommunicator use one context pair, free on every member of both:
//! each group ANDs its members' free masks at its leader, the leaders swap their masks (over
//! the peer communicator when creating, over the intercommunicator's internal context
//! afterwards) and both pick the first pair free in the AND of the two; each leader then
//! sends the outcome to its group.
//!
//! On the intercommunicator's internal context the two groups' ranks overlap (both have a
//! rank 0): that is harmless, since a message is matched at the process it was sent to and
//! group-internal steps only ever send within the group.

use super::*;

/// Tags on internal contexts (below the collectives' ranges, apart from TAG_CTX_AGREE and
/// TAG_SPLIT).
const TAG_INTER_AGREE: i32 = 3;
const TAG_INTER_LEADER: i32 = 4;
const TAG_INTER_BCAST: i32 = 5;

/// No context pair free on both groups (sent in place of a pair).
const NO_PAIR: u64 = u64::MAX;

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

/// Sends `data` to world rank `dst` while receiving `len` bytes from `src` (same context and
/// tag as `env`): the two sides of a swap never wait on each other.
fn swap(engine: &mut Engine, dst: usize, env: Envelope, data: Vec<u8>, src: i32, len: usize) -> Vec<u8> {
    let r = engine.irecv(Envelope { ctx: env.ctx, src, tag: env.tag }, RecvBuf::owned(len), MPI_COMM_NULL);
    let s = engine.isend(dst, env, SendBuf::owned(data), SendMode::Standard, MPI_COMM_NULL);
    engine.wait_until(|e| e.is_complete(r) && e.is_complete(s));
    engine.reqs.remove(s);
    match engine.reqs.remove(r).map(|r| r.op) {
        Some(crate::p2p::request::Op::Recv { buf, .. }) => buf.into_owned(),
        _ => unreachable!(),
    }
}

/// The local group's steps around a leader exchange: the members' masks are ANDed at the
/// leader (`members[leader]`, this process being `rank`), the leader runs `exchange` on the
/// AND and gets back the bytes to send to its group, which every member returns.
fn around_leader(
    engine: &mut Engine,
    ctx: u32,
    rank: usize,
    leader: usize,
    members: &[usize],
    free: &[u64],
    exchange: impl FnOnce(&mut Engine, Vec<u64>) -> Vec<u8>,
) -> Vec<u8> {
    let mut parts: Vec<(i32, usize)> = vec![(leader as i32, members[leader])];
    parts.extend(members.iter().enumerate().filter(|&(r, _)| r != leader).map(|(r, &w)| (r as i32, w)));
    let me = parts.iter().position(|&(r, _)| r as usize == rank).unwrap();
    if me == 0 {
        // Only the leader needs the AND: gather without the reply.
        let mut acc = free.to_vec();
        for &(src, _) in &parts[1..] {
            let theirs = mask_from(&internal_recv(engine, ctx, src, TAG_INTER_AGREE, free.len() * 8));
            acc.iter_mut().zip(theirs).for_each(|(a, t)| *a &= t);
        }
        let out = exchange(engine, acc);
        let env = Envelope { ctx, src: leader as i32, tag: TAG_INTER_BCAST };
        for &(_, w) in &parts[1..] {
            internal_send(engine, w, env, (out.len() as u64).to_ne_bytes().to_vec());
            internal_send(engine, w, env, out.clone());
        }
        out
    } else {
        internal_send(
            engine,
            members[leader],
            Envelope { ctx, src: rank as i32, tag: TAG_INTER_AGREE },
            mask_bytes(free),
        );
        let len = internal_recv(engine, ctx, leader as i32, TAG_INTER_BCAST, 8);
        let len = u64::from_ne_bytes(len[..8].try_into().unwrap()) as usize;
        internal_recv(engine, ctx, leader as i32, TAG_INTER_BCAST, len)
    }
}

/// The first pair free in both masks, or NO_PAIR.
fn common_pair(a: &[u64], b: &[u64]) -> u64 {
    let both: Vec<u64> = a.iter().zip(b).map(|(x, y)| x & y).collect();
    first_set_bit(&both).map_or(NO_PAIR, |p| p as u64)
}

impl Comms {
    /// MPI_Intercomm_create (collective over `local`, whose `local_leader` talks to rank
    /// `remote_leader` of `peer` with `tag`).
    pub fn intercomm_create(
        &mut self,
        engine: &mut Engine,
        local: MPI_Comm,
        local_leader: i32,
        peer: MPI_Comm,
        remote_leader: i32,
        tag: i32,
    ) -> MpiResult<MPI_Comm> {
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
            p.check_intra("MPI_Intercomm_create's peer_comm")?;
            if remote_leader < 0 || remote_leader as usize >= p.size() {
                return err(
                    MPI_ERR_RANK,
                    format!("invalid remote_leader argument (rank={remote_leader}, communicator size {})", p.size()),
                );
            }
            if p.world_rank(remote_leader as usize) == members[rank] {
                return err(MPI_ERR_RANK, "local and remote leaders are the same process");
            }
            Some((p.world_rank(remote_leader as usize), p.coll_ctx(), p.rank as i32))
        } else {
            None
        };
        let out = around_leader(engine, ctx, rank, leader, &members, &self.free_ctx, |engine, mask| {
            let (dst, pctx, psrc) = peer_info.unwrap();
            let env = Envelope { ctx: pctx, src: psrc, tag: leader_tag(tag) };
            let mut mine = vec![members.len() as u64];
            mine.extend(&mask);
            let header = from_u64s(&swap(engine, dst, env, u64s(&mine), remote_leader, mine.len() * 8));
            let nremote = header[0] as usize;
            let ours: Vec<u64> = members.iter().map(|&w| w as u64).collect();
            let theirs = from_u64s(&swap(engine, dst, env, u64s(&ours), remote_leader, nremote * 8));
            let mut out = vec![common_pair(&mask, &header[1..])];
            out.extend(theirs);
            u64s(&out)
        });
        let out = from_u64s(&out);
        if out[0] == NO_PAIR {
            return Err(out_of_contexts());
        }
        let mut comm = Comm::new(self.take_ctx(out[0] as usize), rank, members);
        comm.remote = Some(out[1..].iter().map(|&w| w as usize).collect());
        Ok(self.install(comm))
    }

    /// The agreement of a new context pair over both groups of the intercommunicator
    /// `comm`, with one value `extra` of each group's leader passed to the other group.
    /// Returns the pair and the remote group's `extra`.
    fn inter_agree(&mut self, engine: &mut Engine, comm: MPI_Comm, extra: i64) -> MpiResult<(usize, i64)> {
        let c = self.get(comm)?;
        let (rank, members, ctx, remote_leader) = (c.rank, c.members.clone(), c.coll_ctx(), c.peer_world_rank(0));
        let out = around_leader(engine, ctx, rank, 0, &members, &self.free_ctx, |engine, mask| {
            let env = Envelope { ctx, src: 0, tag: TAG_INTER_LEADER };
            let mut mine = vec![extra as u64];
            mine.extend(&mask);
            let theirs = from_u64s(&swap(engine, remote_leader, env, u64s(&mine), 0, mine.len() * 8));
            u64s(&[common_pair(&mask, &theirs[1..]), theirs[0]])
        });
        let out = from_u64s(&out);
        if out[0] == NO_PAIR {
            return Err(out_of_contexts());
        }
        Ok((out[0] as usize, out[1] as i64))
    }

    /// MPI_Comm_dup of an intercommunicator.
    pub(super) fn dup_inter(&mut self, engine: &mut Engine, parent: MPI_Comm) -> MpiResult<MPI_Comm> {
        let (pair, _) = self.inter_agree(engine, parent, 0)?;
        let p = self.get(parent)?;
        let mut comm = Comm::new(0, p.rank, p.members.clone());
        comm.remote = p.remote.clone();
        comm.hints = p.hints.clone();
        comm.ctx = self.take_ctx(pair);
        Ok(self.install(comm))
    }

    /// MPI_Intercomm_merge: the group that passed `high` false comes first; when both pass
    /// the same, the group whose leader has the lower world rank.
    pub fn intercomm_merge(&mut self, engine: &mut Engine, inter: MPI_Comm, high: bool) -> MpiResult<MPI_Comm> {
        let c = self.get(inter)?;
        if !c.is_inter() {
            return err(MPI_ERR_COMM, format!("communicator 0x{:08x} is not an intercommunicator", inter as u32));
        }
        let (pair, remote_high) = self.inter_agree(engine, inter, high as i64)?;
        let c = self.get(inter)?;
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
        let ctx = self.take_ctx(pair);
        Ok(self.install(Comm::new(ctx, rank, members)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_tags_stay_apart() {
        assert!(leader_tag(i32::MAX) < create_group_tag(i32::MAX));
        assert!(leader_tag(0) < 0);
        assert_eq!(common_pair(&[0b1100, 0], &[0b0110, 0]), 2);
        assert_eq!(common_pair(&[0b1000], &[0b0110]), NO_PAIR);
    }
}

//! Communicators: the table behind MPI_Comm handles, context ids, and the few collective
//! steps communicator management needs (agreeing on a context id).

use crate::abi::consts::*;
use crate::abi::types::MPI_Comm;
use crate::error::{MpiResult, err};
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::SendMode;
use crate::p2p::{Engine, Envelope};

/// Handles of user communicators: kind DIRECT (bits 31..30 = 10), object COMM (1).
const DIRECT_COMM: u32 = 0x8400_0000;
/// Context ids come in pairs: `ctx` for user point-to-point, `ctx + 1` for the library's own
/// traffic on the communicator, so the two never match each other.
const MAX_CONTEXT_PAIRS: usize = 64 * 64;
/// Tag of the context-id agreement messages (on the internal context).
const TAG_CTX_AGREE: i32 = 1;

pub struct Comm {
    pub ctx: u32,
    pub rank: usize,
    /// World rank of each member, by rank in this communicator.
    pub members: Vec<usize>,
    pub name: String,
}

impl Comm {
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
    free_ctx: Vec<u64>,
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
        let mut c = Comms { table: Vec::new(), free_ctx: vec![u64::MAX; MAX_CONTEXT_PAIRS / 64] };
        let world = Comm { ctx: c.take_ctx(0), rank, members: (0..size).collect(), name: "MPI_COMM_WORLD".into() };
        let me = Comm { ctx: c.take_ctx(1), rank: 0, members: vec![rank], name: "MPI_COMM_SELF".into() };
        c.table.push(Some(world));
        c.table.push(Some(me));
        c
    }

    fn take_ctx(&mut self, pair: usize) -> u32 {
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
    /// members (collective over `parent`).
    pub fn dup(&mut self, engine: &mut Engine, parent: MPI_Comm) -> MpiResult<MPI_Comm> {
        let p = self.get(parent)?;
        let (rank, members, coll_ctx) = (p.rank, p.members.clone(), p.coll_ctx());
        let agreed = agree_free_mask(engine, coll_ctx, rank, &members, &self.free_ctx);
        let Some(pair) = first_set_bit(&agreed) else {
            return err(MPI_ERR_OTHER, "out of communicator context ids");
        };
        let ctx = self.take_ctx(pair);
        let comm = Comm { ctx, rank, members, name: String::new() };
        let slot = match self.table.iter().skip(2).position(|c| c.is_none()) {
            Some(i) => i + 2,
            None => {
                self.table.push(None);
                self.table.len() - 1
            }
        };
        self.table[slot] = Some(comm);
        Ok(handle_of(slot))
    }

    /// MPI_Comm_free of a user communicator.
    pub fn free(&mut self, handle: MPI_Comm) -> MpiResult<()> {
        let c = self.get(handle)?;
        if handle == MPI_COMM_WORLD || handle == MPI_COMM_SELF {
            return err(MPI_ERR_COMM, "cannot free a predefined communicator");
        }
        let pair = (c.ctx / 2) as usize;
        self.free_ctx[pair / 64] |= 1u64 << (pair % 64);
        self.table[slot_of(handle).unwrap()] = None;
        Ok(())
    }

    /// MPI_Comm_compare.
    pub fn compare(&self, a: MPI_Comm, b: MPI_Comm) -> MpiResult<i32> {
        let (ca, cb) = (self.get(a)?, self.get(b)?);
        Ok(if a == b {
            MPI_IDENT
        } else if ca.members == cb.members {
            MPI_CONGRUENT
        } else {
            let (mut x, mut y) = (ca.members.clone(), cb.members.clone());
            x.sort_unstable();
            y.sort_unstable();
            if x == y { MPI_SIMILAR } else { MPI_UNEQUAL }
        })
    }
}

fn first_set_bit(mask: &[u64]) -> Option<usize> {
    mask.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
}

/// Bitwise AND of every member's free-context mask: members send theirs to member 0, which
/// sends the result back.
fn agree_free_mask(engine: &mut Engine, ctx: u32, rank: usize, members: &[usize], mine: &[u64]) -> Vec<u64> {
    let to_bytes = |m: &[u64]| m.iter().flat_map(|w| w.to_ne_bytes()).collect::<Vec<u8>>();
    let from_bytes =
        |b: &[u8]| b.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect::<Vec<u64>>();
    let nbytes = mine.len() * 8;
    if members.len() == 1 {
        return mine.to_vec();
    }
    if rank == 0 {
        let mut acc = mine.to_vec();
        for src in 1..members.len() {
            let theirs = from_bytes(&internal_recv(engine, ctx, src as i32, TAG_CTX_AGREE, nbytes));
            acc.iter_mut().zip(theirs).for_each(|(a, t)| *a &= t);
        }
        for &w in &members[1..] {
            internal_send(engine, w, Envelope { ctx, src: 0, tag: TAG_CTX_AGREE }, to_bytes(&acc));
        }
        acc
    } else {
        internal_send(engine, members[0], Envelope { ctx, src: rank as i32, tag: TAG_CTX_AGREE }, to_bytes(mine));
        from_bytes(&internal_recv(engine, ctx, 0, TAG_CTX_AGREE, nbytes))
    }
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
        assert_eq!(first_set_bit(&c.free_ctx), Some(2));
        assert_eq!(c.compare(MPI_COMM_WORLD, MPI_COMM_SELF).unwrap(), MPI_UNEQUAL);
        assert!(c.get(MPI_COMM_NULL).is_err());
    }
}

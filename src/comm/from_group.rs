//! Communicators made from a group without a parent communicator (MPI-4
//! MPI_Comm_create_from_group), and the building block they rest on: agreeing on a context
//! id among a set of processes named by world rank, keyed by a string tag.
//!
//! There is no parent context to talk on, so the agreement runs on a context pair reserved
//! on every process when the runtime starts (`RESERVED_PAIR`), with the envelope's `src`
//! being the sender's world rank. The message tag is a hash of the string tag and of the
//! member list, so creations with different tags or groups may run at the same time; each
//! message also carries the full string tag and a 64-bit digest of the group, which the
//! leader checks, so a hash collision is reported instead of mixing two creations.

use super::{Comm, Comms, first_set_bit, internal_recv, internal_send, mask_bytes, mask_from, out_of_contexts};
use crate::abi::consts::*;
use crate::abi::types::MPI_Comm;
use crate::error::{MpiResult, err};
use crate::p2p::{Engine, Envelope};

/// The context pair every process reserves at startup for the agreements of this module.
pub const RESERVED_PAIR: usize = 2;

/// Longest string tag (MPI_MAX_STRINGTAG_LEN, terminating NUL included).
pub const MAX_STRINGTAG: usize = MPI_MAX_STRINGTAG_LEN as usize;

/// The context (first of the reserved pair) the agreement messages travel on.
fn agreement_ctx() -> u32 {
    (RESERVED_PAIR * 2) as u32
}

/// FNV-1a over `parts`, each followed by a separator so ("ab","c") and ("a","bc") differ.
fn digest(stringtag: &str, members: &[usize]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    stringtag.bytes().for_each(&mut eat);
    eat(0);
    for m in members {
        m.to_le_bytes().into_iter().for_each(&mut eat);
    }
    h
}

/// The message tag of an agreement: non-negative, never MPI_ANY_TAG.
fn wire_tag(digest: u64) -> i32 {
    ((digest ^ (digest >> 32)) & 0x3fff_ffff) as i32
}

/// What each member sends the leader: digest, tag length, tag (padded), free mask.
fn request_bytes(digest: u64, stringtag: &str, mask: &[u64]) -> Vec<u8> {
    let mut b = Vec::with_capacity(12 + MAX_STRINGTAG + mask.len() * 8);
    b.extend(digest.to_le_bytes());
    b.extend((stringtag.len() as u32).to_le_bytes());
    let mut tag = stringtag.as_bytes().to_vec();
    tag.resize(MAX_STRINGTAG, 0);
    b.extend(tag);
    b.extend(mask_bytes(mask));
    b
}

/// Agrees on a context pair free on every process of `members` (world ranks, all calling
/// this with the same `members` and `stringtag`); this process is `members[me]`. `mine` is
/// this process's free mask. The first member collects the masks and answers with their
/// AND. Returns the agreed mask, or MPI_ERR_OTHER on every member when the leader saw
/// another tag or group (a hash collision or an erroneous program).
pub fn agree_by_tag(
    engine: &mut Engine,
    members: &[usize],
    me: usize,
    stringtag: &str,
    mine: &[u64],
) -> MpiResult<Vec<u64>> {
    if members.len() == 1 {
        return Ok(mine.to_vec());
    }
    let d = digest(stringtag, members);
    let (ctx, tag) = (agreement_ctx(), wire_tag(d));
    let my_src = members[me] as i32;
    let request = request_bytes(d, stringtag, mine);
    let mask_len = mine.len() * 8;
    if me == 0 {
        let mut acc = mine.to_vec();
        let mut agreed = true;
        for &w in &members[1..] {
            let theirs = internal_recv(engine, ctx, w as i32, tag, request.len());
            agreed &= theirs.len() == request.len()
                && theirs[..request.len() - mask_len] == request[..request.len() - mask_len];
            if agreed {
                acc.iter_mut().zip(mask_from(&theirs[request.len() - mask_len..])).for_each(|(a, t)| *a &= t);
            }
        }
        let mut reply = vec![agreed as u8];
        reply.extend(mask_bytes(&acc));
        for &w in &members[1..] {
            internal_send(engine, w, Envelope { ctx, src: my_src, tag }, reply.clone());
        }
        if agreed { Ok(acc) } else { Err(mismatch(stringtag)) }
    } else {
        internal_send(engine, members[0], Envelope { ctx, src: my_src, tag }, request);
        let reply = internal_recv(engine, ctx, members[0] as i32, tag, 1 + mask_len);
        if reply.first() == Some(&1) { Ok(mask_from(&reply[1..])) } else { Err(mismatch(stringtag)) }
    }
}

fn mismatch(stringtag: &str) -> crate::error::MpiError {
    crate::error::MpiError::new(
        MPI_ERR_OTHER,
        format!("the group members passed different string tags or groups (stringtag=\"{stringtag}\")"),
    )
}

/// MPI_Comm_create_from_group (collective over the members of `group`, world ranks in the
/// new communicator's rank order): a new intracommunicator, without a parent.
pub fn create_from_group(
    comms: &mut Comms,
    engine: &mut Engine,
    group: &[usize],
    stringtag: &str,
) -> MpiResult<MPI_Comm> {
    if stringtag.len() >= MAX_STRINGTAG {
        return err(
            MPI_ERR_ARG,
            format!("string tag is {} bytes, longer than MPI_MAX_STRINGTAG_LEN-1", stringtag.len()),
        );
    }
    let world = comms.get(MPI_COMM_WORLD)?;
    let my_world = world.members[world.rank];
    let Some(me) = group.iter().position(|&w| w == my_world) else {
        return err(MPI_ERR_GROUP, "the calling process is not a member of the group");
    };
    let agreed = agree_by_tag(engine, group, me, stringtag, &comms.free_ctx)?;
    let pair = first_set_bit(&agreed).ok_or_else(out_of_contexts)?;
    let ctx = comms.take_ctx(pair);
    Ok(comms.install(Comm::new(ctx, me, group.to_vec())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_depend_on_string_and_group() {
        let a = digest("x", &[0, 1]);
        assert_ne!(a, digest("y", &[0, 1]));
        assert_ne!(a, digest("x", &[1, 0]));
        assert_ne!(digest("ab", &[]), digest("a", &[b'b' as usize]));
        for d in [0, u64::MAX, a] {
            assert!(wire_tag(d) >= 0);
        }
        let r = request_bytes(a, "x", &[1, 2]);
        assert_eq!(r.len(), 12 + MAX_STRINGTAG + 16);
    }
}

//! Context-id agreement: the pool of free context pairs of this process and the agreement
//! that finds a pair free on every participant of a new communicator.
//!
//! Several agreements may be in flight at once on one process (MPI_Comm_idup's run from the
//! progress engine while the program goes on, and may be waiting on other processes), so the
//! bits a process contributes to an agreement are reserved by it until its outcome is known:
//! no two agreements ever offer the same free pair, and the pair an agreement picks (free in
//! the AND of everyone's contribution) is still free locally when it is taken.
//!
//! Reserving could starve: two overlapping agreements issued in different orders on different
//! processes could each reserve the mask on a different process and fail forever. As MPICH
//! does, the first attempt of an agreement only takes the small "eager" part of the mask (when
//! no other agreement holds it); an agreement whose attempt failed retries, and from then on
//! only the agreement with the lowest key among those retrying on a process may take the whole
//! mask there ("mask locking"). Keys are the same on every participant and totally ordered,
//! so the retrying agreement with the lowest key eventually holds the mask on all of its
//! participants at once and succeeds. An attempt where every participant offered its whole
//! free mask and the AND is still empty means the context ids are exhausted.
//!
//! One attempt: each participant sends its contribution (mask words, then a word that is all
//! ones when it offered its whole free mask) to the leader (the first participant), which
//! ANDs them; for an intercommunicator the two leaders swap their ANDs; the leader sends the
//! outcome back. Every attempt of one agreement uses the same envelope: messages between two
//! processes are matched in order, and a leader only receives from the other participants
//! (and the other leader), a non-leader only from its leader.

use super::{first_set_bit, mask_bytes, mask_from, out_of_contexts};
use crate::abi::consts::*;
use crate::error::{MpiError, MpiResult};
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::{Op, SendMode};
use crate::p2p::{Engine, Envelope};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

/// Words of the mask (64 pairs each) a first attempt may take: the "eager" part.
const EAGER_WORDS: usize = 2;

/// Orders agreements for mask locking; equal on every participant of one agreement and
/// different for agreements that may be in flight together on one process.
pub type Key = (u32, u64, u64);

/// The free context pairs of this process and what in-flight agreements hold of them.
pub struct ContextPool {
    /// Bit i set: context pair i is free on this process.
    free: Vec<u64>,
    /// Contributions of the attempts in flight: (agreement, the bits it offered).
    held: Vec<(Key, Vec<u64>)>,
    /// Agreements whose first attempt failed, by priority.
    retrying: BTreeSet<Key>,
}

/// The pool shared by the communicator table and the agreements run by the progress engine.
pub type SharedPool = Rc<RefCell<ContextPool>>;

impl ContextPool {
    pub fn new(pairs: usize) -> ContextPool {
        ContextPool { free: vec![u64::MAX; pairs / 64], held: Vec::new(), retrying: BTreeSet::new() }
    }

    /// Free and not offered to an attempt in flight.
    fn available(&self) -> Vec<u64> {
        let mut a = self.free.clone();
        for (_, h) in &self.held {
            a.iter_mut().zip(h).for_each(|(x, y)| *x &= !y);
        }
        a
    }

    /// The contribution of `key` to its next attempt (mask words and the "whole mask" word),
    /// reserved until `release`.
    pub fn contribute(&mut self, key: Key, first: bool) -> Vec<u64> {
        let n = self.free.len();
        let mut out = vec![0u64; n + 1];
        if first {
            let eager_busy = self.held.iter().any(|(k, _)| !self.retrying.contains(k));
            if !eager_busy {
                out[..EAGER_WORDS].copy_from_slice(&self.available()[..EAGER_WORDS]);
            }
        } else {
            self.retrying.insert(key);
            let locked = self.held.iter().any(|(k, _)| self.retrying.contains(k));
            if !locked && self.retrying.first() == Some(&key) {
                let whole = self.held.is_empty();
                out[..n].copy_from_slice(&self.available());
                out[n] = if whole { u64::MAX } else { 0 };
            }
        }
        if out[..n].iter().any(|&w| w != 0) {
            self.held.push((key, out[..n].to_vec()));
        }
        out
    }

    /// Ends the attempt of `key` in flight.
    pub fn release(&mut self, key: Key) {
        self.held.retain(|(k, _)| *k != key);
    }

    /// Ends agreement `key`.
    pub fn finish(&mut self, key: Key) {
        self.release(key);
        self.retrying.remove(&key);
    }

    /// Marks pair `pair` used; returns its first context id.
    pub fn take(&mut self, pair: usize) -> u32 {
        self.free[pair / 64] &= !(1u64 << (pair % 64));
        (pair * 2) as u32
    }

    /// Marks pair `pair` free again.
    pub fn give_back(&mut self, pair: usize) {
        self.free[pair / 64] |= 1u64 << (pair % 64);
    }

    #[cfg(test)]
    pub fn free_mask(&self) -> &[u64] {
        &self.free
    }
}

/// Where the two leaders of an intercommunicator agreement swap their groups' ANDs.
#[derive(Clone, Copy)]
pub struct LeaderSwap {
    pub ctx: u32,
    pub tag: i32,
    /// Source this leader puts in the envelope, and the one the other leader puts in its.
    pub my_src: i32,
    pub their_src: i32,
    pub their_world: usize,
    /// A value passed to the other group (MPI_Intercomm_merge's `high`).
    pub extra: u64,
}

enum State {
    Start,
    Gather { reqs: Vec<u32>, acc: Vec<u64> },
    Swap { req: u32, acc: Vec<u64> },
    Reply { req: u32 },
    Done,
}

/// One context-id agreement, advanced step by step (`advance`) without blocking.
pub struct Agreement {
    ctx: u32,
    tag: i32,
    /// (source in the envelope, world rank) of each participant of this group; the first
    /// is the leader.
    parts: Vec<(i32, usize)>,
    me: usize,
    swap: Option<LeaderSwap>,
    key: Key,
    attempt: u32,
    state: State,
    pool: SharedPool,
    /// Bytes of this participant sent along with each contribution (all of one size), and
    /// once over, every participant's, in the order of `parts`.
    record: Vec<u8>,
    records: Vec<u8>,
}

/// What an agreement ends with: the pair (taken from the pool), and the other group's
/// `extra` for an intercommunicator agreement.
pub type Agreed = (usize, u64);

impl Agreement {
    /// An agreement among `parts` (this process is `parts[me]`) on context `ctx` with `tag`;
    /// with `swap`, this group's leader swaps the outcome with another group's leader.
    pub fn new(
        pool: SharedPool,
        ctx: u32,
        tag: i32,
        parts: Vec<(i32, usize)>,
        me: usize,
        swap: Option<LeaderSwap>,
        key: Key,
    ) -> Agreement {
        Agreement {
            ctx,
            tag,
            parts,
            me,
            swap,
            key,
            attempt: 0,
            state: State::Start,
            pool,
            record: Vec::new(),
            records: Vec::new(),
        }
    }

    /// Sends `record` along (see `run_with_records`).
    pub fn with_record(mut self, record: Vec<u8>) -> Agreement {
        self.record = record;
        self
    }

    fn send(&self, e: &mut Engine, dst: usize, env: Envelope, words: &[u64], tail: &[u8]) {
        let mut bytes = mask_bytes(words);
        bytes.extend_from_slice(tail);
        let req = e.isend(dst, env, SendBuf::owned(bytes), SendMode::Standard, MPI_COMM_NULL);
        e.free_request(req);
    }

    fn recv(&self, e: &mut Engine, ctx: u32, src: i32, tag: i32, bytes: usize) -> u32 {
        e.irecv(Envelope { ctx, src, tag }, RecvBuf::owned(bytes), MPI_COMM_NULL)
    }

    /// `advance`, with every participant's record once over (see `run_with_records`).
    pub fn advance_with_records(&mut self, e: &mut Engine) -> MpiResult<Option<(Agreed, Vec<u8>)>> {
        Ok(self.advance(e)?.map(|done| (done, std::mem::take(&mut self.records))))
    }

    /// Runs what can run now; the outcome once the agreement is over.
    pub fn advance(&mut self, e: &mut Engine) -> MpiResult<Option<Agreed>> {
        self.step(e).inspect_err(|_| self.pool.borrow_mut().finish(self.key))
    }

    fn step(&mut self, e: &mut Engine) -> MpiResult<Option<Agreed>> {
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Start => {
                    let mine = self.pool.borrow_mut().contribute(self.key, self.attempt == 0);
                    let (n, r) = (mine.len(), self.record.len());
                    if self.me == 0 {
                        let reqs = self.parts[1..]
                            .iter()
                            .map(|&(src, _)| self.recv(e, self.ctx, src, self.tag, n * 8 + r))
                            .collect();
                        self.records = self.record.clone();
                        self.state = State::Gather { reqs, acc: mine };
                    } else {
                        let env = Envelope { ctx: self.ctx, src: self.parts[self.me].0, tag: self.tag };
                        self.send(e, self.parts[0].1, env, &mine, &self.record);
                        let len = (n + 1) * 8 + r * self.parts.len();
                        let req = self.recv(e, self.ctx, self.parts[0].0, self.tag, len);
                        self.state = State::Reply { req };
                    }
                }
                State::Gather { reqs, mut acc } => {
                    if !reqs.iter().all(|&r| e.is_complete(r)) {
                        self.state = State::Gather { reqs, acc };
                        return Ok(None);
                    }
                    for r in reqs {
                        let mut theirs = take_recv(e, r)?;
                        self.records.extend(theirs.drain(acc.len() * 8..));
                        acc.iter_mut().zip(mask_from(&theirs)).for_each(|(a, t)| *a &= t);
                    }
                    match self.swap {
                        Some(s) => {
                            let mut out = acc.clone();
                            out.push(s.extra);
                            let env = Envelope { ctx: s.ctx, src: s.my_src, tag: s.tag };
                            self.send(e, s.their_world, env, &out, &[]);
                            let req = self.recv(e, s.ctx, s.their_src, s.tag, out.len() * 8);
                            self.state = State::Swap { req, acc };
                        }
                        None => return self.conclude_leader(e, acc, 0),
                    }
                }
                State::Swap { req, mut acc } => {
                    if !e.is_complete(req) {
                        self.state = State::Swap { req, acc };
                        return Ok(None);
                    }
                    let theirs = mask_from(&take_recv(e, req)?);
                    let extra = theirs[theirs.len() - 1];
                    acc.iter_mut().zip(theirs).for_each(|(a, t)| *a &= t);
                    return self.conclude_leader(e, acc, extra);
                }
                State::Reply { req } => {
                    if !e.is_complete(req) {
                        self.state = State::Reply { req };
                        return Ok(None);
                    }
                    let mut bytes = take_recv(e, req)?;
                    let words = (bytes.len() - self.record.len() * self.parts.len()) / 8;
                    self.records = bytes.split_off(words * 8);
                    let mut out = mask_from(&bytes);
                    let extra = out.pop().unwrap_or(0);
                    return self.conclude(out, extra);
                }
                State::Done => unreachable!("an agreement advanced after its end"),
            }
        }
    }

    /// The leader sends the outcome of the attempt to its group.
    fn conclude_leader(&mut self, e: &mut Engine, acc: Vec<u64>, extra: u64) -> MpiResult<Option<Agreed>> {
        let mut out = acc.clone();
        out.push(extra);
        let env = Envelope { ctx: self.ctx, src: self.parts[0].0, tag: self.tag };
        for &(_, w) in &self.parts[1..] {
            self.send(e, w, env, &out, &self.records);
        }
        self.conclude(acc, extra)
    }

    /// The end of an attempt: the agreed pair, or another attempt (state Start, begun at the
    /// next advance: the caller lets progress run first, which the agreements holding the
    /// mask need; an agreement of one process, which waits for nothing, would otherwise
    /// retry forever here while they never move), or the error of exhausted context ids.
    fn conclude(&mut self, acc: Vec<u64>, extra: u64) -> MpiResult<Option<Agreed>> {
        let n = acc.len() - 1;
        let mut pool = self.pool.borrow_mut();
        let whole = acc[n] != 0;
        match first_set_bit(&acc[..n]) {
            Some(pair) => {
                pool.finish(self.key);
                pool.take(pair);
                Ok(Some((pair, extra)))
            }
            None if whole => {
                pool.finish(self.key);
                Err(out_of_contexts())
            }
            None => {
                pool.release(self.key);
                self.attempt += 1;
                self.state = State::Start;
                Ok(None)
            }
        }
    }

    /// The receives the current step waits for.
    pub fn waiting_on(&self) -> &[u32] {
        match &self.state {
            State::Gather { reqs, .. } => reqs,
            State::Swap { req, .. } | State::Reply { req } => std::slice::from_ref(req),
            State::Start | State::Done => &[],
        }
    }

    /// Runs the agreement to its end (the blocking constructors).
    pub fn run(self, e: &mut Engine) -> MpiResult<Agreed> {
        self.run_with_records(e).map(|(a, _)| a)
    }

    /// Runs the agreement to its end; also returns every participant's record (of the last
    /// attempt), in the order of the participants.
    pub fn run_with_records(mut self, e: &mut Engine) -> MpiResult<(Agreed, Vec<u8>)> {
        loop {
            if let Some(done) = self.advance_with_records(e)? {
                return Ok(done);
            }
            // Progress at least once: an attempt that failed at once (alone, say) must let
            // the agreements holding the mask move on.
            e.progress();
            let reqs = self.waiting_on().to_vec();
            e.wait_until(|e| reqs.iter().all(|&r| e.is_complete(r)));
        }
    }
}

/// The bytes of a completed internal receive (frees the request).
fn take_recv(e: &mut Engine, req: u32) -> MpiResult<Vec<u8>> {
    let r = e.reqs.remove(req).expect("agreement receive vanished");
    let Op::Recv { buf, .. } = r.op else { unreachable!("agreement request is not a receive") };
    if r.status.error != MPI_SUCCESS {
        return Err(MpiError::new(r.status.error, "context-id agreement: a message did not arrive whole"));
    }
    let mut v = buf.into_owned();
    v.truncate(r.status.bytes);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agreement_of_one_that_cannot_get_the_mask_returns_between_attempts() {
        let pool = Rc::new(RefCell::new(ContextPool::new(256)));
        // A lower agreement (an MPI_Comm_idup in flight) retrying with the whole mask.
        let low = (0, 0, 0);
        pool.borrow_mut().contribute(low, true);
        pool.borrow_mut().release(low);
        pool.borrow_mut().contribute(low, false);
        let mut e = Engine::new(0, 1, None);
        let mut alone = Agreement::new(pool.clone(), 2, 1, vec![(0, 0)], 0, None, (5, 0, 0));
        for _ in 0..3 {
            assert!(alone.advance(&mut e).unwrap().is_none(), "the mask is held by the lower agreement");
        }
        pool.borrow_mut().finish(low);
        let agreed = (0..3).find_map(|_| alone.advance(&mut e).unwrap());
        assert!(agreed.is_some(), "once the mask is free the agreement ends");
    }

    #[test]
    fn contributions_never_overlap() {
        let mut p = ContextPool::new(256);
        let a = p.contribute((1, 0, 0), true);
        assert_eq!(a[0], u64::MAX);
        assert_eq!(a[2], 0, "a first attempt takes only the eager words");
        let b = p.contribute((2, 0, 0), true);
        assert!(b.iter().all(|&w| w == 0), "the eager part is held");
        p.release((2, 0, 0));
        let b = p.contribute((2, 0, 0), false);
        assert_eq!(b[0], 0);
        assert_eq!(b[2], u64::MAX);
        assert_eq!(b[4], 0, "not the whole mask: another attempt holds part of it");
        let c = p.contribute((0, 0, 0), false);
        assert!(c.iter().all(|&w| w == 0), "the mask is locked by another retrying agreement");
        p.finish((2, 0, 0));
        p.finish((0, 0, 0));
        p.finish((1, 0, 0));
        let d = p.contribute((0, 0, 0), false);
        assert_eq!(d[4], u64::MAX, "alone: the whole mask");
        p.finish((0, 0, 0));
        assert_eq!(p.take(3), 6);
        assert_eq!(p.free_mask()[0], !8);
        p.give_back(3);
        assert_eq!(p.free_mask()[0], u64::MAX);
    }

    #[test]
    fn lowest_retrying_key_gets_the_mask() {
        let mut p = ContextPool::new(256);
        let hi = p.contribute((5, 0, 0), false);
        assert_ne!(hi[3], 0);
        p.release((5, 0, 0));
        let lo = p.contribute((1, 0, 0), false);
        assert_ne!(lo[3], 0);
        p.release((1, 0, 0));
        let hi = p.contribute((5, 0, 0), false);
        assert!(hi.iter().all(|&w| w == 0), "a lower key is retrying");
    }
}

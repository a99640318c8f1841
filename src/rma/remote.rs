//! One-sided operations by messages, for members an origin can neither map nor copy into:
//! members on other nodes, and members of its own node when single copy is not permitted.
//!
//! The origin sends each operation as a request (a point-to-point message on the window's
//! own communicator, tag `REQUEST_TAG`) to the target's *agent*: a task of the target's
//! progress engine, started with the window, that applies requests in the order each origin
//! sent them, directly on its own memory, under the same lock words and accumulate lock as
//! origins of its node. So passive-target operations need the target only to be in any MPI
//! call (no progress thread yet), and a request applied means every earlier one from that
//! origin is.
//!
//! Every request but MPI_Win_post's and MPI_Win_complete's is answered once applied, so an
//! operation returns at once and synchronisation only waits for the replies: a Put or
//! Accumulate (its data travels packed in the request) is answered by its status (its error,
//! such as a range outside a dynamic window's attached memory, comes back with it); Get,
//! fetching accumulates and Compare_and_swap post a receive for the reply straight into the
//! origin's buffer first (a refused one gets a short reply, and the flush then asks the
//! target for the error it kept); lock and unlock are answered when the lock word is taken
//! or released; MPI_Win_complete and MPI_Win_post are one-way requests counted into the
//! target's (the origin's) control area, as origins on the node count them directly, and a
//! complete is applied after the operations sent before it.

use super::{Access, Local, LockKind, Place, Rma, basic_type};
use crate::abi::consts::*;
use crate::abi::types::{MPI_Comm, MPI_Datatype, MPI_Op};
use crate::error::{MpiError, MpiResult, err};
use crate::op::{Builtin, Op, Reduction};
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::{SendMode, Task};
use crate::p2p::{Engine, Envelope};
use crate::runtime;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Requests go to a member's agent with this tag; each reply takes a tag of its own from
/// `FIRST_REPLY_TAG` up.
const REQUEST_TAG: i32 = 1;
const FIRST_REPLY_TAG: i32 = 2;
const LAST_REPLY_TAG: i32 = 1 << 30;

/// Requests are received into engine-owned memory sized by what arrives; this only bounds it.
const MAX_REQUEST: usize = 1 << 48;

/// Bytes of a request's fixed header: kind, reply tag, two arguments, block count.
const HEADER: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(super) enum Kind {
    /// Blocks, then the packed data to store in them; status reply.
    Put = 1,
    /// Blocks; the reply is their packed data.
    Get,
    /// `a` = operation, `b` = predefined datatype; blocks, then the packed operand; status
    /// reply.
    Accumulate,
    /// As Accumulate; the reply is the data before the operation.
    FetchAccumulate,
    /// One block; the new value then the compare value; the reply is the old value.
    CompareAndSwap,
    /// `a` = 1 exclusive, 0 shared; the status reply comes once the lock is taken.
    Lock,
    /// `a` as for Lock; status reply.
    Unlock,
    /// Status reply once every earlier request is applied.
    Flush,
    /// MPI_Win_post toward this origin (no reply).
    Post,
    /// MPI_Win_complete of this origin (no reply).
    Complete,
}

impl Kind {
    fn from_wire(v: u32) -> Option<Kind> {
        use Kind::*;
        [Put, Get, Accumulate, FetchAccumulate, CompareAndSwap, Lock, Unlock, Flush, Post, Complete]
            .into_iter()
            .find(|k| *k as u32 == v)
    }

    /// Requests answered by the status of their own outcome once applied (Lock, Unlock and
    /// Flush answer with the origin's first error; the others with data, or not at all).
    fn answered_by_outcome(self) -> bool {
        matches!(self, Kind::Put | Kind::Accumulate)
    }
}

/// Where a window's requests travel: the context and handle of its own communicator.
#[derive(Debug, Clone, Copy)]
pub struct Channel {
    pub ctx: u32,
    pub comm: MPI_Comm,
}

/// What an origin awaits from a target for a request: every request but Post and Complete
/// is answered once applied, so waiting for the replies completes the operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    /// A status (MPI_SUCCESS, or the request's error) in engine memory.
    Status,
    /// This many bytes into the origin's buffer; fewer when the target refused the request
    /// (it keeps the error for its next status reply).
    Data(usize),
}

/// An origin's requests awaiting replies, by target.
pub(super) struct OriginState {
    next_tag: i32,
    /// Receives of replies posted, not collected yet.
    pending: Vec<Vec<(u32, Reply)>>,
}

impl OriginState {
    pub(super) fn new(n: usize) -> OriginState {
        OriginState { next_tag: FIRST_REPLY_TAG, pending: vec![Vec::new(); n] }
    }

    fn take_tag(&mut self) -> i32 {
        let tag = self.next_tag;
        self.next_tag = if tag == LAST_REPLY_TAG { FIRST_REPLY_TAG } else { tag + 1 };
        tag
    }
}

/// A request in wire form: the header, `blocks` (offset or address, length), then the data.
fn request(kind: Kind, reply: i32, a: u64, b: u64, blocks: &[(usize, usize)], data_len: usize) -> Vec<u8> {
    let mut m = Vec::with_capacity(HEADER + 16 * blocks.len() + data_len);
    m.extend_from_slice(&(kind as u32).to_le_bytes());
    m.extend_from_slice(&reply.to_le_bytes());
    m.extend_from_slice(&a.to_le_bytes());
    m.extend_from_slice(&b.to_le_bytes());
    m.extend_from_slice(&(blocks.len() as u64).to_le_bytes());
    for &(at, len) in blocks {
        m.extend_from_slice(&(at as u64).to_le_bytes());
        m.extend_from_slice(&(len as u64).to_le_bytes());
    }
    m
}

/// A request as the agent reads it.
struct Parsed<'a> {
    kind: Kind,
    reply: i32,
    a: u64,
    b: u64,
    blocks: Vec<(u64, u64)>,
    data: &'a [u8],
}

fn parse(m: &[u8]) -> Option<Parsed<'_>> {
    let word = |at: usize| Some(u64::from_le_bytes(m.get(at..at + 8)?.try_into().ok()?));
    let kind = Kind::from_wire(u32::from_le_bytes(m.get(0..4)?.try_into().ok()?))?;
    let reply = i32::from_le_bytes(m.get(4..8)?.try_into().ok()?);
    let (a, b, n) = (word(8)?, word(16)?, word(24)? as usize);
    let end = n.checked_mul(16)?.checked_add(HEADER)?;
    let blocks = (0..n).map(|i| Some((word(HEADER + 16 * i)?, word(HEADER + 16 * i + 8)?))).collect::<Option<_>>()?;
    Some(Parsed { kind, reply, a, b, blocks, data: m.get(end..)? })
}

/// A status reply: the error code (MPI_SUCCESS) and its message.
fn status_reply(e: &Option<MpiError>) -> Vec<u8> {
    match e {
        None => MPI_SUCCESS.to_le_bytes().to_vec(),
        Some(e) => {
            let mut m = e.code.to_le_bytes().to_vec();
            m.extend_from_slice(e.msg.as_bytes());
            m
        }
    }
}

fn read_status(m: &[u8], t: usize) -> MpiResult<()> {
    let code = m.get(0..4).map_or(MPI_ERR_INTERN, |c| i32::from_le_bytes(c.try_into().unwrap()));
    if code == MPI_SUCCESS {
        return Ok(());
    }
    let msg = String::from_utf8_lossy(m.get(4..).unwrap_or_default());
    err(code, format!("target rank {t}: {msg}"))
}

fn lock_word(kind: LockKind) -> u64 {
    (kind == LockKind::Exclusive) as u64
}

// ----- the origin's side

impl Rma {
    /// The members this process reaches by messages.
    pub(super) fn message_targets(&self) -> Vec<usize> {
        (0..self.n()).filter(|&t| self.targets[t].access == Access::Message).collect()
    }

    fn origin(&self) -> std::sync::MutexGuard<'_, OriginState> {
        self.origin.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn send(&self, e: &mut Engine, t: usize, m: Vec<u8>) {
        let env = Envelope { ctx: self.channel.ctx, src: self.rank as i32, tag: REQUEST_TAG };
        let req = e.isend(self.worlds[t], env, SendBuf::owned(m), SendMode::Standard, self.channel.comm);
        // Owned bytes: nothing of the program's to wait for; the engine drops it once sent.
        e.free_request(req);
    }

    /// Posts the receive of a reply from `t` into `buf`; returns its tag.
    fn expect_reply(&self, e: &mut Engine, st: &mut OriginState, t: usize, buf: RecvBuf, reply: Reply) -> i32 {
        let tag = st.take_tag();
        let req = e.irecv(Envelope { ctx: self.channel.ctx, src: t as i32, tag }, buf, self.channel.comm);
        st.pending[t].push((req, reply));
        tag
    }

    /// Sends a request answered by a status (`m` has room for its reply tag).
    fn send_acknowledged(&self, e: &mut Engine, t: usize, mut m: Vec<u8>) {
        let mut st = self.origin();
        let tag = self.expect_reply(e, &mut st, t, RecvBuf::owned(MAX_REQUEST), Reply::Status);
        m[4..8].copy_from_slice(&tag.to_le_bytes());
        self.send(e, t, m);
    }

    /// The target blocks of `place` as the request carries them.
    fn target_blocks(place: &Place) -> Vec<(usize, usize)> {
        place.layout.iovecs(place.addr as *const u8, place.count, 0..place.bytes())
    }

    /// MPI_Put to a target reached by messages.
    ///
    /// # Safety
    /// `origin` holds its elements, readable.
    pub(super) unsafe fn put_by_message(&self, t: usize, place: &Place, origin: &Local) -> MpiResult<()> {
        let len = place.bytes();
        if len == 0 {
            return Ok(());
        }
        let mut m = request(Kind::Put, 0, 0, 0, &Self::target_blocks(place), len);
        let at = m.len();
        m.resize(at + len, 0);
        // SAFETY: the caller's contract; the tail of `m` has room for the packed bytes.
        unsafe { origin.layout.pack(origin.addr as *const u8, origin.count, 0..len, &mut m[at..]) };
        runtime::with(|rt| {
            self.send_acknowledged(&mut rt.engine, t, m);
            Ok(())
        })
    }

    /// MPI_Get from a target reached by messages: the reply lands in `origin`.
    ///
    /// # Safety
    /// `origin` holds its elements, writable until the operation completes.
    pub(super) unsafe fn get_by_message(&self, t: usize, place: &Place, origin: &Local) -> MpiResult<()> {
        if place.bytes() == 0 {
            return Ok(());
        }
        let blocks = Self::target_blocks(place);
        runtime::with(|rt| {
            let mut st = self.origin();
            // SAFETY: the caller's contract: writable until completion, which the flush that
            // ends the operation waits for.
            let buf = unsafe { RecvBuf::new(origin.addr as *mut u8, origin.layout.clone(), origin.count) };
            let tag = self.expect_reply(&mut rt.engine, &mut st, t, buf, Reply::Data(place.bytes()));
            self.send(&mut rt.engine, t, request(Kind::Get, tag, 0, 0, &blocks, 0));
            Ok(())
        })
    }

    /// MPI_Accumulate and MPI_Get_accumulate toward a target reached by messages: `input`
    /// is the packed operand (empty for MPI_NO_OP), `basic` the predefined type combined.
    ///
    /// # Safety
    /// `result` holds writable elements until the operation completes.
    pub(super) unsafe fn accumulate_by_message(
        &self,
        t: usize,
        place: &Place,
        input: &[u8],
        result: Option<&Local>,
        op: MPI_Op,
        basic: MPI_Datatype,
    ) -> MpiResult<()> {
        let blocks = Self::target_blocks(place);
        let (a, b) = (op as u32 as u64, basic as u32 as u64);
        let kind = if result.is_some() { Kind::FetchAccumulate } else { Kind::Accumulate };
        let mut m = request(kind, 0, a, b, &blocks, input.len());
        m.extend_from_slice(input);
        runtime::with(|rt| {
            match result {
                Some(r) => {
                    let mut st = self.origin();
                    // SAFETY: the caller's contract.
                    let buf = unsafe { RecvBuf::new(r.addr as *mut u8, r.layout.clone(), r.count) };
                    let tag = self.expect_reply(&mut rt.engine, &mut st, t, buf, Reply::Data(place.bytes()));
                    m[4..8].copy_from_slice(&tag.to_le_bytes());
                    drop(st);
                    self.send(&mut rt.engine, t, m);
                }
                None => self.send_acknowledged(&mut rt.engine, t, m),
            }
            Ok(())
        })
    }

    /// MPI_Compare_and_swap on a target reached by messages.
    ///
    /// # Safety
    /// `result` is writable for `origin.len()` bytes until the operation completes.
    pub(super) unsafe fn compare_and_swap_by_message(
        &self,
        t: usize,
        place: &Place,
        origin: &[u8],
        compare: &[u8],
        result: *mut u8,
    ) -> MpiResult<()> {
        let len = origin.len();
        let mut m = request(Kind::CompareAndSwap, 0, 0, 0, &[(place.addr, len)], 2 * len);
        m.extend_from_slice(origin);
        m.extend_from_slice(compare);
        runtime::with(|rt| {
            let mut st = self.origin();
            // SAFETY: the caller's contract: `len` writable bytes until completion.
            let buf = unsafe { RecvBuf::new(result, crate::datatype::BYTE, len) };
            let tag = self.expect_reply(&mut rt.engine, &mut st, t, buf, Reply::Data(len));
            m[4..8].copy_from_slice(&tag.to_le_bytes());
            self.send(&mut rt.engine, t, m);
            Ok(())
        })
    }

    /// Sends `kind` (with argument `a`) to each of `targets`, each answered by a status, and
    /// waits for those replies and for every reply pending from `targets` and `also_wait`;
    /// the first error any reply reports is returned (a short data reply, from a refused
    /// request, costs one status round trip more to learn its error).
    fn round_trips(&self, kind: Kind, a: u64, targets: &[usize], also_wait: &[usize]) -> MpiResult<()> {
        if targets.is_empty() && also_wait.is_empty() {
            return Ok(());
        }
        // Writes by RDMA land before the request that ends their epoch goes.
        let all: Vec<usize> = targets.iter().chain(also_wait).copied().collect();
        self.finish_rdma(&all)?;
        let waited: Vec<(usize, Vec<u32>)> = runtime::with(|rt| {
            for &t in targets {
                self.send_acknowledged(&mut rt.engine, t, request(kind, 0, a, 0, &[], 0));
            }
            // Left in the lists: a thread flushing the same target meanwhile waits for them
            // too, and whoever finds one complete collects it.
            let st = self.origin();
            let mut all: Vec<usize> = targets.iter().chain(also_wait).copied().collect();
            all.sort_unstable();
            all.dedup();
            Ok(all.into_iter().map(|t| (t, st.pending[t].iter().map(|p| p.0).collect())).collect())
        })?;
        // A reply another thread collected is complete (its id may be reused meanwhile).
        let arrived = |e: &Engine, st: &OriginState, t: usize, r: u32| {
            e.is_complete(r) || !st.pending[t].iter().any(|p| p.0 == r)
        };
        let mut refused: Vec<usize> = Vec::new();
        let first = runtime::blocking(
            |_| Ok(()),
            |e, _| {
                let st = self.origin();
                waited.iter().all(|(t, reqs)| reqs.iter().all(|&r| arrived(e, &st, *t, r)))
            },
            |rt, _| {
                let mut first = Ok(());
                let mut st = self.origin();
                for (t, reqs) in &waited {
                    let mine: std::collections::HashSet<u32> = reqs.iter().copied().collect();
                    let (done, left): (Vec<_>, Vec<_>) =
                        std::mem::take(&mut st.pending[*t]).into_iter().partition(|p| mine.contains(&p.0));
                    st.pending[*t] = left;
                    for (r, reply) in done {
                        match reply {
                            Reply::Status => {
                                let (_, m) = rt.engine.take_owned_recv(r);
                                if first.is_ok() {
                                    first = read_status(&m, *t);
                                }
                            }
                            Reply::Data(len) => {
                                if rt.engine.collect(r).bytes < len && !refused.contains(t) {
                                    refused.push(*t);
                                }
                            }
                        }
                    }
                }
                Ok(Some(first))
            },
        )?;
        if !refused.is_empty() {
            // The targets kept the error for their next status reply.
            let why = self.round_trips(Kind::Flush, 0, &refused, &[]);
            return first.and(why);
        }
        first
    }

    /// Completes the operations toward `targets` (reached by messages): every request is
    /// answered once applied, so this waits for the replies (also for local completion:
    /// completing at the target completes here too).
    pub(super) fn settle(&self, targets: &[usize]) -> MpiResult<()> {
        self.round_trips(Kind::Flush, 0, &[], targets)
    }

    /// Takes the lock of each of `targets` (reached by messages).
    pub(super) fn lock_by_message(&self, targets: &[usize], kind: LockKind) -> MpiResult<()> {
        self.round_trips(Kind::Lock, lock_word(kind), targets, &[])
    }

    /// Completes the operations toward `targets` and releases their locks (`kind`, unless
    /// the lock was not taken: MPI_MODE_NOCHECK).
    pub(super) fn unlock_by_message(&self, targets: &[usize], kind: Option<LockKind>) -> MpiResult<()> {
        match kind {
            Some(kind) => self.round_trips(Kind::Unlock, lock_word(kind), targets, &[]),
            None => self.settle(targets),
        }
    }

    /// Sends a one-way Post or Complete to each of `members`.
    pub(super) fn notify_by_message(&self, members: &[usize], kind: Kind) -> MpiResult<()> {
        if members.is_empty() {
            return Ok(());
        }
        runtime::with(|rt| {
            for &m in members {
                self.send(&mut rt.engine, m, request(kind, 0, 0, 0, &[], 0));
            }
            Ok(())
        })
    }
}

// ----- the target's side

/// A member's agent: applies the requests of the origins that reach it by messages. A task
/// of the progress engine, from window creation until `Engine::end_task` at MPI_Win_free.
pub struct Agent {
    rma: Arc<Rma>,
    /// The posted receive of the next request.
    recv: u32,
    /// Lock requests waiting for the lock word: (origin, kind, reply tag), in arrival order.
    waiting: VecDeque<(usize, LockKind, i32)>,
    /// The first error a request of each origin met since its last status reply.
    errors: Vec<Option<MpiError>>,
}

impl Agent {
    /// Starts the agent of this member of `rma`'s window; returns its task request.
    pub fn start(e: &mut Engine, rma: Arc<Rma>) -> u32 {
        let comm = rma.channel.comm;
        let n = rma.n();
        let recv = Self::post(e, &rma);
        e.start_task(Box::new(Agent { rma, recv, waiting: VecDeque::new(), errors: vec![None; n] }), comm)
    }

    fn post(e: &mut Engine, rma: &Rma) -> u32 {
        let env = Envelope { ctx: rma.channel.ctx, src: MPI_ANY_SOURCE, tag: REQUEST_TAG };
        e.irecv(env, RecvBuf::owned(MAX_REQUEST), rma.channel.comm)
    }

    fn reply(&self, e: &mut Engine, to: usize, tag: i32, data: Vec<u8>) {
        let env = Envelope { ctx: self.rma.channel.ctx, src: self.rma.rank as i32, tag };
        let req = e.isend(self.rma.worlds[to], env, SendBuf::owned(data), SendMode::Standard, self.rma.channel.comm);
        e.free_request(req);
    }

    fn reply_status(&mut self, e: &mut Engine, to: usize, tag: i32) {
        let status = status_reply(&self.errors[to].take());
        self.reply(e, to, tag, status);
    }

    /// This member's memory at the requested blocks, as (address here, length); an error
    /// when any lies outside the window (or, dynamic, outside the attached memory).
    fn locate(&self, blocks: &[(u64, u64)]) -> MpiResult<Vec<(usize, usize)>> {
        let rma = &self.rma;
        let me = rma.targets[rma.rank];
        blocks
            .iter()
            .map(|&(at, len)| {
                let (at, len) = (at as usize, len as usize);
                let inside = if rma.control.dynamic {
                    at.checked_add(len)
                        .is_some_and(|end| rma.is_attached(rma.rank, Access::Direct, at, end) == Ok(true))
                } else {
                    at.checked_add(len).is_some_and(|end| end <= me.size)
                };
                if !inside {
                    return err(
                        MPI_ERR_RMA_RANGE,
                        format!("{len} bytes at {at:#x} lie outside the memory of the window on rank {}", rma.rank),
                    );
                }
                Ok((if rma.control.dynamic { at } else { me.base + at }, len))
            })
            .collect()
    }

    fn gather(places: &[(usize, usize)]) -> Vec<u8> {
        let mut out = Vec::with_capacity(places.iter().map(|p| p.1).sum());
        for &(addr, len) in places {
            // SAFETY: `locate` checked the block lies in this member's window memory, which
            // stays valid while the window (and so this agent) exists.
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(addr as *const u8, len) });
        }
        out
    }

    fn scatter(places: &[(usize, usize)], mut data: &[u8]) {
        for &(addr, len) in places {
            let (head, rest) = data.split_at(len.min(data.len()));
            // SAFETY: as in `gather`; the request's data is separate memory of ours. MPI forbids
            // conflicting accesses to these bytes while the operation is in progress.
            unsafe { std::ptr::copy_nonoverlapping(head.as_ptr(), addr as *mut u8, head.len()) };
            data = rest;
        }
    }

    fn apply(&mut self, e: &mut Engine, from: usize, r: &Parsed) -> MpiResult<()> {
        let rma = self.rma.clone();
        match r.kind {
            Kind::Put => {
                let places = self.locate(&r.blocks)?;
                same_len(&places, r.data.len())?;
                Self::scatter(&places, r.data);
            }
            Kind::Get => {
                // A refused Get still gets its (empty) reply: the origin waits for it.
                let (data, outcome) = match self.locate(&r.blocks) {
                    Ok(places) => (Self::gather(&places), Ok(())),
                    Err(error) => (Vec::new(), Err(error)),
                };
                self.reply(e, from, r.reply, data);
                outcome?;
            }
            Kind::Accumulate | Kind::FetchAccumulate => {
                let fetch = r.kind == Kind::FetchAccumulate;
                let located = self.locate(&r.blocks).and_then(|places| {
                    let op = Op::from_handle(r.a as u32 as i32)?;
                    let Op::Builtin(builtin) = op else {
                        return err(MPI_ERR_OP, "accumulate operations take predefined operations only");
                    };
                    let basic = basic_type(r.b as u32 as i32)?;
                    if builtin != Builtin::NoOp {
                        same_len(&places, r.data.len())?;
                    }
                    Ok((places, builtin, Reduction::new(&op, basic)?))
                });
                let (places, builtin, red) = match located {
                    Ok(v) => v,
                    Err(error) => {
                        if fetch {
                            self.reply(e, from, r.reply, Vec::new());
                        }
                        return Err(error);
                    }
                };
                let _held = rma.acc_lock(rma.rank);
                let mut data = Self::gather(&places);
                let old = fetch.then(|| data.clone());
                match builtin {
                    Builtin::NoOp => {}
                    Builtin::Replace => Self::scatter(&places, r.data),
                    _ => {
                        red.apply(r.data, &mut data);
                        Self::scatter(&places, &data);
                    }
                }
                // After the update: the reply tells the origin the operation is done.
                if let Some(old) = old {
                    self.reply(e, from, r.reply, old);
                }
            }
            Kind::CompareAndSwap => {
                let len = r.data.len() / 2;
                let places = match self.locate(&r.blocks).and_then(|p| same_len(&p, len).map(|_| p)) {
                    Ok(p) => p,
                    Err(error) => {
                        self.reply(e, from, r.reply, Vec::new());
                        return Err(error);
                    }
                };
                let _held = rma.acc_lock(rma.rank);
                let old = Self::gather(&places);
                if old == r.data[len..] {
                    Self::scatter(&places, &r.data[..len]);
                }
                self.reply(e, from, r.reply, old);
            }
            Kind::Lock => {
                let kind = if r.a == 1 { LockKind::Exclusive } else { LockKind::Shared };
                // Behind earlier waiters (first come, first served), else taken at once.
                if self.waiting.is_empty() && rma.try_lock(rma.rank, kind) {
                    self.reply_status(e, from, r.reply);
                } else {
                    self.waiting.push_back((from, kind, r.reply));
                }
            }
            Kind::Unlock => {
                rma.release(rma.rank, if r.a == 1 { LockKind::Exclusive } else { LockKind::Shared });
                rma.ring_node(e);
                self.grant_waiting(e);
                self.reply_status(e, from, r.reply);
            }
            Kind::Flush => self.reply_status(e, from, r.reply),
            Kind::Post => {
                rma.control.counter(0, from, rma.rank).fetch_add(1, Ordering::Release);
            }
            Kind::Complete => {
                rma.control.counter(1, rma.rank, from).fetch_add(1, Ordering::Release);
            }
        }
        Ok(())
    }

    /// Grants waiting lock requests in order while the lock word allows.
    fn grant_waiting(&mut self, e: &mut Engine) {
        while let Some(&(from, kind, tag)) = self.waiting.front() {
            if !self.rma.try_lock(self.rma.rank, kind) {
                break;
            }
            self.waiting.pop_front();
            self.reply_status(e, from, tag);
        }
    }
}

fn same_len(places: &[(usize, usize)], data: usize) -> MpiResult<()> {
    let len: usize = places.iter().map(|p| p.1).sum();
    if len != data {
        return err(MPI_ERR_TYPE, format!("the request carries {data} bytes for {len} bytes of the window"));
    }
    Ok(())
}

impl Task for Agent {
    fn advance(&mut self, e: &mut Engine) -> MpiResult<bool> {
        if !self.waiting.is_empty() {
            self.grant_waiting(e);
        }
        while e.is_complete(self.recv) {
            let (status, m) = e.take_owned_recv(self.recv);
            self.recv = Self::post(e, &self.rma);
            let from = status.source as usize;
            match parse(&m) {
                Some(r) => {
                    let outcome = self.apply(e, from, &r);
                    if r.kind.answered_by_outcome() {
                        self.reply(e, from, r.reply, status_reply(&outcome.err()));
                    } else if let Err(error) = outcome
                        && self.errors[from].is_none()
                    {
                        self.errors[from] = Some(error);
                    }
                }
                None => log::error!("one-sided request from window rank {from} is malformed ({} bytes)", m.len()),
            }
        }
        Ok(false)
    }

    fn end(&mut self, e: &mut Engine) {
        if e.cancel_recv(self.recv) {
            e.reqs.remove(self.recv);
        } else {
            e.free_request(self.recv);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let mut m = request(Kind::Accumulate, 77, 0x5800_0003, 0x4c00_0405, &[(16, 8), (40, 4)], 12);
        m.extend_from_slice(&[1; 12]);
        let r = parse(&m).expect("parses");
        assert_eq!((r.kind, r.reply, r.a, r.b), (Kind::Accumulate, 77, 0x5800_0003, 0x4c00_0405));
        assert_eq!(r.blocks, vec![(16, 8), (40, 4)]);
        assert_eq!(r.data, &[1; 12]);
        // Truncated or unknown requests are refused, never read past their end.
        assert!(parse(&m[..HEADER + 8]).is_none());
        let mut bad = m.clone();
        bad[0] = 99;
        assert!(parse(&bad).is_none());
        let mut huge = request(Kind::Put, 0, 0, 0, &[], 0);
        huge[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(&huge).is_none());
    }

    #[test]
    fn status_replies_carry_errors() {
        assert!(read_status(&status_reply(&None), 3).is_ok());
        let e = read_status(&status_reply(&Some(MpiError::new(MPI_ERR_RMA_RANGE, "outside"))), 3).unwrap_err();
        assert_eq!(e.code, MPI_ERR_RMA_RANGE);
        assert!(e.msg.contains("target rank 3: outside"), "{}", e.msg);
        assert_eq!(read_status(&[], 1).unwrap_err().code, MPI_ERR_INTERN);
    }
}

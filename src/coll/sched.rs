//! Nonblocking and persistent collectives as schedules driven by the progress engine.
//!
//! A schedule is a list of steps run in order: sends (library-owned copies, started and left
//! to the engine), receives into library buffers ("slots"), fences (wait until every receive
//! posted so far has arrived), local reductions and copies, and writes of a slot into a block
//! of the user's output buffer. Steps up to the next unfinished fence run at once; the rest
//! run from `Engine::progress` (through `progress` below) as receives complete, so a schedule
//! overlaps the caller's computation and completes through MPI_Wait/Test like any request.
//!
//! Algorithms: the blocking collectives' (`coll`, `coll::allreduce`), chosen by the same
//! table (`tune::get`) from sizes every member knows, so all members build matching
//! schedules; the node-aware shared-memory paths (`coll::hier`) are blocking only.
//!
//! Inputs are packed when a schedule is built (at the call, or at each MPI_Start), so input
//! and output buffers may overlap and nothing reads user memory afterwards; outputs are
//! written by `Put` steps only.
//!
//! Tags: every nonblocking collective and every persistent collective request takes the
//! next number of its communicator's collective sequence (`Comm::coll_seq`) and uses
//! `tag::NBC_BASE + seq * 8 + phase` on the collective context, above every blocking
//! collective's tag, so collectives in flight together never take each other's messages.

use super::allreduce::{HalvingStep, folded_displacements, halving_steps, pieces, real_rank};
use super::tune::{self, pof2_below};
use super::{Block, Blocks, Group, tag};
use crate::abi::consts::*;
use crate::error::{MpiResult, err};
use crate::op::{self, Reduction};
use crate::p2p::Engine;
use crate::p2p::Envelope;
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::{COMPLETED_SEND, Op, SendMode, Status};

/// Slot buffers kept for reuse by later schedules (per thread). A large collective run as a
/// schedule goes through several slot-sized buffers (received data, copies sent, slices);
/// fresh ones cost a page fault per 4 KiB on first touch, which dominated large Iallreduce
/// (dozens of times the faults of the blocking path), and glibc returns freed memory at the
/// top of the heap to the kernel, so every call faulted again.
mod pool {
    use std::cell::RefCell;

    /// Smaller buffers come cheaply from the allocator's own caches.
    const MIN_CAPACITY: usize = 16 * 1024;
    const MAX_BUFFERS: usize = 32;
    const MAX_BYTES: usize = 64 << 20;

    thread_local! {
        /// The buffers, and the sum of their capacities.
        static POOL: RefCell<(Vec<Vec<u8>>, usize)> = const { RefCell::new((Vec::new(), 0)) };
    }

    /// An empty vector, with room for `len` bytes when the pool holds one that large (the
    /// smallest such), else a new one that allocates on first use.
    pub fn take(len: usize) -> Vec<u8> {
        if len < MIN_CAPACITY {
            return Vec::new();
        }
        POOL.with_borrow_mut(|(bufs, bytes)| {
            let best = (0..bufs.len()).filter(|&i| bufs[i].capacity() >= len).min_by_key(|&i| bufs[i].capacity());
            best.map_or_else(Vec::new, |i| {
                let v = bufs.swap_remove(i);
                *bytes -= v.capacity();
                v
            })
        })
    }

    /// A copy of `data` in a pooled vector.
    pub fn copy(data: &[u8]) -> Vec<u8> {
        let mut v = take(data.len());
        v.extend_from_slice(data);
        v
    }

    /// Keeps `v`'s allocation for a later `take` (while the pool has room).
    pub fn give(mut v: Vec<u8>) {
        let cap = v.capacity();
        if cap < MIN_CAPACITY {
            return;
        }
        // `try_with`: a schedule dropped while the thread exits finds the pool gone.
        let _ = POOL.try_with(|p| {
            let (bufs, bytes) = &mut *p.borrow_mut();
            if cap > MAX_BYTES {
                return;
            }
            // Full: the smallest buffers make room (the current sizes are likely the next).
            while bufs.len() >= MAX_BUFFERS || *bytes + cap > MAX_BYTES {
                let smallest = (0..bufs.len()).min_by_key(|&i| bufs[i].capacity()).expect("a full pool is not empty");
                *bytes -= bufs.swap_remove(smallest).capacity();
            }
            v.clear();
            *bytes += cap;
            bufs.push(std::mem::take(&mut v));
        });
    }
}

/// Phases (tag offsets) within one schedule; at most `PHASES` of them. Phases below
/// `PH_INTER` carry traffic within the (local) group; on an intercommunicator, traffic between
/// the groups uses `PH_INTER` and above, so it never matches local traffic (both groups have
/// a rank 0, and they share the internal context).
pub const PHASES: i32 = 8;
pub(super) const PH_MAIN: i32 = 0;
const PH_ROOT: i32 = 1;
pub(super) const PH_BCAST: i32 = 2;
pub(super) const PH_SCATTER: i32 = 3;
pub(super) const PH_INTER: i32 = 4;

/// A user buffer a schedule reads at build time or writes later: raw memory and its blocks.
#[derive(Clone)]
pub struct UserBuf {
    base: *mut u8,
    span: usize,
    pub blocks: Blocks,
}

impl UserBuf {
    /// # Safety
    /// `base..base + span` is user memory that stays valid until the schedules built with
    /// this buffer complete (MPI's rule for nonblocking and persistent operations), and that
    /// nothing else accesses while a schedule reads or writes it.
    pub unsafe fn new(base: *mut u8, span: usize, blocks: Blocks) -> UserBuf {
        UserBuf { base, span, blocks }
    }

    fn mem(&self) -> &[u8] {
        if self.span == 0 {
            return &[];
        }
        // SAFETY: valid user memory per `new`'s contract.
        unsafe { std::slice::from_raw_parts(self.base, self.span) }
    }

    /// Packed bytes of block `i`.
    pub fn pack(&self, i: usize) -> Vec<u8> {
        let b = &self.blocks[i];
        if b.count == 0 {
            return Vec::new();
        }
        // A pooled buffer: its pages are already mapped (zeroing them is cheap, faulting is not).
        let mut packed = pool::take(b.bytes());
        packed.resize(b.bytes(), 0);
        op::pack_into(&b.layout, b.count, &self.mem()[b.offset..], &mut packed);
        packed
    }

    fn put(&self, i: usize, packed: &[u8]) {
        let b = &self.blocks[i];
        if b.count == 0 || self.span == 0 {
            return;
        }
        // SAFETY: valid user memory per `new`'s contract, not otherwise accessed meanwhile.
        let mem = unsafe { std::slice::from_raw_parts_mut(self.base, self.span) };
        op::unpack_into(&b.layout, b.count, packed, &mut mem[b.offset..]);
    }
}

enum Step {
    /// Sends slot `buf` (a copy when `keep`, else the slot's bytes, leaving it empty).
    Send { to: usize, phase: i32, buf: usize, keep: bool },
    /// Receives up to `len` bytes into slot `buf` (available after the next fence).
    Recv { from: usize, phase: i32, buf: usize, len: usize },
    /// Waits for every receive posted before it.
    Fence,
    /// slot `higher` = slot `lower` (op) slot `higher`; then, with `into_lower`, the result
    /// moves to slot `lower` (the slots are swapped).
    Apply { lower: usize, higher: usize, into_lower: bool },
    /// slot `to` = a copy of slot `from`.
    Copy { from: usize, to: usize },
    /// Writes slot `buf` into block `block` of the output buffer.
    Put { buf: usize, block: usize },
    /// Splits slot `buf` into consecutive pieces of `sizes` bytes, in new slots from `first`.
    Split { buf: usize, sizes: Vec<usize>, first: usize },
    /// slot `to` = a copy of bytes `start..end` of slot `from`.
    Slice { from: usize, start: usize, end: usize, to: usize },
    /// slot `to` = slots `from` laid end to end.
    Concat { from: Vec<usize>, to: usize },
    /// Combines slot `from` into the bytes of slot `to` from `at`: `to = from (op) to` when
    /// `from_lower` (the operand order of rank order), else `to = to (op) from`.
    Combine { from: usize, to: usize, at: usize, from_lower: bool },
    /// Copies slot `from` into the bytes of slot `to` from `at` (growing it when needed).
    Place { from: usize, to: usize, at: usize },
}

/// A collective in progress (or ready to start).
pub struct Schedule {
    ctx: u32,
    pub(super) rank: usize,
    /// World ranks of the local group, then (intercommunicators) of the remote group: peer
    /// `nlocal + i` is remote rank i.
    members: Vec<usize>,
    nlocal: usize,
    tag: i32,
    red: Option<Reduction>,
    out: Option<UserBuf>,
    slots: Vec<Vec<u8>>,
    steps: Vec<Step>,
    pos: usize,
    /// Receives posted and not yet collected by a fence: (request id, slot).
    pending: Vec<(u32, usize)>,
    /// Sends still in flight, whose (library-owned) buffers return to the pool when done.
    sends: Vec<u32>,
}

impl Drop for Schedule {
    fn drop(&mut self) {
        for v in self.slots.drain(..) {
            pool::give(v);
        }
    }
}

/// What a schedule needs to know about its communicator, kept by persistent requests.
#[derive(Clone)]
pub struct Target {
    pub ctx: u32,
    pub rank: usize,
    pub members: Vec<usize>,
    /// The remote group's world ranks (empty on an intracommunicator).
    pub remote: Vec<usize>,
    pub tag: i32,
}

impl Target {
    /// The next collective on `g`'s communicator (takes a sequence number).
    pub fn next(g: &Group) -> Target {
        Target::numbered(g, g.seq, tag::NBC_BASE)
    }

    /// The next blocking collective on `g`'s communicator that runs as a schedule. Its own
    /// sequence and tag range keep it apart from the nonblocking ones: a rank may start a
    /// nonblocking collective before a blocking one that another rank calls first (the
    /// standard forbids it, MPICH tolerates it, and mpi4py's tests do it).
    pub fn next_blocking(g: &Group) -> Target {
        Target::numbered(g, g.blocking_seq, tag::BLOCKING_NBC_BASE)
    }

    fn numbered(g: &Group, counter: &std::cell::Cell<u32>, base: i32) -> Target {
        let seq = counter.get();
        counter.set(seq.wrapping_add(1));
        let tag = base + ((seq & 0x00ff_ffff) as i32) * PHASES;
        let remote = g.remote.map_or_else(Vec::new, |r| r.to_vec());
        Target { ctx: g.ctx, rank: g.rank, members: g.members.to_vec(), remote, tag }
    }
}

impl Schedule {
    pub fn new(t: &Target, red: Option<Reduction>, out: Option<UserBuf>) -> Schedule {
        Schedule {
            ctx: t.ctx,
            rank: t.rank,
            members: [&t.members[..], &t.remote[..]].concat(),
            nlocal: t.members.len(),
            tag: t.tag,
            red,
            out,
            slots: Vec::new(),
            steps: Vec::new(),
            pos: 0,
            pending: Vec::new(),
            sends: Vec::new(),
        }
    }

    /// Size of the (local) group.
    pub(super) fn size(&self) -> usize {
        self.nlocal
    }

    /// Size of the remote group (0 on an intracommunicator).
    pub(super) fn remote_size(&self) -> usize {
        self.members.len() - self.nlocal
    }

    /// The peer index of remote rank `i`, for `send` and `recv`.
    pub(super) fn remote(&self, i: usize) -> usize {
        self.nlocal + i
    }

    /// The output buffer (also the input with MPI_IN_PLACE).
    pub fn out(&self) -> Option<&UserBuf> {
        self.out.as_ref()
    }

    // ----- building -----

    /// A new slot holding `data`.
    pub(super) fn slot(&mut self, data: Vec<u8>) -> usize {
        self.slots.push(data);
        self.slots.len() - 1
    }

    pub(super) fn send(&mut self, to: usize, phase: i32, buf: usize, keep: bool) {
        self.steps.push(Step::Send { to, phase, buf, keep });
    }

    pub(super) fn recv(&mut self, from: usize, phase: i32, buf: usize, len: usize) {
        self.steps.push(Step::Recv { from, phase, buf, len });
    }

    pub(super) fn fence(&mut self) {
        self.steps.push(Step::Fence);
    }

    pub(super) fn apply(&mut self, lower: usize, higher: usize, into_lower: bool) {
        self.steps.push(Step::Apply { lower, higher, into_lower });
    }

    pub(super) fn put(&mut self, buf: usize, block: usize) {
        self.steps.push(Step::Put { buf, block });
    }

    pub(super) fn out_bytes(&self, i: usize) -> usize {
        self.out.as_ref().map_or(0, |o| o.blocks[i].bytes())
    }

    /// A new slot holding bytes `range` of slot `from` (when the step runs).
    pub(super) fn slice(&mut self, from: usize, range: std::ops::Range<usize>) -> usize {
        let to = self.slot(Vec::new());
        self.steps.push(Step::Slice { from, start: range.start, end: range.end, to });
        to
    }

    /// A new slot holding slots `from` laid end to end.
    fn concat(&mut self, from: Vec<usize>) -> usize {
        let to = self.slot(Vec::new());
        self.steps.push(Step::Concat { from, to });
        to
    }

    /// See `Step::Combine`.
    fn combine(&mut self, from: usize, to: usize, at: usize, from_lower: bool) {
        self.steps.push(Step::Combine { from, to, at, from_lower });
    }

    /// See `Step::Place`.
    fn place(&mut self, from: usize, to: usize, at: usize) {
        self.steps.push(Step::Place { from, to, at });
    }

    /// Exchanges with peers: receives up to `len` bytes from `from` into a new slot (returned)
    /// and sends slot `buf` (moved) to `to`, then waits for the receive.
    fn exchange(&mut self, to: usize, buf: usize, from: usize, len: usize, phase: i32) -> usize {
        let got = self.slot(Vec::new());
        self.recv(from, phase, got, len);
        self.send(to, phase, buf, false);
        self.fence();
        got
    }

    /// The reduction is commutative (no reduction: treated as commutative).
    fn commutative(&self) -> bool {
        self.red.as_ref().is_none_or(|r| r.is_commutative())
    }

    /// Element size of the reduction's datatype (1 without one).
    fn elem_size(&self) -> usize {
        self.red.as_ref().map_or(1, |r| r.elem_size().max(1))
    }

    /// Splits slot `buf` into pieces of `sizes` bytes; returns the first of the new slots.
    pub(super) fn split(&mut self, buf: usize, sizes: Vec<usize>) -> usize {
        let first = self.slots.len();
        for _ in 0..sizes.len() {
            self.slot(Vec::new());
        }
        self.steps.push(Step::Split { buf, sizes, first });
        first
    }

    // ----- running -----

    /// Sets slot `i` to `data`, keeping the old buffer for reuse.
    fn set_slot(&mut self, i: usize, data: Vec<u8>) {
        pool::give(std::mem::replace(&mut self.slots[i], data));
    }

    /// Collects the receives posted so far when all have arrived; returns whether they had.
    fn collect_recvs(&mut self, e: &mut Engine) -> MpiResult<bool> {
        if !self.pending.iter().all(|&(r, _)| e.is_complete(r)) {
            return Ok(false);
        }
        for (req, buf) in std::mem::take(&mut self.pending) {
            let data = take_recv(e, req)?;
            self.set_slot(buf, data);
        }
        Ok(true)
    }

    /// Takes back the buffers of the sends that have completed.
    fn reclaim_sends(&mut self, e: &mut Engine) {
        self.sends.retain(|&req| {
            if !e.is_complete(req) {
                return true;
            }
            if let Some(r) = e.reqs.remove(req)
                && let Op::Send { buf, .. } = r.op
                && let Some(v) = buf.into_owned()
            {
                pool::give(v);
            }
            false
        });
    }

    /// Leaves the sends still in flight to the engine (it frees them when they complete).
    fn release_sends(&mut self, e: &mut Engine) {
        self.reclaim_sends(e);
        for req in std::mem::take(&mut self.sends) {
            e.free_request(req);
        }
    }

    /// Runs the steps that can run now; returns whether the schedule is finished.
    fn advance(&mut self, e: &mut Engine) -> MpiResult<bool> {
        while self.pos < self.steps.len() {
            match &mut self.steps[self.pos] {
                Step::Send { to, phase, buf, keep } => {
                    let (dst, b, keep) = (self.members[*to], *buf, *keep);
                    let env = Envelope { ctx: self.ctx, src: self.rank as i32, tag: self.tag + *phase };
                    // A message that fits a free ring slot is copied there now, with no copy
                    // of the slot and no request.
                    if e.try_send_eager_now(dst, env, &self.slots[b]) {
                        if !keep {
                            self.set_slot(b, Vec::new());
                        }
                    } else {
                        let data = if keep { pool::copy(&self.slots[b]) } else { std::mem::take(&mut self.slots[b]) };
                        let req = e.isend(dst, env, SendBuf::owned(data), SendMode::Standard, MPI_COMM_NULL);
                        if req != COMPLETED_SEND {
                            self.sends.push(req);
                        }
                    }
                }
                Step::Recv { from, phase, buf, len } => {
                    // The envelope names the sender's rank in its own group.
                    let src = if *from >= self.nlocal { *from - self.nlocal } else { *from };
                    let env = Envelope { ctx: self.ctx, src: src as i32, tag: self.tag + *phase };
                    let (buf, len) = (*buf, *len);
                    let req = e.irecv(env, RecvBuf::owned_in(pool::take(len), len), MPI_COMM_NULL);
                    self.pending.push((req, buf));
                }
                Step::Fence => {
                    self.reclaim_sends(e);
                    if !self.collect_recvs(e)? {
                        return Ok(false);
                    }
                }
                Step::Apply { lower, higher, into_lower } => {
                    let (l, h, into_lower) = (*lower, *higher, *into_lower);
                    let red = self.red.as_ref().expect("a reduction step without an operation");
                    let input = std::mem::take(&mut self.slots[l]);
                    red.apply(&input, &mut self.slots[h]);
                    self.slots[l] = input;
                    if into_lower {
                        self.slots.swap(l, h);
                    }
                }
                Step::Copy { from, to } => {
                    let (f, t) = (*from, *to);
                    let data = pool::copy(&self.slots[f]);
                    self.set_slot(t, data);
                }
                Step::Put { buf, block } => {
                    let (b, k) = (*buf, *block);
                    self.out.as_ref().expect("a put without an output buffer").put(k, &self.slots[b]);
                }
                Step::Split { buf, sizes, first } => {
                    let all = std::mem::take(&mut self.slots[*buf]);
                    if sizes.iter().sum::<usize>() > all.len() {
                        return truncated(all.len(), sizes.iter().sum());
                    }
                    let mut start = 0;
                    for (k, &n) in sizes.iter().enumerate() {
                        pool::give(std::mem::replace(&mut self.slots[*first + k], pool::copy(&all[start..start + n])));
                        start += n;
                    }
                    pool::give(all);
                }
                Step::Slice { from, start, end, to } => {
                    let (f, t, a, b) = (*from, *to, *start, *end);
                    if b > self.slots[f].len() {
                        return truncated(self.slots[f].len().saturating_sub(a), b - a);
                    }
                    let data = pool::copy(&self.slots[f][a..b]);
                    self.set_slot(t, data);
                }
                Step::Concat { from, to } => {
                    let mut all = pool::take(from.iter().map(|&f| self.slots[f].len()).sum());
                    for &f in from.iter() {
                        all.extend_from_slice(&self.slots[f]);
                    }
                    let to = *to;
                    self.set_slot(to, all);
                }
                Step::Combine { from, to, at, from_lower } => {
                    let (f, t, at, from_lower) = (*from, *to, *at, *from_lower);
                    let red = self.red.as_ref().expect("a reduction step without an operation");
                    let mut input = std::mem::take(&mut self.slots[f]);
                    let Some(part) = self.slots[t].get_mut(at..at + input.len()) else {
                        return truncated(input.len(), self.slots[t].len().saturating_sub(at));
                    };
                    if from_lower {
                        red.apply(&input, part);
                    } else {
                        red.apply(part, &mut input);
                        part.copy_from_slice(&input);
                    }
                    self.slots[f] = input;
                }
                Step::Place { from, to, at } => {
                    let (f, t, at) = (*from, *to, *at);
                    let data = std::mem::take(&mut self.slots[f]);
                    let dst = &mut self.slots[t];
                    if dst.len() < at + data.len() {
                        dst.resize(at + data.len(), 0);
                    }
                    dst[at..at + data.len()].copy_from_slice(&data);
                    self.slots[f] = data;
                }
            }
            self.pos += 1;
        }
        if !self.collect_recvs(e)? {
            return Ok(false);
        }
        self.release_sends(e);
        Ok(true)
    }

    /// Drops the receives still posted (after an error).
    fn abandon(&mut self, e: &mut Engine) {
        self.release_sends(e);
        for (req, _) in std::mem::take(&mut self.pending) {
            if !e.cancel_recv(req) {
                e.free_request(req);
            } else {
                e.reqs.remove(req);
            }
        }
    }
}

/// MPI_ERR_TRUNCATE for a piece of `got` bytes where `want` were expected (members passed
/// different counts or types).
fn truncated<T>(got: usize, want: usize) -> MpiResult<T> {
    err(
        MPI_ERR_TRUNCATE,
        format!(
            "message truncated: a collective's piece has {got} bytes where {want} were expected (counts or types differ between ranks)"
        ),
    )
}

/// The bytes of a completed receive (frees the request).
fn take_recv(e: &mut Engine, req: u32) -> MpiResult<Vec<u8>> {
    let r = e.reqs.remove(req).expect("collective receive request vanished");
    let Op::Recv { buf, .. } = r.op else { unreachable!("collective request is not a receive") };
    if r.status.error == MPI_ERR_TRUNCATE {
        return err(
            MPI_ERR_TRUNCATE,
            format!(
                "message truncated: rank {} sent more data than this rank's receive count and type allow \
                 (counts or types differ between ranks)",
                r.status.source
            ),
        );
    }
    let mut v = buf.into_owned();
    v.truncate(r.status.bytes);
    Ok(v)
}

/// Advances schedule request `id`; returns (finished, error).
fn advance_request(e: &mut Engine, id: u32) -> bool {
    let Some(r) = e.reqs.get_mut(id) else { return true };
    let Op::Coll(mut s) = std::mem::replace(&mut r.op, Op::Nothing) else { return true };
    let result = s.advance(e);
    let error = match result {
        Ok(false) => {
            e.reqs.get_mut(id).expect("schedule request vanished").op = Op::Coll(s);
            return false;
        }
        Ok(true) => None,
        Err(err) => {
            log::debug!("nonblocking collective failed: {}", err.msg);
            s.abandon(e);
            Some(err.code)
        }
    };
    let r = e.reqs.get_mut(id).expect("schedule request vanished");
    r.status = Status::empty();
    if let Some(code) = error {
        r.status.error = code;
    }
    r.complete = true;
    if r.freed {
        e.reqs.remove(id);
    }
    true
}

/// The progress hook (called from `Engine::progress` when schedules are active): advances
/// every active schedule once. Returns whether any finished.
pub fn progress(e: &mut Engine) -> bool {
    // Taking the list also keeps nested progress calls (from irecv) out of this hook.
    let ids = std::mem::take(&mut e.scheds);
    let mut did = false;
    let mut still = Vec::with_capacity(ids.len());
    for id in ids {
        if advance_request(e, id) {
            did = true;
        } else {
            still.push(id);
        }
    }
    let added = std::mem::replace(&mut e.scheds, still);
    e.scheds.extend(added);
    did
}

/// Runs schedule `s` to completion (a blocking collective built as a schedule).
pub fn run(e: &mut Engine, mut s: Schedule) -> MpiResult<()> {
    loop {
        match s.advance(e) {
            Ok(true) => return Ok(()),
            Ok(false) => {
                let pending: Vec<u32> = s.pending.iter().map(|&(r, _)| r).collect();
                e.wait_until(|e| pending.iter().all(|&r| e.is_complete(r)));
            }
            Err(x) => {
                s.abandon(e);
                return Err(x);
            }
        }
    }
}

/// Registers the (already inserted) schedule request `id` and runs what it can right away.
pub fn kick(e: &mut Engine, id: u32) {
    if !advance_request(e, id) {
        e.scheds.push(id);
    }
}

// ----- algorithms (the blocking ones, as steps) -----

/// Binomial-tree broadcast of slot `buf` (`len` bytes, filled at `root`); writes it into
/// output block `put` on every rank but the root, and at the root too when `put_at_root`.
pub(super) fn bcast_slot(
    s: &mut Schedule,
    buf: usize,
    len: usize,
    root: usize,
    phase: i32,
    put: Option<usize>,
    put_at_root: bool,
) {
    let (n, r) = (s.size(), s.rank);
    let vr = (r + n - root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            s.recv((vr - mask + root) % n, phase, buf, len);
            s.fence();
            break;
        }
        mask <<= 1;
    }
    if let Some(block) = put
        && (r != root || put_at_root)
    {
        s.put(buf, block);
    }
    mask >>= 1;
    let children: Vec<usize> = std::iter::successors(Some(mask), |m| Some(m >> 1))
        .take_while(|&m| m > 0)
        .filter(|&m| vr + m < n)
        .map(|m| (vr + m + root) % n)
        .collect();
    for (k, &c) in children.iter().enumerate() {
        s.send(c, phase, buf, k + 1 < children.len());
    }
}

/// Binomial-tree reduction of slot `acc` (`len` bytes) to `root` (rank order kept for
/// non-commutative operations by rooting the tree at 0 and forwarding). Returns whether this
/// rank ends with the result in `acc`.
pub(super) fn reduce_slot(s: &mut Schedule, acc: usize, len: usize, root: usize, phase: i32) -> bool {
    let (n, r) = (s.size(), s.rank);
    let commutative = s.red.as_ref().is_some_and(|red| red.is_commutative());
    let tree_root = if commutative { root } else { 0 };
    let vr = (r + n - tree_root) % n;
    let real = |v: usize| (v + tree_root) % n;
    let mut children = Vec::new();
    let mut mask = 1;
    while mask < n && vr & mask == 0 {
        if vr + mask < n {
            let c = s.slot(Vec::new());
            s.recv(real(vr + mask), phase, c, len);
            children.push(c);
        }
        mask <<= 1;
    }
    if !children.is_empty() {
        s.fence();
    }
    for c in children {
        s.apply(acc, c, true);
    }
    if vr != 0 {
        s.send(real(vr - mask), phase, acc, false);
        if r == root {
            s.recv(0, phase + PH_ROOT, acc, len);
            s.fence();
            return true;
        }
        return false;
    }
    if r == root {
        return true;
    }
    s.send(root, phase + PH_ROOT, acc, false);
    false
}

pub fn barrier(s: &mut Schedule) {
    let (n, r) = (s.size(), s.rank);
    let empty = s.slot(Vec::new());
    let mut dist = 1;
    while dist < n {
        s.recv((r + n - dist) % n, PH_MAIN, empty, 0);
        s.send((r + dist) % n, PH_MAIN, empty, true);
        s.fence();
        dist <<= 1;
    }
}

/// Ibcast: the output buffer is the broadcast buffer (packed now at the root). Binomial tree,
/// or scatter + ring allgather for large messages (`tune::Tuning::bcast`).
pub fn bcast(s: &mut Schedule, root: usize) {
    let (n, r) = (s.size(), s.rank);
    let len = s.out_bytes(0);
    if n == 1 || len == 0 {
        return;
    }
    let data = if r == root { s.out.as_ref().unwrap().pack(0) } else { Vec::new() };
    match tune::get().bcast(len, n) {
        tune::Bcast::Binomial => {
            let buf = s.slot(data);
            bcast_slot(s, buf, len, root, PH_MAIN, Some(0), false);
        }
        tune::Bcast::ScatterAllgather => {
            let buf = s.slot(if r == root { data } else { vec![0; len] });
            bcast_scatter_allgather(s, buf, len, root);
            if r != root {
                s.put(buf, 0);
            }
        }
    }
}

/// Broadcast of slot `buf` (`len` bytes, filled at `root`; the others' hold `len` bytes to
/// fill) as the blocking `bcast_scatter_allgather`: the root scatters `n` pieces down a
/// binomial tree, then a ring allgather completes every copy. Pieces are numbered relative to
/// the root.
fn bcast_scatter_allgather(s: &mut Schedule, buf: usize, len: usize, root: usize) {
    let (n, r) = (s.size(), s.rank);
    let vr = (r + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let piece = len.div_ceil(n);
    let bytes = |lo: usize, hi: usize| (lo * piece).min(len)..(hi * piece).min(len);
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            let range = bytes(vr, vr + mask);
            if !range.is_empty() {
                let got = s.slot(Vec::new());
                s.recv(real(vr - mask), PH_MAIN, got, range.len());
                s.fence();
                s.place(got, buf, range.start);
            }
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            let range = bytes(vr + mask, vr + 2 * mask);
            if !range.is_empty() {
                let part = s.slice(buf, range);
                s.send(real(vr + mask), PH_MAIN, part, false);
            }
        }
        mask >>= 1;
    }
    let (left, right) = ((r + n - 1) % n, (r + 1) % n);
    for step in 0..n - 1 {
        let (a, b) = ((vr + n - step) % n, (vr + 2 * n - step - 1) % n);
        let (srange, rrange) = (bytes(a, a + 1), bytes(b, b + 1));
        let got = s.slot(Vec::new());
        if !rrange.is_empty() {
            s.recv(left, PH_BCAST, got, rrange.len());
        }
        if !srange.is_empty() {
            let part = s.slice(buf, srange);
            s.send(right, PH_BCAST, part, false);
        }
        if !rrange.is_empty() {
            s.fence();
            s.place(got, buf, rrange.start);
        }
    }
}

/// Ireduce: `mine` is the packed contribution; the output (root only) gets the result.
pub fn reduce(s: &mut Schedule, mine: Vec<u8>, root: usize) {
    let len = mine.len();
    if len == 0 {
        return;
    }
    let acc = s.slot(mine);
    if reduce_slot(s, acc, len, root, PH_MAIN) {
        s.put(acc, 0);
    }
}

/// Iallreduce: the algorithm of the blocking allreduce for this size and operation
/// (`tune::Tuning::allreduce`): recursive doubling, Rabenseifner, ring, or reduce + broadcast.
pub fn allreduce(s: &mut Schedule, mine: Vec<u8>) {
    let n = s.size();
    let len = mine.len();
    if len == 0 {
        return;
    }
    let acc = s.slot(mine);
    if n == 1 {
        s.put(acc, 0);
        return;
    }
    let count = len / s.elem_size();
    match tune::get().allreduce(len, count, n, s.commutative()) {
        tune::Allreduce::RecursiveDoubling => allreduce_recursive_doubling(s, acc, len),
        tune::Allreduce::Rabenseifner => allreduce_rabenseifner(s, acc, count),
        tune::Allreduce::Ring => allreduce_ring(s, acc, count),
        tune::Allreduce::ReduceBcast => {
            reduce_slot(s, acc, len, 0, PH_MAIN);
            bcast_slot(s, acc, len, 0, PH_BCAST, Some(0), true);
            return;
        }
    }
    s.put(acc, 0);
}

/// The first step of the power-of-two algorithms (as `coll::allreduce`'s): among the first
/// `2 * rem` ranks each even rank hands its vector (slot `acc`, `len` bytes) to the odd rank
/// above, which combines it as the lower operand. Returns this rank's number among the
/// `pof2` remaining ones, None for an even rank that handed its vector up.
fn fold_in(s: &mut Schedule, acc: usize, len: usize) -> Option<usize> {
    let (n, r) = (s.size(), s.rank);
    let rem = n - pof2_below(n);
    if r >= 2 * rem {
        return Some(r - rem);
    }
    if r % 2 == 0 {
        s.send(r + 1, PH_MAIN, acc, false);
        return None;
    }
    let lower = s.slot(Vec::new());
    s.recv(r - 1, PH_MAIN, lower, len);
    s.fence();
    s.apply(lower, acc, false);
    Some(r / 2)
}

/// The last step: the odd ranks of the first `2 * rem` hand the result to the even rank below.
fn fold_out(s: &mut Schedule, acc: usize, len: usize, newrank: Option<usize>) {
    let (n, r) = (s.size(), s.rank);
    let rem = n - pof2_below(n);
    match newrank {
        Some(_) if r < 2 * rem => s.send(r - 1, PH_MAIN, acc, true),
        Some(_) => {}
        None => {
            s.recv(r + 1, PH_MAIN, acc, len);
            s.fence();
        }
    }
}

/// Recursive doubling: log2 rounds of whole-vector exchanges; the lower rank's vector is
/// always the first operand, so rank order holds for non-commutative operations.
fn allreduce_recursive_doubling(s: &mut Schedule, acc: usize, len: usize) {
    let r = s.rank;
    let pof2 = pof2_below(s.size());
    let rem = s.size() - pof2;
    let newrank = fold_in(s, acc, len);
    if let Some(nr) = newrank {
        let theirs = s.slot(Vec::new());
        let mut mask = 1;
        while mask < pof2 {
            let dst = real_rank(nr ^ mask, rem);
            s.recv(dst, PH_MAIN, theirs, len);
            s.send(dst, PH_MAIN, acc, true);
            s.fence();
            if dst < r {
                s.apply(theirs, acc, false);
            } else {
                s.apply(acc, theirs, true);
            }
            mask <<= 1;
        }
    }
    fold_out(s, acc, len, newrank);
}

/// Rabenseifner's allreduce (commutative operations, at least `pof2` elements), step for
/// step as the blocking one: after folding to `pof2` ranks, recursive halving leaves each
/// rank the reduced piece it owns, then recursive doubling gathers the pieces.
fn allreduce_rabenseifner(s: &mut Schedule, acc: usize, count: usize) {
    let (n, r) = (s.size(), s.rank);
    let size = s.elem_size();
    let pof2 = pof2_below(n);
    let rem = n - pof2;
    let newrank = fold_in(s, acc, count * size);
    if let Some(nr) = newrank {
        let disp: Vec<usize> = pieces(count, pof2).into_iter().map(|e| e * size).collect();
        let (mut send_idx, mut recv_idx, mut last_idx) = (0, 0, pof2);
        let mut mask = 1;
        while mask < pof2 {
            let newdst = nr ^ mask;
            let dst = real_rank(newdst, rem);
            let half = pof2 / (mask * 2);
            let (send, recv) = if nr < newdst {
                send_idx = recv_idx + half;
                ((send_idx, last_idx), (recv_idx, send_idx))
            } else {
                recv_idx = send_idx + half;
                ((send_idx, recv_idx), (recv_idx, last_idx))
            };
            let part = s.slice(acc, disp[send.0]..disp[send.1]);
            let got = s.exchange(dst, part, dst, disp[recv.1] - disp[recv.0], PH_MAIN);
            s.combine(got, acc, disp[recv.0], dst < r);
            send_idx = recv_idx;
            mask <<= 1;
            if mask < pof2 {
                last_idx = recv_idx + pof2 / mask;
            }
        }
        mask >>= 1;
        while mask > 0 {
            let newdst = nr ^ mask;
            let dst = real_rank(newdst, rem);
            let half = pof2 / (mask * 2);
            let (send, recv) = if nr < newdst {
                if mask != pof2 / 2 {
                    last_idx += half;
                }
                recv_idx = send_idx + half;
                ((send_idx, recv_idx), (recv_idx, last_idx))
            } else {
                recv_idx = send_idx - half;
                ((send_idx, last_idx), (recv_idx, send_idx))
            };
            let part = s.slice(acc, disp[send.0]..disp[send.1]);
            let got = s.exchange(dst, part, dst, disp[recv.1] - disp[recv.0], PH_MAIN);
            s.place(got, acc, disp[recv.0]);
            if nr > newdst {
                send_idx = recv_idx;
            }
            mask >>= 1;
        }
    }
    fold_out(s, acc, count * size, newrank);
}

/// Ring allreduce (commutative operations, at least `n` elements): `n - 1` reduce-scatter
/// steps around the ring, then `n - 1` allgather steps of the reduced pieces.
fn allreduce_ring(s: &mut Schedule, acc: usize, count: usize) {
    let (n, r) = (s.size(), s.rank);
    let size = s.elem_size();
    let disp: Vec<usize> = pieces(count, n).into_iter().map(|e| e * size).collect();
    let (left, right) = ((r + n - 1) % n, (r + 1) % n);
    let piece = |i: usize| disp[i % n]..disp[i % n + 1];
    for step in 0..n - 1 {
        let (out, inc) = (piece(r + n - step), piece(r + 2 * n - step - 1));
        let part = s.slice(acc, out);
        let got = s.exchange(right, part, left, inc.len(), PH_MAIN);
        s.combine(got, acc, inc.start, true);
    }
    for step in 0..n - 1 {
        let (out, inc) = (piece(r + 1 + n - step), piece(r + n - step));
        let part = s.slice(acc, out);
        let got = s.exchange(right, part, left, inc.len(), PH_MAIN);
        s.place(got, acc, inc.start);
    }
}

/// Ireduce_scatter(_block): `counts[i]` elements go to member i. As the blocking one
/// (`tune::Tuning::reduce_scatter`): recursive halving or pairwise exchange for commutative
/// operations, else a reduction to rank 0 (rank order kept), which sends each member its piece.
pub fn reduce_scatter(s: &mut Schedule, mine: Vec<u8>, counts: &[usize]) {
    let n = s.size();
    let size = s.elem_size();
    let len = mine.len();
    if len == 0 {
        return;
    }
    let counts = &counts[..n];
    let disp: Vec<usize> = std::iter::once(0)
        .chain(counts.iter().scan(0, |at, &c| {
            *at += c * size;
            Some(*at)
        }))
        .collect();
    let acc = s.slot(mine);
    if n == 1 {
        s.put(acc, 0);
        return;
    }
    match tune::get().reduce_scatter(len, n, s.commutative()) {
        tune::ReduceScatter::Direct => reduce_scatter_direct(s, acc, &disp),
        tune::ReduceScatter::Halving => reduce_scatter_halving(s, acc, &disp),
        tune::ReduceScatter::Pairwise => reduce_scatter_pairwise(s, acc, &disp),
        tune::ReduceScatter::ReduceThenScatter => reduce_then_scatter(s, acc, &disp),
    }
}

/// Every member sends each other member its block at once and combines the n blocks it gets
/// in rank order (any operation), as `coll::allreduce::reduce_scatter_direct`.
fn reduce_scatter_direct(s: &mut Schedule, input: usize, disp: &[usize]) {
    let (n, r) = (s.size(), s.rank);
    let own = disp[r + 1] - disp[r];
    let acc = s.slice(input, disp[r]..disp[r + 1]);
    let peers: Vec<usize> = (r + 1..n).chain(0..r).collect();
    let mut got = vec![usize::MAX; n];
    if own > 0 {
        for &k in &peers {
            got[k] = s.slot(Vec::new());
            s.recv(k, PH_MAIN, got[k], own);
        }
    }
    for &k in &peers {
        if disp[k + 1] > disp[k] {
            let part = s.slice(input, disp[k]..disp[k + 1]);
            s.send(k, PH_MAIN, part, false);
        }
    }
    if own > 0 {
        s.fence();
        // acc = x_r op x_(r+1) op ... op x_(n-1), then x_k op acc for k = r - 1 down to 0.
        for &b in &got[r + 1..] {
            s.combine(b, acc, 0, false);
        }
        for &b in got[..r].iter().rev() {
            s.combine(b, acc, 0, true);
        }
    }
    s.put(acc, 0);
}

/// Reduce to rank 0, which splits the result and sends each member its piece.
fn reduce_then_scatter(s: &mut Schedule, acc: usize, disp: &[usize]) {
    let (n, r) = (s.size(), s.rank);
    if reduce_slot(s, acc, disp[n], 0, PH_MAIN) {
        let first = s.split(acc, (0..n).map(|i| disp[i + 1] - disp[i]).collect());
        for i in 1..n {
            if disp[i + 1] > disp[i] {
                s.send(i, PH_SCATTER, first + i, false);
            }
        }
        s.put(first, 0);
    } else if disp[r + 1] > disp[r] {
        let piece = s.slot(Vec::new());
        s.recv(0, PH_SCATTER, piece, disp[r + 1] - disp[r]);
        s.fence();
        s.put(piece, 0);
    }
}

/// Recursive halving (commutative operations), as `coll::allreduce::reduce_scatter_halving`:
/// after folding to `pof2` ranks each step halves the window of blocks a rank keeps; a folded
/// pair's surviving rank finally hands the even rank its block. `disp`: byte offsets of the
/// members' blocks.
fn reduce_scatter_halving(s: &mut Schedule, acc: usize, disp: &[usize]) {
    let (n, r) = (s.size(), s.rank);
    let pof2 = pof2_below(n);
    let rem = n - pof2;
    let total = disp[n];
    let Some(nr) = fold_in(s, acc, total) else {
        let mine = s.slot(Vec::new());
        s.recv(r + 1, PH_MAIN, mine, disp[r + 1] - disp[r]);
        s.fence();
        s.put(mine, 0);
        return;
    };
    let newdisp = folded_displacements(disp, pof2, rem, total);
    for HalvingStep { partner, send, recv } in halving_steps(nr, pof2) {
        let dst = real_rank(partner, rem);
        let part = s.slice(acc, newdisp[send.0]..newdisp[send.1]);
        let got = s.exchange(dst, part, dst, newdisp[recv.1] - newdisp[recv.0], PH_MAIN);
        s.combine(got, acc, newdisp[recv.0], dst < r);
    }
    if r < 2 * rem {
        let lower = s.slice(acc, disp[r - 1]..disp[r]);
        s.send(r - 1, PH_MAIN, lower, false);
    }
    let own = s.slice(acc, disp[r]..disp[r + 1]);
    s.put(own, 0);
}

/// Pairwise exchange (commutative operations): in step i every member sends member r + i its
/// block of the input and combines the block it gets from r - i.
fn reduce_scatter_pairwise(s: &mut Schedule, input: usize, disp: &[usize]) {
    let (n, r) = (s.size(), s.rank);
    let block = |i: usize| disp[i]..disp[i + 1];
    let acc = s.slice(input, block(r));
    let own = block(r).len();
    for i in 1..n {
        let (dst, src) = ((r + i) % n, (r + n - i) % n);
        let got = s.slot(Vec::new());
        if own > 0 {
            s.recv(src, PH_MAIN, got, own);
        }
        if !block(dst).is_empty() {
            let part = s.slice(input, block(dst));
            s.send(dst, PH_MAIN, part, false);
        }
        if own > 0 {
            s.fence();
            s.combine(got, acc, 0, true);
        }
    }
    s.put(acc, 0);
}

/// Iscan / Iexscan by recursive doubling.
pub fn scan(s: &mut Schedule, mine: Vec<u8>, exclusive: bool) {
    let (n, r) = (s.size(), s.rank);
    let len = mine.len();
    if len == 0 {
        return;
    }
    let partial = s.slot(mine);
    let result = s.slot(Vec::new());
    let mut have_result = !exclusive;
    if have_result {
        s.steps.push(Step::Copy { from: partial, to: result });
    }
    let theirs = s.slot(Vec::new());
    let mut mask = 1;
    while mask < n {
        let dst = r ^ mask;
        if dst < n {
            s.recv(dst, PH_MAIN, theirs, len);
            s.send(dst, PH_MAIN, partial, true);
            s.fence();
            if dst < r {
                s.apply(theirs, partial, false);
                if have_result {
                    s.apply(theirs, result, false);
                } else {
                    s.steps.push(Step::Copy { from: theirs, to: result });
                    have_result = true;
                }
            } else {
                s.apply(partial, theirs, true);
            }
        }
        mask <<= 1;
    }
    if have_result {
        s.put(result, 0);
    }
}

/// Igather(v): linear, or a binomial tree for MPI_Gather's small totals (`uniform`: every
/// block the same size; `tune::Tuning::rooted`). `mine` is the packed contribution (None:
/// MPI_IN_PLACE at the root).
pub fn gather(s: &mut Schedule, mine: Option<Vec<u8>>, root: usize, uniform: bool) {
    let (n, r) = (s.size(), s.rank);
    let block = match &mine {
        Some(d) => d.len(),
        None => s.out_bytes(root),
    };
    if uniform && n > 1 && block > 0 && tune::get().rooted(block * n, true) == tune::Rooted::Binomial {
        return gather_binomial(s, mine, root, block);
    }
    if r != root {
        let data = mine.unwrap_or_default();
        if !data.is_empty() {
            let b = s.slot(data);
            s.send(root, PH_MAIN, b, false);
        }
        return;
    }
    if let Some(d) = mine {
        let b = s.slot(d);
        s.put(b, root);
    }
    let mut got = Vec::new();
    for i in (0..n).filter(|&i| i != root) {
        let len = s.out_bytes(i);
        if len > 0 {
            let b = s.slot(Vec::new());
            s.recv(i, PH_MAIN, b, len);
            got.push((i, b));
        }
    }
    s.fence();
    for (i, b) in got {
        s.put(b, i);
    }
}

/// Binomial-tree gather of `block`-byte blocks, as `coll::gather_uniform`: relative rank vr
/// collects the blocks of vr..vr + (subtree size) in order (its own, then each child's
/// subtree) and sends them up.
fn gather_binomial(s: &mut Schedule, mine: Option<Vec<u8>>, root: usize, block: usize) {
    let (n, r) = (s.size(), s.rank);
    let vr = (r + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let in_place = mine.is_none();
    let own = match mine {
        Some(d) => d,
        None => s.out.as_ref().expect("the root has a receive buffer").pack(root),
    };
    let buf = s.slot(own);
    let mut children = Vec::new();
    let mut mask = 1;
    while mask < n && vr & mask == 0 {
        if vr + mask < n {
            let blocks = mask.min(n - vr - mask);
            let c = s.slot(Vec::new());
            s.recv(real(vr + mask), PH_MAIN, c, blocks * block);
            children.push((c, mask));
        }
        mask <<= 1;
    }
    if !children.is_empty() {
        s.fence();
    }
    for (c, at) in children {
        s.place(c, buf, at * block);
    }
    if vr != 0 {
        s.send(real(vr - mask), PH_MAIN, buf, false);
        return;
    }
    for v in (0..n).filter(|&v| v != 0 || !in_place) {
        let piece = s.slice(buf, v * block..(v + 1) * block);
        s.put(piece, real(v));
    }
}

/// Iscatter(v): linear, or a binomial tree for MPI_Scatter's small totals (`uniform`).
/// `pieces` (root only) are the packed blocks for every member; the output is None for
/// MPI_IN_PLACE at the root.
pub fn scatter(s: &mut Schedule, pieces: Vec<Vec<u8>>, root: usize, uniform: bool) {
    let (n, r) = (s.size(), s.rank);
    let block = if r == root { pieces[root].len() } else { s.out_bytes(0) };
    if uniform && n > 1 && block > 0 && tune::get().rooted(block * n, true) == tune::Rooted::Binomial {
        return scatter_binomial(s, pieces, root, block);
    }
    if r != root {
        let len = s.out_bytes(0);
        if len > 0 {
            let b = s.slot(Vec::new());
            s.recv(root, PH_MAIN, b, len);
            s.fence();
            s.put(b, 0);
        }
        return;
    }
    let mut pieces = pieces;
    let own = std::mem::take(&mut pieces[root]);
    for i in (root + 1..n).chain(0..root) {
        let data = std::mem::take(&mut pieces[i]);
        if !data.is_empty() {
            let b = s.slot(data);
            s.send(i, PH_MAIN, b, false);
        }
    }
    if s.out.is_some() {
        let b = s.slot(own);
        s.put(b, 0);
    }
}

/// Binomial-tree scatter of `block`-byte blocks, as `coll::scatter_uniform`: relative rank vr
/// gets the blocks of its subtree from its parent, then hands each child (vr + 2^k, largest
/// first) the child's subtree.
fn scatter_binomial(s: &mut Schedule, pieces: Vec<Vec<u8>>, root: usize, block: usize) {
    let (n, r) = (s.size(), s.rank);
    let vr = (r + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let mut mask = 1;
    let buf = if vr == 0 {
        while mask < n {
            mask <<= 1;
        }
        let mut pieces = pieces;
        let all: Vec<u8> = (0..n).flat_map(|v| std::mem::take(&mut pieces[real(v)])).collect();
        s.slot(all)
    } else {
        while vr & mask == 0 {
            mask <<= 1;
        }
        let blocks = mask.min(n - vr);
        let b = s.slot(Vec::new());
        s.recv(real(vr - mask), PH_MAIN, b, blocks * block);
        s.fence();
        b
    };
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            let blocks = mask.min(n - vr - mask);
            let part = s.slice(buf, mask * block..(mask + blocks) * block);
            s.send(real(vr + mask), PH_MAIN, part, false);
        }
        mask >>= 1;
    }
    if s.out.is_some() {
        let own = s.slice(buf, 0..block);
        s.put(own, 0);
    }
}

/// Iallgather(v): ring, recursive doubling (power-of-two sizes) or Bruck, as the blocking
/// one (`tune::Tuning::allgather`; every member knows every block's size, so all agree).
/// `mine` is None for MPI_IN_PLACE (the own block is already in place and is packed from the
/// output now).
pub fn allgather(s: &mut Schedule, mine: Option<Vec<u8>>) {
    let (n, r) = (s.size(), s.rank);
    let out = s.out.as_ref().expect("allgather output");
    if out.blocks.iter().all(|b| b.bytes() == 0) {
        return;
    }
    let total: usize = out.blocks.iter().map(Block::bytes).sum();
    let current = match mine {
        Some(d) => {
            let b = s.slot(d);
            s.put(b, r);
            b
        }
        None => {
            let d = out.pack(r);
            s.slot(d)
        }
    };
    match tune::get().allgather(total, n) {
        tune::Allgather::Ring => allgather_ring(s, current),
        tune::Allgather::Direct => allgather_direct(s, current),
        tune::Allgather::RecursiveDoubling if n.is_power_of_two() => allgather_recursive_doubling(s, current),
        _ => allgather_bruck(s, current),
    }
}

/// Ring allgather: in step k each member forwards the block it got in step k - 1.
fn allgather_ring(s: &mut Schedule, mut current: usize) {
    let (n, r) = (s.size(), s.rank);
    let (left, right) = ((r + n - 1) % n, (r + 1) % n);
    for step in 0..n.saturating_sub(1) {
        let from = (r + n - step - 1) % n;
        let (sent, len) = ((r + n - step) % n, s.out_bytes(from));
        let next = s.slot(Vec::new());
        if len > 0 {
            s.recv(left, PH_MAIN, next, len);
        }
        if s.out_bytes(sent) > 0 {
            s.send(right, PH_MAIN, current, true);
        }
        s.fence();
        if len > 0 {
            s.put(next, from);
        }
        current = next;
    }
}

/// Direct allgather: every receive posted, the own block sent to every member, one fence.
fn allgather_direct(s: &mut Schedule, mine: usize) {
    let (n, r) = (s.size(), s.rank);
    let peers: Vec<usize> = (r + 1..n).chain(0..r).collect();
    let mut got = Vec::new();
    for &i in &peers {
        let len = s.out_bytes(i);
        if len > 0 {
            let b = s.slot(Vec::new());
            s.recv(i, PH_MAIN, b, len);
            got.push((i, b));
        }
    }
    if s.out_bytes(r) > 0 {
        for &i in &peers {
            s.send(i, PH_MAIN, mine, true);
        }
    }
    if !got.is_empty() {
        s.fence();
    }
    for (i, b) in got {
        s.put(b, i);
    }
}

/// Byte offsets of the output's packed blocks laid end to end (and the total).
fn out_offsets(s: &Schedule) -> Vec<usize> {
    std::iter::once(0)
        .chain((0..s.size()).scan(0, |at, i| {
            *at += s.out_bytes(i);
            Some(*at)
        }))
        .collect()
}

/// Recursive doubling (power-of-two sizes): in round k members 2^k apart swap everything they
/// have, an aligned run of 2^k blocks.
fn allgather_recursive_doubling(s: &mut Schedule, mine: usize) {
    let (n, r) = (s.size(), s.rank);
    let off = out_offsets(s);
    let all = s.slot(vec![0; off[n]]);
    s.place(mine, all, off[r]);
    let mut mask = 1;
    while mask < n {
        let dst = r ^ mask;
        let (base, dbase) = (r & !(mask - 1), dst & !(mask - 1));
        let part = s.slice(all, off[base]..off[base + mask]);
        let got = s.exchange(dst, part, dst, off[dbase + mask] - off[dbase], PH_MAIN);
        s.place(got, all, off[dbase]);
        mask <<= 1;
    }
    for i in (0..n).filter(|&i| i != r && off[i + 1] > off[i]) {
        let block = s.slice(all, off[i]..off[i + 1]);
        s.put(block, i);
    }
}

/// Bruck allgather (any size, ceil(log2 n) rounds): a member holds the blocks r, r + 1, ...
/// in that order; in the round with distance d it sends its first min(d, n - d) blocks to
/// r - d and appends the same number from r + d.
fn allgather_bruck(s: &mut Schedule, mine: usize) {
    let (n, r) = (s.size(), s.rank);
    let size = |s: &Schedule, j: usize| s.out_bytes((r + j) % n);
    // ends[j]: end of relative block j in `mine`, which grows to hold them all.
    let mut ends = vec![size(s, 0)];
    let mut dist = 1;
    while dist < n {
        let cnt = dist.min(n - dist);
        let (dst, src) = ((r + n - dist) % n, (r + dist) % n);
        let len: usize = (dist..dist + cnt).map(|j| size(s, j)).sum();
        let part = s.slice(mine, 0..ends[cnt - 1]);
        let got = s.exchange(dst, part, src, len, PH_MAIN);
        s.place(got, mine, ends[dist - 1]);
        for j in dist..dist + cnt {
            ends.push(ends[j - 1] + size(s, j));
        }
        dist <<= 1;
    }
    for j in (1..n).filter(|&j| ends[j] > ends[j - 1]) {
        let block = s.slice(mine, ends[j - 1]..ends[j]);
        s.put(block, (r + j) % n);
    }
}

/// Ialltoall(v,w), as the blocking one (`tune::Tuning::alltoall`): every transfer posted at
/// once (small blocks), pairwise exchange (large blocks), or Bruck's algorithm (small blocks
/// of one size everywhere, `uniform`: MPI_Alltoall). `outgoing` holds the packed block for
/// every member. Members of an Alltoallv may choose differently between the first two (each
/// pair exchanges one message each way either way).
pub fn alltoall(s: &mut Schedule, outgoing: Vec<Vec<u8>>, uniform: bool) {
    let n = s.size();
    let block = (0..n).map(|i| s.out_bytes(i)).max().unwrap_or(0);
    match tune::get().alltoall(block, n, uniform) {
        tune::Alltoall::Bruck if n > 1 && block > 0 => alltoall_bruck(s, outgoing, block),
        tune::Alltoall::Pairwise => alltoall_pairwise(s, outgoing),
        _ => alltoall_post(s, outgoing),
    }
}

/// Every receive posted, every send started, one fence.
fn alltoall_post(s: &mut Schedule, mut outgoing: Vec<Vec<u8>>) {
    let (n, r) = (s.size(), s.rank);
    let order: Vec<usize> = (1..n).map(|k| (r + k) % n).collect();
    let mut got = Vec::new();
    for &i in order.iter().rev() {
        let len = s.out_bytes(i);
        if len > 0 {
            let b = s.slot(Vec::new());
            s.recv(i, PH_MAIN, b, len);
            got.push((i, b));
        }
    }
    for &i in &order {
        let data = std::mem::take(&mut outgoing[i]);
        if !data.is_empty() {
            let b = s.slot(data);
            s.send(i, PH_MAIN, b, false);
        }
    }
    let own = std::mem::take(&mut outgoing[r]);
    let b = s.slot(own);
    s.put(b, r);
    if !got.is_empty() {
        s.fence();
    }
    for (i, b) in got {
        s.put(b, i);
    }
}

/// Pairwise exchange: in step i a member sends to r + i and receives from r - i (partners
/// r ^ i on power-of-two sizes), one transfer each way in flight.
fn alltoall_pairwise(s: &mut Schedule, mut outgoing: Vec<Vec<u8>>) {
    let (n, r) = (s.size(), s.rank);
    let own = s.slot(std::mem::take(&mut outgoing[r]));
    s.put(own, r);
    for i in 1..n {
        let (dst, src) = if n.is_power_of_two() { (r ^ i, r ^ i) } else { ((r + i) % n, (r + n - i) % n) };
        let len = s.out_bytes(src);
        let got = s.slot(Vec::new());
        if len > 0 {
            s.recv(src, PH_MAIN, got, len);
        }
        let data = std::mem::take(&mut outgoing[dst]);
        if !data.is_empty() {
            let b = s.slot(data);
            s.send(dst, PH_MAIN, b, false);
        }
        if len > 0 {
            s.fence();
            s.put(got, src);
        }
    }
}

/// Bruck all-to-all (blocks of `block` bytes everywhere, ceil(log2 n) rounds): blocks are
/// rotated so that slot i holds the block for r + i; in the round for bit k every slot with
/// bit k set goes, in one message, to r + 2^k (and arrives from r - 2^k); slot i finally
/// holds the block from r - i.
fn alltoall_bruck(s: &mut Schedule, outgoing: Vec<Vec<u8>>, block: usize) {
    let (n, r) = (s.size(), s.rank);
    let mut outgoing = outgoing;
    // Blocks of another size (counts differ between ranks) are caught by the splits.
    let mut cur: Vec<usize> = (0..n).map(|i| std::mem::take(&mut outgoing[(r + i) % n])).map(|d| s.slot(d)).collect();
    let mut bit = 1;
    while bit < n {
        let which: Vec<usize> = (0..n).filter(|i| i & bit != 0).collect();
        let data = s.concat(which.iter().map(|&i| cur[i]).collect());
        let got = s.exchange((r + bit) % n, data, (r + n - bit) % n, which.len() * block, PH_MAIN);
        let first = s.split(got, vec![block; which.len()]);
        for (k, &i) in which.iter().enumerate() {
            cur[i] = first + k;
        }
        bit <<= 1;
    }
    for (i, &slot) in cur.iter().enumerate() {
        s.put(slot, (r + n - i) % n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_alone_runs_its_local_steps_at_once() {
        let mut e = Engine::new(0, 1, None);
        let t = Target { ctx: 0, rank: 0, members: vec![0], remote: Vec::new(), tag: tag::NBC_BASE };
        let mut s = Schedule::new(&t, None, None);
        barrier(&mut s);
        assert!(s.advance(&mut e).unwrap());
    }
}

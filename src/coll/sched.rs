//! Nonblocking and persistent collectives as schedules driven by the progress engine.
//!
//! A schedule is a list of steps run in order: sends (library-owned copies, started and left
//! to the engine), receives into library buffers ("slots"), fences (wait until every receive
//! posted so far has arrived), local reductions and copies, and writes of a slot into a block
//! of the user's output buffer. Steps up to the next unfinished fence run at once; the rest
//! run from `Engine::progress` (through `progress` below) as receives complete, so a schedule
//! overlaps the caller's computation and completes through MPI_Wait/Test like any request.
//!
//! Inputs are packed when a schedule is built (at the call, or at each MPI_Start), so input
//! and output buffers may overlap and nothing reads user memory afterwards; outputs are
//! written by `Put` steps only.
//!
//! Tags: every nonblocking collective and every persistent collective request takes the
//! next number of its communicator's collective sequence (`Comm::coll_seq`) and uses
//! `tag::NBC_BASE + seq * 8 + phase` on the collective context, above every blocking
//! collective's tag, so collectives in flight together never take each other's messages.

use super::{Block, Group, pack_block, tag};
use crate::abi::consts::*;
use crate::error::{MpiError, MpiResult, err};
use crate::op::{self, Reduction};
use crate::p2p::Engine;
use crate::p2p::Envelope;
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::{Op, SendMode, Status};

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
    pub blocks: Vec<Block>,
}

impl UserBuf {
    /// # Safety
    /// `base..base + span` is user memory that stays valid until the schedules built with
    /// this buffer complete (MPI's rule for nonblocking and persistent operations), and that
    /// nothing else accesses while a schedule reads or writes it.
    pub unsafe fn new(base: *mut u8, span: usize, blocks: Vec<Block>) -> UserBuf {
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
        pack_block(self.mem(), &self.blocks[i])
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

    /// Runs the steps that can run now; returns whether the schedule is finished.
    fn advance(&mut self, e: &mut Engine) -> MpiResult<bool> {
        while self.pos < self.steps.len() {
            match &mut self.steps[self.pos] {
                Step::Send { to, phase, buf, keep } => {
                    let data = if *keep { self.slots[*buf].clone() } else { std::mem::take(&mut self.slots[*buf]) };
                    let env = Envelope { ctx: self.ctx, src: self.rank as i32, tag: self.tag + *phase };
                    let req = e.isend(self.members[*to], env, SendBuf::owned(data), SendMode::Standard, MPI_COMM_NULL);
                    e.free_request(req);
                }
                Step::Recv { from, phase, buf, len } => {
                    // The envelope names the sender's rank in its own group.
                    let src = if *from >= self.nlocal { *from - self.nlocal } else { *from };
                    let env = Envelope { ctx: self.ctx, src: src as i32, tag: self.tag + *phase };
                    let (buf, len) = (*buf, *len);
                    let req = e.irecv(env, RecvBuf::owned(len), MPI_COMM_NULL);
                    self.pending.push((req, buf));
                }
                Step::Fence => {
                    if !self.pending.iter().all(|&(r, _)| e.is_complete(r)) {
                        return Ok(false);
                    }
                    for (req, buf) in std::mem::take(&mut self.pending) {
                        self.slots[buf] = take_recv(e, req)?;
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
                    self.slots[t] = self.slots[f].clone();
                }
                Step::Put { buf, block } => {
                    let (b, k) = (*buf, *block);
                    self.out.as_ref().expect("a put without an output buffer").put(k, &self.slots[b]);
                }
                Step::Split { buf, sizes, first } => {
                    let all = std::mem::take(&mut self.slots[*buf]);
                    let mut start = 0;
                    for (k, &n) in sizes.iter().enumerate() {
                        self.slots[*first + k] = all[start..start + n].to_vec();
                        start += n;
                    }
                }
            }
            self.pos += 1;
        }
        if !self.pending.iter().all(|&(r, _)| e.is_complete(r)) {
            return Ok(false);
        }
        for (req, buf) in std::mem::take(&mut self.pending) {
            self.slots[buf] = take_recv(e, req)?;
        }
        Ok(true)
    }

    /// Drops the receives still posted (after an error).
    fn abandon(&mut self, e: &mut Engine) {
        for (req, _) in std::mem::take(&mut self.pending) {
            if !e.cancel_recv(req) {
                e.free_request(req);
            } else {
                e.reqs.remove(req);
            }
        }
    }
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
        Err(MpiError { code, msg, .. }) => {
            log::debug!("nonblocking collective failed: {msg}");
            s.abandon(e);
            Some(code)
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

// ----- algorithms (the blocking ones' structure, as steps) -----

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

/// Ibcast: the output buffer is the broadcast buffer (packed now at the root).
pub fn bcast(s: &mut Schedule, root: usize) {
    let len = s.out_bytes(0);
    if s.size() == 1 || len == 0 {
        return;
    }
    let data = if s.rank == root { s.out.as_ref().unwrap().pack(0) } else { Vec::new() };
    let buf = s.slot(data);
    bcast_slot(s, buf, len, root, PH_MAIN, Some(0), false);
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

/// Above this many bytes Iallreduce uses reduce + broadcast (fewer bytes on the wire per
/// rank than recursive doubling, which sends the whole vector log2(n) times). The blocking
/// allreduce has more algorithms (see `tune`).
const ALLREDUCE_LARGE: usize = 64 * 1024;

/// Iallreduce: recursive doubling, or reduce + broadcast for large vectors.
pub fn allreduce(s: &mut Schedule, mine: Vec<u8>) {
    let (n, r) = (s.size(), s.rank);
    let len = mine.len();
    if len == 0 {
        return;
    }
    let acc = s.slot(mine);
    if n == 1 {
        s.put(acc, 0);
        return;
    }
    if len > ALLREDUCE_LARGE {
        reduce_slot(s, acc, len, 0, PH_MAIN);
        bcast_slot(s, acc, len, 0, PH_BCAST, Some(0), true);
        return;
    }
    let pof2 = 1 << (usize::BITS - 1 - n.leading_zeros());
    let rem = n - pof2;
    let newrank = if r < 2 * rem {
        if r % 2 == 0 {
            s.send(r + 1, PH_MAIN, acc, false);
            None
        } else {
            let lower = s.slot(Vec::new());
            s.recv(r - 1, PH_MAIN, lower, len);
            s.fence();
            s.apply(lower, acc, false);
            Some(r / 2)
        }
    } else {
        Some(r - rem)
    };
    match newrank {
        Some(nr) => {
            let theirs = s.slot(Vec::new());
            let mut mask = 1;
            while mask < pof2 {
                let partner = nr ^ mask;
                let dst = if partner < rem { partner * 2 + 1 } else { partner + rem };
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
            s.put(acc, 0);
            if r < 2 * rem {
                s.send(r - 1, PH_MAIN, acc, false);
            }
        }
        None => {
            s.recv(r + 1, PH_MAIN, acc, len);
            s.fence();
            s.put(acc, 0);
        }
    }
}

/// Ireduce_scatter(_block): reduce to rank 0, which sends each member its piece.
pub fn reduce_scatter(s: &mut Schedule, mine: Vec<u8>, counts: &[usize]) {
    let (n, r) = (s.size(), s.rank);
    let size = s.red.as_ref().map_or(0, |red| red.elem_size());
    let len = mine.len();
    if len == 0 {
        return;
    }
    let acc = s.slot(mine);
    if reduce_slot(s, acc, len, 0, PH_MAIN) {
        let first = s.split(acc, counts[..n].iter().map(|c| c * size).collect());
        for (i, &c) in counts.iter().enumerate().take(n).skip(1) {
            if c > 0 {
                s.send(i, PH_SCATTER, first + i, false);
            }
        }
        s.put(first, 0);
    } else if counts[r] > 0 {
        let piece = s.slot(Vec::new());
        s.recv(0, PH_SCATTER, piece, counts[r] * size);
        s.fence();
        s.put(piece, 0);
    }
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

/// Igather(v): linear. `mine` is the packed contribution (None: MPI_IN_PLACE at the root).
pub fn gather(s: &mut Schedule, mine: Option<Vec<u8>>, root: usize) {
    let (n, r) = (s.size(), s.rank);
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

/// Iscatter(v): linear. `pieces` (root only) are the packed blocks for every member; the
/// output is None for MPI_IN_PLACE at the root.
pub fn scatter(s: &mut Schedule, pieces: Vec<Vec<u8>>, root: usize) {
    let (n, r) = (s.size(), s.rank);
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

/// Iallgather(v): ring. `mine` is None for MPI_IN_PLACE (the own block is already in place
/// and is packed from the output now).
pub fn allgather(s: &mut Schedule, mine: Option<Vec<u8>>) {
    let (n, r) = (s.size(), s.rank);
    let out = s.out.as_ref().expect("allgather output");
    if out.blocks.iter().all(|b| b.bytes() == 0) {
        return;
    }
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
    let (left, right) = ((r + n - 1) % n, (r + 1) % n);
    let mut current = current;
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

/// Ialltoall(v,w): every receive posted, every send started, one fence. `outgoing` holds
/// the packed block for every member.
pub fn alltoall(s: &mut Schedule, outgoing: Vec<Vec<u8>>) {
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
    let mut outgoing = outgoing;
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

//! Blocking collectives on intracommunicators, built on the point-to-point engine.
//!
//! All traffic goes on the communicator's internal context (`Comm::coll_ctx`) with a tag per
//! collective kind and phase, so it never matches user messages. Data travels packed (the
//! datatype's bytes without padding); user buffers are read and written only at the start and
//! end, through `In`/`Out` block lists. Sends carry library-owned copies and are released as
//! soon as they are started (the engine completes them on its own), so a collective waits only
//! for what it receives. Message order between two ranks is FIFO per tag, which keeps rounds
//! and consecutive collectives apart without per-round tags.
//!
//! Algorithms (chosen per call by `tune`, by communicator and message size; every choice and
//! threshold has an `OXMPI_*` override): dissemination barrier; broadcast by binomial tree or,
//! for large messages, binomial scatter + ring allgather; binomial reduce (rank order kept
//! for non-commutative operations); allreduce by recursive doubling, Rabenseifner, ring or
//! reduce + broadcast (`allreduce`), sparse-aware for predefined operations (`sparse`);
//! allgather(v) by ring, recursive doubling or Bruck; all-to-all by posting everything,
//! pairwise exchange, or Bruck (uniform blocks); reduce-scatter by recursive halving or
//! pairwise exchange (commutative operations) or reduce + scatter; linear gather/scatter;
//! scan/exscan by recursive doubling.

use crate::abi::consts::*;
use crate::comm::Comm;
use crate::datatype::Layout;
use crate::error::{MpiResult, err};
use crate::op::{self, Reduction};
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::{Op, SendMode};
use crate::p2p::{Engine, Envelope};

mod allreduce;
pub mod hier;
pub mod inter;
pub mod neighbor;
pub mod sched;
pub mod shm;
pub mod sparse;
pub mod tune;

use sparse::{Acc, Vecs};

/// Internal tags (on the collective context): one range per collective kind; the low bits
/// name the phase of composite algorithms. Tag 1 is the context-id agreement's.
mod tag {
    pub const BARRIER: i32 = 16;
    pub const BCAST: i32 = 32;
    pub const REDUCE: i32 = 48;
    pub const ALLREDUCE: i32 = 64;
    pub const GATHER: i32 = 80;
    pub const SCATTER: i32 = 96;
    pub const ALLGATHER: i32 = 112;
    pub const ALLTOALL: i32 = 128;
    pub const REDUCE_SCATTER: i32 = 144;
    pub const SCAN: i32 = 160;
    pub const EXSCAN: i32 = 176;
    /// Nonblocking and persistent collectives: `NBC_BASE + seq * sched::PHASES + phase`.
    pub const NBC_BASE: i32 = 256;
    /// Blocking collectives run as schedules: `BLOCKING_NBC_BASE + seq * sched::PHASES + phase`,
    /// above the nonblocking range (whose sequence numbers are taken modulo 2^24).
    pub const BLOCKING_NBC_BASE: i32 = NBC_BASE + (1 << 24) * super::sched::PHASES;
    /// Phase offsets within a kind.
    pub const PHASE_REDUCE: i32 = 1;
    pub const PHASE_BCAST: i32 = 2;
    pub const PHASE_SCATTER: i32 = 3;
    pub const PHASE_ROOT: i32 = 4;
}

/// The members of a communicator as seen by one collective call.
pub struct Group<'a> {
    engine: &'a mut Engine,
    ctx: u32,
    rank: usize,
    members: &'a [usize],
    /// Intercommunicators: the remote group's world ranks (`members` is the local group).
    remote: Option<&'a [usize]>,
    /// The communicator's collective sequence (numbers nonblocking collectives' tags).
    seq: &'a std::cell::Cell<u32>,
    /// The communicator's sequence of blocking collectives run as schedules.
    blocking_seq: &'a std::cell::Cell<u32>,
    /// The communicator's node-aware collective state (coll::hier).
    shm: &'a hier::CommShm,
}

impl<'a> Group<'a> {
    pub fn new(engine: &'a mut Engine, comm: &'a Comm) -> Group<'a> {
        Group {
            engine,
            ctx: comm.coll_ctx(),
            rank: comm.rank,
            members: &comm.members,
            remote: comm.remote.as_deref(),
            seq: &comm.coll_seq,
            blocking_seq: &comm.blocking_coll_seq,
            shm: &comm.coll_shm,
        }
    }

    pub fn is_inter(&self) -> bool {
        self.remote.is_some()
    }

    /// Number of blocks of a per-peer buffer (gather, scatter, allgather, all-to-all): the
    /// remote group's size on an intercommunicator, else the size.
    pub fn peer_count(&self) -> usize {
        self.remote.map_or(self.members.len(), |r| r.len())
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn size(&self) -> usize {
        self.members.len()
    }

    pub fn engine(&mut self) -> &mut Engine {
        self.engine
    }

    /// Starts a send of `data` to member `to` and lets it complete on its own.
    fn send(&mut self, to: usize, tag: i32, data: Vec<u8>) {
        let env = Envelope { ctx: self.ctx, src: self.rank as i32, tag };
        let req = self.engine.isend(self.members[to], env, SendBuf::owned(data), SendMode::Standard, MPI_COMM_NULL);
        self.engine.free_request(req);
    }

    /// Posts a receive of up to `len` bytes from member `from`; returns the request id.
    fn post_recv(&mut self, from: usize, tag: i32, len: usize) -> u32 {
        let env = Envelope { ctx: self.ctx, src: from as i32, tag };
        self.engine.irecv(env, RecvBuf::owned(len), MPI_COMM_NULL)
    }

    fn wait_all(&mut self, reqs: &[u32]) {
        self.engine.wait_until(|e| reqs.iter().all(|&r| e.is_complete(r)));
    }

    /// The bytes of a completed receive (frees the request).
    fn take(&mut self, req: u32) -> MpiResult<Vec<u8>> {
        let r = self.engine.reqs.remove(req).expect("collective receive request vanished");
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

    fn recv(&mut self, from: usize, tag: i32, len: usize) -> MpiResult<Vec<u8>> {
        let r = self.post_recv(from, tag, len);
        self.wait_all(&[r]);
        self.take(r)
    }

    /// Sends `data` to `to` and receives up to `len` bytes from `from`, concurrently.
    fn sendrecv(&mut self, to: usize, data: Vec<u8>, from: usize, len: usize, tag: i32) -> MpiResult<Vec<u8>> {
        let r = self.post_recv(from, tag, len);
        self.send(to, tag, data);
        self.wait_all(&[r]);
        self.take(r)
    }
}

/// One block of a user buffer: `count` elements of `layout` at byte `offset`.
#[derive(Debug, Clone)]
pub struct Block {
    pub offset: usize,
    pub count: usize,
    pub layout: Layout,
}

impl Block {
    /// Bytes of packed data the block holds.
    pub fn bytes(&self) -> usize {
        self.count * self.layout.size
    }
}

/// A user buffer read by a collective, with its blocks (one per rank for scatter and
/// all-to-all, one for everything else).
pub struct In<'a> {
    /// Borrowed user memory, or a copy when it overlaps the receive buffer.
    pub mem: std::borrow::Cow<'a, [u8]>,
    pub blocks: Vec<Block>,
}

/// A user buffer written by a collective, with its blocks.
pub struct Out<'a> {
    pub mem: &'a mut [u8],
    pub blocks: Vec<Block>,
}

fn pack_block(mem: &[u8], b: &Block) -> Vec<u8> {
    if b.count == 0 {
        return Vec::new();
    }
    op::pack(&b.layout, b.count, &mem[b.offset..])
}

impl In<'_> {
    fn pack(&self, i: usize) -> Vec<u8> {
        pack_block(&self.mem, &self.blocks[i])
    }
}

impl Out<'_> {
    fn pack(&self, i: usize) -> Vec<u8> {
        pack_block(self.mem, &self.blocks[i])
    }

    fn put(&mut self, i: usize, packed: &[u8]) {
        let b = &self.blocks[i];
        if b.count > 0 {
            op::unpack_into(&b.layout, b.count, packed, &mut self.mem[b.offset..]);
        }
    }
}

// ----- barrier and broadcast -----

/// MPI_Barrier: dissemination, ceil(log2 n) rounds of one empty message each way.
pub fn barrier(g: &mut Group) -> MpiResult<()> {
    if let Some(r) = hier::barrier(g) {
        return r;
    }
    let (n, r) = (g.size(), g.rank());
    let mut dist = 1;
    while dist < n {
        g.sendrecv((r + dist) % n, Vec::new(), (r + n - dist) % n, 0, tag::BARRIER)?;
        dist <<= 1;
    }
    Ok(())
}

/// Binomial-tree broadcast of `len` packed bytes held by `root` (in `data` there).
fn bcast_packed(g: &mut Group, data: &mut Vec<u8>, len: usize, root: usize, tag: i32) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let vr = (r + n - root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            *data = g.recv((vr - mask + root) % n, tag, len)?;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            g.send((vr + mask + root) % n, tag, data.clone());
        }
        mask >>= 1;
    }
    Ok(())
}

/// MPI_Bcast on `buf` (one block).
pub fn bcast(g: &mut Group, buf: &mut Out, root: usize) -> MpiResult<()> {
    if let Some(r) = hier::bcast(g, buf, root) {
        return r;
    }
    let len = buf.blocks[0].bytes();
    // Count 0 (the same on every rank): nothing to move.
    if g.size() == 1 || len == 0 {
        return Ok(());
    }
    let mut data = if g.rank() == root { buf.pack(0) } else { Vec::new() };
    match tune::get().bcast(len, g.size()) {
        tune::Bcast::Binomial => bcast_packed(g, &mut data, len, root, tag::BCAST)?,
        tune::Bcast::ScatterAllgather => bcast_scatter_allgather(g, &mut data, len, root, tag::BCAST)?,
    }
    if g.rank() != root {
        buf.put(0, &data);
    }
    Ok(())
}

/// Broadcast of `len` bytes (van de Geijn): the root scatters `n` pieces down a binomial
/// tree (each subtree gets its pieces in one message), then a ring allgather completes
/// every member's copy. Pieces are numbered relative to the root.
fn bcast_scatter_allgather(g: &mut Group, data: &mut Vec<u8>, len: usize, root: usize, tag: i32) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let vr = (r + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let piece = len.div_ceil(n);
    // Byte range of pieces lo..hi (relative numbers, clipped to the data).
    let bytes = |lo: usize, hi: usize| (lo * piece).min(len)..(hi * piece).min(len);
    data.resize(len, 0);
    // Scatter: a member receives pieces vr..vr + subtree size from its parent, then passes
    // each child its subtree's pieces.
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            let range = bytes(vr, vr + mask);
            if !range.is_empty() {
                let got = g.recv(real(vr - mask), tag, range.len())?;
                data[range.start..range.start + got.len()].copy_from_slice(&got);
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
                g.send(real(vr + mask), tag, data[range].to_vec());
            }
        }
        mask >>= 1;
    }
    // Ring allgather of the pieces: in step k, pass on piece vr - k, get piece vr - k - 1.
    let (left, right) = ((r + n - 1) % n, (r + 1) % n);
    for step in 0..n - 1 {
        let (s, t) = ((vr + n - step) % n, (vr + 2 * n - step - 1) % n);
        let (srange, rrange) = (bytes(s, s + 1), bytes(t, t + 1));
        let req = (!rrange.is_empty()).then(|| g.post_recv(left, tag + tag::PHASE_BCAST, rrange.len()));
        if !srange.is_empty() {
            g.send(right, tag + tag::PHASE_BCAST, data[srange].to_vec());
        }
        if let Some(q) = req {
            g.wait_all(&[q]);
            let got = g.take(q)?;
            data[rrange.start..rrange.start + got.len()].copy_from_slice(&got);
        }
    }
    Ok(())
}

// ----- reductions -----

/// MPI_Reduce. `send` is None for MPI_IN_PLACE at the root; `recv` matters at the root only.
pub fn reduce(g: &mut Group, send: Option<In>, mut recv: Option<Out>, red: &Reduction, root: usize) -> MpiResult<()> {
    if let Some(r) = hier::reduce(g, &send, &mut recv, red, root) {
        return r;
    }
    let block = match (&send, &recv) {
        (Some(s), _) => s.blocks[0].clone(),
        (None, Some(o)) => o.blocks[0].clone(),
        (None, None) => unreachable!("MPI_IN_PLACE without a receive buffer is rejected at the edge"),
    };
    if block.bytes() == 0 {
        return Ok(());
    }
    let v = Vecs::new(red, block.count, g.size());
    let mine = match (&send, &recv) {
        (Some(s), _) => v.input(&s.mem, &block),
        (_, Some(o)) => v.input(o.mem, &block),
        (None, None) => unreachable!(),
    };
    if let Some(result) = allreduce::reduce(g, mine, &v, root, tag::REDUCE)? {
        v.write(result, &mut recv.expect("the root has a receive buffer"));
    }
    Ok(())
}

/// MPI_Allreduce. `send` is None for MPI_IN_PLACE (the input is in `recv`).
pub fn allreduce(g: &mut Group, send: Option<In>, mut recv: Out, red: &Reduction) -> MpiResult<()> {
    if let Some(r) = hier::allreduce(g, &send, &mut recv, red) {
        return r;
    }
    let block = recv.blocks[0].clone();
    if block.bytes() == 0 {
        return Ok(());
    }
    let v = Vecs::new(red, block.count, g.size());
    let mine = match &send {
        Some(s) => v.input(&s.mem, &s.blocks[0]),
        None => v.input(recv.mem, &block),
    };
    let alg = tune::get().allreduce(block.bytes(), block.count, g.size(), red.is_commutative());
    let result = allreduce::allreduce(g, mine, &v, alg, tag::ALLREDUCE)?;
    v.write(result, &mut recv);
    Ok(())
}

/// Reduce of packed vectors among the members of `g` (the node leaders' step of coll::hier).
fn reduce_packed(g: &mut Group, mine: Vec<u8>, red: &Reduction, root: usize, tag: i32) -> MpiResult<Option<Vec<u8>>> {
    let v = Vecs::new(red, mine.len() / red.elem_size().max(1), g.size());
    Ok(allreduce::reduce(g, Acc::Dense(mine), &v, root, tag)?.map(|r| v.to_dense(&r)))
}

/// Allreduce of packed vectors among the members of `g` (the node leaders' step of coll::hier).
fn allreduce_packed(g: &mut Group, mine: Vec<u8>, red: &Reduction, tag: i32) -> MpiResult<Vec<u8>> {
    let count = mine.len() / red.elem_size().max(1);
    let v = Vecs::new(red, count, g.size());
    let alg = tune::get().allreduce(mine.len(), count, g.size(), red.is_commutative());
    Ok(v.to_dense(&allreduce::allreduce(g, Acc::Dense(mine), &v, alg, tag)?))
}

/// MPI_Reduce_scatter / MPI_Reduce_scatter_block: `counts[i]` elements go to member i;
/// `send` is None for MPI_IN_PLACE (the input vector is then in `recv.mem`, described by
/// `in_place`). Commutative operations use recursive halving or pairwise exchange;
/// non-commutative ones reduce the whole vector to rank 0 (in rank order), which sends each
/// member its piece.
pub fn reduce_scatter(
    g: &mut Group,
    send: Option<In>,
    in_place: Option<Block>,
    mut recv: Out,
    counts: &[usize],
    red: &Reduction,
) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let size = red.elem_size();
    let mine = match (&send, in_place) {
        (Some(s), _) => s.pack(0),
        (None, Some(b)) => pack_block(recv.mem, &b),
        (None, None) => unreachable!("in-place reduce-scatter without its input block"),
    };
    if mine.is_empty() {
        return Ok(());
    }
    let counts = &counts[..n];
    let tag = tag::REDUCE_SCATTER;
    let piece = match tune::get().reduce_scatter(mine.len(), red.is_commutative()) {
        _ if n == 1 => mine,
        tune::ReduceScatter::Halving => allreduce::reduce_scatter_halving(g, mine, red, counts, tag)?,
        tune::ReduceScatter::Pairwise => allreduce::reduce_scatter_pairwise(g, &mine, red, counts, tag)?,
        tune::ReduceScatter::ReduceThenScatter => {
            let v = Vecs::dense(red, mine.len() / size);
            let result = allreduce::reduce(g, sparse::Acc::Dense(mine), &v, 0, tag + tag::PHASE_REDUCE)?;
            if r == 0 {
                let Some(sparse::Acc::Dense(all)) = result else { unreachable!("rank 0 holds the dense reduction") };
                let mut start = 0;
                let mut own = Vec::new();
                for (i, &c) in counts.iter().enumerate() {
                    let part = all[start..start + c * size].to_vec();
                    start += c * size;
                    if i == 0 {
                        own = part;
                    } else if c > 0 {
                        g.send(i, tag + tag::PHASE_SCATTER, part);
                    }
                }
                own
            } else if counts[r] > 0 {
                g.recv(0, tag + tag::PHASE_SCATTER, counts[r] * size)?
            } else {
                Vec::new()
            }
        }
    };
    recv.put(0, &piece);
    Ok(())
}

/// MPI_Scan (inclusive) and MPI_Exscan (exclusive) by recursive doubling: `partial` covers an
/// aligned block of ranks that doubles every round; contributions from lower ranks are
/// folded in as first operands, so the order is kept. `send` is None for MPI_IN_PLACE.
pub fn scan(g: &mut Group, send: Option<In>, mut recv: Out, red: &Reduction, exclusive: bool) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let tag = if exclusive { tag::EXSCAN } else { tag::SCAN };
    let mut partial = match &send {
        Some(s) => s.pack(0),
        None => recv.pack(0),
    };
    let len = partial.len();
    if len == 0 {
        return Ok(());
    }
    let mut result = if exclusive { None } else { Some(partial.clone()) };
    let mut mask = 1;
    while mask < n {
        let dst = r ^ mask;
        if dst < n {
            let mut theirs = g.sendrecv(dst, partial.clone(), dst, len, tag)?;
            if dst < r {
                red.apply(&theirs, &mut partial);
                result = Some(match result {
                    Some(mut res) => {
                        red.apply(&theirs, &mut res);
                        res
                    }
                    None => theirs,
                });
            } else {
                red.apply(&partial, &mut theirs);
                partial = theirs;
            }
        }
        mask <<= 1;
    }
    // Exscan leaves rank 0's buffer as it was (its result is undefined).
    if let Some(res) = result {
        recv.put(0, &res);
    }
    Ok(())
}

// ----- gather, scatter, allgather, all-to-all -----

/// MPI_Gather(v): linear; the root posts every receive at once. `send` is None for
/// MPI_IN_PLACE at the root; `recv` (one block per member) matters at the root only.
pub fn gather(g: &mut Group, send: Option<In>, recv: Option<Out>, root: usize) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    if r != root {
        let data = send.expect("non-root members send").pack(0);
        if !data.is_empty() {
            g.send(root, tag::GATHER, data);
        }
        return Ok(());
    }
    let mut out = recv.expect("the root has a receive buffer");
    let reqs: Vec<(usize, u32)> = (0..n)
        .filter(|&i| i != root && out.blocks[i].bytes() > 0)
        .map(|i| (i, g.post_recv(i, tag::GATHER, out.blocks[i].bytes())))
        .collect();
    if let Some(s) = send {
        out.put(root, &s.pack(0));
    }
    let ids: Vec<u32> = reqs.iter().map(|&(_, q)| q).collect();
    g.wait_all(&ids);
    for (i, q) in reqs {
        let data = g.take(q)?;
        out.put(i, &data);
    }
    Ok(())
}

/// MPI_Scatter(v): linear. `send` (one block per member) matters at the root only; `recv` is
/// None for MPI_IN_PLACE at the root.
pub fn scatter(g: &mut Group, send: Option<In>, recv: Option<Out>, root: usize) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    if r != root {
        let mut out = recv.expect("non-root members receive");
        if out.blocks[0].bytes() == 0 {
            return Ok(());
        }
        let data = g.recv(root, tag::SCATTER, out.blocks[0].bytes())?;
        out.put(0, &data);
        return Ok(());
    }
    let s = send.expect("the root has a send buffer");
    for i in (root + 1..n).chain(0..root) {
        if s.blocks[i].bytes() > 0 {
            g.send(i, tag::SCATTER, s.pack(i));
        }
    }
    if let Some(mut out) = recv {
        out.put(0, &s.pack(root));
    }
    Ok(())
}

/// MPI_Gather (every member's block has the same size): binomial tree for small totals,
/// else as `gather`.
pub fn gather_uniform(g: &mut Group, send: Option<In>, recv: Option<Out>, root: usize) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let block = match (&send, &recv) {
        (Some(s), _) => s.blocks[0].bytes(),
        (None, Some(o)) => o.blocks[root].bytes(),
        (None, None) => unreachable!("a gather member without buffers"),
    };
    if n == 1 || block == 0 || tune::get().rooted(block * n, true) == tune::Rooted::Linear {
        return gather(g, send, recv, root);
    }
    // Relative rank vr holds the blocks of vr..vr + (subtree size), in that order: its own,
    // then each child's subtree (children vr + 1, vr + 2, vr + 4, ... below its lowest set bit).
    let vr = (r + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let mut buf = match (&send, &recv) {
        (Some(s), _) => s.pack(0),
        (None, Some(o)) => o.pack(root),
        (None, None) => unreachable!(),
    };
    let mut children = Vec::new();
    let mut mask = 1;
    while mask < n && vr & mask == 0 {
        if vr + mask < n {
            let blocks = mask.min(n - vr - mask);
            children.push(g.post_recv(real(vr + mask), tag::GATHER, blocks * block));
        }
        mask <<= 1;
    }
    for q in children {
        g.wait_all(&[q]);
        let got = g.take(q)?;
        buf.extend_from_slice(&got);
    }
    if vr != 0 {
        g.send(real(vr - mask), tag::GATHER, buf);
        return Ok(());
    }
    if buf.len() != n * block {
        return err(MPI_ERR_TRUNCATE, "gather: members sent blocks of different sizes (counts or types differ)");
    }
    let mut out = recv.expect("the root has a receive buffer");
    for (v, piece) in buf.chunks_exact(block).enumerate() {
        if v != 0 || send.is_some() {
            out.put(real(v), piece);
        }
    }
    Ok(())
}

/// MPI_Scatter (every member's block has the same size): binomial tree for small totals,
/// else as `scatter`.
pub fn scatter_uniform(g: &mut Group, send: Option<In>, recv: Option<Out>, root: usize) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let block = match (&send, &recv) {
        (Some(s), _) => s.blocks[root].bytes(),
        (None, Some(o)) => o.blocks[0].bytes(),
        (None, None) => unreachable!("a scatter member without buffers"),
    };
    if n == 1 || block == 0 || tune::get().rooted(block * n, true) == tune::Rooted::Linear {
        return scatter(g, send, recv, root);
    }
    // Relative rank vr gets the blocks of its subtree (vr..vr + size) from its parent, then
    // hands each child (vr + 2^k, largest first) the child's subtree.
    let vr = (r + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let mut mask = 1;
    let buf = if vr == 0 {
        let s = send.as_ref().expect("the root has a send buffer");
        while mask < n {
            mask <<= 1;
        }
        (0..n).flat_map(|v| s.pack(real(v))).collect()
    } else {
        while vr & mask == 0 {
            mask <<= 1;
        }
        let blocks = mask.min(n - vr);
        let got = g.recv(real(vr - mask), tag::SCATTER, blocks * block)?;
        if got.len() != blocks * block {
            return err(MPI_ERR_TRUNCATE, "scatter: the root sent blocks of another size (counts or types differ)");
        }
        got
    };
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            let blocks = mask.min(n - vr - mask);
            g.send(real(vr + mask), tag::SCATTER, buf[mask * block..(mask + blocks) * block].to_vec());
        }
        mask >>= 1;
    }
    if let Some(mut out) = recv {
        out.put(0, &buf[..block]);
    }
    Ok(())
}

/// MPI_Allgather(v): ring, recursive doubling (power-of-two sizes) or Bruck, by size. `send`
/// is None for MPI_IN_PLACE (the own block is already in place in `recv`). Every member knows
/// every block's size (allgatherv's counts are the same everywhere), so all agree.
pub fn allgather(g: &mut Group, send: Option<In>, mut recv: Out) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    // Counts are known to every rank: with nothing to move, return at once.
    if recv.blocks.iter().all(|b| b.bytes() == 0) {
        return Ok(());
    }
    let mine = match send {
        Some(s) => {
            let d = s.pack(0);
            recv.put(r, &d);
            d
        }
        None => recv.pack(r),
    };
    let total: usize = recv.blocks.iter().map(Block::bytes).sum();
    match tune::get().allgather(total, n) {
        tune::Allgather::Ring => allgather_ring(g, mine, &mut recv),
        tune::Allgather::RecursiveDoubling if n.is_power_of_two() => allgather_recursive_doubling(g, mine, &mut recv),
        _ => allgather_bruck(g, mine, &mut recv),
    }
}

/// Ring allgather: in step k each member forwards the block it got in step k - 1.
fn allgather_ring(g: &mut Group, mut current: Vec<u8>, recv: &mut Out) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let (left, right) = ((r + n - 1) % n, (r + 1) % n);
    for step in 0..n.saturating_sub(1) {
        let from = (r + n - step - 1) % n;
        let (sent, len) = ((r + n - step) % n, recv.blocks[from].bytes());
        let req = (len > 0).then(|| g.post_recv(left, tag::ALLGATHER, len));
        if recv.blocks[sent].bytes() > 0 {
            g.send(right, tag::ALLGATHER, current);
        }
        current = match req {
            Some(q) => {
                g.wait_all(&[q]);
                let got = g.take(q)?;
                recv.put(from, &got);
                got
            }
            None => Vec::new(),
        };
    }
    Ok(())
}

/// Byte offsets of the packed blocks of `recv` laid end to end (one more entry: the total).
fn offsets(recv: &Out) -> Vec<usize> {
    std::iter::once(0)
        .chain(recv.blocks.iter().scan(0, |at, b| {
            *at += b.bytes();
            Some(*at)
        }))
        .collect()
}

/// Recursive-doubling allgather (power-of-two sizes): in round k members 2^k apart swap
/// everything they have, an aligned run of 2^k blocks.
fn allgather_recursive_doubling(g: &mut Group, mine: Vec<u8>, recv: &mut Out) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let off = offsets(recv);
    let mut all = vec![0u8; off[n]];
    all[off[r]..off[r + 1]].copy_from_slice(&mine);
    let mut mask = 1;
    while mask < n {
        let dst = r ^ mask;
        let (base, dbase) = (r & !(mask - 1), dst & !(mask - 1));
        let data = all[off[base]..off[base + mask]].to_vec();
        let got = g.sendrecv(dst, data, dst, off[dbase + mask] - off[dbase], tag::ALLGATHER)?;
        let at = off[dbase];
        all[at..at + got.len()].copy_from_slice(&got);
        mask <<= 1;
    }
    for i in (0..n).filter(|&i| i != r) {
        recv.put(i, &all[off[i]..off[i + 1]]);
    }
    Ok(())
}

/// Bruck allgather (any size, ceil(log2 n) rounds): a member holds the blocks r, r + 1, ...
/// in that order; in the round with distance d it sends its first min(d, n - d) blocks to
/// r - d and appends the same number from r + d.
fn allgather_bruck(g: &mut Group, mine: Vec<u8>, recv: &mut Out) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let size = |j: usize| recv.blocks[(r + j) % n].bytes();
    // ends[j]: end of relative block j in `buf`.
    let mut buf = mine;
    let mut ends = vec![buf.len()];
    let mut dist = 1;
    while dist < n {
        let cnt = dist.min(n - dist);
        let (dst, src) = ((r + n - dist) % n, (r + dist) % n);
        let len: usize = (dist..dist + cnt).map(size).sum();
        let got = g.sendrecv(dst, buf[..ends[cnt - 1]].to_vec(), src, len, tag::ALLGATHER)?;
        buf.extend_from_slice(&got);
        for j in dist..dist + cnt {
            ends.push(ends[j - 1] + size(j));
        }
        dist <<= 1;
    }
    for j in 1..n {
        recv.put((r + j) % n, &buf[ends[j - 1]..ends[j]]);
    }
    Ok(())
}

/// MPI_Alltoall(v,w): every receive posted then every send started (small blocks), or
/// pairwise exchange (large blocks). Members may choose differently (each pair exchanges one
/// message each way either way). `send` is None for MPI_IN_PLACE (what goes to member i is
/// then block i of `recv`).
pub fn alltoall(g: &mut Group, send: Option<In>, recv: Out) -> MpiResult<()> {
    alltoall_with(g, send, recv, false)
}

/// MPI_Alltoall (every block the same size on every member): Bruck's algorithm for small
/// blocks on many members, else as `alltoall`.
pub fn alltoall_uniform(g: &mut Group, send: Option<In>, recv: Out) -> MpiResult<()> {
    alltoall_with(g, send, recv, true)
}

fn alltoall_with(g: &mut Group, send: Option<In>, mut recv: Out, uniform: bool) -> MpiResult<()> {
    let n = g.size();
    let outgoing: Vec<Vec<u8>> = match &send {
        Some(s) => (0..n).map(|i| s.pack(i)).collect(),
        None => (0..n).map(|i| recv.pack(i)).collect(),
    };
    let block = recv.blocks.iter().map(Block::bytes).max().unwrap_or(0);
    match tune::get().alltoall(block, n, uniform) {
        tune::Alltoall::Bruck if n > 1 && block > 0 => alltoall_bruck(g, outgoing, &mut recv, block),
        tune::Alltoall::Pairwise => alltoall_pairwise(g, outgoing, &mut recv),
        _ => alltoall_post(g, outgoing, &mut recv),
    }
}

/// Every receive posted, then every send started (beginning with the next rank up, to spread
/// the load), then one wait.
fn alltoall_post(g: &mut Group, mut outgoing: Vec<Vec<u8>>, recv: &mut Out) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let order: Vec<usize> = (1..n).map(|k| (r + k) % n).collect();
    let reqs: Vec<(usize, u32)> = order
        .iter()
        .rev()
        .filter(|&&i| recv.blocks[i].bytes() > 0)
        .map(|&i| (i, g.post_recv(i, tag::ALLTOALL, recv.blocks[i].bytes())))
        .collect();
    for &i in &order {
        let data = std::mem::take(&mut outgoing[i]);
        if !data.is_empty() {
            g.send(i, tag::ALLTOALL, data);
        }
    }
    recv.put(r, &outgoing[r]);
    let ids: Vec<u32> = reqs.iter().map(|&(_, q)| q).collect();
    g.wait_all(&ids);
    for (i, q) in reqs {
        let data = g.take(q)?;
        recv.put(i, &data);
    }
    Ok(())
}

/// Pairwise exchange: in step i a member sends to r + i and receives from r - i (partners
/// r ^ i on power-of-two sizes), one transfer each way in flight.
fn alltoall_pairwise(g: &mut Group, mut outgoing: Vec<Vec<u8>>, recv: &mut Out) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    recv.put(r, &outgoing[r]);
    for i in 1..n {
        let (dst, src) = if n.is_power_of_two() { (r ^ i, r ^ i) } else { ((r + i) % n, (r + n - i) % n) };
        let len = recv.blocks[src].bytes();
        let req = (len > 0).then(|| g.post_recv(src, tag::ALLTOALL, len));
        let data = std::mem::take(&mut outgoing[dst]);
        if !data.is_empty() {
            g.send(dst, tag::ALLTOALL, data);
        }
        if let Some(q) = req {
            g.wait_all(&[q]);
            let got = g.take(q)?;
            recv.put(src, &got);
        }
    }
    Ok(())
}

/// Bruck all-to-all (blocks of `block` bytes everywhere, ceil(log2 n) rounds): blocks are
/// rotated so that slot i holds the block for r + i; in the round for bit k every slot with
/// bit k set goes, in one message, to r + 2^k (and arrives from r - 2^k); slot i finally
/// holds the block from r - i.
fn alltoall_bruck(g: &mut Group, outgoing: Vec<Vec<u8>>, recv: &mut Out, block: usize) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    if outgoing.iter().any(|b| b.len() != block) || recv.blocks.iter().any(|b| b.bytes() != block) {
        return err(MPI_ERR_TRUNCATE, "alltoall: blocks of different sizes (counts or types differ between ranks)");
    }
    let mut slots: Vec<Vec<u8>> = (0..n).map(|i| outgoing[(r + i) % n].clone()).collect();
    let mut bit = 1;
    while bit < n {
        let which: Vec<usize> = (0..n).filter(|i| i & bit != 0).collect();
        let data: Vec<u8> = which.iter().flat_map(|&i| slots[i].iter().copied()).collect();
        let got = g.sendrecv((r + bit) % n, data, (r + n - bit) % n, which.len() * block, tag::ALLTOALL)?;
        if got.len() != which.len() * block {
            return err(MPI_ERR_TRUNCATE, "alltoall: a rank sent a different amount of data (counts differ)");
        }
        for (k, &i) in which.iter().enumerate() {
            slots[i] = got[k * block..(k + 1) * block].to_vec();
        }
        bit <<= 1;
    }
    for (i, s) in slots.iter().enumerate() {
        recv.put((r + n - i) % n, s);
    }
    Ok(())
}

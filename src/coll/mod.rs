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
//! Algorithms: dissemination barrier; binomial-tree broadcast and reduce (reduce in rank order
//! for non-commutative operations); allreduce by recursive doubling (non-power-of-two sizes
//! fold the extra ranks in first) or, for large vectors, reduce + broadcast; ring allgather;
//! linear gather/scatter; all-to-all by posting every receive and send at once;
//! reduce-scatter as reduce + scatter; scan/exscan by recursive doubling.

use crate::abi::consts::*;
use crate::comm::Comm;
use crate::datatype::Layout;
use crate::error::{MpiResult, err};
use crate::op::{self, Reduction};
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::{Op, SendMode};
use crate::p2p::{Engine, Envelope};

pub mod hier;
pub mod inter;
pub mod neighbor;
pub mod sched;
pub mod shm;

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
    /// Phase offsets within a kind.
    pub const PHASE_REDUCE: i32 = 1;
    pub const PHASE_BCAST: i32 = 2;
    pub const PHASE_SCATTER: i32 = 3;
    pub const PHASE_ROOT: i32 = 4;
}

/// Above this many bytes allreduce uses reduce + broadcast (fewer bytes on the wire per rank
/// than recursive doubling, which sends the whole vector log2(n) times).
const ALLREDUCE_LARGE: usize = 64 * 1024;

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
    bcast_packed(g, &mut data, len, root, tag::BCAST)?;
    if g.rank() != root {
        buf.put(0, &data);
    }
    Ok(())
}

// ----- reductions -----

/// Binomial-tree reduction of every member's `acc` to `root`; returns the result at `root`.
/// Each step combines a lower-ranked partial result (as the first operand) with the next
/// higher one, so non-commutative operations see rank order; for them the tree is rooted at
/// rank 0 and the result forwarded to `root`.
fn reduce_packed(
    g: &mut Group,
    mut acc: Vec<u8>,
    red: &Reduction,
    root: usize,
    tag: i32,
) -> MpiResult<Option<Vec<u8>>> {
    let (n, r) = (g.size(), g.rank());
    let len = acc.len();
    let tree_root = if red.is_commutative() { root } else { 0 };
    let vr = (r + n - tree_root) % n;
    let real = |v: usize| (v + tree_root) % n;
    // Children are vr + 2^k for every 2^k below vr's lowest set bit; post all their receives.
    let mut children = Vec::new();
    let mut mask = 1;
    while mask < n && vr & mask == 0 {
        if vr + mask < n {
            children.push(g.post_recv(real(vr + mask), tag, len));
        }
        mask <<= 1;
    }
    for req in children {
        g.wait_all(&[req]);
        let mut higher = g.take(req)?;
        red.apply(&acc, &mut higher);
        acc = higher;
    }
    if vr != 0 {
        g.send(real(vr - mask), tag, acc);
        if r == root {
            // Non-commutative op with root != 0: rank 0 forwards the result.
            return g.recv(0, tag + tag::PHASE_ROOT, len).map(Some);
        }
        return Ok(None);
    }
    if r == root {
        return Ok(Some(acc));
    }
    g.send(root, tag + tag::PHASE_ROOT, acc);
    Ok(None)
}

/// MPI_Reduce. `send` is None for MPI_IN_PLACE at the root; `recv` matters at the root only.
pub fn reduce(g: &mut Group, send: Option<In>, mut recv: Option<Out>, red: &Reduction, root: usize) -> MpiResult<()> {
    if let Some(r) = hier::reduce(g, &send, &mut recv, red, root) {
        return r;
    }
    let mine = match (&send, &recv) {
        (Some(s), _) => s.pack(0),
        (None, Some(o)) => o.pack(0),
        (None, None) => unreachable!("MPI_IN_PLACE without a receive buffer is rejected at the edge"),
    };
    if mine.is_empty() {
        return Ok(());
    }
    if let Some(result) = reduce_packed(g, mine, red, root, tag::REDUCE)? {
        recv.expect("the root has a receive buffer").put(0, &result);
    }
    Ok(())
}

/// Allreduce of packed vectors: every member gets the combination in rank order.
fn allreduce_packed(g: &mut Group, mut acc: Vec<u8>, red: &Reduction, tag: i32) -> MpiResult<Vec<u8>> {
    let (n, r) = (g.size(), g.rank());
    let len = acc.len();
    if n == 1 {
        return Ok(acc);
    }
    if len > ALLREDUCE_LARGE {
        let mut result = reduce_packed(g, acc, red, 0, tag + tag::PHASE_REDUCE)?.unwrap_or_default();
        bcast_packed(g, &mut result, len, 0, tag + tag::PHASE_BCAST)?;
        return Ok(result);
    }
    // Recursive doubling over the largest power of two `pof2` <= n: among the first 2 * rem
    // ranks, each even rank hands its vector to the odd rank above it and sits out. The
    // remaining ranks, renumbered in rank order, exchange with partners 1, 2, 4, ... apart.
    let pof2 = 1 << (usize::BITS - 1 - n.leading_zeros());
    let rem = n - pof2;
    let newrank = if r < 2 * rem {
        if r % 2 == 0 {
            g.send(r + 1, tag, std::mem::take(&mut acc));
            None
        } else {
            let lower = g.recv(r - 1, tag, len)?;
            red.apply(&lower, &mut acc);
            Some(r / 2)
        }
    } else {
        Some(r - rem)
    };
    match newrank {
        Some(nr) => {
            let mut mask = 1;
            while mask < pof2 {
                let partner = nr ^ mask;
                let dst = if partner < rem { partner * 2 + 1 } else { partner + rem };
                let mut theirs = g.sendrecv(dst, acc.clone(), dst, len, tag)?;
                if dst < r {
                    red.apply(&theirs, &mut acc);
                } else {
                    red.apply(&acc, &mut theirs);
                    acc = theirs;
                }
                mask <<= 1;
            }
            if r < 2 * rem {
                g.send(r - 1, tag, acc.clone());
            }
            Ok(acc)
        }
        None => g.recv(r + 1, tag, len),
    }
}

/// MPI_Allreduce. `send` is None for MPI_IN_PLACE (the input is in `recv`).
pub fn allreduce(g: &mut Group, send: Option<In>, mut recv: Out, red: &Reduction) -> MpiResult<()> {
    if let Some(r) = hier::allreduce(g, &send, &mut recv, red) {
        return r;
    }
    let mine = match &send {
        Some(s) => s.pack(0),
        None => recv.pack(0),
    };
    if mine.is_empty() {
        return Ok(());
    }
    let result = allreduce_packed(g, mine, red, tag::ALLREDUCE)?;
    recv.put(0, &result);
    Ok(())
}

/// MPI_Reduce_scatter / MPI_Reduce_scatter_block: reduce the whole vector to rank 0 (in rank
/// order), which sends each member its piece. `counts[i]` elements go to member i; `send` is
/// None for MPI_IN_PLACE (the input vector is then in `recv.mem`, described by `in_place`).
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
    let result = reduce_packed(g, mine, red, 0, tag::REDUCE_SCATTER + tag::PHASE_REDUCE)?;
    let piece = if r == 0 {
        let all = result.expect("rank 0 holds the reduction");
        let mut start = 0;
        let mut own = Vec::new();
        for (i, &c) in counts.iter().enumerate().take(n) {
            let part = all[start..start + c * size].to_vec();
            start += c * size;
            if i == 0 {
                own = part;
            } else if c > 0 {
                g.send(i, tag::REDUCE_SCATTER + tag::PHASE_SCATTER, part);
            }
        }
        own
    } else if counts[r] > 0 {
        g.recv(0, tag::REDUCE_SCATTER + tag::PHASE_SCATTER, counts[r] * size)?
    } else {
        Vec::new()
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

/// MPI_Allgather(v): ring; in step k each member forwards the block it got in step k - 1.
/// `send` is None for MPI_IN_PLACE (the own block is already in place in `recv`).
pub fn allgather(g: &mut Group, send: Option<In>, mut recv: Out) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    // Counts are known to every rank: with nothing to move, return at once.
    if recv.blocks.iter().all(|b| b.bytes() == 0) {
        return Ok(());
    }
    let mut current = match send {
        Some(s) => {
            let d = s.pack(0);
            recv.put(r, &d);
            d
        }
        None => recv.pack(r),
    };
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

/// MPI_Alltoall(v,w): every receive posted, then every send started (beginning with the
/// next rank up, to spread the load), then one wait. `send` is None for MPI_IN_PLACE (what
/// goes to member i is then block i of `recv`).
pub fn alltoall(g: &mut Group, send: Option<In>, mut recv: Out) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let outgoing: Vec<Vec<u8>> = match &send {
        Some(s) => (0..n).map(|i| s.pack(i)).collect(),
        None => (0..n).map(|i| recv.pack(i)).collect(),
    };
    let order: Vec<usize> = (1..n).map(|k| (r + k) % n).collect();
    let reqs: Vec<(usize, u32)> = order
        .iter()
        .rev()
        .filter(|&&i| recv.blocks[i].bytes() > 0)
        .map(|&i| (i, g.post_recv(i, tag::ALLTOALL, recv.blocks[i].bytes())))
        .collect();
    let mut outgoing = outgoing;
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

//! Blocking collectives on intracommunicators, built on the point-to-point engine.
//!
//! All traffic goes on the communicator's internal context (`Comm::coll_ctx`) with a tag per
//! collective kind and phase, so it never matches user messages. Data travels packed (the
//! datatype's bytes without padding). Bcast, gather, scatter, allgather, all-to-all and
//! reduce-scatter move data straight between the user's buffers (`In`/`Out` block lists):
//! sends read the user's blocks (a rendezvous receiver copies them with one single-copy read;
//! the engine packs non-contiguous data itself) and are waited for before the call returns,
//! receives land in the user's blocks; only algorithms that forward, reorder or combine data
//! stage it, in scratch buffers kept between calls (`scratch`). The reductions' own paths
//! (`allreduce`, `sparse`) send library-owned packed copies released as soon as they are
//! started. A collective with nothing to move returns at once (every rank knows that from its
//! own counts). Message order between two ranks is FIFO per tag, which keeps rounds and
//! consecutive collectives apart without per-round tags.
//!
//! Algorithms (chosen per call by `tune`, by communicator and message size; every choice and
//! threshold has an `OXMPI_*` override): dissemination barrier; broadcast by binomial tree or,
//! for large messages, binomial scatter + ring allgather; binomial reduce (rank order kept
//! for non-commutative operations); allreduce by recursive doubling, Rabenseifner, ring or
//! reduce + broadcast (`allreduce`), sparse-aware for predefined operations (`sparse`);
//! allgather(v) by ring, recursive doubling, Bruck or, for small totals on up to 8 members,
//! directly (every block to every member in one round); all-to-all by posting everything,
//! pairwise exchange, or Bruck (uniform blocks, from 16 members); reduce-scatter directly
//! (small totals, any operation, combined in rank order), by recursive halving or pairwise
//! exchange (commutative operations) or reduce + scatter; gather/scatter linear or, for small
//! totals on 4 members or more, by binomial tree; scan/exscan by recursive doubling.
//!
//! When ranks outnumber cores a rank runs only part of the time, and every wait for a peer
//! that is not running costs a scheduling round. So the small-message algorithms are the
//! one-round ones (a member needs to run about once per call), messages that already wait in
//! a ring are taken at once without a request (`Group::recv_now`), and a scatter's small sends
//! to a full ring are copied and left to complete on their own (`Group::send_block`), so the
//! root runs ahead of a descheduled receiver instead of waiting for it. Gather and scatter
//! blocks above the eager limit travel as eager pieces then (`Group::send_rooted`, up to
//! `OXMPI_COLL_PIECE_MAX` for all members together): a rendezvous needs the sender, then the
//! receiver, then the sender again to run, each a scheduling round, while pieces copied into
//! the receiver's ring let the sender move on (np 4 and 8 on 2 cores, 16-64 KiB blocks: 3-20x
//! faster). The symmetric exchanges (allgather, all-to-all) gained nothing from pieces: there
//! every member runs every call anyway.

use crate::abi::consts::*;
use crate::comm::Comm;
use crate::datatype::{BYTE, Layout};
use crate::error::{MpiResult, err};
use crate::op::{self, Reduction};
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::{Op, SendMode};
use crate::p2p::{Engine, Envelope};

mod allreduce;
mod blocks;
pub mod hier;
pub mod inter;
pub mod neighbor;
pub mod sched;
pub mod shm;
pub mod sparse;
pub mod tune;

pub use blocks::Blocks;
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

/// Runs `f` as a collective over the members of communicator `comm` (the library's own
/// collective steps: window creation, file opening).
pub fn on_comm<R>(comm: crate::abi::types::MPI_Comm, f: impl FnOnce(&mut Group) -> MpiResult<R>) -> MpiResult<R> {
    crate::runtime::with(|rt| {
        let c = rt.comms.get(comm)?;
        let mut g = Group::new(&mut rt.engine, c);
        f(&mut g)
    })
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

    /// Starts a send of `data` to member `to`; returns the request.
    fn isend_owned(&mut self, to: usize, tag: i32, data: Vec<u8>) -> u32 {
        let env = Envelope { ctx: self.ctx, src: self.rank as i32, tag };
        self.engine.isend(self.members[to], env, SendBuf::owned(data), SendMode::Standard, MPI_COMM_NULL)
    }

    /// Starts a send of `data` to member `to` and lets it complete on its own.
    fn send(&mut self, to: usize, tag: i32, data: Vec<u8>) {
        let req = self.isend_owned(to, tag, data);
        self.engine.free_request(req);
    }

    /// Waits for send `req` and frees it.
    fn finish_send(&mut self, req: u32) {
        self.wait_all(&[req]);
        self.engine.free_request(req);
    }

    /// Sends `data` to member `to` towards the root of a tree, where the receiver takes it
    /// without first waiting on this rank (its parent, or the root it reports to). A message
    /// past the eager limit is waited for: detached, a rank that runs ahead (the members of a
    /// reduce in a loop) held one message-sized buffer per call, each fresh memory to fault in
    /// (np 2, 1 MiB with a user operation: about 260 faults per call, most of the member's
    /// time); waiting, it reuses one buffer and helps copy the message.
    fn send_up(&mut self, to: usize, tag: i32, data: Vec<u8>) {
        if data.len() > self.engine.eager_limit() {
            let req = self.isend_owned(to, tag, data);
            self.finish_send(req);
        } else {
            self.send(to, tag, data);
        }
    }

    /// `send_up` of block `b` of the user's memory `mem`, sent in place (waited for).
    fn send_block_up(&mut self, to: usize, tag: i32, mem: &[u8], b: &Block) {
        // SAFETY: `mem` holds the block and stays borrowed, unchanged, until the wait below.
        let req = unsafe { self.isend_block(to, tag, mem.as_ptr(), b) };
        self.finish_send(req);
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
        check_truncation(&r.status)?;
        let mut v = buf.into_owned();
        v.truncate(r.status.bytes);
        Ok(v)
    }

    /// Starts a send of block `b` of the memory at `mem` straight from that memory (the engine
    /// packs or gathers non-contiguous data itself); returns the request (`finish_sends`).
    ///
    /// # Safety
    /// `mem` holds the block, unchanged until the request completes.
    unsafe fn isend_block(&mut self, to: usize, tag: i32, mem: *const u8, b: &Block) -> u32 {
        // SAFETY: caller contract.
        let buf = unsafe { SendBuf::new(b.base(mem), b.layout.clone(), b.count) };
        let env = Envelope { ctx: self.ctx, src: self.rank as i32, tag };
        self.engine.isend(self.members[to], env, buf, SendMode::Standard, MPI_COMM_NULL)
    }

    /// Sends block `b` of the memory at `mem` without holding the call for it when the block
    /// is small and ranks outnumber cores (`tune::Tuning::detach_limit`): it goes into the
    /// peer's ring now, or else a copy is queued and completes on its own. Other blocks are
    /// sent in place and listed in `sends` (`finish_sends`). For senders to many receivers
    /// (scatter's root and inner nodes): one receiver that is descheduled with a full ring then
    /// holds up neither the others nor the sender's return. Where the receiver is the
    /// bottleneck (gather towards the root, the symmetric exchanges), a sender that runs ahead
    /// only spends on copies the core that receiver needs (gather at np 4 took 1.2-1.5x longer
    /// with detached sends), so those wait as before.
    ///
    /// # Safety
    /// As `isend_block`.
    unsafe fn send_block(&mut self, to: usize, tag: i32, mem: *const u8, b: &Block, sends: &mut Vec<u32>) {
        let len = b.bytes();
        if len > tune::get().detach_limit(self.engine.ranks_outnumber_cores()) {
            // SAFETY: caller contract.
            sends.push(unsafe { self.isend_block(to, tag, mem, b) });
            return;
        }
        let env = Envelope { ctx: self.ctx, src: self.rank as i32, tag };
        let dst = self.members[to];
        let data = match b.layout.contiguous_at() {
            Some(at) => {
                // SAFETY: caller contract: the block's `len` bytes lie from its base + `at`.
                let bytes = unsafe { std::slice::from_raw_parts(b.base(mem).wrapping_offset(at), len) };
                if self.engine.try_send_eager_now(dst, env, bytes) {
                    return;
                }
                bytes.to_vec()
            }
            // SAFETY: caller contract.
            None => unsafe { b.layout.pack_to_vec(b.base(mem), b.count, 0..len) },
        };
        let req = self.engine.isend(dst, env, SendBuf::owned(data), SendMode::Standard, MPI_COMM_NULL);
        self.engine.free_request(req);
    }

    /// Starts a send of the `len` bytes at `data`; returns the request (`finish_sends`).
    ///
    /// # Safety
    /// As `isend_block`.
    unsafe fn isend_bytes(&mut self, to: usize, tag: i32, data: *const u8, len: usize) -> u32 {
        // SAFETY: caller contract.
        unsafe { self.isend_block(to, tag, data, &Block::bytes_at(0, len)) }
    }

    /// Posts a receive of block `b` of the memory at `mem`, straight into it; returns the
    /// request (`finish_recvs`).
    ///
    /// # Safety
    /// `mem` holds the block, writable and otherwise untouched until the request completes.
    unsafe fn irecv_block(&mut self, from: usize, tag: i32, mem: *mut u8, b: &Block) -> u32 {
        // SAFETY: caller contract.
        let buf = unsafe { RecvBuf::new(b.base(mem) as *mut u8, b.layout.clone(), b.count) };
        self.engine.irecv(Envelope { ctx: self.ctx, src: from as i32, tag }, buf, MPI_COMM_NULL)
    }

    /// Takes the message for block `b` of the memory at `mem` from member `from` now, when it
    /// already waits at the head of that member's ring and nothing may match before it (see
    /// `Engine::try_recv_eager_now`); returns whether it did. A member that was descheduled
    /// finds most of its messages there, and copies them without a request.
    ///
    /// # Safety
    /// As `irecv_block`.
    unsafe fn recv_now(&mut self, from: usize, tag: i32, mem: *mut u8, b: &Block) -> bool {
        let Some(at) = b.layout.contiguous_at() else { return false };
        let len = b.bytes();
        // SAFETY: caller contract: the block's `len` bytes lie from its base + `at`, ours.
        let dst = unsafe { std::slice::from_raw_parts_mut(b.base(mem).wrapping_offset(at) as *mut u8, len) };
        let env = Envelope { ctx: self.ctx, src: from as i32, tag };
        self.engine.try_recv_eager_now(self.members[from], env, dst).is_some()
    }

    /// Receives each part `(member, block of the memory at mem)`: those whose messages are
    /// there already now (`recv_now`), the others by posted receives, returned
    /// (`finish_recvs`). Every part is tried before any is posted, since the fast path needs
    /// an empty posted queue; nothing is allocated when all were there.
    ///
    /// # Safety
    /// As `irecv_block`, for every part; the parts do not overlap.
    unsafe fn recv_each<'b>(
        &mut self,
        parts: impl Iterator<Item = (usize, &'b Block)> + Clone,
        tag: i32,
        mem: *mut u8,
    ) -> Vec<u32> {
        // Indices of the parts still to receive, then their requests in their place.
        let mut late: Vec<u32> = Vec::new();
        for (k, (from, b)) in parts.clone().enumerate() {
            // SAFETY: caller contract.
            if b.bytes() > 0 && !unsafe { self.recv_now(from, tag, mem, b) } {
                late.push(k as u32);
            }
        }
        let mut next = 0;
        for (k, (from, b)) in parts.enumerate() {
            if next == late.len() {
                break;
            }
            if late[next] == k as u32 {
                // SAFETY: caller contract.
                late[next] = unsafe { self.irecv_block(from, tag, mem, b) };
                next += 1;
            }
        }
        late
    }

    /// Receives block `b` of the memory at `mem` from member `from` (`recv_now`, else a posted
    /// receive waited for).
    ///
    /// # Safety
    /// As `irecv_block`.
    unsafe fn recv_one(&mut self, from: usize, tag: i32, mem: *mut u8, b: &Block) -> MpiResult<()> {
        // SAFETY: caller contract.
        if b.bytes() == 0 || unsafe { self.recv_now(from, tag, mem, b) } {
            return Ok(());
        }
        // SAFETY: caller contract.
        let q = unsafe { self.irecv_block(from, tag, mem, b) };
        self.finish_recvs(&[q])
    }

    /// The piece size a gather or scatter block of `len` bytes travels in (`tune::Tuning::piece`).
    fn piece(&self, len: usize) -> Option<usize> {
        tune::get().piece(len, self.size(), self.engine.ranks_outnumber_cores(), self.engine.eager_limit())
    }

    /// Sends block `b` of the memory at `mem` to `to` as a gather or scatter block: in eager
    /// pieces where `piece` says so (each copied into the peer's ring now when it has room,
    /// else sent in place and listed in `sends`), otherwise as one message, detached when
    /// `detach` (`send_block`) or in place.
    ///
    /// # Safety
    /// As `isend_block`.
    unsafe fn send_rooted(
        &mut self,
        to: usize,
        tag: i32,
        mem: *const u8,
        b: &Block,
        detach: bool,
        sends: &mut Vec<u32>,
    ) {
        let len = b.bytes();
        let Some(piece) = self.piece(len) else {
            // SAFETY: caller contract.
            return unsafe {
                if detach {
                    self.send_block(to, tag, mem, b, sends)
                } else {
                    sends.push(self.isend_block(to, tag, mem, b))
                }
            };
        };
        let env = Envelope { ctx: self.ctx, src: self.rank as i32, tag };
        let dst = self.members[to];
        let Some(at) = b.layout.contiguous_at() else {
            // Rare: packed once, the pieces sent from the copy and left to complete.
            // SAFETY: caller contract.
            let packed = unsafe { b.layout.pack_to_vec(b.base(mem), b.count, 0..len) };
            for c in packed.chunks(piece) {
                self.send(to, tag, c.to_vec());
            }
            return;
        };
        let data = b.base(mem).wrapping_offset(at);
        // SAFETY: caller contract: the block's `len` bytes lie from `data`.
        let bytes = unsafe { std::slice::from_raw_parts(data, len) };
        let sent = self.engine.try_send_eager_pieces(dst, env, bytes.chunks(piece));
        for start in (sent * piece..len).step_by(piece) {
            // SAFETY: as above; the caller waits for `sends`.
            sends.push(unsafe { self.isend_bytes(to, tag, data.add(start), piece.min(len - start)) });
        }
    }

    /// Starts receiving each part `(member, memory, block of that memory)` of a gather or
    /// scatter: as one message, or as the pieces `send_rooted` sends (straight into the block
    /// when it is contiguous, else staged); messages already there are taken at once
    /// (`recv_now`), receives posted for the others. Finish with `finish_rooted`.
    ///
    /// # Safety
    /// As `irecv_block`, for every part; the parts do not overlap.
    unsafe fn start_rooted(&mut self, parts: &[(usize, *mut u8, Block)], tag: i32) -> Incoming {
        let mut inc = Incoming::default();
        // (member, memory, block, bytes it must bring or None).
        let mut pieces: Vec<(usize, *mut u8, Block, Option<usize>)> = Vec::new();
        let eager = self.engine.eager_limit();
        for (from, mem, b) in parts {
            let len = b.bytes();
            match self.piece(len) {
                _ if len == 0 => {}
                // A message above the eager limit whose sender used pieces would be short.
                None => pieces.push((*from, *mem, b.clone(), (len > eager).then_some(len))),
                Some(piece) => {
                    let (at, offset) = if b.is_contiguous() {
                        (*mem, b.offset)
                    } else {
                        let mut s = scratch(len);
                        let at = s.as_mut_ptr();
                        inc.staged.push((s, *mem, b.clone()));
                        (at, 0)
                    };
                    let mut start = 0;
                    while start < len {
                        let n = piece.min(len - start);
                        pieces.push((*from, at, Block::bytes_at(offset + start, n), Some(n)));
                        start += n;
                    }
                }
            }
        }
        // Every part is tried before any is posted: the fast path needs an empty posted queue.
        // Once a member's piece is not there, its later pieces are posted too: the missing
        // one may arrive meanwhile, and the fast path would take it for a later one.
        // SAFETY (both loops): caller contract; staging buffers are ours until finished.
        let mut late: Vec<usize> = Vec::new();
        pieces.retain(|(from, mem, b, _)| {
            let taken = !late.contains(from) && unsafe { self.recv_now(*from, tag, *mem, b) };
            if !taken {
                late.push(*from);
            }
            !taken
        });
        for (from, mem, b, len) in &pieces {
            inc.reqs.push((unsafe { self.irecv_block(*from, tag, *mem, b) }, *len));
        }
        inc
    }

    /// Receives block `b` of the memory at `mem` from `from` as a gather or scatter block (in
    /// pieces where `piece` says so, else as `recv_one`).
    ///
    /// # Safety
    /// As `irecv_block`.
    unsafe fn recv_rooted(&mut self, from: usize, tag: i32, mem: *mut u8, b: &Block) -> MpiResult<()> {
        if self.piece(b.bytes()).is_none() {
            // SAFETY: caller contract.
            return unsafe { self.recv_one(from, tag, mem, b) };
        }
        // SAFETY: caller contract.
        let inc = unsafe { self.start_rooted(&[(from, mem, b.clone())], tag) };
        self.finish_rooted(inc)
    }

    /// Waits for the receives of `start_rooted` and unpacks the staged blocks.
    /// A message shorter than its part is an error too: both ends choose pieces alike unless
    /// their machines or settings differ (see `tune::Tuning::piece`).
    fn finish_rooted(&mut self, inc: Incoming) -> MpiResult<()> {
        self.engine.wait_until(|e| inc.reqs.iter().all(|&(r, _)| e.is_complete(r)));
        let mut result = Ok(());
        for &(q, len) in &inc.reqs {
            let r = self.engine.reqs.remove(q).expect("collective receive request vanished");
            if result.is_ok() {
                result = check_truncation(&r.status);
            }
            if result.is_ok() && len.is_some_and(|len| r.status.bytes != len) {
                result = err(
                    MPI_ERR_TRUNCATE,
                    format!(
                        "rank {} sent {} bytes where {} were expected (counts or types differ between ranks, \
                         or the ranks disagree on {})",
                        r.status.source,
                        r.status.bytes,
                        len.unwrap_or(0),
                        crate::config::COLL_PIECE_MAX
                    ),
                );
            }
        }
        for (s, mem, b) in inc.staged {
            if result.is_ok() {
                // SAFETY: the staged bytes were received; `mem` holds block `b` (start_rooted).
                unsafe { copy_block(s.as_ptr(), &Block::bytes_at(0, s.len()), mem, &b) };
            }
            recycle(s);
        }
        result
    }

    /// Posts a receive of up to `len` bytes into `data`; returns the request (`finish_recvs`).
    ///
    /// # Safety
    /// As `irecv_block`.
    unsafe fn irecv_bytes(&mut self, from: usize, tag: i32, data: *mut u8, len: usize) -> u32 {
        // SAFETY: caller contract.
        unsafe { self.irecv_block(from, tag, data, &Block::bytes_at(0, len)) }
    }

    /// Waits for receives started by `irecv_*` and frees them; the first truncation is the
    /// error (after all have completed: none may write into memory after the call).
    fn finish_recvs(&mut self, reqs: &[u32]) -> MpiResult<()> {
        self.wait_all(reqs);
        let mut result = Ok(());
        for &q in reqs {
            let r = self.engine.reqs.remove(q).expect("collective receive request vanished");
            if result.is_ok() {
                result = check_truncation(&r.status);
            }
        }
        result
    }

    /// Waits for one receive started by `irecv_*` and frees it; returns the bytes received.
    fn finish_recv(&mut self, req: u32) -> MpiResult<usize> {
        self.wait_all(&[req]);
        let r = self.engine.reqs.remove(req).expect("collective receive request vanished");
        check_truncation(&r.status)?;
        Ok(r.status.bytes)
    }

    /// Waits for sends started by `isend_*` (they read memory held only for the call) and
    /// frees them.
    fn finish_sends(&mut self, sends: &mut Vec<u32>) {
        if sends.is_empty() {
            return;
        }
        self.wait_all(sends);
        for &s in sends.iter() {
            self.engine.free_request(s);
        }
        sends.clear();
    }

    /// Runs `f`, which may start sends from memory held for the call (listed in the vector it
    /// gets), then waits for those sends, whatever `f` returned.
    fn with_sends<R>(&mut self, f: impl FnOnce(&mut Self, &mut Vec<u32>) -> MpiResult<R>) -> MpiResult<R> {
        let mut sends = Vec::new();
        let result = f(self, &mut sends);
        self.finish_sends(&mut sends);
        result
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

    /// `sendrecv` of elements `lo..hi` of `acc`: a dense accumulator of a reduction that is
    /// not sparse-aware (where the message is exactly those bytes) is sent in place and waited
    /// for, instead of copied into a message first.
    fn sendrecv_acc(
        &mut self,
        v: &Vecs,
        acc: &Acc,
        (lo, hi): (usize, usize),
        (to, from): (usize, usize),
        len: usize,
        tag: i32,
    ) -> MpiResult<Vec<u8>> {
        let d = match acc {
            Acc::Dense(d) if !v.is_sparse_aware() => d,
            _ => return self.sendrecv(to, v.message(acc, lo, hi), from, len, tag),
        };
        let es = v.elem_size();
        let r = self.post_recv(from, tag, len);
        // SAFETY: `d` stays borrowed, unchanged, until the send is waited for below.
        let s = unsafe { self.isend_block(to, tag, d.as_ptr(), &Block::bytes_at(lo * es, (hi - lo) * es)) };
        self.wait_all(&[r]);
        self.finish_send(s);
        self.take(r)
    }
}

/// Receives under way for a gather or scatter (`Group::start_rooted`): the requests, and the
/// staging buffers of pieces bound for non-contiguous blocks `(staging, memory, block)`.
#[derive(Default)]
struct Incoming {
    /// Requests and the bytes each must bring (None: up to its size).
    reqs: Vec<(u32, Option<usize>)>,
    staged: Vec<(Vec<u8>, *mut u8, Block)>,
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

    /// `len` plain bytes at byte `offset`.
    fn bytes_at(offset: usize, len: usize) -> Block {
        Block { offset, count: len, layout: BYTE }
    }

    /// The buffer pointer of the block's elements, in memory starting at `mem` (`offset` is
    /// where the lowest data byte lies; the type's displacements count from the pointer).
    pub fn base(&self, mem: *const u8) -> *const u8 {
        mem.wrapping_add(self.offset).wrapping_offset(-self.layout.lower(self.count))
    }

    /// Whether the block's data is `bytes()` consecutive bytes from `offset`.
    fn is_contiguous(&self) -> bool {
        self.layout.contiguous_at().is_some()
    }
}

/// MPI_ERR_TRUNCATE when a collective's message did not fit its receive.
fn check_truncation(status: &crate::p2p::request::Status) -> MpiResult<()> {
    if status.error == MPI_ERR_TRUNCATE {
        return err(
            MPI_ERR_TRUNCATE,
            format!(
                "message truncated: rank {} sent more data than this rank's receive count and type allow \
                 (counts or types differ between ranks)",
                status.source
            ),
        );
    }
    Ok(())
}

/// Copies block `sb` of the memory at `src` into block `db` of the memory at `dst` (the local
/// part of a collective), as far as the shorter one goes.
///
/// # Safety
/// Both blocks lie in valid memory (`db` writable) and do not overlap.
unsafe fn copy_block(src: *const u8, sb: &Block, dst: *mut u8, db: &Block) {
    let len = sb.bytes().min(db.bytes());
    if len == 0 {
        return;
    }
    if sb.is_contiguous() && db.is_contiguous() {
        // SAFETY: caller contract; contiguous blocks are `bytes()` bytes from their offsets.
        unsafe { std::ptr::copy_nonoverlapping(src.add(sb.offset), dst.add(db.offset), len) };
        return;
    }
    let mut packed = vec![0u8; len];
    // SAFETY: caller contract; `packed` is ours.
    unsafe {
        sb.layout.pack(sb.base(src), sb.count, 0..len, &mut packed);
        db.layout.unpack(db.base(dst) as *mut u8, db.count, 0, &packed);
    }
}

/// Where packed blocks laid end to end (`off[i]..off[i + 1]`) already lie in user memory at
/// `mem`: every block contiguous and each right after the one before. Returns the address of
/// the image's first byte (data of empty blocks is never touched).
fn dense_image(mem: *mut u8, blocks: &[Block], off: &[usize]) -> Option<*mut u8> {
    let first = blocks.iter().position(|b| b.bytes() > 0)?;
    let start = blocks[first].offset.checked_sub(off[first])?;
    blocks
        .iter()
        .enumerate()
        .all(|(i, b)| b.bytes() == 0 || (b.is_contiguous() && b.offset == start + off[i]))
        .then(|| mem.wrapping_add(start))
}

thread_local! {
    /// Scratch buffers of earlier collectives, kept so that large ones do not allocate (and
    /// fault in fresh pages) at every call.
    static SCRATCH: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A scratch buffer of `len` bytes (contents unspecified), from the pool when it has one.
fn scratch(len: usize) -> Vec<u8> {
    let pooled = SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let i = s.iter().position(|v| v.capacity() >= len).or((!s.is_empty()).then_some(0))?;
        Some(s.swap_remove(i))
    });
    let mut v = pooled.unwrap_or_default();
    v.resize(len, 0);
    v
}

/// Gives a scratch buffer back to the pool (a few, of bounded size, are kept).
fn recycle(v: Vec<u8>) {
    const KEEP: usize = 4;
    const MAX_BYTES: usize = 64 << 20;
    if v.capacity() == 0 || v.capacity() > MAX_BYTES {
        return;
    }
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < KEEP {
            s.push(v);
        } else if let Some(small) = s.iter_mut().min_by_key(|p| p.capacity()).filter(|p| p.capacity() < v.capacity()) {
            *small = v;
        }
    });
}

/// A user buffer read by a collective, with its blocks (one per rank for scatter and
/// all-to-all, one for everything else).
pub struct In<'a> {
    /// Borrowed user memory, or a copy when it overlaps the receive buffer.
    pub mem: std::borrow::Cow<'a, [u8]>,
    pub blocks: Blocks,
}

/// A user buffer written by a collective, with its blocks.
pub struct Out<'a> {
    pub mem: &'a mut [u8],
    pub blocks: Blocks,
}

fn pack_block(mem: &[u8], b: &Block) -> Vec<u8> {
    if b.count == 0 {
        return Vec::new();
    }
    op::pack(&b.layout, b.count, &mem[b.offset..])
}

/// The packed bytes of block `b` of `mem`, borrowed when the layout is contiguous.
fn packed_in<'m>(mem: &'m [u8], b: &Block) -> std::borrow::Cow<'m, [u8]> {
    if b.layout.is_contiguous() {
        std::borrow::Cow::Borrowed(&mem[b.offset..b.offset + b.bytes()])
    } else {
        std::borrow::Cow::Owned(pack_block(mem, b))
    }
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

// ----- contiguous buffers -----
//
// Most calls pass contiguous buffers (a predefined type): these entries take them as bytes,
// so the small-message paths on one node go straight to `hier`'s shared-memory ones without
// block lists; elsewhere the buffers become the block lists the general entries take. The
// choice of algorithm is the same as theirs (it depends on packed lengths only).

fn bytes_in(mem: &[u8]) -> In<'_> {
    In { mem: std::borrow::Cow::Borrowed(mem), blocks: Blocks::one(Block::bytes_at(0, mem.len())) }
}

fn bytes_out(mem: &mut [u8]) -> Out<'_> {
    let len = mem.len();
    Out { mem, blocks: Blocks::one(Block::bytes_at(0, len)) }
}

/// A contiguous vector of `red`'s elements (whose layout has its data at the pointer).
fn vector_in<'a>(mem: &'a [u8], red: &Reduction) -> In<'a> {
    In { mem: std::borrow::Cow::Borrowed(mem), blocks: Blocks::one(vector_block(mem.len(), red)) }
}

fn vector_out<'a>(mem: &'a mut [u8], red: &Reduction) -> Out<'a> {
    let block = vector_block(mem.len(), red);
    Out { mem, blocks: Blocks::one(block) }
}

fn vector_block(len: usize, red: &Reduction) -> Block {
    Block { offset: 0, count: len / red.elem_size().max(1), layout: red.layout().clone() }
}

/// `n` blocks of `block` bytes, one after the other (a gather's or scatter's root buffer).
fn uniform_blocks(n: usize, block: usize) -> Blocks {
    Blocks::from_fn(n, |i| Block::bytes_at(i * block, block))
}

/// The contiguous collectives of a communicator of one rank: its input becomes its output
/// (any operation of one vector is the vector); in place (`send` None) there is nothing to do.
fn copy_alone(send: Option<&[u8]>, recv: Option<&mut [u8]>) {
    if let (Some(s), Some(r)) = (send, recv) {
        let n = s.len().min(r.len());
        r[..n].copy_from_slice(&s[..n]);
    }
}

/// MPI_Bcast of the contiguous buffer `data`.
#[inline]
pub fn bcast_bytes(g: &mut Group, data: &mut [u8], root: usize) -> MpiResult<()> {
    if g.size() == 1 {
        return Ok(());
    }
    if let Some(r) = hier::bcast_bytes(g, data, root) {
        return r;
    }
    bcast(g, &mut bytes_out(data), root)
}

/// MPI_Reduce of contiguous vectors (of a type with its data at the pointer): `send` is None for MPI_IN_PLACE at the root; `recv`
/// matters at the root only.
#[inline]
pub fn reduce_bytes(
    g: &mut Group,
    send: Option<&[u8]>,
    mut recv: Option<&mut [u8]>,
    red: &Reduction,
    root: usize,
) -> MpiResult<()> {
    if g.size() == 1 {
        copy_alone(send, recv);
        return Ok(());
    }
    if let Some(r) = hier::reduce_bytes(g, send, recv.as_deref_mut(), red, root) {
        return r;
    }
    reduce(g, send.map(|s| vector_in(s, red)), recv.map(|r| vector_out(r, red)), red, root)
}

/// MPI_Allreduce of contiguous vectors (as `reduce_bytes`): `send` is None for MPI_IN_PLACE.
#[inline]
pub fn allreduce_bytes(g: &mut Group, send: Option<&[u8]>, recv: &mut [u8], red: &Reduction) -> MpiResult<()> {
    if g.size() == 1 {
        copy_alone(send, Some(recv));
        return Ok(());
    }
    if let Some(r) = hier::allreduce_bytes(g, send, recv, red) {
        return r;
    }
    allreduce(g, send.map(|s| vector_in(s, red)), vector_out(recv, red), red)
}

/// MPI_Gather of `block` bytes per member: `send` is None for MPI_IN_PLACE at the root;
/// `recv` (the root's `block * size` bytes) matters at the root only.
#[inline]
pub fn gather_bytes(
    g: &mut Group,
    send: Option<&[u8]>,
    mut recv: Option<&mut [u8]>,
    block: usize,
    root: usize,
) -> MpiResult<()> {
    if g.size() == 1 {
        copy_alone(send, recv);
        return Ok(());
    }
    if let Some(r) = hier::gather_bytes(g, send, recv.as_deref_mut(), block, root) {
        return r;
    }
    let n = g.size();
    let recv = recv.map(|mem| Out { mem, blocks: uniform_blocks(n, block) });
    gather_uniform(g, send.map(bytes_in), recv, root)
}

/// MPI_Scatter of `block` bytes per member: `send` (the root's `block * size` bytes)
/// matters at the root only; `recv` is None for MPI_IN_PLACE at the root.
#[inline]
pub fn scatter_bytes(
    g: &mut Group,
    send: Option<&[u8]>,
    mut recv: Option<&mut [u8]>,
    block: usize,
    root: usize,
) -> MpiResult<()> {
    if g.size() == 1 {
        copy_alone(send, recv);
        return Ok(());
    }
    if let Some(r) = hier::scatter_bytes(g, send, recv.as_deref_mut(), block, root) {
        return r;
    }
    let n = g.size();
    let send = send.map(|mem| In { mem: std::borrow::Cow::Borrowed(mem), blocks: uniform_blocks(n, block) });
    scatter_uniform(g, send, recv.map(bytes_out), root)
}

/// MPI_Allgather of `block` bytes per member, contiguous buffers: `send` is None for
/// MPI_IN_PLACE (the own block is already in `recv`, `block * size` bytes).
#[inline]
pub fn allgather_bytes(g: &mut Group, send: Option<&[u8]>, recv: &mut [u8], block: usize) -> MpiResult<()> {
    let n = g.size();
    if n == 1 {
        copy_alone(send, Some(recv));
        return Ok(());
    }
    if let Some(r) = hier::allgather_bytes(g, send, recv, block) {
        return r;
    }
    allgather(g, send.map(bytes_in), Out { mem: recv, blocks: uniform_blocks(n, block) })
}

/// MPI_Alltoall of `block` bytes per pair, contiguous buffers: `send` is None for
/// MPI_IN_PLACE (what goes to member i is block i of `recv`).
#[inline]
pub fn alltoall_bytes(g: &mut Group, send: Option<&[u8]>, recv: &mut [u8], block: usize) -> MpiResult<()> {
    let n = g.size();
    if n == 1 {
        copy_alone(send, Some(recv));
        return Ok(());
    }
    if let Some(r) = hier::alltoall_bytes(g, send, recv, block) {
        return r;
    }
    let send = send.map(|mem| In { mem: std::borrow::Cow::Borrowed(mem), blocks: uniform_blocks(n, block) });
    alltoall_uniform(g, send, Out { mem: recv, blocks: uniform_blocks(n, block) })
}

// ----- barrier and broadcast -----

/// MPI_Barrier: dissemination, ceil(log2 n) rounds of one empty message each way.
pub fn barrier(g: &mut Group) -> MpiResult<()> {
    if g.size() == 1 {
        return Ok(());
    }
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

/// MPI_Bcast on `buf` (one block), straight from and into the user's memory (the scatter +
/// allgather algorithm packs non-contiguous data first).
pub fn bcast(g: &mut Group, buf: &mut Out, root: usize) -> MpiResult<()> {
    if let Some(r) = hier::bcast(g, buf, root) {
        return r;
    }
    let len = buf.blocks[0].bytes();
    // Count 0 (the same on every rank): nothing to move.
    if g.size() == 1 || len == 0 {
        return Ok(());
    }
    let block = buf.blocks[0].clone();
    let base = buf.mem.as_mut_ptr();
    match tune::get().bcast(len, g.size()) {
        // SAFETY: the user's buffer, ours for the call.
        tune::Bcast::Binomial => unsafe { bcast_binomial(g, base, &block, root, tag::BCAST) },
        // SAFETY: as above; contiguous data is `len` bytes from the block's offset.
        tune::Bcast::ScatterAllgather if block.is_contiguous() => unsafe {
            bcast_scatter_allgather(g, base.add(block.offset), len, root, tag::BCAST)
        },
        tune::Bcast::ScatterAllgather => {
            let mut data = if g.rank() == root { buf.pack(0) } else { scratch(len) };
            // SAFETY: our `len` bytes.
            let result = unsafe { bcast_scatter_allgather(g, data.as_mut_ptr(), len, root, tag::BCAST) };
            if result.is_ok() && g.rank() != root {
                buf.put(0, &data);
            }
            recycle(data);
            result
        }
    }
}

/// Binomial-tree broadcast of block `b` of the memory at `base` (the user's buffer): received
/// from the parent straight into it, sent to the children straight from it.
///
/// # Safety
/// `base` is memory holding block `b`, ours (not otherwise accessed) for the call.
unsafe fn bcast_binomial(g: &mut Group, base: *mut u8, b: &Block, root: usize, tag: i32) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let vr = (r + n - root) % n;
    let real = |v: usize| (v + root) % n;
    g.with_sends(|g, sends| {
        let mut mask = 1;
        while mask < n {
            if vr & mask != 0 {
                // SAFETY: the caller's buffer, written only by this receive.
                let q = unsafe { g.irecv_block(real(vr - mask), tag, base, b) };
                g.finish_recvs(&[q])?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if vr + mask < n {
                // SAFETY: the caller's buffer, unchanged from now on; with_sends waits.
                sends.push(unsafe { g.isend_block(real(vr + mask), tag, base, b) });
            }
            mask >>= 1;
        }
        Ok(())
    })
}

/// Broadcast of the `len` bytes at `data` (van de Geijn): the root scatters `n` pieces down a
/// binomial tree (each subtree gets its pieces in one message), then a ring allgather
/// completes every member's copy. Pieces are numbered relative to the root; each is written
/// once, by its receive, and only sent afterwards.
///
/// # Safety
/// `data` is memory holding `len` bytes, ours (not otherwise accessed) for the call.
unsafe fn bcast_scatter_allgather(g: &mut Group, data: *mut u8, len: usize, root: usize, tag: i32) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let vr = (r + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let piece = len.div_ceil(n);
    // Byte range of pieces lo..hi (relative numbers, clipped to the data).
    let bytes = |lo: usize, hi: usize| (lo * piece).min(len)..(hi * piece).min(len);
    // SAFETY (every transfer below): `data` is `len` bytes held by the caller for the call;
    // the ranges received are disjoint from everything sent before, and with_sends waits.
    g.with_sends(|g, sends| {
        // Scatter: a member receives pieces vr..vr + subtree size from its parent, then passes
        // each child its subtree's pieces.
        let mut mask = 1;
        while mask < n {
            if vr & mask != 0 {
                let range = bytes(vr, vr + mask);
                if !range.is_empty() {
                    let q = unsafe { g.irecv_bytes(real(vr - mask), tag, data.add(range.start), range.len()) };
                    g.finish_recvs(&[q])?;
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
                    sends.push(unsafe { g.isend_bytes(real(vr + mask), tag, data.add(range.start), range.len()) });
                }
            }
            mask >>= 1;
        }
        // Ring allgather of the pieces: in step k, pass on piece vr - k, get piece vr - k - 1.
        let (left, right) = ((r + n - 1) % n, (r + 1) % n);
        let tag = tag + tag::PHASE_BCAST;
        for step in 0..n - 1 {
            let (s, t) = ((vr + n - step) % n, (vr + 2 * n - step - 1) % n);
            let (srange, rrange) = (bytes(s, s + 1), bytes(t, t + 1));
            let q =
                (!rrange.is_empty()).then(|| unsafe { g.irecv_bytes(left, tag, data.add(rrange.start), rrange.len()) });
            if !srange.is_empty() {
                sends.push(unsafe { g.isend_bytes(right, tag, data.add(srange.start), srange.len()) });
            }
            if let Some(q) = q {
                g.finish_recvs(&[q])?;
            }
        }
        Ok(())
    })
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
    let contribution = |mem| {
        if v.is_sparse_aware() {
            allreduce::Mine::Acc(v.input(mem, &block))
        } else {
            allreduce::Mine::Block(mem, &block)
        }
    };
    let mine = match (&send, &mut recv) {
        // The root's contiguous receive buffer takes its first child's vector and the result
        // (not in place: the buffer holds the root's own vector then), without a zero-filled
        // message buffer and the copy out: np 2, a 1 MiB user sum 347-387 -> 220-234 µs
        // (Open MPI 240-280).
        (Some(s), Some(out)) if !v.is_sparse_aware() && out.blocks[0].layout.is_contiguous() => {
            let b = &out.blocks[0];
            allreduce::Mine::BlockOut(&s.mem, &block, &mut out.mem[b.offset..b.offset + b.bytes()])
        }
        (Some(s), _) => contribution(&s.mem),
        (None, Some(o)) => contribution(o.mem),
        (None, None) => unreachable!("MPI_IN_PLACE without a receive buffer is rejected at the edge"),
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
    let alg = tune::get().allreduce(block.bytes(), block.count, g.size(), red.is_commutative());
    if !v.is_sparse_aware() && block.layout.is_contiguous() && !matches!(alg, tune::Allreduce::ReduceBcast) {
        // Pieces combined and received in the receive buffer itself, without the engine
        // vector's copies: np 2, a 1 MiB user sum 487-540 -> 362-393 µs (Open MPI 349-375).
        let buf = &mut recv.mem[block.offset..block.offset + block.bytes()];
        if let Some(s) = &send {
            buf.copy_from_slice(&packed_in(&s.mem, &s.blocks[0]));
        }
        return allreduce::allreduce_in_buffer(g, buf, &v, alg, tag::ALLREDUCE);
    }
    let mine = match &send {
        Some(s) => v.input(&s.mem, &s.blocks[0]),
        None => v.input(recv.mem, &block),
    };
    let result = allreduce::allreduce(g, mine, &v, alg, tag::ALLREDUCE)?;
    v.write(result, &mut recv);
    Ok(())
}

/// Reduce of packed vectors among the members of `g` (the node leaders' step of coll::hier).
fn reduce_packed(g: &mut Group, mine: Vec<u8>, red: &Reduction, root: usize, tag: i32) -> MpiResult<Option<Vec<u8>>> {
    let v = Vecs::new(red, mine.len() / red.elem_size().max(1), g.size());
    Ok(allreduce::reduce(g, allreduce::Mine::Acc(Acc::Dense(mine)), &v, root, tag)?.map(|r| v.to_dense(&r)))
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
    let counts = &counts[..n];
    // Counts are the same everywhere: with nothing to reduce, return at once.
    if counts.iter().all(|&c| c == 0) || size == 0 {
        return Ok(());
    }
    // The input, packed: the user's memory itself when contiguous (never in place: the
    // result overwrites it).
    let packed: Vec<u8>;
    let input: &[u8] = match (&send, in_place) {
        (Some(s), _) if s.blocks[0].is_contiguous() => {
            let b = &s.blocks[0];
            &s.mem[b.offset..b.offset + b.bytes()]
        }
        (Some(s), _) => {
            packed = s.pack(0);
            &packed
        }
        (None, Some(b)) => {
            packed = pack_block(recv.mem, &b);
            &packed
        }
        (None, None) => unreachable!("in-place reduce-scatter without its input block"),
    };
    if let Some(r) = hier::reduce_scatter(g, input, &mut recv, counts, red) {
        return r;
    }
    let tag = tag::REDUCE_SCATTER;
    match tune::get().reduce_scatter(input.len(), n, red.is_commutative()) {
        _ if n == 1 => recv.put(0, input),
        tune::ReduceScatter::Direct => allreduce::reduce_scatter_direct(g, input, red, counts, tag, &mut recv)?,
        tune::ReduceScatter::Halving => allreduce::reduce_scatter_halving(g, input, red, counts, tag, &mut recv)?,
        tune::ReduceScatter::Pairwise => allreduce::reduce_scatter_pairwise(g, input, red, counts, tag, &mut recv)?,
        tune::ReduceScatter::ReduceThenScatter => {
            let v = Vecs::dense(red, input.len() / size);
            let mine = allreduce::Mine::Acc(sparse::Acc::Dense(input.to_vec()));
            let result = allreduce::reduce(g, mine, &v, 0, tag + tag::PHASE_REDUCE)?;
            let piece = if r == 0 {
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
            };
            recv.put(0, &piece);
        }
    }
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
//
// These move data straight between user buffers: sends read the user's blocks (a rendezvous
// receiver copies them out of this process with one single-copy read), receives land in the
// user's blocks, and only algorithms that forward or reorder data stage it in scratch memory.
// Every send is waited for before the call returns, since it reads memory held for the call.

/// The user memory of an input buffer.
fn in_ptr(s: &In) -> *const u8 {
    s.mem.as_ptr()
}

/// Relative rank `vr`'s subtree in a binomial tree of `n` ranks rooted at 0: its lowest set
/// bit (`n` rounded up to a power of two for the root) and its children `(child, blocks in
/// the child's subtree)`, nearest first.
fn binomial_children(vr: usize, n: usize) -> (usize, Vec<(usize, usize)>) {
    let low = if vr == 0 { n.next_power_of_two() } else { 1 << vr.trailing_zeros() };
    let mut children = Vec::new();
    let mut mask = 1;
    while mask < low && vr + mask < n {
        children.push((vr + mask, mask.min(n - vr - mask)));
        mask <<= 1;
    }
    (low, children)
}

/// MPI_Gather(v): linear; the root posts every receive at once, straight into its blocks.
/// `send` is None for MPI_IN_PLACE at the root; `recv` (one block per member) matters at the
/// root only.
pub fn gather(g: &mut Group, send: Option<In>, recv: Option<Out>, root: usize) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    if r != root {
        let s = send.expect("non-root members send");
        if s.blocks[0].bytes() == 0 {
            return Ok(());
        }
        return g.with_sends(|g, sends| {
            // SAFETY: the user's send buffer, unchanged during the call; waited for by with_sends.
            unsafe { g.send_rooted(root, tag::GATHER, in_ptr(&s), &s.blocks[0], false, sends) };
            Ok(())
        });
    }
    let out = recv.expect("the root has a receive buffer");
    let base = out.mem.as_mut_ptr();
    let blocks = &out.blocks;
    let own = |s: &Option<In>| {
        if let Some(s) = s {
            // SAFETY: distinct user buffers (an overlapping input was copied); the own block is
            // not being received into.
            unsafe { copy_block(in_ptr(s), &s.blocks[0], base, &blocks[root]) };
        }
    };
    let others = (root + 1..n).chain(0..root);
    if others.clone().any(|i| g.piece(blocks[i].bytes()).is_some()) {
        let parts: Vec<(usize, *mut u8, Block)> = others.map(|i| (i, base, blocks[i].clone())).collect();
        // SAFETY: the user's receive buffer, ours for the call; finish_rooted waits for them.
        let inc = unsafe { g.start_rooted(&parts, tag::GATHER) };
        own(&send);
        return g.finish_rooted(inc);
    }
    // SAFETY: the user's receive buffer, ours for the call; finish_recvs waits for them.
    let reqs = unsafe { g.recv_each(others.map(|i| (i, &blocks[i])), tag::GATHER, base) };
    own(&send);
    g.finish_recvs(&reqs)
}

/// MPI_Scatter(v): linear; the root starts every send at once, straight from its blocks.
/// `send` (one block per member) matters at the root only; `recv` is None for MPI_IN_PLACE
/// at the root.
pub fn scatter(g: &mut Group, send: Option<In>, recv: Option<Out>, root: usize) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    if r != root {
        let out = recv.expect("non-root members receive");
        if out.blocks[0].bytes() == 0 {
            return Ok(());
        }
        // SAFETY: the user's receive buffer, ours for the call.
        return unsafe { g.recv_rooted(root, tag::SCATTER, out.mem.as_mut_ptr(), &out.blocks[0]) };
    }
    let s = send.expect("the root has a send buffer");
    let src = in_ptr(&s);
    g.with_sends(|g, sends| {
        for i in (root + 1..n).chain(0..root) {
            if s.blocks[i].bytes() > 0 {
                // SAFETY: the user's send buffer, unchanged during the call.
                unsafe { g.send_rooted(i, tag::SCATTER, src, &s.blocks[i], true, sends) };
            }
        }
        if let Some(out) = recv {
            // SAFETY: distinct user buffers (an overlapping input was copied).
            unsafe { copy_block(src, &s.blocks[root], out.mem.as_mut_ptr(), &out.blocks[0]) };
        }
        Ok(())
    })
}

/// Rooted collectives' choice: the binomial tree differs from the linear algorithm only from
/// 4 members on (below, every non-root member is a leaf of the root).
fn rooted_binomial(n: usize, block: usize) -> bool {
    n > 3 && block > 0 && tune::get().rooted(block * n, true) == tune::Rooted::Binomial
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
    let mut recv = recv;
    if let Some(r) = hier::gather(g, &send, &mut recv, root, block) {
        return r;
    }
    if !rooted_binomial(n, block) {
        return gather(g, send, recv, root);
    }
    // Relative rank vr gathers the blocks of its subtree, vr..vr + (subtree size), in that
    // order: its own, then each child's subtree (children vr + 1, vr + 2, vr + 4, ...).
    let vr = (r + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let (low, children) = binomial_children(vr, n);
    if vr != 0 && children.is_empty() {
        // A leaf sends its block straight from the user's buffer.
        let s = send.expect("non-root members send");
        return g.with_sends(|g, sends| {
            // SAFETY: the user's send buffer, unchanged during the call.
            unsafe { g.send_rooted(real(vr - low), tag::GATHER, in_ptr(&s), &s.blocks[0], false, sends) };
            Ok(())
        });
    }
    if vr != 0 {
        let s = send.expect("non-root members send");
        let blocks = low.min(n - vr);
        let mut buf = scratch(blocks * block);
        let at = buf.as_mut_ptr();
        // SAFETY: `buf` holds `blocks` blocks; the receives are finished before it is read,
        // the send before it is dropped.
        let result = g.with_sends(|g, sends| unsafe {
            let parts: Vec<(usize, *mut u8, Block)> =
                children.iter().map(|&(c, k)| (real(c), at, Block::bytes_at((c - vr) * block, k * block))).collect();
            let inc = g.start_rooted(&parts, tag::GATHER);
            copy_block(in_ptr(&s), &s.blocks[0], at, &Block::bytes_at(0, block));
            g.finish_rooted(inc)?;
            g.send_rooted(real(vr - low), tag::GATHER, at, &Block::bytes_at(0, blocks * block), false, sends);
            Ok(())
        });
        recycle(buf);
        return result;
    }
    // The root: children's subtrees go straight into its buffer when its blocks are dense and
    // the subtree's members are consecutive there; the others are staged.
    let out = recv.expect("the root has a receive buffer");
    let base = out.mem.as_mut_ptr();
    let off: Vec<usize> = (0..=n).map(|i| i * block).collect();
    let direct = dense_image(base, &out.blocks, &off);
    let mut staging = Vec::new();
    let mut staged = Vec::new();
    // Where each child's subtree lands: straight in the user's buffer, or staged.
    let mut places = Vec::with_capacity(children.len());
    for &(c, k) in &children {
        let start = real(c);
        let at = match direct {
            Some(img) if start + k <= n => img.wrapping_add(start * block),
            _ => {
                if staging.is_empty() {
                    staging = scratch(n * block);
                }
                staged.push((c, k));
                staging.as_mut_ptr().wrapping_add(c * block)
            }
        };
        places.push((real(c), at, Block::bytes_at(0, k * block)));
    }
    // SAFETY: the user's receive buffer or our staging, ours for the call; every part is
    // written only by its receive, finished below before it is read.
    let inc = unsafe { g.start_rooted(&places, tag::GATHER) };
    if let Some(s) = &send {
        // SAFETY: distinct user buffers; the own block is not being received into.
        unsafe { copy_block(in_ptr(s), &s.blocks[0], base, &out.blocks[root]) };
    }
    let result = g.finish_rooted(inc);
    for (c, k) in staged {
        for v in c..c + k {
            // SAFETY: the staged blocks were received; the user's buffer is ours.
            unsafe { copy_block(staging.as_ptr(), &Block::bytes_at(v * block, block), base, &out.blocks[real(v)]) };
        }
    }
    recycle(staging);
    result
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
    let mut recv = recv;
    if let Some(r) = hier::scatter(g, &send, &mut recv, root, block) {
        return r;
    }
    if !rooted_binomial(n, block) {
        return scatter(g, send, recv, root);
    }
    // Relative rank vr gets the blocks of its subtree (vr..vr + size) from its parent, then
    // hands each child (vr + 2^k) the child's subtree.
    let vr = (r + n - root) % n;
    let real = |v: usize| (v + root) % n;
    let (low, children) = binomial_children(vr, n);
    if vr == 0 {
        // The root sends straight from its buffer when its blocks are dense and a child's
        // subtree is consecutive there; the other subtrees are packed first.
        let s = send.expect("the root has a send buffer");
        let src = in_ptr(&s);
        let off: Vec<usize> = (0..=n).map(|i| i * block).collect();
        let direct = dense_image(src as *mut u8, &s.blocks, &off);
        let mut staging = Vec::new();
        let result = g.with_sends(|g, sends| {
            for &(c, k) in children.iter().rev() {
                let start = real(c);
                let (at, len) = match direct {
                    Some(img) => (img.wrapping_add(start * block) as *const u8, k * block),
                    None => (std::ptr::null(), 0),
                };
                if direct.is_some() && start + k <= n {
                    // SAFETY: the user's send buffer, unchanged during the call.
                    unsafe { g.send_rooted(real(c), tag::SCATTER, at, &Block::bytes_at(0, len), true, sends) };
                    continue;
                }
                if staging.is_empty() {
                    staging = scratch(n * block);
                }
                let st = staging.as_mut_ptr();
                for v in c..c + k {
                    // SAFETY: the user's buffer and our staging, n blocks; not yet being sent.
                    unsafe { copy_block(src, &s.blocks[real(v)], st, &Block::bytes_at(v * block, block)) };
                }
                // SAFETY: the staging buffer outlives the send (with_sends waits for it).
                unsafe {
                    g.send_rooted(real(c), tag::SCATTER, st.add(c * block), &Block::bytes_at(0, k * block), true, sends)
                };
            }
            if let Some(out) = recv {
                // SAFETY: distinct user buffers.
                unsafe { copy_block(src, &s.blocks[root], out.mem.as_mut_ptr(), &out.blocks[0]) };
            }
            Ok(())
        });
        recycle(staging);
        return result;
    }
    let out = recv.expect("non-root members receive");
    let parent = real(vr - low);
    if children.is_empty() {
        // A leaf receives its block straight into the user's buffer.
        // SAFETY: the user's receive buffer, ours for the call.
        return unsafe { g.recv_rooted(parent, tag::SCATTER, out.mem.as_mut_ptr(), &out.blocks[0]) };
    }
    let blocks = low.min(n - vr);
    let mut buf = scratch(blocks * block);
    let at = buf.as_mut_ptr();
    // SAFETY: `buf` holds the subtree's blocks; received before it is forwarded, and the
    // sends are waited for (with_sends) before it is dropped.
    let result = g.with_sends(|g, sends| unsafe {
        g.recv_rooted(parent, tag::SCATTER, at, &Block::bytes_at(0, blocks * block))?;
        for &(c, k) in children.iter().rev() {
            g.send_rooted(real(c), tag::SCATTER, at.add((c - vr) * block), &Block::bytes_at(0, k * block), true, sends);
        }
        copy_block(at, &Block::bytes_at(0, block), out.mem.as_mut_ptr(), &out.blocks[0]);
        Ok(())
    });
    recycle(buf);
    result
}

/// Byte offsets of packed blocks laid end to end (one more entry: the total).
fn packed_offsets(blocks: &[Block]) -> Vec<usize> {
    std::iter::once(0)
        .chain(blocks.iter().scan(0, |at, b| {
            *at += b.bytes();
            Some(*at)
        }))
        .collect()
}

/// MPI_Allgather(v): ring, recursive doubling (power-of-two sizes) or Bruck, by size. `send`
/// is None for MPI_IN_PLACE (the own block is already in place in `recv`). Every member knows
/// every block's size (allgatherv's counts are the same everywhere), so all agree.
pub fn allgather(g: &mut Group, send: Option<In>, recv: Out) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    // Counts are known to every rank: with nothing to move, return at once.
    if recv.blocks.iter().all(|b| b.bytes() == 0) {
        return Ok(());
    }
    let mut recv = recv;
    if let Some(r) = hier::allgather(g, &send, &mut recv) {
        return r;
    }
    let base = recv.mem.as_mut_ptr();
    // The own block goes out straight from the send buffer in the first step (a peer reads it
    // faster there than from a copy just written on this core); it is copied into the
    // receive buffer while that first transfer runs.
    let own = send.as_ref().map(|s| Own { mem: in_ptr(s), block: &s.blocks[0] });
    if n == 1 {
        if let Some(o) = &own {
            // SAFETY: distinct user buffers (an overlapping input was copied).
            unsafe { o.copy_to(base, &recv.blocks[r]) };
        }
        return Ok(());
    }
    let blocks = &recv.blocks;
    let total: usize = blocks.iter().map(Block::bytes).sum();
    // SAFETY (all three): `base` is the user's receive buffer, ours for the call; `own` the
    // user's send buffer, distinct from it and unchanged during the call.
    unsafe {
        match tune::get().allgather(total, n) {
            tune::Allgather::Ring => allgather_ring(g, base, blocks, own),
            tune::Allgather::Direct => allgather_direct(g, base, blocks, own),
            tune::Allgather::RecursiveDoubling if n.is_power_of_two() => {
                allgather_recursive_doubling(g, base, blocks, own)
            }
            _ => allgather_bruck(g, base, blocks, own),
        }
    }
}

/// An allgather's own block in the send buffer (not in place).
struct Own<'a> {
    mem: *const u8,
    block: &'a Block,
}

impl Own<'_> {
    /// Copies the block into block `db` of the memory at `dst`.
    ///
    /// # Safety
    /// As `copy_block`.
    unsafe fn copy_to(&self, dst: *mut u8, db: &Block) {
        // SAFETY: caller contract.
        unsafe { copy_block(self.mem, self.block, dst, db) }
    }
}

/// Ring allgather: in step k each member forwards the block it got in step k - 1, straight
/// from and into the user's buffer at `base` (own block in place, or in `own`).
///
/// # Safety
/// `base` is memory holding `blocks`, ours (not otherwise accessed) for the call; `own` is
/// separate memory, unchanged during the call.
unsafe fn allgather_ring(g: &mut Group, base: *mut u8, blocks: &[Block], own: Option<Own>) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let (left, right) = ((r + n - 1) % n, (r + 1) % n);
    g.with_sends(|g, sends| {
        for step in 0..n - 1 {
            let (from, sent) = ((r + n - step - 1) % n, (r + n - step) % n);
            // SAFETY: the user's buffer; block `from` is written only by this receive, block
            // `sent` only read from now on.
            let req =
                (blocks[from].bytes() > 0).then(|| unsafe { g.irecv_block(left, tag::ALLGATHER, base, &blocks[from]) });
            match &own {
                // SAFETY: as above, and the caller's contract on `own`; with_sends waits.
                Some(o) if step == 0 => unsafe {
                    if o.block.bytes() > 0 {
                        sends.push(g.isend_block(right, tag::ALLGATHER, o.mem, o.block));
                    }
                    o.copy_to(base, &blocks[r]);
                },
                // SAFETY: as above; with_sends waits for the send.
                _ if blocks[sent].bytes() > 0 => {
                    sends.push(unsafe { g.isend_block(right, tag::ALLGATHER, base, &blocks[sent]) })
                }
                _ => {}
            }
            if let Some(q) = req {
                g.finish_recvs(&[q])?;
            }
        }
        Ok(())
    })
}

/// Direct allgather: every receive posted at once, straight into the user's blocks, and the
/// own block sent to every other member. One round, so when ranks outnumber cores a member
/// needs to run about once per call (the logarithmic algorithms wait on partners that may not
/// have run yet, a scheduling round each); n - 1 messages each way.
///
/// # Safety
/// As `allgather_ring`.
unsafe fn allgather_direct(g: &mut Group, base: *mut u8, blocks: &[Block], own: Option<Own>) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let peers = (r + 1..n).chain(0..r);
    g.with_sends(|g, sends| {
        // SAFETY: the user's buffer; each block other than r is written only by its receive.
        let reqs = unsafe { g.recv_each(peers.clone().map(|i| (i, &blocks[i])), tag::ALLGATHER, base) };
        let (mem, block) = match &own {
            Some(o) => (o.mem, o.block),
            None => (base as *const u8, &blocks[r]),
        };
        if block.bytes() > 0 {
            for i in peers {
                // SAFETY: the own block (send buffer, or block r, only read during the call).
                sends.push(unsafe { g.isend_block(i, tag::ALLGATHER, mem, block) });
            }
        }
        if let Some(o) = &own {
            // SAFETY: as above; block r is not being received into.
            unsafe { o.copy_to(base, &blocks[r]) };
        }
        g.finish_recvs(&reqs)
    })
}

/// The packed image of all blocks, `off[i]..off[i + 1]` for block i: the user's buffer itself
/// when dense (`dense_image`), else a scratch copy (the own block packed into it) that
/// `unpack_image` writes back.
///
/// # Safety
/// `base` is memory holding `blocks`, ours (not otherwise accessed) for the call.
unsafe fn allgather_image(
    base: *mut u8,
    blocks: &[Block],
    off: &[usize],
    r: usize,
    own: &Option<Own>,
) -> (*mut u8, Vec<u8>) {
    if let Some(img) = dense_image(base, blocks, off) {
        return (img, Vec::new());
    }
    let mut all = scratch(off[blocks.len()]);
    let at = Block::bytes_at(off[r], off[r + 1] - off[r]);
    // SAFETY: the user's buffers and our scratch, which holds block r at off[r].
    unsafe {
        match own {
            Some(o) => o.copy_to(all.as_mut_ptr(), &at),
            None => copy_block(base, &blocks[r], all.as_mut_ptr(), &at),
        }
    }
    (all.as_mut_ptr(), all)
}

/// Writes the blocks other than `r` of a scratch image back to the user's buffer.
///
/// # Safety
/// `base` is memory holding `blocks`, ours (not otherwise accessed) for the call.
unsafe fn unpack_image(base: *mut u8, blocks: &[Block], off: &[usize], r: usize, all: Vec<u8>) {
    if all.is_empty() {
        return;
    }
    for (i, b) in blocks.iter().enumerate().filter(|&(i, _)| i != r) {
        // SAFETY: our scratch image and the user's buffer, ours for the call.
        unsafe { copy_block(all.as_ptr(), &Block::bytes_at(off[i], off[i + 1] - off[i]), base, b) };
    }
    recycle(all);
}

/// Recursive-doubling allgather (power-of-two sizes): in round k members 2^k apart swap
/// everything they have, an aligned run of 2^k blocks (one run of the image).
///
/// # Safety
/// `base` is memory holding `blocks`, ours (not otherwise accessed) for the call; `own` is
/// separate memory, unchanged during the call.
unsafe fn allgather_recursive_doubling(
    g: &mut Group,
    base: *mut u8,
    blocks: &[Block],
    own: Option<Own>,
) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let off = packed_offsets(blocks);
    // SAFETY: caller contract.
    let (img, all) = unsafe { allgather_image(base, blocks, &off, r, &own) };
    let result = g.with_sends(|g, sends| {
        let mut mask = 1;
        while mask < n {
            let dst = r ^ mask;
            let (mine, theirs) = (r & !(mask - 1), dst & !(mask - 1));
            let (rlo, rhi) = (off[theirs], off[theirs + mask]);
            // SAFETY: the image (user buffer or scratch) holds every block; the run received
            // is disjoint from every run sent so far and written only by this receive.
            unsafe {
                let q = (rhi > rlo).then(|| g.irecv_bytes(dst, tag::ALLGATHER, img.add(rlo), rhi - rlo));
                let (slo, shi) = (off[mine], off[mine + mask]);
                match &own {
                    // The first round sends the own block alone: from the send buffer, copied
                    // in meanwhile (a scratch image has it already).
                    Some(o) if mask == 1 => {
                        if shi > slo {
                            sends.push(g.isend_block(dst, tag::ALLGATHER, o.mem, o.block));
                        }
                        o.copy_to(base, &blocks[r]);
                    }
                    _ if shi > slo => sends.push(g.isend_bytes(dst, tag::ALLGATHER, img.add(slo), shi - slo)),
                    _ => {}
                }
                if let Some(q) = q {
                    g.finish_recvs(&[q])?;
                }
            }
            mask <<= 1;
        }
        Ok(())
    });
    // SAFETY: caller contract.
    unsafe { unpack_image(base, blocks, &off, r, all) };
    result
}

/// Bruck allgather (any size, ceil(log2 n) rounds): a member holds the blocks r, r + 1, ...
/// in that order in a scratch buffer; in the round with distance d it sends its first
/// min(d, n - d) blocks to r - d and appends the same number from r + d.
///
/// # Safety
/// `base` is memory holding `blocks`, ours (not otherwise accessed) for the call; `own` is
/// separate memory, unchanged during the call.
unsafe fn allgather_bruck(g: &mut Group, base: *mut u8, blocks: &[Block], own: Option<Own>) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let size = |j: usize| blocks[(r + j) % n].bytes();
    // ends[j]: end of relative block j in `buf`.
    let mut ends = Vec::with_capacity(n);
    let mut at = 0;
    for j in 0..n {
        at += size(j);
        ends.push(at);
    }
    let mut buf = scratch(at);
    let b = buf.as_mut_ptr();
    // SAFETY: the user's buffers and our scratch, which starts with the own block.
    unsafe {
        match &own {
            Some(o) => {
                o.copy_to(b, &Block::bytes_at(0, ends[0]));
                o.copy_to(base, &blocks[r]);
            }
            None => copy_block(base, &blocks[r], b, &Block::bytes_at(0, ends[0])),
        }
    }
    let result = g.with_sends(|g, sends| {
        let mut dist = 1;
        while dist < n {
            let cnt = dist.min(n - dist);
            let (dst, src) = ((r + n - dist) % n, (r + dist) % n);
            let (lo, hi) = (ends[dist - 1], ends[dist + cnt - 1]);
            // SAFETY: `buf` holds every block; the part received is written only by this
            // receive and sent only later; sends are waited for before `buf` goes.
            unsafe {
                let q = (hi > lo).then(|| g.irecv_bytes(src, tag::ALLGATHER, b.add(lo), hi - lo));
                if ends[cnt - 1] > 0 {
                    sends.push(g.isend_bytes(dst, tag::ALLGATHER, b, ends[cnt - 1]));
                }
                if let Some(q) = q {
                    g.finish_recvs(&[q])?;
                }
            }
            dist <<= 1;
        }
        Ok(())
    });
    if result.is_ok() {
        for j in 1..n {
            // SAFETY: our scratch and the user's buffer.
            unsafe { copy_block(b, &Block::bytes_at(ends[j - 1], size(j)), base, &blocks[(r + j) % n]) };
        }
    }
    recycle(buf);
    result
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
pub fn alltoall_uniform(g: &mut Group, send: Option<In>, mut recv: Out) -> MpiResult<()> {
    if let Some(r) = hier::alltoall(g, &send, &mut recv) {
        return r;
    }
    alltoall_with(g, send, recv, true)
}

fn alltoall_with(g: &mut Group, send: Option<In>, recv: Out, uniform: bool) -> MpiResult<()> {
    let n = g.size();
    // A member whose blocks are all empty neither sends nor receives anything (matching
    // counts mean nobody sends it data): done at once, as in MPICH.
    let empty = |b: &[Block]| b.iter().all(|b| b.bytes() == 0);
    if empty(&recv.blocks) && send.as_ref().is_none_or(|s| empty(&s.blocks)) {
        return Ok(());
    }
    let base = recv.mem.as_mut_ptr();
    // In place, what goes out is packed first: the same blocks are received into.
    let mut packed = Vec::new();
    let (src, sblocks): (*const u8, std::borrow::Cow<[Block]>) = match &send {
        Some(s) => (in_ptr(s), std::borrow::Cow::Borrowed(&s.blocks)),
        None => {
            let off = packed_offsets(&recv.blocks);
            packed = scratch(off[n]);
            let sblocks: Vec<Block> = (0..n).map(|i| Block::bytes_at(off[i], off[i + 1] - off[i])).collect();
            for (b, sb) in recv.blocks.iter().zip(&sblocks) {
                // SAFETY: the user's buffer and our scratch.
                unsafe { copy_block(base, b, packed.as_mut_ptr(), sb) };
            }
            (packed.as_ptr(), std::borrow::Cow::Owned(sblocks))
        }
    };
    let block = recv.blocks.iter().map(Block::bytes).max().unwrap_or(0);
    // SAFETY (all three): `src` holds the outgoing blocks (user buffer or `packed`), unchanged
    // until the call ends; `base` is the user's receive buffer, ours for the call.
    let result = unsafe {
        match tune::get().alltoall(block, n, uniform) {
            tune::Alltoall::Bruck if n > 1 && block > 0 => alltoall_bruck(g, src, &sblocks, base, &recv.blocks, block),
            tune::Alltoall::Pairwise => alltoall_pairwise(g, src, &sblocks, base, &recv.blocks),
            _ => alltoall_post(g, src, &sblocks, base, &recv.blocks),
        }
    };
    recycle(packed);
    result
}

/// Every receive posted, then every send started (beginning with the next rank up, to spread
/// the load), then one wait; all straight from and into the buffers.
///
/// # Safety
/// `src` holds the blocks `sb`, unchanged during the call; `base` holds the blocks `rb`, ours
/// for the call.
unsafe fn alltoall_post(g: &mut Group, src: *const u8, sb: &[Block], base: *mut u8, rb: &[Block]) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let order: Vec<usize> = (1..n).map(|k| (r + k) % n).collect();
    g.with_sends(|g, sends| {
        // SAFETY: the receive buffer's blocks, each written only by its receive.
        let reqs = unsafe { g.recv_each(order.iter().rev().map(|&i| (i, &rb[i])), tag::ALLTOALL, base) };
        for &i in &order {
            if sb[i].bytes() > 0 {
                // SAFETY: the outgoing blocks stay unchanged during the call.
                sends.push(unsafe { g.isend_block(i, tag::ALLTOALL, src, &sb[i]) });
            }
        }
        // SAFETY: distinct buffers (an overlapping or in-place input was copied).
        unsafe { copy_block(src, &sb[r], base, &rb[r]) };
        g.finish_recvs(&reqs)
    })
}

/// Pairwise exchange: in step i a member sends to r + i and receives from r - i (partners
/// r ^ i on power-of-two sizes), one receive in flight.
///
/// # Safety
/// `src` holds the blocks `sb`, unchanged during the call; `base` holds the blocks `rb`, ours
/// for the call.
unsafe fn alltoall_pairwise(g: &mut Group, src: *const u8, sb: &[Block], base: *mut u8, rb: &[Block]) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    // SAFETY: distinct buffers (an overlapping or in-place input was copied).
    unsafe { copy_block(src, &sb[r], base, &rb[r]) };
    g.with_sends(|g, sends| {
        for i in 1..n {
            let (dst, from) = if n.is_power_of_two() { (r ^ i, r ^ i) } else { ((r + i) % n, (r + n - i) % n) };
            // SAFETY: as in alltoall_post.
            let req = (rb[from].bytes() > 0).then(|| unsafe { g.irecv_block(from, tag::ALLTOALL, base, &rb[from]) });
            if sb[dst].bytes() > 0 {
                // SAFETY: as in alltoall_post.
                sends.push(unsafe { g.isend_block(dst, tag::ALLTOALL, src, &sb[dst]) });
            }
            if let Some(q) = req {
                g.finish_recvs(&[q])?;
            }
        }
        Ok(())
    })
}

/// Bruck all-to-all (blocks of `block` bytes everywhere, ceil(log2 n) rounds): blocks are
/// rotated so that slot i holds the block for r + i; in the round for bit k every slot with
/// bit k set goes, in one message, to r + 2^k (and arrives from r - 2^k); slot i finally
/// holds the block from r - i.
///
/// # Safety
/// `src` holds the blocks `sb`, unchanged during the call; `base` holds the blocks `rb`, ours
/// for the call.
unsafe fn alltoall_bruck(
    g: &mut Group,
    src: *const u8,
    sb: &[Block],
    base: *mut u8,
    rb: &[Block],
    block: usize,
) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    if sb.iter().chain(rb).any(|b| b.bytes() != block) {
        return err(MPI_ERR_TRUNCATE, "alltoall: blocks of different sizes (counts or types differ between ranks)");
    }
    let mut slots = scratch(n * block);
    let (mut out, mut inc) = (scratch(n.div_ceil(2) * block), scratch(n.div_ceil(2) * block));
    for i in 0..n {
        // SAFETY: the outgoing blocks and our scratch.
        unsafe { copy_block(src, &sb[(r + i) % n], slots.as_mut_ptr(), &Block::bytes_at(i * block, block)) };
    }
    let mut result = Ok(());
    let mut bit = 1;
    while bit < n {
        let which: Vec<usize> = (0..n).filter(|i| i & bit != 0).collect();
        for (k, &i) in which.iter().enumerate() {
            out[k * block..(k + 1) * block].copy_from_slice(&slots[i * block..(i + 1) * block]);
        }
        let len = which.len() * block;
        // SAFETY: `out` and `inc` are ours; the send and the receive finish before either is
        // touched again.
        result = g.with_sends(|g, sends| unsafe {
            let q = g.irecv_bytes((r + n - bit) % n, tag::ALLTOALL, inc.as_mut_ptr(), len);
            sends.push(g.isend_bytes((r + bit) % n, tag::ALLTOALL, out.as_ptr(), len));
            g.finish_recvs(&[q])
        });
        if result.is_err() {
            break;
        }
        for (k, &i) in which.iter().enumerate() {
            slots[i * block..(i + 1) * block].copy_from_slice(&inc[k * block..(k + 1) * block]);
        }
        bit <<= 1;
    }
    if result.is_ok() {
        for i in 0..n {
            // SAFETY: our scratch and the user's receive buffer.
            unsafe { copy_block(slots.as_ptr(), &Block::bytes_at(i * block, block), base, &rb[(r + n - i) % n]) };
        }
    }
    recycle(slots);
    recycle(out);
    recycle(inc);
    result
}

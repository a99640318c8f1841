//! Reduce and allreduce algorithms over `sparse::Vecs` (dense or sparse partial results):
//! binomial reduce; allreduce by recursive doubling, Rabenseifner (reduce-scatter by
//! recursive halving, then allgather by recursive doubling), ring (reduce-scatter and
//! allgather around the ring), or reduce + broadcast.
//!
//! Non-power-of-two sizes (recursive doubling, Rabenseifner) first fold the extra ranks in:
//! among the first `2 * rem` ranks, each even rank hands its vector to the odd rank above it
//! and gets the result back at the end. Recursive doubling and binomial reduce keep rank
//! order (the lower-ranked partial result is always the first operand), so they serve
//! non-commutative operations; Rabenseifner and ring combine pieces in another order and are
//! chosen for commutative operations only (`tune::Tuning::allreduce`).
//!
//! The algorithms that exchange pieces keep the partial result in a `Partial`: an engine
//! vector (`Acc`), or, for dense reductions that are not sparse-aware, the program's receive
//! buffer itself (`InBuffer`).

use super::sparse::{Acc, Vecs};
use super::tune::{self, Allreduce};
use super::{Block, Group, Out, bcast_packed, tag};
use crate::error::MpiResult;

/// Allreduce of `acc` (this member's contribution); returns the result.
pub(super) fn allreduce(g: &mut Group, mut acc: Acc, v: &Vecs, alg: Allreduce, tag: i32) -> MpiResult<Acc> {
    if g.size() == 1 {
        return Ok(acc);
    }
    match alg {
        Allreduce::RecursiveDoubling => recursive_doubling(g, &mut acc, v, tag).map(|()| acc),
        Allreduce::Rabenseifner => rabenseifner(g, &mut acc, v, tag).map(|()| acc),
        Allreduce::Ring => ring(g, &mut acc, v, tag).map(|()| acc),
        Allreduce::ReduceBcast => {
            let result = reduce(g, Mine::Acc(acc), v, 0, tag + tag::PHASE_REDUCE)?;
            let mut msg = match &result {
                Some(a) => v.message(a, 0, v.count),
                None => Vec::new(),
            };
            bcast_packed(g, &mut msg, v.msg_len(0, v.count), 0, tag + tag::PHASE_BCAST)?;
            match result {
                Some(a) => Ok(a),
                None => {
                    let mut a = Acc::Dense(Vec::new());
                    v.install(&mut a, 0, v.count, msg)?;
                    Ok(a)
                }
            }
        }
    }
}

/// Allreduce in the program's contiguous receive buffer `buf`, which holds this member's
/// contribution, for a reduction that is not sparse-aware (`InBuffer`) and an algorithm that
/// exchanges pieces (not `ReduceBcast`).
pub(super) fn allreduce_in_buffer(g: &mut Group, buf: &mut [u8], v: &Vecs, alg: Allreduce, tag: i32) -> MpiResult<()> {
    debug_assert!(!v.is_sparse_aware());
    let p = &mut InBuffer(buf);
    match alg {
        _ if g.size() == 1 => Ok(()),
        Allreduce::RecursiveDoubling => recursive_doubling(g, p, v, tag),
        Allreduce::Rabenseifner => rabenseifner(g, p, v, tag),
        Allreduce::Ring => ring(g, p, v, tag),
        Allreduce::ReduceBcast => unreachable!("reduce + broadcast keeps its result in an engine vector"),
    }
}

/// A member's contribution to `reduce`: its vector as an accumulator, or the user's block
/// itself when the reduction is not sparse-aware (nothing to scan or encode), which a leaf
/// sends in place and an inner node reads as the lower operand, without a packed copy.
pub(super) enum Mine<'m> {
    Acc(Acc),
    Block(&'m [u8], &'m Block),
    /// The user's block and the root's contiguous receive buffer (a reduction that is not
    /// sparse-aware): the first child's vector lands in the buffer and is combined there.
    BlockOut(&'m [u8], &'m Block, &'m mut [u8]),
    /// The partial result, in the root's receive buffer.
    Out(&'m mut [u8]),
}

impl Mine<'_> {
    /// Sends this partial result to `to`, towards the root (`Group::send_up`).
    fn send_up(self, g: &mut Group, v: &Vecs, to: usize, tag: i32) {
        match self {
            Mine::Acc(a) => g.send_up(to, tag, v.into_message(a)),
            Mine::Block(mem, b) | Mine::BlockOut(mem, b, _) => g.send_block_up(to, tag, mem, b),
            Mine::Out(out) => g.send_block_up(to, tag, out, &Block::bytes_at(0, out.len())),
        }
    }
}

/// Binomial-tree reduction to `root`; returns the result at `root`, unless it was left in the
/// root's receive buffer (`Mine::BlockOut`). Each step combines a lower-ranked partial result
/// (first operand) with the next higher one; for non-commutative operations the tree is
/// rooted at rank 0 and the result forwarded to `root`.
pub(super) fn reduce(g: &mut Group, mut mine: Mine, v: &Vecs, root: usize, tag: i32) -> MpiResult<Option<Acc>> {
    let (n, r) = (g.size(), g.rank());
    let full = v.msg_len(0, v.count);
    let tree_root = if v.red_is_commutative() { root } else { 0 };
    let vr = (r + n - tree_root) % n;
    let real = |x: usize| (x + tree_root) % n;
    // Children are vr + 2^k for every 2^k below vr's lowest set bit; post all their receives.
    let mut children = Vec::new();
    let mut mask = 1;
    while mask < n && vr & mask == 0 {
        if vr + mask < n {
            let from = real(vr + mask);
            children.push(match &mut mine {
                // SAFETY: the program's receive buffer, ours for the call and not touched
                // until this receive is waited for below.
                Mine::BlockOut(_, _, out) if children.is_empty() => unsafe {
                    g.irecv_block(from, tag, out.as_mut_ptr(), &Block::bytes_at(0, out.len()))
                },
                _ => g.post_recv(from, tag, full),
            });
        }
        mask <<= 1;
    }
    let taken = |g: &mut Group, req: u32| {
        g.wait_all(&[req]);
        g.take(req)
    };
    for req in children {
        mine = match mine {
            Mine::Acc(mut a) => {
                v.absorb(&mut a, 0, v.count, taken(g, req)?, false)?;
                Mine::Acc(a)
            }
            Mine::Block(mem, b) => Mine::Acc(v.absorb_onto(mem, b, taken(g, req)?)?),
            Mine::BlockOut(mem, b, out) => {
                v.check_dense_len(g.finish_recv(req)?, v.count)?;
                v.combine_onto(&super::packed_in(mem, b), out);
                Mine::Out(out)
            }
            Mine::Out(out) => {
                // The higher operand second; a commutative one may come first, without the copy.
                v.combine_dense(out, taken(g, req)?, v.red_is_commutative())?;
                Mine::Out(out)
            }
        };
    }
    if vr != 0 {
        mine.send_up(g, v, real(vr - mask), tag);
        if r == root {
            // Non-commutative op with root != 0: rank 0 forwards the result.
            let msg = g.recv(0, tag + tag::PHASE_ROOT, full)?;
            let mut acc = Acc::Dense(Vec::new());
            v.install(&mut acc, 0, v.count, msg)?;
            return Ok(Some(acc));
        }
        return Ok(None);
    }
    if r != root {
        mine.send_up(g, v, root, tag + tag::PHASE_ROOT);
        return Ok(None);
    }
    Ok(match mine {
        Mine::Acc(a) => Some(a),
        Mine::Block(mem, b) => Some(Acc::Dense(super::pack_block(mem, b))),
        Mine::BlockOut(mem, b, out) => {
            // No children (a single member).
            out.copy_from_slice(&super::packed_in(mem, b));
            None
        }
        Mine::Out(_) => None,
    })
}

/// The first step of the power-of-two algorithms: returns this rank's number among the
/// `pof2` remaining ones, or None for an even rank of the first `2 * rem` (which sent its
/// vector up and waits for the result).
fn fold_in(g: &mut Group, p: &mut impl Partial, v: &Vecs, tag: i32) -> MpiResult<Option<usize>> {
    let (n, r) = (g.size(), g.rank());
    let rem = n - tune::pof2_below(n);
    if r >= 2 * rem {
        return Ok(Some(r - rem));
    }
    if r % 2 == 0 {
        // The vector comes back whole at the end (`fold_out`).
        p.give_whole(g, v, r + 1, tag);
        return Ok(None);
    }
    p.absorb_lower_whole(g, v, r - 1, tag)?;
    Ok(Some(r / 2))
}

/// The last step: odd ranks of the first `2 * rem` hand the result to the even rank below.
fn fold_out(g: &mut Group, p: &mut impl Partial, v: &Vecs, newrank: Option<usize>, tag: i32) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let rem = n - tune::pof2_below(n);
    match newrank {
        Some(_) if r < 2 * rem => p.send_whole(g, v, r - 1, tag),
        Some(_) => Ok(()),
        None => p.take_whole(g, v, r + 1, tag),
    }
}

/// One exchange of an allreduce step: elements `send` (a range) go to member `to` while
/// elements `recv` come from member `from`.
#[derive(Clone, Copy)]
pub(super) struct Exchange {
    send: (usize, usize),
    to: usize,
    recv: (usize, usize),
    from: usize,
}

/// Where an allreduce keeps its partial result while the algorithms below exchange pieces
/// (ranges of elements) of it: an engine vector (`Acc`, dense or sparse), or the program's
/// own contiguous receive buffer (`InBuffer`), where pieces are combined and land in place.
pub(super) trait Partial {
    /// Makes exchange `x` and combines the elements received in: `theirs op mine` when
    /// `theirs_lower`, else `mine op theirs`.
    fn reduce_step(&mut self, g: &mut Group, v: &Vecs, x: Exchange, theirs_lower: bool, tag: i32) -> MpiResult<()>;
    /// Makes exchange `x`, the elements received being final values.
    fn gather_step(&mut self, g: &mut Group, v: &Vecs, x: Exchange, tag: i32) -> MpiResult<()>;
    /// Hands the whole vector to `to`, which combines it (`fold_in`'s even ranks).
    fn give_whole(&mut self, g: &mut Group, v: &Vecs, to: usize, tag: i32);
    /// Combines the whole vector of the lower-ranked `from` in (`fold_in`'s odd ranks).
    fn absorb_lower_whole(&mut self, g: &mut Group, v: &Vecs, from: usize, tag: i32) -> MpiResult<()>;
    /// Sends the whole result to `to` (`fold_out`'s odd ranks).
    fn send_whole(&mut self, g: &mut Group, v: &Vecs, to: usize, tag: i32) -> MpiResult<()>;
    /// Takes the whole result from `from` (`fold_out`'s even ranks).
    fn take_whole(&mut self, g: &mut Group, v: &Vecs, from: usize, tag: i32) -> MpiResult<()>;
}

impl Partial for Acc {
    fn reduce_step(&mut self, g: &mut Group, v: &Vecs, x: Exchange, theirs_lower: bool, tag: i32) -> MpiResult<()> {
        let (lo, hi) = x.recv;
        let theirs = g.sendrecv_acc(v, self, x.send, (x.to, x.from), v.msg_len(lo, hi), tag)?;
        v.absorb(self, lo, hi, theirs, theirs_lower)
    }

    fn gather_step(&mut self, g: &mut Group, v: &Vecs, x: Exchange, tag: i32) -> MpiResult<()> {
        let (lo, hi) = x.recv;
        let theirs = g.sendrecv_acc(v, self, x.send, (x.to, x.from), v.msg_len(lo, hi), tag)?;
        v.install(self, lo, hi, theirs)
    }

    fn give_whole(&mut self, g: &mut Group, v: &Vecs, to: usize, tag: i32) {
        g.send_up(to, tag, v.into_message(std::mem::replace(self, Acc::Dense(Vec::new()))));
    }

    fn absorb_lower_whole(&mut self, g: &mut Group, v: &Vecs, from: usize, tag: i32) -> MpiResult<()> {
        let lower = g.recv(from, tag, v.msg_len(0, v.count))?;
        v.absorb(self, 0, v.count, lower, true)
    }

    fn send_whole(&mut self, g: &mut Group, v: &Vecs, to: usize, tag: i32) -> MpiResult<()> {
        g.send(to, tag, v.message(self, 0, v.count));
        Ok(())
    }

    fn take_whole(&mut self, g: &mut Group, v: &Vecs, from: usize, tag: i32) -> MpiResult<()> {
        let msg = g.recv(from, tag, v.msg_len(0, v.count))?;
        v.install(self, 0, v.count, msg)
    }
}

/// The program's contiguous receive buffer holding the partial result of a reduction that is
/// not sparse-aware (messages are exactly the elements' bytes): pieces are sent from it and
/// final pieces received into it, without the engine vector's copy in, copies of each
/// received piece and copy out. Only the pieces to combine are received apart (an operation
/// reads its two operands from separate memory).
pub(super) struct InBuffer<'m>(pub &'m mut [u8]);

impl InBuffer<'_> {
    /// Starts the send of elements `lo..hi` straight from the buffer.
    fn isend_range(&mut self, g: &mut Group, v: &Vecs, to: usize, (lo, hi): (usize, usize), tag: i32) -> u32 {
        let es = v.elem_size();
        // SAFETY: the range lies in the buffer, which is not written until the send is waited
        // for (every caller waits before it touches the buffer again).
        unsafe { g.isend_bytes(to, tag, self.0.as_ptr().add(lo * es), (hi - lo) * es) }
    }

    /// Posts the receive of elements `lo..hi` from `from` straight into the buffer.
    fn recv_range(&mut self, g: &mut Group, v: &Vecs, from: usize, (lo, hi): (usize, usize), tag: i32) -> u32 {
        let es = v.elem_size();
        // SAFETY: the range lies in the buffer, which is not read or written by anything else
        // until the receive is waited for (`finish_range`).
        unsafe { g.irecv_block(from, tag, self.0.as_mut_ptr(), &Block::bytes_at(lo * es, (hi - lo) * es)) }
    }

    /// Waits for receive `req` of elements `lo..hi` and checks it brought all of them.
    fn finish_range(g: &mut Group, v: &Vecs, req: u32, (lo, hi): (usize, usize)) -> MpiResult<()> {
        let got = g.finish_recv(req)?;
        v.check_dense_len(got, hi - lo)
    }
}

impl Partial for InBuffer<'_> {
    fn reduce_step(&mut self, g: &mut Group, v: &Vecs, x: Exchange, theirs_lower: bool, tag: i32) -> MpiResult<()> {
        let es = v.elem_size();
        let (lo, hi) = x.recv;
        let r = g.post_recv(x.from, tag, (hi - lo) * es);
        let s = self.isend_range(g, v, x.to, x.send, tag);
        g.wait_all(&[r]);
        // The sent range may overlap the combined one (recursive doubling sends everything).
        g.finish_send(s);
        let theirs = g.take(r)?;
        v.combine_dense(&mut self.0[lo * es..hi * es], theirs, theirs_lower)
    }

    fn gather_step(&mut self, g: &mut Group, v: &Vecs, x: Exchange, tag: i32) -> MpiResult<()> {
        debug_assert!(x.send.1 <= x.recv.0 || x.recv.1 <= x.send.0, "an allgather step sends and receives apart");
        let r = self.recv_range(g, v, x.from, x.recv, tag);
        let s = self.isend_range(g, v, x.to, x.send, tag);
        let got = Self::finish_range(g, v, r, x.recv);
        g.finish_send(s);
        got
    }

    fn give_whole(&mut self, g: &mut Group, _v: &Vecs, to: usize, tag: i32) {
        g.send_block_up(to, tag, self.0, &Block::bytes_at(0, self.0.len()));
    }

    fn absorb_lower_whole(&mut self, g: &mut Group, v: &Vecs, from: usize, tag: i32) -> MpiResult<()> {
        let lower = g.recv(from, tag, self.0.len())?;
        v.combine_dense(self.0, lower, true)
    }

    fn send_whole(&mut self, g: &mut Group, v: &Vecs, to: usize, tag: i32) -> MpiResult<()> {
        let s = self.isend_range(g, v, to, (0, v.count), tag);
        g.finish_send(s);
        Ok(())
    }

    fn take_whole(&mut self, g: &mut Group, v: &Vecs, from: usize, tag: i32) -> MpiResult<()> {
        let r = self.recv_range(g, v, from, (0, v.count), tag);
        Self::finish_range(g, v, r, (0, v.count))
    }
}

/// One step of recursive halving (`halving_steps`): the partner's folded rank and the windows
/// of pieces, `[lo, hi)` indices into the folded displacements, this member sends and keeps.
pub(super) struct HalvingStep {
    pub partner: usize,
    pub send: (usize, usize),
    pub recv: (usize, usize),
}

/// The steps of recursive halving for folded rank `nr` among `pof2` members (partners at
/// distance pof2/2 first): every step halves the window of pieces this member still reduces.
pub(super) fn halving_steps(nr: usize, pof2: usize) -> impl Iterator<Item = HalvingStep> {
    let (mut send_idx, mut recv_idx, mut last_idx) = (0, 0, pof2);
    let mut mask = pof2 >> 1;
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let partner = nr ^ mask;
        let (send, recv) = if nr < partner {
            send_idx = recv_idx + mask;
            ((send_idx, last_idx), (recv_idx, send_idx))
        } else {
            recv_idx = send_idx + mask;
            ((send_idx, recv_idx), (recv_idx, last_idx))
        };
        send_idx = recv_idx;
        last_idx = recv_idx + mask;
        mask >>= 1;
        Some(HalvingStep { partner, send, recv })
    })
}

/// Element displacements of the `pof2` pieces after folding `rem` pairs (`fold_in`): a folded
/// pair owns both its members' blocks; `total` closes the list.
pub(super) fn folded_displacements(disp: &[usize], pof2: usize, rem: usize, total: usize) -> Vec<usize> {
    (0..pof2).map(|i| disp[if i < rem { 2 * i } else { i + rem }]).chain(std::iter::once(total)).collect()
}

/// The member (communicator rank) behind number `nr` of the power-of-two group (also used by
/// the schedules in `coll::sched`, which must split and pair exactly as this module does).
pub(super) fn real_rank(nr: usize, rem: usize) -> usize {
    if nr < rem { nr * 2 + 1 } else { nr + rem }
}

fn recursive_doubling(g: &mut Group, p: &mut impl Partial, v: &Vecs, tag: i32) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let pof2 = tune::pof2_below(n);
    let rem = n - pof2;
    let newrank = fold_in(g, p, v, tag)?;
    if let Some(nr) = newrank {
        let mut mask = 1;
        while mask < pof2 {
            let dst = real_rank(nr ^ mask, rem);
            let whole = (0, v.count);
            p.reduce_step(g, v, Exchange { send: whole, to: dst, recv: whole, from: dst }, dst < r, tag)?;
            mask <<= 1;
        }
    }
    fold_out(g, p, v, newrank, tag)
}

/// Element offsets of `parts` nearly equal pieces of `count` (the first `count % parts` one
/// longer), with `count` at the end.
pub(super) fn pieces(count: usize, parts: usize) -> Vec<usize> {
    let (q, m) = (count / parts, count % parts);
    let mut d = Vec::with_capacity(parts + 1);
    let mut at = 0;
    for i in 0..parts {
        d.push(at);
        at += q + usize::from(i < m);
    }
    d.push(count);
    d
}

/// Rabenseifner's allreduce (MPICH's formulation): after folding to `pof2` ranks, recursive
/// halving leaves each rank the reduced `1/pof2` piece of the vector it owns, then recursive
/// doubling gathers the pieces.
fn rabenseifner(g: &mut Group, p: &mut impl Partial, v: &Vecs, tag: i32) -> MpiResult<()> {
    let n = g.size();
    let pof2 = tune::pof2_below(n);
    let rem = n - pof2;
    let newrank = fold_in(g, p, v, tag)?;
    if let Some(nr) = newrank {
        let disp = pieces(v.count, pof2);
        // Reduce-scatter: the window of pieces [send_idx.., last_idx) halves every step.
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
            let (slo, shi, rlo, rhi) = (disp[send.0], disp[send.1], disp[recv.0], disp[recv.1]);
            // Commutative operations only: combining into our own piece (`theirs op mine`)
            // needs no copy back, and every piece is combined at one rank only, so all ranks
            // still end with the same values.
            let x = Exchange { send: (slo, shi), to: dst, recv: (rlo, rhi), from: dst };
            p.reduce_step(g, v, x, true, tag)?;
            send_idx = recv_idx;
            mask <<= 1;
            if mask < pof2 {
                last_idx = recv_idx + pof2 / mask;
            }
        }
        // Allgather: the window doubles back.
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
            let (slo, shi, rlo, rhi) = (disp[send.0], disp[send.1], disp[recv.0], disp[recv.1]);
            p.gather_step(g, v, Exchange { send: (slo, shi), to: dst, recv: (rlo, rhi), from: dst }, tag)?;
            if nr > newdst {
                send_idx = recv_idx;
            }
            mask >>= 1;
        }
    }
    fold_out(g, p, v, newrank, tag)
}

/// Ring allreduce: `n - 1` reduce-scatter steps (each rank passes a piece to the right and
/// combines the one from the left), then `n - 1` allgather steps of the reduced pieces.
fn ring(g: &mut Group, p: &mut impl Partial, v: &Vecs, tag: i32) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let disp = pieces(v.count, n);
    let (left, right) = ((r + n - 1) % n, (r + 1) % n);
    let piece = |i: usize| (disp[i % n], disp[i % n + 1]);
    for step in 0..n - 1 {
        let x = Exchange { send: piece(r + n - step), to: right, recv: piece(r + 2 * n - step - 1), from: left };
        p.reduce_step(g, v, x, true, tag)?;
    }
    for step in 0..n - 1 {
        let x = Exchange { send: piece(r + 1 + n - step), to: right, recv: piece(r + n - step), from: left };
        p.gather_step(g, v, x, tag)?;
    }
    Ok(())
}

/// Offsets, in units of `unit` (1: elements; the element size: bytes), of blocks of `counts`
/// elements laid end to end (one more entry: the total).
fn displacements(counts: &[usize], unit: usize) -> Vec<usize> {
    let mut disp = Vec::with_capacity(counts.len() + 1);
    let mut at = 0;
    for &c in counts {
        disp.push(at);
        at += c * unit;
    }
    disp.push(at);
    disp
}

/// Reduce-scatter by recursive halving (commutative operations; MPICH's algorithm): after
/// folding to `pof2` ranks, each step halves the window of blocks a rank is responsible for,
/// exchanging the other half with the partner; a folded pair's surviving rank finally hands
/// the even rank its block. `input` is the whole packed input, `counts` the elements of every
/// member's block; this member's block goes to `out`.
///
/// Partial results live in one scratch vector; the input is never copied: the first
/// exchange lands in the scratch vector and the input is combined into it there.
pub(super) fn reduce_scatter_halving(
    g: &mut Group,
    input: &[u8],
    red: &crate::op::Reduction,
    counts: &[usize],
    tag: i32,
    out: &mut Out,
) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let size = red.elem_size();
    let disp = displacements(counts, 1);
    let total = disp[n];
    let pof2 = tune::pof2_below(n);
    let rem = n - pof2;
    if r < 2 * rem && r % 2 == 0 {
        // Folded out: hand the whole input to r + 1, get this member's block back.
        let base = out.mem.as_mut_ptr();
        let block = out.blocks[0].clone();
        return g.with_sends(|g, sends| {
            // SAFETY: `input` and the user's receive buffer outlive the call's transfers
            // (with_sends and finish_recvs wait for them).
            unsafe {
                sends.push(g.isend_bytes(r + 1, tag, input.as_ptr(), input.len()));
                let q = (block.bytes() > 0).then(|| g.irecv_block(r + 1, tag, base, &block));
                g.finish_recvs(q.as_slice())
            }
        });
    }
    let mut acc = super::scratch(total * size);
    let mut tmp = super::scratch(total * size);
    let (accp, tmpp) = (acc.as_mut_ptr(), tmp.as_mut_ptr());
    // SAFETY: element range lo..hi of the scratch vector at `p` (total elements).
    let part = |p: *mut u8, lo: usize, hi: usize| unsafe {
        std::slice::from_raw_parts_mut(p.add(lo * size), (hi - lo) * size)
    };
    let input_part = |lo: usize, hi: usize| &input[lo * size..hi * size];
    let result = g.with_sends(|g, sends| {
        // Whether `acc` holds the partial result of this member's window yet (else the input does).
        let mut combined = false;
        let nr = if r < 2 * rem {
            // SAFETY: our scratch, received into before it is read.
            let q = unsafe { g.irecv_bytes(r - 1, tag, accp, total * size) };
            g.finish_recvs(&[q])?;
            red.apply(input, part(accp, 0, total));
            combined = true;
            r / 2
        } else {
            r - rem
        };
        let newdisp = folded_displacements(&disp, pof2, rem, total);
        for HalvingStep { partner, send, recv } in halving_steps(nr, pof2) {
            let dst = real_rank(partner, rem);
            let (slo, shi, rlo, rhi) = (newdisp[send.0], newdisp[send.1], newdisp[recv.0], newdisp[recv.1]);
            // The partner's half of the window comes into `tmp`, or for the first exchange
            // straight into `acc`, where the input is then combined in.
            let into = if combined { tmpp } else { accp };
            // SAFETY: scratch ranges outside the window being sent; the sent range (input or
            // `acc`) is not written again; with_sends waits for the send.
            unsafe {
                let q = (rhi > rlo).then(|| g.irecv_bytes(dst, tag, into.add(rlo * size), (rhi - rlo) * size));
                if shi > slo {
                    let from = if combined { accp as *const u8 } else { input.as_ptr() };
                    sends.push(g.isend_bytes(dst, tag, from.add(slo * size), (shi - slo) * size));
                }
                if let Some(q) = q {
                    g.finish_recvs(&[q])?;
                }
            }
            if combined {
                red.apply(part(tmpp, rlo, rhi), part(accp, rlo, rhi));
            } else {
                red.apply(input_part(rlo, rhi), part(accp, rlo, rhi));
            }
            combined = true;
        }
        if r < 2 * rem {
            let (lo, hi) = (disp[r - 1], disp[r]);
            if hi > lo {
                // SAFETY: the folded member's finished block; `acc` outlives the send.
                sends.push(unsafe { g.isend_bytes(r - 1, tag, accp.add(lo * size), (hi - lo) * size) });
            }
        }
        out.put(0, part(accp, disp[r], disp[r + 1]));
        Ok(())
    });
    super::recycle(acc);
    super::recycle(tmp);
    result
}

/// Reduce-scatter by pairwise exchange (commutative operations): in step i every member
/// sends member r + i its block of the input (straight from it) and combines the block it
/// gets from r - i into its own result, kept in the user's receive block when contiguous.
/// The first block received lands there directly and the input is combined into it, so
/// the own input block is never copied.
pub(super) fn reduce_scatter_pairwise(
    g: &mut Group,
    input: &[u8],
    red: &crate::op::Reduction,
    counts: &[usize],
    tag: i32,
    out: &mut Out,
) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let size = red.elem_size();
    let disp = displacements(counts, size);
    let len = disp[r + 1] - disp[r];
    let block = out.blocks[0].clone();
    let mut staged = Vec::new();
    let accp: *mut u8 = if block.is_contiguous() && block.bytes() >= len {
        out.mem[block.offset..].as_mut_ptr()
    } else {
        staged = super::scratch(len);
        staged.as_mut_ptr()
    };
    let mut tmp = super::scratch(if n > 2 { len } else { 0 });
    let tmpp = tmp.as_mut_ptr();
    let own = &input[disp[r]..disp[r + 1]];
    let result = g.with_sends(|g, sends| {
        for i in 1..n {
            let (dst, src) = ((r + i) % n, (r + n - i) % n);
            let into = if i == 1 { accp } else { tmpp };
            // SAFETY: `len` bytes of the user's block or our scratch, read only after the
            // receive finished.
            let q = (len > 0).then(|| unsafe { g.irecv_bytes(src, tag, into, len) });
            if disp[dst + 1] > disp[dst] {
                // SAFETY: `input` outlives the call's sends (with_sends waits for them).
                sends
                    .push(unsafe { g.isend_bytes(dst, tag, input.as_ptr().add(disp[dst]), disp[dst + 1] - disp[dst]) });
            }
            if let Some(q) = q {
                let got = g.finish_recv(q)?;
                if got != len {
                    return crate::error::err(
                        crate::abi::consts::MPI_ERR_TRUNCATE,
                        format!("reduce_scatter: rank {src} sent {got} bytes for a block of {len}"),
                    );
                }
                // SAFETY: `len` bytes at `accp` (and `tmpp` from step 2 on), received above.
                let acc = unsafe { std::slice::from_raw_parts_mut(accp, len) };
                if i == 1 {
                    red.apply(own, acc);
                } else {
                    red.apply(unsafe { std::slice::from_raw_parts(tmpp, len) }, acc);
                }
            }
        }
        Ok(())
    });
    if !staged.is_empty() {
        out.put(0, &staged);
        super::recycle(staged);
    }
    super::recycle(tmp);
    result
}

/// Direct reduce-scatter (any operation): every member sends each other member that
/// member's block of its input, all at once, and combines the n blocks it gets in rank order.
/// One round: when ranks outnumber cores each member needs to run about once per call (a
/// tree or halving round waits on partners that may not have run yet). Small vectors: every
/// member moves its whole input once, in n - 1 messages.
pub(super) fn reduce_scatter_direct(
    g: &mut Group,
    input: &[u8],
    red: &crate::op::Reduction,
    counts: &[usize],
    tag: i32,
    out: &mut Out,
) -> MpiResult<()> {
    let (n, r) = (g.size(), g.rank());
    let size = red.elem_size();
    let disp = displacements(counts, size);
    let len = disp[r + 1] - disp[r];
    // Block k of `all` holds member k's contribution to this member's block.
    let mut all = super::scratch(n * len);
    let at = all.as_mut_ptr();
    // Block k of the scratch, from member k.
    let parts: Vec<Block> = (0..n).map(|k| Block::bytes_at(k * len, len)).collect();
    let result = g.with_sends(|g, sends| {
        let peers = (r + 1..n).chain(0..r);
        // SAFETY: distinct `len`-byte blocks of our scratch, read only after the receives
        // finished (finish_recvs waits for all of them, also on error).
        let reqs = unsafe { g.recv_each(peers.clone().map(|k| (k, &parts[k])), tag, at) };
        for k in peers {
            if disp[k + 1] > disp[k] {
                // SAFETY: `input` outlives the call's sends (with_sends waits for those it lists).
                sends.push(unsafe { g.isend_bytes(k, tag, input.as_ptr().add(disp[k]), disp[k + 1] - disp[k]) });
            }
        }
        g.finish_recvs(&reqs)
    });
    result?;
    if len == 0 {
        super::recycle(all);
        return Ok(());
    }
    all[r * len..(r + 1) * len].copy_from_slice(&input[disp[r]..disp[r + 1]]);
    // Folded into the seed's block, in place.
    let (seed, rest) = red.fold_order(n);
    let (below, from_seed) = all.split_at_mut(seed * len);
    let (acc, above) = from_seed.split_at_mut(len);
    for k in rest {
        let theirs =
            if k < seed { &below[k * len..(k + 1) * len] } else { &above[(k - seed - 1) * len..(k - seed) * len] };
        red.apply(theirs, acc);
    }
    out.put(0, acc);
    super::recycle(all);
    Ok(())
}

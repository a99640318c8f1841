//! Collective entry points: check arguments as MPICH does, decode the user buffers into block
//! lists, and call `crate::coll` (intercommunicators: `crate::coll::inter`, always as a
//! schedule).
//!
//! Each collective is one impl taking a `Mode` (and `CArray`s for the v/w forms), named after
//! its widest member; build.rs generates the blocking, `MPI_I...` and `..._init` entries with
//! `int` and `_c` counts from it (see `abi::family`).

// The entry points take MPI's C argument lists as they are.
#![allow(clippy::too_many_arguments)]

use super::consts::*;
use super::family::{CArray, Mode};
use super::types::*;
use crate::coll::sched::{self, Schedule, Target, UserBuf};
use crate::coll::{self, Block, Blocks, Group, In, Out, inter};
use crate::datatype::{self, Layout};
use crate::error::{MpiResult, err};
use crate::op::Reduction;
use crate::p2p::request::{self, Persistent, Request, Status};
use crate::runtime;
use std::borrow::Cow;
use std::ffi::{c_int, c_void};

#[inline]
fn is_in_place(p: *const c_void) -> bool {
    p as isize == -1
}

#[inline]
pub(super) fn check_count(count: i64, what: &str) -> MpiResult<usize> {
    if count < 0 { bad_count(count, what) } else { Ok(count as usize) }
}

#[cold]
#[inline(never)]
fn bad_count(count: i64, what: &str) -> MpiResult<usize> {
    err(MPI_ERR_COUNT, format!("invalid {what} argument ({what}={count})"))
}

/// The root argument of a rooted collective: a member's rank on an intracommunicator, the part
/// this process plays on an intercommunicator.
#[derive(Clone, Copy)]
enum Rooted {
    Intra(usize),
    Inter(inter::Root),
}

impl Rooted {
    /// Whether this process (rank `rank`) is the root.
    fn is_root(self, rank: usize) -> bool {
        match self {
            Rooted::Intra(root) => root == rank,
            Rooted::Inter(role) => role == inter::Root::Here,
        }
    }

    /// Whether this process's own block counts (gather's and reduce's input, scatter's
    /// output): on every member of an intracommunicator, in the non-root group of an
    /// intercommunicator.
    fn takes_part(self) -> bool {
        matches!(self, Rooted::Intra(_) | Rooted::Inter(inter::Root::Remote(_)))
    }
}

#[inline]
fn check_root(g: &Group, root: c_int) -> MpiResult<Rooted> {
    if !g.is_inter() && root >= 0 && (root as usize) < g.size() {
        return Ok(Rooted::Intra(root as usize));
    }
    check_root_other(g, root)
}

/// `check_root` on an intercommunicator, or the error of an invalid root on an
/// intracommunicator.
#[cold]
#[inline(never)]
fn check_root_other(g: &Group, root: c_int) -> MpiResult<Rooted> {
    if g.is_inter() {
        return match root {
            MPI_ROOT => Ok(Rooted::Inter(inter::Root::Here)),
            MPI_PROC_NULL => Ok(Rooted::Inter(inter::Root::Idle)),
            r if r >= 0 && (r as usize) < g.peer_count() => Ok(Rooted::Inter(inter::Root::Remote(r as usize))),
            _ => err(
                MPI_ERR_ROOT,
                format!(
                    "invalid root argument (root={root}; on an intercommunicator MPI_ROOT, MPI_PROC_NULL or a rank \
                     of the remote group, of size {})",
                    g.peer_count()
                ),
            ),
        };
    }
    err(MPI_ERR_ROOT, format!("invalid root argument (root={root}, communicator size {})", g.size()))
}

/// MPI_ERR_BUFFER for MPI_IN_PLACE on an intercommunicator (`p` is `what`, significant here).
fn check_not_in_place_inter(g: &Group, p: *const c_void, what: &str) -> MpiResult<()> {
    if g.is_inter() && is_in_place(p) {
        return err(MPI_ERR_BUFFER, format!("MPI_IN_PLACE is not allowed as {what} on an intercommunicator"));
    }
    Ok(())
}

#[inline]
pub(super) fn check_buf(p: *const c_void, bytes: usize, what: &str) -> MpiResult<()> {
    if bytes > 0 && p.is_null() {
        return null_buffer(what);
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn null_buffer(what: &str) -> MpiResult<()> {
    err(MPI_ERR_BUFFER, format!("invalid {what} (NULL with a nonzero count)"))
}

#[inline]
pub(super) fn check_not_in_place(p: *const c_void, what: &str) -> MpiResult<()> {
    if is_in_place(p) {
        return err(MPI_ERR_BUFFER, format!("MPI_IN_PLACE is not allowed as {what} here"));
    }
    Ok(())
}

#[inline]
fn check_alias(send: *const c_void, recv: *const c_void) -> MpiResult<()> {
    if send == recv && !send.is_null() {
        return err(MPI_ERR_BUFFER, "sendbuf and recvbuf are the same buffer (aliased); use MPI_IN_PLACE instead");
    }
    Ok(())
}

/// MPI_ERR_BUFFER when a member's own buffer is its own block of the buffer split among the
/// members (an MPI_Allgather send buffer at its place in the receive buffer, the root's
/// MPI_Gather send or MPI_Scatter receive buffer): the aliasing MPI_IN_PLACE exists for.
/// Checked as MPICH does, so that every member of such a call fails alike rather than some
/// going on into the collective and waiting for the others.
fn check_own_block_alias(own: &Region, split: &Region, me: usize) -> MpiResult<()> {
    if own.block_ptr(0).is_some() && own.block_ptr(0) == split.block_ptr(me) {
        return err(
            MPI_ERR_BUFFER,
            "sendbuf and recvbuf meet at this member's block (aliased); use MPI_IN_PLACE instead",
        );
    }
    Ok(())
}

/// A run of bytes in user memory: (start, length).
type ByteRun = (*const u8, usize);

/// Where `count` elements of `layout` at `p` lie when they are one run of bytes (a
/// contiguous type, as most calls pass): the `coll::*_bytes` entries take such buffers
/// without block lists.
#[inline]
fn contiguous_run(p: *const c_void, count: usize, layout: &Layout) -> Option<ByteRun> {
    let at = layout.contiguous_at()?;
    Some(((p as *const u8).wrapping_offset(at), count * layout.size))
}

/// Whether two runs of bytes share memory.
#[inline]
fn runs_overlap((a, alen): ByteRun, (b, blen): ByteRun) -> bool {
    let (a, b) = (a as usize, b as usize);
    alen > 0 && blen > 0 && a < b + blen && b < a + alen
}

/// # Safety
/// The run is readable user memory for `'a`, not written meanwhile.
unsafe fn run_bytes<'a>((p, len): ByteRun) -> &'a [u8] {
    // SAFETY: caller contract (an empty run is not dereferenced).
    if len == 0 { &[] } else { unsafe { std::slice::from_raw_parts(p, len) } }
}

/// # Safety
/// The run is writable user memory for `'a`, not otherwise accessed meanwhile.
unsafe fn run_bytes_mut<'a>((p, len): ByteRun) -> &'a mut [u8] {
    // SAFETY: caller contract (an empty run is not dereferenced).
    if len == 0 { &mut [] } else { unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) } }
}

/// `count` elements of `datatype` at `p` as one run of bytes, when none of the general path's
/// checks can fail and no lookup beyond the type's is needed: a count of at least 0, a
/// committed type whose elements lie in one run, a buffer that is neither MPI_IN_PLACE nor
/// NULL with bytes to hold. None otherwise: the general path checks everything again and
/// reports what is wrong, in its order.
#[inline]
fn plain_run(p: *const c_void, count: i64, datatype: MPI_Datatype) -> Option<ByteRun> {
    let elements = datatype::elements(datatype)?;
    let at = elements.contiguous_at?;
    let len = usize::try_from(count).ok()? * elements.size;
    if is_in_place(p) || (len > 0 && p.is_null()) {
        return None;
    }
    Some(((p as *const u8).wrapping_offset(at), len))
}

/// Whether a collective call may take a plain path: blocking, on an intracommunicator.
#[inline]
fn plain_call(g: &Group, mode: &Mode) -> bool {
    matches!(mode, Mode::Blocking) && !g.is_inter()
}

/// The root of a plain call (`plain_call`) when it is a valid rank; None otherwise (the
/// general path runs).
#[inline]
fn plain_root(g: &Group, mode: &Mode, root: c_int) -> Option<usize> {
    usize::try_from(root).ok().filter(|&r| plain_call(g, mode) && r < g.size())
}

/// The buffers of a blocking MPI_Gather (of MPI_Scatter, with the roles swapped) on an
/// intracommunicator as bytes, when every argument is plainly valid (`plain_run`): the valid
/// root, this member's block `own` (None: MPI_IN_PLACE at the root) and, at the root, the `n`
/// blocks `all`; with the block size (0: nothing to move). None: the general path runs.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn rooted_plain(
    g: &Group,
    mode: &Mode,
    root: c_int,
    own_buf: *const c_void,
    own_count: i64,
    own_type: MPI_Datatype,
    all_buf: *const c_void,
    all_count: i64,
    all_type: MPI_Datatype,
) -> Option<(usize, Option<ByteRun>, Option<ByteRun>, usize)> {
    let (n, root) = (g.size(), plain_root(g, mode, root)?);
    if g.rank() != root {
        let own = plain_run(own_buf, own_count, own_type)?;
        return Some((root, Some(own), None, own.1));
    }
    let (at, block) = plain_run(all_buf, all_count, all_type)?;
    let all = (at, block * n);
    let own = if is_in_place(own_buf) { None } else { Some(plain_run(own_buf, own_count, own_type)?) };
    if own.is_some_and(|o| o.1 != block || runs_overlap(o, all)) {
        return None;
    }
    Some((root, own, Some(all), block))
}

/// The buffers of a blocking MPI_Allgather (`send_blocks` 1) or MPI_Alltoall (`send_blocks`
/// the size) on an intracommunicator as bytes, when every argument is plainly valid
/// (`plain_run`) and the blocks match: the send run (None: MPI_IN_PLACE), the receive run
/// and the block size (0: nothing to move). None: the general path runs.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn exchange_plain(
    g: &Group,
    mode: &Mode,
    send_blocks: usize,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
) -> Option<(Option<ByteRun>, ByteRun, usize)> {
    if !plain_call(g, mode) {
        return None;
    }
    let (at, block) = plain_run(recvbuf, recvcount, recvtype)?;
    let recv = (at, block * g.size());
    let send = if is_in_place(sendbuf) {
        None
    } else {
        let (at, len) = plain_run(sendbuf, sendcount, sendtype).filter(|s| s.1 == block)?;
        let send = (at, len * send_blocks);
        if runs_overlap(send, recv) {
            return None;
        }
        Some(send)
    };
    Some((send, recv, block))
}

/// The reduction of `op` on `datatype`, whose `layout` the caller looked up first (so an
/// invalid datatype is reported before an invalid operation, as in MPICH).
fn reduction(op: MPI_Op, datatype: MPI_Datatype, layout: &Layout) -> MpiResult<Reduction> {
    Reduction::from_handles(op, datatype, layout)
}

/// How a buffer is split among the members: the same count at consecutive places, or a
/// count and a displacement (in extents) per member.
#[derive(Clone, Copy)]
pub(super) enum Spread {
    Uniform(i64),
    Varying { counts: CArray, displs: CArray },
}

/// (byte offset, count, layout) of each member's block of a buffer.
///
/// # Safety
/// Varying arrays point at `n` elements (or are NULL).
unsafe fn spread_blocks(spread: Spread, n: usize, layout: Layout, what: &str) -> MpiResult<Vec<(i64, usize, Layout)>> {
    let ext = layout.extent as i64;
    match spread {
        Spread::Uniform(c) => {
            let c = check_count(c, what)?;
            Ok((0..n).map(|i| ((i * c) as i64 * ext, c, layout.clone())).collect())
        }
        Spread::Varying { counts, displs } => {
            // SAFETY: forwarded from the caller.
            let (counts, displs) = unsafe { (counts.read(n, what)?, displs.read(n, "displacements")?) };
            counts.iter().zip(&displs).map(|(&c, &d)| Ok((d * ext, check_count(c, what)?, layout.clone()))).collect()
        }
    }
}

/// The region of a buffer split among `n` members as `spread` says.
///
/// # Safety
/// As `spread_blocks`.
unsafe fn spread_region(p: *const c_void, spread: Spread, n: usize, layout: Layout, what: &str) -> MpiResult<Region> {
    match spread {
        Spread::Uniform(c) => Ok(Region::uniform(p, n, check_count(c, what)?, layout)),
        // SAFETY: forwarded from the caller.
        Spread::Varying { .. } => Ok(Region::new(p, &unsafe { spread_blocks(spread, n, layout, what)? })),
    }
}

/// A user buffer's extent in memory, computed from its blocks; not yet borrowed.
pub(super) struct Region {
    base: *const u8,
    span: usize,
    blocks: Blocks,
}

impl Region {
    /// Blocks given as (byte offset from `p`, count, layout); offsets may be negative.
    pub(super) fn new(p: *const c_void, raw: &[(i64, usize, Layout)]) -> Region {
        // A block's data starts at `o + lower` (derived types may start before or after the
        // pointer); its `Block::offset` is where that start lies in the region.
        let used = raw.iter().filter(|(_, c, l)| *c > 0 && l.size > 0);
        let lo = used.clone().map(|(o, c, l)| o + l.lower(*c) as i64).min().unwrap_or(0);
        let hi = used.map(|(o, c, l)| o + l.lower(*c) as i64 + l.span(*c) as i64).max().unwrap_or(0);
        let blocks = raw
            .iter()
            .map(|(o, count, layout)| Block {
                offset: if *count > 0 && layout.size > 0 { (o + layout.lower(*count) as i64 - lo) as usize } else { 0 },
                count: *count,
                layout: layout.clone(),
            })
            .collect();
        let span = (hi - lo).max(0) as usize;
        Region { base: (p as *const u8).wrapping_offset(lo as isize), span, blocks }
    }

    /// One block of `count` elements at `p` (the common single-buffer case, without the
    /// general bounds search).
    pub(super) fn one(p: *const c_void, count: usize, layout: Layout) -> Region {
        let (lower, span) = (layout.lower(count), layout.span(count));
        Region {
            base: (p as *const u8).wrapping_offset(lower),
            span,
            blocks: Blocks::one(Block { offset: 0, count, layout }),
        }
    }

    /// `n` blocks of `count` elements each, block i at `i * count` extents from `p`
    /// (MPI_Gather/Scatter/Allgather/Alltoall buffers), built in one pass: block i's data
    /// starts `i * count * extent` bytes after block 0's.
    fn uniform(p: *const c_void, n: usize, count: usize, layout: Layout) -> Region {
        if count == 0 || layout.size == 0 || n == 0 {
            let blocks = Blocks::from_fn(n, |_| Block { offset: 0, count, layout: layout.clone() });
            return Region { base: p as *const u8, span: 0, blocks };
        }
        let stride = count * layout.extent;
        let (lower, span) = (layout.lower(count), layout.span(count));
        let blocks = Blocks::from_fn(n, |i| Block { offset: i * stride, count, layout: layout.clone() });
        Region { base: (p as *const u8).wrapping_offset(lower), span: (n - 1) * stride + span, blocks }
    }

    /// Bytes of data in all blocks.
    fn bytes(&self) -> usize {
        self.blocks.iter().map(Block::bytes).sum()
    }

    /// MPI_ERR_BUFFER when the data would start at address 0: a NULL pointer is only
    /// MPI_BOTTOM with types whose displacements are absolute addresses (as in MPICH).
    pub(super) fn check_not_null(&self, what: &str) -> MpiResult<()> {
        if self.span > 0 && self.base.is_null() {
            return err(MPI_ERR_BUFFER, format!("invalid {what} (NULL with a nonzero count)"));
        }
        Ok(())
    }

    /// The pointer the caller gave for block `i` (its elements' displacements count from
    /// it), when the block holds data.
    fn block_ptr(&self, i: usize) -> Option<*const u8> {
        self.blocks.get(i).filter(|b| b.bytes() > 0).map(|b| b.base(self.base))
    }

    fn overlaps(&self, o: &Region) -> bool {
        let (a, b) = (self.base as usize, o.base as usize);
        self.span > 0 && o.span > 0 && a < b + o.span && b < a + self.span
    }

    /// # Safety
    /// The region is readable user memory for the duration of the call; when `copy` is
    /// false nothing writes to it meanwhile.
    unsafe fn read<'a>(self, copy: bool) -> In<'a> {
        let mem: Cow<'a, [u8]> = if self.span == 0 {
            Cow::Borrowed(&[])
        } else {
            // SAFETY: caller contract; a copy is taken before any mutable view exists.
            let s = unsafe { std::slice::from_raw_parts(self.base, self.span) };
            if copy { Cow::Owned(s.to_vec()) } else { Cow::Borrowed(s) }
        };
        In { mem, blocks: self.blocks }
    }

    /// # Safety
    /// The region is writable user memory, not otherwise accessed during the call.
    /// The region for a nonblocking or persistent collective.
    ///
    /// # Safety
    /// The region is user memory that stays valid until the operation completes (or, for a
    /// persistent request, while the request exists), as MPI requires.
    unsafe fn keep(self) -> UserBuf {
        // SAFETY: caller contract.
        unsafe { UserBuf::new(self.base as *mut u8, self.span, self.blocks) }
    }

    /// # Safety
    /// The region is writable user memory, not otherwise accessed during the call.
    unsafe fn write<'a>(self) -> Out<'a> {
        let mem: &'a mut [u8] = if self.span == 0 {
            &mut []
        } else {
            // SAFETY: caller contract.
            unsafe { std::slice::from_raw_parts_mut(self.base as *mut u8, self.span) }
        };
        Out { mem, blocks: self.blocks }
    }
}

/// Borrows an input and an output region, copying the input first when they overlap (a
/// program may pass overlapping buffers that are not the same pointer; MPICH accepts that).
///
/// # Safety
/// Both regions describe user memory valid for the call.
pub(super) unsafe fn borrow_pair<'a>(send: Option<Region>, recv: Option<Region>) -> (Option<In<'a>>, Option<Out<'a>>) {
    let copy = matches!((&send, &recv), (Some(s), Some(r)) if s.overlaps(r));
    // SAFETY: caller contract; an overlapping input is copied before the output is borrowed.
    unsafe {
        let input = send.map(|s| s.read(copy));
        (input, recv.map(|r| r.write()))
    }
}

/// The regions of a nonblocking or persistent collective. Inputs are packed when each
/// schedule is built, before it writes anything, so overlapping buffers need no copy.
///
/// # Safety
/// As `Region::keep`.
pub(super) unsafe fn keep_pair(send: Option<Region>, recv: Option<Region>) -> (Option<UserBuf>, Option<UserBuf>) {
    // SAFETY: caller contract.
    unsafe { (send.map(|r| r.keep()), recv.map(|r| r.keep())) }
}

/// Packed block `i` of the input: the send buffer, or (MPI_IN_PLACE) the output buffer.
fn pack_input(send: &Option<UserBuf>, out: Option<&UserBuf>, i: usize) -> Vec<u8> {
    match (send, out) {
        (Some(b), _) => b.pack(i),
        (None, Some(o)) => o.pack(i),
        (None, None) => unreachable!("MPI_IN_PLACE without an output buffer is rejected at the edge"),
    }
}

/// Starts the schedule `build` fills in (Mode::Start), or makes a persistent request that
/// builds it at each start (Mode::Init), and stores the request handle; or runs it to
/// completion (Mode::Blocking: the collectives that exist only as schedules).
pub(super) fn schedule(
    g: &mut Group,
    comm: MPI_Comm,
    mode: Mode,
    red: Option<Reduction>,
    out: Option<UserBuf>,
    build: impl Fn(&mut Schedule) + 'static,
) -> MpiResult {
    let (Mode::Start(request) | Mode::StartForWait(request) | Mode::Init(request)) = mode else {
        let target = Target::next_blocking(g);
        let mut s = Schedule::new(&target, red, out);
        build(&mut s);
        return sched::run(g.engine(), s);
    };
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    let target = if let Mode::StartForWait(_) = mode { Target::next_blocking(g) } else { Target::next(g) };
    let e = g.engine();
    let id = if let Mode::Start(_) | Mode::StartForWait(_) = mode {
        let mut s = Schedule::new(&target, red, out);
        build(&mut s);
        let id = e.reqs.insert(Request::started(request::Op::Coll(Box::new(s)), comm));
        sched::kick(e, id);
        id
    } else {
        let start: Box<dyn Fn() -> request::Op> = Box::new(move || {
            let mut s = Schedule::new(&target, red.clone(), out.clone());
            build(&mut s);
            request::Op::Coll(Box::new(s))
        });
        let mut r = Request::completed(Status::empty(), comm);
        r.persistent = Some(Persistent { start, buffered: false });
        r.active = false;
        e.reqs.insert(r)
    };
    // SAFETY: checked non-null; the caller passes a writable request variable.
    unsafe { *request = (DIRECT_REQUEST | id) as MPI_Request };
    Ok(())
}

/// Whether a blocking collective on an intracommunicator returns at once: it moves `bytes`,
/// computed alike by every member from its own arguments, and there are none (MPICH returns
/// at once too; the standard asks no synchronisation of such calls).
/// `bytes` runs only then (it checks arguments that are significant only there).
fn nothing_to_move(g: &Group, mode: &Mode, bytes: impl FnOnce() -> MpiResult<usize>) -> MpiResult<bool> {
    Ok(matches!(mode, Mode::Blocking) && !g.is_inter() && bytes()? == 0)
}

/// One rank's own block of a rooted collective (a Gather's input, a Scatter's output):
/// its count and datatype checked, and the buffer when the block has bytes, in MPICH's order.
#[inline]
fn checked_block(
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    count_name: &str,
    buf_name: &str,
) -> MpiResult<(usize, Layout)> {
    let count = check_count(count, count_name)?;
    let layout = datatype::layout(datatype)?;
    check_buf(buf, count * layout.size, buf_name)?;
    Ok((count, layout))
}

/// Bytes of `count` elements of `datatype` (checked).
#[inline]
fn bytes_of(count: i64, datatype: MPI_Datatype, what: &str) -> MpiResult<usize> {
    Ok(check_count(count, what)? * datatype::layout(datatype)?.size)
}

/// Handle prefix of requests (as in abi::p2p).
const DIRECT_REQUEST: u32 = 0xac00_0000;

/// Runs collective `f` in `mode` on the group of `comm`, which must be an intracommunicator.
fn with_group(comm: MPI_Comm, mode: Mode, f: impl FnOnce(&mut Group, Mode) -> MpiResult) -> MpiResult {
    with_any_group(comm, mode, |g, mode| {
        if g.is_inter() {
            return err(MPI_ERR_COMM, "this collective is not defined on intercommunicators");
        }
        f(g, mode)
    })
}

/// Runs collective `f` in `mode` on the group of `comm`, an intra- or an intercommunicator.
fn with_any_group(comm: MPI_Comm, mode: Mode, f: impl FnOnce(&mut Group, Mode) -> MpiResult) -> MpiResult {
    in_mode(mode, |mode| {
        runtime::with(|rt| {
            let c = rt.comms.get(comm)?;
            let mut g = Group::new(&mut rt.engine, c);
            f(&mut g, mode)
        })
    })
}

/// Runs a collective in `mode`. At MPI_THREAD_MULTIPLE a blocking one runs as its
/// nonblocking schedule plus a wait that lets other threads into the library between polls:
/// holding the library for a whole collective deadlocks ranks whose threads run collectives
/// on different communicators in different orders. Every rank does so when one started at
/// MULTIPLE (`runtime::collectives_as_schedules`: all must send the same messages);
/// otherwise `run(Mode::Blocking)`.
pub(super) fn in_mode(mode: Mode, run: impl FnOnce(Mode) -> MpiResult) -> MpiResult {
    if !matches!(mode, Mode::Blocking) || !runtime::collectives_as_schedules() {
        return run(mode);
    }
    let mut request = MPI_REQUEST_NULL;
    run(Mode::StartForWait(&mut request))?;
    super::p2p::wait_request(request)
}

// ----- barrier, broadcast -----

/// # Safety
/// The request pointer of `mode` is NULL or writable (as for every collective below).
pub unsafe fn MPI_Barrier(comm: MPI_Comm, mode: Mode) -> MpiResult {
    with_any_group(comm, mode, |g, mode| match mode {
        _ if g.is_inter() => schedule(g, comm, mode, None, None, inter::barrier),
        Mode::Blocking => coll::barrier(g),
        _ => schedule(g, comm, mode, None, None, sched::barrier),
    })
}

/// # Safety
/// `buffer` holds `count` elements of `datatype`.
pub unsafe fn MPI_Bcast_c(
    buffer: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    with_any_group(comm, mode, |g, mode| {
        // A contiguous buffer, every argument plainly valid: as bytes.
        if let Some(root) = plain_root(g, &mode, root)
            && let Some(run) = plain_run(buffer, count, datatype)
        {
            if run.1 == 0 {
                return Ok(());
            }
            // SAFETY: the caller's buffer, ours for this call.
            return coll::bcast_bytes(g, unsafe { run_bytes_mut(run) }, root);
        }
        let count = check_count(count, "count")?;
        let layout = datatype::layout(datatype)?;
        let root = check_root(g, root)?;
        // The buffer is not significant at the idle processes of an intercommunicator's root group.
        let count = if root.takes_part() || root.is_root(g.rank()) { count } else { 0 };
        check_buf(buffer, count * layout.size, "buffer")?;
        check_not_in_place(buffer, "the buffer")?;
        if nothing_to_move(g, &mode, || Ok(count * layout.size))? {
            return Ok(());
        }
        let region = Region::one(buffer, count, layout);
        let root = match root {
            Rooted::Inter(role) => {
                // SAFETY: the caller's buffer, valid until the operation completes.
                let out = unsafe { region.keep() };
                return schedule(g, comm, mode, None, Some(out), move |s| inter::bcast(s, role));
            }
            Rooted::Intra(root) => root,
        };
        if let Mode::Blocking = mode {
            // SAFETY: the caller's buffer, used only for this call.
            let mut out = unsafe { region.write() };
            return coll::bcast(g, &mut out, root);
        }
        let out = unsafe { region.keep() };
        schedule(g, comm, mode, None, Some(out), move |s| sched::bcast(s, root))
    })
}

// ----- reductions -----

/// # Safety
/// `sendbuf` (unless MPI_IN_PLACE) and, at the root, `recvbuf` hold `count` elements.
pub unsafe fn MPI_Reduce_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    with_any_group(comm, mode, |g, mode| {
        let count = check_count(count, "count")?;
        let layout = datatype::layout(datatype)?;
        let root = check_root(g, root)?;
        // The operation means nothing to the idle members of the root's group (MPI_PROC_NULL):
        // programs pass any datatype there (MPI_BYTE with count 0, e.g.), which MPICH accepts.
        let red = match root {
            Rooted::Inter(inter::Root::Idle) => None,
            _ => Some(reduction(op, datatype, &layout)?),
        };
        let bytes = count * layout.size;
        let is_root = root.is_root(g.rank());
        let sends = root.takes_part();
        if sends {
            check_not_in_place_inter(g, sendbuf, "sendbuf")?;
        }
        let in_place = sends && is_in_place(sendbuf);
        if in_place && !is_root {
            return err(MPI_ERR_BUFFER, "MPI_IN_PLACE as sendbuf is only allowed at the root");
        }
        if sends && !in_place {
            check_buf(sendbuf, bytes, "sendbuf")?;
        }
        if is_root {
            check_buf(recvbuf, bytes, "recvbuf")?;
            check_not_in_place(recvbuf, "recvbuf")?;
            if sends && !in_place && bytes > 0 {
                check_alias(sendbuf, recvbuf)?;
            }
        }
        if nothing_to_move(g, &mode, || Ok(bytes))? {
            return Ok(());
        }
        if let (Mode::Blocking, Rooted::Intra(root), Some(red)) = (&mode, root, &red)
            && layout.is_contiguous()
        {
            let send = if in_place { None } else { contiguous_run(sendbuf, count, &layout) };
            let recv = if is_root { contiguous_run(recvbuf, count, &layout) } else { None };
            if !matches!((send, recv), (Some(s), Some(r)) if runs_overlap(s, r)) {
                // SAFETY: the caller's buffers, disjoint, valid for this call.
                let (send, recv) = unsafe { (send.map(|s| run_bytes(s)), recv.map(|r| run_bytes_mut(r))) };
                return coll::reduce_bytes(g, send, recv, red, root);
            }
        }
        let send = (sends && !in_place).then(|| Region::one(sendbuf, count, layout.clone()));
        let recv = is_root.then(|| Region::one(recvbuf, count, layout));
        let root = match root {
            Rooted::Inter(role) => {
                // SAFETY: the caller's buffers, valid until the operation completes.
                let (send, recv) = unsafe { keep_pair(send, recv) };
                return schedule(g, comm, mode, red, recv, move |s| {
                    inter::reduce(s, send.as_ref().map_or_else(Vec::new, |b| b.pack(0)), role)
                });
            }
            Rooted::Intra(root) => root,
        };
        let red = red.expect("an intracommunicator reduction has an operation");
        // SAFETY: the caller's buffers, valid for this call.
        if let Mode::Blocking = mode {
            // SAFETY: the caller's buffers, valid for this call.
            let (send, recv) = unsafe { borrow_pair(send, recv) };
            return coll::reduce(g, send, recv, &red, root);
        }
        let (send, recv) = unsafe { keep_pair(send, recv) };
        schedule(g, comm, mode, Some(red), recv, move |s| {
            let mine = pack_input(&send, s.out(), 0);
            sched::reduce(s, mine, root)
        })
    })
}

/// The reductions that take Allreduce's arguments and all allow MPI_IN_PLACE (on
/// intracommunicators).
#[derive(Clone, Copy)]
enum AllReduceLike {
    Allreduce,
    Scan,
    Exscan,
}

/// One of `AllReduceLike`.
///
/// # Safety
/// `sendbuf` (unless MPI_IN_PLACE) and `recvbuf` hold `count` elements.
unsafe fn all_reduce_like(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    mode: Mode,
    kind: AllReduceLike,
) -> MpiResult {
    // The blocking and scheduled algorithms, and the intercommunicator form (Allreduce only:
    // Scan and Exscan are not defined there).
    type Run = fn(&mut Group, Option<In>, Out, &Reduction) -> MpiResult;
    type Nb = fn(&mut Schedule, Vec<u8>);
    let (run, nb, nb_inter): (Run, Nb, Option<Nb>) = match kind {
        AllReduceLike::Allreduce => (coll::allreduce, sched::allreduce, Some(inter::allreduce)),
        AllReduceLike::Scan => (|g, s, r, red| coll::scan(g, s, r, red, false), |s, m| sched::scan(s, m, false), None),
        AllReduceLike::Exscan => (|g, s, r, red| coll::scan(g, s, r, red, true), |s, m| sched::scan(s, m, true), None),
    };
    let body = |g: &mut Group, mode: Mode| {
        let count = check_count(count, "count")?;
        let layout = datatype::layout(datatype)?;
        let red = reduction(op, datatype, &layout)?;
        let bytes = count * layout.size;
        check_not_in_place_inter(g, sendbuf, "sendbuf")?;
        let in_place = is_in_place(sendbuf);
        if !in_place {
            check_buf(sendbuf, bytes, "sendbuf")?;
        }
        check_buf(recvbuf, bytes, "recvbuf")?;
        check_not_in_place(recvbuf, "recvbuf")?;
        if !in_place && bytes > 0 {
            check_alias(sendbuf, recvbuf)?;
        }
        if nothing_to_move(g, &mode, || Ok(bytes))? {
            return Ok(());
        }
        if let (Mode::Blocking, AllReduceLike::Allreduce, false, true) =
            (&mode, kind, g.is_inter(), layout.is_contiguous())
            && let Some(recv) = contiguous_run(recvbuf, count, &layout)
        {
            let send = if in_place { None } else { contiguous_run(sendbuf, count, &layout) };
            if !send.is_some_and(|s| runs_overlap(s, recv)) {
                // SAFETY: the caller's buffers, disjoint, valid for this call.
                let (send, recv) = unsafe { (send.map(|s| run_bytes(s)), run_bytes_mut(recv)) };
                return coll::allreduce_bytes(g, send, recv, &red);
            }
        }
        let send = (!in_place).then(|| Region::one(sendbuf, count, layout.clone()));
        let recv = Some(Region::one(recvbuf, count, layout));
        if let Some(nb) = nb_inter.filter(|_| g.is_inter()) {
            // SAFETY: the caller's buffers, valid until the operation completes.
            let (send, recv) = unsafe { keep_pair(send, recv) };
            return schedule(g, comm, mode, Some(red), recv, move |s| nb(s, send.as_ref().unwrap().pack(0)));
        }
        if let Mode::Blocking = mode {
            // SAFETY: the caller's buffers, valid for this call.
            let (send, recv) = unsafe { borrow_pair(send, recv) };
            return run(g, send, recv.expect("receive buffer"), &red);
        }
        let (send, recv) = unsafe { keep_pair(send, recv) };
        schedule(g, comm, mode, Some(red), recv, move |s| {
            let mine = pack_input(&send, s.out(), 0);
            nb(s, mine)
        })
    };
    if nb_inter.is_some() { with_any_group(comm, mode, body) } else { with_group(comm, mode, body) }
}

pub unsafe fn MPI_Allreduce_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    unsafe { all_reduce_like(sendbuf, recvbuf, count, datatype, op, comm, mode, AllReduceLike::Allreduce) }
}

pub unsafe fn MPI_Scan_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    unsafe { all_reduce_like(sendbuf, recvbuf, count, datatype, op, comm, mode, AllReduceLike::Scan) }
}

pub unsafe fn MPI_Exscan_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    unsafe { all_reduce_like(sendbuf, recvbuf, count, datatype, op, comm, mode, AllReduceLike::Exscan) }
}

pub unsafe fn MPI_Reduce_scatter_block_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    unsafe { reduce_scatter(sendbuf, recvbuf, Spread::Uniform(recvcount), datatype, op, comm, mode) }
}

pub unsafe fn MPI_Reduce_scatter_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: CArray,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let counts = Spread::Varying { counts: recvcounts, displs: recvcounts };
    // SAFETY: forwarded from the caller.
    unsafe { reduce_scatter(sendbuf, recvbuf, counts, datatype, op, comm, mode) }
}

/// Reduce_scatter(_block). `counts` gives the count per member (its displacements are unused).
///
/// # Safety
/// `sendbuf` (or `recvbuf` with MPI_IN_PLACE) holds the sum of the counts; `recvbuf` this
/// member's count.
unsafe fn reduce_scatter(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Spread,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    with_any_group(comm, mode, |g, mode| {
        // On an intercommunicator the counts are this group's; the input is the same length
        // in both groups (MPI-4.1 §6.10).
        let (n, r) = (g.size(), g.rank());
        let counts: Vec<usize> = match counts {
            Spread::Uniform(c) => vec![check_count(c, "recvcount")?; n],
            Spread::Varying { counts, .. } => {
                // SAFETY: the caller's array of n counts.
                let v = unsafe { counts.read(n, "recvcounts")? };
                v.into_iter().map(|c| check_count(c, "recvcounts")).collect::<MpiResult<_>>()?
            }
        };
        let layout = datatype::layout(datatype)?;
        let red = reduction(op, datatype, &layout)?;
        let total: usize = counts.iter().sum();
        check_not_in_place_inter(g, sendbuf, "sendbuf")?;
        let in_place = is_in_place(sendbuf);
        if !in_place {
            check_buf(sendbuf, total * layout.size, "sendbuf")?;
            if total > 0 {
                check_alias(sendbuf, recvbuf)?;
            }
        }
        let own = if in_place { total } else { counts[r] };
        check_buf(recvbuf, own * layout.size, "recvbuf")?;
        check_not_in_place(recvbuf, "recvbuf")?;
        if nothing_to_move(g, &mode, || Ok(total * layout.size))? {
            return Ok(());
        }
        let send = (!in_place).then(|| Region::one(sendbuf, total, layout.clone()));
        // With MPI_IN_PLACE the receive buffer also holds the whole input vector (block 1).
        let recv_blocks: Vec<(i64, usize, Layout)> = if in_place {
            vec![(0, counts[r], layout.clone()), (0, total, layout.clone())]
        } else {
            vec![(0, counts[r], layout.clone())]
        };
        // SAFETY: the caller's buffers, valid for this call.
        let recv = Some(Region::new(recvbuf, &recv_blocks));
        if g.is_inter() {
            let elem = red.elem_size();
            // SAFETY: the caller's buffers, valid until the operation completes.
            let (send, recv) = unsafe { keep_pair(send, recv) };
            return schedule(g, comm, mode, Some(red), recv, move |s| {
                inter::reduce_scatter(s, send.as_ref().unwrap().pack(0), &counts, elem)
            });
        }
        if let Mode::Blocking = mode {
            // SAFETY: the caller's buffers, valid for this call.
            let (send, recv) = unsafe { borrow_pair(send, recv) };
            let recv = recv.expect("receive buffer");
            let whole = recv.blocks.get(1).cloned();
            return coll::reduce_scatter(g, send, whole, recv, &counts, &red);
        }
        let (send, recv) = unsafe { keep_pair(send, recv) };
        schedule(g, comm, mode, Some(red), recv, move |s| {
            // With MPI_IN_PLACE the input is block 1 of the receive buffer.
            let mine = match &send {
                Some(b) => b.pack(0),
                None => pack_input(&None, s.out(), 1),
            };
            sched::reduce_scatter(s, mine, &counts)
        })
    })
}

// ----- gather and scatter -----

pub unsafe fn MPI_Gather_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    unsafe { gather(sendbuf, sendcount, sendtype, recvbuf, Spread::Uniform(recvcount), recvtype, root, comm, mode) }
}

pub unsafe fn MPI_Gatherv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CArray,
    displs: CArray,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let spread = Spread::Varying { counts: recvcounts, displs };
    // SAFETY: forwarded from the caller.
    unsafe { gather(sendbuf, sendcount, sendtype, recvbuf, spread, recvtype, root, comm, mode) }
}

/// Gather(v).
///
/// # Safety
/// The buffers and arrays match the counts, as MPI_Gather(v) requires.
unsafe fn gather(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recv: Spread,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    with_any_group(comm, mode, |g, mode| {
        // MPI_Gather of contiguous buffers, every argument plainly valid: as bytes.
        if let Spread::Uniform(rc) = recv
            && let Some((root, send, recv, block)) =
                rooted_plain(g, &mode, root, sendbuf, sendcount, sendtype, recvbuf, rc, recvtype)
        {
            if block == 0 {
                return Ok(());
            }
            // SAFETY: the caller's buffers, disjoint, valid for this call.
            let (send, recv) = unsafe { (send.map(|s| run_bytes(s)), recv.map(|r| run_bytes_mut(r))) };
            return coll::gather_bytes(g, send, recv, block, root);
        }
        let root = check_root(g, root)?;
        let is_root = root.is_root(g.rank());
        if root.takes_part() {
            check_not_in_place_inter(g, sendbuf, "sendbuf")?;
        }
        let in_place = is_in_place(sendbuf);
        if in_place && !is_root {
            return err(MPI_ERR_BUFFER, "MPI_IN_PLACE as sendbuf is only allowed at the root");
        }
        // Nothing to move: a member's own block, or the root's uniform blocks, are empty.
        // The root's own sendcount is checked too (as MPICH does), unless MPI_IN_PLACE.
        let mine = || match recv {
            _ if !is_root => bytes_of(sendcount, sendtype, "sendcount"),
            Spread::Uniform(c) => {
                if !in_place {
                    check_count(sendcount, "sendcount")?;
                }
                bytes_of(c, recvtype, "recvcount")
            }
            Spread::Varying { .. } => Ok(1),
        };
        if nothing_to_move(g, &mode, mine)? {
            return Ok(());
        }
        let send = if in_place || !root.takes_part() {
            None
        } else {
            let (count, layout) = checked_block(sendbuf, sendcount, sendtype, "sendcount", "sendbuf")?;
            Some(Region::one(sendbuf, count, layout))
        };
        // MPI_Gather's blocks have the same size on every rank (the binomial tree may run).
        let uniform = matches!(recv, Spread::Uniform(_));
        let recv = if is_root {
            let layout = datatype::layout(recvtype)?;
            // SAFETY: the caller's arrays, significant at the root.
            let region = unsafe { spread_region(recvbuf, recv, g.peer_count(), layout, "recvcount")? };
            check_buf(recvbuf, region.bytes(), "recvbuf")?;
            check_not_in_place(recvbuf, "recvbuf")?;
            if let Some(s) = &send
                && s.span > 0
            {
                check_alias(sendbuf, recvbuf)?;
                if !g.is_inter() {
                    check_own_block_alias(s, &region, g.rank())?;
                }
            }
            Some(region)
        } else {
            None
        };
        let root = match root {
            Rooted::Inter(role) => {
                // SAFETY: the caller's buffers, valid until the operation completes.
                let (send, recv) = unsafe { keep_pair(send, recv) };
                return schedule(g, comm, mode, None, recv, move |s| {
                    inter::gather(s, send.as_ref().map_or_else(Vec::new, |b| b.pack(0)), role)
                });
            }
            Rooted::Intra(root) => root,
        };
        // SAFETY: the caller's buffers, valid for this call.
        if let Mode::Blocking = mode {
            // SAFETY: the caller's buffers, valid for this call.
            let (send, recv) = unsafe { borrow_pair(send, recv) };
            let gather = if uniform { coll::gather_uniform } else { coll::gather };
            return gather(g, send, recv, root);
        }
        let (send, recv) = unsafe { keep_pair(send, recv) };
        schedule(g, comm, mode, None, recv, move |s| sched::gather(s, send.as_ref().map(|b| b.pack(0)), root, uniform))
    })
}

pub unsafe fn MPI_Scatter_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    unsafe { scatter(sendbuf, Spread::Uniform(sendcount), sendtype, recvbuf, recvcount, recvtype, root, comm, mode) }
}

pub unsafe fn MPI_Scatterv_c(
    sendbuf: *const c_void,
    sendcounts: CArray,
    displs: CArray,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let spread = Spread::Varying { counts: sendcounts, displs };
    // SAFETY: forwarded from the caller.
    unsafe { scatter(sendbuf, spread, sendtype, recvbuf, recvcount, recvtype, root, comm, mode) }
}

/// Scatter(v).
///
/// # Safety
/// The buffers and arrays match the counts, as MPI_Scatter(v) requires.
unsafe fn scatter(
    sendbuf: *const c_void,
    send: Spread,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    with_any_group(comm, mode, |g, mode| {
        // MPI_Scatter of contiguous buffers, every argument plainly valid: as bytes.
        if let Spread::Uniform(sc) = send
            && let Some((root, recv, send, block)) =
                rooted_plain(g, &mode, root, recvbuf, recvcount, recvtype, sendbuf, sc, sendtype)
        {
            if block == 0 {
                return Ok(());
            }
            // SAFETY: the caller's buffers, disjoint, valid for this call.
            let (send, recv) = unsafe { (send.map(|s| run_bytes(s)), recv.map(|r| run_bytes_mut(r))) };
            return coll::scatter_bytes(g, send, recv, block, root);
        }
        let root = check_root(g, root)?;
        let is_root = root.is_root(g.rank());
        if root.takes_part() {
            check_not_in_place_inter(g, recvbuf, "recvbuf")?;
        }
        let in_place = is_in_place(recvbuf);
        if in_place && !is_root {
            return err(MPI_ERR_BUFFER, "MPI_IN_PLACE as recvbuf is only allowed at the root");
        }
        // Nothing to move: a member's own block, or the root's uniform blocks, are empty.
        // The root's own recvcount is checked too (as MPICH does), unless MPI_IN_PLACE.
        let mine = || match send {
            _ if !is_root => bytes_of(recvcount, recvtype, "recvcount"),
            Spread::Uniform(c) => {
                let bytes = bytes_of(c, sendtype, "sendcount")?;
                if !in_place {
                    check_count(recvcount, "recvcount")?;
                }
                Ok(bytes)
            }
            Spread::Varying { .. } => Ok(1),
        };
        if nothing_to_move(g, &mode, mine)? {
            return Ok(());
        }
        // MPI_Scatter's blocks have the same size on every rank (the binomial tree may run).
        let uniform = matches!(send, Spread::Uniform(_));
        let send = if is_root {
            let layout = datatype::layout(sendtype)?;
            // SAFETY: the caller's arrays, significant at the root.
            let region = unsafe { spread_region(sendbuf, send, g.peer_count(), layout, "sendcount")? };
            check_buf(sendbuf, region.bytes(), "sendbuf")?;
            check_not_in_place(sendbuf, "sendbuf")?;
            Some(region)
        } else {
            None
        };
        let recv = if in_place || !root.takes_part() {
            None
        } else {
            let (count, layout) = checked_block(recvbuf, recvcount, recvtype, "recvcount", "recvbuf")?;
            let region = Region::one(recvbuf, count, layout);
            if is_root && region.span > 0 {
                check_alias(sendbuf, recvbuf)?;
                if let Some(split) = &send
                    && !g.is_inter()
                {
                    check_own_block_alias(&region, split, g.rank())?;
                }
            }
            Some(region)
        };
        let n = g.peer_count();
        let root = match root {
            Rooted::Inter(role) => {
                // SAFETY: the caller's buffers, valid until the operation completes.
                let (send, recv) = unsafe { keep_pair(send, recv) };
                return schedule(g, comm, mode, None, recv, move |s| {
                    let pieces = send.as_ref().map(|b| (0..n).map(|i| b.pack(i)).collect()).unwrap_or_default();
                    inter::scatter(s, pieces, role)
                });
            }
            Rooted::Intra(root) => root,
        };
        // SAFETY: the caller's buffers, valid for this call.
        if let Mode::Blocking = mode {
            // SAFETY: the caller's buffers, valid for this call.
            let (send, recv) = unsafe { borrow_pair(send, recv) };
            let scatter = if uniform { coll::scatter_uniform } else { coll::scatter };
            return scatter(g, send, recv, root);
        }
        let (send, recv) = unsafe { keep_pair(send, recv) };
        schedule(g, comm, mode, None, recv, move |s| {
            let pieces = send.as_ref().map(|b| (0..n).map(|i| b.pack(i)).collect()).unwrap_or_default();
            sched::scatter(s, pieces, root, uniform)
        })
    })
}

// ----- allgather, all-to-all -----

pub unsafe fn MPI_Allgather_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    unsafe { allgather(sendbuf, sendcount, sendtype, recvbuf, Spread::Uniform(recvcount), recvtype, comm, mode) }
}

pub unsafe fn MPI_Allgatherv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CArray,
    displs: CArray,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let spread = Spread::Varying { counts: recvcounts, displs };
    // SAFETY: forwarded from the caller.
    unsafe { allgather(sendbuf, sendcount, sendtype, recvbuf, spread, recvtype, comm, mode) }
}

/// Allgather(v).
///
/// # Safety
/// The buffers and arrays match the counts, as MPI_Allgather(v) requires.
unsafe fn allgather(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recv: Spread,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    with_any_group(comm, mode, |g, mode| {
        // MPI_Allgather of contiguous buffers, every argument plainly valid: as bytes.
        if let Spread::Uniform(rc) = recv
            && let Some((send, recv, block)) =
                exchange_plain(g, &mode, 1, sendbuf, sendcount, sendtype, recvbuf, rc, recvtype)
        {
            if block == 0 {
                return Ok(());
            }
            // SAFETY: the caller's buffers, disjoint, valid for this call.
            let (send, recv) = unsafe { (send.map(|s| run_bytes(s)), run_bytes_mut(recv)) };
            return coll::allgather_bytes(g, send, recv, block);
        }
        check_not_in_place_inter(g, sendbuf, "sendbuf")?;
        let in_place = is_in_place(sendbuf);
        if let Spread::Uniform(c) = recv
            && nothing_to_move(g, &mode, || bytes_of(c, recvtype, "recvcount"))?
        {
            return Ok(());
        }
        let send = if in_place {
            None
        } else {
            let (count, layout) = checked_block(sendbuf, sendcount, sendtype, "sendcount", "sendbuf")?;
            Some(Region::one(sendbuf, count, layout))
        };
        let layout = datatype::layout(recvtype)?;
        // SAFETY: the caller's arrays of communicator size.
        let region = unsafe { spread_region(recvbuf, recv, g.peer_count(), layout, "recvcount")? };
        check_buf(recvbuf, region.bytes(), "recvbuf")?;
        check_not_in_place(recvbuf, "recvbuf")?;
        if let Some(s) = &send
            && s.span > 0
        {
            check_alias(sendbuf, recvbuf)?;
            if !g.is_inter() {
                check_own_block_alias(s, &region, g.rank())?;
            }
        }
        let recv = Some(region);
        if g.is_inter() {
            // SAFETY: the caller's buffers, valid until the operation completes.
            let (send, recv) = unsafe { keep_pair(send, recv) };
            return schedule(g, comm, mode, None, recv, move |s| inter::allgather(s, send.as_ref().unwrap().pack(0)));
        }
        if let Mode::Blocking = mode {
            // SAFETY: the caller's buffers, valid for this call.
            let (send, recv) = unsafe { borrow_pair(send, recv) };
            return coll::allgather(g, send, recv.expect("receive buffer"));
        }
        let (send, recv) = unsafe { keep_pair(send, recv) };
        schedule(g, comm, mode, None, recv, move |s| sched::allgather(s, send.as_ref().map(|b| b.pack(0))))
    })
}

pub unsafe fn MPI_Alltoall_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let (s, r) = (Spread::Uniform(sendcount), Spread::Uniform(recvcount));
    // SAFETY: forwarded from the caller.
    unsafe { alltoall(sendbuf, s, Types::One(sendtype), recvbuf, r, Types::One(recvtype), comm, mode) }
}

pub unsafe fn MPI_Alltoallv_c(
    sendbuf: *const c_void,
    sendcounts: CArray,
    sdispls: CArray,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CArray,
    rdispls: CArray,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let s = Spread::Varying { counts: sendcounts, displs: sdispls };
    let r = Spread::Varying { counts: recvcounts, displs: rdispls };
    // SAFETY: forwarded from the caller.
    unsafe { alltoall(sendbuf, s, Types::One(sendtype), recvbuf, r, Types::One(recvtype), comm, mode) }
}

pub unsafe fn MPI_Alltoallw_c(
    sendbuf: *const c_void,
    sendcounts: CArray,
    sdispls: CArray,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CArray,
    rdispls: CArray,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let s = Spread::Varying { counts: sendcounts, displs: sdispls };
    let r = Spread::Varying { counts: recvcounts, displs: rdispls };
    // SAFETY: forwarded from the caller.
    unsafe { alltoall(sendbuf, s, Types::PerRank(sendtypes), recvbuf, r, Types::PerRank(recvtypes), comm, mode) }
}

/// One datatype for every block (displacements in extents), or one per member (Alltoallw:
/// displacements in bytes).
#[derive(Clone, Copy)]
pub(super) enum Types {
    One(MPI_Datatype),
    PerRank(*const MPI_Datatype),
}

/// The blocks of an all-to-all buffer.
///
/// # Safety
/// Arrays hold `n` elements (or are NULL).
pub(super) unsafe fn alltoall_blocks(
    spread: Spread,
    types: Types,
    n: usize,
    what: &str,
) -> MpiResult<Vec<(i64, usize, Layout)>> {
    match types {
        // SAFETY: forwarded from the caller.
        Types::One(dt) => unsafe { spread_blocks(spread, n, datatype::layout(dt)?, what) },
        Types::PerRank(p) => {
            if p.is_null() {
                return err(MPI_ERR_ARG, "invalid datatypes array (NULL)");
            }
            // SAFETY: non-null, n elements (caller contract).
            let dts = unsafe { std::slice::from_raw_parts(p, n) };
            // Byte displacements: spread with a 1-byte "extent", then attach each type.
            // SAFETY: forwarded from the caller.
            let raw = unsafe { spread_blocks(spread, n, crate::datatype::BYTE, what)? };
            raw.iter().zip(dts).map(|(&(off, count, _), &dt)| Ok((off, count, datatype::layout(dt)?))).collect()
        }
    }
}

/// The region of an all-to-all buffer.
///
/// # Safety
/// As `alltoall_blocks`.
unsafe fn alltoall_region(p: *const c_void, spread: Spread, types: Types, n: usize, what: &str) -> MpiResult<Region> {
    match types {
        // SAFETY: forwarded from the caller.
        Types::One(dt) => unsafe { spread_region(p, spread, n, datatype::layout(dt)?, what) },
        // SAFETY: forwarded from the caller.
        Types::PerRank(_) => Ok(Region::new(p, &unsafe { alltoall_blocks(spread, types, n, what)? })),
    }
}

/// Alltoall(v,w).
///
/// # Safety
/// The buffers and arrays match the counts, as MPI_Alltoall(v,w) requires.
unsafe fn alltoall(
    sendbuf: *const c_void,
    send: Spread,
    sendtypes: Types,
    recvbuf: *mut c_void,
    recv: Spread,
    recvtypes: Types,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    with_any_group(comm, mode, |g, mode| {
        let n = g.peer_count();
        let uniform_args = match (send, recv, sendtypes, recvtypes) {
            (Spread::Uniform(sc), Spread::Uniform(rc), Types::One(st), Types::One(rt)) => Some((sc, st, rc, rt)),
            _ => None,
        };
        // MPI_Alltoall of contiguous buffers, every argument plainly valid: as bytes.
        if let Some((sc, st, rc, rt)) = uniform_args
            && let Some((send, recv, block)) = exchange_plain(g, &mode, n, sendbuf, sc, st, recvbuf, rc, rt)
        {
            if block == 0 {
                return Ok(());
            }
            // SAFETY: the caller's buffers, disjoint, valid for this call.
            let (send, recv) = unsafe { (send.map(|s| run_bytes(s)), run_bytes_mut(recv)) };
            return coll::alltoall_bytes(g, send, recv, block);
        }
        check_not_in_place_inter(g, sendbuf, "sendbuf")?;
        let in_place = is_in_place(sendbuf);
        if let Some((sc, st, rc, rt)) = uniform_args {
            let out = || Ok(if in_place { 0 } else { bytes_of(sc, st, "sendcount")? });
            if nothing_to_move(g, &mode, || Ok(out()? + bytes_of(rc, rt, "recvcount")?))? {
                return Ok(());
            }
        }
        let send = if in_place {
            None
        } else {
            // SAFETY: the caller's arrays of communicator size.
            let region = unsafe { alltoall_region(sendbuf, send, sendtypes, n, "sendcount")? };
            region.check_not_null("sendbuf")?;
            Some(region)
        };
        // SAFETY: the caller's arrays of communicator size.
        let region = unsafe { alltoall_region(recvbuf, recv, recvtypes, n, "recvcount")? };
        // MPI_Alltoall's blocks have the same size on every rank (Bruck's algorithm may run).
        let uniform = matches!((recv, recvtypes), (Spread::Uniform(_), Types::One(_)));
        region.check_not_null("recvbuf")?;
        check_not_in_place(recvbuf, "recvbuf")?;
        if let Some(s) = &send
            && s.span > 0
        {
            check_alias(sendbuf, recvbuf)?;
        }
        let recv = Some(region);
        if g.is_inter() {
            // SAFETY: the caller's buffers, valid until the operation completes.
            let (send, recv) = unsafe { keep_pair(send, recv) };
            return schedule(g, comm, mode, None, recv, move |s| {
                inter::alltoall(s, (0..n).map(|i| send.as_ref().unwrap().pack(i)).collect())
            });
        }
        if let Mode::Blocking = mode {
            // SAFETY: the caller's buffers, valid for this call.
            let (send, recv) = unsafe { borrow_pair(send, recv) };
            let all = if uniform { coll::alltoall_uniform } else { coll::alltoall };
            return all(g, send, recv.expect("receive buffer"));
        }
        let (send, recv) = unsafe { keep_pair(send, recv) };
        schedule(g, comm, mode, None, recv, move |s| {
            let outgoing = (0..n).map(|i| pack_input(&send, s.out(), i)).collect();
            sched::alltoall(s, outgoing, uniform)
        })
    })
}

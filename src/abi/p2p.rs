//! Point-to-point entry points: decode handles and pointers, check arguments, call the engine.

use super::consts::*;
use super::family::Mode;
use super::grequest;
use super::types::*;
use crate::datatype::{self, Layout};
use crate::error::{MpiError, MpiResult, err};
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::request::{COMPLETED_SEND, Op, Persistent, Request, SendMode, Status};
use crate::p2p::{Engine, Envelope};
use crate::runtime::{self, Runtime};
use std::ffi::{c_int, c_void};

/// Request handles: kind DIRECT, object REQUEST (0xb), slab index in the low 26 bits.
const DIRECT_REQUEST: u32 = 0xac00_0000;
/// Largest tag (the MPI_TAG_UB attribute).
pub const TAG_UB: c_int = c_int::MAX;

pub(crate) fn request_handle(id: u32) -> MPI_Request {
    (DIRECT_REQUEST | id) as MPI_Request
}

/// The slab index of a live request handle.
pub(super) fn request_id(engine: &Engine, h: MPI_Request) -> MpiResult<u32> {
    let id = (h as u32) & 0x03ff_ffff;
    if (h as u32) & 0xfc00_0000 == DIRECT_REQUEST && engine.reqs.get(id).is_some() {
        Ok(id)
    } else {
        err(MPI_ERR_REQUEST, format!("invalid request (0x{:08x})", h as u32))
    }
}

/// Writes `s` into a C status unless it is MPI_STATUS_IGNORE.
///
/// # Safety
/// `p` is MPI_STATUS_IGNORE (1), null, or points at a writable MPI_Status.
pub unsafe fn write_status(p: *mut MPI_Status, s: &Status, with_error: bool) {
    if p.is_null() || p as usize == 1 {
        return;
    }
    let bytes = s.bytes as u64;
    // SAFETY: the caller guarantees p points at a status.
    let st = unsafe { &mut *p };
    st.count_lo = bytes as u32 as c_int;
    st.count_hi_and_cancelled = (((bytes >> 32) as u32) << 1 | s.cancelled as u32) as c_int;
    st.MPI_SOURCE = s.source;
    st.MPI_TAG = s.tag;
    if with_error {
        st.MPI_ERROR = s.error;
    }
}

/// Reads the byte count and cancelled flag back from a C status.
pub fn status_bytes(st: &MPI_Status) -> (u64, bool) {
    let hi = (st.count_hi_and_cancelled as u32 >> 1) as u64;
    ((hi << 32) | st.count_lo as u32 as u64, st.count_hi_and_cancelled & 1 != 0)
}

pub(super) fn check_count(count: i64) -> MpiResult<usize> {
    if count < 0 { err(MPI_ERR_COUNT, format!("invalid count argument (count={count})")) } else { Ok(count as usize) }
}

pub(super) fn check_buffer(buf: *const c_void, count: usize, layout: &Layout) -> MpiResult<()> {
    // A null buffer is MPI_BOTTOM: fine when the type's displacements are absolute addresses
    // (its data does not start at the pointer), as in MPICH.
    if buf.is_null() && count > 0 && layout.size > 0 && layout.lower(count) == 0 {
        return err(MPI_ERR_BUFFER, "invalid buffer pointer (NULL with a nonzero count)");
    }
    Ok(())
}

fn check_send_tag(tag: c_int) -> MpiResult<()> {
    if !(0..=TAG_UB).contains(&tag) {
        return err(MPI_ERR_TAG, format!("invalid tag argument (tag={tag})"));
    }
    Ok(())
}

fn check_recv_tag(tag: c_int) -> MpiResult<()> {
    if tag == MPI_ANY_TAG { Ok(()) } else { check_send_tag(tag) }
}

/// A checked peer: MPI_PROC_NULL, or a rank of the communicator (its world rank too).
pub(super) enum Peer {
    Null,
    Any,
    Rank { rank: i32, world: usize },
}

fn check_peer(c: &crate::comm::Comm, rank: c_int, allow_any: bool) -> MpiResult<Peer> {
    match rank {
        MPI_PROC_NULL => Ok(Peer::Null),
        MPI_ANY_SOURCE if allow_any => Ok(Peer::Any),
        r if r >= 0 && (r as usize) < c.peer_count() => {
            Ok(Peer::Rank { rank: r, world: c.peer_world_rank(r as usize) })
        }
        r => err(MPI_ERR_RANK, format!("invalid rank argument (rank={r}, communicator size {})", c.peer_count())),
    }
}

/// A message to or from one rank with its arguments checked: what the fast paths need.
#[derive(Clone, Copy)]
struct Direct {
    world: usize,
    env: Envelope,
    count: usize,
    /// Bytes of data (`count` elements).
    bytes: usize,
    /// Where the data starts when it is one run of `bytes` bytes (from the buffer pointer);
    /// None: scattered elements of `datatype`.
    contiguous_at: Option<isize>,
    datatype: MPI_Datatype,
}

impl Direct {
    /// The layout of scattered elements (from the per-thread cache `direct_args` filled).
    fn layout(&self) -> MpiResult<Layout> {
        datatype::layout(self.datatype)
    }

    /// The buffer of `count` elements at `buf` as what the engine takes: contiguous bytes from
    /// where the data starts, or the scattered elements.
    ///
    /// # Safety
    /// `buf` holds `count` elements, valid until the send completes.
    #[inline(always)]
    unsafe fn send_buf(self, buf: *const c_void) -> MpiResult<SendBuf> {
        match self.contiguous_at {
            // SAFETY: forwarded from the caller; contiguous elements are `bytes` bytes from `at`.
            Some(at) => Ok(unsafe { SendBuf::new(buf.wrapping_byte_offset(at).cast(), datatype::BYTE, self.bytes) }),
            // SAFETY: forwarded from the caller.
            None => Ok(unsafe { SendBuf::new(buf.cast(), self.layout()?, self.count) }),
        }
    }

    /// `send_buf` for a receive.
    ///
    /// # Safety
    /// `buf` has room for `count` elements, valid until the receive completes.
    #[inline(always)]
    unsafe fn recv_buf(self, buf: *mut c_void) -> MpiResult<RecvBuf> {
        match self.contiguous_at {
            // SAFETY: forwarded from the caller; contiguous elements are `bytes` bytes from `at`.
            Some(at) => Ok(unsafe { RecvBuf::new(buf.wrapping_byte_offset(at).cast(), datatype::BYTE, self.bytes) }),
            // SAFETY: forwarded from the caller.
            None => unsafe { self.scattered_recv_buf(buf) },
        }
    }

    /// `recv_buf` of scattered elements, out of line.
    ///
    /// # Safety
    /// As `recv_buf`.
    #[inline(never)]
    unsafe fn scattered_recv_buf(self, buf: *mut c_void) -> MpiResult<RecvBuf> {
        // SAFETY: forwarded from the caller.
        Ok(unsafe { RecvBuf::new(buf.cast(), self.layout()?, self.count) })
    }
}

/// The arguments of a send (`recv` false) or receive of a committed datatype to or from a
/// rank, checked in a few fused comparisons; None when anything is out of the ordinary (an
/// invalid argument, MPI_PROC_NULL, MPI_ANY_SOURCE, MPI_BOTTOM): the general path then checks
/// again and reports errors as MPICH does.
#[inline(always)]
fn direct_args(
    rt: &Runtime,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: MPI_Comm,
    recv: bool,
) -> Option<Direct> {
    let elements = datatype::elements(datatype)?;
    let c = rt.comms.find(comm)?;
    // TAG_UB is c_int::MAX: a tag is valid when non-negative (or MPI_ANY_TAG on receives).
    let tag_ok = tag >= 0 || (recv && tag == MPI_ANY_TAG);
    // Negative ranks (MPI_PROC_NULL, MPI_ANY_SOURCE) become huge and fail the range check.
    if !tag_ok || count < 0 || peer as u32 as usize >= c.peer_count() {
        return None;
    }
    let count = count as usize;
    let bytes = count.checked_mul(elements.size)?;
    if buf.is_null() && bytes > 0 {
        return None;
    }
    let src = if recv { peer } else { c.rank as i32 };
    let env = Envelope { ctx: c.ctx, src, tag };
    let contiguous_at = elements.contiguous_at;
    Some(Direct { world: c.peer_world_rank(peer as usize), env, count, bytes, contiguous_at, datatype })
}

/// Everything a send needs, checked.
pub(super) struct SendArgs {
    pub(super) peer: Peer,
    pub(super) env: Envelope,
    pub(super) layout: Layout,
    pub(super) count: usize,
}

/// The layout of a message's elements. No data needs no type: MPICH takes MPI_DATATYPE_NULL
/// with a zero count (its partitioned tests synchronize with such messages).
fn message_layout(count: usize, datatype: MPI_Datatype) -> MpiResult<Layout> {
    if count == 0 && datatype == MPI_DATATYPE_NULL { Ok(datatype::BYTE) } else { datatype::layout(datatype) }
}

pub(super) fn send_args(
    rt: &Runtime,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<SendArgs> {
    let c = rt.comms.get(comm)?;
    let count = check_count(count)?;
    let layout = message_layout(count, datatype)?;
    check_send_tag(tag)?;
    let peer = check_peer(c, dest, false)?;
    Ok(SendArgs { peer, env: Envelope { ctx: c.ctx, src: c.rank as i32, tag }, layout, count })
}

pub(super) fn recv_args(
    rt: &Runtime,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<(Peer, Envelope, Layout, usize)> {
    let c = rt.comms.get(comm)?;
    let count = check_count(count)?;
    let layout = message_layout(count, datatype)?;
    check_recv_tag(tag)?;
    let peer = check_peer(c, source, true)?;
    let src = match peer {
        Peer::Rank { rank, .. } => rank,
        _ => MPI_ANY_SOURCE,
    };
    Ok((peer, Envelope { ctx: c.ctx, src, tag }, layout, count))
}

/// Starts a send; returns the request id (already complete for MPI_PROC_NULL).
///
/// # Safety
/// `buf` holds `count` elements of `datatype`, valid until the send completes.
unsafe fn start_send(
    rt: &mut Runtime,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> MpiResult<u32> {
    if matches!(mode, SendMode::Standard | SendMode::Ready)
        && let Some(d) = direct_args(rt, buf, count, datatype, dest, tag, comm, false)
    {
        if let Some(at) = d.contiguous_at {
            // SAFETY: `count` elements at `buf` (non-null when bytes > 0): `bytes` contiguous
            // bytes from `at`.
            let bytes = unsafe { raw_bytes(buf.wrapping_byte_offset(at), d.bytes) };
            if rt.engine.try_send_eager_now(d.world, d.env, bytes) {
                return Ok(COMPLETED_SEND);
            }
        }
        // SAFETY: forwarded from the caller.
        return unsafe { start_send_direct(rt, buf, d, mode, comm) };
    }
    // SAFETY: forwarded from the caller.
    unsafe { start_send_checked(rt, buf, count, datatype, dest, tag, comm, mode) }
}

/// `start_send` of anything else (other modes, MPI_PROC_NULL, arguments to report), with the
/// full checks; out of line, like `start_send_direct`, so that the eager path saves few
/// registers.
///
/// # Safety
/// As `start_send`.
#[inline(never)]
unsafe fn start_send_checked(
    rt: &mut Runtime,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> MpiResult<u32> {
    let a = send_args(rt, count, datatype, dest, tag, comm)?;
    check_buffer(buf, a.count, &a.layout)?;
    let Peer::Rank { world, .. } = a.peer else {
        return Ok(rt.engine.reqs.insert(Request::completed(Status::proc_null(), comm)));
    };
    // SAFETY: forwarded from the caller.
    let sbuf = unsafe { SendBuf::new(buf.cast(), a.layout, a.count) };
    if mode == SendMode::Buffered {
        return buffered_send(rt, world, a.env, sbuf, comm);
    }
    Ok(rt.engine.isend(world, a.env, sbuf, mode, comm))
}

/// `start_send` of checked arguments whose contiguous bytes did not fit a free slot (or that
/// are scattered), out of line: the eager path above stays small.
///
/// # Safety
/// As `start_send`.
#[inline(never)]
unsafe fn start_send_direct(
    rt: &mut Runtime,
    buf: *const c_void,
    d: Direct,
    mode: SendMode,
    comm: MPI_Comm,
) -> MpiResult<u32> {
    let e = &mut rt.engine;
    if d.contiguous_at.is_none() {
        // A small non-contiguous message whose slot is free is packed straight into it, with
        // no request and no send buffer (tiny-block vectors: as fast as the builtin path).
        let layout = d.layout()?;
        let (len, count) = (d.bytes, d.count);
        // SAFETY: forwarded from the caller: `count` readable elements at `buf`; the slots hold
        // the packed bytes of those elements asked for.
        let pack = |r: std::ops::Range<usize>, out: &mut [u8]| unsafe {
            layout.pack_to_ptr(buf.cast(), count, r, out.as_mut_ptr())
        };
        if e.try_send_in_pieces(d.world, d.env, len, pack)
            || e.try_send_packed_now(d.world, d.env, len, |slot| pack(0..len, slot))
        {
            return Ok(COMPLETED_SEND);
        }
    }
    // SAFETY: forwarded from the caller.
    let sbuf = unsafe { d.send_buf(buf)? };
    Ok(e.isend(d.world, d.env, sbuf, mode, comm))
}

/// The `n` bytes at `buf` (nothing when `n` is 0, whatever `buf` is).
///
/// # Safety
/// When `n` > 0, `buf` points at `n` readable bytes that outlive the returned slice's use.
unsafe fn raw_bytes<'a>(buf: *const c_void, n: usize) -> &'a [u8] {
    if n == 0 {
        return &[];
    }
    // SAFETY: forwarded from the caller.
    unsafe { std::slice::from_raw_parts(buf.cast(), n) }
}

/// The `n` bytes at `buf`, writable (nothing when `n` is 0).
///
/// # Safety
/// When `n` > 0, `buf` points at `n` writable bytes nothing else accesses meanwhile.
unsafe fn raw_bytes_mut<'a>(buf: *mut c_void, n: usize) -> &'a mut [u8] {
    if n == 0 {
        return &mut [];
    }
    // SAFETY: forwarded from the caller.
    unsafe { std::slice::from_raw_parts_mut(buf.cast(), n) }
}

/// MPI_Bsend: copies the data, accounts it against the attached buffer, and lets the copy
/// travel on its own; the caller's request is complete at once.
fn buffered_send(rt: &mut Runtime, world: usize, env: Envelope, mut sbuf: SendBuf, comm: MPI_Comm) -> MpiResult<u32> {
    let e = &mut rt.engine;
    let need = sbuf.len() + MPI_BSEND_OVERHEAD as usize;
    if e.bsend_used + need > e.bsend_capacity {
        return err(
            MPI_ERR_BUFFER,
            format!(
                "insufficient space in the attached buffer for a buffered send ({} bytes needed, {} free)",
                need,
                e.bsend_capacity - e.bsend_used
            ),
        );
    }
    e.bsend_used += need;
    let copy = SendBuf::owned(sbuf.packed_bytes().to_vec());
    let id = e.isend(world, env, copy, SendMode::Buffered, comm);
    match e.reqs.get_mut(id) {
        Some(r) if !r.complete => {
            if let Op::Send { bsend_bytes, .. } = &mut r.op {
                *bsend_bytes = need;
            }
            r.freed = true;
        }
        _ => {
            // Already delivered: give the space back now.
            e.bsend_used -= need;
            e.reqs.remove(id);
        }
    }
    Ok(e.reqs.insert(Request::completed(Status::default(), comm)))
}

/// Starts a receive; returns the request id (already complete for MPI_PROC_NULL).
///
/// # Safety
/// `buf` has room for `count` elements of `datatype`, valid until the receive completes.
unsafe fn start_recv(
    rt: &mut Runtime,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<u32> {
    if let Some(d) = direct_args(rt, buf, count, datatype, source, tag, comm, true) {
        let env = d.env;
        // SAFETY: forwarded from the caller.
        let rbuf = unsafe { d.recv_buf(buf)? };
        return Ok(rt.engine.irecv(env, rbuf, comm));
    }
    let (peer, env, layout, count) = recv_args(rt, count, datatype, source, tag, comm)?;
    check_buffer(buf, count, &layout)?;
    if let Peer::Null = peer {
        return Ok(rt.engine.reqs.insert(Request::completed(Status::proc_null(), comm)));
    }
    // SAFETY: forwarded from the caller.
    let rbuf = unsafe { RecvBuf::new(buf.cast(), layout, count) };
    Ok(rt.engine.irecv(env, rbuf, comm))
}

/// A blocking call: `start` (under the library) begins a request, or finishes at once
/// (`None`: its status is the default); then waits for the request and collects it. At
/// MPI_THREAD_MULTIPLE the wait lets other threads into the library (`runtime::blocking`).
/// What a blocking call's first step did: finished at once (its status), or started request `id`.
enum Started {
    Done(Status),
    Pending(u32),
}

fn start_and_wait(start: impl FnOnce(&mut Runtime) -> MpiResult<Started>) -> MpiResult<Status> {
    runtime::blocking(
        start,
        |e, w| match w {
            Started::Done(_) => true,
            Started::Pending(id) => e.is_done(*id),
        },
        |rt, w| {
            Ok(Some(match w {
                Started::Done(s) => *s,
                Started::Pending(id) => rt.engine.collect(*id),
            }))
        },
    )
}

/// `start_and_wait` for a call that reports the status: writes it and returns its error.
fn start_and_report(start: impl FnOnce(&mut Runtime) -> MpiResult<u32>, status: *mut MPI_Status) -> MpiResult {
    let s = start_and_wait(|rt| start(rt).map(Started::Pending))?;
    // SAFETY: status is MPI_STATUS_IGNORE or the caller's status.
    unsafe { write_status(status, &s, false) };
    status_result(&s)
}

fn status_result(s: &Status) -> MpiResult {
    if s.error == MPI_SUCCESS { Ok(()) } else { Err(MpiError::new(s.error, error_text(s.error))) }
}

fn error_text(code: c_int) -> &'static str {
    match code {
        MPI_ERR_TRUNCATE => "message truncated (the receive buffer is smaller than the message)",
        MPI_ERR_TYPE => {
            "the message is not a whole number of the receive datatype's basic elements (its type signature does not match the send's)"
        }
        _ => "operation failed",
    }
}

// ----- blocking sends and receives -----

unsafe fn blocking_send(
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: SendMode,
) -> MpiResult {
    start_and_wait(|rt| {
        // SAFETY: the buffer is valid for the duration of the blocking call; start_send
        // writes an eager message at once when it can (then the request is COMPLETED_SEND).
        let id = unsafe { start_send(rt, buf, count, datatype, dest, tag, comm, mode)? };
        Ok(if id == COMPLETED_SEND { Started::Done(Status::default()) } else { Started::Pending(id) })
    })
    .map(|_| ())
}

/// The send family: MPI_Send, MPI_Bsend, MPI_Ssend and MPI_Rsend, each blocking, nonblocking
/// (MPI_I...) and persistent (..._init), with `int` or `MPI_Count` counts (build.rs generates
/// the 24 entries, see `abi::family`). Inlined so that each entry calls its form directly.
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn MPI_Send_c(
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    send_mode: SendMode,
    mode: Mode,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    unsafe {
        match mode {
            Mode::Blocking => blocking_send(buf, count, datatype, dest, tag, comm, send_mode),
            Mode::Start(request) => nonblocking_send(buf, count, datatype, dest, tag, comm, request, send_mode),
            Mode::Init(request) => persistent_send(buf, count, datatype, dest, tag, comm, request, send_mode),
            Mode::StartForWait(_) => unreachable!("only blocking collectives run as schedules"),
        }
    }
}

unsafe fn blocking_recv(
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> MpiResult {
    let s = start_and_wait(|rt| {
        let Some(d) = direct_args(rt, buf, count, datatype, source, tag, comm, true) else {
            // SAFETY: the buffer is valid for the duration of the blocking call.
            return Ok(Started::Pending(unsafe { start_recv(rt, buf, count, datatype, source, tag, comm)? }));
        };
        // A message already at the head of its sender's ring needs no request.
        // SAFETY: the buffer is valid for the duration of the blocking call.
        if let Some(s) = unsafe { recv_direct_now(rt, buf, &d) } {
            return Ok(Started::Done(s));
        }
        let env = d.env;
        // SAFETY: the buffer is valid for the duration of the blocking call.
        let rbuf = unsafe { d.recv_buf(buf)? };
        Ok(Started::Pending(rt.engine.irecv(env, rbuf, comm)))
    })?;
    // SAFETY: status is MPI_STATUS_IGNORE or the caller's status.
    unsafe { write_status(status, &s, false) };
    status_result(&s)
}

/// The blocking receive fast path: a small message at the head of its sender's ring (or
/// arriving within the watch window, `recv_eager_arriving`) is copied, or unpacked into a
/// non-contiguous layout, straight from the slot, with no request. None: anything else
/// (errors included, which the general path reports).
///
/// # Safety
/// `buf` holds `d.count` writable elements during the call.
unsafe fn recv_direct_now(rt: &mut Runtime, buf: *mut c_void, d: &Direct) -> Option<Status> {
    // Watching the ring holds the library: not with other threads in it.
    let watch = !runtime::multiple();
    let e = &mut rt.engine;
    match d.contiguous_at {
        Some(at) => {
            // SAFETY: the caller's buffer holds `bytes` writable bytes from `at`.
            let dst = unsafe { raw_bytes_mut(buf.wrapping_byte_offset(at), d.bytes) };
            e.try_recv_eager_now(d.world, d.env, dst)
                .or_else(|| if watch { e.recv_eager_arriving(d.world, d.env, dst) } else { None })
        }
        None => {
            let (cap, count) = (d.bytes, d.count);
            if cap > e.eager_limit() {
                return None;
            }
            let layout = d.layout().ok()?;
            // SAFETY: forwarded from the caller; the payload is at most `cap` bytes, the packed
            // size of the `count` elements.
            let unpack = |at: usize, payload: &[u8]| unsafe { layout.unpack(buf.cast(), count, at, payload) };
            let mut s = e
                .try_recv_packed_now(d.world, d.env, cap, unpack)
                .or_else(|| if watch { e.recv_packed_arriving(d.world, d.env, cap, unpack) } else { None })?;
            // As `RecvBuf::whole_elements`: a shorter message must be whole basic elements.
            if !layout.may_end_at(s.bytes, cap) {
                s.error = MPI_ERR_TYPE;
            }
            Some(s)
        }
    }
}

pub unsafe fn MPI_Recv_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> MpiResult {
    unsafe { blocking_recv(buf, count, datatype, source, tag, comm, status) }
}

// ----- nonblocking -----

unsafe fn nonblocking_send(
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    mode: SendMode,
) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    runtime::with(|rt| {
        // SAFETY: the caller keeps the buffer valid until the request completes (MPI rule).
        let id = unsafe { start_send(rt, buf, count, datatype, dest, tag, comm, mode)? };
        // SAFETY: checked non-null above; the caller passes a writable request.
        unsafe { *request = request_handle(id) };
        Ok(())
    })
}

unsafe fn nonblocking_recv(
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    runtime::with(|rt| {
        // SAFETY: the caller keeps the buffer valid until the request completes (MPI rule).
        let id = unsafe { start_recv(rt, buf, count, datatype, source, tag, comm)? };
        // SAFETY: checked non-null above.
        unsafe { *request = request_handle(id) };
        Ok(())
    })
}

pub unsafe fn MPI_Irecv_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> MpiResult {
    unsafe { nonblocking_recv(buf, count, datatype, source, tag, comm, request) }
}

// ----- persistent -----

unsafe fn persistent_send(
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
    mode: SendMode,
) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    runtime::with(|rt| {
        let a = send_args(rt, count, datatype, dest, tag, comm)?;
        check_buffer(buf, a.count, &a.layout)?;
        let (env, layout, n) = (a.env, a.layout, a.count);
        let buf = buf as *const u8;
        let start: Box<dyn Fn() -> Op> = match a.peer {
            Peer::Rank { world, .. } => Box::new(move || Op::Send {
                dst: world,
                env,
                // SAFETY: MPI requires the buffer to stay valid while the request exists and
                // unmodified while it is active.
                buf: unsafe { SendBuf::new(buf, layout.clone(), n) },
                mode,
                bsend_bytes: 0,
            }),
            _ => Box::new(|| Op::Nothing),
        };
        let mut r = Request::completed(Status::empty(), comm);
        r.persistent = Some(Persistent { start, buffered: mode == SendMode::Buffered });
        r.active = false;
        let id = rt.engine.reqs.insert(r);
        // SAFETY: checked non-null above.
        unsafe { *request = request_handle(id) };
        Ok(())
    })
}

unsafe fn persistent_recv(
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    runtime::with(|rt| {
        let (peer, env, layout, n) = recv_args(rt, count, datatype, source, tag, comm)?;
        check_buffer(buf, n, &layout)?;
        let buf = buf as *mut u8;
        let start: Box<dyn Fn() -> Op> = match peer {
            Peer::Null => Box::new(|| Op::Nothing),
            // SAFETY: MPI requires the buffer to stay valid while the request exists.
            _ => Box::new(move || Op::Recv {
                env,
                buf: unsafe { RecvBuf::new(buf, layout.clone(), n) },
                expected: 0,
                arrived: 0,
            }),
        };
        let mut r = Request::completed(Status::empty(), comm);
        r.persistent = Some(Persistent { start, buffered: false });
        r.active = false;
        let id = rt.engine.reqs.insert(r);
        // SAFETY: checked non-null above.
        unsafe { *request = request_handle(id) };
        Ok(())
    })
}

pub unsafe fn MPI_Recv_init_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> MpiResult {
    unsafe { persistent_recv(buf, count, datatype, source, tag, comm, request) }
}

fn start_one(rt: &mut Runtime, h: MPI_Request) -> MpiResult {
    let id = request_id(&rt.engine, h)?;
    let r = rt.engine.reqs.get_mut(id).unwrap();
    if let Some(p) = r.persistent.as_ref().filter(|p| p.buffered) {
        // A persistent buffered send: each start is one buffered send, complete at once.
        if r.active {
            return err(MPI_ERR_REQUEST, "persistent request is already active");
        }
        let comm = r.comm;
        if let Op::Send { dst, env, buf, .. } = (p.start)() {
            let done = buffered_send(rt, dst, env, buf, comm)?;
            rt.engine.reqs.remove(done);
        }
        let r = rt.engine.reqs.get_mut(id).unwrap();
        r.active = true;
        r.complete = true;
        r.status = Status::default();
        return Ok(());
    }
    rt.engine.start_persistent(id).map_err(|m| MpiError::new(MPI_ERR_REQUEST, m))
}

pub unsafe fn MPI_Start(request: *mut MPI_Request) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    // SAFETY: checked non-null; the caller passes a valid request variable.
    let h = unsafe { *request };
    runtime::with(|rt| start_one(rt, h))
}

pub unsafe fn MPI_Startall(count: c_int, array_of_requests: *mut MPI_Request) -> MpiResult {
    let n = check_count(count as i64)?;
    let reqs = unsafe { request_array(array_of_requests, n)? };
    runtime::with(|rt| reqs.iter().try_for_each(|&h| start_one(rt, h)))
}

// ----- completion -----

/// # Safety
/// `p` points at `n` requests (or n == 0).
unsafe fn request_array<'a>(p: *mut MPI_Request, n: usize) -> MpiResult<&'a mut [MPI_Request]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return err(MPI_ERR_ARG, "invalid array of requests (NULL)");
    }
    // SAFETY: the caller passes an array of n requests.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// Request ids of an array of handles; MPI_REQUEST_NULL entries are None.
/// Request ids of a handle array (None for MPI_REQUEST_NULL); held inline for arrays of up to
/// `INLINE_IDS`, so completing a window of messages allocates nothing.
enum Ids {
    Inline([Option<u32>; INLINE_IDS], usize),
    Heap(Vec<Option<u32>>),
}
const INLINE_IDS: usize = 64;

impl std::ops::Deref for Ids {
    type Target = [Option<u32>];
    fn deref(&self) -> &[Option<u32>] {
        match self {
            Ids::Inline(a, n) => &a[..*n],
            Ids::Heap(v) => v,
        }
    }
}

#[inline]
fn decode_all(engine: &Engine, hs: &[MPI_Request]) -> MpiResult<Ids> {
    let decode = |h: MPI_Request| if h == MPI_REQUEST_NULL { Ok(None) } else { request_id(engine, h).map(Some) };
    if hs.len() > INLINE_IDS {
        return hs.iter().map(|&h| decode(h)).collect::<MpiResult<_>>().map(Ids::Heap);
    }
    let mut a = [None; INLINE_IDS];
    for (slot, &h) in a.iter_mut().zip(hs) {
        *slot = decode(h)?;
    }
    Ok(Ids::Inline(a, hs.len()))
}

/// Writes the statuses of Waitall/Testall: the status of every request was written already
/// without its error field; when one failed (MPI_ERR_IN_STATUS), every status gets its
/// MPI_ERROR: MPI_SUCCESS, or the error of the failed ones in `errors` (index, code).
///
/// # Safety
/// `statuses` is MPI_STATUSES_IGNORE or points at `n` statuses.
unsafe fn set_status_errors(statuses: *mut MPI_Status, n: usize, errors: &[(usize, c_int)]) {
    for i in 0..n {
        // SAFETY: forwarded from the caller; i < n.
        let p = unsafe { status_at(statuses, i) };
        if p.is_null() || p as usize == 1 {
            return;
        }
        let code = errors.iter().find(|e| e.0 == i).map_or(MPI_SUCCESS, |e| e.1);
        // SAFETY: p points at the caller's i-th status.
        unsafe { (*p).MPI_ERROR = code };
    }
}

/// Collects a done request and updates the caller's handle (MPI_REQUEST_NULL unless it
/// stays alive as an inactive persistent request). A generalized request's status is what
/// its query_fn reports, and its free_fn runs once it is gone (their error codes become the
/// status's error, which the caller returns).
/// The communicator of the first request that failed is left in `failed_on` (its handler
/// takes the completion call's error), unless one is there already.
#[inline]
fn collect_into(engine: &mut Engine, id: u32, handle: &mut MPI_Request, failed_on: &mut Option<MPI_Comm>) -> Status {
    if id == COMPLETED_SEND {
        *handle = MPI_REQUEST_NULL;
        return engine.collect(id);
    }
    let generalized = grequest::generalized(engine, id);
    let (mut s, comm) = engine.collect_with_comm(id);
    if s.error != MPI_SUCCESS && failed_on.is_none() && generalized.is_none() {
        *failed_on = Some(comm);
    }
    if engine.reqs.get(id).is_none() {
        *handle = MPI_REQUEST_NULL;
    }
    if let Some(g) = generalized {
        s = grequest::query_status(&g);
        if let Err(e) = grequest::call_free(&g) {
            if s.error == MPI_SUCCESS {
                s.error = e.code;
            }
        }
    }
    s
}

/// Whether request `id` counts as active for Waitany/Testany/Waitsome (inactive persistent
/// ones are skipped like MPI_REQUEST_NULL).
fn is_active(engine: &Engine, id: u32) -> bool {
    engine.reqs.get(id).is_some_and(|r| r.active)
}

pub unsafe fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    let s = runtime::blocking(
        // SAFETY: checked non-null.
        |rt| match unsafe { *request } {
            MPI_REQUEST_NULL => Ok(None),
            h => request_id(&rt.engine, h).map(Some),
        },
        |e, id| id.is_none_or(|id| e.is_done(id)),
        |rt, id| {
            Ok(Some(match *id {
                None => (Status::empty(), false, None),
                Some(id) => {
                    let generalized = grequest::generalized(&rt.engine, id).is_some();
                    let mut failed_on = None;
                    // SAFETY: checked non-null.
                    let s = collect_into(&mut rt.engine, id, unsafe { &mut *request }, &mut failed_on);
                    (s, generalized, failed_on)
                }
            }))
        },
    )?;
    let (s, generalized, failed_on) = s;
    // SAFETY: status is MPI_STATUS_IGNORE or the caller's status.
    unsafe { write_status(status, &s, false) };
    // The code a generalized request's callback returned is the caller's result as it is.
    if generalized && s.error != MPI_SUCCESS {
        return Err(MpiError::supplied(s.error, "the generalized request's query_fn or free_fn failed"));
    }
    status_result(&s).map_err(|e| e.raised_on(failed_on))
}

/// MPI_Wait on a request the library made for the caller (a blocking collective run as its
/// schedule at MPI_THREAD_MULTIPLE); reports the status's error.
pub(crate) fn wait_request(mut request: MPI_Request) -> MpiResult {
    // SAFETY: a local request variable; a null status is ignored like MPI_STATUS_IGNORE.
    unsafe { MPI_Wait(&mut request, std::ptr::null_mut()) }
}

pub unsafe fn MPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> MpiResult {
    if request.is_null() || flag.is_null() {
        return err(MPI_ERR_ARG, "invalid request or flag pointer (NULL)");
    }
    runtime::with(|rt| {
        // SAFETY: checked non-null.
        let handle = unsafe { &mut *request };
        let mut failed_on = None;
        let s = if *handle == MPI_REQUEST_NULL {
            Some(Status::empty())
        } else {
            let id = request_id(&rt.engine, *handle)?;
            if !rt.engine.is_done(id) {
                rt.engine.progress();
            }
            rt.engine.is_done(id).then(|| collect_into(&mut rt.engine, id, handle, &mut failed_on))
        };
        // SAFETY: flag checked non-null; status per MPI.
        unsafe {
            *flag = s.is_some() as c_int;
            if let Some(s) = &s {
                write_status(status, s, false);
            }
        }
        s.as_ref().map_or(Ok(()), status_result).map_err(|e| e.raised_on(failed_on))
    })
}

/// # Safety
/// `statuses` is MPI_STATUSES_IGNORE or points at `n` statuses.
unsafe fn status_at(statuses: *mut MPI_Status, i: usize) -> *mut MPI_Status {
    if statuses.is_null() || statuses as usize == 1 {
        statuses
    } else {
        // SAFETY: i < n, the array's length.
        unsafe { statuses.add(i) }
    }
}

pub unsafe fn MPI_Waitall(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    array_of_statuses: *mut MPI_Status,
) -> MpiResult {
    let n = check_count(count as i64)?;
    let hs = unsafe { request_array(array_of_requests, n)? };
    let hs_ptr = hs.as_mut_ptr();
    runtime::blocking(
        // SAFETY (both): the caller's array of n requests (`hs`, not used otherwise meanwhile).
        |rt| decode_all(&rt.engine, unsafe { std::slice::from_raw_parts(hs_ptr, n) }),
        |e, ids| ids.iter().flatten().all(|&id| e.is_done(id)),
        |rt, ids| {
            let hs = unsafe { std::slice::from_raw_parts_mut(hs_ptr, n) };
            waitall_finish(rt, ids, hs, array_of_statuses, n).map(Some)
        },
    )
}

/// MPI_Waitall once every request is done: collects them and writes the statuses.
fn waitall_finish(
    rt: &mut Runtime,
    ids: &[Option<u32>],
    hs: &mut [MPI_Request],
    array_of_statuses: *mut MPI_Status,
    n: usize,
) -> MpiResult {
    {
        // Errors are rare: only they allocate.
        let mut errors: Vec<(usize, c_int)> = Vec::new();
        let mut failed_on = None;
        for (i, id) in ids.iter().enumerate() {
            let s = match id {
                Some(id) => collect_into(&mut rt.engine, *id, &mut hs[i], &mut failed_on),
                None => Status::empty(),
            };
            if s.error != MPI_SUCCESS {
                errors.push((i, s.error));
            }
            // SAFETY: statuses is IGNORE or an array of n.
            unsafe { write_status(status_at(array_of_statuses, i), &s, false) };
        }
        if errors.is_empty() {
            return Ok(());
        }
        // SAFETY: statuses is IGNORE or an array of n.
        unsafe { set_status_errors(array_of_statuses, n, &errors) };
        err(MPI_ERR_IN_STATUS, "one or more requests failed (see the statuses)").map_err(|e| e.raised_on(failed_on))
    }
}

pub unsafe fn MPI_Testall(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    flag: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> MpiResult {
    let n = check_count(count as i64)?;
    if flag.is_null() {
        return err(MPI_ERR_ARG, "invalid flag pointer (NULL)");
    }
    let hs = unsafe { request_array(array_of_requests, n)? };
    runtime::with(|rt| {
        let ids = decode_all(&rt.engine, hs)?;
        rt.engine.progress();
        let all_done = ids.iter().flatten().all(|&id| rt.engine.is_done(id));
        // SAFETY: checked non-null.
        unsafe { *flag = all_done as c_int };
        if !all_done {
            return Ok(());
        }
        let mut any_error = false;
        let mut failed_on = None;
        let mut all = Vec::with_capacity(n);
        for (i, id) in ids.iter().enumerate() {
            let s = id.map_or(Status::empty(), |id| collect_into(&mut rt.engine, id, &mut hs[i], &mut failed_on));
            any_error |= s.error != MPI_SUCCESS;
            all.push(s);
        }
        for (i, s) in all.iter().enumerate() {
            // SAFETY: statuses is IGNORE or an array of n.
            unsafe { write_status(status_at(array_of_statuses, i), s, any_error) };
        }
        if any_error {
            err(MPI_ERR_IN_STATUS, "one or more requests failed (see the statuses)").map_err(|e| e.raised_on(failed_on))
        } else {
            Ok(())
        }
    })
}

/// Waitany/Testany: index of a completed active request, or MPI_UNDEFINED when none is active.
unsafe fn any_of(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
    block: bool,
) -> MpiResult {
    let n = check_count(count as i64)?;
    if index.is_null() {
        return err(MPI_ERR_ARG, "invalid index pointer (NULL)");
    }
    let hs = unsafe { request_array(array_of_requests, n)? }.as_mut_ptr();
    runtime::blocking(
        |rt| active_requests(rt, hs, n),
        |e, active| !block || active.is_empty() || active.iter().any(|(_, id)| e.is_complete(*id)),
        // SAFETY: the caller's array of n requests, only used here meanwhile.
        |rt, active| {
            any_of_finish(rt, active, unsafe { std::slice::from_raw_parts_mut(hs, n) }, index, flag, status, block)
                .map(Some)
        },
    )
}

/// The active requests of the caller's array of `n` handles at `hs`, with their indices.
fn active_requests(rt: &mut Runtime, hs: *mut MPI_Request, n: usize) -> MpiResult<Vec<(usize, u32)>> {
    // SAFETY: the caller's array of n requests (checked by `request_array`).
    let ids = decode_all(&rt.engine, unsafe { std::slice::from_raw_parts(hs, n) })?;
    Ok(ids
        .iter()
        .enumerate()
        .filter_map(|(i, id)| id.filter(|&id| is_active(&rt.engine, id)).map(|id| (i, id)))
        .collect())
}

/// Waitany/Testany once a request completed (or none is active, or not blocking).
fn any_of_finish(
    rt: &mut Runtime,
    active: &[(usize, u32)],
    hs: &mut [MPI_Request],
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
    block: bool,
) -> MpiResult {
    {
        let pick = |e: &Engine| active.iter().find(|(_, id)| e.is_complete(*id)).copied();
        if active.is_empty() {
            // SAFETY: index/flag/status pointers come from the caller per MPI.
            unsafe {
                *index = MPI_UNDEFINED;
                if !flag.is_null() {
                    *flag = 1;
                }
                write_status(status, &Status::empty(), false);
            }
            return Ok(());
        }
        if !block {
            rt.engine.progress();
        }
        match pick(&rt.engine) {
            Some((i, id)) => {
                let mut failed_on = None;
                let s = collect_into(&mut rt.engine, id, &mut hs[i], &mut failed_on);
                // SAFETY: as above.
                unsafe {
                    *index = i as c_int;
                    if !flag.is_null() {
                        *flag = 1;
                    }
                    write_status(status, &s, false);
                }
                status_result(&s).map_err(|e| e.raised_on(failed_on))
            }
            None => {
                // SAFETY: as above.
                unsafe {
                    *index = MPI_UNDEFINED;
                    *flag = 0;
                }
                Ok(())
            }
        }
    }
}

pub unsafe fn MPI_Waitany(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> MpiResult {
    unsafe { any_of(count, array_of_requests, index, std::ptr::null_mut(), status, true) }
}

pub unsafe fn MPI_Testany(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> MpiResult {
    if flag.is_null() {
        return err(MPI_ERR_ARG, "invalid flag pointer (NULL)");
    }
    unsafe { any_of(count, array_of_requests, index, flag, status, false) }
}

/// Waitsome/Testsome: every completed active request; outcount MPI_UNDEFINED when none is active.
unsafe fn some_of(
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
    block: bool,
) -> MpiResult {
    let n = check_count(incount as i64)?;
    if outcount.is_null() || (n > 0 && array_of_indices.is_null()) {
        return err(MPI_ERR_ARG, "invalid outcount or indices pointer (NULL)");
    }
    let hs = unsafe { request_array(array_of_requests, n)? }.as_mut_ptr();
    runtime::blocking(
        |rt| active_requests(rt, hs, n),
        |e, active| !block || active.is_empty() || active.iter().any(|(_, id)| e.is_complete(*id)),
        |rt, active| {
            // SAFETY: the caller's array of n requests, only used here meanwhile.
            let hs = unsafe { std::slice::from_raw_parts_mut(hs, n) };
            some_of_finish(rt, active, hs, outcount, array_of_indices, array_of_statuses, block).map(Some)
        },
    )
}

/// Waitsome/Testsome once a request completed (or none is active, or not blocking).
fn some_of_finish(
    rt: &mut Runtime,
    active: &[(usize, u32)],
    hs: &mut [MPI_Request],
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
    block: bool,
) -> MpiResult {
    {
        if active.is_empty() {
            // SAFETY: checked non-null.
            unsafe { *outcount = MPI_UNDEFINED };
            return Ok(());
        }
        if !block {
            rt.engine.progress();
        }
        let done: Vec<(usize, u32)> = active.iter().copied().filter(|(_, id)| rt.engine.is_complete(*id)).collect();
        let mut any_error = false;
        let mut failed_on = None;
        let statuses: Vec<(usize, Status)> = done
            .iter()
            .map(|&(i, id)| {
                let s = collect_into(&mut rt.engine, id, &mut hs[i], &mut failed_on);
                any_error |= s.error != MPI_SUCCESS;
                (i, s)
            })
            .collect();
        // SAFETY: indices and statuses have room for incount entries (MPI).
        unsafe {
            *outcount = statuses.len() as c_int;
            for (k, (i, s)) in statuses.iter().enumerate() {
                *array_of_indices.add(k) = *i as c_int;
                write_status(status_at(array_of_statuses, k), s, any_error);
            }
        }
        if any_error {
            err(MPI_ERR_IN_STATUS, "one or more requests failed (see the statuses)").map_err(|e| e.raised_on(failed_on))
        } else {
            Ok(())
        }
    }
}

pub unsafe fn MPI_Waitsome(
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> MpiResult {
    unsafe { some_of(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, true) }
}

pub unsafe fn MPI_Testsome(
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> MpiResult {
    unsafe { some_of(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, false) }
}

pub unsafe fn MPI_Request_free(request: *mut MPI_Request) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    runtime::with(|rt| {
        // SAFETY: checked non-null.
        let handle = unsafe { &mut *request };
        let id = request_id(&rt.engine, *handle)?;
        let generalized = grequest::generalized(&rt.engine, id);
        rt.engine.free_request(id);
        *handle = MPI_REQUEST_NULL;
        generalized.map_or(Ok(()), |g| grequest::call_free(&g))
    })
}

pub unsafe fn MPI_Request_get_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> MpiResult {
    if flag.is_null() {
        return err(MPI_ERR_ARG, "invalid flag pointer (NULL)");
    }
    runtime::with(|rt| {
        let s = if request == MPI_REQUEST_NULL {
            Some(Status::empty())
        } else {
            let id = request_id(&rt.engine, request)?;
            rt.engine.progress();
            let r = rt.engine.reqs.get(id).unwrap();
            match grequest::generalized(&rt.engine, id) {
                Some(g) if r.complete => Some(grequest::query_status(&g)),
                _ if !r.active => Some(Status::empty()),
                _ => r.complete.then_some(r.status),
            }
        };
        // SAFETY: flag checked; status per MPI.
        unsafe {
            *flag = s.is_some() as c_int;
            if let Some(s) = &s {
                write_status(status, s, false);
            }
        }
        Ok(())
    })
}

pub unsafe fn MPI_Cancel(request: *mut MPI_Request) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    // SAFETY: checked non-null.
    let h = unsafe { *request };
    runtime::with(|rt| {
        let id = request_id(&rt.engine, h)?;
        // Receives still posted are cancelled; sends are not (already on their way), which
        // MPI_Test_cancelled then reports.
        if matches!(rt.engine.reqs.get(id).map(|r| &r.op), Some(Op::Recv { .. })) {
            rt.engine.cancel_recv(id);
        }
        // A generalized request's cancel_fn decides; it completes through MPI_Grequest_complete.
        match grequest::generalized(&rt.engine, id) {
            Some(g) => grequest::call_cancel(&g, rt.engine.is_complete(id)),
            None => Ok(()),
        }
    })
}

pub unsafe fn MPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) -> MpiResult {
    if status.is_null() || status as usize == 1 || flag.is_null() {
        return err(MPI_ERR_ARG, "invalid status or flag pointer");
    }
    // SAFETY: checked; the caller passes a status filled by the library.
    unsafe { *flag = status_bytes(&*status).1 as c_int };
    Ok(())
}

// ----- sendrecv -----

/// Starts a send and a receive as one request (MPI_Isendrecv); every argument is checked
/// before anything starts.
///
/// # Safety
/// Both buffers stay valid until the request completes.
unsafe fn start_sendrecv(
    rt: &mut Runtime,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
) -> MpiResult<u32> {
    let a = send_args(rt, sendcount, sendtype, dest, sendtag, comm)?;
    check_buffer(sendbuf, a.count, &a.layout)?;
    let (_, _, layout, n) = recv_args(rt, recvcount, recvtype, source, recvtag, comm)?;
    check_buffer(recvbuf, n, &layout)?;
    // SAFETY: forwarded from the caller.
    let r = unsafe { start_recv(rt, recvbuf, recvcount, recvtype, source, recvtag, comm)? };
    let s = unsafe { start_send(rt, sendbuf, sendcount, sendtype, dest, sendtag, comm, SendMode::Standard)? };
    Ok(rt.engine.pair(r, s, comm))
}

/// Starts MPI_Isendrecv_replace: the outgoing data is copied first, so the receive may
/// overwrite the buffer.
///
/// # Safety
/// The buffer stays valid until the request completes.
unsafe fn start_sendrecv_replace(
    rt: &mut Runtime,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
) -> MpiResult<u32> {
    let a = send_args(rt, count, datatype, dest, sendtag, comm)?;
    recv_args(rt, count, datatype, source, recvtag, comm)?;
    check_buffer(buf, a.count, &a.layout)?;
    // SAFETY: buf holds count elements (caller).
    let packed = unsafe { SendBuf::new(buf as *const u8, a.layout, a.count) }.packed_bytes().to_vec();
    let s = match a.peer {
        Peer::Rank { world, .. } => rt.engine.isend(world, a.env, SendBuf::owned(packed), SendMode::Standard, comm),
        _ => rt.engine.reqs.insert(Request::completed(Status::proc_null(), comm)),
    };
    // SAFETY: forwarded from the caller.
    let r = unsafe { start_recv(rt, buf, count, datatype, source, recvtag, comm)? };
    Ok(rt.engine.pair(r, s, comm))
}

/// Stores a started request's handle for the caller.
fn return_request(id: u32, request: *mut MPI_Request) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    // SAFETY: checked non-null; the caller passes a writable request.
    unsafe { *request = request_handle(id) };
    Ok(())
}

pub unsafe fn MPI_Sendrecv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> MpiResult {
    start_and_report(
        // SAFETY: both buffers are valid for the duration of the blocking call.
        |rt| unsafe {
            start_sendrecv(
                rt, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm,
            )
        },
        status,
    )
}

pub unsafe fn MPI_Sendrecv_replace_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> MpiResult {
    start_and_report(
        // SAFETY: the buffer is valid for the duration of the blocking call.
        |rt| unsafe { start_sendrecv_replace(rt, buf, count, datatype, dest, sendtag, source, recvtag, comm) },
        status,
    )
}

// ----- probe and matched probe -----

pub unsafe fn MPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> MpiResult {
    if flag.is_null() {
        return err(MPI_ERR_ARG, "invalid flag pointer (NULL)");
    }
    runtime::with(|rt| {
        let (peer, env, _, _) = recv_args(rt, 0, MPI_BYTE, source, tag, comm)?;
        let found = match peer {
            Peer::Null => Some(Status::proc_null()),
            _ => rt.engine.iprobe(env),
        };
        // SAFETY: flag checked; status per MPI.
        unsafe {
            *flag = found.is_some() as c_int;
            if let Some(s) = &found {
                write_status(status, s, false);
            }
        }
        Ok(())
    })
}

pub unsafe fn MPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> MpiResult {
    let s = runtime::blocking(
        |rt| probe_args(rt, source, tag, comm),
        |e, env| env.is_none_or(|env| e.has_unexpected_for(&env)),
        // Another thread may have received the message meanwhile: then wait again.
        |rt, env| Ok(env.map_or(Some(Status::proc_null()), |env| rt.engine.iprobe(env))),
    )?;
    // SAFETY: status per MPI.
    unsafe { write_status(status, &s, false) };
    Ok(())
}

/// The envelope a probe looks for; `None` for MPI_PROC_NULL.
fn probe_args(rt: &mut Runtime, source: c_int, tag: c_int, comm: MPI_Comm) -> MpiResult<Option<Envelope>> {
    let (peer, env, _, _) = recv_args(rt, 0, MPI_BYTE, source, tag, comm)?;
    Ok((!matches!(peer, Peer::Null)).then_some(env))
}

/// Turns a message taken by mprobe into a message handle (a request holding it).
fn message_handle(rt: &mut Runtime, msg: crate::p2p::Unexpected, comm: MPI_Comm) -> MPI_Message {
    let mut r = Request::completed(Status::default(), comm);
    r.op = Op::Message(msg);
    request_handle(rt.engine.reqs.insert(r))
}

fn probe_status(m: &crate::p2p::Unexpected) -> Status {
    Status { source: m.env.src, tag: m.env.tag, bytes: m.len, ..Default::default() }
}

unsafe fn mprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
    block: bool,
) -> MpiResult {
    if message.is_null() {
        return err(MPI_ERR_ARG, "invalid message pointer (NULL)");
    }
    let (h, s) = runtime::blocking(
        |rt| probe_args(rt, source, tag, comm),
        |e, env| !block || env.is_none_or(|env| e.has_unexpected_for(&env)),
        // The message is taken under the lock, so exactly one thread gets it; when another
        // thread took it meanwhile, a blocking mprobe waits again.
        |rt, env| {
            let Some(env) = *env else { return Ok(Some((Some(MPI_MESSAGE_NO_PROC), Status::proc_null()))) };
            Ok(match rt.engine.improbe(env) {
                Some(m) => {
                    let s = probe_status(&m);
                    Some((Some(message_handle(rt, m, comm)), s))
                }
                None if block => None,
                None => Some((None, Status::default())),
            })
        },
    )?;
    {
        // SAFETY: pointers checked or per MPI.
        unsafe {
            if !flag.is_null() {
                *flag = h.is_some() as c_int;
            }
            if let Some(h) = h {
                *message = h;
                write_status(status, &s, false);
            }
        }
        Ok(())
    }
}

pub unsafe fn MPI_Mprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> MpiResult {
    unsafe { mprobe(source, tag, comm, std::ptr::null_mut(), message, status, true) }
}

pub unsafe fn MPI_Improbe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> MpiResult {
    if flag.is_null() {
        return err(MPI_ERR_ARG, "invalid flag pointer (NULL)");
    }
    unsafe { mprobe(source, tag, comm, flag, message, status, false) }
}

/// Starts the receive of a matched message; returns the request id.
///
/// # Safety
/// `buf` has room for `count` elements, valid until the receive completes.
unsafe fn start_mrecv(
    rt: &mut Runtime,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    message: &mut MPI_Message,
) -> MpiResult<u32> {
    let count = check_count(count)?;
    let layout = datatype::layout(datatype)?;
    check_buffer(buf, count, &layout)?;
    if *message == MPI_MESSAGE_NO_PROC {
        *message = MPI_MESSAGE_NULL;
        return Ok(rt.engine.reqs.insert(Request::completed(Status::proc_null(), MPI_COMM_NULL)));
    }
    let id = request_id(&rt.engine, *message)
        .ok()
        .filter(|&id| matches!(rt.engine.reqs.get(id).map(|r| &r.op), Some(Op::Message(_))))
        .ok_or_else(|| MpiError::new(MPI_ERR_REQUEST, format!("invalid message handle (0x{:08x})", *message as u32)))?;
    let r = rt.engine.reqs.get_mut(id).unwrap();
    let Op::Message(msg) = std::mem::replace(&mut r.op, Op::Nothing) else { unreachable!() };
    // SAFETY: forwarded from the caller.
    r.op = Op::Recv { env: msg.env, buf: unsafe { RecvBuf::new(buf.cast(), layout, count) }, expected: 0, arrived: 0 };
    r.complete = false;
    rt.engine.receive_message(id, msg);
    *message = MPI_MESSAGE_NULL;
    Ok(id)
}

unsafe fn mrecv(
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> MpiResult {
    if message.is_null() {
        return err(MPI_ERR_ARG, "invalid message pointer (NULL)");
    }
    start_and_report(
        // SAFETY: message checked non-null; the buffer is valid during the blocking call.
        |rt| unsafe { start_mrecv(rt, buf, count, datatype, &mut *message) },
        status,
    )
}

pub unsafe fn MPI_Mrecv_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> MpiResult {
    unsafe { mrecv(buf, count, datatype, message, status) }
}

unsafe fn imrecv(
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    request: *mut MPI_Request,
) -> MpiResult {
    if message.is_null() || request.is_null() {
        return err(MPI_ERR_ARG, "invalid message or request pointer (NULL)");
    }
    runtime::with(|rt| {
        // SAFETY: pointers checked; the buffer stays valid until completion (MPI rule).
        let id = unsafe { start_mrecv(rt, buf, count, datatype, &mut *message)? };
        // SAFETY: checked non-null.
        unsafe { *request = request_handle(id) };
        Ok(())
    })
}

pub unsafe fn MPI_Imrecv_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    request: *mut MPI_Request,
) -> MpiResult {
    unsafe { imrecv(buf, count, datatype, message, request) }
}

// ----- counts -----

/// Elements of `datatype` in `bytes`, or MPI_UNDEFINED when it is not a whole number.
fn whole_elements(bytes: u64, datatype: MPI_Datatype) -> MpiResult<i64> {
    let size = datatype::type_size(datatype)? as u64;
    Ok(if size == 0 {
        if bytes == 0 { 0 } else { MPI_UNDEFINED as i64 }
    } else if bytes % size == 0 {
        (bytes / size) as i64
    } else {
        MPI_UNDEFINED as i64
    })
}

/// # Safety
/// `status` points at a status filled by the library.
unsafe fn status_ref<'a>(status: *const MPI_Status) -> MpiResult<&'a MPI_Status> {
    if status.is_null() || status as usize == 1 {
        return err(MPI_ERR_ARG, "invalid status argument (NULL or MPI_STATUS_IGNORE)");
    }
    // SAFETY: checked, caller's status.
    Ok(unsafe { &*status })
}

fn to_int(v: i64) -> c_int {
    if v > c_int::MAX as i64 { MPI_UNDEFINED } else { v as c_int }
}

pub unsafe fn MPI_Get_count(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> MpiResult {
    let st = unsafe { status_ref(status)? };
    let n = whole_elements(status_bytes(st).0, datatype)?;
    // SAFETY: caller's output.
    unsafe { *count = to_int(n) };
    Ok(())
}
pub unsafe fn MPI_Get_count_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> MpiResult {
    let st = unsafe { status_ref(status)? };
    let n = whole_elements(status_bytes(st).0, datatype)?;
    // SAFETY: caller's output.
    unsafe { *count = n };
    Ok(())
}

/// Basic elements in `bytes` of data of `datatype` (pair types and derived types hold several
/// per element; a partial element counts its whole basic elements), or MPI_UNDEFINED when
/// `bytes` ends inside a basic element.
fn basic_elements(bytes: u64, datatype: MPI_Datatype) -> MpiResult<i64> {
    Ok(match datatype::basic_elements(datatype, bytes as usize)? {
        Some(n) => n as i64,
        None => MPI_UNDEFINED as i64,
    })
}

pub unsafe fn MPI_Get_elements(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> MpiResult {
    let st = unsafe { status_ref(status)? };
    let n = basic_elements(status_bytes(st).0, datatype)?;
    // SAFETY: caller's output.
    unsafe { *count = to_int(n) };
    Ok(())
}
pub unsafe fn MPI_Get_elements_x(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut MPI_Count,
) -> MpiResult {
    let st = unsafe { status_ref(status)? };
    let n = basic_elements(status_bytes(st).0, datatype)?;
    // SAFETY: caller's output.
    unsafe { *count = n };
    Ok(())
}
pub unsafe fn MPI_Get_elements_c(
    status: *const MPI_Status,
    datatype: MPI_Datatype,
    count: *mut MPI_Count,
) -> MpiResult {
    unsafe { MPI_Get_elements_x(status, datatype, count) }
}

pub unsafe fn MPI_Status_set_elements(status: *mut MPI_Status, datatype: MPI_Datatype, count: c_int) -> MpiResult {
    unsafe { MPI_Status_set_elements_x(status, datatype, count as MPI_Count) }
}
pub unsafe fn MPI_Status_set_elements_x(
    status: *mut MPI_Status,
    datatype: MPI_Datatype,
    count: MPI_Count,
) -> MpiResult {
    let n = check_count(count)?;
    let size = datatype::type_size(datatype)?;
    if status.is_null() || status as usize == 1 {
        return err(MPI_ERR_ARG, "invalid status argument");
    }
    // SAFETY: checked; caller's status.
    let st = unsafe { &mut *status };
    let cancelled = st.count_hi_and_cancelled & 1 != 0;
    let s = Status { source: st.MPI_SOURCE, tag: st.MPI_TAG, bytes: n * size, cancelled, error: st.MPI_ERROR };
    // SAFETY: as above.
    unsafe { write_status(status, &s, false) };
    Ok(())
}
pub unsafe fn MPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) -> MpiResult {
    if status.is_null() || status as usize == 1 {
        return err(MPI_ERR_ARG, "invalid status argument");
    }
    // SAFETY: checked; caller's status.
    let st = unsafe { &mut *status };
    st.count_hi_and_cancelled = (st.count_hi_and_cancelled & !1) | (flag != 0) as c_int;
    Ok(())
}

// ----- buffered-send buffer -----

/// The attached buffer, returned by detach.
static BSEND_BUFFER: std::sync::Mutex<Option<(usize, usize)>> = std::sync::Mutex::new(None);

unsafe fn buffer_attach(buffer: *mut c_void, size: i64) -> MpiResult {
    let size = check_count(size)?;
    if buffer.is_null() && size > 0 {
        return err(MPI_ERR_BUFFER, "invalid buffer pointer (NULL)");
    }
    runtime::with(|rt| {
        let mut b = BSEND_BUFFER.lock().unwrap();
        if b.is_some() {
            return err(MPI_ERR_BUFFER, "a buffer is already attached (detach it first)");
        }
        *b = Some((buffer as usize, size));
        rt.engine.bsend_capacity = size;
        Ok(())
    })
}

pub unsafe fn MPI_Buffer_attach_c(buffer: *mut c_void, size: MPI_Count) -> MpiResult {
    unsafe { buffer_attach(buffer, size) }
}

/// Detach waits for the buffered sends to leave, then returns the buffer's address and size.
unsafe fn buffer_detach(buffer_addr: *mut c_void) -> MpiResult<usize> {
    if buffer_addr.is_null() {
        return err(MPI_ERR_ARG, "invalid buffer address pointer (NULL)");
    }
    runtime::blocking(
        |_| Ok(()),
        |e, _| e.bsend_used == 0,
        |rt, _| {
            let (addr, size) = BSEND_BUFFER.lock().unwrap().take().unwrap_or((0, 0));
            rt.engine.bsend_capacity = 0;
            // SAFETY: buffer_addr points at a `void *` (MPI passes the address of the pointer).
            unsafe { *(buffer_addr as *mut *mut c_void) = addr as *mut c_void };
            Ok(Some(size))
        },
    )
}

pub unsafe fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> MpiResult {
    let n = unsafe { buffer_detach(buffer_addr)? };
    if !size.is_null() {
        // SAFETY: caller's output.
        unsafe { *size = n as c_int };
    }
    Ok(())
}
pub unsafe fn MPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut MPI_Count) -> MpiResult {
    let n = unsafe { buffer_detach(buffer_addr)? };
    if !size.is_null() {
        // SAFETY: caller's output.
        unsafe { *size = n as MPI_Count };
    }
    Ok(())
}

// ----- nonblocking send-receive (MPI-4) -----

pub unsafe fn MPI_Isendrecv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    runtime::with(|rt| {
        // SAFETY: the caller keeps both buffers valid until the request completes (MPI rule).
        let id = unsafe {
            start_sendrecv(
                rt, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm,
            )?
        };
        return_request(id, request)
    })
}

pub unsafe fn MPI_Isendrecv_replace_c(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    runtime::with(|rt| {
        // SAFETY: the caller keeps the buffer valid until the request completes (MPI rule).
        let id = unsafe { start_sendrecv_replace(rt, buf, count, datatype, dest, sendtag, source, recvtag, comm)? };
        return_request(id, request)
    })
}

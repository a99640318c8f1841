//! Partitioned communication (MPI-4.1 chapter 4) on the point-to-point engine.
//!
//! Matching happens once, at initialization. `MPI_Precv_init` sends its sender a small
//! ready-to-receive message (RTR: a channel number of the receiver's own and its total size)
//! on the communicator's RTR context with the user's tag; `MPI_Psend_init` posts the receive
//! for it. Messages and posted receives match in order, so the k-th `MPI_Psend_init` to
//! (dest, tag, comm) meets the k-th `MPI_Precv_init` from (source, tag, comm), as MPI says.
//!
//! Data: each partition marked ready goes at once (once the RTR has arrived) on the
//! communicator's data context with the channel as tag: a header (partition index,
//! partitions, bytes per partition) carrying the partition's packed bytes when they are small
//! (`INLINE_MAX`), else followed by the partition as a message of its own, sent from the
//! user's buffer and received straight into the receiver's where its datatype allows. The
//! receiver keeps one header receive posted while headers are due and places each partition
//! at its byte offset, so the two sides may cut the buffer into different partition counts.
//! `MPI_Parrived(i)` is true once every sender partition that overlaps the receiver's
//! partition i has arrived. Messages on one (context, source, tag) keep their order, so a
//! sender a cycle ahead of its receiver leaves its partitions in the unexpected queue until
//! the receiver starts that cycle.

use super::buffers::{RecvBuf, SendBuf};
use super::request::{COMPLETED_SEND, Op, Persistent, Request, SendMode, Status};
use super::{Engine, Envelope};
use crate::abi::consts::*;
use crate::error::{MpiResult, err};

/// Context of RTR messages on a communicator of context `ctx`; contexts of communicators stay
/// below 2^28 (pairs are numbered below `MAX_CONTEXT_PAIRS`), so these meet no other traffic.
fn rtr_ctx(ctx: u32) -> u32 {
    0x2000_0000 | ctx
}

/// Context of partition data on a communicator of context `ctx`.
fn data_ctx(ctx: u32) -> u32 {
    0x3000_0000 | ctx
}

/// Bytes of an RTR message: channel (u64), total bytes (u64).
const RTR_BYTES: usize = 16;
/// Bytes of the header of a partition message: index, partitions, bytes per partition.
const HEADER_BYTES: usize = 24;
/// Largest partition carried in its header message (packed and unpacked, one message);
/// larger ones follow their header as a message of their own, sent from the user's buffer
/// and received into it where the receiver's datatype allows.
const INLINE_MAX: usize = 8192;

fn word(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap())
}

/// The peer of a partitioned operation, in the terms of its communicator.
#[derive(Clone, Copy)]
pub struct Link {
    /// World rank of the peer.
    pub world: usize,
    /// The communicator's context, this rank's and the peer's rank in it, the user's tag.
    pub ctx: u32,
    pub me: i32,
    pub peer: i32,
    pub tag: i32,
}

/// The state of one partitioned request, kept for the request's whole life (across cycles).
pub struct Partitioned {
    partitions: usize,
    /// Elements of one partition on this side, and bytes of data of one element.
    part_count: usize,
    elem_bytes: usize,
    /// Bytes of one partition on this side.
    part_bytes: usize,
    /// None: MPI_PROC_NULL.
    link: Option<Link>,
    side: Side,
    /// Error of the current cycle (MPI_SUCCESS while none).
    error: i32,
}

enum Side {
    Send(Sender),
    Recv(Receiver),
}

struct Sender {
    buf: SendBuf,
    /// The RTR receive, until it arrives.
    rtr: Option<u32>,
    /// The receiver's channel and total bytes, once the RTR arrived.
    matched: Option<(i32, usize)>,
    /// Partitions marked ready in this cycle.
    ready: Vec<bool>,
    /// Ready partitions not sent yet (waiting for the RTR).
    queued: Vec<usize>,
    /// Partitions of this cycle not yet marked ready.
    not_ready: usize,
    /// Partition messages in flight.
    sends: Vec<u32>,
}

struct Receiver {
    buf: RecvBuf,
    channel: i32,
    /// The RTR send, until it completed.
    rtr: Option<u32>,
    /// The posted receive of the next header.
    header: Option<u32>,
    /// Headers taken in this cycle.
    headers: usize,
    /// Posted receives of partitions that follow their header: (request, sender partition,
    /// whether it lands in place).
    data: Vec<(u32, usize, bool)>,
    /// Memory of the last received header, reused for the next.
    spare: Vec<u8>,
    /// Sender partitions arrived in this cycle (sized by the first header), how many, and
    /// their size.
    arrived: Vec<bool>,
    got: usize,
    sender_part_bytes: usize,
}

impl Partitioned {
    fn total(&self) -> usize {
        self.partitions * self.part_bytes
    }
}

impl Engine {
    fn new_partitioned(&mut self, p: Partitioned, comm: i32) -> u32 {
        let mut r = Request::completed(Status::empty(), comm);
        r.persistent = Some(Persistent { start: Box::new(|| Op::Partitioned), buffered: false });
        r.active = false;
        let id = self.reqs.insert(r);
        self.parts.insert(id, p);
        id
    }

    /// MPI_Psend_init: a partitioned send of `partitions` partitions of `part_count`
    /// elements of `elem_bytes` bytes from `buf` (the whole buffer) to `link`; returns the
    /// request id.
    pub fn psend_init(
        &mut self,
        buf: SendBuf,
        partitions: usize,
        (part_count, elem_bytes): (usize, usize),
        link: Option<Link>,
        comm: i32,
    ) -> u32 {
        let part_bytes = part_count * elem_bytes;
        let rtr = link.map(|l| {
            let env = Envelope { ctx: rtr_ctx(l.ctx), src: l.peer, tag: l.tag };
            self.irecv(env, RecvBuf::owned(RTR_BYTES), comm)
        });
        let side = Side::Send(Sender {
            buf,
            rtr,
            matched: None,
            ready: vec![false; partitions],
            queued: Vec::new(),
            not_ready: partitions,
            sends: Vec::new(),
        });
        let p = Partitioned { partitions, part_count, elem_bytes, part_bytes, link, side, error: MPI_SUCCESS };
        self.new_partitioned(p, comm)
    }

    /// MPI_Precv_init: a partitioned receive into `buf` (the whole buffer) from `link`.
    pub fn precv_init(
        &mut self,
        buf: RecvBuf,
        partitions: usize,
        (part_count, elem_bytes): (usize, usize),
        link: Option<Link>,
        comm: i32,
    ) -> u32 {
        let part_bytes = part_count * elem_bytes;
        let channel = self.next_part_channel;
        self.next_part_channel = (self.next_part_channel + 1) & i32::MAX;
        let total = partitions * part_bytes;
        let rtr = link.map(|l| {
            let env = Envelope { ctx: rtr_ctx(l.ctx), src: l.me, tag: l.tag };
            let mut msg = Vec::with_capacity(RTR_BYTES);
            msg.extend_from_slice(&(channel as u64).to_le_bytes());
            msg.extend_from_slice(&(total as u64).to_le_bytes());
            self.isend(l.world, env, SendBuf::owned(msg), SendMode::Standard, comm)
        });
        let side = Side::Recv(Receiver {
            buf,
            channel,
            rtr: rtr.filter(|&id| id != COMPLETED_SEND),
            header: None,
            headers: 0,
            data: Vec::new(),
            spare: Vec::new(),
            arrived: Vec::new(),
            got: 0,
            sender_part_bytes: 0,
        });
        let p = Partitioned { partitions, part_count, elem_bytes, part_bytes, link, side, error: MPI_SUCCESS };
        self.new_partitioned(p, comm)
    }

    /// Whether `req` is a partitioned request.
    pub fn is_partitioned(&self, req: u32) -> bool {
        self.parts.contains_key(&req)
    }

    /// Starts a cycle of partitioned request `req` (from `start_persistent`).
    pub(super) fn start_partitioned(&mut self, req: u32) {
        let p = self.parts.get_mut(&req).expect("a partitioned request without its state");
        p.error = MPI_SUCCESS;
        match &mut p.side {
            Side::Send(s) => {
                s.ready.iter_mut().for_each(|r| *r = false);
                s.queued.clear();
                s.not_ready = p.partitions;
            }
            Side::Recv(r) => {
                r.arrived.iter_mut().for_each(|a| *a = false);
                r.got = 0;
                r.headers = 0;
            }
        }
        if p.link.is_none() {
            let r = self.reqs.get_mut(req).unwrap();
            r.complete = true;
            r.status = Status::proc_null();
            return;
        }
        if !self.advance_partitioned(req) {
            self.parts_active.push(req);
        }
    }

    /// MPI_Pready of every partition of `partitions`: checks the request and the partitions,
    /// marks them ready and sends them when matched.
    pub fn pready(&mut self, req: u32, partitions: impl IntoIterator<Item = i64>) -> MpiResult {
        let active = self.reqs.get(req).is_some_and(|r| r.active);
        let Some(p) = self.parts.get_mut(&req) else {
            return err(MPI_ERR_REQUEST, "MPI_Pready on a request that is not a partitioned send");
        };
        let Side::Send(s) = &mut p.side else {
            return err(MPI_ERR_REQUEST, "MPI_Pready on a partitioned receive request");
        };
        if !active {
            return err(MPI_ERR_OTHER, "MPI_Pready on an inactive request (call MPI_Start first)");
        }
        // All or nothing: a bad entry leaves every partition as it was.
        let list: Vec<i64> = partitions.into_iter().collect();
        for (k, &i) in list.iter().enumerate() {
            if i < 0 || i as usize >= p.partitions {
                return err(
                    MPI_ERR_ARG,
                    format!("invalid partition {i} (the request has {} partitions)", p.partitions),
                );
            }
            if s.ready[i as usize] || list[..k].contains(&i) {
                return err(MPI_ERR_OTHER, format!("partition {i} was already marked ready in this cycle"));
            }
        }
        let mut send_now = Vec::new();
        for i in list {
            let i = i as usize;
            s.ready[i] = true;
            s.not_ready -= 1;
            if p.link.is_some() {
                if s.matched.is_some() {
                    send_now.push(i);
                } else {
                    s.queued.push(i);
                }
            }
        }
        for i in send_now {
            self.send_partition(req, i);
        }
        Ok(())
    }

    /// MPI_Parrived: whether partition `i` of receive `req` has arrived (true when inactive).
    pub fn parrived(&mut self, req: u32, i: i64) -> MpiResult<bool> {
        let Some(r) = self.reqs.get(req) else { return err(MPI_ERR_REQUEST, "invalid request") };
        let settled = !r.active || r.complete;
        let Some(p) = self.parts.get(&req) else {
            return err(MPI_ERR_REQUEST, "MPI_Parrived on a request that is not a partitioned receive");
        };
        let Side::Recv(rv) = &p.side else {
            return err(MPI_ERR_REQUEST, "MPI_Parrived on a partitioned send request");
        };
        if i < 0 || i as usize >= p.partitions {
            return err(MPI_ERR_ARG, format!("invalid partition {i} (the request has {} partitions)", p.partitions));
        }
        if settled {
            return Ok(true);
        }
        if rv.arrived.is_empty() {
            return Ok(false);
        }
        // Zero-byte partitions overlap no data: they have arrived with all of the sender's.
        if p.part_bytes == 0 || rv.sender_part_bytes == 0 {
            return Ok(rv.got == rv.arrived.len());
        }
        let (lo, hi) = (i as usize * p.part_bytes, (i as usize + 1) * p.part_bytes);
        let first = lo / rv.sender_part_bytes;
        let last = (hi - 1) / rv.sender_part_bytes;
        Ok(rv.arrived.get(first..=last).is_some_and(|a| a.iter().all(|&x| x)))
    }

    /// Sends partition `i` of matched send `req`: its header, with the data when small, and
    /// then, when not, the data in place as a message of its own.
    fn send_partition(&mut self, req: u32, i: usize) {
        let comm = self.reqs.get(req).map_or(MPI_COMM_NULL, |r| r.comm);
        let p = self.parts.get_mut(&req).unwrap();
        let (Some(link), Side::Send(s)) = (p.link, &mut p.side) else { return };
        let Some((channel, _)) = s.matched else { return };
        let inline = p.part_bytes <= INLINE_MAX;
        let mut head = vec![0u8; HEADER_BYTES + if inline { p.part_bytes } else { 0 }];
        head[..8].copy_from_slice(&(i as u64).to_le_bytes());
        head[8..16].copy_from_slice(&(p.partitions as u64).to_le_bytes());
        head[16..24].copy_from_slice(&(p.part_bytes as u64).to_le_bytes());
        let data = if inline {
            s.buf.copy_to(i * p.part_bytes, &mut head[HEADER_BYTES..]);
            None
        } else {
            Some(s.buf.part(i * p.part_count, p.part_count, p.elem_bytes))
        };
        let env = Envelope { ctx: data_ctx(link.ctx), src: link.me, tag: channel };
        let mut ids = vec![self.isend(link.world, env, SendBuf::owned(head), SendMode::Standard, comm)];
        if let Some(data) = data {
            ids.push(self.isend(link.world, env, data, SendMode::Standard, comm));
        }
        if let Some(Partitioned { side: Side::Send(s), .. }) = self.parts.get_mut(&req) {
            s.sends.extend(ids.into_iter().filter(|&id| id != COMPLETED_SEND));
        }
    }

    /// Advances the active partitioned requests; returns whether any completed.
    pub(super) fn advance_partitions(&mut self) -> bool {
        let ids = std::mem::take(&mut self.parts_active);
        let mut still = Vec::with_capacity(ids.len());
        let mut did = false;
        for id in ids {
            if self.advance_partitioned(id) {
                did = true;
            } else {
                still.push(id);
            }
        }
        let added = std::mem::replace(&mut self.parts_active, still);
        self.parts_active.extend(added);
        did
    }

    /// Moves what can move for partitioned request `req`; returns whether its cycle is
    /// complete (then the request is marked complete).
    fn advance_partitioned(&mut self, req: u32) -> bool {
        let Some(p) = self.parts.get(&req) else { return true };
        let done = match p.side {
            Side::Send(_) => self.advance_send(req),
            Side::Recv(_) => self.advance_recv(req),
        };
        if !done {
            return false;
        }
        let p = self.parts.get(&req).unwrap();
        let (error, total, link) = (p.error, p.total(), p.link);
        let Some(r) = self.reqs.get_mut(req) else { return true };
        r.complete = true;
        r.status = Status {
            source: link.map_or(MPI_PROC_NULL, |l| l.peer),
            tag: link.map_or(MPI_ANY_TAG, |l| l.tag),
            bytes: if matches!(p.side, Side::Recv(_)) { total } else { 0 },
            cancelled: false,
            error,
        };
        if r.freed {
            self.reqs.remove(req);
            self.drop_partitioned(req);
        }
        true
    }

    fn advance_send(&mut self, req: u32) -> bool {
        let p = self.parts.get_mut(&req).unwrap();
        let total = p.total();
        let Side::Send(s) = &mut p.side else { unreachable!() };
        if let Some(rtr) = s.rtr
            && self.reqs.get(rtr).is_some_and(|r| r.complete)
        {
            s.rtr = None;
            let (status, msg) = self.take_owned_recv(rtr);
            let p = self.parts.get_mut(&req).unwrap();
            let Side::Send(s) = &mut p.side else { unreachable!() };
            if status.error != MPI_SUCCESS || msg.len() < RTR_BYTES {
                p.error = MPI_ERR_INTERN;
            } else {
                let theirs = word(&msg, 1) as usize;
                s.matched = Some((word(&msg, 0) as i32, theirs));
                let queued = std::mem::take(&mut s.queued);
                for i in queued {
                    self.send_partition(req, i);
                }
            }
        }
        let p = self.parts.get_mut(&req).unwrap();
        let Side::Send(s) = &mut p.side else { unreachable!() };
        let mut error = p.error;
        s.sends.retain(|&id| {
            let Some(r) = self.reqs.get(id) else { return false };
            if !r.complete {
                return true;
            }
            if r.status.error != MPI_SUCCESS {
                error = r.status.error;
            }
            self.reqs.discard(id);
            false
        });
        if let Some((_, theirs)) = s.matched
            && theirs != total
            && error == MPI_SUCCESS
        {
            error = MPI_ERR_TRUNCATE;
        }
        p.error = error;
        if p.error == MPI_ERR_INTERN {
            return true;
        }
        s.matched.is_some() && s.not_ready == 0 && s.queued.is_empty() && s.sends.is_empty()
    }

    fn advance_recv(&mut self, req: u32) -> bool {
        let comm = self.reqs.get(req).map_or(MPI_COMM_NULL, |r| r.comm);
        loop {
            let p = self.parts.get_mut(&req).unwrap();
            let link = p.link.expect("an active partitioned receive has a peer");
            let Side::Recv(r) = &mut p.side else { unreachable!() };
            if let Some(rtr) = r.rtr
                && self.reqs.get(rtr).is_none_or(|q| q.complete)
            {
                r.rtr = None;
                self.reqs.discard(rtr);
            }
            if (r.got > 0 && r.got == r.arrived.len()) || p.error != MPI_SUCCESS {
                return true;
            }
            let env = Envelope { ctx: data_ctx(link.ctx), src: link.peer, tag: r.channel };
            // Partitions that followed their header.
            let done: Vec<(u32, usize, bool)> =
                r.data.iter().copied().filter(|&(id, ..)| self.reqs.get(id).is_some_and(|q| q.complete)).collect();
            r.data.retain(|d| !done.contains(d));
            let moved = !done.is_empty();
            for (id, index, in_place) in done {
                let error = if in_place {
                    let status = self.reqs.remove(id).map_or(Status::default(), |q| q.status);
                    if status.error == MPI_SUCCESS {
                        self.parts.get_mut(&req).unwrap().mark_arrived(index)
                    } else {
                        status.error
                    }
                } else {
                    let (status, bytes) = self.take_owned_recv(id);
                    let p = self.parts.get_mut(&req).unwrap();
                    if status.error == MPI_SUCCESS { p.put(index, &bytes) } else { status.error }
                };
                let p = self.parts.get_mut(&req).unwrap();
                if p.error == MPI_SUCCESS {
                    p.error = error;
                }
            }
            let p = self.parts.get_mut(&req).unwrap();
            let Side::Recv(r) = &mut p.side else { unreachable!() };
            match r.header {
                None if r.arrived.is_empty() || r.headers < r.arrived.len() => {
                    let buf = RecvBuf::owned_in(std::mem::take(&mut r.spare), HEADER_BYTES + INLINE_MAX);
                    let id = self.irecv(env, buf, comm);
                    if let Some(Partitioned { side: Side::Recv(r), .. }) = self.parts.get_mut(&req) {
                        r.header = Some(id);
                    }
                }
                Some(id) if self.reqs.get(id).is_some_and(|q| q.complete) => {
                    r.header = None;
                    r.headers += 1;
                    let (status, msg) = self.take_owned_recv(id);
                    let p = self.parts.get_mut(&req).unwrap();
                    let (error, follows) = p.take_header(status, &msg);
                    p.error = error;
                    let Side::Recv(r) = &mut p.side else { unreachable!() };
                    r.spare = msg;
                    if let Some((index, offset, len)) = follows {
                        let (buf, in_place) = match r.buf.part(offset, len) {
                            Some(b) => (b, true),
                            None => (RecvBuf::owned(len), false),
                        };
                        let id = self.irecv(env, buf, comm);
                        if let Some(Partitioned { side: Side::Recv(r), .. }) = self.parts.get_mut(&req) {
                            r.data.push((id, index, in_place));
                        }
                    }
                }
                _ if moved => {}
                _ => return false,
            }
        }
    }

    /// Forgets partitioned request `req` (freed): whatever it still has posted goes.
    pub(super) fn drop_partitioned(&mut self, req: u32) {
        self.parts_active.retain(|&id| id != req);
        let Some(p) = self.parts.remove(&req) else { return };
        match p.side {
            Side::Send(s) => {
                if let Some(rtr) = s.rtr {
                    self.cancel_recv(rtr);
                    self.reqs.remove(rtr);
                }
                for id in s.sends {
                    self.free_request(id);
                }
            }
            Side::Recv(r) => {
                for id in r.header.into_iter().chain(r.data.iter().map(|d| d.0)) {
                    // A receive under way cannot be withdrawn: it goes when it completes.
                    if self.cancel_recv(id) {
                        self.reqs.remove(id);
                    } else {
                        self.free_request(id);
                    }
                }
                if let Some(id) = r.rtr {
                    self.free_request(id);
                }
            }
        }
    }
}

impl Partitioned {
    /// Takes header message `msg` of receive `self`: the cycle's error, and the sender
    /// partition, byte offset and length of data that follows in a message of its own.
    fn take_header(&mut self, status: Status, msg: &[u8]) -> (i32, Option<(usize, usize, usize)>) {
        let total = self.total();
        if status.error != MPI_SUCCESS {
            return (status.error, None);
        }
        if msg.len() < HEADER_BYTES {
            return (MPI_ERR_INTERN, None);
        }
        let (index, parts, part_bytes) = (word(msg, 0) as usize, word(msg, 1) as usize, word(msg, 2) as usize);
        let inline = part_bytes <= INLINE_MAX;
        if parts.checked_mul(part_bytes) != Some(total)
            || index >= parts
            || (inline && msg.len() != HEADER_BYTES + part_bytes)
        {
            return (MPI_ERR_TRUNCATE, None);
        }
        let Side::Recv(r) = &mut self.side else { unreachable!() };
        if r.arrived.len() != parts {
            r.arrived = vec![false; parts];
            r.sender_part_bytes = part_bytes;
        }
        if !inline {
            return (MPI_SUCCESS, Some((index, index * part_bytes, part_bytes)));
        }
        (self.put(index, &msg[HEADER_BYTES..]), None)
    }

    /// Unpacks the bytes of sender partition `index` into receive `self`; returns the error.
    fn put(&mut self, index: usize, data: &[u8]) -> i32 {
        let Side::Recv(r) = &mut self.side else { unreachable!() };
        if data.len() != r.sender_part_bytes {
            return MPI_ERR_TRUNCATE;
        }
        r.buf.put(index * r.sender_part_bytes, data);
        self.mark_arrived(index)
    }

    /// Records sender partition `index` of receive `self` as arrived; returns the error.
    fn mark_arrived(&mut self, index: usize) -> i32 {
        let Side::Recv(r) = &mut self.side else { unreachable!() };
        match r.arrived.get_mut(index) {
            Some(a) if !*a => {
                *a = true;
                r.got += 1;
                MPI_SUCCESS
            }
            _ => MPI_ERR_INTERN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype;

    fn link(tag: i32) -> Option<Link> {
        Some(Link { world: 0, ctx: 0, me: 0, peer: 0, tag })
    }

    #[test]
    fn partitions_move_as_they_become_ready_and_layouts_may_differ() {
        let mut e = Engine::new(0, 1, None);
        // 3 sender partitions of 4 bytes, 2 receiver partitions of 6 bytes.
        let mut dst = vec![0u8; 12];
        // SAFETY: `dst` outlives every use of the receive (the engine is dropped first) and is
        // not touched meanwhile except through the engine.
        let rbuf = unsafe { RecvBuf::new(dst.as_mut_ptr(), datatype::BYTE, 12) };
        let r = e.precv_init(rbuf, 2, (6, 1), link(5), 0);
        let src: Vec<u8> = (1..=12).collect();
        let s = e.psend_init(SendBuf::owned(src.clone()), 3, (4, 1), link(5), 0);
        for _cycle in 0..3 {
            e.start_persistent(r).unwrap();
            e.start_persistent(s).unwrap();
            assert!(!e.parrived(r, 0).unwrap());
            e.pready(s, [0]).unwrap();
            e.progress();
            // Sender partition 0 is bytes 0..4: receiver partition 0 (0..6) still misses 4..6.
            assert!(!e.parrived(r, 0).unwrap());
            e.pready(s, [1]).unwrap();
            e.progress();
            assert!(e.parrived(r, 0).unwrap() && !e.parrived(r, 1).unwrap());
            assert!(!e.is_complete(r) && !e.is_complete(s));
            assert_eq!(e.pready(s, [1]).unwrap_err().code, MPI_ERR_OTHER, "ready twice");
            assert_eq!(e.pready(s, [3]).unwrap_err().code, MPI_ERR_ARG, "out of range");
            assert_eq!(e.pready(r, [0]).unwrap_err().code, MPI_ERR_REQUEST, "a receive");
            e.pready(s, [2]).unwrap();
            e.progress();
            assert!(e.is_complete(r) && e.is_complete(s));
            assert_eq!(e.collect(r).bytes, 12);
            e.collect(s);
            assert!(e.parrived(r, 1).unwrap(), "an inactive request has arrived");
            assert_eq!(e.pready(s, [0]).unwrap_err().code, MPI_ERR_OTHER, "inactive");
        }
        e.free_request(s);
        e.free_request(r);
        assert!(e.parts.is_empty() && e.parts_active.is_empty());
        assert_eq!(e.reqs.live(), 0, "no request left behind");
        assert_eq!(dst, (1..=12).collect::<Vec<u8>>());
    }

    #[test]
    fn freeing_unstarted_requests_leaves_nothing_posted() {
        let mut e = Engine::new(0, 1, None);
        let s = e.psend_init(SendBuf::owned(vec![1; 8]), 2, (4, 1), link(1), 0);
        e.free_request(s);
        assert!(e.posted.is_empty(), "the RTR receive was withdrawn");
        let empty = e.psend_init(SendBuf::owned(Vec::new()), 1, (0, 1), None, 0);
        e.start_persistent(empty).unwrap();
        assert!(e.is_complete(empty), "MPI_PROC_NULL completes at once");
        e.pready(empty, [0]).unwrap();
        e.free_request(empty);
        assert!(e.parts.is_empty());
    }
}

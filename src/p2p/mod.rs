//! Point-to-point engine: matching (posted and unexpected queues), protocols (eager through
//! the rings, rendezvous with a single-copy read, or streamed through the rings: sparse
//! non-contiguous data, packed into and unpacked from the slots, and the fallback without
//! single-copy reads), progress and waiting.
//!
//! Message order between a pair of ranks is the ring order, and both queues are searched
//! front to back, so MPI's non-overtaking rule holds per (source, communicator).

pub mod buffers;
pub mod part;
pub mod request;
pub mod stats;
mod window_rdma;

use crate::abi::consts::*;
use crate::config;
use crate::error::MpiResult;
use crate::transport::net::{Net, Way};
use crate::transport::shm::{self, Packet, Segment};
use crate::transport::{self, Route};
use buffers::{RecvBuf, SendBuf};
use request::{COMPLETED_SEND, Op, Request, SendMode, Slab, Status};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Who a message is from/for: communicator context, source rank in that communicator, tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    pub ctx: u32,
    pub src: i32,
    pub tag: i32,
}

impl Envelope {
    /// Whether a receive posted with `self` (wildcards allowed) takes a message with `msg`.
    fn accepts(&self, msg: &Envelope) -> bool {
        self.ctx == msg.ctx
            && (self.src == MPI_ANY_SOURCE || self.src == msg.src)
            && (self.tag == MPI_ANY_TAG || self.tag == msg.tag)
    }
}

/// Bytes of one (address, length) entry of a block list carried by a rendezvous request.
const RTS_BLOCK_BYTES: usize = 16;

/// `rreq` of a request-to-send whose data is too sparse to be read in place (neither
/// contiguous nor offered as a block list): the receiver asks for a stream (CTS), which the
/// sender packs straight into ring slots.
const RTS_STREAM: u32 = u32::MAX;

/// `rreq` of a request-to-send from another node whose (contiguous) data the sender exposed
/// for the receiver to read (rendezvous by RDMA read): the payload holds, per piece of the
/// transfer (`Net::pieces`), the remote address and key (`Net::expose`). The receiver reads
/// and sends FIN, or asks for a stream (CTS) when it cannot read.
const RTS_READ: u32 = u32::MAX - 1;

/// `rreq` of a request-to-send from another node whose non-contiguous data the sender
/// exposed for an RDMA read of its blocks: `addr` is the number of regions, one per rail
/// (`Net::expose_span`: remote address and key), and the payload holds them, then the
/// blocks as offsets from the span's start and lengths, in order (`Net::read_blocks`).
const RTS_READ_BLOCKS: u32 = u32::MAX - 2;

mod kind {
    /// The kind compact eager slots decode to (the transport writes them).
    pub const EAGER: u32 = crate::transport::shm::EAGER_KIND;
    pub const EAGER_SYNC: u32 = 2;
    pub const RTS: u32 = 3;
    pub const ACK: u32 = 4;
    pub const FIN: u32 = 5;
    pub const CTS: u32 = 6;
    pub const DATA: u32 = 7;
    /// Receiver to sender: copy your share of a shared rendezvous transfer (`Split`).
    pub const HELP: u32 = 8;
    /// The first piece of an eager message sent in pieces (`Engine::try_send_in_pieces`):
    /// `addr` is the message's length, `len` the piece's.
    pub const PIECE_HEAD: u32 = 9;
    /// A later piece, in the next slot from the same sender: `addr` is its offset.
    pub const PIECE: u32 = 10;
    /// Receiver to a sender on another node: send the whole message as one direct transfer
    /// (`transport::net`) with id `rreq`, whose receive is posted.
    pub const CTS_DIRECT: u32 = 11;
}

/// Token of a direct transfer's send (`Net::take_finished`); receives have the request id.
const DIRECT_SEND: u64 = 1 << 32;
/// Token of an RDMA read of a rendezvous message (`Net::read_direct`), with the receive's id.
const DIRECT_READ: u64 = 1 << 33;

/// The error of a receive into `buf` of a message of `len` bytes: MPI_ERR_TRUNCATE when it
/// does not fit, MPI_ERR_TYPE when it is shorter and not whole basic elements of the
/// receive's type (its type signature does not match the send's).
#[inline]
fn receive_error(buf: &RecvBuf, len: usize) -> i32 {
    if len > buf.capacity() {
        MPI_ERR_TRUNCATE
    } else if !buf.whole_elements(len) {
        MPI_ERR_TYPE
    } else {
        MPI_SUCCESS
    }
}

/// Takes the `left` bytes of pieces of a message from `from`'s ring as they arrive (the
/// sender is writing them, one per slot, without waiting for anything), handing each to
/// `put(offset, bytes)`; returns the bytes taken.
fn take_pieces(seg: &mut Segment, from: usize, mut left: usize, put: &mut impl FnMut(usize, &[u8])) -> usize {
    let total = left;
    let mut polls = 0u32;
    while left > 0 {
        let Some(inc) = seg.peek(from) else {
            polls += 1;
            // The sender was descheduled between two pieces: let it run.
            if polls.is_multiple_of(4096) {
                std::thread::yield_now();
            }
            std::hint::spin_loop();
            continue;
        };
        debug_assert_eq!(inc.packet.kind, kind::PIECE);
        put(inc.packet.addr as usize, inc.payload);
        left -= inc.payload.len();
        seg.release(from);
    }
    total
}

/// A message in pieces being received from one sender: into a matched receive, or into a
/// copy that joins the unexpected queue once whole.
enum Assembly {
    Matched { req: u32, filled: usize, len: usize, fits: usize },
    Queued { msg: Unexpected, filled: usize },
}

/// A message that arrived before its receive was posted.
pub struct Unexpected {
    pub env: Envelope,
    /// World rank of the sender.
    pub from: usize,
    pub len: usize,
    pub body: Body,
}

pub enum Body {
    /// The payload, copied out of the ring; `ack` is the sender's request id for a sync send.
    Eager { data: Vec<u8>, ack: Option<u32> },
    /// A rendezvous request: the data is still in the sender, at `addr` (contiguous) or in
    /// `blocks` (address, length) when the sender offers its non-contiguous layout; `stream`:
    /// neither (too sparse), the data can only be streamed; `read`: from another node, the
    /// data is exposed for an RDMA read, `blocks` holding each piece's address and key, or
    /// when `addr` is not 0, `addr` regions then the sender's blocks (`RTS_READ_BLOCKS`).
    Rts { addr: u64, sreq: u32, blocks: Vec<(u64, u64)>, stream: bool, read: bool },
}

/// Work queued for a peer because its ring was full, kept in order.
enum Out {
    Eager {
        req: u32,
    },
    Rts {
        req: u32,
    },
    Ack {
        sreq: u32,
    },
    Fin {
        sreq: u32,
    },
    /// Clear to send: stream the data (`direct`: send it as one direct transfer instead, its
    /// stripes cut that many ways: `Net::split_for`).
    Cts {
        sreq: u32,
        rreq: u32,
        direct: Option<usize>,
    },
    Data {
        req: u32,
        rreq: u32,
        offset: usize,
    },
    /// The data of send `req` as direct transfer `rreq` (a peer on another node), cut as the
    /// receiver said.
    Direct {
        req: u32,
        rreq: u32,
        split: usize,
    },
    Help(Help),
}

/// Asks the sender of `sreq` to write chunks of board entry `entry` (generation `generation`)
/// of a shared transfer of `len` bytes to `addr` (the receive buffer); when `nblocks` is not
/// 0, `addr` is instead a list of that many (address, length) blocks in the receiver (its
/// non-contiguous destination), which the sender reads out of band.
struct Help {
    sreq: u32,
    entry: u32,
    generation: u32,
    addr: u64,
    len: usize,
    nblocks: u32,
}

/// A large rendezvous transfer copied by both ranks (see `shm::BoardEntry`): the receiver reads
/// chunks from the front while the sender, asked by a HELP packet, writes chunks from the back
/// (contiguous data, or dense block lists on either side: `lists`). Kept here while the sender
/// still copies its last chunks.
struct Split {
    req: u32,
    from: usize,
    sreq: u32,
    entry: usize,
    pid: u32,
    /// The sender's data and our destination (`len` bytes each).
    remote: u64,
    local: usize,
    len: usize,
    chunk: usize,
    nchunks: usize,
    /// Chunks this rank copied.
    own: usize,
    /// The blocks on both sides when either side is not contiguous (else `remote`, `local`).
    lists: Option<Box<SplitLists>>,
}

/// Block lists of a shared transfer of non-contiguous data: chunks are byte ranges of the data
/// they describe, each rank copying its chunks with scatter/gather single-copy calls.
struct SplitLists {
    /// The sender's blocks (its offer) and ours.
    remote: Vec<(u64, u64)>,
    local: buffers::Blocks,
    /// Our blocks in wire form, read by the sender (kept until the transfer completes).
    wire: Vec<[u64; 2]>,
}

/// Eager messages in pieces (`Engine::try_send_in_pieces`): bytes per piece and the smallest
/// message sent so, by default (measured, docs/perf-r7-vec.md).
const EAGER_PIECE_DEFAULT: usize = 2048;
const EAGER_PIECES_FROM_DEFAULT: usize = 4096;

/// Smallest message whose single-copy transfer the sender helps with, by default (measured,
/// docs/performance.md); 0 turns shared copies off.
const SPLIT_MIN_DEFAULT: usize = 65536;
/// Slots of a ring asked for ahead while messages stream in (`Segment::prefetch_ahead`): 4
/// took windows of 64 messages of 1-16 bytes from 10.0-10.5 to 7.8-8.7 µs (medians of 8
/// alternated runs, docs/performance.md).
const STREAM_PREFETCH_SLOTS: usize = 4;
/// Largest payload of a streamed message after which slots are asked for ahead: the sender
/// of larger ones is not far enough ahead, and a slot line taken while it writes the slot
/// costs it another transfer (windows of 4 KiB messages were 10% slower).
const STREAM_PREFETCH_MAX: usize = 256;

/// Smallest chunk of a shared transfer: below it a chunk's system call and claim cost more
/// than the copy they share.
const SPLIT_CHUNK_MIN: usize = 32768;

/// Chunk size of a shared transfer of `len` bytes: about an eighth of the message so the two
/// ranks meet near the middle, whole pages, and few enough chunks for the claim word.
fn split_chunk(len: usize) -> usize {
    let chunk = (len / 8).max(len.div_ceil(shm::SPLIT_MAX_CHUNKS)).max(SPLIT_CHUNK_MIN);
    chunk.next_multiple_of(4096)
}

/// Whether rendezvous messages to other nodes offer their data for an RDMA read: where the
/// provider does RMA, by default only in the NIC (over TCP the emulated read took 10-15%
/// longer than a tagged message for 64-256 KiB, docs/performance.md); `OXMPI_NET_RNDV_READ`
/// chooses.
fn reads_rendezvous(net: &Net) -> bool {
    net.can_read() && config::switch_var(config::NET_RNDV_READ).unwrap_or(net.rma_is_native())
}

/// Writes (u64, u64) pairs in the wire form of an RTS's block list.
fn write_pairs(slot: &mut [u8], pairs: impl IntoIterator<Item = (u64, u64)>) {
    for (i, (a, b)) in pairs.into_iter().enumerate() {
        let at = i * RTS_BLOCK_BYTES;
        slot[at..at + 8].copy_from_slice(&a.to_ne_bytes());
        slot[at + 8..at + 16].copy_from_slice(&b.to_ne_bytes());
    }
}

/// Reads a block list of `n` (address, length) entries in wire form at `addr` in process `pid`.
fn fetch_block_list(pid: u32, addr: u64, n: usize) -> std::io::Result<Vec<(u64, u64)>> {
    let mut raw = vec![0u8; n * RTS_BLOCK_BYTES];
    shm::cma_read(pid, addr, &mut raw)?;
    let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap());
    Ok(raw.chunks_exact(RTS_BLOCK_BYTES).map(|b| (word(&b[..8]), word(&b[8..]))).collect())
}

/// How long a waiting rank spins, then yields, before it sleeps on its doorbell; chosen once
/// from ranks per core and whether a yield can run another rank of the job. Limits are
/// times, not counts, so a rank whose core is taken by another process (a loaded machine)
/// gives it up after microseconds either way.
struct WaitPolicy {
    spin: Duration,
    spin_then_yield: Duration,
    /// Ranks outnumber cores and a yield runs another rank of the job on this CPU
    /// (`Segment::yields_reach_peers`): yield on every idle poll and sleep only after a long
    /// wait, handing the CPU around the ranks as Open MPI's do. A doorbell wake-up costs the
    /// waker a system call (about 15 µs here when the sleeper is on another CPU of this VM)
    /// and the sleeper a scheduling round, both on the critical path of every
    /// synchronizing collective.
    hand_off: bool,
    /// More ranks on this node than the CPUs they may run on together
    /// (`Segment::ranks_outnumber_cores`).
    oversubscribed: bool,
}

impl WaitPolicy {
    fn for_node(local_ranks: usize, seg: Option<&Segment>) -> WaitPolicy {
        // The node-wide answer (the union of all ranks' CPUs): a launcher that binds each rank
        // to a core of its own (Hydra's -bind-to core, srun --cpu-bind=cores) leaves every
        // rank one CPU, yet no two ranks share one, so they should spin (ping-pong under
        // -bind-to core: 0.33 µs when each rank counted only its own CPU).
        let oversubscribed = match seg {
            Some(s) => s.ranks_outnumber_cores(),
            None => local_ranks > std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        };
        let hand_off = oversubscribed && seg.is_some_and(|s| s.yields_reach_peers());
        let us = |name, default| Duration::from_micros(config::usize_var(name).unwrap_or(default) as u64);
        let spin = us(config::SPIN_US, if oversubscribed { 0 } else { 20 });
        let yielding = us(
            config::YIELD_US,
            match (oversubscribed, hand_off) {
                (false, _) => 200,
                (true, true) => 1000,
                // Ranks in scheduling groups of their own (sessions, with autogroup): a yield
                // runs no other rank, so sleep soon and let the doorbell wake-up do it.
                (true, false) => 20,
            },
        );
        WaitPolicy { spin, spin_then_yield: spin + yielding, hand_off, oversubscribed }
    }

    /// Idle polls between two looks at the clock (and, while yielding, between yields), less
    /// one: a mask, as the idle loop is hot.
    fn polls_per_check_mask(&self) -> u32 {
        if self.hand_off { 0 } else { POLLS_PER_CLOCK_READ - 1 }
    }
}

/// Sender side of shared transfer `entry` to `to`: claims chunks from the back of the `len`
/// bytes until the two ranks meet, writing each byte range with `write`, then rings the
/// receiver (it may be about to sleep). False when a write failed (no more shared copies with
/// that peer; the receiver copies the chunk itself).
fn write_claimed_chunks(
    seg: &Segment,
    to: usize,
    entry: usize,
    generation: u32,
    len: usize,
    mut write: impl FnMut(std::ops::Range<usize>) -> bool,
) -> bool {
    let chunk = split_chunk(len);
    let mut wrote = false;
    let mut ok = true;
    while let Some(c) = seg.split_claim_back(to, entry, generation) {
        let off = c * chunk;
        ok = write(off..off + chunk.min(len - off));
        seg.split_chunk_done(to, entry, c, ok);
        wrote = true;
        if !ok {
            log::debug!("single-copy write to rank {to} failed; no more shared copies with it");
            break;
        }
    }
    if wrote {
        seg.notify(to);
    }
    ok
}

/// Shortest time between two moves off a CPU shared with another rank
/// (`Segment::move_off_shared_cpu`): each costs two system calls and a migration.
const MOVE_OFF_INTERVAL: Duration = Duration::from_millis(2);

/// Longest sleep of an idle rank alone on its node on the network's descriptor. Short: the
/// TCP providers' descriptors do not become readable when a message arrives (their progress
/// is ours to drive), so every wake-up after an arrival waited this long (a message to a
/// sleeping rank took 3-8 ms more with 20 ms here).
const NET_SLEEP: Duration = Duration::from_micros(200);

/// How long an idle rank of a job that spans nodes, with peers on its node, sleeps on its
/// doorbell before it looks at the network again (remote peers ring no doorbell).
const NET_NAP: Duration = Duration::from_micros(200);

/// How long an idle rank sleeps at most while a task another thread finishes is running
/// (background I/O): that thread rings no doorbell.
const EXTERNAL_TASK_NAP: Duration = Duration::from_micros(100);

/// Largest message sent eagerly to a rank on another node by default. Between two hosts over
/// TCP a 32 KiB message took 15-17 µs eagerly against about 30 by rendezvous, while 64 KiB
/// took 51-78 µs eagerly against 38-40 (the provider's large-message path avoids our copies).
const NET_EAGER_LIMIT_DEFAULT: usize = 32 * 1024;

/// Idle polls between two looks at the clock while waiting (a power of two).
const POLLS_PER_CLOCK_READ: u32 = 32;
const _: () = assert!(POLLS_PER_CLOCK_READ.is_power_of_two());

/// How long a blocking receive watches its sender's ring before it posts a request
/// (`Engine::recv_eager_arriving`): a few ping-pong round trips.
const ARRIVAL_WATCH: Duration = Duration::from_micros(4);

/// The context of the traffic of communicators made from groups (MPI_Comm_create_from_group,
/// MPI_Intercomm_create_from_groups, the connections of `comm::spawn`), where processes are
/// addressed by their index in the table (world rank for the job's own): pair 2, taken at
/// start on every process.
pub const GROUP_CTX: u32 = 4;

pub struct Engine {
    pub me: usize,
    pub nranks: usize,
    shm: Option<Segment>,
    net: Option<Net>,
    /// How each world rank is reached (fixed at start-up).
    route: Vec<Route>,
    /// The node of each world rank (the process manager's numbering).
    node_of: Vec<usize>,
    /// World ranks of this node other than this one (the rings polled).
    local_peers: Vec<usize>,
    /// Some node's ranks outnumber its cores (`ranks_outnumber_cores`).
    any_oversubscribed: bool,
    /// Largest message sent eagerly to a peer on this node, and to one on another node.
    eager_limit: usize,
    net_eager_limit: usize,
    /// Rendezvous messages to other nodes offer their data for an RDMA read
    /// (`OXMPI_NET_RNDV_READ`, where the provider does RMA).
    net_read: bool,
    /// RDMA reads of rendezvous messages in flight: per receive, the sender and its request.
    reads: std::collections::HashMap<u32, (usize, u32)>,
    /// One-sided operations toward other nodes go by RDMA (`window_rdma`); the number of
    /// the next token and the window accesses done, not asked about yet.
    window_rdma: bool,
    next_window_token: u32,
    window_accesses_done: std::collections::HashSet<u64>,
    /// Peer pid for single-copy reads, when the kernel allowed the probe read.
    cma_pid: Vec<Option<u32>>,
    pub reqs: Slab,
    /// Block lists of recent non-contiguous buffers (single-copy transfers).
    pub plans: buffers::PlanCache,
    /// Posted receives in order, with their envelopes (matching reads no request).
    posted: VecDeque<(Envelope, u32)>,
    /// Buffers for eager payloads that arrive before their receive, reused so the unexpected
    /// path does not allocate in steady state.
    payload_pool: Vec<Vec<u8>>,
    unexpected: VecDeque<Unexpected>,
    outq: Vec<VecDeque<Out>>,
    /// Ring slots, then queued work: peers with queued work, to skip the others cheaply.
    pending_peers: usize,
    wait: WaitPolicy,
    /// Attached bsend buffer capacity and bytes in use.
    pub bsend_capacity: usize,
    pub bsend_used: usize,
    /// Active collective schedules (request ids), advanced by `progress` (coll::sched).
    pub scheds: Vec<u32>,
    /// Active send-receive pairs (MPI_Isendrecv), completed by `progress`.
    pairs: Vec<u32>,
    /// Active library tasks (`Op::Task`), advanced by `progress`.
    tasks: Vec<u32>,
    /// The state of every partitioned request, by request id, and the active ones.
    parts: std::collections::HashMap<u32, part::Partitioned>,
    parts_active: Vec<u32>,
    /// Message counts for the tools interface's performance variables.
    stats: stats::Stats,
    /// The channel of the next partitioned receive (the tag of its data).
    next_part_channel: i32,
    /// Peers that share large transfers' copies (single-copy writes allowed, a core each).
    split_peer: Vec<bool>,
    /// Smallest message split between sender and receiver (usize::MAX: never).
    split_min: usize,
    /// Per peer: dense non-contiguous messages from it shorter than this are streamed rather
    /// than read when more packets wait behind them (`stream_for_bandwidth`); 0: never.
    stream_dense_below: Vec<usize>,
    /// Per sender: board entries of shared transfers in use (bit e: entry e).
    board_busy: Vec<u8>,
    split_gen: u32,
    /// Shared transfers waiting for the sender's last chunks.
    splits: Vec<Split>,
    /// When this rank last moved off a CPU it shared with another rank (`wait_until`).
    last_move_off: Option<Instant>,
    /// Bytes per piece of eager messages sent in pieces (0: never) and the smallest such
    /// message (`try_send_in_pieces`).
    piece: usize,
    pieces_from: usize,
    /// Per sender: the message in pieces being received from it.
    assembly: Vec<Option<Assembly>>,
    /// Direct transfers over the network in flight (their completions keep the rank awake).
    rndv_in_flight: usize,
    /// Per peer: rendezvous sends to it announced and not finished yet. A peer that still has
    /// messages of ours to copy is busy, so it is not asked to share the copy of its own
    /// messages to us (in bidirectional traffic each rank reads its own, in one call).
    rndv_out: Vec<u32>,
}

/// Value peers read at init to find out whether single-copy reads are allowed.
/// Writable (an atomic, so not in read-only memory): peers also probe single-copy writes by
/// writing the same value back.
static CMA_PROBE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0x0c0a_c0a0_5eed_f00d);
const CMA_PROBE_VALUE: u64 = 0x0c0a_c0a0_5eed_f00d;

impl Engine {
    /// Processes in this engine's table: the job's ranks, then processes of other jobs
    /// connected later (`add_remote_peers`).
    pub fn peers(&self) -> usize {
        self.route.len()
    }

    /// Whether process `peer` of the table belongs to another job.
    pub fn is_foreign(&self, peer: usize) -> bool {
        peer >= self.nranks
    }

    /// This process's network address (`Net::address`), opening its endpoint first if it
    /// has none yet (a job on one node opens it when it connects to another job).
    pub fn network_address(&mut self) -> MpiResult<Vec<u8>> {
        if self.net.is_none() {
            let net = Net::open(self.me, self.nranks)?;
            self.net_eager_limit = config::usize_var(config::NET_EAGER_LIMIT)
                .unwrap_or(NET_EAGER_LIMIT_DEFAULT)
                .min(transport::net::PAYLOAD_CAPACITY);
            self.net_read = reads_rendezvous(&net);
            self.window_rdma = window_rdma::rdma_windows(&net);
            self.net = Some(net);
        }
        self.net.as_ref().expect("opened above").address()
    }

    /// A new connection slot of this process (`Net::reserve_slot`), opening its endpoint
    /// first if it has none yet.
    pub fn reserve_connection_slot(&mut self) -> MpiResult<u64> {
        self.network_address()?;
        Ok(self.net.as_mut().expect("opened above").reserve_slot())
    }

    /// Adds the processes of another job that connection `slot` reaches to the table,
    /// reached through the network: for each, its address and the tag of the packets sent
    /// to it (`transport::net::other_job_tag`). Returns the index of the first; they take
    /// consecutive indices. The routes of the job's own ranks do not change, so nothing is
    /// decided per message.
    pub fn add_remote_peers(&mut self, slot: u64, peers: &[(Vec<u8>, u64)]) -> MpiResult<usize> {
        self.network_address()?;
        let n = peers.len();
        let first = self.net.as_mut().expect("opened above").add_other_job(slot, peers)?;
        debug_assert_eq!(first, self.route.len());
        self.route.extend(std::iter::repeat_n(Route::Net, n));
        // A node of their own each, never this job's (they share no segment with it).
        self.node_of.extend((0..n).map(|k| usize::MAX - first - k));
        self.cma_pid.extend(std::iter::repeat_n(None, n));
        self.split_peer.extend(std::iter::repeat_n(false, n));
        self.board_busy.extend(std::iter::repeat_n(0, n));
        self.stream_dense_below.extend(std::iter::repeat_n(0, n));
        self.rndv_out.extend(std::iter::repeat_n(0, n));
        self.assembly.extend((0..n).map(|_| None));
        self.outq.extend((0..n).map(|_| VecDeque::new()));
        Ok(first)
    }

    /// Whether anything is still queued or in flight towards process `peer` (sends not yet
    /// handed to the transport, rendezvous transfers not finished).
    pub fn busy_towards(&self, peer: usize) -> bool {
        !self.outq[peer].is_empty() || self.rndv_out[peer] > 0
    }

    /// An engine for `nranks` ranks on one node; `shm` is None for a job of one.
    pub fn new(me: usize, nranks: usize, shm: Option<Segment>) -> Engine {
        let oversubscribed = shm.as_ref().is_some_and(Segment::ranks_outnumber_cores);
        Engine::spanning(me, nranks, shm, None, vec![0; nranks], oversubscribed)
    }

    /// An engine for `nranks` ranks on the nodes `node_of` (one per world rank): peers on this
    /// node are reached through `shm` (None when alone on it), the others through `net`.
    /// `any_oversubscribed`: some node has more ranks than cores (the job-wide answer of
    /// `ranks_outnumber_cores`).
    pub fn spanning(
        me: usize,
        nranks: usize,
        shm: Option<Segment>,
        net: Option<Net>,
        node_of: Vec<usize>,
        any_oversubscribed: bool,
    ) -> Engine {
        let route: Vec<Route> = (0..nranks)
            .map(|r| match r {
                _ if r == me => Route::Me,
                _ if node_of[r] == node_of[me] => Route::Shm,
                _ => Route::Net,
            })
            .collect();
        assert!(net.is_some() || !route.contains(&Route::Net), "peers on other nodes need the network");
        let local_peers: Vec<usize> = (0..nranks).filter(|&r| route[r] == Route::Shm).collect();
        // Slots may be larger than the eager limit (see shm::SLOT_PAYLOAD_MIN); the network
        // carries up to its own payload capacity.
        let capacity = [
            shm.as_ref().map(|s| s.geometry().payload_capacity()),
            net.as_ref().map(|_| transport::net::PAYLOAD_CAPACITY),
        ];
        let eager_limit = match capacity.iter().flatten().min() {
            Some(&cap) => config::usize_var(config::EAGER_LIMIT).unwrap_or(shm::EAGER_LIMIT_DEFAULT).min(cap),
            None => usize::MAX,
        };
        let net_eager_limit = match net {
            Some(_) => config::usize_var(config::NET_EAGER_LIMIT)
                .unwrap_or(NET_EAGER_LIMIT_DEFAULT)
                .min(transport::net::PAYLOAD_CAPACITY),
            None => 0,
        };
        let net_read = net.as_ref().is_some_and(reads_rendezvous);
        let window_rdma = net.as_ref().is_some_and(window_rdma::rdma_windows);
        let wait = WaitPolicy::for_node(local_peers.len() + 1, shm.as_ref());
        // The receiver of a message in pieces waits for them: only with a core per rank.
        let piece =
            if wait.oversubscribed { 0 } else { config::usize_var(config::EAGER_PIECE).unwrap_or(EAGER_PIECE_DEFAULT) };
        let pieces_from =
            config::usize_var(config::EAGER_PIECES_FROM).unwrap_or(EAGER_PIECES_FROM_DEFAULT).max(piece + 1);
        Engine {
            piece,
            pieces_from,
            assembly: (0..nranks).map(|_| None).collect(),
            me,
            nranks,
            shm,
            net,
            route,
            node_of,
            local_peers,
            any_oversubscribed,
            eager_limit,
            net_eager_limit,
            net_read,
            reads: std::collections::HashMap::new(),
            window_rdma,
            next_window_token: 0,
            window_accesses_done: std::collections::HashSet::new(),
            cma_pid: vec![None; nranks],
            split_peer: vec![false; nranks],
            split_min: usize::MAX,
            board_busy: vec![0; nranks],
            stream_dense_below: vec![0; nranks],
            split_gen: 0,
            splits: Vec::new(),
            last_move_off: None,
            rndv_out: vec![0; nranks],
            rndv_in_flight: 0,
            reqs: Slab::default(),
            plans: buffers::PlanCache::default(),
            posted: VecDeque::new(),
            payload_pool: Vec::new(),
            unexpected: VecDeque::new(),
            outq: (0..nranks).map(|_| VecDeque::new()).collect(),
            pending_peers: 0,
            wait,
            bsend_capacity: 0,
            bsend_used: 0,
            scheds: Vec::new(),
            pairs: Vec::new(),
            tasks: Vec::new(),
            parts: std::collections::HashMap::new(),
            parts_active: Vec::new(),
            stats: stats::Stats::default(),
            next_part_channel: 0,
        }
    }

    /// Address of the probe value peers read (recorded in the segment).
    pub fn cma_probe_addr() -> u64 {
        CMA_PROBE.as_ptr() as u64
    }

    /// Tries a real single-copy read from every peer; enables it per peer where it works.
    pub fn probe_cma(&mut self) {
        let Some(seg) = &self.shm else { return };
        if std::env::var(config::CMA).is_ok_and(|v| v == "0") {
            return;
        }
        // Shared copies need the sender on a core of its own while the receiver copies (by
        // default, decided node-wide as the wait policy is; an explicit OXMPI_CMA_SPLIT
        // applies at any rank count).
        let (split_min, split) = match config::usize_var(config::CMA_SPLIT) {
            Some(min) => (min, min > 0),
            None => (SPLIT_MIN_DEFAULT, !seg.ranks_outnumber_cores()),
        };
        for &peer in &self.local_peers {
            let (pid, addr) = seg.peer_identity(peer);
            let mut got = [0u8; 8];
            if shm::cma_read(pid, addr, &mut got).is_ok() && u64::from_ne_bytes(got) == CMA_PROBE_VALUE {
                self.cma_pid[peer] = Some(pid);
                // Writing the value it holds back changes nothing.
                if split && shm::cma_write(pid, addr, &CMA_PROBE_VALUE.to_ne_bytes()).is_ok() {
                    self.split_peer[peer] = true;
                    self.split_min = split_min;
                    // Below the shared-copy threshold a read is one rank's work; a stream shares it.
                    self.stream_dense_below[peer] = split_min;
                }
            } else {
                log::debug!("single-copy reads from rank {peer} denied; using the ring");
            }
        }
    }

    pub fn cma_enabled_peers(&self) -> usize {
        self.cma_pid.iter().filter(|p| p.is_some()).count()
    }

    /// The node's shared segment (doorbells of shared-memory collectives); None alone.
    pub fn segment(&self) -> Option<&Segment> {
        self.shm.as_ref()
    }

    /// Whether the ranks of some node of the job outnumber the CPUs they can run on together
    /// (`Segment::ranks_outnumber_cores`): the same answer on every rank of the job, for
    /// choices both ends of a message must make alike. False for a job of one.
    pub fn ranks_outnumber_cores(&self) -> bool {
        self.any_oversubscribed
    }

    /// The node of each world rank.
    pub fn node_of(&self) -> &[usize] {
        &self.node_of
    }

    /// What this rank decided at start-up, for the debug log: the CPUs the node's ranks may
    /// run on together, whether it waits as an oversubscribed rank (no spinning), and with how
    /// many peers it shares large copies (None for a job of one).
    pub fn node_summary(&self) -> Option<String> {
        let seg = self.shm.as_ref()?;
        let shared = self.split_peer.iter().filter(|&&s| s).count();
        Some(format!(
            "{} ranks on {} CPUs, waits as oversubscribed: {}, shares copies with {shared} peers, light fences: {}",
            self.local_peers.len() + 1,
            seg.node_cores(),
            self.wait.oversubscribed,
            seg.light_fences()
        ))
    }

    pub fn eager_limit(&self) -> usize {
        self.eager_limit
    }

    // ----- starting operations -----

    /// Starts a send of `buf` to world rank `dst`; returns the request id. Sends that fit a
    /// slot and find it free complete at once.
    pub fn isend(&mut self, dst: usize, env: Envelope, buf: SendBuf, mode: SendMode, comm: i32) -> u32 {
        if matches!(mode, SendMode::Standard | SendMode::Ready) {
            let sent = if buf.is_contiguous() {
                self.try_send_eager_now(dst, env, buf.bytes())
            } else {
                self.try_send_packed_now(dst, env, buf.len(), |slot| buf.copy_to(0, slot))
            };
            if sent {
                return COMPLETED_SEND;
            }
        }
        let req = self.reqs.insert(Request::started(Op::Send { dst, env, buf, mode, bsend_bytes: 0 }, comm));
        self.start_send(req);
        req
    }

    /// Blocking standard send fast path: when `bytes` fit a slot, nothing is queued before
    /// them and the slot is free, writes them now, with no request. Returns whether it did.
    #[inline]
    pub fn try_send_eager_now(&mut self, dst: usize, env: Envelope, bytes: &[u8]) -> bool {
        if self.route[dst] != Route::Shm {
            return self.try_send_net_now(dst, bytes.len(), |net| {
                transport::Channel::Net(net).send_eager(dst, env.ctx, env.src, env.tag, bytes)
            });
        }
        if bytes.len() > self.eager_limit || !self.outq[dst].is_empty() {
            return false;
        }
        let Some(seg) = self.shm.as_mut() else { return false };
        if !seg.can_send(dst) {
            return false;
        }
        seg.send_eager(dst, env.ctx, env.src, env.tag, bytes);
        seg.notify(dst);
        self.stats.sent.add(Route::Shm, bytes.len());
        true
    }

    /// The network's side of `try_send_eager_now`: `send` writes an eager message of `len`
    /// bytes when `dst` is on another node, nothing is queued to it and a send buffer is free.
    #[inline(never)]
    fn try_send_net_now(&mut self, dst: usize, len: usize, send: impl FnOnce(&mut Net)) -> bool {
        if self.route[dst] != Route::Net || len > self.net_eager_limit || !self.outq[dst].is_empty() {
            return false;
        }
        match self.net.as_mut() {
            Some(net) if net.can_send(dst) => {
                send(net);
                self.stats.sent.add(Route::Net, len);
                true
            }
            _ => false,
        }
    }

    /// `try_send_eager_now` for consecutive messages to `dst` (a block cut into pieces): sends
    /// them while the ring has room and rings the receiver once, after the last. Returns how
    /// many went. (A receiver woken by the first piece would run, miss the next and sleep again:
    /// a scheduling round per piece when ranks outnumber cores.)
    pub fn try_send_eager_pieces<'a>(
        &mut self,
        dst: usize,
        env: Envelope,
        pieces: impl Iterator<Item = &'a [u8]>,
    ) -> usize {
        let limit = self.eager_limit;
        if self.route[dst] != Route::Shm || !self.outq[dst].is_empty() {
            return 0;
        }
        let Some(seg) = self.shm.as_mut() else { return 0 };
        let mut sent = 0;
        for bytes in pieces {
            if bytes.len() > limit || !seg.can_send(dst) {
                break;
            }
            seg.send_eager(dst, env.ctx, env.src, env.tag, bytes);
            self.stats.sent.add(Route::Shm, bytes.len());
            sent += 1;
        }
        if sent > 0 {
            seg.notify(dst);
        }
        sent
    }

    /// `try_send_eager_now` for `len` bytes of non-contiguous data: `pack` writes them straight
    /// into the slot (no packed copy, no request).
    pub fn try_send_packed_now(&mut self, dst: usize, env: Envelope, len: usize, pack: impl FnOnce(&mut [u8])) -> bool {
        if self.route[dst] != Route::Shm {
            return self.try_send_net_now(dst, len, |net| {
                transport::Channel::Net(net).send_eager_with(dst, env.ctx, env.src, env.tag, len, pack)
            });
        }
        if len > self.eager_limit || !self.outq[dst].is_empty() {
            return false;
        }
        let Some(seg) = self.shm.as_mut() else { return false };
        if !seg.can_send(dst) {
            return false;
        }
        seg.send_eager_with(dst, env.ctx, env.src, env.tag, len, pack);
        seg.notify(dst);
        self.stats.sent.add(Route::Shm, len);
        true
    }

    /// Sends an eager message of `len` bytes to `dst` in pieces of `piece` bytes, one slot
    /// each, when the receiver answered our last message and took everything sent to it (so
    /// it likely waits for this one): it unpacks the first piece while the next ones are
    /// packed, where a single slot has the packing and the unpacking run one after the other
    /// (ping-pong of 8 KiB of 8-byte blocks: 2.7 -> 2.5 us, docs/perf-r7-vec.md). For
    /// non-contiguous data: contiguous messages gained nothing (their two copies are bound by
    /// the lines moving between the cores, not by work on either side). `fill(range, out)`
    /// writes bytes `range` of the message into `out`. Only messages from `pieces_from` bytes
    /// to the eager limit, only when ranks have a core each (the receiver waits for the
    /// pieces). Returns whether it sent.
    pub fn try_send_in_pieces(
        &mut self,
        dst: usize,
        env: Envelope,
        len: usize,
        mut fill: impl FnMut(std::ops::Range<usize>, &mut [u8]),
    ) -> bool {
        let piece = self.piece;
        if piece == 0
            || len < self.pieces_from
            || len > self.eager_limit
            || self.route[dst] != Route::Shm
            || !self.outq[dst].is_empty()
        {
            return false;
        }
        let Some(seg) = self.shm.as_mut() else { return false };
        let pieces = len.div_ceil(piece);
        // A drained ring has every slot free. A peer that answered our last message waits for
        // this one (a ping-pong); without an answer, messages follow each other (a window) and
        // already overlap their copies.
        if !seg.answered(dst) || !seg.can_send_burst(dst, pieces, piece.min(len)) {
            return false;
        }
        let mut head = Packet {
            kind: kind::PIECE_HEAD,
            context: env.ctx,
            src: env.src,
            tag: env.tag,
            addr: len as u64,
            ..Default::default()
        };
        for at in (0..len).step_by(piece) {
            let n = piece.min(len - at);
            head.len = n as u64;
            seg.send(dst, &head, n, |slot| fill(at..at + n, &mut slot[..n]));
            head = Packet { kind: kind::PIECE, len: n as u64, addr: (at + n) as u64, ..Default::default() };
        }
        seg.notify(dst);
        self.stats.sent.add(Route::Shm, len);
        true
    }

    /// `try_recv_eager_now` for a destination of `cap` bytes that is not one slice (a
    /// non-contiguous layout): `unpack(offset, bytes)` gets the payload straight from the
    /// slot (or slots: a message in pieces).
    pub fn try_recv_packed_now(
        &mut self,
        from: usize,
        env: Envelope,
        cap: usize,
        unpack: impl FnMut(usize, &[u8]),
    ) -> Option<Status> {
        self.take_eager_now(from, env, cap, unpack)
    }

    /// `recv_eager_arriving` for a destination of `cap` bytes that is not one slice.
    pub fn recv_packed_arriving(
        &mut self,
        from: usize,
        env: Envelope,
        cap: usize,
        unpack: impl FnMut(usize, &[u8]),
    ) -> Option<Status> {
        self.watch_eager(from, env, cap, unpack)
    }

    /// Blocking receive fast path: takes an eager message for `env` (a specific source, world
    /// rank `from`) straight from the head of `from`'s ring into `dst`, when nothing may come
    /// before it (no posted receive, no queued message `env` accepts) and it fits. Returns the
    /// status if it did; the caller otherwise posts a receive as usual.
    pub fn try_recv_eager_now(&mut self, from: usize, env: Envelope, dst: &mut [u8]) -> Option<Status> {
        let cap = dst.len();
        self.take_eager_now(from, env, cap, |at, payload| shm::copy_small(&mut dst[at..at + payload.len()], payload))
    }

    /// `try_recv_eager_now` into a destination of `cap` bytes written by `put(offset, bytes)`
    /// (it gets the payload, at most `cap` bytes in all). A message in pieces
    /// (`try_send_in_pieces`) is taken whole: its sender writes the pieces one after the other
    /// without waiting for anything, so this waits for the rest of them here.
    #[inline(always)]
    fn take_eager_now(
        &mut self,
        from: usize,
        env: Envelope,
        cap: usize,
        mut put: impl FnMut(usize, &[u8]),
    ) -> Option<Status> {
        if self.route[from] != Route::Shm || !self.posted.is_empty() {
            return None;
        }
        if !self.unexpected.is_empty() && self.has_unexpected_for(&env) {
            return None;
        }
        let seg = self.shm.as_mut()?;
        let inc = seg.peek(from)?;
        let pk = inc.packet;
        let msg = Envelope { ctx: pk.context, src: pk.src, tag: pk.tag };
        let len = match pk.kind {
            kind::EAGER => inc.payload.len(),
            kind::PIECE_HEAD => pk.addr as usize,
            _ => return None,
        };
        if len > cap || !env.accepts(&msg) {
            return None;
        }
        put(0, inc.payload);
        let mut filled = inc.payload.len();
        seg.release(from);
        if filled < len {
            filled += take_pieces(seg, from, len - filled, &mut put);
        }
        debug_assert_eq!(filled, len);
        seg.notify(from);
        self.stats.received.add(Route::Shm, len);
        Some(Status { source: msg.src, tag: msg.tag, bytes: len, cancelled: false, error: MPI_SUCCESS })
    }

    /// Blocking receive fast path for a message on its way: when `try_recv_eager_now` found
    /// nothing yet, watches the head of `from`'s ring for a few microseconds (in a ping-pong
    /// the reply is that close) and takes the message as `try_recv_eager_now` does, without
    /// posting a request and going through the progress loop. Only when the receiver would
    /// spin anyway (a core of its own, no rank of the job queued on its CPU), for buffers up
    /// to the eager limit, and when nothing else needs progress meanwhile (no queued work,
    /// shared copies, schedules, pairs or tasks). None: the caller posts the receive and waits
    /// as usual.
    pub fn recv_eager_arriving(&mut self, from: usize, env: Envelope, dst: &mut [u8]) -> Option<Status> {
        let cap = dst.len();
        self.watch_eager(from, env, cap, |at, payload| shm::copy_small(&mut dst[at..at + payload.len()], payload))
    }

    /// `recv_eager_arriving` into a destination of `cap` bytes written by `put(offset, bytes)`.
    #[inline(always)]
    fn watch_eager(&mut self, from: usize, env: Envelope, cap: usize, put: impl FnMut(usize, &[u8])) -> Option<Status> {
        // A buffer larger than the eager limit likely waits for a rendezvous request: then the
        // receive is better posted at once, so that its request is ready when the request to
        // send arrives (ping-pong of 16 KiB: 1.75 against 1.85 us with the watch).
        if self.wait.spin.is_zero()
            || cap > self.eager_limit
            || self.route[from] != Route::Shm
            || self.pending_peers > 0
            || !self.posted.is_empty()
            || !self.splits.is_empty()
            || !self.scheds.is_empty()
            || !self.pairs.is_empty()
            || !self.tasks.is_empty()
            || !self.parts_active.is_empty()
        {
            return None;
        }
        let seg = self.shm.as_ref()?;
        if seg.track_cpu() {
            return None;
        }
        let start = Instant::now();
        loop {
            for _ in 0..POLLS_PER_CLOCK_READ {
                if seg.peek(from).is_some() {
                    return self.take_eager_now(from, env, cap, put);
                }
                std::hint::spin_loop();
            }
            if start.elapsed() >= ARRIVAL_WATCH {
                return None;
            }
        }
    }

    /// (Re)starts the send held by request `req`.
    pub fn start_send(&mut self, req: u32) {
        let Some(Request { op: Op::Send { dst, env, buf, mode, .. }, .. }) = self.reqs.get_mut(req) else {
            unreachable!("start_send on a request that is not a send")
        };
        let (dst, env, mode, len) = (*dst, *env, *mode, buf.len());
        self.stats.sent.add(self.route[dst], len);
        if dst == self.me {
            self.send_to_self(req, env, mode);
        } else if len <= if self.route[dst] == Route::Net { self.net_eager_limit } else { self.eager_limit } {
            self.push_out(dst, Out::Eager { req });
        } else {
            self.stats.rendezvous_sent += 1;
            self.push_out(dst, Out::Rts { req });
        }
    }

    /// Self messages skip the rings: matched at once, or copied to the unexpected queue.
    fn send_to_self(&mut self, req: u32, env: Envelope, mode: SendMode) {
        let data = match &mut self.reqs.get_mut(req).unwrap().op {
            Op::Send { buf, .. } => buf.packed_bytes().to_vec(),
            _ => unreachable!(),
        };
        let sync = mode == SendMode::Sync;
        let len = data.len();
        let msg = Unexpected { env, from: self.me, len, body: Body::Eager { data, ack: sync.then_some(req) } };
        if !sync {
            self.complete_send(req);
        }
        self.on_message(msg);
    }

    /// Posts a receive; returns its request id.
    pub fn irecv(&mut self, env: Envelope, buf: RecvBuf, comm: i32) -> u32 {
        let req = self.reqs.insert(Request::started(Op::Recv { env, buf, expected: 0, arrived: 0 }, comm));
        self.start_recv(req);
        req
    }

    /// (Re)starts the receive held by request `req`: takes a queued message or posts it.
    pub fn start_recv(&mut self, req: u32) {
        let Some(Request { op: Op::Recv { env, .. }, .. }) = self.reqs.get(req) else {
            unreachable!("start_recv on a request that is not a receive")
        };
        let env = *env;
        // Messages still in the rings are later than every queued one from the same sender,
        // so posting without draining the rings first keeps MPI's order, and lets them land
        // straight in the receive buffer.
        if let Some(pos) = self.unexpected.iter().position(|m| env.accepts(&m.env)) {
            let msg = self.unexpected.remove(pos).unwrap();
            self.deliver(req, msg);
        } else {
            self.posted.push_back((env, req));
        }
    }

    /// Receives a message taken by mprobe into request `req` (which holds the receive buffer).
    pub fn receive_message(&mut self, req: u32, msg: Unexpected) {
        self.deliver(req, msg);
    }

    // ----- probing -----

    /// The first queued message a receive with `env` would take, without taking it.
    pub fn iprobe(&mut self, env: Envelope) -> Option<Status> {
        self.progress();
        self.unexpected.iter().find(|m| env.accepts(&m.env)).map(|m| Status {
            source: m.env.src,
            tag: m.env.tag,
            bytes: m.len,
            ..Default::default()
        })
    }

    /// Whether a message `env` accepts is queued (no progress; for wait predicates).
    pub fn has_unexpected_for(&self, env: &Envelope) -> bool {
        self.unexpected.iter().any(|m| env.accepts(&m.env))
    }

    /// Takes the first queued message `env` accepts (MPI_Improbe).
    pub fn improbe(&mut self, env: Envelope) -> Option<Unexpected> {
        self.progress();
        let pos = self.unexpected.iter().position(|m| env.accepts(&m.env))?;
        self.unexpected.remove(pos)
    }

    /// Cancels a receive that is still posted; returns whether it was cancelled.
    pub fn cancel_recv(&mut self, req: u32) -> bool {
        let Some(pos) = self.posted.iter().position(|&(_, r)| r == req) else { return false };
        self.posted.remove(pos);
        let r = self.reqs.get_mut(req).unwrap();
        r.status.cancelled = true;
        r.status.source = MPI_ANY_SOURCE;
        r.status.tag = MPI_ANY_TAG;
        r.complete = true;
        true
    }

    // ----- completion -----

    fn complete_send(&mut self, req: u32) {
        let r = self.reqs.get_mut(req).expect("completion of an unknown send request");
        if let Op::Send { bsend_bytes, .. } = &mut r.op {
            self.bsend_used -= *bsend_bytes;
            *bsend_bytes = 0;
        }
        r.complete = true;
        if r.freed {
            self.reqs.discard(req);
        }
    }

    fn complete_recv(&mut self, req: u32, received: usize) {
        let r = self.reqs.get_mut(req).expect("completion of an unknown receive request");
        if let Op::Recv { buf, .. } = &mut r.op {
            buf.finish(received);
        }
        r.complete = true;
        if r.freed {
            self.reqs.discard(req);
        }
    }

    /// Hands message `msg` to receive request `req`.
    fn deliver(&mut self, req: u32, msg: Unexpected) {
        match msg.body {
            Body::Eager { data, ack } => {
                self.complete_eager(req, msg.env, &data, ack, msg.from);
                self.recycle_payload(data);
            }
            Body::Rts { addr, sreq, blocks, stream, read } => {
                self.stats.received.add(self.route[msg.from], msg.len);
                let n = self.set_matched_status(req, msg.env, msg.len);
                // From another node: the data comes as one transfer straight into the receive
                // buffer: the user's memory (its blocks, when non-contiguous ones are large
                // enough and few enough for the provider: receive-scatter) or a staging copy,
                // read by RDMA from where the sender exposed it, or else sent once this rank
                // says so (the provider's own large-message protocol). A truncated message
                // streams instead (the excess is dropped). An RDMA read offer names each
                // piece's region: its `blocks` are not the data's layout.
                let (remote, blocks) = if read { (blocks, Vec::new()) } else { (Vec::new(), blocks) };
                // An offer of a non-contiguous sender's blocks: `addr` regions, then the blocks.
                let regions = if read { addr as usize } else { 0 };
                let remote_blocks: Vec<(usize, usize)> = match remote.get(regions..) {
                    Some(rest) if regions > 0 => rest.iter().map(|&(o, l)| (o as usize, l as usize)).collect(),
                    _ => Vec::new(),
                };
                let readable = |net: &Net| {
                    let stripes = net.stripes(msg.from, n);
                    if regions == 0 {
                        remote.len() == stripes
                    } else {
                        (stripes..=remote.len()).contains(&regions)
                            && remote_blocks.iter().map(|b| b.1).sum::<usize>() == n
                            && net.split_for_read(msg.from, &[(0, n)], &remote_blocks, n).is_some()
                    }
                };
                if self.route[msg.from] == Route::Net
                    && n == msg.len
                    && self.net.as_ref().is_some_and(|net| net.can_direct(n, Way::In) && (!read || readable(net)))
                {
                    let Op::Recv { buf, .. } = &mut self.reqs.get_mut(req).unwrap().op else { unreachable!() };
                    let net = self.net.as_mut().unwrap();
                    // The transfer is cut as finely as this rank's blocks need (`split`, which
                    // the sender follows), or it lands in one staging block.
                    let split_for = |net: &Net, b: &[(usize, usize)]| {
                        if regions > 0 {
                            net.split_for_read(msg.from, b, &remote_blocks, n)
                        } else {
                            net.split_for(msg.from, b, n)
                        }
                    };
                    let plan =
                        buf.block_list(n, &mut self.plans).and_then(|b| split_for(net, &b).map(|split| (b, split)));
                    let one;
                    let (blocks, split): (&[(usize, usize)], usize) = match &plan {
                        Some((blocks, split)) => (blocks, *split),
                        None => {
                            one = [(buf.slice_mut(0, n).as_mut_ptr() as usize, n)];
                            (&one, split_for(net, &one).expect("one block fits (`readable`)"))
                        }
                    };
                    self.rndv_in_flight += 1;
                    // SAFETY (both): the blocks (the user's memory, or the staging copy the
                    // request owns) hold `n` bytes and are left alone until the transfer's
                    // token completes the request.
                    if read {
                        // Rendezvous by RDMA read; FIN once the data is here.
                        let token = DIRECT_READ | u64::from(req);
                        if regions > 0 {
                            let regions = &remote[..regions];
                            unsafe { net.read_blocks(msg.from, blocks, n, regions, &remote_blocks, split, token) };
                        } else {
                            unsafe { net.read_direct(msg.from, blocks, n, &remote, split, token) };
                        }
                        self.reads.insert(req, (msg.from, sreq));
                        self.stats.rdma_reads += 1;
                    } else {
                        unsafe { net.receive_direct(msg.from, req, blocks, n, split, u64::from(req)) };
                        self.control(msg.from, Out::Cts { sreq, rreq: req, direct: Some(split) });
                    }
                    return;
                }
                // Data too sparse to read in place on either side streams through the ring:
                // the sender packs each slot, this rank unpacks it (one copy each, the two
                // overlapping) instead of a pack there, a read and an unpack here.
                let sparse_here = match &self.reqs.get(req).unwrap().op {
                    Op::Recv { buf, .. } => buf.is_scattered() && buf.block_list(n, &mut self.plans).is_none(),
                    _ => unreachable!(),
                };
                if !stream
                    && !read
                    && !sparse_here
                    && !self.stream_for_bandwidth(msg.from, n, !blocks.is_empty())
                    && let Some(pid) = self.cma_pid[msg.from]
                {
                    let contiguous = blocks.is_empty();
                    let remote = if contiguous { vec![(addr, n as u64)] } else { blocks };
                    if self.start_split(req, msg.from, &remote, contiguous, sreq, n) {
                        return;
                    }
                    let ok = match &mut self.reqs.get_mut(req).unwrap().op {
                        Op::Recv { buf, .. } => match buf.block_list(n, &mut self.plans) {
                            // Receive-scatter straight into the user's blocks.
                            // SAFETY: the blocks lie in the receive buffer, which the MPI rules
                            // reserve for this receive until it completes.
                            Some(local) => unsafe { shm::cma_readv(pid, &local, &remote, n) }.is_ok(),
                            None => {
                                let staged = buf.slice_mut(0, n);
                                let local = [(staged.as_mut_ptr() as usize, n)];
                                // SAFETY: `local` is the staging slice borrowed just above.
                                unsafe { shm::cma_readv(pid, &local, &remote, n) }.is_ok()
                            }
                        },
                        _ => unreachable!(),
                    };
                    if ok {
                        self.complete_recv(req, n);
                        self.control(msg.from, Out::Fin { sreq });
                        return;
                    }
                    log::debug!("single-copy read from rank {} failed; streaming instead", msg.from);
                    self.cma_pid[msg.from] = None;
                }
                if let Op::Recv { expected, arrived, .. } = &mut self.reqs.get_mut(req).unwrap().op {
                    *expected = msg.len;
                    *arrived = 0;
                }
                self.control(msg.from, Out::Cts { sreq, rreq: req, direct: None });
            }
        }
    }

    /// Whether a rendezvous message of `n` bytes from `from` whose non-contiguous data the
    /// sender offers as a block list (`offered`) is better streamed than read by this rank
    /// alone: when more packets from the sender wait behind it (a window of messages in
    /// flight, this rank is the bottleneck) and the message is too short to share its copy
    /// (`split_min`), the stream has the sender pack while this rank unpacks, instead of this
    /// rank doing every copy (and a system call and page pinning per message) while the sender
    /// waits: vec_bw of 4 KiB blocks at 16-32 KiB, 6.3-6.5 -> 8.9-9.4 GB/s
    /// (docs/perf-r6-vec.md). Not when this rank has rendezvous messages out to that peer
    /// (traffic both ways: the sender is busy too, and a read costs one copy where a stream
    /// costs two), nor for a lone message (a ping-pong: the read is the shorter path,
    /// 2.6 against 3.7 us at 16 KiB).
    fn stream_for_bandwidth(&self, from: usize, n: usize, offered: bool) -> bool {
        offered
            && n < self.stream_dense_below[from]
            && self.rndv_out[from] == 0
            && self.shm.as_ref().is_some_and(|seg| seg.backlog(from))
    }

    /// Reads a rendezvous sender's block list of `n` entries at `addr` in rank `from` (a list
    /// longer than a slot). On failure the sender's memory is out of reach: single-copy reads
    /// from it are turned off, so the message streams (the sender packs it into the slots).
    fn read_block_list(&mut self, from: usize, addr: u64, n: usize) -> Vec<(u64, u64)> {
        let Some(pid) = self.cma_pid[from] else { return Vec::new() };
        fetch_block_list(pid, addr, n).unwrap_or_else(|_| {
            log::debug!("reading the block list of rank {from} failed; streaming instead");
            self.cma_pid[from] = None;
            Vec::new()
        })
    }

    /// Starts copying the `n` bytes in the blocks `remote` of the sender `from` (its offer, or
    /// one block when `contiguous`) into receive `req` together with the sender (`Split`), when
    /// the message is large enough and a board entry is free; returns whether it did (the
    /// receive is then done or in `splits`).
    fn start_split(
        &mut self,
        req: u32,
        from: usize,
        remote: &[(u64, u64)],
        contiguous: bool,
        sreq: u32,
        n: usize,
    ) -> bool {
        if n < self.split_min || !self.split_peer[from] || self.rndv_out[from] > 0 {
            return false;
        }
        if self.board_busy[from] == u8::MAX {
            // Entries are given back by `advance_splits`, which runs only between passes over
            // the rings: a window of messages announced at once (all in the ring now) would
            // otherwise find the board full after its first eight and leave the rest of them
            // to this rank alone.
            self.advance_splits();
            if self.board_busy[from] == u8::MAX {
                return false;
            }
        }
        let Some(pid) = self.cma_pid[from] else { return false };
        let Op::Recv { buf, .. } = &mut self.reqs.get_mut(req).unwrap().op else { unreachable!() };
        // Our destination: the user's contiguous buffer or dense blocks, else staging
        // (unpacked on completion).
        let local = match buf.block_list(n, &mut self.plans) {
            Some(list) => list,
            None => std::sync::Arc::new([(buf.slice_mut(0, n).as_mut_ptr() as usize, n)]),
        };
        // Blocks on either side (even a single one: a non-contiguous sender copies through its
        // block list): both ranks copy with block lists, the sender writing its blocks into
        // ours (it reads our list out of band).
        let lists = (!contiguous || local.len() > 1).then(|| {
            let wire = local.iter().map(|&(a, l)| [a as u64, l as u64]).collect();
            Box::new(SplitLists { remote: remote.to_vec(), local: local.clone(), wire })
        });
        let (help_addr, nblocks) = match &lists {
            Some(l) => (l.wire.as_ptr() as u64, l.wire.len() as u32),
            None => (local[0].0 as u64, 0),
        };
        let entry = self.board_busy[from].trailing_ones() as usize;
        self.board_busy[from] |= 1 << entry;
        self.split_gen = self.split_gen.wrapping_add(1);
        let generation = self.split_gen;
        let chunk = split_chunk(n);
        let nchunks = n.div_ceil(chunk);
        self.shm.as_ref().unwrap().split_open(from, entry, generation, nchunks);
        let help = Help { sreq, entry: entry as u32, generation, addr: help_addr, len: n, nblocks };
        self.push_out(from, Out::Help(help));
        let split = Split {
            req,
            from,
            sreq,
            entry,
            pid,
            remote: remote[0].0,
            local: local[0].0,
            len: n,
            chunk,
            nchunks,
            own: 0,
            lists,
        };
        self.splits.push(split);
        let i = self.splits.len() - 1;
        self.advance_split(i);
        true
    }

    /// Copies what is left to claim of shared transfer `i`, and the chunk the sender gave
    /// back; completes the receive once every chunk is in. Returns whether it completed.
    fn advance_split(&mut self, i: usize) -> bool {
        let seg = self.shm.as_ref().unwrap();
        let s = &mut self.splits[i];
        let mut failed = false;
        let mut copy = |c: usize| {
            let off = c * s.chunk;
            let n = s.chunk.min(s.len - off);
            failed |= match &s.lists {
                // SAFETY: the local blocks are the receive's (user memory), reserved for this
                // receive until it completes; chunks are disjoint byte ranges of them.
                Some(l) => unsafe { shm::cma_readv_range(s.pid, &l.local, &l.remote, off..off + n) }.is_err(),
                None => {
                    // SAFETY: [local, local + len) is the receive's buffer (user memory or
                    // staging), reserved for this receive until it completes; chunks are
                    // disjoint.
                    let dst = unsafe { std::slice::from_raw_parts_mut((s.local + off) as *mut u8, n) };
                    shm::cma_read(s.pid, s.remote + off as u64, dst).is_err()
                }
            };
        };
        while let Some(c) = seg.split_claim_front(s.from, s.entry) {
            copy(c);
            s.own += 1;
        }
        let (done, redo) = seg.split_state(s.from, s.entry);
        if let Some(c) = redo {
            copy(c);
            s.own += 1;
        }
        if failed {
            // The kernel allowed the probe but not this read: nothing sensible is left to try.
            panic!("single-copy read from rank {} failed during a shared transfer", s.from);
        }
        if s.own + done < s.nchunks {
            return false;
        }
        let s = self.splits.swap_remove(i);
        self.board_busy[s.from] &= !(1 << s.entry);
        self.complete_recv(s.req, s.len);
        self.control(s.from, Out::Fin { sreq: s.sreq });
        true
    }

    /// Advances every shared transfer waiting for the sender; returns whether any completed.
    /// Kept out of line: `progress` is the small-message hot loop.
    #[inline(never)]
    fn advance_splits(&mut self) -> bool {
        let mut did = false;
        let mut i = 0;
        while i < self.splits.len() {
            if self.advance_split(i) {
                did = true;
            } else {
                i += 1;
            }
        }
        did
    }

    /// Sender side of a shared transfer: writes chunks from the back of the message until the
    /// two ranks meet, then rings the receiver (it may be about to sleep).
    #[inline(never)]
    fn help_split(&mut self, to: usize, pk: &Packet) {
        let Some(pid) = self.cma_pid[to] else { return };
        if !self.split_peer[to] {
            return;
        }
        if pk.tag != 0 {
            return self.help_split_lists(to, pid, pk);
        }
        let Some(Request { op: Op::Send { buf, .. }, .. }) = self.reqs.get(pk.sreq) else { return };
        let (entry, generation, len) = (pk.rreq as usize, pk.context, pk.len as usize);
        let bytes = buf.bytes();
        if bytes.len() < len {
            return;
        }
        let addr = pk.addr;
        let seg = self.shm.as_ref().unwrap();
        if !write_claimed_chunks(seg, to, entry, generation, len, |r| {
            shm::cma_write(pid, addr + r.start as u64, &bytes[r]).is_ok()
        }) {
            self.split_peer[to] = false;
        }
    }

    /// `help_split` of a transfer with blocks on either side: reads the receiver's block list
    /// (`pk.tag` entries at `pk.addr`), then writes chunks from the back, each a byte range of
    /// our blocks into the same range of the receiver's.
    fn help_split_lists(&mut self, to: usize, pid: u32, pk: &Packet) {
        let (entry, generation, len) = (pk.rreq as usize, pk.context, pk.len as usize);
        // The list may be gone already (the receiver copied every chunk itself and completed):
        // then there is nothing left to claim either.
        let Ok(theirs) = fetch_block_list(pid, pk.addr, pk.tag as u32 as usize) else { return };
        let Some(Request { op: Op::Send { buf, .. }, .. }) = self.reqs.get(pk.sreq) else { return };
        let mine = if buf.is_contiguous() {
            std::sync::Arc::new([(buf.addr() as usize, buf.len())])
        } else {
            match buf.block_list(&mut self.plans) {
                Some(list) => list,
                None => return,
            }
        };
        if theirs.is_empty() || buf.len() < len {
            return;
        }
        let seg = self.shm.as_ref().unwrap();
        if !write_claimed_chunks(seg, to, entry, generation, len, |r| {
            shm::cma_writev_range(pid, &mine, &theirs, r).is_ok()
        }) {
            self.split_peer[to] = false;
        }
    }

    /// Keeps an eager payload buffer for reuse (a bounded number of slot-sized ones).
    fn recycle_payload(&mut self, data: Vec<u8>) {
        const POOL_MAX: usize = 64;
        if self.payload_pool.len() < POOL_MAX && data.capacity() <= self.eager_limit.max(self.net_eager_limit) {
            self.payload_pool.push(data);
        }
    }

    /// Records in receive `req` the status of a matched message of `len` bytes; returns how
    /// many bytes fit its buffer (fewer means truncation, reported in the status).
    fn set_matched_status(&mut self, req: u32, env: Envelope, len: usize) -> usize {
        let r = self.reqs.get_mut(req).unwrap();
        let Op::Recv { buf, .. } = &r.op else { unreachable!("a match for a request that is not a receive") };
        let n = len.min(buf.capacity());
        let error = receive_error(buf, len);
        r.status = Status { source: env.src, tag: env.tag, bytes: n, cancelled: false, error };
        n
    }

    /// Completes receive `req` with an eager payload (from a ring slot or the unexpected
    /// queue) and acknowledges a synchronous send.
    fn complete_eager(&mut self, req: u32, env: Envelope, data: &[u8], ack: Option<u32>, from: usize) {
        self.stats.received.add(self.route[from], data.len());
        // One look-up for status, copy and completion (this runs once per small message).
        let r = self.reqs.get_mut(req).expect("completion of an unknown receive request");
        let Op::Recv { buf, .. } = &mut r.op else { unreachable!("a match for a request that is not a receive") };
        let cap = buf.capacity();
        let n = data.len().min(cap);
        buf.put(0, &data[..n]);
        buf.finish(n);
        let error = receive_error(buf, data.len());
        r.status = Status { source: env.src, tag: env.tag, bytes: n, cancelled: false, error };
        r.complete = true;
        if r.freed {
            self.reqs.discard(req);
        }
        if let Some(sreq) = ack {
            self.control(from, Out::Ack { sreq });
        }
    }

    /// Sends a control packet, or acts on it directly when it is for this rank.
    /// Ends the exposure of send `sreq`'s data to `peer` for an RDMA read, if it had one.
    fn withdraw_exposure(&mut self, peer: usize, sreq: u32) {
        if self.route[peer] == Route::Net {
            self.net.as_mut().expect("a network route").withdraw(u64::from(sreq));
        }
    }

    fn control(&mut self, to: usize, out: Out) {
        if to == self.me {
            match out {
                Out::Ack { sreq } | Out::Fin { sreq } => self.complete_send(sreq),
                _ => unreachable!("only acknowledgements go to oneself"),
            }
        } else {
            self.push_out(to, out);
        }
    }

    fn push_out(&mut self, dst: usize, out: Out) {
        if self.outq[dst].is_empty() {
            self.pending_peers += 1;
        }
        self.outq[dst].push_back(out);
        self.flush_peer(dst);
    }

    /// Writes queued work for `dst` into its route (ring slots or network buffers) while
    /// there is room.
    fn flush_peer(&mut self, dst: usize) -> bool {
        let mut did = false;
        let route = self.route[dst];
        while let Some(out) = self.outq[dst].front_mut() {
            let mut seg = transport::channel(route, &mut self.shm, &mut self.net);
            if !seg.can_send(dst) {
                break;
            }
            did = true;
            let mut done = true;
            match *out {
                Out::Eager { req } => {
                    let r = self.reqs.get(req).unwrap();
                    let Op::Send { env, buf, mode, .. } = &r.op else { unreachable!() };
                    let sync = *mode == SendMode::Sync;
                    let len = buf.len();
                    if sync {
                        // The acknowledgement needs the request id: full header.
                        let pk = Packet {
                            kind: kind::EAGER_SYNC,
                            context: env.ctx,
                            src: env.src,
                            tag: env.tag,
                            sreq: req,
                            len: len as u64,
                            ..Default::default()
                        };
                        seg.send(dst, &pk, len, |slot| buf.copy_to(0, &mut slot[..len]));
                    } else if buf.is_contiguous() {
                        seg.send_eager(dst, env.ctx, env.src, env.tag, buf.bytes());
                    } else {
                        // Packed straight into the slot.
                        seg.send_eager_with(dst, env.ctx, env.src, env.tag, len, |slot| buf.copy_to(0, slot));
                    }
                    self.outq[dst].pop_front();
                    if !sync {
                        self.complete_send(req);
                    }
                    continue;
                }
                Out::Rts { req } => {
                    self.rndv_out[dst] += 1;
                    let Op::Send { env, buf, .. } = &mut self.reqs.get_mut(req).unwrap().op else { unreachable!() };
                    // Send-gather: a dense non-contiguous send offers its blocks, in the slot
                    // or, when more than fit, as a list the receiver reads from this process
                    // (`addr`); a sparse one offers a stream, as does every send to a peer
                    // that cannot read this process's memory.
                    let offers = seg.reaches_sender_memory();
                    let plan = if offers { buf.block_list(&mut self.plans) } else { None };
                    let blocks: &[(usize, usize)] = plan.as_deref().unwrap_or(&[]);
                    let inline = blocks.len() <= seg.payload_capacity() / RTS_BLOCK_BYTES;
                    let mut pk = Packet {
                        kind: kind::RTS,
                        context: env.ctx,
                        src: env.src,
                        tag: env.tag,
                        sreq: req,
                        rreq: blocks.len() as u32,
                        len: buf.len() as u64,
                        addr: 0,
                    };
                    // To another node, the data waits for the receiver to read it: contiguous
                    // data per stripe; dense blocks as their span, named in the slot.
                    // SAFETY (both): the send's buffer stays valid and unchanged until the
                    // send completes, after the receiver's FIN (or CTS, which ends the
                    // exposure) came.
                    let exposed = match &mut seg {
                        transport::Channel::Net(net) if self.net_read && buf.is_contiguous() => {
                            unsafe { net.expose(dst, buf.addr() as usize, buf.len(), u64::from(req)) }
                                .map(|regions| (regions, Vec::new()))
                        }
                        transport::Channel::Net(net) if self.net_read => {
                            let room = transport::net::PAYLOAD_CAPACITY / RTS_BLOCK_BYTES - transport::net::MAX_RAILS;
                            match buf.block_list(&mut self.plans) {
                                Some(list) if list.len() <= room => {
                                    let lo = list.iter().map(|b| b.0).min().unwrap_or(0);
                                    let hi = list.iter().map(|b| b.0 + b.1).max().unwrap_or(0);
                                    // Not a span mostly of gaps (pinned for nothing, or not all
                                    // mapped: data of separate allocations).
                                    if hi - lo <= 2 * buf.len() {
                                        unsafe { net.expose_span(dst, lo, hi - lo, u64::from(req)) }.map(|regions| {
                                            (regions, list.iter().map(|&(a, l)| ((a - lo) as u64, l as u64)).collect())
                                        })
                                    } else {
                                        None
                                    }
                                }
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    if let Some((regions, blocks)) = exposed {
                        pk.rreq = if blocks.is_empty() { RTS_READ } else { RTS_READ_BLOCKS };
                        pk.addr = if blocks.is_empty() { 0 } else { regions.len() as u64 };
                        let n = regions.len() + blocks.len();
                        seg.send(dst, &pk, n * RTS_BLOCK_BYTES, |slot| {
                            write_pairs(slot, regions.into_iter().chain(blocks))
                        });
                    } else if !offers || blocks.is_empty() && !buf.is_contiguous() {
                        pk.rreq = RTS_STREAM;
                        seg.send(dst, &pk, 0, |_| {});
                    } else {
                        pk.addr = if blocks.is_empty() {
                            buf.addr()
                        } else if inline {
                            0
                        } else {
                            buf.offer_out_of_band(blocks)
                        };
                        let in_slot = if inline { blocks } else { &[] };
                        seg.send(dst, &pk, in_slot.len() * RTS_BLOCK_BYTES, |slot| {
                            write_pairs(slot, in_slot.iter().map(|&(addr, len)| (addr as u64, len as u64)))
                        });
                    }
                }
                Out::Ack { sreq } => seg.send(dst, &Packet { kind: kind::ACK, sreq, ..Default::default() }, 0, |_| {}),
                Out::Fin { sreq } => seg.send(dst, &Packet { kind: kind::FIN, sreq, ..Default::default() }, 0, |_| {}),
                Out::Cts { sreq, rreq, direct } => {
                    let (kind, len) = match direct {
                        Some(split) => (kind::CTS_DIRECT, split as u64),
                        None => (kind::CTS, 0),
                    };
                    seg.send(dst, &Packet { kind, sreq, rreq, len, ..Default::default() }, 0, |_| {})
                }
                Out::Direct { req, rreq, split } => {
                    let transport::Channel::Net(net) = &mut seg else {
                        unreachable!("direct transfers are for the network")
                    };
                    let Op::Send { buf, .. } = &mut self.reqs.get_mut(req).unwrap().op else { unreachable!() };
                    if !net.can_direct(buf.len(), Way::Out) {
                        break;
                    }
                    // Non-contiguous data goes from where it is when its blocks are large
                    // enough and each piece of the receiver's cut spans few enough for the
                    // provider (send-gather), else packed first (kept in the request until
                    // done).
                    let len = buf.len();
                    let plan = buf.block_list(&mut self.plans).filter(|b| net.fits(dst, b, len, split));
                    let one;
                    let blocks: &[(usize, usize)] = match &plan {
                        Some(blocks) => blocks,
                        None => {
                            one = [(buf.packed_bytes().as_ptr() as usize, len)];
                            &one
                        }
                    };
                    // SAFETY: the blocks (the user's memory, or the packed copy the request
                    // keeps) stay valid and unchanged until the token completes the send.
                    unsafe { net.send_direct(dst, rreq, blocks, len, split, DIRECT_SEND | u64::from(req)) };
                    self.rndv_in_flight += 1;
                }
                Out::Help(ref h) => {
                    let pk = Packet {
                        kind: kind::HELP,
                        context: h.generation,
                        sreq: h.sreq,
                        rreq: h.entry,
                        len: h.len as u64,
                        addr: h.addr,
                        tag: h.nblocks as i32,
                        ..Default::default()
                    };
                    seg.send(dst, &pk, 0, |_| {})
                }
                Out::Data { req, rreq, ref mut offset } => {
                    let Op::Send { buf, .. } = &self.reqs.get(req).unwrap().op else { unreachable!() };
                    let (at, total) = (*offset, buf.len());
                    let n = (total - at).min(seg.payload_capacity());
                    let pk = Packet { kind: kind::DATA, rreq, len: n as u64, addr: at as u64, ..Default::default() };
                    // Non-contiguous data is packed straight into the slot.
                    seg.send(dst, &pk, n, |slot| buf.copy_to(at, &mut slot[..n]));
                    *offset += n;
                    done = *offset >= total;
                    if done {
                        self.rndv_out[dst] = self.rndv_out[dst].saturating_sub(1);
                        self.outq[dst].pop_front();
                        self.complete_send(req);
                        continue;
                    }
                }
            }
            if done {
                self.outq[dst].pop_front();
            }
        }
        if did {
            // One doorbell check (and its fence) for the whole batch written above.
            transport::channel(route, &mut self.shm, &mut self.net).notify(dst);
            if self.outq[dst].is_empty() {
                self.pending_peers -= 1;
            }
        }
        did
    }

    /// Handles one message that arrived (from a ring or from oneself).
    fn on_message(&mut self, msg: Unexpected) {
        match self.take_posted(&msg.env) {
            Some(req) => self.deliver(req, msg),
            None => self.queue_unexpected(msg),
        }
    }

    /// Adds a message no receive takes yet to the unexpected queue, keeping its high-water
    /// mark (off the fast path: only messages that arrive before their receive).
    fn queue_unexpected(&mut self, msg: Unexpected) {
        self.unexpected.push_back(msg);
        self.stats.unexpected_high = self.stats.unexpected_high.max(self.unexpected.len() as u64);
    }

    /// The message counts for the tools interface, with the unexpected queue's length now.
    pub fn stats(&self) -> stats::Stats {
        let ring_packets = self.net.as_ref().map_or(0, Net::ring_packets);
        stats::Stats { unexpected_now: self.unexpected.len() as u64, ring_packets, ..self.stats }
    }

    /// Removes and returns the first posted receive that takes a message with `env`.
    #[inline]
    fn take_posted(&mut self, env: &Envelope) -> Option<u32> {
        // Messages mostly arrive in the order their receives were posted: try the first one.
        let (first, req) = *self.posted.front()?;
        if first.accepts(env) {
            self.posted.pop_front();
            return Some(req);
        }
        let pos = self.posted.iter().position(|(want, _)| want.accepts(env))?;
        self.posted.remove(pos).map(|(_, r)| r)
    }

    /// Handles the packet in the next slot from `src`; the slot is released by the caller.
    fn on_packet(&mut self, src: usize, pk: Packet, payload: &[u8]) {
        let env = Envelope { ctx: pk.context, src: pk.src, tag: pk.tag };
        match pk.kind {
            kind::EAGER | kind::EAGER_SYNC => {
                let ack = (pk.kind == kind::EAGER_SYNC).then_some(pk.sreq);
                // Deliver straight from the slot when the receive is already posted.
                if let Some(req) = self.take_posted(&env) {
                    self.complete_eager(req, env, payload, ack, src);
                } else {
                    let mut data = self.payload_pool.pop().unwrap_or_default();
                    data.clear();
                    data.extend_from_slice(payload);
                    self.queue_unexpected(Unexpected {
                        env,
                        from: src,
                        len: data.len(),
                        body: Body::Eager { data, ack },
                    });
                }
            }
            kind::PIECE_HEAD => self.first_piece(src, env, pk.addr as usize, payload),
            kind::PIECE => self.next_piece(src, pk.addr as usize, payload),
            kind::RTS => {
                let word = |b: &[u8]| u64::from_ne_bytes(b[..8].try_into().unwrap());
                let stream = pk.rreq == RTS_STREAM;
                let read = pk.rreq == RTS_READ || pk.rreq == RTS_READ_BLOCKS;
                let blocks = if stream {
                    Vec::new()
                } else if read {
                    payload.chunks_exact(RTS_BLOCK_BYTES).map(|b| (word(&b[..8]), word(&b[8..]))).collect()
                } else if pk.rreq as usize * RTS_BLOCK_BYTES <= payload.len() {
                    payload
                        .chunks_exact(RTS_BLOCK_BYTES)
                        .take(pk.rreq as usize)
                        .map(|b| (word(&b[..8]), word(&b[8..])))
                        .collect()
                } else {
                    self.read_block_list(src, pk.addr, pk.rreq as usize)
                };
                let body = Body::Rts { addr: pk.addr, sreq: pk.sreq, blocks, stream, read };
                self.on_message(Unexpected { env, from: src, len: pk.len as usize, body })
            }
            kind::ACK => self.complete_send(pk.sreq),
            kind::FIN => {
                self.rndv_out[src] = self.rndv_out[src].saturating_sub(1);
                self.withdraw_exposure(src, pk.sreq);
                self.complete_send(pk.sreq)
            }
            kind::HELP => self.help_split(src, &pk),
            kind::CTS => {
                // The receiver could not read what was exposed: it is streamed instead.
                self.withdraw_exposure(src, pk.sreq);
                self.push_out(src, Out::Data { req: pk.sreq, rreq: pk.rreq, offset: 0 })
            }
            kind::CTS_DIRECT => {
                let split = pk.len as usize;
                if !split.is_power_of_two() || split > transport::net::MAX_PIECES {
                    log::error!("a clear-to-send from rank {src} cuts the transfer {split} ways");
                    return;
                }
                self.push_out(src, Out::Direct { req: pk.sreq, rreq: pk.rreq, split })
            }
            kind::DATA => {
                let req = pk.rreq;
                let r = self.reqs.get_mut(req).expect("data for an unknown receive");
                let Op::Recv { buf, expected, arrived, .. } = &mut r.op else { unreachable!() };
                let off = pk.addr as usize;
                let cap = buf.capacity();
                if off < cap {
                    let n = payload.len().min(cap - off);
                    buf.put(off, &payload[..n]);
                }
                *arrived += payload.len();
                if *arrived >= *expected {
                    let n = (*expected).min(cap);
                    self.complete_recv(req, n);
                }
            }
            k => log::error!("unknown packet kind {k} from rank {src}"),
        }
    }

    /// The first piece of a message of `len` bytes from `src` in pieces: into the receive it
    /// matches, or into a copy queued once whole (a receive posted meanwhile matches it then).
    #[inline(never)]
    fn first_piece(&mut self, src: usize, env: Envelope, len: usize, payload: &[u8]) {
        let filled = payload.len();
        let assembly = match self.take_posted(&env) {
            Some(req) => {
                self.stats.received.add(self.route[src], len);
                let fits = self.set_matched_status(req, env, len);
                if let Op::Recv { buf, .. } = &mut self.reqs.get_mut(req).unwrap().op {
                    buf.put(0, &payload[..filled.min(fits)]);
                }
                Assembly::Matched { req, filled, len, fits }
            }
            None => {
                let mut data = self.payload_pool.pop().unwrap_or_default();
                data.clear();
                data.reserve(len);
                data.extend_from_slice(payload);
                let msg = Unexpected { env, from: src, len, body: Body::Eager { data, ack: None } };
                Assembly::Queued { msg, filled }
            }
        };
        self.assembly[src] = Some(assembly);
    }

    /// A later piece, at byte `at` of the message from `src`; the message is complete after
    /// its last piece.
    #[inline(never)]
    fn next_piece(&mut self, src: usize, at: usize, payload: &[u8]) {
        let Some(a) = self.assembly[src].as_mut() else {
            log::error!("a piece of a message from rank {src} without its first piece");
            return;
        };
        let done = match a {
            Assembly::Matched { req, filled, len, fits } => {
                if at < *fits
                    && let Op::Recv { buf, .. } = &mut self.reqs.get_mut(*req).unwrap().op
                {
                    buf.put(at, &payload[..payload.len().min(*fits - at)]);
                }
                *filled += payload.len();
                *filled >= *len
            }
            Assembly::Queued { msg, filled } => {
                if let Body::Eager { data, .. } = &mut msg.body {
                    data.extend_from_slice(payload);
                }
                *filled += payload.len();
                *filled >= msg.len
            }
        };
        if done {
            match self.assembly[src].take().unwrap() {
                Assembly::Matched { req, fits, .. } => self.complete_recv(req, fits),
                Assembly::Queued { msg, .. } => self.on_message(msg),
            }
        }
    }

    /// One pass over the rings and the queued work, then over the active collective
    /// schedules; returns whether anything happened.
    pub fn progress(&mut self) -> bool {
        let mut did = self.progress_p2p();
        if !self.pairs.is_empty() {
            did |= self.complete_pairs();
        }
        if !self.tasks.is_empty() {
            did |= self.advance_tasks();
        }
        if !self.parts_active.is_empty() {
            did |= self.advance_partitions();
        }
        if !self.splits.is_empty() {
            did |= self.advance_splits();
        }
        if self.scheds.is_empty() {
            return did;
        }
        crate::coll::sched::progress(self) | did
    }

    /// Starts MPI_Isendrecv's request over a started receive and send.
    pub fn pair(&mut self, recv: u32, send: u32, comm: i32) -> u32 {
        let req = self.reqs.insert(Request::started(Op::Pair { recv, send }, comm));
        self.pairs.push(req);
        self.complete_pairs();
        req
    }

    /// Starts a request run by `task`; it has run what it could when this returns.
    pub fn start_task(&mut self, task: Box<dyn request::Task>, comm: i32) -> u32 {
        let req = self.reqs.insert(Request::started(Op::Task(task), comm));
        if !self.advance_task(req) {
            self.tasks.push(req);
        }
        req
    }

    /// Ends task request `req` (a long-lived library agent) whether or not it finished, and
    /// frees the request. Not for use from inside a task's own advance.
    pub fn end_task(&mut self, req: u32) {
        self.tasks.retain(|&id| id != req);
        if let Some(Request { op: Op::Task(mut task), .. }) = self.reqs.remove(req) {
            task.end(self);
        }
    }

    /// The status and bytes of the completed receive `req` into engine-owned memory
    /// (`RecvBuf::owned`), freeing the request.
    pub fn take_owned_recv(&mut self, req: u32) -> (Status, Vec<u8>) {
        match self.reqs.remove(req) {
            Some(Request { op: Op::Recv { buf, .. }, status, complete: true, .. }) => (status, buf.into_owned()),
            _ => unreachable!("take_owned_recv of a request that is not a completed receive"),
        }
    }

    /// Advances every active task once; returns whether any finished.
    fn advance_tasks(&mut self) -> bool {
        // Taking the list keeps nested progress calls (from a task's own receives) out.
        let ids = std::mem::take(&mut self.tasks);
        let mut still = Vec::with_capacity(ids.len());
        let mut did = false;
        for id in ids {
            if self.advance_task(id) {
                did = true;
            } else {
                still.push(id);
            }
        }
        let added = std::mem::replace(&mut self.tasks, still);
        self.tasks.extend(added);
        did
    }

    /// Whether a task that another thread finishes is running (`Task::external`).
    fn external_task_running(&self) -> bool {
        self.tasks.iter().any(|&id| matches!(self.reqs.get(id), Some(Request { op: Op::Task(t), .. }) if t.external()))
    }

    /// Advances task request `id`; returns whether it is finished.
    fn advance_task(&mut self, id: u32) -> bool {
        let Some(r) = self.reqs.get_mut(id) else { return true };
        let Op::Task(mut task) = std::mem::replace(&mut r.op, Op::Nothing) else { return true };
        let error = match task.advance(self) {
            Ok(false) => {
                self.reqs.get_mut(id).expect("task request vanished").op = Op::Task(task);
                return false;
            }
            Ok(true) => MPI_SUCCESS,
            Err(e) => {
                log::debug!("library task failed: {}", e.msg);
                e.code
            }
        };
        let r = self.reqs.get_mut(id).expect("task request vanished");
        r.status = Status::empty();
        r.status.bytes = task.bytes();
        r.status.error = error;
        r.complete = true;
        if r.freed {
            self.reqs.remove(id);
        }
        true
    }

    /// Completes the pairs whose receive and send are both done.
    fn complete_pairs(&mut self) -> bool {
        let mut did = false;
        let mut i = 0;
        while i < self.pairs.len() {
            let req = self.pairs[i];
            let Some(Request { op: Op::Pair { recv, send }, .. }) = self.reqs.get(req) else {
                unreachable!("a pair that is not a pair")
            };
            let (recv, send) = (*recv, *send);
            if !(self.is_complete(recv) && self.is_complete(send)) {
                i += 1;
                continue;
            }
            self.pairs.swap_remove(i);
            self.collect(send);
            let status = self.collect(recv);
            let r = self.reqs.get_mut(req).unwrap();
            r.status = status;
            r.op = Op::Nothing;
            r.complete = true;
            if r.freed {
                self.reqs.remove(req);
            }
            did = true;
        }
        did
    }

    fn progress_p2p(&mut self) -> bool {
        let mut did = false;
        if self.net.is_some() {
            did = self.progress_net();
        }
        for i in 0..self.local_peers.len() {
            let src = self.local_peers[i];
            let mut taken = 0usize;
            loop {
                let seg = self.shm.as_mut().unwrap();
                let Some(inc) = seg.peek(src) else { break };
                if taken > 0 && inc.payload.len() <= STREAM_PREFETCH_MAX {
                    // A second message in one pass: a stream. Not for the first, which is
                    // also a ping-pong's, whose latency would pay for the prefetches. The
                    // second asks for the next slots, each later one for one more.
                    let first = if taken == 1 { 1 } else { STREAM_PREFETCH_SLOTS };
                    seg.prefetch_ahead(src, first..=STREAM_PREFETCH_SLOTS);
                }
                let pk = inc.packet;
                // Copy-free hand-off: the slot stays ours until release below. The payload
                // slice borrows the segment, which on_packet never touches for this ring.
                let payload: *const [u8] = inc.payload;
                // SAFETY: the slot is owned by this rank until `release(src)`; on_packet only
                // writes to other slots (towards peers), never to the ring from `src`.
                self.on_packet(src, pk, unsafe { &*payload });
                self.shm.as_mut().unwrap().release(src);
                taken += 1;
            }
            if taken > 0 {
                // The sender may sleep waiting for these credits: one doorbell check for all.
                self.shm.as_ref().unwrap().notify(src);
                did = true;
            }
        }
        if self.pending_peers > 0 {
            // Every process of the table: the job's ranks and connected processes of others.
            for dst in 0..self.outq.len() {
                if !self.outq[dst].is_empty() {
                    did |= self.flush_peer(dst);
                }
            }
        }
        did
    }

    /// Handles the packets the network delivered, in order.
    #[inline(never)]
    fn progress_net(&mut self) -> bool {
        let mut did = self.net.as_mut().unwrap().read_completions();
        while let Some((src, mut pk, payload)) = self.net.as_mut().unwrap().front() {
            let payload: *const [u8] = payload;
            // On the group context sources are table indices, and a process of another job
            // cannot know the one this process gave it: its packets get it here.
            if src >= self.nranks && pk.context == GROUP_CTX {
                pk.src = src as i32;
            }
            // SAFETY: the receive buffer (or the transport's copy of an early packet) stays
            // until `release_front`; on_packet sends only from send buffers and never reposts
            // receive buffers or drops copies.
            self.on_packet(src, pk, unsafe { &*payload });
            self.net.as_mut().unwrap().release_front();
            did = true;
        }
        while let Some(token) = self.net.as_mut().unwrap().take_finished() {
            self.rndv_in_flight -= 1;
            did = true;
            if token & window_rdma::WINDOW_ACCESS != 0 {
                self.window_accesses_done.insert(token);
                continue;
            }
            let req = token as u32;
            if token & DIRECT_SEND != 0 {
                if let Some(Request { op: Op::Send { dst, .. }, .. }) = self.reqs.get(req) {
                    let dst = *dst;
                    self.rndv_out[dst] = self.rndv_out[dst].saturating_sub(1);
                }
                self.complete_send(req);
            } else {
                let n = self.reqs.get(req).expect("a direct transfer for an unknown receive").status.bytes;
                self.complete_recv(req, n);
                if token & DIRECT_READ != 0 {
                    let (from, sreq) = self.reads.remove(&req).expect("an RDMA read in flight");
                    self.control(from, Out::Fin { sreq });
                }
            }
            did = true;
        }
        did
    }

    /// Drives progress until `done` holds: spins, then yields, then sleeps on the doorbell.
    ///
    /// The caller is inside `runtime::with` for the whole wait. Blocking MPI calls wait
    /// through `runtime::blocking` instead, which comes here only below
    /// MPI_THREAD_MULTIPLE; the few direct callers (split and create over
    /// intercommunicators, topology constructors, finalize) keep the library to
    /// themselves while they wait, at every level.
    pub fn wait_until(&mut self, mut done: impl FnMut(&Engine) -> bool) {
        let mut idle_since: Option<Instant> = None;
        let mut polls = 0u32;
        loop {
            if done(self) {
                return;
            }
            if self.progress() {
                idle_since = None;
                continue;
            }
            polls = polls.wrapping_add(1);
            if polls & self.wait.polls_per_check_mask() != 0 {
                std::hint::spin_loop();
                continue;
            }
            let idle = idle_since.get_or_insert_with(Instant::now).elapsed();
            if idle < self.wait.spin {
                if self.cpu_shared_with_rank() {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            } else if idle < self.wait.spin_then_yield {
                std::thread::yield_now();
            } else if let Some(net) = &mut self.net {
                // Remote peers ring no doorbell: alone on its node a rank sleeps on the
                // network's descriptor; with company it naps on the doorbell and looks again.
                match &self.shm {
                    Some(seg) => seg.sleep(NET_NAP, || !seg.any_incoming()),
                    None => net.wait(NET_SLEEP),
                }
            } else if let Some(seg) = &self.shm {
                // A shared transfer's sender may finish its chunks at any moment: stay awake.
                let blocked_out = !self.splits.is_empty()
                    || self.pending_peers > 0 && (0..self.nranks).any(|d| !self.outq[d].is_empty() && seg.can_send(d));
                // `done` again after announcing the sleep: peers that set what it waits for in
                // shared memory (collective flags) ring the doorbell afterwards.
                let me: &Engine = self;
                // A task another thread finishes rings no doorbell: look again soon.
                let nap = if self.external_task_running() { EXTERNAL_TASK_NAP } else { Duration::from_millis(50) };
                seg.sleep(nap, || !blocked_out && !seg.any_incoming() && !done(me));
            } else if self.external_task_running() {
                std::thread::sleep(EXTERNAL_TASK_NAP);
            } else {
                // Alone: nothing can arrive; a wait here waits for nothing (a user error),
                // so sleep instead of spinning.
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// For a waiter that would spin: whether it should yield instead, because another rank of
    /// the job was last seen on its CPU (the scheduler put both on one core) and runs only when
    /// this one gives the CPU up; spinning would waste the budget on every hand-off. Now and
    /// then (at most once per `MOVE_OFF_INTERVAL`) it also moves this thread to a CPU where no
    /// rank of the job runs. Only when ranks have a core each: when they outnumber cores, every
    /// CPU is shared and there is nowhere to move (they do not spin then anyway).
    pub fn cpu_shared_with_rank(&mut self) -> bool {
        if self.wait.hand_off {
            return true;
        }
        let Some(seg) = &self.shm else { return false };
        if self.wait.oversubscribed || !seg.track_cpu() {
            return false;
        }
        let now = Instant::now();
        if self.last_move_off.is_none_or(|t| now.duration_since(t) >= MOVE_OFF_INTERVAL) {
            self.last_move_off = Some(now);
            seg.move_off_shared_cpu();
        }
        true
    }

    /// At MPI_THREAD_MULTIPLE, for a thread about to wait outside the library lock: announces
    /// its sleep on this rank's doorbell when nothing is there to progress (as `wait_until`
    /// checks before sleeping). `None`: no doorbell (a job of one) or not idle.
    pub fn announce_sleep(&self) -> Option<shm::SleepTicket> {
        if self.net.is_some() {
            // Remote peers ring no doorbell; the caller naps instead.
            return None;
        }
        let seg = self.shm.as_ref()?;
        let blocked_out = !self.splits.is_empty()
            || self.pending_peers > 0 && (0..self.nranks).any(|d| !self.outq[d].is_empty() && seg.can_send(d));
        seg.announce_sleep(|| !blocked_out && !seg.any_incoming())
    }

    /// Wakes threads of this rank sleeping on its doorbell (see `announce_sleep`).
    pub fn wake_own_sleepers(&self) {
        if let Some(seg) = &self.shm {
            seg.wake_own();
        }
    }

    pub fn is_complete(&self, req: u32) -> bool {
        self.reqs.get(req).is_some_and(|r| r.complete)
    }

    /// Whether waiting on `req` would return now (complete, or an inactive persistent request).
    pub fn is_done(&self, req: u32) -> bool {
        self.reqs.get(req).is_none_or(|r| r.complete || !r.active)
    }

    /// Collects a finished request: frees it unless persistent (then it becomes inactive).
    /// Returns its status; an inactive persistent request gives the empty status.
    pub fn collect(&mut self, req: u32) -> Status {
        self.collect_with_comm(req).0
    }

    /// As `collect`, also giving the request's communicator (whose handler its error goes
    /// to).
    #[inline]
    pub fn collect_with_comm(&mut self, req: u32) -> (Status, i32) {
        let r = self.reqs.get_mut(req).expect("collect of an unknown request");
        let comm = r.comm;
        if !r.active {
            return (Status::empty(), comm);
        }
        debug_assert!(r.complete);
        let status = r.status;
        if r.persistent.is_some() {
            r.active = false;
            r.op = Op::Nothing;
        } else {
            self.reqs.discard(req);
        }
        (status, comm)
    }

    /// Starts an inactive persistent request again.
    pub fn start_persistent(&mut self, req: u32) -> Result<(), &'static str> {
        let r = self.reqs.get_mut(req).ok_or("invalid request")?;
        let Some(p) = &r.persistent else { return Err("request is not persistent") };
        if r.active {
            return Err("persistent request is already active");
        }
        r.op = (p.start)();
        r.complete = false;
        r.active = true;
        r.status = Status::default();
        match r.op {
            Op::Send { .. } => self.start_send(req),
            Op::Recv { .. } => self.start_recv(req),
            Op::Coll(_) => crate::coll::sched::kick(self, req),
            Op::Partitioned => self.start_partitioned(req),
            _ => {
                // MPI_PROC_NULL peer: nothing to move.
                let r = self.reqs.get_mut(req).unwrap();
                r.complete = true;
                r.status = Status::proc_null();
            }
        }
        Ok(())
    }

    /// MPI_Request_free: drops a finished or inactive request now, an active one when it
    /// completes.
    pub fn free_request(&mut self, req: u32) {
        let Some(r) = self.reqs.get_mut(req) else { return };
        if r.complete || !r.active {
            self.reqs.remove(req);
            if self.parts.contains_key(&req) {
                self.drop_partitioned(req);
            }
        } else {
            r.freed = true;
        }
    }

    /// Whether everything this rank sent has left its queues (used by finalize).
    pub fn quiet(&self) -> bool {
        self.pending_peers == 0 && self.rndv_in_flight == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: u32 = 0;

    fn send(e: &mut Engine, tag: i32, data: &[u8]) -> u32 {
        e.isend(0, Envelope { ctx: CTX, src: 0, tag }, SendBuf::owned(data.to_vec()), SendMode::Standard, 0)
    }

    fn recv(e: &mut Engine, src: i32, tag: i32, len: usize) -> u32 {
        e.irecv(Envelope { ctx: CTX, src, tag }, RecvBuf::owned(len), 0)
    }

    fn received(e: &mut Engine, req: u32) -> (Status, Vec<u8>) {
        assert!(e.is_complete(req));
        let r = e.reqs.remove(req).unwrap();
        match r.op {
            Op::Recv { buf, .. } => (r.status, buf.into_owned()),
            _ => panic!("not a receive"),
        }
    }

    #[test]
    fn wildcards_match_in_arrival_order() {
        let mut e = Engine::new(0, 1, None);
        send(&mut e, 5, b"first");
        send(&mut e, 6, b"second");
        let a = recv(&mut e, MPI_ANY_SOURCE, MPI_ANY_TAG, 16);
        let (s, d) = received(&mut e, a);
        assert_eq!((s.tag, s.bytes, &d[..5]), (5, 5, &b"first"[..]));
        let b = recv(&mut e, 0, MPI_ANY_TAG, 16);
        assert_eq!(received(&mut e, b).0.tag, 6);
    }

    #[test]
    fn posted_receives_match_by_tag_not_order() {
        let mut e = Engine::new(0, 1, None);
        let want7 = recv(&mut e, 0, 7, 8);
        let want8 = recv(&mut e, 0, 8, 8);
        send(&mut e, 8, b"eight");
        assert!(!e.is_complete(want7));
        assert_eq!(received(&mut e, want8).0.tag, 8);
        send(&mut e, 7, b"seven");
        assert_eq!(&received(&mut e, want7).1[..5], b"seven");
    }

    #[test]
    fn other_contexts_do_not_match() {
        let mut e = Engine::new(0, 1, None);
        e.isend(0, Envelope { ctx: CTX + 2, src: 0, tag: 1 }, SendBuf::owned(vec![1]), SendMode::Standard, 0);
        let r = recv(&mut e, MPI_ANY_SOURCE, MPI_ANY_TAG, 1);
        assert!(!e.is_complete(r));
        assert!(e.iprobe(Envelope { ctx: CTX + 2, src: MPI_ANY_SOURCE, tag: 1 }).is_some());
    }

    #[test]
    fn truncation_is_reported_and_sync_sends_wait_for_the_match() {
        let mut e = Engine::new(0, 1, None);
        let s = e.isend(0, Envelope { ctx: CTX, src: 0, tag: 3 }, SendBuf::owned(vec![9; 10]), SendMode::Sync, 0);
        assert!(!e.is_complete(s), "a synchronous send completes only when matched");
        let r = recv(&mut e, 0, 3, 4);
        assert!(e.is_complete(s));
        let (st, d) = received(&mut e, r);
        assert_eq!((st.error, st.bytes, d), (MPI_ERR_TRUNCATE, 4, vec![9; 4]));
    }

    #[test]
    fn cancelled_receive_is_complete_and_marked() {
        let mut e = Engine::new(0, 1, None);
        let r = recv(&mut e, 0, 1, 4);
        assert!(e.cancel_recv(r));
        assert!(e.reqs.get(r).unwrap().status.cancelled);
        send(&mut e, 1, b"late");
        assert!(e.iprobe(Envelope { ctx: CTX, src: 0, tag: 1 }).is_some(), "the message stays queued");
    }
}

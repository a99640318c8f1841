//! Shared-memory transport: one job-wide segment holding, for every ordered pair of ranks, a
//! ring of fixed-size slots (the "RDMA eager channel" idea: persistent per-peer buffers, the
//! receiver polls a flag, the flag going back to empty is the credit).
//!
//! With many ranks on a node (`Geometry::for_ranks`) the rings' slots shrink to two cache
//! lines, so the per-pair memory stays small, and a payload that does not fit a slot goes in a
//! cell: each rank owns a few cells, large enough for any eager message, which it lends to
//! whichever receiver it sends to; the slot names the cell, and the receiver gives the cell
//! back when it releases the slot. The segment then grows with ranks² × a few hundred bytes
//! plus ranks × the cells, instead of ranks² × 16 KiB slots.
//!
//! Slot layout: the first word is the full/empty flag. Eager messages (the common case) use a
//! compact 16-byte header: the flag word itself carries the payload length, then context,
//! source and tag, so a message of up to 48 bytes is one cache line, written and read in one
//! coherence transfer. Everything else uses the full 48-byte header (`Packet`). The flag is
//! the last thing the sender writes (Release) and the first the receiver reads (Acquire).
//! Indices are private: the
//! sender knows which slot it fills next, the receiver which it reads next; only the flags are
//! shared. Each rank also has a doorbell (a futex word) that peers ring when it sleeps.

use crate::config;
use crate::error::{MpiError, MpiResult};
use std::cell::Cell;
use std::io;
use std::ptr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
use std::time::Duration;

pub const CACHE_LINE: usize = 64;
/// Bytes of a slot taken by its full header.
pub const SLOT_HEADER: usize = 48;
/// Ranks on a node from which the rings' slots are small and payloads go in cells (below, a
/// ring of 16 KiB slots per pair: 134 MiB at 32 ranks; with cells, 10 MiB).
pub const CELLS_FROM_RANKS: usize = 32;
/// Cells per rank by default, when it has cells: how many messages that do not fit a slot it
/// can have in flight to all receivers together.
pub const CELLS_DEFAULT: usize = 16;
/// Slot size of rings whose payloads go in cells: the compact header and 112 payload bytes,
/// or a full header (every control packet) and 80.
const CELL_RING_SLOT: usize = 2 * CACHE_LINE;
/// Slots per ring by default when payloads go in cells (a slot costs 128 bytes per pair).
const CELL_RING_SLOTS: usize = 8;
/// Bytes of a cell before its payload: the busy word, on a line of its own.
const CELL_HEADER: usize = CACHE_LINE;
/// Largest eager message by default. Chosen by measurement (2 ranks, 2
/// cores, docs/performance.md): through the ring a message costs two copies one after the
/// other (ping-pong latency of 16 KiB: 3.2 us eager, 1.7 us by a single-copy read), but the
/// copies of consecutive messages overlap on the two cores (windowed bandwidth of 8 KiB: 9.2
/// GB/s eager, 7.2 GB/s single-copy). 8 KiB messages stay eager, 16 KiB ones go single-copy.
/// Slots stay 16 KiB (`SLOT_PAYLOAD_MIN`): a message filling its slot exactly was slower (1.9
/// us for 8 KiB with 8 KiB slots, 1.75 us with larger ones; not understood).
pub const EAGER_LIMIT_DEFAULT: usize = 12288;
/// Smallest slot payload; slots are larger only when the eager limit is (also the streaming
/// chunk of rendezvous without single-copy).
pub const SLOT_PAYLOAD_MIN: usize = 16384;
/// Bytes of a slot taken by the compact header of an eager message.
pub const COMPACT_HEADER: usize = 16;
/// The `Packet::kind` a compact slot decodes to (the engine's plain eager kind).
pub const EAGER_KIND: u32 = 1;
/// Flag word bits: bit 0 full; bit 1 compact eager; bit 2 the payload is in the sender's
/// cell `SlotHeader::cell`; bits 8.. the compact payload length.
const FLAG_FULL: u32 = 1;
const FLAG_COMPACT: u32 = 2;
const FLAG_CELL: u32 = 4;
const COMPACT_LEN_SHIFT: u32 = 8;
/// Largest payload a compact header can describe.
const COMPACT_MAX_LEN: usize = (u32::MAX >> COMPACT_LEN_SHIFT) as usize;
const SEGMENT_MAGIC: u64 = 0x6f78_6d70_6973_686d; // "oxmpishm"
const SEG_HEADER_BYTES: usize = 4096;
/// Per-CPU counts of the job's ranks last seen running there (`Segment::track_cpu`): an array
/// of u32 in the segment header's page after `SegHeader`. Ranks on CPUs beyond it are not
/// counted (they wait as if alone on their CPU).
const CPU_TABLE_OFFSET: usize = CACHE_LINE;
const CPU_TABLE_LEN: usize = (SEG_HEADER_BYTES - CPU_TABLE_OFFSET) / 4;
const RANK_INFO_BYTES: usize = 2 * CACHE_LINE;
/// Words of a rank's CPU mask in its `RankInfo` (the rest of its first line).
const RANK_CPU_WORDS: usize = 5;
const RANK_CPU_BITS: usize = RANK_CPU_WORDS * 64;
/// Entries per ordered pair of ranks on the board of shared rendezvous copies (`BoardEntry`):
/// how many large transfers from one sender a receiver can split with it at once.
pub const BOARD_ENTRIES: usize = 8;

/// The header of a slot; written by the sender before it publishes the flag.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Packet {
    pub kind: u32,
    pub context: u32,
    pub src: i32,
    pub tag: i32,
    pub sreq: u32,
    pub rreq: u32,
    /// Payload bytes in this slot, or the whole message's length for a rendezvous request.
    pub len: u64,
    /// The sender's buffer address (rendezvous) or the offset of a data chunk.
    pub addr: u64,
}

/// Slot header as laid out in shared memory: the flag, then the packet.
#[repr(C)]
struct SlotHeader {
    full: AtomicU32,
    /// With `FLAG_CELL`: the index of the sender's cell holding the payload.
    cell: u32,
    packet: Packet,
}
const _: () = assert!(std::mem::size_of::<SlotHeader>() == SLOT_HEADER);

/// Compact header of an eager message, as laid out in shared memory; `flag` is the same word
/// as `SlotHeader::full`.
#[repr(C)]
struct CompactHeader {
    flag: AtomicU32,
    context: u32,
    src: i32,
    tag: i32,
}
const _: () = assert!(std::mem::size_of::<CompactHeader>() == COMPACT_HEADER);

/// One large rendezvous transfer copied by both ranks at once: the message is cut into chunks;
/// the receiver reads chunks from the front (process_vm_readv) while the sender writes chunks
/// from the back (process_vm_writev), each taking the next one with a compare-and-swap on
/// `claim`, until they meet. Entries belong to the receiver (the board of pair (sender,
/// receiver)); the generation tells a late helper that the entry moved on to another transfer.
#[repr(C)]
struct BoardEntry {
    /// Generation (bits 32..64), next chunk from the front (16..32), end of the unclaimed
    /// chunks (0..16).
    claim: AtomicU64,
    /// Chunks the sender finished writing.
    done: AtomicU32,
    /// 1 + a chunk the sender claimed but could not write (the receiver copies it); 0 if none.
    redo: AtomicU32,
    _pad: [u8; CACHE_LINE - 16],
}
const _: () = assert!(std::mem::size_of::<BoardEntry>() == CACHE_LINE);

/// Most chunks one shared transfer is cut into (the width of the claim fields).
pub const SPLIT_MAX_CHUNKS: usize = u16::MAX as usize;

fn claim_word(generation: u32, front: usize, back: usize) -> u64 {
    ((generation as u64) << 32) | ((front as u64) << 16) | back as u64
}

fn claim_fields(w: u64) -> (u32, usize, usize) {
    ((w >> 32) as u32, ((w >> 16) & 0xffff) as usize, (w & 0xffff) as usize)
}

/// Per-rank record in the segment: identity for single-copy reads, and the doorbell.
#[repr(C)]
struct RankInfo {
    pid: AtomicU32,
    /// 1 when this rank registered for global expedited membarriers (see `notify`).
    light: AtomicU32,
    probe_addr: AtomicU64,
    /// This rank's CPU affinity (bit c of word c / 64: CPU c; CPUs from `RANK_CPU_BITS` on
    /// are left out) and, when the machine's CPU quota allows fewer CPUs than that mask
    /// holds, that number (else 0); read by every rank in `verify` (`node_cores`).
    cpus: [AtomicU64; RANK_CPU_WORDS],
    cpu_limit: AtomicU32,
    /// 1 when this rank runs at MPI_THREAD_MULTIPLE from the start (`publish_thread_multiple`).
    thread_multiple: AtomicU32,
    doorbell: AtomicU32,
    sleeping: AtomicU32,
    _line1: [u8; CACHE_LINE - 8],
}
const _: () = assert!(std::mem::size_of::<RankInfo>() == RANK_INFO_BYTES);
const _: () = assert!(std::mem::size_of::<SegHeader>() <= CPU_TABLE_OFFSET);

#[repr(C)]
struct SegHeader {
    magic: AtomicU64,
    nranks: u64,
    nslots: u64,
    slot_size: u64,
    ncells: u64,
    cell_size: u64,
}

/// Sizes of the segment, fixed at setup and identical on every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub nranks: usize,
    pub nslots: usize,
    pub slot_size: usize,
    /// Cells per rank; 0: every payload goes in the ring slots.
    pub ncells: usize,
    /// Bytes of a cell, header included (0 without cells).
    pub cell_size: usize,
}

impl Geometry {
    /// Default geometry. Up to `CELLS_FROM_RANKS` ranks (or with `OXMPI_SHM_CELLS=0`): slots
    /// of SLOT_PAYLOAD_MIN payload bytes (more when the eager limit is larger), fewer per ring
    /// as ranks grow. From there on: small slots and `CELLS_DEFAULT` cells per rank of that
    /// payload size, so the segment grows with ranks² × 1 KiB (at 256 ranks: 64 MiB of rings,
    /// 64 MiB of cells, where 16 KiB slots would take 4 GiB).
    pub fn for_ranks(nranks: usize) -> Geometry {
        let payload = config::usize_var(config::EAGER_LIMIT).unwrap_or(EAGER_LIMIT_DEFAULT).max(SLOT_PAYLOAD_MIN);
        let ncells =
            config::usize_var(config::SHM_CELLS).unwrap_or(if nranks >= CELLS_FROM_RANKS { CELLS_DEFAULT } else { 0 });
        if ncells > 0 {
            return Geometry {
                nranks,
                nslots: config::usize_var(config::SHM_SLOTS).unwrap_or(CELL_RING_SLOTS),
                slot_size: CELL_RING_SLOT,
                ncells,
                cell_size: (CELL_HEADER + payload).div_ceil(CACHE_LINE) * CACHE_LINE,
            };
        }
        // 64 slots at np 2 and 4: a window of 64 messages in flight fits the ring (windowed
        // bandwidth of 1-4 KiB messages 1.4-1.5x that of 16 slots); 32 at np 8: with 8 ranks on
        // 2 cores the members of a small gather or scatter run that many calls ahead of a
        // descheduled root before they block (gather of 1 B at np 8: 9-73 us per call with 16
        // slots, about 1 us with 32 or 64; docs/performance.md).
        let nslots = config::usize_var(config::SHM_SLOTS).unwrap_or((256 / nranks.max(1)).clamp(4, 64));
        let slot_size = (SLOT_HEADER + payload).div_ceil(CACHE_LINE) * CACHE_LINE;
        Geometry { nranks, nslots, slot_size, ncells: 0, cell_size: 0 }
    }

    /// Payload bytes one packet carries at most: a slot's, or a cell's.
    pub fn payload_capacity(&self) -> usize {
        if self.ncells > 0 { self.cell_size - CELL_HEADER } else { self.slot_size - SLOT_HEADER }
    }

    /// Payload bytes that fit a slot behind the full header (more go in a cell).
    fn slot_capacity(&self) -> usize {
        self.slot_size - SLOT_HEADER
    }

    fn ring_bytes(&self) -> usize {
        self.nslots * self.slot_size
    }

    fn rings_offset(&self) -> usize {
        SEG_HEADER_BYTES + (self.nranks * RANK_INFO_BYTES).div_ceil(4096) * 4096
    }

    fn board_offset(&self) -> usize {
        self.rings_offset() + self.nranks * self.nranks * self.ring_bytes()
    }

    fn cells_offset(&self) -> usize {
        self.board_offset() + self.nranks * self.nranks * BOARD_ENTRIES * CACHE_LINE
    }

    /// Bytes of the cells of one rank.
    fn cells_bytes(&self) -> usize {
        self.ncells * self.cell_size
    }

    pub fn total_bytes(&self) -> usize {
        self.cells_offset() + self.nranks * self.cells_bytes()
    }
}

/// One rank's view of the mapped segment.
pub struct Segment {
    map: memmap2::MmapRaw,
    geo: Geometry,
    /// This rank's index among the node's ranks (the segment's numbering).
    me: usize,
    /// Per world rank up to the node's highest: its index on this node (`OFF_NODE` if none).
    /// The public methods take world ranks; the segment's tables are numbered by node index.
    local_of: Vec<u32>,
    /// World ranks of the node's other ranks.
    peers: Vec<usize>,
    /// Per world rank up to the node's highest, the rings to and from it (one entry: a send
    /// touches both cursors); indexed by world rank so the message path needs no translation.
    /// Entries of ranks on other nodes are never used (their route is the network).
    rings: Vec<PeerRings>,
    /// Every rank registered for membarrier and the ranks do not outnumber the node's CPUs:
    /// notifiers need no fence (see `notify`). Decided in `verify`, the same on every rank.
    light_fences: bool,
    /// This rank's sleeps issue the heavy barrier: it registered, and until `verify` it
    /// cannot know whether peers that passed theirs rely on it; afterwards only with
    /// `light_fences`.
    registered: bool,
    /// The CPU this rank is counted on in the CPU table (`track_cpu`), if any.
    counted_cpu: Cell<Option<usize>>,
    /// CPUs the ranks of the node can run on together (`verify`; the same on every rank).
    node_cores: usize,
    /// Some rank started at MPI_THREAD_MULTIPLE (`verify`; the same on every rank).
    any_thread_multiple: bool,
    /// Largest payload sent with the compact header (more takes the full one).
    compact_max: usize,
    /// This rank's cells (null without cells) and the one it looks at first for a free one
    /// (cells come back roughly in the order they went).
    own_cells: *mut u8,
    next_cell: usize,
}

/// `Segment::local_of` of a rank on another node.
const OFF_NODE: u32 = u32::MAX;

/// A position in one ring: its first slot's address and the index of the current slot, so
/// finding a slot is one multiply-add (the ring's offset in the segment is computed once).
#[derive(Clone, Copy)]
struct Cursor {
    base: *mut u8,
    next: usize,
}

/// This rank's cursors in the two rings it shares with one peer.
struct PeerRings {
    /// Our ring to the peer, at the next slot we fill.
    send: Cursor,
    /// The peer's ring to us, at the next slot we read.
    recv: Cursor,
    /// `recv.next` when we last sent to the peer (`answered`).
    read_at_send: usize,
    /// The peer's cells (null without cells), which its slots to us may name.
    cells: *mut u8,
}

// SAFETY: the segment is only touched through atomics (flags, doorbells) and through slot
// bytes whose ownership the flags hand over; moving the mapping between threads is fine.
unsafe impl Send for Segment {}

/// A full slot handed to the receiver; it stays owned until `release`.
pub struct Incoming<'a> {
    pub packet: Packet,
    pub payload: &'a [u8],
}

fn shm_error(what: &str, e: io::Error) -> MpiError {
    MpiError::new(crate::abi::consts::MPI_ERR_OTHER, format!("shared memory: {what}: {e}"))
}

impl Segment {
    /// Maps the segment and records this rank's identity in it. `node` lists the world ranks
    /// of this node in ascending order (`geo.nranks` of them, `me` among them).
    pub fn attach(path: &str, geo: Geometry, me: usize, node: &[usize], probe_addr: u64) -> MpiResult<Segment> {
        assert_eq!(node.len(), geo.nranks, "the segment's geometry counts the node's ranks");
        let mut local_of = vec![OFF_NODE; node.last().map_or(0, |&w| w + 1)];
        for (i, &w) in node.iter().enumerate() {
            local_of[w] = i as u32;
        }
        let me = local_of[me] as usize;
        let file = crate::transport::shared_file::open(path)?;
        let map =
            memmap2::MmapOptions::new().len(geo.total_bytes()).map_raw(&file).map_err(|e| shm_error("mmap", e))?;
        // Registered whatever this rank's own CPUs: whether the fences go asymmetric is decided
        // node-wide in `verify` (ranks bound to a CPU each see one CPU but do not share one).
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let registered = membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
        let cells_of = |rank: usize| match geo.ncells {
            0 => ptr::null_mut(),
            // SAFETY: rank < nranks: its cells lie inside the mapping (total_bytes covers all).
            _ => unsafe { map.as_mut_ptr().add(geo.cells_offset() + rank * geo.cells_bytes()) },
        };
        let ring = |src: usize, dst: usize| Cursor {
            // SAFETY: the ring of (src, dst) lies inside the mapping (total_bytes covers all).
            base: unsafe { map.as_mut_ptr().add(geo.rings_offset() + (src * geo.nranks + dst) * geo.ring_bytes()) },
            next: 0,
        };
        // Map this rank's rings now: otherwise the first pass over each ring takes a page
        // fault per slot on both sides (about 3 µs per message for the first `nslots` messages
        // to each peer).
        let ring_bytes = geo.ring_bytes();
        let own_send_rings = (me * geo.nranks * ring_bytes, geo.nranks * ring_bytes);
        let recv_rings = (0..geo.nranks).map(|src| ((src * geo.nranks + me) * ring_bytes, ring_bytes));
        // And this rank's cells, which it writes (receivers fault in the cells they read).
        let own_cells = (geo.cells_offset() - geo.rings_offset() + me * geo.cells_bytes(), geo.cells_bytes());
        for (offset, len) in std::iter::once(own_send_rings).chain(recv_rings).chain(std::iter::once(own_cells)) {
            // SAFETY: the range lies inside the mapping (rings_offset + nranks² rings, and the
            // cells after the board, are within total_bytes). MADV_POPULATE_WRITE only fills
            // in page tables, writing no data, so it is harmless while peers use the memory;
            // an old kernel's EINVAL just leaves the faults to first use.
            // madvise wants a page-aligned start: widen the range down to its page (rings_offset
            // is page-aligned, so this stays inside the mapping).
            let start = geo.rings_offset() + offset;
            let aligned = start & !4095;
            unsafe {
                libc::madvise(
                    map.as_mut_ptr().add(aligned) as *mut libc::c_void,
                    len + (start - aligned),
                    libc::MADV_POPULATE_WRITE,
                );
            }
        }
        let off_node = Cursor { base: ptr::null_mut(), next: 0 };
        let seg = Segment {
            rings: local_of
                .iter()
                .map(|&peer| match peer {
                    OFF_NODE => PeerRings { send: off_node, recv: off_node, read_at_send: 0, cells: ptr::null_mut() },
                    peer => {
                        let peer = peer as usize;
                        PeerRings { send: ring(me, peer), recv: ring(peer, me), read_at_send: 0, cells: cells_of(peer) }
                    }
                })
                .collect(),
            compact_max: COMPACT_MAX_LEN.min(geo.slot_size - COMPACT_HEADER),
            own_cells: cells_of(me),
            next_cell: 0,
            peers: node.iter().copied().filter(|&w| local_of[w] as usize != me).collect(),
            local_of,
            map,
            geo,
            me,
            light_fences: false,
            registered,
            counted_cpu: Cell::new(None),
            node_cores: 1,
            any_thread_multiple: false,
        };
        let h = seg.header();
        if me == 0 {
            // SAFETY: rank 0 writes the geometry before publishing the magic (Release); the
            // others only read it after the PMI fence that follows.
            unsafe {
                let hp = seg.map.as_mut_ptr() as *mut SegHeader;
                (*hp).nranks = geo.nranks as u64;
                (*hp).nslots = geo.nslots as u64;
                (*hp).slot_size = geo.slot_size as u64;
                (*hp).ncells = geo.ncells as u64;
                (*hp).cell_size = geo.cell_size as u64;
            }
            h.magic.store(SEGMENT_MAGIC, Ordering::Release);
        }
        let info = seg.info(me);
        info.pid.store(std::process::id(), Ordering::Relaxed);
        info.light.store(registered as u32, Ordering::Relaxed);
        let (mask, count) = own_cpu_mask();
        for (w, bits) in info.cpus.iter().zip(mask) {
            w.store(bits, Ordering::Relaxed);
        }
        info.cpu_limit.store(if cores < count { cores as u32 } else { 0 }, Ordering::Relaxed);
        info.probe_addr.store(probe_addr, Ordering::Release);
        Ok(seg)
    }

    /// Records whether this rank runs at MPI_THREAD_MULTIPLE (after `attach`, before the
    /// fence that precedes `verify`).
    pub fn publish_thread_multiple(&self, multiple: bool) {
        self.info(self.me).thread_multiple.store(multiple as u32, Ordering::Relaxed);
    }

    /// Checks that the creator's geometry matches ours (after the fence following every
    /// rank's attach), and chooses the doorbell protocol: light fences when every rank
    /// registered for membarrier and the ranks do not outnumber the node's CPUs.
    pub fn verify(&mut self) -> MpiResult<()> {
        let h = self.header();
        if h.magic.load(Ordering::Acquire) != SEGMENT_MAGIC
            || h.nranks as usize != self.geo.nranks
            || h.nslots as usize != self.geo.nslots
            || h.slot_size as usize != self.geo.slot_size
            || h.ncells as usize != self.geo.ncells
            || h.cell_size as usize != self.geo.cell_size
        {
            return Err(MpiError::new(
                crate::abi::consts::MPI_ERR_OTHER,
                "shared memory: segment geometry differs between ranks (OXMPI_SHM_* must be the same on every rank)",
            ));
        }
        let all_registered = (0..self.geo.nranks).all(|r| self.info(r).light.load(Ordering::Acquire) == 1);
        let ranks = || (0..self.geo.nranks).map(|r| self.info(r));
        let mut union = [0u64; RANK_CPU_WORDS];
        for i in ranks() {
            for (u, w) in union.iter_mut().zip(&i.cpus) {
                *u |= w.load(Ordering::Relaxed);
            }
        }
        let limit = ranks().map(|i| i.cpu_limit.load(Ordering::Relaxed) as usize).filter(|&l| l > 0).min();
        let cores = union.iter().map(|w| w.count_ones() as usize).sum::<usize>();
        let multiple = ranks().any(|i| i.thread_multiple.load(Ordering::Relaxed) == 1);
        self.node_cores = limit.map_or(cores, |l| l.min(cores)).max(1);
        self.any_thread_multiple = multiple;
        // Asymmetric fences only when ranks have CPUs of their own: oversubscribed ranks sleep
        // often, and each sleep would then cost a membarrier (IPIs, VM exits in a VM).
        self.light_fences = all_registered && !self.ranks_outnumber_cores();
        self.registered &= self.light_fences;
        Ok(())
    }

    /// Whether notifiers skip their fence (`light_fences`), for the start-up summary.
    pub fn light_fences(&self) -> bool {
        self.light_fences
    }

    /// Whether the node's ranks outnumber the CPUs they can run on together: the union of
    /// every rank's affinity mask, capped by a CPU quota (cgroup) any rank sees. Every rank
    /// computes it from what all recorded in the segment, so all get the same answer even
    /// when their own masks differ (decisions both ends of a message must share depend on it:
    /// collective pieces, the area paths of `coll::shm`).
    pub fn ranks_outnumber_cores(&self) -> bool {
        self.geo.nranks > self.node_cores
    }

    /// The CPUs the node's ranks may run on together (`ranks_outnumber_cores`).
    pub fn node_cores(&self) -> usize {
        self.node_cores
    }

    /// Whether some rank of the node started at MPI_THREAD_MULTIPLE (the same on every rank).
    pub fn any_thread_multiple(&self) -> bool {
        self.any_thread_multiple
    }

    pub fn geometry(&self) -> Geometry {
        self.geo
    }

    fn header(&self) -> &SegHeader {
        // SAFETY: the mapping is at least SEG_HEADER_BYTES long and page aligned.
        unsafe { &*(self.map.as_ptr() as *const SegHeader) }
    }

    /// The node index of world rank `rank`, which must be on this node.
    #[inline]
    fn local(&self, rank: usize) -> usize {
        let i = self.local_of[rank];
        assert!(i != OFF_NODE, "rank {rank} is not on this node");
        i as usize
    }

    /// The record of the rank with node index `rank`.
    #[inline]
    fn info(&self, rank: usize) -> &RankInfo {
        assert!(rank < self.geo.nranks);
        // SAFETY: rank < nranks, so the record lies inside the rank-info area; it is only
        // accessed through atomics.
        unsafe { &*(self.map.as_ptr().add(SEG_HEADER_BYTES + rank * RANK_INFO_BYTES) as *const RankInfo) }
    }

    /// The count of ranks of this job last seen running on `cpu`.
    fn cpu_count(&self, cpu: usize) -> &AtomicU32 {
        assert!(cpu < CPU_TABLE_LEN);
        // SAFETY: the table lies in the header page, past `SegHeader` (checked below), inside
        // the mapping; u32 entries are 4-byte aligned and only accessed atomically.
        unsafe { &*(self.map.as_ptr().add(CPU_TABLE_OFFSET + cpu * 4) as *const AtomicU32) }
    }

    /// Counts this rank on the CPU it runs on now (moving its count when it migrated), and
    /// returns whether another rank of the job was last seen on that CPU too. Such a rank can
    /// only run when this one gives the CPU up, so a waiter that spins delays it (and, if it
    /// is the rank waited for, delays itself): it should yield at once instead. Cheap when
    /// nothing changed: `sched_getcpu` (glibc reads it from rseq) and one load of a line
    /// that is written only on migrations.
    #[inline]
    pub fn track_cpu(&self) -> bool {
        // SAFETY: sched_getcpu has no arguments and touches no memory of ours.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu < 0 || cpu as usize >= CPU_TABLE_LEN {
            self.untrack_cpu();
            return false;
        }
        let cpu = cpu as usize;
        if self.counted_cpu.get() != Some(cpu) {
            self.untrack_cpu();
            self.cpu_count(cpu).fetch_add(1, Ordering::Relaxed);
            self.counted_cpu.set(Some(cpu));
        }
        self.cpu_count(cpu).load(Ordering::Relaxed) > 1
    }

    /// Moves this thread off a CPU it shares with another rank of the job, to an allowed CPU
    /// where the table counts none, and gives it its whole affinity back at once. Ranks that
    /// yield to each other on one CPU (`track_cpu`) leave the kernel little reason to separate
    /// them: such a placement was seen to last for whole benchmark runs at 2-3 us per hand-off
    /// while the other core had only unrelated work. Returns whether it moved.
    pub fn move_off_shared_cpu(&self) -> bool {
        let Some(here) = self.counted_cpu.get() else { return false };
        // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity writes at most its
        // size into this local value.
        let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: as above.
        if unsafe { libc::sched_getaffinity(0, size, &mut allowed) } != 0 {
            return false;
        }
        // SAFETY: a zeroed cpu_set_t is an empty set.
        let mut free: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let mut any = false;
        for cpu in (0..CPU_TABLE_LEN.min(libc::CPU_SETSIZE as usize)).filter(|&c| c != here) {
            // SAFETY: cpu < CPU_SETSIZE, both sets are local values.
            if unsafe { libc::CPU_ISSET(cpu, &allowed) } && self.cpu_count(cpu).load(Ordering::Relaxed) == 0 {
                unsafe { libc::CPU_SET(cpu, &mut free) };
                any = true;
            }
        }
        if !any {
            return false;
        }
        // SAFETY: both sets are initialised local values the calls only read. Restricting the
        // mask migrates the thread before the call returns; restoring it keeps it where it is.
        let moved = unsafe { libc::sched_setaffinity(0, size, &free) } == 0;
        if moved {
            // SAFETY: as above.
            unsafe { libc::sched_setaffinity(0, size, &allowed) };
        }
        moved
    }

    /// Whether a yield by this rank can run another rank of the job on its CPU. With the
    /// kernel's autogroup scheduling (on by default) CPU time is shared between sessions
    /// first, and sched_yield only lets tasks of the yielder's own session run: ranks in
    /// sessions of their own (our mpiexec starts them so when each has a CPU) cannot hand
    /// the CPU to each other; ranks of one session, or with autogroup off, can.
    pub fn yields_reach_peers(&self) -> bool {
        let autogroup = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled");
        if autogroup.is_ok_and(|v| v.trim() == "0") {
            return true;
        }
        // SAFETY: getsid only reads its argument; a pid that is gone (or not visible from
        // here) gives -1, which matches no session.
        let mine = unsafe { libc::getsid(0) };
        (0..self.geo.nranks).all(|r| {
            let pid = self.info(r).pid.load(Ordering::Relaxed) as libc::pid_t;
            mine >= 0 && unsafe { libc::getsid(pid) } == mine
        })
    }

    /// Takes this rank out of the CPU table (it is about to sleep, or leaves).
    pub fn untrack_cpu(&self) {
        if let Some(old) = self.counted_cpu.take() {
            self.cpu_count(old).fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Pid and probe address a peer recorded at attach time.
    pub fn peer_identity(&self, rank: usize) -> (u32, u64) {
        let i = self.info(self.local(rank));
        (i.pid.load(Ordering::Relaxed), i.probe_addr.load(Ordering::Acquire))
    }

    /// Entry `e` of the board of transfers from `sender` to `receiver` (node indices).
    #[inline]
    fn board(&self, sender: usize, receiver: usize, e: usize) -> &BoardEntry {
        assert!(sender < self.geo.nranks && receiver < self.geo.nranks && e < BOARD_ENTRIES);
        let at = self.geo.board_offset() + ((sender * self.geo.nranks + receiver) * BOARD_ENTRIES + e) * CACHE_LINE;
        // SAFETY: the entry lies inside the mapping (total_bytes covers the board), 64-byte
        // aligned; it is only accessed through atomics.
        unsafe { &*(self.map.as_ptr().add(at) as *const BoardEntry) }
    }

    /// Receiver: opens entry `e` of the board from `sender` for a transfer of `nchunks`
    /// chunks (at most SPLIT_MAX_CHUNKS) under generation `generation`, before telling the sender.
    pub fn split_open(&self, sender: usize, e: usize, generation: u32, nchunks: usize) {
        debug_assert!(nchunks <= SPLIT_MAX_CHUNKS);
        let b = self.board(self.local(sender), self.me, e);
        b.done.store(0, Ordering::Relaxed);
        b.redo.store(0, Ordering::Relaxed);
        b.claim.store(claim_word(generation, 0, nchunks), Ordering::Release);
    }

    /// Receiver: takes the next chunk from the front of transfer `e` from `sender`.
    #[inline]
    pub fn split_claim_front(&self, sender: usize, e: usize) -> Option<usize> {
        let b = self.board(self.local(sender), self.me, e);
        let mut w = b.claim.load(Ordering::Acquire);
        loop {
            let (generation, front, back) = claim_fields(w);
            if front >= back {
                return None;
            }
            match b.claim.compare_exchange_weak(
                w,
                claim_word(generation, front + 1, back),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(front),
                Err(now) => w = now,
            }
        }
    }

    /// Sender: takes the next chunk from the back of transfer `e` to `receiver`, if the entry
    /// still holds generation `generation`.
    #[inline]
    pub fn split_claim_back(&self, receiver: usize, e: usize, generation: u32) -> Option<usize> {
        let b = self.board(self.me, self.local(receiver), e);
        let mut w = b.claim.load(Ordering::Acquire);
        loop {
            let (g, front, back) = claim_fields(w);
            if g != generation || front >= back {
                return None;
            }
            match b.claim.compare_exchange_weak(w, claim_word(g, front, back - 1), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(back - 1),
                Err(now) => w = now,
            }
        }
    }

    /// Sender: chunk `i` of transfer `e` to `receiver` is written (`ok`), or could not be
    /// (the receiver copies it; the sender claims no more of this transfer).
    pub fn split_chunk_done(&self, receiver: usize, e: usize, i: usize, ok: bool) {
        let b = self.board(self.me, self.local(receiver), e);
        if ok {
            b.done.fetch_add(1, Ordering::Release);
        } else {
            b.redo.store(i as u32 + 1, Ordering::Release);
        }
    }

    /// Receiver: chunks of transfer `e` from `sender` the sender finished, and the chunk it
    /// gave back (taking it back from the entry), if any.
    pub fn split_state(&self, sender: usize, e: usize) -> (usize, Option<usize>) {
        let b = self.board(self.local(sender), self.me, e);
        let redo = match b.redo.load(Ordering::Acquire) {
            0 => None,
            r => {
                b.redo.store(0, Ordering::Relaxed);
                Some(r as usize - 1)
            }
        };
        (b.done.load(Ordering::Acquire) as usize, redo)
    }

    /// The current slot of ring cursor `c`.
    #[inline]
    fn slot_at(&self, c: Cursor) -> *mut u8 {
        debug_assert!(c.next < self.geo.nslots && !c.base.is_null(), "a ring of a rank on this node");
        // SAFETY: `next` < nslots (it wraps in `advance`), so the slot lies inside the ring,
        // which lies inside the mapping.
        unsafe { c.base.add(c.next * self.geo.slot_size) }
    }

    /// Moves a ring cursor to the next slot.
    #[inline]
    fn advance(c: &mut Cursor, nslots: usize) {
        let next = c.next + 1;
        c.next = if next == nslots { 0 } else { next };
    }

    fn slot_header(&self, p: *mut u8) -> &SlotHeader {
        // SAFETY: p points at a slot start inside the mapping, 64-byte aligned.
        unsafe { &*(p as *const SlotHeader) }
    }

    /// Whether the next slot towards `dst` is free (the receiver gave the credit back) and,
    /// with cells, one of this rank's cells too (whatever the packet's size: callers ask
    /// before they know which packet goes).
    #[inline]
    pub fn can_send(&self, dst: usize) -> bool {
        let p = self.slot_at(self.rings[dst].send);
        self.slot_header(p).full.load(Ordering::Acquire) == 0 && (self.geo.ncells == 0 || self.free_cell().is_some())
    }

    /// Whether `count` packets of `len` payload bytes each can go to `dst` one after the other
    /// without waiting: every slot towards it is free (`drained`) and enough of them and, if
    /// they need cells, enough cells.
    pub fn can_send_burst(&self, dst: usize, count: usize, len: usize) -> bool {
        self.drained(dst)
            && count <= self.geo.nslots
            && (len <= self.geo.slot_capacity() || (0..self.geo.ncells).filter(|&c| self.cell_free(c)).count() >= count)
    }

    /// The busy word of this rank's cell `c`: 1 while a slot names it, until the receiver
    /// releases that slot.
    #[inline]
    fn cell_busy(cells: *mut u8, geo: &Geometry, c: usize) -> &AtomicU32 {
        debug_assert!(!cells.is_null() && c < geo.ncells);
        // SAFETY: c < ncells, so the cell lies among its owner's cells inside the mapping;
        // its first word is 64-byte aligned and only accessed atomically.
        unsafe { &*(cells.add(c * geo.cell_size) as *const AtomicU32) }
    }

    #[inline]
    fn cell_free(&self, c: usize) -> bool {
        // Acquire: the receiver's reads of the cell happen before our next writes to it.
        Self::cell_busy(self.own_cells, &self.geo, c).load(Ordering::Acquire) == 0
    }

    /// A free cell of this rank's, looking from `next_cell` on. Only this rank takes its
    /// cells, so one found free stays free until it does.
    #[inline]
    fn free_cell(&self) -> Option<usize> {
        (0..self.geo.ncells).map(|i| (self.next_cell + i) % self.geo.ncells).find(|&c| self.cell_free(c))
    }

    /// Fills a free cell of this rank's with `packet` and `fill`'s payload and sends `dst` a
    /// slot naming it (`send` of a payload larger than a slot's).
    #[inline(never)]
    fn send_in_cell(&mut self, dst: usize, packet: &Packet, fill: impl FnOnce(&mut [u8])) {
        let c = self.free_cell().expect("can_send found a free cell, and only this rank takes its cells");
        self.next_cell = (c + 1) % self.geo.ncells;
        let busy = Self::cell_busy(self.own_cells, &self.geo, c);
        busy.store(1, Ordering::Relaxed);
        let p = self.slot_at(self.rings[dst].send);
        // SAFETY: the cell is free (no slot names it) and the slot empty, so no receiver reads
        // either until the slot's flag is set; the payload area lies inside the cell.
        unsafe {
            let cell = self.own_cells.add(c * self.geo.cell_size);
            fill(std::slice::from_raw_parts_mut(cell.add(CELL_HEADER), self.geo.cell_size - CELL_HEADER));
            let h = p as *mut SlotHeader;
            ptr::write(&raw mut (*h).packet, *packet);
            (*h).cell = c as u32;
        }
        // Release: the payload and header before the flag.
        self.slot_header(p).full.store(FLAG_FULL | FLAG_CELL, Ordering::Release);
        self.advance_send(dst);
    }

    /// Moves the send cursor towards `dst` past the slot just published.
    #[inline]
    fn advance_send(&mut self, dst: usize) {
        let r = &mut self.rings[dst];
        Self::advance(&mut r.send, self.geo.nslots);
        r.read_at_send = r.recv.next;
    }

    /// Whether this rank took a packet from `dst` since it last sent one there (the pattern of
    /// a ping-pong: `dst` answered).
    #[inline]
    pub fn answered(&self, dst: usize) -> bool {
        let r = &self.rings[dst];
        r.read_at_send != r.recv.next
    }

    /// Whether the receiver gave back every slot sent to `dst` (the last one written is free
    /// again): it has taken everything and, likely, waits for more.
    #[inline]
    pub fn drained(&self, dst: usize) -> bool {
        let c = self.rings[dst].send;
        let last = if c.next == 0 { self.geo.nslots - 1 } else { c.next - 1 };
        let p = self.slot_at(Cursor { next: last, ..c });
        self.slot_header(p).full.load(Ordering::Acquire) == 0
    }

    /// Fills the next slot towards `dst` with `packet` and the `payload` bytes written by
    /// `fill` (which gets the payload area, at least `payload` bytes: a slot's, or a cell's
    /// when they do not fit the slot), then publishes it.
    /// The caller checked `can_send(dst)`, and calls `notify(dst)` after its last send of a
    /// batch (the peer may sleep on its doorbell).
    pub fn send(&mut self, dst: usize, packet: &Packet, payload: usize, fill: impl FnOnce(&mut [u8])) {
        debug_assert!(payload <= self.geo.payload_capacity());
        if payload > self.geo.slot_capacity() {
            return self.send_in_cell(dst, packet, fill);
        }
        let p = self.slot_at(self.rings[dst].send);
        debug_assert_eq!(self.slot_header(p).full.load(Ordering::Relaxed), 0);
        let cap = self.geo.slot_capacity();
        // SAFETY: the slot is empty, so the receiver does not touch it until we set the flag;
        // the header and payload regions lie inside this slot.
        unsafe {
            ptr::write(&raw mut (*(p as *mut SlotHeader)).packet, *packet);
            fill(std::slice::from_raw_parts_mut(p.add(SLOT_HEADER), cap));
        }
        self.slot_header(p).full.store(FLAG_FULL, Ordering::Release);
        self.advance_send(dst);
    }

    /// Sends an eager message with the compact header: context, source, tag and `bytes`
    /// (at most `payload_capacity`). Same contract as `send`.
    #[inline]
    pub fn send_eager(&mut self, dst: usize, context: u32, src: i32, tag: i32, bytes: &[u8]) {
        debug_assert!(bytes.len() <= self.geo.payload_capacity());
        if bytes.len() > self.compact_max {
            let pk = Packet { kind: EAGER_KIND, context, src, tag, len: bytes.len() as u64, ..Default::default() };
            return self.send(dst, &pk, bytes.len(), |slot| slot[..bytes.len()].copy_from_slice(bytes));
        }
        let p = self.slot_at(self.rings[dst].send);
        let h = p as *mut CompactHeader;
        // SAFETY: the slot is empty (caller checked `can_send`), so the receiver does not read
        // it until the flag below is set; header and payload (at most payload_capacity <
        // slot_size - COMPACT_HEADER bytes) lie inside this slot, which is 64-byte aligned.
        unsafe {
            let first_line = CACHE_LINE - COMPACT_HEADER;
            if bytes.len() <= first_line {
                (*h).context = context;
                (*h).src = src;
                (*h).tag = tag;
                copy_bytes(p.add(COMPACT_HEADER), bytes);
            } else {
                // The first line (header, flag), which the receiver keeps reading to see the
                // flag, is written last and in one burst, and no store crosses into it: a
                // store across two lines needs both owned at once. Measured (pinned ranks,
                // docs/perf-r5-p2p.md): ping-pong of 64 B 0.34 -> 0.24 us, 128 B 0.41 -> 0.32.
                if bytes.len() <= first_line + CACHE_LINE {
                    copy_bytes(p.add(CACHE_LINE), &bytes[first_line..]);
                    copy_bytes(p.add(COMPACT_HEADER), &bytes[..first_line]);
                } else {
                    copy_bytes(p.add(COMPACT_HEADER), bytes);
                }
                (*h).context = context;
                (*h).src = src;
                (*h).tag = tag;
            }
        }
        let flag = FLAG_FULL | FLAG_COMPACT | ((bytes.len() as u32) << COMPACT_LEN_SHIFT);
        // SAFETY: as above; the flag word is only accessed atomically.
        unsafe { (*h).flag.store(flag, Ordering::Release) };
        self.advance_send(dst);
    }

    /// `send_eager` of `len` bytes written by `fill` (it gets exactly `len` bytes of the slot)
    /// instead of copied from a slice: a sender packs non-contiguous data straight into the
    /// slot. Same contract as `send`.
    pub fn send_eager_with(
        &mut self,
        dst: usize,
        context: u32,
        src: i32,
        tag: i32,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) {
        debug_assert!(len <= self.geo.payload_capacity());
        if len > self.compact_max {
            let pk = Packet { kind: EAGER_KIND, context, src, tag, len: len as u64, ..Default::default() };
            return self.send(dst, &pk, len, |slot| fill(&mut slot[..len]));
        }
        let p = self.slot_at(self.rings[dst].send);
        let h = p as *mut CompactHeader;
        // SAFETY: as in `send_eager`: the slot is empty (caller checked `can_send`), header and
        // `len` payload bytes lie inside it.
        unsafe {
            (*h).context = context;
            (*h).src = src;
            (*h).tag = tag;
            fill(std::slice::from_raw_parts_mut(p.add(COMPACT_HEADER), len));
            (*h).flag.store(FLAG_FULL | FLAG_COMPACT | ((len as u32) << COMPACT_LEN_SHIFT), Ordering::Release);
        }
        self.advance_send(dst);
    }

    /// The next full slot from `src`, if any.
    #[inline]
    pub fn peek(&self, src: usize) -> Option<Incoming<'_>> {
        let p = self.slot_at(self.rings[src].recv);
        let h = self.slot_header(p);
        let flag = h.full.load(Ordering::Acquire);
        if flag == 0 {
            // A message of 49-112 bytes spans the flag's line and the next one. Asking for the
            // next line while polling the flag lets the two transfers overlap when the sender
            // fills the slot, instead of a second one starting only after the flag is seen.
            prefetch(p.wrapping_add(CACHE_LINE));
            return None;
        }
        if flag & FLAG_COMPACT != 0 {
            // SAFETY: the flag says the sender finished writing a compact slot and hands it to
            // us until we release it; header and payload lie inside the slot.
            unsafe {
                let c = &*(p as *const CompactHeader);
                let len = ((flag >> COMPACT_LEN_SHIFT) as usize).min(self.geo.slot_size - COMPACT_HEADER);
                let packet = Packet {
                    kind: EAGER_KIND,
                    context: c.context,
                    src: c.src,
                    tag: c.tag,
                    len: len as u64,
                    ..Default::default()
                };
                let payload = std::slice::from_raw_parts(p.add(COMPACT_HEADER), len);
                return Some(Incoming { packet, payload });
            }
        }
        let packet = h.packet;
        if flag & FLAG_CELL != 0 {
            return Some(self.in_cell(src, h));
        }
        let n = (packet.len as usize).min(self.geo.slot_capacity());
        // SAFETY: the flag says the sender finished writing and hands the slot to us until we
        // release it; the payload lies inside the slot.
        let payload = unsafe { std::slice::from_raw_parts(p.add(SLOT_HEADER), n) };
        Some(Incoming { packet, payload })
    }

    /// The index of `src`'s cell that slot header `h` (with `FLAG_CELL`) names, kept within
    /// the cells whatever the slot holds.
    #[inline]
    fn named_cell(&self, h: &SlotHeader) -> usize {
        (h.cell as usize).min(self.geo.ncells - 1)
    }

    /// The packet of a full slot from `src` whose payload is in `src`'s cell.
    #[inline(never)]
    fn in_cell(&self, src: usize, h: &SlotHeader) -> Incoming<'_> {
        let cells = self.rings[src].cells;
        let c = self.named_cell(h);
        let n = (h.packet.len as usize).min(self.geo.cell_size - CELL_HEADER);
        // SAFETY: `src` has cells: its geometry is ours (`verify`) and it sets FLAG_CELL only
        // with cells. c < ncells, so the cell lies inside the mapping; the slot naming it hands
        // it to us until we release the slot.
        let payload = unsafe { std::slice::from_raw_parts(cells.add(c * self.geo.cell_size + CELL_HEADER), n) };
        Incoming { packet: h.packet, payload }
    }

    /// Asks for the first lines of the slots `ahead` (distances after the next one from `src`):
    /// while a window of messages streams in, their transfers from the sender's cache then
    /// overlap the handling of this one instead of each starting when its slot is peeked
    /// (every slot lies on its own pages, where the hardware prefetchers do not follow).
    #[inline]
    pub fn prefetch_ahead(&self, src: usize, ahead: std::ops::RangeInclusive<usize>) {
        let c = self.rings[src].recv;
        for d in ahead {
            let mut next = c.next + d;
            while next >= self.geo.nslots {
                next -= self.geo.nslots;
            }
            prefetch(self.slot_at(Cursor { next, ..c }));
        }
    }

    /// Whether the slot after the next one from `src` is full too: the sender is ahead of this
    /// rank by more than one packet (a window of messages in flight).
    pub fn backlog(&self, src: usize) -> bool {
        let mut c = self.rings[src].recv;
        Self::advance(&mut c, self.geo.nslots);
        self.slot_header(self.slot_at(c)).full.load(Ordering::Acquire) != 0
    }

    /// Gives the slot read by `peek(src)` back to the sender (the credit). The sender may be
    /// asleep waiting for credits: the caller calls `notify(src)` after its last release of a
    /// batch.
    #[inline]
    pub fn release(&mut self, src: usize) {
        let p = self.slot_at(self.rings[src].recv);
        let h = self.slot_header(p);
        if self.geo.ncells > 0 && h.full.load(Ordering::Relaxed) & FLAG_CELL != 0 {
            let c = self.named_cell(h);
            // Release: our reads of the cell before the sender's next writes to it.
            Self::cell_busy(self.rings[src].cells, &self.geo, c).store(0, Ordering::Release);
        }
        h.full.store(0, Ordering::Release);
        Self::advance(&mut self.rings[src].recv, self.geo.nslots);
    }

    /// Wakes `rank` if it sleeps, after a batch of sends to it or releases of its slots. Pairs
    /// with `sleep` (Dekker): our flag stores, a full barrier, our load of its `sleeping`; its
    /// store of `sleeping`, a full barrier, its loads of the flags. Either it sees our stores
    /// before sleeping, or we see it sleeping. That needs StoreLoad ordering, which neither
    /// Release nor Acquire gives. When every rank registered for membarrier, the barrier on
    /// our side is only a compiler fence: the sleeper's `membarrier(GLOBAL_EXPEDITED)` makes
    /// every running registered thread execute a full barrier (and a thread not running has
    /// passed one in its context switch), so our flag store precedes that point and the
    /// sleeper sees it, or our load of `sleeping` follows it and sees 1 (the asymmetric
    /// fence of liburcu and folly). Sleeping is rare; sending is not. Otherwise a SeqCst fence,
    /// once per batch, not per message.
    #[inline]
    pub fn notify(&self, rank: usize) {
        self.notifier_fence();
        self.ring_if_asleep(self.local(rank));
    }

    /// `notify` for several ranks with one barrier (a flag that several ranks wait for).
    pub fn notify_many(&self, ranks: impl Iterator<Item = usize>) {
        self.notifier_fence();
        for rank in ranks {
            self.ring_if_asleep(self.local(rank));
        }
    }

    /// The notifier's side of the barrier pair described at `notify`.
    #[inline]
    fn notifier_fence(&self) {
        if self.light_fences {
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
    }

    /// Rings the doorbell of the rank with node index `local` if a thread of it sleeps.
    #[inline]
    fn ring_if_asleep(&self, local: usize) {
        let info = self.info(local);
        if info.sleeping.load(Ordering::Relaxed) != 0 {
            info.doorbell.fetch_add(1, Ordering::SeqCst);
            futex_wake(&info.doorbell);
        }
    }

    /// Sleeps until a peer rings this rank's doorbell, or `timeout_ms` passes. `idle` is
    /// called after announcing the sleep; the rank sleeps only if it returns true (nothing
    /// arrived in the meantime).
    pub fn sleep(&self, timeout: Duration, idle: impl FnOnce() -> bool) {
        if let Some(ticket) = self.announce_sleep(idle) {
            // SAFETY: the segment (`self`) is mapped for the whole call.
            unsafe { ticket.sleep(timeout) };
        }
    }

    /// The first half of `sleep`: announces that a thread of this rank is going to sleep and
    /// checks `idle` after that. The returned ticket sleeps (`SleepTicket::sleep`), possibly
    /// on another thread's watch: at MPI_THREAD_MULTIPLE a waiting thread announces under the
    /// library lock and sleeps after releasing it. Several threads may be announced at once
    /// (`sleeping` counts them). `None`: do not sleep (announcement withdrawn).
    pub fn announce_sleep(&self, idle: impl FnOnce() -> bool) -> Option<SleepTicket> {
        let info = self.info(self.me);
        let seen = info.doorbell.load(Ordering::SeqCst);
        info.sleeping.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        // The heavy side of the asymmetric fence (see `notify`); if it fails, do not sleep
        // (peers that skip their fence could not wake us reliably).
        let barrier_ok = !self.registered || membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED);
        if barrier_ok && idle() {
            // Asleep, this rank no longer competes for its CPU (see `track_cpu`).
            self.untrack_cpu();
            return Some(SleepTicket { info, seen });
        }
        info.sleeping.fetch_sub(1, Ordering::Relaxed);
        None
    }

    /// Rings this rank's own doorbell if a thread of it sleeps (at MPI_THREAD_MULTIPLE, a
    /// thread that may have completed what a sleeping thread of the same rank waits for).
    pub fn wake_own(&self) {
        self.notifier_fence();
        self.ring_if_asleep(self.me);
    }

    /// Whether any slot from any peer is full (cheap check used before sleeping).
    pub fn any_incoming(&self) -> bool {
        self.peers.iter().any(|&src| self.peek(src).is_some())
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        self.untrack_cpu();
    }
}

/// Hints the CPU to bring the cache line at `p` close (no effect on the program's semantics).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no architectural effect, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// An announced sleep on this rank's doorbell (see `Segment::announce_sleep`).
pub struct SleepTicket {
    info: *const RankInfo,
    seen: u32,
}

// SAFETY: the record is only touched through atomics.
unsafe impl Send for SleepTicket {}

impl SleepTicket {
    /// Sleeps until the doorbell rings (or rang since the announcement) or `timeout_ms`
    /// passes, then withdraws the announcement.
    ///
    /// # Safety
    /// The segment the ticket comes from is still mapped.
    pub unsafe fn sleep(self, timeout: Duration) {
        // SAFETY: the record lies in the mapping, mapped (caller).
        let info = unsafe { &*self.info };
        futex_wait(&info.doorbell, self.seen, timeout);
        info.sleeping.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Copies `src` to `dst` (`src.len()` bytes). Payloads up to 64 bytes move with at most two
/// overlapping fixed-size loads and stores each way instead of a memcpy call.
///
/// # Safety
/// `dst` must be valid for `src.len()` bytes of writes and not overlap `src`.
#[inline(always)]
unsafe fn copy_bytes(dst: *mut u8, src: &[u8]) {
    let n = src.len();
    let s = src.as_ptr();
    // SAFETY (all branches): every access lies within [0, n) of both buffers, which are
    // valid for n bytes (caller contract for dst, slice for src); unaligned accesses.
    unsafe {
        macro_rules! two {
            ($t:ty) => {{
                let k = std::mem::size_of::<$t>();
                let a = ptr::read_unaligned(s as *const $t);
                let b = ptr::read_unaligned(s.add(n - k) as *const $t);
                ptr::write_unaligned(dst as *mut $t, a);
                ptr::write_unaligned(dst.add(n - k) as *mut $t, b);
            }};
        }
        match n {
            0 => {}
            1..=3 => {
                *dst = *s;
                *dst.add(n / 2) = *s.add(n / 2);
                *dst.add(n - 1) = *s.add(n - 1);
            }
            4..=7 => two!(u32),
            8..=15 => two!(u64),
            16..=31 => two!(u128),
            32..=64 => two!([u128; 2]),
            _ => ptr::copy_nonoverlapping(s, dst, n),
        }
    }
}

/// Copies `src` into `dst` (equal lengths), with fixed-size moves for small payloads.
#[inline(always)]
pub fn copy_small(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len());
    // SAFETY: `dst` is a distinct mutable slice of the same length as `src`.
    unsafe { copy_bytes(dst.as_mut_ptr(), src) }
}

const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_int = 1 << 1;
const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_int = 1 << 2;

/// membarrier(2); true on success. `OXMPI_MEMBARRIER=0` turns the asymmetric fences off.
fn membarrier(cmd: libc::c_int) -> bool {
    if cmd == MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED && std::env::var(config::MEMBARRIER).is_ok_and(|v| v == "0") {
        return false;
    }
    // SAFETY: membarrier takes two integer arguments and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0) == 0 }
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts =
        libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as libc::c_long };
    // SAFETY: the word lives in a shared mapping that outlives the call; FUTEX_WAIT (not
    // private) because peers in other processes wake it.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, expected, &ts as *const libc::timespec);
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: as in futex_wait.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// Single-copy read of `len` bytes at `remote` in process `pid` into `local`
/// (process_vm_readv, "CMA"). Fails when the kernel denies it (ptrace rules, seccomp).
pub fn cma_read(pid: u32, remote: u64, local: &mut [u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < local.len() {
        let liov = libc::iovec { iov_base: local[done..].as_mut_ptr().cast(), iov_len: local.len() - done };
        let riov = libc::iovec { iov_base: (remote as usize + done) as *mut libc::c_void, iov_len: local.len() - done };
        // SAFETY: the local iovec covers memory we own mutably; the remote one is only read by
        // the kernel in the other process, which checks it.
        let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &liov, 1, &riov, 1, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "process_vm_readv read nothing"));
        }
        done += n as usize;
    }
    Ok(())
}

/// Single-copy write of `local` to `remote` in process `pid` (process_vm_writev).
pub fn cma_write(pid: u32, remote: u64, local: &[u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < local.len() {
        let liov = libc::iovec { iov_base: local[done..].as_ptr() as *mut libc::c_void, iov_len: local.len() - done };
        let riov = libc::iovec { iov_base: (remote as usize + done) as *mut libc::c_void, iov_len: local.len() - done };
        // SAFETY: the local iovec covers memory we may read (the kernel only reads it); the
        // remote one is written by the kernel in the other process, which checks it.
        let n = unsafe { libc::process_vm_writev(pid as libc::pid_t, &liov, 1, &riov, 1, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "process_vm_writev wrote nothing"));
        }
        done += n as usize;
    }
    Ok(())
}

/// Most iovecs one process_vm_readv call takes (the kernel's UIO_MAXIOV).
const IOV_MAX: usize = 1024;

/// A position in a list of (address, length) blocks, consumed front to back.
struct BlockCursor<'a, A> {
    blocks: &'a [(A, A)],
    index: usize,
    offset: usize,
}

impl<'a, A: Copy + TryInto<usize>> BlockCursor<'a, A> {
    fn new(blocks: &'a [(A, A)]) -> Self {
        BlockCursor { blocks, index: 0, offset: 0 }
    }

    fn get(&self, i: usize) -> (usize, usize) {
        let (a, l) = self.blocks[i];
        (a.try_into().ok().unwrap_or(0), l.try_into().ok().unwrap_or(0))
    }

    /// Up to `IOV_MAX` iovecs from the current position covering at most `limit` bytes.
    fn batch(&self, limit: usize) -> (Vec<libc::iovec>, usize) {
        let mut out = Vec::new();
        let mut total = 0;
        let mut i = self.index;
        let mut skip = self.offset;
        while i < self.blocks.len() && out.len() < IOV_MAX && total < limit {
            let (addr, len) = self.get(i);
            let n = (len - skip).min(limit - total);
            if n > 0 {
                out.push(libc::iovec { iov_base: (addr + skip) as *mut libc::c_void, iov_len: n });
                total += n;
            }
            i += 1;
            skip = 0;
        }
        (out, total)
    }

    fn advance(&mut self, mut n: usize) {
        while n > 0 && self.index < self.blocks.len() {
            let left = self.get(self.index).1 - self.offset;
            if n < left {
                self.offset += n;
                return;
            }
            n -= left;
            self.index += 1;
            self.offset = 0;
        }
    }
}

/// Single-copy scatter/gather read of `len` bytes: from the blocks `remote` (address, length)
/// of process `pid` into the blocks `local` of this process, in order, batched by IOV_MAX.
///
/// # Safety
/// Every local block must be memory this process may write and nothing else reads or writes
/// during the call.
pub unsafe fn cma_readv(pid: u32, local: &[(usize, usize)], remote: &[(u64, u64)], len: usize) -> io::Result<()> {
    // SAFETY: forwarded from the caller.
    unsafe { cma_rwv(pid, local, remote, 0..len, false) }
}

/// `cma_readv` of bytes `range` of the data the two lists describe (a chunk of a transfer
/// shared with the peer).
///
/// # Safety
/// As for `cma_readv`, for the local blocks holding `range`.
pub unsafe fn cma_readv_range(
    pid: u32,
    local: &[(usize, usize)],
    remote: &[(u64, u64)],
    range: std::ops::Range<usize>,
) -> io::Result<()> {
    // SAFETY: forwarded from the caller.
    unsafe { cma_rwv(pid, local, remote, range, false) }
}

/// Single-copy scatter/gather write of bytes `range` of the data described by the blocks
/// `local` of this process into the blocks `remote` of process `pid` (process_vm_writev).
pub fn cma_writev_range(
    pid: u32,
    local: &[(usize, usize)],
    remote: &[(u64, u64)],
    range: std::ops::Range<usize>,
) -> io::Result<()> {
    // SAFETY: a write only reads local memory; the kernel checks the remote blocks.
    unsafe { cma_rwv(pid, local, remote, range, true) }
}

/// # Safety
/// When reading (`write` false), every local block holding `range` must be memory this
/// process may write and nothing else accesses during the call; when writing, readable.
unsafe fn cma_rwv(
    pid: u32,
    local: &[(usize, usize)],
    remote: &[(u64, u64)],
    range: std::ops::Range<usize>,
    write: bool,
) -> io::Result<()> {
    let (mut l, mut r) = (BlockCursor::new(local), BlockCursor::new(remote));
    l.advance(range.start);
    r.advance(range.start);
    let len = range.len();
    let mut done = 0;
    while done < len {
        let (_, rbytes) = r.batch(len - done);
        let (liov, lbytes) = l.batch(rbytes);
        if lbytes == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "block lists shorter than the message"));
        }
        let (riov, _) = r.batch(lbytes);
        let call = if write { libc::process_vm_writev } else { libc::process_vm_readv };
        // SAFETY: local iovecs cover memory we may access that way (caller contract); the
        // kernel checks the remote ones against the other process.
        let n = unsafe {
            call(
                pid as libc::pid_t,
                liov.as_ptr(),
                liov.len() as libc::c_ulong,
                riov.as_ptr(),
                riov.len() as libc::c_ulong,
                0,
            )
        };
        if n <= 0 {
            return Err(if n < 0 { io::Error::last_os_error() } else { io::ErrorKind::UnexpectedEof.into() });
        }
        l.advance(n as usize);
        r.advance(n as usize);
        done += n as usize;
    }
    Ok(())
}

/// This thread's CPU affinity as `RankInfo::cpus` words, and the number of CPUs in it (all
/// of them, including any beyond the words). On failure: CPU 0 only.
fn own_cpu_mask() -> ([u64; RANK_CPU_WORDS], usize) {
    let mut words = [0u64; RANK_CPU_WORDS];
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity writes at most its size
    // into this local value.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        words[0] = 1;
        return (words, 1);
    }
    let mut count = 0;
    for cpu in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: cpu < CPU_SETSIZE; `set` is an initialised local value.
        if unsafe { libc::CPU_ISSET(cpu, &set) } {
            count += 1;
            if cpu < RANK_CPU_BITS {
                words[cpu / 64] |= 1 << (cpu % 64);
            }
        }
    }
    (words, count.max(1))
}

/// Lets peers of this job read our memory with process_vm_readv under Yama ptrace_scope=1.
pub fn allow_peer_reads() {
    // SAFETY: prctl with PR_SET_PTRACER takes plain integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::shared_file::SharedFile;

    fn temp_segment(nranks: usize, nslots: usize) -> (SharedFile, Geometry) {
        let geo = Geometry { nranks, nslots, slot_size: 256, ncells: 0, cell_size: 0 };
        (SharedFile::create("unittest", geo.total_bytes()).unwrap(), geo)
    }

    #[test]
    fn ring_delivers_in_order_and_returns_credits() {
        let (file, geo) = temp_segment(2, 4);
        let mut a = Segment::attach(file.name(), geo, 0, &[0, 1], 0).unwrap();
        let mut b = Segment::attach(file.name(), geo, 1, &[0, 1], 0).unwrap();
        drop(file);
        b.verify().unwrap();
        for round in 0..3u32 {
            for i in 0..4u32 {
                assert!(a.can_send(1));
                let pk = Packet { kind: 1, tag: (round * 10 + i) as i32, len: 4, ..Default::default() };
                a.send(1, &pk, 4, |buf| buf[..4].copy_from_slice(&i.to_le_bytes()));
            }
            assert!(!a.can_send(1), "ring of 4 slots must be full after 4 sends");
            for i in 0..4u32 {
                let inc = b.peek(0).unwrap();
                assert_eq!(inc.packet.tag, (round * 10 + i) as i32);
                assert_eq!(inc.payload, &i.to_le_bytes());
                b.release(0);
            }
            assert!(b.peek(0).is_none());
        }
    }

    #[test]
    fn compact_eager_slots_carry_envelope_and_payload() {
        let (file, geo) = temp_segment(2, 4);
        let mut a = Segment::attach(file.name(), geo, 0, &[0, 1], 0).unwrap();
        let mut b = Segment::attach(file.name(), geo, 1, &[0, 1], 0).unwrap();
        drop(file);
        let cap = geo.payload_capacity();
        for len in [0usize, 1, 2, 3, 5, 8, 13, 16, 31, 32, 47, 48, 49, 64, 65, 100, cap] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            assert!(a.can_send(1));
            a.send_eager(1, 9, 3, len as i32, &data);
            // A full-header packet in between keeps both formats in one ring.
            a.send(1, &Packet { kind: 4, sreq: 77, ..Default::default() }, 0, |_| {});
            a.notify(1);
            let inc = b.peek(0).unwrap();
            assert_eq!((inc.packet.kind, inc.packet.context, inc.packet.src), (EAGER_KIND, 9, 3));
            assert_eq!((inc.packet.tag, inc.packet.len), (len as i32, len as u64));
            assert_eq!(inc.payload, &data[..]);
            b.release(0);
            let inc = b.peek(0).unwrap();
            assert_eq!((inc.packet.kind, inc.packet.sreq), (4, 77));
            b.release(0);
            b.notify(0);
        }
    }

    /// Three ranks with two cells each and rings of `nslots` slots, as `for_ranks` lays out
    /// many ranks.
    fn segment_with_cells(nslots: usize) -> (SharedFile, Geometry) {
        let geo = Geometry {
            nranks: 3,
            nslots,
            slot_size: CELL_RING_SLOT,
            ncells: 2,
            cell_size: CELL_HEADER + SLOT_PAYLOAD_MIN,
        };
        (SharedFile::create("unittest", geo.total_bytes()).unwrap(), geo)
    }

    #[test]
    fn payloads_larger_than_a_slot_go_in_cells_in_order() {
        let (file, geo) = segment_with_cells(8);
        let node = [0, 1, 2];
        let mut a = Segment::attach(file.name(), geo, 0, &node, 0).unwrap();
        let mut b = Segment::attach(file.name(), geo, 1, &node, 0).unwrap();
        let mut c = Segment::attach(file.name(), geo, 2, &node, 0).unwrap();
        drop(file);
        assert_eq!(geo.payload_capacity(), SLOT_PAYLOAD_MIN);
        let data = |len: usize, seed: usize| -> Vec<u8> { (0..len).map(|i| (i * 13 + seed) as u8).collect() };
        // Slot-sized and cell-sized messages (113 and SLOT_PAYLOAD_MIN bytes) in one ring.
        let lens = [0, 112, 113, 80, SLOT_PAYLOAD_MIN];
        for (i, len) in lens.iter().enumerate() {
            assert!(a.can_send(1));
            a.send_eager(1, 1, 0, i as i32, &data(*len, i));
        }
        // Both of a's cells are taken: nothing goes to anyone until one comes back, not even a
        // packet that would fit a slot (callers ask before they know which packet goes).
        assert!(!a.can_send(1) && !a.can_send(2));
        let take = |r: &mut Segment, from: usize, i: usize| {
            let inc = r.peek(from).unwrap();
            assert_eq!((inc.packet.tag, inc.payload), (i as i32, &data(lens[i], i)[..]), "message {i}");
            r.release(from);
        };
        for i in 0..3 {
            take(&mut b, 0, i);
        }
        // Cells go to any receiver: a full-header packet with a payload larger than a slot.
        assert!(a.can_send(2));
        a.send(2, &Packet { kind: 4, sreq: 7, len: 300, ..Default::default() }, 300, |out| out[..300].fill(9));
        assert!(!a.can_send(2) && !a.can_send_burst(2, 1, 300));
        let inc = c.peek(0).unwrap();
        assert_eq!((inc.packet.kind, inc.packet.sreq, inc.payload), (4, 7, &[9u8; 300][..]));
        c.release(0);
        assert!(a.can_send(2), "c gave the cell back");
        for i in 3..lens.len() {
            take(&mut b, 0, i);
        }
        assert!(b.peek(0).is_none() && a.drained(1));
        assert!(a.can_send_burst(1, 2, 300) && !a.can_send_burst(1, 3, 300));
        assert!(a.can_send_burst(1, 8, 10) && !a.can_send_burst(1, 9, 10), "8 slots per ring");
    }

    #[test]
    fn many_ranks_fit_the_memory_targets() {
        let mib = |ranks: usize| {
            let geo = Geometry::for_ranks(ranks);
            (geo.total_bytes() + crate::coll::shm::area_bytes(ranks)) as f64 / (1 << 20) as f64
        };
        // The targets: 64 ranks in 64 MiB, 256 in 512 MiB (point-to-point segment and
        // the world's collectives area; other communicators' areas come with the program).
        if std::env::var_os(config::SHM_CELLS).is_none() && std::env::var_os(config::SHM_SLOTS).is_none() {
            assert!(mib(64) <= 64.0, "64 ranks: {:.1} MiB", mib(64));
            assert!(mib(256) <= 512.0, "256 ranks: {:.1} MiB", mib(256));
            assert_eq!(Geometry::for_ranks(CELLS_FROM_RANKS - 1).ncells, 0);
            assert!(Geometry::for_ranks(2).payload_capacity() >= SLOT_PAYLOAD_MIN);
        }
    }

    #[test]
    fn cpu_table_counts_ranks_sharing_a_cpu() {
        // On a thread of its own: its pinning must not outlive the test.
        std::thread::spawn(cpu_table_on_one_cpu).join().unwrap();
    }

    fn cpu_table_on_one_cpu() {
        // Pin this thread to the CPU it runs on, so both "ranks" stay on one CPU.
        // SAFETY: sched_getcpu has no arguments; the cpu_set_t is a local value.
        let cpu = unsafe { libc::sched_getcpu() };
        assert!(cpu >= 0);
        // SAFETY: a zeroed cpu_set_t is an empty set; sched_setaffinity reads it only.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            assert_eq!(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set), 0);
        }
        let (file, geo) = temp_segment(3, 4);
        let a = Segment::attach(file.name(), geo, 0, &[0, 1, 2], 0).unwrap();
        let b = Segment::attach(file.name(), geo, 1, &[0, 1, 2], 0).unwrap();
        drop(file);
        assert!(!a.track_cpu(), "alone on its CPU");
        assert!(!a.track_cpu(), "counted once, however often it looks");
        assert!(b.track_cpu(), "a second rank on the same CPU");
        assert!(a.track_cpu());
        b.untrack_cpu();
        assert!(!a.track_cpu(), "a sleeping rank does not count");
        assert!(b.track_cpu());
        drop(b);
        assert!(!a.track_cpu(), "a rank that left does not count");
    }

    #[test]
    fn small_copies_copy_exactly_the_bytes() {
        for n in 0..200usize {
            let src: Vec<u8> = (0..n).map(|i| i as u8 ^ 0x5a).collect();
            let mut dst = vec![0xeeu8; n + 8];
            copy_small(&mut dst[4..4 + n], &src);
            assert_eq!(&dst[4..4 + n], &src[..]);
            assert!(dst[..4].iter().chain(&dst[4 + n..]).all(|&x| x == 0xee), "wrote outside at {n}");
        }
    }

    #[test]
    fn scatter_gather_read_matches_blocks_of_different_shapes() {
        let src: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        // Remote: every other 100-byte block of src; local: blocks of 37 bytes, 3 apart.
        let remote: Vec<(u64, u64)> = (0..25).map(|i| (src.as_ptr() as u64 + i * 200, 100)).collect();
        let mut dst = vec![0u8; 40 * 80];
        let local: Vec<(usize, usize)> = (0..80).map(|i| (dst.as_mut_ptr() as usize + i * 40, 37)).collect();
        let len = 2500;
        // SAFETY: the local blocks lie in `dst`, which nothing else touches meanwhile.
        unsafe { cma_readv(std::process::id(), &local, &remote, len) }.unwrap();
        let want: Vec<u8> = remote
            .iter()
            .flat_map(|&(a, l)| {
                let off = (a - src.as_ptr() as u64) as usize;
                src[off..off + l as usize].to_vec()
            })
            .collect();
        let got: Vec<u8> = local
            .iter()
            .flat_map(|&(a, l)| {
                let off = a - dst.as_ptr() as usize;
                dst[off..off + l].to_vec()
            })
            .take(len)
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn cma_reads_own_memory() {
        let src = [7u8; 100];
        let mut dst = [0u8; 100];
        cma_read(std::process::id(), src.as_ptr() as u64, &mut dst).unwrap();
        assert_eq!(src, dst);
    }
}

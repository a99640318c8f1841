//! Shared-memory collectives among the ranks of one node: a per-communicator area of flags
//! and slots in a `/dev/shm` file, used by the two-level composition in `coll::hier`.
//!
//! Layout: a header line, one control line per rank (its `done` sequences, its attach mark
//! and whether it can read its peers' memory), then per rank `BUFS` slots of `SLOT_STRIDE`
//! bytes, then per rank a lane: a ring of `LANE_LINES` lines for payloads of up to
//! `LANE_CAP` bytes. A slot starts with its flag (the sequence number of the collective that
//! last published it), a second flag for two-phase algorithms, then the payload, so a small
//! payload shares the flag's cache line and moves in the same coherence transfer. Every
//! rank's lines and slots are its own: only the owner writes them, so no flag shares a line
//! with another rank's.
//!
//! Sequence numbers: every rank of the node counts the steps it runs on the area (the same
//! steps in the same order on every rank, as collectives are), so step `s` uses slot
//! `s % BUFS` and a flag `>= s` means "published for step s or later"; nothing is ever reset.
//! A rank may overwrite its slot only when every rank has finished the step that last
//! published data there (`done >= that step`): readers store `done` after each step, and a
//! writer that has to wait for it announces itself in the header so readers ring its
//! doorbell. Large payloads go in slot-sized pieces, each a step of its own, so up to `BUFS`
//! pieces are in flight (a pipeline).
//!
//! Lane: broadcasts and reductions of at most `LANE_CAP` bytes take their own sequence (the
//! same on every rank too) through the lane. A step's entry takes consecutive lines (never
//! wrapping), at the same place in every rank's ring, so all know where a writer put it; every
//! line starts with a flag word and carries `LANE_LINE_CAP` payload bytes after it, so up to
//! 56 bytes share the flag's line, and a line's first word only ever holds step numbers
//! (entries of different lengths start at different lines over time). The ring is deep, so a
//! broadcast root or reduce contributors run hundreds of calls ahead of slow readers
//! (consecutive collectives pipeline, which matters most when ranks outnumber cores and
//! readers are descheduled for whole time slices). A rank reuses lines once every rank
//! finished the last lane step that used them.
//!
//! Single copy: payloads of at least `SINGLE_COPY_MIN` bytes do not go through the slots
//! when every rank of the area can read every other's memory (process_vm_readv, probed when
//! the area is set up): a rank publishes the address of its buffer, the others read it
//! straight into theirs, and the owner returns once they all finished the step.
//!
//! Waiting goes through the engine's wait loop (spin, yield, then sleep on the doorbell, as
//! for point-to-point), which also keeps point-to-point traffic moving; every flag store is
//! followed by a doorbell check of the ranks that wait for it.

use crate::coll::sparse::{Entries, Vecs};
use crate::error::{MpiError, MpiResult};
use crate::op::Reduction;
use crate::p2p::Engine;
use crate::transport::shared_file::SharedFile;
use std::sync::atomic::{AtomicU64, Ordering, fence};

const LINE: usize = 64;
/// Slots per rank: steps a rank may run ahead of the slowest reader of its data (a
/// broadcast root, reduce contributors), and pieces of a large payload in flight. Small
/// payloads touch one page per slot, so this many pages per rank and communicator.
pub const BUFS: usize = 8;
/// Bytes of one slot, header included.
const SLOT_STRIDE: usize = 32 * 1024;
/// Flag, second flag.
const SLOT_HEADER: usize = 16;
/// Payload bytes of one slot: the largest piece one step moves.
pub const SLOT_CAP: usize = SLOT_STRIDE - SLOT_HEADER;
/// Lines of each rank's lane ring: a writer runs up to this many one-line steps (fewer
/// longer ones: 110 of 2 KiB) ahead of the slowest reader. 256 KiB per rank and
/// communicator. (1024 lines held 27 entries of 2 KiB: at np 8 on 2 cores, batches of 10
/// bcasts of 2 KiB took 5.5 µs a call against 1.4 µs with 4096.)
const LANE_LINES: usize = 4096;
/// Payload bytes of a lane line (the line less its flag word).
const LANE_LINE_CAP: usize = LINE - 8;
/// Largest payload through the lane (37 lines): broadcasts and reductions up to this size
/// pipeline as deep as the ring allows; larger ones go through the slots, 8 steps deep.
pub const LANE_CAP: usize = 2048;
/// Largest entry of an exchange (allgather, all-to-all, reduce-scatter) through the lane
/// (293 lines: 13 such entries fit the ring); used when ranks outnumber cores, where the
/// exchanges' cost is the scheduling rounds, not the copies (`coll::hier::exchange_area`).
pub const LANE_ENTRY_MAX: usize = 16384;
/// Payloads from this size move by single copy where the area allows it (below, the pipeline
/// through the slots lets a broadcast root return before its readers copied).
const SINGLE_COPY_MIN: usize = 64 * 1024;
/// Reduce moves by single copy from this size, on areas of at least
/// `REDUCE_SINGLE_COPY_MIN_RANKS` ranks; otherwise through the slots, where contributors copy
/// their pieces and return at once while the root combines the pieces already there (a
/// pipeline over two cores), against a root that reads or collects everything after one
/// synchronization. Tenth session, 2 cores, 4 alternated runs, median µs per call, slots
/// against single copy: np 2, 256-512 KiB even, 1 MiB 141 against 181, 4 MiB 630 against
/// 875 (Open MPI 192 and 908); np 4, 256 KiB 99 against 148, 1 MiB 448 against 489, 8 MiB
/// 3,487 against 4,023; np 8, 256 KiB 286 against 422, 1 MiB 1,044 against 1,263, but 2 MiB
/// 2,152 against 1,970 and 4 MiB 4,506 against 3,902.
const REDUCE_SINGLE_COPY_MIN: usize = 2 * 1024 * 1024;
const REDUCE_SINGLE_COPY_MIN_RANKS: usize = 8;
/// Broadcasts never move by single copy when ranks outnumber cores: the root waits for
/// every reader, each a scheduling round away, while through the slots it runs several
/// pieces ahead. Eighth session, 2 cores, alternated runs, µs per call, slots against single
/// copy: np 4, 256 KiB 50-54 against 60-70, 1 MiB 182-304 against 290-449 (Open MPI
/// 328-470), 4 MiB 923-1,007 against 1,474-1,819; np 8, 1 MiB 458-522 against 666-800 (Open
/// MPI 667-719), 4 MiB 1,670-2,546 against 4,295-5,722, 16 MiB 8,433-10,145 against
/// 16,796-17,799; np 8 at 256 KiB about even. (An earlier measurement, on a loaded
/// machine, had single copy ahead from 256 KiB.)
const BCAST_SINGLE_COPY_MIN_OVERSUBSCRIBED: usize = usize::MAX;
/// The single-copy thresholds with their `OXMPI_COLL_SHM_*` overrides (read once).
struct CopyPolicy {
    /// Allreduce.
    min: usize,
    /// Broadcast (None: by oversubscription, `set_policy`).
    bcast_min: Option<usize>,
    /// Reduce (None: by the area's rank count, `set_policy`).
    reduce_min: Option<usize>,
    /// Reduce on at most this many ranks: the root combines alone.
    reduce_root_ranks: usize,
}

fn copy_policy() -> &'static CopyPolicy {
    use crate::config::{self as c, usize_var};
    static POLICY: std::sync::OnceLock<CopyPolicy> = std::sync::OnceLock::new();
    POLICY.get_or_init(|| CopyPolicy {
        min: usize_var(c::COLL_SHM_COPY_MIN).unwrap_or(SINGLE_COPY_MIN),
        bcast_min: usize_var(c::COLL_SHM_BCAST_COPY_MIN),
        reduce_min: usize_var(c::COLL_SHM_REDUCE_COPY_MIN),
        reduce_root_ranks: usize_var(c::COLL_SHM_REDUCE_ROOT_RANKS).unwrap_or(2),
    })
}

/// Piece of a single-copy reduction: read into a buffer that stays in cache, then combined.
const SINGLE_COPY_PIECE: usize = 64 * 1024;
/// Allreduce pieces up to this size: every rank combines every slot (one step, n reads per
/// rank). Larger: each rank combines one segment of all slots, then all copy all segments.
const ALLREDUCE_FLAT_MAX: usize = 2048;
/// Entry count published by a rank whose input goes the dense way (`reduce_single_copy`).
const NO_ENTRIES: u64 = u64::MAX;

/// The inter-node step of a barrier, run by index 0 between gathering and releasing.
pub type InterNodeStep<'a> = &'a mut dyn FnMut(&mut Engine) -> MpiResult<()>;

/// Where a lane step's entry lies in every rank's lane ring (`Area::lane_step`).
struct LaneStep {
    s: u64,
    /// Ring index of its first line (the flag's), and its number of lines.
    line: usize,
    lines: usize,
    /// Lane step that must be finished everywhere before a writer fills these lines.
    reuses: u64,
}

/// An exchange by single copy under way (`Area::copy_publish`): its step and slot.
pub struct CopyStep {
    s: u64,
    b: usize,
}

/// One rank's view of a communicator's area on this node.
pub struct Area {
    map: memmap2::MmapRaw,
    /// Ranks on the node sharing the area, and this rank's index among them.
    n: usize,
    me: usize,
    /// World rank of each local index (for doorbells).
    worlds: Vec<usize>,
    /// Steps run so far.
    seq: u64,
    /// Step that last published data in each of this rank's slots.
    last_pub: [u64; BUFS],
    /// Every rank is known to have finished every step up to this one.
    done_floor: u64,
    /// Barriers run so far.
    barriers: u64,
    /// Lane steps run so far, and every rank is known to have finished every lane step up
    /// to `lane_floor`.
    lane_seq: u64,
    lane_floor: u64,
    /// Lines of the lane used so far (the same count in every rank's ring: every step takes
    /// its lines in all of them, so every rank knows where every writer put a step).
    lane_head: u64,
    /// First line (counted from the start, not wrapped) of the recent lane steps, by step
    /// number modulo `LANE_LINES` (each step takes a line at least, so the steps still
    /// to be told apart fit).
    lane_starts: Box<[u64; LANE_LINES]>,
    /// The last lane step that starts before the lines the current step reuses: every rank
    /// must have finished it before a writer fills them.
    lane_reuse: u64,
    /// Offset of the lanes in the mapping (`lane_offset`).
    lane_base: usize,
    /// Process ids of the area's ranks when every rank can read every other's memory
    /// (decided at the first large collective, the same on every rank); empty: it cannot.
    single_copy: Option<Vec<u32>>,
    /// Broadcasts and reduces move by single copy from these sizes (`set_policy`).
    bcast_single_copy_min: usize,
    reduce_single_copy_min: usize,
    /// The node runs more ranks than cores (the creator's finding, the same on every rank).
    oversubscribed: bool,
}

// SAFETY: the mapping is only accessed through atomics and slot bytes whose ownership the
// flags hand over; moving it between threads is fine.
unsafe impl Send for Area {}

fn shm_error(what: String, e: std::io::Error) -> MpiError {
    MpiError::new(crate::abi::consts::MPI_ERR_OTHER, format!("shared-memory collectives: {what}: {e}"))
}

fn control_bytes(n: usize) -> usize {
    (LINE * (4 + n)).div_ceil(4096) * 4096
}

/// The size of the collectives area of `n` ranks of a node (one per communicator with
/// company on the node; mpiexec counts the world's in the space a job needs).
pub fn area_bytes(n: usize) -> usize {
    lane_offset(n) + n * LANE_LINES * LINE
}

/// Start of the lane rings.
fn lane_offset(n: usize) -> usize {
    control_bytes(n) + n * BUFS * SLOT_STRIDE
}

impl Area {
    /// Creates the file of an area for `n` ranks (every byte reserved: a lack of memory is
    /// an error here, not a SIGBUS later) and maps it; the creator is local index 0. The
    /// file goes back to the caller, to be released once every rank has mapped it.
    /// `can_read_peers`: this rank can read the memory of every other rank of the area
    /// (`probe_peer_reads`).
    /// `oversubscribed`: the node runs more ranks than it has cores (the creator decides for
    /// all, so every rank takes the same paths).
    pub fn create(
        label: &str,
        worlds: Vec<usize>,
        can_read_peers: bool,
        oversubscribed: bool,
    ) -> MpiResult<(Area, SharedFile)> {
        let file = SharedFile::create(label, area_bytes(worlds.len()))?;
        let mut area = Area::map(file.file(), file.name(), worlds, 0, can_read_peers)?;
        // Before the creator sends the area's name to the others, which publishes it.
        area.oversubscribed_word().store(oversubscribed as u64, Ordering::Relaxed);
        area.set_policy(oversubscribed);
        Ok((area, file))
    }

    /// Maps the area a peer created, as local index `me`.
    pub fn open(path: &str, worlds: Vec<usize>, me: usize, can_read_peers: bool) -> MpiResult<Area> {
        let file = crate::transport::shared_file::open(path)?;
        let mut area = Area::map(&file, path, worlds, me, can_read_peers)?;
        let oversubscribed = area.oversubscribed_word().load(Ordering::Acquire) == 1;
        area.set_policy(oversubscribed);
        Ok(area)
    }

    /// Header word: whether the creator found the node oversubscribed.
    fn oversubscribed_word(&self) -> &AtomicU64 {
        self.word(8)
    }

    fn set_policy(&mut self, oversubscribed: bool) {
        self.oversubscribed = oversubscribed;
        let c = copy_policy();
        self.bcast_single_copy_min =
            c.bcast_min.unwrap_or(if oversubscribed { BCAST_SINGLE_COPY_MIN_OVERSUBSCRIBED } else { SINGLE_COPY_MIN });
        let reduce_default = if self.n >= REDUCE_SINGLE_COPY_MIN_RANKS { REDUCE_SINGLE_COPY_MIN } else { usize::MAX };
        self.reduce_single_copy_min = c.reduce_min.unwrap_or(reduce_default);
    }

    fn map(file: &std::fs::File, path: &str, worlds: Vec<usize>, me: usize, can_read_peers: bool) -> MpiResult<Area> {
        let n = worlds.len();
        let map = memmap2::MmapOptions::new()
            .len(area_bytes(n))
            .map_raw(file)
            .map_err(|e| shm_error(format!("cannot map {path}"), e))?;
        let area = Area {
            map,
            n,
            me,
            worlds,
            seq: 0,
            last_pub: [0; BUFS],
            done_floor: 0,
            barriers: 0,
            lane_seq: 0,
            lane_floor: 0,
            lane_head: 0,
            lane_starts: vec![0; LANE_LINES].into_boxed_slice().try_into().expect("LANE_LINES starts"),
            lane_reuse: 0,
            lane_base: lane_offset(n),
            single_copy: None,
            bcast_single_copy_min: SINGLE_COPY_MIN,
            reduce_single_copy_min: usize::MAX,
            oversubscribed: false,
        };
        // Map every rank's lane now (this rank writes its own, reads the others'): otherwise
        // the first pass over the rings takes a page fault per page and rank, which shows in
        // the first few hundred small collectives.
        let lanes = lane_offset(n);
        // SAFETY: the range lies inside the mapping (lane_offset is page-aligned). The advice
        // only fills in page tables, writing no data; an old kernel's EINVAL leaves the faults
        // to first use.
        unsafe {
            libc::madvise(
                area.map.as_mut_ptr().add(lanes) as *mut libc::c_void,
                area_bytes(n) - lanes,
                libc::MADV_POPULATE_WRITE,
            );
        }
        // Before the attach mark, which publishes it.
        area.can_read_peers(me).store(if can_read_peers { 1 } else { 2 }, Ordering::Relaxed);
        area.attached(me).store(1, Ordering::Release);
        Ok(area)
    }

    pub fn size(&self) -> usize {
        self.n
    }

    pub fn rank(&self) -> usize {
        self.me
    }

    /// Whether the node runs more ranks than cores (decided by the area's creator for all).
    pub fn oversubscribed(&self) -> bool {
        self.oversubscribed
    }

    fn word(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= area_bytes(self.n));
        // SAFETY: the offset is inside the mapping and 8-aligned (page-aligned base); these
        // words are only accessed atomically.
        unsafe { &*(self.map.as_ptr().add(off) as *const AtomicU64) }
    }

    /// Writers waiting for `done` stores (they want doorbells).
    fn done_waiters(&self) -> &AtomicU64 {
        self.word(0)
    }

    /// Ranks inside `wait` now (a line of its own).
    fn waiting(&self) -> &AtomicU64 {
        self.word(LINE * (3 + self.n))
    }

    /// Barrier arrivals so far, all barriers counted (a line of its own: every rank adds).
    fn arrivals(&self) -> &AtomicU64 {
        self.word(LINE * (1 + self.n))
    }

    /// The last barrier released (a line of its own: the waiters read it).
    fn released(&self) -> &AtomicU64 {
        self.word(LINE * (2 + self.n))
    }

    fn done(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.n);
        self.word(LINE * (1 + i))
    }

    fn attached(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.n);
        self.word(LINE * (1 + i) + 8)
    }

    /// 1: rank `i` can read every other rank's memory; 2: it cannot (set before `attached`).
    fn can_read_peers(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.n);
        self.word(LINE * (1 + i) + 24)
    }

    /// Lane steps rank `i` finished.
    fn lane_done(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.n);
        self.word(LINE * (1 + i) + 16)
    }

    /// Offset of line `line` (a ring index) of rank `i`'s lane.
    fn lane_line_offset(&self, i: usize, line: usize) -> usize {
        assert!(i < self.n && line < LANE_LINES);
        self.lane_base + (i * LANE_LINES + line) * LINE
    }

    /// Flag of rank `i`'s lane line `line`: the lane step that last published an entry
    /// starting there. Only ever a step number (payload bytes never touch a line's first
    /// word), so it only grows.
    fn lane_flag(&self, i: usize, line: usize) -> &AtomicU64 {
        self.word(self.lane_line_offset(i, line))
    }

    /// Copies the payload of rank `i`'s lane entry for step `st` into `out` (after its flag
    /// says published; the owner does not rewrite it before every rank finished the step).
    fn lane_read(&self, i: usize, st: &LaneStep, out: &mut [u8]) {
        assert!(out.len() <= st.lines * LANE_LINE_CAP);
        if out.len() <= LANE_LINE_CAP {
            // Most entries: one line, no chunking.
            out.copy_from_slice(self.lane_line_payload(i, st.line, 0, out.len()));
            return;
        }
        for (k, chunk) in out.chunks_mut(LANE_LINE_CAP).enumerate() {
            let off = self.lane_line_offset(i, st.line + k) + 8;
            // SAFETY: inside the mapping (the entry's lines do not wrap); see above.
            let src = unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(off), chunk.len()) };
            chunk.copy_from_slice(src);
        }
    }

    /// Bytes `at..at + len` of the payload of rank `i`'s lane line `line` (within the line).
    fn lane_line_payload(&self, i: usize, line: usize, at: usize, len: usize) -> &[u8] {
        assert!(at + len <= LANE_LINE_CAP);
        let off = self.lane_line_offset(i, line) + 8 + at;
        // SAFETY: inside the mapping, past the line's flag word; readers call it for
        // published entries, which the owner does not rewrite before every rank finished them.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(off), len) }
    }

    fn slot_offset(&self, i: usize, b: usize) -> usize {
        assert!(i < self.n && b < BUFS);
        control_bytes(self.n) + (i * BUFS + b) * SLOT_STRIDE
    }

    fn flag(&self, i: usize, b: usize) -> &AtomicU64 {
        self.word(self.slot_offset(i, b))
    }

    fn flag2(&self, i: usize, b: usize) -> &AtomicU64 {
        self.word(self.slot_offset(i, b) + 8)
    }

    /// Payload of slot `b` of rank `i` (`len` bytes). Readers call it after seeing the flag
    /// of the step they read, which the owner does not overwrite before they store `done`.
    fn data(&self, i: usize, b: usize, len: usize) -> &[u8] {
        assert!(len <= SLOT_CAP);
        // SAFETY: inside the mapping; the flag protocol keeps the owner from writing these
        // bytes while readers of the current step may read them.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(self.slot_offset(i, b) + SLOT_HEADER), len) }
    }

    /// This rank's own slot payload, to fill before publishing it.
    #[allow(clippy::mut_from_ref)]
    fn own_data(&self, b: usize, range: std::ops::Range<usize>) -> &mut [u8] {
        assert!(range.end <= SLOT_CAP);
        // SAFETY: inside the mapping; only this rank writes its slots, and only bytes no
        // reader of the current or an unfinished step reads (`ensure_free`, segment ownership).
        unsafe {
            std::slice::from_raw_parts_mut(
                self.map.as_mut_ptr().add(self.slot_offset(self.me, b) + SLOT_HEADER + range.start),
                range.len(),
            )
        }
    }

    /// Whether every rank mapped the area (the creator unlinks the file then).
    pub fn all_attached(&self) -> bool {
        (0..self.n).all(|i| self.attached(i).load(Ordering::Acquire) == 1)
    }

    /// Tells the creator (waiting for every rank to map the area) that this rank did.
    pub fn announce_attached(&self, e: &Engine) {
        if let Some(seg) = e.segment() {
            seg.notify(self.worlds[0]);
        }
    }

    /// Whether a rank of the area may be waiting (after a flag store, before ringing
    /// doorbells): one shared word instead of every peer's sleep mark, which at 8 ranks was 7
    /// cache-line reads per published step. Pairs with the increment in `wait`: the barrier
    /// here is the doorbell's (a compiler fence when every rank registered for membarrier,
    /// as a rank rechecks what it waits for behind a heavy barrier before it sleeps).
    /// With one peer, its sleep mark is one line too: the shared word would only add a
    /// read-modify-write per wait and a line transfer per notification (barrier at np 2:
    /// 0.23-0.25 µs without it, 0.31-0.42 with it).
    fn anyone_waiting(&self, e: &Engine) -> bool {
        if self.n <= 2 {
            return true;
        }
        match e.segment() {
            Some(seg) => seg.notify_many(std::iter::empty()),
            None => fence(Ordering::SeqCst),
        }
        self.waiting().load(Ordering::Relaxed) != 0
    }

    /// Rings the doorbell of local rank `i` if it sleeps (after a flag store it waits for).
    fn notify(&self, e: &Engine, i: usize) {
        if let Some(seg) = e.segment().filter(|_| self.anyone_waiting(e)) {
            seg.notify(self.worlds[i]);
        }
    }

    fn notify_others(&self, e: &Engine) {
        if let Some(seg) = e.segment().filter(|_| self.anyone_waiting(e)) {
            seg.notify_many((0..self.n).filter(|&i| i != self.me).map(|i| self.worlds[i]));
        }
    }

    /// Waits for `ready` (see the free `wait`), counted in `waiting` so that notifiers know
    /// to ring doorbells.
    fn wait(&self, e: &mut Engine, ready: impl FnMut() -> bool) {
        if self.n <= 2 {
            return wait(e, ready);
        }
        // SeqCst read-modify-write: a full barrier before `ready` is checked again.
        self.waiting().fetch_add(1, Ordering::SeqCst);
        wait(e, ready);
        self.waiting().fetch_sub(1, Ordering::Release);
    }

    /// Starts a lane step for `len` bytes (at most `LANE_ENTRY_MAX`): its number, where its
    /// lines are, and which earlier step must be finished everywhere before a writer fills
    /// them. Every rank runs the same steps with the same lengths, so all agree on the layout.
    fn lane_step(&mut self, len: usize) -> LaneStep {
        assert!(len <= LANE_ENTRY_MAX);
        let ring = LANE_LINES as u64;
        let lines = len.div_ceil(LANE_LINE_CAP).max(1) as u64;
        let mut start = self.lane_head;
        if start % ring + lines > ring {
            // Entries do not wrap: skip to the ring's first line.
            start += ring - start % ring;
        }
        self.lane_head = start + lines;
        self.lane_seq += 1;
        let s = self.lane_seq;
        // The steps that used these lines before all start before `start + lines - ring`;
        // the last of them is the one to wait for. Steps after `lane_reuse` all start within
        // the last `ring` lines, so their starts are still recorded.
        while self.lane_reuse + 1 < s
            && self.lane_starts[((self.lane_reuse + 1) % ring) as usize] + ring < start + lines
        {
            self.lane_reuse += 1;
        }
        self.lane_starts[(s % ring) as usize] = start;
        LaneStep { s, line: (start % ring) as usize, lines: lines as usize, reuses: self.lane_reuse }
    }

    /// Ends lane step `s` (as `finish`).
    fn lane_finish(&self, e: &Engine, s: u64) {
        self.lane_done(self.me).store(s, Ordering::Release);
        self.ring_waiting_writers(e);
    }

    /// Publishes `bytes` in this rank's lane entry for step `st`, once no rank may still read
    /// a step that used its lines before (every rank finished it).
    fn lane_publish(&mut self, e: &mut Engine, st: &LaneStep, bytes: &[u8]) {
        if st.reuses > self.lane_floor {
            let others_done =
                |a: &Area| (0..a.n).filter(|&j| j != a.me).map(|j| a.lane_done(j).load(Ordering::Acquire)).min();
            let floor = |a: &Area| others_done(a).unwrap_or(u64::MAX);
            if floor(self) < st.reuses {
                self.done_waiters().fetch_add(1, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                self.wait(e, || floor(self) >= st.reuses);
                self.done_waiters().fetch_sub(1, Ordering::SeqCst);
            }
            self.lane_floor = floor(self);
        }
        if bytes.len() <= LANE_LINE_CAP {
            // Most entries: one line, payload then flag.
            let off = self.lane_line_offset(self.me, st.line) + 8;
            // SAFETY: this rank's own lane line, inside the mapping, past the flag word; no rank
            // reads it any more (see above).
            let dst = unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(off), bytes.len()) };
            dst.copy_from_slice(bytes);
            self.lane_flag(self.me, st.line).store(st.s, Ordering::Release);
            return;
        }
        for (k, chunk) in bytes.chunks(LANE_LINE_CAP).enumerate() {
            let off = self.lane_line_offset(self.me, st.line + k) + 8;
            // SAFETY: this rank's own lane lines, inside the mapping (entries do not wrap),
            // past the flag word; no rank reads them any more (see above).
            let dst = unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(off), chunk.len()) };
            dst.copy_from_slice(chunk);
        }
        // Every line of the entry gets the step's flag, after all its payload: a reader that
        // needs only some lines (a scatter member, its piece) waits on the last of them and
        // finds flag and piece in the same transfer. Harmless to the others: `s` exceeds every
        // step that used these lines, and readers of later entries wait for later steps.
        for k in (0..bytes.len().div_ceil(LANE_LINE_CAP)).skip(1) {
            self.lane_flag(self.me, st.line + k).store(st.s, Ordering::Release);
        }
        self.lane_flag(self.me, st.line).store(st.s, Ordering::Release);
    }

    /// Waits until rank `i`'s lane entry of step `st` holds bytes `range` (its lines'
    /// flags say published).
    fn lane_wait_range(&self, e: &mut Engine, i: usize, st: &LaneStep, range: std::ops::Range<usize>) {
        let last = range.end.saturating_sub(1) / LANE_LINE_CAP;
        let f = self.lane_flag(i, st.line + last);
        if f.load(Ordering::Acquire) < st.s {
            self.wait(e, || f.load(Ordering::Acquire) >= st.s);
        }
    }

    /// Waits until every other rank's lane entry of step `st` holds bytes `range(j)`: one
    /// wait for all of them (entering a wait announces it on the shared `waiting` word, and
    /// with ranks outnumbering cores each wait is likely to yield the CPU at least once).
    fn lane_wait_all(&self, e: &mut Engine, st: &LaneStep, range: &impl Fn(usize) -> std::ops::Range<usize>) {
        let last_line = |j: usize| st.line + range(j).end.saturating_sub(1) / LANE_LINE_CAP;
        let ready =
            |a: &Area| (0..a.n).all(|j| j == a.me || a.lane_flag(j, last_line(j)).load(Ordering::Acquire) >= st.s);
        if !ready(self) {
            self.wait(e, || ready(self));
        }
    }

    /// Copies bytes `at..at + out.len()` of rank `i`'s lane entry for step `st` into `out`
    /// (after `lane_wait_range` for them).
    fn lane_read_at(&self, i: usize, st: &LaneStep, at: usize, out: &mut [u8]) {
        assert!(at + out.len() <= st.lines * LANE_LINE_CAP);
        if at + out.len() <= LANE_LINE_CAP {
            out.copy_from_slice(self.lane_line_payload(i, st.line, at, out.len()));
            return;
        }
        let mut done = 0;
        while done < out.len() {
            let pos = at + done;
            let (line, within) = (pos / LANE_LINE_CAP, pos % LANE_LINE_CAP);
            let n = (LANE_LINE_CAP - within).min(out.len() - done);
            let off = self.lane_line_offset(i, st.line + line) + 8 + within;
            // SAFETY: inside the mapping (the entry's lines do not wrap); published, and not
            // rewritten before every rank finished the step.
            let src = unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(off), n) };
            out[done..done + n].copy_from_slice(src);
            done += n;
        }
    }

    /// Waits for rank `i`'s lane entry of step `st` to be published.
    fn lane_wait(&self, e: &mut Engine, i: usize, st: &LaneStep) {
        let f = self.lane_flag(i, st.line);
        if f.load(Ordering::Acquire) < st.s {
            self.wait(e, || f.load(Ordering::Acquire) >= st.s);
        }
    }

    /// Starts loading the line of rank `i`'s lane where the next step most likely starts
    /// (see `prefetch_next`).
    fn lane_prefetch_next(&self, i: usize) {
        prefetch(self.lane_flag(i, (self.lane_head % LANE_LINES as u64) as usize));
    }

    /// Starts a step: its number and slot.
    fn step(&mut self) -> (u64, usize) {
        self.seq += 1;
        (self.seq, (self.seq % BUFS as u64) as usize)
    }

    /// Ends step `s`: this rank read all it needed of it.
    fn finish(&self, e: &Engine, s: u64) {
        self.done(self.me).store(s, Ordering::Release);
        self.ring_waiting_writers(e);
    }

    /// After a `done` store: rings writers waiting for it.
    fn ring_waiting_writers(&self, e: &Engine) {
        // Pairs with the fetch_add in `ensure_free`: either the writer sees this store, or we
        // see it waiting and ring. A writer that goes to sleep announces it and rechecks
        // `done` behind the doorbell's barrier, so the barrier here is the notifier's half of
        // that pairing: a compiler fence when every rank registered for membarrier (the
        // sleeper's heavy barrier covers us), else a full fence.
        match e.segment() {
            Some(seg) => seg.notify_many(std::iter::empty()),
            None => fence(Ordering::SeqCst),
        }
        if self.done_waiters().load(Ordering::Relaxed) != 0 {
            self.notify_others(e);
        }
    }

    /// Waits until local rank `only` (None: every other rank) finished step `s`.
    fn wait_done(&self, e: &mut Engine, s: u64, only: Option<usize>) {
        let all_done = |a: &Area| {
            (0..a.n)
                .filter(|&j| j != a.me && only.is_none_or(|o| o == j))
                .all(|j| a.done(j).load(Ordering::Acquire) >= s)
        };
        if !all_done(self) {
            self.done_waiters().fetch_add(1, Ordering::SeqCst);
            // The other half of the pairing in `finish` (store `done`, fence, load waiters).
            fence(Ordering::SeqCst);
            self.wait(e, || all_done(self));
            self.done_waiters().fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Waits until no rank still reads what this rank last published in slot `b`.
    fn ensure_free(&mut self, e: &mut Engine, b: usize) {
        let p = self.last_pub[b];
        if p <= self.done_floor {
            return;
        }
        self.wait_done(e, p, None);
        // Readers are usually further along than `p`: remember how far, so the next steps
        // need not read their `done` lines (each read is a cache-line transfer).
        let floor = (0..self.n).filter(|&j| j != self.me).map(|j| self.done(j).load(Ordering::Acquire)).min();
        self.done_floor = floor.unwrap_or(p).max(p);
    }

    /// Publishes `bytes` in slot `b` for step `s` (after `ensure_free`).
    fn publish(&mut self, e: &mut Engine, s: u64, b: usize, bytes: &[u8]) {
        self.ensure_free(e, b);
        self.own_data(b, 0..bytes.len()).copy_from_slice(bytes);
        self.flag(self.me, b).store(s, Ordering::Release);
        self.last_pub[b] = s;
    }

    /// Waits for rank `i`'s slot `b` to be published for step `s`.
    fn wait_flag(&self, e: &mut Engine, i: usize, b: usize, s: u64) {
        let f = self.flag(i, b);
        if f.load(Ordering::Acquire) < s {
            self.wait(e, || f.load(Ordering::Acquire) >= s);
        }
    }

    /// Starts loading the line of rank `i`'s slot for the step after `s` (flag and inline
    /// payload) while this rank returns to the program: a reader of consecutive collectives
    /// then often finds it published and cached, instead of paying a cache-line transfer at
    /// its next wait. A hint only; a line loaded too early is simply invalidated again.
    fn prefetch_next(&self, i: usize, s: u64) {
        prefetch(self.flag(i, ((s + 1) % BUFS as u64) as usize));
    }

    fn prefetch_next_all(&self, s: u64) {
        for j in (0..self.n).filter(|&j| j != self.me) {
            self.prefetch_next(j, s);
        }
    }

    fn wait_all_flags(&self, e: &mut Engine, b: usize, s: u64) {
        let ready = |a: &Area| (0..a.n).all(|j| j == a.me || a.flag(j, b).load(Ordering::Acquire) >= s);
        if !ready(self) {
            self.wait(e, || ready(self));
        }
    }

    // ----- single copy -----

    /// Whether `len` bytes (at least the caller's threshold) may move by single copy here; the
    /// same answer on every rank (it depends on every rank's probe, read once all attached).
    fn single_copy(&mut self, e: &mut Engine, len: usize) -> bool {
        len > 0 && self.peers_readable(e)
    }

    /// Whether every rank of the area can read every other's memory (single copy); the same
    /// answer on every rank (every rank's probe, read once all ranks attached).
    pub fn peers_readable(&mut self, e: &mut Engine) -> bool {
        if self.single_copy.is_none() {
            // Every rank attaches at its first collective on the communicator, so they all
            // will: this one runs on all of them.
            if !self.all_attached() {
                self.wait(e, || self.all_attached());
            }
            let all_can = (0..self.n).all(|i| self.can_read_peers(i).load(Ordering::Acquire) == 1);
            let pids = match e.segment() {
                Some(seg) if all_can => (0..self.n).map(|i| seg.peer_identity(self.worlds[i]).0).collect(),
                _ => Vec::new(),
            };
            self.single_copy = Some(pids);
        }
        self.single_copy.as_ref().is_some_and(|p| !p.is_empty())
    }

    /// Publishes the addresses (and sizes) of this rank's buffers for step `s` in slot `b`.
    fn publish_addrs<const N: usize>(&mut self, e: &mut Engine, s: u64, b: usize, addrs: [u64; N]) {
        let bytes: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
        self.publish(e, s, b, &bytes);
    }

    /// The words rank `i` published in slot `b` (after its flag).
    fn peer_addrs<const N: usize>(&self, i: usize, b: usize) -> [u64; N] {
        let d = self.data(i, b, 8 * N);
        std::array::from_fn(|k| u64::from_le_bytes(d[8 * k..8 * k + 8].try_into().unwrap()))
    }

    /// Reads `into.len()` bytes at `addr` in local rank `i`'s memory.
    fn read_peer(&self, i: usize, addr: u64, into: &mut [u8]) -> MpiResult<()> {
        let pid = self.single_copy.as_ref().expect("single copy was decided")[i];
        crate::transport::shm::cma_read(pid, addr, into)
            .map_err(|err| shm_error(format!("single-copy read of {} bytes from local rank {i}", into.len()), err))
    }

    /// `out` = every rank's bytes `at..at + out.len()` folded in `fold_order` (`input` is
    /// this rank's whole input; the others' are at `addrs`), a piece at a time so
    /// what is read stays in cache. Builtin operations only (they may be split anywhere
    /// between elements).
    fn combine_from_peers(
        &self,
        input: &[u8],
        addrs: &[u64],
        at: usize,
        out: &mut [u8],
        red: &Reduction,
    ) -> MpiResult<()> {
        let piece = (SINGLE_COPY_PIECE / red.elem_size()).max(1) * red.elem_size();
        // Allocated at the first peer read into it (a reduce root on 2 ranks reads straight
        // into its result and needs none: a zeroed 64 KiB buffer cost a memset per call).
        let mut tmp = Vec::new();
        let out_len = out.len();
        for (k, o) in out.chunks_mut(piece).enumerate() {
            let start = at + k * piece;
            let range = start..start + o.len();
            let (seed, rest) = red.fold_order(self.n);
            if seed == self.me {
                o.copy_from_slice(&input[range.clone()]);
            } else {
                self.read_peer(seed, addrs[seed] + start as u64, o)?;
            }
            for j in rest {
                if j == self.me {
                    red.apply(&input[range.clone()], o);
                } else {
                    if tmp.len() < o.len() {
                        tmp.resize(piece.min(out_len), 0u8);
                    }
                    let t = &mut tmp[..o.len()];
                    self.read_peer(j, addrs[j] + start as u64, t)?;
                    red.apply(t, o);
                }
            }
        }
        Ok(())
    }

    /// Whether exchanges may move by single copy here (`copy_publish`); the same answer on
    /// every rank.
    pub fn can_copy(&mut self, e: &mut Engine) -> bool {
        self.n > 1 && self.single_copy(e, 1)
    }

    /// Starts an exchange by single copy (allgather, all-to-all of large blocks; after
    /// `can_copy`): publishes `addrs[k]`, where rank k finds the bytes this rank has for it
    /// (which stay unchanged until `copy_finish`), and waits until every rank published.
    pub fn copy_publish(&mut self, e: &mut Engine, addrs: &[u64]) -> CopyStep {
        assert_eq!(addrs.len(), self.n);
        let (s, b) = self.step();
        let bytes: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
        self.publish(e, s, b, &bytes);
        self.notify_others(e);
        self.wait_all_flags(e, b, s);
        CopyStep { s, b }
    }

    /// Reads `into.len()` bytes from rank `j`, `at` bytes into what it published for this
    /// rank (`copy_publish`).
    pub fn copy_read(&self, st: &CopyStep, j: usize, at: usize, into: &mut [u8]) -> MpiResult<()> {
        let d = self.data(j, st.b, 8 * self.n);
        let addr = u64::from_le_bytes(d[8 * self.me..8 * self.me + 8].try_into().unwrap());
        self.read_peer(j, addr.wrapping_add(at as u64), into)
    }

    /// Reduce-scatter by single copy (after `can_copy`): every rank publishes where its
    /// `input` is (the same length everywhere), then combines bytes `seg` of every rank's
    /// input into `out`, in rank order, reading the others' straight from their memory.
    /// Builtin operations only (split anywhere between elements).
    pub fn reduce_scatter_copy(
        &mut self,
        e: &mut Engine,
        input: &[u8],
        seg: std::ops::Range<usize>,
        out: &mut [u8],
        red: &Reduction,
    ) -> MpiResult<()> {
        let st = self.copy_publish(e, &vec![input.as_ptr() as u64; self.n]);
        let inputs: Vec<u64> = (0..self.n)
            .map(|j| {
                let d = self.data(j, st.b, 8 * self.n);
                u64::from_le_bytes(d[8 * self.me..8 * self.me + 8].try_into().unwrap())
            })
            .collect();
        let result = self.combine_from_peers(input, &inputs, seg.start, out, red);
        self.copy_finish(e, st);
        result
    }

    /// Ends an exchange by single copy: returns once every rank finished reading this rank's
    /// bytes (also after a failed read, so that no rank waits forever).
    pub fn copy_finish(&mut self, e: &mut Engine, st: CopyStep) {
        // Everyone published for this step, so everyone finished the steps before it.
        self.done_floor = self.done_floor.max(st.s - 1);
        self.finish(e, st.s);
        self.wait_done(e, st.s, None);
        self.done_floor = self.done_floor.max(st.s);
    }

    fn bcast_single_copy(&mut self, e: &mut Engine, data: &mut [u8], root: usize) -> MpiResult<()> {
        let (s, b) = self.step();
        if self.me == root {
            self.publish_addrs(e, s, b, [data.as_ptr() as u64]);
            self.notify_others(e);
            self.finish(e, s);
            // The readers read our buffer until they finish.
            self.wait_done(e, s, None);
            self.done_floor = self.done_floor.max(s);
            Ok(())
        } else {
            self.wait_flag(e, root, b, s);
            let result = self.read_peer(root, self.peer_addrs::<1>(root, b)[0], data);
            self.finish(e, s);
            result
        }
    }

    /// Scatter by single copy (after `peers_readable`): the root publishes the address of
    /// every rank's block in its memory (`addrs[j]`; its own is unused) and returns once every
    /// member has read its block straight into its `out`. When ranks outnumber cores this
    /// asks each member for one turn, where pieces through the rings fill them (np 8, 64 KiB
    /// blocks: 42 pieces a call) and a rendezvous per member takes three turns.
    pub fn scatter_single_copy(&mut self, e: &mut Engine, addrs: &[u64], out: &mut [u8], root: usize) -> MpiResult<()> {
        let (s, b) = self.step();
        if self.me == root {
            assert_eq!(addrs.len(), self.n);
            let bytes: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
            self.publish(e, s, b, &bytes);
            self.notify_others(e);
            self.finish(e, s);
            // The members read our buffer until they finish.
            self.wait_done(e, s, None);
            self.done_floor = self.done_floor.max(s);
            Ok(())
        } else {
            self.wait_flag(e, root, b, s);
            let at = 8 * self.me;
            let addr = u64::from_le_bytes(self.data(root, b, at + 8)[at..].try_into().expect("8 bytes"));
            let result = self.read_peer(root, addr, out);
            self.finish(e, s);
            result
        }
    }

    /// Gather by single copy (after `peers_readable`): every member publishes the address of
    /// its `input` and waits until the root has finished the step; the root reads each
    /// member's block as soon as it is published, through `read_into(j, read)`, which calls
    /// `read` on the memory that receives rank j's block.
    pub fn gather_single_copy(
        &mut self,
        e: &mut Engine,
        input: &[u8],
        root: usize,
        mut read_into: impl FnMut(usize, &mut dyn FnMut(&mut [u8]) -> MpiResult<()>) -> MpiResult<()>,
    ) -> MpiResult<()> {
        let (s, b) = self.step();
        if self.me != root {
            self.publish_addrs(e, s, b, [input.as_ptr() as u64, 0]);
            self.notify(e, root);
            // The root reads our input until it finishes.
            self.wait_done(e, s, Some(root));
            self.finish(e, s);
            return Ok(());
        }
        let mut result = Ok(());
        for j in (root + 1..self.n).chain(0..root) {
            self.wait_flag(e, j, b, s);
            if result.is_ok() {
                let addr = self.peer_addrs::<2>(j, b)[0];
                let area = &*self;
                result = read_into(j, &mut |dst| area.read_peer(j, addr, dst));
            }
        }
        // Finished even after a failure, so no member waits forever.
        self.finish(e, s);
        result
    }

    /// The sparse way of `reduce_single_copy` (allreduce): reads every other rank's entries
    /// (`addrs[j]`: input, result, index and value addresses, entry count) and folds them with
    /// this rank's `mine` into the dense result `out`, in rank order.
    fn sparse_fold(&self, v: &Vecs, mine: &Entries, addrs: &[[u64; 5]], out: &mut [u8]) -> MpiResult<()> {
        let esize = v.elem_size();
        let mut theirs = Vec::with_capacity(self.n);
        for (j, a) in addrs.iter().enumerate().filter(|&(j, _)| j != self.me) {
            let nnz = a[4] as usize;
            let (mut idx, mut val) = (vec![0u8; nnz * 4], vec![0u8; nnz * esize]);
            if nnz > 0 {
                self.read_peer(j, a[2], &mut idx)?;
                self.read_peer(j, a[3], &mut val)?;
            }
            theirs.push(v.entries_from(&idx, val)?);
        }
        let mut others = theirs.iter();
        let lists: Vec<&Entries> =
            (0..self.n).map(|j| if j == self.me { mine } else { others.next().expect("one per peer") }).collect();
        v.fold_into(&lists, out);
        Ok(())
    }

    /// Reduce (`root` Some, its `out` the result) or allreduce (`root` None, every `out`) by
    /// single copy: rank k combines segment k of the result from every rank's input (in
    /// parallel), into its own output or, for a reduce's non-root, into a scratch segment;
    /// then the ranks that want the result copy the other segments from their owners.
    fn reduce_single_copy(
        &mut self,
        e: &mut Engine,
        input: &[u8],
        out: Option<&mut [u8]>,
        red: &Reduction,
        root: Option<usize>,
    ) -> MpiResult<()> {
        let (esize, n) = (red.elem_size(), self.n);
        let elems = input.len() / esize;
        // A reduce on few ranks: the root combines everything itself; splitting would put a
        // member's combining and a second copy of its segment on the root's path (np 2).
        let alone = root.filter(|_| n <= copy_policy().reduce_root_ranks);
        let seg = |k: usize| match alone {
            Some(r) if k == r => 0..elems * esize,
            Some(_) => 0..0,
            None => (k * elems / n * esize)..((k + 1) * elems / n * esize),
        };
        let mine = seg(self.me);
        let mut scratch = Vec::new();
        // `target` holds the result's bytes `base..`: all of them, or this rank's segment.
        let (target, base) = match out {
            Some(o) => (o, 0),
            None => {
                scratch.resize(mine.len(), 0u8);
                (&mut scratch[..], mine.start)
            }
        };
        // An allreduce's input may travel as entries (`sparse_fold`); NO_ENTRIES: dense.
        let vecs = root.is_none().then(|| Vecs::new(red, elems, n));
        let entries = vecs.as_ref().and_then(|v| v.entries_of(input));
        let (idx_addr, val_addr, nnz) = match &entries {
            Some(en) => (en.idx_bytes().as_ptr() as u64, en.val_bytes().as_ptr() as u64, en.len() as u64),
            None => (0, 0, NO_ENTRIES),
        };
        let (s, b) = self.step();
        // The address of result byte 0 as seen in this rank's memory (peers add offsets).
        let result_addr = (target.as_ptr() as u64).wrapping_sub(base as u64);
        self.publish_addrs(e, s, b, [input.as_ptr() as u64, result_addr, idx_addr, val_addr, nnz]);
        self.notify_others(e);
        self.wait_all_flags(e, b, s);
        let addrs: Vec<[u64; 5]> = (0..n)
            .map(|j| if j == self.me { [0, 0, idx_addr, val_addr, nnz] } else { self.peer_addrs(j, b) })
            .collect();
        // Every rank sees the same published words, so all take the same way.
        if let (Some(v), Some(en)) = (&vecs, entries)
            && addrs.iter().all(|a| a[4] != NO_ENTRIES)
            && v.entries_fit(addrs.iter().map(|a| a[4] as usize).sum())
        {
            let result = self.sparse_fold(v, &en, &addrs, target);
            self.finish(e, s);
            // The others read our entries until they finish.
            self.wait_done(e, s, None);
            self.done_floor = self.done_floor.max(s);
            drop(en);
            return result;
        }
        let inputs: Vec<u64> = addrs.iter().map(|a| a[0]).collect();
        let mut result =
            self.combine_from_peers(input, &inputs, mine.start, &mut target[mine.start - base..mine.end - base], red);
        // Published even after a failure, so no rank waits forever.
        self.flag2(self.me, b).store(s, Ordering::Release);
        self.notify_others(e);
        if root.is_none_or(|r| r == self.me) {
            for k in (1..n).map(|d| (self.me + d) % n) {
                let f = self.flag2(k, b);
                if f.load(Ordering::Acquire) < s {
                    self.wait(e, || f.load(Ordering::Acquire) >= s);
                }
                let r = seg(k);
                if result.is_ok() && !r.is_empty() {
                    result = self.read_peer(k, addrs[k][1].wrapping_add(r.start as u64), &mut target[r]);
                }
            }
        }
        self.finish(e, s);
        // The others read our input and result segment until they finish.
        self.wait_done(e, s, None);
        self.done_floor = self.done_floor.max(s);
        result
    }

    // ----- the collectives -----

    /// Barrier: everyone counts its arrival on the shared counter. Alone on the node (no
    /// `between`), the last to arrive releases everyone at once: one wake-up on the critical
    /// path instead of two (to index 0, then from it), which counts when ranks outnumber cores
    /// and each wake-up waits for a core. With `between` (the inter-node step), the last to
    /// arrive wakes index 0, which runs it and then releases everyone.
    pub fn barrier(&mut self, e: &mut Engine, between: Option<InterNodeStep<'_>>) -> MpiResult<()> {
        let (s, _) = self.step();
        if self.n == 2 && between.is_none() {
            return self.pair_barrier(e, s);
        }
        self.barriers += 1;
        let (nb, all) = (self.barriers, self.barriers * self.n as u64);
        let mut result = Ok(());
        let arrived = self.arrivals().fetch_add(1, Ordering::AcqRel) + 1;
        let released = |a: &Area| a.released().load(Ordering::Acquire) >= nb;
        match between {
            None if arrived == all => {
                self.released().store(nb, Ordering::Release);
                self.notify_others(e);
            }
            Some(between) if self.me == 0 => {
                let arrivals = self.arrivals();
                if arrivals.load(Ordering::Acquire) < all {
                    self.wait(e, || arrivals.load(Ordering::Acquire) >= all);
                }
                result = between(e);
                self.released().store(nb, Ordering::Release);
                self.notify_others(e);
            }
            between => {
                if between.is_some() && arrived == all {
                    self.notify(e, 0);
                }
                if !released(self) {
                    self.wait(e, || released(self));
                }
            }
        }
        // Everyone arrived at step s, so everyone finished the steps (and lane steps) before it.
        self.done_floor = self.done_floor.max(s - 1);
        self.lane_floor = self.lane_floor.max(self.lane_seq);
        self.finish(e, s);
        result
    }

    /// Barrier of two ranks alone on the node (step `s`): each stores its arrival in its own
    /// line (`done`, which says it finished every step up to `s`) and waits for the other's:
    /// one line transfer each way, both at once, where the shared counter takes three in a
    /// row (both increments, then the release).
    fn pair_barrier(&mut self, e: &mut Engine, s: u64) -> MpiResult<()> {
        let other = 1 - self.me;
        self.done(self.me).store(s, Ordering::Release);
        // Rings the other if it sleeps (in its wait below, or for a step of ours); with two
        // ranks its sleep mark is the only waiter to check.
        self.notify(e, other);
        let arrived = self.done(other);
        if arrived.load(Ordering::Acquire) < s {
            self.wait(e, || arrived.load(Ordering::Acquire) >= s);
        }
        // The other finished every step up to s, lane steps included.
        self.done_floor = self.done_floor.max(s);
        self.lane_floor = self.lane_floor.max(self.lane_seq);
        Ok(())
    }

    /// Whether a broadcast of `len` bytes among two ranks is better left to point to point
    /// (the same answer on both: it depends on the size and the node-wide policy). From the
    /// single-copy size (never when ranks outnumber cores) a rendezvous message is copied by
    /// both ranks at once, the sender writing chunks while the receiver reads, where a
    /// single-copy broadcast has the receiver copy alone while the root waits (np 2, 1 MiB:
    /// 38-45 against 98-104 µs; 256 KiB: 13-15 against 16-18).
    pub fn bcast_by_pair(&self, len: usize) -> bool {
        self.n == 2 && len >= self.bcast_single_copy_min
    }

    /// Broadcast of `data` (packed bytes, the same length everywhere) from local `root`.
    pub fn bcast(&mut self, e: &mut Engine, data: &mut [u8], root: usize) -> MpiResult<()> {
        if data.len() >= self.bcast_single_copy_min && self.single_copy(e, data.len()) {
            return self.bcast_single_copy(e, data, root);
        }
        if data.len() <= LANE_CAP {
            let st = self.lane_step(data.len());
            if self.me == root {
                self.lane_publish(e, &st, data);
                self.notify_others(e);
            } else {
                self.lane_wait(e, root, &st);
                self.lane_read(root, &st, data);
                self.lane_prefetch_next(root);
            }
            self.lane_finish(e, st.s);
            return Ok(());
        }
        for piece in data.chunks_mut(SLOT_CAP) {
            let (s, b) = self.step();
            if self.me == root {
                self.publish(e, s, b, piece);
                self.notify_others(e);
            } else {
                self.wait_flag(e, root, b, s);
                piece.copy_from_slice(self.data(root, b, piece.len()));
                self.prefetch_next(root, s);
            }
            self.finish(e, s);
        }
        Ok(())
    }

    /// Reduction of every rank's `input` to local `root`, in local rank order; `out` (the
    /// root's) receives the result. `input` and `out` do not overlap.
    pub fn reduce(
        &mut self,
        e: &mut Engine,
        input: &[u8],
        mut out: Option<&mut [u8]>,
        red: &Reduction,
        root: usize,
    ) -> MpiResult<()> {
        if red.is_builtin() && input.len() >= self.reduce_single_copy_min && self.single_copy(e, input.len()) {
            return self.reduce_single_copy(e, input, out, red, Some(root));
        }
        if input.len() <= LANE_CAP {
            let st = self.lane_step(input.len());
            if self.me != root {
                self.lane_publish(e, &st, input);
                self.notify(e, root);
            } else {
                let out = out.expect("the root has a result buffer");
                let len = input.len();
                for j in (0..self.n).filter(|&j| j != root) {
                    self.lane_wait(e, j, &st);
                }
                let mut tmp = Vec::new();
                let (seed, rest) = red.fold_order(self.n);
                if seed == root {
                    out.copy_from_slice(input);
                } else {
                    self.lane_read(seed, &st, out);
                }
                for j in rest {
                    if j == root {
                        red.apply(input, out);
                    } else {
                        red.apply(self.lane_range(j, &st, 0..len, &mut tmp), out);
                    }
                }
                for j in (0..self.n).filter(|&j| j != root) {
                    self.lane_prefetch_next(j);
                }
            }
            self.lane_finish(e, st.s);
            return Ok(());
        }
        let piece = SLOT_CAP / red.elem_size() * red.elem_size();
        let mut at = 0;
        while at < input.len() {
            let range = at..(at + piece).min(input.len());
            at = range.end;
            let (s, b) = self.step();
            let mine = &input[range.clone()];
            if self.me != root {
                self.publish(e, s, b, mine);
                self.notify(e, root);
            } else {
                self.wait_all_flags(e, b, s);
                let out = &mut out.as_deref_mut().expect("the root has a result buffer")[range];
                let len = mine.len();
                let src = |j: usize| if j == root { mine } else { self.data(j, b, len) };
                let (seed, rest) = red.fold_order(self.n);
                out.copy_from_slice(src(seed));
                for j in rest {
                    red.apply(src(j), out);
                }
                self.prefetch_next_all(s);
            }
            self.finish(e, s);
        }
        Ok(())
    }

    /// Scatter of `block` bytes to every rank from local `root` through the root's lane
    /// entry (`(n - 1) * block` at most `LANE_CAP`): at the root `pieces` holds the other
    /// ranks' blocks in local rank order (its own left out); elsewhere `out` receives this
    /// rank's block. The root returns once it published; a member waits only for the lines of
    /// its own piece.
    pub fn scatter(
        &mut self,
        e: &mut Engine,
        pieces: &[u8],
        out: &mut [u8],
        block: usize,
        root: usize,
    ) -> MpiResult<()> {
        debug_assert!(if self.me == root { pieces.len() == block * (self.n - 1) } else { out.len() == block });
        let st = self.lane_step(block * (self.n - 1));
        if self.me == root {
            self.lane_publish(e, &st, pieces);
            self.notify_others(e);
        } else {
            let at = (if self.me < root { self.me } else { self.me - 1 }) * block;
            self.lane_wait_range(e, root, &st, at..at + block);
            self.lane_read_at(root, &st, at, out);
            self.lane_prefetch_next(root);
        }
        self.lane_finish(e, st.s);
        Ok(())
    }

    /// Gather of `len` bytes (at most `LANE_CAP`, the same on every rank) from every rank at
    /// local `root` through the members' lanes: each member publishes its `input` and
    /// returns; the root (whose `input` is unused) hands every other rank's block to
    /// `put(rank, bytes)` as it arrives.
    pub fn gather(
        &mut self,
        e: &mut Engine,
        len: usize,
        input: &[u8],
        root: usize,
        mut put: impl FnMut(usize, &[u8]),
    ) -> MpiResult<()> {
        let st = self.lane_step(len);
        if self.me != root {
            assert_eq!(input.len(), len);
            self.lane_publish(e, &st, input);
            self.notify(e, root);
        } else {
            let mut tmp = Vec::new();
            for j in (root + 1..self.n).chain(0..root) {
                self.lane_wait(e, j, &st);
                put(j, self.lane_range(j, &st, 0..len, &mut tmp));
            }
            for j in (0..self.n).filter(|&j| j != root) {
                self.lane_prefetch_next(j);
            }
        }
        self.lane_finish(e, st.s);
        Ok(())
    }

    /// An exchange through the lanes (allgather, all-to-all): every rank publishes `mine` in
    /// an entry of `len` bytes (at most `LANE_CAP`, the same on every rank; `mine` may be
    /// shorter), then hands bytes `range(j)` of every other rank j's entry to `put(j, bytes)`,
    /// as they arrive (lower ranks after higher ones, starting after this rank's own).
    pub fn exchange(
        &mut self,
        e: &mut Engine,
        len: usize,
        mine: &[u8],
        range: impl Fn(usize) -> std::ops::Range<usize>,
        mut put: impl FnMut(usize, &[u8]),
    ) -> MpiResult<()> {
        assert!(mine.len() <= len);
        let st = self.lane_step(len);
        self.lane_publish(e, &st, mine);
        self.notify_others(e);
        self.lane_wait_all(e, &st, &range);
        let mut tmp = Vec::new();
        for j in (self.me + 1..self.n).chain(0..self.me) {
            put(j, self.lane_range(j, &st, range(j), &mut tmp));
        }
        // Everyone published for this step, so everyone finished the lane steps before it.
        self.lane_floor = self.lane_floor.max(st.s - 1);
        self.lane_finish(e, st.s);
        Ok(())
    }

    /// Reduce-scatter through the lanes: every rank publishes its whole `input` (at most
    /// `LANE_CAP` bytes, the same length on every rank), then combines bytes `seg` of every
    /// rank's input into `out`, in local rank order (`Reduction::fold_order`).
    pub fn reduce_scatter(
        &mut self,
        e: &mut Engine,
        input: &[u8],
        seg: std::ops::Range<usize>,
        out: &mut [u8],
        red: &Reduction,
    ) -> MpiResult<()> {
        let st = self.lane_step(input.len());
        self.lane_publish(e, &st, input);
        self.notify_others(e);
        if !seg.is_empty() {
            self.lane_wait_all(e, &st, &|_| seg.clone());
            let mut tmp = Vec::new();
            let (seed, rest) = red.fold_order(self.n);
            for j in std::iter::once(seed).chain(rest) {
                let theirs =
                    if j == self.me { &input[seg.clone()] } else { self.lane_range(j, &st, seg.clone(), &mut tmp) };
                if j == seed {
                    out.copy_from_slice(theirs);
                } else {
                    red.apply(theirs, out);
                }
            }
            // Everyone published for this step, so everyone finished the lane steps before it.
            self.lane_floor = self.lane_floor.max(st.s - 1);
        }
        self.lane_finish(e, st.s);
        Ok(())
    }

    /// Bytes `r` of rank `i`'s lane entry for step `st` (after `lane_wait_range`): in place
    /// when they lie in one line, else gathered into `tmp` (allocated at the first such read:
    /// a zeroed stack buffer of `LANE_CAP` bytes cost a 2 KiB memset in every call).
    fn lane_range<'a>(&'a self, i: usize, st: &LaneStep, r: std::ops::Range<usize>, tmp: &'a mut Vec<u8>) -> &'a [u8] {
        assert!(r.end <= st.lines * LANE_LINE_CAP);
        if r.end <= LANE_LINE_CAP {
            return self.lane_line_payload(i, st.line, r.start, r.len());
        }
        if r.is_empty() || r.start / LANE_LINE_CAP == (r.end - 1) / LANE_LINE_CAP {
            let line = r.start / LANE_LINE_CAP;
            return self.lane_line_payload(i, st.line + line.min(st.lines - 1), r.start % LANE_LINE_CAP, r.len());
        }
        tmp.resize(r.len(), 0);
        self.lane_read_at(i, st, r.start, tmp);
        tmp
    }

    /// Allreduce of every rank's `input` into every rank's `out` (same length; they do not
    /// overlap), in local rank order.
    pub fn allreduce(&mut self, e: &mut Engine, input: &[u8], out: &mut [u8], red: &Reduction) -> MpiResult<()> {
        if red.is_builtin() && input.len() >= copy_policy().min && self.single_copy(e, input.len()) {
            return self.reduce_single_copy(e, input, Some(out), red, None);
        }
        let esize = red.elem_size();
        let piece = SLOT_CAP / esize * esize;
        let mut at = 0;
        while at < input.len() {
            let range = at..(at + piece).min(input.len());
            at = range.end;
            let (s, b) = self.step();
            let (mine, out) = (&input[range.clone()], &mut out[range]);
            let len = mine.len();
            self.publish(e, s, b, mine);
            self.notify_others(e);
            self.wait_all_flags(e, b, s);
            // User functions get whole vectors (see coll::hier).
            if len <= ALLREDUCE_FLAT_MAX || !red.is_builtin() {
                let (seed, rest) = red.fold_order(self.n);
                out.copy_from_slice(self.data(seed, b, len));
                for j in rest {
                    red.apply(self.data(j, b, len), out);
                }
            } else {
                // Segment k (in whole elements) is combined by rank k, in place in its own
                // slot (no one else reads that segment of it), then copied by everyone.
                let elems = len / esize;
                let seg = |k: usize| (k * elems / self.n * esize)..((k + 1) * elems / self.n * esize);
                let mine_seg = seg(self.me);
                let acc = &mut out[mine_seg.clone()];
                let (seed, rest) = red.fold_order(self.n);
                acc.copy_from_slice(&self.data(seed, b, len)[mine_seg.clone()]);
                for j in rest {
                    red.apply(&self.data(j, b, len)[mine_seg.clone()], acc);
                }
                self.own_data(b, mine_seg.clone()).copy_from_slice(acc);
                self.flag2(self.me, b).store(s, Ordering::Release);
                self.notify_others(e);
                for k in (1..self.n).map(|d| (self.me + d) % self.n) {
                    let f = self.flag2(k, b);
                    if f.load(Ordering::Acquire) < s {
                        self.wait(e, || f.load(Ordering::Acquire) >= s);
                    }
                    let r = seg(k);
                    out[r.clone()].copy_from_slice(&self.data(k, b, len)[r]);
                }
            }
            // Everyone published for step s, so everyone finished the steps before it.
            self.done_floor = self.done_floor.max(s - 1);
            self.finish(e, s);
        }
        Ok(())
    }
}

/// Whether this rank can read the memory of local ranks `worlds` (world ranks; `me` is its
/// own index) by single copy: a real read of each one's probe value, as the point-to-point
/// engine does. `OXMPI_CMA=0` says no.
pub fn probe_peer_reads(e: &Engine, worlds: &[usize], me: usize) -> bool {
    let Some(seg) = e.segment() else { return false };
    if std::env::var(crate::config::CMA).is_ok_and(|v| v == "0") {
        return false;
    }
    let addr = Engine::cma_probe_addr();
    // SAFETY: the probe is a static u64 of this library, the same value in every process.
    let expect = unsafe { *(addr as *const u64) };
    worlds.iter().enumerate().filter(|&(i, _)| i != me).all(|(_, &w)| {
        let (pid, peer_addr) = seg.peer_identity(w);
        let mut got = [0u8; 8];
        crate::transport::shm::cma_read(pid, peer_addr, &mut got).is_ok() && u64::from_ne_bytes(got) == expect
    })
}

/// A hint to start loading the cache line of `word`.
fn prefetch(word: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    {
        let p = word as *const AtomicU64 as *const i8;
        // SAFETY: a prefetch has no architectural effect.
        #[allow(unused_unsafe)]
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = word;
}

/// Waits for `ready` with the engine's policy (spin, yield, sleep on the doorbell), moving
/// point-to-point traffic meanwhile. When ranks outnumber cores and share a session, that
/// is yielding on every poll for up to a millisecond: each yield runs another rank of the
/// job, which is how the one this rank waits for gets the CPU, without a wake-up's cost.
/// (Yielding longer was once measured 10x slower: ranks were then in sessions of their own,
/// where a yield runs no other rank; see `WaitPolicy` and mpiexec's `rank_sessions`.)
fn wait(e: &mut Engine, mut ready: impl FnMut() -> bool) {
    e.wait_until(|_| ready());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_lines_are_cache_line_aligned_and_disjoint() {
        for n in [1, 2, 3, 8, 65] {
            assert_eq!(control_bytes(n) % 4096, 0);
            assert!(control_bytes(n) >= LINE * (4 + n));
            assert_eq!(SLOT_STRIDE % LINE, 0);
            assert_eq!(lane_offset(n), control_bytes(n) + n * BUFS * SLOT_STRIDE);
            assert_eq!(area_bytes(n), lane_offset(n) + n * LANE_LINES * LINE);
            assert_eq!(lane_offset(n) % 4096, 0);
        }
    }
}

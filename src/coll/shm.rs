//! Shared-memory collectives among the ranks of one node: a per-communicator area of flags
//! and slots in a `/dev/shm` file, used by the two-level composition in `coll::hier`.
//!
//! Layout: a header line, one control line per rank (its `done` sequences and its attach
//! mark), then per rank `BUFS` slots of `SLOT_STRIDE` bytes, then per rank a ring of
//! `SMALL_SLOTS` one-line slots for payloads of up to `SMALL_CAP` bytes. A slot starts with its flag (the
//! sequence number of the collective that last published it), a second flag for two-phase
//! algorithms, then the payload, so a small payload shares the flag's cache line and moves in
//! the same coherence transfer. Every rank's lines and slots are its own: only the owner
//! writes them, so no flag shares a line with another rank's.
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
//! Small lane: broadcasts and reductions of at most `SMALL_CAP` bytes take their own
//! sequence (the same on every rank too) through the ring of one-line slots, flag and
//! payload in one line. The ring is deep, so a broadcast root or reduce contributors run far
//! ahead of slow readers (consecutive small collectives pipeline, which matters most when
//! ranks outnumber cores and readers are descheduled for whole time slices). A rank reuses
//! a small slot once every rank finished the small step that last could have read it.
//!
//! Waiting goes through the engine's wait loop (spin, yield, then sleep on the doorbell, as
//! for point-to-point), which also keeps point-to-point traffic moving; every flag store is
//! followed by a doorbell check of the ranks that wait for it.

use crate::error::{MpiError, MpiResult};
use crate::op::Reduction;
use crate::p2p::Engine;
use std::fs::OpenOptions;
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
/// Small-lane slots per rank (one cache line each): small steps a writer may run ahead.
const SMALL_SLOTS: usize = 256;
/// Payload bytes of a small slot (the line less its flag).
pub const SMALL_CAP: usize = LINE - 8;
/// Allreduce pieces up to this size: every rank combines every slot (one step, n reads per
/// rank). Larger: each rank combines one segment of all slots, then all copy all segments.
const ALLREDUCE_FLAT_MAX: usize = 2048;

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
    /// Small steps run so far, and every rank is known to have finished every small step up
    /// to `small_floor`.
    small_seq: u64,
    small_floor: u64,
}

// SAFETY: the mapping is only accessed through atomics and slot bytes whose ownership the
// flags hand over; moving it between threads is fine.
unsafe impl Send for Area {}

fn shm_error(what: String, e: std::io::Error) -> MpiError {
    MpiError::new(crate::abi::consts::MPI_ERR_OTHER, format!("shared-memory collectives: {what}: {e}"))
}

fn control_bytes(n: usize) -> usize {
    (LINE * (1 + n)).div_ceil(4096) * 4096
}

fn area_bytes(n: usize) -> usize {
    small_offset(n) + n * SMALL_SLOTS * LINE
}

/// Start of the small lanes.
fn small_offset(n: usize) -> usize {
    control_bytes(n) + n * BUFS * SLOT_STRIDE
}

impl Area {
    /// Creates the file of an area for `n` ranks (sparse: pages are used as slots are
    /// touched) and maps it; the creator is local index 0.
    pub fn create(path: &str, worlds: Vec<usize>) -> MpiResult<Area> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| shm_error(format!("cannot create {path}"), e))?;
        file.set_len(area_bytes(worlds.len()) as u64).map_err(|e| shm_error(format!("cannot size {path}"), e))?;
        Area::map(&file, path, worlds, 0)
    }

    /// Maps the area a peer created, as local index `me`.
    pub fn open(path: &str, worlds: Vec<usize>, me: usize) -> MpiResult<Area> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| shm_error(format!("cannot open {path}"), e))?;
        Area::map(&file, path, worlds, me)
    }

    fn map(file: &std::fs::File, path: &str, worlds: Vec<usize>, me: usize) -> MpiResult<Area> {
        let n = worlds.len();
        let map = memmap2::MmapOptions::new()
            .len(area_bytes(n))
            .map_raw(file)
            .map_err(|e| shm_error(format!("cannot map {path}"), e))?;
        let area = Area { map, n, me, worlds, seq: 0, last_pub: [0; BUFS], done_floor: 0, small_seq: 0, small_floor: 0 };
        area.attached(me).store(1, Ordering::Release);
        Ok(area)
    }

    pub fn size(&self) -> usize {
        self.n
    }

    pub fn rank(&self) -> usize {
        self.me
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

    fn done(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.n);
        self.word(LINE * (1 + i))
    }

    fn attached(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.n);
        self.word(LINE * (1 + i) + 8)
    }

    /// Small steps rank `i` finished.
    fn small_done(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.n);
        self.word(LINE * (1 + i) + 16)
    }

    fn small_slot_offset(&self, i: usize, s: u64) -> usize {
        assert!(i < self.n);
        small_offset(self.n) + (i * SMALL_SLOTS + (s % SMALL_SLOTS as u64) as usize) * LINE
    }

    /// Flag of rank `i`'s small slot for small step `s`.
    fn small_flag(&self, i: usize, s: u64) -> &AtomicU64 {
        self.word(self.small_slot_offset(i, s))
    }

    /// Payload of rank `i`'s small slot for small step `s` (after its flag says published).
    fn small_data(&self, i: usize, s: u64, len: usize) -> &[u8] {
        assert!(len <= SMALL_CAP);
        // SAFETY: inside the mapping; the owner does not rewrite the slot before every rank
        // finished step `s` (`small_publish`).
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(self.small_slot_offset(i, s) + 8), len) }
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
        self.notify(e, 0);
    }

    /// Rings the doorbell of local rank `i` if it sleeps (after a flag store it waits for).
    fn notify(&self, e: &Engine, i: usize) {
        if let Some(seg) = e.segment() {
            seg.notify(self.worlds[i]);
        }
    }

    fn notify_others(&self, e: &Engine) {
        if let Some(seg) = e.segment() {
            seg.notify_many((0..self.n).filter(|&i| i != self.me).map(|i| self.worlds[i]));
        }
    }

    /// Starts a small step: its number.
    fn small_step(&mut self) -> u64 {
        self.small_seq += 1;
        self.small_seq
    }

    /// Ends small step `s` (as `finish`).
    fn small_finish(&self, e: &Engine, s: u64) {
        self.small_done(self.me).store(s, Ordering::Release);
        self.ring_waiting_writers(e);
    }

    /// Publishes `bytes` in this rank's small slot for small step `s`, once no rank may still
    /// read the step that used the slot before (every rank finished it).
    fn small_publish(&mut self, e: &mut Engine, s: u64, bytes: &[u8]) {
        let previous = s.saturating_sub(SMALL_SLOTS as u64);
        if previous > self.small_floor {
            let others_done =
                |a: &Area| (0..a.n).filter(|&j| j != a.me).map(|j| a.small_done(j).load(Ordering::Acquire)).min();
            let floor = |a: &Area| others_done(a).unwrap_or(u64::MAX);
            if floor(self) < previous {
                self.done_waiters().fetch_add(1, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                wait(e, || floor(self) >= previous);
                self.done_waiters().fetch_sub(1, Ordering::SeqCst);
            }
            self.small_floor = floor(self);
        }
        let off = self.small_slot_offset(self.me, s);
        // SAFETY: this rank's own slot, inside the mapping; no rank reads it (see above).
        let payload = unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(off + 8), bytes.len()) };
        payload.copy_from_slice(bytes);
        self.small_flag(self.me, s).store(s, Ordering::Release);
    }

    /// Waits for rank `i`'s small slot to be published for small step `s`.
    fn small_wait(&self, e: &mut Engine, i: usize, s: u64) {
        let f = self.small_flag(i, s);
        if f.load(Ordering::Acquire) < s {
            wait(e, || f.load(Ordering::Acquire) >= s);
        }
    }

    /// Starts loading rank `i`'s small slot for the small step after `s` (see `prefetch_next`).
    fn small_prefetch_next(&self, i: usize, s: u64) {
        prefetch(self.small_flag(i, s + 1));
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

    /// Waits until no rank still reads what this rank last published in slot `b`.
    fn ensure_free(&mut self, e: &mut Engine, b: usize) {
        let p = self.last_pub[b];
        if p <= self.done_floor {
            return;
        }
        let all_done = |a: &Area| (0..a.n).all(|j| j == a.me || a.done(j).load(Ordering::Acquire) >= p);
        if !all_done(self) {
            self.done_waiters().fetch_add(1, Ordering::SeqCst);
            // The other half of the pairing in `finish` (store `done`, fence, load waiters).
            fence(Ordering::SeqCst);
            wait(e, || all_done(self));
            self.done_waiters().fetch_sub(1, Ordering::SeqCst);
        }
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
            wait(e, || f.load(Ordering::Acquire) >= s);
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
            wait(e, || ready(self));
        }
    }

    // ----- the collectives -----

    /// Barrier: everyone marks its slot, index 0 waits for all marks, runs `between` (the
    /// inter-node step) and releases everyone with its own mark.
    pub fn barrier(&mut self, e: &mut Engine, between: impl FnOnce(&mut Engine) -> MpiResult<()>) -> MpiResult<()> {
        let (s, b) = self.step();
        let mut result = Ok(());
        if self.me == 0 {
            self.wait_all_flags(e, b, s);
            result = between(e);
            self.flag(0, b).store(s, Ordering::Release);
            self.notify_others(e);
        } else {
            self.flag(self.me, b).store(s, Ordering::Release);
            self.notify(e, 0);
            self.wait_flag(e, 0, b, s);
        }
        // Everyone arrived at step s, so everyone finished the steps before it.
        self.done_floor = self.done_floor.max(s - 1);
        self.finish(e, s);
        result
    }

    /// Broadcast of `data` (packed bytes, the same length everywhere) from local `root`.
    pub fn bcast(&mut self, e: &mut Engine, data: &mut [u8], root: usize) {
        if data.len() <= SMALL_CAP {
            let s = self.small_step();
            if self.me == root {
                self.small_publish(e, s, data);
                self.notify_others(e);
            } else {
                self.small_wait(e, root, s);
                data.copy_from_slice(self.small_data(root, s, data.len()));
                self.small_prefetch_next(root, s);
            }
            self.small_finish(e, s);
            return;
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
    }

    /// Reduction of every rank's `input` to local `root`, in local rank order; `out` (the
    /// root's) receives the result. `input` and `out` do not overlap.
    pub fn reduce(&mut self, e: &mut Engine, input: &[u8], mut out: Option<&mut [u8]>, red: &Reduction, root: usize) {
        if input.len() <= SMALL_CAP {
            let s = self.small_step();
            if self.me != root {
                self.small_publish(e, s, input);
                self.notify(e, root);
            } else {
                let out = out.expect("the root has a result buffer");
                let len = input.len();
                for j in (0..self.n).filter(|&j| j != root) {
                    self.small_wait(e, j, s);
                }
                let src = |j: usize| if j == root { input } else { self.small_data(j, s, len) };
                out.copy_from_slice(src(self.n - 1));
                for j in (0..self.n - 1).rev() {
                    red.apply(src(j), out);
                }
                for j in (0..self.n).filter(|&j| j != root) {
                    self.small_prefetch_next(j, s);
                }
            }
            self.small_finish(e, s);
            return;
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
                // a0 op (a1 op (... op a(n-1))): rank order for non-commutative operations.
                out.copy_from_slice(src(self.n - 1));
                for j in (0..self.n - 1).rev() {
                    red.apply(src(j), out);
                }
                self.prefetch_next_all(s);
            }
            self.finish(e, s);
        }
    }

    /// Allreduce of every rank's `input` into every rank's `out` (same length; they do not
    /// overlap), in local rank order.
    pub fn allreduce(&mut self, e: &mut Engine, input: &[u8], out: &mut [u8], red: &Reduction) {
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
                out.copy_from_slice(self.data(self.n - 1, b, len));
                for j in (0..self.n - 1).rev() {
                    red.apply(self.data(j, b, len), out);
                }
            } else {
                // Segment k (in whole elements) is combined by rank k, in place in its own
                // slot (no one else reads that segment of it), then copied by everyone.
                let elems = len / esize;
                let seg = |k: usize| (k * elems / self.n * esize)..((k + 1) * elems / self.n * esize);
                let mine_seg = seg(self.me);
                let acc = &mut out[mine_seg.clone()];
                acc.copy_from_slice(&self.data(self.n - 1, b, len)[mine_seg.clone()]);
                for j in (0..self.n - 1).rev() {
                    red.apply(&self.data(j, b, len)[mine_seg.clone()], acc);
                }
                self.own_data(b, mine_seg.clone()).copy_from_slice(acc);
                self.flag2(self.me, b).store(s, Ordering::Release);
                self.notify_others(e);
                for k in (1..self.n).map(|d| (self.me + d) % self.n) {
                    let f = self.flag2(k, b);
                    if f.load(Ordering::Acquire) < s {
                        wait(e, || f.load(Ordering::Acquire) >= s);
                    }
                    let r = seg(k);
                    out[r.clone()].copy_from_slice(&self.data(k, b, len)[r]);
                }
            }
            // Everyone published for step s, so everyone finished the steps before it.
            self.done_floor = self.done_floor.max(s - 1);
            self.finish(e, s);
        }
    }
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
/// point-to-point traffic meanwhile.
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
            assert!(control_bytes(n) >= LINE * (1 + n));
            assert_eq!(SLOT_STRIDE % LINE, 0);
            assert_eq!(small_offset(n), control_bytes(n) + n * BUFS * SLOT_STRIDE);
            assert_eq!(area_bytes(n), small_offset(n) + n * SMALL_SLOTS * LINE);
            assert_eq!(small_offset(n) % LINE, 0);
        }
    }
}

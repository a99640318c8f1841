//! One-sided communication: on one node, operations done by the origin alone, epochs kept
//! in a control area every member of the node maps; toward members it cannot reach itself
//! (other nodes, or no single copy), requests applied by their agents (`remote`).
//!
//! Every window has a shared segment per node (made by `win`): this control area, then, for
//! the allocating flavours, the node's members' memory. Toward a member of its node the
//! origin of an operation does all of its work: a Put or Get is a copy into or out of the
//! target's memory (in the shared mapping, or by single copy, `process_vm_writev`/`readv`,
//! for memory of the program's own), and an accumulate is a read-modify-write under the
//! target's accumulate lock. So such an operation is complete when its call returns, and
//! passive-target epochs need nothing from the target.
//! Synchronisation calls therefore only order memory and wait for each other: a fence is a
//! barrier, a lock a reader-writer lock word per target, post/start/complete/wait counters
//! per pair of members.
//!
//! Dynamic windows: each member keeps its attached regions (sorted, adjacent ones merged) in
//! its own memory and publishes where they are in the control area behind a sequence
//! counter; an origin reads them by single copy when the counter moved since its last look
//! and checks an absolute target address against them before the operation.
//!
//! `alloc_mem` hands out MPI_Alloc_mem memory that the other members can map, so windows of
//! MPI_Win_create over it are reached directly too.
//!
//! Toward members on other nodes, Put and Get of contiguous target data go by RDMA of the
//! member's registered window memory where the network does RMA (`rdma`).

pub mod alloc_mem;
mod rdma;
mod remote;

pub use remote::{Agent, Channel};

use crate::abi::consts::*;
use crate::datatype::Layout;
use crate::error::{MpiResult, err};
use crate::op::{Op, Reduction};
use crate::runtime;
use crate::transport::net::{Way, WindowKeys};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
use std::sync::{Mutex, MutexGuard};

/// How the origin reaches a member's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Mapped here (the shared segment, or this process's own memory).
    Direct,
    /// Single copy into and out of process `pid`.
    SingleCopy { pid: u32 },
    /// By messages the member's agent applies (`remote`): members on other nodes, and those
    /// of this node when single copy is not permitted.
    Message,
}

/// A member's memory as the origin reaches it.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Its address here (Direct) or in its own process (SingleCopy); 0 for Message (requests
    /// carry offsets from the member's base, or addresses for dynamic windows).
    pub base: usize,
    pub size: usize,
    pub disp_unit: usize,
    pub access: Access,
}

/// One member's lock words, on a cache line of their own.
#[repr(C, align(64))]
struct LockLine {
    /// Passive-target lock: `WRITER` for an exclusive holder, else the count of shared ones.
    rw: AtomicU32,
    /// Held around every accumulate's read-modify-write of this member's memory.
    acc: AtomicU32,
}

const WRITER: u32 = 1 << 31;

/// Where a member of a dynamic window keeps its attached regions: `seq` is odd while the
/// member replaces them (a sequence lock), `addr` and `count` locate the (address, length)
/// pairs in its memory.
#[repr(C)]
struct RegionsRef {
    seq: AtomicU64,
    addr: AtomicU64,
    count: AtomicU64,
}

/// Bytes of the control area of a window of `n` members: their lock lines, two `n * n`
/// counter matrices (posts and completions of post/start/complete/wait), and for a dynamic
/// window a region table per member.
pub fn control_bytes(n: usize, dynamic: bool) -> usize {
    let tables = if dynamic { n * size_of::<RegionsRef>() } else { 0 };
    (n * size_of::<LockLine>() + 2 * n * n * size_of::<AtomicU32>()).next_multiple_of(64) + tables
}

/// The control area, mapped by every member.
struct Control {
    addr: usize,
    n: usize,
    dynamic: bool,
}

impl Control {
    fn lock_line(&self, r: usize) -> &LockLine {
        assert!(r < self.n);
        // SAFETY: the area holds `n` lock lines from its start (`control_bytes`), zeroed at
        // creation (a fresh file) and only ever accessed atomically; it stays mapped while
        // the window (and so `self`) exists.
        unsafe { &*(self.addr as *const LockLine).add(r) }
    }

    /// Counter `[t][o]` of matrix `m` (0: posts of target t to origin o; 1: completions of
    /// origin o toward target t).
    fn counter(&self, m: usize, t: usize, o: usize) -> &AtomicU32 {
        assert!(m < 2 && t < self.n && o < self.n);
        let start = self.addr + self.n * size_of::<LockLine>();
        // SAFETY: both matrices follow the lock lines (`control_bytes`), 4-byte aligned since
        // lock lines are 64 bytes; atomically accessed only; mapped while `self` exists.
        unsafe { &*(start as *const AtomicU32).add(m * self.n * self.n + t * self.n + o) }
    }

    /// Where member `r` keeps its regions (dynamic windows).
    fn regions(&self, r: usize) -> &RegionsRef {
        assert!(self.dynamic && r < self.n);
        let start = self.addr + control_bytes(self.n, false);
        // SAFETY: a dynamic window's control area holds `n` of these after the matrices
        // (`control_bytes`), 64-byte aligned, zeroed at creation, accessed atomically only;
        // mapped while `self` exists.
        unsafe { &*(start as *const RegionsRef).add(r) }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LockKind {
    Shared,
    Exclusive,
}

/// This process's epochs on a window.
#[derive(Default)]
struct Epochs {
    /// Between a fence and the next one with MPI_MODE_NOSUCCEED (or a lock or start).
    fence: bool,
    /// Passive-target locks held, by target (MPI_Win_lock), and whether the lock word was
    /// taken (not under MPI_MODE_NOCHECK): only a taken lock is released.
    locks: Vec<Option<(LockKind, bool)>>,
    lock_all: bool,
    lock_all_taken: bool,
    /// The targets of the access epoch MPI_Win_start opened.
    started: Option<Vec<usize>>,
    /// The origins of the exposure epoch MPI_Win_post opened.
    posted: Option<Vec<usize>>,
    /// Posts of each target consumed by MPI_Win_start, completions of each origin consumed
    /// by MPI_Win_wait/test.
    posts_seen: Vec<u32>,
    completions_seen: Vec<u32>,
}

impl Epochs {
    fn passive(&self) -> bool {
        self.lock_all || self.locks.iter().any(Option::is_some)
    }

    /// MPI_ERR_RMA_SYNC unless an access epoch covers `target`.
    fn check_access(&self, target: usize) -> MpiResult<()> {
        if self.fence
            || self.lock_all
            || self.locks[target].is_some()
            || self.started.as_ref().is_some_and(|g| g.contains(&target))
        {
            return Ok(());
        }
        err(MPI_ERR_RMA_SYNC, format!("no access epoch is open on the window for target rank {target}"))
    }

    /// MPI_ERR_RMA_SYNC unless a passive-target epoch covers `target` (request-based
    /// operations and flushes).
    fn check_passive(&self, target: usize, what: &str) -> MpiResult<()> {
        if self.lock_all || self.locks[target].is_some() {
            return Ok(());
        }
        err(
            MPI_ERR_RMA_SYNC,
            format!("{what} needs a passive-target epoch (MPI_Win_lock or MPI_Win_lock_all) on target rank {target}"),
        )
    }
}

/// The one-sided side of a window.
pub struct Rma {
    /// This member's rank in the window and the world ranks of all members.
    pub rank: usize,
    worlds: Vec<usize>,
    /// World ranks of the members on this node (whose doorbells wake waiters of the control
    /// area).
    node_worlds: Vec<usize>,
    targets: Vec<Target>,
    control: Control,
    /// How requests reach the members' agents, and this origin's requests awaiting replies.
    channel: remote::Channel,
    origin: Mutex<remote::OriginState>,
    /// This member's agent serves others: every operation and flush also drives progress,
    /// so a process that only works on memory it reaches itself (polling its own window)
    /// still applies the requests of those that reach it by messages.
    serving: std::sync::atomic::AtomicBool,
    epochs: Mutex<Epochs>,
    /// This member's attached regions as published (`RegionsRef` points at them), and the
    /// other members' as last read, with the sequence number they were read at (dynamic
    /// windows).
    own_regions: Mutex<Box<[[u64; 2]]>>,
    seen_regions: Mutex<Vec<(u64, Regions)>>,
    /// How to reach each member's memory by RDMA (members on other nodes that exposed it,
    /// when this process does RDMA of windows), and the accesses in flight toward each.
    rdma_keys: Vec<Option<WindowKeys>>,
    rdma_pending: Mutex<Vec<Vec<u64>>>,
}

/// Attached regions of a dynamic window: (address, length), sorted, adjacent ones merged.
type Regions = Vec<(usize, usize)>;

/// Where the target's data lies: the origin's view of `count` elements of `layout` at
/// displacement `disp`.
pub struct TargetSpec<'a> {
    pub rank: c_int,
    pub disp: i64,
    pub count: usize,
    pub layout: &'a Layout,
}

/// Data on the origin side: `count` elements of `layout` at `addr` (MPI_BOTTOM-relative
/// addresses allowed, as in messages).
pub struct Local<'a> {
    pub addr: usize,
    pub count: usize,
    pub layout: &'a Layout,
}

impl Local<'_> {
    fn bytes(&self) -> usize {
        self.layout.size * self.count
    }

    /// The packed bytes.
    ///
    /// # Safety
    /// `addr` holds `count` readable elements of `layout`.
    unsafe fn pack(&self) -> Vec<u8> {
        // SAFETY: the caller's contract.
        unsafe { self.layout.pack_to_vec(self.addr as *const u8, self.count, 0..self.bytes()) }
    }

    /// Stores packed bytes.
    ///
    /// # Safety
    /// `addr` holds `count` writable elements of `layout`, not overlapping `packed`.
    unsafe fn unpack(&self, packed: &[u8]) {
        // SAFETY: the caller's contract.
        unsafe { self.layout.unpack(self.addr as *mut u8, self.count, 0, packed) }
    }

    /// The blocks holding the data, in order (a single copy's local iovecs).
    fn blocks(&self) -> Vec<(usize, usize)> {
        self.layout.iovecs(self.addr as *const u8, self.count, 0..self.bytes())
    }

    /// The lowest and one past the highest byte the data touches.
    fn span(&self) -> (usize, usize) {
        data_span(self.addr, self.count, self.layout)
    }
}

/// A resolved target access: its address (here or in the target's process) and route.
struct Place<'a> {
    addr: usize,
    count: usize,
    layout: &'a Layout,
    access: Access,
}

impl Place<'_> {
    fn bytes(&self) -> usize {
        self.layout.size * self.count
    }

    /// Copies `origin`'s data into the target (Direct access, not overlapping) in one pass
    /// when either side is contiguous; false (nothing done) when neither is.
    fn copy_from(&self, origin: &Local) -> bool {
        let len = self.bytes();
        if len == 0 {
            return true;
        }
        // SAFETY (both arms): the origin data is readable (MPI's contract for the origin
        // buffer), the target data lies in the target's window memory, mapped here
        // (`resolve`), and the caller checked they do not overlap.
        if let Some(at) = origin.layout.contiguous_at() {
            unsafe {
                let src = std::slice::from_raw_parts((origin.addr as *const u8).wrapping_offset(at), len);
                self.layout.unpack(self.addr as *mut u8, self.count, 0, src);
            }
        } else if let Some(at) = self.layout.contiguous_at() {
            unsafe {
                let dst = std::slice::from_raw_parts_mut((self.addr as *mut u8).wrapping_offset(at), len);
                origin.layout.pack(origin.addr as *const u8, origin.count, 0..len, dst);
            }
        } else {
            return false;
        }
        true
    }

    /// `copy_from` the other way: the target's data into `origin` (writable).
    fn copy_to(&self, origin: &Local) -> bool {
        let len = self.bytes();
        if len == 0 {
            return true;
        }
        // SAFETY (both arms): as in `copy_from`, with the origin data writable (MPI's contract
        // for a Get's origin buffer).
        if let Some(at) = origin.layout.contiguous_at() {
            unsafe {
                let dst = std::slice::from_raw_parts_mut((origin.addr as *mut u8).wrapping_offset(at), len);
                self.layout.pack(self.addr as *const u8, self.count, 0..len, dst);
            }
        } else if let Some(at) = self.layout.contiguous_at() {
            unsafe {
                let src = std::slice::from_raw_parts((self.addr as *const u8).wrapping_offset(at), len);
                origin.layout.unpack(origin.addr as *mut u8, origin.count, 0, src);
            }
        } else {
            return false;
        }
        true
    }

    /// Whether the target data may share bytes with `origin` (both in this process).
    fn overlaps(&self, origin: &Local) -> bool {
        let (lo, hi) = data_span(self.addr, self.count, self.layout);
        let (olo, ohi) = origin.span();
        lo < ohi && olo < hi
    }

    fn remote_blocks(&self) -> Vec<(u64, u64)> {
        self.layout
            .iovecs(self.addr as *const u8, self.count, 0..self.bytes())
            .into_iter()
            .map(|(a, l)| (a as u64, l as u64))
            .collect()
    }

    /// The target's packed bytes.
    fn read(&self) -> MpiResult<Vec<u8>> {
        let len = self.bytes();
        match self.access {
            // SAFETY: `resolve` checked that the data lies within the target's window memory,
            // which stays mapped here while the window exists.
            Access::Direct => Ok(unsafe { self.layout.pack_to_vec(self.addr as *const u8, self.count, 0..len) }),
            Access::SingleCopy { pid } => {
                let mut out = vec![0u8; len];
                let local = [(out.as_mut_ptr() as usize, len)];
                // SAFETY: `out` is ours, writable, and nothing else touches it during the call.
                unsafe { crate::transport::shm::cma_readv(pid, &local, &self.remote_blocks(), len) }
                    .map_err(|e| single_copy_failed("read", e))?;
                Ok(out)
            }
            Access::Message => unreachable!("targets reached by messages are read by their agent"),
        }
    }

    /// Stores packed bytes in the target's memory.
    fn write(&self, packed: &[u8]) -> MpiResult<()> {
        debug_assert_eq!(packed.len(), self.bytes());
        match self.access {
            // SAFETY: as in `read`; the origin's packed copy does not overlap window memory.
            Access::Direct => unsafe { self.layout.unpack(self.addr as *mut u8, self.count, 0, packed) },
            Access::SingleCopy { pid } => {
                let local = [(packed.as_ptr() as usize, packed.len())];
                crate::transport::shm::cma_writev_range(pid, &local, &self.remote_blocks(), 0..packed.len())
                    .map_err(|e| single_copy_failed("write", e))?;
            }
            Access::Message => unreachable!("targets reached by messages are written by their agent"),
        }
        Ok(())
    }
}

/// The lowest and one past the highest byte `count` elements of `layout` at `addr` touch.
fn data_span(addr: usize, count: usize, layout: &Layout) -> (usize, usize) {
    let lo = addr.wrapping_add_signed(layout.lower(count));
    (lo, lo.wrapping_add(layout.span(count)))
}

fn single_copy_failed(what: &str, e: std::io::Error) -> crate::error::MpiError {
    crate::error::MpiError::new(MPI_ERR_OTHER, format!("single-copy {what} of the target's window memory failed: {e}"))
}

/// The predefined datatype (basic or pair) the elements of `dt` are made of: accumulates
/// combine element by element.
fn basic_type(dt: MPI_Datatype) -> MpiResult<MPI_Datatype> {
    match crate::datatype::element_type(dt)? {
        Some(h) => Ok(h),
        None if crate::datatype::type_size(dt)? == 0 => Ok(MPI_BYTE),
        None => err(MPI_ERR_TYPE, "accumulate operations need a datatype made of one predefined type"),
    }
}

use crate::abi::types::MPI_Datatype;

impl Rma {
    /// `control` is the address of this window's control area (`control_bytes(n)` bytes,
    /// zeroed, mapped by every member), valid until the window is freed.
    /// `node_worlds` are the members of this node (world ranks), `channel` the window's own
    /// communicator's, `rdma_keys` how to reach members' memory by RDMA (`rdma`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        rank: usize,
        worlds: Vec<usize>,
        node_worlds: Vec<usize>,
        targets: Vec<Target>,
        control: usize,
        dynamic: bool,
        channel: remote::Channel,
        rdma_keys: Vec<Option<WindowKeys>>,
    ) -> Rma {
        let n = worlds.len();
        let epochs =
            Epochs { locks: vec![None; n], posts_seen: vec![0; n], completions_seen: vec![0; n], ..Epochs::default() };
        Rma {
            rank,
            worlds,
            node_worlds,
            targets,
            control: Control { addr: control, n, dynamic },
            channel,
            origin: Mutex::new(remote::OriginState::new(n)),
            serving: std::sync::atomic::AtomicBool::new(false),
            epochs: Mutex::new(epochs),
            own_regions: Mutex::new(Box::new([])),
            // Sequence numbers are even once published: 1 means never read.
            seen_regions: Mutex::new(vec![(1, Vec::new()); n]),
            rdma_keys,
            rdma_pending: Mutex::new(vec![Vec::new(); n]),
        }
    }

    fn rdma_pending(&self) -> MutexGuard<'_, Vec<Vec<u64>>> {
        self.rdma_pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn n(&self) -> usize {
        self.worlds.len()
    }

    fn epochs(&self) -> MutexGuard<'_, Epochs> {
        self.epochs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The window rank `rank` (MPI_ERR_RANK when out of range); None for MPI_PROC_NULL.
    fn target_rank(&self, rank: c_int) -> MpiResult<Option<usize>> {
        if rank == MPI_PROC_NULL {
            return Ok(None);
        }
        match usize::try_from(rank) {
            Ok(r) if r < self.n() => Ok(Some(r)),
            _ => err(MPI_ERR_RANK, format!("invalid target rank {rank} (the window has {} members)", self.n())),
        }
    }

    /// Checks the epoch and the range of a target access; None for MPI_PROC_NULL.
    fn resolve<'a>(&self, t: &TargetSpec<'a>) -> MpiResult<Option<Place<'a>>> {
        self.serve();
        let Some(r) = self.target_rank(t.rank)? else { return Ok(None) };
        self.epochs().check_access(r)?;
        let target = self.targets[r];
        if self.control.dynamic {
            return self.resolve_dynamic(r, t, target.access);
        }
        let bytes = t.layout.size * t.count;
        let offset = t.disp.checked_mul(target.disp_unit as i64);
        let range = offset.and_then(|o| {
            let lo = o.checked_add(t.layout.lower(t.count) as i64)?;
            Some((lo, lo.checked_add(t.layout.span(t.count) as i64)?))
        });
        match range {
            _ if bytes == 0 => {}
            Some((lo, hi)) if lo >= 0 && hi <= target.size as i64 => {}
            _ => {
                return err(
                    MPI_ERR_RMA_RANGE,
                    format!(
                        "the target data (displacement {}, {} elements) lies outside the {} bytes of target rank {r}'s window",
                        t.disp, t.count, target.size
                    ),
                );
            }
        }
        let addr = target.base.wrapping_add_signed(offset.unwrap_or(0) as isize);
        Ok(Some(Place { addr, count: t.count, layout: t.layout, access: target.access }))
    }

    /// `resolve` for a dynamic window: the displacement is an address in the target, and the
    /// data must lie within memory it has attached.
    fn resolve_dynamic<'a>(&self, r: usize, t: &TargetSpec<'a>, access: Access) -> MpiResult<Option<Place<'a>>> {
        let place = Place { addr: t.disp as usize, count: t.count, layout: t.layout, access };
        // Messages: the target checks against its regions (an error comes back at the next
        // synchronisation).
        if place.bytes() == 0 || access == Access::Message {
            return Ok(Some(place));
        }
        let (lo, hi) = data_span(t.disp as usize, t.count, t.layout);
        if hi > lo && self.is_attached(r, access, lo, hi)? {
            return Ok(Some(place));
        }
        err(
            MPI_ERR_RMA_RANGE,
            format!(
                "the target data at 0x{lo:x} ({} bytes) is not within memory target rank {r} attached",
                hi.wrapping_sub(lo)
            ),
        )
    }

    /// Whether bytes `lo..hi` of member `r` lie within one of its (merged) attached regions.
    fn is_attached(&self, r: usize, access: Access, lo: usize, hi: usize) -> MpiResult<bool> {
        let within = |regions: &[(usize, usize)]| {
            let i = regions.partition_point(|&(b, _)| b <= lo);
            i > 0 && hi <= regions[i - 1].0 + regions[i - 1].1
        };
        if r == self.rank {
            let own = self.own_regions.lock().unwrap_or_else(|p| p.into_inner());
            let regions: Vec<(usize, usize)> = own.iter().map(|&[b, l]| (b as usize, l as usize)).collect();
            return Ok(within(&regions));
        }
        let Access::SingleCopy { pid } = access else {
            unreachable!("dynamic windows reach other members by single copy")
        };
        let place = self.control.regions(r);
        let mut seen = self.seen_regions.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let seq = place.seq.load(Ordering::Acquire);
            if seq % 2 == 1 {
                std::thread::yield_now();
                continue;
            }
            if seen[r].0 == seq {
                return Ok(within(&seen[r].1));
            }
            let (addr, count) = (place.addr.load(Ordering::Relaxed), place.count.load(Ordering::Relaxed) as usize);
            let mut raw = vec![0u8; count * 16];
            let read = if count == 0 { Ok(()) } else { crate::transport::shm::cma_read(pid, addr, &mut raw) };
            fence(Ordering::Acquire);
            if place.seq.load(Ordering::Relaxed) != seq {
                // Replaced meanwhile (the old list may be gone, hence a failed read): again.
                continue;
            }
            read.map_err(|e| single_copy_failed("read of the attached regions", e))?;
            let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().unwrap()) as usize;
            let regions = raw.chunks_exact(16).map(|c| (word(&c[..8]), word(&c[8..]))).collect();
            seen[r] = (seq, regions);
            return Ok(within(&seen[r].1));
        }
    }

    /// Publishes this member's attached regions (MPI_Win_attach, MPI_Win_detach), sorted and
    /// with adjacent ones merged (an access may span regions attached one after the other).
    pub fn publish_regions(&self, regions: &[(usize, usize)]) {
        let mut sorted: Vec<(u64, u64)> = regions.iter().map(|&(b, l)| (b as u64, l as u64)).collect();
        sorted.sort_unstable();
        // (address, length) arrays: the layout a reader in another process parses.
        let mut merged: Vec<[u64; 2]> = Vec::with_capacity(sorted.len());
        for (b, l) in sorted {
            match merged.last_mut() {
                Some([mb, ml]) if *mb + *ml == b => *ml += l,
                _ => merged.push([b, l]),
            }
        }
        let list = merged.into_boxed_slice();
        let place = self.control.regions(self.rank);
        let mut own = self.own_regions.lock().unwrap_or_else(|p| p.into_inner());
        let seq = place.seq.load(Ordering::Relaxed);
        place.seq.store(seq + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        place.addr.store(list.as_ptr() as u64, Ordering::Relaxed);
        place.count.store(list.len() as u64, Ordering::Relaxed);
        place.seq.store(seq + 2, Ordering::Release);
        // The previous list goes now: a reader still copying it sees the counter moved.
        *own = list;
    }

    /// MPI_Put.
    ///
    /// # Safety
    /// `origin` holds its elements, readable.
    pub unsafe fn put(&self, origin: &Local, target: &TargetSpec) -> MpiResult<()> {
        let Some(place) = self.resolve(target)? else { return Ok(()) };
        let len = origin.bytes();
        same_bytes(len, place.bytes())?;
        match place.access {
            // SAFETY: the caller's contract.
            Access::Message => unsafe { self.put_or_get_remote(Way::Out, target.rank as usize, &place, origin) },
            // One copy when either side is contiguous, unless the two overlap (a Put to
            // itself).
            Access::Direct if !place.overlaps(origin) && place.copy_from(origin) => Ok(()),
            Access::SingleCopy { pid } => {
                crate::transport::shm::cma_writev_range(pid, &origin.blocks(), &place.remote_blocks(), 0..len)
                    .map_err(|e| single_copy_failed("write", e))
            }
            _ => {
                // SAFETY: the caller's contract.
                let packed = unsafe { origin.pack() };
                place.write(&packed)
            }
        }
    }

    /// MPI_Get.
    ///
    /// # Safety
    /// `origin` holds its elements, writable, not overlapping the target's window memory.
    pub unsafe fn get(&self, origin: &Local, target: &TargetSpec) -> MpiResult<()> {
        let Some(place) = self.resolve(target)? else { return Ok(()) };
        let len = origin.bytes();
        same_bytes(len, place.bytes())?;
        match place.access {
            // SAFETY: the caller's contract.
            Access::Message => unsafe { self.put_or_get_remote(Way::In, target.rank as usize, &place, origin) },
            Access::Direct if !place.overlaps(origin) && place.copy_to(origin) => Ok(()),
            Access::SingleCopy { pid } => {
                // SAFETY: the origin blocks are this process's, writable, and MPI forbids
                // touching them until the operation completes (at return).
                unsafe { crate::transport::shm::cma_readv(pid, &origin.blocks(), &place.remote_blocks(), len) }
                    .map_err(|e| single_copy_failed("read", e))
            }
            _ => {
                let packed = place.read()?;
                // SAFETY: the caller's contract.
                unsafe { origin.unpack(&packed) };
                Ok(())
            }
        }
    }

    /// MPI_Accumulate (`result` None) and MPI_Get_accumulate (the target's data before the
    /// operation goes to `result`), atomic per element with respect to other accumulates:
    /// done under the target's accumulate lock.
    ///
    /// # Safety
    /// `origin` holds readable elements (ignored for MPI_NO_OP); `result` writable ones.
    pub unsafe fn accumulate(
        &self,
        origin: &Local,
        origin_type: MPI_Datatype,
        result: Option<(&Local, MPI_Datatype)>,
        target: &TargetSpec,
        target_type: MPI_Datatype,
        op: MPI_Op,
    ) -> MpiResult<()> {
        let op_handle = op;
        let op = Op::from_handle(op)?;
        let Op::Builtin(builtin) = op else {
            return err(MPI_ERR_OP, "accumulate operations take predefined operations only");
        };
        let Some(place) = self.resolve(target)? else { return Ok(()) };
        let no_op = builtin == crate::op::Builtin::NoOp;
        // Nothing to combine (MPICH then checks no types either).
        if place.bytes() == 0 && (no_op || origin.bytes() == 0) && result.is_none_or(|(r, _)| r.bytes() == 0) {
            return Ok(());
        }
        let basic = basic_type(target_type)?;
        if !no_op && basic_type(origin_type)? != basic {
            return err(MPI_ERR_TYPE, "the origin and target datatypes are made of different predefined types");
        }
        if let Some((_, rt)) = result
            && basic_type(rt)? != basic
        {
            return err(MPI_ERR_TYPE, "the result and target datatypes are made of different predefined types");
        }
        let red = Reduction::new(&op, basic)?;
        if !no_op {
            same_bytes(origin.bytes(), place.bytes())?;
        }
        if let Some((res, _)) = result {
            same_bytes(res.bytes(), place.bytes())?;
        }
        let len = place.bytes();
        // The origin's data in place when contiguous, else packed.
        let packed;
        let input: &[u8] = match origin.layout.contiguous_at() {
            _ if no_op => &[],
            // SAFETY: the caller's contract: `len` readable bytes of data from there.
            Some(at) => unsafe { std::slice::from_raw_parts((origin.addr as *const u8).wrapping_offset(at), len) },
            None => {
                // SAFETY: the caller's contract.
                packed = unsafe { origin.pack() };
                &packed
            }
        };
        let t = self.target_rank(target.rank)?.expect("resolved above");
        if place.access == Access::Message {
            // SAFETY: the caller's contract for `result`.
            return unsafe { self.accumulate_by_message(t, &place, input, result.map(|(r, _)| r), op_handle, basic) };
        }
        let _held = self.acc_lock(t);
        if result.is_none() && builtin == crate::op::Builtin::Replace {
            return place.write(input);
        }
        // Contiguous target data in this process: combined where it lies.
        if let (Access::Direct, Some(at)) = (place.access, place.layout.contiguous_at())
            && !place.overlaps(origin)
            && result.is_none_or(|(r, _)| !place.overlaps(r))
        {
            // SAFETY: the target data lies in window memory mapped here (`resolve`), not
            // overlapping the origin's; the accumulate lock keeps other accumulates out, and
            // MPI forbids other accesses to it meanwhile.
            let data = unsafe { std::slice::from_raw_parts_mut((place.addr as *mut u8).wrapping_offset(at), len) };
            if let Some((res, _)) = result {
                // SAFETY: the caller's contract; checked not to overlap the target data.
                unsafe { res.unpack(data) };
            }
            if !no_op {
                red.apply(input, data);
            }
            return Ok(());
        }
        let mut data = place.read()?;
        if let Some((res, _)) = result {
            // SAFETY: the caller's contract.
            unsafe { res.unpack(&data) };
        }
        if !no_op {
            red.apply(input, &mut data);
            place.write(&data)?;
        }
        Ok(())
    }

    /// MPI_Compare_and_swap: one element of a predefined type (`layout`); the target's value
    /// before goes to `result` (`origin.len()` writable bytes, which may alias `origin` and
    /// `compare`: those are read first).
    ///
    /// # Safety
    /// `result` is writable for `origin.len()` bytes until the operation completes.
    pub unsafe fn compare_and_swap(
        &self,
        origin: &[u8],
        compare: &[u8],
        result: *mut u8,
        layout: &Layout,
        target: c_int,
        disp: i64,
    ) -> MpiResult<()> {
        let spec = TargetSpec { rank: target, disp, count: 1, layout };
        let Some(place) = self.resolve(&spec)? else { return Ok(()) };
        let t = self.target_rank(target)?.expect("resolved above");
        if place.access == Access::Message {
            // SAFETY: the caller's contract.
            return unsafe { self.compare_and_swap_by_message(t, &place, origin, compare, result) };
        }
        let old = {
            let _held = self.acc_lock(t);
            let old = place.read()?;
            if old == compare {
                place.write(origin)?;
            }
            old
        };
        // SAFETY: the caller's contract; `old` is ours.
        unsafe { std::ptr::copy_nonoverlapping(old.as_ptr(), result, old.len()) };
        Ok(())
    }

    /// Holds target `t`'s accumulate lock until the guard drops. Critical sections are a few
    /// copies long: spin briefly, then yield (ranks may outnumber cores).
    fn acc_lock(&self, t: usize) -> AccGuard<'_> {
        let word = &self.control.lock_line(t).acc;
        let mut spins = 0u32;
        while word.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        AccGuard { word }
    }

    // ----- synchronisation

    /// MPI_Win_fence: ends the epoch before it (every operation of it is complete already)
    /// and opens the next unless `assert` has MPI_MODE_NOSUCCEED.
    /// `barrier` synchronises the window's members (at MPI_THREAD_MULTIPLE without holding
    /// the library while it waits: threads may fence different windows in different orders).
    pub fn fence(&self, assert: c_int, barrier: impl FnOnce() -> MpiResult<()>) -> MpiResult<()> {
        check_assert(assert, MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED)?;
        {
            let ep = self.epochs();
            if ep.passive() || ep.started.is_some() || ep.posted.is_some() {
                return err(
                    MPI_ERR_RMA_SYNC,
                    "MPI_Win_fence inside a lock, lock_all, start or post epoch of the same window",
                );
            }
        }
        // Operations by message are complete once their targets answered.
        self.settle(&self.message_targets())?;
        fence(Ordering::SeqCst);
        barrier()?;
        self.epochs().fence = assert & MPI_MODE_NOSUCCEED == 0;
        Ok(())
    }

    /// MPI_Win_lock.
    pub fn lock(&self, lock_type: c_int, rank: c_int, assert: c_int) -> MpiResult<()> {
        let kind = match lock_type {
            MPI_LOCK_EXCLUSIVE => LockKind::Exclusive,
            MPI_LOCK_SHARED => LockKind::Shared,
            _ => return err(MPI_ERR_LOCKTYPE, format!("invalid lock type {lock_type}")),
        };
        check_assert(assert, MPI_MODE_NOCHECK)?;
        let Some(t) = self.target_rank(rank)? else { return Ok(()) };
        {
            let mut ep = self.epochs();
            if ep.locks[t].is_some() || ep.lock_all {
                return err(MPI_ERR_RMA_SYNC, format!("target rank {t} is already locked by this process"));
            }
            if ep.started.is_some() {
                return err(MPI_ERR_RMA_SYNC, "MPI_Win_lock inside a start epoch of the same window");
            }
            ep.fence = false;
            ep.locks[t] = Some((kind, assert & MPI_MODE_NOCHECK == 0));
        }
        if assert & MPI_MODE_NOCHECK == 0 {
            if self.targets[t].access == Access::Message {
                if let Err(e) = self.lock_by_message(&[t], kind) {
                    self.epochs().locks[t] = None;
                    return Err(e);
                }
            } else {
                self.acquire(t, kind);
            }
        }
        Ok(())
    }

    /// MPI_Win_unlock: every operation to `rank` is complete already; releases the lock.
    pub fn unlock(&self, rank: c_int) -> MpiResult<()> {
        let Some(t) = self.target_rank(rank)? else { return Ok(()) };
        let (kind, taken) = {
            let mut ep = self.epochs();
            match ep.locks[t].take() {
                Some(held) => held,
                None => return err(MPI_ERR_RMA_SYNC, format!("target rank {t} is not locked by this process")),
            }
        };
        if self.targets[t].access == Access::Message {
            return self.unlock_by_message(&[t], taken.then_some(kind));
        }
        if taken {
            self.release(t, kind);
            self.wake_all();
        }
        Ok(())
    }

    /// MPI_Win_lock_all: a shared lock on every member.
    pub fn lock_all(&self, assert: c_int) -> MpiResult<()> {
        check_assert(assert, MPI_MODE_NOCHECK)?;
        {
            let mut ep = self.epochs();
            if ep.passive() {
                return err(MPI_ERR_RMA_SYNC, "MPI_Win_lock_all while this process holds locks on the window");
            }
            if ep.started.is_some() {
                return err(MPI_ERR_RMA_SYNC, "MPI_Win_lock_all inside a start epoch of the same window");
            }
            ep.fence = false;
            ep.lock_all = true;
            ep.lock_all_taken = assert & MPI_MODE_NOCHECK == 0;
        }
        if assert & MPI_MODE_NOCHECK == 0 {
            for t in (0..self.n()).filter(|&t| self.targets[t].access != Access::Message) {
                self.acquire(t, LockKind::Shared);
            }
            // On an error the shared locks taken stay (MPI_Win_unlock_all releases them all).
            self.lock_by_message(&self.message_targets(), LockKind::Shared)?;
        }
        Ok(())
    }

    /// MPI_Win_unlock_all.
    pub fn unlock_all(&self) -> MpiResult<()> {
        let taken = {
            let mut ep = self.epochs();
            if !ep.lock_all {
                return err(MPI_ERR_RMA_SYNC, "MPI_Win_unlock_all without MPI_Win_lock_all");
            }
            ep.lock_all = false;
            ep.lock_all_taken
        };
        if taken {
            for t in (0..self.n()).filter(|&t| self.targets[t].access != Access::Message) {
                self.release(t, LockKind::Shared);
            }
            self.wake_all();
        }
        self.unlock_by_message(&self.message_targets(), taken.then_some(LockKind::Shared))
    }

    /// MPI_Win_flush, MPI_Win_flush_local (`rank` Some) and their `_all` forms: operations
    /// on memory reached here complete as they are issued, so for them this orders memory
    /// only; those by message complete (locally and at the target alike) when their targets
    /// answered.
    pub fn flush(&self, rank: Option<c_int>, what: &str) -> MpiResult<()> {
        let ep = self.epochs();
        let mut by_message = Vec::new();
        match rank {
            Some(r) => {
                if let Some(t) = self.target_rank(r)? {
                    ep.check_passive(t, what)?;
                    if self.targets[t].access == Access::Message {
                        by_message.push(t);
                    }
                }
            }
            None if !ep.passive() => {
                return err(
                    MPI_ERR_RMA_SYNC,
                    format!("{what} needs a passive-target epoch (MPI_Win_lock or MPI_Win_lock_all)"),
                );
            }
            None => by_message = self.message_targets(),
        }
        drop(ep);
        self.serve();
        self.settle(&by_message)?;
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// Marks this member's agent as running (see `serving`).
    pub fn set_serving(&self) {
        self.serving.store(true, Ordering::Relaxed);
    }

    /// Drives progress once when this member's agent serves others (MPI_Win_sync, and every
    /// operation and flush).
    pub fn serve(&self) {
        if self.serving.load(Ordering::Relaxed) {
            let _ = runtime::with(|rt| {
                rt.engine.progress();
                Ok(())
            });
        }
    }

    /// Waits until the operations of this process toward `rank` have completed locally
    /// (request-based operations return completed requests).
    pub fn complete_locally(&self, rank: c_int) -> MpiResult<()> {
        match self.target_rank(rank)? {
            Some(t) if self.targets[t].access == Access::Message => self.settle(&[t]),
            _ => Ok(()),
        }
    }

    /// Whether request-based operations may target `rank` now (they need a passive epoch).
    pub fn check_request_based(&self, rank: c_int, what: &str) -> MpiResult<()> {
        if let Some(t) = self.target_rank(rank)? {
            self.epochs().check_passive(t, what)?;
        }
        Ok(())
    }

    /// Takes target `t`'s passive lock, progressing (and sleeping when ranks outnumber cores)
    /// while another process holds it.
    fn acquire(&self, t: usize, kind: LockKind) {
        let try_take = || self.try_lock(t, kind);
        if try_take() {
            return;
        }
        // The wait may ask again after a success (before sleeping, and once more on waking):
        // taking the lock twice would wait for ourselves.
        let taken = std::cell::Cell::new(false);
        wait_for(|| {
            if !taken.get() && try_take() {
                taken.set(true);
            }
            taken.get()
        });
    }

    /// Takes target `t`'s lock word if it is free for `kind`.
    fn try_lock(&self, t: usize, kind: LockKind) -> bool {
        let word = &self.control.lock_line(t).rw;
        match kind {
            LockKind::Exclusive => word.compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed).is_ok(),
            LockKind::Shared => {
                let v = word.load(Ordering::Relaxed);
                v & WRITER == 0 && word.compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
            }
        }
    }

    /// Releases target `t`'s lock word; the caller then rings the doorbells (once for all).
    fn release(&self, t: usize, kind: LockKind) {
        let word = &self.control.lock_line(t).rw;
        match kind {
            LockKind::Exclusive => word.store(0, Ordering::Release),
            LockKind::Shared => {
                word.fetch_sub(1, Ordering::Release);
            }
        }
    }

    /// Rings the doorbells of the members on this node (a waiter for a lock or a counter may
    /// sleep; members elsewhere wait for messages).
    fn wake_all(&self) {
        let _ = runtime::with(|rt| {
            self.ring_node(&rt.engine);
            Ok(())
        });
    }

    fn ring_node(&self, e: &crate::p2p::Engine) {
        if let Some(seg) = e.segment() {
            seg.notify_many(self.node_worlds.iter().copied());
        }
    }

    /// MPI_Win_post: exposes this member's memory to the origins `group` (window ranks).
    pub fn post(&self, group: Vec<usize>, assert: c_int) -> MpiResult<()> {
        check_assert(assert, MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT)?;
        {
            let mut ep = self.epochs();
            if ep.posted.is_some() {
                return err(MPI_ERR_RMA_SYNC, "MPI_Win_post while an exposure epoch is open (MPI_Win_wait first)");
            }
            ep.fence = false;
            ep.posted = Some(group.clone());
        }
        fence(Ordering::SeqCst);
        let by_message: Vec<usize> =
            group.iter().copied().filter(|&o| self.targets[o].access == Access::Message).collect();
        for &o in group.iter().filter(|o| !by_message.contains(o)) {
            self.control.counter(0, self.rank, o).fetch_add(1, Ordering::Release);
        }
        self.wake_all();
        self.notify_by_message(&by_message, remote::Kind::Post)
    }

    /// MPI_Win_start: waits until every target of `group` has posted to this member.
    pub fn start(&self, group: Vec<usize>, assert: c_int) -> MpiResult<()> {
        check_assert(assert, MPI_MODE_NOCHECK)?;
        let seen: Vec<u32> = {
            let mut ep = self.epochs();
            if ep.started.is_some() || ep.passive() {
                return err(MPI_ERR_RMA_SYNC, "MPI_Win_start while an access epoch is open");
            }
            ep.fence = false;
            group.iter().map(|&t| ep.posts_seen[t]).collect()
        };
        let me = self.rank;
        wait_for(|| {
            group.iter().zip(&seen).all(|(&t, &s)| self.control.counter(0, t, me).load(Ordering::Acquire) != s)
        });
        let mut ep = self.epochs();
        for &t in &group {
            ep.posts_seen[t] = ep.posts_seen[t].wrapping_add(1);
        }
        ep.started = Some(group);
        Ok(())
    }

    /// MPI_Win_complete: ends the access epoch, telling each target.
    pub fn complete(&self) -> MpiResult<()> {
        let group = match self.epochs().started.take() {
            Some(g) => g,
            None => return err(MPI_ERR_RMA_SYNC, "MPI_Win_complete without MPI_Win_start"),
        };
        fence(Ordering::SeqCst);
        let by_message: Vec<usize> =
            group.iter().copied().filter(|&t| self.targets[t].access == Access::Message).collect();
        for &t in group.iter().filter(|t| !by_message.contains(t)) {
            self.control.counter(1, t, self.rank).fetch_add(1, Ordering::Release);
        }
        self.wake_all();
        // Each target's agent applies the operations before it reads the completion.
        self.settle(&by_message)?;
        self.notify_by_message(&by_message, remote::Kind::Complete)
    }

    /// MPI_Win_wait (`block`) and MPI_Win_test: whether every origin of the exposure epoch
    /// has completed; ends the epoch when so.
    pub fn wait(&self, block: bool) -> MpiResult<bool> {
        let (group, seen) = {
            let ep = self.epochs();
            let Some(g) = ep.posted.clone() else {
                return err(MPI_ERR_RMA_SYNC, "MPI_Win_wait or MPI_Win_test without MPI_Win_post");
            };
            let seen: Vec<u32> = g.iter().map(|&o| ep.completions_seen[o]).collect();
            (g, seen)
        };
        let me = self.rank;
        let all_done =
            || group.iter().zip(&seen).all(|(&o, &s)| self.control.counter(1, me, o).load(Ordering::Acquire) != s);
        if block {
            wait_for(all_done);
        } else if !all_done() {
            // Lets messages progress between tests.
            let _ = runtime::with(|rt| {
                rt.engine.progress();
                Ok(())
            });
            return Ok(false);
        }
        let mut ep = self.epochs();
        for &o in &group {
            ep.completions_seen[o] = ep.completions_seen[o].wrapping_add(1);
        }
        ep.posted = None;
        fence(Ordering::SeqCst);
        Ok(true)
    }

    /// MPI_ERR_RMA_SYNC when an epoch is still open (MPI_Win_free).
    pub fn check_closed(&self) -> MpiResult<()> {
        let ep = self.epochs();
        if ep.passive() || ep.started.is_some() || ep.posted.is_some() {
            return err(MPI_ERR_RMA_SYNC, "the window is freed while a lock, start or post epoch is open");
        }
        Ok(())
    }
}

struct AccGuard<'a> {
    word: &'a AtomicU32,
}

impl Drop for AccGuard<'_> {
    fn drop(&mut self) {
        self.word.store(0, Ordering::Release);
    }
}

use crate::abi::types::MPI_Op;

/// Waits until `done` holds, progressing messages meanwhile (another member may wait for
/// this one in a receive) and sleeping between checks when the doorbell is quiet. `done` may
/// be asked again after it said true, so it must not change anything the second time.
fn wait_for(mut done: impl FnMut() -> bool) {
    let _ = runtime::blocking(|_| Ok(()), |_, _| done(), |_, _| Ok(Some(())));
}

fn check_assert(assert: c_int, allowed: c_int) -> MpiResult<()> {
    if assert & !allowed != 0 {
        return err(MPI_ERR_ASSERT, format!("invalid assert argument ({assert})"));
    }
    Ok(())
}

/// The origin and target data must be as long (their type signatures must match).
fn same_bytes(origin: usize, target: usize) -> MpiResult<()> {
    if origin != target {
        return err(
            MPI_ERR_TYPE,
            format!("the origin data ({origin} bytes) and the target data ({target} bytes) differ in size"),
        );
    }
    Ok(())
}

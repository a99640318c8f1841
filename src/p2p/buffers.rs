//! User buffers seen by the engine. The MPI rules (a buffer handed to an operation stays valid
//! and untouched by the user until the operation completes) are what make these raw pointers
//! sound; the constructors are `unsafe` because the caller vouches for them.

use crate::datatype::Layout;

/// Smallest average block (bytes) for which a sender offers its non-contiguous data as a list
/// of blocks the receiver reads in place (send-gather) rather than packing it first. The
/// kernel pins the pages of every *remote* iovec of a process_vm_readv separately (about
/// 150 ns each here, the cost of packing ~4 KiB), so below this a pack plus one contiguous
/// read is faster. Measured with bench_pack (docs/performance.md, "density rule").
pub const MIN_REMOTE_BLOCK: usize = 4096;

/// Smallest average block (bytes) for which a receiver reads straight into its own
/// non-contiguous blocks (receive-scatter) rather than into a staging copy it then unpacks.
/// A *local* iovec costs ~20 ns in the kernel's copy loop, the cost of unpacking ~0.5-1 KiB.
pub const MIN_LOCAL_BLOCK: usize = 1024;

/// Counts the blocks a walk visits (adjacent blocks of a vector count once).
struct CountBlocks(usize);

impl crate::datatype::flat::Visit for CountBlocks {
    fn block(&mut self, _off: isize, _len: usize) {
        self.0 += 1;
    }
    fn vector(&mut self, _off: isize, count: usize, stride: isize, len: usize) {
        self.0 += if stride == len as isize { 1 } else { count };
    }
}

/// A block list (address, length) of a buffer in this process, shared with the plan cache.
pub type Blocks = std::sync::Arc<[(usize, usize)]>;

/// The block lists ("iovec plans") of recent non-contiguous buffers, keyed by (layout, base
/// address, element count, bytes), so a program that sends or receives the same layout at the
/// same place again (the common case: a halo exchange, a loop) skips the datatype walks: the
/// density count and the list itself. The software form of the seeds' UMR cache. A plan is a
/// pure function of its key and each entry holds its layout (so no other type can take its
/// identity), hence an entry is never stale. Also remembers the block count of layouts too
/// sparse for a list (their list is never built).
#[derive(Default)]
pub struct PlanCache {
    entries: Vec<Plan>,
    /// Entry replaced next once full (round robin).
    victim: usize,
    hits: u64,
}

struct Plan {
    layout: Layout,
    base: usize,
    count: usize,
    len: usize,
    /// Blocks the walk visits (adjacent blocks of a vector count once).
    nblocks: usize,
    /// Built on the first look-up that wants it.
    blocks: Option<Blocks>,
}

impl PlanCache {
    /// Entries kept: a few layouts in flight at once (both directions of an exchange, a
    /// window of sends from different places).
    const CAPACITY: usize = 64;
    /// Larger lists are not kept (memory), only computed.
    const MAX_BLOCKS: usize = 1 << 16;

    /// The block list of `len` bytes of `count` elements of `layout` at `base`, or None when
    /// its blocks are smaller than `min_block` bytes on average (then a packed copy is faster).
    pub fn plan(
        &mut self,
        layout: &Layout,
        base: *const u8,
        count: usize,
        len: usize,
        min_block: usize,
    ) -> Option<Blocks> {
        let base = base as usize;
        let dense = |nblocks: usize| nblocks > 0 && len / nblocks >= min_block;
        let build = || -> Blocks { layout.iovecs(base as *const u8, count, 0..len).into() };
        if let Some(p) =
            self.entries.iter_mut().find(|p| (p.base, p.count, p.len) == (base, count, len) && p.layout.same_as(layout))
        {
            self.hits += 1;
            if !dense(p.nblocks) {
                return None;
            }
            return Some(p.blocks.get_or_insert_with(build).clone());
        }
        let mut counter = CountBlocks(0);
        layout.walk(count, 0..len, &mut counter);
        let nblocks = counter.0;
        let blocks = dense(nblocks).then(build);
        if nblocks <= Self::MAX_BLOCKS {
            let plan = Plan { layout: layout.clone(), base, count, len, nblocks, blocks: blocks.clone() };
            if self.entries.len() < Self::CAPACITY {
                self.entries.push(plan);
            } else {
                self.entries[self.victim] = plan;
                self.victim = (self.victim + 1) % Self::CAPACITY;
            }
        }
        blocks
    }

    /// How many look-ups found their plan (for tests).
    pub fn hits(&self) -> u64 {
        self.hits
    }
}

/// The bytes a send carries: the user's memory when contiguous; else the user's blocks, packed
/// into a copy only when the protocol needs contiguous bytes (`ensure_packed`).
pub struct SendBuf {
    ptr: *const u8,
    len: usize,
    /// Keeps the packed or owned bytes alive while `ptr` points into them.
    owned: Option<Vec<u8>>,
    /// The user's non-contiguous data, not packed yet (boxed: rare, and it keeps the common
    /// request small).
    scattered: Option<Box<(*const u8, Layout, usize)>>,
    /// A block list too long for the rendezvous slot, in wire form, kept alive here for the
    /// receiver to read out of band (see `offer_out_of_band`).
    offered: Option<Vec<[u64; 2]>>,
}

impl SendBuf {
    /// # Safety
    /// `base` must point at `count` elements of `layout` that stay valid and unmodified until
    /// the send completes.
    pub unsafe fn new(base: *const u8, layout: Layout, count: usize) -> SendBuf {
        let len = layout.size * count;
        if len == 0 {
            return SendBuf { ptr: base, len, owned: None, scattered: None, offered: None };
        }
        if let Some(at) = layout.contiguous_at() {
            // Contiguous data (perhaps starting away from the buffer pointer, lb != 0): send
            // it in place. `wrapping_offset` because MPI_BOTTOM is a null base.
            return SendBuf { ptr: base.wrapping_offset(at), len, owned: None, scattered: None, offered: None };
        }
        SendBuf {
            ptr: std::ptr::null(),
            len,
            owned: None,
            scattered: Some(Box::new((base, layout, count))),
            offered: None,
        }
    }

    /// Elements `[first, first + n)` (of `elem_bytes` bytes of data each) of this send as a
    /// send of their own: in place in the user's memory (the constructor's contract covers
    /// every element of the buffer), a copy of engine-owned bytes.
    pub fn part(&self, first: usize, n: usize, elem_bytes: usize) -> SendBuf {
        if let Some((base, layout, count)) = self.scattered.as_deref() {
            assert!(first + n <= *count);
            let at = base.wrapping_offset(layout.element_offset(first));
            return SendBuf {
                ptr: std::ptr::null(),
                len: n * layout.size,
                owned: None,
                scattered: Some(Box::new((at, layout.clone(), n))),
                offered: None,
            };
        }
        let range = first * elem_bytes..(first + n) * elem_bytes;
        assert!(range.end <= self.len);
        if self.owned.is_some() {
            return SendBuf::owned(self.bytes()[range].to_vec());
        }
        SendBuf {
            ptr: self.ptr.wrapping_add(range.start),
            len: range.len(),
            owned: None,
            scattered: None,
            offered: None,
        }
    }

    /// A send of bytes the engine owns (buffered sends, internal messages).
    pub fn owned(data: Vec<u8>) -> SendBuf {
        SendBuf { ptr: data.as_ptr(), len: data.len(), owned: Some(data), scattered: None, offered: None }
    }

    /// The engine-owned bytes back (of `owned`, or a packed copy), for reuse once sent.
    pub fn into_owned(self) -> Option<Vec<u8>> {
        self.owned
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether `bytes` may be called without packing first.
    pub fn is_contiguous(&self) -> bool {
        self.scattered.is_none()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Packs non-contiguous data into a copy (once), so `bytes` and `addr` describe it.
    pub fn ensure_packed(&mut self) {
        if let Some(scattered) = self.scattered.take() {
            let (base, layout, count) = *scattered;
            // SAFETY: the constructor's caller vouches for `count` readable elements at `base`
            // until the send completes.
            let packed = unsafe { layout.pack_to_vec(base, count, 0..self.len) };
            self.ptr = packed.as_ptr();
            self.owned = Some(packed);
        }
    }

    /// Copies bytes `[offset, offset + out.len())` of the message into `out`: straight from the
    /// user's blocks when the data is non-contiguous and not packed (a sender streaming through
    /// the ring packs each slot in place: one copy, no packed buffer).
    #[inline]
    pub fn copy_to(&self, offset: usize, out: &mut [u8]) {
        assert!(offset + out.len() <= self.len);
        match self.scattered.as_deref() {
            // SAFETY: the constructor's caller vouches for `count` readable elements at `base`
            // until the send completes; `out` is separate memory with room for the range.
            Some((base, layout, count)) => unsafe {
                layout.pack_to_ptr(*base, *count, offset..offset + out.len(), out.as_mut_ptr())
            },
            None => crate::transport::shm::copy_small(out, &self.bytes()[offset..offset + out.len()]),
        }
    }

    /// The blocks of a non-contiguous send as (address, length) in this process, when they are
    /// large enough on average (`MIN_REMOTE_BLOCK`) to be read in place; None otherwise.
    pub fn block_list(&self, plans: &mut PlanCache) -> Option<Blocks> {
        let (base, layout, count) = self.scattered.as_deref()?;
        plans.plan(layout, *base, *count, self.len, MIN_REMOTE_BLOCK)
    }

    /// Keeps `blocks` in wire form (address, length as u64 pairs) until the send completes,
    /// for a receiver to read with a single-copy read of its own; returns the list's address.
    pub fn offer_out_of_band(&mut self, blocks: &[(usize, usize)]) -> u64 {
        let wire: Vec<[u64; 2]> = blocks.iter().map(|&(a, l)| [a as u64, l as u64]).collect();
        self.offered.insert(wire).as_ptr() as u64
    }

    /// Address peers read with single-copy transfers (contiguous or packed data).
    pub fn addr(&self) -> u64 {
        debug_assert!(self.scattered.is_none(), "address of unpacked non-contiguous data");
        self.ptr as u64
    }

    /// The bytes, contiguous; non-contiguous data must have been packed (`ensure_packed`).
    pub fn bytes(&self) -> &[u8] {
        assert!(self.scattered.is_none(), "bytes of unpacked non-contiguous data");
        if self.len == 0 {
            return &[];
        }
        // SAFETY: by construction ptr/len describe the user's contiguous buffer (valid per
        // `new`'s contract) or our own packed vector.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, packing first if needed.
    pub fn packed_bytes(&mut self) -> &[u8] {
        self.ensure_packed();
        self.bytes()
    }
}

/// Where the bytes of a receive go: straight into the user's memory when the data is
/// contiguous or moved as a block list, unpacked piece by piece as they arrive (`put`) into a
/// sparse layout, else (a single-copy read needing one contiguous destination) into a staging
/// vector unpacked when the receive completes.
pub struct RecvBuf {
    /// Start of the data in the user's memory when it is contiguous (else unused).
    direct: *mut u8,
    capacity: usize,
    dest: Dest,
}

/// The less common destinations, kept out of the way of the contiguous one.
enum Dest {
    /// `capacity` bytes of the user's memory at `direct`.
    Contiguous,
    /// Bytes the engine owns.
    Owned(Vec<u8>),
    /// The user's non-contiguous elements (boxed: keeps the common request small).
    Scattered(SpareBox),
}

/// The box of a non-contiguous receive, handed back to `SPARE_SCATTERED` when dropped (the
/// drop glue of `Dest` runs this only for that variant: contiguous receives pay nothing).
struct SpareBox(Option<Box<Scattered>>);

impl std::ops::Deref for SpareBox {
    type Target = Scattered;
    fn deref(&self) -> &Scattered {
        self.0.as_deref().expect("a receive box is taken only when dropped")
    }
}

impl std::ops::DerefMut for SpareBox {
    fn deref_mut(&mut self) -> &mut Scattered {
        self.0.as_deref_mut().expect("a receive box is taken only when dropped")
    }
}

impl Drop for SpareBox {
    fn drop(&mut self) {
        let Some(mut b) = self.0.take() else { return };
        // Release the type and the staged bytes now; keep the box.
        b.layout = crate::datatype::BYTE;
        b.staging = None;
        let _ = SPARE_SCATTERED.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < SPARE_SCATTERED_MAX {
                p.push(b);
            }
        });
    }
}

struct Scattered {
    base: *mut u8,
    layout: Layout,
    count: usize,
    /// Staged bytes, allocated on first use.
    staging: Option<Vec<u8>>,
}

thread_local! {
    /// Boxes of finished non-contiguous receives, reused: a window of small non-contiguous
    /// receives allocates and frees nothing in steady state (the allocator's round trip was
    /// about a quarter of the library's instructions per 16-byte message).
    // Boxes, not values: the point is to hand the very allocation back to a `Dest::Scattered`.
    #[allow(clippy::vec_box)]
    static SPARE_SCATTERED: std::cell::RefCell<Vec<Box<Scattered>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Spare boxes kept per thread.
const SPARE_SCATTERED_MAX: usize = 64;

impl RecvBuf {
    /// # Safety
    /// `base` must point at writable memory for `count` elements of `layout`, valid and not
    /// accessed by the user until the receive completes.
    pub unsafe fn new(base: *mut u8, layout: Layout, count: usize) -> RecvBuf {
        let capacity = layout.size * count;
        match layout.contiguous_at() {
            Some(at) => RecvBuf { direct: base.wrapping_offset(at), capacity, dest: Dest::Contiguous },
            None => {
                let s = Scattered { base, layout, count, staging: None };
                let spare = SPARE_SCATTERED.try_with(|p| p.borrow_mut().pop()).ok().flatten();
                let boxed = match spare {
                    Some(mut b) => {
                        *b = s;
                        b
                    }
                    None => Box::new(s),
                };
                RecvBuf { direct: std::ptr::null_mut(), capacity, dest: Dest::Scattered(SpareBox(Some(boxed))) }
            }
        }
    }

    /// A receive into memory the engine owns.
    pub fn owned(len: usize) -> RecvBuf {
        // Sized by what arrives (see `slice_mut`): `len` is only the limit, and sparse reductions
        // post receives far larger than most of their messages.
        RecvBuf::owned_in(Vec::new(), len)
    }

    /// A receive into memory the engine owns, reusing `v`'s allocation (its pages stay
    /// mapped, so large receives do not fault fresh memory in each time).
    pub fn owned_in(mut v: Vec<u8>, len: usize) -> RecvBuf {
        v.clear();
        RecvBuf { direct: std::ptr::null_mut(), capacity: len, dest: Dest::Owned(v) }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether a message of `n` bytes (at most the capacity) can be whole basic elements of
    /// this receive's type. False means the send's type signature does not match (3 chars
    /// received into a vector of ints). Checked, as MPICH does, for non-contiguous types only:
    /// contiguous bytes land as they came whatever their type (MPICH 4.0.2 accepts 6 bytes
    /// into MPI_INT), and a message as long as the buffer ends on an element anyway.
    #[inline]
    pub fn whole_elements(&self, n: usize) -> bool {
        match &self.dest {
            Dest::Scattered(s) => s.layout.may_end_at(n, self.capacity),
            Dest::Contiguous | Dest::Owned(_) => true,
        }
    }

    /// Bytes `[offset, offset + len)` of this receive's destination as a receive of their own:
    /// any range of contiguous data, whole elements of non-contiguous data; None for other
    /// ranges and for engine-owned memory.
    pub fn part(&self, offset: usize, len: usize) -> Option<RecvBuf> {
        assert!(offset + len <= self.capacity);
        match &self.dest {
            Dest::Contiguous => {
                Some(RecvBuf { direct: self.direct.wrapping_add(offset), capacity: len, dest: Dest::Contiguous })
            }
            Dest::Owned(_) => None,
            Dest::Scattered(s) => {
                let size = s.layout.size;
                if size == 0 || !offset.is_multiple_of(size) || !len.is_multiple_of(size) {
                    return None;
                }
                let at = s.base.wrapping_offset(s.layout.element_offset(offset / size));
                // SAFETY: elements [offset / size, (offset + len) / size) of the `count` at
                // `base`, which this receive's constructor vouched for until it completes; the
                // caller receives into each range once, and not through `self` meanwhile.
                Some(unsafe { RecvBuf::new(at, s.layout.clone(), len / size) })
            }
        }
    }

    /// The destination of bytes `[offset, offset + len)` of the message (within capacity).
    #[inline]
    pub fn slice_mut(&mut self, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset + len <= self.capacity);
        let cap = self.capacity;
        match &mut self.dest {
            Dest::Contiguous => {
                if len == 0 {
                    return &mut [];
                }
                // SAFETY: contiguous data, so bytes [0, capacity) from `direct` are the user's
                // elements, ours until completion (constructor contract); the range was checked.
                unsafe { std::slice::from_raw_parts_mut(self.direct.add(offset), len) }
            }
            Dest::Owned(v) => {
                if v.len() < offset + len {
                    v.resize(offset + len, 0);
                }
                &mut v[offset..offset + len]
            }
            Dest::Scattered(s) => &mut s.staging.get_or_insert_with(|| vec![0u8; cap])[offset..offset + len],
        }
    }

    /// The destination of the first `n` bytes as (address, length) blocks in this process, for
    /// a single-copy transfer straight into the user's memory: one block when contiguous, the
    /// type's blocks when dense enough; None means "use `slice_mut`" (staging).
    pub fn block_list(&self, n: usize, plans: &mut PlanCache) -> Option<Blocks> {
        match &self.dest {
            Dest::Contiguous => Some(std::sync::Arc::new([(self.direct as usize, n)])),
            Dest::Owned(_) => None,
            Dest::Scattered(s) => plans.plan(&s.layout, s.base, s.count, n, MIN_LOCAL_BLOCK),
        }
    }

    /// Whether arriving bytes must be unpacked into a non-contiguous layout (then `put`
    /// unpacks each piece as it arrives instead of staging the message).
    pub fn is_scattered(&self) -> bool {
        matches!(self.dest, Dest::Scattered(_))
    }

    /// Writes `bytes`, bytes `[offset, offset + bytes.len())` of the message (within capacity),
    /// to their destination: copied, or unpacked straight into a non-contiguous layout (no
    /// staging).
    #[inline]
    pub fn put(&mut self, offset: usize, bytes: &[u8]) {
        if let Dest::Scattered(s) = &self.dest {
            assert!(offset + bytes.len() <= self.capacity);
            // SAFETY: the user's `count` elements at `base` are writable and ours until
            // completion (constructor contract); `bytes` is separate memory.
            unsafe { s.layout.unpack(s.base, s.count, offset, bytes) };
        } else {
            crate::transport::shm::copy_small(self.slice_mut(offset, bytes.len()), bytes);
        }
    }

    /// Moves staged bytes into the user's layout; called once, when the receive completes.
    #[inline]
    pub fn finish(&mut self, received: usize) {
        if let Dest::Scattered(s) = &self.dest
            && let Some(staged) = s.staging.as_ref()
        {
            let n = received.min(staged.len());
            // SAFETY: the user's `count` elements at `base` are writable and ours until
            // completion (constructor contract); the staging vector is separate memory.
            unsafe { s.layout.unpack(s.base, s.count, 0, &staged[..n]) };
        }
    }

    /// The received bytes of an engine-owned buffer.
    pub fn into_owned(self) -> Vec<u8> {
        match self.dest {
            Dest::Owned(v) => v,
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::consts::MPI_DOUBLE;
    use crate::datatype::{self, vector};

    /// A committed vector of `n` blocks of 64 doubles, `stride` doubles apart.
    fn vec_layout(n: i64, stride: i64) -> (i32, Layout) {
        let t = vector(n, 64, stride, MPI_DOUBLE, false).unwrap();
        datatype::commit(t).unwrap();
        (t, datatype::layout(t).unwrap())
    }

    #[test]
    fn plans_are_reused_only_for_the_same_key() {
        let (t, l) = vec_layout(8, 96);
        let mut cache = PlanCache::default();
        let base = 0x10000 as *const u8;
        let first = cache.plan(&l, base, 1, l.size, 512).unwrap();
        assert_eq!(first.len(), 8);
        assert_eq!(first[1], (0x10000 + 96 * 8, 512));
        assert_eq!(cache.plan(&l, base, 1, l.size, 512).unwrap(), first);
        assert_eq!(cache.hits(), 1);
        // Another count, length or address is another plan.
        // (the first element's last block touches the second's first: merged)
        assert_eq!(cache.plan(&l, base, 2, 2 * l.size, 512).unwrap().len(), 15);
        assert_eq!(cache.plan(&l, base, 2, l.size, 512).unwrap().len(), 8);
        assert_eq!(cache.plan(&l, base.wrapping_add(8), 1, l.size, 512).unwrap()[0].0, 0x10008);
        assert_eq!(cache.hits(), 1);
        // A freed type's successor never takes its plans, even at the same handle.
        datatype::free(t).unwrap();
        let (t2, l2) = vec_layout(8, 128);
        assert!(!l2.same_as(&l));
        assert_eq!(cache.plan(&l2, base, 1, l2.size, 512).unwrap()[1], (0x10000 + 128 * 8, 512));
        // More keys than the capacity: still right, the oldest go.
        for i in 0..2 * PlanCache::CAPACITY {
            let b = base.wrapping_add(i * 8);
            assert_eq!(cache.plan(&l2, b, 1, l2.size, 512).unwrap()[0], (0x10000 + i * 8, 512));
        }
        assert!(cache.entries.len() <= PlanCache::CAPACITY);
        datatype::free(t2).unwrap();
    }

    #[test]
    fn sparse_layouts_are_remembered_as_not_worth_a_list() {
        let t = vector(1000, 1, 2, MPI_DOUBLE, false).unwrap();
        datatype::commit(t).unwrap();
        let l = datatype::layout(t).unwrap();
        let mut cache = PlanCache::default();
        assert!(cache.plan(&l, 0x1000 as *const u8, 1, l.size, 512).is_none());
        assert!(cache.plan(&l, 0x1000 as *const u8, 1, l.size, 512).is_none());
        assert_eq!(cache.hits(), 1);
        // The same entry serves a lower density threshold (8-byte blocks), building its list.
        let list = cache.plan(&l, 0x1000 as *const u8, 1, l.size, 8).unwrap();
        assert_eq!((list.len(), list[1]), (1000, (0x1000 + 16, 8)));
        assert_eq!(cache.hits(), 2);
        datatype::free(t).unwrap();
    }
}

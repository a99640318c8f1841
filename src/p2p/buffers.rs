//! User buffers seen by the engine. The MPI rules (a buffer handed to an operation stays valid
//! and untouched by the user until the operation completes) are what make these raw pointers
//! sound; the constructors are `unsafe` because the caller vouches for them.

use crate::datatype::Layout;

/// Smallest average block (bytes) for which a non-contiguous message moves as a list of
/// blocks in one single-copy transfer (send-gather / receive-scatter) rather than through a
/// packed copy: below it the per-block cost of the kernel's iovec walk exceeds a memcpy.
pub const MIN_GATHER_BLOCK: usize = 256;

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

/// Whether `count` elements of `layout` are dense enough for a block-list transfer.
fn worth_a_block_list(layout: &Layout, count: usize, len: usize) -> bool {
    let mut blocks = CountBlocks(0);
    layout.walk(count, 0..len, &mut blocks);
    blocks.0 > 0 && len / blocks.0 >= MIN_GATHER_BLOCK
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
}

impl SendBuf {
    /// # Safety
    /// `base` must point at `count` elements of `layout` that stay valid and unmodified until
    /// the send completes.
    pub unsafe fn new(base: *const u8, layout: Layout, count: usize) -> SendBuf {
        let len = layout.size * count;
        if len == 0 {
            return SendBuf { ptr: base, len, owned: None, scattered: None };
        }
        if let Some(at) = layout.contiguous_at() {
            // Contiguous data (perhaps starting away from the buffer pointer, lb != 0): send
            // it in place. `wrapping_offset` because MPI_BOTTOM is a null base.
            return SendBuf { ptr: base.wrapping_offset(at), len, owned: None, scattered: None };
        }
        SendBuf { ptr: std::ptr::null(), len, owned: None, scattered: Some(Box::new((base, layout, count))) }
    }

    /// A send of bytes the engine owns (buffered sends, internal messages).
    pub fn owned(data: Vec<u8>) -> SendBuf {
        SendBuf { ptr: data.as_ptr(), len: data.len(), owned: Some(data), scattered: None }
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
            let mut packed = vec![0u8; self.len];
            // SAFETY: the constructor's caller vouches for `count` readable elements at `base`
            // until the send completes; `packed` is ours.
            unsafe { layout.pack(base, count, 0..self.len, &mut packed) };
            self.ptr = packed.as_ptr();
            self.owned = Some(packed);
        }
    }

    /// The blocks of a non-contiguous send as (address, length) in this process, when they
    /// are at most `max` and dense enough to move without packing; None otherwise.
    pub fn block_list(&self, max: usize) -> Option<Vec<(usize, usize)>> {
        let (base, layout, count) = self.scattered.as_deref()?;
        if !worth_a_block_list(layout, *count, self.len) {
            return None;
        }
        let list = layout.iovecs(*base, *count, 0..self.len);
        (list.len() <= max).then_some(list)
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
/// contiguous or moved as a block list, else into a staging vector unpacked when the receive
/// completes.
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
    Scattered(Box<Scattered>),
}

struct Scattered {
    base: *mut u8,
    layout: Layout,
    count: usize,
    /// Staged bytes, allocated on first use.
    staging: Option<Vec<u8>>,
}

impl RecvBuf {
    /// # Safety
    /// `base` must point at writable memory for `count` elements of `layout`, valid and not
    /// accessed by the user until the receive completes.
    pub unsafe fn new(base: *mut u8, layout: Layout, count: usize) -> RecvBuf {
        let capacity = layout.size * count;
        match layout.contiguous_at() {
            Some(at) => RecvBuf { direct: base.wrapping_offset(at), capacity, dest: Dest::Contiguous },
            None => RecvBuf {
                direct: std::ptr::null_mut(),
                capacity,
                dest: Dest::Scattered(Box::new(Scattered { base, layout, count, staging: None })),
            },
        }
    }

    /// A receive into memory the engine owns.
    pub fn owned(len: usize) -> RecvBuf {
        RecvBuf { direct: std::ptr::null_mut(), capacity: len, dest: Dest::Owned(vec![0u8; len]) }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
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
            Dest::Owned(v) => &mut v[offset..offset + len],
            Dest::Scattered(s) => &mut s.staging.get_or_insert_with(|| vec![0u8; cap])[offset..offset + len],
        }
    }

    /// The destination of the first `n` bytes as (address, length) blocks in this process, for
    /// a single-copy transfer straight into the user's memory: one block when contiguous, the
    /// type's blocks when dense enough; None means "use `slice_mut`" (staging).
    pub fn block_list(&self, n: usize) -> Option<Vec<(usize, usize)>> {
        match &self.dest {
            Dest::Contiguous => Some(vec![(self.direct as usize, n)]),
            Dest::Owned(_) => None,
            Dest::Scattered(s) => {
                worth_a_block_list(&s.layout, s.count, n).then(|| s.layout.iovecs(s.base, s.count, 0..n))
            }
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

//! User buffers seen by the engine. The MPI rules (a buffer handed to an operation stays valid
//! and untouched by the user until the operation completes) are what make these raw pointers
//! sound; the constructors are `unsafe` because the caller vouches for them.

use crate::datatype::Layout;

/// The bytes a send carries: the user's memory when contiguous, else a packed copy.
pub struct SendBuf {
    ptr: *const u8,
    len: usize,
    /// Keeps the packed or owned bytes alive while `ptr` points into them.
    _owned: Option<Vec<u8>>,
}

impl SendBuf {
    /// # Safety
    /// `base` must point at `count` elements of `layout` that stay valid and unmodified until
    /// the send completes.
    pub unsafe fn new(base: *const u8, layout: Layout, count: usize) -> SendBuf {
        let len = layout.size * count;
        if len == 0 {
            return SendBuf { ptr: base, len, _owned: None };
        }
        if let Some(at) = layout.contiguous_at() {
            // Contiguous data (perhaps starting away from the buffer pointer, lb != 0): send
            // it in place. `wrapping_offset` because MPI_BOTTOM is a null base.
            return SendBuf { ptr: base.wrapping_offset(at), len, _owned: None };
        }
        let mut packed = vec![0u8; len];
        // SAFETY: the caller vouches for `count` readable elements at `base`; `packed` is ours.
        unsafe { layout.pack(base, count, 0..len, &mut packed) };
        SendBuf { ptr: packed.as_ptr(), len, _owned: Some(packed) }
    }

    /// A send of bytes the engine owns (buffered sends, internal messages).
    pub fn owned(data: Vec<u8>) -> SendBuf {
        SendBuf { ptr: data.as_ptr(), len: data.len(), _owned: Some(data) }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Address peers read with single-copy transfers.
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    pub fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: by construction ptr/len describe the user's contiguous buffer (valid per
        // `new`'s contract) or our own packed vector.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// Where the bytes of a receive go: straight into the user's memory when the data is
/// contiguous, else into a staging vector unpacked when the receive completes.
pub struct RecvBuf {
    base: *mut u8,
    /// Start of the data in the user's memory when it is contiguous (else unused).
    direct: *mut u8,
    layout: Layout,
    count: usize,
    staging: Option<Vec<u8>>,
    /// Whether the bytes are the engine's (kept staged) rather than the user's.
    owned: bool,
}

impl RecvBuf {
    /// # Safety
    /// `base` must point at writable memory for `count` elements of `layout`, valid and not
    /// accessed by the user until the receive completes.
    pub unsafe fn new(base: *mut u8, layout: Layout, count: usize) -> RecvBuf {
        let at = layout.contiguous_at();
        let staging = at.is_none().then(|| vec![0u8; layout.size * count]);
        let direct = base.wrapping_offset(at.unwrap_or(0));
        RecvBuf { base, direct, layout, count, staging, owned: false }
    }

    /// A receive into memory the engine owns.
    pub fn owned(len: usize) -> RecvBuf {
        RecvBuf {
            base: std::ptr::null_mut(),
            direct: std::ptr::null_mut(),
            layout: crate::datatype::BYTE,
            count: len,
            staging: Some(vec![0u8; len]),
            owned: true,
        }
    }

    pub fn capacity(&self) -> usize {
        self.layout.size * self.count
    }

    /// The destination of bytes `[offset, offset + len)` of the message (within capacity).
    pub fn slice_mut(&mut self, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset + len <= self.capacity());
        match &mut self.staging {
            Some(v) => &mut v[offset..offset + len],
            None if len == 0 => &mut [],
            // SAFETY: contiguous data, so bytes [0, capacity) from `direct` are the user's
            // elements, ours until completion (constructor contract); the range was checked.
            None => unsafe { std::slice::from_raw_parts_mut(self.direct.add(offset), len) },
        }
    }

    /// Moves staged bytes into the user's layout; called once, when the receive completes.
    pub fn finish(&mut self, received: usize) {
        if self.owned {
            return;
        }
        let Some(staged) = self.staging.as_ref() else { return };
        let n = received.min(staged.len());
        // SAFETY: the user's `count` elements at `base` are writable and ours until completion
        // (constructor contract); the staging vector is separate memory.
        unsafe { self.layout.unpack(self.base, self.count, 0, &staged[..n]) };
    }

    /// The received bytes of an engine-owned buffer.
    pub fn into_owned(self) -> Vec<u8> {
        self.staging.unwrap_or_default()
    }
}

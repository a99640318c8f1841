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
        if layout.is_contiguous() || len == 0 {
            return SendBuf { ptr: base, len, _owned: None };
        }
        let mut packed = Vec::with_capacity(len);
        layout.for_each_block(count, |off, n| {
            // SAFETY: every block lies within the caller's elements.
            packed.extend_from_slice(unsafe { std::slice::from_raw_parts(base.add(off), n) })
        });
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

/// Where the bytes of a receive go: straight into the user's memory when contiguous, else into
/// a staging vector unpacked when the receive completes.
pub struct RecvBuf {
    base: *mut u8,
    layout: Layout,
    count: usize,
    staging: Option<Vec<u8>>,
}

impl RecvBuf {
    /// # Safety
    /// `base` must point at writable memory for `count` elements of `layout`, valid and not
    /// accessed by the user until the receive completes.
    pub unsafe fn new(base: *mut u8, layout: Layout, count: usize) -> RecvBuf {
        let staging = (!layout.is_contiguous()).then(|| vec![0u8; layout.size * count]);
        RecvBuf { base, layout, count, staging }
    }

    /// A receive into memory the engine owns.
    pub fn owned(len: usize) -> RecvBuf {
        RecvBuf { base: std::ptr::null_mut(), layout: crate::datatype::BYTE, count: len, staging: Some(vec![0u8; len]) }
    }

    pub fn capacity(&self) -> usize {
        self.layout.size * self.count
    }

    /// The destination of bytes `[offset, offset + len)` of the message (within capacity).
    pub fn slice_mut(&mut self, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset + len <= self.capacity());
        match &mut self.staging {
            Some(v) => &mut v[offset..offset + len],
            // SAFETY: contiguous layout, so bytes [0, capacity) of the user's buffer are ours
            // until completion (constructor contract); the range was checked above.
            None if len == 0 => &mut [],
            None => unsafe { std::slice::from_raw_parts_mut(self.base.add(offset), len) },
        }
    }

    /// Moves staged bytes into the user's layout; called once, when the receive completes.
    pub fn finish(&mut self, received: usize) {
        if self.base.is_null() {
            return;
        }
        let Some(staged) = self.staging.as_ref() else { return };
        let mut pos = 0;
        let base = self.base;
        self.layout.for_each_block(self.count, |off, n| {
            if pos >= received {
                return;
            }
            let n = n.min(received - pos);
            // SAFETY: every block lies within the user's elements (constructor contract).
            unsafe { std::ptr::copy_nonoverlapping(staged[pos..].as_ptr(), base.add(off), n) };
            pos += n;
        });
    }

    /// The received bytes of an engine-owned buffer.
    pub fn into_owned(self) -> Vec<u8> {
        self.staging.unwrap_or_default()
    }
}

//! The library's global allocator: the system allocator, keeping a few recently freed large
//! blocks for reuse. Collective and rendezvous paths allocate message-sized temporaries on
//! every call (packed inputs, receive buffers, partial results), and glibc gives blocks of that
//! size back to the kernel when they are freed (mmap'd chunks, heap trimming): each call then
//! took a page fault for every 4 KiB it touched (a reduce of 1 MiB with a user operation on
//! two ranks: about 260 faults per call at the member, most of its time). Only the library's
//! own allocations come here; the program's `malloc` is untouched.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;

/// Smallest block kept: smaller ones come from glibc's heap bins, which it reuses itself.
const MIN_BLOCK: usize = 64 * 1024;
/// Blocks kept at most, and their bytes together (memory held by an idle rank).
const SLOTS: usize = 8;
const MAX_BYTES: usize = 32 << 20;
/// Alignment every `malloc` block has on the supported targets: blocks of layouts up to it
/// are plain `malloc` blocks, whichever path allocated them.
const MALLOC_ALIGN: usize = 16;

/// Free blocks: (address, usable size), `len` of them in use.
struct Cache {
    blocks: [(usize, usize); SLOTS],
    len: usize,
    bytes: usize,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache { blocks: [(0, 0); SLOTS], len: 0, bytes: 0 });

fn cache() -> std::sync::MutexGuard<'static, Cache> {
    // Nothing panics while the lock is held, so a poisoned lock still holds a valid cache.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

fn kept(layout: Layout) -> bool {
    layout.size() >= MIN_BLOCK && layout.align() <= MALLOC_ALIGN
}

impl Cache {
    /// The smallest kept block of `size` bytes up to twice that (a larger one would hold
    /// memory the caller does not use), taken out.
    fn take(&mut self, size: usize) -> Option<*mut u8> {
        let fits = |&(_, usable): &(usize, usize)| usable >= size && usable / 2 <= size;
        let i = (0..self.len).filter(|&i| fits(&self.blocks[i])).min_by_key(|&i| self.blocks[i].1)?;
        let (addr, usable) = self.blocks[i];
        self.len -= 1;
        self.blocks[i] = self.blocks[self.len];
        self.bytes -= usable;
        Some(addr as *mut u8)
    }

    /// Keeps block `ptr` of `usable` bytes if there is room; returns whether it did.
    fn keep(&mut self, ptr: *mut u8, usable: usize) -> bool {
        if self.len == SLOTS || self.bytes + usable > MAX_BYTES {
            return false;
        }
        self.blocks[self.len] = (ptr as usize, usable);
        self.len += 1;
        self.bytes += usable;
        true
    }
}

pub struct CachingAllocator;

// SAFETY: every block handed out is a live `malloc` block (from `System`, `libc::malloc` or
// `libc::calloc`, or a kept one, which no one else holds) of at least the layout's size and
// alignment; blocks are kept only when freed by their owner, and freed or reallocated only
// by the functions that match how they were made (layouts up to `MALLOC_ALIGN` are all plain
// `malloc` blocks, which `free` and `realloc` accept).
unsafe impl GlobalAlloc for CachingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !kept(layout) {
            // SAFETY: forwarded contract.
            return unsafe { System.alloc(layout) };
        }
        if let Some(p) = cache().take(layout.size()) {
            return p;
        }
        // SAFETY: a plain allocation; malloc's alignment covers the layout's.
        unsafe { libc::malloc(layout.size()) as *mut u8 }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !kept(layout) {
            // SAFETY: forwarded contract.
            return unsafe { System.alloc_zeroed(layout) };
        }
        if let Some(p) = cache().take(layout.size()) {
            // SAFETY: the block holds at least `size` bytes and is ours alone.
            unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
            return p;
        }
        // SAFETY: as in `alloc`; calloc maps fresh zero pages for large blocks.
        unsafe { libc::calloc(1, layout.size()) as *mut u8 }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !kept(layout) {
            // SAFETY: forwarded contract.
            return unsafe { System.dealloc(ptr, layout) };
        }
        // SAFETY: `ptr` is a live malloc block (see above).
        let usable = unsafe { libc::malloc_usable_size(ptr.cast()) };
        if !cache().keep(ptr, usable) {
            // SAFETY: as above; freed once, by its owner.
            unsafe { libc::free(ptr.cast()) };
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Kept blocks are malloc blocks of a small alignment, which System's realloc handles
        // with libc's realloc (so the block moves or grows in place, as for any other).
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_smallest_fitting_block_and_respects_the_limits() {
        let mut c = Cache { blocks: [(0, 0); SLOTS], len: 0, bytes: 0 };
        assert!(c.keep(0x1000 as *mut u8, 1 << 20));
        assert!(c.keep(0x2000 as *mut u8, 256 << 10));
        assert!(c.keep(0x3000 as *mut u8, 300 << 10));
        // Too small for 2 MiB; more than twice 100 KiB.
        assert_eq!(c.take(2 << 20), None);
        assert_eq!(c.take(100 << 10), None);
        assert_eq!(c.take(200 << 10), Some(0x2000 as *mut u8));
        assert_eq!(c.take(200 << 10), Some(0x3000 as *mut u8));
        assert_eq!(c.take(200 << 10), None);
        assert_eq!((c.len, c.bytes), (1, 1 << 20));
        assert!(!c.keep(0x4000 as *mut u8, MAX_BYTES));
        for i in 1..SLOTS {
            assert!(c.keep((0x10000 * i) as *mut u8, 64 << 10));
        }
        assert!(!c.keep(0x9000 as *mut u8, 64 << 10), "every slot taken");
    }

    #[test]
    fn large_vectors_reuse_freed_blocks() {
        // A kept block comes back (unless another test took it meanwhile) and must be
        // cleared for a zeroed allocation.
        drop(vec![1u8; 1 << 20]);
        let again = vec![0u8; 1 << 20];
        assert!(again.iter().all(|&b| b == 0), "zeroed allocations are zero, kept block or not");
        let mut grown = Vec::with_capacity(128 << 10);
        grown.extend_from_slice(&again[..128 << 10]);
        grown.extend_from_slice(&again);
        assert_eq!(grown.len(), (1 << 20) + (128 << 10));
    }
}

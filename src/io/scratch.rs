//! A few byte buffers kept per thread between accesses (aggregation and exchange buffers of
//! two-phase I/O, data-sieving buffers), so that a program doing I/O in a loop reuses memory
//! already mapped: a fresh mapping of 16 MiB costs a page fault per 4 KiB, as much time as
//! copying the data. Their old bytes are never read: every byte used is written first.

use std::cell::RefCell;

/// Buffers kept, and the largest capacity kept (bytes).
const KEEP: usize = 4;
const MAX_CAPACITY: usize = 64 << 20;

thread_local! {
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of unspecified length and contents.
pub fn take() -> Vec<u8> {
    POOL.try_with(|p| p.borrow_mut().pop()).ok().flatten().unwrap_or_default()
}

/// Keeps `v` for a later `take`, unless the pool is full or `v` is too large.
pub fn give(v: Vec<u8>) {
    if v.capacity() == 0 || v.capacity() > MAX_CAPACITY {
        return;
    }
    let _ = POOL.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < KEEP {
            p.push(v);
        }
    });
}

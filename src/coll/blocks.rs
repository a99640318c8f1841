//! The block list of a collective's user buffer without a heap allocation per call.
//!
//! Most buffers are one block (bcast, the reductions, every send buffer of a gather): that
//! one is held inline. Lists of several (a gather's or scatter's root, all-to-all) take a
//! vector from a small per-thread pool and give it back when dropped, so a loop of small
//! collectives reuses the same few vectors instead of a malloc and free per call (about a
//! fifth of the instructions of an 8-byte bcast or scatter at np 2 went there).

use super::Block;
use std::cell::RefCell;
use std::ops::{Deref, DerefMut};

/// A list of blocks, read as a slice.
#[derive(Debug)]
pub struct Blocks(Repr);

#[derive(Debug)]
enum Repr {
    One(Block),
    /// Zero or several blocks (from the pool when not empty).
    Many(Vec<Block>),
}

thread_local! {
    /// Emptied block vectors of earlier collectives.
    static POOL: RefCell<Vec<Vec<Block>>> = const { RefCell::new(Vec::new()) };
}

/// Vectors the pool keeps, and the largest capacity it keeps (blocks).
const POOL_KEEP: usize = 4;
const POOL_MAX_CAPACITY: usize = 4096;

/// An empty vector for at least `n` blocks, from the pool when it has one.
fn take(n: usize) -> Vec<Block> {
    let pooled = POOL.try_with(|p| p.borrow_mut().pop()).ok().flatten();
    let mut v = pooled.unwrap_or_default();
    v.reserve(n);
    v
}

/// Gives `v` back to the pool (emptied), unless the pool is full or `v` is large.
fn give(mut v: Vec<Block>) {
    if v.capacity() == 0 || v.capacity() > POOL_MAX_CAPACITY {
        return;
    }
    v.clear();
    // During thread teardown the pool may be gone: then `v` is simply freed.
    let _ = POOL.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut()
            && p.len() < POOL_KEEP
        {
            p.push(v);
        }
    });
}

impl Blocks {
    /// One block.
    pub fn one(b: Block) -> Blocks {
        Blocks(Repr::One(b))
    }

    /// `n` blocks, block `i` being `f(i)`.
    pub fn from_fn(n: usize, f: impl FnMut(usize) -> Block) -> Blocks {
        (0..n).map(f).collect()
    }
}

impl Deref for Blocks {
    type Target = [Block];

    fn deref(&self) -> &[Block] {
        match &self.0 {
            Repr::One(b) => std::slice::from_ref(b),
            Repr::Many(v) => v,
        }
    }
}

impl DerefMut for Blocks {
    fn deref_mut(&mut self) -> &mut [Block] {
        match &mut self.0 {
            Repr::One(b) => std::slice::from_mut(b),
            Repr::Many(v) => v,
        }
    }
}

impl Drop for Blocks {
    fn drop(&mut self) {
        if let Repr::Many(v) = &mut self.0 {
            give(std::mem::take(v));
        }
    }
}

impl Clone for Blocks {
    fn clone(&self) -> Blocks {
        self.iter().cloned().collect()
    }
}

impl FromIterator<Block> for Blocks {
    fn from_iter<I: IntoIterator<Item = Block>>(iter: I) -> Blocks {
        let mut it = iter.into_iter();
        let Some(first) = it.next() else { return Blocks(Repr::Many(Vec::new())) };
        let Some(second) = it.next() else { return Blocks::one(first) };
        let mut v = take(2 + it.size_hint().0);
        v.push(first);
        v.push(second);
        v.extend(it);
        Blocks(Repr::Many(v))
    }
}

impl From<Vec<Block>> for Blocks {
    fn from(mut v: Vec<Block>) -> Blocks {
        match v.len() {
            1 => Blocks::one(v.pop().expect("one block")),
            _ => Blocks(Repr::Many(v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(offset: usize) -> Block {
        Block::bytes_at(offset, 1)
    }

    #[test]
    fn lists_of_any_length_read_as_slices() {
        for n in 0..6 {
            let blocks = Blocks::from_fn(n, b);
            assert_eq!(blocks.len(), n);
            assert!(blocks.iter().enumerate().all(|(i, x)| x.offset == i));
            let copy = blocks.clone();
            assert_eq!(copy.iter().map(|x| x.offset).collect::<Vec<_>>(), (0..n).collect::<Vec<_>>());
        }
        let mut one: Blocks = vec![b(7)].into();
        one[0].offset = 8;
        assert_eq!(one[0].offset, 8);
    }

    #[test]
    fn vectors_are_reused() {
        let first = Blocks::from_fn(3, b);
        let at = first.as_ptr();
        drop(first);
        let second = Blocks::from_fn(2, b);
        assert_eq!(second.as_ptr(), at, "the pooled vector is taken again");
        assert_eq!(second.len(), 2);
    }
}

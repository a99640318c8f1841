//! The flattened form of a datatype: one element's data blocks as a short list of nodes
//! (contiguous runs, vectors of equal runs, and repetitions of a nested list), built once when
//! the type is constructed and walked by byte range for pack, unpack and iovec generation.
//!
//! The builder folds as it goes: adjacent runs merge, equally spaced equal runs become one
//! vector node, a vector whose stride equals its run length becomes a run, a repetition of a
//! single run becomes a vector, and a repetition of a vector that continues the vector's
//! stride becomes a longer vector. So `vector(n, 1, s, contiguous(k, int))` is one node,
//! whatever n is, and a walk over any byte range costs O(depth + blocks in the range).

use std::sync::Arc;

/// One part of a flattened element; offsets are bytes from the element's origin (the buffer
/// pointer for element 0) and may be negative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// `len` contiguous bytes at `off`.
    Run { off: isize, len: usize },
    /// `count` runs of `len` bytes at `off + k * stride`.
    Vector { off: isize, count: usize, stride: isize, len: usize },
    /// `count` copies of `body` at `off + k * stride`.
    Repeat { off: isize, count: usize, stride: isize, body: Arc<Flat> },
}

impl Node {
    /// Packed bytes the node holds.
    pub fn size(&self) -> usize {
        match self {
            Node::Run { len, .. } => *len,
            Node::Vector { count, len, .. } => count * len,
            Node::Repeat { count, body, .. } => count * body.size,
        }
    }

    fn shifted(&self, by: isize) -> Node {
        let mut n = self.clone();
        match &mut n {
            Node::Run { off, .. } | Node::Vector { off, .. } | Node::Repeat { off, .. } => *off += by,
        }
        n
    }
}

/// The data blocks of one element, in type-signature order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Flat {
    nodes: Vec<Node>,
    /// Packed offset at which each node starts (for seeking to a byte offset).
    starts: Vec<usize>,
    /// Packed bytes of one element.
    pub size: usize,
}

impl Flat {
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// A single contiguous run of `len` bytes at offset 0 (a basic type).
    pub fn run(len: usize) -> Arc<Flat> {
        let mut b = FlatBuilder::default();
        b.run(0, len);
        b.finish()
    }

    /// The one run the element consists of, if it is a single run.
    pub fn single_run(&self) -> Option<(isize, usize)> {
        match self.nodes.as_slice() {
            [Node::Run { off, len }] => Some((*off, *len)),
            _ => None,
        }
    }

    /// Visits the blocks holding packed bytes `[skip, skip + take)` of one element placed at
    /// `base`, in order. The range must lie within `[0, size]`.
    pub fn walk<V: Visit>(&self, base: isize, skip: usize, take: usize, v: &mut V) {
        if take == 0 {
            return;
        }
        let mut i = self.starts.partition_point(|&s| s <= skip) - 1;
        let mut skip = skip - self.starts[i];
        let mut take = take;
        while take > 0 && i < self.nodes.len() {
            take -= walk_node(&self.nodes[i], base, skip, take, v);
            skip = 0;
            i += 1;
        }
    }
}

/// Visits the blocks of packed bytes `[skip, skip + take)` of `node` placed at `base`; returns
/// the bytes visited (`take`, or less when the node ends first).
pub fn walk_node<V: Visit>(node: &Node, base: isize, skip: usize, take: usize, v: &mut V) -> usize {
    let mut left = take;
    match node {
        &Node::Run { off, len } => {
            let n = (len - skip).min(left);
            v.block(base + off + skip as isize, n);
            left -= n;
        }
        &Node::Vector { off, count, stride, len } => {
            let at = |k: usize| base + off + k as isize * stride;
            let (mut k, r) = (skip / len, skip % len);
            if r > 0 {
                let n = (len - r).min(left);
                v.block(at(k) + r as isize, n);
                left -= n;
                k += 1;
            }
            let full = (left / len).min(count.saturating_sub(k));
            if full > 0 {
                v.vector(at(k), full, stride, len);
                left -= full * len;
                k += full;
            }
            if left > 0 && k < count {
                let n = left.min(len);
                v.block(at(k), n);
                left -= n;
            }
        }
        Node::Repeat { off, count, stride, body } => {
            let bs = body.size;
            let (mut k, mut r) = (skip / bs, skip % bs);
            while left > 0 && k < *count {
                let n = (bs - r).min(left);
                body.walk(base + off + k as isize * stride, r, n, v);
                left -= n;
                r = 0;
                k += 1;
            }
        }
    }
    take - left
}

/// What a walk calls for each block. `vector` gets runs of whole blocks at once so packing
/// loops can be specialised for the block length.
pub trait Visit {
    fn block(&mut self, off: isize, len: usize);
    fn vector(&mut self, off: isize, count: usize, stride: isize, len: usize) {
        for k in 0..count {
            self.block(off + k as isize * stride, len);
        }
    }
}

/// A visitor from a closure over (offset, length).
pub struct Blocks<F: FnMut(isize, usize)>(pub F);

impl<F: FnMut(isize, usize)> Visit for Blocks<F> {
    fn block(&mut self, off: isize, len: usize) {
        (self.0)(off, len)
    }
}

/// Builds a `Flat`, folding as nodes are added (see the module comment).
#[derive(Default)]
pub struct FlatBuilder {
    nodes: Vec<Node>,
}

impl FlatBuilder {
    pub fn run(&mut self, off: isize, len: usize) {
        if len == 0 {
            return;
        }
        match self.nodes.last_mut() {
            Some(Node::Run { off: o, len: l }) if *o + *l as isize == off => *l += len,
            Some(Node::Run { off: o, len: l }) if *l == len => {
                let (o, l) = (*o, *l);
                *self.nodes.last_mut().unwrap() = Node::Vector { off: o, count: 2, stride: off - o, len: l };
            }
            Some(Node::Vector { off: o, count: c, stride: s, len: l }) if *l == len && *o + *c as isize * *s == off => {
                *c += 1
            }
            _ => self.nodes.push(Node::Run { off, len }),
        }
    }

    pub fn vector(&mut self, off: isize, count: usize, stride: isize, len: usize) {
        if count == 0 || len == 0 {
            return;
        }
        if count == 1 {
            return self.run(off, len);
        }
        if stride == len as isize {
            return self.run(off, count * len);
        }
        match self.nodes.last_mut() {
            Some(Node::Vector { off: o, count: c, stride: s, len: l })
                if *s == stride && *l == len && *o + *c as isize * *s == off =>
            {
                *c += count
            }
            Some(Node::Run { off: o, len: l }) if *l == len && *o + stride == off => {
                let o = *o;
                *self.nodes.last_mut().unwrap() = Node::Vector { off: o, count: count + 1, stride, len };
            }
            _ => self.nodes.push(Node::Vector { off, count, stride, len }),
        }
    }

    pub fn repeat(&mut self, off: isize, count: usize, stride: isize, body: &Arc<Flat>) {
        if count == 0 || body.size == 0 {
            return;
        }
        match *body.nodes.as_slice() {
            [Node::Run { off: o, len }] => return self.vector(off + o, count, stride, len),
            [Node::Vector { off: o, count: c, stride: s, len }] if stride == c as isize * s => {
                return self.vector(off + o, count * c, s, len);
            }
            _ => {}
        }
        if count == 1 {
            for n in &body.nodes {
                self.node(n.shifted(off));
            }
            return;
        }
        match self.nodes.last_mut() {
            Some(Node::Repeat { off: o, count: c, stride: s, body: b })
                if *s == stride && Arc::ptr_eq(b, body) && *o + *c as isize * *s == off =>
            {
                *c += count
            }
            _ => self.nodes.push(Node::Repeat { off, count, stride, body: body.clone() }),
        }
    }

    fn node(&mut self, n: Node) {
        match n {
            Node::Run { off, len } => self.run(off, len),
            Node::Vector { off, count, stride, len } => self.vector(off, count, stride, len),
            Node::Repeat { off, count, stride, body } => self.repeat(off, count, stride, &body),
        }
    }

    pub fn finish(self) -> Arc<Flat> {
        let mut starts = Vec::with_capacity(self.nodes.len() + 1);
        let mut size = 0;
        for n in &self.nodes {
            starts.push(size);
            size += n.size();
        }
        if starts.is_empty() {
            starts.push(0);
        }
        Arc::new(Flat { nodes: self.nodes, starts, size })
    }
}

/// Copies blocks of user memory into a packed buffer.
pub struct Gather {
    /// The buffer origin the walk's offsets are relative to.
    pub src: *const u8,
    /// Where the next packed byte goes.
    pub dst: *mut u8,
}

/// Copies packed bytes out into blocks of user memory.
pub struct Scatter {
    /// Where the next packed byte comes from.
    pub src: *const u8,
    /// The buffer origin the walk's offsets are relative to.
    pub dst: *mut u8,
}

/// `count` blocks of `N` bytes, `stride` apart at `from`, packed to `to` (or the reverse when
/// `scatter`); `N` a constant so each copy is a single load and store.
///
/// # Safety
/// As for `Gather`/`Scatter`: every block and the packed range are valid for the access.
#[inline(always)]
unsafe fn strided<const N: usize>(mem: *mut u8, stride: isize, count: usize, packed: *mut u8, scatter: bool) {
    for k in 0..count {
        let m = mem.wrapping_offset(k as isize * stride);
        // SAFETY: forwarded from the caller: block k and packed bytes [k*N, (k+1)*N) are valid
        // and do not overlap (user memory versus a separate packed buffer).
        unsafe {
            let p = packed.add(k * N);
            if scatter { std::ptr::copy_nonoverlapping(p, m, N) } else { std::ptr::copy_nonoverlapping(m, p, N) }
        }
    }
}

/// # Safety
/// As for `strided`, with a run-time block length.
unsafe fn strided_any(mem: *mut u8, stride: isize, count: usize, len: usize, packed: *mut u8, scatter: bool) {
    #[cfg(target_arch = "x86_64")]
    if len >= wide::MIN_BLOCK && wide::available() {
        // SAFETY: forwarded from the caller; `available` checked the CPU has the instructions.
        if unsafe { wide::strided_any(mem, stride, count, len, packed, scatter) } {
            return;
        }
    }
    // SAFETY: forwarded from the caller; the const cases are the same copies unrolled.
    unsafe {
        match len {
            1 => strided::<1>(mem, stride, count, packed, scatter),
            2 => strided::<2>(mem, stride, count, packed, scatter),
            4 => strided::<4>(mem, stride, count, packed, scatter),
            8 => strided::<8>(mem, stride, count, packed, scatter),
            12 => strided::<12>(mem, stride, count, packed, scatter),
            16 => strided::<16>(mem, stride, count, packed, scatter),
            24 => strided::<24>(mem, stride, count, packed, scatter),
            32 => strided::<32>(mem, stride, count, packed, scatter),
            // Cache-line sized and a few multiples: a library memcpy call per block costs more
            // than the copy itself at these lengths (bench_pack: 64-byte blocks ran at 40% of
            // memcpy speed through the generic loop). Longer ones: see `wide`.
            48 => strided::<48>(mem, stride, count, packed, scatter),
            64 => strided::<64>(mem, stride, count, packed, scatter),
            96 => strided::<96>(mem, stride, count, packed, scatter),
            128 => strided::<128>(mem, stride, count, packed, scatter),
            256 => strided::<256>(mem, stride, count, packed, scatter),
            _ => {
                for k in 0..count {
                    let m = mem.wrapping_offset(k as isize * stride);
                    let p = packed.add(k * len);
                    if scatter {
                        std::ptr::copy_nonoverlapping(p, m, len)
                    } else {
                        std::ptr::copy_nonoverlapping(m, p, len)
                    }
                }
            }
        }
    }
}

/// Copies of strided blocks with 64-byte vector moves (AVX-512), chosen at run time: the library
/// is built for baseline x86-64, where a constant copy of more than 128 bytes (8 16-byte moves)
/// becomes a call to memcpy, which left packing and unpacking of 256-byte blocks at 75-80% of
/// the speed of 128-byte ones (bench_pack, docs/perf-r6-vec.md). Up to 128 bytes the inline
/// 16-byte moves are as fast (the copy is bound by the memory system), so only longer blocks
/// come here.
#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::{__m256i, __m512i, _mm256_loadu_si256, _mm256_storeu_si256};
    use std::arch::x86_64::{_mm512_loadu_si512, _mm512_storeu_si512};
    use std::sync::atomic::{AtomicU8, Ordering};

    /// Shortest block copied this way (shorter ones are copied inline by the baseline code).
    pub const MIN_BLOCK: usize = 129;

    /// 0: not probed yet, 1: no, 2: yes.
    static AVAILABLE: AtomicU8 = AtomicU8::new(0);

    /// Whether the CPU has AVX-512F (and `OXMPI_WIDE_COPY` is not 0).
    #[inline]
    pub fn available() -> bool {
        match AVAILABLE.load(Ordering::Relaxed) {
            0 => {
                let on = std::is_x86_feature_detected!("avx512f")
                    && !std::env::var(crate::config::WIDE_COPY).is_ok_and(|v| v == "0");
                AVAILABLE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
                on
            }
            v => v == 2,
        }
    }

    /// `super::strided_any` for the block lengths handled here; false (nothing copied) for
    /// the others.
    ///
    /// # Safety
    /// As for `super::strided`; the CPU has AVX-512F (`available`).
    pub unsafe fn strided_any(
        mem: *mut u8,
        stride: isize,
        count: usize,
        len: usize,
        packed: *mut u8,
        scatter: bool,
    ) -> bool {
        // SAFETY: forwarded from the caller.
        unsafe {
            match len {
                192 => strided::<192>(mem, stride, count, packed, scatter),
                256 => strided::<256>(mem, stride, count, packed, scatter),
                384 => strided::<384>(mem, stride, count, packed, scatter),
                512 => strided::<512>(mem, stride, count, packed, scatter),
                _ => return false,
            }
        }
        true
    }

    /// # Safety
    /// As for `super::strided`; the CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn strided<const N: usize>(mem: *mut u8, stride: isize, count: usize, packed: *mut u8, scatter: bool) {
        for k in 0..count {
            let m = mem.wrapping_offset(k as isize * stride);
            // SAFETY: forwarded from the caller: block k and packed bytes [k*N, (k+1)*N) are
            // valid and do not overlap.
            unsafe {
                let p = packed.add(k * N);
                if scatter { copy::<N>(p, m) } else { copy::<N>(m, p) }
            }
        }
    }

    /// Copies `N` bytes (a multiple of 32) with unaligned 64- and 32-byte moves.
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `N` bytes, not overlapping; AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn copy<const N: usize>(src: *const u8, dst: *mut u8) {
        const { assert!(N % 32 == 0) };
        let mut i = 0;
        // SAFETY: every access lies within the N bytes the caller vouches for.
        unsafe {
            while i + 64 <= N {
                _mm512_storeu_si512(dst.add(i) as *mut __m512i, _mm512_loadu_si512(src.add(i) as *const __m512i));
                i += 64;
            }
            if i < N {
                _mm256_storeu_si256(dst.add(i) as *mut __m256i, _mm256_loadu_si256(src.add(i) as *const __m256i));
            }
        }
    }
}

impl Visit for Gather {
    fn block(&mut self, off: isize, len: usize) {
        // SAFETY: a Gather is only walked (by `Layout::pack`) over blocks of the caller's
        // readable elements into a packed buffer with room for the range.
        unsafe {
            std::ptr::copy_nonoverlapping(self.src.wrapping_offset(off), self.dst, len);
            self.dst = self.dst.add(len);
        }
    }
    fn vector(&mut self, off: isize, count: usize, stride: isize, len: usize) {
        // SAFETY: as in `block`.
        unsafe {
            strided_any(self.src.wrapping_offset(off) as *mut u8, stride, count, len, self.dst, false);
            self.dst = self.dst.add(count * len);
        }
    }
}

impl Visit for Scatter {
    fn block(&mut self, off: isize, len: usize) {
        // SAFETY: a Scatter is only walked (by `Layout::unpack`) over blocks of the caller's
        // writable elements from a packed buffer holding the range.
        unsafe {
            std::ptr::copy_nonoverlapping(self.src, self.dst.wrapping_offset(off), len);
            self.src = self.src.add(len);
        }
    }
    fn vector(&mut self, off: isize, count: usize, stride: isize, len: usize) {
        // SAFETY: as in `block`.
        unsafe {
            strided_any(self.dst.wrapping_offset(off), stride, count, len, self.src as *mut u8, true);
            self.src = self.src.add(count * len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(f: &Flat, skip: usize, take: usize) -> Vec<(isize, usize)> {
        let mut out = vec![];
        f.walk(0, skip, take, &mut Blocks(|o, l| out.push((o, l))));
        out
    }

    #[test]
    fn adjacent_runs_merge_and_equal_runs_fold_into_vectors() {
        let mut b = FlatBuilder::default();
        b.run(0, 4);
        b.run(4, 4);
        b.run(16, 8);
        b.run(32, 8);
        b.run(48, 8);
        let f = b.finish();
        // (0,8) and (16,8) are two equal runs: a vector, which (32,8) and (48,8) continue.
        assert_eq!(f.nodes(), &[Node::Vector { off: 0, count: 4, stride: 16, len: 8 }]);
        assert_eq!(f.size, 32);
        let mut b = FlatBuilder::default();
        b.run(0, 4);
        b.run(8, 2);
        b.run(10, 2);
        assert_eq!(b.finish().nodes(), &[Node::Run { off: 0, len: 4 }, Node::Run { off: 8, len: 4 }]);
    }

    #[test]
    fn repeated_vectors_fold_when_the_stride_continues() {
        // vector(3, 1, 2, int) resized to extent 24, repeated 4 times: 12 ints every 8 bytes.
        let mut inner = FlatBuilder::default();
        inner.vector(0, 3, 8, 4);
        let inner = inner.finish();
        let mut b = FlatBuilder::default();
        b.repeat(0, 4, 24, &inner);
        let f = b.finish();
        assert_eq!(f.nodes(), &[Node::Vector { off: 0, count: 12, stride: 8, len: 4 }]);
        // A stride equal to the run length is a run.
        let mut b = FlatBuilder::default();
        b.vector(-8, 5, 4, 4);
        assert_eq!(b.finish().nodes(), &[Node::Run { off: -8, len: 20 }]);
    }

    #[test]
    fn nested_repeats_stay_compact_and_walk_in_order() {
        // Each element: a run of 2 and a run of 4 (a struct); 1000 copies 16 bytes apart.
        let mut s = FlatBuilder::default();
        s.run(0, 2);
        s.run(4, 4);
        let s = s.finish();
        let mut b = FlatBuilder::default();
        b.repeat(100, 1000, 16, &s);
        let f = b.finish();
        assert_eq!(f.nodes().len(), 1);
        assert_eq!(f.size, 6000);
        assert_eq!(blocks(&f, 0, 12), vec![(100, 2), (104, 4), (116, 2), (120, 4)]);
    }

    #[test]
    fn walks_resume_at_any_byte_offset() {
        let mut s = FlatBuilder::default();
        s.run(0, 3);
        s.vector(10, 4, -5, 2);
        s.run(40, 7);
        let s = s.finish();
        let mut b = FlatBuilder::default();
        b.repeat(0, 5, 64, &s);
        b.run(-30, 5);
        let f = b.finish();
        let total = f.size;
        // Byte-by-byte address list from a whole walk.
        let mut whole = vec![];
        for (o, l) in blocks(&f, 0, total) {
            whole.extend((0..l as isize).map(|i| o + i));
        }
        assert_eq!(whole.len(), total);
        // Every split point and chunk size gives the same bytes in the same order.
        for chunk in [1, 2, 3, 5, 7, 11, 64] {
            let mut got = vec![];
            let mut pos = 0;
            while pos < total {
                let n = chunk.min(total - pos);
                for (o, l) in blocks(&f, pos, n) {
                    got.extend((0..l as isize).map(|i| o + i));
                }
                pos += n;
            }
            assert_eq!(got, whole, "chunk {chunk}");
        }
    }

    #[test]
    fn gather_and_scatter_wide_lengths_and_negative_strides() {
        // The lengths with wide copies (and neighbours without), forwards and backwards, with
        // the blocks at an odd offset (unaligned moves).
        for len in [48usize, 63, 64, 65, 96, 128, 160, 192, 256, 384, 512, 640] {
            for stride in [len as isize + 40, -(len as isize) - 24] {
                let count = 5;
                let span = count * stride.unsigned_abs() + len + 8;
                let src: Vec<u8> = (0..span).map(|i| (i * 31 + 7) as u8).collect();
                let origin = if stride < 0 { span - len - 3 } else { 3 } as isize;
                let mut b = FlatBuilder::default();
                b.vector(origin, count, stride, len);
                let f = b.finish();
                let mut packed = vec![0u8; f.size];
                let mut g = Gather { src: src.as_ptr(), dst: packed.as_mut_ptr() };
                f.walk(0, 0, f.size, &mut g);
                let at = |k: usize| (origin + k as isize * stride) as usize;
                let want: Vec<u8> = (0..count).flat_map(|k| src[at(k)..at(k) + len].to_vec()).collect();
                assert_eq!(packed, want, "len {len} stride {stride}");
                let mut back = vec![0xEEu8; span];
                let mut s = Scatter { src: packed.as_ptr(), dst: back.as_mut_ptr() };
                f.walk(0, 0, f.size, &mut s);
                for (i, &byte) in back.iter().enumerate() {
                    let inside = (0..count).any(|k| (at(k)..at(k) + len).contains(&i));
                    assert_eq!(byte, if inside { src[i] } else { 0xEE }, "len {len} stride {stride} byte {i}");
                }
            }
        }
    }

    #[test]
    fn gather_and_scatter_specialised_lengths() {
        let src: Vec<u8> = (0..=255).collect();
        for len in [1usize, 2, 3, 4, 8, 12, 16, 24, 32] {
            let mut b = FlatBuilder::default();
            b.vector(0, 4, 40, len);
            let f = b.finish();
            let mut packed = vec![0u8; f.size];
            let mut g = Gather { src: src.as_ptr(), dst: packed.as_mut_ptr() };
            f.walk(0, 0, f.size, &mut g);
            let want: Vec<u8> = (0..4).flat_map(|k| src[k * 40..k * 40 + len].to_vec()).collect();
            assert_eq!(packed, want);
            let mut back = vec![0u8; 256];
            let mut s = Scatter { src: packed.as_ptr(), dst: back.as_mut_ptr() };
            f.walk(0, 0, f.size, &mut s);
            for k in 0..4 {
                assert_eq!(back[k * 40..k * 40 + len], src[k * 40..k * 40 + len]);
            }
        }
    }
}

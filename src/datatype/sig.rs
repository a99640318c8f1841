//! Type signatures: the sequence of basic types a datatype's packed bytes hold, run-length
//! encoded with nested repetitions (so `vector(10^6, 1, 2, struct{int, double})` stays a few
//! items). Used to count basic elements (MPI_Get_elements) and to convert packed data to and
//! from external32.

use super::builtin::{self, Builtin, Ext32};
use crate::abi::types::MPI_Datatype;
use std::sync::Arc;

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Item {
    /// `n` consecutive elements of the basic type `dt`.
    Basic { dt: MPI_Datatype, n: usize },
    /// `n` copies of a nested signature.
    Repeat { n: usize, body: Arc<Sig> },
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sig {
    items: Vec<Item>,
    /// Native packed bytes.
    pub size: usize,
    /// Basic elements.
    pub elems: usize,
    /// Bytes in external32.
    pub ext_size: usize,
    /// The greatest common divisor of the sizes of its basic elements (1 when it has none):
    /// every prefix of whole basic elements is a multiple of it.
    pub unit: usize,
}

fn basic(dt: MPI_Datatype) -> &'static Builtin {
    builtin::builtin(dt).expect("signature items are builtin types")
}

impl Sig {
    /// Basic elements in the first `bytes` bytes of a stream of elements with this signature,
    /// and whether `bytes` ends on a basic element boundary.
    pub fn elements_in(&self, bytes: usize) -> (usize, bool) {
        if self.size == 0 {
            return (0, bytes == 0);
        }
        let whole = bytes / self.size;
        let (n, rest) = self.partial(bytes % self.size);
        (whole * self.elems + n, rest == 0)
    }

    /// Basic elements wholly within the first `bytes` (< size) bytes, and the bytes left over.
    fn partial(&self, mut bytes: usize) -> (usize, usize) {
        let mut count = 0;
        for it in &self.items {
            match it {
                &Item::Basic { dt, n } => {
                    let s = basic(dt).size;
                    let k = bytes.checked_div(s).map_or(n, |q| q.min(n));
                    count += k;
                    bytes -= k * s;
                    if k < n {
                        return (count, bytes);
                    }
                }
                Item::Repeat { n, body } => {
                    let k = (bytes / body.size).min(*n);
                    count += k * body.elems;
                    bytes -= k * body.size;
                    if k < *n {
                        let (c, rest) = body.partial(bytes);
                        return (count + c, rest);
                    }
                }
            }
        }
        (count, bytes)
    }

    /// Bytes of one element when each basic type `b` takes `size_of(b)` bytes (as a file
    /// representation stores them).
    pub fn size_by(&self, size_of: &dyn Fn(&'static Builtin) -> usize) -> usize {
        self.items
            .iter()
            .map(|it| match it {
                &Item::Basic { dt, n } => n * size_of(basic(dt)),
                Item::Repeat { n, body } => n * body.size_by(size_of),
            })
            .sum()
    }

    /// With basic types sized by `size_of`: the basic elements wholly within the first `bytes`
    /// bytes of one element (fewer than its `size_by`), and their native bytes.
    pub fn prefix_by(&self, mut bytes: usize, size_of: &dyn Fn(&'static Builtin) -> usize) -> (usize, usize) {
        let (mut elems, mut native) = (0, 0);
        for it in &self.items {
            match it {
                &Item::Basic { dt, n } => {
                    let b = basic(dt);
                    let s = size_of(b);
                    let k = bytes.checked_div(s).map_or(n, |q| q.min(n));
                    (elems, native, bytes) = (elems + k, native + k * b.size, bytes - k * s);
                    if k < n {
                        break;
                    }
                }
                Item::Repeat { n, body } => {
                    let s = body.size_by(size_of);
                    let k = bytes.checked_div(s).map_or(*n, |q| q.min(*n));
                    (elems, native, bytes) = (elems + k * body.elems, native + k * body.size, bytes - k * s);
                    if k < *n {
                        let (e, b) = body.prefix_by(bytes, size_of);
                        return (elems + e, native + b);
                    }
                }
            }
        }
        (elems, native)
    }

    /// The distinct basic types of the signature, in the order they first appear (each
    /// repeated body looked at once).
    pub fn basic_types(&self) -> Vec<&'static Builtin> {
        let mut found = Vec::new();
        self.collect_basic_types(&mut found);
        found
    }

    fn collect_basic_types(&self, found: &mut Vec<&'static Builtin>) {
        for it in &self.items {
            match it {
                &Item::Basic { dt, .. } => {
                    let b = basic(dt);
                    if !found.iter().any(|f| f.handle == b.handle) {
                        found.push(b);
                    }
                }
                Item::Repeat { body, .. } => body.collect_basic_types(found),
            }
        }
    }

    /// Calls `f(basic type, n)` for each run of basic elements, in order, `times` over.
    pub fn for_each_run(&self, times: usize, f: &mut impl FnMut(&'static Builtin, usize)) {
        for _ in 0..times {
            for it in &self.items {
                match it {
                    &Item::Basic { dt, n } => f(basic(dt), n),
                    Item::Repeat { n, body } => body.for_each_run(*n, f),
                }
            }
        }
    }
}

#[derive(Default)]
pub struct SigBuilder {
    items: Vec<Item>,
}

impl SigBuilder {
    pub fn basic(&mut self, dt: MPI_Datatype, n: usize) {
        if n == 0 {
            return;
        }
        if let Some(Item::Basic { dt: d, n: m }) = self.items.last_mut()
            && *d == dt
        {
            *m += n;
            return;
        }
        self.items.push(Item::Basic { dt, n });
    }

    pub fn repeat(&mut self, n: usize, body: &Arc<Sig>) {
        if n == 0 || body.items.is_empty() {
            return;
        }
        if let [Item::Basic { dt, n: m }] = body.items.as_slice() {
            return self.basic(*dt, n * m);
        }
        if n == 1 {
            for it in &body.items {
                match it {
                    &Item::Basic { dt, n } => self.basic(dt, n),
                    Item::Repeat { n, body } => self.repeat(*n, body),
                }
            }
            return;
        }
        if let Some(Item::Repeat { n: m, body: b }) = self.items.last_mut()
            && Arc::ptr_eq(b, body)
        {
            *m += n;
            return;
        }
        self.items.push(Item::Repeat { n, body: body.clone() });
    }

    pub fn finish(self) -> Arc<Sig> {
        let (mut size, mut elems, mut ext_size, mut unit) = (0, 0, 0, 0);
        for it in &self.items {
            match it {
                &Item::Basic { dt, n } => {
                    let b = basic(dt);
                    size += n * b.size;
                    elems += n;
                    ext_size += n * builtin::ext32_size(b);
                    unit = gcd(unit, b.size);
                }
                Item::Repeat { n, body } => {
                    size += n * body.size;
                    elems += n * body.elems;
                    ext_size += n * body.ext_size;
                    unit = gcd(unit, body.unit);
                }
            }
        }
        Arc::new(Sig { items: self.items, size, elems, ext_size, unit: unit.max(1) })
    }
}

/// Converts `times` elements of packed native data to external32 (`to_ext`) or back.
/// `native` holds `times * sig.size` bytes and `ext` `times * sig.ext_size`.
pub fn convert(sig: &Sig, times: usize, native: &mut [u8], ext: &mut [u8], to_ext: bool) {
    let (mut np, mut ep) = (0, 0);
    sig.for_each_run(times, &mut |b, n| {
        let es = builtin::ext32_size(b);
        for _ in 0..n {
            let (nat, ex) = (&mut native[np..np + b.size], &mut ext[ep..ep + es]);
            convert_one(b.ext32, nat, ex, to_ext);
            np += b.size;
            ep += es;
        }
    });
}

/// One basic element between native (little-endian x86-64) and external32 (big-endian).
fn convert_one(how: Ext32, native: &mut [u8], ext: &mut [u8], to_ext: bool) {
    match how {
        Ext32::Swap { unit } => {
            let (from, to) = if to_ext { (&*native, &mut *ext) } else { (&*ext, &mut *native) };
            for (f, t) in from.chunks(unit.max(1)).zip(to.chunks_mut(unit.max(1))) {
                for (i, byte) in f.iter().rev().enumerate() {
                    t[i] = *byte;
                }
            }
        }
        Ext32::Signed { .. } | Ext32::Unsigned { .. } => {
            let signed = matches!(how, Ext32::Signed { .. });
            if to_ext {
                // Keep the low bytes, most significant first (values that do not fit are
                // truncated, as in MPICH).
                let n = ext.len();
                for (i, byte) in ext.iter_mut().enumerate() {
                    *byte = native.get(n - 1 - i).copied().unwrap_or(0);
                }
            } else {
                let negative = signed && ext.first().is_some_and(|b| b & 0x80 != 0);
                let n = ext.len();
                for (i, byte) in native.iter_mut().enumerate() {
                    *byte = if i < n {
                        ext[n - 1 - i]
                    } else if negative {
                        0xff
                    } else {
                        0
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::consts::*;

    fn sig_of(parts: &[(MPI_Datatype, usize)]) -> Arc<Sig> {
        let mut b = SigBuilder::default();
        for &(dt, n) in parts {
            b.basic(dt, n);
        }
        b.finish()
    }

    #[test]
    fn element_counts_of_partial_data() {
        let s = sig_of(&[(MPI_INT, 2), (MPI_DOUBLE, 1)]);
        let mut r = SigBuilder::default();
        r.repeat(3, &s);
        let r = r.finish();
        assert_eq!((r.size, r.elems), (48, 9));
        assert_eq!(r.elements_in(48 + 16), (12, true));
        assert_eq!(r.elements_in(48 + 4), (10, true));
        assert_eq!(r.elements_in(48 + 10), (11, false));
        assert_eq!(r.elements_in(0), (0, true));
        // Every whole prefix is a multiple of 4 bytes (ints and doubles).
        assert_eq!(r.unit, 4);
    }

    #[test]
    fn unit_is_the_gcd_of_the_basic_sizes() {
        assert_eq!(sig_of(&[(MPI_DOUBLE, 3)]).unit, 8);
        assert_eq!(sig_of(&[(MPI_SHORT, 1), (MPI_DOUBLE, 2)]).unit, 2);
        assert_eq!(sig_of(&[(MPI_INT, 1), (MPI_CHAR, 1)]).unit, 1);
        assert_eq!(sig_of(&[]).unit, 1, "no basic elements");
        let mut r = SigBuilder::default();
        r.repeat(5, &sig_of(&[(MPI_LONG, 1), (MPI_INT, 1)]));
        r.basic(MPI_DOUBLE, 1);
        assert_eq!(r.finish().unit, 4);
    }

    #[test]
    fn external32_is_big_endian_with_fixed_sizes() {
        let s = sig_of(&[(MPI_INT, 1), (MPI_LONG, 1), (MPI_C_COMPLEX, 1), (MPI_SHORT, 1)]);
        assert_eq!((s.size, s.ext_size), (4 + 8 + 8 + 2, 4 + 4 + 8 + 2));
        let mut native = Vec::new();
        native.extend(0x01020304i32.to_le_bytes());
        native.extend((-2i64).to_le_bytes());
        native.extend(1.5f32.to_le_bytes());
        native.extend((-2.0f32).to_le_bytes());
        native.extend(0x0a0bi16.to_le_bytes());
        let mut ext = vec![0u8; s.ext_size];
        let mut n2 = native.clone();
        convert(&s, 1, &mut n2, &mut ext, true);
        let mut want = Vec::new();
        want.extend(0x01020304i32.to_be_bytes());
        want.extend((-2i32).to_be_bytes());
        want.extend(1.5f32.to_be_bytes());
        want.extend((-2.0f32).to_be_bytes());
        want.extend(0x0a0bi16.to_be_bytes());
        assert_eq!(ext, want);
        let mut back = vec![0u8; s.size];
        convert(&s, 1, &mut back, &mut ext, false);
        assert_eq!(back, native);
    }
}

//! Datatypes: the predefined ones (decoded from the handle, no table, no lock) and derived
//! ones (a table of reference-counted type objects behind DIRECT handles).
//!
//! Every type has a `TypeData`: its size, bounds, flattened form (`flat`, the data blocks of one
//! element) and signature (`sig`, the basic types in order). Constructors compute it from the
//! children's `TypeData` when the type is created, which costs what the constructor's
//! arguments cost, since the children are already flattened; commit only marks the type
//! usable. Communication sees a type through `Layout` (size, extent, data bounds and the
//! flattened form), which a pending operation keeps alive by holding the `Arc`s: freeing a
//! type in use is safe.

pub mod builtin;
mod construct;
pub mod flat;
pub mod sig;

pub use construct::*;

use crate::abi::consts::*;
use crate::abi::types::MPI_Datatype;
use crate::error::{MpiError, MpiResult, err};
use flat::{Blocks, Flat, FlatBuilder, Gather, Node, Scatter, Visit};
use sig::{Sig, SigBuilder};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, RwLock, Weak};

/// How communication sees `count` elements of a datatype at a buffer address.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Bytes of data in one element (the type signature's length).
    pub size: usize,
    /// Distance between consecutive elements (0 for the rare negative extents; `lower` and
    /// the walks use the signed value).
    pub extent: usize,
    ext: isize,
    /// Lowest and one past the highest data byte of one element, from its origin.
    true_lb: isize,
    true_ub: isize,
    /// The blocks of one element; `None` for basic types (one run of `size` bytes at 0).
    flat: Option<Arc<Flat>>,
    /// Every message of whole basic elements of this type is a multiple of this many bytes
    /// (`Sig::unit`; `may_end_at`).
    unit: usize,
}

impl Layout {
    /// A basic type of `size` bytes whose basic elements have `unit` bytes (less than `size`
    /// for the pairs, such as MPI_2INT).
    const fn contiguous(size: usize, unit: usize) -> Layout {
        Layout { size, extent: size, ext: size as isize, true_lb: 0, true_ub: size as isize, flat: None, unit }
    }

    fn of(d: &TypeData) -> Layout {
        let ext = d.ub - d.lb;
        Layout {
            size: d.size,
            extent: ext.max(0) as usize,
            ext,
            true_lb: d.true_lb,
            true_ub: d.true_ub,
            flat: Some(d.flat.clone()),
            unit: d.sig.unit,
        }
    }

    /// Whether `self` and `other` place data identically: the same extents and the very same
    /// flattened description (not merely an equal one), so results computed from one hold for
    /// the other. Holding a clone keeps the description alive, so its address identifies it.
    pub fn same_as(&self, other: &Layout) -> bool {
        let flats = match (&self.flat, &other.flat) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        flats
            && (self.size, self.ext, self.true_lb, self.true_ub)
                == (other.size, other.ext, other.true_lb, other.true_ub)
    }

    /// Whether a message of `n` bytes received into `capacity` bytes of this type can be
    /// whole basic elements: a full buffer always is; a shorter message must be a multiple
    /// of the gcd of the type's basic sizes (a cheap check, blind to a struct mixing chars
    /// and ints, whose gcd is 1).
    #[inline]
    pub fn may_end_at(&self, n: usize, capacity: usize) -> bool {
        n == capacity || n.is_multiple_of(self.unit)
    }

    /// Whether `count` elements occupy exactly `count * size` bytes from the buffer pointer,
    /// with no gaps.
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        self.contiguous_at() == Some(0)
    }

    /// Where the data starts relative to the buffer pointer, when any number of elements is
    /// one contiguous run of `count * size` bytes (a contiguous type, perhaps with lb != 0).
    #[inline]
    pub fn contiguous_at(&self) -> Option<isize> {
        match &self.flat {
            None => Some(0),
            Some(f) => match f.single_run() {
                Some((off, len)) if len == self.size && self.ext == len as isize => Some(off),
                _ if self.size == 0 => Some(0),
                _ => None,
            },
        }
    }

    /// Offset of element `i`'s origin from the buffer pointer (`i` times the signed extent).
    pub fn element_offset(&self, i: usize) -> isize {
        i as isize * self.ext
    }

    /// Offset from the buffer pointer of the lowest byte `count` elements touch.
    pub fn lower(&self, count: usize) -> isize {
        if count == 0 || self.size == 0 {
            return 0;
        }
        self.true_lb + ((count - 1) as isize * self.ext).min(0)
    }

    /// The span of memory `count` elements touch, from `lower(count)`.
    pub fn span(&self, count: usize) -> usize {
        if count == 0 || self.size == 0 {
            return 0;
        }
        let last = (count - 1) as isize * self.ext;
        (self.true_ub + last.max(0) - self.lower(count)) as usize
    }

    /// Visits the blocks holding packed bytes `range` of `count` elements, with offsets from
    /// the buffer pointer (element `i` at `i * extent`).
    pub fn walk<V: Visit>(&self, count: usize, range: Range<usize>, v: &mut V) {
        let total = self.size * count;
        let (skip, mut take) = (range.start.min(total), range.end.min(total).saturating_sub(range.start));
        if take == 0 {
            return;
        }
        let Some(f) = &self.flat else {
            return v.block(skip as isize, take);
        };
        // Elements folded into one node where the element stride continues the pattern, so a
        // vector of elements is walked as one vector.
        let folded = match *f.nodes() {
            [Node::Run { off, len }] => Some(Node::Vector { off, count, stride: self.ext, len }),
            [Node::Vector { off, count: c, stride, len }] if self.ext == c as isize * stride => {
                Some(Node::Vector { off, count: count * c, stride, len })
            }
            _ => None,
        };
        if let Some(node) = folded {
            flat::walk_node(&node, 0, skip, take, v);
            return;
        }
        let (mut e, mut r) = (skip / self.size, skip % self.size);
        while take > 0 && e < count {
            let n = (self.size - r).min(take);
            f.walk(e as isize * self.ext, r, n, v);
            take -= n;
            r = 0;
            e += 1;
        }
    }

    /// Calls `f(offset, len)` for every data block of `count` elements, in order, with offsets
    /// from `lower(count)` (so from the buffer pointer for types whose data starts there).
    pub fn for_each_block(&self, count: usize, mut f: impl FnMut(usize, usize)) {
        let lo = self.lower(count);
        self.walk(count, 0..self.size * count, &mut Blocks(|o, n| f((o - lo) as usize, n)));
    }

    /// Packs bytes `range` of the packed form of `count` elements at `base` into `out`
    /// (`range.len()` bytes).
    ///
    /// # Safety
    /// `base` holds `count` readable elements (`base` may be null with absolute
    /// displacements: MPI_BOTTOM); `out` does not overlap them.
    pub unsafe fn pack(&self, base: *const u8, count: usize, range: Range<usize>, out: &mut [u8]) {
        assert!(out.len() >= range.len() && range.end <= self.size * count);
        self.walk(count, range, &mut Gather { src: base, dst: out.as_mut_ptr() });
    }

    /// Packs bytes `range` of `count` elements at `base` to `out` (`range.len()` bytes).
    ///
    /// # Safety
    /// As for `pack`, with `out` valid for `range.len()` bytes of writes.
    pub unsafe fn pack_to_ptr(&self, base: *const u8, count: usize, range: Range<usize>, out: *mut u8) {
        assert!(range.end <= self.size * count);
        self.walk(count, range, &mut Gather { src: base, dst: out });
    }

    /// Packs bytes `range` of `count` elements at `base` into a new vector, written once
    /// (no zero fill first: a large message's zeroing cost as much as its packing).
    ///
    /// # Safety
    /// As for `pack`.
    pub unsafe fn pack_to_vec(&self, base: *const u8, count: usize, range: Range<usize>) -> Vec<u8> {
        let len = range.len();
        let mut out: Vec<u8> = Vec::with_capacity(len);
        // SAFETY: forwarded from the caller; `out` has room for `len` bytes. The walk visits
        // blocks holding exactly `len` packed bytes (the range lies within the data, checked
        // by pack_to_ptr) and writes them all, so they are initialised.
        unsafe {
            self.pack_to_ptr(base, count, range, out.as_mut_ptr());
            out.set_len(len);
        }
        out
    }

    /// Unpacks `packed`, bytes `range.start..` of the packed form, into `count` elements at
    /// `base`.
    ///
    /// # Safety
    /// `base` holds `count` writable elements not overlapping `packed`.
    pub unsafe fn unpack(&self, base: *mut u8, count: usize, start: usize, packed: &[u8]) {
        assert!(start + packed.len() <= self.size * count);
        self.walk(count, start..start + packed.len(), &mut Scatter { src: packed.as_ptr(), dst: base });
    }

    /// The (address, length) blocks holding packed bytes `range` of `count` elements at
    /// `base`, in order: the iovec list of a scatter/gather transfer. Adjacent blocks are
    /// merged. Addresses are computed, not dereferenced.
    pub fn iovecs(&self, base: *const u8, count: usize, range: Range<usize>) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        self.walk(
            count,
            range,
            &mut Blocks(|o, n| {
                let addr = (base as usize).wrapping_add_signed(o);
                match out.last_mut() {
                    Some((a, l)) if *a + *l == addr => *l += n,
                    _ => out.push((addr, n)),
                }
            }),
        );
        out
    }
}

/// The layout of MPI_BYTE, used for the engine's own messages.
pub const BYTE: Layout = Layout::contiguous(1, 1);

/// Everything about a type that does not depend on its handle.
#[derive(Debug, Clone)]
pub struct TypeData {
    pub size: usize,
    pub lb: isize,
    pub ub: isize,
    pub true_lb: isize,
    pub true_ub: isize,
    /// Whether lb / ub were set explicitly (MPI_LB / MPI_UB markers, create_resized); an
    /// explicit bound wins over the data's bound in enclosing types.
    pub lb_marker: bool,
    pub ub_marker: bool,
    /// Alignment of the most aligned basic type (pads struct extents, as C does).
    pub align: usize,
    pub flat: Arc<Flat>,
    pub sig: Arc<Sig>,
}

impl TypeData {
    pub fn extent(&self) -> isize {
        self.ub - self.lb
    }

    fn basic(b: &builtin::Builtin) -> TypeData {
        let mut sig = SigBuilder::default();
        let (lb_marker, ub_marker) = (b.handle == MPI_LB, b.handle == MPI_UB);
        if !(lb_marker || ub_marker) {
            let (dt, n) = builtin::basic_parts(b);
            sig.basic(dt, n);
        }
        let s = b.size as isize;
        TypeData {
            size: b.size,
            lb: 0,
            ub: s,
            true_lb: 0,
            true_ub: s,
            lb_marker,
            ub_marker,
            align: b.align,
            flat: Flat::run(b.size),
            sig: sig.finish(),
        }
    }

    fn pair(p: &builtin::Pair) -> TypeData {
        let mut c = Compose::default();
        for (off, dt) in p.parts {
            c.place(&TypeData::basic(builtin::builtin(dt).expect("pair parts are builtin")), off as isize, 1, 0);
        }
        let mut d = c.finish(false);
        d.ub = p.extent as isize;
        d.align = p.align;
        d
    }
}

/// Builds a `TypeData` from placements of child types (the typemap rules of MPI, with
/// MPI_LB/MPI_UB markers and C struct padding).
#[derive(Default)]
struct Compose {
    flat: FlatBuilder,
    sig: SigBuilder,
    size: usize,
    plain_lb: Option<isize>,
    plain_ub: Option<isize>,
    marker_lb: Option<isize>,
    marker_ub: Option<isize>,
    true_lb: Option<isize>,
    true_ub: Option<isize>,
    align: usize,
}

fn min_into(slot: &mut Option<isize>, v: isize) {
    *slot = Some(slot.map_or(v, |s| s.min(v)));
}
fn max_into(slot: &mut Option<isize>, v: isize) {
    *slot = Some(slot.map_or(v, |s| s.max(v)));
}

impl Compose {
    /// `count` copies of `child` at `disp + k * stride` bytes.
    fn place(&mut self, child: &TypeData, disp: isize, count: usize, stride: isize) {
        if count == 0 {
            return;
        }
        self.flat.repeat(disp, count, stride, &child.flat);
        self.sig.repeat(count, &child.sig);
        self.size += count * child.size;
        let last = (count - 1) as isize * stride;
        let (lo, hi) = (disp + last.min(0), disp + last.max(0));
        // A bare marker bounds one side only: { (LB,10) } has lb 10 and, with no data and no
        // UB, ub 0 (extent -10, as in MPICH).
        let bare = child.size == 0 && child.lb_marker != child.ub_marker;
        if !(bare && child.ub_marker) {
            min_into(if child.lb_marker { &mut self.marker_lb } else { &mut self.plain_lb }, lo + child.lb);
        }
        if !(bare && child.lb_marker) {
            max_into(if child.ub_marker { &mut self.marker_ub } else { &mut self.plain_ub }, hi + child.ub);
        }
        if child.size > 0 {
            min_into(&mut self.true_lb, lo + child.true_lb);
            max_into(&mut self.true_ub, hi + child.true_ub);
        }
        self.align = self.align.max(child.align);
    }

    /// The type; `pad` applies C struct padding (the extent rounded up to the alignment)
    /// unless the upper bound was set explicitly.
    fn finish(self, pad: bool) -> TypeData {
        let lb = self.marker_lb.or(self.plain_lb).unwrap_or(0);
        let mut ub = self.marker_ub.or(self.plain_ub).unwrap_or(0);
        let ub_marker = self.marker_ub.is_some();
        if pad && !ub_marker && self.align > 1 {
            let rem = (ub - lb).rem_euclid(self.align as isize);
            if rem != 0 {
                ub += self.align as isize - rem;
            }
        }
        TypeData {
            size: self.size,
            lb,
            ub,
            true_lb: self.true_lb.unwrap_or(0),
            true_ub: self.true_ub.unwrap_or(0),
            lb_marker: self.marker_lb.is_some(),
            ub_marker,
            align: self.align.max(1),
            flat: self.flat.finish(),
            sig: self.sig.finish(),
        }
    }
}

/// A child type named in a constructor's arguments (what MPI_Type_get_contents returns).
#[derive(Debug, Clone)]
pub enum Child {
    Predefined(MPI_Datatype),
    Derived(Arc<TypeObj>),
}

/// The constructor and arguments a type was made with (MPI_Type_get_envelope/contents).
#[derive(Debug, Clone)]
pub struct Contents {
    pub combiner: i32,
    pub ints: Vec<i32>,
    pub aints: Vec<isize>,
    /// MPI-4 large counts, for types made by the `_c` constructors.
    pub large: Vec<i64>,
    pub types: Vec<Child>,
}

/// A derived (or cached Fortran 90) datatype.
#[derive(Debug)]
pub struct TypeObj {
    pub data: TypeData,
    pub contents: Contents,
    pub name: Mutex<String>,
    committed: AtomicBool,
    /// MPI_Type_create_f90_* results are predefined in the MPI sense: cached, never freed.
    pub permanent: bool,
    /// The handle it was registered under (one per object).
    handle: AtomicI32,
}

impl TypeObj {
    pub fn handle(&self) -> MPI_Datatype {
        self.handle.load(Ordering::Relaxed)
    }
    pub fn is_committed(&self) -> bool {
        self.committed.load(Ordering::Acquire)
    }
}

/// Handles of user types: kind DIRECT, object DATATYPE. Indices 0..5 are MPICH's pair types.
const DIRECT_DATATYPE: u32 = 0x8c00_0000;
const FIRST_USER_INDEX: usize = 5;
const MAX_TYPES: usize = 0x0400_0000;

struct Slot {
    /// The object while the user holds handles to it.
    strong: Option<Arc<TypeObj>>,
    /// Handles the user holds (creation, get_contents); the object leaves the table at 0.
    handle_refs: usize,
    /// Keeps the index reserved while parents or pending operations still hold the object,
    /// so get_contents can hand the same handle out again.
    weak: Weak<TypeObj>,
}

#[derive(Default)]
struct Table {
    slots: Vec<Option<Slot>>,
    /// Indices whose handles were all freed; reusable once `weak` is dead.
    free: Vec<usize>,
}

/// Derived types. Lookups (every send/receive of a derived type) take the read lock and clone
/// an `Arc`; predefined types never come here.
static TABLE: LazyLock<RwLock<Table>> = LazyLock::new(RwLock::default);

fn table_read() -> std::sync::RwLockReadGuard<'static, Table> {
    TABLE.read().unwrap_or_else(|p| p.into_inner())
}
fn table_write() -> std::sync::RwLockWriteGuard<'static, Table> {
    TABLE.write().unwrap_or_else(|p| p.into_inner())
}

fn slot_index(dt: MPI_Datatype) -> Option<usize> {
    let h = dt as u32;
    (h & 0xfc00_0000 == DIRECT_DATATYPE).then_some((h & 0x03ff_ffff) as usize).filter(|&i| i >= FIRST_USER_INDEX)
}

fn bad_type(dt: MPI_Datatype) -> MpiError {
    if dt == MPI_DATATYPE_NULL {
        MpiError::new(MPI_ERR_TYPE, "invalid datatype argument (MPI_DATATYPE_NULL)")
    } else {
        MpiError::new(
            MPI_ERR_TYPE,
            format!("invalid datatype argument (0x{:08x}: not a datatype, or freed)", dt as u32),
        )
    }
}

/// Registers a new object; returns its handle.
fn register(obj: TypeObj) -> MpiResult<MPI_Datatype> {
    let obj = Arc::new(obj);
    let mut t = table_write();
    let mut busy = Vec::new();
    let mut index = None;
    while let Some(i) = t.free.pop() {
        if t.slots[i].as_ref().is_none_or(|s| s.weak.strong_count() == 0) {
            index = Some(i);
            break;
        }
        busy.push(i);
    }
    t.free.extend(busy);
    let i = match index {
        Some(i) => i,
        None => {
            if t.slots.len() < FIRST_USER_INDEX {
                t.slots.resize_with(FIRST_USER_INDEX, || None);
            }
            if t.slots.len() >= MAX_TYPES {
                return err(MPI_ERR_INTERN, "too many live datatypes");
            }
            t.slots.push(None);
            t.slots.len() - 1
        }
    };
    let handle = (DIRECT_DATATYPE | i as u32) as MPI_Datatype;
    obj.handle.store(handle, Ordering::Relaxed);
    t.slots[i] = Some(Slot { weak: Arc::downgrade(&obj), strong: Some(obj), handle_refs: 1 });
    Ok(handle)
}

/// The object behind a derived handle the user still holds.
fn derived(dt: MPI_Datatype) -> MpiResult<Arc<TypeObj>> {
    let i = slot_index(dt).ok_or_else(|| bad_type(dt))?;
    let t = table_read();
    t.slots.get(i).and_then(|s| s.as_ref()).and_then(|s| s.strong.clone()).ok_or_else(|| bad_type(dt))
}

/// A handle to `t` for the user: a predefined type's own, or one more reference to the
/// handle of a derived type (as get_contents gives), even one the program freed since.
pub fn user_handle(t: &Type) -> MPI_Datatype {
    match t {
        Type::Builtin(b) => b.handle,
        Type::Pair(p) => p.handle,
        Type::Derived(o) if o.permanent => o.handle(),
        Type::Derived(o) => add_handle_ref(o),
    }
}

/// A handle to `obj` for the user (get_contents): the same handle, one more reference.
fn add_handle_ref(obj: &Arc<TypeObj>) -> MPI_Datatype {
    let h = obj.handle();
    let i = slot_index(h).expect("registered objects have user handles");
    let mut t = table_write();
    let slot = t.slots[i].as_mut().expect("a live object keeps its slot");
    if slot.strong.is_none() {
        slot.strong = Some(obj.clone());
        slot.handle_refs = 0;
        // Its index is on the free list; it stays there and is skipped while alive.
    }
    slot.handle_refs += 1;
    h
}

/// Any datatype, predefined or derived.
#[derive(Debug, Clone)]
pub enum Type {
    Builtin(&'static builtin::Builtin),
    Pair(&'static builtin::Pair),
    Derived(Arc<TypeObj>),
}

/// Looks a handle up (committed or not).
pub fn lookup(dt: MPI_Datatype) -> MpiResult<Type> {
    if let Some(b) = builtin::builtin(dt) {
        return Ok(Type::Builtin(b));
    }
    if let Some(p) = builtin::pair(dt) {
        return Ok(Type::Pair(p));
    }
    Ok(Type::Derived(derived(dt)?))
}

impl Type {
    /// The type's data (computed for predefined types: constructors and queries only).
    pub fn data(&self) -> std::borrow::Cow<'_, TypeData> {
        match self {
            Type::Builtin(b) => std::borrow::Cow::Owned(TypeData::basic(b)),
            Type::Pair(p) => std::borrow::Cow::Owned(TypeData::pair(p)),
            Type::Derived(o) => std::borrow::Cow::Borrowed(&o.data),
        }
    }

    pub fn is_predefined(&self) -> bool {
        match self {
            Type::Derived(o) => o.permanent,
            _ => true,
        }
    }

    fn as_child(&self) -> Child {
        match self {
            Type::Builtin(b) => Child::Predefined(b.handle),
            Type::Pair(p) => Child::Predefined(p.handle),
            Type::Derived(o) => Child::Derived(o.clone()),
        }
    }
}

/// Pair-type layouts, built once.
static PAIR_LAYOUTS: LazyLock<Vec<Layout>> =
    LazyLock::new(|| builtin::PAIRS.iter().map(|p| Layout::of(&TypeData::pair(p))).collect());

/// The layout of a type used in communication: MPI_ERR_TYPE for null, freed or uncommitted
/// types. Builtin types are decoded from the handle without locks or allocation, inline in
/// the caller (every collective call looks up one to three layouts).
#[inline]
pub fn layout(dt: MPI_Datatype) -> MpiResult<Layout> {
    if let Some(b) = builtin::builtin(dt) {
        // MPI_LB and MPI_UB have no bytes: unit 1.
        return Ok(Layout::contiguous(b.size, (b.size / builtin::basic_parts(b).1).max(1)));
    }
    layout_of_other(dt)
}

/// `layout` of pair and derived types.
fn layout_of_other(dt: MPI_Datatype) -> MpiResult<Layout> {
    if let Some(i) = builtin::PAIRS.iter().position(|p| p.handle == dt) {
        return Ok(PAIR_LAYOUTS[i].clone());
    }
    // Programs send the same derived type again and again: the last layout looked up by this
    // thread, valid while no type was freed since (a freed handle may name another type next),
    // spares the table's lock and the object's reference count.
    let generation = FREES.load(Ordering::Acquire);
    let hit = LAST_LAYOUT.with(|last| match &*last.borrow() {
        Some((h, g, l)) if *h == dt && *g == generation => Some(l.clone()),
        _ => None,
    });
    if let Some(l) = hit {
        return Ok(l);
    }
    let obj = derived(dt)?;
    if !obj.is_committed() {
        return err(MPI_ERR_TYPE, format!("datatype 0x{:08x} has not been committed (MPI_Type_commit)", dt as u32));
    }
    let l = Layout::of(&obj.data);
    LAST_LAYOUT.with(|last| *last.borrow_mut() = Some((dt, generation, l.clone())));
    Ok(l)
}

/// How the elements of a type lie in memory, as the per-message fast paths need it (plain
/// words: the fast paths carry it in registers, with no layout to clone or drop).
#[derive(Debug, Clone, Copy)]
pub struct Elements {
    /// Bytes of data in one element.
    pub size: usize,
    /// `Some(at)`: any number of elements is one run of `count * size` bytes starting `at`
    /// bytes from the buffer pointer (a builtin type, or a derived one such as a one-block
    /// vector, perhaps with lb != 0). `None`: scattered (`layout` describes them).
    pub contiguous_at: Option<isize>,
}

/// How the elements of `dt` lie in memory, for a committed type; None for anything else,
/// errors included (the general path reports them). The per-message check of the fast paths:
/// a derived type found in the per-thread cache of `layout` costs no lock and no reference
/// count.
#[inline]
pub fn elements(dt: MPI_Datatype) -> Option<Elements> {
    match builtin::builtin(dt) {
        Some(b) => Some(Elements { size: b.size, contiguous_at: Some(0) }),
        None => derived_elements(dt),
    }
}

/// `elements` of a derived type (or an invalid handle), out of line and marked cold: the
/// builtin check stays small enough for the callers' fast paths to inline it, and their
/// builtin path keeps its registers (derived types cost a call more).
#[cold]
#[inline(never)]
fn derived_elements(dt: MPI_Datatype) -> Option<Elements> {
    let of = |l: &Layout| Elements { size: l.size, contiguous_at: l.contiguous_at() };
    let generation = FREES.load(Ordering::Acquire);
    let hit = LAST_LAYOUT.with(|last| match &*last.borrow() {
        Some((h, g, l)) if *h == dt && *g == generation => Some(of(l)),
        _ => None,
    });
    match hit {
        Some(e) => Some(e),
        None => Some(of(&layout(dt).ok()?)),
    }
}

/// Derived-type frees so far: a cached layout taken before the last free may be stale.
static FREES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The last derived layout `layout` looked up on this thread: (handle, `FREES` then, layout).
    static LAST_LAYOUT: std::cell::RefCell<Option<(MPI_Datatype, u64, Layout)>> = const { std::cell::RefCell::new(None) };
}

/// The one predefined type (basic or pair) the data of `dt` is made of, for operations that
/// combine element by element (accumulates); None when it mixes several or holds no data.
pub fn element_type(dt: MPI_Datatype) -> MpiResult<Option<MPI_Datatype>> {
    Ok(match lookup(dt)? {
        Type::Builtin(_) | Type::Pair(_) => Some(dt),
        Type::Derived(o) if o.permanent => Some(dt),
        Type::Derived(o) => match element_of(&o.contents.types) {
            Element::One(h) => Some(h),
            Element::NoData | Element::Mixed => None,
        },
    })
}

enum Element {
    NoData,
    One(MPI_Datatype),
    Mixed,
}

fn element_of(children: &[Child]) -> Element {
    let mut found = Element::NoData;
    for c in children {
        let e = match c {
            // The bound markers of old-style structs hold no data.
            Child::Predefined(h) if type_size(*h).unwrap_or(0) == 0 => Element::NoData,
            Child::Predefined(h) => Element::One(*h),
            Child::Derived(o) if o.permanent => Element::One(o.handle()),
            Child::Derived(o) => element_of(&o.contents.types),
        };
        found = match (found, e) {
            (f, Element::NoData) => f,
            (Element::NoData, e) => e,
            (Element::One(a), Element::One(b)) if a == b => Element::One(a),
            _ => return Element::Mixed,
        };
    }
    found
}

/// Size in bytes of one element (committed or not).
pub fn type_size(dt: MPI_Datatype) -> MpiResult<usize> {
    if let Some(b) = builtin::builtin(dt) {
        return Ok(b.size);
    }
    Ok(lookup(dt)?.data().size)
}

/// MPI_Get_elements: basic elements in `bytes` of data of type `dt`, or None when `bytes`
/// ends inside a basic element.
pub fn basic_elements(dt: MPI_Datatype, bytes: usize) -> MpiResult<Option<usize>> {
    let ty = lookup(dt)?;
    let (n, whole) = ty.data().sig.elements_in(bytes);
    Ok(whole.then_some(n))
}

/// MPI_Type_commit.
pub fn commit(dt: MPI_Datatype) -> MpiResult<()> {
    if let Type::Derived(o) = lookup(dt)? {
        o.committed.store(true, Ordering::Release);
    }
    Ok(())
}

/// MPI_Type_free: releases the user's handle. Objects still referenced by other types or by
/// pending operations live on (they hold `Arc`s).
pub fn free(dt: MPI_Datatype) -> MpiResult<()> {
    match lookup(dt)? {
        Type::Builtin(b) => err(MPI_ERR_TYPE, format!("cannot free the predefined datatype {}", b.name)),
        Type::Pair(p) => err(MPI_ERR_TYPE, format!("cannot free the predefined datatype {}", p.name)),
        Type::Derived(o) if o.permanent => Ok(()),
        Type::Derived(_) => {
            let i = slot_index(dt).expect("derived handles have an index");
            let mut t = table_write();
            let slot = t.slots[i].as_mut().ok_or_else(|| bad_type(dt))?;
            // Layouts cached before this point may name a type this handle no longer does.
            FREES.fetch_add(1, Ordering::Release);
            slot.handle_refs = slot.handle_refs.saturating_sub(1);
            if slot.handle_refs == 0 {
                slot.strong = None;
                t.free.push(i);
            }
            Ok(())
        }
    }
}

/// Names given to predefined types by MPI_Type_set_name (MPICH lets programs rename them).
static PREDEFINED_RENAMES: LazyLock<Mutex<std::collections::HashMap<MPI_Datatype, String>>> =
    LazyLock::new(Default::default);

/// Whether MPI_Type_free of `dt` would release the user's last handle to a freeable type
/// (the moment its attributes are deleted).
pub fn is_last_handle(dt: MPI_Datatype) -> bool {
    match lookup(dt) {
        Ok(Type::Derived(o)) if !o.permanent => slot_index(dt)
            .and_then(|i| table_read().slots.get(i).and_then(|s| s.as_ref()).map(|s| s.handle_refs == 1))
            .unwrap_or(false),
        _ => false,
    }
}

/// The MPI name of a type ("" for unnamed derived types).
pub fn name(dt: MPI_Datatype) -> MpiResult<String> {
    let ty = lookup(dt)?;
    if !matches!(ty, Type::Derived(_)) {
        if let Some(n) = PREDEFINED_RENAMES.lock().unwrap_or_else(|p| p.into_inner()).get(&dt) {
            return Ok(n.clone());
        }
    }
    Ok(match ty {
        Type::Builtin(b) => if b.handle == MPIX_C_FLOAT16 { "" } else { b.name }.to_string(),
        Type::Pair(p) => p.name.to_string(),
        Type::Derived(o) => o.name.lock().unwrap_or_else(|p| p.into_inner()).clone(),
    })
}

/// MPI_Type_set_name; predefined types may be renamed too (as in MPICH).
pub fn set_name(dt: MPI_Datatype, name: &str) -> MpiResult<()> {
    match lookup(dt)? {
        Type::Derived(o) => *o.name.lock().unwrap_or_else(|p| p.into_inner()) = name.to_string(),
        _ => {
            PREDEFINED_RENAMES.lock().unwrap_or_else(|p| p.into_inner()).insert(dt, name.to_string());
        }
    }
    Ok(())
}

/// MPI_Type_get_envelope: the combiner and argument counts (ints, aints, large, types).
pub fn envelope(dt: MPI_Datatype) -> MpiResult<(i32, [usize; 4])> {
    Ok(match lookup(dt)? {
        Type::Derived(o) => {
            let c = &o.contents;
            (c.combiner, [c.ints.len(), c.aints.len(), c.large.len(), c.types.len()])
        }
        _ => (MPI_COMBINER_NAMED, [0; 4]),
    })
}

/// MPI_Type_get_contents: the arguments, with a new handle reference for each derived child.
pub fn contents(dt: MPI_Datatype) -> MpiResult<(Contents, Vec<MPI_Datatype>)> {
    let Type::Derived(o) = lookup(dt)? else {
        return err(MPI_ERR_TYPE, "MPI_Type_get_contents on a predefined (named) datatype");
    };
    let types = o
        .contents
        .types
        .iter()
        .map(|c| match c {
            Child::Predefined(h) => *h,
            Child::Derived(obj) if obj.permanent => obj.handle(),
            Child::Derived(obj) => add_handle_ref(obj),
        })
        .collect();
    Ok((o.contents.clone(), types))
}

#[cfg(test)]
mod tests;

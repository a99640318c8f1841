//! Attribute caching: keyvals (the table behind user keyval handles, with their copy and
//! delete callbacks) and the attribute list an object carries.
//!
//! The callbacks are C function pointers; this module only stores them. Calling them is left
//! to the ABI layer, outside `runtime::with` and outside this table's lock, because a callback
//! may itself call MPI (get another attribute, free a keyval, ...).

use crate::abi::consts::*;
use crate::abi::ctypes::{MPI_Comm_copy_attr_function, MPI_Comm_delete_attr_function};
use crate::error::{MpiResult, err};
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Handles of user keyvals, as MPICH makes them: kind DIRECT (bits 31..30 = 10), object
/// KEYVAL (9), and the kind of object the key is for in bits 25..22 (`ObjKind`).
const DIRECT_KEYVAL: u32 = 0xa400_0000;
/// Bits 31..26 of every user keyval handle.
const DIRECT_KEYVAL_MASK: u32 = 0xfc00_0000;
/// Bits 21..0 index the table.
const INDEX_MASK: u32 = 0x003f_ffff;
/// The predefined communicator keyvals (MPI_TAG_UB ...): BUILTIN KEYVAL, object kind 1.
const BUILTIN_COMM_KEYVAL: u32 = 0x6440_0000;
/// The predefined window keyvals (MPI_WIN_BASE ...): BUILTIN KEYVAL, object kind 8.
const BUILTIN_WIN_KEYVAL: u32 = 0x6600_0000;

/// The kind of object a keyval is for (MPICH's object kind numbers, which keyval handles
/// carry in bits 25..22). A keyval works only on objects of its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjKind {
    Comm = 1,
    Datatype = 3,
    Win = 8,
}

impl ObjKind {
    fn from_bits(bits: u32) -> Option<ObjKind> {
        [ObjKind::Comm, ObjKind::Datatype, ObjKind::Win].into_iter().find(|k| *k as u32 == bits)
    }

    fn plural(self) -> &'static str {
        match self {
            ObjKind::Comm => "communicators",
            ObjKind::Datatype => "datatypes",
            ObjKind::Win => "windows",
        }
    }
}

/// How a keyval's callbacks are called: the language of the routine that created it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallbackLang {
    /// C: handles, keyval and values by value, the result returned.
    #[default]
    C,
    /// Fortran MPI_{COMM,TYPE,WIN}_CREATE_KEYVAL: every argument by reference, values and
    /// extra state INTEGER(KIND=MPI_ADDRESS_KIND), the result in IERROR.
    Fortran,
    /// Fortran MPI_KEYVAL_CREATE (MPI-1): as `Fortran`, with default-INTEGER values.
    FortranInteger,
}

/// A user keyval: its callbacks and extra state, shared by every attribute set with it.
/// The callback types of the three kinds have the same shape (their handles are all `int`);
/// `lang` says with which convention the pointers are to be called.
#[derive(Debug, Clone, Copy)]
pub struct Keyval {
    pub kind: ObjKind,
    pub copy: MPI_Comm_copy_attr_function,
    pub delete: MPI_Comm_delete_attr_function,
    pub lang: CallbackLang,
    /// The `extra_state` pointer, passed back to the callbacks untouched.
    pub extra_state: usize,
    /// One for the user's handle (until MPI_*_free_keyval) plus one per attribute set.
    refs: usize,
    user_freed: bool,
}

static KEYVALS: Mutex<Vec<Option<Keyval>>> = Mutex::new(Vec::new());

fn keyvals() -> MutexGuard<'static, Vec<Option<Keyval>>> {
    KEYVALS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether `keyval` is one of the predefined communicator keyvals (C or Fortran form).
pub fn is_predefined_comm(keyval: c_int) -> bool {
    (keyval as u32) & 0xffc0_0000 == BUILTIN_COMM_KEYVAL
}

/// Whether `keyval` is one of the predefined window keyvals (C or Fortran form).
pub fn is_predefined_win(keyval: c_int) -> bool {
    (keyval as u32) & 0xffc0_0000 == BUILTIN_WIN_KEYVAL
}

fn is_predefined(kind: ObjKind, keyval: c_int) -> bool {
    match kind {
        ObjKind::Comm => is_predefined_comm(keyval),
        ObjKind::Win => is_predefined_win(keyval),
        ObjKind::Datatype => false,
    }
}

fn index_of(keyval: c_int) -> Option<usize> {
    let k = keyval as u32;
    (k & DIRECT_KEYVAL_MASK == DIRECT_KEYVAL).then_some((k & INDEX_MASK) as usize)
}

/// The error for a keyval that names no live user keyval of `kind`.
fn invalid(kind: ObjKind, keyval: c_int) -> crate::error::MpiError {
    use crate::error::MpiError;
    let k = keyval as u32;
    let other_kind = (k >> 26 & 0xf == 9).then(|| ObjKind::from_bits(k >> 22 & 0xf)).flatten();
    if keyval == MPI_KEYVAL_INVALID {
        MpiError::new(MPI_ERR_KEYVAL, "attribute key was MPI_KEYVAL_INVALID")
    } else if k >> 26 & 0xf == 9 && other_kind != Some(kind) {
        MpiError::new(MPI_ERR_KEYVAL, format!("keyval 0x{k:08x} was not defined for {}", kind.plural()))
    } else {
        MpiError::new(MPI_ERR_KEYVAL, format!("invalid keyval (0x{k:08x})"))
    }
}

/// MPI_Comm_create_keyval: a new communicator keyval owned by the caller.
pub fn create(
    copy: MPI_Comm_copy_attr_function,
    delete: MPI_Comm_delete_attr_function,
    extra_state: usize,
) -> MpiResult<c_int> {
    create_for(ObjKind::Comm, copy, delete, extra_state)
}

/// MPI_{Comm,Type,Win}_create_keyval: a new keyval for objects of `kind`, owned by the caller.
pub fn create_for(
    kind: ObjKind,
    copy: MPI_Comm_copy_attr_function,
    delete: MPI_Comm_delete_attr_function,
    extra_state: usize,
) -> MpiResult<c_int> {
    let mut t = keyvals();
    let kv = Keyval { kind, copy, delete, lang: CallbackLang::C, extra_state, refs: 1, user_freed: false };
    let index = match t.iter().position(Option::is_none) {
        Some(i) => i,
        None if t.len() <= INDEX_MASK as usize => {
            t.push(None);
            t.len() - 1
        }
        None => return err(MPI_ERR_OTHER, "too many keyvals"),
    };
    t[index] = Some(kv);
    Ok((DIRECT_KEYVAL | (kind as u32) << 22 | index as u32) as c_int)
}

/// The live communicator keyval `keyval`.
pub fn get(keyval: c_int) -> MpiResult<Keyval> {
    get_for(ObjKind::Comm, keyval)
}

/// The live user keyval `keyval` of `kind`. As in MPICH, a keyval the user freed stays
/// usable while attributes set with it remain.
pub fn get_for(kind: ObjKind, keyval: c_int) -> MpiResult<Keyval> {
    if is_predefined(kind, keyval) {
        return err(MPI_ERR_KEYVAL, format!("predefined keyval 0x{:08x} cannot be changed", keyval as u32));
    }
    index_of(keyval)
        .and_then(|i| keyvals().get(i).copied().flatten())
        .filter(|kv| kv.kind == kind)
        .ok_or_else(|| invalid(kind, keyval))
}

/// MPI_Comm_free_keyval.
pub fn free(keyval: c_int) -> MpiResult<()> {
    free_for(ObjKind::Comm, keyval)
}

/// MPI_{Comm,Type,Win}_free_keyval: drops the user's reference; attributes still set keep
/// the keyval alive.
pub fn free_for(kind: ObjKind, keyval: c_int) -> MpiResult<()> {
    if is_predefined(kind, keyval) {
        return err(MPI_ERR_KEYVAL, format!("predefined keyval 0x{:08x} cannot be freed", keyval as u32));
    }
    let mut t = keyvals();
    match index_of(keyval).and_then(|i| t.get_mut(i)).and_then(Option::as_mut).filter(|kv| kv.kind == kind) {
        Some(kv) if !kv.user_freed => kv.user_freed = true,
        // Freeing again a keyval that attributes keep alive is ignored, as MPICH does; once
        // the keyval is gone, its handle is invalid (MPI_ERR_KEYVAL).
        Some(_) => return Ok(()),
        None => return Err(invalid(kind, keyval)),
    }
    drop(t);
    release(keyval);
    Ok(())
}

/// Marks the new keyval `keyval` as created from `lang` (the Fortran binding calls this
/// after the C routine made it).
pub fn set_lang(keyval: c_int, lang: CallbackLang) {
    let mut t = keyvals();
    if let Some(Some(kv)) = index_of(keyval).and_then(|i| t.get_mut(i)) {
        kv.lang = lang;
    }
}

/// One more attribute refers to `keyval`.
pub fn retain(keyval: c_int) {
    let mut t = keyvals();
    if let Some(Some(kv)) = index_of(keyval).and_then(|i| t.get_mut(i)) {
        kv.refs += 1;
    }
}

/// One reference to `keyval` fewer; the keyval goes when none is left.
pub fn release(keyval: c_int) {
    let mut t = keyvals();
    if let Some(i) = index_of(keyval)
        && let Some(Some(kv)) = t.get_mut(i)
    {
        kv.refs -= 1;
        if kv.refs == 0 {
            t[i] = None;
        }
    }
}

/// Attributes of objects that do not carry their own list (datatypes, predefined ones
/// included, and windows), by object handle.
pub struct AttrStore {
    map: Mutex<BTreeMap<c_int, Attrs>>,
}

impl AttrStore {
    pub const fn new() -> AttrStore {
        AttrStore { map: Mutex::new(BTreeMap::new()) }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<c_int, Attrs>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the attribute list of `handle` (created empty if needed; dropped again
    /// when left empty).
    pub fn with<R>(&self, handle: c_int, f: impl FnOnce(&mut Attrs) -> R) -> R {
        let mut map = self.lock();
        let attrs = map.entry(handle).or_default();
        let r = f(attrs);
        if attrs.is_empty() {
            map.remove(&handle);
        }
        r
    }
}

impl Default for AttrStore {
    fn default() -> Self {
        Self::new()
    }
}

/// Attributes of datatypes.
pub static TYPE_ATTRS: AttrStore = AttrStore::new();

/// The form an attribute value was set in (MPICH's `MPIR_Attr_type`, whose numbers the
/// `MPII_*_attr` hooks take). It decides what a reader in the other language gets (MPI 4.0,
/// 19.3.7): a C reader of a value set from Fortran gets a pointer to the stored integer, a
/// Fortran reader gets the value itself whatever set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AttrType {
    /// A C `void *` (the C routines).
    #[default]
    Pointer = 0,
    /// A Fortran INTEGER(KIND=MPI_ADDRESS_KIND) (MPI_COMM_SET_ATTR and the like).
    Address = 1,
    /// A Fortran default INTEGER (MPI_ATTR_PUT), stored sign-extended.
    Integer = 3,
}

impl AttrType {
    /// The type of MPICH's number `n`.
    pub fn from_mpich(n: c_int) -> Option<AttrType> {
        [AttrType::Pointer, AttrType::Address, AttrType::Integer].into_iter().find(|t| *t as c_int == n)
    }

    pub fn is_fortran(self) -> bool {
        self != AttrType::Pointer
    }
}

/// An attribute value: the caller's `void *` or Fortran integer, as an address-sized integer,
/// and the form it was set in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AttrValue {
    pub raw: usize,
    pub ty: AttrType,
}

impl AttrValue {
    /// A value set from C.
    pub fn pointer(raw: usize) -> AttrValue {
        AttrValue { raw, ty: AttrType::Pointer }
    }
}

/// One cached attribute. The value lives in its own heap cell: C readers of a value set from
/// Fortran get the cell's address, which must stay valid (and writable, as in MPICH) while
/// the attribute is set, wherever the object's list moves.
#[derive(Debug)]
struct Entry {
    keyval: c_int,
    ty: AttrType,
    cell: Box<AtomicUsize>,
}

impl Entry {
    fn value(&self) -> AttrValue {
        AttrValue { raw: self.cell.load(Ordering::Relaxed), ty: self.ty }
    }
}

impl Clone for Entry {
    fn clone(&self) -> Entry {
        Entry { keyval: self.keyval, ty: self.ty, cell: Box::new(AtomicUsize::new(self.value().raw)) }
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.keyval == other.keyval && self.value() == other.value()
    }
}

impl Eq for Entry {}

/// The attributes cached on one object, in the order they were first set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs {
    list: Vec<Entry>,
}

impl Attrs {
    pub fn get(&self, keyval: c_int) -> Option<AttrValue> {
        self.entry(keyval).map(Entry::value)
    }

    /// What a reader of form `reader` gets for `keyval`: the value itself, except for a C
    /// reader of a value set from Fortran, which gets the address of the stored integer.
    pub fn read(&self, keyval: c_int, reader: AttrType) -> Option<usize> {
        let e = self.entry(keyval)?;
        Some(if reader == AttrType::Pointer && e.ty.is_fortran() { e.cell.as_ptr() as usize } else { e.value().raw })
    }

    fn entry(&self, keyval: c_int) -> Option<&Entry> {
        self.list.iter().find(|e| e.keyval == keyval)
    }

    /// Sets `keyval` to `value`; returns true when the keyval is new on this object (the
    /// caller then retains the keyval). A value replaced keeps its cell.
    pub fn set(&mut self, keyval: c_int, value: AttrValue) -> bool {
        match self.list.iter_mut().find(|e| e.keyval == keyval) {
            Some(e) => {
                e.ty = value.ty;
                e.cell.store(value.raw, Ordering::Relaxed);
                false
            }
            None => {
                self.list.push(Entry { keyval, ty: value.ty, cell: Box::new(AtomicUsize::new(value.raw)) });
                true
            }
        }
    }

    /// Removes `keyval`; returns whether it was set.
    pub fn remove(&mut self, keyval: c_int) -> bool {
        let before = self.list.len();
        self.list.retain(|e| e.keyval != keyval);
        self.list.len() != before
    }

    /// (keyval, value) pairs in the order they were set.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (c_int, AttrValue)> + '_ {
        self.list.iter().map(|e| (e.keyval, e.value()))
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyval_lifetime_follows_references() {
        let k = create(None, None, 7).unwrap();
        assert_eq!(k as u32 & !INDEX_MASK, 0xa440_0000);
        assert_eq!(get(k).unwrap().extra_state, 7);
        retain(k);
        free(k).unwrap();
        assert!(free(k).is_ok(), "a second free while attributes hold the keyval is ignored (MPICH)");
        assert!(get(k).is_ok(), "an attribute still holds it");
        release(k);
        assert_eq!(get(k).unwrap_err().code, MPI_ERR_KEYVAL);
        assert_eq!(get(MPI_TAG_UB).unwrap_err().code, MPI_ERR_KEYVAL);
        assert_eq!(free(MPI_TAG_UB).unwrap_err().code, MPI_ERR_KEYVAL);
        assert_eq!(get(MPI_KEYVAL_INVALID).unwrap_err().code, MPI_ERR_KEYVAL);
        assert!(is_predefined_comm(MPI_APPNUM) && is_predefined_comm(MPI_TAG_UB + 1));
        assert!(!is_predefined_comm(MPI_WIN_BASE));
    }

    #[test]
    fn keyvals_belong_to_one_kind() {
        let t = create_for(ObjKind::Datatype, None, None, 0).unwrap();
        assert_eq!(t as u32 & !INDEX_MASK, 0xa4c0_0000);
        assert!(get_for(ObjKind::Datatype, t).is_ok());
        assert_eq!(get(t).unwrap_err().code, MPI_ERR_KEYVAL);
        assert_eq!(free_for(ObjKind::Win, t).unwrap_err().code, MPI_ERR_KEYVAL);
        free_for(ObjKind::Datatype, t).unwrap();
        assert_eq!(free_for(ObjKind::Datatype, t).unwrap_err().code, MPI_ERR_KEYVAL);
        assert!(is_predefined_win(MPI_WIN_BASE) && !is_predefined_comm(MPI_WIN_BASE));
        assert_eq!(free_for(ObjKind::Win, MPI_WIN_BASE).unwrap_err().code, MPI_ERR_KEYVAL);
    }

    #[test]
    fn attrs_keep_set_order() {
        let p = AttrValue::pointer;
        let mut a = Attrs::default();
        assert!(a.set(3, p(30)));
        assert!(a.set(1, p(10)));
        assert!(!a.set(3, p(31)));
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![(3, p(31)), (1, p(10))]);
        assert!(a.remove(3));
        assert!(!a.remove(3));
        assert_eq!(a.get(1), Some(p(10)));
    }

    #[test]
    fn c_readers_of_fortran_values_get_a_pointer() {
        let mut a = Attrs::default();
        a.set(1, AttrValue::pointer(0x1000));
        a.set(2, AttrValue { raw: 5555, ty: AttrType::Address });
        a.set(3, AttrValue { raw: -7i64 as usize, ty: AttrType::Integer });
        assert_eq!(a.read(1, AttrType::Pointer), Some(0x1000));
        assert_eq!(a.read(1, AttrType::Address), Some(0x1000));
        assert_eq!(a.read(2, AttrType::Address), Some(5555));
        let p = a.read(2, AttrType::Pointer).unwrap();
        // SAFETY: the address of the attribute's cell, alive while the attribute is set.
        assert_eq!(unsafe { *(p as *const i64) }, 5555);
        let moved = a.clone();
        a.set(2, AttrValue { raw: 6, ty: AttrType::Address });
        assert_eq!(a.read(2, AttrType::Pointer), Some(p), "replacing keeps the cell");
        assert_eq!(moved.get(2).unwrap().raw, 5555);
        let q = a.read(3, AttrType::Pointer).unwrap();
        // SAFETY: as above; an INTEGER value is readable as a C int (little-endian).
        assert_eq!(unsafe { *(q as *const i32) }, -7);
        assert_eq!(AttrType::from_mpich(3), Some(AttrType::Integer));
        assert_eq!(AttrType::from_mpich(2), None);
    }
}

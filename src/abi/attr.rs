//! Attribute caching: the generic steps (delete callback before removal, copy callbacks on
//! duplication) over any object kind that keeps attribute lists, as `AttrHost` describes
//! it (communicators, datatypes), and the datatype and window attribute entry points.
//!
//! Copy and delete callbacks are user C code that may call MPI (even free the keyval), so
//! they run between lock-holding steps, never inside one.

use super::consts::*;
use super::ctypes::{
    MPI_Type_copy_attr_function, MPI_Type_delete_attr_function, MPI_Win_copy_attr_function,
    MPI_Win_delete_attr_function,
};
use super::types::*;
use crate::attr::{self, AttrType, AttrValue, CallbackLang, ObjKind, TYPE_ATTRS};
use crate::error::{MpiError, MpiResult, err};
use crate::runtime;
use std::ffi::{c_int, c_void};

/// An object kind whose objects carry attributes.
pub trait AttrHost {
    const KIND: ObjKind;
    /// Whether callbacks visit the most recently set attribute first. MPICH keeps
    /// communicator attributes newest first (MPI requires LIFO deletion on MPI_COMM_SELF at
    /// MPI_Finalize) and datatype attributes in the order they were set.
    const NEWEST_FIRST: bool;
    /// MPI_ERR_<kind> unless `h` names a live object.
    fn check(h: c_int) -> MpiResult;
    /// The (keyval, value) pairs of `h`, in the order they were set.
    fn list(h: c_int) -> MpiResult<Vec<(c_int, AttrValue)>>;
    /// `keyval` on `h` as a reader of form `reader` sees it (`Attrs::read`).
    fn read(h: c_int, keyval: c_int, reader: AttrType) -> MpiResult<Option<usize>>;
    /// Sets `keyval` on `h`; true when it was not set before.
    fn store(h: c_int, keyval: c_int, value: AttrValue) -> MpiResult<bool>;
    /// Removes `keyval` from `h`; true when it was set.
    fn remove(h: c_int, keyval: c_int) -> MpiResult<bool>;
}

/// Datatypes (predefined ones included); attributes live in `TYPE_ATTRS`.
pub struct TypeAttrs;

impl AttrHost for TypeAttrs {
    const KIND: ObjKind = ObjKind::Datatype;
    const NEWEST_FIRST: bool = false;
    fn check(h: c_int) -> MpiResult {
        crate::datatype::lookup(h).map(|_| ())
    }
    fn list(h: c_int) -> MpiResult<Vec<(c_int, AttrValue)>> {
        Ok(TYPE_ATTRS.with(h, |a| a.iter().collect()))
    }
    fn read(h: c_int, keyval: c_int, reader: AttrType) -> MpiResult<Option<usize>> {
        Ok(TYPE_ATTRS.with(h, |a| a.read(keyval, reader)))
    }
    fn store(h: c_int, keyval: c_int, value: AttrValue) -> MpiResult<bool> {
        Ok(TYPE_ATTRS.with(h, |a| a.set(keyval, value)))
    }
    fn remove(h: c_int, keyval: c_int) -> MpiResult<bool> {
        Ok(TYPE_ATTRS.with(h, |a| a.remove(keyval)))
    }
}

/// Communicators; attributes live in each `Comm`.
pub struct CommAttrs;

impl AttrHost for CommAttrs {
    const KIND: ObjKind = ObjKind::Comm;
    const NEWEST_FIRST: bool = true;
    fn check(h: c_int) -> MpiResult {
        runtime::with(|rt| rt.comms.get(h).map(|_| ()))
    }
    fn list(h: c_int) -> MpiResult<Vec<(c_int, AttrValue)>> {
        runtime::with(|rt| Ok(rt.comms.get(h)?.attrs.iter().collect()))
    }
    fn read(h: c_int, keyval: c_int, reader: AttrType) -> MpiResult<Option<usize>> {
        runtime::with(|rt| Ok(rt.comms.get(h)?.attrs.read(keyval, reader)))
    }
    fn store(h: c_int, keyval: c_int, value: AttrValue) -> MpiResult<bool> {
        runtime::with(|rt| Ok(rt.comms.get_mut(h)?.attrs.set(keyval, value)))
    }
    fn remove(h: c_int, keyval: c_int) -> MpiResult<bool> {
        runtime::with(|rt| Ok(rt.comms.get_mut(h)?.attrs.remove(keyval)))
    }
}

/// `list` in the order callbacks visit it.
fn visit_order<H: AttrHost>(mut list: Vec<(c_int, AttrValue)>) -> Vec<(c_int, AttrValue)> {
    if H::NEWEST_FIRST {
        list.reverse();
    }
    list
}

/// The error a user callback's nonzero return becomes: the caller gets that code back.
fn callback_error(rc: c_int, what: &str, keyval: c_int) -> MpiError {
    MpiError::supplied(rc, format!("the {what} callback of keyval 0x{:08x} returned {rc}", keyval as u32))
}

/// A value as a C callback receives it: the pointer set from C; for a value set from Fortran,
/// a pointer to a copy of the integer (`copy`, which must outlive the call), as in MPICH.
fn c_callback_value(value: AttrValue, copy: &mut usize) -> *mut c_void {
    *copy = value.raw;
    if value.ty.is_fortran() { (copy as *mut usize).cast() } else { value.raw as *mut c_void }
}

/// Runs the delete callback of `keyval` for `value` cached on `h`.
pub fn run_delete<H: AttrHost>(h: c_int, keyval: c_int, value: AttrValue) -> MpiResult {
    let kv = attr::get_for(H::KIND, keyval)?;
    let Some(delete) = kv.delete else { return Ok(()) };
    let mut copy = 0;
    let rc = match (kv.proxy, kv.lang) {
        // SAFETY: a proxy the binding that created the keyval registered for its callbacks.
        (Some(proxy), _) => unsafe {
            (proxy.delete)(
                kv.delete,
                h,
                keyval,
                value.ty as c_int,
                value.raw as *mut c_void,
                kv.extra_state as *mut c_void,
            )
        },
        // SAFETY: `delete` was registered by the program as the delete function of this kind
        // (`int (HANDLE, int, void *, void *)`, HANDLE an int); value and extra state are the
        // pointers it gave us (or points at `copy`, alive across the call).
        (None, CallbackLang::C) => unsafe {
            delete(h, keyval, c_callback_value(value, &mut copy), kv.extra_state as *mut c_void)
        },
        // SAFETY: a Fortran keyval's pointer is a Fortran delete subroutine of that form.
        (None, lang) => unsafe { super::fortran::call_delete_attr(lang, delete, h, keyval, value.raw, kv.extra_state) },
    };
    if rc == MPI_SUCCESS { Ok(()) } else { Err(callback_error(rc, "delete", keyval)) }
}

/// Deletes attribute `keyval` (set to `value`) of `h`: the delete callback first; the
/// attribute stays when it fails.
pub fn delete_one<H: AttrHost>(h: c_int, keyval: c_int, value: AttrValue) -> MpiResult {
    run_delete::<H>(h, keyval, value)?;
    if H::remove(h, keyval)? {
        attr::release(keyval);
    }
    Ok(())
}

/// Deletes every attribute of `h` (in `AttrHost::NEWEST_FIRST` order).
pub fn delete_all<H: AttrHost>(h: c_int) -> MpiResult {
    for (keyval, value) in visit_order::<H>(H::list(h)?) {
        delete_one::<H>(h, keyval, value)?;
    }
    Ok(())
}

/// Copies the attributes of `parent` onto its duplicate `child` through the copy callbacks
/// (visited in `AttrHost::NEWEST_FIRST` order); the copies keep the parent's order and, as in
/// MPICH, the form each value was set in. The caller disposes of `child` on error.
pub fn copy_all<H: AttrHost>(parent: c_int, child: c_int) -> MpiResult {
    let list = H::list(parent)?;
    let mut copies: Vec<Option<(c_int, AttrValue)>> = vec![None; list.len()];
    let mut order: Vec<usize> = (0..list.len()).collect();
    if H::NEWEST_FIRST {
        order.reverse();
    }
    for i in order {
        let (keyval, value) = list[i];
        let Ok(kv) = attr::get_for(H::KIND, keyval) else { continue };
        let Some(copy) = kv.copy else { continue };
        let (rc, flag, out) = match (kv.proxy, kv.lang) {
            (Some(proxy), _) => {
                let mut out: *mut c_void = std::ptr::null_mut();
                let mut flag: c_int = 0;
                // SAFETY: a proxy the binding that created the keyval registered for its
                // callbacks; `out` and `flag` are live locals of the types it writes.
                let rc = unsafe {
                    (proxy.copy)(
                        kv.copy,
                        parent,
                        keyval,
                        kv.extra_state as *mut c_void,
                        value.ty as c_int,
                        value.raw as *mut c_void,
                        &mut out,
                        &mut flag,
                    )
                };
                (rc, flag != 0, out as usize)
            }
            (None, CallbackLang::C) => {
                let mut out: *mut c_void = std::ptr::null_mut();
                let mut flag: c_int = 0;
                let mut value_copy = 0;
                // SAFETY: `copy` was registered by the program as the copy function of this
                // kind; `out`, `flag` and `value_copy` are live locals of the types the
                // callback reads and writes.
                let rc = unsafe {
                    copy(
                        parent,
                        keyval,
                        kv.extra_state as *mut c_void,
                        c_callback_value(value, &mut value_copy),
                        (&raw mut out).cast(),
                        &mut flag,
                    )
                };
                (rc, flag != 0, out as usize)
            }
            // SAFETY: a Fortran keyval's pointer is a Fortran copy subroutine of that form.
            (None, lang) => unsafe {
                super::fortran::call_copy_attr(lang, copy, parent, keyval, value.raw, kv.extra_state)
            },
        };
        if rc != MPI_SUCCESS {
            return Err(callback_error(rc, "copy", keyval));
        }
        if flag {
            copies[i] = Some((keyval, AttrValue { raw: out, ty: value.ty }));
        }
    }
    for (keyval, value) in copies.into_iter().flatten() {
        if H::store(child, keyval, value)? {
            attr::retain(keyval);
        }
    }
    Ok(())
}

/// MPI_X_set_attr: replacing a value runs the delete callback on the old one first.
pub fn set_attr<H: AttrHost>(h: c_int, keyval: c_int, value: AttrValue) -> MpiResult {
    H::check(h)?;
    attr::get_for(H::KIND, keyval)?;
    if let Some(&(_, old)) = H::list(h)?.iter().find(|(k, _)| *k == keyval) {
        run_delete::<H>(h, keyval, old)?;
    }
    if H::store(h, keyval, value)? {
        attr::retain(keyval);
    }
    Ok(())
}

/// MPI_X_get_attr for a caller of form `reader` (C, or the Fortran binding).
///
/// # Safety
/// `attribute_val` is null (rejected) or points at a `void *` (an address-sized integer for
/// Fortran readers); `flag` null or writable.
pub unsafe fn get_attr<H: AttrHost>(
    h: c_int,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
    reader: AttrType,
) -> MpiResult {
    H::check(h)?;
    attr::get_for(H::KIND, keyval)?;
    if attribute_val.is_null() || flag.is_null() {
        return err(MPI_ERR_ARG, "invalid attribute_val or flag pointer (NULL)");
    }
    let value = H::read(h, keyval, reader)?;
    // SAFETY: checked non-null; attribute_val points at a `void *` (MPI's contract).
    unsafe {
        if let Some(v) = value {
            *(attribute_val as *mut *mut c_void) = v as *mut c_void;
        }
        *flag = value.is_some() as c_int;
    }
    Ok(())
}

/// MPI_X_delete_attr.
pub fn delete_attr<H: AttrHost>(h: c_int, keyval: c_int) -> MpiResult {
    H::check(h)?;
    attr::get_for(H::KIND, keyval)?;
    match H::list(h)?.into_iter().find(|(k, _)| *k == keyval) {
        Some((_, v)) => delete_one::<H>(h, keyval, v),
        None => Ok(()),
    }
}

/// MPI_X_create_keyval.
///
/// # Safety
/// `keyval` is null (rejected) or writable.
unsafe fn create_keyval(
    kind: ObjKind,
    copy: MPI_Type_copy_attr_function,
    delete: MPI_Type_delete_attr_function,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> MpiResult {
    if keyval.is_null() {
        return err(MPI_ERR_ARG, "null pointer in parameter keyval");
    }
    let k = attr::create_for(kind, copy, delete, extra_state as usize)?;
    // SAFETY: checked non-null.
    unsafe { *keyval = k };
    Ok(())
}

/// MPI_X_free_keyval.
///
/// # Safety
/// `keyval` is null (rejected) or readable and writable.
unsafe fn free_keyval(kind: ObjKind, keyval: *mut c_int) -> MpiResult {
    if keyval.is_null() {
        return err(MPI_ERR_ARG, "null pointer in parameter keyval");
    }
    // SAFETY: checked non-null.
    attr::free_for(kind, unsafe { *keyval })?;
    // SAFETY: checked non-null.
    unsafe { *keyval = MPI_KEYVAL_INVALID };
    Ok(())
}

pub unsafe fn MPI_Type_create_keyval(
    type_copy_attr_fn: MPI_Type_copy_attr_function,
    type_delete_attr_fn: MPI_Type_delete_attr_function,
    type_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { create_keyval(ObjKind::Datatype, type_copy_attr_fn, type_delete_attr_fn, type_keyval, extra_state) }
}

pub unsafe fn MPI_Type_free_keyval(type_keyval: *mut c_int) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { free_keyval(ObjKind::Datatype, type_keyval) }
}

pub unsafe fn MPI_Type_set_attr(datatype: MPI_Datatype, type_keyval: c_int, attribute_val: *mut c_void) -> MpiResult {
    set_attr::<TypeAttrs>(datatype, type_keyval, AttrValue::pointer(attribute_val as usize))
}

pub unsafe fn MPI_Type_get_attr(
    datatype: MPI_Datatype,
    type_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { get_attr::<TypeAttrs>(datatype, type_keyval, attribute_val, flag, AttrType::Pointer) }
}

pub fn MPI_Type_delete_attr(datatype: MPI_Datatype, type_keyval: c_int) -> MpiResult {
    delete_attr::<TypeAttrs>(datatype, type_keyval)
}

/// Window keyvals exist ahead of windows; attribute access on a window is reported by the
/// MPI_Win_*_attr entries like every window operation until windows are implemented.
pub unsafe fn MPI_Win_create_keyval(
    win_copy_attr_fn: MPI_Win_copy_attr_function,
    win_delete_attr_fn: MPI_Win_delete_attr_function,
    win_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { create_keyval(ObjKind::Win, win_copy_attr_fn, win_delete_attr_fn, win_keyval, extra_state) }
}

pub unsafe fn MPI_Win_free_keyval(win_keyval: *mut c_int) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { free_keyval(ObjKind::Win, win_keyval) }
}

// MPICH's internal attribute hooks: its Fortran binding (Debian's libmpichfort, and oxmpi's
// own) sets and gets attributes through them, saying in which form (`AttrType`).

pub(crate) fn attr_type(n: c_int) -> MpiResult<AttrType> {
    AttrType::from_mpich(n).ok_or_else(|| MpiError::new(MPI_ERR_ARG, format!("invalid attribute type {n}")))
}

/// `int MPII_Comm_set_attr(MPI_Comm, int keyval, void *value, MPIR_Attr_type)`.
#[unsafe(no_mangle)]
pub extern "C" fn MPII_Comm_set_attr(comm: MPI_Comm, keyval: c_int, value: *mut c_void, ty: c_int) -> c_int {
    super::entry::call("MPI_Comm_set_attr", Some(comm), || {
        set_attr::<CommAttrs>(comm, keyval, AttrValue { raw: value as usize, ty: attr_type(ty)? })
    })
}

/// `int MPII_Comm_get_attr(MPI_Comm, int keyval, void *value, int *flag, MPIR_Attr_type)`;
/// a Fortran form writes the value itself into `value`.
///
/// # Safety
/// `value` is null or points at 8 writable bytes; `flag` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Comm_get_attr(
    comm: MPI_Comm,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
    ty: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    super::entry::call("MPI_Comm_get_attr", Some(comm), || unsafe {
        super::comm::get_attr_as(comm, keyval, value, flag, attr_type(ty)?)
    })
}

/// `int MPII_Type_set_attr(MPI_Datatype, int keyval, void *value, MPIR_Attr_type)`.
#[unsafe(no_mangle)]
pub extern "C" fn MPII_Type_set_attr(datatype: MPI_Datatype, keyval: c_int, value: *mut c_void, ty: c_int) -> c_int {
    super::entry::call("MPI_Type_set_attr", None, || {
        set_attr::<TypeAttrs>(datatype, keyval, AttrValue { raw: value as usize, ty: attr_type(ty)? })
    })
}

/// `int MPII_Type_get_attr(MPI_Datatype, int keyval, void *value, int *flag, MPIR_Attr_type)`.
///
/// # Safety
/// As `MPII_Comm_get_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Type_get_attr(
    datatype: MPI_Datatype,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
    ty: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    super::entry::call("MPI_Type_get_attr", None, || unsafe {
        get_attr::<TypeAttrs>(datatype, keyval, value, flag, attr_type(ty)?)
    })
}

/// `void MPII_Keyval_set_proxy(int keyval, MPII_Attr_copy_proxy, MPII_Attr_delete_proxy)`:
/// the binding that just created `keyval` (Debian's libmpichfort or libmpichcxx) calls its
/// callbacks through these functions.
#[unsafe(no_mangle)]
pub extern "C" fn MPII_Keyval_set_proxy(
    keyval: c_int,
    copy: Option<attr::CopyProxy>,
    delete: Option<attr::DeleteProxy>,
) {
    if let (Some(copy), Some(delete)) = (copy, delete) {
        attr::set_proxy(keyval, attr::KeyvalProxy { copy, delete });
    }
}

/// The window hooks live with the window entry points.
pub use super::win::{MPII_Win_get_attr, MPII_Win_set_attr};

//! Tools information interface entry points (MPI-4.1 chapter 15): decode the C arguments and
//! call `crate::tool`. These return their error class directly (`entry::call_tool`), never
//! through an error handler. Output pointers may be NULL where the caller does not want the
//! value. Strings are returned as MPICH does: NULL or a length of 0 asks for the length
//! needed (with the NUL); otherwise at most `*len - 1` characters and a NUL are written and
//! `*len` becomes the number written with the NUL.
//!
//! Handles and sessions are ids from `crate::tool` carried in the pointer-typed C handles (0
//! is the null handle, never an id); they are never dereferenced.

use super::consts::*;
use super::ctypes::*;
use super::globals;
use crate::error::{MpiResult, err};
use crate::tool::{self, CATEGORIES, Handles, PVARS, Value, ValueType};
use std::ffi::{CStr, c_char, c_int, c_void};

/// Writes `v` to `p` unless `p` is NULL.
///
/// # Safety
/// `p` is NULL or valid for a write of `T`.
unsafe fn put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: non-null, valid for a write (caller contract).
        unsafe { p.write(v) };
    }
}

/// Returns string `s` through `dst` and `len` (see the module's comment).
///
/// # Safety
/// `len` is NULL or valid for a read and a write; `dst` is NULL or has room for `*len` bytes.
unsafe fn put_string(s: &str, dst: *mut c_char, len: *mut c_int) {
    if len.is_null() {
        return;
    }
    // SAFETY: non-null, valid (caller contract).
    let room = unsafe { len.read() };
    let needed = s.len() + 1;
    if dst.is_null() || room <= 0 {
        // SAFETY: as above.
        unsafe { len.write(needed as c_int) };
        return;
    }
    let n = s.len().min(room as usize - 1);
    // SAFETY: `dst` has room for `room > n` bytes (caller contract); `n <= s.len()`.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), n);
        *dst.add(n) = 0;
        len.write(n as c_int + 1);
    }
}

/// A C string argument as Rust text.
///
/// # Safety
/// `p` is NULL or NUL-terminated.
unsafe fn name_arg(p: *const c_char) -> MpiResult<String> {
    if p.is_null() {
        return err(MPI_T_ERR_INVALID_NAME, "invalid name (NULL)");
    }
    // SAFETY: non-null and NUL-terminated (caller contract).
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

fn non_null<T>(p: *const T, what: &str) -> MpiResult {
    if p.is_null() { err(MPI_T_ERR_INVALID, format!("invalid {what} pointer (NULL)")) } else { Ok(()) }
}

fn datatype(t: ValueType) -> MPI_Datatype {
    match t {
        ValueType::Int => MPI_INT,
        ValueType::UnsignedLongLong => MPI_UNSIGNED_LONG_LONG,
        ValueType::Char => MPI_CHAR,
    }
}

/// Writes `items` (at most `len`) to `out`.
///
/// # Safety
/// `out` is valid for `len` writes of `c_int` when `len > 0`.
unsafe fn put_indices(items: &[usize], len: c_int, out: *mut c_int) -> MpiResult {
    let n = items.len().min(len.max(0) as usize);
    if n > 0 {
        non_null(out, "indices")?;
    }
    for (i, &v) in items.iter().take(n).enumerate() {
        // SAFETY: i < len, the caller's array's length.
        unsafe { out.add(i).write(v as c_int) };
    }
    Ok(())
}

/// A tool handle's id (the pointer's address).
fn id<T>(h: *mut T) -> usize {
    h as usize
}

fn handle<T>(id: usize) -> *mut T {
    id as *mut T
}

// ----- initialization -----

pub unsafe fn MPI_T_init_thread(required: c_int, provided: *mut c_int) -> MpiResult {
    let level = tool::init(required)?;
    // SAFETY: NULL or valid (C contract).
    unsafe { put(provided, level) };
    Ok(())
}

pub fn MPI_T_finalize() -> MpiResult {
    tool::finalize()
}

// ----- control variables -----

pub unsafe fn MPI_T_cvar_get_num(num_cvar: *mut c_int) -> MpiResult {
    tool::check_initialized()?;
    non_null(num_cvar, "num_cvar")?;
    // SAFETY: checked non-null.
    unsafe { put(num_cvar, tool::cvar_count() as c_int) };
    Ok(())
}

pub unsafe fn MPI_T_cvar_get_info(
    cvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype_out: *mut MPI_Datatype,
    enumtype: *mut MPI_T_enum,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> MpiResult {
    let i = tool::check_index(cvar_index, tool::cvar_count(), "control variable")?;
    let t = tool::cvar(i).unwrap();
    // SAFETY: every pointer is NULL or valid for its output (C contract; string buffers
    // hold *len bytes).
    unsafe {
        put_string(t.name, name, name_len);
        put(verbosity, MPI_T_VERBOSITY_USER_BASIC);
        put(datatype_out, datatype(tool::cvar_type(t)));
        put(enumtype, std::ptr::null_mut());
        put_string(&tool::cvar_desc(t), desc, desc_len);
        put(bind, MPI_T_BIND_NO_OBJECT);
        put(scope, MPI_T_SCOPE_READONLY);
    }
    Ok(())
}

pub unsafe fn MPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) -> MpiResult {
    tool::check_initialized()?;
    // SAFETY: NUL-terminated (C contract).
    let name = unsafe { name_arg(name) }?;
    non_null(cvar_index, "cvar_index")?;
    match tool::cvar_index(&name) {
        // SAFETY: checked non-null.
        Some(i) => unsafe { put(cvar_index, i as c_int) },
        None => return err(MPI_T_ERR_INVALID_NAME, format!("no control variable is named {name}")),
    }
    Ok(())
}

pub unsafe fn MPI_T_cvar_handle_alloc(
    cvar_index: c_int,
    _obj_handle: *mut c_void,
    handle_out: *mut MPI_T_cvar_handle,
    count: *mut c_int,
) -> MpiResult {
    non_null(handle_out, "handle")?;
    let (h, n) = tool::cvar_handle_alloc(cvar_index)?;
    // SAFETY: checked non-null; `count` NULL or valid.
    unsafe {
        put(handle_out, handle(h));
        put(count, n as c_int);
    }
    Ok(())
}

pub unsafe fn MPI_T_cvar_handle_free(handle_inout: *mut MPI_T_cvar_handle) -> MpiResult {
    tool::check_initialized()?;
    non_null(handle_inout, "handle")?;
    // SAFETY: checked non-null.
    tool::cvar_handle_free(id(unsafe { handle_inout.read() }))?;
    // SAFETY: as above.
    unsafe { put(handle_inout, std::ptr::null_mut()) };
    Ok(())
}

pub unsafe fn MPI_T_cvar_read(h: MPI_T_cvar_handle, buf: *mut c_void) -> MpiResult {
    let v = tool::cvar_read(id(h))?;
    non_null(buf, "buf")?;
    // SAFETY: the buffer holds the count of elements of the variable's type that
    // handle_alloc returned (C contract), which is what `v` needs.
    unsafe {
        match v {
            Value::Int(x) => buf.cast::<c_int>().write_unaligned(x),
            Value::UnsignedLongLong(x) => buf.cast::<u64>().write_unaligned(x),
            Value::Text(s) => {
                std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
                *buf.cast::<u8>().add(s.len()) = 0;
            }
        }
    }
    Ok(())
}

pub unsafe fn MPI_T_cvar_write(h: MPI_T_cvar_handle, _buf: *const c_void) -> MpiResult {
    tool::cvar_write(id(h))
}

// ----- enumerations: no variable has one -----

pub unsafe fn MPI_T_enum_get_info(
    _enumtype: MPI_T_enum,
    _num: *mut c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
) -> MpiResult {
    tool::check_initialized()?;
    err(MPI_T_ERR_INVALID_HANDLE, "invalid enumeration (no variable of oxmpi has one)")
}

pub unsafe fn MPI_T_enum_get_item(
    _enumtype: MPI_T_enum,
    _indx: c_int,
    _value: *mut c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
) -> MpiResult {
    tool::check_initialized()?;
    err(MPI_T_ERR_INVALID_HANDLE, "invalid enumeration (no variable of oxmpi has one)")
}

// ----- performance variables -----

pub unsafe fn MPI_T_pvar_get_num(num_pvar: *mut c_int) -> MpiResult {
    tool::check_initialized()?;
    non_null(num_pvar, "num_pvar")?;
    // SAFETY: checked non-null.
    unsafe { put(num_pvar, PVARS.len() as c_int) };
    Ok(())
}

pub unsafe fn MPI_T_pvar_get_info(
    pvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    var_class: *mut c_int,
    datatype_out: *mut MPI_Datatype,
    enumtype: *mut MPI_T_enum,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    readonly: *mut c_int,
    continuous: *mut c_int,
    atomic: *mut c_int,
) -> MpiResult {
    let p = &PVARS[tool::check_index(pvar_index, PVARS.len(), "performance variable")?];
    // SAFETY: every pointer is NULL or valid for its output (C contract).
    unsafe {
        put_string(p.name, name, name_len);
        put(verbosity, MPI_T_VERBOSITY_USER_BASIC);
        put(var_class, p.class);
        put(datatype_out, MPI_UNSIGNED_LONG_LONG);
        put(enumtype, std::ptr::null_mut());
        put_string(p.desc, desc, desc_len);
        put(bind, MPI_T_BIND_NO_OBJECT);
        put(readonly, 1);
        put(continuous, p.continuous as c_int);
        put(atomic, 0);
    }
    Ok(())
}

pub unsafe fn MPI_T_pvar_get_index(name: *const c_char, var_class: c_int, pvar_index: *mut c_int) -> MpiResult {
    tool::check_initialized()?;
    // SAFETY: NUL-terminated (C contract).
    let name = unsafe { name_arg(name) }?;
    non_null(pvar_index, "pvar_index")?;
    match tool::pvar_index(&name, var_class) {
        // SAFETY: checked non-null.
        Some(i) => unsafe { put(pvar_index, i as c_int) },
        None => {
            return err(
                MPI_T_ERR_INVALID_NAME,
                format!("no performance variable of class {var_class} is named {name}"),
            );
        }
    }
    Ok(())
}

pub unsafe fn MPI_T_pvar_session_create(session: *mut MPI_T_pvar_session) -> MpiResult {
    tool::check_initialized()?;
    non_null(session, "session")?;
    let s = tool::session_create()?;
    // SAFETY: checked non-null.
    unsafe { put(session, handle(s)) };
    Ok(())
}

pub unsafe fn MPI_T_pvar_session_free(session: *mut MPI_T_pvar_session) -> MpiResult {
    tool::check_initialized()?;
    if session.is_null() {
        return err(MPI_T_ERR_INVALID_SESSION, "invalid session pointer (NULL)");
    }
    // SAFETY: checked non-null.
    tool::session_free(id(unsafe { session.read() }))?;
    // SAFETY: as above.
    unsafe { put(session, std::ptr::null_mut()) };
    Ok(())
}

pub unsafe fn MPI_T_pvar_handle_alloc(
    session: MPI_T_pvar_session,
    pvar_index: c_int,
    _obj_handle: *mut c_void,
    handle_out: *mut MPI_T_pvar_handle,
    count: *mut c_int,
) -> MpiResult {
    let (h, n) = tool::pvar_handle_alloc(id(session), pvar_index)?;
    if handle_out.is_null() {
        tool::pvar_handle_free(id(session), h)?;
        return err(MPI_T_ERR_INVALID, "invalid handle pointer (NULL)");
    }
    // SAFETY: checked non-null; `count` NULL or valid.
    unsafe {
        put(handle_out, handle(h));
        put(count, n as c_int);
    }
    Ok(())
}

pub unsafe fn MPI_T_pvar_handle_free(session: MPI_T_pvar_session, handle_inout: *mut MPI_T_pvar_handle) -> MpiResult {
    tool::check_initialized()?;
    if handle_inout.is_null() {
        return err(MPI_T_ERR_INVALID_HANDLE, "invalid handle pointer (NULL)");
    }
    // SAFETY: checked non-null.
    tool::pvar_handle_free(id(session), id(unsafe { handle_inout.read() }))?;
    // SAFETY: as above.
    unsafe { put(handle_inout, std::ptr::null_mut()) };
    Ok(())
}

/// One handle, or all of the session's for `MPI_T_PVAR_ALL_HANDLES`.
fn handles(h: MPI_T_pvar_handle) -> Handles {
    if h == globals::MPI_T_PVAR_ALL_HANDLES.get() { Handles::All } else { Handles::One(id(h)) }
}

/// Refuses `MPI_T_PVAR_ALL_HANDLES` where one handle is needed.
fn one_handle(h: MPI_T_pvar_handle) -> MpiResult<usize> {
    match handles(h) {
        Handles::One(h) => Ok(h),
        Handles::All => err(MPI_T_ERR_INVALID_HANDLE, "MPI_T_PVAR_ALL_HANDLES is not allowed here"),
    }
}

pub fn MPI_T_pvar_start(session: MPI_T_pvar_session, h: MPI_T_pvar_handle) -> MpiResult {
    tool::pvar_start_stop(id(session), handles(h), true)
}

pub fn MPI_T_pvar_stop(session: MPI_T_pvar_session, h: MPI_T_pvar_handle) -> MpiResult {
    tool::pvar_start_stop(id(session), handles(h), false)
}

pub unsafe fn MPI_T_pvar_read(session: MPI_T_pvar_session, h: MPI_T_pvar_handle, buf: *mut c_void) -> MpiResult {
    tool::check_initialized()?;
    let v = tool::pvar_read(id(session), one_handle(h)?)?;
    non_null(buf, "buf")?;
    // SAFETY: the buffer holds one unsigned long long (the count handle_alloc returned).
    unsafe { buf.cast::<u64>().write_unaligned(v) };
    Ok(())
}

pub unsafe fn MPI_T_pvar_write(session: MPI_T_pvar_session, h: MPI_T_pvar_handle, _buf: *const c_void) -> MpiResult {
    tool::check_initialized()?;
    tool::pvar_write(id(session), Handles::One(one_handle(h)?), "write")
}

pub fn MPI_T_pvar_reset(session: MPI_T_pvar_session, h: MPI_T_pvar_handle) -> MpiResult {
    tool::pvar_write(id(session), handles(h), "reset")
}

pub unsafe fn MPI_T_pvar_readreset(session: MPI_T_pvar_session, h: MPI_T_pvar_handle, _buf: *mut c_void) -> MpiResult {
    tool::check_initialized()?;
    tool::pvar_readreset(id(session), one_handle(h)?)
}

// ----- categories -----

pub unsafe fn MPI_T_category_get_num(num_cat: *mut c_int) -> MpiResult {
    tool::check_initialized()?;
    non_null(num_cat, "num_cat")?;
    // SAFETY: checked non-null.
    unsafe { put(num_cat, CATEGORIES.len() as c_int) };
    Ok(())
}

fn category(cat_index: c_int) -> MpiResult<usize> {
    tool::check_index(cat_index, CATEGORIES.len(), "category")
}

pub unsafe fn MPI_T_category_get_info(
    cat_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    num_cvars: *mut c_int,
    num_pvars: *mut c_int,
    num_categories: *mut c_int,
) -> MpiResult {
    let i = category(cat_index)?;
    let c = &CATEGORIES[i];
    // SAFETY: every pointer is NULL or valid for its output (C contract).
    unsafe {
        put_string(c.name, name, name_len);
        put_string(c.desc, desc, desc_len);
        put(num_cvars, tool::category_cvars(i).len() as c_int);
        put(num_pvars, tool::category_pvars(i).len() as c_int);
        put(num_categories, c.subcategories.len() as c_int);
    }
    Ok(())
}

pub unsafe fn MPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) -> MpiResult {
    tool::check_initialized()?;
    // SAFETY: NUL-terminated (C contract).
    let name = unsafe { name_arg(name) }?;
    non_null(cat_index, "cat_index")?;
    match tool::category_index(&name) {
        // SAFETY: checked non-null.
        Some(i) => unsafe { put(cat_index, i as c_int) },
        None => return err(MPI_T_ERR_INVALID_NAME, format!("no category is named {name}")),
    }
    Ok(())
}

pub unsafe fn MPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> MpiResult {
    let i = category(cat_index)?;
    // SAFETY: `indices` holds `len` ints (C contract).
    unsafe { put_indices(&tool::category_cvars(i), len, indices) }
}

pub unsafe fn MPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> MpiResult {
    let i = category(cat_index)?;
    // SAFETY: `indices` holds `len` ints (C contract).
    unsafe { put_indices(&tool::category_pvars(i), len, indices) }
}

pub unsafe fn MPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) -> MpiResult {
    let i = category(cat_index)?;
    // SAFETY: `indices` holds `len` ints (C contract).
    unsafe { put_indices(CATEGORIES[i].subcategories, len, indices) }
}

pub unsafe fn MPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) -> MpiResult {
    category(cat_index)?;
    // SAFETY: NULL or valid (C contract).
    unsafe { put(num_events, 0) };
    Ok(())
}

pub unsafe fn MPI_T_category_get_events(cat_index: c_int, _len: c_int, _indices: *mut c_int) -> MpiResult {
    category(cat_index).map(|_| ())
}

/// The categories never change while the program runs: their update number stays 0.
pub unsafe fn MPI_T_category_changed(update_number: *mut c_int) -> MpiResult {
    tool::check_initialized()?;
    non_null(update_number, "update_number")?;
    // SAFETY: checked non-null.
    unsafe { put(update_number, 0) };
    Ok(())
}

// ----- events and sources: oxmpi has none (MPI-4.1 allows zero) -----

fn no_event_handle() -> MpiResult {
    tool::check_initialized()?;
    err(MPI_T_ERR_INVALID_HANDLE, "invalid event handle (oxmpi defines no events)")
}

pub unsafe fn MPI_T_event_get_num(num_events: *mut c_int) -> MpiResult {
    tool::check_initialized()?;
    non_null(num_events, "num_events")?;
    // SAFETY: checked non-null.
    unsafe { put(num_events, 0) };
    Ok(())
}

pub unsafe fn MPI_T_event_get_info(
    event_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _verbosity: *mut c_int,
    _array_of_datatypes: *mut MPI_Datatype,
    _array_of_displacements: *mut MPI_Aint,
    _num_elements: *mut c_int,
    _enumtype: *mut MPI_T_enum,
    _info: *mut MPI_Info,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _bind: *mut c_int,
) -> MpiResult {
    tool::check_index(event_index, 0, "event").map(|_| ())
}

pub unsafe fn MPI_T_event_get_index(name: *const c_char, _event_index: *mut c_int) -> MpiResult {
    tool::check_initialized()?;
    // SAFETY: NUL-terminated (C contract).
    let name = unsafe { name_arg(name) }?;
    err(MPI_T_ERR_INVALID_NAME, format!("no event is named {name}"))
}

pub unsafe fn MPI_T_event_handle_alloc(
    event_index: c_int,
    _obj_handle: *mut c_void,
    _info: MPI_Info,
    _event_registration: *mut MPI_T_event_registration,
) -> MpiResult {
    tool::check_index(event_index, 0, "event").map(|_| ())
}

pub unsafe fn MPI_T_event_handle_free(
    _event_registration: MPI_T_event_registration,
    _user_data: *mut c_void,
    _free_cb_function: MPI_T_event_free_cb_function,
) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_event_handle_get_info(
    _event_registration: MPI_T_event_registration,
    _info_used: *mut MPI_Info,
) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_event_handle_set_info(_event_registration: MPI_T_event_registration, _info: MPI_Info) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_event_register_callback(
    _event_registration: MPI_T_event_registration,
    _cb_safety: MPI_T_cb_safety,
    _info: MPI_Info,
    _user_data: *mut c_void,
    _event_cb_function: MPI_T_event_cb_function,
) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_event_callback_get_info(
    _event_registration: MPI_T_event_registration,
    _cb_safety: MPI_T_cb_safety,
    _info_used: *mut MPI_Info,
) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_event_callback_set_info(
    _event_registration: MPI_T_event_registration,
    _cb_safety: MPI_T_cb_safety,
    _info: MPI_Info,
) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_event_set_dropped_handler(
    _event_registration: MPI_T_event_registration,
    _dropped_cb_function: MPI_T_event_dropped_cb_function,
) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_event_copy(_event_instance: MPI_T_event_instance, _buffer: *mut c_void) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_event_read(
    _event_instance: MPI_T_event_instance,
    _element_index: c_int,
    _buffer: *mut c_void,
) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_event_get_source(_event_instance: MPI_T_event_instance, _source_index: *mut c_int) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_event_get_timestamp(
    _event_instance: MPI_T_event_instance,
    _event_timestamp: *mut MPI_Count,
) -> MpiResult {
    no_event_handle()
}

pub unsafe fn MPI_T_source_get_num(num_sources: *mut c_int) -> MpiResult {
    tool::check_initialized()?;
    non_null(num_sources, "num_sources")?;
    // SAFETY: checked non-null.
    unsafe { put(num_sources, 0) };
    Ok(())
}

pub unsafe fn MPI_T_source_get_info(
    source_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _ordering: *mut MPI_T_source_order,
    _ticks_per_second: *mut MPI_Count,
    _max_ticks: *mut MPI_Count,
    _info: *mut MPI_Info,
) -> MpiResult {
    tool::check_index(source_index, 0, "source").map(|_| ())
}

pub unsafe fn MPI_T_source_get_timestamp(source_index: c_int, _timestamp: *mut MPI_Count) -> MpiResult {
    tool::check_index(source_index, 0, "source").map(|_| ())
}

//! Window entry points: creation (the four flavours), free, group, name, hints, shared
//! queries, dynamic attach/detach, attributes and error handlers, one-sided operations and
//! their synchronisation. Argument checks and pointer decoding only; the windows themselves
//! are in `crate::win`, the operations and epochs in `crate::rma`.

use super::attr::{AttrHost, delete_all};
use super::consts::*;
use super::ctypes::MPI_Win_errhandler_function;
use super::errors::write_c_string;
use super::family::Mode;
use super::types::*;
use crate::attr::{AttrType, AttrValue, ObjKind};
use crate::errhandler::{self, HandlerKind};
use crate::error::{MpiResult, err};
use crate::rma;
use crate::runtime;
use crate::win::{self, Flavor};
use std::ffi::{CStr, c_char, c_int, c_void};

/// Windows as attribute hosts; attributes live in each window.
pub struct WinAttrs;

impl AttrHost for WinAttrs {
    const KIND: ObjKind = ObjKind::Win;
    const NEWEST_FIRST: bool = false;
    fn check(h: c_int) -> MpiResult {
        win::check(h)
    }
    fn list(h: c_int) -> MpiResult<Vec<(c_int, AttrValue)>> {
        win::with(h, |w| Ok(w.attrs.iter().collect()))
    }
    fn read(h: c_int, keyval: c_int, reader: AttrType) -> MpiResult<Option<usize>> {
        win::with(h, |w| Ok(w.attrs.read(keyval, reader)))
    }
    fn store(h: c_int, keyval: c_int, value: AttrValue) -> MpiResult<bool> {
        win::with(h, |w| Ok(w.attrs.set(keyval, value)))
    }
    fn remove(h: c_int, keyval: c_int) -> MpiResult<bool> {
        win::with(h, |w| Ok(w.attrs.remove(keyval)))
    }
}

fn non_null<T>(p: *const T, what: &str) -> MpiResult {
    if p.is_null() { err(MPI_ERR_ARG, format!("null pointer in parameter {what}")) } else { Ok(()) }
}

/// The checks every constructor makes before any communication, in MPICH's order: the
/// communicator (an intracommunicator), then size and displacement unit, the info object
/// and the output pointer. Returns the size and unit as the window keeps them.
fn check_new(
    comm: MPI_Comm,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    win: *mut MPI_Win,
) -> MpiResult<(usize, c_int, crate::info::Info)> {
    runtime::with(|rt| rt.comms.get(comm)?.check_intra("window creation"))?;
    if size < 0 {
        return err(MPI_ERR_SIZE, format!("invalid size argument (size={size}, must be non-negative)"));
    }
    if disp_unit <= 0 || disp_unit > c_int::MAX as MPI_Aint {
        return err(MPI_ERR_DISP, format!("invalid disp_unit argument (disp_unit={disp_unit}, must be positive)"));
    }
    let hints = crate::info::get_or_empty(info)?;
    non_null(win, "win")?;
    Ok((size as usize, disp_unit as c_int, hints))
}

/// Makes the window and hands it (and, for the allocating flavours, its base) to C.
///
/// # Safety
/// `win` was checked non-null and is writable; `baseptr` is null or points at a `void *`.
unsafe fn create_into(
    comm: MPI_Comm,
    flavor: Flavor,
    (size, disp_unit, hints): (usize, c_int, crate::info::Info),
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> MpiResult {
    let (h, base) = win::create(comm, flavor, size, disp_unit, &hints)?;
    // SAFETY: the caller's contract; `baseptr` is the address of a `void *` (MPI's contract
    // for the allocating constructors).
    unsafe {
        if !baseptr.is_null() {
            baseptr.cast::<*mut c_void>().write(base as *mut c_void);
        }
        *win = h;
    }
    Ok(())
}

pub unsafe fn MPI_Win_create_c(
    base: *mut c_void,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    comm: MPI_Comm,
    win: *mut MPI_Win,
) -> MpiResult {
    let checked = check_new(comm, size, disp_unit, info, win)?;
    // SAFETY: `win` checked non-null; no base pointer to write.
    unsafe { create_into(comm, Flavor::Create(base as usize), checked, std::ptr::null_mut(), win) }
}

pub unsafe fn MPI_Win_allocate_c(
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> MpiResult {
    let checked = check_new(comm, size, disp_unit, info, win)?;
    non_null(baseptr, "baseptr")?;
    // SAFETY: both pointers checked non-null; C passes the address of a `void *`.
    unsafe { create_into(comm, Flavor::Allocate, checked, baseptr, win) }
}

pub unsafe fn MPI_Win_allocate_shared_c(
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> MpiResult {
    let checked = check_new(comm, size, disp_unit, info, win)?;
    non_null(baseptr, "baseptr")?;
    // SAFETY: both pointers checked non-null; C passes the address of a `void *`.
    unsafe { create_into(comm, Flavor::Shared, checked, baseptr, win) }
}

pub unsafe fn MPI_Win_create_dynamic(info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> MpiResult {
    let checked = check_new(comm, 0, 1, info, win)?;
    // SAFETY: `win` checked non-null; no base pointer to write.
    unsafe { create_into(comm, Flavor::Dynamic, checked, std::ptr::null_mut(), win) }
}

/// MPI_Win_free: attribute delete callbacks (the window stays when one fails), then the
/// collective release.
pub unsafe fn MPI_Win_free(win: *mut MPI_Win) -> MpiResult {
    non_null(win, "win")?;
    // SAFETY: checked non-null.
    let h = unsafe { *win };
    win::check(h)?;
    delete_all::<WinAttrs>(h)?;
    win::free(h)?;
    errhandler::on_win_free(h);
    // SAFETY: checked non-null.
    unsafe { *win = MPI_WIN_NULL };
    Ok(())
}

pub unsafe fn MPI_Win_get_group(win: MPI_Win, group: *mut MPI_Group) -> MpiResult {
    let members = win::with(win, |w| Ok(w.members.clone()))?;
    non_null(group, "group")?;
    let g = crate::group::insert(crate::group::Group::new(members))?;
    // SAFETY: checked non-null.
    unsafe { *group = g };
    Ok(())
}

pub unsafe fn MPI_Win_set_name(win: MPI_Win, win_name: *const c_char) -> MpiResult {
    win::check(win)?;
    non_null(win_name, "win_name")?;
    // SAFETY: C passes a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(win_name) }.to_string_lossy();
    let name: String = name.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
    win::with(win, |w| {
        w.name = name;
        Ok(())
    })
}

pub unsafe fn MPI_Win_get_name(win: MPI_Win, win_name: *mut c_char, resultlen: *mut c_int) -> MpiResult {
    let name = win::with(win, |w| Ok(w.name.clone()))?;
    non_null(win_name, "win_name")?;
    non_null(resultlen, "resultlen")?;
    // SAFETY: MPI requires room for MPI_MAX_OBJECT_NAME characters; names are shorter.
    unsafe { *resultlen = write_c_string(&name, win_name, MPI_MAX_OBJECT_NAME as usize) as c_int };
    Ok(())
}

pub fn MPI_Win_set_info(win: MPI_Win, info: MPI_Info) -> MpiResult {
    win::check(win)?;
    let given = crate::info::get_or_empty(info)?;
    win::with(win, |w| {
        w.hints = win::hints_of(&given, std::mem::take(&mut w.hints));
        Ok(())
    })
}

pub unsafe fn MPI_Win_get_info(win: MPI_Win, info_used: *mut MPI_Info) -> MpiResult {
    let hints = win::with(win, |w| Ok(w.hints.clone()))?;
    non_null(info_used, "info_used")?;
    let h = crate::info::insert(hints)?;
    // SAFETY: checked non-null.
    unsafe { *info_used = h };
    Ok(())
}

/// MPI_Win_shared_query(_c)'s work: member `rank`'s size, unit and base as this process
/// sees them, checked outputs.
///
/// # Safety
/// `size` and `baseptr` are null or writable (`baseptr` the address of a `void *`).
unsafe fn shared_query(win: MPI_Win, rank: c_int, size: *mut MPI_Aint, baseptr: *mut c_void) -> MpiResult<MPI_Aint> {
    let peer = win::shared_query(win, rank)?;
    non_null(size, "size")?;
    non_null(baseptr, "baseptr")?;
    // SAFETY: checked non-null; the caller's contract.
    unsafe {
        *size = peer.size;
        baseptr.cast::<*mut c_void>().write(peer.base as *mut c_void);
    }
    Ok(peer.disp_unit)
}

pub unsafe fn MPI_Win_shared_query(
    win: MPI_Win,
    rank: c_int,
    size: *mut MPI_Aint,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
) -> MpiResult {
    non_null(disp_unit, "disp_unit")?;
    // SAFETY: forwarded contract.
    let unit = unsafe { shared_query(win, rank, size, baseptr) }?;
    // SAFETY: checked non-null; units were checked to fit an int at creation.
    unsafe { *disp_unit = unit as c_int };
    Ok(())
}

pub unsafe fn MPI_Win_shared_query_c(
    win: MPI_Win,
    rank: c_int,
    size: *mut MPI_Aint,
    disp_unit: *mut MPI_Aint,
    baseptr: *mut c_void,
) -> MpiResult {
    non_null(disp_unit, "disp_unit")?;
    // SAFETY: forwarded contract.
    let unit = unsafe { shared_query(win, rank, size, baseptr) }?;
    // SAFETY: checked non-null.
    unsafe { *disp_unit = unit };
    Ok(())
}

pub unsafe fn MPI_Win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) -> MpiResult {
    win::check(win)?;
    if size < 0 {
        return err(MPI_ERR_SIZE, format!("invalid size argument (size={size}, must be non-negative)"));
    }
    if base.is_null() && size > 0 {
        return err(MPI_ERR_ARG, "null pointer in parameter base");
    }
    win::attach(win, base as usize, size as usize)
}

pub unsafe fn MPI_Win_detach(win: MPI_Win, base: *const c_void) -> MpiResult {
    win::detach(win, base as usize)
}

// ----- attributes -----

/// The value cell of a predefined window keyval (C form: odd; the Fortran form, C + 1,
/// asks for the value as an address-sized integer): (the value, a pointer for C).
fn predefined_attr(win: MPI_Win, keyval: c_int) -> MpiResult<Option<(MPI_Aint, *const c_void, bool)>> {
    let by_value = keyval & 1 == 0;
    let c_keyval = if by_value { keyval - 1 } else { keyval };
    let field = |f: fn(&win::Win) -> &c_int| -> MpiResult<_> {
        let p = win::field_addr(win, f)?;
        // SAFETY: the address of a live window's field (see `field_addr`).
        Ok((MPI_Aint::from(unsafe { *p }), p.cast()))
    };
    let (value, ptr) = match c_keyval {
        MPI_WIN_BASE => {
            let base = win::with(win, |w| Ok(w.base))?;
            (base as MPI_Aint, base as *const c_void)
        }
        MPI_WIN_SIZE => {
            let p = win::field_addr(win, |w| &w.size)?;
            // SAFETY: as above.
            (unsafe { *p }, p.cast())
        }
        MPI_WIN_DISP_UNIT => field(|w| &w.disp_unit)?,
        MPI_WIN_CREATE_FLAVOR => field(|w| &w.flavor)?,
        MPI_WIN_MODEL => field(|w| &w.model)?,
        _ => return Ok(None),
    };
    Ok(Some((value, ptr, by_value)))
}

/// MPI_Win_get_attr for a caller of form `reader`: the predefined attributes in the form the
/// keyval asks for (the Fortran form, C + 1, or a Fortran reader, gets the value itself),
/// user attributes through the generic path.
///
/// # Safety
/// `attribute_val` is null or points at 8 writable bytes; `flag` null or writable.
unsafe fn win_get_attr(
    win: MPI_Win,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
    reader: AttrType,
) -> MpiResult {
    win::check(win)?;
    let Some((value, ptr, by_value)) = predefined_attr(win, keyval)? else {
        // SAFETY: forwarded contract.
        return unsafe { super::attr::get_attr::<WinAttrs>(win, keyval, attribute_val, flag, reader) };
    };
    non_null(attribute_val, "attribute_val")?;
    non_null(flag, "flag")?;
    // SAFETY: attribute_val points at a `void *` (C) or an address-sized integer (the
    // Fortran form), both 8 bytes; flag checked non-null.
    unsafe {
        if by_value || reader.is_fortran() {
            *(attribute_val as *mut MPI_Aint) = value;
        } else {
            *(attribute_val as *mut *const c_void) = ptr;
        }
        *flag = 1;
    }
    Ok(())
}

pub unsafe fn MPI_Win_get_attr(
    win: MPI_Win,
    win_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { win_get_attr(win, win_keyval, attribute_val, flag, AttrType::Pointer) }
}

/// MPICH's hook `int MPII_Win_get_attr(MPI_Win, int keyval, void *value, int *flag,
/// MPIR_Attr_type)`, through which Fortran bindings read window attributes.
///
/// # Safety
/// `value` is null or points at 8 writable bytes; `flag` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Win_get_attr(
    win: MPI_Win,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
    ty: c_int,
) -> c_int {
    super::entry::call_on_win("MPI_Win_get_attr", win, || {
        let reader = super::attr::attr_type(ty)?;
        // SAFETY: forwarded contract.
        unsafe { win_get_attr(win, keyval, value, flag, reader) }
    })
}

/// MPICH's hook `int MPII_Win_set_attr(MPI_Win, int keyval, void *value, MPIR_Attr_type)`.
#[unsafe(no_mangle)]
pub extern "C" fn MPII_Win_set_attr(win: MPI_Win, keyval: c_int, value: *mut c_void, ty: c_int) -> c_int {
    super::entry::call_on_win("MPI_Win_set_attr", win, || {
        let ty = super::attr::attr_type(ty)?;
        super::attr::set_attr::<WinAttrs>(win, keyval, AttrValue { raw: value as usize, ty })
    })
}

pub unsafe fn MPI_Win_set_attr(win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void) -> MpiResult {
    super::attr::set_attr::<WinAttrs>(win, win_keyval, AttrValue::pointer(attribute_val as usize))
}

pub fn MPI_Win_delete_attr(win: MPI_Win, win_keyval: c_int) -> MpiResult {
    super::attr::delete_attr::<WinAttrs>(win, win_keyval)
}

// ----- error handlers -----

pub unsafe fn MPI_Win_create_errhandler(
    win_errhandler_fn: MPI_Win_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> MpiResult {
    non_null(errhandler, "errhandler")?;
    let Some(f) = win_errhandler_fn else {
        return err(MPI_ERR_ARG, "null function pointer in argument win_errhandler_fn");
    };
    // MPI_Win is an int, so `void (MPI_Win *, int *, ...)` is already the registry's shape.
    let eh = errhandler::create(HandlerKind::Win, f)?;
    // SAFETY: checked non-null.
    unsafe { *errhandler = eh };
    Ok(())
}

pub fn MPI_Win_set_errhandler(win: MPI_Win, errhandler: MPI_Errhandler) -> MpiResult {
    win::check(win)?;
    errhandler::check(errhandler, HandlerKind::Win)?;
    errhandler::set_win_errhandler(win, errhandler);
    Ok(())
}

pub unsafe fn MPI_Win_get_errhandler(win: MPI_Win, errhandler: *mut MPI_Errhandler) -> MpiResult {
    win::check(win)?;
    non_null(errhandler, "errhandler")?;
    // SAFETY: checked non-null.
    unsafe { *errhandler = errhandler::get_win_errhandler(win) };
    Ok(())
}

pub fn MPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) -> MpiResult {
    win::check(win)?;
    errhandler::call_win_errhandler(win, errorcode)
}

// ----- one-sided operations (crate::rma)

/// A checked count and the committed datatype's layout.
fn data_arg(count: MPI_Count, datatype: MPI_Datatype) -> MpiResult<(usize, crate::datatype::Layout)> {
    if count < 0 {
        return err(MPI_ERR_COUNT, format!("invalid count argument (count={count})"));
    }
    Ok((count as usize, crate::datatype::layout(datatype)?))
}

/// The origin (or result) buffer: `count` elements of `datatype` at `addr`.
fn local_arg<'a>(addr: *const c_void, count: usize, layout: &'a crate::datatype::Layout) -> MpiResult<rma::Local<'a>> {
    // A null buffer is MPI_BOTTOM: fine with absolute displacements (data not at the pointer).
    if addr.is_null() && count > 0 && layout.size > 0 && layout.lower(count) == 0 {
        return err(MPI_ERR_BUFFER, "invalid buffer pointer (NULL with a nonzero count)");
    }
    Ok(rma::Local { addr: addr as usize, count, layout })
}

/// A request-based operation (MPI_Rput, ...): checks the passive-target epoch, runs `op`,
/// waits until it completed locally (operations on memory reached here finish as they are
/// issued; those by message when their reply arrived, `crate::rma`), and hands back a
/// request already complete.
fn request_based(
    win: MPI_Win,
    target_rank: c_int,
    what: &str,
    request: *mut MPI_Request,
    op: impl FnOnce() -> MpiResult,
) -> MpiResult {
    non_null(request, "request")?;
    let rma = win::rma(win)?;
    rma.check_request_based(target_rank, what)?;
    op()?;
    rma.complete_locally(target_rank)?;
    let comm = win::with(win, |w| Ok(w.comm))?;
    let id = runtime::with(|rt| {
        Ok(rt.engine.reqs.insert(crate::p2p::request::Request::completed(crate::p2p::request::Status::default(), comm)))
    })?;
    // SAFETY: checked non-null; C passes a writable request.
    unsafe { *request = super::p2p::request_handle(id) };
    Ok(())
}

pub unsafe fn MPI_Put_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> MpiResult {
    let r = win::rma(win)?;
    let (oc, ol) = data_arg(origin_count, origin_datatype)?;
    let (tc, tl) = data_arg(target_count, target_datatype)?;
    let origin = local_arg(origin_addr, oc, &ol)?;
    // SAFETY: MPI's contract: the origin buffer holds its elements.
    unsafe { r.put(&origin, &rma::TargetSpec { rank: target_rank, disp: target_disp, count: tc, layout: &tl }) }
}

pub unsafe fn MPI_Get_c(
    origin_addr: *mut c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> MpiResult {
    let r = win::rma(win)?;
    let (oc, ol) = data_arg(origin_count, origin_datatype)?;
    let (tc, tl) = data_arg(target_count, target_datatype)?;
    let origin = local_arg(origin_addr, oc, &ol)?;
    // SAFETY: MPI's contract: the origin buffer holds its elements, writable.
    unsafe { r.get(&origin, &rma::TargetSpec { rank: target_rank, disp: target_disp, count: tc, layout: &tl }) }
}

pub unsafe fn MPI_Accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> MpiResult {
    let r = win::rma(win)?;
    let (oc, ol) = data_arg(origin_count, origin_datatype)?;
    let (tc, tl) = data_arg(target_count, target_datatype)?;
    let origin = local_arg(origin_addr, oc, &ol)?;
    let target = rma::TargetSpec { rank: target_rank, disp: target_disp, count: tc, layout: &tl };
    // SAFETY: MPI's contract: the origin buffer holds its elements.
    unsafe { r.accumulate(&origin, origin_datatype, None, &target, target_datatype, op) }
}

pub unsafe fn MPI_Get_accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: MPI_Count,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> MpiResult {
    let r = win::rma(win)?;
    // MPI_NO_OP ignores the origin buffer (its arguments may be anything).
    let no_op = op == MPI_NO_OP;
    let (oc, ol) = if no_op { (0, crate::datatype::BYTE) } else { data_arg(origin_count, origin_datatype)? };
    let (rc, rl) = data_arg(result_count, result_datatype)?;
    let (tc, tl) = data_arg(target_count, target_datatype)?;
    let origin = local_arg(origin_addr, oc, &ol)?;
    let result = local_arg(result_addr, rc, &rl)?;
    let target = rma::TargetSpec { rank: target_rank, disp: target_disp, count: tc, layout: &tl };
    let origin_datatype = if no_op { target_datatype } else { origin_datatype };
    // SAFETY: MPI's contract: the origin buffer holds its elements, the result buffer is writable.
    unsafe { r.accumulate(&origin, origin_datatype, Some((&result, result_datatype)), &target, target_datatype, op) }
}

pub unsafe fn MPI_Fetch_and_op(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> MpiResult {
    // SAFETY: forwarded: one element of `datatype` at each address.
    unsafe {
        MPI_Get_accumulate_c(
            origin_addr,
            1,
            datatype,
            result_addr,
            1,
            datatype,
            target_rank,
            target_disp,
            1,
            datatype,
            op,
            win,
        )
    }
}

pub unsafe fn MPI_Compare_and_swap(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> MpiResult {
    let r = win::rma(win)?;
    let Some(b) = crate::datatype::builtin::builtin(datatype) else {
        return err(MPI_ERR_TYPE, "MPI_Compare_and_swap takes a predefined datatype");
    };
    if !crate::op::compares_and_swaps(datatype) {
        return err(
            MPI_ERR_TYPE,
            format!("MPI_Compare_and_swap takes an integer, logical or byte datatype, not {}", b.name),
        );
    }
    let layout = crate::datatype::layout(datatype)?;
    for (p, what) in
        [(origin_addr, "origin_addr"), (compare_addr, "compare_addr"), (result_addr.cast_const(), "result_addr")]
    {
        non_null(p, what)?;
    }
    // SAFETY: MPI's contract: one element of `datatype` at each address (checked non-null).
    let (origin, compare) = unsafe {
        (
            std::slice::from_raw_parts(origin_addr.cast::<u8>(), b.size),
            std::slice::from_raw_parts(compare_addr.cast::<u8>(), b.size),
        )
    };
    // SAFETY: as above; `result_addr` is writable (it may alias the other two, which are
    // read before it is written).
    unsafe { r.compare_and_swap(origin, compare, result_addr.cast::<u8>(), &layout, target_rank, target_disp) }
}

pub unsafe fn MPI_Rput_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    request_based(win, target_rank, "MPI_Rput", request, || unsafe {
        MPI_Put_c(
            origin_addr,
            origin_count,
            origin_datatype,
            target_rank,
            target_disp,
            target_count,
            target_datatype,
            win,
        )
    })
}

pub unsafe fn MPI_Rget_c(
    origin_addr: *mut c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    request_based(win, target_rank, "MPI_Rget", request, || unsafe {
        MPI_Get_c(
            origin_addr,
            origin_count,
            origin_datatype,
            target_rank,
            target_disp,
            target_count,
            target_datatype,
            win,
        )
    })
}

pub unsafe fn MPI_Raccumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    request_based(win, target_rank, "MPI_Raccumulate", request, || unsafe {
        MPI_Accumulate_c(
            origin_addr,
            origin_count,
            origin_datatype,
            target_rank,
            target_disp,
            target_count,
            target_datatype,
            op,
            win,
        )
    })
}

pub unsafe fn MPI_Rget_accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: MPI_Count,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    request_based(win, target_rank, "MPI_Rget_accumulate", request, || unsafe {
        MPI_Get_accumulate_c(
            origin_addr,
            origin_count,
            origin_datatype,
            result_addr,
            result_count,
            result_datatype,
            target_rank,
            target_disp,
            target_count,
            target_datatype,
            op,
            win,
        )
    })
}

// ----- synchronisation

pub fn MPI_Win_fence(assert: c_int, win: MPI_Win) -> MpiResult {
    let comm = win::with(win, |w| Ok(w.comm))?;
    // The barrier as MPI_Barrier runs it (a schedule and a wait that lets other threads in
    // at MPI_THREAD_MULTIPLE).
    // SAFETY: a barrier has no buffers; Mode::Blocking carries no request pointer.
    win::rma(win)?
        .fence(assert, || super::coll::in_mode(Mode::Blocking, |m| unsafe { super::coll::MPI_Barrier(comm, m) }))
}

pub fn MPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> MpiResult {
    win::rma(win)?.lock(lock_type, rank, assert)
}

pub fn MPI_Win_unlock(rank: c_int, win: MPI_Win) -> MpiResult {
    win::rma(win)?.unlock(rank)
}

pub fn MPI_Win_lock_all(assert: c_int, win: MPI_Win) -> MpiResult {
    win::rma(win)?.lock_all(assert)
}

pub fn MPI_Win_unlock_all(win: MPI_Win) -> MpiResult {
    win::rma(win)?.unlock_all()
}

pub fn MPI_Win_flush(rank: c_int, win: MPI_Win) -> MpiResult {
    win::rma(win)?.flush(Some(rank), "MPI_Win_flush")
}

pub fn MPI_Win_flush_local(rank: c_int, win: MPI_Win) -> MpiResult {
    win::rma(win)?.flush(Some(rank), "MPI_Win_flush_local")
}

pub fn MPI_Win_flush_all(win: MPI_Win) -> MpiResult {
    win::rma(win)?.flush(None, "MPI_Win_flush_all")
}

pub fn MPI_Win_flush_local_all(win: MPI_Win) -> MpiResult {
    win::rma(win)?.flush(None, "MPI_Win_flush_local_all")
}

/// MPI_Win_sync: the unified model needs a memory barrier only.
pub fn MPI_Win_sync(win: MPI_Win) -> MpiResult {
    win::rma(win)?.serve();
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

/// The window ranks of the members of `group` (MPI_ERR_GROUP for a process outside the window).
fn window_ranks(win: MPI_Win, group: MPI_Group) -> MpiResult<Vec<usize>> {
    let g = crate::group::get(group)?;
    let members = win::with(win, |w| Ok(w.members.clone()))?;
    g.members
        .iter()
        .map(|w| {
            members.iter().position(|m| m == w).ok_or_else(|| {
                crate::error::MpiError::new(
                    MPI_ERR_GROUP,
                    format!("process {w} of the group is not a member of the window"),
                )
            })
        })
        .collect()
}

pub fn MPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) -> MpiResult {
    let r = win::rma(win)?;
    r.post(window_ranks(win, group)?, assert)
}

pub fn MPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) -> MpiResult {
    let r = win::rma(win)?;
    r.start(window_ranks(win, group)?, assert)
}

pub fn MPI_Win_complete(win: MPI_Win) -> MpiResult {
    win::rma(win)?.complete()
}

pub fn MPI_Win_wait(win: MPI_Win) -> MpiResult {
    win::rma(win)?.wait(true).map(|_| ())
}

pub unsafe fn MPI_Win_test(win: MPI_Win, flag: *mut c_int) -> MpiResult {
    let r = win::rma(win)?;
    non_null(flag, "flag")?;
    let done = r.wait(false)?;
    // SAFETY: checked non-null; C passes a writable int.
    unsafe { *flag = done as c_int };
    Ok(())
}

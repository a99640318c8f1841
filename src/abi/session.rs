//! MPI-4 session entry points: init/finalize, process-set queries, the session's error
//! handler, and the communicators made from a process-set group
//! (MPI_Group_from_session_pset, MPI_Comm_create_from_group). Behaviour is in
//! `crate::session` and `crate::comm::from_group`.

use super::consts::*;
use super::ctypes::MPI_Session_errhandler_function;
use super::types::*;
use crate::errhandler::{self, HandlerKind};
use crate::error::{MpiError, MpiResult, err};
use crate::{runtime, session};
use std::ffi::{CStr, c_char, c_int};

/// Writes `v` to C's output argument `what`.
///
/// # Safety
/// `p` is null (rejected) or valid for a write of `T`.
unsafe fn put<T>(p: *mut T, v: T, what: &str) -> MpiResult {
    if p.is_null() {
        return err(MPI_ERR_ARG, format!("null pointer in argument {what}"));
    }
    // SAFETY: checked non-null; the caller promises validity.
    unsafe { p.write(v) };
    Ok(())
}

/// Reads C's string argument `what`.
///
/// # Safety
/// `p` is null (rejected) or a NUL-terminated string.
unsafe fn read_str(p: *const c_char, what: &str) -> MpiResult<String> {
    if p.is_null() {
        return err(MPI_ERR_ARG, format!("null pointer in argument {what}"));
    }
    // SAFETY: non-null and NUL-terminated (caller contract).
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// A handler usable on sessions, or MPI_ERRHANDLER_NULL (the default, as for a new session).
fn check_session_handler(eh: MPI_Errhandler) -> MpiResult {
    if eh == MPI_ERRHANDLER_NULL { Ok(()) } else { errhandler::check(eh, HandlerKind::Session) }
}

pub unsafe fn MPI_Session_init(info: MPI_Info, errhandler: MPI_Errhandler, session: *mut MPI_Session) -> MpiResult {
    let hints = crate::info::get_or_empty(info)?;
    check_session_handler(errhandler)?;
    if session.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument session");
    }
    let h = session::init(&hints)?;
    errhandler::on_session_init(h, errhandler);
    // SAFETY: checked non-null.
    unsafe { put(session, h, "session") }
}

pub unsafe fn MPI_Session_finalize(session: *mut MPI_Session) -> MpiResult {
    if session.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument session");
    }
    // SAFETY: checked non-null.
    let h = unsafe { session.read() };
    session::finalize(h)?;
    // SAFETY: checked non-null.
    unsafe { put(session, MPI_SESSION_NULL, "session") }
}

pub unsafe fn MPI_Session_get_num_psets(session: MPI_Session, info: MPI_Info, npset_names: *mut c_int) -> MpiResult {
    session::get(session)?;
    crate::info::get_or_empty(info)?;
    // SAFETY: forwarded output contract.
    unsafe { put(npset_names, session::PSETS.len() as c_int, "npset_names") }
}

pub unsafe fn MPI_Session_get_nth_pset(
    session: MPI_Session,
    info: MPI_Info,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> MpiResult {
    session::get(session)?;
    crate::info::get_or_empty(info)?;
    let Some(name) = usize::try_from(n).ok().and_then(|i| session::PSETS.get(i)) else {
        return err(MPI_ERR_ARG, format!("invalid process set index n={n} (there are {})", session::PSETS.len()));
    };
    if pset_len.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument pset_len");
    }
    // SAFETY: checked non-null.
    let cap = unsafe { pset_len.read() };
    // As in MPICH: a length of 0 asks for the length needed; otherwise the name is copied,
    // truncated to fit.
    if cap == 0 {
        // SAFETY: checked non-null.
        return unsafe { put(pset_len, name.len() as c_int + 1, "pset_len") };
    }
    if cap < 0 {
        return err(MPI_ERR_ARG, format!("invalid pset_len argument ({cap})"));
    }
    if pset_name.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument pset_name");
    }
    // SAFETY: C provides `cap` (> 0) writable bytes at pset_name.
    unsafe { super::errors::write_c_string(name, pset_name, cap as usize) };
    Ok(())
}

pub unsafe fn MPI_Session_get_pset_info(
    session: MPI_Session,
    pset_name: *const c_char,
    info: *mut MPI_Info,
) -> MpiResult {
    // SAFETY: forwarded string contract.
    let name = unsafe { read_str(pset_name, "pset_name")? };
    let pinfo = session::pset_info(session, &name)?;
    if info.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument info");
    }
    let h = crate::info::insert(pinfo)?;
    // SAFETY: checked non-null.
    unsafe { put(info, h, "info") }
}

pub unsafe fn MPI_Session_get_info(session: MPI_Session, info_used: *mut MPI_Info) -> MpiResult {
    let s = session::get(session)?;
    if info_used.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument info_used");
    }
    let h = crate::info::insert(s.info())?;
    // SAFETY: checked non-null.
    unsafe { put(info_used, h, "info_used") }
}

pub unsafe fn MPI_Session_create_errhandler(
    session_errhandler_fn: MPI_Session_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> MpiResult {
    if errhandler.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument errhandler");
    }
    let Some(f) = session_errhandler_fn else {
        return err(MPI_ERR_ARG, "null function pointer in argument session_errhandler_fn");
    };
    // MPI_Session is c_int, so `void (MPI_Session *, int *, ...)` is the registry's shape.
    let eh = errhandler::create(HandlerKind::Session, f)?;
    // SAFETY: checked non-null.
    unsafe { put(errhandler, eh, "errhandler") }
}

pub fn MPI_Session_set_errhandler(session: MPI_Session, errhandler: MPI_Errhandler) -> MpiResult {
    session::get(session)?;
    errhandler::check(errhandler, HandlerKind::Session)?;
    errhandler::set_session_errhandler(session, errhandler);
    Ok(())
}

pub unsafe fn MPI_Session_get_errhandler(session: MPI_Session, errhandler: *mut MPI_Errhandler) -> MpiResult {
    session::get(session)?;
    if errhandler.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument errhandler");
    }
    // SAFETY: checked non-null.
    unsafe { put(errhandler, errhandler::get_session_errhandler(session), "errhandler") }
}

pub fn MPI_Session_call_errhandler(session: MPI_Session, errorcode: c_int) -> MpiResult {
    session::get(session)?;
    let mut text = String::new();
    errhandler::error_string(errorcode, &mut text);
    errhandler::raise_on_session("MPI_Session_call_errhandler", session, MpiError::supplied(errorcode, text));
    Ok(())
}

pub unsafe fn MPI_Group_from_session_pset(
    session: MPI_Session,
    pset_name: *const c_char,
    newgroup: *mut MPI_Group,
) -> MpiResult {
    // SAFETY: forwarded string contract.
    let name = unsafe { read_str(pset_name, "pset_name")? };
    let members = session::pset_members(session, &name)?;
    if newgroup.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument newgroup");
    }
    let h = crate::group::insert(crate::group::Group::new(members))?;
    // SAFETY: checked non-null.
    unsafe { put(newgroup, h, "newgroup") }
}

pub unsafe fn MPI_Comm_create_from_group(
    group: MPI_Group,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newcomm: *mut MPI_Comm,
) -> MpiResult {
    let g = crate::group::get(group)?;
    if g.members.is_empty() {
        return err(MPI_ERR_GROUP, "the group is empty (MPI_GROUP_EMPTY)");
    }
    // SAFETY: forwarded string contract.
    let tag = unsafe { read_str(stringtag, "stringtag")? };
    let hints = crate::info::get_or_empty(info)?;
    if errhandler != MPI_ERRHANDLER_NULL {
        errhandler::check(errhandler, HandlerKind::Comm)?;
    }
    if newcomm.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument newcomm");
    }
    let h = crate::comm::construct(|rt| rt.comms.create_from_group(&g.members, &tag))?
        .expect("the caller is a member of the group");
    runtime::with(|rt| {
        rt.comms.get_mut(h)?.hints = hints;
        Ok(())
    })?;
    if errhandler != MPI_ERRHANDLER_NULL {
        errhandler::set_comm_errhandler(h, errhandler);
    }
    // SAFETY: checked non-null.
    unsafe { put(newcomm, h, "newcomm") }
}

//! Generalized requests (MPI_Grequest_start / MPI_Grequest_complete): requests whose work the
//! program does itself. The engine keeps them like any request; this module calls the
//! program's callbacks: query then free when Wait/Test collect one, free alone when
//! MPI_Request_free releases it (at once, even while it runs, as MPICH does), cancel on
//! MPI_Cancel. The callbacks run inside the library (like user reduction functions), so they
//! may use the status and datatype functions but not communication.

use super::consts::*;
use super::ctypes::*;
use super::p2p::{request_handle, request_id, status_bytes};
use crate::error::{MpiError, MpiResult, err};
use crate::p2p::Engine;
use crate::p2p::request::{Generalized, Op, Request, Status};
use crate::runtime;
use std::ffi::{c_int, c_void};

pub unsafe fn MPI_Grequest_start(
    query_fn: MPI_Grequest_query_function,
    free_fn: MPI_Grequest_free_function,
    cancel_fn: MPI_Grequest_cancel_function,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    if query_fn.is_none() || free_fn.is_none() || cancel_fn.is_none() {
        return err(MPI_ERR_ARG, "invalid callback argument (NULL query_fn, free_fn or cancel_fn)");
    }
    let g = Generalized {
        query: query_fn,
        free: free_fn,
        cancel: cancel_fn,
        extra_state: extra_state as usize,
        fortran: false,
    };
    let id = runtime::with(|rt| Ok(rt.engine.reqs.insert(Request::started(Op::Generalized(g), MPI_COMM_WORLD))))?;
    // SAFETY: checked non-null.
    unsafe { *request = request_handle(id) };
    Ok(())
}

pub unsafe fn MPI_Grequest_complete(request: MPI_Request) -> MpiResult {
    runtime::with(|rt| {
        let id = request_id(&rt.engine, request)?;
        let r = rt.engine.reqs.get_mut(id).expect("request_id checked it");
        let Op::Generalized(_) = r.op else {
            return err(MPI_ERR_REQUEST, format!("request 0x{:08x} is not a generalized request", request as u32));
        };
        if r.complete {
            return err(MPI_ERR_REQUEST, "MPI_Grequest_complete: the generalized request is already complete");
        }
        r.complete = true;
        r.status = Status::empty();
        // Released by MPI_Request_free while still running (its free_fn ran then): it goes now.
        if r.freed {
            rt.engine.reqs.remove(id);
        }
        Ok(())
    })
}

/// The generalized request behind `id`, if it is one.
pub(super) fn generalized(engine: &Engine, id: u32) -> Option<Generalized> {
    match engine.reqs.get(id)?.op {
        Op::Generalized(g) => Some(g),
        _ => None,
    }
}

/// `void MPII_Grequest_set_lang_f77(MPI_Request)`: MPICH's hook through which its Fortran
/// binding says that the callbacks of a request it just started are Fortran subroutines
/// (oxmpi's own MPI_GREQUEST_START calls it too). Not a generalized request: ignored.
#[unsafe(no_mangle)]
pub extern "C" fn MPII_Grequest_set_lang_f77(request: MPI_Request) {
    let _ = runtime::with(|rt| {
        let id = request_id(&rt.engine, request)?;
        if let Some(Request { op: Op::Generalized(g), .. }) = rt.engine.reqs.get_mut(id) {
            g.fortran = true;
        }
        Ok(())
    });
}

/// `SUBROUTINE QUERY_FN(EXTRA_STATE, STATUS, IERROR)`.
type FortranQueryFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Fint, *mut MPI_Fint);
/// `SUBROUTINE FREE_FN(EXTRA_STATE, IERROR)`.
type FortranFreeFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Fint);
/// `SUBROUTINE CANCEL_FN(EXTRA_STATE, COMPLETE, IERROR)`, COMPLETE a LOGICAL.
type FortranCancelFn = unsafe extern "C" fn(*mut c_void, *mut MPI_Fint, *mut MPI_Fint);

/// A callback registered as a C function pointer, seen as the Fortran subroutine it is.
///
/// # Safety
/// `f` is the address of a Fortran subroutine of form `F` (a function pointer type).
unsafe fn as_fortran<F: Copy>(f: impl Copy) -> F {
    assert_eq!(size_of::<F>(), size_of_val(&f));
    // SAFETY: both are function pointers (same size, checked); the caller vouches for the form.
    unsafe { std::mem::transmute_copy(&f) }
}

/// The status the program's query_fn reports; its return code becomes the status's error.
pub(super) fn query_status(g: &Generalized) -> Status {
    let mut st = MPI_Status {
        count_lo: 0,
        count_hi_and_cancelled: 0,
        MPI_SOURCE: MPI_UNDEFINED,
        MPI_TAG: MPI_UNDEFINED,
        MPI_ERROR: MPI_SUCCESS,
    };
    let query = g.query.expect("checked non-null at MPI_Grequest_start");
    let extra_state = g.extra_state as *mut c_void;
    let code = if g.fortran {
        let mut ierror: MPI_Fint = MPI_SUCCESS;
        // SAFETY: a Fortran subroutine the program registered for this request (MPICH passes
        // the address of its EXTRA_STATE variable back); an INTEGER(MPI_STATUS_SIZE) status has
        // MPI_Status's layout.
        unsafe {
            as_fortran::<FortranQueryFn>(query)(extra_state, (&raw mut st).cast(), &mut ierror);
        }
        ierror
    } else {
        // SAFETY: a function the program registered for this request, called with its own
        // state and a status that lives across the call.
        unsafe { query(extra_state, &mut st) }
    };
    let (bytes, cancelled) = status_bytes(&st);
    Status { source: st.MPI_SOURCE, tag: st.MPI_TAG, bytes: bytes as usize, cancelled, error: code }
}

/// Calls the program's free_fn; its error code is the caller's result.
pub(super) fn call_free(g: &Generalized) -> MpiResult {
    let free = g.free.expect("checked non-null at MPI_Grequest_start");
    let extra_state = g.extra_state as *mut c_void;
    let code = if g.fortran {
        let mut ierror: MPI_Fint = MPI_SUCCESS;
        // SAFETY: as in `query_status`.
        unsafe { as_fortran::<FortranFreeFn>(free)(extra_state, &mut ierror) };
        ierror
    } else {
        // SAFETY: as in `query_status`.
        unsafe { free(extra_state) }
    };
    if code == MPI_SUCCESS { Ok(()) } else { Err(MpiError::supplied(code, "the generalized request's free_fn failed")) }
}

/// Calls the program's cancel_fn with whether the request is complete already.
pub(super) fn call_cancel(g: &Generalized, complete: bool) -> MpiResult {
    let cancel = g.cancel.expect("checked non-null at MPI_Grequest_start");
    let extra_state = g.extra_state as *mut c_void;
    let code = if g.fortran {
        let (mut complete, mut ierror): (MPI_Fint, MPI_Fint) = (complete.into(), MPI_SUCCESS);
        // SAFETY: as in `query_status`; COMPLETE is a LOGICAL (gfortran: 1 or 0).
        unsafe { as_fortran::<FortranCancelFn>(cancel)(extra_state, &mut complete, &mut ierror) };
        ierror
    } else {
        // SAFETY: as in `query_status`.
        unsafe { cancel(extra_state, complete as c_int) }
    };
    if code == MPI_SUCCESS {
        Ok(())
    } else {
        Err(MpiError::supplied(code, "the generalized request's cancel_fn failed"))
    }
}

//! Generalized requests (MPI_Grequest_start / MPI_Grequest_complete): requests whose work the
//! program does itself. The engine keeps them like any request; this module calls the
//! program's callbacks: query then free when Wait/Test collect one, free alone when
//! MPI_Request_free releases it (at once, even while it runs, as MPICH does), cancel on
//! MPI_Cancel. The callbacks run inside the library (like user reduction functions), so they
//! may use the status and datatype functions but not communication.

use super::consts::*;
use super::ctypes::*;
use super::p2p::{request_handle, request_id, status_bytes};
use crate::error::{MpiResult, err};
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
    let g = Generalized { query: query_fn, free: free_fn, cancel: cancel_fn, extra_state: extra_state as usize };
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
    // SAFETY: a function the program registered for this request, called with its own state
    // and a status that lives across the call.
    let code = unsafe { query(g.extra_state as *mut c_void, &mut st) };
    let (bytes, cancelled) = status_bytes(&st);
    Status { source: st.MPI_SOURCE, tag: st.MPI_TAG, bytes: bytes as usize, cancelled, error: code }
}

/// Calls the program's free_fn; its error code is the caller's result.
pub(super) fn call_free(g: &Generalized) -> MpiResult {
    let free = g.free.expect("checked non-null at MPI_Grequest_start");
    // SAFETY: as in `query_status`.
    let code = unsafe { free(g.extra_state as *mut c_void) };
    if code == MPI_SUCCESS { Ok(()) } else { err(code, "the generalized request's free_fn failed") }
}

/// Calls the program's cancel_fn with whether the request is complete already.
pub(super) fn call_cancel(g: &Generalized, complete: bool) -> MpiResult {
    let cancel = g.cancel.expect("checked non-null at MPI_Grequest_start");
    // SAFETY: as in `query_status`.
    let code = unsafe { cancel(g.extra_state as *mut c_void, complete as c_int) };
    if code == MPI_SUCCESS { Ok(()) } else { err(code, "the generalized request's cancel_fn failed") }
}

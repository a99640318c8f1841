//! What every generated entry point does around its implementation: stop panics at the C
//! boundary and turn errors into codes through the error handler.

use crate::abi::consts::{MPI_ERR_INTERN, MPI_SUCCESS};
use crate::abi::types::{MPI_Comm, MPI_Errhandler};
use crate::errhandler;
use crate::error::{MpiError, MpiResult};
use std::any::Any;
use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The text of a panic payload.
fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

fn internal(payload: &(dyn Any + Send)) -> MpiError {
    MpiError::new(MPI_ERR_INTERN, format!("internal error in oxmpi: {}", panic_text(payload)))
}

/// Runs the implementation of an int-returning MPI function `name`: `MPI_SUCCESS` on success,
/// else the error goes through the handler of `comm` (of MPI_COMM_WORLD when `None`).
pub fn call(name: &'static str, comm: Option<MPI_Comm>, f: impl FnOnce() -> MpiResult) -> c_int {
    // The closure holds only C arguments (plain values and raw pointers); after a panic nothing
    // observes a half-updated value of it, so asserting unwind safety is sound.
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => errhandler::raise(name, comm, e),
        Err(payload) => errhandler::raise(name, comm, internal(payload.as_ref())),
    }
}

/// As `call`, for a function whose errors go to the handler of `session`.
pub fn call_on_session(name: &'static str, session: c_int, f: impl FnOnce() -> MpiResult) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => errhandler::raise_on_session(name, session, e),
        Err(payload) => errhandler::raise_on_session(name, session, internal(payload.as_ref())),
    }
}

/// As `call`, for a function whose errors go to the handler of window `win`.
pub fn call_on_win(name: &'static str, win: c_int, f: impl FnOnce() -> MpiResult) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => errhandler::raise_on_win(name, win, e),
        Err(payload) => errhandler::raise_on_win(name, win, internal(payload.as_ref())),
    }
}

/// As `call`, for a function whose errors go to the handler of file `file` (the default
/// file handler for MPI_FILE_NULL and for MPI_File_open / MPI_File_delete).
pub fn call_on_file<F>(name: &'static str, file: *mut F, f: impl FnOnce() -> MpiResult) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => errhandler::raise_on_file(name, file.cast(), e),
        Err(payload) => errhandler::raise_on_file(name, file.cast(), internal(payload.as_ref())),
    }
}

/// As `call`, for a function whose errors go to the handler `eh` it takes as an argument; a
/// user handler is passed `null_object`.
pub fn call_with_handler(
    name: &'static str,
    eh: MPI_Errhandler,
    null_object: c_int,
    f: impl FnOnce() -> MpiResult,
) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => errhandler::raise_with_handler(name, eh, null_object, e),
        Err(payload) => errhandler::raise_with_handler(name, eh, null_object, internal(payload.as_ref())),
    }
}

/// As `call`, for a function of the tools interface (`MPI_T_*`): MPI-4.1 15.3.9 has these
/// return their error class directly, without invoking any error handler (a tool may run
/// before MPI_Init or after MPI_Finalize, when no handler exists). A panic returns
/// MPI_T_ERR_INVALID; the message is logged since no error string can carry it.
pub fn call_tool(name: &'static str, f: impl FnOnce() -> MpiResult) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => MPI_SUCCESS,
        Ok(Err(e)) => {
            log::debug!("{name}: {}", e.msg);
            e.code
        }
        Err(payload) => {
            log::error!("{name}: {}", internal(payload.as_ref()).msg);
            crate::abi::consts::MPI_T_ERR_INVALID
        }
    }
}

/// A value a C function can return when it has nothing better: 0, 0.0 or a null pointer.
pub trait CZero {
    fn c_zero() -> Self;
}
impl CZero for c_int {
    fn c_zero() -> Self {
        0
    }
}
impl CZero for std::ffi::c_long {
    fn c_zero() -> Self {
        0
    }
}
impl CZero for f64 {
    fn c_zero() -> Self {
        0.0
    }
}
impl<T> CZero for *mut T {
    fn c_zero() -> Self {
        std::ptr::null_mut()
    }
}

/// Runs the implementation of a function that returns a plain C value (`MPI_Wtime`,
/// `MPI_Aint_add`, ...). A panic is reported as MPI_ERR_INTERN through MPI_COMM_WORLD's
/// handler, and the function then returns zero.
pub fn guard<T: CZero>(name: &'static str, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(payload) => {
            errhandler::raise(name, None, internal(payload.as_ref()));
            T::c_zero()
        }
    }
}

/// The entry of an int-returning function that is not implemented yet.
pub fn unsupported(name: &'static str, comm: Option<MPI_Comm>) -> c_int {
    errhandler::raise(name, comm, MpiError::unsupported(name))
}

/// As `unsupported`, for a function of the tools interface: the class, no handler.
pub fn unsupported_tool(name: &'static str) -> c_int {
    log::debug!("{name} is not implemented yet in oxmpi");
    crate::abi::consts::MPI_T_ERR_NOT_SUPPORTED
}

/// As `unsupported`, for a function on window `win`.
pub fn unsupported_on_win(name: &'static str, win: c_int) -> c_int {
    errhandler::raise_on_win(name, win, MpiError::unsupported(name))
}

/// As `unsupported`, for a function on file `file`.
pub fn unsupported_on_file<F>(name: &'static str, file: *mut F) -> c_int {
    errhandler::raise_on_file(name, file.cast(), MpiError::unsupported(name))
}

/// The error handler of `MPI_Win_free` and similar functions that take the object by
/// address: the handle stored there, MPI_WIN_NULL for a null pointer.
///
/// # Safety
/// `p` is null or valid for a read.
pub unsafe fn handle_at(p: *const c_int, null: c_int) -> c_int {
    // SAFETY: the caller's contract.
    if p.is_null() { null } else { unsafe { p.read() } }
}

/// The entry of a function returning a plain value that is not implemented yet: it cannot
/// return an error code, so it logs and returns zero (a null handle or pointer).
pub fn unsupported_value<T: CZero>(name: &'static str) -> T {
    log::error!("{name} is not implemented yet in oxmpi; returning 0");
    T::c_zero()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::consts::{MPI_COMM_SELF, MPI_ERR_COUNT, MPI_ERRORS_RETURN};

    #[test]
    fn errors_and_panics_become_codes() {
        let _serial = errhandler::TEST_SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        errhandler::set_comm_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        assert_eq!(call("MPI_Test_ok", Some(MPI_COMM_SELF), || Ok(())), MPI_SUCCESS);
        let code = call("MPI_Test_err", Some(MPI_COMM_SELF), || Err(MpiError::new(MPI_ERR_COUNT, "bad count")));
        assert_eq!(errhandler::class_of(code), MPI_ERR_COUNT);
        let code = call("MPI_Test_panic", Some(MPI_COMM_SELF), || panic!("boom"));
        assert_eq!(errhandler::class_of(code), MPI_ERR_INTERN);
        let mut s = String::new();
        errhandler::error_string(code, &mut s);
        assert!(s.contains("MPI_Test_panic") && s.contains("boom"), "{s}");
        errhandler::on_comm_free(MPI_COMM_SELF);
        assert_eq!(guard("MPI_Test_value", || 2.5), 2.5);
        assert_eq!(unsupported_value::<c_int>("MPI_Test_value"), 0);
    }
}

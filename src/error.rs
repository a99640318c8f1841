//! The error value every core operation returns; mapped to an MPI error class at the ABI edge.

use crate::abi::consts;
use std::ffi::c_int;

/// An MPI error: its class (or a user-defined code) and a message that names the bad argument
/// (`ErrorDetail`, read through the error). Boxed: an `MpiResult<()>` is then one pointer,
/// returned in a register by every function on the per-call paths, where the error and its
/// message inline would be 32 bytes written to and copied through memory at each return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiError(Box<ErrorDetail>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorDetail {
    /// MPI error class or code, as returned to C.
    pub code: c_int,
    /// Human-readable detail, e.g. `invalid count argument (count=-1)`.
    pub msg: String,
    /// The code came from the program (`MPI_*_call_errhandler`, a code a callback returned):
    /// it reaches the handler and the caller unchanged instead of as a new code of its class.
    pub supplied: bool,
    /// The communicator whose error handler applies when it is not the call's own: a
    /// request's, for an error found when a completion call (MPI_Wait, ...) collects it; for
    /// a file's request, the file handle's value (`errhandler::raise` tells them apart).
    pub comm: Option<c_int>,
}

impl std::ops::Deref for MpiError {
    type Target = ErrorDetail;
    fn deref(&self) -> &ErrorDetail {
        &self.0
    }
}

impl MpiError {
    #[cold]
    pub fn new(code: c_int, msg: impl Into<String>) -> Self {
        MpiError(Box::new(ErrorDetail { code, msg: msg.into(), supplied: false, comm: None }))
    }

    /// An error whose code the program supplied (see `ErrorDetail::supplied`).
    #[cold]
    pub fn supplied(code: c_int, msg: impl Into<String>) -> Self {
        MpiError(Box::new(ErrorDetail { code, msg: msg.into(), supplied: true, comm: None }))
    }

    /// The error, raised on communicator `comm` (when Some) rather than the call's own.
    pub fn raised_on(mut self, comm: Option<c_int>) -> Self {
        if comm.is_some() {
            self.0.comm = comm;
        }
        self
    }

    /// A function that is exported but not implemented yet.
    pub fn unsupported(what: &str) -> Self {
        MpiError::new(consts::MPI_ERR_UNSUPPORTED_OPERATION, format!("{what} is not implemented yet in oxmpi"))
    }
}

pub type MpiResult<T = ()> = Result<T, MpiError>;

/// Shorthand for returning an error: `return err(MPI_ERR_COUNT, "...")`.
pub fn err<T>(code: c_int, msg: impl Into<String>) -> MpiResult<T> {
    Err(MpiError::new(code, msg))
}

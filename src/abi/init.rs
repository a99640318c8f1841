//! Environment entry points: initialisation, finalisation, thread level, abort.

use super::consts::*;
use crate::error::{MpiResult, err};
use crate::runtime;
use std::ffi::{c_char, c_int};

pub unsafe fn MPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> MpiResult {
    runtime::init(MPI_THREAD_SINGLE).map(|_| ())
}

pub unsafe fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> MpiResult {
    if !(MPI_THREAD_SINGLE..=MPI_THREAD_MULTIPLE).contains(&required) {
        return err(MPI_ERR_ARG, format!("invalid thread level (required={required})"));
    }
    if provided.is_null() {
        return err(MPI_ERR_ARG, "invalid provided pointer (NULL)");
    }
    let level = runtime::init(required)?;
    // SAFETY: checked non-null.
    unsafe { *provided = level };
    Ok(())
}

pub unsafe fn MPI_Finalize() -> MpiResult {
    super::comm::delete_attributes_at_finalize()?;
    runtime::finalize()
}

pub unsafe fn MPI_Initialized(flag: *mut c_int) -> MpiResult {
    if flag.is_null() {
        return err(MPI_ERR_ARG, "invalid flag pointer (NULL)");
    }
    // SAFETY: checked non-null.
    unsafe { *flag = runtime::initialized() as c_int };
    Ok(())
}

pub unsafe fn MPI_Finalized(flag: *mut c_int) -> MpiResult {
    if flag.is_null() {
        return err(MPI_ERR_ARG, "invalid flag pointer (NULL)");
    }
    // SAFETY: checked non-null.
    unsafe { *flag = runtime::finalized() as c_int };
    Ok(())
}

pub unsafe fn MPI_Query_thread(provided: *mut c_int) -> MpiResult {
    if provided.is_null() {
        return err(MPI_ERR_ARG, "invalid provided pointer (NULL)");
    }
    let level = runtime::with(|rt| Ok(rt.thread_level))?;
    // SAFETY: checked non-null.
    unsafe { *provided = level };
    Ok(())
}

pub unsafe fn MPI_Is_thread_main(flag: *mut c_int) -> MpiResult {
    if flag.is_null() {
        return err(MPI_ERR_ARG, "invalid flag pointer (NULL)");
    }
    let main = runtime::with(|rt| Ok(rt.main_thread == std::thread::current().id()))?;
    // SAFETY: checked non-null.
    unsafe { *flag = main as c_int };
    Ok(())
}

pub unsafe fn MPI_Abort(comm: super::types::MPI_Comm, errorcode: c_int) -> MpiResult {
    runtime::abort_job(
        errorcode,
        &format!("{}: MPI_Abort(comm=0x{:08x}, errorcode={errorcode}) called", crate::errhandler::who(), comm as u32),
    )
}

//! `MPI_Alloc_mem` / `MPI_Free_mem`: the memory comes from `rma::alloc_mem` (shared pages
//! for windows over it, the C heap for small requests).

use crate::abi::consts::*;
use crate::abi::types::{MPI_Aint, MPI_Info};
use crate::error::{MpiResult, err};
use std::ffi::c_void;

/// # Safety
/// `baseptr` is null or points at a writable `void *` (C's `void *baseptr` is really a
/// `void **`, as the standard says).
pub unsafe fn MPI_Alloc_mem(size: MPI_Aint, info: MPI_Info, baseptr: *mut c_void) -> MpiResult {
    if size < 0 {
        return err(MPI_ERR_ARG, format!("invalid size argument (size={size})"));
    }
    if baseptr.is_null() {
        return err(MPI_ERR_ARG, "null pointer in argument baseptr");
    }
    // The hints are checked (a freed or bogus handle is an error) but none is understood.
    crate::info::get_or_empty(info)?;
    let Some(mem) = crate::rma::alloc_mem::alloc(size as usize) else {
        return err(MPI_ERR_NO_MEM, format!("MPI_Alloc_mem: cannot allocate {size} bytes"));
    };
    // SAFETY: baseptr is non-null and, per the standard, the address of a `void *`.
    unsafe { baseptr.cast::<*mut c_void>().write(mem as *mut c_void) };
    Ok(())
}

/// # Safety
/// `base` is NULL or a pointer returned by `MPI_Alloc_mem` and not freed since.
pub unsafe fn MPI_Free_mem(base: *mut c_void) -> MpiResult {
    // SAFETY: the caller's promise.
    unsafe { crate::rma::alloc_mem::free(base as usize) };
    Ok(())
}

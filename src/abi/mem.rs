//! `MPI_Alloc_mem` / `MPI_Free_mem`. oxmpi has no memory that is better for communication
//! (shared-memory windows aside, which are not implemented), so this is the C heap, as in
//! MPICH's ch4/shm build without special memory.

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
    // malloc(0) may return NULL; one byte gives every call a distinct pointer to free.
    // SAFETY: malloc has no preconditions; the result is checked below.
    let mem = unsafe { libc::malloc((size as usize).max(1)) };
    if mem.is_null() {
        return err(MPI_ERR_NO_MEM, format!("MPI_Alloc_mem: cannot allocate {size} bytes"));
    }
    // SAFETY: baseptr is non-null and, per the standard, the address of a `void *`.
    unsafe { baseptr.cast::<*mut c_void>().write(mem) };
    Ok(())
}

/// # Safety
/// `base` is NULL or a pointer returned by `MPI_Alloc_mem` and not freed since.
pub unsafe fn MPI_Free_mem(base: *mut c_void) -> MpiResult {
    // SAFETY: the caller's promise; free(NULL) does nothing.
    unsafe { libc::free(base) };
    Ok(())
}

//! Communicator entry points of this milestone: rank, size, dup, free, compare, names.

use super::consts::*;
use super::types::*;
use crate::error::{MpiResult, err};
use crate::runtime;
use std::ffi::{CStr, c_char, c_int};

pub unsafe fn MPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> MpiResult {
    if rank.is_null() {
        return err(MPI_ERR_ARG, "invalid rank pointer (NULL)");
    }
    let r = runtime::with(|rt| Ok(rt.comms.get(comm)?.rank))?;
    // SAFETY: checked non-null.
    unsafe { *rank = r as c_int };
    Ok(())
}

pub unsafe fn MPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> MpiResult {
    if size.is_null() {
        return err(MPI_ERR_ARG, "invalid size pointer (NULL)");
    }
    let n = runtime::with(|rt| Ok(rt.comms.get(comm)?.size()))?;
    // SAFETY: checked non-null.
    unsafe { *size = n as c_int };
    Ok(())
}

pub unsafe fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> MpiResult {
    if newcomm.is_null() {
        return err(MPI_ERR_ARG, "invalid newcomm pointer (NULL)");
    }
    let h = runtime::with(|rt| rt.comms.dup(&mut rt.engine, comm))?;
    crate::errhandler::on_comm_dup(comm, h);
    // SAFETY: checked non-null.
    unsafe { *newcomm = h };
    Ok(())
}

pub unsafe fn MPI_Comm_free(comm: *mut MPI_Comm) -> MpiResult {
    if comm.is_null() {
        return err(MPI_ERR_ARG, "invalid communicator pointer (NULL)");
    }
    // SAFETY: checked non-null.
    let h = unsafe { *comm };
    runtime::with(|rt| rt.comms.free(h))?;
    crate::errhandler::on_comm_free(h);
    // SAFETY: checked non-null.
    unsafe { *comm = MPI_COMM_NULL };
    Ok(())
}

pub unsafe fn MPI_Comm_compare(comm1: MPI_Comm, comm2: MPI_Comm, result: *mut c_int) -> MpiResult {
    if result.is_null() {
        return err(MPI_ERR_ARG, "invalid result pointer (NULL)");
    }
    let r = runtime::with(|rt| rt.comms.compare(comm1, comm2))?;
    // SAFETY: checked non-null.
    unsafe { *result = r };
    Ok(())
}

pub unsafe fn MPI_Comm_set_name(comm: MPI_Comm, comm_name: *const c_char) -> MpiResult {
    if comm_name.is_null() {
        return err(MPI_ERR_ARG, "invalid name pointer (NULL)");
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(comm_name) }.to_string_lossy();
    let max = MPI_MAX_OBJECT_NAME as usize - 1;
    let name: String = name.chars().take(max).collect();
    runtime::with(|rt| {
        rt.comms.get_mut(comm)?.name = name;
        Ok(())
    })
}

pub unsafe fn MPI_Comm_get_name(comm: MPI_Comm, comm_name: *mut c_char, resultlen: *mut c_int) -> MpiResult {
    if comm_name.is_null() || resultlen.is_null() {
        return err(MPI_ERR_ARG, "invalid name or resultlen pointer (NULL)");
    }
    let name = runtime::with(|rt| Ok(rt.comms.get(comm)?.name.clone()))?;
    // SAFETY: MPI requires room for MPI_MAX_OBJECT_NAME characters; names are shorter.
    unsafe { super::write_c_string(&name, comm_name, MPI_MAX_OBJECT_NAME as usize, resultlen) };
    Ok(())
}

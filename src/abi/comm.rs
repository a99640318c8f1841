//! Communicator entry points of this milestone: rank, size, dup, free, compare, names.

use super::consts::*;
use super::types::*;
use crate::error::{MpiResult, err};
use crate::runtime;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

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

/// Values of the predefined communicator attributes. MPI hands out pointers to them, so they
/// live in statics; they are set when MPI is initialised.
static ATTR_TAG_UB: AtomicI32 = AtomicI32::new(super::p2p::TAG_UB);
static ATTR_HOST: AtomicI32 = AtomicI32::new(MPI_PROC_NULL);
static ATTR_IO: AtomicI32 = AtomicI32::new(MPI_ANY_SOURCE);
static ATTR_WTIME_IS_GLOBAL: AtomicI32 = AtomicI32::new(0);
static ATTR_UNIVERSE_SIZE: AtomicI32 = AtomicI32::new(1);
static ATTR_APPNUM: AtomicI32 = AtomicI32::new(0);
static ATTR_LASTUSEDCODE: AtomicI32 = AtomicI32::new(0);

/// The value cell of a predefined communicator keyval; the Fortran form of a keyval is the C
/// value + 1 and asks for the integer itself rather than a pointer.
fn predefined_attr(keyval: c_int) -> Option<(&'static AtomicI32, bool)> {
    let by_value = keyval & 1 == 0;
    let c_keyval = if by_value { keyval - 1 } else { keyval };
    let cell = match c_keyval {
        MPI_TAG_UB => &ATTR_TAG_UB,
        MPI_HOST => &ATTR_HOST,
        MPI_IO => &ATTR_IO,
        MPI_WTIME_IS_GLOBAL => &ATTR_WTIME_IS_GLOBAL,
        MPI_UNIVERSE_SIZE => &ATTR_UNIVERSE_SIZE,
        MPI_APPNUM => &ATTR_APPNUM,
        MPI_LASTUSEDCODE => &ATTR_LASTUSEDCODE,
        _ => return None,
    };
    Some((cell, by_value))
}

pub unsafe fn MPI_Comm_get_attr(
    comm: MPI_Comm,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> MpiResult {
    if attribute_val.is_null() || flag.is_null() {
        return err(MPI_ERR_ARG, "invalid attribute_val or flag pointer (NULL)");
    }
    let (size, appnum) = runtime::with(|rt| {
        rt.comms.get(comm)?;
        Ok((rt.comms.get(MPI_COMM_WORLD)?.size(), rt.pmi.appnum()))
    })?;
    let Some((cell, by_value)) = predefined_attr(comm_keyval) else {
        return err(
            MPI_ERR_KEYVAL,
            format!("invalid keyval (0x{:08x}): user keyvals are not implemented yet in oxmpi", comm_keyval as u32),
        );
    };
    ATTR_UNIVERSE_SIZE.store(size as c_int, Ordering::Relaxed);
    ATTR_APPNUM.store(appnum, Ordering::Relaxed);
    ATTR_LASTUSEDCODE.store(crate::errhandler::last_used_code(), Ordering::Relaxed);
    // SAFETY: attribute_val points at a `void *` (C) or an address-sized integer (Fortran
    // form), both 8 bytes; flag checked non-null.
    unsafe {
        if by_value {
            *(attribute_val as *mut MPI_Aint) = cell.load(Ordering::Relaxed) as MPI_Aint;
        } else {
            *(attribute_val as *mut *const AtomicI32) = cell;
        }
        *flag = 1;
    }
    Ok(())
}

pub unsafe fn MPI_Attr_get(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> MpiResult {
    unsafe { MPI_Comm_get_attr(comm, keyval, attribute_val, flag) }
}

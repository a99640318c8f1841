//! Datatype queries on the predefined types (the constructors come with the datatype engine).

use super::consts::*;
use super::types::*;
use crate::datatype;
use crate::error::{MpiResult, err};
use std::ffi::c_int;

/// # Safety
/// Each pointer is null or writable.
unsafe fn put<T>(p: *mut T, v: T) -> MpiResult {
    if p.is_null() {
        return err(MPI_ERR_ARG, "invalid output pointer (NULL)");
    }
    // SAFETY: checked non-null; caller's output.
    unsafe { *p = v };
    Ok(())
}

pub unsafe fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> MpiResult {
    let s = datatype::layout(datatype)?.size;
    unsafe { put(size, s as c_int) }
}
pub unsafe fn MPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) -> MpiResult {
    let s = datatype::layout(datatype)?.size;
    unsafe { put(size, s as MPI_Count) }
}
pub unsafe fn MPI_Type_size_c(datatype: MPI_Datatype, size: *mut MPI_Count) -> MpiResult {
    unsafe { MPI_Type_size_x(datatype, size) }
}

unsafe fn extent<T: From<i32> + TryFrom<usize>>(
    datatype: MPI_Datatype,
    lb: *mut T,
    ext: *mut T,
    true_extent: bool,
) -> MpiResult {
    let l = datatype::layout(datatype)?;
    let e = if true_extent { l.span(1) } else { l.extent };
    let e = T::try_from(e).map_err(|_| crate::error::MpiError::new(MPI_ERR_TYPE, "extent too large"))?;
    unsafe {
        put(lb, T::from(0))?;
        put(ext, e)
    }
}

pub unsafe fn MPI_Type_get_extent(datatype: MPI_Datatype, lb: *mut MPI_Aint, extent: *mut MPI_Aint) -> MpiResult {
    unsafe { self::extent(datatype, lb, extent, false) }
}
pub unsafe fn MPI_Type_get_extent_x(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) -> MpiResult {
    unsafe { self::extent(datatype, lb, extent, false) }
}
pub unsafe fn MPI_Type_get_extent_c(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) -> MpiResult {
    unsafe { self::extent(datatype, lb, extent, false) }
}
pub unsafe fn MPI_Type_get_true_extent(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Aint,
    true_extent: *mut MPI_Aint,
) -> MpiResult {
    unsafe { extent(datatype, true_lb, true_extent, true) }
}
pub unsafe fn MPI_Type_get_true_extent_x(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Count,
    true_extent: *mut MPI_Count,
) -> MpiResult {
    unsafe { extent(datatype, true_lb, true_extent, true) }
}
pub unsafe fn MPI_Type_get_true_extent_c(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Count,
    true_extent: *mut MPI_Count,
) -> MpiResult {
    unsafe { extent(datatype, true_lb, true_extent, true) }
}

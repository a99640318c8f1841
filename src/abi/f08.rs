//! Runtime of the `mpi_f08` binding (Fortran 2008): choice buffers.
//!
//! The `mpi_f08` procedures (generated Fortran, `include/mpi_f08.f90`, compiled with gfortran at
//! install time) receive a choice buffer as `TYPE(*), DIMENSION(..)` and hand it to
//! `oxmpi_f08_buffer` as a Fortran 2018 C descriptor (`CFI_cdesc_t`). It says which address,
//! count and datatype the C entry gets:
//! * the descriptor of `MPI_BOTTOM` / `MPI_IN_PLACE` (their addresses come from the Fortran
//!   side, which reaches the interposed objects): C's `MPI_BOTTOM` / `MPI_IN_PLACE`;
//! * a contiguous array (or scalar): its address, with the caller's count and datatype;
//! * a non-contiguous array section, for a buffer described by its own count and datatype
//!   whose extent is the element's size (`MPI_INTEGER` for an INTEGER array, ...): a derived
//!   datatype that picks the first `count` elements of the section where they lie (nested
//!   hvectors when the count is the whole section, else one displacement per element), with
//!   count 1. No copy is made, so nonblocking and persistent operations work on sections too:
//!   the type is freed right after the call starts the operation, which MPI allows
//!   (the operation keeps what it needs);
//! * any other non-contiguous section (a buffer whose count is per rank, or shared with
//!   another buffer, or a datatype of another extent) is an error (MPI_ERR_BUFFER), never a
//!   silent transfer of the wrong memory.
#![allow(non_camel_case_types)]

use crate::abi::consts::*;
use crate::abi::entries;
use crate::abi::types::{MPI_Aint, MPI_Count, MPI_Datatype};
use crate::error::MpiError;
use std::ffi::{CStr, c_char, c_int, c_void};

/// One dimension of a C descriptor (ISO_Fortran_binding.h).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CFI_dim_t {
    pub lower_bound: isize,
    pub extent: isize,
    /// Distance in bytes between successive elements of this dimension.
    pub sm: isize,
}

/// A C descriptor (ISO_Fortran_binding.h, `CFI_cdesc_t`), followed in memory by `rank`
/// dimensions.
#[repr(C)]
#[derive(Debug)]
pub struct CFI_cdesc_t {
    pub base_addr: *mut c_void,
    pub elem_len: usize,
    pub version: c_int,
    pub rank: i8,
    pub attribute: i8,
    pub type_: i16,
    pub dim: [CFI_dim_t; 0],
}

/// How a buffer is used, as the generated Fortran passes it.
/// The buffer holds `count` items of `datatype`: sections are described by a derived type.
pub const F08_BUF_TYPED: c_int = 0;
/// The buffer must be contiguous (counts per rank, arrays of counts, byte sizes, ...).
pub const F08_BUF_CONTIGUOUS: c_int = 1;
/// Only the address of the first element matters (MPI_GET_ADDRESS, MPI_FREE_MEM, ...).
pub const F08_BUF_ADDRESS: c_int = 2;

/// Which object's error handler applies to a buffer error (`object` is its Fortran handle).
pub const F08_ON_COMM: c_int = 1;
pub const F08_ON_WIN: c_int = 2;
pub const F08_ON_FILE: c_int = 3;

/// The shape of a section: element size and, per dimension from the fastest, (extent, stride).
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub elem_len: usize,
    pub dims: Vec<(isize, isize)>,
}

impl Section {
    pub fn elements(&self) -> isize {
        self.dims.iter().map(|d| d.0).product()
    }

    /// Whether the elements lie one after another in Fortran order.
    pub fn is_contiguous(&self) -> bool {
        let mut expect = self.elem_len as isize;
        for &(extent, sm) in &self.dims {
            if extent == 0 {
                return true;
            }
            if extent > 1 && sm != expect {
                return false;
            }
            expect *= extent;
        }
        true
    }

    /// Byte offset of element `k` (Fortran order) from the first element.
    pub fn offset(&self, mut k: isize) -> isize {
        let mut off = 0;
        for &(extent, sm) in &self.dims {
            off += (k % extent) * sm;
            k /= extent;
        }
        off
    }
}

/// # Safety
/// `desc` points to a descriptor followed by `rank` dimensions.
unsafe fn section(desc: *const CFI_cdesc_t) -> Section {
    // SAFETY: per the contract; `dim` is the descriptor's trailing array of `rank` entries.
    unsafe {
        let d = &*desc;
        let rank = usize::try_from(d.rank).unwrap_or(0);
        let dims = (0..rank)
            .map(|i| {
                let dim = *d.dim.as_ptr().add(i);
                (dim.extent, dim.sm)
            })
            .collect();
        Section { elem_len: d.elem_len, dims }
    }
}

fn routine_name(name: *const c_char) -> String {
    if name.is_null() {
        return "MPI (Fortran 2008)".into();
    }
    // SAFETY: the generated Fortran passes a NUL-terminated literal.
    unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
}

/// Resolves a choice buffer for the C entry: see the module comment.
///
/// # Safety
/// `desc` is a descriptor made by the Fortran compiler; `bottom`/`in_place` are the addresses
/// of the Fortran sentinels; `name` is null or a NUL-terminated string; `object_kind` and
/// `object` name the communicator, window or file of the call (kind 0: none); the outputs are
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxmpi_f08_buffer(
    desc: *const CFI_cdesc_t,
    bottom: *const c_void,
    in_place: *const c_void,
    mode: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    name: *const c_char,
    object_kind: c_int,
    object: c_int,
    addr: *mut *mut c_void,
    count_out: *mut MPI_Count,
    datatype_out: *mut MPI_Datatype,
) -> c_int {
    // SAFETY: per the contract.
    unsafe {
        *count_out = count;
        *datatype_out = datatype;
        let base = (*desc).base_addr;
        if base.cast_const() == bottom {
            *addr = std::ptr::null_mut();
            return MPI_SUCCESS;
        }
        if base.cast_const() == in_place {
            *addr = usize::MAX as *mut c_void;
            return MPI_SUCCESS;
        }
        *addr = base;
        let s = section(desc);
        if mode == F08_BUF_ADDRESS || s.is_contiguous() {
            return MPI_SUCCESS;
        }
        let fail = |msg: String| {
            let (fname, e) = (routine_name(name), MpiError::new(MPI_ERR_BUFFER, msg));
            match object_kind {
                F08_ON_COMM => crate::errhandler::raise(&fname, Some(object), e),
                F08_ON_WIN => crate::errhandler::raise_on_win(&fname, object, e),
                F08_ON_FILE => crate::errhandler::raise_on_file(&fname, entries::PMPI_File_f2c(object).cast(), e),
                _ => crate::errhandler::raise(&fname, None, e),
            }
        };
        if mode != F08_BUF_TYPED {
            return fail(format!(
                "a non-contiguous array section is not supported for this buffer of {} (pass a contiguous array)",
                routine_name(name)
            ));
        }
        let (mut lb, mut extent): (MPI_Count, MPI_Count) = (0, 0);
        let rc = entries::PMPI_Type_get_extent_c(datatype, &raw mut lb, &raw mut extent);
        if rc != MPI_SUCCESS {
            return rc;
        }
        if lb != 0 || usize::try_from(extent).ok() != Some(s.elem_len) {
            return fail(format!(
                "a non-contiguous array section needs a datatype whose extent is the element size \
                 ({} bytes); this one has lower bound {lb} and extent {extent}",
                s.elem_len
            ));
        }
        let n = s.elements() as MPI_Count;
        if count > n {
            return fail(format!("count {count} exceeds the {n} elements of the array section"));
        }
        match section_type(&s, count, datatype) {
            Ok(t) => {
                *count_out = 1;
                *datatype_out = t;
                MPI_SUCCESS
            }
            Err(rc) => rc,
        }
    }
}

/// A committed datatype for the first `count` elements of `s`, of `datatype` each.
fn section_type(s: &Section, count: MPI_Count, datatype: MPI_Datatype) -> Result<MPI_Datatype, c_int> {
    let check = |rc: c_int| if rc == MPI_SUCCESS { Ok(()) } else { Err(rc) };
    let mut t: MPI_Datatype = MPI_DATATYPE_NULL;
    // SAFETY: the C entries get valid handles and pointers to locals.
    unsafe {
        if count == s.elements() as MPI_Count {
            // The whole section: one hvector per dimension, fastest innermost.
            let mut inner = datatype;
            for &(extent, sm) in &s.dims {
                let mut next: MPI_Datatype = MPI_DATATYPE_NULL;
                check(entries::PMPI_Type_create_hvector_c(
                    extent as MPI_Count,
                    1,
                    sm as MPI_Count,
                    inner,
                    &raw mut next,
                ))?;
                if inner != datatype {
                    entries::PMPI_Type_free(&raw mut inner);
                }
                inner = next;
            }
            t = inner;
        } else {
            let displs: Vec<MPI_Count> = (0..count as isize).map(|k| s.offset(k) as MPI_Count).collect();
            check(entries::PMPI_Type_create_hindexed_block_c(count, 1, displs.as_ptr(), datatype, &raw mut t))?;
        }
        if t == datatype {
            // A rank-0 "section" never gets here (it is contiguous); keep the invariant anyway.
            return Ok(t);
        }
        check(entries::PMPI_Type_commit(&raw mut t))?;
    }
    Ok(t)
}

/// Frees the datatype `oxmpi_f08_buffer` made, if it made one (`made` differs from `given`).
///
/// # Safety
/// `made` is the value `oxmpi_f08_buffer` stored for `given`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxmpi_f08_buffer_done(made: MPI_Datatype, given: MPI_Datatype) {
    if made != given && made != MPI_DATATYPE_NULL {
        let mut t = made;
        // SAFETY: `t` is a derived type this module created and nobody else holds.
        unsafe { entries::PMPI_Type_free(&raw mut t) };
    }
}

/// A weights array of the distributed-graph routines: the Fortran MPI_UNWEIGHTED and
/// MPI_WEIGHTS_EMPTY (whose addresses the Fortran side passes) become C's.
#[unsafe(no_mangle)]
pub extern "C" fn oxmpi_f08_weights(
    weights: *const c_int,
    unweighted: *const c_void,
    empty: *const c_void,
) -> *const c_int {
    if weights.cast::<c_void>() == unweighted {
        crate::abi::globals::MPI_UNWEIGHTED.get()
    } else if weights.cast::<c_void>() == empty {
        crate::abi::globals::MPI_WEIGHTS_EMPTY.get()
    } else {
        weights
    }
}

/// `MPI_Aint` is what the generated Fortran calls INTEGER(KIND=MPI_ADDRESS_KIND).
const _: () = assert!(size_of::<MPI_Aint>() == 8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections() {
        // a(1:10:2) of INTEGER: 5 elements 8 bytes apart.
        let s = Section { elem_len: 4, dims: vec![(5, 8)] };
        assert!(!s.is_contiguous());
        assert_eq!(s.elements(), 5);
        assert_eq!(s.offset(3), 24);
        // b(2:3, 1:4) of a 4x4 REAL*8 array: rows 2-3, stride 32 bytes between columns.
        let s = Section { elem_len: 8, dims: vec![(2, 8), (4, 32)] };
        assert!(!s.is_contiguous());
        assert_eq!(s.offset(3), 8 + 32);
        // A whole 2-D array and a 1-element section are contiguous.
        assert!(Section { elem_len: 8, dims: vec![(4, 8), (4, 32)] }.is_contiguous());
        assert!(Section { elem_len: 8, dims: vec![(1, 800), (1, 8)] }.is_contiguous());
        assert!(Section { elem_len: 4, dims: vec![] }.is_contiguous());
    }
}

//! Datatype entry points: constructors, queries, names, envelope/contents, addresses and
//! MPI_Pack/Unpack (native and external32). Argument arrays are read here; everything else
//! is `crate::datatype`.

// The entry points take MPI's C argument lists as they are.
#![allow(clippy::too_many_arguments)]

use super::consts::*;
use super::family::{CArray, Width};
use super::types::*;
use crate::datatype::{self, Child, sig};
use crate::error::{MpiError, MpiResult, err};
use std::ffi::{CStr, c_char, c_int, c_void};

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

/// Reads a C array of `n` values as i64 (MPI_ERR_ARG when NULL with n > 0).
///
/// # Safety
/// `p` is NULL or points at `n` readable elements.
unsafe fn read<T: Copy + Into<i64>>(p: *const T, n: usize, what: &str) -> MpiResult<Vec<i64>> {
    if n == 0 {
        return Ok(vec![]);
    }
    if p.is_null() {
        return err(MPI_ERR_ARG, format!("invalid {what} array (NULL)"));
    }
    // SAFETY: non-null; the caller guarantees n elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) }.iter().map(|&v| v.into()).collect())
}

/// # Safety
/// As for `read`.
unsafe fn read_array(a: CArray, n: usize, what: &str) -> MpiResult<Vec<i64>> {
    // SAFETY: forwarded.
    unsafe {
        match a {
            CArray::Int(p) => read(p, n, what),
            CArray::Wide(p) => read(p, n, what),
        }
    }
}

/// # Safety
/// As for `read`.
unsafe fn read_i32(p: *const c_int, n: usize, what: &str) -> MpiResult<Vec<i32>> {
    // SAFETY: forwarded.
    Ok(unsafe { read(p, n, what)? }.into_iter().map(|v| v as i32).collect())
}

fn check_count(count: i64) -> MpiResult<usize> {
    if count < 0 { err(MPI_ERR_COUNT, format!("invalid count argument (count={count})")) } else { Ok(count as usize) }
}

/// Stores a new type handle.
///
/// # Safety
/// `newtype` is NULL or writable.
unsafe fn out_type(newtype: *mut MPI_Datatype, f: impl FnOnce() -> MpiResult<MPI_Datatype>) -> MpiResult {
    if newtype.is_null() {
        return err(MPI_ERR_ARG, "invalid newtype pointer (NULL)");
    }
    let h = f()?;
    // SAFETY: checked non-null.
    unsafe { *newtype = h };
    Ok(())
}

// ----- sizes and extents -----

fn to_c_int(v: i64) -> c_int {
    if v > c_int::MAX as i64 || v < c_int::MIN as i64 { MPI_UNDEFINED } else { v as c_int }
}

pub unsafe fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> MpiResult {
    let s = datatype::type_size(datatype)?;
    unsafe { put(size, to_c_int(s as i64)) }
}
pub unsafe fn MPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) -> MpiResult {
    let s = datatype::type_size(datatype)?;
    unsafe { put(size, s as MPI_Count) }
}
pub unsafe fn MPI_Type_size_c(datatype: MPI_Datatype, size: *mut MPI_Count) -> MpiResult {
    unsafe { MPI_Type_size_x(datatype, size) }
}

/// (lb, extent) or (true_lb, true_extent).
fn bounds(datatype: MPI_Datatype, true_bounds: bool) -> MpiResult<(i64, i64)> {
    let t = datatype::lookup(datatype)?;
    let d = t.data();
    Ok(if true_bounds {
        (d.true_lb as i64, (d.true_ub - d.true_lb) as i64)
    } else {
        (d.lb as i64, (d.ub - d.lb) as i64)
    })
}

unsafe fn extent<T: TryFrom<i64>>(datatype: MPI_Datatype, lb: *mut T, ext: *mut T, true_bounds: bool) -> MpiResult {
    let (l, e) = bounds(datatype, true_bounds)?;
    let conv = |v: i64| T::try_from(v).map_err(|_| MpiError::new(MPI_ERR_TYPE, "extent too large"));
    unsafe {
        put(lb, conv(l)?)?;
        put(ext, conv(e)?)
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
/// MPI-1 (removed in MPI-3, still exported by MPICH).
pub unsafe fn MPI_Type_extent(datatype: MPI_Datatype, extent: *mut MPI_Aint) -> MpiResult {
    let (_, e) = bounds(datatype, false)?;
    unsafe { put(extent, e as MPI_Aint) }
}
pub unsafe fn MPI_Type_lb(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> MpiResult {
    let (l, _) = bounds(datatype, false)?;
    unsafe { put(displacement, l as MPI_Aint) }
}
pub unsafe fn MPI_Type_ub(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> MpiResult {
    let (l, e) = bounds(datatype, false)?;
    unsafe { put(displacement, (l + e) as MPI_Aint) }
}

// ----- commit and free -----

pub unsafe fn MPI_Type_commit(datatype: *mut MPI_Datatype) -> MpiResult {
    if datatype.is_null() {
        return err(MPI_ERR_ARG, "invalid datatype pointer (NULL)");
    }
    // SAFETY: checked non-null.
    datatype::commit(unsafe { *datatype })
}

pub unsafe fn MPI_Type_free(datatype: *mut MPI_Datatype) -> MpiResult {
    if datatype.is_null() {
        return err(MPI_ERR_ARG, "invalid datatype pointer (NULL)");
    }
    // SAFETY: checked non-null; caller's handle.
    let dt = unsafe { *datatype };
    // Attributes go with the user's last handle, through their delete callbacks; the type
    // stays when one fails.
    if datatype::is_last_handle(dt) {
        super::attr::delete_all::<super::attr::TypeAttrs>(dt)?;
    }
    datatype::free(dt)?;
    // SAFETY: checked non-null.
    unsafe { *datatype = MPI_DATATYPE_NULL };
    Ok(())
}

// ----- constructors -----

// Each constructor with a `_c` twin is one impl: build.rs generates the `int` form from it,
// passing `CArray::Int` arrays and `Width::Int`, which the new type records (MPI_Type_get_envelope
// reports the `_c` combiners only for the large forms).

pub unsafe fn MPI_Type_contiguous_c(
    count: MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    unsafe { out_type(newtype, || datatype::contiguous(count, oldtype, width.is_large())) }
}

pub unsafe fn MPI_Type_vector_c(
    count: MPI_Count,
    blocklength: MPI_Count,
    stride: MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    unsafe { out_type(newtype, || datatype::vector(count, blocklength, stride, oldtype, width.is_large())) }
}

pub unsafe fn MPI_Type_create_hvector_c(
    count: MPI_Count,
    blocklength: MPI_Count,
    stride: MPI_Count,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    unsafe { out_type(newtype, || datatype::hvector(count, blocklength, stride, oldtype, width.is_large())) }
}
/// The MPI-1 name of MPI_Type_create_hvector.
pub unsafe fn MPI_Type_hvector(
    count: c_int,
    blocklength: c_int,
    stride: MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult {
    unsafe {
        MPI_Type_create_hvector_c(count as MPI_Count, blocklength as MPI_Count, stride, oldtype, newtype, Width::Int)
    }
}

pub unsafe fn MPI_Type_indexed_c(
    count: MPI_Count,
    array_of_blocklengths: CArray,
    array_of_displacements: CArray,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    let n = check_count(count)?;
    let bls = unsafe { read_array(array_of_blocklengths, n, "blocklengths")? };
    let ds = unsafe { read_array(array_of_displacements, n, "displacements")? };
    unsafe { out_type(newtype, || datatype::indexed(&bls, &ds, oldtype, width.is_large())) }
}

pub unsafe fn MPI_Type_create_hindexed_c(
    count: MPI_Count,
    array_of_blocklengths: CArray,
    array_of_displacements: CArray,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    let n = check_count(count)?;
    let bls = unsafe { read_array(array_of_blocklengths, n, "blocklengths")? };
    let ds = unsafe { read_array(array_of_displacements, n, "displacements")? };
    unsafe { out_type(newtype, || datatype::hindexed(&bls, &ds, oldtype, width.is_large())) }
}
/// The MPI-1 name of MPI_Type_create_hindexed.
pub unsafe fn MPI_Type_hindexed(
    count: c_int,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult {
    let (bls, ds) = (CArray::Int(array_of_blocklengths), CArray::Wide(array_of_displacements));
    unsafe { MPI_Type_create_hindexed_c(count as MPI_Count, bls, ds, oldtype, newtype, Width::Int) }
}

pub unsafe fn MPI_Type_create_indexed_block_c(
    count: MPI_Count,
    blocklength: MPI_Count,
    array_of_displacements: CArray,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    let n = check_count(count)?;
    let ds = unsafe { read_array(array_of_displacements, n, "displacements")? };
    unsafe { out_type(newtype, || datatype::indexed_block(blocklength, &ds, oldtype, width.is_large())) }
}

pub unsafe fn MPI_Type_create_hindexed_block_c(
    count: MPI_Count,
    blocklength: MPI_Count,
    array_of_displacements: CArray,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    let n = check_count(count)?;
    let ds = unsafe { read_array(array_of_displacements, n, "displacements")? };
    unsafe { out_type(newtype, || datatype::hindexed_block(blocklength, &ds, oldtype, width.is_large())) }
}

pub unsafe fn MPI_Type_create_struct_c(
    count: MPI_Count,
    array_of_blocklengths: CArray,
    array_of_displacements: CArray,
    array_of_types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    let n = check_count(count)?;
    let bls = unsafe { read_array(array_of_blocklengths, n, "blocklengths")? };
    let ds = unsafe { read_array(array_of_displacements, n, "displacements")? };
    let ts = unsafe { read_i32(array_of_types, n, "types")? };
    unsafe { out_type(newtype, || datatype::create_struct(&bls, &ds, &ts, width.is_large())) }
}
/// The MPI-1 name of MPI_Type_create_struct.
pub unsafe fn MPI_Type_struct(
    count: c_int,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    array_of_types: *mut MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult {
    let (bls, ds) = (CArray::Int(array_of_blocklengths), CArray::Wide(array_of_displacements));
    unsafe { MPI_Type_create_struct_c(count as MPI_Count, bls, ds, array_of_types, newtype, Width::Int) }
}

fn check_ndims(ndims: c_int) -> MpiResult<usize> {
    if ndims <= 0 {
        err(MPI_ERR_ARG, format!("invalid ndims argument ({ndims}): must be positive"))
    } else {
        Ok(ndims as usize)
    }
}

pub unsafe fn MPI_Type_create_subarray_c(
    ndims: c_int,
    array_of_sizes: CArray,
    array_of_subsizes: CArray,
    array_of_starts: CArray,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    let n = check_ndims(ndims)?;
    let (s, ss, st) = unsafe {
        (
            read_array(array_of_sizes, n, "sizes")?,
            read_array(array_of_subsizes, n, "subsizes")?,
            read_array(array_of_starts, n, "starts")?,
        )
    };
    unsafe { out_type(newtype, || datatype::subarray(&s, &ss, &st, order, oldtype, width.is_large())) }
}

/// # Safety
/// Arrays NULL or of `ndims` elements.
pub unsafe fn MPI_Type_create_darray_c(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: CArray,
    array_of_distribs: *const c_int,
    array_of_dargs: *const c_int,
    array_of_psizes: *const c_int,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    let n = check_ndims(ndims)?;
    // SAFETY: forwarded.
    unsafe {
        let g = read_array(array_of_gsizes, n, "gsizes")?;
        let d = read_i32(array_of_distribs, n, "distribs")?;
        let a = read_i32(array_of_dargs, n, "dargs")?;
        let p = read_i32(array_of_psizes, n, "psizes")?;
        out_type(newtype, || datatype::darray(size, rank, &g, &d, &a, &p, order, oldtype, width.is_large()))
    }
}

pub unsafe fn MPI_Type_create_resized_c(
    oldtype: MPI_Datatype,
    lb: MPI_Count,
    extent: MPI_Count,
    newtype: *mut MPI_Datatype,
    width: Width,
) -> MpiResult {
    unsafe { out_type(newtype, || datatype::resized(oldtype, lb, extent, width.is_large())) }
}

/// MPI_Type_dup: the copy callbacks of `oldtype`'s attributes decide what the new type
/// caches; when one fails, the new type is freed and `newtype` is MPI_DATATYPE_NULL (MPICH).
pub unsafe fn MPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> MpiResult {
    unsafe { out_type(newtype, || datatype::dup(oldtype))? };
    // SAFETY: out_type checked newtype non-null and stored the new handle there.
    let h = unsafe { *newtype };
    if let Err(e) = super::attr::copy_all::<super::attr::TypeAttrs>(oldtype, h) {
        let _ = super::attr::delete_all::<super::attr::TypeAttrs>(h);
        let _ = datatype::free(h);
        // SAFETY: as above.
        unsafe { *newtype = MPI_DATATYPE_NULL };
        return Err(e);
    }
    Ok(())
}

pub unsafe fn MPI_Type_create_f90_integer(r: c_int, newtype: *mut MPI_Datatype) -> MpiResult {
    unsafe { out_type(newtype, || datatype::f90(MPI_COMBINER_F90_INTEGER, MPI_UNDEFINED, r)) }
}
pub unsafe fn MPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> MpiResult {
    unsafe { out_type(newtype, || datatype::f90(MPI_COMBINER_F90_REAL, p, r)) }
}
pub unsafe fn MPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> MpiResult {
    unsafe { out_type(newtype, || datatype::f90(MPI_COMBINER_F90_COMPLEX, p, r)) }
}

pub unsafe fn MPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut MPI_Datatype) -> MpiResult {
    unsafe { out_type(datatype, || datatype::match_size(typeclass, size)) }
}

// ----- envelope and contents -----

pub unsafe fn MPI_Type_get_envelope(
    datatype: MPI_Datatype,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> MpiResult {
    let (c, [ni, na, nl, nd]) = datatype::envelope(datatype)?;
    if nl > 0 {
        return err(MPI_ERR_TYPE, "datatype was built with large counts: use MPI_Type_get_envelope_c");
    }
    unsafe {
        put(num_integers, ni as c_int)?;
        put(num_addresses, na as c_int)?;
        put(num_datatypes, nd as c_int)?;
        put(combiner, c)
    }
}
pub unsafe fn MPI_Type_get_envelope_c(
    datatype: MPI_Datatype,
    num_integers: *mut MPI_Count,
    num_addresses: *mut MPI_Count,
    num_large_counts: *mut MPI_Count,
    num_datatypes: *mut MPI_Count,
    combiner: *mut c_int,
) -> MpiResult {
    let (c, [ni, na, nl, nd]) = datatype::envelope(datatype)?;
    unsafe {
        put(num_integers, ni as MPI_Count)?;
        put(num_addresses, na as MPI_Count)?;
        put(num_large_counts, nl as MPI_Count)?;
        put(num_datatypes, nd as MPI_Count)?;
        put(combiner, c)
    }
}

/// Copies `src` into the C array `dst` of capacity `max`.
///
/// # Safety
/// `dst` is NULL or has room for `max` elements.
unsafe fn fill<T: Copy>(src: &[T], dst: *mut T, max: i64, what: &str) -> MpiResult {
    if (max as i128) < src.len() as i128 {
        return err(MPI_ERR_ARG, format!("{what} array too small: {} entries needed, max is {max}", src.len()));
    }
    if src.is_empty() {
        return Ok(());
    }
    if dst.is_null() {
        return err(MPI_ERR_ARG, format!("invalid {what} array (NULL)"));
    }
    // SAFETY: non-null with room for max >= len elements.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
    Ok(())
}

/// Releases the handles get_contents made when a later check fails.
fn release(types: &[MPI_Datatype], c: &datatype::Contents) {
    for (h, child) in types.iter().zip(&c.types) {
        if matches!(child, Child::Derived(_)) {
            let _ = datatype::free(*h);
        }
    }
}

pub unsafe fn MPI_Type_get_contents(
    datatype: MPI_Datatype,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_datatypes: *mut MPI_Datatype,
) -> MpiResult {
    let (c, types) = datatype::contents(datatype)?;
    let r = if !c.large.is_empty() {
        err(MPI_ERR_TYPE, "datatype was built with large counts: use MPI_Type_get_contents_c")
    } else {
        let aints: Vec<MPI_Aint> = c.aints.iter().map(|&a| a as MPI_Aint).collect();
        unsafe {
            fill(&c.ints, array_of_integers, max_integers as i64, "integers")
                .and_then(|_| fill(&aints, array_of_addresses, max_addresses as i64, "addresses"))
                .and_then(|_| fill(&types, array_of_datatypes, max_datatypes as i64, "datatypes"))
        }
    };
    if r.is_err() {
        release(&types, &c);
    }
    r
}
pub unsafe fn MPI_Type_get_contents_c(
    datatype: MPI_Datatype,
    max_integers: MPI_Count,
    max_addresses: MPI_Count,
    max_large_counts: MPI_Count,
    max_datatypes: MPI_Count,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_large_counts: *mut MPI_Count,
    array_of_datatypes: *mut MPI_Datatype,
) -> MpiResult {
    let (c, types) = datatype::contents(datatype)?;
    let aints: Vec<MPI_Aint> = c.aints.iter().map(|&a| a as MPI_Aint).collect();
    let r = unsafe {
        fill(&c.ints, array_of_integers, max_integers, "integers")
            .and_then(|_| fill(&aints, array_of_addresses, max_addresses, "addresses"))
            .and_then(|_| fill(&c.large, array_of_large_counts, max_large_counts, "large counts"))
            .and_then(|_| fill(&types, array_of_datatypes, max_datatypes, "datatypes"))
    };
    if r.is_err() {
        release(&types, &c);
    }
    r
}

// ----- names and addresses -----

pub unsafe fn MPI_Type_set_name(datatype: MPI_Datatype, type_name: *const c_char) -> MpiResult {
    if type_name.is_null() {
        return err(MPI_ERR_ARG, "invalid name pointer (NULL)");
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(type_name) }.to_string_lossy();
    let name: String = name.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
    datatype::set_name(datatype, &name)
}

pub unsafe fn MPI_Type_get_name(datatype: MPI_Datatype, type_name: *mut c_char, resultlen: *mut c_int) -> MpiResult {
    if type_name.is_null() || resultlen.is_null() {
        return err(MPI_ERR_ARG, "invalid name or resultlen pointer (NULL)");
    }
    let name = datatype::name(datatype)?;
    // SAFETY: MPI requires room for MPI_MAX_OBJECT_NAME characters; names are shorter.
    unsafe { *resultlen = super::errors::write_c_string(&name, type_name, MPI_MAX_OBJECT_NAME as usize) as c_int };
    Ok(())
}

pub unsafe fn MPI_Get_address(location: *const c_void, address: *mut MPI_Aint) -> MpiResult {
    unsafe { put(address, location as MPI_Aint) }
}

/// MPI-1's name for MPI_Get_address (removed in MPI-3; MPICH still exports it).
pub unsafe fn MPI_Address(location: *mut c_void, address: *mut MPI_Aint) -> MpiResult {
    unsafe { MPI_Get_address(location, address) }
}

// ----- pack and unpack -----

fn check_comm(comm: MPI_Comm) -> MpiResult {
    if !crate::comm::is_valid(comm) {
        return err(MPI_ERR_COMM, format!("invalid communicator (0x{:08x})", comm as u32));
    }
    Ok(())
}

/// # Safety
/// `position` is NULL or a readable/writable position; `buf` has `bufsize` bytes.
unsafe fn position(position: *mut i64) -> MpiResult<usize> {
    if position.is_null() {
        return err(MPI_ERR_ARG, "invalid position pointer (NULL)");
    }
    // SAFETY: checked non-null.
    let p = unsafe { *position };
    if p < 0 {
        return err(MPI_ERR_ARG, format!("invalid position ({p})"));
    }
    Ok(p as usize)
}

/// Packs `incount` elements at `inbuf` into `outbuf[*pos..]` (native, or external32).
///
/// # Safety
/// Buffers as MPI_Pack requires.
unsafe fn pack(
    inbuf: *const c_void,
    incount: i64,
    dt: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: i64,
    pos: *mut i64,
    external: bool,
) -> MpiResult {
    let count = check_count(incount)?;
    let layout = datatype::layout(dt)?;
    let start = unsafe { position(pos)? };
    let sig = datatype::lookup(dt)?.data().sig.clone();
    let bytes = if external { sig.ext_size * count } else { layout.size * count };
    if outsize < 0 || start as i64 + bytes as i64 > outsize {
        return err(
            MPI_ERR_ARG,
            format!("output buffer too small: {bytes} bytes at position {start}, buffer size {outsize}"),
        );
    }
    if bytes > 0 {
        if outbuf.is_null() {
            return err(MPI_ERR_ARG, "invalid output buffer (NULL)");
        }
        // SAFETY: the caller's buffer has outsize >= start + bytes bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(outbuf.cast::<u8>().add(start), bytes) };
        let n = layout.size * count;
        if external {
            let mut native = vec![0u8; n];
            // SAFETY: inbuf holds count elements (caller); native is ours.
            unsafe { layout.pack(inbuf.cast(), count, 0..n, &mut native) };
            sig::convert(&sig, count, &mut native, out, true);
        } else {
            // SAFETY: as above; MPI forbids inbuf and outbuf to overlap.
            unsafe { layout.pack(inbuf.cast(), count, 0..n, out) };
        }
    }
    // SAFETY: checked by `position`.
    unsafe { *pos = (start + bytes) as i64 };
    Ok(())
}

/// # Safety
/// Buffers as MPI_Unpack requires.
unsafe fn unpack(
    inbuf: *const c_void,
    insize: i64,
    pos: *mut i64,
    outbuf: *mut c_void,
    outcount: i64,
    dt: MPI_Datatype,
    external: bool,
) -> MpiResult {
    let count = check_count(outcount)?;
    let layout = datatype::layout(dt)?;
    let start = unsafe { position(pos)? };
    let sig = datatype::lookup(dt)?.data().sig.clone();
    let bytes = if external { sig.ext_size * count } else { layout.size * count };
    if insize < 0 || start as i64 + bytes as i64 > insize {
        return err(
            MPI_ERR_TRUNCATE,
            format!("input buffer too small: {bytes} bytes wanted at position {start}, buffer size {insize}"),
        );
    }
    if bytes > 0 {
        if inbuf.is_null() {
            return err(MPI_ERR_ARG, "invalid input buffer (NULL)");
        }
        // SAFETY: the caller's buffer has insize >= start + bytes bytes.
        let input = unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>().add(start), bytes) };
        if external {
            let mut native = vec![0u8; layout.size * count];
            let mut ext = input.to_vec();
            sig::convert(&sig, count, &mut native, &mut ext, false);
            // SAFETY: outbuf holds count writable elements (caller).
            unsafe { layout.unpack(outbuf.cast(), count, 0, &native) };
        } else {
            // SAFETY: as above; MPI forbids the buffers to overlap.
            unsafe { layout.unpack(outbuf.cast(), count, 0, input) };
        }
    }
    // SAFETY: checked by `position`.
    unsafe { *pos = (start + bytes) as i64 };
    Ok(())
}

/// Runs `f` on a 64-bit copy of an int position.
///
/// # Safety
/// `position` is NULL or valid.
unsafe fn with_int_position(position: *mut c_int, f: impl FnOnce(*mut i64) -> MpiResult) -> MpiResult {
    if position.is_null() {
        return err(MPI_ERR_ARG, "invalid position pointer (NULL)");
    }
    // SAFETY: checked non-null.
    let mut p = unsafe { *position } as i64;
    f(&mut p)?;
    // SAFETY: as above.
    unsafe { *position = to_c_int(p) };
    Ok(())
}

pub unsafe fn MPI_Pack(
    inbuf: *const c_void,
    incount: c_int,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: c_int,
    position: *mut c_int,
    comm: MPI_Comm,
) -> MpiResult {
    check_comm(comm)?;
    unsafe { with_int_position(position, |p| pack(inbuf, incount as i64, datatype, outbuf, outsize as i64, p, false)) }
}
pub unsafe fn MPI_Pack_c(
    inbuf: *const c_void,
    incount: MPI_Count,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Count,
    position: *mut MPI_Count,
    comm: MPI_Comm,
) -> MpiResult {
    check_comm(comm)?;
    unsafe { pack(inbuf, incount, datatype, outbuf, outsize, position, false) }
}
pub unsafe fn MPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    position: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult {
    check_comm(comm)?;
    unsafe {
        with_int_position(position, |p| unpack(inbuf, insize as i64, p, outbuf, outcount as i64, datatype, false))
    }
}
pub unsafe fn MPI_Unpack_c(
    inbuf: *const c_void,
    insize: MPI_Count,
    position: *mut MPI_Count,
    outbuf: *mut c_void,
    outcount: MPI_Count,
    datatype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult {
    check_comm(comm)?;
    unsafe { unpack(inbuf, insize, position, outbuf, outcount, datatype, false) }
}

fn pack_size(incount: i64, datatype: MPI_Datatype) -> MpiResult<i64> {
    let n = check_count(incount)?;
    Ok((datatype::type_size(datatype)? * n) as i64)
}
pub unsafe fn MPI_Pack_size(incount: c_int, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut c_int) -> MpiResult {
    check_comm(comm)?;
    let s = pack_size(incount as i64, datatype)?;
    unsafe { put(size, to_c_int(s)) }
}
pub unsafe fn MPI_Pack_size_c(
    incount: MPI_Count,
    datatype: MPI_Datatype,
    comm: MPI_Comm,
    size: *mut MPI_Count,
) -> MpiResult {
    check_comm(comm)?;
    let s = pack_size(incount, datatype)?;
    unsafe { put(size, s) }
}

/// Only "external32" is a data representation MPI defines for these calls.
///
/// # Safety
/// `datarep` is NULL or a NUL-terminated string.
unsafe fn check_datarep(datarep: *const c_char) -> MpiResult {
    if datarep.is_null() {
        return err(MPI_ERR_ARG, "invalid datarep (NULL)");
    }
    // SAFETY: checked non-null; NUL-terminated per the caller.
    let rep = unsafe { CStr::from_ptr(datarep) }.to_string_lossy();
    if rep != "external32" {
        return err(MPI_ERR_ARG, format!("unsupported data representation \"{rep}\" (only \"external32\")"));
    }
    Ok(())
}

pub unsafe fn MPI_Pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: c_int,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Aint,
    position: *mut MPI_Aint,
) -> MpiResult {
    unsafe {
        check_datarep(datarep)?;
        pack(inbuf, incount as i64, datatype, outbuf, outsize, position, true)
    }
}
pub unsafe fn MPI_Pack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: MPI_Count,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Count,
    position: *mut MPI_Count,
) -> MpiResult {
    unsafe {
        check_datarep(datarep)?;
        pack(inbuf, incount, datatype, outbuf, outsize, position, true)
    }
}
pub unsafe fn MPI_Unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Aint,
    position: *mut MPI_Aint,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: MPI_Datatype,
) -> MpiResult {
    unsafe {
        check_datarep(datarep)?;
        unpack(inbuf, insize, position, outbuf, outcount as i64, datatype, true)
    }
}
pub unsafe fn MPI_Unpack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Count,
    position: *mut MPI_Count,
    outbuf: *mut c_void,
    outcount: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult {
    unsafe {
        check_datarep(datarep)?;
        unpack(inbuf, insize, position, outbuf, outcount, datatype, true)
    }
}

fn external_size(incount: i64, datatype: MPI_Datatype) -> MpiResult<i64> {
    let n = check_count(incount)?;
    Ok((datatype::lookup(datatype)?.data().sig.ext_size * n) as i64)
}
pub unsafe fn MPI_Pack_external_size(
    datarep: *const c_char,
    incount: c_int,
    datatype: MPI_Datatype,
    size: *mut MPI_Aint,
) -> MpiResult {
    unsafe {
        check_datarep(datarep)?;
        put(size, external_size(incount as i64, datatype)?)
    }
}
pub unsafe fn MPI_Pack_external_size_c(
    datarep: *const c_char,
    incount: MPI_Count,
    datatype: MPI_Datatype,
    size: *mut MPI_Count,
) -> MpiResult {
    unsafe {
        check_datarep(datarep)?;
        put(size, external_size(incount, datatype)?)
    }
}

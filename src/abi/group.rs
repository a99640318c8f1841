//! Group entry points: decode handles and arrays, check arguments, call `crate::group`.

use super::consts::*;
use super::types::*;
use crate::error::{MpiResult, err};
use crate::group::{self, Group};
use std::ffi::c_int;

/// MPI_ERR_ARG unless `p` is non-null.
fn non_null<T>(p: *const T, what: &str) -> MpiResult<()> {
    if p.is_null() { err(MPI_ERR_ARG, format!("null pointer in parameter {what}")) } else { Ok(()) }
}

/// MPI_ERR_ARG for a negative count `n`.
fn check_n(n: c_int) -> MpiResult<usize> {
    if n < 0 {
        err(MPI_ERR_ARG, format!("invalid value for n, must be non-negative but is {n}"))
    } else {
        Ok(n as usize)
    }
}

/// Reads `n` ints from a C array.
///
/// # Safety
/// `p` points at `n` readable ints when `n > 0`.
unsafe fn read_ints(p: *const c_int, n: usize, what: &str) -> MpiResult<Vec<c_int>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    non_null(p, what)?;
    // SAFETY: non-null, and the caller passes `n` elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
}

/// Stores a new group handle for `g` in `newgroup`.
///
/// # Safety
/// `newgroup` was checked non-null and is writable.
unsafe fn store(newgroup: *mut MPI_Group, g: Group) -> MpiResult {
    let h = group::insert(g)?;
    // SAFETY: caller contract.
    unsafe { *newgroup = h };
    Ok(())
}

pub unsafe fn MPI_Group_size(group: MPI_Group, size: *mut c_int) -> MpiResult {
    let g = group::get(group)?;
    non_null(size, "size")?;
    // SAFETY: checked non-null.
    unsafe { *size = g.size() as c_int };
    Ok(())
}

pub unsafe fn MPI_Group_rank(group: MPI_Group, rank: *mut c_int) -> MpiResult {
    let g = group::get(group)?;
    non_null(rank, "rank")?;
    let r = crate::runtime::world_rank().and_then(|w| g.rank_of(w as usize));
    // SAFETY: checked non-null.
    unsafe { *rank = r.map_or(MPI_UNDEFINED, |r| r as c_int) };
    Ok(())
}

pub unsafe fn MPI_Group_translate_ranks(
    group1: MPI_Group,
    n: c_int,
    ranks1: *const c_int,
    group2: MPI_Group,
    ranks2: *mut c_int,
) -> MpiResult {
    let (g1, g2) = (group::get(group1)?, group::get(group2)?);
    let n = check_n(n)?;
    // SAFETY: C passes `n` ranks.
    let from = unsafe { read_ints(ranks1, n, "ranks1") }?;
    let to = g1.translate(&from, &g2)?;
    if n > 0 {
        non_null(ranks2, "ranks2")?;
        // SAFETY: non-null, room for `n` ranks.
        unsafe { std::ptr::copy_nonoverlapping(to.as_ptr(), ranks2, n) };
    }
    Ok(())
}

pub unsafe fn MPI_Group_compare(group1: MPI_Group, group2: MPI_Group, result: *mut c_int) -> MpiResult {
    let (g1, g2) = (group::get(group1)?, group::get(group2)?);
    non_null(result, "result")?;
    // SAFETY: checked non-null.
    unsafe { *result = g1.compare(&g2) };
    Ok(())
}

/// The three set operations share their argument handling.
///
/// # Safety
/// `newgroup` is null or writable.
unsafe fn set_op(
    group1: MPI_Group,
    group2: MPI_Group,
    newgroup: *mut MPI_Group,
    op: impl FnOnce(&Group, &Group) -> Group,
) -> MpiResult {
    let (g1, g2) = (group::get(group1)?, group::get(group2)?);
    non_null(newgroup, "newgroup")?;
    // SAFETY: checked non-null.
    unsafe { store(newgroup, op(&g1, &g2)) }
}

pub unsafe fn MPI_Group_union(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { set_op(group1, group2, newgroup, Group::union) }
}

pub unsafe fn MPI_Group_intersection(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { set_op(group1, group2, newgroup, Group::intersection) }
}

pub unsafe fn MPI_Group_difference(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { set_op(group1, group2, newgroup, Group::difference) }
}

pub unsafe fn MPI_Group_incl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) -> MpiResult {
    let g = group::get(group)?;
    let n = check_n(n)?;
    non_null(newgroup, "newgroup")?;
    // SAFETY: C passes `n` ranks; newgroup checked non-null.
    unsafe { store(newgroup, g.incl(&read_ints(ranks, n, "ranks")?)?) }
}

pub unsafe fn MPI_Group_excl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) -> MpiResult {
    let g = group::get(group)?;
    let n = check_n(n)?;
    non_null(newgroup, "newgroup")?;
    // SAFETY: C passes `n` ranks; newgroup checked non-null.
    unsafe { store(newgroup, g.excl(&read_ints(ranks, n, "ranks")?)?) }
}

/// Reads `n` (first, last, stride) triplets.
///
/// # Safety
/// `ranges` points at `n` triplets when `n > 0`.
unsafe fn read_ranges(ranges: *mut [c_int; 3], n: usize) -> MpiResult<Vec<[c_int; 3]>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    non_null(ranges, "ranges")?;
    // SAFETY: non-null, and the caller passes `n` triplets.
    Ok(unsafe { std::slice::from_raw_parts(ranges, n) }.to_vec())
}

pub unsafe fn MPI_Group_range_incl(
    group: MPI_Group,
    n: c_int,
    ranges: *mut [c_int; 3],
    newgroup: *mut MPI_Group,
) -> MpiResult {
    let g = group::get(group)?;
    let n = check_n(n)?;
    non_null(newgroup, "newgroup")?;
    // SAFETY: C passes `n` triplets.
    let ranks = g.expand_ranges(&unsafe { read_ranges(ranges, n) }?)?;
    // SAFETY: newgroup checked non-null.
    unsafe { store(newgroup, g.incl(&ranks)?) }
}

pub unsafe fn MPI_Group_range_excl(
    group: MPI_Group,
    n: c_int,
    ranges: *mut [c_int; 3],
    newgroup: *mut MPI_Group,
) -> MpiResult {
    let g = group::get(group)?;
    let n = check_n(n)?;
    non_null(newgroup, "newgroup")?;
    // SAFETY: C passes `n` triplets.
    let ranks = g.expand_ranges(&unsafe { read_ranges(ranges, n) }?)?;
    // SAFETY: newgroup checked non-null.
    unsafe { store(newgroup, g.excl(&ranks)?) }
}

pub unsafe fn MPI_Group_free(group: *mut MPI_Group) -> MpiResult {
    non_null(group, "group")?;
    // SAFETY: checked non-null.
    let h = unsafe { *group };
    group::free(h)?;
    // SAFETY: checked non-null.
    unsafe { *group = MPI_GROUP_NULL };
    Ok(())
}

//! Reduction-operation entry points: user operations and MPI_Reduce_local.

use super::consts::*;
use super::ctypes::{MPI_User_function, MPI_User_function_c};
use super::types::*;
use crate::datatype;
use crate::error::{MpiResult, err};
use crate::op::{self, Op, Reduction};
use std::ffi::{c_int, c_void};

/// Scratch memory with 16-byte alignment, for handing bytes to C code that reads them as
/// `double`, `long double`, structs, ...
struct Aligned(Vec<u128>);

impl Aligned {
    fn copy_of(b: &[u8]) -> Aligned {
        let mut v = vec![0u128; b.len().div_ceil(16)];
        // SAFETY: `v` has room for at least `b.len()` bytes; the regions are distinct.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), v.as_mut_ptr().cast::<u8>(), b.len()) };
        Aligned(v)
    }
    fn ptr(&mut self) -> *mut c_void {
        self.0.as_mut_ptr().cast()
    }
    fn copy_to(&self, b: &mut [u8]) {
        // SAFETY: the scratch holds at least `b.len()` bytes (made by `copy_of` of that length).
        unsafe { std::ptr::copy_nonoverlapping(self.0.as_ptr().cast::<u8>(), b.as_mut_ptr(), b.len()) };
    }
}

/// Calls `call(in, inout)` on the two buffers, through aligned copies when either is not
/// 16-byte aligned (the library's own buffers are byte vectors; C code expects its types'
/// alignment).
fn with_aligned(input: &[u8], inout: &mut [u8], call: impl FnOnce(*mut c_void, *mut c_void)) {
    if (input.as_ptr() as usize).is_multiple_of(16) && (inout.as_ptr() as usize).is_multiple_of(16) {
        call(input.as_ptr() as *mut c_void, inout.as_mut_ptr().cast());
    } else {
        let mut a = Aligned::copy_of(input);
        let mut b = Aligned::copy_of(inout);
        call(a.ptr(), b.ptr());
        b.copy_to(inout);
    }
}

pub unsafe fn MPI_Op_create(user_fn: MPI_User_function, commute: c_int, op: *mut MPI_Op) -> MpiResult {
    let Some(f) = user_fn else { return err(MPI_ERR_ARG, "invalid user function argument (NULL)") };
    if op.is_null() {
        return err(MPI_ERR_ARG, "invalid op pointer (NULL)");
    }
    let func = move |input: &[u8], inout: &mut [u8], el: op::Elements, dt: MPI_Datatype| {
        with_aligned(input, inout, |pa, pb| {
            // The C function takes an int count: call it on pieces of at most INT_MAX elements.
            let mut done = 0;
            while done < el.count {
                let n = (c_int::MAX as usize).min(el.count - done);
                let at = el.origin + (done * el.extent) as isize;
                let (mut len, mut dt) = (n as c_int, dt);
                // SAFETY: the user function reads `len` elements of `dt` whose origins start
                // `at` bytes from pa and updates them at pb; the buffers hold every byte those
                // elements' displacements reach (the origin itself may lie outside them, so the
                // pointer is formed with wrapping arithmetic and only dereferenced by C at data
                // bytes).
                unsafe { f(pa.wrapping_byte_offset(at), pb.wrapping_byte_offset(at), &mut len, &mut dt) }
                done += n;
            }
        });
    };
    let h = op::create(Box::new(func), commute != 0);
    // SAFETY: checked non-null.
    unsafe { *op = h };
    Ok(())
}

pub unsafe fn MPI_Op_create_c(user_fn: MPI_User_function_c, commute: c_int, op: *mut MPI_Op) -> MpiResult {
    let Some(f) = user_fn else { return err(MPI_ERR_ARG, "invalid user function argument (NULL)") };
    if op.is_null() {
        return err(MPI_ERR_ARG, "invalid op pointer (NULL)");
    }
    let func = move |input: &[u8], inout: &mut [u8], el: op::Elements, dt: MPI_Datatype| {
        with_aligned(input, inout, |pa, pb| {
            let (mut len, mut dt) = (el.count as MPI_Count, dt);
            // SAFETY: as in MPI_Op_create, with an MPI_Count length.
            unsafe { f(pa.wrapping_byte_offset(el.origin), pb.wrapping_byte_offset(el.origin), &mut len, &mut dt) }
        });
    };
    let h = op::create(Box::new(func), commute != 0);
    // SAFETY: checked non-null.
    unsafe { *op = h };
    Ok(())
}

pub unsafe fn MPI_Op_free(op: *mut MPI_Op) -> MpiResult {
    if op.is_null() {
        return err(MPI_ERR_ARG, "invalid op pointer (NULL)");
    }
    // SAFETY: checked non-null.
    let h = unsafe { *op };
    op::free(h)?;
    // SAFETY: checked non-null.
    unsafe { *op = MPI_OP_NULL };
    Ok(())
}

pub unsafe fn MPI_Op_commutative(op: MPI_Op, commute: *mut c_int) -> MpiResult {
    if commute.is_null() {
        return err(MPI_ERR_ARG, "invalid commute pointer (NULL)");
    }
    let c = Op::from_handle(op)?.is_commutative();
    // SAFETY: checked non-null.
    unsafe { *commute = c as c_int };
    Ok(())
}

pub unsafe fn MPI_Reduce_local_c(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    unsafe { reduce_local(inbuf, inoutbuf, count, datatype, op) }
}

/// # Safety
/// `inbuf` and `inoutbuf` hold `count` elements of `datatype` (C layout).
unsafe fn reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult {
    let op = Op::from_handle(op)?;
    if count < 0 {
        return err(MPI_ERR_COUNT, format!("invalid count argument (count={count})"));
    }
    let count = count as usize;
    let layout = datatype::layout(datatype)?;
    let red = Reduction::new(&op, datatype)?;
    let span = layout.span(count);
    if span == 0 {
        return Ok(());
    }
    if inbuf.is_null() || inoutbuf.is_null() || inbuf as isize == -1 || inoutbuf as isize == -1 {
        return err(MPI_ERR_BUFFER, "invalid buffer pointer (NULL or MPI_IN_PLACE with a nonzero count)");
    }
    let (a, b) = (inbuf as usize, inoutbuf as usize);
    if a < b + span && b < a + span {
        return err(MPI_ERR_BUFFER, "input and input/output buffers must not overlap (aliased buffers)");
    }
    // The data of `count` elements starts at `lower` from each pointer (derived types may
    // have a nonzero true lower bound).
    let lo = layout.lower(count);
    let (inbuf, inoutbuf) = (inbuf.cast::<u8>().wrapping_offset(lo), inoutbuf.cast::<u8>().wrapping_offset(lo));
    // SAFETY: the caller guarantees both buffers span `count` elements; they do not overlap
    // (checked above).
    let (input, inout) = unsafe {
        (
            std::slice::from_raw_parts(inbuf.cast::<u8>(), span),
            std::slice::from_raw_parts_mut(inoutbuf.cast::<u8>(), span),
        )
    };
    op::reduce_local(&red, count, input, inout);
    Ok(())
}

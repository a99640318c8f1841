//! ABI side of error handlers and error classes/codes/strings: pointer decoding and argument
//! checks only; the behaviour is in `crate::errhandler`.

use crate::abi::consts::*;
use crate::abi::ctypes::{MPI_Comm_errhandler_function, MPI_File, MPI_File_errhandler_function};
use crate::abi::types::{MPI_Comm, MPI_Errhandler, MPI_Fint};
use crate::errhandler::{self, HandlerKind};
use crate::error::{MpiResult, err};
use std::ffi::{CStr, c_char, c_int};

fn check_comm(comm: MPI_Comm) -> MpiResult {
    if comm == MPI_COMM_NULL {
        return err(MPI_ERR_COMM, "null communicator (comm=MPI_COMM_NULL)");
    }
    if !crate::comm::is_valid(comm) {
        return err(MPI_ERR_COMM, format!("invalid communicator (comm=0x{comm:08x})"));
    }
    Ok(())
}

/// Rejects a null output pointer named `what`.
pub(super) fn check_out<T>(p: *const T, what: &str) -> MpiResult {
    if p.is_null() { err(MPI_ERR_ARG, format!("null pointer in argument {what}")) } else { Ok(()) }
}

/// Stores `v` into C's output argument.
///
/// # Safety
/// `p` is null (rejected) or valid for a write of `T`.
pub(super) unsafe fn put<T>(p: *mut T, v: T, what: &str) -> MpiResult {
    check_out(p, what)?;
    // SAFETY: non-null, and the caller promises it is valid for writes.
    unsafe { p.write(v) };
    Ok(())
}

/// # Safety
/// `errhandler` is null or valid for a write.
pub unsafe fn MPI_Comm_create_errhandler(
    comm_errhandler_fn: MPI_Comm_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> MpiResult {
    check_out(errhandler, "errhandler")?;
    let Some(f) = comm_errhandler_fn else {
        return err(MPI_ERR_ARG, "null function pointer in argument comm_errhandler_fn");
    };
    // MPI_Comm is c_int, so `void (MPI_Comm *, int *, ...)` is already the registry's shape.
    let eh = errhandler::create(HandlerKind::Comm, f)?;
    // SAFETY: checked non-null above; the caller promises validity.
    unsafe { put(errhandler, eh, "errhandler") }
}

/// MPI-1 name of `MPI_Comm_create_errhandler`.
///
/// # Safety
/// As `MPI_Comm_create_errhandler`.
pub unsafe fn MPI_Errhandler_create(
    comm_errhandler_fn: MPI_Comm_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> MpiResult {
    // SAFETY: same contract.
    unsafe { MPI_Comm_create_errhandler(comm_errhandler_fn, errhandler) }
}

pub fn MPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> MpiResult {
    check_comm(comm)?;
    errhandler::check(errhandler, HandlerKind::Comm)?;
    errhandler::set_comm_errhandler(comm, errhandler);
    Ok(())
}

/// MPI-1 name of `MPI_Comm_set_errhandler`.
pub fn MPI_Errhandler_set(comm: MPI_Comm, errhandler: MPI_Errhandler) -> MpiResult {
    MPI_Comm_set_errhandler(comm, errhandler)
}

/// # Safety
/// `errhandler` is null or valid for a write.
pub unsafe fn MPI_Comm_get_errhandler(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> MpiResult {
    check_comm(comm)?;
    check_out(errhandler, "errhandler")?;
    // SAFETY: checked non-null; the caller promises validity.
    unsafe { put(errhandler, errhandler::get_comm_errhandler(comm), "errhandler") }
}

/// MPI-1 name of `MPI_Comm_get_errhandler`.
///
/// # Safety
/// As `MPI_Comm_get_errhandler`.
pub unsafe fn MPI_Errhandler_get(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> MpiResult {
    // SAFETY: same contract.
    unsafe { MPI_Comm_get_errhandler(comm, errhandler) }
}

/// # Safety
/// `errhandler` is null or valid for reads and writes.
pub unsafe fn MPI_Errhandler_free(errhandler: *mut MPI_Errhandler) -> MpiResult {
    check_out(errhandler, "errhandler")?;
    // SAFETY: checked non-null; the caller promises validity.
    let eh = unsafe { errhandler.read() };
    errhandler::free(eh)?;
    // SAFETY: as above.
    unsafe { put(errhandler, MPI_ERRHANDLER_NULL, "errhandler") }
}

pub fn MPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) -> MpiResult {
    check_comm(comm)?;
    errhandler::call_comm_errhandler(comm, errorcode)
}

/// MPI_ERR_FILE unless `file` is MPI_FILE_NULL (whose handler is the default of files) or
/// an open file.
fn check_file(file: MPI_File) -> MpiResult {
    if file.is_null() || crate::io::file::is_valid(file as usize) {
        return Ok(());
    }
    err(MPI_ERR_FILE, format!("invalid file handle ({file:p})"))
}

/// # Safety
/// `errhandler` is null or valid for a write.
pub unsafe fn MPI_File_create_errhandler(
    file_errhandler_fn: MPI_File_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> MpiResult {
    check_out(errhandler, "errhandler")?;
    let Some(f) = file_errhandler_fn else {
        return err(MPI_ERR_ARG, "null function pointer in argument file_errhandler_fn");
    };
    // SAFETY: only the type of the first pointer argument changes (`MPI_File *` for
    // `int *`); the registry calls file handlers with the address of an `MPI_File`.
    let f = unsafe {
        std::mem::transmute::<
            unsafe extern "C" fn(*mut MPI_File, *mut c_int, ...),
            unsafe extern "C" fn(*mut c_int, *mut c_int, ...),
        >(f)
    };
    let eh = errhandler::create(HandlerKind::File, f)?;
    // SAFETY: checked non-null above; the caller promises validity.
    unsafe { put(errhandler, eh, "errhandler") }
}

pub fn MPI_File_set_errhandler(file: MPI_File, errhandler: MPI_Errhandler) -> MpiResult {
    check_file(file)?;
    errhandler::check(errhandler, HandlerKind::File)?;
    errhandler::set_file_errhandler(file as usize, errhandler);
    Ok(())
}

/// # Safety
/// `errhandler` is null or valid for a write.
pub unsafe fn MPI_File_get_errhandler(file: MPI_File, errhandler: *mut MPI_Errhandler) -> MpiResult {
    check_file(file)?;
    check_out(errhandler, "errhandler")?;
    // SAFETY: checked non-null; the caller promises validity.
    unsafe { put(errhandler, errhandler::get_file_errhandler(file as usize), "errhandler") }
}

pub fn MPI_File_call_errhandler(fh: MPI_File, errorcode: c_int) -> MpiResult {
    check_file(fh)?;
    errhandler::call_file_errhandler(fh.cast(), errorcode)
}

/// # Safety
/// `errorclass` is null or valid for a write.
pub unsafe fn MPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> MpiResult {
    check_out(errorclass, "errorclass")?;
    let class = errhandler::error_class(errorcode)?;
    // SAFETY: checked non-null; the caller promises validity.
    unsafe { put(errorclass, class, "errorclass") }
}

/// # Safety
/// `string` is null or valid for `MPI_MAX_ERROR_STRING` bytes; `resultlen` null or writable.
pub unsafe fn MPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> MpiResult {
    check_out(string, "string")?;
    check_out(resultlen, "resultlen")?;
    let mut text = String::new();
    errhandler::error_string(errorcode, &mut text);
    // SAFETY: the standard sizes `string` at MPI_MAX_ERROR_STRING bytes.
    let len = unsafe { write_c_string(&text, string, MPI_MAX_ERROR_STRING as usize) };
    // SAFETY: checked non-null; the caller promises validity.
    unsafe { put(resultlen, len as c_int, "resultlen") }
}

/// Copies `text` into the C buffer `dst` of `cap` bytes, truncated on a UTF-8 boundary so it
/// fits with its NUL; returns the length written without the NUL.
///
/// # Safety
/// `dst` is valid for writes of `cap` bytes, `cap > 0`.
pub unsafe fn write_c_string(text: &str, dst: *mut c_char, cap: usize) -> usize {
    let mut len = text.len().min(cap - 1);
    while !text.is_char_boundary(len) {
        len -= 1;
    }
    // SAFETY: `len + 1 <= cap` bytes, which the caller guarantees are writable; the source is
    // a live `&str` that cannot overlap C's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), dst.cast::<u8>(), len);
        *dst.add(len) = 0;
    }
    len
}

/// # Safety
/// `errorclass` is null or valid for a write.
pub unsafe fn MPI_Add_error_class(errorclass: *mut c_int) -> MpiResult {
    check_out(errorclass, "errorclass")?;
    let class = errhandler::add_error_class()?;
    // SAFETY: checked non-null; the caller promises validity.
    unsafe { put(errorclass, class, "errorclass") }
}

/// # Safety
/// `errorcode` is null or valid for a write.
pub unsafe fn MPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> MpiResult {
    check_out(errorcode, "errorcode")?;
    let code = errhandler::add_error_code(errorclass)?;
    // SAFETY: checked non-null; the caller promises validity.
    unsafe { put(errorcode, code, "errorcode") }
}

/// # Safety
/// `string` is null or a NUL-terminated C string.
pub unsafe fn MPI_Add_error_string(errorcode: c_int, string: *const c_char) -> MpiResult {
    check_out(string, "string")?;
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(string) };
    let Ok(s) = s.to_str() else {
        return err(MPI_ERR_ARG, "error string is not valid UTF-8");
    };
    errhandler::add_error_string(errorcode, s)
}

pub fn MPIX_Delete_error_class(errorclass: c_int) -> MpiResult {
    errhandler::delete_error_class(errorclass)
}

pub fn MPIX_Delete_error_code(errorcode: c_int) -> MpiResult {
    errhandler::delete_error_code(errorcode)
}

pub fn MPIX_Delete_error_string(errorcode: c_int) -> MpiResult {
    errhandler::delete_error_string(errorcode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_string_writes_a_c_string() {
        let mut buf = [1 as c_char; MPI_MAX_ERROR_STRING as usize];
        let mut len = -1;
        // SAFETY: the buffer has MPI_MAX_ERROR_STRING bytes; `len` is a live local.
        unsafe { MPI_Error_string(MPI_ERR_TRUNCATE, buf.as_mut_ptr(), &mut len) }.unwrap();
        // SAFETY: MPI_Error_string NUL-terminated the buffer.
        let s = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
        assert_eq!(len as usize, s.len());
        assert!(!s.is_empty());
    }

    #[test]
    fn truncates_on_a_char_boundary() {
        let mut buf = [0 as c_char; 4];
        // SAFETY: 4 writable bytes.
        let n = unsafe { write_c_string("aéé", buf.as_mut_ptr(), 4) };
        assert_eq!(n, 3);
        assert_eq!(buf[3], 0);
    }

    #[test]
    fn invalid_communicators_are_rejected() {
        assert_eq!(MPI_Comm_set_errhandler(MPI_COMM_NULL, MPI_ERRORS_RETURN).unwrap_err().code, MPI_ERR_COMM);
        assert_eq!(MPI_Comm_set_errhandler(0x1234, MPI_ERRORS_RETURN).unwrap_err().code, MPI_ERR_COMM);
        // Before MPI_Init even MPI_COMM_WORLD is not valid yet.
        assert!(MPI_Comm_set_errhandler(MPI_COMM_WORLD, 0x1234).is_err());
    }
}

/// Fortran file handles: an MPI_File's value (`crate::io::file` keeps them below 2^31), and
/// MPI_FILE_NULL is 0 in both languages. Other values cross unchanged and are rejected as
/// invalid files (MPI_ERR_FILE) wherever they are used.
pub fn MPI_File_c2f(file: MPI_File) -> MPI_Fint {
    file as usize as MPI_Fint
}

pub fn MPI_File_f2c(file: MPI_Fint) -> MPI_File {
    file as isize as usize as MPI_File
}

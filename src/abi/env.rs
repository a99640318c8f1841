//! Inquiry functions that MPI allows before `MPI_Init`: versions, processor name, clocks,
//! address arithmetic and the GPU-support queries.

use crate::abi::consts::*;
use crate::abi::errors::write_c_string;
use crate::abi::types::MPI_Aint;
use crate::error::{MpiResult, err};
use std::ffi::{c_char, c_int};

/// The text of `MPI_Get_library_version`.
pub fn library_version() -> String {
    format!("oxmpi {} (MPICH ABI 4.0.2 compatible)", env!("CARGO_PKG_VERSION"))
}

fn check_out<T>(p: *const T, what: &str) -> MpiResult {
    if p.is_null() { err(MPI_ERR_ARG, format!("null pointer in argument {what}")) } else { Ok(()) }
}

/// # Safety
/// `version` and `subversion` are null or valid for writes.
pub unsafe fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> MpiResult {
    check_out(version, "version")?;
    check_out(subversion, "subversion")?;
    // SAFETY: both non-null; the caller promises they are writable.
    unsafe {
        version.write(MPI_VERSION);
        subversion.write(MPI_SUBVERSION);
    }
    Ok(())
}

/// # Safety
/// `version` is null or valid for `MPI_MAX_LIBRARY_VERSION_STRING` bytes; `resultlen` null or
/// writable.
pub unsafe fn MPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> MpiResult {
    check_out(version, "version")?;
    check_out(resultlen, "resultlen")?;
    // SAFETY: the standard sizes the buffer at MPI_MAX_LIBRARY_VERSION_STRING bytes.
    let n = unsafe { write_c_string(&library_version(), version, MPI_MAX_LIBRARY_VERSION_STRING as usize) };
    // SAFETY: non-null; the caller promises it is writable.
    unsafe { resultlen.write(n as c_int) };
    Ok(())
}

/// This host's name, as `gethostname` reports it.
pub fn processor_name() -> MpiResult<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is what we pass.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return err(MPI_ERR_OTHER, format!("gethostname failed: {}", std::io::Error::last_os_error()));
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// # Safety
/// `name` is null or valid for `MPI_MAX_PROCESSOR_NAME` bytes; `resultlen` null or writable.
pub unsafe fn MPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> MpiResult {
    check_out(name, "name")?;
    check_out(resultlen, "resultlen")?;
    let host = processor_name()?;
    // SAFETY: the standard sizes the buffer at MPI_MAX_PROCESSOR_NAME bytes (NUL included).
    let n = unsafe { write_c_string(&host, name, MPI_MAX_PROCESSOR_NAME as usize) };
    // SAFETY: non-null; the caller promises it is writable.
    unsafe { resultlen.write(n as c_int) };
    Ok(())
}

/// Seconds on the monotonic clock: never jumps with wall-clock changes.
pub fn MPI_Wtime() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a live, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The resolution of `MPI_Wtime`.
pub fn MPI_Wtick() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a live, writable timespec.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 1e-9;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Addresses are plain byte offsets in this ABI, so the arithmetic wraps like C's.
pub fn MPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

pub fn MPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}

/// `MPI_Pcontrol(level, ...)`: a hook for profiling libraries, which interpose `MPI_Pcontrol`;
/// without one the standard gives it no effect. The variadic arguments are not read.
pub fn MPI_Pcontrol(_level: c_int) -> MpiResult {
    Ok(())
}

/// oxmpi has no GPU-aware transport: no buffer may live in device memory.
pub fn MPIX_Query_cuda_support() -> c_int {
    0
}

pub fn MPIX_Query_hip_support() -> c_int {
    0
}

pub fn MPIX_Query_ze_support() -> c_int {
    0
}

/// # Safety
/// `is_supported` is null or valid for a write.
pub unsafe fn MPIX_GPU_query_support(gpu_type: c_int, is_supported: *mut c_int) -> MpiResult {
    check_out(is_supported, "is_supported")?;
    if ![MPIX_GPU_SUPPORT_CUDA, MPIX_GPU_SUPPORT_ZE, MPIX_GPU_SUPPORT_HIP].contains(&gpu_type) {
        return err(MPI_ERR_ARG, format!("invalid gpu_type argument (gpu_type={gpu_type})"));
    }
    // SAFETY: non-null; the caller promises it is writable.
    unsafe { is_supported.write(0) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn versions_and_names() {
        let (mut v, mut s) = (0, -1);
        // SAFETY: live locals.
        unsafe { MPI_Get_version(&mut v, &mut s) }.unwrap();
        assert_eq!((v, s), (4, 0));
        let mut buf = vec![0 as c_char; MPI_MAX_LIBRARY_VERSION_STRING as usize];
        let mut len = 0;
        // SAFETY: buffer of the size the standard requires; live local.
        unsafe { MPI_Get_library_version(buf.as_mut_ptr(), &mut len) }.unwrap();
        // SAFETY: NUL-terminated by the call.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
        assert!(text.starts_with("oxmpi ") && text.len() == len as usize, "{text}");
        let mut name = vec![0 as c_char; MPI_MAX_PROCESSOR_NAME as usize];
        // SAFETY: as above.
        unsafe { MPI_Get_processor_name(name.as_mut_ptr(), &mut len) }.unwrap();
        assert!(len > 0 && len < MPI_MAX_PROCESSOR_NAME);
    }

    #[test]
    fn clocks_move_forward() {
        let a = MPI_Wtime();
        let b = MPI_Wtime();
        assert!(b >= a);
        let tick = MPI_Wtick();
        assert!(tick > 0.0 && tick < 1e-3);
        assert_eq!(MPI_Aint_diff(MPI_Aint_add(100, 28), 100), 28);
    }
}

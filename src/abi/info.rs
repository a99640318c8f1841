//! Info entry points: decode handles and strings, check them as MPICH does, call `crate::info`.

use super::consts::*;
use super::types::*;
use crate::error::{MpiResult, err};
use crate::info::{self, Info};
use std::ffi::{CStr, c_char, c_int};

fn non_null<T>(p: *const T, what: &str) -> MpiResult<()> {
    if p.is_null() { err(MPI_ERR_ARG, format!("null pointer in parameter {what}")) } else { Ok(()) }
}

/// A C string argument as Rust text.
///
/// # Safety
/// `p` is null or NUL-terminated.
unsafe fn text(p: *const c_char, what: &str) -> MpiResult<String> {
    non_null(p, what)?;
    // SAFETY: non-null and NUL-terminated (caller contract).
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// A checked info key argument.
///
/// # Safety
/// `p` is null or NUL-terminated.
unsafe fn key_arg(p: *const c_char) -> MpiResult<String> {
    // SAFETY: forwarded contract.
    let key = unsafe { text(p, "key") }?;
    info::check_key(&key)?;
    Ok(key)
}

/// Writes the first `n` bytes of `s` and a NUL to `dst`.
///
/// # Safety
/// `dst` has room for `n + 1` bytes, `n <= s.len()`.
unsafe fn write_truncated(s: &str, n: usize, dst: *mut c_char) {
    // SAFETY: caller contract.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), n);
        *dst.add(n) = 0;
    }
}

pub unsafe fn MPI_Info_create(info: *mut MPI_Info) -> MpiResult {
    non_null(info, "info")?;
    let h = info::insert(Info::default())?;
    // SAFETY: checked non-null.
    unsafe { *info = h };
    Ok(())
}

/// MPI_Info_create_env: a copy of MPI_INFO_ENV (the arguments describe the same program).
pub unsafe fn MPI_Info_create_env(_argc: c_int, _argv: *mut *mut c_char, info: *mut MPI_Info) -> MpiResult {
    non_null(info, "info")?;
    let h = info::insert(info::get_or_empty(MPI_INFO_ENV)?)?;
    // SAFETY: checked non-null.
    unsafe { *info = h };
    Ok(())
}

pub unsafe fn MPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) -> MpiResult {
    // SAFETY: C passes NUL-terminated strings.
    let (key, value) = unsafe { (key_arg(key)?, text(value, "value")?) };
    info::check_value(&value)?;
    info::with(info, |i| {
        i.set(&key, &value);
        Ok(())
    })
}

pub unsafe fn MPI_Info_delete(info: MPI_Info, key: *const c_char) -> MpiResult {
    // SAFETY: C passes a NUL-terminated string.
    let key = unsafe { key_arg(key) }?;
    info::with(info, |i| i.delete(&key))
}

/// MPI_Info_get (deprecated in MPI-4): copies at most `valuelen` characters and a NUL.
pub unsafe fn MPI_Info_get(
    info: MPI_Info,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> MpiResult {
    // SAFETY: C passes a NUL-terminated string.
    let key = unsafe { key_arg(key) }?;
    if valuelen < 0 {
        return err(MPI_ERR_ARG, format!("invalid value for valuelen, must be non-negative but is {valuelen}"));
    }
    non_null(value, "value")?;
    non_null(flag, "flag")?;
    let found = info::with(info, |i| Ok(i.get(&key).map(str::to_string)))?;
    // SAFETY: flag checked non-null; value has room for valuelen + 1 bytes (MPI's contract).
    unsafe {
        *flag = found.is_some() as c_int;
        if let Some(v) = found {
            write_truncated(&v, v.len().min(valuelen as usize), value);
        }
    }
    Ok(())
}

/// MPI_Info_get_string: copies at most `*buflen - 1` characters and a NUL; `*buflen` becomes
/// the length of the value plus one.
pub unsafe fn MPI_Info_get_string(
    info: MPI_Info,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> MpiResult {
    // SAFETY: C passes a NUL-terminated string.
    let key = unsafe { key_arg(key) }?;
    non_null(buflen, "buflen")?;
    non_null(flag, "flag")?;
    // SAFETY: checked non-null.
    let room = unsafe { *buflen };
    if room < 0 {
        return err(MPI_ERR_ARG, format!("invalid value for buflen, must be non-negative but is {room}"));
    }
    if room > 0 {
        non_null(value, "value")?;
    }
    let found = info::with(info, |i| Ok(i.get(&key).map(str::to_string)))?;
    // SAFETY: buflen and flag checked non-null; value has room for `room` bytes.
    unsafe {
        *flag = found.is_some() as c_int;
        if let Some(v) = found {
            if room > 0 {
                write_truncated(&v, v.len().min(room as usize - 1), value);
            }
            *buflen = v.len() as c_int + 1;
        }
    }
    Ok(())
}

pub unsafe fn MPI_Info_get_valuelen(
    info: MPI_Info,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> MpiResult {
    // SAFETY: C passes a NUL-terminated string.
    let key = unsafe { key_arg(key) }?;
    non_null(valuelen, "valuelen")?;
    non_null(flag, "flag")?;
    let len = info::with(info, |i| Ok(i.get(&key).map(str::len)))?;
    // SAFETY: checked non-null.
    unsafe {
        *flag = len.is_some() as c_int;
        if let Some(n) = len {
            *valuelen = n as c_int;
        }
    }
    Ok(())
}

pub unsafe fn MPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) -> MpiResult {
    let n = info::with(info, |i| Ok(i.entries.len()))?;
    non_null(nkeys, "nkeys")?;
    // SAFETY: checked non-null.
    unsafe { *nkeys = n as c_int };
    Ok(())
}

pub unsafe fn MPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> MpiResult {
    non_null(key, "key")?;
    let k = info::with(info, |i| Ok(i.nth_key(n)?.to_string()))?;
    // SAFETY: checked non-null; MPI requires room for MPI_MAX_INFO_KEY characters and keys
    // are at most that long (checked when set).
    unsafe { write_truncated(&k, k.len(), key) };
    Ok(())
}

pub unsafe fn MPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> MpiResult {
    let copy = info::with(info, |i| Ok(i.clone()))?;
    non_null(newinfo, "newinfo")?;
    let h = info::insert(copy)?;
    // SAFETY: checked non-null.
    unsafe { *newinfo = h };
    Ok(())
}

pub unsafe fn MPI_Info_free(info: *mut MPI_Info) -> MpiResult {
    non_null(info, "info")?;
    // SAFETY: checked non-null.
    info::free(unsafe { *info })?;
    // SAFETY: checked non-null.
    unsafe { *info = MPI_INFO_NULL };
    Ok(())
}

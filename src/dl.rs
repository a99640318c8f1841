//! Shared objects opened at run time (libfabric, libpmix): `dlopen`, `dlsym` and `dlerror`,
//! so that the library loads, and runs what does not need them, on machines without them.

use std::ffi::{CStr, c_void};

/// dlerror's text, on one line.
pub fn last_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl* call on
    // this thread; it is copied before any other call.
    let text = unsafe {
        let message = libc::dlerror();
        if message.is_null() {
            String::from("no error text")
        } else {
            CStr::from_ptr(message).to_string_lossy().into_owned()
        }
    };
    text.replace('\n', " ")
}

/// Opens `library` (never closed: the handle lives as long as the process); the error is
/// dlerror's text.
pub fn open(library: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: `library` is NUL-terminated. Loading runs the library's constructors, which for
    // the libraries opened here only initialise their own state.
    let handle = unsafe { libc::dlopen(library.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() { Err(last_error()) } else { Ok(handle) }
}

/// Resolves `name` in `handle` as a function pointer of type `F` (an `Option<unsafe extern
/// "C" fn ...>` of generated bindings); the error is dlerror's text.
///
/// # Safety
/// `handle` must come from `open`, and `F` must be the C type of symbol `name`.
pub unsafe fn symbol<F: Copy>(handle: *mut c_void, name: &CStr) -> Result<F, String> {
    const { assert!(size_of::<F>() == size_of::<*mut c_void>()) };
    // SAFETY: the caller passes a live handle; `name` is NUL-terminated.
    let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
    if address.is_null() {
        return Err(last_error());
    }
    // SAFETY: `F` is an optional function pointer (same size as a data pointer, checked above)
    // and the caller guarantees it is the type of the symbol found at `address`.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
}

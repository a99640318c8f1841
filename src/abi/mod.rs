//! The C ABI edge (MPICH's ABI): handle and struct types, constants, and the entry points.
//! This layer only translates; behaviour lives in the modules below it.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::missing_safety_doc)]

pub mod consts {
    //! Every integer constant of MPICH's ABI, generated from `src/abi/data/mpich-abi.tsv`.
    #![allow(non_upper_case_globals)]
    include!(concat!(env!("OUT_DIR"), "/consts.rs"));
}
pub mod comm;
pub mod datatype;
pub mod init;
pub mod p2p;
pub mod types;

/// Copies `s` into a C buffer of `cap` bytes as a NUL-terminated string (truncated to fit)
/// and stores its length in `resultlen`.
///
/// # Safety
/// `dst` has room for `cap` bytes; `resultlen` is writable.
pub unsafe fn write_c_string(s: &str, dst: *mut std::ffi::c_char, cap: usize, resultlen: *mut std::ffi::c_int) {
    let bytes = &s.as_bytes()[..s.len().min(cap.saturating_sub(1))];
    // SAFETY: bytes.len() + 1 <= cap (caller contract).
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, bytes.len());
        *dst.add(bytes.len()) = 0;
        *resultlen = bytes.len() as std::ffi::c_int;
    }
}

//! Data objects and helper functions that libmpich exports besides the MPI functions, with
//! MPICH's symbol kind and size: programs built against MPICH copy-relocate the data objects,
//! so a different `st_size` would break them (see NOTES.md §6).

use crate::abi::consts::*;
use crate::abi::ctypes::MPI_F08_status;
use crate::abi::types::{MPI_Comm, MPI_Fint, MPI_Status};
use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicPtr};

/// A pointer that never changes after link time; C sees a `T * const`.
#[repr(transparent)]
pub struct ConstPtr<T>(*mut T);
// SAFETY: the pointer is immutable and only its value (an address) is shared.
unsafe impl<T> Sync for ConstPtr<T> {}

impl<T> ConstPtr<T> {
    pub fn get(&self) -> *mut T {
        self.0
    }
}

/// Storage that C code may write (Fortran status objects); Rust only takes its address.
#[repr(transparent)]
pub struct CObject<T>(UnsafeCell<T>);
// SAFETY: Rust never reads or writes the contents; C accesses them under MPI's own rules.
unsafe impl<T> Sync for CObject<T> {}

impl<T> CObject<T> {
    pub fn as_ptr(&self) -> *mut T {
        self.0.get()
    }
}

const ZERO_STATUS: MPI_Status =
    MPI_Status { count_lo: 0, count_hi_and_cancelled: 0, MPI_SOURCE: 0, MPI_TAG: 0, MPI_ERROR: 0 };

/// What `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` point at: only the addresses matter.
static UNWEIGHTED_TARGET: c_int = 0;
static WEIGHTS_EMPTY_TARGET: c_int = 0;
/// What `MPI_T_PVAR_ALL_HANDLES` points at.
static PVAR_ALL_HANDLES_TARGET: u8 = 0;

#[unsafe(no_mangle)]
pub static MPI_UNWEIGHTED: ConstPtr<c_int> = ConstPtr((&raw const UNWEIGHTED_TARGET).cast_mut());
#[unsafe(no_mangle)]
pub static MPI_WEIGHTS_EMPTY: ConstPtr<c_int> = ConstPtr((&raw const WEIGHTS_EMPTY_TARGET).cast_mut());
#[unsafe(no_mangle)]
pub static MPI_T_PVAR_ALL_HANDLES: ConstPtr<c_void> = ConstPtr((&raw const PVAR_ALL_HANDLES_TARGET).cast_mut().cast());

/// Null until a Fortran binding stores the address of its status common block.
#[unsafe(no_mangle)]
pub static MPI_F_STATUS_IGNORE: AtomicPtr<MPI_Fint> = AtomicPtr::new(std::ptr::null_mut());
#[unsafe(no_mangle)]
pub static MPI_F_STATUSES_IGNORE: AtomicPtr<MPI_Fint> = AtomicPtr::new(std::ptr::null_mut());
/// Set by a Fortran binding (MPICH's libmpichfort writes them): the C view of the Fortran
/// MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY common blocks.
#[unsafe(no_mangle)]
pub static MPIR_C_MPI_UNWEIGHTED: AtomicPtr<c_int> = AtomicPtr::new(std::ptr::null_mut());
#[unsafe(no_mangle)]
pub static MPIR_C_MPI_WEIGHTS_EMPTY: AtomicPtr<c_int> = AtomicPtr::new(std::ptr::null_mut());

/// The objects whose addresses `use mpi_f08` passes for MPI_STATUS(ES)_IGNORE.
#[unsafe(no_mangle)]
pub static MPIR_F08_MPI_STATUS_IGNORE_OBJ: CObject<MPI_F08_status> = CObject(UnsafeCell::new(ZERO_STATUS));
#[unsafe(no_mangle)]
pub static MPIR_F08_MPI_STATUSES_IGNORE_OBJ: CObject<[MPI_F08_status; 1]> = CObject(UnsafeCell::new([ZERO_STATUS]));
/// The objects whose addresses `use mpi_f08` passes for MPI_IN_PLACE / MPI_BOTTOM.
#[unsafe(no_mangle)]
pub static MPIR_F08_MPI_IN_PLACE: AtomicI32 = AtomicI32::new(0);
#[unsafe(no_mangle)]
pub static MPIR_F08_MPI_BOTTOM: AtomicI32 = AtomicI32::new(0);

/// `MPI_F08_STATUS(ES)_IGNORE`: writable pointers (as in MPICH) to the objects above.
#[unsafe(no_mangle)]
pub static MPI_F08_STATUS_IGNORE: AtomicPtr<MPI_F08_status> = AtomicPtr::new(MPIR_F08_MPI_STATUS_IGNORE_OBJ.0.get());
#[unsafe(no_mangle)]
pub static MPI_F08_STATUSES_IGNORE: AtomicPtr<MPI_F08_status> =
    AtomicPtr::new(MPIR_F08_MPI_STATUSES_IGNORE_OBJ.0.get().cast());

/// Version strings that `mpichversion`-style tools read. The ABI string is MPICH's libtool
/// version of the interface we implement; the others describe oxmpi.
#[unsafe(no_mangle)]
pub static MPII_Version_ABI: [u8; 7] = *b"14:2:2\0";
#[unsafe(no_mangle)]
pub static MPII_Version_string: [u8; VERSION.len() + 1] = nul_terminated(VERSION);
#[unsafe(no_mangle)]
pub static MPII_Version_date: [u8; 1] = [0];
#[unsafe(no_mangle)]
pub static MPII_Version_device: [u8; DEVICE.len() + 1] = nul_terminated(DEVICE);
#[unsafe(no_mangle)]
pub static MPII_Version_configure: [u8; 1] = [0];
#[unsafe(no_mangle)]
pub static MPII_Version_custom: [u8; 1] = [0];
#[unsafe(no_mangle)]
pub static MPII_Version_CC: [u8; 1] = [0];
#[unsafe(no_mangle)]
pub static MPII_Version_CXX: [u8; 1] = [0];
#[unsafe(no_mangle)]
pub static MPII_Version_F77: [u8; 1] = [0];
#[unsafe(no_mangle)]
pub static MPII_Version_FC: [u8; 1] = [0];

const VERSION: &str = env!("CARGO_PKG_VERSION");
const DEVICE: &str = "oxmpi";

const fn nul_terminated<const N: usize>(s: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        out[i] = b[i];
        i += 1;
    }
    out
}

/// `MPI_*_DUP_FN`: copies the attribute value and says it was copied.
///
/// # Safety
/// `attribute_val_out` points to a writable `void *`; `flag` to a writable `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _oldcomm: MPI_Comm,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: MPI's copy-callback contract: the library passes a `void **` as
    // `attribute_val_out` and a valid `int *` as `flag`.
    unsafe {
        attribute_val_out.cast::<*mut c_void>().write(attribute_val_in);
        flag.write(1);
    }
    MPI_SUCCESS
}

/// `int MPIR_Err_create_code(int lastcode, int fatal, const char fcname[], int line,
/// int error_class, const char generic_msg[], const char specific_msg[], ...)`: codes are
/// plain classes in oxmpi, so the new code is the class (MPI_SUCCESS stays MPI_SUCCESS).
#[unsafe(no_mangle)]
pub extern "C" fn MPIR_Err_create_code(
    _lastcode: c_int,
    _fatal: c_int,
    _fcname: *const c_char,
    _line: c_int,
    error_class: c_int,
) -> c_int {
    error_class
}

/// Reads the C function name MPICH's bindings pass, for messages.
///
/// # Safety
/// `fcname` is null or a NUL-terminated string.
unsafe fn fn_name(fcname: *const c_char) -> String {
    if fcname.is_null() {
        return "MPI function".to_string();
    }
    // SAFETY: non-null and NUL-terminated per the caller's contract.
    unsafe { std::ffi::CStr::from_ptr(fcname) }.to_string_lossy().into_owned()
}

/// `int MPIR_Err_return_comm(MPIR_Comm *comm_ptr, const char fcname[], int errcode)`, which
/// MPICH's Fortran and C++ bindings call to report an error. The internal communicator pointer
/// means nothing here, so the error goes to MPI_COMM_WORLD's handler.
///
/// # Safety
/// `fcname` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPIR_Err_return_comm(_comm_ptr: *mut c_void, fcname: *const c_char, errcode: c_int) -> c_int {
    if errcode == MPI_SUCCESS {
        return MPI_SUCCESS;
    }
    // SAFETY: forwarded contract.
    let name = unsafe { fn_name(fcname) };
    let mut text = String::new();
    crate::errhandler::error_string(errcode, &mut text);
    crate::errhandler::raise(&name, None, crate::error::MpiError::supplied(errcode, text))
}

/// `int MPIR_Err_return_win(MPIR_Win *win_ptr, const char fcname[], int errcode)`: as
/// `MPIR_Err_return_comm`.
///
/// # Safety
/// `fcname` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPIR_Err_return_win(win_ptr: *mut c_void, fcname: *const c_char, errcode: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { MPIR_Err_return_comm(win_ptr, fcname, errcode) }
}

/// Defines exported internal hooks of MPICH that oxmpi does not provide yet. Each reports
/// MPI_ERR_UNSUPPORTED_OPERATION; callers that declare them `void` ignore the value.
macro_rules! unsupported_hooks {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() -> c_int {
            log::error!(concat!(stringify!($name), " is not implemented yet in oxmpi"));
            MPI_ERR_UNSUPPORTED_OPERATION
        }
    )*};
}

unsupported_hooks! {
    /// MPICH: `void MPII_Errhandler_set_cxx(MPI_Errhandler, void (*)(void))`.
    MPII_Errhandler_set_cxx;
    /// MPICH: `void MPII_Op_set_cxx(MPI_Op, void (*)(void))`.
    MPII_Op_set_cxx;
    /// MPICH: `int QMPI_Register_tool_name(const char *, void (*)(int))`.
    QMPI_Register_tool_name;
    /// MPICH: `int QMPI_Register_tool_storage(int tool_id, void *storage)`.
    QMPI_Register_tool_storage;
    /// MPICH: `int QMPI_Register_function(int tool_id, enum QMPI_Functions_enum, void (*)(void))`.
    QMPI_Register_function;
    /// MPICH: `int QMPI_Get_function(int tool_id, enum QMPI_Functions_enum, void (**)(void), int *)`.
    QMPI_Get_function;
    /// MPICH: `int QMPI_Get_tool_storage(QMPI_Context, int tool_id, void **storage)`.
    QMPI_Get_tool_storage;
    /// MPICH: `int QMPI_Get_calling_address(QMPI_Context, void **address)`.
    QMPI_Get_calling_address;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dup_fn_copies_and_sets_flag() {
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut flag = 0;
        let value = 42usize as *mut c_void;
        // SAFETY: `out` and `flag` are live locals of the right types.
        let rc =
            unsafe { MPIR_Dup_fn(MPI_COMM_WORLD, 0, std::ptr::null_mut(), value, (&raw mut out).cast(), &mut flag) };
        assert_eq!((rc, out, flag), (MPI_SUCCESS, value, 1));
    }

    #[test]
    fn data_objects_have_mpich_sizes() {
        use std::mem::size_of_val;
        assert_eq!(size_of_val(&MPI_UNWEIGHTED), 8);
        assert_eq!(size_of_val(&MPI_F_STATUS_IGNORE), 8);
        assert_eq!(size_of_val(&MPIR_F08_MPI_STATUS_IGNORE_OBJ), 20);
        assert_eq!(size_of_val(&MPIR_F08_MPI_STATUSES_IGNORE_OBJ), 20);
        assert_eq!(size_of_val(&MPIR_F08_MPI_IN_PLACE), 4);
        assert_eq!(
            MPI_F08_STATUS_IGNORE.load(std::sync::atomic::Ordering::Relaxed),
            MPIR_F08_MPI_STATUS_IGNORE_OBJ.as_ptr()
        );
        assert!(!MPI_UNWEIGHTED.get().is_null());
        assert_ne!(MPI_UNWEIGHTED.get(), MPI_WEIGHTS_EMPTY.get());
    }
}

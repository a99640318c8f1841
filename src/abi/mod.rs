//! The C ABI edge (MPICH's ABI): handle and struct types, constants, and the entry points.
//! This layer only translates; behaviour lives in the modules below it.
//!
//! Every exported function is declared once, in `mpi.decl`. build.rs turns each declaration
//! into a `PMPI_X` entry point with a weak `MPI_X` alias (`entries`) and into the prototypes of
//! `include/mpi.h`. An entry calls `crate::abi::<module>::MPI_X` when a file `src/abi/<module>.rs`
//! defines `pub unsafe fn MPI_X(..) -> MpiResult` (same arguments, Rust-typed); otherwise it
//! reports MPI_ERR_UNSUPPORTED_OPERATION. An `int`-count function whose large-count twin
//! `MPI_X_c` differs only in scalar counts (`int` -> `MPI_Count`/`MPI_Aint`) needs no impl of
//! its own: its entry widens the counts and calls the `_c` impl. A family of functions that
//! differ only mechanically (blocking / `MPI_I...` / `..._init`, `int` / `_c` with arrays of
//! either width, the send modes) has one impl taking the arguments of `family` where the
//! members differ; build.rs generates each member's entry from it.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::missing_safety_doc)]

pub mod consts {
    //! Every integer constant of MPICH's ABI, generated from `src/abi/data/mpich-abi.tsv`.
    #![allow(non_upper_case_globals)]
    include!(concat!(env!("OUT_DIR"), "/consts.rs"));
}
pub mod types;

pub mod ctypes {
    //! The C types that entry points take besides `types`: opaque pointer handles, the
    //! tool-interface enums, and every callback type of `mpi.decl` as a nullable fn pointer.
    pub use super::types::*;
    // Generated callback signatures use any of these.
    #[allow(unused_imports)]
    use std::ffi::{c_char, c_int, c_void};

    /// Target of `MPI_File`; never dereferenced on the C side.
    #[repr(C)]
    pub struct ADIOI_FileD {
        _private: [u8; 0],
    }
    pub type MPI_File = *mut ADIOI_FileD;
    pub type MPIX_Grequest_class = c_int;
    /// `MPI_F08_status`: the same five fields as `MPI_Status`.
    pub type MPI_F08_status = MPI_Status;
    pub type MPI_T_enum = *mut c_void;
    pub type MPI_T_cvar_handle = *mut c_void;
    pub type MPI_T_pvar_handle = *mut c_void;
    pub type MPI_T_pvar_session = *mut c_void;
    pub type MPI_T_event_registration = *mut c_void;
    pub type MPI_T_event_instance = *mut c_void;
    /// C enums; their values fit an `int`, which is how x86-64 passes them.
    pub type MPI_T_cb_safety = c_int;
    pub type MPI_T_source_order = c_int;

    include!(concat!(env!("OUT_DIR"), "/callbacks.rs"));
}

pub mod entry;
pub mod env;
pub mod errors;
pub mod family;
pub mod globals;

pub mod entries {
    //! Generated: every exported `PMPI_X` and its weak alias `MPI_X`.
    #![allow(unused_imports, clippy::too_many_arguments, clippy::missing_safety_doc)]
    use super::ctypes::*;
    use super::family::{CArray, FileForm, Mode, SendMode, SplitEnd, Width};
    use std::ffi::{c_char, c_int, c_void};
    include!(concat!(env!("OUT_DIR"), "/entries.rs"));
}

#[cfg(test)]
mod decl;
#[cfg(test)]
mod f08_gen;
#[cfg(test)]
mod fortran_gen;

pub mod f08;
pub mod fortran;

pub mod attr;
pub mod coll;
pub mod comm;
pub mod datatype;
pub mod file;
pub mod grequest;
pub mod group;
pub mod info;
pub mod init;
pub mod mem;
pub mod mpit;
pub mod neighbor;
pub mod op;
pub mod p2p;
pub mod part;
pub mod session;
pub mod spawn;
pub mod topo;
pub mod win;

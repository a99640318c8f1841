//! The arguments by which one implementation serves a whole family of MPI functions.
//!
//! MPI declares many functions that differ only mechanically: a blocking form, a nonblocking
//! `MPI_I...` form (one more `MPI_Request *` argument) and a persistent `..._init` form
//! (`MPI_Info`, `MPI_Request *`); each with `int` counts and a large-count `_c` twin whose
//! counts, displacements and arrays are `MPI_Count`/`MPI_Aint`; and, for sends, the four send
//! modes. An implementation in `src/abi/*.rs` is written once, under the name of the widest
//! member (`MPI_X_c`, or `MPI_X` when there is no `_c` form), with a parameter of one of the
//! types below where the members differ. build.rs (`family_members`) then generates the C entry
//! of every declared member, passing:
//!
//! * `Mode`: `Mode::Blocking` for `MPI_X`, `Mode::Start(request)` for `MPI_IX`,
//!   `Mode::Init(request)` for `MPI_X_init` (whose `info` is unused);
//! * `SendMode` (only `MPI_Send_c`): the mode of `MPI_Send`, `MPI_Bsend`, `MPI_Ssend`,
//!   `MPI_Rsend`;
//! * `CArray`: `CArray::Int(p)` for a `const int *` argument, `CArray::Wide(p)` for a
//!   `const MPI_Count *` / `const MPI_Aint *` one;
//! * `Width`: `Width::Int` for the `int` forms, `Width::Large` for the `_c` forms;
//! * `FileForm` (file data access, an implementation named `MPI_File_<dir><pos>_c` with `<dir>`
//!   `read` or `write` and `<pos>` `_at`, nothing or `_shared`): `FileForm::Blocking(status)`
//!   for `MPI_File_<dir><pos>`, `FileForm::Start(request)` for `MPI_File_i<dir><pos>`,
//!   `FileForm::Collective(status)` for `MPI_File_<dir><pos>_all` (`MPI_File_<dir>_ordered` for
//!   `_shared`), `FileForm::StartCollective(request)` for `MPI_File_i<dir><pos>_all`, and
//!   `FileForm::Begin` for the `_begin` of the collective;
//! * `SplitEnd` (an implementation named `MPI_File_<dir>_all_end`): which split collective
//!   the member ends, `SplitEnd::Explicit` for `MPI_File_<dir>_at_all_end`,
//!   `SplitEnd::Individual` for `MPI_File_<dir>_all_end`, `SplitEnd::Shared` for
//!   `MPI_File_<dir>_ordered_end`;
//!
//! and an `int` scalar where the implementation takes `MPI_Count`/`MPI_Aint` is widened with
//! `as`. Other arguments pass unchanged and are matched by name, so an implementation keeps the
//! C parameter names. The generated entry still reports errors under the name of the member
//! the program called.

use super::types::*;
use crate::error::{MpiResult, err};
use std::ffi::c_int;

pub use crate::p2p::request::SendMode;

/// How an operation runs: at once (blocking), started behind a request (`MPI_I...`), or as a
/// persistent request started by each MPI_Start (`MPI_..._init`). The request pointers are the
/// caller's output arguments.
#[derive(Clone, Copy)]
pub enum Mode {
    Blocking,
    Start(*mut MPI_Request),
    Init(*mut MPI_Request),
    /// Internal: a blocking collective run as its schedule, which the caller waits for at once
    /// (MPI_THREAD_MULTIPLE; see `abi::coll::in_mode`). Never generated for a C entry.
    StartForWait(*mut MPI_Request),
}

/// A C array of counts or displacements: `int[]`, or `MPI_Count[]`/`MPI_Aint[]` (both 64-bit).
#[derive(Clone, Copy)]
pub enum CArray {
    Int(*const c_int),
    Wide(*const i64),
}

impl CArray {
    pub fn is_null(self) -> bool {
        match self {
            CArray::Int(p) => p.is_null(),
            CArray::Wide(p) => p.is_null(),
        }
    }

    /// The `n` elements, widened; MPI_ERR_ARG "invalid {what} array (NULL)" when NULL.
    ///
    /// # Safety
    /// The pointer is NULL or points at `n` readable elements.
    pub unsafe fn read(self, n: usize, what: &str) -> MpiResult<Vec<i64>> {
        if self.is_null() {
            return err(super::consts::MPI_ERR_ARG, format!("invalid {what} array (NULL)"));
        }
        // SAFETY: non-null, and the caller guarantees n elements.
        Ok(unsafe {
            match self {
                CArray::Int(p) => std::slice::from_raw_parts(p, n).iter().map(|&v| v as i64).collect(),
                CArray::Wide(p) => std::slice::from_raw_parts(p, n).to_vec(),
            }
        })
    }
}

/// Which form of a function the program called: `int` counts or the large-count `_c` form
/// (for results that record it, such as a datatype's combiner).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Width {
    Int,
    Large,
}

impl Width {
    pub fn is_large(self) -> bool {
        self == Width::Large
    }
}

/// How a file data-access function of a family runs (see the module's comment), with its
/// output argument.
#[derive(Clone, Copy)]
pub enum FileForm {
    /// Independent and blocking: `MPI_File_read_at`.
    Blocking(*mut MPI_Status),
    /// Independent and nonblocking: `MPI_File_iread_at`.
    Start(*mut MPI_Request),
    /// Collective and blocking: `MPI_File_read_at_all`, `MPI_File_read_ordered`.
    Collective(*mut MPI_Status),
    /// Collective and nonblocking: `MPI_File_iread_at_all`.
    StartCollective(*mut MPI_Request),
    /// The start of a split collective: `MPI_File_read_at_all_begin`.
    Begin,
}

/// Which split collective an `_end` function ends: the positioning of its `_begin`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SplitEnd {
    Explicit,
    Individual,
    Shared,
}

//! C types of the ABI: handles are `int`, `MPI_Aint`/`MPI_Offset`/`MPI_Count` are `long`.

use std::ffi::{c_int, c_long};

pub type MPI_Comm = c_int;
pub type MPI_Datatype = c_int;
pub type MPI_Group = c_int;
pub type MPI_Op = c_int;
pub type MPI_Errhandler = c_int;
pub type MPI_Win = c_int;
pub type MPI_Info = c_int;
pub type MPI_Request = c_int;
pub type MPI_Message = c_int;
pub type MPI_Session = c_int;
pub type MPI_Fint = c_int;
pub type MPI_Aint = c_long;
pub type MPI_Offset = c_long;
pub type MPI_Count = c_long;

/// `MPI_Status`, 20 bytes, MPICH's field order. The byte count is split over
/// `count_lo` and the upper 31 bits of `count_hi_and_cancelled`; bit 0 of the latter is the
/// cancelled flag.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MPI_Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
}

const _: () = assert!(std::mem::size_of::<MPI_Status>() == 20);

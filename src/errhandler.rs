//! TEMPORARY stand-in; replaced by the error-handler module of the ABI front end.
use crate::abi::types::MPI_Comm;
pub fn on_comm_dup(_parent: MPI_Comm, _child: MPI_Comm) {}
pub fn on_comm_free(_comm: MPI_Comm) {}

//! Communicators.

use crate::abi::consts::{MPI_COMM_SELF, MPI_COMM_WORLD};
use crate::abi::types::MPI_Comm;

/// Whether `comm` names a live communicator.
pub fn is_valid(comm: MPI_Comm) -> bool {
    comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF
}

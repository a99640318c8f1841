//! Transports. `shm` connects the ranks of one node through a shared segment; messages to
//! oneself never leave the process (handled by the point-to-point engine).

pub mod shm;

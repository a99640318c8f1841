//! Transports. `shm` connects the ranks of one node through a shared segment; messages to
//! oneself never leave the process (handled by the point-to-point engine). `net` holds what
//! connects nodes: so far the run-time bindings to libfabric, which nothing calls yet.

pub mod net;
pub mod shm;

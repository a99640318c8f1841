//! oxmpi: an MPI library with MPICH's ABI, written in Rust.
//!
//! Layers (see DESIGN.md): `abi` translates C calls into calls on the safe core below it;
//! the core objects (`comm`, `group`, `datatype`, `op`, `errhandler`, `attr`, `info`),
//! point-to-point (`p2p`), collectives (`coll`), the transports (`transport`) and the
//! process-manager client (`pmi`) hold the behaviour.

pub mod abi;
mod alloc_cache;
pub mod attr;
pub mod coll;
pub mod comm;
pub mod config;
pub mod datatype;
mod dl;
pub mod errhandler;
pub mod error;
pub mod group;
pub mod info;
pub mod io;
pub mod op;
pub mod p2p;
pub mod pmi;
pub mod rma;
pub mod runtime;
pub mod session;
pub mod tool;
pub mod topo;
pub mod transport;
pub mod win;

#[global_allocator]
static ALLOCATOR: alloc_cache::CachingAllocator = alloc_cache::CachingAllocator;

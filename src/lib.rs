//! oxmpi: an MPI library with MPICH's ABI, written in Rust.
//!
//! Layers (see DESIGN.md): `abi` translates C calls into calls on the safe core below it;
//! the core objects (`comm`, `datatype`, `errhandler`), point-to-point (`p2p`), the
//! transports (`transport`) and the process-manager client (`pmi`) hold the behaviour.

pub mod abi;
pub mod coll;
pub mod comm;
pub mod config;
pub mod datatype;
pub mod errhandler;
pub mod error;
pub mod op;
pub mod p2p;
pub mod pmi;
pub mod runtime;
pub mod transport;

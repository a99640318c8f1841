//! Transport between nodes. `fabric` loads libfabric (OFI) at run time and wraps the calls the
//! transport makes; `fabric_sys` holds the structs and constants generated from libfabric's
//! headers (scripts/gen-fabric-bindings.sh). Nothing uses them yet: the network transport that
//! does is the next piece.

pub mod fabric;
pub mod fabric_sys;

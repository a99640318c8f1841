//! The C ABI edge (MPICH's ABI): handle and struct types, constants, and the entry points.
//! This layer only translates; behaviour lives in the modules below it.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::missing_safety_doc)]

pub mod consts {
    //! Every integer constant of MPICH's ABI, generated from `src/abi/data/mpich-abi.tsv`.
    #![allow(non_upper_case_globals)]
    include!(concat!(env!("OUT_DIR"), "/consts.rs"));
}
pub mod types;

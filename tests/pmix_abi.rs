//! The PMIx bindings (src/pmi/pmix_sys.rs): every struct size, alignment and field offset,
//! every constant and type size they declare matches the installed C headers (Debian's
//! libpmix-dev); the tables list everything the generated file declares.

use std::ffi::CStr;
use std::path::Path;

use oxmpi::pmi::pmix::{self, sys};

mod bindings_layout;
use bindings_layout::Bindings;

const INCLUDE: &str = "/usr/lib/x86_64-linux-gnu/pmix2/include";

const INSTALL_HEADERS: &str =
    "PMIx's C headers (pmix.h) are missing: install libpmix-dev (apt-get install libpmix-dev)";

/// Every struct and union of pmix_sys with every field it binds.
fn structs() -> Vec<bindings_layout::StructLayout> {
    layouts_of! { oxmpi::pmi::pmix::sys;
        timeval {},
        pmix_coord {},
        pmix_cpuset_t { source, bitmap },
        pmix_topology_t { source, topology },
        pmix_geometry {},
        pmix_device_distance {},
        pmix_byte_object { bytes, size },
        pmix_endpoint {},
        pmix_envar_t { envar, value, separator },
        pmix_proc { nspace, rank },
        pmix_proc_info {},
        pmix_data_array {},
        pmix_data_buffer {},
        pmix_proc_stats {},
        pmix_disk_stats_t {
            disk, num_reads_completed, num_reads_merged, num_sectors_read, milliseconds_reading,
            num_writes_completed, num_writes_merged, num_sectors_written, milliseconds_writing, num_ios_in_progress,
            milliseconds_io, weighted_milliseconds_io,
        },
        pmix_net_stats_t {
            net_interface, num_bytes_recvd, num_packets_recvd, num_recv_errs, num_bytes_sent, num_packets_sent,
            num_send_errs,
        },
        pmix_node_stats_t {
            node, la, la5, la15, total_mem, free_mem, buffers, cached, swap_cached, swap_total, swap_free, mapped,
            sample_time, diskstats, ndiskstats, netstats, nnetstats,
        },
        pmix_value { type_, data },
        pmix_value__bindgen_ty_1 {
            flag, byte, string, size, pid, integer, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
            fval, dval, tv, time, status, rank, nspace, proc_, bo, persist, scope, range, state, pinfo, darray, ptr,
            adir, envar, coord, linkstate, jstate, topo, cpuset, locality, geometry, devtype, devdist, endpoint,
            dbuf, pstats, dkstats, netstats, ndstats,
        },
        pmix_info { key, flags, value },
    }
}

/// The C type of a struct of the table: the typedef of the structs declared without a tag,
/// the type of `pmix_value_t`'s anonymous union through the field that holds it.
fn c_type(name: &str) -> String {
    match name {
        "pmix_value__bindgen_ty_1" => "__typeof__(((pmix_value_t *)0)->data)".to_string(),
        _ if name.ends_with("_t") => name.to_string(),
        _ => format!("struct {name}"),
    }
}

/// Rust renames C fields that are Rust keywords.
fn c_field(rust_name: &str) -> &str {
    match rust_name {
        "type_" => "type",
        "proc_" => "proc",
        other => other,
    }
}

fn constant_table() -> Vec<(&'static str, u64)> {
    let mut table = constants_of! { oxmpi::pmi::pmix::sys;
        PMIX_MAX_NSLEN, PMIX_MAX_KEYLEN, PMIX_SUCCESS, PMIX_ERR_NOT_FOUND,
        PMIX_UNDEF, PMIX_BOOL, PMIX_BYTE, PMIX_STRING, PMIX_SIZE, PMIX_PID, PMIX_INT, PMIX_INT8, PMIX_INT16,
        PMIX_INT32, PMIX_INT64, PMIX_UINT, PMIX_UINT8, PMIX_UINT16, PMIX_UINT32, PMIX_UINT64, PMIX_PROC_RANK,
        PMIX_GLOBAL,
    };
    // Written by hand in pmix.rs (bindgen does not evaluate `UINT32_MAX-1`).
    table.push(("PMIX_RANK_WILDCARD", u64::from(pmix::RANK_WILDCARD)));
    table
}

macro_rules! strings {
    ($($name:ident),* $(,)?) => {
        vec![$((stringify!($name), CStr::from_bytes_with_nul(sys::$name).unwrap().to_str().unwrap())),*]
    };
}

macro_rules! aliases {
    ($($name:ident),* $(,)?) => {
        vec![$((stringify!($name), stringify!($name), size_of::<sys::$name>())),*]
    };
}

const FUNCTION_TYPES: &[&str] = &[
    "PMIx_Init_fn",
    "PMIx_Finalize_fn",
    "PMIx_Abort_fn",
    "PMIx_Put_fn",
    "PMIx_Commit_fn",
    "PMIx_Fence_fn",
    "PMIx_Get_fn",
    "PMIx_Value_destruct_fn",
    "PMIx_Error_string_fn",
];

fn bindings() -> Bindings {
    Bindings {
        source: include_str!("../src/pmi/pmix_sys.rs"),
        file: "pmix_sys.rs",
        includes: &["pmix.h"],
        include_dirs: &[INCLUDE],
        install_headers: INSTALL_HEADERS,
        structs: structs(),
        c_type,
        c_field,
        incomplete: &[],
        constants: constant_table(),
        strings: strings! { PMIX_APPNUM, PMIX_NODEID, PMIX_UNIV_SIZE, PMIX_JOB_SIZE, PMIX_COLLECT_DATA },
        aliases: aliases! {
            __pid_t, __time_t, pid_t, time_t, pmix_nspace_t, pmix_key_t, pmix_rank_t, pmix_proc_state_t,
            pmix_job_state_t, pmix_status_t, pmix_data_type_t, pmix_scope_t, pmix_data_range_t, pmix_persistence_t,
            pmix_info_directives_t, pmix_alloc_directive_t, pmix_coord_t, pmix_link_state_t, pmix_locality_t,
            pmix_geometry_t, pmix_device_type_t, pmix_device_distance_t, pmix_byte_object_t, pmix_endpoint_t,
            pmix_proc_t, pmix_proc_info_t, pmix_data_array_t, pmix_data_buffer_t, pmix_proc_stats_t, pmix_value_t,
            pmix_info_t,
        },
        function_types: FUNCTION_TYPES,
    }
}

#[test]
fn bindings_match_installed_headers() {
    assert!(Path::new(INCLUDE).join("pmix.h").exists(), "{INSTALL_HEADERS}");
    bindings().assert_match_headers(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("pmix_abi"));
}

#[test]
fn tables_cover_every_declaration_of_the_bindings() {
    bindings().assert_tables_cover_declarations();
}

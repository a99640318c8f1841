//! Generator of the `mpi_f08` module (the MPI-4 Fortran 2008 binding), `include/mpi_f08.f90`.
//!
//! build.rs includes this file with `#[path]`, next to `decl.rs` and `fortran_gen.rs`; the
//! library compiles it only for its unit tests. The Fortran source is compiled by gfortran at
//! install time (`scripts/install.sh`) into `libmpichfort.so.12`, so the module files and the
//! procedures belong to the compiler that uses them.
//!
//! The module and procedure names are MPICH's, so that programs built against MPICH's
//! `mpi_f08` find what they call: the handle types and their `==` / `/=` functions live in
//! `mpi_f08_types` (`mpi_comm_eq`, ...), named constants in `mpi_f08_compile_constants`, the
//! sentinel objects in `mpi_f08_link_constants` (bound to MPICH's `MPIR_F08_*` symbols), and
//! each routine is an external subroutine named as libmpichfort exports it
//! (`mpi_send_f08ts_`, `mpi_send_f08ts_large_`, `mpi_comm_rank_f08_`: the list comes from
//! `libmpichfort-exports.tsv`), with gfortran's own calling convention and the standard's
//! dummy arguments. `mpi_f08` gathers them into generic interfaces (`MPI_Send`).
//!
//! Each procedure is generated from the one C declaration of `mpi.decl`, by one of two paths:
//! * routines with choice buffers (`_f08ts`) and the large-count forms call the C entry
//!   (`PMPI_X` / `PMPI_X_c`) through a `bind(C)` interface; each buffer goes through
//!   `oxmpi_f08_buffer` (src/abi/f08.rs) as a C descriptor, which maps MPI_BOTTOM and
//!   MPI_IN_PLACE and describes non-contiguous sections with a derived datatype;
//! * every other routine calls this library's `mpif.h` binding (`pmpi_x_`, fortran_gen.rs),
//!   whose conventions f08 shares (handles are one INTEGER, LOGICAL is gfortran's, CHARACTER
//!   lengths trail, statuses are five INTEGERs, callbacks take their arguments by reference),
//!   so that binding's conversions (strings, attributes, 1-based indices, Fortran callbacks)
//!   serve both. `ierror` is optional; MPI_STATUS(ES)_IGNORE become a scratch status.
//!
//! A routine whose arguments fall outside what these paths translate is left out of the
//! module (a program using it fails to compile, rather than misbehave); `missing` lists them.
#![allow(dead_code)]

use super::decl::{Decls, Func, Param};
use super::fortran_gen;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The handle types of mpi_f08 (all but MPI_File are C `int`s; MPI_File is its Fortran
/// integer handle).
pub const HANDLES: &[&str] = &[
    "MPI_Comm",
    "MPI_Datatype",
    "MPI_Errhandler",
    "MPI_File",
    "MPI_Group",
    "MPI_Info",
    "MPI_Message",
    "MPI_Op",
    "MPI_Request",
    "MPI_Session",
    "MPI_Win",
];

/// C `int` arguments that are LOGICAL in Fortran.
const LOGICAL_NAMES: &[&str] = &["flag", "reorder", "high", "commute", "weighted", "periods", "remain_dims"];

/// Non-const pointer arguments that the routine reads as well as writes.
const INOUT_NAMES: &[&str] = &["position", "buflen"];

/// `void *` arguments that are not choice buffers.
const ADDRESS_VALUES: &[&str] = &["attribute_val", "extra_state", "baseptr", "buffer_addr"];

/// The callback interfaces of mpi_f08 (MPI-4.1 section 19.1.4 / A.4): C typedef = abstract
/// interface name, and its dummies (after `use mpi_f08_types`). Every argument comes by
/// reference except the reduction buffers (TYPE(C_PTR) by value, the same bits as the
/// address `mpif.h` passes), so the `mpif.h` binding calls these procedures correctly.
/// The datarep conversion functions are not here: MPI_Register_datarep is bound in C only.
pub const CALLBACKS: &[(&str, &str, &[&str])] = &[
    (
        "MPI_User_function",
        "invec, inoutvec, len, datatype",
        &["type(c_ptr), value :: invec, inoutvec", "integer :: len", "type(MPI_Datatype) :: datatype"],
    ),
    (
        "MPI_Comm_copy_attr_function",
        "oldcomm, comm_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror",
        &[
            "type(MPI_Comm) :: oldcomm",
            "integer :: comm_keyval, ierror",
            "integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out",
            "logical :: flag",
        ],
    ),
    (
        "MPI_Comm_delete_attr_function",
        "comm, comm_keyval, attribute_val, extra_state, ierror",
        &[
            "type(MPI_Comm) :: comm",
            "integer :: comm_keyval, ierror",
            "integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state",
        ],
    ),
    (
        "MPI_Type_copy_attr_function",
        "oldtype, type_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror",
        &[
            "type(MPI_Datatype) :: oldtype",
            "integer :: type_keyval, ierror",
            "integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out",
            "logical :: flag",
        ],
    ),
    (
        "MPI_Type_delete_attr_function",
        "datatype, type_keyval, attribute_val, extra_state, ierror",
        &[
            "type(MPI_Datatype) :: datatype",
            "integer :: type_keyval, ierror",
            "integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state",
        ],
    ),
    (
        "MPI_Win_copy_attr_function",
        "oldwin, win_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror",
        &[
            "type(MPI_Win) :: oldwin",
            "integer :: win_keyval, ierror",
            "integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out",
            "logical :: flag",
        ],
    ),
    (
        "MPI_Win_delete_attr_function",
        "win, win_keyval, attribute_val, extra_state, ierror",
        &[
            "type(MPI_Win) :: win",
            "integer :: win_keyval, ierror",
            "integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state",
        ],
    ),
    ("MPI_Comm_errhandler_function", "comm, error_code", &["type(MPI_Comm) :: comm", "integer :: error_code"]),
    ("MPI_Win_errhandler_function", "win, error_code", &["type(MPI_Win) :: win", "integer :: error_code"]),
    ("MPI_File_errhandler_function", "file, error_code", &["type(MPI_File) :: file", "integer :: error_code"]),
    (
        "MPI_Session_errhandler_function",
        "session, error_code",
        &["type(MPI_Session) :: session", "integer :: error_code"],
    ),
    (
        "MPI_Grequest_query_function",
        "extra_state, status, ierror",
        &["integer(kind=MPI_ADDRESS_KIND) :: extra_state", "type(MPI_Status) :: status", "integer :: ierror"],
    ),
    (
        "MPI_Grequest_free_function",
        "extra_state, ierror",
        &["integer(kind=MPI_ADDRESS_KIND) :: extra_state", "integer :: ierror"],
    ),
    (
        "MPI_Grequest_cancel_function",
        "extra_state, complete, ierror",
        &["integer(kind=MPI_ADDRESS_KIND) :: extra_state", "logical :: complete", "integer :: ierror"],
    ),
];

/// `mpi_f08_callbacks`: the abstract interfaces and the predefined attribute callbacks
/// (MPICH's module and procedure names).
fn callbacks_module() -> String {
    let mut o = String::from(
        "module mpi_f08_callbacks\n    use, intrinsic :: iso_c_binding, only: c_ptr\n    use mpi_f08_types\n    implicit none\n    abstract interface\n",
    );
    for (name, args, decls) in CALLBACKS {
        let _ = writeln!(o, "        subroutine {name}({args})");
        o.push_str("            import\n            implicit none\n");
        for d in *decls {
            let _ = writeln!(o, "            {d}");
        }
        let _ = writeln!(o, "        end subroutine {name}");
    }
    o.push_str("    end interface\ncontains\n");
    for (kind, ty, obj) in
        [("comm", "MPI_Comm", "oldcomm"), ("type", "MPI_Datatype", "oldtype"), ("win", "MPI_Win", "oldwin")]
    {
        for (which, body) in
            [("null_copy", "flag = .false."), ("dup", "attribute_val_out = attribute_val_in\n        flag = .true.")]
        {
            let f = format!("mpi_{kind}_{which}_fn");
            let _ = writeln!(
                o,
                "    subroutine {f}({obj}, keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)\n        \
                 type({ty}) :: {obj}\n        integer :: keyval, ierror\n        \
                 integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out\n        \
                 logical :: flag\n        {body}\n        ierror = 0\n    end subroutine {f}"
            );
        }
        let f = format!("mpi_{kind}_null_delete_fn");
        let _ = writeln!(
            o,
            "    subroutine {f}(object, keyval, attribute_val, extra_state, ierror)\n        \
             type({ty}) :: object\n        integer :: keyval, ierror\n        \
             integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state\n        ierror = 0\n    end subroutine {f}"
        );
    }
    o.push_str("end module mpi_f08_callbacks\n\n");
    o
}

/// MPI_Sizeof's specifics (MPICH's names in mpi_f08_types) and their types.
const SIZEOF_TYPES: &[(&str, &str)] = &[
    ("xint8", "integer(kind=1)"),
    ("xint16", "integer(kind=2)"),
    ("xint32", "integer(kind=4)"),
    ("xint64", "integer(kind=8)"),
    ("xreal32", "real(kind=4)"),
    ("xreal64", "real(kind=8)"),
    ("xreal128", "real(kind=16)"),
    ("xcomplex32", "complex(kind=4)"),
    ("xcomplex64", "complex(kind=8)"),
    ("xcomplex128", "complex(kind=16)"),
    ("logical", "logical"),
    ("character", "character(len=*)"),
];

/// Free-form lines are split before this column.
const LINE: usize = 100;

/// One MPICH f08 routine: `mpi_send_f08ts_large` -> base `mpi_send`, `ts`, `large`.
#[derive(Debug, Clone)]
pub struct Specific {
    pub symbol: String,
    pub base: String,
    pub ts: bool,
    pub large: bool,
}

/// The f08 routines libmpichfort exports, in its order.
pub fn specifics(exports_tsv: &str) -> Vec<Specific> {
    let mut v = Vec::new();
    for line in exports_tsv.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 2 || cols[1] != "T" {
            continue;
        }
        let Some(name) = cols[0].strip_suffix('_') else { continue };
        if !name.starts_with("mpi_") {
            continue;
        }
        let (rest, large) = match name.strip_suffix("_large") {
            Some(r) => (r, true),
            None => (name, false),
        };
        let (base, ts) = if let Some(b) = rest.strip_suffix("_f08ts") {
            (b, true)
        } else if let Some(b) = rest.strip_suffix("_f08") {
            (b, false)
        } else {
            continue;
        };
        v.push(Specific { symbol: name.to_string(), base: base.to_string(), ts, large });
    }
    v.sort_by(|a, b| a.symbol.cmp(&b.symbol));
    v
}

/// How a buffer is described to `oxmpi_f08_buffer` (the constants of src/abi/f08.rs).
#[derive(Debug, Clone, Copy, PartialEq)]
enum BufMode {
    /// Its own count and datatype follow it: (mode 0, count param index, datatype index).
    Typed(usize, usize),
    Contiguous,
    Address,
}

/// What one C parameter is in Fortran.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Dropped,
    Buffer(BufMode),
    /// A handle type; `array` when C takes an array, `ptr` when C takes a pointer.
    Handle {
        ty: String,
        ptr: bool,
        array: bool,
        out: bool,
    },
    /// An integer of the given Fortran kind (`""` = default INTEGER) or LOGICAL.
    Int {
        fkind: &'static str,
        ckind: &'static str,
        logical: bool,
        ptr: bool,
        array: bool,
        konst: bool,
        dims: Option<usize>,
    },
    Status {
        array: bool,
        konst: bool,
    },
    Str {
        konst: bool,
    },
    /// An INTEGER array of graph edge weights, or MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY.
    Weights {
        konst: bool,
    },
    /// A procedure with one of the abstract interfaces of `mpi_f08_callbacks`.
    Proc(String),
    /// INTEGER(KIND=MPI_ADDRESS_KIND) (attribute values, extra state) or TYPE(C_PTR) (base
    /// addresses) passed by reference.
    AddrVal {
        c_ptr: bool,
        out: bool,
        fint: bool,
    },
}

fn classify(f: &Func, i: usize, p: &Param, callbacks: &[String]) -> Result<Kind, String> {
    let ty = &p.ty;
    if fortran_gen::dropped(f, p) {
        return Ok(Kind::Dropped);
    }
    if callbacks.contains(&ty.base) {
        if CALLBACKS.iter().any(|c| c.0 == ty.base) {
            return Ok(Kind::Proc(ty.base.clone()));
        }
        return Err(format!("callback argument {} ({})", p.name, ty.base));
    }
    let array = p.c_text.contains('[');
    if ty.base == "void" && ty.pointers == 1 {
        if ADDRESS_VALUES.contains(&p.name.as_str()) {
            let c_ptr = matches!(p.name.as_str(), "baseptr" | "buffer_addr");
            let out = matches!(
                f.name.as_str(),
                "MPI_Comm_get_attr" | "MPI_Type_get_attr" | "MPI_Win_get_attr" | "MPI_Attr_get"
            ) || c_ptr;
            let fint = f.name == "MPI_Attr_get" || f.name == "MPI_Attr_put";
            if f.name.starts_with("MPIX_") {
                return Err("generalized request state".into());
            }
            return Ok(Kind::AddrVal { c_ptr, out, fint });
        }
        return Ok(Kind::Buffer(buf_mode(f, i)));
    }
    if ty.base == "MPI_File" && ty.pointers == 0 {
        return Ok(Kind::Handle { ty: "MPI_File".into(), ptr: false, array: false, out: false });
    }
    if HANDLES.contains(&ty.base.as_str()) {
        if ty.pointers > 1 {
            return Err(format!("pointer to pointer {}", p.name));
        }
        let out = ty.pointers == 1 && !ty.const_base && p.name.starts_with("new");
        return Ok(Kind::Handle { ty: ty.base.clone(), ptr: ty.pointers == 1, array, out });
    }
    if ty.base == "MPI_Status" && ty.pointers == 1 {
        return Ok(Kind::Status { array, konst: ty.const_base });
    }
    if ty.base == "char" && ty.pointers == 1 {
        return Ok(Kind::Str { konst: ty.const_base });
    }
    let (fkind, ckind) = match ty.base.as_str() {
        "int" => ("", "c_int"),
        "MPI_Aint" => ("MPI_ADDRESS_KIND", "c_intptr_t"),
        "MPI_Count" => ("MPI_COUNT_KIND", "c_long_long"),
        "MPI_Offset" => ("MPI_OFFSET_KIND", "c_long_long"),
        other => return Err(format!("argument {} of type {other}", p.name)),
    };
    if ty.pointers > 1 {
        return Err(format!("pointer to pointer {}", p.name));
    }
    if p.name.ends_with("weights") && ty.base == "int" {
        return Ok(Kind::Weights { konst: ty.const_base });
    }
    let logical = LOGICAL_NAMES.contains(&p.name.as_str()) && ty.base == "int";
    Ok(Kind::Int {
        fkind,
        ckind,
        logical,
        ptr: ty.pointers == 1,
        array: array || ty.inner_array.is_some(),
        konst: ty.const_base,
        dims: ty.inner_array,
    })
}

/// Whether a buffer has a count and datatype of its own that describe exactly what it holds.
fn buf_mode(f: &Func, i: usize) -> BufMode {
    let lower = f.name.to_lowercase();
    if matches!(f.name.as_str(), "MPI_Get_address" | "MPI_Free_mem" | "MPI_Address") {
        return BufMode::Address;
    }
    // Collective buffers whose count is per rank hold more than `count` items.
    if ["gather", "scatter", "alltoall", "reduce_scatter"].iter().any(|w| lower.contains(w)) {
        return BufMode::Contiguous;
    }
    let ps = &f.params;
    let prev_is_buffer = i > 0 && ps[i - 1].ty.base == "void" && ps[i - 1].ty.pointers == 1;
    let count_ok =
        |p: &Param| p.ty.pointers == 0 && (p.ty.base == "int" || p.ty.base == "MPI_Count") && p.name.contains("count");
    if !prev_is_buffer
        && i + 2 < ps.len()
        && count_ok(&ps[i + 1])
        && ps[i + 2].ty.base == "MPI_Datatype"
        && ps[i + 2].ty.pointers == 0
    {
        return BufMode::Typed(i + 1, i + 2);
    }
    BufMode::Contiguous
}

/// Whether the standard gives this routine's buffers the ASYNCHRONOUS attribute.
fn asynchronous(f: &Func) -> bool {
    let n = f.name.as_str();
    let nonblocking = n.len() > 5 && n.starts_with("MPI_I") && n.as_bytes()[5].is_ascii_lowercase();
    nonblocking
        || n.contains("_init")
        || n.starts_with("MPI_File_i")
        || n.ends_with("_begin")
        || n.ends_with("_end")
        || matches!(
            n.trim_end_matches("_c"),
            "MPI_Put"
                | "MPI_Get"
                | "MPI_Accumulate"
                | "MPI_Get_accumulate"
                | "MPI_Fetch_and_op"
                | "MPI_Compare_and_swap"
                | "MPI_Rput"
                | "MPI_Rget"
                | "MPI_Raccumulate"
                | "MPI_Rget_accumulate"
                | "MPI_Win_attach"
                | "MPI_Win_detach"
                | "MPI_Buffer_attach"
        )
}

fn int_type(fkind: &str, logical: bool) -> String {
    if logical {
        "logical".into()
    } else if fkind.is_empty() {
        "integer".into()
    } else {
        format!("integer(kind={fkind})")
    }
}

/// The Fortran declaration of dummy `p` (also used, with the same text, by the interface to
/// the `mpif.h` binding on the Fortran path).
fn dummy_decl(f: &Func, p: &Param, k: &Kind) -> Option<String> {
    let n = &p.name;
    let asy = if asynchronous(f) { ", asynchronous" } else { "" };
    Some(match k {
        Kind::Dropped => return None,
        Kind::Buffer(_) => {
            let intent = if p.ty.const_base { ", intent(in)" } else { "" };
            format!("type(*), dimension(..){intent}{asy} :: {n}")
        }
        Kind::Handle { ty, ptr, array, out } => {
            let intent = if !ptr || p.ty.const_base {
                "in"
            } else if *out {
                "out"
            } else {
                "inout"
            };
            let dim = if *array { "(*)" } else { "" };
            format!("type({ty}), intent({intent}) :: {n}{dim}")
        }
        Kind::Int { fkind, logical, ptr, array, konst, dims, .. } => {
            let t = int_type(fkind, *logical);
            let intent = if !ptr || *konst {
                "in"
            } else if INOUT_NAMES.contains(&n.as_str()) {
                "inout"
            } else {
                "out"
            };
            let dim = match (array, dims) {
                (true, Some(d)) => format!("({d},*)"),
                (true, None) => "(*)".into(),
                _ => String::new(),
            };
            format!("{t}, intent({intent}) :: {n}{dim}")
        }
        Kind::Status { array, konst } => {
            if *konst {
                format!("type(MPI_Status), intent(in) :: {n}{}", if *array { "(*)" } else { "" })
            } else {
                format!("type(MPI_Status), target :: {n}{}", if *array { "(*)" } else { "" })
            }
        }
        Kind::Str { konst } => format!("character(len=*), intent({}) :: {n}", if *konst { "in" } else { "out" }),
        Kind::Proc(iface) => format!("procedure({iface}) :: {n}"),
        Kind::Weights { konst } => format!("integer, intent({}), target :: {n}(*)", if *konst { "in" } else { "out" }),
        Kind::AddrVal { c_ptr, out, fint } => {
            let t = if *c_ptr {
                "type(c_ptr)"
            } else if *fint {
                "integer"
            } else {
                "integer(kind=MPI_ADDRESS_KIND)"
            };
            format!("{t}, intent({}) :: {n}", if *out { "out" } else { "in" })
        }
    })
}

/// Splits a long free-form statement at commas.
fn wrap(out: &mut String, indent: &str, stmt: &str) {
    let mut line = String::from(indent);
    let mut first = true;
    for (i, piece) in stmt.split_inclusive(", ").enumerate() {
        if i > 0 && line.len() + piece.len() > LINE {
            out.push_str(&line);
            out.push_str("&\n");
            line = format!("{indent}    & ");
            first = false;
        }
        line.push_str(piece);
    }
    let _ = first;
    out.push_str(&line);
    out.push('\n');
}

/// The status-array length argument of a routine with MPI_STATUSES_IGNORE.
fn status_count(f: &Func) -> Option<&str> {
    f.params.iter().map(|p| p.name.as_str()).find(|n| matches!(*n, "count" | "incount"))
}

/// One generated procedure: its dummy list, declarations and body.
struct Proc {
    name: String,
    args: Vec<String>,
    decls: Vec<String>,
    body: String,
    /// `None` for a subroutine, else the result type of a function.
    result: Option<String>,
}

fn c_return_type(f: &Func) -> Result<Option<String>, String> {
    match (f.ret.base.as_str(), f.ret.pointers) {
        ("int", 0) => Ok(None),
        ("double", 0) => Ok(Some("double precision".into())),
        ("MPI_Aint", 0) => Ok(Some("integer(kind=MPI_ADDRESS_KIND)".into())),
        (other, _) => Err(format!("returns {other}")),
    }
}

fn make_proc(f: &Func, s: &Specific, callbacks: &[String]) -> Result<Proc, String> {
    if f.name.starts_with("MPIX_") {
        return Err("MPICH extension".into());
    }
    let result = c_return_type(f)?;
    let mut kinds = Vec::new();
    for (i, p) in f.params.iter().enumerate() {
        kinds.push(classify(f, i, p, callbacks)?);
    }
    let mut args = Vec::new();
    let mut decls = Vec::new();
    for (p, k) in f.params.iter().zip(&kinds) {
        if let Some(d) = dummy_decl(f, p, k) {
            args.push(p.name.clone());
            decls.push(d);
        }
    }
    let has_ierror = result.is_none() && !f.variadic;
    if has_ierror {
        args.push("ierror".into());
    }
    let c_path =
        s.ts || s.large || f.name == "MPI_Buffer_detach" || kinds.iter().any(|k| matches!(k, Kind::Weights { .. }));
    let body = if c_path {
        c_body(f, &kinds, has_ierror)?
    } else {
        f_body(f, &kinds, &decls, has_ierror, &result, callbacks)?
    };
    Ok(Proc { name: s.symbol.clone(), args, decls, body, result })
}

/// Body of a routine that calls this library's `mpif.h` binding `pmpi_x_`.
fn f_body(
    f: &Func,
    kinds: &[Kind],
    decls: &[String],
    has_ierror: bool,
    result: &Option<String>,
    callbacks: &[String],
) -> Result<String, String> {
    if let Some(why) = fortran_gen::stub_reason(f, callbacks) {
        return Err(format!("the mpif.h binding is a stub ({why})"));
    }
    let target = format!("p{}", f.name.to_lowercase());
    let mut b = String::new();
    let mut iface_args = Vec::new();
    let mut call_args = Vec::new();
    let mut pre = Vec::new();
    let mut locals = Vec::new();
    let mut di = 0;
    for (p, k) in f.params.iter().zip(kinds) {
        if matches!(k, Kind::Dropped) {
            continue;
        }
        let decl = decls[di].replace(", target", "").replace(", asynchronous", "");
        di += 1;
        iface_args.push((p.name.clone(), decl));
        match k {
            Kind::Buffer(_) => return Err("choice buffer on the Fortran path".into()),
            Kind::Weights { .. } => return Err("weights on the Fortran path".into()),
            Kind::Status { array: false, konst: false } => {
                let n = &p.name;
                locals.push("type(MPI_Status), target :: ox_scratch".to_string());
                locals.push(format!("type(MPI_Status), pointer :: ox_{n}"));
                pre.push(format!(
                    "if (c_associated(c_loc({n}), c_loc(MPI_STATUS_IGNORE))) then\n        ox_{n} => ox_scratch\n    else\n        ox_{n} => {n}\n    end if"
                ));
                call_args.push(format!("ox_{n}"));
            }
            Kind::Status { array: true, konst: false } => {
                let n = &p.name;
                let cnt = status_count(f).ok_or("status array without a count")?;
                locals.push("type(MPI_Status), allocatable, target :: ox_scratch(:)".to_string());
                locals.push(format!("type(MPI_Status), pointer :: ox_{n}(:)"));
                pre.push(format!(
                    "if (c_associated(c_loc({n}(1)), c_loc(MPI_STATUSES_IGNORE(1)))) then\n        allocate(ox_scratch(max({cnt}, 1)))\n        ox_{n} => ox_scratch\n    else\n        ox_{n} => {n}(1:max({cnt}, 1))\n    end if"
                ));
                call_args.push(format!("ox_{n}"));
            }
            _ => call_args.push(p.name.clone()),
        }
    }
    // The interface of the mpif.h binding: the same dummies, a mandatory ierror.
    let mut iface = String::new();
    let ia: Vec<String> =
        iface_args.iter().map(|a| a.0.clone()).chain(has_ierror.then(|| "ierror".to_string())).collect();
    iface.push_str("    interface\n");
    let kw = if result.is_some() { "function" } else { "subroutine" };
    wrap(&mut iface, "        ", &format!("{kw} {target}({})", ia.join(", ")));
    iface.push_str("            use, intrinsic :: iso_c_binding\n            import\n            implicit none\n");
    for (_, d) in &iface_args {
        wrap(&mut iface, "            ", d);
    }
    if has_ierror {
        iface.push_str("            integer, intent(out) :: ierror\n");
    }
    if let Some(r) = result {
        let _ = writeln!(iface, "            {r} :: {target}");
    }
    let _ = writeln!(iface, "        end {kw} {target}");
    iface.push_str("    end interface\n");
    let mut locals_dedup = locals.clone();
    locals_dedup.dedup();
    for l in locals_dedup {
        let _ = writeln!(b, "    {l}");
    }
    if has_ierror {
        b.push_str("    integer :: ox_ierr\n");
    }
    b.push_str(&iface);
    for p in &pre {
        let _ = writeln!(b, "    {p}");
    }
    if has_ierror {
        call_args.push("ox_ierr".into());
    }
    if let Some(_r) = result {
        wrap(&mut b, "    ", &format!("ox_result = {target}({})", call_args.join(", ")));
    } else {
        wrap(&mut b, "    ", &format!("call {target}({})", call_args.join(", ")));
    }
    if has_ierror {
        b.push_str("    if (present(ierror)) ierror = ox_ierr\n");
    }
    Ok(b)
}

/// Body of a routine that calls the C entry `PMPI_X` directly (choice buffers, large counts).
fn c_body(f: &Func, kinds: &[Kind], has_ierror: bool) -> Result<String, String> {
    if !has_ierror {
        return Err("C path for a routine without ierror".into());
    }
    let mut locals = Vec::new();
    let mut pre = Vec::new();
    let mut post = Vec::new();
    let mut iface = Vec::new();
    let mut call = Vec::new();
    // Count and datatype arguments replaced by what oxmpi_f08_buffer returns.
    let mut replaced: BTreeMap<usize, String> = BTreeMap::new();
    let mut has_file = false;
    // The object whose error handler reports a bad buffer (the kinds of src/abi/f08.rs).
    let obj = f
        .params
        .iter()
        .find_map(|p| match (p.ty.base.as_str(), p.ty.pointers) {
            ("MPI_Comm", 0) => Some(format!("1, {}%MPI_VAL", p.name)),
            ("MPI_Win", 0) => Some(format!("2, {}%MPI_VAL", p.name)),
            ("MPI_File", 0) => Some(format!("3, {}%MPI_VAL", p.name)),
            _ => None,
        })
        .unwrap_or_else(|| "0, 0".into());
    for (i, (p, k)) in f.params.iter().zip(kinds).enumerate() {
        let n = &p.name;
        match k {
            Kind::Buffer(mode) => {
                locals.push(format!("type(c_ptr) :: ox_{n}"));
                locals.push(format!("integer(c_long_long) :: ox_{n}_n"));
                locals.push(format!("integer(c_int) :: ox_{n}_t"));
                let (m, cnt, dt) = match mode {
                    BufMode::Typed(c, d) => {
                        let cn = &f.params[*c].name;
                        let dn = &f.params[*d].name;
                        let ck = if f.params[*c].ty.base == "int" { "int" } else { "MPI_Count" };
                        replaced.insert(
                            *c,
                            if ck == "int" { format!("int(ox_{n}_n, c_int)") } else { format!("ox_{n}_n") },
                        );
                        replaced.insert(*d, format!("ox_{n}_t"));
                        post.push(format!("call oxmpi_f08_buffer_done(ox_{n}_t, {dn}%MPI_VAL)"));
                        (0, format!("int({cn}, c_long_long)"), format!("{dn}%MPI_VAL"))
                    }
                    BufMode::Contiguous => (1, "0_c_long_long".into(), "MPI_DATATYPE_NULL%MPI_VAL".into()),
                    BufMode::Address => (2, "0_c_long_long".into(), "MPI_DATATYPE_NULL%MPI_VAL".into()),
                };
                pre.push(format!(
                    "if (ox_rc == MPI_SUCCESS) ox_rc = oxmpi_f08_buffer({n}, c_loc(MPI_BOTTOM), c_loc(MPI_IN_PLACE), {m}, {cnt}, {dt}, ox_name, {obj}, ox_{n}, ox_{n}_n, ox_{n}_t)"
                ));
                // Before the call: the typed datatype's local must hold the given one, so that
                // `done` frees nothing when the resolution failed early.
                if let BufMode::Typed(_, d) = mode {
                    pre.insert(pre.len() - 1, format!("ox_{n}_t = {}%MPI_VAL", f.params[*d].name));
                }
                iface.push(format!("type(c_ptr), value :: {n}"));
                call.push((i, format!("ox_{n}")));
            }
            Kind::Handle { ty, ptr: false, .. } if ty == "MPI_File" => {
                has_file = true;
                iface.push(format!("type(c_ptr), value :: {n}"));
                call.push((i, format!("ox_file_f2c({n}%MPI_VAL)")));
            }
            Kind::Handle { ty, ptr, array, .. } => {
                if ty == "MPI_File" {
                    return Err("MPI_File output on the C path".into());
                }
                if *ptr {
                    iface.push(format!("type({ty}) :: {n}{}", if *array { "(*)" } else { "" }));
                    call.push((i, n.clone()));
                } else {
                    iface.push(format!("integer(c_int), value :: {n}"));
                    call.push((i, format!("{n}%MPI_VAL")));
                }
            }
            Kind::Int { ckind, logical, ptr, array, dims, .. } => {
                if *logical && *ptr {
                    return Err("LOGICAL output on the C path".into());
                }
                if *ptr {
                    let dim = match (array, dims) {
                        (true, Some(d)) => format!("({d},*)"),
                        (true, None) => "(*)".into(),
                        _ => String::new(),
                    };
                    iface.push(format!("integer({ckind}) :: {n}{dim}"));
                    call.push((i, n.clone()));
                } else {
                    iface.push(format!("integer({ckind}), value :: {n}"));
                    call.push((i, if *logical { format!("merge(1_c_int, 0_c_int, {n})") } else { n.clone() }));
                }
            }
            Kind::Status { array, konst: false } => {
                locals.push(format!("type(c_ptr) :: ox_{n}"));
                let (mine, ignore) = if *array {
                    (format!("c_loc({n}(1))"), "c_loc(MPI_STATUSES_IGNORE(1))")
                } else {
                    (format!("c_loc({n})"), "c_loc(MPI_STATUS_IGNORE)")
                };
                pre.push(format!(
                    "ox_{n} = {mine}\n    if (c_associated(ox_{n}, {ignore})) ox_{n} = transfer(1_c_intptr_t, ox_{n})"
                ));
                iface.push(format!("type(c_ptr), value :: {n}"));
                call.push((i, format!("ox_{n}")));
            }
            Kind::Status { array, konst: true } => {
                iface.push(format!("type(MPI_Status) :: {n}{}", if *array { "(*)" } else { "" }));
                call.push((i, n.clone()));
            }
            Kind::Str { konst: true } => {
                iface.push(format!("character(kind=c_char) :: {n}(*)"));
                call.push((i, format!("trim({n})//c_null_char")));
            }
            Kind::Str { konst: false } => return Err("string output on the C path".into()),
            Kind::AddrVal { c_ptr: true, .. } => {
                iface.push(format!("type(c_ptr) :: {n}"));
                call.push((i, n.clone()));
            }
            Kind::AddrVal { .. } => return Err("attribute value on the C path".into()),
            Kind::Proc(_) => return Err("callback on the C path".into()),
            Kind::Weights { .. } => {
                locals.push(format!("type(c_ptr) :: ox_{n}"));
                pre.push(format!(
                    "ox_{n} = oxmpi_f08_weights(c_loc({n}(1)), c_loc(MPI_UNWEIGHTED), c_loc(MPI_WEIGHTS_EMPTY))"
                ));
                iface.push(format!("type(c_ptr), value :: {n}"));
                call.push((i, format!("ox_{n}")));
            }
            Kind::Dropped => return Err("dropped argument on the C path".into()),
        }
    }
    let cname = format!("P{}", f.name);
    let mut b = String::new();
    let mut seen = std::collections::BTreeSet::new();
    for l in &locals {
        if seen.insert(l.clone()) {
            let _ = writeln!(b, "    {l}");
        }
    }
    b.push_str("    integer(c_int) :: ox_rc\n");
    let _ = writeln!(b, "    character(kind=c_char, len=*), parameter :: ox_name = \"{}\"//c_null_char", f.name);
    b.push_str("    interface\n");
    let names: Vec<String> = f.params.iter().map(|p| p.name.clone()).collect();
    wrap(&mut b, "        ", &format!("function ox_c({}) bind(C, name=\"{cname}\") result(rc)", names.join(", ")));
    b.push_str("            use, intrinsic :: iso_c_binding\n            import\n            implicit none\n");
    for d in &iface {
        wrap(&mut b, "            ", d);
    }
    b.push_str("            integer(c_int) :: rc\n        end function ox_c\n");
    if has_file {
        b.push_str(
            "        function ox_file_f2c(fh) bind(C, name=\"PMPI_File_f2c\") result(c)\n            \
             use, intrinsic :: iso_c_binding\n            integer(c_int), value :: fh\n            \
             type(c_ptr) :: c\n        end function ox_file_f2c\n",
        );
    }
    b.push_str("    end interface\n");
    b.push_str("    ox_rc = MPI_SUCCESS\n");
    for p in &pre {
        wrap(&mut b, "    ", p);
    }
    let args: Vec<String> = call.iter().map(|(i, a)| replaced.get(i).cloned().unwrap_or_else(|| a.clone())).collect();
    wrap(&mut b, "    ", &format!("if (ox_rc == MPI_SUCCESS) ox_rc = ox_c({})", args.join(", ")));
    for p in &post {
        let _ = writeln!(b, "    {p}");
    }
    b.push_str("    if (present(ierror)) ierror = ox_rc\n");
    Ok(b)
}

/// The generic name of a routine (`MPI_Send` for `MPI_Send_c`).
fn generic_name(f: &Func, s: &Specific) -> String {
    if s.large { f.name.strip_suffix("_c").unwrap_or(&f.name).to_string() } else { f.name.clone() }
}

fn write_proc_header(out: &mut String, indent: &str, p: &Proc) {
    let kw = if p.result.is_some() { "function" } else { "subroutine" };
    let res = if p.result.is_some() { " result(ox_result)" } else { "" };
    wrap(out, indent, &format!("{kw} {}({}){res}", p.name, p.args.join(", ")));
}

/// The body of `mpi_x_f08ts`: a call of `pmpi_x_f08ts` with the same arguments (an absent
/// optional `ierror` stays absent).
fn forward_body(p: &Proc) -> String {
    let target = format!("p{}", p.name);
    let mut b = String::from("    interface\n");
    let iface = Proc {
        name: target.clone(),
        args: p.args.clone(),
        decls: p.decls.clone(),
        body: String::new(),
        result: p.result.clone(),
    };
    write_proc_header(&mut b, "        ", &iface);
    b.push_str("            use, intrinsic :: iso_c_binding\n            import\n            implicit none\n");
    write_dummies(&mut b, "            ", &iface);
    let kw = if p.result.is_some() { "function" } else { "subroutine" };
    let _ = writeln!(b, "        end {kw} {target}\n    end interface");
    if p.result.is_some() {
        wrap(&mut b, "    ", &format!("ox_result = {target}({})", p.args.join(", ")));
    } else {
        wrap(&mut b, "    ", &format!("call {target}({})", p.args.join(", ")));
    }
    b
}

fn write_dummies(out: &mut String, indent: &str, p: &Proc) {
    for d in &p.decls {
        wrap(out, indent, d);
    }
    if p.args.last().is_some_and(|a| a == "ierror") {
        let _ = writeln!(out, "{indent}integer, optional, intent(out) :: ierror");
    }
    if let Some(r) = &p.result {
        let _ = writeln!(out, "{indent}{r} :: ox_result");
    }
}

/// Constants of the ABI table: (Fortran declaration type, name, value).
fn constants(abi_tsv: &str) -> Result<Vec<(String, String, String)>, String> {
    let mut v = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for line in abi_tsv.lines().skip(2) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 6 {
            continue;
        }
        let (name, cat, fvalue) = (cols[0], cols[1], cols[5].trim());
        if fvalue.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        if matches!(name, "MPI_ADDRESS_KIND" | "MPI_OFFSET_KIND" | "MPI_COUNT_KIND" | "MPI_INTEGER_KIND") {
            continue;
        }
        let handle = if let Some(t) = cat.strip_prefix("handle:") {
            Some(t.to_string())
        } else if cat == "handle-null" || name == "MPI_FILE_NULL" {
            let mid = name.strip_prefix("MPI_").and_then(|n| n.strip_suffix("_NULL")).unwrap_or("");
            HANDLES.iter().find(|h| h[4..].eq_ignore_ascii_case(mid)).map(|h| h.to_string())
        } else {
            None
        };
        let (ty, value) = if let Ok(v) = fvalue.parse::<i64>() {
            match handle {
                Some(h) => (format!("type({h})"), format!("{h}({v})")),
                None if name == "MPI_DISPLACEMENT_CURRENT" => {
                    ("integer(kind=MPI_OFFSET_KIND)".into(), format!("{v}_MPI_OFFSET_KIND"))
                }
                None => {
                    if i32::try_from(v).is_err() {
                        return Err(format!("{name}: {v} is not a default INTEGER"));
                    }
                    ("integer".into(), v.to_string())
                }
            }
        } else if fvalue == "False" || fvalue == "True" {
            // The f08 binding has subarrays (C descriptors) and ASYNCHRONOUS dummies.
            let v = if matches!(name, "MPI_SUBARRAYS_SUPPORTED" | "MPI_ASYNC_PROTECTS_NONBLOCKING") {
                ".true."
            } else if fvalue == "True" {
                ".true."
            } else {
                ".false."
            };
            ("logical".into(), v.to_string())
        } else {
            continue;
        };
        if seen.insert(name.to_string()) {
            v.push((ty, name.to_string(), value));
        }
    }
    Ok(v)
}

/// `mpi_f08.f90` and the routines left out of it (with why).
pub fn mpi_f08_f90(
    decls: &Decls,
    abi_tsv: &str,
    exports_tsv: &str,
    callbacks: &[String],
) -> Result<(String, Vec<(String, String)>), String> {
    let by_name: BTreeMap<String, &Func> = decls.functions.iter().map(|f| (f.name.to_lowercase(), f)).collect();
    let mut procs: Vec<(String, Proc)> = Vec::new();
    let mut missing = Vec::new();
    for s in specifics(exports_tsv) {
        let cname = if s.large { format!("{}_c", s.base) } else { s.base.clone() };
        if s.symbol == "mpi_f_sync_reg_f08ts" {
            continue; // written by hand below
        }
        let Some(f) = by_name.get(&cname) else {
            missing.push((s.symbol.clone(), "no C declaration".to_string()));
            continue;
        };
        match make_proc(f, &s, callbacks) {
            Ok(p) => procs.push((generic_name(f, &s), p)),
            Err(why) => missing.push((s.symbol.clone(), why)),
        }
    }
    let mut o = String::new();
    o.push_str(
        "! mpi_f08.f90 for oxmpi: the Fortran 2008 binding (`use mpi_f08`), MPICH's module and\n\
         ! procedure names. Generated by oxmpi's build.rs (src/abi/f08_gen.rs) from\n\
         ! src/abi/mpi.decl; do not edit. Compiled by scripts/install.sh into libmpichfort.so.12.\n\n",
    );
    // Types.
    o.push_str("module mpi_f08_types\n    implicit none\n    private :: ox_dummy\n");
    o.push_str("    integer, parameter :: MPI_ADDRESS_KIND = 8, MPI_OFFSET_KIND = 8, MPI_COUNT_KIND = 8\n");
    o.push_str("    integer, parameter :: MPI_INTEGER_KIND = 4\n    integer, parameter :: ox_dummy = 0\n");
    for h in HANDLES {
        let _ = writeln!(o, "    type, bind(C) :: {h}\n        integer :: MPI_VAL\n    end type {h}");
    }
    o.push_str(
        "    ! MPICH's MPI_Status: two hidden count words, then the public fields.\n    \
         type, bind(C) :: MPI_Status\n        integer :: count_lo, count_hi_and_cancelled\n        \
         integer :: MPI_SOURCE, MPI_TAG, MPI_ERROR\n    end type MPI_Status\n",
    );
    for (op, suffix) in [("==", "eq"), ("/=", "neq")] {
        let _ = writeln!(o, "    interface operator({op})");
        for h in HANDLES {
            let _ = writeln!(o, "        module procedure {}_{suffix}", h.to_lowercase());
        }
        let _ = writeln!(o, "    end interface");
    }
    o.push_str("    interface MPI_Sizeof\n");
    for (suffix, _) in SIZEOF_TYPES {
        let _ = writeln!(o, "        module procedure mpi_sizeof_{suffix}");
    }
    o.push_str(
        "    end interface MPI_Sizeof\n    interface MPI_Status_f082f\n        module procedure mpi_status_f082f\n    \
         end interface\n    interface MPI_Status_f2f08\n        module procedure mpi_status_f2f08\n    end interface\n",
    );
    o.push_str("contains\n");
    for (suffix, ty) in SIZEOF_TYPES {
        let _ = writeln!(
            o,
            "    subroutine mpi_sizeof_{suffix}(x, size, ierror)\n        {ty}, dimension(..), intent(in) :: x\n        \
             integer, intent(out) :: size\n        integer, optional, intent(out) :: ierror\n        \
             size = storage_size(x) / 8\n        if (present(ierror)) ierror = 0\n    end subroutine mpi_sizeof_{suffix}"
        );
    }
    // A TYPE(MPI_Status) and an mpif.h status are the same five INTEGERs.
    o.push_str(
        "    subroutine mpi_status_f082f(f08_status, f_status, ierror)\n        \
         type(MPI_Status), intent(in) :: f08_status\n        integer, intent(out) :: f_status(5)\n        \
         integer, optional, intent(out) :: ierror\n        \
         f_status = [f08_status%count_lo, f08_status%count_hi_and_cancelled, f08_status%MPI_SOURCE, &\n            \
         & f08_status%MPI_TAG, f08_status%MPI_ERROR]\n        if (present(ierror)) ierror = 0\n    \
         end subroutine mpi_status_f082f\n    subroutine mpi_status_f2f08(f_status, f08_status, ierror)\n        \
         integer, intent(in) :: f_status(5)\n        type(MPI_Status), intent(out) :: f08_status\n        \
         integer, optional, intent(out) :: ierror\n        \
         f08_status = MPI_Status(f_status(1), f_status(2), f_status(3), f_status(4), f_status(5))\n        \
         if (present(ierror)) ierror = 0\n    end subroutine mpi_status_f2f08\n",
    );
    for h in HANDLES {
        for (suffix, op) in [("eq", "=="), ("neq", "/=")] {
            let f = format!("{}_{suffix}", h.to_lowercase());
            let _ = writeln!(
                o,
                "    elemental logical function {f}(a, b)\n        type({h}), intent(in) :: a, b\n        \
                 {f} = a%MPI_VAL {op} b%MPI_VAL\n    end function {f}"
            );
        }
    }
    o.push_str("end module mpi_f08_types\n\n");
    // Constants.
    o.push_str("module mpi_f08_compile_constants\n    use mpi_f08_types\n    implicit none\n");
    for (ty, name, value) in constants(abi_tsv)? {
        wrap(&mut o, "    ", &format!("{ty}, parameter :: {name} = {value}"));
    }
    o.push_str("end module mpi_f08_compile_constants\n\n");
    o.push_str(&callbacks_module());
    // Sentinels: MPICH's symbol names; only their addresses matter.
    o.push_str(
        "module mpi_f08_link_constants\n    use, intrinsic :: iso_c_binding, only: c_int\n    \
         use mpi_f08_types\n    implicit none\n    \
         type(MPI_Status), bind(C, name=\"MPIR_F08_MPI_STATUS_IGNORE_OBJ\"), target :: MPI_STATUS_IGNORE\n    \
         type(MPI_Status), bind(C, name=\"MPIR_F08_MPI_STATUSES_IGNORE_OBJ\"), target :: MPI_STATUSES_IGNORE(1)\n    \
         integer(c_int), bind(C, name=\"MPIR_F08_MPI_IN_PLACE\"), target :: MPI_IN_PLACE\n    \
         integer(c_int), bind(C, name=\"MPIR_F08_MPI_BOTTOM\"), target :: MPI_BOTTOM\n    \
         integer, dimension(1), target :: MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY\n\
         end module mpi_f08_link_constants\n\n",
    );
    // Support: the buffer resolver of src/abi/f08.rs.
    o.push_str(
        "module oxmpi_f08_support\n    use, intrinsic :: iso_c_binding\n    implicit none\n    interface\n        \
         function oxmpi_f08_buffer(buf, bottom, in_place, mode, count, datatype, name, object_kind, &\n                \
         & object, addr, count_out, datatype_out) bind(C, name=\"oxmpi_f08_buffer\") result(rc)\n            \
         import\n            type(*), dimension(..) :: buf\n            type(c_ptr), value :: bottom, in_place\n            \
         integer(c_int), value :: mode, datatype\n            integer(c_long_long), value :: count\n            \
         character(kind=c_char) :: name(*)\n            integer(c_int), value :: object_kind, object\n            \
         type(c_ptr) :: addr\n            \
         integer(c_long_long) :: count_out\n            integer(c_int) :: datatype_out\n            \
         integer(c_int) :: rc\n        end function oxmpi_f08_buffer\n        \
         function oxmpi_f08_weights(weights, unweighted, empty) bind(C, name=\"oxmpi_f08_weights\") result(c)\n            \
         import\n            type(c_ptr), value :: weights, unweighted, empty\n            type(c_ptr) :: c\n        \
         end function oxmpi_f08_weights\n        \
         subroutine oxmpi_f08_buffer_done(made, given) bind(C, name=\"oxmpi_f08_buffer_done\")\n            \
         import\n            integer(c_int), value :: made, given\n        end subroutine oxmpi_f08_buffer_done\n    \
         end interface\nend module oxmpi_f08_support\n\n",
    );
    // The module.
    o.push_str(
        "module mpi_f08\n    use mpi_f08_types\n    use mpi_f08_compile_constants\n    \
         use mpi_f08_link_constants\n    use mpi_f08_callbacks\n    implicit none\n",
    );
    // The profiling interface: `pmpi_x_f08ts` does the work, `mpi_x_f08ts` calls it, so that a
    // tool (or a test) that defines its own `mpi_x_f08ts` and calls PMPI_X sees every call.
    let mut pprocs: Vec<(String, Proc)> = Vec::new();
    for (g, p) in procs {
        let forward = Proc {
            name: p.name.clone(),
            args: p.args.clone(),
            decls: p.decls.clone(),
            body: forward_body(&p),
            result: p.result.clone(),
        };
        pprocs.push((format!("P{g}"), Proc { name: format!("p{}", p.name), ..p }));
        pprocs.push((g, forward));
    }
    let procs = pprocs;
    let mut generics: BTreeMap<String, Vec<&Proc>> = BTreeMap::new();
    for (g, p) in &procs {
        generics.entry(g.clone()).or_default().push(p);
    }
    for (g, ps) in &generics {
        let _ = writeln!(o, "    interface {g}");
        for p in ps {
            write_proc_header(&mut o, "        ", p);
            o.push_str("            use, intrinsic :: iso_c_binding\n            import\n            implicit none\n");
            write_dummies(&mut o, "            ", p);
            let kw = if p.result.is_some() { "function" } else { "subroutine" };
            let _ = writeln!(o, "        end {kw} {}", p.name);
        }
        let _ = writeln!(o, "    end interface {g}");
    }
    // MPI_F_sync_reg: an opaque call, so that the compiler keeps `buf` in memory around it.
    o.push_str(
        "    interface MPI_F_sync_reg\n        subroutine mpi_f_sync_reg_f08ts(buf)\n            \
         type(*), dimension(..), asynchronous :: buf\n        end subroutine mpi_f_sync_reg_f08ts\n    \
         end interface MPI_F_sync_reg\n",
    );
    o.push_str("end module mpi_f08\n\n");
    o.push_str(
        "subroutine mpi_f_sync_reg_f08ts(buf)\n    implicit none\n    \
         type(*), dimension(..), asynchronous :: buf\nend subroutine mpi_f_sync_reg_f08ts\n\n",
    );
    // The procedures.
    for (_, p) in &procs {
        write_proc_header(&mut o, "", p);
        o.push_str(
            "    use, intrinsic :: iso_c_binding\n    use mpi_f08_types\n    use mpi_f08_compile_constants\n    \
             use mpi_f08_link_constants\n    use mpi_f08_callbacks\n    use oxmpi_f08_support\n    implicit none\n",
        );
        write_dummies(&mut o, "    ", p);
        o.push_str(&p.body);
        let kw = if p.result.is_some() { "function" } else { "subroutine" };
        let _ = writeln!(o, "end {kw} {}\n", p.name);
    }
    o.push_str("! Routines of MPICH's mpi_f08 left out of this version (a program using one does not\n! compile):\n");
    for (name, why) in &missing {
        let _ = writeln!(o, "!   {name}: {why}");
    }
    Ok((o, missing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::decl;

    const TSV: &str = include_str!("data/mpich-abi.tsv");
    const EXPORTS: &str = include_str!("data/libmpichfort-exports.tsv");

    fn generate() -> (String, Vec<(String, String)>) {
        let d = decl::parse_decls(include_str!("mpi.decl")).unwrap();
        let cbs: Vec<String> = d.callbacks.iter().map(|c| c.name.clone()).collect();
        mpi_f08_f90(&d, TSV, EXPORTS, &cbs).unwrap()
    }

    #[test]
    fn specifics_are_mpichs() {
        let s = specifics(EXPORTS);
        assert!(s.len() > 500, "{}", s.len());
        let send: Vec<_> = s.iter().filter(|x| x.base == "mpi_send").map(|x| (x.ts, x.large)).collect();
        assert_eq!(send, [(true, false), (true, true)]);
    }

    #[test]
    fn module_has_the_core_routines() {
        let (src, missing) = generate();
        for want in [
            "subroutine mpi_send_f08ts(buf, count, datatype, dest, tag, comm, ierror)",
            "subroutine mpi_send_f08ts_large(buf, count, datatype, dest, tag, comm, ierror)",
            "interface MPI_Send\n",
            "subroutine mpi_comm_rank_f08(comm, rank, ierror)",
            "call pmpi_comm_rank(comm, rank, ox_ierr)",
            "bind(C, name=\"PMPI_Send_c\")",
            "function mpi_wtime_f08() result(ox_result)",
            "type(MPI_Comm), parameter :: MPI_COMM_WORLD = MPI_Comm(1140850688)",
            "logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .true.",
            "elemental logical function mpi_comm_eq(a, b)",
            "type(*), dimension(..), asynchronous :: buf",
        ] {
            assert!(src.contains(want), "mpi_f08.f90 lacks {want:?}");
        }
        // The core of MPI is there; what is left out is listed with a reason.
        for core in [
            "mpi_recv_f08ts",
            "mpi_wait_f08",
            "mpi_waitall_f08",
            "mpi_allreduce_f08ts",
            "mpi_init_f08",
            "mpi_op_create_f08",
            "mpi_comm_create_keyval_f08",
            "mpi_grequest_start_f08",
        ] {
            assert!(!missing.iter().any(|(m, _)| m == core), "{core} missing: {missing:?}");
        }
        for l in src.lines() {
            assert!(l.len() <= 132, "line too long for free form: {l}");
        }
    }

    #[test]
    fn buffers_know_their_counts() {
        let d = decl::parse_decls(include_str!("mpi.decl")).unwrap();
        let f = |n: &str| d.functions.iter().find(|f| f.name == n).unwrap().clone();
        assert_eq!(buf_mode(&f("MPI_Send"), 0), BufMode::Typed(1, 2));
        assert_eq!(buf_mode(&f("MPI_Sendrecv"), 5), BufMode::Typed(6, 7));
        // Reduce: both buffers share one count and datatype.
        assert_eq!(buf_mode(&f("MPI_Reduce"), 1), BufMode::Contiguous);
        assert_eq!(buf_mode(&f("MPI_Gather"), 0), BufMode::Contiguous);
        assert_eq!(buf_mode(&f("MPI_Get_address"), 0), BufMode::Address);
    }
}

// ---------------------------------------------------------------------------------------------
// Explicit interfaces of the `use mpi` module

/// Routines whose Fortran form differs from their C declaration in ways `classify` does not
/// know (MPI-1 routines whose MPI_Aint arguments are default INTEGERs in Fortran, keyval
/// constructors whose extra state is kept by value): `use mpi` leaves them implicit, as
/// mpif.h does.
const IMPLICIT_IN_USE_MPI: &[&str] = &[
    "MPI_Address",
    "MPI_Type_extent",
    "MPI_Type_lb",
    "MPI_Type_ub",
    "MPI_Type_hvector",
    "MPI_Type_hindexed",
    "MPI_Type_struct",
    "MPI_Keyval_create",
    "MPI_Comm_create_keyval",
    "MPI_Type_create_keyval",
    "MPI_Win_create_keyval",
];

/// The declaration of dummy `p` in the `use mpi` interface (mpif.h's types: handles and
/// statuses are INTEGERs); `None` when the routine is better left implicit. Routines with
/// choice buffers are: as in MPICH's module, so that programs keep passing scalars for the
/// counts and displacements of MPI_IN_PLACE, and keep defining their own `mpi_send` over
/// `pmpi_send` (the Fortran profiling interface) in a unit that uses the module. The weights,
/// which take MPI_UNWEIGHTED (a scalar), skip the compiler's type and rank checks
/// (gfortran's and Intel's NO_ARG_CHECK).
fn use_mpi_dummy(p: &Param, k: &Kind) -> Option<Vec<String>> {
    let n = &p.name;
    Some(match k {
        Kind::Dropped => Vec::new(),
        Kind::Buffer(_) => return None,
        Kind::Weights { .. } => vec![
            format!("!GCC$ ATTRIBUTES NO_ARG_CHECK :: {n}"),
            format!("!DEC$ ATTRIBUTES NO_ARG_CHECK :: {n}"),
            format!("type(*), dimension(*) :: {n}"),
        ],
        Kind::Handle { array, .. } => vec![format!("integer :: {n}{}", if *array { "(*)" } else { "" })],
        Kind::Int { fkind, logical, array, dims, .. } => {
            let dim = match (array, dims) {
                (true, Some(d)) => format!("({d},*)"),
                (true, None) => "(*)".into(),
                _ => String::new(),
            };
            vec![format!("{} :: {n}{dim}", int_type(fkind, *logical))]
        }
        Kind::Status { array, .. } => {
            vec![format!("integer :: {n}(MPI_STATUS_SIZE{})", if *array { ",*" } else { "" })]
        }
        Kind::Str { .. } => vec![format!("character(len=*) :: {n}")],
        Kind::Proc(_) => vec![format!("external :: {n}")],
        // Base addresses are INTEGER(KIND=MPI_ADDRESS_KIND) or TYPE(C_PTR) in `use mpi`.
        Kind::AddrVal { c_ptr: true, .. } => return None,
        Kind::AddrVal { fint: true, .. } => vec![format!("integer :: {n}")],
        Kind::AddrVal { .. } => vec![format!("integer(kind=MPI_ADDRESS_KIND) :: {n}")],
    })
}

/// The explicit interfaces of `use mpi`: one per subroutine of the mpif.h binding (the
/// routines libmpichfort exports) with its dummies and `ierror`, so the compiler checks the
/// number and types of the arguments. Routines left out (listed with why in the second
/// value) stay implicit, as in mpif.h: functions, routines the binding stubs, and those
/// whose Fortran form `use_mpi_dummy` cannot express.
pub fn use_mpi_interfaces(
    decls: &Decls,
    exports_tsv: &str,
    callbacks: &[String],
) -> Result<(String, Vec<(String, String)>), String> {
    let by_name: BTreeMap<String, &Func> = decls.functions.iter().map(|f| (f.name.to_lowercase(), f)).collect();
    let mut out = String::new();
    let mut implicit = Vec::new();
    for base in fortran_gen::fortran_routines(exports_tsv) {
        let Some(f) = by_name.get(&base) else {
            implicit.push((base, "no C declaration".into()));
            continue;
        };
        let why = if f.ret.base != "int" || f.ret.pointers != 0 {
            Some("a function".to_string())
        } else if IMPLICIT_IN_USE_MPI.contains(&f.name.as_str()) {
            Some("its Fortran arguments differ from C's".into())
        } else if matches!(f.name.as_str(), "MPI_Sizeof") {
            Some("generic, in the module already".into())
        } else {
            fortran_gen::stub_reason(f, callbacks).map(|r| format!("a stub ({r})"))
        };
        if let Some(why) = why {
            implicit.push((base, why));
            continue;
        }
        let mut names = Vec::new();
        let mut lines = Vec::new();
        let mut refused = None;
        for (i, p) in f.params.iter().enumerate() {
            let decl = classify(f, i, p, callbacks).ok().and_then(|k| use_mpi_dummy(p, &k));
            match decl {
                Some(d) if d.is_empty() => {}
                Some(d) => {
                    names.push(p.name.clone());
                    lines.extend(d);
                }
                None => {
                    refused = Some(format!("argument {} (a choice buffer or a base address)", p.name));
                    break;
                }
            }
        }
        if let Some(why) = refused {
            implicit.push((base, why));
            continue;
        }
        names.push("ierror".into());
        lines.push("integer :: ierror".into());
        let body = lines.join("\n");
        let kinds: Vec<&str> = ["MPI_ADDRESS_KIND", "MPI_OFFSET_KIND", "MPI_COUNT_KIND", "MPI_STATUS_SIZE"]
            .into_iter()
            .filter(|k| body.contains(k))
            .collect();
        wrap(&mut out, "        ", &format!("subroutine {base}({})", names.join(", ")));
        if !kinds.is_empty() {
            let _ = writeln!(out, "            import :: {}", kinds.join(", "));
        }
        out.push_str("            implicit none\n");
        for line in lines {
            let _ = writeln!(out, "            {line}");
        }
        let _ = writeln!(out, "        end subroutine {base}");
    }
    Ok((out, implicit))
}

#[cfg(test)]
mod use_mpi_tests {
    use super::*;
    use crate::abi::decl;

    #[test]
    fn use_mpi_declares_the_subroutines() {
        let d = decl::parse_decls(include_str!("mpi.decl")).unwrap();
        let cbs: Vec<String> = d.callbacks.iter().map(|c| c.name.clone()).collect();
        let (src, implicit) = use_mpi_interfaces(&d, include_str!("data/libmpichfort-exports.tsv"), &cbs).unwrap();
        for want in [
            "subroutine mpi_comm_rank(comm, rank, ierror)",
            "subroutine mpi_probe(source, tag, comm, status, ierror)",
            "integer :: status(MPI_STATUS_SIZE)\n",
            "!GCC$ ATTRIBUTES NO_ARG_CHECK :: sourceweights\n",
            "subroutine mpi_waitall(count, array_of_requests, array_of_statuses, ierror)",
            "integer :: array_of_statuses(MPI_STATUS_SIZE,*)\n",
            "logical :: flag\n",
            "character(len=*) :: comm_name\n",
            "integer(kind=MPI_OFFSET_KIND) :: offset\n",
            "external :: user_fn\n",
        ] {
            assert!(src.contains(want), "no {want:?} in the interfaces");
        }
        let names: Vec<&str> = implicit.iter().map(|(n, _)| n.as_str()).collect();
        for left in ["mpi_wtime", "mpi_address", "mpi_alloc_mem", "mpi_send", "mpi_alltoallv"] {
            assert!(names.contains(&left), "{left} should stay implicit: {implicit:?}");
        }
        // Most of the binding is checked: left implicit are the routines with choice
        // buffers, the functions, stubs and the few routines with Fortran-only forms.
        let declared = src.matches("end subroutine").count();
        assert!(declared > 200 && declared > implicit.len(), "{declared} declared, {} implicit", implicit.len());
    }
}

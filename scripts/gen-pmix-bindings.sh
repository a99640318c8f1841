#!/usr/bin/env bash
# Regenerates src/pmi/pmix_sys.rs, the Rust declarations of the PMIx structs, constants and
# exported-function signatures that src/pmi/pmix.rs uses (the library itself is opened with
# dlopen at run time, like libfabric).
#
# Run by developers only (never by the build or CI), on Debian 12 with:
#   apt-get install libpmix-dev libclang-dev
#   cargo install bindgen-cli --root /tmp/bg      # then BINDGEN=/tmp/bg/bin/bindgen, or on PATH
#
# The allowlists below name exactly what the bindings use; add an item here, rerun, and add
# it to the tables of tests/pmix_abi.rs (that test fails until every declared struct and
# field is listed there). Types only reached through pointers are opaque.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=src/pmi/pmix_sys.rs
BINDGEN=${BINDGEN:-bindgen}
INCLUDE=/usr/lib/x86_64-linux-gnu/pmix2/include
command -v "$BINDGEN" >/dev/null || { echo "bindgen not found; see the header of $0" >&2; exit 1; }
[ -f "$INCLUDE/pmix.h" ] || { echo "PMIx headers missing: apt-get install libpmix-dev" >&2; exit 1; }
PMIX_DEV_VERSION=$(dpkg-query -W -f='${Version}' libpmix-dev 2>/dev/null || echo unknown)

WORK=$(mktemp -d)
# shellcheck source=scripts/bindgen-common.sh
. scripts/bindgen-common.sh
trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/wrapper.h" <<'H'
#include <pmix.h>

/* The exported functions are resolved with dlsym, so the bindings need their pointer types,
 * taken from the declarations themselves. */
typedef __typeof__(PMIx_Init) *PMIx_Init_fn;
typedef __typeof__(PMIx_Finalize) *PMIx_Finalize_fn;
typedef __typeof__(PMIx_Abort) *PMIx_Abort_fn;
typedef __typeof__(PMIx_Put) *PMIx_Put_fn;
typedef __typeof__(PMIx_Commit) *PMIx_Commit_fn;
typedef __typeof__(PMIx_Fence) *PMIx_Fence_fn;
typedef __typeof__(PMIx_Get) *PMIx_Get_fn;
typedef __typeof__(PMIx_Value_destruct) *PMIx_Value_destruct_fn;
typedef __typeof__(PMIx_Error_string) *PMIx_Error_string_fn;
H

TYPES=(
    pmix_proc_t pmix_value_t pmix_info_t pmix_byte_object_t
    pmix_status_t pmix_rank_t pmix_data_type_t pmix_scope_t pmix_info_directives_t
    pmix_nspace_t pmix_key_t
    PMIx_Init_fn PMIx_Finalize_fn PMIx_Abort_fn PMIx_Put_fn PMIx_Commit_fn PMIx_Fence_fn
    PMIx_Get_fn PMIx_Value_destruct_fn PMIx_Error_string_fn
)
# Reached from pmix_value_t's union but never looked into: kept at their size, fields unbound.
# (The structs declared without a tag, `typedef struct {...} pmix_envar_t`, cannot be made
# opaque this way and come with their fields.)
OPAQUE=(
    pmix_proc_info pmix_data_array pmix_coord pmix_geometry pmix_device_distance
    pmix_endpoint pmix_data_buffer pmix_proc_stats timeval
)
CONST_C_INT=(PMIX_SUCCESS PMIX_ERR_NOT_FOUND)
CONST_U16=(
    PMIX_UNDEF PMIX_BOOL PMIX_BYTE PMIX_STRING PMIX_SIZE PMIX_PID PMIX_INT PMIX_INT8 PMIX_INT16
    PMIX_INT32 PMIX_INT64 PMIX_UINT PMIX_UINT8 PMIX_UINT16 PMIX_UINT32 PMIX_UINT64 PMIX_PROC_RANK
)
CONST_U8=(PMIX_GLOBAL)
CONST_USIZE=(PMIX_MAX_NSLEN PMIX_MAX_KEYLEN)
# Attribute names (C string macros).
KEYS=(PMIX_JOB_SIZE PMIX_NODEID PMIX_APPNUM PMIX_COLLECT_DATA PMIX_UNIV_SIZE)

join() { local IFS='|'; echo "^($*)\$"; }

TYPE_ARGS=()
for t in "${OPAQUE[@]}"; do TYPE_ARGS+=(--opaque-type "^$t\$"); done

"$BINDGEN" "$WORK/wrapper.h" \
    --rust-target 1.85 --rust-edition 2024 \
    --allowlist-type "$(join "${TYPES[@]}")" \
    --allowlist-var "$(join "${CONST_C_INT[@]}" "${CONST_U16[@]}" "${CONST_U8[@]}" "${CONST_USIZE[@]}" "${KEYS[@]}")" \
    "${TYPE_ARGS[@]}" \
    --ctypes-prefix ::core::ffi \
    --no-layout-tests --no-doc-comments \
    --no-debug '.*' \
    --sort-semantically \
    -- -I"$INCLUDE" >"$WORK/raw.rs"

retype pmix_status_t "${CONST_C_INT[@]}"
retype pmix_data_type_t "${CONST_U16[@]}"
retype pmix_scope_t "${CONST_U8[@]}"
retype usize "${CONST_USIZE[@]}"

write_bindings gen-pmix-bindings.sh libpmix-dev "$PMIX_DEV_VERSION" pmix_abi.rs

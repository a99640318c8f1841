#!/usr/bin/env bash
# Regenerates src/transport/net/fabric_sys.rs, the Rust declarations of the libfabric
# structs, constants and exported-function signatures that src/transport/net/fabric.rs uses.
#
# Run by developers only (never by the build or CI), on Debian 12 with:
#   apt-get install libfabric-dev libclang-dev
#   cargo install bindgen-cli --root /tmp/bg      # then BINDGEN=/tmp/bg/bin/bindgen, or on PATH
#
# The allowlists below name exactly what the bindings use; add an item here, rerun, and add
# it to the layout table of tests/fabric_abi.rs (that test fails until every declared struct
# and field is listed there). Types that are only ever handled through pointers are opaque:
# their size is kept, their fields are not bound.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=src/transport/net/fabric_sys.rs
BINDGEN=${BINDGEN:-bindgen}
command -v "$BINDGEN" >/dev/null || { echo "bindgen not found; see the header of $0" >&2; exit 1; }
[ -f /usr/include/rdma/fabric.h ] || { echo "libfabric headers missing: apt-get install libfabric-dev" >&2; exit 1; }
FABRIC_DEV_VERSION=$(dpkg-query -W -f='${Version}' libfabric-dev 2>/dev/null || echo unknown)

WORK=$(mktemp -d)
# shellcheck source=scripts/bindgen-common.sh
. scripts/bindgen-common.sh
trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/wrapper.h" <<'H'
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

/* The exported functions are resolved with dlsym, so the bindings need their pointer types,
 * taken from the declarations themselves. */
typedef __typeof__(fi_version) *fi_version_fn;
typedef __typeof__(fi_getinfo) *fi_getinfo_fn;
typedef __typeof__(fi_freeinfo) *fi_freeinfo_fn;
typedef __typeof__(fi_dupinfo) *fi_dupinfo_fn;
typedef __typeof__(fi_fabric) *fi_fabric_fn;
typedef __typeof__(fi_strerror) *fi_strerror_fn;
H

# Structs and enums whose layout or values the bindings use.
TYPES=(
    fi_info fi_tx_attr fi_rx_attr fi_ep_attr fi_domain_attr fi_fabric_attr
    fid fi_ops fid_fabric fi_ops_fabric fid_domain fi_ops_domain
    fid_ep fi_ops_ep fi_ops_cm fi_ops_tagged fi_ops_rma fi_ops_atomic
    fid_cq fi_ops_cq fi_cq_attr fi_cq_tagged_entry fi_cq_err_entry
    fid_av fi_ops_av fi_av_attr fid_mr fi_ops_mr
    fi_msg_tagged fi_msg_rma fi_rma_iov fi_ioc fi_atomic_attr
    fi_addr_t fid_t
    fi_ep_type fi_progress fi_threading fi_resource_mgmt fi_av_type fi_cq_format
    fi_wait_obj fi_cq_wait_cond fi_datatype fi_op
    fi_version_fn fi_getinfo_fn fi_freeinfo_fn fi_dupinfo_fn fi_fabric_fn fi_strerror_fn
)
# Reached from the tables above but never looked into: kept at their size, fields unbound
# (fi_mr_attr's inner union is then unused and blocklisted below).
OPAQUE=(
    fid_nic fid_eq fid_wait fid_poll fid_cntr fid_pep fid_stx fid_mc fid_av_set
    fi_eq_attr fi_wait_attr fi_poll_attr fi_cntr_attr fi_av_set_attr fi_mr_attr
    fi_ops_msg fi_ops_collective fi_msg_atomic
)
# #define'd and enum constants. Grouped by the C type of the field or argument they go into,
# which bindgen cannot know for a macro; the groups are retyped after generation.
CONST_U64=(
    FI_MSG FI_RMA FI_TAGGED FI_ATOMIC FI_READ FI_WRITE FI_RECV FI_SEND FI_TRANSMIT
    FI_REMOTE_READ FI_REMOTE_WRITE FI_COMPLETION FI_INJECT FI_SOURCE FI_DIRECTED_RECV
    FI_REMOTE_CQ_DATA FI_DELIVERY_COMPLETE FI_TRANSMIT_COMPLETE FI_INJECT_COMPLETE
    FI_SELECTIVE_COMPLETION FI_CONTEXT FI_CONTEXT2 FI_MULTI_RECV FI_MORE FI_FENCE
    FI_LOCAL_COMM FI_REMOTE_COMM FI_HMEM FI_RMA_EVENT FI_NUMERICHOST FI_PROV_ATTR_ONLY
    FI_ORDER_SAS FI_ORDER_RAW FI_ORDER_WAR FI_ORDER_WAW FI_ORDER_RAR
)
CONST_C_INT=(
    FI_MR_LOCAL FI_MR_RAW FI_MR_VIRT_ADDR FI_MR_ALLOCATED FI_MR_PROV_KEY FI_MR_MMU_NOTIFY
    FI_MR_RMA_EVENT FI_MR_ENDPOINT FI_MR_HMEM
    FI_SUCCESS FI_EAGAIN FI_EINTR FI_ENOMEM FI_EINVAL FI_ENOSYS FI_ENODATA FI_ECANCELED
    FI_EMSGSIZE FI_ETIMEDOUT FI_ENOENT FI_EAVAIL FI_ETRUNC FI_EOTHER FI_ENOCQ
    FI_GETWAIT FI_ENABLE
)
CONST_U32=(FI_MAJOR_VERSION FI_MINOR_VERSION FI_SOCKADDR_IN FI_SOCKADDR_IN6 FI_FORMAT_UNSPEC)

join() { local IFS='|'; echo "^($*)\$"; }

TYPE_ARGS=()
for t in "${OPAQUE[@]}"; do TYPE_ARGS+=(--opaque-type "^$t\$"); done

"$BINDGEN" "$WORK/wrapper.h" \
    --rust-target 1.85 --rust-edition 2024 \
    --allowlist-type "$(join "${TYPES[@]}")" \
    --allowlist-var "$(join "${CONST_U64[@]}" "${CONST_C_INT[@]}" "${CONST_U32[@]}")" \
    "${TYPE_ARGS[@]}" \
    --blocklist-type iovec --raw-line 'pub use libc::iovec;' \
    --blocklist-type '^fi_mr_attr__.*' \
    --default-enum-style consts --no-prepend-enum-name \
    --ctypes-prefix ::core::ffi \
    --no-layout-tests --no-doc-comments \
    --no-debug '.*' \
    --sort-semantically \
    -- -I/usr/include >"$WORK/raw.rs"

# Retype the constants: `pub const NAME: <whatever bindgen chose> = VALUE;`.
retype u64 "${CONST_U64[@]}"
retype ::core::ffi::c_int "${CONST_C_INT[@]}"
retype u32 "${CONST_U32[@]}"
# The rest of each anonymous C enum comes along with the constants taken from it; drop it.
sed -i -E '/^pub const [A-Z0-9_]+: _bindgen_ty_[0-9]+ = .*;$/d; /^pub type _bindgen_ty_[0-9]+ = .*;$/d' "$WORK/raw.rs"

write_bindings gen-fabric-bindings.sh libfabric-dev "$FABRIC_DEV_VERSION" fabric_abi.rs

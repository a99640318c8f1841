#!/usr/bin/env bash
# Long runs of the differential harness (ctests/diff_harness.h) over every tunable path:
# each environment below in turn, at several rank counts (more ranks than cores included),
# for a range of seeds. Stops at the first failing run and prints how to replay it.
#
#   bash scripts/diff-matrix.sh --prefix DIR [--seeds FIRST-LAST] [--iters N] [--np "2 3 4 5 8 12"]
#
# DIR is an oxmpi install (scripts/install.sh). A failure names the seed and iteration;
# replay it with OXMPI_DIFF_SEED=S OXMPI_DIFF_ONLY=I and the same environment.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix= seeds=1-20 iters=300 nps="2 3 4 5 8 12"
while [ $# -gt 0 ]; do
    case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    *) echo "diff-matrix.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
[ -n "$prefix" ] || { echo "diff-matrix.sh: --prefix DIR is required" >&2; exit 2; }
first=${seeds%-*} last=${seeds#*-}
envs=(
    ""
    "OXMPI_SPARSE=0"
    "OXMPI_COLL_SHM=0"
    "OXMPI_CMA=0 OXMPI_EAGER_PIECE=0"
    "OXMPI_CMA_SPLIT=0 OXMPI_EAGER_LIMIT=1024"
    "OXMPI_COLL_SHM_COPY_MIN=0 OXMPI_COLL_SHM_BCAST_COPY_MIN=0 OXMPI_COLL_SHM_REDUCE_COPY_MIN=0 OXMPI_COLL_SHM_EXCHANGE_COPY_MIN=0 OXMPI_COLL_SHM_ROOTED_COPY_MIN=0 OXMPI_COLL_PIECES=1 OXMPI_SPARSE_MIN=0"
    "OXMPI_COLL_SHM_GATHER_MAX=0 OXMPI_COLL_SHM_SCATTER_MAX=0 OXMPI_COLL_SHM_EXCHANGE_MAX=0 OXMPI_COLL_PIECES=0"
    "OXMPI_FAKE_NODES=2"
    "OXMPI_FAKE_NODES=3:cyclic"
)
for a in recdbl rabenseifner ring reduce_bcast; do envs+=("OXMPI_COLL_SHM=0 OXMPI_ALLREDUCE_ALG=$a"); done
for a in binomial scatter_allgather; do envs+=("OXMPI_COLL_SHM=0 OXMPI_BCAST_ALG=$a"); done
for a in ring recdbl bruck direct; do envs+=("OXMPI_COLL_SHM=0 OXMPI_ALLGATHER_ALG=$a"); done
for a in post pairwise bruck; do envs+=("OXMPI_COLL_SHM=0 OXMPI_ALLTOALL_ALG=$a"); done
for a in linear binomial; do envs+=("OXMPI_COLL_SHM=0 OXMPI_GATHER_ALG=$a"); done
for a in direct reduce_scatter halving pairwise; do envs+=("OXMPI_COLL_SHM=0 OXMPI_REDUCE_SCATTER_ALG=$a"); done

bin=$(mktemp -d)/diff
"$prefix/bin/mpicc" -O2 -Ictests ctests/diff_default.c -o "$bin"
runs=0
for ((s = first; s <= last; s++)); do
    for e in "${envs[@]}"; do
        for np in $nps; do
            out=$(env $e OXMPI_DIFF_SEED=$s OXMPI_DIFF_ITERS=$iters timeout 900 "$prefix/bin/mpiexec" -n "$np" "$bin" 2>&1) || true
            runs=$((runs + 1))
            if ! grep -qx "No Errors" <<<"$out"; then
                echo "FAILED: seed $s, np $np, environment '$e'" >&2
                grep -m 5 "" <<<"$out" >&2
                exit 1
            fi
        done
    done
    echo "seed $s: $((${#envs[@]})) environments x np {$nps} passed"
done
echo "$runs runs of $iters iterations passed"

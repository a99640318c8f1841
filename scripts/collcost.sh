#!/usr/bin/env bash
# Instructions (callgrind Ir) per blocking collective call, per rank.
#   scripts/collcost.sh PREFIX [NP] [OPS] [SIZES] [ITERS]    PREFIX: an MPI install with bin/mpicc
# and bin/mpiexec (an oxmpi install from scripts/install.sh). Prints per op and size the Ir of
# one loop iteration on each rank (ranks in pid order; the loop's own dispatch adds 20-100).
# A rank that waits spins inside the call, so waiting ranks' counts move with timing; the
# root's sends and np 1 are deterministic.
set -euo pipefail
prefix=$1; np=${2:-2}; ops=${3:-bcast,scatter,gather,reduce,allreduce}; sizes=${4:-0,8}; iters=${5:-1000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d /tmp/collcost.XXXXXX)
"$prefix/bin/mpicc" -O2 -w -o "$work/collcost" "$here/collcost.c"
IFS=, read -r -a opl <<< "$ops"
IFS=, read -r -a szl <<< "$sizes"
for op in "${opl[@]}"; do
    for s in "${szl[@]}"; do
        d="$work/$op.$s"
        mkdir -p "$d"
        timeout 300 "$prefix/bin/mpiexec" -n "$np" valgrind --tool=callgrind --collect-atstart=no \
            --callgrind-out-file="$d/cg.%p" "$work/collcost" "$op" "$s" "$iters" > /dev/null 2>&1
        printf '%-22s %6s B:' "$op" "$s"
        for f in $(ls "$d" | sort -t. -k2 -n); do
            ir=$(awk '/^summary:/ {print $2}' "$d/$f")
            printf ' %8d' $((ir / iters))
        done
        echo
    done
done
rm -rf "$work"

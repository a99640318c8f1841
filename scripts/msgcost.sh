#!/usr/bin/env bash
# Instructions (callgrind Ir) per message of the small-message path, per side and size.
#   scripts/msgcost.sh PREFIX [SIZES] [ROUNDS]      PREFIX: an oxmpi install (scripts/install.sh)
# Prints, per size: Ir per message of MPI_Send (rank 0), MPI_Recv of an arrived message
# (rank 1), MPI_Isend + share of MPI_Waitall (rank 0), MPI_Irecv and the share of
# MPI_Waitall (rank 1). Waiting never spins in the measured regions (see msgcost.c), so the
# counts are stable on a loaded machine. Sets OXMPI_YIELD_US high so no rank sleeps on its
# doorbell (a futex wake would otherwise show up at random).
set -euo pipefail
prefix=$1; sizes=${2:-0,8,64,1024}; rounds=${3:-20}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d /tmp/msgcost.XXXXXX)
"$prefix/bin/mpicc" -O2 -std=gnu99 -w -o "$work/msgcost" "$here/msgcost.c"
window=8
printf '%8s %10s %10s %10s %10s %10s\n' size send recv isend irecv waitall
IFS=, read -r -a sz <<< "$sizes"
for s in "${sz[@]}"; do
    ( cd "$work" && OXMPI_YIELD_US=100000000 "$prefix/bin/mpiexec" -n 2 valgrind --tool=callgrind \
        --collect-atstart=no --toggle-collect=measure_send --toggle-collect=measure_recv \
        --toggle-collect=measure_isend --toggle-collect=measure_irecv --toggle-collect=measure_waitall \
        --callgrind-out-file="$work/cg.$s.%p" ./msgcost "$s" "$rounds" > "$work/log.$s" 2>&1 )
    declare -A ir=()
    for f in "$work"/cg.$s.*; do
        for fn in measure_send measure_recv measure_isend measure_irecv measure_waitall; do
            v=$(callgrind_annotate --inclusive=yes "$f" 2> /dev/null | grep -E "\\b$fn\\b" | head -1 |
                awk '{gsub(",", "", $1); print $1}' || true)
            [ -n "$v" ] && ir[$fn]=$v
        done
    done
    per() { echo $(( ${ir[$1]:-0} / (rounds * window) )); }
    printf '%8s %10s %10s %10s %10s %10s\n' "$s" "$(per measure_send)" "$(per measure_recv)" \
        "$(per measure_isend)" "$(per measure_irecv)" "$(per measure_waitall)"
    unset ir
done
[ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"

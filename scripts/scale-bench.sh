#!/usr/bin/env bash
# Scale on one node: for each rank count and MPI, the time MPI_Init takes and the shared memory
# the job holds once it is up, with a barrier and an allreduce loop checked for the right sum
# (ctests/bench/scale.c). Every MPI is started by its own launcher on this machine, ranks
# unbound: oxmpi by its mpiexec, MPICH by its Hydra (mpiexec.mpich), Open MPI by its mpirun
# (--oversubscribe). Shared memory is /proc/meminfo's Shmem seen by rank 0 after the loop,
# minus the value before the launch: run it on a quiet machine (nothing else creating shared
# memory meanwhile).
#
#   scripts/scale-bench.sh [--np 2,16,64,128,256] [--mpis oxmpi,mpich,openmpi] [--launches K]
#                          [--timeout S] [--oxmpi-prefix DIR] [--out DIR]
#
# Defaults: the rank counts above, all three MPIs, 3 launches (the median of each figure),
# 300 s per launch. Writes DIR/scale.csv (mpi,np,init_max_ms,init_median_ms,shmem_mib,
# wall_ms; "timeout" or "failed" when a launch did not end well; default DIR:
# /tmp/oxmpi-scale-DATE). Needs mpich, openmpi-bin and libopenmpi-dev for those MPIs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nps=2,16,64,128,256
mpis=oxmpi,mpich,openmpi
launches=3
limit=300
prefix=
out=/tmp/oxmpi-scale-$(date +%Y%m%d-%H%M%S)

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
        --np) nps=$2; shift 2 ;;
        --mpis) mpis=$2; shift 2 ;;
        --launches) launches=$2; shift 2 ;;
        --timeout) limit=$2; shift 2 ;;
        --oxmpi-prefix) prefix=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) usage ;;
    esac
done

mkdir -p "$out"
cd "$root"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
declare -A launcher
for mpi in ${mpis//,/ }; do
    case $mpi in
        oxmpi)
            if [ -z "$prefix" ]; then
                prefix=$out/prefix
                bash scripts/install.sh --prefix "$prefix" --profile release > "$out/install.log"
            fi
            cc=$prefix/bin/mpicc launcher[$mpi]="$prefix/bin/mpiexec" ;;
        mpich) cc=mpicc.mpich launcher[$mpi]=mpiexec.mpich ;;
        openmpi) cc=mpicc.openmpi launcher[$mpi]="mpirun.openmpi --oversubscribe" ;;
        *) echo "scale-bench: unknown MPI $mpi (oxmpi, mpich, openmpi)" >&2; exit 2 ;;
    esac
    command -v "${cc%% *}" > /dev/null || { echo "scale-bench: $cc not found (install $mpi)" >&2; exit 1; }
    "$cc" -O2 -o "$out/scale-$mpi" ctests/bench/scale.c
done

shmem_kib() { awk '/^Shmem:/ { print $2 }' /proc/meminfo; }
median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "mpi,np,init_max_ms,init_median_ms,shmem_mib,wall_ms" > "$out/scale.csv"
for np in ${nps//,/ }; do
    for mpi in ${mpis//,/ }; do
        rows=()
        outcome=ok
        for ((k = 0; k < launches; k++)); do
            base=$(shmem_kib)
            t0=$(date +%s%N)
            set +e
            # shellcheck disable=SC2086 # the launcher's words
            OXMPI_SCALE_SHMEM_BASE_KIB=$base timeout -k 10 "$limit" ${launcher[$mpi]} -n "$np" "$out/scale-$mpi" \
                > "$out/last.log" 2>&1
            rc=$?
            set -e
            t1=$(date +%s%N)
            line=$(grep -o 'init_max_ms=.*' "$out/last.log" || true)
            if [ $rc = 124 ] || [ $rc = 137 ]; then outcome=timeout; break; fi
            if [ $rc != 0 ] || [[ $line != *ok=1 ]]; then
                outcome=failed
                echo "scale-bench: $mpi at np $np failed (exit $rc): $(tail -3 "$out/last.log")" >&2
                break
            fi
            read -r imax imed shm _ <<< "$(sed 's/[a-z_]*=//g' <<< "$line")"
            rows+=("$imax $imed $((shm / 1024)) $(((t1 - t0) / 1000000))")
        done
        if [ $outcome = ok ]; then
            fields=()
            for col in 1 2 3 4; do
                fields+=("$(printf '%s\n' "${rows[@]}" | cut -d' ' -f$col | median)")
            done
            echo "$mpi,$np,$(IFS=,; echo "${fields[*]}")" | tee -a "$out/scale.csv"
        else
            echo "$mpi,$np,$outcome,$outcome,$outcome,$outcome" | tee -a "$out/scale.csv"
        fi
    done
done
echo "scale-bench: results in $out/scale.csv (load $(cut -d' ' -f1-3 /proc/loadavg))"

#!/usr/bin/env bash
# oxmpi programs started by Slurm's srun with PMI-2 (`srun --mpi=pmi2`) and PMIx (`srun
# --mpi=pmix`, which needs Debian's libpmix2), on the one-node cluster of scripts/slurm.sh.
# Root only (the daemons run as root).
#
#   scripts/slurm-tests.sh [--keep-cluster] [--profile debug|release] [--filter LIST]
#
#   --keep-cluster  use the cluster already up (scripts/slurm.sh up) and leave it up; by
#                   default the script brings it up and takes it down on exit, also on failure
#   --profile P     cargo profile to build and test (default release)
#   --filter LIST   the C tests run under srun (OXMPI_CTEST_FILTER syntax; default: a
#                   representative set of point-to-point, collective, communicator and
#                   fatal-error tests)
#
# Builds oxmpi, installs it under a temporary prefix, and checks, each on real output and
# status: scripts/launcher-hosts-ring.c under `srun -n 1/2/4 --mpi=pmi2` and `--mpi=pmix`
# (every rank's line, the token gone round, MPI_APPNUM 0, PMI-2 or PMIx spoken), OXMPI_PMI=x
# with no PMIx server (a clear error), the same with OXMPI_PMI=1 (Slurm's plugin
# serves PMI-1 too) and under Hydra with OXMPI_PMI=2, srun without --mpi (singletons and a
# warning), MPI_Abort from one rank ending the step promptly with a non-zero status
# and the abort message, a rank killed with SIGKILL ending the step under `srun -K`, our
# mpiexec inside `salloc` (the allocation's node, its proxy started by srun, abort); then the C
# tests of LIST through tests/ctests.rs with OXMPI_CTEST_LAUNCHER="srun --mpi=pmi2", and again
# with "srun --mpi=pmix".
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keep=0
profile=release
filter=p2p_ring,p2p_sendrecv,p2p_nonblocking,p2p_probe,p2p_wildcard,coll_barrier,coll_bcast,coll_reduce,coll_allgather,comm_basic,comm_split,comm_create,env_abort_256,fatal_bad_count,errhandler_default

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
        --keep-cluster) keep=1; shift ;;
        --profile) [ $# -ge 2 ] || usage; profile=$2; shift 2 ;;
        --filter) [ $# -ge 2 ] || usage; filter=$2; shift 2 ;;
        *) usage ;;
    esac
done

cd "$root"
# The C tests below run through cargo, in the same profile as the install.
cargo_profile=()
if [ "$profile" = release ]; then
    cargo_profile=(--release)
fi
work=$(mktemp -d /tmp/oxmpi-slurm-tests.XXXXXX)
cluster_up=0
cleanup() {
    if [ "$cluster_up" = 1 ]; then
        bash "$root/scripts/slurm.sh" down || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
bash scripts/install.sh --prefix "$work/prefix" --profile "$profile" > /dev/null
"$work/prefix/bin/mpicc" -O1 -o "$work/ring" scripts/launcher-hosts-ring.c
"$work/prefix/bin/mpicc" -O1 -I ctests -o "$work/abort" ctests/env_abort.c
if [ "$keep" = 0 ]; then
    cluster_up=1
    # A node name that is not this machine's, so mpiexec in an allocation starts a proxy there
    # with srun rather than forking the ranks itself.
    OXMPI_SLURM_NODE=oxmpi-node1 bash scripts/slurm.sh up
fi
eval "$(bash scripts/slurm.sh env)"

cd "$work"
failures=0
fail() {
    echo "slurm-tests: FAIL: $*" >&2
    failures=$((failures + 1))
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# passed NAME: says "ok" when no check failed since the last call.
checked=0
passed() {
    if [ "$failures" = "$checked" ]; then
        echo "slurm-tests: ok: $*"
    fi
    checked=$failures
}

plugins=$(srun --mpi=list 2>&1)
grep -qw pmi2 <<< "$plugins" || fail "srun --mpi=list has no pmi2: $plugins"
grep -qw pmix <<< "$plugins" || fail "srun --mpi=list has no pmix: $plugins"
passed "srun offers the pmi2 and pmix plugins"

# check_ring NAME N WANT-VERSION LAUNCHER...: the ring on N ranks started by `LAUNCHER -n N
# ./ring`; every rank's line, the token gone round, and the debug log naming the PMI version.
check_ring() {
    local name=$1 size=$2 version=$3 status=0
    shift 3
    OXMPI_LOG=debug timeout 60 "$@" -n "$size" ./ring > out 2> err || status=$?
    if [ "$status" != 0 ]; then
        fail "$name: exit status $status: $(cat err)"
        passed
        return
    fi
    local rank token host
    host=$(hostname)
    for ((rank = 0; rank < size; rank++)); do
        token=$((rank == 0 ? size : rank + 1))
        local want="RING rank=$rank size=$size host=$host appnum=0 token=$token data=ok"
        grep -qxF "$want" out || fail "$name: no line '$want' in: $(cat out)"
    done
    [ "$(grep -c '^RING' out)" = "$size" ] || fail "$name: $(grep -c '^RING' out) ring lines, not $size"
    local spoke
    spoke=$(grep -c "process manager: Some($version)" err || true)
    [ "$spoke" = "$size" ] || fail "$name: $spoke of $size ranks report PMI version $version: $(grep 'process manager' err)"
    passed "$name"
}

for n in 1 2 4; do
    check_ring "srun -n $n --mpi=pmi2" "$n" Two srun --mpi=pmi2
done
for n in 1 2 4; do
    check_ring "srun -n $n --mpi=pmix" "$n" X srun --mpi=pmix
done
check_ring "srun -n 4 --mpi=pmi2 with OXMPI_PMI=1" 4 One env OXMPI_PMI=1 srun --mpi=pmi2

# OXMPI_PMI=x where no PMIx server started the program: MPI_Init fails with one clear line.
status=0
OXMPI_PMI=x timeout 60 ./ring > out 2> err || status=$?
[ "$status" != 0 ] && [ "$status" != 124 ] || fail "OXMPI_PMI=x without a server: status $status"
grep -q "PMIx_Init failed" err || fail "OXMPI_PMI=x without a server: no PMIx_Init error in: $(cat err)"
passed "OXMPI_PMI=x without a PMIx server: MPI_Init fails naming PMIx_Init (status $status)"

# Hydra serves PMI-2 too when asked (its fence is no barrier: the client completes it).
check_ring "mpiexec.hydra -n 4 with OXMPI_PMI=2" 4 Two env OXMPI_PMI=2 mpiexec.hydra

# srun without a PMI plugin (--mpi=none, this cluster's default): every task a singleton,
# which the first task says once.
status=0
timeout 60 srun -n 2 ./ring > out 2> err || status=$?
[ "$status" = 0 ] || fail "srun without --mpi: status $status: $(cat err)"
[ "$(grep -c '^RING rank=0 size=1 ' out)" = 2 ] || fail "srun without --mpi: not two singletons: $(cat out)"
[ "$(grep -c 'srun started 2 tasks with --mpi=none' err)" = 1 ] || fail "srun without --mpi: warning not printed once: $(cat err)"
passed "srun without --mpi: two singletons and one warning"

# MPI_Abort(7) from the last rank while the others wait in MPI_Recv: Slurm kills the step
# (SIGKILL), so srun's status is non-zero though not 7.
for mpi in pmi2 pmix; do
    for n in 1 4; do
        status=0
        start=$(now_ms)
        timeout 60 srun -n "$n" --mpi=$mpi ./abort > out 2> err || status=$?
        took=$(($(now_ms) - start))
        [ "$status" != 0 ] || fail "abort on $n ranks ($mpi): srun exited 0"
        [ "$status" != 124 ] || fail "abort on $n ranks ($mpi): still running after 60 s"
        [ "$took" -lt 10000 ] || fail "abort on $n ranks ($mpi): took $took ms"
        grep -q "rank $((n - 1)) aborting job (code 7)" err || fail "abort on $n ranks ($mpi): no abort message in: $(cat err)"
        ! grep -q "No Errors" out || fail "abort on $n ranks ($mpi): a rank printed No Errors"
        passed "MPI_Abort on $n ranks (--mpi=$mpi): srun status $status after $took ms"
    done
done

# A rank killed with SIGKILL: with -K (--kill-on-bad-exit) Slurm ends the other ranks.
srun -K1 -n 4 --mpi=pmi2 ./ring sleep > out 2> err &
job=$!
deadline=$(($(now_ms) + 30000))
while [ "$(grep -c '^READY' out)" -lt 4 ] && [ "$(now_ms)" -lt "$deadline" ] && kill -0 "$job" 2> /dev/null; do
    sleep 0.05
done
victim=$(awk '$1 == "READY" && $2 == 2 {print $4}' out)
if [ -z "$victim" ]; then
    fail "sleeping ring did not start: $(cat out err)"
    kill -9 "$job" 2> /dev/null || true
    wait "$job" 2> /dev/null || true
else
    start=$(now_ms)
    kill -9 "$victim"
    status=0
    wait "$job" || status=$?
    took=$(($(now_ms) - start))
    [ "$status" != 0 ] || fail "rank killed: srun exited 0"
    [ "$took" -lt 10000 ] || fail "rank killed: srun took $took ms to end"
fi
passed "a rank killed with SIGKILL ends srun -K (status ${status:-?} after ${took:-?} ms)"

# Our mpiexec inside an allocation: the allocation's node and task count as hosts and slots,
# the proxy started by srun when the node is not this machine by name.
node=$(SLURM_CONF=$SLURM_CONF sinfo -h -N -o %N | head -1)
status=0
timeout 60 salloc -Q -n 4 "$work/prefix/bin/mpiexec" -print-rank-map -n 4 ./ring > out 2> err || status=$?
[ "$status" = 0 ] || fail "mpiexec in salloc: status $status: $(cat err)"
head -1 out | grep -qxF "($node:0,1,2,3)" || fail "mpiexec in salloc: rank map $(head -1 out), not on $node"
[ "$(grep -c "^RING .* size=4 .* data=ok" out)" = 4 ] || fail "mpiexec in salloc: ring lines: $(cat out)"
passed "mpiexec -n 4 in salloc -n 4 on $node"
status=0
timeout 60 salloc -Q -n 4 "$work/prefix/bin/mpiexec" -n 4 ./abort > out 2> err || status=$?
[ "$status" = 7 ] || fail "MPI_Abort under mpiexec in salloc: status $status, not 7: $(cat err)"
grep -q "rank 3 on $node aborted the job (code 7)" err || fail "MPI_Abort under mpiexec in salloc: $(cat err)"
passed "MPI_Abort under mpiexec in salloc: status 7"

# The C tests under srun, through the C test harness.
cd "$root"
for mpi in pmi2 pmix; do
    if ! OXMPI_CTEST_LAUNCHER="srun --mpi=$mpi" OXMPI_CTEST_FILTER="$filter" \
        cargo test "${cargo_profile[@]}" --test ctests -- --test-threads=1; then
        fail "C tests under srun --mpi=$mpi ($filter)"
    fi
    passed "C tests under srun --mpi=$mpi"
done

if [ "$failures" != 0 ]; then
    echo "slurm-tests: $failures failure(s)" >&2
    exit 1
fi
echo "slurm-tests: all passed"

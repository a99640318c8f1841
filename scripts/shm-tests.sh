#!/usr/bin/env bash
# Shared memory at its limits and when jobs end badly: every case runs in a mount namespace
# of its own (unshare -m) with a fresh tmpfs on /dev/shm, so "nothing left behind" is an
# empty /dev/shm once the job is over. Root only (unshare, mount).
#
#   scripts/shm-tests.sh [--prefix DIR] [--profile debug|release]
#
#   --prefix DIR   test this oxmpi install (default: build, and install under a temporary
#                  prefix)
#   --profile P    cargo profile to build (default release)
#
# Cases, launched by our mpiexec and by MPICH's Hydra (mpiexec.hydra, when installed):
# - by default the node's shared memory is anonymous: a job runs with a /dev/shm of 1 MiB
#   and leaves nothing behind, however it ends (mpiexec or every rank killed with SIGKILL,
#   a rank killed before MPI_Init or inside MPI_Win_allocate_shared);
# - with OXMPI_SHM_FILES=1 (files in /dev/shm): a /dev/shm too small for the job is refused
#   by our mpiexec before starting anything, fails MPI_Init clearly under Hydra, never with
#   a SIGBUS; room for the point-to-point segment but not for the collectives area fails the
#   first collective with a line naming the area; room for the job but not for a shared
#   window fails MPI_Win_allocate_shared; and the same kills leave nothing behind (under
#   Hydra, but for a rank killed before MPI_Init: Hydra removes nothing of ours);
# each followed by the check that /dev/shm is empty and no rank is left running.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=
profile=release

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
        --profile) [ $# -ge 2 ] || usage; profile=$2; shift 2 ;;
        *) usage ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "shm-tests.sh: needs root (unshare -m, mount)" >&2; exit 2; }

work=$(mktemp -d /tmp/oxmpi-shm-tests.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$root"
if [ -z "$prefix" ]; then
    prefix=$work/prefix
    bash scripts/install.sh --prefix "$prefix" --profile "$profile" > /dev/null
fi
prog=$work/shm-tests
"$prefix/bin/mpicc" -O1 -o "$prog" scripts/shm-tests.c

launchers=(oxmpi)
command -v mpiexec.hydra > /dev/null && launchers+=(hydra)
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# Runs the job in a fresh namespace with a /dev/shm of SIZE; the job's output goes to
# $work/out, its status to $work/rc, what is left in /dev/shm to $work/left.
# in_tmpfs SIZE SCRIPT: SCRIPT runs under bash with $MPIEXEC, $PROG and $OUT set.
in_tmpfs() {
    local size=$1 script=$2
    : > "$work/out"
    OUT=$work/out PROG=$prog MPIEXEC="$mpiexec" unshare -m bash -c "
        set -u
        mount -t tmpfs -o size=$size tmpfs /dev/shm
        $script
        echo \$rc > '$work/rc'
        # Every rank of the job is gone before /dev/shm is read.
        for _ in \$(seq 100); do pgrep -f '^$prog' > /dev/null || break; sleep 0.05; done
        pgrep -fa '^$prog' > '$work/running' || true
        ls -A /dev/shm > '$work/left'
    " || true
}

# expect NAME STATUS-TEST PATTERN: the last job's status passes STATUS-TEST (an arithmetic
# test on $rc, e.g. 'rc != 0'), its output matches PATTERN (grep -E), it printed no SIGBUS,
# left no file in /dev/shm and no rank running.
expect() {
    local name=$1 test=$2 pattern=$3 rc before=$failures
    rc=$(cat "$work/rc")
    (( $test )) || fail "$name: exit status $rc, expected $test; output: $(cat "$work/out")"
    grep -Eq -- "$pattern" "$work/out" || fail "$name: output lacks /$pattern/: $(cat "$work/out")"
    if grep -Eqi 'bus error|signal 7' "$work/out"; then
        fail "$name: SIGBUS: $(cat "$work/out")"
    fi
    [ -s "$work/left" ] && fail "$name: left in /dev/shm: $(tr '\n' ' ' < "$work/left")"
    [ -s "$work/running" ] && fail "$name: ranks still running: $(cat "$work/running")"
    [ "$failures" != "$before" ] || echo "ok   $name"
}

# A lingering job, killed with SIGKILL once every rank printed "ready": WHO is mpiexec
# (the launcher) or ranks (every rank at once).
kill_script() {
    local who=$1
    cat << EOF
        \$MPIEXEC -n 3 \$PROG linger > \$OUT 2>&1 &
        launcher=\$!
        for _ in \$(seq 300); do [ \$(grep -c ready \$OUT) = 3 ] && break; sleep 0.1; done
        if [ $who = mpiexec ]; then kill -9 \$launcher; else pkill -9 -f "^\$PROG"; fi
        wait \$launcher; rc=\$?
EOF
}

for launcher in "${launchers[@]}"; do
    case $launcher in
        oxmpi) mpiexec="$prefix/bin/mpiexec" ;;
        hydra) mpiexec="mpiexec.hydra" ;;
    esac
    run='timeout 60 $MPIEXEC -n 2 $PROG work > $OUT 2>&1; rc=$?'

    # Anonymous shared memory (the default).
    unset OXMPI_SHM_FILES
    in_tmpfs 1m "$run"
    expect "$launcher: a job needs no room in /dev/shm" 'rc == 0' '^ok 2$'
    in_tmpfs 1m "$(kill_script mpiexec)"
    expect "$launcher: mpiexec killed with SIGKILL" 'rc == 137' '^ready'
    in_tmpfs 1m "$(kill_script ranks)"
    expect "$launcher: every rank killed at once" 'rc != 0' '^ready'
    in_tmpfs 1m 'timeout 60 $MPIEXEC -n 3 $PROG die-in-window > $OUT 2>&1; rc=$?'
    expect "$launcher: a rank killed inside MPI_Win_allocate_shared" 'rc != 0' '.'
    in_tmpfs 1m 'timeout 60 $MPIEXEC -n 3 $PROG die-in-init > $OUT 2>&1; rc=$?'
    expect "$launcher: a rank killed before MPI_Init" 'rc != 0' '.'

    # Files in /dev/shm.
    export OXMPI_SHM_FILES=1
    in_tmpfs 64m "$run"
    expect "$launcher, files: a job with room" 'rc == 0' '^ok 2$'

    in_tmpfs 1m "$run"
    if [ "$launcher" = oxmpi ]; then
        expect "$launcher, files: /dev/shm too small is refused before starting" 'rc == 1' \
            'cannot start 2 ranks: their shared memory .* needs [0-9]+ MiB, /dev/shm has 1 MiB free'
    else
        expect "$launcher, files: /dev/shm too small fails MPI_Init clearly" 'rc != 0' \
            'MPI_Init: shared memory: cannot reserve .* /dev/shm'
    fi

    # Room for the point-to-point segment (4 MiB at 2 ranks), not for the collectives area.
    if [ "$launcher" = hydra ]; then
        in_tmpfs 5m "$run"
        expect "$launcher, files: no room for the collectives area" 'rc != 0' \
            'MPI_Allreduce: shared memory: cannot reserve .*coll.* \(is /dev/shm too small\?\)'
    fi

    # Room for the job, not for the shared window's collectives area and window.
    in_tmpfs 6m "$run"
    # The maker's line, or another rank's saying the maker failed (Hydra may end the job
    # before the maker's line is out).
    expect "$launcher, files: no room for a shared window" 'rc != 0' \
        'MPI_Win_allocate_shared: .*(cannot (reserve|create)|could not create)'

    in_tmpfs 64m "$(kill_script mpiexec)"
    expect "$launcher, files: mpiexec killed with SIGKILL" 'rc == 137' '^ready'

    in_tmpfs 64m "$(kill_script ranks)"
    expect "$launcher, files: every rank killed at once" 'rc != 0' '^ready'
    unset OXMPI_SHM_FILES
done

export OXMPI_SHM_FILES=1
mpiexec="$prefix/bin/mpiexec"
in_tmpfs 64m 'timeout 60 $MPIEXEC -n 3 $PROG die-in-window > $OUT 2>&1; rc=$?'
expect "oxmpi, files: a rank killed inside MPI_Win_allocate_shared" 'rc != 0' 'rank 1 .*signal 9'
in_tmpfs 64m 'timeout 60 $MPIEXEC -n 3 $PROG die-in-init > $OUT 2>&1; rc=$?'
expect "oxmpi, files: a rank killed before MPI_Init" 'rc != 0' 'rank 1 .*signal 9'
unset OXMPI_SHM_FILES

if [ "$failures" != 0 ]; then
    echo "shm-tests.sh: $failures failed" >&2
    exit 1
fi
echo "shm-tests.sh: all passed"

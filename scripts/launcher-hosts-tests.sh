#!/usr/bin/env bash
# oxmpi's own mpiexec across "hosts" (network namespaces made by scripts/hosts.sh, entered
# by scripts/hosts-launcher, the ssh stand-in): one proxy per host, ranks reaching each
# other over the network transport. Root only (namespaces).
#
#   scripts/launcher-hosts-tests.sh [--keep-hosts] [--profile debug|release]
#
#   --keep-hosts   use hosts oxh1 and oxh2 already up (scripts/hosts.sh up 2 or more) and
#                  leave them up; by default the script brings 2 hosts up and takes them
#                  down on exit, also on failure
#   --profile P    cargo profile to build and test (default release)
#
# Builds oxmpi, installs it under a temporary prefix, compiles
# scripts/launcher-hosts-ring.c with its mpicc, and checks, each on real output and status:
# -hosts round-robin, -hosts with counts, -f in MPICH and Open MPI formats, -ppn, MPMD
# across hosts, stdin forwarded to rank 0 on another host, a remote rank killed with SIGKILL, a proxy killed, a host's network link
# taken down, and mpiexec killed with SIGKILL (nothing of the job left running on any host
# nor in any host's /dev/shm). A failure ends the job within 2 seconds with a line naming
# the rank and its host.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keep=0
profile=release

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
        --keep-hosts) keep=1; shift ;;
        --profile) [ $# -ge 2 ] || usage; profile=$2; shift 2 ;;
        *) usage ;;
    esac
done

cd "$root"
work=$(mktemp -d /tmp/oxmpi-launcher-hosts.XXXXXX)
hosts_up=0
cleanup() {
    if [ "$hosts_up" = 1 ]; then
        bash "$root/scripts/hosts.sh" down || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
bash scripts/install.sh --prefix "$work/prefix" --profile "$profile" > /dev/null
"$work/prefix/bin/mpicc" -O1 -o "$work/ring" scripts/launcher-hosts-ring.c
if [ "$keep" = 0 ]; then
    hosts_up=1
    bash scripts/hosts.sh up 2
fi

mpiexec=("$work/prefix/bin/mpiexec" -launcher ssh -launcher-exec "$root/scripts/hosts-launcher" -iface oxbr0)
cd "$work"
failures=0
fail() {
    echo "launcher-hosts-tests: FAIL: $*" >&2
    failures=$((failures + 1))
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# passed NAME [DETAIL]: says "ok" when no check failed since the last call.
checked=0
passed() {
    if [ "$failures" = "$checked" ]; then
        echo "launcher-hosts-tests: ok: $*"
    fi
    checked=$failures
}

# Whether process $1 has exited (a zombie counts), waiting up to 2 s.
gone() {
    local deadline=$(($(now_ms) + 2000))
    while [ -e "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo Z)" != Z ]; do
        [ "$(now_ms)" -lt "$deadline" ] || return 1
        sleep 0.05
    done
}

# check_ring NAME "HOSTS" "APPNUMS" MPIEXEC-ARGS... : runs the ring and checks that rank r
# ran on the r-th of HOSTS with the r-th of APPNUMS, and that the token went round.
check_ring() {
    local name=$1 hosts=($2) appnums=($3)
    shift 3
    local size=${#hosts[@]} status=0
    timeout 60 "${mpiexec[@]}" "$@" > out 2> err || status=$?
    if [ "$status" != 0 ]; then
        fail "$name: exit status $status: $(cat err)"
        passed
        return
    fi
    local rank token
    for ((rank = 0; rank < size; rank++)); do
        token=$((rank == 0 ? size : rank + 1))
        local want="RING rank=$rank size=$size host=${hosts[rank]} appnum=${appnums[rank]} token=$token data=ok"
        grep -qxF "$want" out || fail "$name: no line '$want' in: $(cat out)"
    done
    [ "$(grep -c '^RING' out)" = "$size" ] || fail "$name: $(grep -c '^RING' out) ring lines, not $size"
    passed "$name"
}

check_ring "-hosts round-robin" "oxh1 oxh2 oxh1 oxh2" "0 0 0 0" -print-rank-map -hosts oxh1,oxh2 -n 4 ./ring
head -1 out | grep -qxF "(oxh1:0,2)(oxh2:1,3)" || fail "-print-rank-map: $(head -1 out)"
passed "-print-rank-map"
check_ring "-hosts with counts" "oxh1 oxh1 oxh2 oxh2" "0 0 0 0" -hosts oxh1:2,oxh2:2 -n 4 ./ring
printf '# MPICH format\noxh1:1\noxh2:3\n' > hosts.mpich
check_ring "-f host:n" "oxh1 oxh2 oxh2 oxh2" "0 0 0 0" -f hosts.mpich -n 4 ./ring
printf 'oxh2 slots=2 # Open MPI format\n\noxh1 slots=1\n' > hosts.ompi
check_ring "-hostfile slots=n" "oxh2 oxh2 oxh1" "0 0 0" -hostfile hosts.ompi -n 3 ./ring
check_ring "-ppn" "oxh1 oxh1 oxh1 oxh2" "0 0 0 0" -ppn 3 -hosts oxh1,oxh2 -n 4 ./ring
check_ring "MPMD" "oxh1 oxh2 oxh1" "0 0 1" -hosts oxh1,oxh2 -n 2 ./ring : -n 1 ./ring

# stdin reaches rank 0 on another host, all of it (20 MiB: more than the flow-control window
# mpiexec keeps in flight), and no other rank.
head -c $((20 << 20)) /dev/urandom > input
want=$(python3 -c '
import sys
h = 2166136261
for b in open(sys.argv[1], "rb").read():
    h = ((h ^ b) * 16777619) & 0xffffffff
print(h)' input)
status=0
timeout 60 "${mpiexec[@]}" -hosts oxh2,oxh1 -n 3 ./ring stdin < input > out 2> err || status=$?
[ "$status" = 0 ] || fail "stdin: exit status $status: $(cat err)"
grep -qxF "STDIN 0 bytes=$((20 << 20)) fnv=$want" out || fail "stdin: rank 0 (on oxh2) got: $(grep '^STDIN 0' out)"
for rank in 1 2; do
    grep -qxF "STDIN $rank bytes=0 fnv=2166136261" out || fail "stdin: rank $rank read: $(grep "^STDIN $rank" out)"
done
passed "stdin to rank 0 on another host"

# start_sleeping MPIEXEC-ARGS...: starts a job of 4 sleeping ranks over oxh1,oxh2 in the
# background (pid in $job), waits until every rank is READY; rank r's pid in ${pids[r]}.
start_sleeping() {
    "${mpiexec[@]}" "$@" > out 2> err &
    job=$!
    local deadline=$(($(now_ms) + 30000))
    while [ "$(grep -c '^READY' out)" -lt 4 ]; do
        if [ "$(now_ms)" -ge "$deadline" ] || ! kill -0 "$job" 2>/dev/null; then
            fail "job did not start: $(cat out err)"
            kill -9 "$job" 2>/dev/null || true
            passed
            return 1
        fi
        sleep 0.05
    done
    pids=()
    local rank
    for rank in 0 1 2 3; do
        pids[rank]=$(awk -v r="$rank" '$1 == "READY" && $2 == r {print $4}' out)
    done
}

# end_within NAME MS: waits for the job, checks it ended within MS ms of $killed_at with a
# non-zero status, and that every rank is gone.
end_within() {
    local name=$1 limit=$2 status=0
    wait "$job" || status=$?
    local took=$(($(now_ms) - killed_at))
    [ "$status" != 0 ] || fail "$name: exit status 0"
    [ "$took" -le "$limit" ] || fail "$name: the job took $took ms to end"
    local pid
    for pid in "${pids[@]}"; do
        gone "$pid" || fail "$name: rank process $pid still running"
    done
    echo "launcher-hosts-tests: $name: status $status, ended in $took ms"
}

if start_sleeping -hosts oxh1,oxh2 -n 4 ./ring sleep; then
    killed_at=$(now_ms)
    kill -9 "${pids[1]}"
    end_within "remote rank killed" 2000
    grep -q "rank 1 (pid ${pids[1]} on oxh2) killed by signal 9" err || fail "remote rank killed: $(cat err)"
    passed "remote rank killed"
fi

if start_sleeping -hosts oxh1,oxh2 -n 4 ./ring sleep; then
    proxy=$(awk '{print $4}' "/proc/${pids[1]}/stat")
    grep -q -- --proxy "/proc/$proxy/cmdline" || fail "proxy killed: $proxy is no proxy"
    killed_at=$(now_ms)
    kill -9 "$proxy"
    end_within "proxy killed" 2000
    for rank in 1 3; do
        grep -q "rank $rank (pid ${pids[rank]} on oxh2) lost" err || fail "proxy killed: rank $rank: $(cat err)"
    done
    passed "proxy killed"
fi

if start_sleeping -hosts oxh1,oxh2 -n 4 ./ring sleep; then
    # A cable pulled: no error reaches anyone, only silence.
    killed_at=$(now_ms)
    bash "$root/scripts/hosts.sh" link-down oxh2
    # The kernel's probes (every second, OXMPI_LINK_TIMEOUT of 2 s) find it within 2-3 s.
    end_within "oxh2's link down" 3000
    bash "$root/scripts/hosts.sh" link-up oxh2
    grep -q "host oxh2 unreachable: its proxy has not answered" err || fail "oxh2's link down: $(cat err)"
    for rank in 1 3; do
        grep -q "rank $rank (pid ${pids[rank]} on oxh2) lost" err || fail "oxh2's link down: rank $rank: $(cat err)"
    done
    passed "oxh2's link down"
fi

if start_sleeping -hosts oxh1:2,oxh2:2 -n 4 ./ring sleep; then
    proxies=()
    for pid in "${pids[@]}"; do
        proxies+=("$(awk '{print $4}' "/proc/$pid/stat")")
    done
    kvs_prefix="oxmpi-oxmpi${job}_"
    killed_at=$(now_ms)
    kill -9 "$job"
    wait "$job" 2>/dev/null || true
    for pid in "${pids[@]}" "${proxies[@]}"; do
        gone "$pid" || fail "mpiexec killed: process $pid still running"
    done
    for host in oxh1 oxh2; do
        left=$(bash "$root/scripts/hosts.sh" exec "$host" ls /dev/shm | grep -F "$kvs_prefix" || true)
        [ -z "$left" ] || fail "mpiexec killed: left in $host's /dev/shm: $left"
    done
    passed "mpiexec killed (ranks and proxies gone in $(($(now_ms) - killed_at)) ms)"
fi

if [ "$failures" != 0 ]; then
    echo "launcher-hosts-tests: $failures failure(s)" >&2
    exit 1
fi
echo "launcher-hosts-tests: all passed"

#!/usr/bin/env bash
# Self-test of scripts/hosts.sh (root only; needs iproute2, util-linux, libc-bin's getent;
# uses iputils-ping when present). Brings up 3 hosts with 2 rails and checks: per-host hostname, /dev/shm
# and SysV IPC; /etc/hosts names; env, cwd, exit status and signals through `exec`;
# reachability between hosts on both rails; link-down/link-up; rate; that `up` recovers
# from a crashed run and `down` leaves nothing behind. Prints one line per check and exits
# non-zero if any failed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
H=$here/hosts.sh
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { # check DESCRIPTION CMD... : CMD must succeed
    local d=$1
    shift
    if "$@" > /dev/null 2>&1; then ok "$d"; else bad "$d"; fi
}
check_not() { # CMD must fail
    local d=$1
    shift
    if "$@" > /dev/null 2>&1; then bad "$d"; else ok "$d"; fi
}
eq() { # eq DESCRIPTION GOT WANT
    if [ "$2" = "$3" ]; then ok "$1"; else bad "$1 (got '$2', want '$3')"; fi
}

# Reachability of ADDR from HOST: a TCP connect to a closed port is refused at once when
# the address answers and times out when it does not (no listener needed).
reach() {
    local out
    out=$(timeout 3 "$H" exec "$1" bash -c "exec 3<>/dev/tcp/$2/1" 2>&1) && return 0
    [[ $out == *refused* ]] || return 1
    if command -v ping > /dev/null; then
        "$H" exec "$1" ping -n -q -c1 -W1 "$2" > /dev/null 2>&1
    fi
}

# Nothing of the hosts left in the root namespace.
nothing_left() {
    ! ip netns list | grep -qE '^oxh[0-9]+' &&
        ! ip -o link show | awk -F': ' '{print $2}' | grep -qE '^(oxv[0-9]|oxbr[0-9])' &&
        ! grep -qs '^oxhold-' /proc/[0-9]*/cmdline &&
        [ ! -e /run/oxhosts ]
}

[ "$(id -u)" = 0 ] || { echo "hosts-selftest: must run as root" >&2; exit 1; }
trap '"$H" down' EXIT
root_host=$(hostname)

# Non-root callers get a clear message.
if command -v setpriv > /dev/null; then
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$H" up 1 2>&1)
    rc=$?
    if [ $rc != 0 ] && [[ $out == *"must run as root"* ]]; then ok "non-root up refused"; else
        bad "non-root up refused (rc $rc: $out)"; fi
fi

# A crashed run's leftovers (a bare namespace, a veth, a holder killed with -9) do not
# stop `up`.
"$H" down
ip netns add oxh9 && ip link add oxv9 type veth peer name oxv9p
check "up 2 (first run)" "$H" up 2
kill -9 "$(cat /run/oxhosts/oxh1.pid)"
check "up 3 --rails 2 over leftovers" "$H" up 3 --rails 2
check_not "leftover netns oxh9 removed" ip netns pids oxh9
check_not "leftover veth oxv9 removed" ip link show oxv9

# Identity: hostname per host, names in /etc/hosts; root namespace untouched.
for i in 1 2 3; do
    eq "hostname of oxh$i" "$("$H" exec oxh$i hostname)" "oxh$i"
done
eq "root hostname unchanged" "$(hostname)" "$root_host"
eq "oxh1 resolves oxh2" "$("$H" exec oxh1 getent hosts oxh2 | awk '{print $1}')" 10.77.0.12
eq "oxh1 resolves oxh3-r1" "$("$H" exec oxh1 getent hosts oxh3-r1 | awk '{print $1}')" 10.77.1.13
eq "addr oxh3 1" "$("$H" addr oxh3 1)" 10.77.1.13

# exec keeps environment and cwd, returns the exit status, passes signals.
eq "exec keeps cwd" "$(cd /usr/share && "$H" exec oxh2 pwd)" /usr/share
eq "exec keeps env" "$(OXH_TEST=42 "$H" exec oxh2 printenv OXH_TEST)" 42
"$H" exec oxh1 sh -c 'exit 7'
eq "exec exit status" $? 7
"$H" exec oxh3 sleep 30 &
sleeper=$!
sleep 0.5
kill -TERM $sleeper
wait $sleeper
eq "exec passes SIGTERM" $? 143

# /dev/shm and SysV IPC: shared within a host (across exec calls), private across hosts.
tag=selftest.$$
"$H" exec oxh1 sh -c "echo hi > /dev/shm/$tag"
check "/dev/shm file seen by another exec on oxh1" "$H" exec oxh1 test -e /dev/shm/$tag
check_not "/dev/shm file of oxh1 not on oxh2" "$H" exec oxh2 test -e /dev/shm/$tag
check_not "/dev/shm file of oxh1 not in root ns" test -e /dev/shm/$tag
if command -v ipcmk > /dev/null; then
    # (ipcs -i exits 0 even for an unknown id: look for the key in the listing)
    key=$("$H" exec oxh1 ipcmk -M 4096 -p 600 > /dev/null && "$H" exec oxh1 ipcs -m | awk '$6 == "0" && $5 == 4096 {print $1; exit}')
    check "SysV shm of oxh1 seen on oxh1" sh -c "'$H' exec oxh1 ipcs -m | grep -q '^$key '"
    check_not "SysV shm of oxh1 not on oxh2" sh -c "'$H' exec oxh2 ipcs -m | grep -q '^$key '"
    check_not "SysV shm of oxh1 not in root ns" sh -c "ipcs -m | grep -q '^$key '"
fi

# Reachability: every host reaches every other one and the root namespace, on both rails.
for i in 1 2 3; do
    for j in 1 2 3; do
        [ $i = $j ] && continue
        check "oxh$i reaches oxh$j (rail 0)" reach oxh$i 10.77.0.$((10 + j))
        check "oxh$i reaches oxh$j (rail 1)" reach oxh$i 10.77.1.$((10 + j))
    done
    check "oxh$i reaches root ns 10.77.0.1" reach oxh$i 10.77.0.1
done
check_not "hosts do not reach the outside (no default route)" reach oxh1 192.0.2.1

# Failure injection: a host's cable, then one rail only.
"$H" link-down oxh2
check_not "link-down: oxh1 no longer reaches oxh2" reach oxh1 10.77.0.12
check_not "link-down: oxh1 no longer reaches oxh2 on rail 1" reach oxh1 10.77.1.12
check "link-down: oxh1 still reaches oxh3" reach oxh1 10.77.0.13
"$H" link-up oxh2
check "link-up: oxh1 reaches oxh2 again" reach oxh1 10.77.0.12
"$H" link-down oxh2 1
check "link-down rail 1: rail 0 still up" reach oxh1 10.77.0.12
check_not "link-down rail 1: rail 1 down" reach oxh1 10.77.1.12
"$H" link-up oxh2 1
check "link-up rail 1" reach oxh1 10.77.1.12

# Rate limits: a tbf on both ends of the link, gone with `off`.
check "rate oxh3 10mbit 0" "$H" rate oxh3 10mbit 0
check "tbf on oxv3" sh -c "tc qdisc show dev oxv3 | grep -q 'tbf.*rate 10Mbit'"
check "tbf on oxh3 eth0" sh -c "tc -n oxh3 qdisc show dev eth0 | grep -q 'tbf.*rate 10Mbit'"
check_not "rate on rail 0: rail 1 untouched" sh -c "tc qdisc show dev oxv3r1 | grep -q tbf"
check "rate oxh3 1gbit (all rails)" "$H" rate oxh3 1gbit
check "tbf on rail 1" sh -c "tc -n oxh3 qdisc show dev eth1 | grep -q 'tbf.*rate 1Gbit'"
check "rate oxh3 off" "$H" rate oxh3 off
check_not "rate off removes the tbf" sh -c "tc qdisc show dev oxv3 | grep -q tbf || tc -n oxh3 qdisc show dev eth1 | grep -q tbf"
check_not "bad rate refused" "$H" rate oxh3 fast
check_not "exec on an unknown host refused" "$H" exec oxh7 true

# down kills what still runs on the hosts and removes everything.
"$H" exec oxh2 sleep 300 &
left=$!
sleep 0.5
check "down" "$H" down
check "down leaves nothing" nothing_left
st=$(cat /proc/$left/stat 2> /dev/null) && st=${st##*) }
if [[ -z $st || $st == Z* ]]; then ok "process left on a host is killed"; else bad "process left on a host is killed"; fi
check "down twice" "$H" down

trap - EXIT
if [ $fails = 0 ]; then echo "hosts-selftest: all passed"; else echo "hosts-selftest: $fails failed"; fi
[ $fails = 0 ]

#!/usr/bin/env bash
# Fake hosts for multi-node tests on one Linux machine (root only).
#
#   scripts/hosts.sh up N [--rails R]   create hosts oxh1..oxhN (R links each, default 1)
#   scripts/hosts.sh down               remove everything `up` made (safe to call any time)
#   scripts/hosts.sh exec HOST CMD...   run CMD on HOST (env and cwd kept, exit status returned)
#   scripts/hosts.sh link-down HOST [RAIL]   unplug HOST's cable (all rails by default)
#   scripts/hosts.sh link-up HOST [RAIL]     plug it back
#   scripts/hosts.sh rate HOST RATE|off [RAIL]   cap HOST's link, both ways (tc tbf;
#                                       RATE as tc writes it: 100mbit, 1gbit, 50mbps...)
#   scripts/hosts.sh list               one line per host: name, addresses, holder pid
#   scripts/hosts.sh addr HOST [RAIL]   HOST's address on RAIL (default 0)
#
# Layout. Rail r (0..R-1) is a bridge oxbr<r> in the root namespace with 10.77.<r>.1/24.
# Host oxh<i> is a network namespace of the same name with lo up and one veth per rail:
# eth<r> inside (10.77.<r>.<10+i>/24), oxv<i> (rail 0) / oxv<i>r<r> (rail r) in the root
# namespace, enslaved to oxbr<r>. IPv6 is off on all of them (lo keeps ::1), so libfabric
# and UCX see one address per rail, not extra fe80:: domains.
# No default route: hosts reach each other and the root namespace (10.77.<r>.1), nothing else.
#
# Each host has a holder process (`sleep infinity` renamed oxhold-<host>) made by `up`
# inside the host's network namespace, in its own UTS namespace (hostname = host name),
# IPC namespace (SysV shm/semaphores private) and mount namespace where /dev/shm is a
# private tmpfs and /etc/hosts names every host (oxh<i> -> rail 0, oxh<i>-r<r> -> rail r).
# `exec` enters the holder's namespaces with nsenter, so every exec on one host (one
# Hydra proxy or several) shares its hostname, /dev/shm and SysV IPC, and different hosts
# share none of them. Not isolated: the PID namespace (process_vm_readv/CMA and ptrace
# still work across hosts: keep UCX on tcp, see below), the filesystem (/tmp, the repo
# are shared, like NFS on a cluster) and CPUs.
#
# Tests: `scripts/hosts.sh up 2 && trap 'scripts/hosts.sh down' EXIT`. `up` first removes
# leftovers of a crashed run; `down` kills every process still inside a host, then the
# namespaces, veths and bridges. One set of hosts per machine (up/down take a lock).
#
# Root-namespace processes see oxbr0 too: libfabric's tcp provider there lists oxbr0
# (10.77.0.1) first, so a single-host job started in the root namespace while hosts are
# up may bind to 10.77.0.1 and break when `down` removes it (pin it: FI_TCP_IFACE=lo).
#
# MPICH (Debian 12: 4.0.2, ch4:ucx, Hydra). mpiexec runs in the root namespace; its proxies
# are started on the hosts by scripts/hosts-launcher (an ssh stand-in, one proxy per host
# which forks that host's ranks) and must connect back to the bridge address: -iface oxbr0
# (or HYDRA_IFACE=oxbr0). Without it they are told the root's hostname, which resolves to
# 127.0.0.1 in a host, and mpiexec fails. Ranks talk over UCX's tcp transport on eth0:
#   UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 timeout 120 mpiexec.mpich -iface oxbr0 \
#     -launcher ssh -launcher-exec "$PWD/scripts/hosts-launcher" -hosts oxh1,oxh2 -n 4 ./prog
# -hosts oxh1,oxh2 places ranks round-robin (0,2 on oxh1), -hosts oxh1:2,oxh2:2 in blocks;
# ranks of one host use MPICH's shared memory in that host's /dev/shm. With only
# UCX_NET_DEVICES=eth0 UCX picks tcp/eth0 towards other hosts by itself (UCX_LOG_LEVEL=info
# shows the lanes); with --rails 2, UCX_NET_DEVICES=eth0,eth1 gives tag(tcp/eth0 tcp/eth1).
# Known flake, not caused by the fake hosts: MPICH 4.0.2 + UCX 1.13 sometimes hangs in
# MPI_Finalize when UCX uses tcp (one rank spins on a UCX request, the others sit in the
# PMI barrier); it happens in the plain root namespace too (UCX_TLS=tcp,self mpiexec -n 4:
# 4 of 20 runs), over the hosts 1-2 of 12 runs at -n 4. Always run under `timeout`.
# A cable pull (link-down of one of two hosts in a ping-pong) does not end an MPICH job:
# mpiexec kept waiting in both 10-minute tries (in one, the rank on the healthy host and
# its proxy exited within a minute without a message, the other rank kept spinning; in
# the other, all ranks kept spinning). After a link-up within a minute, TCP retransmits
# and the job goes on. Tests of failures need their own timeout.
#
# Open MPI 4.1 (mpirun): launch through the same ssh stand-in, keep out-of-band and TCP
# BTL traffic on the bridge subnet (CIDR: the interface is oxbr0 in the root namespace,
# eth0 in the hosts):
#   mpirun --allow-run-as-root --mca plm_rsh_agent "$PWD/scripts/hosts-launcher" \
#     --mca oob_tcp_if_include 10.77.0.0/24 --mca btl tcp,self,vader \
#     --mca btl_tcp_if_include 10.77.0.0/24 --mca pml ob1 --host oxh1:2,oxh2:2 -n 4 ./prog
#
# libfabric 1.17 in a host: `scripts/hosts.sh exec oxh1 fi_info -p tcp` lists domains eth0
# (fabric 10.77.0.0/24), lo (127.0.0.1/32) and lo (::1/128), eth0 first, for FI_EP_MSG
# (tcp) and FI_EP_RDM (tcp;ofi_rxm); FI_TCP_IFACE=eth0 does not shorten that list. fi_pingpong
# -p tcp (-e msg and -e rdm) runs between oxh1 and oxh2 (server on oxh1, client given
# 10.77.0.11).
#
# Needs: bash, coreutils, iproute2 (ip, tc; kernel bridge, veth, sch_tbf), util-linux
# (nsenter, unshare, setsid, flock, mount). hosts-selftest.sh also uses setpriv, ipcmk and
# ipcs (util-linux), getent (libc-bin) and iputils-ping when present.
set -euo pipefail

readonly HOST_PREFIX=oxh BR_PREFIX=oxbr VETH_PREFIX=oxv NET=10.77
readonly STATE=${OXHOSTS_STATE:-/run/oxhosts}
readonly LOCK=/run/oxhosts.lock
readonly MAX_HOSTS=200 MAX_RAILS=8

die() { echo "hosts.sh: $*" >&2; exit 1; }

need_root() {
    [ "$(id -u)" = 0 ] || die "must run as root (network/mount namespaces, veths, tc)"
    local t
    for t in ip tc nsenter unshare setsid flock; do
        command -v "$t" > /dev/null || die "missing tool '$t' (apt-get install iproute2 util-linux)"
    done
}

# Serialises up/down of concurrent callers (one set of hosts per machine).
take_lock() { exec 9> "$LOCK"; flock 9; }

# Host name -> index i (oxh<i>); dies on anything else.
host_index() {
    [[ $1 =~ ^${HOST_PREFIX}([1-9][0-9]*)$ ]] || die "bad host name '$1' (expected ${HOST_PREFIX}<n>)"
    echo "${BASH_REMATCH[1]}"
}

rails() { cat "$STATE/rails" 2> /dev/null || echo 1; }

# Root-namespace end of host i's veth on rail r.
veth_root() { if [ "$2" = 0 ]; then echo "$VETH_PREFIX$1"; else echo "$VETH_PREFIX${1}r$2"; fi; }

host_addr() { echo "$NET.$2.$((10 + $1))"; }

# The holder's pid, after checking it is the live holder of that host's network namespace
# (a stale pid file after a crash must not send nsenter into an unrelated process).
holder_pid() {
    local host=$1 pid argv0=
    pid=$(cat "$STATE/$host.pid" 2> /dev/null) || die "host $host is not up (scripts/hosts.sh up N)"
    { read -r -d '' argv0 < "/proc/$pid/cmdline"; } 2> /dev/null || true
    [ "$argv0" = "oxhold-$host" ] || die "holder of $host (pid $pid) is gone; run 'up' again"
    [ "$(stat -L -c %i "/proc/$pid/ns/net")" = "$(stat -L -c %i "/run/netns/$host")" ] ||
        die "holder of $host is not in netns $host"
    echo "$pid"
}

# Pids of every process whose argv[0] marks it as a holder (even without pid file).
stray_holders() {
    local d a
    for d in /proc/[0-9]*; do
        a=
        { read -r -d '' a < "$d/cmdline"; } 2> /dev/null || true
        [[ $a == oxhold-${HOST_PREFIX}* ]] && echo "${d#/proc/}"
    done
    return 0
}

# Alive and not a zombie (an orphan's zombie may wait a while for init to reap it).
alive() {
    local st
    st=$(cat "/proc/$1/stat" 2> /dev/null) || return 1
    st=${st##*) }
    [ "${st%% *}" != Z ]
}

kill_pids() { # SIGTERM, 2 s grace, then SIGKILL
    [ $# -gt 0 ] || return 0
    kill -TERM "$@" 2> /dev/null || true
    local i p left
    for i in $(seq 20); do
        left=
        for p in "$@"; do alive "$p" && left=1 && break; done
        [ -n "$left" ] || return 0
        sleep 0.1
    done
    kill -KILL "$@" 2> /dev/null || true
}

do_down() {
    local ns link
    local -a nss pids
    mapfile -t nss < <(ip netns list 2> /dev/null | awk '{print $1}' | grep -E "^${HOST_PREFIX}[0-9]+$" || true)
    # Everything still running in a host (holder, ranks, proxies) goes first, else the
    # namespaces (and their veth ends) outlive `ip netns del`.
    mapfile -t pids < <(for ns in "${nss[@]}"; do ip netns pids "$ns" 2> /dev/null || true; done; stray_holders)
    kill_pids "${pids[@]}"
    for ns in "${nss[@]}"; do ip netns del "$ns" 2> /dev/null || true; done
    # Root ends of the veths (their peers die with them) and the bridges.
    for link in $(ip -o link show 2> /dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
        grep -E "^(${VETH_PREFIX}[0-9]+(r[0-9]+)?|${BR_PREFIX}[0-9]+)$" || true); do
        ip link del "$link" 2> /dev/null || true
    done
    rm -rf "$STATE"
}

# Body of a holder: runs inside `ip netns exec HOST unshare --uts --ipc --mount`.
# Writes its pid only when the host is ready, so `up` can wait for that.
holder_body='
set -e
echo "$1" > /proc/sys/kernel/hostname
mount -t tmpfs -o mode=1777,nosuid,nodev oxshm /dev/shm
mount --bind "$2/hosts" /etc/hosts
# Inherited descriptors (a caller'"'"'s pipes) would stay open as long as the host lives.
for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    [ "$fd" -le 2 ] || eval "exec $fd>&-"
done
echo $$ > "$2/$1.pid.new"
mv "$2/$1.pid.new" "$2/$1.pid"
exec -a "oxhold-$1" sleep infinity
'

# IPv6 off on a link of the current network namespace (no-op on kernels without IPv6).
no_ipv6() {
    local f=/proc/sys/net/ipv6/conf/$1/disable_ipv6
    if [ -e "$f" ]; then echo 1 > "$f"; fi
}

cmd_up() {
    local n=${1:-} nr=1
    shift || true
    while [ $# -gt 0 ]; do
        case $1 in
            --rails) nr=${2:-}; shift 2 || die "--rails needs a count" ;;
            --rails=*) nr=${1#--rails=}; shift ;;
            *) die "up: unknown argument '$1'" ;;
        esac
    done
    [[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le $MAX_HOSTS ] || die "up: host count 1..$MAX_HOSTS expected"
    [[ $nr =~ ^[1-9]$ ]] && [ "$nr" -le $MAX_RAILS ] || die "up: rail count 1..$MAX_RAILS expected"
    take_lock
    do_down # leftovers of a crashed run
    # Half-built hosts are removed if anything below fails (set -e or die).
    trap 'if [ $? != 0 ]; then echo "hosts.sh: up failed, cleaning up" >&2; do_down; fi' EXIT
    mkdir -p "$STATE"
    echo "$nr" > "$STATE/rails"
    local i r host v
    {
        cat /etc/hosts
        echo "# oxmpi fake hosts (scripts/hosts.sh)"
        for r in $(seq 0 $((nr - 1))); do
            echo "$NET.$r.1 oxroot$([ "$r" = 0 ] || echo "-r$r")"
            for i in $(seq "$n"); do
                echo "$(host_addr "$i" "$r") $HOST_PREFIX$i$([ "$r" = 0 ] || echo "-r$r")"
            done
        done
    } > "$STATE/hosts"
    for r in $(seq 0 $((nr - 1))); do
        # Bridged host-to-host traffic bypasses the machine's firewall (br_netfilter
        # would hand it to iptables' FORWARD chain, which Docker sets to DROP).
        ip link add "$BR_PREFIX$r" type bridge nf_call_iptables 0 nf_call_ip6tables 0 nf_call_arptables 0
        no_ipv6 "$BR_PREFIX$r"
        ip addr add "$NET.$r.1/24" dev "$BR_PREFIX$r"
        ip link set "$BR_PREFIX$r" up
    done
    for i in $(seq "$n"); do
        host=$HOST_PREFIX$i
        ip netns add "$host"
        ip -n "$host" link set lo up
        for r in $(seq 0 $((nr - 1))); do
            v=$(veth_root "$i" "$r")
            ip link add "$v" type veth peer name "eth$r" netns "$host"
            no_ipv6 "$v"
            ip link set "$v" master "$BR_PREFIX$r" up
            ip netns exec "$host" bash -c "$(declare -f no_ipv6); no_ipv6 eth$r"
            ip -n "$host" addr add "$(host_addr "$i" "$r")/24" dev "eth$r"
            ip -n "$host" link set "eth$r" up
        done
        # setsid, /dev/null, 9>&-: the holder must keep neither the caller's terminal or
        # pipes nor the up/down lock.
        setsid ip netns exec "$host" unshare --uts --ipc --mount --propagation private \
            bash -c "$holder_body" holder "$host" "$STATE" < /dev/null > /dev/null 2>&1 9>&- &
    done
    for i in $(seq "$n"); do
        local t=0
        until [ -s "$STATE/$HOST_PREFIX$i.pid" ]; do
            t=$((t + 1))
            [ $t -le 100 ] || die "holder of $HOST_PREFIX$i did not start"
            sleep 0.1
        done
        holder_pid "$HOST_PREFIX$i" > /dev/null
    done
    trap - EXIT
}

cmd_exec() {
    [ $# -ge 2 ] || die "usage: exec HOST CMD..."
    local host=$1 pid
    shift
    host_index "$host" > /dev/null
    pid=$(holder_pid "$host")
    # nsenter execs CMD itself (no PID namespace, no fork): exit status and signals are
    # CMD's own. --wd: entering a mount namespace would otherwise chdir to /.
    exec nsenter -t "$pid" -n -u -m -i --wd="$PWD" -- "$@"
}

# Rail list for link/rate commands: the given one, or all.
rail_list() {
    local nr
    nr=$(rails)
    if [ -n "${1:-}" ]; then
        [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -lt "$nr" ] || die "bad rail '$1' (0..$((nr - 1)))"
        echo "$1"
    else
        seq 0 $((nr - 1))
    fi
}

cmd_link() { # up|down HOST [RAIL]
    local state=$1 host=${2:-} i r
    [ -n "$host" ] || die "usage: link-$state HOST [RAIL]"
    i=$(host_index "$host")
    holder_pid "$host" > /dev/null
    # The root-side end: the host keeps its configuration but loses carrier, as when a
    # cable is pulled (packets are dropped, nothing is reported to the sockets).
    for r in $(rail_list "${3:-}"); do
        ip link set "$(veth_root "$i" "$r")" "$state"
    done
}

# tc rate (e.g. 100mbit, 1gbit, 10mbps) -> bytes per second.
rate_bytes() {
    [[ ${1,,} =~ ^([0-9]+)(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps|tbps)$ ]] ||
        die "bad rate '$1' (e.g. 100mbit, 1gbit, 50mbps)"
    local v=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]} m=1
    case $u in
        k*) m=1000 ;; m*) m=1000000 ;; g*) m=1000000000 ;; t*) m=1000000000000 ;;
    esac
    case $u in
        *bit) echo $((v * m / 8)) ;; *) echo $((v * m)) ;;
    esac
}

cmd_rate() { # HOST RATE|off [RAIL]
    [ $# -ge 2 ] || die "usage: rate HOST RATE|off [RAIL]"
    local host=$1 rate=$2 i r v burst
    i=$(host_index "$host")
    holder_pid "$host" > /dev/null
    if [ "$rate" != off ]; then
        # Bucket: 10 ms of traffic (a tick at HZ=100), at least a few full frames.
        burst=$(rate_bytes "$rate")
        burst=$((burst / 100))
        [ "$burst" -ge 16384 ] || burst=16384
    fi
    for r in $(rail_list "${3:-}"); do
        # Egress of both ends: the root side shapes traffic to the host, eth<r> from it.
        v=$(veth_root "$i" "$r")
        if [ "$rate" = off ]; then
            tc qdisc del dev "$v" root 2> /dev/null || true
            tc -n "$host" qdisc del dev "eth$r" root 2> /dev/null || true
        else
            tc qdisc replace dev "$v" root tbf rate "$rate" burst "$burst" latency 50ms
            tc -n "$host" qdisc replace dev "eth$r" root tbf rate "$rate" burst "$burst" latency 50ms
        fi
    done
}

cmd_list() {
    local f host i r addrs pid
    [ -d "$STATE" ] || return 0
    for f in "$STATE"/"$HOST_PREFIX"*.pid; do
        [ -e "$f" ] || continue
        host=$(basename "$f" .pid)
        i=$(host_index "$host")
        addrs=
        for r in $(seq 0 $(($(rails) - 1))); do addrs+=" $(host_addr "$i" "$r")"; done
        pid=$(holder_pid "$host" 2> /dev/null || echo dead)
        echo "$host$addrs holder=$pid"
    done | sort -V
}

cmd_addr() {
    [ $# -ge 1 ] || die "usage: addr HOST [RAIL]"
    local i r
    i=$(host_index "$1")
    r=$(rail_list "${2:-0}")
    host_addr "$i" "$r"
}

main() {
    local cmd=${1:-}
    shift || true
    case $cmd in
        up) need_root; cmd_up "$@" ;;
        down) need_root; take_lock; do_down ;;
        exec) need_root; cmd_exec "$@" ;;
        link-down) need_root; cmd_link down "$@" ;;
        link-up) need_root; cmd_link up "$@" ;;
        rate) need_root; cmd_rate "$@" ;;
        list) cmd_list ;;
        addr) cmd_addr "$@" ;;
        *) sed -n '2,12p' "$0" >&2; exit 2 ;;
    esac
}

main "$@"

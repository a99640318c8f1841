#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for tests: Debian's slurm-wlm and munge, the daemons
# started directly as root (no systemd), the configuration and state in one directory.
#
#   bash scripts/slurm.sh up      # write the configuration, start munged, slurmctld, slurmd;
#                                 # returns once sinfo shows the node idle
#   bash scripts/slurm.sh env     # prints `export SLURM_CONF=...` (eval it to use srun, sinfo)
#   bash scripts/slurm.sh down    # stop the daemons this script started, remove the directory
#
# Needs root and the packages slurm-wlm and munge (`apt-get install slurm-wlm munge`; `up`
# installs them when apt-get is there and they are missing). OXMPI_SLURM_DIR (default
# /tmp/oxmpi-slurm) holds slurm.conf, the daemons' logs, pid files and state; the node is this
# machine's host name (or OXMPI_SLURM_NODE: a node name other than the host name, so that
# mpiexec takes it for another host and starts its proxy there with srun) with OXMPI_SLURM_CPUS CPUs (default: the larger of nproc and 8, with
# SlurmdParameters=config_overrides, so that `srun -n 8` runs on a 2-core machine, the ranks
# sharing the cores as they do under mpiexec). Containers have no usable cgroups: processes
# are tracked through /proc (proctrack/linuxproc) and tasks are not bound (task/none).
set -euo pipefail

DIR=${OXMPI_SLURM_DIR:-/tmp/oxmpi-slurm}
CONF=$DIR/slurm.conf
HOST=$(hostname -s)
NODE=${OXMPI_SLURM_NODE:-$HOST}
NPROC=$(nproc)
CPUS=${OXMPI_SLURM_CPUS:-$((NPROC > 8 ? NPROC : 8))}
MUNGE_SOCKET=/run/munge/munge.socket.2

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit "${1:-0}"
}

die() {
    echo "slurm.sh: $*" >&2
    exit 1
}

need_packages() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null && return
    command -v apt-get >/dev/null || die "slurmctld, slurmd and munged are needed (Debian: apt-get install slurm-wlm munge)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge
}

write_conf() {
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
    cat >"$CONF" <<EOF
# Written by scripts/slurm.sh: one node, daemons as root, no cgroups, no accounting.
ClusterName=oxmpi
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
KillWait=2
MinJobAge=10
InactiveLimit=0
NodeName=$NODE NodeHostname=$HOST NodeAddr=$HOST CPUs=$CPUS State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
}

start_munge() {
    if [ -S "$MUNGE_SOCKET" ] && munge -n </dev/null | unmunge >/dev/null 2>&1; then
        return # a munged already answers (the machine's own)
    fi
    [ -s /etc/munge/munge.key ] || {
        if command -v mungekey >/dev/null; then mungekey --create --keyfile /etc/munge/munge.key; else
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
        fi
    }
    chown munge:munge /etc/munge/munge.key 2>/dev/null || true
    chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown munge:munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
    if id munge >/dev/null 2>&1; then
        runuser -u munge -- munged
    else
        munged --force
    fi
    cat /run/munge/munged.pid >"$DIR/munged.pid" 2>/dev/null || pgrep -n -x munged >"$DIR/munged.pid"
    for _ in $(seq 50); do
        munge -n </dev/null | unmunge >/dev/null 2>&1 && return
        sleep 0.1
    done
    die "munged does not answer on $MUNGE_SOCKET"
}

wait_idle() {
    local state
    for _ in $(seq 150); do
        state=$(SLURM_CONF=$CONF sinfo -h -N -n "$NODE" -o %t 2>/dev/null || true)
        case $state in
        idle | mix | alloc) return ;;
        esac
        sleep 0.2
    done
    echo "slurm.sh: node $NODE is not idle after 30 s (state: ${state:-none}); logs:" >&2
    tail -n 20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
    exit 1
}

up() {
    [ "$(id -u)" = 0 ] || die "needs root (the daemons run as root here)"
    need_packages
    if [ -f "$DIR/slurmctld.pid" ] && kill -0 "$(cat "$DIR/slurmctld.pid")" 2>/dev/null; then
        die "already up ($DIR); run: bash $0 down"
    fi
    rm -rf "$DIR"
    write_conf
    start_munge
    export SLURM_CONF=$CONF
    # -i: ignore state from an earlier run; both daemonize and write their pid files.
    slurmctld -i -f "$CONF" || die "slurmctld did not start; see $DIR/log/slurmctld.log"
    slurmd -f "$CONF" || die "slurmd did not start; see $DIR/log/slurmd.log"
    wait_idle
    echo "slurm.sh: node $NODE up with $CPUS CPUs; export SLURM_CONF=$CONF"
}

stop_pidfile() {
    local file=$1 pid
    [ -f "$file" ] || return 0
    pid=$(cat "$file")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || return 0
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
}

down() {
    [ -d "$DIR" ] || return 0
    if [ -f "$DIR/slurmctld.pid" ]; then
        # Ends what still runs (a test that failed half-way) before the daemons go.
        SLURM_CONF=$CONF scancel --full --quiet -u root 2>/dev/null || true
    fi
    stop_pidfile "$DIR/slurmd.pid"
    stop_pidfile "$DIR/slurmctld.pid"
    stop_pidfile "$DIR/munged.pid"
    rm -rf "$DIR"
}

case ${1:-} in
up) up ;;
down) down ;;
env) echo "export SLURM_CONF=$CONF" ;;
-h | --help) usage 0 ;;
*) usage 1 >&2 ;;
esac

#!/usr/bin/env bash
# Startup of an empty MPI program (MPI_Init + MPI_Finalize, ctests/bench/empty.c) on N ranks,
# each MPI started by its own launcher, in two settings (root only):
#
#   hosts  over the fake hosts of scripts/hosts.sh (network namespaces, made and removed
#          here), every launcher reaching them through the same ssh stand-in
#          (scripts/hosts-launcher), ranks round robin: oxmpi by its mpiexec; oxmpi and
#          MPICH by MPICH's Hydra (`mpiexec.hydra -iface oxbr0 -launcher ssh -launcher-exec
#          ... -hosts oxh1,...`); Open MPI by its mpirun (`--mca plm_rsh_agent ...`, TCP on
#          the hosts' subnet)
#   srun   the one-node Slurm cluster of scripts/slurm.sh (brought up and down here): oxmpi
#          with --mpi=pmi2 and --mpi=pmix, MPICH with --mpi=pmi2, Open MPI with --mpi=pmix
#
#   scripts/startup-bench.sh [--np N] [--hosts H] [--launches K] [--settings hosts,srun]
#                            [--oxmpi-prefix DIR] [--out DIR]
#
# Defaults: --np 8, --hosts 2, --launches 10, both settings. Prints, per setting and MPI, the
# median and the fastest of K launches (wall time of the launcher command, ms) and writes
# them to DIR/startup.csv (default DIR: /tmp/oxmpi-startup-DATE). Needs mpich, openmpi-bin,
# libopenmpi-dev, slurm-wlm, munge and libpmix2 (installed with apt-get when missing).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
np=8
nhosts=2
launches=10
settings=hosts,srun
prefix=
out=/tmp/oxmpi-startup-$(date +%Y%m%d-%H%M%S)

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
        --np) np=$2; shift 2 ;;
        --hosts) nhosts=$2; shift 2 ;;
        --launches) launches=$2; shift 2 ;;
        --settings) settings=$2; shift 2 ;;
        --oxmpi-prefix) prefix=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) usage ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "startup-bench: needs root (namespaces, Slurm daemons)" >&2; exit 1; }

missing=()
for pair in mpicc.mpich:mpich mpicc.openmpi:libopenmpi-dev mpirun.openmpi:openmpi-bin srun:slurm-wlm munged:munge; do
    command -v "${pair%%:*}" > /dev/null || missing+=("${pair#*:}")
done
[ -e /usr/lib/x86_64-linux-gnu/libpmix.so.2 ] || missing+=(libpmix2)
if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

mkdir -p "$out"
cd "$root"
if [ -z "$prefix" ]; then
    prefix=$out/prefix
    bash scripts/install.sh --prefix "$prefix" --profile release > "$out/install.log"
fi
"$prefix/bin/mpicc" -O2 -o "$out/empty-oxmpi" ctests/bench/empty.c
mpicc.mpich -O2 -o "$out/empty-mpich" ctests/bench/empty.c
mpicc.openmpi -O2 -o "$out/empty-openmpi" ctests/bench/empty.c
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "setting,mpi,np,median_ms,min_ms" > "$out/startup.csv"
# time_launches SETTING NAME CMD...: K launches of CMD, the median and the fastest.
time_launches() {
    local setting=$1 name=$2 k t0 t1 times=()
    shift 2
    for ((k = 0; k < launches; k++)); do
        t0=$(date +%s%N)
        if ! timeout -k 5 60 "$@" > "$out/last.log" 2>&1; then
            echo "startup-bench: $setting $name failed: $(tail -5 "$out/last.log")" >&2
            return 1
        fi
        t1=$(date +%s%N)
        times+=($(((t1 - t0) / 1000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk -v s="$setting" -v m="$name" -v np="$np" '
        { t[NR] = $1 }
        END {
            med = NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
            printf "%s,%s,%s,%.1f,%.1f\n", s, m, np, med / 1000, t[1] / 1000
        }' | tee -a "$out/startup.csv"
}

cleanup=()
finish() {
    for c in "${cleanup[@]}"; do eval "$c" > /dev/null 2>&1 || true; done
}
trap finish EXIT

if [[ ,$settings, == *,hosts,* ]]; then
    bash scripts/hosts.sh up "$nhosts" > "$out/hosts.log" 2>&1
    cleanup+=("bash '$root/scripts/hosts.sh' down")
    list=$(seq -s, -f 'oxh%g' 1 "$nhosts")
    ssh_standin=$root/scripts/hosts-launcher
    hydra=(mpiexec.hydra -iface oxbr0 -launcher ssh -launcher-exec "$ssh_standin" -hosts "$list")
    time_launches hosts "oxmpi (its mpiexec)" \
        "$prefix/bin/mpiexec" -iface oxbr0 -launcher ssh -launcher-exec "$ssh_standin" -hosts "$list" -n "$np" "$out/empty-oxmpi"
    time_launches hosts "oxmpi (Hydra)" "${hydra[@]}" -n "$np" "$out/empty-oxmpi"
    time_launches hosts "MPICH (Hydra)" env UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 "${hydra[@]}" -n "$np" "$out/empty-mpich"
    time_launches hosts "Open MPI (mpirun)" mpirun.openmpi --oversubscribe --allow-run-as-root \
        --mca plm_rsh_agent "$ssh_standin" --mca oob_tcp_if_include 10.77.0.0/24 --mca btl tcp,self,vader \
        --mca btl_tcp_if_include 10.77.0.0/24 --mca pml ob1 --host "$(seq -s, -f "oxh%g:$np" 1 "$nhosts")" \
        -n "$np" "$out/empty-openmpi"
    bash scripts/hosts.sh down > /dev/null 2>&1
fi

if [[ ,$settings, == *,srun,* ]]; then
    bash scripts/slurm.sh up > "$out/slurm.log" 2>&1
    cleanup+=("bash '$root/scripts/slurm.sh' down")
    eval "$(bash scripts/slurm.sh env)"
    time_launches srun "oxmpi (--mpi=pmi2)" srun --mpi=pmi2 -n "$np" "$out/empty-oxmpi"
    time_launches srun "oxmpi (--mpi=pmix)" srun --mpi=pmix -n "$np" "$out/empty-oxmpi"
    time_launches srun "MPICH (--mpi=pmi2)" srun --mpi=pmi2 -n "$np" "$out/empty-mpich"
    time_launches srun "Open MPI (--mpi=pmix)" srun --mpi=pmix -n "$np" "$out/empty-openmpi"
fi
echo "startup-bench: results in $out/startup.csv (load $(cut -d' ' -f1-3 /proc/loadavg))"

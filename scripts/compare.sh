#!/usr/bin/env bash
# Runs the micro-benchmarks of ctests/bench/ on oxmpi, Debian MPICH and Debian Open MPI side by
# side, plus the MPICH-built binaries on oxmpi (library swapped through LD_LIBRARY_PATH).
#
#   scripts/compare.sh [--quick] [--bench LIST] [--np LIST] [--rounds N] [--out DIR]
#                      [--mpis LIST] [--oxmpi-prefix DIR] [--timeout SECONDS] [--hosts N]
#
#   --quick            fewer sizes and iterations, np 2 (under 5 minutes on 2 busy cores)
#   --bench LIST       comma-separated, from: latency,bw,bibw,mbw_mr,vector,coll,sparse,rma,startup
#                      (default: all of these), and the MPI-IO ones, run only when named: io
#                      (bench_io, files in ${TMPDIR:-/tmp}) and ioshm (the same in /dev/shm)
#   --np LIST          rank counts for mbw_mr, coll, sparse, io, ioshm and startup (default 2,4 with 4
#                      cores or more, else 2; --quick 2); latency, bw, bibw, vector and rma always
#                      run on 2 ranks. Rank counts above the core count oversubscribe: MPIs
#                      that busy-poll (MPICH) then take milliseconds per operation and a full
#                      collective run can exceed --timeout
#   --rounds N         rounds; each round runs every MPI once per benchmark, alternating
#                      (A B C D A B C D ...) (default 3)
#   --out DIR          output directory (default /tmp/oxmpi-compare-DATE)
#   --mpis LIST        comma-separated, from: oxmpi,mpich,openmpi,oxmpi-mpichbin (default all)
#   --oxmpi-prefix DIR use an existing oxmpi install instead of building and installing one
#   --timeout SECONDS  limit for one benchmark run (default 600, --quick 120)
#   --hosts N          run every MPI across N fake hosts of scripts/hosts.sh (root only; they
#                      are made and removed by this script), ranks round robin over them, so
#                      the 2-rank benchmarks measure the network between two hosts. Default
#                      benchmarks then: latency,bw,bibw,coll,rma; default --np 4 (2 ranks
#                      per host).
#                      Launching, the same for all but Open MPI (whose runtime cannot run
#                      under Hydra): oxmpi, MPICH and the MPICH binaries on oxmpi by MPICH's
#                      Hydra (`mpiexec.hydra -iface oxbr0 -launcher ssh -launcher-exec
#                      scripts/hosts-launcher -hosts oxh1,...`), MPICH with UCX_TLS=tcp,self
#                      UCX_NET_DEVICES=eth0 (else UCX takes the loopback and hangs); Open MPI
#                      by its mpirun through the same ssh stand-in, TCP BTL on the hosts'
#                      subnet. oxmpi uses the provider it would choose (OXMPI_NET_PROVIDER
#                      overrides, and is recorded in env.txt)
#
# Writes to the output directory:
#   samples.csv   round,bench,mpi,np,size,median_us,p90_us,mbps,msgrate: every run's records
#   summary.csv   medians over rounds; summary.md: Markdown tables with oxmpi / best peer
#   plots/*.png   one plot per benchmark and rank count, one line per MPI (needs gnuplot)
#   logs/         the output of every run; failures.txt: the runs that failed
#   env.txt       machine, load, versions
#
# Installs mpich, openmpi-bin, libopenmpi-dev and gnuplot-nox with apt-get when missing (as
# root). Builds oxmpi with scripts/install.sh (cargo build --release) into the output directory.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
benchdir=$root/ctests/bench

quick=no
benches=
nps=
rounds=
out=
mpis=oxmpi,mpich,openmpi,oxmpi-mpichbin
oxprefix=
timeout_s=
nhosts=0

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=yes; shift ;;
        --bench|--benches) [ $# -ge 2 ] || usage; benches=$2; shift 2 ;;
        --np) [ $# -ge 2 ] || usage; nps=$2; shift 2 ;;
        --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
        --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
        --mpis) [ $# -ge 2 ] || usage; mpis=$2; shift 2 ;;
        --oxmpi-prefix) [ $# -ge 2 ] || usage; oxprefix=$2; shift 2 ;;
        --timeout) [ $# -ge 2 ] || usage; timeout_s=$2; shift 2 ;;
        --hosts) [ $# -ge 2 ] || usage; nhosts=$2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "compare.sh: unknown argument: $1" >&2; usage ;;
    esac
done
if [ -z "$rounds" ]; then
    rounds=3
fi
case $nhosts in
    0) [ -n "$benches" ] || benches=latency,bw,bibw,mbw_mr,vector,coll,sparse,rma,startup ;;
    [2-9]) [ -n "$benches" ] || benches=latency,bw,bibw,coll,rma ;;
    *) echo "compare.sh: --hosts takes 2 to 9" >&2; exit 2 ;;
esac
if [ -z "$nps" ] && [ "$nhosts" != 0 ]; then
    nps=4
fi
if [ -z "$nps" ]; then
    nps=2
    if [ $quick = no ] && [ "$(nproc)" -ge 4 ]; then nps=2,4; fi
fi
if [ -z "$timeout_s" ]; then
    if [ $quick = yes ]; then timeout_s=120; else timeout_s=600; fi
fi
[ -n "$out" ] || out=${TMPDIR:-/tmp}/oxmpi-compare-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out/logs" "$out/build"
out=$(cd "$out" && pwd)
: > "$out/failures.txt"

IFS=, read -r -a bench_list <<< "$benches"
IFS=, read -r -a np_list <<< "$nps"
IFS=, read -r -a mpi_list <<< "$mpis"
for b in "${bench_list[@]}"; do
    case $b in
        latency|bw|bibw|mbw_mr|vector|coll|sparse|rma|startup|io|ioshm) ;;
        *) echo "compare.sh: unknown benchmark $b" >&2; exit 2 ;;
    esac
done
want_mpi() { # name
    local m
    for m in "${mpi_list[@]}"; do [ "$m" = "$1" ] && return 0; done
    return 1
}
for m in "${mpi_list[@]}"; do
    case $m in
        oxmpi|mpich|openmpi|oxmpi-mpichbin) ;;
        *) echo "compare.sh: unknown MPI $m" >&2; exit 2 ;;
    esac
done

log() { printf '[compare %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
start_time=$(date +%s)

# ---------------------------------------------------------------------------------------------
# Prerequisites.

missing_pkgs=()
if want_mpi mpich || want_mpi oxmpi-mpichbin; then
    command -v mpicc.mpich > /dev/null && command -v mpiexec.mpich > /dev/null ||
        missing_pkgs+=(mpich libmpich-dev)
fi
if want_mpi openmpi; then
    command -v mpicc.openmpi > /dev/null && command -v mpirun.openmpi > /dev/null ||
        missing_pkgs+=(openmpi-bin libopenmpi-dev)
fi
command -v gnuplot > /dev/null || missing_pkgs+=(gnuplot-nox)
if [ ${#missing_pkgs[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
        log "installing ${missing_pkgs[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing_pkgs[@]}" > "$out/logs/apt.log" 2>&1 || {
            apt-get update > /dev/null 2>&1 || true
            DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing_pkgs[@]}" > "$out/logs/apt.log" 2>&1 ||
                log "apt-get install failed (see logs/apt.log); going on with what is there"
        }
    else
        log "missing: ${missing_pkgs[*]} (install them; not root or no apt-get)"
    fi
fi
command -v python3 > /dev/null || { echo "compare.sh: python3 is needed for the report" >&2; exit 1; }

if want_mpi oxmpi || want_mpi oxmpi-mpichbin; then
    if [ -z "$oxprefix" ]; then
        oxprefix=$out/oxmpi-prefix
        log "building and installing oxmpi into $oxprefix"
        bash "$root/scripts/install.sh" --prefix "$oxprefix" > "$out/logs/install.log" 2>&1 || {
            tail -20 "$out/logs/install.log" >&2
            echo "compare.sh: scripts/install.sh failed" >&2
            exit 1
        }
    fi
    oxprefix=$(cd "$oxprefix" && pwd)
    if [ ! -x "$oxprefix/bin/mpicc" ] || [ ! -x "$oxprefix/bin/mpiexec" ]; then
        echo "compare.sh: no oxmpi install in $oxprefix" >&2
        exit 1
    fi
fi

# ---------------------------------------------------------------------------------------------
# Builds: one per compiler wrapper.

build() { # name mpicc
    log "building the benchmarks with $2"
    make -s -C "$benchdir" MPICC="$2" OUT="$out/build/$1" > "$out/logs/build-$1.log" 2>&1 || {
        cat "$out/logs/build-$1.log" >&2
        echo "compare.sh: building with $2 failed" >&2
        exit 1
    }
}
built_mpis=()
if want_mpi oxmpi; then build oxmpi "$oxprefix/bin/mpicc"; built_mpis+=(oxmpi); fi
if want_mpi mpich || want_mpi oxmpi-mpichbin; then
    if command -v mpicc.mpich > /dev/null; then
        build mpich mpicc.mpich
        want_mpi mpich && built_mpis+=(mpich)
        want_mpi oxmpi-mpichbin && built_mpis+=(oxmpi-mpichbin)
    else
        log "no mpicc.mpich: skipping mpich and oxmpi-mpichbin"
    fi
fi
if want_mpi openmpi; then
    if command -v mpicc.openmpi > /dev/null; then
        build openmpi mpicc.openmpi
        built_mpis+=(openmpi)
    else
        log "no mpicc.openmpi: skipping openmpi"
    fi
fi
# Keep the canonical order.
run_mpis=()
for m in oxmpi mpich openmpi oxmpi-mpichbin; do
    for b in "${built_mpis[@]}"; do [ "$b" = "$m" ] && run_mpis+=("$m"); done
done
[ ${#run_mpis[@]} -gt 0 ] || { echo "compare.sh: nothing to run" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# Launching: sets `cmd` to the command line (an array) that runs program $2 of MPI $1 on $3
# ranks.

declare -A osc_ucx=([bench_rma]="--mca osc ucx")
ompi_root=()
if [ "$(id -u)" = 0 ]; then
    ompi_root=(--allow-run-as-root)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Across hosts: the hosts, and one Hydra command line for oxmpi and MPICH.
if [ "$nhosts" != 0 ]; then
    [ "$(id -u)" = 0 ] || { echo "compare.sh: --hosts needs root (network namespaces)" >&2; exit 1; }
    command -v mpiexec.hydra > /dev/null || { echo "compare.sh: --hosts needs MPICH's mpiexec.hydra (package mpich)" >&2; exit 1; }
    log "making $nhosts hosts"
    bash "$root/scripts/hosts.sh" up "$nhosts" > "$out/logs/hosts.log" 2>&1 || {
        cat "$out/logs/hosts.log" >&2
        echo "compare.sh: scripts/hosts.sh up failed" >&2
        exit 1
    }
    trap 'bash "$root/scripts/hosts.sh" down > /dev/null 2>&1' EXIT
    host_list=$(seq -s, -f 'oxh%g' 1 "$nhosts")
    hydra=(mpiexec.hydra -iface oxbr0 -launcher ssh -launcher-exec "$root/scripts/hosts-launcher" -hosts "$host_list")
    ompi_hosts=(--mca plm_rsh_agent "$root/scripts/hosts-launcher" --mca oob_tcp_if_include 10.77.0.0/24
        --mca btl tcp,self,vader --mca btl_tcp_if_include 10.77.0.0/24 --mca pml ob1 --host "$host_list")
fi
launcher() { # mpi program np
    if [ "$nhosts" != 0 ]; then
        case $1 in
            oxmpi) cmd=("${hydra[@]}" -n "$3" "$out/build/oxmpi/$2") ;;
            mpich) cmd=(env UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 "${hydra[@]}" -n "$3" "$out/build/mpich/$2") ;;
            openmpi) cmd=(mpirun.openmpi --oversubscribe "${ompi_root[@]}" "${ompi_hosts[@]}" -n "$3" "$out/build/openmpi/$2") ;;
            oxmpi-mpichbin)
                cmd=(env "LD_LIBRARY_PATH=$oxprefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
                    "${hydra[@]}" -n "$3" "$out/build/mpich/$2") ;;
        esac
        return
    fi
    case $1 in
        oxmpi) cmd=("$oxprefix/bin/mpiexec" -n "$3" "$out/build/oxmpi/$2") ;;
        mpich) cmd=(mpiexec.mpich -n "$3" "$out/build/mpich/$2") ;;
        # Open MPI's default one-sided component (osc rdma) crashes here; osc ucx works.
        openmpi) cmd=(mpirun.openmpi --oversubscribe "${ompi_root[@]}" ${osc_ucx[$2]:-} -n "$3" "$out/build/openmpi/$2") ;;
        oxmpi-mpichbin)
            cmd=(env "LD_LIBRARY_PATH=$oxprefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
                "$oxprefix/bin/mpiexec" -n "$3" "$out/build/mpich/$2") ;;
    esac
}

# Benchmark arguments, full and quick.
args_for() { # bench
    if [ $quick = yes ]; then
        case $1 in
            latency) bargs=(--max-size 1M --iters 300 --warmup 30) ;;
            bw|bibw) bargs=(--max-size 1M --iters 20 --warmup 3) ;;
            mbw_mr) bargs=(--max-size 64K --iters 10 --warmup 2 --step 4) ;;
            vector) bargs=(--max-size 256K --iters 40 --warmup 4 --window 16 --blocks '1:2,64:128' --step 4) ;;
            coll) bargs=(--max-size 64K --iters 30 --warmup 3 --step 4) ;;
            sparse) bargs=(--min-size 1K --max-size 256K --iters 20 --warmup 2 --step 4) ;;
            rma) bargs=(--max-size 1M --iters 200 --warmup 20 --step 8) ;;
            io|ioshm) bargs=(--min-size 4M --max-size 16M --iters 3 --warmup 1 --step 4) ;;
        esac
    else
        case $1 in
            latency) bargs=(--max-size 4M) ;;
            bw|bibw|mbw_mr) bargs=(--max-size 4M) ;;
            vector) bargs=(--max-size 4M) ;;
            coll) bargs=(--max-size 4M) ;;
            sparse) bargs=(--max-size 4M) ;;
            rma) bargs=(--max-size 4M) ;;
            io|ioshm) bargs=(--min-size 4M --max-size 64M --step 4) ;;
        esac
    fi
}

# Rank counts a benchmark runs at.
nps_for() { # bench
    local n
    nps_out=()
    case $1 in
        latency|bw|bibw|vector|rma) nps_out=(2) ;;
        mbw_mr)
            for n in "${np_list[@]}"; do [ $((n % 2)) = 0 ] && nps_out+=("$n"); done ;;
        *) nps_out=("${np_list[@]}") ;;
    esac
}

samples=$out/samples.csv
echo "round,bench,mpi,np,size,median_us,p90_us,mbps,msgrate" > "$samples"

# Runs one benchmark once and appends its records to samples.csv.
run_one() { # round mpi bench np
    local r=$1 mpi=$2 bench=$3 np=$4 logf rc
    logf=$out/logs/$bench-np$np-$mpi-r$r.log
    case $bench in
        # One program for both; the directory and the record names say which.
        io) launcher "$mpi" bench_io "$np"
            cmd=(env "BENCH_IO_DIR=${TMPDIR:-/tmp}" BENCH_IO_NAME=io "${cmd[@]}") ;;
        ioshm) launcher "$mpi" bench_io "$np"
            cmd=(env BENCH_IO_DIR=/dev/shm BENCH_IO_NAME=ioshm "${cmd[@]}") ;;
        *) launcher "$mpi" "bench_$bench" "$np" ;;
    esac
    args_for "$bench"
    rc=0
    timeout -k 10 "$timeout_s" "${cmd[@]}" --label "$mpi" --no-header "${bargs[@]}" > "$logf" 2>&1 || rc=$?
    if [ $rc != 0 ]; then
        echo "round $r $mpi $bench np=$np: exit $rc (see logs/$(basename "$logf"))" >> "$out/failures.txt"
        log "FAILED: $mpi $bench np=$np round $r (exit $rc)"
    fi
    # The MPICH binary must really have run on oxmpi.
    if [ "$mpi" = oxmpi-mpichbin ] && ! grep -q '^# library: oxmpi' "$logf"; then
        echo "round $r $mpi $bench np=$np: the MPICH binary did not load oxmpi (see logs)" >> "$out/failures.txt"
        log "FAILED: $mpi $bench np=$np: library not swapped"
        return
    fi
    grep -E '^[a-z][a-z0-9_]*,' "$logf" | awk -F, -v r="$r" 'NF == 8 { print r "," $0 }' >> "$samples" || true
}

# Startup: wall time of `mpiexec -n N bench_empty`, several launches per sample.
run_startup() { # round mpi np
    local r=$1 mpi=$2 np=$3 k launches t0 t1 rc times=() logf
    logf=$out/logs/startup-np$np-$mpi-r$r.log
    if [ $quick = yes ]; then launches=3; else launches=10; fi
    launcher "$mpi" bench_empty "$np"
    : > "$logf"
    for ((k = 0; k < launches; k++)); do
        t0=$(date +%s%N)
        rc=0
        timeout -k 5 60 "${cmd[@]}" >> "$logf" 2>&1 || rc=$?
        t1=$(date +%s%N)
        if [ $rc != 0 ]; then
            echo "round $r $mpi startup np=$np: exit $rc (see logs/$(basename "$logf"))" >> "$out/failures.txt"
            log "FAILED: $mpi startup np=$np round $r (exit $rc)"
            return
        fi
        times+=($(((t1 - t0) / 1000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk -v r="$r" -v m="$mpi" -v np="$np" '
        { t[NR] = $1 }
        END {
            med = NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
            k = int((9 * NR + 9) / 10); if (k < 1) k = 1
            printf "%s,startup,%s,%s,0,%.1f,%.1f,0,0\n", r, m, np, med, t[k]
        }' >> "$samples"
}

{
    echo "date: $(date -Is)"
    echo "host: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "quick: $quick rounds: $rounds benches: $benches np: $nps mpis: ${run_mpis[*]}"
    if [ "$nhosts" != 0 ]; then
        echo "hosts: $nhosts (scripts/hosts.sh), ranks round robin; Hydra: ${hydra[*]}"
        echo "mpich: UCX_TLS=tcp,self UCX_NET_DEVICES=eth0; openmpi: mpirun ${ompi_hosts[*]}"
        echo "oxmpi network: $(bash "$root/scripts/hosts.sh" exec oxh1 "$oxprefix/bin/oxmpi-info" 2> /dev/null | grep -m1 '<- used' | sed 's/^ *//')"
    fi
    [ -n "$oxprefix" ] && echo "oxmpi: $("$oxprefix/bin/oxmpi-info" 2> /dev/null | head -1) ($(cd "$root" && git describe --always --dirty 2> /dev/null || echo unknown))"
    command -v mpichversion > /dev/null && echo "mpich: $(mpichversion 2> /dev/null | head -1)"
    command -v ompi_info > /dev/null && echo "openmpi: $(ompi_info --version 2> /dev/null | head -1)"
    env | grep -E '^OXMPI_' | sed 's/^/env: /' || true
} > "$out/env.txt"

for bench in "${bench_list[@]}"; do
    nps_for "$bench"
    for np in "${nps_out[@]}"; do
        for ((r = 1; r <= rounds; r++)); do
            log "$bench np=$np round $r/$rounds: ${run_mpis[*]}"
            for mpi in "${run_mpis[@]}"; do
                if [ "$bench" = startup ]; then
                    run_startup "$r" "$mpi" "$np"
                else
                    run_one "$r" "$mpi" "$bench" "$np"
                fi
            done
        done
    done
done

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/env.txt"
echo "elapsed: $(($(date +%s) - start_time)) s" >> "$out/env.txt"

mode=full
[ $quick = yes ] && mode=quick
[ "$nhosts" != 0 ] && mode="$mode, across $nhosts hosts"
python3 "$benchdir/report.py" "$samples" "$out" \
    --title "oxmpi vs MPICH vs Open MPI ($(date +%Y-%m-%d), $(nproc) cores, $mode, $rounds rounds)"

log "done in $(($(date +%s) - start_time)) s: $out/summary.md"
if [ -s "$out/failures.txt" ]; then
    log "some runs failed:"
    cat "$out/failures.txt" >&2
    exit 1
fi

#!/bin/bash
# run-mpich-suite.sh -- build and run the MPICH test suite (test/mpi of the
# MPICH source) against an arbitrary, already installed MPI implementation.
#
# Usage: run-mpich-suite.sh [options]      (run with --help for details)
#
# Exit status: 0 = suite ran (whatever the test results), 2 = setup failure
# (source, configure, support-library build, launcher sanity check),
# 1 = tests failed and --strict was given, 64 = usage error.
# The last line printed on stdout is always "N passed, N failed" once tests ran.

set -u
set -o pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Core set of C directories (no threads/, which alone can take 10-20 min on 2 cores).
DEFAULT_DIRS="attr,pt2pt,coll,comm,datatype,errhan,group,info,init,topo,rma,io"

usage() {
    cat <<'EOF'
run-mpich-suite.sh -- build and run the MPICH test suite (test/mpi) against any MPI

MPI under test (flag, or environment variable of the same upper-case name):
  --mpicc CMD          MPI C compiler wrapper (MPICC; default: mpicc)            [required]
  --mpiexec CMD        launcher (MPIEXEC; default: mpiexec). May contain arguments.
  --mpiexec-args ARGS  extra launcher arguments (MPIEXEC_ARGS), e.g. "--oversubscribe"
  --mpif77 CMD         Fortran 77 wrapper (MPIF77; optional; builds f77/, which is added to
                       the default directory set)
  --mpifc CMD          Fortran 90 wrapper (MPIFC; optional; likewise f90/)
  --mpicxx CMD         C++ wrapper (MPICXX; optional; likewise cxx/)
  --no-auto-launcher   do not add --oversubscribe / OMPI_ALLOW_RUN_AS_ROOT* for Open MPI
  --np-flag FLAG       launcher option for the process count (SUITE_NP_FLAG; default -n;
                       runtests always passes "-n N", the wrapper rewrites it)

What to run:
  --dirs LIST          comma list of test/mpi directories (SUITE_DIRS)
                       default: attr,pt2pt,coll,comm,datatype,errhan,group,info,init,topo,rma,io
                       (+ f77/f90/cxx when those wrappers are given)
                       "all-c" = default + threads,mpi_t,part,impls ; f77/f90/cxx/errors/spawn/ft on request
  --lists LIST         testlist files to read in every directory (SUITE_LISTS; default: testlist)
                       e.g. "testlist,testlist.dtp" adds the generated DTPools datatype tests
  --maxnp N            cap on ranks per test (SUITE_MAXNP; default 4; 0 = as listed)
  --timeout S          default per-test time limit (SUITE_TIMEOUT; default 90)
  --max-timeout S      hard cap for tests whose testlist asks for more (SUITE_MAX_TIMEOUT; default 180)
  --budget S           overall wall-clock budget for the run phase; tests not started in
                       time are reported as failed "NOT RUN" (SUITE_BUDGET; default 0 = none)
  --max-consec-timeouts N  after N consecutive timeouts in one directory the rest of that
                       directory is reported "NOT RUN" (SUITE_MAX_CONSEC_TIMEOUTS; default 5)
  --exclude FILE|LIST  tests to drop: "dir/prog" entries (comma list or file, # comments)
                       (SUITE_EXCLUDE). Matching testlist lines are commented out.
  --strictmpi auto|yes|no  configure --enable-strictmpi (skip MPICH extensions / non-standard
                       usage, impls/); auto = yes unless mpi.h defines MPICH (SUITE_STRICTMPI)
  --output-filter RE   drop launcher output lines matching this ERE before checking
                       (SUITE_OUTPUT_FILTER), e.g. for chatty launcher banners
  --max-output BYTES   keep at most this much output of one test; a test that writes more
                       fails at once (SUITE_MAX_OUTPUT; default 1048576; 0 = no cap). Guards
                       against tests that loop printing errors (GBs of TAP/JUnit in a minute)

Where:
  --workdir DIR        work area (SUITE_WORKDIR; default: ${TMPDIR:-/tmp}/mpich-suite-work)
  --src DIR            use this MPICH source tree (or its test/mpi) instead of downloading
  --tarball FILE       use this mpich_*.orig.tar.* instead of downloading
  --tag NAME           build directory name (default derived from MPICC)
  --results DIR        results directory (default: <workdir>/results-<tag>-<timestamp>)
  --tap FILE           combined TAP output (default: <results>/suite.tap)
  --junit FILE         combined JUnit XML output (default: <results>/suite.junit.xml)
  --jobs N             make -j (SUITE_JOBS; default: nproc+1)
  --configure-args S   extra arguments for the test suite's configure (SUITE_CONFIGURE_ARGS)
  --reconfigure        force configure + rebuild
  --strict             exit 1 if any test failed
  --fetch-only         only obtain (download/extract/patch) the source, then exit
  --build-only         stop after configure + build (a later run with the same options reuses it)
  -h, --help

The source comes from, in order: --src, --tarball, a copy cached in <workdir>/src,
an orig tarball cached in <workdir>/src/dl, or `apt-get source --download-only mpich`
(a deb-src entry mirroring the existing deb entry is added if none exists).
EOF
}

die_setup() { echo "run-mpich-suite: SETUP FAILURE: $*" >&2; exit 2; }
die_usage() { echo "run-mpich-suite: $*" >&2; echo "try --help" >&2; exit 64; }
log() { echo "[run-mpich-suite] $*" >&2; }

# ---------------------------------------------------------------- options
MPICC=${MPICC:-}
MPICXX=${MPICXX:-}
MPIF77=${MPIF77:-}
MPIFC=${MPIFC:-}
MPIEXEC=${MPIEXEC:-}
MPIEXEC_ARGS=${MPIEXEC_ARGS:-}
DIRS=${SUITE_DIRS:-}
LISTS=${SUITE_LISTS:-testlist}
MAXNP=${SUITE_MAXNP:-4}
TEST_TIMEOUT=${SUITE_TIMEOUT:-90}
MAX_TIMEOUT=${SUITE_MAX_TIMEOUT:-180}
BUDGET=${SUITE_BUDGET:-0}
MAX_CONSEC_TIMEOUTS=${SUITE_MAX_CONSEC_TIMEOUTS:-5}
EXCLUDE=${SUITE_EXCLUDE:-}
STRICTMPI=${SUITE_STRICTMPI:-auto}
OUTPUT_FILTER=${SUITE_OUTPUT_FILTER:-}
MAX_OUTPUT=${SUITE_MAX_OUTPUT:-1048576}
WORK=${SUITE_WORKDIR:-${TMPDIR:-/tmp}/mpich-suite-work}
SRC_OPT=""
TARBALL=""
TAG=${SUITE_TAG:-}
RESULTS=""
TAPFILE=""
JUNITFILE=""
JOBS=${SUITE_JOBS:-$(( $(nproc 2>/dev/null || echo 1) + 1 ))}
EXTRA_CONF=${SUITE_CONFIGURE_ARGS:-}
RECONF=0
STRICT=0
FETCH_ONLY=0
BUILD_ONLY=0
AUTO_LAUNCHER=1
NP_FLAG=${SUITE_NP_FLAG:--n}
# apt locations (overridable for testing without touching the system)
APT_ETC=${SUITE_APT_ETC:-/etc/apt}
APT_STATE=${SUITE_APT_STATE:-}

need_arg() { [ $# -ge 2 ] || die_usage "option $1 needs an argument"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --*=*) opt=${1%%=*}; val=${1#*=}; shift; set -- "$opt" "$val" "$@"; continue ;;
    esac
    case "$1" in
        --mpicc) need_arg "$@"; MPICC=$2; shift 2 ;;
        --mpicxx) need_arg "$@"; MPICXX=$2; shift 2 ;;
        --mpif77) need_arg "$@"; MPIF77=$2; shift 2 ;;
        --mpifc|--mpif90|--mpifort) need_arg "$@"; MPIFC=$2; shift 2 ;;
        --mpiexec) need_arg "$@"; MPIEXEC=$2; shift 2 ;;
        --mpiexec-args) need_arg "$@"; MPIEXEC_ARGS=$2; shift 2 ;;
        --no-auto-launcher) AUTO_LAUNCHER=0; shift ;;
        --np-flag) need_arg "$@"; NP_FLAG=$2; shift 2 ;;
        --dirs) need_arg "$@"; DIRS=$2; shift 2 ;;
        --lists) need_arg "$@"; LISTS=$2; shift 2 ;;
        --maxnp) need_arg "$@"; MAXNP=$2; shift 2 ;;
        --timeout) need_arg "$@"; TEST_TIMEOUT=$2; shift 2 ;;
        --max-timeout) need_arg "$@"; MAX_TIMEOUT=$2; shift 2 ;;
        --budget) need_arg "$@"; BUDGET=$2; shift 2 ;;
        --max-consec-timeouts) need_arg "$@"; MAX_CONSEC_TIMEOUTS=$2; shift 2 ;;
        --exclude) need_arg "$@"; EXCLUDE=$2; shift 2 ;;
        --strictmpi) need_arg "$@"; STRICTMPI=$2; shift 2 ;;
        --output-filter) need_arg "$@"; OUTPUT_FILTER=$2; shift 2 ;;
        --max-output) need_arg "$@"; MAX_OUTPUT=$2; shift 2 ;;
        --workdir) need_arg "$@"; WORK=$2; shift 2 ;;
        --src) need_arg "$@"; SRC_OPT=$2; shift 2 ;;
        --tarball) need_arg "$@"; TARBALL=$2; shift 2 ;;
        --tag) need_arg "$@"; TAG=$2; shift 2 ;;
        --results) need_arg "$@"; RESULTS=$2; shift 2 ;;
        --tap|--tapfile) need_arg "$@"; TAPFILE=$2; shift 2 ;;
        --junit|--junitfile) need_arg "$@"; JUNITFILE=$2; shift 2 ;;
        --jobs|-j) need_arg "$@"; JOBS=$2; shift 2 ;;
        --configure-args) need_arg "$@"; EXTRA_CONF=$2; shift 2 ;;
        --reconfigure) RECONF=1; shift ;;
        --strict) STRICT=1; shift ;;
        --fetch-only) FETCH_ONLY=1; shift ;;
        --build-only) BUILD_ONLY=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die_usage "unknown option: $1" ;;
    esac
done

isint() { case "$1" in ''|*[!0-9]*) return 1 ;; esac; return 0; }
for v in MAXNP TEST_TIMEOUT MAX_TIMEOUT BUDGET MAX_CONSEC_TIMEOUTS JOBS MAX_OUTPUT; do
    isint "${!v}" || die_usage "$v must be a non-negative integer (got '${!v}')"
done
case "$STRICTMPI" in auto|yes|no) ;; *) die_usage "--strictmpi must be auto, yes or no" ;; esac
[ "$TEST_TIMEOUT" -gt 0 ] || die_usage "--timeout must be > 0"
DIRS_DEFAULTED=0
if [ -z "$DIRS" ]; then DIRS=$DEFAULT_DIRS; DIRS_DEFAULTED=1; fi
case "$DIRS" in
    all-c) DIRS="$DEFAULT_DIRS,threads,mpi_t,part,impls" ;;
esac
DIRS=$(echo "$DIRS" | tr ' ' ',' | sed 's/,,*/,/g; s/^,//; s/,$//')
[ -n "$DIRS" ] || die_usage "empty --dirs"

# ---------------------------------------------------------------- tools
for t in perl make tar sed awk timeout mktemp cksum; do
    command -v "$t" >/dev/null 2>&1 || die_setup "required tool '$t' not found"
done
mkdir -p "$WORK" || die_setup "cannot create $WORK"
WORK=$(cd "$WORK" && pwd)
SRC_CACHE=$WORK/src
mkdir -p "$SRC_CACHE/dl"

# ---------------------------------------------------------------- source
find_cached_src() {
    local d
    for d in "$SRC_CACHE"/mpich-*/test/mpi; do
        if [ -f "$d/configure" ] && [ -f "$d/runtests.in" ] && [ -f "$d/.runner-complete" ]; then
            echo "$d"; return 0
        fi
    done
    return 1
}

extract_tarball() {  # extract only test/mpi of an MPICH tarball into the cache
    local tb=$1 top
    log "extracting test/mpi from $tb"
    top=$(tar -tf "$tb" 2>/dev/null | head -1 | cut -d/ -f1)
    [ -n "$top" ] || die_setup "cannot list tarball $tb"
    rm -rf "${SRC_CACHE:?}/$top"
    tar -xf "$tb" -C "$SRC_CACHE" "$top/test/mpi" || die_setup "cannot extract $top/test/mpi from $tb"
    [ -f "$SRC_CACHE/$top/test/mpi/configure" ] || die_setup "$tb has no test/mpi/configure"
    touch "$SRC_CACHE/$top/test/mpi/.runner-complete"
}

apt_opts=()
apt_setup_opts() {
    apt_opts=()
    if [ "$APT_ETC" != /etc/apt ]; then
        apt_opts+=(-o "Dir::Etc::SourceList=$APT_ETC/sources.list" -o "Dir::Etc::SourceParts=$APT_ETC/sources.list.d")
    fi
    if [ -n "$APT_STATE" ]; then
        mkdir -p "$APT_STATE/lists/partial" "$APT_STATE/cache/archives/partial"
        apt_opts+=(-o "Dir::State::Lists=$APT_STATE/lists" -o "Dir::Cache=$APT_STATE/cache")
    fi
}

have_deb_src() {
    local f
    for f in "$APT_ETC"/sources.list "$APT_ETC"/sources.list.d/*.list; do
        [ -f "$f" ] && grep -qE '^[[:space:]]*deb-src[[:space:]]' "$f" && return 0
    done
    for f in "$APT_ETC"/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        # an enabled deb822 stanza whose Types include deb-src
        awk 'BEGIN{IGNORECASE=1; t=0; en=1; found=0}
             /^[[:space:]]*$/ { if (t && en) found=1; t=0; en=1; next }
             /^Types:/ { if ($0 ~ /deb-src/) t=1 }
             /^Enabled:[[:space:]]*no/ { en=0 }
             END { if (t && en) found=1; exit(found ? 0 : 1) }' "$f" && return 0
    done
    return 1
}

add_deb_src() {
    # Mirror the first (non-security) deb entry as a deb-src entry.
    local f out stanza
    mkdir -p "$APT_ETC/sources.list.d" || die_setup "cannot create $APT_ETC/sources.list.d"
    for f in "$APT_ETC"/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        stanza=$(awk 'BEGIN{IGNORECASE=1}
            function flush() { if (isdeb && uris != "" && best == "") { if (uris !~ /security/) best=buf; else if (sec=="") sec=buf } buf=""; isdeb=0; uris="" }
            /^[[:space:]]*$/ { flush(); next }
            /^#/ { next }
            /^Types:/ { if ($0 ~ /(^|[[:space:]:])deb([[:space:]]|$)/) isdeb=1; next }
            /^URIs:/ { uris=$0 }
            /^(URIs|Suites|Components|Signed-By|Architectures|Trusted):/ { buf = buf $0 "\n"; next }
            END { flush(); if (best != "") printf "%s", best; else printf "%s", sec }' "$f")
        if [ -n "$stanza" ]; then
            out="$APT_ETC/sources.list.d/mpich-testsuite-src.sources"
            printf 'Types: deb-src\n%s' "$stanza" > "$out" || die_setup "cannot write $out (need root?)"
            log "added deb-src entry $out (from $f)"
            echo "$out"; return 0
        fi
    done
    for f in "$APT_ETC"/sources.list "$APT_ETC"/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        stanza=$(grep -E '^[[:space:]]*deb[[:space:]]' "$f" | grep -v security | head -1)
        [ -n "$stanza" ] || stanza=$(grep -E '^[[:space:]]*deb[[:space:]]' "$f" | head -1)
        if [ -n "$stanza" ]; then
            out="$APT_ETC/sources.list.d/mpich-testsuite-src.list"
            echo "$stanza" | sed -E 's/^[[:space:]]*deb[[:space:]]/deb-src /' > "$out" || die_setup "cannot write $out (need root?)"
            log "added deb-src entry $out (from $f)"
            echo "$out"; return 0
        fi
    done
    die_setup "no deb entry found in $APT_ETC to derive a deb-src entry from"
}

fetch_with_apt() {
    command -v apt-get >/dev/null 2>&1 || die_setup "apt-get not available and no cached MPICH source"
    apt_setup_opts
    if ! have_deb_src; then
        local newsrc
        newsrc=$(add_deb_src) || exit 2
        # refresh only the new entry; leave the other index files alone
        log "apt-get update for $newsrc"
        timeout 600 apt-get "${apt_opts[@]}" -o "Dir::Etc::SourceList=$newsrc" -o "Dir::Etc::SourceParts=-" \
            -o APT::Get::List-Cleanup=0 update >&2 || die_setup "apt-get update failed"
    fi
    log "apt-get source --download-only mpich (into $SRC_CACHE/dl)"
    (cd "$SRC_CACHE/dl" && timeout 900 apt-get "${apt_opts[@]}" source --download-only mpich) >&2 \
        || die_setup "apt-get source mpich failed (deb-src entry missing or index not updated?)"
}

prepare_source() {
    local d tb
    if [ -n "$SRC_OPT" ]; then
        d=$SRC_OPT
        [ -f "$d/test/mpi/configure" ] && d=$d/test/mpi
        [ -f "$d/configure" ] && [ -f "$d/runtests.in" ] || die_setup "--src $SRC_OPT is not an MPICH source tree (no test/mpi/configure)"
        d=$(cd "$d" && pwd)
        local ver
        ver=$(sed -n 's/.*MPICH_VERSION_m4],\[\([^]]*\)\].*/\1/p' "$d/version.m4" 2>/dev/null | head -1)
        [ -n "$ver" ] || ver=local
        if [ ! -f "$SRC_CACHE/mpich-$ver/test/mpi/.runner-complete" ]; then
            log "copying $d to $SRC_CACHE/mpich-$ver/test/mpi"
            rm -rf "$SRC_CACHE/mpich-$ver"; mkdir -p "$SRC_CACHE/mpich-$ver/test"
            cp -a "$d" "$SRC_CACHE/mpich-$ver/test/mpi" || die_setup "copy failed"
            # a configured in-source tree would break VPATH builds
            rm -f "$SRC_CACHE/mpich-$ver/test/mpi/config.status"
            touch "$SRC_CACHE/mpich-$ver/test/mpi/.runner-complete"
        fi
        SRCDIR=$SRC_CACHE/mpich-$ver/test/mpi
        return
    fi
    if [ -n "$TARBALL" ]; then
        [ -f "$TARBALL" ] || die_setup "--tarball $TARBALL not found"
        if ! SRCDIR=$(find_cached_src); then extract_tarball "$TARBALL"; fi
    fi
    if SRCDIR=$(find_cached_src); then return; fi
    tb=$(ls "$SRC_CACHE"/dl/mpich_*.orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -1)
    if [ -z "$tb" ]; then
        fetch_with_apt
        tb=$(ls "$SRC_CACHE"/dl/mpich_*.orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -1)
        [ -n "$tb" ] || die_setup "apt-get source did not produce an mpich_*.orig.tar.* file"
    fi
    extract_tarball "$tb"
    SRCDIR=$(find_cached_src) || die_setup "source extraction failed"
}

patch_source() {
    # 1. dtpools (linked into every test) calls the MPI-1 functions MPI_Type_hvector/
    #    MPI_Type_hindexed that were removed in MPI-3.0 (Open MPI >= 4 refuses them).
    #    Same arguments as the MPI-2 names, so substitute.
    local f=$SRCDIR/dtpools/src/dtpools_custom.c
    if [ -f "$f" ] && grep -qE '\bMPI_Type_h(vector|indexed)\(' "$f"; then
        sed -i -E 's/\bMPI_Type_hvector\(/MPI_Type_create_hvector(/g; s/\bMPI_Type_hindexed\(/MPI_Type_create_hindexed(/g' "$f"
        log "patched dtpools_custom.c (MPI_Type_hvector/hindexed -> MPI_Type_create_*)"
    fi
    # 2. configure builds f08/ (and util's mtest_f08) only inside MPICH's own build
    #    (FROM_MPICH=yes; its FIXME says other MPIs should be probed instead). The compiler's
    #    Fortran 2008 support is still checked, and f08/ fails to build without `use mpi_f08`.
    f=$SRCDIR/configure
    if [ -f "$f" ] && grep -q 'if test "$enable_f08" = "yes" -a "$FROM_MPICH" = "yes" ; then' "$f"; then
        sed -i 's/if test "$enable_f08" = "yes" -a "$FROM_MPICH" = "yes" ; then/if test "$enable_f08" = "yes" ; then/' "$f"
        log "patched configure (f08/ without FROM_MPICH)"
    fi
}

prepare_source
patch_source
log "MPICH test suite source: $SRCDIR"
if [ "$FETCH_ONLY" = 1 ]; then echo "$SRCDIR"; exit 0; fi

# ---------------------------------------------------------------- MPI tools
[ -n "$MPICC" ] || MPICC=mpicc
[ -n "$MPIEXEC" ] || MPIEXEC=mpiexec
abspath_cmd() {  # resolve first word of a command to an absolute path
    local w=$1 p
    p=$(command -v -- "$w" 2>/dev/null) || return 1
    case "$p" in /*) echo "$p" ;; *) return 1 ;; esac
}
read -r -a MPICC_W <<<"$MPICC"
MPICC_ABS=$(abspath_cmd "${MPICC_W[0]}") || die_setup "MPI C compiler '$MPICC' not found"
read -r -a MPIEXEC_W <<<"$MPIEXEC"
MPIEXEC_ABS=$(abspath_cmd "${MPIEXEC_W[0]}") || die_setup "launcher '$MPIEXEC' not found"
MPIEXEC_W[0]=$MPIEXEC_ABS
read -r -a EXTRA_W <<<"$MPIEXEC_ARGS"
for v in MPICXX MPIF77 MPIFC; do
    if [ -n "${!v}" ]; then
        read -r -a _w <<<"${!v}"
        abspath_cmd "${_w[0]}" >/dev/null || die_setup "$v '${!v}' not found"
    fi
done


if [ "$DIRS_DEFAULTED" = 1 ]; then   # language wrappers given: run their directories too
    [ -n "$MPIF77" ] && DIRS="$DIRS,f77"
    [ -n "$MPIFC" ] && DIRS="$DIRS,f90"
    [ -n "$MPICXX" ] && DIRS="$DIRS,cxx"
fi

# ---------------------------------------------------------------- configure
probe_dir=$WORK/.probe.$$
mkdir -p "$probe_dir"
trap 'rm -rf "$probe_dir"' EXIT
cat > "$probe_dir/p.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, in, out, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    in = rank;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (out != size * (size - 1) / 2) errs++;
    if (rank == 0) printf(errs ? " Found %d errors\n" : " No Errors\n", errs);
    MPI_Finalize();
    return 0;
}
EOF
(cd "$probe_dir" && $MPICC -o p p.c) > "$probe_dir/cc.log" 2>&1 || { cat "$probe_dir/cc.log" >&2; die_setup "cannot compile an MPI program with '$MPICC'"; }
printf '#include <mpi.h>\n#ifndef MPICH\n#error not mpich\n#endif\nint main(void){return 0;}\n' > "$probe_dir/m.c"
IS_MPICH=no
(cd "$probe_dir" && $MPICC -c m.c -o m.o) >/dev/null 2>&1 && IS_MPICH=yes
if [ "$STRICTMPI" = auto ]; then
    if [ "$IS_MPICH" = yes ]; then STRICTMPI=no; else STRICTMPI=yes; fi
fi

LAUNCHER_KIND=other
lv=$("$MPIEXEC_ABS" --version 2>&1 | head -5)
case "$lv" in
    *"Open MPI"*|*OpenRTE*|*"open-mpi"*|*PRRTE*) LAUNCHER_KIND=openmpi ;;
    *HYDRA*|*hydra*) LAUNCHER_KIND=hydra ;;
esac
if [ "$AUTO_LAUNCHER" = 1 ] && [ "$LAUNCHER_KIND" = openmpi ]; then
    case " ${MPIEXEC_W[*]} ${EXTRA_W[*]} " in
        *oversubscribe*|*OVERSUBSCRIBE*) ;;
        *) EXTRA_W+=(--oversubscribe); log "Open MPI launcher: adding --oversubscribe" ;;
    esac
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        log "Open MPI launcher as root: exporting OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1"
    fi
fi

fortran_flags() {  # gfortran >= 10 needs -fallow-argument-mismatch for these tests
    local fc=$1
    printf '      program t\n      end\n' > "$probe_dir/t.f"
    if (cd "$probe_dir" && $fc -fallow-argument-mismatch -c t.f -o t.o) >/dev/null 2>&1; then
        echo "-fallow-argument-mismatch"
    fi
}

has_dir() { case ",$DIRS," in *",$1,"*|*",$1/"*) return 0 ;; esac; return 1; }
CONF=(MPICC="$MPICC" MPIEXEC="$MPIEXEC_ABS" --enable-threads=multiple --disable-checkpointing)
if has_dir spawn; then CONF+=(--enable-spawn); else CONF+=(--disable-spawn); fi
if has_dir ft; then CONF+=(--enable-ft-tests); else CONF+=(--disable-ft-tests); fi
if has_dir perf; then CONF+=(--enable-perftest); else CONF+=(--disable-perftest); fi
if [ -n "$MPICXX" ]; then CONF+=(MPICXX="$MPICXX" --enable-cxx); else CONF+=(--disable-cxx); fi
flangs=""
[ -n "$MPIF77" ] && { CONF+=(MPIF77="$MPIF77"); flangs="f77"; }
[ -n "$MPIFC" ] && { CONF+=(MPIFC="$MPIFC"); flangs="${flangs:+$flangs,}f90"; }
# f08/ (`use mpi_f08`) is built only when asked for, so that f77/f90 runs keep their build.
[ -n "$MPIFC" ] && has_dir f08 && flangs="$flangs,f08"
if [ -n "$flangs" ]; then
    CONF+=(--enable-fortran="$flangs")
    ff=$(fortran_flags "${MPIF77:-$MPIFC}")
    [ -n "$ff" ] && CONF+=(FFLAGS="$ff" FCFLAGS="$ff")
else
    CONF+=(--enable-fortran=no)
fi
[ "$STRICTMPI" = yes ] && CONF+=(--enable-strictmpi)
if [ -n "$EXTRA_CONF" ]; then read -r -a _x <<<"$EXTRA_CONF"; CONF+=("${_x[@]}"); fi

if [ -z "$TAG" ]; then
    TAG=$(basename "${MPICC_W[0]}" | tr -c 'A-Za-z0-9._\n-' '_')
    TAG="$TAG-$(printf '%s\n' "$MPICC_ABS" "$(readlink -f "$MPICC_ABS")" "${CONF[@]}" | cksum | cut -d' ' -f1)"
fi
BUILD=$WORK/build-$TAG
mkdir -p "$BUILD"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$BUILD.lock"
    flock -n 9 || die_setup "another run-mpich-suite.sh is using $BUILD"
fi
STAMP=$(printf '%s\n' "$SRCDIR" "${CONF[@]}")
if [ "$RECONF" = 1 ] || [ ! -f "$BUILD/config.status" ] || [ ! -x "$BUILD/runtests" ] || \
   [ "$(cat "$BUILD/.runner-config" 2>/dev/null)" != "$STAMP" ]; then
    log "configuring in $BUILD (strictmpi=$STRICTMPI, MPICH-derived=$IS_MPICH)"
    rm -rf "${BUILD:?}"/* "$BUILD/.runner-config"
    (cd "$BUILD" && timeout 1200 "$SRCDIR/configure" "${CONF[@]}") > "$BUILD/.configure.log" 2>&1 \
        || { tail -25 "$BUILD/.configure.log" >&2; die_setup "configure failed (see $BUILD/.configure.log)"; }
    printf '%s' "$STAMP" > "$BUILD/.runner-config"
else
    log "reusing configured build $BUILD"
fi

# runtests aborts a directory after 5 timeouts; we do our own accounting instead
sed -i -E 's/^our \$g_num_timeout_thresh = [0-9]+;/our $g_num_timeout_thresh = 1000000;/' "$BUILD/runtests"

# ---------------------------------------------------------------- build
log "building support libraries (util, dtpools)"
make -k -j"$JOBS" -C "$BUILD/util" > "$BUILD/.build-util.log" 2>&1 || true
make -j"$JOBS" -C "$BUILD/util" libmtest_single.la libmtest_thread.la >> "$BUILD/.build-util.log" 2>&1 \
    || { tail -25 "$BUILD/.build-util.log" >&2; die_setup "cannot build util/libmtest (see $BUILD/.build-util.log)"; }
make -j"$JOBS" -C "$BUILD/dtpools" > "$BUILD/.build-dtpools.log" 2>&1 \
    || { tail -25 "$BUILD/.build-dtpools.log" >&2; die_setup "cannot build dtpools (see $BUILD/.build-dtpools.log)"; }

IFS=, read -r -a DIRLIST <<<"$DIRS"
for d in "${DIRLIST[@]}"; do
    if [ ! -d "$BUILD/$d" ] || { [ ! -f "$BUILD/$d/testlist" ] && [ ! -f "$SRCDIR/$d/testlist" ]; }; then
        die_setup "directory '$d' is not configured in this build (disabled by configure or unknown)"
    fi
done
t_build0=$(date +%s)
for d in "${DIRLIST[@]}"; do
    log "building $d"
    make -k -j"$JOBS" -C "$BUILD/$d" > "$BUILD/.build-${d//\//_}.log" 2>&1 || \
        log "  (some programs in $d failed to build; they are reported as failed tests)"
done
log "build phase took $(( $(date +%s) - t_build0 ))s"
if [ "$BUILD_ONLY" = 1 ]; then echo "$BUILD"; exit 0; fi

# ---------------------------------------------------------------- exclusions
# restore pristine testlists, then comment out excluded entries
find "$BUILD" -name 'testlist*.runner-orig' | while read -r o; do mv -f "$o" "${o%.runner-orig}"; done
find "$BUILD" -name '.runner-copied-testlist' | while read -r m; do
    while read -r f; do rm -f "$f"; done < "$m"; rm -f "$m"
done
EXCL_ENTRIES=()
if [ -n "$EXCLUDE" ]; then
    if [ -f "$EXCLUDE" ]; then
        while read -r line; do
            line=${line%%#*}; line=$(echo "$line" | tr -d '[:space:]')
            [ -n "$line" ] && EXCL_ENTRIES+=("$line")
        done < "$EXCLUDE"
    else
        IFS=, read -r -a EXCL_ENTRIES <<<"$EXCLUDE"
    fi
fi
for e in "${EXCL_ENTRIES[@]}"; do
    [ -n "$e" ] || continue
    edir=${e%/*}; eprog=${e##*/}
    [ "$edir" != "$e" ] || { log "ignoring exclude entry '$e' (want dir/prog)"; continue; }
    IFS=, read -r -a _lists <<<"$LISTS"
    for lf in "${_lists[@]}"; do
        tgt=$BUILD/$edir/$lf
        if [ ! -f "$tgt" ]; then
            [ -f "$SRCDIR/$edir/$lf" ] || continue
            mkdir -p "$BUILD/$edir"; cp "$SRCDIR/$edir/$lf" "$tgt"
            echo "$tgt" >> "$BUILD/$edir/.runner-copied-testlist"
        fi
        [ -f "$tgt.runner-orig" ] || cp "$tgt" "$tgt.runner-orig"
        awk -v p="$eprog" '{ split($0, a, /[ \t]+/); f = (a[1] == "" ? a[2] : a[1]);
                             if (f == p) print "#excluded-by-runner# " $0; else print }' "$tgt" > "$tgt.tmp" && mv "$tgt.tmp" "$tgt"
    done
done
[ ${#EXCL_ENTRIES[@]} -gt 0 ] && log "excluded ${#EXCL_ENTRIES[@]} test(s)"

# ---------------------------------------------------------------- launcher wrapper
RUNNER=$BUILD/.runner
mkdir -p "$RUNNER"
WRAP=$RUNNER/mpiexec-wrap
{
    echo '#!/bin/bash'
    echo '# generated by run-mpich-suite.sh: time limit + budget/timeout accounting around the launcher'
    printf 'REAL=('; printf '%q ' "${MPIEXEC_W[@]}" "${EXTRA_W[@]}"; echo ')'
    printf 'FILTER=%q\n' "$OUTPUT_FILTER"
    printf 'NP_FLAG=%q\n' "$NP_FLAG"
    printf 'MAX_OUTPUT=%q\n' "$MAX_OUTPUT"
    cat <<'EOF'
state=${SUITE_STATE_DIR:?}
lim=${MPIEXEC_TIMEOUT:-180}; lim=${lim%%.*}; [ -n "$lim" ] || lim=180
cap=${SUITE_MAX_TIMEOUT:-0}
if [ "$cap" -gt 0 ] && [ "$lim" -gt "$cap" ]; then lim=$cap; fi
now=$(date +%s)
if [ -f "$state/deadline" ]; then
    dl=$(cat "$state/deadline")
    if [ "$now" -ge "$dl" ]; then echo "NOT RUN: time budget of the run exhausted"; exit 99; fi
    left=$(( dl - now )); [ "$left" -lt "$lim" ] && lim=$left
fi
n=$(cat "$state/consec_timeouts" 2>/dev/null || echo 0)
if [ "$n" -ge "${SUITE_MAX_CONSEC_TIMEOUTS:-5}" ]; then
    echo "NOT RUN: $n consecutive timeouts in this directory"; exit 99
fi
if [ "${1:-}" = "-n" ] && [ "$NP_FLAG" != "-n" ]; then shift; set -- "$NP_FLAG" "$@"; fi
# launchers that honour MPIEXEC_TIMEOUT (hydra, Open MPI) get a later backstop
export MPIEXEC_TIMEOUT=$(( lim + 30 ))
filter() { if [ -n "$FILTER" ]; then grep -avE -- "$FILTER"; else cat; fi; }
capped=0
if [ "$MAX_OUTPUT" -gt 0 ]; then
    # keep at most MAX_OUTPUT bytes; a test that writes more is stopped at once
    out=$state/out.$$; fifo=$state/fifo.$$
    rm -f "$out" "$fifo"; mkfifo "$fifo"
    timeout -k 10 "$lim" "${REAL[@]}" "$@" > "$fifo" 2>&1 &
    tpid=$!
    filter < "$fifo" | head -c $(( MAX_OUTPUT + 1 )) > "$out"
    if [ "$(wc -c < "$out")" -gt "$MAX_OUTPUT" ]; then
        capped=1
        kill -TERM "$tpid" 2>/dev/null
        cat < "$fifo" > /dev/null &   # drain until the launcher is gone
    fi
    wait "$tpid"
    rc=$?
    head -c "$MAX_OUTPUT" "$out"
    rm -f "$out" "$fifo"
elif [ -n "$FILTER" ]; then
    timeout -k 10 "$lim" "${REAL[@]}" "$@" 2>&1 | grep -avE -- "$FILTER"
    rc=${PIPESTATUS[0]}
else
    timeout -k 10 "$lim" "${REAL[@]}" "$@" 2>&1
    rc=$?
fi
if [ "$capped" = 1 ]; then
    echo
    echo "OUTPUT CAPPED: the test wrote more than $MAX_OUTPUT bytes (--max-output); stopped"
    [ "$rc" -ne 0 ] || rc=1
fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "TIMEOUT: killed after ${lim}s"
    echo $(( n + 1 )) > "$state/consec_timeouts"
else
    echo 0 > "$state/consec_timeouts"
fi
exit "$rc"
EOF
} > "$WRAP"
chmod +x "$WRAP"

# ---------------------------------------------------------------- sanity check
SAN_NP=$MAXNP; [ "$SAN_NP" -gt 0 ] || SAN_NP=4
mkdir -p "$RUNNER/state"; echo 0 > "$RUNNER/state/consec_timeouts"; rm -f "$RUNNER/state/deadline"
cp "$probe_dir/p" "$RUNNER/probe"
san_out=$(cd "$RUNNER" && SUITE_STATE_DIR="$RUNNER/state" MPIEXEC_TIMEOUT=60 "$WRAP" -n "$SAN_NP" ./probe 2>&1 9>&-)
san_rc=$?
if [ $san_rc -ne 0 ] || [ "$(printf '%s\n' "$san_out" | grep -cvE '^[[:space:]]*No Errors[[:space:]]*$')" -ne 0 ]; then
    printf '%s\n' "$san_out" | head -30 >&2
    die_setup "launcher sanity check failed: '${MPIEXEC_W[*]} ${EXTRA_W[*]} -n $SAN_NP ./probe' (rc=$san_rc; output must be exactly ' No Errors')"
fi
log "launcher OK: ${MPIEXEC_W[*]} ${EXTRA_W[*]} (kind=$LAUNCHER_KIND)"

# ---------------------------------------------------------------- run
STAMP_T=$(date +%Y%m%d-%H%M%S)
[ -n "$RESULTS" ] || RESULTS=$WORK/results-$TAG-$STAMP_T
mkdir -p "$RESULTS" || die_setup "cannot create $RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
[ -n "$TAPFILE" ] || TAPFILE=$RESULTS/suite.tap
[ -n "$JUNITFILE" ] || JUNITFILE=$RESULTS/suite.junit.xml
{
    echo "date: $(date -Is)"
    echo "host: $(uname -a)"
    echo "source: $SRCDIR"
    echo "build: $BUILD"
    echo "mpicc: $MPICC ($MPICC_ABS)"
    echo "launcher: ${MPIEXEC_W[*]} ${EXTRA_W[*]} (kind=$LAUNCHER_KIND)"
    echo "mpich-derived: $IS_MPICH  strictmpi: $STRICTMPI"
    echo "configure: ${CONF[*]}"
    echo "dirs: $DIRS  lists: $LISTS  maxnp: $MAXNP  timeout: $TEST_TIMEOUT  max-timeout: $MAX_TIMEOUT  budget: $BUDGET"
    echo "excluded: ${EXCL_ENTRIES[*]:-}"
} > "$RESULTS/run-info.txt"

if [ "$BUDGET" -gt 0 ]; then echo $(( $(date +%s) + BUDGET )) > "$RUNNER/state/deadline"; fi
NPARG=(); [ "$MAXNP" -gt 0 ] && NPARG=(-maxnp="$MAXNP")

cleanup_strays() {  # kill leftover test processes whose executable lives in our build tree
    local p exe
    for p in /proc/[0-9]*; do
        exe=$(readlink "$p/exe" 2>/dev/null) || continue
        case "$exe" in "$BUILD"/*) kill -9 "${p#/proc/}" 2>/dev/null && log "killed stray ${p#/proc/} ($exe)";; esac
    done
}

parse_tap() {  # prints: pass fail skip buildfail timeout notrun npcap
    # a failing test is classified by the first matching line of its output
    awk '
        function done() { if (cur) { if (cls == "bf") bf++; else if (cls == "to") to++; else if (cls == "nr") nr++; else if (cls == "np") np++ } cur=0; cls="" }
        /^ok / { done(); if ($0 ~ /# SKIP/) skip++; else pass++; next }
        /^not ok / { done(); fail++; cur=1; next }
        cur && cls == "" && /^## Failed to build/ { cls="bf" }
        cur && /^## TIMEOUT: killed/ { cls="to" }
        cur && /^## NOT RUN/ { cls="nr" }
        cur && cls == "" && /^## .*((requires?|requiers|needs?|[Mm]ust (run with|use)|Run this program with).*(process|procs)|only [0-9]+ provided|[Pp]rocessors must divide|[Nn]umber of processes must)/ { cls="np" }
        END { done(); printf "%d %d %d %d %d %d %d\n", pass, fail, skip, bf, to, nr, np }' "$1"
}

TOT_P=0; TOT_F=0; TOT_S=0; TOT_BF=0; TOT_TO=0; TOT_NR=0; TOT_NP=0
SUMMARY=$RESULTS/summary.txt
printf '%-10s %6s %6s %6s %6s %6s %6s %6s %6s %7s\n' dir tests passed failed skipped build timeout notrun np-cap wall_s > "$SUMMARY"
t_run0=$(date +%s)
for d in "${DIRLIST[@]}"; do
    dn=${d//\//_}
    echo 0 > "$RUNNER/state/consec_timeouts"
    log "running $d"
    t0=$(date +%s)
    (cd "$BUILD" && env SUITE_STATE_DIR="$RUNNER/state" SUITE_MAX_TIMEOUT="$MAX_TIMEOUT" \
        SUITE_MAX_CONSEC_TIMEOUTS="$MAX_CONSEC_TIMEOUTS" MPITEST_TIMEOUT="$TEST_TIMEOUT" \
        MPITEST_STOPTEST="$RUNNER/state/no-such-stopfile" MPITEST_MEMORY_TOTAL=20 \
        ./runtests -srcdir="$SRCDIR" -tests="$LISTS" -testdirs="$d" -mpiexec="$WRAP" "${NPARG[@]}" \
            -tapfile="$RESULTS/$dn.tap" -junitfile="$RESULTS/$dn.junit.xml" -xmlfile="$RESULTS/$dn.xml") \
        > "$RESULTS/$dn.log" 2>&1 9>&-
    rrc=$?
    t1=$(date +%s)
    cleanup_strays
    if [ -s "$RESULTS/$dn.tap" ] && grep -q '^1\.\.' "$RESULTS/$dn.tap"; then
        read -r p f s bf to nr npc < <(parse_tap "$RESULTS/$dn.tap")
    else
        log "runtests did not complete for $d (rc=$rrc); see $RESULTS/$dn.log"
        if [ -s "$RESULTS/$dn.tap" ]; then read -r p f s bf to nr npc < <(parse_tap "$RESULTS/$dn.tap"); else p=0 f=0 s=0 bf=0 to=0 nr=0 npc=0; fi
        f=$(( f + 1 ))   # count the aborted directory itself as a failure
        printf 'not ok - %s runtests aborted (rc=%s)\n' "$d" "$rrc" >> "$RESULTS/$dn.tap"
    fi
    printf '%-10s %6d %6d %6d %6d %6d %6d %6d %6d %7d\n' "$d" $((p+f)) "$p" "$f" "$s" "$bf" "$to" "$nr" "$npc" $((t1-t0)) >> "$SUMMARY"
    log "  $d: $p passed, $f failed ($bf build, $to timeout, $nr not run, $npc too few ranks?), $s skipped, $((t1-t0))s"
    TOT_P=$((TOT_P+p)); TOT_F=$((TOT_F+f)); TOT_S=$((TOT_S+s))
    TOT_BF=$((TOT_BF+bf)); TOT_TO=$((TOT_TO+to)); TOT_NR=$((TOT_NR+nr)); TOT_NP=$((TOT_NP+npc))
done
t_run1=$(date +%s)
printf '%-10s %6d %6d %6d %6d %6d %6d %6d %6d %7d\n' TOTAL $((TOT_P+TOT_F)) "$TOT_P" "$TOT_F" "$TOT_S" "$TOT_BF" "$TOT_TO" "$TOT_NR" "$TOT_NP" $((t_run1-t_run0)) >> "$SUMMARY"

# combined TAP (numbered) and JUnit
{
    echo "TAP version 13"
    echo "# MPICH test suite via run-mpich-suite.sh; launcher: ${MPIEXEC_W[*]} ${EXTRA_W[*]}"
    for d in "${DIRLIST[@]}"; do
        f=$RESULTS/${d//\//_}.tap; [ -f "$f" ] && printf '%s\t%s\n' "$d" "$f"
    done | awk -F'\t' '
        { print "# directory " $1
          while ((getline line < $2) > 0) {
              if (line ~ /^(ok|not ok) /) {
                  n++
                  if (line ~ /^ok/) sub(/^ok +[0-9]* *- /, "ok " n " - ", line)
                  else sub(/^not ok +[0-9]* *- /, "not ok " n " - ", line)
                  print line
              } else if (line !~ /^(TAP version|1\.\.|# MPICH test suite|# date)/) print line
          }
          close($2) }
        END { print "1.." n + 0 }'
} > "$TAPFILE"
{
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo '<testsuites>'
    for d in "${DIRLIST[@]}"; do
        f=$RESULTS/${d//\//_}.junit.xml; [ -f "$f" ] || continue
        grep -q '<testsuite ' "$f" || continue
        sed -e '/^<testsuites>/d' -e '/^<\/testsuites>/d' -e "s#name=\"summary_junit_xml\"#name=\"$d\"#" "$f"
    done
    echo '</testsuites>'
} > "$JUNITFILE"

echo
echo "MPICH test suite results ($(basename "$BUILD"), maxnp=$MAXNP, timeout=${TEST_TIMEOUT}s)"
cat "$SUMMARY"
echo "results: $RESULTS   TAP: $TAPFILE   JUnit: $JUNITFILE"
echo "$TOT_P passed, $TOT_F failed"
if [ "$STRICT" = 1 ] && [ "$TOT_F" -gt 0 ]; then exit 1; fi
exit 0

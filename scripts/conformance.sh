#!/usr/bin/env bash
# conformance.sh -- run the MPICH test suite (test/mpi of Debian's MPICH source) on oxmpi and
# compare the results with the list of tests that must pass.
#
#   scripts/conformance.sh [--prefix DIR] [--dirs LIST] [--update] [options] [-- SUITE-ARGS]
#
# 1. Installs oxmpi with scripts/install.sh into DIR (default <workdir>/prefix), unless DIR
#    already holds an install (DIR/bin/mpicc and DIR/bin/mpiexec).
# 2. Runs scripts/run-mpich-suite.sh with that mpicc/mpiexec, a work area outside the
#    repository, a per-test time limit and the exclusions of ctests/conformance/exclude.txt.
# 3. Compares the outcome with ctests/conformance/expected-pass.txt: a listed test that does
#    not pass fails the run (exit 1, its output is shown); a test that passes and is not listed
#    is reported, and --update adds it to the list. The list only grows: nothing here removes
#    entries.
#
# Options:
#   --prefix DIR      oxmpi install to test (installed there first unless it exists)
#   --from TARGETDIR  install already-built artifacts (install.sh --from), e.g. target/release
#   --dirs LIST       comma list of test/mpi directories, or subdirectories like f77/attr
#                     (default: $CONFORMANCE_DIRS, else the directories the expected list
#                     covers: DEFAULT_DIRS and, when there are Fortran wrappers,
#                     FORTRAN_DEFAULT_DIRS below)
#   --update          add newly passing tests to the expected list
#   --workdir DIR     suite work area (default: ${TMPDIR:-/tmp}/oxmpi-conformance); the
#                     downloaded source and the configured build are reused between runs
#   --timeout S       per-test limit (default 60); --max-timeout S: cap for tests whose
#                     testlist asks for more (default 120)
#   --maxnp N         cap on ranks per test (default 8; tests listed with more run with N)
#   --budget S        wall-clock budget of the run phase (default 1800; 0 = none); tests not started
#                     in time count as failed
#   --expected FILE   expected-pass list (default ctests/conformance/expected-pass.txt)
#   --exclude FILE    exclusions (default ctests/conformance/exclude.txt)
#   --results DIR     where the suite writes its results (default: under the work area)
#   --compare-only DIR  skip install and run; compare the results in DIR (a results directory
#                     of an earlier run) with the expected list
#   --mpicc CMD --mpiexec CMD  test another MPI (no install; e.g. mpicc.mpich mpiexec.mpich
#                     for the reference column of docs/conformance.md); compare as usual
#   --mpif77 CMD --mpifc CMD  Fortran wrappers for the f77/, f90/ and f08/ directories (default:
#                     PREFIX/bin/mpif77 and PREFIX/bin/mpifort of the oxmpi install; with
#                     --mpicc, the same name with mpif77/mpifort for mpicc, e.g. mpif77.mpich).
#                     Only passed to the suite when --dirs has f77, f90 or f08, so that the
#                     C-only runs keep their configured build.
#   --hosts N         run every test with its ranks round robin over N namespace "hosts" of
#                     scripts/hosts.sh (root; made here and removed on exit), launched by the
#                     install's own mpiexec through scripts/hosts-launcher, so ranks of
#                     different hosts talk over the network transport
#   -- ARGS           passed to run-mpich-suite.sh unchanged
#
# Exit status: 0 all expected tests passed; 1 an expected test failed (or did not run);
# 2 setup failure (install, source download, configure, launcher check); 64 usage error.
#
# Test identifiers: "dir/program np[ args][ env]" as runtests reports them in its JUnit output
# (with the rank count after the --maxnp cap), e.g. "coll/allred 4 -count=100"; a run that is
# listed twice in a testlist with the same identifier (e.g. np 8 and np 10 both capped to 8)
# gets " [2]", " [3]" appended in testlist order.

set -u
set -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# threads/init and threads/coll take seconds, threads/comm about 100 s; threads/pt2pt takes
# about 12 minutes on two cores (run it with --dirs threads). spawn and threads/spawn take
# about 5 minutes together (128-task taskmanager runs, 40-55 s each).
DEFAULT_DIRS="attr,pt2pt,coll,comm,datatype,errhan,errors,group,info,init,topo,rma,io,threads/init,threads/coll,threads/comm,threads/rma,part,threads/part,mpi_t,threads/mpi_t,spawn,threads/spawn"
# The Fortran directories (the subdirectories of f77/ and f90/): part of the default when the
# install has Fortran wrappers.
FORTRAN_DEFAULT_DIRS="f77/attr,f77/coll,f77/comm,f77/datatype,f77/ext,f77/info,f77/init,f77/io,f77/pt2pt,f77/topo,\
f77/profile,f77/rma,f90/attr,f90/coll,f90/comm,f90/datatype,f90/ext,f90/f90types,f90/info,f90/init,f90/io,f90/misc,\
f90/pt2pt,f90/timer,f90/topo,f90/profile,f90/rma,f08,f77/spawn,f90/spawn"
DEFAULT_DIRS="$DEFAULT_DIRS,$FORTRAN_DEFAULT_DIRS"

PREFIX=""
FROM=""
DIRS=${CONFORMANCE_DIRS:-$DEFAULT_DIRS}
DIRS_DEFAULTED=1
[ -n "${CONFORMANCE_DIRS:-}" ] && DIRS_DEFAULTED=0
UPDATE=0
WORK=${TMPDIR:-/tmp}/oxmpi-conformance
TIMEOUT=60
MAX_TIMEOUT=120
MAXNP=8
BUDGET=1800
EXPECTED=$ROOT/ctests/conformance/expected-pass.txt
EXCLUDE=$ROOT/ctests/conformance/exclude.txt
RESULTS=""
COMPARE_ONLY=""
MPICC=""
MPIEXEC=""
MPIF77=""
MPIFC=""
HOSTS=0
SUITE_ARGS=()

usage() { sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die_usage() { echo "conformance: $*" >&2; echo "try --help" >&2; exit 64; }
need_arg() { [ $# -ge 2 ] || die_usage "option $1 needs an argument"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --*=*) opt=${1%%=*}; val=${1#*=}; shift; set -- "$opt" "$val" "$@"; continue ;;
    esac
    case "$1" in
        --prefix) need_arg "$@"; PREFIX=$2; shift 2 ;;
        --from) need_arg "$@"; FROM=$2; shift 2 ;;
        --dirs) need_arg "$@"; DIRS=$2; DIRS_DEFAULTED=0; shift 2 ;;
        --update) UPDATE=1; shift ;;
        --workdir) need_arg "$@"; WORK=$2; shift 2 ;;
        --timeout) need_arg "$@"; TIMEOUT=$2; shift 2 ;;
        --max-timeout) need_arg "$@"; MAX_TIMEOUT=$2; shift 2 ;;
        --maxnp) need_arg "$@"; MAXNP=$2; shift 2 ;;
        --budget) need_arg "$@"; BUDGET=$2; shift 2 ;;
        --expected) need_arg "$@"; EXPECTED=$2; shift 2 ;;
        --exclude) need_arg "$@"; EXCLUDE=$2; shift 2 ;;
        --results) need_arg "$@"; RESULTS=$2; shift 2 ;;
        --compare-only) need_arg "$@"; COMPARE_ONLY=$2; shift 2 ;;
        --mpicc) need_arg "$@"; MPICC=$2; shift 2 ;;
        --mpiexec) need_arg "$@"; MPIEXEC=$2; shift 2 ;;
        --mpif77) need_arg "$@"; MPIF77=$2; shift 2 ;;
        --mpifc|--mpifort) need_arg "$@"; MPIFC=$2; shift 2 ;;
        --hosts) need_arg "$@"; HOSTS=$2; shift 2 ;;
        --) shift; SUITE_ARGS=("$@"); break ;;
        -h|--help) usage; exit 0 ;;
        *) die_usage "unknown option: $1" ;;
    esac
done
DIRS=$(echo "$DIRS" | tr ' ' ',' | sed 's/,,*/,/g; s/^,//; s/,$//')
[ -n "$DIRS" ] || die_usage "empty --dirs"
{ [ -n "$MPICC" ] && [ -z "$MPIEXEC" ]; } || { [ -z "$MPICC" ] && [ -n "$MPIEXEC" ]; } &&
    die_usage "--mpicc and --mpiexec go together"

log() { echo "[conformance] $*" >&2; }
# The Fortran directories of --dirs (f77, f90, f08 or subdirectories of them).
fortran_dirs() { echo ",$DIRS," | tr ',' '\n' | grep -E '^f(77|90|08)(/|$)'; }
# The Fortran wrapper NAME (mpif77, mpifort) that goes with $MPICC: the installed prefix's
# bin/NAME, or the mpicc command with mpicc replaced by NAME (mpicc.mpich -> mpif77.mpich);
# nothing when there is no such executable.
sibling_wrapper() {
    local name=$1 cc=${MPICC%% *} w
    case "${cc##*/}" in mpicc*) ;; *) return 0 ;; esac
    w=${cc%mpicc*}$name${cc##*mpicc}
    if [ -x "$w" ] || command -v -- "$w" >/dev/null 2>&1; then echo "$w"; fi
}
t_start=$(date +%s)
HOSTS_UP=0
exp_list=""
pass_list=""
cleanup() {
    [ -z "$exp_list" ] || rm -f "$exp_list" "$pass_list"
    [ "$HOSTS_UP" = 0 ] || bash "$ROOT/scripts/hosts.sh" down >/dev/null 2>&1
}

# ---------------------------------------------------------------- install + run
if [ -n "$COMPARE_ONLY" ]; then
    [ -d "$COMPARE_ONLY" ] || die_usage "--compare-only $COMPARE_ONLY: no such directory"
    RESULTS=$(cd "$COMPARE_ONLY" && pwd)
else
    mkdir -p "$WORK" || { log "cannot create $WORK"; exit 2; }
    WORK=$(cd "$WORK" && pwd)
    case "$WORK/" in "$ROOT"/*) die_usage "--workdir must be outside the repository" ;; esac
    if [ -z "$MPICC" ]; then
        if [ -n "$PREFIX" ] && [ -z "$FROM" ] && [ -x "$PREFIX/bin/mpicc" ] && [ -x "$PREFIX/bin/mpiexec" ]; then
            log "using the oxmpi install in $PREFIX"
        else
            [ -n "$PREFIX" ] || PREFIX=$WORK/prefix
            log "installing oxmpi into $PREFIX"
            t0=$(date +%s)
            if [ -n "$FROM" ]; then
                bash "$ROOT/scripts/install.sh" --prefix "$PREFIX" --from "$FROM" >&2 ||
                    { log "SETUP FAILURE: install.sh failed"; exit 2; }
            else
                bash "$ROOT/scripts/install.sh" --prefix "$PREFIX" >&2 ||
                    { log "SETUP FAILURE: install.sh failed"; exit 2; }
            fi
            log "install took $(( $(date +%s) - t0 ))s"
        fi
        PREFIX=$(cd "$PREFIX" && pwd)
        MPICC=$PREFIX/bin/mpicc
        MPIEXEC=$PREFIX/bin/mpiexec
    fi
    if [ "$HOSTS" != 0 ]; then
        [ -n "$PREFIX" ] || die_usage "--hosts needs an oxmpi install (not --mpicc/--mpiexec)"
        log "making $HOSTS hosts"
        bash "$ROOT/scripts/hosts.sh" up "$HOSTS" >&2 || { log "SETUP FAILURE: scripts/hosts.sh up failed"; exit 2; }
        HOSTS_UP=1
        trap cleanup EXIT
        # The suite takes one launcher command: a wrapper with the hosts' options.
        MPIEXEC=$WORK/mpiexec-over-hosts
        printf '#!/bin/sh\nexec "%s" -iface oxbr0 -launcher ssh -launcher-exec "%s" -hosts %s "$@"\n' \
            "$PREFIX/bin/mpiexec" "$ROOT/scripts/hosts-launcher" "$(seq -s, -f 'oxh%g' 1 "$HOSTS")" > "$MPIEXEC"
        chmod +x "$MPIEXEC"
    fi
    [ -n "$RESULTS" ] || RESULTS=$WORK/results-$(basename "${MPICC%% *}")-$(date +%Y%m%d-%H%M%S)
    EXCL_ARGS=()
    [ -f "$EXCLUDE" ] && EXCL_ARGS=(--exclude "$EXCLUDE")
    # Fortran wrappers, only for runs with a Fortran directory: they are part of the suite's
    # configuration, and a C-only run keeps reusing its C-only build.
    FORTRAN_ARGS=()
    if [ -n "$(fortran_dirs)" ]; then
        [ -n "$MPIF77" ] || MPIF77=$(sibling_wrapper mpif77)
        [ -n "$MPIFC" ] || MPIFC=$(sibling_wrapper mpifort)
        if [ -n "$MPIF77" ] && [ -n "$MPIFC" ]; then
            FORTRAN_ARGS=(--mpif77 "$MPIF77" --mpifc "$MPIFC")
            log "Fortran: mpif77=$MPIF77 mpifc=$MPIFC"
        elif [ "$DIRS_DEFAULTED" = 1 ]; then
            DIRS=$(echo ",$DIRS," | sed -E 's/,f(77|90|08)(\/[^,]*)?//g; s/^,//; s/,$//')
            log "no Fortran wrappers next to $MPICC: the Fortran directories are left out"
        else
            log "SETUP FAILURE: --dirs $DIRS needs Fortran wrappers (none next to $MPICC; --mpif77/--mpifc)"
            exit 2
        fi
    fi
    log "running the MPICH test suite: dirs=$DIRS maxnp=$MAXNP timeout=${TIMEOUT}s results=$RESULTS"
    bash "$ROOT/scripts/run-mpich-suite.sh" --workdir "$WORK" --mpicc "$MPICC" --mpiexec "$MPIEXEC" \
        --dirs "$DIRS" --maxnp "$MAXNP" --timeout "$TIMEOUT" --max-timeout "$MAX_TIMEOUT" \
        --budget "$BUDGET" --results "$RESULTS" "${EXCL_ARGS[@]}" "${FORTRAN_ARGS[@]}" "${SUITE_ARGS[@]}"
    rc=$?
    if [ $rc -ne 0 ]; then
        log "SETUP FAILURE: run-mpich-suite.sh exited with $rc"
        exit 2
    fi
fi

# ---------------------------------------------------------------- results
# From each directory's JUnit file: one line "STATUS<TAB>ID" per test (STATUS pass, fail,
# skip), and the output of each failing test in failures/<n>.txt.
OUTCOME=$RESULTS/conformance-outcome.tsv
FAILDIR=$RESULTS/failures
rm -rf "$FAILDIR"; mkdir -p "$FAILDIR"
: > "$OUTCOME"
IFS=, read -r -a DIRLIST <<<"$DIRS"
for d in "${DIRLIST[@]}"; do
    j=$RESULTS/${d//\//_}.junit.xml
    if [ ! -f "$j" ]; then
        log "no results for $d ($j missing)"
        continue
    fi
    awk -v faildir="$FAILDIR" -v dir="${d//\//_}" '
        function flush() {
            if (name == "") return
            if (status == "") status = "pass"
            id = name
            if (++seen[id] > 1) id = id " [" seen[id] "]"
            nfail += (status == "fail")
            if (status == "fail") {
                f = sprintf("%s/%s.%d.txt", faildir, dir, nfail)
                printf "%s", out > f; close(f)
                print status "\t" id "\t" f
            } else print status "\t" id "\t"
            name = ""; status = ""; out = ""; want = 0; capture = 0
        }
        /<testcase name="/ {
            flush()
            s = $0; sub(/.*<testcase name="[0-9]* *- */, "", s); sub(/".*/, "", s)
            sub(/^\.\//, "", s); gsub(/[ \t]+/, " ", s); sub(/ $/, "", s)
            name = s
            if ($0 ~ /<\/testcase>/) { flush() }
            next
        }
        name != "" && /<failure/ { status = "fail"; want = 1 }
        name != "" && /<skipped/ { status = "skip"; want = 0 }   # SKIP, or a failing xfail test
        name != "" && want && /<!\[CDATA\[/ { capture = 1 }
        name != "" && capture {
            line = $0; sub(/.*<!\[CDATA\[/, "", line); sub(/\]\]>.*/, "", line)
            if (line !~ /^[ \t]*$/ || $0 !~ /\]\]>/) out = out line "\n"
        }
        name != "" && /\]\]>/ { capture = 0; want = 0 }
        name != "" && /<\/testcase>/ { flush() }
        END { flush() }' "$j" >> "$OUTCOME"
done

npass=$(grep -c '^pass' "$OUTCOME")
nfail=$(grep -c '^fail' "$OUTCOME")
nskip=$(grep -c '^skip' "$OUTCOME")

# ---------------------------------------------------------------- compare
# expected entries of the directories that ran
# (an entry is in the run when a directory of --dirs is its directory or one above it)
inrun() {
    awk -v dirs="$DIRS" 'BEGIN { n = split(dirs, d, ",") }
        { id = $0; sub(/ .*/, "", id); for (i = 1; i <= n; i++) if (index(id, d[i] "/") == 1) { print; next } }'
}
exp_list=$(mktemp); pass_list=$(mktemp); trap cleanup EXIT
if [ -f "$EXPECTED" ]; then
    sed -e 's/#.*//' -e 's/[[:space:]]\+/ /g' -e 's/^ //' -e 's/ $//' "$EXPECTED" | grep -v '^$' | inrun | LC_ALL=C sort -u > "$exp_list"
else
    log "no expected list $EXPECTED (every test counts as new)"
    : > "$exp_list"
fi
awk -F'\t' '$1 == "pass" { print $2 }' "$OUTCOME" | LC_ALL=C sort -u > "$pass_list"

regress=$(LC_ALL=C comm -23 "$exp_list" "$pass_list")
newpass=$(LC_ALL=C comm -13 "$exp_list" "$pass_list")
nexp=$(wc -l < "$exp_list")

echo
if [ -n "$regress" ]; then
    echo "=== FAILED: expected to pass ($(echo "$regress" | wc -l) of $nexp) ==="
    while IFS= read -r id; do
        line=$(awk -F'\t' -v id="$id" '$2 == id' "$OUTCOME" | head -1)
        if [ -z "$line" ]; then
            echo "--- $id: did not run (no result; excluded, renamed, or the directory aborted)"
            continue
        fi
        st=${line%%$'\t'*}; f=${line##*$'\t'}
        echo "--- $id: $st"
        if [ -n "$f" ] && [ -f "$f" ]; then head -60 "$f" | sed 's/^/    /'; fi
    done <<<"$regress"
    echo
fi
if [ -n "$newpass" ]; then
    echo "=== newly passing ($(echo "$newpass" | wc -l)); add to $(basename "$EXPECTED") (--update does) ==="
    echo "$newpass" | sed 's/^/  /'
    echo
    if [ "$UPDATE" = 1 ]; then
        tmp=$(mktemp)
        {
            # the leading comment block stays; the entries are kept sorted
            [ -f "$EXPECTED" ] && awk '/^[[:space:]]*(#|$)/ { print; next } { exit }' "$EXPECTED"
            { [ -f "$EXPECTED" ] && sed -e 's/#.*//' -e 's/[[:space:]]\+/ /g' -e 's/^ //' -e 's/ $//' "$EXPECTED" | grep -v '^$'
              echo "$newpass"; } | LC_ALL=C sort -u
        } > "$tmp"
        mkdir -p "$(dirname "$EXPECTED")"
        mv "$tmp" "$EXPECTED"
        log "added $(echo "$newpass" | wc -l) test(s) to $EXPECTED"
    fi
fi
[ -f "$RESULTS/summary.txt" ] && cat "$RESULTS/summary.txt"
echo "outcome: $OUTCOME"
echo "conformance: $npass passed, $nfail failed, $nskip skipped; expected $nexp," \
     "regressions $( [ -n "$regress" ] && echo "$regress" | wc -l || echo 0)," \
     "new $( [ -n "$newpass" ] && echo "$newpass" | wc -l || echo 0); $(( $(date +%s) - t_start ))s"
[ -z "$regress" ] || exit 1
exit 0

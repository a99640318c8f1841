#!/usr/bin/env bash
# mpi4py-tests.sh -- build mpi4py from source against an oxmpi install and run mpi4py's own
# test suite (test/main.py of the sdist) with oxmpi's mpiexec at several rank counts.
#
#   scripts/mpi4py-tests.sh [--prefix DIR] [--from TARGETDIR] [--workdir DIR] [--np 1,2,4]
#
# 1. Installs oxmpi with scripts/install.sh into DIR (default <workdir>/prefix), unless DIR
#    already holds an install (DIR/bin/mpicc and DIR/bin/mpiexec) and --from is not given.
# 2. Downloads the mpi4py sdist (pinned: MPI4PY_VERSION below) with pip, creates a Python
#    virtual environment and builds mpi4py there with MPI4PY_BUILD_MPICC=DIR/bin/mpicc. The
#    download, the venv and the build are kept in the work area and reused; mpi4py is rebuilt
#    when the install's prefix or mpi.h changes.
# 3. Runs `mpiexec -n NP python test/main.py` for each NP, excluding the tests of
#    ctests/conformance/mpi4py-exclude.txt (mpi4py's --xfile option: substrings of test ids
#    "module.Class.method"), and records every test's outcome per rank.
#
# Options:
#   --prefix DIR      oxmpi install to test (installed there first unless it exists)
#   --from TARGETDIR  install already-built artifacts (install.sh --from), e.g. target/release
#   --workdir DIR     work area (default ${TMPDIR:-/tmp}/oxmpi-mpi4py)
#   --np LIST         comma list of rank counts (default 1,2,4)
#   --timeout S       limit for one np run (default 1200)
#   --exclude FILE    exclusion list (default ctests/conformance/mpi4py-exclude.txt)
#   --results DIR     results directory (default <workdir>/results-<date>)
#   --python CMD      Python to make the venv with (default python3)
#   --thread-level L  thread level mpi4py asks for (MPI4PY_RC_THREAD_LEVEL: single, funneled,
#                     serialized or multiple; default: mpi4py's own, multiple)
#
# Results: DIR/np<N>/rank<R>.tsv (one "status<TAB>test id<TAB>skip reason" line per test and
# rank, plus a "start" line before each test, so a hang shows where), DIR/np<N>/output.log
# (the unittest output of all ranks), DIR/summary.tsv (np, passed, failed, skipped, excluded)
# and DIR/failed.txt (the failing tests per np). A test counts as failed when it failed or
# errored on any rank, as skipped when rank 0 skipped it, else as passed. "excluded" counts
# the test ids mpi4py's loader dropped (collected by a dry run of the loader).
#
# Exit status: 0 no test failed at any np; 1 a test failed, or an np run crashed or timed out;
# 2 setup failure (install, download, venv, build); 64 usage error.

set -u
set -o pipefail

MPI4PY_VERSION=4.1.2
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PREFIX=""
FROM=""
WORK=${TMPDIR:-/tmp}/oxmpi-mpi4py
NPS=1,2,4
TIMEOUT=1200
EXCLUDE=$ROOT/ctests/conformance/mpi4py-exclude.txt
RESULTS=""
PYTHON=python3
THREAD_LEVEL=

usage() { sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die_usage() { echo "mpi4py-tests: $*" >&2; echo "try --help" >&2; exit 64; }
need_arg() { [ $# -ge 2 ] || die_usage "option $1 needs an argument"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --*=*) opt=${1%%=*}; val=${1#*=}; shift; set -- "$opt" "$val" "$@"; continue ;;
    esac
    case "$1" in
        --prefix) need_arg "$@"; PREFIX=$2; shift 2 ;;
        --from) need_arg "$@"; FROM=$2; shift 2 ;;
        --workdir) need_arg "$@"; WORK=$2; shift 2 ;;
        --np) need_arg "$@"; NPS=$2; shift 2 ;;
        --timeout) need_arg "$@"; TIMEOUT=$2; shift 2 ;;
        --exclude) need_arg "$@"; EXCLUDE=$2; shift 2 ;;
        --results) need_arg "$@"; RESULTS=$2; shift 2 ;;
        --python) need_arg "$@"; PYTHON=$2; shift 2 ;;
        --thread-level) need_arg "$@"; THREAD_LEVEL=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die_usage "unknown option: $1" ;;
    esac
done
IFS=, read -r -a NPLIST <<<"$NPS"
[ ${#NPLIST[@]} -gt 0 ] || die_usage "empty --np"
for n in "${NPLIST[@]}"; do [[ $n =~ ^[1-9][0-9]*$ ]] || die_usage "bad rank count in --np: $n"; done
[ -f "$EXCLUDE" ] || die_usage "--exclude $EXCLUDE: no such file"

log() { echo "[mpi4py-tests] $*" >&2; }
setup_fail() { log "SETUP FAILURE: $*"; exit 2; }

mkdir -p "$WORK" || setup_fail "cannot create $WORK"
WORK=$(cd "$WORK" && pwd)
case "$WORK/" in "$ROOT"/*) die_usage "--workdir must be outside the repository" ;; esac

# ---------------------------------------------------------------- oxmpi install
if [ -n "$PREFIX" ] && [ -z "$FROM" ] && [ -x "$PREFIX/bin/mpicc" ] && [ -x "$PREFIX/bin/mpiexec" ]; then
    log "using the oxmpi install in $PREFIX"
else
    [ -n "$PREFIX" ] || PREFIX=$WORK/prefix
    log "installing oxmpi into $PREFIX"
    t0=$(date +%s)
    bash "$ROOT/scripts/install.sh" --prefix "$PREFIX" ${FROM:+--from "$FROM"} >&2 || setup_fail "install.sh failed"
    log "install took $(( $(date +%s) - t0 ))s"
fi
PREFIX=$(cd "$PREFIX" && pwd)
MPIEXEC=$PREFIX/bin/mpiexec

# ---------------------------------------------------------------- mpi4py build
SDIST=$WORK/dl/mpi4py-$MPI4PY_VERSION.tar.gz
SRC=$WORK/mpi4py-$MPI4PY_VERSION
VENV=$WORK/venv
PY=$VENV/bin/python
if [ ! -x "$PY" ]; then
    log "creating the virtual environment $VENV"
    "$PYTHON" -m venv "$VENV" || setup_fail "$PYTHON -m venv failed (Debian: apt-get install python3-venv)"
fi
if [ ! -f "$SDIST" ]; then
    log "downloading the mpi4py $MPI4PY_VERSION sdist"
    mkdir -p "$WORK/dl"
    "$PY" -m pip download --quiet --no-deps --no-binary :all: -d "$WORK/dl" "mpi4py==$MPI4PY_VERSION" >&2 ||
        setup_fail "pip download mpi4py==$MPI4PY_VERSION failed"
fi
if [ ! -f "$SRC/test/main.py" ]; then
    tar -xzf "$SDIST" -C "$WORK" || setup_fail "cannot unpack $SDIST"
fi
# The build links libmpi with an rpath into the prefix and sees the prefix's mpi.h: rebuild
# when either changes.
STAMP="$MPI4PY_VERSION $PREFIX $(md5sum "$PREFIX/include/mpi.h" | cut -d' ' -f1)"
if [ "$(cat "$VENV/.oxmpi-mpi4py-stamp" 2>/dev/null)" != "$STAMP" ]; then
    log "building mpi4py $MPI4PY_VERSION with $PREFIX/bin/mpicc (several minutes; log: $WORK/build.log)"
    t0=$(date +%s)
    # --no-cache-dir: pip's wheel cache would hand back a build made against another prefix.
    MPI4PY_BUILD_MPICC=$PREFIX/bin/mpicc "$PY" -m pip install --no-cache-dir --force-reinstall \
        --no-deps "$SDIST" > "$WORK/build.log" 2>&1 ||
        { tail -40 "$WORK/build.log" >&2; setup_fail "building mpi4py failed (log: $WORK/build.log)"; }
    echo "$STAMP" > "$VENV/.oxmpi-mpi4py-stamp"
    log "mpi4py build took $(( $(date +%s) - t0 ))s"
else
    log "reusing the mpi4py build in $VENV"
fi

# ---------------------------------------------------------------- run
[ -n "$RESULTS" ] || RESULTS=$WORK/results-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RESULTS" || setup_fail "cannot create $RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
# The exclusion file of mpi4py's --xfile: one substring per line, our comments stripped.
XFILE=$RESULTS/xfile.txt
# Lines "module:NAME" exclude a whole test module (mpi4py's -e REGEX option: for modules that
# fail at import).
sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$EXCLUDE" | awk '{print $1}' > "$RESULTS/exclude-patterns.txt"
grep -v '^module:' "$RESULTS/exclude-patterns.txt" > "$XFILE"
EXCL_ARGS=(--xfile "$XFILE")
while read -r m; do
    EXCL_ARGS+=(-e "^$m\\.py\$")
done < <(sed -n 's/^module://p' "$RESULTS/exclude-patterns.txt")

export MPI4PY_TEST_DIR=$SRC/test
# A wrapper of mpi4py's test/main.py that records every outcome per rank
# (unittest.TextTestRunner's result class is replaced by one that also writes a TSV line).
RUNNER=$RESULTS/record.py
cat > "$RUNNER" <<'EOF'
import os, sys, unittest

# mpi4py.futures' workers, spawned by the pool tests, run this file again as their main
# module (run name "__worker__", with their own arguments): they get the test directory from
# the environment (to unpickle the tests' functions), and nothing else runs for them.
if __name__ == "__main__":
    testdir = sys.argv.pop(1)
else:
    testdir = os.environ["MPI4PY_TEST_DIR"]
sys.path.insert(0, testdir)
sys.dont_write_bytecode = True
_out = None


def record(status, test, extra=""):
    global _out
    if _out is None:
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.Get_rank()
        path = os.path.join(os.environ["MPI4PY_RESULTS"], f"rank{rank}.tsv")
        _out = open(path, "w", buffering=1)
    extra = " ".join(str(extra).split())
    _out.write(f"{status}\t{test.id()}\t{extra}\n")


class Recorder(unittest.TextTestResult):
    def startTest(self, t): record("start", t); super().startTest(t)
    def addSuccess(self, t): record("pass", t); super().addSuccess(t)
    def addFailure(self, t, e): record("fail", t); super().addFailure(t, e)
    def addError(self, t, e): record("error", t); super().addError(t, e)
    def addSkip(self, t, r): record("skip", t, r); super().addSkip(t, r)
    def addExpectedFailure(self, t, e): record("xfail", t); super().addExpectedFailure(t, e)
    def addUnexpectedSuccess(self, t): record("xpass", t); super().addUnexpectedSuccess(t)

    def addSubTest(self, t, sub, e):
        if e is not None:
            record("error" if not issubclass(e[0], t.failureException) else "fail", t)
        super().addSubTest(t, sub, e)


unittest.TextTestRunner.resultclass = Recorder
if __name__ != "__main__":
    pass
elif os.environ.get("MPI4PY_LIST_ONLY"):
    # Dry run of the loader: the test ids it selects, one a line (no MPI needed beyond import).
    from main import TestProgram

    class Lister(TestProgram):
        def runTests(self):
            def walk(s):
                for t in s:
                    if isinstance(t, unittest.TestSuite):
                        yield from walk(t)
                    else:
                        yield t.id()
            with open(os.environ["MPI4PY_LIST_ONLY"], "w") as f:
                for i in walk(self.test):
                    f.write(i + "\n")
    Lister(module=None)
else:
    from main import main
    main(module=None)
EOF

# Test ids with and without the exclusions: the difference is the excluded count.
MPI4PY_LIST_ONLY=$RESULTS/all-tests.txt "$MPIEXEC" -n 1 "$PY" "$RUNNER" "$SRC/test" >/dev/null 2>&1
MPI4PY_LIST_ONLY=$RESULTS/selected-tests.txt "$MPIEXEC" -n 1 "$PY" "$RUNNER" "$SRC/test" \
    "${EXCL_ARGS[@]}" >/dev/null 2>&1
nall=$(wc -l < "$RESULTS/all-tests.txt" 2>/dev/null || echo 0)
nsel=$(wc -l < "$RESULTS/selected-tests.txt" 2>/dev/null || echo 0)
nexcl=$(( nall - nsel ))

if [ -n "$THREAD_LEVEL" ]; then
    export MPI4PY_RC_THREAD_LEVEL=$THREAD_LEVEL
fi
log "mpi4py thread level: ${THREAD_LEVEL:-the default of mpi4py (multiple)}"
rc=0
echo -e "np\tpassed\tfailed\tskipped\texcluded\tseconds\tstatus" > "$RESULTS/summary.tsv"
: > "$RESULTS/failed.txt"
for np in "${NPLIST[@]}"; do
    d=$RESULTS/np$np
    mkdir -p "$d"
    log "np $np: running mpi4py's test suite (output: $d/output.log)"
    t0=$(date +%s)
    MPI4PY_RESULTS=$d timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n "$np" "$PY" "$RUNNER" "$SRC/test" \
        -v "${EXCL_ARGS[@]}" > "$d/output.log" 2>&1
    run_rc=$?
    secs=$(( $(date +%s) - t0 ))
    # Per test: failed on any rank > skipped on rank 0 > passed (on every rank that ran it).
    cat "$d"/rank*.tsv 2>/dev/null | awk -F'\t' -v r0="$d/rank0.tsv" '
        BEGIN { while ((getline l < r0) > 0) { split(l, f, "\t"); if (f[1] == "skip") skip0[f[2]] = 1 } }
        $1 == "start" { seen[$2] = 1; next }
        $1 == "fail" || $1 == "error" || $1 == "xpass" { bad[$2] = 1; seen[$2] = 1; next }
        $1 == "pass" || $1 == "skip" || $1 == "xfail" { done[$2] = 1 }
        END {
            for (t in seen) {
                if (t in bad) print "failed\t" t
                else if (t in skip0) print "skipped\t" t
                else if (t in done) print "passed\t" t
                else print "failed\t" t "\t(started, never finished: crash or hang)"
            }
        }' | sort -k2 > "$d/outcome.tsv"
    npass=$(grep -c '^passed' "$d/outcome.tsv")
    nfail=$(grep -c '^failed' "$d/outcome.tsv")
    nskip=$(grep -c '^skipped' "$d/outcome.tsv")
    status=ok
    if [ "$run_rc" -eq 124 ] || [ "$run_rc" -eq 137 ]; then
        status="timed out after ${TIMEOUT}s"
    elif [ "$nfail" -eq 0 ] && [ "$run_rc" -ne 0 ]; then
        status="exit $run_rc with no failing test"
    elif [ $(( npass + nskip + nfail )) -lt "$nsel" ]; then
        status="ran $(( npass + nskip + nfail )) of $nsel tests"
    fi
    if [ "$nfail" -gt 0 ] || [ "$status" != ok ]; then
        rc=1
    fi
    grep '^failed' "$d/outcome.tsv" | sed "s/^failed/np $np/" >> "$RESULTS/failed.txt"
    echo -e "$np\t$npass\t$nfail\t$nskip\t$nexcl\t$secs\t$status" >> "$RESULTS/summary.tsv"
    log "np $np: $npass passed, $nfail failed, $nskip skipped, $nexcl excluded, ${secs}s ($status)"
done

echo
echo "mpi4py $MPI4PY_VERSION on oxmpi ($PREFIX); results in $RESULTS"
column -t -s $'\t' "$RESULTS/summary.tsv" 2>/dev/null || cat "$RESULTS/summary.tsv"
if [ -s "$RESULTS/failed.txt" ]; then
    echo
    echo "failed tests (output: np<N>/output.log):"
    cat "$RESULTS/failed.txt"
fi
exit $rc

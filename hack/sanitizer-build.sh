#!/usr/bin/env bash
# Builds test targets with AddressSanitizer and UndefinedBehaviorSanitizer in a build directory of
# their own, for ctest's sanitizer_* tests (tests/CMakeLists.txt). One job, at the lowest
# priority: it runs beside tests that judge latencies on the same two cores. ccache serves it as
# it serves the plain build (hack/test.sh sets CCACHE_BASEDIR).
#   hack/sanitizer-build.sh DIR TARGET...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$1
shift
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPESCALE_SANITIZE=ON \
  -DPIPESCALE_BUILD_BENCH=OFF >/dev/null
nice -n 19 cmake --build "$dir" -j1 --target "$@"

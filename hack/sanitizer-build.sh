#!/usr/bin/env bash
# Builds test targets with AddressSanitizer and UndefinedBehaviorSanitizer in a build directory of
# their own, for ctest's sanitizer_* tests (tests/CMakeLists.txt). It runs beside tests that judge
# latencies on the same cores, so at the lowest priority, where it takes only the time they leave
# idle; on every core, as a cold build (a new machine) otherwise outlasts ctest by 10 minutes.
# -O1, as ASan's authors advise, with line tables: a quarter to a third less to compile than -O2 -g
# (two of the heaviest files, measured without ASan). ccache serves it as it serves the plain
# build (hack/test.sh sets CCACHE_BASEDIR).
#   hack/sanitizer-build.sh DIR TARGET...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$1
shift
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPESCALE_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DPIPESCALE_BUILD_BENCH=OFF >/dev/null
nice -n 19 cmake --build "$dir" -j"$(nproc)" --target "$@"

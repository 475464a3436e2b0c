#!/usr/bin/env bash
# Builds test targets with AddressSanitizer and UndefinedBehaviorSanitizer in a build directory of
# their own, for ctest's sanitizer_* tests (tests/CMakeLists.txt). It runs beside tests that judge
# latencies on the same cores, so at a low priority, where it takes only the time they leave idle;
# on every core, as a cold build (a new machine) otherwise outlasts ctest by 10 minutes. Nice 15,
# not 19: hack/test.sh's clang-tidy runs at 19 in the same idle time, and at equal priority it
# took half of it, so that the build (which the sanitizer tests wait on) outlasted its 40 minutes
# in a CI run that checked 102 files (weights 36 against 15: the build now takes 70%).
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
nice -n 15 cmake --build "$dir" -j"$(nproc)" --target "$@"

#!/usr/bin/env bash
# Runs every test: installs the Debian packages the build needs, builds all targets (ccache
# keeps its cache outside the tree), then runs ctest. Extra arguments go to ctest, e.g.
# `hack/test.sh -L unit`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/hack/install-deps.sh"
build=${PIPESCALE_BUILD_DIR:-$root/build}
jobs=$(nproc)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$jobs"
ctest --test-dir "$build" -j"$jobs" --output-on-failure "$@"

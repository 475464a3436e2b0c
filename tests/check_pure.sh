#!/usr/bin/env bash
# Fails when the optimizer sources include headers for I/O, clocks, threads or randomness
# without a seed: the optimizer must be a pure function of its inputs.
set -euo pipefail
dir=${1:?usage: check_pure.sh SRC_DIR}
banned='#include <(iostream|fstream|thread|mutex|chrono|ctime|random|future|atomic|condition_variable|filesystem)>|std::(cout|cerr|clog)|getenv|time\(|rand\('
if grep -nE "$banned" "$dir"/*.h "$dir"/*.cc; then
  echo "optimizer is not pure: the lines above use I/O, clocks, threads or hidden randomness" >&2
  exit 1
fi
echo "optimizer is pure: $(ls "$dir"/*.cc | wc -l) sources checked"

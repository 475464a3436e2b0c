#!/usr/bin/env bash
# Fails when the sources of a pure module (the optimizer, the router's core) include headers
# for I/O, clocks, threads or randomness without a seed: such a module must be a pure function
# of its inputs.
set -euo pipefail
dir=${1:?usage: check_pure.sh SRC_DIR}
banned='#include <(iostream|fstream|thread|mutex|chrono|ctime|random|future|atomic|condition_variable|filesystem)>|std::(cout|cerr|clog)|getenv|time\(|rand\('
if grep -nE "$banned" "$dir"/*.h "$dir"/*.cc; then
  echo "$dir is not pure: the lines above use I/O, clocks, threads or hidden randomness" >&2
  exit 1
fi
echo "$dir is pure: $(ls "$dir"/*.cc | wc -l) sources checked"

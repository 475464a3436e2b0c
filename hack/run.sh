#!/usr/bin/env bash
# The main job, for now: plan the FA2 paper's application offline with `pipescale plan` at a
# few load levels and compare the optimizers. The operator loop on a local apiserver replaces
# this once it lands. Arguments go to `pipescale plan` instead of the default run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/hack/install-deps.sh"
build=${PIPESCALE_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target pipescale >/dev/null
cli="$build/src/cli/pipescale"
example="$root/deploy/examples/fa2-cpu.yaml"

if (($#)); then exec "$cli" plan "$@"; fi

"$cli" validate -f "$example"
echo
"$cli" plan -f "$example" --rate 27
echo
echo "total replicas of each optimizer as the load changes (the paper's fluctuating trace):"
printf '%6s' RPS; for o in fa2 exact ds2 inferline grandslam; do printf '%11s' "$o"; done; echo
for rate in 8 27 8 15 27 60; do
  printf '%6s' "$rate"
  for o in fa2 exact ds2 inferline grandslam; do
    n=$("$cli" plan -f "$example" --rate "$rate" --optimizer "$o" -o json |
        sed -n 's/^  "objective": \([0-9.]*\),$/\1/p')
    printf '%11s' "${n%.0}"
  done
  echo
done

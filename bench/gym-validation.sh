#!/usr/bin/env bash
# pipescale simulate against the cluster in a box: each example runs through hack/run.sh on the
# demo's trace (the operator, its router, emulated pods on hack/demo-nodes.yaml, the load
# generator), then bench/gym_validate simulates the same pipeline, trace and nodes and prints how
# the two agree on what the clients saw per path (share within the SLO, share not answered 200,
# p99) and on the Ready replicas over time (src/gym/validate.h: within 10%, or 1 percentage point
# for shares). About 5 minutes per example. OPTIMIZER=hpa runs each example with that optimizer
# in its spec instead of its own (the operator's hpa, on the baseline deployment both share).
#   bench/gym-validation.sh [EXAMPLE...]     # default: fa2-gpu loki-traffic kairos-rm2 mark-classify
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPESCALE_BUILD:-$root/build}
trace=${TRACE:-8:60,27:90,8:90}
work=${PIPESCALE_VALIDATION_DIR:-/tmp/pipescale-gym-validation}
examples=("$@")
[[ ${#examples[@]} -gt 0 ]] || examples=(fa2-gpu loki-traffic kairos-rm2 mark-classify)
mkdir -p "$work"
cmake --build "$build" --target gym_validate >/dev/null
failed=0
for example in "${examples[@]}"; do
  file=$root/deploy/examples/$example.yaml
  if [[ -n ${OPTIMIZER:-} ]]; then
    sed -E "s/^(  optimizer:) [a-z0-9-]+/\1 $OPTIMIZER/" "$file" >"$work/$example-$OPTIMIZER.yaml"
    file=$work/$example-$OPTIMIZER.yaml
    example=$example-$OPTIMIZER
  fi
  dir=$work/$example
  echo "== $example: the cluster in a box on $trace (hack/run.sh; log in $dir.out)" >&2
  EXAMPLE=$file TRACE=$trace PIPESCALE_DEMO_DIR=$dir \
    "$root/hack/run.sh" >"$dir.out" 2>&1 || { tail -20 "$dir.out" >&2; exit 1; }
  echo "== $example: simulated, against the box" >&2
  echo "### $example"
  "$build/bench/gym_validate" -f "$file" --box "$dir" \
    --trace "$trace" --nodes "$root/hack/demo-nodes.yaml" || failed=1
  echo
done
exit $failed

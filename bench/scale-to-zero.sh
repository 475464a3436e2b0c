#!/usr/bin/env bash
# Scale to zero in the simulator (issue 47): fa2-gpu (deploy/examples, its minRate floor
# replaced by spec.scaleToZero) beside itself always warm, on a trace idle for long stretches and
# on the Azure LLM code trace (73% of its seconds without a request, in gaps of seconds to
# minutes), over three seeds. Prints one line per run: trace, afterIdleSeconds, seed, and per
# policy its replica-hours, cost, cold requests and their p99, the worst path's attainment
# outside the cold requests, and requests not answered.
#   bench/scale-to-zero.sh [BUILD_DIR]
# Then the same on a periodic trace with and without waking ahead of the load (see below).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${1:-$root/build}/src/cli/pipescale
work=$(mktemp -d "${TMPDIR:-/tmp}/stz.XXXXXX")
trap 'rm -rf "$work"' EXIT
code=$root/bench/traces/azure-llm-code.csv
# The line of a run whose JSON report is on stdin: NAME VARIANT SEED and the columns above.
line() {
  jq -r --arg n "$1" --arg i "$2" --arg s "$3" '
    [$n, $i, $s] + [.policies[] | .policy,
      (.replicaHours | add | . * 100 | round / 100), (.totalCost * 1000 | round / 1000),
      ([.paths[] | .cold // 0] | add), ([.paths[] | .coldP99Ms // 0] | max | round),
      ([.paths[] | .warmSloAttainment // .sloAttainment] | min * 1000 | round / 10),
      ([.paths[] | .sent - .answered] | add)] | @tsv'
}
for idle in 60 300; do
  sed -e '/^  minRate:/d' -e "s/^  router: {}.*/  router: {}\n  scaleToZero: {afterIdleSeconds: $idle}/" \
    "$root/deploy/examples/fa2-gpu.yaml" >"$work/fa2-$idle.yaml"
  # NAME|TRACE ARGS: 8/s for 2 minutes around a 15-minute gap; the code trace at fa2-gpu's own
  # mean rate (17.5/s over its whole hour; gym-traces.sh's "1x").
  while IFS='|' read -r name args; do
    for seed in 1 7 42; do
      # shellcheck disable=SC2086
      "$cli" simulate --progress none -f "$work/fa2-$idle.yaml" $args --seed "$seed" \
        --policy fa2,always-warm -o json | line "$name" "$idle" "$seed"
    done
  done <<EOT
gap|--trace 8:120,0:900,8:120
azure-code|--trace csv:$code --scale 6.82 --duration 1200s
EOT
done
# Waking ahead (spec.scaleToZero.wakeAhead): load for 5 minutes every 30 minutes, five times (the
# shape of a daily pattern in a simulator's hour), with a 1800 s period and 2 confirmations,
# beside the same without (confirmations 0) and always warm. The first two returns teach the
# forecast; the last three find the pipeline awake.
periodic=8:300,0:1500,8:300,0:1500,8:300,0:1500,8:300,0:1500,8:300,0:1500
for confirmations in 2 0; do
  sed -e '/^  minRate:/d' -e "s/^  router: {}.*/  router: {}\n  scaleToZero: {afterIdleSeconds: 60, wakeAhead: {periodSeconds: 1800, confirmations: $confirmations}}/" \
    "$root/deploy/examples/fa2-gpu.yaml" >"$work/fa2-ahead-$confirmations.yaml"
  for seed in 1 7 42; do
    "$cli" simulate --progress none -f "$work/fa2-ahead-$confirmations.yaml" --trace "$periodic" \
      --seed "$seed" --policy fa2,always-warm -o json | line periodic "ahead-$confirmations" "$seed"
  done
done

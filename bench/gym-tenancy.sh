#!/usr/bin/env bash
# Two pipelines on one node file, through the whole loop with pipescale simulate: a bursty one on
# Azure's code trace and a steady one on its conversation trace (bench/traces, CC BY 4.0), each
# scaled to about 25 requests/s, on ten cores that hold either's peak beside the other's base but
# not both peaks (bench/tenancy). The operator's arbiter dividing the cores ("shared") against
# each pipeline planning within the room it finds ("first-come"), per seed: one markdown row each.
#   bench/gym-tenancy.sh                 # SEEDS="1 7 42" SECONDS_=1200 by default
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${PIPESCALE_CLI:-$root/build/src/cli/pipescale}
echo "| seed | policy | sent | within SLO | share | worst pipeline | pod starts | cost \$ |"
echo "|---|---|---|---|---|---|---|---|"
for seed in ${SEEDS:-1 7 42}; do
  "$cli" simulate --progress none -o json --seed "$seed" --duration "${SECONDS_:-1200}s" \
    --nodes "$root/bench/tenancy/nodes.yaml" \
    -f "$root/bench/tenancy/code.yaml" --trace "csv:$root/bench/traces/azure-llm-code.csv" \
    --scale 10 \
    -f "$root/bench/tenancy/chat.yaml" --trace "csv:$root/bench/traces/azure-llm-conv.csv" \
    --scale 4.5 |
    python3 -c '
import json, sys
d = json.load(sys.stdin)
for t in d["totals"]:
    print("| %s | %s | %d | %d | %.3f | %.3f | %d | %.3f |" % (sys.argv[1], t["policy"], t["sent"],
          t["withinSlo"], t["sloAttainment"], t["worstPathAttainment"], t["podStarts"],
          t["totalCost"]))' "$seed"
done

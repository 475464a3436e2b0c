#!/usr/bin/env bash
# The papers' headlines redone end to end with pipescale simulate: the operator in the loop, the
# router's policies in the request path, pods that take their start-up to serve; each optimizer
# against its paper's baselines and against the HPA, KEDA and KPA ports deployed as an engineer
# deploys them (batching servers, bounded queues, the cheapest class, a floor), at their default
# knobs and tuned (--tune: the cheapest setting keeping every path at 99%), on the same trace and
# seed. Prints each comparison's table (pipescale simulate's), for bench/README.md.
#   bench/gym-reproductions.sh [SECONDS]     # default 1800 s of each trace
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${PIPESCALE_CLI:-$root/build/src/cli/pipescale}
seconds=${1:-1800}
examples=$root/deploy/examples
run() {
  echo "### $1"
  shift
  "$cli" simulate --progress none --tune "${TUNE:-0.99}" "$@" | sed -n '/^policies/,$p'
  echo
}
# FA2 (RTAS'22, Figs. 12-15): the 10-DNN application on its fluctuating 8 <-> 27 requests/s
# trace and on a random one, against InferLine, DS2, GrandSLAm and the user's autoscalers.
run "FA2, fluctuating trace" -f "$examples/fa2-gpu.yaml" --trace "fa2:$seconds" \
  --policy fa2,inferline,ds2,grandslam,hpa,keda,kpa
run "FA2, random trace (normal 17 +- 6 requests/s)" -f "$examples/fa2-gpu.yaml" \
  --trace "normal:17:6:$seconds" --policy fa2,inferline,ds2,grandslam,hpa,keda,kpa
# Loki (HPDC'24): accuracy scaling once the cluster is full, against hardware scaling alone, on
# the demo cluster's room, with demand rising past what the most accurate variants serve.
run "Loki, rising past the cluster's room" -f "$examples/loki-traffic.yaml" \
  --nodes "$root/hack/demo-nodes.yaml" --trace "100:$((seconds / 3)),300:$((seconds / 3)),600:$((seconds / 3))" \
  --policy loki,loki-hardware-only,hpa,keda,kpa
# Kairos (HPDC'23): the heterogeneous pool and its query matching, against each homogeneous pool
# within the same budget (Kairos on one instance type).
run "Kairos, RM2 at 40 queries/s" -f "$examples/kairos-rm2.yaml" --trace "40:$seconds" \
  --policy kairos,kairos@g4dn-xlarge,kairos@c5n-2xlarge,kairos@r5n-large,kairos@t3-xlarge,hpa,keda,kpa
# MArk (ATC'19): predictive, cost-aware provisioning against reactive scaling, on a diurnal
# load with bursts.
run "MArk, diurnal 20-80 requests/s with bursts" -f "$examples/mark-classify.yaml" \
  --trace "diurnal:20:80:600:$seconds:2" --policy mark,mark-reactive,hpa,keda,kpa

#!/usr/bin/env bash
# Every example on public request traces (bench/traces), at its own scale and at 10x, through the
# whole loop with pipescale simulate: the optimizer and its papers' closest baseline against
# HPA, KEDA and KPA deployed as an engineer deploys them and tuned (--tune: the cheapest setting
# keeping every path at 99%) on seed 42; then the optimizer, that baseline and the tuned settings
# again on more seeds. Prints one markdown row per example, trace and scale
# (bench/gym-traces-table.py).
#   bench/gym-traces.sh [OUT_DIR]            # the JSON of every run is kept in OUT_DIR
#   TWITTER=FILE.csv bench/gym-traces.sh     # adds IPA's Twitter slice (traces/twitter-ipa-slice.sh)
#   SEEDS="1 7" JOBS=2 TUNE=0.99 SECONDS_=1200  # the defaults (SECONDS_: of each trace, from
#                                               # its start)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${PIPESCALE_CLI:-$root/build/src/cli/pipescale}
examples=$root/deploy/examples

# The pipeline with room for 10x: every replica ceiling and the budget times ten.
roomy() {
  python3 -c '
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"(maxReplicas: )(\d+)", lambda m: m[1] + str(int(m[2]) * 10), text)
text = re.sub(r"(budget: \{costPerHour: )([\d.]+)", lambda m: m[1] + str(float(m[2]) * 10), text)
print(text, end="")' "$1"
}

mean_rps() { awk -F, '!/^#/ && NF == 2 { n += $2; s = $1 + 1 } END { print n / s }' "$1"; }

# One example on one trace at one scale: NAME FILE BASE_RPS POLICIES TRACE LABEL OUT_DIR
one() {
  local name=$1 file=$2 base=$3 policies=$4 trace=$5 label=$6 out=$7
  local tag pipeline=$examples/$file nodes=() factor
  tag=$name.$(basename "$trace" .csv).$label
  factor=$(awk -v b="$base" -v m="$(mean_rps "$trace")" -v l="$label" \
    'BEGIN { printf "%.4f", b / m * (l ~ /^10x/ ? 10 : 1) }')
  [[ $label == 10x ]] && roomy "$pipeline" >"$out/$tag.yaml" && pipeline=$out/$tag.yaml
  [[ $label == *-nodes ]] && nodes=(--nodes "$root/hack/demo-nodes.yaml")
  local args=(simulate --progress none -f "$pipeline" --trace "csv:$trace" --scale "$factor"
    --duration "${SECONDS_:-1200}s" "${nodes[@]}")
  "$cli" "${args[@]}" --seed 42 --policy "$policies,hpa,keda,kpa" --tune "${TUNE:-0.99}" \
    -o json >"$out/$tag.42.json"
  local picks
  picks=$(jq -r '[.tuned[] | (.best // .closest).policy] | join(",")' "$out/$tag.42.json")
  for seed in ${SEEDS:-1 7}; do
    "$cli" "${args[@]}" --seed "$seed" --policy "$policies,$picks" -o json >"$out/$tag.$seed.json"
  done
  echo "done: $tag (x$factor)" >&2
}

if [[ ${1:-} == --one ]]; then
  shift
  one "$@"
  exit
fi

out=${1:-$(mktemp -d)}
mkdir -p "$out"
# NAME|FILE|the example's own mean rate (its reproduction trace's)|optimizer,papers' baseline|scales
cases="fa2-gpu|fa2-gpu.yaml|17.5|fa2,ds2|1x 10x
fa2-cpu|fa2-cpu.yaml|17.5|fa2,ds2|1x 10x
loki-traffic|loki-traffic.yaml|100|loki,loki-hardware-only|1x-nodes 10x-nodes
kairos-rm2|kairos-rm2.yaml|40|kairos,kairos@r5n-large|1x 10x
mark-classify|mark-classify.yaml|50|mark,mark-reactive|1x 10x"
traces="$root/bench/traces/azure-llm-conv.csv $root/bench/traces/azure-llm-code.csv ${TWITTER:-}"
while IFS='|' read -r name file base policies labels; do
  for trace in $traces; do
    for label in $labels; do
      printf '%s\0' --one "$name" "$file" "$base" "$policies" "$trace" "$label" "$out"
    done
  done
done <<<"$cases" | xargs -0 -n 8 -P "${JOBS:-2}" nice -n 10 "$0"
echo "runs in $out" >&2
python3 "$root/bench/gym-traces-table.py" "$out"

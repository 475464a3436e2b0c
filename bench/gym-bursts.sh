#!/usr/bin/env bash
# FA2's burst allowance (spec.behavior.scaleUp.burstAllowance) on public traces: fa2-gpu at its
# own scale and at 10x (with room: every maxReplicas, the budget and the minRate floor times
# ten), FA2 without the allowance (0, the default) and with 2.5, beside the tuned baseline
# bench/gym-traces.sh picked for that trace and scale, over seeds. Prints one markdown row per
# trace and scale: the worst path's share within its SLO (the lowest over the seeds), the mean
# cost, and goodput per dollar against the tuned baseline (the mean over the seeds).
#   bench/gym-bursts.sh                     # Azure's conversation and code traces
#   TWITTER=FILE.csv bench/gym-bursts.sh    # and IPA's Twitter slice (traces/twitter-ipa-slice.sh)
#   SEEDS="42 1 7" SECONDS_=1200            # the defaults
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${PIPESCALE_CLI:-$root/build/src/cli/pipescale}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
base=17.5  # fa2-gpu's own mean rate (its reproduction trace's), as bench/gym-traces.sh

# The example with room for 10x, and with the allowance set: FILE SCALE ALLOWANCE
pipeline() {
  python3 - "$@" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
if sys.argv[2] == "10x":
    text = re.sub(r"(maxReplicas: )(\d+)", lambda m: m[1] + str(int(m[2]) * 10), text)
    text = re.sub(r"(budget: \{costPerHour: )([\d.]+)", lambda m: m[1] + str(float(m[2]) * 10), text)
    # Ten times the load, ten times its base: the floor every policy keeps Ready.
    text = re.sub(r"(minRate: )(\d+)", lambda m: m[1] + str(int(m[2]) * 10), text)
if sys.argv[3] != "0":
    text = text.replace("  behavior:\n", "  behavior:\n    scaleUp: {burstAllowance: %s}\n" % sys.argv[3])
print(text, end="")
PY
}

# The tuned baseline bench/gym-traces.sh picked on seed 42 (bench/README.md, "On public traces");
# at 10x re-tuned (--tune 0.99, seed 42) with the floor at ten times minRate.
tuned() {
  case "$1.$2" in
    azure-llm-conv.1x) echo keda:target=0.6 ;;
    azure-llm-conv.10x) echo keda:target=0.5:batch=4 ;;
    azure-llm-code.1x) echo keda:target=0.25:batch=4 ;;
    azure-llm-code.10x) echo hpa:target=0.25 ;;
    *.1x) echo kpa:target=0.4:batch=8 ;;
    *) echo kpa:target=0.5 ;;
  esac
}

mean_rps() { awk -F, '!/^#/ && NF == 2 { n += $2; s = $1 + 1 } END { print n / s }' "$1"; }

echo "| trace, scale | fa2, no allowance: worst path, cost | fa2 (allowance 2.5) | tuned baseline | fa2 goodput/\$ vs it: none, 2.5 |"
echo "|---|---|---|---|---:|"
for trace in "$root/bench/traces/azure-llm-conv.csv" "$root/bench/traces/azure-llm-code.csv" ${TWITTER:-}; do
  name=$(basename "$trace" .csv)
  for scale in 1x 10x; do
    factor=$(awk -v b=$base -v m="$(mean_rps "$trace")" -v s=$scale \
      'BEGIN { printf "%.4f", b / m * (s == "10x" ? 10 : 1) }')
    baseline=$(tuned "$name" "$scale")
    for allowance in 0 2.5; do
      pipeline "$root/deploy/examples/fa2-gpu.yaml" $scale $allowance >"$out/$allowance.yaml"
      for seed in ${SEEDS:-42 1 7}; do
        policies=fa2
        [[ $allowance == 0 ]] && policies=fa2,$baseline
        "$cli" simulate --progress none -f "$out/$allowance.yaml" --trace "csv:$trace" \
          --scale "$factor" --duration "${SECONDS_:-1200}s" --seed "$seed" --policy "$policies" \
          -o json >"$out/$name.$scale.$allowance.$seed.json"
      done
    done
    python3 - "$out" "$name.$scale" "$baseline" <<'PY'
import glob, json, statistics, sys
out, tag, baseline = sys.argv[1:]
def runs(allowance):
    return [json.load(open(f)) for f in sorted(glob.glob(f"{out}/{tag}.{allowance}.*.json"))]
def summary(allowance, name):
    found = [next(p for p in r["policies"] if p["policy"] == name) for r in runs(allowance)]
    return (min(min(p["sloAttainment"] for p in f["paths"].values()) for f in found),
            statistics.mean(f["totalCost"] for f in found),
            statistics.mean(f["goodputPerDollar"] for f in found))
off, on, base = summary("0", "fa2"), summary("2.5", "fa2"), summary("0", baseline)
cell = lambda s: f"{s[0]:.1%}, ${s[1]:.3f}"
print(f"| {tag.replace('.', ' ')} | {cell(off)} | {cell(on)} | {baseline}: {cell(base)} | "
      f"{off[2] / base[2]:.2f}x, {on[2] / base[2]:.2f}x |")
PY
  done
done

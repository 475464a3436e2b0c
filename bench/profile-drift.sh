#!/usr/bin/env bash
# A wrong latency profile and what learning it does, on the cluster in a box: the pipeline of
# deploy/examples/profile-drift.yaml (detect serves 30% slower than declared, classify 30% faster)
# at a steady load its declared profiles say fits, run through hack/run.sh three times:
#   off   spec.profiles.learn: Off  - the plan the wrong profiles give
#   plan  spec.profiles.learn: Plan - the operator learns the profiles and re-plans
#   true  the true profiles declared (learn: Off) - the plan a right profile gives
# Each run prints, from what the load generator measured through the router: the share within the
# SLO over the first and the last minute, the 10 s intervals until every later interval is at the
# goal (99% within the SLO: the SLO is a p99), and the replicas and plan it ends on.
#   bench/profile-drift.sh [RPS] [SECONDS]      # default 120 requests/s for 240 s
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rps=${1:-120}
seconds=${2:-240}
goal=99
work=$(mktemp -d /tmp/pipescale-drift.XXXXXX)
example=$root/deploy/examples/profile-drift.yaml

# The example with learn set to $1; with "true" the true profiles declared instead.
variant() {
  case $1 in
    off) sed 's/learn: Plan/learn: "Off"/' "$example" ;;
    plan) cat "$example" ;;
    true) sed -e 's/learn: Plan/learn: "Off"/' -e 's/value: "1.3"/value: "1"/' \
              -e 's/value: "0.7"/value: "1"/' -e 's/{a: 0, b: 8, c: 20}/{a: 0, b: 10.4, c: 26}/' \
              -e 's/{a: 0, b: 6, c: 16}/{a: 0, b: 4.2, c: 11.2}/' "$example" ;;
  esac
}

# 10 s steps, so that the load generator reports each interval on its own.
trace=$(for ((t = 0; t < seconds; t += 10)); do printf '%s:10,' "$rps"; done)
trace=${trace%,}

# The per-step shares within the SLO, one per line, from the load generator's log.
steps() {
  sed -n '/within the SLO (shed) per step/{n;p;}' "$1" | grep -o '[0-9.]*% (' | tr -d '% ('
}

summarize() {
  local name=$1 dir=$2 out=$3
  mapfile -t shares < <(steps "$dir/loadgen.log")
  local n=${#shares[@]} recovered=0 i
  for ((i = n - 1; i >= 0; i--)); do
    if awk -v s="${shares[i]}" -v g="$goal" 'BEGIN {exit !(s < g)}'; then recovered=$((i + 1)); break; fi
  done
  ((recovered == n)) && recovered="never"
  local first last
  first=$(printf '%s\n' "${shares[@]:0:6}" | awk '{s += $1} END {printf "%.1f", s / NR}')
  last=$(printf '%s\n' "${shares[@]: -6}" | awk '{s += $1} END {printf "%.1f", s / NR}')
  local replicas plan
  replicas=$(awk '$1 ~ /^[0-9]+s$/ && $3 ~ /^[0-9]+$/ {r = $3} END {print r}' "$out")
  plan=$(grep '      plan:' "$out" | tail -1 | sed 's/ *plan: //')
  printf '| %s | %s%% | %s%% | %s | %s | %s |\n' "$name" "$first" "$last" "$recovered" \
    "$replicas" "$plan"
}

rows=()
for name in off plan true; do
  variant "$name" >"$work/$name.yaml"
  echo "== $name: $rps requests/s for $seconds s (hack/run.sh; log in $work/$name.out)" >&2
  PIPESCALE_DEMO_DIR=$work/$name EXAMPLE=$work/$name.yaml TRACE=$trace \
    "$root/hack/run.sh" >"$work/$name.out" 2>&1 || { tail -20 "$work/$name.out" >&2; exit 1; }
  rows+=("$(summarize "$name" "$work/$name" "$work/$name.out")")
done
echo
echo "| profiles | in SLO, first minute | in SLO, last minute | intervals to ${goal}% | replicas at the end | plan at the end (task replicas/batch) |"
echo "|---|---:|---:|---:|---:|---|"
printf '%s\n' "${rows[@]}"

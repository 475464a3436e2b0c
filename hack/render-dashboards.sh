#!/usr/bin/env bash
# Pictures of the shipped dashboards, drawn from a live Prometheus (the README's come from a
# `hack/run.sh` demo): the panels' own queries over the last MINUTES, drawn with uPlot in
# headless Chromium (Debian's; installed here if missing).
#   hack/render-dashboards.sh PROMETHEUS_URL NAMESPACE PIPELINE [MINUTES] [OUT_DIR]
# writes OUT_DIR/dashboard-pipeline.png and dashboard-operator.png (default OUT_DIR: docs/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prometheus=${1:?usage: render-dashboards.sh PROMETHEUS_URL NAMESPACE PIPELINE [MINUTES] [OUT_DIR]}
namespace=${2:?namespace}
pipeline=${3:?pipeline}
minutes=${4:-10}
out=${5:-$root/docs}
tools=$("$root/hack/install-tools.sh")
if ! command -v chromium >/dev/null; then
  echo "render-dashboards: installing Debian's chromium (about 30 s)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/pipescale-render.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
end=$(date +%s)
start=$((end - minutes * 60))
for name in pipeline operator; do
  height=$(node "$root/hack/dashboards/render.js" "$tools" \
    "$root/helm/pipescale/files/dashboards/$name.json" "$prometheus" "$namespace" "$pipeline" \
    "$start" "$end" "$work/$name.html")
  # The flags keep Chromium off the network it would otherwise call at start (closed here).
  chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --hide-scrollbars --window-size="1600,$height" \
    --virtual-time-budget=3000 --screenshot="$out/dashboard-$name.png" "file://$work/$name.html" \
    >"$work/chromium.log" 2>&1 || { cat "$work/chromium.log" >&2; exit 1; }
  echo "$out/dashboard-$name.png"
done

#!/usr/bin/env bash
# The chart's and the dashboards' checks that need no cluster (ctest runs each as a test):
#   check.sh alerts       promtool check + promtool test rules of the chart's alerts
#   check.sh dashboards   schema validation (a broken copy must fail), and every panel's
#                         PromQL through promtool check rules
#   check.sh deploy       deploy/ and the chart's CRD copy are what hack/render-deploy.sh makes
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tools=${PIPESCALE_TOOLS:-$("$root/hack/install-tools.sh")}
work=$(mktemp -d "${TMPDIR:-/tmp}/pipescale-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
chart=$root/helm/pipescale
dashboards=("$chart"/files/dashboards/*.json)

case ${1:?usage: check.sh alerts|dashboards|deploy} in
  alerts)
    promtool check rules "$chart/files/alerts.yaml"
    (cd "$root/tests/monitoring" && promtool test rules alerts_test.yaml)
    ;;
  dashboards)
    node "$root/tests/monitoring/validate_dashboards.js" "$tools" "${dashboards[@]}"
    # The validator must be able to fail: a panel without its position is not a dashboard.
    node -e 'const d = require(process.argv[1]); delete d.panels[1].gridPos; d.panels[2].id = "x";
             console.log(JSON.stringify(d))' "${dashboards[0]}" >"$work/broken.json"
    if node "$root/tests/monitoring/validate_dashboards.js" "$tools" "$work/broken.json" >"$work/out"; then
      echo "a dashboard without gridPos passed validation" >&2
      exit 1
    fi
    grep -q "gridPos" "$work/out" && grep -q "/id must be number" "$work/out"
    node "$root/tests/monitoring/dashboard_queries.js" rules ns pipeline "${dashboards[@]}" \
      >"$work/queries.json"
    promtool check rules "$work/queries.json"
    ;;
  deploy)
    cmp "$root/crds/pipescale.io_inferencepipelines.yaml" "$chart/files/crd.yaml" || {
      echo "helm/pipescale/files/crd.yaml differs from crds/: run hack/render-deploy.sh" >&2
      exit 1
    }
    "$root/hack/render-deploy.sh" "$work/deploy" >/dev/null
    for f in "$work"/deploy/*.yaml; do
      diff -u "$root/deploy/$(basename "$f")" "$f" || {
        echo "deploy/$(basename "$f") is not what the chart renders: run hack/render-deploy.sh" >&2
        exit 1
      }
    done
    ;;
esac

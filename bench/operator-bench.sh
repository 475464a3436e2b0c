#!/usr/bin/env bash
# Starts the local cluster of real parts, runs build/bench/operator_bench against it (500
# pipelines' memory, metrics-to-patch time) and tears the cluster down. Arguments go to the
# program, e.g. `bench/operator-bench.sh --only reaction`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPESCALE_BUILD_DIR:-$root/build}
"$root/hack/build-kube-apiserver.sh" >/dev/null
cmake --build "$build" --target operator_bench >/dev/null
dir=$(mktemp -d /tmp/pipescale-bench.XXXXXX)
trap '"$root/hack/local-env.sh" down "$dir" >/dev/null 2>&1 || true' EXIT
PIPESCALE_LOCAL_ENV=$("$root/hack/local-env.sh" up "$dir") "$build/bench/operator_bench" "$@"

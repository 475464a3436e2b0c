#!/usr/bin/env bash
# Starts the local cluster of real parts, runs build/bench/batch_change_bench against it (how
# long a batch-size change takes, batched by the servers or by the router) and tears the
# cluster down. Arguments go to the program, e.g. `bench/batch-change-bench.sh --replicas 5`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPESCALE_BUILD_DIR:-$root/build}
"$root/hack/build-kube-apiserver.sh" >/dev/null
cmake --build "$build" --target batch_change_bench >/dev/null
dir=$(mktemp -d /tmp/pipescale-bench.XXXXXX)
trap '"$root/hack/local-env.sh" down "$dir" >/dev/null 2>&1 || true' EXIT
PIPESCALE_LOCAL_ENV=$("$root/hack/local-env.sh" up "$dir") "$build/bench/batch_change_bench" "$@"

#!/usr/bin/env bash
# Starts the local cluster of real parts, runs one of the benches that need it against it and
# tears the cluster down: `bench/on-local-cluster.sh operator_bench [--only reaction]` (500
# pipelines' memory, metrics-to-patch time) or `bench/on-local-cluster.sh batch_change_bench`
# (a batch change's time to take effect). Arguments after the bench's name go to it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPESCALE_BUILD_DIR:-$root/build}
bench=${1:?usage: bench/on-local-cluster.sh operator_bench|batch_change_bench [args]}
shift
"$root/hack/build-kube-apiserver.sh" >/dev/null
cmake --build "$build" --target "$bench" >/dev/null
dir=$(mktemp -d /tmp/pipescale-bench.XXXXXX)
trap '"$root/hack/local-env.sh" down "$dir" >/dev/null 2>&1 || true' EXIT
PIPESCALE_LOCAL_ENV=$("$root/hack/local-env.sh" up "$dir") "$build/bench/$bench" "$@"

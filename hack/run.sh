#!/usr/bin/env bash
# The main job: the operator driving a pipeline on a local cluster of real parts.
#  - a cluster in a box on 127.0.0.1 (hack/local-env.sh): etcd, kube-apiserver, the
#    controllers, kube-scheduler, Prometheus, and emulated GPU and CPU nodes (hack/nodes.yaml)
#    whose pods the node agent runs as pipescale-model-server processes
#  - pipescale-operator, watching InferencePipelines
#  - the FA2 paper's application (deploy/examples/fa2-gpu.yaml), driven by pipescale-loadgen
#    with the paper's fluctuating trace (8 -> 27 -> 8 requests/s)
# It prints the plan as it changes; `kubectl get ipl -w` works against the same cluster (the
# KUBECONFIG is printed). Everything stops when the trace ends or on Ctrl-C.
#   TRACE=8:60,27:90,8:90 hack/run.sh     # RPS:SECONDS steps
#   EXAMPLE=deploy/examples/mark-classify.yaml hack/run.sh   # another pipeline, its optimizer
#   hack/run.sh plan -f FILE --rate 27     # offline: `pipescale plan` instead
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/hack/install-deps.sh"
build=${PIPESCALE_BUILD_DIR:-$root/build}
# Paths inside the checkout hash relative to it, so clones at other paths share ccache's cache.
export CCACHE_BASEDIR=$root
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if [[ ${1:-} == plan || ${1:-} == validate ]]; then
  cmake --build "$build" -j"$(nproc)" --target pipescale >/dev/null
  exec "$build/src/cli/pipescale" "$@"
fi
"$root/hack/build-kube-apiserver.sh" >/dev/null
cmake --build "$build" -j"$(nproc)" --target pipescale pipescale-operator pipescale-model-server \
  pipescale-node-agent pipescale-pod-sd pipescale-loadgen >/dev/null

dir=${PIPESCALE_DEMO_DIR:-/tmp/pipescale-demo}
example=$(realpath "${EXAMPLE:-$root/deploy/examples/fa2-gpu.yaml}")
trace=${TRACE:-8:60,27:90,8:90}
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$root/hack/local-env.sh" down "$dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

echo "starting the local cluster in $dir ..."
env_file=$(PIPESCALE_EMULATORS="$build/tests/emulator" "$root/hack/local-env.sh" up "$dir") || exit 1
source "$env_file"
"$build/operator/pipescale-operator" --kubeconfig "$KUBECONFIG" --prometheus-url "$PIPESCALE_PROMETHEUS" \
  --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 2>"$dir/operator.log" &
pids+=($!)

kubectl apply -f "$example" >/dev/null
name=$(kubectl get -f "$example" -o jsonpath='{.metadata.name}')
optimizer=$(kubectl get -f "$example" -o jsonpath='{.spec.optimizer}')
echo "applied $(basename "$example"); the operator plans with ${optimizer:-fa2} from the measured path rates"
echo "watch it yourself:  KUBECONFIG=$KUBECONFIG kubectl get ipl -w"
echo

"$build/tests/emulator/pipescale-loadgen" -f "$example" --namespace default \
  --pods-url "$PIPESCALE_PODS_URL" --targets-dir "$PIPESCALE_TARGETS_DIR" --trace "$trace" \
  2>"$dir/loadgen.log" &
loadgen=$!
pids+=($loadgen)

last=""
start=$SECONDS
while kill -0 "$loadgen" 2>/dev/null; do
  sleep 5
  rate=$(curl -s "$PIPESCALE_PROMETHEUS/api/v1/query" \
    --data-urlencode "query=sum(rate(pipescale_requests_total{pipeline=\"$name\"}[30s]))" |
    sed -n 's/.*"value":\[[^,]*,"\([^"]*\)".*/\1/p')
  plan=$(kubectl get deploy -l pipescale.io/pipeline="$name" --no-headers \
    -o custom-columns='T:.metadata.labels.pipescale\.io/task,C:.metadata.labels.pipescale\.io/hardware-class,R:.spec.replicas,B:.spec.template.spec.containers[0].env[0].value' |
    awk '$3 > 0 {printf "%s@%s=%sx b%s  ", $1, $2, $3, $4}')
  total=$(kubectl get ipl "$name" -o jsonpath='{.status.totalReplicas}')
  ready=$(kubectl get ipl "$name" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')
  printf '%4ds  load %6.1f rps  %-11s total %3s replicas\n' $((SECONDS - start)) "${rate:-0}" "$ready" "${total:--}"
  if [[ $plan != "$last" ]]; then
    echo "      plan: $plan"
    last=$plan
  fi
done
echo
kubectl get ipl
echo
echo "events:"
kubectl get events --field-selector reason=PlanChanged -o custom-columns='TIME:.lastTimestamp,MESSAGE:.message' | tail -5

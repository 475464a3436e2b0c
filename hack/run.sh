#!/usr/bin/env bash
# The main job: the operator driving a pipeline on a local cluster of real parts.
#  - a cluster in a box on 127.0.0.1 (hack/local-env.sh): etcd, kube-apiserver, the
#    controllers, kube-scheduler, Prometheus, and emulated GPU and CPU nodes
#    (hack/demo-nodes.yaml: 12 GPU shares) whose pods the node agent runs as
#    pipescale-model-server processes
#  - pipescale-operator, watching InferencePipelines
#  - the FA2 paper's application (deploy/examples/fa2-gpu.yaml) behind its router
#    (pipescale-router, which the operator runs), driven by pipescale-loadgen through the
#    router with the paper's fluctuating trace (8 -> 27 -> 8 requests/s); at 27 the GPU shares
#    run out
# It prints the load, the plan, where its pods run and why a plan is short, as they change;
# `kubectl get ipl,pods -o wide -w` works against the same cluster (the KUBECONFIG is printed).
# Everything stops when the trace ends or on Ctrl-C.
#   TRACE=8:60,27:90,8:90 hack/run.sh     # RPS:SECONDS steps, or another shape of
#                                          # pipescale-loadgen --trace (fa2:240, diurnal:...)
#   EXAMPLE=deploy/examples/loki-traffic.yaml hack/run.sh   # another pipeline, its optimizer
#   OPTIMIZER=hpa hack/run.sh              # the pipeline under another spec.optimizer (a baseline)
#   PIPESCALE_NODES=hack/nodes.yaml hack/run.sh               # other nodes
#   RENDER_DASHBOARDS=docs hack/run.sh     # at the end, pictures of the Grafana dashboards
#   hack/run.sh plan -f FILE --rate 27     # offline: `pipescale plan` instead
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/hack/install-deps.sh"
build=${PIPESCALE_BUILD_DIR:-$root/build}
# Paths inside the checkout hash relative to it, so clones at other paths share ccache's cache.
export CCACHE_BASEDIR=$root
# With -g ccache would hash the build directory too, and a clone elsewhere would miss.
export CCACHE_NOHASHDIR=1
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if [[ ${1:-} == plan || ${1:-} == validate ]]; then
  cmake --build "$build" -j"$(nproc)" --target pipescale >/dev/null
  exec "$build/src/cli/pipescale" "$@"
fi
"$root/hack/build-kube-apiserver.sh" >/dev/null

# Ninja's progress as one line that updates, so the first build (about 10 minutes on 2 cores)
# is not silence.
build_with_progress() {
  echo "building pipescale (the first build takes about 10 minutes on 2 cores) ..."
  cmake --build "$build" -j"$(nproc)" --target "$@" | while IFS= read -r line; do
    if [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
      printf '\r  %s/%s compiled' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
    elif [[ $line == *error* || $line == FAILED* ]]; then
      printf '\n%s\n' "$line"
    fi
  done
  [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "build failed" >&2; exit 1; }
  echo
}
build_with_progress pipescale pipescale-operator pipescale-model-server pipescale-node-agent \
  pipescale-pod-sd pipescale-loadgen pipescale-router

dir=${PIPESCALE_DEMO_DIR:-/tmp/pipescale-demo}
example=$(realpath "${EXAMPLE:-$root/deploy/examples/fa2-gpu.yaml}")
trace=${TRACE:-8:60,27:90,8:90}
pids=()
renamed=""
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$root/hack/local-env.sh" down "$dir" >/dev/null 2>&1 || true
  [[ -z $renamed ]] || rm -f "$renamed"
}
trap cleanup EXIT INT TERM
shown=$(basename "$example")
if [[ -n ${OPTIMIZER:-} ]]; then
  # The same pipeline, nodes and trace under another optimizer the operator runs: the comparison
  # a user makes before trusting one (the operator's validation names a wrong one).
  renamed=$(mktemp --suffix=.yaml)
  sed -E "s/^(  optimizer:) [a-z0-9-]+/\1 $OPTIMIZER/" "$example" >"$renamed"
  example=$renamed
  "$build/src/cli/pipescale" validate -f "$example" >/dev/null || exit 2
fi

echo "starting the local cluster in $dir (nodes: ${PIPESCALE_NODES:-hack/demo-nodes.yaml}) ..."
env_file=$(PIPESCALE_NODES=${PIPESCALE_NODES:-$root/hack/demo-nodes.yaml} \
  PIPESCALE_EMULATORS="$build/tests/emulator" "$root/hack/local-env.sh" up "$dir") || exit 1
source "$env_file"
kubectl get nodes -L nvidia.com/gpu.product 2>/dev/null | sed 's/^/  /'

# The operator's metrics port, registered with Prometheus (its rollouts counter is read below).
metrics_port=$((30000 + RANDOM % 2000))
while grep -qi "$(printf ':%04X ' "$metrics_port")" /proc/net/tcp; do metrics_port=$((metrics_port + 1)); done
echo "[{\"targets\": [\"127.0.0.1:$metrics_port\"]}]" >"$PIPESCALE_OPERATOR_TARGETS_DIR/operator.json"
"$build/operator/pipescale-operator" --kubeconfig "$KUBECONFIG" --prometheus-url "$PIPESCALE_PROMETHEUS" \
  --metrics-bind-address "127.0.0.1:$metrics_port" --health-probe-bind-address 127.0.0.1:0 \
  2>"$dir/operator.log" &
pids+=($!)

kubectl apply -f "$example" >/dev/null 2>&1
name=$(kubectl get -f "$example" -o jsonpath='{.metadata.name}' 2>/dev/null)
optimizer=$(kubectl get -f "$example" -o jsonpath='{.spec.optimizer}' 2>/dev/null)
echo
echo "applied $shown; the operator plans with ${optimizer:-fa2} from the measured path rates"
echo "watch it yourself:  KUBECONFIG=$KUBECONFIG kubectl get ipl,pods -o wide -w"
echo

# The clients start once every Deployment of the pipeline has the replicas it asks for Ready
# (the plan for spec.minRate, made before the first request), and the router says the model is
# ready, as a user waits for a new deployment (`kubectl rollout status`) before sending it traffic.
# Ready replicas count up to what each Deployment asks, so the sum reaches the total only when
# each has its own.
rolled_out() {
  kubectl get deploy -l pipescale.io/pipeline="$name" 2>/dev/null \
    -o jsonpath='{range .items[*]}{.spec.replicas} {.status.readyReplicas}{"\n"}{end}' |
    awk '{r = ($2 == "" ? 0 : $2); want += $1; ready += (r < $1 ? r : $1)}
         END {printf "%d %d", want, ready}'
}
# Pods the scheduler cannot place (a plan above the nodes' room) are not waited for once 30 s have
# passed: before that a pod is Unschedulable only until the nodes' start-up taints are gone (a
# p2.xlarge pod of mark-classify under hpa let the clients in 60 s before it was Ready). Counted
# from the pods themselves: the status's list is as old as the last reconcile, and a pod it still
# named as Pending while starting let the clients in before the plan was Ready.
unschedulable() {
  kubectl get pods -l pipescale.io/pipeline="$name" 2>/dev/null \
    -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="PodScheduled")].reason}{"\n"}{end}' |
    grep -c '^Unschedulable$' || true
}
for ((waited = 0; waited < 180; waited += 2)); do
  read -r want ready <<<"$(rolled_out)"
  printf '\r  waiting for the planned replicas to be Ready: %s of %s' "${ready:-0}" "${want:-0}"
  placeless=0
  ((waited < 30)) || placeless=$(unschedulable)
  [[ ${want:-0} -gt 0 && $((${ready:-0} + placeless)) -ge ${want:-0} ]] && break
  sleep 2
done
echo
"$build/tests/emulator/pipescale-loadgen" -f "$example" --kubeconfig "$KUBECONFIG" --wait-ready 120 \
  --trace "$trace" --report "$dir/loadgen.json" >/dev/null 2>"$dir/loadgen.log" &
loadgen=$!
pids+=($loadgen)

k() { kubectl "$@" 2>/dev/null; }  # kubectl 1.32 warns about the 1.20 server's version
jp() { k get ipl "$name" -o jsonpath="$1"; }

# The plan as "task replicas/batch", folded to the terminal.
plan_text() {
  # From the status's plan: the batch is there whether the servers or the router form it.
  jp '{range .status.plan.tasks[*]}{.task} {.replicas} {.batchSize}{"\n"}{end}' |
    awk '$2 > 0 {printf "%s%s %s/%s", n++ ? ", " : "", $1, $2, $3}' |
    fold -s -w 68 | sed '2,$s/^/            /'
}

# Where the pipeline's pods are: Running per node, and how many wait.
pods_text() {
  k get pods -l pipescale.io/pipeline="$name" --no-headers -o wide |
    awk '{n[$3 == "Running" ? $7 : $3]++} END {for (k in n) printf "%s %d, ", k, n[k]}' |
    sed 's/, $//'
}

echo "plan lines read \"task replicas/batch\"; LIMIT is what the cluster can run of the first class"
printf '%6s  %8s  %8s  %5s  %-18s  %s\n' TIME LOAD/s REPLICAS LIMIT PLAN-APPLIED FEASIBLE
# The clock starts with the trace: the load generator first waits for the router to say the model
# is ready.
while kill -0 "$loadgen" 2>/dev/null && ! grep -q 'requests/s for' "$dir/loadgen.log" 2>/dev/null; do
  sleep 0.2
done
last_plan="" last_pods="" last_feasible="" start=$SECONDS
# Ready replicas per task every 5 s, what `pipescale simulate` is validated against
# (bench/gym-validation.sh).
echo "seconds,task,ready" >"$dir/timeline.csv"
timeline() {
  k get deploy -l pipescale.io/pipeline="$name" \
    -o jsonpath='{range .items[*]}{.metadata.labels.pipescale\.io/task} {.status.readyReplicas}{"\n"}{end}' |
    awk -v t="$1" 'NF {r[$1] += $2} END {for (k in r) printf "%d,%s,%d\n", t, k, r[k]}' \
      >>"$dir/timeline.csv"
}
while kill -0 "$loadgen" 2>/dev/null; do
  sleep 5
  timeline $((SECONDS - start))
  rate=$(curl -s "$PIPESCALE_PROMETHEUS/api/v1/query" \
    --data-urlencode "query=sum(rate(pipescale_requests_total{pipeline=\"$name\"}[30s]))" |
    sed -n 's/.*"value":\[[^,]*,"\([^"]*\)".*/\1/p')
  total=$(jp '{.status.totalReplicas}')
  limit=$(jp '{.status.capacity[0].limit}')
  applied=$(jp '{.status.conditions[?(@.type=="PlanApplied")].reason}')
  feasible=$(jp '{.status.conditions[?(@.type=="Feasible")].reason}')
  printf '%5ds  %8.1f  %8s  %5s  %-18s  %s\n' $((SECONDS - start)) "${rate:-0}" "${total:--}" \
    "${limit:--}" "${applied:--}" "${feasible:--}"
  plan=$(plan_text)
  if [[ $plan != "$last_plan" ]]; then
    echo "      plan: $plan"
    last_plan=$plan
  fi
  where=$(pods_text)
  if [[ $where != "$last_pods" ]]; then
    echo "      pods: $where"
    last_pods=$where
  fi
  why=$(jp '{.status.conditions[?(@.type=="Feasible")].message}')
  if [[ $feasible != "$last_feasible" && -n $why ]]; then
    echo "      why:  $why" | fold -s -w 96 | sed '2,$s/^/            /'
  fi
  last_feasible=$feasible
done
echo
if [[ -n ${RENDER_DASHBOARDS:-} ]]; then
  "$root/hack/render-dashboards.sh" "$PIPESCALE_PROMETHEUS" default "$name" \
    $(((SECONDS - start) / 60 + 1)) "$(realpath "$RENDER_DASHBOARDS")"
fi
k get ipl -o wide
echo
k get pods -o wide -l pipescale.io/pipeline="$name"
echo
echo "the latest events, oldest first:"
k get events --sort-by=.lastTimestamp \
  -o custom-columns='TIME:.lastTimestamp,TYPE:.type,REASON:.reason,MESSAGE:.message' |
  awk 'NR == 1 || $3 == "PlanChanged" || $3 == "Unschedulable"' | cut -c1-160 |
  { read -r header; echo "$header"; tail -8; }
rollouts=$(curl -s "$PIPESCALE_PROMETHEUS/api/v1/query" \
  --data-urlencode "query=sum(pipescale_rollouts_total{pipeline=\"$name\"})" |
  sed -n 's/.*"value":\[[^,]*,"\([^"]*\)".*/\1/p')
echo
echo "rolling restarts the operator caused: ${rollouts:-unknown} in $((SECONDS - start)) s"
echo
echo "what the clients saw through the router (pipescale-loadgen; JSON in $dir/loadgen.json):"
sed -n 's/^loadgen: //p' "$dir/loadgen.log" | sed -n '/^sent /,$p' | sed 's/^/  /'

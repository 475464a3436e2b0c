#!/usr/bin/env bash
# A local cluster of real parts on 127.0.0.1, for tests, the demo and the benches:
#   hack/local-env.sh up DIR     start etcd, kube-apiserver (HTTPS, our own CA, RBAC, signed
#                                service-account tokens), kube-controller-manager (deployment,
#                                replicaset, endpointslice, serviceaccount, garbage collector,
#                                namespace, node lifecycle, pod GC), kube-scheduler, Prometheus
#                                (pods found through pipescale-pod-sd), the node agent with the emulated nodes
#                                of $PIPESCALE_NODES (default hack/nodes.yaml), install the CRD;
#                                write DIR/env (sourceable) and DIR/kubeconfig
#   hack/local-env.sh down DIR   stop them all and remove DIR's state
#   hack/local-env.sh restart-apiserver DIR   stop and restart kube-apiserver (fault tests)
#   hack/local-env.sh outage DIR apiserver|prometheus SECONDS   stop one, start it SECONDS later
# The node agent, the discovery endpoint and the emulated model server are built by CMake:
# $PIPESCALE_EMULATORS names their directory (build/tests/emulator). Pods of the images
# pipescale/model-server and pipescale/operator (the Helm chart's) run those binaries; the
# operator's is $PIPESCALE_OPERATOR (default: build/operator/pipescale-operator beside them). Ports are picked free
# below the kernel's ephemeral range. Needs hack/install-deps.sh and hack/build-kube-apiserver.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:?usage: local-env.sh up|down DIR}
dir=${2:?usage: local-env.sh up|down DIR}
emulators=${PIPESCALE_EMULATORS:-$root/build/tests/emulator}

# A port below the ephemeral range (so no outgoing connection can hold it) that no socket of
# any state uses now, and not handed out before in this run: free_port VAR sets $VAR.
picked=" "
free_port() {
  local low port hex
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
  while :; do
    port=$((10000 + RANDOM % (low - 10000)))
    hex=$(printf ':%04X ' "$port")
    [[ $picked == *" $port "* ]] && continue
    if ! grep -qi "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
      picked+="$port "
      printf -v "$1" '%s' "$port"
      return
    fi
  done
}

failed="a step failed"
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1))
  failed="$2 did not come up"
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then return 1; fi
    sleep 0.1
  done
  failed="a step failed"
}

# Starts Prometheus on the port recorded in $dir/ports, with $dir/prometheus.yml and the data
# it kept, and waits until it is ready.
start_prometheus() {
  local etcd_port kas_port prom_port token
  eval "$(cat "$dir/ports")"
  prometheus --config.file "$dir/prometheus.yml" --storage.tsdb.path "$dir/prometheus-data" \
    --web.listen-address "127.0.0.1:$prom_port" --web.enable-lifecycle --log.level warn \
    >>"$dir/prometheus.log" 2>&1 &
  echo $! >"$dir/prometheus.pid"
  wait_for 30 prometheus curl -sf "http://127.0.0.1:$prom_port/-/ready"
}

# Starts kube-apiserver with the ports recorded in $dir/ports and waits until it is ready.
start_apiserver() {
  local kas=$1 etcd_port kas_port prom_port token
  eval "$(cat "$dir/ports")"
  # configmaps bypass the watch cache so a compacted resourceVersion surfaces as a 410 inside a
  # watch stream, as it does against etcd directly; everything else keeps the cache (and its
  # bookmarks), as in a real cluster.
  "$kas" --etcd-servers "http://127.0.0.1:$etcd_port" --secure-port "$kas_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
    --tls-cert-file "$dir/apiserver.crt" --tls-private-key-file "$dir/apiserver.key" \
    --token-auth-file "$dir/tokens.csv" --authorization-mode Node,RBAC \
    --service-account-issuer https://kubernetes.default.svc \
    --api-audiences https://kubernetes.default.svc --service-account-key-file "$dir/sa.pub" \
    --service-account-signing-key-file "$dir/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
    --watch-cache-sizes configmaps#0 \
    >>"$dir/kube-apiserver.log" 2>&1 &
  echo $! >"$dir/kube-apiserver.pid"
  wait_for 60 kube-apiserver curl -sf --cacert "$dir/ca.crt" -H "Authorization: Bearer $token" \
    "https://127.0.0.1:$kas_port/readyz"
}

kubeconfig() {  # kubeconfig FILE SERVER USER TOKEN
  cat >"$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$2", certificate-authority: "$dir/ca.crt"}
users:
- name: $3
  user: {token: "$4"}
contexts:
- name: local
  context: {cluster: local, user: $3, namespace: default}
current-context: local
KUBECONFIG
}

alive() {  # alive PID: running, and not a zombie waiting for init to reap it
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}

stop_process() {  # stop_process NAME...: TERM to all of them, KILL to any left after 5 s
  local name pids=()
  for name in "$@"; do
    [[ -f $dir/$name.pid ]] || continue
    pids+=("$(cat "$dir/$name.pid")")
    kill -TERM "${pids[-1]}" 2>/dev/null || true
    rm -f "$dir/$name.pid"
  done
  local deadline=$((SECONDS + 5)) pid
  for pid in "${pids[@]}"; do
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

down() {
  [[ -d $dir ]] || return 0
  # The node agent first, so its pods stop while the apiserver can still record it.
  stop_process node-agent
  stop_process pod-sd prometheus kube-scheduler kube-controller-manager kube-apiserver etcd
  rm -rf "$dir/etcd" "$dir/prometheus-data" "$dir/pods"
}

up() {
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local kas
  kas=$("$root/hack/build-kube-apiserver.sh")

  # Our own CA and a serving certificate for 127.0.0.1: the client verifies TLS as it would
  # against a real cluster.
  if [[ ! -f $dir/ca.crt ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=pipescale-local-ca" \
      -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
      -keyout "$dir/apiserver.key" -out "$dir/apiserver.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$dir/san.ext"
    openssl x509 -req -in "$dir/apiserver.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
      -CAcreateserial -days 30 -extfile "$dir/san.ext" -out "$dir/apiserver.crt" 2>/dev/null
  fi
  if [[ ! -f $dir/sa.pub ]]; then  # the key pair that signs service-account tokens
    openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
    openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
  fi
  local token cm_token sched_token
  token=$(openssl rand -hex 16); cm_token=$(openssl rand -hex 16); sched_token=$(openssl rand -hex 16)
  {
    echo "$token,admin,uid-admin,\"system:masters\""
    echo "$cm_token,system:kube-controller-manager,uid-kcm"
    echo "$sched_token,system:kube-scheduler,uid-scheduler"
  } >"$dir/tokens.csv"

  local etcd_port etcd_peer kas_port prom_port
  free_port etcd_port; free_port etcd_peer; free_port kas_port; free_port prom_port

  etcd --name local --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "local=http://127.0.0.1:$etcd_peer" --log-level error >"$dir/etcd.log" 2>&1 &
  echo $! >"$dir/etcd.pid"
  wait_for 20 etcd etcdctl --endpoints "127.0.0.1:$etcd_port" endpoint health

  echo "etcd_port=$etcd_port kas_port=$kas_port prom_port=$prom_port token=$token" >"$dir/ports"
  start_apiserver "$kas"
  local server="https://127.0.0.1:$kas_port"

  kubeconfig "$dir/kubeconfig" "$server" admin "$token"
  kubeconfig "$dir/kube-controller-manager.kubeconfig" "$server" kube-controller-manager "$cm_token"
  kubeconfig "$dir/kube-scheduler.kubeconfig" "$server" kube-scheduler "$sched_token"

  # The controllers that turn Deployments into Pods and clean up after them. Each runs with
  # its own service account's rights (RBAC), as in a real cluster. The node lifecycle controller
  # marks a node whose Lease the node agent stopped renewing (a lost node) unreachable after 20 s
  # (a real cluster's default is 40 s), its pods not Ready, and evicts them by its taint; podgc
  # removes the pods of a node deleted for good. 20 s is twice the longest apiserver outage of
  # the tests: after one of 10 s a 10 s grace saw every Lease stale and marked every node lost.
  local bin
  bin=$(dirname "$kas")
  "$bin/kube-controller-manager" --kubeconfig "$dir/kube-controller-manager.kubeconfig" \
    --controllers deployment,replicaset,endpoint,endpointslice,serviceaccount,serviceaccount-token,garbagecollector,namespace,nodelifecycle,podgc \
    --node-monitor-period 1s --node-monitor-grace-period 20s \
    --service-account-private-key-file "$dir/sa.key" --root-ca-file "$dir/ca.crt" \
    --use-service-account-credentials --leader-elect=false --port 0 --secure-port 0 \
    >"$dir/kube-controller-manager.log" 2>&1 &
  echo $! >"$dir/kube-controller-manager.pid"
  local sched_port
  free_port sched_port
  "$bin/kube-scheduler" --kubeconfig "$dir/kube-scheduler.kubeconfig" --leader-elect=false \
    --port "$sched_port" --address 127.0.0.1 --secure-port 0 >"$dir/kube-scheduler.log" 2>&1 &
  echo $! >"$dir/kube-scheduler.pid"

  # Pods for Prometheus, with the labels of its kubernetes_sd pod role.
  rm -f "$dir/pod-sd.port"
  "$emulators/pipescale-pod-sd" --kubeconfig "$dir/kubeconfig" --port-file "$dir/pod-sd.port" \
    >"$dir/pod-sd.log" 2>&1 &
  echo $! >"$dir/pod-sd.pid"
  wait_for 20 "the pod discovery endpoint" test -s "$dir/pod-sd.port"
  local sd_url
  sd_url="http://127.0.0.1:$(cat "$dir/pod-sd.port")/"

  mkdir -p "$dir/targets"
  cat >"$dir/prometheus.yml" <<PROM
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  # Model pods, relabelled as a real cluster's Prometheus would (kubernetes_sd_configs, role
  # pod): only pipelines' running pods, on their declared http port, with the pod's pipescale.io
  # labels as target labels.
  - job_name: pipescale-models
    http_sd_configs: [{url: '$sd_url', refresh_interval: 1s}]
    relabel_configs:
      - {source_labels: [__meta_kubernetes_pod_label_pipescale_io_pipeline], regex: .+, action: keep}
      - {source_labels: [__meta_kubernetes_pod_phase], regex: Pending|Succeeded|Failed, action: drop}
      - {source_labels: [__meta_kubernetes_pod_container_port_name], regex: http|metrics, action: keep}
      - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}
      - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
      - {source_labels: [__meta_kubernetes_pod_node_name], target_label: node}
      - {source_labels: [__meta_kubernetes_pod_controller_name], regex: '(.+)-[a-z0-9]+', target_label: deployment}
      - {regex: __meta_kubernetes_pod_label_pipescale_io_(.+), action: labelmap}
  # Routers (spec.router), on their metrics port: their series carry their own namespace and
  # pipeline labels, as the operator's default queries read them.
  - job_name: pipescale-routers
    honor_labels: true
    http_sd_configs: [{url: '$sd_url', refresh_interval: 1s}]
    relabel_configs:
      - {source_labels: [__meta_kubernetes_pod_label_pipescale_io_router], regex: .+, action: keep}
      - {source_labels: [__meta_kubernetes_pod_phase], regex: Pending|Succeeded|Failed, action: drop}
      - {source_labels: [__meta_kubernetes_pod_container_port_name], regex: metrics, action: keep}
      - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
  # Operator pods (the Helm chart's), on their metrics port, as a PodMonitor would scrape them.
  - job_name: pipescale-operator-pods
    http_sd_configs: [{url: '$sd_url', refresh_interval: 1s}]
    relabel_configs:
      - {source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_component], regex: operator, action: keep}
      - {source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name], regex: pipescale, action: keep}
      - {source_labels: [__meta_kubernetes_pod_phase], regex: Pending|Succeeded|Failed, action: drop}
      - {source_labels: [__meta_kubernetes_pod_container_port_name], regex: metrics, action: keep}
      - {source_labels: [__meta_kubernetes_namespace], target_label: kubernetes_namespace}
      - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
  - job_name: pipescale-other
    file_sd_configs: [{files: ['$dir/targets/*.json'], refresh_interval: 1s}]
  - job_name: pipescale-operator
    file_sd_configs: [{files: ['$dir/operator-targets/*.json'], refresh_interval: 1s}]
PROM
  mkdir -p "$dir/operator-targets"
  start_prometheus

  # The CRD; wait until the API serves it.
  kubectl --kubeconfig "$dir/kubeconfig" apply -f "$root/crds/" >"$dir/kubectl.log" 2>&1
  # What the operator binds each pipeline's router to (the chart installs it too).
  kubectl --kubeconfig "$dir/kubeconfig" apply -f "$root/deploy/router-rbac.yaml" >>"$dir/kubectl.log" 2>&1
  wait_for 20 "the InferencePipeline CRD" kubectl --kubeconfig "$dir/kubeconfig" get inferencepipelines

  # The node agent registers the emulated nodes and runs the pods bound to them.
  "$emulators/pipescale-node-agent" --kubeconfig "$dir/kubeconfig" \
    --nodes "${PIPESCALE_NODES:-$root/hack/nodes.yaml}" --work-dir "$dir/pods" \
    --image "pipescale/model-server=$emulators/pipescale-model-server" \
    --image "pipescale/operator=${PIPESCALE_OPERATOR:-$emulators/../../operator/pipescale-operator}" \
    --image "pipescale/router=$emulators/../../router/pipescale-router" \
    >"$dir/node-agent.log" 2>&1 &
  echo $! >"$dir/node-agent.pid"
  wait_for 30 "the emulated nodes" node_ready

  cat >"$dir/env" <<ENV
export PIPESCALE_DIR=$dir
export KUBECONFIG=$dir/kubeconfig
export PIPESCALE_APISERVER=$server
export PIPESCALE_TOKEN=$token
export PIPESCALE_CA=$dir/ca.crt
export PIPESCALE_ETCD=127.0.0.1:$etcd_port
export PIPESCALE_PROMETHEUS=http://127.0.0.1:$prom_port
export PIPESCALE_TARGETS_DIR=$dir/targets
export PIPESCALE_PODS_URL=$sd_url
export PIPESCALE_EMULATORS=$emulators
export PIPESCALE_OPERATOR_TARGETS_DIR=$dir/operator-targets
ENV
  echo "$dir/env"
}

node_ready() {
  [[ $(kubectl --kubeconfig "$dir/kubeconfig" get nodes --no-headers 2>/dev/null | grep -c ' Ready ') -gt 0 ]]
}

case $cmd in
  # A failed start says so once, and leaves nothing running. (Not `if ! up`: errexit does not
  # apply inside a function called as a condition.)
  up)
    down
    set -o errtrace
    trap 'echo "local-env: the local cluster did not start: $failed; logs in $dir" >&2; trap - ERR; down; exit 1' ERR
    up
    ;;
  down) down ;;
  # Fault injection for tests: the apiserver goes away and comes back on the same port.
  restart-apiserver)
    stop_process kube-apiserver
    start_apiserver "$("$root/hack/build-kube-apiserver.sh")"
    ;;
  # ... or it, or Prometheus, is away for SECONDS first (an outage, not a restart).
  outage)
    part=${3:?usage: local-env.sh outage DIR apiserver|prometheus SECONDS}
    seconds=${4:?usage: local-env.sh outage DIR apiserver|prometheus SECONDS}
    case $part in
      apiserver) stop_process kube-apiserver; sleep "$seconds"
        start_apiserver "$("$root/hack/build-kube-apiserver.sh")" ;;
      prometheus) stop_process prometheus; sleep "$seconds"; start_prometheus ;;
      *) echo "local-env: outage of apiserver or prometheus, not $part" >&2; exit 2 ;;
    esac
    ;;
  *) echo "usage: local-env.sh up|down|restart-apiserver|outage DIR" >&2; exit 2 ;;
esac

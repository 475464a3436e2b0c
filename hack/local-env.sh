#!/usr/bin/env bash
# A local cluster of real parts on 127.0.0.1, for tests and the demo:
#   hack/local-env.sh up DIR     start etcd, kube-apiserver (HTTPS, our own CA, a token), the
#                                garbage collector of kube-controller-manager,
#                                Prometheus (file service discovery), install the CRD;
#                                write DIR/env (sourceable) and DIR/kubeconfig
#   hack/local-env.sh down DIR   stop them all and remove DIR's state
#   hack/local-env.sh restart-apiserver DIR   stop and restart kube-apiserver (fault tests)
# Ports are picked free at start. Needs hack/install-deps.sh and hack/build-kube-apiserver.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:?usage: local-env.sh up|down DIR}
dir=${2:?usage: local-env.sh up|down DIR}

free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then echo "local-env: $what did not come up; logs in $dir" >&2; return 1; fi
    sleep 0.1
  done
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
    --token-auth-file "$dir/tokens.csv" --authorization-mode AlwaysAllow \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$dir/sa.key" \
    --service-account-signing-key-file "$dir/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
    --disable-admission-plugins ServiceAccount --watch-cache-sizes configmaps#0 \
    >>"$dir/kube-apiserver.log" 2>&1 &
  echo $! >"$dir/kube-apiserver.pid"
  wait_for 60 kube-apiserver curl -sf --cacert "$dir/ca.crt" -H "Authorization: Bearer $token" \
    "https://127.0.0.1:$kas_port/readyz"
}

stop_process() {  # stop_process NAME: TERM, then KILL after 5 s
  [[ -f $dir/$1.pid ]] || return 0
  local pid
  pid=$(cat "$dir/$1.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/$1.pid"
}

down() {
  [[ -d $dir ]] || return 0
  for name in prometheus kube-controller-manager kube-apiserver etcd; do stop_process "$name"; done
  rm -rf "$dir/etcd" "$dir/prometheus-data"
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
    openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
  fi
  local token
  token=$(openssl rand -hex 16)
  echo "$token,admin,uid-admin,\"system:masters\"" >"$dir/tokens.csv"

  local etcd_port etcd_peer kas_port prom_port
  etcd_port=$(free_port); etcd_peer=$(free_port); kas_port=$(free_port); prom_port=$(free_port)

  etcd --name local --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "local=http://127.0.0.1:$etcd_peer" --log-level error >"$dir/etcd.log" 2>&1 &
  echo $! >"$dir/etcd.pid"
  wait_for 20 etcd etcdctl --endpoints "127.0.0.1:$etcd_port" endpoint health

  echo "etcd_port=$etcd_port kas_port=$kas_port prom_port=$prom_port token=$token" >"$dir/ports"
  start_apiserver "$kas"
  local server="https://127.0.0.1:$kas_port"

  cat >"$dir/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$server", certificate-authority: "$dir/ca.crt"}
users:
- name: admin
  user: {token: "$token"}
contexts:
- name: local
  context: {cluster: local, user: admin, namespace: default}
current-context: local
KUBECONFIG

  # Only the garbage collector: owned Deployments go when their pipeline is deleted. There is no
  # kubelet; the kubelet stand-in runs model-server processes for Deployments instead.
  "$(dirname "$kas")/kube-controller-manager" --kubeconfig "$dir/kubeconfig" \
    --controllers garbagecollector --leader-elect=false --port 0 --secure-port 0 \
    >"$dir/kube-controller-manager.log" 2>&1 &
  echo $! >"$dir/kube-controller-manager.pid"

  mkdir -p "$dir/targets"
  cat >"$dir/prometheus.yml" <<PROM
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: pipescale-models
    file_sd_configs: [{files: ['$dir/targets/*.json'], refresh_interval: 1s}]
  - job_name: pipescale-operator
    file_sd_configs: [{files: ['$dir/operator-targets/*.json'], refresh_interval: 1s}]
PROM
  mkdir -p "$dir/operator-targets"
  prometheus --config.file "$dir/prometheus.yml" --storage.tsdb.path "$dir/prometheus-data" \
    --web.listen-address "127.0.0.1:$prom_port" --web.enable-lifecycle --log.level warn \
    >"$dir/prometheus.log" 2>&1 &
  echo $! >"$dir/prometheus.pid"
  wait_for 30 prometheus curl -sf "http://127.0.0.1:$prom_port/-/ready"

  # The CRD; wait until the API serves it.
  kubectl --kubeconfig "$dir/kubeconfig" apply -f "$root/crds/" >"$dir/kubectl.log" 2>&1
  wait_for 20 "the InferencePipeline CRD" kubectl --kubeconfig "$dir/kubeconfig" get inferencepipelines

  cat >"$dir/env" <<ENV
export PIPESCALE_DIR=$dir
export KUBECONFIG=$dir/kubeconfig
export PIPESCALE_APISERVER=$server
export PIPESCALE_TOKEN=$token
export PIPESCALE_CA=$dir/ca.crt
export PIPESCALE_ETCD=127.0.0.1:$etcd_port
export PIPESCALE_PROMETHEUS=http://127.0.0.1:$prom_port
export PIPESCALE_TARGETS_DIR=$dir/targets
export PIPESCALE_OPERATOR_TARGETS_DIR=$dir/operator-targets
ENV
  echo "$dir/env"
}

case $cmd in
  up) down; up ;;
  down) down ;;
  # Fault injection for tests: the apiserver goes away and comes back on the same port.
  restart-apiserver)
    stop_process kube-apiserver
    start_apiserver "$("$root/hack/build-kube-apiserver.sh")"
    ;;
  *) echo "usage: local-env.sh up|down|restart-apiserver DIR" >&2; exit 2 ;;
esac

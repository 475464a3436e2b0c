#!/usr/bin/env bash
# How long a scaled-out pod takes to turn Ready on the cluster in a box past its start-up: scales
# a Deployment of the emulated model server (PIPESCALE_STARTUP_SECONDS=3, the readiness probe the
# operator writes: 1 s period) through a few scale-outs and prints, per pod, the seconds from the
# scale to Ready less the 3 s start-up, as a watch sees it. `pipescale simulate` models this part
# of a pod's start (gym::Options::pod_start_overhead_s and pod_start_spread_s). About 2 minutes.
#   bench/pod-start.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${PIPESCALE_POD_START_DIR:-/tmp/pipescale-pod-start}
startup=3
"$root/hack/local-env.sh" up "$dir" >"$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; exit 1; }
trap '"$root/hack/local-env.sh" down "$dir" >/dev/null 2>&1 || true' EXIT
export KUBECONFIG=$dir/kubeconfig
kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: pod-start, namespace: default}
spec:
  replicas: 0
  selector: {matchLabels: {app: pod-start}}
  template:
    metadata: {labels: {app: pod-start}}
    spec:
      containers:
        - name: model
          image: pipescale/model-server:dev
          ports: [{name: http, containerPort: 8080}]
          env: [{name: PIPESCALE_STARTUP_SECONDS, value: "$startup"}, {name: PIPESCALE_TASK, value: m}]
          readinessProbe: {httpGet: {path: /v2/health/ready, port: http}, periodSeconds: 1}
          resources: {requests: {cpu: "100m"}}
YAML
log=$dir/events.txt
: >"$log"
# Each pod's first Ready, by the watch's clock.
python3 -u - "$log" <<'PY' &
import json, subprocess, sys, time
out = open(sys.argv[1], 'a')
watch = subprocess.Popen(['kubectl', 'get', 'pods', '-w', '-o', 'json', '-l', 'app=pod-start'],
                         stdout=subprocess.PIPE, text=True)
text, ready = '', set()
for line in watch.stdout:
    text += line
    try:
        pod = json.loads(text)
    except ValueError:
        continue
    text = ''
    name = pod['metadata']['name']
    for c in pod.get('status', {}).get('conditions', []):
        if c['type'] == 'Ready' and c['status'] == 'True' and name not in ready:
            ready.add(name)
            out.write(f'ready {time.time():.3f}\n')
            out.flush()
PY
watcher=$!
sleep 2
for n in 1 4 8 0 3 6 0 2 7; do
  echo "scale $(date +%s.%N)" >>"$log"
  kubectl scale deployment pod-start --replicas="$n" >/dev/null
  echo "  scaled to $n" >&2
  sleep 10
done
kill "$watcher" 2>/dev/null || true
awk -v s="$startup" '$1 == "scale" {t = $2} $1 == "ready" {d = $2 - t - s; print d; sum += d; n++
  if (n == 1 || d < lo) lo = d; if (d > hi) hi = d}
  END {printf "pods %d: Ready %.2f-%.2f s (mean %.2f) past the start-up after the scale\n", n, lo, hi, sum / n}' "$log" | tail -1

#!/usr/bin/env bash
# One command, no cluster needed: a real control plane (tests/e2e/testbed: kube-apiserver,
# kube-scheduler, kube-controller-manager, the JobSet controller, kwok nodes with GPUs), trainsched
# serving all three components (reconciler, admission webhook, scheduler extender) over TLS, the
# bed's kube-scheduler pointed at trainsched as its extender, and examples/coscheduling.yaml (a
# TrainJob of 4 pods x 2 GPUs on a coscheduling runtime) gang-scheduled. Prints the placement.
#
#   scripts/demo.sh            everything, then stops the bed
#   scripts/demo.sh --keep     leaves the bed and trainsched running (stop: scripts/demo.sh --down)
#   scripts/demo.sh --down     stops what --keep left
#
# Needs the build tools of scripts/install-deps.sh; the first run builds the test bed from Go
# modules (10-20 minutes, cached in ~/.cache/trainsched-testbed), later runs take about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export TRAINSCHED_TESTBED_RUN=${TRAINSCHED_TESTBED_RUN:-/tmp/trainsched-demo}
RUN=$TRAINSCHED_TESTBED_RUN
WORK=$RUN/trainsched
BUILD=${BUILD:-build}
say() { printf 'demo: %s\n' "$*" >&2; }

down() {
  if [ -f "$WORK/serve.pid" ]; then
    kill "$(cat "$WORK/serve.pid")" 2>/dev/null || true
    rm -f "$WORK/serve.pid"
  fi
  tests/e2e/testbed/down.sh >/dev/null 2>&1 || true
}

case "${1:-}" in
  --down) down; say "stopped"; exit 0 ;;
  --keep | "") ;;
  -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: scripts/demo.sh [--keep | --down]" >&2; exit 2 ;;
esac
KEEP=${1:-}

say "building trainsched into $BUILD (incremental)"
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target trainsched >/dev/null
BIN=$ROOT/$BUILD/trainsched

down
[ -z "$KEEP" ] && trap 'down' EXIT
say "starting the test bed (kube-apiserver, kube-scheduler, controller-manager, JobSet, kwok)"
env_file=$(TESTBED_JOBSET=1 TESTBED_KWOK=1 tests/e2e/testbed/up.sh)
# shellcheck disable=SC1090
. "$env_file"
mkdir -p "$WORK"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTPS_PORT=$(free_port)
HTTP_PORT=$(free_port)

say "certificates for 127.0.0.1 (trainsched certs)"
"$BIN" certs --service trainsched-controller --namespace trainsched-system --out "$WORK/tls" \
  --dns localhost --ip 127.0.0.1 --force >/dev/null
CA_B64=$(base64 -w0 <"$WORK/tls/ca.crt")

say "the built-in ClusterTrainingRuntimes"
"$KUBECTL" apply --server-side -f manifests/runtimes/ >/dev/null

say "trainsched serve --components reconciler,webhook,extender on 127.0.0.1:$HTTPS_PORT"
setsid "$BIN" serve --kubeconfig "$KUBECONFIG" --components reconciler,webhook,extender \
  --leader-elect-namespace default --https-address "127.0.0.1:$HTTPS_PORT" \
  --http-address "127.0.0.1:$HTTP_PORT" --tls-cert-file "$WORK/tls/tls.crt" \
  --tls-key-file "$WORK/tls/tls.key" --webhook-extender-wired >"$WORK/serve.log" 2>&1 &
echo $! >"$WORK/serve.pid"
for _ in $(seq 1 60); do
  curl -fs "http://127.0.0.1:$HTTP_PORT/readyz" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fs "http://127.0.0.1:$HTTP_PORT/readyz?verbose" >&2 || { tail -20 "$WORK/serve.log" >&2; exit 1; }

say "registering the webhooks (manifests/webhook/webhooks.yaml, pointed at 127.0.0.1)"
sed -e "s#service: {name: trainsched-controller, namespace: trainsched-system, path: \([^,]*\), port: 443}#url: https://127.0.0.1:$HTTPS_PORT\1#" \
    -e "s#caBundle: \"\"#caBundle: $CA_B64#" manifests/webhook/webhooks.yaml >"$WORK/webhooks.yaml"
"$KUBECTL" apply -f "$WORK/webhooks.yaml" >/dev/null

say "restarting kube-scheduler with trainsched as its extender (manifests/scheduler)"
sed -e "s#urlPrefix: https://127.0.0.1:9443/scheduler#urlPrefix: https://127.0.0.1:$HTTPS_PORT/scheduler#" \
    -e "s#caFile: /etc/trainsched/tls/ca.crt#caFile: $WORK/tls/ca.crt#" \
    -e '/^clientConnection:/,+1d' \
    manifests/scheduler/scheduler-config.yaml >"$WORK/scheduler-config.yaml"
tests/e2e/testbed/scheduler-ctl.sh restart "$WORK/scheduler-config.yaml" >/dev/null

say "4 kwok nodes with 8 GPUs each"
for i in 0 1 2 3; do
  "$KUBECTL" apply -f - >/dev/null <<NODE
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-$i
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {type: kwok}
status:
  capacity: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}
  allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}
NODE
done

say "submitting examples/coscheduling.yaml (TrainJob torch-gang-job: 4 pods, one gang)"
"$KUBECTL" apply -f examples/coscheduling.yaml >/dev/null
for _ in $(seq 1 120); do
  bound=$("$KUBECTL" get pods -n default -l jobset.sigs.k8s.io/jobset-name=torch-gang-job \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' 2>/dev/null | grep -c . || true)
  [ "$bound" -ge 4 ] && break
  sleep 0.5
done
echo
echo "TrainJob, JobSet and PodGroup:"
"$KUBECTL" get trainjob,jobset,podgroups.scheduling.x-k8s.io -n default torch-gang-job 2>/dev/null || true
echo
echo "Placement (all 4 pods bound together through trainsched's extender):"
"$KUBECTL" get pods -n default -l jobset.sigs.k8s.io/jobset-name=torch-gang-job \
  -o custom-columns='POD:.metadata.name,NODE:.spec.nodeName,GANG:.metadata.labels.scheduling\.x-k8s\.io/pod-group,GANG-RESOURCE:.spec.containers[0].resources.requests.trainsched\.io/gang,PHASE:.status.phase'
echo
curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | grep -E '^trainsched_extender_(bindings_total|requests_total\{verb="bind")' || true
if [ "${bound:-0}" -lt 4 ]; then
  say "not all pods were bound; trainsched log: $WORK/serve.log"
  exit 1
fi
if [ -n "$KEEP" ]; then
  say "left running: . $env_file; \$KUBECTL get pods -o wide; metrics on http://127.0.0.1:$HTTP_PORT/metrics; stop with scripts/demo.sh --down"
fi

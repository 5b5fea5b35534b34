#!/usr/bin/env bash
# One command, no cluster needed: a real control plane (tests/e2e/testbed: kube-apiserver,
# kube-scheduler, kube-controller-manager, the JobSet controller, kwok nodes with GPUs), trainsched
# serving all three components (reconciler, admission webhook, scheduler extender) over TLS, the
# bed's kube-scheduler pointed at trainsched as its extender, and examples/two-gangs.yaml on 4
# nodes x 8 GPUs: a gang of 3 whole nodes runs, a gang of 2 whole nodes waits whole (nothing
# bound, nothing held) and starts once the first is deleted. Prints placements, why the second
# gang waits (its TrainJob's Events) and `kubectl get trainjobs`.
#
#   scripts/demo.sh            everything, then stops the bed
#   scripts/demo.sh --keep     leaves the bed and trainsched running (stop: scripts/demo.sh --down)
#   scripts/demo.sh --down     stops what --keep left
#
# Needs what scripts/install-deps.sh installs (C toolchain and libraries, Go >= 1.26, python3);
# the first run builds the test bed from Go modules (about 30 minutes on a busy 2-core machine,
# cached in ~/.cache/trainsched-testbed); later runs start the bed in about 30 s.
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
  -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
# kwok's general pod stages honour a per-pod delay annotation (examples/two-gangs.yaml keeps its
# pods Running), where the fast ones complete Job pods at once
env_file=$(TESTBED_JOBSET=1 TESTBED_KWOK=1 TESTBED_KWOK_STAGES="node/fast node/heartbeat pod/general" \
  tests/e2e/testbed/up.sh)
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

say "trainsched's own Trainer CRDs (manifests/crds: Trainer's API; kubectl get adds STATUS, REASON)"
"$KUBECTL" apply --server-side --force-conflicts -k manifests/crds/ >/dev/null
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

# document N (1-based) of a multi-document YAML file
doc() { awk -v n="$2" 'BEGIN{d=1} /^---$/{d++; next} d==n' "$1"; }
pods_of() {
  "$KUBECTL" get pods -n default -l "jobset.sigs.k8s.io/jobset-name=$1" \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' 2>/dev/null
}
bound_of() { pods_of "$1" | grep -c . || true; }
wait_bound() { # name count seconds
  for _ in $(seq 1 $(($3 * 2))); do
    [ "$(bound_of "$1")" -ge "$2" ] && return 0
    sleep 0.5
  done
  return 1
}
placement() {
  "$KUBECTL" get pods -n default -l "jobset.sigs.k8s.io/jobset-name=$1" \
    -o custom-columns='POD:.metadata.name,NODE:.spec.nodeName,GANG:.metadata.labels.scheduling\.x-k8s\.io/pod-group,GANG-RESOURCE:.spec.containers[0].resources.requests.trainsched\.io/gang,PHASE:.status.phase'
}

say "submitting big-gang from examples/two-gangs.yaml (3 pods x 8 GPUs: three whole nodes, one gang)"
{ doc examples/two-gangs.yaml 1; echo ---; doc examples/two-gangs.yaml 2; } | "$KUBECTL" apply -f - >/dev/null
ok=1
wait_bound big-gang 3 60 || ok=0
echo
echo "big-gang: 3 pods bound together, one per node (a gang that needs several nodes):"
placement big-gang
nodes=$(pods_of big-gang | sort -u | grep -c . || true)
[ "$nodes" -eq 3 ] || ok=0

say "submitting second-gang (2 pods x 8 GPUs): only one node is left"
doc examples/two-gangs.yaml 3 | "$KUBECTL" apply -f - >/dev/null
for _ in $(seq 1 40); do
  "$KUBECTL" get events -n default --field-selector reason=GangWaiting,involvedObject.kind=PodGroup,involvedObject.name=second-gang \
    -o name 2>/dev/null | grep -q . && break
  sleep 0.5
done
sleep 2
echo
echo "second-gang waits whole: none of its pods is bound, none holds the free node:"
placement second-gang
[ "$(bound_of second-gang)" -eq 0 ] || ok=0
echo
echo "why (kubectl describe trainjob second-gang, Events):"
"$KUBECTL" describe trainjob -n default second-gang 2>/dev/null | sed -n '/^Events:/,$p'
echo
echo "kubectl get trainjobs:"
"$KUBECTL" get trainjobs -n default

say "deleting big-gang: second-gang starts, both pods at once"
"$KUBECTL" delete trainjob -n default big-gang --wait=false >/dev/null
wait_bound second-gang 2 120 || ok=0
echo
echo "second-gang bound:"
placement second-gang
echo
echo "kubectl get trainjobs,jobsets,podgroups:"
"$KUBECTL" get trainjobs,jobsets,podgroups.scheduling.x-k8s.io -n default 2>/dev/null || true
echo
curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | grep -E '^trainsched_extender_(bindings_total|requests_total\{verb="bind")' || true
if [ "$ok" -ne 1 ]; then
  say "the gangs did not behave as described; trainsched log: $WORK/serve.log"
  exit 1
fi
if [ -n "$KEEP" ]; then
  say "left running: . $env_file; \$KUBECTL get pods -o wide; metrics on http://127.0.0.1:$HTTP_PORT/metrics; stop with scripts/demo.sh --down"
fi

#!/usr/bin/env bash
# Smoke check of the test bed: up.sh, then
#   1. kube-apiserver /readyz through the admin kubeconfig
#   2. every CRD set that up.sh found is Established (sets the proxy does not serve are reported)
#   3. a Node object (capacity, allocatable, Ready) and a pod: kube-scheduler binds the pod to it
#   4. a Job: kube-controller-manager's job controller creates its pod, kube-scheduler binds it
#   5. namespace deletion completes (namespace controller + garbage collector)
#   6. (kwok built) a pod on a kwok node reaches Running
#   7. (kwok and jobset-controller built) a JobSet passes its webhooks, the controller makes a
#      Job, the job controller its pods, the scheduler binds them, kwok runs them: JobSet Completed
# then down.sh. kwok and the JobSet controller are started unless TESTBED_KWOK=0 / TESTBED_JOBSET=0. Prints "smoke: N passed, N failed" and exits non-zero on any failure.
# Runs in its own run dir (default /tmp/trainsched-testbed-smoke.PID), so it never touches a test
# bed that someone else started in the default one. TESTBED_KEEP_RUN=1 keeps the run dir (logs).
set -uo pipefail
export TRAINSCHED_TESTBED_RUN="${TRAINSCHED_TESTBED_RUN:-/tmp/trainsched-testbed-smoke.$$}"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

passed=0; failed=0
ok()   { passed=$((passed + 1)); tb_log "PASS $*"; }
fail() { failed=$((failed + 1)); tb_log "FAIL $*"; }
started=0
finish() {
  [ "$started" = 0 ] || "$TESTBED_DIR/down.sh" || true
  echo "smoke: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
trap 'finish; exit $?' EXIT

export TESTBED_KWOK=${TESTBED_KWOK:-1} TESTBED_JOBSET=${TESTBED_JOBSET:-1}
t0=$SECONDS
envfile=$("$TESTBED_DIR/up.sh") || { fail "up.sh (on a failure it stops what it started)"; exit 1; }
started=1
tb_log "up.sh took $((SECONDS - t0)) s"
# shellcheck disable=SC1090
. "$envfile"
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
# wait_until TIMEOUT_S CMD...: until CMD prints something non-empty
wait_until() {
  local timeout=$1 t=$SECONDS out; shift
  while (( SECONDS - t < timeout )); do
    out=$("$@" 2>/dev/null) && [ -n "$out" ] && { echo "$out"; return 0; }
    sleep 0.5
  done
  return 1
}

# 1 ----------------------------------------------------------------------------------------
if [ "$(k get --raw /readyz 2>&1)" = ok ]; then ok "apiserver /readyz at $TESTBED_SERVER"; else fail "apiserver /readyz"; fi

# 2 ----------------------------------------------------------------------------------------
while read -r name state src crds; do
  case "$state" in
    OK) n=0; bad=0
        for c in $crds; do
          n=$((n + 1))
          [ "$(k get crd "$c" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}')" = True ] || bad=$((bad + 1))
        done
        if [ "$bad" -eq 0 ]; then ok "CRDs $name: $n established ($src)"; else fail "CRDs $name: $bad of $n not established"; fi ;;
    MISSING) tb_log "note: CRDs $name not installed: $src $crds" ;;
    *) fail "CRDs $name: $state $src" ;;
  esac
done < "$TESTBED_RUN/crds.txt"

# 3 ----------------------------------------------------------------------------------------
k create namespace smoke >/dev/null
cat > "$TESTBED_RUN/smoke-node.yaml" <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: smoke-node-0
  labels:
    kubernetes.io/hostname: smoke-node-0
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
status:
  capacity:   {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
    message: smoke test node
    lastHeartbeatTime: "2026-01-01T00:00:00Z"
    lastTransitionTime: "2026-01-01T00:00:00Z"
EOF
k create --validate=strict -f "$TESTBED_RUN/smoke-node.yaml" >/dev/null
# Status on create may be dropped by the API; write it through the status subresource too.
k patch node smoke-node-0 --subresource=status --type=merge -p '{"status": {
  "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
  "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
  "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "smoke test node",
    "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}' >/dev/null
cat > "$TESTBED_RUN/smoke-pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: smoke-pod
  namespace: smoke
spec:
  automountServiceAccountToken: false
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
    resources:
      requests: {cpu: 100m, memory: 64Mi}
EOF
# The ServiceAccount admission plugin needs the namespace's "default" ServiceAccount, which the
# controller-manager's serviceaccount controller creates.
wait_until 60 k -n smoke get serviceaccount default -o name >/dev/null \
  || tb_log "no default ServiceAccount in namespace smoke after 60 s"
t=$SECONDS
if k create --validate=strict -f "$TESTBED_RUN/smoke-pod.yaml" >/dev/null; then
  node=$(wait_until 60 k -n smoke get pod smoke-pod -o jsonpath='{.spec.nodeName}') || node=""
  if [ "$node" = smoke-node-0 ]; then ok "kube-scheduler bound smoke/smoke-pod to $node in $((SECONDS - t)) s"
  else fail "pod not bound (nodeName='$node'); $(k -n smoke get events -o custom-columns=R:.reason,M:.message --no-headers 2>&1 | tail -3)"; fi
else fail "pod create"; fi

# 4 ----------------------------------------------------------------------------------------
t=$SECONDS
if k -n smoke create job smoke-job --image=registry.k8s.io/pause:3.10 >/dev/null; then
  jn=$(wait_until 60 k -n smoke get pods -l job-name=smoke-job -o jsonpath='{.items[0].spec.nodeName}') || jn=""
  if [ "$jn" = smoke-node-0 ]; then ok "job controller created the Job's pod and it was bound to $jn in $((SECONDS - t)) s"
  else fail "Job pod not created or not bound (nodeName='$jn')"; fi
else fail "job create"; fi

# 5 ----------------------------------------------------------------------------------------
t=$SECONDS
k delete namespace smoke --wait=false >/dev/null
gone=""
while (( SECONDS - t < 90 )); do
  k get namespace smoke >/dev/null 2>&1 || { gone=1; break; }
  # Bound pods wait for a kubelet to confirm their deletion; there is none, so force them.
  k -n smoke delete pods --all --grace-period=0 --force >/dev/null 2>&1 || true
  sleep 1
done
if [ -n "$gone" ]; then ok "namespace smoke deleted (pods force-finalized) in $((SECONDS - t)) s"
else fail "namespace smoke still present after 90 s: $(k get ns smoke -o jsonpath='{.status.conditions}' 2>&1 | head -c 400)"; fi

# 6 ----------------------------------------------------------------------------------------
if [ -f "$TESTBED_RUN/pids/kwok.pid" ]; then
  k create namespace smoke-kwok >/dev/null
  cat <<'EOF' | k create --validate=strict -f - >/dev/null
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-0
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: kwok-node-0, type: kwok}
status:
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
EOF
  wait_until 60 k -n smoke-kwok get serviceaccount default -o name >/dev/null || true
  t=$SECONDS
  k -n smoke-kwok run kwok-pod --image=registry.k8s.io/pause:3.10 \
    --overrides='{"spec":{"nodeSelector":{"type":"kwok"}}}' >/dev/null
  phase=$(wait_until 60 sh -c "[ \"\$('$KUBECTL' --kubeconfig '$KUBECONFIG' -n smoke-kwok get pod kwok-pod -o jsonpath='{.status.phase}')\" = Running ] && echo Running") || phase=""
  if [ "$phase" = Running ]; then ok "kwok ran smoke-kwok/kwok-pod on kwok-node-0 (Running in $((SECONDS - t)) s)"
  else fail "kwok pod not Running: $(k -n smoke-kwok get pod kwok-pod -o jsonpath='{.spec.nodeName} {.status.phase}' 2>&1)"; fi
else
  tb_log "note: kwok not running (not built, or TESTBED_KWOK=0); kwok checks skipped"
fi

# 7 ----------------------------------------------------------------------------------------
if [ -f "$TESTBED_RUN/pids/jobset-controller.pid" ] && [ -f "$TESTBED_RUN/pids/kwok.pid" ]; then
  t=$SECONDS
  if cat <<'EOF' | k create --validate=strict -f - >/dev/null
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: smoke-js, namespace: smoke-kwok}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            restartPolicy: Never
            nodeSelector: {type: kwok}
            containers:
            - name: c
              image: registry.k8s.io/pause:3.10
              resources: {requests: {cpu: "1"}}
EOF
  then
    st=$(wait_until 90 k -n smoke-kwok get jobset smoke-js \
      -o jsonpath='{.status.conditions[?(@.type=="Completed")].status}') || st=""
    np=$(k -n smoke-kwok get pods -l jobset.sigs.k8s.io/jobset-name=smoke-js -o name | wc -l)
    if [ "$st" = True ] && [ "$np" -eq 4 ]; then
      ok "JobSet smoke-kwok/smoke-js: 2 Jobs, 4 pods bound and run by kwok, Completed in $((SECONDS - t)) s"
    else fail "JobSet not Completed (Completed='$st', pods=$np)"; fi
  else fail "JobSet create (webhook at 127.0.0.1?)"; fi
else
  tb_log "note: JobSet controller or kwok not running; JobSet check skipped"
fi

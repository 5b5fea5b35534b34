#!/usr/bin/env bash
# Starts a real Kubernetes control plane on 127.0.0.1 for the trainsched end-to-end tests:
# etcd, kube-apiserver (Node,RBAC authorization, client certificates), kube-scheduler,
# kube-controller-manager, then installs upstream CRDs read from the Go module cache.
#
# Run dir (default /tmp/trainsched-testbed, env TRAINSCHED_TESTBED_RUN) receives:
#   env                 KEY=VALUE lines (with `export`): KUBECONFIG, TESTBED_SERVER, cert paths, ports
#   admin.kubeconfig    user in group system:masters; scheduler.kubeconfig; controller-manager.kubeconfig
#   pki/ logs/ pids/ etcd-data/ crds.txt
# Environment:
#   SCHED_CONFIG=FILE   KubeSchedulerConfiguration for kube-scheduler; clientConnection and
#                       leaderElection are appended when the file does not set them
#   TESTBED_CRDS="jobset kueue trainer volcano kai coscheduling" (default: all; "none" skips)
#   TESTBED_KCM=0       do not start kube-controller-manager
#   TESTBED_KCM_CONTROLLERS=LIST      default '*,-node-lifecycle-controller' (fake nodes have no kubelet)
#   TESTBED_KWOK=1      also start kwok (if built): it runs pods on nodes annotated kwok.x-k8s.io/node=fake
#   TESTBED_JOBSET=1    also start the JobSet controller (if built) with its webhooks on 127.0.0.1
#   TESTBED_KUEUE=1     also start Kueue's controller manager (built when missing) with its webhooks
#                       on 127.0.0.1 and the frameworks trainer.kubeflow.org/trainjob and
#                       jobset.x-k8s.io/jobset (needs TESTBED_JOBSET=1 for JobSets to run)
#   TESTBED_KAI=1       also start KAI Scheduler's scheduler and binder (built when missing)
#   TS_REQUIRE_KAI=1    with TESTBED_KAI=1: KAI is required (CI): a build is tried even after an
#                       earlier failed one, and a failed build or a KAI that does not start fails
#                       up.sh instead of leaving the KAI tests to say SKIP
#   TESTBED_VOLCANO=1   also start Volcano's vc-scheduler and vc-controller-manager (VOLCANO_VERSION,
#                       built from the fetched source when missing: build.sh) and install the CRDs
#                       that tag ships (PodGroup, Queue, HyperNode...) instead of the generated ones
#   TS_REQUIRE_VOLCANO=1  with TESTBED_VOLCANO=1: Volcano is required (CI), as TS_REQUIRE_KAI for KAI
#   TESTBED_HELM=1      build helm (optional, for the chart's e2e test) when it is missing
#   TESTBED_NATIVE_GANG=1  Kubernetes' own gang scheduling (off by default): on 1.36 the
#                       scheduling.k8s.io/v1alpha2 API on kube-apiserver and the feature gates
#                       GenericWorkload and GangScheduling on kube-apiserver, kube-scheduler and
#                       kube-controller-manager (its PodGroup protection controller removes the
#                       finalizer the apiserver's PodGroupProtection admission adds); on 1.37
#                       scheduling.k8s.io/v1beta1 and the gates GenericWorkload,
#                       TopologyAwareWorkloadScheduling and DRAWorkloadResourceClaims; nothing else
#   TESTBED_K8S_VERSION=v1.37.2  the bed's Kubernetes (versions.env: the default or the second)
#   APISERVER_EXTRA_ARGS, SCHEDULER_EXTRA_ARGS, KCM_EXTRA_ARGS, ETCD_EXTRA_ARGS  (word-split)
#   TESTBED_APISERVER_PORT  fixed secure port instead of a free one
set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUN="$TESTBED_RUN"
PKI="$RUN/pki"

# Kubernetes' native gang scheduling (pkg/features/kube_features.go of v1.36: GangScheduling
# depends on GenericWorkload; both alpha, default false)
NATIVE_APISERVER_ARGS="" NATIVE_GATES_ARGS=""
# Kubernetes 1.37 (kube_features.go of v1.37.2): the API is scheduling.k8s.io/v1beta1, GangScheduling
# is gone (gang scheduling comes with GenericWorkload, beta, default off), and the Workload's
# topology constraint and shared claims have gates of their own (TopologyAwareWorkloadScheduling
# alpha, DRAWorkloadResourceClaims beta, both default off)
if [ "${TESTBED_NATIVE_GANG:-0}" = 1 ]; then
  case "$K8S_VERSION" in
    v1.36.*)
      NATIVE_GATES_ARGS="--feature-gates=GenericWorkload=true,GangScheduling=true"
      NATIVE_APISERVER_ARGS="--runtime-config=scheduling.k8s.io/v1alpha2=true $NATIVE_GATES_ARGS" ;;
    *)
      NATIVE_GATES_ARGS="--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true,DRAWorkloadResourceClaims=true"
      NATIVE_APISERVER_ARGS="--runtime-config=scheduling.k8s.io/v1beta1=true $NATIVE_GATES_ARGS" ;;
  esac
fi

# ---------------------------------------------------------------- preconditions
command -v openssl >/dev/null || tb_die "openssl not found"
command -v curl >/dev/null || tb_die "curl not found"
for b in etcd kube-apiserver kube-scheduler kube-controller-manager kubectl; do
  if [ ! -x "$TESTBED_BIN/$b" ]; then
    tb_log "$b missing in $TESTBED_BIN: running build.sh"
    "$TESTBED_DIR/build.sh" >/dev/null
    break
  fi
done
# Kueue's controller manager is optional too, built when asked for (a cold build takes long)
if [ "${TESTBED_KUEUE:-0}" = 1 ] && [ -n "${KUEUE_VERSION:-}" ] && [ ! -x "$TESTBED_BIN/$KUEUE_BIN" ] \
   && [ ! -e "$TESTBED_BIN/../$KUEUE_BIN.failed" ]; then
  tb_log "$KUEUE_BIN missing in $TESTBED_BIN: running build.sh (optional, a failure is not fatal)"
  TESTBED_KUEUE=1 "$TESTBED_DIR/build.sh" >/dev/null || tb_log "build.sh failed; the Kueue tests will say SKIP"
fi
# KAI's scheduler and binder too (github.com/NVIDIA/KAI-scheduler at KAI_VERSION, as its CRDs);
# optional, unless TS_REQUIRE_KAI=1: then an earlier failure's log is set aside, the build is
# tried again and must succeed
KAI_REQUIRED=0
if [ "${TESTBED_KAI:-0}" = 1 ] && [ "${TS_REQUIRE_KAI:-0}" = 1 ]; then
  KAI_REQUIRED=1
  [ -n "${KAI_VERSION:-}" ] || tb_die "TS_REQUIRE_KAI=1 but versions.env pins no KAI_VERSION"
fi
kai_built() { [ -x "$TESTBED_BIN/kai-scheduler" ] && [ -x "$TESTBED_BIN/kai-binder" ]; }
if [ "${TESTBED_KAI:-0}" = 1 ] && [ -n "${KAI_VERSION:-}" ] && ! kai_built; then
  if [ "$KAI_REQUIRED" = 1 ]; then
    for f in kai-scheduler kai-binder; do
      [ ! -e "$TESTBED_BIN/../$f.failed" ] || mv -f "$TESTBED_BIN/../$f.failed" "$TESTBED_BIN/../$f.failed.old"
    done
  fi
  if [ ! -e "$TESTBED_BIN/../kai-scheduler.failed" ] && [ ! -e "$TESTBED_BIN/../kai-binder.failed" ]; then
    tb_log "kai-scheduler/kai-binder missing in $TESTBED_BIN: running build.sh (a cold build takes minutes)"
    TESTBED_KAI=1 "$TESTBED_DIR/build.sh" >/dev/null || tb_log "build.sh failed"
  fi
  if ! kai_built; then
    [ "$KAI_REQUIRED" = 0 ] || tb_die "TS_REQUIRE_KAI=1 but kai-scheduler/kai-binder could not be built (see $TESTBED_BIN/../kai-*.failed)"
    tb_log "kai-scheduler/kai-binder not built; the KAI tests will say SKIP"
  fi
fi
# Volcano's scheduler and controller manager (built from github.com/volcano-sh/volcano at
# VOLCANO_VERSION, named with the version); optional unless TS_REQUIRE_VOLCANO=1, as KAI's
VOLCANO_REQUIRED=0
VC_BINS="vc-scheduler-${VOLCANO_VERSION:-} vc-controller-manager-${VOLCANO_VERSION:-}"
VOLCANO_TAG_CRDS="$TESTBED_CACHE_ROOT/$K8S_VERSION_DEFAULT/crds/volcano-${VOLCANO_VERSION:-}"
if [ "${TESTBED_VOLCANO:-0}" = 1 ] && [ "${TS_REQUIRE_VOLCANO:-0}" = 1 ]; then
  VOLCANO_REQUIRED=1
  [ -n "${VOLCANO_VERSION:-}" ] || tb_die "TS_REQUIRE_VOLCANO=1 but versions.env pins no VOLCANO_VERSION"
fi
volcano_built() {
  local b
  for b in $VC_BINS; do [ -x "$TESTBED_BIN/$b" ] || return 1; done
  ls "$VOLCANO_TAG_CRDS"/*.yaml >/dev/null 2>&1
}
if [ "${TESTBED_VOLCANO:-0}" = 1 ] && [ -n "${VOLCANO_VERSION:-}" ] && ! volcano_built; then
  if [ "$VOLCANO_REQUIRED" = 1 ]; then
    for f in $VC_BINS; do
      [ ! -e "$TESTBED_BIN/../$f.failed" ] || mv -f "$TESTBED_BIN/../$f.failed" "$TESTBED_BIN/../$f.failed.old"
    done
  fi
  tb_log "Volcano $VOLCANO_VERSION missing in $TESTBED_BIN: running build.sh (a cold build takes minutes)"
  TESTBED_VOLCANO=1 "$TESTBED_DIR/build.sh" >/dev/null || tb_log "build.sh failed"
  if ! volcano_built; then
    [ "$VOLCANO_REQUIRED" = 0 ] || tb_die "TS_REQUIRE_VOLCANO=1 but Volcano $VOLCANO_VERSION could not be built (see build.sh's messages above and $TESTBED_BIN/../vc-*.failed)"
    tb_log "Volcano $VOLCANO_VERSION not built; the Volcano scheduler tests will say SKIP"
  fi
fi
# helm (the chart's e2e test) is optional: built once when asked for (TESTBED_HELM=1) and
# missing; a failed build leaves helm.failed beside the binaries and is not tried again
if [ "${TESTBED_HELM:-0}" = 1 ] && [ -n "${HELM_VERSION:-}" ] && [ ! -x "$TESTBED_BIN/helm" ] \
   && [ ! -e "$TESTBED_BIN/../helm.failed" ]; then
  tb_log "helm missing in $TESTBED_BIN: running build.sh (optional, a failure is not fatal)"
  "$TESTBED_DIR/build.sh" >/dev/null || tb_log "build.sh failed; the helm tests will say SKIP"
fi

if [ -d "$RUN/pids" ]; then
  for f in "$RUN"/pids/*.pid; do
    [ -e "$f" ] || continue
    if kill -0 "$(cat "$f")" 2>/dev/null; then
      tb_die "test bed already running in $RUN ($(basename "$f" .pid) pid $(cat "$f")); run down.sh first"
    fi
  done
fi
rm -rf "$RUN"
mkdir -p -m 700 "$RUN" "$PKI" "$RUN/logs" "$RUN/pids" "$RUN/etcd-data"

STARTED=()
on_fail() {
  local rc=$?
  tb_log "up.sh failed (exit $rc); stopping what it started; logs kept in $RUN/logs"
  for name in "${STARTED[@]}"; do
    tail -n 15 "$RUN/logs/$name.log" 2>/dev/null | sed "s/^/  [$name] /" >&2 || true
  done
  TESTBED_KEEP_RUN=1 "$TESTBED_DIR/down.sh" >/dev/null 2>&1 || true
  exit "$rc"
}
trap on_fail ERR

# ---------------------------------------------------------------- ports
USED_PORTS=" "
# Ports come from below the kernel's ephemeral range (ip_local_port_range, usually from 32768):
# a port picked there can be taken by any outgoing connection before the server binds it.
EPHEMERAL_LO=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
PORT_LO=20000
PORT_SPAN=$(( EPHEMERAL_LO - PORT_LO ))
[ "$PORT_SPAN" -ge 2000 ] || { PORT_LO=10000; PORT_SPAN=$(( EPHEMERAL_LO > 12000 ? EPHEMERAL_LO - 10000 : 20000 )); }
free_port() { # free_port VAR...: sets each VAR to a TCP port free on 127.0.0.1, all distinct
  local v p
  for v in "$@"; do
    for _ in $(seq 1 200); do
      p=$(( PORT_LO + (RANDOM * 32768 + RANDOM) % PORT_SPAN ))
      case "$USED_PORTS" in *" $p "*) continue ;; esac
      ss -Htan "sport = :$p" 2>/dev/null | grep -q . || break
    done
    USED_PORTS+="$p "
    printf -v "$v" '%s' "$p"
  done
}
free_port ETCD_PORT ETCD_PEER_PORT SCHED_PORT KCM_PORT KWOK_PORT JOBSET_WEBHOOK_PORT JOBSET_HEALTH_PORT \
  KUEUE_WEBHOOK_PORT KUEUE_HEALTH_PORT KAI_SCHED_PORT KAI_PLUGIN_PORT KAI_BINDER_METRICS_PORT \
  KAI_BINDER_HEALTH_PORT VC_SCHED_HEALTH_PORT VC_SCHED_METRICS_PORT VC_CM_HEALTH_PORT VC_CM_METRICS_PORT
if [ -n "${TESTBED_APISERVER_PORT:-}" ]; then APISERVER_PORT=$TESTBED_APISERVER_PORT; else free_port APISERVER_PORT; fi
SERVER="https://127.0.0.1:$APISERVER_PORT"

# ---------------------------------------------------------------- certificates
tb_log "generating certificates in $PKI"
ossl() { openssl "$@" 2>>"$RUN/logs/openssl.log"; }
ossl ecparam -name prime256v1 -genkey -noout -out "$PKI/ca.key"
ossl req -x509 -new -key "$PKI/ca.key" -sha256 -days 3650 -subj "/CN=trainsched-testbed-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
  -out "$PKI/ca.crt"
# front-proxy (request header) CA, as kubeadm sets it up; the scheduler's and controller-manager's
# delegated authentication reads it from kube-system/extension-apiserver-authentication
ossl ecparam -name prime256v1 -genkey -noout -out "$PKI/front-proxy-ca.key"
ossl req -x509 -new -key "$PKI/front-proxy-ca.key" -sha256 -days 3650 -subj "/CN=trainsched-testbed-front-proxy-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
  -out "$PKI/front-proxy-ca.crt"
# cert NAME SUBJECT EXTKEYUSAGE [SAN] [CA]
cert() {
  local name=$1 subj=$2 eku=$3 san=${4:-} ca=${5:-ca}
  ossl ecparam -name prime256v1 -genkey -noout -out "$PKI/$name.key"
  ossl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } > "$PKI/$name.ext"
  ossl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial \
    -sha256 -days 3650 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt"
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}
SERVICE_CIDR=${TESTBED_SERVICE_CIDR:-10.0.0.0/24}   # allocation range inside the API only; no traffic
cert apiserver "/CN=kube-apiserver" serverAuth \
  "IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin "/O=system:masters/CN=trainsched-testbed-admin" clientAuth
cert kube-scheduler "/CN=system:kube-scheduler" clientAuth
cert kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
cert front-proxy-client "/CN=front-proxy-client" clientAuth "" front-proxy-ca
# loopback serving certs for the scheduler's and controller-manager's /healthz
cert scheduler-serving "/CN=kube-scheduler" serverAuth "IP:127.0.0.1,DNS:localhost"
cert kcm-serving "/CN=kube-controller-manager" serverAuth "IP:127.0.0.1,DNS:localhost"
# service-account token signing key pair
ossl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key"
ossl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
chmod 600 "$PKI"/*.key

kubeconfig() { # kubeconfig FILE CERTNAME USER
  local b64='base64 -w0'
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster:
    server: $SERVER
    certificate-authority-data: $($b64 < "$PKI/ca.crt")
users:
- name: $3
  user:
    client-certificate-data: $($b64 < "$PKI/$2.crt")
    client-key-data: $($b64 < "$PKI/$2.key")
contexts:
- name: testbed
  context:
    cluster: testbed
    user: $3
current-context: testbed
EOF
  chmod 600 "$1"
}
kubeconfig "$RUN/admin.kubeconfig" admin trainsched-testbed-admin
kubeconfig "$RUN/scheduler.kubeconfig" kube-scheduler system:kube-scheduler
kubeconfig "$RUN/controller-manager.kubeconfig" kube-controller-manager system:kube-controller-manager
KUBECTL=("$TESTBED_BIN/kubectl" --kubeconfig "$RUN/admin.kubeconfig")

# ---------------------------------------------------------------- process helpers
start() { # start NAME BINARY ARGS...
  local name=$1; shift
  "$@" >"$RUN/logs/$name.log" 2>&1 </dev/null &
  echo $! > "$RUN/pids/$name.pid"
  STARTED+=("$name")
  tb_log "started $name (pid $!), log $RUN/logs/$name.log"
}
wait_for() { # wait_for NAME TIMEOUT_S CMD...   (fails if the process dies or time runs out)
  local name=$1 timeout=$2 t0=$SECONDS; shift 2
  until "$@" >/dev/null 2>&1; do
    kill -0 "$(cat "$RUN/pids/$name.pid")" 2>/dev/null || { tb_log "$name exited"; return 1; }
    if (( SECONDS - t0 >= timeout )); then tb_log "$name not ready after ${timeout}s"; return 1; fi
    sleep 0.3
  done
  tb_log "$name ready after $((SECONDS - t0)) s"
}
curl_ok() { # curl_ok URL EXPECTED-BODY [curl args]
  local url=$1 want=$2; shift 2
  [ "$(curl -sS --max-time 5 "$@" "$url")" = "$want" ]
}
ADMIN_CURL=(--cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key")

# ---------------------------------------------------------------- etcd
# shellcheck disable=SC2086
start etcd "$TESTBED_BIN/etcd" --name testbed --data-dir "$RUN/etcd-data" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "testbed=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync --quota-backend-bytes=$((4 * 1024 * 1024 * 1024)) --log-level=warn \
  ${ETCD_EXTRA_ARGS:-}
wait_for etcd 30 curl_ok "http://127.0.0.1:$ETCD_PORT/health" '{"health":"true","reason":""}'

# ---------------------------------------------------------------- kube-apiserver
# TaintNodesByCondition is off: it would put node.kubernetes.io/not-ready on every Node created
# through the API, and without kubelets nothing would take it off again.
# --endpoint-reconciler-type=none: the "kubernetes" Endpoints may not hold a loopback address.
# shellcheck disable=SC2086
start kube-apiserver "$TESTBED_BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
  --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
  --client-ca-file "$PKI/ca.crt" \
  --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
  --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
  --requestheader-extra-headers-prefix X-Remote-Extra- \
  --proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key" \
  --endpoint-reconciler-type none \
  --service-account-issuer "https://kubernetes.default.svc.cluster.local" \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --api-audiences "https://kubernetes.default.svc.cluster.local" \
  --service-cluster-ip-range "$SERVICE_CIDR" \
  --authorization-mode Node,RBAC \
  --enable-admission-plugins NodeRestriction --disable-admission-plugins TaintNodesByCondition \
  --allow-privileged=true --profiling=false \
  $NATIVE_APISERVER_ARGS ${APISERVER_EXTRA_ARGS:-}
wait_for kube-apiserver 120 curl_ok "$SERVER/readyz" ok "${ADMIN_CURL[@]}"

# ---------------------------------------------------------------- kube-scheduler
SCHED_CFG="$RUN/scheduler-config.yaml"
if [ -n "${SCHED_CONFIG:-}" ]; then
  [ -f "$SCHED_CONFIG" ] || tb_die "SCHED_CONFIG=$SCHED_CONFIG: no such file"
  cp "$SCHED_CONFIG" "$SCHED_CFG"
  [ -z "$(tail -c1 "$SCHED_CFG")" ] || echo >> "$SCHED_CFG"
else
  printf 'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n' > "$SCHED_CFG"
fi
grep -q '^clientConnection:' "$SCHED_CFG" || printf 'clientConnection:\n  kubeconfig: %s\n' "$RUN/scheduler.kubeconfig" >> "$SCHED_CFG"
grep -q '^leaderElection:' "$SCHED_CFG" || printf 'leaderElection:\n  leaderElect: false\n' >> "$SCHED_CFG"
# shellcheck disable=SC2086
start kube-scheduler "$TESTBED_BIN/kube-scheduler" --config "$SCHED_CFG" \
  --authentication-kubeconfig "$RUN/scheduler.kubeconfig" --authorization-kubeconfig "$RUN/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" \
  --tls-cert-file "$PKI/scheduler-serving.crt" --tls-private-key-file "$PKI/scheduler-serving.key" \
  $NATIVE_GATES_ARGS ${SCHEDULER_EXTRA_ARGS:-}

# ---------------------------------------------------------------- kube-controller-manager
if [ "${TESTBED_KCM:-1}" != 0 ]; then
  # shellcheck disable=SC2086
  start kube-controller-manager "$TESTBED_BIN/kube-controller-manager" \
    --kubeconfig "$RUN/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$RUN/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$RUN/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --tls-cert-file "$PKI/kcm-serving.crt" --tls-private-key-file "$PKI/kcm-serving.key" \
    --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --controllers "${TESTBED_KCM_CONTROLLERS:-*,-node-lifecycle-controller}" \
    $NATIVE_GATES_ARGS ${KCM_EXTRA_ARGS:-}
fi

wait_for kube-scheduler 60 curl_ok "https://127.0.0.1:$SCHED_PORT/healthz" ok --cacert "$PKI/ca.crt"
if [ "${TESTBED_KCM:-1}" != 0 ]; then
  wait_for kube-controller-manager 60 curl_ok "https://127.0.0.1:$KCM_PORT/healthz" ok --cacert "$PKI/ca.crt"
fi

# ---------------------------------------------------------------- CRDs from the Go module cache
WANT_CRDS=" ${TESTBED_CRDS:-jobset kueue trainer volcano kai coscheduling} "
: > "$RUN/crds.txt"
crd_set() { # crd_set NAME MODULE@VERSION-or-DIR FILE...(relative to the module dir, globs allowed)
  local name=$1 src=$2 dir files=() f
  shift 2
  case "$WANT_CRDS" in *" $name "*) ;; *) return 0 ;; esac
  if [ "${src%@}" != "$src" ]; then
    tb_log "CRDs $name: no version pinned; skipped"; echo "$name MISSING no version pinned" >> "$RUN/crds.txt"; return 0
  fi
  if [ -d "$src" ]; then dir=$src; else dir="$(tb_moddir "$src")"; fi
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    tb_log "CRDs $name: $src not available (module proxy); skipped"
    echo "$name MISSING $src not served" >> "$RUN/crds.txt"; return 0
  fi
  for f in "$@"; do
    # shellcheck disable=SC2206
    local g=($dir/$f)
    for x in "${g[@]}"; do [ -f "$x" ] && grep -q '^kind: CustomResourceDefinition' "$x" && files+=("$x"); done
  done
  if [ "${#files[@]}" -eq 0 ]; then
    tb_log "CRDs $name: no CRD files in $dir ($*); skipped"
    echo "$name MISSING no CRD files in $src" >> "$RUN/crds.txt"; return 0
  fi
  local args=() names
  for x in "${files[@]}"; do args+=(-f "$x"); done
  # server-side apply: several of these CRDs exceed the 256 KiB last-applied annotation limit
  "${KUBECTL[@]}" apply --server-side --force-conflicts --field-manager=trainsched-testbed "${args[@]}" \
    >>"$RUN/logs/crds.log" 2>&1 || {
    tb_log "CRDs $name: kubectl apply FAILED (see $RUN/logs/crds.log)"
    echo "$name FAILED apply $src" >> "$RUN/crds.txt"; return 0; }
  names=$("${KUBECTL[@]}" get "${args[@]}" -o name)
  # shellcheck disable=SC2086
  "${KUBECTL[@]}" wait --for condition=Established --timeout=60s $names >>"$RUN/logs/crds.log" 2>&1 || {
    tb_log "CRDs $name: not Established (see $RUN/logs/crds.log)"
    echo "$name FAILED not-established $src" >> "$RUN/crds.txt"; return 0; }
  tb_log "CRDs $name: $(echo "$names" | wc -l) established from ${src##*/}"
  echo "$name OK $src $(echo $names | sed 's#customresourcedefinition.apiextensions.k8s.io/##g')" >> "$RUN/crds.txt"
}
VOLCANO_DIR="$TESTBED_CACHE_ROOT/$K8S_VERSION_DEFAULT/crds/volcano-${VOLCANO_APIS_VERSION:-}"
# with Volcano's scheduler: the CRDs its release ships (HyperNode, and the fields of that release)
if [ "${TESTBED_VOLCANO:-0}" = 1 ] && volcano_built; then VOLCANO_DIR=$VOLCANO_TAG_CRDS; fi
crd_set jobset "sigs.k8s.io/jobset@${JOBSET_VERSION:-}" 'config/components/crd/bases/*.yaml'
crd_set kueue "sigs.k8s.io/kueue@${KUEUE_VERSION:-}" 'config/components/crd/bases/*.yaml'
crd_set trainer "github.com/kubeflow/trainer/v2@${TRAINER_VERSION:-}" 'manifests/base/crds/*.yaml'
if [ -d "$VOLCANO_DIR" ]; then
  crd_set volcano "$VOLCANO_DIR" '*.yaml'
else
  case "$WANT_CRDS" in *" volcano "*)
    tb_log "CRDs volcano: $VOLCANO_DIR missing (build.sh generates it); skipped"
    echo "volcano MISSING not generated" >> "$RUN/crds.txt" ;;
  esac
fi
crd_set kai "github.com/NVIDIA/KAI-scheduler@${KAI_VERSION:-}" 'deployments/kai-scheduler/crds/*.yaml'
crd_set coscheduling "sigs.k8s.io/scheduler-plugins@${SCHEDPLUGINS_VERSION:-}" \
  'config/crd/bases/scheduling.x-k8s.io_podgroups.yaml'

# ---------------------------------------------------------------- kwok (optional)
if [ "${TESTBED_KWOK:-0}" = 1 ]; then
  if [ -x "$TESTBED_BIN/kwok" ]; then
    # kwok plays the kubelet for Nodes annotated kwok.x-k8s.io/node=fake: heartbeats, and pods
    # bound there become Running (Job pods then Succeeded; deletions complete), per upstream's
    # stage files read from the module cache (TESTBED_KWOK_STAGES: paths under kustomize/stage/).
    KWOK_DIR=$(tb_moddir "sigs.k8s.io/kwok@${KWOK_VERSION:-}")
    kwok_cfg=()
    for st in ${TESTBED_KWOK_STAGES:-node/fast node/heartbeat pod/fast}; do
      for f in "$KWOK_DIR/kustomize/stage/$st"/*.yaml; do
        [ "$(basename "$f")" = kustomization.yaml ] || kwok_cfg+=(--config "$f")
      done
    done
    start kwok "$TESTBED_BIN/kwok" --kubeconfig "$RUN/admin.kubeconfig" "${kwok_cfg[@]}" \
      --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
      --node-ip=127.0.0.1 --cidr "${TESTBED_KWOK_POD_CIDR:-10.244.0.0/16}" \
      --server-address "127.0.0.1:$KWOK_PORT"
    wait_for kwok 60 curl_ok "http://127.0.0.1:$KWOK_PORT/healthz" ok
    KWOK_RUNNING=1
  else
    tb_log "TESTBED_KWOK=1 but kwok was not built; skipped"
  fi
fi

# ---------------------------------------------------------------- JobSet controller (optional)
if [ "${TESTBED_JOBSET:-0}" = 1 ]; then
  JOBSET_DIR=$(tb_moddir "sigs.k8s.io/jobset@${JOBSET_VERSION:-}")
  if [ -x "$TESTBED_BIN/jobset-controller" ] && [ -f "$JOBSET_DIR/config/components/webhook/manifests.yaml" ]; then
    # The controller runs out of cluster with upstream's webhooks served on 127.0.0.1; the
    # webhook configurations are upstream's manifests with `url:` clientConfigs (plus the pod
    # objectSelector that upstream's kustomize patches add).
    mkdir -p -m 700 "$PKI/jobset-webhook"
    cert jobset-webhook "/CN=jobset-webhook" serverAuth "IP:127.0.0.1,DNS:localhost"
    mv "$PKI/jobset-webhook.crt" "$PKI/jobset-webhook/tls.crt"; mv "$PKI/jobset-webhook.key" "$PKI/jobset-webhook/tls.key"
    cat > "$RUN/jobset-config.yaml" <<EOF
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: $JOBSET_WEBHOOK_PORT
  certDir: $PKI/jobset-webhook
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:$JOBSET_HEALTH_PORT
EOF
    KUBECONFIG="$RUN/admin.kubeconfig" start jobset-controller "$TESTBED_BIN/jobset-controller" \
      --config "$RUN/jobset-config.yaml"
    wait_for jobset-controller 60 curl_ok "http://127.0.0.1:$JOBSET_HEALTH_PORT/readyz" ok
    JOBSET_RUNNING=1
    awk -v url="https://127.0.0.1:$JOBSET_WEBHOOK_PORT" -v ca="$(base64 -w0 < "$PKI/ca.crt")" '
      /^    service:$/ { svc = 1; next }
      svc && /^      (name|namespace):/ { next }
      svc && /^      path:/ { print "    url: " url $2; print "    caBundle: " ca; svc = 0; next }
      { print }
      /^  name: [mv]pod\.kb\.io$/ {
        print "  objectSelector:"; print "    matchExpressions:"
        print "    - key: jobset.sigs.k8s.io/jobset-name"; print "      operator: Exists" }
    ' "$JOBSET_DIR/config/components/webhook/manifests.yaml" \
    | sed 's/^  name: \(mutating\|validating\)-webhook-configuration$/  name: jobset-\1-webhook-configuration/' \
      > "$RUN/jobset-webhooks.yaml"
    "${KUBECTL[@]}" apply --server-side --field-manager=trainsched-testbed -f "$RUN/jobset-webhooks.yaml" \
      >>"$RUN/logs/crds.log" 2>&1
    tb_log "JobSet webhooks registered at https://127.0.0.1:$JOBSET_WEBHOOK_PORT"
  else
    tb_log "TESTBED_JOBSET=1 but jobset-controller was not built (or its module is not in the cache); skipped"
  fi
fi

# ---------------------------------------------------------------- Kueue (optional)
if [ "${TESTBED_KUEUE:-0}" = 1 ]; then
  KUEUE_DIR=$(tb_moddir "sigs.k8s.io/kueue@${KUEUE_VERSION:-}")
  if [ -x "$TESTBED_BIN/$KUEUE_BIN" ] && [ -f "$KUEUE_DIR/config/components/webhook/manifests.yaml" ]; then
    # Kueue's manager runs out of cluster as the admin, without leader election, with its
    # webhooks served on 127.0.0.1 from a certificate made here (internalCertManagement off).
    # With that off, Kueue (v0.17 to v0.19 at least) also reads a metrics certificate from the fixed path
    # /etc/kueue/metrics/certs: the manager runs in a private mount namespace whose /etc is a
    # tmpfs copy of the real one plus that directory, so nothing outside the run dir changes
    # (metrics are not served: bindAddress "0"). VisibilityOnDemand is off: its API server would
    # listen on every interface. Upstream's webhook configurations are kept for the kinds the bed
    # uses (TrainJob, JobSet and Kueue's own), with `url:` clientConfigs.
    # Kueue v0.19's defaults are kept as an admin gets them: WaitForPodsReady on (30 min timeout,
    # no blockAdmission), TASMultiLayerTopology on. DRA devices of the DeviceClass
    # gpu.e2e.trainsched.io count in quota as the resource trainsched.io/e2e-gpu
    # (deviceClassMappings; KueueDRAIntegration is on by default since v0.18).
    "${KUBECTL[@]}" create namespace kueue-system >>"$RUN/logs/crds.log" 2>&1 || true
    mkdir -p -m 700 "$PKI/kueue-webhook" "$RUN/kueue-etc"
    cert kueue-webhook "/CN=kueue-webhook" serverAuth "IP:127.0.0.1,DNS:localhost"
    mv "$PKI/kueue-webhook.crt" "$PKI/kueue-webhook/tls.crt"; mv "$PKI/kueue-webhook.key" "$PKI/kueue-webhook/tls.key"
    cat > "$RUN/kueue-config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: $KUEUE_WEBHOOK_PORT
  certDir: $PKI/kueue-webhook
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:$KUEUE_HEALTH_PORT
clientConnection:
  qps: 50
  burst: 100
integrations:
  frameworks:
  - trainer.kubeflow.org/trainjob
  - jobset.x-k8s.io/jobset
resources:
  deviceClassMappings:
  - name: trainsched.io/e2e-gpu
    deviceClassNames: [gpu.e2e.trainsched.io]
EOF
    # shellcheck disable=SC2016
    KUBECONFIG="$RUN/admin.kubeconfig" start kueue-controller unshare -m --propagation private sh -c '
      set -e; etc=$1; certs=$2; shift 2
      mount -t tmpfs -o mode=755 kueue-etc "$etc"
      cp -a /etc/. "$etc/"
      mkdir -p "$etc/kueue/metrics/certs"
      cp "$certs/tls.crt" "$certs/tls.key" "$etc/kueue/metrics/certs/"
      mount --bind "$etc" /etc
      exec "$@"' kueue-etc "$RUN/kueue-etc" "$PKI/kueue-webhook" "$TESTBED_BIN/$KUEUE_BIN" \
      --config "$RUN/kueue-config.yaml" --feature-gates=VisibilityOnDemand=false
    wait_for kueue-controller 120 curl_ok "http://127.0.0.1:$KUEUE_HEALTH_PORT/readyz" ok
    KUEUE_RUNNING=1
    awk -v url="https://127.0.0.1:$KUEUE_WEBHOOK_PORT" -v ca="$(base64 -w0 < "$PKI/ca.crt")" '
      function flush() { if (buf != "" && keep) printf "%s", buf; buf = ""; keep = 0 }
      /^---$/ || /^apiVersion:/ { flush(); inhook = 0 }
      /^- admissionReviewVersions:$/ { flush(); inhook = 1 }
      !inhook { print; next }
      /^    service:$/ { svc = 1; next }
      svc && /^      (name|namespace):/ { next }
      svc && /^      path:/ { buf = buf "    url: " url $2 "\n    caBundle: " ca "\n"; svc = 0; next }
      /^  name: [mv](trainjob|jobset|workload|clusterqueue|resourceflavor|cohort)\.kb\.io$/ { keep = 1 }
      { buf = buf $0 "\n" }
      END { flush() }
    ' "$KUEUE_DIR/config/components/webhook/manifests.yaml" \
    | sed 's/^  name: \(mutating\|validating\)-webhook-configuration$/  name: kueue-\1-webhook-configuration/' \
      > "$RUN/kueue-webhooks.yaml"
    "${KUBECTL[@]}" apply --server-side --field-manager=trainsched-testbed -f "$RUN/kueue-webhooks.yaml" \
      >>"$RUN/logs/crds.log" 2>&1
    tb_log "Kueue webhooks registered at https://127.0.0.1:$KUEUE_WEBHOOK_PORT"
  else
    tb_log "TESTBED_KUEUE=1 but $KUEUE_BIN was not built (or its module is not in the cache); skipped"
  fi
fi

# ---------------------------------------------------------------- KAI Scheduler (TESTBED_KAI=1)
# The scheduler places PodGroups (scheduling.run.ai/v2alpha2) in Queues and writes BindRequests;
# the binder binds the pods they name. Both read the CRDs crd_set kai installed; no webhook, no
# pod grouper (trainsched writes the PodGroups), no GPU operator (CPU-only kwok nodes).
if [ "${TESTBED_KAI:-0}" = 1 ]; then
  if [ -x "$TESTBED_BIN/kai-scheduler" ] && [ -x "$TESTBED_BIN/kai-binder" ]; then
    "${KUBECTL[@]}" create namespace kai-scheduler >>"$RUN/logs/crds.log" 2>&1 || true
    KUBECONFIG="$RUN/admin.kubeconfig" start kai-binder "$TESTBED_BIN/kai-binder" \
      --metrics-bind-address "127.0.0.1:$KAI_BINDER_METRICS_PORT" \
      --health-probe-bind-address "127.0.0.1:$KAI_BINDER_HEALTH_PORT" \
      --resource-reservation-namespace kai-scheduler
    KUBECONFIG="$RUN/admin.kubeconfig" start kai-scheduler "$TESTBED_BIN/kai-scheduler" \
      --listen-address "127.0.0.1:$KAI_SCHED_PORT" --plugin-server-port "$KAI_PLUGIN_PORT" \
      --namespace kai-scheduler --schedule-period 1s
    # neither serves a readiness endpoint in v0.12: both must still run after a few seconds
    # (`false` in the group fails up.sh through its ERR trap, which stops what it started)
    sleep 5
    for p in kai-binder kai-scheduler; do
      kill -0 "$(cat "$RUN/pids/$p.pid")" 2>/dev/null || { tb_log "$p exited"; false; }
    done
    KAI_RUNNING=1
  elif [ "$KAI_REQUIRED" = 1 ]; then
    tb_log "TS_REQUIRE_KAI=1 but kai-scheduler/kai-binder were not built"; false
  else
    tb_log "TESTBED_KAI=1 but kai-scheduler/kai-binder were not built; skipped"
  fi
fi

# ---------------------------------------------------------------- Volcano (TESTBED_VOLCANO=1)
# vc-controller-manager's queue controller opens Queues (status.state Open: the scheduler only
# takes PodGroups from open queues) and its podgroup controller groups lone pods; vc-scheduler
# places PodGroups from queues on nodes and binds their pods. Both run as the admin, without
# leader election; no admission webhook (trainsched writes valid PodGroups; the scheduler works
# without it). The scheduler's configuration: gang, priority and proportion (queue capability)
# as Volcano's chart ships them, plus network-topology-aware (HyperNodes) as v1.15's
# docs/user-guide/how_to_use_network_topology_aware_scheduling.md adds it.
if [ "${TESTBED_VOLCANO:-0}" = 1 ]; then
  if volcano_built && grep -q '^volcano OK' "$RUN/crds.txt"; then
    cat > "$RUN/volcano-scheduler.conf" <<EOF
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
    arguments:
      weight: 10
EOF
    # named as their binaries (with the version): down.sh signals a pid only while it runs that name
    start "vc-controller-manager-$VOLCANO_VERSION" "$TESTBED_BIN/vc-controller-manager-$VOLCANO_VERSION" \
      --kubeconfig "$RUN/admin.kubeconfig" --leader-elect=false \
      --controllers queue-controller,podgroup-controller \
      --enable-healthz --healthz-address "127.0.0.1:$VC_CM_HEALTH_PORT" \
      --listen-address "127.0.0.1:$VC_CM_METRICS_PORT"
    start "vc-scheduler-$VOLCANO_VERSION" "$TESTBED_BIN/vc-scheduler-$VOLCANO_VERSION" \
      --kubeconfig "$RUN/admin.kubeconfig" --leader-elect=false \
      --scheduler-conf "$RUN/volcano-scheduler.conf" --schedule-period 1s \
      --enable-healthz --healthz-address "127.0.0.1:$VC_SCHED_HEALTH_PORT" \
      --listen-address "127.0.0.1:$VC_SCHED_METRICS_PORT" --cache-dumper=false
    wait_for "vc-controller-manager-$VOLCANO_VERSION" 120 curl_ok "http://127.0.0.1:$VC_CM_HEALTH_PORT/healthz" ok
    wait_for "vc-scheduler-$VOLCANO_VERSION" 120 curl_ok "http://127.0.0.1:$VC_SCHED_HEALTH_PORT/healthz" ok
    VOLCANO_RUNNING=1
  elif [ "$VOLCANO_REQUIRED" = 1 ]; then
    tb_log "TS_REQUIRE_VOLCANO=1 but Volcano $VOLCANO_VERSION was not built or its CRDs not installed"; false
  else
    tb_log "TESTBED_VOLCANO=1 but Volcano $VOLCANO_VERSION was not built or its CRDs not installed; skipped"
  fi
fi

# ---------------------------------------------------------------- env file
cat > "$RUN/env" <<EOF
export TESTBED_RUN=$RUN
export TESTBED_BIN=$TESTBED_BIN
export K8S_VERSION=$K8S_VERSION
export KUBECONFIG=$RUN/admin.kubeconfig
export TESTBED_SERVER=$SERVER
export TESTBED_CA=$PKI/ca.crt
export TESTBED_ADMIN_CERT=$PKI/admin.crt
export TESTBED_ADMIN_KEY=$PKI/admin.key
export TESTBED_SCHEDULER_KUBECONFIG=$RUN/scheduler.kubeconfig
export TESTBED_SCHEDULER_CONFIG=$SCHED_CFG
export TESTBED_SCHEDULER_HEALTHZ=https://127.0.0.1:$SCHED_PORT/healthz
export TESTBED_ETCD=http://127.0.0.1:$ETCD_PORT
export KUBECTL=$TESTBED_BIN/kubectl
export TESTBED_JOBSET_RUNNING=${JOBSET_RUNNING:-0}
export TESTBED_KWOK_RUNNING=${KWOK_RUNNING:-0}
export TESTBED_NATIVE_GANG=${TESTBED_NATIVE_GANG:-0}
export TESTBED_KUEUE_RUNNING=${KUEUE_RUNNING:-0}
export TESTBED_KAI_RUNNING=${KAI_RUNNING:-0}
export TESTBED_VOLCANO_RUNNING=${VOLCANO_RUNNING:-0}
# the CRD sets installed (not named TESTBED_CRDS: scripts/test.sh sources each env file, and
# its next up.sh would take that as its own choice of CRDs)
export TESTBED_CRDS_INSTALLED="$(awk '$2 == "OK" {printf "%s ", $1}' "$RUN/crds.txt")"
EOF

trap - ERR
tb_log "test bed up: $SERVER  (source $RUN/env; stop with down.sh)"
echo "$RUN/env"

#!/usr/bin/env bash
# The memory soak (docs/benchmarks.md, "Memory"): RSS of one `trainsched serve` running the
# reconciler, the extender and the webhook, with caches of NODES Nodes, PODS Pods and TRAINJOBS
# TrainJobs, then MINUTES minutes of churn (CHURN pods/s deleted and created, a TrainJob
# replaced every 20 s), sampled every SAMPLE s from /proc/PID/status; prints the series and the
# growth from the middle to the end of the churn (5th to 10th minute at the defaults).
# Builds the Release tree BUILD (default build-rel: trainsched, bench_memory), makes a
# self-signed serving pair for the webhook, starts the daemon (127.0.0.1, free ports, admin
# kubeconfig, leader election off) and runs build/bench/bench_memory. Starts its own test bed in
# /tmp/tb-bmem (trainer, jobset and coscheduling CRDs; no kube-scheduler use: the pods name no
# scheduler that runs) and stops it at the end, unless TRAINSCHED_TESTBED_RUN names a running one.
# About 20-30 minutes on 2 cores at the defaults (creating 50,000 pods takes most of the setup).
#   NODES=5000 PODS=50000 TRAINJOBS=1000 MINUTES=10 SAMPLE=30 CHURN=20 scripts/bench-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-rel}
NODES=${NODES:-5000}
PODS=${PODS:-50000}
TRAINJOBS=${TRAINJOBS:-1000}
MINUTES=${MINUTES:-10}
SAMPLE=${SAMPLE:-30}
CHURN=${CHURN:-20}
THREADS=${THREADS:-4}

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target trainsched bench_memory >/dev/null

own_bed=0
if [ -z "${TRAINSCHED_TESTBED_RUN:-}" ]; then
  export TRAINSCHED_TESTBED_RUN=/tmp/tb-bmem
  own_bed=1
fi
pid=
tmp=$(mktemp -d)
finish() {
  rc=$?
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
  if [ $own_bed = 1 ]; then
    tests/e2e/testbed/down.sh >/dev/null 2>&1 || true
  fi
  exit $rc
}
trap finish EXIT
trap 'exit 143' INT TERM
if [ $own_bed = 1 ]; then
  TESTBED_CRDS="jobset trainer coscheduling" TESTBED_JOBSET=0 TESTBED_KWOK=0 \
    APISERVER_EXTRA_ARGS="--etcd-compaction-interval=10s --watch-cache-sizes=secrets#0" \
    tests/e2e/testbed/up.sh >/dev/null
fi
# shellcheck disable=SC1091
. "$TRAINSCHED_TESTBED_RUN/env"

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 30000))
    ss -Htln "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
  done
}
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null
HTTP=$(free_port)
HTTPS=$(free_port)
"$BUILD/trainsched" serve --components reconciler,extender,webhook --kubeconfig "$KUBECONFIG" \
  --http-address "127.0.0.1:$HTTP" --https-address "127.0.0.1:$HTTPS" \
  --tls-cert-file "$tmp/tls.crt" --tls-key-file "$tmp/tls.key" --leader-elect=false \
  --kube-qps 200 --kube-burst 400 --log-level warn \
  >"$TESTBED_RUN/logs/trainsched-memory.log" 2>&1 &
pid=$!
for _ in $(seq 1 150); do
  [ "$(curl -s "http://127.0.0.1:$HTTP/readyz" 2>/dev/null | head -c 2)" = ok ] && break
  kill -0 "$pid" || { tail "$TESTBED_RUN/logs/trainsched-memory.log" >&2; exit 1; }
  sleep 0.2
done

start=$(date +%s)
echo "bench-memory: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) before the" \
  "run; kube-apiserver $K8S_VERSION; $(git describe --always --dirty 2>/dev/null || echo unknown)"
"$BUILD/bench/bench_memory" --pid "$pid" --nodes "$NODES" --pods "$PODS" \
  --trainjobs "$TRAINJOBS" --minutes "$MINUTES" --sample "$SAMPLE" --churn "$CHURN" \
  --threads "$THREADS"
echo
echo "bench-memory: done in $(($(date +%s) - start)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: NODES=$NODES PODS=$PODS TRAINJOBS=$TRAINJOBS MINUTES=$MINUTES SAMPLE=$SAMPLE" \
  "CHURN=$CHURN scripts/bench-memory.sh"

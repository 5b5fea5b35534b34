#!/usr/bin/env bash
# The Kubernetes client benchmarks (docs/benchmarks-kube.md) against a real kube-apiserver:
#   bench_kube --keep   creates NODES Nodes and PODS pods, then lists and decodes the pods as
#                       JSON and as protobuf, side by side, ROUNDS rounds;
#   bench_cache         the pod and Node informers on those objects: memory, watch throughput
#                       (WATCH_PODS more pods), publish cost against cache size;
#   bench_kube --cleanup  deletes the pods, the namespace and the Nodes.
# Builds the Release tree BUILD (default build-rel). Starts its own test bed in /tmp/tb-bench
# (TESTBED_CRDS=none TESTBED_KCM=0: no controller touches the pods) and stops it at the end,
# unless TRAINSCHED_TESTBED_RUN names a running one. The whole output goes to stdout; about
# 5-10 minutes on 2 cores.
#   PODS=50000 NODES=5000 WATCH_PODS=10000 THREADS=4 ROUNDS=5 NS=trainsched-bench scripts/bench-kube.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-rel}
PODS=${PODS:-50000}
NODES=${NODES:-5000}
WATCH_PODS=${WATCH_PODS:-10000}
THREADS=${THREADS:-4}
ROUNDS=${ROUNDS:-5}
NS=${NS:-trainsched-bench}

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target bench_kube bench_cache >/dev/null

own_bed=0
if [ -z "${TRAINSCHED_TESTBED_RUN:-}" ]; then
  export TRAINSCHED_TESTBED_RUN=/tmp/tb-bench
  own_bed=1
fi
finish() {
  rc=$?
  if [ -n "${KUBECONFIG:-}" ] && [ "${cleaned:-0}" = 0 ]; then
    "$BUILD/bench/bench_kube" --cleanup --ns "$NS" --threads "$THREADS" || true
  fi
  if [ $own_bed = 1 ]; then
    tests/e2e/testbed/down.sh >/dev/null 2>&1 || true
  fi
  exit $rc
}
trap finish EXIT
if [ $own_bed = 1 ]; then
  TESTBED_CRDS=none TESTBED_KCM=0 tests/e2e/testbed/up.sh >/dev/null
fi
# shellcheck disable=SC1091
. "$TRAINSCHED_TESTBED_RUN/env"

start=$(date +%s)
echo "bench-kube: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) before the run; kube-apiserver $K8S_VERSION;" \
  "$(git describe --always --dirty 2>/dev/null || echo unknown)"
echo
"$BUILD/bench/bench_kube" --pods "$PODS" --nodes "$NODES" --threads "$THREADS" \
  --rounds "$ROUNDS" --ns "$NS" --keep
echo
"$BUILD/bench/bench_cache" --ns "$NS" --watch-pods "$WATCH_PODS" --threads "$THREADS"
echo
cleaned=1
"$BUILD/bench/bench_kube" --cleanup --ns "$NS" --threads "$THREADS"
echo
echo "bench-kube: done in $(($(date +%s) - start)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: PODS=$PODS NODES=$NODES WATCH_PODS=$WATCH_PODS THREADS=$THREADS ROUNDS=$ROUNDS scripts/bench-kube.sh"

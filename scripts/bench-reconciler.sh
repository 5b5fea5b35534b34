#!/usr/bin/env bash
# The reconciler benchmark (docs/benchmarks-reconciler.md) against a real kube-apiserver:
# TRAINJOBS TrainJobs to their snapshot ConfigMap, JobSet, PodGroup and status, by the
# in-process reconciler (WORKERS workers) against writing the same objects directly with the
# same client from WORKERS threads, ROUNDS rounds with the order alternated.
# Builds the Release tree BUILD (default build-bench). Starts its own test bed in
# /tmp/tb-bench-reconciler (upstream CRDs, kube-controller-manager; no JobSet controller, no
# kwok: the JobSets stay as written) and stops it at the end, unless TRAINSCHED_TESTBED_RUN
# names a running one. The whole output goes to stdout; about 3 minutes on 2 cores.
#   TRAINJOBS=1000 WORKERS=4 ROUNDS=3 EXTRA=--no-suspend scripts/bench-reconciler.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-bench}
TRAINJOBS=${TRAINJOBS:-1000}
WORKERS=${WORKERS:-4}
ROUNDS=${ROUNDS:-3}
EXTRA=${EXTRA:-}

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target bench_reconciler >/dev/null

own_bed=0
if [ -z "${TRAINSCHED_TESTBED_RUN:-}" ]; then
  export TRAINSCHED_TESTBED_RUN=/tmp/tb-bench-reconciler
  own_bed=1
fi
finish() {
  rc=$?
  if [ $own_bed = 1 ]; then
    tests/e2e/testbed/down.sh >/dev/null 2>&1 || true
  fi
  exit $rc
}
trap finish EXIT
if [ $own_bed = 1 ]; then
  TESTBED_JOBSET=0 TESTBED_KWOK=0 tests/e2e/testbed/up.sh >/dev/null
fi
# shellcheck disable=SC1091
. "$TRAINSCHED_TESTBED_RUN/env"

start=$(date +%s)
echo "bench-reconciler: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) before the run; kube-apiserver $K8S_VERSION;" \
  "$(git describe --always --dirty 2>/dev/null || echo unknown)"
echo
# shellcheck disable=SC2086
"$BUILD/bench/bench_reconciler" --trainjobs "$TRAINJOBS" --workers "$WORKERS" --rounds "$ROUNDS" $EXTRA
echo
echo "bench-reconciler: done in $(($(date +%s) - start)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: TRAINJOBS=$TRAINJOBS WORKERS=$WORKERS ROUNDS=$ROUNDS${EXTRA:+ EXTRA=$EXTRA} scripts/bench-reconciler.sh"

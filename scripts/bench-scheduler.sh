#!/usr/bin/env bash
# The scheduler benchmarks (docs/benchmarks-scheduler.md) on the test bed's real kube-scheduler:
#   (p) the peers, side by side in one run (the default, ONLY=p): PEER_GANGS gangs of 8 per
#       workload on the same NODES Nodes, scheduled in turn by (A) plain kube-scheduler, (B)
#       kube-scheduler + trainsched's extender with coscheduling PodGroups, (C) scheduler-plugins'
#       kube-scheduler with Coscheduling on the same PodGroups, (D) kube-scheduler's own gang
#       scheduling with scheduling.k8s.io/v1beta1 PodGroups on Kubernetes 1.37 (v1alpha2 on 1.36;
#       TESTBED_K8S_VERSION=v1.37.2 starts the bed on 1.37.2), (E) trainsched's extender on C's
#       binary (kube-scheduler 1.34.7 as scheduler-plugins builds it, Coscheduling off: like for
#       like with C); B's and E's gang pods carry the gate trainsched.io/gang as the pod webhook
#       writes it (GATE=off: without, the held-bind fallback); one scheduler runs at a time
#       (restarted on the bed's port per run, fresh pods each run); workloads WORKLOADS:
#       gang (created gang after gang), interleaved, mixed (80 % plain pods), contended (only half
#       the gangs fit at once; a gang's pods are deleted 1 s after its last bind). Prints pods/s,
#       time to all bound, attempts per pod, partial gangs, CPU per pod and the ratios.
#       C's (and E's) binary is built on demand (tests/e2e/testbed/build.sh with TESTBED_SCHEDPLUGINS=1,
#       cached; a cold build takes minutes); D needs a bed with TESTBED_NATIVE_GANG=1 (the bed this
#       script starts has it).
#   (b) PODS pods on NODES Nodes, A plain (no extender) against B gang pods through trainsched as
#       extender, percentageOfNodesToScore 100 in both, ROUNDS rounds alternated: pods/s, B/A;
#   (c) GANGS_C gangs of 8: time until all are bound, and what kube-scheduler's retry backoff
#       takes of it (pods created gang after gang, then interleaved).
# Builds the Release tree BUILD (default build-rel: trainsched, bench_scheduler), starts
# `trainsched serve --components extender` on plain HTTP (127.0.0.1, free ports, admin
# kubeconfig, --kube-qps/--kube-burst KUBE_QPS), and runs build/bench/bench_scheduler, which
# restarts the bed's kube-scheduler per variant (tests/e2e/testbed/scheduler-ctl.sh) and
# restores its config at the end; this script restores it again on any exit. Starts its own test
# bed in /tmp/tb-bsched (TESTBED_CRDS=coscheduling; the controller-manager makes the
# ServiceAccount) and stops it at the end, unless TRAINSCHED_TESTBED_RUN names a running one.
# (b) and (c) with ONLY=b,c (about 10-15 minutes on 2 cores at their defaults).
#   NODES=5000 PEER_GANGS=200 VARIANTS=ABCDE WORKLOADS=gang,interleaved,mixed,contended \
#     SCHED_QPS=1000 KUBE_QPS=1000 scripts/bench-scheduler.sh
#   ONLY=b,c NODES=5000 PODS=5000 ROUNDS=2 GANGS_C=500 scripts/bench-scheduler.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-rel}
NODES=${NODES:-5000}
PODS=${PODS:-5000}
ROUNDS=${ROUNDS:-2}
GANGS_C=${GANGS_C:-500}
THREADS=${THREADS:-4}
SCHED_QPS=${SCHED_QPS:-1000}
KUBE_QPS=${KUBE_QPS:-1000}
ONLY=${ONLY:-p}
C_ORDER=${C_ORDER:-}
PEER_GANGS=${PEER_GANGS:-200}
VARIANTS=${VARIANTS:-ABCDE}
GATE=${GATE:-on}
WORKLOADS=${WORKLOADS:-gang,interleaved,mixed,contended}
STALL=${STALL:-30}

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target trainsched bench_scheduler >/dev/null

own_bed=0
if [ -z "${TRAINSCHED_TESTBED_RUN:-}" ]; then
  export TRAINSCHED_TESTBED_RUN=/tmp/tb-bsched
  own_bed=1
fi
ext_pid=
bench_pid=
finish() {
  rc=$?
  trap - INT TERM
  if [ -n "$bench_pid" ]; then # it restores the scheduler itself on TERM
    kill -TERM "$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
  fi
  case "$(tests/e2e/testbed/scheduler-ctl.sh status 2>/dev/null)" in
    "running "*"/scheduler-config.yaml") ;;
    *) tests/e2e/testbed/scheduler-ctl.sh restore >/dev/null 2>&1 || true ;;
  esac
  if [ -n "$ext_pid" ]; then
    kill -TERM "$ext_pid" 2>/dev/null || true
    wait "$ext_pid" 2>/dev/null || true
  fi
  if [ $own_bed = 1 ]; then
    tests/e2e/testbed/down.sh >/dev/null 2>&1 || true
  fi
  exit $rc
}
trap finish EXIT
trap 'exit 143' INT TERM
sp_bin=
case ",$ONLY," in *,p,*)
  case "$VARIANTS" in *C*|*E*)
    # scheduler-plugins' kube-scheduler (C), cached beside the bed's binaries; not fatal
    sp_bin=$(. tests/e2e/testbed/lib.sh && echo "$TESTBED_BIN/schedplugins-scheduler")
    sp_log=${TMPDIR:-/tmp}/bench-scheduler-build.$$.log
    [ -x "$sp_bin" ] || TESTBED_SCHEDPLUGINS=1 tests/e2e/testbed/build.sh >/dev/null 2>"$sp_log" || true
    [ -x "$sp_bin" ] || echo "bench-scheduler: no scheduler-plugins build ($sp_bin); C and E are skipped" \
      "(see $sp_log)" >&2
    ;;
  esac ;;
esac
if [ $own_bed = 1 ]; then
  TESTBED_NATIVE_GANG=1 TESTBED_CRDS=coscheduling tests/e2e/testbed/up.sh >/dev/null
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
EXT_PORT=$(free_port)
EXT_HTTP=$(free_port)
"$BUILD/trainsched" serve --components extender --kubeconfig "$KUBECONFIG" \
  --https-address "127.0.0.1:$EXT_PORT" --http-address "127.0.0.1:$EXT_HTTP" \
  --kube-qps "$KUBE_QPS" --kube-burst "$KUBE_QPS" --log-level warn \
  >"$TESTBED_RUN/logs/trainsched-extender.log" 2>&1 &
ext_pid=$!
for _ in $(seq 1 100); do
  [ "$(curl -s "http://127.0.0.1:$EXT_HTTP/readyz" 2>/dev/null | head -c 2)" = ok ] && break
  kill -0 "$ext_pid" || { tail "$TESTBED_RUN/logs/trainsched-extender.log" >&2; exit 1; }
  sleep 0.2
done

start=$(date +%s)
echo "bench-scheduler: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) before the" \
  "run; kube-scheduler $K8S_VERSION; $(git describe --always --dirty 2>/dev/null || echo unknown)"
EXTENDER_PID=$ext_pid "$BUILD/bench/bench_scheduler" \
  --extender "http://127.0.0.1:$EXT_PORT" --extender-metrics "http://127.0.0.1:$EXT_HTTP/metrics" \
  --sched-ctl tests/e2e/testbed/scheduler-ctl.sh --nodes "$NODES" --pods "$PODS" \
  --rounds "$ROUNDS" --gangs-c "$GANGS_C" --threads "$THREADS" --sched-qps "$SCHED_QPS" \
  ${ONLY:+--only "$ONLY"} ${C_ORDER:+--c-order "$C_ORDER"} ${sp_bin:+--schedplugins "$sp_bin"} \
  --peer-gangs "$PEER_GANGS" --variants "$VARIANTS" --gate "$GATE" --workloads "$WORKLOADS" --stall "$STALL" &
bench_pid=$!
wait "$bench_pid"
bench_pid=
echo
echo "bench-scheduler: done in $(($(date +%s) - start)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: NODES=$NODES PODS=$PODS ROUNDS=$ROUNDS GANGS_C=$GANGS_C SCHED_QPS=$SCHED_QPS" \
  "KUBE_QPS=$KUBE_QPS ONLY=$ONLY PEER_GANGS=$PEER_GANGS VARIANTS=$VARIANTS WORKLOADS=$WORKLOADS" \
  "GATE=$GATE STALL=$STALL${C_ORDER:+ C_ORDER=$C_ORDER} scripts/bench-scheduler.sh"

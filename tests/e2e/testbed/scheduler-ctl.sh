#!/usr/bin/env bash
# Restarts the kube-scheduler of a running test bed with another KubeSchedulerConfiguration
# (extender tests), keeping the bed's kubeconfig, certificates, ports and flags.
#
#   scheduler-ctl.sh restart FILE   stop the running kube-scheduler (by the PID up.sh recorded in
#                                   $RUN/pids/kube-scheduler.pid), then start it again from its
#                                   exact command line (saved from /proc/PID/cmdline on the first
#                                   call into $RUN/kube-scheduler.cmdline) with --config pointing
#                                   at a copy of FILE ($RUN/scheduler-config.active.yaml) to which
#                                   clientConnection and leaderElection are appended as up.sh does
#                                   when FILE does not set them; waits for /healthz (60 s)
#   scheduler-ctl.sh restart FILE BINARY
#                                   the same with another kube-scheduler build in place of the bed's
#                                   (scheduler-plugins' scheduler for the benchmark): same flags,
#                                   except --feature-gates, which name the bed release's gates
#   scheduler-ctl.sh restore        the same with the bed's own config ($RUN/scheduler-config.yaml)
#   scheduler-ctl.sh status         "running PID CONFIG" or "stopped"
#
# The run dir is $TRAINSCHED_TESTBED_RUN, or $TESTBED_RUN (as the env file sets it), or the
# default of up.sh. A PID is only signalled while /proc/PID/exe is the kube-scheduler binary.
# The log is appended to logs/kube-scheduler.log. Exit status 0 on success, 1 on failure.
set -euo pipefail
TRAINSCHED_TESTBED_RUN=${TRAINSCHED_TESTBED_RUN:-${TESTBED_RUN:-}}
[ -n "$TRAINSCHED_TESTBED_RUN" ] || unset TRAINSCHED_TESTBED_RUN
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RUN="$TESTBED_RUN"
PIDF="$RUN/pids/kube-scheduler.pid"
CMDF="$RUN/kube-scheduler.cmdline"
CWDF="$RUN/kube-scheduler.cwd"
LOG="$RUN/logs/kube-scheduler.log"
ORIG="$RUN/scheduler-config.yaml"
ACTIVE="$RUN/scheduler-config.active.yaml"
PKI="$RUN/pki"

[ -d "$RUN" ] || tb_die "no test bed in $RUN"

running_pid() {
  local pid exe
  [ -f "$PIDF" ] || return 1
  pid=$(cat "$PIDF")
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  case "$exe" in
    */kube-scheduler | */"kube-scheduler (deleted)") echo "$pid" ;;
    */schedplugins-scheduler | */"schedplugins-scheduler (deleted)") echo "$pid" ;;
    *) return 1 ;;
  esac
}

do_stop() {
  local pid
  pid=$(running_pid) || return 0
  if [ ! -s "$CMDF" ]; then
    cp "/proc/$pid/cmdline" "$CMDF.tmp" && mv "$CMDF.tmp" "$CMDF"
    readlink "/proc/$pid/cwd" >"$CWDF"
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  tb_log "stopped kube-scheduler (pid $pid)"
}

do_start() { # do_start CONFIG [BINARY]
  local cfg=$1 bin=${2:-} pid port t0=$SECONDS i
  [ -s "$CMDF" ] || tb_die "no saved command line ($CMDF)"
  local -a argv out
  mapfile -d '' argv <"$CMDF"
  for i in "${!argv[@]}"; do
    case "${argv[$i]}" in
      --config) argv[$((i + 1))]=$cfg ;;
      --config=*) argv[$i]="--config=$cfg" ;;
    esac
  done
  if [ -n "$bin" ]; then
    out=("$bin")
    for ((i = 1; i < ${#argv[@]}; i++)); do
      case "${argv[$i]}" in
        --feature-gates) i=$((i + 1)) ;;
        --feature-gates=*) ;;
        *) out+=("${argv[$i]}") ;;
      esac
    done
    argv=("${out[@]}")
  fi
  port=$(printf '%s\n' "${argv[@]}" | sed -n '/^--secure-port$/{n;p;q}; s/^--secure-port=//p' | head -n1)
  [ -n "$port" ] || tb_die "no --secure-port in $CMDF"
  (
    cd "$(cat "$CWDF" 2>/dev/null || echo /)"
    echo "--- $(date -u +%FT%TZ) scheduler-ctl.sh start --config $cfg" >>"$LOG"
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid "${argv[@]}" >>"$LOG" 2>&1 </dev/null
  ) &
  pid=$!
  echo "$pid" >"$PIDF"
  until [ "$(curl -sS --max-time 5 --cacert "$PKI/ca.crt" "https://127.0.0.1:$port/healthz" 2>/dev/null)" = ok ]; do
    kill -0 "$pid" 2>/dev/null || { tail -n 20 "$LOG" >&2; tb_die "kube-scheduler exited"; }
    ((SECONDS - t0 < 60)) || tb_die "kube-scheduler not healthy after 60 s"
    sleep 0.3
  done
  tb_log "started kube-scheduler (pid $pid) with $cfg, healthy after $((SECONDS - t0)) s"
}

case "${1:-}" in
  restart)
    [ -n "${2:-}" ] && [ -f "$2" ] || tb_die "usage: $0 restart FILE (a KubeSchedulerConfiguration)"
    cp "$2" "$ACTIVE.tmp"
    [ -z "$(tail -c1 "$ACTIVE.tmp")" ] || echo >>"$ACTIVE.tmp"
    grep -q '^clientConnection:' "$ACTIVE.tmp" ||
      printf 'clientConnection:\n  kubeconfig: %s\n' "$RUN/scheduler.kubeconfig" >>"$ACTIVE.tmp"
    grep -q '^leaderElection:' "$ACTIVE.tmp" || printf 'leaderElection:\n  leaderElect: false\n' >>"$ACTIVE.tmp"
    mv "$ACTIVE.tmp" "$ACTIVE"
    [ -z "${3:-}" ] || [ -x "$3" ] || tb_die "$3: not an executable"
    do_stop
    do_start "$ACTIVE" "${3:-}"
    ;;
  restore)
    do_stop
    do_start "$ORIG"
    ;;
  status)
    if pid=$(running_pid); then
      echo "running $pid $(tr '\0' '\n' <"/proc/$pid/cmdline" | sed -n '/^--config$/{n;p;q}; s/^--config=//p')"
    else echo stopped; fi
    ;;
  *) echo "usage: $0 restart FILE [BINARY] | restore | status" >&2; exit 2 ;;
esac

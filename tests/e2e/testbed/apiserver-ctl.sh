#!/usr/bin/env bash
# Stops and starts the kube-apiserver of a running test bed (fault tests: the API server down
# for a while, then back), by the PID up.sh recorded in $RUN/pids/kube-apiserver.pid.
#
#   apiserver-ctl.sh stop      save the running API server's exact command line (from
#                              /proc/PID/cmdline, so the flags are exactly the ones up.sh used,
#                              APISERVER_EXTRA_ARGS included) and its working directory into
#                              $RUN/kube-apiserver.cmdline / .cwd, then SIGTERM it (SIGKILL after
#                              APISERVER_CTL_GRACE seconds, default 15: it stops listening at
#                              once but may linger) and wait until it is gone
#   apiserver-ctl.sh start     start it again from the saved command line (same port, same etcd,
#                              same certificates; log appended to logs/kube-apiserver.log, new PID
#                              in pids/kube-apiserver.pid) and wait for /readyz (up to 120 s)
#   apiserver-ctl.sh restart   stop, then start
#   apiserver-ctl.sh status    "running PID" or "stopped"
#
# The run dir is $TRAINSCHED_TESTBED_RUN, or $TESTBED_RUN (as the env file sets it), or the
# default of up.sh. A PID is only signalled while /proc/PID/exe is the kube-apiserver binary.
# Exit status: 0 on success, 1 on failure (message on stderr).
set -euo pipefail
TRAINSCHED_TESTBED_RUN=${TRAINSCHED_TESTBED_RUN:-${TESTBED_RUN:-}}
[ -n "$TRAINSCHED_TESTBED_RUN" ] || unset TRAINSCHED_TESTBED_RUN
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RUN="$TESTBED_RUN"
PIDF="$RUN/pids/kube-apiserver.pid"
CMDF="$RUN/kube-apiserver.cmdline"
CWDF="$RUN/kube-apiserver.cwd"
LOG="$RUN/logs/kube-apiserver.log"
PKI="$RUN/pki"

[ -d "$RUN" ] || tb_die "no test bed in $RUN"

running_pid() { # prints the PID when it runs the kube-apiserver binary
  local pid exe
  [ -f "$PIDF" ] || return 1
  pid=$(cat "$PIDF")
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  case "$exe" in */kube-apiserver | */"kube-apiserver (deleted)") echo "$pid" ;; *) return 1 ;; esac
}

server_url() { # the --secure-port of the saved command line
  local port
  port=$(tr '\0' '\n' <"$CMDF" | sed -n '/^--secure-port$/{n;p;q}; s/^--secure-port=//p' | head -n1)
  [ -n "$port" ] || tb_die "no --secure-port in $CMDF"
  echo "https://127.0.0.1:$port"
}

do_stop() {
  local pid
  pid=$(running_pid) || tb_die "kube-apiserver is not running (pid file $PIDF)"
  cp "/proc/$pid/cmdline" "$CMDF.tmp" && mv "$CMDF.tmp" "$CMDF"
  readlink "/proc/$pid/cwd" >"$CWDF"
  kill -TERM "$pid"
  for _ in $(seq 1 $((${APISERVER_CTL_GRACE:-15} * 10))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    tb_log "kube-apiserver (pid $pid) still running ${APISERVER_CTL_GRACE:-15} s after TERM; KILL"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  tb_log "stopped kube-apiserver (pid $pid)"
}

do_start() {
  local pid url t0=$SECONDS
  if pid=$(running_pid); then tb_die "kube-apiserver already running (pid $pid)"; fi
  [ -s "$CMDF" ] || tb_die "no saved command line ($CMDF): run '$0 stop' first"
  local -a argv
  mapfile -d '' argv <"$CMDF"
  url=$(server_url)
  (
    cd "$(cat "$CWDF" 2>/dev/null || echo /)"
    echo "--- $(date -u +%FT%TZ) apiserver-ctl.sh start" >>"$LOG"
    # it outlives this script: no descriptor of the caller may stay open in it (a test runner
    # waits for its output pipe to close), so close all but 0-2, which go to /dev/null and the
    # log; and its own session
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid "${argv[@]}" >>"$LOG" 2>&1 </dev/null
  ) &
  pid=$!
  echo "$pid" >"$PIDF"
  until [ "$(curl -sS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" \
    --key "$PKI/admin.key" "$url/readyz" 2>/dev/null)" = ok ]; do
    kill -0 "$pid" 2>/dev/null || { tail -n 20 "$LOG" >&2; tb_die "kube-apiserver exited"; }
    ((SECONDS - t0 < 120)) || tb_die "kube-apiserver not ready after 120 s"
    sleep 0.3
  done
  tb_log "started kube-apiserver (pid $pid), ready after $((SECONDS - t0)) s"
}

case "${1:-}" in
  stop) do_stop ;;
  start) do_start ;;
  restart) do_stop; do_start ;;
  status) if pid=$(running_pid); then echo "running $pid"; else echo stopped; fi ;;
  *) echo "usage: $0 stop|start|restart|status" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Stops the test bed started by up.sh (by the PIDs it recorded in the run dir) and removes the
# run dir. Order: the clients (controllers, scheduler, kwok) together, then kube-apiserver, then
# etcd. Each gets SIGTERM, and SIGKILL after 15 s. A PID is only signalled while it still runs
# the binary that up.sh started under that name.
# TESTBED_KEEP_RUN=1 keeps the run dir (logs, certificates) after stopping.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RUN="$TESTBED_RUN"
[ -d "$RUN" ] || { tb_log "nothing to stop: $RUN does not exist"; exit 0; }

ours() { # ours NAME PID: does PID still run the binary named NAME?
  local exe
  exe=$(readlink "/proc/$2/exe" 2>/dev/null) || return 1
  # a versioned peer binary (lib.sh: NAME-VERSION) runs under the pid name NAME
  case "$exe" in */"$1"|*/"$1 (deleted)"|*/"$1"-v[0-9]*) return 0 ;; esac
  tb_log "$1: pid $2 now runs '$exe', not ours; left alone"
  return 1
}
stop() { # stop NAME...: TERM all of them, wait for all, KILL what is left after 15 s
  local name pid i pids=() names=()
  for name in "$@"; do
    [ -f "$RUN/pids/$name.pid" ] || continue
    pid=$(cat "$RUN/pids/$name.pid")
    rm -f "$RUN/pids/$name.pid"
    kill -0 "$pid" 2>/dev/null && ours "$name" "$pid" || continue
    kill -TERM "$pid" 2>/dev/null && { pids+=("$pid"); names+=("$name"); }
  done
  [ "${#pids[@]}" -gt 0 ] || return 0
  for i in $(seq 1 150); do
    kill -0 "${pids[@]}" 2>/dev/null || break   # true while any is alive
    sleep 0.1
  done
  for i in "${!pids[@]}"; do
    if kill -0 "${pids[$i]}" 2>/dev/null; then
      tb_log "${names[$i]}: pid ${pids[$i]} did not stop on TERM; KILL"; kill -KILL "${pids[$i]}" 2>/dev/null
    fi
    tb_log "stopped ${names[$i]} (pid ${pids[$i]})"
  done
}

clients=()
for f in "$RUN"/pids/*.pid; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .pid)
  case "$n" in kube-apiserver|etcd) ;; *) clients+=("$n") ;; esac
done
[ "${#clients[@]}" -eq 0 ] || stop "${clients[@]}"
stop kube-apiserver
stop etcd

if [ "${TESTBED_KEEP_RUN:-0}" = 1 ]; then
  tb_log "run dir kept: $RUN"
else
  rm -rf "$RUN"
  tb_log "removed $RUN"
fi

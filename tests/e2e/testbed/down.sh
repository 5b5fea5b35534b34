#!/usr/bin/env bash
# Stops the test bed started by up.sh (by the PIDs it recorded) and removes its run dir.
# TESTBED_KEEP_RUN=1 keeps the run dir (logs, certificates) after stopping.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RUN="$TESTBED_RUN"
[ -d "$RUN" ] || { tb_log "nothing to stop: $RUN does not exist"; exit 0; }

stop() { # stop NAME: TERM, wait up to 15 s, then KILL; only if the PID still runs our binary
  local name=$1 f="$RUN/pids/$1.pid" pid exe i
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if ! kill -0 "$pid" 2>/dev/null; then rm -f "$f"; return 0; fi
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
  case "$exe" in
    */"$name"|*/"$name"" (deleted)") ;;
    *) tb_log "$name: pid $pid now runs '${exe:-?}', not ours; left alone"; rm -f "$f"; return 0 ;;
  esac
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    tb_log "$name: pid $pid did not stop on TERM; KILL"; kill -KILL "$pid" 2>/dev/null
  fi
  tb_log "stopped $name (pid $pid)"
  rm -f "$f"
}
# reverse order of start; anything else recorded in pids/ goes first
known="kube-controller-manager kube-scheduler kube-apiserver etcd"
for f in "$RUN"/pids/*.pid; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .pid)
  case " $known " in *" $n "*) ;; *) stop "$n" ;; esac
done
for n in $known; do stop "$n"; done

if [ "${TESTBED_KEEP_RUN:-0}" = 1 ]; then
  tb_log "run dir kept: $RUN"
else
  rm -rf "$RUN"
  tb_log "removed $RUN"
fi

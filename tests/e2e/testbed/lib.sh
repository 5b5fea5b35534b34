# shellcheck shell=bash disable=SC2034
# Shared settings for the test bed scripts (sourced, not run).
TESTBED_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
. "$TESTBED_DIR/versions.env"
TESTBED_CACHE_ROOT="${TRAINSCHED_TESTBED_CACHE:-${HOME:-/root}/.cache/trainsched-testbed}"
case "$K8S_VERSION" in
  "$K8S_VERSION_DEFAULT") TESTBED_K8S_MODDIR="$TESTBED_DIR/k8s" ;;
  "$K8S_VERSION_SECOND") TESTBED_K8S_MODDIR="$TESTBED_DIR/k8s-$K8S_VERSION" ;;
  *) printf '[testbed] ERROR: TESTBED_K8S_VERSION=%s is not one of the pinned versions %s %s (versions.env)\n' \
       "$K8S_VERSION" "$K8S_VERSION_DEFAULT" "$K8S_VERSION_SECOND" >&2; exit 2 ;;
esac
TESTBED_BIN_GIVEN=${TESTBED_BIN:+1}
TESTBED_BIN="${TESTBED_BIN:-$TESTBED_CACHE_ROOT/$K8S_VERSION/bin}"
# the version-independent binaries live under the default version's cache dir
TESTBED_BIN_DEFAULT="$TESTBED_CACHE_ROOT/$K8S_VERSION_DEFAULT/bin"
TESTBED_RUN="${TRAINSCHED_TESTBED_RUN:-/tmp/trainsched-testbed}"
# Peers whose binary name carries the version (NAME-VERSION in the bin dir): a version bump in
# versions.env finds no binary and builds anew, and worktrees pinned to different versions share
# one cache without running each other's build. The pid/log name stays NAME.
KUEUE_BIN="kueue-controller-${KUEUE_VERSION:-none}"

tb_log() { printf '[testbed %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
tb_die() { tb_log "ERROR: $*"; exit 1; }

# tb_moddir MODULE@VERSION: prints the module's directory in the Go module cache
# (downloading it through the module proxy when needed); prints nothing on failure.
tb_moddir() {
  (cd / && GOFLAGS=-mod=mod go mod download -json "$1" 2>/dev/null) \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

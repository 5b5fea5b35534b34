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

# Source trees of peers the module proxy does not serve: bare git repositories fetched beforehand,
# one per repository, at $TESTBED_SOURCE_MIRRORS/<owner>+<name>/repo (default /work/.mirror).
TESTBED_SOURCE_MIRRORS="${TESTBED_SOURCE_MIRRORS:-/work/.mirror}"
# tb_source_tree OWNER/NAME TAG DEST: unpacks the fetched repository github.com/OWNER/NAME at TAG
# into DEST (created; its files only, no .git). Returns 1 with a message saying what to fetch when
# the repository or the tag is missing; returns 2 when unpacking fails.
tb_source_tree() {
  local repo=$1 tag=$2 dest=$3 git_dir
  git_dir="$TESTBED_SOURCE_MIRRORS/${repo/\//+}/repo"
  if [ ! -d "$git_dir" ]; then
    tb_log "source of github.com/$repo not found at $git_dir: fetch it there as a bare git" \
      "repository (git clone --bare https://github.com/$repo $git_dir), or point TESTBED_SOURCE_MIRRORS elsewhere"
    return 1
  fi
  if ! git --git-dir="$git_dir" rev-parse -q --verify "refs/tags/$tag^{commit}" >/dev/null; then
    tb_log "tag $tag of github.com/$repo not in $git_dir: fetch it (git --git-dir=$git_dir fetch origin tag $tag)"
    return 1
  fi
  mkdir -p "$dest" && git --git-dir="$git_dir" archive "$tag" | tar -x -C "$dest" || {
    tb_log "unpacking github.com/$repo $tag into $dest failed"; return 2; }
}

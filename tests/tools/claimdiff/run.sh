#!/usr/bin/env bash
# ctest claimdiff: builds the Go differential (cached outside the repository, keyed by its
# sources; CGO_ENABLED=0 and -trimpath as the bed builds, so the two share Go's build cache)
# and runs it against trainsched's claimstatus. Skips (77) only when Go is absent.
# Usage: run.sh <claimstatus binary> [claimdiff flags...]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v go >/dev/null 2>&1 || { echo "SKIP: go is not installed"; exit 77; }
cache="${TRAINSCHED_TOOLS_CACHE:-$HOME/.cache/trainsched-tools}"
key="$(cat "$HERE/go.mod" "$HERE/go.sum" "$HERE"/*.go | sha256sum | cut -c1-16)"
bin="$cache/claimdiff-$key"
if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  echo "building claimdiff (k8s.io/kubernetes v1.36.3 packages; minutes when the Go cache is cold)"
  (cd "$HERE" && CGO_ENABLED=0 GOFLAGS="-mod=mod -trimpath -buildvcs=false" nice -n 10 go build -o "$bin.tmp.$$" .)
  mv "$bin.tmp.$$" "$bin"
fi
tool="$1"; shift
exec "$bin" -claimstatus "$tool" -n "${CLAIMDIFF_CASES:-1000}" -seed "${CLAIMDIFF_SEED:-1}" "$@"

#!/usr/bin/env bash
# Style checks that tools enforce (STYLE.md): banned libc calls and clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files -co --exclude-standard -- '*.c' '*.h' | grep -v '^build')
status=0
banned='(^|[^a-z_n])(sprintf|strcpy|strcat|strtok|atoi)[[:space:]]*\('
if grep -nE "$banned" $files; then
  echo "lint: the calls above are banned (use snprintf, memcpy with a length, strtol, ...)" >&2
  status=1
fi
if command -v clang-format >/dev/null; then
  bad=$(for f in $files; do clang-format --dry-run "$f" 2>&1 | grep -q warning && echo "$f"; done || true)
  if [ -n "$bad" ]; then
    echo "lint: not clang-formatted (run clang-format -i):" >&2
    echo "$bad" >&2
    status=1
  fi
fi
# the CRDs are generated from manifests/crds/generate.py: the committed YAML must match it
if ! python3 manifests/crds/generate.py --check; then
  echo "lint: manifests/crds is stale: run python3 manifests/crds/generate.py" >&2
  status=1
fi
[ $status -eq 0 ] && echo "lint: ok"
exit $status

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
  # --Werror: the exit status says it (a `| grep -q` here lost files to SIGPIPE under pipefail)
  bad=$(for f in $files; do clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
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
# the user docs stand alone: no path outside the repository (../shared/...) and no internal
# label of a scenario ("C58", "issue 5 item 7", "§2.1" of an internal reference); cite
# upstream by name and URL and explain in words
docs=$(git ls-files -co --exclude-standard -- 'docs/*.md' README.md)
internal='\.\./shared|shared/(reference|DESIGN|STYLE)|(^|[^A-Za-z0-9_./-])C[0-9]{2,3}([^A-Za-z0-9_]|$)|[Ii]ssue [0-9]+ item|(cases|trainer|protocols|integrations)\.md|§'
if grep -nE "$internal" $docs; then
  echo "lint: the docs above cite internal files or scenario labels: explain in words, cite upstream by name and URL" >&2
  status=1
fi
# a manifest quoted in the docs after "<!-- shipped: PATH -->" is the shipped one
if ! python3 - <<'PY'
import re, sys, yaml
bad = 0
for doc in ["docs/webhook.md"]:
    text = open(doc).read()
    for m in re.finditer(r"<!-- shipped: (\S+) -->\n```yaml\n(.*?)```", text, re.S):
        if list(yaml.safe_load_all(m.group(2))) != list(yaml.safe_load_all(open(m.group(1)))):
            print(f"lint: {doc}: the copy of {m.group(1)} differs from the file", file=sys.stderr)
            bad = 1
sys.exit(bad)
PY
then
  status=1
fi
[ $status -eq 0 ] && echo "lint: ok"
exit $status

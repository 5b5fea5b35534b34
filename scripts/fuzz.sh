#!/usr/bin/env bash
# Builds the libFuzzer targets under fuzz/ with clang (ASan + UBSan) and runs each for
# FUZZ_SECONDS (default 20) from its seed corpus in fuzz/corpus/<target>/. A crash or a
# sanitizer report fails the run and leaves the reproducer in the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${FUZZ_BUILD:-build-fuzz}
SECS=${FUZZ_SECONDS:-20}

CC=clang cmake -S . -B "$BUILD" -DTS_FUZZ=ON -DTS_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
root=$(pwd)
for bin in "$BUILD"/fuzz/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  seeds="$root/fuzz/corpus/${name#fuzz_}"
  work="$root/$BUILD/corpus-$name"
  mkdir -p "$work"
  echo "fuzz: $name for ${SECS}s"
  dirs=("$work")
  [ -d "$seeds" ] && dirs+=("$seeds")
  # -artifact_prefix keeps reproducers in the build folder
  "$bin" -max_total_time="$SECS" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$root/$BUILD/" "${dirs[@]}" > "$root/$BUILD/$name.log" 2>&1 || {
      tail -n 40 "$root/$BUILD/$name.log"; echo "fuzz: $name FAILED" >&2; exit 1; }
  grep -E '^stat::number_of_executed_units' "$root/$BUILD/$name.log" || true
done
echo "fuzz: all targets ran ${SECS}s without a finding"

#!/usr/bin/env bash
# The whole test suite, as CI runs it: lint, a build with AddressSanitizer + UBSan, every unit
# test through ctest, then each fuzz target for a bounded time (FUZZ_SECONDS, default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-test}

scripts/lint.sh
cmake -S . -B "$BUILD" -DTS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
(cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" -LE e2e)
scripts/fuzz.sh

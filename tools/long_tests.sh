#!/usr/bin/env bash
# minijax long tests: builds Release in build/ and runs the tests labelled `long` (tests/long/).
# Owns the run of the tests that .ci/run and tools/sanitize.sh skip (over 30 s or 2 GiB each).
#
# Usage: tools/long_tests.sh   (MINIJAX_JOBS=N to limit the build's and ctest's parallelism)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${MINIJAX_JOBS:-$(nproc)}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs" --target minijax_long_tests
start=$SECONDS
ctest --test-dir build -L long -j"$jobs" --output-on-failure
echo "long_tests.sh: the long tests ran in $((SECONDS - start)) s"

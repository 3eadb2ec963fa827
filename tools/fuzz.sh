#!/usr/bin/env bash
# minijax fuzzing: builds a libFuzzer target (tests/fuzz/fuzz_<target>.cc) in build-asan-ubsan/ and runs it.
# Owns the fuzz build's configuration, the run's options and the committed log tests/fuzz/logs/<target>.log.
#
# Usage: tools/fuzz.sh TARGET SECONDS [extra libFuzzer flags...]
#   TARGET   parser (or any tests/fuzz/fuzz_<name>.cc)
#   SECONDS  -max_total_time for the run
# The run starts from the checked-in seeds tests/fuzz/corpus/<target>/ (read only) plus the inputs
# earlier runs found, kept in build-asan-ubsan/fuzz/corpus/<target>/ (not committed). A crash, leak, hang
# (an input running over 10 s) or sanitizer report stops it and leaves the input in
# build-asan-ubsan/fuzz/artifacts/<target>/; turn each into a regression test (a corpus file and a googletest case).
# The log keeps the run's header, libFuzzer's INITED line, its last status lines and final stats.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${1:-}"
seconds="${2:-}"
if [ -z "$target" ] || [ -z "$seconds" ]; then
  echo "usage: tools/fuzz.sh TARGET SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
shift 2
[ -f "tests/fuzz/fuzz_${target}.cc" ] || { echo "fuzz.sh: no tests/fuzz/fuzz_${target}.cc" >&2; exit 2; }
for tool in clang-19 clang++-19; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (apt-get install clang-19 libclang-rt-19-dev)" >&2; exit 1; }
done

# The asan+ubsan build of tools/sanitize.sh (same configuration) with MINIJAX_FUZZ on: the
# library is shared, only the fuzzed sources gain coverage instrumentation and the targets are added.
build=build-asan-ubsan
grep -qx "MINIJAX_FUZZ:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null ||
  cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DMINIJAX_SANITIZE=address,undefined \
    -DMINIJAX_FUZZ=ON -DMINIJAX_BUILD_SAMPLES=OFF -DMINIJAX_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"${MINIJAX_JOBS:-2}" --target "minijax_fuzz_${target}"

seeds="tests/fuzz/corpus/${target}"
work="$build/fuzz/corpus/${target}"
artifacts="$build/fuzz/artifacts/${target}/"
log="tests/fuzz/logs/${target}.log"
full="$build/fuzz/${target}.log"
mkdir -p "$work" "$artifacts" "$(dirname "$log")"

export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
cmd=("$build/tests/minijax_fuzz_${target}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096
     -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts" "$@" "$work" "$seeds")
# What ran: recorded before the run (the tree may change while it runs).
started="$(date -u +%Y-%m-%dT%H:%MZ)"
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!tests/fuzz/logs' || echo ' (uncommitted changes)')"
set +e
"${cmd[@]}" >"$full" 2>&1
rc=$?
set -e

{
  echo "# tools/fuzz.sh $target $seconds: started $started, ended $(date -u +%Y-%m-%dT%H:%MZ), commit $commit"
  echo "# $(clang++-19 --version | head -1); seeds: $(find "$seeds" -type f | wc -l) files in $seeds"
  echo "# command: ${cmd[*]}"
  echo "# exit status: $rc ($([ $rc -eq 0 ] && echo 'no crash, leak or hang' || echo 'FOUND A FAILURE: see the report below and the artifact'))"
  grep -m1 -E "INITED" "$full" || true
  grep -E "^#[0-9]+" "$full" | grep -vE "INITED" | tail -n 5 || true
  if [ $rc -ne 0 ]; then
    grep -nE "ERROR|SUMMARY|terminate|what\(\)|artifact|Test unit written" "$full" | head -n 40 || true
  fi
  grep -E "^(Done|stat::)" "$full" || true
} >"$log"
cat "$log"
exit $rc

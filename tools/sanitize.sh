#!/usr/bin/env bash
# minijax sanitizer runs: builds the library and tests with one sanitizer in build-<mode>/ and runs them.
# Owns the sanitizer build configurations, the runtime options and which tests each mode runs.
#
# Usage: tools/sanitize.sh asan|ubsan|asan+ubsan|tsan [FOLDER...]
#   asan        AddressSanitizer (and LeakSanitizer) over the whole suite: every test CTest
#               registers (the folders' googletest binaries, the docs' blocks, the fuzz corpus
#               replays, the install consumer, the public-API list check)
#   ubsan       UndefinedBehaviorSanitizer over the whole suite
#   asan+ubsan  both in one build (what .ci/run uses, over core autodiff jit jit/runtime)
#   tsan        ThreadSanitizer over the runtime's tests (devices, copy engines, communicator,
#               executors) with OMP_NUM_THREADS=1: libgomp is not instrumented, and its barriers
#               look like races to tsan; oneTBB's task hand-offs, also uninstrumented, are told
#               to tsan by jit/runtime/parallel_for.h; tools/tsan.supp keeps libtbb's start-up
#               (which says why)
#   FOLDER...   test folders (tests/<folder>, also their CTest label) to build and run instead of
#               the mode's default; e.g. `tools/sanitize.sh asan+ubsan core autodiff jit`
#               (a nested folder's binary is named with `_` for `/`: jit/runtime is
#               minijax_jit_runtime_tests, its label jit/runtime)
#   Every mode skips the tests labelled `long` (tests/long/; tools/long_tests.sh runs them).
#
# Compiler: clang-19 (Debian's clang-19, runtimes in libclang-rt-19-dev), the same toolchain as
# the fuzzers (tools/fuzz.sh) and the LLVM the JIT links. Code LLVM generates at run time is not
# instrumented: sanitizers see the library, the runtime calls and the tests, not the kernels.
# Builds are RelWithDebInfo at -O1 -g1 without NDEBUG (assertions on); samples and benches off.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"
shift || true
case "$mode" in
  asan) flags="address" ;;
  ubsan) flags="undefined" ;;
  asan+ubsan) flags="address,undefined" ;;
  tsan) flags="thread" ;;
  *) echo "usage: tools/sanitize.sh asan|ubsan|asan+ubsan|tsan [FOLDER...]" >&2; exit 2 ;;
esac
for tool in clang-19 clang++-19; do
  command -v "$tool" >/dev/null || { echo "sanitize.sh: $tool not found (bash setup.sh installs clang-19 and libclang-rt-19-dev)" >&2; exit 1; }
done

build="build-${mode/+/-}"
jobs="${MINIJAX_JOBS:-$(nproc)}"

# What each mode runs. The whole suite is every target of the build and every test CTest registers
# (the install consumer is built with the same sanitizer flags against the installed library; the
# add_subdirectory consumer is disabled under sanitizers, tests/CMakeLists.txt says why).
folders=("$@")
whole_suite=0
tsan_filter=""
if [ ${#folders[@]} -eq 0 ]; then
  if [ "$mode" = tsan ]; then
    # The runtime: the allocator's locks and events, copy engines, the communicator
    # (tests/jit/runtime), the multi-device executor's device queues and collective sites
    # (tests/sharding), and offloaded programs whose copies run on the copy engines (tests/memory),
    # and the profiler, which records events from all of those threads (tests/profiler).
    folders=(jit/runtime sharding memory profiler)
    tsan_filter="^(Allocator|Event|CopyEngine|Communicator|CompiledSpmd|CompiledSpmdChild|ShardedJit|CollectivesExecutor|ReshardLowering|OffloadPlacement|OffloadPipelining|OffloadReport|SeedOffloadMemory|OffloadNamedCarryMemory|OffloadCapacity|Profiler)\\."
  else
    whole_suite=1
  fi
fi
targets=(minijax)
labels=()
for f in "${folders[@]}"; do
  [ -d "tests/$f" ] || { echo "sanitize.sh: no test folder tests/$f" >&2; exit 2; }
  targets+=("minijax_${f//\//_}_tests")
  labels+=("$f")
done
# The fuzz targets' corpus replays (label fuzz) run in every mode but tsan: one small binary each.
if [ "$mode" != tsan ]; then
  for src in tests/fuzz/fuzz_*.cc; do
    [ -f "$src" ] || continue
    name=$(basename "$src" .cc)
    targets+=("minijax_fuzz_replay_${name#fuzz_}")
  done
  labels+=(fuzz)
fi

# Without MPI (MINIJAX_WITH_MPI=OFF): the mpi tests are not in this run (LeakSanitizer reports
# OpenMPI's own allocations), and so CI builds the library without MPI too.
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DMINIJAX_SANITIZE="$flags" \
  -DMINIJAX_BUILD_SAMPLES=OFF -DMINIJAX_BUILD_BENCH=OFF -DMINIJAX_WITH_MPI=OFF >/dev/null
if [ "$whole_suite" = 1 ]; then
  cmake --build "$build" -j"$jobs"
  echo "sanitize.sh: built every target in ${SECONDS} s"
else
  cmake --build "$build" -j"$jobs" --target "${targets[@]}"
  echo "sanitize.sh: built ${targets[*]} in ${SECONDS} s"
fi

# Runtime options: every report fails its test (non-zero exit), with a stack trace.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp:${TSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/tools/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
# oneDNN's and libgomp's threads: one, passive (no spinning on a shared machine).
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive

# Tests labelled `long` (tests/long/: over 30 s or 2 GiB) are skipped in every mode, as by .ci/run.
ctest_args=(--test-dir "$build" --output-on-failure -LE long)
if [ "$whole_suite" = 1 ]; then
  echo "sanitize.sh: $mode ($flags) over the whole suite"
else
  label_re="^($(IFS='|'; echo "${labels[*]}"))\$"
  ctest_args+=(-L "$label_re")
  [ -n "$tsan_filter" ] && ctest_args+=(-R "$tsan_filter")
  echo "sanitize.sh: $mode ($flags) over ${folders[*]}${tsan_filter:+ (tests matching $tsan_filter)}"
fi
start=$SECONDS
ctest "${ctest_args[@]}" -j"$jobs"
echo "sanitize.sh: tests ran in $((SECONDS - start)) s"

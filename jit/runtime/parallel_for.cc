// minijax runtime parallel loops: the one translation unit that instantiates oneTBB's parallel_for
// (compiled without ThreadSanitizer, see parallel_for.h), and the ordering it tells tsan.
#include "jit/runtime/parallel_for.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

// In a tsan build this file is compiled with -fno-sanitize=thread and CMakeLists.txt defines
// MINIJAX_TSAN_RUNTIME, so that it still tells the runtime about the ordering.
#ifdef MINIJAX_TSAN_RUNTIME
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace minijax {

namespace {

// Under ThreadSanitizer, a release on `sync` orders what this thread did before it before what a
// thread does after its next acquire on `sync`.
void tsan_release([[maybe_unused]] void* sync) {
#ifdef MINIJAX_TSAN_RUNTIME
  __tsan_release(sync);
#endif
}
void tsan_acquire([[maybe_unused]] void* sync) {
#ifdef MINIJAX_TSAN_RUNTIME
  __tsan_acquire(sync);
#endif
}

}  // namespace

void parallel_for_blocks(int64_t n, int64_t grain, void (*block)(void* ctx, int64_t lo, int64_t hi), void* ctx) {
  // Two synchronization objects (their addresses only): `start` orders the caller before every
  // block, `end` every block before the caller's return. Blocks never acquire what another block
  // released, so tsan still sees a race between two blocks.
  char start = 0, end = 0;
  struct AcquireEnd {  // also when a block threw
    char* end;
    ~AcquireEnd() { tsan_acquire(end); }
  } acquire_end{&end};
  tsan_release(&start);
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, n, size_t(grain)),
      [&](const tbb::blocked_range<int64_t>& r) {
        tsan_acquire(&start);
        struct ReleaseEnd {
          char* end;
          ~ReleaseEnd() { tsan_release(end); }
        } release_end{&end};
        block(ctx, r.begin(), r.end());
      },
      tbb::simple_partitioner());
}

}  // namespace minijax

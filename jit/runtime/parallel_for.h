// minijax runtime parallel loops: oneTBB's parallel_for over blocks of [0, n), with the ordering
// oneTBB provides (caller before tasks, tasks before the return) told to ThreadSanitizer.
#pragma once
#include <cstdint>
#include <type_traits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#if defined(__SANITIZE_THREAD__)
#define MINIJAX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MINIJAX_TSAN 1
#endif
#endif

#ifdef MINIJAX_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace minijax {

namespace detail {

// Under ThreadSanitizer, a release on `sync` orders what this thread did before it before what a
// thread does after its next acquire on `sync` (the tsan interface's __tsan_release/acquire).
inline void tsan_release([[maybe_unused]] void* sync) {
#ifdef MINIJAX_TSAN
  __tsan_release(sync);
#endif
}
inline void tsan_acquire([[maybe_unused]] void* sync) {
#ifdef MINIJAX_TSAN
  __tsan_acquire(sync);
#endif
}

// The task oneTBB runs for a block. oneTBB hands it to a worker and waits for it inside libtbb,
// which Debian does not build with tsan, so tsan sees neither edge. The block acquires `sync`
// before the body (the caller released it before parallel_for) and releases it after (the caller
// acquires it when parallel_for returns). Only the reads of this object's own two fields come
// before the acquire: tools/tsan.supp names this operator as a top frame, nothing below it.
template <class Body>
struct TsanOrderedBlock {
  Body* body;
  char* sync;
  void operator()(const tbb::blocked_range<int64_t>& r) const {
    tsan_acquire(sync);
    (*body)(r.begin(), r.end());
    tsan_release(sync);
  }
};

}  // namespace detail

/// Calls body(lo, hi) for blocks [lo, hi) covering [0, n), each of at most `grain` indices
/// (oneTBB's simple_partitioner halves a range while it holds more than `grain`: the blocks depend
/// only on n and grain, never on the threads available), as oneTBB tasks; returns when all have
/// run. Exceptions from body propagate as
/// oneTBB propagates them (the first one, the other blocks cancelled).
template <class Body>
void parallel_for_blocks(int64_t n, int64_t grain, Body&& body) {
  char sync = 0;  // tsan's synchronization object for this loop (its address only)
  detail::tsan_release(&sync);
  detail::TsanOrderedBlock<std::remove_reference_t<Body>> block{&body, &sync};
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, size_t(grain)), block, tbb::simple_partitioner());
  detail::tsan_acquire(&sync);
}

}  // namespace minijax

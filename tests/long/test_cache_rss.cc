// Long test of the bounded compilation caches: 3,000 shapes through one jit under a 64 MB bound
// keep the process's resident memory bounded, and clear_caches() gives it back.
#include <gtest/gtest.h>

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <minijax/minijax.h>

namespace {

using mj::Array;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// The process's resident set size in MB (/proc/self/statm).
double rss_mb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return double(resident) * double(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// Before the bound, 2,000 shapes grew RSS by about 100-150 MB and nothing was ever freed.
TEST(CacheRss, ThreeThousandShapesUnderA64MegabyteBound) {
#ifndef NDEBUG
  GTEST_SKIP() << "Release only: RSS bounds are measured on the optimized build";
#endif
  if (kSanitized) GTEST_SKIP() << "a sanitizer's allocator keeps freed memory in quarantine";
  const mj::Config saved = mj::config();
  mj::config().compilation_cache_max_bytes = int64_t(64) << 20;
  auto f = [](const Array& x) { return x + 1.0f; };
  // Warm up: LLVM's and the runtime's one-time state (targets, thread pools) is not growth.
  mj::jit(f)(mj::full({1}, 0.5f));
  mj::clear_caches();
  malloc_trim(0);
  const double start = rss_mb();
  double peak = start;
  {
    auto jf = mj::jit(f);
    for (int64_t n = 2; n < 3002; ++n) {
      Array x = mj::full({n}, 0.5f);
      Array y = jf(x);
      ASSERT_EQ(y.data<float>()[n - 1], 1.5f) << "shape " << n;  // 0.5 + 1, exact in f32
      const mj::CompilationCacheStats s = mj::compilation_cache_stats();
      ASSERT_LE(s.bytes, size_t(64) << 20);
      if (n % 100 == 0) peak = std::max(peak, rss_mb());
    }
  }
  const double grown = rss_mb() - start;
  std::printf("start %.1f MB, peak %.1f MB, after 3000 shapes +%.1f MB\n", start, peak, grown);
  EXPECT_LT(peak - start, 100.0);
  EXPECT_LT(grown, 100.0);
  mj::clear_caches();
  malloc_trim(0);
  const double end = rss_mb();
  std::printf("after clear_caches() and malloc_trim(0): %.1f MB (%+.1f MB)\n", end, end - start);
  EXPECT_EQ(mj::compilation_cache_stats().code_bytes, 0u);
  EXPECT_LT(end - start, 10.0);
  mj::config().compilation_cache_max_bytes = saved.compilation_cache_max_bytes;
}

}  // namespace

// Tests of the bounded compilation caches: config().compilation_cache_max_bytes/_max_entries (LRU
// over executables, shared traces and Jit entries), clear_caches(), Jit::clear_cache(), the disk bound.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <minijax/minijax.h>

namespace {

namespace fs = std::filesystem;
using mj::Array;

Array ramp(const mj::Shape& shape, float scale = 1.0f, float offset = 0.0f) {
  Array a = Array::allocate(mj::ShapedArray{shape, mj::f32});
  float* p = a.mutable_data<float>();
  for (int64_t i = 0; i < a.size(); ++i) p[i] = float(i) * scale + offset;
  return a;
}

// Whether every element of `got` equals `want` (the eager result) bit for bit.
bool same(const Array& got, const Array& want) {
  if (got.aval().str() != want.aval().str()) return false;
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  for (int64_t i = 0; i < got.size(); ++i)
    if (g[i] != w[i]) return false;
  return true;
}

// Saves the cache settings and restores them (and empties the caches) after each test.
class CacheBounds : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = mj::config();
    mj::clear_caches();
  }
  void TearDown() override {
    mj::config().compilation_cache_max_bytes = saved_.compilation_cache_max_bytes;
    mj::config().compilation_cache_max_entries = saved_.compilation_cache_max_entries;
    mj::config().compilation_cache_dir = saved_.compilation_cache_dir;
    mj::config().compilation_cache_dir_max_bytes = saved_.compilation_cache_dir_max_bytes;
    mj::clear_caches();
  }
  // The accounting the bounds apply to, checked against the configured bounds.
  static void expect_within_bounds(const char* when) {
    const mj::CompilationCacheStats s = mj::compilation_cache_stats();
    if (mj::config().compilation_cache_max_bytes > 0) {
      EXPECT_LE(s.bytes, size_t(mj::config().compilation_cache_max_bytes)) << when;
    }
    if (mj::config().compilation_cache_max_entries > 0) {
      EXPECT_LE(s.entries + s.trace_entries, size_t(mj::config().compilation_cache_max_entries)) << when;
    }
  }
  mj::Config saved_;
};

// 600 distinct shapes of a one-operation function under an 8 MB bound: the accounting stays
// within the bound after every call, and every result equals eager (x + 1 is exact in f32).
// Release build: about 8 s on the 2-core development machine (600 compilations).
TEST_F(CacheBounds, SixHundredShapesStayWithinAnEightMegabyteBound) {
  mj::config().compilation_cache_max_bytes = int64_t(8) << 20;
  auto jf = mj::jit([](const Array& x) { return x + 1.0f; });
  const auto t0 = std::chrono::steady_clock::now();
  size_t max_bytes = 0;
  for (int64_t n = 1; n <= 600; ++n) {
    Array x = ramp({n}, 0.5f, -3.0f);
    ASSERT_TRUE(same(jf(x), x + 1.0f)) << "shape " << n;
    expect_within_bounds("after the call of shape {n}");
    max_bytes = std::max(max_bytes, mj::compilation_cache_stats().bytes);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const mj::CompilationCacheStats s = mj::compilation_cache_stats();
  std::printf("600 shapes: %.1f s, at most %zu bytes cached, %zu executables evicted\n", secs, max_bytes,
              size_t(s.evictions));
  // A one-operation executable counts about 10 KB (two pages of code and data, its texts), so
  // 600 may fit in 8 MB: a bound below what is cached now evicts at the next compile.
  EXPECT_GT(s.entries, 0u);
  mj::config().compilation_cache_max_bytes = int64_t(s.bytes / 2);
  Array x = ramp({601});
  ASSERT_TRUE(same(jf(x), x + 1.0f));
  expect_within_bounds("after lowering the bound");
  EXPECT_GT(mj::compilation_cache_stats().evictions, s.evictions);
  EXPECT_LT(mj::compilation_cache_stats().entries, s.entries);
}

// The counting memory manager's count of ORC code and data falls back to 0 once nothing holds an
// executable; a Compiled the test holds keeps its code loaded (and runnable) through clear_caches().
TEST_F(CacheBounds, OrcCodeMemoryReturnsToZeroAfterClearCaches) {
  {
    auto jf = mj::jit([](const Array& x) { return x * 3.0f - 2.0f; });
    for (int64_t n = 1; n <= 5; ++n) ASSERT_TRUE(same(jf(ramp({n})), ramp({n}) * 3.0f - 2.0f));
    EXPECT_GT(mj::compilation_cache_stats().code_bytes, 0u);
    EXPECT_EQ(mj::compilation_cache_stats().entries, 5u);
    auto compiled = jf.lower(ramp({7})).compile();
    mj::clear_caches();
    EXPECT_EQ(mj::compilation_cache_stats().entries, 0u);
    EXPECT_EQ(mj::compilation_cache_stats().trace_entries, 0u);
    const size_t held = compiled.executable()->object->code_bytes();
    EXPECT_GT(held, 0u);
    EXPECT_EQ(mj::compilation_cache_stats().code_bytes, held);  // only the Compiled's code is loaded
    EXPECT_TRUE(same(compiled(ramp({7})), ramp({7}) * 3.0f - 2.0f));
  }
  EXPECT_EQ(mj::compilation_cache_stats().code_bytes, 0u);
}

// Executables, shared traces and Jit entries share one least-recently-used order: with room for
// three signatures, using A before adding D evicts B (the least recently used), not A.
TEST_F(CacheBounds, EvictsTheLeastRecentlyUsedEntryFirst) {
  // Never shared: each signature is one Jit entry and one executable (2 budget entries).
  mj::JitOptions o;
  o.share_traces = mj::TraceSharing::never;
  auto jf = mj::jit([](const Array& x) { return x * x; }, o);
  mj::config().compilation_cache_max_entries = 6;
  Array a = ramp({11}), b = ramp({12}), c = ramp({13}), d = ramp({14});
  for (const Array* x : {&a, &b, &c}) ASSERT_TRUE(same(jf(*x), *x * *x));
  ASSERT_TRUE(same(jf(a), a * a));  // A is now the most recently used
  ASSERT_EQ(jf.trace_count(), 3);
  ASSERT_TRUE(same(jf(d), d * d));  // evicts B's entry and executable
  expect_within_bounds("after D");
  EXPECT_EQ(jf.cache_size(), 3u);
  const size_t generated = mj::compilation_cache_stats().generated;
  ASSERT_TRUE(same(jf(a), a * a));  // still cached: neither traced nor compiled
  ASSERT_TRUE(same(jf(c), c * c));
  EXPECT_EQ(jf.trace_count(), 4);
  EXPECT_EQ(mj::compilation_cache_stats().generated, generated);
  ASSERT_TRUE(same(jf(b), b * b));  // evicted: traced and compiled again
  EXPECT_EQ(jf.trace_count(), 5);
  EXPECT_EQ(mj::compilation_cache_stats().generated, generated + 1);
  expect_within_bounds("after B again");
}

// The executable cache's bound by bytes evicts executables that a Jit's entries refer to: the
// Jit compiles again, with correct results.
TEST_F(CacheBounds, AJitRecompilesAnExecutableTheBytesBoundEvicted) {
  auto jf = mj::jit([](const Array& x) { return x - 0.25f; });
  Array a = ramp({21}), b = ramp({22});
  ASSERT_TRUE(same(jf(a), a - 0.25f));
  const size_t one = mj::compilation_cache_stats().bytes;
  ASSERT_GT(one, 0u);
  mj::config().compilation_cache_max_bytes = int64_t(one + one / 4);  // room for one executable
  ASSERT_TRUE(same(jf(b), b - 0.25f));
  expect_within_bounds("after b");
  EXPECT_EQ(mj::compilation_cache_stats().entries, 1u);
  const size_t generated = mj::compilation_cache_stats().generated;
  ASSERT_TRUE(same(jf(a), a - 0.25f));  // a's executable was evicted: compiled again, not traced
  EXPECT_EQ(mj::compilation_cache_stats().generated, generated + 1);
  EXPECT_EQ(jf.trace_count(), 2);
}

// JAX's jitted.clear_cache(): this Jit's signatures are dropped (the shared traces of its
// callable too), so the next call traces again; another Jit is unaffected.
TEST_F(CacheBounds, JitClearCacheDropsThisJitsTraces) {
  auto f = [](const Array& x) { return x * 0.5f + 4.0f; };
  auto jf = mj::jit(f);
  auto other = mj::jit([](const Array& x) { return x * 0.5f - 4.0f; });
  Array x = ramp({9});
  ASSERT_TRUE(same(jf(x), x * 0.5f + 4.0f));
  ASSERT_TRUE(same(other(x), x * 0.5f - 4.0f));
  EXPECT_EQ(jf.trace_count(), 1);
  EXPECT_EQ(jf.cache_size(), 1u);
  jf.clear_cache();
  EXPECT_EQ(jf.cache_size(), 0u);
  EXPECT_EQ(other.cache_size(), 1u);
  ASSERT_TRUE(same(jf(x), x * 0.5f + 4.0f));
  EXPECT_EQ(jf.trace_count(), 2);  // the shared trace of f was dropped too
  ASSERT_TRUE(same(other(x), x * 0.5f - 4.0f));
  EXPECT_EQ(other.trace_count(), 1);
  // A second Jit of f finds the trace jf made again in the shared cache.
  auto again = mj::jit(f);
  ASSERT_TRUE(same(again(x), x * 0.5f + 4.0f));
  EXPECT_EQ(again.trace_count(), 0);
}

// A shared trace is owned by the shared cache; a Jit using it holds a reference, so evicting the
// cache's reference (clear_caches) leaves a running Jit intact, and trace_count counts only the
// traces the Jit made itself.
TEST_F(CacheBounds, SharedTracesAreCountedOnceAndOwnedByTheSharedCache) {
  auto f = [](const Array& x) { return x + x * 2.0f; };
  auto j1 = mj::jit(f);
  auto j2 = mj::jit(f);
  Array x = ramp({10});
  ASSERT_TRUE(same(j1(x), x + x * 2.0f));
  ASSERT_TRUE(same(j2(x), x + x * 2.0f));
  EXPECT_EQ(j1.trace_count(), 1);
  EXPECT_EQ(j2.trace_count(), 0);
  // Two Jit entries, one shared trace.
  EXPECT_EQ(mj::compilation_cache_stats().trace_entries, 3u);
  mj::clear_caches();
  EXPECT_EQ(mj::compilation_cache_stats().trace_entries, 0u);
  ASSERT_TRUE(same(j2(x), x + x * 2.0f));
  EXPECT_EQ(j2.trace_count(), 1);
}

// clear_caches() while another thread is inside jitted calls: every call finishes with the right
// result, and later calls compile again.
TEST_F(CacheBounds, ClearCachesWhileAnotherThreadCalls) {
  auto jf = mj::jit([](const Array& x) { return x * 2.0f + 1.0f; });
  Array big = ramp({1 << 18}, 0.001f);
  const Array want = big * 2.0f + 1.0f;
  std::atomic<int> wrong{0};
  std::thread caller([&] {
    for (int i = 0; i < 200; ++i)
      if (!same(jf(big), want)) ++wrong;
  });
  auto other = mj::jit([](const Array& x) { return x - 1.0f; });
  for (int i = 0; i < 50; ++i) {
    mj::clear_caches();
    Array y = ramp({int64_t(3 + i % 5)});
    if (!same(other(y), y - 1.0f)) ++wrong;
  }
  caller.join();
  EXPECT_EQ(wrong.load(), 0);
  mj::clear_caches();
  const size_t generated = mj::compilation_cache_stats().generated;
  ASSERT_TRUE(same(jf(big), want));
  EXPECT_EQ(mj::compilation_cache_stats().generated, generated + 1);  // compiled again
}

// A negative bound is a ValueError naming the setting and the user's line, at the next compile.
TEST_F(CacheBounds, NegativeBoundsAreValueErrorsAtTheNextCompile) {
  const char* settings[] = {"compilation_cache_max_bytes", "compilation_cache_max_entries",
                            "compilation_cache_dir_max_bytes"};
  for (int k = 0; k < 3; ++k) {
    mj::config().compilation_cache_max_bytes = k == 0 ? -1 : 0;
    mj::config().compilation_cache_max_entries = k == 1 ? -5 : 0;
    mj::config().compilation_cache_dir_max_bytes = k == 2 ? -7 : 0;
    auto jf = mj::jit([](const Array& x) { return x * 5.0f; });
    try {
      jf(ramp({int64_t(30 + k)}));
      ADD_FAILURE() << "no error for a negative " << settings[k];
    } catch (const mj::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(settings[k]), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("test_cache_bounds.cc"), std::string::npos) << e.what();
    }
  }
  mj::config().compilation_cache_max_bytes = 0;
  mj::config().compilation_cache_max_entries = 0;
  mj::config().compilation_cache_dir_max_bytes = 0;
  Array x = ramp({30});
  EXPECT_TRUE(same(mj::jit([](const Array& x) { return x * 5.0f; })(x), x * 5.0f));
}

// The cache files of `dir` (entry files only).
std::set<std::string> entry_files(const fs::path& dir) {
  std::set<std::string> out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".mjx") out.insert(e.path().filename().string());
  return out;
}

// The one file of `after` not in `before`.
std::string new_file(const std::set<std::string>& before, const std::set<std::string>& after) {
  std::string r;
  for (auto& f : after)
    if (!before.count(f)) r = f;
  return r;
}

fs::path fresh_dir(const char* name) {
  fs::path d = fs::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// compilation_cache_dir_max_bytes: a write that would pass the bound removes the least recently
// used entry files first (a read counts as a use).
TEST_F(CacheBounds, DiskCacheRemovesLeastRecentlyUsedFilesPastItsBound) {
  const fs::path dir = fresh_dir("mj-disk-bound");
  mj::config().compilation_cache_dir = dir.string();
  auto f = [](const Array& x) { return x * 2.0f + 1.0f; };
  Array a = ramp({41}), b = ramp({42}), c = ramp({43});
  std::set<std::string> files = entry_files(dir);
  ASSERT_TRUE(same(mj::jit(f)(a), a * 2.0f + 1.0f));
  const std::string fa = new_file(files, entry_files(dir));
  files = entry_files(dir);
  ASSERT_TRUE(same(mj::jit(f)(b), b * 2.0f + 1.0f));
  const std::string fb = new_file(files, entry_files(dir));
  ASSERT_FALSE(fa.empty());
  ASSERT_FALSE(fb.empty());
  const uintmax_t sa = fs::file_size(dir / fa), sb = fs::file_size(dir / fb);
  mj::config().compilation_cache_dir_max_bytes = int64_t(sa + sb + std::min(sa, sb) / 2);  // room for two
  // Use A: loaded from disk (no compilation), which marks its file used.
  mj::clear_caches();
  const mj::CompilationCacheStats before = mj::compilation_cache_stats();
  ASSERT_TRUE(same(mj::jit(f)(a), a * 2.0f + 1.0f));
  EXPECT_EQ(mj::compilation_cache_stats().persistent_hits, before.persistent_hits + 1);
  files = entry_files(dir);
  ASSERT_TRUE(same(mj::jit(f)(c), c * 2.0f + 1.0f));  // written: B (least recently used) is removed
  const std::string fc = new_file(files, entry_files(dir));
  EXPECT_FALSE(fc.empty());
  EXPECT_TRUE(fs::exists(dir / fa));
  EXPECT_FALSE(fs::exists(dir / fb));
  EXPECT_EQ(mj::compilation_cache_stats().persistent_evictions, before.persistent_evictions + 1);
  uintmax_t total = 0;
  for (auto& name : entry_files(dir)) total += fs::file_size(dir / name);
  EXPECT_LE(total, uintmax_t(mj::config().compilation_cache_dir_max_bytes));
  // An entry larger than the bound by itself is not written.
  mj::config().compilation_cache_dir_max_bytes = 16;
  files = entry_files(dir);
  Array d = ramp({44});
  ASSERT_TRUE(same(mj::jit(f)(d), d * 2.0f + 1.0f));
  EXPECT_EQ(entry_files(dir), files);
  fs::remove_all(dir);
}

// Another process removing an entry (its own bound) while this one is about to read it: this one
// compiles instead of failing, and counts no rejection.
TEST_F(CacheBounds, DiskEntryRemovedByAnotherProcessIsCompiled) {
  const fs::path dir = fresh_dir("mj-disk-removed");
  mj::config().compilation_cache_dir = dir.string();
  auto f = [](const Array& x) { return x * 6.0f; };
  Array a = ramp({51});
  ASSERT_TRUE(same(mj::jit(f)(a), a * 6.0f));
  ASSERT_EQ(entry_files(dir).size(), 1u);
  mj::clear_caches();
  for (auto& name : entry_files(dir)) fs::remove(dir / name);  // what the other process did
  const mj::CompilationCacheStats before = mj::compilation_cache_stats();
  ASSERT_TRUE(same(mj::jit(f)(a), a * 6.0f));
  const mj::CompilationCacheStats after = mj::compilation_cache_stats();
  EXPECT_EQ(after.generated, before.generated + 1);
  EXPECT_EQ(after.persistent_hits, before.persistent_hits);
  EXPECT_EQ(after.persistent_rejected, before.persistent_rejected);
  EXPECT_EQ(entry_files(dir).size(), 1u);  // written again
  fs::remove_all(dir);
}

}  // namespace

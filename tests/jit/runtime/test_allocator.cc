// Tests of the allocator every Buffer goes through (core/allocator.h, jit/runtime/allocator.h) and
// of mj::memory_stats: exact byte counts, peaks, pool bytes, host vs device kinds, limits, reuse.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <minijax/minijax.h>
#include <string>
#include <thread>
#include <vector>

#include "jit/runtime/allocator.h"

namespace {

using mj::MemoryKind;
using mj::MemoryStats;

MemoryStats dev0() { return mj::memory_stats(0); }
MemoryStats host(MemoryKind k = MemoryKind::pinned_host) { return mj::memory_stats(0, k); }

/// Restores the memory limits of mj::config() when a test ends (also when it fails).
struct LimitGuard {
  int64_t dev = mj::config().device_memory_bytes, hst = mj::config().host_memory_bytes;
  ~LimitGuard() {
    mj::config().device_memory_bytes = dev;
    mj::config().host_memory_bytes = hst;
  }
};

TEST(Allocator, RuntimePoolIsInstalledAtLoadTime) {
  EXPECT_EQ(mj::allocator().name(), "pool");
  EXPECT_EQ(&mj::allocator(), static_cast<mj::Allocator*>(&mj::runtime_allocator()));
}

// Size classes by hand: <= 512 B round up to a multiple of 64 (at least 64); above, p < n <= 2p
// rounds up to p + k*p/4 for the smallest k in 1..4.
TEST(Allocator, SizeClassesByHand) {
  using P = mj::PoolAllocator;
  EXPECT_EQ(P::size_class(0), 64u);
  EXPECT_EQ(P::size_class(1), 64u);
  EXPECT_EQ(P::size_class(64), 64u);
  EXPECT_EQ(P::size_class(65), 128u);
  EXPECT_EQ(P::size_class(400), 448u);
  EXPECT_EQ(P::size_class(512), 512u);
  EXPECT_EQ(P::size_class(513), 640u);    // p = 512, step 128
  EXPECT_EQ(P::size_class(641), 768u);
  EXPECT_EQ(P::size_class(800), 896u);
  EXPECT_EQ(P::size_class(1024), 1024u);
  EXPECT_EQ(P::size_class(1025), 1280u);  // p = 1024, step 256
  EXPECT_EQ(P::size_class(4000), 4096u);  // p = 2048, step 512: 2048 + 4*512
  EXPECT_EQ(P::size_class(262144), 262144u);
  EXPECT_EQ(P::size_class(262145), 327680u);  // p = 262144, step 65536
  EXPECT_EQ(P::size_class(1048575), 1048576u);  // p = 524288, step 131072: the last class, 1 MiB
  EXPECT_EQ(P::size_class(1048576), 1048576u);  // 1 MiB itself is still small (a power of two)
}

// Above 1 MiB a block is the request rounded up to a multiple of 4096 (a page): ceil(n / 4096)
// pages. By hand: 1048577 -> 257 pages = 1052672; 1638400 = 400 pages exactly; 1638401 -> 401
// pages = 1642496; 16000001 -> 3907 pages = 16003072 (3906 * 4096 = 15998976 is too small);
// 16 MiB = 4096 pages exactly. Under the small classes 1638400 would be 1835008 (1 MiB + 3/4).
TEST(Allocator, LargeRequestsArePageRounded) {
  using P = mj::PoolAllocator;
  EXPECT_EQ(P::size_class(1048577), 1052672u);
  EXPECT_EQ(P::size_class(1638400), 1638400u);
  EXPECT_EQ(P::size_class(1638401), 1642496u);
  EXPECT_EQ(P::size_class(16000001), 16003072u);
  EXPECT_EQ(P::size_class(16777216), 16777216u);
  // Every size from just above 1 MiB to 16 MiB (a prime stride, so remainders vary): a page
  // multiple, at least the request, less than a page over, so under 4096 / (1 MiB) = 0.39%.
  for (size_t n = (size_t(1) << 20) + 1; n <= (size_t(16) << 20); n += 40009) {
    const size_t b = P::size_class(n);
    ASSERT_EQ(b % 4096, 0u) << n;
    ASSERT_GE(b, n);
    ASSERT_LT(b - n, 4096u) << n;
    ASSERT_LT(double(b - n) / double(n), 0.004) << n;
  }
  // The installed pool counts a large Buffer at that size.
  const MemoryStats before = dev0();
  {
    mj::Buffer b(1638401, MemoryKind::device, 0, mj::Init::uninitialized);
    EXPECT_EQ(dev0().bytes_in_use - before.bytes_in_use, 1642496);
    EXPECT_EQ(dev0().num_allocs - before.num_allocs, 1);
  }
  EXPECT_EQ(dev0().bytes_in_use, before.bytes_in_use);
}

// A private pool (its counters start at 0): a freed large block is cached by its exact page
// size; a request rounding to that size takes it (nothing new from the system), a request of
// another page count does not.
TEST(Allocator, FreedLargeBlocksAreReusedByTheSameRoundedSize) {
  mj::PoolAllocator pool;
  auto st = [&] { return pool.stats(0, MemoryKind::device); };
  void* p = pool.allocate(1638401, MemoryKind::device, 0);  // 401 pages = 1642496 B
  EXPECT_EQ(st().pool_bytes, 1642496);
  EXPECT_EQ(st().peak_pool_bytes, 1642496);
  pool.deallocate(p, 1638401, MemoryKind::device, 0);
  EXPECT_EQ(st().bytes_in_use, 0);
  EXPECT_EQ(st().bytes_reserved, 1642496);
  EXPECT_EQ(st().pool_bytes, 1642496);  // cached, not returned
  // 1642496 B is 401 pages as well: the same block, pool_bytes unchanged, one more allocation.
  void* q = pool.allocate(1642496, MemoryKind::device, 0);
  EXPECT_EQ(q, p);
  EXPECT_EQ(st().bytes_in_use, 1642496);
  EXPECT_EQ(st().bytes_reserved, 0);
  EXPECT_EQ(st().pool_bytes, 1642496);
  EXPECT_EQ(st().num_allocs, 2);
  pool.deallocate(q, 1642496, MemoryKind::device, 0);
  // 1642497 B is 402 pages (1646592 B): not the cached block, fresh memory.
  void* r = pool.allocate(1642497, MemoryKind::device, 0);
  EXPECT_NE(r, p);
  EXPECT_EQ(st().bytes_in_use, 1646592);
  EXPECT_EQ(st().pool_bytes, 1642496 + 1646592);
  EXPECT_EQ(st().peak_pool_bytes, 1642496 + 1646592);
  pool.deallocate(r, 1642497, MemoryKind::device, 0);
  // release_cached returns both; the peak stays until reset_peak.
  pool.release_cached();
  EXPECT_EQ(st().pool_bytes, 0);
  EXPECT_EQ(st().peak_pool_bytes, 1642496 + 1646592);
  pool.reset_peak(0);
  EXPECT_EQ(st().peak_pool_bytes, 0);
}

// Several blocks of one size and blocks of other sizes cached together: each request gets a
// block of its own size, the last freed of that size first (LIFO), until none is left.
TEST(Allocator, LargeBlocksOfSeveralSizesComeBackBySize) {
  mj::PoolAllocator pool;
  const size_t s1 = 2 << 20, s2 = (3 << 20) + 1, s3 = (5 << 20) - 7;
  void* a1 = pool.allocate(s1, MemoryKind::device, 0);
  void* a2 = pool.allocate(s1, MemoryKind::device, 0);
  void* b = pool.allocate(s2, MemoryKind::device, 0);
  void* c = pool.allocate(s3, MemoryKind::device, 0);
  const int64_t obtained = pool.stats(0, MemoryKind::device).pool_bytes;
  // By hand: 2 MiB twice (exact pages), 3 MiB + 1 -> 769 pages, 5 MiB - 7 -> 1280 pages.
  EXPECT_EQ(obtained, 2 * 2097152 + 769 * 4096 + 1280 * 4096);
  pool.deallocate(a1, s1, MemoryKind::device, 0);
  pool.deallocate(c, s3, MemoryKind::device, 0);
  pool.deallocate(b, s2, MemoryKind::device, 0);
  pool.deallocate(a2, s1, MemoryKind::device, 0);
  EXPECT_EQ(pool.stats(0, MemoryKind::device).bytes_reserved, obtained);
  EXPECT_EQ(pool.allocate(s3, MemoryKind::device, 0), c);
  EXPECT_EQ(pool.allocate(s1, MemoryKind::device, 0), a2);
  EXPECT_EQ(pool.allocate(s1, MemoryKind::device, 0), a1);
  EXPECT_EQ(pool.allocate(s2, MemoryKind::device, 0), b);
  const MemoryStats all = pool.stats(0, MemoryKind::device);
  EXPECT_EQ(all.bytes_reserved, 0);
  EXPECT_EQ(all.pool_bytes, obtained);
  EXPECT_EQ(all.bytes_in_use, obtained);
  for (void* x : {a1, a2}) pool.deallocate(x, s1, MemoryKind::device, 0);
  pool.deallocate(b, s2, MemoryKind::device, 0);
  pool.deallocate(c, s3, MemoryKind::device, 0);
}

// Limits with large blocks: the cache is released before fresh memory would pass the limit;
// bytes in use past it throw and change nothing; a block over max_cached_bytes goes back.
TEST(Allocator, LargeBlocksRespectTheLimitAndTheCacheCap) {
  LimitGuard guard;
  mj::config().device_memory_bytes = 4 << 20;
  mj::PoolAllocator pool;
  auto st = [&] { return pool.stats(0, MemoryKind::device); };
  void* a = pool.allocate((2 << 20) + 1, MemoryKind::device, 0);  // 513 pages = 2101248 B
  pool.deallocate(a, (2 << 20) + 1, MemoryKind::device, 0);
  EXPECT_EQ(st().pool_bytes, 2101248);
  // 3 MiB fresh: 2101248 + 3145728 > 4 MiB, so the cached block goes back first.
  void* b = pool.allocate(3 << 20, MemoryKind::device, 0);
  EXPECT_EQ(st().pool_bytes, 3145728);
  EXPECT_EQ(st().bytes_reserved, 0);
  const MemoryStats before = st();
  EXPECT_THROW(pool.allocate(2 << 20, MemoryKind::device, 0), mj::ResourceExhaustedError);
  const MemoryStats after = st();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.pool_bytes, before.pool_bytes);
  EXPECT_EQ(after.num_allocs, before.num_allocs);
  pool.deallocate(b, 3 << 20, MemoryKind::device, 0);

  mj::PoolAllocator capped(1 << 20);  // caches at most 1 MiB: a 2 MiB block is not kept
  void* c = capped.allocate(2 << 20, MemoryKind::device, 0);
  capped.deallocate(c, 2 << 20, MemoryKind::device, 0);
  EXPECT_EQ(capped.stats(0, MemoryKind::device).bytes_reserved, 0);
  EXPECT_EQ(capped.stats(0, MemoryKind::device).pool_bytes, 0);
  EXPECT_EQ(capped.stats(0, MemoryKind::device).peak_pool_bytes, 2 << 20);
}

// pool_bytes is per space: both host kinds report the one host pool (in use of both + cached).
TEST(Allocator, PoolBytesCountInUsePlusCachedPerSpace) {
  mj::PoolAllocator pool;
  void* h = pool.allocate(1000, MemoryKind::pinned_host, 0);    // 1024
  void* u = pool.allocate(3000, MemoryKind::unpinned_host, 3);  // 3072 (2048 + 2 * 512)
  void* d = pool.allocate(100, MemoryKind::device, 0);          // 128
  for (MemoryKind k : {MemoryKind::pinned_host, MemoryKind::unpinned_host}) {
    EXPECT_EQ(pool.stats(5, k).pool_bytes, 1024 + 3072);
    EXPECT_EQ(pool.stats(5, k).peak_pool_bytes, 1024 + 3072);
  }
  EXPECT_EQ(pool.stats(0, MemoryKind::device).pool_bytes, 128);
  EXPECT_EQ(pool.stats(1, MemoryKind::device).pool_bytes, 0);  // device 1 never allocated
  pool.deallocate(u, 3000, MemoryKind::unpinned_host, 3);
  EXPECT_EQ(pool.stats(0, MemoryKind::pinned_host).pool_bytes, 1024 + 3072);  // 3072 cached
  EXPECT_EQ(pool.stats(0, MemoryKind::pinned_host).bytes_reserved, 3072);
  pool.release_cached();
  EXPECT_EQ(pool.stats(0, MemoryKind::unpinned_host).pool_bytes, 1024);
  pool.reset_peak(0);
  EXPECT_EQ(pool.stats(0, MemoryKind::unpinned_host).peak_pool_bytes, 1024);
  EXPECT_EQ(pool.stats(0, MemoryKind::device).peak_pool_bytes, 128);
  pool.deallocate(h, 1000, MemoryKind::pinned_host, 0);
  pool.deallocate(d, 100, MemoryKind::device, 0);
  // Core's counting allocator has no pool: 0.
  auto counting = mj::make_counting_allocator();
  void* c = counting->allocate(5000, MemoryKind::device, 0);
  EXPECT_EQ(counting->stats(0, MemoryKind::device).pool_bytes, 0);
  counting->deallocate(c, 5000, MemoryKind::device, 0);
}

TEST(Allocator, BytesInUseRiseByTheRoundedSizeAndFall) {
  struct Case {
    mj::Shape shape;
    mj::DType dtype;
    int64_t bytes;  // by hand: elements * itemsize rounded to the size class
  };
  const Case cases[] = {
      {{3, 5}, mj::f32, 64},         // 60 B -> 64
      {{100}, mj::f32, 448},         // 400 B -> 7 * 64
      {{10, 10}, mj::f64, 896},      // 800 B -> 512 + 3 * 128
      {{1000}, mj::i32, 4096},       // 4000 B -> 2048 + 4 * 512
      {{128, 512}, mj::f32, 262144}, // 262144 B, a power of two
      {{0, 7}, mj::f32, 64},         // no elements: a 64-byte block all the same
      {{}, mj::bf16, 64},            // 2 B -> 64
  };
  for (const auto& c : cases) {
    const MemoryStats before = dev0(), host_before = host();
    {
      mj::Array a = mj::zeros(c.shape, c.dtype);
      const MemoryStats during = dev0();
      EXPECT_EQ(during.bytes_in_use - before.bytes_in_use, c.bytes) << mj::shape_str(c.shape);
      EXPECT_EQ(during.num_allocs - before.num_allocs, 1) << mj::shape_str(c.shape);
      EXPECT_EQ(host().bytes_in_use, host_before.bytes_in_use);  // a device array
    }
    EXPECT_EQ(dev0().bytes_in_use, before.bytes_in_use) << mj::shape_str(c.shape);
  }
  // Array::empty and Array::allocate count alike.
  const int64_t b0 = dev0().bytes_in_use;
  mj::Array e = mj::Array::empty(mj::ShapedArray{{10, 10}, mj::f64});
  mj::Array z = mj::Array::allocate(mj::ShapedArray{{10, 10}, mj::f64});
  EXPECT_EQ(dev0().bytes_in_use - b0, 2 * 896);
}

TEST(Allocator, PeakTracksAKnownSequenceAndResets) {
  mj::reset_peak_memory_stats(0);
  const int64_t base = dev0().bytes_in_use;
  EXPECT_EQ(dev0().peak_bytes_in_use, base);
  {
    auto a = std::make_unique<mj::Array>(mj::zeros({3, 5}, mj::f32));  // 64
    mj::Array b = mj::zeros({100}, mj::f32);                           // 448
    EXPECT_EQ(dev0().peak_bytes_in_use, base + 64 + 448);
    a.reset();
    EXPECT_EQ(dev0().peak_bytes_in_use, base + 512);  // freeing keeps the peak
    mj::Array c = mj::zeros({10, 10}, mj::f64);      // 896: in use 448 + 896 = 1344
    EXPECT_EQ(dev0().bytes_in_use, base + 1344);
    EXPECT_EQ(dev0().peak_bytes_in_use, base + 1344);
  }
  EXPECT_EQ(dev0().bytes_in_use, base);
  EXPECT_EQ(dev0().peak_bytes_in_use, base + 1344);
  mj::reset_peak_memory_stats(0);
  EXPECT_EQ(dev0().peak_bytes_in_use, base);
}

TEST(Allocator, BadDeviceIdsAndKindNamesThrowValueError) {
  const int n = mj::num_devices();
  EXPECT_THROW(mj::memory_stats(-1), mj::ValueError);
  EXPECT_THROW(mj::memory_stats(n), mj::ValueError);
  EXPECT_THROW(mj::memory_stats(n, "pinned_host"), mj::ValueError);
  EXPECT_THROW(mj::reset_peak_memory_stats(n), mj::ValueError);
  EXPECT_THROW(mj::memory_stats(0, "hbm"), mj::ValueError);
  EXPECT_NO_THROW(mj::memory_stats(n - 1, "unpinned_host"));
  EXPECT_THROW(mj::install_allocator(nullptr), mj::ValueError);
}

TEST(Allocator, PinnedHostArraysAreCountedUnderTheHostKind) {
  mj::Array x = mj::zeros({3, 5}, mj::f32);  // 64 B on the device
  const MemoryStats d0 = dev0(), h0 = host(), u0 = host(MemoryKind::unpinned_host);
  {
    mj::Array y = mj::device_put(x, "pinned_host");
    EXPECT_EQ(y.memory_kind(), MemoryKind::pinned_host);
    EXPECT_EQ(host().bytes_in_use - h0.bytes_in_use, 64);
    EXPECT_EQ(mj::memory_stats(0, "pinned_host").bytes_in_use, host().bytes_in_use);
    EXPECT_EQ(dev0().bytes_in_use, d0.bytes_in_use);
    EXPECT_EQ(host(MemoryKind::unpinned_host).bytes_in_use, u0.bytes_in_use);
    // Host kinds are the process's: the last device reports the same figures.
    EXPECT_EQ(mj::memory_stats(mj::num_devices() - 1, MemoryKind::pinned_host).bytes_in_use,
              host().bytes_in_use);
  }
  EXPECT_EQ(host().bytes_in_use, h0.bytes_in_use);
  // reset_peak_memory_stats resets the host peaks too.
  mj::reset_peak_memory_stats(0);
  EXPECT_EQ(host().peak_bytes_in_use, host().bytes_in_use);
}

TEST(Allocator, OtherDevicesHaveTheirOwnCounts) {
  // Device 1's memory through a Buffer (the allocator does not need a mesh of 2 devices).
  auto& pool = mj::runtime_allocator();
  const MemoryStats d1 = pool.stats(1, MemoryKind::device), d0 = dev0();
  {
    mj::Buffer b(1000, MemoryKind::device, 1);  // 1000 B -> 1024
    EXPECT_EQ(pool.stats(1, MemoryKind::device).bytes_in_use - d1.bytes_in_use, 1024);
    EXPECT_EQ(dev0().bytes_in_use, d0.bytes_in_use);
  }
  EXPECT_EQ(pool.stats(1, MemoryKind::device).bytes_in_use, d1.bytes_in_use);
}

TEST(Allocator, LimitThrowsResourceExhaustedAndLeavesStatsUnchanged) {
  LimitGuard guard;
  const int64_t page = sysconf(_SC_PAGESIZE), pages = sysconf(_SC_PHYS_PAGES);
  mj::config().device_memory_bytes = 0;
  EXPECT_EQ(dev0().bytes_limit, int64_t(page) * int64_t(pages));  // unlimited: physical memory

  const int64_t base = dev0().bytes_in_use;
  const int64_t limit = base + 1000;
  mj::config().device_memory_bytes = limit;
  EXPECT_EQ(dev0().bytes_limit, limit);
  mj::Array a = mj::zeros({200}, mj::f32);  // 800 B -> 896: fits
  const MemoryStats before = dev0();
  EXPECT_EQ(before.bytes_in_use, base + 896);
  try {
    mj::Array b = mj::zeros({200}, mj::f32);  // another 896 would make base + 1792 > limit
    FAIL() << "no ResourceExhaustedError";
  } catch (const mj::ResourceExhaustedError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("device memory of device 0"), std::string::npos) << m;
    EXPECT_NE(m.find("800 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(base + 896) + " bytes in use"), std::string::npos) << m;
    EXPECT_NE(m.find("limit " + std::to_string(limit) + " bytes"), std::string::npos) << m;
  }
  const MemoryStats after = dev0();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.peak_bytes_in_use, before.peak_bytes_in_use);
  EXPECT_EQ(after.num_allocs, before.num_allocs);

}

// The host limit counts both host kinds together; the message names the kind.
TEST(Allocator, HostLimitThrowsNamingTheKind) {
  LimitGuard guard;
  mj::Array a = mj::zeros({200}, mj::f32);
  const int64_t hbase = host().bytes_in_use + host(MemoryKind::unpinned_host).bytes_in_use;
  mj::config().host_memory_bytes = hbase + 500;
  const MemoryStats before = host(MemoryKind::unpinned_host);
  try {
    mj::Array h = mj::device_put(a, "unpinned_host");  // 896 B block > 500 B left
    FAIL() << "no ResourceExhaustedError";
  } catch (const mj::ResourceExhaustedError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unpinned_host memory"), std::string::npos) << m;
    EXPECT_NE(m.find("limit " + std::to_string(hbase + 500) + " bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("config().host_memory_bytes"), std::string::npos) << m;
  }
  EXPECT_EQ(host(MemoryKind::unpinned_host).bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(host(MemoryKind::unpinned_host).num_allocs, before.num_allocs);
}

TEST(Allocator, ConcurrentThreadsKeepTheCountsExact) {
  const MemoryStats before = dev0();
  constexpr int kThreads = 4, kIters = 2000;
  // Sizes and their classes by hand: 100 -> 128, 1000 -> 1024, 5000 -> 5120 (4096 + 1024),
  // 70000 -> 81920 (65536 + 16384).
  const size_t sizes[] = {100, 1000, 5000, 70000};
  const int64_t classes[] = {128, 1024, 5120, 81920};
  std::vector<std::vector<std::unique_ptr<mj::Buffer>>> kept(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        auto b = std::make_unique<mj::Buffer>(sizes[(i + t) % 4], MemoryKind::device, 0,
                                              mj::Init::uninitialized);
        if (i % 100 == 0) kept[size_t(t)].push_back(std::move(b));  // 20 kept per thread
      }
    });
  for (auto& th : ts) th.join();
  int64_t expect = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kIters; i += 100) expect += classes[(i + t) % 4];
  const MemoryStats during = dev0();
  EXPECT_EQ(during.bytes_in_use - before.bytes_in_use, expect);
  EXPECT_EQ(during.num_allocs - before.num_allocs, kThreads * kIters);
  kept.clear();
  EXPECT_EQ(dev0().bytes_in_use, before.bytes_in_use);
}

// Threads sharing a private pool, each allocating and freeing large blocks of three sizes: the
// counts stay exact, and since a thread holds one block at a time, at most kThreads blocks of
// each size are ever obtained (cached blocks are reused, not duplicated).
TEST(Allocator, ConcurrentLargeBlocksStayExactAndBounded) {
  mj::PoolAllocator pool;
  constexpr int kThreads = 4, kIters = 300;
  const size_t sizes[] = {(3 << 19) + 1, 2 << 20, (3 << 20) + 5};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        const size_t n = sizes[size_t(i + t) % 3];
        void* b = pool.allocate(n, MemoryKind::device, 0);
        static_cast<char*>(b)[n - 1] = char(i);  // the block holds n bytes
        pool.deallocate(b, n, MemoryKind::device, 0);
      }
    });
  for (auto& th : ts) th.join();
  const MemoryStats m = pool.stats(0, MemoryKind::device);
  EXPECT_EQ(m.bytes_in_use, 0);
  EXPECT_EQ(m.num_allocs, kThreads * kIters);
  EXPECT_EQ(m.pool_bytes, m.bytes_reserved);  // everything obtained is cached now
  int64_t bound = 0;
  for (size_t n : sizes) bound += kThreads * int64_t(mj::PoolAllocator::size_class(n));
  EXPECT_LE(m.peak_pool_bytes, bound);
  EXPECT_GE(m.pool_bytes, int64_t(mj::PoolAllocator::size_class(sizes[2])));
}

TEST(Allocator, ThePoolReusesFreedBlocks) {
  // A private pool: the same block comes back and nothing more is reserved.
  mj::PoolAllocator pool;
  void* p = pool.allocate(300000, MemoryKind::device, 0);
  pool.deallocate(p, 300000, MemoryKind::device, 0);
  const int64_t cls = int64_t(mj::PoolAllocator::size_class(300000));  // 327680 by hand
  EXPECT_EQ(cls, 327680);
  EXPECT_EQ(pool.stats(0, MemoryKind::device).bytes_reserved, cls);
  for (int i = 0; i < 50; ++i) {
    void* q = pool.allocate(300000, MemoryKind::device, 0);
    EXPECT_EQ(q, p);
    EXPECT_EQ(pool.stats(0, MemoryKind::device).bytes_reserved, 0);
    pool.deallocate(q, 300000, MemoryKind::device, 0);
    EXPECT_EQ(pool.stats(0, MemoryKind::device).bytes_reserved, cls);
  }
  EXPECT_EQ(pool.stats(0, MemoryKind::device).num_allocs, 51);
  pool.release_cached();
  EXPECT_EQ(pool.stats(0, MemoryKind::device).bytes_reserved, 0);

  // The installed pool: repeated arrays of one size do not grow bytes_reserved.
  { mj::Array warm = mj::zeros({300, 250}, mj::f32); }
  const int64_t reserved = dev0().bytes_reserved;
  for (int i = 0; i < 20; ++i) {
    mj::Array a = mj::zeros({300, 250}, mj::f32);
    EXPECT_EQ(dev0().bytes_reserved, reserved - cls);  // taken from the cache, not the system
  }
  EXPECT_EQ(dev0().bytes_reserved, reserved);
}

TEST(Allocator, ClearMemoryPoolsReleasesCachedBlocks) {
  { mj::Array a = mj::zeros({1000}, mj::f32), h = mj::device_put(a, "pinned_host"); }
  EXPECT_GT(dev0().bytes_reserved, 0);
  EXPECT_GT(host().bytes_reserved, 0);
  const int64_t in_use = dev0().bytes_in_use;
  mj::clear_memory_pools();
  EXPECT_EQ(dev0().bytes_reserved, 0);
  EXPECT_EQ(host().bytes_reserved, 0);
  EXPECT_EQ(dev0().bytes_in_use, in_use);
}

TEST(Allocator, ZerosAreZerosEvenInRecycledBlocks) {
  void* old = nullptr;
  {
    mj::Buffer b(5000, MemoryKind::device, 0, mj::Init::uninitialized);
    std::memset(b.data(), 0xAB, b.nbytes());
    old = b.data();
  }
  mj::Buffer z(5000, MemoryKind::device, 0, mj::Init::zeros);
  EXPECT_EQ(z.data(), old);  // the same block came back from the free list
  const auto* p = static_cast<const unsigned char*>(z.data());
  int nonzero = 0;
  for (size_t i = 0; i < z.nbytes(); ++i) nonzero += p[i] != 0;
  EXPECT_EQ(nonzero, 0);
  // Array::allocate (and mj::zeros) too.
  { mj::Array g = mj::full({1250}, 3.0, mj::f32); }
  mj::Array a = mj::Array::allocate(mj::ShapedArray{{1250}, mj::f32});
  const float* f = a.data<float>();
  for (int i = 0; i < 1250; ++i) ASSERT_EQ(f[i], 0.0f) << i;
}

TEST(Allocator, BlocksAre64ByteAligned) {
  for (size_t n : {size_t(0), size_t(1), size_t(63), size_t(65), size_t(4097), size_t(1) << 20,
                   size_t(1638401)}) {
    mj::Buffer b(n, MemoryKind::device, 0, mj::Init::uninitialized);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % mj::kBufferAlignment, 0u) << n;
  }
}

TEST(Allocator, ReplacedAllocatorsKeepTheirBuffers) {
  auto before = dev0();
  auto pool_buf = std::make_unique<mj::Buffer>(100, MemoryKind::device, 0);  // from the pool
  auto prev = mj::install_allocator(mj::make_counting_allocator());
  EXPECT_EQ(mj::allocator().name(), "counting");
  {
    mj::Buffer c(100, MemoryKind::device, 0);  // counted by the counting allocator: 128
    EXPECT_EQ(dev0().bytes_in_use, 128);
    pool_buf.reset();  // returns to the pool, not to the counting allocator
    EXPECT_EQ(dev0().bytes_in_use, 128);
  }
  EXPECT_EQ(dev0().bytes_in_use, 0);
  mj::install_allocator(prev);
  EXPECT_EQ(mj::allocator().name(), "pool");
  EXPECT_EQ(dev0().bytes_in_use, before.bytes_in_use);
}

}  // namespace

namespace {

// A training-like step: an activation f32[512,512] (1 MiB) and its row sums f32[512,1] (2 KiB)
// are offloaded to pinned_host while the device computes, then brought back and used. Both host
// copies live at once, so the host arena is about 1 MiB + 2 KiB: a large block.
mj::Array offload_step(const mj::Array& x, const mj::Array& w) {
  mj::Array a = mj::tanh(mj::matmul(x, w));
  mj::Array r = mj::sum(a, 1, /*keepdims=*/true);
  mj::Array ha = mj::device_put(a, "pinned_host"), hr = mj::device_put(r, "pinned_host");
  mj::Array y = mj::tanh(mj::matmul(mj::matmul(x, w), w));
  mj::Array back = mj::device_put(ha, "device"), rows = mj::device_put(hr, "device");
  return y * back + rows;
}

}  // namespace

// Measured vs predicted: five calls of the jitted step. After the first, a step obtains no new
// memory from the system (host and device pool_bytes stay, even at their peaks during a call),
// and the pinned_host peak of a call is the planner's host peak (memory_analysis) rounded by the
// allocator's rule: one host arena, a single block above 1 MiB, so a page multiple.
TEST(Allocator, AnOffloadingStepReusesItsMemoryAndPeaksAsPlanned) {
  mj::Array x = mj::random::uniform(mj::random::PRNGKey(11), {512, 512}, mj::f32, -1.0, 1.0);
  mj::Array w = mj::random::uniform(mj::random::PRNGKey(12), {512, 512}, mj::f32, -0.05, 0.05);
  auto f = mj::jit(offload_step, "offload_step");
  const mj::CompiledMemoryStats mem = f.lower(x, w).compile().memory_analysis();
  const int64_t planned = mem.host_peak_memory_in_bytes;
  ASSERT_GT(planned, int64_t(1) << 20) << mem.str();  // a large block: page rounding applies
  EXPECT_EQ(mem.peak_bytes(MemoryKind::pinned_host), planned) << mem.str();
  // By hand: both host copies at once, 512 * 512 * 4 + 512 * 4 = 1050624 B (256.5 pages).
  EXPECT_EQ(planned, 1050624) << mem.str();
  const int64_t rounded = int64_t(mj::PoolAllocator::size_class(size_t(planned)));
  // The rule by hand: the next multiple of 4096 (257 pages = 1052672 B; the small classes would
  // have counted 1310720), less than a page (< 0.4%) above the plan.
  EXPECT_EQ(rounded, (planned + 4095) / 4096 * 4096);
  EXPECT_LT(double(rounded - planned) / double(planned), 0.004);

  const mj::Array want = offload_step(x, w);  // eager, before any figure is taken
  // Earlier tests' cached blocks (and a cache near max_cached_bytes) must not decide this.
  mj::clear_memory_pools();
  int64_t dev_pool = 0, host_pool = 0;
  for (int step = 0; step < 5; ++step) {
    const int64_t host_in_use = host().bytes_in_use;
    mj::reset_peak_memory_stats(0);
    {
      mj::Array y = f(x, w);
      mj::block_until_ready(y);
      if (step == 0)  // the values once: what eager evaluation computed
        for (int64_t i = 0; i < want.size(); i += 997) {
          const float e = want.data<float>()[i];
          ASSERT_NEAR(y.data<float>()[i], e, 1e-4 * (1 + std::fabs(e))) << i;
        }
    }
    const MemoryStats d = dev0(), h = host();
    EXPECT_EQ(h.peak_bytes_in_use - host_in_use, rounded) << "step " << step << ": " << mem.str();
    if (step == 0) {
      dev_pool = d.pool_bytes;
      host_pool = h.pool_bytes;
      EXPECT_GE(host_pool, rounded);  // the arena is cached for the next step
      continue;
    }
    EXPECT_EQ(d.pool_bytes, dev_pool) << "step " << step;
    EXPECT_EQ(d.peak_pool_bytes, dev_pool) << "step " << step;  // not even during the call
    EXPECT_EQ(h.pool_bytes, host_pool) << "step " << step;
    EXPECT_EQ(h.peak_pool_bytes, host_pool) << "step " << step;
  }
}

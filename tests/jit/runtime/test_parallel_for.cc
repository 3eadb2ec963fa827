// Tests of mj_rt_parallel_for (jit/runtime/abi.h): the chunks a kernel is called on cover [0, n)
// once each and start at multiples of the grain (the vector loops' scalar tails rely on it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "jit/runtime/abi.h"

namespace {

struct Chunks {
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> seen;
};

void record(void** bufs, int64_t lo, int64_t hi) {
  auto* c = static_cast<Chunks*>(bufs[0]);
  std::lock_guard<std::mutex> lock(c->mu);
  c->seen.emplace_back(lo, hi);
}

TEST(ParallelFor, ChunksCoverTheRangeOnceAndStartAtMultiplesOfTheGrain) {
  const std::vector<std::pair<int64_t, int64_t>> cases = {
      {100000, 16384}, {(int64_t(1) << 17) + 48, 16384}, {(int64_t(1) << 17) + 5, 16400}, {1000, 48},
      {5, 16}, {16, 16}, {17, 16}, {(int64_t(1) << 20), 16384}};
  for (const auto& [n, grain] : cases) {
    Chunks c;
    void* bufs[1] = {&c};
    mj_rt_parallel_for(&record, bufs, n, grain);
    std::sort(c.seen.begin(), c.seen.end());
    int64_t next = 0;
    for (const auto& [lo, hi] : c.seen) {
      EXPECT_EQ(lo, next) << "n " << n << ", grain " << grain << ": a gap or an overlap";
      EXPECT_EQ(lo % grain, 0) << "n " << n << ", grain " << grain << ": chunk [" << lo << ", " << hi << ")";
      EXPECT_TRUE(hi == n || hi % grain == 0) << "n " << n << ", grain " << grain << ": chunk [" << lo << ", " << hi << ")";
      EXPECT_LT(lo, hi);
      next = hi;
    }
    EXPECT_EQ(next, n) << "grain " << grain;
    if (n > grain) EXPECT_EQ(int64_t(c.seen.size()), (n + grain - 1) / grain) << n;
  }
}

}  // namespace

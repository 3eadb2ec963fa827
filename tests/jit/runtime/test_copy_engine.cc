// Tests of the copy engines (jit/runtime/copy_engine.h): contiguous, strided and reversed copies,
// FIFO order and dependencies, failures, the emulated link's wall time without CPU.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <numeric>
#include <vector>

#include <minijax/minijax.h>

#include "core/config.h"
#include "jit/runtime/copy_engine.h"

namespace {

using namespace minijax;

std::vector<float> iota(size_t n, float from = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct LinkGuard {
  double was = config().host_link_bytes_per_s;
  ~LinkGuard() { config().host_link_bytes_per_s = was; }
};

}  // namespace

// A contiguous copy, a strided one (every other row of 4 floats: the slices of a stacked buffer
// one level down) and a reversed one (rows in reverse order: a reversed scan's slices).
TEST(CopyEngine, ContiguousStridedAndReversedCopies) {
  CopyEngine& e = copy_engine(3);
  std::vector<float> src = iota(32), a(32, -1), b(16, -1), c(32, -1);
  e.enqueue({src.data(), a.data(), 128}).wait();
  EXPECT_EQ(a, src);
  // Rows 0, 2, 4, 6 of the 8x4 source, packed.
  e.enqueue({src.data(), b.data(), 16, 4, 32, 16}).wait();
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 4; ++k) EXPECT_EQ(b[size_t(r * 4 + k)], src[size_t(r * 8 + k)]) << r << "," << k;
  // The 8 rows in reverse order: the source walked backwards from its last row.
  e.enqueue({src.data() + 28, c.data(), 16, 8, -16, 16}).wait();
  for (int r = 0; r < 8; ++r)
    for (int k = 0; k < 4; ++k) EXPECT_EQ(c[size_t(r * 4 + k)], src[size_t((7 - r) * 4 + k)]);
  EXPECT_GE(e.stats().copies, 3);
}

// Copies run in enqueue order, each after its `after` events: one held back by a pending event
// holds back the copies behind it; a failed dependency fails the copy, which writes nothing.
TEST(CopyEngine, OrderDependenciesAndFailures) {
  CopyEngine& e = copy_engine(2);
  std::vector<float> src = iota(8, 1), mid(8, 0), dst(8, 0);
  Event gate;
  Event first = e.enqueue({src.data(), mid.data(), 32}, {gate});
  Event second = e.enqueue({mid.data(), dst.data(), 32});  // reads what the first wrote
  EXPECT_FALSE(first.ready());
  EXPECT_FALSE(second.ready());
  gate.set();
  second.wait();
  EXPECT_TRUE(first.ready());
  EXPECT_EQ(dst, src);
  Event failed;
  failed.set_error(std::make_exception_ptr(ValueError("producer failed")));
  std::vector<float> untouched(8, 7);
  Event skipped = e.enqueue({src.data(), untouched.data(), 32}, {failed});
  EXPECT_THROW(skipped.wait(), ValueError);
  EXPECT_EQ(untouched, std::vector<float>(8, 7));
  EXPECT_THROW(e.enqueue({nullptr, dst.data(), 32}), ValueError);
  EXPECT_THROW(e.enqueue({src.data(), dst.data(), -4}), ValueError);
  EXPECT_THROW(copy_engine(num_devices()), ValueError);
  e.synchronize();
}

// The emulated link: 1 MiB at 10 MiB/s takes at least 0.1 s of wall time (a guarantee of the
// timed wait, not a speed), of which nearly all is waited without a core: the process uses far
// less CPU than the wall time (getrusage; the memcpy of 1 MiB is well under a millisecond).
TEST(CopyEngine, TheEmulatedLinkTakesBytesOverBandwidthWithoutCpu) {
  LinkGuard guard;
  CopyEngine& e = copy_engine(5);
  std::vector<float> src = iota(1 << 18), dst(1 << 18, 0);
  config().host_link_bytes_per_s = 10.0 * (1 << 20);
  const CopyEngineStats before = e.stats();
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  e.enqueue({src.data(), dst.data(), int64_t(src.size() * 4)}).wait();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  EXPECT_GE(wall, 0.1);
  EXPECT_LE(cpu, 0.02) << "CPU seconds during a 0.1 s emulated copy";
  EXPECT_EQ(dst, src);
  const CopyEngineStats after = e.stats();
  EXPECT_EQ(after.bytes - before.bytes, int64_t(1) << 20);
  EXPECT_GT(after.link_wait_seconds - before.link_wait_seconds, 0.05);
  config().host_link_bytes_per_s = 0;  // off: no wait
  e.enqueue({src.data(), dst.data(), 4}).wait();
  EXPECT_EQ(e.stats().link_wait_seconds, after.link_wait_seconds);
}

// The link moves one copy at a time: of two 1 MiB copies enqueued together at 10 MiB/s, the
// second completes no earlier than 0.2 s after they were enqueued (lower bounds only: a sleep is
// never shorter), while the engine's thread is free after the memcpys; a copy's event is not
// ready before its link time has passed, and its waiters block (no core) until then.
TEST(CopyEngine, TheLinkMovesCopiesOneAtATimeAndWaitersSleepUntilTheirTime) {
  LinkGuard guard;
  CopyEngine& e = copy_engine(6);
  std::vector<float> a = iota(1 << 18), b = iota(1 << 18), da(1 << 18, 0), db(1 << 18, 0);
  config().host_link_bytes_per_s = 10.0 * (1 << 20);
  const auto t0 = std::chrono::steady_clock::now();
  Event first = e.enqueue({a.data(), da.data(), int64_t(a.size() * 4)});
  Event second = e.enqueue({b.data(), db.data(), int64_t(b.size() * 4)});
  EXPECT_FALSE(second.ready()) << "ready before its link time";
  second.wait();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(wall, 0.2);
  EXPECT_TRUE(first.ready());
  EXPECT_EQ(da, a);
  EXPECT_EQ(db, b);
}

// Event::set_at: complete from a time on; ready() false before it, wait() returns after it.
TEST(Event, SetAtCompletesAsOfItsTime) {
  Event ev;
  const auto at = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  ev.set_at(at);
  EXPECT_FALSE(ev.ready());
  ev.wait();
  EXPECT_GE(std::chrono::steady_clock::now(), at);
  EXPECT_TRUE(ev.ready());
  Event past;
  past.set_at(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_TRUE(past.ready());
}

// A compiled program's copies between memory kinds run on device 0's copy engine (counted there,
// under the emulated link when set); the values are eager's.
TEST(CopyEngine, CompiledCopiesBetweenMemoryKindsRunOnTheEngine) {
  LinkGuard guard;
  Array x = mj::random::uniform(mj::random::PRNGKey(1), {64, 64}, mj::f32, -1.0, 1.0);
  auto fn = [](const Array& a) {
    Array h = mj::device_put(mj::sin(a), "pinned_host");
    return std::pair{h, mj::device_put(h, "device") * 2.0f};
  };
  auto f = mj::jit(fn, "offload_roundtrip");
  auto [h0, y0] = f(x);  // compiled
  // 16 KiB per copy at 10 MB/s: 1.6 ms on the link, far longer than the copy itself also under a
  // sanitizer (at 1 GB/s, 16 us, a ThreadSanitizer build's copy outlasted the link: no wait).
  config().host_link_bytes_per_s = 1e7;
  const CopyEngineStats before = copy_engine(0).stats();
  auto [h, y] = f(x);
  mj::block_until_ready(h);  // the engine counts a copy before its event is set
  mj::block_until_ready(y);
  const CopyEngineStats after = copy_engine(0).stats();
  auto [he, ye] = fn(x);  // eager
  EXPECT_EQ(h.aval().memory_kind, mj::MemoryKind::pinned_host);
  for (int64_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(h.data<float>()[i], he.data<float>()[i], 1e-6) << i;
    ASSERT_NEAR(y.data<float>()[i], ye.data<float>()[i], 2e-6) << i;
  }
  EXPECT_GE(after.bytes - before.bytes, 64 * 64 * 4) << "the offload of sin(x) ran on the engine";
  EXPECT_GT(after.link_wait_seconds, before.link_wait_seconds);
}

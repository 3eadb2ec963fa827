// Measured against predicted memory of compiled host-offload programs: the seed program scaled up
// (docs/offload.md), with and without its carry offloaded, grad of scan over a large constant, and
// a device capacity between the offload policy's peak and everything_saveable's.
//
// "Measured" is what the runtime's allocator counted while the call ran (mj::memory_stats: the
// peak of bytes in use, minus what was in use before the call, plus the call's inputs, which were
// allocated before it); "predicted" is Compiled::memory_analysis(); "by hand" is derived in each
// test from the program's buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <minijax/minijax.h>

#include "core/config.h"
#include "jit/runtime/copy_engine.h"
#include "tests/memory/memory_helpers.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;
using memtest::Peaks;

constexpr int kWidth = 4096;                     // the seed's carry, scaled up: f32[4096]
constexpr int64_t kRow = kWidth * 4;             // 16 KiB: one carry, one named residual
constexpr double kHandTolerance = 0.01;          // measured within 1% of the hand derivation
constexpr double kPredictionTolerance = 0.05;    // memory_analysis() within 5% of measured

// The seed's step (seed-offload-in-scan): y = sin(y); y = checkpoint_name(y, "save_remat");
// y = sin(y). With `name_carry`, its output is named "carry" too (offload-named-carry's rule:
// the backward pass's stacked carry is then offloaded as well).
auto seed_loss(int length, bool name_carry) {
  const std::vector<std::string> offloaded = name_carry ? std::vector<std::string>{"save_remat", "carry"}
                                                        : std::vector<std::string>{"save_remat"};
  auto policy = cp::save_and_offload_only_these_names({}, offloaded, "device", "pinned_host");
  auto step = [name_carry](const Array& y, const Array&) {
    Array a = mj::checkpoint_name(mj::sin(y), "save_remat");
    Array b = mj::sin(a);
    return std::pair{name_carry ? mj::checkpoint_name(b, "carry") : b, mj::None{}};
  };
  const Array xs = mj::zeros({length, 0}, mj::f32);  // only its length matters
  return [=](const Array& p) { return mj::sum(mj::scan(mj::checkpoint(step, {.policy = policy}), p, xs).first); };
}

struct SeedResult {
  Peaks measured, predicted;
  Array grad;
};

SeedResult run_seed(int length, bool name_carry) {
  const Array p = mj::ones({kWidth}, mj::f32);
  auto f = mj::jit(mj::grad(seed_loss(length, name_carry)));
  auto compiled = f.lower(p).compile();
  SeedResult r;
  r.predicted = memtest::predicted(compiled.memory_analysis());
  r.measured = memtest::measure([&] { r.grad = compiled(p); mj::block_until_ready(r.grad); }, kRow, 0);
  return r;
}

void expect_within(int64_t got, int64_t want, double tol, const std::string& what) {
  EXPECT_LE(std::fabs(double(got - want)), tol * double(want)) << what << ": " << got << " B vs " << want << " B";
}

// Device: the input p and the gradient (a row each), the carry stacked by the forward loop (length
// rows: the backward pass needs cos(y) of each step's input, and the policy is never asked about
// inputs), and at the forward loop's peak four rows more: the carry, the next carry (computed
// while the carry is still read, for its slice of the stack), the named residual whose offload
// the iteration is overlapping (carried from the previous iteration), and this iteration's named
// residual; and the loop's row index and its next value (an i32 each, 64 B in the arena). The
// backward loop holds less: the stack, the current reloaded row and the prefetched next one.
// Host: the offloaded residual, length rows.
int64_t seed_device_by_hand(int length) { return (int64_t(length) + 6) * kRow + 2 * 64; }
int64_t seed_host_by_hand(int length) { return int64_t(length) * kRow; }

class SeedOffloadMemory : public ::testing::TestWithParam<int> {};

TEST_P(SeedOffloadMemory, MeasuredPeaksAreTheHandDerivationAndThePrediction) {
  const int length = GetParam();
  mj::config().host_link_bytes_per_s = 8e9;  // the emulated link, as the offload tests run
  SeedResult r = run_seed(length, false);
  mj::config().host_link_bytes_per_s = 0;
  expect_within(r.measured.device, seed_device_by_hand(length), kHandTolerance, "device, measured vs by hand");
  expect_within(r.measured.host, seed_host_by_hand(length), kHandTolerance, "host, measured vs by hand");
  expect_within(r.predicted.device, r.measured.device, kPredictionTolerance, "device, predicted vs measured");
  expect_within(r.predicted.host, r.measured.host, kPredictionTolerance, "host, predicted vs measured");
  // The gradient is eager's.
  Array want = mj::grad(seed_loss(length, false))(mj::ones({kWidth}, mj::f32));
  for (int i = 0; i < kWidth; ++i) ASSERT_NEAR(r.grad.data<float>()[i], want.data<float>()[i], 1e-6) << i;
}

INSTANTIATE_TEST_SUITE_P(Lengths, SeedOffloadMemory, ::testing::Values(100, 1000));

// From length 100 to 1000 the device peak grows by the stacked carry only (900 rows), the host
// peak by the offloaded residual (900 rows). With the carry offloaded too, the device peak does
// not grow at all and the host holds both stacks.
TEST(SeedOffloadMemory, DevicePeakGrowsOnlyByTheStackedCarryAndIsFlatWithTheCarryOffloaded) {
  mj::config().host_link_bytes_per_s = 8e9;
  const SeedResult a = run_seed(100, false), b = run_seed(1000, false);
  const SeedResult ca = run_seed(100, true), cb = run_seed(1000, true);
  mj::config().host_link_bytes_per_s = 0;
  const int64_t rows = 900 * kRow, page = 4096;  // the allocator rounds large blocks to pages
  EXPECT_NEAR(double(b.measured.device - a.measured.device), double(rows), page);
  EXPECT_NEAR(double(b.measured.host - a.measured.host), double(rows), page);
  EXPECT_NEAR(double(cb.measured.device - ca.measured.device), 0.0, page) << "carry offloaded: flat";
  EXPECT_NEAR(double(cb.measured.host - ca.measured.host), double(2 * rows), 2 * page);
  // And the offloaded carry is what is saved: the device peak is far below the stacked carry's.
  EXPECT_LT(cb.measured.device, b.measured.device - rows);
}

}  // namespace

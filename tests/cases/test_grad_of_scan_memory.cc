// Case test for docs/cases/grad-of-scan-memory.md: grad of a scan whose body closes over a large
// constant z: d loss/dx = 2n, and what saved_residuals() says is kept with and without checkpoint.
//
// The gradient is checked eagerly and under jit. Checked in tests/memory/test_offload_memory.cc
// (GradOfScanMemory), not here: peak device memory measured by the allocator and reported by
// memory_analysis() (growing with n without checkpoint, independent of n with checkpoint(body,
// nothing_saveable)).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include <minijax/minijax.h>

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;

constexpr int kSide = 3000;

// loss(x) = mean(final carry), body(c, y) = (c + x * (y + z), nothing), z = ones(3000,3000),
// ys = ones(n), carry starting at zeros(3000,3000).
auto loss_of(int n, bool checkpointed) {
  return [n, checkpointed](const Array& x) {
    static const Array z = mj::ones({kSide, kSide}, mj::f32);
    static const Array c0 = mj::zeros({kSide, kSide}, mj::f32);
    const Array ys = mj::ones({n}, mj::f32);
    auto body = [&](const Array& c, const Array& y) { return std::pair{c + x * (y + z), mj::None{}}; };
    if (checkpointed)
      return mj::mean(mj::scan(mj::checkpoint(body, {.policy = cp::nothing_saveable()}), c0, ys).first);
    return mj::mean(mj::scan(body, c0, ys).first);
  };
}

// The right result: every iteration adds x (1 + 1) to every element, so the final carry is 2 n x
// everywhere, its mean is 2 n x and d/dx = 2n (10 at n = 5, 20 at n = 10).
class GradOfScanMemory : public ::testing::TestWithParam<int> {};

TEST_P(GradOfScanMemory, GradientIsTwoN) {
  const int n = GetParam();
  const Array x = mj::scalar(0.5f);
  for (bool ckpt : {false, true}) {
    auto vg = mj::value_and_grad(loss_of(n, ckpt));
    auto [v, g] = vg(x);
    // f32: the mean's cotangent 1/9e6 summed over 9e6 elements.
    EXPECT_NEAR(g.item<float>(), 2.0 * n, 2e-5 * n) << "checkpoint=" << ckpt;
    EXPECT_NEAR(v.item<float>(), 2.0 * n * 0.5, 2e-5 * n) << "checkpoint=" << ckpt;
    // The same compiled. Each iteration's gradient sums N = 9e6 equal terms in f32 (pairwise, in
    // the order eager uses too: docs/compiler.md, "Numerics"; its bound is far below this one, the
    // bound of blocks of 2048 merged in sequence): relative error up to (min(N, 2048) +
    // ceil(N / 2048) + 2) u = 6445 * 2^-24 ~ 3.8e-4, plus n - 1 roundings adding the iterations.
    // The value, a mean of 9e6 equal integers, is exact either way.
    auto [jv, jg] = mj::jit(vg)(x);
    const double u = std::ldexp(1.0, -24), depth = 2048 + (kSide * kSide + 2047) / 2048 + 2 + n;
    EXPECT_NEAR(jg.item<float>(), 2.0 * n, depth * u * 2.0 * n) << "jit, checkpoint=" << ckpt;
    EXPECT_NEAR(jg.item<float>(), g.item<float>(), depth * u * 2.0 * n + 2e-5 * n) << "jit vs eager";
    EXPECT_NEAR(jv.item<float>(), 2.0 * n * 0.5, 2e-5 * n) << "jit, checkpoint=" << ckpt;
  }
}

TEST_P(GradOfScanMemory, WithoutCheckpointOnlyYPlusZIsStacked) {
  const int n = GetParam();
  mj::SavedResiduals rs = mj::saved_residuals(loss_of(n, false), mj::scalar(0.5f));
  std::ostringstream printed;
  printed << rs;
  // The case: one residual, f32[n,3000,3000] made by add (y + z), stacked; nothing else (only x
  // is differentiated, so z itself is not needed).
  int stacked = 0;
  for (const auto& r : rs)
    if (r.placement == mj::ResidualPlacement::stacked) {
      ++stacked;
      EXPECT_EQ(r.aval.shape, (mj::Shape{n, kSide, kSide})) << r;
      EXPECT_EQ(r.memory_kind, mj::MemoryKind::device) << r;
      EXPECT_EQ(r.bytes, int64_t(n) * kSide * kSide * 4) << r;
      EXPECT_NE(r.description.find("add"), std::string::npos) << r;
    }
  EXPECT_EQ(stacked, 1) << printed.str();
  EXPECT_EQ(rs.size(), 1u) << "nothing but the stacked y + z may be kept:\n" << printed.str();
}

TEST_P(GradOfScanMemory, WithCheckpointNothingIsStacked) {
  const int n = GetParam();
  mj::SavedResiduals rs = mj::saved_residuals(loss_of(n, true), mj::scalar(0.5f));
  std::ostringstream printed;
  printed << rs;
  // The backward body recomputes y + z from y (forwarded as xs) and z (forwarded as a loop
  // constant): every residual is forwarded, none stacked or computed.
  bool z_seen = false, ys_seen = false;
  for (const auto& r : rs) {
    EXPECT_EQ(r.placement, mj::ResidualPlacement::forwarded) << r << "\nall:\n" << printed.str();
    z_seen |= r.aval.shape == mj::Shape{kSide, kSide} && r.placement == mj::ResidualPlacement::forwarded;
    ys_seen |= r.aval.shape == mj::Shape{n} && r.placement == mj::ResidualPlacement::forwarded;
  }
  EXPECT_TRUE(z_seen) << printed.str();
  EXPECT_TRUE(ys_seen) << printed.str();
  // The residual bytes are independent of n apart from ys itself (4n bytes).
  int64_t bytes = 0;
  for (const auto& r : rs) bytes += r.bytes;
  EXPECT_EQ(bytes, int64_t(kSide) * kSide * 4 + 4 * n) << printed.str();
}

INSTANTIATE_TEST_SUITE_P(Lengths, GradOfScanMemory, ::testing::Values(5, 10),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

}  // namespace

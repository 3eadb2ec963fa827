// Case test for docs/cases/offload-named-carry.md: a scan over layers of a checkpointed block
// whose output (the next carry) is named "carry" and offloaded: the stacked carry residual lives
// in pinned_host, the stacked weights are forwarded, and gradients equal the program without it.
//
// The gradients are checked eagerly and under jit. Checked in tests/memory/test_offload_memory.cc
// (OffloadNamedCarryMemory), not here: compiled device memory equal at 16 and 32 layers while
// host memory doubles (measured by the allocator / memory_analysis()). At the IR level the
// residual sizes saved_residuals() reports are checked instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include <minijax/minijax.h>

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;

constexpr int kBatch = 64, kWidth = 256;

// block(h, W) = checkpoint_name(tanh(h @ W), "carry"): h f32[64,256], W f32[256,256].
Array block(const Array& h, const Array& W) { return mj::checkpoint_name(mj::tanh(mj::matmul(h, W)), "carry"); }

enum class Variant { offload_carry, nothing_saveable, offload_other_name, no_checkpoint };

mj::PolicyPtr policy_of(Variant v) {
  switch (v) {
    case Variant::offload_carry: return cp::save_and_offload_only_these_names({}, {"carry"}, "device", "pinned_host");
    case Variant::nothing_saveable: return cp::nothing_saveable();
    case Variant::offload_other_name:
      return cp::save_and_offload_only_these_names({}, {"other"}, "device", "pinned_host");
    case Variant::no_checkpoint: return nullptr;
  }
  return nullptr;
}

// loss(ws, h0) = sum(final carry of scan(block over the layers, h0, ws)).
auto loss_of(Variant v) {
  return [v](const Array& ws, const Array& h0) {
    mj::PolicyPtr pol = policy_of(v);
    auto body = [&](const Array& c, const Array& W) {
      Array out = v == Variant::no_checkpoint ? block(c, W) : mj::checkpoint(block, {.policy = pol})(c, W);
      return std::pair{out, mj::None{}};
    };
    return mj::sum(mj::scan(body, h0, ws).first);
  };
}

// The same network as a C++ loop over the layers (no scan, no checkpoint): a different program.
Array unrolled_loss(const Array& ws, const Array& h0) {
  Array h = h0;
  const int64_t L = ws.shape()[0];
  for (int64_t l = 0; l < L; ++l)
    h = mj::tanh(mj::matmul(h, mj::lax::squeeze(mj::lax::slice(ws, {l, 0, 0}, {l + 1, kWidth, kWidth}), {0})));
  return mj::sum(h);
}

// Layer weights with entries ~N(0, 1/256) keep tanh out of saturation over 32 layers.
Array weights(int L) {
  return mj::random::normal(mj::random::PRNGKey(uint64_t(L)), {L, kWidth, kWidth}) * (1.0 / 16.0);
}
Array input() { return mj::random::normal(mj::random::PRNGKey(7), {kBatch, kWidth}); }

void expect_close(const Array& got, const Array& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  double scale = 0;
  for (int64_t i = 0; i < want.size(); ++i) scale = std::max(scale, double(std::abs(want.data<float>()[i])));
  ASSERT_GT(scale, 0) << what;
  int64_t bad = 0;
  for (int64_t i = 0; i < want.size(); ++i)
    bad += std::abs(double(got.data<float>()[i]) - double(want.data<float>()[i])) > 1e-5 * scale;
  EXPECT_EQ(bad, 0) << what << ": elements differing by more than 1e-5 x max|want| = " << scale;
}

class OffloadNamedCarry : public ::testing::TestWithParam<int> {};

TEST_P(OffloadNamedCarry, SavedResidualsHoldTheStackedCarryInHostAndForwardTheWeights) {
  const int L = GetParam();
  const Array ws = weights(L), h0 = input();
  mj::SavedResiduals rs = mj::saved_residuals(loss_of(Variant::offload_carry), ws, h0);
  std::ostringstream printed;
  printed << rs;
  ASSERT_EQ(rs.size(), 2u) << printed.str();
  const mj::SavedResidual* carry = nullptr;
  const mj::SavedResidual* w = nullptr;
  for (const auto& r : rs) (r.placement == mj::ResidualPlacement::forwarded ? w : carry) = &r;
  ASSERT_NE(carry, nullptr) << printed.str();
  ASSERT_NE(w, nullptr) << printed.str();
  // The block's input carry of every layer, stacked [L, 64, 256] in pinned_host: it was named
  // "carry" as the previous layer's output.
  EXPECT_EQ(carry->placement, mj::ResidualPlacement::stacked) << *carry;
  EXPECT_EQ(carry->memory_kind, mj::MemoryKind::pinned_host) << *carry;
  EXPECT_EQ(carry->aval.shape, (mj::Shape{L, kBatch, kWidth}));
  EXPECT_EQ(carry->aval.dtype, mj::DType::f32);
  EXPECT_EQ(carry->bytes, int64_t(L) * kBatch * kWidth * 4);
  EXPECT_EQ(carry->name, "carry") << *carry;
  EXPECT_NE(carry->description.find("the carry 0"), std::string::npos) << *carry;
  // The weights: the xs argument itself, forwarded (never re-stacked).
  ASSERT_TRUE(w->argument.has_value());
  EXPECT_EQ(*w->argument, 0);
  EXPECT_EQ(w->aval.shape, (mj::Shape{L, kWidth, kWidth}));
  EXPECT_EQ(w->memory_kind, mj::MemoryKind::device);
}

TEST_P(OffloadNamedCarry, WithoutTheNamingPolicyTheCarryStaysOnTheDevice) {
  const int L = GetParam();
  const Array ws = weights(L), h0 = input();
  for (Variant v : {Variant::nothing_saveable, Variant::offload_other_name, Variant::no_checkpoint}) {
    mj::SavedResiduals rs = mj::saved_residuals(loss_of(v), ws, h0);
    std::ostringstream printed;
    printed << rs;
    int stacked_carry = 0;
    for (const auto& r : rs) {
      EXPECT_EQ(r.memory_kind, mj::MemoryKind::device) << printed.str();
      // The weights are never stacked again.
      if (r.aval.shape == mj::Shape{L, kWidth, kWidth}) EXPECT_EQ(r.placement, mj::ResidualPlacement::forwarded) << r;
      stacked_carry += r.placement == mj::ResidualPlacement::stacked &&
                       r.description.find("the carry 0") != std::string::npos;
    }
    EXPECT_EQ(stacked_carry, 1) << printed.str();
    if (v != Variant::no_checkpoint) EXPECT_EQ(rs.size(), 2u) << printed.str();
  }
}

TEST_P(OffloadNamedCarry, GradientsEqualTheProgramWithoutThePolicy) {
  const int L = GetParam();
  const Array ws = weights(L), h0 = input();
  auto grads = [&](auto f) { return mj::grad(f, mj::argnums<0, 1>)(ws, h0); };
  auto [ow, oh] = grads(loss_of(Variant::offload_carry));
  auto [pw, ph] = grads(loss_of(Variant::no_checkpoint));
  expect_close(ow, pw, "d/dws, offload vs no checkpoint");
  expect_close(oh, ph, "d/dh0, offload vs no checkpoint");
  // Compiled: jit(grad) with the carry offloaded (host copies in the compiled loops) gives the
  // eager gradients.
  auto [jw, jh] = mj::jit([](const Array& w, const Array& h) {
    return mj::grad(loss_of(Variant::offload_carry), mj::argnums<0, 1>)(w, h);
  })(ws, h0);
  expect_close(jw, ow, "d/dws, jit(grad) vs eager, offload");
  expect_close(jh, oh, "d/dh0, jit(grad) vs eager, offload");
  if (L == 16) {
    // And both equal the gradient of the loop over layers written out in C++.
    auto [uw, uh] = grads(unrolled_loss);
    expect_close(ow, uw, "d/dws, offload vs unrolled");
    expect_close(oh, uh, "d/dh0, offload vs unrolled");
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, OffloadNamedCarry, ::testing::Values(16, 32),
                         [](const auto& info) { return "L" + std::to_string(info.param); });

TEST(OffloadNamedCarryMemory, HostResidualBytesDoubleWithTheLayersDeviceResidualBytesDoNot) {
  // Residual bytes as saved_residuals reports them (the IR-level account of the case's memory
  // check): new device residuals (not the forwarded arguments) stay at zero from 16 to 32 layers,
  // host residual bytes double.
  auto account = [](int L) {
    int64_t host = 0, device_new = 0;
    for (const auto& r : mj::saved_residuals(loss_of(Variant::offload_carry), weights(L), input())) {
      if (r.memory_kind == mj::MemoryKind::pinned_host) host += r.bytes;
      else if (r.placement != mj::ResidualPlacement::forwarded) device_new += r.bytes;
    }
    return std::pair{host, device_new};
  };
  auto [h16, d16] = account(16);
  auto [h32, d32] = account(32);
  EXPECT_EQ(h16, int64_t(16) * kBatch * kWidth * 4);
  EXPECT_EQ(h32, 2 * h16);
  EXPECT_EQ(d16, 0);
  EXPECT_EQ(d32, d16);
}

}  // namespace

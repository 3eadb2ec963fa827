// Tests of saved_residuals and of the seed case (grad of scan of an offloading checkpoint):
// gradients under several remat choices and the residual list (placement, memory kind, name).
#include <gtest/gtest.h>

#include <cmath>
#include <minijax/minijax.h>
#include <sstream>

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;

std::vector<float> vals(const Array& a) {
  Array f = mj::astype(a, mj::f32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.size());
}

// seed-offload-in-scan.md: step(y) = sin(name(sin(y), "save_remat")); loss = sum(scan carry).
std::pair<Array, mj::None> step0(const Array& y, const Array&) {
  Array a = mj::checkpoint_name(mj::sin(y), "save_remat");
  return {mj::sin(a), mj::None{}};
}

mj::PolicyPtr seed_policy() {
  return cp::save_and_offload_only_these_names({}, {"save_remat"}, "device", "pinned_host");
}

// d/dp of sin^4 (four nested sines, two steps): product of cos at each stage, by hand.
float seed_expected() {
  double v = 1.0, d = 1.0;
  for (int i = 0; i < 4; ++i) {
    d *= std::cos(v);
    v = std::sin(v);
  }
  return float(d);
}

TEST(SeedOffloadInScan, GradientUnderEveryVariant) {
  EXPECT_NEAR(seed_expected(), 0.20593520f, 1e-7f);
  Array params = mj::ones({3}, mj::f32), xs = mj::ones({2, 3}, mj::f32);
  auto with = [&](auto step) {
    return [=](const Array& p) { return mj::sum(mj::scan(step, p, xs).first); };
  };
  auto offload = with(mj::checkpoint(step0, {.policy = seed_policy()}));
  auto everything = with(mj::checkpoint(step0, {.policy = cp::everything_saveable()}));
  auto plain = with(step0);
  auto whole = mj::checkpoint([&](const Array& p) { return mj::sum(mj::scan(step0, p, xs).first); },
                              {.policy = seed_policy()});
  for (auto g : {mj::jit(mj::grad(offload))(params), mj::grad(everything)(params), mj::grad(plain)(params),
                 mj::grad(whole)(params), mj::grad(offload)(params)})
    for (float v : vals(g)) EXPECT_NEAR(v, seed_expected(), 1e-6f);
}

TEST(SeedOffloadInScan, SavedResidualsTwoStacked) {
  Array params = mj::ones({3}, mj::f32), xs = mj::ones({2, 3}, mj::f32);
  auto step = mj::checkpoint(step0, {.policy = seed_policy()});
  auto loss = [&](const Array& p) { return mj::sum(mj::scan(step, p, xs).first); };
  mj::SavedResiduals rs = mj::saved_residuals(loss, params);
  ASSERT_EQ(rs.size(), 2u) << rs;
  int host = 0, dev = 0;
  for (auto& r : rs) {
    EXPECT_EQ(r.aval.shape, (mj::Shape{2, 3}));
    EXPECT_EQ(r.placement, mj::ResidualPlacement::stacked);
    EXPECT_EQ(r.bytes, 24);
    if (r.memory_kind == mj::MemoryKind::pinned_host) {
      ++host;
      EXPECT_EQ(r.name, "save_remat");
    } else {
      ++dev;
      EXPECT_EQ(r.name, "");  // the carry y: the policy is never asked about inputs
      EXPECT_NE(r.description.find("carry"), std::string::npos) << r;
    }
  }
  EXPECT_EQ(host, 1);
  EXPECT_EQ(dev, 1);
  std::ostringstream os;
  os << rs;
  EXPECT_NE(os.str().find("f32[2,3] stacked pinned_host 24 bytes named 'save_remat'"), std::string::npos) << os.str();
}

TEST(SavedResiduals, SimpleFunctions) {
  Array x = mj::array({0.1f, 0.2f, 0.3f, 0.4f});
  // sin(sin(x)): direct linearize keeps cos(x) and cos(sin(x)), 16 bytes each.
  auto rs = mj::saved_residuals([](const Array& v) { return mj::sum(mj::sin(mj::sin(v))); }, x);
  ASSERT_EQ(rs.size(), 2u) << rs;
  for (auto& r : rs) {
    EXPECT_EQ(r.made_by, "cos");
    EXPECT_EQ(r.bytes, 16);
    EXPECT_EQ(r.placement, mj::ResidualPlacement::computed);
  }
  // x * y: each factor is the other's residual, forwarded from the arguments.
  auto rp = mj::saved_residuals([](const Array& a, const Array& b) { return mj::sum(a * b); }, x, x * 2.f);
  ASSERT_EQ(rp.size(), 2u) << rp;
  std::vector<int> argsseen;
  for (auto& r : rp) {
    EXPECT_EQ(r.placement, mj::ResidualPlacement::forwarded);
    ASSERT_TRUE(r.argument.has_value());
    argsseen.push_back(*r.argument);
  }
  std::sort(argsseen.begin(), argsseen.end());
  EXPECT_EQ(argsseen, (std::vector<int>{0, 1}));
  // nothing_saveable checkpoint of sin(sin(x)): only the input is kept (forwarded).
  auto f = mj::checkpoint([](const Array& v) { return mj::sin(mj::sin(v)); }, {.policy = cp::nothing_saveable()});
  auto rn = mj::saved_residuals([&](const Array& v) { return mj::sum(f(v)); }, x);
  ASSERT_EQ(rn.size(), 1u) << rn;
  EXPECT_EQ(rn[0].placement, mj::ResidualPlacement::forwarded);
  // A named value offloaded by the policy: pinned_host, named.
  auto g = mj::checkpoint([](const Array& v) { return mj::sin(mj::checkpoint_name(mj::sin(v), "s")); },
                          {.policy = cp::save_and_offload_only_these_names({}, {"s"}, "device", "pinned_host")});
  auto ro = mj::saved_residuals([&](const Array& v) { return mj::sum(g(v)); }, x);
  int pinned = 0;
  for (auto& r : ro)
    if (r.memory_kind == mj::MemoryKind::pinned_host) {
      ++pinned;
      EXPECT_EQ(r.name, "s");
      EXPECT_EQ(r.made_by, "device_put");
    }
  EXPECT_EQ(pinned, 1) << ro;
}

}  // namespace

// Tests that mj::checkpoint / remat traces once per signature, as JAX's
// api_test.py test_remat_retracing and test_remat_static_argnums_retracing, sharing across
// objects of one callable, per-trace scoping of an object's own cache, and thread safety.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <minijax/minijax.h>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "values.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;

using minijax_test::vals;

void expect_near(const Array& got, const std::vector<float>& want, float tol = 1e-6f) {
  auto g = vals(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol * (1.f + std::fabs(want[i]))) << "element " << i;
}

TEST(CheckpointRetracing, RematCalledTenTimesTracesOnce) {
  // JAX's test_remat_retracing: g returns (sin(x), 3.); f(x) = g(x)[0] called 10 times.
  static int count = 0;
  auto g = mj::remat([](const Array& x) {
    ++count;
    return std::pair{mj::sin(x), mj::scalar(3.0)};
  });
  auto f = [&](const Array& x) { return g(x).first; };
  for (int i = 0; i < 10; ++i) {
    Array y = mj::block_until_ready(f(mj::scalar(2.0)));
    EXPECT_NEAR(y.item<float>(), std::sin(2.f), 1e-6);  // closed form
  }
  EXPECT_EQ(count, 1);
}

TEST(CheckpointRetracing, StaticArgnumsRetracingAsJax) {
  // JAX's test_remat_static_argnums_retracing: x static (static_argnums=(0,)), f(2.) 10 times.
  static int count = 0;
  auto g = mj::remat(
      [](double x) {
        ++count;
        return std::pair{mj::sin(mj::scalar(x)), mj::scalar(3.0)};
      },
      {.static_argnums = {0}});
  auto f = [&](double x) { return g(x).first; };
  for (int i = 0; i < 10; ++i) {
    Array y = mj::block_until_ready(f(2.));
    EXPECT_NEAR(y.item<float>(), std::sin(2.f), 1e-6);
  }
  EXPECT_EQ(count, 1);
  // Each distinct static value gets its own trace, compared by value.
  EXPECT_NEAR(f(3.).item<float>(), std::sin(3.f), 1e-6);
  EXPECT_EQ(count, 2);
  EXPECT_NEAR(f(2.).item<float>(), std::sin(2.f), 1e-6);
  EXPECT_EQ(count, 2);
}

TEST(CheckpointRetracing, OneTraceAcrossObjectsGradAndJit) {
  static int count = 0;
  auto body = [](const Array& x) {
    ++count;
    return mj::sin(x) * x;
  };
  Array x = mj::array({0.5f, 1.f, 2.f});
  Array eager = body(x);
  count = 0;
  Array a = mj::checkpoint(body)(x);
  Array b = mj::checkpoint(body)(x);  // another object of the same captureless lambda
  Array g1, g2;
  for (int i = 0; i < 3; ++i) {
    g1 = mj::grad([&](const Array& v) { return mj::sum(mj::checkpoint(body)(v)); })(x);
    g2 = mj::jit([&](const Array& v) { return mj::checkpoint(body)(v); })(x);
  }
  EXPECT_EQ(count, 1);
  expect_near(a, vals(eager));
  expect_near(b, vals(eager));
  expect_near(g2, vals(eager));
  auto xv = vals(x);
  std::vector<float> dg;
  for (float v : xv) dg.push_back(std::cos(v) * v + std::sin(v));  // d/dx sin(x) x
  expect_near(g1, dg, 1e-5f);
}

TEST(CheckpointRetracing, PoliciesShareTheTraceAndStillApplyPerObject) {
  static int count = 0;
  auto body = [](const Array& w, const Array& x) {
    ++count;
    return mj::sin(mj::matmul(w, x));
  };
  Array w = mj::reshape(mj::array({0.1f, 0.2f, 0.3f, 0.4f}), {2, 2}), x = mj::array({1.f, 2.f});
  auto plain = mj::checkpoint(body);
  auto dots = mj::checkpoint(body, {.policy = cp::dots_saveable()});
  auto loss = [](const auto& c) { return [c](const Array& w, const Array& x) { return mj::sum(c(w, x)); }; };
  auto r_plain = mj::saved_residuals(loss(plain), w, x);
  auto r_dots = mj::saved_residuals(loss(dots), w, x);
  EXPECT_EQ(count, 1);
  // dots_saveable saves the matmul output; the default saves only the inputs.
  bool plain_saves_dot = false, dots_saves_dot = false;
  for (auto& r : r_plain) plain_saves_dot |= r.made_by == "dot_general";
  for (auto& r : r_dots) dots_saves_dot |= r.made_by == "dot_general";
  EXPECT_FALSE(plain_saves_dot) << r_plain;
  EXPECT_TRUE(dots_saves_dot) << r_dots;
}

TEST(CheckpointRetracing, CapturingLambdasAreTracedPerObject) {
  int count = 0;
  const float k = 2.f;
  auto body = [&count, k](const Array& x) {
    ++count;
    return x * k;
  };
  auto c1 = mj::checkpoint(body);
  Array x = mj::array({1.f, 2.f});
  for (int i = 0; i < 5; ++i) expect_near(c1(x), {2.f, 4.f});
  EXPECT_EQ(count, 1);
  auto c2 = mj::checkpoint(body);
  expect_near(c2(x), {2.f, 4.f});
  EXPECT_EQ(count, 2);
  // Same closure type, other captures: another function.
  auto make = [](float s) { return mj::checkpoint([s](const Array& v) { return v * s; }); };
  expect_near(make(3.f)(x), {3.f, 6.f});
  expect_near(make(5.f)(x), {5.f, 10.f});
}

TEST(CheckpointRetracing, AnObjectsTraceIsScopedToTheTransformationItWasMadeUnder) {
  // f captures w by reference: eagerly w is concrete, under grad a tracer. A trace kept from the
  // eager call must not be reused under grad (its constant would be the old concrete w: a zero
  // gradient), and one made under a grad must not outlive it.
  Array w = mj::array({1.f, 2.f, 3.f});
  Array x = mj::array({0.5f, 1.f, 2.f});
  int count = 0;
  auto g = mj::checkpoint([&w, &count](const Array& v) {
    ++count;
    return mj::sin(v * w);
  });
  Array eager = g(x);
  auto loss = [&](const Array& wv) {
    w = wv;
    return mj::sum(g(x));
  };
  Array w0 = mj::array({1.f, 2.f, 3.f});
  for (int round = 0; round < 2; ++round) {
    Array gw = mj::grad(loss)(w0);
    auto xv = vals(x), wv = vals(w0);
    std::vector<float> want;
    for (size_t i = 0; i < 3; ++i) want.push_back(xv[i] * std::cos(xv[i] * wv[i]));  // d/dw sin(x w)
    expect_near(gw, want, 1e-5f);
  }
  w = w0;
  std::vector<float> want;
  for (size_t i = 0; i < 3; ++i) want.push_back(std::sin(vals(x)[i] * vals(w0)[i]));
  expect_near(eager, want);
  expect_near(g(x), want);
  EXPECT_EQ(count, 3);  // eager once (kept), each grad once (its constant is a tracer: not kept)
}

TEST(CheckpointRetracing, UnhashableStaticValuesAreTracedEachCall) {
  int count = 0;
  auto g = mj::checkpoint(
      [&count](const Array& v, const Array& scale) {
        ++count;
        return v * scale.item<float>();
      },
      {.static_argnums = {1}});
  Array x = mj::array({1.f, 2.f});
  expect_near(g(x, mj::scalar(2.0)), {2.f, 4.f});
  expect_near(g(x, mj::scalar(3.0)), {3.f, 6.f});  // an Array is not hashable: never reused
  EXPECT_EQ(count, 2);
}

TEST(CheckpointRetracing, RequiredSharingOfACapturingLambdaIsATypeError) {
  const float k = 2.f;
  try {
    mj::checkpoint([k](const Array& v) { return v * k; }, {.share_traces = mj::TraceSharing::required});
    FAIL() << "no error";
  } catch (const mj::TypeError& e) {
    const std::string m = e.message();
    EXPECT_NE(m.find("checkpoint"), std::string::npos) << m;
    EXPECT_NE(m.find("TraceSharing::required"), std::string::npos) << m;
  }
}

TEST(CheckpointRetracing, ConcurrentCallsTraceOnce) {
  static std::atomic<int> count{0};
  auto body = [](const Array& x) {
    ++count;
    return mj::tanh(x) * 0.5f;
  };
  auto shared = mj::checkpoint(body);
  Array x = mj::array({0.5f, 1.f, 2.f});
  std::vector<float> want;
  for (float v : vals(x)) want.push_back(std::tanh(v) * 0.5f);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        Array y = (t % 2 ? shared : mj::checkpoint(body))(x);
        auto a = vals(y);
        for (size_t k = 0; k < 3; ++k)
          if (std::fabs(a[k] - want[k]) > 1e-6f) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(count.load(), 1);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace

// Tests of check_grads / check_jvp / check_vjp: they pass for correct derivatives (orders 1 and 2)
// and throw GradCheckError for deliberately wrong custom rules.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

namespace {

using mj::Array;

TEST(CheckGrads, DefaultTolerancesAreJaxs) {
  // jax/_src/public_test_util.py default_gradient_tolerance.
  EXPECT_EQ(mj::default_gradient_tolerance(mj::f32), 2e-3);
  EXPECT_EQ(mj::default_gradient_tolerance(mj::f64), 1e-5);
  EXPECT_EQ(mj::default_gradient_tolerance(mj::bf16), 1e-1);
  EXPECT_EQ(mj::default_gradient_tolerance(mj::i32), 0.0);
}

TEST(CheckGrads, SinAndExpPassOrders1And2) {
  auto f = [](const Array& x) { return mj::sin(x) * mj::exp(0.5 * x); };
  EXPECT_NO_THROW(mj::check_grads(f, mj::array({0.1f, -0.7f, 1.3f, 2.0f}), 1));
  EXPECT_NO_THROW(mj::check_grads(f, mj::array({0.1f, -0.7f, 1.3f, 2.0f}), 2));
  Array x64 = mj::array({0.1, -0.7, 1.3, 2.0}, {4}, mj::f64);
  EXPECT_NO_THROW(mj::check_grads(f, x64, 2));
  EXPECT_NO_THROW(mj::check_grads(f, x64, 2, {"rev"}));
  EXPECT_NO_THROW(mj::check_grads(f, x64, 2, {"fwd"}));
}

TEST(CheckGrads, MatmulBasedFunctionPasses) {
  // A two-argument, matrix-valued function: tanh(W x) with W [3, 2], x [2, 4], plus a sum.
  Array W = mj::array({0.3, -0.1, 0.8, 0.5, -0.4, 0.2}, {3, 2}, mj::f64);
  Array x = mj::array({1.0, 0.5, -0.3, 0.2, -1.1, 0.7, 0.4, 0.9}, {2, 4}, mj::f64);
  auto f = [](const Array& w, const Array& v) {
    Array h = mj::tanh(mj::matmul(w, v));
    return std::pair{h, mj::sum(h * h)};
  };
  EXPECT_NO_THROW(mj::check_grads(f, std::tuple{W, x}, 1));
  EXPECT_NO_THROW(mj::check_grads(f, std::tuple{W, x}, 2));
  // f32 at order 1 with JAX's f32 tolerance.
  EXPECT_NO_THROW(mj::check_grads(f, std::tuple{mj::astype(W, mj::f32), mj::astype(x, mj::f32)}, 1));
}

TEST(CheckGrads, WrongCustomJvpFails) {
  // sin with the derivative 2*t instead of cos(x)*t.
  auto bad = mj::custom_jvp([](const Array& x) { return mj::sin(x); },
                            [](const Array& x, const Array& t) { return std::pair{mj::sin(x), 2.0 * t}; });
  Array x = mj::array({0.1, -0.7, 1.3}, {3}, mj::f64);
  try {
    mj::check_grads(bad, x, 1);
    FAIL() << "expected GradCheckError";
  } catch (const mj::GradCheckError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("JVP tangent"), std::string::npos) << m;
    EXPECT_NE(m.find("derivative order 1"), std::string::npos) << m;
    EXPECT_NE(m.find("max abs error"), std::string::npos) << m;
    EXPECT_NE(m.find("atol 3e-05"), std::string::npos) << m;  // 1e-5 (f64) x 3 elements
  }
  // Reverse mode alone also catches it (the rule is transposed into the wrong gradient).
  try {
    mj::check_grads(bad, x, 1, {"rev"});
    FAIL() << "expected GradCheckError";
  } catch (const mj::GradCheckError& e) {
    EXPECT_NE(std::string(e.what()).find("VJP cotangent projection"), std::string::npos) << e.what();
  }
  // And it is an mj::Error.
  EXPECT_THROW(mj::check_grads(bad, x, 1), mj::Error);
}

TEST(CheckGrads, WrongCustomVjpFailsInReverseMode) {
  // bwd scales the cotangent by 3: the dot-product test fails.
  auto bad = mj::custom_vjp([](const Array& x) { return 2.0 * x; },
                            [](const Array& x) { return std::pair{2.0 * x, std::vector<Array>{}}; },
                            [](const std::vector<Array>&, const Array& ct) { return 6.0 * ct; });
  Array x = mj::array({0.5, 1.5}, {2}, mj::f64);
  EXPECT_THROW(mj::check_grads(bad, x, 1, {"rev"}), mj::GradCheckError);
  // The correct bwd passes.
  auto good = mj::custom_vjp([](const Array& x_) { return 2.0 * x_; },
                             [](const Array& x_) { return std::pair{2.0 * x_, std::vector<Array>{}}; },
                             [](const std::vector<Array>&, const Array& ct) { return 2.0 * ct; });
  EXPECT_NO_THROW(mj::check_grads(good, x, 1, {"rev"}));
}

TEST(CheckGrads, SecondOrderErrorOnlyCaughtAtOrder2) {
  // x^3 with the rule 3 stop_gradient(x)^2 t: the first derivative is right, the second
  // (which differentiates the rule) is 0 instead of 6x.
  auto f = mj::custom_jvp([](const Array& x) { return x * x * x; },
                          [](const Array& x, const Array& t) {
                            Array c = mj::stop_gradient(x);
                            return std::pair{x * x * x, 3.0 * c * c * t};
                          });
  Array x = mj::array({0.5, -1.2}, {2}, mj::f64);
  EXPECT_NO_THROW(mj::check_grads(f, x, 1));
  try {
    mj::check_grads(f, x, 2, {"fwd"});
    FAIL() << "expected GradCheckError";
  } catch (const mj::GradCheckError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("JVP of JVP"), std::string::npos) << m;
    EXPECT_NE(m.find("derivative order 2"), std::string::npos) << m;
  }
  try {
    mj::check_grads(f, x, 2, {"rev"});
    FAIL() << "expected GradCheckError";
  } catch (const mj::GradCheckError& e) {
    EXPECT_NE(std::string(e.what()).find("VJP of VJP"), std::string::npos) << e.what();
  }
}

TEST(CheckGrads, BadArguments) {
  auto f = [](const Array& x) { return mj::sin(x); };
  Array x = mj::array({0.5f});
  EXPECT_THROW(mj::check_grads(f, x, 0), mj::ValueError);
  EXPECT_THROW(mj::check_grads(f, x, 1, {"sideways"}), mj::ValueError);
  EXPECT_THROW(mj::check_grads([](const Array& v) { return v; }, mj::arange(3), 1), mj::TypeError);
}

TEST(CheckGrads, ExplicitToleranceOverride) {
  // With a huge tolerance the wrong rule is accepted; with the default it is not.
  auto bad = mj::custom_jvp([](const Array& x) { return mj::sin(x); },
                            [](const Array& x, const Array& t) { return std::pair{mj::sin(x), 1.05 * mj::cos(x) * t}; });
  Array x = mj::array({0.3}, {1}, mj::f64);
  EXPECT_THROW(mj::check_grads(bad, x, 1, {"fwd"}), mj::GradCheckError);
  mj::GradCheckOptions loose;
  loose.atol = 0.5;
  loose.rtol = 0.5;
  EXPECT_NO_THROW(mj::check_grads(bad, x, 1, {"fwd"}, loose));
}

}  // namespace

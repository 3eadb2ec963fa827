// check_grads (central differences at JAX's tolerances, forward and reverse) for igamma in f64,
// eagerly and under jit, its derivative values against mpmath, and igamma_grad_a's missing JVP.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include <minijax/minijax.h>

namespace {

using mj::Array;
namespace lax = mj::lax;

Array vec(std::initializer_list<double> v) {
  return mj::array(std::vector<double>(v), {int64_t(v.size())}, mj::f64);
}

// With respect to both operands at once: first order (the second order with respect to a would
// differentiate igamma_grad_a, which JAX does not define).
TEST(IgammaGrads, CheckGradsBothOperandsOrder1) {
  Array a = vec({0.3, 1.0, 2.5, 7.0, 20.0}), x = vec({0.2, 1.5, 2.0, 9.0, 15.0});
  auto f = [](const Array& u, const Array& v) { return lax::igamma(u, v); };
  EXPECT_NO_THROW(mj::check_grads(f, std::tuple{a, x}, 1));
  EXPECT_NO_THROW(mj::check_grads(mj::jit(f), std::tuple{a, x}, 1)) << "under jit";
}

// With respect to x alone: second order (d/dx is exp(-x + (a - 1) log x - lgamma(a))).
TEST(IgammaGrads, CheckGradsInXOrder2) {
  Array a = vec({0.3, 1.0, 2.5, 7.0, 20.0}), x = vec({0.2, 1.5, 2.0, 9.0, 15.0});
  auto f = [a](const Array& v) { return lax::igamma(a, v); };
  EXPECT_NO_THROW(mj::check_grads(f, x, 2));
  EXPECT_NO_THROW(mj::check_grads(mj::jit(f), x, 2)) << "under jit";
  auto g = [f](const Array& v) { return mj::sum(f(v) * mj::sin(v)); };
  EXPECT_NO_THROW(mj::check_grads(g, x, 2, {"rev"})) << "in a sum";
}

// The derivative values: d/da at (1, 1) from mpmath.diff of gammainc(a, 0, 1, regularized=True) at
// 200 bits (tools/special_reference_igamma.py's method): -0.43172971063489869613; d/dx at (2.5, 1.5)
// by hand: x^(a-1) e^-x / Gamma(a) with Gamma(2.5) = 3 sqrt(pi) / 4.
TEST(IgammaGrads, DerivativesMatchReferences) {
  const double pi = 3.14159265358979323846;
  const double dx_want = std::pow(1.5, 1.5) * std::exp(-1.5) / (0.75 * std::sqrt(pi));
  auto fa = [](const Array& u) { return mj::sum(lax::igamma(u, vec({1.0}))); };
  auto fx = [](const Array& v) { return mj::sum(lax::igamma(vec({2.5}), v)); };
  EXPECT_NEAR(mj::grad(fa)(vec({1.0})).data<double>()[0], -0.43172971063489869613, 1e-13);
  EXPECT_NEAR(mj::jit(mj::grad(fa))(vec({1.0})).data<double>()[0], -0.43172971063489869613, 1e-13) << "jit";
  EXPECT_NEAR(mj::grad(fx)(vec({1.5})).data<double>()[0], dx_want, 1e-14 * dx_want);
  EXPECT_NEAR(mj::jit(mj::grad(fx))(vec({1.5})).data<double>()[0], dx_want, 1e-14 * dx_want) << "jit";
}

// igamma_grad_a has no JVP in JAX: a float tangent reaching it is a NotDifferentiableError naming
// it (so is igamma's second derivative with respect to a); a zero tangent passes.
TEST(IgammaGrads, IgammaGradAIsNotDifferentiable) {
  Array x = vec({1.5});
  auto f = [x](const Array& u) { return mj::sum(lax::igamma_grad_a(u, x)); };
  try {
    mj::grad(f)(vec({2.0}));
    FAIL() << "expected NotDifferentiableError";
  } catch (const mj::NotDifferentiableError& e) {
    EXPECT_NE(std::string(e.what()).find("igamma_grad_a"), std::string::npos) << e.what();
  }
  auto second = [x](const Array& u) {
    return mj::sum(mj::grad([x](const Array& w) { return mj::sum(lax::igamma(w, x)); })(u));
  };
  EXPECT_THROW(mj::grad(second)(vec({2.0})), mj::NotDifferentiableError);
  auto through_stop = [x](const Array& u) {
    return mj::sum(lax::igamma_grad_a(lax::stop_gradient(u), x) * u);
  };
  EXPECT_NO_THROW(mj::grad(through_stop)(vec({2.0})));
}

}  // namespace

// check_grads (central differences at JAX's tolerances, order 2, forward and reverse) for lgamma,
// digamma and polygamma(m, .) in f64, eagerly and under jit; derivative values against mpmath.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace {

using mj::Array;
namespace lax = mj::lax;

struct Fn {
  std::string name;
  std::function<Array(const Array&)> f;
  std::vector<double> at;  ///< points away from the poles at 0 and the negative integers
};

std::vector<Fn> functions() {
  std::vector<Fn> v = {
      {"lgamma", [](const Array& x) { return lax::lgamma(x); }, {-2.5, -0.3, 0.4, 1.5, 7.0}},
      {"digamma", [](const Array& x) { return lax::digamma(x); }, {-2.5, -0.3, 0.4, 1.5, 7.0}},
  };
  for (int m = 1; m <= 3; ++m)
    v.push_back({"polygamma " + std::to_string(m),
                 [m](const Array& x) { return lax::polygamma(m, x); },
                 {-0.5, 0.4, 1.5, 7.0, 12.0}});
  return v;
}

TEST(GammaGrads, CheckGradsOrder2ForwardAndReverseF64) {
  for (const Fn& fn : functions()) {
    Array x = mj::array(fn.at, {int64_t(fn.at.size())}, mj::f64);
    EXPECT_NO_THROW(mj::check_grads(fn.f, x, 2)) << fn.name;
    EXPECT_NO_THROW(mj::check_grads(mj::jit(fn.f), x, 2)) << fn.name << " under jit";
    auto g = [f = fn.f](const Array& a) { return mj::sum(f(a) * mj::sin(a)); };
    EXPECT_NO_THROW(mj::check_grads(g, x, 2, {"rev"})) << fn.name << " in a sum";
  }
}

// d/dx lgamma = digamma, digamma' = trigamma, polygamma(2, .)' = polygamma(3, .): mpmath's psi(m, x)
// at 30 digits (mpmath.psi(0, 2.5) = 0.70315664064524318723, psi(1, 2.5) = 0.49035775610023486497,
// psi(3, 0.75) = 19.7633125348505997603); eagerly and under jit.
TEST(GammaGrads, DerivativesMatchMpmath) {
  struct D {
    std::string name;
    std::function<Array(const Array&)> f;
    double x, want;
  };
  const std::vector<D> ds = {
      {"lgamma", [](const Array& a) { return lax::lgamma(a); }, 2.5, 0.70315664064524318723},
      {"digamma", [](const Array& a) { return lax::digamma(a); }, 2.5, 0.49035775610023486497},
      {"polygamma 2", [](const Array& a) { return lax::polygamma(2, a); }, 0.75, 19.7633125348505997603},
  };
  for (const D& d : ds) {
    auto s = [f = d.f](const Array& a) { return mj::sum(f(a)); };
    Array x = mj::array({d.x}, {1}, mj::f64);
    EXPECT_NEAR(mj::grad(s)(x).data<double>()[0], d.want, 1e-13 * std::fabs(d.want)) << d.name;
    EXPECT_NEAR(mj::jit(mj::grad(s))(x).data<double>()[0], d.want, 1e-13 * std::fabs(d.want))
        << d.name << " jit";
  }
}

}  // namespace

// check_grads (central differences at JAX's tolerances, order 2, forward and reverse) for issue 29's
// differentiable elementwise functions sinh ... erfc in f64, eagerly and under jit.
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
  const char* name;
  std::function<Array(const Array&)> f;
  std::vector<double> at;  ///< points inside the domain, away from poles and edges
};

std::vector<Fn> functions() {
  return {
      {"sinh", [](const Array& x) { return lax::sinh(x); }, {-2.5, -0.3, 0.0, 0.7, 3.0}},
      {"cosh", [](const Array& x) { return lax::cosh(x); }, {-2.5, -0.3, 0.0, 0.7, 3.0}},
      {"asin", [](const Array& x) { return lax::asin(x); }, {-0.9, -0.3, 0.0, 0.5, 0.85}},
      {"acos", [](const Array& x) { return lax::acos(x); }, {-0.9, -0.3, 0.0, 0.5, 0.85}},
      {"atan", [](const Array& x) { return lax::atan(x); }, {-4.0, -0.3, 0.0, 0.7, 10.0}},
      {"asinh", [](const Array& x) { return lax::asinh(x); }, {-4.0, -0.3, 0.0, 0.7, 10.0}},
      {"acosh", [](const Array& x) { return lax::acosh(x); }, {1.1, 1.5, 2.0, 3.5, 10.0}},
      {"atanh", [](const Array& x) { return lax::atanh(x); }, {-0.9, -0.3, 0.0, 0.5, 0.85}},
      {"cbrt", [](const Array& x) { return lax::cbrt(x); }, {-8.0, -0.3, 0.2, 0.7, 27.0}},
      {"erfc", [](const Array& x) { return lax::erfc(x); }, {-2.0, -0.3, 0.0, 0.7, 3.0}},
  };
}

TEST(SpecialGrads, CheckGradsOrder2ForwardAndReverseF64) {
  for (const Fn& fn : functions()) {
    Array x = mj::array(fn.at, {int64_t(fn.at.size())}, mj::f64);
    EXPECT_NO_THROW(mj::check_grads(fn.f, x, 2)) << fn.name;
    EXPECT_NO_THROW(mj::check_grads(mj::jit(fn.f), x, 2)) << fn.name << " under jit";
    // A function of the primitive's result (the JVP's products and the rule's transposes).
    auto g = [f = fn.f](const Array& a) { return mj::sum(f(a) * mj::sin(a)); };
    EXPECT_NO_THROW(mj::check_grads(g, x, 2, {"rev"})) << fn.name << " in a sum";
  }
}

// The derivative values at one point against their closed forms (hand derivations, evaluated with
// <cmath>): d/dx sinh = cosh, asin' = 1/sqrt(1-x^2), acosh' = 1/sqrt(x^2-1), atanh' = 1/(1-x^2),
// cbrt' = x^(-2/3)/3, erfc' = -2/sqrt(pi) e^(-x^2); eagerly and under jit.
TEST(SpecialGrads, DerivativesMatchClosedForms) {
  const double pi = 3.14159265358979323846;
  struct D {
    const char* name;
    std::function<Array(const Array&)> f;
    double x, want;
  };
  const std::vector<D> ds = {
      {"sinh", [](const Array& a) { return lax::sinh(a); }, 0.7, std::cosh(0.7)},
      {"cosh", [](const Array& a) { return lax::cosh(a); }, 0.7, std::sinh(0.7)},
      {"asin", [](const Array& a) { return lax::asin(a); }, 0.6, 1 / std::sqrt(1 - 0.36)},
      {"acos", [](const Array& a) { return lax::acos(a); }, 0.6, -1 / std::sqrt(1 - 0.36)},
      {"atan", [](const Array& a) { return lax::atan(a); }, 2.0, 1 / 5.0},
      {"asinh", [](const Array& a) { return lax::asinh(a); }, 2.0, 1 / std::sqrt(5.0)},
      {"acosh", [](const Array& a) { return lax::acosh(a); }, 2.0, 1 / std::sqrt(3.0)},
      {"atanh", [](const Array& a) { return lax::atanh(a); }, 0.5, 1 / 0.75},
      {"cbrt", [](const Array& a) { return lax::cbrt(a); }, 8.0, 1 / 12.0},
      {"erfc", [](const Array& a) { return lax::erfc(a); }, 0.5, -2 / std::sqrt(pi) * std::exp(-0.25)},
  };
  for (const D& d : ds) {
    auto s = [f = d.f](const Array& a) { return mj::sum(f(a)); };
    Array x = mj::array({d.x}, {1}, mj::f64);
    EXPECT_NEAR(mj::grad(s)(x).data<double>()[0], d.want, 1e-14 * std::fabs(d.want)) << d.name;
    EXPECT_NEAR(mj::jit(mj::grad(s))(x).data<double>()[0], d.want, 1e-14 * std::fabs(d.want))
        << d.name << " jit";
  }
}

}  // namespace

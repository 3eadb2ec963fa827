// lgamma, digamma and polygamma at their special values (issue 29 item 8), eagerly and compiled, f32 and
// f64: the poles, ±0, ±inf, NaN, the zeros, polygamma for x <= 0 as JAX v0.7.0 returns it, bad orders.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
const double kEuler = 0.57721566490153286061;

// got matches want: NaN for NaN, the same infinity, otherwise within rtol (or 1e-300 absolute for 0).
bool same(double got, double want, double rtol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(got - want) <= rtol * std::fabs(want) + 1e-300;
}

// f on xs (f32 or f64), eager and compiled, against want.
void expect_values(const std::string& name, const std::function<Array(const Array&)>& f,
                   const std::vector<double>& xs, const std::vector<double>& want) {
  for (mj::DType dt : {mj::f64, mj::f32}) {
    Array x = mj::array(xs, {int64_t(xs.size())}, dt);
    const double rtol = dt == mj::f64 ? 1e-12 : 1e-5;
    Array eager = mj::astype(f(x), mj::f64), compiled = mj::astype(mj::jit(f)(x), mj::f64);
    for (size_t i = 0; i < xs.size(); ++i)
      for (const auto& [how, got] :
           {std::pair{"eager", eager.data<double>()[i]}, std::pair{"compiled", compiled.data<double>()[i]}})
        EXPECT_TRUE(same(got, want[i], rtol)) << name << " " << mj::dtype_name(dt) << " " << how << " at "
                                              << xs[i] << ": " << got << ", want " << want[i];
  }
}

// lgamma: +inf at 0, -0, the negative integers and ±inf (JAX: XLA's chlo.lgamma); 0 at 1 and 2;
// log(sqrt(pi)) at 1/2; mpmath's log|Gamma| at -0.5 and -2.25 (mpmath.loggamma's real part, 30 digits).
TEST(GammaValues, LgammaPolesZerosAndInfinities) {
  expect_values("lgamma", [](const Array& x) { return lax::lgamma(x); },
                {0.0, -0.0, -1.0, -2.0, -10.0, kInf, -kInf, kNaN, 1.0, 2.0, 0.5, -0.5, -2.25},
                {kInf, kInf, kInf, kInf, kInf, kInf, kInf, kNaN, 0.0, 0.0, 0.5723649429247000870717137,
                 1.2655121234846453965, 0.55550154502064747059});
}

// digamma: NaN at 0, -0, the negative integers and -inf (JAX's values, where scipy gives ±inf or
// NaN); +inf at +inf; -gamma at 1; 1 - gamma at 2; mpmath's psi(0, x) at -0.5 and -2.25.
TEST(GammaValues, DigammaPolesAndInfinities) {
  expect_values("digamma", [](const Array& x) { return lax::digamma(x); },
                {0.0, -0.0, -1.0, -3.0, -kInf, kInf, kNaN, 1.0, 2.0, -0.5, -2.25},
                {kNaN, kNaN, kNaN, kNaN, kNaN, kInf, kNaN, -kEuler, 1 - kEuler, 0.036489973978576520559,
                 4.1585835646579722748});
}

// polygamma(m, x) for x <= 0 as JAX v0.7.0 returns it (chlo.polygamma: (-1)^(m+1) m! zeta(m+1, x) with
// chlo.zeta's pole rule: at x = 0, -0, the negative integers and -inf zeta is +inf for even m + 1
// and NaN for odd m + 1, so polygamma is +inf for odd m and NaN for even m). At non-integer
// -10 < x < 0 chlo.zeta's ten direct terms and Euler–Maclaurin tail at x + 10 give the function's
// value: mpmath's psi(m, x) (30 digits) at -0.5, -1.5, -2.25, -4.75. +inf: 0.
TEST(GammaValues, PolygammaAtAndBelowZeroAsJax) {
  const std::vector<double> xs = {0.0, -0.0, -1.0, -3.0, -kInf, kInf, -0.5, -1.5, -2.25, -4.75};
  const std::vector<std::vector<double>> at_negative = {
      {8.9348022005446793094, 9.3792466449891237539, 19.379410511869137363, 19.54930139023946447},
      {-0.8287966442343199956, -0.236204051641727403, 123.89694977406016558, -124.0610655213093007},
      {193.40909103400243724, 194.59427621918762242, 1558.45502318871434, 1558.5318783056006283},
      {-3.4742498266672251905, -0.31375599950673136338, 24481.47991090256251, -24481.582451925002662}};
  for (int m = 1; m <= 4; ++m) {
    const double pole = m % 2 == 1 ? kInf : kNaN;
    std::vector<double> want = {pole, pole, pole, pole, pole, 0.0};
    want.insert(want.end(), at_negative[size_t(m - 1)].begin(), at_negative[size_t(m - 1)].end());
    expect_values(
        "polygamma " + std::to_string(m), [m](const Array& x) { return lax::polygamma(m, x); }, xs, want);
  }
}

// m = 0 is digamma; a traced order that is negative or not an integer gives NaN (JAX's
// chlo.polygamma), compiled and eager under jit's trace alike.
TEST(GammaValues, PolygammaOrderZeroAndTracedBadOrders) {
  Array x = mj::array({0.5, 1.5, 3.0, 7.25}, {4}, mj::f64);
  Array p0 = lax::polygamma(0, x), d = lax::digamma(x);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p0.data<double>()[i], d.data<double>()[i]);
  auto f = [](const Array& m, const Array& x) { return lax::polygamma(m, x); };
  auto lax_digamma = [](const Array& x) { return lax::digamma(x); };
  Array got = mj::jit(f)(mj::array({-1.0, 0.5, 2.0, -0.0}, {4}, mj::f64), x);
  EXPECT_TRUE(std::isnan(got.data<double>()[0]));
  EXPECT_TRUE(std::isnan(got.data<double>()[1]));
  EXPECT_FALSE(std::isnan(got.data<double>()[2]));
  EXPECT_EQ(got.data<double>()[3], mj::jit(lax_digamma)(x).data<double>()[3]);  // -0 is the order 0
}

// Derivatives: d/dx polygamma(m, x) = polygamma(m + 1, x); a tangent of m is NotDifferentiableError
// naming polygamma (JAX raises ValueError "polygamma gradient with respect to m is not supported").
TEST(GammaValues, PolygammaDerivativeInMIsNotDifferentiable) {
  Array x = mj::array({0.75, 2.5}, {2}, mj::f64);
  Array m = mj::array({1.0, 2.0}, {2}, mj::f64);
  auto in_m = [x](const Array& mm) { return mj::sum(lax::polygamma(mm, x)); };
  try {
    mj::grad(in_m)(m);
    ADD_FAILURE() << "no error for a derivative in m";
  } catch (const mj::NotDifferentiableError& e) {
    EXPECT_NE(std::string(e.what()).find("polygamma"), std::string::npos) << e.what();
  }
  auto in_x = [m](const Array& xx) { return mj::sum(lax::polygamma(m, xx)); };
  Array g = mj::grad(in_x)(x), want = lax::polygamma(mj::array({2.0, 3.0}, {2}, mj::f64), x);
  for (int i = 0; i < 2; ++i) EXPECT_DOUBLE_EQ(g.data<double>()[i], want.data<double>()[i]);
}

}  // namespace
}  // namespace conformance

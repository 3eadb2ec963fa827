// NaN and ±Inf through the public elementwise functions, eagerly and compiled, against JAX's
// semantics: relu, clamp/clip, select_n/where (and their gradients), and the others.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// The special inputs, then ordinary ones.
const std::vector<double> kInputs = {kNaN, -kInf, kInf, -0.0, 0.0, -1.5, 0.5, 2.5};

std::vector<double> values(const Array& a) {
  Array f = mj::astype(a, mj::f64);
  return std::vector<double>(f.data<double>(), f.data<double>() + f.size());
}

// NaN where NaN is expected, the same infinity, else within rtol (zeros: either sign).
bool close(double got, double want, double rtol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(got - want) <= rtol * std::fabs(want) + 1e-300;
}

struct Row {
  std::string name;
  std::function<Array(const Array&)> f;
  /// The expected value: JAX's definition of the function evaluated in double with <cmath>
  /// (IEEE 754 special values), the source named per row.
  std::function<double(double)> ref;
};

double relu_ref(double x) { return x > 0 ? x : (std::isnan(x) ? x : 0.0); }  // max(x, 0), NaN-propagating
double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double gelu_tanh_ref(double x) {  // jax.nn.gelu(approximate=True): x * 0.5 (1 + tanh(...)); -inf gives NaN
  return x * (0.5 * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x))));
}
double gelu_erf_ref(double x) { return x * (std::erf(x / std::numbers::sqrt2) + 1) / 2; }
double sign_ref(double x) { return std::isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
double remainder_ref(double x) {  // numpy/JAX remainder(x, 2): fmod, moved to the divisor's sign
  double r = std::fmod(x, 2.0);
  return (r != 0 && r < 0) ? r + 2.0 : r;
}
double logsumexp_pair_ref(double x) {  // logsumexp([x, 0]): JAX's max-shifted form (inf max -> shift 0)
  double m = std::isnan(x) ? x : std::max(x, 0.0);
  double s = std::isfinite(m) ? m : 0.0;
  return std::log(std::exp(x - s) + std::exp(0.0 - s)) + s;
}
double softmax_first_ref(double x) {  // softmax([x, 0])[0] = exp(x - m) / (exp(x - m) + exp(-m))
  double m = std::isnan(x) ? x : std::max(x, 0.0);
  return std::exp(x - m) / (std::exp(x - m) + std::exp(0.0 - m));
}

Array pair_with_zero(const Array& x) { return mj::stack({x, mj::zeros_like(x)}, 1); }

std::vector<Row> rows() {
  using A = const Array&;
  return {
      // jax.nn.relu = max(x, 0) (NaN-propagating max, XLA's semantics).
      {"relu", [](A x) { return mj::relu(x); }, relu_ref},
      {"abs", [](A x) { return mj::abs(x); }, [](double x) { return std::fabs(x); }},
      // lax.sign: NaN -> NaN, +-0 -> +-0 (XLA's Sign).
      {"sign", [](A x) { return mj::sign(x); }, sign_ref},
      {"negative", [](A x) { return mj::negative(x); }, [](double x) { return -x; }},
      {"square", [](A x) { return mj::square(x); }, [](double x) { return x * x; }},
      // jnp.maximum/minimum propagate NaN.
      {"maximum", [](A x) { return mj::maximum(x, 0.5); }, [](double x) { return std::isnan(x) ? x : std::max(x, 0.5); }},
      {"minimum", [](A x) { return mj::minimum(x, 0.5); }, [](double x) { return std::isnan(x) ? x : std::min(x, 0.5); }},
      // jnp.clip = minimum(maximum(x, lo), hi).
      {"clip", [](A x) { return mj::clip(x, -1.0, 1.0); }, [](double x) { return std::isnan(x) ? x : std::min(std::max(x, -1.0), 1.0); }},
      {"clamp", [](A x) { return lax::clamp(mj::scalar(-1.0, x.dtype()), x, mj::scalar(1.0, x.dtype())); },
       [](double x) { return std::isnan(x) ? x : std::min(std::max(x, -1.0), 1.0); }},
      // jnp.where(x > 0, x, -x): NaN > 0 is false, so -NaN (a NaN).
      {"where", [](A x) { return mj::where(x > 0.0, x, mj::negative(x)); }, [](double x) { return x > 0 ? x : -x; }},
      {"exp", [](A x) { return mj::exp(x); }, [](double x) { return std::exp(x); }},
      {"log", [](A x) { return mj::log(x); }, [](double x) { return std::log(x); }},
      {"log1p", [](A x) { return mj::log1p(x); }, [](double x) { return std::log1p(x); }},
      {"expm1", [](A x) { return mj::expm1(x); }, [](double x) { return std::expm1(x); }},
      {"sqrt", [](A x) { return mj::sqrt(x); }, [](double x) { return std::sqrt(x); }},
      {"rsqrt", [](A x) { return mj::rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }},
      {"sin", [](A x) { return mj::sin(x); }, [](double x) { return std::sin(x); }},
      {"cos", [](A x) { return mj::cos(x); }, [](double x) { return std::cos(x); }},
      {"tan", [](A x) { return mj::tan(x); }, [](double x) { return std::tan(x); }},
      {"tanh", [](A x) { return mj::tanh(x); }, [](double x) { return std::tanh(x); }},
      {"erf", [](A x) { return mj::erf(x); }, [](double x) { return std::erf(x); }},
      {"sigmoid", [](A x) { return mj::sigmoid(x); }, sigmoid_ref},
      {"gelu_tanh", [](A x) { return mj::gelu(x, true); }, gelu_tanh_ref},
      {"gelu_erf", [](A x) { return mj::gelu(x, false); }, gelu_erf_ref},
      {"floor", [](A x) { return mj::floor(x); }, [](double x) { return std::floor(x); }},
      {"ceil", [](A x) { return mj::ceil(x); }, [](double x) { return std::ceil(x); }},
      {"round", [](A x) { return mj::round(x); }, [](double x) { return std::nearbyint(x); }},
      {"remainder", [](A x) { return mj::remainder(x, 2.0); }, remainder_ref},
      {"fmod", [](A x) { return mj::fmod(x, 2.0); }, [](double x) { return std::fmod(x, 2.0); }},
      // jax.nn.logsumexp / softmax of the pair [x, 0] (their max-shifted forms).
      {"logsumexp", [](A x) { return mj::logsumexp(pair_with_zero(x), 1); }, logsumexp_pair_ref},
      {"softmax", [](A x) { return mj::squeeze(lax::slice(mj::softmax(pair_with_zero(x), 1), {0, 0}, {x.shape()[0], 1}), {1}); },
       softmax_first_ref},
  };
}

// Every row, f64 and f32, eagerly and under jit, element by element against the reference.
TEST(NanSemantics, PublicElementwiseFunctionsMatchJaxOnNanAndInf) {
  for (const Row& r : rows())
    for (mj::DType dt : {mj::f64, mj::f32}) {
      Array x = mj::array(kInputs, {int64_t(kInputs.size())}, dt);
      const double rtol = dt == mj::f64 ? 1e-9 : 1e-5;
      std::vector<double> eager = values(r.f(x));
      std::vector<double> compiled = values(mj::jit(r.f)(x));
      for (size_t i = 0; i < kInputs.size(); ++i) {
        const double in = double(dt == mj::f32 ? float(kInputs[i]) : kInputs[i]);
        const double want = r.ref(in);
        EXPECT_TRUE(close(eager[i], want, rtol))
            << r.name << " " << mj::dtype_name(dt) << " eager of " << in << ": " << eager[i] << " want " << want;
        EXPECT_TRUE(close(compiled[i], want, rtol))
            << r.name << " " << mj::dtype_name(dt) << " compiled of " << in << ": " << compiled[i] << " want " << want;
      }
    }
}

// relu's derivative is JAX's select(x > 0, g, 0): 0 at 0, at NaN and below; 1 above (eager and
// compiled). relu of an int is the int's max(x, 0).
TEST(NanSemantics, ReluDerivativeIsJaxs) {
  Array x = mj::array({kNaN, -kInf, kInf, -0.0, 0.0, -1.5, 2.5}, {7}, mj::f64);
  auto f = [](const Array& a) { return mj::sum(mj::relu(a)); };
  const std::vector<double> want = {0, 0, 1, 0, 0, 0, 1};
  EXPECT_EQ(values(mj::grad(f)(x)), want);
  EXPECT_EQ(values(mj::jit(mj::grad(f))(x)), want);
  Array xi = mj::array({-3, 0, 4}, {3}, mj::i32);
  EXPECT_EQ(values(mj::relu(xi)), (std::vector<double>{0, 0, 4}));
}

// where/select_n: NaN in the unselected operand reaches neither the value nor the gradient of the
// other operand, eagerly, compiled and compiled gradient; a NaN cotangent at a position where a
// case was not selected gives that case 0 there (the transpose selects, it does not multiply).
TEST(NanSemantics, SelectDoesNotLeakTheUnselectedOperand) {
  Array c = mj::array({1, 0, 1, 0}, {4}, mj::bool_);
  Array a = mj::array({1.0, kNaN, 3.0, -kInf}, {4}, mj::f64);
  Array b = mj::array({kNaN, 2.0, kInf, 4.0}, {4}, mj::f64);
  auto f = [c](const Array& x, const Array& y) { return mj::where(c, x, y); };
  const std::vector<double> want = {1, 2, 3, 4};
  EXPECT_EQ(values(f(a, b)), want);
  EXPECT_EQ(values(mj::jit(f)(a, b)), want);
  // Fused with arithmetic on both operands (the compiler computes both, selects one).
  auto g = [c](const Array& x, const Array& y) { return mj::where(c, mj::exp(x) * 2.0, mj::log(y) + 1.0); };
  std::vector<double> eg = values(g(a, b)), cg = values(mj::jit(g)(a, b));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(std::isnan(eg[i])) << "eager " << i;
    EXPECT_EQ(eg[i], cg[i]) << "compiled " << i;
  }
  // Gradients of sum(where(c, x, y)) with respect to x and y: the masks, with no NaN.
  auto loss = [c](const Array& x, const Array& y) { return mj::sum(mj::where(c, x, y)); };
  auto [gx, gy] = mj::grad(loss, mj::argnums<0, 1>)(a, b);
  EXPECT_EQ(values(gx), (std::vector<double>{1, 0, 1, 0}));
  EXPECT_EQ(values(gy), (std::vector<double>{0, 1, 0, 1}));
  auto [jx, jy] = mj::jit(mj::grad(loss, mj::argnums<0, 1>))(a, b);
  EXPECT_EQ(values(jx), (std::vector<double>{1, 0, 1, 0}));
  EXPECT_EQ(values(jy), (std::vector<double>{0, 1, 0, 1}));
  // A NaN cotangent where case 0 is selected: case 1's cotangent there is exactly 0.
  auto vjp = mj::vjp_flat([](const std::vector<Array>& v) { return std::vector<Array>{lax::select_n(v[0], {v[1], v[2]})}; },
                          {c, a, b});
  Array ct = mj::array({5.0, kNaN, 6.0, kNaN}, {4}, mj::f64);
  std::vector<Array> cts = vjp.pullback({ct});
  // select_n(c, {a, b}): c true picks b. So b gets ct where c, a gets ct where !c.
  std::vector<double> ca = values(cts[1]), cb = values(cts[2]);
  EXPECT_EQ(ca[0], 0.0);
  EXPECT_EQ(ca[2], 0.0);
  EXPECT_EQ(cb[1], 0.0);
  EXPECT_EQ(cb[3], 0.0);
  EXPECT_TRUE(std::isnan(ca[1]) && std::isnan(ca[3]));
  EXPECT_EQ(cb[0], 5.0);
  EXPECT_EQ(cb[2], 6.0);
}

// clamp with NaN bounds: NaN (XLA's min(max(x, lo), hi) with NaN-propagating max/min).
TEST(NanSemantics, ClampWithNanBoundsIsNan) {
  Array lo = mj::array({kNaN, -1.0, 0.0}, {3}, mj::f32);
  Array x = mj::array({0.5, 0.5, 0.5}, {3}, mj::f32);
  Array hi = mj::array({1.0, kNaN, 1.0}, {3}, mj::f32);
  auto f = [](const Array& l, const Array& v, const Array& h) { return lax::clamp(l, v, h); };
  for (const std::vector<double>& got : {values(f(lo, x, hi)), values(mj::jit(f)(lo, x, hi))}) {
    EXPECT_TRUE(std::isnan(got[0]));
    EXPECT_TRUE(std::isnan(got[1]));
    EXPECT_EQ(got[2], 0.5);
  }
}

}  // namespace
}  // namespace conformance

// minijax primitives igamma and igamma_grad_a (jax.lax's igamma_p, igamma_grad_a_p): shape rules,
// the eager scalar series / continued fraction, and the lax:: binders.
#include "core/special_igamma.h"

#include <cmath>
#include <limits>

#include "core/primitives/elementwise_family.h"
#include "core/trace.h"

namespace minijax {
namespace special {
namespace {

// The iteration bounds and tolerance of jit/codegen/lower/transcendentals.h (kIgammaSeriesIters,
// kIgammaCfIters), repeated here so that eager and compiled code take the same steps.
constexpr int kSeriesIters = 2000;
constexpr int kCfIters = 2000;
constexpr double kTol = 0x1p-53;

// digamma(z) for z > 0: the recurrence psi(z) = psi(z + 1) - 1/z up to z >= 10, then the
// asymptotic series log z - 1/(2z) - sum B_2k / (2k z^2k) (Abramowitz & Stegun 6.3.18, 7 terms).
double digamma_pos(double z) {
  double acc = 0;
  while (z < 10) {
    acc -= 1 / z;
    z += 1;
  }
  const double w = 1 / (z * z);
  const double tail = w * (1.0 / 12 +
                           w * (-1.0 / 120 +
                                w * (1.0 / 252 +
                                     w * (-1.0 / 240 + w * (1.0 / 132 + w * (-691.0 / 32760 + w / 12))))));
  return acc + std::log(z) - 0.5 / z - tail;
}

struct Series {
  double s, ds;  // sum_n x^n / ((a+1)...(a+n)) and its derivative with respect to a
};

// P(a, x) = exp(a log x - x - lgamma(a + 1)) * S: terms c_n = c_(n-1) x / (a + n) while a lane's
// last term moves its sum (and, for the derivative, the derivative's sum) by more than kTol.
Series series(double a, double x, bool want_grad) {
  double c = 1, s = 1, dc = 0, ds = 0, r = a;
  for (int n = 0; n < kSeriesIters; ++n) {
    r += 1;
    const double t = x / r;
    dc = dc * t - c * t / r;
    c *= t;
    s += c;
    ds += dc;
    const bool done = c <= kTol * s && (!want_grad || std::fabs(dc) <= kTol * std::fabs(ds));
    if (done) break;
  }
  return {s, ds};
}

// Legendre's continued fraction of Q(a, x) x^-a e^x Gamma(a) in Cephes's p/q recurrence (igamc.c),
// with the derivatives of p and q with respect to a carried alongside (XLA's IgammaGradA).
Series continued_fraction(double a, double x, bool want_grad) {
  double y = 1 - a, z = x + y + 1, c = 0;
  double pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x;
  double dpkm2 = 0, dqkm2 = 0, dpkm1 = 0, dqkm1 = -x;
  double ans = pkm1 / qkm1, dans = (dpkm1 - ans * dqkm1) / qkm1;
  for (int n = 0; n < kCfIters; ++n) {
    c += 1;
    y += 1;
    z += 2;
    const double yc = y * c;
    const double pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
    const double dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c;
    const double dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c;
    bool done = false;
    if (qk != 0) {
      const double r = pk / qk;
      const double dr = (dpk - r * dqk) / qk;
      done = std::fabs(ans - r) <= kTol * std::fabs(r) &&
             (!want_grad || std::fabs(dans - dr) <= kTol * std::fabs(dr));
      ans = r;
      dans = dr;
    }
    pkm2 = pkm1;
    pkm1 = pk;
    qkm2 = qkm1;
    qkm1 = qk;
    dpkm2 = dpkm1;
    dpkm1 = dpk;
    dqkm2 = dqkm1;
    dqkm1 = dqk;
    if (std::fabs(pk) > 0x1p52) {  // rescale by an exact power of 2
      pkm2 *= 0x1p-52;
      pkm1 *= 0x1p-52;
      qkm2 *= 0x1p-52;
      qkm1 *= 0x1p-52;
      dpkm2 *= 0x1p-52;
      dpkm1 *= 0x1p-52;
      dqkm2 *= 0x1p-52;
      dqkm1 *= 0x1p-52;
    }
    if (done) break;
  }
  return {ans, dans};
}

/// Scalar P(a, x) (want_grad false) or dP/da (true) in double: the eager igamma and igamma_grad_a,
/// the steps of the compiled code (jit/codegen/lower/transcendentals_igamma.cc) with std::lgamma.
double igamma_scalar(double a, double x, bool want_grad) {
  const double inf = std::numeric_limits<double>::infinity();
  if (std::isnan(a) || std::isnan(x) || a <= 0 || x < 0 || (a == inf && x == inf))
    return std::numeric_limits<double>::quiet_NaN();
  if (x == 0 || a == inf) return 0;
  if (x == inf) return want_grad ? 0 : 1;
  const double lx = std::log(x);
  const double l1 = a * lx - x - std::lgamma(a + 1);  // log(x^a e^-x / Gamma(a + 1))
  const double e1 = std::exp(l1);
  const bool use_cf = !(x < a + 1);
  if (e1 == 0) return use_cf && !want_grad ? 1 : 0;  // the prefactor underflows: P is 0 or 1
  if (!use_cf) {
    const Series s = series(a, x, want_grad);
    if (!want_grad) return e1 * s.s;
    return e1 * (s.s * (lx - digamma_pos(a + 1)) + s.ds);
  }
  const Series f = continued_fraction(a, x, want_grad);
  const double e = a * e1;  // x^a e^-x / Gamma(a)
  if (!want_grad) return 1 - e * f.s;
  // d/da log(x^a e^-x / Gamma(a)) = log x - digamma(a + 1) + 1/a, the 1/a term as e1 (no inf * 0 for
  // a subnormal a).
  return -(e * (f.s * (lx - digamma_pos(a + 1)) + f.ds) + e1 * f.s);
}

}  // namespace

}  // namespace special

namespace {

using elementwise::Accept;
using elementwise::def_binary;
using elementwise::kTranscendental;

Registrar reg_igamma([] {
  // bf16 and f32 through double, rounded once (the compiled code does the same).
  def_binary<Accept::floating>(
      "igamma",
      [](auto a, auto x) { return decltype(a)(special::igamma_scalar(double(a), double(x), false)); },
      kTranscendental);
  def_binary<Accept::floating>(
      "igamma_grad_a",
      [](auto a, auto x) { return decltype(a)(special::igamma_scalar(double(a), double(x), true)); },
      kTranscendental);
});

}  // namespace

namespace lax {

Array igamma(const Array& a, const Array& x, SL loc) {
  static const Primitive& p = get_or_create_primitive("igamma");
  return elementwise::bind_broadcasting_binary(p, a, x, loc);
}

Array igamma_grad_a(const Array& a, const Array& x, SL loc) {
  static const Primitive& p = get_or_create_primitive("igamma_grad_a");
  return elementwise::bind_broadcasting_binary(p, a, x, loc);
}

}  // namespace lax
}  // namespace minijax

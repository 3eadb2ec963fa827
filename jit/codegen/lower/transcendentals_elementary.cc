// minijax vectorized transcendentals, part 5: sinh, cosh, asinh, acosh, atanh, asin, acos, atan,
// cbrt, built on the exp/log/atan2 emitters; f32 is computed in f64 and rounded once.
#include <cmath>

#include "core/errors.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower::math {

using kir::Scalar;
using kir::Value;

namespace {

// (sinh(x) / x - 1) / x^2 in z = x^2 on [0, 1] (tools/fit_special_polys.py: Chebyshev fit with
// mpmath at 50 digits, relative error 1.5e-21 before rounding the coefficients to f64).
const std::vector<double> kSinhSmall = {1.66666666666666667e-1,  8.33333333333333337e-3,
                                        1.98412698412697732e-4,  2.75573192240403386e-6,
                                        2.50521083640580408e-8,  1.60590483963505616e-10,
                                        7.64662536165665766e-13, 2.84452641698952856e-15};
constexpr double kLn2 = 0x1.62e42fefa39efp-1;
constexpr double kLn2Lo = 0x1.abc9e3b39803fp-56;  // ln 2 - kLn2
constexpr double kTwoPow28 = 268435456.0;

// e^a / 2 for a >= 0 (f64): exp of the two-term argument a - ln 2 (TwoSum with ln 2's double, then
// its remainder), so the halving costs no rounding; +inf exactly where e^a / 2 overflows.
Value half_exp(VMath& m, Value a) {
  Value s, e;
  m.two_sum(a, m.c(-kLn2), s, e);
  return exp_dd_f64(m.b, s, m.sub(e, m.c(kLn2Lo)));
}

// The f64 functions (lanes of any count).
Value sinh64(VMath& m, Value x) {
  Value a = m.abs(x);
  Value z = m.mul(a, a);
  Value small = m.mad(m.mul(a, z), m.poly(z, kSinhSmall), a);  // a + a z S(z), a <= 1
  Value e = half_exp(m, m.sel(m.le(a, m.c(1.0)), m.c(1.0), a));
  Value big = m.sub(e, m.div(m.c(0.25), e));  // e^a/2 - e^-a/2, cancelling at most 1.16x for a >= 1
  Value res = m.sel(m.le(a, m.c(1.0)), small, big);
  res = m.copysign(res, x);
  return m.sel(m.isnan(x), x, res);
}

Value cosh64(VMath& m, Value x) {
  Value e = half_exp(m, m.abs(x));
  Value res = m.add(e, m.div(m.c(0.25), e));  // e^|x|/2 + e^-|x|/2: no cancellation
  return m.sel(m.isnan(x), x, res);
}

// asinh as fdlibm's s_asinh.c (Sun Microsystems, 1993), each branch's log taken as log1p of one
// selected argument (one log1p per call, not three logs: a third of the code to compile; log(v) =
// log1p(v - 1) adds at most 2^-53 to a result >= 1.4): |x| > 2^28: log|x| + ln 2; > 2:
// log(2|x| + 1 / (sqrt(x^2 + 1) + |x|)); else log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); the sign of x.
Value asinh64(VMath& m, Value x) {
  Value a = m.abs(x), one = m.c(1.0);
  Value big = m.gt(a, m.c(kTwoPow28));
  Value ac = m.sel(big, one, a);  // keeps x^2 finite in the unselected lanes
  Value z = m.mul(ac, ac);
  Value q = m.sqrt(m.add(z, one));
  Value mid = m.sub(m.add(m.mul(m.c(2.0), ac), m.div(one, m.add(q, ac))), one);
  Value small = m.add(ac, m.div(z, m.add(one, q)));
  Value arg = m.sel(big, m.sub(a, one), m.sel(m.gt(a, m.c(2.0)), mid, small));
  Value res = m.add(log1p_f64(m.b, arg), m.sel(big, m.c(kLn2), m.c(0.0)));
  res = m.sel(m.lt(a, m.c(0x1p-28)), a, res);  // asinh(x) = x to the last bit, subnormals and ±0
  return m.sel(m.isnan(x), x, m.copysign(res, x));
}

// acosh as fdlibm's e_acosh.c, one log1p as asinh: x > 2^28: log x + ln 2; > 2: log(2x - 1 / (x +
// sqrt(x^2 - 1))); in [1, 2]: log1p(t + sqrt(2t + t^2)), t = x - 1 exact. NaN below 1.
Value acosh64(VMath& m, Value x) {
  Value one = m.c(1.0);
  Value big = m.gt(x, m.c(kTwoPow28));
  Value xc = m.sel(big, one, x);
  Value mid = m.sub(m.sub(m.mul(m.c(2.0), xc), m.div(one, m.add(xc, m.sqrt(m.mad(xc, xc, m.c(-1.0)))))), one);
  Value t = m.sub(xc, one);
  Value small = m.add(t, m.sqrt(m.mad(t, t, m.mul(m.c(2.0), t))));
  Value arg = m.sel(big, m.sub(x, one), m.sel(m.gt(x, m.c(2.0)), mid, small));
  Value res = m.add(log1p_f64(m.b, arg), m.sel(big, m.c(kLn2), m.c(0.0)));
  return m.sel(m.ge(x, one), res, m.c(NAN));  // NaN fails the comparison
}

// atanh as fdlibm's e_atanh.c: |x| < 1/2: log1p(2a + 2a a / (1 - a)) / 2, else log1p(2a / (1 - a)) / 2
// (1 - a exact; one log1p of the selected argument); ±1: ±inf; |x| > 1: NaN; the sign of x.
Value atanh64(VMath& m, Value x) {
  Value a = m.abs(x), one = m.c(1.0);
  Value d = m.sub(one, a);
  Value two_a = m.add(a, a);
  Value arg = m.sel(m.lt(a, m.c(0.5)), m.add(two_a, m.div(m.mul(two_a, a), d)), m.div(two_a, d));
  Value res = m.mul(m.c(0.5), log1p_f64(m.b, arg));
  res = m.sel(m.lt(a, m.c(0x1p-28)), a, res);
  res = m.sel(m.eq(a, one), m.c(INFINITY), res);
  res = m.sel(m.le(a, one), res, m.c(NAN));
  return m.sel(m.isnan(x), x, m.copysign(res, x));
}

// sqrt(1 - a^2) for a = |x| <= 1: (1 - a)(1 + a) (1 - a exact) for a >= 1/2, 1 - a a in one
// multiply-add below (no cancellation there).
Value sqrt_one_minus_sq(VMath& m, Value a) {
  Value one = m.c(1.0);
  Value w = m.sel(m.ge(a, m.c(0.5)), m.mul(m.sub(one, a), m.add(one, a)), m.mad(m.neg(a), a, one));
  return m.sqrt(w);
}

// asin(x) = atan2(x, sqrt(1 - x^2)), acos(x) = atan2(sqrt(1 - x^2), x); |x| > 1: NaN.
Value asin64(VMath& m, Value x) {
  Value a = m.abs(x);
  Value res = atan2_f64(m.b, x, sqrt_one_minus_sq(m, m.sel(m.le(a, m.c(1.0)), a, m.c(0.0))));
  return m.sel(m.mor(m.le(a, m.c(1.0)), m.isnan(x)), res, m.c(NAN));
}

Value acos64(VMath& m, Value x) {
  Value a = m.abs(x);
  Value res = atan2_f64(m.b, sqrt_one_minus_sq(m, m.sel(m.le(a, m.c(1.0)), a, m.c(0.0))), x);
  return m.sel(m.mor(m.le(a, m.c(1.0)), m.isnan(x)), res, m.c(NAN));
}

// cbrt: a start from the encoding (the exponent divided by 3: bits(a) / 3 + 2/3 bits(1.0), computed
// in f64, relative error below 6%), four Newton steps y += (a / y^2 - y) / 3 (quadratic: 6e-2, 4e-3,
// 1e-5, 1e-10, 1e-20), then one step on the exact residual y^3 - a (two-term products) so the result
// is within about half an ulp. Subnormal |x| is scaled by 2^54 first (the root by 2^-18 after), |x|
// >= 2^1000 by 2^-99 (the root by 2^33), so y^3 cannot overflow.
Value cbrt64(VMath& m, Value x) {
  Value a = m.abs(x);
  Value sub = m.lt(a, m.c(0x1p-1022)), big = m.ge(a, m.c(0x1p1000));
  Value as = m.mul(a, m.sel(sub, m.c(0x1p54), m.sel(big, m.c(0x1p-99), m.c(1.0))));
  as = m.sel(m.mor(m.eq(a, m.c(0.0)), m.mnot(m.lt(a, m.c(INFINITY)))), m.c(1.0), as);  // 0, inf, NaN
  const double third_of_one = double(0x3ff0000000000000ull) * (2.0 / 3.0);
  Value start = m.add(m.mul(m.to_float(m.bits(as)), m.c(1.0 / 3.0)), m.c(third_of_one));
  Value y = m.from_bits(m.to_int(start));
  const Value third = m.c(1.0 / 3.0);
  for (int step = 0; step < 4; ++step) y = m.mad(m.sub(m.div(as, m.mul(y, y)), y), third, y);
  Value p, pe, q, qe;
  m.two_prod(y, y, p, pe);
  m.two_prod(p, y, q, qe);
  Value r = m.add(m.sub(q, as), m.mad(pe, y, qe));  // y^3 - a: q - a is exact (Sterbenz)
  y = m.sub(y, m.div(r, m.mul(m.c(3.0), p)));
  y = m.mul(y, m.sel(sub, m.c(0x1p-18), m.sel(big, m.c(0x1p33), m.c(1.0))));
  y = m.sel(m.mor(m.eq(a, m.c(0.0)), m.mnot(m.lt(a, m.c(INFINITY)))), a, y);  // ±0, inf, NaN: |x|
  return m.sel(m.isnan(x), x, m.copysign(y, x));
}

}  // namespace

#define MJ_ELEMENTARY(fn)                                                                            \
  Value fn##_f32(kir::Builder& b, Value x) { return through_f64(b, x, &fn##64, true, #fn "_f32"); }  \
  Value fn##_f64(kir::Builder& b, Value x) { return through_f64(b, x, &fn##64, false, #fn "_f64"); } \
  Value fn(kir::Builder& b, Value x) { return b.type(x).s == Scalar::f64 ? fn##_f64(b, x) : fn##_f32(b, x); }
MJ_ELEMENTARY(sinh)
MJ_ELEMENTARY(cosh)
MJ_ELEMENTARY(asinh)
MJ_ELEMENTARY(acosh)
MJ_ELEMENTARY(atanh)
MJ_ELEMENTARY(asin)
MJ_ELEMENTARY(acos)
MJ_ELEMENTARY(cbrt)
#undef MJ_ELEMENTARY

Value atan_f32(kir::Builder& b, Value x) {
  need(b, x, Scalar::f32, "atan_f32");
  return atan2_f32(b, x, VMath(b, b.type(x)).c(1.0));
}
Value atan_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "atan_f64");
  return atan2_f64(b, x, VMath(b, b.type(x)).c(1.0));
}
Value atan(kir::Builder& b, Value x) { return b.type(x).s == Scalar::f64 ? atan_f64(b, x) : atan_f32(b, x); }

}  // namespace minijax::lower::math

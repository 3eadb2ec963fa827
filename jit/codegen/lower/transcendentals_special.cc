// minijax vectorized transcendentals, part 3: erf, erfc, erf_inv and pow, built
// on the exp/log emitters of transcendentals.cc.
#include <cmath>

#include "core/errors.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower::math {

using kir::Op;
using kir::Pred;
using kir::Scalar;
using kir::Value;

namespace {

// Coefficients: minimax (Remez exchange), computed for this file with mpmath at 50 digits and rounded
// to the target precision; the bounds include the rounding.
// erf(x) / x - 1 in z = x^2: f32 on [0, 1] (relative error of erf 2^-28.6), f64 on [0, 0.64] (2^-56.3).
const std::vector<double> kErfSmallF32 = {1.283791661e-01, -3.761262596e-01, 1.128358543e-01, -2.685381286e-02,
                                          5.188327748e-03, -8.010193706e-04, 7.853861462e-05};
const std::vector<double> kErfSmallF64 = {
    1.28379167095512586e-01, -3.76126389031837538e-01, 1.12837916709551234e-01, -2.68661706451304855e-02,
    5.22397762542858510e-03, -8.54832702201146111e-04, 1.20553328838764835e-04, -1.49256458878690304e-05,
    1.64619743556681764e-06, -1.63628246894430800e-07, 1.47629751270070234e-08, -1.18683959937162882e-09,
    7.01306801438686799e-11};
// h(a) = log(erfc(a)) + a^2 in u = a - 2.5 on a in [1, 4] (f32; error of erf 2^-27.2).
const std::vector<double> kErfcHF32 = {-1.556815267e+00, -3.526805937e-01, 5.610636622e-02,
                                       -1.085884962e-02, 2.165086335e-03,  -4.198536044e-04,
                                       7.748429198e-05,  -1.338345191e-05, 1.587416136e-06};
// The same h in f64, three pieces in u = a - center, absolute errors 2^-55.1, 2^-53.1, 2^-52.2.
const double kErfcCenters[3] = {1.2, 2.3, 4.5};
const std::vector<std::vector<double>> kErfcHF64 = {
    {-9.71440355166929725e-01, -5.80892024490253567e-01, 1.34211798553503070e-01, -3.42861937391322827e-02,
     8.20299273743620681e-03, -1.68143334824819154e-03, 2.49484241166694103e-04, -5.22214239513285722e-06,
     -1.33236363211061880e-05, 5.92381160197967236e-06, -1.58325754808737240e-06, 2.48153441827117347e-07,
     1.24401884314576288e-08, -2.66512263832341683e-08, 1.04909837575761175e-08, 0, 0},
    {-1.48394440272973216e+00, -3.76499042825039987e-01, 6.31764368783224312e-02, -1.27718990523961757e-02,
     2.63640377282518823e-03, -5.24907001338008068e-04, 9.69689708224245504e-05, -1.57919395269689887e-05,
     2.00943920776204866e-06, -9.94446047619318590e-08, -4.81395895787430674e-08, 2.25111316861932566e-08,
     -6.38358256294874030e-09, 1.40241050575010061e-09, -2.29854014202056717e-10, 1.87273792873137528e-11, 0},
    {-2.09976830343594090e+00, -2.12401275286162400e-01, 2.16371103406799783e-02, -2.82526085342234235e-03,
     3.99433841201163342e-04, -5.79829505478933756e-05, 8.43203465052439135e-06, -1.21028905284409011e-06,
     1.69487480694421785e-07, -2.28848995905161167e-08, 2.93328945630184959e-09, -3.47458749800746637e-10,
     3.60507069048357611e-11, -2.94817058636730043e-12, 4.46504027818444241e-14, 9.76657325547026667e-14,
     -2.45081679520524248e-14}};
// Giles' single-precision erfinv(x) / x polynomials (eager's erf_inv): in w - 2.5 (w < 5) and in
// sqrt(w) - 3 (w >= 5), w = -log(1 - x^2); highest degree last.
const std::vector<double> kGiles1 = {1.50140941f,  0.246640727f,  -0.00417768164f, -0.00125372503f, 0.00021858087f,
                                     -4.39150654e-06f, -3.5233877e-06f, 3.43273939e-07f, 2.81022636e-08f};
const std::vector<double> kGiles2 = {2.83297682f,     1.00167406f,   0.00943887047f, -0.0076224613f, 0.00573950773f,
                                     -0.00367342844f, 0.00134934322f, 0.000100950558f, -0.000200214257f};
// Our start for the f64 tail, w >= 16: erfinv(x) / x in sqrt(w) - 5.05 (relative error 2^-24.5).
const std::vector<double> kErfInvTail = {4.90042123936268581e+00, 1.01028452750078523e+00, -1.72954775727726450e-04,
                                         -1.97983632415880533e-04, 7.86302518277098600e-05, -2.12051448959609161e-05,
                                         0, 0, 0};
constexpr double kTwoOverSqrtPi = 0x1.20dd750429b6dp+0;
// erfc(a) a e^(a^2) in t = 1 / a^2 on [0, 1/9] (a >= 3) (tools/fit_special_polys.py: Chebyshev fit
// with mpmath at 50 digits, relative error 4.1e-19 before rounding the coefficients to f64).
const std::vector<double> kErfcTail = {5.64189583547756287e-1, -2.82094791773876559e-1, 4.23142187658902432e-1, -1.05785546822667001, 3.70249390350958203, -1.66611857130664639e+1, 9.16326695891242984e+1, -5.95328460480658856e+2, 4.44964440778131282e+3, -3.72008070302228992e+4, 3.34139572327148415e+5, -3.04597344133668366e+6, 2.63860634411799813e+7, -2.03968061507837659e+8, 1.33169535509047889e+9, -6.98395529921280166e+9, 2.7882114238968466e+10, -7.88945984685738364e+10, 1.40188928926703044e+11, -1.17205518137494424e+11};

Value erf_small(VMath& m, Value x, const std::vector<double>& cs) {
  return m.add(x, m.mul(x, m.poly(m.mul(x, x), cs)));
}

}  // namespace

// ---- erf ------------------------------------------------------------------------------------------

Value erf_f32(kir::Builder& b, Value x) {
  need(b, x, Scalar::f32, "erf_f32");
  VMath m(b, b.type(x));
  Value a = m.abs(x);
  Value small = erf_small(m, x, kErfSmallF32);
  Value ac = m.clamp_nan_low(a, 1.0, 4.0);  // erf(4) rounds to 1 in f32
  Value q = m.mad(m.neg(ac), ac, m.poly(m.sub(ac, m.c(2.5)), kErfcHF32));  // log(erfc(a))
  Value big = m.copysign(m.sub(m.c(1.0), exp_f32(b, q)), x);
  Value res = m.sel(m.lt(a, m.c(1.0)), small, big);
  return m.sel(m.isnan(x), x, res);
}

Value erfc_pos_f64(kir::Builder& b, Value a) {
  need(b, a, Scalar::f64, "erfc_pos_f64");
  VMath m(b, b.type(a));
  Value ac = m.clamp_nan_low(a, 0.8, 6.0);
  Value p1 = m.ge(ac, m.c(1.6)), p2 = m.ge(ac, m.c(3.0));
  Value center = m.sel(p2, m.c(kErfcCenters[2]), m.sel(p1, m.c(kErfcCenters[1]), m.c(kErfcCenters[0])));
  Value h = m.poly_pieces(m.sub(ac, center), {p1, p2}, kErfcHF64);
  // erfc = exp(h - a^2) with a^2 as an exact two-term product.
  Value sq, sqe, hi, e1;
  m.two_prod(ac, ac, sq, sqe);
  m.two_sum(h, m.neg(sq), hi, e1);
  Value big = exp_dd_f64(b, hi, m.sub(e1, sqe));
  Value small = m.sub(m.c(1.0), erf_small(m, a, kErfSmallF64));
  return m.sel(m.lt(a, m.c(0.8)), small, big);
}

namespace {

// erfc(x) (f64) with one exp of a two-term argument: |x| in [0.8, 3): exp(h(a) - a^2) (h as
// erfc_pos_f64's pieces); [3, 28]: e^(-a^2) G(1/a^2) / a; beyond 28: 0 (erfc(27.3) is below half the
// smallest subnormal); |x| < 0.8: 1 -/+ erf(|x|); x <= -0.8: 2 - erfc(|x|). a^2 as an exact two-term
// product.
Value erfc_any_f64(kir::Builder& b, Value x) {
  VMath m(b, b.type(x));
  Value a = m.abs(x), one = m.c(1.0);
  Value tail = m.ge(a, m.c(3.0));
  Value ah = m.clamp_nan_low(a, 0.8, 3.0);
  Value p1 = m.ge(ah, m.c(1.6)), p2 = m.ge(ah, m.c(3.0));
  Value center = m.sel(p2, m.c(kErfcCenters[2]), m.sel(p1, m.c(kErfcCenters[1]), m.c(kErfcCenters[0])));
  Value h = m.poly_pieces(m.sub(ah, center), {p1, p2}, kErfcHF64);
  Value ac = m.sel(tail, m.clamp_nan_low(a, 3.0, 28.0), ah);
  Value sq, sqe, hs, e1;
  m.two_prod(ac, ac, sq, sqe);
  m.two_sum(h, m.neg(sq), hs, e1);
  Value hi = m.sel(tail, m.neg(sq), hs), lo = m.sel(tail, m.neg(sqe), m.sub(e1, sqe));
  Value ex = exp_dd_f64(b, hi, lo);
  Value g = m.poly(m.div(one, sq), kErfcTail);
  Value big = m.sel(tail, m.div(m.mul(ex, g), ac), ex);
  Value small = erf_small(m, a, kErfSmallF64);
  Value pos = m.sel(m.lt(a, m.c(0.8)), m.sub(one, small), big);
  pos = m.sel(m.gt(a, m.c(28.0)), m.c(0.0), pos);
  // x < 0: 1 + erf(|x|) below 0.8, 2 - erfc(|x|) above (erfc(|x|) < 0.26 there: no cancellation).
  Value neg = m.sel(m.lt(a, m.c(0.8)), m.add(one, small), m.sub(m.c(2.0), pos));
  Value res = m.sel(m.signbit(x), neg, pos);
  return m.sel(m.isnan(x), x, res);
}

}  // namespace

Value erf_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "erf_f64");
  VMath m(b, b.type(x));
  Value a = m.abs(x);
  Value small = erf_small(m, x, kErfSmallF64);
  Value big = m.copysign(m.sub(m.c(1.0), erfc_pos_f64(b, m.clamp_nan_low(a, 0.8, 6.0))), x);
  Value res = m.sel(m.lt(a, m.c(0.8)), small, big);
  return m.sel(m.isnan(x), x, res);
}

// ---- erfc -----------------------------------------------------------------------------------------

Value erfc_f32(kir::Builder& b, Value x) {
  need(b, x, Scalar::f32, "erfc_f32");
  return to_f32(b, erfc_any_f64(b, to_f64(b, x)));
}

Value erfc_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "erfc_f64");
  return erfc_any_f64(b, x);
}

Value erfc(kir::Builder& b, Value x) { return b.type(x).s == Scalar::f64 ? erfc_f64(b, x) : erfc_f32(b, x); }

// ---- erf_inv --------------------------------------------------------------------------------------

namespace {

// erf_inv's special values: |x| > 1 or NaN: NaN; |x| == 1: ±inf.
Value erf_inv_specials(VMath& m, Value x, Value res) {
  Value ax = m.abs(x);
  res = m.sel(m.eq(ax, m.c(1.0)), m.copysign(m.c(INFINITY), x), res);
  return m.sel(m.le(ax, m.c(1.0)), res, m.c(NAN));  // NaN fails the comparison
}

// The Giles start erfinv(|x|) / |x| as a polynomial in u (f64; `tail` adds our w >= 16 piece).
Value giles(VMath& m, Value ax, bool tail) {
  Value w = m.neg(log_f64(m.b, m.mul(m.sub(m.c(1.0), ax), m.add(m.c(1.0), ax))));
  Value sw = m.sqrt(w);
  Value p1 = m.ge(w, m.c(5.0));
  Value u = m.sel(p1, m.sub(sw, m.c(3.0)), m.sub(w, m.c(2.5)));
  if (!tail) return m.poly_pieces(u, {p1}, {kGiles1, kGiles2});
  Value p2 = m.ge(w, m.c(16.0));
  u = m.sel(p2, m.sub(sw, m.c(5.05)), u);
  return m.poly_pieces(u, {p1, p2}, {kGiles1, kGiles2, kErfInvTail});
}

}  // namespace

Value erf_inv_f32(kir::Builder& b, Value x) {
  need(b, x, Scalar::f32, "erf_inv_f32");
  Value xd = to_f64(b, x);
  VMath m(b, b.type(xd));
  Value ax = m.abs(xd);
  Value ac = m.sel(m.lt(ax, m.c(1.0)), ax, m.c(0.0));
  Value res = m.copysign(m.mul(giles(m, ac, false), ac), xd);
  return to_f32(b, erf_inv_specials(m, xd, res));
}

Value erf_inv_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "erf_inv_f64");
  VMath m(b, b.type(x));
  Value ax = m.abs(x);
  Value ac = m.sel(m.lt(ax, m.c(1.0)), ax, m.c(0.0));
  Value y = m.mul(giles(m, ac, true), ac);
  // Newton on erf(y) = ac, written as erfc(y) = 1 - ac (exact for ac >= 1/2) where erf is near 1.
  Value near1 = m.ge(ac, m.c(0.5));
  Value one_minus = m.sub(m.c(1.0), ac);
  for (int step = 0; step < 2; ++step) {
    Value d = m.mul(m.c(kTwoOverSqrtPi), exp_f64(b, m.neg(m.mul(y, y))));
    Value r_small = m.sub(ac, erf_small(m, y, kErfSmallF64));
    Value r_big = m.sub(erfc_pos_f64(b, y), one_minus);
    y = m.add(y, m.div(m.sel(near1, r_big, r_small), d));
  }
  return erf_inv_specials(m, x, m.copysign(y, x));
}

// ---- pow ------------------------------------------------------------------------------------------

namespace {

// C99 F.9.4.4 special cases around r = ±exp(y log|x|) (x, y, r of one type).
Value pow_specials(VMath& m, Value x, Value y, Value r) {
  const double big = std::ldexp(1.0, m.mant_bits() - 1);  // |y| >= big: an even integer
  Value ay = m.abs(y);
  Value finite_y = m.lt(ay, m.c(INFINITY)), finite_x = m.lt(m.abs(x), m.c(INFINITY));
  Value in_range = m.lt(ay, m.c(big));
  Value ys = m.sel(in_range, y, m.c(0.0));
  Value yr = m.rint_small(ys);
  Value is_int = m.mor(m.mnot(in_range), m.eq(yr, ys));  // NaN: not in range, is_int true; unused
  Value odd = m.mand(in_range, m.mand(m.eq(yr, ys), m.b.icmp(Pred::ne, m.iand(m.to_int(yr), m.ci(1)), m.ci(0))));
  r = m.sel(m.mand(m.signbit(x), odd), m.neg(r), r);
  Value nan = m.mand(m.mand(m.lt(x, m.c(0.0)), finite_x), m.mand(finite_y, m.mnot(is_int)));
  r = m.sel(nan, m.c(NAN), r);
  Value one = m.mor(m.eq(y, m.c(0.0)), m.eq(x, m.c(1.0)));
  one = m.mor(one, m.mand(m.eq(x, m.c(-1.0)), m.isinf(y)));
  return m.sel(one, m.c(1.0), r);
}

}  // namespace

Value pow_f32(kir::Builder& b, Value x, Value y) {
  need(b, x, Scalar::f32, "pow_f32");
  need(b, y, Scalar::f32, "pow_f32");
  Value xd = to_f64(b, x), yd = to_f64(b, y);
  VMath m(b, b.type(xd));
  Value r = exp_f64(b, m.mul(yd, log_f64(b, m.abs(xd))));
  return to_f32(b, pow_specials(m, xd, yd, r));
}

Value pow_f64(kir::Builder& b, Value x, Value y) {
  need(b, x, Scalar::f64, "pow_f64");
  need(b, y, Scalar::f64, "pow_f64");
  VMath m(b, b.type(x));
  Value ax = m.abs(x);
  Value ordinary = m.mand(m.gt(ax, m.c(0.0)), m.lt(ax, m.c(INFINITY)));
  Value lh, ll;
  log_dd_f64(b, m.sel(ordinary, ax, m.c(1.0)), lh, ll);
  // log|x| = -inf at 0, +inf at inf, NaN at NaN
  lh = m.sel(ordinary, lh, m.sel(m.eq(ax, m.c(0.0)), m.c(-INFINITY), ax));
  Value th, tl;
  m.two_prod(y, lh, th, tl);
  tl = m.mad(y, ll, tl);
  tl = m.sel(m.lt(m.abs(th), m.c(INFINITY)), tl, m.c(0.0));  // inf/NaN products carry no low part
  return pow_specials(m, x, y, exp_dd_f64(b, th, tl));
}

}  // namespace minijax::lower::math

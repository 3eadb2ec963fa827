// minijax vectorized transcendentals, part 6: lgamma, digamma and polygamma (issue 29) in f64 (f32
// computed in f64 and rounded once) on the log/exp/sin/tan emitters; no C library call anywhere.
#include <cmath>
#include <vector>

#include "core/errors.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower::math {

using kir::Scalar;
using kir::Value;

namespace {

// lgamma(1 + t) / (t (t - 1)) in u = t - 1/2, t in [0, 1] (tools/fit_special_polys.py: Chebyshev fit
// with mpmath at 50 digits, degree 23, relative error 5.3e-20 before rounding the coefficients).
const std::vector<double> kLgammaFit = {
    4.83128950540980889e-1, -1.45959895914306082e-1, 6.29114010745649564e-2, -3.13084875010110099e-2,
    1.67970986311835173e-2, -9.42562244846765682e-3, 5.44645784480071316e-3, -3.21207407735519526e-3,
    1.9229161306902386e-3,  -1.16441446792470219e-3, 7.1152247504264558e-4,  -4.3799526053424611e-4,
    2.71274002240095635e-4, -1.68892332733346439e-4, 1.05652619768360961e-4, -6.63321888132927267e-5,
    4.15972914529011518e-5, -2.62841425761088103e-5, 1.74556017666627934e-5, -1.10938319352307022e-5,
    4.93931231067429155e-6, -3.14170107555515462e-6, 5.24334794377212645e-6, -3.36341067166986416e-6};
// digamma(1 + t) / (t - t0) in u = t - 1/2, t in [0, 1], t0 = 0.46163214496836234... the zero of
// digamma(1 + t) (same tool: degree 25, relative error 2.2e-20).
const std::vector<double> kDigammaFit = {
    9.5105587603183288e-1,  -4.23627421281460496e-1, 2.40542484240786899e-1, -1.48404923053917311e-1,
    9.49887244529180888e-2, -6.19221332717157837e-2, 4.07608339380280449e-2, -2.69757968398763503e-2,
    1.79072484512251209e-2, -1.19082153427545934e-2, 7.92701824461559582e-3, -5.28001393866993107e-3,
    3.51816426246369341e-3, -2.34470620723264535e-3, 1.56276704770233383e-3, -1.04172760469211633e-3,
    6.95053487852584182e-4, -4.63350318212085469e-4, 3.0551536916864161e-4,  -2.03673930272925956e-4,
    1.48295512145961235e-4, -9.88631967219178496e-5, 3.60048205921819936e-5, -2.40031402421727775e-5,
    5.76073316565046846e-5, -3.84048718862478624e-5};
constexpr double kT0Hi = 0x1.d8b618d5af8fep-2, kT0Lo = -0x1.1e563779a1f5bp-56;
constexpr double kHalfLog2Pi = 0x1.d67f1c864beb5p-1;  // log(2 pi) / 2
constexpr double kLogPi = 0x1.250d048e7a1bdp+0;
constexpr double kPi = 0x1.921fb54442d18p+1;
constexpr double kEuler = 0x1.2788cfc6fb619p-1;
// Stirling's series B_2k / (2k (2k - 1)), k = 1..8, in w^2 (w = 1 / x; the term k = 9 is below 2e-18
// of lgamma from x = 10).
const std::vector<double> kStirling = {0.08333333333333333,    -0.002777777777777778, 0.0007936507936507937,
                                       -0.0005952380952380953, 0.0008417508417508417, -0.0019175269175269176,
                                       0.00641025641025641,    -0.029550653594771242};
// digamma's asymptotic series B_2k / (2k), k = 1..8, in z = 1 / x^2 (the term k = 9 is 3e-18 at 10).
const std::vector<double> kDigammaAsym = {0.08333333333333333,   -0.008333333333333333, 0.003968253968253968,
                                          -0.004166666666666667, 0.007575757575757576,  -0.021092796092796094,
                                          0.08333333333333333,   -0.4432598039215686};
// Euler–Maclaurin's B_2j / (2j)!, j = 1..12 (the Hurwitz zeta tail, as Cephes' zeta.c and XLA's chlo.zeta).
const std::vector<double> kZetaEM = {0.08333333333333333,    -0.001388888888888889,
                                     3.306878306878307e-05,  -8.267195767195768e-07,
                                     2.08767569878681e-08,   -5.284190138687493e-10,
                                     1.3382536530684679e-11, -3.3896802963225827e-13,
                                     8.586062056277845e-15,  -2.174868698558062e-16,
                                     5.5090028283602295e-18, -1.3954464685812522e-19};
// polygamma: the terms summed directly before the Euler–Maclaurin tail, and the largest order m
// computed (larger m: NaN; m! overflows from m = 171 anyway).
constexpr int kZetaDirectTerms = 10;
constexpr double kMaxOrder = 2046;
constexpr double kMaxFactor = 171;  // 171! overflows f64

// lgamma(1 + t) = t (t - 1) P(t - 1/2) for t in [0, 1].
Value lgamma1p_fit(VMath& m, Value t) {
  return m.mul(m.mul(t, m.sub(t, m.c(1.0))), m.poly(m.sub(t, m.c(0.5)), kLgammaFit));
}

// lgamma(x) for finite x > 0. x < 1: lgamma(1 + x) - log x; [1, 2]: the fit at x - 1; (2, 10): y = x - n
// in [2, 3) by at most 7 steps, lgamma(1 + t) + log1p(t) + log((x-1)...(y)), t = y - 2 exact; from 10:
// Stirling's series with log x as a two-term value (log_dd_f64) and (x - 1/2) log x - x in exact two-term
// arithmetic; from 2^50: x (log x - 1) - log(x) / 2 + log(2 pi) / 2 (no overflow before lgamma's own).
Value lgamma_pos(VMath& m, Value x) {
  kir::Builder& b = m.b;
  Value one = m.c(1.0), two = m.c(2.0);
  Value y = x, prod = one;
  for (int i = 0; i < 7; ++i) {
    Value down = m.ge(y, m.c(3.0));
    Value y1 = m.sub(y, one);
    prod = m.sel(down, m.mul(prod, y1), prod);
    y = m.sel(down, y1, y);
  }
  Value lt1 = m.lt(x, one), le2 = m.le(x, two);
  Value t = m.sel(lt1, x, m.sel(le2, m.sub(x, one), m.sub(y, two)));
  Value core = lgamma1p_fit(m, t);
  Value logx = m.sel(m.ge(x, m.c(0.5)), call_outlined(m.b, "log1p", {m.sub(x, one)}), call_outlined(m.b, "log", {x}));
  Value up = m.add(m.add(core, call_outlined(m.b, "log1p", {t})), call_outlined(m.b, "log", {prod}));
  Value small = m.sel(lt1, m.sub(core, logx), m.sel(le2, core, up));
  // Stirling (lanes below 10 evaluate it at 10).
  Value xs = m.sel(m.ge(x, m.c(10.0)), x, m.c(10.0));
  Value lh, ll;
  log_dd_f64(b, xs, lh, ll);
  Value w = m.div(one, xs);
  Value ser = m.mul(w, m.poly(m.mul(w, w), kStirling));
  Value h = m.sub(xs, m.c(0.5));
  Value p, pe, s, se;
  m.two_prod(h, lh, p, pe);
  pe = m.mad(h, ll, pe);
  m.two_sum(p, m.neg(xs), s, se);
  Value mid = m.add(s, m.add(m.add(se, pe), m.add(ser, m.c(kHalfLog2Pi))));
  Value huge = m.add(m.mul(xs, m.add(m.sub(lh, one), ll)), m.sub(m.c(kHalfLog2Pi), m.mul(m.c(0.5), lh)));
  Value big = m.sel(m.lt(xs, m.c(0x1p50)), mid, huge);
  return m.sel(m.lt(x, m.c(10.0)), small, big);
}

// x <= 0 and an integer (±0, the negative integers, -inf): the poles.
Value at_pole(VMath& m, Value x) { return m.mand(m.le(x, m.c(0.0)), m.eq(m.rint(x), x)); }

// For x < 0 the positive functions are evaluated at 1 - x, elsewhere at x; inf and NaN lanes at 1.
Value positive_arg(VMath& m, Value x) {
  Value xp = m.sel(m.lt(x, m.c(0.0)), m.sub(m.c(1.0), x), x);
  return m.sel(m.lt(xp, m.c(INFINITY)), xp, m.c(1.0));
}

// lgamma: x > 0 as lgamma_pos; x < 0: log(pi) - log|sin(pi r)| - lgamma(1 - x) with r = x - rint(x)
// exact (the reflection formula), -log|x| for -2^-60 < x < 0; +inf at the poles and ±inf.
Value lgamma64(VMath& m, Value x) {
  Value pos = lgamma_pos(m, positive_arg(m, x));
  Value r = m.sub(x, m.rint(x));
  Value sn, cs;
  sincos_pi_f64(m.b, r, sn, cs);
  sn = m.abs(sn);
  Value refl = m.sub(m.sub(m.c(kLogPi), call_outlined(m.b, "log", {sn})), pos);
  Value tiny = m.neg(call_outlined(m.b, "log", {m.abs(x)}));
  Value res = m.sel(m.lt(x, m.c(0.0)), m.sel(m.gt(x, m.c(-0x1p-60)), tiny, refl), pos);
  res = m.sel(m.mor(at_pole(m, x), m.isinf(x)), m.c(INFINITY), res);
  return m.sel(m.isnan(x), x, res);
}

// digamma(x) for finite x > 0. x < 1: digamma(1 + x) - 1/x; [2, 10): digamma(1 + t) + sum 1/(x - j)
// over j = 1..n (n <= 8, t = x - 1 - n exact), each reciprocal with its exact remainder and the sum
// compensated (TwoSum), so the cancellation around the zero 1.4616 costs no accuracy; [1, 2): the fit
// ((t - t0_hi) - t0_lo) P(t - 1/2); from 10: log x - 1/(2x) - sum B_2k / (2k x^2k) (the sum is below
// 1/(2x) <= 0.05 of log x >= 2.3, so log's rounding dominates the error).
Value digamma_pos(VMath& m, Value x) {
  Value one = m.c(1.0), zero = m.c(0.0);
  // s + comp += -1/d (negative) or 1/d on the lanes of `on`.
  auto add_reciprocal = [&](Value s, Value comp, Value d, Value on, bool negative, Value& s_out, Value& comp_out) {
    Value r = m.div(one, d);
    Value p, pe;
    m.two_prod(r, d, p, pe);
    Value re = m.div(m.sub(m.sub(one, p), pe), d);  // 1/d - r
    if (negative) r = m.neg(r), re = m.neg(re);
    Value ns, ne;
    m.two_sum(s, r, ns, ne);
    s_out = m.sel(on, ns, s);
    // 1/d overflows for subnormal d (digamma is -inf there): no correction terms (NaN otherwise).
    Value fin = m.lt(m.abs(r), m.c(INFINITY));
    comp_out = m.sel(m.mand(on, fin), m.add(comp, m.add(ne, re)), comp);
  };
  Value lt1 = m.lt(x, one);
  Value s0, comp0;
  add_reciprocal(zero, zero, x, lt1, true, s0, comp0);
  // y = x - n in [1, 2) by at most 8 steps (a loop: the same code for each step).
  LoopState st{m};
  Value s_slot = st.make(s0), comp_slot = st.make(comp0), y_slot = st.make(x);
  repeat(m.b, 8, [&](Value) {
    Value y = st.get(y_slot), down = m.ge(y, m.c(2.0)), y1 = m.sub(y, one);
    Value ns, nc;
    add_reciprocal(st.get(s_slot), st.get(comp_slot), y1, down, false, ns, nc);
    st.set(s_slot, ns);
    st.set(comp_slot, nc);
    st.set(y_slot, m.sel(down, y1, y));
  });
  Value s = st.get(s_slot), comp = st.get(comp_slot), y = st.get(y_slot);
  Value t = m.sel(lt1, x, m.sub(y, one));
  Value fit = m.mul(m.sub(m.sub(t, m.c(kT0Hi)), m.c(kT0Lo)), m.poly(m.sub(t, m.c(0.5)), kDigammaFit));
  Value hs, he;
  m.two_sum(s, fit, hs, he);
  Value small = m.sel(m.isinf(s), s, m.add(hs, m.add(he, comp)));
  Value xs = m.sel(m.ge(x, m.c(10.0)), x, m.c(10.0));
  Value w = m.div(one, xs), z = m.mul(w, w);
  Value tail = m.add(m.mul(m.c(0.5), w), m.mul(z, m.poly(z, kDigammaAsym)));
  Value big = m.sub(call_outlined(m.b, "log", {xs}), tail);
  return m.sel(m.lt(x, m.c(10.0)), small, big);
}

// digamma: x < 0: digamma(1 - x) - pi / tan(pi r), r = x - rint(x) exact; -1/x - gamma for
// -2^-30 < x < 0; NaN at the poles (0, the negative integers, -inf) as JAX; +inf at +inf.
Value digamma64(VMath& m, Value x) {
  Value pos = digamma_pos(m, positive_arg(m, x));
  Value r = m.sub(x, m.rint(x));
  Value sn, cs;
  sincos_pi_f64(m.b, r, sn, cs);
  Value cot = m.div(m.mul(m.c(kPi), cs), sn);  // pi / tan(pi r)
  Value tiny = m.sub(m.div(m.c(-1.0), x), m.c(kEuler));
  Value res = m.sel(m.lt(x, m.c(0.0)), m.sel(m.gt(x, m.c(-0x1p-30)), tiny, m.sub(pos, cot)), pos);
  res = m.sel(at_pole(m, x), m.c(NAN), res);
  res = m.sel(m.eq(x, m.c(INFINITY)), x, res);
  return m.sel(m.isnan(x), x, res);
}

// y^-k for a per-lane integer k in [0, 2047]: binary powering (11 squarings, relative error below
// 2^-47), then one division; y^k overflowing gives 0, underflowing gives inf, as y^-k itself does.
// For a constant k (polygamma(1, x), digamma's derivative) LLVM folds it to k's multiplications.
Value inv_ipow(VMath& m, Value y, Value k) {
  Value r = m.c(1.0), p = y;
  for (int i = 0; i < 11; ++i) {
    Value bit = m.b.icmp(kir::Pred::ne, m.iand(k, m.ci(int64_t(1) << i)), m.ci(0));
    r = m.sel(bit, m.mul(r, p), r);
    if (i < 10) p = m.mul(p, p);
  }
  return m.div(m.c(1.0), r);
}

// polygamma(n, x): n = 0: digamma; integer 1 <= n <= 2046: (-1)^(n+1) n! zeta(n + 1, x), zeta(s, x) =
// sum_{k<10} (x + k)^-s + a^(1-s) / (s - 1) + a^-s (1/2 + sum_{j=1..12} B_2j / (2j)! (s)_(2j-1) / a^(2j-1))
// with a = x + 10 (Euler–Maclaurin, the term counts of XLA's chlo.zeta); the direct terms and n! are
// loops. At x = 0, the negative integers and -inf:
// +inf for odd n, NaN for even n (XLA's zeta pole rule). n negative, not an integer, or above 2046: NaN.
Value polygamma64(VMath& m, Value n, Value x) {
  kir::Builder& b = m.b;
  Value one = m.c(1.0);
  Value valid = m.mand(m.mand(m.ge(n, m.c(0.0)), m.eq(m.rint(n), n)), m.le(n, m.c(kMaxOrder)));
  Value nc = m.sel(valid, m.sel(m.eq(n, m.c(0.0)), one, n), one);
  Value s = m.add(nc, one);
  Value half = m.mul(nc, m.c(0.5));
  Value odd = m.mnot(m.eq(m.rint(half), half));
  Value ks = m.to_int(s), ks1 = m.to_int(nc);
  LoopState st{m};
  Value sum = st.make(m.c(0.0));
  repeat(b, kZetaDirectTerms, [&](Value k) {
    Value y = m.add(x, b.cast(kir::Op::SIToFP, m.t, b.splat(k, m.t.lanes)));
    st.set(sum, m.add(st.get(sum), inv_ipow(m, y, ks)));
  });
  Value a = m.add(x, m.c(kZetaDirectTerms));
  Value ia = m.div(one, a), ia2 = m.mul(ia, ia);
  Value pj = m.mul(s, ia);
  Value em = m.mul(m.c(kZetaEM[0]), pj);
  for (int j = 1; j < int(kZetaEM.size()); ++j) {
    pj = m.mul(m.mul(pj, ia2), m.mul(m.add(s, m.c(2 * j - 1)), m.add(s, m.c(2 * j))));
    em = m.mad(m.c(kZetaEM[j]), pj, em);
  }
  Value tail = m.add(m.div(inv_ipow(m, a, ks1), nc), m.mul(inv_ipow(m, a, ks), m.add(m.c(0.5), em)));
  Value zeta = m.add(st.get(sum), tail);
  // n! = 2 * 3 * ... * n (exact to 22!, then within n/2 ulp; inf from 171!): a loop while some
  // lane's factor is <= n, none for a constant n = 1.
  Value fact = st.make(one), j = st.make(m.c(2.0));
  b.while_([&] { return any_lane(b, m.mand(m.le(st.get(j), nc), m.le(st.get(j), m.c(kMaxFactor)))); },
           [&] {
             Value jv = st.get(j);
             st.set_where(m.le(jv, nc), fact, m.mul(st.get(fact), jv));
             st.set(j, m.add(jv, one));
           });
  Value f = m.sel(m.gt(nc, m.c(kMaxFactor)), m.c(INFINITY), st.get(fact));
  Value res = m.mul(m.mul(m.sel(odd, one, m.c(-1.0)), f), zeta);
  res = m.sel(at_pole(m, x), m.sel(odd, m.c(INFINITY), m.c(NAN)), res);
  // n = 0: digamma, called only when some lane asks for it (never for a constant n >= 1).
  Value out = st.make(res);
  b.if_(any_lane(b, m.eq(n, m.c(0.0))), [&] { st.set_where(m.eq(n, m.c(0.0)), out, call_outlined(m.b, "digamma", {x})); });
  return m.sel(valid, st.get(out), m.c(NAN));
}

}  // namespace

Value lgamma_f32(kir::Builder& b, Value x) { return through_f64(b, x, &lgamma64, true, "lgamma_f32"); }
Value lgamma_f64(kir::Builder& b, Value x) { return through_f64(b, x, &lgamma64, false, "lgamma_f64"); }
Value lgamma(kir::Builder& b, Value x) {
  return b.type(x).s == Scalar::f64 ? lgamma_f64(b, x) : lgamma_f32(b, x);
}
Value digamma_f32(kir::Builder& b, Value x) { return through_f64(b, x, &digamma64, true, "digamma_f32"); }
Value digamma_f64(kir::Builder& b, Value x) { return through_f64(b, x, &digamma64, false, "digamma_f64"); }
Value digamma(kir::Builder& b, Value x) {
  return b.type(x).s == Scalar::f64 ? digamma_f64(b, x) : digamma_f32(b, x);
}

Value polygamma_f32(kir::Builder& b, Value n, Value x) {
  need(b, n, Scalar::f32, "polygamma_f32");
  need(b, x, Scalar::f32, "polygamma_f32");
  Value nd = to_f64(b, n), xd = to_f64(b, x);
  VMath m(b, b.type(xd));
  return to_f32(b, polygamma64(m, nd, xd));
}
Value polygamma_f64(kir::Builder& b, Value n, Value x) {
  need(b, n, Scalar::f64, "polygamma_f64");
  need(b, x, Scalar::f64, "polygamma_f64");
  VMath m(b, b.type(x));
  return polygamma64(m, n, x);
}
Value polygamma(kir::Builder& b, Value n, Value x) {
  return b.type(x).s == Scalar::f64 ? polygamma_f64(b, n, x) : polygamma_f32(b, n, x);
}

}  // namespace minijax::lower::math

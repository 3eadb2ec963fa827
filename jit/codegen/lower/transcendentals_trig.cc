// minijax vectorized transcendentals, part 2: sin, cos, tan (argument reduction by pi/2 for every
// finite input) and atan2. f32 inputs are computed in f64 and rounded once at the end.
#include <cmath>

#include "core/errors.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower::math {

using kir::Op;
using kir::Pred;
using kir::Scalar;
using kir::Type;
using kir::Value;

namespace {

// Coefficients: minimax (Remez exchange, relative error weight), computed for this file with mpmath
// at 50 digits and rounded to f64; the bounds include the rounding. z = r^2, |r| <= pi/4 (1 + 1e-5).
// sin(r) = r + r z S(z): 2^-37.5 (for f32 results) and 2^-57.4.
const std::vector<double> kSinF32 = {-1.66666666407949610e-01, 8.33332930459894372e-03,
                                     -1.98393121906723481e-04, 2.71812087298008634e-06};
const std::vector<double> kSinF64 = {-1.66666666666666380e-01, 8.33333333332344356e-03,
                                     -1.98412698304267164e-04, 2.75573138635815800e-06,
                                     -2.50507805139101190e-08, 1.58979099867961786e-10};
// cos(r) = 1 - z/2 + z^2 C(z): 2^-32.5 and 2^-61.9.
const std::vector<double> kCosF32 = {4.16666512742880357e-02, -1.38875413729690048e-03, 2.44552015141816795e-05};
const std::vector<double> kCosF64 = {4.16666666666666574e-02, -1.38888888888825577e-03,
                                     2.48015872940396620e-05, -2.75573155182090678e-07,
                                     2.08758660108105266e-09, -1.13663917149097849e-11};
// atan(t) = t + t z A(z), t in [0, 1]: 2^-33.6 and 2^-54.2.
const std::vector<double> kAtanF32 = {
    -3.33333330244825476e-01, 1.99999608328938705e-01, -1.42846424349166362e-01, 1.10979869374263435e-01,
    -9.00053705197970400e-02, 7.30071225001749924e-02, -5.52474115530377161e-02, 3.53148199799449766e-02,
    -1.69005594744305147e-02, 5.17094786098982323e-03, -7.41108567376663752e-04};
const std::vector<double> kAtanF64 = {
    -3.33333333333331927e-01, 1.99999999999259798e-01, -1.42857142791164293e-01, 1.11111108624153229e-01,
    -9.09090387910627823e-02, 7.69223831558932397e-02, -6.66603230040338501e-02, 5.87816006342892078e-02,
    -5.24240235601924204e-02, 4.68293463265189655e-02, -4.11223970296036648e-02, 3.43979724358640174e-02,
    -2.62550076150940906e-02, 1.74015732043150892e-02, -9.49807044872834350e-03, 4.02405259393943168e-03,
    -1.22568525272394421e-03, 2.36834715210318300e-04, -2.16864660596981606e-05};

constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
// pi/2 = P1 + P2 + P3 + P4 with 27-bit P1..P3 (k Pi exact for |k| < 2^26), and 33 + 53 bits.
constexpr double kPio2_27[4] = {0x1.921fb54000000p+0, 0x1.10b4610000000p-30, 0x1.a626330000000p-58,
                                0x1.45c06e0e68948p-86};
constexpr double kPio2_33Hi = 0x1.921fb54400000p+0, kPio2_33Lo = 0x1.0b4611a626331p-34;
constexpr double kPio2Hi = 0x1.921fb54442d18p+0, kPio2Lo = 0x1.1a62633145c07p-54;
constexpr double kPiHi = 0x1.921fb54442d18p+1, kPiLo = 0x1.1a62633145c07p-53;
// x mod pi/2 as r_hi + r_lo (|r| <= pi/4 + tiny) and the quadrant q (i64, any integer: q mod 4
// counts). x finite f64.
struct Reduced {
  Value hi, lo, q;
};

Reduced reduce_cody_waite(VMath& m, Value x, bool for_f32) {
  Value k = m.rint_small(m.mul(x, m.c(kTwoOverPi)));
  Reduced r;
  r.q = m.to_int(k);
  if (for_f32) {
    // |k| < 2^20 and P1 of 33 bits: x - k P1 exact; one rounding after (f32 needs ~2^-30).
    r.hi = m.mad(m.neg(k), m.c(kPio2_33Lo), m.mad(m.neg(k), m.c(kPio2_33Hi), x));
    r.lo = m.c(0.0);
    return r;
  }
  Value nk = m.neg(k);
  Value h = m.add(x, m.mul(nk, m.c(kPio2_27[0])));  // exact (Sterbenz)
  Value e1, e2;
  m.two_sum(h, m.mul(nk, m.c(kPio2_27[1])), h, e1);
  m.two_sum(h, m.mul(nk, m.c(kPio2_27[2])), h, e2);
  Value lo = m.mad(nk, m.c(kPio2_27[3]), m.add(e1, e2));
  m.two_sum(h, lo, r.hi, r.lo);  // h may be as small as lo near multiples of pi/2
  return r;
}

// The reduction of finite x (f64): Cody-Waite everywhere; for lanes with |x| >= limit (under a
// test of the whole vector, so ordinary arguments never pay for it) the runtime's exact chunked
// product (mj_rt_trig_reduce, jit/runtime/trig_reduction.cc: Payne & Hanek with 1248 bits of 2/pi),
// called once per such vector. It is a runtime function rather than inline code so that the rare
// path costs no compile time in each kernel that uses sin, cos or tan.
Reduced reduce(VMath& m, Value x, bool for_f32) {
  kir::Builder& b = m.b;
  const double limit = for_f32 ? 0x1p19 : 0x1p26;
  Value big = m.ge(m.abs(x), m.c(limit));
  Value xs = m.sel(big, m.c(0.0), x);
  Reduced fast = reduce_cody_waite(m, xs, for_f32);
  Value slot_hi = b.stack_slot(m.t), slot_lo = b.stack_slot(m.t), slot_q = b.stack_slot(m.it);
  b.store(slot_hi, b.i64(0), fast.hi);
  b.store(slot_lo, b.i64(0), fast.lo);
  b.store(slot_q, b.i64(0), fast.q);
  b.if_(any_lane(b, big), [&] {
    VMath w(b, m.t);
    const int n = m.lanes();
    Value in = b.stack_slot(kir::kF64, n), hi = b.stack_slot(kir::kF64, n), lo = b.stack_slot(kir::kF64, n),
          k = b.stack_slot(kir::kF64, n);
    b.store(in, b.i64(0), w.sel(big, x, w.c(0x1p30)));
    b.call(kTrigReduceRuntime, kir::kVoid, {in, b.i64(n), hi, lo, k});
    Value shi = b.load(m.t, hi, b.i64(0)), slo = b.load(m.t, lo, b.i64(0));
    Value sq = w.to_int(b.load(m.t, k, b.i64(0)));
    b.store(slot_hi, b.i64(0), w.sel(big, shi, fast.hi));
    b.store(slot_lo, b.i64(0), w.sel(big, slo, fast.lo));
    b.store(slot_q, b.i64(0), w.sel(big, sq, fast.q));
  });
  Reduced r;
  r.hi = b.load(m.t, slot_hi, b.i64(0));
  r.lo = b.load(m.t, slot_lo, b.i64(0));
  r.q = b.load(m.it, slot_q, b.i64(0));
  return r;
}

// sin and cos of the reduced argument.
Value sin_r(VMath& m, const Reduced& r, bool for_f32) {
  Value z = m.mul(r.hi, r.hi);
  return m.add(r.hi, m.mad(m.mul(r.hi, z), m.poly(z, for_f32 ? kSinF32 : kSinF64), r.lo));
}
Value cos_r(VMath& m, const Reduced& r, bool for_f32) {
  Value z = m.mul(r.hi, r.hi);
  Value hz = m.mul(m.c(0.5), z);
  Value w = m.sub(m.c(1.0), hz);
  Value tail = m.mad(m.mul(z, z), m.poly(z, for_f32 ? kCosF32 : kCosF64), m.neg(m.mul(r.hi, r.lo)));
  return m.add(w, m.add(m.sub(m.sub(m.c(1.0), w), hz), tail));  // fdlibm's k_cos compensation
}

enum class Trig { sin, cos, tan };

// sin/cos/tan of f64 x (finite or not); for_f32 selects the cheaper polynomials.
Value trig64(kir::Builder& b, Value x, Trig which, bool for_f32) {
  VMath m(b, b.type(x));
  Value finite = m.lt(m.abs(x), m.c(INFINITY));
  Reduced r = reduce(m, m.sel(finite, x, m.c(0.0)), for_f32);
  Value s = sin_r(m, r, for_f32), c = cos_r(m, r, for_f32);
  Value q = r.q;
  if (which == Trig::cos) q = m.iadd(q, m.ci(1));  // cos(x) = sin(x + pi/2)
  Value odd = b.icmp(Pred::ne, m.iand(q, m.ci(1)), m.ci(0));
  Value res;
  if (which == Trig::tan) {
    res = m.div(m.sel(odd, m.neg(c), s), m.sel(odd, s, c));
  } else {
    Value neg = b.icmp(Pred::ne, m.iand(q, m.ci(2)), m.ci(0));
    Value v = m.sel(odd, c, s);
    res = m.sel(neg, m.neg(v), v);
  }
  if (which != Trig::cos) res = m.sel(m.eq(x, m.c(0.0)), x, res);  // sin(-0) = tan(-0) = -0
  return m.sel(finite, res, m.c(NAN));
}

Value trig32(kir::Builder& b, Value x, Trig which, const char* fn) {
  need(b, x, Scalar::f32, fn);
  return to_f32(b, trig64(b, to_f64(b, x), which, true));
}

}  // namespace

Value sin_f32(kir::Builder& b, Value x) { return trig32(b, x, Trig::sin, "sin_f32"); }
Value cos_f32(kir::Builder& b, Value x) { return trig32(b, x, Trig::cos, "cos_f32"); }
Value tan_f32(kir::Builder& b, Value x) { return trig32(b, x, Trig::tan, "tan_f32"); }
void sincos_pi_f64(kir::Builder& b, Value r, Value& s, Value& c) {
  need(b, r, Scalar::f64, "sincos_pi_f64");
  VMath m(b, b.type(r));
  // r = f + n/2 exactly with n = rint(2r) in {-1, 0, 1}, |f| <= 1/4; pi f as hi + lo (TwoProd
  // with pi's high part, plus f times its low part): the reduced argument of sin_r and cos_r.
  Value n = m.rint(m.mul(r, m.c(2.0)));
  Value f = m.sub(r, m.mul(n, m.c(0.5)));
  Reduced red;
  Value e;
  m.two_prod(f, m.c(kPiHi), red.hi, e);
  red.lo = m.mad(f, m.c(kPiLo), e);
  red.q = m.to_int(n);
  Value sr = sin_r(m, red, false), cr = cos_r(m, red, false);
  auto quadrant = [&](Value q) {
    Value odd = b.icmp(Pred::ne, m.iand(q, m.ci(1)), m.ci(0)), neg = b.icmp(Pred::ne, m.iand(q, m.ci(2)), m.ci(0));
    Value v = m.sel(odd, cr, sr);
    return m.sel(neg, m.neg(v), v);
  };
  s = m.sel(m.eq(r, m.c(0.0)), r, quadrant(red.q));  // sin(pi * -0) = -0
  c = quadrant(m.iadd(red.q, m.ci(1)));
}

Value sin_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "sin_f64");
  return trig64(b, x, Trig::sin, false);
}
Value cos_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "cos_f64");
  return trig64(b, x, Trig::cos, false);
}
Value tan_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "tan_f64");
  return trig64(b, x, Trig::tan, false);
}

// ---- atan2 ----------------------------------------------------------------------------------------

namespace {

Value atan2_64(kir::Builder& b, Value y, Value x, bool for_f32) {
  VMath m(b, b.type(y));
  Value ax = m.abs(x), ay = m.abs(y);
  Value swap = m.gt(ay, ax);
  Value num = m.sel(swap, ax, ay), den = m.sel(swap, ay, ax);
  Value t = m.div(num, den);
  t = m.sel(m.eq(den, m.c(0.0)), m.c(0.0), t);                       // atan2(±0, ±0)
  t = m.sel(m.mand(m.isinf(ax), m.isinf(ay)), m.c(1.0), t);          // atan2(±inf, ±inf)
  Value z = m.mul(t, t);
  Value a = m.add(t, m.mul(m.mul(t, z), m.poly(z, for_f32 ? kAtanF32 : kAtanF64)));
  // octant: (swap, x < 0) -> K + s a with K in {0, pi/2, pi, pi/2}, s = -1 unless neither or both.
  Value xneg = m.signbit(x);
  Value flip = m.mnot(b.icmp(Pred::eq, swap, xneg));  // exactly one of swap, x < 0
  Value khi = m.sel(xneg, m.sel(swap, m.c(kPio2Hi), m.c(kPiHi)), m.sel(swap, m.c(kPio2Hi), m.c(0.0)));
  Value klo = m.sel(xneg, m.sel(swap, m.c(kPio2Lo), m.c(kPiLo)), m.sel(swap, m.c(kPio2Lo), m.c(0.0)));
  Value sa = m.sel(flip, m.neg(a), a);
  Value res = m.add(m.add(khi, sa), klo);
  res = m.copysign(res, y);
  return m.sel(m.mor(m.isnan(x), m.isnan(y)), m.add(x, y), res);
}

}  // namespace

Value atan2_f32(kir::Builder& b, Value y, Value x) {
  need(b, y, Scalar::f32, "atan2_f32");
  need(b, x, Scalar::f32, "atan2_f32");
  return to_f32(b, atan2_64(b, to_f64(b, y), to_f64(b, x), true));
}

Value atan2_f64(kir::Builder& b, Value y, Value x) {
  need(b, y, Scalar::f64, "atan2_f64");
  need(b, x, Scalar::f64, "atan2_f64");
  return atan2_64(b, y, x, false);
}

}  // namespace minijax::lower::math

// minijax vectorized transcendentals, part 1: the VMath helper, exp, log, log1p, expm1, tanh, the
// logistic function, the two-term exp/log used by pow, and the type-dispatching entry points.
#include "jit/codegen/lower/transcendentals.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "core/errors.h"
#include "jit/codegen/emit_llvm.h"

namespace minijax::lower::math {

using kir::Op;
using kir::Pred;
using kir::Scalar;
using kir::Type;
using kir::Value;

// ---- VMath --------------------------------------------------------------------------------------

VMath::VMath(kir::Builder& builder, Type type) : b(builder), t(type) {
  if (!t.is_float()) throw ValueError("vector math on non-float type " + kir::type_str(t));
  it = (is_f64() ? kir::kI64 : kir::kI32).with_lanes(t.lanes);
  mt = kir::kI1.with_lanes(t.lanes);
}

namespace {
std::atomic<int> fma_override{-1};
}  // namespace

bool VMath::host_has_fma() {
  static const bool has = [] {
    const std::string& f = host_target().features;
    return f.find("+fma,") != std::string::npos || (f.size() >= 4 && f.compare(f.size() - 4, 4, "+fma") == 0);
  }();
  int o = fma_override.load();
  return o < 0 ? has : o == 1;
}

void VMath::set_fma_override(int v) { fma_override.store(v); }

Value VMath::c(double v) {
  return b.splat(b.const_float(t.scalar(), is_f64() ? v : double(float(v))), t.lanes);
}
Value VMath::ci(int64_t v) { return b.splat(b.const_int(it.scalar(), v), t.lanes); }
Value VMath::from_bits_c(uint64_t u) {
  if (is_f64()) {
    double d;
    std::memcpy(&d, &u, 8);
    return c(d);
  }
  uint32_t w = uint32_t(u);
  float f;
  std::memcpy(&f, &w, 4);
  return c(double(f));
}

Value VMath::mad(Value a, Value x, Value y) {
  if (host_has_fma()) return b.intrinsic("fma", t, {a, x, y});
  return add(mul(a, x), y);
}
Value VMath::fma_exact(Value a, Value x, Value y) { return b.intrinsic("fma", t, {a, x, y}); }
Value VMath::abs(Value a) { return b.intrinsic("fabs", t, {a}); }
Value VMath::sqrt(Value a) { return b.intrinsic("sqrt", t, {a}); }
Value VMath::copysign(Value mag, Value sign) { return b.intrinsic("copysign", t, {mag, sign}); }

Value VMath::rint_small(Value a) {
  Value magic = c(1.5 * std::ldexp(1.0, mant_bits()));
  return sub(add(a, magic), magic);
}

Value VMath::rint(Value a) {
  Value big = ge(abs(a), c(std::ldexp(1.0, mant_bits())));
  Value r = copysign(sub(add(abs(a), c(std::ldexp(1.0, mant_bits()))), c(std::ldexp(1.0, mant_bits()))), a);
  return sel(mor(big, isnan(a)), a, r);
}

Value VMath::poly(Value x, const std::vector<double>& cs) {
  Value acc = c(cs.back());
  for (size_t i = cs.size() - 1; i-- > 0;) acc = mad(acc, x, c(cs[i]));
  return acc;
}

Value VMath::poly_pieces(Value x, const std::vector<Value>& s, const std::vector<std::vector<double>>& cs) {
  const size_t n = cs[0].size();
  auto coef = [&](size_t i) {
    Value v = c(cs[0][i]);
    for (size_t p = 1; p < cs.size(); ++p) v = sel(s[p - 1], c(cs[p][i]), v);
    return v;
  };
  Value acc = coef(n - 1);
  for (size_t i = n - 1; i-- > 0;) acc = mad(acc, x, coef(i));
  return acc;
}

Value VMath::isinf(Value a) { return eq(abs(a), c(INFINITY)); }
Value VMath::signbit(Value a) { return b.icmp(Pred::slt, bits(a), ci(0)); }
Value VMath::mnot(Value m) { return b.binop(Op::Xor, m, b.splat(b.i1(true), t.lanes)); }

Value VMath::clamp_nan_low(Value a, double lo, double hi) {
  Value r = sel(ge(a, c(lo)), a, c(lo));  // NaN fails the comparison: lo
  return sel(le(r, c(hi)), r, c(hi));
}

Value VMath::pow2i(Value k) { return from_bits(ishl(iadd(k, ci(bias())), mant_bits())); }

Value VMath::ldexp(Value x, Value k) {
  Value k1 = iashr(k, 1);
  Value k2 = isub(k, k1);
  return mul(mul(x, pow2i(k1)), pow2i(k2));
}

void VMath::two_sum(Value a, Value x, Value& s, Value& e) {
  s = add(a, x);
  Value xv = sub(s, a);
  Value av = sub(s, xv);
  e = add(sub(a, av), sub(x, xv));
}

void VMath::two_prod(Value a, Value x, Value& p, Value& e) {
  p = mul(a, x);
  if (host_has_fma()) {
    e = fma_exact(a, x, neg(p));
    return;
  }
  // Veltkamp splitting into halves of (p+1)/2 bits, then Dekker's product. An operand near the top
  // of the range (v * split would overflow) is scaled down first, the error term scaled back.
  Value split = c(is_f64() ? 134217729.0 : 4097.0);
  Value top = c(std::ldexp(1.0, is_f64() ? 995 : 113));
  const int sh = is_f64() ? 30 : 14;
  Value down = c(std::ldexp(1.0, -sh)), up = c(std::ldexp(1.0, sh)), one = c(1.0);
  Value big_a = ge(abs(a), top), big_x = ge(abs(x), top);
  Value sa = sel(big_a, down, one), sx = sel(big_x, down, one);
  Value as = mul(a, sa), xs = mul(x, sx);
  Value ps = mul(as, xs);
  auto halves = [&](Value v, Value& hi, Value& lo) {
    Value g = mul(v, split);
    hi = sub(g, sub(g, v));
    lo = sub(v, hi);
  };
  Value ah, al, xh, xl;
  halves(as, ah, al);
  halves(xs, xh, xl);
  Value es = add(add(add(sub(mul(ah, xh), ps), mul(ah, xl)), mul(al, xh)), mul(al, xl));
  e = mul(es, mul(sel(big_a, up, one), sel(big_x, up, one)));  // exact: powers of two
}

Value to_f64(kir::Builder& b, Value x) {
  return b.cast(Op::FPExt, kir::kF64.with_lanes(b.type(x).lanes), x);
}
Value to_f32(kir::Builder& b, Value x) {
  return b.cast(Op::FPTrunc, kir::kF32.with_lanes(b.type(x).lanes), x);
}

void need(kir::Builder& b, Value x, Scalar s, const char* fn) {
  if (b.type(x).s != s)
    throw ValueError(std::string(fn) + ": operand of type " + kir::type_str(b.type(x)) + ", expected " +
                     (s == Scalar::f32 ? "f32" : "f64"));
}

Value through_f64(kir::Builder& b, Value x, Value (*f)(VMath&, Value), bool is32, const char* name) {
  need(b, x, is32 ? Scalar::f32 : Scalar::f64, name);
  Value xd = is32 ? to_f64(b, x) : x;
  VMath m(b, b.type(xd));
  Value r = f(m, xd);
  return is32 ? to_f32(b, r) : r;
}

Value LoopState::make(Value init) {
  Value p = m.b.stack_slot(m.t);
  m.b.store(p, m.b.i64(0), init);
  return p;
}
Value LoopState::get(Value slot) { return m.b.load(m.t, slot, m.b.i64(0)); }
void LoopState::set(Value slot, Value v) { m.b.store(slot, m.b.i64(0), v); }
void LoopState::set_where(Value on, Value slot, Value v) { set(slot, m.sel(on, v, get(slot))); }

void repeat(kir::Builder& b, int n, const std::function<void(Value)>& body) {
  b.for_(b.i64(0), b.i64(n), b.i64(1), body);
}

Value any_lane(kir::Builder& b, Value m) {
  int n = b.type(m).lanes;
  // Halve by shuffles while at least 4 lanes remain (a one-lane shuffle would be a <1 x i1>).
  while (n >= 4) {
    int h = n / 2;
    std::vector<int> lo, hi;
    for (int i = 0; i < h; ++i) {
      lo.push_back(i);
      hi.push_back(i + h);
    }
    Value folded = b.binop(Op::Or, b.shuffle(m, m, lo), b.shuffle(m, m, hi));
    if (n % 2) folded = b.insert(folded, b.binop(Op::Or, b.extract(folded, 0), b.extract(m, n - 1)), 0);
    m = folded;
    n = h;
  }
  Value r = b.extract(m, 0);
  for (int i = 1; i < n; ++i) r = b.binop(Op::Or, r, b.extract(m, i));
  return r;
}

namespace {

// Coefficients: minimax (Remez exchange on the weighted error named), computed for this file with
// mpmath at 50 digits and rounded to the target precision; the bound includes that rounding.

// (e^r - 1 - r) / r^2 on |r| <= ln2/2 + 1e-4: relative error of e^r below 2^-28.0 (f32), 2^-60.3.
const std::vector<double> kExpF32 = {4.999999404e-01, 1.666652113e-01, 4.166838899e-02, 8.368730545e-03,
                                     1.381457085e-03};
const std::vector<double> kExpF64 = {
    5.00000000000000000e-01, 1.66666666666666824e-01, 4.16666666666660954e-02, 8.33333333331700947e-03,
    1.38888888891159756e-03, 1.98412698964459469e-04, 2.48015869262001175e-05, 2.75572347984844863e-06,
    2.75575820536685701e-07, 2.51120593844196785e-08, 2.08266059234781596e-09};
// The same function weighted for expm1(r): relative error below 2^-28.8 (f32), 2^-59.5 (f64).
const std::vector<double> kExpm1F32 = {5.000000000e-01, 1.666666567e-01, 4.166636243e-02, 8.333389647e-03,
                                       1.394064631e-03, 1.984588016e-04};
const std::vector<double> kExpm1F64 = {
    5.00000000000000000e-01, 1.66666666666666657e-01, 4.16666666666666574e-02, 8.33333333333349455e-03,
    1.38888888888916628e-03, 1.98412698404004873e-04, 2.48015873088664317e-05, 2.75573210029065736e-06,
    2.75572883793816833e-07, 2.50505507141172346e-08, 2.09100527602948039e-09, 1.65588840833393898e-10};
// (log1p(f) - f) / f^2 on f in [sqrt(1/2) - 1, sqrt(2) - 1]: relative error of log1p(f) 2^-27.5.
const std::vector<double> kLogF32 = {-4.999998808e-01, 3.333332539e-01, -2.500158250e-01, 2.000197470e-01,
                                     -1.660908163e-01, 1.418182254e-01, -1.324299276e-01, 1.290445328e-01,
                                     -7.621791214e-02};
// T(z) = (2 atanh(s) - 2s) / s^3, z = s^2 in [0, 0.02944]: log1p error (weight z/2) 2^-59.2.
const std::vector<double> kLogF64 = {6.66666666666671293e-01, 3.99999999995250766e-01, 2.85714287218759966e-01,
                                     2.22222004108888510e-01, 1.81834785948567557e-01, 1.53160569753126696e-01,
                                     1.47773339391605391e-01};
// T2(z) = (T(z) - 2/3) / z on the same interval (the 2/3 term is kept exact): weight z^2/2, 2^-65.2.
const std::vector<double> kLogDdT2 = {4.00000000000002243e-01, 2.85714285709781080e-01, 2.22222223766489035e-01,
                                      1.81817959339917234e-01, 1.53862617448062816e-01, 1.32676228562216142e-01,
                                      1.31019087063010770e-01};
// (tanh(x) - x) / x^3 as a polynomial in z = x^2 <= 0.625^2: relative error 2^-30.2 (f32), 2^-57.3.
const std::vector<double> kTanhF32 = {-3.333333135e-01, 1.333322227e-01, -5.394836515e-02, 2.170805819e-02,
                                      -8.193155751e-03, 2.155761002e-03};
const std::vector<double> kTanhF64 = {
    -3.33333333333333315e-01, 1.33333333333332471e-01, -5.39682539681744303e-02, 2.18694885328677910e-02,
    -8.86323545382097441e-03, 3.59212693331504565e-03, -1.45582371762424407e-03, 5.89956143512162102e-04,
    -2.38794020763749516e-04, 9.58038634911696573e-05, -3.67033485361165099e-05, 1.18616549545612925e-05,
    -2.29741943172414084e-06};

// ln2 split for Cody-Waite: hi with 42 significant bits (k hi exact for |k| < 2^11), or 32 bits.
constexpr double kLog2e = 0x1.71547652b82fep+0;
constexpr double kLn2Hi42 = 0x1.62e42fefa3800p-1, kLn2Lo42 = 0x1.ef35793c76730p-45;
constexpr double kLn2Hi32 = 0x1.62e42fee00000p-1, kLn2Lo32 = 0x1.a39ef35793c76p-33;
constexpr double kLn2Lo9F32 = -2.1219444005469058e-4;  // ln2 - 0.693359375
constexpr double kTwoThirdsHi = 0x1.5555555555555p-1, kTwoThirdsLo = 0x1.5555555555555p-55;

}  // namespace

// ---- exp ------------------------------------------------------------------------------------------

Value exp_f32(kir::Builder& b, Value x) {
  need(b, x, Scalar::f32, "exp_f32");
  VMath m(b, b.type(x));
  Value xc = m.clamp_nan_low(x, -104.0, 89.0);
  Value kf = m.rint_small(m.mul(xc, m.c(1.4426950408889634)));
  // ln2 = 0.693359375 (9 bits: k * C1 exact for |k| < 2^15) - 2.12194440e-4.
  Value r = m.mad(kf, m.c(-0.693359375), xc);
  r = m.mad(kf, m.c(2.12194440e-4), r);
  Value p = m.add(m.c(1.0), m.mad(m.mul(r, r), m.poly(r, kExpF32), r));
  Value res = m.ldexp(p, m.to_int(kf));
  return m.sel(m.isnan(x), x, res);
}

Value exp_dd_f64(kir::Builder& b, Value hi, Value lo) {
  need(b, hi, Scalar::f64, "exp_dd_f64");
  VMath m(b, b.type(hi));
  Value xc = m.clamp_nan_low(hi, -746.0, 710.0);
  Value kf = m.rint_small(m.mul(xc, m.c(kLog2e)));
  // x - k ln2_hi is exact (ln2_hi has 42 bits, |k| < 2^11); the rest of the argument, d, is tiny:
  // e^(r + d) = e^r (1 + d) to 2^-60.
  Value r = m.mad(kf, m.c(-kLn2Hi42), xc);
  Value d = m.mad(kf, m.c(-kLn2Lo42), m.sel(m.eq(xc, hi), lo, m.c(0.0)));  // clamped: no low part
  Value q = m.mad(m.mul(r, r), m.poly(r, kExpF64), r);  // e^r - 1
  Value v = m.add(m.c(1.0), m.add(q, m.mad(q, d, d)));
  Value res = m.ldexp(v, m.to_int(kf));
  return m.sel(m.isnan(hi), hi, res);
}

Value exp_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "exp_f64");
  return exp_dd_f64(b, x, VMath(b, b.type(x)).c(0.0));
}

// ---- log ------------------------------------------------------------------------------------------

namespace {

// x = 2^e m with m in [sqrt(1/2), sqrt(2)) (x > 0 finite, subnormals scaled): e as float, m - 1.
void decompose(VMath& m, Value x, Value& ef, Value& f) {
  const bool d = m.is_f64();
  const double tiny = d ? 0x1p-1022 : 0x1p-126;
  const int up = d ? 54 : 23;
  Value sub = m.lt(x, m.c(tiny));
  Value xs = m.sel(sub, m.mul(x, m.c(std::ldexp(1.0, up))), x);
  const int64_t off = d ? int64_t(0x3fe6a09e667f3bcdLL) : int64_t(0x3f3504f3);  // sqrt(1/2)
  const int64_t mask = d ? int64_t(0x000fffffffffffffLL) : int64_t(0x007fffff);
  Value ix = m.isub(m.bits(xs), m.ci(off));
  Value e = m.iadd(m.iashr(ix, m.mant_bits()), m.sel(sub, m.ci(-up), m.ci(0)));
  Value mant = m.from_bits(m.iadd(m.iand(ix, m.ci(mask)), m.ci(off)));
  ef = m.to_float(e);
  f = m.sub(mant, m.c(1.0));
}

// log for x > 0 finite given e and f = m - 1, plus a correction c (added to log(1 + f)).
Value log_core(VMath& m, Value ef, Value f, Value corr) {
  if (!m.is_f64()) {
    Value r = m.add(m.mad(m.mul(f, f), m.poly(f, kLogF32), f), corr);
    return m.add(m.mad(ef, m.c(kLn2Lo9F32), r), m.mul(ef, m.c(0.693359375)));
  }
  // fdlibm's arrangement: log(1+f) = f - (hfsq - s (hfsq + R)), s = f / (2 + f), R = z T(z).
  Value s = m.div(f, m.add(m.c(2.0), f));
  Value z = m.mul(s, s);
  Value R = m.mul(z, m.poly(z, kLogF64));
  Value hfsq = m.mul(m.c(0.5), m.mul(f, f));
  Value inner = m.add(m.mul(s, m.add(hfsq, R)), m.mad(ef, m.c(kLn2Lo32), corr));
  return m.sub(m.mul(ef, m.c(kLn2Hi32)), m.sub(m.sub(hfsq, inner), f));
}

// The special values of log / log1p at the boundary value `zero` (x == zero: -inf; x < zero: NaN;
// +inf: +inf; NaN: NaN).
Value log_specials(VMath& m, Value x, Value zero, Value res) {
  res = m.sel(m.eq(x, zero), m.c(-INFINITY), res);
  res = m.sel(m.lt(x, zero), m.c(NAN), res);
  res = m.sel(m.eq(x, m.c(INFINITY)), x, res);
  return m.sel(m.isnan(x), x, res);
}

}  // namespace

Value log_f32(kir::Builder& b, Value x) {
  need(b, x, Scalar::f32, "log_f32");
  VMath m(b, b.type(x));
  Value ef, f;
  decompose(m, x, ef, f);
  return log_specials(m, x, m.c(0.0), log_core(m, ef, f, m.c(0.0)));
}

Value log_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "log_f64");
  VMath m(b, b.type(x));
  Value ef, f;
  decompose(m, x, ef, f);
  return log_specials(m, x, m.c(0.0), log_core(m, ef, f, m.c(0.0)));
}

namespace {

// log1p: u = 1 + x rounded and its exact error c (Knuth's TwoSum simplified: the larger
// magnitude first), log1p(x) = log(u) + c / u.
Value log1p_any(VMath& m, Value x) {
  Value one = m.c(1.0);
  Value u = m.add(one, x);
  Value small = m.lt(m.abs(x), one);
  Value c = m.sel(small, m.add(m.sub(one, u), x), m.add(m.sub(x, u), one));
  Value ef, f;
  decompose(m, u, ef, f);
  Value res = log_core(m, ef, f, m.div(c, u));
  res = m.sel(m.eq(x, m.c(0.0)), x, res);  // log1p(-0) = -0
  return log_specials(m, x, m.c(-1.0), res);
}

}  // namespace

Value log1p_f32(kir::Builder& b, Value x) {
  need(b, x, Scalar::f32, "log1p_f32");
  VMath m(b, b.type(x));
  return log1p_any(m, x);
}

Value log1p_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "log1p_f64");
  VMath m(b, b.type(x));
  return log1p_any(m, x);
}

// ---- expm1 ----------------------------------------------------------------------------------------

namespace {

Value expm1_any(VMath& m, Value x) {
  const bool d = m.is_f64();
  const int kmax = m.bias();  // 2^kmax is the largest power of two
  Value xc = m.clamp_nan_low(x, d ? -40.0 : -30.0, d ? 710.0 : 89.0);
  Value kf = m.rint_small(m.mul(xc, m.c(kLog2e)));
  Value r;
  if (d) {
    r = m.mad(kf, m.c(-kLn2Hi42), xc);
    r = m.mad(kf, m.c(-kLn2Lo42), r);
  } else {
    r = m.mad(kf, m.c(-0.693359375), xc);
    r = m.mad(kf, m.c(2.12194440e-4), r);
  }
  Value em = m.mad(m.mul(r, r), m.poly(r, d ? kExpm1F64 : kExpm1F32), r);  // expm1(r)
  Value over = m.gt(kf, m.c(kmax));
  Value t = m.pow2i(m.to_int(m.sel(over, m.c(kmax), kf)));
  Value res = m.mad(t, em, m.sub(t, m.c(1.0)));  // 2^k expm1(r) + (2^k - 1); t * em is exact
  res = m.sel(over, m.mul(res, m.c(2.0)), res);
  res = m.sel(m.eq(x, m.c(0.0)), x, res);  // expm1(-0) = -0
  return m.sel(m.isnan(x), x, res);
}

}  // namespace

Value expm1_f32(kir::Builder& b, Value x) {
  need(b, x, Scalar::f32, "expm1_f32");
  VMath m(b, b.type(x));
  return expm1_any(m, x);
}

Value expm1_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "expm1_f64");
  VMath m(b, b.type(x));
  return expm1_any(m, x);
}

// ---- tanh, logistic -------------------------------------------------------------------------------

namespace {

Value tanh_any(VMath& m, Value x) {
  const bool d = m.is_f64();
  Value a = m.abs(x);
  Value z = m.mul(x, x);
  Value small = m.add(x, m.mul(x, m.mul(z, m.poly(z, d ? kTanhF64 : kTanhF32))));
  Value ac = m.clamp_nan_low(a, 0.0, 20.0);  // tanh(20) rounds to 1 in f32 and f64
  Value e = d ? expm1_f64(m.b, m.add(ac, ac)) : expm1_f32(m.b, m.add(ac, ac));
  Value big = m.copysign(m.sub(m.c(1.0), m.div(m.c(2.0), m.add(e, m.c(2.0)))), x);
  Value res = m.sel(m.lt(a, m.c(0.625)), small, big);
  res = m.sel(m.eq(x, m.c(0.0)), x, res);  // tanh(-0) = -0
  return m.sel(m.isnan(x), x, res);
}

}  // namespace

Value tanh_f32(kir::Builder& b, Value x) {
  need(b, x, Scalar::f32, "tanh_f32");
  VMath m(b, b.type(x));
  return tanh_any(m, x);
}

Value tanh_f64(kir::Builder& b, Value x) {
  need(b, x, Scalar::f64, "tanh_f64");
  VMath m(b, b.type(x));
  return tanh_any(m, x);
}

Value logistic(kir::Builder& b, Value x) {
  VMath m(b, b.type(x));
  Value na = m.neg(m.abs(x));
  Value e = m.is_f64() ? exp_f64(b, na) : exp_f32(b, na);
  Value one = m.c(1.0);
  Value den = m.add(one, e);
  // eager: x >= 0: 1 / (1 + exp(-x)); else (and NaN) exp(x) / (1 + exp(x))
  return m.sel(m.ge(x, m.c(0.0)), m.div(one, den), m.div(e, den));
}

// ---- two-term log (for pow) -----------------------------------------------------------------------

void log_dd_f64(kir::Builder& b, Value x, Value& hi, Value& lo) {
  need(b, x, Scalar::f64, "log_dd_f64");
  VMath m(b, b.type(x));
  Value ef, f;
  decompose(m, x, ef, f);
  // s = f / (2 + f) as sh + sl: the denominator as an exact sum, one correction of the quotient.
  Value uh, ul;
  m.two_sum(m.c(2.0), f, uh, ul);
  Value sh = m.div(f, uh);
  Value p, pe;
  m.two_prod(sh, uh, p, pe);
  Value sl = m.div(m.sub(m.sub(m.sub(f, p), pe), m.mul(sh, ul)), uh);
  // log(1+f) = 2s + s^3 (2/3) + s^5 T2(s^2) where T(z) = 2/3 + z T2(z); the first two in two terms.
  Value z = m.mul(sh, sh);
  Value s2h, s2l;
  m.two_prod(sh, sh, s2h, s2l);
  s2l = m.mad(m.add(sh, sh), sl, s2l);
  Value s3h, s3l;
  m.two_prod(s2h, sh, s3h, s3l);
  s3l = m.add(s3l, m.mad(s2h, sl, m.mul(s2l, sh)));
  Value ch, cl;  // s^3 * 2/3
  m.two_prod(s3h, m.c(kTwoThirdsHi), ch, cl);
  cl = m.add(cl, m.mad(s3h, m.c(kTwoThirdsLo), m.mul(s3l, m.c(kTwoThirdsHi))));
  Value tail = m.mul(m.mul(s3h, z), m.poly(z, kLogDdT2));  // s^5 T2(z)
  // e ln2 (ln2_hi has 32 bits: exact product) + 2s + cubic + tail, as an accumulation of exact sums.
  Value a = m.mul(ef, m.c(kLn2Hi32));
  Value al = m.mul(ef, m.c(kLn2Lo32));
  Value s1, e1, s2, e2, s3, e3;
  m.two_sum(a, m.add(sh, sh), s1, e1);
  m.two_sum(s1, ch, s2, e2);
  Value low = m.add(m.add(m.add(al, m.add(sl, sl)), m.add(cl, tail)), m.add(e1, e2));
  m.two_sum(s2, low, s3, e3);
  hi = s3;
  lo = e3;
}

// ---- type dispatch --------------------------------------------------------------------------------

namespace {
bool is64(kir::Builder& b, Value x) { return b.type(x).s == Scalar::f64; }
}  // namespace

Value exp(kir::Builder& b, Value x) { return is64(b, x) ? exp_f64(b, x) : exp_f32(b, x); }
Value log(kir::Builder& b, Value x) { return is64(b, x) ? log_f64(b, x) : log_f32(b, x); }
Value log1p(kir::Builder& b, Value x) { return is64(b, x) ? log1p_f64(b, x) : log1p_f32(b, x); }
Value expm1(kir::Builder& b, Value x) { return is64(b, x) ? expm1_f64(b, x) : expm1_f32(b, x); }
Value tanh(kir::Builder& b, Value x) { return is64(b, x) ? tanh_f64(b, x) : tanh_f32(b, x); }
Value sin(kir::Builder& b, Value x) { return is64(b, x) ? sin_f64(b, x) : sin_f32(b, x); }
Value cos(kir::Builder& b, Value x) { return is64(b, x) ? cos_f64(b, x) : cos_f32(b, x); }
Value tan(kir::Builder& b, Value x) { return is64(b, x) ? tan_f64(b, x) : tan_f32(b, x); }
Value erf(kir::Builder& b, Value x) { return is64(b, x) ? erf_f64(b, x) : erf_f32(b, x); }
Value erf_inv(kir::Builder& b, Value x) { return is64(b, x) ? erf_inv_f64(b, x) : erf_inv_f32(b, x); }
Value atan2(kir::Builder& b, Value y, Value x) { return is64(b, y) ? atan2_f64(b, y, x) : atan2_f32(b, y, x); }
Value pow(kir::Builder& b, Value x, Value y) { return is64(b, x) ? pow_f64(b, x, y) : pow_f32(b, x, y); }

}  // namespace minijax::lower::math

// minijax vectorized igamma(a, x) and igamma_grad_a(a, x) (issue 29): the power series and the
// continued fraction as vector loops with fixed iteration bounds; lgamma/digamma of a + 1 by
// Stirling's series; log and exp through the module's outlined functions.
#include <cmath>
#include <functional>
#include <vector>

#include "core/errors.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower::math {

using kir::Op;
using kir::Pred;
using kir::Scalar;
using kir::Type;
using kir::Value;

namespace {

// Stirling's series of lgamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2) in w = 1/z^2, times 1/z:
// B_2k / (2k (2k - 1)), k = 1..7 (Abramowitz & Stegun 6.1.40); for z >= 11 the next term is < 2e-17.
const std::vector<double> kStirling = {1.0 / 12,   -1.0 / 360,      1.0 / 1260, -1.0 / 1680,
                                       1.0 / 1188, -691.0 / 360360, 1.0 / 156};
// digamma(z) - (log z - 1/(2z)) = -w D(w): B_2k / 2k, k = 1..7 (Abramowitz & Stegun 6.3.18).
const std::vector<double> kDigamma = {1.0 / 12,  -1.0 / 120,     1.0 / 252, -1.0 / 240,
                                      1.0 / 132, -691.0 / 32760, 1.0 / 12};
constexpr double kHalfLog2Pi = 0.91893853320467274178;
constexpr double kTol = 0x1p-53;  // a loop's relative convergence test (the eager code's too)
constexpr double kRescale = 0x1p52;

// lgamma(a + 1) and (want_psi) digamma(a + 1) for a > 0 (f64 lanes), the special case igamma needs
// (calling the general lgamma and digamma, which handle every x, made igamma 1.4x slower): a < 10 is shifted to
// z = a + 11 >= 11 by lgamma(a + 1) = lgamma(a + 11) - log((a + 1)...(a + 10)) and digamma(a + 1) =
// digamma(a + 11) - sum 1/(a + k), then Stirling's series. Absolute error about 1e-15 (the
// exponent of igamma's prefactor needs absolute, not relative, accuracy).
void lgamma_digamma_1p(VMath& m, Value a, bool want_psi, Value& lg1, Value& psi1) {
  Value small = m.lt(a, m.c(10.0));
  Value z = m.sel(small, m.add(a, m.c(11.0)), m.add(a, m.c(1.0)));
  Value prod = m.add(a, m.c(1.0)), recips = m.div(m.c(1.0), prod);
  for (int k = 2; k <= 10; ++k) {
    Value ak = m.add(a, m.c(double(k)));
    prod = m.mul(prod, ak);
    if (want_psi) recips = m.add(recips, m.div(m.c(1.0), ak));
  }
  Value lz = call_outlined(m.b, "log", {z}), rz = m.div(m.c(1.0), z), w = m.mul(rz, rz);
  Value stirling = m.add(m.sub(m.mul(m.sub(z, m.c(0.5)), lz), z),
                         m.add(m.c(kHalfLog2Pi), m.mul(rz, m.poly(w, kStirling))));
  lg1 = m.sub(stirling, m.sel(small, call_outlined(m.b, "log", {prod}), m.c(0.0)));
  if (!want_psi) return;
  Value psi_z = m.sub(m.sub(lz, m.mul(m.c(0.5), rz)), m.mul(w, m.poly(w, kDigamma)));
  psi1 = m.sub(psi_z, m.sel(small, recips, m.c(0.0)));
}

// while (n < bound && some lane of `active` (1.0 / 0.0) is set) body(): the shared loop shell.
void masked_loop(LoopState& s, Value active, int bound, const std::function<void()>& body) {
  kir::Builder& b = s.m.b;
  Value n = b.stack_slot(kir::kI64);
  b.store(n, b.i64(0), b.i64(0));
  b.while_(
      [&] {
        Value more = b.icmp(Pred::slt, b.load(kir::kI64, n, b.i64(0)), b.i64(bound));
        return b.binop(Op::And, more, any_lane(b, s.m.gt(s.get(active), s.m.c(0.0))));
      },
      [&] {
        body();
        b.store(n, b.i64(0), b.add(b.load(kir::kI64, n, b.i64(0)), b.i64(1)));
      });
}

// The power series S = sum_n x^n / ((a+1)...(a+n)) and dS/da over the lanes of `on`, each lane
// stopping at the first term that no longer moves its sum(s) by kTol relative
// (kIgammaSeriesIters terms at most).
void series(VMath& m, Value a, Value x, Value on, bool want_grad, Value& s_out, Value& ds_out) {
  LoopState st{m};
  Value c = st.make(m.c(1.0)), s = st.make(m.c(1.0)), dc = st.make(m.c(0.0)), ds = st.make(m.c(0.0));
  Value r = st.make(a), active = st.make(m.sel(on, m.c(1.0), m.c(0.0)));
  masked_loop(st, active, kIgammaSeriesIters, [&] {
    Value live = m.gt(st.get(active), m.c(0.0));
    Value rn = m.add(st.get(r), m.c(1.0)), t = m.div(x, rn), cv = st.get(c), dcv = st.get(dc);
    Value dcn = m.sub(m.mul(dcv, t), m.div(m.mul(cv, t), rn));
    Value cn = m.mul(cv, t), sn = m.add(st.get(s), cn), dsn = m.add(st.get(ds), dcn);
    Value done = m.le(cn, m.mul(m.c(kTol), sn));
    if (want_grad) done = m.mand(done, m.le(m.abs(dcn), m.mul(m.c(kTol), m.abs(dsn))));
    st.set(r, m.sel(live, rn, st.get(r)));
    st.set(c, m.sel(live, cn, cv));
    st.set(dc, m.sel(live, dcn, dcv));
    st.set(s, m.sel(live, sn, st.get(s)));
    st.set(ds, m.sel(live, dsn, st.get(ds)));
    st.set(active, m.sel(m.mand(live, m.mnot(done)), m.c(1.0), m.c(0.0)));
  });
  s_out = st.get(s);
  ds_out = st.get(ds);
}

// Legendre's continued fraction F = Q(a, x) x^-a e^x Gamma(a) by Cephes's p/q recurrence (igamc.c)
// and dF/da from the derivatives of p and q carried alongside (XLA's IgammaGradA), over the lanes
// of `on` (kIgammaCfIters steps at most); p and q are rescaled by 2^-52 past 2^52.
void continued_fraction(VMath& m, Value a, Value x, Value on, bool want_grad, Value& f_out, Value& df_out) {
  LoopState st{m};
  Value one = m.c(1.0), zero = m.c(0.0);
  Value y0 = m.sub(one, a), z0 = m.add(m.add(x, y0), one), q1 = m.mul(z0, x), p1 = m.add(x, one);
  Value ans0 = m.div(p1, q1);
  Value y = st.make(y0), z = st.make(z0), c = st.make(zero);
  Value pkm2 = st.make(one), qkm2 = st.make(x), pkm1 = st.make(p1), qkm1 = st.make(q1);
  Value dpkm2 = st.make(zero), dqkm2 = st.make(zero), dpkm1 = st.make(zero), dqkm1 = st.make(m.neg(x));
  Value ans = st.make(ans0), dans = st.make(m.div(m.mul(ans0, x), q1));
  Value active = st.make(m.sel(on, one, zero));
  masked_loop(st, active, kIgammaCfIters, [&] {
    Value live = m.gt(st.get(active), zero);
    Value cn = m.add(st.get(c), one), yn = m.add(st.get(y), one), zn = m.add(st.get(z), m.c(2.0));
    Value yc = m.mul(yn, cn);
    Value P1 = st.get(pkm1), P2 = st.get(pkm2), Q1 = st.get(qkm1), Q2 = st.get(qkm2);
    Value dP1 = st.get(dpkm1), dP2 = st.get(dpkm2), dQ1 = st.get(dqkm1), dQ2 = st.get(dqkm2);
    Value pk = m.sub(m.mul(P1, zn), m.mul(P2, yc)), qk = m.sub(m.mul(Q1, zn), m.mul(Q2, yc));
    Value dpk = m.add(m.sub(m.sub(m.mul(dP1, zn), P1), m.mul(dP2, yc)), m.mul(P2, cn));
    Value dqk = m.add(m.sub(m.sub(m.mul(dQ1, zn), Q1), m.mul(dQ2, yc)), m.mul(Q2, cn));
    Value nz = m.b.fcmp(Pred::fone, qk, zero);
    Value rr = m.div(pk, qk), dr = m.div(m.sub(dpk, m.mul(rr, dqk)), qk);
    Value av = st.get(ans), dav = st.get(dans);
    Value done = m.mand(nz, m.le(m.abs(m.sub(av, rr)), m.mul(m.c(kTol), m.abs(rr))));
    if (want_grad) done = m.mand(done, m.le(m.abs(m.sub(dav, dr)), m.mul(m.c(kTol), m.abs(dr))));
    Value upd = m.mand(live, nz);
    st.set(ans, m.sel(upd, rr, av));
    st.set(dans, m.sel(upd, dr, dav));
    Value scale = m.sel(m.gt(m.abs(pk), m.c(kRescale)), m.c(1.0 / kRescale), one);
    auto put = [&](Value slot, Value v) { st.set(slot, m.sel(live, m.mul(v, scale), st.get(slot))); };
    put(pkm2, P1);
    put(pkm1, pk);
    put(qkm2, Q1);
    put(qkm1, qk);
    put(dpkm2, dP1);
    put(dpkm1, dpk);
    put(dqkm2, dQ1);
    put(dqkm1, dqk);
    st.set(c, m.sel(live, cn, st.get(c)));
    st.set(y, m.sel(live, yn, st.get(y)));
    st.set(z, m.sel(live, zn, st.get(z)));
    st.set(active, m.sel(m.mand(live, m.mnot(done)), one, zero));
  });
  f_out = st.get(ans);
  df_out = st.get(dans);
}

// P(a, x) or (want_grad) dP/da on f64 lanes: the edges (NaN, x = 0 or inf, a = inf) selected at
// the end, the other lanes by the series (x < a + 1) or the continued fraction, each loop skipping
// the lanes whose prefactor x^a e^-x / Gamma(a + 1) underflows to 0 (there P is 0 or 1).
Value igamma_core_f64(kir::Builder& b, Value a, Value x, bool want_grad) {
  VMath m(b, b.type(a));
  Value zero = m.c(0.0), one = m.c(1.0), inf = m.c(INFINITY);
  Value nan_in = m.mor(m.mor(m.isnan(a), m.isnan(x)), m.mor(m.le(a, zero), m.lt(x, zero)));
  nan_in = m.mor(nan_in, m.mand(m.eq(a, inf), m.eq(x, inf)));
  Value x_zero = m.eq(x, zero), x_inf = m.eq(x, inf), a_inf = m.eq(a, inf);
  Value edge = m.mor(m.mor(nan_in, x_zero), m.mor(x_inf, a_inf));
  // Lanes outside the loops' domain run on (a, x) = (1, 1/2) and are replaced at the end.
  Value as = m.sel(edge, one, a), xs = m.sel(edge, m.c(0.5), x);
  Value use_cf = m.ge(xs, m.add(as, one));
  Value lg1, psi1;
  lgamma_digamma_1p(m, as, want_grad, lg1, psi1);
  Value lx = call_outlined(b, "log", {xs});
  Value e1 = call_outlined(b, "exp", {m.sub(m.sub(m.mul(as, lx), xs), lg1)});  // x^a e^-x / Gamma(a + 1)
  Value live = m.gt(e1, zero), s, ds, f, df;
  series(m, as, xs, m.mand(live, m.mnot(use_cf)), want_grad, s, ds);
  continued_fraction(m, as, xs, m.mand(live, use_cf), want_grad, f, df);
  Value e = m.mul(as, e1);  // x^a e^-x / Gamma(a)
  Value r;
  if (!want_grad) {
    r = m.sel(use_cf, m.sub(one, m.mul(e, f)), m.mul(e1, s));
    r = m.sel(live, r, m.sel(use_cf, one, zero));
    r = m.sel(x_inf, one, m.sel(m.mor(x_zero, a_inf), zero, r));
  } else {
    Value from_s = m.mul(e1, m.add(m.mul(s, m.sub(lx, psi1)), ds));
    // log x - digamma(a) = log x - digamma(a + 1) + 1/a: the 1/a term as e1 f (a subnormal a: no inf * 0).
    Value from_f = m.neg(m.add(m.mul(e, m.add(m.mul(f, m.sub(lx, psi1)), df)), m.mul(e1, f)));
    r = m.sel(live, m.sel(use_cf, from_f, from_s), zero);
    r = m.sel(m.mor(m.mor(x_zero, x_inf), a_inf), zero, r);
  }
  return m.sel(nan_in, m.c(NAN), r);
}

Value igamma_any(kir::Builder& b, Value a, Value x, bool want_grad) {
  const bool f32 = b.type(a).s == Scalar::f32;
  if (f32) {
    a = to_f64(b, a);
    x = to_f64(b, x);
  }
  Value r = igamma_core_f64(b, a, x, want_grad);
  return f32 ? to_f32(b, r) : r;
}

}  // namespace

Value igamma_f32(kir::Builder& b, Value a, Value x) { return igamma_any(b, a, x, false); }
Value igamma_f64(kir::Builder& b, Value a, Value x) { return igamma_any(b, a, x, false); }
Value igamma(kir::Builder& b, Value a, Value x) { return igamma_any(b, a, x, false); }
Value igamma_grad_a_f32(kir::Builder& b, Value a, Value x) { return igamma_any(b, a, x, true); }
Value igamma_grad_a_f64(kir::Builder& b, Value a, Value x) { return igamma_any(b, a, x, true); }
Value igamma_grad_a(kir::Builder& b, Value a, Value x) { return igamma_any(b, a, x, true); }

}  // namespace minijax::lower::math

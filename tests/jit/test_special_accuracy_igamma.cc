// Accuracy of igamma and igamma_grad_a (issue 29, item 8), eager and compiled, f32 and f64, against
// the mpmath values of tools/special_reference_igamma.py (tests/jit/special_reference/igamma*.bin).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "special_reference.h"

namespace {

using mj::Array;
namespace lax = mj::lax;

using special_reference::Pairs;
using Reference = special_reference::Binary;
Reference read_reference(const std::string& fn) { return special_reference::read_binary(fn); }

Array to_array(const std::vector<double>& v, mj::DType dt) {
  return mj::astype(mj::array(v, {int64_t(v.size())}, mj::f64), dt);
}

// The error of got against ref in units of the bound: relative error / rtol where |ref| >= floor,
// absolute error / floor below it; NaN must match NaN; infinities never occur. > 1 fails.
double scaled_error(double got, double ref, double rtol, double floor) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got) ? 0 : 1e9;
  if (std::fabs(ref) < floor) return std::fabs(got - ref) / floor;
  return std::fabs(got - ref) / std::fabs(ref) / rtol;
}

struct Case {
  const char* name;
  Array (*f)(const Array&, const Array&, mj::SL);
  double rtol64, rtol32;
};

// igamma: relative 1e-12 (f64) / 1e-4 (f32) where P >= 1e-290 / 1e-30, absolute below; igamma_grad_a:
// relative 1e-9 / 1e-3 with the same floors (issue 29 item 8).
void check(const Case& c) {
  const Reference r = read_reference(c.name);
  ASSERT_GE(r.f32.a.size(), 10000u);
  ASSERT_GE(r.f64.a.size(), 10000u);
  for (mj::DType dt : {mj::f32, mj::f64}) {
    const Pairs& p = dt == mj::f32 ? r.f32 : r.f64;
    const double rtol = dt == mj::f32 ? c.rtol32 : c.rtol64, floor = dt == mj::f32 ? 1e-30 : 1e-290;
    Array a = to_array(p.a, dt), x = to_array(p.x, dt);
    auto fn = [&c](const Array& u, const Array& v) { return c.f(u, v, mj::SL::current()); };
    for (int compiled = 0; compiled < 2; ++compiled) {
      Array got = mj::astype(compiled ? mj::jit(fn)(a, x) : fn(a, x), mj::f64);
      const double* g = got.data<double>();
      double worst = 0, worst_rel = 0;
      size_t at = 0;
      for (size_t i = 0; i < p.a.size(); ++i) {
        const double e = scaled_error(g[i], p.ref[i], rtol, floor);
        if (e > worst) {
          worst = e;
          at = i;
        }
        if (std::isfinite(p.ref[i]) && std::fabs(p.ref[i]) >= floor)
          worst_rel = std::max(worst_rel, std::fabs(g[i] - p.ref[i]) / std::fabs(p.ref[i]));
      }
      const char* how = compiled ? "compiled" : "eager";
      std::printf(
          "[ error    ] %-13s %s %-8s max relative %.3g (%.3g of the bound) at a = %.17g, x = %.17g (%zu pairs)\n",
          c.name, mj::dtype_name(dt), how, worst_rel, worst, p.a[at], p.x[at], p.a.size());
      EXPECT_LE(worst, 1.0) << c.name << " " << how << " " << mj::dtype_name(dt) << " at a = " << p.a[at]
                            << ", x = " << p.x[at] << ": got " << g[at] << ", reference " << p.ref[at];
    }
  }
}

TEST(SpecialAccuracyIgamma, IgammaWithinBoundsOfMpmath) { check({"igamma", lax::igamma, 1e-12, 1e-4}); }

TEST(SpecialAccuracyIgamma, IgammaGradAWithinBoundsOfMpmath) {
  check({"igamma_grad_a", lax::igamma_grad_a, 1e-9, 1e-3});
}

// The domain edges, eager and compiled, f32 and f64 (values by hand: P(a, 0) = 0, P(a, inf) = 1,
// P(inf, x) = 0; NaN for a <= 0, x < 0, NaN operands and a = x = inf; dP/da is 0 at x = 0 and inf).
TEST(SpecialAccuracyIgamma, DomainEdges) {
  const double nan = std::nan(""), inf = INFINITY;
  const std::vector<double> a = {0.0, -0.0, -1.0, 1.0, nan, 1.0, 2.5, 2.5, inf, inf, 3.0, -inf};
  const std::vector<double> x = {1.0, 0.5, 1.0, -1.0, 1.0, nan, 0.0, inf, 5.0, inf, -0.0, 2.0};
  const std::vector<double> p = {nan, nan, nan, nan, nan, nan, 0.0, 1.0, 0.0, nan, 0.0, nan};
  const std::vector<double> d = {nan, nan, nan, nan, nan, nan, 0.0, 0.0, 0.0, nan, 0.0, nan};
  for (mj::DType dt : {mj::f32, mj::f64})
    for (int compiled = 0; compiled < 2; ++compiled) {
      Array av = to_array(a, dt), xv = to_array(x, dt);
      auto f = [](const Array& u, const Array& v) { return lax::igamma(u, v); };
      auto g = [](const Array& u, const Array& v) { return lax::igamma_grad_a(u, v); };
      Array rp = mj::astype(compiled ? mj::jit(f)(av, xv) : f(av, xv), mj::f64);
      Array rd = mj::astype(compiled ? mj::jit(g)(av, xv) : g(av, xv), mj::f64);
      for (size_t i = 0; i < a.size(); ++i) {
        for (auto [got, want, fn] : {std::tuple{rp.data<double>()[i], p[i], "igamma"},
                                     std::tuple{rd.data<double>()[i], d[i], "igamma_grad_a"}}) {
          const bool ok = std::isnan(want) ? std::isnan(got) : got == want;
          EXPECT_TRUE(ok) << fn << " " << mj::dtype_name(dt) << (compiled ? " compiled" : " eager")
                          << " at a = " << a[i] << ", x = " << x[i] << ": got " << got << ", want " << want;
        }
      }
    }
}

}  // namespace

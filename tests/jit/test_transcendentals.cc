// Tests of the vectorized transcendentals (jit/codegen/lower/transcendentals.h) through mj::jit: max ulp error
// vs f64 libm over 2^24 (f32) / 2^20 (f64) inputs and special values, compiled vs eager, the code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include <minijax/minijax.h>

#include "jit/codegen/emit_llvm.h"
#include "jit/codegen/lower/transcendentals.h"

namespace {

using mj::Array;

// ---- error measures -------------------------------------------------------------------------------

constexpr double kFail = 1e9;  // a class mismatch (NaN, inf, sign of zero)

// |got - ref| in units of the last place of ref rounded to the result type (T = float or double);
// NaN, inf and signed zeros must match exactly.
template <class T>
double ulp_error(T got, long double ref) {
  const int digits = std::numeric_limits<T>::digits;
  const long double tiny = std::ldexp(1.0L, std::numeric_limits<T>::min_exponent - digits);
  T rt = T(ref);
  if (std::isnan(ref)) return std::isnan(got) ? 0 : kFail;
  if (std::isnan(got)) return kFail;
  if (std::isinf(rt) || std::isinf(got)) return rt == got ? 0 : kFail;
  if (ref == 0 && got == 0) return std::signbit(ref) == std::signbit(got) ? 0 : kFail;
  int e;
  std::frexp((long double)(rt == 0 ? T(tiny) : rt), &e);
  long double ulp = std::max(std::ldexp(1.0L, e - digits), tiny);
  return double(fabsl((long double)got - ref) / ulp);
}

struct Worst {
  double ulp = 0;
  double at = 0, at2 = 0;
  void see(double err, double x, double y = 0) {
    if (err > ulp) {
      ulp = err;
      at = x;
      at2 = y;
    }
  }
};

// ---- inputs ---------------------------------------------------------------------------------------

template <class T>
std::vector<T> common_specials() {
  using L = std::numeric_limits<T>;
  std::vector<T> s = {T(0), T(-0.0), L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(),
                      -L::denorm_min(), L::min(), -L::min(), L::max(), -L::max(), T(1), T(-1), T(0.5),
                      T(-0.5), T(2), T(-2), T(M_PI / 2), T(M_PI), T(-M_PI), T(1e10), T(-1e10),
                      T(std::ldexp(1.0, 19)), T(std::ldexp(1.0, 24)), T(std::ldexp(1.0, 60)),
                      T(std::ldexp(1.0, 100)), T(-std::ldexp(1.0, 127)), T(1e-7), T(-1e-30)};
  return s;
}

// n values: `specials` first, then a third uniform in [lo, hi], a third uniform in [lo2, hi2], a
// third with random bit patterns whose magnitude is at most `amax` (sign random unless `positive`).
template <class T>
std::vector<T> inputs(size_t n, uint32_t seed, std::vector<T> specials, double lo, double hi, double lo2,
                      double hi2, double amax, bool positive = false) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::mt19937_64 g(seed);
  std::vector<T> v = std::move(specials);
  v.reserve(n);
  std::uniform_real_distribution<double> u1(lo, hi), u2(lo2, hi2);
  U max_bits;
  T am = T(amax);
  std::memcpy(&max_bits, &am, sizeof(T));
  while (v.size() < n) {
    size_t k = v.size() % 3;
    if (k == 0) {
      v.push_back(T(u1(g)));
    } else if (k == 1) {
      v.push_back(T(u2(g)));
    } else {
      U b = U(g()) % (max_bits + 1);
      T x;
      std::memcpy(&x, &b, sizeof(T));
      if (!positive && (g() & 1)) x = -x;
      v.push_back(x);
    }
  }
  v.resize(n);
  return v;
}

template <class T>
Array to_array(const std::vector<T>& v) {
  Array a = mj::zeros({int64_t(v.size())}, sizeof(T) == 4 ? mj::f32 : mj::f64);
  std::memcpy(a.mutable_data<T>(), v.data(), v.size() * sizeof(T));
  return a;
}

// ---- references -----------------------------------------------------------------------------------

// The logistic function in long double (its stable form: no overflow of exp(-x)).
long double logistic_refl(long double x) {
  long double e = expl(-fabsl(x));
  return x >= 0 ? 1 / (1 + e) : e / (1 + e);
}
double logistic_ref(double x) { return double(logistic_refl(x)); }

// erfinv by Newton's method on libm's erf / log(erfc) in R (double for f32 results, long double
// for f64; an independent oracle): Winitzki's closed form as the start (relative error < 2e-3),
// log(erfc(y)) = log(1 - |x|) for |x| >= 1/2 (well conditioned near 1: 1 - |x| is exact), five
// quadratically converging steps.
template <class R>
R erf_inv_ref(R x) {
  using std::erf, std::erfc, std::exp, std::fabs, std::log, std::log1p, std::sqrt;
  if (std::isnan(double(x)) || fabs(x) > 1) return R(NAN);
  if (fabs(x) == 1) return std::copysign(R(INFINITY), x);
  R ax = fabs(x);
  if (ax == 0) return x;
  const R a = R(0.147L), pi = R(3.141592653589793238462643383279502884L);
  R l = log1p(-ax * ax);
  R t = 2 / (pi * a) + l / 2;
  R y = sqrt(sqrt(t * t - l / a) - t);
  const R c = 2 / sqrt(pi);
  for (int i = 0; i < 5; ++i) {
    R d = c * exp(-y * y);
    if (ax < R(0.5)) {
      y -= (erf(y) - ax) / d;
    } else {
      R e = erfc(y);
      y += (log(e) - log(1 - ax)) * e / d;
    }
  }
  return std::copysign(y, x);
}

// ---- the sweeps -----------------------------------------------------------------------------------

using Fn1 = std::function<Array(const Array&)>;

// The reference: f64 libm for f32 results ((float)f((double)x) before rounding), long double libm
// for f64 results (glibc's f64 functions are not always within an ulp, e.g. cos near 2^850).
using Ref32 = double (*)(double);
using Ref64 = long double (*)(long double);

template <class T>
long double reference(Ref32 r32, Ref64 r64, T x) {
  if constexpr (sizeof(T) == 4) return r32(double(x));
  else return r64(x);
}

template <class T>
Worst sweep1(const Fn1& f, Ref32 r32, Ref64 r64, const std::vector<T>& xs, const char* name) {
  Array x = to_array(xs);
  Array y = mj::jit(f)(x);
  const T* py = y.data<T>();
  Worst w;
  size_t wi = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double e = ulp_error<T>(py[i], reference<T>(r32, r64, xs[i]));
    if (e > w.ulp) wi = i;
    w.see(e, double(xs[i]));
  }
  std::printf("[ ulp      ] %-9s %s: max %.3f ulp at x = %.17g (%zu inputs; got %.17g, want %.17Lg)\n", name,
              sizeof(T) == 4 ? "f32" : "f64", w.ulp, w.at, xs.size(), double(py[wi]),
              reference<T>(r32, r64, xs[wi]));
  return w;
}

// Compiled vs eager on the first m inputs (eager: the same primitive evaluated by core, with libm
// in T), where eager is within 1 ulp of the reference (`skipped` counts the others).
template <class T>
double vs_eager1(const Fn1& f, Ref32 r32, Ref64 r64, const std::vector<T>& xs, size_t m, size_t& skipped,
                 bool (*keep)(double) = nullptr) {
  std::vector<T> head(xs.begin(), xs.begin() + std::min(m, xs.size()));
  Array x = to_array(head);
  Array got = mj::jit(f)(x), want = f(x);
  const T *pg = got.data<T>(), *pw = want.data<T>();
  double worst = 0;
  skipped = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    if (keep && !keep(double(head[i]))) continue;
    if (ulp_error<T>(pw[i], reference<T>(r32, r64, head[i])) > 1.0) {
      ++skipped;
      continue;
    }
    worst = std::max(worst, ulp_error<T>(pg[i], (long double)pw[i]));
  }
  return worst;
}

constexpr size_t kN32 = (size_t(1) << 24) + 5;
constexpr size_t kN64 = (size_t(1) << 20) + 5;
constexpr size_t kEager = size_t(1) << 20;

struct Unary {
  const char* name;
  Fn1 f;
  Ref32 ref;
  Ref64 refl;
  std::vector<double> extra;  // function-specific special values
  double lo, hi, lo2, hi2, amax;
  bool positive = false;
};

template <class T>
void check_unary(const Unary& u, size_t n = sizeof(T) == 4 ? kN32 : kN64, bool eager = true) {
  std::vector<T> sp = common_specials<T>();
  for (double e : u.extra) sp.push_back(T(e));
  auto xs = inputs<T>(n, 7, sp, u.lo, u.hi, u.lo2, u.hi2, u.amax, u.positive);
  Worst w = sweep1<T>(u.f, u.ref, u.refl, xs, u.name);
  EXPECT_LE(w.ulp, 4.0) << u.name << " at x = " << w.at;
  if (!eager) return;
  size_t skipped;
  double e = vs_eager1<T>(u.f, u.ref, u.refl, xs, kEager, skipped);
  std::printf("[ eager    ] %-9s %s: compiled vs eager max %.3f ulp (%zu inputs where eager is off by > 1 ulp skipped)\n",
              u.name, sizeof(T) == 4 ? "f32" : "f64", e, skipped);
  EXPECT_LE(e, 4.0) << u.name << " compiled vs eager";
}

const double kBig32 = FLT_MAX, kBig64 = DBL_MAX;

Unary exp_case() {
  return {"exp", [](const Array& x) { return mj::lax::exp(x); }, [](double v) { return std::exp(v); },
          [](long double v) { return std::exp(v); },
          {88.72283172607422, 88.7228393554687, -87.33654475, -103.972077, -103.278929, 709.782712893384,
           709.7827128933841, -708.3964185322641, -745.1332191019411, -745.1332191019412},
          -104, 89, -1, 1, 110};
}

}  // namespace

// ---- f32 ------------------------------------------------------------------------------------------

TEST(Transcendentals, ExpF32) { check_unary<float>(exp_case()); }
TEST(Transcendentals, ExpF64) {
  Unary u = exp_case();
  u.lo = -746, u.hi = 710, u.amax = 750;
  check_unary<double>(u);
}

namespace {
Unary log_case() {
  return {"log", [](const Array& x) { return mj::lax::log(x); }, [](double v) { return std::log(v); },
          [](long double v) { return std::log(v); },
          {0.7071067, 0.70710677, 1.4142135, 1.0000001, 0.99999994, -1e-30},
          0, 10, 0.5, 2, kBig32, true};
}
Unary log1p_case() {
  return {"log1p", [](const Array& x) { return mj::lax::log1p(x); }, [](double v) { return std::log1p(v); },
          [](long double v) { return std::log1p(v); },
          {-1, -0.99999994, -0.9999999999999999, -1.0000001, -0.2928932, 0.41421357, 1e-8, -1e-8, 6e-8},
          -1, 10, -0.5, 0.5, 1.0};
}
Unary expm1_case() {
  return {"expm1", [](const Array& x) { return mj::lax::expm1(x); }, [](double v) { return std::expm1(v); },
          [](long double v) { return std::expm1(v); },
          {88.72283172607422, 88.7228393554687, -17.3, -30, 44.4, 88.4, 709.78, -38, 1e-9, -1e-9},
          -30, 89, -1, 1, 90};
}
Unary tanh_case() {
  return {"tanh", [](const Array& x) { return mj::lax::tanh(x); }, [](double v) { return std::tanh(v); },
          [](long double v) { return std::tanh(v); },
          {0.625, -0.625, 0.62499994, 9.01, 19.1, 20, 1e-20}, -10, 10, -1, 1, kBig32};
}
Unary logistic_case() {
  return {"logistic", [](const Array& x) { return mj::lax::logistic(x); }, logistic_ref, logistic_refl,
          {-88.7, -103.9, -104.5, 16.7, 17.4, 37, -745}, -100, 100, -5, 5, kBig32};
}
Unary sin_case() {
  return {"sin", [](const Array& x) { return mj::lax::sin(x); }, [](double v) { return std::sin(v); },
          [](long double v) { return std::sin(v); },
          // 6381956970095103 2^797: the double closest to a multiple of pi/2 (|x mod pi/2| ~ 2^-60.9;
          // Muller, "Elementary Functions", table 11.1); 16367173 2^72: the hardest float for it
          {1e22, -1e22, 5e15, 524287.5, 524288, 6.7e7, 1.2e8, 3.14159265358979, 1.5707963267948966,
           std::ldexp(6381956970095103.0, 797), -std::ldexp(6381956970095103.0, 797), std::ldexp(16367173.0, 72)},
          -10, 10, -1e6, 1e6, kBig32};
}
Unary cos_case() {
  Unary u = sin_case();
  u.name = "cos";
  u.f = [](const Array& x) { return mj::lax::cos(x); };
  u.ref = [](double v) { return std::cos(v); };
  u.refl = [](long double v) { return std::cos(v); };
  return u;
}
Unary tan_case() {
  Unary u = sin_case();
  u.name = "tan";
  u.f = [](const Array& x) { return mj::lax::tan(x); };
  u.ref = [](double v) { return std::tan(v); };
  u.refl = [](long double v) { return std::tan(v); };
  return u;
}
Unary erf_case() {
  return {"erf", [](const Array& x) { return mj::lax::erf(x); }, [](double v) { return std::erf(v); },
          [](long double v) { return std::erf(v); },
          {0.8, 0.79999995, 1, 0.99999994, 1.6, 3, 3.92, 4, 5.9, 6, 6.1}, -5, 5, -1, 1, kBig32};
}
double erf_inv_ref32(double x) { return erf_inv_ref<double>(x); }
Unary erf_inv_case() {
  return {"erf_inv", [](const Array& x) { return mj::lax::erf_inv(x); }, erf_inv_ref32, erf_inv_ref<long double>,
          {1, -1, 0.99999994, -0.99999994, 1.0000001, 0.9999999999999999, 0.5, 0.49999997, 1e-30},
          -1, 1, 0.99, 1, 1.0};
}
}  // namespace

TEST(Transcendentals, LogF32) { check_unary<float>(log_case()); }
TEST(Transcendentals, LogF64) {
  Unary u = log_case();
  u.amax = kBig64;
  check_unary<double>(u);
}
TEST(Transcendentals, Log1pF32) { check_unary<float>(log1p_case()); }
TEST(Transcendentals, Log1pF64) { check_unary<double>(log1p_case()); }
TEST(Transcendentals, Expm1F32) { check_unary<float>(expm1_case()); }
TEST(Transcendentals, Expm1F64) {
  Unary u = expm1_case();
  u.lo = -40, u.hi = 710, u.amax = 720;
  check_unary<double>(u);
}
TEST(Transcendentals, TanhF32) { check_unary<float>(tanh_case()); }
TEST(Transcendentals, TanhF64) {
  Unary u = tanh_case();
  u.amax = kBig64;
  check_unary<double>(u);
}
TEST(Transcendentals, LogisticF32) { check_unary<float>(logistic_case()); }
TEST(Transcendentals, LogisticF64) {
  Unary u = logistic_case();
  u.amax = kBig64;
  u.lo = -750, u.hi = 750;
  check_unary<double>(u);
}
TEST(Transcendentals, SinF32) { check_unary<float>(sin_case()); }
TEST(Transcendentals, CosF32) { check_unary<float>(cos_case()); }
TEST(Transcendentals, TanF32) { check_unary<float>(tan_case()); }
TEST(Transcendentals, SinF64) {
  Unary u = sin_case();
  u.amax = kBig64;
  check_unary<double>(u);
}
TEST(Transcendentals, CosF64) {
  Unary u = cos_case();
  u.amax = kBig64;
  check_unary<double>(u);
}
TEST(Transcendentals, TanF64) {
  Unary u = tan_case();
  u.amax = kBig64;
  check_unary<double>(u);
}
TEST(Transcendentals, ErfF32) { check_unary<float>(erf_case()); }
TEST(Transcendentals, ErfF64) {
  Unary u = erf_case();
  u.amax = kBig64;
  check_unary<double>(u);
}
TEST(Transcendentals, ErfInvF32) { check_unary<float>(erf_inv_case()); }
TEST(Transcendentals, ErfInvF64) {
  // Eager's f64 erf_inv refines with Newton steps on erf(y) = x, which loses accuracy as |x| -> 1
  // (the residual erf(y) - x cancels); compare with it where it is accurate, |x| <= 0.9.
  Unary u = erf_inv_case();
  std::vector<double> sp = common_specials<double>();
  for (double e : u.extra) sp.push_back(e);
  auto xs = inputs<double>(kN64, 7, sp, u.lo, u.hi, u.lo2, u.hi2, u.amax);
  Worst w = sweep1<double>(u.f, u.ref, u.refl, xs, u.name);
  EXPECT_LE(w.ulp, 4.0) << "at x = " << w.at;
  size_t skipped;
  double e = vs_eager1<double>(u.f, u.ref, u.refl, xs, kEager, skipped, [](double v) { return std::fabs(v) <= 0.9; });
  std::printf("[ eager    ] erf_inv   f64: compiled vs eager (|x| <= 0.9) max %.3f ulp (%zu skipped)\n", e, skipped);
  EXPECT_LE(e, 4.0);
}

// ---- binary: pow, atan2 ---------------------------------------------------------------------------

namespace {

using Fn2 = std::function<Array(const Array&, const Array&)>;

template <class T>
std::vector<T> binary_specials() {
  using L = std::numeric_limits<T>;
  return {T(0), T(-0.0), L::infinity(), -L::infinity(), L::quiet_NaN(), T(1), T(-1), T(0.5), T(-0.5), T(2),
          T(-2), T(3), T(-3), T(0.3), L::denorm_min(), -L::denorm_min(), L::min(), L::max(), -L::max(),
          T(1e-30), T(100), T(-7)};
}

enum class Kind { pow, atan2 };

// Pairs: the cross product of the special values, then thirds of three generators.
template <class T>
void binary_inputs(Kind kind, size_t n, std::vector<T>& xs, std::vector<T>& ys) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  auto sp = binary_specials<T>();
  for (T a : sp)
    for (T b : sp) {
      xs.push_back(a);
      ys.push_back(b);
    }
  std::mt19937_64 g(11);
  std::uniform_real_distribution<double> u01(0, 1);
  auto bits = [&](bool positive) {
    U b = U(g());
    T x;
    std::memcpy(&x, &b, sizeof(T));
    if (!std::isfinite(x)) x = T(1.5);
    return positive ? std::fabs(x) : x;
  };
  while (xs.size() < n) {
    size_t k = xs.size() % 3;
    T x, y;
    if (kind == Kind::pow) {
      if (k == 0) {
        x = T(4 * u01(g)), y = T(80 * u01(g) - 40);
      } else if (k == 1) {
        x = bits(true), y = T(6 * u01(g) - 3);
      } else {
        x = T(20 * u01(g) - 10);
        y = (g() & 1) ? T(std::floor(61 * u01(g)) - 30) : T(20 * u01(g) - 10);
      }
    } else {
      if (k == 0) {
        x = T(20 * u01(g) - 10), y = T(20 * u01(g) - 10);
      } else if (k == 1) {
        x = bits(false), y = bits(false);
      } else {
        x = T(2 * u01(g) - 1), y = T(x * std::ldexp(u01(g) - 0.5, -int(g() % 60)));
      }
    }
    xs.push_back(x);
    ys.push_back(y);
  }
}

template <class T>
void check_binary(Kind kind, size_t n = sizeof(T) == 4 ? kN32 : kN64, bool eager = true) {
  const char* name = kind == Kind::pow ? "pow" : "atan2";
  Fn2 f = kind == Kind::pow ? Fn2([](const Array& x, const Array& y) { return mj::lax::pow(x, y); })
                            : Fn2([](const Array& y, const Array& x) { return mj::lax::atan2(y, x); });
  std::vector<T> a, b;  // pow(a, b); atan2(a, b) with a = y, b = x as in C
  binary_inputs<T>(kind, n, b, a);
  if (kind == Kind::pow) std::swap(a, b);
  Array xa = to_array(a), xb = to_array(b);
  Array got = mj::jit(f)(xa, xb);
  const T* pg = got.data<T>();
  Worst w;
  for (size_t i = 0; i < a.size(); ++i) {
    long double ref;
    if constexpr (sizeof(T) == 4)
      ref = kind == Kind::pow ? std::pow(double(a[i]), double(b[i])) : std::atan2(double(a[i]), double(b[i]));
    else
      ref = kind == Kind::pow ? powl(a[i], b[i]) : atan2l(a[i], b[i]);
    w.see(ulp_error<T>(pg[i], ref), double(a[i]), double(b[i]));
  }
  std::printf("[ ulp      ] %-9s %s: max %.3f ulp at (%.17g, %.17g) (%zu inputs)\n", name,
              sizeof(T) == 4 ? "f32" : "f64", w.ulp, w.at, w.at2, a.size());
  EXPECT_LE(w.ulp, 4.0) << name << "(" << w.at << ", " << w.at2 << ")";
  if (!eager) return;
  // compiled vs eager (eager: libm in T) on the first kEager pairs
  size_t m = std::min(kEager, a.size());
  Array ea = to_array(std::vector<T>(a.begin(), a.begin() + m)), eb = to_array(std::vector<T>(b.begin(), b.begin() + m));
  Array cg = mj::jit(f)(ea, eb), ce = f(ea, eb);
  double worst = 0;
  for (size_t i = 0; i < m; ++i) worst = std::max(worst, ulp_error<T>(cg.data<T>()[i], double(ce.data<T>()[i])));
  std::printf("[ eager    ] %-9s %s: compiled vs eager max %.3f ulp\n", name, sizeof(T) == 4 ? "f32" : "f64", worst);
  EXPECT_LE(worst, 4.0);
}

}  // namespace

TEST(Transcendentals, PowF32) { check_binary<float>(Kind::pow); }
TEST(Transcendentals, PowF64) { check_binary<double>(Kind::pow); }
TEST(Transcendentals, Atan2F32) { check_binary<float>(Kind::atan2); }
TEST(Transcendentals, Atan2F64) { check_binary<double>(Kind::atan2); }

// ---- dtypes other than the sweeps: bf16 through f32, chains ---------------------------------------

namespace {

double bf16_ulps(float got, float want) {
  if (std::isnan(got) && std::isnan(want)) return 0;
  if (std::isnan(got) || std::isnan(want)) return kFail;
  if (got == want) return 0;
  if (std::isinf(got) || std::isinf(want)) return kFail;
  int e;
  std::frexp(want == 0 ? 1e-38f : want, &e);
  return std::fabs(double(got) - double(want)) / std::max(std::ldexp(1.0, e - 8), std::ldexp(1.0, -133));
}

}  // namespace

TEST(Transcendentals, Bf16GoesThroughF32AndRoundsOnce) {
  // Every unary transcendental on bf16 inputs: compiled and eager both compute in f32 and round to
  // bf16 once; their f32 results differ by a few f32 ulps, so the bf16 results are equal or one
  // bf16 ulp apart (at a rounding boundary).
  std::vector<float> v = inputs<float>(1 << 16, 3, common_specials<float>(), -6, 6, -1, 1, 1e30);
  Array x = mj::astype(to_array(v), mj::bf16);
  Array xin = mj::astype(mj::lax::clamp(mj::lax::full({}, -1.0, mj::bf16), x, mj::lax::full({}, 1.0, mj::bf16)), mj::bf16);
  std::vector<std::pair<const char*, Fn1>> fs = {
      {"exp", [](const Array& a) { return mj::lax::exp(a); }},     {"log", [](const Array& a) { return mj::lax::log(a); }},
      {"log1p", [](const Array& a) { return mj::lax::log1p(a); }}, {"expm1", [](const Array& a) { return mj::lax::expm1(a); }},
      {"tanh", [](const Array& a) { return mj::lax::tanh(a); }},   {"logistic", [](const Array& a) { return mj::lax::logistic(a); }},
      {"sin", [](const Array& a) { return mj::lax::sin(a); }},     {"cos", [](const Array& a) { return mj::lax::cos(a); }},
      {"tan", [](const Array& a) { return mj::lax::tan(a); }},     {"erf", [](const Array& a) { return mj::lax::erf(a); }},
      {"erf_inv", [](const Array& a) { return mj::lax::erf_inv(a); }},
      {"pow", [](const Array& a) { return mj::lax::pow(mj::lax::abs(a), a); }},
      {"atan2", [](const Array& a) { return mj::lax::atan2(a, mj::lax::sin(a)); }}};
  for (auto& [name, f] : fs) {
    const Array& in = std::string(name) == "erf_inv" ? xin : x;
    Array got = mj::astype(mj::jit(f)(in), mj::f32), want = mj::astype(f(in), mj::f32);
    double worst = 0;
    int64_t diff = 0;
    for (int64_t i = 0; i < got.size(); ++i) {
      double u = bf16_ulps(got.data<float>()[i], want.data<float>()[i]);
      worst = std::max(worst, u);
      diff += u != 0;
    }
    EXPECT_LE(worst, 1.0) << name;
    EXPECT_LE(diff, got.size() / 100) << name;  // equal but near rounding boundaries
  }
}

TEST(Transcendentals, Bf16AndF64ChainsMatchEager) {
  auto chain = [](const Array& x, const Array& y) {
    Array a = mj::lax::tanh(mj::lax::exp(mj::lax::mul(x, y)));
    Array b = mj::lax::mul(mj::lax::sin(x), mj::lax::log1p(mj::lax::abs(y)));
    Array c = mj::lax::logistic(mj::lax::sub(a, b));
    return mj::lax::add(c, mj::lax::erf(mj::lax::atan2(x, y)));
  };
  std::vector<float> xv = inputs<float>(100003, 4, {}, -3, 3, -1, 1, 4), yv = inputs<float>(100003, 5, {}, -3, 3, -1, 1, 4);
  // bf16: every operation rounds to bf16 in both; the results agree to a few bf16 ulps (a one-ulp
  // difference in an intermediate moves the result by at most its derivative, < 2 here).
  Array xb = mj::astype(to_array(xv), mj::bf16), yb = mj::astype(to_array(yv), mj::bf16);
  Array gb = mj::astype(mj::jit(chain)(xb, yb), mj::f32), wb = mj::astype(chain(xb, yb), mj::f32);
  int64_t diff = 0;
  double worst = 0;
  for (int64_t i = 0; i < gb.size(); ++i) {
    double u = bf16_ulps(gb.data<float>()[i], wb.data<float>()[i]);
    worst = std::max(worst, u);
    diff += u != 0;
  }
  std::printf("[ chain    ] bf16: %lld of %lld differ, max %.1f bf16 ulp\n", (long long)diff, (long long)gb.size(), worst);
  EXPECT_LE(worst, 8.0);
  EXPECT_LE(diff, gb.size() / 20);
  // f64: each operation within a few ulps of eager's libm; the values are O(1) and the chain's
  // derivatives small (tanh and logistic flatten, erf' <= 1.13), so the results agree to a small
  // multiple of 2^-53 in absolute terms (not relatively: the final sum can cancel).
  std::vector<double> xd(xv.begin(), xv.end()), yd(yv.begin(), yv.end());
  Array x64 = to_array(xd), y64 = to_array(yd);
  Array g = mj::jit(chain)(x64, y64), w = chain(x64, y64);
  double dif = 0;
  for (int64_t i = 0; i < g.size(); ++i) dif = std::max(dif, std::fabs(g.data<double>()[i] - w.data<double>()[i]));
  std::printf("[ chain    ] f64: max absolute difference %.3g (2^%.1f)\n", dif, std::log2(dif));
  EXPECT_LE(dif, std::ldexp(1.0, -48));
}

// ---- the generated code ---------------------------------------------------------------------------

TEST(Transcendentals, KernelsAreVectorizedAndCallNoLibm) {
  mj::JitOptions opt;
  opt.keep_llvm_ir = true;
  std::vector<std::pair<const char*, Fn1>> fs = {
      {"exp", [](const Array& a) { return mj::lax::exp(a); }},     {"log", [](const Array& a) { return mj::lax::log(a); }},
      {"log1p", [](const Array& a) { return mj::lax::log1p(a); }}, {"expm1", [](const Array& a) { return mj::lax::expm1(a); }},
      {"tanh", [](const Array& a) { return mj::lax::tanh(a); }},   {"logistic", [](const Array& a) { return mj::lax::logistic(a); }},
      {"sin", [](const Array& a) { return mj::lax::sin(a); }},     {"cos", [](const Array& a) { return mj::lax::cos(a); }},
      {"tan", [](const Array& a) { return mj::lax::tan(a); }},     {"erf", [](const Array& a) { return mj::lax::erf(a); }},
      {"erf_inv", [](const Array& a) { return mj::lax::erf_inv(a); }},
      {"pow", [](const Array& a) { return mj::lax::pow(a, a); }},
      {"atan2", [](const Array& a) { return mj::lax::atan2(a, a); }}};
  for (mj::DType d : {mj::f32, mj::f64}) {
    Array x = mj::zeros({4099}, d);
    const int lanes = mj::host_target().vector_bytes / int(mj::itemsize(d));
    const std::string vec = "<" + std::to_string(lanes) + " x " + (d == mj::f32 ? "float" : "double") + ">";
    for (auto& [name, f] : fs) {
      std::string text = mj::jit(f, opt).lower(x).compile().as_text(true);
      std::string ir = text.substr(std::min(text.size(), text.find("; ModuleID")));  // the LLVM IR part
      // every call in the optimized IR is an LLVM intrinsic, a runtime function or the module's own
      // outlined function (the vector loop and the scalar tail both call it), defined in the module
      for (size_t p = ir.find("call "); p != std::string::npos; p = ir.find("call ", p + 1)) {
        std::string line = ir.substr(p, ir.find('\n', p) - p);
        bool ok = line.find("@llvm.") != std::string::npos || line.find("@mj_rt_") != std::string::npos;
        const size_t at = line.find("@mj_math_");
        if (at != std::string::npos) {
          const std::string callee = line.substr(at, line.find('(', at) - at);
          ok = false;  // a definition in this module, not a declaration of another library's
          for (size_t q = ir.find("define internal"); q != std::string::npos; q = ir.find("define internal", q + 1))
            ok = ok || ir.substr(q, ir.find('\n', q) - q).find(callee + "(") != std::string::npos;
        }
        EXPECT_TRUE(ok) << name << " " << mj::dtype_name(d) << ": " << line;
      }
      EXPECT_NE(ir.find("load " + vec), std::string::npos) << name << ": no contiguous " << vec << " load";
      // the only gather allowed: sin/cos/tan's table of 2/pi bits (large arguments)
      bool trig = std::string(name) == "sin" || std::string(name) == "cos" || std::string(name) == "tan";
      if (!trig) EXPECT_EQ(ir.find("gather"), std::string::npos) << name << ": a gather in a contiguous kernel";
    }
  }
}

TEST(Transcendentals, ExpThroughputReport) {
  // Reported, not asserted (machines are noisy): nanoseconds per element of exp over 16M f32.
  std::vector<float> v = inputs<float>(size_t(1) << 24, 9, {}, -80, 80, -1, 1, 80);
  Array x = to_array(v);
  auto f = mj::jit([](const Array& a) { return mj::lax::exp(a); });
  Array y = f(x);
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    y = f(x);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  std::printf("[ time     ] exp f32 over 2^24 elements: median %.2f ms, %.3f ns/element\n", t[3] * 1e3,
              t[3] * 1e9 / double(x.size()));
  EXPECT_EQ(y.size(), x.size());
}

TEST(Transcendentals, CodeForHostsWithoutFmaIsAsAccurate) {
  // The same sweeps (2^20 f32 / 2^16 f64 inputs, sizes no other test compiles) with the code
  // emitted for a host without FMA: separate multiplies and adds, Dekker's exact products.
  mj::lower::math::VMath::set_fma_override(0);
  struct Reset {
    ~Reset() { mj::lower::math::VMath::set_fma_override(-1); }
  } reset;
  const size_t n32 = (size_t(1) << 20) + 11, n64 = (size_t(1) << 16) + 11;
  for (const Unary& u : {exp_case(), log_case(), log1p_case(), expm1_case(), tanh_case(), logistic_case(),
                         sin_case(), cos_case(), tan_case(), erf_case(), erf_inv_case()}) {
    check_unary<float>(u, n32, false);
    Unary v = u;
    v.amax = std::min(v.amax * 1e300, DBL_MAX);
    if (std::string(u.name) == "exp" || std::string(u.name) == "expm1") v.lo = -746, v.hi = 710, v.amax = 750;
    check_unary<double>(v, n64, false);
  }
  for (Kind k : {Kind::pow, Kind::atan2}) {
    check_binary<float>(k, n32, false);
    check_binary<double>(k, n64, false);
  }
}

TEST(Transcendentals, HugeTrigArgumentsInVectorAndTailPositions) {
  // The chunked reduction is taken under a test of the whole vector: huge and ordinary arguments
  // mixed at every position of short arrays (the vector loop, the scalar tail, lanes = 1).
  for (size_t n : {size_t(1), size_t(3), size_t(17), size_t(35)}) {
    std::vector<float> v32;
    std::vector<double> v64;
    for (size_t i = 0; i < n; ++i) {
      v32.push_back(i % 3 == 1 ? 1.5f : std::ldexp(1.2345f + float(i), int(20 + 5 * i % 100)));
      v64.push_back(i % 3 == 1 ? 1.5 : std::ldexp(1.2345 + double(i), int(27 + 37 * i % 990)));
    }
    for (const Unary& u : {sin_case(), cos_case(), tan_case()}) {
      EXPECT_LE(sweep1<float>(u.f, u.ref, u.refl, v32, u.name).ulp, 4.0) << u.name << " n=" << n;
      EXPECT_LE(sweep1<double>(u.f, u.ref, u.refl, v64, u.name).ulp, 4.0) << u.name << " n=" << n;
    }
  }
}

// Accuracy of lgamma, digamma and polygamma(m, .), m = 1..4 (issue 29 item 8), eager and compiled,
// f32 and f64, against tools/special_reference.py's mpmath values (tests/jit/special_reference/*.bin).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "special_reference.h"

namespace {

using mj::Array;
namespace lax = mj::lax;

using Reference = special_reference::Unary;
Reference read_reference(const std::string& fn) { return special_reference::read_unary(fn); }

enum class Kind { lgamma, digamma, polygamma };

struct Fn {
  std::string name;
  Kind kind;
  std::function<Array(const Array&)> f;
};

std::vector<Fn> functions() {
  std::vector<Fn> v = {{"lgamma", Kind::lgamma, [](const Array& x) { return lax::lgamma(x); }},
                       {"digamma", Kind::digamma, [](const Array& x) { return lax::digamma(x); }}};
  for (int m = 1; m <= 4; ++m)
    v.push_back({"polygamma" + std::to_string(m), Kind::polygamma,
                 [m](const Array& x) { return lax::polygamma(m, x); }});
  return v;
}

// The error of one result as a fraction of its bound (item 8; <= 1 passes), and the kind of
// measure in `what`. NaN and infinities must match the reference exactly (scored 1e9 otherwise).
template <class T>
double score(Kind k, double x, T got, long double ref, std::string& what) {
  const long double eps = std::numeric_limits<T>::epsilon();
  const T rt = T(ref);
  if (std::isnan(ref)) return std::isnan(got) ? 0 : 1e9;
  if (std::isnan(got)) return 1e9;
  if (std::isinf(rt) || std::isinf(got)) return rt == got ? 0 : 1e9;
  const long double err = fabsl((long double)got - ref);
  if (k == Kind::polygamma) {  // relative 1e-12 (f64) / 1e-5 (f32) where normal, absolute below
    const long double rtol = sizeof(T) == 8 ? 1e-12L : 1e-5L, tiny = std::numeric_limits<T>::min();
    what = "relative / 1e-12 or 1e-5";
    return double(fabsl(ref) >= tiny ? err / (rtol * fabsl(ref)) : err / tiny);
  }
  int e;
  std::frexp((long double)(rt == 0 ? std::numeric_limits<T>::min() : rt), &e);
  const long double ulp = std::ldexp(1.0L, e - std::numeric_limits<T>::digits);
  const double in_ulp = double(err / (4 * ulp));
  if (x > 0) {  // 4 ulp, or 2 eps absolute where |f| < 1
    what = "ulp / 4, or abs / 2eps where |f| < 1";
    return fabsl(ref) < 1 ? std::min(in_ulp, double(err / (2 * eps))) : in_ulp;
  }
  // x < 0 not an integer: absolute 16 eps (1 + |f(1 - x)| + |pi / tan(pi x)| for digamma), or 4 ulp
  // of the result: for tiny |x| (f(x) ~ -log|x| or -1/x, f(1 - x) ~ 0) the absolute bound is below the
  // result's own rounding, which no implementation can meet, so 4 ulp also passes there.
  const long double r = (long double)x - std::nearbyint((long double)x);
  const long double cot = std::numbers::pi_v<long double> / std::tan(std::numbers::pi_v<long double> * r);
  long double scale;
  if (k == Kind::lgamma) {
    int sign;
    scale = 1 + fabsl(::lgammal_r(1 - (long double)x, &sign));
  } else {
    scale = 1 + fabsl(ref + cot) + fabsl(cot);  // digamma(1 - x) = digamma(x) + pi cot(pi x)
  }
  what = "abs / 16 eps scale, or ulp / 4";
  return std::min(in_ulp, double(err / (16 * eps * scale)));
}

template <class T>
Array to_array(const std::vector<T>& v) {
  Array a = mj::zeros({int64_t(v.size())}, sizeof(T) == 4 ? mj::f32 : mj::f64);
  std::memcpy(a.mutable_data<T>(), v.data(), v.size() * sizeof(T));
  return a;
}

template <class T, class R>
void check(const Fn& fn, const std::vector<T>& xs, const std::vector<R>& refs) {
  Array x = to_array(xs);
  for (int compiled = 0; compiled < 2; ++compiled) {
    Array got = compiled ? mj::jit(fn.f)(x) : fn.f(x);
    const T* pg = got.data<T>();
    double worst = 0;
    size_t at = 0;
    std::string what;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double s = score<T>(fn.kind, double(xs[i]), pg[i], (long double)refs[i], what);
      if (s > worst) worst = s, at = i;
    }
    const char* how = compiled ? "compiled" : "eager";
    std::printf("[ bound    ] %-10s %s %-8s max %.3f of the bound at %.17g (%zu points)\n", fn.name.c_str(),
                sizeof(T) == 4 ? "f32" : "f64", how, worst, double(xs[at]), xs.size());
    EXPECT_LE(worst, 1.0) << fn.name << " " << how << " " << (sizeof(T) == 4 ? "f32" : "f64")
                          << " at x = " << double(xs[at]) << ": got " << double(pg[at]) << ", reference "
                          << double(refs[at]);
  }
}

class GammaAccuracy : public ::testing::TestWithParam<int> {};

TEST_P(GammaAccuracy, EagerAndCompiledWithinTheBoundsOfItem8) {
  const Fn fn = functions()[size_t(GetParam())];
  Reference r = read_reference(fn.name);
  ASSERT_GE(r.x32.size(), 10000u);
  ASSERT_GE(r.x64.size(), 10000u);
  check<float>(fn, r.x32, r.r32);
  check<double>(fn, r.x64, r.r64);
}

INSTANTIATE_TEST_SUITE_P(Functions, GammaAccuracy, ::testing::Range(0, 6),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return functions()[size_t(i.param)].name;
                         });

}  // namespace

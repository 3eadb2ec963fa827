// Accuracy of sinh ... erfc (issue 29, item 8), eager and compiled, f32 and f64, against the mpmath
// values of tools/special_reference.py checked in as tests/jit/special_reference/<fn>.bin.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "special_reference.h"

namespace {

using mj::Array;
namespace lax = mj::lax;

constexpr double kFail = 1e9;  // a class mismatch: NaN, an infinity, the sign of a zero

using Reference = special_reference::Unary;
Reference read_reference(const std::string& fn) { return special_reference::read_unary(fn); }

// |got - ref| in units of the last place of ref rounded to T (T's ulp at that binade; below the
// normal range the subnormal spacing). NaN, infinities and the sign of zero must match: a result
// that overflows where the correctly rounded one does not (or the reverse) is a failure.
// `subnormal_abs`: where ref rounds to a subnormal (or zero), the error is |got - ref| / min normal
// instead (<= 1 passes: erfc's bound there).
template <class T>
double error_of(T got, long double ref, bool subnormal_abs) {
  const int digits = std::numeric_limits<T>::digits;
  const long double tiny = std::ldexp(1.0L, std::numeric_limits<T>::min_exponent - digits);
  const T rt = T(ref);
  if (std::isnan(ref)) return std::isnan(got) ? 0 : kFail;
  if (std::isnan(got)) return kFail;
  if (std::isinf(rt) || std::isinf(got)) return rt == got ? 0 : kFail;
  if (subnormal_abs && std::fabs(rt) < std::numeric_limits<T>::min())
    return double(fabsl((long double)got - ref) / std::numeric_limits<T>::min()) * 4.0;  // 1 normal = 4
  if (ref == 0 && got == 0) return std::signbit(ref) == std::signbit(got) ? 0 : kFail;
  int e;
  std::frexp((long double)(rt == 0 ? T(tiny) : rt), &e);
  const long double ulp = std::max(std::ldexp(1.0L, e - digits), tiny);
  return double(fabsl((long double)got - ref) / ulp);
}

struct Fn {
  const char* name;
  std::function<Array(const Array&)> f;
};

std::vector<Fn> functions() {
  return {{"sinh", [](const Array& x) { return lax::sinh(x); }},
          {"cosh", [](const Array& x) { return lax::cosh(x); }},
          {"asin", [](const Array& x) { return lax::asin(x); }},
          {"acos", [](const Array& x) { return lax::acos(x); }},
          {"atan", [](const Array& x) { return lax::atan(x); }},
          {"asinh", [](const Array& x) { return lax::asinh(x); }},
          {"acosh", [](const Array& x) { return lax::acosh(x); }},
          {"atanh", [](const Array& x) { return lax::atanh(x); }},
          {"cbrt", [](const Array& x) { return lax::cbrt(x); }},
          {"erfc", [](const Array& x) { return lax::erfc(x); }}};
}

template <class T>
Array to_array(const std::vector<T>& v) {
  Array a = mj::zeros({int64_t(v.size())}, sizeof(T) == 4 ? mj::f32 : mj::f64);
  std::memcpy(a.mutable_data<T>(), v.data(), v.size() * sizeof(T));
  return a;
}

// The largest error of eager and of compiled f over xs (reference refs), printed and held to 4 ulp
// (erfc where subnormal: absolute error <= the smallest normal, reported as 4 per smallest normal).
template <class T, class R>
void check(const Fn& fn, const std::vector<T>& xs, const std::vector<R>& refs) {
  Array x = to_array(xs);
  const bool erfc = std::string(fn.name) == "erfc";
  for (int compiled = 0; compiled < 2; ++compiled) {
    Array got = compiled ? mj::jit(fn.f)(x) : fn.f(x);
    const T* pg = got.data<T>();
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double err = error_of<T>(pg[i], (long double)refs[i], erfc);
      if (err > worst) {
        worst = err;
        at = i;
      }
    }
    const char* how = compiled ? "compiled" : "eager";
    std::printf("[ ulp      ] %-6s %s %-8s max %.3f ulp at %.17g (%zu points)\n", fn.name,
                sizeof(T) == 4 ? "f32" : "f64", how, worst, double(xs[at]), xs.size());
    EXPECT_LE(worst, 4.0) << fn.name << " " << how << " " << (sizeof(T) == 4 ? "f32" : "f64")
                          << " at x = " << double(xs[at]) << ": got " << double(pg[at]) << ", reference "
                          << double(refs[at]);
  }
}

class SpecialAccuracy : public ::testing::TestWithParam<int> {};

TEST_P(SpecialAccuracy, EagerAndCompiledWithin4UlpOfMpmath) {
  const Fn fn = functions()[size_t(GetParam())];
  Reference r = read_reference(fn.name);
  ASSERT_GE(r.x32.size(), 10000u);
  ASSERT_GE(r.x64.size(), 10000u);
  check<float>(fn, r.x32, r.r32);
  check<double>(fn, r.x64, r.r64);
}

INSTANTIATE_TEST_SUITE_P(Functions, SpecialAccuracy, ::testing::Range(0, 10),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(functions()[size_t(i.param)].name);
                         });

}  // namespace

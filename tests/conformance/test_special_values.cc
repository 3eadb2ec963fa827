// The special values of sinh ... erfc and nextafter (issue 29): ±0, ±inf, NaN, each function's
// poles, zeros and domain edges, eagerly and compiled, f32 and f64, against C99 Annex F (<cmath>).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

struct Row {
  std::string name;
  std::function<Array(const Array&)> f;
  std::function<double(double)> ref;  ///< the C library in double: Annex F's special values
  std::vector<double> at;             ///< the function's own edges (besides the common ones)
};

// The common special inputs, then the function's edges with their neighbours in the dtype.
std::vector<double> inputs(const Row& r, mj::DType dt) {
  std::vector<double> v = {kNaN, -kInf, kInf, -0.0, 0.0, 1.0, -1.0};
  for (double e : r.at) {
    if (dt == mj::f32) {
      const float f = float(e);
      v.insert(v.end(),
               {double(std::nextafter(f, -INFINITY)), double(f), double(std::nextafter(f, INFINITY))});
    } else {
      v.insert(v.end(), {std::nextafter(e, -kInf), e, std::nextafter(e, kInf)});
    }
  }
  return v;
}

// NaN for NaN, the same infinity, zeros of the same sign; otherwise within rtol (the functions'
// 4 ulp bound, checked in full by tests/jit/test_special_accuracy.cc).
bool same(double got, double want, double rtol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  if (want == 0 || got == 0) return got == want && std::signbit(got) == std::signbit(want);
  return std::fabs(got - want) <= rtol * std::fabs(want);
}

std::vector<Row> rows() {
  using A = const Array&;
  return {
      // sinh, cosh: odd / even; overflow just above ln(2 max) = 710.4758600739439 (f64), 89.4159851 (f32).
      {"sinh",
       [](A x) { return lax::sinh(x); },
       [](double x) { return std::sinh(x); },
       {710.4758600739439, -710.4758600739439, 89.41598629223294}},
      {"cosh",
       [](A x) { return lax::cosh(x); },
       [](double x) { return std::cosh(x); },
       {710.4758600739439, -710.4758600739439, 89.41598629223294}},
      // asin, acos: the domain edges ±1 (±pi/2; 0 and pi), NaN just beyond; acos(0) = pi/2.
      {"asin", [](A x) { return lax::asin(x); }, [](double x) { return std::asin(x); }, {1.0, -1.0, 0.5}},
      {"acos", [](A x) { return lax::acos(x); }, [](double x) { return std::acos(x); }, {1.0, -1.0, 0.5}},
      // atan: ±pi/2 at ±inf, the odd zero.
      {"atan", [](A x) { return lax::atan(x); }, [](double x) { return std::atan(x); }, {1e300, -1e300}},
      // asinh: odd, the large-argument branch at 2^28.
      {"asinh",
       [](A x) { return lax::asinh(x); },
       [](double x) { return std::asinh(x); },
       {268435456.0, -2.0}},
      // acosh: its zero at 1, NaN below 1.
      {"acosh",
       [](A x) { return lax::acosh(x); },
       [](double x) { return std::acosh(x); },
       {1.0, 2.0, 268435456.0}},
      // atanh: poles at ±1 (±inf), NaN beyond.
      {"atanh", [](A x) { return lax::atanh(x); }, [](double x) { return std::atanh(x); }, {1.0, -1.0, 0.5}},
      // cbrt: odd, exact cubes, the smallest subnormal.
      {"cbrt", [](A x) { return lax::cbrt(x); }, [](double x) { return std::cbrt(x); }, {-8.0, 27.0, 5e-324}},
      // erfc: 1 at 0, 2 at -inf, 0 at +inf; its subnormal range (f32 9.19-10.05, f64 26.55-27.3).
      {"erfc",
       [](A x) { return lax::erfc(x); },
       [](double x) { return std::erfc(x); },
       {9.5, 26.9, 27.5, -6.0}},
  };
}

TEST(SpecialValues, NewTranscendentalsMatchAnnexF) {
  for (const Row& r : rows())
    for (mj::DType dt : {mj::f64, mj::f32}) {
      const std::vector<double> v = inputs(r, dt);
      Array x = mj::array(v, {int64_t(v.size())}, dt);
      const double rtol = dt == mj::f64 ? 1e-15 : 1e-6;
      Array eager = mj::astype(r.f(x), mj::f64), compiled = mj::astype(mj::jit(r.f)(x), mj::f64);
      for (size_t i = 0; i < v.size(); ++i) {
        const double in = dt == mj::f32 ? double(float(v[i])) : v[i];
        double want = r.ref(in);
        if (dt == mj::f32) want = double(float(want));  // the f32 result: rounded (overflow to inf)
        // erfc's subnormal results: absolute error up to the smallest normal (item 8).
        const double tiny = dt == mj::f32 ? double(std::numeric_limits<float>::min())
                                          : std::numeric_limits<double>::min();
        for (const auto& [how, got] : {std::pair{"eager", eager.data<double>()[i]},
                                       std::pair{"compiled", compiled.data<double>()[i]}}) {
          const bool ok = same(got, want, rtol) ||
                          (r.name == "erfc" && std::fabs(want) < tiny && std::fabs(got - want) <= tiny);
          EXPECT_TRUE(ok) << r.name << " " << mj::dtype_name(dt) << " " << how << " of " << in << ": " << got
                          << ", want " << want;
        }
      }
    }
}

}  // namespace
}  // namespace conformance

// minijax conformance cases of the elementwise functions of core/primitives/elementwise_special.cc:
// is_finite, nextafter, population_count, clz (f32, f64, i32, u32) and sinh ... erfc (f64, f32).
#include <limits>

#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

const double kInf = std::numeric_limits<double>::infinity();
const double kMin = std::numeric_limits<double>::denorm_min();

// Bit patterns of both signs, zero and the extremes (i32 and u32 keep their 32 bits).
Array ints(mj::DType dt) {
  if (dt == mj::i32)
    return mj::array({-1.0, 0.0, 1.0, -2147483648.0, 2147483647.0, 12345.0, -77.0, 256.0}, {8}, dt);
  return mj::array({4294967295.0, 0.0, 1.0, 2147483648.0, 2147483647.0, 12345.0, 65536.0, 3.0}, {8}, dt);
}

Case bits(const std::string& prim, Array (*f)(const Array&, mj::SL), mj::DType dt) {
  return Case{prim,
              mj::dtype_name(dt),
              one([f](const V& a) { return f(a[0], mj::SL::current()); }),
              {ints(dt)},
              false};
}

Case next(mj::DType dt) {
  Array x = mj::array({0.0, -0.0, 1.0, -1.0, kMin, 2.5, -3.0, 1e30}, {8}, dt);
  Array y = mj::array({1.0, -1.0, 2.0, 0.0, 0.0, -kInf, kInf, 1e30}, {8}, dt);
  return Case{"nextafter",
              mj::dtype_name(dt),
              one([](const V& a) { return lax::nextafter(a[0], a[1]); }),
              {x, y},
              false};
}

Case finite(mj::DType dt) {
  Array x = mj::array({0.0, -kInf, kInf, 1.5, -1e300, 7.0, -0.0, 3.0}, {8}, dt);
  return Case{
      "is_finite", mj::dtype_name(dt), one([](const V& a) { return lax::is_finite(a[0]); }), {x}, false};
}

// The transcendentals: f64 (every check, derivatives included) away from poles and domain edges,
// and f32 over wide ranges (compiled vs eager).
Case smooth(const std::string& name, Array (*f)(const Array&, mj::SL), double lo, double hi) {
  return Case{name,
              "f64",
              one([f](const V& a) { return f(a[0], mj::SL::current()); }),
              {rnd({2, 4}, 2901, lo, hi)}};
}

Case wide32(const std::string& name, Array (*f)(const Array&, mj::SL), double lo, double hi) {
  return Case{name,
              "f32_wide",
              one([f](const V& a) { return f(a[0], mj::SL::current()); }),
              {rnd({4, 64}, 2902, lo, hi, mj::f32)},
              false};
}

Add cases({
    smooth("sinh", lax::sinh, -2, 2),
    smooth("cosh", lax::cosh, -2, 2),
    smooth("asin", lax::asin, -0.8, 0.8),
    smooth("acos", lax::acos, -0.8, 0.8),
    smooth("atan", lax::atan, -2, 2),
    smooth("asinh", lax::asinh, -2, 2),
    smooth("acosh", lax::acosh, 1.2, 3),
    smooth("atanh", lax::atanh, -0.8, 0.8),
    smooth("cbrt", lax::cbrt, 0.5, 3),
    smooth("erfc", lax::erfc, -2, 2),
    wide32("sinh", lax::sinh, -88, 88),
    wide32("cosh", lax::cosh, -88, 88),
    wide32("asin", lax::asin, -1, 1),
    wide32("acos", lax::acos, -1, 1),
    wide32("atan", lax::atan, -50, 50),
    wide32("asinh", lax::asinh, -1e4, 1e4),
    wide32("acosh", lax::acosh, 1, 1e4),
    wide32("atanh", lax::atanh, -1, 1),
    wide32("cbrt", lax::cbrt, -1e6, 1e6),
    wide32("erfc", lax::erfc, -4, 9),
    bits("population_count", lax::population_count, mj::i32),
    bits("population_count", lax::population_count, mj::u32),
    bits("clz", lax::clz, mj::i32),
    bits("clz", lax::clz, mj::u32),
    next(mj::f64),
    next(mj::f32),
    finite(mj::f64),
    finite(mj::f32),
});

}  // namespace
}  // namespace conformance

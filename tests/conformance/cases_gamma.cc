// minijax conformance cases of lgamma, digamma and polygamma (core/primitives/elementwise_gamma.cc):
// f64 with every check (inputs away from the poles at 0 and the negative integers), f32 over wide ranges.
#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

Case smooth(const std::string& name, Array (*f)(const Array&, mj::SL), double lo, double hi, uint32_t seed) {
  return Case{name,
              "f64",
              one([f](const V& a) { return f(a[0], mj::SL::current()); }),
              {rnd({2, 4}, seed, lo, hi)}};
}

Case wide32(const std::string& name, Array (*f)(const Array&, mj::SL), double lo, double hi, uint32_t seed) {
  return Case{name,
              "f32_wide",
              one([f](const V& a) { return f(a[0], mj::SL::current()); }),
              {rnd({4, 64}, seed, lo, hi, mj::f32)},
              false};
}

// polygamma(m, x) with the order m (1, 2, 3, 0 in the four columns) a constant of the function (JAX
// defines no derivative in m), x in [0.5, 4); every check in f64, compiled vs eager in f32.
Case poly(mj::DType dt, bool wide) {
  Array m = mj::astype(mj::array({1.0, 2.0, 3.0, 0.0}, {4}, mj::f64), dt);
  Array x = wide ? rnd({8, 4}, 2913, 0.05, 30, dt) : rnd({2, 4}, 2914, 0.5, 4, dt);
  return Case{"polygamma",
              wide ? "f32_wide" : mj::dtype_name(dt),
              one([m](const V& a) {
                return lax::polygamma(lax::broadcast_in_dim(m, a[0].shape(), {1}), a[0]);
              }),
              {x},
              dt == mj::f64};
}

// digamma and lgamma on the negative axis, away from the poles (the reflection formula).
Case negative(const std::string& name, Array (*f)(const Array&, mj::SL)) {
  Array x = mj::array({-0.3, -1.25, -2.2, -3.3, -0.2, -4.6, -5.5, -0.8}, {2, 4}, mj::f64);
  return Case{name, "f64_negative", one([f](const V& a) { return f(a[0], mj::SL::current()); }), {x}};
}

Add cases({
    smooth("lgamma", lax::lgamma, 2.5, 6, 2910),
    smooth("digamma", lax::digamma, 2, 6, 2911),
    negative("lgamma", lax::lgamma),
    negative("digamma", lax::digamma),
    wide32("lgamma", lax::lgamma, 0.01, 1e4, 2915),
    wide32("digamma", lax::digamma, 0.01, 1e4, 2916),
    poly(mj::f64, false),
    poly(mj::f32, false),
    poly(mj::f32, true),
});

}  // namespace
}  // namespace conformance

// minijax conformance cases in f32, the compiled code's main type: transcendentals over wide input
// ranges (vs eager's f32 libm), exact arithmetic, and reductions/dots long enough to cross the
// compiled kernels' 2048-element blocks. Not differentiable here (f32 finite differences are
// meaningless; the f64 cases check the derivative rules).
#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

Array f32s(const mj::Shape& s, uint32_t seed, double lo, double hi) { return rnd(s, seed, lo, hi, mj::f32); }

Case unary32(const std::string& name, Array (*f)(const Array&, mj::SL), double lo, double hi, uint32_t seed) {
  return Case{name, "f32_wide", one([f](const V& a) { return f(a[0], mj::SL::current()); }),
              {f32s({4, 64}, seed, lo, hi)}, false};
}

Case binary32(const std::string& name, Array (*f)(const Array&, const Array&, mj::SL), double lo0, double hi0,
              double lo1, double hi1, uint32_t seed) {
  return Case{name, "f32", one([f](const V& a) { return f(a[0], a[1], mj::SL::current()); }),
              {f32s({4, 64}, seed, lo0, hi0), f32s({4, 64}, seed + 1, lo1, hi1)}, false};
}

Add cases({
    unary32("exp", lax::exp, -20, 20, 1101),
    unary32("log", lax::log, 1e-3, 1e3, 1102),
    unary32("log1p", lax::log1p, -0.99, 10, 1103),
    unary32("expm1", lax::expm1, -10, 10, 1104),
    unary32("tanh", lax::tanh, -6, 6, 1105),
    unary32("logistic", lax::logistic, -20, 20, 1106),
    unary32("sin", lax::sin, -20, 20, 1107),
    unary32("cos", lax::cos, -20, 20, 1108),
    unary32("tan", lax::tan, -1.5, 1.5, 1109),
    unary32("erf", lax::erf, -4, 4, 1110),
    unary32("erf_inv", lax::erf_inv, -0.999, 0.999, 1111),
    unary32("sqrt", lax::sqrt, 0, 1e4, 1112),
    unary32("rsqrt", lax::rsqrt, 1e-3, 1e4, 1113),
    binary32("pow", lax::pow, 0.05, 20, -4, 4, 1114),
    binary32("atan2", lax::atan2, -3, 3, -3, 3, 1116),
    binary32("add", lax::add, -1e3, 1e3, -1, 1, 1118),
    binary32("sub", lax::sub, -1e3, 1e3, -1, 1, 1120),
    binary32("mul", lax::mul, -1e3, 1e3, -1, 1, 1122),
    binary32("div", lax::div, -1e3, 1e3, 0.01, 10, 1124),
    // 5000 terms: three blocks of 2048 along the reduced innermost dim; 4100 rows reduced along the
    // outer dim (one output per lane); a prefix sum of 3000; a contraction of 512 (the GEMM).
    Case{"reduce_sum", "f32_rows_of_5000", one([](const V& a) { return lax::reduce_sum(a[0], {1}); }),
         {f32s({3, 5000}, 1126, -0.5, 1)}, false},
    Case{"reduce_sum", "f32_cols_of_4100", one([](const V& a) { return lax::reduce_sum(a[0], {0}); }),
         {f32s({4100, 3}, 1127, -0.5, 1)}, false},
    Case{"reduce_prod", "f32_rows_of_600", one([](const V& a) { return lax::reduce_prod(a[0], {1}); }),
         {f32s({2, 600}, 1128, 0.9, 1.1)}, false},
    Case{"reduce_max", "f32_rows_of_5000", one([](const V& a) { return lax::reduce_max(a[0], {1}); }),
         {f32s({2, 5000}, 1129, -1, 1)}, false},
    Case{"cumsum", "f32_3000", one([](const V& a) { return lax::cumsum(a[0], 1); }), {f32s({2, 3000}, 1130, -0.5, 1)},
         false},
    // Nonnegative factors: the sharded check's fixed f32 tolerance (1e-5 relative) must hold for
    // its partial dots summed across devices, which a cancelling sum of 512 terms would not give.
    Case{"dot_general", "f32_k512", one([](const V& a) { return lax::dot_general(a[0], a[1], {{1}, {0}, {}, {}}); }),
         {f32s({4, 512}, 1131, 0, 1), f32s({512, 4}, 1132, 0, 1)}, false},
    Case{"integer_pow", "f32_cube", one([](const V& a) { return lax::integer_pow(a[0], 3); }),
         {f32s({4, 64}, 1133, -30, 30)}, false},
});

}  // namespace
}  // namespace conformance

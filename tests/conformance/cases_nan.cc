// minijax conformance cases with NaN and infinities: select_n (NaN in the selected and the
// unselected case), clamp (NaN operand and NaN bounds), max/min, relu and where.
#include <limits>

#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Array f64s(const std::vector<double>& v) { return mj::array(v, {int64_t(v.size())}, mj::f64); }
Array bools(const std::vector<double>& v) { return mj::array(v, {int64_t(v.size())}, mj::bool_); }

// Each case's values are checked against JAX's expected values in test_nan_semantics.cc; here the
// registry's checks run them: shape rule, compiled == eager (NaN pairs and infinities exact),
// vmap, sharded. Cases whose output is NaN skip the derivative checks (finite differences of NaN).
const Add cases{{
    // NaN and infinities only where the case is NOT selected: the output is finite, and so are
    // the derivatives (the transpose gives exact zeros there, not 0 * NaN).
    Case{"select_n", "nan_inf_unselected", one([](const V& a) { return lax::select_n(a[0], {a[1], a[2]}); }),
         {bools({1, 0, 1, 0, 1, 0}), f64s({kNaN, 0.5, -kInf, 0.25, kInf, -0.75}),
          f64s({0.3, kNaN, 0.7, kInf, -0.2, -kInf})},
         true, true, true, {true, false, false}},
    // NaN selected: it reaches the output.
    Case{"select_n", "nan_selected", one([](const V& a) { return lax::select_n(a[0], {a[1], a[2]}); }),
         {bools({1, 0, 1, 0}), f64s({1.0, kNaN, 2.0, -kInf}), f64s({kNaN, 3.0, kInf, 4.0})},
         false, false, true, {true, false, false}},
    Case{"select_n", "i32_which_nan_cases",
         one([](const V& a) { return lax::select_n(a[0], {a[1], a[2], a[3]}); }),
         {mj::array({0.0, 1.0, 2.0, 1.0}, {4}, mj::i32), f64s({0.5, kNaN, kNaN, kInf}),
          f64s({kNaN, 1.5, kInf, 2.5}), f64s({kInf, kNaN, 3.5, kNaN})},
         true, true, true, {true, false, false, false}},
    // where with a float condition: NaN counts as true (NaN != 0).
    Case{"select_n", "where_nan_condition", one([](const V& a) { return mj::where(a[0], a[1], a[2]); }),
         {f64s({kNaN, 0.0, -0.0, 2.0}), f64s({1.0, kNaN, kNaN, 4.0}), f64s({kNaN, 6.0, 7.0, kNaN})},
         true, true, true, {true, false, false}},
    // relu: NaN -> NaN, -inf -> 0, inf -> inf, -0 -> 0.
    Case{"select_n", "relu_nan_inf", one([](const V& a) { return mj::relu(a[0]); }),
         {f64s({kNaN, -kInf, kInf, -0.0, 0.0, -1.5, 2.5})}, false, false, true},
    Case{"select_n", "relu_f32_nan_inf", one([](const V& a) { return mj::relu(a[0]); }),
         {mj::array({kNaN, -kInf, kInf, -0.0, 0.0, -1.5, 2.5}, {7}, mj::f32)}, false, false, true},
    Case{"clamp", "nan_inf_operand", one([](const V& a) { return lax::clamp(a[0], a[1], a[2]); }),
         {mj::scalar(-0.5, mj::f64), f64s({kNaN, -kInf, kInf, 0.3, -2.0}), mj::scalar(0.6, mj::f64)},
         false, false, true},
    Case{"clamp", "nan_bounds", one([](const V& a) { return lax::clamp(a[0], a[1], a[2]); }),
         {f64s({kNaN, -1.0, 0.0, -kInf}), f64s({0.5, 0.5, 0.5, 0.5}), f64s({1.0, kNaN, 1.0, kInf})},
         false, false, true},
    Case{"max", "nan_inf", one([](const V& a) { return lax::max(a[0], a[1]); }),
         {f64s({kNaN, 1.0, -kInf, kInf, kNaN}), f64s({0.0, kNaN, 2.0, 3.0, -kInf})}, false, false, true},
    Case{"min", "nan_inf", one([](const V& a) { return lax::min(a[0], a[1]); }),
         {f64s({kNaN, 1.0, -kInf, kInf, kNaN}), f64s({0.0, kNaN, 2.0, 3.0, kInf})}, false, false, true},
}};

}  // namespace
}  // namespace conformance

// minijax conformance cases: the integer edge cases whose results C++ leaves undefined and eager
// defines as XLA does — division and remainder by 0, INT_MIN / -1, shifts by >= the width, wrapping
// add/mul/neg, and out-of-range, NaN and infinite float -> int conversions (i32 and u32).
#include <cmath>
#include <limits>

#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

constexpr double kIntMin = -2147483648.0, kIntMax = 2147483647.0, kU32Max = 4294967295.0;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Array i32s(const std::vector<double>& v) { return mj::array(v, {int64_t(v.size())}, mj::i32); }
Array u32s(const std::vector<double>& v) { return mj::array(v, {int64_t(v.size())}, mj::u32); }

// Eager's definitions (core/primitives/elementwise_binary.cc safe_div/safe_rem, XLA's semantics):
// x / 0 = -1 (all bits set: UINT32_MAX for u32), x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0;
// otherwise C's truncating division.
Case binary_int(const std::string& prim, const std::string& label, Array (*f)(const Array&, const Array&, mj::SL),
                Array x, Array y) {
  return Case{prim, label, one([f](const V& a) { return f(a[0], a[1], mj::SL::current()); }), {x, y}, false};
}

Case convert(const std::string& label, mj::DType from, mj::DType to, const std::vector<double>& v) {
  return Case{"convert_element_type", label,
              one([to](const V& a) { return lax::convert_element_type(a[0], to); }),
              {mj::array(v, {int64_t(v.size())}, from)}, false};
}

// Float -> int conversions (core/primitives/elementwise_family.h convert_value): NaN -> 0, values at
// or beyond the range saturate to its ends, others truncate toward zero.
const std::vector<double> kToI32 = {kNaN, kInf, -kInf, 3e9, -3e9, 2147483520.0, kIntMin, -2147483904.0,
                                    2.75, -2.75, -0.0, 0.5, 1e30, -1e30};
const std::vector<double> kToU32 = {kNaN, kInf, -kInf, -1.0, -0.5, 5e9, 4294967040.0, 3.75,
                                    2147483648.0, 0.999, 1e30, -1e30};
const std::vector<double> kF64ToI32 = {kNaN, kInf, -kInf, 2147483647.5, 2147483648.0, 2147483646.75,
                                       -2147483648.5, -2147483649.0, -2147483647.25, 1e300, -7.9};
const std::vector<double> kF64ToU32 = {kNaN, kInf, -kInf, 4294967295.5, 4294967296.0, 4294967294.25,
                                       -0.75, -1e300, 1e300, 12.5};

Add cases({
    binary_int("div", "i32_by_zero_and_int_min", lax::div,
               i32s({7, -7, kIntMin, kIntMin, 5, 0, kIntMax, kIntMin, -9}),
               i32s({0, 0, -1, 0, -1, 0, -1, 1, 4})),
    binary_int("rem", "i32_by_zero_and_int_min", lax::rem,
               i32s({7, -7, kIntMin, kIntMin, 5, 0, kIntMax, kIntMin, -9}),
               i32s({0, 0, -1, 0, -1, 0, -1, 3, 4})),
    binary_int("div", "u32_by_zero", lax::div, u32s({7, kU32Max, 0, 5, kU32Max, 2147483648.0}),
               u32s({0, 0, 0, 3, kU32Max, 2})),
    binary_int("rem", "u32_by_zero", lax::rem, u32s({7, kU32Max, 0, 5, kU32Max, 2147483649.0}),
               u32s({0, 0, 0, 3, 2, 2147483648.0})),
    // Shift counts are read as unsigned: >= 32 (and negative i32 counts) give 0.
    binary_int("shift_left", "i32_counts_past_width", lax::shift_left,
               i32s({1, -1, 5, 5, 5, 5, kIntMin, 3}), i32s({31, 1, 32, 33, -1, 255, 0, 30})),
    binary_int("shift_left", "u32_counts_past_width", lax::shift_left, u32s({1, kU32Max, 5, 5, 7}),
               u32s({31, 4, 32, kU32Max, 0})),
    binary_int("shift_right_logical", "i32_negative_values", lax::shift_right_logical,
               i32s({-1, -1, kIntMin, -8, 16, 16, 16}), i32s({1, 31, 31, 32, -1, 100, 4})),
    binary_int("shift_right_logical", "u32_counts_past_width", lax::shift_right_logical,
               u32s({kU32Max, kU32Max, 2147483648.0, 9}), u32s({0, 32, 31, 4294967200.0})),
    // Two's-complement wrapping (elementwise_family.h wrap_add / wrap_mul / wrap_neg).
    binary_int("add", "i32_wraps", lax::add, i32s({kIntMax, kIntMin, -1}), i32s({1, -1, kIntMin})),
    binary_int("add", "u32_wraps", lax::add, u32s({kU32Max, 2147483648.0}), u32s({1, 2147483648.0})),
    binary_int("mul", "i32_wraps", lax::mul, i32s({65536, kIntMin, 123456789, -1}), i32s({65536, -1, 1000, kIntMin})),
    Case{"neg", "i32_int_min", one([](const V& a) { return lax::neg(a[0]); }), {i32s({kIntMin, kIntMax, 0, -5})},
         false},
    Case{"abs", "i32_int_min", one([](const V& a) { return lax::abs(a[0]); }), {i32s({kIntMin, -kIntMax, 0, -5})},
         false},
    convert("f32_to_i32_out_of_range", mj::f32, mj::i32, kToI32),
    convert("f32_to_u32_out_of_range", mj::f32, mj::u32, kToU32),
    convert("f64_to_i32_out_of_range", mj::f64, mj::i32, kF64ToI32),
    convert("f64_to_u32_out_of_range", mj::f64, mj::u32, kF64ToU32),
    convert("u32_to_i32_wraps", mj::u32, mj::i32, {kU32Max, 2147483648.0, 2147483647.0, 0}),
    convert("i32_to_u32_wraps", mj::i32, mj::u32, {-1, kIntMin, kIntMax, 0}),
    convert("u32_to_f32_rounds", mj::u32, mj::f32, {kU32Max, 16777217.0, 2147483649.0, 3}),
    convert("i32_to_f32_rounds", mj::i32, mj::f32, {kIntMax, kIntMin, 16777217.0, -16777219.0}),
});

}  // namespace
}  // namespace conformance

// minijax conformance cases: elementwise unary, binary, comparison, logical, select and convert
// primitives (inputs chosen away from kinks and poles so finite differences are meaningful).
#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

Case unary(const std::string& name, Array (*f)(const Array&, mj::SL), double lo, double hi,
           bool smooth = true) {
  Array (*g)(const Array&, mj::SL) = f;
  return Case{name, "f64", one([g](const V& a) { return g(a[0], mj::SL::current()); }),
              {rnd({2, 3}, 11, lo, hi)}, true, smooth};
}

Case binary(const std::string& name, Array (*f)(const Array&, const Array&, mj::SL), double lo0,
            double hi0, double lo1, double hi1) {
  return Case{name, "f64", one([f](const V& a) { return f(a[0], a[1], mj::SL::current()); }),
              {rnd({2, 3}, 21, lo0, hi0), rnd({2, 3}, 22, lo1, hi1)}};
}

Case compare(const std::string& name, Array (*f)(const Array&, const Array&, mj::SL)) {
  Array x = mj::array({1.0, 2.0, 3.0, 2.0}, {4}, mj::f64);
  Array y = mj::array({2.0, 2.0, 1.0, 5.0}, {4}, mj::f64);
  return Case{name, "f64", one([f](const V& a) { return f(a[0], a[1], mj::SL::current()); }), {x, y}};
}

// Values k + frac with frac in [0.2, 0.4] or [0.6, 0.8]: away from integers and half-integers.
Array off_grid() { return mj::array({-2.3, -0.7, 0.25, 1.65, 2.35, -1.25}, {2, 3}, mj::f64); }

Add cases({
    unary("neg", lax::neg, -2, 2),
    unary("sin", lax::sin, -3, 3),
    unary("cos", lax::cos, -3, 3),
    unary("tan", lax::tan, -1, 1),
    unary("exp", lax::exp, -2, 2),
    unary("log", lax::log, 0.5, 3),
    unary("log1p", lax::log1p, -0.5, 2),
    unary("expm1", lax::expm1, -2, 2),
    unary("tanh", lax::tanh, -2, 2),
    unary("logistic", lax::logistic, -4, 4),
    unary("sqrt", lax::sqrt, 0.5, 3),
    unary("rsqrt", lax::rsqrt, 0.5, 3),
    unary("erf", lax::erf, -2, 2),
    Case{"erf_inv", "f64", one([](const V& a) { return lax::erf_inv(a[0]); }), {rnd({2, 3}, 12, -0.8, 0.8)}},
    Case{"abs", "f64", one([](const V& a) { return lax::abs(a[0]); }),
         {mj::array({-1.5, -0.5, 0.7, 2.0, -3.0, 0.9}, {2, 3}, mj::f64)}},
    Case{"abs", "i32", one([](const V& a) { return lax::abs(a[0]); }), {rnd_int({5}, 13, -5, 5)}},
    Case{"sign", "f64", one([](const V& a) { return lax::sign(a[0]); }), {off_grid()}},
    Case{"floor", "f64", one([](const V& a) { return lax::floor(a[0]); }), {off_grid()}},
    Case{"ceil", "f64", one([](const V& a) { return lax::ceil(a[0]); }), {off_grid()}},
    Case{"round", "away", one([](const V& a) { return lax::round(a[0], 0); }), {off_grid()}},
    Case{"round", "even", one([](const V& a) { return lax::round(a[0], 1); }), {off_grid()}},
    Case{"not", "bool", one([](const V& a) { return lax::not_(a[0]); }),
         {mj::array({1.0, 0.0, 1.0}, {3}, mj::bool_)}},
    Case{"not", "i32", one([](const V& a) { return lax::not_(a[0]); }), {rnd_int({4}, 14, -9, 9)}},
    Case{"integer_pow", "cube", one([](const V& a) { return lax::integer_pow(a[0], 3); }), {rnd({2, 3}, 15, -2, 2)}},
    Case{"integer_pow", "inverse_square", one([](const V& a) { return lax::integer_pow(a[0], -2); }),
         {rnd({4}, 16, 0.5, 2)}},
    Case{"stop_gradient", "f64", one([](const V& a) { return lax::stop_gradient(a[0]) * a[0]; }),
         {rnd({3}, 17)}, /*differentiable=*/false},
    binary("add", lax::add, -2, 2, -2, 2),
    binary("add_any", lax::add_any, -2, 2, -2, 2),
    binary("sub", lax::sub, -2, 2, -2, 2),
    binary("mul", lax::mul, -2, 2, -2, 2),
    binary("div", lax::div, -2, 2, 0.5, 2),
    binary("pow", lax::pow, 0.5, 2, -1.5, 1.5),
    binary("atan2", lax::atan2, -2, 2, 0.5, 2),
    Case{"rem", "f64", one([](const V& a) { return lax::rem(a[0], a[1]); }),
         {mj::array({2.3, -3.1, 5.2, 4.4}, {4}, mj::f64), mj::array({1.1, 1.3, 1.4, 1.2}, {4}, mj::f64)}},
    Case{"rem", "i32", one([](const V& a) { return lax::rem(a[0], a[1]); }),
         {mj::array({7.0, -7.0, 9.0}, {3}, mj::i32), mj::array({3.0, 3.0, -4.0}, {3}, mj::i32)}},
    Case{"div", "i32", one([](const V& a) { return lax::div(a[0], a[1]); }),
         {mj::array({7.0, -7.0, 9.0}, {3}, mj::i32), mj::array({2.0, 2.0, -4.0}, {3}, mj::i32)}},
    Case{"max", "f64", one([](const V& a) { return lax::max(a[0], a[1]); }),
         {mj::array({1.0, -2.0, 3.0, 0.5}, {4}, mj::f64), mj::array({2.0, -3.0, 1.0, 0.7}, {4}, mj::f64)}},
    Case{"min", "f64", one([](const V& a) { return lax::min(a[0], a[1]); }),
         {mj::array({1.0, -2.0, 3.0, 0.5}, {4}, mj::f64), mj::array({2.0, -3.0, 1.0, 0.7}, {4}, mj::f64)}},
    compare("eq", lax::eq),
    compare("ne", lax::ne),
    compare("lt", lax::lt),
    compare("le", lax::le),
    compare("gt", lax::gt),
    compare("ge", lax::ge),
    Case{"and", "bool", one([](const V& a) { return lax::and_(a[0], a[1]); }),
         {mj::array({1.0, 1.0, 0.0, 0.0}, {4}, mj::bool_), mj::array({1.0, 0.0, 1.0, 0.0}, {4}, mj::bool_)}},
    Case{"or", "i32", one([](const V& a) { return lax::or_(a[0], a[1]); }),
         {rnd_int({4}, 18, 0, 16), rnd_int({4}, 19, 0, 16)}},
    Case{"select_n", "bool", one([](const V& a) { return lax::select_n(a[0], {a[1], a[2]}); }),
         {mj::array({1.0, 0.0, 1.0, 0.0, 0.0, 1.0}, {2, 3}, mj::bool_), rnd({2, 3}, 23), rnd({2, 3}, 24)},
         true, true, true, {true, false, false}},
    Case{"select_n", "i32_three_cases",
         one([](const V& a) { return lax::select_n(a[0], {a[1], a[2], a[3]}); }),
         {mj::array({0.0, 2.0, 1.0, 2.0}, {4}, mj::i32), rnd({4}, 25), rnd({4}, 26), rnd({4}, 27)},
         true, true, true, {true, false, false, false}},
    Case{"select_n", "scalar_predicate", one([](const V& a) { return lax::select_n(a[0], {a[1], a[2]}); }),
         {mj::array({1.0}, {}, mj::bool_), rnd({3}, 28), rnd({3}, 29)}, true, true, true, {true, false, false}},
    Case{"clamp", "scalar_bounds", one([](const V& a) { return lax::clamp(a[0], a[1], a[2]); }),
         {mj::scalar(-0.5, mj::f64), mj::array({-1.0, -0.2, 0.3, 0.9, 2.0}, {5}, mj::f64), mj::scalar(0.6, mj::f64)}},
    Case{"convert_element_type", "f64_to_f32",
         one([](const V& a) { return lax::convert_element_type(a[0], mj::f32); }), {rnd({2, 3}, 31)}, false},
    Case{"convert_element_type", "f32_to_i32",
         one([](const V& a) { return lax::convert_element_type(a[0], mj::i32); }),
         {rnd({5}, 32, -5, 5, mj::f32)}, false},
    Case{"convert_element_type", "weak_f64",
         one([](const V& a) { return lax::convert_element_type(a[0], mj::f64, /*weak_type=*/true); }),
         {rnd({3}, 33)}},
    Case{"convert_element_type", "to_bf16",
         one([](const V& a) { return lax::convert_element_type(a[0], mj::bf16); }), {rnd({3}, 34, -1, 1, mj::f32)},
         false},
    Case{"broadcast_in_dim", "row", one([](const V& a) { return lax::broadcast_in_dim(a[0], {2, 3}, {1}); }),
         {rnd({3}, 35)}},
    Case{"broadcast_in_dim", "size1", one([](const V& a) { return lax::broadcast_in_dim(a[0], {3, 4}, {0, 1}); }),
         {rnd({3, 1}, 36)}},
    Case{"broadcast_in_dim", "scalar", one([](const V& a) { return lax::broadcast_in_dim(a[0], {2, 2}, {}); }),
         {rnd({}, 37)}},
});

}  // namespace
}  // namespace conformance

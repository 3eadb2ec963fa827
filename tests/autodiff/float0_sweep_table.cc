// minijax float0 sweep: the table — every primitive that accepts or returns an integer or
// boolean value, met between a float input and a float output (checked in test_float0_sweep.cc).
#include <cmath>
#include <numeric>

#include "autodiff/float0_sweep.h"
#include "core/gather_scatter.h"

namespace float0_sweep {
namespace {

namespace lax = mj::lax;
using mj::f32;
using mj::i32;
using mj::u32;

// More piecewise-constant values of x (I is in float0_sweep.h): u32, and bool (x > 0.25).
Array U(const Array& x) { return mj::astype(I(x), u32); }
Array B(const Array& x) { return x > 0.25; }
Array C(const Array& like, double v) { return mj::full_like(like, v); }
// Scalar updates into the rows of a rank-1 table at indices [n, 1].
const lax::ScatterDimensionNumbers kRowScatter{{}, {0}, {0}, {}, {}};
Array S(const Array& i) { return lax::rem(mj::sum(i), mj::scalar(4, i32)); }  // rank-0 index in [0, 3]
// A float table of 8 rows depending on x (what gather/dynamic_slice/scatter read or write).
Array table(const Array& x) { return mj::sin(lax::iota(x.dtype(), {8}) * 0.3 + mj::sum(x)); }
std::vector<int64_t> all_axes(const Array& a) {
  std::vector<int64_t> d(size_t(a.ndim()));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

// x as a vector (rank 0 becomes [1]), and the windowed entries' padding: one element in front.
Array flat(const Array& a) { return lax::reshape(a, {a.size()}); }
const std::vector<std::pair<int64_t, int64_t>> kPad1{{1, 0}};

using E = Float0Entry;
V one(const Array& a) { return V{a}; }

// Operands of the entries' ops: x; I(x); B(x); I(x) and 3.
V in_x(const Array& x) { return V{x}; }
V in_i(const Array& x) { return V{I(x)}; }
V in_b(const Array& x) { return V{B(x)}; }
V in_ii(const Array& x) { return V{I(x), C(I(x), 3)}; }

// Comparisons, logical and bitwise operations, selection, conversions, integer arithmetic.
std::vector<E> elementwise() {
  return {
      // comparisons: float or int operands, bool results
      {"eq", "i32", in_ii, [](const V& a) { return one(lax::eq(a[0], a[1])); }, mix},
      {"ne", "f32", in_x, [](const V& a) { return one(lax::ne(a[0], C(a[0], 0.25))); }, mix},
      {"lt", "f32", in_x, [](const V& a) { return one(lax::lt(a[0], C(a[0], 0.25))); }, mix},
      {"le", "i32", in_ii, [](const V& a) { return one(lax::le(a[0], a[1])); }, mix},
      {"gt", "f32", in_x, [](const V& a) { return one(lax::gt(a[0], C(a[0], 0.25))); }, mix},
      {"ge", "u32", [](const Array& x) { return V{U(x), C(U(x), 4)}; },
       [](const V& a) { return one(lax::ge(a[0], a[1])); }, mix},
      // logical and bitwise operations
      {"and", "bool", [](const Array& x) { return V{B(x), x < 1.5}; },
       [](const V& a) { return one(lax::and_(a[0], a[1])); }, mix},
      {"and", "i32", in_ii, [](const V& a) { return one(lax::and_(a[0], a[1])); }, mix},
      {"or", "bool", [](const Array& x) { return V{B(x), x < -1.0}; },
       [](const V& a) { return one(lax::or_(a[0], a[1])); }, mix},
      {"or", "i32", in_ii, [](const V& a) { return one(lax::or_(a[0], a[1])); }, mix},
      {"xor", "bool", [](const Array& x) { return V{B(x), x < 1.5}; },
       [](const V& a) { return one(lax::xor_(a[0], a[1])); }, mix},
      {"xor", "u32", [](const Array& x) { return V{U(x), C(U(x), 5)}; },
       [](const V& a) { return one(lax::xor_(a[0], a[1])); }, mix},
      {"not", "bool", in_b, [](const V& a) { return one(lax::not_(a[0])); }, mix},
      {"not", "i32", in_i, [](const V& a) { return one(lax::not_(a[0])); }, mix},
      // bit counts of integers, and a float's finiteness (a bool of the float operand)
      {"population_count", "i32", in_i, [](const V& a) { return one(lax::population_count(a[0])); }, mix},
      {"clz", "u32", [](const Array& x) { return V{U(x)}; }, [](const V& a) { return one(lax::clz(a[0])); },
       mix},
      {"is_finite", "f32", in_x, [](const V& a) { return one(lax::is_finite(a[0])); }, mix},
      // debug_callback over an integer and a float: the callback sees primal values only (a
      // float0 tangent never reaches it), and its operand flows on unchanged.
      {"debug_callback", "i32_and_f32", [](const Array& x) { return V{I(x), x}; },
       [](const V& a) {
         mj::debug::callback([](const Array&, const Array&) {}, a[0], a[1]);
         return V{a[0]};
       },
       mix},
      // selection and clamping
      {"select_n", "bool_which", [](const Array& x) { return V{B(x), -x, x * x}; },
       [](const V& a) { return one(lax::select_n(a[0], {a[1], a[2]})); }, mix},
      {"select_n", "i32_which",
       [](const Array& x) { return V{lax::rem(I(x), C(I(x), 3)), x, x * x, mj::sin(x)}; },
       [](const V& a) { return one(lax::select_n(a[0], {a[1], a[2], a[3]})); }, mix},
      {"select_n", "i32_cases", [](const Array& x) { return V{B(x), I(x), C(I(x), 6)}; },
       [](const V& a) { return one(lax::select_n(a[0], {a[1], a[2]})); }, mix},
      {"clamp", "i32", in_i, [](const V& a) { return one(lax::clamp(C(a[0], 1), a[0], C(a[0], 5))); }, mix},
      // conversions
      {"convert_element_type", "f32_to_i32", in_x,
       [](const V& a) { return one(lax::convert_element_type(a[0] * 3.0, i32)); }, mix},
      {"convert_element_type", "i32_to_f32", in_i,
       [](const V& a) { return one(lax::convert_element_type(a[0], f32)); },
       [](const Array& x, const V& r) { return mj::sin(x) * F(r[0], x); }},
      {"convert_element_type", "f32_to_bool", [](const Array& x) { return V{x - 0.5}; },
       [](const V& a) { return one(lax::convert_element_type(a[0], mj::bool_)); }, mix},
      {"convert_element_type", "bool_to_f32", in_b,
       [](const V& a) { return one(lax::convert_element_type(a[0], f32)); },
       [](const Array& x, const V& r) { return mj::sin(x) * (1.0 + F(r[0], x)); }},
      {"convert_element_type", "i32_to_u32", in_i,
       [](const V& a) { return one(lax::convert_element_type(a[0], u32)); }, mix},
      {"bitcast_convert_type", "f32_to_i32", [](const Array& x) { return V{mj::astype(x, f32)}; },
       [](const V& a) { return one(lax::bitcast_convert_type(a[0], i32)); },
       [](const Array& x, const V& r) {  // the sign and exponent bits: piecewise constant in x
         return mj::sin(x) * F(lax::shift_right_logical(r[0], C(r[0], 23)), x) * (1.0 / 128);
       }},
      // integer arithmetic
      {"add", "i32", in_ii, [](const V& a) { return one(lax::add(a[0], a[1])); }, mix},
      {"sub", "i32", in_ii, [](const V& a) { return one(lax::sub(a[0], a[1])); }, mix},
      {"mul", "i32", in_ii, [](const V& a) { return one(lax::mul(a[0], a[1])); }, mix},
      {"div", "i32", in_ii, [](const V& a) { return one(lax::div(a[0], a[1])); }, mix},
      {"rem", "i32", in_ii, [](const V& a) { return one(lax::rem(a[0], a[1])); }, mix},
      {"max", "i32", in_ii, [](const V& a) { return one(lax::max(a[0], a[1])); }, mix},
      {"min", "i32", in_ii, [](const V& a) { return one(lax::min(a[0], a[1])); }, mix},
      {"pow", "i32", [](const Array& x) { return V{I(x), C(I(x), 2)}; },
       [](const V& a) { return one(lax::pow(a[0], a[1])); }, mix},
      {"integer_pow", "i32", in_i, [](const V& a) { return one(lax::integer_pow(a[0], 3)); }, mix},
      {"neg", "i32", in_i, [](const V& a) { return one(lax::neg(a[0])); }, mix},
      {"abs", "i32", [](const Array& x) { return V{I(x) - 3}; },
       [](const V& a) { return one(lax::abs(a[0])); }, mix},
      {"sign", "i32", [](const Array& x) { return V{I(x) - 3}; },
       [](const V& a) { return one(lax::sign(a[0])); }, mix},
      {"shift_left", "u32", [](const Array& x) { return V{U(x), C(U(x), 2)}; },
       [](const V& a) { return one(lax::shift_left(a[0], a[1])); }, mix},
      {"shift_right_logical", "i32", in_ii,
       [](const V& a) { return one(lax::shift_right_logical(a[0], C(a[0], 1))); }, mix},
      {"dot_general", "i32", in_i,
       [](const V& a) {
         auto d = all_axes(a[0]);
         return one(lax::dot_general(a[0], a[0], {d, d, {}, {}}));
       },
       mix},
      // x as one feature of one image, convolved with itself (a window over all of it)
      {"conv_general_dilated", "i32", in_i,
       [](const V& a) {
         Array x = lax::reshape(a[0], {1, 1, a[0].size()});
         return one(lax::conv_general_dilated(x, x, {1}, "VALID"));
       },
       mix},
  };
}

// Integer reductions and scans, argmax/argmin (int results), iota, and the data movement of
// int/bool values.
std::vector<E> structural() {
  return {
      {"reduce_sum", "i32", in_i, [](const V& a) { return one(lax::reduce_sum(a[0], all_axes(a[0]))); }, mix},
      {"reduce_max", "i32", in_i, [](const V& a) { return one(lax::reduce_max(a[0], all_axes(a[0]))); }, mix},
      {"reduce_min", "i32", in_i, [](const V& a) { return one(lax::reduce_min(a[0], all_axes(a[0]))); }, mix},
      {"reduce_prod", "i32", in_i, [](const V& a) { return one(lax::reduce_prod(a[0], all_axes(a[0]))); }, mix},
      {"cumsum", "i32", in_i, [](const V& a) { return one(lax::cumsum(lax::expand_dims(a[0], {0}), 0)); }, mix},
      {"cumprod", "i32", in_i, [](const V& a) { return one(lax::cumprod(lax::expand_dims(a[0], {0}), 0)); }, mix},
      {"cummax", "i32", in_i, [](const V& a) { return one(lax::cummax(lax::expand_dims(a[0], {0}), 0, true)); }, mix},
      {"cummin", "u32", [](const Array& x) { return V{U(x)}; },
       [](const V& a) { return one(lax::cummin(lax::expand_dims(a[0], {0}), 0)); }, mix},
      {"reduce_and", "bool", in_b, [](const V& a) { return one(lax::reduce_and(a[0], all_axes(a[0]))); }, mix},
      {"reduce_or", "i32", in_i, [](const V& a) { return one(lax::reduce_or(a[0], all_axes(a[0]))); }, mix},
      {"reduce_xor", "u32", [](const Array& x) { return V{U(x)}; },
       [](const V& a) { return one(lax::reduce_xor(a[0], all_axes(a[0]))); }, mix},
      // the windowed reductions over x flattened, windows of 2 with one padded element in front
      {"reduce_window_sum", "i32", in_i, [](const V& a) { return one(lax::reduce_window_sum(flat(a[0]), {2}, {1}, kPad1)); }, mix},
      {"reduce_window_max", "i32", in_i, [](const V& a) { return one(lax::reduce_window_max(flat(a[0]), {2}, {1}, kPad1)); }, mix},
      {"reduce_window_min", "i32", in_i, [](const V& a) { return one(lax::reduce_window_min(flat(a[0]), {2}, {1}, kPad1)); }, mix},
      {"select_and_gather_add", "i32", in_ii,
       [](const V& a) {
         return one(lax::select_and_gather_add(flat(a[1]), flat(a[0]), lax::SelectPrim::ge, {2}, {1}, kPad1));
       },
       mix},
      {"select_and_scatter_add", "i32", in_ii,
       [](const V& a) {
         return one(lax::select_and_scatter_add(flat(a[1]), flat(a[0]), lax::SelectPrim::le, {2}, {1}, kPad1));
       },
       mix},
      // the generic reduce_window over (x, I(x)) pairs (an argmax): a float and an int result;
      // forward mode only (JAX v0.7.0 gives it no reverse-mode rule)
      {"reduce_window", "f32_and_i32", [](const Array& x) { return V{x, I(x)}; },
       [](const V& a) {
         return lax::reduce_window(
             {flat(a[0]), flat(a[1])}, {mj::scalar(-INFINITY, a[0].dtype()), mj::scalar(0, i32)},
             [](const V& acc, const V& x) {
               Array take = lax::gt(x[0], acc[0]);
               return V{lax::select_n(take, {acc[0], x[0]}), lax::select_n(take, {acc[1], x[1]})};
             },
             {2}, {1}, kPad1);
       },
       mix, true, false},
      {"argmax", "", [](const Array& x) { return V{mj::stack({x, 0.5 - x * x}, -1)}; },
       [](const V& a) { return one(lax::argmax(a[0], a[0].ndim() - 1)); }, mix},
      {"argmin", "", [](const Array& x) { return V{mj::stack({x, 0.5 - x * x}, -1)}; },
       [](const V& a) { return one(lax::argmin(a[0], a[0].ndim() - 1)); }, mix},
      // sort by an i32 key (ties kept in order) carrying x along; top_k's i32 indices
      {"sort", "i32_key_f32_val", [](const Array& x) { return V{I(flat(x)), flat(x)}; },
       [](const V& a) { return lax::sort(V{a[0], a[1]}, 0); }, mix},
      {"top_k", "", [](const Array& x) { return V{mj::stack({x, 0.5 - x * x}, -1)}; },
       [](const V& a) {
         auto [v, i] = lax::top_k(a[0], 1);
         return V{v, i};
       },
       mix},
      {"iota", "i32", in_i,
       [](const V& a) {
         Array i = lax::iota(i32, {std::max<int64_t>(a[0].size(), 1)});
         return one(lax::add(lax::reshape(i, a[0].shape()), a[0]));
       },
       mix},
      // data movement of int/bool values
      {"broadcast_in_dim", "bool", in_b,
       [](const V& a) {
         mj::Shape s = a[0].shape();
         s.push_back(2);
         return one(lax::broadcast_in_dim(a[0], s, all_axes(a[0])));
       },
       mix},
      {"reshape", "i32", in_i, [](const V& a) { return one(lax::reshape(a[0], {a[0].size(), 1})); }, mix},
      {"expand_dims", "i32", in_i, [](const V& a) { return one(lax::expand_dims(a[0], {0})); }, mix},
      {"squeeze", "bool", in_b, [](const V& a) { return one(lax::squeeze(lax::expand_dims(a[0], {0}), {0})); }, mix},
      {"transpose", "i32", in_i,
       [](const V& a) {
         std::vector<int64_t> p = all_axes(a[0]);
         p.push_back(int64_t(p.size()));
         std::reverse(p.begin(), p.end());
         return one(lax::transpose(lax::expand_dims(a[0], {a[0].ndim()}), p));
       },
       mix},
      {"rev", "i32", in_i, [](const V& a) { return one(lax::rev(a[0], all_axes(a[0]))); }, mix},
      {"slice", "bool", in_b,
       [](const V& a) {
         Array e = lax::expand_dims(a[0], {0});
         mj::Shape lim = e.shape();
         std::vector<int64_t> start(lim.size(), 0);
         return one(lax::slice(e, start, lim));
       },
       mix},
      {"concatenate", "i32", in_i,
       [](const V& a) {
         Array e = lax::expand_dims(a[0], {0});
         return one(lax::concatenate({e, lax::neg(e)}, 0));
       },
       mix},
      {"pad", "bool", in_b,
       [](const V& a) {
         Array e = lax::expand_dims(a[0], {0});
         std::vector<lax::PadConfig> cfg(size_t(e.ndim()), {0, 0, 0});
         cfg[0] = {1, 2, 0};
         return one(lax::pad(e, mj::scalar(1, mj::bool_), cfg));
       },
       mix},
      {"gather", "i32_indices", [](const Array& x) { return V{table(x), I(x)}; },
       [](const V& a) { return one(lax::gather(a[0], a[1])); }, mix},
      {"gather", "i32_operand", in_i,
       [](const V& a) { return one(lax::gather(lax::iota(i32, {8}) * 2, a[0])); }, mix},
      {"dynamic_slice", "i32_index", [](const Array& x) { return V{table(x), S(I(x))}; },
       [](const V& a) { return one(lax::dynamic_slice(a[0], {a[1]}, {3})); }, mix},
      {"dynamic_update_slice", "i32_index", [](const Array& x) { return V{table(x), lax::reshape(mj::stack({x * x, -x}), {2 * x.size()}), S(I(x))}; },
       [](const V& a) {
         Array u = lax::slice(a[1], {0}, {2});
         return one(lax::dynamic_update_slice(a[0], u, {a[2]}));
       },
       mix},
      {"scatter_add", "i32_indices", [](const Array& x) { return V{table(x), I(x), x * x}; },
       [](const V& a) { return one(lax::scatter_add(a[0], a[1], a[2])); }, mix},
      // The general forms: indices [n, 1] into the rows of the table (inserted dim 0).
      {"gather", "general_i32_indices", [](const Array& x) { return V{table(x), I(x)}; },
       [](const V& a) {
         return one(lax::gather(a[0], lax::reshape(a[1], {a[1].size(), 1}), {{}, {0}, {0}, {}, {}}, {1}));
       },
       mix},
      {"scatter", "i32_indices", [](const Array& x) { return V{table(x), I(x), x * x}; },
       [](const V& a) {
         return one(lax::scatter(a[0], lax::reshape(a[1], {a[1].size(), 1}), lax::reshape(a[2], {a[2].size()}),
                                    kRowScatter));
       },
       mix},
      // Updates constant: scatter_mul differentiates its updates only with unique indices (JAX).
      {"scatter_mul", "i32_indices", [](const Array& x) { return V{table(x), I(x), lax::full(x.shape(), 1.5, x.dtype())}; },
       [](const V& a) {
         return one(lax::scatter_mul(a[0], lax::reshape(a[1], {a[1].size(), 1}), lax::reshape(a[2], {a[2].size()}),
                                    kRowScatter));
       },
       mix},
      {"scatter_min", "i32_indices", [](const Array& x) { return V{table(x), I(x), x * x}; },
       [](const V& a) {
         return one(lax::scatter_min(a[0], lax::reshape(a[1], {a[1].size(), 1}), lax::reshape(a[2], {a[2].size()}),
                                    kRowScatter));
       },
       mix},
      {"scatter_max", "i32_indices", [](const Array& x) { return V{table(x), I(x), x * x}; },
       [](const V& a) {
         return one(lax::scatter_max(a[0], lax::reshape(a[1], {a[1].size(), 1}), lax::reshape(a[2], {a[2].size()}),
                                    kRowScatter));
       },
       mix},
      {"device_put", "i32_host_and_back", in_i,
       [](const V& a) {
         Array h = lax::device_put(a[0], mj::MemoryKind::pinned_host);
         return one(lax::device_put(h, mj::MemoryKind::device));
       },
       mix},
      {"optimization_barrier", "mixed", [](const Array& x) { return V{x, I(x), B(x)}; },
       [](const V& a) { return lax::optimization_barrier(a); }, mix},
      {"sharding_constraint", "i32", in_i,
       [](const V& a) {
         static auto m = std::make_shared<const mj::Mesh>(std::vector<int>{0}, mj::Shape{1},
                                                          std::vector<std::string>{"x"});
         return one(mj::with_sharding_constraint(a[0], mj::NamedSharding{m, mj::P()}));
       },
       mix},
      {"name", "i32", in_i, [](const V& a) { return one(mj::checkpoint_name(a[0], "i")); }, mix},
      {"stop_gradient", "bool", in_b, [](const V& a) { return one(lax::stop_gradient(a[0])); }, mix},
  };
}

}  // namespace

std::vector<Float0Entry> control_flow_entries();  // float0_sweep_control.cc

const std::vector<Float0Entry>& entries() {
  static const std::vector<Float0Entry> t = [] {
    std::vector<Float0Entry> v = elementwise();
    for (auto* part : {structural, control_flow_entries})
      for (auto& e : part()) v.push_back(e);
    return v;
  }();
  return t;
}

const std::vector<std::string>& float_only() {
  static const std::vector<std::string> v = {"sin",     "cos",   "tan",      "tanh",  "exp",   "expm1",
                                             "log",     "log1p", "logistic", "sqrt",  "rsqrt", "erf",
                                             "erf_inv", "floor", "ceil",     "round", "atan2", "nextafter",
                                             "sinh",    "cosh",  "asin",     "acos",  "atan",  "asinh",
                                             "acosh",   "atanh", "cbrt",     "erfc",  "cumlogsumexp",
                                             "lgamma",  "digamma", "polygamma", "igamma", "igamma_grad_a",
                                             "cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"};
  return v;
}

const std::vector<std::pair<std::string, std::string>>& exempt() {
  static const std::vector<std::pair<std::string, std::string>> v = [] {
    std::vector<std::pair<std::string, std::string>> e;
    for (const char* n : {"all_gather", "all_reduce", "reduce_scatter", "all_to_all", "collective_permute",
                          "ragged_all_to_all", "axis_index"})
      e.emplace_back(n, "collective: runs only under run_spmd (tests/sharding/test_collectives_executor.cc)");
    for (const char* n : {"fusion", "copy_start", "copy_done", "copy_slice_start", "copy_update_start",
                          "allocate_buffer"})
      e.emplace_back(n, "compiler-internal: made after autodiff, never differentiated");
    e.emplace_back("custom_lin", "internal to custom_vjp's linearization: met through the custom_vjp entry");
    e.emplace_back("add_any", "adds tangents, never a primal value: its float0 case is "
                              "Float0.AddAnyOfFloat0Tangents (test_float0.cc)");
    return e;
  }();
  return v;
}

}  // namespace float0_sweep

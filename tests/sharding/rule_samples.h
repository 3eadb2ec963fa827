// Sample programs for the sharding-rule tests: traced equations that together cover every
// primitive with a factor rule (shared by test_sharding_rules.cc and test_pass_through.cc).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "autodiff/checkpoint.h"
#include "core/gather_scatter.h"
#include "core/gather_scatter_params.h"
#include "core/lax.h"
#include "core/random.h"

namespace rule_samples {

using mj::Array;
using mj::DType;
namespace lax = mj::lax;

/// An array of ones (the samples are traced, so only the avals matter).
inline Array filled(mj::Shape s, DType d = DType::f32) { return lax::full(s, 1, d); }

/// The row gather and scatter (indices [..., 1] into dim 0 of a rank-2 operand).
inline const lax::GatherDimensionNumbers kRowGather{{2}, {0}, {0}, {}, {}};
inline const lax::ScatterDimensionNumbers kRowScatter{{2}, {0}, {0}, {}, {}};

/// One sample program: its arguments and its body (traced with make_jaxpr).
struct Sample {
  std::string label;
  std::vector<Array> args;
  std::function<std::vector<Array>(const std::vector<Array>&)> body;
};

/// The samples; every primitive with a sharding rule appears in at least one of them
/// (checked by ShardingRules.EveryRuleIsConsistentOnSampleEquations and by test_pass_through).
inline std::vector<Sample> samples() {
  using V = std::vector<Array>;
  const Array x = filled({4, 6}), y = filled({4, 6}), s = filled({});
  const Array u = filled({4, 6}, DType::u32), b = lax::full({4, 6}, 1, DType::bool_);
  std::vector<Sample> v;
  v.push_back({"unary", {x}, [](const V& a) {
    V r;
    for (auto f :
         {lax::neg,   lax::sin,   lax::cos,      lax::tan,           lax::exp,   lax::log,  lax::log1p,
          lax::expm1, lax::tanh,  lax::logistic, lax::sqrt,          lax::rsqrt, lax::erf,  lax::abs,
          lax::sign,  lax::floor, lax::ceil,     lax::stop_gradient, lax::sinh,  lax::cosh, lax::asin,
          lax::acos,  lax::atan,  lax::asinh,    lax::acosh,         lax::atanh, lax::cbrt, lax::erfc})
      r.push_back(f(a[0], std::source_location::current()));
    r.push_back(lax::round(a[0], 1));
    r.push_back(lax::integer_pow(a[0], 3));
    r.push_back(lax::convert_element_type(a[0], DType::i32));
    r.push_back(lax::erf_inv(lax::mul(a[0], lax::full({4, 6}, 0.5, DType::f32))));
    return r;
  }});
  v.push_back({"binary", {x, y, s}, [](const V& a) {
    V r;
    for (auto f : {lax::add, lax::add_any, lax::sub, lax::mul, lax::div, lax::rem, lax::pow, lax::max,
                   lax::min, lax::atan2, lax::eq, lax::ne, lax::lt, lax::le, lax::gt, lax::ge})
      r.push_back(f(a[0], a[1], std::source_location::current()));
    r.push_back(lax::mul(a[0], lax::broadcast_in_dim(a[2], {4, 6}, {})));
    return r;
  }});
  v.push_back({"bits", {u, b}, [](const V& a) {
    return V{lax::and_(a[1], a[1]), lax::or_(a[1], a[1]), lax::not_(a[1]),
             lax::shift_left(a[0], a[0]), lax::shift_right_logical(a[0], a[0]), lax::xor_(a[0], a[0]),
             lax::bitcast_convert_type(a[0], DType::f32)};
  }});
  v.push_back({"special", {x, y, u}, [](const V& a) {
                 return V{lax::is_finite(a[0]), lax::nextafter(a[0], a[1]), lax::population_count(a[2]),
                          lax::clz(a[2])};
               }});
  v.push_back({"gamma", {x, y}, [](const V& a) {
                 Array m = lax::floor(lax::abs(a[1]));  // an integer order >= 0
                 return V{lax::lgamma(a[0]), lax::digamma(a[0]), lax::polygamma(m, a[0])};
               }});
  v.push_back({"igamma", {x, y}, [](const V& a) {
                 return V{lax::igamma(a[0], a[1]), lax::igamma_grad_a(a[0], a[1])};
               }});
  v.push_back({"bitcast 4<->8", {filled({3, 2}, DType::u32), filled({3}, DType::f64)}, [](const V& a) {
    return V{lax::bitcast_convert_type(a[0], DType::f64), lax::bitcast_convert_type(a[1], DType::u32)};
  }});
  v.push_back({"random", {filled({}, DType::u32), filled({2, 3}, DType::u32)}, [](const V& a) {
    auto [h, l] = lax::iota_2x32_shape({2, 3});
    auto [o1, o2] = lax::threefry2x32(a[0], a[0], a[1], l);
    return V{h, o1, o2};
  }});
  v.push_back({"sharding_constraint", {x}, [](const V& a) {
    auto m = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1}, mj::Shape{2},
                                              std::vector<std::string>{"x"});
    return V{mj::with_sharding_constraint(a[0], mj::NamedSharding{m, mj::P("x")})};
  }});
  v.push_back({"select/clamp", {x, b, s}, [](const V& a) {
    return V{lax::select_n(a[1], {a[0], a[0]}), lax::clamp(a[2], a[0], a[2]),
             lax::device_put(a[0], mj::MemoryKind::pinned_host), mj::checkpoint_name(a[0], "h"),
             lax::optimization_barrier({a[0], a[2]})[0], lax::iota(DType::i32, {3, 5}, 1)};
  }});
  v.push_back({"shape ops", {filled({8, 2048}), filled({1, 3}), filled({2, 3, 8})}, [](const V& a) {
    return V{lax::reshape(a[0], {2, 4, 2048}), lax::reshape(a[0], {16384}),
             lax::reshape(a[2], {3, 2, 8}), lax::reshape(a[2], {6, 4, 2}), lax::reshape(a[1], {3}),
             lax::broadcast_in_dim(a[1], {4, 3}, {0, 1}), lax::broadcast_in_dim(a[1], {5, 1, 3}, {1, 2}),
             lax::squeeze(a[1], {0}), lax::expand_dims(a[1], {0, 3}), lax::transpose(a[2], {2, 0, 1}),
             lax::rev(a[2], {1})};
  }});
  v.push_back({"reductions", {filled({4, 6, 2})}, [](const V& a) {
    return V{lax::reduce_sum(a[0], {1}), lax::reduce_max(a[0], {0, 2}), lax::reduce_min(a[0], {2}),
             lax::reduce_prod(a[0], {0}), lax::argmax(a[0], 1), lax::argmin(a[0], 0),
             lax::cumsum(a[0], 2, true)};
  }});
  v.push_back({"cumulative and bitwise reductions", {filled({4, 6, 2}), filled({4, 6, 2}, DType::i32)},
               [](const V& a) {
                 return V{lax::cumprod(a[0], 1), lax::cummax(a[0], 0, true), lax::cummin(a[0], 2),
                          lax::cumlogsumexp(a[0], 1, true), lax::reduce_and(a[1], {1}),
                          lax::reduce_or(a[1], {0, 2}), lax::reduce_xor(a[1], {2})};
               }});
  v.push_back({"sorting", {filled({4, 6, 2}), filled({4, 6, 2}, DType::i32)}, [](const V& a) {
    V r = lax::sort(V{a[0], a[1]}, 1, true, 1);
    auto [vals, idx] = lax::top_k(a[0], 1);
    r.push_back(vals);
    r.push_back(idx);
    return r;
  }});
  // Matrices made positive definite / well conditioned: ones plus 2 on the diagonal.
  // lu, qr (full), eigh (symmetrized first) and svd (reduced) of the same [4,3,3] and [2,3,4].
  v.push_back({"linalg", {filled({4, 3, 3}), filled({2, 3, 3}), filled({2, 3, 4})}, [](const V& a) {
    namespace la = mj::lax::linalg;
    const Array e = mj::eye(3, DType::f32) * 2.0f;
    V r{la::cholesky(a[0] + e), la::triangular_solve(a[1] + e, a[2], true, true)};
    const auto [lu, piv, perm] = la::lu(a[0] + e);
    const auto [q, rr] = la::qr(a[2]);
    const auto [vv, w] = la::eigh(a[0] + e);
    for (const Array& x : {lu, piv, perm, q, rr, vv, w}) r.push_back(x);
    for (const Array& x : la::svd(a[2], false)) r.push_back(x);
    return r;
  }});
  v.push_back({"dot_general", {filled({3, 4, 5}), filled({3, 5, 6}), filled({5, 7})}, [](const V& a) {
    return V{lax::dot_general(a[0], a[1], {{2}, {1}, {0}, {0}}),
             lax::dot_general(a[0], a[2], {{2}, {0}, {}, {}})};
  }});
  v.push_back({"slicing", {filled({6, 8}), filled({2, 8}), filled({}, DType::i32), filled({5, 3}),
                           filled({2, 4, 1}, DType::i32)},
               [](const V& a) {
                 return V{lax::slice(a[0], {1, 0}, {5, 8}), lax::slice(a[0], {0, 0}, {6, 8}, {2, 1}),
                          lax::dynamic_slice(a[0], {a[2], a[2]}, {3, 8}),
                          lax::dynamic_update_slice(a[0], a[1], {a[2], a[2]}),
                          lax::concatenate({a[0], a[1]}, 0),
                          lax::pad(a[0], lax::full({}, 0, DType::f32), {{1, 2, 0}, {0, 0, 0}}),
                          lax::gather(a[3], a[4], kRowGather, {1, 3}),
                          lax::scatter_add(a[3], a[4], lax::full({2, 4, 3}, 1, DType::f32), kRowScatter)};
               }});
  // Even sizes, so that the pass-through test (test_pass_through.cc) has a factor divisible by 2
  // to shard on each of these: broadcast/squeeze/expand_dims keep a dim of 4, scatter_add's
  // feature dim is 4, bitcast 4->8 bytes keeps the leading dim of 4 (the pair dim 2 is not
  // shared).
  v.push_back({"even sizes", {filled({1, 4}), filled({5, 4}), filled({2, 4, 1}, DType::i32),
                              filled({4, 2}, DType::u32)},
               [](const V& a) {
                 return V{lax::broadcast_in_dim(a[0], {2, 3, 4}, {1, 2}), lax::squeeze(a[0], {0}),
                          lax::expand_dims(a[0], {0}),
                          lax::scatter_add(a[1], a[2], lax::full({2, 4, 4}, 1, DType::f32), kRowScatter),
                          lax::bitcast_convert_type(a[3], DType::f64)};
               }});
  // The general gather and the scatter family with batching dims: operand [2, 8, 6], indices
  // [2, 4, 1] (batch 2 paired with the operand's dim 0), windows of the whole dim 2.
  v.push_back({"gather/scatter batching", {filled({2, 8, 6}), filled({2, 4, 1}, DType::i32), filled({2, 4, 6})},
               [](const V& a) {
                 const lax::GatherDimensionNumbers g{{2}, {1}, {1}, {0}, {0}};
                 const auto s = lax::mirrored_scatter_dims(g);
                 return V{lax::gather(a[0], a[1], g, {1, 1, 6}), lax::scatter(a[0], a[1], a[2], s),
                          lax::scatter_add(a[0], a[1], a[2], s), lax::scatter_mul(a[0], a[1], a[2], s),
                          lax::scatter_min(a[0], a[1], a[2], s), lax::scatter_max(a[0], a[1], a[2], s)};
               }});
  // debug_callback (debug::print): no results; every operand dim needs replication.
  v.push_back({"debug print", {filled({4, 6})}, [](const V& a) {
                 mj::debug::print("sample {}", a[0]);
                 return V{a[0]};
               }});
  // conv_general_dilated: NCHW batch 2 and kernel output features 4 pass through (the input
  // features are a reduction, spatial dims need replication); grouped NHWC: the batch only.
  v.push_back({"convolution", {filled({2, 3, 5, 5}), filled({4, 3, 3, 3}), filled({2, 5, 5, 4}), filled({3, 3, 2, 4})},
               [](const V& a) {
                 lax::ConvGeneralDilatedOptions g;
                 g.dimension_numbers = lax::ConvDimensionSpec("NHWC", "HWIO", "NHWC");
                 g.feature_group_count = 2;
                 return V{lax::conv_general_dilated(a[0], a[1], {1, 1}, "VALID"),
                          lax::conv_general_dilated(a[2], a[3], {1, 1}, "SAME", g)};
               }});
  // The windowed reductions: pooling windows over [batch, h, w, features] (the batch and
  // feature dims pass through), and the generic reduce_window with its scalar init values.
  v.push_back({"windowed", {filled({2, 4, 6, 3}), filled({2, 2, 3, 3})}, [](const V& a) {
    const std::vector<int64_t> w{1, 2, 2, 1};
    const std::vector<std::pair<int64_t, int64_t>> none(4, {0, 0});
    auto mul = [](const Array& p, const Array& q) { return lax::mul(p, q); };
    return V{lax::reduce_window_sum(a[0], w, w, "VALID"), lax::reduce_window_max(a[0], w, w, "VALID"),
             lax::reduce_window_min(a[0], w, {1, 1, 1, 1}, "SAME"),
             lax::reduce_window(a[0], lax::full({}, 1, DType::f32), mul, w, w, "VALID"),
             lax::select_and_gather_add(a[0], a[0], lax::SelectPrim::ge, w, w, none),
             lax::select_and_scatter_add(a[1], a[0], lax::SelectPrim::ge, w, w, none)};
  }});
  return v;
}

}  // namespace rule_samples

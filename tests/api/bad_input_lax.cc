// minijax public-API bad-input cases: the lax primitives (core/lax.h, core/collectives.h, random).
// Owns lax_cases(): one bad call per listed lax:: and random:: declaration.
#include "api/bad_input.h"
#include "core/gather_scatter.h"

namespace bad_input {
namespace {
namespace mj = minijax;
namespace lax = minijax::lax;
using mj::Array;
using mj::DType;
using mj::ShapeError;
using mj::TypeError;
using mj::ValueError;

Array b1() { return mj::scalar(1, DType::bool_); }
Array i21() { return mj::array({0, 1}, {2, 1}, DType::i32); }  // two row indices, index vector last
lax::GatherOptions bad_mode() {
  lax::GatherOptions o;
  o.mode = lax::GatherScatterMode(7);
  return o;
}

}  // namespace


std::vector<Case> lax_cases() {
  return {
      BAD("minijax::lax::neg", TypeError, lax::neg(b1()), "neg", "bool"),
      BAD_ANY_SITE("minijax::lax::gather_scatter_mode", ValueError,
                   lax::gather_scatter_mode(mj::Params{{"mode", std::string("RAISE")}}), "mode", "RAISE"),
      BAD_ANY_SITE("minijax::lax::gather_scatter_mode_name", ValueError,
                   lax::gather_scatter_mode_name(lax::GatherScatterMode(7)), "GatherScatterMode", "7"),
      BAD_ANY_SITE("minijax::lax::gather_fill_value", ValueError,
                   lax::gather_fill_value(mj::Params{{"fill_value", std::string("x")}}), "fill_value"),
      BAD("minijax::lax::sin", TypeError, lax::sin(i23()), "sin", "i32"),
      BAD("minijax::lax::cos", TypeError, lax::cos(i23()), "cos", "i32"),
      BAD("minijax::lax::tan", TypeError, lax::tan(i23()), "tan", "i32"),
      BAD("minijax::lax::exp", TypeError, lax::exp(i23()), "exp", "i32"),
      BAD("minijax::lax::log", TypeError, lax::log(i23()), "log", "i32"),
      BAD("minijax::lax::log1p", TypeError, lax::log1p(i23()), "log1p", "i32"),
      BAD("minijax::lax::expm1", TypeError, lax::expm1(i23()), "expm1", "i32"),
      BAD("minijax::lax::tanh", TypeError, lax::tanh(i23()), "tanh", "i32"),
      BAD("minijax::lax::logistic", TypeError, lax::logistic(i23()), "logistic", "i32"),
      BAD("minijax::lax::sqrt", TypeError, lax::sqrt(i23()), "sqrt", "i32"),
      BAD("minijax::lax::rsqrt", TypeError, lax::rsqrt(i23()), "rsqrt", "i32"),
      BAD("minijax::lax::erf", TypeError, lax::erf(i23()), "erf", "i32"),
      BAD("minijax::lax::erf_inv", TypeError, lax::erf_inv(i23()), "erf_inv", "i32"),
      BAD("minijax::lax::abs", TypeError, lax::abs(b1()), "abs", "bool"),
      BAD("minijax::lax::sign", TypeError, lax::sign(b1()), "sign", "bool"),
      BAD("minijax::lax::floor", TypeError, lax::floor(i23()), "floor", "i32"),
      BAD("minijax::lax::ceil", TypeError, lax::ceil(i23()), "ceil", "i32"),
      BAD("minijax::lax::round", ValueError, lax::round(x23(), 7), "round", "7"),
      BAD("minijax::lax::not_", TypeError, lax::not_(x23()), "not", "f32"),
      BAD("minijax::lax::integer_pow", TypeError, lax::integer_pow(b1(), 2), "integer_pow", "bool"),
      BAD("minijax::lax::stop_gradient", ValueError, lax::stop_gradient(Array()), "stop_gradient"),
      // Binary primitives: lax broadcasts only size-1 dims between equal ranks, so unequal ranks
      // are refused; unequal dtypes too.
      BAD("minijax::lax::add", ShapeError, lax::add(x23(), x4()), "add", "[2,3]", "[4]"),
      BAD("minijax::lax::add_any", ShapeError, lax::add_any(x23(), x4()), "add_any", "[2,3]", "[4]"),
      BAD("minijax::lax::sub", ShapeError, lax::sub(x23(), x4()), "sub", "[2,3]", "[4]"),
      BAD("minijax::lax::mul", TypeError, lax::mul(x23(), i23()), "mul", "f32", "i32"),
      BAD("minijax::lax::div", TypeError, lax::div(x23(), i23()), "div", "f32", "i32"),
      BAD("minijax::lax::rem", ShapeError, lax::rem(x23(), x4()), "rem", "[2,3]", "[4]"),
      BAD("minijax::lax::pow", ShapeError, lax::pow(x23(), x4()), "pow", "[2,3]", "[4]"),
      BAD("minijax::lax::max", ShapeError, lax::max(x23(), x4()), "max", "[2,3]", "[4]"),
      BAD("minijax::lax::min", ShapeError, lax::min(x23(), x4()), "min", "[2,3]", "[4]"),
      BAD("minijax::lax::atan2", TypeError, lax::atan2(i23(), i23()), "atan2", "i32"),
      BAD("minijax::lax::eq", ShapeError, lax::eq(x23(), x4()), "eq", "[2,3]", "[4]"),
      BAD("minijax::lax::ne", ShapeError, lax::ne(x23(), x4()), "ne", "[2,3]", "[4]"),
      BAD("minijax::lax::lt", ShapeError, lax::lt(x23(), x4()), "lt", "[2,3]", "[4]"),
      BAD("minijax::lax::le", ShapeError, lax::le(x23(), x4()), "le", "[2,3]", "[4]"),
      BAD("minijax::lax::gt", ShapeError, lax::gt(x23(), x4()), "gt", "[2,3]", "[4]"),
      BAD("minijax::lax::ge", ShapeError, lax::ge(x23(), x4()), "ge", "[2,3]", "[4]"),
      BAD("minijax::lax::and_", TypeError, lax::and_(x23(), x23()), "and", "f32"),
      BAD("minijax::lax::or_", TypeError, lax::or_(x23(), x23()), "or", "f32"),
      BAD("minijax::lax::xor_", TypeError, lax::xor_(x23(), x23()), "xor", "f32"),
      BAD("minijax::lax::shift_left", TypeError, lax::shift_left(x23(), x23()), "shift_left", "f32"),
      BAD("minijax::lax::shift_right_logical", TypeError, lax::shift_right_logical(x23(), x23()), "shift_right_logical", "f32"),
      BAD("minijax::lax::select_n", TypeError, lax::select_n(x23(), {x23(), x23()}), "select_n", "f32"),
      BAD("minijax::lax::clamp", ShapeError, lax::clamp(x4(), x23(), x4()), "clamp", "[2,3]", "[4]"),
      BAD("minijax::lax::convert_element_type", TypeError, lax::convert_element_type(x23(), DType::token, false), "convert_element_type", "token"),
      BAD("minijax::lax::bitcast_convert_type", TypeError, lax::bitcast_convert_type(x23(), DType::bf16), "bitcast_convert_type", "bf16"),
      BAD("minijax::lax::broadcast_in_dim", ShapeError, lax::broadcast_in_dim(x23(), {2, 4}, {0, 1}), "broadcast_in_dim", "[2,3]", "[2,4]"),
      BAD("minijax::lax::reshape", ShapeError, lax::reshape(x23(), {5}), "reshape", "(2, 3)", "(5,)"),
      BAD("minijax::lax::squeeze", ShapeError, lax::squeeze(x23(), {1}), "squeeze", "[2,3]"),
      BAD("minijax::lax::expand_dims", ValueError, lax::expand_dims(x23(), {7}), "expand_dims", "7"),
      BAD("minijax::lax::transpose", ShapeError, lax::transpose(x23(), {1}), "transpose", "(1,)"),
      BAD("minijax::lax::rev", ValueError, lax::rev(x23(), {3}), "rev", "3"),
      BAD("minijax::lax::reduce_sum", ShapeError, lax::reduce_sum(x23(), {2}), "reduce_sum", "2"),
      BAD("minijax::lax::reduce_max", ShapeError, lax::reduce_max(x23(), {2}), "reduce_max", "2"),
      BAD("minijax::lax::reduce_min", ShapeError, lax::reduce_min(x23(), {2}), "reduce_min", "2"),
      BAD("minijax::lax::reduce_prod", ShapeError, lax::reduce_prod(x23(), {2}), "reduce_prod", "2"),
      BAD("minijax::lax::argmax", ShapeError, lax::argmax(x23(), 2, DType::i32), "argmax", "2"),
      BAD("minijax::lax::argmin", TypeError, lax::argmin(x23(), 0, DType::f32), "argmin", "f32"),
      BAD("minijax::lax::cumsum", ShapeError, lax::cumsum(x23(), 2, false), "cumsum", "2"),
      BAD("minijax::lax::precision_name", ValueError, lax::precision_name(lax::Precision(7)), "precision_name", "7"),
      BAD("minijax::lax::dot_general", ShapeError,
          lax::dot_general(x23(), x23(), lax::DotDimensionNumbers{{1}, {0}, {}, {}}), "dot_general", "[2,3]"),
      BAD("minijax::lax::slice", ShapeError, lax::slice(x23(), {0, 0}, {3, 3}, {}), "slice", "[0:3)", "(2, 3)"),
      BAD("minijax::lax::dynamic_slice", ShapeError,
          lax::dynamic_slice(x23(), {mj::scalar(0, DType::i32), mj::scalar(0, DType::i32)}, {3, 1}), "dynamic_slice", "(3, 1)"),
      BAD("minijax::lax::dynamic_update_slice", ShapeError,
          lax::dynamic_update_slice(x23(), x4(), {mj::scalar(0, DType::i32)}), "dynamic_update_slice", "[4]"),
      BAD("minijax::lax::concatenate", ShapeError, lax::concatenate({x23(), x4()}, 0), "concatenate", "[2,3]", "[4]"),
      BAD("minijax::lax::pad", ShapeError, lax::pad(x23(), mj::scalar(0.0, DType::f32), {{1, 1, 0}}), "pad", "[2,3]"),
      BAD("minijax::lax::gather", TypeError, lax::gather(x23(), x4()), "gather", "f32[4]"),
      BAD("minijax::lax::scatter_add", TypeError, lax::scatter_add(x23(), x4(), x4()), "scatter_add", "f32[4]"),
      BAD("minijax::lax::iota", ValueError, lax::iota(DType::i32, {2, 3}, 2), "iota", "dimension 2", "(2, 3)"),
      BAD("minijax::lax::device_put", ValueError, lax::device_put(Array(), mj::MemoryKind::pinned_host), "device_put", "empty"),
      BAD("minijax::lax::optimization_barrier", ValueError, lax::optimization_barrier({x23(), Array()}), "optimization_barrier", "operand 1", "empty"),
      BAD("minijax::lax::threefry2x32", TypeError, lax::threefry2x32(x4(), x4(), x4(), x4()), "threefry2x32", "f32"),
      BAD("minijax::lax::iota_2x32_shape", ShapeError, lax::iota_2x32_shape({2, -1}), "iota_2x32_shape", "-1"),
      // Collectives outside a mapped axis: the primitive and the unbound axis name.
      BAD("minijax::lax::all_gather", ValueError, lax::all_gather(x23(), {"nope"}, 2, 0, false), "all_gather", "nope"),
      BAD("minijax::lax::all_reduce", ValueError, lax::all_reduce(x23(), {"x"}, 2, "median"), "all_reduce", "median"),
      BAD("minijax::lax::psum", ValueError, lax::psum(x23(), {}, 2), "all_reduce", "at least one axis name"),
      // The general forms: dimension numbers that do not fit (ShapeError naming shapes and the
      // parameter), slice sizes larger than the operand, updates of the wrong shape, unknown mode.
      BAD("minijax::lax::gather", ShapeError, lax::gather(x23(), i21(), {{5}, {0}, {0}, {}, {}}, {1, 3}),
          "gather", "f32[2,3]", "i32[2,1]", "offset_dims", "out of range"),
      BAD("minijax::lax::gather", ShapeError, lax::gather(x23(), i21(), {{1}, {0, 0}, {0}, {}, {}}, {1, 3}),
          "gather", "collapsed_slice_dims", "repeats"),
      BAD("minijax::lax::gather", ShapeError, lax::gather(x23(), i21(), {{1}, {0}, {0}, {}, {}}, {1, 4}),
          "gather", "f32[2,3]", "slice_sizes", "(1, 4)"),
      BAD("minijax::lax::gather", ValueError,
          lax::gather(x23(), i21(), {{1}, {0}, {0}, {}, {}}, {1, 3}, bad_mode()), "GatherScatterMode", "7"),
      BAD("minijax::lax::scatter_add", ShapeError,
          lax::scatter_add(x23(), i21(), mj::ones({2, 3}), {{1}, {1}, {0}, {}, {}}), "scatter_add",
          "f32[2,3]", "update_window_dims"),
      BAD("minijax::lax::scatter_add", ShapeError,
          lax::scatter_add(x23(), i21(), mj::ones({2, 3}), {{2}, {0}, {0}, {}, {}}), "scatter_add",
          "update_window_dims", "out of range"),
      BAD("minijax::lax::scatter_add", ShapeError,
          lax::scatter_add(x23(), i21(), mj::ones({3, 3}), {{1}, {0}, {0}, {}, {}}), "scatter_add",
          "f32[3,3]", "i32[2,1]", "updates"),
      BAD("minijax::lax::scatter_add", ShapeError,
          lax::scatter_add(x23(), i21(), mj::ones({2, 3}), {{1}, {0, 0}, {0}, {}, {}}), "scatter_add",
          "inserted_window_dims", "repeats"),
      BAD("minijax::lax::reduce_scatter", ShapeError, lax::reduce_scatter(x23(), {"x"}, 4, 1), "reduce_scatter", "4"),
      BAD("minijax::lax::all_to_all", ShapeError, lax::all_to_all(x23(), {"x"}, 2, 5, 0), "all_to_all", "5"),
      BAD("minijax::lax::collective_permute", ValueError, lax::collective_permute(x23(), {"x"}, 2, {0, 5}), "collective_permute", "5"),
      BAD("minijax::lax::ragged_all_to_all", ShapeError,
          lax::ragged_all_to_all(x4(), x4(), x4(), x4(), x4(), x4(), {"x"}, 2), "ragged_all_to_all", "input_offsets", "f32[4]"),
      BAD("minijax::lax::axis_index", ValueError, lax::axis_index({"nope"}), "axis_index", "nope"),
      // random: keys of the wrong dtype or shape, bad counts and bounds.
      BAD("minijax::random::split", TypeError, mj::random::split(x4(), 2), "random.split", "f32[4]"),
      BAD("minijax::random::fold_in", TypeError, mj::random::fold_in(x4(), 3u), "random.fold_in", "f32[4]"),
      BAD("minijax::random::bits", ValueError, mj::random::bits(mj::random::PRNGKey(0), {-2}), "bits", "-2"),
      BAD("minijax::random::uniform", TypeError, mj::random::uniform(mj::random::PRNGKey(0), {2}, DType::i32, 0, 1), "uniform", "i32"),
      BAD("minijax::random::normal", TypeError, mj::random::normal(mj::random::PRNGKey(0), {2}, DType::u32), "normal", "u32"),
      BAD("minijax::random::randint", TypeError, mj::random::randint(mj::random::PRNGKey(0), {2}, 0, 5, DType::f32), "random.randint", "f32"),
      BAD("minijax::random::permutation", ValueError, mj::random::permutation(mj::random::PRNGKey(0), -4), "permutation", "-4"),
  };
}

}  // namespace bad_input

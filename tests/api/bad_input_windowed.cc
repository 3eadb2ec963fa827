// minijax public-API bad-input cases: the windowed reductions (core/windowed_reductions.h) and
// mj::nn's conv and pooling (core/nn.h). Owns windowed_cases().
#include "api/bad_input.h"

namespace bad_input {
namespace {
namespace mj = minijax;
namespace lax = minijax::lax;
namespace nn = minijax::nn;
using mj::Array;
using mj::DType;
using mj::ShapeError;
using mj::TypeError;
using mj::ValueError;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

Array f32s(double v) { return mj::scalar(v, DType::f32); }
Array add(const Array& a, const Array& b) { return lax::add(a, b); }

}  // namespace

std::vector<Case> windowed_cases() {
  return {
      // Window params of the wrong length or with a value <= 0: ValueError naming the param.
      BAD("minijax::lax::reduce_window_sum", ValueError, lax::reduce_window_sum(x23(), {2}, {1}, "VALID"),
          "reduce_window_sum", "window_dimensions", "(2,)", "f32[2,3]"),
      BAD("minijax::lax::reduce_window_sum", ValueError,
          lax::reduce_window_sum(x23(), {1, 2}, {1, 0}, "VALID"), "reduce_window_sum", "window_strides",
          "(1, 0)"),
      BAD("minijax::lax::reduce_window_max", ValueError,
          lax::reduce_window_max(x23(), {1, 2}, {1, 1}, "VALID", {1, 1, 1}), "reduce_window_max",
          "base_dilation", "(1, 1, 1)"),
      BAD("minijax::lax::reduce_window_max", ValueError,
          lax::reduce_window_max(x23(), {1, 2}, {1, 1}, "VALID", {}, {0, 1}), "reduce_window_max",
          "window_dilation", "(0, 1)"),
      BAD("minijax::lax::reduce_window_max", ValueError,
          lax::reduce_window_max(x23(), {1, 2}, {1, 1}, "VALID", {}, {1, int64_t(1) << 62}), "reduce_window_max",
          "window_dilation", ">= 2^31"),
      BAD("minijax::lax::reduce_window_min", ValueError,
          lax::reduce_window_min(x23(), {1, 2}, {1, 1}, Pairs{{0, 0}}), "reduce_window_min", "padding",
          "1 (low, high) pairs"),
      BAD("minijax::lax::reduce_window_min", ValueError,
          lax::reduce_window_min(x23(), {1, 2}, {1, 1}, "FULL"), "reduce_window_min", "padding", "FULL"),
      // A window larger than the padded input (or padding cropping below zero): ShapeError naming
      // the operand, the window and the padding.
      BAD("minijax::lax::reduce_window_max", ShapeError,
          lax::reduce_window_max(x23(), {3, 1}, {1, 1}, "VALID"), "reduce_window_max",
          "larger than the padded input", "f32[2,3]", "(3, 1)", "((0, 0), (0, 0))"),
      BAD("minijax::lax::reduce_window_sum", ShapeError,
          lax::reduce_window_sum(x23(), {1, 1}, {1, 1}, Pairs{{0, 0}, {-2, -2}}), "reduce_window_sum",
          "crops", "f32[2,3]", "((0, 0), (-2, -2))"),
      BAD("minijax::lax::reduce_window_sum", TypeError,
          lax::reduce_window_sum(mj::astype(x23(), DType::bool_), {1, 1}, {1, 1}, "VALID"),
          "reduce_window_sum", "bool"),
      // The generic reduce_window: a body that is not (scalar, scalar) -> scalar of the init
      // value's dtype, or a non-scalar init value: TypeError naming the body's types.
      BAD("minijax::lax::reduce_window", TypeError,
          lax::reduce_window(
              x23(), f32s(0),
              [](const Array& a, const Array& b) { return lax::convert_element_type(add(a, b), DType::f64); },
              {1, 2}, {1, 1}, "VALID"),
          "reduce_window", "(f32[], f32[]) -> (f32[],)", "f64[]"),
      BAD("minijax::lax::reduce_window", TypeError,
          lax::reduce_window(
              x23(), f32s(0), [](const Array& a, const Array&) { return lax::broadcast_in_dim(a, {2}, {}); },
              {1, 2}, {1, 1}, "VALID"),
          "reduce_window", "f32[2]"),
      BAD("minijax::lax::reduce_window", TypeError,
          lax::reduce_window(
              x23(), x4(), [](const Array& a, const Array& b) { return add(a, b); }, {1, 2}, {1, 1}, "VALID"),
          "reduce_window", "scalar init_values", "f32[4]"),
      BAD("minijax::lax::reduce_window", TypeError,
          lax::reduce_window(
              x23(), mj::scalar(0, DType::i32), [](const Array& a, const Array& b) { return add(a, b); },
              {1, 2}, {1, 1}, "VALID"),
          "reduce_window", "inconsistent dtypes", "f32[2,3]", "i32[]"),
      BAD("minijax::lax::reduce_window", ValueError,
          lax::reduce_window(
              x23(), f32s(0), [](const Array& a, const Array& b) { return add(a, b); }, {1, 2}, {1}, "VALID"),
          "reduce_window", "window_strides", "(1,)"),
      BAD("minijax::lax::reduce_window", ShapeError,
          lax::reduce_window(
              x23(), f32s(0), [](const Array& a, const Array& b) { return lax::mul(a, b); }, {4, 1}, {1, 1},
              "VALID"),
          "reduce_window", "larger than the padded input", "f32[2,3]"),
      // select_and_*: a source (or tangents) of the wrong shape.
      BAD("minijax::lax::select_and_scatter_add", ShapeError,
          lax::select_and_scatter_add(x23(), x23(), lax::SelectPrim::ge, {2, 2}, {1, 1}, Pairs(2, {0, 0})),
          "select_and_scatter_add", "source", "f32[2,3]", "f32[1,2]"),
      BAD("minijax::lax::select_and_gather_add", ShapeError,
          lax::select_and_gather_add(x4(), x23(), lax::SelectPrim::le, {2, 2}, {1, 1}, Pairs(2, {0, 0})),
          "select_and_gather_add", "tangents", "f32[4]", "f32[2,3]"),
      BAD("minijax::lax::select_and_gather_add", ValueError,
          lax::select_and_gather_add(x23(), x23(), lax::SelectPrim::le, {2, -1}, {1, 1}, Pairs(2, {0, 0})),
          "select_and_gather_add", "window_dimensions", "(2, -1)"),
      // nn: window_shape of the wrong length (naming it and x), strides that do not match it, a
      // bias of the wrong shape, a layout that is not N..C or NC...
      BAD("minijax::nn::max_pool", ValueError, nn::max_pool(x23(), {2, 2}), "nn::max_pool", "window_shape",
          "(2, 2)", "f32[2,3]"),
      BAD("minijax::nn::max_pool", ValueError, nn::max_pool(iota_f32({1, 4, 4, 2}), {2, 2}, {2}),
          "nn::max_pool", "strides", "(2,)", "(2, 2)"),
      BAD("minijax::nn::avg_pool", ValueError, nn::avg_pool(iota_f32({4, 2}), {2, 2, 2}), "nn::avg_pool",
          "window_shape", "(2, 2, 2)", "f32[4,2]"),
      BAD("minijax::nn::avg_pool", ShapeError, nn::avg_pool(iota_f32({1, 2, 2, 1}), {3, 3}), "nn::avg_pool",
          "larger than the padded input"),
      BAD("minijax::nn::conv", ValueError,
          nn::conv(iota_f32({1, 4, 4, 2}), iota_f32({3, 3, 2, 4}), {}, "SAME",
                   nn::ConvOptions{.layout = "NHW"}),
          "nn::conv", "layout", "NHW", "f32[1,4,4,2]"),
      BAD("minijax::nn::conv", ShapeError,
          nn::conv(iota_f32({1, 4, 4, 2}), iota_f32({3, 3, 2, 4}), {}, "SAME",
                   nn::ConvOptions{.bias = iota_f32({3})}),
          "nn::conv", "bias", "f32[3]"),
  };
}

}  // namespace bad_input

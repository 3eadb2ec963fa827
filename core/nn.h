// minijax nn: convolution and pooling layers' functions for users (minijax's conv wrapper,
// flax.linen's max_pool and avg_pool), over lax's conv_general_dilated and reduce_window.
#pragma once
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/convolution.h"

namespace minijax::nn {

/// The options of nn::conv beyond strides and padding.
struct ConvOptions {
  /// "NHWC" (an HWIO kernel; the default, as flax) or "NCHW" (an OIHW kernel), with as many
  /// spatial letters as the input has spatial dimensions ("NWC"/"NCW", "NDHWC"/"NCDHW" work too).
  std::string layout = "NHWC";
  std::vector<int64_t> rhs_dilation;  ///< per spatial dimension; empty: all 1
  int64_t feature_group_count = 1;
  /// Added along the output's feature dimension: shape [out features].
  std::optional<Array> bias;
};

/// A convolution layer's function: x [batch, spatial..., in features] (NHWC) with kernel w
/// [window..., in features / groups, out features] (HWIO), or NCHW with OIHW, as
/// conv_general_dilated with those dimension numbers; `strides` per spatial dimension (empty:
/// all 1), `padding` as lax's ("SAME" by default, as flax's Conv). Errors as
/// conv_general_dilated, naming nn::conv; a bias of the wrong shape is a ShapeError.
Array conv(const Array& x, const Array& w, const std::vector<int64_t>& strides = {},
           const lax::Padding& padding = "SAME", const ConvOptions& options = {},
           std::source_location loc = std::source_location::current());

/// flax.linen.max_pool: x [batch, spatial..., features] (or without the batch dimension), the
/// maximum over each window of window_shape (one size per spatial dimension), moved by strides
/// (empty: all 1; otherwise one per entry of window_shape), padding "VALID" by default (padding
/// counts as -inf; explicit padding is one (low, high) pair per spatial dimension). As in flax,
/// the dims of x before its last len(window_shape) + 1 are batch dims (none, one or several).
/// Ties go to the first element in window order (in the gradient). Throws ValueError naming both
/// when window_shape has more entries than x has dims before its features (or strides or padding
/// pairs do not match it); other errors as reduce_window_max, prefixed "nn::max_pool: ".
Array max_pool(const Array& x, const std::vector<int64_t>& window_shape, const std::vector<int64_t>& strides = {},
               const lax::Padding& padding = "VALID", std::source_location loc = std::source_location::current());

/// flax.linen.avg_pool: the mean over each window; with count_include_pad the sum is divided by
/// the window's size, otherwise by the number of elements of x (not padding) in the window.
/// Integer x gives an f32 mean (true division, as jnp). Errors as max_pool.
Array avg_pool(const Array& x, const std::vector<int64_t>& window_shape, const std::vector<int64_t>& strides = {},
               const lax::Padding& padding = "VALID", bool count_include_pad = true,
               std::source_location loc = std::source_location::current());

}  // namespace minijax::nn

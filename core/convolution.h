// minijax convolution: jax.lax's conv_general_dilated and its wrappers (conv,
// conv_with_general_padding, conv_transpose), with JAX's parameters and semantics.
#pragma once
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "core/array.h"
#include "core/aval.h"
#include "core/lax.h"

namespace minijax::lax {

/// JAX's ConvDimensionNumbers: for each operand, its dimension indices in the order (batch,
/// feature, spatial...) for lhs and out, (out feature, in feature, spatial...) for rhs (the
/// kernel). The default layout of an N-d convolution is ((0, 1, 2, ...), (0, 1, 2, ...),
/// (0, 1, 2, ...)): NCHW input, OIHW kernel, NCHW output.
struct ConvDimensionNumbers {
  std::vector<int64_t> lhs_spec, rhs_spec, out_spec;
  bool operator==(const ConvDimensionNumbers&) const = default;
};

/// The dimension numbers as the user gives them: none (the default layout), three strings as
/// jax.lax.conv_dimension_numbers takes them (("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO",
/// "NHWC"), ("NWC", "WIO", "NWC"), ...: 'N'/'C' batch/feature of lhs and out, 'O'/'I' out/in
/// feature of the kernel, any other distinct letters the spatial dimensions, matched between the
/// kernel and the operands by letter as JAX does), or explicit ConvDimensionNumbers.
struct ConvDimensionSpec {
  ConvDimensionSpec() = default;
  ConvDimensionSpec(std::string lhs, std::string rhs, std::string out)
      : strings{{std::move(lhs), std::move(rhs), std::move(out)}} {}
  ConvDimensionSpec(ConvDimensionNumbers n) : numbers(std::move(n)) {}  // NOLINT: implicit
  std::optional<std::vector<std::string>> strings;  ///< three strings, or none
  std::optional<ConvDimensionNumbers> numbers;      ///< explicit numbers, or none
};

/// jax.lax.conv_dimension_numbers: the ConvDimensionNumbers of `spec` for operands of ranks
/// lhs.size() and rhs.size(). Throws ValueError naming `dimension_numbers` and both shapes for
/// ranks that differ or are below 3, strings of the wrong length, or a repeated or unknown letter.
ConvDimensionNumbers conv_dimension_numbers(const Shape& lhs_shape, const Shape& rhs_shape,
                                            const ConvDimensionSpec& spec);

/// Padding of a windowed operation: "SAME", "VALID" or "SAME_LOWER" (resolved as JAX's
/// padtype_to_pads), or one explicit (low, high) pair per spatial (or windowed) dimension;
/// negative values crop, as in JAX.
struct Padding {
  Padding(const char* s) : mode(s) {}                  // NOLINT: implicit, as JAX's strings
  Padding(std::string s) : mode(std::move(s)) {}       // NOLINT
  Padding(std::vector<std::pair<int64_t, int64_t>> p) : pairs(std::move(p)) {}  // NOLINT
  Padding(std::initializer_list<std::pair<int64_t, int64_t>> p) : pairs(p) {}   // NOLINT
  std::string mode;                                 ///< the string, or empty for explicit pairs
  std::vector<std::pair<int64_t, int64_t>> pairs;  ///< explicit pairs (mode empty)
};

/// jax.lax.padtype_to_pads: the (low, high) pairs of padding `mode` ("SAME", "VALID",
/// "SAME_LOWER") for `in_shape` (spatial sizes) and the (dilated) `window_shape`, `strides`.
/// Throws ValueError naming the padding for an unknown string.
std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const Shape& in_shape, const Shape& window_shape,
                                                         const std::vector<int64_t>& strides,
                                                         const std::string& mode);

/// The optional parameters of conv_general_dilated, as JAX's keyword arguments.
struct ConvGeneralDilatedOptions {
  std::vector<int64_t> lhs_dilation;  ///< per spatial dimension, >= 1; empty: all 1
  std::vector<int64_t> rhs_dilation;  ///< per spatial dimension, >= 1; empty: all 1
  ConvDimensionSpec dimension_numbers;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
  /// As dot_general's (lax::DotPrecision): on the CPU every precision runs the full-precision
  /// product of the operands' dtype (bf16 operands are accumulated in f32); the value is kept in
  /// the equation's params and changes no result.
  DotPrecision precision;
  /// The result's dtype (JAX's preferred_element_type): none means the operands' dtype. A float
  /// operand dtype allows a float result at least as wide (bf16 -> f32, f32 -> f64 ...); JAX's
  /// refusals are a TypeError naming both dtypes.
  std::optional<DType> preferred_element_type;
};

/// jax.lax.conv_general_dilated: the general N-d convolution (cross-correlation, as XLA's
/// ConvGeneralDilated) of lhs [batch, in features, spatial...] (in the layout of
/// dimension_numbers) with the kernel rhs [out features, in features / feature_group_count,
/// window...]. window_strides has one stride per spatial dimension; lhs_dilation dilates the
/// input (a transposed convolution), rhs_dilation the kernel (atrous); feature_group_count splits
/// the features into groups (depthwise when it equals the input features); batch_group_count
/// splits the batch into groups whose results are the output features' groups (the kernel
/// gradient of a grouped convolution). Operands of one dtype among bf16, f32, f64 (bf16
/// accumulated in f32; integer dtypes run too, wrapping). Output spatial size per dimension:
/// floor((dilated input + low + high - dilated window) / stride) + 1.
/// Throws ValueError (bad ranks, dimension-number strings, strides, dilations or padding, naming
/// the parameter), ShapeError (feature or batch sizes that do not divide, a window larger than
/// the padded input, naming both shapes), TypeError (operand dtypes that differ, or a
/// preferred_element_type JAX refuses), each naming conv_general_dilated and the call site.
Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
                           const Padding& padding, const ConvGeneralDilatedOptions& options = {},
                           std::source_location loc = std::source_location::current());

/// jax.lax.conv: conv_general_dilated with the default (NCHW, OIHW, NCHW) layout, no dilation and
/// one group.
Array conv(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides, const Padding& padding,
           const DotPrecision& precision = {},
           std::optional<DType> preferred_element_type = std::nullopt,
           std::source_location loc = std::source_location::current());

/// jax.lax.conv_with_general_padding: conv with lhs and rhs dilation (empty: all 1).
Array conv_with_general_padding(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
                                const Padding& padding, const std::vector<int64_t>& lhs_dilation,
                                const std::vector<int64_t>& rhs_dilation,
                                const DotPrecision& precision = {},
                                std::optional<DType> preferred_element_type = std::nullopt,
                                std::source_location loc = std::source_location::current());

/// The optional parameters of conv_transpose, as JAX's keyword arguments.
struct ConvTransposeOptions {
  std::vector<int64_t> rhs_dilation;  ///< empty: all 1
  ConvDimensionSpec dimension_numbers;
  /// Flip the kernel's spatial axes and swap its input and output feature dimensions (the
  /// gradient of conv_general_dilated, as in TensorFlow's conv2d_transpose).
  bool transpose_kernel = false;
  DotPrecision precision;
  std::optional<DType> preferred_element_type;
};

/// jax.lax.conv_transpose: the transposed ("deconvolution") convolution of lhs with rhs, as
/// conv_general_dilated with lhs_dilation = strides and JAX's _conv_transpose_padding for the
/// "SAME"/"VALID" strings (explicit pairs are passed through). Errors as conv_general_dilated.
Array conv_transpose(const Array& lhs, const Array& rhs, const std::vector<int64_t>& strides, const Padding& padding,
                     const ConvTransposeOptions& options = {},
                     std::source_location loc = std::source_location::current());

}  // namespace minijax::lax

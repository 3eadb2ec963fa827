// minijax windowed reductions: jax.lax's reduce_window (generic, with a body) and its monoid
// forms reduce_window_sum/max/min, and the two primitives their derivatives need.
#pragma once
#include <cstdint>
#include <functional>
#include <source_location>
#include <vector>

#include "core/array.h"
#include "core/convolution.h"

namespace minijax::lax {

/// jax.lax.reduce_window with the add monoid: each output element is the sum over one window of
/// x padded (with zeros) by `padding` and dilated by `base_dilation` (holes are zeros), the window
/// of shape window_dimensions dilated by window_dilation, moved by window_strides. Every vector
/// has x's rank (base_dilation and window_dilation: empty means all 1); padding is per dimension
/// or "SAME"/"VALID" (resolved as padtype_to_pads on x's shape). Output size per dimension:
/// floor((dilated x + low + high - dilated window) / stride) + 1. Any numeric dtype.
/// Throws ValueError (a vector of the wrong length, a value <= 0, an unknown padding string),
/// ShapeError (a window larger than the padded input, naming both), naming the function and the
/// call site.
Array reduce_window_sum(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const Padding& padding,
                        const std::vector<int64_t>& base_dilation = {}, const std::vector<int64_t>& window_dilation = {},
                        std::source_location loc = std::source_location::current());
/// reduce_window with max: padding and holes are -inf (the dtype's lowest for integers). Errors as
/// reduce_window_sum.
Array reduce_window_max(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const Padding& padding,
                        const std::vector<int64_t>& base_dilation = {}, const std::vector<int64_t>& window_dilation = {},
                        std::source_location loc = std::source_location::current());
/// reduce_window with min: padding and holes are +inf (the dtype's highest for integers).
Array reduce_window_min(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const Padding& padding,
                        const std::vector<int64_t>& base_dilation = {}, const std::vector<int64_t>& window_dilation = {},
                        std::source_location loc = std::source_location::current());

/// The reducer of the generic reduce_window over n operands: (accumulators..., values...) ->
/// new accumulators..., each a scalar of its init value's dtype.
using WindowReducer = std::function<std::vector<Array>(const std::vector<Array>& acc, const std::vector<Array>& x)>;

/// jax.lax.reduce_window over several operands of one shape: init_values (scalars, one per
/// operand) start each window's accumulators and pad the operands; `computation` (traced once to
/// a jaxpr body) combines them. When the body is the add, max or min monoid with its identity as
/// the init value, the result is the reduce_window_sum/max/min primitive, as in JAX.
/// Throws TypeError naming the body's types when the body is not (scalar, scalar) -> scalar of
/// the init values' dtypes or an init value is not a scalar; other errors as reduce_window_sum.
std::vector<Array> reduce_window(const std::vector<Array>& operands, const std::vector<Array>& init_values,
                                 const WindowReducer& computation, const std::vector<int64_t>& window_dimensions,
                                 const std::vector<int64_t>& window_strides, const Padding& padding,
                                 const std::vector<int64_t>& base_dilation = {},
                                 const std::vector<int64_t>& window_dilation = {},
                                 std::source_location loc = std::source_location::current());
/// The one-operand reduce_window: computation(acc, x) -> acc.
Array reduce_window(const Array& operand, const Array& init_value,
                    const std::function<Array(const Array&, const Array&)>& computation,
                    const std::vector<int64_t>& window_dimensions, const std::vector<int64_t>& window_strides,
                    const Padding& padding, const std::vector<int64_t>& base_dilation = {},
                    const std::vector<int64_t>& window_dilation = {},
                    std::source_location loc = std::source_location::current());

/// Which element a max or min window selects: "ge" (the first maximum in window order, as XLA's
/// ge selector) or "le" (the first minimum).
enum class SelectPrim { ge, le };

/// JAX's _select_and_scatter_add: for each window of `operand` (the windows of
/// reduce_window_max/min with these parameters), adds the window's `source` element (source has
/// the windowed result's shape) at the position the selector picks (ties: the first in window
/// order); the result has operand's shape. Errors as reduce_window_sum, and ShapeError when
/// source's shape is not the windowed shape.
Array select_and_scatter_add(const Array& source, const Array& operand, SelectPrim select_prim,
                             const std::vector<int64_t>& window_dimensions, const std::vector<int64_t>& window_strides,
                             const std::vector<std::pair<int64_t, int64_t>>& padding,
                             const std::vector<int64_t>& base_dilation = {},
                             const std::vector<int64_t>& window_dilation = {},
                             std::source_location loc = std::source_location::current());
/// JAX's _select_and_gather_add: for each window of `operand`, the element of `tangents` (operand's
/// shape) at the position the selector picks; the result has the windowed shape. Errors as
/// select_and_scatter_add.
Array select_and_gather_add(const Array& tangents, const Array& operand, SelectPrim select_prim,
                            const std::vector<int64_t>& window_dimensions, const std::vector<int64_t>& window_strides,
                            const std::vector<std::pair<int64_t, int64_t>>& padding,
                            const std::vector<int64_t>& base_dilation = {},
                            const std::vector<int64_t>& window_dilation = {},
                            std::source_location loc = std::source_location::current());

}  // namespace minijax::lax

// minijax window geometry of the windowed reductions (reduce_window*, select_and_*): the checks
// of the five window params against an operand, padding strings, output shapes, window walks.
#pragma once
#include <cstdint>
#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include "core/aval.h"
#include "core/convolution.h"
#include "core/views/windowed.h"

namespace minijax::window_detail {

/// "(1, 2)" (one value: "(1,)"), as JAX prints tuples.
std::string ints_str(const std::vector<int64_t>& v);
/// "((0, 0), (1, 1))" of a flattened padding (low0, high0, low1, ...).
std::string pads_str(const std::vector<int64_t>& flat);

/// The windowed result's shape of an operand `x` under the window `w` (JAX's
/// _common_reduce_window_shape_rule and reduce_window_shape_tuple): per dimension
/// floor((dilated x + low + high - dilated window) / stride) + 1. Throws ValueError for a param
/// whose length is not x's rank (padding: number of pairs) or with a value <= 0 (window,
/// strides, dilations), naming the param and its value; ShapeError for padding that crops a
/// dimension below zero or a dilated window larger than the padded input, naming both shapes.
Shape window_output_shape(const ShapedArray& x, const WindowParams& w);

/// The checked WindowParams of a lax function `fn` for operand `x`: empty base_dilation and
/// window_dilation mean all 1; a padding string is resolved as JAX's reduce_window resolves it
/// (lax::padtype_to_pads on x's shape and the dilated window). Errors as window_output_shape, and
/// ValueError for an unknown padding string, each prefixed "fn: " and raised at `loc`.
WindowParams resolve_window(const char* fn, const ShapedArray& x,
                            const std::vector<int64_t>& window_dimensions,
                            const std::vector<int64_t>& window_strides, const lax::Padding& padding,
                            const std::vector<int64_t>& base_dilation,
                            const std::vector<int64_t>& window_dilation, std::source_location loc);

/// Walks every output element of the window `w` over an operand of `shape` (the window already
/// checked): f(o, offs) for o = 0, 1, ... (row-major over the output shape), offs[k] the operand
/// element (row-major offset) under window element k (row-major over window_dimensions), or -1
/// where the window element lies on padding or on a base-dilation hole.
void for_each_window(const Shape& shape, const WindowParams& w,
                     const std::function<void(int64_t o, const int64_t* offs)>& f);

/// The number of elements of one window (the product of window_dimensions).
int64_t window_size(const WindowParams& w);

}  // namespace minijax::window_detail

// minijax typed params of the windowed primitives: conv_general_dilated, the reduce_window family
// and select_and_scatter_add / select_and_gather_add, as JAX names their params.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/jaxpr.h"
#include "core/lax.h"
#include "core/params.h"
#include "core/primitive.h"

namespace minijax {

/// conv_general_dilated, as JAX's conv_general_dilated_p. Vectors have one entry per spatial
/// dimension; `padding` is flattened (low0, high0, low1, high1, ...); lhs_spec/rhs_spec/out_spec
/// are ConvDimensionNumbers' three tuples (lax::ConvDimensionNumbers). `precision` is None or an
/// (lhs, rhs) pair as dot_general's; `preferred_element_type` is None or a dtype.
/// Printed: `conv_general_dilated[batch_group_count=1 feature_group_count=1 lhs_dilation=(1, 1)
/// lhs_spec=(0, 3, 1, 2) ...]`.
struct ConvParams {
  std::vector<int64_t> window_strides, padding, lhs_dilation, rhs_dilation;
  std::vector<int64_t> lhs_spec, rhs_spec, out_spec;
  int64_t feature_group_count = 1, batch_group_count = 1;
  std::optional<std::pair<lax::Precision, lax::Precision>> precision;
  std::optional<DType> preferred_element_type;
  int64_t num_spatial() const { return int64_t(window_strides.size()); }
  /// (low, high) of spatial dimension i.
  int64_t pad_lo(int64_t i) const { return padding[size_t(2 * i)]; }
  int64_t pad_hi(int64_t i) const { return padding[size_t(2 * i + 1)]; }
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ConvParams from(const Params& p);
  Params to_params() const;
};
ConvParams conv_params(const Eqn& e);

/// The window of reduce_window_sum/max/min, reduce_window, select_and_scatter_add and
/// select_and_gather_add: one entry per operand dimension; `padding` flattened (low0, high0, ...).
struct WindowParams {
  std::vector<int64_t> window_dimensions, window_strides, padding, base_dilation, window_dilation;
  int64_t rank() const { return int64_t(window_dimensions.size()); }
  int64_t pad_lo(int64_t i) const { return padding[size_t(2 * i)]; }
  int64_t pad_hi(int64_t i) const { return padding[size_t(2 * i + 1)]; }
  /// Reads the five window params of any windowed primitive (no identity check).
  static WindowParams from(const Params& p);
  /// Writes the five params into `p`.
  void write(Params& p) const;
  bool operator==(const WindowParams&) const = default;
};

/// reduce_window_sum, reduce_window_max, reduce_window_min: the window only.
struct ReduceWindowMonoidParams {
  WindowParams window;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ReduceWindowMonoidParams from(const Params& p);
  Params to_params() const;
};
ReduceWindowMonoidParams reduce_window_monoid_params(const Eqn& e);
/// The monoid of a reduce_window_sum/max/min equation (ValueError for any other equation).
enum class WindowMonoid { sum, max, min };
WindowMonoid window_monoid(const Eqn& e);

/// reduce_window (generic): the body `jaxpr` (closed: (acc..., x...) -> acc..., scalars) and the
/// window; operands are (operands..., init_values...), as JAX's reduce_window_p.
struct ReduceWindowParams {
  ClosedJaxprPtr jaxpr;
  WindowParams window;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ReduceWindowParams from(const Params& p);
  Params to_params() const;
};
ReduceWindowParams reduce_window_params(const Eqn& e);

/// select_and_scatter_add (operands: source, operand) and select_and_gather_add (operands:
/// tangents, operand): `select_prim` is "ge" (max windows) or "le" (min windows).
struct SelectAndWindowParams {
  std::string select_prim;
  WindowParams window;
  /// select_prim is "ge": the windows of a reduce_window_max (the first maximum is selected).
  bool selects_maximum() const { return select_prim == "ge"; }
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static SelectAndWindowParams from(const Params& p);
  Params to_params() const;
};
SelectAndWindowParams select_and_window_params(const Eqn& e);

}  // namespace minijax

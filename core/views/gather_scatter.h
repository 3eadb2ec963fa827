// minijax typed views of gather's and the scatter family's params (dimension numbers, slice sizes,
// flags, mode, fill value) for the layers outside core/primitives (see core/views/view.h).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/gather_scatter_params.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/views/view.h"

namespace minijax {

/// gather: JAX's GatherDimensionNumbers, `slice_sizes`, the two promises, the out-of-range
/// `mode` and the FILL_OR_DROP `fill_value` (nullopt: None, the dtype's default). Absent flags
/// read as False and an absent mode as PROMISE_IN_BOUNDS (texts written before they existed).
struct GatherParams {
  lax::GatherDimensionNumbers dimension_numbers;
  std::vector<int64_t> slice_sizes;
  bool indices_are_sorted = false, unique_indices = false;
  lax::GatherScatterMode mode = lax::GatherScatterMode::PROMISE_IN_BOUNDS;
  std::optional<double> fill_value;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static GatherParams from(const Params& p);
  Params to_params() const;
  lax::GatherOptions options() const { return {indices_are_sorted, unique_indices, mode, fill_value}; }
};
GatherParams gather_params(const Eqn& e);

/// scatter, scatter_add, scatter_mul, scatter_min, scatter_max: JAX's ScatterDimensionNumbers,
/// the two promises and the `mode`.
struct ScatterParams {
  lax::ScatterDimensionNumbers dimension_numbers;
  bool indices_are_sorted = false, unique_indices = false;
  lax::GatherScatterMode mode = lax::GatherScatterMode::PROMISE_IN_BOUNDS;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ScatterParams from(const Params& p);
  Params to_params() const;
  lax::ScatterOptions options() const { return {indices_are_sorted, unique_indices, mode}; }
};
ScatterParams scatter_params(const Eqn& e);

/// The scatter family's primitive names, in one place: scatter_add first, then those registered.
const std::vector<const char*>& scatter_primitive_names();

}  // namespace minijax

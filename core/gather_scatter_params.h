// minijax gather's and the scatters' equation params: how the dimension numbers and options are
// stored in an equation. Internal: the primitives, views, rules and parser read them.
#pragma once
#include <source_location>
#include <vector>

#include "core/gather_scatter.h"
#include "core/params.h"

namespace minijax::lax {

/// gather's and the scatters' `dimension_numbers` parameter: one object printed as JAX prints
/// the NamedTuple, `GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), ...)`
/// (ScatterDimensionNumbers likewise), read back by the jaxpr parser.
Param gather_dimension_numbers_param(const GatherDimensionNumbers& dims);
Param scatter_dimension_numbers_param(const ScatterDimensionNumbers& dims);
/// The dimension numbers of a gather (scatter) equation's params; ValueError if absent or malformed.
GatherDimensionNumbers gather_dimension_numbers(const Params& params);
ScatterDimensionNumbers scatter_dimension_numbers(const Params& params);
/// A gather equation's full params (JAX's keys: dimension_numbers, fill_value, indices_are_sorted,
/// mode, slice_sizes, unique_indices).
Params gather_params(const GatherDimensionNumbers& dims, const std::vector<int64_t>& slice_sizes,
                     const GatherOptions& options);
/// A scatter equation's full params (dimension_numbers, indices_are_sorted, mode, unique_indices).
Params scatter_params(const ScatterDimensionNumbers& dims, const ScatterOptions& options);
/// ValueError naming `fn` and the value, at `loc`, for a GatherScatterMode outside the enum.
void check_gather_scatter_mode(const char* fn, GatherScatterMode mode, std::source_location loc);

/// The gather that reads back what a scatter with `dims` writes (JAX's mirrored numbers, as in
/// _scatter_add_transpose_rule) and its slice sizes: 1 on inserted and batching dims, the
/// updates' window sizes elsewhere.
GatherDimensionNumbers mirrored_gather_dims(const ScatterDimensionNumbers& dims);
std::vector<int64_t> scatter_slice_sizes(const ScatterDimensionNumbers& dims, size_t operand_rank,
                                         const Shape& updates_shape);
/// The scatter that writes where a gather with `dims` reads (_gather_transpose_rule's numbers).
ScatterDimensionNumbers mirrored_scatter_dims(const GatherDimensionNumbers& dims);

}  // namespace minijax::lax

// minijax resharding planner internals shared by its two sources (not a public header).
// Owns the declarations of the reduced-data planner and the partial-sum (unreduced) planner.
#pragma once
#include <source_location>

#include "sharding/plan_reshard.h"

namespace minijax::detail {

/// plan_reshard for validated shardings without unreduced axes (one step; see plan_reshard).
ReshardPlan plan_reduced(const Sharding& src, const Sharding& dst, const ShapedArray& aval,
                         std::source_location loc);
/// plan_reshard for a validated source with unreduced axes and a reduced target: the cheapest
/// of all_reduce (+ reshard) and reduce_scatter onto each dim in each axis order (+ reshard).
ReshardPlan plan_unreduced(const Sharding& src, const Sharding& dst, const ShapedArray& aval,
                           std::source_location loc);

}  // namespace minijax::detail

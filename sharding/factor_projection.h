// minijax factor projection: how the axes sharding one array dim are dealt to that dim's factors
// (Shardy's projection); shared by propagate_shardings and partition_spmd's rule-agreement check.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sharding/mesh.h"
#include "sharding/sharding.h"

namespace minijax {

/// (pre_size, size) of `a` in Shardy's sub-axis convention; a whole axis of size n is (1, n).
/// ShardingError if the axis is not in `m`.
std::pair<int64_t, int64_t> axis_pre_size(const AxisRef& a, const Mesh& m);

/// The ref of axis `name` covering (pre, size): the whole axis when pre == 1 and size is the
/// axis size, else the sub-axis "name":(pre)size. ShardingError if the axis is not in `m`.
AxisRef axis_ref_of(const std::string& name, int64_t pre, int64_t size, const Mesh& m);

/// Deals `axes` (one dim's sharding, major first) to the dim's `factors` (ids into
/// `factor_sizes`, major first), as Shardy's projection does: a factor takes whole axes while
/// they divide what is left of its size, and the major gcd-sized part of an axis it can only
/// take partly (a sub-axis); the rest goes on to the next factor. The last factor keeps
/// whatever is left (uneven shards). An axis no factor can take a part of ends the projection
/// (the dim's remaining axes are not dealt). Returns one axis list per factor. E.g. ["x"] with
/// "x" of size 4 on factors of sizes (2, 2): [["x":(1)2], ["x":(2)2]].
std::vector<std::vector<AxisRef>> project_dim_axes(const std::vector<AxisRef>& axes,
                                                   const std::vector<int>& factors,
                                                   const std::vector<int64_t>& factor_sizes,
                                                   const Mesh& m);

}  // namespace minijax

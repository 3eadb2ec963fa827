// minijax collective device groups: which mesh positions a collective over some mesh axes joins,
// and each device's rank in its group (shared by run_spmd and the static traffic model).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/collectives.h"
#include "sharding/mesh.h"

namespace minijax {

/// The groups of a collective over `axes` on a mesh: the devices sharing every mesh coordinate
/// outside `axes` form one group; inside a group a device's rank is its coordinates over `axes`
/// read row-major in the order the axes are named (as XLA's replica groups of Shardy's
/// collectives; `axis_index` over the same axes yields that rank).
struct CollectiveGroups {
  int64_t size = 1;                          ///< devices per group: product of the axes' sizes
  std::vector<std::vector<size_t>> members;  ///< group -> rank -> mesh position (device_ids order)
  std::vector<int64_t> rank;                 ///< mesh position -> rank in its group
};

/// The groups of a collective over `axes` (each a name of `mesh`; empty: one device per group)
/// on `mesh`. Groups are numbered in order of their first member's mesh position. Throws
/// ShardingError (naming the mesh's axes) for an axis `mesh` lacks.
CollectiveGroups collective_groups(const Mesh& mesh, const AxisNames& axes);

}  // namespace minijax

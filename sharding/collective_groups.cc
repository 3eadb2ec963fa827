// minijax collective device groups: the groups and ranks of a collective over mesh axes
// (collective_groups), one definition for run_spmd and collective_traffic.
#include "sharding/collective_groups.h"
#include "sharding/collective_traffic.h"

#include <map>

namespace minijax {

CollectiveGroups collective_groups(const Mesh& mesh, const AxisNames& axes) {
  CollectiveGroups g;
  std::vector<int64_t> idx;
  for (auto& a : axes) {
    idx.push_back(mesh.axis_index(a));
    g.size *= mesh.shape[size_t(idx.back())];
  }
  std::map<size_t, size_t> group_of_key;  // position of the group's device at rank 0 -> group
  g.rank.resize(mesh.num_devices());
  for (size_t p = 0; p < mesh.num_devices(); ++p) {
    std::vector<int64_t> c = mesh.coords_of(p);
    int64_t r = 0;
    for (int64_t i : idx) {
      r = r * mesh.shape[size_t(i)] + c[size_t(i)];
      c[size_t(i)] = 0;
    }
    auto [it, fresh] = group_of_key.emplace(mesh.position_of(c), g.members.size());
    if (fresh) g.members.emplace_back(size_t(g.size));
    g.members[it->second][size_t(r)] = p;
    g.rank[p] = r;
  }
  return g;
}

}  // namespace minijax

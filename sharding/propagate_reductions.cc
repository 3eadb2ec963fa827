// minijax sharding propagation: which mesh axes a reduction factor may keep (partial sums only
// over whole mesh axes, which the all_reduce/reduce_scatter collectives take).
#include <algorithm>
#include <map>
#include <string>

#include "sharding/propagate_detail.h"

namespace minijax::prop_detail {

bool keep_whole_reductions(Assign& s, const FactorRule& r, const Mesh& m) {
  bool changed_any = false;
  for (bool changed = true; changed;) {
    changed = false;
    // Per axis name, the product of the pieces the reduction factors hold together.
    std::map<std::string, int64_t> held;
    for (int f : r.reduction_factors)
      for (const AxisRef& a : s[size_t(f)]) {
        auto [it, fresh] = held.emplace(a.name, 1);
        it->second *= a.resolved_size(m);
      }
    for (auto& [name, size] : held) {
      if (size == m.axis_size(name)) continue;  // whole: its partial sums are reducible
      for (int f : r.reduction_factors) {
        Axes& axes = s[size_t(f)];
        auto it = std::find_if(axes.begin(), axes.end(), [&](const AxisRef& a) { return a.name == name; });
        if (it == axes.end()) continue;
        axes.erase(it, axes.end());  // a factor's axes are major first: keep the prefix
        changed = true;
      }
    }
    changed_any = changed_any || changed;
  }
  return changed_any;
}

}  // namespace minijax::prop_detail

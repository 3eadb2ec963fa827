// minijax sharding propagation, output pass: the cheapest reduced sharding for each program
// output left as partial sums (all_reduce, or reduce_scatter onto a dim when only returned).
#include "sharding/propagate_outputs.h"

#include <utility>

namespace minijax::prop_detail {

size_t reduce_outputs(State& st, const Jaxpr& jaxpr,
                      const std::vector<std::optional<Sharding>>& out_shardings) {
  const Mesh& m = *st.mesh;
  size_t fixed = 0;
  for (size_t k = 0; k < jaxpr.outvars.size(); ++k) {
    if (!out_shardings.empty() && out_shardings[k]) continue;
    Var v = atom_var(jaxpr.outvars[k]);
    if (!v.defined() || st.user.at(v)) continue;
    const Sharding from = closed_copy(st.sh.at(v));
    if (from.unreduced.empty()) continue;
    const ShapedArray& aval = v.aval();
    bool read = false;
    for (auto& e : jaxpr.eqns)
      for (auto& a : e.inputs) read = read || atom_var(a) == v;
    Sharding same = from;
    same.unreduced.clear();
    std::vector<Sharding> targets{same};
    int64_t u = 1;
    for (auto& a : from.unreduced) u *= a.resolved_size(m);
    for (size_t d = 0; d < from.dims.size() && !read; ++d) {
      int64_t n = from.dims[d].num_shards(m) * u;
      if (aval.shape[d] % n != 0) continue;
      Sharding t = same;
      t.dims[d].axes.insert(t.dims[d].axes.end(), from.unreduced.begin(), from.unreduced.end());
      t.dims[d].axes = normalize(t.dims[d].axes, m);
      targets.push_back(std::move(t));
    }
    std::optional<std::pair<int64_t, int64_t>> best;
    size_t chosen = 0;
    for (size_t i = 0; i < targets.size(); ++i) {
      auto cost = reshard_cost(from, targets[i], aval);
      if (cost && (!best || *cost < *best)) best = cost, chosen = i;
    }
    st.sh[v] = targets[chosen];
    st.user[v] = true;
    ++fixed;
  }
  return fixed;
}

}  // namespace minijax::prop_detail

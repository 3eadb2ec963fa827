// minijax sharding propagation: the cost of a reshard placement (elements received per device
// and in total), by plan_reshard's cheapest plan.
#include "sharding/plan_reshard.h"
#include "sharding/propagate_detail.h"

namespace minijax::prop_detail {

// Cost of changing `from` into `to` for `aval`, by plan_reshard: partial sums are reduced by
// the planner's cheapest reduction (a reduce_scatter onto an intermediate, or the two-phase
// all_reduce) followed by the move of reduced data. nullopt when `to` needs partial sums `from`
// lacks.
std::optional<std::pair<int64_t, int64_t>> reshard_cost(const Sharding& from, const Sharding& to,
                                                        const ShapedArray& aval) {
  if (!to.unreduced.empty() && to.unreduced != from.unreduced) return std::nullopt;
  if (!to.unreduced.empty()) {  // same partial sums: a plan over the dims only
    Sharding f = from, t = to;
    f.unreduced.clear();
    t.unreduced.clear();
    return reshard_cost(f, t, aval);
  }
  Sharding f = from, t = to;
  t.memory_kind = f.memory_kind;  // a memory move (an output's out_sharding) is no collective
  for (auto& d : f.dims) d.closed = true, d.priority = -1;
  for (auto& d : t.dims) d.closed = true, d.priority = -1;
  f.replicated.clear();
  t.replicated.clear();
  ReshardPlan plan = plan_reshard(f, t, aval);
  return std::pair<int64_t, int64_t>{plan.max_received(), plan.total_received()};
}

}  // namespace minijax::prop_detail

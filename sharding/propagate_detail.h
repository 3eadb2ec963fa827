// minijax sharding propagation internals shared by propagate_shardings.cc and propagate_bodies.cc:
// the propagation state and the factor projection / merge / growth / reshard-cost helpers.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/jaxpr.h"
#include "sharding/mesh.h"
#include "sharding/sharding.h"
#include "sharding/sharding_rule.h"

namespace minijax::prop_detail {

using Axes = std::vector<AxisRef>;
using Assign = std::vector<Axes>;  // factor -> axes (major first)

/// Every variable's current sharding, and whether the user fixed it.
struct State {
  std::shared_ptr<const Mesh> mesh;
  std::unordered_map<Var, Sharding, VarHash> sh;
  std::unordered_map<Var, bool, VarHash> user;
  /// The user-priority round being propagated (sharding/propagate_priorities.h); -1: the last
  /// round, where every sharding is an opinion.
  int64_t round = -1;
};

/// One operand (with a variable) or result of an equation, as its rule sees it.
struct Tensor {
  bool is_result = false;
  size_t index = 0;
  Var var;
  const std::vector<std::vector<int>>* dims = nullptr;
};

/// The operands (variables only) and results of `e` under rule `r`.
std::vector<Tensor> tensors_of(const Eqn& e, const FactorRule& r);
/// Shardy's per-factor merge of the shardings of every tensor of `e` (see propagate_shardings.h).
Assign merged_assignment(const State& st, const std::vector<Tensor>& ts, const FactorRule& r);
/// The sharding tensor `t` needs under assignment `s` (dims closed; results unreduced over the
/// sharded reduction factors).
Sharding needed(const Sharding& base, const Tensor& t, const FactorRule& r, const Assign& s,
                const Mesh& m);
/// One propagation step over equation `e`: merge, then grow every non-user tensor. Returns
/// whether anything changed.
bool update_eqn(State& st, const Eqn& e, const FactorRule& r);
/// Keeps in the reduction factors of `s` only whole mesh axes: an axis the reduction factors
/// hold only part of together (a sub-axis such as "x":(2)2 that a reshape split off, with no
/// other reduction factor holding the rest) is cut from each of them (its axes from that piece
/// on), so results are never unreduced over a sub-axis (the all_reduce/reduce_scatter
/// collectives group devices by whole axes); the operands are then resharded before the
/// equation. Returns whether `s` changed.
bool keep_whole_reductions(Assign& s, const FactorRule& r, const Mesh& m);
/// Grows the open dims of `cur` towards `want` (extensions only, no axis twice).
bool grow(Sharding& cur, const Sharding& want, const Mesh& m);
/// Same dims' axes and unreduced axes (closedness and priorities ignored).
bool same_layout(const Sharding& a, const Sharding& b);
/// `s` with every dim closed.
Sharding closed_copy(Sharding s);
/// Adjacent sub-axes of one axis merged ("x":(1)2, "x":(2)2 -> "x").
Axes normalize(const Axes& in, const Mesh& m);
/// Whether two axis refs overlap (same axis, intersecting sub-axis ranges).
bool overlaps_any(const AxisRef& a, const Axes& used, const Mesh& m);
/// (largest per-device receive, total receive) in elements of changing `from` into `to` for
/// `aval` (partial sums all-reduced first at the bound, then plan_reshard); nullopt when
/// `to` needs partial sums `from` lacks.
std::optional<std::pair<int64_t, int64_t>> reshard_cost(const Sharding& from, const Sharding& to,
                                                        const ShapedArray& aval);

}  // namespace minijax::prop_detail

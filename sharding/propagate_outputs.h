// minijax sharding propagation, output pass: program outputs that propagation left as partial
// sums (and the user gave no sharding) get the cheapest reduced sharding, so they are returned reduced.
#pragma once
#include <optional>
#include <vector>

#include "core/jaxpr.h"
#include "sharding/propagate_detail.h"
#include "sharding/sharding.h"

namespace minijax::prop_detail {

/// Runs after the propagation fixed point, before reshard placement. For each program output `v`
/// (a variable) that is unreduced over axes U in `st`, has no entry in `out_shardings` (empty or
/// nullopt) and was not fixed by the user (an in_sharding or sharding_constraint that asks for
/// partial sums keeps them, as a given out_sharding does), fixes `v` (as if the user had) to
/// the reduced target that plan_reshard says is cheapest to reach from its partial sums
/// (largest per-device receive, then total receive, then candidate order):
///  - the same dims without U (an all_reduce over U);
///  - only when no equation reads `v` (it is only returned): the same dims with U appended,
///    minor, to one dim d whose size the new shard count divides (a reduce_scatter over U on d),
///    dims in order.
/// Placement then costs the producing equation's conflict as any other: the reduction after it
/// (shared by every consumer), or its operands gathered on the reduction factors when cheaper.
/// Returns the number of outputs fixed. Source: JAX returns reduced values unless the output's
/// sharding asks for unreduced axes (sharding-in-types' `unreduced`).
size_t reduce_outputs(State& st, const Jaxpr& jaxpr,
                      const std::vector<std::optional<Sharding>>& out_shardings);

}  // namespace minijax::prop_detail

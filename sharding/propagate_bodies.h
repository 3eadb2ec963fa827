// minijax sharding propagation through bodies (pjit, closed_call, checkpoint, custom_jvp_call,
// custom_vjp_call, scan, while, cond): the data-flow edges tying values to body values, as Shardy.
#pragma once
#include <unordered_map>
#include <vector>

#include "sharding/propagate_detail.h"
#include "sharding/propagate_shardings.h"

namespace minijax::prop_detail {

/// Whether propagation enters the bodies of `e` (its primitive is one of the call, loop or
/// conditional primitives listed above) instead of applying a factor rule.
bool has_body(const Eqn& e);

/// The body jaxprs of `e`, in order: one for calls and scan; cond_jaxpr then body_jaxpr for
/// while; the branches for cond. Empty when `has_body(e)` is false.
std::vector<const ClosedJaxpr*> bodies_of(const Eqn& e);

/// One data-flow edge (Shardy's region-op data flow): two values that hold ONE sharding. It is
/// a synthetic equation `view` (inputs {source}, outputs {destination}) with an identity factor
/// rule, or, for scan's xs/ys (`stacked`), a rule whose length factor needs replication:
/// xs dim k+1 <-> body x dim k, body y dim k <-> ys dim k+1.
/// - enter: outer operand `operand` -> body input `body_index` (an invar of `body`); when one
///   operand enters several bodies (cond branches, while's cond and body), the `primary` one's
///   sharding is what the operand is resharded to before the equation, the others reshard at
///   their body's start;
/// - loop_back: body output `body_index` -> body input `carry_index` (scan/while carries): a
///   difference is a reshard at the body's output, once per iteration;
/// - leave: body output `body_index` (loops: the carry input `carry_index`) -> outer result
///   `result`: calls and cond reshard at the body's output, loops after the equation (once).
struct BodyEdge {
  enum Kind { enter, loop_back, leave } kind = enter;
  const Jaxpr* body = nullptr;
  size_t operand = 0, body_index = 0, carry_index = 0, result = 0;
  bool primary = true;
  bool stacked = false;
  bool loop = false;  ///< the body is a scan/while body (leave edges: reshard after the eqn)
  Eqn view;
  FactorRule rule;
};

/// The data-flow edges of equation `e` (see BodyEdge), in program order: enter, loop_back,
/// leave. Edges whose destination would be a literal are omitted.
std::vector<BodyEdge> body_edges(const Eqn& e);

/// Reshards a body's own boundaries need: at its inputs (on_input) and outputs (on_output).
struct BodyBoundary {
  std::vector<ReshardPlacement> at_input, at_output;
};

/// The reshards the edges of body equation `i` need once propagation is done (see BodyEdge for
/// where each goes): appended to `before`/`after` (the outer equation) and `bodies`.
/// Throws ShardingError at `loc` when a reshard would need partial sums its source lacks.
void place_edges(const State& st, const Eqn& e, size_t i, const std::vector<BodyEdge>& edges,
                 std::vector<ReshardPlacement>& before, std::vector<ReshardPlacement>& after,
                 std::unordered_map<const Jaxpr*, BodyBoundary>& bodies, std::source_location loc);

/// scan's length dim stays unsharded in the body's view (need replication), so xs sharded on it
/// are resharded before the loop. For each stacked enter edge whose operand holds axes R on its
/// length dim, this picks the cheapest reshard target with that dim unsharded: the operand's
/// other dims as the body x holds them, with R dropped or appended (minor) to one dim of the
/// body x that R divides and that can grow; cost as placement (largest per-device receive,
/// then total), ties to a dim whose sub-axes stay in major-first order, then to the minor-most
/// dim. Grows the body x to the winner. Returns whether any sharding changed (the caller then
/// propagates again).
bool choose_unstacked(State& st, const std::vector<const BodyEdge*>& stacked_enters);

}  // namespace minijax::prop_detail

// minijax sharding propagation: every variable of a jaxpr gets a Sharding (OpenXLA Shardy's
// docs/propagation.md), and each reshard a conflict needs is placed where it costs least.
#pragma once
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/jaxpr.h"
#include "sharding/mesh.h"
#include "sharding/sharding.h"

namespace minijax {

// propagate_shardings takes a jaxpr, optional shardings for its inputs and outputs (the user's
// in_shardings/out_shardings, all on one mesh) and returns a Sharding for every variable
// (constvars, invars and every equation output), annotating variables, not avals. Guarantees:
// user-given shardings never move (their closed dims keep their axes; open dims `{?}` may gain
// minor axes); every returned sharding is valid for its variable's shape (Sharding::check) and
// fully closed and in its variable's memory kind (an out_sharding in another memory kind, as
// jit's out_shardings may give, fixes the layout and adds a reshard at that output that moves the
// value to the asked memory; it costs no collective); an input sharding in another memory kind
// than its input is a ShardingError; a program whose shardings agree everywhere (e.g. only out_shardings, propagated
// back to the inputs) gets no reshard; every conflict left after propagation becomes exactly
// one reshard per mismatching operand or result, placed where it costs least; an operand
// reshard identical to one placed before an earlier equation (same variable, same target)
// reuses it at no cost (ReshardPlacement::shared_with), so e.g. two dynamic_slices with traced
// indices on a sharded dim gather their operand once.
//
// Algorithm (Shardy's docs/propagation.md, "Propagate shardings along factors", with user
// priorities as its "Conflict resolution hierarchy" orders them): each equation's sharding rule
// (sharding/sharding_rule.h) maps its dims to factors. For an equation, each operand and result
// sharding is projected onto the factors (the axes of a dim are dealt to its factors major
// first, splitting an axis into sub-axes by gcd where a factor takes only part of it); per
// factor the shardings of the tensors holding it are merged (all compatible -- each a prefix of
// the longest -- gives the longest; conflicting gives their longest common prefix; a closed dim
// is an opinion even when empty, an open dim only when it has axes; need-replication factors
// stay empty; an axis already used by an earlier factor truncates a later one) and projected
// back; a variable's sharding only grows (a dim's new axes must extend its old ones) and never
// changes where the user fixed it. Sharded reduction factors make the results unreduced over
// their axes. Sweeps run forward then backward over the equations until nothing changes; with
// user priorities (pN on user dims) that fixed point is reached once per priority round, lowest
// first, a user dim counting only from its own round (sharding/propagate_priorities.h).
// Then per equation, when some operand's or result's sharding differs from what one factor
// assignment needs, the candidate assignments (the one each operand and result implies, and the
// merged one) are costed: the reshards they need (operand: its sharding -> the needed one,
// before the equation; result: the computed one -> its sharding, after it), each costed by
// plan_reshard (sharding/plan_reshard.h); cost = sum of each reshard's largest per-device
// receive, ties by total elements received; the cheapest wins (first in candidate order on
// equal cost). Before placement, program outputs left as partial sums without an out_sharding
// are fixed to their cheapest reduced sharding (sharding/propagate_outputs.h): outputs are
// returned reduced unless asked. Partial sums in a result whose sharding is reduced are costed by plan_reshard's
// reduction (reduce_scatter onto the cheapest intermediate, or all_reduce, then the move);
// each candidate is also tried with its reduction factors unsharded (operands gathered).

/// One reshard the program needs: the value of `var` changes sharding from `from` to `to`,
/// at operand `index` of equation `eqn` (before it runs), or at its result `index` (after it;
/// `on_result`), or at program output `index` (`on_output`, eqn = number of equations).
struct ReshardPlacement {
  size_t eqn = 0;
  bool on_result = false;
  bool on_output = false;
  /// Inside a body only: at the start of the body, on its input `index` (a value entering one
  /// body of several in another sharding than the one it was resharded to before the equation).
  bool on_input = false;
  size_t index = 0;
  Var var;  ///< undefined for a literal program output (its `from` is replicated)
  /// `from` and `to` have the same memory kind, except at a program output whose out_sharding
  /// names another memory kind than the value's (the reshard then also moves the value there).
  Sharding from, to;
  int64_t max_received = 0;    ///< largest per-device receive (elements), from plan_reshard
  int64_t total_received = 0;  ///< elements received over all devices
  /// >= 0: the same variable is already resharded to the same `to` before equation
  /// `shared_with` (an earlier one); this placement reuses that value (no collective, cost 0).
  int64_t shared_with = -1;
};

/// One costed way of running a conflicting equation: the reshards it needs and their cost.
struct PlacementCandidate {
  std::string source;  ///< which tensor implied it: "operand 0", "result 0", "merged"
  std::vector<ReshardPlacement> reshards;
  int64_t max_received = 0;    ///< sum over reshards of the largest per-device receive
  int64_t total_received = 0;  ///< sum over reshards of the total receive
};

/// The placement decision of one equation with a conflict: every candidate and the chosen one.
struct PlacementDecision {
  size_t eqn = 0;
  std::vector<PlacementCandidate> candidates;
  size_t chosen = 0;
};

/// What propagate_shardings returns.
struct PropagationResult {
  std::unordered_map<Var, Sharding, VarHash> shardings;  ///< every variable's sharding
  std::vector<ReshardPlacement> reshards;                ///< the chosen reshards, in program order
  /// The reshards inside each body jaxpr (every body of every equation with one, recursively,
  /// keyed by the body's Jaxpr; empty lists included), in the body's program order; `eqn` and
  /// `index` refer to the body. See docs/sharding.md "Bodies".
  std::unordered_map<const Jaxpr*, std::vector<ReshardPlacement>> body_reshards;
  std::vector<PlacementDecision> decisions;              ///< equations that had conflicts
  int sweeps = 0;  ///< forward + backward sweeps run until the fixed point (each counts 1)
  /// The jaxpr with each variable's sharding, one equation a line:
  /// `{ lambda a:f32[8,4]{[{"x"}, {}]}; . let` / `    b:f32[8,4]{[{"x"}, {}]} = sin a` / ...
  /// (parameters omitted; variables named a, b, ... in order of definition: constvars,
  /// invars, equation outputs), each reshard on its own line where it happens:
  /// `    reshard b: [{"y"}, {}] -> [{}, {"y"}] (448 elements/device, 3584 total)`.
  std::string text;

  /// The sharding of `v`. ShardingError if `v` is not a variable of the jaxpr.
  const Sharding& of(const Var& v) const;
  /// The reshards of `j`: body_reshards[&j] when `j` is a body, else `reshards` (the program).
  const std::vector<ReshardPlacement>& reshards_in(const Jaxpr& j) const;
};

/// Whether propagation enters the bodies of primitive `name` instead of applying a factor rule:
/// pjit, closed_call, checkpoint, custom_jvp_call, custom_vjp_call, scan, while, cond.
bool propagation_enters_bodies(const std::string& name);

/// Propagates shardings through `jaxpr` on `mesh` (see the paragraph above for the algorithm).
/// `in_shardings` has one entry per constvar then invar (or is empty: none given);
/// `out_shardings` one per output (or empty). nullopt = unconstrained.
/// Throws ShardingError at `loc` when: the vectors have the wrong length; a given sharding is on
/// another mesh or does not fit its variable's shape (Sharding::check); an equation's primitive
/// has no sharding rule (the message names it); no candidate of a conflicting equation is valid.
/// An output sharding on a variable the user already fixed differently (an input returned, or a
/// value returned twice) is not an error: it becomes a reshard at the output (`on_output`).
/// Reshards inside scan bodies count `length` times: when a scan carry needs a reshard every
/// iteration, or a scan const is resharded inside the body, propagation also runs with that
/// carry replicated / that const fixed in the needed sharding (resharded once before the loop)
/// and keeps the cheaper result (docs/sharding.md "Bodies").
/// Equations with bodies (pjit, closed_call, checkpoint, custom_jvp_call, custom_vjp_call, scan,
/// while, cond) are entered: their values and the bodies' values are tied by data-flow edges
/// (sharding/propagate_bodies.h) and propagated to one global fixed point; each body's
/// variables are in `shardings` and its reshards in `body_reshards`.
PropagationResult propagate_shardings(
    const Jaxpr& jaxpr, const std::vector<std::optional<Sharding>>& in_shardings,
    const std::vector<std::optional<Sharding>>& out_shardings, const Mesh& mesh,
    std::source_location loc = std::source_location::current());

}  // namespace minijax

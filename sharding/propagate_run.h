// minijax sharding propagation: the state of one propagation run, shared by its phases, and its
// seeding (given shardings checked and fixed, pins, every jaxpr's rules and body edges).
#pragma once
#include <cstdint>
#include <optional>
#include <source_location>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sharding/propagate_bodies.h"
#include "sharding/propagate_detail.h"
#include "sharding/propagate_shardings.h"

namespace minijax::prop_detail {

/// A body variable fixed to a sharding for one propagation run (nullopt: replicated).
using Pin = std::pair<Var, std::optional<Sharding>>;

/// One propagation run of `jaxpr` on `mesh` (propagate_shardings.cc): what its phases read and
/// write, from seeding to the annotated result.
struct Run {
  Run(const Jaxpr& j, const Mesh& m, std::source_location l) : jaxpr(j), mesh(m), loc(l), weight{{&j, 1}} {}

  const Jaxpr& jaxpr;
  const Mesh& mesh;
  std::source_location loc;
  State st;
  /// Every jaxpr (the program, then the bodies, recursively; a shared body once), the rule of
  /// each equation without a body and the data-flow edges of each equation with one.
  std::vector<const Jaxpr*> jaxprs;
  std::unordered_map<const Jaxpr*, std::vector<FactorRule>> rules;
  std::unordered_map<const Jaxpr*, std::vector<std::vector<BodyEdge>>> edges;
  std::unordered_map<const Jaxpr*, int64_t> loop_length;  ///< scan bodies: length; while: -1
  std::unordered_map<const Jaxpr*, int64_t> weight;       ///< product of enclosing scan lengths
  /// Outputs whose variable cannot take their out_sharding: (output index, target), resharded
  /// at the output.
  std::vector<std::pair<size_t, Sharding>> output_reshards;
  /// The reshards placed before and after each equation of each jaxpr, and at body boundaries.
  std::unordered_map<const Jaxpr*, std::vector<std::vector<ReshardPlacement>>> before_of, after_of;
  std::unordered_map<const Jaxpr*, BodyBoundary> bounds;
  PropagationResult res;
};

/// Throws ShardingError at `loc` unless `in_shardings` is empty or has one entry per constvar
/// and invar of `jaxpr`, and `out_shardings` is empty or has one per outvar.
void check_sharding_counts(const Jaxpr& jaxpr, const std::vector<std::optional<Sharding>>& in_shardings,
                           const std::vector<std::optional<Sharding>>& out_shardings,
                           std::source_location loc);

/// Seeds `run.st` with the program's inputs (constvars then invars): a given sharding fixes its
/// input (checked: on the program's mesh, valid for the shape, in the input's memory kind; a
/// ShardingError at run.loc otherwise); the others start open and replicated. Then the `pinned`
/// variables are fixed (nullopt: replicated).
void seed_inputs(Run& run, const std::vector<std::optional<Sharding>>& in_shardings,
                 const std::vector<Pin>& pinned);

/// Collects every jaxpr of the program (run.jaxprs, rules, edges, loop_length, weight): each
/// equation's outputs start open and replicated, a sharding_constraint's result is fixed to its
/// (checked) sharding, a body's constvars are fixed replicated and its invars start open. Throws
/// what check_factor_rule throws for a rule that does not fit its equation.
void collect_jaxprs(Run& run);

/// Output shardings fix their variables; a variable already fixed differently (an input
/// returned, or a value returned twice), or an out_sharding in another memory kind than the
/// variable's, goes to run.output_reshards (a reshard at the output). Checks each like an input.
void fix_outputs(Run& run, const std::vector<std::optional<Sharding>>& out_shardings);

}  // namespace minijax::prop_detail

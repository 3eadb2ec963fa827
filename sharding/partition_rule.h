// minijax partition rules: how one equation is bound on its local shards when its params or its
// result depend on the global shape (sizes in params, iota's offset, a constraint's identity).
#pragma once
#include <functional>
#include <map>
#include <source_location>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/jaxpr.h"
#include "core/params.h"
#include "sharding/mesh.h"
#include "sharding/sharding.h"

namespace minijax {

/// What partition_spmd asks of a primitive beyond its factor rule (sharding_rule.h), registered
/// next to that rule (sharding/rules/*.cc, sharding/sharding_constraint.cc). A primitive without
/// one is bound on its local operands with its own params.
struct PartitionRule {
  /// The params for local operands `ops` and local results `want`: the global sizes a param
  /// names become local sizes (broadcast_in_dim's shape, slice's limits, ...). Empty: unchanged.
  std::function<Params(const Eqn& e, const std::vector<Array>& ops, const std::vector<ShapedArray>& want)>
      local_params;
  /// Binds the equation on its local operands instead of binding the primitive (the results have
  /// the avals `want`). Empty: bind the primitive.
  std::function<std::vector<Array>(const Eqn& e, const std::vector<Array>& ops,
                                   const std::vector<ShapedArray>& want, std::source_location loc)>
      bind_local;
  /// Completes local result `k` from its sharding `out` on `mesh` (iota adds the shard's first
  /// global index). Empty: the local result is the shard.
  std::function<Array(const Eqn& e, size_t k, const Array& local, const Sharding& out, const Mesh& mesh)>
      finish_local;
  /// Linear in every operand (add, sub, neg): operands holding partial sums (unreduced) over the
  /// same axes give a result holding partial sums over them. Otherwise an operand holding partial
  /// sums is a ShardingError (the partitioner checks it with the factor rule).
  bool sums_partial_sums = false;
};

/// The table of partition rules keyed by primitive name, like sharding_rules().
std::map<std::string, PartitionRule>& partition_rules();
/// The partition rule of an equation's primitive, or nullptr when it has none.
const PartitionRule* partition_rule_of(const Eqn& e);

}  // namespace minijax

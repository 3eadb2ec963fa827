// minijax sharding rules: how each primitive's operand and result dims map to shared factors
// (OpenXLA Shardy's OpShardingRuleAttr). Owns FactorRule, its text, checks and the rule table.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/aval.h"
#include "core/jaxpr.h"
#include "core/params.h"

namespace minijax {

/// How one equation's dims map to factors (Shardy's OpShardingRuleAttr).
///
/// Every operand/result dim is the product of its factors, listed major first; a dim of size 1
/// that is not tied to anything has no factors... except where a rule gives it its own size-1
/// factor (broadcast operand dims). A factor used by several dims says "these dims must be
/// sharded alike"; propagation moves axes along factors. (Shardy docs: propagation.md,
/// "OpShardingRule".)
struct FactorRule {
  /// Size of each factor; factor ids index this vector.
  std::vector<int64_t> factor_sizes;
  /// operand i, dim d -> the factors of that dim, major first (reshape may split/merge dims).
  std::vector<std::vector<std::vector<int>>> operand_dims;
  /// result i, dim d -> the factors of that dim, major first.
  std::vector<std::vector<std::vector<int>>> result_dims;
  /// Factors that appear in operands but not results (contracting dims, reduced axes): a
  /// sharding on them makes the results unreduced (partial sums).
  std::vector<int> reduction_factors;
  /// Factors that must stay unsharded (e.g. cumsum's axis, argmax's axis, sliced dims).
  std::vector<int> need_replication_factors;
  /// Empty: sharded reduction factors leave partial sums (the results unreduced). Otherwise the
  /// all_reduce reduction ("and", "or", "xor": reduce_and/or/xor's) that the partitioner applies
  /// to the equation's local results over the reduction factors' axes, so that the results are
  /// complete (never unreduced): partial results of those operations are not partial sums.
  std::string completed_by;

  /// Shardy-like text, factor names i, j, k, ... (then z_1, z_2, ... past z):
  /// `([i, j], [j, k])->([i, k]) {i=8, j=16, k=4} reduction={j}`. A dim with several factors
  /// prints them juxtaposed (`[ij, k]`), a dim with none prints `1`; `need_replication={...}`
  /// follows when non-empty, then `completed_by=or` when set.
  std::string str() const;
  /// Number of factors.
  size_t num_factors() const { return factor_sizes.size(); }
};

/// A sharding rule: (operand avals, result avals, params) -> the factor rule.
using ShardingRuleFn = std::function<FactorRule(const std::vector<ShapedArray>& in_avals,
                                                const std::vector<ShapedArray>& out_avals,
                                                const Params& params)>;

/// The table of sharding rules keyed by primitive name (filled by Registrars in sharding/rules/*.cc).
std::map<std::string, ShardingRuleFn>& sharding_rules();
/// Primitives declared as having no sharding rule, with the reason.
std::map<std::string, std::string>& no_sharding_rule_reasons();

/// The rule of a primitive on these avals. Throws ShardingError naming the primitive if it has no
/// rule (quoting the declared reason when there is one).
FactorRule sharding_rule_for(const std::string& primitive_name, const std::vector<ShapedArray>& in_avals,
                             const std::vector<ShapedArray>& out_avals, const Params& params);
/// The rule of an equation (ShardingError naming the primitive if there is none).
FactorRule sharding_rule_of(const Eqn& e);

/// Checks a rule against avals: one entry per operand/result and per dim, the factors of each dim
/// multiply to its size, factor ids are in range, every factor is used by some dim, reduction
/// factors appear in operands only, factors appear at most once per value. Throws ShardingError
/// (naming `what`) on the first violation.
void check_factor_rule(const FactorRule& rule, const std::vector<ShapedArray>& in_avals,
                       const std::vector<ShapedArray>& out_avals, const std::string& what);

}  // namespace minijax

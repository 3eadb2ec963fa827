// minijax sharding rules: the small builder the per-family rule files share (factors, dims,
// pointwise and broadcasting patterns). Internal to sharding/rules/*.cc.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/aval.h"
#include "sharding/sharding_rule.h"

namespace minijax::sharding_rules_detail {

/// Builds a FactorRule for fixed operand/result avals: one empty factor list per dim to start.
class RuleBuilder {
 public:
  RuleBuilder(const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out) {
    for (const auto& a : in) rule_.operand_dims.emplace_back(a.shape.size());
    for (const auto& a : out) rule_.result_dims.emplace_back(a.shape.size());
  }
  /// A new factor of `size`; returns its id.
  int factor(int64_t size) {
    rule_.factor_sizes.push_back(size);
    return static_cast<int>(rule_.factor_sizes.size() - 1);
  }
  /// Appends factor f (minor to those already there) to operand i's dim d / result i's dim d.
  void operand(size_t i, size_t d, int f) { rule_.operand_dims.at(i).at(d).push_back(f); }
  void result(size_t i, size_t d, int f) { rule_.result_dims.at(i).at(d).push_back(f); }
  void reduction(int f) { rule_.reduction_factors.push_back(f); }
  /// The all_reduce reduction completing the reduction factors in place (FactorRule::completed_by).
  void completed_by(std::string op) { rule_.completed_by = std::move(op); }
  void need_replication(int f) { rule_.need_replication_factors.push_back(f); }
  /// A need-replication factor owned by operand i's dim d alone (a dim whose size changes).
  int own_operand(size_t i, size_t d, int64_t size) {
    int f = factor(size);
    operand(i, d, f);
    need_replication(f);
    return f;
  }
  int own_result(size_t i, size_t d, int64_t size) {
    int f = factor(size);
    result(i, d, f);
    need_replication(f);
    return f;
  }
  FactorRule take() { return std::move(rule_); }

 private:
  FactorRule rule_;
};

/// Elementwise with NumPy broadcasting: one factor per dim of result 0; every result of the same
/// shape shares them; an operand's dims align to the result's trailing dims and share the factor
/// when the sizes agree (a size-1 operand dim broadcast to a larger one, or a rank-0 operand,
/// contributes no factor).
FactorRule elementwise_rule(const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out);

/// Axis number in [0, rank) from a possibly negative one.
inline size_t norm_axis(int64_t a, size_t rank) {
  return static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(rank) : a);
}

}  // namespace minijax::sharding_rules_detail

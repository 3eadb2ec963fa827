// minijax sharding rules of shape primitives: broadcast_in_dim, reshape (gcd walk), squeeze,
// expand_dims, transpose and rev.
#include <numeric>

#include "core/primitive.h"
#include "core/views/array_ops.h"
#include "sharding/rules/rule_builder.h"
#include "sharding/partition_rule.h"

namespace minijax::sharding_rules_detail {
namespace {

// reshape as Shardy factors it: walk the operand and result dims from the major side with the
// remaining (not yet factored) size of the current dim on each side. A common divisor g > 1 of
// the two remainders is the same major slice of both dims (the flattened suffixes after the
// factors already placed have equal sizes), so gcd(rem_in, rem_out) becomes one shared factor,
// appended minor to the dims' earlier factors; a dim is done when its remainder is 1. When the
// remainders are coprime (e.g. [2,3] -> [3,2]) the dims cannot be matched piecewise: the smallest
// run of dims on both sides whose products agree gets one need-replication factor per dim
// remainder, and the walk resumes after it. Size-1 dims get no factor. An array of zero elements
// gets one need-replication factor per dim.
FactorRule reshape_rule(const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out) {
  RuleBuilder b(in, out);
  const Shape& s = in.at(0).shape;
  const Shape& r = out.at(0).shape;
  int64_t total = 1;
  for (int64_t v : s) total *= v;
  if (total == 0) {
    for (size_t d = 0; d < s.size(); ++d) b.own_operand(0, d, s[d]);
    for (size_t d = 0; d < r.size(); ++d) b.own_result(0, d, r[d]);
    return b.take();
  }
  size_t i = 0, o = 0;
  int64_t ri = s.empty() ? 1 : s[0], ro = r.empty() ? 1 : r[0];
  auto next_in = [&] { ++i; ri = i < s.size() ? s[i] : 1; };
  auto next_out = [&] { ++o; ro = o < r.size() ? r[o] : 1; };
  while (i < s.size() || o < r.size()) {
    if (i < s.size() && ri == 1) { next_in(); continue; }
    if (o < r.size() && ro == 1) { next_out(); continue; }
    const int64_t g = std::gcd(ri, ro);
    if (g > 1) {
      int f = b.factor(g);
      b.operand(0, i, f);
      b.result(0, o, f);
      ri /= g;
      ro /= g;
      continue;
    }
    // Coprime remainders: consume whole dims on both sides until the products agree.
    int64_t pi = ri, po = ro;
    b.own_operand(0, i, ri);
    b.own_result(0, o, ro);
    next_in();
    next_out();
    while (pi != po) {
      if (pi < po) { pi *= ri; if (ri > 1) b.own_operand(0, i, ri); next_in(); }
      else { po *= ro; if (ro > 1) b.own_result(0, o, ro); next_out(); }
    }
  }
  return b.take();
}

Registrar reg([] {
  auto& t = sharding_rules();
  // broadcast_in_dim: one factor per result dim; operand dim k shares the factor of result dim
  // broadcast_dimensions[k] when the sizes agree, and a size-1 operand dim that is broadcast to a
  // larger one gets a size-1 factor of its own.
  t["broadcast_in_dim"] = [](const std::vector<ShapedArray>& in,
                             const std::vector<ShapedArray>& out, const Params& p) {
    RuleBuilder b(in, out);
    const Shape& rs = out.at(0).shape;
    const auto bd = BroadcastInDimParams::from(p).broadcast_dimensions;
    std::vector<int> f(rs.size());
    for (size_t d = 0; d < rs.size(); ++d) {
      f[d] = b.factor(rs[d]);
      b.result(0, d, f[d]);
    }
    const Shape& s = in.at(0).shape;
    for (size_t k = 0; k < s.size(); ++k) {
      const size_t d = static_cast<size_t>(bd.at(k));
      if (s[k] == rs.at(d)) b.operand(0, k, f[d]);
      else b.operand(0, k, b.factor(s[k]));
    }
    return b.take();
  };
  ShardingRuleFn rs = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                         const Params&) { return reshape_rule(in, out); };
  t["reshape"] = rs;
  // squeeze and expand_dims only drop or insert size-1 dims: the reshape walk matches every other
  // dim one to one.
  t["squeeze"] = rs;
  t["expand_dims"] = rs;
  // transpose: result dim d is operand dim permutation[d].
  t["transpose"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                      const Params& p) {
    RuleBuilder b(in, out);
    const auto perm = TransposeParams::from(p).permutation;
    for (size_t d = 0; d < perm.size(); ++d) {
      const size_t k = static_cast<size_t>(perm[d]);
      int f = b.factor(in.at(0).shape.at(k));
      b.operand(0, k, f);
      b.result(0, d, f);
    }
    return b.take();
  };
  // rev: dims map one to one; a reversed dim needs replication (sharded, device i's shard would
  // have to move to device n-1-i, and uneven shards would not even line up).
  t["rev"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                const Params& p) {
    RuleBuilder b(in, out);
    const Shape& s = in.at(0).shape;
    std::vector<int> f(s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      f[d] = b.factor(s[d]);
      b.operand(0, d, f[d]);
      b.result(0, d, f[d]);
    }
    for (int64_t d : RevParams::from(p).dimensions) b.need_replication(f.at(norm_axis(d, s.size())));
    return b.take();
  };
});

// Partition rules: broadcast_in_dim and reshape name their result's shape; the local result's
// shape replaces the global one.
Registrar reg_partition([] {
  PartitionRule b;
  b.local_params = [](const Eqn& e, const std::vector<Array>&, const std::vector<ShapedArray>& want) {
    BroadcastInDimParams v = broadcast_in_dim_params(e);
    v.shape = want[0].shape;
    return v.to_params();
  };
  partition_rules()["broadcast_in_dim"] = b;
  PartitionRule r;
  r.local_params = [](const Eqn& e, const std::vector<Array>&, const std::vector<ShapedArray>& want) {
    ReshapeParams v = reshape_params(e);
    v.new_sizes = want[0].shape;
    return v.to_params();
  };
  partition_rules()["reshape"] = r;
});

}  // namespace
}  // namespace minijax::sharding_rules_detail

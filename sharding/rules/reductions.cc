// minijax sharding rules of reductions and contractions: reduce_{sum,max,min,prod,and,or,xor},
// argmax, argmin, cumsum, cumprod, cummax, cummin, cumlogsumexp and dot_general.
#include <set>

#include "core/lax.h"
#include "core/primitive.h"
#include "core/views/array_ops.h"
#include "sharding/rules/rule_builder.h"

namespace minijax::sharding_rules_detail {
namespace {

// Kept dims share a factor with the result dims in order; each reduced dim is a factor of the
// operand alone, either a reduction factor (sharding it leaves partial results: unreduced, or
// completed by an all_reduce of `completed_by`) or a need-replication factor.
FactorRule reduce_like(const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                       const std::vector<int64_t>& axes, bool reduction, const std::string& completed_by = "") {
  RuleBuilder b(in, out);
  if (reduction && !completed_by.empty()) b.completed_by(completed_by);
  const Shape& s = in.at(0).shape;
  std::set<size_t> red;
  for (int64_t a : axes) red.insert(norm_axis(a, s.size()));
  size_t o = 0;
  for (size_t d = 0; d < s.size(); ++d) {
    int f = b.factor(s[d]);
    b.operand(0, d, f);
    if (red.count(d)) {
      if (reduction) b.reduction(f);
      else b.need_replication(f);
    } else {
      b.result(0, o++, f);
    }
  }
  return b.take();
}

// Shape-preserving scans: every dim one factor of operand and result; the scanned axis needs
// replication.
FactorRule scan_like(const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                     int64_t scanned) {
  RuleBuilder b(in, out);
  const Shape& s = in.at(0).shape;
  const size_t axis = norm_axis(scanned, s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    int f = b.factor(s[d]);
    b.operand(0, d, f);
    b.result(0, d, f);
    if (d == axis) b.need_replication(f);
  }
  return b.take();
}

Registrar reg([] {
  auto& t = sharding_rules();
  // reduce_sum's reduced dims are reduction factors, as in Shardy: a sharded reduced dim leaves
  // each device a partial sum (unreduced axes) that an all-reduce (sum) completes.
  t["reduce_sum"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                       const Params& p) { return reduce_like(in, out, ReduceParams::from(p).axes, true); };
  // reduce_max/min/prod: a Sharding's unreduced axes mean partial SUMS (Shardy's and JAX's
  // unreduced), completed by all_reduce(sum) wherever they are resharded; partial maxima,
  // minima or products are not sums, so their reduced dims need replication (the operand is
  // gathered on them). Found by tests/conformance/sharded_check.cc (partial maxima were summed).
  for (const char* n : {"reduce_max", "reduce_min", "reduce_prod"})
    t[n] = [n](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
               const Params& p) { return reduce_like(in, out, ReduceParams::from(p, n).axes, false); };
  // reduce_and/or/xor: reduced dims are reduction factors whose partial results the partitioner
  // completes at once by an all_reduce of the same operation (FactorRule::completed_by): the
  // results are never unreduced (a Sharding's unreduced axes mean partial sums only).
  for (const char* n : {"reduce_and", "reduce_or", "reduce_xor"})
    t[n] = [n](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out, const Params& p) {
      const std::string op = std::string(n).substr(std::string("reduce_").size());
      return reduce_like(in, out, ReduceParams::from(p, n).axes, true, op);
    };
  // argmax/argmin: the index of the extreme is not combinable from partial results without the
  // values, so the axis needs replication.
  for (const char* n : {"argmax", "argmin"})
    t[n] = [n](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
               const Params& p) { return reduce_like(in, out, ArgReduceParams::from(p, n).axes, false); };
  // cumsum: shape-preserving; the scanned axis needs replication (a prefix sum crosses shards).
  t["cumsum"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                   const Params& p) { return scan_like(in, out, CumsumParams::from(p).axis); };
  // cumprod/cummax/cummin/cumlogsumexp: the same, for the same reason (a running combine).
  for (const char* n : {"cumprod", "cummax", "cummin", "cumlogsumexp"})
    t[n] = [n](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
               const Params& p) { return scan_like(in, out, CumulativeParams::from(p, n).axis); };
  // dot_general: batch factors (lhs, rhs, result), lhs-free factors (lhs, result), rhs-free
  // factors (rhs, result), contracting factors (lhs, rhs) as reduction factors, numbered in that
  // order as Shardy does (a matmul prints ([i, k], [k, j])->([i, j]) ... reduction={k}). Result
  // dims are batch..., lhs free..., rhs free... (in operand order).
  t["dot_general"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                        const Params& p) {
    RuleBuilder b(in, out);
    const auto dn = DotGeneralParams::from(p).dimension_numbers;
    const Shape& ls = in.at(0).shape;
    const Shape& rs = in.at(1).shape;
    size_t o = 0;
    std::set<int64_t> lused, rused;
    for (size_t k = 0; k < dn.lhs_batch.size(); ++k) {
      const size_t l = size_t(dn.lhs_batch[k]), r = size_t(dn.rhs_batch[k]);
      int f = b.factor(ls.at(l));
      b.operand(0, l, f);
      b.operand(1, r, f);
      b.result(0, o++, f);
      lused.insert(int64_t(l));
      rused.insert(int64_t(r));
    }
    lused.insert(dn.lhs_contracting.begin(), dn.lhs_contracting.end());
    rused.insert(dn.rhs_contracting.begin(), dn.rhs_contracting.end());
    for (size_t d = 0; d < ls.size(); ++d)
      if (!lused.count(int64_t(d))) {
        int f = b.factor(ls[d]);
        b.operand(0, d, f);
        b.result(0, o++, f);
      }
    for (size_t d = 0; d < rs.size(); ++d)
      if (!rused.count(int64_t(d))) {
        int f = b.factor(rs[d]);
        b.operand(1, d, f);
        b.result(0, o++, f);
      }
    for (size_t k = 0; k < dn.lhs_contracting.size(); ++k) {
      const size_t l = size_t(dn.lhs_contracting[k]), r = size_t(dn.rhs_contracting[k]);
      int f = b.factor(ls.at(l));
      b.operand(0, l, f);
      b.operand(1, r, f);
      b.reduction(f);
    }
    return b.take();
  };
});

}  // namespace
}  // namespace minijax::sharding_rules_detail

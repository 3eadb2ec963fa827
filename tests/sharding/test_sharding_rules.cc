// Tests of sharding/sharding_rule.h and sharding/rules/*.cc: every registered primitive has a factor
// rule or a declared reason; every rule is consistent on sample equations; golden printed rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include <minijax/minijax.h>

#include "core/gather_scatter_params.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "sharding/propagate_shardings.h"
#include "sharding/sharding_rule.h"
#include "rule_samples.h"

namespace {

using mj::Array;
using rule_samples::Sample;
using rule_samples::samples;
using mj::DType;
using mj::FactorRule;
using mj::Params;
using mj::ShapedArray;
namespace lax = mj::lax;

ShapedArray f32(mj::Shape s) { return ShapedArray{std::move(s), DType::f32, false, mj::MemoryKind::device}; }

// Rule of one primitive on operand avals, with the result avals from its own shape rule.
FactorRule rule_of(const std::string& name, const std::vector<ShapedArray>& in, const Params& p) {
  auto out = mj::abstract_eval(mj::primitive(name), in, p, std::source_location::current());
  FactorRule r = mj::sharding_rule_for(name, in, out, p);
  mj::check_factor_rule(r, in, out, name);
  return r;
}

bool has(const std::vector<int>& v, int f) { return std::find(v.begin(), v.end(), f) != v.end(); }

// ---- registry -----------------------------------------------------------------------------------

// A primitive has a factor rule, or propagation enters its bodies (sharding/propagate_bodies.h),
// or it declares why it has neither; exactly one of the three.
TEST(ShardingRules, EveryPrimitiveHasARuleOrADeclaredReason) {
  std::vector<std::string> missing, both;
  for (const auto& n : mj::primitive_names()) {
    const bool rule = mj::sharding_rules().count(n) != 0;
    const bool reason = mj::no_sharding_rule_reasons().count(n) != 0;
    const bool bodies = mj::propagation_enters_bodies(n);
    if (!rule && !reason && !bodies) missing.push_back(n);
    if (int(rule) + int(reason) + int(bodies) > 1) both.push_back(n);
  }
  EXPECT_TRUE(missing.empty()) << "no sharding rule and no declared reason: " << testing::PrintToString(missing);
  EXPECT_TRUE(both.empty()) << "both a rule and a reason: " << testing::PrintToString(both);
  for (const auto& [n, why] : mj::no_sharding_rule_reasons()) EXPECT_FALSE(why.empty()) << n;
}

TEST(ShardingRules, PrimitiveWithoutRuleThrowsWithTheReason) {
  try {
    mj::sharding_rule_for("all_gather", {}, {}, Params{});
    FAIL() << "expected ShardingError";
  } catch (const mj::ShardingError& e) {
    EXPECT_NE(std::string(e.what()).find("'all_gather'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("collective"), std::string::npos) << e.what();
  }
  // scan has no factor rule either (propagation enters its body instead).
  EXPECT_THROW(mj::sharding_rule_for("scan", {}, {}, Params{}), mj::ShardingError);
  EXPECT_THROW(mj::sharding_rule_for("no_such_primitive", {}, {}, Params{}), mj::ShardingError);
}

// ---- every rule on traced sample equations --------------------------------------------------------

TEST(ShardingRules, EveryRuleIsConsistentOnSampleEquations) {
  std::set<std::string> covered;
  for (const Sample& smp : samples()) {
    SCOPED_TRACE(smp.label);
    mj::ClosedJaxpr cj = mj::make_jaxpr(smp.body)(smp.args);
    for (const mj::Eqn& e : cj.jaxpr->eqns) {
      const std::string& n = e.primitive->name;
      covered.insert(n);
      std::vector<ShapedArray> in, out;
      for (const auto& at : e.inputs) in.push_back(mj::atom_aval(at));
      for (const auto& o : e.outputs) out.push_back(o.aval());
      FactorRule r = mj::sharding_rule_of(e);
      EXPECT_NO_THROW(mj::check_factor_rule(r, in, out, n)) << r.str();
      // Need-replication factors are distinct ids in range (check_factor_rule covers range).
      std::set<int> nr(r.need_replication_factors.begin(), r.need_replication_factors.end());
      EXPECT_EQ(nr.size(), r.need_replication_factors.size()) << n << " " << r.str();
      EXPECT_FALSE(r.str().empty());
    }
  }
  std::vector<std::string> uncovered;
  for (const auto& n : mj::primitive_names())
    if (mj::sharding_rules().count(n) && !covered.count(n)) uncovered.push_back(n);
  EXPECT_TRUE(uncovered.empty()) << "rules without a sample: " << testing::PrintToString(uncovered);
}

// ---- golden printed rules (derived by hand in the comments) -------------------------------------

// matmul [8,16] x [16,4]: factors numbered batch, lhs free, rhs free, contracting: i = lhs dim 0
// (8), j = rhs dim 1 (4), k = the contracting dim (16), a reduction factor.
TEST(ShardingRules, GoldenMatmul) {
  Params p = lax::dot_general_params({{1}, {0}, {}, {}}, DType::f32);
  FactorRule r = rule_of("dot_general", {f32({8, 16}), f32({16, 4})}, p);
  EXPECT_EQ(r.str(), "([i, k], [k, j])->([i, j]) {i=8, j=4, k=16} reduction={k}");
}

// reshape [8,2048] -> [2,4,2048]: gcd(8,2)=2 -> i (dim0 of both), remainder 4 vs the next result
// dim 4 -> j, then 2048 -> k. Operand dim 0 = (i, j) major first.
TEST(ShardingRules, GoldenReshapeSplit) {
  Params p{{"new_sizes", std::vector<int64_t>{2, 4, 2048}}, {"dimensions", mj::ParamObjectPtr{}}};
  FactorRule r = rule_of("reshape", {f32({8, 2048})}, p);
  EXPECT_EQ(r.str(), "([ij, k])->([i, j, k]) {i=2, j=4, k=2048}");
  EXPECT_EQ(r.operand_dims[0][0], (std::vector<int>{0, 1}));
}

// reshape [2,3,8] -> [3,2,8]: gcd(2,3)=1, so operand dim 0 (i=2) and result dim 0 (j=3) get their
// own factors; products 2 vs 3 -> take operand dim 1 (k=3): 6 vs 3 -> result dim 1 (l=2): 6 = 6;
// the walk resumes and 8 is shared (m). All of i..l need replication.
TEST(ShardingRules, GoldenReshapeCoprime) {
  Params p{{"new_sizes", std::vector<int64_t>{3, 2, 8}}, {"dimensions", mj::ParamObjectPtr{}}};
  FactorRule r = rule_of("reshape", {f32({2, 3, 8})}, p);
  EXPECT_EQ(r.str(), "([i, k, m])->([j, l, m]) {i=2, j=3, k=3, l=2, m=8} need_replication={i, j, k, l}");
}

// broadcast [1,3] -> [4,3] along dims (0,1): result factors i=4, j=3; operand dim 0 is broadcast
// (1 -> 4) so it gets its own size-1 factor k; operand dim 1 shares j.
TEST(ShardingRules, GoldenBroadcast) {
  Params p{{"shape", std::vector<int64_t>{4, 3}}, {"broadcast_dimensions", std::vector<int64_t>{0, 1}}};
  FactorRule r = rule_of("broadcast_in_dim", {f32({1, 3})}, p);
  EXPECT_EQ(r.str(), "([k, j])->([i, j]) {i=4, j=3, k=1}");
  // [3] -> [2,3] along dim 1: i=2, j=3, the operand is j.
  Params q{{"shape", std::vector<int64_t>{2, 3}}, {"broadcast_dimensions", std::vector<int64_t>{1}}};
  EXPECT_EQ(rule_of("broadcast_in_dim", {f32({3})}, q).str(), "([j])->([i, j]) {i=2, j=3}");
}

// reduce_sum [4,6] over axis 1: i=4 kept, j=6 reduced -> a reduction factor.
TEST(ShardingRules, GoldenReduceSum) {
  FactorRule r = rule_of("reduce_sum", {f32({4, 6})}, Params{{"axes", std::vector<int64_t>{1}}});
  EXPECT_EQ(r.str(), "([i, j])->([i]) {i=4, j=6} reduction={j}");
}

// ---- need-replication choices -------------------------------------------------------------------

TEST(ShardingRules, NeedReplicationOnScannedSlicedAndReversedDims) {
  FactorRule c = rule_of("cumsum", {f32({4, 6})}, Params{{"axis", int64_t{1}}, {"reverse", false}});
  EXPECT_EQ(c.str(), "([i, j])->([i, j]) {i=4, j=6} need_replication={j}");
  FactorRule a = rule_of("argmax", {f32({4, 6})},
                         Params{{"axes", std::vector<int64_t>{0}}, {"index_dtype", DType::i32}});
  EXPECT_EQ(a.str(), "([i, j])->([j]) {i=4, j=6} need_replication={i}");
  EXPECT_TRUE(a.reduction_factors.empty());
  FactorRule v = rule_of("rev", {f32({4, 6})}, Params{{"dimensions", std::vector<int64_t>{0}}});
  EXPECT_EQ(v.str(), "([i, j])->([i, j]) {i=4, j=6} need_replication={i}");
  // slice [6,8] rows 1:5: dim 0 changes (6 -> 4): operand i=6 and result j=4 need replication;
  // dim 1 is kept whole and shared (k=8).
  Params sp{{"start_indices", std::vector<int64_t>{1, 0}}, {"limit_indices", std::vector<int64_t>{5, 8}},
            {"strides", mj::ParamObjectPtr{}}};
  FactorRule s = rule_of("slice", {f32({6, 8})}, sp);
  EXPECT_EQ(s.str(), "([i, k])->([j, k]) {i=6, j=4, k=8} need_replication={i, j}");
}

TEST(ShardingRules, ScatterAddIndexDimsNeedReplication) {
  // x [5,3], indices [2,4,1] (index vector last), updates [2,4,3] (window dim 2, row dim 0
  // inserted): scatter dims i=2, j=4 (indices and updates only; need replication: as reduction
  // factors every shard would add x into its partial result, and the sum would count x once per
  // shard), the index vector k=1, row l=5 (indexed: need replication), feature m=3 (a whole window
  // dim) shared by x, updates and the result.
  ShapedArray idx{{2, 4, 1}, DType::i32, false, mj::MemoryKind::device};
  mj::lax::ScatterDimensionNumbers dims{{2}, {0}, {0}, {}, {}};
  FactorRule r = rule_of("scatter_add", {f32({5, 3}), idx, f32({2, 4, 3})}, mj::lax::scatter_params(dims, {}));
  EXPECT_EQ(r.str(), "([l, m], [i, j, k], [i, j, m])->([l, m]) {i=2, j=4, k=1, l=5, m=3} "
                     "need_replication={i, j, k, l}");
}

TEST(ShardingRules, CheckRejectsInconsistentRules) {
  FactorRule r;
  r.factor_sizes = {4, 3};
  r.operand_dims = {{{0}, {1}}};
  r.result_dims = {{{0}}};
  r.reduction_factors = {1};
  EXPECT_NO_THROW(mj::check_factor_rule(r, {f32({4, 3})}, {f32({4})}, "ok"));
  EXPECT_THROW(mj::check_factor_rule(r, {f32({4, 5})}, {f32({4})}, "size"), mj::ShardingError);
  FactorRule unused = r;
  unused.factor_sizes.push_back(2);
  EXPECT_THROW(mj::check_factor_rule(unused, {f32({4, 3})}, {f32({4})}, "unused"), mj::ShardingError);
  FactorRule red_in_result = r;
  red_in_result.reduction_factors = {0};
  EXPECT_THROW(mj::check_factor_rule(red_in_result, {f32({4, 3})}, {f32({4})}, "red"), mj::ShardingError);
  FactorRule twice = r;
  twice.operand_dims = {{{0, 1}, {1}}};
  EXPECT_THROW(mj::check_factor_rule(twice, {f32({12, 3})}, {f32({4})}, "twice"), mj::ShardingError);
  EXPECT_THROW(mj::check_factor_rule(r, {f32({4, 3}), f32({})}, {f32({4})}, "count"), mj::ShardingError);
}

}  // namespace

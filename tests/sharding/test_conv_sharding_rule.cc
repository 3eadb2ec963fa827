// The factor sharding rule of conv_general_dilated (sharding/rules/convolution.cc): golden strings
// derived by hand for the default and NHWC layouts and for feature and batch groups.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/primitive.h"
#include "sharding/sharding_rule.h"

namespace {

using mj::Array;
namespace lax = mj::lax;

// The rule of the one conv_general_dilated equation of conv(x, w, options), checked against it.
std::string rule(const Array& x, const Array& w, const lax::ConvGeneralDilatedOptions& o) {
  mj::ClosedJaxpr j = mj::make_jaxpr([&](const Array& a, const Array& b) {
    return lax::conv_general_dilated(a, b, {1, 1}, "VALID", o);
  })(x, w);
  const mj::Eqn& e = j.jaxpr->eqns.at(0);
  mj::FactorRule r = mj::sharding_rule_of(e);
  std::vector<mj::ShapedArray> in{x.aval(), w.aval()}, out{e.outputs.at(0).aval()};
  mj::check_factor_rule(r, in, out, "conv_general_dilated");
  return r.str();
}

}  // namespace

// Factors in order: batch i (lhs N, out N), output features j (kernel O, out C), input features k
// (lhs C, kernel I; a reduction), then per spatial dim its lhs, kernel and output sizes, each its
// own need-replication factor (H: l, m, n; W: o, p, q).
TEST(ConvShardingRule, BatchOutputFeatureReductionAndReplicatedSpatialFactors) {
  EXPECT_EQ(rule(mj::ones({8, 4, 6, 6}), mj::ones({16, 4, 3, 3}), {}),
            "([i, k, l, o], [j, k, m, p])->([i, j, n, q]) {i=8, j=16, k=4, l=6, m=3, n=4, o=6, p=3, q=4} "
            "reduction={k} need_replication={l, m, n, o, p, q}");
  lax::ConvGeneralDilatedOptions nhwc;
  nhwc.dimension_numbers = lax::ConvDimensionSpec("NHWC", "HWIO", "NHWC");
  EXPECT_EQ(rule(mj::ones({8, 6, 6, 4}), mj::ones({3, 3, 4, 16}), nhwc),
            "([i, l, o, k], [m, p, k, j])->([i, n, q, j]) {i=8, j=16, k=4, l=6, m=3, n=4, o=6, p=3, q=4} "
            "reduction={k} need_replication={l, m, n, o, p, q}");
}

// feature_group_count 2: the output features need replication, and the input features are two
// factors (lhs 4, kernel 2) that need replication; the batch still shards freely.
TEST(ConvShardingRule, FeatureGroupsReplicateTheFeatureFactors) {
  lax::ConvGeneralDilatedOptions o;
  o.feature_group_count = 2;
  EXPECT_EQ(
      rule(mj::ones({8, 4, 6, 6}), mj::ones({16, 2, 3, 3}), o),
      "([i, k, m, p], [j, l, n, q])->([i, j, o, r]) {i=8, j=16, k=4, l=2, m=6, n=3, o=4, p=6, q=3, r=4} "
      "need_replication={j, k, l, m, n, o, p, q, r}");
}

// batch_group_count 2: the batch dims differ (8 -> 4) and each needs replication, as do both
// feature factors.
TEST(ConvShardingRule, BatchGroupsReplicateTheBatchAndFeatureFactors) {
  lax::ConvGeneralDilatedOptions o;
  o.batch_group_count = 2;
  EXPECT_EQ(
      rule(mj::ones({8, 4, 6, 6}), mj::ones({16, 4, 3, 3}), o),
      "([i, l, m, p], [k, l, n, q])->([j, k, o, r]) {i=8, j=4, k=16, l=4, m=6, n=3, o=4, p=6, q=3, r=4} "
      "need_replication={i, j, k, l, m, n, o, p, q, r}");
}

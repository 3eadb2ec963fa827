// minijax sharding rule of conv_general_dilated: batch, output-feature and input-feature factors;
// spatial dims replicated (no halo exchange: a sharded spatial dim is gathered first).
#include "core/primitive.h"
#include "core/views/windowed.h"
#include "sharding/rules/rule_builder.h"

namespace minijax::sharding_rules_detail {
namespace {

// Factors numbered as dot_general's (batch, lhs free, rhs free, contracting):
// - batch: lhs dim lhs_spec[0] and result dim out_spec[0], sharded alike with no communication;
// - output features: kernel dim rhs_spec[0] and result dim out_spec[1];
// - input features: lhs dim lhs_spec[1] and kernel dim rhs_spec[1], a reduction factor (each
//   device's convolution is a partial sum over its features, completed by an all-reduce);
// - every spatial dim of lhs, kernel and result: its own need-replication factor (a window
//   crosses shard boundaries; minijax has no halo exchange, so the dim is gathered first).
// With feature_group_count > 1 or batch_group_count > 1 the feature factors need replication (a
// shard boundary would cut through the groups, which pair input and output feature runs, and the
// input features are no longer the kernel's); with batch_group_count > 1 the batch dims differ in
// size (out = lhs / batch_group_count) and each needs replication too.
FactorRule conv_rule(const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                     const Params& params) {
  RuleBuilder b(in, out);
  const ConvParams p = ConvParams::from(params);
  const Shape& l = in.at(0).shape;
  const Shape& r = in.at(1).shape;
  const Shape& o = out.at(0).shape;
  auto at = [](const Shape& s, int64_t d) { return s.at(size_t(d)); };
  const size_t lb = size_t(p.lhs_spec[0]), lf = size_t(p.lhs_spec[1]);
  const size_t ro = size_t(p.rhs_spec[0]), ri = size_t(p.rhs_spec[1]);
  const size_t ob = size_t(p.out_spec[0]), of = size_t(p.out_spec[1]);
  const bool grouped = p.feature_group_count > 1 || p.batch_group_count > 1;
  if (p.batch_group_count > 1) {
    b.own_operand(0, lb, at(l, int64_t(lb)));
    b.own_result(0, ob, at(o, int64_t(ob)));
  } else {
    const int f = b.factor(at(l, int64_t(lb)));
    b.operand(0, lb, f);
    b.result(0, ob, f);
  }
  const int fo = b.factor(at(r, int64_t(ro)));
  b.operand(1, ro, fo);
  b.result(0, of, fo);
  if (grouped) b.need_replication(fo);
  if (p.feature_group_count > 1) {
    b.own_operand(0, lf, at(l, int64_t(lf)));
    b.own_operand(1, ri, at(r, int64_t(ri)));
  } else {
    const int fi = b.factor(at(l, int64_t(lf)));
    b.operand(0, lf, fi);
    b.operand(1, ri, fi);
    if (grouped) b.need_replication(fi);
    else b.reduction(fi);
  }
  for (size_t s = 2; s < p.lhs_spec.size(); ++s) {
    b.own_operand(0, size_t(p.lhs_spec[s]), at(l, p.lhs_spec[s]));
    b.own_operand(1, size_t(p.rhs_spec[s]), at(r, p.rhs_spec[s]));
    b.own_result(0, size_t(p.out_spec[s]), at(o, p.out_spec[s]));
  }
  return b.take();
}

Registrar reg([] { sharding_rules()["conv_general_dilated"] = conv_rule; });

}  // namespace
}  // namespace minijax::sharding_rules_detail

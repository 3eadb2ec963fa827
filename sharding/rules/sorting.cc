// minijax sharding rules of the sorting primitives: sort (the sorted dimension replicated, the
// others a factor every operand and result shares) and top_k (the last dimension replicated).
#include "core/views/sorting.h"
#include "core/primitive.h"
#include "sharding/rules/rule_builder.h"

namespace minijax::sharding_rules_detail {
namespace {

Registrar reg([] {
  auto& t = sharding_rules();
  // sort: every operand and result has one shape; each dim is one factor of all of them. The
  // sorted dimension needs replication: a row's order depends on all of its elements (as
  // cumsum's scanned axis); the other dims carry their sharding (rows sort independently).
  t["sort"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out, const Params& p) {
    RuleBuilder b(in, out);
    const Shape& s = in.at(0).shape;
    const size_t dim = norm_axis(SortParams::from(p).dimension, s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      int f = b.factor(s[d]);
      for (size_t i = 0; i < in.size(); ++i) b.operand(i, d, f);
      for (size_t i = 0; i < out.size(); ++i) b.result(i, d, f);
      if (d == dim) b.need_replication(f);
    }
    return b.take();
  };
  // top_k: the leading dims are factors of the operand and both results; the last dim changes
  // size (n -> k) and its selection reads the whole row, so the operand's and the results' last
  // dims are factors of their own that need replication.
  t["top_k"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out, const Params&) {
    RuleBuilder b(in, out);
    const Shape& s = in.at(0).shape;
    const size_t last = s.size() - 1;
    for (size_t d = 0; d < last; ++d) {
      int f = b.factor(s[d]);
      b.operand(0, d, f);
      b.result(0, d, f);
      b.result(1, d, f);
    }
    b.own_operand(0, last, s[last]);
    const int64_t k = out.at(0).shape.at(last);
    int f = b.factor(k);
    b.result(0, last, f);
    b.result(1, last, f);
    b.need_replication(f);
    return b.take();
  };
});

}  // namespace
}  // namespace minijax::sharding_rules_detail

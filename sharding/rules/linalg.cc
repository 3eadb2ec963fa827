// minijax sharding rules of the linear-algebra primitives (cholesky, triangular_solve, lu, qr, eigh,
// svd), as JAX's linalg_sharding_rule: the batch dims carry their sharding, the matrix dims replicate.
#include "core/primitive.h"
#include "sharding/rules/rule_builder.h"

namespace minijax::sharding_rules_detail {
namespace {

// Each batch dim is one factor of every operand and the result; each matrix dim a factor that
// needs replication (a factorisation or solve reads whole matrices), shared where the dims are
// the same dim (the result's with b's; a's own).
Registrar reg([] {
  auto& t = sharding_rules();
  t["cholesky"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out, const Params&) {
    RuleBuilder b(in, out);
    const Shape& s = in.at(0).shape;
    for (size_t d = 0; d < s.size(); ++d) {
      const int f = b.factor(s[d]);
      b.operand(0, d, f);
      b.result(0, d, f);
      if (d + 2 >= s.size()) b.need_replication(f);
    }
    return b.take();
  };
  t["triangular_solve"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                             const Params&) {
    RuleBuilder b(in, out);
    const Shape& sb = in.at(1).shape;
    const size_t r = sb.size();
    for (size_t d = 0; d < r; ++d) {
      const int f = b.factor(sb[d]);
      if (d + 2 < r) b.operand(0, d, f);
      b.operand(1, d, f);
      b.result(0, d, f);
      if (d + 2 >= r) b.need_replication(f);
    }
    const Shape& sa = in.at(0).shape;
    b.own_operand(0, r - 2, sa[r - 2]);
    b.own_operand(0, r - 1, sa[r - 1]);
    return b.take();
  };
  // lu, qr, eigh, svd: the operand's batch dims are every result's leading dims; the matrix dims
  // of the operand and the results' trailing dims (a matrix or a vector each) need replication.
  const auto factorization = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                                const Params&) {
    RuleBuilder b(in, out);
    const Shape& s = in.at(0).shape;
    const size_t nb = s.size() - 2;
    for (size_t d = 0; d < nb; ++d) {
      const int f = b.factor(s[d]);
      b.operand(0, d, f);
      for (size_t k = 0; k < out.size(); ++k) b.result(k, d, f);
    }
    b.own_operand(0, nb, s[nb]);
    b.own_operand(0, nb + 1, s[nb + 1]);
    for (size_t k = 0; k < out.size(); ++k)
      for (size_t d = nb; d < out[k].shape.size(); ++d) b.own_result(k, d, out[k].shape[d]);
    return b.take();
  };
  for (const char* name : {"lu", "qr", "eigh", "svd"}) t[name] = factorization;
});

}  // namespace
}  // namespace minijax::sharding_rules_detail

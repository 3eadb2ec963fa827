// minijax autodiff rules of the shape primitives: JVP, transpose and batching of reshape,
// squeeze, expand_dims, transpose and rev (JAX's rules, jax/_src/lax/lax.py).
//
// All five are linear in their one operand: the JVP applies the same primitive to the tangent;
// the transposes are reshape back, squeeze <-> expand_dims, the inverse permutation, and rev
// itself. Batching shifts the axis parameters past the batch dimension.
#include <algorithm>

#include "autodiff/batching_util.h"
#include "autodiff/rules/linear_util.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/array_ops.h"

namespace minijax {

namespace {

using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;
using Cts = std::vector<Array>;

Cts reshape_transpose(const Cts& cts, const std::vector<Array>&, const std::vector<ShapedArray>& avals,
                      const Params&) {
  if (!cts[0].defined()) return {Array()};
  return {lax::reshape(cts[0], avals[0].shape)};
}

BOuts reshape_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& p) {
  Array x = move_batch_dim(args[0], dims[0], 0);
  Shape s = ReshapeParams::from(p).new_sizes;
  s.insert(s.begin(), x.shape()[0]);
  return {{lax::reshape(x, s)}, {0}};
}

Cts squeeze_transpose(const Cts& cts, const std::vector<Array>&, const std::vector<ShapedArray>&,
                      const Params& p) {
  if (!cts[0].defined()) return {Array()};
  return {lax::expand_dims(cts[0], SqueezeParams::from(p).dimensions)};
}

BOuts squeeze_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& p) {
  const int64_t d = dims[0];
  auto axes = batched_axes(SqueezeParams::from(p).dimensions, d);
  return {{lax::squeeze(args[0], axes)}, {bdim_after_removing(d, axes)}};
}

Cts expand_dims_transpose(const Cts& cts, const std::vector<Array>&, const std::vector<ShapedArray>&,
                          const Params& p) {
  if (!cts[0].defined()) return {Array()};
  return {lax::squeeze(cts[0], ExpandDimsParams::from(p).dimensions)};
}

BOuts expand_dims_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims,
                        const Params& p) {
  // Batch dim first; the new dims are output positions, so they shift by one.
  Array x = move_batch_dim(args[0], dims[0], 0);
  std::vector<int64_t> d = ExpandDimsParams::from(p).dimensions;
  for (auto& a : d) ++a;
  return {{lax::expand_dims(x, d)}, {0}};
}

Cts transpose_transpose(const Cts& cts, const std::vector<Array>&, const std::vector<ShapedArray>&,
                        const Params& p) {
  if (!cts[0].defined()) return {Array()};
  const auto perm = TransposeParams::from(p).permutation;
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
  return {lax::transpose(cts[0], inv)};
}

BOuts transpose_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims,
                      const Params& p) {
  // The batch dim leads the output; operand dims are renumbered around it.
  const int64_t d = dims[0];
  std::vector<int64_t> perm{d};
  for (auto a : TransposeParams::from(p).permutation) perm.push_back(batched_axis(a, d));
  return {{lax::transpose(args[0], perm)}, {0}};
}

Cts rev_transpose(const Cts& cts, const std::vector<Array>&, const std::vector<ShapedArray>&,
                  const Params& p) {
  if (!cts[0].defined()) return {Array()};
  return {lax::rev(cts[0], RevParams::from(p).dimensions)};
}

BOuts rev_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& p) {
  return {{lax::rev(args[0], batched_axes(RevParams::from(p).dimensions, dims[0]))}, {dims[0]}};
}

Registrar reg([] {
  auto set = [](const char* name, TransposeRule t, BatchRule b) {
    auto& p = get_or_create_primitive(name);
    p.jvp = rules::linear_unary_jvp(p);
    p.transpose = std::move(t);
    p.batch = std::move(b);
  };
  set("reshape", reshape_transpose, reshape_batch);
  set("squeeze", squeeze_transpose, squeeze_batch);
  set("expand_dims", expand_dims_transpose, expand_dims_batch);
  set("transpose", transpose_transpose, transpose_batch);
  set("rev", rev_transpose, rev_batch);
});

}  // namespace

}  // namespace minijax

// minijax autodiff and batching rules of the sorting primitives: sort and top_k (JAX's _sort_jvp,
// _sort_batch_rule, _top_k_jvp and _top_k_batch_rule, jax/_src/lax/lax.py). Neither is linear.
//
// Both JVPs gather the tangents with the primal's permutation (sort: an iota sorted along as an
// extra operand; top_k: its indices) with one general gather whose other dims are batching dims,
// as JAX's; its transpose (scatter_add) and batching rule give reverse mode and second order.
#include "core/views/sorting.h"
#include "autodiff/batching_util.h"
#include "core/gather_scatter.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

namespace {

using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;

// A tangent that carries a value (not a symbolic zero, nor an integer/bool value's float0 zero).
bool carries(const Array& t) { return t.defined() && is_floating(t.dtype()); }

// out[i] = t[i with i[axis] replaced by idx[i]]: JAX's take_along_axis, for i32 `idx` whose shape
// is t's except along `axis`: one general gather of t at idx[..., None] whose other dims are
// batching dims (operand dim d with indices dim d), slice sizes 1, the axis collapsed. The
// indices are a permutation or top_k's positions, in bounds: mode CLIP.
Array gather_along_axis(const Array& t, const Array& idx, int64_t axis) {
  if (t.size() == 0 || idx.size() == 0) return lax::full(idx.shape(), 0.0, t.dtype());
  lax::GatherDimensionNumbers dn;
  dn.collapsed_slice_dims = {axis};
  dn.start_index_map = {axis};
  for (int64_t d = 0; d < t.ndim(); ++d)
    if (d != axis) {
      dn.operand_batching_dims.push_back(d);
      dn.start_indices_batching_dims.push_back(d);
    }
  Shape is = idx.shape();
  is.push_back(1);
  lax::GatherOptions o;
  o.mode = lax::GatherScatterMode::CLIP;
  return lax::gather(t, lax::reshape(idx, is), dn, std::vector<int64_t>(size_t(t.ndim()), 1), o);
}

Outs sort_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& params) {
  const SortParams sp = SortParams::from(params);
  std::vector<Array> ops = primals;
  ops.push_back(lax::iota(DType::i32, primals.at(0).shape(), sp.dimension));
  std::vector<Array> sorted = minijax::bind(primitive("sort"), ops, params);
  const Array perm = sorted.back();
  sorted.pop_back();
  std::vector<Array> touts(primals.size());
  for (size_t i = 0; i < primals.size(); ++i)
    if (carries(tangents.at(i)) && is_floating(primals[i].dtype()))
      touts[i] = gather_along_axis(tangents[i], perm, sp.dimension);
  return {sorted, touts};
}

// JAX's _sort_batch_rule: every operand batched at the first mapped operand's batch dim (unmapped
// ones broadcast), the sorted dimension shifted past it.
BOuts sort_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& params) {
  const int64_t size = batch_axis_size(args, dims);
  int64_t bdim = kNotMapped;
  for (int64_t d : dims)
    if (d != kNotMapped) {
      bdim = d;
      break;
    }
  std::vector<Array> ops;
  for (size_t i = 0; i < args.size(); ++i) ops.push_back(materialize_batch(args[i], dims[i], size, bdim));
  SortParams sp = SortParams::from(params);
  sp.dimension += bdim <= sp.dimension ? 1 : 0;
  std::vector<Array> outs = minijax::bind(primitive("sort"), ops, sp.to_params());
  return {outs, std::vector<int64_t>(outs.size(), bdim)};
}

Outs top_k_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& params) {
  std::vector<Array> outs = minijax::bind(primitive("top_k"), {primals.at(0)}, params);
  const Array& t = tangents.at(0);
  if (!carries(t) || !is_floating(primals[0].dtype())) return {outs, {Array(), Array()}};
  return {outs, {gather_along_axis(t, outs.at(1), primals[0].ndim() - 1), Array()}};
}

// JAX's _top_k_batch_rule: a batch dim on the last axis is swapped with the one before it.
BOuts top_k_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& params) {
  const Array& x = args.at(0);
  const int64_t d = dims.at(0), r = x.ndim();
  if (d != r - 1) return {minijax::bind(primitive("top_k"), {x}, params), {d, d}};
  std::vector<int64_t> perm(static_cast<size_t>(r), 0);
  for (int64_t i = 0; i < r; ++i) perm[size_t(i)] = i;
  std::swap(perm[size_t(r - 1)], perm[size_t(r - 2)]);
  std::vector<Array> outs = minijax::bind(primitive("top_k"), {lax::transpose(x, perm)}, params);
  return {{lax::transpose(outs.at(0), perm), lax::transpose(outs.at(1), perm)}, {d, d}};
}

Registrar reg([] {
  auto& s = get_or_create_primitive("sort");
  s.jvp = sort_jvp;
  s.no_transpose_reason = "not linear";
  s.batch = sort_batch;
  auto& k = get_or_create_primitive("top_k");
  k.jvp = top_k_jvp;
  k.no_transpose_reason = "not linear";
  k.batch = top_k_batch;
});

}  // namespace

}  // namespace minijax

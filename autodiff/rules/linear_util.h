// minijax helpers shared by the autodiff rules of the shape, slicing and memory primitives.
// Owns the JVP rule of unary linear primitives and the per-example batching fallback.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "autodiff/batching_util.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax::rules {

/// JVP of a primitive linear in its single operand: the primal through the primitive, the
/// tangent through the same primitive with the same params (zero stays zero; integer and bool
/// outputs get zero tangents).
inline JvpRule linear_unary_jvp(const Primitive& prim) {
  return [&prim](const std::vector<Array>& primals, const std::vector<Array>& tangents,
                 const Params& params) -> std::pair<std::vector<Array>, std::vector<Array>> {
    const Primitive& p = prim;
    Array out = minijax::bind1(p, primals, params);
    Array t;
    if (tangents.at(0).defined() && is_floating(out.dtype())) t = minijax::bind1(p, {tangents[0]}, params);
    return {{out}, {t}};
  };
}

/// Element b of a value batched at dim d (the value itself when d == kNotMapped), by a static
/// slice and squeeze.
inline Array batch_element(const Array& v, int64_t d, int64_t b) {
  if (d == kNotMapped) return v;
  std::vector<int64_t> start(size_t(v.ndim()), 0), limit = v.shape();
  start[size_t(d)] = b;
  limit[size_t(d)] = b + 1;
  return lax::squeeze(lax::slice(v, start, limit), {d});
}

/// Batching by a loop over the batch: the single-result primitive `p` applied to each
/// example (static slices of the batched operands), the results stacked along a new dim 0. Used
/// only where an operand that selects positions (dynamic_slice/dynamic_update_slice start
/// indices, gather/scatter_add indices) is itself batched: exact for every value (clamping and
/// eager IndexError behave as per example), at the cost of one equation group per example.
inline std::pair<std::vector<Array>, std::vector<int64_t>> per_example_batch(
    const Primitive& p, const std::vector<Array>& args, const std::vector<int64_t>& dims,
    const Params& params) {
  const int64_t size = batch_axis_size(args, dims);
  if (size == 0) {
    std::vector<ShapedArray> elem;
    for (size_t i = 0; i < args.size(); ++i) {
      ShapedArray a = args[i].aval();
      if (dims[i] != kNotMapped) a.shape.erase(a.shape.begin() + dims[i]);
      elem.push_back(a);
    }
    ShapedArray out = abstract_eval(p, elem, params, std::source_location::current()).at(0);
    out.shape.insert(out.shape.begin(), 0);
    return {{lax::zeros_like_aval(out)}, {0}};
  }
  std::vector<Array> rows;
  rows.reserve(size_t(size));
  for (int64_t b = 0; b < size; ++b) {
    std::vector<Array> ex;
    ex.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) ex.push_back(batch_element(args[i], dims[i], b));
    rows.push_back(lax::expand_dims(minijax::bind1(p, ex, params), {0}));
  }
  return {{lax::concatenate(rows, 0)}, {0}};
}

}  // namespace minijax::rules

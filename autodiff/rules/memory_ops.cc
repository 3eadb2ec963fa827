// minijax autodiff rules of the memory primitives: device_put (linear: JVP moves the tangent,
// transpose moves the cotangent back to the source memory kind) and optimization_barrier
// (JVP: one barrier over the primals and one over the tangents, so linearize keeps them apart;
// transpose: identity; batching: the barrier over the batched values).
#include "autodiff/rules/linear_util.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/memory_ops.h"

namespace minijax {

namespace {

using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;

std::vector<Array> device_put_transpose(const std::vector<Array>& cts, const std::vector<Array>&,
                                        const std::vector<ShapedArray>& avals, const Params&) {
  if (!cts[0].defined()) return {Array()};
  return {lax::device_put(cts[0], avals[0].memory_kind)};
}

BOuts device_put_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims,
                       const Params& p) {
  return {{minijax::bind1(DevicePutParams::primitive(), {args[0]}, p)}, {dims[0]}};
}

Outs barrier_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                 const Params& p) {
  // One barrier over the primals and another over the nonzero tangents: under direct linearize
  // the primals stay on their own trace (concrete eagerly) and only tangents are staged, so the
  // linear jaxpr never mixes primal values into a linear equation.
  std::vector<Array> tin;
  std::vector<size_t> where;
  for (size_t i = 0; i < tangents.size(); ++i)
    if (tangents[i].defined() && is_floating(primals[i].dtype())) {
      where.push_back(i);
      tin.push_back(tangents[i]);
    }
  auto pouts = minijax::bind(OptimizationBarrierParams::primitive(), primals, p);
  std::vector<Array> touts(primals.size());
  if (!tin.empty()) {
    auto tout = minijax::bind(OptimizationBarrierParams::primitive(), tin, p);
    for (size_t k = 0; k < where.size(); ++k) touts[where[k]] = tout[k];
  }
  return {pouts, touts};
}

std::vector<Array> barrier_transpose(const std::vector<Array>& cts, const std::vector<Array>& args,
                                     const std::vector<ShapedArray>&, const Params&) {
  std::vector<Array> r(args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].defined()) r[i] = cts[i];
  return r;
}

BOuts barrier_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims,
                    const Params& p) {
  return {minijax::bind(OptimizationBarrierParams::primitive(), args, p), dims};
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("device_put");
    p.jvp = rules::linear_unary_jvp(p);
    p.transpose = device_put_transpose;
    p.batch = device_put_batch;
  }
  {
    auto& p = get_or_create_primitive("optimization_barrier");
    p.jvp = barrier_jvp;
    p.transpose = barrier_transpose;
    p.batch = barrier_batch;
  }
});

}  // namespace

}  // namespace minijax

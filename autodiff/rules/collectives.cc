// minijax autodiff rules of the collectives: JVPs (they are linear), transposes (all_gather <->
// reduce_scatter, psum -> psum, all_to_all swaps its dims, collective_permute inverts) and batching.
#include "autodiff/batching_util.h"
#include "autodiff/rules/linear_util.h"
#include "core/collectives.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/collectives.h"

namespace minijax {
namespace {

using Kind = CollectiveParams::Kind;

// A batch rule for a unary collective of kind `k`: the batch dim moved to the front, every dim
// parameter shifted by one by `shift`, the result batched at dim 0. Sources: JAX's
// _all_gather_batcher, _reduce_scatter_batcher, _all_to_all_batcher (the vmapped axis is not a
// mesh axis).
BatchRule front_batch(Kind k, void (*shift)(CollectiveParams&)) {
  return [k, shift](const std::vector<Array>& args, const std::vector<int64_t>& dims,
                    const Params& params) -> std::pair<std::vector<Array>, std::vector<int64_t>> {
    Array x = move_batch_dim(args[0], dims[0], 0);
    CollectiveParams c = CollectiveParams::from(k, params);
    shift(c);
    return {{minijax::bind1(c.primitive(), {x}, c.to_params())}, {0}};
  };
}

// Elementwise collectives (all_reduce, collective_permute) keep the batch dim where it is.
BatchRule same_dim_batch(Kind k) {
  return [k](const std::vector<Array>& args, const std::vector<int64_t>& dims,
             const Params& params) -> std::pair<std::vector<Array>, std::vector<int64_t>> {
    return {{minijax::bind1(CollectiveParams::primitive_of(k), {args[0]}, params)}, {dims[0]}};
  };
}

void require_sum(const Params& p, const char* what) {
  const std::string r = CollectiveParams::from(Kind::all_reduce, p).reduction;
  if (r != "sum")
    throw ValueError(std::string("all_reduce[reduction=") + r + "] over axis has no " + what +
                     " rule: only the sum (psum) is linear");
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("all_gather");
    p.jvp = rules::linear_unary_jvp(p);
    // all_gather's transpose is a reduce_scatter (sum) along the gather dim; untiled, the
    // stacked dim becomes a dim of size 1 that is squeezed back (JAX _all_gather_transpose_rule).
    p.transpose = [](const std::vector<Array>& cts, const std::vector<Array>&, const std::vector<ShapedArray>& avals,
                     const Params& params) -> std::vector<Array> {
      if (!cts[0].defined()) return {Array()};
      const CollectiveParams c = CollectiveParams::from(Kind::all_gather, params);
      Array r = lax::reduce_scatter(cts[0], c.axis_name, c.axis_size, c.gather_dimension);
      if (!c.tiled) r = lax::reshape(r, avals[0].shape);
      return {r};
    };
    p.batch = front_batch(Kind::all_gather, [](CollectiveParams& c) { ++c.gather_dimension; });
  }
  {
    auto& p = get_or_create_primitive("reduce_scatter");
    p.jvp = rules::linear_unary_jvp(p);
    p.transpose = [](const std::vector<Array>& cts, const std::vector<Array>&, const std::vector<ShapedArray>&,
                     const Params& params) -> std::vector<Array> {
      if (!cts[0].defined()) return {Array()};
      const CollectiveParams c = CollectiveParams::from(Kind::reduce_scatter, params);
      return {lax::all_gather(cts[0], c.axis_name, c.axis_size, c.scatter_dimension, true)};
    };
    p.batch = front_batch(Kind::reduce_scatter, [](CollectiveParams& c) { ++c.scatter_dimension; });
  }
  {
    auto& p = get_or_create_primitive("all_reduce");
    p.jvp = [](const std::vector<Array>& primals, const std::vector<Array>& tangents,
               const Params& params) -> std::pair<std::vector<Array>, std::vector<Array>> {
      require_sum(params, "JVP");
      return rules::linear_unary_jvp(CollectiveParams::primitive_of(Kind::all_reduce))(primals, tangents, params);
    };
    // psum's transpose is psum (JAX _psum_transpose_rule): every device's cotangent flows to
    // every device's input.
    p.transpose = [](const std::vector<Array>& cts, const std::vector<Array>&, const std::vector<ShapedArray>&,
                     const Params& params) -> std::vector<Array> {
      require_sum(params, "transposition");
      if (!cts[0].defined()) return {Array()};
      return {minijax::bind1(CollectiveParams::primitive_of(Kind::all_reduce), {cts[0]}, params)};
    };
    p.batch = same_dim_batch(Kind::all_reduce);
  }
  {
    auto& p = get_or_create_primitive("all_to_all");
    p.jvp = rules::linear_unary_jvp(p);
    p.transpose = [](const std::vector<Array>& cts, const std::vector<Array>&, const std::vector<ShapedArray>&,
                     const Params& params) -> std::vector<Array> {
      if (!cts[0].defined()) return {Array()};
      const CollectiveParams c = CollectiveParams::from(Kind::all_to_all, params);
      return {lax::all_to_all(cts[0], c.axis_name, c.axis_size, c.concat_dimension, c.split_dimension)};
    };
    p.batch = front_batch(Kind::all_to_all, [](CollectiveParams& c) {
      ++c.split_dimension;
      ++c.concat_dimension;
    });
  }
  {
    auto& p = get_or_create_primitive("collective_permute");
    p.jvp = rules::linear_unary_jvp(p);
    // The transpose sends cotangents back along the inverted pairs (JAX _ppermute_transpose_rule).
    p.transpose = [](const std::vector<Array>& cts, const std::vector<Array>&, const std::vector<ShapedArray>&,
                     const Params& params) -> std::vector<Array> {
      if (!cts[0].defined()) return {Array()};
      const CollectiveParams c = CollectiveParams::from(Kind::collective_permute, params);
      std::vector<int64_t> inv = c.source_target_pairs;
      for (size_t i = 0; i + 1 < inv.size(); i += 2) std::swap(inv[i], inv[i + 1]);
      return {lax::collective_permute(cts[0], c.axis_name, c.axis_size, inv)};
    };
    p.batch = same_dim_batch(Kind::collective_permute);
  }
  {
    auto& p = get_or_create_primitive("ragged_all_to_all");
    // Linear in (input, output) for fixed offsets and sizes: the tangent runs the same exchange
    // on the tangents (a zero tangent materialized as zeros); the index operands get no tangent.
    p.jvp = [](const std::vector<Array>& primals, const std::vector<Array>& tangents,
               const Params& params) -> std::pair<std::vector<Array>, std::vector<Array>> {
      const Primitive& prim = CollectiveParams::primitive_of(Kind::ragged_all_to_all);
      Array out = minijax::bind1(prim, primals, params);
      if (!is_floating(out.dtype())) return {{out}, {Array()}};
      std::vector<Array> targs = primals;
      for (size_t i = 0; i < 2; ++i)
        targs[i] = tangents[i].defined() ? tangents[i] : lax::zeros_like_aval(primals[i].aval().strip_weak());
      return {{out}, {minijax::bind1(prim, targs, params)}};
    };
    p.no_transpose_reason =
        "later work for the ragged exchange: its transpose is a ragged_all_to_all with the send and "
        "receive offsets swapped per peer, which needs the peers' offsets (an all_to_all of the index operands)";
    p.no_batch_reason = "vmap of a ragged exchange would need per-example offsets; not supported";
  }
  {
    auto& p = get_or_create_primitive("axis_index");
    p.no_jvp_reason = "no operands (integer output: its tangent is always zero)";
    p.no_transpose_reason = "not linear (no operands)";
    p.no_batch_reason = "no operands: never batched";
  }
});

}  // namespace
}  // namespace minijax

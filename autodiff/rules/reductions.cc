// minijax autodiff rules of the reductions: JVP, transpose and batching of reduce_sum,
// reduce_max, reduce_min, reduce_prod, reduce_and/or/xor, argmax, argmin and cumsum (JAX's rules,
// jax/_src/lax/).
//
// reduce_sum and cumsum are linear (transposes: broadcast_in_dim back; cumsum reversed).
// reduce_max/min use JAX's "chooser" JVP: the tangent averaged over the locations equal to the
// result. reduce_prod's JVP: d(prod x) = sum_i t_i * prod_{j != i} x_j, with the exclusive
// products formed as (exclusive prefix product) * (exclusive suffix product), each a log-depth
// Hillis-Steele doubling scan of pads and muls: no division, so zeros are handled exactly (JAX
// reaches the same products through its pairwise reduction JVP). argmax/argmin and
// reduce_and/or/xor have integer or bool outputs: zero (empty) tangents.
#include <algorithm>

#include "autodiff/batching_util.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/array_ops.h"

namespace minijax {

namespace {

using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;

std::vector<int64_t> kept_dims(int64_t ndim, const std::vector<int64_t>& axes) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < ndim; ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) r.push_back(i);
  return r;
}

// Batching rule shared by the reductions with an `axes` param (View: ReduceParams or
// ArgReduceParams): shift the axes past the batch dim.
template <class View>
BatchRule axes_batch_rule(const std::string& name) {
  return [name](const std::vector<Array>& args, const std::vector<int64_t>& dims,
                const Params& params) -> BOuts {
    const int64_t d = dims.at(0);
    View v = View::from(params, name);
    v.axes = batched_axes(v.axes, d);
    Array out = minijax::bind1(primitive(name), {args.at(0)}, v.to_params());
    return {{out}, {bdim_after_removing(d, v.axes)}};
  };
}

// ---- reduce_max / reduce_min: JAX's _reduce_chooser_jvp_rule -----------------------------------
JvpRule chooser_jvp(const std::string& name) {
  return [name](const std::vector<Array>& primals, const std::vector<Array>& tangents,
                const Params& params) -> Outs {
    const Array& x = primals.at(0);
    const auto axes = ReduceParams::from(params, name).axes;
    Array ans = minijax::bind1(primitive(name), {x}, params);
    const Array& t = tangents.at(0);
    if (!t.defined() || !is_floating(x.dtype())) return {{ans}, {Array()}};
    Array ans_b = lax::broadcast_in_dim(ans, x.shape(), kept_dims(x.ndim(), axes));
    Array loc = lax::convert_element_type(lax::eq(x, ans_b), t.dtype());
    Array counts = lax::reduce_sum(loc, axes);
    Array tout = lax::div(lax::reduce_sum(lax::mul(t, loc), axes), counts);
    return {{ans}, {tout}};
  };
}

// ---- reduce_prod ------------------------------------------------------------------------------

// y shifted right by s along its last axis, filled with ones (pad low s, crop s at the end).
Array shift_in_ones(const Array& y, int64_t s) {
  std::vector<lax::PadConfig> cfg(size_t(y.ndim()), lax::PadConfig{0, 0, 0});
  cfg.back() = lax::PadConfig{s, -s, 0};
  return lax::pad(y, lax::scalar(1.0, y.dtype()), cfg);
}

// Exclusive prefix products along the last axis: out[..., i] = prod_{j < i} y[..., j].
Array exclusive_prefix_prod(const Array& y) {
  const int64_t n = y.shape().back();
  Array p = y;
  for (int64_t s = 1; s < n; s *= 2) p = lax::mul(p, shift_in_ones(p, s));
  return shift_in_ones(p, 1);
}

Outs reduce_prod_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                     const Params& params) {
  const Array& x = primals.at(0);
  const Primitive& reduce_prod = primitive("reduce_prod");
  std::vector<int64_t> axes = ReduceParams::from(params, reduce_prod.name).axes;
  std::sort(axes.begin(), axes.end());
  Array ans = minijax::bind1(reduce_prod, {x}, params);
  const Array& t = tangents.at(0);
  if (!t.defined() || !is_floating(x.dtype())) return {{ans}, {Array()}};
  auto kept = kept_dims(x.ndim(), axes);
  Shape flat;
  int64_t n = 1;
  for (int64_t k : kept) flat.push_back(x.shape()[size_t(k)]);
  for (int64_t a : axes) n *= x.shape()[size_t(a)];
  if (n == 0) return {{ans}, {lax::full(ans.shape(), 0.0, t.dtype())}};
  flat.push_back(n);
  std::vector<int64_t> perm = kept;
  perm.insert(perm.end(), axes.begin(), axes.end());
  bool ident = true;
  for (size_t i = 0; i < perm.size(); ++i) ident &= perm[i] == int64_t(i);
  auto to_rows = [&](const Array& v) {  // [kept..., n]: the reduced elements last
    return lax::reshape(ident ? v : lax::transpose(v, perm), flat);
  };
  Array xr = to_rows(x), tr = to_rows(t);
  const int64_t last = int64_t(flat.size()) - 1;
  Array left = exclusive_prefix_prod(xr);
  Array right = lax::rev(exclusive_prefix_prod(lax::rev(xr, {last})), {last});
  Array tout = lax::reduce_sum(lax::mul(tr, lax::mul(left, right)), {last});
  return {{ans}, {tout}};
}

// ---- argmax / argmin: integer outputs, zero tangents -------------------------------------------
JvpRule zero_jvp(const std::string& name) {
  return [name](const std::vector<Array>& primals, const std::vector<Array>&,
                const Params& params) -> Outs {
    return {{minijax::bind1(primitive(name), {primals.at(0)}, params)}, {Array()}};
  };
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("reduce_sum");
    p.jvp = [](const std::vector<Array>& primals, const std::vector<Array>& tangents,
               const Params& params) -> Outs {
      Array ans = minijax::bind1(primitive("reduce_sum"), {primals.at(0)}, params);
      const Array& t = tangents.at(0);
      if (!t.defined()) return {{ans}, {Array()}};
      return {{ans}, {minijax::bind1(primitive("reduce_sum"), {t}, params)}};
    };
    p.transpose = [](const std::vector<Array>& cts, const std::vector<Array>&,
                     const std::vector<ShapedArray>& avals, const Params& params) {
      const Array& ct = cts.at(0);
      if (!ct.defined()) return std::vector<Array>{Array()};
      const ShapedArray& a = avals.at(0);
      return std::vector<Array>{
          lax::broadcast_in_dim(ct, a.shape, kept_dims(a.ndim(), ReduceParams::from(params).axes))};
    };
    p.batch = axes_batch_rule<ReduceParams>("reduce_sum");
  }
  for (const char* name : {"reduce_max", "reduce_min"}) {
    auto& p = get_or_create_primitive(name);
    p.jvp = chooser_jvp(name);
    p.no_transpose_reason = "not linear";
    p.batch = axes_batch_rule<ReduceParams>(name);
  }
  {
    auto& p = get_or_create_primitive("reduce_prod");
    p.jvp = reduce_prod_jvp;
    p.no_transpose_reason = "not linear";
    p.batch = axes_batch_rule<ReduceParams>("reduce_prod");
  }
  // reduce_and/or/xor: bool or integer outputs, so float0 (symbolic zero) tangents, as JAX's.
  for (const char* name : {"reduce_and", "reduce_or", "reduce_xor"}) {
    auto& p = get_or_create_primitive(name);
    p.jvp = zero_jvp(name);
    p.no_transpose_reason = "not linear (bool or integer output)";
    p.batch = axes_batch_rule<ReduceParams>(name);
  }
  for (const char* name : {"argmax", "argmin"}) {
    auto& p = get_or_create_primitive(name);
    p.jvp = zero_jvp(name);
    p.no_transpose_reason = "not linear (integer output)";
    p.batch = axes_batch_rule<ArgReduceParams>(name);
  }
  {
    auto& p = get_or_create_primitive("cumsum");
    p.jvp = [](const std::vector<Array>& primals, const std::vector<Array>& tangents,
               const Params& params) -> Outs {
      Array ans = minijax::bind1(primitive("cumsum"), {primals.at(0)}, params);
      const Array& t = tangents.at(0);
      if (!t.defined()) return {{ans}, {Array()}};
      return {{ans}, {minijax::bind1(primitive("cumsum"), {t}, params)}};
    };
    p.transpose = [](const std::vector<Array>& cts, const std::vector<Array>&,
                     const std::vector<ShapedArray>&, const Params& params) {
      const Array& ct = cts.at(0);
      if (!ct.defined()) return std::vector<Array>{Array()};
      const CumsumParams c = CumsumParams::from(params);
      return std::vector<Array>{lax::cumsum(ct, c.axis, !c.reverse)};
    };
    p.batch = [](const std::vector<Array>& args, const std::vector<int64_t>& dims,
                 const Params& params) -> BOuts {
      const int64_t d = dims.at(0);
      CumsumParams c = CumsumParams::from(params);
      c.axis = batched_axis(c.axis, d);
      return {{minijax::bind1(primitive("cumsum"), {args.at(0)}, c.to_params())}, {d}};
    };
  }
});

}  // namespace

}  // namespace minijax

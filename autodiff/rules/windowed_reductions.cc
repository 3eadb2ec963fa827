// minijax autodiff rules of the windowed reductions: JVP, transpose and batching of
// reduce_window_sum/max/min, reduce_window, select_and_scatter_add and select_and_gather_add
// (JAX v0.7.0's jax/_src/lax/windowed_reductions.py).
//
// reduce_window_sum is linear; its transpose pads the cotangent (interior stride - 1, edges from
// JAX's _conv_general_vjp_lhs_padding) and sums it over the same window with the base dilation
// as strides (JAX's _reduce_window_sum_transpose_rule). reduce_window_max/min's JVP is
// select_and_gather_add(tangent, operand, ge/le) (_reduce_window_chooser_jvp_rule);
// select_and_gather_add is linear in its tangents with transpose select_and_scatter_add, and
// select_and_scatter_add linear in its source with transpose select_and_gather_add, over the same
// window (ours takes the dilations, so the transpose of a dilated window needs no padding or
// slicing; JAX refuses window dilation there). The generic reduce_window's JVP is JAX's
// reduce_window_jvp: one reduce_window over (operands, tangents) whose body is the body's JVP
// (a nonzero init-value tangent is a NotDifferentiableError, as JAX raises); its
// primal outputs come from a reduce_window over the primals alone, so that linearize keeps them
// known. It has no transpose (JAX neither: reverse mode raises NotDifferentiableError naming
// reduce_window). Batching folds the batch dimension into the window as a dimension of size 1
// (JAX's _reduce_window_batch_rule, _generic_reduce_window_batch_rule and the select_and_*
// rules); batched init values of the generic reduce_window, which JAX refuses, are mapped by a
// loop over the batch.
#include <memory>

#include "autodiff/batching_util.h"
#include "autodiff/jvp.h"
#include "autodiff/rules/linear_util.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/staging.h"
#include "core/trace.h"
#include "core/views/windowed.h"
#include "core/windowed_reductions.h"

namespace minijax {
namespace {

using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;

int64_t dilate(int64_t n, int64_t d) { return n == 0 ? 0 : (n - 1) * d + 1; }

std::vector<std::pair<int64_t, int64_t>> pairs_of(const WindowParams& w) {
  std::vector<std::pair<int64_t, int64_t>> p;
  for (int64_t d = 0; d < w.rank(); ++d) p.emplace_back(w.pad_lo(d), w.pad_hi(d));
  return p;
}

// The window with a dimension of size 1 (stride 1, no padding, no dilation) inserted at `at`.
WindowParams with_unit_dim(WindowParams w, int64_t at) {
  auto ins = [at](std::vector<int64_t>& v, int64_t x) { v.insert(v.begin() + at, x); };
  ins(w.window_dimensions, 1);
  ins(w.window_strides, 1);
  ins(w.base_dilation, 1);
  ins(w.window_dilation, 1);
  w.padding.insert(w.padding.begin() + 2 * at, {0, 0});
  return w;
}

// ---- reduce_window_sum ---------------------------------------------------------------------------

std::vector<Array> sum_transpose(const std::vector<Array>& cts, const std::vector<Array>&,
                                 const std::vector<ShapedArray>& avals, const Params& params) {
  const Array& ct = cts.at(0);
  if (!ct.defined()) return {Array()};
  const WindowParams w = ReduceWindowMonoidParams::from(params).window;
  const Shape& in = avals.at(0).shape;
  if (shape_size(in) == 0) return {lax::zeros_like_aval(avals[0])};
  std::vector<lax::PadConfig> cfg;
  for (int64_t d = 0; d < w.rank(); ++d) {
    const size_t i = size_t(d);
    const int64_t win = dilate(w.window_dimensions[i], w.window_dilation[i]);
    const int64_t lo = win - w.pad_lo(d) - 1;
    const int64_t hi = dilate(in[i], w.base_dilation[i]) + win - 1 -
                       dilate(ct.shape()[i], w.window_strides[i]) - lo;
    cfg.push_back({lo, hi, w.window_strides[i] - 1});
  }
  Array padded = lax::pad(ct, lax::scalar(0.0, ct.dtype()), cfg);
  const std::vector<std::pair<int64_t, int64_t>> none(in.size(), {0, 0});
  return {lax::reduce_window_sum(padded, w.window_dimensions, w.base_dilation, none, {}, w.window_dilation)};
}

// Batching of the monoids: the batch dimension becomes a window dimension of size 1 in place.
BatchRule monoid_batch(const Primitive& prim) {
  return [&prim](const std::vector<Array>& args, const std::vector<int64_t>& dims,
                 const Params& params) -> BOuts {
    const int64_t d = dims.at(0);
    const WindowParams w = with_unit_dim(ReduceWindowMonoidParams::from(params).window, d);
    return {{minijax::bind1(prim, {args.at(0)}, ReduceWindowMonoidParams{w}.to_params())}, {d}};
  };
}

// ---- reduce_window_max / reduce_window_min ---------------------------------------------------------

JvpRule chooser_jvp(const Primitive& prim, lax::SelectPrim select) {
  return [&prim, select](const std::vector<Array>& primals, const std::vector<Array>& tangents,
                         const Params& params) -> Outs {
    const Array& x = primals.at(0);
    Array ans = minijax::bind1(prim, {x}, params);
    const Array& t = tangents.at(0);
    if (!t.defined() || !is_floating(x.dtype())) return {{ans}, {Array()}};
    const WindowParams w = ReduceWindowMonoidParams::from(params).window;
    return {{ans},
            {lax::select_and_gather_add(t, x, select, w.window_dimensions, w.window_strides, pairs_of(w),
                                        w.base_dilation, w.window_dilation)}};
  };
}

// ---- select_and_scatter_add / select_and_gather_add ------------------------------------------------

// Both are linear in operand 0 (source, tangents) and piecewise constant in operand 1.
JvpRule select_jvp(const Primitive& prim) {
  return [&prim](const std::vector<Array>& primals, const std::vector<Array>& tangents,
                 const Params& params) -> Outs {
    Array ans = minijax::bind1(prim, primals, params);
    const Array& t = tangents.at(0);
    if (!t.defined()) return {{ans}, {Array()}};
    return {{ans}, {minijax::bind1(prim, {t, primals.at(1)}, params)}};
  };
}

// The transpose of one select_and_* primitive with respect to operand 0 is the other one.
TransposeRule select_transpose(const Primitive& other) {
  return [&other](const std::vector<Array>& cts, const std::vector<Array>& args,
                  const std::vector<ShapedArray>&, const Params& params) -> std::vector<Array> {
    const Array& ct = cts.at(0);
    if (!ct.defined()) return {Array(), Array()};
    if (!args.at(1).defined())
      throw NotDifferentiableError(other.name + " transpose: the operand (the selection) must not be linear");
    return {minijax::bind1(other, {ct, args[1]}, params), Array()};
  };
}

BatchRule select_batch(const Primitive& prim) {
  return [&prim](const std::vector<Array>& args, const std::vector<int64_t>& dims,
                 const Params& params) -> BOuts {
    auto [moved, size] = batch_to_front(args, dims);
    (void)size;
    SelectAndWindowParams s = SelectAndWindowParams::from(params);
    s.window = with_unit_dim(s.window, 0);
    return {{minijax::bind1(prim, moved, s.to_params())}, {0}};
  };
}

// ---- reduce_window (generic) -------------------------------------------------------------------

// The JVP body over (acc..., acc tangents..., x..., x tangents...) -> (acc..., acc tangents...):
// tangents for the floating slots `fl` only.
ClosedJaxprPtr jvp_body(const ClosedJaxprPtr& body, const std::vector<size_t>& fl) {
  const Jaxpr& j = *body->jaxpr;
  const size_t n = j.outvars.size(), m = fl.size();
  std::vector<ShapedArray> acc;
  for (size_t k = 0; k < n; ++k) acc.push_back(j.invars[k].aval());
  std::vector<ShapedArray> avals = acc;
  for (size_t f : fl) avals.push_back(tangent_aval(acc[f]));
  const std::vector<ShapedArray> half = avals;
  avals.insert(avals.end(), half.begin(), half.end());
  FlatFn fn = [body, n, m, fl](const std::vector<Array>& xs) {
    const size_t half = n + m;
    std::vector<Array> primals, tangents(2 * n);
    for (size_t part = 0; part < 2; ++part)
      for (size_t k = 0; k < n; ++k) primals.push_back(xs[part * half + k]);
    for (size_t part = 0; part < 2; ++part)
      for (size_t i = 0; i < m; ++i) tangents[part * n + fl[i]] = xs[part * half + n + i];
    FlatFn f = [body](const std::vector<Array>& a) { return eval_jaxpr(*body, a); };
    auto [po, to] = jvp_flat(f, primals, tangents);
    std::vector<Array> outs = po;
    for (size_t f2 : fl) outs.push_back(instantiate_zero(to[f2], po[f2].aval()));
    return outs;
  };
  return std::make_shared<ClosedJaxpr>(trace_to_jaxpr(fn, avals));
}

Outs reduce_window_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                       const Params& params) {
  const Primitive& prim = primitive("reduce_window");
  const ReduceWindowParams rp = ReduceWindowParams::from(params);
  const size_t n = primals.size() / 2;
  std::vector<Array> ans = minijax::bind(prim, primals, params);
  std::vector<size_t> fl;
  for (size_t k = 0; k < n; ++k)
    if (is_floating(primals[k].dtype())) fl.push_back(k);
  std::vector<Array> tout(n);
  for (size_t k = n; k < tangents.size(); ++k)
    if (tangents[k].defined())  // JAX's reduce_window_jvp raises here too
      throw NotDifferentiableError("reduce_window: the JVP does not take a nonzero tangent of init value " +
                                   std::to_string(k - n) + " (" + primals[k].aval().str() +
                                   "); pass the init values as constants");
  bool any = false;
  for (size_t f : fl) any = any || tangents[f].defined();
  if (!any) return {ans, tout};
  std::vector<Array> args(primals.begin(), primals.begin() + std::ptrdiff_t(n));
  for (size_t f : fl) args.push_back(instantiate_zero(tangents[f], primals[f].aval()));
  args.insert(args.end(), primals.begin() + std::ptrdiff_t(n), primals.end());
  for (size_t f : fl) args.push_back(instantiate_zero(tangents[n + f], primals[n + f].aval()));
  std::vector<Array> outs = minijax::bind(prim, args,
                                          ReduceWindowParams{jvp_body(rp.jaxpr, fl), rp.window}.to_params());
  for (size_t i = 0; i < fl.size(); ++i) tout[fl[i]] = outs[n + i];
  return {ans, tout};
}

BOuts reduce_window_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims,
                          const Params& params) {
  const Primitive& prim = primitive("reduce_window");
  const size_t n = args.size() / 2;
  bool init_batched = false;
  for (size_t k = n; k < args.size(); ++k) init_batched = init_batched || dims[k] != kNotMapped;
  const int64_t size = batch_axis_size(args, dims);
  if (init_batched) {  // one reduce_window per example, stacked
    std::vector<std::vector<Array>> rows(n);
    for (int64_t b = 0; b < size; ++b) {
      std::vector<Array> ex;
      for (size_t i = 0; i < args.size(); ++i) ex.push_back(rules::batch_element(args[i], dims[i], b));
      std::vector<Array> r = minijax::bind(prim, ex, params);
      for (size_t k = 0; k < n; ++k) rows[k].push_back(lax::expand_dims(r[k], {0}));
    }
    std::vector<Array> outs;
    for (size_t k = 0; k < n; ++k) {
      if (size > 0) {
        outs.push_back(lax::concatenate(rows[k], 0));
        continue;
      }
      std::vector<ShapedArray> elem;  // an empty batch: zeros of the batched result's aval
      for (size_t i = 0; i < args.size(); ++i) {
        ShapedArray a = args[i].aval();
        if (dims[i] != kNotMapped) a.shape.erase(a.shape.begin() + dims[i]);
        elem.push_back(a);
      }
      ShapedArray out = abstract_eval(prim, elem, params, std::source_location::current()).at(k);
      out.shape.insert(out.shape.begin(), 0);
      outs.push_back(lax::zeros_like_aval(out));
    }
    return {outs, std::vector<int64_t>(n, 0)};
  }
  std::vector<Array> moved;
  for (size_t k = 0; k < n; ++k) moved.push_back(materialize_batch(args[k], dims[k], size, 0));
  moved.insert(moved.end(), args.begin() + std::ptrdiff_t(n), args.end());
  ReduceWindowParams rp = ReduceWindowParams::from(params);
  rp.window = with_unit_dim(rp.window, 0);
  return {minijax::bind(prim, moved, rp.to_params()), std::vector<int64_t>(n, 0)};
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("reduce_window_sum");
    p.jvp = rules::linear_unary_jvp(p);
    p.transpose = sum_transpose;
    p.batch = monoid_batch(p);
  }
  const std::pair<const char*, lax::SelectPrim> choosers[] = {{"reduce_window_max", lax::SelectPrim::ge},
                                                              {"reduce_window_min", lax::SelectPrim::le}};
  for (auto [name, select] : choosers) {
    auto& p = get_or_create_primitive(name);
    p.jvp = chooser_jvp(p, select);
    p.no_transpose_reason = "not linear";
    p.batch = monoid_batch(p);
  }
  auto& scatter = get_or_create_primitive("select_and_scatter_add");
  auto& gather = get_or_create_primitive("select_and_gather_add");
  scatter.jvp = select_jvp(scatter);
  scatter.transpose = select_transpose(gather);
  scatter.batch = select_batch(scatter);
  gather.jvp = select_jvp(gather);
  gather.transpose = select_transpose(scatter);
  gather.batch = select_batch(gather);
  auto& rw = get_or_create_primitive("reduce_window");
  rw.jvp = reduce_window_jvp;
  rw.no_transpose_reason =
      "not linear: as in JAX v0.7.0, the generic reduce_window has a JVP (a reduce_window over primal "
      "and tangent pairs) but no reverse-mode rule; reduce_window_sum, reduce_window_max and "
      "reduce_window_min have one";
  rw.batch = reduce_window_batch;
});

}  // namespace
}  // namespace minijax

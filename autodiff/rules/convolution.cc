// minijax autodiff rules of conv_general_dilated: the bilinear JVP, the transposes with respect to
// either operand (themselves conv_general_dilated equations, so second order works) and vmap.
// Sources: JAX v0.7.0 jax/_src/lax/convolution.py: _conv_general_dilated_transpose_lhs/_rhs,
// _conv_general_vjp_lhs_padding/_rhs_padding, _conv_general_dilated_batch_rule,
// _reshape_axis_into/_out_of (ad.defbilinear for the JVP).
#include <algorithm>
#include <optional>
#include <utility>

#include "core/lax.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/windowed.h"

namespace minijax {

namespace {

using Ints = std::vector<int64_t>;

const Primitive& conv_prim() {
  static const Primitive& p = primitive("conv_general_dilated");
  return p;
}

Array conv_with(const Array& x, const Array& y, const ConvParams& p) {
  return minijax::bind1(conv_prim(), {x, y}, p.to_params());
}

// A tangent that carries a value (not a symbolic or float0 zero).
bool carries(const Array& t) { return t.defined() && t.dtype() != DType::float0; }

int64_t dilate(int64_t d, int64_t k) { return d <= 0 ? 0 : 1 + k * (d - 1); }

Ints swap01(Ints spec) {
  std::swap(spec[0], spec[1]);
  return spec;
}
Ints spatial(const Ints& spec) { return Ints(spec.begin() + 2, spec.end()); }
Ints take(const Shape& s, const Ints& dims) {
  Ints r;
  for (int64_t d : dims) r.push_back(s[size_t(d)]);
  return r;
}

// JAX's _reshape_axis_out_of: dim `src` of x split into (size1, size / size1).
Array reshape_axis_out_of(int64_t src, int64_t size1, const Array& x) {
  Shape s = x.shape();
  s[size_t(src)] /= size1;
  s.insert(s.begin() + src, size1);
  return lax::reshape(x, s);
}

// JAX's _reshape_axis_into: dim `src` of x merged into dim `dst` (numbered as if src were
// removed) as its major part.
Array reshape_axis_into(int64_t src, int64_t dst, const Array& x) {
  Ints perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != src) perm.push_back(i);
  perm.insert(perm.begin() + dst, src);
  Shape s = x.shape();
  s.erase(s.begin() + src);
  s[size_t(dst)] *= x.shape()[size_t(src)];
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  return lax::reshape(identity ? x : lax::transpose(x, perm), s);
}

Ints flatten(const std::vector<std::pair<int64_t, int64_t>>& pads) {
  Ints f;
  for (auto [lo, hi] : pads) f.insert(f.end(), {lo, hi});
  return f;
}

// JAX's _conv_general_vjp_lhs_padding (spatial sizes in window_strides' order).
Ints vjp_lhs_padding(const Ints& in, const Ints& window, const Ints& out, const ConvParams& p) {
  std::vector<std::pair<int64_t, int64_t>> pads;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t ld = dilate(in[i], p.lhs_dilation[i]), rd = dilate(window[i], p.rhs_dilation[i]);
    const int64_t od = dilate(out[i], p.window_strides[i]);
    const int64_t before = rd - p.pad_lo(int64_t(i)) - 1;
    pads.emplace_back(before, ld + rd - 1 - od - before);
  }
  return flatten(pads);
}

// JAX's _conv_general_vjp_rhs_padding.
Ints vjp_rhs_padding(const Ints& in, const Ints& window, const Ints& out, const ConvParams& p) {
  std::vector<std::pair<int64_t, int64_t>> pads;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t ld = dilate(in[i], p.lhs_dilation[i]), rd = dilate(window[i], p.rhs_dilation[i]);
    const int64_t od = dilate(out[i], p.window_strides[i]);
    const int64_t lo = p.pad_lo(int64_t(i));
    pads.emplace_back(lo, (od - ld) + (rd - lo - 1));
  }
  return flatten(pads);
}

// The cotangent g (of the result's dtype) and the other operand y converted to the wider of
// their dtypes, and the transposed equation's preferred_element_type: the original one when it is
// that dtype, else None. (JAX contracts the two dtypes directly; minijax's dtype rule wants one.)
std::pair<DType, std::optional<DType>> transposed_dtypes(const Array& g, const Array& y,
                                                         const ConvParams& p) {
  const DType wide = itemsize(g.dtype()) >= itemsize(y.dtype()) ? g.dtype() : y.dtype();
  std::optional<DType> pref;
  if (p.preferred_element_type == wide) pref = wide;
  return {wide, pref};
}
Array as_dtype(const Array& x, DType d) {
  return x.dtype() == d ? x : lax::convert_element_type(x, d, false);
}

// JAX's _conv_general_dilated_transpose_lhs: the cotangent of lhs is a convolution of g with the
// spatially reversed kernel whose feature dims are swapped (the groups moved into the kernel's
// input features), window_strides and lhs_dilation exchanged.
Array transpose_lhs(const Array& g, const ShapedArray& lhs_aval, const Array& rhs, const ConvParams& p) {
  if (g.size() == 0 || rhs.size() == 0 || lhs_aval.size() == 0)
    return lax::zeros_like_aval(lhs_aval.strip_weak());
  const auto [wide, pref] = transposed_dtypes(g, rhs, p);
  Array w = as_dtype(rhs, wide);
  const Ints& rs = p.rhs_spec;
  int64_t groups = p.feature_group_count;
  if (p.feature_group_count > 1 || p.batch_group_count > 1) {
    groups = std::max(p.feature_group_count, p.batch_group_count);
    w = reshape_axis_out_of(rs[0], groups, w);
    w = reshape_axis_into(rs[0], rs[1], w);
  }
  ConvParams t = p;
  t.lhs_spec = p.out_spec;
  t.rhs_spec = swap01(p.rhs_spec);
  t.out_spec = p.lhs_spec;
  t.window_strides = p.lhs_dilation;
  t.lhs_dilation = p.window_strides;
  t.padding = vjp_lhs_padding(take(lhs_aval.shape, spatial(p.lhs_spec)), take(rhs.shape(), spatial(rs)),
                              take(g.shape(), spatial(p.out_spec)), p);
  t.feature_group_count = groups;
  t.batch_group_count = 1;
  t.preferred_element_type = pref;
  Array out = conv_with(as_dtype(g, wide), lax::rev(w, spatial(rs)), t);
  if (p.batch_group_count > 1) {
    out = reshape_axis_out_of(p.lhs_spec[1], p.batch_group_count, out);
    out = reshape_axis_into(p.lhs_spec[1], p.lhs_spec[0], out);
  }
  return as_dtype(out, lhs_aval.dtype);
}

// JAX's _conv_general_dilated_transpose_rhs: the cotangent of the kernel is a convolution of lhs
// (batch and feature dims swapped) with g as the kernel; feature groups become batch groups and
// batch groups feature groups; window_strides and rhs_dilation exchanged.
Array transpose_rhs(const Array& g, const Array& lhs, const ShapedArray& rhs_aval, const ConvParams& p) {
  if (g.size() == 0 || lhs.size() == 0 || rhs_aval.size() == 0)
    return lax::zeros_like_aval(rhs_aval.strip_weak());
  const auto [wide, pref] = transposed_dtypes(g, lhs, p);
  ConvParams t = p;
  t.lhs_spec = swap01(p.lhs_spec);
  t.rhs_spec = swap01(p.out_spec);
  t.out_spec = swap01(p.rhs_spec);
  t.feature_group_count = p.batch_group_count;
  t.batch_group_count = p.feature_group_count;
  t.window_strides = p.rhs_dilation;
  t.rhs_dilation = p.window_strides;
  t.padding = vjp_rhs_padding(take(lhs.shape(), spatial(p.lhs_spec)),
                              take(rhs_aval.shape, spatial(p.rhs_spec)), take(g.shape(), spatial(p.out_spec)),
                              p);
  t.preferred_element_type = pref;
  return as_dtype(conv_with(as_dtype(lhs, wide), as_dtype(g, wide), t), rhs_aval.dtype);
}

std::vector<Array> conv_transpose_rule(const std::vector<Array>& cts, const std::vector<Array>& args,
                                       const std::vector<ShapedArray>& avals, const Params& params) {
  const Array& g = cts.at(0);
  const bool lhs_lin = !args.at(0).defined(), rhs_lin = !args.at(1).defined();
  if (lhs_lin && rhs_lin)
    throw ValueError(
        "conv_general_dilated transpose: both operands are linear (the convolution is not linear)");
  std::vector<Array> res(2);
  if (!g.defined()) return res;
  const ConvParams p = ConvParams::from(params);
  if (lhs_lin) res[0] = transpose_lhs(g, avals.at(0), args.at(1), p);
  else res[1] = transpose_rhs(g, args.at(0), avals.at(1), p);
  return res;
}

// ad.defbilinear: d(x * w) = dx * w + x * dw, with the equation's params.
std::pair<std::vector<Array>, std::vector<Array>> conv_jvp(const std::vector<Array>& primals,
                                                           const std::vector<Array>& tangents,
                                                           const Params& params) {
  const Array& x = primals.at(0);
  const Array& w = primals.at(1);
  Array ans = minijax::bind1(conv_prim(), {x, w}, params);
  if (!is_floating(ans.dtype())) return {{ans}, {Array()}};
  Array t;
  if (carries(tangents.at(0))) t = minijax::bind1(conv_prim(), {tangents[0], w}, params);
  if (carries(tangents.at(1))) {
    Array t2 = minijax::bind1(conv_prim(), {x, tangents[1]}, params);
    t = t.defined() ? lax::add_any(t, t2) : t2;
  }
  return {{ans}, {t}};
}

// Both operands batched: the vmapped dim joins the feature groups (or the batch groups) and the
// kernel's output features. JAX's first case.
std::pair<Array, int64_t> batch_both(const Array& lhs, int64_t lb, const Array& rhs, int64_t rb,
                                     ConvParams p) {
  const int64_t B = lhs.shape()[size_t(lb)];
  Array new_lhs;
  if (p.batch_group_count > 1) {
    new_lhs = reshape_axis_into(lb, p.lhs_spec[0], lhs);
    p.batch_group_count *= B;
  } else {
    new_lhs = reshape_axis_into(lb, p.lhs_spec[1], lhs);
    p.feature_group_count *= B;
  }
  Array out = conv_with(new_lhs, reshape_axis_into(rb, p.rhs_spec[0], rhs), p);
  return {reshape_axis_out_of(p.out_spec[1], B, out), p.out_spec[1]};
}

// Only lhs batched: the vmapped dim joins the batch (inside each batch group).
std::pair<Array, int64_t> batch_lhs(const Array& lhs, int64_t lb, const Array& rhs, const ConvParams& p) {
  const int64_t B = lhs.shape()[size_t(lb)], L = p.lhs_spec[0];
  Array new_lhs;
  if (p.batch_group_count == 1) {
    new_lhs = reshape_axis_into(lb, L, lhs);
  } else {
    new_lhs = reshape_axis_out_of(L + int64_t(lb <= L), p.batch_group_count, lhs);
    new_lhs = reshape_axis_into(lb + int64_t(L < lb), L + 1, new_lhs);
    new_lhs = reshape_axis_into(L, L, new_lhs);
  }
  return {reshape_axis_out_of(p.out_spec[0], B, conv_with(new_lhs, rhs, p)), p.out_spec[0]};
}

// Only rhs batched: the vmapped dim joins the kernel's output features (inside each group).
std::pair<Array, int64_t> batch_rhs(const Array& lhs, const Array& rhs, int64_t rb, const ConvParams& p) {
  const int64_t B = rhs.shape()[size_t(rb)], R = p.rhs_spec[0], F = p.out_spec[1];
  if (p.feature_group_count == 1 && p.batch_group_count == 1)
    return {reshape_axis_out_of(F, B, conv_with(lhs, reshape_axis_into(rb, R, rhs), p)), F};
  const int64_t G = p.feature_group_count > 1 ? p.feature_group_count : p.batch_group_count;
  Array new_rhs = reshape_axis_out_of(R + int64_t(rb <= R), G, rhs);
  new_rhs = reshape_axis_into(rb + int64_t(R < rb), R + 1, new_rhs);
  new_rhs = reshape_axis_into(R, R, new_rhs);
  Array out = reshape_axis_out_of(F, G, conv_with(lhs, new_rhs, p));
  out = reshape_axis_out_of(F + 1, B, out);
  return {reshape_axis_into(F, F + 1, out), F};
}

// JAX's _conv_general_dilated_batch_rule.
std::pair<std::vector<Array>, std::vector<int64_t>> conv_batch(const std::vector<Array>& args,
                                                               const std::vector<int64_t>& dims,
                                                               const Params& params) {
  const Array& lhs = args.at(0);
  const Array& rhs = args.at(1);
  const int64_t lb = dims.at(0), rb = dims.at(1);
  const ConvParams p = ConvParams::from(params);
  if ((lb != kNotMapped && lhs.shape()[size_t(lb)] == 0) ||
      (rb != kNotMapped && rhs.shape()[size_t(rb)] == 0)) {
    // An empty batch: zeros of the per-example result's shape with a leading 0.
    ShapedArray la = lhs.aval(), ra = rhs.aval();
    if (lb != kNotMapped) la.shape.erase(la.shape.begin() + lb);
    if (rb != kNotMapped) ra.shape.erase(ra.shape.begin() + rb);
    ShapedArray out = abstract_eval(conv_prim(), {la, ra}, params, std::source_location::current()).at(0);
    out.shape.insert(out.shape.begin(), 0);
    return {{lax::zeros_like_aval(out)}, {0}};
  }
  std::pair<Array, int64_t> r;
  if (lb != kNotMapped && rb != kNotMapped) r = batch_both(lhs, lb, rhs, rb, p);
  else if (lb != kNotMapped) r = batch_lhs(lhs, lb, rhs, p);
  else r = batch_rhs(lhs, rhs, rb, p);
  return {{r.first}, {r.second}};
}

Registrar reg([] {
  auto& p = get_or_create_primitive("conv_general_dilated");
  p.jvp = conv_jvp;
  p.transpose = conv_transpose_rule;
  p.batch = conv_batch;
});

}  // namespace

}  // namespace minijax

// minijax convolution forms (conv_forms.h): the forward convolution behind each conv_general_dilated
// equation, read off its params and layouts, as JAX's _conv_general_dilated_transpose_lhs/rhs build them.
#include "jit/codegen/lower/conv_forms.h"

#include <algorithm>
#include <optional>

namespace minijax::lower {

namespace {

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// The dims and strides of the named dims of one operand: `at` lists operand dims, in oneDNN order.
DnnlTensor tensor_of(const Shape& s, const std::vector<int64_t>& at) {
  const auto st = row_major_strides(s);
  DnnlTensor t;
  for (int64_t d : at) {
    t.dims.push_back(s[size_t(d)]);
    t.strides.push_back(st[size_t(d)]);
  }
  return t;
}

// The dims of a spec as (first, second, spatial...).
std::vector<int64_t> spec_order(const std::vector<int64_t>& spec, bool swap_first_two = false) {
  std::vector<int64_t> o = spec;
  if (swap_first_two) std::swap(o[0], o[1]);
  return o;
}

int64_t dilated(int64_t n, int64_t d) { return n == 0 ? 0 : (n - 1) * d + 1; }

// The smallest right padding p >= 0 with floor((in + pl + p - keff) / s) + 1 == out (else the
// largest negative one), or nullopt when none exists.
std::optional<int64_t> right_padding(int64_t in, int64_t pl, int64_t keff, int64_t s, int64_t out) {
  const int64_t p0 = (out - 1) * s + keff - in - pl;
  std::optional<int64_t> best;
  for (int64_t r = 0; r < s; ++r) {
    const int64_t p = p0 + r, span = in + pl + p - keff;
    if (span < 0 || span / s + 1 != out) continue;
    if (p >= 0) return p;
    best = p;
  }
  return best;
}

ConvForm loop_nest(std::string why) {
  ConvForm f;
  f.reason = std::move(why);
  return f;
}

bool all_ones(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
}

// JAX's transpose with respect to the lhs: the forward convolution whose input gradient `p` is.
ConvForm backward_data(const ConvParams& p, const Shape& lhs, const Shape& rhs, const Shape& out) {
  const int64_t n = p.num_spatial();
  ConvForm f;
  f.kind = ConvFormKind::backward_data;
  f.dst = tensor_of(lhs, spec_order(p.lhs_spec));     // diff_dst: [N, OC, out...]
  f.weights = tensor_of(rhs, spec_order(p.rhs_spec, true));  // [OC_fwd, IC_fwd, k...], spatially flipped
  f.src = tensor_of(out, spec_order(p.out_spec));     // diff_src: [N, IC, in...]
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = p.lhs_dilation[size_t(i)], d = p.rhs_dilation[size_t(i)];
    const int64_t keff = dilated(f.weights.dims[size_t(2 + i)], d);
    const int64_t in = f.src.dims[size_t(2 + i)], fout = f.dst.dims[size_t(2 + i)];
    const int64_t pl = keff - 1 - p.pad_lo(i);
    auto pr = right_padding(in, pl, keff, s, fout);
    if (pl < 0 || !pr) return loop_nest("an lhs transpose whose forward padding is negative");
    f.strides.push_back(s);
    f.dilates.push_back(d - 1);
    f.pad_l.push_back(pl);
    f.pad_r.push_back(*pr);
  }
  return f;
}

// JAX's transpose with respect to the rhs: the forward convolution whose kernel gradient `p` is.
ConvForm backward_weights(const ConvParams& p, const Shape& lhs, const Shape& rhs, const Shape& out) {
  const int64_t n = p.num_spatial();
  ConvForm f;
  f.kind = ConvFormKind::backward_weights;
  f.groups = p.batch_group_count;
  f.src = tensor_of(lhs, spec_order(p.lhs_spec, true));  // [N, IC, in...]: the lhs's feature dim is N
  f.dst = tensor_of(rhs, spec_order(p.rhs_spec, true));  // diff_dst [N, OC, out...]
  f.weights = tensor_of(out, spec_order(p.out_spec, true));  // diff_weights [OC, IC/G, k...]
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = p.rhs_dilation[size_t(i)], d = p.window_strides[size_t(i)];
    const int64_t keff = dilated(f.weights.dims[size_t(2 + i)], d);
    const int64_t in = f.src.dims[size_t(2 + i)], fout = f.dst.dims[size_t(2 + i)];
    const int64_t pl = p.pad_lo(i);
    auto pr = right_padding(in, pl, keff, s, fout);
    if (pl < 0 || !pr) return loop_nest("an rhs transpose whose forward padding is negative");
    f.strides.push_back(s);
    f.dilates.push_back(d - 1);
    f.pad_l.push_back(pl);
    f.pad_r.push_back(*pr);
  }
  return f;
}

ConvForm forward(const ConvParams& p, const Shape& lhs, const Shape& rhs, const Shape& out) {
  ConvForm f;
  f.kind = ConvFormKind::forward;
  f.groups = p.feature_group_count;
  f.src = tensor_of(lhs, spec_order(p.lhs_spec));
  f.weights = tensor_of(rhs, spec_order(p.rhs_spec));
  f.dst = tensor_of(out, spec_order(p.out_spec));
  for (int64_t i = 0; i < p.num_spatial(); ++i) {
    if (p.pad_lo(i) < 0 || p.pad_hi(i) < 0) return loop_nest("negative padding (a crop)");
    f.strides.push_back(p.window_strides[size_t(i)]);
    f.dilates.push_back(p.rhs_dilation[size_t(i)] - 1);
    f.pad_l.push_back(p.pad_lo(i));
    f.pad_r.push_back(p.pad_hi(i));
  }
  return f;
}

// Every spatial dim of the dilated window is larger than the result's: a kernel gradient.
bool window_exceeds_output(const ConvParams& p, const Shape& rhs, const Shape& out) {
  for (int64_t i = 0; i < p.num_spatial(); ++i) {
    const int64_t k = rhs[size_t(p.rhs_spec[size_t(2 + i)])], o = out[size_t(p.out_spec[size_t(2 + i)])];
    if (dilated(k, p.rhs_dilation[size_t(i)]) <= o) return false;
  }
  return true;
}

}  // namespace

const char* conv_form_name(ConvFormKind k) {
  switch (k) {
    case ConvFormKind::forward: return "oneDNN forward";
    case ConvFormKind::backward_data: return "oneDNN backward-data";
    case ConvFormKind::backward_weights: return "oneDNN backward-weights";
    case ConvFormKind::loop_nest: break;
  }
  return "loop nest";
}

ConvForm classify_convolution(const ConvParams& p, const Shape& lhs, const Shape& rhs, const Shape& out, DType in,
                              DType out_dtype, bool rhs_is_spatial_rev) {
  const int64_t n = p.num_spatial();
  if (n < 1 || n > 3) return loop_nest(std::to_string(n) + " spatial dims (oneDNN takes 1 to 3)");
  if (in != DType::f32 && in != DType::bf16)
    return loop_nest(std::string(dtype_name(in)) + " operands (oneDNN's CPU convolutions take f32 and bf16)");
  for (int64_t d : lhs) if (d == 0) return loop_nest("an empty operand");
  for (int64_t d : rhs) if (d == 0) return loop_nest("an empty operand");
  for (int64_t d : out) if (d == 0) return loop_nest("an empty result");
  const bool same_dtype = out_dtype == in;
  if ((rhs_is_spatial_rev || !all_ones(p.lhs_dilation)) && all_ones(p.window_strides) &&
      p.feature_group_count == 1 && p.batch_group_count == 1 && same_dtype)
    return backward_data(p, lhs, rhs, out);
  if (!all_ones(p.lhs_dilation))
    return loop_nest("lhs_dilation with window strides or groups (not the transpose of a convolution)");
  if (p.feature_group_count == 1 && window_exceeds_output(p, rhs, out) && same_dtype)
    return backward_weights(p, lhs, rhs, out);
  if (p.batch_group_count != 1) return loop_nest("batch_group_count > 1 outside a kernel gradient");
  if (!same_dtype && !(in == DType::bf16 && out_dtype == DType::f32))
    return loop_nest("result dtype " + std::string(dtype_name(out_dtype)) + " from " + dtype_name(in) + " operands");
  return forward(p, lhs, rhs, out);
}

}  // namespace minijax::lower

// minijax oneDNN sites, built: a spec's checks, its memory descriptors (strided views of the
// user's layouts), its oneDNN primitives, and the per-program DnnlSites that holds them.
#include "jit/runtime/dnnl_ops.h"

#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "core/errors.h"
#include "jit/runtime/dnnl_impl.h"

namespace minijax {

const char* dnnl_op_name(DnnlOp op) {
  switch (op) {
    case DnnlOp::conv_forward: return "conv_forward";
    case DnnlOp::conv_backward_data: return "conv_backward_data";
    case DnnlOp::conv_backward_weights: return "conv_backward_weights";
    case DnnlOp::pool_forward_max: return "pool_forward_max";
    case DnnlOp::pool_forward_avg_include_padding: return "pool_forward_avg_include_padding";
    case DnnlOp::pool_forward_avg_exclude_padding: return "pool_forward_avg_exclude_padding";
    case DnnlOp::pool_forward_sum: return "pool_forward_sum";
    case DnnlOp::pool_backward_max: return "pool_backward_max";
    case DnnlOp::pool_backward_avg_include_padding: return "pool_backward_avg_include_padding";
    case DnnlOp::pool_backward_avg_exclude_padding: return "pool_backward_avg_exclude_padding";
    case DnnlOp::pool_backward_sum: return "pool_backward_sum";
  }
  return "?";
}

namespace dnnl_detail {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

namespace {

using dnnl::memory;
using Dims = memory::dims;

bool is_conv(DnnlOp k) { return k <= DnnlOp::conv_backward_weights; }
bool is_pool_forward(DnnlOp k) { return k >= DnnlOp::pool_forward_max && k <= DnnlOp::pool_forward_sum; }

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Whether `strides` over `dims` address every element of a dense buffer exactly once (dims of
// size 1 aside, whose stride is never used).
bool dense(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  std::vector<std::pair<int64_t, int64_t>> by_stride;  // (stride, dim)
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] != 1) by_stride.push_back({strides[k], dims[k]});
  std::sort(by_stride.begin(), by_stride.end());
  int64_t expect = 1;
  for (auto [stride, dim] : by_stride) {
    if (stride != expect) return false;
    expect *= dim;
  }
  return true;
}

// The spec's tensors' logical dims (full, before any crop), as dnnl_site.h orders them.
std::vector<int64_t> src_dims(const DnnlSiteSpec& s) {
  std::vector<int64_t> d = {s.batch, s.in_channels};
  d.insert(d.end(), s.in_size.begin(), s.in_size.end());
  return d;
}
std::vector<int64_t> dst_dims(const DnnlSiteSpec& s) {
  std::vector<int64_t> d = {s.batch, s.out_channels};
  d.insert(d.end(), s.out_size.begin(), s.out_size.end());
  return d;
}
std::vector<int64_t> weight_dims(const DnnlSiteSpec& s) {
  std::vector<int64_t> d = {s.out_channels, s.groups > 0 ? s.in_channels / s.groups : 0};
  d.insert(d.end(), s.kernel.begin(), s.kernel.end());
  return d;
}

std::string check_dtypes(const DnnlSiteSpec& s) {
  const bool conv = is_conv(s.kind);
  const char* what = conv ? "convolution" : "pooling";
  for (DType d : {s.dtype, s.out_dtype})
    if (d != DType::f32 && d != DType::bf16)
      return std::string(dtype_name(d)) + ": oneDNN 2.6 has no " + dtype_name(d) + " " + what + " on the CPU";
  if (s.out_dtype != s.dtype && !(conv && s.dtype == DType::bf16 && s.out_dtype == DType::f32))
    return std::string("a ") + what + " of " + dtype_name(s.dtype) + " operands with a " +
           dtype_name(s.out_dtype) + " result (only bf16 convolutions may give f32)";
  if (s.kind == DnnlOp::pool_backward_sum && s.dtype != DType::f32)
    return std::string("pool_backward_sum of ") + dtype_name(s.dtype) +
           " (the average's gradient, rounded, would be rounded again when scaled back to sums)";
  return "";
}

// One spatial dim's sizes: the crop, the window, the output size.
std::string check_spatial(const DnnlSiteSpec& s, size_t i) {
  const std::string at = " of spatial dim " + std::to_string(i);
  const int64_t in = s.in_size[i], out = s.out_size[i], k = s.kernel[i], st = s.strides[i],
                dil = s.dilations[i];
  const int64_t pl = s.padding_l[i], pr = s.padding_r[i];
  if (in < 1 || out < 1)
    return "empty spatial dim " + std::to_string(i) + " (in " + std::to_string(in) + ", out " +
           std::to_string(out) + ")";
  if (k < 1 || st < 1 || dil < 0)
    return "kernel " + std::to_string(k) + ", stride " + std::to_string(st) + ", dilation " +
           std::to_string(dil) + at;
  const int64_t extent = (k - 1) * (dil + 1) + 1, padded = in + pl + pr;
  const int64_t kept = in + std::min<int64_t>(pl, 0) + std::min<int64_t>(pr, 0);
  if (kept < 1)
    return "padding " + std::to_string(pl) + ", " + std::to_string(pr) + " crops all of input size " +
           std::to_string(in) + at;
  if (padded < extent)
    return "padded input " + std::to_string(padded) + " smaller than the window " + std::to_string(extent) +
           at;
  const int64_t expect = (padded - extent) / st + 1;
  if (expect != out)
    return "output size " + std::to_string(out) + at + ", expected " + std::to_string(expect);
  if (s.kind == DnnlOp::pool_forward_max || s.kind == DnnlOp::pool_backward_max) {
    // oneDNN's max pooling gives the lowest finite value, not -inf, for a window wholly in padding.
    const int64_t lo = std::max<int64_t>(pl, 0);
    if (lo >= extent || (out - 1) * st - lo >= kept)
      return "a max-pooling window lies wholly in the padding" + at;
  }
  return "";
}

std::string check_layout(const char* name, const std::vector<int64_t>& strides,
                         const std::vector<int64_t>& dims) {
  if (strides.size() != dims.size())
    return std::string(name) + " has " + std::to_string(strides.size()) + " strides for " +
           std::to_string(dims.size()) + " dims";
  for (int64_t v : strides)
    if (v < 1) return std::string(name) + " " + list(strides) + ": strides must be positive";
  if (!dense(dims, strides))
    return std::string(name) + " " + list(strides) + " is not a dense layout of dims " + list(dims);
  return "";
}

// What is wrong with the spec, or "".
std::string check_spec(const DnnlSiteSpec& s) {
  const size_t nsp = s.in_size.size();
  if (nsp < 1 || nsp > 3) return std::to_string(nsp) + " spatial dims (oneDNN takes 1 to 3)";
  const std::pair<const char*, const std::vector<int64_t>*> per_dim[] = {
      {"out_size", &s.out_size},   {"kernel", &s.kernel},       {"strides", &s.strides},
      {"dilations", &s.dilations}, {"padding_l", &s.padding_l}, {"padding_r", &s.padding_r}};
  for (const auto& [name, v] : per_dim)
    if (v->size() != nsp)
      return std::string(name) + " " + list(*v) + " has " + std::to_string(v->size()) + " entries for " +
             std::to_string(nsp) + " spatial dims";
  if (std::string why = check_dtypes(s); !why.empty()) return why;
  if (s.batch < 1 || s.in_channels < 1 || s.out_channels < 1)
    return "an empty tensor (N " + std::to_string(s.batch) + ", C_in " + std::to_string(s.in_channels) +
           ", C_out " + std::to_string(s.out_channels) + ")";
  if (is_conv(s.kind)) {
    if (s.groups < 1 || s.in_channels % s.groups != 0 || s.out_channels % s.groups != 0)
      return std::to_string(s.groups) + " groups for C_in " + std::to_string(s.in_channels) + " and C_out " +
             std::to_string(s.out_channels);
  } else if (s.in_channels != s.out_channels || s.groups != 1) {
    return "pooling with C_in " + std::to_string(s.in_channels) + ", C_out " +
           std::to_string(s.out_channels) + ", groups " + std::to_string(s.groups);
  }
  for (size_t i = 0; i < nsp; ++i)
    if (std::string why = check_spatial(s, i); !why.empty()) return why;
  if (std::string why = check_layout("src_strides", s.src_strides, src_dims(s)); !why.empty()) return why;
  if (std::string why = check_layout("dst_strides", s.dst_strides, dst_dims(s)); !why.empty()) return why;
  if (is_conv(s.kind))
    if (std::string why = check_layout("weights_strides", s.weights_strides, weight_dims(s)); !why.empty())
      return why;
  if (s.weights_flipped && s.kind != DnnlOp::conv_forward && s.kind != DnnlOp::conv_backward_data)
    return std::string("weights_flipped on a ") + dnnl_op_name(s.kind) + " site";
  if (s.forward_site != -1 && s.kind != DnnlOp::pool_backward_max)
    return "forward_site " + std::to_string(s.forward_site) + " on a " + dnnl_op_name(s.kind) + " site";
  return "";
}

memory::data_type dnnl_type(DType d) {
  return d == DType::bf16 ? memory::data_type::bf16 : memory::data_type::f32;
}

// The spec's descriptors as oneDNN takes them: the src cropped to a view where padding is
// negative (the padding then clamped at 0), the weights grouped [G, O/G, I/G, k...].
struct Geometry {
  Dims src_dims, src_strides, dst_dims, dst_strides, w_dims, w_strides;
  Dims strides, kernel, dilations, pad_l, pad_r;
  int64_t src_offset = 0, src_extent = 1;
  bool cropped = false;
};

Geometry geometry(const DnnlSiteSpec& s) {
  Geometry g;
  g.src_dims = src_dims(s);
  g.src_strides = s.src_strides;
  for (size_t k = 0; k < g.src_dims.size(); ++k) g.src_extent += (g.src_dims[k] - 1) * g.src_strides[k];
  for (size_t i = 0; i < s.in_size.size(); ++i) {
    const int64_t crop_l = std::max<int64_t>(-s.padding_l[i], 0),
                  crop_r = std::max<int64_t>(-s.padding_r[i], 0);
    g.src_dims[2 + i] -= crop_l + crop_r;
    g.src_offset += crop_l * g.src_strides[2 + i];
    g.cropped |= crop_l + crop_r > 0;
    g.pad_l.push_back(std::max<int64_t>(s.padding_l[i], 0));
    g.pad_r.push_back(std::max<int64_t>(s.padding_r[i], 0));
  }
  g.dst_dims = dst_dims(s);
  g.dst_strides = s.dst_strides;
  g.strides = s.strides;
  g.kernel = s.kernel;
  g.dilations = s.dilations;
  if (is_conv(s.kind)) {
    g.w_dims = weight_dims(s);
    g.w_strides = s.weights_strides;
    if (s.groups > 1) {  // [O, I/G, k...] as [G, O/G, I/G, k...]: group g's outputs follow group g-1's
      const int64_t per = s.out_channels / s.groups;
      g.w_dims[0] = per;
      g.w_dims.insert(g.w_dims.begin(), s.groups);
      g.w_strides.insert(g.w_strides.begin(), per * s.weights_strides[0]);
    }
  }
  return g;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The convolution's primitive descriptor for the site's kind; sets the user mds and the
// primitive's weights format. Returns the descriptor (its base class).
dnnl::primitive_desc conv_pd(const DnnlSiteSpec& spec, const Geometry& g, Site& s) {
  using dnnl::algorithm;
  const dnnl::engine& eng = cpu_engine();
  const dnnl::primitive_attr attr = user_scratchpad();
  const memory::data_type dt = dnnl_type(spec.dtype), odt = dnnl_type(spec.out_dtype);
  const memory::desc src(g.src_dims, dt, g.src_strides), dst(g.dst_dims, dt, g.dst_strides),
      w(g.w_dims, dt, g.w_strides);
  auto weights = [&](memory::data_type t, const memory::desc& given) {
    return spec.weights_any ? memory::desc(g.w_dims, t, memory::format_tag::any) : given;
  };
  auto forward = [&](const memory::desc& out) {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, algorithm::convolution_direct, src,
                                      weights(dt, w), out, g.strides, g.dilations, g.pad_l, g.pad_r);
    return dnnl::convolution_forward::primitive_desc(d, attr, eng);
  };
  switch (spec.kind) {
    case DnnlOp::conv_forward: {
      const memory::desc out(g.dst_dims, odt, g.dst_strides);
      auto pd = forward(out);
      s.user_mds = {src, w, out};
      s.prim_weights_md = pd.weights_desc();
      return pd;
    }
    case DnnlOp::conv_backward_data: {
      const memory::desc diff_src(g.src_dims, odt, g.src_strides);
      dnnl::convolution_backward_data::desc d(algorithm::convolution_direct, diff_src, weights(dt, w), dst,
                                              g.strides, g.dilations, g.pad_l, g.pad_r);
      dnnl::convolution_backward_data::primitive_desc pd(d, attr, eng, forward(dst));
      s.user_mds = {dst, w, diff_src};
      s.prim_weights_md = pd.weights_desc();
      return pd;
    }
    default: {  // conv_backward_weights
      const memory::desc diff_w(g.w_dims, odt, g.w_strides);
      dnnl::convolution_backward_weights::desc d(algorithm::convolution_direct, src, weights(odt, diff_w),
                                                 dst, g.strides, g.dilations, g.pad_l, g.pad_r);
      dnnl::convolution_backward_weights::primitive_desc pd(d, attr, eng, forward(dst));
      s.user_mds = {src, dst, diff_w};
      s.prim_weights_md = pd.diff_weights_desc();
      return pd;
    }
  }
}

dnnl::algorithm pool_algorithm(DnnlOp k) {
  switch (k) {
    case DnnlOp::pool_forward_max:
    case DnnlOp::pool_backward_max: return dnnl::algorithm::pooling_max;
    case DnnlOp::pool_forward_avg_include_padding:
    case DnnlOp::pool_forward_sum:
    case DnnlOp::pool_backward_avg_include_padding:
    case DnnlOp::pool_backward_sum: return dnnl::algorithm::pooling_avg_include_padding;
    default: return dnnl::algorithm::pooling_avg_exclude_padding;
  }
}

// The pooling's primitive descriptor (and, for max backward, the forward it reruns).
dnnl::primitive_desc pool_pd(const DnnlSiteSpec& spec, const Geometry& g, Site& s, bool make_primitives) {
  const dnnl::engine& eng = cpu_engine();
  dnnl::primitive_attr attr = user_scratchpad();
  const memory::data_type dt = dnnl_type(spec.dtype);
  const memory::desc src(g.src_dims, dt, g.src_strides), dst(g.dst_dims, dt, g.dst_strides);
  const dnnl::algorithm alg = pool_algorithm(spec.kind);
  if (spec.kind == DnnlOp::pool_forward_sum) {  // the average including padding, times the count
    int64_t count = 1;
    for (int64_t k : g.kernel) count *= k;
    dnnl::post_ops scale;
    scale.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, float(count), 0.f);
    attr.set_post_ops(scale);
  }
  auto forward = [&](dnnl::prop_kind prop) {
    dnnl::pooling_v2_forward::desc d(prop, alg, src, dst, g.strides, g.kernel, g.dilations, g.pad_l, g.pad_r);
    return dnnl::pooling_v2_forward::primitive_desc(d, attr, eng);
  };
  if (is_pool_forward(spec.kind)) {
    auto pd = forward(s.writes_workspace ? dnnl::prop_kind::forward_training
                                         : dnnl::prop_kind::forward_inference);
    s.user_mds = {src, dst};
    if (s.writes_workspace) s.workspace_md = pd.workspace_desc();
    return pd;
  }
  auto hint = forward(dnnl::prop_kind::forward_training);
  dnnl::pooling_v2_backward::desc d(alg, src, dst, g.strides, g.kernel, g.dilations, g.pad_l, g.pad_r);
  dnnl::pooling_v2_backward::primitive_desc pd(d, attr, eng, hint);
  s.user_mds = {dst, src};
  if (spec.kind == DnnlOp::pool_backward_max) {
    s.user_mds.push_back(src);
    s.workspace_md = pd.workspace_desc();
    if (hint.workspace_desc() != s.workspace_md)
      throw std::invalid_argument("oneDNN's max-pooling forward and backward take different workspaces");
    s.rerun_dst_md = hint.dst_desc();
    s.scratchpad_bytes = hint.scratchpad_desc().get_size();
    if (make_primitives) s.rerun = dnnl::pooling_v2_forward(hint);
  }
  return pd;
}

}  // namespace

Site build_site(const DnnlSiteSpec& spec, bool writes_workspace, bool make_primitives) {
  if (std::string why = check_spec(spec); !why.empty()) throw std::invalid_argument(why);
  const Geometry g = geometry(spec);
  Site s;
  s.spec = spec;
  s.src_offset = g.src_offset;
  s.src_extent = g.src_extent;
  s.cropped = g.cropped;
  s.writes_workspace = writes_workspace && spec.kind == DnnlOp::pool_forward_max;
  const dnnl::primitive_desc pd = is_conv(spec.kind) ? conv_pd(spec, g, s)
                                                     : pool_pd(spec, g, s, make_primitives);
  s.impl = pd.impl_info_str();
  s.scratchpad_bytes = std::max(s.scratchpad_bytes, pd.scratchpad_desc().get_size());
  if (make_primitives) s.prim = dnnl::primitive(pd);
  if (spec.weights_flipped) {
    s.flips_weights = true;
    s.flip_dims = weight_dims(spec);
    s.flip_strides = spec.weights_strides;
  }
  if (is_conv(spec.kind) && spec.weights_any) {
    const memory::desc& given = s.user_mds[weights_index(spec.kind)];
    if (s.prim_weights_md != given) {
      s.reorders_weights = true;
      const bool back = spec.kind == DnnlOp::conv_backward_weights;
      const memory::desc& from = back ? s.prim_weights_md : given;
      const memory::desc& to = back ? given : s.prim_weights_md;
      dnnl::reorder::primitive_desc rpd(cpu_engine(), from, cpu_engine(), to, user_scratchpad());
      s.scratchpad_bytes = std::max(s.scratchpad_bytes, rpd.scratchpad_desc().get_size());
      if (make_primitives) s.weights_reorder = dnnl::reorder(rpd);
    }
  }
  return s;
}

std::string oneDNN_reason(const dnnl::error& e) {
  return std::string("oneDNN: ") + e.what() + " (" + dnnl_status2str(e.status) + ")";
}

// A spec in a few words, for error messages.
std::string describe(const DnnlSiteSpec& s) {
  std::string t = std::string(dnnl_op_name(s.kind)) + " " + dtype_name(s.dtype);
  if (s.out_dtype != s.dtype) t += std::string("->") + dtype_name(s.out_dtype);
  t += " N " + std::to_string(s.batch) + ", C_in " + std::to_string(s.in_channels) + ", C_out " +
       std::to_string(s.out_channels) + ", groups " + std::to_string(s.groups) + ", in " + list(s.in_size) +
       ", kernel " + list(s.kernel) + ", out " + list(s.out_size) + ", strides " + list(s.strides) +
       ", dilations " + list(s.dilations) + ", padding " + list(s.padding_l) + "/" + list(s.padding_r);
  return t;
}

// A memory format as text: the dtype, then the dims from outermost to innermost ('a' is dim 0;
// upper case for a blocked dim), then the inner blocks ("16b16a"): "f32 acdb" is NHWC for [N, C,
// H, W], "f32 ABcd16b16a" a blocked weights format.
std::string format_text(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  std::string t = md.data_type() == memory::data_type::bf16 ? "bf16 " : "f32 ";
  if (d.format_kind != dnnl_blocked) return t + "(not blocked)";
  const auto& b = d.format_desc.blocking;
  std::vector<int> order(size_t(d.ndims));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  auto blocked = [&](int dim) {
    for (int k = 0; k < b.inner_nblks; ++k)
      if (b.inner_idxs[k] == dim) return true;
    return false;
  };
  for (int dim : order) t += char((blocked(dim) ? 'A' : 'a') + dim);
  for (int k = 0; k < b.inner_nblks; ++k) t += std::to_string(b.inner_blks[k]) + char('a' + b.inner_idxs[k]);
  return t;
}

}  // namespace dnnl_detail

using namespace dnnl_detail;

int dnnl_default_threads() {
  static const int threads = std::max(1, omp_get_max_threads());
  return threads;
}

bool dnnl_supported(const DnnlSiteSpec& spec, std::string* why) {
  try {
    TeamGuard team(dnnl_default_threads());
    build_site(spec, false, false);
    return true;
  } catch (const dnnl::error& e) {
    if (why) *why = oneDNN_reason(e);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
  }
  return false;
}

namespace {
Site built(const DnnlSiteSpec& spec, int threads) {
  std::string why;
  try {
    TeamGuard team(threads > 0 ? threads : dnnl_default_threads());
    return build_site(spec, false, false);
  } catch (const dnnl::error& e) {
    why = oneDNN_reason(e);
  } catch (const std::invalid_argument& e) {
    why = e.what();
  }
  throw ValueError("oneDNN site " + describe(spec) + ": " + why);
}
}  // namespace

std::string dnnl_impl_name(const DnnlSiteSpec& spec, int threads) { return built(spec, threads).impl; }

DnnlWeightsReorder dnnl_weights_reorder(const DnnlSiteSpec& spec, int threads) {
  const Site s = built(spec, threads);
  DnnlWeightsReorder r;
  if (!s.reorders_weights && !s.flips_weights) return r;
  const dnnl::memory::desc& given = s.user_mds[weights_index(spec.kind)];
  r.needed = true;
  r.after = spec.kind == DnnlOp::conv_backward_weights;
  r.from = format_text(r.after ? s.prim_weights_md : given) + (s.flips_weights ? " flipped" : "");
  r.to = format_text(r.after || !s.reorders_weights ? given : s.prim_weights_md);
  r.bytes = int64_t(given.get_size());
  return r;
}

std::vector<int64_t> dnnl_layout_strides(const std::vector<int64_t>& shape, const std::vector<int>& axes) {
  std::vector<bool> seen(shape.size());
  for (int a : axes) {
    if (a < 0 || size_t(a) >= shape.size() || seen[size_t(a)] || axes.size() != shape.size())
      throw ValueError("dnnl_layout_strides: axes " + list(std::vector<int64_t>(axes.begin(), axes.end())) +
                       " are not a permutation of the axes of shape " + list(shape));
    seen[size_t(a)] = true;
  }
  std::vector<int64_t> row_major(shape.size(), 1), out;
  for (size_t k = shape.size(); k-- > 1;) row_major[k - 1] = row_major[k] * shape[k];
  for (int a : axes) out.push_back(row_major[size_t(a)]);
  return out;
}

DnnlSites::DnnlSites(std::vector<DnnlSiteSpec> specs, int threads) : impl_(std::make_unique<SitesImpl>()) {
  if (threads < 1) throw ValueError("DnnlSites: " + std::to_string(threads) + " threads (at least 1)");
  impl_->threads = threads;
  const size_t n = specs.size();
  std::vector<bool> read(n, false);  // pool_forward_max sites whose workspace a backward site reads
  for (size_t i = 0; i < n; ++i) {
    const DnnlSiteSpec& b = specs[i];
    if (b.kind != DnnlOp::pool_backward_max || b.forward_site < 0) continue;
    const size_t f = size_t(b.forward_site);
    const DnnlSiteSpec* fw = f < n ? &specs[f] : nullptr;
    if (!fw || fw->kind != DnnlOp::pool_forward_max || fw->dtype != b.dtype || fw->batch != b.batch ||
        fw->in_channels != b.in_channels || fw->in_size != b.in_size || fw->out_size != b.out_size ||
        fw->kernel != b.kernel || fw->strides != b.strides || fw->dilations != b.dilations ||
        fw->padding_l != b.padding_l || fw->padding_r != b.padding_r)
      throw ValueError(
          "oneDNN site " + std::to_string(i) + " (" + describe(b) + "): forward_site " + std::to_string(f) +
          " is not a pool_forward_max site of the same sizes" +
          (fw ? " (" + describe(*fw) + ")" : " (the table has " + std::to_string(n) + " sites)"));
    read[f] = true;
  }
  TeamGuard team(threads);  // oneDNN sizes a primitive's per-thread buffers for the team at creation
  for (size_t i = 0; i < n; ++i) {
    std::string why;
    try {
      impl_->sites.push_back(build_site(specs[i], read[i], true));
      continue;
    } catch (const dnnl::error& e) {
      why = oneDNN_reason(e);
    } catch (const std::invalid_argument& e) {
      why = e.what();
    }
    throw ValueError("oneDNN site " + std::to_string(i) + " (" + describe(specs[i]) + "): " + why);
  }
  for (Site& s : impl_->sites) {
    impl_->scratchpad_bytes = std::max(impl_->scratchpad_bytes, s.scratchpad_bytes);
    if (s.spec.kind != DnnlOp::pool_backward_max || s.spec.forward_site < 0) continue;
    // The forward's workspace is read only when it has this site's format; otherwise: a rerun.
    if (impl_->sites[size_t(s.spec.forward_site)].workspace_md == s.workspace_md)
      s.workspace_site = s.spec.forward_site;
  }
}

DnnlSites::~DnnlSites() = default;

size_t DnnlSites::size() const { return impl_->sites.size(); }
int DnnlSites::threads() const { return impl_->threads; }
const DnnlSiteSpec& DnnlSites::spec(size_t site) const { return impl_->sites.at(site).spec; }
const std::string& DnnlSites::impl_name(size_t site) const { return impl_->sites.at(site).impl; }
bool DnnlSites::reads_forward_workspace(size_t site) const {
  return impl_->sites.at(site).workspace_site >= 0;
}
int64_t DnnlSites::scratchpad_bytes() const { return int64_t(impl_->scratchpad_bytes); }
size_t DnnlSites::run_states() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->made;
}

}  // namespace minijax

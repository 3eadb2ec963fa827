// Tests of the oneDNN runtime sites (jit/runtime/dnnl_ops.h): every convolution and pooling kind
// against naive loops written from the definitions, layouts, workspaces, threads, bf16, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/errors.h"
#include "jit/runtime/abi.h"
#include "jit/runtime/dnnl_ops.h"

namespace {

using namespace minijax;

// ---- Tensors: a buffer and the element strides of its logical oneDNN dims ----

// A tensor in a buffer of floats, addressed by its logical dims [A, B, spatial...] (A, B = N, C
// for data, O, I for weights) through the strides of its layout.
struct Tensor {
  std::vector<int64_t> dims, strides;
  std::vector<float> data;
  size_t nsp() const { return dims.size() - 2; }
  int64_t offset(int64_t a, int64_t b, const std::array<int64_t, 3>& sp) const {
    int64_t o = a * strides[0] + b * strides[1];
    for (size_t i = 0; i < nsp(); ++i) o += sp[i] * strides[2 + i];
    return o;
  }
  float& at(int64_t a, int64_t b, const std::array<int64_t, 3>& sp) { return data[size_t(offset(a, b, sp))]; }
  float at(int64_t a, int64_t b, const std::array<int64_t, 3>& sp) const {
    return data[size_t(offset(a, b, sp))];
  }
};

// The logical dims laid out first-two-dims-first (NCHW, OIHW) or, `last`, as NHWC for data and
// HWIO for weights: the array shape and which array axis each logical dim is.
Tensor make_tensor(const std::vector<int64_t>& dims, bool last, bool weights) {
  const int n = int(dims.size()), nsp = n - 2;
  std::vector<int> axes(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) axes[size_t(k)] = k;
  if (last && !weights) {  // [N, spatial..., C]
    axes[1] = nsp + 1;
    for (int i = 0; i < nsp; ++i) axes[size_t(2 + i)] = 1 + i;
  } else if (last) {  // [spatial..., I, O]
    axes[0] = nsp + 1;
    axes[1] = nsp;
    for (int i = 0; i < nsp; ++i) axes[size_t(2 + i)] = i;
  }
  std::vector<int64_t> shape(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) shape[size_t(axes[size_t(k)])] = dims[size_t(k)];
  Tensor t;
  t.dims = dims;
  t.strides = dnnl_layout_strides(shape, axes);
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  t.data.assign(size_t(count), 0.f);
  return t;
}

// Uniform values in [-1, 1); `ties`: small integers (0..3), so that max windows tie often.
void fill(Tensor& t, unsigned seed, bool ties = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::uniform_int_distribution<int> small(0, 3);
  for (float& v : t.data) v = ties ? float(small(rng)) : u(rng);
}

// Visits every spatial index of `size` (1 to 3 dims; the others 0) in row-major order.
template <class F>
void for_each_index(const std::vector<int64_t>& size, F&& f) {
  std::array<int64_t, 3> n = {1, 1, 1};
  for (size_t i = 0; i < size.size(); ++i) n[i] = size[i];
  for (int64_t a = 0; a < n[0]; ++a)
    for (int64_t b = 0; b < n[1]; ++b)
      for (int64_t c = 0; c < n[2]; ++c) f(std::array<int64_t, 3>{a, b, c});
}

// ---- The sites' specs ----

// A convolution or pooling: sizes as JAX gives them (dilation 1 = none), and the layout.
struct Case {
  const char* name;
  int64_t N, Ci, Co, G;
  std::vector<int64_t> in, k, s, dil, pl, pr;
  bool last;  // NHWC/HWIO (else NCHW/OIHW)
};

std::vector<int64_t> out_size(const Case& c) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < c.in.size(); ++i) {
    const int64_t ext = (c.k[i] - 1) * c.dil[i] + 1;
    out.push_back((c.in[i] + c.pl[i] + c.pr[i] - ext) / c.s[i] + 1);
  }
  return out;
}

DnnlSiteSpec spec_of(const Case& c, DnnlOp kind) {
  DnnlSiteSpec s;
  s.kind = kind;
  s.batch = c.N;
  s.in_channels = c.Ci;
  s.out_channels = c.Co;
  s.groups = c.G;
  s.in_size = c.in;
  s.out_size = out_size(c);
  s.kernel = c.k;
  s.strides = c.s;
  for (int64_t d : c.dil) s.dilations.push_back(d - 1);
  s.padding_l = c.pl;
  s.padding_r = c.pr;
  std::vector<int64_t> src = {c.N, c.Ci}, dst = {c.N, c.Co}, w = {c.Co, c.Ci / c.G};
  src.insert(src.end(), c.in.begin(), c.in.end());
  dst.insert(dst.end(), s.out_size.begin(), s.out_size.end());
  w.insert(w.end(), c.k.begin(), c.k.end());
  s.src_strides = make_tensor(src, c.last, false).strides;
  s.dst_strides = make_tensor(dst, c.last, false).strides;
  if (kind <= DnnlOp::conv_backward_weights) s.weights_strides = make_tensor(w, c.last, true).strides;
  return s;
}

Tensor src_tensor(const DnnlSiteSpec& s, bool last) {
  std::vector<int64_t> d = {s.batch, s.in_channels};
  d.insert(d.end(), s.in_size.begin(), s.in_size.end());
  return make_tensor(d, last, false);
}
Tensor dst_tensor(const DnnlSiteSpec& s, bool last) {
  std::vector<int64_t> d = {s.batch, s.out_channels};
  d.insert(d.end(), s.out_size.begin(), s.out_size.end());
  return make_tensor(d, last, false);
}
Tensor weights_tensor(const DnnlSiteSpec& s, bool last) {
  std::vector<int64_t> d = {s.out_channels, s.in_channels / s.groups};
  d.insert(d.end(), s.kernel.begin(), s.kernel.end());
  return make_tensor(d, last, true);
}

// ---- The oracles: naive loops from the definitions ----

// The input position output position y's window tap k reads along every spatial dim (JAX's
// conv_general_dilated / reduce_window with padding pl: x = y * stride - pl + k * dilation), and
// whether it lies inside the input (padding reads zero; negative padding crops).
bool tap(const DnnlSiteSpec& s, const std::array<int64_t, 3>& y, const std::array<int64_t, 3>& k,
         std::array<int64_t, 3>& x) {
  x = {0, 0, 0};
  for (size_t i = 0; i < s.in_size.size(); ++i) {
    x[i] = y[i] * s.strides[i] - s.padding_l[i] + k[i] * (s.dilations[i] + 1);
    if (x[i] < 0 || x[i] >= s.in_size[i]) return false;
  }
  return true;
}

// Cross-correlation: dst[n, o, y] = sum over the group's input channels i and taps k of
// src[n, g * C_in/G + i, x(y, k)] * w[o, i, k], with g = o / (C_out/G).
void conv_ref(const DnnlSiteSpec& s, const Tensor& src, const Tensor& w, Tensor& dst) {
  const int64_t ipg = s.in_channels / s.groups, opg = s.out_channels / s.groups;
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t o = 0; o < s.out_channels; ++o)
      for_each_index(s.out_size, [&](const std::array<int64_t, 3>& y) {
        double acc = 0;
        for (int64_t i = 0; i < ipg; ++i)
          for_each_index(s.kernel, [&](const std::array<int64_t, 3>& k) {
            std::array<int64_t, 3> x;
            if (tap(s, y, k, x)) acc += double(src.at(n, (o / opg) * ipg + i, x)) * double(w.at(o, i, k));
          });
        dst.at(n, o, y) = float(acc);
      });
}

// The gradients of conv_ref: each product src[x] * w[k] contributes diff_dst[y] * w[k] to
// diff_src[x] (cropped and padded positions get nothing) and diff_dst[y] * src[x] to diff_w[k].
void conv_grads_ref(const DnnlSiteSpec& s, const Tensor& src, const Tensor& w, const Tensor& diff_dst,
                    Tensor* diff_src, Tensor* diff_w) {
  const int64_t ipg = s.in_channels / s.groups, opg = s.out_channels / s.groups;
  std::vector<double> ds(diff_src ? diff_src->data.size() : 0), dw(diff_w ? diff_w->data.size() : 0);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t o = 0; o < s.out_channels; ++o)
      for_each_index(s.out_size, [&](const std::array<int64_t, 3>& y) {
        const double g = diff_dst.at(n, o, y);
        for (int64_t i = 0; i < ipg; ++i)
          for_each_index(s.kernel, [&](const std::array<int64_t, 3>& k) {
            std::array<int64_t, 3> x;
            if (!tap(s, y, k, x)) return;
            const int64_t c = (o / opg) * ipg + i;
            if (diff_src) ds[size_t(diff_src->offset(n, c, x))] += g * w.at(o, i, k);
            if (diff_w) dw[size_t(diff_w->offset(o, i, k))] += g * src.at(n, c, x);
          });
      });
  if (diff_src)
    std::transform(ds.begin(), ds.end(), diff_src->data.begin(), [](double v) { return float(v); });
  if (diff_w) std::transform(dw.begin(), dw.end(), diff_w->data.begin(), [](double v) { return float(v); });
}

bool is_max(DnnlOp k) { return k == DnnlOp::pool_forward_max || k == DnnlOp::pool_backward_max; }
bool excludes_padding(DnnlOp k) {
  return k == DnnlOp::pool_forward_avg_exclude_padding || k == DnnlOp::pool_backward_avg_exclude_padding;
}

// One pooling window: its in-bounds input positions in window order (row-major over the taps).
std::vector<std::array<int64_t, 3>> window(const DnnlSiteSpec& s, const std::array<int64_t, 3>& y) {
  std::vector<std::array<int64_t, 3>> xs;
  for_each_index(s.kernel, [&](const std::array<int64_t, 3>& k) {
    std::array<int64_t, 3> x;
    if (tap(s, y, k, x)) xs.push_back(x);
  });
  return xs;
}

// The first maximum in window order (XLA's ge selector keeps the earlier of equal elements).
std::array<int64_t, 3> argmax(const Tensor& src, int64_t n, int64_t c,
                              const std::vector<std::array<int64_t, 3>>& xs) {
  std::array<int64_t, 3> best = xs[0];
  for (const auto& x : xs)
    if (src.at(n, c, x) > src.at(n, c, best)) best = x;
  return best;
}

// An average's divisor: the window's element count including padding, or the in-bounds ones.
double divisor(const DnnlSiteSpec& s, DnnlOp kind, size_t in_bounds) {
  if (excludes_padding(kind)) return double(in_bounds);
  double n = 1;
  for (int64_t k : s.kernel) n *= double(k);
  return n;
}

// Max / average (including or excluding padding) / sum pooling of `kind` (a forward kind).
void pool_ref(const DnnlSiteSpec& s, DnnlOp kind, const Tensor& src, Tensor& dst) {
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t c = 0; c < s.in_channels; ++c)
      for_each_index(s.out_size, [&](const std::array<int64_t, 3>& y) {
        const auto xs = window(s, y);
        if (is_max(kind)) {
          dst.at(n, c, y) = src.at(n, c, argmax(src, n, c, xs));
          return;
        }
        double sum = 0;
        for (const auto& x : xs) sum += src.at(n, c, x);
        dst.at(n, c, y) = float(kind == DnnlOp::pool_forward_sum ? sum : sum / divisor(s, kind, xs.size()));
      });
}

// The gradient of pool_ref: max sends diff_dst[y] to its window's argmax; an average spreads it
// over the window's in-bounds elements divided by the divisor, a sum undivided.
void pool_grad_ref(const DnnlSiteSpec& s, DnnlOp kind, const Tensor& src, const Tensor& diff_dst,
                   Tensor& diff_src) {
  std::vector<double> ds(diff_src.data.size());
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t c = 0; c < s.in_channels; ++c)
      for_each_index(s.out_size, [&](const std::array<int64_t, 3>& y) {
        const auto xs = window(s, y);
        const double g = diff_dst.at(n, c, y);
        if (is_max(kind)) {
          ds[size_t(diff_src.offset(n, c, argmax(src, n, c, xs)))] += g;
          return;
        }
        const double d = kind == DnnlOp::pool_backward_sum ? 1.0 : divisor(s, kind, xs.size());
        for (const auto& x : xs) ds[size_t(diff_src.offset(n, c, x))] += g / d;
      });
  std::transform(ds.begin(), ds.end(), diff_src.data.begin(), [](double v) { return float(v); });
}

// ---- Running sites ----

// Runs site `site` of `sites` in a scope of its own; fails the test on a runtime error.
void run_one(const DnnlSites& sites, int32_t site, std::vector<void*> buffers) {
  DnnlScope scope(&sites);
  mj_rt_dnnl(site, buffers.data());
  const std::string err = take_runtime_error();
  EXPECT_EQ(err, "") << "site " << site;
}

// |got - want| <= tol * (1 + max |want|) elementwise.
void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.data.size(), want.data.size()) << what;
  double scale = 1, worst = 0;
  size_t at = 0;
  for (float v : want.data) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < got.data.size(); ++i) {
    const double e = std::fabs(double(got.data[i]) - double(want.data[i]));
    if (!(e <= worst)) worst = e, at = i;
  }
  EXPECT_LE(worst, tol * scale) << what << ": element " << at << " is " << got.data[at] << ", expected "
                                << want.data[at];
}

const std::vector<Case>& conv_cases() {
  static const std::vector<Case> cases = {
      // name, N, C_in, C_out, groups, in, kernel, strides, rhs_dilation, padding lo, hi, NHWC
      {"plain", 2, 3, 4, 1, {7, 6}, {3, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, false},
      {"strided_padded", 2, 3, 5, 1, {9, 8}, {3, 3}, {2, 3}, {1, 1}, {1, 2}, {2, 0}, false},
      {"dilated", 1, 2, 3, 1, {10, 9}, {3, 2}, {1, 2}, {2, 3}, {2, 1}, {1, 1}, false},
      {"groups", 2, 4, 6, 2, {6, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false},
      {"depthwise", 1, 3, 6, 3, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false},
      {"1d", 2, 3, 2, 1, {11}, {4}, {2}, {1}, {1}, {2}, false},
      {"3d", 1, 2, 3, 1, {5, 4, 6}, {2, 3, 2}, {1, 1, 2}, {1, 1, 1}, {0, 1, 1}, {1, 0, 0}, false},
      {"negative_padding", 1, 2, 2, 1, {9, 8}, {3, 3}, {1, 2}, {1, 1}, {-1, 0}, {0, -2}, false},
      {"stride_leaves_a_tail", 2, 2, 3, 1, {10, 7}, {3, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, false},
  };
  return cases;
}

// The three convolution kinds of case `c` (with its layout flipped to NHWC/HWIO when `last`),
// weights as given or in oneDNN's format (`any`), against the oracles.
void check_conv_case(Case c, bool last, bool any, bool flipped) {
  c.last = last;
  SCOPED_TRACE(std::string(c.name) + (last ? " NHWC/HWIO" : " NCHW/OIHW") + (any ? " weights_any" : "") +
               (flipped ? " flipped" : ""));
  std::vector<DnnlSiteSpec> specs;
  for (DnnlOp k : {DnnlOp::conv_forward, DnnlOp::conv_backward_data, DnnlOp::conv_backward_weights}) {
    DnnlSiteSpec s = spec_of(c, k);
    s.weights_any = any;
    s.weights_flipped = flipped && k != DnnlOp::conv_backward_weights;
    std::string why;
    ASSERT_TRUE(dnnl_supported(s, &why)) << dnnl_op_name(k) << ": " << why;
    specs.push_back(s);
  }
  const DnnlSites sites(specs, 2);
  const DnnlSiteSpec& s = specs[0];
  Tensor src = src_tensor(s, last), w = weights_tensor(s, last), diff_dst = dst_tensor(s, last);
  fill(src, 1);
  fill(w, 2);
  fill(diff_dst, 3);
  // The weights buffer of a flipped site holds w reversed along its spatial dims.
  Tensor w_given = w;
  if (flipped)
    for (int64_t o = 0; o < w.dims[0]; ++o)
      for (int64_t i = 0; i < w.dims[1]; ++i)
        for_each_index(s.kernel, [&](const std::array<int64_t, 3>& k) {
          std::array<int64_t, 3> r = k;
          for (size_t d = 0; d < s.kernel.size(); ++d) r[d] = s.kernel[d] - 1 - k[d];
          w_given.at(o, i, r) = w.at(o, i, k);
        });
  Tensor dst = dst_tensor(s, last), want_dst = dst;
  conv_ref(s, src, w, want_dst);
  run_one(sites, 0, {src.data.data(), w_given.data.data(), dst.data.data()});
  expect_close(dst, want_dst, 1e-5, "conv_forward");
  Tensor diff_src = src_tensor(s, last), want_diff_src = diff_src, diff_w = w, want_diff_w = w;
  std::fill(diff_src.data.begin(), diff_src.data.end(), 7.f);  // every element is written
  std::fill(diff_w.data.begin(), diff_w.data.end(), 7.f);
  conv_grads_ref(s, src, w, diff_dst, &want_diff_src, &want_diff_w);
  run_one(sites, 1, {diff_dst.data.data(), w_given.data.data(), diff_src.data.data()});
  expect_close(diff_src, want_diff_src, 1e-5, "conv_backward_data");
  run_one(sites, 2, {src.data.data(), diff_dst.data.data(), diff_w.data.data()});
  expect_close(diff_w, want_diff_w, 1e-5, "conv_backward_weights");
}

}  // namespace

// Forward, backward-data and backward-weights of each case in NCHW/OIHW and NHWC/HWIO match the
// definition of a cross-correlation and its gradients (strides, padding, a stride that leaves
// unused input, negative padding, dilation, groups, depthwise, 1 and 3 spatial dims).
TEST(DnnlOps, ConvolutionsMatchTheDefinitionInBothLayouts) {
  for (const Case& c : conv_cases())
    for (bool last : {false, true}) check_conv_case(c, last, false, false);
}

// With weights in oneDNN's own format (weights_any: reordered before forward and backward-data,
// after backward-weights) and with flipped weights (JAX's lhs transpose binds rev(kernel)).
TEST(DnnlOps, ConvolutionsWithReorderedOrFlippedWeights) {
  for (const Case& c : conv_cases())
    for (bool last : {false, true}) {
      check_conv_case(c, last, true, false);
      check_conv_case(c, last, true, true);
      check_conv_case(c, last, false, true);
    }
}

namespace {

const std::vector<Case>& pool_cases() {
  static const std::vector<Case> cases = {
      // name, N, C, C, 1, in, window, strides, window_dilation, padding lo, hi, NHWC
      {"2x2/2", 2, 3, 3, 1, {8, 6}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, false},
      {"3x3/2_padded", 1, 2, 2, 1, {7, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, false},
      {"dilated", 2, 2, 2, 1, {9, 9}, {2, 3}, {1, 2}, {2, 1}, {0, 1}, {1, 0}, false},
      {"1d", 2, 3, 3, 1, {10}, {3}, {2}, {1}, {1}, {1}, false},
      {"3d", 1, 2, 2, 1, {4, 5, 6}, {2, 2, 3}, {2, 1, 3}, {1, 1, 1}, {0, 1, 0}, {0, 0, 0}, false},
      {"negative_padding", 1, 2, 2, 1, {9, 8}, {2, 2}, {2, 2}, {1, 1}, {-1, 0}, {0, -2}, false},
  };
  return cases;
}

void check_pool_case(Case c, bool last) {
  c.last = last;
  SCOPED_TRACE(std::string(c.name) + (last ? " NHWC" : " NCHW"));
  const DnnlOp forward[] = {DnnlOp::pool_forward_max, DnnlOp::pool_forward_avg_include_padding,
                            DnnlOp::pool_forward_avg_exclude_padding, DnnlOp::pool_forward_sum};
  const DnnlOp backward[] = {DnnlOp::pool_backward_max, DnnlOp::pool_backward_avg_include_padding,
                             DnnlOp::pool_backward_avg_exclude_padding, DnnlOp::pool_backward_sum};
  std::vector<DnnlSiteSpec> specs;
  for (DnnlOp k : forward) specs.push_back(spec_of(c, k));
  for (DnnlOp k : backward) specs.push_back(spec_of(c, k));
  for (const DnnlSiteSpec& s : specs) {
    std::string why;
    ASSERT_TRUE(dnnl_supported(s, &why)) << dnnl_op_name(s.kind) << ": " << why;
  }
  const DnnlSites sites(specs, 2);
  const DnnlSiteSpec& s = specs[0];
  Tensor src = src_tensor(s, last), diff_dst = dst_tensor(s, last);
  fill(src, 4, true);  // ties in most windows
  fill(diff_dst, 5);
  for (size_t i = 0; i < 4; ++i) {
    Tensor dst = dst_tensor(s, last), want = dst;
    pool_ref(s, forward[i], src, want);
    run_one(sites, int32_t(i), {src.data.data(), dst.data.data()});
    expect_close(dst, want, 1e-6, dnnl_op_name(forward[i]));
  }
  for (size_t i = 0; i < 4; ++i) {
    Tensor diff_src = src_tensor(s, last), want = diff_src;
    std::fill(diff_src.data.begin(), diff_src.data.end(), 7.f);
    pool_grad_ref(s, backward[i], src, diff_dst, want);
    std::vector<void*> bufs = {diff_dst.data.data(), diff_src.data.data()};
    if (backward[i] == DnnlOp::pool_backward_max) bufs.push_back(src.data.data());  // the forward is rerun
    run_one(sites, int32_t(4 + i), bufs);
    expect_close(diff_src, want, 1e-6, dnnl_op_name(backward[i]));
  }
}

}  // namespace

// Max (ties to the first element in window order), average including and excluding padding and
// sum pooling, and their gradients, with strides, padding, negative padding, window dilation and
// 1 to 3 spatial dims, in NCHW and NHWC, match the definitions.
TEST(DnnlOps, PoolingMatchesTheDefinitionInBothLayouts) {
  for (const Case& c : pool_cases())
    for (bool last : {false, true}) check_pool_case(c, last);
}

// pool_backward_max linked to a pool_forward_max site reads the workspace the forward wrote in
// the same run (the argmax of the forward's src, whatever the src buffer holds now); unlinked,
// or when the forward ran other than once in the run, it reruns the forward on its src buffer.
TEST(DnnlOps, MaxPoolingBackwardReadsTheForwardWorkspaceOfTheRun) {
  const Case c = {"3x3/2_padded", 2, 3, 3, 1, {7, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true};
  DnnlSiteSpec fwd = spec_of(c, DnnlOp::pool_forward_max), linked = spec_of(c, DnnlOp::pool_backward_max);
  linked.forward_site = 0;
  const DnnlSites sites({fwd, linked, spec_of(c, DnnlOp::pool_backward_max)}, 2);
  EXPECT_TRUE(sites.reads_forward_workspace(1));
  EXPECT_FALSE(sites.reads_forward_workspace(2));
  Tensor a = src_tensor(fwd, true), b = a, diff_dst = dst_tensor(fwd, true), dst = diff_dst;
  fill(a, 6, true);
  fill(b, 7, true);
  fill(diff_dst, 8);
  Tensor grad_a = a, grad_b = a, got = a;
  pool_grad_ref(fwd, DnnlOp::pool_backward_max, a, diff_dst, grad_a);
  pool_grad_ref(fwd, DnnlOp::pool_backward_max, b, diff_dst, grad_b);
  ASSERT_NE(grad_a.data, grad_b.data);  // so the checks below tell which argmax was read
  std::vector<void*> linked_bufs = {diff_dst.data.data(), got.data.data(), b.data.data()};
  {  // the forward ran once, on a: the linked site reads its argmax although its src buffer holds b
    DnnlScope scope(&sites);
    std::vector<void*> f = {a.data.data(), dst.data.data()};
    mj_rt_dnnl(0, f.data());
    mj_rt_dnnl(1, linked_bufs.data());
    EXPECT_EQ(take_runtime_error(), "");
    expect_close(got, grad_a, 1e-6, "linked, forward ran once");
    std::vector<void*> unlinked = {diff_dst.data.data(), got.data.data(), b.data.data()};
    mj_rt_dnnl(2, unlinked.data());
    expect_close(got, grad_b, 1e-6, "unlinked");
  }
  {  // a new run: the forward has not run, so the linked site reruns it on b
    DnnlScope scope(&sites);
    mj_rt_dnnl(1, linked_bufs.data());
    expect_close(got, grad_b, 1e-6, "linked, forward not run in this run");
  }
  {  // the forward ran twice (a loop): which run's workspace is meant is unknown, so a rerun
    DnnlScope scope(&sites);
    std::vector<void*> f = {a.data.data(), dst.data.data()};
    mj_rt_dnnl(0, f.data());
    mj_rt_dnnl(0, f.data());
    mj_rt_dnnl(1, linked_bufs.data());
    expect_close(got, grad_b, 1e-6, "linked, forward ran twice");
  }
  EXPECT_EQ(take_runtime_error(), "");
}

// Four threads run one table of two sites (a convolution with reordered weights, a max pooling)
// at once, each in its own scope with its own inputs, 10 times, as the SPMD executor's device
// threads do (one OpenMP thread per call) and as concurrent callers of a one-device program do
// (the default team): every result is the oracle's, and at most 4 run states were made.
TEST(DnnlOps, ATableRunsConcurrentlyFromFourThreads) {
  const Case conv = {"conv", 2, 4, 6, 2, {9, 8}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, {1, 0}, true};
  const Case pool = {"pool", 2, 6, 6, 1, {9, 8}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, true};
  DnnlSiteSpec cs = spec_of(conv, DnnlOp::conv_forward), ps = spec_of(pool, DnnlOp::pool_forward_max);
  cs.weights_any = true;
  for (int threads : {1, dnnl_default_threads()}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const DnnlSites sites({cs, ps}, threads);
    EXPECT_EQ(sites.threads(), threads);
    constexpr int kThreads = 4;
    std::vector<Tensor> src, w, want_conv, pool_src, want_pool;
    for (int t = 0; t < kThreads; ++t) {
      src.push_back(src_tensor(cs, true));
      w.push_back(weights_tensor(cs, true));
      pool_src.push_back(src_tensor(ps, true));
      fill(src.back(), 10 + unsigned(t));
      fill(w.back(), 20 + unsigned(t));
      fill(pool_src.back(), 30 + unsigned(t), true);
      want_conv.push_back(dst_tensor(cs, true));
      want_pool.push_back(dst_tensor(ps, true));
      conv_ref(cs, src.back(), w.back(), want_conv.back());
      pool_ref(ps, DnnlOp::pool_forward_max, pool_src.back(), want_pool.back());
    }
    std::vector<Tensor> got_conv = want_conv, got_pool = want_pool;
    std::vector<std::string> errors(kThreads);
    std::vector<int> mismatches(kThreads, 0);
    std::vector<std::thread> pool_threads;
    for (int t = 0; t < kThreads; ++t)
      pool_threads.emplace_back([&, t] {
        for (int it = 0; it < 10; ++it) {
          std::fill(got_conv[size_t(t)].data.begin(), got_conv[size_t(t)].data.end(), 0.f);
          std::fill(got_pool[size_t(t)].data.begin(), got_pool[size_t(t)].data.end(), 0.f);
          DnnlScope scope(&sites);
          std::vector<void*> c = {src[size_t(t)].data.data(), w[size_t(t)].data.data(),
                                  got_conv[size_t(t)].data.data()};
          std::vector<void*> p = {pool_src[size_t(t)].data.data(), got_pool[size_t(t)].data.data()};
          mj_rt_dnnl(0, c.data());
          mj_rt_dnnl(1, p.data());
          for (size_t i = 0; i < want_conv[size_t(t)].data.size(); ++i)
            mismatches[size_t(t)] += std::fabs(got_conv[size_t(t)].data[i] - want_conv[size_t(t)].data[i]) >
                                     1e-4f;
          mismatches[size_t(t)] += got_pool[size_t(t)].data != want_pool[size_t(t)].data;
        }
        errors[size_t(t)] = take_runtime_error();
      });
    for (std::thread& th : pool_threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(errors[size_t(t)], "") << "thread " << t;
      EXPECT_EQ(mismatches[size_t(t)], 0) << "thread " << t;
    }
    EXPECT_GE(sites.run_states(), 1u);
    EXPECT_LE(sites.run_states(), size_t(kThreads));
  }
}

// bf16 convolutions accumulate in f32: a bf16 result is the f32 oracle on the bf16 inputs rounded
// once (within bf16's relative 2^-8), an f32 result (preferred_element_type f32) is within f32's.
TEST(DnnlOps, Bf16ConvolutionsAccumulateInF32) {
  const Case c = {"bf16", 2, 4, 5, 1, {8, 7}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, {1, 1}, true};
  auto to_bf16 = [](const Tensor& t) {
    std::vector<bfloat16> v;
    for (float x : t.data) v.push_back(bfloat16(x));
    return v;
  };
  auto rounded = [](Tensor t) {
    for (float& x : t.data) x = float(bfloat16(x));
    return t;
  };
  DnnlSiteSpec f = spec_of(c, DnnlOp::conv_forward);
  f.dtype = f.out_dtype = DType::bf16;
  DnnlSiteSpec f32_out = f, bd = spec_of(c, DnnlOp::conv_backward_data),
               bw = spec_of(c, DnnlOp::conv_backward_weights);
  f32_out.out_dtype = DType::f32;
  bd.dtype = bd.out_dtype = bw.dtype = bw.out_dtype = DType::bf16;
  const DnnlSites sites({f, f32_out, bd, bw}, 2);
  Tensor src = src_tensor(f, true), w = weights_tensor(f, true), diff_dst = dst_tensor(f, true);
  fill(src, 40);
  fill(w, 41);
  fill(diff_dst, 42);
  src = rounded(src);
  w = rounded(w);
  diff_dst = rounded(diff_dst);
  std::vector<bfloat16> src16 = to_bf16(src), w16 = to_bf16(w), dd16 = to_bf16(diff_dst);
  Tensor want = dst_tensor(f, true), want_ds = src, want_dw = w;
  conv_ref(f, src, w, want);
  conv_grads_ref(f, src, w, diff_dst, &want_ds, &want_dw);
  auto back = [](const std::vector<bfloat16>& v, Tensor t) {
    for (size_t i = 0; i < v.size(); ++i) t.data[i] = float(v[i]);
    return t;
  };
  std::vector<bfloat16> out16(want.data.size()), ds16(src16.size()), dw16(w16.size());
  Tensor out32 = want;
  run_one(sites, 0, {src16.data(), w16.data(), out16.data()});
  run_one(sites, 1, {src16.data(), w16.data(), out32.data.data()});
  run_one(sites, 2, {dd16.data(), w16.data(), ds16.data()});
  run_one(sites, 3, {src16.data(), dd16.data(), dw16.data()});
  expect_close(back(out16, want), want, 1.0 / 128, "bf16 forward");
  expect_close(out32, want, 1e-5, "bf16 forward, f32 result");
  expect_close(back(ds16, want_ds), want_ds, 1.0 / 128, "bf16 backward-data");
  expect_close(back(dw16, want_dw), want_dw, 1.0 / 128, "bf16 backward-weights");
}

// What oneDNN 2.6 does not run is refused with a reason, never thrown by dnnl_supported:
// f64 and integer dtypes, a wrong output size, flipped diff_weights; DnnlSites names the site.
TEST(DnnlOps, UnsupportedSpecsAreRefusedWithAReason) {
  const Case c = {"c", 1, 2, 3, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, false};
  const DnnlSiteSpec ok = spec_of(c, DnnlOp::conv_forward);
  std::string why;
  EXPECT_TRUE(dnnl_supported(ok, &why)) << why;
  EXPECT_FALSE(dnnl_impl_name(ok).empty());
  auto refused = [](const DnnlSiteSpec& s, const std::string& reason) {
    std::string why;
    EXPECT_FALSE(dnnl_supported(s, &why));
    EXPECT_NE(why.find(reason), std::string::npos) << why;
  };
  DnnlSiteSpec f64 = ok;
  f64.dtype = f64.out_dtype = DType::f64;
  refused(f64, "f64");
  DnnlSiteSpec i32 = spec_of(c, DnnlOp::pool_forward_max);
  i32.dtype = i32.out_dtype = DType::i32;
  refused(i32, "i32");
  DnnlSiteSpec bad_out = ok;
  bad_out.out_size = {5, 4};
  refused(bad_out, "output size");
  DnnlSiteSpec flipped = spec_of(c, DnnlOp::conv_backward_weights);
  flipped.weights_flipped = true;
  refused(flipped, "weights_flipped");
  DnnlSiteSpec f32_pool = spec_of(c, DnnlOp::pool_forward_avg_include_padding);
  f32_pool.dtype = DType::bf16;
  refused(f32_pool, "result");
  DnnlSiteSpec bf16_sum_grad = spec_of(c, DnnlOp::pool_backward_sum);
  bf16_sum_grad.dtype = bf16_sum_grad.out_dtype = DType::bf16;
  refused(bf16_sum_grad, "rounded again");
  EXPECT_THROW(dnnl_impl_name(f64), ValueError);
  try {
    DnnlSites sites({ok, f64}, 1);
    ADD_FAILURE() << "DnnlSites accepted an f64 site";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("oneDNN site 1"), std::string::npos) << e.what();
  }
  DnnlSiteSpec bad_link = spec_of(c, DnnlOp::pool_backward_max);
  bad_link.forward_site = 0;  // a convolution, not a pool_forward_max
  EXPECT_THROW(DnnlSites({ok, bad_link}, 1), ValueError);
}

// mj_rt_dnnl is in the runtime's symbol table; with no table installed, or a site out of range,
// it records a runtime error instead of running anything.
TEST(DnnlOps, CallsWithoutATableOrOutOfRangeRecordAnError) {
  bool listed = false;
  for (const RuntimeSymbol& s : runtime_symbols()) listed |= s.name == "mj_rt_dnnl";
  EXPECT_TRUE(listed);
  std::vector<void*> none = {nullptr, nullptr, nullptr};
  take_runtime_error();
  mj_rt_dnnl(0, none.data());
  EXPECT_NE(take_runtime_error().find("no oneDNN site 0"), std::string::npos);
  const Case c = {"c", 1, 2, 3, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, false};
  const DnnlSites sites({spec_of(c, DnnlOp::conv_forward)}, 1);
  {
    DnnlScope scope(&sites);
    mj_rt_dnnl(1, none.data());
    EXPECT_NE(take_runtime_error().find("no oneDNN site 1"), std::string::npos);
  }
  DnnlScope nothing(nullptr);  // a program without sites installs nothing
  mj_rt_dnnl(0, none.data());
  EXPECT_NE(take_runtime_error().find("no oneDNN site 0"), std::string::npos);
}

// The layout helper and the weights-copy description.
TEST(DnnlOps, LayoutStridesAndWeightsCopies) {
  // NHWC [2, 5, 6, 3] as [N, C, H, W]; HWIO [3, 3, 4, 8] as [O, I, H, W].
  EXPECT_EQ(dnnl_layout_strides({2, 5, 6, 3}, {0, 3, 1, 2}), (std::vector<int64_t>{90, 1, 18, 3}));
  EXPECT_EQ(dnnl_layout_strides({3, 3, 4, 8}, {3, 2, 0, 1}), (std::vector<int64_t>{1, 8, 96, 32}));
  EXPECT_THROW(dnnl_layout_strides({2, 3}, {0, 0}), ValueError);
  const Case c = {"c", 2, 8, 16, 1, {12, 12}, {5, 5}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, true};
  DnnlSiteSpec plain = spec_of(c, DnnlOp::conv_forward);
  EXPECT_FALSE(dnnl_weights_reorder(plain).needed);
  DnnlSiteSpec any = plain;
  any.weights_any = true;
  const DnnlWeightsReorder r = dnnl_weights_reorder(any);
  if (r.needed) {  // oneDNN picked a format of its own (a blocked one on AVX2 and AVX-512)
    EXPECT_NE(r.from, r.to);
    EXPECT_EQ(r.from, "f32 cdba");  // HWIO: H, W, I, O from outermost to innermost
    EXPECT_EQ(r.bytes, 16 * 8 * 5 * 5 * 4);
    EXPECT_FALSE(r.after);
  }
  DnnlSiteSpec bw = spec_of(c, DnnlOp::conv_backward_weights);
  bw.weights_any = true;
  const DnnlWeightsReorder rb = dnnl_weights_reorder(bw);
  if (rb.needed) {
    EXPECT_TRUE(rb.after);
    EXPECT_EQ(rb.to, "f32 cdba");
  }
  DnnlSiteSpec flipped = plain;
  flipped.weights_flipped = true;
  const DnnlWeightsReorder rf = dnnl_weights_reorder(flipped);
  EXPECT_TRUE(rf.needed);
  EXPECT_EQ(rf.from, "f32 cdba flipped");
  EXPECT_EQ(rf.to, "f32 cdba");
}

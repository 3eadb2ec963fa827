// Tests of minijax's convolution, windowed reductions and pooling against PyTorch (f64): values,
// gradients, JVPs and Hessian-vector products, eager and compiled. Data: torch_reference_data_conv.h.
//
// Each case is sum(sin(op(inputs...)) * c), c a literal of op's result shape, op written here with
// minijax's lax/nn functions exactly as tools/torch_reference.py writes it with torch (same
// inputs, read from the header; the generator's comment above each namespace names the call).
// JAX's semantics (lax.conv_general_dilated is a cross-correlation, as torch's conv is; padding
// strings as jax.lax.padtype_to_pads; batch_group_count as XLA: contiguous batch groups, one per
// contiguous group of output features); PyTorch computes them with its own convolutions and
// poolings (zero insertion for lhs/base dilation, conv_transpose2d for the transposed case).
// Gradients are reverse mode (mj::value_and_grad), JVPs forward mode along a direction for every
// input at once (torch: forward-mode AD), HVPs forward-over-reverse (torch: reverse-over-reverse).
// Everything runs eagerly and under mj::jit; both must agree with PyTorch to 1e-9 relative:
// |got - want| <= 1e-9 * max(|want|, 1e-3 * max|want over the array|), and with each other.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

#include "autodiff/torch_reference_check.h"
#include "autodiff/torch_reference_data_conv.h"

namespace {

namespace ref = torch_reference;
namespace lax = mj::lax;
using namespace torch_check;

using Pads = lax::Padding;

lax::ConvGeneralDilatedOptions layout(const char* lhs, const char* rhs, const char* out) {
  lax::ConvGeneralDilatedOptions o;
  o.dimension_numbers = lax::ConvDimensionSpec(lhs, rhs, out);
  return o;
}

// ---- convolution ---------------------------------------------------------------------------------

TEST(TorchReferenceConv, StridesValid) {
  namespace d = ref::conv_strides_valid;
  auto op = [](const V& a) { return lax::conv_general_dilated(a[0], a[1], {2, 1}, "VALID"); };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, Same) {
  namespace d = ref::conv_same;
  auto op = [](const V& a) { return lax::conv_general_dilated(a[0], a[1], {2, 1}, "SAME"); };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, NegativePadding) {
  namespace d = ref::conv_negative_padding;
  auto op = [](const V& a) { return lax::conv_general_dilated(a[0], a[1], {1, 1}, Pads{{2, -1}, {-1, 1}}); };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, LhsDilation) {
  namespace d = ref::conv_lhs_dilation;
  auto op = [](const V& a) {
    return lax::conv_general_dilated(a[0], a[1], {1, 2}, Pads{{1, 0}, {2, 1}}, {.lhs_dilation = {2, 3}});
  };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

// torch's conv_transpose2d(x, w, stride 2, padding (1, 0), output_padding (1, 0)) is JAX's
// conv_transpose with transpose_kernel and the pairs (k - 1 - p, k - 1 - p + output_padding).
TEST(TorchReferenceConv, ConvTranspose) {
  namespace d = ref::conv_transpose;
  auto op = [](const V& a) {
    lax::ConvTransposeOptions o;
    o.dimension_numbers = lax::ConvDimensionSpec("NCHW", "OIHW", "NCHW");
    o.transpose_kernel = true;
    return lax::conv_transpose(a[0], a[1], {2, 2}, Pads{{1, 2}, {2, 2}}, o);
  };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, RhsDilation) {
  namespace d = ref::conv_rhs_dilation;
  auto op = [](const V& a) {
    return lax::conv_general_dilated(a[0], a[1], {1, 2}, Pads{{1, 0}, {2, 1}}, {.rhs_dilation = {2, 2}});
  };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, FeatureGroups) {
  namespace d = ref::conv_feature_groups;
  auto op = [](const V& a) {
    return lax::conv_general_dilated(a[0], a[1], {1, 1}, "SAME", {.feature_group_count = 2});
  };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, Depthwise) {
  namespace d = ref::conv_depthwise;
  auto op = [](const V& a) {
    return lax::conv_general_dilated(a[0], a[1], {2, 2}, Pads{{1, 1}, {1, 1}}, {.feature_group_count = 3});
  };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, BatchGroups) {
  namespace d = ref::conv_batch_groups;
  auto op = [](const V& a) {
    return lax::conv_general_dilated(a[0], a[1], {1, 1}, "VALID", {.batch_group_count = 2});
  };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, OneSpatialDimSameLower) {
  namespace d = ref::conv_1d;
  auto op = [](const V& a) {
    return lax::conv_general_dilated(a[0], a[1], {2}, "SAME_LOWER", {.rhs_dilation = {2}});
  };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, ThreeSpatialDims) {
  namespace d = ref::conv_3d;
  auto op = [](const V& a) {
    return lax::conv_general_dilated(a[0], a[1], {1, 2, 1}, Pads{{0, 1}, {1, 1}, {0, 0}});
  };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, Nhwc) {
  namespace d = ref::conv_nhwc;
  auto op = [](const V& a) {
    return lax::conv_general_dilated(a[0], a[1], {1, 2}, "SAME", layout("NHWC", "HWIO", "NHWC"));
  };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

// The kernel's string names W before H, so the first spatial dimension (of strides and padding)
// is W, as jax.lax.conv_general_permutations orders them.
TEST(TorchReferenceConv, PermutedLayout) {
  namespace d = ref::conv_permuted_layout;
  auto op = [](const V& a) {
    return lax::conv_general_dilated(a[0], a[1], {2, 1}, Pads{{1, 0}, {0, 1}},
                                     layout("NHWC", "IWHO", "CNHW"));
  };
  check_case(op, arr(d::c, d::c_shape), MJ_XW_CASE(d));
}

TEST(TorchReferenceConv, NnConvWithBias) {
  namespace d = ref::nn_conv_bias;
  auto op = [](const V& a) {
    mj::nn::ConvOptions o;
    o.rhs_dilation = {1, 2};
    o.feature_group_count = 2;
    o.bias = a[2];
    return mj::nn::conv(a[0], a[1], {}, "SAME", o);
  };
  Case k{{arr(d::x, d::x_shape), arr(d::w, d::w_shape), arr(d::b, d::b_shape)},
         d::value,
         {arr(d::grad_x, d::grad_x_shape), arr(d::grad_w, d::grad_w_shape), arr(d::grad_b, d::grad_b_shape)},
         {arr(d::jvp_x_dir, d::jvp_x_dir_shape), arr(d::jvp_w_dir, d::jvp_w_dir_shape),
          arr(d::jvp_b_dir, d::jvp_b_dir_shape)},
         d::jvp,
         {{0, arr(d::hvp_x_dir, d::hvp_x_dir_shape), arr(d::hvp_x, d::hvp_x_shape)},
          {1, arr(d::hvp_w_dir, d::hvp_w_dir_shape), arr(d::hvp_w, d::hvp_w_shape)}}};
  check_case(op, arr(d::c, d::c_shape), k);
}

// ---- pooling and windowed reductions -------------------------------------------------------------

TEST(TorchReferenceConv, MaxPoolTies) {
  namespace d = ref::max_pool_ties;
  auto op = [](const V& a) { return mj::nn::max_pool(a[0], {2, 3}, {1, 2}); };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}

TEST(TorchReferenceConv, MaxPoolSame) {
  namespace d = ref::max_pool_same;
  auto op = [](const V& a) { return mj::nn::max_pool(a[0], {2, 2}, {2, 2}, "SAME"); };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}

TEST(TorchReferenceConv, MaxPoolOneDimUnbatched) {
  namespace d = ref::max_pool_1d_unbatched;
  auto op = [](const V& a) { return mj::nn::max_pool(a[0], {3}, {2}, Pads{{1, 1}}); };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}

TEST(TorchReferenceConv, ReduceWindowMaxDilated) {
  namespace d = ref::reduce_window_max;
  auto op = [](const V& a) {
    return lax::reduce_window_max(a[0], {2, 2, 3}, {1, 2, 1}, Pads{{0, 1}, {1, 0}, {1, 1}}, {1, 1, 2},
                                  {1, 2, 1});
  };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}

TEST(TorchReferenceConv, ReduceWindowSumDilated) {
  namespace d = ref::reduce_window_sum;
  auto op = [](const V& a) {
    return lax::reduce_window_sum(a[0], {1, 3, 2}, {1, 1, 2}, Pads{{0, 0}, {2, 1}, {0, 1}}, {1, 2, 1},
                                  {1, 1, 2});
  };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}

TEST(TorchReferenceConv, AvgPoolIncludePad) {
  namespace d = ref::avg_pool_include_pad;
  auto op = [](const V& a) { return mj::nn::avg_pool(a[0], {3, 2}, {2, 1}, Pads{{1, 1}, {1, 1}}, true); };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}

TEST(TorchReferenceConv, AvgPoolExcludePad) {
  namespace d = ref::avg_pool_exclude_pad;
  auto op = [](const V& a) { return mj::nn::avg_pool(a[0], {3, 2}, {2, 1}, Pads{{1, 1}, {1, 1}}, false); };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}

TEST(TorchReferenceConv, AvgPool3dExcludePad) {
  namespace d = ref::avg_pool_3d_exclude_pad;
  auto op = [](const V& a) {
    return mj::nn::avg_pool(a[0], {2, 2, 3}, {2, 1, 2}, Pads{{1, 1}, {0, 0}, {1, 1}}, false);
  };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}

// ---- tied windows --------------------------------------------------------------------------------

// Max pooling over an input with tied maxima (7 distinct levels): eager, compiled and PyTorch agree
// on the value and the gradient, and all three equal a naive loop written from the definition
// (XLA's ge selector: each window's cotangent goes to its first maximum in window order, row-major
// over the window; the generator asserts PyTorch's max_pool2d backward does the same).
TEST(TorchReferenceConv, MaxPoolTiedWindowGoesToFirstMaximum) {
  namespace d = ref::max_pool_ties;
  const int64_t N = d::x_shape[0], H = d::x_shape[1], W = d::x_shape[2], C = d::x_shape[3];
  const int64_t OH = d::c_shape[1], OW = d::c_shape[2];
  auto x_at = [&](int64_t n, int64_t h, int64_t w, int64_t c) { return d::x[((n * H + h) * W + w) * C + c]; };
  // The naive loop: window (2, 3), strides (1, 2), VALID, over NHWC.
  std::vector<double> grad(N * H * W * C, 0.0);
  double value = 0;
  int tied_windows = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t c = 0; c < C; ++c) {
          double m = -INFINITY;
          int64_t bh = 0, bw = 0;
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 3; ++j) {
              const double v = x_at(n, oh + i, 2 * ow + j, c);
              if (v > m) {  // strictly greater: a tie keeps the earlier element
                m = v;
                bh = oh + i;
                bw = 2 * ow + j;
              }
            }
          int count = 0;
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 3; ++j) count += x_at(n, oh + i, 2 * ow + j, c) == m;
          tied_windows += count > 1;
          const double wgt = d::c[((n * OH + oh) * OW + ow) * C + c];
          value += std::sin(m) * wgt;
          grad[((n * H + bh) * W + bw) * C + c] += std::cos(m) * wgt;
        }
  ASSERT_GT(tied_windows, 0) << "the data has no tied window";
  const RefArray naive_grad{grad.data(), grad.size(), mj::Shape(d::x_shape, d::x_shape + 4)};
  // PyTorch's value and gradient are the naive ones.
  EXPECT_NEAR(d::value, value, 1e-12 * std::abs(value));
  expect_matches(to_array(arr(d::grad_x, d::grad_x_shape)), naive_grad, "torch grad vs naive");

  const mj::Array c = to_array(arr(d::c, d::c_shape));
  auto f = [c](const mj::Array& x) { return mj::sum(mj::sin(mj::nn::max_pool(x, {2, 3}, {1, 2})) * c); };
  const mj::Array x = to_array(arr(d::x, d::x_shape));
  const std::pair<mj::Array, mj::Array> eager = mj::value_and_grad(f)(x);
  const std::pair<mj::Array, mj::Array> compiled = mj::jit(mj::value_and_grad(f))(x);
  for (const auto& [mode, r] : {std::pair{"eager", eager}, std::pair{"compiled", compiled}}) {
    const std::string m(mode);
    expect_value(r.first, d::value, m + " value");
    expect_matches(r.second, arr(d::grad_x, d::grad_x_shape), m + " grad vs torch");
    expect_matches(r.second, naive_grad, m + " grad vs naive");
    // An element no window selects (a tied maximum that is first in no window among them) gets
    // exactly nothing.
    for (size_t i = 0; i < grad.size(); ++i)
      if (grad[i] == 0.0) EXPECT_EQ(r.second.data<double>()[i], 0.0) << m << " element " << i;
  }
}

// The smallest tie: one 2x2 window [[1, 2], [2, 1]]; the gradient is exactly [[0, 1], [0, 0]]
// (the first maximum in window order) and the JVP takes the tangent there, eager and compiled.
TEST(TorchReferenceConv, MaxPoolSingleTiedWindow) {
  const mj::Array x = mj::array(std::vector<double>{1, 2, 2, 1}, mj::Shape{1, 2, 2, 1}, mj::f64);
  const mj::Array t = mj::array(std::vector<double>{10, 20, 30, 40}, mj::Shape{1, 2, 2, 1}, mj::f64);
  auto f = [](const mj::Array& v) { return mj::sum(mj::nn::max_pool(v, {2, 2})); };
  const std::vector<double> want{0, 1, 0, 0};
  for (const mj::Array& g : {mj::grad(f)(x), mj::jit(mj::grad(f))(x)})
    EXPECT_EQ(std::vector<double>(g.data<double>(), g.data<double>() + 4), want);
  EXPECT_EQ(mj::jvp(f, x, t).second.item<double>(), 20.0);
  auto jf = mj::jit([f](const mj::Array& p, const mj::Array& q) { return mj::jvp(f, p, q).second; });
  EXPECT_EQ(jf(x, t).item<double>(), 20.0);
}

}  // namespace

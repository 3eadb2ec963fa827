// minijax tests: which oneDNN form classify_convolution gives each convolution, for the
// convolutions JAX's transposes build (params derived here from JAX's formulas) and for others.
#include <gtest/gtest.h>

#include "jit/codegen/lower/conv_forms.h"
#include "jit/codegen/lower/pool_forms.h"

namespace {

using minijax::ConvParams;
using minijax::Shape;
using minijax::WindowParams;
using minijax::lower::ConvFormKind;
using minijax::lower::classify_convolution;
using minijax::lower::classify_pooling;

// NHWC input, HWIO kernel, NHWC output: lhs_spec (0, 3, 1, 2), rhs_spec (3, 2, 0, 1).
ConvParams nhwc(std::vector<int64_t> strides, std::vector<int64_t> padding, std::vector<int64_t> rhs_dil = {1, 1}) {
  ConvParams p;
  p.window_strides = std::move(strides);
  p.padding = std::move(padding);
  p.lhs_dilation = {1, 1};
  p.rhs_dilation = std::move(rhs_dil);
  p.lhs_spec = {0, 3, 1, 2};
  p.rhs_spec = {3, 2, 0, 1};
  p.out_spec = {0, 3, 1, 2};
  return p;
}

int64_t dilate(int64_t n, int64_t d) { return n == 0 ? 0 : (n - 1) * d + 1; }

// JAX v0.7.0 jax/_src/lax/convolution.py, _conv_general_dilated_transpose_lhs: the equation
// conv_general_dilated(g, rev(rhs), window_strides=lhs_dilation (1), padding=
// _conv_general_vjp_lhs_padding(...), lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
// dimension_numbers=(out_spec, _conv_spec_transpose(rhs_spec), lhs_spec)).
ConvParams transpose_lhs(const ConvParams& f, const Shape& in_sp, const Shape& k_sp, const Shape& out_sp) {
  ConvParams t = f;
  t.window_strides = f.lhs_dilation;
  t.lhs_dilation = f.window_strides;
  t.lhs_spec = f.out_spec;
  t.rhs_spec = {f.rhs_spec[1], f.rhs_spec[0], f.rhs_spec[2], f.rhs_spec[3]};
  t.out_spec = f.lhs_spec;
  t.padding.clear();
  for (size_t i = 0; i < 2; ++i) {  // _conv_general_vjp_lhs_padding
    const int64_t lhs_d = dilate(in_sp[i], f.lhs_dilation[i]), rhs_d = dilate(k_sp[i], f.rhs_dilation[i]);
    const int64_t out_d = dilate(out_sp[i], f.window_strides[i]);
    const int64_t before = rhs_d - f.padding[2 * i] - 1;
    t.padding.push_back(before);
    t.padding.push_back(lhs_d + rhs_d - 1 - out_d - before);
  }
  return t;
}

// _conv_general_dilated_transpose_rhs: conv_general_dilated(lhs, g, window_strides=rhs_dilation,
// padding=_conv_general_vjp_rhs_padding(...), lhs_dilation=lhs_dilation, rhs_dilation=
// window_strides, dimension_numbers=(transpose(lhs_spec), transpose(out_spec),
// transpose(rhs_spec))), with batch_group_count = the forward's feature_group_count.
ConvParams transpose_rhs(const ConvParams& f, const Shape& in_sp, const Shape& k_sp, const Shape& out_sp) {
  auto swap01 = [](std::vector<int64_t> s) {
    std::swap(s[0], s[1]);
    return s;
  };
  ConvParams t = f;
  t.window_strides = f.rhs_dilation;
  t.rhs_dilation = f.window_strides;
  t.lhs_spec = swap01(f.lhs_spec);
  t.rhs_spec = swap01(f.out_spec);
  t.out_spec = swap01(f.rhs_spec);
  t.batch_group_count = f.feature_group_count;
  t.feature_group_count = 1;
  t.padding.clear();
  for (size_t i = 0; i < 2; ++i) {  // _conv_general_vjp_rhs_padding
    const int64_t lhs_d = dilate(in_sp[i], f.lhs_dilation[i]), rhs_d = dilate(k_sp[i], f.rhs_dilation[i]);
    const int64_t out_d = dilate(out_sp[i], f.window_strides[i]);
    const int64_t lo = f.padding[2 * i];
    t.padding.push_back(lo);
    t.padding.push_back((out_d - lhs_d) + (rhs_d - lo - 1));
  }
  return t;
}

TEST(ConvForms, ForwardNhwcReadsLayoutsAsStrides) {
  // [128, 12, 12, 32] * [5, 5, 32, 64] -> [128, 8, 8, 64]: the CNN's second convolution.
  auto f = classify_convolution(nhwc({1, 1}, {0, 0, 0, 0}), {128, 12, 12, 32}, {5, 5, 32, 64}, {128, 8, 8, 64},
                                minijax::f32, minijax::f32, false);
  ASSERT_EQ(f.kind, ConvFormKind::forward) << f.reason;
  EXPECT_EQ(f.src.dims, (std::vector<int64_t>{128, 32, 12, 12}));
  EXPECT_EQ(f.src.strides, (std::vector<int64_t>{12 * 12 * 32, 1, 12 * 32, 32}));
  EXPECT_EQ(f.weights.dims, (std::vector<int64_t>{64, 32, 5, 5}));
  EXPECT_EQ(f.weights.strides, (std::vector<int64_t>{1, 64, 5 * 32 * 64, 32 * 64}));
  EXPECT_EQ(f.dst.dims, (std::vector<int64_t>{128, 64, 8, 8}));
  EXPECT_EQ(f.pad_r, (std::vector<int64_t>{0, 0}));
}

TEST(ConvForms, JaxLhsTransposeOfStridedConvIsBackwardData) {
  // Forward: [2, 9, 9, 3] * [3, 3, 3, 4], strides 2, padding (1, 1): output 5 x 5.
  ConvParams fwd = nhwc({2, 2}, {1, 1, 1, 1});
  ConvParams t = transpose_lhs(fwd, {9, 9}, {3, 3}, {5, 5});
  auto f = classify_convolution(t, {2, 5, 5, 4}, {3, 3, 3, 4}, {2, 9, 9, 3}, minijax::f32, minijax::f32, true);
  ASSERT_EQ(f.kind, ConvFormKind::backward_data) << f.reason;
  EXPECT_EQ(f.strides, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.pad_l, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(f.pad_r, (std::vector<int64_t>{1, 1}));  // (5 - 1) * 2 + 3 - 9 - 1
  EXPECT_EQ(f.dst.dims, (std::vector<int64_t>{2, 4, 5, 5}));   // diff_dst: g
  EXPECT_EQ(f.src.dims, (std::vector<int64_t>{2, 3, 9, 9}));   // diff_src: the input gradient
  EXPECT_EQ(f.weights.dims, (std::vector<int64_t>{4, 3, 3, 3}));  // [OC, IC, kh, kw] of the forward
}

TEST(ConvForms, StrideOneLhsTransposeNeedsTheRev) {
  // The CNN's second convolution: its input gradient has window strides 1 and lhs_dilation 1.
  ConvParams fwd = nhwc({1, 1}, {0, 0, 0, 0});
  ConvParams t = transpose_lhs(fwd, {12, 12}, {5, 5}, {8, 8});
  auto with_rev = classify_convolution(t, {128, 8, 8, 64}, {5, 5, 32, 64}, {128, 12, 12, 32}, minijax::f32,
                                       minijax::f32, true);
  EXPECT_EQ(with_rev.kind, ConvFormKind::backward_data) << with_rev.reason;
  EXPECT_EQ(with_rev.pad_l, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(with_rev.pad_r, (std::vector<int64_t>{0, 0}));
  auto without = classify_convolution(t, {128, 8, 8, 64}, {5, 5, 32, 64}, {128, 12, 12, 32}, minijax::f32,
                                      minijax::f32, false);
  EXPECT_EQ(without.kind, ConvFormKind::forward);  // the same numbers: a plain convolution
}

TEST(ConvForms, JaxRhsTransposeIsBackwardWeights) {
  // The CNN's first convolution: [128, 28, 28, 1] * [5, 5, 1, 32] -> [128, 24, 24, 32].
  ConvParams fwd = nhwc({1, 1}, {0, 0, 0, 0});
  ConvParams t = transpose_rhs(fwd, {28, 28}, {5, 5}, {24, 24});
  auto f = classify_convolution(t, {128, 28, 28, 1}, {128, 24, 24, 32}, {5, 5, 1, 32}, minijax::f32, minijax::f32,
                                false);
  ASSERT_EQ(f.kind, ConvFormKind::backward_weights) << f.reason;
  EXPECT_EQ(f.src.dims, (std::vector<int64_t>{128, 1, 28, 28}));
  EXPECT_EQ(f.dst.dims, (std::vector<int64_t>{128, 32, 24, 24}));
  EXPECT_EQ(f.weights.dims, (std::vector<int64_t>{32, 1, 5, 5}));
  EXPECT_EQ(f.weights.strides, (std::vector<int64_t>{1, 32, 5 * 32, 32}));
  EXPECT_EQ(f.pad_r, (std::vector<int64_t>{0, 0}));
}

TEST(ConvForms, GroupedRhsTransposeKeepsTheGroups) {
  // Depthwise-like: 4 groups, [1, 10, 10, 8] * [3, 3, 2, 8], strides 2, padding (1, 1).
  ConvParams fwd = nhwc({2, 2}, {1, 1, 1, 1});
  fwd.feature_group_count = 4;
  ConvParams t = transpose_rhs(fwd, {10, 10}, {3, 3}, {5, 5});
  auto f = classify_convolution(t, {1, 10, 10, 8}, {1, 5, 5, 8}, {3, 3, 2, 8}, minijax::f32, minijax::f32, false);
  ASSERT_EQ(f.kind, ConvFormKind::backward_weights) << f.reason;
  EXPECT_EQ(f.groups, 4);
  EXPECT_EQ(f.weights.dims, (std::vector<int64_t>{8, 2, 3, 3}));
  EXPECT_EQ(f.strides, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.pad_l, (std::vector<int64_t>{1, 1}));
}

TEST(ConvForms, WhatOneDnnDoesNotTakeIsALoopNest) {
  auto f64 = classify_convolution(nhwc({1, 1}, {0, 0, 0, 0}), {1, 6, 6, 2}, {3, 3, 2, 2}, {1, 4, 4, 2},
                                  minijax::f64, minijax::f64, false);
  EXPECT_EQ(f64.kind, ConvFormKind::loop_nest);
  EXPECT_NE(f64.reason.find("f64"), std::string::npos) << f64.reason;
  auto crop = classify_convolution(nhwc({1, 1}, {-1, 0, 0, 0}), {1, 6, 6, 2}, {3, 3, 2, 2}, {1, 3, 4, 2},
                                   minijax::f32, minijax::f32, false);
  EXPECT_EQ(crop.kind, ConvFormKind::loop_nest);
  ConvParams strided_dil = nhwc({2, 2}, {0, 0, 0, 0});
  strided_dil.lhs_dilation = {2, 2};
  auto sd = classify_convolution(strided_dil, {1, 6, 6, 2}, {3, 3, 2, 2}, {1, 5, 5, 2}, minijax::f32, minijax::f32,
                                 false);
  EXPECT_EQ(sd.kind, ConvFormKind::loop_nest);
  ConvParams batch_groups = nhwc({1, 1}, {0, 0, 0, 0});
  batch_groups.batch_group_count = 2;
  auto bg = classify_convolution(batch_groups, {4, 6, 6, 2}, {3, 3, 2, 2}, {2, 4, 4, 2}, minijax::f32, minijax::f32,
                                 false);
  EXPECT_EQ(bg.kind, ConvFormKind::loop_nest);
}

TEST(PoolForms, NhwcMaxPoolIsAPooling) {
  WindowParams w{{1, 2, 2, 1}, {1, 2, 2, 1}, {0, 0, 0, 0, 0, 0, 0, 0}, {1, 1, 1, 1}, {1, 1, 1, 1}};
  auto f = classify_pooling(w, {128, 24, 24, 32}, {128, 12, 12, 32}, minijax::f32);
  ASSERT_TRUE(f.pooling) << f.reason;
  EXPECT_EQ(f.src.dims, (std::vector<int64_t>{128, 32, 24, 24}));
  EXPECT_EQ(f.src.strides, (std::vector<int64_t>{24 * 24 * 32, 1, 24 * 32, 32}));
  EXPECT_EQ(f.kernel, (std::vector<int64_t>{2, 2}));
  WindowParams dil = w;
  dil.base_dilation = {1, 2, 1, 1};
  EXPECT_FALSE(classify_pooling(dil, {128, 24, 24, 32}, {128, 23, 12, 32}, minijax::f32).pooling);
  EXPECT_FALSE(classify_pooling(w, {128, 24, 24, 32}, {128, 12, 12, 32}, minijax::f64).pooling);
}

}  // namespace

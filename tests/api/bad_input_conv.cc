// minijax public-API bad-input cases: the convolution functions (core/convolution.h).
// Owns conv_cases(): the bad calls of conv_general_dilated and of its wrappers.
#include "api/bad_input.h"

namespace bad_input {
namespace {
namespace mj = minijax;
namespace lax = minijax::lax;
using mj::Array;
using mj::ShapeError;
using mj::TypeError;
using mj::ValueError;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// f32[2,4,6,6] (NCHW) and a kernel f32[3,4,3,3] (OIHW) that fit it.
Array x() { return iota_f32({2, 4, 6, 6}); }
Array k() { return iota_f32({3, 4, 3, 3}); }

lax::ConvGeneralDilatedOptions layout(const char* l, const char* r, const char* o) {
  lax::ConvGeneralDilatedOptions opt;
  opt.dimension_numbers = lax::ConvDimensionSpec(l, r, o);
  return opt;
}
lax::ConvGeneralDilatedOptions groups(int64_t feature, int64_t batch) {
  lax::ConvGeneralDilatedOptions o;
  o.feature_group_count = feature;
  o.batch_group_count = batch;
  return o;
}
lax::ConvGeneralDilatedOptions dilation(std::vector<int64_t> lhs, std::vector<int64_t> rhs) {
  lax::ConvGeneralDilatedOptions o;
  o.lhs_dilation = std::move(lhs);
  o.rhs_dilation = std::move(rhs);
  return o;
}
lax::ConvGeneralDilatedOptions preferred(mj::DType d) {
  lax::ConvGeneralDilatedOptions o;
  o.preferred_element_type = d;
  return o;
}
lax::ConvTransposeOptions nchw_transpose() {
  lax::ConvTransposeOptions o;
  o.dimension_numbers = lax::ConvDimensionSpec("NCHW", "OIHW", "NCHW");
  return o;
}

}  // namespace

std::vector<Case> conv_cases() {
  const char* cgd = "minijax::lax::conv_general_dilated";
  return {
      // Ranks and dimension numbers: ValueError naming the parameter and both shapes.
      BAD(cgd, ValueError, lax::conv_general_dilated(x(), iota_f32({3, 4, 3}), {1, 1}, "VALID"),
          "conv_general_dilated", "same rank", "[2,4,6,6]", "[3,4,3]"),
      BAD(cgd, ValueError, lax::conv_general_dilated(iota_f32({2, 4}), iota_f32({3, 4}), {}, "VALID"),
          "conv_general_dilated", "rank >= 3", "[2,4]", "[3,4]"),
      BAD(cgd, ValueError,
          lax::conv_general_dilated(x(), k(), {1, 1}, "VALID", layout("NCH", "OIHW", "NCHW")),
          "conv_general_dilated", "dimension_numbers", "'NCH'", "[2,4,6,6]", "[3,4,3,3]"),
      BAD(cgd, ValueError,
          lax::conv_general_dilated(x(), k(), {1, 1}, "VALID", layout("NCHH", "OIHW", "NCHW")),
          "conv_general_dilated", "dimension_numbers", "repeats the letter 'H'", "[2,4,6,6]", "[3,4,3,3]"),
      BAD(cgd, ValueError,
          lax::conv_general_dilated(x(), k(), {1, 1}, "VALID", layout("NCHW", "OIHX", "NCHW")),
          "conv_general_dilated", "dimension_numbers", "spatial letters", "[2,4,6,6]", "[3,4,3,3]"),
      BAD(cgd, ValueError,
          lax::conv_general_dilated(x(), k(), {1, 1}, "VALID", layout("NCHW", "OHWX", "NCHW")),
          "conv_general_dilated", "dimension_numbers", "'I' exactly once", "[2,4,6,6]", "[3,4,3,3]"),
      // Feature and batch sizes that do not fit the group counts: ShapeError naming both shapes.
      BAD(cgd, ShapeError, lax::conv_general_dilated(x(), iota_f32({3, 3, 3, 3}), {1, 1}, "VALID"),
          "conv_general_dilated", "feature_group_count", "f32[2,4,6,6]", "f32[3,3,3,3]"),
      BAD(cgd, ShapeError,
          lax::conv_general_dilated(x(), iota_f32({3, 2, 3, 3}), {1, 1}, "VALID", groups(2, 1)),
          "conv_general_dilated", "feature_group_count=2 must divide", "f32[2,4,6,6]", "f32[3,2,3,3]"),
      BAD(cgd, ShapeError,
          lax::conv_general_dilated(iota_f32({3, 4, 6, 6}), iota_f32({4, 4, 3, 3}), {1, 1}, "VALID",
                                    groups(1, 2)),
          "conv_general_dilated", "batch_group_count=2 must divide the lhs batch", "f32[3,4,6,6]",
          "f32[4,4,3,3]"),
      BAD(cgd, ShapeError,
          lax::conv_general_dilated(x(), iota_f32({4, 2, 3, 3}), {1, 1}, "VALID", groups(2, 2)),
          "conv_general_dilated", "feature_group_count", "batch_group_count", "f32[2,4,6,6]", "f32[4,2,3,3]"),
      // Strides and dilations: ValueError naming the parameter and its value.
      BAD(cgd, ValueError, lax::conv_general_dilated(x(), k(), {1}, "VALID"), "conv_general_dilated",
          "window_strides=(1,)", "2 spatial dimensions"),
      BAD(cgd, ValueError, lax::conv_general_dilated(x(), k(), {1, 0}, "VALID"), "conv_general_dilated",
          "window_strides=(1, 0)", "positive"),
      BAD(cgd, ValueError,
          lax::conv_general_dilated(x(), k(), {1, 1}, Pairs{{0, 0}, {0, 0}}, dilation({1, 1, 1}, {})),
          "conv_general_dilated", "lhs_dilation=(1, 1, 1)"),
      BAD(cgd, ValueError, lax::conv_general_dilated(x(), k(), {1, 1}, "VALID", dilation({}, {1, -1})),
          "conv_general_dilated", "rhs_dilation=(1, -1)", "positive"),
      // A dilation past 2^31 would overflow the size arithmetic: refused, naming it.
      BAD(cgd, ValueError,
          lax::conv_general_dilated(x(), k(), {1, 1}, "VALID", dilation({int64_t(1) << 62, 1}, {})),
          "conv_general_dilated", "lhs_dilation=(4611686018427387904, 1)", "below 2^31"),
      // Padding: a wrong number of pairs or an unknown string is a ValueError naming it; padding
      // that leaves less than the window, or crops below zero, a ShapeError naming both shapes.
      BAD(cgd, ValueError, lax::conv_general_dilated(x(), k(), {1, 1}, Pairs{{1, 1}}), "conv_general_dilated",
          "padding ((1, 1),)", "2 spatial dimensions"),
      BAD(cgd, ValueError, lax::conv_general_dilated(x(), k(), {1, 1}, "FULL"), "conv_general_dilated",
          "padding", "'FULL'"),
      BAD(cgd, ShapeError, lax::conv_general_dilated(x(), k(), {1, 1}, Pairs{{-2, -2}, {0, 0}}),
          "conv_general_dilated", "smaller than the dilated window", "padding ((-2, -2), (0, 0))",
          "f32[2,4,6,6]", "f32[3,4,3,3]"),
      BAD(cgd, ShapeError, lax::conv_general_dilated(x(), k(), {1, 1}, Pairs{{-4, -3}, {0, 0}}),
          "conv_general_dilated", "below zero", "padding ((-4, -3), (0, 0))", "f32[2,4,6,6]", "f32[3,4,3,3]"),
      BAD(cgd, ValueError, lax::conv_general_dilated(x(), k(), {1, 1}, "SAME", dilation({2, 2}, {})),
          "conv_general_dilated", "string padding 'SAME'", "lhs_dilation=(2, 2)"),
      // preferred_element_type JAX refuses: TypeError naming both dtypes.
      BAD(cgd, TypeError, lax::conv_general_dilated(x(), k(), {1, 1}, "VALID", preferred(mj::DType::i32)),
          "conv_general_dilated", "preferred_element_type i32", "f32"),
      BAD(cgd, TypeError, lax::conv_general_dilated(x(), k(), {1, 1}, "VALID", preferred(mj::DType::bf16)),
          "conv_general_dilated", "preferred_element_type bf16", "f32"),
      BAD(cgd, TypeError, lax::conv_general_dilated(x(), mj::astype(k(), mj::DType::f64), {1, 1}, "VALID"),
          "conv_general_dilated", "f32", "f64"),
      BAD(cgd, ValueError, lax::conv_general_dilated(Array(), k(), {1, 1}, "VALID"), "conv_general_dilated",
          "empty"),
      // The wrappers name themselves.
      BAD("minijax::lax::conv", ValueError, lax::conv(x(), k(), {1, 1}, "FULL"), "conv", "'FULL'"),
      BAD("minijax::lax::conv", ShapeError, lax::conv(x(), iota_f32({3, 3, 3, 3}), {1, 1}, "SAME"), "conv",
          "feature_group_count", "f32[2,4,6,6]", "f32[3,3,3,3]"),
      BAD("minijax::lax::conv_with_general_padding", ValueError,
          lax::conv_with_general_padding(x(), k(), {1, 1}, Pairs{{0, 0}, {0, 0}}, {0, 1}, {}),
          "conv_with_general_padding", "lhs_dilation=(0, 1)"),
      BAD("minijax::lax::conv_transpose", ValueError,
          lax::conv_transpose(x(), k(), {2}, "SAME", nchw_transpose()), "conv_transpose", "strides=(2,)",
          "2 spatial dimensions"),
      BAD("minijax::lax::conv_transpose", ValueError,
          lax::conv_transpose(iota_f32({2, 4}), iota_f32({4, 3}), {}, "SAME"), "conv_transpose", "rank",
          "[2,4]", "[4,3]"),
      BAD_ANY_SITE("minijax::lax::conv_dimension_numbers", ValueError,
                   lax::conv_dimension_numbers({2, 4, 6, 6}, {3, 4, 3, 3}, {"NCHH", "OIHW", "NCHW"}),
                   "conv_dimension_numbers", "dimension_numbers", "'NCHH'", "[2,4,6,6]", "[3,4,3,3]"),
      BAD_ANY_SITE("minijax::lax::padtype_to_pads", ValueError, lax::padtype_to_pads({5}, {3}, {1}, "FULL"),
                   "padtype_to_pads", "'FULL'"),
  };
}

}  // namespace bad_input

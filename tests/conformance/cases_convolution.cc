// minijax conformance cases of conv_general_dilated: strides, every padding form, both dilations,
// feature and batch groups, 1-D/2-D/3-D, NHWC; f64 (every derivative check) and f32.
// Cases with one operand fixed reach the batching rule's one-operand paths (lhs only, rhs only).
#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

struct Conv {
  std::vector<int64_t> strides;
  lax::Padding padding;
  lax::ConvGeneralDilatedOptions options = {};
};

Case conv_case(const std::string& label, const Conv& c, const mj::Shape& x, const mj::Shape& w, uint32_t seed,
               mj::DType dt = mj::f64, std::vector<bool> fixed = {}) {
  Case k{"conv_general_dilated",
         label,
         one([c](const V& a) {
           return lax::conv_general_dilated(a[0], a[1], c.strides, c.padding, c.options);
         }),
         {rnd(x, seed, -1, 1, dt), rnd(w, seed + 1, -1, 1, dt)},
         dt == mj::f64};
  k.fixed = std::move(fixed);
  return k;
}

lax::ConvGeneralDilatedOptions dil(std::vector<int64_t> lhs, std::vector<int64_t> rhs) {
  lax::ConvGeneralDilatedOptions o;
  o.lhs_dilation = std::move(lhs);
  o.rhs_dilation = std::move(rhs);
  return o;
}
lax::ConvGeneralDilatedOptions groups(int64_t feature, int64_t batch) {
  lax::ConvGeneralDilatedOptions o;
  o.feature_group_count = feature;
  o.batch_group_count = batch;
  return o;
}
lax::ConvGeneralDilatedOptions layout(const char* l, const char* r, const char* o) {
  lax::ConvGeneralDilatedOptions opt;
  opt.dimension_numbers = lax::ConvDimensionSpec(l, r, o);
  return opt;
}

Add cases({
    conv_case("strides_valid", {{2, 1}, "VALID"}, {2, 3, 6, 5}, {4, 3, 3, 2}, 4101),
    conv_case("same", {{2, 2}, "SAME"}, {2, 2, 5, 5}, {3, 2, 3, 3}, 4103),
    conv_case("same_lower", {{2, 1}, "SAME_LOWER"}, {1, 2, 6, 4}, {2, 2, 3, 2}, 4105),
    conv_case("explicit_negative_padding", {{1, 1}, Pairs{{1, 2}, {-1, 0}}}, {2, 2, 5, 6}, {3, 2, 3, 2},
              4107),
    conv_case("lhs_rhs_dilation", {{1, 2}, Pairs{{1, 1}, {0, 1}}, dil({2, 1}, {1, 2})}, {1, 2, 4, 7},
              {2, 2, 3, 2}, 4109),
    conv_case("feature_groups", {{1, 1}, Pairs{{1, 0}, {0, 1}}, groups(2, 1)}, {2, 4, 4, 4}, {4, 2, 2, 3},
              4111),
    conv_case("depthwise", {{2, 1}, "SAME", groups(3, 1)}, {2, 3, 5, 4}, {6, 1, 3, 3}, 4113),
    conv_case("batch_groups", {{1, 1}, "VALID", groups(1, 2)}, {4, 3, 4, 5}, {4, 3, 2, 2}, 4115),
    conv_case("1d", {{2}, "SAME", dil({1}, {2})}, {2, 3, 7}, {2, 3, 3}, 4117),
    conv_case("3d", {{1, 2, 1}, Pairs{{1, 0}, {0, 1}, {1, 1}}}, {1, 2, 3, 4, 3}, {2, 2, 2, 2, 2}, 4119),
    conv_case("nhwc", {{1, 2}, "SAME", layout("NHWC", "HWIO", "NHWC")}, {2, 5, 4, 3}, {3, 2, 3, 2}, 4121),
    conv_case("permuted_layout", {{2, 1}, Pairs{{0, 1}, {1, 0}}, layout("HWCN", "IWHO", "CNWH")},
              {5, 4, 2, 2}, {2, 2, 3, 3}, 4123),
    // Dims dividing 2, 4 and 8: the sharded check shards batch, features and spatial dims.
    conv_case("even_dims", {{1, 1}, "SAME"}, {4, 4, 4, 4}, {8, 4, 3, 3}, 4125),
    // One operand batched by vmap: the batching rule's lhs-only and rhs-only paths, with groups.
    conv_case("lhs_only_batch_groups", {{1, 1}, "VALID", groups(1, 2)}, {4, 2, 3, 3}, {4, 2, 2, 2}, 4127,
              mj::f64, {false, true}),
    conv_case("rhs_only_feature_groups", {{1, 1}, "VALID", groups(2, 1)}, {2, 4, 3, 3}, {4, 2, 2, 2}, 4129,
              mj::f64, {true, false}),
    conv_case("rhs_only_batch_groups", {{1, 1}, "VALID", groups(1, 2)}, {4, 2, 3, 3}, {4, 2, 2, 2}, 4131,
              mj::f64, {true, false}),
    conv_case("lhs_only", {{1, 1}, "SAME"}, {2, 2, 4, 3}, {3, 2, 2, 2}, 4133, mj::f64, {false, true}),
    // f32 (not differentiable here: the f64 cases check the derivative rules).
    conv_case("f32_nhwc", {{1, 1}, "SAME", layout("NHWC", "HWIO", "NHWC")}, {2, 6, 6, 4}, {3, 3, 4, 8}, 4135,
              mj::f32),
    conv_case("f32_strided_dilated", {{2, 2}, Pairs{{1, 1}, {2, 0}}, dil({1, 1}, {2, 2})}, {2, 3, 9, 8},
              {4, 3, 3, 2}, 4137, mj::f32),
    conv_case("f32_feature_groups", {{1, 1}, "VALID", groups(2, 1)}, {2, 4, 5, 5}, {6, 2, 3, 3}, 4139,
              mj::f32),
    conv_case("f32_batch_groups", {{1, 1}, "VALID", groups(1, 4)}, {8, 3, 4, 4}, {4, 3, 3, 3}, 4141, mj::f32),
    conv_case("f32_1d", {{1}, "VALID"}, {2, 3, 9}, {4, 3, 4}, 4143, mj::f32),
    conv_case("f32_3d", {{1, 1, 1}, "SAME"}, {1, 2, 4, 4, 4}, {2, 2, 3, 3, 3}, 4145, mj::f32),
});

}  // namespace
}  // namespace conformance

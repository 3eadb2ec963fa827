// mj::check_grads (JAX's jax.test_util.check_grads: central differences at JAX's f64 tolerances)
// of conv_general_dilated to order 2, forward and reverse, in f64, over strides, the padding
// forms, both dilations, feature and batch groups, 1-D/3-D and permuted layouts; and of the
// wrappers conv and conv_transpose.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include <minijax/minijax.h>

using minijax::Array;
namespace lax = mj::lax;

namespace {

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

Array rnd(const mj::Shape& s, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(size_t(mj::shape_size(s)));
  for (double& x : v) x = u(gen);
  return mj::array(v, s, mj::f64);
}

struct Config {
  std::string name;
  mj::Shape x, w;
  std::vector<int64_t> strides;
  lax::Padding padding;
  lax::ConvGeneralDilatedOptions options = {};
};

lax::ConvGeneralDilatedOptions opts(std::vector<int64_t> ld, std::vector<int64_t> rd, int64_t fgc = 1,
                                    int64_t bgc = 1) {
  lax::ConvGeneralDilatedOptions o;
  o.lhs_dilation = std::move(ld);
  o.rhs_dilation = std::move(rd);
  o.feature_group_count = fgc;
  o.batch_group_count = bgc;
  return o;
}

lax::ConvGeneralDilatedOptions layout(const char* l, const char* r, const char* o) {
  lax::ConvGeneralDilatedOptions opt;
  opt.dimension_numbers = lax::ConvDimensionSpec(l, r, o);
  return opt;
}

std::vector<Config> configs() {
  return {
      {"strides_valid", {2, 2, 5, 4}, {3, 2, 3, 2}, {2, 1}, "VALID"},
      {"same", {1, 2, 5, 5}, {2, 2, 3, 3}, {2, 2}, "SAME"},
      {"negative_padding", {1, 2, 5, 4}, {2, 2, 2, 2}, {1, 1}, Pairs{{-1, 2}, {1, -1}}},
      {"dilations", {1, 2, 3, 4}, {2, 2, 2, 2}, {1, 2}, Pairs{{1, 1}, {0, 1}}, opts({2, 1}, {1, 2})},
      {"feature_groups", {2, 4, 4, 3}, {4, 2, 2, 2}, {1, 1}, "SAME", opts({}, {}, 2)},
      {"depthwise", {1, 3, 4, 4}, {3, 1, 3, 3}, {1, 1}, "SAME", opts({}, {}, 3)},
      {"batch_groups", {4, 2, 4, 3}, {4, 2, 2, 2}, {1, 1}, "VALID", opts({}, {}, 1, 2)},
      {"1d", {2, 2, 7}, {3, 2, 3}, {2}, Pairs{{1, 2}}, opts({}, {2})},
      {"3d", {1, 2, 3, 3, 4}, {2, 2, 2, 2, 2}, {1, 1, 2}, "SAME"},
      {"nhwc", {2, 4, 3, 2}, {2, 2, 2, 3}, {1, 1}, "SAME", layout("NHWC", "HWIO", "NHWC")},
  };
}

class ConvCheckGrads : public ::testing::TestWithParam<size_t> {};

TEST_P(ConvCheckGrads, Order2ForwardAndReverse) {
  const Config c = configs()[GetParam()];
  auto f = [c](const Array& x, const Array& w) {
    return lax::conv_general_dilated(x, w, c.strides, c.padding, c.options);
  };
  EXPECT_NO_THROW(mj::check_grads(f, std::tuple{rnd(c.x, 1), rnd(c.w, 2)}, 2, {"fwd", "rev"})) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Configs, ConvCheckGrads, ::testing::Range(size_t(0), configs().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) { return configs()[i.param].name; });

// The wrappers differentiate through the same rules; conv_transpose with a flipped kernel too.
TEST(ConvCheckGrads, WrappersOrder2) {
  auto c = [](const Array& x, const Array& w) { return mj::tanh(lax::conv(x, w, {1, 2}, "SAME")); };
  EXPECT_NO_THROW(mj::check_grads(c, std::tuple{rnd({1, 2, 4, 5}, 3), rnd({3, 2, 2, 3}, 4)}, 2));
  auto t = [](const Array& x, const Array& w) {
    lax::ConvTransposeOptions o;
    o.transpose_kernel = true;
    return lax::conv_transpose(x, w, {2, 2}, "SAME", o);
  };
  EXPECT_NO_THROW(mj::check_grads(t, std::tuple{rnd({1, 3, 2, 2}, 5), rnd({3, 3, 3, 2}, 6)}, 2));
}

}  // namespace

// Tests of the oneDNN forms of compiled convolutions and pooling (jit/codegen/lower/convolution.cc):
// a CNN's training step compiled, its forms and reorders in as_text(), its results against eager.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "core/convolution.h"
#include "core/nn.h"
#include "core/windowed_reductions.h"
#include "lowering_helpers.h"

namespace {

using mj::Array;

Array uniform(const mj::Shape& s, uint32_t seed, double lo = -1, double hi = 1) {
  return lowtest::uniform(s, seed, mj::f32, lo, hi);
}

// |a - b| <= atol + rtol * |b| elementwise (compared in f64).
bool close(const Array& a, const Array& b, double rtol, double atol) {
  if (a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.size(); ++i) {
    const double x = lowtest::at(a, i), y = lowtest::at(b, i);
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
  }
  return true;
}

// The CNN of samples/fashion_mnist_cnn, at a small batch: conv 5x5x8 VALID -> relu -> max-pool 2 ->
// conv 5x5x16 VALID -> relu -> max-pool 2 -> dense -> mean square.
Array cnn_loss(const std::vector<Array>& p, const Array& x) {
  Array h = mj::relu(mj::nn::conv(x, p[0], {1, 1}, "VALID"));
  h = mj::nn::max_pool(h, {2, 2}, {2, 2});
  h = mj::relu(mj::nn::conv(h, p[1], {1, 1}, "VALID"));
  h = mj::nn::max_pool(h, {2, 2}, {2, 2});
  h = mj::reshape(h, {h.shape()[0], -1});
  Array y = mj::matmul(h, p[2]);
  return mj::mean(y * y);
}

std::vector<Array> cnn_params() {
  return {uniform({5, 5, 1, 8}, 1, -0.2, 0.2), uniform({5, 5, 8, 16}, 2, -0.07, 0.07),
          uniform({256, 10}, 3, -0.06, 0.06)};
}

std::vector<Array> cnn_grads(const std::vector<Array>& p, const Array& x) {
  return mj::grad([&](const std::vector<Array>& q) { return cnn_loss(q, x); })(p);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ConvDnnl, CnnStepUsesEveryForm) {
  const std::vector<Array> p = cnn_params();
  const Array x = uniform({4, 28, 28, 1}, 4, 0, 1);
  auto step = mj::jit([](const std::vector<Array>& q, const Array& xs) { return cnn_grads(q, xs); });
  const std::string text = step.lower(p, x).compile().as_text();
  EXPECT_EQ(count(text, "[oneDNN forward]"), 2) << text;
  EXPECT_EQ(count(text, "[oneDNN backward-data]"), 1) << text;  // the first conv's input needs none
  EXPECT_EQ(count(text, "[oneDNN backward-weights]"), 2) << text;
  EXPECT_EQ(count(text, "[oneDNN pooling forward]"), 2) << text;
  EXPECT_EQ(count(text, "[oneDNN pooling backward]"), 2) << text;
  EXPECT_EQ(count(text, "[loop nest]"), 0) << text;
  // Each backward max-pool reads the workspace of its forward.
  EXPECT_EQ(count(text, "(the workspace of site"), 2) << text;
}

// No reorder reads a value a oneDNN primitive wrote: each listed reorder copies weights from the
// program's own layout (a parameter, or the kernel JAX's transpose reverses) into oneDNN's, or a
// kernel gradient out of oneDNN's into the program's layout for the optimizer.
TEST(ConvDnnl, CnnStepReordersOnlyWeights) {
  const std::vector<Array> p = cnn_params();
  const Array x = uniform({4, 28, 28, 1}, 4, 0, 1);
  auto step = mj::jit([](const std::vector<Array>& q, const Array& xs) { return cnn_grads(q, xs); });
  const std::string text = step.lower(p, x).compile().as_text();
  const std::regex reorder("reorder (%[0-9]+):([a-z0-9]+\\[[0-9,]*\\]) ([^,]+) -> ([^,]+), ([0-9]+) bytes( \\(after\\))?");
  int n = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), reorder); it != std::sregex_iterator(); ++it) {
    ++n;
    const std::string shape = (*it)[2];
    EXPECT_TRUE(shape == "f32[5,5,1,8]" || shape == "f32[5,5,8,16]") << it->str();  // weights only
    const bool after = (*it)[6].matched;
    // A reorder after the primitive is the backward-weights result leaving oneDNN's format.
    if (after) EXPECT_NE(it->prefix().str().rfind("[oneDNN backward-weights]"), std::string::npos);
  }
  EXPECT_GE(n, 3) << text;  // conv 2's weights (forward and backward-data), both kernel gradients
}

TEST(ConvDnnl, CnnStepMatchesEager) {
  const std::vector<Array> p = cnn_params();
  const Array x = uniform({4, 28, 28, 1}, 4, 0, 1);
  const std::vector<Array> want = cnn_grads(p, x);
  auto step = mj::jit([](const std::vector<Array>& q, const Array& xs) { return cnn_grads(q, xs); });
  const std::vector<Array> got = step(p, x);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(close(got[i], want[i], 1e-4, 1e-6)) << i << "\n" << got[i] << "\n" << want[i];
}

TEST(ConvDnnl, StridedConvolutionGradientIsBackwardData) {
  const Array x = uniform({2, 9, 9, 3}, 5), w = uniform({3, 3, 3, 4}, 6);
  auto f = [](const Array& a, const Array& k) {
    return mj::sum(mj::sin(mj::lax::conv_general_dilated(a, k, {2, 2}, {{1, 1}, {1, 1}},
                                                         {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}})));
  };
  auto grads = [&](const Array& a, const Array& k) {
    auto [ga, gk] = mj::grad(f, mj::argnums<0, 1>)(a, k);
    return std::vector<Array>{ga, gk};
  };
  auto g = mj::jit(grads);
  const std::string text = g.lower(x, w).compile().as_text();
  EXPECT_EQ(count(text, "[oneDNN backward-data]"), 1) << text;
  EXPECT_EQ(count(text, "[oneDNN backward-weights]"), 1) << text;
  const auto got = g(x, w);
  const auto want = grads(x, w);
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(close(got[i], want[i], 1e-4, 1e-6)) << i;
}

// oneDNN's max pooling skips NaNs and starts at the lowest finite value; reduce_window_max
// propagates NaN and keeps -inf, and its gradient goes to the first NaN (eager, XLA). The compiled
// pooling site checks its operand and runs the loop nest for such inputs: equal to eager, bits
// and gradients, on inputs with and without them.
TEST(ConvDnnl, MaxPoolWithNanOrMinusInfEqualsEager) {
  const float nan = std::nanf(""), ninf = -INFINITY;
  auto pool_sum = [](const Array& x) { return mj::sum(mj::nn::max_pool(x, {2, 2}, {2, 2})); };
  auto f = mj::jit([&](const Array& x) {
    auto [v, g] = mj::value_and_grad(pool_sum)(x);
    return std::vector<Array>{mj::nn::max_pool(x, {2, 2}, {2, 2}), g};
  });
  const std::string text = f.lower(uniform({1, 4, 4, 2}, 9)).compile().as_text();
  EXPECT_EQ(count(text, "[oneDNN pooling forward]"), 1) << text;
  EXPECT_EQ(count(text, "[oneDNN pooling backward]"), 1) << text;
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<float> v(32);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 7) - 3.f;
    if (variant == 0) v[2] = nan;                            // a NaN beside larger values
    if (variant == 1) v[0] = v[2] = v[8] = v[10] = ninf;     // a window of -inf (feature 0, window 0)
    const Array x = mj::array(v, {1, 4, 4, 2});
    const auto got = f(x);
    const Array want_y = mj::nn::max_pool(x, {2, 2}, {2, 2});
    const Array want_g = mj::grad(pool_sum)(x);
    for (int64_t i = 0; i < want_y.size(); ++i) {
      const double a = lowtest::at(got[0], i), b = lowtest::at(want_y, i);
      EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << variant << " y[" << i << "] " << a << " vs " << b;
    }
    EXPECT_TRUE(lowtest::bit_equal(got[1], want_g)) << variant << "\n" << got[1] << "\n" << want_g;
  }
  // The eager oracle's own semantics (XLA's max): the NaN window is NaN, the -inf window -inf.
  std::vector<float> v(32, 1.f);
  v[2] = nan;
  EXPECT_TRUE(std::isnan(lowtest::at(f(mj::array(v, {1, 4, 4, 2}))[0], 0)));
}

// Compiled max pooling `got` equals eager's `want` element for element (NaN where it is NaN);
// returns how many of want's elements are not finite.
int64_t expect_pool_equal(const Array& got, const Array& want, int variant) {
  int64_t nonfinite = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double a = lowtest::at(got, i), b = lowtest::at(want, i);
    nonfinite += !std::isfinite(b);
    EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << variant << " y[" << i << "] " << a << " vs " << b;
  }
  return nonfinite;
}

// The pool's operand written by a loop fusion (x + y): the fusion notes whether it stored a NaN
// or -inf as it writes them, no separate scan. Large enough that the fusion runs in chunks on
// several threads; the NaN sits in the last chunk. Values and gradients equal eager's.
TEST(ConvDnnl, MaxPoolOfAFusionIsWatchedByIt) {
  const mj::Shape shape{8, 32, 32, 16};
  auto pool_sum = [](const Array& x, const Array& y) { return mj::sum(mj::nn::max_pool(x + y, {2, 2}, {2, 2})); };
  auto f = mj::jit([&](const Array& x, const Array& y) {
    return std::vector<Array>{mj::nn::max_pool(x + y, {2, 2}, {2, 2}), mj::grad(pool_sum)(x, y)};
  });
  const Array y = uniform(shape, 12);
  const std::string text = f.lower(uniform(shape, 11), y).compile().as_text();
  EXPECT_EQ(count(text, "notes a NaN or -inf it stores in output"), 1) << text;
  EXPECT_EQ(count(text, "[oneDNN pooling forward]"), 1) << text;
  EXPECT_EQ(count(text, "[oneDNN pooling backward]"), 1) << text;
  for (int variant = 0; variant < 3; ++variant) {
    const Array base = uniform(shape, 13);
    std::vector<float> v(base.data<float>(), base.data<float>() + base.size());
    if (variant == 1) v.back() = std::nanf("");
    if (variant == 2)  // the window of (0, 0, 0, feature 3) all -inf
      for (int64_t h : {0, 1})
        for (int64_t w : {0, 1}) v[size_t((h * 32 + w) * 16 + 3)] = -INFINITY;
    const Array x = mj::array(v, shape);
    const auto got = f(x, y);
    const Array want_y = mj::nn::max_pool(x + y, {2, 2}, {2, 2});
    const Array want_g = mj::grad(pool_sum)(x, y);
    EXPECT_EQ(expect_pool_equal(got[0], want_y, variant), variant == 0 ? 0 : 1) << variant;
    EXPECT_TRUE(lowtest::bit_equal(got[1], want_g)) << variant;
  }
}

// The same through a fusion that is not flat (a broadcast bias) and whose innermost dim (21) ends
// in the scalar tail of the vector loop, where the NaN and the -inf window sit; and a gradient-only
// program (the forward pooling is dead: select_and_scatter_add alone reads the flag).
TEST(ConvDnnl, MaxPoolWatchSeesTheScalarTailAndServesAGradientAlone) {
  const mj::Shape shape{2, 6, 6, 21};
  const Array bias = uniform({21}, 17);
  auto pooled = [&](const Array& x) { return mj::nn::max_pool(x + bias, {2, 2}, {2, 2}); };
  auto pool_sum = [&](const Array& x) { return mj::sum(pooled(x)); };
  auto fwd = mj::jit(pooled);
  auto grad_only = mj::jit([&](const Array& x) { return mj::grad(pool_sum)(x); });
  const std::string text = fwd.lower(uniform(shape, 18)).compile().as_text() +
                           grad_only.lower(uniform(shape, 18)).compile().as_text();
  EXPECT_EQ(count(text, "notes a NaN or -inf it stores in output"), 2) << text;
  EXPECT_EQ(count(text, "[oneDNN pooling forward]"), 1) << text;
  EXPECT_EQ(count(text, "[oneDNN pooling backward]"), 1) << text;
  for (int variant = 0; variant < 3; ++variant) {
    const Array base = uniform(shape, 19);
    std::vector<float> v(base.data<float>(), base.data<float>() + base.size());
    if (variant == 1) v[size_t(((1 * 6 + 3) * 6 + 4) * 21 + 20)] = std::nanf("");
    if (variant == 2)  // the window of (batch 0, row 2, column 1, feature 19) all -inf
      for (int64_t h : {4, 5})
        for (int64_t w : {2, 3}) v[size_t((h * 6 + w) * 21 + 19)] = -INFINITY;
    const Array x = mj::array(v, shape);
    const Array got = fwd(x), want = pooled(x);
    EXPECT_EQ(expect_pool_equal(got, want, variant), variant == 0 ? 0 : 1) << variant;
    EXPECT_TRUE(lowtest::bit_equal(grad_only(x), mj::grad(pool_sum)(x))) << variant;
  }
}

// JAX's transpose of reduce_window_sum pads the cotangent and sums stride-1 windows; simplify
// folds the pad into the sum (base dilation), which is oneDNN's average-pooling backward times
// the window's count.
TEST(ConvDnnl, AvgPoolGradientIsPoolingBackward) {
  for (bool include_pad : {true, false})
    for (const char* padding : {"VALID", "SAME"}) {
      auto loss = [&](const Array& x) {
        return mj::sum(mj::sin(mj::nn::avg_pool(x, {3, 3}, {2, 2}, padding, include_pad)));
      };
      auto g = mj::jit([&](const Array& x) { return mj::grad(loss)(x); });
      const Array x = uniform({2, 11, 10, 4}, 14);
      const std::string text = g.lower(x).compile().as_text();
      EXPECT_EQ(count(text, "pool_backward_sum"), 1) << padding << include_pad << "\n" << text;
      EXPECT_EQ(count(text, "[loop nest]"), 0) << padding << include_pad << "\n" << text;
      EXPECT_TRUE(close(g(x), mj::grad(loss)(x), 1e-5, 1e-6)) << padding << include_pad;
    }
}

// The kernel of JAX's transpose with respect to the lhs is rev(w): the backward-data site reads w
// itself when w's bytes are intact there (a parameter), else the reversed copy, flipped back.
// A donated kernel whose buffer takes an output: values equal eager's either way.
TEST(ConvDnnl, BackwardDataReadsTheKernelItself) {
  const std::vector<Array> p = cnn_params();
  const Array x = uniform({4, 28, 28, 1}, 4, 0, 1);
  auto step = mj::jit([](const std::vector<Array>& q, const Array& xs) { return cnn_grads(q, xs); });
  const std::string text = step.lower(p, x).compile().as_text();
  EXPECT_EQ(count(text, "unreversed"), 1) << text;
  EXPECT_EQ(count(text, "flips the kernel back"), 0) << text;

  auto f = [](const Array& a, const Array& w) {
    auto loss = [&](const Array& b) { return mj::sum(mj::sin(mj::nn::conv(b, w, {1, 1}, "SAME"))); };
    return std::vector<Array>{mj::grad(loss)(a), w * 2.0f};
  };
  const Array a = uniform({2, 7, 7, 3}, 15), w = uniform({3, 3, 3, 5}, 16);
  const std::vector<Array> want = f(a, w);
  auto g = mj::jit(f, {.donate_argnums = {1}});
  const std::string gtext = g.lower(a, w).compile().as_text();
  EXPECT_EQ(count(gtext, "unreversed") + count(gtext, "flips the kernel back"), 1) << gtext;
  const std::vector<Array> got = g(a, mj::array(std::vector<float>(w.data<float>(), w.data<float>() + w.size()), w.shape()));
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(close(got[i], want[i], 1e-4, 1e-6)) << i;
}

TEST(ConvDnnl, DilatedMaxWindowOverPaddingIsALoopNest) {
  auto f = mj::jit([](const Array& x) {
    return mj::lax::reduce_window_max(x, {1, 2, 1}, {1, 1, 1}, {{0, 0}, {1, 1}, {0, 0}}, {}, {1, 2, 1});
  });
  const Array x = uniform({1, 1, 1}, 10);
  const std::string text = f.lower(x).compile().as_text();
  EXPECT_NE(text.find("[loop nest]"), std::string::npos) << text;
  EXPECT_TRUE(std::isinf(lowtest::at(f(x), 0)) && lowtest::at(f(x), 0) < 0);  // taps on padding only
}

TEST(ConvDnnl, F64IsALoopNestWithItsReason) {
  const Array x = mj::astype(uniform({1, 6, 6, 2}, 7), mj::f64), w = mj::astype(uniform({3, 3, 2, 2}, 8), mj::f64);
  auto f = mj::jit([](const Array& a, const Array& k) { return mj::nn::conv(a, k, {1, 1}, "VALID"); });
  const std::string text = f.lower(x, w).compile().as_text();
  EXPECT_NE(text.find("[loop nest]"), std::string::npos) << text;
  EXPECT_NE(text.find("f64"), std::string::npos) << text;
  EXPECT_TRUE(close(f(x, w), mj::nn::conv(x, w, {1, 1}, "VALID"), 1e-12, 1e-12));
}

}  // namespace

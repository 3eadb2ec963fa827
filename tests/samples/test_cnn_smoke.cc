// minijax tests: the Fashion-MNIST CNN sample (samples/fashion_mnist_cnn_lib) on a slice of the data:
// batch layout, init, the forward pass against a hand loop, compiled steps against eager ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_cnn_lib.h"
#include "samples/step_losses.h"

namespace {

namespace ms = minijax::samples;
namespace cnn = fmnist::cnn;

TEST(FashionMnistCnn, ImageBatchIsNhwcPixelsOver255) {
  auto d = fmnist::load_split(ms::fashion_mnist_dir(), "train", 5);
  auto [x, y] = cnn::make_image_batch(d, {3, 0}, 0, 2);  // images 3 and 0, in that order
  ASSERT_EQ(x.shape(), (mj::Shape{2, 28, 28, 1}));
  ASSERT_EQ(x.dtype(), mj::f32);
  const float* xp = x.data<float>();
  for (int64_t r : {0, 14, 27})
    for (int64_t c : {0, 9, 27}) {
      EXPECT_FLOAT_EQ(xp[(0 * 28 + r) * 28 + c], float(d.images[3 * 784 + r * 28 + c]) / 255.0f);
      EXPECT_FLOAT_EQ(xp[(1 * 28 + r) * 28 + c], float(d.images[0 * 784 + r * 28 + c]) / 255.0f);
    }
  EXPECT_EQ(y.data<int32_t>()[0], d.labels[3]);
  EXPECT_EQ(y.data<int32_t>()[1], d.labels[0]);
}

// Shapes, and PyTorch's U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in channels x 5 x 5 for
// the convolutions (25, 800) and in features for the dense layers (1024, 128): every value within
// the bound, the extremes of the larger tensors near it.
TEST(FashionMnistCnn, InitIsPyTorchsUniformWithConvolutionFanIn) {
  auto p = cnn::init_cnn(0);
  struct Leaf {
    const mj::Array& a;
    mj::Shape shape;
    double fan_in;
  };
  const Leaf leaves[] = {{p.conv1_w, {5, 5, 1, 32}, 25},   {p.conv1_b, {32}, 25},
                         {p.conv2_w, {5, 5, 32, 64}, 800}, {p.conv2_b, {64}, 800},
                         {p.fc1_w, {1024, 128}, 1024},     {p.fc1_b, {128}, 1024},
                         {p.fc2_w, {128, 10}, 128},        {p.fc2_b, {10}, 128}};
  for (const Leaf& l : leaves) {
    ASSERT_EQ(l.a.shape(), l.shape);
    const float bound = float(1.0 / std::sqrt(l.fan_in));
    const float* v = l.a.data<float>();
    float m = 0;
    for (int64_t i = 0; i < l.a.size(); ++i) m = std::max(m, std::fabs(v[i]));
    EXPECT_LE(m, bound) << "fan_in " << l.fan_in;
    if (l.a.size() >= 500) EXPECT_GT(m, 0.95f * bound) << "fan_in " << l.fan_in;
  }
  // Another seed, other values.
  EXPECT_NE(cnn::init_cnn(1).conv1_w.data<float>()[0], p.conv1_w.data<float>()[0]);
}

// The model written here with plain loops in double precision from its definition (a
// cross-correlation with HWIO kernels, VALID: out[i][j][o] = b[o] + sum_{di,dj,c}
// in[i+di][j+dj][c] w[di][dj][c][o]; 2x2 max pooling with stride 2; the pooled [4, 4, 64] map
// flattened in (h, w, c) order), on 2 images: the logits agree with forward's.
TEST(FashionMnistCnn, ForwardMatchesAHandWrittenCnn) {
  auto d = fmnist::load_split(ms::fashion_mnist_dir(), "train", 2);
  auto p = cnn::init_cnn(3);
  auto [x, y] = cnn::make_image_batch(d, {}, 0, 2);
  mj::Array logits = cnn::forward(p, x);
  ASSERT_EQ(logits.shape(), (mj::Shape{2, 10}));
  using Map = std::vector<double>;  // [h, w, c], row-major
  auto conv_relu = [](const Map& in, int64_t side, int64_t cin, const mj::Array& w, const mj::Array& b,
                      int64_t cout) {
    const int64_t o = side - 4;
    const float *wp = w.data<float>(), *bp = b.data<float>();
    Map out(size_t(o * o * cout));
    for (int64_t i = 0; i < o; ++i)
      for (int64_t j = 0; j < o; ++j)
        for (int64_t f = 0; f < cout; ++f) {
          double s = bp[f];
          for (int64_t di = 0; di < 5; ++di)
            for (int64_t dj = 0; dj < 5; ++dj)
              for (int64_t c = 0; c < cin; ++c)
                s += in[size_t(((i + di) * side + j + dj) * cin + c)] *
                     wp[((di * 5 + dj) * cin + c) * cout + f];
          out[size_t((i * o + j) * cout + f)] = std::max(s, 0.0);
        }
    return out;
  };
  auto pool = [](const Map& in, int64_t side, int64_t ch) {
    const int64_t o = side / 2;
    Map out(size_t(o * o * ch));
    for (int64_t i = 0; i < o; ++i)
      for (int64_t j = 0; j < o; ++j)
        for (int64_t c = 0; c < ch; ++c) {
          double m = -INFINITY;
          for (int64_t di = 0; di < 2; ++di)
            for (int64_t dj = 0; dj < 2; ++dj)
              m = std::max(m, in[size_t(((2 * i + di) * side + 2 * j + dj) * ch + c)]);
          out[size_t((i * o + j) * ch + c)] = m;
        }
    return out;
  };
  auto dense = [](const Map& in, const mj::Array& w, const mj::Array& b, bool relu) {
    const int64_t n_in = w.shape()[0], n_out = w.shape()[1];
    Map out(static_cast<size_t>(n_out));
    for (int64_t o = 0; o < n_out; ++o) {
      double s = b.data<float>()[o];
      for (int64_t i = 0; i < n_in; ++i) s += in[size_t(i)] * w.data<float>()[i * n_out + o];
      out[size_t(o)] = relu ? std::max(s, 0.0) : s;
    }
    return out;
  };
  for (int64_t n = 0; n < 2; ++n) {
    Map img(784);
    for (int64_t k = 0; k < 784; ++k) img[size_t(k)] = double(d.images[size_t(n * 784 + k)]) / 255.0;
    Map h = pool(conv_relu(img, 28, 1, p.conv1_w, p.conv1_b, 32), 24, 32);
    h = pool(conv_relu(h, 12, 32, p.conv2_w, p.conv2_b, 64), 8, 64);
    Map out = dense(dense(h, p.fc1_w, p.fc1_b, true), p.fc2_w, p.fc2_b, false);
    for (int64_t k = 0; k < 10; ++k)
      EXPECT_NEAR(logits.data<float>()[n * 10 + k], out[size_t(k)], 1e-4 * (1 + std::fabs(out[size_t(k)])))
          << "image " << n << " class " << k;
  }
}

// The sample's compiled step (one jitted value_and_grad through nn::conv and nn::max_pool, then
// Adam, the state donated) against the same steps run op by op (cfg.eager: the eager reference),
// as `fashion_mnist_cnn --limit 1280 --epochs 1` runs them: the 10 step losses within 1e-4
// relative, on the same shuffled batches (same seed); and the loss falls.
TEST(FashionMnistCnn, CompiledStepLossesEqualEagerForOneEpochOf1280) {
  const std::string dir = ms::fashion_mnist_dir();
  auto train_set = fmnist::load_split(dir, "train", 1280);
  auto test_set = fmnist::load_split(dir, "t10k", 100);
  auto train = [&](const fmnist::TrainConfig& cfg) {
    auto params = cnn::init_cnn(0);
    auto reports = cnn::train(params, train_set, test_set, cfg);
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].steps, 10);
    EXPECT_GT(reports[0].train_acc, 0.2);  // chance is 0.1
  };
  expect_losses_match(step_losses(train, false), step_losses(train, true), 10, 1e-4);
}

}  // namespace

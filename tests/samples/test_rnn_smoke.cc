// minijax tests: the Fashion-MNIST GRU sample (samples/fashion_mnist_rnn_lib) on a slice of the data:
// batch layout, init, the scan forward against a hand loop, grads against an unrolled loop, remat, training.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autodiff/saved_residuals.h"
#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_rnn_lib.h"

namespace {

namespace ms = minijax::samples;
namespace rnn = fmnist::rnn;

// A loss built from the same cell without scan: a C++ loop of 28 gru_cell calls on the rows of
// the input projection (the unrolled program), an independent route to the gradient.
mj::Array unrolled_loss(const rnn::GRU& p, const mj::Array& x, const mj::Array& y) {
  const int64_t T = x.shape()[0], B = x.shape()[1], H = p.w_hh.shape()[0];
  mj::Array h = mj::zeros({B, H});
  for (int64_t t = 0; t < T; ++t) {
    mj::Array xt = mj::reshape(mj::lax::slice(x, {t, 0, 0}, {t + 1, B, 28}), {B, 28});
    h = rnn::gru_cell(p.w_hh, p.b_hh, h, mj::matmul(xt, p.w_ih) + p.b_ih);
  }
  mj::Array logp = mj::log_softmax(mj::matmul(h, p.w_out) + p.b_out, 1);
  return -mj::mean(mj::sum(logp * mj::one_hot(y, 10), 1));
}

// Largest |a - b| / (1 + |b|) over two arrays of the same shape.
double max_rel_diff(const mj::Array& a, const mj::Array& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  double m = 0;
  for (int64_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(double(pa[i]) - double(pb[i])) / (1.0 + std::fabs(double(pb[i]))));
  return m;
}

void expect_grads_close(const rnn::GRU& a, const rnn::GRU& b, double tol, const std::string& what) {
  std::vector<mj::Array> la = mj::tree_flatten(a), lb = mj::tree_flatten(b);
  ASSERT_EQ(la.size(), lb.size());
  const char* names[] = {"w_ih", "w_hh", "b_ih", "b_hh", "w_out", "b_out"};
  for (size_t i = 0; i < la.size(); ++i)
    EXPECT_LE(max_rel_diff(la[i], lb[i]), tol) << what << ": gradient of " << names[i];
}

TEST(FashionMnistRnn, RowBatchIsTimeMajorPixelsOver255) {
  auto d = fmnist::load_split(ms::fashion_mnist_dir(), "train", 5);
  auto [x, y] = rnn::make_row_batch(d, {4, 1}, 0, 2);  // images 4 and 1, in that order
  ASSERT_EQ(x.shape(), (mj::Shape{28, 2, 28}));
  ASSERT_EQ(y.shape(), (mj::Shape{2}));
  const float* xp = x.data<float>();
  for (int64_t t : {0, 13, 27})
    for (int64_t k : {0, 14, 27}) {
      EXPECT_FLOAT_EQ(xp[(t * 2 + 0) * 28 + k], float(d.images[4 * 784 + t * 28 + k]) / 255.0f);
      EXPECT_FLOAT_EQ(xp[(t * 2 + 1) * 28 + k], float(d.images[1 * 784 + t * 28 + k]) / 255.0f);
    }
  EXPECT_EQ(y.data<int32_t>()[0], d.labels[4]);
  EXPECT_EQ(y.data<int32_t>()[1], d.labels[1]);
}

TEST(FashionMnistRnn, InitIsPyTorchsUniformAndRematNamesAreChecked) {
  auto p = rnn::init_gru(0);
  EXPECT_EQ(p.w_ih.shape(), (mj::Shape{28, 384}));
  EXPECT_EQ(p.w_hh.shape(), (mj::Shape{128, 384}));
  EXPECT_EQ(p.b_hh.shape(), (mj::Shape{384}));
  EXPECT_EQ(p.w_out.shape(), (mj::Shape{128, 10}));
  // Every parameter lies in U(-1/sqrt(128), 1/sqrt(128)) and its extremes come near the bound.
  const float bound = 1.0f / std::sqrt(128.0f);
  for (const mj::Array& a : mj::tree_flatten(p)) {
    const float* v = a.data<float>();
    float m = 0;
    for (int64_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(v[i]));
    EXPECT_LE(m, bound);
    if (a.size() >= 384) EXPECT_GT(m, 0.95f * bound);
  }
  EXPECT_FALSE(rnn::parse_remat("none").enabled());
  EXPECT_EQ(rnn::parse_remat("nothing_saveable").policy->str(), "nothing_saveable");
  EXPECT_NE(rnn::parse_remat("offload_gates").policy->str().find("pinned_host"), std::string::npos);
  try {
    rnn::parse_remat("everything");
    FAIL() << "expected mj::ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'everything'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rnn::init_gru(0, 0), mj::ValueError);
}

// The scan's last state equals a GRU computed here in double precision with plain loops from
// PyTorch's equations (r, z, n gates; h' = (1 - z) n + z h), on 3 images with hidden 8.
TEST(FashionMnistRnn, LastStateMatchesAHandWrittenGru) {
  auto d = fmnist::load_split(ms::fashion_mnist_dir(), "train", 3);
  const int64_t B = 3, H = 8;
  auto p = rnn::init_gru(7, H);
  auto [x, y] = rnn::make_row_batch(d, {}, 0, B);
  mj::Array h_scan = rnn::last_state(p, x);
  ASSERT_EQ(h_scan.shape(), (mj::Shape{B, H}));

  const float *wih = p.w_ih.data<float>(), *whh = p.w_hh.data<float>();
  const float *bih = p.b_ih.data<float>(), *bhh = p.b_hh.data<float>();
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t i = 0; i < B; ++i) {
    std::vector<double> h(H, 0.0), gi(3 * H), gh(3 * H);
    for (int64_t t = 0; t < 28; ++t) {
      for (int64_t j = 0; j < 3 * H; ++j) {
        gi[j] = bih[j];
        for (int64_t k = 0; k < 28; ++k)
          gi[j] += double(d.images[i * 784 + t * 28 + k]) / 255.0 * wih[k * 3 * H + j];
        gh[j] = bhh[j];
        for (int64_t k = 0; k < H; ++k) gh[j] += h[k] * whh[k * 3 * H + j];
      }
      std::vector<double> hn(H);
      for (int64_t j = 0; j < H; ++j) {
        double r = sigmoid(gi[j] + gh[j]), z = sigmoid(gi[H + j] + gh[H + j]);
        double n = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
        hn[j] = (1 - z) * n + z * h[j];
      }
      h = hn;
    }
    for (int64_t j = 0; j < H; ++j)
      EXPECT_NEAR(h_scan.data<float>()[i * H + j], h[j], 2e-5) << "image " << i << " unit " << j;
  }
}

// Reverse mode through scan (and through the checkpointed scan body) equals reverse mode through
// the unrolled loop, on 8 images with hidden 16 read over rows 10..16 (7 steps: the eager grad of
// the unrolled program grows faster than linearly with its length).
TEST(FashionMnistRnn, ScanGradientsEqualUnrolledLoopGradients) {
  auto d = fmnist::load_split(ms::fashion_mnist_dir(), "train", 8);
  auto p = rnn::init_gru(3, 16);
  auto [x28, y] = rnn::make_row_batch(d, {}, 0, 8);
  mj::Array x = mj::lax::slice(x28, {10, 0, 0}, {17, 8, 28});
  auto [l_ref, g_ref] = mj::value_and_grad(unrolled_loss)(p, x, y);
  for (std::string policy : {"none", "nothing_saveable", "offload_gates"}) {
    rnn::Remat remat = rnn::parse_remat(policy);
    auto [l, g] = mj::value_and_grad([&](const rnn::GRU& q, const mj::Array& xb, const mj::Array& yb) {
      return rnn::loss_fn(q, xb, yb, remat);
    })(p, x, y);
    EXPECT_NEAR(l.item<double>(), l_ref.item<double>(), 1e-6) << policy;
    expect_grads_close(g, g_ref, 1e-5, policy);
  }
}

// What the backward pass keeps, per --remat policy (B = 4, H = 8, 28 steps). nothing_saveable:
// the checkpointed body saves nothing, so the only per-iteration residual is the body's input
// carry h, stacked [28, B, H] on the device. offload_gates: additionally the named gate
// pre-activations, stacked [28, B, 3H] in pinned_host. none: several stacked residuals, all on
// the device.
TEST(FashionMnistRnn, SavedResidualsFollowTheRematPolicy) {
  auto p = rnn::init_gru(3, 8);
  mj::Array x = mj::zeros({28, 4, 28}), y = mj::zeros({4}, mj::i32);
  auto residuals = [&](const std::string& policy) {
    rnn::Remat remat = rnn::parse_remat(policy);
    std::vector<mj::SavedResidual> stacked;
    for (const auto& r : mj::saved_residuals(
             [&](const rnn::GRU& q) { return rnn::loss_fn(q, x, y, remat); }, p))
      if (r.placement == mj::ResidualPlacement::stacked) stacked.push_back(r);
      else EXPECT_EQ(r.memory_kind, mj::MemoryKind::device) << policy;
    return stacked;
  };
  auto none = residuals("none");
  EXPECT_GT(none.size(), 2u);
  for (auto& r : none) EXPECT_EQ(r.memory_kind, mj::MemoryKind::device);

  auto nothing = residuals("nothing_saveable");
  ASSERT_EQ(nothing.size(), 1u);
  EXPECT_EQ(nothing[0].aval.shape, (mj::Shape{28, 4, 8}));
  EXPECT_EQ(nothing[0].memory_kind, mj::MemoryKind::device);

  auto offload = residuals("offload_gates");
  ASSERT_EQ(offload.size(), 2u);
  int gates = offload[0].name == rnn::kGatesName ? 0 : 1;
  EXPECT_EQ(offload[gates].name, rnn::kGatesName);
  EXPECT_EQ(offload[gates].aval.shape, (mj::Shape{28, 4, 24}));
  EXPECT_EQ(offload[gates].memory_kind, mj::MemoryKind::pinned_host);
  EXPECT_EQ(offload[gates].bytes, 28 * 4 * 24 * 4);
  EXPECT_EQ(offload[1 - gates].aval.shape, (mj::Shape{28, 4, 8}));
  EXPECT_EQ(offload[1 - gates].memory_kind, mj::MemoryKind::device);
}

// The sample's training loop on 512 images (batch 64: 8 steps per epoch, 2 epochs; lr 3e-3, a
// larger rate than the sample's 1e-3 so that 16 steps show learning) and 500 test images. The
// untrained loss is near ln(10) = 2.303 (small logits); after 16 Adam steps it must have fallen and
// accuracy must beat chance (0.1). The first step's loss and gradients with the scan body under
// mj::checkpoint(nothing_saveable) equal those without remat to 1e-5.
TEST(FashionMnistRnn, TrainingOnASliceLearnsAndRematAgrees) {
  const std::string dir = ms::fashion_mnist_dir();
  auto train_set = fmnist::load_split(dir, "train", 512);
  auto test_set = fmnist::load_split(dir, "t10k", 500);
  auto params = rnn::init_gru(0);

  auto [x, y] = rnn::make_row_batch(train_set, {}, 0, 128);
  auto grad_with = [&](const rnn::Remat& remat) {
    return mj::value_and_grad([remat](const rnn::GRU& q, const mj::Array& xb, const mj::Array& yb) {
      return rnn::loss_fn(q, xb, yb, remat);
    })(params, x, y);
  };
  auto [l0, g0] = grad_with(rnn::parse_remat("none"));
  auto [l1, g1] = grad_with(rnn::parse_remat("nothing_saveable"));
  EXPECT_NEAR(l1.item<double>(), l0.item<double>(), 1e-5);
  expect_grads_close(g1, g0, 1e-5, "nothing_saveable");

  const double loss0 = rnn::mean_loss(params, train_set);
  EXPECT_NEAR(loss0, std::log(10.0), 0.1);
  rnn::TrainConfig cfg;
  cfg.epochs = 2;
  cfg.batch = 64;
  cfg.lr = 3e-3;
  cfg.skip_eval = true;
  std::vector<double> step_losses;
  cfg.on_step = [&](int64_t, double l) { step_losses.push_back(l); };
  auto reports = rnn::train(params, train_set, test_set, cfg);
  ASSERT_EQ(reports.size(), 2u);
  ASSERT_EQ(step_losses.size(), 16u);
  for (auto& r : reports) EXPECT_EQ(r.steps, 8);
  const double loss1 = rnn::mean_loss(params, train_set);
  EXPECT_LT(loss1, loss0 - 0.2) << "loss before " << loss0 << " after " << loss1;
  EXPECT_LT(reports.back().mean_loss, reports.front().mean_loss);
  EXPECT_GT(rnn::accuracy(params, test_set), 0.25);
}

}  // namespace

// minijax samples: the Fashion-MNIST CNN — model, init, loss, accuracy; the training steps
// (value_and_grad through nn::conv and nn::max_pool, then Adam) run by the shared epoch loop.
#include "samples/fashion_mnist_cnn_lib.h"

#include <cmath>

#include <minijax/minijax.h>
#include "samples/common/train_loop.h"

namespace fmnist::cnn {

namespace {
constexpr int64_t kSide = 28, kClasses = 10, kKernel = 5;
}  // namespace

std::pair<mj::Array, mj::Array> make_image_batch(const Dataset& d, const std::vector<int32_t>& order,
                                                 int64_t begin, int64_t count) {
  auto [x, y] = make_batch(d, order, begin, count);
  return {mj::reshape(x, {count, kSide, kSide, 1}), y};
}

CNN init_cnn(uint32_t seed) {
  mj::Array keys = mj::random::split(mj::random::PRNGKey(seed), 8);
  // Weight of `shape` and bias of [out] from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), keys 2k and 2k+1.
  auto layer = [&](int k, int64_t fan_in, const mj::Shape& shape, mj::Array& w, mj::Array& b) {
    const double bound = 1.0 / std::sqrt(double(fan_in));
    w = mj::random::uniform(key_at(keys, 2 * k), shape, mj::f32, -bound, bound);
    b = mj::random::uniform(key_at(keys, 2 * k + 1), {shape.back()}, mj::f32, -bound, bound);
  };
  CNN p;
  layer(0, 1 * kKernel * kKernel, {kKernel, kKernel, 1, 32}, p.conv1_w, p.conv1_b);
  layer(1, 32 * kKernel * kKernel, {kKernel, kKernel, 32, 64}, p.conv2_w, p.conv2_b);
  layer(2, 1024, {1024, 128}, p.fc1_w, p.fc1_b);
  layer(3, 128, {128, kClasses}, p.fc2_w, p.fc2_b);
  return p;
}

mj::Array forward(const CNN& p, const mj::Array& x) {
  namespace nn = mj::nn;
  const int64_t batch = x.shape()[0];
  mj::Array h = mj::relu(nn::conv(x, p.conv1_w, {}, "VALID", {.bias = p.conv1_b}));  // [B, 24, 24, 32]
  h = nn::max_pool(h, {2, 2}, {2, 2});                                                 // [B, 12, 12, 32]
  h = mj::relu(nn::conv(h, p.conv2_w, {}, "VALID", {.bias = p.conv2_b}));           // [B, 8, 8, 64]
  h = nn::max_pool(h, {2, 2}, {2, 2});                                                 // [B, 4, 4, 64]
  h = mj::relu(mj::matmul(mj::reshape(h, {batch, 1024}), p.fc1_w) + p.fc1_b);
  return mj::matmul(h, p.fc2_w) + p.fc2_b;
}

mj::Array loss_fn(const CNN& p, const mj::Array& x, const mj::Array& y) {
  return cross_entropy(forward(p, x), y);
}

double accuracy(const CNN& p, const Dataset& d, int64_t batch) {
  // The correct predictions of a batch, compiled (one signature per batch size).
  static const auto correct = mj::jit([](const CNN& q, const mj::Array& x,
                                         const mj::Array& y) { return correct_count(forward(q, x), y); },
                                      mj::JitOptions{.name = "cnn_correct_count"});
  auto make = [](const Dataset& ds, int64_t b, int64_t n) { return make_image_batch(ds, {}, b, n); };
  return average_over_batches(d, batch, make, [&](const mj::Array& x, const mj::Array& y, int64_t) {
    return double(correct(p, x, y).item<int64_t>());
  });
}

double mean_loss(const CNN& p, const Dataset& d, int64_t batch) {
  auto make = [](const Dataset& ds, int64_t b, int64_t n) { return make_image_batch(ds, {}, b, n); };
  return average_over_batches(d, batch, make, [&](const mj::Array& x, const mj::Array& y, int64_t n) {
    return loss_fn(p, x, y).item<double>() * double(n);
  });
}

std::pair<TrainState, mj::Array> train_step(const minijax::optim::Adam& opt, const TrainState& s,
                                            const mj::Array& x, const mj::Array& y) {
  auto [loss, grads] = mj::value_and_grad(loss_fn)(s.params, x, y);
  auto [params, state] = opt.update(grads, s.opt, s.params);
  return {TrainState{std::move(params), std::move(state)}, loss};
}

std::vector<EpochReport> train(CNN& params, const Dataset& train_set, const Dataset& test_set,
                               const TrainConfig& cfg) {
  minijax::optim::Adam opt;
  opt.lr = cfg.lr;
  auto step = [&opt](const TrainState& s, const mj::Array& x, const mj::Array& y) {
    return train_step(opt, s, x, y);
  };
  EpochLoopModel<CNN> model{"fashion_mnist_cnn", "cnn_train_step", make_image_batch,
                            [](const CNN& p, const Dataset& d) { return accuracy(p, d); }};
  return train_epochs(params, TrainState{params, opt.init(params)}, train_set, test_set, cfg, model, step);
}

}  // namespace fmnist::cnn

// minijax samples: the Fashion-MNIST MLP — data loading, model, loss, accuracy and training loop.
// Training steps (value_and_grad + Adam) compiled as one jitted function, or run eagerly.
#include "samples/fashion_mnist_mlp_lib.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include <minijax/minijax.h>
#include "samples/common/idx_reader.h"
#include "samples/common/train_loop.h"

namespace fmnist {

namespace ms = minijax::samples;

Dataset load_split(const std::string& dir, const std::string& prefix, int64_t limit) {
  const std::string img_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string lab_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  auto img = ms::read_idx_gz(img_path, limit, 3, ms::kFashionMnistPackage);
  auto lab = ms::read_idx_gz(lab_path, limit, 1, ms::kFashionMnistPackage);
  if (img.dims[1] != 28 || img.dims[2] != 28)
    throw mj::ValueError("IDX file '" + img_path + "' holds images of " + std::to_string(img.dims[1]) +
                         "x" + std::to_string(img.dims[2]) + " pixels, expected 28x28");
  if (img.dims[0] != lab.dims[0])
    throw mj::ValueError("IDX files '" + img_path + "' and '" + lab_path + "' disagree: " +
                         std::to_string(img.dims[0]) + " images vs " + std::to_string(lab.dims[0]) +
                         " labels");
  for (uint8_t l : lab.bytes)
    if (l > 9)
      throw mj::ValueError("IDX file '" + lab_path + "' holds the label " + std::to_string(l) +
                           " (expected 0..9)");
  Dataset d;
  d.n = img.dims[0];
  d.images = std::move(img.bytes);
  d.labels = std::move(lab.bytes);
  return d;
}

std::pair<mj::Array, mj::Array> make_batch(const Dataset& d, const std::vector<int32_t>& order,
                                           int64_t begin, int64_t count) {
  mj::Array x = mj::Array::allocate(mj::ShapedArray{{count, 784}, mj::f32});
  mj::Array y = mj::Array::allocate(mj::ShapedArray{{count}, mj::i32});
  float* xp = x.mutable_data<float>();
  int32_t* yp = y.mutable_data<int32_t>();
  for (int64_t i = 0; i < count; ++i) {
    int64_t r = order.empty() ? begin + i : order[size_t(begin + i)];
    const uint8_t* src = d.images.data() + r * 784;
    float* dst = xp + i * 784;
    for (int k = 0; k < 784; ++k) dst[k] = float(src[k]) / 255.0f;
    yp[i] = d.labels[size_t(r)];
  }
  return {x, y};
}

MLP init_mlp(uint32_t seed, int64_t hidden) {
  mj::Array keys = mj::random::split(mj::random::PRNGKey(seed), 6);
  auto linear = [&](int k, int64_t fan_in, int64_t fan_out, mj::Array& w, mj::Array& b) {
    const double bound = 1.0 / std::sqrt(double(fan_in));
    w = mj::random::uniform(key_at(keys, 2 * k), {fan_in, fan_out}, mj::f32, -bound, bound);
    b = mj::random::uniform(key_at(keys, 2 * k + 1), {fan_out}, mj::f32, -bound, bound);
  };
  MLP p;
  linear(0, 784, hidden, p.w1, p.b1);
  linear(1, hidden, hidden, p.w2, p.b2);
  linear(2, hidden, 10, p.w3, p.b3);
  return p;
}

mj::Array forward(const MLP& p, const mj::Array& x) {
  mj::Array h = mj::relu(mj::matmul(x, p.w1) + p.b1);
  h = mj::relu(mj::matmul(h, p.w2) + p.b2);
  return mj::matmul(h, p.w3) + p.b3;
}

mj::Array cross_entropy(const mj::Array& logits, const mj::Array& y) {
  mj::Array logp = mj::log_softmax(logits, 1);
  return -mj::mean(mj::sum(logp * mj::one_hot(y, 10), 1));
}

mj::Array correct_count(const mj::Array& logits, const mj::Array& y) {
  return mj::sum(mj::astype(mj::argmax(logits, 1) == y, mj::i32));
}

mj::Array loss_fn(const MLP& p, const mj::Array& x, const mj::Array& y) { return cross_entropy(forward(p, x), y); }

double accuracy(const MLP& p, const Dataset& d, int64_t batch) {
  auto make = [](const Dataset& ds, int64_t b, int64_t n) { return make_batch(ds, {}, b, n); };
  // The correct predictions of a batch, compiled (one signature per batch size).
  static const auto correct = mj::jit(
      [](const MLP& q, const mj::Array& x, const mj::Array& y) { return correct_count(forward(q, x), y); },
      mj::JitOptions{.name = "mlp_correct_count"});
  return average_over_batches(d, batch, make, [&](const mj::Array& x, const mj::Array& y, int64_t) {
    return double(correct(p, x, y).item<int64_t>());
  });
}

double mean_loss(const MLP& p, const Dataset& d, int64_t batch) {
  auto make = [](const Dataset& ds, int64_t b, int64_t n) { return make_batch(ds, {}, b, n); };
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

std::vector<EpochReport> train(MLP& params, const Dataset& train_set, const Dataset& test_set,
                               const TrainConfig& cfg) {
  minijax::optim::Adam opt;
  opt.lr = cfg.lr;
  auto step = [&opt](const TrainState& s, const mj::Array& x, const mj::Array& y) {
    return train_step(opt, s, x, y);
  };
  EpochLoopModel<MLP> model{"fashion_mnist_mlp", "train_step", make_batch,
                            [](const MLP& p, const Dataset& d) { return accuracy(p, d); }};
  return train_epochs(params, TrainState{params, opt.init(params)}, train_set, test_set, cfg, model, step);
}

std::string format_report(const EpochReport& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "epoch %d  loss %.4f  train_acc %.4f  test_acc %.4f  time %.1fs  steps/s %.1f  "
                "ms/step %.1f  (eval %.1fs)",
                r.epoch, r.mean_loss, r.train_acc, r.test_acc, r.seconds, r.steps_per_s(),
                r.steps ? 1000.0 * r.seconds / double(r.steps) : 0.0, r.eval_seconds);
  return buf;
}

}  // namespace fmnist

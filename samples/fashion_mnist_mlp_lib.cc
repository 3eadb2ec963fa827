// minijax samples: the Fashion-MNIST MLP — data loading, model, loss, accuracy and training loop.
// Training steps (value_and_grad + Adam) compiled as one jitted function, or run eagerly.
#include "samples/fashion_mnist_mlp_lib.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <minijax/minijax.h>
#include "samples/common/checkpoint.h"
#include "samples/common/idx_reader.h"

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

namespace {
// Key i (u32[2]) of the u32[num, 2] result of mj::random::split.
mj::Array key_at(const mj::Array& keys, int64_t i) {
  return mj::reshape(mj::lax::slice(keys, {i, 0}, {i + 1, 2}), {2});
}
}  // namespace

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

mj::Array loss_fn(const MLP& p, const mj::Array& x, const mj::Array& y) {
  mj::Array logp = mj::log_softmax(forward(p, x), 1);
  return -mj::mean(mj::sum(logp * mj::one_hot(y, 10), 1));
}

double accuracy(const MLP& p, const Dataset& d, int64_t batch) {
  auto make = [](const Dataset& ds, int64_t b, int64_t n) { return make_batch(ds, {}, b, n); };
  // The correct predictions of a batch, compiled (one signature per batch size).
  static const auto correct = mj::jit(
      [](const MLP& q, const mj::Array& x, const mj::Array& y) {
        return mj::sum(mj::astype(mj::argmax(forward(q, x), 1) == y, mj::i32));
      },
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
  using clock = std::chrono::steady_clock;
  minijax::optim::Adam opt;
  opt.lr = cfg.lr;
  TrainState state{params, opt.init(params)};
  auto eager_step = [&opt](const TrainState& s, const mj::Array& x, const mj::Array& y) {
    return train_step(opt, s, x, y);
  };
  // One compiled function per batch size (the last batch of an epoch is smaller); the state's
  // buffers are donated, so the new parameters and moments overwrite the old ones in place.
  auto compiled_step = mj::jit(eager_step, mj::JitOptions{.name = "train_step", .donate_argnums = {0}});
  // The shuffling key is independent of the initialisation key (seed + 1 vs seed).
  mj::Array key = mj::random::PRNGKey(cfg.seed + 1);
  std::vector<EpochReport> reports;
  int64_t step = 0, skip = 0;
  const int64_t steps_per_epoch = (train_set.n + cfg.batch - 1) / cfg.batch;
  int first_epoch = 1;
  const auto meta = ms::run_metadata("fashion_mnist_mlp", cfg.seed, cfg.batch, cfg.lr, train_set.n);
  if (!cfg.resume_dir.empty()) {
    // The checkpoint replaces the state, the key and the epoch count: the next epoch's order,
    // batches and steps are those an uninterrupted run would take.
    ms::TrainCheckpoint<MLP> like{state.params, state.opt, key, mj::zeros({}, mj::i32)};
    auto c = ms::load_checkpoint(cfg.resume_dir, like, meta);
    state = TrainState{c.params, c.opt};
    key = c.key;
    first_epoch = c.epoch.item<int>() + 1;
    step = c.opt.step.item<int64_t>();
    skip = ms::steps_into_epoch(ms::checkpoint_path(cfg.resume_dir), step, first_epoch - 1, steps_per_epoch);
    params = state.params;
    if (cfg.on_checkpoint)
      cfg.on_checkpoint("resumed from " + ms::checkpoint_path(cfg.resume_dir) + " after epoch " +
                        std::to_string(first_epoch - 1) + " (step " + std::to_string(step) + ")");
  }
  auto stop = [&] { return cfg.should_stop && cfg.should_stop(); };
  for (int e = first_epoch; e <= cfg.epochs && !stop(); ++e) {
    const mj::Array epoch_key = key;
    mj::Array ks = mj::random::split(key, 2);
    key = key_at(ks, 0);
    mj::Array perm = mj::random::permutation(key_at(ks, 1), train_set.n);
    const int32_t* pp = perm.data<int32_t>();
    std::vector<int32_t> order(pp, pp + train_set.n);

    EpochReport r;
    r.epoch = e;
    if (cfg.on_epoch_begin) cfg.on_epoch_begin(e, steps_per_epoch - skip);
    auto t0 = clock::now();
    double loss_sum = 0;
    bool stopped = false;
    for (int64_t b = skip * cfg.batch; b < train_set.n; b += cfg.batch) {
      int64_t count = std::min(cfg.batch, train_set.n - b);
      auto [x, y] = make_batch(train_set, order, b, count);
      auto [next, loss] = cfg.eager ? eager_step(state, x, y) : compiled_step(state, x, y);
      state = std::move(next);
      const double l = loss.item<double>();
      loss_sum += l;
      if (cfg.on_step) cfg.on_step(step, l);
      ++step;
      ++r.steps;
      if (b + cfg.batch < train_set.n && stop()) {
        stopped = true;
        break;
      }
    }
    skip = 0;
    if (stopped) {
      // Mid-epoch: the epochs completed and this epoch's key; Adam's step says how far it got.
      if (!cfg.save_dir.empty()) {
        ms::save_checkpoint(cfg.save_dir,
                            ms::TrainCheckpoint<MLP>{state.params, state.opt, epoch_key, mj::full({}, e - 1, mj::i32)},
                            meta);
        if (cfg.on_checkpoint)
          cfg.on_checkpoint("saved " + ms::checkpoint_path(cfg.save_dir) + " (stopped in epoch " + std::to_string(e) +
                            ", step " + std::to_string(step) + ")");
      }
      break;
    }
    auto t1 = clock::now();
    r.seconds = std::chrono::duration<double>(t1 - t0).count();
    r.mean_loss = r.steps ? loss_sum / double(r.steps) : 0.0;
    if (!cfg.save_dir.empty()) {
      ms::save_checkpoint(cfg.save_dir, ms::TrainCheckpoint<MLP>{state.params, state.opt, key, mj::full({}, e, mj::i32)},
                          meta);
      if (cfg.on_checkpoint)
        cfg.on_checkpoint("saved " + ms::checkpoint_path(cfg.save_dir) + " (epoch " + std::to_string(e) + ", step " +
                          std::to_string(step) + ")");
    }
    t1 = clock::now();
    params = state.params;
    if (stop()) break;  // the epoch's checkpoint is written; no evaluation
    r.train_acc = accuracy(params, train_set);
    r.test_acc = accuracy(params, test_set);
    r.eval_seconds = std::chrono::duration<double>(clock::now() - t1).count();
    if (cfg.on_epoch) cfg.on_epoch(r);
    reports.push_back(r);
  }
  params = state.params;
  return reports;
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

// minijax samples: the Fashion-MNIST GRU — each image read as 28 rows of 28 pixels by mj::scan.
// Training steps (value_and_grad through scan, optionally checkpointed, and Adam) compiled as one
// jitted function, or run eagerly; one compiled step's memory measured against the planner's.
#include "samples/fashion_mnist_rnn_lib.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <tuple>

#include <minijax/minijax.h>
#include "samples/common/checkpoint.h"

namespace fmnist::rnn {

namespace {
constexpr int64_t kRows = 28, kCols = 28, kClasses = 10;

// Key i (u32[2]) of the u32[num, 2] result of mj::random::split.
mj::Array key_at(const mj::Array& keys, int64_t i) {
  return mj::reshape(mj::lax::slice(keys, {i, 0}, {i + 1, 2}), {2});
}

// Columns [lo, hi) of a [B, C] matrix.
mj::Array cols(const mj::Array& a, int64_t lo, int64_t hi) {
  return mj::lax::slice(a, {0, lo}, {a.shape()[0], hi});
}
}  // namespace

std::pair<mj::Array, mj::Array> make_row_batch(const Dataset& d, const std::vector<int32_t>& order,
                                           int64_t begin, int64_t count) {
  mj::Array x = mj::Array::allocate(mj::ShapedArray{{kRows, count, kCols}, mj::f32});
  mj::Array y = mj::Array::allocate(mj::ShapedArray{{count}, mj::i32});
  float* xp = x.mutable_data<float>();
  int32_t* yp = y.mutable_data<int32_t>();
  for (int64_t i = 0; i < count; ++i) {
    int64_t r = order.empty() ? begin + i : order[size_t(begin + i)];
    const uint8_t* src = d.images.data() + r * kRows * kCols;
    for (int64_t t = 0; t < kRows; ++t)
      for (int64_t k = 0; k < kCols; ++k)
        xp[(t * count + i) * kCols + k] = float(src[t * kCols + k]) / 255.0f;
    yp[i] = d.labels[size_t(r)];
  }
  return {x, y};
}

GRU init_gru(uint32_t seed, int64_t hidden) {
  if (hidden <= 0)
    throw mj::ValueError("init_gru: hidden size must be positive, got " + std::to_string(hidden));
  mj::Array keys = mj::random::split(mj::random::PRNGKey(seed), 6);
  const double bound = 1.0 / std::sqrt(double(hidden));
  auto u = [&](int k, const mj::Shape& shape) {
    return mj::random::uniform(key_at(keys, k), shape, mj::f32, -bound, bound);
  };
  GRU p;
  p.w_ih = u(0, {kCols, 3 * hidden});
  p.w_hh = u(1, {hidden, 3 * hidden});
  p.b_ih = u(2, {3 * hidden});
  p.b_hh = u(3, {3 * hidden});
  p.w_out = u(4, {hidden, kClasses});
  p.b_out = u(5, {kClasses});
  return p;
}

Remat parse_remat(const std::string& name) {
  namespace cp = mj::checkpoint_policies;
  Remat r;
  r.name = name;
  if (name == "none") return r;
  if (name == "nothing_saveable") r.policy = cp::nothing_saveable();
  else if (name == "dots_saveable") r.policy = cp::dots_saveable();
  else if (name == "everything_saveable") r.policy = cp::everything_saveable();
  else if (name == "offload_gates")
    r.policy = cp::save_and_offload_only_these_names({}, {kGatesName}, "device", "pinned_host");
  else
    throw mj::ValueError("unknown remat policy '" + name +
                         "' (expected none, nothing_saveable, dots_saveable, "
                         "everything_saveable or offload_gates)");
  return r;
}

mj::Array gru_cell(const mj::Array& w_hh, const mj::Array& b_hh, const mj::Array& h,
                   const mj::Array& xp_t) {
  const int64_t H = w_hh.shape()[0];
  mj::Array gh = mj::checkpoint_name(mj::matmul(h, w_hh) + b_hh, kGatesName);
  mj::Array rz = mj::sigmoid(cols(xp_t, 0, 2 * H) + cols(gh, 0, 2 * H));
  mj::Array r = cols(rz, 0, H), z = cols(rz, H, 2 * H);
  mj::Array n = mj::tanh(cols(xp_t, 2 * H, 3 * H) + r * cols(gh, 2 * H, 3 * H));
  return n + z * (h - n);
}

mj::Array last_state(const GRU& p, const mj::Array& x, const Remat& remat) {
  const int64_t T = x.shape()[0], B = x.shape()[1], H = p.w_hh.shape()[0];
  // All 28 rows projected at once: [T B, 28] x [28, 3H] -> [T, B, 3H], the scan's xs.
  mj::Array xp = mj::reshape(mj::matmul(mj::reshape(x, {T * B, kCols}), p.w_ih) + p.b_ih,
                             {T, B, 3 * H});
  mj::Array h0 = mj::zeros({B, H}, mj::f32);
  const mj::Array &w_hh = p.w_hh, &b_hh = p.b_hh;
  if (!remat.enabled()) {
    auto step = [&](const mj::Array& h, const mj::Array& xt) {
      return std::pair{gru_cell(w_hh, b_hh, h, xt), mj::None{}};
    };
    return mj::scan(step, h0, xp).first;
  }
  mj::CheckpointOptions opts;
  opts.policy = remat.policy;
  auto cell = mj::checkpoint(
      [](const mj::Array& w, const mj::Array& b, const mj::Array& h, const mj::Array& xt) {
        return gru_cell(w, b, h, xt);
      },
      opts);
  auto step = [&](const mj::Array& h, const mj::Array& xt) {
    return std::pair{cell(w_hh, b_hh, h, xt), mj::None{}};
  };
  return mj::scan(step, h0, xp).first;
}

mj::Array forward(const GRU& p, const mj::Array& x, const Remat& remat) {
  return mj::matmul(last_state(p, x, remat), p.w_out) + p.b_out;
}

mj::Array loss_fn(const GRU& p, const mj::Array& x, const mj::Array& y, const Remat& remat) {
  mj::Array logp = mj::log_softmax(forward(p, x, remat), 1);
  return -mj::mean(mj::sum(logp * mj::one_hot(y, kClasses), 1));
}

double accuracy(const GRU& p, const Dataset& d, int64_t batch) {
  auto make = [](const Dataset& ds, int64_t b, int64_t n) { return make_row_batch(ds, {}, b, n); };
  // The correct predictions of a batch, compiled (one signature per batch size).
  static const auto correct = mj::jit(
      [](const GRU& q, const mj::Array& x, const mj::Array& y) {
        return mj::sum(mj::astype(mj::argmax(forward(q, x), 1) == y, mj::i32));
      },
      mj::JitOptions{.name = "gru_correct_count"});
  return average_over_batches(d, batch, make, [&](const mj::Array& x, const mj::Array& y, int64_t) {
    return double(correct(p, x, y).item<int64_t>());
  });
}

double mean_loss(const GRU& p, const Dataset& d, int64_t batch) {
  auto make = [](const Dataset& ds, int64_t b, int64_t n) { return make_row_batch(ds, {}, b, n); };
  return average_over_batches(d, batch, make, [&](const mj::Array& x, const mj::Array& y, int64_t n) {
    return loss_fn(p, x, y).item<double>() * double(n);
  });
}

namespace {
using State = minijax::optim::AdamState<GRU>;

// One training step: value_and_grad of loss_fn under `remat` through the scan, then Adam's
// update; returns (new parameters, new state, loss).
auto step_fn(const minijax::optim::Adam& opt, const Remat& remat) {
  auto grad_fn = mj::value_and_grad([remat](const GRU& p, const mj::Array& x, const mj::Array& y) {
    return loss_fn(p, x, y, remat);
  });
  return [opt, grad_fn](const GRU& p, const State& s, const mj::Array& x, const mj::Array& y) {
    auto [loss, grads] = grad_fn(p, x, y);
    auto [np, ns] = opt.update(grads, s, p);
    return std::tuple{np, ns, loss};
  };
}

// The step jitted; the parameters and Adam's state are donated: the new values overwrite them.
auto jit_step(const minijax::optim::Adam& opt, const Remat& remat) {
  return mj::jit(step_fn(opt, remat),
                 mj::JitOptions{.name = "gru_train_step", .donate_argnums = {0, 1}});
}

// Bytes of a pytree's arrays (their avals, as the planner counts arguments).
template <class T>
int64_t tree_bytes(const T& tree) {
  int64_t n = 0;
  for (const mj::Array& a : mj::tree_flatten(tree)) n += a.aval().nbytes();
  return n;
}

// Lowers and compiles `step` for these arguments (the jit's cache keeps the executable for later
// calls), runs it once, and fills `m` (StepMemory's definitions); returns the call's outputs.
template <class Step>
auto measured_first_call(StepMemory& m, const Step& step, const GRU& p, const State& s,
                         const mj::Array& x, const mj::Array& y) {
  auto lowered = step.lower(p, s, x, y);
  auto exe = lowered.compile();
  m.predicted = exe.memory_analysis();
  m.param_state_bytes = tree_bytes(p) + tree_bytes(s);
  m.input_bytes = m.param_state_bytes + tree_bytes(x) + tree_bytes(y) + tree_bytes(lowered.consts);
  mj::block_until_ready(std::tuple{p, s, x, y});
  const int64_t dev_before = mj::memory_stats(0, "device").bytes_in_use;
  const int64_t host_before = mj::memory_stats(0, "pinned_host").bytes_in_use;
  mj::reset_peak_memory_stats(0);
  auto out = mj::block_until_ready(exe(p, s, x, y));
  m.device_peak = mj::memory_stats(0, "device").peak_bytes_in_use - dev_before + m.input_bytes;
  m.host_peak = mj::memory_stats(0, "pinned_host").peak_bytes_in_use - host_before;
  return out;
}
}  // namespace

StepMemory measure_step_memory(const Remat& remat, const Dataset& train_set, int64_t batch,
                               int64_t hidden, uint32_t seed, double lr) {
  minijax::optim::Adam opt;
  opt.lr = lr;
  GRU params = init_gru(seed, hidden);
  State state = opt.init(params);
  auto [x, y] = make_row_batch(train_set, {}, 0, std::min(batch, train_set.n));
  StepMemory m;
  m.policy = remat.name;
  measured_first_call(m, jit_step(opt, remat), params, state, x, y);
  return m;
}

std::string format_memory_table(const std::vector<StepMemory>& rows) {
  auto mib = [](int64_t b) { return double(b) / double(1 << 20); };
  std::string out;
  char line[256];
  if (!rows.empty()) {
    std::snprintf(line, sizeof line,
                  "MiB = 2^20 B, host = pinned_host; inputs %lld B (parameters + Adam state %lld B, batch and "
                  "constants %lld B); activations = device peak - inputs\n",
                  (long long)rows[0].input_bytes, (long long)rows[0].param_state_bytes,
                  (long long)(rows[0].input_bytes - rows[0].param_state_bytes));
    out += line;
  }
  std::snprintf(line, sizeof line, "%-20s %10s %10s %10s %10s %12s %12s\n", "policy", "device", "predicted",
                "host", "predicted", "activations", "predicted");
  out += line;
  for (const StepMemory& r : rows) {
    std::snprintf(line, sizeof line, "%-20s %10.3f %10.3f %10.3f %10.3f %12.3f %12.3f\n",
                  r.policy.c_str(), mib(r.device_peak), mib(r.predicted.peak_memory_in_bytes),
                  mib(r.host_peak), mib(r.predicted.host_peak_memory_in_bytes),
                  mib(r.device_activations()), mib(r.predicted_device_activations()));
    out += line;
  }
  return out;
}

std::vector<EpochReport> train(GRU& params, const Dataset& train_set, const Dataset& test_set,
                               const TrainConfig& cfg) {
  using clock = std::chrono::steady_clock;
  minijax::optim::Adam opt;
  opt.lr = cfg.lr;
  State state = opt.init(params);
  auto eager_step = step_fn(opt, cfg.remat);
  auto compiled_step = jit_step(opt, cfg.remat);
  // The shuffling key is independent of the initialisation key (seed + 1 vs seed).
  mj::Array key = mj::random::PRNGKey(cfg.seed + 1);
  std::vector<EpochReport> reports;
  int64_t global_step = 0, skip = 0;
  const int64_t steps_per_epoch = (train_set.n + cfg.batch - 1) / cfg.batch;
  int first_epoch = 1;
  namespace ms = minijax::samples;
  auto meta = ms::run_metadata("fashion_mnist_rnn", cfg.seed, cfg.batch, cfg.lr, train_set.n);
  meta["hidden"] = std::to_string(params.w_hh.shape()[0]);
  if (!cfg.resume_dir.empty()) {
    // The checkpoint replaces the state, the key and the epoch count (fmnist::train's comment).
    auto c = ms::load_checkpoint(cfg.resume_dir, ms::TrainCheckpoint<GRU>{params, state, key, mj::zeros({}, mj::i32)},
                                 meta);
    params = c.params;
    state = c.opt;
    key = c.key;
    first_epoch = c.epoch.item<int>() + 1;
    global_step = state.step.item<int64_t>();
    skip = ms::steps_into_epoch(ms::checkpoint_path(cfg.resume_dir), global_step, first_epoch - 1, steps_per_epoch);
    if (cfg.on_checkpoint)
      cfg.on_checkpoint("resumed from " + ms::checkpoint_path(cfg.resume_dir) + " after epoch " +
                        std::to_string(first_epoch - 1) + " (step " + std::to_string(global_step) + ")");
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
      auto [x, y] = make_row_batch(train_set, order, b, count);
      const bool measure = global_step == 0 && !cfg.eager && cfg.on_step_memory;
      StepMemory m;
      m.policy = cfg.remat.name;
      auto [next_params, next_state, loss] =
          cfg.eager ? eager_step(params, state, x, y)
          : measure ? measured_first_call(m, compiled_step, params, state, x, y)
                    : compiled_step(params, state, x, y);
      params = std::move(next_params);
      state = std::move(next_state);
      const double l = loss.item<double>();
      loss_sum += l;
      if (cfg.on_step) cfg.on_step(global_step, l);
      if (measure) cfg.on_step_memory(m);
      ++global_step;
      ++r.steps;
      if (b + cfg.batch < train_set.n && stop()) {
        stopped = true;
        break;
      }
    }
    skip = 0;
    if (stopped) {
      // Mid-epoch: the epochs completed and this epoch's key (fmnist::train's comment).
      if (!cfg.save_dir.empty()) {
        ms::save_checkpoint(cfg.save_dir, ms::TrainCheckpoint<GRU>{params, state, epoch_key, mj::full({}, e - 1, mj::i32)},
                            meta);
        if (cfg.on_checkpoint)
          cfg.on_checkpoint("saved " + ms::checkpoint_path(cfg.save_dir) + " (stopped in epoch " + std::to_string(e) +
                            ", step " + std::to_string(global_step) + ")");
      }
      break;
    }
    auto t1 = clock::now();
    r.seconds = std::chrono::duration<double>(t1 - t0).count();
    r.mean_loss = r.steps ? loss_sum / double(r.steps) : 0.0;
    if (!cfg.save_dir.empty()) {
      ms::save_checkpoint(cfg.save_dir, ms::TrainCheckpoint<GRU>{params, state, key, mj::full({}, e, mj::i32)}, meta);
      if (cfg.on_checkpoint)
        cfg.on_checkpoint("saved " + ms::checkpoint_path(cfg.save_dir) + " (epoch " + std::to_string(e) + ", step " +
                          std::to_string(global_step) + ")");
      t1 = clock::now();
    }
    if (stop()) break;  // the epoch's checkpoint is written; no evaluation
    r.train_acc = cfg.skip_eval ? -1.0 : accuracy(params, train_set);
    r.test_acc = cfg.skip_eval ? -1.0 : accuracy(params, test_set);
    r.eval_seconds = std::chrono::duration<double>(clock::now() - t1).count();
    if (cfg.on_epoch) cfg.on_epoch(r);
    reports.push_back(r);
  }
  return reports;
}

}  // namespace fmnist::rnn

// minijax samples: the epoch loop the Fashion-MNIST MLP and CNN samples share — shuffling, the
// compiled (or eager) step, --save/--resume checkpoints, stop requests, the per-epoch evaluation.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

#include "samples/common/checkpoint.h"
#include "samples/fashion_mnist_mlp_lib.h"

namespace fmnist {

/// Key i (u32[2]) of the u32[num, 2] result of mj::random::split.
inline mj::Array key_at(const mj::Array& keys, int64_t i) {
  return mj::reshape(mj::lax::slice(keys, {i, 0}, {i + 1, 2}), {2});
}

/// What train_epochs needs of a model besides its step: names, its batches and its accuracy.
template <class P>
struct EpochLoopModel {
  std::string sample;     ///< the checkpoint's "sample" metadata, e.g. "fashion_mnist_mlp"
  std::string step_name;  ///< the jitted step's JitOptions::name, e.g. "train_step"
  /// The batch of rows [begin, begin + count) of `order` (make_batch's contract, any x layout).
  std::function<std::pair<mj::Array, mj::Array>(const Dataset&, const std::vector<int32_t>&, int64_t,
                                                int64_t)>
      make_batch;
  /// Fraction of the examples of a set the parameters classify correctly.
  std::function<double(const P&, const Dataset&)> accuracy;
};

/// The training loop of fmnist::train (its contract, cfg's fields included) for any model: `state`
/// is the initial training state, a registered pytree with fields `params` (P) and `opt`
/// (AdamState<P>), constructible as State{params, opt}; `step(state, x, y) -> (new state, loss)`
/// is one training step, run as is with cfg.eager and otherwise jitted with the state donated
/// (mj::jit(step, {.name = model.step_name, .donate_argnums = {0}}): one compiled program per
/// batch size). `params` receives the trained parameters (with cfg.resume_dir its incoming value
/// gives only the shapes a checkpoint must have). Throws what the step, the data and the
/// checkpoints throw (checkpoint.h).
template <class P, class State, class Step>
std::vector<EpochReport> train_epochs(P& params, State state, const Dataset& train_set,
                                      const Dataset& test_set, const TrainConfig& cfg,
                                      const EpochLoopModel<P>& model, Step step) {
  namespace ms = minijax::samples;
  using clock = std::chrono::steady_clock;
  // One compiled function per batch size (the last batch of an epoch is smaller); the state's
  // buffers are donated, so the new parameters and moments overwrite the old ones in place.
  auto compiled_step = mj::jit(step, mj::JitOptions{.name = model.step_name, .donate_argnums = {0}});
  // The shuffling key is independent of the initialisation key (seed + 1 vs seed).
  mj::Array key = mj::random::PRNGKey(cfg.seed + 1);
  std::vector<EpochReport> reports;
  int64_t global_step = 0, skip = 0;
  const int64_t steps_per_epoch = (train_set.n + cfg.batch - 1) / cfg.batch;
  int first_epoch = 1;
  const auto meta = ms::run_metadata(model.sample, cfg.seed, cfg.batch, cfg.lr, train_set.n);
  if (!cfg.resume_dir.empty()) {
    // The checkpoint replaces the state, the key and the epoch count: the next epoch's order,
    // batches and steps are those an uninterrupted run would take.
    ms::TrainCheckpoint<P> like{state.params, state.opt, key, mj::zeros({}, mj::i32)};
    auto c = ms::load_checkpoint(cfg.resume_dir, like, meta);
    state = State{c.params, c.opt};
    key = c.key;
    first_epoch = c.epoch.template item<int>() + 1;
    global_step = c.opt.step.template item<int64_t>();
    skip = ms::steps_into_epoch(ms::checkpoint_path(cfg.resume_dir), global_step, first_epoch - 1,
                                steps_per_epoch);
    params = state.params;
    if (cfg.on_checkpoint)
      cfg.on_checkpoint("resumed from " + ms::checkpoint_path(cfg.resume_dir) + " after epoch " +
                        std::to_string(first_epoch - 1) + " (step " + std::to_string(global_step) + ")");
  }
  auto save = [&](const mj::Array& epoch_key, int epochs_done, const std::string& what) {
    ms::save_checkpoint(cfg.save_dir,
                        ms::TrainCheckpoint<P>{state.params, state.opt, epoch_key,
                                               mj::full({}, epochs_done, mj::i32)},
                        meta);
    if (cfg.on_checkpoint)
      cfg.on_checkpoint("saved " + ms::checkpoint_path(cfg.save_dir) + " (" + what + ", step " +
                        std::to_string(global_step) + ")");
  };
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
      auto [x, y] = model.make_batch(train_set, order, b, count);
      auto [next, loss] = cfg.eager ? step(state, x, y) : compiled_step(state, x, y);
      state = std::move(next);
      const double l = loss.template item<double>();
      loss_sum += l;
      if (cfg.on_step) cfg.on_step(global_step, l);
      ++global_step;
      ++r.steps;
      if (b + cfg.batch < train_set.n && stop()) {
        stopped = true;
        break;
      }
    }
    skip = 0;
    if (stopped) {
      // Mid-epoch: the epochs completed and this epoch's key; Adam's step says how far it got.
      if (!cfg.save_dir.empty()) save(epoch_key, e - 1, "stopped in epoch " + std::to_string(e));
      break;
    }
    auto t1 = clock::now();
    r.seconds = std::chrono::duration<double>(t1 - t0).count();
    r.mean_loss = r.steps ? loss_sum / double(r.steps) : 0.0;
    if (!cfg.save_dir.empty()) save(key, e, "epoch " + std::to_string(e));
    t1 = clock::now();
    params = state.params;
    if (stop()) break;  // the epoch's checkpoint is written; no evaluation
    r.train_acc = model.accuracy(params, train_set);
    r.test_acc = model.accuracy(params, test_set);
    r.eval_seconds = std::chrono::duration<double>(clock::now() - t1).count();
    if (cfg.on_epoch) cfg.on_epoch(r);
    reports.push_back(r);
  }
  params = state.params;
  return reports;
}

}  // namespace fmnist

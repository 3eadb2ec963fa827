// minijax samples: the Fashion-MNIST MLP — data loading, model, loss, accuracy and training loop.
// Compiled into the fashion_mnist_mlp program and into its smoke test (tests/samples).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace fmnist {

/// A slice of Fashion-MNIST kept on the host as bytes: images [n, 784] (pixels 0..255, row-major)
/// and labels [n] (classes 0..9).
struct Dataset {
  int64_t n = 0;
  std::vector<uint8_t> images;
  std::vector<uint8_t> labels;
};

/// Reads `<dir>/<prefix>-images-idx3-ubyte.gz` and `<dir>/<prefix>-labels-idx1-ubyte.gz` with
/// prefix "train" or "t10k", keeping the first `limit` examples when limit >= 0.
/// Throws mj::IOError naming the missing file and the Debian package dataset-fashion-mnist;
/// mj::ValueError for a corrupt file or when images and labels disagree in count or the images
/// are not 28x28.
Dataset load_split(const std::string& dir, const std::string& prefix, int64_t limit = -1);

/// Rows [begin, begin+count) of `order` (or of 0..n-1 when order is empty) as a batch:
/// x f32[count, 784] holding pixel/255, y i32[count].
std::pair<mj::Array, mj::Array> make_batch(const Dataset& d, const std::vector<int32_t>& order,
                                           int64_t begin, int64_t count);

/// Mean over the whole of d of a per-batch quantity: `per_batch(x, y, count)` returns the sum
/// over the batch's `count` examples (e.g. correct predictions, or the mean loss times count) for
/// the batch `make(d, begin, count)`; batches of `batch` examples, the last one smaller.
/// Returns 0 for an empty set.
template <class Make, class PerBatch>
double average_over_batches(const Dataset& d, int64_t batch, Make make, PerBatch per_batch) {
  double total = 0;
  for (int64_t b = 0; b < d.n; b += batch) {
    int64_t count = std::min(batch, d.n - b);
    auto [x, y] = make(d, b, count);
    total += per_batch(x, y, count);
  }
  return d.n ? total / double(d.n) : 0.0;
}

/// The model's parameters: three dense layers (w: [in, out], b: [out]), a registered pytree.
struct MLP {
  mj::Array w1, b1, w2, b2, w3, b3;
};

/// PyTorch's default nn.Linear initialisation for 784-512-512-10: weights and biases both drawn
/// from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) — kaiming_uniform_ with a = sqrt(5) gives
/// bound = sqrt(6 / ((1 + a^2) fan_in)) = 1/sqrt(fan_in) (torch/nn/modules/linear.py,
/// reset_parameters). Deterministic in `seed` (threefry PRNG).
MLP init_mlp(uint32_t seed, int64_t hidden = 512);

/// Logits f32[batch, 10] of relu(relu(x w1 + b1) w2 + b2) w3 + b3.
mj::Array forward(const MLP& p, const mj::Array& x);
/// Mean cross-entropy of logits f32[batch, 10] against labels y i32[batch]:
/// -mean(sum(log_softmax(logits) * one_hot(y, 10), axis 1)); f32 scalar. The loss of every
/// Fashion-MNIST sample (the MLP's, the CNN's).
mj::Array cross_entropy(const mj::Array& logits, const mj::Array& y);
/// The number of rows of logits f32[batch, 10] whose argmax equals the label y i32[batch]; i32 scalar.
mj::Array correct_count(const mj::Array& logits, const mj::Array& y);
/// cross_entropy(forward(p, x), y).
mj::Array loss_fn(const MLP& p, const mj::Array& x, const mj::Array& y);
/// Fraction of examples whose argmax logit equals the label, evaluated in batches of `batch`.
double accuracy(const MLP& p, const Dataset& d, int64_t batch = 1000);
/// Mean loss over the dataset, evaluated in batches of `batch`.
double mean_loss(const MLP& p, const Dataset& d, int64_t batch = 1000);

/// One line of the training report.
struct EpochReport {
  int epoch = 0;
  double mean_loss = 0;   ///< mean of the batch losses of the epoch
  double train_acc = 0;   ///< accuracy on the training set after the epoch
  double test_acc = 0;    ///< accuracy on the test set after the epoch
  double seconds = 0;     ///< training time of the epoch (without the evaluation)
  double eval_seconds = 0;
  int64_t steps = 0;
  double steps_per_s() const { return seconds > 0 ? double(steps) / seconds : 0; }
};

struct TrainConfig {
  int epochs = 5;
  int64_t batch = 128;
  double lr = 1e-3;
  uint32_t seed = 0;
  /// Run each step eagerly (value_and_grad and Adam op by op) instead of as one compiled step.
  bool eager = false;
  /// Called before each epoch's first step with the epoch (from 1) and its number of steps.
  std::function<void(int epoch, int64_t steps)> on_epoch_begin;
  /// Called after each epoch (e.g. to print the epoch's report line).
  std::function<void(const EpochReport&)> on_epoch;
  /// Called after each step with its loss (e.g. to compare runs step by step); `step` counts
  /// from 0 over all epochs (a resumed run continues the count).
  std::function<void(int64_t step, double loss)> on_step;
  /// When not empty: after each epoch, the parameters, Adam's state (step included), the
  /// shuffling key and the epoch are written to save_dir/checkpoint.safetensors (atomically:
  /// a crash mid-save leaves the previous epoch's file). See minijax::samples::TrainCheckpoint.
  std::string save_dir;
  /// When not empty: training starts from resume_dir/checkpoint.safetensors, after the epochs
  /// it completed, and runs epochs up to `epochs` (the total), with the same data order, steps
  /// and losses as an uninterrupted run. The checkpoint must come from a run with the same seed,
  /// batch, lr and training set size (ValueError otherwise) and model shape (IOError).
  std::string resume_dir;
  /// Called with one line after a checkpoint is loaded or saved (e.g. to print it).
  std::function<void(const std::string&)> on_checkpoint;
  /// Polled after each step (e.g. a SIGINT seen, minijax::samples::stop_signal): when it returns
  /// true, training stops after that step; with save_dir, the checkpoint is written as of that
  /// step (mid-epoch: the epochs completed, the key of the unfinished epoch, Adam's step count),
  /// and a resume continues with the next step of that epoch, as an uninterrupted run would.
  /// An epoch stopped in, or right after, gets no evaluation and no report.
  std::function<bool()> should_stop;
};

/// The training state a compiled step carries: parameters and Adam's state (a pytree).
struct TrainState {
  MLP params;
  minijax::optim::AdamState<MLP> opt;
};

/// One training step as a function of pytrees: (state, x, y) -> (new state, loss). Jitted by
/// `train` with the state donated (its buffers hold the new state: no copy of the parameters).
std::pair<TrainState, mj::Array> train_step(const minijax::optim::Adam& opt, const TrainState& s,
                                            const mj::Array& x, const mj::Array& y);

/// Trains `params` in place with Adam (torch defaults, lr from cfg) on shuffled minibatches
/// (a fresh permutation every epoch; the last, partial batch is kept, as PyTorch's DataLoader
/// does) and returns one report per epoch run (cfg.resume_dir: from the checkpoint's state, the
/// incoming `params` giving only the shapes expected). Each step is train_step: mj::value_and_grad(loss_fn)
/// and Adam, compiled as one jitted function donating the state (cfg.eager: run op by op). The
/// loop is samples/common/train_loop.h's train_epochs, which the CNN sample shares.
std::vector<EpochReport> train(MLP& params, const Dataset& train_set, const Dataset& test_set,
                               const TrainConfig& cfg);

/// "epoch 1  loss 0.5012  train_acc 0.8512  test_acc 0.8390  time 9.8s  steps/s 47.9  ms/step 20.9"
std::string format_report(const EpochReport& r);

}  // namespace fmnist

MJ_REGISTER_PYTREE(fmnist::MLP, w1, b1, w2, b2, w3, b3)
MJ_REGISTER_PYTREE(fmnist::TrainState, params, opt)

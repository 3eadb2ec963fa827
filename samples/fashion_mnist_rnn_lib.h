// minijax samples: the Fashion-MNIST GRU — each image read as 28 rows of 28 pixels by mj::scan.
// Owns the GRU model, its remat policy, loss, accuracy, training loop and step memory (fmnist::rnn).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "samples/fashion_mnist_mlp_lib.h"

namespace fmnist::rnn {

/// Rows [begin, begin+count) of `order` (or of 0..n-1 when order is empty) as a time-major
/// batch: x f32[28, count, 28] with x[t, i, k] = pixel (row t, column k) of image i / 255, and
/// y i32[count]. Time-major so that the scan runs over axis 0 with no transpose.
std::pair<mj::Array, mj::Array> make_row_batch(const Dataset& d, const std::vector<int32_t>& order,
                                           int64_t begin, int64_t count);

/// The model's parameters, a registered pytree. The GRU's weights are stored transposed with
/// respect to PyTorch's (x @ w instead of w @ x) with the gates in PyTorch's order (r, z, n):
/// w_ih f32[28, 3H], w_hh f32[H, 3H], b_ih and b_hh f32[3H]; the classifier w_out f32[H, 10],
/// b_out f32[10].
struct GRU {
  mj::Array w_ih, w_hh, b_ih, b_hh, w_out, b_out;
};

/// PyTorch's default initialisation for GRU(28, H) followed by Linear(H, 10): every GRU weight
/// and bias drawn from U(-1/sqrt(H), 1/sqrt(H)) (torch/nn/modules/rnn.py, RNNBase.reset_parameters)
/// and the classifier's from U(-1/sqrt(H), 1/sqrt(H)) (Linear with fan_in H). Deterministic in
/// `seed` (threefry PRNG). Throws mj::ValueError if hidden <= 0.
GRU init_gru(uint32_t seed, int64_t hidden = 128);

/// The --remat choice: "none" (no checkpoint) or a policy wrapping the scan body in
/// mj::checkpoint — nothing_saveable, dots_saveable, everything_saveable, or offload_gates
/// (save_and_offload_only_these_names({}, {kGatesName}, device, pinned_host): the recurrent
/// gate pre-activations h @ w_hh + b_hh, named kGatesName in the body, are offloaded to
/// pinned_host and everything else is recomputed).
struct Remat {
  std::string name = "none";
  mj::PolicyPtr policy;  ///< unused when name == "none"
  bool enabled() const { return name != "none"; }
};
/// The checkpoint_name of the gate pre-activations in the scan body.
inline constexpr const char* kGatesName = "gates";
/// Parses a --remat value. Throws mj::ValueError naming the value and the accepted names.
Remat parse_remat(const std::string& name);

/// One GRU step as PyTorch computes it (torch.nn.GRU docs), for a batch:
///   gi = xp_t (the precomputed x_t @ w_ih + b_ih, [B, 3H]),  gh = h @ w_hh + b_hh ([B, 3H])
///   r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z),  n = tanh(gi_n + r * gh_n)
///   h' = (1 - z) * n + z * h  (computed as n + z * (h - n))
/// gh is tagged with checkpoint_name(kGatesName). h f32[B, H], xp_t f32[B, 3H] -> f32[B, H].
mj::Array gru_cell(const mj::Array& w_hh, const mj::Array& b_hh, const mj::Array& h,
                   const mj::Array& xp_t);

/// The last hidden state f32[B, H] for x f32[28, B, 28] (time-major): the input projection of
/// all rows is ONE matmul ([28 B, 28] x [28, 3H] -> [28, B, 3H]) before the loop, then
/// mj::scan runs gru_cell over the 28 rows from h = 0 (wrapped in mj::checkpoint with the
/// remat policy when remat.enabled()).
mj::Array last_state(const GRU& p, const mj::Array& x, const Remat& remat = {});
/// Logits f32[B, 10] = last_state(p, x) @ w_out + b_out.
mj::Array forward(const GRU& p, const mj::Array& x, const Remat& remat = {});
/// Mean cross-entropy: -mean(sum(log_softmax(logits) * one_hot(y, 10), axis 1)); f32 scalar.
mj::Array loss_fn(const GRU& p, const mj::Array& x, const mj::Array& y, const Remat& remat = {});
/// Fraction of examples whose argmax logit equals the label, evaluated in batches of `batch`.
double accuracy(const GRU& p, const Dataset& d, int64_t batch = 1000);
/// Mean loss over the dataset, evaluated in batches of `batch`.
double mean_loss(const GRU& p, const Dataset& d, int64_t batch = 1000);

/// The memory of one compiled training step (the step train() runs), measured by the runtime's
/// allocator around one call and predicted by the planner, in bytes. Measured peaks are
/// mj::memory_stats' peak_bytes_in_use during the call (after mj::reset_peak_memory_stats(0))
/// minus the bytes in use before it, plus, for the device, `input_bytes`: the program's own
/// footprint, comparable with memory_analysis()'s peak (which counts the arguments). The
/// allocator counts blocks at their size class (jit/runtime/allocator.h), so measured figures are
/// the planned ones rounded up by at most a size class per buffer.
struct StepMemory {
  std::string policy;          ///< the --remat name
  /// Bytes of the step's inputs, all on the device and allocated before the call: the parameters,
  /// Adam's state (mu, nu, step), the batch x and y, and the program's constants (avals' bytes).
  int64_t input_bytes = 0;
  /// Of input_bytes, the parameters and Adam's state (the rest is the batch and the constants).
  int64_t param_state_bytes = 0;
  int64_t device_peak = 0;     ///< measured device peak of the call, inputs included (bytes)
  int64_t host_peak = 0;       ///< measured pinned_host peak of the call (bytes; no host inputs)
  mj::CompiledMemoryStats predicted;  ///< the compiled step's memory_analysis()
  /// Device bytes beyond the inputs (activations, gradients, temporaries, new outputs): measured
  /// and predicted (bytes).
  int64_t device_activations() const { return device_peak - input_bytes; }
  int64_t predicted_device_activations() const {
    return predicted.peak_memory_in_bytes - input_bytes;
  }
};

struct TrainConfig {
  int epochs = 5;
  int64_t batch = 128;
  double lr = 1e-3;
  uint32_t seed = 0;
  Remat remat;
  /// Skip the accuracy evaluation after each epoch (train_acc/test_acc reported as -1).
  bool skip_eval = false;
  /// Run each step eagerly instead of as one compiled (jitted) step.
  bool eager = false;
  /// Called before each epoch's first step with the epoch (from 1) and its number of steps.
  std::function<void(int epoch, int64_t steps)> on_epoch_begin;
  /// Called after each epoch (e.g. to print the epoch's report line).
  std::function<void(const EpochReport&)> on_epoch;
  /// Called after each step with the step's index (from 0, over all epochs) and loss.
  std::function<void(int64_t, double)> on_step;
  /// Compiled steps only: when set, the first step is compiled ahead (lower().compile()), its
  /// call measured as measure_step_memory describes, and the result passed here after it.
  std::function<void(const StepMemory&)> on_step_memory;
  /// As fmnist::TrainConfig's: DIR/checkpoint.safetensors after each epoch (parameters, Adam's
  /// state with its step, the shuffling key, the epoch), written atomically.
  std::string save_dir;
  /// As fmnist::TrainConfig's: continue from DIR/checkpoint.safetensors up to `epochs` in all,
  /// with the losses of an uninterrupted run (same seed, batch, lr, training set size and hidden
  /// size; the remat policy may differ, since every policy gives bitwise the same steps).
  std::string resume_dir;
  /// Called with one line after a checkpoint is loaded or saved.
  std::function<void(const std::string&)> on_checkpoint;
  /// As fmnist::TrainConfig's: polled after each step; true stops the run after that step (and
  /// writes the checkpoint as of that step with save_dir).
  std::function<bool()> should_stop;
};

/// Compiles the training step for `remat` (batch `batch` from the first images of `train_set`,
/// parameters init_gru(seed, hidden), Adam lr `lr`), runs it once and returns its StepMemory.
/// The parameters and state it creates are donated to the call and dropped. Throws what jit
/// throws (e.g. ResourceExhaustedError when a capacity is exceeded).
StepMemory measure_step_memory(const Remat& remat, const Dataset& train_set, int64_t batch,
                               int64_t hidden, uint32_t seed = 0, double lr = 1e-3);

/// One line per StepMemory (policy, measured and predicted device and host peaks, device bytes
/// beyond the inputs measured and predicted, in MiB and bytes), under a header naming the inputs.
std::string format_memory_table(const std::vector<StepMemory>& rows);

/// Trains `params` in place with Adam (torch defaults, lr from cfg) on shuffled minibatches
/// (a fresh permutation every epoch from PRNGKey(seed + 1), the last partial batch kept) and
/// returns one report per epoch run (cfg.resume_dir: from the checkpoint's state). Each step (mj::value_and_grad(loss_fn) through the scan, then
/// Adam) is one jitted function donating the parameters and Adam's state (cfg.eager: op by op).
std::vector<EpochReport> train(GRU& params, const Dataset& train_set, const Dataset& test_set,
                               const TrainConfig& cfg);

}  // namespace fmnist::rnn

MJ_REGISTER_PYTREE(fmnist::rnn::GRU, w_ih, w_hh, b_ih, b_hh, w_out, b_out)

// minijax samples: the Fashion-MNIST MLP trained with a sharded jit'ed train step on a (4, 2)
// ("data", "model") mesh of virtual devices, next to the same steps run on one device.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "samples/fashion_mnist_mlp_lib.h"

namespace fmnist {

/// One training step's report.
struct StepReport {
  int64_t step = 0;               ///< 1-based
  double loss_sharded = 0;        ///< the batch loss computed by the sharded program
  double loss_single = 0;         ///< the same step on one device (NaN when not run)
  std::string collectives;        ///< mj::collectives_text of the sharded step (bytes per device)
  size_t num_collectives = 0;
  int64_t max_bytes_received = 0; ///< per device: the largest, summed over the step's collectives
};

/// What the sharded training runs.
struct ShardedConfig {
  int64_t steps = 20;    ///< training steps (each on the next batch of the set, cycling)
  int64_t batch = 128;   ///< examples per step; must divide by the "data" axis size
  int64_t hidden = 512;  ///< hidden width; must divide by the "model" axis size
  double lr = 0.1;       ///< plain SGD step size (the update is part of the jit'ed step)
  uint32_t seed = 0;
  /// The examples of the whole training set. 0: train_set's (one process). With several
  /// processes train_set holds this process's rows only (process_rows) and this the total.
  int64_t total_examples = 0;
  bool single_device = true;  ///< also run the same steps unsharded and compare the losses (one process)
  /// Called after each step (e.g. to print the step line).
  std::function<void(const StepReport&)> on_step;
  /// When not empty: after the last step, and when should_stop stops the run, the sharded
  /// parameters and the steps taken are written to save_dir/checkpoint.safetensors (atomically,
  /// with a CRC-32 per tensor; keys `params.<field>` and `step`, metadata as the other samples').
  std::string save_dir;
  /// When not empty: training starts from resume_dir/checkpoint.safetensors (a run with the
  /// same seed, batch, lr, hidden width and training set size: ValueError otherwise) after the
  /// steps it took, up to `steps` in all, with the batches an uninterrupted run takes. Refused
  /// (ValueError naming the tensor) when a parameter holds a NaN or ±Inf. The single-device
  /// comparison starts from the same parameters.
  std::string resume_dir;
  /// Called with one line after a checkpoint is loaded or saved.
  std::function<void(const std::string&)> on_checkpoint;
  /// Polled after each step: true stops the run after that step (checkpoint with save_dir).
  std::function<bool()> should_stop;
};

/// What the sharded sample's checkpoint holds: the parameters and the steps taken (i32[]).
/// Plain SGD has no optimizer state.
struct ShardedCheckpoint {
  MLP params;
  mj::Array step;
};

/// The shardings of the train step on `mesh` (axes "data" and "model"): w1 [784, H] column
/// parallel P(None, "model"), b1 P("model"), w2 [H, H] row parallel P("model", None), b2, w3, b3
/// replicated; x [B, 784] P("data", None), y [B] P("data"). Outputs: the loss replicated and the
/// updated parameters in their input shardings.
mj::JitOptions train_step_options(const std::shared_ptr<const mj::Mesh>& mesh);

/// This process's rows of `full` for batches of `batch` consecutive rows whose rows are split
/// evenly over `processes` processes in process order (the "data" axis of a mesh whose devices
/// are in process order): rows [b·batch + p·batch/P, b·batch + (p+1)·batch/P) of each full batch
/// b, in order. ValueError when `processes` does not divide `batch`.
Dataset process_rows(const Dataset& full, int64_t batch, int process, int processes);

/// Trains an MLP 784-H-H-10 (init_mlp(seed, hidden)) with SGD for cfg.steps steps: the step
/// (loss, value_and_grad, update) is one jit'ed function, run partitioned on `mesh` and, when
/// cfg.single_device, also as plain jit on one device from the same initial parameters. Batches
/// are consecutive rows of `train_set` (full batches only; the set must hold at least one). In
/// a run of several processes (mj::distributed) train_set is this process's rows
/// (process_rows), cfg.total_examples the whole set's size: each step's batch is built with
/// make_array_from_process_local_data, only process 0 writes the checkpoint, and there is no
/// single-device comparison.
/// Throws mj::ValueError for a batch or hidden width the mesh axes do not divide, or a set
/// smaller than one batch.
std::vector<StepReport> train_sharded(const Dataset& train_set, const ShardedConfig& cfg,
                                      const std::shared_ptr<const mj::Mesh>& mesh);

}  // namespace fmnist

MJ_REGISTER_PYTREE(fmnist::ShardedCheckpoint, params, step)

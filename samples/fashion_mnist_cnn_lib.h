// minijax samples: the Fashion-MNIST CNN — two 5x5 convolutions with max pooling and two dense
// layers (mj::nn::conv, mj::nn::max_pool); owns the model, its init, loss, accuracy and training.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

#include "samples/fashion_mnist_mlp_lib.h"

namespace fmnist::cnn {

/// Rows [begin, begin+count) of `order` (or of 0..n-1 when order is empty) as an NHWC batch:
/// x f32[count, 28, 28, 1] holding pixel/255, y i32[count] (make_batch's rows, reshaped).
std::pair<mj::Array, mj::Array> make_image_batch(const Dataset& d, const std::vector<int32_t>& order,
                                                 int64_t begin, int64_t count);

/// The model's parameters, a registered pytree: the convolutions' kernels in HWIO layout,
/// conv1_w f32[5, 5, 1, 32] and conv2_w f32[5, 5, 32, 64], with biases f32[32] and f32[64]; the
/// dense layers fc1_w f32[1024, 128], fc1_b f32[128], fc2_w f32[128, 10], fc2_b f32[10].
struct CNN {
  mj::Array conv1_w, conv1_b, conv2_w, conv2_b, fc1_w, fc1_b, fc2_w, fc2_b;
};

/// PyTorch's default initialisation for Conv2d(1, 32, 5), Conv2d(32, 64, 5), Linear(1024, 128),
/// Linear(128, 10), as init_mlp's: every weight and bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in))
/// with fan_in = in channels x 5 x 5 for a convolution (25 and 800) and in features for a dense
/// layer (torch/nn/modules/conv.py and linear.py, reset_parameters: kaiming_uniform_ with
/// a = sqrt(5)). Deterministic in `seed` (threefry PRNG).
CNN init_cnn(uint32_t seed);

/// Logits f32[B, 10] of x f32[B, 28, 28, 1] (NHWC):
///   conv 5x5x32 VALID + bias -> relu -> max_pool 2x2 stride 2   [B, 12, 12, 32]
///   conv 5x5x64 VALID + bias -> relu -> max_pool 2x2 stride 2   [B, 4, 4, 64]
///   flatten (h, w, c order) [B, 1024] -> dense 128 -> relu -> dense 10.
mj::Array forward(const CNN& p, const mj::Array& x);
/// cross_entropy(forward(p, x), y) (the MLP's loss); f32 scalar.
mj::Array loss_fn(const CNN& p, const mj::Array& x, const mj::Array& y);
/// Fraction of examples whose argmax logit equals the label (correct_count), compiled, in
/// batches of `batch`.
double accuracy(const CNN& p, const Dataset& d, int64_t batch = 1000);
/// Mean loss over the dataset (eager), in batches of `batch`.
double mean_loss(const CNN& p, const Dataset& d, int64_t batch = 1000);

/// The training state a compiled step carries: parameters and Adam's state (a pytree).
struct TrainState {
  CNN params;
  minijax::optim::AdamState<CNN> opt;
};

/// One training step: mj::value_and_grad(loss_fn) and Adam's update, (state, x, y) -> (new state,
/// loss). `train` jits it with the state donated.
std::pair<TrainState, mj::Array> train_step(const minijax::optim::Adam& opt, const TrainState& s,
                                            const mj::Array& x, const mj::Array& y);

/// Trains `params` in place as fmnist::train trains the MLP (the same TrainConfig, epoch loop,
/// shuffling, checkpoints and reports: samples/common/train_loop.h), each step train_step
/// compiled as one jitted function "cnn_train_step" donating the state (cfg.eager: op by op).
std::vector<EpochReport> train(CNN& params, const Dataset& train_set, const Dataset& test_set,
                               const TrainConfig& cfg);

}  // namespace fmnist::cnn

MJ_REGISTER_PYTREE(fmnist::cnn::CNN, conv1_w, conv1_b, conv2_w, conv2_b, fc1_w, fc1_b, fc2_w, fc2_b)
MJ_REGISTER_PYTREE(fmnist::cnn::TrainState, params, opt)

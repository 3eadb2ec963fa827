// minijax bench peer: the CNN sample's model (conv 5x5x32 -> relu -> max-pool 2 -> conv 5x5x64 ->
// relu -> max-pool 2 -> dense 1024-128 -> relu -> dense 10, cross-entropy, Adam 1e-3, batch 128)
// in libtorch's C++ frontend, trained for one epoch: ms/step and the test accuracy; one JSON line.
//
// The same model as samples/fashion_mnist_cnn_lib.cc in PyTorch's own layout (NCHW input, OIHW
// kernels) with PyTorch's default initialisation (the sample's: U(+-1/sqrt(fan_in))). One epoch
// over the first `limit` training images (a fresh permutation, torch::manual_seed(0); the last
// partial batch kept), each step (zero_grad, forward, loss, backward, Adam step) timed; the batches
// are assembled before the epoch. "step" is the median of the steps after the first `warmup`, as
// bench/cnn_step.cc times minijax's; the test accuracy is measured on the 10,000 test images after
// the epoch. Two threads.
// Build (bench/run_all.sh does): g++ -std=c++17 -O2 libtorch_cnn.cpp
//   -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10 -lz -o libtorch_cnn
// Usage: libtorch_cnn [limit (60000)] [warmup (20)]
#include <torch/torch.h>

#include <chrono>

#include "peer_common.h"

namespace {

// Images [n, 1, 28, 28] (pixel / 255) and labels [n] (int64) of a split.
std::pair<torch::Tensor, torch::Tensor> tensors(peer::Data& d, int64_t n) {
  auto x = torch::from_blob(d.images.data(), {n, 1, 28, 28}, torch::kUInt8).to(torch::kFloat32).div(255);
  auto y = torch::from_blob(d.labels.data(), {n}, torch::kUInt8).to(torch::kInt64);
  return {x, y};
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t limit = argc > 1 ? std::atoll(argv[1]) : 60000;
  const int warmup = argc > 2 ? std::atoi(argv[2]) : 20;
  const std::string load_before = peer::loadavg();
  torch::set_num_threads(2);
  torch::manual_seed(0);
  const int64_t B = 128, n_test = 10000;
  peer::Data train = peer::load(limit), test = peer::load(n_test, "t10k");
  auto [X, Y] = tensors(train, limit);
  auto [Xt, Yt] = tensors(test, n_test);
  torch::nn::Sequential m(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 5)), torch::nn::ReLU(),
                          torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)),
                          torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 5)), torch::nn::ReLU(),
                          torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)), torch::nn::Flatten(),
                          torch::nn::Linear(1024, 128), torch::nn::ReLU(), torch::nn::Linear(128, 10));
  torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(1e-3));
  // The epoch's batches, in a fresh random order.
  auto perm = torch::randperm(limit, torch::kInt64);
  std::vector<torch::Tensor> xs, ys;
  for (int64_t b = 0; b < limit; b += B) {
    auto idx = perm.slice(0, b, std::min(limit, b + B));
    xs.push_back(X.index_select(0, idx).contiguous());
    ys.push_back(Y.index_select(0, idx).contiguous());
  }
  std::vector<double> t;
  double loss_last = 0, loss_sum = 0;
  const auto e0 = std::chrono::steady_clock::now();
  m->train();
  for (size_t i = 0; i < xs.size(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(m->forward(xs[i]), ys[i]);
    loss.backward();
    opt.step();
    if (int(i) >= warmup)
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    loss_last = loss.item<double>();
    loss_sum += loss_last;
  }
  const double epoch_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - e0).count();
  if (t.empty()) t.push_back(epoch_s / double(xs.size()));
  // Test accuracy after the epoch.
  m->eval();
  int64_t correct = 0;
  {
    torch::NoGradGuard no_grad;
    for (int64_t b = 0; b < n_test; b += 1000) {
      auto logits = m->forward(Xt.slice(0, b, b + 1000));
      correct += logits.argmax(1).eq(Yt.slice(0, b, b + 1000)).sum().item<int64_t>();
    }
  }
  std::printf(
      "{\"name\": \"libtorch_cnn_step\", \"torch\": \"%s\", \"threads\": %d, \"data\": \"%s\", "
      "\"batch\": %lld, \"train_images\": %lld, \"epoch_steps\": %zu, \"warmup\": %d, \"step\": %s, "
      "\"epoch_s\": %.3f, \"epoch_mean_loss\": %.4f, \"loss_last\": %.4f, \"test_accuracy\": %.4f, "
      "\"env\": %s}\n",
      TORCH_VERSION, torch::get_num_threads(), train.source.c_str(), (long long)B, (long long)limit,
      xs.size(), warmup, peer::stats_json(t).c_str(), epoch_s, loss_sum / double(xs.size()), loss_last,
      double(correct) / double(n_test), peer::env_json(load_before).c_str());
}

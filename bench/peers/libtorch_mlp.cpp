// minijax bench peer: the MLP training step (784-512-512-10, ReLU, cross-entropy, Adam 1e-3, batch
// 128) in libtorch's C++ frontend, timed as bench/mlp_step.cc times minijax's; one JSON line.
//
// The same model and optimizer as samples/fashion_mnist_mlp_lib.cc; 16 batches of the
// first 2048 training examples assembled before timing and cycled; median of `steps` steps
// (zero_grad, forward, loss, backward, Adam step) after `warmup`. Two threads.
// Build (bench/run_all.sh does): g++ -std=c++17 -O2 libtorch_mlp.cpp
//   -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10 -lz -o libtorch_mlp
// Usage: libtorch_mlp [steps (200)] [warmup (20)]
#include <torch/torch.h>

#include <chrono>

#include "peer_common.h"

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200, warmup = argc > 2 ? std::atoi(argv[2]) : 20;
  const std::string load_before = peer::loadavg();
  torch::set_num_threads(2);
  torch::manual_seed(0);
  const int64_t B = 128, nb = 16;
  peer::Data d = peer::load(B * nb);
  auto X = torch::from_blob(d.images.data(), {B * nb, 784}, torch::kUInt8).to(torch::kFloat32).div(255);
  auto Y = torch::from_blob(d.labels.data(), {B * nb}, torch::kUInt8).to(torch::kInt64);
  std::vector<torch::Tensor> xs, ys;
  for (int64_t b = 0; b < nb; ++b) {
    xs.push_back(X.slice(0, b * B, (b + 1) * B).contiguous());
    ys.push_back(Y.slice(0, b * B, (b + 1) * B).contiguous());
  }
  torch::nn::Sequential m(torch::nn::Linear(784, 512), torch::nn::ReLU(), torch::nn::Linear(512, 512),
                          torch::nn::ReLU(), torch::nn::Linear(512, 10));
  torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(1e-3));
  std::vector<double> t;
  double loss_last = 0;
  for (int i = 0; i < warmup + steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(m->forward(xs[i % nb]), ys[i % nb]);
    loss.backward();
    opt.step();
    if (i >= warmup) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (i + 1 == warmup + steps) loss_last = loss.item<double>();
  }
  std::printf("{\"name\": \"libtorch_mlp_step\", \"torch\": \"%s\", \"threads\": %d, \"data\": \"%s\", "
              "\"steps\": %d, \"warmup\": %d, \"step\": %s, \"loss_last\": %.4f, \"env\": %s}\n",
              TORCH_VERSION, torch::get_num_threads(), d.source.c_str(), steps, warmup,
              peer::stats_json(t).c_str(), loss_last, peer::env_json(load_before).c_str());
}

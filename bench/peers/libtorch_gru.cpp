// minijax bench peer: the GRU training step of the scan sample (28 rows of 28 pixels, GRU(28->128),
// linear 128->10 on the last state, cross-entropy, Adam 1e-3, batch 128) in libtorch; one JSON line.
//
// The same model as samples/fashion_mnist_rnn_lib.cc; 16 batches of the first 2048
// training examples assembled before timing and cycled; median of `steps` steps after `warmup`,
// timed as bench/gru_step.cc times minijax's. Two threads. Build as libtorch_mlp.cpp.
// Usage: libtorch_gru [steps (200)] [warmup (10)]
#include <torch/torch.h>

#include <chrono>

#include "peer_common.h"

struct Net : torch::nn::Module {
  torch::nn::GRU gru{nullptr};
  torch::nn::Linear head{nullptr};
  Net() {
    gru = register_module("gru", torch::nn::GRU(torch::nn::GRUOptions(28, 128).batch_first(true)));
    head = register_module("head", torch::nn::Linear(128, 10));
  }
  torch::Tensor forward(torch::Tensor x) { return head->forward(std::get<0>(gru->forward(x)).select(1, 27)); }
};

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200, warmup = argc > 2 ? std::atoi(argv[2]) : 10;
  const std::string load_before = peer::loadavg();
  torch::set_num_threads(2);
  torch::manual_seed(0);
  const int64_t B = 128, nb = 16;
  peer::Data d = peer::load(B * nb);
  auto X = torch::from_blob(d.images.data(), {B * nb, 28, 28}, torch::kUInt8).to(torch::kFloat32).div(255);
  auto Y = torch::from_blob(d.labels.data(), {B * nb}, torch::kUInt8).to(torch::kInt64);
  std::vector<torch::Tensor> xs, ys;
  for (int64_t b = 0; b < nb; ++b) {
    xs.push_back(X.slice(0, b * B, (b + 1) * B).contiguous());
    ys.push_back(Y.slice(0, b * B, (b + 1) * B).contiguous());
  }
  auto net = std::make_shared<Net>();
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
  std::vector<double> t;
  double loss_last = 0;
  for (int i = 0; i < warmup + steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(xs[i % nb]), ys[i % nb]);
    loss.backward();
    opt.step();
    if (i >= warmup) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (i + 1 == warmup + steps) loss_last = loss.item<double>();
  }
  std::printf("{\"name\": \"libtorch_gru_step\", \"torch\": \"%s\", \"threads\": %d, \"data\": \"%s\", "
              "\"steps\": %d, \"warmup\": %d, \"step\": %s, \"loss_last\": %.4f, \"env\": %s}\n",
              TORCH_VERSION, torch::get_num_threads(), d.source.c_str(), steps, warmup,
              peer::stats_json(t).c_str(), loss_last, peer::env_json(load_before).c_str());
}

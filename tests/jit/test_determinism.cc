// Run-to-run determinism of compiled programs: large parallel kernels (reductions of 2^22 f32
// elements, an elementwise chain, the MLP's matmul chain and its whole training step) called
// repeatedly, sequentially and from several threads at once, give bitwise-identical outputs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <minijax/minijax.h>

#include "samples/fashion_mnist_mlp_lib.h"

namespace {

using mj::Array;

// Uniform values in [lo, hi) from std::mt19937 (independent of minijax's PRNG), as f32.
Array uniform(const mj::Shape& shape, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Array a = mj::zeros(shape, mj::f32);
  float* p = a.mutable_data<float>();
  for (int64_t i = 0; i < a.size(); ++i) p[i] = u(gen);
  return a;
}

bool same_bits(const Array& a, const Array& b) {
  return a.aval().str() == b.aval().str() &&
         std::memcmp(a.raw_data(), b.raw_data(), size_t(a.aval().nbytes())) == 0;
}

void expect_same(const std::vector<Array>& got, const std::vector<Array>& first, const std::string& what) {
  ASSERT_EQ(got.size(), first.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], first[i])) << what << ": output " << i;
}

// Calls `run` 4 times in sequence and then on 4 threads at once (the kernels' chunks land on other
// worker threads each time); every result must equal the first bit for bit.
template <class Run>
void expect_deterministic(Run run, const std::string& what) {
  const std::vector<Array> first = run();
  for (int r = 1; r < 4; ++r) expect_same(run(), first, what + ", sequential run " + std::to_string(r));
  std::vector<std::vector<Array>> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) threads.emplace_back([&, t] { results[t] = run(); });
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < results.size(); ++t)
    expect_same(results[t], first, what + ", concurrent call " + std::to_string(t));
}

// 2^22 elements: a full sum (pairwise partial sums), row sums of [64, 65536] (64 outputs, each a
// pairwise sum, spread over the parallel loop) and column sums of [2048, 2048] (one output per
// lane, the kept dim parallel), plus a max. Long f32 sums are where a varying combining order would
// show first.
TEST(Determinism, LargeReductions) {
  const Array x = uniform({1 << 22}, 1);
  const Array rows = mj::reshape(x, {64, 65536});
  const Array square = mj::reshape(x, {2048, 2048});
  auto f = mj::jit([](const Array& v, const Array& r, const Array& s) {
    return std::vector<Array>{mj::sum(v), mj::sum(r, 1), mj::sum(s, 0), mj::max(s, 1), mj::sum(mj::exp(r) * r, 1)};
  });
  expect_deterministic([&] { return f(x, rows, square); }, "reductions of 2^22 elements");
}

// An elementwise chain over 2^22 elements (transcendentals included), split by the parallel loop.
TEST(Determinism, ElementwiseChain) {
  const Array x = uniform({1 << 22}, 2, -4, 4), y = uniform({1 << 22}, 3, 0.1f, 2);
  auto f = mj::jit([](const Array& a, const Array& b) {
    Array h = mj::tanh(a) * mj::exp(-a * a) + mj::sin(a) / b;
    return std::vector<Array>{h, mj::log(b) * mj::sqrt(b) - h};
  });
  expect_deterministic([&] { return f(x, y); }, "elementwise chain of 2^22 elements");
}

// The MLP's forward pass at its training size: three GEMMs (batch 128, 784-512-512-10) with bias
// and ReLU kernels in between, GEMMs split into fixed row/column blocks on the thread pool.
TEST(Determinism, MlpMatmulChain) {
  const fmnist::MLP p = fmnist::init_mlp(3);
  const Array x = uniform({128, 784}, 4, 0, 1);
  auto f = mj::jit([](const fmnist::MLP& q, const Array& xb) { return std::vector<Array>{fmnist::forward(q, xb)}; });
  expect_deterministic([&] { return f(p, x); }, "MLP forward chain");
}

// The whole compiled training step (value_and_grad of the loss and Adam), from the same state:
// identical loss and new state, bit for bit.
TEST(Determinism, MlpTrainingStep) {
  mj::optim::Adam opt;
  const fmnist::TrainState s0{fmnist::init_mlp(5), opt.init(fmnist::init_mlp(5))};
  const Array x = uniform({128, 784}, 6, 0, 1);
  std::vector<double> labels(128);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = double((i * 7) % 10);
  const Array y = mj::array(labels, {128}, mj::i32);
  auto step = mj::jit([&opt](const fmnist::TrainState& s, const Array& xb, const Array& yb) {
    return fmnist::train_step(opt, s, xb, yb);
  });
  expect_deterministic(
      [&] {
        auto [next, loss] = step(s0, x, y);
        std::vector<Array> out = mj::tree_flatten(next);
        out.push_back(loss);
        return out;
      },
      "MLP training step");
}

}  // namespace

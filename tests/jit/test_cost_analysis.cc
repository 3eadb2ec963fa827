// cost_analysis() of the main sample's compiled training step (samples/fashion_mnist_mlp_lib.h:
// fmnist::train_step with optim::Adam, MLP 784-512-512-10, batch 128) against a count by hand.
#include <gtest/gtest.h>

#include <cmath>

#include <minijax/minijax.h>

#include "samples/fashion_mnist_mlp_lib.h"

namespace {

using mj::Array;

constexpr double B = 128, D = 784, H = 512, C = 10;

// 2·m·n·k for an [m, k] x [k, n] product (jit/passes/cost_analysis.h, XLA's HloCostAnalysis).
constexpr double gemm(double m, double n, double k) { return 2 * m * n * k; }

// The step's flops by hand, with the conventions of jit/passes/cost_analysis.h: 1 flop per output element
// of an elementwise arithmetic operation (compares, selects and converts included; broadcasts,
// transposes and iota free; sqrt, exp, log and pow are transcendentals, not flops); a reduction
// costs n_in - n_out.
double hand_flops() {
  // The 8 GEMMs. Forward: h1 = x W1 [B,D]x[D,H], h2 = h1 W2 [B,H]x[H,H], logits = h2 W3 [B,H]x[H,C].
  // Backward, with g3 = d loss/d logits [B,C], g2 and g1 the cotangents of the hidden layers'
  // pre-activations [B,H]: the weight gradients dW3 = h2^T g3 (H x C, summed over B), dW2 = h1^T g2
  // (H x H over B) and dW1 = x^T g1 (D x H over B) — the compiler forms dW1 and dW2 as
  // g^T h and transposes them inside Adam's kernel, the same products — and the input gradients
  // of the two hidden layers, g3 W3^T [B,C]x[C,H] and g2 W2^T [B,H]x[H,H]; none for x (not
  // differentiated), so 3 + 3 + 2 = 8.
  const double forward = gemm(B, H, D) + gemm(B, H, H) + gemm(B, C, H);
  const double weight_grads = gemm(H, C, B) + gemm(H, H, B) + gemm(D, H, B);
  const double input_grads = gemm(B, H, C) + gemm(B, H, H);
  // Adam (autodiff/optimizers.h, PyTorch's formula), per parameter element: m' = b1 m + (1 - b1) g
  // (2 mul, 1 add); v' = b2 v + (1 - b2) g^2 (3 mul, 1 add); p' = p - (lr / bc1) m' / (sqrt(v') /
  // sqrt(bc2) + eps) (div, add, div, mul, sub; the sqrt is a transcendental): 12 flops.
  const double params = D * H + H + H * H + H + H * C + C;
  const double adam = 12 * params;
  // Activation-sized terms: the hidden layers' bias add and ReLU (a compare and a select) forward,
  // 3 B H each; ReLU's backward select, B H each; the bias gradients' sums over the batch,
  // B H - H twice and B C - C.
  const double activations = 2 * 3 * B * H + 2 * B * H + 2 * (B * H - H) + (B * C - C);
  // Not counted: everything on the [B, C] logits and smaller — log_softmax, the one-hot loss and
  // their backward (fewer than 20 operations per logit: < 20 B C = 25,600 flops) and Adam's scalar
  // step and bias corrections (a few flops per leaf) — under 0.01% of the total.
  return forward + weight_grads + input_grads + adam + activations;
}

// Transcendentals by hand: Adam's sqrt(v') per parameter element; exp of the [B, C] shifted logits
// and log of the B softmax denominators; not counted: Adam's scalar pow and sqrt of the bias
// corrections (3 per leaf).
double hand_transcendentals() {
  const double params = D * H + H + H * H + H + H * C + C;
  return params + B * C + B;
}

TEST(CostAnalysis, MlpTrainingStepFlopsMatchAHandCountWithin2Percent) {
  mj::optim::Adam opt;
  const fmnist::MLP params = fmnist::init_mlp(0);
  const fmnist::TrainState state{params, opt.init(params)};
  const Array x = mj::zeros({int64_t(B), int64_t(D)}, mj::f32);
  const Array y = mj::zeros({int64_t(B)}, mj::i32);
  // The sample's own compiled step (fmnist::train: donated state).
  auto step = mj::jit([&opt](const fmnist::TrainState& s, const Array& xb,
                             const Array& yb) { return fmnist::train_step(opt, s, xb, yb); },
                      mj::JitOptions{.name = "train_step", .donate_argnums = {0}});
  auto compiled = step.lower(state, x, y).compile();
  ASSERT_TRUE(compiled.executable());
  const auto cost = compiled.cost_analysis();
  ASSERT_TRUE(cost.count("flops"));
  ASSERT_TRUE(cost.count("transcendentals"));
  const double flops = cost.at("flops"), want = hand_flops();
  EXPECT_LE(std::fabs(flops - want), 0.02 * want) << "cost_analysis flops " << flops << " vs hand " << want;
  const double tr = cost.at("transcendentals"), want_tr = hand_transcendentals();
  EXPECT_LE(std::fabs(tr - want_tr), 0.02 * want_tr) << "transcendentals " << tr << " vs hand " << want_tr;
  // The GEMMs alone are ~98% of the flops: a count without the elementwise terms would be off
  // by more than 2%, so the test also holds the per-element rules, not only the dot rule.
  const double gemms_only = gemm(B, H, D) + gemm(B, H, H) + gemm(B, C, H) + gemm(H, C, B) + gemm(H, H, B) +
                            gemm(D, H, B) + gemm(B, H, C) + gemm(B, H, H);
  EXPECT_GT(flops - gemms_only, 0.015 * flops);
}

}  // namespace
